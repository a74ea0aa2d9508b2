"""Choosing the group size (grpo_core.groupsize): the c1/c2/c3 law, G*, the constants' estimator,
the contextual bandit and the fixed-budget study. Chapter: book/group_size.md."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from grpo_core.errors import ParameterError
from grpo_core.groupsize import (
    GroupSizeConstants,
    PromptPool,
    best_group_size,
    beta_difficulty_pool,
    estimate_constants,
    minibatch_mse,
    num_prompts_for_budget,
    optimal_group_size,
    pool_constants,
    sample_pool_groups,
    summarise_study,
    train_fixed_budget,
)
from grpo_core.groupsize.ustat import bandit_moments, group_gradient

# ------------------------------------------------------------------------------ the law and G*


@pytest.mark.parametrize("c1, c2, c3", [(1.0, 3.0, 961.0), (0.002, 0.09, 0.2), (0.5, 0.0, 4.0)])
def test_g_star_recovered_from_synthetic_constants(c1, c2, c3):
    """Brute-force minimisation of the law over a fine G grid lands on the closed forms."""
    grid = np.linspace(2.0, 400.0, 400_000)
    # B = N/G with N fixed: N * MSE = c1 G + c2 + c3/(G-1)  (exact)  or  c1 G + c2 + c3/G
    exact = grid * minibatch_mse_continuous(grid, c1, c2, c3, exact=True)
    leading = grid * minibatch_mse_continuous(grid, c1, c2, c3, exact=False)
    g_exact, g_lead = grid[np.argmin(exact)], grid[np.argmin(leading)]
    assert optimal_group_size(c1, c3, exact=True) == pytest.approx(max(g_exact, 2.0), abs=2e-3)
    assert optimal_group_size(c1, c3, exact=False) == pytest.approx(max(g_lead, 2.0), abs=2e-3)
    # the exact optimum is the leading-order one plus exactly 1
    assert optimal_group_size(c1, c3) - optimal_group_size(c1, c3, exact=False) == pytest.approx(1.0)


def minibatch_mse_continuous(g, c1, c2, c3, *, exact):
    """The law at B = 1 for continuous G, written out independently of the library."""
    return c1 + c2 / g + c3 / (g * (g - 1) if exact else g**2)


def test_library_law_matches_the_formula():
    g = np.array([2, 4, 8, 16])
    out = minibatch_mse(g, 0.01, 0.1, 0.2, num_prompts=[32, 16, 8, 4])
    np.testing.assert_allclose(out, (0.01 + 0.1 / g + 0.2 / (g * (g - 1))) / np.array([32, 16, 8, 4]))
    mean = minibatch_mse(g, 0.01, 0.1, 0.2, num_prompts=4, estimator="mean", grad_sq=0.03)
    np.testing.assert_allclose(
        mean, ((g - 1) / g) ** 2 * (0.01 + 0.1 / g + 0.2 / (g * (g - 1))) / 4 + 0.03 / g**2
    )


def test_best_group_size_does_not_depend_on_the_budget():
    """Theorem 7's point: the optimum is the same at every N (once N allows it)."""
    c1, c2, c3 = 1.0, 5.0, 961.0  # G* = 32 exactly (exact form)
    assert [best_group_size(n, c1, c2, c3) for n in (256, 1024, 8192)] == [32, 32, 32]
    # a budget below G*: the whole budget goes to one prompt
    assert best_group_size(16, c1, c2, c3) == 16
    assert optimal_group_size(0.0, 1.0) == np.inf


def test_every_divisor_of_the_budget_is_a_candidate_not_only_powers_of_two():
    """N = 1000 = 2^3 5^3: G* = 32 does not divide it. Only powers of two were tried (2, 4, 8), so G = 8
    (B = 125) was chosen, 2.16x the MSE of G = 40 (B = 25), the best divisor; 25 is the runner-up."""
    from grpo_core.groupsize import group_size_candidates

    c1, c2, c3 = 1.0, 5.0, 961.0
    assert group_size_candidates(1000) == [2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000]
    assert best_group_size(1000, c1, c2, c3) == 40
    assert best_group_size(1000, c1, c2, c3, candidates=[2, 4, 8, 16, 32]) == 8  # the old default's choice
    n_mse = {g: c1 * g + c2 + c3 / (g - 1) for g in (8, 25, 40)}  # N * MSE at a fixed budget
    assert n_mse[40] < n_mse[25] < n_mse[8] and n_mse[8] / n_mse[40] == pytest.approx(2.158, abs=1e-3)
    assert best_group_size(63, c1, c2, c3) == 21  # an odd budget has candidates too: 3, 7, 9, 21, 63
    assert group_size_candidates(720720, high=12) == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert group_size_candidates(97) == [97] and group_size_candidates(1) == []


