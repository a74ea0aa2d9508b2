"""The plateau forecaster (grpo_core.laws.plateau): recovery, the learning-rate clock, band coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core import ParameterError, laws
from grpo_core.laws import plateau
from grpo_core.laws.clock import learning_rate_clock

T = np.arange(1, 201, dtype=float)


def _exp(u, c, b, k):
    return c - (c - b) * np.exp(-k * u)


def _tail_mean(f, horizon):
    return float(np.mean(f(np.linspace(0.8 * horizon, horizon, 40))))


def _clock(t, lr):
    """The clock on the points themselves (the forecaster's grid)."""
    return learning_rate_clock(t, t, lr, grid=t)[0]


def test_clock_is_steps_for_a_constant_rate_and_stretches_a_warmup():
    np.testing.assert_allclose(_clock(T, np.full(T.size, 3e-6)), T)
    warm = np.minimum(T / 20.0, 1.0) * 1e-5
    for u in (_clock(T, warm), learning_rate_clock(T, T, warm)[0]):  # on the points; on every step (the default)
        # sum_{s<=20} s/20 = 10.5 peak-rate steps during the 20-step warm-up, then one per step
        assert u[19] == pytest.approx(10.5)
        assert u[-1] == pytest.approx(10.5 + 180)


def test_one_clock_for_the_forecaster_and_the_curvature():
    """The clock the forecaster fits in and the one the implied curvature measures K in are one function:
    on every step from a sparse log (held before its first and after its last value) and on a given grid
    with a floor (the forecaster's, so the clock rises where the rate is 0); one set of errors."""
    from grpo_core import DataError

    clock, peak = learning_rate_clock([1, 3, 10], [1, 10], [2.0, 2.0])
    assert peak == 2.0 and clock.tolist() == [1.0, 3.0, 10.0]
    clock, peak = learning_rate_clock([2, 4], [1, 2, 3, 4], [1.0, 2.0, 4.0, 4.0])
    assert peak == 4.0 and clock.tolist() == pytest.approx([0.75, 2.75])
    # a decay to 0 at step 3: on the grid 1..4 with floor f the last two steps count f each
    grid = np.arange(1.0, 5.0)
    u, _ = learning_rate_clock(grid, grid, [1.0, 1.0, 0.0, 0.0], grid=grid, floor=1e-3)
    assert u == pytest.approx(np.array([1.001, 2.002, 2.003, 2.004]) / 1.001)
    assert np.all(np.diff(u) > 0)
    with pytest.raises(DataError, match="no positive value"):
        learning_rate_clock([1, 2], [1, 2], [0.0, 0.0])
    with pytest.raises(ParameterError, match="`lr_values` must be >= 0"):
        learning_rate_clock(T, T, -np.ones(T.size))
    with pytest.raises(ParameterError, match="`lr_steps` and `lr_values`"):
        learning_rate_clock(T, T, np.ones(3))
    with pytest.raises(ParameterError, match="`grid`"):
        learning_rate_clock(T, T, np.ones(T.size), grid=T[::-1])


def test_exact_recovery_in_step_time():
    """Noise-free exponential: with no shrinkage the forecast of the run's end is exact."""
    y = _exp(T, 1.2, 0.1, 0.03)
    no_shrink = plateau.PlateauPrior(lam=1.0, q=1.645)
    fc = plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, prior=no_shrink, n_boot=0)
    truth = _tail_mean(lambda t: _exp(t, 1.2, 0.1, 0.03), 500.0)
    assert fc.declined is None and fc.clock == "step"
    assert fc.final == pytest.approx(truth, abs=1e-4)
    assert fc.plateau == pytest.approx(1.2, abs=1e-3)
    # the Janoschek law nests the exponential (d = 1): the two share the evidence
    assert fc.weights["exponential"] > 0.9 and fc.weights["exponential"] + fc.weights["janoschek"] > 0.99


