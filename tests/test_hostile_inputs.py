"""Inputs a careless or hostile user feeds the tools: each is refused with one line naming what is
wrong (exit 2), or handled; never a wrapped number, merged rows or a crash."""

from __future__ import annotations

import json

import pytest

from grpo_core.errors import DataError
from grpo_core.runs.logs import read_log
from grpo_dynamics.cli import main


def _rows(first: int, n: int = 200):
    return [(first + i, 0.1 + 0.003 * i) for i in range(n)]


@pytest.mark.parametrize("first", [2 ** 63 - 100, 10 ** 20, 2 ** 53 + 2])
def test_steps_too_large_to_read_exactly_are_refused_not_wrapped(tmp_path, first, capsys):
    csv = tmp_path / "big.csv"
    csv.write_text("step,reward\n" + "".join(f"{s},{r}\n" for s, r in _rows(first)))
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"log_history": [{"step": s, "reward": r} for s, r in _rows(first)]}))
    for path in (csv, state):
        with pytest.raises(DataError, match=r"steps must be at most 2\*\*53"):
            read_log(path)
        assert main(["diagnose", str(path), "--no-forecast"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "steps must be at most 2**53" in err


def test_steps_up_to_2_53_are_read_exactly(tmp_path):
    first = 2 ** 53 - 199
    csv = tmp_path / "edge.csv"
    csv.write_text("step,reward\n" + "".join(f"{s},{r}\n" for s, r in _rows(first)))
    log = read_log(csv)
    steps = log.train.index.to_numpy()
    assert len(steps) == 200 and steps[0] == first and steps[-1] == 2 ** 53  # no row merged, none negative