def test_divisors_match_trial_division_and_reach_the_largest_budget():
    from grpo_core.groupsize import MAX_BUDGET, group_size_candidates

    rng = np.random.default_rng(0)
    for n in [*rng.integers(1, 200_000, 300).tolist(), 720720, 2 * 3 * 5 * 7 * 11 * 13 * 17]:
        assert group_size_candidates(n, low=1) == [d for d in range(1, n + 1) if n % d == 0], n
    assert group_size_candidates(MAX_BUDGET) == [2**j for j in range(1, 54)]
    # large prime factors (past trial division): a prime, a square of a prime, a product of two primes
    p, q = 94906249, 94906247  # primes near sqrt(2**53)
    assert group_size_candidates(9007199254740881) == [9007199254740881]  # the largest prime below 2**53
    assert group_size_candidates(p * p, low=1) == [1, p, p * p]
    assert group_size_candidates(p * q, low=1) == [1, q, p, p * q]
    assert len(group_size_candidates(8086598962041600, low=1)) == 41472  # highly composite, under 2**53
    with pytest.raises(ParameterError, match="`high`"):
        group_size_candidates(64, low=8, high=4)


def test_paper_values_correspond_to_constant_ratios():
    # G* = 32 and 64 (leading order) mean c3/c1 = 1024 and 4096
    assert optimal_group_size(1.0, 1024.0, exact=False) == 32.0
    assert optimal_group_size(1.0, 4096.0, exact=False) == 64.0


def test_budget_not_divisible_is_an_error_naming_budget():
    assert num_prompts_for_budget(1024, 64) == 16
    with pytest.raises(ParameterError, match="`budget` must be a multiple") as info:
        num_prompts_for_budget(1000, 64)
    assert info.value.parameter == "budget"
    with pytest.raises(ParameterError, match="`budget`"):
        minibatch_mse([2, 3], 1.0, 1.0, 1.0, budget=8)


# ------------------------------------------------------------------------------ the contextual bandit


def test_pool_has_the_requested_difficulty_distribution():
    pool = beta_difficulty_pool(400, 8, mean=0.25, spread=0.12)
    p = pool.success()
    assert p.mean() == pytest.approx(0.25, abs=2e-3)
    assert p.std() == pytest.approx(0.12, rel=0.02)
    # identical prompts: no between-prompt variance
    flat = pool_constants(beta_difficulty_pool(50, 8, mean=0.25, spread=0.0))
    assert flat.c1 == pytest.approx(0.0, abs=1e-15)
    assert flat.g_star > 1e6  # (rounding leaves c1 ~ 1e-33): spend the whole budget on one prompt
    assert best_group_size(1024, flat.c1, flat.c2, flat.c3) == 1024


def test_pool_constants_are_the_averaged_single_prompt_moments():
    pool = beta_difficulty_pool(16, 5, mean=0.4, spread=0.2)
    k = pool_constants(pool)
    moments = [bandit_moments(pi, r) for pi, r in zip(pool.probs(), pool.rewards)]
    grads = np.array([m.gradient for m in moments])
    assert k.c2 == pytest.approx(np.mean([m.oracle_trace for m in moments]), rel=1e-12)
    assert k.c3 == pytest.approx(np.mean([m.degenerate for m in moments]), rel=1e-12)
    assert k.c1 == pytest.approx(np.mean((grads**2).sum(1)) - np.sum(grads.mean(0) ** 2), rel=1e-12)


def test_minibatch_mse_law_matches_monte_carlo():
    """MSE(B, G) = (c1 + c2/G + c3/(G(G-1)))/B for the leave-one-out minibatch gradient."""
    pool = beta_difficulty_pool(64, 6, mean=0.3, spread=0.2)
    k = pool_constants(pool)
    full = pool.probs() * (pool.rewards - pool.success()[:, None])
    target = full.mean(axis=0)
    rng = np.random.default_rng(4)
    b, g, reps = 8, 4, 30_000
    w, z, _ = sample_pool_groups(pool, b * reps, g, rng)
    est = group_gradient(w, z, estimator="leave_one_out").reshape(reps, b, -1).mean(axis=1)
    sq = ((est - target) ** 2).sum(axis=1)
    predicted = float(k.mse(g, num_prompts=b))
    assert sq.mean() == pytest.approx(predicted, rel=0.03)
    assert abs(sq.mean() - predicted) < 4 * sq.std() / np.sqrt(reps)


