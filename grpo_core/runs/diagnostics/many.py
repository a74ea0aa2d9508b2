"""Diagnosing many runs at once: a sweep's folder, several logs, every run of a tracker's folder.

:func:`diagnose_many` reads and diagnoses each :class:`~grpo_core.runs.logs.discover.RunRef` (several in parallel,
one process per core), splits an input that holds several runs into one row per run, and returns one
:class:`RunRow` per run, in input order: the verdict, the most severe finding, the current level of the reward,
the end-of-run forecast, or why the log could not be read. :func:`worst_exit` gives the exit status of the whole
batch.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...errors import GrpoError, SeveralRunsError
from ...validation import check_integer
from ..logs.discover import RunRef

__all__ = ["RunRow", "diagnose_many", "worst_exit", "EXIT_OF_VERDICT", "NOT_READ"]

#: Exit status of one run's verdict, as ``grpo-dynamics diagnose`` returns for a single log.
EXIT_OF_VERDICT = {"healthy": 0, "inconclusive": 3, "unhealthy": 1}
#: The verdict of a log that could not be read.
NOT_READ = "not read"
# worst first: an input that cannot be read, then a finding, then inconclusive, then healthy
_SEVERITY_OF_EXIT = {2: 3, 1: 2, 3: 1, 0: 0}
# points of the reward curve kept per run for charts
_SERIES_POINTS = 600


@dataclass(frozen=True)
class RunRow:
    """One run of a batch.

    Attributes
    ----------
    label : str
        The run's name in the table (its path relative to the folder given, ``[run]`` for one of several).
    path : str
        The file or folder read.
    run : str or None
        The ``run`` it was read with.
    verdict : {"healthy", "unhealthy", "inconclusive", "not read"}
    exit_code : int
        0 healthy, 1 findings, 3 inconclusive, 2 not read (an input the user named) ; a file found by walking a
        folder that is not a log has ``exit_code`` 0 and ``explicit`` False.
    explicit : bool
        The user named the path (not found by walking a folder).
    error : str or None
        Why the log could not be read.
    top : dict or None
        The most severe finding: ``severity``, ``mode``, ``message``, ``onset``.
    counts : dict of str to int
        Findings per severity (``critical``, ``warning``, ``info``).
    steps : tuple of int or None
        First and last training step.
    format : str or None
    now : float or None
        The reward's current level: the mean of the last 10% of its points (at least 3), as the forecast
        reads it.
    forecast : dict or None
        ``point``, ``low``, ``high`` (the 90% band as shown), ``horizon`` and ``horizon_kind``; or ``declined``
        with the reason, and for a run that reached its planned end ``ended``, the mean reward over its last 20%
        of steps.
    record : dict or None
        The whole diagnosis (:meth:`~grpo_core.runs.diagnostics.Diagnosis.to_dict`), when asked for; without the
        law fit that describes the curve (``fit_laws=False``: a description for charts, not a forecast, and most
        of a diagnosis' time), which a run diagnosed alone has.
    series : dict or None
        The reward curve for charts (``steps``, ``reward``; at most 600 points, evenly thinned), when asked for.
    seconds : float
        Wall time of reading and diagnosing.
    """

    label: str
    path: str
    run: str | None
    verdict: str
    exit_code: int
    explicit: bool = True
    error: str | None = None
    top: dict[str, Any] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    steps: tuple[int, int] | None = None
    format: str | None = None
    now: float | None = None
    forecast: dict[str, Any] | None = None
    record: dict[str, Any] | None = None
    series: dict[str, list] | None = None
    seconds: float = 0.0

    @property
    def read(self) -> bool:
        """Whether the log was read and diagnosed."""
        return self.verdict != NOT_READ

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every attribute (``record`` and ``series`` only when present)."""
        from ..._json import json_ready

        out = {"label": self.label, "path": self.path, "run": self.run, "verdict": self.verdict,
               "exit_code": self.exit_code, "explicit": self.explicit, "error": self.error, "top": self.top,
               "counts": self.counts, "steps": None if self.steps is None else list(self.steps),
               "format": self.format, "now": self.now, "forecast": self.forecast, "seconds": round(self.seconds, 3)}
        if self.record is not None:
            out["diagnosis"] = self.record
        if self.series is not None:
            out["series"] = self.series
        return json_ready(out)


def worst_exit(rows: Sequence[RunRow]) -> int:
    """The exit status of a batch: the worst of its rows' (2 a named input not read > 1 findings > 3 inconclusive
    > 0 healthy); files found by walking a folder that are not logs do not count. 2 when no row was read.
    """
    counted = [r.exit_code for r in rows if r.read or r.explicit]
    if not any(r.read for r in rows):
        return 2
    return max(counted, key=lambda c: _SEVERITY_OF_EXIT[c], default=2)


def diagnose_many(refs: Sequence[RunRef], *, jobs: int | None = None, options: dict[str, Any] | None = None,
                  record: bool = False, series: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> list[RunRow]:
    """Read and diagnose each log of ``refs``; one row per run, in input order.

    Parameters
    ----------
    refs : sequence of RunRef
        From :func:`grpo_core.runs.logs.discover.find_runs`. An input that holds several runs (a run column,
        a W&B export, a restarting step counter, a folder of TensorBoard runs) gives one row per run.
    jobs : int, optional
        Processes (>= 1; default: the machine's cores, at most one per log). 1 runs in this process.
    options : dict, optional
        Keyword arguments of :func:`~grpo_core.runs.diagnostics.diagnose` (``group_size``, ``forecast`` ...) and
        of :func:`~grpo_core.runs.logs.read_log` (``format``, ``mapping``, ``trl_version``), plus ``max_steps``
        (the planned steps where a log does not say).
    record, series : bool
        Keep each run's whole diagnosis (:attr:`RunRow.record`) / its reward curve (:attr:`RunRow.series`).
    progress : callable, optional
        Called as ``progress(done, total)`` after each input.

    Returns
    -------
    list of RunRow

    Raises
    ------
    ParameterError
        ``jobs`` is not an integer >= 1.
    """
    refs = list(refs)
    options = dict(options or {})
    n_jobs = (os.cpu_count() or 1) if jobs is None else check_integer("jobs", jobs, low=1)
    n_jobs = max(1, min(n_jobs, len(refs)))
    results: list[list[RunRow] | None] = [None] * len(refs)
    if n_jobs == 1:
        for i, ref in enumerate(refs):
            results[i] = _diagnose_ref(ref, options, record, series)
            if progress:
                progress(i + 1, len(refs))
    else:
        with ProcessPoolExecutor(max_workers=n_jobs, mp_context=_context()) as pool:
            futures = {pool.submit(_diagnose_ref, ref, options, record, series): i for i, ref in enumerate(refs)}
            from concurrent.futures import as_completed

            for done, fut in enumerate(as_completed(futures), 1):
                results[futures[fut]] = fut.result()
                if progress:
                    progress(done, len(refs))
    return [row for rows in results for row in rows]


def _context():
    # fork shares the imports already made (a worker starts in milliseconds); it is unsafe once threads run
    if os.name == "posix" and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _diagnose_ref(ref: RunRef, options: dict[str, Any], record: bool, series: bool) -> list[RunRow]:
    """One input's rows (several when it holds several runs); never raises for the input's fault."""
    try:
        return [_diagnose_one(ref, options, record, series)]
    except SeveralRunsError as exc:
        return [_row_or_error(ref.with_run(run, label), options, record, series)
                for run, label in zip(exc.runs, exc.labels)]
    except (GrpoError, OSError, UnicodeError) as exc:
        return [_not_read(ref, exc)]


def _row_or_error(ref: RunRef, options, record, series) -> RunRow:
    try:
        return _diagnose_one(ref, options, record, series)
    except (GrpoError, OSError, UnicodeError) as exc:
        return _not_read(ref, exc)


def _not_read(ref: RunRef, exc: BaseException) -> RunRow:
    message = " ".join(str(exc).split()) or type(exc).__name__
    return RunRow(label=ref.label, path=str(ref.path), run=ref.run, verdict=NOT_READ,
                  exit_code=2 if ref.explicit else 0, explicit=ref.explicit, error=message)


_READ_KEYS = ("format", "mapping", "trl_version")


def _diagnose_one(ref: RunRef, options: dict[str, Any], record: bool, series: bool) -> RunRow:
    from ..logs import read_log
    from .diagnose import diagnose

    t0 = time.perf_counter()
    read_kw = {k: options[k] for k in _READ_KEYS if options.get(k) is not None}
    diag_kw = {k: v for k, v in options.items() if k not in _READ_KEYS and k != "max_steps"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what reading did is in the diagnosis' notes
        log = read_log(ref.path, run=ref.run, **read_kw)
        if options.get("max_steps") is not None and "max_steps" not in log.meta:
            log.meta["max_steps"] = int(options["max_steps"])
        # the laws that describe each curve are for charts, which a batch does not draw (and most of its time)
        d = diagnose(log, fit_laws=False, **diag_kw)
    top = d.primary
    counts = {s: sum(f.severity == s for f in d.findings) for s in ("critical", "warning", "info")}
    fc = d.forecast
    if fc is not None and not fc.declined:
        forecast = {"point": fc.shown_point, "low": fc.shown_low, "high": fc.shown_high, "horizon": fc.horizon,
                    "horizon_kind": fc.horizon_kind}
    else:
        why = fc.declined if fc is not None else next(
            (n for n in d.notes if n.startswith("no end-of-run forecast")), "no end-of-run forecast")
        forecast = {"declined": why, **_ended(log, why)}
    return RunRow(
        label=ref.label, path=str(ref.path), run=ref.run, verdict=d.verdict, exit_code=EXIT_OF_VERDICT[d.verdict],
        explicit=ref.explicit,
        top=None if top is None else {"severity": top.severity, "mode": top.mode, "message": top.message,
                                      "onset": top.onset},
        counts=counts, steps=tuple(int(s) for s in d.steps), format=d.format, now=_now(log, fc),
        forecast=forecast, record=d.to_dict() if record else None, series=_series(log) if series else None,
        seconds=time.perf_counter() - t0,
    )


def _ended(log, why: str) -> dict[str, float]:
    """For a run that reached its planned end: ``ended``, the mean reward over its last 20% of steps (what the
    forecast would have been of; :func:`~grpo_core.runs.forecast.forecast_end` says the same in its reason)."""
    import re

    import numpy as np

    m = re.search(r"reached its planned end \(step ([0-9.e+]+)\)", why)
    if m is None or "reward" not in log.train.columns:
        return {}
    horizon = float(m.group(1))
    steps, values = log.series("reward")
    keep = np.isfinite(values) & (steps >= 0.8 * horizon)
    return {"ended": float(values[keep].mean())} if keep.any() else {}


def _now(log, fc) -> float | None:
    """The reward's current level as the forecast reads it (the mean of the last 10% of points, at least 3)."""
    if fc is not None and not fc.declined and math.isfinite(fc.now):
        return float(fc.now)
    if "reward" not in log.train.columns:
        return None
    steps, values = log.series("reward")
    import numpy as np

    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    k = max(3, int(math.ceil(0.1 * values.size)))
    return float(values[-k:].mean())


def _series(log) -> dict[str, list] | None:
    if "reward" not in log.train.columns:
        return None
    import numpy as np

    steps, values = log.series("reward")
    keep = np.isfinite(values)
    steps, values = steps[keep], values[keep]
    if steps.size > _SERIES_POINTS:
        idx = np.unique(np.linspace(0, steps.size - 1, _SERIES_POINTS).round().astype(int))
        steps, values = steps[idx], values[idx]
    return {"steps": [float(s) for s in steps], "reward": [float(v) for v in values]}
