"""Small numerics on a logged curve that the checks share: smoothing, noise, rises, trends, runs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from ...errors import DataError
from ..logs import RunLog
from .thresholds import Thresholds

#: The least magnitude read as an overflow, not a measurement: float32's largest finite value (3.4028e38) as a
#: log writes it rounded to two digits. A float32 metric cannot exceed it, and an inf written as the dtype's
#: maximum (``torch.nan_to_num``'s default) sits at it; the larger values a float64 log can hold (1e308)
#: overflow float64 arithmetic (the sum of two is inf).
OVERFLOW = 3.4e38


def _overflowed(values: np.ndarray) -> np.ndarray:
    """Mask of the finite values at or beyond :data:`OVERFLOW` in magnitude (shape of ``values``)."""
    v = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(v) & (np.abs(v) >= OVERFLOW)


def _quiet_series(log: RunLog, metric: str, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return log.series(metric, split=split)


def _pct(x: float) -> str:
    """A fraction as a percentage for messages: '43%', '<1%', '0.5%'."""
    if x <= 0:
        return "0%"
    if x < 0.01:
        return "<1%"
    return f"{x:.0%}"


def _window(n: int, th: Thresholds) -> int:
    return int(max(th.window, min(n // 4 if n >= 8 else 1, round(0.02 * n)))) if n > 0 else 1


def _smooth(values: np.ndarray, window: int, how: str = "mean") -> np.ndarray:
    s = pd.Series(values).rolling(window, center=True, min_periods=1)
    return (s.median() if how == "median" else s.mean()).to_numpy()


def _noise_sd(values: np.ndarray) -> float:
    """Noise standard deviation from first differences (robust to slow trends): MAD / sqrt(2)."""
    if values.size < 3:
        return float("nan")
    d = np.diff(values)
    mad = float(np.median(np.abs(d - np.median(d)))) * 1.4826
    sd = mad / math.sqrt(2)
    if sd <= 0:
        sd = float(np.std(d)) / math.sqrt(2)
    return sd


def _ar1_noise(values: np.ndarray):
    """The variance of a mean of ``k`` consecutive points of AR(1) noise, as read off the series itself.

    The step-to-step noise is the larger of the robust (:func:`_noise_sd`) and the plain difference
    estimate (a few spikes in a flat run leave the robust one tiny); the lag-1 autocorrelation is
    ``rho = 1 + 2 r_d`` from the differences' own lag-1 autocorrelation ``r_d`` (-1/2 for white noise, near 0
    for a slowly wandering series), which a slow trend or a hump barely moves; clipped to [0, 0.95].

    Returns
    -------
    (callable, float) or None
        ``var_mean(k)``, the variance of a ``k``-point mean (reward units squared), and ``rho``; ``None``
        when the series has under 3 points or no noise.
    """
    if values.size < 3:
        return None
    d = np.diff(values)
    sd = max(_noise_sd(values), float(np.std(d)) / math.sqrt(2.0))
    if not (math.isfinite(sd) and sd > 0):
        return None
    dc = d - d.mean()
    r_d = float(dc[1:] @ dc[:-1]) / float(dc @ dc) if float(dc @ dc) > 0 else -0.5
    rho = min(max(1.0 + 2.0 * r_d, 0.0), 0.95)
    var_x = sd * sd / (1.0 - rho)  # sd^2 = var(diff) / 2 = var_x (1 - rho)

    def var_mean(k: int) -> float:
        j = np.arange(1, k)
        return var_x / k * (1.0 + 2.0 * float(np.sum((1.0 - j / k) * rho ** j)))

    return var_mean, rho


def _rise(values: np.ndarray, early_points: int | None = None) -> dict[str, float]:
    """Early and late means and the rise's z-score.

    Early: the first 10% of the points (at least 2), so that a curve that rises fast is not
    already high in its "early" window (or ``early_points``); late: the last 25% (at least 2);
    halves under 8 points.
    The standard error uses the step-to-step noise (first differences), which a slow trend does
    not inflate.
    """
    n = values.size
    if n >= 8:
        qe, ql = max(2, int(round(0.1 * n))), max(2, n // 4)
        if early_points is not None:
            qe = int(min(max(2, early_points), n - ql))
    else:
        qe = ql = max(1, n // 2)
    early, late = float(np.mean(values[:qe])), float(np.mean(values[-ql:]))
    sd = _noise_sd(values) if n >= 8 else float(np.std(values, ddof=1)) if n >= 3 else float("nan")
    se = sd * math.sqrt(1.0 / qe + 1.0 / ql) if math.isfinite(sd) else float("nan")
    q = ql
    gain = late - early
    if not math.isfinite(se) or se <= 0:
        z = math.copysign(float("inf"), gain) if gain != 0 else 0.0
    else:
        z = gain / se
    return {"early": early, "late": late, "gain": gain, "z": z, "points": q, "early_points": qe}


def _trend(steps: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Least-squares slope of a curve and its z-score, with early/late means for messages.

    ``z = slope / se(slope)``, ``se`` from the residuals about the line (a curved, saturating
    rise inflates them, which only makes the test conservative). Every point counts, so one
    unlucky early eval does not decide whether a curve rose.
    """
    t = steps.astype(float)
    n = values.size
    rise = _rise(values)
    if n < 3 or np.ptp(t) == 0:
        return {**rise, "slope": float("nan"), "z": 0.0}
    tc = t - t.mean()
    sxx = float(np.dot(tc, tc))
    slope = float(np.dot(tc, values - values.mean()) / sxx)
    resid = values - values.mean() - slope * tc
    s2 = float(np.dot(resid, resid)) / max(n - 2, 1)
    se = math.sqrt(s2 / sxx) if s2 > 0 else 0.0
    z = slope / se if se > 0 else (math.copysign(math.inf, slope) if slope != 0 else 0.0)
    return {**rise, "slope": slope, "z": z}


