"""The GRPO gradient as a U-statistic (grpo_core.groupsize.ustat): identities, unbiasedness, exact MSE.

Equation references are to the chapter book/ustatistic.md ("The GRPO gradient is a U-statistic").
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core.errors import ParameterError
from grpo_core.groupsize.ustat import (
    ESTIMATORS,
    EXACT_ESTIMATORS,
    bandit_moments,
    bandit_traces,
    gradients_from_counts,
    group_gradient,
    hoeffding_parts,
    loglog_slope,
    monte_carlo_mse,
    pairwise_leave_one_out,
    sample_bandit_gradients,
    std_scaled_mse,
    u_kernel,
)
from grpo_core.softmax import arm_counts, sample_categorical, score

# A bandit prompt used throughout: 5 arms, graded rewards, V != 0 and no symmetry.
PROBS = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
REWARDS = np.array([1.0, 0.0, 0.5, 0.0, 1.0])
# A typical hard prompt: one correct arm of eight, success probability 0.2.
HARD_PROBS = np.array([0.2] + [0.8 / 7] * 7)
HARD_REWARDS = np.array([1.0] + [0.0] * 7)


def _random_groups(rng, shape=(50,), g=6, d=3):
    return rng.normal(size=(*shape, g, d)), rng.normal(size=(*shape, g))


# ------------------------------------------------------------------------------ identities


@pytest.mark.parametrize("g", [2, 3, 7, 16])
def test_mean_baseline_is_shrunk_leave_one_out(g):
    """Mean baseline == (G-1)/G x leave-one-out, to rounding (chapter: the identity)."""
    w, z = _random_groups(np.random.default_rng(g), g=g)
    mean = group_gradient(w, z, estimator="mean")
    loo = group_gradient(w, z, estimator="leave_one_out")
    np.testing.assert_allclose(mean, (g - 1) / g * loo, rtol=1e-13, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    g=st.integers(2, 24),
    d=st.integers(1, 5),
    batch=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
    binary=st.booleans(),
)
def test_linear_and_pairwise_forms_agree(g, d, batch, seed, binary):
    """The O(G) leave-one-out estimator equals the pairwise U-statistic to 1e-12."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(batch, g, d))
    z = rng.integers(0, 2, size=(batch, g)).astype(float) if binary else rng.normal(size=(batch, g))
    fast = group_gradient(w, z, estimator="leave_one_out")
    slow = pairwise_leave_one_out(w, z)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-12)


def test_kernel_is_symmetric_and_unbiased():
    rng = np.random.default_rng(3)
    wi, wj = rng.normal(size=(2, 4))
    np.testing.assert_array_equal(u_kernel(wi, 1.0, wj, 0.0), u_kernel(wj, 0.0, wi, 1.0))
    # E h = g exactly on the bandit: average the kernel over all ordered arm pairs
    m = bandit_moments(PROBS, REWARDS)
    w = np.eye(5) - PROBS
    h = u_kernel(w[:, None, :], REWARDS[:, None], w[None, :, :], REWARDS[None, :])
    eh = np.einsum("a,b,abd->d", PROBS, PROBS, h)
    np.testing.assert_allclose(eh, m.gradient, atol=1e-15)


def test_counts_form_matches_sample_form():
    """The O(A) sufficient-statistic estimators equal the sample-level ones on the same draws."""
    rng = np.random.default_rng(11)
    g, groups = 9, 400
    arms = sample_categorical(np.broadcast_to(PROBS, (groups, 5)), g, rng)
    for bernoulli in (False, True):
        z = REWARDS[arms]
        if bernoulli:
            z = (rng.random(z.shape) < z).astype(float)
        w = score(arms, np.broadcast_to(PROBS, (groups, 5)))
        counts = arm_counts(arms, 5)
        sums = arm_counts(arms, 5, weights=z)
        flat = z.max(axis=-1) == z.min(axis=-1)
        value = float(PROBS @ REWARDS)
        fast = gradients_from_counts(counts, sums, (z**2).sum(-1), PROBS, flat, value=value)
        for name in ESTIMATORS:
            slow = group_gradient(w, z, estimator=name, value=value)
            np.testing.assert_allclose(fast[name], slow, atol=1e-12, err_msg=name)


# ------------------------------------------------------------------------------ exact moments


def test_exact_moments_against_brute_force_enumeration():
    """g, V, Var Z, E||W||^2, Sigma_oracle from a direct sum over arms (Bernoulli rewards)."""
    m = bandit_moments(PROBS, REWARDS, bernoulli=True)
    w = np.eye(5) - PROBS
    v = PROBS @ REWARDS
    # outcomes: (arm, reward in {0, 1}) with probability pi_a * Bernoulli
    outcomes = [(a, y, PROBS[a] * (REWARDS[a] if y else 1 - REWARDS[a])) for a in range(5) for y in (0, 1)]
    g = sum(pr * w[a] * y for a, y, pr in outcomes)
    cov = sum(pr * np.outer(w[a] * (y - v), w[a] * (y - v)) for a, y, pr in outcomes) - np.outer(g, g)
    var_z = sum(pr * (y - v) ** 2 for a, y, pr in outcomes)
    np.testing.assert_allclose(m.gradient, g, atol=1e-15)
    np.testing.assert_allclose(m.sigma_oracle, cov, atol=1e-15)
    assert m.reward_var == pytest.approx(var_z, abs=1e-15)
    assert m.score_sq == pytest.approx(1 - PROBS @ PROBS, abs=1e-15)
    assert m.degenerate == pytest.approx(m.score_sq * var_z + g @ g, abs=1e-15)
    # vectorised traces agree with the matrices
    t = bandit_traces(np.stack([PROBS, PROBS]), REWARDS, bernoulli=True)
    np.testing.assert_allclose(t.oracle_trace, np.trace(cov), atol=1e-15)


