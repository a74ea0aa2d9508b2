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
printed at the end (``--json``: one JSON object). With ``--num-processes N`` (N > 1) or
``--accelerate-config`` each run is instead one script run, ``python -m grpo_core.llm``, as N
data-parallel processes that share the completions of every step (the global batch stays
``num_prompts`` x G; each process gets a 1/N share): ``accelerate launch`` on CUDA GPUs, with
DeepSpeed ZeRO-2/3 or FSDP through ``--accelerate-config zero2|zero3|fsdp`` (the files in
``grpo_core/llm/accelerate/``; ZeRO needs the deepspeed package), and ``torch.distributed.run``
with the gloo backend on the CPU. Only the main process writes the run folder; the launcher's
output goes to ``launch.log`` there instead of an executed notebook.

Several processes sample with different seeds (TRL seeds process r with seed + r), so a run on N
processes is a different sample of the same training distribution as a run on one process with
the same global batch, not the same numbers.
"""

from __future__ import annotations

import importlib.util
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
    p.epilog = __doc__.split("\n\n")[2].replace("\n", " ")  # what N processes do and do not reproduce
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
        "--timeout", type=int, default=None,
        help="seconds a notebook cell (with --num-processes > 1: the whole run) may run (default: no limit)"
    )
    p.add_argument(
        "--list-presets", action="store_true", help="list the presets and their parameters, then exit"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (the runs and their results)")
    p.add_argument("--num-processes", type=int, default=1, metavar="N",
                   help="data-parallel processes per run (default 1: the notebook). N > 1: the script "
                        "under `accelerate launch` on CUDA GPUs (one per GPU), `torch.distributed.run` "
                        "(gloo) on the CPU; completions per step must divide by N x gradient_accumulation_steps")
    p.add_argument("--accelerate-config", default=None, metavar="NAME|FILE",
                   help=f"accelerate config for GPU runs: one of {', '.join(ACCELERATE_CONFIGS)} (shipped in "
                        "grpo_core/llm/accelerate/) or a file of your own; zero2/zero3 need deepspeed installed")
    p.set_defaults(func=handler)


#: Names of the accelerate config files shipped in grpo_core/llm/accelerate/.
ACCELERATE_CONFIGS = ("multi_gpu", "zero2", "zero3", "fsdp")


def _accelerate_config(value: str | None, has_cuda: bool) -> Path | None:
    """The accelerate config file for ``--accelerate-config``, checked before any run starts."""
    if value is None:
        return None
    from grpo_core.errors import ParameterError

    folder = Path(__file__).resolve().parents[2] / "grpo_core" / "llm" / "accelerate"
    path = folder / f"{value}.yaml" if value in ACCELERATE_CONFIGS else Path(value)
    if not path.is_file():
        raise ParameterError(
            "accelerate_config",
            f"`accelerate_config` must be one of {', '.join(ACCELERATE_CONFIGS)} or an existing file; got {value!r}",
        )
    if not has_cuda:
        raise GrpoError(
            f"--accelerate-config {value} needs CUDA GPUs and none is available here; on the CPU use "
            "--num-processes N alone (data parallel over gloo)"
        )
    text = path.read_text()
    if "DEEPSPEED" in text and importlib.util.find_spec("deepspeed") is None:
        raise GrpoError(
            f"--accelerate-config {value} uses DeepSpeed, which is not installed here: `pip install deepspeed` "
            "on the GPU machine (it builds against the CUDA toolkit), or use --accelerate-config fsdp"
        )
    return path


def _launch_command(args, params: dict, config: Path | None, has_cuda: bool) -> list[str]:
    """The command that runs one experiment as ``args.num_processes`` processes."""
    script = ["-m", "grpo_core.llm", "--preset", args.preset]
    for key, value in params.items():
        script += ["-p", key, " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)]
    n = str(args.num_processes)
    if has_cuda:
        launch = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", n]
        if config is not None:
            launch += ["--config_file", str(config)]
        elif args.num_processes > 1:
            launch += ["--multi_gpu", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
        else:
            launch += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
        return launch + script
    # accelerate launch --cpu starts one process only (several CPU processes need MPI)
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", n, *script]


def _launch(command: list[str], folder: Path, timeout: int | None) -> str:
    """Run the launcher, its output into ``folder/launch.log``; ``"ok"`` or ``"failed"``."""
    import subprocess

    log = folder / "launch.log"
    with open(log, "w") as fh:
        fh.write(" ".join(command) + "\n\n")
        fh.flush()
        try:
            proc = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            print(f"    failed: no result within {timeout} s (see {log})", file=sys.stderr)
            return "failed"
    if proc.returncode:
        print(f"    failed: the launcher exited with status {proc.returncode} (see {log})", file=sys.stderr)
        return "failed"
    return "ok"


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
    if args.num_processes < 1:
        raise ParameterError(
            "num_processes", f"`num_processes` must be an integer >= 1; got {args.num_processes}"
        )
    plan = _plan(args)  # raises ParameterError before anything runs
    for _, _, cfg, _ in plan:
        share = args.num_processes * cfg.gradient_accumulation_steps
        if cfg.completions % share:
            raise ParameterError(
                "num_processes",
                f"`num_processes` x gradient_accumulation_steps = {share} must divide the {cfg.completions} "
                f"completions per step of {cfg.preset} (G = {cfg.group_size}); got --num-processes "
                f"{args.num_processes}",
            )
    import torch

    has_cuda = torch.cuda.is_available()
    if has_cuda and args.num_processes > torch.cuda.device_count():
        raise ParameterError(
            "num_processes",
            f"`num_processes` must be at most the {torch.cuda.device_count()} GPU(s) here (one process per GPU); "
            f"got {args.num_processes}",
        )
    launcher = args.num_processes > 1 or args.accelerate_config is not None
    config_file = _accelerate_config(args.accelerate_config, has_cuda)
    notebook = Path(args.notebook) if args.notebook else NOTEBOOK
    if not launcher and not notebook.exists():
        raise GrpoError(
            f"notebook not found: {notebook} (pass --notebook PATH; it lives in book/experiments/ of "
            "a checkout of the repository)"
        )
    from grpo_core.llm.config import check_environment

    check_environment(plan[0][2])  # a GPU preset without a GPU fails here, not in the first notebook
    results = []
    total = len(plan)
    for i, (name, folder, cfg, params) in enumerate(plan, 1):
        command = _launch_command(args, params, config_file, has_cuda) if launcher else None
        if args.dry_run:
            print(f"[{i}/{total}] {name} (dry run)", file=sys.stderr)
            results.append({"run": name, "status": "planned", "folder": str(folder)})
            if command:
                results[-1]["command"] = command
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
            if command:
                status = _launch(command, folder, args.timeout)
            else:
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

