"""The beta = 0 law (grpo_core.model.anchorless) against the bandit's exact mean-field flow."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core import ParameterError
from grpo_core.bandit import BanditSpec, simulate
from grpo_core.model.anchorless import anchorless_logit, anchorless_rate, anchorless_reward


@pytest.mark.parametrize(("group_size", "scale", "arms", "correct"), [
    (4, "none", 2, 1), (16, "none", 2, 1), (math.inf, "none", 2, 1), (8, "none", 5, 2),
    (math.inf, "group_std", 2, 1), (math.inf, "group_std", 4, 1),
])
def test_law_follows_the_mean_field_flow_within_one_percent(group_size, scale, arms, correct):
    spec = BanditSpec.binary(arms=arms, correct=correct, group_size=group_size, scale=scale, lag="refresh")
    eta = 0.02
    run = simulate(spec, eta=eta, beta=0.0, steps=3000, mean_field=True, record_every=10)
    p = run.p[0, 0]
    rate = anchorless_rate(correct, arms, group_size if scale == "none" else math.inf)
    law = anchorless_reward(eta * run.steps, r0=float(p[0]), rate=rate, scale=scale)
    assert np.max(np.abs(law / p - 1)) < 0.01
    assert p[-1] > 0.97  # it does run to the ceiling


def test_closed_forms_and_late_time_power_laws():
    tau = np.array([1e3, 1e4])
    # Mean baseline: x + sinh x = s tau / 2 from x0 = 0 -> 1 - p ~ 1/(s tau).
    x = anchorless_logit(tau, 0.0, 2.0)
    np.testing.assert_allclose(x + np.sinh(x), tau, rtol=1e-12)
    one_minus = 1 - anchorless_reward(tau, r0=0.5, rate=2.0)
    np.testing.assert_allclose(one_minus * 2.0 * tau, 1.0, rtol=0.01)
    # Std scaling: 1 - p ~ 4/(s tau)^2.
    one_minus = 1 - anchorless_reward(tau, r0=0.5, rate=2.0, scale="group_std")
    np.testing.assert_allclose(one_minus * (2.0 * tau) ** 2 / 4, 1.0, rtol=0.01)
    # Floor and ceiling rescale the fraction.
    r = anchorless_reward([0.0, 1.0], r0=0.3, rate=2.0, floor=0.2, ceiling=0.8)
    f = anchorless_reward([0.0, 1.0], r0=1 / 6, rate=2.0)
    np.testing.assert_allclose(r, 0.2 + 0.6 * f, rtol=1e-12)
    assert anchorless_rate(1, 2, 4) == 1.5 and anchorless_rate(2, 5, math.inf) == pytest.approx(5 / 6)


def test_bad_inputs_are_named():
    with pytest.raises(ParameterError, match="r0"):
        anchorless_reward([0.0], r0=1.0, rate=1.0)
    with pytest.raises(ParameterError, match="rate"):
        anchorless_reward([0.0], r0=0.5, rate=0.0)
    with pytest.raises(ParameterError, match="lr_time"):
        anchorless_logit([-1.0], 0.0, 1.0)
    with pytest.raises(ParameterError, match="ceiling"):
        anchorless_reward([0.0], r0=0.5, rate=1.0, ceiling=0.0)
