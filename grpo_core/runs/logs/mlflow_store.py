"""MLflow's file store (the ``mlruns/`` folder): what TRL writes with ``report_to="mlflow"`` and no tracking server.

The layout, as ``mlflow.store.tracking.file_store.FileStore`` writes it::

    mlruns/
      .trash/                                 deleted experiments (not read)
      <experiment_id>/meta.yaml               experiment_id, name, artifact_location, lifecycle_stage ...
      <experiment_id>/<run_id>/meta.yaml      run_id, run_name, experiment_id, status, start_time, end_time,
                                              lifecycle_stage
      <experiment_id>/<run_id>/metrics/<key>  one line per logged value: "<timestamp ms> <value> <step>"
      <experiment_id>/<run_id>/params/<key>   the value, as text
      <experiment_id>/<run_id>/tags/<key>     the value, as text (``mlflow.runName``: the run's name)

A key holding ``/`` is a nested path (``metrics/rewards/accuracy_reward/mean``). A metric logged at one step
twice (a job resumed from a checkpoint) has two lines with that step; MLflow's own "latest value" is the line
with the largest ``(step, timestamp, value)``, and this reader keeps, at each step, the line with the later
timestamp (with a warning where the two values differ; TRL's final summary logs ``epoch`` again, unchanged, at the
last step). A last line cut off without its newline (a run killed while writing) is dropped with a warning.

TRL: ``transformers``' ``MLflowCallback`` logs each dict that the trainer logs with ``step=state.global_step``,
the keys as they are (``reward``, ``rewards/accuracy_reward/mean``, ``kl``, ``eval_reward`` ...), and the
``TrainingArguments`` (``GRPOConfig``) as params. So the records this module gives, ``{"step": s, key: value}``,
are read as TRL's keys by :func:`grpo_core.runs.logs.read_log`; of the params, ``max_steps`` (when > 0) goes to
``RunLog.meta["max_steps"]``, where the forecast reads the planned length of a run.

Paths accepted: the ``mlruns`` folder (or a folder holding one), an experiment's folder, a run's folder or its
``metrics`` folder. A store of several runs lists them ("experiment/run_name (run_id)", in the order they
started) and one is chosen with ``run=``: its run id (or the id's first 8 or more characters), its run name
where unique, its number from 1 in the list, or ``"last"``. Experiments with no run (MLflow's empty default
experiment ``0``) and runs marked deleted are left out.

References
----------
MLflow ``mlflow/store/tracking/file_store.py`` (``FileStore``: folder names, ``_log_run_metric`` writes
``f"{timestamp} {value} {step}\\n"``, ``_get_metric_from_line``, ``_get_resource_files`` walks nested keys);
``mlflow/entities/run_status.py`` (status numbers); ``transformers.integrations.MLflowCallback``
(``on_log``: ``log_metrics(metrics, step=state.global_step)``; ``setup``: ``log_params(args.to_dict())``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import DataError, SeveralRunsError
from .aliases import choose_segment
from .schema import _note

__all__ = ["CONTAINER", "matches", "run_names", "read_store", "read_mlflow", "MlflowRun", "store_runs"]

#: ``RunLog.container`` of a log read from an MLflow file store.
CONTAINER = "mlflow"

# Folders of an experiment that are not runs (FileStore.RESERVED_EXPERIMENT_FOLDERS) and of the store root
# that are not experiments (the trash, the model registry's "models").
_NOT_RUNS = {"tags", "datasets", "traces"}
_NOT_EXPERIMENTS = {".trash", "models"}
# mlflow.entities.RunStatus
_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
_META = "meta.yaml"


@dataclass(frozen=True)
class MlflowRun:
    """One run of a store: its folder and what its ``meta.yaml`` says."""

    folder: Path
    run_id: str
    run_name: str
    experiment: str
    status: str
    start_time: int

    @property
    def label(self) -> str:
        """``"experiment/run_name (run_id)"``, as the list of runs shows it."""
        return f"{self.experiment}/{self.run_name} ({self.run_id})"


def _meta(path: Path) -> dict[str, str]:
    """The top-level ``key: value`` pairs of a ``meta.yaml`` as MLflow writes it (``yaml.safe_dump`` of a flat
    dict: one scalar per key, quoted or not; ``tags: []``), as strings; ``{}`` for an unreadable file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line[:1] in (" ", "\t") and key is not None:  # a long plain scalar folded onto the next line
            out[key] = (out[key] + " " + line.strip()).strip()
            continue
        k, sep, v = line.partition(":")
        if not sep or not k or k != k.strip():
            key = None
            continue
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            v = v[1:-1].replace("''", "'") if v[0] == "'" else v[1:-1]
        key = k
        out[k] = v
    return out


