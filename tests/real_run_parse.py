"""A real run's raw file read two ways: by the package's reader and by a plain parse written here
(pandas for a table, a regular expression for a console log), for the tests of the committed run
collections (grpo_core/data/holdout_runs, holdout_runs_2)."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd

from grpo_core.runs import datasets
from grpo_core.runs.logs import LogWarning, read_log


def plain_reward(run: datasets.RealRun) -> np.ndarray:
    """The training reward of the raw file, parsed without the package's reader."""
    path = run.path
    if path.suffix == ".csv":
        return pd.read_csv(path)["reward"].to_numpy(float)
    if path.suffix == ".json":
        return np.array([row[run.meta["reward_metric"]] for row in json.loads(path.read_text())], float)
    text = path.read_text(encoding="utf-8", errors="replace")
    if "Epoch:[" in text:  # MiniMind: one line per step
        return np.array(re.findall(r"^Epoch:\[\d+/\d+\]\(\d+/\d+\), Reward: (-?[0-9.]+)", text, re.M), float)
    # console logs of printed metric dicts: the training rows' 'reward' key (values may be quoted); the
    # final summary dict (train_runtime ...) repeats the run's mean reward and is no step
    lines = [ln for ln in text.splitlines() if "'train_runtime'" not in ln]
    return np.array(re.findall(r"[{,] '?reward'?: '?(-?[0-9.]+(?:e-?[0-9]+)?)'?", "\n".join(lines)), float)


def assert_reads_as_parsed(run: datasets.RealRun) -> tuple[np.ndarray, np.ndarray]:
    """Read ``run`` with :func:`read_log`; assert its reward equals :func:`plain_reward` value for value
    (as many rows as the run's meta.json says, at least 40, on increasing steps). Returns (steps, reward)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        log = read_log(run.path, run=run.run)
    t, y = log.series("reward")
    want = plain_reward(run)
    assert y.size == want.size == run.meta["logged_rows"] >= 40
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-12)
    assert np.all(np.diff(t) > 0)
    return t, y
