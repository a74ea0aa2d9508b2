"""A metric not logged at a step (an empty CSV cell, a key missing from a record) is not a logged NaN.

TRL logs the reward keys on generation steps only (``steps_per_generation`` > 1, or ``logging_steps``
that fall between generations): those steps have no reward, which is no numerical failure. A ``nan``
the run wrote is one. Every container is checked both ways: CSV, ``trainer_state.json``, JSONL, a
console log of printed dicts, and our own callback's ``metrics.jsonl`` (which writes NaN as ``null``).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.diagnostics.numerical import numerical_failure
from grpo_core.runs.logs import LogWarning, from_records, normalize_record, read_log

STEPS = range(1, 41)
ODD = list(range(1, 41, 2))


def rows(nan_at: int | None = None) -> list[dict]:
    """40 steps of loss, grad_norm and kl; the reward (rising) only on odd steps, as TRL logs it on
    generation steps; ``nan_at`` (an odd step) logs the reward as NaN."""
    out = []
    for s in STEPS:
        r = {"step": s, "loss": 0.05, "grad_norm": round(0.2 + 0.001 * s, 4), "kl": round(0.001 * s, 4)}
        if s % 2:
            r["reward"] = float("nan") if s == nan_at else round(0.2 + 0.01 * s, 4)
        out.append(r)
    return out


def write_csv(path, records):
    cols = ["step", "loss", "grad_norm", "kl", "reward"]
    lines = [",".join(cols)]
    for r in records:
        # an absent reward is an empty cell; a NaN is written `nan` (as pandas/str() write it)
        lines.append(",".join("" if c not in r else ("nan" if r[c] != r[c] else str(r[c])) for c in cols))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_trainer_state(path, records):
    # json.dumps writes a float NaN as NaN, as the Trainer's json.dump of log_history does
    path.write_text(json.dumps({"global_step": 40, "max_steps": 40, "log_history": records}, indent=1))
    return path


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


WRITERS = {
    "csv": (write_csv, "log.csv"),
    "trainer_state": (write_trainer_state, "trainer_state.json"),
    "jsonl": (write_jsonl, "metrics.jsonl"),
}


def quiet_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a log logged on some steps only reads without a warning
        return read_log(path)


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_reward_logged_on_odd_steps_is_no_numerical_failure(tmp_path, kind):
    write, name = WRITERS[kind]
    log = quiet_read(write(tmp_path / name, rows()))
    assert len(log.train) == 40 and log.logged_nan == {}
    steps, values = log.series("reward")  # the logged steps, without a warning
    assert steps.tolist() == ODD
    assert values == pytest.approx([0.2 + 0.01 * s for s in ODD], abs=1e-12)
    assert log.series("loss")[0].tolist() == list(STEPS)
    assert log.nonfinite_steps("reward").size == 0
    assert numerical_failure(log) is None
    d = diagnose(log, forecast=False)
    assert d.find("numerical_failure") is None and "numerical_failure" in d.checked
    assert "data: the reward is logged on 20 of 40 training steps (the other steps logged other metrics)" in d.notes
    assert not any("NaN or infinite" in n for n in d.notes)


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_the_same_log_with_a_written_nan_is_a_critical_numerical_failure(tmp_path, kind):
    write, name = WRITERS[kind]
    log = read_log(write(tmp_path / name, rows(nan_at=21)))
    assert log.nonfinite_steps("reward").tolist() == [21]
    assert log.logged_nan["train"]["reward"].tolist() == [21]
    with pytest.warns(LogWarning, match=r"'reward' \(train\): dropped 1 NaN \(first at step 21\) of the 20 logged"):
        assert log.series("reward")[0].tolist() == [s for s in ODD if s != 21]
    f = numerical_failure(log)
    assert f.severity == "critical" and f.onset == 21 and f.steps == (21, 40)
    assert f.evidence == {"reward": {"steps": 1, "first": 21, "finite_after": True}}
    d = diagnose(log, forecast=False)
    assert d.verdict == "unhealthy" and d.find("numerical_failure").severity == "critical"
    assert "data: 1 of 40 reward value(s) are NaN or infinite; the checks and the forecast leave them out" in d.notes


def test_csv_spellings_of_a_missing_cell_and_of_a_logged_nan(tmp_path):
    # "", NULL, None, NA, N/A: not logged; nan, NaN, -nan, 1.#QNAN (MSVC): logged NaN; inf stays infinite
    cells = {
        2: "",
        4: "NULL",
        6: "None",
        8: "NA",
        10: "N/A",
        12: "nan",
        14: "NaN",
        16: "-nan",
        18: "1.#QNAN",
        20: "inf",
    }
    text = "step,grad_norm,reward\n" + "".join(f"{s},{cells.get(s, '0.3')},0.5\n" for s in range(1, 31))
    log = read_log(write_text(tmp_path / "g.csv", text))
    assert log.logged_nan["train"]["grad_norm"].tolist() == [12, 14, 16, 18]
    assert log.nonfinite_steps("grad_norm").tolist() == [12, 14, 16, 18, 20]
    f = numerical_failure(log)
    assert f.evidence == {"grad_norm": {"steps": 5, "first": 12, "finite_after": True}}


def write_text(path, text):
    path.write_text(text)
    return path


def test_a_dying_run_whose_last_rows_are_all_nan_is_still_found(tmp_path):
    # every metric NaN on steps 31-40: those rows hold the NaN the run wrote (values, not empty cells):
    # they stay in the table, are not reported as dropped, and count as NaN steps (once)
    recs = [
        {"step": s, "loss": 0.1, "grad_norm": 0.3, "reward": 0.5}
        if s <= 30
        else {"step": s, "loss": math.nan, "grad_norm": math.nan, "reward": math.nan}
        for s in STEPS
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LogWarning)  # nothing dropped, nothing to warn about
        log = read_log(write_trainer_state(tmp_path / "trainer_state.json", recs))
    assert log.train.index.tolist() == list(range(1, 41))
    assert {m: s.tolist() for m, s in log.logged_nan["train"].items()} == {
        m: list(range(31, 41)) for m in ("loss", "grad_norm", "reward")
    }
    f = numerical_failure(log)
    assert f.severity == "critical" and f.onset == 31
    assert f.evidence["grad_norm"] == {"steps": 10, "first": 31, "finite_after": False}


def test_a_printed_dict_with_a_bare_nan_is_read_and_the_nan_is_logged(tmp_path):
    # Python prints a NaN float as `nan` (not a literal): the dict is read, not skipped
    lines = []
    for s in range(1, 31):
        gn = "nan" if s == 25 else "0.3"
        lines.append(f"{{'loss': 0.05, 'grad_norm': {gn}, 'reward': 0.5, 'global_step/max_steps': '{s}/30'}}")
    log = read_log(write_text(tmp_path / "train.log", "\n".join(lines) + "\n"))
    assert log.container == "console" and len(log.train) == 30
    assert log.nonfinite_steps("grad_norm").tolist() == [25]
    f = numerical_failure(log)
    # grad_norm alone, finite again after: the overflowed step fp16 loss scaling skips (info)
    assert f.severity == "info" and f.evidence == {"grad_norm": {"steps": 1, "first": 25, "finite_after": True}}


def test_the_callback_s_null_is_a_logged_nan_elsewhere_null_is_missing(tmp_path):
    # normalize_record (the callback's writer) writes a non-finite value as null, with a `split` key
    own = [
        normalize_record({"step": s, "loss": 0.1, "grad_norm": math.nan if s == 7 else 0.3, "reward": 0.5})
        for s in range(1, 21)
    ]
    assert own[6]["grad_norm"] is None and own[6]["split"] == "train"
    log = read_log(write_jsonl(tmp_path / "metrics.jsonl", own))
    assert log.nonfinite_steps("grad_norm").tolist() == [7]
    # a table without `split` (e.g. pandas' to_json) writes null for a cell it has no value for
    other = [{"step": s, "loss": 0.1, "grad_norm": None if s == 7 else 0.3, "reward": 0.5} for s in range(1, 21)]
    log = from_records(other)
    assert log.logged_nan == {} and np.isnan(log.train.loc[7, "grad_norm"])
    assert numerical_failure(log) is None
