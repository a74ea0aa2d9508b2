"""What makes the slow start (grpo_core.runs.slow_start): the inertia M/C, synthetic curves whose
answer is known, and the shipped real runs (book chapter "Fitting real reward curves", section
"What makes the slow start")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core.errors import DataError, ParameterError
from grpo_core.laws import get_law
from grpo_core.model.oscillator import coefficients
from grpo_core.runs.settings import RunSettings
from grpo_core.runs.slow_start import momentum_inertia, slow_start, slow_start_of_run, slow_start_table

T = np.arange(1.0, 401.0)


def _noise(scale: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, scale, T.size)


# --- the inertia: M/C = (1 + mu) / (2 (1 - mu)), 9.5 steps for Adam's beta1 = 0.9 ---------------

def test_adam_inertia_is_9_5_steps_closed_form_and_library():
    mu = 0.9
    closed = (1 + mu) / (2 * (1 - mu))
    c = coefficients(1.0, mu, 1, 1e-12, lag="refresh", momentum="ema")  # on-policy EMA momentum
    assert closed == pytest.approx(9.5)
    assert c.mass / c.damping == pytest.approx(closed, rel=1e-9)
    assert momentum_inertia(RunSettings().conventions()) == pytest.approx(9.5, rel=1e-9)


def test_inertia_follows_beta1_and_the_heavy_ball():
    assert momentum_inertia(RunSettings(beta1=0.5).conventions()) == pytest.approx(1.5)
    sgd = RunSettings(optimizer="sgd", sgd_momentum=0.8).conventions()
    assert sgd.momentum == "heavy_ball"
    assert momentum_inertia(sgd) == pytest.approx(1.8 / 0.4)
    with pytest.raises(ParameterError, match="conventions"):
        momentum_inertia(0.9)


# --- synthetic curves with a known answer ----------------------------------------------------

def test_logistic_curve_without_warmup_is_a_logistic_start():
    y = get_law("logistic")(T, [0.05, 0.9, 0.05, 120.0]) + _noise(0.02)
    r = slow_start(T, y)
    assert r.warmup_steps == 0.0
    assert r.explanation == "logistic start"
    assert r.logistic is True and r.warmup is False
    assert r.start_fraction < 0.01
    # the slow start: a logistic from 0.3% of its way takes ~120 - ln(9)/0.05 = 76 steps to 10%
    assert 40 < r.lag_steps < 90


def test_exponential_with_linear_warmup_is_the_warmup():
    lr = np.minimum(T / 100, 1.0) * 1e-5
    s = np.cumsum(lr / lr.max())
    y = 0.2 + 0.6 * (1 - np.exp(-0.02 * s)) + _noise(0.02)
    r = slow_start(T, y, lr_steps=T, lr_values=lr)
    assert r.warmup_steps == 95.0  # 95% of the peak at step 95
    assert r.explanation == "warm-up"
    assert r.delta_steps["exponential"] > 100 and r.delta_lr["exponential"] <= 2
    assert r.lag_steps > 10 and abs(r.lag_lr) < 3  # the slow start is in steps, not in learning-rate time
    # without the schedule the same curve has a slow start no warm-up explains
    assert slow_start(T, y).explanation != "warm-up"


def test_three_phase_curve_at_adams_inertia_is_inertia():
    y = get_law("three_phase")(T, [0.2, 0.8, 0.02, 9.5]) + _noise(0.01)
    r = slow_start(T, y)
    assert r.explanation == "inertia"
    assert r.tau_low < 9.5 < r.tau_high and r.inertia_in_interval is True


def test_exponential_has_no_slow_start_and_noise_no_verdict():
    r = slow_start(T, 0.2 + 0.6 * (1 - np.exp(-0.02 * T)) + _noise(0.02))
    assert r.explanation == "no slow start" and r.slow_start is False and r.warmup is None
    flat = slow_start(T, 0.5 + _noise(0.05))
    assert flat.explanation == "undetermined" and not flat.rise_determined
    assert math.isnan(flat.lag_steps) and flat.inertia_fits is None


def test_bad_input_is_refused():
    with pytest.raises(DataError, match="12 points"):
        slow_start(T[:5], T[:5])
    with pytest.raises(ParameterError, match="lr_steps"):
        slow_start(T, T, lr_values=T)
    with pytest.raises(ParameterError, match="`y`"):
        slow_start(T, T[:-1])


# --- the shipped real runs -------------------------------------------------------------------

def test_run_20_slow_start_is_its_176_step_warmup():
    r = slow_start_of_run("20")
    assert r.warmup_steps == 176.0 and r.inertia == pytest.approx(9.5)
    assert r.explanation == "warm-up"
    assert r.delta_steps["exponential"] > 10 and r.delta_lr["exponential"] <= 2
    assert r.lag_steps > 2 * r.inertia and r.lag_lr < r.inertia


def test_run_22_has_no_warmup_and_a_logistic_start_longer_than_momentum():
    r = slow_start_of_run("22")
    assert r.warmup_steps == 0.0
    assert r.explanation == "logistic start"
    assert r.delta_lr["exponential"] - r.delta_lr["logistic"] > 10
    # the free three-phase tau lies above Adam's 9.5 steps over its whole interval, but not above 3x
    assert 9.5 < r.tau_low < 28.5 < r.tau_high and r.inertia_in_interval is False
    assert r.inertia_fits is None


def test_run_04_no_slow_start_and_run_01_no_rise():
    assert slow_start_of_run("04").explanation == "no slow start"
    falls = slow_start_of_run("01")
    assert falls.warmup_steps == 15.0 and falls.rise < 0 and falls.explanation == "undetermined"
    with pytest.raises(DataError, match="learning rate"):
        slow_start_of_run("25")  # the Unsloth Qwen log records no learning rate


def test_table_of_the_real_runs():
    table = slow_start_table()
    assert list(table.index) == ["01", "03", "04", "07", "08", "10", "11", "16", "20", "22"]
    assert (table["M/C (steps)"] == 9.5).all()
    slow = table[table["explanation"].isin(["warm-up", "logistic start"])]
    assert list(slow.index) == ["20", "22"]
    assert (slow["slow start (steps)"] > 2 * 9.5).all()
    assert not table["inertia explains"].eq(True).any()
