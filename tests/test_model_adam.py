"""Adam near the operating point (grpo_core.model.adam) against the bandit run with optimizer="adam"."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core import ParameterError
from grpo_core.bandit import BanditSpec, fixed_point, gradient_covariance, simulate
from grpo_core.bandit.optimizers import Adam
from grpo_core.model.adam import (
    adam_critical_gain,
    adam_critical_learning_rate,
    adam_effective_gain,
    cohen_sharpness_bound,
    noise_second_moment,
    stationary_second_moment,
)


def test_critical_gain_is_cohen_bound_on_policy():
    b1 = np.array([0.0, 0.5, 0.9, 0.99])
    np.testing.assert_allclose(adam_critical_gain(b1), 2 * (1 + b1) / (1 - b1), rtol=1e-9)
    np.testing.assert_allclose(cohen_sharpness_bound(b1, 1e-3) * 1e-3, adam_critical_gain(b1), rtol=1e-9)
    # A stale (refresh) lag lowers it: b1 = 0, k_ref = 4 -> 2 / 4 (oscillator chapter, "The update rule, linearised").
    assert float(adam_critical_gain(0.0, 4)) == pytest.approx(0.5, rel=1e-9)


def test_effective_gain_and_critical_rate_are_inverse():
    eta_star = adam_critical_learning_rate(0.4, 1e-6, beta1=0.9)
    assert float(adam_effective_gain(eta_star, 0.4, 1e-6)) == pytest.approx(38.0, rel=1e-9)
    assert float(noise_second_moment(0.008, 16, mean_gradient=0.01)) == pytest.approx(1e-4 + 5e-4)


def test_bad_inputs_are_named():
    with pytest.raises(ParameterError, match="eta"):
        adam_effective_gain(0.0, 1.0, 1.0)
    with pytest.raises(ParameterError, match="beta1"):
        cohen_sharpness_bound(1.0, 1e-3)
    spec = BanditSpec.binary(group_size=4)
    with pytest.raises(ParameterError, match="mu"):
        simulate(spec, eta=0.1, mu=0.5, steps=2, optimizer="adam")
    with pytest.raises(ParameterError, match="adam_betas"):
        simulate(spec, eta=0.1, steps=2, optimizer="adam", adam_betas=(0.9, 1.0))
    with pytest.raises(ParameterError, match="optimizer"):
        simulate(spec, eta=0.1, steps=2, optimizer="lion")


def test_adam_step_matches_pytorch_formula():
    # Two steps by hand: m_hat = g (bias-corrected), v_hat = g^2 -> step eta * g / (|g| + eps) at t = 1.
    opt = Adam((1, 1, 2), np.array([[[0.1]]]), (0.9, 0.999), 1e-8)
    g = np.array([[[0.5, -0.5]]])
    np.testing.assert_allclose(opt.update(g), 0.1 * g / (0.5 + 1e-8), rtol=1e-12)
    m = 0.9 * 0.1 * g + 0.1 * g
    v = 0.999 * 0.001 * g**2 + 0.001 * g**2
    expect = 0.1 * (m / (1 - 0.81)) / (np.sqrt(v / (1 - 0.999**2)) + 1e-8)
    np.testing.assert_allclose(opt.update(g), expect, rtol=1e-12)


@pytest.mark.parametrize(("b1", "k_ref"), [(0.0, 1), (0.9, 1), (0.0, 4), (0.9, 4)])
def test_mean_field_adam_settles_at_the_edge_of_stability(b1, k_ref):
    """Noise-free Adam hovers where a = eta K / sqrt(v_hat) is the exact critical gain (Cohen et al. 2022)."""
    spec = BanditSpec.binary(group_size=math.inf, lag="refresh")
    fp = fixed_point(spec, 1.0)
    etas = np.array([3e-3, 1e-2])
    run = simulate(spec, eta=etas, k_ref=k_ref, beta=1.0, steps=6000, mean_field=True, optimizer="adam",
                   adam_betas=(b1, 0.99), theta0=fp.theta_star + 0.3 * fp.direction)
    v_hat = run.optimizer_state["exp_avg_sq"][:, 0, 0]
    measured = etas * fp.stiffness / np.sqrt(v_hat)
    np.testing.assert_allclose(measured, adam_critical_gain(b1, k_ref), rtol=0.10)


@pytest.mark.parametrize("a_target", [0.2, 1.0])
def test_stationary_second_moment_is_the_gradient_noise_and_scales_with_g(a_target):
    """Stochastic Adam (beta1 = 0) below the edge: v_hat = sigma^2 2 / (2 - a), sigma^2 the exact step variance."""
    v_meas, v_pred, sig2 = [], [], []
    for g in (4, 16):
        spec = BanditSpec.binary(group_size=g, num_prompts=16, lag="refresh")
        fp = fixed_point(spec, 1.0)
        s2 = float(gradient_covariance(spec, fp.theta_star)[1][0, 0])
        eta = a_target * np.sqrt(s2) / fp.stiffness
        run = simulate(spec, eta=eta, beta=1.0, steps=3000, seeds=16, optimizer="adam", adam_betas=(0.0, 0.999),
                       theta0=fp.theta_star)
        v_meas.append(float(run.optimizer_state["exp_avg_sq"].mean()))
        v_pred.append(float(stationary_second_moment(s2, eta, fp.stiffness)))
        sig2.append(s2)
    np.testing.assert_allclose(v_meas, v_pred, rtol=0.05)
    # The noise, and with it the gain at a fixed eta, scales as about sqrt(G) (exactly: the step variance ratio).
    assert 1.6 < np.sqrt(sig2[0] / sig2[1]) < 2.2
