"""Logs as they are written in the wild: a step column under its own name, a console log hard-wrapped by a
terminal, two runs appended in one file, TensorBoard event files.

Each case writes a small log (or cuts one from a real run, named in the test) and checks the steps and
values the reader gives, and the refusals and their wording.
"""

from __future__ import annotations

import json
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from grpo_core.errors import DataError
from grpo_core.runs import datasets
from grpo_core.runs.logs import LogWarning, read_log
from grpo_core.runs.logs.aliases import restart_rows
from grpo_core.runs.logs.console import unwrap_dicts
from grpo_dynamics.cli import main


def write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        return read_log(path, **kw)


def table(header: str, rows) -> str:
    return header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)


# --- the step column by name ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["grpo_step", "optimizer_step", "iteration", "iter", "train/step"])
def test_a_step_column_named_like_one_is_the_step(tmp_path, name):
    path = write(tmp_path, "log.csv", table(f"{name},reward,loss", [(s, 0.1 * s, 0.5) for s in range(3, 9)]))
    log = read_log(path)
    assert log.train.index.tolist() == list(range(3, 9))
    assert log.train["reward"].tolist() == pytest.approx([0.1 * s for s in range(3, 9)], abs=1e-15)
    assert f"column {name!r} read as the step" in log.notes


def test_two_step_columns_that_disagree_are_refused_naming_both(tmp_path):
    path = write(tmp_path, "log.csv", table("grpo_step,optimizer_step,reward",
                                            [(s, 4 * s, 0.1 * s) for s in range(1, 7)]))
    with pytest.raises(DataError, match=r"'grpo_step', 'optimizer_step'.*--map step=grpo_step") as info:
        read_log(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
    log = read_log(path, mapping={"step": "optimizer_step"})  # the way out the message gives
    assert log.train.index.tolist() == [4 * s for s in range(1, 7)]


def test_two_step_columns_that_agree_are_one(tmp_path):
    path = write(tmp_path, "log.csv", table("grpo_step,optimizer_step,reward", [(s, s, 0.1 * s) for s in range(1, 7)]))
    assert read_log(path).train.index.tolist() == list(range(1, 7))


def test_wandb_step_gives_way_to_a_named_step(tmp_path):
    # W&B's `_step` counts the calls to wandb.log (here 3 per optimizer step)
    path = write(tmp_path, "history.csv", table("_step,grpo_step,reward", [(3 * s, s, 0.1 * s) for s in range(1, 7)]))
    log = read_log(path)
    assert log.train.index.tolist() == list(range(1, 7))
    assert any("'grpo_step' read as the step, not W&B's `_step`" in n for n in log.notes)
    only = write(tmp_path, "only.csv", table("_step,reward,loss", [(3 * s, 0.1 * s, 0.5) for s in range(1, 7)]))
    assert read_log(only).train.index.tolist() == [3 * s for s in range(1, 7)]  # nothing better


@pytest.mark.parametrize("name", ["time_per_step", "max_step", "num_steps", "tokens_per_step"])
def test_counts_and_rates_per_step_are_not_the_step(tmp_path, name):
    path = write(tmp_path, "log.csv", table(f"{name},reward,loss", [(100 + s, 0.1 * s, 0.5) for s in range(1, 7)]))
    with pytest.raises(DataError, match="no step column"):
        read_log(path)


def test_a_named_column_of_fractions_is_not_the_step(tmp_path):
    path = write(tmp_path, "log.csv", table("lr_step,reward,loss", [(0.5 * s, 0.1 * s, 0.5) for s in range(1, 7)]))
    with pytest.raises(DataError, match="no step column"):
        read_log(path)


# --- console logs hard-wrapped by a terminal --------------------------------------------------------------

def hard_wrap(text: str, width: int) -> str:
    """What a terminal that breaks every line at ``width`` characters captures."""
    return "\n".join("\n".join(ln[i:i + width] for i in range(0, len(ln), width)) if ln else ""
                     for ln in text.split("\n"))


@pytest.mark.parametrize("width", [80, 120])
def test_a_hard_wrapped_trl_console_log_reads_as_the_original(tmp_path, width):
    # run 04 (Caitlyn-Yin/grpo_norm easy_standard.log), every line broken at `width`: keys and numbers split
    text = datasets.real_run("04").path.read_text(encoding="utf-8")
    wrapped = hard_wrap(text, width)
    assert not re.search(r"\{'loss'[^{}\n]*\}", wrapped)  # no dict is left whole on one line
    ref = quiet(datasets.real_run("04").path)
    log = quiet(write(tmp_path, "wrapped.log", wrapped))
    assert len(log.train) == len(ref.train) == 200
    assert log.train.equals(ref.train)
    assert any(f"hard-wrapped by the terminal at {width} characters" in n for n in log.notes)


def test_unwrapping_needs_equal_widths_and_a_metric_dict():
    first = "{'loss': 0.1, 'grad_norm': 0.2, 'learning_rate': 1e-06, 'rew"
    ok = first + "\n" + "ard': 0.5}\n"
    assert unwrap_dicts(ok) == (first + "ard': 0.5}\n", 1, [len(first)])
    # a middle line of another width: not a terminal's wrap, left alone
    uneven = first + "\n" + "ard': 0.5, 'kl'" + "\n" + ": 0.1}\n"
    assert unwrap_dicts(uneven)[1] == 0
    # equal widths, but not a metrics dict
    other = "{'name': 'a', 'path': '/tmp/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'mo" + "\n" + "de': 1}\n"
    assert unwrap_dicts(other)[1] == 0


def test_unwrapping_is_linear_in_the_text():
    # 100,000 lines of one width, each opening a dict that never closes: each line is looked at once
    text = ("{'loss': 0.1, 'xxxxxxxxxxxxxxxxxxxxxxxx" + "\n") * 100_000
    t0 = time.process_time()
    out, n, _ = unwrap_dicts(text)
    assert time.process_time() - t0 < 2.0
    assert n == 0 and out == text


# --- runs appended one after the other ---------------------------------------------------------------------

def two_runs(tmp_path) -> Path:
    rows = [(s, round(0.001 * s, 6)) for s in range(1, 201)] + [(s, round(0.5 + 0.002 * s, 6)) for s in range(1, 151)]
    return write(tmp_path, "rewards.csv", table("step,reward", rows))


def test_a_restarting_step_counter_is_refused_listing_the_runs(tmp_path):
    path = two_runs(tmp_path)
    with pytest.raises(DataError) as info:
        read_log(path)
    message = str(info.value)
    assert "starts again 1 time(s)" in message and "2 runs one after the other" in message
    assert "run 1: data rows 1-200, steps 1..200; run 2: data rows 201-350, steps 1..150" in message
    assert "--run last" in message and "\n" not in message


@pytest.mark.parametrize("run, first, n", [("last", 0.502, 150), ("2", 0.502, 150), ("1", 0.001, 200),
                                           ("first", 0.001, 200)])
def test_run_chooses_one_of_the_appended_runs(tmp_path, run, first, n):
    log = read_log(two_runs(tmp_path), run=run)
    assert log.train.index.tolist() == list(range(1, n + 1))
    assert log.train["reward"].iloc[0] == first
    assert log.train["reward"].iloc[-1] == (0.8 if n == 150 else 0.2)
    assert any("the step counter starts again 1 time(s); read run" in note for note in log.notes)


def test_run_that_names_no_appended_run_is_refused(tmp_path):
    with pytest.raises(DataError, match=r"`run` '3' is not one of the 2 runs .*give 1..2 or 'last'"):
        read_log(two_runs(tmp_path), run="3")


def test_the_cli_refuses_appended_runs_and_reads_the_one_chosen(tmp_path, capsys):
    path = two_runs(tmp_path)
    # without --run each of the appended runs is diagnosed: one JSON record each
    assert main(["diagnose", str(path), "--no-forecast", "--json"]) in (0, 1, 3)
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["run"], r["steps"]) for r in records] == [("1", [1, 200]), ("2", [1, 150])]
    assert main(["diagnose", str(path), "--no-forecast", "--json", "--run", "last"]) in (0, 1, 3)  # a verdict
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == [1, 150] and "read run 2 of 2" in out["notes"][0]


