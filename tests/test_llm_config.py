"""Settings of the LLM experiment: presets, overrides, and every bad input refused before training."""

from __future__ import annotations

import dataclasses

import pytest

from grpo_core.errors import GrpoError, ParameterError
from grpo_core.llm.config import (
    PRESETS,
    ExperimentConfig,
    check_environment,
    check_model_loadable,
    make_config,
    parameter_help,
)
from grpo_core.llm.runs import run_name


def test_presets_exist_and_validate():
    assert list(PRESETS)[0] == "cpu-tiny"
    for name in ("gsm8k-qwen2.5-0.5b", "gsm8k-r1-distill-qwen-1.5b", "gsm8k-nemotron-mini-4b",
                 "gsm8k-deepseek-llm-7b-chat"):
        cfg = make_config(name)
        assert cfg.requires_gpu and cfg.dataset == "openai/gsm8k" and cfg.dataset_config == "main"
        assert cfg.group_size == 4 and cfg.bf16
        assert cfg.eval_suite[0] == "gsm8k" and "aime25" in cfg.eval_suite
    assert make_config("gsm8k-r1-distill-qwen-1.5b").model == "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"
    tiny = make_config("cpu-tiny")
    assert not tiny.bf16 and not tiny.gradient_checkpointing and tiny.is_tiny and not tiny.requires_gpu
    assert 1e-4 <= tiny.learning_rate <= 1e-3


def test_configs_are_frozen_and_documented():
    cfg = make_config("cpu-tiny")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.group_size = 3
    helps = parameter_help()
    assert set(helps) == {f.name for f in dataclasses.fields(ExperimentConfig)}
    assert all(len(text) > 20 for text in helps.values())


def test_string_overrides_are_converted():
    cfg = make_config("cpu-tiny", group_size="16", learning_rate="5e-4", keep_checkpoints="true",
                      eval_suite="add2, sub2", steps_per_generation="2", num_iterations="2")
    assert (cfg.group_size, cfg.learning_rate, cfg.keep_checkpoints) == (16, 5e-4, True)
    assert cfg.eval_suite == ("add2", "sub2")
    assert cfg.lag == 4
    assert make_config("cpu-tiny", group_size=None).group_size == PRESETS["cpu-tiny"].group_size


def test_budget_derives_prompts():
    cfg = make_config("cpu-tiny", completions_per_step=256, group_size=32)
    assert (cfg.prompts_per_step, cfg.completions) == (8, 256)
    cfg = make_config("cpu-tiny", num_prompts=16, group_size=4)
    assert (cfg.prompts_per_step, cfg.completions) == (16, 64)


@pytest.mark.parametrize(
    "preset,overrides,parameter,message",
    [
        ("nope", {}, "preset", "must be one of cpu-tiny"),
        ("cpu-tiny", {"lr": 1e-3}, "lr", "unknown parameter"),
        ("cpu-tiny", {"group_size": 1}, "group_size", "integer >= 2"),
        (
            "cpu-tiny",
            {"group_size": 3, "completions_per_step": 256},
            "group_size",
            "must divide `completions_per_step`",
        ),
        ("cpu-tiny", {"learning_rate": 0}, "learning_rate", r"> 0"),
        ("cpu-tiny", {"learning_rate": -1e-4}, "learning_rate", r"> 0"),
        ("cpu-tiny", {"learning_rate": "fast"}, "learning_rate", "finite number"),
        ("cpu-tiny", {"momentum": 1.0}, "momentum", r"\[0, 1\)"),
        ("cpu-tiny", {"beta": -0.1}, "beta", ">= 0"),
        ("cpu-tiny", {"epsilon": 0}, "epsilon", "> 0"),
        ("cpu-tiny", {"max_steps": 0}, "max_steps", ">= 1"),
        ("cpu-tiny", {"steps_per_generation": 0}, "steps_per_generation", ">= 1"),
        ("cpu-tiny", {"optimizer": "lion"}, "optimizer", "'adamw', 'sgd'"),
        ("cpu-tiny", {"keep_checkpoints": "maybe"}, "keep_checkpoints", "true or false"),
        ("cpu-tiny", {"device": "cpu", "bf16": True}, "bf16", "needs a GPU"),
        ("cpu-tiny", {"eval_suite": ["add2", "gsm8k"]}, "eval_suite", "must be among"),
        ("cpu-tiny", {"model": "Qwen/Qwen2.5-0.5B-Instruct"}, "dataset", "tiny model"),
        ("cpu-tiny", {"preset": "gsm8k-qwen2.5-0.5b"}, "preset", "cannot be overridden"),
    ],
)
def test_bad_settings_are_refused(preset, overrides, parameter, message):
    with pytest.raises(ParameterError, match=message) as info:
        make_config(preset, **overrides)
    assert info.value.parameter == parameter


