"""KL drift: the policy moves away from the reference while the reward stays flat."""

from __future__ import annotations

import numpy as np

from ..logs import RunLog
from .findings import Finding
from .series import _bin, _need, _quiet_series, _rise, _too_few
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def kl_drift(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the KL to the reference grew while the reward did not rise.

    Over a span of the log, the KL's late level (median of the span's last 10%) at or above
    ``kl_drift_level`` (0.1 nats per token) and ten times (``growth_warning``) its early level (median
    of the span's first quarter, floored at the KL floor of :attr:`Thresholds.floors`), while the
    reward's early/late rise over the same span is not significant (z < ``trend_z``): a warning. The
    policy pays KL for nothing: the update follows noise, or the reward does not reward what moves
    the policy. The spans (:data:`SPANS`) are the whole log and its second half: a run that learned
    and then kept drifting after its plateau (the KL grows tenfold while the reward stays flat) is the
    same failure, and its early rise must not hide it.

    Parameters
    ----------
    log : RunLog
        Needs ``kl`` and ``reward``.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` when in neither span the late KL reaches ``kl_drift_level`` and ``growth_warning`` times its
        early level with a reward that did not rise.

    Raises
    ------
    DataError
        A column missing, a KL that is 0 on every step (not computed,
        :data:`~grpo_core.runs.diagnostics.series.ZERO_MEANS_NOT_COMPUTED`), or fewer than 16 values of either.

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
    for share in SPANS:
        ev = _drift_in_span(kt, kl, rt, r, share, th)
        if ev is not None:
            break
    else:
        return None
    where = "" if ev["span"] == 1.0 else f" over the last {ev['span']:.0%} of the run"
    return Finding("kl_drift", "warning", (ev.pop("span_start"), int(round(kt[-1]))), None, ev,
                   f"KL drift without gain{where}: the KL to the reference grew from {ev['kl_early']:.3g} to "
                   f"{ev['kl_late']:.3g} while the reward did not rise significantly ({ev['reward_early']:.3g} -> "
                   f"{ev['reward_late']:.3g}, z = {ev['reward_rise_z']:.2g}).")


#: Shares of the log (its last part) the drift is looked for in: the whole log, then its second half.
SPANS = (1.0, 0.5)


def _drift_in_span(kt: np.ndarray, kl: np.ndarray, rt: np.ndarray, r: np.ndarray, share: float,
                   th: Thresholds) -> dict | None:
    """The drift's evidence over the last ``share`` of the log's steps, or None (no drift there, or
    fewer than 16 points of either series in it)."""
    start = kt[0] + (1.0 - share) * (kt[-1] - kt[0])
    k, rr = kl[kt >= start], r[rt >= start]
    if k.size < 16 or rr.size < 16:
        return None
    early = float(np.median(k[:max(3, k.size // 4)]))
    late = float(np.median(k[-max(3, int(round(0.1 * k.size))):]))
    base = max(early, th.floors.get("kl", 0.05))
    rise = _rise(rr, early_points=int(min(20, max(3, round(0.05 * rr.size)))))
    if late < th.kl_drift_level or late / base < th.growth_warning or rise["z"] >= th.trend_z:
        return None
    return {"kl_early": early, "kl_late": late, "kl_growth": late / base, "reward_early": rise["early"],
            "reward_late": rise["late"], "reward_rise_z": rise["z"], "span": share,
            "span_start": int(round(kt[kt >= start][0]))}
