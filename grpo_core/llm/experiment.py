"""One GRPO experiment on a language model, step by step (the notebook calls these in order).

::

    cfg = make_config("cpu-tiny", group_size=16)          # validated settings
    run = start_run(cfg)                                  # folder, config.json, provenance.json
    model, tokenizer = build_policy(cfg, run)             # warm-up (tiny) or from_pretrained
    train_set = build_train_dataset(cfg, tokenizer)
    evals = build_eval_sets(cfg, tokenizer)
    evaluate_suite(model, tokenizer, cfg, evals, run, "start")
    measure_gradient_constants(model, tokenizer, cfg, evals, run, "start")   # if cfg.measure_constants
    trainer = build_trainer(cfg, run, model, tokenizer, train_set, evals)
    train(trainer, run)                                   # resumes from the last checkpoint
    evaluate_suite(trainer.model, tokenizer, cfg, evals, run, "end")
    finish_run(cfg, run, trainer)                         # summary.json; weights removed

:func:`run_experiment` does all of it (it is what ``python -m grpo_core.llm`` and
``accelerate launch -m grpo_core.llm`` run). Training is TRL's ``GRPOTrainer``; on several GPUs the
same code runs under ``accelerate launch`` (only the main process writes files).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import GrpoError, ParameterError
from .config import ExperimentConfig, check_environment, check_model_loadable
from .runs import (
    clean_weights,
    last_checkpoint,
    prepare_run_dir,
    provenance,
    read_json,
    run_name,
    write_json,
)

__all__ = [
    "RunContext",
    "start_run",
    "build_policy",
    "build_train_dataset",
    "build_eval_sets",
    "reward_functions",
    "grpo_args",
    "evaluate_suite",
    "measure_gradient_constants",
    "build_trainer",
    "train",
    "finish_run",
    "run_experiment",
    "make_prompt",
    "DEFAULT_RUNS_DIR",
]

#: Where runs go when ``output_dir`` is empty.
DEFAULT_RUNS_DIR = "runs"


@dataclass
class RunContext:
    """The run being made: its folder, device, name, timers.

    Attributes
    ----------
    path : pathlib.Path
        The run folder.
    name : str
        Deterministic run name.
    device : str
        ``"cpu"`` or ``"cuda"``.
    main : bool
        Whether this process writes files (rank 0).
    resumed_from : str or None
        Checkpoint the training resumed from.
    timings : dict
        Seconds per phase (``warmup``, ``eval_start``, ``grpo``, ``eval_end``, ...).
    """

    path: Path
    name: str
    device: str
    main: bool = True
    resumed_from: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


def _is_main() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def start_run(cfg: ExperimentConfig, *, check_model: bool = True) -> RunContext:
    """Check the machine and the model, create the run folder, write ``config.json`` and
    ``provenance.json``.

    Everything that can be checked before training is checked here: the device (a GPU preset
    without a GPU), the model (its configuration must load), the thread count.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (:func:`~grpo_core.llm.config.make_config`).
    check_model : bool
        Load the model's configuration to check the id or folder (skipped for the tiny model).

    Returns
    -------
    RunContext
        Folder ``cfg.output_dir`` (or ``runs/<run name>``), the device, ``main`` from the ``RANK``
        environment variable (rank 0 writes). A resumed run's ``provenance.json`` keeps the first
        session's record and lists every session under ``sessions``.

    Raises
    ------
    GrpoError
        No GPU for a GPU preset; a model that cannot be loaded.
    DataError
        An existing ``provenance.json`` that is not valid JSON.
    """
    import torch

    device = check_environment(cfg)
    if check_model:
        check_model_loadable(cfg)
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    name = run_name(cfg)
    path = Path(cfg.output_dir) if cfg.output_dir else Path(DEFAULT_RUNS_DIR) / name
    ctx = RunContext(path=path, name=name, device=device, main=_is_main())
    if ctx.main:
        prepare_run_dir(path)
        write_json(path / "config.json", {"run_name": name, **cfg.to_dict()})
        prov_path = path / "provenance.json"
        prov = provenance(cfg.seed, device)
        if prov_path.exists():  # a resumed run keeps the first session's record and adds this one
            old = read_json(prov_path)
            brief = ("date", "git", "device", "argv")
            prov["sessions"] = old.get("sessions", [{k: old.get(k) for k in brief}]) + [{k: prov.get(k) for k in brief}]
            prov = {**{k: v for k, v in old.items() if k != "sessions"}, "sessions": prov["sessions"]}
        write_json(prov_path, prov)
    return ctx


# --------------------------------------------------------------------------------------------
# Model
def _warmup_key(cfg: ExperimentConfig) -> str:
    from .tasks import WARMUP_MIX

    spec = {"steps": cfg.warmup_steps, "batch": cfg.warmup_batch_size, "lr": cfg.warmup_learning_rate,
            "anneal": cfg.warmup_anneal,
            "mix": WARMUP_MIX, "hidden": cfg.tiny_hidden_size, "layers": cfg.tiny_layers, "seed": cfg.warmup_seed_used,
            "version": 2}
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
        From :func:`start_run`: the run folder (``base_model/``, ``warmup.json``), the device, and
        whether this process writes files. ``ctx.timings["warmup"]`` is set (seconds, tiny model
        only).

    Returns
    -------
    (model, tokenizer)
        On ``ctx.device``. Pretrained: dtype bfloat16 with ``bf16``, else float32 on the CPU and
        the checkpoint's own dtype (``"auto"``) on a GPU; the tokenizer pads on the left
        (:func:`~grpo_core.llm.model.load_pretrained`). Tiny: float32, the character tokenizer.

    Raises
    ------
    GrpoError
        The model cannot be loaded; a process other than the main one waited more than 600 s for
        ``base_model/config.json``.
    DataError
        A cached warm-up whose ``warmup.json`` is missing or not valid JSON.
    """
    from transformers import AutoModelForCausalLM

    from .model import TinyModelSpec, build_tiny_model, load_pretrained, warmup
    from .tasks import build_char_tokenizer

    if not cfg.is_tiny:
        dtype = "bfloat16" if cfg.bf16 else ("float32" if ctx.device == "cpu" else "auto")
        return load_pretrained(cfg.model, dtype=dtype, device=ctx.device, revision=cfg.model_revision or None)
    tokenizer = build_char_tokenizer()
    base = ctx.path / "base_model"
    t0 = time.perf_counter()
    info: dict[str, Any] = {"steps": cfg.warmup_steps, "batch_size": cfg.warmup_batch_size,
                            "learning_rate": cfg.warmup_learning_rate, "anneal": cfg.warmup_anneal,
                            "key": _warmup_key(cfg)}
    if not (base / "config.json").exists():
        cache = Path(cfg.warmup_cache) / info["key"] if cfg.warmup_cache else None
        if cache is not None and (cache / "config.json").exists():
            if ctx.main:
                shutil.copytree(cache, base, dirs_exist_ok=True)
            info.update(read_json(cache / "warmup.json"), cached=True)
        else:
            spec = TinyModelSpec(hidden_size=cfg.tiny_hidden_size, num_layers=cfg.tiny_layers)
            model = build_tiny_model(tokenizer, spec, seed=cfg.warmup_seed_used)
            result = warmup(model, tokenizer, steps=cfg.warmup_steps, batch_size=cfg.warmup_batch_size,
                            learning_rate=cfg.warmup_learning_rate, anneal=cfg.warmup_anneal,
                            seed=cfg.warmup_seed_used)
            info.update(final_loss=result.final_loss, seconds=result.seconds, cached=False,
                        loss_every_50=[float(np.mean(result.losses[i:i + 50]))
                                       for i in range(0, len(result.losses), 50)])
            if ctx.main:
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
        if ctx.main:
            write_json(ctx.path / "warmup.json", info)
    _wait_for(base / "config.json")
    ctx.timings["warmup"] = time.perf_counter() - t0
    model = AutoModelForCausalLM.from_pretrained(str(base))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.to(ctx.device), tokenizer


