"""DynamicsCallback: normalised lines as TRL logs them, periodic findings and forecast, resume."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest

from grpo_core.errors import DataError, ParameterError
from grpo_core.runs.callback import (
    DIAGNOSIS_FILE,
    DISCARDED_FILE,
    METRICS_FILE,
    DynamicsCallback,
    read_metrics_lines,
)
from grpo_core.runs.logs import read_log

ARGS = SimpleNamespace(
    num_generations=4, per_device_train_batch_size=32, world_size=1, gradient_accumulation_steps=1
)


def _state(step=0, main=True):
    return SimpleNamespace(global_step=step, is_world_process_zero=main)


def _trl_row(step, reward):
    return {"loss": 0.01, "grad_norm": 1.0, "learning_rate": 3e-4, "rewards/exact_match/mean": reward,
            "rewards/exact_match/std": 0.4, "reward": reward, "reward_std": 0.4, "frac_reward_zero_std": 0.2,
            "entropy": 0.5 - 0.001 * step, "completions/mean_length": 3.5, "epoch": step / 100}


def test_lines_are_normalised_and_group_size_comes_from_the_trainer(tmp_path):
    cb = DynamicsCallback(tmp_path, every=0, quiet=True)
    state = _state()
    cb.on_train_begin(ARGS, state, None)
    assert (cb.group_size, cb.num_prompts) == (4, 8)
    for step in (1, 2, 3):
        state.global_step = step
        cb.on_log(ARGS, state, None, logs=_trl_row(step, 0.1 * step))
    state.global_step = 3
    cb.on_log(ARGS, state, None, logs={"eval_accuracy": 0.7, "epoch": 0.03})
    lines = read_metrics_lines(tmp_path / METRICS_FILE)
    assert [(r["step"], r["split"]) for r in lines] == [(1, "train"), (2, "train"), (3, "train"), (3, "eval")]
    assert lines[0]["reward/exact_match"] == 0.1 and lines[0]["completion_length"] == 3.5
    assert lines[3]["accuracy"] == 0.7 and lines[0]["trl_version"]
    log = read_log(tmp_path / METRICS_FILE)
    assert log.format == "grpo_dynamics" and list(log.steps) == [1, 2, 3]
    assert log.series("accuracy", split="eval")[1].tolist() == [0.7]
    cb._file.close()


def test_other_ranks_write_nothing(tmp_path):
    cb = DynamicsCallback(tmp_path, every=0, quiet=True)
    cb.on_train_begin(ARGS, _state(main=False), None)
    cb.on_log(ARGS, _state(1, main=False), None, logs=_trl_row(1, 0.5))
    assert not (tmp_path / METRICS_FILE).exists()


def test_resume_trims_lines_past_the_checkpoint_and_keeps_them(tmp_path):
    cb = DynamicsCallback(tmp_path, every=0, quiet=True)
    state = _state()
    cb.on_train_begin(ARGS, state, None)
    for step in range(1, 8):
        state.global_step = step
        cb.on_log(ARGS, state, None, logs=_trl_row(step, 0.1))
    with open(tmp_path / METRICS_FILE, "a") as fh:
        fh.write('{"step": 8, "rew')  # killed mid-write
    cb._file.close()  # the killed process's file handle dies with it
    # the run is killed after step 7; the last checkpoint was step 5: resume there
    out = io.StringIO()
    cb2 = DynamicsCallback(tmp_path, every=0, stream=out)
    with pytest.warns(UserWarning, match="incomplete last line"):
        cb2.on_train_begin(ARGS, _state(5), None)
    assert "moved 2 later line(s)" in out.getvalue()
    for step in (6, 7, 8):
        cb2.on_log(ARGS, _state(step), None, logs=_trl_row(step, 0.2))
    steps = [r["step"] for r in read_metrics_lines(tmp_path / METRICS_FILE)]
    assert steps == [1, 2, 3, 4, 5, 6, 7, 8]  # continuous: nothing missing, nothing twice
    assert [r["step"] for r in read_metrics_lines(tmp_path / DISCARDED_FILE)] == [6, 7]
    assert len(cb2.records) == 8
    cb2._file.close()  # not on_train_end: no final diagnosis wanted here


def test_periodic_diagnosis_prints_findings_and_forecast(tmp_path):
    import numpy as np

    out = io.StringIO()
    cb = DynamicsCallback(tmp_path, every=40, min_steps=30, n_boot=0, stream=out)
    state = _state()
    cb.on_train_begin(ARGS, state, None)
    rng = np.random.default_rng(0)
    for step in range(1, 121):
        state.global_step = step
        reward = 0.2 + 0.6 * (1 - np.exp(-step / 25)) + rng.normal(0, 0.02)
        cb.on_log(ARGS, state, None, logs=_trl_row(step, float(reward)))
    text = out.getvalue()
    assert text.count("[dynamics] ") >= 3 and "end of run (mean of the last 20% of steps" in text
    fc = cb.last_diagnosis.forecast
    assert abs(fc.law_fit.plateau - 0.8) < 0.05  # the law that describes the curve
    assert fc.point == pytest.approx(np.mean([r["reward"] for r in cb.records if r.get("split") == "train"][-12:]))
    cb.on_train_end(ARGS, state, None)
    diag = json.loads((tmp_path / DIAGNOSIS_FILE).read_text())
    assert "healthy" in diag and diag["steps"] == [1, 120]
    assert cb.diagnosis_seconds > 0 and cb.write_seconds > 0


def test_a_declared_reward_range_reaches_the_periodic_diagnosis(tmp_path):
    """reward_range as diagnose --reward-range: the forecast is shown within it; a reward logged past it is
    said (the declared range is wrong), not clipped away; a reversed range is refused when built."""
    import numpy as np

    with pytest.raises(ParameterError, match="`reward_range` must be finite with low < high"):
        DynamicsCallback(tmp_path, reward_range=(1.5, 0))
    for top, ok in ((1.5, True), (1.0, False)):
        out = io.StringIO()
        cb = DynamicsCallback(tmp_path / str(top), every=40, min_steps=30, n_boot=0, stream=out,
                              reward_range=(0, top), print_curvature=False)
        state = _state()
        cb.on_train_begin(ARGS, state, None)
        rng = np.random.default_rng(0)
        for step in range(1, 81):
            state.global_step = step
            reward = 0.3 + 0.9 * (1 - np.exp(-step / 25)) + rng.normal(0, 0.02)  # 0.3 -> 1.1
            cb.on_log(ARGS, state, None, logs=_trl_row(step, float(reward)))
        if ok:
            assert cb.last_diagnosis.forecast["shown_range"] == [0.0, 1.5, "the reward's declared range"]
        else:
            assert "no diagnosis at step 40: `reward_range` (0, 1) does not hold the reward" in out.getvalue()
        cb._file.close()


def test_bad_arguments_and_broken_files(tmp_path):
    with pytest.raises(ParameterError, match="`every`"):
        DynamicsCallback(tmp_path, every=-1)
    with pytest.raises(ParameterError, match="`group_size`"):
        DynamicsCallback(tmp_path, group_size=1)
    (tmp_path / "m.jsonl").write_text('{"step": 1}\nnot json\n{"step": 2}\n')
    with pytest.raises(DataError, match="line 2"):
        read_metrics_lines(tmp_path / "m.jsonl")
    assert read_metrics_lines(tmp_path / "missing.jsonl") == []


@pytest.mark.slow
def test_with_trl_grpo_trainer_on_the_tiny_model(tmp_path):
    """Real TRL GRPOTrainer, tiny model built from a config, a few CPU steps, no download."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from grpo_core.llm.model import TinyModelSpec, build_tiny_model
    from grpo_core.llm.tasks import build_char_tokenizer, exact_match_reward, sample_problems

    torch.set_num_threads(1)
    tok = build_char_tokenizer()
    model = build_tiny_model(
        tok, TinyModelSpec(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2)
    )
    probs = sample_problems("add2", 64, seed=0)
    data = Dataset.from_list([{"prompt": p["prompt"], "answer": p["answer"]} for p in probs])
    args = GRPOConfig(output_dir=str(tmp_path / "ckpt"), per_device_train_batch_size=16, num_generations=4,
                      max_completion_length=4, learning_rate=3e-4, bf16=False, use_cpu=True, logging_steps=1,
                      max_steps=6, report_to=[], save_strategy="no", disable_tqdm=True, seed=0)
    out = io.StringIO()
    cb = DynamicsCallback(tmp_path / "run", every=3, min_steps=3, n_boot=0, stream=out)
    trainer = GRPOTrainer(model=model, reward_funcs=[exact_match_reward(tok.eos_token_id)], args=args,
                          train_dataset=data, processing_class=tok, callbacks=[cb])
    trainer.train()
    lines = read_metrics_lines(tmp_path / "run" / METRICS_FILE)
    train = [r for r in lines if r["split"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3, 4, 5, 6]
    for key in ("reward", "reward_std", "frac_reward_zero_std", "entropy", "grad_norm", "reward/exact_match",
                "completion_length", "clip_ratio_region"):
        assert key in train[0], key
    assert any(r["split"] == "summary" for r in lines)
    assert (cb.group_size, cb.num_prompts) == (4, 4)
    assert "[dynamics]" in out.getvalue()
    assert (tmp_path / "run" / DIAGNOSIS_FILE).exists()
    log = read_log(tmp_path / "run" / METRICS_FILE)
    assert len(log.train) == 6 and "train_runtime" in log.summary