def test_exact_recovery_in_learning_rate_time():
    """The curve is exponential in the cumulative learning rate (warm-up then linear decay): the fit
    in learning-rate time recovers the end; the same fit in steps does not."""
    horizon = 300
    ts = np.arange(1, horizon + 1, dtype=float)
    lr = np.where(ts <= 25, ts / 25.0, 1.0 - 0.8 * (ts - 25) / (horizon - 25)) * 5e-6
    u = _clock(ts, lr)
    y = _exp(u, 1.5, 0.0, 0.02)
    truth = float(np.mean(y[-60:]))
    prior = plateau.PlateauPrior(lam=1.0)
    fc = plateau.forecast_plateau(ts[:120], y[:120], horizon=horizon, lr=(ts, lr), prior=prior, n_boot=0)
    assert fc.clock == "learning_rate"
    assert fc.final == pytest.approx(truth, abs=5e-3)
    in_steps = plateau.forecast_plateau(ts[:120], y[:120], horizon=horizon, prior=prior, n_boot=0)
    assert abs(in_steps.final - truth) > 10 * abs(fc.final - truth)


def test_shrinkage_is_between_level_and_law():
    y = _exp(T, 1.0, 0.0, 0.01)
    a = plateau.forecast_plateau(T[:60], y[:60], horizon=200.0, prior=plateau.PlateauPrior(lam=0.0), n_boot=0)
    b = a.with_prior(plateau.PlateauPrior(lam=0.5))
    assert a.final == pytest.approx(a.level)
    assert b.final == pytest.approx(0.5 * (a.level + a.law_mean))
    assert b.final_high - b.final == pytest.approx(1.645 * b.sigma)


def test_late_gain_is_window_spread_times_remaining_learning_rate_time():
    """``gain_unit`` = the window's spread (p95 - p5 of its 10-step rolling mean) times the remaining
    time to the middle of the run's last 20%, in window lengths: in steps for a constant rate, shorter
    in learning-rate time under a decaying schedule. The prior's ``gain`` shifts final and plateau and
    widens the band."""
    y = _exp(T, 1.0, 0.0, 0.02)
    fc = plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, prior=plateau.PlateauPrior(lam=1.0), n_boot=0)
    roll = np.convolve(y[:80], np.ones(10) / 10, mode="valid")
    spread = float(np.ptp(np.percentile(roll, [5, 95])))
    assert plateau.window_spread(y[:80]) == pytest.approx(spread)
    assert fc.gain_unit == pytest.approx(spread * (450.0 - 80.0) / 80.0)
    g = fc.with_prior(plateau.PlateauPrior(lam=1.0, gain=0.2))
    assert g.final == pytest.approx(fc.final + 0.2 * fc.gain_unit)
    assert g.plateau == pytest.approx(fc.plateau + 0.2 * fc.gain_unit)
    # the band widens by the gain added: q sqrt(sigma^2 + late^2)
    assert g.final_high - g.final == pytest.approx(1.645 * math.hypot(fc.sigma, 0.2 * fc.gain_unit))
    ts = np.arange(1, 501, dtype=float)
    decay = np.maximum(1.0 - ts / 500.0, 0.05) * 1e-5
    lr_fc = plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, lr=(ts, decay), n_boot=0)
    u = _clock(ts, decay)
    remaining = float(np.mean(np.interp(np.linspace(400, 500, 40), ts, u))) / u[79] - 1.0
    assert lr_fc.gain_unit == pytest.approx(spread * remaining, rel=1e-2)
    assert lr_fc.gain_unit < 0.6 * fc.gain_unit


def test_tune_prior_recovers_a_planted_late_gain():
    """Truths 0.2 gain units above the law average on every run: lam = 1 and gain = 0.2 are learned;
    a run left out does not take part."""
    recs = []
    for i, unit in enumerate(np.linspace(0.5, 3.0, 12)):
        fc = plateau.PlateauForecast(0.0, 0.0, 0.0, 0.0, level=0.0, law_mean=1.0, sigma=0.5, s_boot=0.1,
                                     _plateau_raw=1.0, gain_unit=float(unit))
        recs.append((f"run{i}", fc, 1.0 + 0.2 * unit, 1.0))
    prior = plateau.tune_prior(recs)
    assert prior.lam == 1.0 and prior.gain == pytest.approx(0.2)
    assert "run3" not in plateau.tune_prior(recs, exclude="run3").runs
    assert plateau.PlateauPrior().gain == 0.0 and plateau.SHIPPED_PRIOR.gain > 0


