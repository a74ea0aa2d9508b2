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


def _spikes(v: np.ndarray, floor: float,
            th: Thresholds) -> tuple[np.ndarray, float, int | None, float, np.ndarray]:
    """Start indices of spike episodes (runs of steps >= spike_factor x the running median), the median,
    the highest spike step with the running median there (what the message quotes: the rule's own
    baseline, not the run's median), and each episode's peak over the running median (shape of the starts)."""
    w = max(11, min(101, v.size // 10 * 2 + 1))
    base = pd.Series(v).rolling(w, center=True, min_periods=1).median().to_numpy()
    base = np.maximum(base, floor)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = v / base  # a floor of 0 with a median of 0 leaves inf: a spike from nothing
    hit = v >= th.spike_factor * base
    starts = np.flatnonzero(hit & ~np.concatenate([[False], hit[:-1]]))
    ends = np.flatnonzero(hit & ~np.concatenate([hit[1:], [False]]))
    peaks = np.array([np.max(ratio[a:b + 1]) for a, b in zip(starts, ends)], dtype=float)
    top = int(np.flatnonzero(hit)[np.argmax(v[hit])]) if hit.any() else None
    return starts, float(np.median(v)), top, float(base[top]) if top is not None else float("nan"), peaks


def recurring_spikes(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Count the spikes of ``kl``, ``ppo_kl``, ``importance_ratio_max`` and ``grad_norm``.

    A spike starts at a step whose value is at least ``spike_factor`` (10) times the running median
    (centred, 11 to 101 steps, floored by :attr:`Thresholds.spike_floors` so that a KL near 0 does
    not make every wiggle a spike); consecutive spike steps are one spike. ``spike_min_count`` (5) or
    more spikes of one metric are a warning, whether or not each recovers, and so are two or more spikes of
    ``spike_large_factor`` (100) times the running median or more, orders of magnitude above it (two to four
    smaller ones are info: the isolated spikes of a long run): the update is repeatedly
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
        The metric with the most large spikes when one has two, else the one with the most spikes (every
        metric's count, ``large_spikes``, ``large_steps`` and ``largest_ratio`` in the evidence); ``None``
        when no metric spiked twice.

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
        starts, med, top, base, peaks = _spikes(np.abs(v), th.spike_floors.get(m, 1e-8), th)
        large = starts[peaks >= th.spike_large_factor]
        found[m] = {"spikes": int(starts.size), "steps": [int(st[i]) for i in starts[:20]], "median": med,
                    "max": float(np.max(np.abs(v))), "large_spikes": int(large.size),
                    "large_steps": [int(st[i]) for i in large[:20]],
                    "largest_ratio": float(np.max(peaks)) if peaks.size else None,
                    "top_spike": None if top is None else {"step": int(st[top]), "value": float(abs(v[top])),
                                                           "running_median": base}}
    if not found:
        zero = [m for m in _SPIKE_METRICS if _not_computed(log, m)]
        raise DataError(f"recurring_spikes needs at least 20 values of {', '.join(_SPIKE_METRICS)}; {log.source} "
                        "has none" + (f" ({'; '.join(f'{m} 0 {_zero_span(log, m)}' for m in zero)}: not computed)"
                                      if zero else ""))
    large = [m for m in found if found[m]["large_spikes"] >= 2]
    worst = (max(large, key=lambda m: found[m]["large_spikes"]) if large else
             max(found, key=lambda m: found[m]["spikes"]))
    count = found[worst]["spikes"]
    if count < 2:
        return None
    f = found[worst]
    shown = ", ".join(map(str, f["steps"][:8])) + (", ..." if count > 8 else "")
    severity = "warning" if count >= th.spike_min_count or large else "info"
    msg = (f"Recurring spikes: {worst} jumped at least {th.spike_factor:g}x above its running median {count} times "
           f"(steps {shown}; the highest {f['top_spike']['value']:.3g} at step {f['top_spike']['step']} against a "
           f"running median of {f['top_spike']['running_median']:.3g} there; the run's median {f['median']:.3g})")
    if large:
        # orders of magnitude, again and again: a few sequences dominate those updates
        big = "; ".join(f"{m} {found[m]['large_spikes']} times (steps {_shown(found[m]['large_steps'])}; up to "
                        f"{found[m]['largest_ratio']:.2g}x)" for m in sorted(large, key=lambda m: m != worst))
        msg += (f", recovering in between; spikes of at least {th.spike_large_factor:g}x, orders of magnitude: "
                f"{big}.")
    else:
        msg += ", recovering in between."
    return Finding("recurring_spikes", severity, (int(f["steps"][0]), int(log.train.index[-1])), f["steps"][0],
                   found, msg)


def _shown(steps: list[int]) -> str:
    return ", ".join(map(str, steps[:8])) + (", ..." if len(steps) > 8 else "")
