"""``grpo-dynamics watch``: a log that grows while it is watched (JSONL, a real TRL console log, CSV, a
trainer_state.json, TensorBoard event files); each finding said once at the step it first shows, the status
line at each new step, the ends (the run's end, --idle, --once, Ctrl-C) and their exit statuses.

The writer runs in a thread and appends the next piece only when the watch has printed the status of the
last one, so that every test sees each step once whatever the machine's load."""

from __future__ import annotations

import _thread
import io
import json
import math
import os
import re
import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest

from grpo_core.runs.datasets import real_run
from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import from_records
from grpo_dynamics.cli import main
from grpo_dynamics.commands.watch import fingerprint

INTERVAL = "0.1"
DEAD = 31  # first step of the synthetic run whose every group has zero spread (no gradient)


def _rows(n: int = 60) -> list[dict]:
    """A TRL-keyed run: the reward rises from 0.2 towards 0.7 (time constant 15 steps, noise sd 0.03, seed 0);
    from step DEAD on it is 0 with zero spread, no gradient."""
    rng = np.random.default_rng(0)
    out = []
    for step in range(1, n + 1):
        dead = step >= DEAD
        r = 0.2 + 0.5 * (1 - math.exp(-step / 15)) + rng.normal(0, 0.03)
        out.append({"step": step, "loss": 0.0 if dead else 0.01,
                    "grad_norm": 0.0 if dead else round(float(1 + rng.normal(0, 0.1)), 4),
                    "reward": 0.0 if dead else round(float(r), 4), "reward_std": 0.0 if dead else 0.3,
                    "frac_reward_zero_std": 1.0 if dead else 0.1, "entropy": round(0.5 - 0.002 * step, 4)})
    return out


