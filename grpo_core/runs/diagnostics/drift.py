"""KL drift: the policy moves away from the reference while the reward stays flat."""

from __future__ import annotations

import numpy as np

from ..logs import RunLog
from .findings import Finding
from .series import _bin, _need, _quiet_series, _rise, _too_few
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def kl_drift(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the KL to the reference grew while the reward did not rise.

    The KL's late level (median of the last 10%) at or above ``kl_drift_level`` (0.1 nats per token)
    and ten times (``growth_warning``) its early level (median of the first quarter, floored at the
    KL floor of :attr:`Thresholds.floors`), while the reward's early/late rise is not significant
    (z < ``trend_z``): a warning. The policy pays KL for nothing: the update follows noise, or the
    reward does not reward what moves the policy.

    Parameters
    ----------
    log : RunLog
        Needs ``kl`` and ``reward``.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` when the late KL stays under ``kl_drift_level`` or ``growth_warning`` times its early level,
        or the reward rose.

    Raises
    ------
    DataError
        A column missing, or fewer than 16 values of either.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "kl": 0.01 * 1.05 ** s, "reward": 0.3 + 0.01 * (s % 3)} for s in range(1, 101)]
    >>> kl_drift(from_records(recs)).severity
    'warning'
    """
    th = thresholds
    _need(log, "kl_drift", "kl", "reward")
    kt, kl = _quiet_series(log, "kl")
    rt, r = _quiet_series(log, "reward")
    if kl.size < 16 or r.size < 16:
        raise _too_few(log, "kl_drift", 16, "values of kl and reward", f"{kl.size} and {r.size}")
    kt, kl = _bin(kt.astype(float), np.abs(kl), 4000)
    early = float(np.median(kl[:max(3, kl.size // 4)]))
    late = float(np.median(kl[-max(3, int(round(0.1 * kl.size))):]))
    base = max(early, th.floors.get("kl", 0.05))
    rise = _rise(r, early_points=int(min(20, max(3, round(0.05 * r.size)))))
    if late < th.kl_drift_level or late / base < th.growth_warning or rise["z"] >= th.trend_z:
        return None
    ev = {"kl_early": early, "kl_late": late, "kl_growth": late / base, "reward_early": rise["early"],
          "reward_late": rise["late"], "reward_rise_z": rise["z"]}
    return Finding("kl_drift", "warning", (int(round(kt[0])), int(round(kt[-1]))), None, ev,
                   f"KL drift without gain: the KL to the reference grew from {early:.3g} to {late:.3g} while the "
                   f"reward did not rise significantly ({rise['early']:.3g} -> {rise['late']:.3g}, z = "
                   f"{rise['z']:.2g}).")