def test_hoeffding_constants():
    """zeta1 = tr Sigma_oracle / 4; Var U = (2/(G(G-1)))(2(G-2) zeta1 + zeta2) (Hoeffding 1948)."""
    m = bandit_moments(PROBS, REWARDS)
    for g in (2, 5, 40):
        hoeffding = 2 / (g * (g - 1)) * (2 * (g - 2) * m.zeta1 + m.zeta2)
        assert float(m.mse("leave_one_out", g)) == pytest.approx(hoeffding, rel=1e-12)
        first, degenerate = m.hoeffding_variances(g)
        assert float(first + degenerate) == pytest.approx(hoeffding, rel=1e-12)


# ------------------------------------------------------------------------------ Monte Carlo


def test_leave_one_out_is_unbiased_and_mean_baseline_bias_is_minus_g_over_g():
    rng = np.random.default_rng(5)
    m = bandit_moments(HARD_PROBS, HARD_REWARDS)
    n = 400_000
    for g in (2, 4):
        est = sample_bandit_gradients(
            HARD_PROBS, HARD_REWARDS, g, n, rng, estimators=("leave_one_out", "mean")
        )
        for name, expected_bias in (("leave_one_out", 0.0 * m.gradient), ("mean", -m.gradient / g)):
            err = est[name] - m.gradient
            se = err.std(axis=0, ddof=1) / np.sqrt(n)
            z = (err.mean(axis=0) - expected_bias) / se
            assert np.all(np.abs(z) < 4.5), (name, g, z)
        # and the bias is resolved: it is many standard errors away from zero
        assert abs(est["mean"][:, 0].mean() - m.gradient[0]) > 20 * se[0]


@pytest.mark.parametrize("bernoulli", [False, True])
def test_exact_mse_matches_monte_carlo(bernoulli):
    """Exact finite-G MSE within 2% of Monte Carlo with 200,000 groups, G in {2, 4, 8, 32}."""
    df = monte_carlo_mse(PROBS, REWARDS, [2, 4, 8, 32], 200_000, seed=1, bernoulli=bernoulli,
                         estimators=EXACT_ESTIMATORS)
    for row in df.itertuples():
        assert row.mse == pytest.approx(row.exact, rel=0.02), (row.estimator, row.group_size)
        # and the agreement is statistical, not luck: within 4.5 Monte Carlo standard errors
        assert abs(row.mse - row.exact) < 4.5 * row.mse_se, (row.estimator, row.group_size)


def test_loglog_slopes_of_oracle_and_gap():
    """Fitted over G >= 8: oracle slope -1 +/- 0.05, GRPO-minus-oracle gap slope -2 +/- 0.15."""
    sizes = [8, 16, 32, 64, 128, 256, 512, 1024]
    df = monte_carlo_mse(
        HARD_PROBS, HARD_REWARDS, sizes, 40_000, seed=2, estimators=("oracle", "leave_one_out")
    )
    oracle = df[df.estimator == "oracle"]
    gap = df[df.estimator == "gap"]
    assert loglog_slope(oracle.group_size, oracle.mse) == pytest.approx(-1.0, abs=0.05)
    assert loglog_slope(gap.group_size, gap.mse) == pytest.approx(-2.0, abs=0.15)
    # the gap really is MSE_loo - MSE_oracle (orthogonal Hoeffding parts), point by point
    loo = df[df.estimator == "leave_one_out"].mse.to_numpy()
    np.testing.assert_allclose(loo - oracle.mse.to_numpy(), gap.mse.to_numpy(), rtol=0.25, atol=2e-6)


def test_hoeffding_split_against_monte_carlo():
    """Var(first projection) = tr Sigma/G, Var(degenerate) = c3/(G(G-1)), and they are uncorrelated."""
    rng = np.random.default_rng(8)
    g, n = 6, 60_000
    m = bandit_moments(PROBS, REWARDS)
    probs = np.broadcast_to(PROBS, (n, 5))
    arms = sample_categorical(probs, g, rng)
    first, degenerate = hoeffding_parts(score(arms, probs), REWARDS[arms], m.value, m.gradient)
    v_first, v_deg = m.hoeffding_variances(g)
    assert (first**2).sum(-1).mean() == pytest.approx(float(v_first), rel=0.03)
    assert (degenerate**2).sum(-1).mean() == pytest.approx(float(v_deg), rel=0.03)
    cross = (first * degenerate).sum(-1)
    assert abs(cross.mean()) < 4 * cross.std() / np.sqrt(n)


