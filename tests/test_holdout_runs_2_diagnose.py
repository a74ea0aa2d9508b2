"""What ``diagnose`` says about the second set of held-out real runs (grpo_core/data/holdout_runs_2), where a
fresh-eyes review of its output found it wrong or misleading."""

from __future__ import annotations

import warnings

import pytest

from grpo_core.runs import datasets
from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import LogWarning, read_log


def _log(prefix: str):
    run = datasets.real_run(prefix, "holdout_runs_2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        return read_log(run.path, run=run.run)


@pytest.fixture(scope="module")
def run71():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose(_log("71"), forecast=False)


def test_a_column_logged_on_one_step_of_300_is_not_called_0_on_every_step(run71):
    # run 71's notebook table has "No Log" in its importance-ratio columns on 299 of 300 steps and 0 on
    # step 1: the column is not computed, and the reason says where it is 0 (it was "0 on every step").
    why = run71.skipped["off_policy_mismatch"]
    assert "0 on the 1 step that logs it (of 300; the others are empty)" in why and "not computed" in why
    assert "every step" not in why