def test_late_gain_in_units_of_the_logged_reward_std():
    """With a logged ``reward_std``: ``std_unit`` = the mean of the last 20% (at least 3) of the values logged
    up to the window's end, times the remaining time capped at STD_CAP window lengths; the prior's
    ``std_gain`` then replaces ``gain``. Fewer than STD_MIN_POINTS values: the window's spread, as before."""
    y = _exp(T, 1.0, 0.0, 0.02)
    s = np.linspace(0.5, 0.1, T.size)  # the groups' spread shrinks as the reward saturates
    fc = plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, n_boot=0, reward_std=(T, s),
                                  prior=plateau.PlateauPrior(lam=1.0))
    remaining = (450.0 - 80.0) / 80.0  # 4.6 window lengths: capped
    assert fc.std_unit == pytest.approx(float(np.mean(s[64:80])) * plateau.STD_CAP)
    assert min(remaining, plateau.STD_CAP) == plateau.STD_CAP
    g = fc.with_prior(plateau.PlateauPrior(lam=1.0, gain=0.5, std_gain=0.2))
    assert g.final == pytest.approx(fc.final + 0.2 * fc.std_unit)
    assert g.final_high - g.final == pytest.approx(1.645 * math.hypot(fc.sigma, 0.2 * fc.std_unit))
    # values after the window are not seen; NaN values are skipped
    later = np.where(T > 80, 99.0, s)
    assert plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, n_boot=0, reward_std=(T, later)).std_unit == \
        pytest.approx(fc.std_unit)
    # five values logged in the window: too few, the window's spread is the unit
    few = plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, n_boot=0, reward_std=(T[:5], s[:5]),
                                   prior=plateau.PlateauPrior(lam=1.0, gain=0.5, std_gain=0.2))
    assert math.isnan(few.std_unit) and few.final == pytest.approx(fc.final + 0.5 * fc.gain_unit)
    with pytest.raises(ParameterError, match="reward_std"):
        plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, reward_std=(T, -s))
    with pytest.raises(ParameterError, match="reward_std"):
        plateau.forecast_plateau(T[:80], y[:80], horizon=500.0, reward_std=(T, s[:10]))


def test_tune_prior_recovers_a_planted_std_gain_beside_the_spread_gain():
    """Every run rises 0.1 of its spread unit (``gain``, tuned on every record: the unit of runs without a
    reward_std); the runs with a reward_std unit rise 0.15 of that too (``std_gain``, tuned on them)."""
    recs = []
    for i, unit in enumerate(np.linspace(0.5, 3.0, 12)):
        std_unit = float(unit) if i % 2 else float("nan")
        fc = plateau.PlateauForecast(0.0, 0.0, 0.0, 0.0, level=0.0, law_mean=1.0, sigma=0.5, s_boot=0.1,
                                     _plateau_raw=1.0, gain_unit=1.5 * float(unit), std_unit=std_unit)
        recs.append((f"run{i}", fc, 1.0 + 0.1 * 1.5 * unit, 1.0))
    prior = plateau.tune_prior(recs)
    assert prior.lam == 1.0 and prior.std_gain == pytest.approx(0.15) and prior.gain == pytest.approx(0.1)
    # fewer than 3 runs with a reward_std: no std_gain is learned
    assert plateau.tune_prior([r for i, r in enumerate(recs) if i % 2 == 0 or i < 4]).std_gain == 0.0


