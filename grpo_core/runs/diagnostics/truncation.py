"""Truncation: completions end at the length cap (no answer, no reward), which mimics every other failure."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import DataError
from ..logs import RunLog
from .findings import Finding
from .series import _quiet_series, _runs, _smooth, _too_few, _window
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def truncation(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the completions hit the length cap.

    With ``clipped_ratio`` (TRL ``completions/clipped_ratio``: the fraction of completions that hit
    ``max_completion_length``): its median over the last quarter of the run at or above
    ``truncation_warning`` (0.5) is a warning, ``truncation_critical`` (0.9) critical. Without it, the
    mean ``completion_length`` is pinned at its cap when at least ``pinned_fraction`` (0.3) of the last
    quarter's steps sit at the run's maximum (within 0.5%): a warning. Truncation that held earlier
    (a smoothed clipped ratio >= 0.5, or the pinned length, in stretches of at least ``min_stretch_steps``
    that together cover at least 10% of the run) and ended is info; it spans the first to the last
    stretch (evidence ``stretches``, and ``stretch_level``: the share of the span's steps at the cap).

    Parameters
    ----------
    log : RunLog
        Needs ``clipped_ratio`` or ``completion_length``.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` when the completions are not at the cap late in the run and were not over a sustained
        earlier stretch.

    Raises
    ------
    DataError
        Neither column, or fewer than 8 values.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "clipped_ratio": min(1.0, s / 50)} for s in range(1, 101)]
    >>> truncation(from_records(recs)).severity
    'critical'
    """
    th = thresholds
    if log.has("clipped_ratio"):
        st, v = _quiet_series(log, "clipped_ratio")
        kind = "clipped_ratio"
    elif log.has("completion_length"):
        st, length = _quiet_series(log, "completion_length")
        top = float(np.max(length)) if length.size else 0.0
        v = (length >= 0.995 * top).astype(float) if top > 0 else np.zeros_like(length)
        kind = "pinned_length"
    else:
        raise DataError(f"truncation needs clipped_ratio or completion_length, which {log.source} does not have")
    n = v.size
    if n < 8:
        raise _too_few(log, "truncation", 8, f"values of {kind}", n)
    q = max(2, n // 4)
    late = float(np.median(v[-q:])) if kind == "clipped_ratio" else float(np.mean(v[-q:]))
    last = int(st[-1])
    ev: dict[str, Any] = {"column": "clipped_ratio" if kind == "clipped_ratio" else "completion_length",
                          "late_level": late, "late_steps": [int(st[-q]), last]}
    if kind == "clipped_ratio":
        severity = ("critical" if late >= th.truncation_critical else
                    "warning" if late >= th.truncation_warning else None)
        # the median step, not the share of all completions: say the mean beside it where they differ
        mean = float(np.mean(v[-q:]))
        ev["late_mean"] = mean
        also = f"; {mean:.0%} over all of those steps" if f"{mean:.0%}" != f"{late:.0%}" else ""
        what = (f"on the median step of steps {st[-q]}-{last}, {late:.0%} of the completions hit the length cap "
                f"(clipped_ratio{also})")
    else:
        ev["max_length"] = top
        # a pinned length needs a real late stretch: a maximum on one of three steps is no cap
        severity = "warning" if late >= th.pinned_fraction and q >= th.min_stretch_steps else None
        # within 0.5% of the maximum, not at it (run 40: 9 of 25 steps at 1846, one more at 1838.5)
        exact = float(np.mean(length[-q:] >= top))
        at = (f"at its maximum {top:.0f} tokens on {late:.0%}" if exact == late else
              f"within 0.5% of its maximum {top:.0f} tokens on {late:.0%} (at it on {exact:.0%})")
        what = (f"the mean completion length sits {at} of steps {st[-q]}-{last}: on those steps (nearly) every "
                "completion hit the cap")
    onset = _onset(st, v, th)
    if severity is not None:
        return Finding("truncation", severity, (onset if onset is not None else int(st[-q]), last), onset, ev,
                       f"Truncation: {what}; truncated completions carry no answer, so the reward, its spread "
                       "and the gradient are those of the cap, not of the task.")
    # every stretch long enough, not only the longest: a cap hit from step 1 with a short break was
    # reported from after the break
    stretches = [(a, k) for a, k in _runs(_smooth(v, min(_window(n, th), n)) >= 0.5, max_gap=2)
                 if k >= th.min_stretch_steps]
    if sum(k for _, k in stretches) >= max(th.min_stretch_steps, th.min_stretch_fraction * n):
        s0, s1 = int(st[stretches[0][0]]), int(st[stretches[-1][0] + stretches[-1][1] - 1])
        ev["stretch"] = [s0, s1]
        ev["stretches"] = [[int(st[a]), int(st[a + k - 1])] for a, k in stretches]
        inside = (st >= s0) & (st <= s1)
        ev["stretch_level"] = float(np.mean(v[inside]))
        where = "" if len(stretches) == 1 else f", in {len(stretches)} stretches"
        what = ("most completions at the length cap" if kind == "clipped_ratio" else
                f"the mean completion length at its maximum {top:.0f} tokens on {ev['stretch_level']:.0%} of those "
                "steps")
        return Finding("truncation", "info", (s0, s1), s0, ev,
                       f"Truncation over steps {s0}-{s1} ({what}{where}), resolved by the end of the run (late "
                       f"level {late:.0%}).")
    return None


def _onset(st: np.ndarray, v: np.ndarray, th: Thresholds) -> int | None:
    """First step from which the smoothed level stays at or above 0.5 to the end (10% of dips allowed)."""
    sm = _smooth(v, min(_window(v.size, th), v.size)) >= 0.5
    if not sm[-1]:
        return None
    below_after = np.cumsum(~sm[::-1])[::-1]
    remaining = v.size - np.arange(v.size)
    ok = np.flatnonzero(sm & (below_after <= 0.1 * remaining))
    return int(st[ok[0]]) if ok.size else None