def _runs(mask: np.ndarray, max_gap: int = 0) -> list[tuple[int, int]]:
    """(start, length) of every run of True, bridging gaps of at most ``max_gap`` False."""
    if not mask.any():
        return []
    m = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(m)
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    if max_gap > 0 and starts.size > 1:
        keep = (starts[1:] - ends[:-1]) > max_gap  # gap before run i+1 too long: a new run starts
        starts = starts[np.concatenate([[True], keep])]
        ends = ends[np.concatenate([keep, [True]])]
    return [(int(a), int(b - a)) for a, b in zip(starts, ends)]


def _longest_run(mask: np.ndarray, max_gap: int = 0) -> tuple[int, int]:
    """(start, length) of the longest run of True, bridging gaps of at most ``max_gap`` False."""
    runs = _runs(mask, max_gap)
    if not runs:
        return 0, 0
    return max(runs, key=lambda r: r[1])  # the first of the longest


def _bin(steps: np.ndarray, values: np.ndarray, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Bin means down to at most ``max_points`` points (long logs)."""
    n = values.size
    if n <= max_points:
        return steps, values
    k = int(math.ceil(n / max_points))
    m = (n // k) * k
    return steps[:m].reshape(-1, k).mean(axis=1), values[:m].reshape(-1, k).mean(axis=1)


#: Columns that are never exactly 0 when they are computed: the entropy of a sampling policy is positive,
#: the KL to the reference grows from 0 as soon as the policy moves (TRL logs 0 when ``beta = 0`` and it is
#: not computed), verl's ``ppo_kl`` is 0 when there is no second update of a batch, and an importance
#: ratio is positive. 0 on every logged step means "not computed": a check that read it would judge
#: nothing (:func:`_not_computed`; every check reading these columns uses it).
ZERO_MEANS_NOT_COMPUTED = ("entropy", "kl", "ppo_kl", "importance_ratio_min", "importance_ratio_mean",
                           "importance_ratio_max")


def _zero_means_not_computed(metric: str) -> bool:
    return metric in ZERO_MEANS_NOT_COMPUTED or str(metric).endswith("_ratio_mean")


def _not_computed(log: RunLog, metric: str) -> bool:
    """Whether ``metric`` is one of :data:`ZERO_MEANS_NOT_COMPUTED` (or a ``*_ratio_mean``) and 0 on every
    logged step (not computed); ``False`` for a column the log does not have."""
    if not _zero_means_not_computed(metric) or not log.has(metric):
        return False
    v = _quiet_series(log, metric)[1]
    return bool(v.size) and bool(np.all(np.abs(v) <= 1e-12))


def _usable(log: RunLog, metric: str) -> bool:
    """``log.has(metric)`` and the column is not :func:`_not_computed`."""
    return log.has(metric) and not _not_computed(log, metric)


def _zero_span(log: RunLog, metric: str) -> str:
    """Where a :func:`_not_computed` column is 0: "on every step", or "on the 1 step that logs it (of 300;
    the others are empty)" when the other rows are empty (a notebook's "No Log")."""
    logged = int(_quiet_series(log, metric)[1].size)
    rows = len(log.train)
    if logged >= rows:
        return "on every step"
    which = "the 1 step that logs it" if logged == 1 else f"the {logged} steps that log it"
    return f"on {which} (of {rows}; the others are empty)"


