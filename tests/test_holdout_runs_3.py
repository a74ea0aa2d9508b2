"""The third set of held-out real runs (grpo_core/data/holdout_runs_3), collected from repositories that gave
no run to the other collections: each raw file reads as committed, its reward equals a plain parse of the file
(pandas for a progress table, the JSON log history for a trainer_state.json), and index.csv carries the
provenance of every run."""

from __future__ import annotations

import csv
import json
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grpo_core.runs.logs import LogWarning, read_log

DATA = Path(str(resources.files("grpo_core.data")))
FOLDER = DATA / "holdout_runs_3"
RUNS = sorted((p.name for p in FOLDER.iterdir() if (p / "meta.json").is_file()), key=lambda i: int(i.split("-")[0]))
SOURCE_COLUMNS = ["run_id", "source_repo", "source_path", "commit", "raw_file", "framework", "model", "task", "G",
                  "learning_rate", "logged_rows", "curve_shape"]


def meta(run_id: str) -> dict:
    return json.loads((FOLDER / run_id / "meta.json").read_text(encoding="utf-8"))


def plain_reward(run_id: str) -> np.ndarray:
    """The training reward of the raw file, parsed without the package's reader."""
    m = meta(run_id)
    path = FOLDER / run_id / m["raw_file"]
    if path.suffix == ".csv":
        return pd.read_csv(path)["reward"].to_numpy(float)
    history = json.loads(path.read_text(encoding="utf-8"))["log_history"]
    return np.array([row["reward"] for row in history if "reward" in row], float)


def index_rows() -> list[dict]:
    with open(FOLDER / "index.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_collection_shares_no_repository_with_the_other_collections():
    assert len(RUNS) >= 15 and all(int(i.split("-", 1)[0]) >= 90 for i in RUNS)
    seen = set()
    for other in ("real_runs", "holdout_runs", "holdout_runs_2"):
        with open(DATA / other / "index.csv", newline="", encoding="utf-8") as f:
            seen |= {row["source_repo"] for row in csv.DictReader(f)}
    fresh = [meta(i)["source_repo"] for i in RUNS]
    assert not set(fresh) & seen
    assert len(set(fresh)) == len(fresh)  # one run per repository


@pytest.mark.parametrize("run_id", RUNS)
def test_raw_file_reads_and_matches_a_plain_parse(run_id):
    m = meta(run_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        log = read_log(FOLDER / run_id / m["raw_file"])
    t, y = log.series("reward")
    want = plain_reward(run_id)
    assert y.size == want.size == m["logged_rows"] >= 40
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-12)
    assert np.all(np.diff(t) > 0)
    assert f"{int(t[0])}..{int(t[-1])}" == m["optimizer_steps_covered"]
    deciles = [float(np.mean(c)) for c in np.array_split(y, 10)]
    np.testing.assert_allclose(deciles, m["reward_decile_means"], atol=6e-4)
    t_std, _ = log.series("reward_std")  # every run of the set logs the groups' reward spread
    assert t_std.size == y.size


def test_index_carries_the_provenance_of_every_run():
    rows = index_rows()
    assert list(rows[0]) == SOURCE_COLUMNS
    assert [r["run_id"] for r in rows] == RUNS
    for row in rows:
        m = meta(row["run_id"])
        for column in ("source_repo", "source_path", "commit", "raw_file", "framework", "model", "task"):
            assert row[column] == m[column] and row[column]
        assert len(row["commit"]) == 40 and int(row["commit"], 16) >= 0
        assert int(row["G"]) == m["group_size_G"] >= 2
        assert float(row["learning_rate"]) == m["learning_rate"] > 0
        assert int(row["logged_rows"]) == m["logged_rows"]
        assert (FOLDER / row["run_id"] / row["raw_file"]).is_file()


def test_readme_names_every_run_with_its_source():
    text = (FOLDER / "README.md").read_text(encoding="utf-8")
    for run_id in RUNS:
        m = meta(run_id)
        assert run_id in text and f"https://github.com/{m['source_repo']}" in text and m["commit"] in text
