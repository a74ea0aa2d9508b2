"""``grpo-dynamics experiment``: run the LLM experiment notebook through papermill, one run per setting.

Every combination of ``--seeds`` and ``--group-sizes`` is one run of
``book/experiments/grpo_llm.ipynb`` with the preset's settings plus the ``-p KEY VALUE`` overrides.
All settings are validated before the first run starts. Each run gets a deterministic name
(``cpu-tiny__G16-B32__s2``) and its own folder under ``--out`` holding the executed notebook,
``config.json``, ``provenance.json``, ``metrics.jsonl``, ``evals.json`` and ``summary.json``. A run
whose folder already holds a finished run (all its steps, or stopped by ``stop_collapsed``) is
skipped; an interrupted one resumes from its last whole checkpoint. ``--force`` starts a run afresh:
its folder is emptied first (results, checkpoints and all), so a rerun never mixes with what an
earlier one left. While a run is in progress its folder holds a lock (``.lock``, with the process
id): a second ``experiment`` writing to the same run folder refuses to start. A summary table is
printed at the end (``--json``: one JSON object).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from grpo_core.errors import GrpoError

from ._presetargs import add_preset_parser

NOTEBOOK = Path(__file__).resolve().parents[2] / "book" / "experiments" / "grpo_llm.ipynb"
# the settings the notebook's parameters cell names (besides preset and overrides); every other -p setting
# goes to the notebook in `overrides`
NOTEBOOK_PARAMETERS = (
    "model",
    "dataset",
    "group_size",
    "learning_rate",
    "momentum",
    "steps_per_generation",
    "num_iterations",
    "beta",
    "epsilon",
    "max_steps",
    "eval_every",
    "seed",
    "output_dir",
    "measure_constants",
)
# the columns the summary takes from a finished run's row of grpo_core.llm.runs.runs_table (printed after run, status)
_RESULT_COLUMNS = ("G", "B", "seed", "steps", "start_reward", "final_reward", "eval_start", "eval_end", "minutes")


def register(subparsers) -> None:
    """Add the ``experiment`` sub-command."""
    p = add_preset_parser(
        subparsers, "experiment", __doc__,
        summary="run the GRPO language-model experiment (papermill), one run per seed x group size",
        preset_help="preset name (default cpu-tiny); see --list-presets",
        param_help="override one setting (repeatable), e.g. -p learning_rate 5e-4 -p max_steps 200",
    )
    p.add_argument(
        "--seeds", nargs="+", type=int, default=None, help="seeds, one run each (default: the preset's)"
    )
    p.add_argument("--group-sizes", nargs="+", type=int, default=None,
                   help="group sizes G, one run each (default: the preset's)")
    p.add_argument("--out", default="runs", help="folder of the run folders (default ./runs)")
    p.add_argument(
        "--notebook", default=None, help=f"the notebook to execute (default {NOTEBOOK.name} of this checkout)"
    )
    p.add_argument("--force", action="store_true",
                   help="start every run afresh: empties its folder first (results and checkpoints), "
                        "even a finished or interrupted one")
    p.add_argument("--dry-run", action="store_true", help="validate and list the runs without running them")
    p.add_argument(
        "--timeout", type=int, default=None, help="seconds a notebook cell may run (default: no limit)"
    )
    p.add_argument(
        "--list-presets", action="store_true", help="list the presets and their parameters, then exit"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (the runs and their results)")
    p.set_defaults(func=handler)


def _plan(args) -> list:
    from grpo_core.llm.config import make_config
    from grpo_core.llm.runs import run_name

    overrides = dict(args.param)
    if "output_dir" in overrides:
        raise GrpoError(
            "set the folder of the runs with --out, not -p output_dir (each run gets its own folder)"
        )
    for key, flag in (("seed", "seeds"), ("group_size", "group_sizes")):
        if key in overrides and getattr(args, flag) is not None:
            raise GrpoError(f"give {key} either with -p {key} or with --{flag.replace('_', '-')}, not both")
    base = make_config(args.preset, **overrides)
    if base.is_tiny and "warmup_cache" not in overrides:
        overrides["warmup_cache"] = str(Path(args.out).resolve() / ".warmup-cache")
    seeds = args.seeds if args.seeds is not None else [base.seed]
    sizes = args.group_sizes if args.group_sizes is not None else [base.group_size]
    plan = []
    for g in sizes:
        for s in seeds:
            cfg = make_config(args.preset, **{**overrides, "seed": s, "group_size": g})
            name = run_name(cfg)
            folder = Path(args.out).resolve() / name
            cfg = make_config(
                args.preset, **{**overrides, "seed": s, "group_size": g, "output_dir": str(folder)}
            )
            plan.append(
                (name, folder, cfg, {**overrides, "seed": s, "group_size": g, "output_dir": str(folder)})
            )
    names = [p[0] for p in plan]
    if len(set(names)) != len(names):
        raise GrpoError("two runs would share a name (repeated seeds or group sizes?)")
    return plan


def _finished(folder: Path, cfg) -> bool:
    summary = folder / "summary.json"
    if not summary.exists():
        return False
    try:
        done = json.loads(summary.read_text())
        # a run stopped by stop_collapsed is finished: rerunning it would stop at the same step
        return int(done.get("steps", -1)) >= cfg.max_steps or bool(done.get("stopped_early"))
    except (ValueError, json.JSONDecodeError):
        return False


def handler(args) -> int:
    """Validate every setting, run the notebook once per setting, print the summary table."""
    from grpo_core.llm.config import PRESETS, parameter_help

    if args.list_presets:
        for name, cfg in PRESETS.items():
            print(
                f"{name}: model={cfg.model} dataset={cfg.dataset} G={cfg.group_size} "
                f"B={cfg.prompts_per_step} lr={cfg.learning_rate:g} steps={cfg.max_steps} "
                f"gpu={'yes' if cfg.requires_gpu else 'no'}"
            )
        print("\nparameters (-p KEY VALUE):")
        for key, text in parameter_help().items():
            print(f"  {key}: {text}")
        return 0
    from grpo_core.errors import ParameterError

    if args.timeout is not None and args.timeout < 1:
        raise ParameterError(
            "timeout",
            f"`timeout` must be an integer >= 1 (seconds per cell; omit it for no limit); got {args.timeout}",
        )
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise ParameterError(
            "out", f"`out` must be a folder (the run folders go inside it); {args.out} is a file"
        )
    plan = _plan(args)  # raises ParameterError before anything runs
    notebook = Path(args.notebook) if args.notebook else NOTEBOOK
    if not notebook.exists():
        raise GrpoError(
            f"notebook not found: {notebook} (pass --notebook PATH; it lives in book/experiments/ of "
            "a checkout of the repository)"
        )
    from grpo_core.llm.config import check_environment

    check_environment(plan[0][2])  # a GPU preset without a GPU fails here, not in the first notebook
    results = []
    total = len(plan)
    for i, (name, folder, cfg, params) in enumerate(plan, 1):
        if args.dry_run:
            print(f"[{i}/{total}] {name} (dry run)", file=sys.stderr)
            results.append({"run": name, "status": "planned", "folder": str(folder)})
            continue
        if _finished(folder, cfg) and not args.force:
            print(f"[{i}/{total}] {name}: already finished, skipped (--force reruns)", file=sys.stderr)
            results.append({"run": name, "status": "skipped", "folder": str(folder)})
            continue
        folder.mkdir(parents=True, exist_ok=True)
        with _run_lock(folder):
            if args.force:
                _empty(folder)
            print(f"[{i}/{total}] {name} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            status = _execute(notebook, folder, args.preset, params, args.timeout)
            seconds = time.perf_counter() - t0
        print(f"[{i}/{total}] {name}: {status} in {seconds:.0f} s", file=sys.stderr, flush=True)
        results.append({"run": name, "status": status, "folder": str(folder), "seconds": round(seconds, 1)})
    table = _summary(results)
    if args.json:
        print(json.dumps({"preset": args.preset, "runs": table}, default=str))
    else:
        _print_table(table)
    return 0 if all(r["status"] in ("ok", "skipped", "planned") for r in results) else 1


LOCK = ".lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # someone else's live process (or a pid we cannot check): assume alive
    return True


@contextmanager
def _run_lock(folder: Path):
    """Hold ``folder/.lock`` while the run executes; refuse when a live process holds it.

    A lock left by a process that no longer runs (killed) is taken over. Raises GrpoError when the
    folder is in use.
    """
    lock = folder / LOCK
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid = int(lock.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pid = -1
            if pid > 0 and pid != os.getpid() and _pid_alive(pid):
                raise GrpoError(
                    f"{folder} is in use by another experiment (process {pid} holds {LOCK}); wait for "
                    f"it, or give this one another --out"
                ) from None
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()}\n")
        break
    else:
        raise GrpoError(f"cannot take the lock {lock}; remove it if no experiment is running")
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _empty(folder: Path) -> None:
    """Remove everything in a run folder but the lock (``--force``: the run starts afresh)."""
    for entry in folder.iterdir():
        if entry.name == LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _execute(notebook: Path, folder: Path, preset: str, params: dict, timeout: int | None) -> str:
    import papermill as pm

    parameters = {"preset": preset, "overrides": {}}
    for key, value in params.items():
        if key in NOTEBOOK_PARAMETERS:
            parameters[key] = value
        else:
            parameters["overrides"][key] = value
    try:
        pm.execute_notebook(
            str(notebook),
            str(folder / notebook.name),
            parameters=parameters,
            cwd=str(folder),
            progress_bar=False,
            log_output=False,
            execution_timeout=timeout,
            kernel_name="python3",
        )
    except pm.PapermillExecutionError as exc:
        print(
            f"    failed: {exc.ename}: {str(exc.evalue).splitlines()[0] if exc.evalue else ''}",
            file=sys.stderr,
        )
        return "failed"
    return "ok"


def _summary(results: list[dict]) -> list[dict]:
    from grpo_core.llm.runs import load_run, runs_table

    rows = []
    for r in results:
        folder = Path(r["folder"])
        row = dict(r)
        if r["status"] in ("ok", "skipped") and (folder / "config.json").exists():
            try:
                t = runs_table([load_run(folder)]).iloc[0].to_dict()
                row.update({k: t[k] for k in _RESULT_COLUMNS})
            except GrpoError as exc:
                row["note"] = str(exc)
        rows.append(row)
    return rows


def _print_table(rows: list[dict]) -> None:
    cols = [c for c in ("run", "status", *_RESULT_COLUMNS) if any(c in r for r in rows)]

    def fmt(v):
        if isinstance(v, float):
            return f"{v:.3f}"
        return "" if v is None else str(v)

    widths = {c: max(len(c), *(len(fmt(r.get(c))) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(fmt(r.get(c)).ljust(widths[c]) for c in cols))

