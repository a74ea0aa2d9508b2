"""The contextual softmax bandit (grpo_core.bandit.contextual): exact gradient, the one-dimensional
reduction, which restoring rate governs the threshold, and the committed measurements."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import log_softmax

from grpo_core.bandit import BanditSpec, fixed_point, stiffness
from grpo_core.bandit.contextual import (
    ContextualBandit,
    classify_mode,
    contextual_fixed_point,
    critical_eta,
    cycle_radius,
    predicted_critical_eta,
    predicted_period,
    relaxation_curvature,
    ringing_period,
    simulate_contextual,
)
from grpo_core.errors import ParameterError
from grpo_core.model.stability import critical_a_exact

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "contextual_bandit.json"
PREDICTIONS = ROOT / "bench" / "results" / "contextual_bandit_predictions.json"


def _bench_bandit():
    """The setup of bench/bench_contextual_bandit.py (48 prompts, 4 arms, d = 6, G = 8, beta = 1)."""
    cb = ContextualBandit.random(48, 4, 6, seed=0, group_size=8)
    return cb, contextual_fixed_point(cb, 1.0)


def _one_dimensional(group_size=8):
    """P = 1, d = 1, two arms: logits (theta, -theta) / sqrt(2), so theta moves like the logit gap."""
    spec = BanditSpec.binary(arms=2, group_size=group_size, lag="refresh")
    c = 1.0 / math.sqrt(2.0)
    return ContextualBandit(features=[[[c], [-c]]], offsets=[[0.0, 0.0]], spec=spec), spec


@pytest.mark.parametrize("group_size", [8, math.inf])
@pytest.mark.parametrize("baseline", ["mean", "leave_one_out"])
def test_exact_gradient_is_the_gradient_of_the_expected_objective(group_size, baseline):
    cb = ContextualBandit.random(6, 3, 3, seed=2, group_size=group_size, baseline=baseline)
    theta = np.random.default_rng(3).standard_normal(3)
    g = cb.expected_ascent(theta, beta=0.7)
    h = 1e-6
    fd = np.array([(cb.expected_objective(theta + h * e, 0.7) - cb.expected_objective(theta - h * e, 0.7)) / (2 * h)
                   for e in np.eye(3)])
    assert np.max(np.abs(g - fd)) < 1e-8 * max(1.0, np.max(np.abs(g)))
    assert np.max(np.abs(g)) > 1e-3  # not a vacuous comparison of zeros


def test_stale_direction_differs_from_current_and_ratio_removes_the_lag():
    cb = ContextualBandit.random(6, 3, 3, seed=2, group_size=8)
    th, thb = np.array([0.3, -0.2, 0.1]), np.array([0.32, -0.23, 0.1])
    ratios = np.exp(log_softmax(cb.logits(th), axis=-1) - log_softmax(cb.logits(thb), axis=-1))
    assert np.all(np.abs(ratios - 1) < 0.15)  # inside the clip range [0.8, 1.2]
    stale = cb.expected_ascent(th, thb, beta=1.0)
    ratio = cb.with_mode("ratio").expected_ascent(th, thb, beta=1.0)
    current = cb.expected_ascent(th, beta=1.0)
    assert np.allclose(stale, cb.expected_ascent(thb, beta=1.0))  # the stale score gradient is the old one
    assert np.allclose(ratio, current, rtol=0, atol=1e-12)  # mean baseline, clip not binding: the current one
    assert not np.allclose(stale, current, rtol=0, atol=1e-3)
    # far from the behaviour policy the clip binds and the ratio-corrected direction is no longer the current one
    far = cb.with_mode("ratio").expected_ascent(th, np.zeros(3), beta=1.0)
    assert not np.allclose(far, current, rtol=0, atol=1e-3)


def test_sampled_step_averages_to_the_exact_direction():
    cb = ContextualBandit.random(6, 3, 3, seed=2, group_size=4)
    th0 = np.array([0.3, -0.2, 0.1])
    run = simulate_contextual(cb, eta=1.0, beta=1.0, steps=1, theta0=th0, mean_field=False, seeds=4000)
    steps = run.theta[0, :, 1] - th0
    se = steps.std(axis=0) / math.sqrt(steps.shape[0])
    exact = cb.expected_ascent(th0, beta=1.0)
    assert np.all(np.abs(steps.mean(axis=0) - exact) < 4 * se)


def test_one_dimensional_reduction_matches_the_existing_bandit_and_its_thresholds():
    cb, spec = _one_dimensional()
    fp = contextual_fixed_point(cb, 1.0)
    fp1 = fixed_point(spec, 1.0)
    k1 = stiffness(spec, 1.0)
    assert fp.rewards[0] == pytest.approx(fp1.p_star, abs=1e-9)
    assert fp.k_max == pytest.approx(k1, rel=1e-6)
    rel = relaxation_curvature(cb, fp, [1.0])
    assert rel["k_reward_fit"] == pytest.approx(k1, rel=0.01)
    for mu in (0.0, 0.9):
        for k in (1, 4, 16):
            for mode in ("stale", "ratio"):
                pred = float(predicted_critical_eta(k1, mu, k, mode))
                meas = critical_eta(cb.with_mode(mode), fp, mu=mu, k_ref=k, guess=pred, rtol=1e-5)
                assert meas == pytest.approx(pred, rel=0.02), (mu, k, mode)
    # the refresh lag's exact threshold, as the one-dimensional model states it: mu = 0 gives 2 / K_ref
    assert float(predicted_critical_eta(k1, 0.0, 4)) * k1 == pytest.approx(0.5)


def test_largest_eigenvalue_governs_not_the_relaxation_rate():
    cb, fp = _bench_bandit()
    assert fp.asymmetry < 1e-8  # on policy the expected direction is a gradient: a symmetric Jacobian
    assert fp.k_max / fp.k_min == pytest.approx(13.71, rel=0.01)
    # K_ref = 1, mu = 0: the measured critical eta is 2 / K_max (the identity holds to the bisection width)
    meas = critical_eta(cb, fp, mu=0.0, k_ref=1, guess=1.0, rtol=1e-6)
    assert meas == pytest.approx(2.0 / fp.k_max, rel=1e-4)
    # stale lag with momentum, and the ratio at a long refresh: a*(mu, K_ref) / K_max
    meas = critical_eta(cb, fp, mu=0.9, k_ref=4, guess=0.1, rtol=1e-6)
    assert meas == pytest.approx(float(critical_a_exact(0.9, 4, "refresh")) / fp.k_max, rel=1e-4)
    meas = critical_eta(cb.with_mode("ratio"), fp, mu=0.0, k_ref=16, guess=1.0, rtol=1e-6)
    assert meas == pytest.approx(2.0 / fp.k_max, rel=1e-4)
    # the K read off the mean reward's relaxation sits near K_max / 2: its prediction is twice too large
    rel = relaxation_curvature(cb, fp, np.random.default_rng(0).standard_normal(6))
    assert 1.5 < fp.k_max / rel["k_reward_fit"] < 2.0
    # the update map just above and below the measured threshold
    assert cycle_radius(cb, fp, eta=0.99 * 2.0 / fp.k_max, mu=0.0, k_ref=1) < 1.0
    assert cycle_radius(cb, fp, eta=1.01 * 2.0 / fp.k_max, mu=0.0, k_ref=1) > 1.0


def test_committed_measurements_and_predictions_agree_with_the_code():
    rows = json.loads(RESULTS.read_text())
    pred = json.loads(PREDICTIONS.read_text())
    curv = rows[0]
    assert curv["method"] == "curvatures"
    assert curv["k_max"] == pytest.approx(pred["curvatures"]["k_max"])
    assert curv["k_max_over_k_relax"] == pytest.approx(1.985, abs=1e-3)
    thr = [r for r in rows if r["method"] == "threshold"]
    assert len(thr) == 16
    assert all(r["within_1.5_k_max"] and not r["within_1.5_k_relax"] and not r["within_1.5_k_curve"] for r in thr)
    assert max(abs(r["pred_over_measured_k_max"] - 1) for r in thr) < 1e-5
    # the ratio-corrected thresholds do not depend on K_ref; the stale ones fall with it
    for mu in (0.0, 0.9):
        ratio = [r["eta_measured"] for r in thr if r["mode"] == "ratio" and r["mu"] == mu]
        stale = [r["eta_measured"] for r in thr if r["mode"] == "stale" and r["mu"] == mu]
        assert max(ratio) / min(ratio) - 1 < 1e-5
        assert all(a > b for a, b in zip(stale, stale[1:]))
    # a recomputed value matches the committed one
    cb, fp = _bench_bandit()
    row = next(r for r in thr if r["mode"] == "stale" and r["mu"] == 0.0 and r["k_ref"] == 4)
    assert critical_eta(cb, fp, mu=0.0, k_ref=4, guess=1.0, rtol=1e-6) == pytest.approx(row["eta_measured"], rel=1e-5)


def test_periods_and_classes():
    assert predicted_period(1.4, 0.0, 1) == 2.0
    assert predicted_period(0.7, 0.0, 4) == 8.0  # 1 - 4 * 0.7 < 0: the sign flips every cycle
    assert math.isinf(predicted_period(0.1, 0.0, 4))
    t = np.arange(200)
    assert ringing_period((-0.4) ** t, 1) == 2.0
    assert ringing_period(0.99 ** t * np.cos(2 * np.pi * t / 25), 1) == pytest.approx(25, rel=0.02)
    assert math.isinf(ringing_period(0.9 ** t, 1))
    assert classify_mode(0.9 ** t) == "monotone"
    assert classify_mode((-0.9) ** t) == "damped ringing"
    assert classify_mode((-1.02) ** t) == "growing oscillation"
    assert classify_mode(np.stack([0.9 ** t, np.where(t > 150, np.nan, 0.9 ** t)])) == "growing oscillation"


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: ContextualBandit(np.zeros((2, 3)), np.zeros((2, 3)), BanditSpec.binary(3, lag="refresh")), "features"),
        (lambda: ContextualBandit(np.zeros((2, 3, 1)), np.zeros((2, 2)), BanditSpec.binary(3, lag="refresh")),
         "offsets"),
        (lambda: ContextualBandit(np.zeros((2, 3, 1)), np.zeros((2, 3)), BanditSpec.binary(3)), "lag"),
        (lambda: ContextualBandit(np.zeros((2, 3, 1)), np.zeros((2, 3)), BanditSpec.binary(2, lag="refresh")), "spec"),
        (lambda: ContextualBandit.random(0), "num_prompts"),
        (lambda: ContextualBandit.random(4, success_range=(0.0, 0.9)), "success_range"),
        (lambda: ContextualBandit.random(4).with_mode("clipped"), "mode"),
        (lambda: ContextualBandit.random(4, dim=3).expected_ascent(np.zeros(2)), "theta"),
        (lambda: ContextualBandit.random(4, dim=3).expected_ascent(np.zeros(3), beta=-1.0), "beta"),
        (lambda: contextual_fixed_point(ContextualBandit.random(4), 0.0), "beta"),
        (lambda: simulate_contextual(ContextualBandit.random(4), eta=-0.1, beta=1.0, steps=3), "eta"),
        (lambda: simulate_contextual(ContextualBandit.random(4), eta=0.1, k_ref=0, beta=1.0, steps=3), "k_ref"),
        (lambda: simulate_contextual(ContextualBandit.random(4), eta=0.1, mu=1.0, beta=1.0, steps=3), "mu"),
        (lambda: simulate_contextual(ContextualBandit.random(4, group_size=math.inf), eta=0.1, beta=1.0, steps=3,
                                     mean_field=False), "group_size"),
        (lambda: ContextualBandit.random(4, scale="group_std").expected_objective(np.zeros(6), 1.0), "scale"),
        (lambda: predicted_critical_eta(0.0, 0.0, 1), "curvature"),
        (lambda: predicted_critical_eta(1.0, 0.0, 1, "lagged"), "mode"),
    ],
)
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ParameterError) as err:
        call()
    assert err.value.parameter == name
    assert name in str(err.value)


def test_relaxation_refuses_a_zero_direction():
    cb, spec = _one_dimensional()
    fp = contextual_fixed_point(cb, 1.0)
    with pytest.raises(ParameterError, match="direction") as err:
        relaxation_curvature(cb, fp, [0.0])
    assert err.value.parameter == "direction"