def test_a_step_that_counts_within_each_epoch_is_named_as_a_possibility(tmp_path):
    rows = [(e, s, 0.1 * s) for e in (1, 2) for s in range(1, 6)]
    path = write(tmp_path, "epochs.csv", table("epoch,step,reward", rows))
    with pytest.raises(DataError, match=r"2 runs one after the other .*, or one run whose step counts within each "
                                        r"epoch .*--map step=COLUMN\); choose one with run='last'"):
        read_log(path)


@pytest.mark.parametrize("steps, cuts", [
    ([1, 2, 3, 1, 2], [3]),
    ([0, 1, 2, 0, 1, 2, 3, 0, 1], [3, 7]),
    ([1, 2, 3, 4, 5, 4, 5, 6], []),          # resumed from a checkpoint: merged, not split
    ([3, 4, 1, 2], []),                      # two halves in the wrong order share no step: sorted
    ([1, 5, 2, 3, 4, 6], []),                # shuffled
    ([1, 2, 3, 1], []),                      # one row after the drop: out of order, not a run
    ([1, 1, 2, 3, 1, 2], [4]),               # eval rows at one step
])
def test_where_a_step_counter_starts_again(steps, cuts):
    assert restart_rows(np.array(steps, float)) == cuts


# --- TensorBoard event files -------------------------------------------------------------------------------

