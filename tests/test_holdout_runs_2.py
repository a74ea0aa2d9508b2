"""The second set of held-out real runs (grpo_core/data/holdout_runs_2), collected from repositories that
gave no run to the 37 the forecaster was tuned on, for the pre-registered out-of-sample test
(bench/results/preregistration_v2.md): they read as committed, their reward matches a plain parse of the
raw file, and the committed record of the test is that of these runs and of the pre-registered methods."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from real_run_parse import assert_reads_as_parsed

from bench import bench_forecast as bf
from bench import bench_forecast_holdout_v2 as v2
from grpo_core.runs import datasets

FRESH = datasets.real_runs("holdout_runs_2")
RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def test_the_collection_shares_no_repository_with_the_37_runs():
    assert len(FRESH) >= 10 and all(int(i.split("-", 1)[0]) >= 60 for i in FRESH)
    seen = {datasets.real_run(i, c).meta["source_repo"]
            for c in bf.BENCHMARK_COLLECTIONS for i in datasets.real_runs(c)}
    fresh = [datasets.real_run(i, "holdout_runs_2").meta["source_repo"] for i in FRESH]
    assert not set(fresh) & seen
    assert len(set(fresh)) == len(fresh)  # one run per repository
    assert "holdout_runs_2" not in bf.BENCHMARK_COLLECTIONS  # nothing is tuned on them


@pytest.mark.parametrize("run_id", FRESH)
def test_raw_file_reads_and_matches_a_plain_parse(run_id):
    run = datasets.real_run(run_id, "holdout_runs_2")
    _, y = assert_reads_as_parsed(run)
    deciles = [float(np.mean(c)) for c in np.array_split(y, 10)]
    np.testing.assert_allclose(deciles, run.meta["reward_decile_means"], atol=6e-4)


def test_variant_b_reads_the_logged_reward_std_up_to_the_window():
    run = bf.load_run("70", "holdout_runs_2")
    t_s, s = run["reward_std"]
    t, _y = bf._window(run, 0.4)
    keep = s[t_s <= t[-1]]
    k = max(3, int(np.ceil(0.2 * keep.size)))
    assert v2.std_end(run, float(t[-1])) == pytest.approx(float(np.mean(keep[-k:])), abs=1e-15)
    assert v2.std_end({**run, "reward_std": None}, float(t[-1])) is None
    assert v2.std_end(run, float(t_s[4])) is None  # fewer than 6 values logged: B falls back to A


def test_the_committed_record_is_of_these_runs_and_the_preregistered_methods():
    rows = json.loads((RESULTS / "forecast_holdout_v2.json").read_text())
    records = [r for r in rows if r["method"] == "record"]
    assert {r["run"] for r in records} == set(FRESH)
    methods = {r["of"] for r in records}
    assert {"plateau", "plateau_std_gain", "plateau_or_janoschek", "hold"} <= methods
    for cut in bf.CUTS:
        a = {r["run"]: r for r in records if r["of"] == "plateau" and r["cut"] == cut}
        assert len(a) == len(FRESH)
        for rid, r in a.items():
            run = bf.load_run(rid, "holdout_runs_2")
            truth, spread = bf.truth_and_spread(run["y"])
            assert r["truth"] == pytest.approx(truth, abs=1e-12) and r["spread"] == pytest.approx(spread, abs=1e-12)


def test_the_record_holds_the_shipped_forecast_and_variant_b_as_defined():
    """A (the forecaster as shipped before the test, nothing tuned on these runs) and B recomputed for one run
    at the cut 0.4 equal the committed record (the point forecast does not depend on the bootstrap); the
    product's forecaster with B's prior gives B."""
    from grpo_core.laws import plateau

    rows = json.loads((RESULTS / "forecast_holdout_v2.json").read_text())
    rid = datasets.real_run("79", "holdout_runs_2").run_id
    rec = {r["of"]: r for r in rows if r["method"] == "record" and r["run"] == rid and r["cut"] == 0.4}
    run = bf.load_run(rid, "holdout_runs_2")
    t, y = bf._window(run, 0.4)
    fc = plateau.forecast_plateau(t, y, horizon=float(run["t"][-1]), lr=run["lr"], n_boot=0)
    # the record was written at c67f65c; today's law fits of the same window agree to the fifth decimal, not the
    # last float (1.2e-5 on this run's 0.899, here and on CI): the test is of the definitions of A and B
    fit_tol = 1e-4
    assert rec["plateau"]["final"] == pytest.approx(fc.with_prior(v2.PRIOR_A).final, abs=fit_tol)
    # the product now is B: with the run's reward_std and B's gain (and lam 1), the same forecast
    b_prior = plateau.PlateauPrior(lam=1.0, gain=0.11, std_gain=v2.STD_GAIN)
    now = plateau.forecast_plateau(t, y, horizon=float(run["t"][-1]), lr=run["lr"], n_boot=0, prior=b_prior,
                                   reward_std=run["reward_std"])
    assert now.final == pytest.approx(rec["plateau_std_gain"]["final"], abs=fit_tol)
    b = fc.law_mean + v2.STD_GAIN * v2.std_end(run, float(t[-1])) * min(v2.remaining_time(run, t, float(run["t"][-1])),
                                                                        v2.STD_CAP)
    assert rec["plateau_std_gain"]["final"] == pytest.approx(b, abs=fit_tol)
