"""The run being made: its folder and device, the records written when it starts, the summary when it ends.

:func:`start_run` checks the machine and the model and writes ``config.json`` and ``provenance.json``
(a resumed run adds its session to the first one's record); :func:`finish_run` writes
``summary.json`` (timings, throughput, headline rewards) and removes the weights. Between them, the
steps of :mod:`grpo_core.llm.experiment` carry the :class:`RunContext`. With several processes
(``WORLD_SIZE`` > 1, set by ``accelerate launch`` or ``torch.distributed.run``) :func:`start_run`
sets up accelerate's process group (gloo on the CPU), only the main process (rank 0) writes files,
and the others wait for it at :func:`barrier`.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import GrpoError
from .config import ExperimentConfig, check_environment, check_model_loadable
from .runs import clean_weights, prepare_run_dir, provenance, read_json, run_name, write_json

__all__ = ["RunContext", "start_run", "finish_run", "barrier", "DEFAULT_RUNS_DIR"]

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
    world_size : int
        Number of processes training together (1 without a launcher).
    resumed_from : str or None
        Checkpoint the training resumed from.
    timings : dict
        Seconds per phase (``warmup``, ``eval_start``, ``grpo``, ``eval_end``, ...).
    """

    path: Path
    name: str
    device: str
    main: bool = True
    world_size: int = 1
    resumed_from: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


def _is_main() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def barrier(ctx: RunContext) -> None:
    """Wait until every process of the run gets here (nothing to wait for with one process).

    Parameters
    ----------
    ctx : RunContext
        ``world_size`` > 1: accelerate's ``PartialState().wait_for_everyone()`` (the process
        group :func:`start_run` set up).

    Returns
    -------
    None
    """
    if ctx.world_size > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def _parallel_record(cfg: ExperimentConfig, world: int) -> dict[str, Any]:
    """How the step's completions are spread: processes, per-device batch, global batch, engine."""
    deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"
    fsdp = os.environ.get("ACCELERATE_USE_FSDP", "").lower() == "true"
    strategy = "deepspeed" if deepspeed else "fsdp" if fsdp else ("ddp" if world > 1 else "single")
    record: dict[str, Any] = {
        "world_size": world,
        "per_device_batch": cfg.completions // (world * cfg.gradient_accumulation_steps),
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "global_batch": cfg.completions,
        "strategy": strategy,
    }
    if deepspeed:
        record["zero_stage"] = os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE")
    if world > 1:
        from accelerate import PartialState

        record["backend"] = PartialState().backend
    return record


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
        Folder ``cfg.output_dir`` (or ``runs/<run name>``), the device, ``main`` (rank 0 writes)
        and ``world_size`` from the launcher's environment (``RANK``, ``WORLD_SIZE``). The other
        processes return once the main one has written the folder. ``provenance.json`` also
        records ``world_size``, ``per_device_batch``, ``gradient_accumulation_steps``,
        ``global_batch`` (completions per optimizer step over all processes), ``strategy``
        (``single``, ``ddp``, ``deepspeed``, ``fsdp``) and, with several processes, ``backend``.
        A resumed run's ``provenance.json`` keeps the first session's record and lists every
        session under ``sessions``.

    Raises
    ------
    GrpoError
        No GPU for a GPU preset; a model that cannot be loaded; completions per step that do not
        split over the processes x accumulation steps.
    DataError
        An existing ``provenance.json`` that is not valid JSON.
    """
    import torch

    device = check_environment(cfg)
    if check_model:
        check_model_loadable(cfg)
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    world = _world_size()
    if cfg.completions % (world * cfg.gradient_accumulation_steps):
        raise GrpoError(f"{cfg.completions} completions per step cannot be split over {world} processes x "
                        f"{cfg.gradient_accumulation_steps} accumulation steps")
    if world > 1:  # the process group, before anything waits on it (TrainingArguments reuses it)
        from accelerate import PartialState

        PartialState(cpu=device == "cpu")
    name = run_name(cfg)
    path = Path(cfg.output_dir) if cfg.output_dir else Path(DEFAULT_RUNS_DIR) / name
    ctx = RunContext(path=path, name=name, device=device, main=_is_main(), world_size=world)
    if ctx.main:
        prepare_run_dir(path)
        write_json(path / "config.json", {"run_name": name, **cfg.to_dict()})
        prov_path = path / "provenance.json"
        prov = provenance(cfg.seed, device, extra=_parallel_record(cfg, world))
        if prov_path.exists():  # a resumed run keeps the first session's record and adds this one
            old = read_json(prov_path)
            brief = ("date", "git", "device", "argv", "world_size", "per_device_batch")
            prov["sessions"] = old.get("sessions", [{k: old.get(k) for k in brief}]) + [{k: prov.get(k) for k in brief}]
            prov = {**{k: v for k, v in old.items() if k != "sessions"}, "sessions": prov["sessions"]}
        write_json(prov_path, prov)
    barrier(ctx)
    return ctx


def _wait_for(path: Path, timeout: float = 600.0) -> None:
    """Other ranks wait for the main process to write a file."""
    t0 = time.perf_counter()
    while not path.exists():
        if time.perf_counter() - t0 > timeout:
            raise GrpoError(f"timed out waiting for {path} (written by the main process)")
        time.sleep(0.5)


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
    summary: dict[str, Any] = {
        "run_name": ctx.name,
        "timings": timings,
        "wall_seconds": round(time.perf_counter() - ctx.started, 3),
        "resumed_from": ctx.resumed_from,
    }
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
                summary["callback_seconds"] = {
                    "write": round(cb.write_seconds, 4),
                    "diagnose": round(cb.diagnosis_seconds, 4),
                }
            if type(cb).__name__ == "EvalCallback":
                summary["periodic_eval_seconds"] = round(cb.seconds, 3)
            if type(cb).__name__ == "CollapseStop" and cb.stopped_at is not None:
                summary["stopped_early"] = {"step": cb.stopped_at, "rule": f"reward exactly 0 for {cb.steps} "
                                            f"consecutive steps after step {cb.after} (stop_collapsed)"}
    if ctx.main:
        write_json(summary_path, summary)
        if not cfg.keep_checkpoints:
            clean_weights(ctx.path)
    return summary