def f32(x: float) -> float:
    """What an event file holds of ``x`` (``simple_value`` is a 32-bit float)."""
    return float(np.float32(x))


def write_events(folder: Path, scalars: dict[int, dict[str, float]], when: int | None = None) -> Path:
    """One event file as ``torch.utils.tensorboard``/tensorboardX write it: one event per scalar; named
    ``events.out.tfevents.<when>.host.1.0`` when ``when`` is given (the time that orders a run's files)."""
    tbx = pytest.importorskip("tensorboardX")  # in requirements.txt; the extra grpo-dynamics[tensorboard]
    folder.mkdir(parents=True, exist_ok=True)
    before = set(folder.glob("*tfevents*"))
    with tbx.SummaryWriter(str(folder)) as w:
        for step, values in scalars.items():
            for tag, value in values.items():
                w.add_scalar(tag, value, step)
    (path,) = set(folder.glob("*tfevents*")) - before
    if when is not None:
        path = path.rename(folder / f"events.out.tfevents.{when}.host.1.0")
    return path


def trl_scalars(n: int = 8) -> dict[int, dict[str, float]]:
    out = {}
    for s in range(1, n + 1):
        out[s] = {"train/loss": 0.01 * s, "train/reward": 0.1 * s, "train/reward_std": 0.3,
                  "train/rewards/acc/mean": 0.1 * s, "train/kl": 0.002 * s, "train/grad_norm": 0.5 + s,
                  "train/learning_rate": 1e-6}
        if s % 4 == 0:
            out[s]["eval/reward"] = 0.05 * s
    return out