def _wait_for(path: Path, timeout: float = 600.0) -> None:
    """Other ranks wait for the main process to write a file."""
    t0 = time.perf_counter()
    while not path.exists():
        if time.perf_counter() - t0 > timeout:
            raise GrpoError(f"timed out waiting for {path} (written by the main process)")
        time.sleep(0.5)


# --------------------------------------------------------------------------------------------
# Data
def make_prompt(question: str, cfg: ExperimentConfig, tokenizer) -> Any:
    """A GSM8K-style prompt: chat messages when the tokenizer has a chat template, else plain text.

    Parameters
    ----------
    question : str
        The problem text.
    cfg : ExperimentConfig
        Only ``system_prompt`` is read (``""`` = none).
    tokenizer : object
        Only its ``chat_template`` attribute is read (missing or empty: plain text).

    Returns
    -------
    list of dict or str
        With a chat template: ``[{"role": "system", ...}, {"role": "user", "content": question}]``
        (the system message only when ``system_prompt`` is set; TRL applies the template). Else
        ``"<system_prompt>\\n\\nQuestion: <question>\\nAnswer:"`` (without the first part when
        ``system_prompt`` is empty).

    References
    ----------
    TRL documentation, ``GRPOTrainer`` / dataset formats (standard vs. conversational prompts).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from grpo_core.llm.config import make_config
    >>> cfg = make_config("gsm8k-qwen2.5-0.5b", system_prompt="Be brief.")
    >>> make_prompt("1+1?", cfg, SimpleNamespace(chat_template=None))
    'Be brief.\\n\\nQuestion: 1+1?\\nAnswer:'
    >>> make_prompt("1+1?", cfg, SimpleNamespace(chat_template="{{...}}"))[-1]
    {'role': 'user', 'content': '1+1?'}
    """
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": cfg.system_prompt}] if cfg.system_prompt else []
        return messages + [{"role": "user", "content": question}]
    head = f"{cfg.system_prompt}\n\n" if cfg.system_prompt else ""
    return f"{head}Question: {question}\nAnswer:"


