"""TensorBoard event files of five real GRPO runs, as their trackers wrote them and their repositories committed
them (``grpo_core/data/tracker_runs/3*-tensorboard-*``, each with its ``SOURCE.md``): verl one-step off-policy,
verl fully-async (two runs), slime (a rollout-manager folder and a trainer folder), TRL.

Every value the reader returns is checked against the events read here with the protocol buffers of
``tensorboardX`` alone (:func:`scalars`), not through :mod:`grpo_core.runs.logs.tensorboard`.
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from grpo_core.runs.datasets import tracker_run_path, tracker_runs
from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import read_log
from grpo_core.runs.logs.tensorboard import run_names, writers_of_one_run
from grpo_dynamics.cli import main

pytest.importorskip("tensorboardX")  # in requirements.txt; the extra grpo-dynamics[tensorboard]

VERL_ONESTEP = "30-tensorboard-verl-THisisPX-geo3k-onestep"
VERL_GEO_ASYNC = "31-tensorboard-verl-THisisPX-geo3k-fully-async"
VERL_MATH_ASYNC = "32-tensorboard-verl-THisisPX-qwen3-4b-dapo-async"
SLIME = "33-tensorboard-slime-THisisPX-geo3k-v3"
TRL = "34-tensorboard-trl-JuncyLu-dapo-vlm-aokvqa"
RUNS = (VERL_ONESTEP, VERL_GEO_ASYNC, VERL_MATH_ASYNC, SLIME, TRL)


def scalars(folder: Path, sub: str = "") -> dict[str, list[tuple[int, float]]]:
    """Every ``simple_value`` of the event files below ``folder/sub``: tag -> [(event step, value)] in file order
    (a TFRecord frame: uint64 length, uint32 CRC, the ``Event`` bytes, uint32 CRC)."""
    from tensorboardX.proto.event_pb2 import Event

    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for f in sorted((folder / sub).rglob("*tfevents*")):
        data, pos = f.read_bytes(), 0
        while pos < len(data):
            (length,) = struct.unpack_from("<Q", data, pos)
            event = Event()
            event.ParseFromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for v in event.summary.value:
                if v.WhichOneof("value") == "simple_value":
                    out[v.tag].append((event.step, v.simple_value))
    return out


def read(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a real run read as committed raises no warning
        return read_log(tracker_run_path(name))


def cli(name: str) -> tuple[int, dict | None]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["diagnose", str(tracker_run_path(name)), "--json"])
    try:
        out = json.loads(buf.getvalue())
    except json.JSONDecodeError:
        return code, None
    # a folder is walked for its runs: one record per run, the diagnosis in it
    return code, out.get("diagnosis", out)


def test_the_five_runs_are_kept_small():
    assert set(RUNS) <= set(tracker_runs())
    for name in RUNS:
        folder = tracker_run_path(name)
        assert (folder / "SOURCE.md").is_file()
        size = sum(f.stat().st_size for f in folder.rglob("*tfevents*"))
        assert 50_000 < size < 2_000_000


def test_verl_one_step_off_policy_run():
    log = read(VERL_ONESTEP)
    tags = scalars(tracker_run_path(VERL_ONESTEP))
    score = dict(tags["critic/score/mean"])
    assert log.container == "tensorboard" and log.format == "verl"
    assert log.train.index.tolist() == list(range(1, 13)) == sorted(score)
    # the event step is verl's training/global_step here
    assert [s for s, _ in tags["training/global_step"]] == [int(v) for _, v in tags["training/global_step"]]
    assert log.train["reward"].tolist() == [score[s] for s in range(1, 13)]
    assert log.train.loc[1, "reward"] == pytest.approx(0.3498047)
    assert log.train.loc[12, "reward"] == pytest.approx(0.4359375)
    assert any("'critic/score/mean' -> 'reward'" in n for n in log.notes)
    assert tags["critic/rewards/mean"] == tags["critic/score/mean"]  # no KL in the reward: the two are one
    assert log.eval.index.tolist() == [12]
    (val,) = [v for _, v in tags["val-core/chenhegu/geo3k_imgurl/acc/mean@1"]]
    assert log.eval.loc[12, "chenhegu/geo3k_imgurl/acc/mean@1"] == val
    # torch's SummaryWriter writes one event per scalar; the events of a step are one row, the epoch included
    assert log.train["epoch"].tolist() == [v for _, v in tags["training/epoch"]]
    code, out = cli(VERL_ONESTEP)
    assert code == 3 and out["verdict"] == "inconclusive"  # 12 reward values; not_learning needs 16
    assert "not_learning" not in out["checked"]


@pytest.mark.parametrize("name", [VERL_GEO_ASYNC, VERL_MATH_ASYNC])
def test_fully_async_verl_is_read_on_its_training_steps(name):
    log = read(name)
    tags = scalars(tracker_run_path(name))
    # each training record logs training/global_step and critic/score/mean once: pair them by occurrence
    steps = [int(v) for _, v in tags["training/global_step"]]
    score = [v for _, v in tags["critic/score/mean"]]
    assert steps == list(range(1, 33)) and len(score) == 32
    # the events carry the parameter version: one ahead, and two training steps at the last version
    assert [s for s, _ in tags["training/global_step"]] == list(range(2, 33)) + [32]
    assert log.train.index.tolist() == list(range(1, 33))
    assert log.train["reward"].tolist() == score
    assert any("step read from verl's 'training/global_step'" in n and "left out 2 record(s)" in n
               for n in log.notes)
    # the rollouter's timings of versions 0 and 1 come before any training step
    assert [s for s, _ in tags["fully_async/rollouter/active_time"]][:2] == [0, 1]


def test_fully_async_geo3k_values_and_verdict():
    log = read(VERL_GEO_ASYNC)
    assert log.train.loc[1, "reward"] == pytest.approx(0.3779297) and log.train.loc[32, "reward"] == 0.421875
    assert log.train["reward"].min() == pytest.approx(0.365625)
    assert log.train["reward"].max() == pytest.approx(0.5853516)
    code, out = cli(VERL_GEO_ASYNC)
    assert code == 3 and out["verdict"] == "inconclusive"  # 32 steps: too early to judge learning


def test_fully_async_math_run_is_truncated():
    log = read(VERL_MATH_ASYNC)
    tags = scalars(tracker_run_path(VERL_MATH_ASYNC))
    assert log.train.loc[1, "reward"] == -1.0 and log.train.loc[32, "reward"] == -0.75  # dapo: -1 wrong, +1 right
    clip = [v for _, v in tags["response_length/clip_ratio"]]
    assert log.train["clipped_ratio"].tolist() == clip
    assert np.median(clip[-8:]) == 0.76171875  # the finding: 76% hit the cap on the median step of 25-32
    code, out = cli(VERL_MATH_ASYNC)
    assert code == 1 and out["verdict"] == "unhealthy"
    top = out["findings"][0]
    assert (top["mode"], top["severity"]) == ("truncation", "warning")


def test_slime_two_writers_are_one_run_on_the_rollout_axis():
    folder = tracker_run_path(SLIME)
    manager = scalars(folder, "qwen3-vl-4b-geo3k-4gpu-v3/20260707_090614")
    trainer = scalars(folder, "qwen3-vl-4b-geo3k-4gpu-v3/20260707_090856")
    assert not set(manager) & set(trainer)
    assert writers_of_one_run(folder) and run_names(folder) == ["."]
    log = read(SLIME)
    raw = dict(trainer["rollout/raw_reward"])
    assert sorted(raw) == list(range(106))
    # train/* count optimizer steps, two per rollout
    grad = [v for _, v in trainer["train/grad_norm"]]
    assert [s for s, _ in trainer["train/grad_norm"]] == list(range(212))
    assert log.train.index.tolist() == list(range(107))  # rollout 106 was generated, never trained
    assert log.train["reward"].iloc[:106].tolist() == [raw[r] for r in range(106)]
    assert np.isnan(log.train.loc[106, "reward"])
    assert log.train.loc[0, "reward"] == 0.46875 and log.train.loc[105, "reward"] == 0.5546875
    assert log.train["grad_norm"].iloc[:106].tolist() == pytest.approx(
        [(grad[2 * r] + grad[2 * r + 1]) / 2 for r in range(106)], rel=1e-12)
    ent = [v for _, v in trainer["train/entropy_loss"]]
    assert log.train.loc[0, "entropy"] == pytest.approx((ent[0] + ent[1]) / 2, rel=1e-12)
    # the rollout manager's tags on the same axis
    length = dict(manager["rollout/response_len/mean"])
    assert log.train["completion_length"].tolist() == [length[r] for r in range(107)]
    assert log.train.loc[0, "clipped_ratio"] == dict(manager["rollout/truncated_ratio"])[0]
    assert log.train.loc[0, "learning_rate"] == trainer["train/lr-pg_0"][0][1]  # 1e-6 as float32
    assert "rollout/rewards" in log.train.columns  # the group-normalised value is not the reward
    assert any("read by alias: 'rollout/raw_reward' as 'reward'" in n for n in log.notes)
    assert any("212 optimizer steps, 2 per rollout" in n for n in log.notes)


def test_slime_verdict():
    diagnosis = diagnose(read(SLIME))
    assert diagnosis.verdict == "unhealthy"
    top = diagnosis.findings[0]
    assert (top.mode, top.severity) == ("not_learning", "warning")
    code, _ = cli(SLIME)
    assert code == 1


def test_trl_run():
    log = read(TRL)
    tags = scalars(tracker_run_path(TRL))
    reward = dict(tags["train/reward"])
    assert log.format == "trl"
    assert log.train.index.tolist() == list(range(10, 500, 10)) == sorted(reward)
    assert log.train["reward"].tolist() == [reward[s] for s in range(10, 500, 10)]
    assert log.train.loc[10, "reward"] == 1.75 and log.train.loc[490, "reward"] == pytest.approx(2.6)
    assert log.train["entropy"].tolist() == [v for _, v in tags["train/entropy"]]
    assert log.train["epoch"].tolist() == [v for _, v in tags["train/epoch"]]
    # the weighted total: 4 x mc_idx + mdi + think_format
    parts = [np.float32(4 * a + b + c) for (_, a), (_, b), (_, c) in zip(
        tags["train/rewards/mc_idx_reward/mean"], tags["train/rewards/mdi_reward/mean"],
        tags["train/rewards/think_format_reward/mean"])]
    assert log.train["reward"].to_numpy() == pytest.approx(np.array(parts, dtype=float), abs=1e-6)
    code, out = cli(TRL)
    assert code == 1 and out["verdict"] == "unhealthy"
    modes = [(f["mode"], f["severity"]) for f in out["findings"]]
    assert modes[:2] == [("policy_concentration", "critical"), ("advantage_degeneration", "critical")]
