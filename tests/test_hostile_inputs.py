"""Inputs a careless or hostile user feeds the tools: each is refused with one line naming what is
wrong (exit 2), or handled; never a wrapped number, merged rows or a crash."""

from __future__ import annotations

import json
import os
import re

import numpy as np
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


ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x9b31m\x08"


def test_control_characters_from_a_log_are_shown_escaped_not_sent(tmp_path, capsys):
    """A column name holding ANSI sequences (clear screen, set the window title, a C1 CSI) reaches
    the terminal as visible escapes, on stdout (the table) and stderr (errors and warnings)."""
    bad = tmp_path / "ansi.csv"
    bad.write_text(f"step,rew{ESCAPES}ard,x\n1,0.1,1\n2,0.2,2\n")
    assert main(["diagnose", str(bad)]) == 2
    err = capsys.readouterr().err
    assert not any(c in err for c in "\x1b\x07\x9b\x08")
    assert "rew\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\x08ard" in err
    rows = "".join(f"{s},{0.1 + 0.003 * s},{s % 7}\n" for s in range(1, 201))
    good = tmp_path / "named.csv"
    good.write_text(f"step,reward,gr{ESCAPES}ad_norm\n{rows}")
    main(["diagnose", str(good), "--no-forecast", "--map", f"grad_norm=gr{ESCAPES}ad_norm"])
    out, err = capsys.readouterr()
    assert not any(c in out + err for c in "\x1b\x07\x9b\x08")


