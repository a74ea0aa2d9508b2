"""W&B run files (``run-<id>.wandb``): four real runs as they were committed, a folder of several runs, the
missing library, damaged and cut-off files.

The real runs: two of TON (TRL 0.15.2 ``GRPOTrainer``, Qwen2.5-VL-3B; one learning the format reward, one dead)
and two of ProRAG (``RAGTrainer``, a subclass of TRL's ``GRPOTrainer``, its rewards under its own keys). Their
values are checked against the files W&B wrote beside them (``wandb-summary.json``, the training dicts printed
in ``output.log``), read here without W&B.
"""

from __future__ import annotations

import ast
import builtins
import json
import shutil
import struct
import warnings
import zlib
from pathlib import Path

import pytest

from grpo_core.errors import DataError
from grpo_core.runs.datasets import tracker_run_path
from grpo_core.runs.logs import LogWarning, read_log, wandb_files
from grpo_dynamics.cli import main

RUN_40 = "40-wandb-lilinwz-prorag-rlbczdro"
RUN_41 = "41-wandb-lilinwz-prorag-981wi271"
RUN_42 = "42-wandb-kokolerk-ton-8m4eakd6"
RUN_43 = "43-wandb-kokolerk-ton-vybm96cb"
REWARD = {"reward": "rollout/outcome_reward_mean"}


def quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        return read_log(path, **kw)


def run_folder(name: str) -> Path:
    (folder,) = [p for p in tracker_run_path(name).iterdir() if p.is_dir()]
    return folder