# ------------------------------------------------------------------------------ estimating the constants


def test_per_prompt_estimators_are_unbiased_at_the_smallest_group():
    """All prompts identical, G = 3: c1 -> 0 and c2, c3 -> the single prompt's exact values."""
    probs = np.array([0.2, 0.3, 0.5])
    rewards = np.array([1.0, 0.0, 0.4])
    pool = PromptPool(offsets=np.log(np.tile(probs, (4, 1))), rewards=np.tile(rewards, (4, 1)))
    m = bandit_moments(probs, rewards)
    rng = np.random.default_rng(9)
    w, z, _ = sample_pool_groups(pool, 50_000, 3, rng)
    est = estimate_constants(w, z, num_bootstrap=300, confidence=0.99)
    for name, exact in (("c2", m.oracle_trace), ("c3", m.degenerate), ("c1", 0.0)):
        lo, hi = est.intervals[name]
        assert lo <= exact <= hi, (name, lo, exact, hi)
    # c1 = 0: about half of the unbiased resamples fall below 0, a variance cannot; the interval stops at 0
    assert est.intervals["c1"][0] == 0.0 and est.intervals["c1"][1] > 0
    assert est.c2 == pytest.approx(m.oracle_trace, rel=0.02)
    assert est.c3 == pytest.approx(m.degenerate, rel=0.02)


@pytest.mark.parametrize("correct_sets", ["shared", "random"])
def test_constants_estimator_is_consistent(correct_sets):
    """Where the constants are known exactly, the estimates converge to them."""
    pool = beta_difficulty_pool(128, 8, mean=0.3, spread=0.15, correct_sets=correct_sets)
    exact = pool_constants(pool)
    rms = {}
    for p in (500, 8000):
        errs = []
        for rep in range(8):
            w, z, _ = sample_pool_groups(pool, p, 8, np.random.default_rng([p, rep]))
            est = estimate_constants(w, z, num_bootstrap=0)
            errs.append([getattr(est, c) / getattr(exact, c) - 1 for c in ("c1", "c2", "c3")])
        rms[p] = np.sqrt(np.mean(np.square(errs), axis=0))
    assert np.all(rms[8000] < [0.15, 0.02, 0.02]), rms
    # sixteen times the prompts: the error shrinks (by about four, the square root of 16)
    assert np.all(rms[8000] < 0.5 * rms[500]), rms


def test_bootstrap_intervals_cover_the_exact_constants():
    """Nominal 90% percentile intervals cover the exact values in most of 30 replications
    (at least 21 of 30: below that has probability < 1% if the coverage really is 90%)."""
    pool = beta_difficulty_pool(128, 8, mean=0.3, spread=0.15)
    exact = pool_constants(pool)
    names = ("c1", "c2", "c3", "g_star_exact")
    covered = dict.fromkeys(names, 0)
    for rep in range(30):
        w, z, _ = sample_pool_groups(pool, 1000, 8, np.random.default_rng(1000 + rep))
        est = estimate_constants(w, z, num_bootstrap=300, confidence=0.9, seed=rep)
        for name in names:
            lo, hi = est.intervals[name]
            covered[name] += lo <= getattr(exact, name) <= hi
    assert all(v >= 21 for v in covered.values()), covered


def test_estimate_constants_bad_input():
    rng = np.random.default_rng(0)
    w, z = rng.normal(size=(4, 2, 3)), rng.normal(size=(4, 2))
    with pytest.raises(ParameterError, match="`group_size`"):
        estimate_constants(w, z)
    with pytest.raises(ParameterError, match="`num_prompts`"):
        estimate_constants(rng.normal(size=(1, 4, 3)), rng.normal(size=(1, 4)))
    with pytest.raises(ParameterError, match="`rewards`"):
        estimate_constants(rng.normal(size=(3, 4, 3)), np.where(np.eye(3, 4) > 0, np.nan, 1.0))
    with pytest.raises(ParameterError, match="`confidence`"):
        estimate_constants(rng.normal(size=(3, 4, 3)), rng.normal(size=(3, 4)), confidence=1.0)
    # every group at zero spread: each constant is exactly 0 and G* undefined, with a warning (the
    # formulas left residue such as c2 = -2.9e-17, which failed with a confusing "`c2` must be >= 0")
    with pytest.warns(RuntimeWarning, match="every group has zero reward spread"):
        k = estimate_constants(rng.normal(size=(20, 4, 3)), np.ones((20, 4)), num_bootstrap=20)
    assert (k.c1, k.c2, k.c3) == (0.0, 0.0, 0.0) and math.isinf(k.g_star)


