"""cpu-tiny: seconds per GRPO step, generated tokens per second, the DynamicsCallback's cost, a full run.

Rows
----
``grpo_step``
    TRL ``GRPOTrainer`` on the warmed-up tiny model at the preset's batch (G = 8, 32 prompts:
    256 completions per step): mean seconds per optimizer step (TRL's own ``step_time``) and the
    completion tokens generated per second of training.
``generate``
    Sampling alone (``model.generate``, 256 prompts x 8 completions, full distribution): tokens
    per second.
``callback``
    The same GRPO run twice from the same weights and seed, without and with
    :class:`grpo_core.runs.callback.DynamicsCallback` (``every=50``): wall seconds per step of each,
    their ratio, and the callback's own time per step (writing lines + periodic diagnosis) as a
    fraction of the step time. The own-time fraction is the robust number on a shared machine; the
    A/B ratio also carries the machine's noise.
``full_run``
    One complete ``cpu-tiny`` run with the preset's settings, as a first run makes it (supervised
    warm-up not cached, start and end evaluations, GRPO): wall seconds per phase. Skipped with
    ``--quick``.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from pathlib import Path


def _quiet():
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore")


def _grpo(model_dir: Path, tok, cfg, out: Path, steps: int, callback: bool):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    from grpo_core.llm.session import RunContext
    from grpo_core.llm.tasks import sample_problems
    from grpo_core.llm.training import grpo_args, reward_functions
    from grpo_core.runs.callback import DynamicsCallback

    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    probs = sample_problems("add2", cfg.prompts_per_step * (steps + 1), seed=1)
    data = Dataset.from_list([{"prompt": p["prompt"], "answer": p["answer"]} for p in probs])
    ctx = RunContext(path=out, name="bench", device="cpu")
    args = grpo_args(cfg.replace(max_steps=steps, save_every=10_000), ctx)
    cbs = [DynamicsCallback(out, every=50, quiet=True)] if callback else []
    trainer = GRPOTrainer(model=model, reward_funcs=reward_functions(cfg, tok), args=args, train_dataset=data,
                          processing_class=tok, callbacks=cbs)
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    hist = [h for h in trainer.state.log_history if "step_time" in h]
    return wall, hist, (cbs[0] if cbs else None)


def main(quick: bool = False) -> list[dict]:
    import numpy as np
    import torch

    from grpo_core.llm.config import make_config
    from grpo_core.llm.evaluation import generate_completions
    from grpo_core.llm.experiment import run_experiment
    from grpo_core.llm.policy import build_policy
    from grpo_core.llm.session import start_run
    from grpo_core.llm.tasks import sample_problems

    _quiet()
    torch.set_num_threads(1)
    rows = []
    steps = 20 if quick else 120
    cache = os.environ.get(
        "GRPO_WARMUP_CACHE",
        str(Path(__file__).resolve().parents[1] / "book" / "experiments" / "runs" / ".warmup-cache"),
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cfg = make_config("cpu-tiny", output_dir=str(tmp / "policy"), warmup_cache=cache, num_threads=1)
        ctx = start_run(cfg)
        model, tok = build_policy(cfg, ctx)
        base = ctx.path / "base_model"

        # sampling alone
        prompts = [p["prompt"] for p in sample_problems("add2", 256, seed=2)]
        t0 = time.perf_counter()
        _, ids = generate_completions(
            model,
            tok,
            prompts,
            max_new_tokens=cfg.max_completion_length,
            do_sample=True,
            num_return_sequences=cfg.group_size,
            batch_size=64,
        )
        gen_s = time.perf_counter() - t0
        tokens = sum(len(i) for i in ids)
        rows.append({"row": "generate", "completions": len(ids), "tokens": tokens, "seconds": gen_s,
                     "tokens_per_s": tokens / gen_s})

        # the callback: A/B (order alternated to spread the machine's drift) and its own time
        walls = {False: [], True: []}
        own = []
        hist_all = []
        for rep, order in enumerate(((False, True), (True, False))[: 1 if quick else 2]):
            for with_cb in order:
                wall, hist, cb = _grpo(base, tok, cfg, tmp / f"ab{rep}{int(with_cb)}", steps, with_cb)
                walls[with_cb].append(wall / steps)
                hist_all += hist
                if cb is not None:
                    own.append((cb.write_seconds + cb.diagnosis_seconds) / steps)
        step_time = float(np.mean([h["step_time"] for h in hist_all]))
        lengths = np.array([h.get("completions/mean_length", np.nan) for h in hist_all], dtype=float)
        rows.append({"row": "grpo_step", "G": cfg.group_size, "B": cfg.prompts_per_step,
                     "completions": cfg.completions, "s_per_step": step_time,
                     "tokens_per_s": float(np.nanmean(lengths)) * cfg.completions / step_time})
        without, with_ = float(np.mean(walls[False])), float(np.mean(walls[True]))
        rows.append(
            {
                "row": "callback",
                "steps": steps,
                "s_per_step_without": without,
                "s_per_step_with": with_,
                "ratio": with_ / without,
                "own_s_per_step": float(np.mean(own)),
                "own_fraction": float(np.mean(own)) / without,
            }
        )

        if not quick:
            # no warm-up cache: the wall time of a first run, warm-up included
            full = make_config(
                "cpu-tiny", output_dir=str(tmp / "full"), warmup_cache="", num_threads=1, seed=0
            )
            t0 = time.perf_counter()
            summary = run_experiment(full)
            rows.append({"row": "full_run", "steps": summary["steps"], "wall_s": time.perf_counter() - t0,
                         **{f"{k}_s": v for k, v in summary["timings"].items()}})
    return rows