def test_a_trl_tensorboard_run(tmp_path):
    path = write_events(tmp_path / "runs" / "Dec05_12-00-00_host", trl_scalars())
    for given in (path, tmp_path / "runs", tmp_path):  # the file, its folder, a folder above
        log = quiet(given)
        assert log.container == "tensorboard" and log.format == "trl"
        assert log.train.index.tolist() == list(range(1, 9))
        assert log.train["reward"].tolist() == [f32(0.1 * s) for s in range(1, 9)]
        assert log.train["kl"].tolist() == [f32(0.002 * s) for s in range(1, 9)]
        assert log.train["grad_norm"].tolist() == [f32(0.5 + s) for s in range(1, 9)]
        assert log.train["reward/acc"].tolist() == [f32(0.1 * s) for s in range(1, 9)]
        assert log.eval.index.tolist() == [4, 8]
        assert log.eval["reward"].tolist() == [f32(0.2), f32(0.4)]
    assert any("32-bit floats" in n for n in log.notes)


def test_a_verl_run_in_two_event_files_is_merged_by_step(tmp_path):
    # verl writes to tensorboard_log/<project>/<experiment>; a restarted job adds a second file there
    run = tmp_path / "tensorboard_log" / "gsm8k" / "qwen_grpo"
    a = {s: {"critic/score/mean": 0.1 * s, "actor/entropy": 1.0 - 0.05 * s, "actor/pg_loss": 0.01} for s in range(1, 6)}
    b = {s: {"critic/score/mean": 0.2 * s, "actor/entropy": 0.9, "actor/pg_loss": 0.02} for s in range(4, 9)}
    write_events(run, b, when=1_700_000_500)  # written second; its name says so
    write_events(run, a, when=1_700_000_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = read_log(tmp_path / "tensorboard_log")
    messages = " | ".join(str(w.message) for w in caught)
    assert "2 step(s) logged more than once with different values (train; first at step 4)" in messages
    assert log.format == "verl"
    assert log.train.index.tolist() == list(range(1, 9))
    # steps 4 and 5 are in both files: the later file's values are kept
    want = [f32(0.1 * s) for s in range(1, 4)] + [f32(0.2 * s) for s in range(4, 9)]
    assert log.train["reward"].tolist() == want
    assert log.train["entropy"].tolist() == [f32(1.0 - 0.05 * s) for s in range(1, 4)] + [f32(0.9)] * 5
    assert len(log.meta["tensorboard_files"]) == 2
    assert log.meta["tensorboard_files"][0].endswith("1700000000.host.1.0")


def test_a_folder_of_two_runs_is_listed_and_one_chosen(tmp_path):
    write_events(tmp_path / "runs" / "a", {s: {"train/reward": 0.1 * s} for s in range(1, 4)})
    write_events(tmp_path / "runs" / "b", {s: {"train/reward": 0.3 * s} for s in range(1, 6)})
    with pytest.raises(DataError, match=r"event files of 2 runs, one per folder \(1: 'a' \(1 file\(s\)\); "
                                        r"2: 'b' \(1 file\(s\)\)\); choose one with run='b'"):
        read_log(tmp_path / "runs")
    for run, n, scale in (("b", 5, 0.3), ("last", 5, 0.3), ("1", 3, 0.1), ("a", 3, 0.1)):
        log = read_log(tmp_path / "runs", run=run)
        assert log.train["reward"].tolist() == [f32(scale * s) for s in range(1, n + 1)]
    with pytest.raises(DataError, match="`run` 'c' is not one of the run folders"):
        read_log(tmp_path / "runs", run="c")


def test_slime_raw_reward_is_the_reward_not_the_normalised_one(tmp_path):
    scalars = {s: {"rollout/raw_reward": 0.1 * s, "rollout/rewards": 0.0, "train/loss": 0.01} for s in range(1, 5)}
    log = quiet(write_events(tmp_path / "slime", scalars))
    assert log.train["reward"].tolist() == [f32(0.1 * s) for s in range(1, 5)]
    assert log.train["rollout/rewards"].tolist() == [0.0] * 4


def test_an_event_file_cut_off_keeps_the_records_before(tmp_path):
    path = write_events(tmp_path / "run", {s: {"train/reward": 0.1 * s} for s in range(1, 6)})
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    with pytest.warns(LogWarning, match="the last record is cut off"):
        log = read_log(path)
    assert log.train["reward"].tolist() == [f32(0.1 * s) for s in range(1, 5)]


def test_a_file_named_as_an_event_file_that_is_not_one(tmp_path):
    path = write(tmp_path, "events.out.tfevents.1700000000.host", "step,reward\n1,0.1\n2,0.2\n")
    with pytest.raises(DataError, match="is not a TensorBoard event file or is damaged at byte 0"):
        read_log(path)


def test_without_the_library_the_message_names_the_extra(tmp_path, monkeypatch):
    import sys

    path = write_events(tmp_path / "run", {1: {"train/reward": 0.1}})
    for name in ("tensorboardX", "tensorboardX.proto.event_pb2", "tensorboardX.record_writer", "tensorboard",
                 "tensorboard.compat.proto.event_pb2", "tensorboard.compat.tensorflow_stub.pywrap_tensorflow"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(DataError, match=r"pip install 'grpo-dynamics\[tensorboard\]'"):
        read_log(path)



def test_tensor_scalars_as_tensorflow_2_writes_them(tmp_path):
    # tf.summary.scalar writes a one-element tensor, not simple_value: a float tensor, a double in raw bytes
    tbx = pytest.importorskip("tensorboardX")
    from tensorboardX.proto.summary_pb2 import Summary
    from tensorboardX.proto.tensor_pb2 import TensorProto

    with tbx.SummaryWriter(str(tmp_path / "tf2")) as w:
        for s in range(1, 4):
            w._get_file_writer().add_summary(Summary(value=[
                Summary.Value(tag="train/reward", tensor=TensorProto(dtype=1, float_val=[0.25 * s])),
                Summary.Value(tag="train/kl", tensor=TensorProto(dtype=2,
                                                                 tensor_content=np.float64(0.1 * s).tobytes())),
                Summary.Value(tag="train/loss", tensor=TensorProto(dtype=1, float_val=[0.5])),
            ]), s)
        w.add_histogram("weights", np.arange(10.0), 1)
    log = quiet(tmp_path / "tf2")
    assert log.train["reward"].tolist() == [0.25, 0.5, 0.75]
    assert log.train["kl"].tolist() == [0.1, 0.2, 0.30000000000000004]  # float64 kept exactly
    assert "left out 1 tag(s) that are not scalars (histograms, images, text): weights" in log.notes


def test_a_run_column_with_a_step_found_by_name(tmp_path):
    rows = [(arm, s, (0.1 if arm == "a" else 0.2) * s) for arm in ("a", "b") for s in range(1, 6)]
    path = write(tmp_path, "arms.csv", table("arm,grpo_step,reward", rows))
    with pytest.raises(DataError, match=r"2 runs in column 'arm'"):
        read_log(path)
    assert read_log(path, run="b").train["reward"].tolist() == pytest.approx([0.2 * s for s in range(1, 6)], abs=1e-15)


def test_rows_after_a_drop_that_log_other_metrics_are_one_runs_evaluations():
    """Training rows 1..100, then the evaluations at steps 0, 20, ..., 100 written after them (verl logs
    the initial policy's eval at step 0): the step goes down, but the rows after the drop share no metric
    with those before, so this is one run with an eval table, not two runs."""
    from grpo_core.runs.logs import from_records

    recs = [{"step": s, "reward": 0.1 + 0.001 * s} for s in range(1, 101)]
    recs += [{"step": s, "eval_reward": 0.5} for s in range(0, 101, 20)]
    log = from_records(recs)
    assert log.train.index.tolist() == list(range(1, 101)) and log.eval.index.tolist() == list(range(0, 101, 20))
    with pytest.raises(DataError, match="starts again 1 time"):  # the same metric again from step 1: two runs
        from_records(recs[:100] + [{"step": s, "reward": 0.2} for s in range(1, 51)])