def build_train_dataset(cfg: ExperimentConfig, tokenizer):
    """The GRPO training prompts as a ``datasets.Dataset`` (``prompt`` + the reward's columns).

    Arithmetic: ``(max_steps x steps_per_generation + 1) x prompts_per_step`` problems drawn with
    replacement from the training pairs of ``add2`` (seed ``cfg.seed + 1``), enough prompts for
    every step of the run and one spare step. GSM8K: the training split, with ``reference`` = the
    number after ``####``.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (``dataset``, ``dataset_config``, ``train_split``, ``max_steps``,
        ``prompts_per_step``, ``steps_per_generation``, ``seed``, ``system_prompt``).
    tokenizer : object
        Passed to :func:`make_prompt` (chat template or plain text); unused for arithmetic.

    Returns
    -------
    datasets.Dataset
        Arithmetic: columns ``prompt`` (``"47+38="``) and ``answer`` (``"85"``), read by
        :func:`~grpo_core.llm.tasks.exact_match_reward`. GSM8K: ``prompt`` (string or chat
        messages) and ``reference`` (float), read by
        :func:`~grpo_core.llm.answers.correctness_reward`; every item whose answer ends in
        ``#### <number>``, in the split's order.

    Raises
    ------
    GrpoError
        The dataset cannot be loaded.
    DataError
        It is not in the GSM8K schema (no ``question``/``answer`` column) or has no item with a
        ``####`` answer.

    References
    ----------
    Cobbe et al. (2021), "Training Verifiers to Solve Math Word Problems" (GSM8K).
    """
    from datasets import Dataset

    from .data import load_gsm8k
    from .tasks import TRAIN_TASK, sample_problems

    if cfg.is_tiny:
        n = cfg.max_steps * cfg.prompts_per_step * cfg.steps_per_generation + cfg.prompts_per_step
        probs = sample_problems(TRAIN_TASK, n, seed=cfg.seed + 1, split="train")
        return Dataset.from_list([{"prompt": p["prompt"], "answer": p["answer"]} for p in probs])
    items = load_gsm8k(cfg.dataset, cfg.dataset_config, cfg.train_split, revision="")
    return Dataset.from_list([{"prompt": make_prompt(it["question"], cfg, tokenizer), "reference": it["reference"]}
                              for it in items])


