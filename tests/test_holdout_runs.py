"""The held-out real runs (grpo_core/data/holdout_runs): they read as committed, their reward matches a
plain parse of the raw file, and the out-of-sample benchmark scores the shipped forecaster on them with
the shipped prior, untouched by their outcomes."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from bench import bench_forecast as bf
from grpo_core.errors import ParameterError
from grpo_core.laws import plateau
from grpo_core.runs import datasets
from grpo_core.runs.logs import LogWarning, read_log

HOLDOUT = datasets.real_runs("holdout_runs")


def plain_reward(run: datasets.RealRun) -> np.ndarray:
    """The reward column of the raw file, parsed without the package's reader."""
    path = run.path
    if path.suffix == ".csv":
        return pd.read_csv(path)["reward"].to_numpy(float)
    if path.suffix == ".json":
        return np.array([row[run.meta["reward_metric"]] for row in json.loads(path.read_text())], float)
    # console logs of printed metric dicts: the training rows' 'reward' key (values may be quoted)
    text = path.read_text(encoding="utf-8", errors="replace")
    return np.array(re.findall(r"[{,] '?reward'?: '?(-?[0-9.]+(?:e-?[0-9]+)?)'?", text), float)


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        log = read_log(run.path, run=run.run)
    t, y = log.series("reward")
    want = plain_reward(run)
    assert y.size == want.size == run.meta["logged_rows"] >= 40
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-12)
    assert np.all(np.diff(t) > 0)
    deciles = [float(np.mean(c)) for c in np.array_split(y, 10)]
    np.testing.assert_allclose(deciles, run.meta["reward_decile_means"], atol=6e-4)


def test_holdout_benchmark_scores_the_shipped_prior_out_of_sample():
    ids = ("42-unslothai-llama3.1-8b-gsm8k", "52-Caitlyn-Yin-hard-standard")
    runs = [bf.load_run(rid, "holdout_runs") for rid in ids]
    recs, _ = bf.forecasts(runs, cuts=(0.4,), n_boot=0, prior=plateau.SHIPPED_PRIOR)
    rows = [r for r in recs if r["method"] == "plateau"]
    assert len(rows) == 2
    for run, row in zip(runs, rows):
        assert row["lam"] == plateau.SHIPPED_PRIOR.lam and row["q"] == plateau.SHIPPED_PRIOR.q
        t, y = bf._window(run, 0.4)
        fc = plateau.forecast_plateau(t, y, horizon=float(run["t"][-1]), lr=run["lr"], prior=plateau.SHIPPED_PRIOR)
        assert row["final"] == pytest.approx(fc.final, abs=1e-12)
        assert row["truth"] == pytest.approx(float(np.mean(run["y"][-int(np.ceil(0.2 * run["y"].size)):])))
