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


def test_a_kl_jump_inside_the_first_quarter_is_said():
    # run 60's KL to the reference went from 0.0023 (step 20) to 0.82 by step 100 and about 2.5 later. The
    # growth is measured from the first quarter's median (0.76), which alone read "rose from 0.76 to 2.5".
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = diagnose(_log("60"), forecast=False)
    f = d.find("dynamic_instability")
    assert f.severity == "info"  # a KL that has stopped accelerating is drift, not instability
    kl = f.evidence["kl"]
    assert kl["first"] == pytest.approx(0.0023, rel=0.01) and kl["first_step"] == 20
    assert kl["early"] == pytest.approx(0.76, abs=0.01)
    # printed to 3 digits
    assert "after a jump from 0.0023 at step 20 within the first quarter of the log)" in f.message


def test_a_cap_hit_from_step_1_is_reported_from_step_1():
    # run 80's mean completion length sits at its 200-token cap (max_completion_length 200 in its config)
    # on most of steps 1-21 and 33-82, with short breaks; the finding named only the longest piece (56-82).
    from grpo_core.runs.diagnostics import truncation

    log = _log("80")
    f = truncation(log)
    assert f.severity == "info" and f.steps[0] == 1 and f.evidence["max_length"] == 200
    t, length = log.series("completion_length")
    pinned = length >= 0.995 * 200
    assert pinned[:21].mean() > 0.8  # what the reader sees in the table
    assert [1, 21] in f.evidence["stretches"]
    inside = (t >= f.steps[0]) & (t <= f.steps[1])
    assert f.evidence["stretch_level"] == pytest.approx(pinned[inside].mean())


def test_a_kl_that_starts_at_0_and_grows_late_has_no_early_jump():
    # the other side of run 60's message: the first quarter below the KL floor is no jump
    from grpo_core.runs.diagnostics import dynamic_instability
    from grpo_core.runs.logs import from_records

    recs = [{"step": s, "kl": 0.0 if s < 40 else 0.002 * 1.08 ** (s - 40)} for s in range(1, 121)]
    f = dynamic_instability(from_records(recs))
    kl = f.evidence["kl"]
    assert kl["first"] == 0.0 and kl["early"] < kl["baseline"] == 0.05
    assert "rose from" in f.message and "after a jump" not in f.message


def test_a_reward_whose_best_is_0_is_not_read_as_solved():
    # run 77's reward 0 is not success: its format reward (+4.5 at best) cancels the answer's -4.5, and its
    # check_answer never rose above -2.0 (never correct). 73% of its late groups have zero spread because every
    # completion scores the same 0, which is not the task solved: a highest reward at or below 0 is not a known
    # ceiling, so the run is not called saturated.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = diagnose(_log("77"), forecast=False)
    assert d.find("saturation") is None
    # what the run did: the format reward rose while the answer reward fell
    hack = d.find("train_eval_decoupling")
    assert hack is not None and hack.severity == "critical" and "check_answer fell from -2.05 to -4.46" in hack.message
    f = d.find("advantage_degeneration")
    assert f is not None and "73% of groups had zero reward spread" in f.message


def test_at_ceiling_needs_a_positive_ceiling():
    import numpy as np

    from grpo_core.runs.diagnostics.saturation import at_ceiling
    from grpo_core.runs.logs import from_records

    steps = np.arange(1, 101)
    rise = np.minimum(steps / 50.0, 1.0)
    for lo, hi, expect in ((-2.0, 0.0, False), (-3.0, -1.0, False), (0.0, 2.0, True)):
        log = from_records([{"step": int(s), "reward": float(lo + (hi - lo) * v)} for s, v in zip(steps, rise)])
        assert at_ceiling(log, 60, 100) is expect, (lo, hi)
        # the first half climbs: its mean is not within 90% of the way to the ceiling
        assert at_ceiling(log, 1, 50) is False, (lo, hi)