# ------------------------------------------------------------------------------ the training study


def test_fixed_budget_study_is_reproducible_and_shaped():
    pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.1)
    kw = dict(num_seeds=3, num_steps=6, learning_rate=0.05, optimizer="adam", checkpoints=[0, 3, 6])
    a = train_fixed_budget(pool, 16, [2, 8], **kw)
    b = train_fixed_budget(pool, 16, [2, 8], **kw)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 2 * 3 * 3
    assert set(a.num_prompts) == {8, 2}
    # step 0 is the initial policy: the pool's mean success probability (0.3 up to quadrature)
    assert np.allclose(a[a.step == 0].reward, float(pool.expected_reward()), rtol=0, atol=1e-15)
    assert float(pool.expected_reward()) == pytest.approx(0.3, abs=1e-3)


def test_leave_one_out_sgd_mean_path_does_not_depend_on_g():
    """Unbiased gradient, small steps: one step's expected improvement is the same for every G."""
    pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.1)
    df = train_fixed_budget(pool, 64, [2, 32], num_seeds=400, num_steps=1, learning_rate=0.05,
                            checkpoints=[1])
    means = df.groupby("group_size").reward.mean()
    ses = df.groupby("group_size").reward.std() / np.sqrt(400)
    assert abs(means[2] - means[32]) < 4 * np.hypot(ses[2], ses[32])
    # while the mean baseline at G = 2 moves half as far (its gradient is shrunk by (G-1)/G)
    half = train_fixed_budget(pool, 64, [2], num_seeds=400, num_steps=1, learning_rate=0.05,
                              checkpoints=[1], baseline="mean")
    gain_loo, gain_mean = means[2] - 0.3, half.reward.mean() - 0.3
    assert gain_mean / gain_loo == pytest.approx(0.5, abs=0.05)


def test_best_g_in_training_is_near_the_predicted_optimum():
    """Adam, N = 64, wide spread of difficulties: predicted G* = 4.2; G = 2 and G = 64 lose."""
    pool = beta_difficulty_pool(256, 8, mean=0.2, spread=0.25)
    assert pool_constants(pool).g_star_exact == pytest.approx(4.15, abs=0.05)
    df = train_fixed_budget(pool, 64, [2, 4, 8, 64], num_seeds=24, num_steps=100, learning_rate=0.02,
                            optimizer="adam", checkpoints=[100])
    s = summarise_study(df).set_index("group_size")
    best = int(s.reward.idxmax())
    assert best in (4, 8)
    for worse in (2, 64):
        assert s.reward[best] - s.reward[worse] > 4 * np.hypot(s.reward_se[best], s.reward_se[worse])


def test_summarise_study_marks_statistical_ties():
    df = pd.DataFrame({
        "budget": 8, "group_size": np.repeat([2, 4, 8], 4), "seed": np.tile(range(4), 3), "step": 5,
        "reward": [0.50, 0.52, 0.51, 0.49, 0.70, 0.72, 0.71, 0.69, 0.705, 0.715, 0.70, 0.69],
    })
    s = summarise_study(df).set_index("group_size")
    assert s.best.tolist() == [False, True, False]
    assert s.within_se.tolist() == [False, True, True]


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: beta_difficulty_pool(10, 4, mean=0.5, spread=0.6), "spread"),
        (lambda: beta_difficulty_pool(10, 4, mean=1.0), "mean"),
        (lambda: beta_difficulty_pool(10, 4, num_correct=4), "num_correct"),
        (lambda: beta_difficulty_pool(1, 4), "num_prompts"),
        (lambda: PromptPool(offsets=np.zeros((2, 3)), rewards=np.zeros((2, 4))), "rewards"),
        (lambda: PromptPool(offsets=np.zeros((2, 3)), rewards=np.full((2, 3), np.nan)), "rewards"),
        (lambda: pool_constants(beta_difficulty_pool(10, 4), theta=np.zeros(3)), "theta"),
        (lambda: train_fixed_budget(beta_difficulty_pool(10, 4), 100, [8]), "budget"),
        (lambda: train_fixed_budget(beta_difficulty_pool(10, 4), 64, [1]), "group_sizes"),
        (lambda: train_fixed_budget(beta_difficulty_pool(10, 4), 64, [2], optimizer="rmsprop"), "optimizer"),
        (lambda: minibatch_mse(4, -1.0, 1.0, 1.0, num_prompts=2), "c1"),
        (lambda: minibatch_mse(4, 1.0, 1.0, 1.0), "budget"),
        (lambda: minibatch_mse(1, 1.0, 1.0, 1.0, num_prompts=2), "group_size"),
        (lambda: optimal_group_size(float("nan"), 1.0), "c1"),
        (lambda: best_group_size(96, 1.0, 1.0, 1.0, candidates=[64]), "candidates"),
    ],
)
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ParameterError, match=f"`{name}`") as info:
        call()
    assert info.value.parameter == name


