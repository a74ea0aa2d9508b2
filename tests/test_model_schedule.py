"""Learning-rate time (grpo_core.model.schedule): a scheduled bandit run collapses onto the constant-rate one."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_core import ParameterError
from grpo_core.bandit import BanditSpec, simulate
from grpo_core.model.schedule import lr_schedule, lr_time


def test_lr_time_sums_rates_over_logged_steps():
    np.testing.assert_allclose(lr_time([1e-3, 1e-3, 2e-3]), [1e-3, 2e-3, 4e-3])
    np.testing.assert_allclose(lr_time([1e-3, 2e-3], steps=[10, 20]), [1e-2, 3e-2])
    np.testing.assert_allclose(lr_time([1e-3, np.nan, 2e-3]), [1e-3, 2e-3, 4e-3])  # a row without the key
    sch = lr_schedule(10, "cosine", warmup_steps=3, min_ratio=0.1)
    np.testing.assert_allclose(sch[:3], [1 / 3, 2 / 3, 1.0])
    assert sch[3] == 1.0 and 0.1 < sch[-1] < 0.15
    with pytest.raises(ParameterError, match="learning_rate"):
        lr_time([0.0, 1e-3])
    with pytest.raises(ParameterError, match="steps"):
        lr_time([1e-3, 1e-3], steps=[2, 2])
    with pytest.raises(ParameterError, match="lr_schedule"):
        simulate(BanditSpec.binary(), eta=0.1, steps=3, lr_schedule=[1.0, 1.0])


def test_scheduled_run_collapses_onto_constant_rate_in_lr_time():
    spec = BanditSpec.binary(group_size=8, lag="refresh")
    eta, steps = 0.02, 2000
    sch = lr_schedule(steps, "cosine", warmup_steps=200, min_ratio=0.1)
    scheduled = simulate(spec, eta=eta, beta=1.0, steps=steps, mean_field=True, lr_schedule=sch, theta0=[-1.0, 1.0])
    tau = np.r_[0.0, lr_time(eta * sch)]
    constant = simulate(spec, eta=eta, beta=1.0, steps=int(tau[-1] / eta) + 2, mean_field=True, theta0=[-1.0, 1.0])
    in_tau = np.interp(tau, eta * constant.steps, constant.p[0, 0])
    in_steps = np.interp(np.arange(steps + 1), constant.steps, constant.p[0, 0])
    assert np.max(np.abs(in_tau - scheduled.p[0, 0])) < 1e-3
    assert np.max(np.abs(in_steps - scheduled.p[0, 0])) > 0.1  # in step time they do not collapse
