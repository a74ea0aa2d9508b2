"""Where the bandit chapter's results hold: the ratio and the lag, and the KL anchor at finite G.

Book chapter "The bandit: where the mean field is exact", sections "Thresholds: measured against
both predictions" and "What the std scaling, the clipped surrogate and the KL anchor change";
grpo_core.model.reuse and grpo_core.bandit.fixed_points (our derivation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core import ParameterError
from grpo_core.bandit import BanditSpec, expected_gradient, fixed_point, reduced_flow
from grpo_core.bandit.fixed_points import beta_for_fixed_point, smallest_anchoring_beta
from grpo_core.bandit.thresholds import critical_a
from grpo_core.model.reuse import ratio_critical_a

MUS = [0.0, 0.5, 0.9]
# critical_a with points=12, rounds=4: 3 and 4 rounds differ by < 5e-4 relative here
RTOL = 2e-3


def _reuse(group_size, scale):
    return BanditSpec.binary(group_size=group_size, lag="refresh", estimator="surrogate", scale=scale)


# --- Claim: with the ratio the lag drops out (mean baseline only) -------------------------------


@pytest.mark.parametrize("group_size", [8, math.inf])
def test_ratio_with_mean_baseline_has_the_on_policy_threshold(group_size):
    res = critical_a(_reuse(group_size, "none"), mu=MUS, k_ref=8, beta=3.0, points=12, rounds=4)
    np.testing.assert_allclose(res.measured, [2 * (1 + m) for m in MUS], rtol=RTOL)


@pytest.mark.parametrize("group_size, expected", [
    (math.inf, [1.759, 2.638, 3.234]),   # bandit chapter, table of std scaling with the ratio
    (8, [1.889, 2.834, 3.590]),          # the group size of the oscillator chapter's check 2
])
def test_ratio_with_std_scaling_keeps_a_lagged_term(group_size, expected):
    res = critical_a(_reuse(group_size, "group_std"), mu=MUS, k_ref=8, beta=3.0, points=12, rounds=4)
    np.testing.assert_allclose(res.measured, expected, rtol=RTOL)
    assert np.all(res.measured < [2 * (1 + m) for m in MUS])  # below the on-policy edge


def _stale_share(spec, beta):
    """c / K from the bandit's expected surrogate gradient: c = dF/dx_old at the fixed point."""
    fp = fixed_point(spec, beta)

    def gap_flow(x, x_old):
        g = expected_gradient(spec, [x, 0.0], [x_old, 0.0], beta=beta)  # arm 0 is the correct one
        return g[0] - g[1]

    h = 1e-5
    c = (gap_flow(fp.gap, fp.gap + h) - gap_flow(fp.gap, fp.gap - h)) / (2 * h)
    return c / fp.stiffness, fp


def test_stale_share_closed_form_at_infinite_g():
    """G -> inf, two arms: c = (2 p* - 1) sqrt(p* (1 - p*)) (reuse module docstring)."""
    share, fp = _stale_share(_reuse(math.inf, "group_std"), 3.0)
    p = fp.p_star
    closed = (2 * p - 1) * math.sqrt(p * (1 - p)) / fp.stiffness
    assert share == pytest.approx(closed, rel=1e-3)
    assert share == pytest.approx(0.137, abs=1e-3)
    assert fp.stiffness == pytest.approx(2 * 3.0 * p * (1 - p) - share * fp.stiffness, rel=1e-3)


@pytest.mark.parametrize("group_size", [8, math.inf])
def test_recurrence_with_the_stale_share_predicts_the_measurement(group_size):
    share, _ = _stale_share(_reuse(group_size, "group_std"), 3.0)
    res = critical_a(_reuse(group_size, "group_std"), mu=MUS, k_ref=8, beta=3.0, points=12, rounds=4)
    predicted = [ratio_critical_a(m, 8, stale=share) for m in MUS]
    np.testing.assert_allclose(res.measured, predicted, rtol=RTOL)


def test_ratio_critical_a_limits():
    for m in MUS:
        assert ratio_critical_a(m, 8) == pytest.approx(2 * (1 + m), rel=1e-9)       # mean baseline
        assert ratio_critical_a(m, 1, stale=0.3) == pytest.approx(2 * (1 + m), rel=1e-9)  # on-policy
        # long reuse: the on-policy edge for the current step's gain eta (K + c)
        assert ratio_critical_a(m, 256, stale=0.137) == pytest.approx(2 * (1 + m) / 1.137, rel=2e-3)
    assert ratio_critical_a(0.0, 8, stale=0.137) == pytest.approx(2 / 1.137, rel=1e-6)
    assert ratio_critical_a(0.9, 8, momentum="ema") == pytest.approx(38.0, rel=1e-9)  # 2(1+mu)/(1-mu)
    with pytest.raises(ParameterError, match="stale"):
        ratio_critical_a(0.0, 8, stale=math.nan)
    with pytest.raises(ParameterError, match="mu"):
        ratio_critical_a(1.0, 8)


# --- Claim: the smallest beta that anchors the std-scaled bandit at finite G --------------------


