"""Entropy explosion: the policy's entropy grows to a multiple of its initial level (degenerate text)."""

from __future__ import annotations

import numpy as np

from ..logs import RunLog
from .findings import Finding
from .series import _bin, _needed_series, _smooth, _window
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def entropy_explosion(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the entropy rose to a multiple of its initial level.

    The initial and late levels are those of :func:`policy_concentration` (median of the first 1%
    of the values, 3 to 20; median of the smoothed last 5%). Late over initial at or above
    ``explosion_warning`` (2) is a warning, ``explosion_critical`` (4) critical: the policy spreads
    its mass over many more tokens than it started with, which in practice is degenerate, repetitive
    or random text (and usually comes with the length at the cap and the reward gone). The onset is the
    first step of the last stretch of the smoothed entropy at or above twice the initial level (an earlier
    excursion that fell back is named, not taken for it).

    Parameters
    ----------
    log : RunLog
        Needs ``entropy``.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` while the late entropy stays under ``explosion_warning`` times its initial level.

    Raises
    ------
    DataError
        No entropy, fewer than 10 values, or an entropy that is 0 on every step (not computed,
        :data:`~grpo_core.runs.diagnostics.series.ZERO_MEANS_NOT_COMPUTED`).

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "entropy": 0.5 + 0.015 * s} for s in range(1, 101)]
    >>> entropy_explosion(from_records(recs)).severity
    'warning'
    """
    th = thresholds
    # an entropy 0 on every step (not computed) is refused by the shared rule (series.ZERO_MEANS_NOT_COMPUTED)
    steps, h = _needed_series(log, "entropy_explosion", "entropy", 10, "entropy values")
    steps, h = _bin(steps.astype(float), h, 4000)
    n = h.size
    hs = _smooth(h, min(_window(n, th), n), "median")
    h0 = float(np.median(h[:int(min(20, max(3, round(0.01 * n))))]))
    h_late = float(np.median(hs[-max(3, int(round(0.05 * n))):]))
    if not h0 > 0:
        return None
    ratio = h_late / h0
    if ratio < th.explosion_warning:
        return None
    # the onset is where the last stretch above twice the initial level begins, not the first crossing: real
    # run 01's entropy touched 1.14-1.69 at steps 40-45 and fell back to 0.05-0.14 for 90 steps (reward
    # 0.8-0.95) before the explosion from step 145; "from step 40" would roll a user back past 95 good steps
    up = hs >= th.explosion_warning * h0
    starts = np.flatnonzero(up & ~np.r_[False, up[:-1]])
    onset = int(round(steps[starts[-1]])) if starts.size else None
    first = int(round(steps[starts[0]])) if starts.size > 1 else None
    severity = "critical" if ratio >= th.explosion_critical else "warning"
    ev = {"entropy_initial": h0, "entropy_late": h_late, "entropy_ratio": ratio, "step_doubled": onset,
          "step_first_doubled": first if first is not None else onset}
    since = f", above twice it from step {onset}" if onset is not None else ""
    if first is not None:
        since += f" (an earlier excursion above it from step {first} fell back)"
    return Finding("entropy_explosion", severity, (int(round(steps[0])), int(round(steps[-1]))), onset, ev,
                   f"Entropy explosion: the entropy rose from {h0:.3g} to {h_late:.3g} ({ratio:.2g}x its initial "
                   f"level){since}.")
