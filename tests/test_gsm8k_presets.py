"""Every GSM8K preset runs its GPU code path on the CPU: a from-config model with a chat template
(no download), the shipped GSM8K-format sample, answer extraction, the evaluation suite, gradient
accumulation; bf16 / fp16 are refused on a CPU with a message that says what to do. And the
prepared GPU check says so and exits 0 on a machine without CUDA."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_core.errors import GrpoError, ParameterError
from grpo_core.llm.config import PRESETS, check_environment, make_config, preset_names
from grpo_core.llm.data import BENCHMARKS, GSM8K_SAMPLE, write_gsm8k_sample, write_local_dataset

GSM8K_PRESETS = [name for name in preset_names() if name.startswith("gsm8k-")]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """The model folder, the GSM8K sample and a benchmark folder (gsm8k from the sample, one MATH-500 row)."""
    from grpo_core.llm.model import save_tiny_chat_model

    root = tmp_path_factory.mktemp("gsm8k-assets")
    model = save_tiny_chat_model(root / "model")
    data = write_gsm8k_sample(root / "gsm8k")
    bench = root / "benchmarks"
    write_gsm8k_sample(bench / "gsm8k")
    write_local_dataset(bench / "math500", {BENCHMARKS["math500"].split: [
        {"problem": "What is $\\frac{1}{2} + \\frac{1}{4}$?", "solution": "...", "answer": "\\frac{3}{4}",
         "subject": "Prealgebra", "level": 1, "unique_id": "test/x.json"}]})
    return {"model": str(model), "data": str(data), "bench": str(bench)}


def test_every_gpu_preset_is_covered():
    assert GSM8K_PRESETS == [n for n, c in PRESETS.items() if c.requires_gpu]
    assert len(GSM8K_PRESETS) == 5


def test_the_shipped_sample_is_in_the_gsm8k_schema():
    from grpo_core.llm.answers import extract_answer, gsm8k_reference

    rows = [json.loads(x) for x in GSM8K_SAMPLE.read_text().splitlines()]
    assert len(rows) == 20 and all(set(r) == {"question", "answer"} for r in rows)
    refs = [gsm8k_reference(r["answer"]) for r in rows]
    assert refs[:3] == [14.0, 8.0, 210.0] and -7.0 in refs and 1625.0 in refs  # signs and thousands
    # the extractor reads the final line the way the reward does
    assert [extract_answer(r["answer"]) for r in rows] == refs


@pytest.mark.parametrize("preset", GSM8K_PRESETS)
def test_half_precision_is_refused_on_the_cpu(preset, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(GrpoError, match="needs a CUDA GPU and none is available here"):
        check_environment(make_config(preset))
    with pytest.raises(ParameterError, match="`bf16` needs a GPU; set it to false with device='cpu'"):
        make_config(preset, device="cpu", requires_gpu=False)
    with pytest.raises(ParameterError, match="`fp16` needs a GPU"):
        make_config(preset, device="cpu", requires_gpu=False, bf16=False, fp16=True)
    with pytest.raises(ParameterError, match="exclude each other"):
        make_config(preset, fp16=True)
    auto = make_config(preset, device="auto", requires_gpu=False)  # bf16 stays on: refused at the machine check
    with pytest.raises(GrpoError, match="`bf16` needs a CUDA GPU .*pass -p bf16 false"):
        check_environment(auto)


@pytest.mark.parametrize("preset", GSM8K_PRESETS)
def test_gsm8k_preset_runs_end_to_end_on_a_from_config_model(preset, assets, tmp_path):
    from grpo_core.llm.experiment import run_experiment
    from grpo_core.llm.model import load_pretrained
    from grpo_core.llm.prompts import build_train_dataset
    from grpo_core.llm.training import reward_functions

    base = PRESETS[preset]
    cfg = make_config(
        preset, model=assets["model"], dataset=assets["data"], benchmark_dir=assets["bench"],
        eval_suite=["gsm8k", "math500"], device="cpu", requires_gpu=False, bf16=False,
        max_steps=2, max_completion_length=6, num_prompts=2, gradient_accumulation_steps=2,
        eval_every=1, eval_samples=2, save_every=1, num_threads=1, diagnose_every=0,
        output_dir=str(tmp_path / "run"),
    )
    # what the preset keeps: its learning rate, KL weight, temperature, system prompt, G
    for key in ("learning_rate", "beta", "temperature", "system_prompt", "group_size", "gradient_checkpointing"):
        assert getattr(cfg, key) == getattr(base, key), key
    _, tok = load_pretrained(assets["model"], dtype="float32")
    train = build_train_dataset(cfg, tok)
    assert len(train) == 16 and train[0]["reference"] == 14.0
    roles = [m["role"] for m in train[0]["prompt"]]  # chat messages: the template path
    assert roles == (["system", "user"] if base.system_prompt else ["user"])
    correct = reward_functions(cfg, tok)[0]
    assert correct(completions=["So 3*4+2 = 14.\n#### 14", "#### 15"], reference=[14.0, 14.0]) == [1.0, 0.0]

    summary = run_experiment(cfg)
    run = tmp_path / "run"
    assert summary["steps"] == 2
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train_rows = [r for r in lines if r["split"] == "train"]
    assert [r["step"] for r in train_rows] == [1, 2]
    assert {"reward/correctness", "kl", "frac_reward_zero_std"} <= set(train_rows[0])
    assert sum(r["split"] == "eval" for r in lines) == 2
    evals = json.loads((run / "evals.json").read_text())
    assert set(evals["start"]) == set(evals["end"]) == {"gsm8k", "math500"}
    assert evals["start"]["gsm8k"]["n"] == 2 and evals["start"]["math500"]["n"] == 1
    prov = json.loads((run / "provenance.json").read_text())
    assert (prov["world_size"], prov["per_device_batch"], prov["gradient_accumulation_steps"],
            prov["global_batch"]) == (1, 4, 2, 8)
    assert json.loads((run / "config.json").read_text())["preset"] == preset
    assert not (run / "checkpoints").exists()


def test_gpu_check_without_cuda_says_so_and_exits_0():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py")], capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == "skipped" and out["cuda"] is False
    assert "no CUDA GPU" in out["message"]
