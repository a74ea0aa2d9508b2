"""The law that describes a reward curve: :func:`fit_curve_laws` (every law of :mod:`grpo_core.laws`, the
best by AIC), beside the end-of-run forecast, not a second one."""

from __future__ import annotations

import math

import numpy as np

from ...errors import DataError
from ...validation import check_integer
from ..logs import RunLog
from .checks import check_log
from .result import CurveLawFit
from .reward_range import outside_range

__all__ = ["fit_curve_laws", "plateau_checks", "FORECAST_POINTS"]

#: Most points a law fit or a forecast fits (longer logs are bin-averaged first; 500 bins keep a
#: 100,000-step log's fits, bootstrap included, well under a second).
FORECAST_POINTS = 500


def fit_curve_laws(log: RunLog, *, metric: str = "reward", window: int = 20, n_boot: int = 100,
                   level: float = 0.9, seed: int = 0, tail: int = 50) -> CurveLawFit:
    """Fit every law of :mod:`grpo_core.laws` to a log's curve: the law that describes it, with its plateau.

    Every law is fitted to the raw curve (long logs are first bin-averaged to :data:`FORECAST_POINTS`
    points), the best by AIC gives the plateau, and a residual block bootstrap gives its band
    (:func:`grpo_core.laws.forecast` with ``fraction = 1``). The fit is made on the raw curve, not a
    smoothed one, because smoothing correlates the residuals and makes both the law comparison and the band
    overconfident; the centred ``window``-point rolling mean is returned for display, with the R^2 of the
    fitted law against it. Where the run ends is :func:`~grpo_core.runs.forecast.forecast_end`'s.

    Parameters
    ----------
    log : RunLog
    metric : str
        Column to fit (``"reward"``).
    window : int
        Rolling-mean window in (binned) points for the smoothed curve, >= 1.
    n_boot : int
        Bootstrap replicates (0: the delta-method band).
    level : float
        Coverage of the band, in (0, 1).
    seed : int
        Bootstrap seed.
    tail : int
        Steps averaged for ``current`` (the mean of the last ``tail`` raw values), >= 1.

    Returns
    -------
    CurveLawFit

    Raises
    ------
    ParameterError
        ``log`` not a RunLog; bad ``window``, ``n_boot``, ``level``, ``tail``.
    DataError
        Fewer than ``window + 5`` points, or a constant curve.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.5 / (1 + np.exp(-(t - 90) / 20)) + np.random.default_rng(0).normal(0, 0.1, 300)
    >>> fit = fit_curve_laws(from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)]))
    >>> fit.law, bool(fit.plateau_low < 1.5 < fit.plateau_high)
    ('logistic', True)
    """
    from ... import laws
    from ..diagnostics.series import _bin, _quiet_series  # here: the diagnostics import this room

    check_log(log)
    window = check_integer("window", window, low=1)
    tail = check_integer("tail", tail, low=1)
    steps, y = _quiet_series(log, metric)
    current = float(np.mean(y[-tail:])) if y.size else float("nan")
    bt, by = _bin(steps.astype(float), y, FORECAST_POINTS)
    if by.size < window + 5:
        raise DataError(f"a plateau forecast needs at least {window + 5} points of {metric}; {log.source} has "
                        f"{by.size}")
    fc = laws.forecast(bt, by, law="best", fraction=1.0, n_boot=n_boot, level=level, seed=seed, tail=tail)
    fit = fc.fit
    ts, ys = laws.rolling_mean(bt, by, window)
    fitted_s = fit.predict(ts)
    tss = float(np.sum((ys - ys.mean()) ** 2))
    r2_smooth = 1.0 - float(np.sum((ys - fitted_s) ** 2)) / tss if tss > 0 else float("nan")
    r0 = float(fit.params.get("r0", fit.params.get("r_low", fit.fitted[0])))
    span = fc.plateau - r0
    reached = (current - r0) / span if abs(span) > 1e-12 else float("nan")
    return CurveLawFit(
        metric=metric, law=fc.law, plateau=fc.plateau, plateau_low=fc.plateau_low, plateau_high=fc.plateau_high,
        level=level, band_method=fc.band_method, r2=fit.r2, r2_smoothed=r2_smooth, t90=fc.t90, current=current,
        tail=int(min(tail, y.size)), reached=reached, window=window, start=r0, at_bound=tuple(fit.at_bound),
        laws={} if fc.comparison is None else {
            name: {"r2": f.r2, "aic": f.aic, "plateau": f.plateau} for name, f in fc.comparison.results.items()},
        t=fc.t, fitted=fc.curve, fitted_low=fc.curve_low, fitted_high=fc.curve_high, smoothed_t=ts, smoothed=ys)


def plateau_checks(plateau: float, low: float, high: float, at_bound, span: float,
                   rng: tuple[float, float, str] | None) -> tuple[bool, bool, bool]:
    """Three reasons a fitted plateau is not to be read: the law's asymptote sits on its bound (``"r_inf"``
    in ``at_bound``: the curve does not determine it), the plateau lies outside the reward's range ``rng``
    (:func:`~grpo_core.runs.forecast.shown_range`), the band ``[low, high]`` is more than three times the
    curve's whole range ``span`` wide (held-out runs 44, 46, 49: bands reaching 105-367 for rewards that never
    passed 3-22). Our rules, the same for ``diagnose``'s law fit and ``fit --fit-fraction``'s."""
    return ("r_inf" in tuple(at_bound), outside_range(plateau, rng),
            bool(math.isfinite(high - low) and span > 0 and high - low > 3 * span))