def _is_run(folder: Path) -> bool:
    meta = folder / _META
    return meta.is_file() and (folder / "metrics").is_dir() and bool({"run_id", "run_uuid"} & set(_meta(meta)))


def _is_experiment(folder: Path) -> bool:
    meta = folder / _META
    if not meta.is_file():
        return False
    fields = _meta(meta)
    return "experiment_id" in fields and not ({"run_id", "run_uuid"} & set(fields))


def _is_store(folder: Path) -> bool:
    return any(c.is_dir() and c.name not in _NOT_EXPERIMENTS and _is_experiment(c) for c in _children(folder))


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _root(path: Path) -> tuple[str, Path] | None:
    """What ``path`` is (``"run"``, ``"experiment"``, ``"store"``) and the folder to read, or None."""
    if not path.is_dir():
        return None
    if path.name == "metrics" and _is_run(path.parent):
        return "run", path.parent
    if _is_run(path):
        return "run", path
    if _is_experiment(path):
        return "experiment", path
    if _is_store(path):
        return "store", path
    inner = path / "mlruns"
    if inner.is_dir() and _is_store(inner):
        return "store", inner
    return None


def matches(path: Path) -> bool:
    """Whether ``path`` is an MLflow file store, one of its experiments' folders, a run's folder or its
    ``metrics`` folder (by the ``meta.yaml`` files MLflow writes), or a folder holding ``mlruns/``."""
    return _root(path) is not None


def _run_of(folder: Path, experiment: str) -> MlflowRun | None:
    """The run in ``folder`` (None where it is not a run, or is marked deleted)."""
    if not _is_run(folder):
        return None
    m = _meta(folder / _META)
    if m.get("lifecycle_stage", "active") == "deleted":
        return None
    run_id = m.get("run_id") or m.get("run_uuid") or folder.name
    name = m.get("run_name", "")
    tag = folder / "tags" / "mlflow.runName"
    if not name and tag.is_file():
        name = tag.read_text(encoding="utf-8", errors="replace").strip()
    status = m.get("status", "")
    status = _STATUS.get(int(status), status) if status.isdigit() else status
    start = m.get("start_time", "")
    return MlflowRun(folder=folder, run_id=run_id, run_name=name or run_id, experiment=experiment,
                     status=status, start_time=int(start) if start.lstrip("-").isdigit() else 0)


def _experiment_runs(folder: Path) -> list[MlflowRun]:
    name = _meta(folder / _META).get("name") or folder.name
    runs = [_run_of(c, name) for c in _children(folder) if c.is_dir() and c.name not in _NOT_RUNS]
    return [r for r in runs if r is not None]


def store_runs(path: Path) -> list[MlflowRun]:
    """The runs ``path`` holds (a store, an experiment, a run), in the order they started (MLflow's
    ``start_time``, then the run id); ``[]`` where it is none of these."""
    root = _root(path)
    if root is None:
        return []
    kind, folder = root
    if kind == "run":
        exp = folder.parent
        name = (_meta(exp / _META).get("name") or exp.name) if _is_experiment(exp) else exp.name
        run = _run_of(folder, name)
        return [run] if run is not None else []
    if kind == "experiment":
        runs = _experiment_runs(folder)
    else:
        runs = [r for c in _children(folder) if c.is_dir() and c.name not in _NOT_EXPERIMENTS and _is_experiment(c)
                for r in _experiment_runs(c)]
    return sorted(runs, key=lambda r: (r.start_time, r.run_id))


def run_names(path: Path) -> list[str]:
    """The runs ``path`` holds, each a value of ``run``: their run ids (``["."]`` for a store of one run)."""
    runs = store_runs(path)
    return [r.run_id for r in runs] if len(runs) > 1 else ["."]