def test_declines_short_and_flat_windows_and_refuses_bad_input():
    assert "too short" in plateau.forecast_plateau(T[:5], T[:5], horizon=10.0).declined
    assert "does not change" in plateau.forecast_plateau(T[:20], np.ones(20), horizon=40.0).declined
    with pytest.raises(ParameterError, match="horizon"):
        plateau.forecast_plateau(T[:20], T[:20], horizon=10.0)
    with pytest.raises(ParameterError, match="`lr`"):
        plateau.forecast_plateau(T[:20], T[:20], horizon=40.0, lr=(T, -np.ones(T.size)))
    # one bootstrap replicate has no spread: its band was NaN (and a coverage verdict was read off it)
    with pytest.raises(ParameterError, match="`n_boot` must be 0 .* or at least 2"):
        plateau.forecast_plateau(T[:20], T[:20], horizon=40.0, n_boot=1)
    with pytest.raises(ParameterError, match="`n_boot` must be 0 .* or at least 2"):
        laws.forecast(T[:40], 1 - np.exp(-T[:40] / 10), fraction=0.5, n_boot=1)


def _ar1(rng, n, phi, sd):
    e = rng.normal(0, sd * math.sqrt(1 - phi ** 2), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def test_band_coverage_on_ar1_noise_is_nominal_leave_one_out():
    """70 simulated runs (random plateaus and rates, AR(1) noise phi = 0.5, forecast from 40% of
    the steps): each run's 90% band, with the prior tuned on the other 69, covers its truth at the
    nominal rate within sampling error (binomial sd ~ 0.036 at 70 runs: 0.90 +- 3 sd)."""
    rng = np.random.default_rng(3)
    horizon = 100
    ts = np.arange(1, horizon + 1, dtype=float)
    recs = []
    for i in range(70):
        y = _exp(ts, rng.uniform(0.5, 1.5), 0.0, rng.uniform(0.015, 0.075)) + _ar1(rng, horizon, 0.5, 0.08)
        fc = plateau.forecast_plateau(ts[:40], y[:40], horizon=horizon, n_boot=0)
        recs.append((f"r{i}", fc, float(np.mean(y[-20:])), 1.0))
    out = plateau.leave_one_out(recs)
    cov = np.mean([fc.final_low <= rec[2] <= fc.final_high for rec, (fc, _) in zip(recs, out)])
    assert 0.79 <= cov <= 1.0
    assert all(len(prior.runs) == 69 for _, prior in out)


def test_rate_prior_is_a_parameter_with_the_shipped_default():
    """The weak prior on the laws' rates is an argument (no module switch): the default is the shipped one, and
    without it (plain least squares) the same window forecasts differently (a steep early rise read as a jump
    already finished)."""
    y = _exp(T, 1.0, 0.0, 0.2) + np.random.default_rng(1).normal(0, 0.05, T.size)
    default = plateau.forecast_plateau(T[:40], y[:40], horizon=200.0, n_boot=0)
    shipped = plateau.forecast_plateau(T[:40], y[:40], horizon=200.0, n_boot=0, rate_prior=plateau.SHIPPED_RATE_PRIOR)
    plain = plateau.forecast_plateau(T[:40], y[:40], horizon=200.0, n_boot=0, rate_prior=None)
    assert default.final == shipped.final and default.weights == shipped.weights
    assert plain.final != default.final
    assert not hasattr(plateau, "RATE_PRIOR")


def _real_log(run_id: str):
    import warnings

    from grpo_core.runs import datasets
    from grpo_core.runs.logs import read_log

    run = datasets.real_run(run_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_log(run.path, run=run.run)


def _records(y, steps=None, **meta):
    from grpo_core.runs.logs import from_records

    steps = np.arange(1, len(y) + 1) if steps is None else steps
    log = from_records([{"step": int(s), "reward": float(v)} for s, v in zip(steps, y)])
    log.meta.update(meta)
    return log


def _stored_q(fraction: float) -> float:
    """The band's quantile at ``fraction`` read from calibrated.json by hand (linear between its fractions)."""
    import json
    from pathlib import Path

    import grpo_core.runs.forecast as room

    stored = json.loads((Path(room.__file__).parent / "calibrated.json").read_text())["quantiles"]
    fs = sorted(stored, key=float)
    return float(np.interp(fraction, [float(f) for f in fs], [stored[f] for f in fs]))


def _spread_by_hand(y) -> float:
    """p95 - p5 of the 10-point rolling mean (pandas), the band's unit for a window of 40 points or more."""
    import pandas as pd

    roll = pd.Series(y).rolling(10).mean().dropna().to_numpy()
    return float(np.percentile(roll, 95) - np.percentile(roll, 5))


def test_forecast_end_point_is_the_level_and_the_band_the_stored_quantile_by_hand():
    """From the first 45% of 200 points: the point is the mean of the last 10% of the 90 seen (9 points); the
    band is that level +- q(0.45) s_w, q halfway between calibrated.json's 0.4 and 0.5 quantiles, s_w the
    p95 - p5 of the seen part's 10-point rolling mean."""
    from grpo_core.runs.forecast import forecast_end

    rng = np.random.default_rng(3)
    y = 0.2 + 0.6 * (1 - np.exp(-np.arange(200) / 50)) + rng.normal(0, 0.05, 200)
    fc = forecast_end(_records(y), fit_fraction=0.45)
    seen = y[:90]
    assert fc.n_fit == 90 and fc.fraction_seen == 0.45 and fc.declined is None
    assert fc.point == pytest.approx(np.mean(seen[-9:]), rel=1e-12) and fc.now == fc.point
    assert fc.now_steps == (82.0, 90.0)
    q = (1.700886 + 1.352408) / 2
    assert fc.q == pytest.approx(q, rel=1e-12) == _stored_q(0.45)
    assert fc.scale == pytest.approx(_spread_by_hand(seen), rel=1e-12)
    assert (fc.low, fc.high) == pytest.approx((fc.point - q * fc.scale, fc.point + q * fc.scale), rel=1e-12)
    assert fc.actual == pytest.approx(np.mean(y[160:])) and fc.covered == (fc.low <= fc.actual <= fc.high)
    # a short window: at least 3 points make the level (8 seen: the last 3, not 1)
    short = forecast_end(_records(y[:20]), fit_fraction=0.4)
    assert short.n_fit == 8 and short.point == pytest.approx(np.mean(y[5:8]), rel=1e-12)
    d = fc.to_dict()
    assert d["method"] == fc.method and d["fraction_seen"] == 0.45 and d["calibration"].endswith(".json")
    assert not {"late_gain", "late_gain_unit", "weights", "clock", "plateau"} & set(d)


@pytest.mark.parametrize(("max_steps", "made"), [(201, False), (200, True), (50, True), (49, False)])
def test_forecast_end_is_made_from_20_to_80_percent_of_the_planned_run(max_steps, made):
    """40 steps logged of a planned ``max_steps``: 40/201 < 0.2 and 40/49 > 0.8 are declined, 40/200 and 40/50
    made with the quantile at that fraction."""
    from grpo_core.runs.forecast import forecast_end

    y = 0.5 + 0.1 * np.sin(np.arange(40) / 3)
    fc = forecast_end(_records(y, max_steps=max_steps))
    assert fc.horizon_kind == "planned" and fc.fraction_seen == pytest.approx(40 / max_steps)
    if made:
        assert fc.declined is None and fc.q == pytest.approx(_stored_q(40 / max_steps))
        assert fc.point == pytest.approx(np.mean(y[-4:]), rel=1e-12)
        assert "band calibrated on 52 real runs at" in fc.lines()[0]
    else:
        assert fc.declined is not None and math.isnan(fc.point) and fc.now_steps is None
        assert ("too early: 20% of the run is seen" in fc.declined if max_steps == 201 else
                "82% of the run is seen: its end is nearly what the log shows now" in fc.declined)
        assert "no forecast" in fc.lines()[0]


@pytest.mark.parametrize(("fraction", "made"), [(0.19, False), (0.2, True), (0.8, True), (0.81, False)])
def test_forecast_end_from_a_fraction_both_sides_of_the_domain(fraction, made):
    from grpo_core.runs.forecast import forecast_end

    y = 0.3 + 0.4 * (1 - np.exp(-np.arange(200) / 40)) + np.random.default_rng(1).normal(0, 0.05, 200)
    fc = forecast_end(_records(y), fit_fraction=fraction)
    assert (fc.declined is None) is made
    if made:
        assert fc.q == pytest.approx(_stored_q(fraction))
    else:
        assert ("too early" if fraction < 0.2 else "nearly what the log shows now") in fc.declined


def test_forecast_end_assumes_a_run_without_a_planned_end_half_done_and_says_so():
    from grpo_core import DataError
    from grpo_core.runs.forecast import forecast_end

    y = _exp(T, 1.0, 0.2, 0.02) + np.random.default_rng(0).normal(0, 0.03, T.size)
    log = _records(y, steps=T)
    assumed = forecast_end(log)
    assert assumed.horizon == 400.0 and assumed.horizon_kind == "assumed" and assumed.actual is None
    assert assumed.fraction_seen == 0.5 and assumed.q == pytest.approx(1.352408)
    assert "the band assumes the run is half done, to end at step 400" in assumed.lines()[1]
    with pytest.raises(DataError, match="not after the last logged step"):
        forecast_end(log, horizon=150)
    given = forecast_end(log, horizon=600)
    log.meta["max_steps"] = 600
    end = forecast_end(log)
    assert end == given and end.horizon == 600.0 and end.horizon_kind == "planned"
    assert end.fraction_seen == pytest.approx(200 / 600) and end.q == pytest.approx(_stored_q(1 / 3))
    assert end.to_dict()["end_of_run"]["horizon_kind"] == "planned"
    # a finished run (max_steps its last step) is declined: its end is what the log shows
    log.meta["max_steps"] = 200
    assert forecast_end(log).declined == ("the run has reached its planned end (step 200): its end is what the log "
                                          f"shows, the mean of steps 160-200: {np.mean(y[159:]):.4g}")
    log.meta["max_steps"] = 150
    assert "the log runs past its planned end (max_steps 150)" in forecast_end(log).declined
    with pytest.raises(ParameterError, match="`horizon`"):
        forecast_end(log, fit_fraction=0.5, horizon=600)


def test_forecast_end_band_is_calibrated_at_90_percent_only():
    """--level 0.8: the same 90% band (not rescaled), with a caveat that says so."""
    from grpo_core.runs.forecast import forecast_end

    log = _records(0.4 + 0.2 * np.sin(np.arange(100) / 7))
    at90, at80 = forecast_end(log, fit_fraction=0.4), forecast_end(log, fit_fraction=0.4, level=0.8)
    assert (at80.low, at80.high, at80.level) == (at90.low, at90.high, 0.9) and not at90.caveats
    assert at80.caveat == "the band is calibrated at 90% only: this is the 90% band, not the 80% asked for"


def test_forecast_end_declines_a_metric_that_is_not_a_training_reward():
    from grpo_core.runs.forecast import forecast_end, is_reward
    from grpo_core.runs.logs import from_records

    rng = np.random.default_rng(2)
    log = from_records([{"step": s, "reward": float(v), "kl": float(k)}
                        for s, v, k in zip(range(1, 101), rng.uniform(0, 1, 100), np.linspace(0, 0.1, 100))])
    kl = forecast_end(log, fit_fraction=0.4, metric="kl", law_fit_boot=0)
    assert kl.declined == ("no end forecast for `kl`: its band is calibrated on training rewards only; the law "
                           "fit still describes the curve")
    assert kl.law_fit is not None and kl.law_fit.metric == "kl"
    assert forecast_end(log, fit_fraction=0.4).declined is None
    assert [is_reward(m) for m in ("reward", "rewards/acc/mean", "reward/acc", "reward_std", "reward/acc/std",
                                   "kl")] == [True, True, True, False, False, False]
    assert not is_reward("reward", "eval")


def test_forecast_end_needs_the_calibrations_fewest_points():
    from grpo_core.runs.forecast import forecast_end

    y = np.linspace(0.1, 0.6, 19) + 0.05 * np.sin(np.arange(19))
    assert "too few points seen: 7" in forecast_end(_records(y), fit_fraction=0.4).declined


_HOLDOUT_RECORD = "bench/results/forecast_holdout_v3.json"


def test_forecast_end_equals_the_preregistered_records_on_the_15_new_runs():
    """Every run of holdout_runs_3 read from its raw log and cut at 0.2, 0.4 and 0.6 of its points: the product's
    forecast is the record's ``hold_conformal`` (the method the test chose): the same point and truth, the same
    band to the 6 digits calibrated.json stores its quantiles with."""
    import json
    import warnings
    from pathlib import Path

    from grpo_core.runs import datasets
    from grpo_core.runs.forecast import forecast_end
    from grpo_core.runs.logs import read_log

    root = Path(__file__).resolve().parents[1]
    recs = [r for r in json.loads((root / _HOLDOUT_RECORD).read_text())
            if r.get("method") == "record" and r.get("of") == "hold_conformal"]
    assert len(recs) == 45
    logs = {}
    for r in recs:
        if r["run"] not in logs:
            run = datasets.real_run(r["run"], "holdout_runs_3")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                logs[r["run"]] = read_log(run.path, run=run.run)
        fc = forecast_end(logs[r["run"]], fit_fraction=r["cut"])
        assert fc.point == pytest.approx(r["point"], rel=1e-12, abs=1e-12), r["run"]
        assert fc.actual == pytest.approx(r["truth"], rel=1e-12), r["run"]
        tol = 1e-6 * fc.scale
        assert fc.low == pytest.approx(r["low"], abs=tol) and fc.high == pytest.approx(r["high"], abs=tol), r["run"]


def test_forecast_end_on_real_run_22_from_40_percent():
    """Real run 22 (in the calibration set) from 40%: the benchmark record's level, and the band from the
    quantile calibrated on the 52 runs; the record's band is leave-one-run-out, here within 1e-6 of it."""
    import json
    from pathlib import Path

    from grpo_core.runs.forecast import forecast_end

    fc = forecast_end(_real_log("22"), fit_fraction=0.4)
    root = Path(__file__).resolve().parents[1]
    rec = next(r for r in json.loads((root / "bench/results/forecast_fair.json").read_text())
               if r.get("method") == "record" and r.get("of") == "hold_conformal"
               and r["run"].startswith("22-") and r["cut"] == 0.4)
    assert fc.point == pytest.approx(rec["point"], rel=1e-12) == 1.38125
    assert (fc.low, fc.high) == pytest.approx((rec["low"], rec["high"]), abs=1e-6)
    assert fc.actual == pytest.approx(rec["truth"]) and fc.covered
    # the declared range clips the band as shown, not the method's own
    clipped = forecast_end(_real_log("22"), fit_fraction=0.4, reward_range=(0, 2))
    assert clipped.point == fc.point and (clipped.shown_low, clipped.shown_high) == (0, 2)
    assert clipped.band_clipped and clipped.range_declared and (clipped.low, clipped.high) == (fc.low, fc.high)


@pytest.mark.parametrize("bad", [None, "a/path.csv", 3.0])
def test_forecast_end_and_the_law_fit_refuse_what_is_not_a_log(bad):
    import pandas as pd

    from grpo_core.runs.forecast import fit_curve_laws, forecast_end

    for value in (bad, pd.DataFrame({"step": [1, 2], "reward": [0.1, 0.2]})):
        for f in (forecast_end, fit_curve_laws):
            with pytest.raises(ParameterError, match="`log` must be a RunLog") as info:
                f(value)
            assert info.value.parameter == "log"