def _absent_reason(log: RunLog, metric: str) -> str:
    """Why ``metric`` cannot be read from ``log`` (for a check's "not checked" reason)."""
    if _not_computed(log, metric):
        return f"is 0 {_zero_span(log, metric)} in {log.source} (not computed)"
    why = getattr(log, "dropped", {}).get("train", {}).get(metric)
    if why:
        return f"was dropped from {log.source}: {why}"
    return f"is not in {log.source}"


def _need(log: RunLog, mode: str, *metrics: str) -> None:
    """A :class:`DataError` naming why, unless every metric is :func:`_usable` (present, not all-zero when that
    means not computed)."""
    missing = [m for m in metrics if not log.has(m)]
    if missing and all(_absent_reason(log, m).startswith("is not in") for m in missing):
        raise DataError(f"{mode} needs the column(s) {', '.join(missing)}, which {log.source} does not have")
    bad = [m for m in metrics if not _usable(log, m)]
    if bad:
        raise DataError(f"{mode} needs {', '.join(bad)}: " + "; ".join(f"the column {m} {_absent_reason(log, m)}"
                                                                      for m in bad))


def _steps_spanned(log: RunLog, first: int, last: int) -> int:
    """Optimizer steps that the logged rows from step ``first`` to ``last`` stand for.

    A log written every ``N`` steps has one row per ``N`` steps: ``last - first + N`` (``N`` the median
    interval between the log's training steps, at least 1), not the number of rows.
    """
    st = log.train.index.to_numpy(dtype=np.int64)
    interval = int(max(1, np.median(np.diff(st)))) if st.size > 1 else 1
    return int(last - first + interval)


def _too_few(log: RunLog, mode: str, minimum: int, what: str, have: object) -> DataError:
    """The error of a check that got fewer than ``minimum`` ``what`` (``have`` of them) from ``log``; raise it."""
    return DataError(f"{mode} needs at least {minimum} {what}; {log.source} has {have}")


def _needed_series(log: RunLog, mode: str, metric: str, minimum: int = 0,
                   what: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) of ``metric`` for the check ``mode``: a :class:`DataError` when the column is missing
    (:func:`_need`) or has fewer than ``minimum`` values (:func:`_too_few`, of ``what``, by default
    "values of <metric>")."""
    _need(log, mode, metric)
    steps, values = _quiet_series(log, metric)
    if values.size < minimum:
        raise _too_few(log, mode, minimum, what or f"values of {metric}", values.size)
    return steps, values


def _is_binary_compatible(values: np.ndarray) -> bool:
    return bool(values.size and np.all((values >= -1e-9) & (values <= 1 + 1e-9)))