def test_gpu_preset_without_gpu_is_a_clear_error(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(GrpoError, match="needs a CUDA GPU"):
        check_environment(make_config("gsm8k-qwen2.5-0.5b"))
    assert check_environment(make_config("cpu-tiny")) == "cpu"
    forced = make_config("gsm8k-qwen2.5-0.5b", device="cpu", requires_gpu=False, bf16=False)
    assert check_environment(forced) == "cpu"
    # device 'auto' on a machine without a GPU: bf16 / vLLM are refused before anything loads
    for bad in ("bf16", "use_vllm"):
        auto = make_config(
            "gsm8k-qwen2.5-0.5b", **{"device": "auto", "requires_gpu": False, "bf16": False, bad: True}
        )
        with pytest.raises(GrpoError, match=f"`{bad}` needs a CUDA GPU .*pass -p {bad} false"):
            check_environment(auto)


def test_model_that_cannot_be_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = make_config("gsm8k-qwen2.5-0.5b", model=str(tmp_path / "no-such-model"))
    with pytest.raises(GrpoError, match="cannot be loaded"):
        check_model_loadable(cfg)
    check_model_loadable(make_config("cpu-tiny"))  # nothing to load


def test_run_names_are_deterministic_and_distinct():
    a = make_config("cpu-tiny", group_size=4, seed=1)
    assert (
        run_name(a) == run_name(make_config("cpu-tiny", group_size="4", seed="1")) == "cpu-tiny__G4-B32__s1"
    )
    b = make_config("cpu-tiny", group_size=4, seed=1, learning_rate=1e-4)
    assert run_name(b) == "cpu-tiny__G4-B32__learning_rate0.0001__s1"
    # settings that do not change the outcome stay out of the name
    assert run_name(
        make_config("cpu-tiny", group_size=4, seed=1, output_dir="/x", warmup_cache="/c")
    ) == run_name(a)
    many = make_config("cpu-tiny", learning_rate=1e-4, beta=0.1, epsilon=0.3, momentum=0.5, weight_decay=0.01)
    assert run_name(many).startswith("cpu-tiny__G8-B32__h") and len(run_name(many)) < 50


def test_gradient_accumulation_and_vllm_settings_are_checked():
    cfg = make_config("gsm8k-qwen2.5-0.5b")
    assert (cfg.completions, cfg.gradient_accumulation_steps, cfg.lag) == (64, 16, 1)
    assert make_config("gsm8k-qwen2.5-0.5b", gradient_accumulation_steps=64).gradient_accumulation_steps == 64
    with pytest.raises(ParameterError, match="must divide the 64 completions") as info:
        make_config("gsm8k-qwen2.5-0.5b", gradient_accumulation_steps=3)
    assert info.value.parameter == "gradient_accumulation_steps"
    with pytest.raises(ParameterError, match="integer >= 1"):
        make_config("cpu-tiny", gradient_accumulation_steps=0)
    with pytest.raises(ParameterError, match="'colocate', 'server'"):
        make_config("gsm8k-qwen2.5-0.5b", vllm_mode="remote")
    with pytest.raises(ParameterError, match="vllm_gpu_memory_utilization"):
        make_config("gsm8k-qwen2.5-0.5b", vllm_gpu_memory_utilization=0)
    with pytest.raises(ParameterError, match="vllm_server_port"):
        make_config("gsm8k-qwen2.5-0.5b", vllm_server_port=70000)
    # neither changes the run's name: they spread the same steps or sample with another engine
    assert run_name(make_config("gsm8k-qwen2.5-0.5b", gradient_accumulation_steps=4, vllm_mode="server")) == run_name(
        make_config("gsm8k-qwen2.5-0.5b")
    )


def test_vllm_is_refused_clearly_when_it_is_not_installed(monkeypatch):
    import importlib.util

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    cfg = make_config("gsm8k-qwen2.5-0.5b", use_vllm=True, vllm_mode="server")
    with pytest.raises(GrpoError, match="needs the vllm package.*trl vllm-serve --model Qwen/Qwen2.5-0.5B-Instruct"):
        check_environment(cfg)
    assert check_environment(make_config("gsm8k-qwen2.5-0.5b")) == "cuda"  # without vLLM: fine


def test_grpo_args_spread_the_step_over_processes_and_accumulation(tmp_path, monkeypatch):
    from grpo_core.llm.session import RunContext
    from grpo_core.llm.training import grpo_args

    ctx = RunContext(path=tmp_path, name="x", device="cpu")
    cfg = make_config("cpu-tiny", group_size=4, num_prompts=8, steps_per_generation=2, gradient_accumulation_steps=2,
                      vllm_mode="server", vllm_server_port=8123)
    monkeypatch.delenv("WORLD_SIZE", raising=False)  # one process (more would start a process group)
    args = grpo_args(cfg, ctx)
    # 32 completions per optimizer step = 2 micro-batches x 16; a generation batch = 2 optimizer steps
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.steps_per_generation) == (16, 2, 4)
    assert (args.vllm_mode, args.vllm_server_port, args.use_vllm) == ("server", 8123, False)
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(GrpoError, match="cannot be split over 3 processes x 2 accumulation steps"):
        grpo_args(cfg, ctx)


