"""Finding the runs in paths a user gives: several log files, a folder of runs (a sweep's ``runs/*/``), a tracker's
folder (``tensorboard_log/``, ``wandb/``, ``mlruns/``).

:func:`find_runs` turns paths into :class:`RunRef` s, one per log to read; a log that turns out to hold several
runs (a run column, a W&B export, a restarting step counter, a folder of TensorBoard runs) is split when it is
read (:class:`~grpo_core.errors.SeveralRunsError`), not here, so a file is opened once.

What a folder's walk takes as a log:

* a folder a tracker reader takes as a whole (a W&B run or ``wandb/`` folder, an MLflow store or run): that
  folder, not walked further; a folder holding TensorBoard event files: that folder (one run);
* ``trainer_state.json``; in sibling ``checkpoint-<N>`` folders only the one of the largest ``N`` (each
  checkpoint's file repeats the history before it);
* a folder whose ``meta.json`` names its ``raw_file`` (the layout of the runs shipped here): that file only;
* other files ending ``.json``, ``.jsonl``, ``.csv``, ``.tsv``, ``.log`` or ``.txt``, except the settings and
  model files that sit beside logs (``config.json``, ``training_args.json``, ``tokenizer*.json``,
  ``wandb-summary.json`` ...) and ``README``/``LICENSE``/``requirements`` files.

Hidden folders (``.git``), ``__pycache__``, ``node_modules`` and virtual environments are not walked. A file found
by the walk that cannot be read as a log is reported as not read, not as an error of the batch
(:attr:`RunRef.explicit` is ``False``); a path given explicitly that cannot be read is an error.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import DataError, ParameterError

__all__ = ["RunRef", "find_runs", "is_one_run", "LOG_SUFFIXES"]

#: Suffixes of the files a folder's walk reads as logs.
LOG_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".log", ".txt")

# Files that sit beside logs and are not logs (settings, model and tokenizer files, tracker metadata).
_NOT_LOGS = re.compile(
    r"^(meta|config|training_args|trainer_config|generation_config|adapter_config|preprocessor_config|"
    r"special_tokens_map|added_tokens|vocab|merges|tokenizer(_config)?|wandb-summary|wandb-metadata|"
    r"requirements.*|model\.safetensors\.index|pytorch_model\.bin\.index|index|package(-lock)?|"
    r"conda-environment|environment)\.(json|txt|csv)$|^(readme|license|licence|notice|changelog)(\..*)?$",
    re.IGNORECASE)
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "env"}
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class RunRef:
    """One log to read.

    Attributes
    ----------
    path : pathlib.Path
        The file or folder :func:`~grpo_core.runs.logs.read_log` reads.
    run : str or None
        The ``run`` it is read with (``None``: the input's only run, or all of them split when read).
    label : str
        How tables name it: the path relative to the folder given (or as given), with ``[run]``.
    explicit : bool
        The user named this path (not found by walking a folder): failing to read it is an error.
    """

    path: Path
    run: str | None
    label: str
    explicit: bool

    def with_run(self, run: str, name: str | None = None) -> RunRef:
        """The same input read with ``run`` (one of the runs it holds), labelled with ``name`` (default: ``run``)."""
        return RunRef(self.path, run, f"{self.label} [{name or run}]", self.explicit)


def find_runs(paths, *, max_runs: int = 10_000) -> tuple[list[RunRef], list[str]]:
    """The logs in ``paths``, in the order given (a folder's in sorted order), and notes on what was left out.

    Parameters
    ----------
    paths : sequence of str or pathlib.Path
        Log files, tracker files or folders, folders of runs.
    max_runs : int
        The most logs taken (a folder with more is an error rather than an hour's work).

    Returns
    -------
    (list of RunRef, list of str)

    Raises
    ------
    ParameterError
        ``paths`` is empty or holds something that is not a path.
    DataError
        A path does not exist; a folder holds no log; more than ``max_runs`` logs.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise ParameterError("paths", "`paths` must name at least one log file or folder")
    refs: list[RunRef] = []
    notes: list[str] = []
    for raw in paths:
        if not isinstance(raw, (str, Path)):
            raise ParameterError("paths", f"`paths` must hold file or folder paths; got {type(raw).__name__}")
        p = Path(raw)
        if not p.exists():
            dangling = " (a symbolic link to a missing file)" if p.is_symlink() else ""
            raise DataError(f"{raw}: no such file or folder{dangling}")
        if p.is_dir() and _whole(p) is None:
            found = _walk(p, notes)
            if not found:
                raise DataError(f"{raw}: no log found in this folder (looked for trainer_state.json, "
                                f"{', '.join(LOG_SUFFIXES)} files, TensorBoard event files, W&B and MLflow folders)")
            refs += [RunRef(f, None, _label(f, p, raw), False) for f in found]
        else:
            refs.append(RunRef(p, None, str(raw), True))
        if len(refs) > max_runs:
            raise DataError(f"more than {max_runs} logs in {', '.join(map(str, paths))[:200]}; give fewer paths")
    return _unique(refs, notes), notes


def _unique(refs: list[RunRef], notes: list[str]) -> list[RunRef]:
    """Each file or folder once (a path given twice, a folder and a file in it, two spellings of one path, a
    hard link), the first kept."""
    seen: set = set()
    out = []
    for ref in refs:
        try:
            st = ref.path.stat()
            key = (st.st_dev, st.st_ino)
        except OSError:
            key = str(ref.path.resolve())
        if key in seen:
            continue
        seen.add(key)
        out.append(ref)
    if len(out) < len(refs):
        notes.append(f"read {len(refs) - len(out)} path(s) once that were given or found twice")
    return out


def is_one_run(folder: Path) -> bool:
    """Whether a tracker reads ``folder`` as a whole (a W&B run or ``wandb/`` folder, an MLflow store, a folder whose
    TensorBoard event files sit in it): then it is one input, which may still hold several runs."""
    return _whole(Path(folder)) is not None


def _label(f: Path, root: Path, raw) -> str:
    rel = f.relative_to(root).as_posix()
    base = str(raw).rstrip("/\\") or str(raw)
    return base if rel == "." else f"{base}/{rel}"


def _whole(p: Path):
    """The tracker module that reads folder ``p`` as a whole (a W&B or MLflow folder; a folder whose event files
    sit in it), or ``None``."""
    from .read import STORES, _store_module

    for name in STORES:
        module = _store_module(name)
        try:
            if name == "tensorboard":
                # event files in the folder itself, or sibling writer folders of one run (slime's rollout manager and
                # trainer, :func:`~grpo_core.runs.logs.tensorboard.writers_of_one_run`)
                if any(module.is_event_file(c) and c.is_file() for c in p.iterdir()) or module.writers_of_one_run(p):
                    return module
            elif module.matches(p) and not _other_logs(p):
                # a TRL output folder with its wandb/ or mlruns/ beside trainer_state.json is walked: both are read
                return module
        except (OSError, DataError):
            continue  # unreadable, or the tracker's library missing: the walk lists the files and reading says why
    return None


def _other_logs(folder: Path) -> bool:
    """Whether ``folder`` holds a log file of its own (``trainer_state.json``, a ``.jsonl`` or ``.csv``) or a
    ``checkpoint-<N>`` folder, beside what a tracker wrote."""
    try:
        return any((c.is_file() and (c.name == "trainer_state.json" or c.suffix.lower() in (".jsonl", ".csv"))
                    and not _NOT_LOGS.match(c.name)) or (c.is_dir() and _CHECKPOINT.match(c.name))
                   for c in folder.iterdir())
    except OSError:
        return False


def _walk(root: Path, notes: list[str]) -> list[Path]:
    found: list[Path] = []
    older = 0
    unlisted: list[str] = []

    def not_listed(exc: OSError) -> None:
        unlisted.append(f"{exc.filename}: {exc.strerror}")

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=not_listed):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        if here != root and _whole(here) is not None:
            found.append(here)
            dirnames[:] = []
            continue
        # sibling checkpoint-<N> folders: only the last one's trainer_state.json (each repeats the history)
        ckpts = sorted((int(m.group(1)), d) for d in dirnames if (m := _CHECKPOINT.match(d)))
        for _, d in ckpts:
            dirnames.remove(d)
        if ckpts and not (here / "trainer_state.json").is_file():
            for _, d in reversed(ckpts):
                state = here / d / "trainer_state.json"
                if state.is_file():
                    found.append(state)
                    break
            older += max(0, sum((here / d / "trainer_state.json").is_file() for _, d in ckpts) - 1)
        raw_file = _raw_file(here)
        if raw_file is not None:
            found.append(raw_file)
            continue
        for name in sorted(filenames):
            f = here / name
            if name == "trainer_state.json" or (f.suffix.lower() in LOG_SUFFIXES and not _NOT_LOGS.match(name)):
                if f.is_file():
                    found.append(f)
    if unlisted:
        notes.append(f"could not list {len(unlisted)} folder(s): {'; '.join(unlisted[:5])}")
    if older:
        notes.append(f"left out {older} earlier checkpoint(s)' trainer_state.json (the last checkpoint's "
                     "holds the same history and more)")
    return found


def _raw_file(folder: Path) -> Path | None:
    """The log a ``meta.json`` names as its ``raw_file`` (the layout of the runs shipped here), if it exists."""
    meta = folder / "meta.json"
    if not meta.is_file():
        return None
    try:
        name = json.loads(meta.read_text(encoding="utf-8")).get("raw_file")
    except (ValueError, OSError, AttributeError):
        return None
    if not isinstance(name, str) or "/" in name or "\\" in name:
        return None
    f = folder / name
    return f if f.is_file() else None
