"""The experiment notebook runs through papermill, via the real entry point ``grpo-dynamics experiment``."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest
from conftest import ROOT, cli_params

from grpo_dynamics.commands.experiment import NOTEBOOK_PARAMETERS

NOTEBOOK_MD = ROOT / "book" / "experiments" / "grpo_llm.md"


def test_notebook_has_the_parameters_the_issue_lists():
    import jupytext

    nb = jupytext.read(NOTEBOOK_MD)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    for name in ("preset", "overrides", *NOTEBOOK_PARAMETERS):
        assert f"\n{name} =" in "\n" + cells[0].source, name


def test_papermill_reads_every_parameter_without_a_warning(caplog):
    """papermill's own parser (``papermill --help-notebook``) must see every parameter with its help."""
    import logging

    import papermill

    with caplog.at_level(logging.WARNING, logger="papermill"):
        params = papermill.inspect_notebook(str(NOTEBOOK_MD.with_suffix(".ipynb")))
    assert not [r.getMessage() for r in caplog.records if "Unable to parse" in r.getMessage()]
    assert {"preset", "steps_per_generation", "num_iterations", "overrides", "output_dir"} <= set(params)
    assert "num_iterations" in params["steps_per_generation"]["help"]


def test_experiment_command_refuses_bad_settings_before_running(tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "grpo_dynamics.cli", "experiment", *args, "--out", str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )

    for args, message in ((["-p", "group_size", "1"], "`group_size` must be an integer >= 2"),
                          (["-p", "learning_rate", "0"], "`learning_rate` must be a finite number > 0"),
                          (["-p", "completions_per_step", "100", "--group-sizes", "3"], "must divide"),
                          (["--preset", "gpt5"], "`preset` must be one of"),
                          (["-p", "nonsense", "1"], "unknown parameter"),
                          (["-p", "seed", "1", "--seeds", "2"], "not both")):
        out = run(*args)
        assert out.returncode == 2, out.stderr
        assert message in out.stderr and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())  # nothing was started


@pytest.mark.slow
def test_cpu_tiny_through_papermill(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "grpo_dynamics.cli",
        "experiment",
        "--preset",
        "cpu-tiny",
        "--seeds",
        "0",
        "--group-sizes",
        "4",
        "--out",
        str(tmp_path),
        "--json",
        *cli_params(max_steps=4, warmup_steps=10, num_prompts=4, eval_every=2, eval_samples=8, save_every=2,
                    tiny_hidden_size=32, tiny_layers=1, measure_constants="true", diagnose_every=2),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    (row,) = report["runs"]
    assert row["status"] == "ok" and row["G"] == 4 and row["steps"] == 4
    folder = tmp_path / row["run"]
    assert row["run"].startswith("cpu-tiny__G4-B4__")
    for name in ("config.json", "provenance.json", "metrics.jsonl", "evals.json", "summary.json",
                 "gradient_constants.json", "grpo_llm.ipynb"):
        assert (folder / name).exists(), name
    executed = nbformat.read(folder / "grpo_llm.ipynb", as_version=4)
    assert executed.metadata["papermill"]["parameters"]["group_size"] == 4
    assert not any(o.get("output_type") == "error" for c in executed.cells for o in c.get("outputs", []))
    steps = [json.loads(x)["step"] for x in (folder / "metrics.jsonl").read_text().splitlines()
             if json.loads(x)["split"] == "train"]
    assert steps == [1, 2, 3, 4]
    constants = json.loads((folder / "gradient_constants.json").read_text())
    assert set(constants) == {"start", "end"} and "c1" in constants["start"]
    assert not (folder / "checkpoints").exists()
    # a second call finds the run finished and skips it
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 0 and json.loads(again.stdout)["runs"][0]["status"] == "skipped"


@pytest.mark.slow
def test_same_code_under_accelerate_launch(tmp_path):
    """``accelerate launch -m grpo_core.llm`` runs the same steps as the notebook (one CPU process)."""
    cmd = [
        str(ROOT / ".venv" / "bin" / "accelerate"),
        "launch",
        "--cpu",
        "--num_processes",
        "1",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "-m",
        "grpo_core.llm",
        "--preset",
        "cpu-tiny",
        *cli_params(max_steps=3, warmup_steps=5, num_prompts=4, group_size=4, eval_samples=8, eval_every=0,
                    tiny_hidden_size=32, tiny_layers=1, diagnose_every=0, output_dir=tmp_path / "run"),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 3
    steps = [json.loads(x)["step"] for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
             if json.loads(x)["split"] == "train"]
    assert steps == [1, 2, 3]
    bad = subprocess.run(
        [sys.executable, "-m", "grpo_core.llm", "-p", "group_size", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "`group_size` must be an integer >= 2" in bad.stderr