def _choose(runs: list[MlflowRun], run: str, source: str) -> MlflowRun:
    """The run ``run`` names: a run id or its first 8+ characters, a label, a number, "last", a unique name."""
    shown = "; ".join(f"{i}: {r.label}" for i, r in enumerate(runs, 1))
    k = choose_segment([r.label for r in runs], run)
    if k is not None:
        return runs[k]
    want = run.strip()
    for pick in ([r for r in runs if r.run_id == want],
                 [r for r in runs if len(want) >= 8 and r.run_id.startswith(want)],
                 [r for r in runs if r.run_name == want],
                 [r for r in runs if f"{r.experiment}/{r.run_name}" == want]):
        if len(pick) == 1:
            return pick[0]
        if len(pick) > 1:
            raise DataError(f"{source}: `run` {want!r} names {len(pick)} runs ({shown}); give the run id")
    raise DataError(f"{source}: `run` {want!r} is not one of the MLflow runs ({shown}); give a run id, a run name, "
                    f"a number 1..{len(runs)} or 'last'")


def _metric_files(folder: Path) -> dict[str, Path]:
    """Metric key (the path below ``metrics/``, with ``/``) -> file, sorted by key."""
    base = folder / "metrics"
    out: dict[str, Path] = {}
    for root, _, files in os.walk(base):
        for name in files:
            f = Path(root) / name
            out[f.relative_to(base).as_posix()] = f
    return dict(sorted(out.items()))


