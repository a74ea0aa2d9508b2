"""The held-out real runs (grpo_core/data/holdout_runs): they read as committed, their reward matches a
plain parse of the raw file, the benchmark can score a fixed prior on them (how their first
out-of-sample test was made), and the forecast failure they revealed stays fixed."""

from __future__ import annotations

import numpy as np
import pytest
from real_run_parse import assert_reads_as_parsed

from bench import bench_forecast as bf
from grpo_core.errors import ParameterError
from grpo_core.laws import plateau
from grpo_core.runs import datasets

HOLDOUT = datasets.real_runs("holdout_runs")


def test_the_holdout_collection_is_apart_from_the_20_runs():
    assert len(HOLDOUT) == 17 and HOLDOUT[0].startswith("40-") and HOLDOUT[-1].startswith("56-")
    assert not set(HOLDOUT) & set(datasets.real_runs())
    run = datasets.real_run("54", "holdout_runs")
    assert run.run_id == "54-Sunshine535-qwen35-9b-rho1-seed43" and run.meta["group_size_G"] == 2
    with pytest.raises(ParameterError, match="holdout_runs"):
        datasets.real_runs("holdout")
    with pytest.raises(ParameterError, match="run_id"):
        datasets.real_run("54")  # not one of the 20


@pytest.mark.parametrize("run_id", HOLDOUT)
def test_holdout_raw_file_reads_and_matches_a_plain_parse(run_id):
    run = datasets.real_run(run_id, "holdout_runs")
    _, y = assert_reads_as_parsed(run)
    deciles = [float(np.mean(c)) for c in np.array_split(y, 10)]
    np.testing.assert_allclose(deciles, run.meta["reward_decile_means"], atol=6e-4)


def test_the_benchmark_scores_a_fixed_prior_without_tuning():
    ids = ("42-unslothai-llama3.1-8b-gsm8k", "52-Caitlyn-Yin-hard-standard")
    runs = [bf.load_run(rid, "holdout_runs") for rid in ids]
    recs, _ = bf.forecasts(runs, cuts=(0.4,), n_boot=0, prior=plateau.SHIPPED_PRIOR)
    rows = [r for r in recs if r["method"] == "plateau"]
    assert len(rows) == 2
    for run, row in zip(runs, rows):
        assert row["lam"] == plateau.SHIPPED_PRIOR.lam and row["q"] == plateau.SHIPPED_PRIOR.q
        t, y = bf._window(run, 0.4)
        fc = plateau.forecast_plateau(t, y, horizon=float(run["t"][-1]), lr=run["lr"], prior=plateau.SHIPPED_PRIOR,
                                      reward_std=run["reward_std"])
        assert row["final"] == pytest.approx(fc.final, abs=1e-12)
        assert row["truth"] == pytest.approx(float(np.mean(run["y"][-int(np.ceil(0.2 * run["y"].size)):])))


def test_a_law_resting_on_the_last_point_is_left_out():
    """Held-out run 51 from 60% of its steps: rewards 0 to 2, then a 4 at the window's last step. The
    logistic read that point as the flank of a rise (99.5% of the Akaike weight, a forecast of 15.9; the
    run ended at 1.6). Refitted without the last points its forecast moves by many window spreads, so it
    is left out, and the forecast stays where the window is."""
    run = bf.load_run("51", "holdout_runs")
    t, y = bf._window(run, 0.6)
    u = t / t[-1]
    u_tail = np.linspace(0.8 * run["t"][-1], run["t"][-1], 40) / t[-1]
    _, _, w, _, _, params = plateau._fit_all(u, y, u_tail, 100.0 * run["t"][-1] / t[-1])
    assert w["logistic"] > 0.99
    assert set(plateau._end_sensitive(u, y, u_tail, params, w, plateau.window_spread(y))) >= {"logistic"}
    fc = plateau.forecast_plateau(t, y, horizon=float(run["t"][-1]), prior=plateau.SHIPPED_PRIOR, n_boot=0)
    assert "logistic" not in fc.weights and float(np.min(y)) <= fc.final <= float(np.max(y[:-1]))
    truth, spread = bf.truth_and_spread(run["y"])
    assert abs(fc.final - truth) / spread < 0.3


def test_the_end_guard_keeps_a_law_the_whole_window_supports():
    """An exact saturating exponential: refitted without its last points the law forecasts the same, so
    it keeps its weight (the guard is not a prior against rises)."""
    t = np.arange(1.0, 101.0)
    y = 1.0 - 0.8 * np.exp(-t / 30.0)
    fc = plateau.forecast_plateau(t, y, horizon=300.0, n_boot=0, prior=plateau.PlateauPrior(lam=1.0, q=1.645))
    assert fc.weights.get("exponential", 0) + fc.weights.get("janoschek", 0) > 0.9
    assert fc.final == pytest.approx(float(np.mean(1.0 - 0.8 * np.exp(-np.linspace(240, 300, 40) / 30.0))), abs=1e-3)
