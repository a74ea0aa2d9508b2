"""The early stop of a collapsed run (``stop_collapsed``, grpo_core.llm.training.CollapseStop): the rule, the
setting, and that a run stopped by it is classified, and bracketed, as the same run left to its last step."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

from grpo_core.errors import ParameterError
from grpo_core.llm.config import make_config
from grpo_core.llm.probe_check import classify_run, lr_sweep_table
from grpo_core.llm.runs import load_runs, run_name
from grpo_core.llm.training import CollapseStop

SWEEP = Path(__file__).resolve().parents[1] / "book" / "experiments" / "runs" / "lr-sweep"


def _fire(rewards, steps, after=0, at_steps=None):
    """The step at which the rule stops a run logging ``rewards`` at ``at_steps`` (default 1, 2, ...), or None."""
    cb, control = CollapseStop(steps, after=after), NS(should_training_stop=False)
    for step, r in zip(at_steps or range(1, len(rewards) + 1), rewards):
        cb.on_log(None, NS(global_step=step), control, logs={"reward": r})
        if control.should_training_stop:
            return cb.stopped_at
    return None


def test_the_rule_counts_consecutive_zeros_after_the_warm_up_only():
    assert _fire([0.3] * 5 + [0.0] * 30, 30) == 35
    assert _fire([0.3] * 5 + [0.0] * 29 + [0.004] + [0.0] * 29, 30) is None  # one rewarded completion resets it
    assert _fire([0.0] * 40 + [0.2] + [0.0] * 10, 5, after=100) is None  # zeros in the warm-up do not count
    assert _fire([0.0] * 60, 30) is None  # a run that started at 0 is never stopped (classify_run: not collapsed)
    cb, control = CollapseStop(1), NS(should_training_stop=False)
    cb.on_log(None, NS(global_step=1), control, logs={"eval_accuracy": 0.0})  # evaluation rows are ignored
    assert not control.should_training_stop and cb.zeros == 0


def test_the_setting_is_checked_and_leaves_the_run_name_alone():
    cfg = make_config("cpu-dynamics", max_steps=300, stop_collapsed=30)
    assert cfg.stop_collapsed == 30
    assert run_name(cfg) == run_name(make_config("cpu-dynamics", max_steps=300))  # same cell of a sweep
    for bad in (-1, 5, 29):  # below max(10, max_steps // 10): classify_run's tail would not be all zeros
        with pytest.raises(ParameterError, match="stop_collapsed") as info:
            make_config("cpu-dynamics", max_steps=300, stop_collapsed=bad)
        assert info.value.parameter == "stop_collapsed"


def test_a_stopped_run_counts_as_finished(tmp_path):
    from grpo_dynamics.commands.experiment import _finished

    cfg = make_config("cpu-dynamics", max_steps=300, stop_collapsed=30)
    (tmp_path / "summary.json").write_text(json.dumps({"steps": 57}))
    assert not _finished(tmp_path, cfg)  # interrupted
    (tmp_path / "summary.json").write_text(json.dumps({"steps": 57, "stopped_early": {"step": 57}}))
    assert _finished(tmp_path, cfg)


@pytest.mark.skipif(not SWEEP.is_dir(), reason="the committed learning-rate sweep is not in this checkout")
def test_the_committed_sweep_stopped_by_the_rule_gives_the_same_shapes_and_brackets(tmp_path):
    # Every committed run of the sweep cut where stop_collapsed = 30 would have stopped it (after the
    # 20-step warm-up of the rate): the same shape for every run, the same brackets for every arm.
    stopped = 0
    for folder in SWEEP.iterdir():
        if not (folder / "config.json").is_file():
            continue
        cfg = json.loads((folder / "config.json").read_text())
        copy = tmp_path / folder.name
        copy.mkdir()
        for name in ("config.json", "probe.json", "evals.json", "summary.json"):
            if (folder / name).is_file():
                shutil.copy(folder / name, copy / name)
        lines = (folder / "metrics.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        logged = [(r["step"], r["reward"]) for r in rows if r.get("split") == "train" and "reward" in r]
        rewards = [r for _, r in logged]  # with num_iterations 4, TRL logs the reward once per generation
        at = _fire(rewards, 30, after=int(cfg["lr_warmup_steps"]), at_steps=[s for s, _ in logged])
        if at is not None:
            stopped += 1
            kept = [r for s, r in logged if s <= at]
            assert classify_run(np.array(kept)) == "collapsed" == classify_run(np.array(rewards))
            lines = [line for line, r in zip(lines, rows) if r.get("step", 0) <= at]
        (copy / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert stopped >= 5  # the collapsed runs far above the edges
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full_runs, full_crit = lr_sweep_table(load_runs(SWEEP))
        cut_runs, cut_crit = lr_sweep_table(load_runs(tmp_path))
    assert list(cut_runs["shape"]) == list(full_runs["shape"])
    cols = ["optimizer", "num_iterations", "stable_up_to", "collapsed_from", "seeds_agree"]
    assert cut_crit[cols].equals(full_crit[cols])