def _read_metric(key: str, f: Path, source: str, notes: list[str]) -> tuple[dict[int, tuple[int, float]], list[int]]:
    """``{step: (timestamp, value)}`` of one metric file, keeping the later timestamp at a step logged twice;
    and the steps logged twice with different values (each once per extra line)."""
    text = f.read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    cut = lines[-1] != ""  # no newline at the end: the last write was cut off (or the file was edited)
    if not cut:
        lines.pop()
    by_step: dict[int, tuple[int, float]] = {}
    differ: list[int] = []
    for n, line in enumerate(lines, 1):
        parts = line.split()
        try:
            if len(parts) != 3:
                raise ValueError
            ts, value, step = int(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            if cut and n == len(lines):
                _note(notes, f"{source}: metrics/{key}: the last line {line!r} is cut off (a run killed while "
                             f"writing it); kept the {n - 1} line(s) before it", warn=True)
                break
            hint = (" (two fields: written without a step, by an MLflow older than 0.8.1; a log without steps "
                    "cannot be read as a training run)" if len(parts) == 2 else "")
            raise DataError(f"{source}: metrics/{key} line {n}: {line[:80]!r} is not 'timestamp value step' "
                            f"(an integer time in ms, a number and an integer step, separated by spaces){hint}") \
                from None
        old = by_step.get(step)
        if old is not None:
            if old[1] != value and not (old[1] != old[1] and value != value):  # NaN twice is no disagreement
                differ.append(step)
            if ts < old[0]:
                continue
        by_step[step] = (ts, value)
    return by_step, differ


def read_mlflow(path: Path, source: str, notes: list[str], meta: dict, run: str | None,
                max_bytes: int) -> tuple[list[dict], bool]:
    """The records of one run of an MLflow file store: ``(records, run_used)``.

    Parameters
    ----------
    path : pathlib.Path
        The ``mlruns`` folder (or a folder holding one), an experiment's folder, a run's folder or its
        ``metrics`` folder.
    source : str
        Name used in messages.
    notes, meta : list, dict
        Appended to / filled in: ``meta["mlflow_run"]`` (``run_id``, ``run_name``, ``experiment``, ``status``,
        ``folder``) and, where the run's params give it (> 0), ``meta["max_steps"]``.
    run : str, optional
        Which run, where the path holds several (a run id or its first 8+ characters, a run name, a number
        from 1, ``"last"``); where it holds one, ``run`` must name that one.
    max_bytes : int
        The most bytes of metric files read.

    Returns
    -------
    (list of dict, bool)
        One record per step, ``{"step": int, key: float}`` with every metric logged at that step, in step
        order; True (``run`` is used here, never passed on).

    Raises
    ------
    DataError
        No run in the path; several runs and ``run`` is None (:class:`~grpo_core.errors.SeveralRunsError`, its
        ``runs`` the run ids), or ``run`` names none of them (the message lists them); the run has no metric
        file or only empty ones; a metric line is not ``timestamp value step`` (the message names the file and
        the line); the metric files are larger than ``max_bytes``.
    """
    runs = store_runs(path)
    if not runs:
        raise DataError(f"{source}: an MLflow store with no run (each run is a folder <experiment_id>/<run_id> "
                        "holding meta.yaml and metrics/; deleted runs are in .trash and not read)")
    if len(runs) > 1 and run is None:
        shown = "; ".join(f"{i}: {r.label}" for i, r in enumerate(runs, 1))
        raise SeveralRunsError(f"{source}: an MLflow store of {len(runs)} runs ({shown}); choose one with "
                               f"run='{runs[-1].run_id}' or run='last' (command line: --run {runs[-1].run_id})",
                               [r.run_id for r in runs], _short_labels(runs))
    chosen = runs[0] if run is None else _choose(runs, run, source)
    if len(runs) > 1:
        _note(notes, f"read the MLflow run {chosen.label}; left out {len(runs) - 1} other run(s)", warn=False)
    files = _metric_files(chosen.folder)
    if not files:
        raise DataError(f"{source}: the MLflow run {chosen.label} has no metrics (its folder "
                        f"{chosen.folder} holds no file under metrics/)")
    total = sum(f.stat().st_size for f in files.values())
    if total > max_bytes:
        raise DataError(f"{source}: {total / 2 ** 20:.0f} MiB of MLflow metric files, larger than the "
                        f"{max_bytes / 2 ** 20:.0f} MiB a log may be")
    steps: dict[int, dict] = {}
    twice: dict[str, list[int]] = {}
    for key, f in files.items():
        by_step, differ = _read_metric(key, f, source, notes)
        if differ:
            twice[key] = differ
        for step, (_, value) in by_step.items():
            steps.setdefault(step, {})[key] = value
    if not steps:
        raise DataError(f"{source}: the MLflow run {chosen.label} has {len(files)} metric file(s) but no value in them")
    if twice:
        # the same value again (TRL's final summary repeats `epoch` at the last step) needs no word
        key = min(twice, key=lambda k: (min(twice[k]), k))
        _note(notes, f"{sum(len(v) for v in twice.values())} value(s) of {len(twice)} metric(s) logged again with "
                     f"another value at a step already logged (e.g. a job resumed from a checkpoint; first: {key!r} "
                     f"at step {min(twice[key])}); kept, at each step, the value with the later timestamp", warn=True)
    records = [{"step": s, **steps[s]} for s in sorted(steps)]
    meta["mlflow_run"] = {"run_id": chosen.run_id, "run_name": chosen.run_name, "experiment": chosen.experiment,
                          "status": chosen.status, "folder": str(chosen.folder)}
    max_steps = _param(chosen.folder, "max_steps")
    if max_steps is not None and max_steps.lstrip("-").isdigit() and int(max_steps) > 0:
        meta["max_steps"] = int(max_steps)
    notes.append(f"read {len(files)} metric(s) of the MLflow run {chosen.label} at {len(records)} step(s)"
                 + (f"; the run's status is {chosen.status}" if chosen.status not in ("FINISHED", "") else ""))
    return records, True


def _param(folder: Path, key: str) -> str | None:
    f = folder / "params" / key
    try:
        return f.read_text(encoding="utf-8", errors="replace").strip() if f.is_file() else None
    except OSError:
        return None


#: The reader :func:`grpo_core.runs.logs.read_log` calls (:data:`grpo_core.runs.logs.read.STORES`).
read_store = read_mlflow


def _short_labels(runs) -> list[str]:
    """Each run's name, with its experiment where names repeat across experiments and the start of its id where
    they still repeat (a table's label; the run id chooses it)."""
    names = [r.run_name for r in runs]
    if len(set(names)) < len(names):
        names = [f"{r.experiment}/{r.run_name}" for r in runs]
    if len(set(names)) < len(names):
        names = [f"{n} ({r.run_id[:8]})" for n, r in zip(names, runs)]
    return names