@dataclass
class EvalSet:
    """One evaluation set: items (``prompt``, ``reference``), the scorer, generation length.

    Attributes
    ----------
    name : str
        The set (``"add2"``, ``"gsm8k"``).
    items : list of dict
        ``{"prompt": str or chat messages, "reference": str or float}``.
    scorer : callable
        From :func:`~grpo_core.llm.evaluation.make_scorer`.
    max_new_tokens : int
        Longest completion, in tokens.
    skipped : int
        Items of the source left out for want of a usable reference.
    """

    name: str
    items: list[dict]
    scorer: Any
    max_new_tokens: int
    skipped: int = 0


def build_eval_sets(cfg: ExperimentConfig, tokenizer) -> dict[str, EvalSet]:
    """The evaluation suite, first entry = the held-out training distribution.

    Arithmetic: held-out pairs of each task (``eval_samples`` of them, fixed seed, so every run
    sees the same problems). GSM8K presets: the benchmarks by hub id (:mod:`grpo_core.llm.data`),
    the first ``eval_samples`` usable items of each.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (``eval_suite``, ``eval_samples`` (0 = all), ``benchmark_dir``,
        ``max_completion_length``, ``system_prompt``).
    tokenizer : object
        Its ``eos_token_id`` makes the arithmetic scorer; passed to :func:`make_prompt` otherwise.

    Returns
    -------
    dict of str to EvalSet
        In ``eval_suite`` order. Arithmetic: ``min(eval_samples, held-out pairs)`` held-out pairs
        drawn without replacement (seed 12345), the ``exact`` scorer, ``max_new_tokens`` = longest
        answer + 2. Benchmarks: the ``number`` or ``math`` scorer, ``max_new_tokens`` =
        ``max_completion_length``, ``skipped`` = items without a usable reference.

    Raises
    ------
    GrpoError
        A benchmark cannot be loaded.
    DataError
        A benchmark lacks its question or answer column.
    ParameterError
        An unknown benchmark name (:func:`~grpo_core.llm.config.make_config` refuses it already).
    """
    from .data import BENCHMARKS, load_benchmark
    from .evaluation import make_scorer
    from .tasks import TASKS, _pairs, max_answer_length, sample_problems

    out: dict[str, EvalSet] = {}
    for name in cfg.eval_suite:
        if cfg.is_tiny:
            available = len(_pairs(TASKS[name], "test"))
            n = min(cfg.eval_samples or available, available)
            probs = sample_problems(name, n, seed=12345, split="test", replace=False)
            items = [{"prompt": p["prompt"], "reference": p["answer"]} for p in probs]
            out[name] = EvalSet(name, items, make_scorer("exact", tokenizer.eos_token_id),
                                max_answer_length(name) + 2)
        else:
            local = str(Path(cfg.benchmark_dir) / name) if cfg.benchmark_dir else ""
            raw, skipped = load_benchmark(name, path=local, limit=cfg.eval_samples)
            kind = "math" if BENCHMARKS[name].answer_kind == "math" else "number"
            items = [{"prompt": make_prompt(it["question"], cfg, tokenizer), "reference": it["reference"]}
                     for it in raw]
            out[name] = EvalSet(name, items, make_scorer(kind), cfg.max_completion_length, skipped)
    return out


def reward_functions(cfg: ExperimentConfig, tokenizer) -> list:
    """TRL reward functions: exact match (arithmetic) or correctness (+ format, if weighted).

    Parameters
    ----------
    cfg : ExperimentConfig
        ``model`` (tiny or not) and ``format_reward`` (weight; 0 = no format reward) are read.
    tokenizer : object
        Its ``eos_token_id`` (tiny model only: a right completion must end with EOS).

    Returns
    -------
    list of callable
        ``[exact_match]`` (:func:`~grpo_core.llm.tasks.exact_match_reward`, column ``answer``), or
        ``[correctness]`` (:func:`~grpo_core.llm.answers.correctness_reward`, column
        ``reference``) followed by ``format`` (:func:`~grpo_core.llm.answers.format_reward`) when
        ``format_reward > 0``. TRL sums them per completion (reward units).

    References
    ----------
    TRL documentation, ``GRPOTrainer``, "Using a custom reward function".
    """
    from .answers import correctness_reward, format_reward
    from .tasks import exact_match_reward

    if cfg.is_tiny:
        return [exact_match_reward(tokenizer.eos_token_id)]
    funcs = [correctness_reward("reference")]
    if cfg.format_reward > 0:
        funcs.append(format_reward(cfg.format_reward))
    return funcs