def console_dicts(path: Path) -> list[dict]:
    """The training dicts the trainer printed (one a line starting with ``{'loss'``)."""
    return [ast.literal_eval(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("{'loss'")]


# --- the real runs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, steps", [(RUN_42, 13), (RUN_43, 9)])
def test_trl_runs_read_as_trl_and_agree_with_their_console_log_and_summary(name, steps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a whole run reads without a warning
        log = read_log(tracker_run_path(name))
    assert log.container == "wandb" and log.format == "trl" and log.reward_std_kind == "group_mean_std"
    assert log.train.index.tolist() == list(range(1, steps + 1))
    printed = console_dicts(run_folder(name) / "files" / "output.log")
    assert len(printed) == steps
    for step, d in enumerate(printed, 1):  # the dicts TRL printed, one per step (logging_steps=1)
        for key in ("reward", "reward_std", "kl", "loss", "grad_norm", "completion_length"):
            assert log.train[key][step] == d[key], (step, key)
        assert log.train["reward/accuracy_reward"][step] == d["rewards/accuracy_reward"]
    summary = json.loads((run_folder(name) / "files" / "wandb-summary.json").read_text())
    assert summary["train/global_step"] == steps
    for key in ("reward", "reward_std", "kl", "loss", "learning_rate"):
        assert log.train[key][steps] == summary[f"train/{key}"]


def test_the_trl_version_comes_from_the_run_requirements():
    log = quiet(tracker_run_path(RUN_42))
    assert log.meta["trl_version"] == "0.15.2"  # files/requirements.txt: trl==0.15.2
    assert "reward_std is the mean per-group std (TRL 0.15.2)" in log.notes


def test_run_42_learns_its_format_reward():
    reward = quiet(tracker_run_path(RUN_42)).train["reward"]
    assert reward[1] == reward[2] == 0.0078125
    assert reward[11] == 0.875 and reward[13] == 0.84375
    assert (quiet(tracker_run_path(RUN_42)).train["reward/accuracy_reward"] == 0).all()


def test_run_43_is_a_dead_run_and_diagnose_says_so(capsys):
    log = quiet(tracker_run_path(RUN_43))
    for key in ("reward", "reward_std", "loss", "grad_norm", "kl"):
        assert (log.train[key] == 0).all(), key
    rc = main(["diagnose", str(tracker_run_path(RUN_43)), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    found = {f["mode"]: f["severity"] for f in out["findings"]}
    assert found.get("not_learning") == "critical" and found.get("advantage_degeneration") == "critical"


def test_run_40_reads_with_the_trainer_step_and_agrees_with_its_summary():
    log = quiet(tracker_run_path(RUN_40))
    assert log.container == "wandb"
    assert log.train.index.tolist() == [0, 10, 20, 30, 40, 50, 60, 70, 80]
    reward = log.train["rollout/outcome_reward_mean"]
    assert reward[10] == 0.653125 and reward[40] == 0.496875
    assert min(reward.dropna()) == 0.41875 and max(reward.dropna()) == 0.653125
    summary = json.loads((run_folder(RUN_40) / "files" / "wandb-summary.json").read_text())
    assert summary["train/global_step"] == 80
    assert reward[80] == summary["train/rollout/outcome_reward_mean"] == 0.434375
    assert log.train["loss"][80] == summary["train/loss"]
    assert log.train["learning_rate"][80] == summary["train/learning_rate"]
    assert any("`train/global_step`" in n for n in log.notes)
    assert log.meta["wandb"]["id"] == "rlbczdro" and log.meta["wandb"]["project"] == "ProRAG"
    assert "max_steps" not in log.meta  # the config's max_steps is -1 (epochs decide)


def test_run_40_reward_by_mapping():
    log = quiet(tracker_run_path(RUN_40), mapping=REWARD)
    assert log.train["reward"][80] == 0.434375


def test_run_41_is_cut_off_and_agrees_with_its_console_log():
    folder = tracker_run_path(RUN_41)
    with pytest.warns(LogWarning, match="ends inside a record"):
        log = read_log(folder)
    assert log.train.index.tolist() == list(range(22))
    printed = console_dicts(run_folder(RUN_41) / "files" / "output.log")
    assert len(printed) == 21
    for step, d in enumerate(printed, 1):  # one printed dict per step, from step 1
        assert log.train["rollout/outcome_reward_mean"][step] == d["rollout/outcome_reward_mean"]
        assert log.train["loss"][step] == d["loss"]
    assert log.train["rollout/outcome_reward_mean"][21] == -0.875
    assert log.train["rollout/outcome_reward_mean"][20] == 1.0625


@pytest.mark.parametrize("name", [RUN_40, RUN_41, RUN_42, RUN_43])
@pytest.mark.parametrize("how", ["folder", "run folder", "file"])
def test_the_file_the_run_folder_and_the_store_folder_read_alike(name, how):
    folder = run_folder(name)
    path = {"folder": tracker_run_path(name), "run folder": folder,
            "file": next(folder.glob("*.wandb"))}[how]
    assert quiet(path).train.equals(quiet(tracker_run_path(name)).train)


@pytest.mark.parametrize("name", [RUN_40, RUN_41, RUN_42])
def test_diagnose_runs_on_the_real_runs(name, capsys):
    mapping = ["--map", "reward=rollout/outcome_reward_mean"] if name in (RUN_40, RUN_41) else []
    rc = main(["diagnose", str(tracker_run_path(name)), *mapping, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc not in (2, 70)
    assert out["format"] and out["verdict"] in ("healthy", "inconclusive", "findings")


# --- several runs in a folder ---------------------------------------------------------------------------

@pytest.fixture
def two_runs(tmp_path) -> Path:
    wandb = tmp_path / "wandb"
    wandb.mkdir()
    for name in (RUN_42, RUN_43):
        src = run_folder(name)
        shutil.copytree(src, wandb / src.name)
    (wandb / "latest-run").symlink_to(wandb / run_folder(RUN_42).name, target_is_directory=True)
    return tmp_path


def test_a_folder_of_two_runs_lists_them_and_refuses_to_guess(two_runs):
    assert wandb_files.run_names(two_runs) == ["wandb/run-20250318_105822-vybm96cb",
                                               "wandb/run-20250318_111614-8m4eakd6"]  # latest-run is no third
    with pytest.raises(DataError, match=r"2 W&B runs .*run='8m4eakd6'.*--run 8m4eakd6") as info:
        read_log(two_runs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("run, steps", [("vybm96cb", 9), ("run-20250318_105822-vybm96cb", 9), ("1", 9),
                                        ("last", 13), ("8m4eakd6", 13), ("wandb/run-20250318_111614-8m4eakd6", 13)])
def test_run_chooses_one_by_id_folder_number_or_last(two_runs, run, steps):
    log = quiet(two_runs / ("wandb" if run.startswith(("run", "vyb")) else ""), run=run)
    assert len(log.train) == steps
    assert any("left out 1 other run folder" in n for n in log.notes)


def test_a_run_not_in_the_folder_is_refused_listing_them(two_runs):
    with pytest.raises(DataError, match=r"`run` 'nope' is not one of the runs \(1: 'run-20250318_105822-vybm96cb'"):
        read_log(two_runs / "wandb", run="nope")


# --- the library, damaged files ---------------------------------------------------------------------------

def test_without_wandb_the_message_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_wandb(name, *args, **kwargs):
        if name == "wandb" or name.startswith("wandb."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_wandb)
    with pytest.raises(DataError, match=r"pip install 'grpo-dynamics\[wandb\]'"):
        read_log(tracker_run_path(RUN_40))


def copy_file(tmp_path, data: bytes) -> Path:
    path = tmp_path / "run-x.wandb"
    path.write_bytes(data)
    return path


def test_a_file_cut_mid_record_keeps_the_records_before(tmp_path):
    data = next(run_folder(RUN_40).glob("*.wandb")).read_bytes()
    cut = copy_file(tmp_path, data[:700_001])  # inside the 22nd block
    with pytest.warns(LogWarning, match="cut off"):
        log = read_log(cut)
    whole = quiet(tracker_run_path(RUN_40))
    assert 0 < len(log.train) <= len(whole.train)
    common = log.train.index[log.train["loss"].notna()]
    assert (log.train.loc[common, "loss"] == whole.train.loc[common, "loss"]).all()


def test_a_bad_frame_before_the_last_block_is_refused(tmp_path):
    data = bytearray(next(run_folder(RUN_41).glob("*.wandb")).read_bytes())
    data[40_000] ^= 0xFF  # in the second block
    with pytest.raises(DataError, match="damaged at byte .*checksum"):
        read_log(copy_file(tmp_path, bytes(data)))


def test_a_file_that_is_not_a_wandb_file_is_refused(tmp_path):
    with pytest.raises(DataError, match="not a W&B run file"):
        read_log(copy_file(tmp_path, b"PK\x03\x04" + b"\x00" * 100))
    with pytest.raises(DataError, match="empty or cut off inside its header"):
        read_log(copy_file(tmp_path, b":W&B"))


def frame(body: bytes, kind: int = 1) -> bytes:
    crc = zlib.crc32(body, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF
    return struct.pack("<IHB", crc, len(body), kind) + body


def history(step: int, **values) -> bytes:
    from wandb.proto.wandb_internal_pb2 import Record

    rec = Record()
    for key, v in values.items():
        item = rec.history.item.add()
        item.nested_key.append(key.replace("__", "/"))
        item.value_json = json.dumps(v)
    rec.history.step.num = step
    return rec.SerializeToString()


def test_written_rows_use_step_and_trl_keys(tmp_path):
    # as WandbCallback logs: `train/global_step` in each row, W&B's `_step` counting the calls
    body = b"".join(frame(history(2 * s, train__global_step=s, train__reward=0.1 * s, train__kl=0.01))
                    for s in range(1, 7))
    log = read_log(copy_file(tmp_path, wandb_files._HEADER + body))
    assert log.train.index.tolist() == list(range(1, 7))
    assert log.train["reward"].tolist() == pytest.approx([0.1 * s for s in range(1, 7)], abs=1e-15)
    plain = b"".join(frame(history(s, reward=0.2)) for s in range(3))
    log = read_log(copy_file(tmp_path, wandb_files._HEADER + plain))
    assert log.train.index.tolist() == [0, 1, 2]
    assert any("W&B's `_step`" in n for n in log.notes)


def test_an_old_release_history_jsonl_is_read(tmp_path):
    folder = tmp_path / "run-20200101_000000-abc123"
    folder.mkdir()
    rows = [{"_step": s, "_runtime": 1.0, "reward": 0.1 * s, "loss": 0.5} for s in range(5)]
    (folder / "wandb-history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    log = read_log(folder)
    assert log.train.index.tolist() == list(range(5))
    assert log.train["reward"].tolist() == pytest.approx([0.1 * s for s in range(5)], abs=1e-15)


def test_eval_rows_and_rows_of_one_step_are_merged(tmp_path):
    # WandbCallback: a row of train metrics per step, an eval row at some steps, TRL's timings in rows of their own;
    # W&B's step_sync gives each row the trainer step logged last
    body = []
    for s in range(1, 7):
        body.append(frame(history(3 * s, train__global_step=s, train__reward=0.1 * s, train__reward_std=0.2)))
        body.append(frame(history(3 * s + 1, train__global_step=s, **{"profiling__Time taken: x": float(s)})))
        if s % 3 == 0:
            body.append(frame(history(3 * s + 2, train__global_step=s, eval__reward=0.5 * s)))
    log = read_log(copy_file(tmp_path, wandb_files._HEADER + b"".join(body)))
    assert log.train.index.tolist() == list(range(1, 7))
    assert log.eval.index.tolist() == [3, 6]
    assert log.eval["reward"].tolist() == [1.5, 3.0]
    assert any("merged the 14 W&B rows into 6, one per trainer step" in n for n in log.notes)


def test_a_value_logged_twice_in_a_step_is_said(tmp_path):
    body = b"".join(frame(history(2 * s + k, train__global_step=s, train__reward=0.1 * s + 0.01 * k))
                    for s in range(1, 5) for k in (0, 1))
    with pytest.warns(LogWarning, match="logged more than once in a step kept the last value: train/reward"):
        log = read_log(copy_file(tmp_path, wandb_files._HEADER + body))
    assert log.train["reward"].tolist() == pytest.approx([0.1 * s + 0.01 for s in range(1, 5)], abs=1e-15)


def test_a_resumed_run_id_asks_for_its_folder(tmp_path):
    src = run_folder(RUN_43)
    for name in ("run-20250318_105822-vybm96cb", "run-20250319_090000-vybm96cb"):
        shutil.copytree(src, tmp_path / name)
    with pytest.raises(DataError, match="run id 'vybm96cb' has 2 run folders"):
        read_log(tmp_path, run="vybm96cb")
    assert len(quiet(tmp_path, run="run-20250319_090000-vybm96cb").train) == 9


def test_offline_and_online_run_folders_are_listed_by_start_time(tmp_path):
    src = run_folder(RUN_43)
    for name in ("run-20250320_000000-bbbb", "offline-run-20250321_000000-cccc", "run-20250319_000000-aaaa"):
        shutil.copytree(src, tmp_path / name)
    assert wandb_files.run_names(tmp_path) == ["run-20250319_000000-aaaa", "run-20250320_000000-bbbb",
                                               "offline-run-20250321_000000-cccc"]
    log = quiet(tmp_path, run="last")
    assert log.meta["wandb"]["file"].startswith(str(tmp_path / "offline-run-20250321_000000-cccc"))
