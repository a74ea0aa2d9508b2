"""The forecasting benchmark's pieces (bench/bench_forecast.py, grpo_core.laws.anchors) and the
leave-one-run-out scoring of the tuned plateau forecaster."""

from __future__ import annotations

import numpy as np
import pytest

from bench import bench_forecast as bench
from grpo_core.laws import anchors, plateau


def test_real_runs_load_with_their_reward_and_schedule():
    runs = {r["id"]: r for r in bench.load_runs()}
    assert len(runs) == 37 and len(bench.load_runs("real_runs")) == 20
    qwen = runs["25-unslothai-qwen2.5-3b-gsm8k"]
    assert qwen["t"].size == 250 and qwen["lr"] is None
    assert qwen["y"][0] == pytest.approx(0.125)
    warm = runs["04-Caitlyn-Yin-easy-standard"]
    assert warm["lr"] is not None and warm["lr"][1].max() == pytest.approx(9.96e-6)
    # logged every 5 steps, no step column: steps 5, 10, ..., 200
    assert runs["01-Sunshine535-rho1-collapse"]["t"][[0, -1]].tolist() == [5.0, 200.0]


def test_truth_and_spread_definition():
    y = np.r_[np.zeros(80), np.ones(20)]
    truth, spread = bench.truth_and_spread(y)
    assert truth == 1.0
    # 10-step rolling mean: 81 zeros... p95 - p5 of (0 x 71, 0.1 .. 1.0 ramp, 1 x 10)
    roll = np.r_[np.zeros(71), np.arange(1, 11) / 10, np.ones(10)][:91]
    assert spread == pytest.approx(np.ptp(np.percentile(roll, [5, 95])))


@pytest.mark.parametrize("name,params", [("exponential", (1.2, 0.1, 0.02)), ("logistic", (0.0, 1.0, 0.08, 60.0)),
                                         ("scalerl", (0.0, 1.5, 50.0, 2.0))])
def test_anchor_recovers_its_own_curve(name, params):
    t = np.arange(1, 121, dtype=float)
    f = anchors.ANCHORS[name][0]
    a = anchors.anchor_forecast(name, t, f(t, *params), horizon=400.0)
    want = float(np.mean(f(np.linspace(320, 400, 50), *params)))
    assert a.declined is None and a.final == pytest.approx(want, abs=1e-5)


def test_domhan_pow3_recovers_and_the_mean_has_no_band():
    t = np.arange(1, 101, dtype=float)
    y = 0.9 - 0.8 * t ** -0.6
    mean, each = anchors.domhan_mean(t, y, horizon=300.0)
    assert each["pow3"].final == pytest.approx(float(np.mean(0.9 - 0.8 * np.linspace(240, 300, 50) ** -0.6)), abs=1e-5)
    assert mean.declined is None and np.isnan(mean.final_low)


def _records(truths):
    """Synthetic untuned forecasts: law average 1.0 above the level, a late-gain unit that varies by run
    (so the gain's tuning is exercised too); truths vary by run."""
    recs = []
    for i, tr in enumerate(truths):
        fc = plateau.PlateauForecast(0.0, 0.0, 0.0, 0.0, level=0.0, law_mean=1.0, sigma=0.5, s_boot=0.1,
                                     _plateau_raw=1.0, gain_unit=0.5 + 0.1 * i)
        recs.append((f"run{i}", fc, float(tr), 1.0))
    return recs


def _loo(recs):
    return dict(zip([r[0] for r in recs], plateau.leave_one_out(recs)))


def test_leave_one_out_cannot_see_the_held_out_run():
    truths = np.linspace(0.0, 1.0, 9)
    base = _loo(_records(truths))
    assert "run4" not in base["run4"][1].runs and len(base["run4"][1].runs) == 8
    # the held-out run's own truth moved far away: its forecast is unchanged ...
    moved = truths.copy()
    moved[4] = 50.0
    again = _loo(_records(moved))
    assert again["run4"][0].final == base["run4"][0].final
    assert again["run4"][0].final_high == base["run4"][0].final_high
    # ... while the same change seen by another run's tuning does change that run's forecast
    assert (again["run0"][0].final, again["run0"][0].final_high) != (base["run0"][0].final, base["run0"][0].final_high)


def test_a_run_at_several_cuts_is_left_out_at_every_cut():
    recs = _records(np.linspace(0.0, 1.0, 6))
    twice = recs + [(rid, fc, tr + 0.3, sp) for rid, fc, tr, sp in recs]  # the same runs at a second cut
    out = plateau.leave_one_out(twice)
    for (rid, *_), (_, prior) in zip(twice, out):
        assert rid not in prior.runs and len(prior.runs) == 10
    assert "run2" not in plateau.tune_prior(recs, exclude="run2").runs


def test_leave_one_out_on_real_runs_at_the_40pct_cut():
    """Six real runs, untuned fits without bootstrap: no held-out prior contains its run."""
    runs = bench.load_runs()[:6]
    recs = []
    for run in runs:
        t, y = bench._window(run, 0.4)
        truth, spread = bench.truth_and_spread(run["y"])
        fc = plateau.forecast_plateau(t, y, horizon=float(run["t"][-1]), lr=run["lr"], n_boot=0)
        recs.append((run["id"], fc, truth, spread))
    out = plateau.leave_one_out(recs)
    assert all(rec[0] not in prior.runs for rec, (_, prior) in zip(recs, out))
    assert all(fc.declined is None for fc, _ in out)