# --------------------------------------------------------------------------------------------
# Training
def grpo_args(cfg: ExperimentConfig, ctx: RunContext):
    """TRL ``GRPOConfig`` for the settings (learning rate, momentum, lag, G, beta, epsilon mapped to TRL options).

    ``per_device_train_batch_size`` = completions per step / number of processes; logging every
    step; checkpoints every ``save_every`` steps (the last two kept); Adam's beta1 or SGD's
    momentum = ``momentum``; ``bf16`` and gradient checkpointing as ``cfg`` sets them (they are not
    switched off here on the CPU; :func:`~grpo_core.llm.config.make_config` refuses ``bf16`` only
    with ``device='cpu'``).

    Other mappings: ``lr_scheduler="constant"`` with a warm-up is TRL's
    ``constant_with_warmup``; ``max_grad_norm = 0`` (no clipping) becomes 1e9; sampling uses the
    full distribution (``top_k=0``, ``top_p=1``) at ``temperature``; ``gradient_accumulation_steps
    = 1``; no reporting integrations, no progress bar.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings.
    ctx : RunContext
        ``output_dir`` is ``<ctx.path>/checkpoints``; ``use_cpu`` when ``ctx.device == "cpu"``.

    Returns
    -------
    trl.GRPOConfig

    Raises
    ------
    GrpoError
        The completions per step do not split evenly over the processes (``WORLD_SIZE``).

    References
    ----------
    TRL documentation, ``GRPOConfig`` (``num_generations``, ``steps_per_generation``,
    ``num_iterations``, ``beta``, ``epsilon``, ``scale_rewards``, ``loss_type``).

    Examples
    --------
    >>> import tempfile
    >>> from grpo_core.llm.config import make_config
    >>> cfg = make_config("cpu-tiny", group_size=16, completions_per_step=256, optimizer="sgd", momentum=0.9)
    >>> args = grpo_args(cfg, RunContext(path=Path(tempfile.mkdtemp()), name="x", device="cpu"))
    >>> args.per_device_train_batch_size, args.num_generations, args.optim_args, args.bf16
    (256, 16, 'momentum=0.9', False)
    """
    from trl import GRPOConfig

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if cfg.completions % world:
        raise GrpoError(f"{cfg.completions} completions per step cannot be split over {world} processes")
    per_device = cfg.completions // world
    scheduler = {"constant": "constant_with_warmup" if cfg.lr_warmup_steps else "constant",
                 "cosine": "cosine"}[cfg.lr_scheduler]
    kwargs: dict[str, Any] = dict(
        output_dir=str(ctx.path / "checkpoints"),
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=1,
        num_generations=cfg.group_size,
        steps_per_generation=cfg.steps_per_generation,
        num_iterations=cfg.num_iterations,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=scheduler,
        warmup_steps=cfg.lr_warmup_steps,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm if cfg.max_grad_norm > 0 else 1e9,
        beta=cfg.beta,
        epsilon=cfg.epsilon,
        scale_rewards=cfg.scale_rewards,
        loss_type=cfg.loss_type,
        temperature=cfg.temperature,
        top_k=0,
        top_p=1.0,
        max_completion_length=cfg.max_completion_length,
        max_steps=cfg.max_steps,
        logging_steps=1,
        save_strategy="steps",
        save_steps=cfg.save_every,
        save_total_limit=2,
        bf16=cfg.bf16,
        use_cpu=ctx.device == "cpu",
        seed=cfg.seed,
        data_seed=cfg.seed,
        report_to=[],
        disable_tqdm=True,
        dataloader_num_workers=0,
        use_vllm=cfg.use_vllm,
        log_completions=False,
        remove_unused_columns=False,
    )
    # transformers 5 renamed gradient checkpointing (the old name still works, with a warning)
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    kwargs["activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"] = (
        cfg.gradient_checkpointing)
    if cfg.optimizer == "sgd":
        kwargs.update(optim="sgd", optim_args=f"momentum={cfg.momentum}")
    else:
        kwargs.update(optim="adamw_torch", adam_beta1=cfg.momentum, adam_beta2=cfg.adam_beta2)
    return GRPOConfig(**kwargs)


