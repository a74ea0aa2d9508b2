"""Reused generation batches with the importance ratio (grpo_core.model.reuse) against the bandit's mean field."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core import ParameterError
from grpo_core.bandit import BanditSpec, simulate
from grpo_core.bandit.thresholds import critical_a
from grpo_core.model.anchorless import anchorless_rate
from grpo_core.model.reuse import clip_ceiling, clip_onset


@pytest.mark.parametrize("group_size", [8, math.inf])
def test_ratio_removes_the_lag_exactly_with_the_mean_baseline(group_size):
    spec = BanditSpec.binary(group_size=group_size, lag="refresh", estimator="surrogate")
    run = simulate(spec, eta=0.005, k_ref=[1, 8], beta=1.0, steps=300, mean_field=True, theta0=[-1.0, 1.0],
                   metrics=True)
    assert np.nanmax(run.metrics["clip_ratio"][1]) == 0.0  # nothing clipped: the regime of the claim
    np.testing.assert_allclose(run.p[1, 0], run.p[0, 0], atol=1e-12)


def test_std_scaling_changes_the_path_little_at_a_small_step():
    """Small eta: the paths differ little; the stale 1/std still leaves a lagged term that moves the
    threshold (tests/test_domain_claims_bandit.py)."""
    spec = BanditSpec.binary(group_size=math.inf, scale="group_std", lag="refresh", estimator="surrogate")
    run = simulate(spec, eta=0.005, k_ref=[1, 8], beta=2.0, steps=300, mean_field=True, theta0=[-1.0, 1.0],
                   metrics=True)
    assert np.nanmax(run.metrics["clip_ratio"][1]) == 0.0
    gap = np.abs(run.p[1, 0] - run.p[0, 0])
    assert 1e-4 < gap.max() < 0.003  # the stale 1/std: not the on-policy path


def test_ratio_corrected_threshold_is_the_on_policy_one():
    """With the ratio, k_ref = 8 reuse is unstable at a = 2 (on-policy), not at 2/8 (stale gradient)."""
    spec = BanditSpec.binary(group_size=8, lag="refresh", estimator="surrogate")
    res = critical_a(spec, mu=0.0, k_ref=[1, 8], beta=1.0, points=12, rounds=3)
    np.testing.assert_allclose(res.measured, [2.0, 2.0], rtol=0.10)


def test_clip_caps_the_rise_per_generation_batch():
    spec = BanditSpec.binary(group_size=8, lag="refresh", estimator="surrogate")
    k = 64
    run = simulate(spec, eta=0.5, k_ref=k, beta=0.0, steps=6 * k, mean_field=True, theta0=[-1.0, 0.0])
    p = run.p[0, 0]
    start, end = p[::k][:-1], p[k::k]
    ceiling = clip_ceiling(start)
    assert np.all(end <= ceiling + 0.02)  # up to the last step's overshoot
    # Where the flow is fast enough to get there within the batch (p_old < 0.8), it stops at the ceiling.
    fast = start < 0.8
    assert fast.sum() >= 3
    np.testing.assert_allclose(end[fast], ceiling[fast], atol=0.02)


@pytest.mark.parametrize("k", [4, 16])
def test_clip_onset_separates_exact_reuse_from_capped_reuse(k):
    """The ratio is checked before each of the k steps: the clip binds when (k - 1) eta reaches the onset."""
    spec = BanditSpec.binary(group_size=8, lag="refresh", estimator="surrogate")
    p0 = 1 / (1 + math.e)
    onset = float(clip_onset([p0], anchorless_rate(1, 2, 8))[0])
    etas = np.array([0.95, 1.05]) * onset / (k - 1)
    run = simulate(spec, eta=etas, k_ref=k, beta=0.0, steps=k, mean_field=True, theta0=[-1.0, 0.0], metrics=True)
    on_policy = simulate(spec, eta=etas, k_ref=1, beta=0.0, steps=k, mean_field=True, theta0=[-1.0, 0.0])
    assert np.nanmax(run.metrics["clip_ratio"][0]) == 0.0
    np.testing.assert_allclose(run.p[0, 0], on_policy.p[0, 0], atol=1e-12)
    assert np.nanmax(run.metrics["clip_ratio"][1]) > 0.0
    assert run.p[1, 0, -1] < on_policy.p[1, 0, -1]


def test_bad_inputs_are_named():
    with pytest.raises(ParameterError, match="p_old"):
        clip_ceiling([1.5])
    with pytest.raises(ParameterError, match="eps_low"):
        clip_ceiling([0.5], eps_low=1.0)
    with pytest.raises(ParameterError, match="rate"):
        clip_onset([0.5], 0.0)
