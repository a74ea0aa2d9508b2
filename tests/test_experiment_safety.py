"""The experiment command never mixes two runs in one folder and never dies on a torn checkpoint:
``--force`` starts afresh (nothing an earlier run left survives), a second process writing to the
same run folder is refused while the first holds its lock (a dead holder's lock is taken over), and
a checkpoint cut short by a kill is skipped for the one before it, with a warning that says why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from grpo_core.llm.runs import checkpoint_problem, last_checkpoint
from grpo_dynamics.cli import main
from grpo_dynamics.commands import experiment

ARGS = ["experiment", "--preset", "cpu-tiny", "--seeds", "0", "--group-sizes", "4"]


def _folder(out: Path, capsys) -> Path:
    assert main([*ARGS, "--out", str(out), "--dry-run", "--json"]) == 0
    return Path(json.loads(capsys.readouterr().out)["runs"][0]["folder"])


@pytest.fixture
def executed(monkeypatch):
    """Replace the notebook run by a recorder of what the run folder held when it started."""
    seen = []

    def fake(notebook, folder, preset, params, timeout):
        seen.append(sorted(p.name for p in Path(folder).iterdir()))
        (Path(folder) / "metrics.jsonl").write_text('{"step": 1, "reward": 0.3}\n')
        return "ok"

    monkeypatch.setattr(experiment, "_execute", fake)
    return seen


def test_force_starts_afresh(tmp_path, capsys, executed):
    folder = _folder(tmp_path, capsys)
    (folder / "checkpoints" / "checkpoint-10").mkdir(parents=True)
    (folder / "checkpoints" / "checkpoint-10" / "trainer_state.json").write_text("{}")
    for name in ("metrics.jsonl", "summary.json", "provenance.json", "config.json"):
        (folder / name).write_text("{}\n")
    assert main([*ARGS, "--out", str(tmp_path), "--force"]) == 0
    assert executed == [[".lock"]]  # only the lock: no checkpoint to resume from, no old metrics
    assert not (folder / ".lock").exists()  # released at the end


def test_without_force_an_interrupted_run_keeps_its_checkpoints(tmp_path, capsys, executed):
    folder = _folder(tmp_path, capsys)
    (folder / "checkpoints" / "checkpoint-10").mkdir(parents=True)
    assert main([*ARGS, "--out", str(tmp_path)]) == 0
    assert executed == [[".lock", "checkpoints"]]


def test_a_second_process_on_the_same_folder_is_refused(tmp_path, capsys, executed):
    folder = _folder(tmp_path, capsys)
    folder.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (folder / ".lock").write_text(f"{holder.pid}\n")
        assert main([*ARGS, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert f"in use by another experiment (process {holder.pid}" in err
        assert executed == [] and (folder / ".lock").exists()
    finally:
        holder.kill()
        holder.wait()
    # its holder is gone: the lock is stale and taken over
    assert main([*ARGS, "--out", str(tmp_path)]) == 0
    assert executed == [[".lock"]] and not (folder / ".lock").exists()


def _checkpoint(root: Path, step: int) -> Path:
    path = root / "checkpoints" / f"checkpoint-{step}"
    path.mkdir(parents=True)
    save_file({"w": torch.arange(1000, dtype=torch.float32)}, str(path / "model.safetensors"))
    torch.save({"state": {0: {"exp_avg": torch.ones(1000)}}}, path / "optimizer.pt")
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return path


@pytest.mark.parametrize("torn, reason", [("optimizer.pt", "optimizer.pt is cut short"),
                                          ("model.safetensors", "model.safetensors is cut short")])
def test_a_torn_last_checkpoint_falls_back_to_the_one_before(tmp_path, torn, reason):
    good = _checkpoint(tmp_path, 10)
    last = _checkpoint(tmp_path, 20)
    assert checkpoint_problem(good) is None and checkpoint_problem(last) is None
    assert last_checkpoint(tmp_path) == last
    data = (last / torn).read_bytes()
    (last / torn).write_bytes(data[: len(data) // 2])  # what a kill mid-write leaves
    assert reason in checkpoint_problem(last)
    with pytest.warns(UserWarning, match=rf"checkpoint-20 is not usable \({reason}"):
        assert last_checkpoint(tmp_path) == good


def test_an_unparsable_trainer_state_is_not_resumed_from(tmp_path):
    only = _checkpoint(tmp_path, 5)
    (only / "trainer_state.json").write_text('{"global_step": 5')
    with pytest.warns(UserWarning, match="trainer_state.json does not parse"):
        assert last_checkpoint(tmp_path) is None
