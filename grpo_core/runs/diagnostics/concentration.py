"""Policy concentration: the entropy falls fast while the reward is still rising.

References
----------
Cui et al. (2025), "The Entropy Mechanism of Reinforcement Learning for Reasoning Language
Models" (entropy collapse while performance saturates).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..logs import RunLog
from .findings import Finding
from .saturation import at_ceiling
from .series import _bin, _needed_series, _noise_sd, _pct, _quiet_series, _smooth, _window
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def policy_concentration(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the entropy falls fast while the reward is still rising.

    The entropy is smoothed (rolling median); its initial level ``H0`` is the median of the first
    1% of the raw values (3 to 20 values: the entropy can fall fast from the first step), its late
    level the median of the smoothed last 5%. The policy has concentrated
    when the late level is at most ``entropy_warning`` (0.5) of ``H0``, collapsed at
    ``entropy_critical`` (0.1). The reward is "still rising" when, at the step the entropy first
    halved, it had made less than ``progress_still_rising`` (75%) of its total gain (its rise
    being significant, z >= ``trend_z``). Severity: critical for a collapse while the reward was
    still rising (or not rising at all), unless the reward ends at its ceiling; warning for a halving
    while it was still rising, for a collapse after it had risen, or for a collapse while it was still
    rising that ends with the reward at its ceiling (:func:`~grpo_core.runs.diagnostics.saturation.at_ceiling`
    over the last 10% of the reward: the policy concentrated on what solves the task; the tiny
    transformer runs of the book's language-model chapter do this, reward 0.25 to 0.91-0.97 with a late
    entropy of 4-9% of its start); info for a halving after the reward had risen (sharpening of a
    learned policy). A collapse is critical only when the reward it comes with stalls below its ceiling
    or falls.

    Parameters
    ----------
    log : RunLog
        Needs ``entropy`` (nats per token; any consistent unit works, only ratios are used).
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` while the late entropy stays above ``entropy_warning`` of its initial level.

    Raises
    ------
    DataError
        No ``entropy`` column, fewer than 10 finite entropy values, or an entropy that is 0 on every step
        (not computed, :data:`~grpo_core.runs.diagnostics.series.ZERO_MEANS_NOT_COMPUTED`).

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "entropy": 0.6 * 0.95 ** s, "reward": 0.7 - 0.5 * 0.97 ** s} for s in range(1, 121)]
    >>> policy_concentration(from_records(recs)).severity
    'critical'
    """
    th = thresholds
    steps, h = _needed_series(log, "policy_concentration", "entropy", 10, "entropy values")
    steps, h = _bin(steps.astype(float), h, 4000)
    n = h.size
    hs = _smooth(h, min(_window(n, th), n), "median")
    k0 = int(min(20, max(3, round(0.01 * n))))
    h0 = float(np.median(h[:k0]))
    k = max(3, int(round(0.05 * n)))
    h_late = float(np.median(hs[-k:]))
    if not h0 > 0:
        return None
    ratio_late = h_late / h0
    if ratio_late > th.entropy_warning:
        return None
    below_half = np.flatnonzero(hs <= th.entropy_warning * h0)
    t_half = int(round(steps[below_half[0]]))
    below_tenth = np.flatnonzero(hs <= th.entropy_critical * h0)
    t_tenth = int(round(steps[below_tenth[0]])) if below_tenth.size else None
    ev: dict[str, Any] = {"entropy_initial": h0, "entropy_late": h_late, "entropy_ratio": ratio_late,
                          "step_entropy_halved": t_half, "step_entropy_tenth": t_tenth,
                          "steps_to_halve": t_half - int(round(steps[0]))}
    rising = None
    progress = None
    if log.has("reward"):
        rt, r = _quiet_series(log, "reward")
        if r.size >= 8:
            rsm = _smooth(r, min(_window(r.size, th), r.size))
            kr = int(min(20, max(3, round(0.01 * r.size))))  # as the entropy's initial window
            k1 = max(3, int(round(0.1 * r.size)))
            # start: the first raw values (the reward can jump within a few steps)
            r0, r1 = float(np.median(r[:kr])), float(np.median(rsm[-k1:]))
            at = float(np.interp(t_half, rt, rsm))
            gain = r1 - r0
            sd = _noise_sd(r)
            z = gain / (sd * math.sqrt(1.0 / kr + 1.0 / k1)) if sd > 0 else math.copysign(math.inf, gain)
            ev.update({"reward_start": r0, "reward_end": r1, "reward_rise_z": z})
            if z >= th.trend_z and gain > 0:
                progress = (at - r0) / gain
                ev["reward_progress_at_halving"] = progress
                rising = progress < th.progress_still_rising
            else:
                rising = None  # reward not rising at all
    collapsed = ratio_late <= th.entropy_critical
    if rising is None:
        severity = "critical" if collapsed else "warning"
        why = "without a significant reward gain" if log.has("reward") else "(no reward column to compare)"
    elif rising:
        severity = "critical" if collapsed else "warning"
        why = f"while the reward was still rising (it had made {progress:.0%} of its gain by then)"
        if collapsed:
            # a collapse that ends with the task solved is the policy settling on its answers, not lost
            # exploration that stalled the reward: critical only when the reward stalls below its ceiling
            # or falls
            ceiling = at_ceiling(log, math.floor(rt[-k1]), math.ceil(rt[-1]), th)
            ev["reward_at_ceiling"] = ceiling
            if ceiling:
                severity = "warning"
                why += (f", but the reward ended at its ceiling ({r1:.3g} over its last 10%): the policy "
                        "concentrated on what solves the task, with no exploration left for harder prompts")
    else:
        severity = "warning" if collapsed else "info"
        why = f"after the reward had made {progress:.0%} of its gain (sharpening of a learned policy)"
    word = "collapsed" if collapsed else "concentrated"
    msg = (f"The policy {word}: entropy fell from {h0:.3g} to {h_late:.3g} ({_pct(ratio_late)} of its initial "
           f"level), below half by step {t_half}, {why}.")
    return Finding("policy_concentration", severity, (int(round(steps[0])), int(round(steps[-1]))), t_half, ev, msg)
