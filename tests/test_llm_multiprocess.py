"""One experiment as several data-parallel processes: the launch commands, what is refused before
anything starts, and a real two-process run on the CPU (gloo) against a one-process run with the same
global batch.

What matches between the two: exactly, the run folder's files and their columns, the steps, the warm-up
(the same model: same loss to the last bit), the greedy evaluations, and the global batch; the per-device
batch halves. What does not: the sampled completions. TRL seeds process r with ``seed + r``
(``set_seed(args.seed, device_specific=True)`` in ``GRPOTrainer.__init__``, not configurable) and a
process samples its share of the step's completions in its own batch, so no setting makes the two runs
draw the same completions. With a learning rate of 1e-8 the weights stay put (every greedy answer is the
same at the end as at the start), every step samples the starting policy on the step's prompts, and the
sampled statistics of the two runs agree within their sampling error. Measured, for the mean completion
length and the mean token entropy over 8 steps of 16 completions (z: the difference over its standard
error from the steps' spread): with these settings |z| = 2.01 and 2.29 for seed 1 (0.23 of ~3.5 tokens,
0.046 of ~1.9 nats), 0.35 and 0.36 for seed 2; with an untrained model, 0.88 and 1.24 for seed 0.
Asserted: |z| < 4."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_core.errors import GrpoError
from grpo_dynamics.cli import main

ARGS = ["experiment", "--preset", "cpu-tiny", "--seeds", "1", "--group-sizes", "4"]
# a tiny model whose warm-up makes it confident enough to give its samples some structure (entropy ~1.9
# nats, ~3.5 tokens), and a learning rate that leaves it where it is
SMALL = dict(warmup_steps=40, warmup_batch_size=32, warmup_learning_rate=0.01, tiny_hidden_size=32, tiny_layers=1,
             max_steps=8, num_prompts=4, eval_samples=8, eval_every=0, eval_sampled=0, diagnose_every=0,
             learning_rate=1e-8, lr_warmup_steps=0, save_every=100)


def _params(settings: dict) -> list[str]:
    out = []
    for key, value in settings.items():
        out += ["-p", key, str(value)]
    return out


def _dry(tmp_path, capsys, *extra) -> dict:
    assert main([*ARGS, "--out", str(tmp_path), "--dry-run", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)["runs"][0]


def test_cpu_processes_are_started_by_torch_distributed_run(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    run = _dry(tmp_path, capsys, "--num-processes", "2", "-p", "learning_rate", "5e-4")
    cmd = run["command"]
    assert cmd[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    assert cmd[6:10] == ["-m", "grpo_core.llm", "--preset", "cpu-tiny"]
    pairs = dict(zip(cmd[11::3], cmd[12::3]))
    assert pairs["learning_rate"] == "5e-4" and pairs["output_dir"] == run["folder"] and pairs["seed"] == "1"
    assert "command" not in _dry(tmp_path, capsys)  # one process: the notebook, as before


def test_gpu_processes_are_started_by_accelerate_launch(tmp_path, capsys, monkeypatch):
    import importlib.util

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert main([*ARGS, "--out", str(tmp_path), "--dry-run", "--num-processes", "8"]) == 2
    assert "`num_processes` must be at most the 4 GPU(s) here" in capsys.readouterr().err
    cmd = _dry(tmp_path, capsys, "--num-processes", "4")["command"]
    assert cmd[1:5] == ["-m", "accelerate.commands.launch", "--num_processes", "4"] and "--multi_gpu" in cmd
    cmd = _dry(tmp_path, capsys, "--num-processes", "4", "--accelerate-config", "fsdp")["command"]
    config = Path(cmd[cmd.index("--config_file") + 1])
    assert config.name == "fsdp.yaml" and config.parent.name == "accelerate" and "distributed_type: FSDP" in (
        config.read_text())
    # DeepSpeed is refused by name when it is not installed (it is not, on a machine without a CUDA toolchain)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "deepspeed" else real(name, *a))
    for stage in ("zero2", "zero3"):
        assert main([*ARGS, "--out", str(tmp_path), "--dry-run", "--accelerate-config", stage]) == 2
        assert "uses DeepSpeed, which is not installed here: `pip install deepspeed`" in capsys.readouterr().err


def test_bad_process_settings_are_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cases = [
        (["--num-processes", "0"], "`num_processes` must be an integer >= 1"),
        (["--num-processes", "3"], "`num_processes` x gradient_accumulation_steps = 3 must divide the 128"),
        (["--num-processes", "2", "-p", "gradient_accumulation_steps", "128"], "= 256 must divide the 128"),
        (["--accelerate-config", "zero9"], "`accelerate_config` must be one of multi_gpu, zero2, zero3, fsdp"),
        (["--accelerate-config", "zero3"], "needs CUDA GPUs and none is available here"),
    ]
    for extra, message in cases:
        assert main([*ARGS, "--out", str(tmp_path / "x"), *extra]) == 2, extra
        assert message in capsys.readouterr().err, extra
    assert not (tmp_path / "x").exists()  # nothing was started


def test_a_world_that_does_not_divide_the_step_is_refused_by_the_script(tmp_path, monkeypatch):
    from grpo_core.llm.config import make_config
    from grpo_core.llm.session import start_run

    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(GrpoError, match="128 completions per step cannot be split over 3 processes"):
        start_run(make_config("cpu-tiny", group_size=4, output_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_two_processes_match_one_process_with_the_same_global_batch(tmp_path, monkeypatch, capsys):
    from grpo_core.llm.config import make_config
    from grpo_core.llm.experiment import run_experiment

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main([*ARGS, "--out", str(tmp_path / "two"), "--num-processes", "2", "--json", *_params(SMALL)]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["status"] for r in runs] == ["ok"]
    two = Path(runs[0]["folder"])
    one = tmp_path / "one"
    run_experiment(make_config("cpu-tiny", seed=1, group_size=4, output_dir=str(one), **SMALL))

    # the same files (the launcher's log in place of the executed notebook) and the same columns
    files = {p.name for p in two.iterdir()}
    assert files - {"launch.log"} == {p.name for p in one.iterdir()}
    assert {"config.json", "provenance.json", "metrics.jsonl", "evals.json", "summary.json"} <= files
    rows = {k: [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()] for k, d in
            (("one", one), ("two", two))}
    assert [sorted(r) for r in rows["one"]] == [sorted(r) for r in rows["two"]]
    assert [r["step"] for r in rows["two"] if r["split"] == "train"] == list(range(1, 9))
    cfg1, cfg2 = (json.loads((d / "config.json").read_text()) for d in (one, two))
    assert {k for k in cfg1 if cfg1[k] != cfg2[k]} <= {"output_dir", "warmup_cache"}
    prov1, prov2 = (json.loads((d / "provenance.json").read_text()) for d in (one, two))
    assert (prov2["world_size"], prov2["per_device_batch"], prov2["global_batch"]) == (2, 8, 16)
    assert (prov1["world_size"], prov1["per_device_batch"], prov1["global_batch"]) == (1, 16, 16)
    assert prov2["strategy"] == "ddp" and prov2["backend"] == "gloo" and prov1["strategy"] == "single"
    # the same starting model, and it did not move: the greedy evaluations agree exactly, start and end
    w1, w2 = (json.loads((d / "warmup.json").read_text()) for d in (one, two))
    assert w1["final_loss"] == w2["final_loss"]
    e1, e2 = (json.loads((d / "evals.json").read_text()) for d in (one, two))
    for phase in ("start", "end"):
        assert {k: v["accuracy"] for k, v in e1[phase].items()} == {k: v["accuracy"] for k, v in e2[phase].items()}
    # the sampled statistics: the same distribution, different draws
    for key in ("completion_length", "entropy"):
        x, y = (np.array([r[key] for r in rows[k] if r["split"] == "train"]) for k in ("one", "two"))
        se = np.sqrt(x.var(ddof=1) / len(x) + y.var(ddof=1) / len(y))
        assert se > 0 and abs(x.mean() - y.mean()) < 4 * se, (key, x.mean(), y.mean(), se)
    assert not (two / "checkpoints").exists() and not (two / "base_model").exists()