def evaluate_suite(model, tokenizer, cfg: ExperimentConfig, eval_sets: dict, ctx: RunContext, phase: str,
                   *, force: bool = False) -> dict[str, dict]:
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
        From :func:`build_eval_sets`.
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
        res = evaluate(model, tokenizer, es.items, es.scorer, name=name, max_new_tokens=es.max_new_tokens,
                       samples=cfg.eval_sampled, temperature=cfg.temperature, seed=cfg.seed)
        results[name] = {**res.to_dict(), "skipped": es.skipped}
    ctx.timings[f"eval_{phase}"] = time.perf_counter() - t0
    if ctx.main:
        stored = read_json(path) if path.exists() else {}
        stored[phase] = results
        write_json(path, stored)
    return results


def measure_gradient_constants(model, tokenizer, cfg: ExperimentConfig, eval_sets: dict, ctx: RunContext,
                               phase: str) -> dict:
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
        From :func:`build_eval_sets`; only the first set is used (its prompts, references,
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
        raise ParameterError("eval_suite", "measuring the constants needs at least one evaluation set "
                                           "(their prompts are the first set's); `eval_suite` is empty")
    first = next(iter(eval_sets.values()))
    settings = {"prompts": len(first.items), "samples": cfg.constants_samples, "temperature": cfg.temperature,
                "sketch_dim": 8192, "seed": cfg.seed}
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
        result = measure_constants(model, tokenizer, [i["prompt"] for i in first.items],
                                   [i["reference"] for i in first.items], first.scorer,
                                   samples_per_prompt=cfg.constants_samples, max_new_tokens=first.max_new_tokens,
                                   temperature=cfg.temperature, sketch_dim=settings["sketch_dim"], seed=cfg.seed)
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


def build_trainer(cfg: ExperimentConfig, ctx: RunContext, model, tokenizer, train_set, eval_sets: dict,
                  *, extra_callbacks: list | None = None, dynamics: bool = True):
    """TRL ``GRPOTrainer`` with the :class:`~grpo_core.runs.callback.DynamicsCallback` (metrics file,
    periodic diagnosis) and the periodic held-out evaluation (``eval_every`` > 0).

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (:func:`grpo_args`, :func:`reward_functions`; ``eval_every``,
        ``eval_sampled``, ``diagnose_every`` for the callbacks).
    ctx : RunContext
        The run (the metrics file and checkpoints go to ``ctx.path``).
    model, tokenizer
        The starting policy (:func:`build_policy`); the tokenizer is TRL's ``processing_class``.
    train_set : datasets.Dataset
        From :func:`build_train_dataset`.
    eval_sets : dict of str to EvalSet
        From :func:`build_eval_sets`; the first one is evaluated every ``eval_every`` steps (none
        when empty or ``eval_every = 0``).
    extra_callbacks : list of TrainerCallback, optional
        Appended after the project's callbacks.
    dynamics : bool, default True
        Add the :class:`~grpo_core.runs.callback.DynamicsCallback` (diagnosis every
        ``diagnose_every`` steps, train-eval check on ``sampled_accuracy`` when the periodic
        evaluation samples).

    Returns
    -------
    trl.GRPOTrainer
        Not yet trained; transformers' printer and progress callbacks removed; the
        :class:`~grpo_core.llm.evaluation.EvalCallback` (first in the list) has its ``trainer``
        set.

    Raises
    ------
    GrpoError
        As :func:`grpo_args` (completions per step not divisible by the number of processes).

    References
    ----------
    TRL documentation, ``GRPOTrainer``.
    """
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    from ..runs.callback import DynamicsCallback
    from .evaluation import EvalCallback, evaluate

    callbacks = []
    if dynamics:
        # the held-out counterpart of the training reward (mean reward of sampled completions) is
        # the sampled accuracy; the greedy one can stay flat while sampling sharpens
        eval_metric = "sampled_accuracy" if (cfg.eval_every and cfg.eval_sampled) else None
        callbacks.append(DynamicsCallback(ctx.path, every=cfg.diagnose_every, group_size=cfg.group_size,
                                          num_prompts=cfg.prompts_per_step, eval_metric=eval_metric))
    eval_cb = None
    if cfg.eval_every and eval_sets:
        first = next(iter(eval_sets.values()))
        eval_cb = EvalCallback(lambda m: evaluate(m, tokenizer, first.items, first.scorer, name=first.name,
                                                  max_new_tokens=first.max_new_tokens, samples=cfg.eval_sampled,
                                                  temperature=cfg.temperature, seed=cfg.seed),
                               every=cfg.eval_every)
        callbacks.insert(0, eval_cb)
    callbacks += list(extra_callbacks or [])
    trainer = GRPOTrainer(model=model, reward_funcs=reward_functions(cfg, tokenizer), args=grpo_args(cfg, ctx),
                          train_dataset=train_set, processing_class=tokenizer, callbacks=callbacks)
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    if eval_cb is not None:
        eval_cb.trainer = trainer
    return trainer


def train(trainer, ctx: RunContext, cfg: ExperimentConfig | None = None):
    """Train, resuming from the newest complete checkpoint of the run when there is one.

    Parameters
    ----------
    trainer : trl.GRPOTrainer
        From :func:`build_trainer`.
    ctx : RunContext
        The run: checkpoints are looked up under ``ctx.path/checkpoints``; ``ctx.resumed_from``
        is set (the checkpoint path or ``None``) and the training time (seconds) is added to
        ``ctx.timings["grpo"]``.
    cfg : ExperimentConfig, optional
        ``cfg.resume = False`` starts from scratch even when a checkpoint exists; ``None``
        resumes.

    Returns
    -------
    transformers.trainer_utils.TrainOutput
        What ``trainer.train`` returns.

    Raises
    ------
    Exception
        Whatever ``trainer.train`` raises (nothing is caught).
    """
    ckpt = last_checkpoint(ctx.path) if (cfg is None or cfg.resume) else None
    ctx.resumed_from = str(ckpt) if ckpt else None
    if ckpt:
        print(f"resuming from {ckpt}")
    t0 = time.perf_counter()
    out = trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
    ctx.timings["grpo"] = ctx.timings.get("grpo", 0.0) + time.perf_counter() - t0
    return out


def finish_run(cfg: ExperimentConfig, ctx: RunContext, trainer=None) -> dict[str, Any]:
    """Write ``summary.json`` (timings, throughput, headline numbers) and delete the weights
    unless ``keep_checkpoints``. Returns the summary.

    Parameters
    ----------
    cfg : ExperimentConfig
        ``keep_checkpoints`` and ``completions`` (per step) are read.
    ctx : RunContext
        The run: name, timings, start time, ``resumed_from``. Only the main process writes the
        file and deletes ``checkpoints/`` and ``base_model/``.
    trainer : trl.GRPOTrainer, optional
        The trained trainer; without it only the timings are summarised.

    Returns
    -------
    dict
        ``run_name``; ``timings`` (seconds per phase, rounded to ms); ``wall_seconds`` (since
        :func:`start_run`, this session); ``resumed_from``; ``wall_seconds_previous_sessions``
        after a resume. With a trainer also ``steps`` (global step), ``seconds_per_step`` (GRPO
        time / training rows logged in this session), ``mean_step_time`` (TRL's ``step_time``, s,
        or ``None``), ``completion_tokens_per_second`` (sum over this session's rows of the mean
        completion length x completions per step, / GRPO time; a resumed session counts only the
        steps after its checkpoint), ``start_reward`` (mean of the first 10 rows),
        ``final_reward`` (mean of the last 50), ``callback_seconds`` (``write``, ``diagnose``) and
        ``periodic_eval_seconds`` when those callbacks ran.

    Raises
    ------
    DataError
        An existing ``summary.json`` that is not valid JSON.
    """
    from ..runs.callback import DynamicsCallback

    summary_path = ctx.path / "summary.json"
    old = read_json(summary_path) if summary_path.exists() else {}
    timings = {k: round(v, 3) for k, v in ctx.timings.items()}
    summary: dict[str, Any] = {"run_name": ctx.name, "timings": timings,
                               "wall_seconds": round(time.perf_counter() - ctx.started, 3),
                               "resumed_from": ctx.resumed_from}
    if old.get("wall_seconds") and ctx.resumed_from:
        summary["wall_seconds_previous_sessions"] = old["wall_seconds"] + old.get("wall_seconds_previous_sessions", 0)
    if trainer is not None:
        hist = [h for h in trainer.state.log_history if "reward" in h]
        # throughput of this session only: after a resume the log history also holds the steps
        # of earlier sessions, which the session's GRPO time does not cover
        m = re.search(r"checkpoint-(\d+)$", str(ctx.resumed_from or ""))
        first = int(m.group(1)) if m else 0
        session = [h for h in hist if h.get("step", 0) > first]
        steps = [h for h in trainer.state.log_history if "step_time" in h and h.get("step", 0) > first]
        lengths = np.array([h.get("completions/mean_length", np.nan) for h in session], dtype=float)
        grpo = ctx.timings.get("grpo", np.nan)
        n_steps = len(session)
        summary.update(
            steps=int(trainer.state.global_step),
            seconds_per_step=grpo / max(n_steps, 1),
            mean_step_time=float(np.mean([h["step_time"] for h in steps])) if steps else None,
            completion_tokens_per_second=float(np.nansum(lengths) * cfg.completions / grpo) if grpo else None,
            start_reward=float(np.mean([h["reward"] for h in hist[:10]])) if hist else None,
            final_reward=float(np.mean([h["reward"] for h in hist[-50:]])) if hist else None,
        )
        for cb in trainer.callback_handler.callbacks:
            if isinstance(cb, DynamicsCallback):
                summary["callback_seconds"] = {"write": round(cb.write_seconds, 4),
                                               "diagnose": round(cb.diagnosis_seconds, 4)}
            if type(cb).__name__ == "EvalCallback":
                summary["periodic_eval_seconds"] = round(cb.seconds, 3)
    if ctx.main:
        write_json(summary_path, summary)
        if not cfg.keep_checkpoints:
            clean_weights(ctx.path)
    return summary


def run_experiment(cfg: ExperimentConfig, *, extra_callbacks: list | None = None) -> dict[str, Any]:
    """Everything of one run, in order (see the module docstring); returns the summary.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (:func:`~grpo_core.llm.config.make_config`).
    extra_callbacks : list of TrainerCallback, optional
        Passed to :func:`build_trainer`.

    Returns
    -------
    dict
        The summary of :func:`finish_run` (also written to ``<run>/summary.json``).

    Raises
    ------
    GrpoError
        No GPU for a GPU preset or a model that cannot be loaded (both checked by
        :func:`start_run` before anything is built); a dataset or benchmark that cannot be
        loaded.
    DataError
        A dataset in the wrong schema; a broken JSON file in an existing run folder.
    ParameterError
        As the steps it calls (e.g. an empty evaluation set).

    References
    ----------
    Book chapter "GRPO on a language model"; TRL documentation, ``GRPOTrainer``.
    """
    ctx = start_run(cfg)
    model, tokenizer = build_policy(cfg, ctx)
    train_set = build_train_dataset(cfg, tokenizer)
    evals = build_eval_sets(cfg, tokenizer)
    evaluate_suite(model, tokenizer, cfg, evals, ctx, "start")
    if cfg.measure_constants:
        measure_gradient_constants(model, tokenizer, cfg, evals, ctx, "start")
    if cfg.probe:  # before the first GRPO step; weights and random state are left as they were
        from .probe import write_probe

        write_probe(model, tokenizer, cfg, ctx)
    trainer = build_trainer(cfg, ctx, model, tokenizer, train_set, evals, extra_callbacks=extra_callbacks)
    train(trainer, ctx, cfg)
    evaluate_suite(trainer.model, tokenizer, cfg, evals, ctx, "end", force=True)
    if cfg.measure_constants:
        measure_gradient_constants(trainer.model, tokenizer, cfg, evals, ctx, "end")
    return finish_run(cfg, ctx, trainer)