def test_sizing_counts_the_model_cards_parameters_and_the_bytes_per_parameter():
    from grpo_core.llm.sizing import (
        ARCHITECTURES,
        PRESET_SIZING,
        count_parameters_of,
        memory_estimate,
        sizing_table,
    )

    billions = {m: round(count_parameters_of(a) / 1e9, 2) for m, a in ARCHITECTURES.items()}
    # the model cards: Qwen2.5 0.49 B and 1.54 B, R1-Distill 1.78 B, Nemotron-Mini 4.19 B, DeepSeek-LLM 6.91 B
    assert list(billions.values()) == [0.49, 1.54, 1.78, 4.19, 6.91]
    assert {PRESETS[p].model for p in PRESET_SIZING} == set(ARCHITECTURES)
    arch = ARCHITECTURES["deepseek-ai/deepseek-llm-7b-chat"]
    n = count_parameters_of(arch)
    kw = dict(per_device_batch=1, generation_batch=1, prompt_length=1, completion_length=1, reference=True)
    ddp, z3 = memory_estimate(arch, **kw), memory_estimate(arch, strategy="zero3", num_gpus=4, **kw)
    assert ddp["state"] == pytest.approx(8 * n / 2**30) and ddp["reference"] == pytest.approx(2 * n / 2**30)
    assert z3["state"] == pytest.approx(4 * n / 2**30) and z3["reference"] == pytest.approx(0.5 * n / 2**30)
    assert not ddp["fits"] or ddp["total"] < 72  # 80 GiB x 0.9
    assert memory_estimate(arch, **{**kw, "per_device_batch": 8, "generation_batch": 32, "prompt_length": 256,
                                    "completion_length": 512})["fits"] == 0.0  # 7B on one 80 GB GPU: no
    table = sizing_table()
    assert table.fits.all() and list(table.preset) == list(PRESET_SIZING)
    assert (table.per_device_batch * table.gpus * table.grad_accum == table.global_batch).all()
    with pytest.raises(ParameterError, match="`strategy`"):
        memory_estimate(arch, strategy="zero1", **kw)
