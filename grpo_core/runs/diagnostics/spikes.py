"""Recurring spikes: the KL, the importance ratio or the gradient norm jump far above their normal level again
and again, even when each spike recovers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...errors import DataError
from ..logs import RunLog
from .findings import Finding
from .series import _not_computed, _quiet_series, _usable, _zero_span
from .thresholds import DEFAULT_THRESHOLDS, Thresholds

_SPIKE_METRICS = ("kl", "ppo_kl", "importance_ratio_max", "grad_norm")


def _spikes(v: np.ndarray, floor: float, th: Thresholds) -> tuple[np.ndarray, float, int | None, float]:
    """Start indices of spike episodes (runs of steps >= spike_factor x the running median), the median,
    and the highest spike step with the running median there (what the message quotes: the rule's own
    baseline, not the run's median)."""
    w = max(11, min(101, v.size // 10 * 2 + 1))
    base = pd.Series(v).rolling(w, center=True, min_periods=1).median().to_numpy()
    base = np.maximum(base, floor)
    hit = v >= th.spike_factor * base
    starts = np.flatnonzero(hit & ~np.concatenate([[False], hit[:-1]]))
    top = int(np.flatnonzero(hit)[np.argmax(v[hit])]) if hit.any() else None
    return starts, float(np.median(v)), top, float(base[top]) if top is not None else float("nan")


def recurring_spikes(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Count the spikes of ``kl``, ``ppo_kl``, ``importance_ratio_max`` and ``grad_norm``.

    A spike starts at a step whose value is at least ``spike_factor`` (10) times the running median
    (centred, 11 to 101 steps, floored by :attr:`Thresholds.spike_floors` so that a KL near 0 does
    not make every wiggle a spike); consecutive spike steps are one spike. ``spike_min_count`` (5) or
    more spikes of one metric are a warning, whether or not each recovers (two to four are info: the
    isolated spikes of a long run): the update is repeatedly
    dominated by a few sequences (very long or degenerate completions, a ratio blow-up), and a run
    that spikes again and again is one spike away from diverging.

    Parameters
    ----------
    log : RunLog
        Needs 20 values of at least one of ``kl``, ``ppo_kl``, ``importance_ratio_max``, ``grad_norm``.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        The metric with the most spikes (every metric's count in the evidence); ``None`` when no metric
        spiked twice.

    Raises
    ------
    DataError
        None of the metrics has 20 values (a KL or ratio 0 on every step, not computed, is not counted:
        :data:`~grpo_core.runs.diagnostics.series.ZERO_MEANS_NOT_COMPUTED`).

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "kl": 5.0 if s % 20 == 0 else 0.02} for s in range(1, 121)]
    >>> f = recurring_spikes(from_records(recs))
    >>> f.severity, f.evidence["kl"]["spikes"]
    ('warning', 6)
    """
    th = thresholds
    found: dict[str, Any] = {}
    for m in _SPIKE_METRICS:
        if not _usable(log, m):  # absent, or 0 on every step (not computed)
            continue
        st, v = _quiet_series(log, m)
        if v.size < 20:
            continue
        starts, med, top, base = _spikes(np.abs(v), th.spike_floors.get(m, 1e-8), th)
        found[m] = {"spikes": int(starts.size), "steps": [int(st[i]) for i in starts[:20]], "median": med,
                    "max": float(np.max(np.abs(v))),
                    "top_spike": None if top is None else {"step": int(st[top]), "value": float(abs(v[top])),
                                                           "running_median": base}}
    if not found:
        zero = [m for m in _SPIKE_METRICS if _not_computed(log, m)]
        raise DataError(f"recurring_spikes needs at least 20 values of {', '.join(_SPIKE_METRICS)}; {log.source} "
                        "has none" + (f" ({'; '.join(f'{m} 0 {_zero_span(log, m)}' for m in zero)}: not computed)"
                                      if zero else ""))
    worst = max(found, key=lambda m: found[m]["spikes"])
    count = found[worst]["spikes"]
    if count < 2:
        return None
    f = found[worst]
    shown = ", ".join(map(str, f["steps"][:8])) + (", ..." if count > 8 else "")
    severity = "warning" if count >= th.spike_min_count else "info"
    return Finding("recurring_spikes", severity, (int(f["steps"][0]), int(log.train.index[-1])), f["steps"][0],
                   found, f"Recurring spikes: {worst} jumped at least {th.spike_factor:g}x above its running "
                   f"median {count} times (steps {shown}; the highest {f['top_spike']['value']:.3g} at step "
                   f"{f['top_spike']['step']} against a running median of {f['top_spike']['running_median']:.3g} "
                   f"there; the run's median {f['median']:.3g}), recovering in between.")
