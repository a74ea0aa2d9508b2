"""Numerical failure: NaN or infinite values in the loss, gradient norm, KL, entropy or reward."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import DataError
from ..logs import RunLog
from .findings import Finding

_METRICS = ("loss", "grad_norm", "kl", "entropy", "reward")


def _bad_steps(log: RunLog, metric: str) -> tuple[np.ndarray, bool] | None:
    """Steps where ``metric`` was logged non-finite, and whether it is finite again after the last.

    Only values the log wrote count (:meth:`RunLog.nonfinite_steps`): a step where the metric was not
    logged (an empty CSV cell, a key missing from a record, as TRL writes the reward keys on
    generation steps only) is not a NaN.
    """
    bad = log.nonfinite_steps(metric)
    if bad.size == 0:
        return None
    after = log.train.index.to_numpy() > bad[-1]
    recovered = metric in log.train.columns and bool(np.isfinite(log.train[metric].to_numpy(dtype=float)[after]).any())
    return bad, recovered


def numerical_failure(log: RunLog) -> Finding | None:
    """Check for NaN or infinite values in ``loss``, ``grad_norm``, ``kl``, ``entropy`` and ``reward``.

    Any is critical (a NaN gradient poisons the weights; a NaN loss or reward means the step learnt
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
        The log has none of these metrics.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "reward": 0.5, "grad_norm": 0.3 if s < 20 else float("nan")} for s in range(1, 31)]
    >>> numerical_failure(from_records(recs)).severity
    'critical'
    """
    logged_nan = log.logged_nan.get("train", {})
    present = [m for m in _METRICS if m in log.train.columns or m in logged_nan]
    if not present:
        raise DataError(f"numerical_failure needs one of {', '.join(_METRICS)}; {log.source} has none")
    bad: dict[str, Any] = {}
    recovered: dict[str, bool] = {}
    for m in present:
        found = _bad_steps(log, m)
        if found is not None:
            bad[m] = found[0]
            recovered[m] = found[1]
    if not bad:
        return None
    first = int(min(int(s[0]) for s in bad.values()))
    last = int(log.train.index[-1])
    ev = {m: {"steps": int(s.size), "first": int(s[0]), "finite_after": recovered[m]} for m, s in bad.items()}
    parts = [f"{m} on {s.size} step(s) from step {int(s[0])}" for m, s in bad.items()]
    skipped = set(bad) == {"grad_norm"} and recovered["grad_norm"]
    if skipped:
        return Finding("numerical_failure", "info", (first, last), first, ev,
                       f"Non-finite grad_norm on {bad['grad_norm'].size} step(s) from step {first}, finite after "
                       "and the loss finite: overflowed steps skipped (as fp16 loss scaling does).",
                       "nothing, if it stops after the first steps; bf16 avoids it")
    return Finding("numerical_failure", "critical", (first, last), first, ev,
                   f"Numerical failure: NaN or infinite values in {'; '.join(parts)}.")