def test_summary_scores_declines_as_hold_and_bounds_by_hindsight():
    """Two runs at one cut: a method that declines run b is scored with hold's forecast there in
    ``median_err_fallback``; ``hindsight_best`` takes each run's least error over the methods; the
    ``"all"`` rows pool the cuts with the error capped at one spread."""
    nan = float("nan")

    def rec(run, method, final, declined=None):
        return {"run": run, "cut": 0.4, "truth": 1.0, "spread": 1.0, "method": method, "final": final,
                "plateau": final, "low": nan, "high": nan, "declined": declined}

    recs = [rec("a", "hold", 1.2), rec("b", "hold", 3.0),
            rec("a", "fit", 1.0), rec("b", "fit", nan, declined="curve_fit failed")]
    rows = {(r["method"], r["cut"]): r for r in bench.summarise(recs)}
    assert rows[("fit", 0.4)]["median_err"] == pytest.approx(0.0)
    assert rows[("fit", 0.4)]["declined"] == 0.5
    assert rows[("fit", 0.4)]["median_err_fallback"] == pytest.approx(1.0)  # median of 0 and hold's 2.0
    assert rows[("hindsight_best", 0.4)]["median_err"] == pytest.approx(1.0)  # a: 0.0 (fit), b: 2.0 (hold)
    assert rows[("fit", "all")]["capped_mean_err"] == pytest.approx(0.5)  # 0 and min(2, 1)
    lo, hi = rows[("hold", 0.4)]["median_err_ci"]
    assert 0.2 - 1e-9 <= lo <= rows[("hold", 0.4)]["median_err"] <= hi <= 2.0 + 1e-9


def test_the_shipped_prior_is_the_committed_benchmarks_all_runs_prior():
    """SHIPPED_PRIOR (the product's default) is the prior the committed --quick run tuned on all 37 runs."""
    import json
    from pathlib import Path

    rows = json.loads((Path(bench.__file__).parent / "results" / "forecast.json").read_text())
    full = next(r for r in rows if r["method"] == "plateau_prior_all_runs")
    assert full["n"] == 37
    assert plateau.SHIPPED_PRIOR.lam == full["lam"] and plateau.SHIPPED_PRIOR.gain == pytest.approx(full["gain"])
    assert plateau.SHIPPED_PRIOR.q == pytest.approx(full["q"], abs=1e-4)
    assert plateau.SHIPPED_PRIOR.std_gain == pytest.approx(full["std_gain"])


def test_run_records_keep_the_per_run_forecasts_of_the_recorded_methods():
    recs = [{"run": "a", "cut": 0.4, "truth": 1.0, "spread": 2.0, "method": m, "final": 1.5, "plateau": 1.6,
             "low": 1.0, "high": 2.0, "declined": None} for m in ("plateau", "domhan:pow3")]
    rows = bench.run_records(recs)
    assert rows == [{"method": "record", "of": "plateau", "run": "a", "cut": 0.4, "truth": 1.0, "spread": 2.0,
                     "final": 1.5, "low": 1.0, "high": 2.0, "declined": None}]


def test_forecast_runs_chart_draws_signed_errors_in_spreads_and_flags_the_clipped():
    from grpo_core.errors import ParameterError
    from widgets.laws_charts import forecast_runs_chart

    nan = float("nan")
    rows = [  # truth 1, spread 2: errors +0.25, -3 (beyond the axis), a declined row, an anchor without band
        {"method": "record", "of": "plateau", "run": "r1", "cut": 0.4, "truth": 1.0, "spread": 2.0,
         "final": 1.5, "low": 0.0, "high": 3.0, "declined": None},
        {"method": "record", "of": "plateau", "run": "r2", "cut": 0.4, "truth": 1.0, "spread": 2.0,
         "final": -5.0, "low": -9.0, "high": -1.0, "declined": None},
        {"method": "record", "of": "logistic", "run": "r1", "cut": 0.4, "truth": 1.0, "spread": 2.0,
         "final": nan, "low": nan, "high": nan, "declined": "did not converge"},
        {"method": "record", "of": "hold", "run": "r1", "cut": 0.2, "truth": 1.0, "spread": 2.0,
         "final": 0.8, "low": nan, "high": nan, "declined": None},
    ]
    spec = forecast_runs_chart(rows).to_dict()
    data = next(iter(spec["datasets"].values()))
    got = {(d["run"], d["method"], d["cut_label"]): d for d in data}
    assert set(got) == {("r1", "plateau", "40% seen"), ("r2", "plateau", "40% seen"), ("r1", "hold", "20% seen")}
    assert got[("r1", "plateau", "40% seen")]["error"] == pytest.approx(0.25)
    assert got[("r1", "plateau", "40% seen")]["band_lo"] == pytest.approx(-0.5)
    r2 = got[("r2", "plateau", "40% seen")]
    assert r2["error"] == pytest.approx(-3.0) and r2["x"] == -2.0 and r2["where"] == "beyond, below"
    assert got[("r1", "hold", "20% seen")]["error"] == pytest.approx(-0.1)
    with pytest.raises(ParameterError, match="records"):
        forecast_runs_chart([{"run": "r1"}])
    with pytest.raises(ParameterError, match="clip"):
        forecast_runs_chart(rows, clip=0)
    with pytest.raises(ParameterError, match="methods"):
        forecast_runs_chart(rows, methods=("scalerl",))
