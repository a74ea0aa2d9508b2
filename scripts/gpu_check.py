"""A prepared check of the GPU path: a GSM8K preset's settings on a from-config model, for a few minutes.

On a machine with a CUDA GPU and no model hub: builds the preset model's architecture from a config
(random weights, :data:`grpo_core.llm.sizing.ARCHITECTURES`; the character tokenizer with a chat
template, the model's own vocabulary size), trains it with the preset's settings on the shipped
GSM8K-format sample (:data:`grpo_core.llm.data.GSM8K_SAMPLE`) until the time is up, and prints one
JSON object: completion tokens per second, seconds per step, the peak GPU memory allocated next to
the sizing estimate (:func:`grpo_core.llm.sizing.memory_estimate`), and whether the run folder holds
every file of a run. A random model's rewards are zero, so this measures the machinery (generation,
the backward pass, memory), not learning.

Without CUDA it prints the same kind of JSON object with ``"status": "skipped"`` and exits 0.

Usage::

    python scripts/gpu_check.py [--preset gsm8k-qwen2.5-0.5b] [--minutes 3] [--out gpu-check]

Exit status: 0 when the check passed or was skipped, 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="gsm8k-qwen2.5-0.5b", help="a GSM8K preset (default gsm8k-qwen2.5-0.5b)")
    p.add_argument("--minutes", type=float, default=3.0, help="training time, minutes (default 3)")
    p.add_argument("--out", default="gpu-check", help="folder for the model, data and run (default ./gpu-check)")
    p.add_argument("--max-completion-length", type=int, default=0, help="override the preset's (0: keep it)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    """Run the check; print one JSON object; return the exit status."""
    args = _parse(argv)
    import torch

    if not torch.cuda.is_available():
        print(json.dumps({"status": "skipped", "cuda": False, "preset": args.preset,
                          "message": "no CUDA GPU here (torch.cuda.is_available() is False): nothing to check; run "
                                     "this script on a machine with a CUDA GPU"}))
        return 0
    from transformers import AutoConfig, AutoModelForCausalLM, TrainerCallback

    from grpo_core.llm.config import PRESETS, make_config
    from grpo_core.llm.data import write_gsm8k_sample
    from grpo_core.llm.experiment import run_experiment
    from grpo_core.llm.model import build_chat_tokenizer
    from grpo_core.llm.runs import RUN_FILES
    from grpo_core.llm.sizing import ARCHITECTURES, count_parameters_of, from_config_kwargs, memory_estimate

    if args.preset not in PRESETS or not PRESETS[args.preset].requires_gpu:
        gpu_presets = [n for n, c in PRESETS.items() if c.requires_gpu]
        print(f"gpu_check.py: error: --preset must be one of {', '.join(gpu_presets)}", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    out = Path(args.out).resolve()
    base = PRESETS[args.preset]
    arch = ARCHITECTURES[base.model]
    tokenizer = build_chat_tokenizer()
    special = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                   pad_token_id=tokenizer.pad_token_id)
    config = AutoConfig.for_model(arch.model_type, **from_config_kwargs(arch, **special))
    bf16 = torch.cuda.is_bf16_supported()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16 if bf16 else torch.float32)
    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    n_params = sum(p.numel() for p in model.parameters())
    del model
    data = write_gsm8k_sample(out / "gsm8k")
    write_gsm8k_sample(out / "benchmarks" / "gsm8k")
    overrides = dict(model=str(out / "model"), dataset=str(data), benchmark_dir=str(out / "benchmarks"),
                     eval_suite=["gsm8k"], eval_samples=4, eval_every=0, max_steps=100_000, save_every=100_000,
                     diagnose_every=0, output_dir=str(out / "run"), resume=False, bf16=bf16, fp16=not bf16)
    if args.max_completion_length:
        overrides["max_completion_length"] = args.max_completion_length
    cfg = make_config(args.preset, **overrides)
    seconds = args.minutes * 60

    class TimeLimit(TrainerCallback):
        def __init__(self):
            self.start = None

        def on_step_end(self, a, state, control, **kw):
            self.start = self.start or time.perf_counter()
            if time.perf_counter() - self.start > seconds:
                control.should_training_stop = True
            return control

    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    failure = None
    try:
        summary = run_experiment(cfg, extra_callbacks=[TimeLimit()])
    except Exception as exc:  # the JSON line must come out whatever broke
        summary, failure = {}, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    wall = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 1024 ** 3
    run = out / "run"
    present = {name: (run / name).exists() for name in RUN_FILES}
    rows = []
    if (run / "metrics.jsonl").exists():
        rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
    train_rows = [r for r in rows if r.get("split") == "train"]
    steps = summary.get("steps", 0)
    sized = memory_estimate(
        arch, per_device_batch=cfg.completions // cfg.gradient_accumulation_steps // 1,
        generation_batch=cfg.completions * cfg.steps_per_generation, prompt_length=256,
        completion_length=cfg.max_completion_length, reference=cfg.beta > 0,
        precision="bf16" if bf16 else "fp16", gradient_checkpointing=cfg.gradient_checkpointing,
        gpu_gib=torch.cuda.get_device_properties(0).total_memory / 1024 ** 3,
    )
    checks = {
        "finished": failure is None,
        "files": all(present.values()),
        "steps_logged": steps > 0 and [r["step"] for r in train_rows] == list(range(1, steps + 1)),
        "weights_removed": not (run / "checkpoints").exists(),
    }
    report = {
        "status": "ok" if all(checks.values()) else "failed",
        "cuda": True,
        "gpu": torch.cuda.get_device_name(0),
        "preset": args.preset,
        "architecture": base.model,
        "parameters": n_params,
        "parameters_from_shapes": count_parameters_of(arch),
        "dtype": "bf16" if bf16 else "fp16 (autocast, fp32 weights)",
        "completions_per_step": cfg.completions,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "max_completion_length": cfg.max_completion_length,
        "steps": steps,
        "wall_seconds": round(wall, 1),
        "seconds_per_step": summary.get("seconds_per_step"),
        "completion_tokens_per_second": summary.get("completion_tokens_per_second"),
        "mean_completion_length": (sum(r.get("completion_length", 0) for r in train_rows) / len(train_rows)
                                   if train_rows else None),
        "peak_memory_allocated_GiB": round(peak, 2),
        "sized_GiB": {k: round(v, 2) for k, v in sized.items() if k not in ("fits",)},
        "checks": checks,
        "files": present,
        "error": failure,
        "run_folder": str(run),
    }
    print(json.dumps(report))
    return 0 if report["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
