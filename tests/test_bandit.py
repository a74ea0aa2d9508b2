"""The softmax bandit (grpo_core.bandit) and its comparison with the oscillator (grpo_core.bandit.stability,
thresholds, sweeps).

Equation references are to the book chapters "The bandit: where the mean field is exact" and
"From update rule to oscillator".
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from grpo_core import ParameterError
from grpo_core.bandit import (
    BanditSpec,
    advantage_coefficients,
    expected_gradient,
    fixed_point,
    gradient_covariance,
    reduced_flow,
    sample_gradient,
    simulate,
    stiffness,
)
from grpo_core.bandit.prediction import predicted_noise
from grpo_core.bandit.stability import classify_trajectory, growth_rates, predicted_regimes
from grpo_core.bandit.sweeps import g_sweep, k_ref_sweep
from grpo_core.bandit.thresholds import critical_a, critical_k_ref, threshold_table
from grpo_core.groupsize import ustat
from grpo_core.model import stability

INF = math.inf


# ---------------------------------------------------------------------------------------------
# Fixed points and stiffness (bandit chapter, closed forms for two arms)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_mean_baseline_fixed_point_and_stiffness_closed_forms(beta):
    fp = fixed_point(BanditSpec.binary(group_size=INF), beta)
    p = expit(1.0 / beta)  # p* = sigmoid(x0 + 1/beta), x0 = 0
    assert fp.interior and fp.symmetric
    assert fp.p_star == pytest.approx(p, abs=1e-12)
    assert fp.stiffness == pytest.approx(2 * beta * p * (1 - p), rel=1e-7)  # K = 2 beta p*(1-p*)


def test_design_reference_numbers():
    fp = fixed_point(BanditSpec.binary(group_size=INF), 1.0)
    assert round(fp.p_star, 4) == 0.7311
    assert round(fp.stiffness, 4) == 0.3932


def test_reference_offset_moves_the_fixed_point():
    # x0 = 0.5 (reference favours the correct arm): p* = sigmoid(x0 + 1/beta).
    spec = BanditSpec.binary(group_size=INF, init_logits=(0.25, -0.25))
    assert fixed_point(spec, 2.0).p_star == pytest.approx(expit(0.5 + 0.5), abs=1e-12)


@pytest.mark.parametrize("g", [2, 4, 16])
def test_finite_group_mean_baseline_shifts_the_fixed_point(g):
    # E[g] = (G-1)/G pi (q - p) - beta grad KL  ->  p* = sigmoid((G - 1) / (G beta)).
    fp = fixed_point(BanditSpec.binary(group_size=g), 1.0)
    assert fp.p_star == pytest.approx(expit((g - 1) / g), abs=1e-12)
    lo = fixed_point(BanditSpec.binary(group_size=g, baseline="leave_one_out"), 1.0)
    assert lo.p_star == pytest.approx(expit(1.0), abs=1e-12)  # leave-one-out: no G-dependence


def test_std_scaling_bistability_design_values():
    spec = BanditSpec.binary(group_size=INF, scale="group_std")
    runaway = fixed_point(spec, 1.4)
    assert not runaway.interior and runaway.p_star == 1.0
    assert round(fixed_point(spec, 1.6).p_star, 3) == 0.855
    assert round(fixed_point(spec, 3.0).p_star, 3) == 0.670
    # The second, unstable fixed point beyond the stable one (beta = 1.6): F changes sign again.
    x = np.linspace(0.0, 12.0, 1201)
    f = reduced_flow(spec, 1.6, x)
    signs = np.sign(f[np.abs(f) > 1e-9])
    assert np.count_nonzero(np.diff(signs)) == 2


def test_no_kl_anchor_no_fixed_point():
    fp = fixed_point(BanditSpec.binary(group_size=INF), 0.0)
    assert not fp.interior and fp.p_star == 1.0 and fp.stiffness == 0.0
    with pytest.raises(ParameterError, match="beta"):
        stiffness(BanditSpec.binary(group_size=INF), 0.0)


def test_reduced_flow_closed_forms():
    x = np.linspace(-2, 4, 25)
    p = expit(x)
    f_mean = reduced_flow(BanditSpec.binary(group_size=INF), 0.7, x)
    np.testing.assert_allclose(f_mean, 2 * p * (1 - p) * (1 - 0.7 * x), atol=1e-12)
    f_std = reduced_flow(BanditSpec.binary(group_size=INF, scale="group_std", std_eps=1e-12), 0.7, x)
    np.testing.assert_allclose(f_std, 2 * np.sqrt(p * (1 - p)) - 2 * 0.7 * p * (1 - p) * x, atol=1e-9)


def test_stiffness_relaxation_agrees_with_derivative():
    for spec, beta in [(BanditSpec.binary(group_size=INF), 1.0), (BanditSpec.binary(group_size=8), 2.0),
                       (BanditSpec.binary(group_size=INF, scale="group_std"), 3.0),
                       (BanditSpec.binary(arms=5, correct=2, group_size=INF), 1.0)]:
        k_der = stiffness(spec, beta)
        k_rel = stiffness(spec, beta, method="relaxation")
        assert k_rel == pytest.approx(k_der, rel=2e-3), spec


def test_general_bandit_fixed_point_is_the_gibbs_policy():
    # Mean baseline, G -> inf, exact KL: gradient ascent on p - beta KL, maximised by pi ~ ref exp(q/beta).
    q = np.array([0.9, 0.5, 0.2])
    fp = fixed_point(BanditSpec(reward_probs=tuple(q), group_size=INF), 1.0)
    w = np.exp(q)
    assert not fp.symmetric and fp.interior
    assert fp.p_star == pytest.approx(float(w @ q / w.sum()), abs=1e-9)
    four = fixed_point(BanditSpec.binary(arms=4, correct=1, group_size=INF), 1.0)
    assert four.p_star == pytest.approx(math.e / (math.e + 3), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Gradients: exact expectations, Monte Carlo, covariance
# ---------------------------------------------------------------------------------------------


def test_advantage_tables_come_from_group_advantages():
    ap, am = advantage_coefficients(BanditSpec.binary(group_size=4, baseline="leave_one_out"))
    np.testing.assert_allclose(ap, [0, 1, 2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(am, [0, -1 / 3, -2 / 3, -1, 0])
    ap, am = advantage_coefficients(BanditSpec.binary(group_size=1))
    assert ap.tolist() == [0.0, 0.0] and am.tolist() == [0.0, 0.0]  # G = 1, mean baseline: advantage 0


@pytest.mark.parametrize("g", [2, 4, 16])
def test_mean_baseline_expected_gradient_is_shrunk_by_g_minus_1_over_g(g):
    th = np.array([0.4, -0.3, 0.1])
    spec = BanditSpec(reward_probs=(1.0, 0.0, 1.0), group_size=g)
    mean = expected_gradient(spec, th)
    loo = expected_gradient(spec.replace(baseline="leave_one_out"), th)
    limit = expected_gradient(spec.replace(group_size=INF), th)
    np.testing.assert_allclose(mean, (g - 1) / g * limit, atol=1e-14)
    np.testing.assert_allclose(loo, limit, atol=1e-14)


SPECS_FOR_MONTE_CARLO = [
    dict(reward_probs=(1, 0), group_size=4),
    dict(reward_probs=(1, 0, 0, 1, 0), group_size=6, baseline="leave_one_out"),
    dict(reward_probs=(0.9, 0.3, 0.5), group_size=5, scale="group_std", num_prompts=2),
    dict(reward_probs=(0.9, 0.3, 0.5), group_size=3, estimator="surrogate", eps_high=0.28),
    dict(reward_probs=(1, 0, 0), group_size=4, estimator="surrogate", kl_estimator="k3", num_prompts=3),
    dict(reward_probs=(1, 0, 0), group_size=1, baseline="none", kl_estimator="k3"),
]


@pytest.mark.parametrize("kw", SPECS_FOR_MONTE_CARLO)
def test_stochastic_mean_gradient_converges_to_mean_field(kw):
    spec = BanditSpec(**kw)
    rng = np.random.default_rng(11)
    th = rng.normal(size=spec.num_arms)
    thb = th + 0.3 * rng.normal(size=spec.num_arms)  # off-policy: ratios and clipping active
    exact = expected_gradient(spec, th, thb, beta=0.7)
    draws = sample_gradient(spec, th, thb, beta=0.7, num_draws=60_000, seed=5)
    se = draws.std(axis=0, ddof=1) / math.sqrt(len(draws))
    z = (draws.mean(axis=0) - exact) / np.maximum(se, 1e-15)
    assert np.all(np.abs(z) < 4.5), z  # 4.5 sigma over <= 5 coordinates x 6 specs


def test_surrogate_on_policy_equals_score_function_gradient():
    score = BanditSpec(reward_probs=(1.0, 0.0, 0.0), group_size=4)
    surr = score.replace(estimator="surrogate")
    th = np.array([0.3, -0.1, 0.5])
    a = sample_gradient(score, th, beta=0.3, num_draws=500, seed=2)
    b = sample_gradient(surr, th, beta=0.3, num_draws=500, seed=2)
    np.testing.assert_allclose(a, b, atol=1e-15)  # ratio 1, no clipping: identical per draw
    np.testing.assert_allclose(expected_gradient(score, th, beta=0.3), expected_gradient(surr, th, beta=0.3))


def test_importance_ratio_removes_the_lag_from_the_expected_gradient():
    # Mean baseline, G -> inf, no clipping: E[rho A (e_a - pi)] under pi_b = the on-policy gradient at pi.
    spec = BanditSpec(
        reward_probs=(1.0, 0.0, 0.0), group_size=INF, estimator="surrogate", eps_low=0.9, eps_high=9.0
    )
    th, thb = np.array([0.3, -0.1, 0.5]), np.array([0.1, 0.2, 0.4])
    np.testing.assert_allclose(
        expected_gradient(spec, th, thb, beta=0.5), expected_gradient(spec, th, beta=0.5), atol=1e-15
    )


def test_plain_k3_kl_gradient_is_the_swapped_kl_gradient_on_policy():
    spec = BanditSpec(
        reward_probs=(1.0, 0.0, 0.0), group_size=INF, kl_estimator="k3", ref_logits=(0.2, 0.0, -0.3)
    )
    th = np.array([0.5, -0.4, 0.1])
    pi = np.exp(th) / np.exp(th).sum()
    ref = np.exp([0.2, 0.0, -0.3]) / np.exp([0.2, 0.0, -0.3]).sum()
    kl_part = expected_gradient(spec, th, beta=1.0) - expected_gradient(spec, th, beta=0.0)
    np.testing.assert_allclose(-kl_part, pi - ref, atol=1e-14)  # grad KL(ref || pi) = pi - ref


@pytest.mark.parametrize(
    "kw",
    [
        dict(reward_probs=(1, 0, 0), group_size=4),
        dict(reward_probs=(0.9, 0.2, 0.5), group_size=5, scale="group_std", num_prompts=2),
        dict(reward_probs=(1, 0, 0), group_size=3, estimator="surrogate", baseline="leave_one_out"),
    ],
)
def test_gradient_covariance_matches_monte_carlo(kw):
    spec = BanditSpec(**kw)
    rng = np.random.default_rng(1)
    th = rng.normal(size=3)
    thb = th + 0.4 * rng.normal(size=3)
    mean, cov = gradient_covariance(spec, th, thb)
    draws = sample_gradient(spec, th, thb, num_draws=200_000, seed=3)
    np.testing.assert_allclose(mean, expected_gradient(spec, th, thb), atol=1e-14)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.015 * np.abs(cov).max())


def test_gradient_covariance_equals_the_u_statistic_mse():
    th = np.array([0.3, -0.2, 0.1])
    pi = np.exp(th) / np.exp(th).sum()
    moments = ustat.bandit_moments(pi, [1.0, 0.0, 0.0])
    for g in (2, 6, 20):
        spec = BanditSpec(reward_probs=(1.0, 0.0, 0.0), group_size=g, baseline="leave_one_out")
        _, cov = gradient_covariance(spec, th)
        assert np.trace(cov) == pytest.approx(float(moments.mse("leave_one_out", g)), rel=1e-12)
        m2, cov2 = gradient_covariance(spec.replace(baseline="mean"), th)
        bias2 = float(np.sum((m2 - moments.gradient) ** 2))
        assert np.trace(cov2) + bias2 == pytest.approx(float(moments.mse("mean", g)), rel=1e-12)


def test_mean_baseline_factor_measured_by_sampling():
    th = np.array([0.0, 0.0])
    for g in (2, 4, 16):
        spec = BanditSpec.binary(group_size=g, num_prompts=4)
        d_mean = sample_gradient(spec, th, num_draws=40_000, seed=g)[:, 0]
        d_loo = sample_gradient(spec.replace(baseline="leave_one_out"), th, num_draws=40_000, seed=g)[:, 0]
        ratio = d_mean.mean() / d_loo.mean()
        se = ratio * math.hypot(d_mean.std() / d_mean.mean(), d_loo.std() / d_loo.mean()) / math.sqrt(40_000)
        # Same uniforms: the mean-baseline draw is exactly (G-1)/G times the leave-one-out one.
        assert abs(ratio - (g - 1) / g) < 4 * se + 1e-12


def test_std_scaling_has_its_own_group_size_dependence():
    # Exact finite-G expectation at the uniform policy, relative to the G -> inf limit: measured values.
    th = np.array([0.0, 0.0])
    limit = expected_gradient(BanditSpec.binary(group_size=INF, scale="group_std"), th)[0]
    ratios = {g: expected_gradient(BanditSpec.binary(group_size=g, scale="group_std"), th)[0] / limit
              for g in (2, 4, 8, 16, 64)}
    # G = 2 at p = 1/2: only mixed groups (probability 1/2) carry signal; their ddof=1 std is 1/sqrt(2),
    # so advantages are +-1/sqrt(2) and the group gradient is 1/(2 sqrt 2): E = sqrt(2)/8 against the
    # limit's 1/2 -> ratio sqrt(2)/4 (up to std_eps).
    assert ratios[2] == pytest.approx(math.sqrt(2) / 4, rel=1e-3)
    vals = [ratios[g] for g in (2, 4, 8, 16, 64)]
    assert all(0 < v < 1.0 for v in vals) and vals == sorted(vals) and vals[-1] > 0.98
    draws = sample_gradient(BanditSpec.binary(group_size=4, scale="group_std"), th, num_draws=40_000, seed=7)[
        :, 0
    ]
    assert abs(draws.mean() / limit - ratios[4]) < 4 * draws.std() / math.sqrt(40_000) / limit


# ---------------------------------------------------------------------------------------------
# Simulator: determinism, batching, G = 1, metrics
# ---------------------------------------------------------------------------------------------


def test_same_seed_same_trajectory_whatever_the_batch():
    spec = BanditSpec.binary(arms=3, correct=1, group_size=4, num_prompts=2)
    a = simulate(spec, eta=[0.3, 0.6, 0.9], mu=0.5, k_ref=[1, 3, 2], beta=1.0, steps=120, seeds=[4, 9])
    b = simulate(spec, eta=0.6, mu=0.5, k_ref=3, beta=1.0, steps=120, seeds=[9])
    c = simulate(spec, eta=[0.3, 0.6, 0.9], mu=0.5, k_ref=[1, 3, 2], beta=1.0, steps=120, seeds=[4, 9])
    np.testing.assert_array_equal(a.p, c.p)
    np.testing.assert_array_equal(a.p[1, 1], b.p[0, 0])
    assert not np.array_equal(a.p[1, 0], a.p[1, 1])  # different seeds differ


def test_mean_field_run_reaches_the_fixed_point():
    spec = BanditSpec.binary(group_size=8)
    run = simulate(spec, eta=0.5, beta=1.0, steps=600, mean_field=True)
    assert run.p.shape == (1, 1, 601)
    assert run.p[0, 0, -1] == pytest.approx(expit(7 / 8), abs=1e-9)


def test_group_size_one_mean_baseline_relaxes_to_the_reference():
    # G = 1: every advantage is 0 (nothing to compare with), only the KL term acts.
    spec = BanditSpec.binary(group_size=1, init_logits=(2.0, 0.0), ref_logits=(0.0, 0.0))
    run = simulate(spec, eta=0.5, beta=1.0, steps=400, seeds=3)
    assert np.all(np.isfinite(run.p))
    np.testing.assert_allclose(run.p[0, :, -1], 0.5, atol=1e-6)


def test_zero_spread_groups_never_give_nan():
    # A policy that (numerically) always picks the correct arm: every group is all-correct.
    spec = BanditSpec.binary(group_size=8, scale="group_std", init_logits=(40.0, 0.0), ref_logits=(0.0, 0.0))
    run = simulate(spec, eta=0.1, beta=0.1, steps=50, seeds=4, metrics=True)
    assert np.all(np.isfinite(run.p)) and np.all(np.isfinite(run.theta))
    assert np.all(run.metrics["frac_reward_zero_std"][:, :, 1:] == 1.0)


def test_metrics_match_their_expectations():
    spec = BanditSpec.binary(group_size=4, estimator="surrogate")
    run = simulate(spec, eta=0.3, k_ref=4, beta=1.0, steps=60, seeds=400, metrics=True)
    keys = {"reward", "reward_std", "frac_reward_zero_std", "kl", "entropy", "grad_norm", "clip_ratio"}
    assert keys <= set(run.metrics)
    m = run.metrics
    # The sampled reward averages to the behaviour policy's p; zero-spread groups to p^G + (1-p)^G.
    p0 = 0.5
    assert m["reward"][0, :, 1].mean() == pytest.approx(p0, abs=4 * 0.5 / math.sqrt(4 * 400))
    assert m["frac_reward_zero_std"][0, :, 1].mean() == pytest.approx(
        2 * p0**4, abs=4 * 0.35 / math.sqrt(400)
    )
    assert np.all(m["kl"][:, :, 1:] >= 0) and np.all(np.isnan(m["reward"][:, :, 0]))


# ---------------------------------------------------------------------------------------------
# Thresholds against the oscillator (oscillator chapter)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu,k_ref", [(0.0, 4), (0.5, 2), (0.5, 8), (0.9, 4)])
def test_constant_lag_threshold_within_5_percent_of_exact(mu, k_ref):
    spec = BanditSpec.binary(group_size=INF, lag="constant")
    res = critical_a(spec, mu=mu, k_ref=k_ref, beta=1.0, points=12, rounds=3)
    exact = float(stability.critical_a_exact(mu, k_ref))
    assert float(res.measured[0]) == pytest.approx(exact, rel=0.05)
    assert float(res.predicted_exact[0]) == exact


def test_threshold_table_follows_the_exact_prediction_for_both_lags():
    settings = [dict(mu=0.0, k_ref=2, lag="refresh"), dict(mu=0.5, k_ref=4, lag="refresh"),
                dict(mu=0.0, k_ref=16, lag="constant"), dict(mu=0.9, k_ref=4, lag="constant", momentum="ema")]
    df = threshold_table(settings, beta=1.0)
    np.testing.assert_allclose(df.measured_over_exact, 1.0, atol=0.01)
    # mu = 0, refresh: a* = 2/K_ref exactly.
    assert df.measured[0] == pytest.approx(1.0, rel=0.01)
    # The continuous model misses where it should: constant lag, mu = 0, d = 16: ratio 1.523.
    assert df.measured_over_continuous[2] == pytest.approx(1.523, abs=0.01)


def test_finite_group_mean_baseline_threshold_uses_its_own_stiffness():
    # G = 4, mean baseline: K and p* change with G, the measured threshold in a = eta K does not.
    spec = BanditSpec.binary(group_size=4)
    res = critical_a(spec, mu=0.5, k_ref=4, beta=1.0, points=12, rounds=3)
    p = expit(0.75)
    assert res.curvature == pytest.approx(2 * p * (1 - p), rel=1e-6)
    assert float(res.measured[0]) == pytest.approx(float(stability.critical_a_exact(0.5, 4)), rel=0.01)


def test_surrogate_removes_the_lag_instability():
    # With the importance ratio the expected gradient is the current policy's: only momentum remains,
    # and the threshold is heavy ball's a* = 2 (1 + mu) at every k_ref.
    spec = BanditSpec.binary(group_size=INF, estimator="surrogate")
    res = critical_a(spec, mu=[0.0, 0.5], k_ref=[8, 4], beta=1.0)
    np.testing.assert_allclose(res.measured, [2.0, 3.0], rtol=0.01)


def test_critical_k_ref_matches_the_exact_integer():
    for lag in ("constant", "refresh"):
        spec = BanditSpec.binary(group_size=INF, lag=lag)
        df = critical_k_ref(spec, eta=[0.25, 0.5, 0.05], mu=[0.5, 0.5, 0.9], beta=1.0, k_max=24)
        assert df.measured_critical_k_ref.tolist() == df.predicted_exact.tolist()
        assert np.all(df.predicted_continuous < df.predicted_exact + 1e-9)


def test_growth_rate_guard_never_trips_on_a_stable_run():
    spec = BanditSpec.binary(group_size=INF)
    a_exact = float(stability.critical_a_exact(0.9, 16))
    k = fixed_point(spec, 1.0).stiffness
    rates = growth_rates(spec, eta=np.array([0.9, 0.97, 1.03]) * a_exact / k, mu=0.9, k_ref=16, beta=1.0)
    assert rates[0] < 0 and rates[1] < 0 and rates[2] > 0


def test_growth_rates_are_the_recurrences_decay_rates():
    # mu = 0, eta = 0.5: fast-decaying runs reach the rounding floor (k_ref 3 even hits p* exactly);
    # the rate is then measured before the floor, not reported as a clamp (it was -0.0164 for k_ref 1,
    # 2, 4, 5 and -0.51 for 3). Against log(spectral radius) of the exact recurrence, same a = eta K.
    spec = BanditSpec.binary(group_size=INF)
    k = fixed_point(spec, 1.0).stiffness
    ks = np.array([1, 3, 4, 7, 8])  # (at k_ref = 5 two modes of near modulus keep the windows 40% off)
    rates = growth_rates(spec, eta=0.5, mu=0.0, k_ref=ks, beta=1.0)
    exact = np.log(stability.spectral_radius(0.5 * k, 0.0, ks, "constant"))
    np.testing.assert_allclose(rates, exact, rtol=0.1)
    assert np.all(np.diff(rates) > 0)  # a longer lag decays more slowly, then grows


def test_k_ref_sweep_regimes_measured_and_predicted():
    res = k_ref_sweep(BanditSpec.binary(group_size=INF), eta=0.25, mu=0.3, beta=1.0, k_refs=[1, 2, 8, 12])
    reg = res["regimes"]
    assert reg.measured.tolist() == ["monotone", "oscillatory", "oscillatory", "divergent"]
    assert reg.exact.tolist() == reg.measured.tolist()
    # The continuous model calls k_ref = 8 unstable; the bandit and the exact recurrence do not.
    assert reg.continuous.tolist()[2] == "divergent"


def test_classify_trajectory():
    t = np.arange(400)
    p_star = 0.7
    mono = p_star - 0.2 * 0.97**t
    osc = p_star - 0.2 * 0.98**t * np.cos(0.2 * t)
    div = p_star - 0.2 * 1.01**t * np.cos(0.2 * t)
    limit_cycle = p_star + 0.1 * np.sin(0.3 * t)
    out = classify_trajectory(np.stack([mono, osc, div, limit_cycle]), p_star)
    assert out.tolist() == ["monotone", "oscillatory", "divergent", "divergent"]
    # a trajectory that overflowed float64 (NaN/inf after some step) is divergent, not an error
    overflowed = mono.copy()
    overflowed[300:] = np.nan
    overflowed[299] = np.inf
    out = classify_trajectory(np.stack([mono, overflowed]), p_star)
    assert out.tolist() == ["monotone", "divergent"]
    with pytest.raises(ParameterError, match="p_star"):
        classify_trajectory(mono, np.nan)
    # a slow monotone approach (small learning rate: |e| shrank by less than 10% between the second
    # and last quarters) is monotone, not divergent; a slow monotone growth still is divergent
    slow = p_star - 0.2 * (1 - 4e-4) ** t
    grow = p_star - 0.2 * (1 + 4e-4) ** t
    assert classify_trajectory(np.stack([slow, grow]), p_star).tolist() == ["monotone", "divergent"]


def test_predicted_regimes_small_eta_is_monotone_not_divergent():
    # eta = 1e-3 on the binary bandit (a = eta K ~ 4e-4, spectral radius < 1): the exact recurrence
    # decays too slowly to shrink 10% in 400 steps, which used to be called divergent
    reg = predicted_regimes(BanditSpec.binary(), eta=[1e-12, 1e-3], mu=0.0, k_ref=1, curvature=0.4153)
    assert reg.exact.tolist() == ["monotone", "monotone"]
    assert reg.continuous.tolist() == ["monotone", "monotone"]


def test_simulate_refuses_a_run_too_large_for_memory_up_front():
    spec = BanditSpec.binary(group_size=8)
    with pytest.raises(ParameterError, match="`steps`.*GiB"):
        simulate(spec, eta=0.1, beta=1.0, steps=10**12)
    with pytest.raises(ParameterError, match="`seeds`"):
        simulate(spec, eta=0.1, beta=1.0, steps=10, seeds=10**8)
    with pytest.raises(ParameterError, match="`seeds`"):
        simulate(spec, eta=0.1, beta=1.0, steps=10, seeds=np.arange(2_000_000))
    # recording only every n-th step keeps a long run small
    run = simulate(spec, eta=0.1, beta=1.0, steps=20_000, seeds=1, mean_field=True, record_every=10_000)
    assert run.p.shape == (1, 1, 3)


# ---------------------------------------------------------------------------------------------
# Group size: G-invariance and the noise temperature
# ---------------------------------------------------------------------------------------------


def test_leave_one_out_mean_path_is_g_invariant_and_variance_scales():
    base = BanditSpec.binary(group_size=4, baseline="leave_one_out")
    tr = g_sweep(base, [4, 16], eta=0.5, beta=1.0, seeds=600, steps=120, record_every=4)["trajectories"]
    a, b = (tr[tr.group_size == g].reset_index(drop=True) for g in (4, 16))
    z = (a["mean"] - b["mean"]) / np.hypot(a["sem"], b["sem"]).clip(lower=1e-12)
    assert np.abs(z[1:]).max() < 4.0  # agreement within sampling error at every recorded step
    # ...while the plain mean baseline's path depends on G ((G-1)/G): its plateau differs by far more.
    m = g_sweep(base.replace(baseline="mean"), [4, 16], eta=0.5, beta=1.0, seeds=200, steps=200,
                record_every=10)["trajectories"]
    end = m[m.step == 200].set_index("group_size")["mean"]
    assert end[16] - end[4] > 0.03

    # Stationary variance: p* = 0.88 (beta = 0.5), where the 1/G^2 term is small, and a small gain
    # a = eta K = 0.02 (linear regime): ratio 4 within 20%, and the exact linear-noise prediction.
    beta = 0.5
    k = fixed_point(base, beta).stiffness
    var = g_sweep(
        base,
        [4, 16],
        eta=0.02 / k,
        beta=beta,
        seeds=200,
        steps=1400,
        burn_in=200,
        start="fixed_point",
        record_every=2,
    )["variance"]
    ratio = var.variance[0] / var.variance[1]
    assert ratio == pytest.approx(4.0, rel=0.2)
    np.testing.assert_allclose(var.variance, var.predicted, rtol=0.1)


def test_stationary_variance_follows_the_exact_noise_prediction():
    # p* = 0.73 (beta = 1): the U-statistic's 1/(G(G-1)) term makes the G=4 : G=16 ratio ~5.7, not 4.
    base = BanditSpec.binary(group_size=4, baseline="leave_one_out")
    var = g_sweep(base, [4, 16], eta=0.5, beta=1.0, seeds=200, steps=1200, burn_in=200, start="fixed_point",
                  record_every=2)["variance"]
    pred = var.predicted[0] / var.predicted[1]
    assert 5.2 < pred < 6.2
    assert var.variance[0] / var.variance[1] == pytest.approx(pred, rel=0.1)


def test_predicted_noise_is_one_over_g_for_the_oracle_part():
    # At p = 1/2 (two arms) the oracle variance vanishes: the leave-one-out noise is pure 1/(G(G-1)).
    spec = BanditSpec.binary(group_size=4, baseline="leave_one_out")
    _, cov4 = gradient_covariance(spec, [0.0, 0.0])
    _, cov16 = gradient_covariance(spec.replace(group_size=16), [0.0, 0.0])
    assert cov4[0, 0] / cov16[0, 0] == pytest.approx((16 * 15) / (4 * 3), rel=1e-12)
    r = predicted_noise(spec, eta=0.5, mu=0.0, k_ref=1, beta=1.0)
    assert r["variance_exact"] > 0 and r["p_star"] == pytest.approx(expit(1.0))


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: BanditSpec.binary(arms=1), "arms"),
        (lambda: BanditSpec(reward_probs=(1.0,)), "arms"),
        (lambda: BanditSpec.binary(arms=3, correct=0), "correct"),
        (lambda: BanditSpec.binary(arms=3, correct=3), "correct"),
        (lambda: BanditSpec(reward_probs=(0.0, 0.0, 0.0)), "reward_probs"),
        (lambda: BanditSpec(reward_probs=(1.2, 0.0)), "reward_probs"),
        (lambda: BanditSpec(reward_probs=(0.5, -0.1)), "reward_probs"),
        (lambda: BanditSpec(reward_probs=(1.0, float("nan"))), "reward_probs"),
        (lambda: BanditSpec.binary(group_size=0), "group_size"),
        (lambda: BanditSpec.binary(group_size=1, baseline="leave_one_out"), "group_size"),
        (lambda: BanditSpec.binary(group_size=1, scale="group_std"), "group_size"),
        (lambda: BanditSpec.binary(group_size=2.5), "group_size"),
        (lambda: BanditSpec.binary(num_prompts=0), "num_prompts"),
        (lambda: BanditSpec.binary(lag="sometimes"), "lag"),
        (lambda: BanditSpec.binary(estimator="ppo"), "estimator"),
        (lambda: BanditSpec.binary(eps_low=1.0), "eps_low"),
        (lambda: BanditSpec.binary(scale="group_std", baseline="none"), "scale"),
        (lambda: simulate(BanditSpec.binary(), eta=0.0, steps=5), "eta"),
        (lambda: simulate(BanditSpec.binary(), eta=-1.0, steps=5), "eta"),
        (lambda: simulate(BanditSpec.binary(), eta=float("inf"), steps=5), "eta"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, mu=1.0, steps=5), "mu"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, mu=-0.1, steps=5), "mu"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, k_ref=0, steps=5), "k_ref"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, k_ref=2.5, steps=5), "k_ref"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, beta=-1.0, steps=5), "beta"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, steps=0), "steps"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, steps=5, seeds=0), "seeds"),
        (lambda: simulate(BanditSpec.binary(), eta=[0.1, 0.2], mu=[0.1, 0.2, 0.3], steps=5), "eta"),
        (lambda: simulate(BanditSpec.binary(group_size=INF), eta=0.1, steps=5), "group_size"),
        (lambda: simulate(BanditSpec.binary(), eta=0.1, steps=5, theta0=[0.0, 0.0, 0.0]), "theta0"),
    ],
)
def test_bad_inputs_name_the_parameter(build, name):
    with pytest.raises(ParameterError) as info:
        build()
    assert info.value.parameter == name
    assert f"`{name}`" in str(info.value)


def test_case_08_bad_hyperparameters_refused_by_the_bandit(case):
    # The user case of the oscillator (eta, mu, k_ref typed wrong) holds for the bandit as well.
    for item in case("08-bad-hyperparameters")["input"]:
        if item["bad"] == "curvature":
            continue  # the bandit measures its curvature
        with pytest.raises(ParameterError) as info:
            simulate(BanditSpec.binary(), eta=item["eta"], mu=item["mu"], k_ref=item["k_ref"], steps=3)
        assert info.value.parameter == item["bad"]


def test_oscillator_gain_validates_its_inputs():
    from grpo_core.bandit.prediction import oscillator_gain

    spec = BanditSpec.binary()
    for args, name in (
        ((float("nan"), 0.5, 1.0), "eta"),
        ((0.1, 0.5, -1.0), "curvature"),
        ((0.1, 1.0, 1.0), "mu"),
    ):
        with pytest.raises(ParameterError) as err:
            oscillator_gain(spec, *args)
        assert err.value.parameter == name
    assert oscillator_gain(spec, [0.1, 0.2], 0.5, [1.0, 2.0]).tolist() == pytest.approx([0.1, 0.4])