def test_vanilla_can_beat_the_oracle_on_an_easy_prompt():
    """Correction to the design notes: vanilla's 1/G term is larger than the oracle's only when
    V (2 b* - V) > 0, b* = E[||W||^2 Z]/E||W||^2. Two arms, correct one with p = 0.8: it is smaller."""
    easy = bandit_moments([0.8, 0.2], [1.0, 0.0])
    assert float(easy.mse("vanilla", 4)) < float(easy.mse("oracle", 4))
    diff = np.trace(easy.sigma_vanilla) - easy.oracle_trace
    assert diff == pytest.approx(
        easy.score_sq * easy.value * (2 * easy.optimal_constant_baseline - easy.value)
    )
    hard = bandit_moments(HARD_PROBS, HARD_REWARDS)
    assert float(hard.mse("vanilla", 4)) > float(hard.mse("oracle", 4))


def test_mean_baseline_trades_bias_for_variance():
    """At G = 2 the (biased) mean baseline has a lower MSE than the oracle; the unbiased
    leave-one-out does not."""
    m = bandit_moments(PROBS, REWARDS)
    assert float(m.mse("mean", 2)) < float(m.mse("oracle", 2)) < float(m.mse("leave_one_out", 2))
    # the decomposition: variance shrunk by ((G-1)/G)^2, plus bias ||g||^2/G^2
    g = 2
    var = ((g - 1) / g) ** 2 * float(m.mse("leave_one_out", g))
    assert float(m.mse("mean", g)) == pytest.approx(var + m.grad_sq / g**2)


def test_std_scaled_zero_spread_groups_give_zero():
    w = np.ones((1, 4, 2))
    assert np.all(group_gradient(w, np.ones((1, 4)), estimator="std") == 0.0)


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "call, name",
    [
        (
            lambda: group_gradient(np.ones((2, 1, 3)), np.ones((2, 1)), estimator="leave_one_out"),
            "group_size",
        ),
        (lambda: group_gradient(np.ones((2, 1, 3)), np.ones((2, 1)), estimator="std"), "group_size"),
        (lambda: pairwise_leave_one_out(np.ones((1, 3)), np.ones(1)), "group_size"),
        (lambda: group_gradient(np.ones((2, 0, 3)), np.ones((2, 0))), "rewards"),
        (lambda: group_gradient([[[1.0], [2.0]], [[1.0]]], [[1.0, 0.0], [1.0]]), "rewards"),
        (lambda: group_gradient(np.ones((1, 3, 2)), [[1.0, np.nan, 0.0]]), "rewards"),
        (lambda: group_gradient(np.ones((1, 3, 2)), np.ones((1, 4))), "scores"),
        (lambda: group_gradient(np.ones((1, 3, 2)), np.ones((1, 3)), estimator="oracle"), "value"),
        (lambda: group_gradient(np.ones((1, 3, 2)), np.ones((1, 3)), estimator="critic"), "estimator"),
        (lambda: bandit_moments([0.5, 0.6], [1.0, 0.0]), "probs"),
        (lambda: bandit_moments([0.5, 0.5], [1.0, 0.0, 1.0]), "rewards"),
        (lambda: bandit_moments([0.5, 0.5], [1.5, 0.0], bernoulli=True), "rewards"),
        (lambda: bandit_moments(PROBS, REWARDS).mse("std", 4), "estimator"),
        (lambda: bandit_moments(PROBS, REWARDS).mse("leave_one_out", 1), "group_size"),
        (lambda: monte_carlo_mse(PROBS, REWARDS, [1, 2], 100), "group_sizes"),
        (lambda: loglog_slope([1, 2], [1, -1]), "y"),
    ],
)
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ParameterError, match=f"`{name}`") as info:
        call()
    assert info.value.parameter == name


def test_ragged_groups_message_says_what_to_do():
    with pytest.raises(ParameterError, match="ragged"):
        group_gradient([[[1.0], [2.0], [0.0]], [[1.0], [0.0]]], [[1.0, 0.0, 1.0], [1.0, 0.0]])


def test_std_scaled_monte_carlo_matches_the_bandit_modules_exact_covariance():
    """Two independent implementations: count-based Monte Carlo here, conditioning on the number of
    rewarded samples in grpo_core.bandit. The std-scaled MSE (against g/sd) agrees within 2%."""
    df = monte_carlo_mse(HARD_PROBS, HARD_REWARDS, [2, 8, 64], 200_000, seed=4, estimators=("std",))
    std = df[df.estimator == "std"]
    np.testing.assert_allclose(std.mse, std.exact, rtol=0.02)
    np.testing.assert_allclose(std.exact, std_scaled_mse(HARD_PROBS, HARD_REWARDS, [2, 8, 64]), rtol=1e-12)


def test_loglog_slope_needs_two_different_x():
    from grpo_core.groupsize.ustat import loglog_slope

    with pytest.raises(ParameterError, match="`x` must hold at least two different values"):
        loglog_slope([2, 2, 2], [1, 2, 3])
