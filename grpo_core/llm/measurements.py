"""The run's measurements at its start and end: the evaluation suite and the gradient constants.

Both are stored per phase (``"start"``, ``"end"``) in the run folder, ``evals.json`` and
``gradient_constants.json``; a resumed run does not repeat the start evaluation, and the start
constants of a tiny model are cached with its warm-up.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import ParameterError
from .config import ExperimentConfig
from .policy import _warmup_key
from .runs import read_json, write_json
from .session import RunContext

__all__ = ["evaluate_suite", "measure_gradient_constants"]


def evaluate_suite(
    model, tokenizer, cfg: ExperimentConfig, eval_sets: dict, ctx: RunContext, phase: str, *, force: bool = False
) -> dict[str, dict]:
    """Evaluate every set of the suite and store the results under ``phase`` in ``evals.json``.

    A resumed run does not repeat the ``start`` evaluation (it is already in the file) unless
    ``force``. Returns ``{set name: EvalResult.to_dict()}``.

    Parameters
    ----------
    model, tokenizer
        The model under test and its tokenizer.
    cfg : ExperimentConfig
        ``eval_sampled`` (samples per problem), ``temperature``, ``seed`` are read.
    eval_sets : dict of str to EvalSet
        From :func:`~grpo_core.llm.prompts.build_eval_sets`.
    ctx : RunContext
        The run; ``ctx.timings["eval_<phase>"]`` is set (seconds) when the suite is evaluated.
    phase : str
        Key in ``evals.json`` (``"start"`` or ``"end"``).
    force : bool, default False
        Evaluate even when ``phase`` is already stored (the stored results are then replaced).

    Returns
    -------
    dict of str to dict
        Per set: ``name``, ``n``, ``accuracy``, ``sampled_accuracy``, ``samples``, ``seconds``,
        ``stderr`` (NaN as ``None``) and ``skipped``; the stored results when ``phase`` was
        already in the file and not ``force``.

    Raises
    ------
    DataError
        ``evals.json`` exists but is not valid JSON.
    ParameterError
        An empty evaluation set (:func:`~grpo_core.llm.evaluation.evaluate`).
    """
    from .evaluation import evaluate

    path = ctx.path / "evals.json"
    stored = read_json(path) if path.exists() else {}
    if phase in stored and not force:
        return stored[phase]
    t0 = time.perf_counter()
    results = {}
    for name, es in eval_sets.items():
        res = evaluate(
            model,
            tokenizer,
            es.items,
            es.scorer,
            name=name,
            max_new_tokens=es.max_new_tokens,
            samples=cfg.eval_sampled,
            temperature=cfg.temperature,
            seed=cfg.seed,
        )
        results[name] = {**res.to_dict(), "skipped": es.skipped}
    ctx.timings[f"eval_{phase}"] = time.perf_counter() - t0
    if ctx.main:
        stored = read_json(path) if path.exists() else {}
        stored[phase] = results
        write_json(path, stored)
    return results


def measure_gradient_constants(
    model, tokenizer, cfg: ExperimentConfig, eval_sets: dict, ctx: RunContext, phase: str
) -> dict:
    """c1, c2, c3 and G* on the model now (:func:`grpo_core.llm.constants.measure_constants`), on the
    first evaluation set's prompts with ``constants_samples`` completions each; stored under ``phase``
    in ``gradient_constants.json``. The start value of a tiny model is cached with its warm-up (same
    weights, same numbers).

    Parameters
    ----------
    model, tokenizer
        The model at its current weights and its tokenizer.
    cfg : ExperimentConfig
        ``constants_samples`` (completions per prompt), ``temperature``, ``seed``, and for the
        cache ``warmup_cache`` and the warm-up settings.
    eval_sets : dict of str to EvalSet
        From :func:`~grpo_core.llm.prompts.build_eval_sets`; only the first set is used (its prompts, references,
        scorer and ``max_new_tokens``).
    ctx : RunContext
        The run; ``ctx.timings["constants_<phase>"]`` is set (seconds).
    phase : str
        Key in ``gradient_constants.json`` (``"start"`` or ``"end"``); only ``"start"`` is cached.

    Returns
    -------
    dict
        As :func:`grpo_core.llm.constants.measure_constants` (``c1``, ``c2``, ``c3``, ``g_star``,
        ``g_star_exact``, ``intervals``, ``mean_reward``...), plus ``cached: True`` when read from
        the cache. The stored entry adds ``eval_set`` (the set's name).

    Raises
    ------
    ParameterError
        As :func:`grpo_core.llm.constants.measure_constants`.
    DataError
        A cache file or ``gradient_constants.json`` that is not valid JSON.
    ParameterError
        ``eval_sets`` is empty (the constants are measured on the first evaluation set's prompts).

    References
    ----------
    "Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025),
    Theorem 7; :mod:`grpo_core.llm.constants`.
    """
    from .constants import measure_constants

    if not eval_sets:
        raise ParameterError(
            "eval_suite",
            "measuring the constants needs at least one evaluation set "
            "(their prompts are the first set's); `eval_suite` is empty",
        )
    first = next(iter(eval_sets.values()))
    settings = {
        "prompts": len(first.items),
        "samples": cfg.constants_samples,
        "temperature": cfg.temperature,
        "sketch_dim": 8192,
        "seed": cfg.seed,
    }
    cache = None
    if phase == "start" and cfg.is_tiny and cfg.warmup_cache:
        cache = Path(cfg.warmup_cache) / _warmup_key(cfg) / "gradient_constants_start.json"
    result = None
    if cache is not None and cache.exists():
        stored = read_json(cache)
        if stored.get("settings") == settings:
            result = {**stored["constants"], "cached": True}
    t0 = time.perf_counter()
    if result is None:
        result = measure_constants(
            model,
            tokenizer,
            [i["prompt"] for i in first.items],
            [i["reference"] for i in first.items],
            first.scorer,
            samples_per_prompt=cfg.constants_samples,
            max_new_tokens=first.max_new_tokens,
            temperature=cfg.temperature,
            sketch_dim=settings["sketch_dim"],
            seed=cfg.seed,
        )
        if cache is not None and ctx.main:
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_json(cache, {"settings": settings, "constants": result})
    ctx.timings[f"constants_{phase}"] = time.perf_counter() - t0
    if ctx.main:
        path = ctx.path / "gradient_constants.json"
        stored = read_json(path) if path.exists() else {}
        stored[phase] = {**result, "eval_set": first.name}
        write_json(path, stored)
    return result
