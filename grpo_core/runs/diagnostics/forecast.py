"""The plateau forecast of the reward (every law of :mod:`grpo_core.laws`, the best by AIC)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import DataError
from ...validation import check_integer
from ..logs import RunLog
from .series import _bin, _quiet_series

#: Most points a plateau forecast fits (longer logs are bin-averaged first; 500 bins keep a
#: 100,000-step log's forecast, bootstrap included, well under a second).
FORECAST_POINTS = 500


def plateau_forecast(log: RunLog, *, metric: str = "reward", window: int = 20, n_boot: int = 100,
                     level: float = 0.9, seed: int = 0, tail: int = 50) -> dict[str, Any]:
    """Forecast where the reward will plateau, with a band.

    Every law of :mod:`grpo_core.laws` is fitted to the raw reward curve (long logs are first
    bin-averaged to :data:`FORECAST_POINTS` points), the best by AIC forecasts the plateau, and a
    residual block bootstrap gives the band (:func:`grpo_core.laws.forecast` with
    ``fraction = 1``). The fit is made on the
    raw curve, not a smoothed one, because smoothing correlates the residuals and makes both the
    law comparison and the band overconfident; the centred ``window``-step rolling mean is
    returned for display, with the R^2 of the fitted law against it.

    Parameters
    ----------
    log : RunLog
    metric : str
        Column to forecast (``"reward"``).
    window : int
        Rolling-mean window in (binned) points for the smoothed curve, >= 1.
    n_boot : int
        Bootstrap replicates (0: the delta-method band).
    level : float
        Coverage of the band, in (0, 1).
    seed : int
        Bootstrap seed.
    tail : int
        Steps averaged for ``current`` (the mean of the last ``tail`` raw values).

    Returns
    -------
    dict
        ``law``, ``plateau``, ``plateau_low``, ``plateau_high``, ``level``, ``band_method``,
        ``r2`` (of the fit on the raw curve), ``r2_smoothed`` (the same law against the smoothed
        curve), ``t90`` (steps to 90% of the plateau), ``current`` (mean of the last ``tail`` raw
        values), ``reached`` (fraction of the way from the fitted start to the plateau that
        ``current`` has made), ``start``, ``window``, ``at_bound`` (the chosen law's parameters on
        a bound; ``r_inf`` there means the curve does not determine its plateau), ``laws`` (R^2,
        AIC and plateau of each law), and the curves for charts: ``t``, ``fitted``, ``fitted_low``, ``fitted_high``,
        ``smoothed_t``, ``smoothed``.

    Raises
    ------
    DataError
        Fewer than ``window + 5`` points, or a constant curve.
    ParameterError
        Bad ``window``, ``n_boot``, ``level``, ``tail``.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.5 / (1 + np.exp(-(t - 90) / 20)) + np.random.default_rng(0).normal(0, 0.1, 300)
    >>> fc = plateau_forecast(from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)]))
    >>> fc["law"], bool(fc["plateau_low"] < 1.5 < fc["plateau_high"])
    ('logistic', True)
    """
    from ... import laws

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
    return {
        "metric": metric, "law": fc.law, "plateau": fc.plateau, "plateau_low": fc.plateau_low,
        "plateau_high": fc.plateau_high, "level": level, "band_method": fc.band_method, "r2": fit.r2,
        "r2_smoothed": r2_smooth, "t90": fc.t90, "current": current, "tail": int(min(tail, y.size)),
        "reached": reached, "window": window, "start": r0, "at_bound": list(fit.at_bound),
        "laws": {} if fc.comparison is None else {
            name: {"r2": f.r2, "aic": f.aic, "plateau": f.plateau} for name, f in fc.comparison.results.items()},
        "t": fc.t, "fitted": fc.curve, "fitted_low": fc.curve_low, "fitted_high": fc.curve_high,
        "smoothed_t": ts, "smoothed": ys,
    }