def test_reordering_and_separator_characters_and_undecodable_bytes_are_shown_escaped(tmp_path, capsys):
    """A right-to-left override (U+202E) makes a terminal show 'cod.exe' as 'exe.doc'; a line
    separator breaks a line where none is; a file name's byte that is not UTF-8 reaches Python as a
    lone surrogate, which a strict UTF-8 stream cannot print. Each is written as an escape."""
    import io

    from grpo_dynamics.cli import _Escaped

    sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="")
    stream = _Escaped(sink)
    stream.write("a\u202eb\u2028c\u2066d " + os.fsdecode(b"caf\xe9.csv") + "\n")
    sink.flush()
    assert sink.buffer.getvalue().decode() == "a\\u202eb\\u2028c\\u2066d caf\\xe9.csv\n"
    bad = tmp_path / "r\u202eeward.csv"
    bad.write_text("step,x\n1,1\n2,2\n")
    assert main(["diagnose", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "\u202e" not in err and "r\\u202eeward.csv" in err


def test_the_escaping_stream_passes_plain_text_and_is_restored(capsys):
    import sys

    before = sys.stdout
    assert main(["advise", "--eta", "0.02", "--mu", "0.5", "--k-ref", "4", "--curvature", "1"]) == 0
    assert sys.stdout is before
    out = capsys.readouterr().out
    assert "\\x" not in out and "\n" in out


def _read_seconds(tmp_path, text: str) -> float:
    import time
    import warnings

    path = tmp_path / "long.log"
    path.write_text(text)
    t0 = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # notes about dropped rows are not the point here
            read_log(path)
    except DataError as exc:
        assert len(str(exc)) < 2000  # a refusal quotes the file, not megabytes of it
    return time.process_time() - t0


@pytest.mark.parametrize("line", [
    "Epoch:[1/1](1/10), " + "a" * 80_000,              # a MiniMind line whose key never ends
    "Epoch:[1/1](1/10), " + "a " * 40_000,
    ("  5%|#   | 10/200 [00:01<00:10, 1.2it/s]" + " " * 30) * 20_000,  # 1.4 MB of tqdm redraws
    "step 1 | " + "a" * 80_000,
    "," * 1_000_000,                                      # a header of a million empty names
])
def test_long_lines_are_read_in_linear_time(tmp_path, line):
    """Each of these took from 15 s to minutes (regular expressions that backtrack over the whole
    line, a header checked name by name against every other); each now reads or is refused in well
    under the time a quadratic pass over the text takes. The bound is loose (10 s of CPU) so that a
    slow machine does not fail it, while the old code exceeds it on every one of them."""
    assert _read_seconds(tmp_path, line + "\n1\n") < 10.0


def test_what_is_not_a_regular_file_is_refused_by_name(tmp_path, capsys):
    import os

    loop_a, loop_b = tmp_path / "a.json", tmp_path / "b.json"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)  # read forever before: nothing ever writes to it
    dangling = tmp_path / "gone.csv"
    dangling.symlink_to(tmp_path / "missing.csv")
    cases = {loop_a: "a loop of symbolic links", fifo: "a FIFO (named pipe), not a log file",
             "/dev/zero": "a character device, not a log file", dangling: "a symbolic link to a missing file",
             tmp_path: "is a directory"}
    for path, message in cases.items():
        with pytest.raises(DataError, match=re.escape(message)):
            read_log(path)
        assert main(["diagnose", str(path)]) == 2
        # diagnose walks a folder for the runs in it: here only links that loop or lead nowhere, and a FIFO
        cli_message = "no log found in this folder" if path == tmp_path else message
        assert cli_message in capsys.readouterr().err


@pytest.mark.parametrize("value", ["5", "null", "true", '"a string"', "-1e308"])
def test_a_file_of_one_json_value_is_not_a_log(tmp_path, value):
    path = tmp_path / "x.json"
    path.write_text(value + "\n")
    with pytest.raises(DataError, match=r"holds a single JSON value .*, not a log"):
        read_log(path)


def test_the_size_bound_refuses_a_large_log_and_can_be_raised(tmp_path, monkeypatch):
    from grpo_core.runs.logs.read import MAX_BYTES_ENV

    path = tmp_path / "log.csv"
    path.write_text("step,reward\n" + "".join(f"{s},{0.1 + 0.001 * s}\n" for s in range(1, 2001)))
    monkeypatch.setenv(MAX_BYTES_ENV, "1000")
    with pytest.raises(DataError, match=rf"larger than the .* MiB a log may be; set {MAX_BYTES_ENV}"):
        read_log(path)
    monkeypatch.setenv(MAX_BYTES_ENV, str(10 ** 9))
    assert len(read_log(path).train) == 2000


@pytest.mark.parametrize("bad", [None, 5, ["a.csv"]])
def test_read_log_names_a_path_that_is_not_one(bad):
    from grpo_core.errors import ParameterError

    with pytest.raises(ParameterError, match="`path` must be a file path"):
        read_log(bad)


def test_a_table_given_as_the_path_points_at_from_frame():
    import pandas as pd

    from grpo_core.errors import ParameterError

    with pytest.raises(ParameterError, match="from_frame"):
        read_log(pd.DataFrame({"step": [1], "reward": [0.1]}))


def _run_beside(tmp_path, sibling: str):
    """A 200-step TRL-style log with a learning rate, and ``sibling`` as the meta.json beside it."""
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    rows = [{"step": s, "reward": 0.8 - 0.7 * 0.98 ** s, "learning_rate": 1e-6} for s in range(1, 201)]
    (folder / "trainer_state.json").write_text(json.dumps({"log_history": rows}))
    (folder / "meta.json").write_text(sibling)
    return folder / "trainer_state.json"


SIBLINGS = {
    "true for a number": ('{"adam_beta1": true, "num_iterations": 2}', "`beta1` = True (is not a number)"),
    "Infinity": ('{"learning_rate": Infinity, "num_iterations": 2}', "`learning_rate` = inf (must be finite)"),
    "NaN": ('{"adam_beta1": NaN}', "`beta1` = nan (must be finite)"),
    "bad optim_args": ('{"optim": "sgd", "optim_args": "momentum=0.9.9.9"}', "`optim_args` = 'momentum=0.9.9.9'"),
    "a huge count": ('{"num_iterations": 1e12}', "`num_iterations` = 1000000000000.0 (must be at most 1,000,000)"),
    "a beta1 of 1.5": ('{"adam_beta1": 1.5, "num_iterations": 2}', "`beta1` = 1.5 (must be in [0, 1))"),
    "nested 100k deep": ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
    "not an object": ("[1, 2, 3]", "expected a JSON object of settings"),
}


@pytest.mark.parametrize("case", list(SIBLINGS))
def test_another_tools_file_beside_the_log_is_used_where_it_parses(tmp_path, capsys, case):
    """One rule for diagnose, fit and advise: what parses is used, the rest is named in a warning
    (never a TypeError, OverflowError, RecursionError or an internal parameter's name), and
    --ignore-config ignores the file."""
    text, named = SIBLINGS[case]
    log = _run_beside(tmp_path, text)
    for argv in (["diagnose", str(log), "--no-forecast"], ["fit", str(log)], ["advise", "--from-log", str(log)]):
        status = main(argv)
        out, err = capsys.readouterr()
        assert status in (0, 1, 3), (argv, status, err)
        assert named in err, (argv, err)
        assert "mass" not in err and "Traceback" not in err
        assert main([*argv, "--ignore-config"]) in (0, 1, 3)
        assert named not in capsys.readouterr().err


def test_what_parses_in_a_bad_sibling_is_used(tmp_path):
    from grpo_core.runs.settings import settings_for_log

    log = _run_beside(tmp_path, '{"adam_beta1": true, "num_iterations": 2, "num_generations": 8}')
    with pytest.warns(UserWarning, match=r"ignored `beta1` = True"):
        s = settings_for_log(log)
    assert (s.num_iterations, s.group_size, s.beta1) == (2, 8, 0.9)  # beta1: TRL's default
    assert "beta1" in s.defaulted and any("beta1" in u for u in s.unreadable)


def test_a_config_given_explicitly_is_read_strictly(tmp_path):
    from grpo_core.runs.settings import read_settings

    bad = tmp_path / "config.json"
    bad.write_text('{"num_iterations": 1e12}')
    with pytest.raises(DataError, match=r"`num_iterations` = 1000000000000.0 must be at most 1,000,000"):
        read_settings(bad)


@pytest.mark.parametrize("argv, message", [
    (["bandit", "--eta", "0.2", "--seed", "1e308"], "`seed` must be an integer in [0, "),
    (["bandit", "--eta", "0.2", "--seed", "1e19"], "`seed` must be an integer in [0, "),
    (["bandit", "--eta", "0.5", "--sweep", "k_ref", "--k-max", "1e308"], "`k_max` must be an integer in [1, 4096]"),
    (["probe", "--preset", "cpu-tiny", "--seed", "1e308"], "`seed` must be an integer in [0, 4294967295]; got 1e+308"),
])
def test_huge_seeds_and_bounds_are_refused_by_name(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, named", [
    (["groupsize", "--budget", "1024", "--c1", "1", "--c2", "1", "--c3", "10", "--bootstrap", "abc"], "--bootstrap"),
    (["groupsize", "--budget", "1024", "--c1", "1", "--c2", "1", "--c3", "10", "--confidence", "0.5"],
     "--confidence"),
    (["groupsize", "--budget", "1024", "--c1", "1", "--c2", "1", "--c3", "10", "--seed", "3"], "--seed"),
    (["bandit", "--eta", "0.5", "--sweep", "k_ref", "--out", "x.csv"], "`--out` writes one run's"),
    (["advise", "--eta", "0.02", "--mu", "0.5", "--k-ref", "4", "--curvature", "1", "--config", "c.json"],
     "need `--from-log LOG`"),
    (["diagnose", "x.csv", "--no-forecast", "--reward-range", "0", "1"], "with `--no-forecast` it does nothing"),
])
def test_a_flag_that_would_do_nothing_is_refused(capsys, argv, named):
    """Flags that had no effect in the combination given were accepted silently (any value, even "abc")."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert named in err and err.count("\n") == 1


def test_the_bootstrap_flags_still_work_with_samples(tmp_path, capsys):
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(24, 6, 3))
    rewards = (rng.random((24, 6)) < 0.4).astype(float)
    path = tmp_path / "groups.npz"
    np.savez(path, scores=scores, rewards=rewards)
    assert main(["groupsize", "--samples", str(path), "--budget", "512", "--bootstrap", "50", "--confidence",
                 "0.8", "--seed", "1", "--json"]) == 0
    assert '"g_star' in capsys.readouterr().out


@pytest.mark.parametrize("count, ok", [("100000", True), ("100001", False), ("1e308", False)])
def test_the_bootstrap_count_is_bounded(tmp_path, capsys, count, ok):
    """More than 100,000 resamples (1e308 ran for ever) is refused by name, before any work; 100,000
    runs (0.1 s on a 4-prompt pool)."""
    from grpo_core.errors import ParameterError
    from grpo_core.groupsize import estimate

    rng = np.random.default_rng(0)
    w, z = rng.normal(size=(4, 3, 1)), (rng.random((4, 3)) < 0.5).astype(float)
    path = tmp_path / "groups.npz"
    np.savez(path, scores=w, rewards=z)
    code = main(["groupsize", "--samples", str(path), "--budget", "64", "--bootstrap", count, "--json"])
    err = capsys.readouterr().err
    if ok:
        assert set(estimate.estimate_constants(w, z, num_bootstrap=count).intervals) >= {"c1", "c2", "c3"}
        assert code == 0
    else:
        with pytest.raises(ParameterError, match=r"`num_bootstrap` must be an integer in \[0, 100000\]"):
            estimate.estimate_constants(w, z, num_bootstrap=count)
        assert code == 2 and "`bootstrap` must be an integer in [0, 100000]" in err


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, '{"log_history": [' + "[" * 5000 + "]" * 5000 + "]}",
                                  '{"a": 1}\n' + '{"b":' * 5000 + "1" + "}" * 5000])
def test_json_nested_past_the_parsers_depth_is_refused_by_name(tmp_path, capsys, text):
    """A JSON log, a trainer_state and a JSON-lines line nested 5,000 deep (a RecursionError, exit 70)."""
    path = tmp_path / "trainer_state.json"
    path.write_text(text)
    assert main(["diagnose", str(path), "--no-forecast"]) == 2
    assert "JSON nested deeper than can be read" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["name", "cell", "quoted cell"])
def test_a_field_longer_than_the_csv_modules_limit_is_read_and_not_echoed(tmp_path, capsys, where):
    """A column name or a cell of 300,000 characters (past the csv module's 131,072: an internal error,
    exit 70) is read; the JSON output does not echo it whole."""
    big = "y" * 300_000
    header = f"step,reward,{big if where == 'name' else 'note'}"
    cell = {"name": "1", "cell": big, "quoted cell": f'"{big},\n"'}[where]
    rows = "".join(f"{s},{0.1 + 0.005 * s},{cell if s == 50 else 'ok'}\n" for s in range(1, 101))
    path = tmp_path / "long.csv"
    path.write_text(f"{header}\n{rows}")
    code = main(["diagnose", str(path), "--no-forecast", "--json"])
    out = capsys.readouterr().out
    assert code in (0, 1, 3) and len(out) < 20_000
    assert json.loads(out)["steps"] == [1, 100]
