"""Run folders: what every LLM run writes, deterministic names, provenance, and the loader.

A run folder holds

==========================  ================================================================
``config.json``             the :class:`~grpo_core.llm.config.ExperimentConfig` (with ``lag``,
                            ``prompts_per_step``, ``completions``) and the run name
``provenance.json``         package versions, device, threads, seed, git revision, date, command
``metrics.jsonl``           one normalised line per optimizer step (append-only; written by
                            :class:`grpo_core.runs.callback.DynamicsCallback`), evaluation lines
                            with ``"split": "eval"``
``evals.json``              the evaluation suite at the start and at the end of training
``warmup.json``             the supervised warm-up (tiny model): steps, loss, time, cache hit
``diagnosis.json``          the final diagnosis (findings, plateau forecast)
``summary.json``            wall times and the headline numbers of the run
``gradient_constants.json`` c1, c2, c3 estimated on the model (only when measured)
``grpo_llm.ipynb``          the executed notebook (when run through papermill)
``checkpoints/``            TRL checkpoints for resuming (weights: deleted at the end unless
                            ``keep_checkpoints``, never committed)
``base_model/``             the warmed-up starting model (weights; deleted with the checkpoints)
==========================  ================================================================

:func:`load_run` and :func:`load_runs` read folders back for the book: no training, only files.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._json import json_ready
from ..errors import DataError, ParameterError
from ..validation import check_integer

__all__ = [
    "RUN_FILES",
    "run_name",
    "prepare_run_dir",
    "write_json",
    "read_json",
    "provenance",
    "git_revision",
    "last_checkpoint",
    "checkpoint_problem",
    "clean_weights",
    "Run",
    "load_run",
    "load_runs",
    "runs_table",
]

#: Files of a finished run (besides the notebook and the weights folders).
RUN_FILES = ("config.json", "provenance.json", "metrics.jsonl", "evals.json", "summary.json")

#: Settings that make up the readable part of a run name.
_NAME_KEYS = ("group_size", "prompts_per_step", "seed")
#: Settings left out of the name (they do not change the run's outcome).
_NOT_IN_NAME = {
    "output_dir",
    "resume",
    "keep_checkpoints",
    "diagnose_every",
    "num_threads",
    "warmup_cache",
    "benchmark_dir",
    "measure_constants",
    "constants_samples",
    "probe",
    "probe_groups",
    "probe_iters",
    "probe_repeats",
    "probe_steps",
    "save_every",
    "stop_collapsed",  # ends a collapsed run early; the steps it runs are those of the full run
    # how the same steps are spread over micro-batches and devices, and which engine samples
    "gradient_accumulation_steps",
    "use_vllm",
    "vllm_mode",
    "vllm_gpu_memory_utilization",
    "vllm_server_host",
    "vllm_server_port",
    "preset",
    "num_prompts",
    "completions_per_step",
    "group_size",
    "seed",
}


def _short(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return "+".join(map(str, value))
    return re.sub(r"[^A-Za-z0-9.+-]", "-", str(value))


def run_name(cfg, *, against=None) -> str:
    """A deterministic, readable run name: ``{preset}__G{G}-B{B}[__{changes}]__s{seed}``.

    ``changes`` lists the settings that differ from the preset (``lr0.0005-beta0.04``), or a short
    hash of them when the list would be long. The same settings always give the same name.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings. Settings that do not change the outcome (``output_dir``, ``resume``,
        ``save_every``, caches, ...) are left out of ``changes``.
    against : ExperimentConfig, optional
        What counts as "unchanged" (default: the preset's config).

    Returns
    -------
    str
        The name; ``changes`` is ``h`` + 10 hex digits of a SHA-1 when the list is longer than 48
        characters.

    Examples
    --------
    >>> from grpo_core.llm.config import make_config
    >>> run_name(make_config("cpu-tiny", group_size=4, seed=2))
    'cpu-tiny__G4-B32__s2'
    >>> run_name(make_config("cpu-tiny", learning_rate=5e-4, completions_per_step=128, group_size=16))
    'cpu-tiny__G16-B8__learning_rate0.0005__s0'
    """
    from .config import PRESETS

    base = against if against is not None else PRESETS[cfg.preset]
    a, b = cfg.to_dict(), base.to_dict()
    changed = {
        k: v
        for k, v in a.items()
        if k not in _NOT_IN_NAME and k in b and v != b[k] and k not in ("lag", "prompts_per_step", "completions")
    }
    parts = [f"{cfg.preset}", f"G{cfg.group_size}-B{cfg.prompts_per_step}"]
    if changed:
        text = "-".join(f"{k}{_short(v)}" for k, v in sorted(changed.items()))
        if len(text) > 48:
            text = "h" + hashlib.sha1(json.dumps(changed, sort_keys=True, default=str).encode()).hexdigest()[:10]
        parts.append(text)
    parts.append(f"s{cfg.seed}")
    return "__".join(parts)


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON atomically (temporary file + rename); NaN/inf become null.

    Parameters
    ----------
    path : str or path
        The file; its folder must exist. ``<name>.tmp`` next to it is used and renamed.
    obj : object
        JSON-serialisable data; numpy scalars are converted, tuples written as lists, dict keys
        as strings.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    TypeError
        ``obj`` holds something JSON cannot write (e.g. a numpy array).
    OSError
        The folder does not exist or is not writable.

    Examples
    --------
    >>> import tempfile
    >>> p = write_json(Path(tempfile.mkdtemp()) / "x.json", {"a": float("nan"), "b": np.float32(0.5)})
    >>> read_json(p)
    {'a': None, 'b': 0.5}
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(json_ready(obj), indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


def read_json(path: str | Path) -> Any:
    """Read a JSON file; :class:`DataError` naming the file when it is missing or broken.

    Parameters
    ----------
    path : str or path
        The file.

    Returns
    -------
    object
        The parsed JSON (``null`` as ``None``).

    Raises
    ------
    DataError
        The file does not exist, or is not valid JSON (the message gives the line).
    OSError
        Other read errors (a folder, no permission) propagate.
    """
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def git_revision(cwd: str | Path | None = None) -> dict[str, Any]:
    """The git commit of the code (``{"commit", "dirty"}``; ``None`` values outside a checkout).

    Parameters
    ----------
    cwd : str or path, optional
        Folder inside the checkout (default: this package's folder, ``grpo_core/llm``).

    Returns
    -------
    dict
        ``commit``: ``git rev-parse HEAD`` (40 hex digits) or ``None``; ``dirty``: whether tracked
        files of the library (``grpo_core/``) or of the experiment notebook
        (``book/experiments/grpo_llm.*``) differ from that commit (``None`` without a commit).
        Both ``None`` when git is missing or times out (10 s per call). Never raises.
    """
    here = Path(cwd) if cwd else Path(__file__).resolve().parent
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
        # ":(top)" pathspecs are relative to the checkout's root, wherever git runs
        status = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":(top)grpo_core",
                ":(top)book/experiments/grpo_llm.md",
                ":(top)book/experiments/grpo_llm.ipynb",
            ],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = bool(status.stdout.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def provenance(seed: int, device: str, *, extra: dict | None = None) -> dict[str, Any]:
    """Where and how a run was made: versions, device, threads, seed, git revision, date, command.

    Parameters
    ----------
    seed : int
        The run's seed (stored as ``int``).
    device : str
        ``"cpu"`` or ``"cuda"``; the GPU's name is recorded when it starts with ``"cuda"`` and
        CUDA is available.
    extra : dict, optional
        More entries, added last (they override the ones above).

    Returns
    -------
    dict
        ``packages`` (name -> version of torch, transformers, trl, datasets, accelerate, numpy,
        grpo-dynamics, and vllm if installed), ``python``, ``platform``, ``device`` (``cpu`` or the
        GPU name), ``cuda`` (CUDA version or None), ``gpu_count``, ``cpu_count``,
        ``torch_threads``, ``seed``, ``git`` (:func:`git_revision`), ``date`` (UTC, ISO 8601),
        ``argv`` (script base name and arguments), plus ``extra``. ``packages`` also lists
        papermill when installed.

    Raises
    ------
    ImportError
        If torch is not installed.
    """
    from importlib.metadata import PackageNotFoundError, version

    import torch

    packages = {}
    for name in (
        "torch",
        "transformers",
        "trl",
        "datasets",
        "accelerate",
        "numpy",
        "grpo-dynamics",
        "vllm",
        "papermill",
    ):
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            continue
    gpu = None
    if device.startswith("cuda") and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(0)
    out = {
        "packages": packages,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": gpu or "cpu",
        "cuda": torch.version.cuda if gpu else None,
        "gpu_count": torch.cuda.device_count() if gpu else 0,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "seed": int(seed),
        "git": git_revision(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "argv": [os.path.basename(sys.argv[0])] + sys.argv[1:] if sys.argv else [],
    }
    if extra:
        out.update(extra)
    return out


def prepare_run_dir(folder: str | Path) -> Path:
    """Create the run folder (and its ``checkpoints/``); returns it.

    Parameters
    ----------
    folder : str or path
        The run folder; parents are created, an existing folder is kept as it is.

    Returns
    -------
    pathlib.Path
        ``folder``.

    Raises
    ------
    OSError
        The folder cannot be created (no permission, a file in the way).
    """
    folder = Path(folder)
    (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
    return folder


def last_checkpoint(folder: str | Path) -> Path | None:
    """The newest complete TRL checkpoint under ``folder/checkpoints`` (``checkpoint-<step>``), or None.

    A checkpoint counts when it holds a ``trainer_state.json`` that parses and every weight or
    optimizer file in it is whole (:func:`checkpoint_problem`), so a folder left half-written by a
    kill, or a file cut short mid-write, is skipped: the run resumes from the previous checkpoint,
    and a warning names the one skipped and why.

    Parameters
    ----------
    folder : str or path
        The run folder.

    Returns
    -------
    pathlib.Path or None
        The complete checkpoint with the largest step; ``None`` when ``checkpoints/`` is missing
        or holds none.

    Examples
    --------
    >>> import tempfile
    >>> run = Path(tempfile.mkdtemp())
    >>> for step, complete in ((2, True), (10, True), (12, False)):
    ...     (run / "checkpoints" / f"checkpoint-{step}").mkdir(parents=True)
    ...     if complete:
    ...         _ = (run / "checkpoints" / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    >>> last_checkpoint(run).name
    'checkpoint-10'
    """
    ckpt = Path(folder) / "checkpoints"
    if not ckpt.is_dir():
        return None
    found = []
    for p in ckpt.iterdir():
        m = re.fullmatch(r"checkpoint-(\d+)", p.name)
        if m and p.is_dir():
            found.append((int(m.group(1)), p))
    for _, p in sorted(found, reverse=True):
        problem = checkpoint_problem(p)
        if problem is None:
            return p
        if (p / "trainer_state.json").exists():  # a folder the trainer had not finished is no news
            warnings.warn(f"{p.name} is not usable ({problem}); trying the checkpoint before it", stacklevel=2)
    return None


def checkpoint_problem(path: str | Path) -> str | None:
    """Why a TRL checkpoint folder cannot be resumed from, or None when it is whole.

    Checked without loading any tensor: ``trainer_state.json`` exists and parses; every ``.pt`` /
    ``.bin`` file (PyTorch's zip format) has its zip directory at the end, which a file cut short lacks;
    every ``.safetensors`` file is exactly as long as its header says.

    Parameters
    ----------
    path : str or path
        A ``checkpoint-<step>`` folder.

    Returns
    -------
    str or None
        A short reason (``"optimizer.pt is cut short"``), or None.
    """
    import struct
    import zipfile

    path = Path(path)
    state = path / "trainer_state.json"
    if not state.exists():
        return "no trainer_state.json (the save did not finish)"
    try:
        json.loads(state.read_text())
    except (OSError, ValueError):
        return "trainer_state.json does not parse"
    for f in sorted(path.iterdir()):
        if f.suffix in (".pt", ".bin", ".pth"):
            if not zipfile.is_zipfile(f):
                return f"{f.name} is cut short or corrupted"
        elif f.suffix == ".safetensors":
            try:
                with f.open("rb") as fh:
                    (n,) = struct.unpack("<Q", fh.read(8))
                    header = json.loads(fh.read(n))
                end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
            except (OSError, ValueError, KeyError, TypeError, struct.error):
                return f"{f.name} has no readable header"
            if f.stat().st_size != 8 + n + end:
                return f"{f.name} is cut short ({f.stat().st_size} bytes, its header says {8 + n + end})"
    return None


def clean_weights(folder: str | Path) -> list[str]:
    """Delete the weight folders of a finished run (``checkpoints/``, ``base_model/``); returns what
    was removed. The metrics, configs and notebook stay.

    Parameters
    ----------
    folder : str or path
        The run folder.

    Returns
    -------
    list of str
        The names removed, among ``"checkpoints"`` and ``"base_model"`` (empty when neither
        existed).

    Raises
    ------
    OSError
        A folder cannot be removed (from :func:`shutil.rmtree`).
    """
    removed = []
    for name in ("checkpoints", "base_model"):
        p = Path(folder) / name
        if p.exists():
            shutil.rmtree(p)
            removed.append(name)
    return removed


# ------------------------------------------------------------------------------------------------
# Loading runs back (the book's loader: files only, no training)
@dataclass
class Run:
    """A finished (or interrupted) run read from its folder.

    Attributes
    ----------
    path : pathlib.Path
    name : str
    config : dict
        ``config.json`` (plus ``run_name``).
    provenance : dict
    metrics : grpo_core.runs.logs.RunLog
        ``metrics.jsonl`` read with :func:`grpo_core.runs.logs.read_log`.
    evals : dict
        ``evals.json``: ``{"start": {set: result}, "end": {...}}`` (empty if missing).
    summary : dict
    diagnosis : dict
    warmup : dict
    constants : dict
        ``gradient_constants.json`` if present.
    """

    path: Path
    name: str
    config: dict
    provenance: dict
    metrics: Any
    evals: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    diagnosis: dict = field(default_factory=dict)
    warmup: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)

    @property
    def group_size(self) -> int:
        """G of the run."""
        return int(self.config["group_size"])

    @property
    def seed(self) -> int:
        """Seed of the run."""
        return int(self.config["seed"])

    def reward(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps, mean training reward per step).

        Returns
        -------
        steps : ndarray of int64, shape (T,)
            Optimizer steps, increasing.
        reward : ndarray of float64, shape (T,)
            Mean reward of the step's completions (reward units), non-finite values dropped.

        Raises
        ------
        DataError
            The metrics have no ``reward`` column.
        """
        return self.metrics.series("reward")

    def eval_curve(self, metric: str = "accuracy") -> tuple[np.ndarray, np.ndarray]:
        """(steps, held-out metric) from the evaluation lines, the start evaluation included as step 0.

        Parameters
        ----------
        metric : str, default "accuracy"
            Evaluation column: ``"accuracy"`` (greedy) or ``"sampled_accuracy"``. Step 0 comes from
            ``evals.json`` (the first set of ``eval_suite``): its ``accuracy`` for ``"accuracy"``,
            its ``sampled_accuracy`` for any other ``metric``.

        Returns
        -------
        steps : ndarray of int64, shape (n,)
            0 (when the start evaluation has the value), then the steps of the periodic
            evaluation lines.
        values : ndarray of float64, shape (n,)
            The metric (a fraction in [0, 1] for the accuracies). Both empty when there is
            nothing.
        """
        steps, values = [], []
        first = (self.config.get("eval_suite") or [None])[0]
        start = self.evals.get("start", {}).get(first) if first else None
        key = "accuracy" if metric == "accuracy" else "sampled_accuracy"
        if start and start.get(key) is not None:
            steps.append(0)
            values.append(float(start[key]))
        if self.metrics.has(metric, split="eval"):
            s, v = self.metrics.series(metric, split="eval")
            steps += list(s)
            values += list(v)
        return np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=float)


def load_run(folder: str | Path) -> Run:
    """Read one run folder.

    Parameters
    ----------
    folder : str or path
        A run folder (see the module docstring).

    Returns
    -------
    Run
        ``name`` is the ``run_name`` of ``config.json`` (else the folder name); the optional files
        (``provenance.json``, ``evals.json``, ``summary.json``, ``diagnosis.json``,
        ``warmup.json``, ``gradient_constants.json``) give ``{}`` when missing. The metrics'
        reading warnings are suppressed.

    Raises
    ------
    DataError
        The folder has no ``config.json`` or ``metrics.jsonl``, or one of its JSON files cannot be
        read (:func:`read_json`, :func:`grpo_core.runs.logs.read_log`).
    """
    import warnings

    from ..runs.logs import read_log

    folder = Path(folder)
    if not (folder / "config.json").exists():
        raise DataError(f"{folder}: not a run folder (no config.json)")
    config = read_json(folder / "config.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metrics = read_log(folder / "metrics.jsonl", format="grpo_dynamics")

    def opt(name: str) -> dict:
        p = folder / name
        return read_json(p) if p.exists() else {}

    return Run(
        path=folder,
        name=config.get("run_name", folder.name),
        config=config,
        provenance=opt("provenance.json"),
        metrics=metrics,
        evals=opt("evals.json"),
        summary=opt("summary.json"),
        diagnosis=opt("diagnosis.json"),
        warmup=opt("warmup.json"),
        constants=opt("gradient_constants.json"),
    )


def load_runs(root: str | Path, *, pattern: str = "*") -> list[Run]:
    """Every run folder directly under ``root`` whose name matches ``pattern`` (sorted by name).

    Parameters
    ----------
    root : str or path
        Folder of run folders.
    pattern : str, default "*"
        Glob pattern of the run folders' names; sub-folders without ``config.json`` are skipped.

    Returns
    -------
    list of Run
        Possibly empty.

    Raises
    ------
    ParameterError
        ``root`` is not a folder.
    DataError
        A matching run folder cannot be read (:func:`load_run`).
    """
    root = Path(root)
    if not root.is_dir():
        raise ParameterError("root", f"`root` must be a folder of run folders; got {str(root)!r}")
    return [load_run(p) for p in sorted(root.glob(pattern)) if p.is_dir() and (p / "config.json").exists()]


def runs_table(runs: list[Run], *, tail: int = 50) -> pd.DataFrame:
    """One row per run: name, G, B, seed, steps, start/final reward, eval accuracy start/end, wall time.

    ``final_reward`` is the mean training reward of the last ``tail`` steps; ``start_reward`` the mean
    of the first 10 steps.

    Parameters
    ----------
    runs : list of Run
        Loaded runs.
    tail : int, default 50
        Steps averaged for ``final_reward``.

    Returns
    -------
    pandas.DataFrame
        Columns ``run``, ``G``, ``B`` (prompts per step), ``seed``, ``steps`` (last logged step, 0
        without rewards), ``start_reward``, ``final_reward`` (NaN without rewards),
        ``eval_start``, ``eval_end`` (greedy accuracy on the first evaluation set, ``None`` when
        missing), ``eval_sampled_start``, ``eval_sampled_end``, ``minutes`` (wall time of the
        last session, NaN without ``summary.json``). Empty (no columns) for no runs.

    Raises
    ------
    KeyError
        A run's config lacks ``group_size`` or ``seed``.
    ParameterError
        ``tail`` is not an integer >= 1.
    """
    tail = check_integer("tail", tail, low=1)
    rows = []
    for run in runs:
        steps, reward = run.reward() if run.metrics.has("reward") else (np.array([]), np.array([]))
        first = (run.config.get("eval_suite") or [None])[0]
        start = run.evals.get("start", {}).get(first, {}) if first else {}
        end = run.evals.get("end", {}).get(first, {}) if first else {}
        rows.append(
            {
                "run": run.name,
                "G": run.group_size,
                "B": run.config.get("prompts_per_step"),
                "seed": run.seed,
                "steps": int(steps[-1]) if steps.size else 0,
                "start_reward": float(np.mean(reward[:10])) if reward.size else np.nan,
                "final_reward": float(np.mean(reward[-tail:])) if reward.size else np.nan,
                "eval_start": start.get("accuracy"),
                "eval_end": end.get("accuracy"),
                "eval_sampled_start": start.get("sampled_accuracy"),
                "eval_sampled_end": end.get("sampled_accuracy"),
                "minutes": (run.summary.get("wall_seconds") or np.nan) / 60,
            }
        )
    return pd.DataFrame(rows)
