"""Numerical failure: NaN or infinite values in the loss, gradient norm, KL, entropy or reward."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import DataError
from ..logs import RunLog
from .findings import Finding
from .series import OVERFLOW, _overflowed

_METRICS = ("loss", "grad_norm", "kl", "entropy", "reward")


def _overflow_steps(log: RunLog, metric: str) -> np.ndarray:
    """Steps where ``metric`` holds a finite value at or beyond :data:`OVERFLOW` (int64, increasing)."""
    if metric not in log.train.columns:
        return np.zeros(0, np.int64)
    values = log.train[metric].to_numpy(dtype=float, na_value=np.nan)
    return log.train.index.to_numpy(dtype=np.int64)[_overflowed(values)]


def _bad_steps(log: RunLog, metric: str) -> tuple[np.ndarray, bool] | None:
    """Steps where ``metric`` was logged non-finite or overflowed, and whether it is sane again after the last.

    Only values the log wrote count (:meth:`RunLog.nonfinite_steps`): a step where the metric was not
    logged (an empty CSV cell, a key missing from a record, as TRL writes the reward keys on
    generation steps only) is not a NaN.
    """
    bad = np.union1d(log.nonfinite_steps(metric), _overflow_steps(log, metric)).astype(np.int64)
    if bad.size == 0:
        return None
    after = log.train.index.to_numpy() > bad[-1]
    if metric in log.train.columns:
        later = log.train[metric].to_numpy(dtype=float, na_value=np.nan)[after]
        recovered = bool((np.isfinite(later) & ~_overflowed(later)).any())
    else:
        recovered = False
    return bad, recovered


def numerical_failure(log: RunLog) -> Finding | None:
    """Check for NaN, infinite or overflowed values in ``loss``, ``grad_norm``, ``kl``, ``entropy`` and ``reward``,
    and for overflowed values in every other column.

    Overflowed: a magnitude at or beyond :data:`~grpo_core.runs.diagnostics.series.OVERFLOW` (3.4e38,
    float32's largest value, where an inf written as the dtype's maximum sits; no float32 metric can be
    larger). Any is critical (a NaN gradient poisons the weights; a NaN loss or reward means the step learnt
    nothing or garbage), except one case, info: a ``grad_norm`` that is non-finite on some steps and
    finite again after, with a finite loss (the steps fp16 loss scaling skips while it calibrates).
    Steps where a metric was not logged (empty cells, missing keys) are not values (see :func:`_bad_steps`).

    Parameters
    ----------
    log : RunLog

    Returns
    -------
    Finding or None
        ``None`` when every value the log wrote is finite.

    Raises
    ------
    DataError
        The log has none of these five metrics and no other column overflows.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "reward": 0.5, "grad_norm": 0.3 if s < 20 else float("nan")} for s in range(1, 31)]
    >>> numerical_failure(from_records(recs)).severity
    'critical'
    """
    logged_nan = log.logged_nan.get("train", {})
    present = [m for m in _METRICS if m in log.train.columns or m in logged_nan]
    others = [str(c) for c in log.train.columns if c != "step" and c not in _METRICS]
    if not present and not others:
        raise DataError(f"numerical_failure needs one of {', '.join(_METRICS)}; {log.source} has none")
    bad: dict[str, Any] = {}
    recovered: dict[str, bool] = {}
    for m in present:
        found = _bad_steps(log, m)
        if found is not None:
            bad[m] = found[0]
            recovered[m] = found[1]
    for m in others:  # another column: only an overflow is a failure (NaN may mean "none this step")
        over = _overflow_steps(log, m)
        if over.size:
            bad[m], recovered[m] = over, False
    if not bad:
        if not present:  # nothing this check reads for NaN: it judged no value it needs
            raise DataError(f"numerical_failure needs one of {', '.join(_METRICS)}; {log.source} has none")
        return None
    first = int(min(int(s[0]) for s in bad.values()))
    last = int(log.train.index[-1])
    over = {m: _overflow_steps(log, m) for m in bad}
    ev = {m: {"steps": int(s.size), "first": int(s[0]), "finite_after": recovered[m]} for m, s in bad.items()}
    for m in bad:
        if over[m].size:
            ev[m]["overflow_steps"] = [int(t) for t in over[m][:20]]
    parts = [f"{m} on {s.size} step(s) from step {int(s[0])}" + _overflow_text(over[m]) for m, s in bad.items()]
    skipped = set(bad) == {"grad_norm"} and recovered["grad_norm"]
    if skipped:
        return Finding("numerical_failure", "info", (first, last), first, ev,
                       f"Non-finite grad_norm on {bad['grad_norm'].size} step(s) from step {first}, finite after "
                       "and the loss finite: overflowed steps skipped (as fp16 loss scaling does).",
                       "nothing, if it stops after the first steps; bf16 avoids it")
    what = ("NaN, infinite or overflowed" if any(o.size for o in over.values()) else "NaN or infinite")
    return Finding("numerical_failure", "critical", (first, last), first, ev,
                   f"Numerical failure: {what} values in {'; '.join(parts)}.")


def _overflow_text(steps: np.ndarray) -> str:
    """" (at float32's largest value or beyond, 3.4e38: steps 30, 60, 90)", or "" for no step."""
    if not steps.size:
        return ""
    shown = ", ".join(str(int(t)) for t in steps[:8]) + (", ..." if steps.size > 8 else "")
    return f" (at float32's largest value or beyond, {OVERFLOW:.2g}, an overflow: step(s) {shown})"
