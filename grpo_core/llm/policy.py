"""The starting policy of a run: the tiny model warmed up (or read from the warm-up cache), or a pretrained one.

:func:`build_policy` is the experiment's model step; the warm-up cache is keyed by the warm-up
settings and seed (:func:`_warmup_key`), so the same settings give the same model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from .config import ExperimentConfig
from .runs import read_json, write_json
from .session import RunContext, _wait_for, barrier

__all__ = ["build_policy"]


def _warmup_key(cfg: ExperimentConfig) -> str:
    from .tasks import WARMUP_MIX

    spec = {
        "steps": cfg.warmup_steps,
        "batch": cfg.warmup_batch_size,
        "lr": cfg.warmup_learning_rate,
        "anneal": cfg.warmup_anneal,
        "mix": WARMUP_MIX,
        "hidden": cfg.tiny_hidden_size,
        "layers": cfg.tiny_layers,
        "seed": cfg.warmup_seed_used,
        "version": 2,
    }
    return hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def build_policy(cfg: ExperimentConfig, ctx: RunContext):
    """The starting policy and its tokenizer.

    Tiny model: built from a config and warmed up (supervised) on the arithmetic mixture, or read
    from the warm-up cache (same settings and seed: same model); saved to ``<run>/base_model`` and
    loaded back from there, so that TRL builds its reference policy (``beta > 0``) from exactly
    these weights, also when the run resumes. Pretrained models: ``from_pretrained``.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings: ``model``, ``model_revision``, ``bf16``; for the tiny model the
        ``warmup_*``, ``tiny_*`` settings, ``seed`` and ``warmup_cache`` (``""`` = no cache).
    ctx : RunContext
        From :func:`~grpo_core.llm.session.start_run`: the run folder (``base_model/``,
        ``warmup.json``), the device, and whether this process writes files.
        ``ctx.timings["warmup"]`` is set (seconds, tiny model only).

    Returns
    -------
    (model, tokenizer)
        On ``ctx.device``. Pretrained: dtype bfloat16 with ``bf16``, float32 on the CPU or with
        ``fp16`` (autocast), else the checkpoint's own dtype (``"auto"``) on a GPU; the tokenizer pads on the left
        (:func:`~grpo_core.llm.model.load_pretrained`). Tiny: float32, the character tokenizer.

    Raises
    ------
    GrpoError
        The model cannot be loaded; ``base_model/config.json`` is missing after the main process
        wrote it (a process other than the main one waits up to 600 s).
    DataError
        A cached warm-up whose ``warmup.json`` is missing or not valid JSON.
    """
    from transformers import AutoModelForCausalLM

    from .model import TinyModelSpec, build_tiny_model, load_pretrained, warmup
    from .tasks import build_char_tokenizer

    if not cfg.is_tiny:
        # fp16 trains fp32 weights under autocast (the gradient scaler refuses fp16 weights)
        dtype = "bfloat16" if cfg.bf16 else ("float32" if (ctx.device == "cpu" or cfg.fp16) else "auto")
        return load_pretrained(cfg.model, dtype=dtype, device=ctx.device, revision=cfg.model_revision or None)
    tokenizer = build_char_tokenizer()
    base = ctx.path / "base_model"
    t0 = time.perf_counter()
    info: dict[str, Any] = {
        "steps": cfg.warmup_steps,
        "batch_size": cfg.warmup_batch_size,
        "learning_rate": cfg.warmup_learning_rate,
        "anneal": cfg.warmup_anneal,
        "key": _warmup_key(cfg),
    }
    # with several processes only the main one warms up and writes base_model/; the others load it
    if ctx.main and not (base / "config.json").exists():
        cache = Path(cfg.warmup_cache) / info["key"] if cfg.warmup_cache else None
        if cache is not None and (cache / "config.json").exists():
            shutil.copytree(cache, base, dirs_exist_ok=True)
            info.update(read_json(cache / "warmup.json"), cached=True)
        else:
            spec = TinyModelSpec(hidden_size=cfg.tiny_hidden_size, num_layers=cfg.tiny_layers)
            model = build_tiny_model(tokenizer, spec, seed=cfg.warmup_seed_used)
            result = warmup(
                model,
                tokenizer,
                steps=cfg.warmup_steps,
                batch_size=cfg.warmup_batch_size,
                learning_rate=cfg.warmup_learning_rate,
                anneal=cfg.warmup_anneal,
                seed=cfg.warmup_seed_used,
            )
            info.update(
                final_loss=result.final_loss,
                seconds=result.seconds,
                cached=False,
                loss_every_50=[float(np.mean(result.losses[i : i + 50])) for i in range(0, len(result.losses), 50)],
            )
            model.save_pretrained(base)
            tokenizer.save_pretrained(base)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
                shutil.copytree(base, tmp, dirs_exist_ok=True)
                write_json(tmp / "warmup.json", {k: v for k, v in info.items() if k != "cached"})
                if cache.exists():  # another run filled the cache meanwhile
                    shutil.rmtree(tmp)
                else:
                    os.replace(tmp, cache)
        write_json(ctx.path / "warmup.json", info)
    barrier(ctx)
    _wait_for(base / "config.json")
    ctx.timings["warmup"] = time.perf_counter() - t0
    model = AutoModelForCausalLM.from_pretrained(str(base))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.to(ctx.device), tokenizer