def test_constants_serialise():
    k = GroupSizeConstants(c1=0.01, c2=0.1, c3=1.0, intervals={"c1": (0.005, 0.02)})
    d = k.as_dict()
    assert d["g_star"] == pytest.approx(10.0) and d["g_star_exact"] == pytest.approx(11.0)
    assert d["intervals"]["c1"] == [0.005, 0.02]


def test_spread_for_a_target_optimum_round_trips():
    from grpo_core.groupsize import constants_by_spread, spread_for_optimal_group_size

    sp = spread_for_optimal_group_size(32.0, mean=0.2)
    assert constants_by_spread([sp], mean=0.2).g_star_exact.iloc[0] == pytest.approx(32.0, rel=1e-6)
    # more spread between prompts, more between-prompt variance, smaller G*
    g = constants_by_spread([0.02, 0.05, 0.1, 0.2], mean=0.2).g_star_exact.to_numpy()
    assert np.all(np.diff(g) < 0)
    with pytest.raises(ParameterError, match="`g_star`"):
        spread_for_optimal_group_size(1.5)


@pytest.mark.parametrize("estimator", ["leave_one_out", "mean"])
def test_minibatch_monte_carlo_matches_the_law_for_both_baselines(estimator):
    """The mean baseline's law: ((G-1)/G)^2 times the variance plus the bias ||grad J||^2 / G^2."""
    from grpo_core.groupsize import minibatch_mse_monte_carlo

    pool = beta_difficulty_pool(64, 6, mean=0.3, spread=0.2)
    k = pool_constants(pool)
    for g, b in ((2, 16), (8, 4)):
        mse, se = minibatch_mse_monte_carlo(pool, g, b, 20_000, estimator=estimator, seed=g)
        predicted = float(k.mse(g, num_prompts=b, estimator=estimator))
        assert abs(mse - predicted) < 4 * se, (g, mse, predicted, se)
        assert mse == pytest.approx(predicted, rel=0.05)


def test_study_path_reports_g_star_and_the_best_g():
    from grpo_core.groupsize import study_path

    pool = beta_difficulty_pool(64, 8, mean=0.2, spread=0.25)
    st = train_fixed_budget(pool, 64, [2, 4, 64], num_seeds=8, num_steps=40, learning_rate=0.02,
                            optimizer="adam", checkpoints=[0, 40], record_theta=True)
    path = study_path(st, pool, reference_group_size=4).set_index("step")
    # at step 0 every seed sits at theta = 0: the constants are the pool's initial ones
    assert path.g_star[0] == pytest.approx(pool_constants(pool).g_star_exact, rel=1e-12)
    assert path.tied_low[40] <= path.best_g[40] <= path.tied_high[40]
    with pytest.raises(ParameterError, match="`study`"):
        study_path(st.drop(columns="theta_0"), pool, reference_group_size=4)
    with pytest.raises(ParameterError, match="`reference_group_size`"):
        study_path(st, pool, reference_group_size=8)


def test_study_logits_read_back_the_recorded_policies():
    from grpo_core.groupsize import study_logits

    pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.1)
    runs = [train_fixed_budget(pool, n, [2, 4], num_seeds=3, num_steps=6, learning_rate=0.05, optimizer="adam",
                               checkpoints=[0, 6], record_theta=True, seed=n) for n in (8, 16)]
    st = pd.concat(runs, ignore_index=True)
    np.testing.assert_array_equal(study_logits(st, group_size=4, step=0, budget=16), np.zeros((3, 4)))
    late = study_logits(st, group_size=4, step=6, budget=16)
    assert late.shape == (3, 4) and np.all(np.abs(late) > 0)
    # the logits are the ones the recorded rewards came from: J(theta) per seed, in seed order
    rewards = runs[1].query("group_size == 4 and step == 6").sort_values("seed").reward.to_numpy()
    np.testing.assert_allclose(pool.expected_reward(late), rewards, rtol=1e-12)
    with pytest.raises(ParameterError, match="`budget`"):
        study_logits(st, group_size=4, step=6)
    with pytest.raises(ParameterError, match="`group_size` = 8"):
        study_logits(st, group_size=8, step=6, budget=16)
    with pytest.raises(ParameterError, match="`study`"):
        study_logits(st.drop(columns="theta_0"), group_size=4, step=6, budget=16)