@pytest.mark.parametrize("g", [2, 8, 64])
def test_advantage_pull_is_bounded_at_finite_g(g):
    """h_G = F_0 / (2 p (1 - p)) rises to (G - 1)/sqrt(G) and never above: every beta > 0 anchors."""
    spec = BanditSpec.binary(group_size=g, scale="group_std")
    x = np.linspace(0.0, 20.0, 2001)  # up to 1 - p = 2e-9, where the flow is still resolved
    p = 1 / (1 + np.exp(-x))
    pull = reduced_flow(spec, 0.0, x) / (2 * p * (1 - p))
    bound = (g - 1) / math.sqrt(g)
    assert np.all(pull > 0) and np.all(pull <= bound)
    assert pull[-1] == pytest.approx(bound, rel=1e-3)
    # beta x crosses a bounded positive pull: a fixed point with 1 - p* ~ exp(-bound / beta)
    for beta in (0.1 * bound / 2.47, 0.2 * bound / 2.47):
        fp = fixed_point(spec, beta)
        assert fp.p_star < 1 and math.isfinite(fp.gap)  # a fixed point, though 1 - p* < 1e-6 at 0.1
        assert fp.gap == pytest.approx(bound / beta, rel=1e-3)


def test_g8_small_beta_has_a_fixed_point():
    """G = 8, beta = 0.01: F changes sign at x* ~ 7 / (sqrt(8) 0.01) = 247.5 (1 - p* ~ e^-247)."""
    bound = 7 / math.sqrt(8)
    assert bound / 0.01 == pytest.approx(247.49, abs=0.01)
    spec = BanditSpec.binary(group_size=8, scale="group_std")
    # F > 0 up to where 1 - p is still resolved in floating point; the pull stays below the bound
    x = np.linspace(0.0, 30.0, 301)
    assert np.all(reduced_flow(spec, 0.01, x) > 0)
    assert 0.01 * 300.0 > bound  # from x = 300 on the KL pull beta x exceeds the bounded pull: F < 0


def test_old_smallest_anchoring_beta_is_the_tolerance_crossing():
    """G = 8: the 'smallest anchoring beta' 0.18 is where 1 - p* crosses the 1e-6 interior tolerance."""
    spec = BanditSpec.binary(group_size=8, scale="group_std")
    assert smallest_anchoring_beta(spec, np.arange(0.05, 2.0, 0.01)) == pytest.approx(0.18)
    assert 1 - fixed_point(spec, 0.18).p_star == pytest.approx(1.07e-6, rel=0.01)
    assert float(beta_for_fixed_point(spec, 1 - 1e-6)) == pytest.approx(0.1791, abs=1e-4)


@pytest.mark.parametrize("g, level, beta", [
    (2, 1e-3, 0.1024), (8, 1e-3, 0.3577), (64, 1e-3, 1.1193),
    (2, 1e-6, 0.0512), (8, 1e-6, 0.1791), (64, 1e-6, 0.5695),
    (2, 1e-2, 0.1539), (8, 1e-2, 0.5309),
])
def test_beta_for_fixed_point(g, level, beta):
    """The chapter's table; fixed_point reaches the level from the uniform start."""
    spec = BanditSpec.binary(group_size=g, scale="group_std")
    b = float(beta_for_fixed_point(spec, 1 - level))
    assert b == pytest.approx(beta, abs=1e-4)
    assert 1 - fixed_point(spec, b).p_star == pytest.approx(level, rel=1e-6)
    if level <= 1e-3:  # the small-beta law (G - 1)/(sqrt(G) ln(1/eps)), within 2%
        assert b == pytest.approx((g - 1) / math.sqrt(g) / math.log(1 / level), rel=0.02)


def test_g64_keeps_a_narrow_bistable_window():
    """G = 64, beta = 1.4534 (level 1e-2): the flow from the uniform start stops at 1 - p* = 0.083."""
    spec = BanditSpec.binary(group_size=64, scale="group_std")
    b = float(beta_for_fixed_point(spec, 0.99))
    assert b == pytest.approx(1.4534, abs=1e-4)
    assert 1 - fixed_point(spec, b).p_star == pytest.approx(0.0831, abs=1e-3)
    x = np.linspace(0.05, 30.0, 6000)
    betas = beta_for_fixed_point(spec, 1 / (1 + np.exp(-x)))
    rising = np.nonzero(np.diff(betas) > 0)[0]
    assert betas[rising[0]] == pytest.approx(1.4497, abs=1e-3)
    assert betas[rising[-1] + 1] == pytest.approx(1.4945, abs=1e-3)


def test_infinite_g_keeps_the_true_threshold():
    spec = BanditSpec.binary(group_size=math.inf, scale="group_std")
    assert smallest_anchoring_beta(spec, np.arange(1.40, 1.60, 0.01)) == pytest.approx(1.51)
    assert not fixed_point(spec, 1.50).interior
    x = np.linspace(0.05, 30.0, 6000)
    assert float(beta_for_fixed_point(spec, 1 / (1 + np.exp(-x))).min()) == pytest.approx(1.508, abs=1e-3)


def test_beta_for_fixed_point_mean_baseline_closed_form():
    """Mean baseline: p* = sigmoid((G - 1)/(G beta))."""
    for g in (4, math.inf):
        spec = BanditSpec.binary(group_size=g)
        frac = 1.0 if g == math.inf else (g - 1) / g
        p = 1 / (1 + math.exp(-frac / 0.5))
        assert float(beta_for_fixed_point(spec, p)) == pytest.approx(0.5, rel=1e-6)
    with pytest.raises(ParameterError, match="p_star"):
        beta_for_fixed_point(spec, 1.0)