class _Out(io.StringIO):
    """stdout of the watch, read by the writer thread while the watch writes it."""

    def lines(self) -> list[str]:
        return self.getvalue().splitlines()

    def wait_for(self, pattern: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(re.search(pattern, line) for line in self.lines()):
            if time.monotonic() > deadline:
                raise AssertionError(f"no line matching {pattern!r} within {timeout} s; got {self.lines()}")
            time.sleep(0.01)


def _watch(monkeypatch, argv: list[str], writer=None) -> tuple[int, list[str], str]:
    """Run ``grpo-dynamics watch`` here with ``writer(out)`` in a thread; returns (status, stdout lines, stderr)."""
    out, err = _Out(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    failed: list[BaseException] = []

    def run():
        try:
            writer(out)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            failed.append(exc)
            _thread.interrupt_main()

    thread = threading.Thread(target=run, daemon=True) if writer else None
    if thread:
        thread.start()
    status = main(["watch", *argv])
    if thread:
        thread.join(10)
    if failed:
        raise failed[0]
    return status, out.lines(), err.getvalue()


def _append(path, text: str) -> None:
    """One write: the watch never sees a piece half written unless a test means it to."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _findings(lines) -> list[tuple[int, str, str]]:
    return [(int(m[2]), m[1], m[3]) for m in (re.match(r"\[(\w+)\] step (\d+): (\w+) ", x) for x in lines) if m]


def _status_steps(lines) -> list[int]:
    return [int(m[1]) for m in (re.match(r"step +(\d+)(?:/\d+)?  ", x) for x in lines) if m]


def _first_with(rows, mode: str, severity: str) -> int:
    """The first step at which diagnose, given the rows up to it, reports ``mode`` at ``severity``."""
    for n in range(5, len(rows) + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = diagnose(from_records(rows[:n]), forecast=False, curvature=False, n_boot=0)
        if any(f.mode == mode and f.severity == severity for f in d.findings):
            return rows[n - 1]["step"]
    raise AssertionError(f"{mode} {severity} never found")


def test_growing_jsonl_says_each_finding_once_when_it_shows(tmp_path, monkeypatch):
    rows = _rows(60)
    log = tmp_path / "metrics.jsonl"
    log.write_text(_jsonl(rows[:5]))  # the fewest steps the checks run on
    pieces = [rows[i:i + 5] for i in range(5, 30, 5)] + [[r] for r in rows[30:40]] + [rows[40:50], rows[50:60]]

    def writer(out):
        out.wait_for(r"^step +5/60  ")
        for piece in pieces:
            _append(log, _jsonl(piece))
            out.wait_for(rf"^step +{piece[-1]['step']}/60  ")

    status, lines, _ = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--max-steps", "60", "--idle", "60"],
                              writer)
    # the zero spread that starts at step 31 is a warning once 5 such steps are logged, critical at 7 (the
    # smoothing of the zero-spread fraction over 5 steps), and each is said once, however many polls follow
    assert _first_with(rows, "advantage_degeneration", "warning") == 35
    assert _first_with(rows, "advantage_degeneration", "critical") == 37
    assert _first_with(rows, "not_learning", "critical") == 37
    assert _findings(lines) == [(35, "warning", "advantage_degeneration"), (37, "critical", "not_learning"),
                                (37, "critical", "advantage_degeneration")]
    assert _status_steps(lines) == [5, 10, 15, 20, 25, 30, *range(31, 41), 50, 60]
    by_step = {s: x for s, x in zip(_status_steps(lines), [x for x in lines if re.match(r"step +\d", x)])}
    assert by_step[30].endswith("  healthy")
    mean = sum(r["reward"] for r in rows[20:30]) / 10
    assert f"  reward {rows[29]['reward']:.4g} (mean of last 10: {mean:.4g})  " in by_step[30]
    assert "reward 0 (mean of last 10: 0)" in by_step[60] and "NOT healthy: " in by_step[60]
    assert lines[-1] == ("end at step 60 (its max_steps 60 reached): NOT healthy: not_learning, "
                         "advantage_degeneration")
    assert status == 1
    assert not any("cannot read" in x for x in lines)


def test_real_console_log_growing_until_training_finishes(tmp_path, monkeypatch):
    """A real TRL console log (run 01: Qwen2.5-7B LoRA at lr 1e-4, whose reward collapses after step ~100),
    written dict by dict: each failure mode said at the step its severity first shows, never twice."""
    lines_01 = real_run("01").path.read_text().splitlines(keepends=True)
    dicts = [i for i, x in enumerate(lines_01) if x.startswith("{'loss'")]
    assert len(dicts) == 40  # steps 5, 10, ..., 200
    log = tmp_path / "train.log"
    log.write_text("".join(lines_01[:dicts[4] + 1]))  # up to step 25: the checks need 5 steps

    def writer(out):
        out.wait_for(r"^step 25  ")
        for k in range(5, 40):
            _append(log, "".join(lines_01[dicts[k - 1] + 1:dicts[k] + 1]))
            out.wait_for(rf"^step {5 * (k + 1)}  ")
        _append(log, "".join(lines_01[dicts[39] + 1:]))  # the end-of-training summary and the job's last lines

    status, lines, _ = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--idle", "60"], writer)
    assert _findings(lines) == [
        (25, "warning", "advantage_degeneration"), (45, "warning", "truncation"),
        (50, "critical", "entropy_explosion"), (55, "warning", "off_policy_mismatch"),
        (90, "warning", "not_learning"), (110, "warning", "policy_concentration"),
        (145, "critical", "not_learning"), (155, "critical", "off_policy_mismatch"),
        (170, "critical", "truncation"), (175, "critical", "advantage_degeneration")]
    assert _status_steps(lines) == list(range(25, 201, 5))
    assert lines[-1].startswith("end at step 200 (training finished: its end-of-training summary is logged): "
                                "NOT healthy: not_learning, ")
    assert status == 1


def test_a_log_created_after_the_watch_starts(tmp_path, monkeypatch):
    log = tmp_path / "later" / "metrics.jsonl"

    def writer(out):
        out.wait_for("does not exist yet")
        time.sleep(0.3)  # several polls of a missing file: said once
        log.parent.mkdir()
        tmp = tmp_path / "tmp.jsonl"
        tmp.write_text(_jsonl(_rows()[:30]))
        os.replace(tmp, log)

    status, lines, _ = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--idle", "0.5"], writer)
    assert sum("does not exist yet; waiting for it" in x for x in lines) == 1
    assert _status_steps(lines) == [30]
    assert lines[-1] == "end at step 30 (no change for 0.5 s): healthy"
    assert status == 0


def test_a_log_that_never_appears_is_an_error_at_the_end(tmp_path, monkeypatch):
    status, lines, err = _watch(monkeypatch, [str(tmp_path / "none.jsonl"), "--interval", INTERVAL, "--idle", "0.3"])
    assert status == 2
    assert lines[-1] == "end (no change for 0.3 s): nothing diagnosed"
    assert "none.jsonl: no such file" in err


def test_a_half_written_last_line_keeps_the_previous_state(tmp_path, monkeypatch):
    rows = _rows()
    log = tmp_path / "metrics.jsonl"
    log.write_text(_jsonl(rows[:30]))
    line = json.dumps(rows[30]) + "\n"

    def writer(out):
        out.wait_for(r"^step 30  ")
        _append(log, line[:25])  # the line cut inside a number
        time.sleep(0.5)  # five polls of the cut line
        assert out.lines()[-1].startswith("step 30  ")  # nothing said about it
        _append(log, line[25:])

    status, lines, _ = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--idle", "0.5"], writer)
    assert _status_steps(lines) == [30, 31]
    assert not any("cannot read" in x for x in lines)
    assert status == 0


def test_a_csv_row_counts_once_its_line_is_complete(tmp_path, monkeypatch):
    rows = _rows()
    cols = list(rows[0])
    log = tmp_path / "log.csv"
    log.write_text(",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows[:30]))
    row = {**rows[29], "step": 31, "reward": 0.45}  # cut after "0.4", the reward would read as 0.4
    full = ",".join(str(row[c]) for c in cols) + "\n"
    cut = full.index(",0.45,") + 4

    def writer(out):
        out.wait_for(r"^step 30  ")
        _append(log, full[:cut])  # "31,...,0.4"
        time.sleep(0.5)
        assert out.lines()[-1].startswith("step 30  ")
        _append(log, full[cut:])

    status, lines, _ = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--idle", "0.5"], writer)
    assert _status_steps(lines) == [30, 31]
    assert [x for x in lines if x.startswith("step 31")][0].startswith("step 31  reward 0.45 ")


def _trainer_state(rows, max_steps: int) -> str:
    return json.dumps({"global_step": rows[-1]["step"], "max_steps": max_steps, "log_history": rows}, indent=2)


def test_a_trainer_state_caught_half_rewritten(tmp_path, monkeypatch):
    """TRL rewrites trainer_state.json in place at each checkpoint: a read may find it cut off. A cut that
    lasts beyond a poll is said once; the watch keeps its step and ends at max_steps."""
    rows = _rows()
    log = tmp_path / "trainer_state.json"
    log.write_text(_trainer_state(rows[:30], 40))

    def writer(out):
        out.wait_for(r"^step 30/40  ")
        text = _trainer_state(rows[:35], 40)
        log.write_text(text[: len(text) // 2])
        time.sleep(0.6)
        log.write_text(text)
        out.wait_for(r"^step 35/40  ")
        log.write_text(_trainer_state(rows[:40], 40))

    status, lines, _ = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--idle", "60"], writer)
    said = [x for x in lines if "cannot read it now" in x]
    assert len(said) == 1 and "truncated" in said[0] and said[0].endswith("; keeping step 30; trying again as it "
                                                                          "changes")
    assert _status_steps(lines) == [30, 35, 40]
    assert lines[-1].startswith("end at step 40 (its max_steps 40 reached): NOT healthy: ")
    assert status == 1


def test_once(tmp_path, monkeypatch):
    path = str(real_run("01").path)
    status, lines, _ = _watch(monkeypatch, [path, "--once"])
    assert status == 1
    assert [(m, s) for _, s, m in _findings(lines)] == [
        ("not_learning", "critical"), ("off_policy_mismatch", "critical"), ("truncation", "critical"),
        ("entropy_explosion", "critical"), ("advantage_degeneration", "critical")]
    assert all(step == 200 for step, _, _ in _findings(lines))
    assert lines[-1].startswith("end at step 200 (one pass): NOT healthy: ")
    assert not any(x.startswith("watching") for x in lines)
    # a healthy real run (run 20: ms-swift full fine-tune, 1150 of 1848 planned steps) exits 0; --json
    status, lines, _ = _watch(monkeypatch, [str(real_run("20").path), "--once", "--json"])
    events = [json.loads(x) for x in lines]
    assert status == 0
    assert [e["event"] for e in events] == ["status", "end"]
    assert events[0]["step"] == 1150 and events[0]["max_steps"] == 1848 and events[0]["verdict"] == "healthy"
    assert events[0]["reward"] == 2.0 and events[0]["reward_mean_steps"] == 10
    assert events[1] == {"event": "end", "reason": "one pass", "step": 1150, "verdict": "healthy", "modes": [],
                         "exit_status": 0}
    # a missing file is an error at once, as diagnose
    status, _, err = _watch(monkeypatch, [str(tmp_path / "none.jsonl"), "--once"])
    assert status == 2 and "no such file" in err


def test_once_with_forecast_and_info(monkeypatch):
    status, lines, _ = _watch(monkeypatch, [str(real_run("20").path), "--once", "--forecast", "--severity", "info"])
    assert status == 0
    assert _findings(lines) == [(1150, "info", "saturation")]
    assert re.search(r"^step 1150/1848  reward 2 \(mean of last 10: 1\.979\)  healthy  end ~1\.959 "
                     r"\[1\.451, 2\.467\]$", lines[1])


def test_idle_on_a_log_that_does_not_change(monkeypatch):
    t0 = time.monotonic()
    status, lines, _ = _watch(monkeypatch, [str(real_run("20").path), "--interval", INTERVAL, "--idle", "0.4"])
    took = time.monotonic() - t0
    assert status == 0
    assert lines[0].startswith("watching ") and _status_steps(lines) == [1150]
    assert lines[-1] == "end at step 1150 (no change for 0.4 s): healthy"
    assert 0.4 <= took < 10


def test_ctrl_c_prints_a_last_line_and_exits_130(tmp_path, monkeypatch):
    log = tmp_path / "metrics.jsonl"
    log.write_text(_jsonl(_rows()[:40]))

    def writer(out):
        out.wait_for(r"^step 40  ")
        _thread.interrupt_main()

    # Ctrl-C reaches the command as KeyboardInterrupt only under Python's own SIGINT handler; a test run
    # earlier in this process (an event loop's) may have left another one installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        status, lines, err = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--idle", "60"], writer)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert status == 130
    assert lines[-1] == "end at step 40 (interrupted): NOT healthy: not_learning, advantage_degeneration"
    assert "grpo-dynamics watch: interrupted" in err


def test_growing_tensorboard_folder_as_json(tmp_path, monkeypatch):
    """A TensorBoard folder that does not exist yet, then grows as tensorboardX writes (its thread writes the
    events in the order they were added and flushes every 0.05 s here): the same findings at the same steps as
    the JSONL file of these rows."""
    tensorboardX = pytest.importorskip("tensorboardX")
    rows = _rows(40)
    folder = tmp_path / "runs"
    pieces = [rows[:10], rows[10:20], rows[20:30]] + [[r] for r in rows[30:40]]

    def writer(out):
        out.wait_for('"event": "waiting"')
        tb = tensorboardX.SummaryWriter(str(folder / "run1"), flush_secs=0.05)
        try:
            for piece in pieces:
                for r in piece:
                    # the reward last: a step read before its reward shows the reward of the step before
                    for key in sorted(r, key=lambda k: k == "reward"):
                        if key != "step":
                            tb.add_scalar(f"train/{key}", r[key], r["step"])
                tb.flush()
                out.wait_for(rf'"event": "status", "step": {piece[-1]["step"]},')
        finally:
            tb.close()

    status, lines, _ = _watch(monkeypatch, [str(folder), "--interval", INTERVAL, "--max-steps", "40", "--json",
                                            "--idle", "60"], writer)
    events = [json.loads(x) for x in lines]
    kinds = [e["event"] for e in events]
    assert kinds.count("waiting") == 1 and kinds[0] == "waiting"
    steps = [e["step"] for e in events if e["event"] == "status"]
    assert steps == sorted(set(steps)) and {10, 20, *range(30, 41)} <= set(steps)  # a piece may be read halfway
    found = [(e["step"], e["severity"], e["mode"]) for e in events if e["event"] == "finding"]
    assert found == [(35, "warning", "advantage_degeneration"), (37, "critical", "not_learning"),
                     (37, "critical", "advantage_degeneration")]
    assert events[-1] == {"event": "end", "reason": "its max_steps 40 reached", "step": 40, "verdict": "unhealthy",
                          "modes": ["not_learning", "advantage_degeneration"], "exit_status": 1}
    assert status == 1
    assert "unreadable" not in kinds


def test_fingerprint_of_a_folder_follows_its_files(tmp_path):
    assert fingerprint(tmp_path / "none") is None
    (tmp_path / "a").mkdir()
    before = fingerprint(tmp_path)
    (tmp_path / "a" / "events.out.tfevents.1").write_bytes(b"x")
    after = fingerprint(tmp_path)
    assert before == () and after[0][:2] == (os.path.join("a", "events.out.tfevents.1"), 1)


@pytest.mark.parametrize("argv, message", [
    (["--interval", "0.05"], "`--interval` must be a finite number in [0.1, 86400]; got '0.05'"),
    (["--idle", "0"], "`--idle` must be a finite number > 0; got '0'"),
    (["--reward-range", "0", "1"], "`--reward-range` is the range the forecast is shown within"),
    (["--max-steps", "0"], "`--max-steps`"),
    (["--format", "nope"], "`--format`"),
])
def test_bad_arguments_are_refused_before_any_wait(tmp_path, monkeypatch, argv, message):
    status, lines, err = _watch(monkeypatch, [str(tmp_path / "none.jsonl"), *argv])
    assert status == 2 and lines == []
    assert message in err


@pytest.mark.parametrize("flag", ["--interval", "--idle", "--max-steps", "--group-size", "--num-prompts"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e308", "1e-320", "abc", "99999999999999999999999",
                                   "1e400"])
def test_every_numeric_flag_refuses_or_takes_every_value(monkeypatch, flag, value):
    """A one-line refusal naming the flag (2) or a result (one pass), never a crash (70)."""
    status, lines, err = _watch(monkeypatch, [str(real_run("01").path), "--once", flag, value])
    assert status in (1, 2), (status, err)
    if status == 2:
        assert err.count("\n") == 1 and flag in err, err
    else:
        assert lines[-1].startswith("end at step 200 (one pass): NOT healthy: ")


def test_an_eval_metric_the_log_has_not_logged_yet(tmp_path, monkeypatch):
    """Eval rows come every N steps: until the first, --eval-metric is left to its default, said once."""
    rows = _rows()
    log = tmp_path / "metrics.jsonl"
    log.write_text(_jsonl(rows[:20]))

    def writer(out):
        out.wait_for(r'"event": "status", "step": 20,')
        _append(log, _jsonl(rows[20:25]))
        out.wait_for(r'"event": "status", "step": 25,')
        _append(log, json.dumps({"step": 25, "eval_loss": 0.1, "eval_reward": 0.61}) + "\n" + _jsonl(rows[25:30]))
        out.wait_for(r'"event": "status", "step": 30,')

    status, lines, _ = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--eval-metric", "reward", "--json",
                                            "--idle", "0.5"], writer)
    events = [json.loads(x) for x in lines]
    notes = [e for e in events if e["event"] == "note"]
    assert len(notes) == 1 and notes[0]["option"] == "--eval-metric"
    assert "`--eval-metric` 'reward' is not a column of the eval table" in notes[0]["reason"]
    assert [e["step"] for e in events if e["event"] == "status"] == [20, 25, 30]
    assert events[-1]["verdict"] == "healthy" and status == 0
    # a name the eval rows do not have (a typo, or a metric logged later) is said with the columns they have
    status, lines, _ = _watch(monkeypatch, [str(log), "--once", "--eval-metric", "accuracy"])
    assert status == 0
    assert lines[0].startswith("`--eval-metric` 'accuracy' is not a column of the eval table of ")
    assert lines[0].endswith("; its eval columns: loss, reward; diagnosed without it until the log has it")


def test_a_log_rewritten_from_an_earlier_step_and_a_second_run(tmp_path, monkeypatch):
    """A run resumed from a checkpoint rewrites its log from there (the training callback does): the status
    follows the step back. A second run appended to the same file, its step counter from 1 again, is two
    runs: an error naming them (the watch does not choose; --run does), not a wait."""
    rows = _rows()
    log = tmp_path / "metrics.jsonl"
    log.write_text(_jsonl(rows[:30]))

    def writer(out):
        out.wait_for(r"^step 30  ")
        tmp = tmp_path / "tmp.jsonl"
        tmp.write_text(_jsonl(rows[:20]))
        os.replace(tmp, log)
        out.wait_for(r"^step 20  ")
        _append(log, _jsonl(rows[20:25]))
        out.wait_for(r"^step 25  ")
        _append(log, _jsonl(rows[:5]))

    status, lines, err = _watch(monkeypatch, [str(log), "--interval", INTERVAL, "--idle", "60"], writer)
    assert _status_steps(lines) == [30, 20, 25]
    assert status == 2 and "the step counter starts again" in err and "run='last'" in err
    status, lines, _ = _watch(monkeypatch, [str(log), "--once", "--run", "1"])
    assert status == 0 and _status_steps(lines) == [25]
