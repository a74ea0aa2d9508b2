"""Anchor curve families: the forecasts a user would pick instead of ours.

Each anchor fits the first part of a reward curve with plain :func:`scipy.optimize.curve_fit`
(the way a user would) and extrapolates it to the end of the run. They are the reference rows
of the forecasting benchmark (``python -m bench forecast``), not part of the product.

Families (``x``: the optimizer step, ``x >= 1``):

* ``exponential``: ``c - (c - b) exp(-k x)``;
* ``logistic``: ``lo + (hi - lo) / (1 + exp(-r (x - m)))`` (4 parameters);
* ``scalerl``: the sigmoid in compute that ScaleRL fits, ``R0 + (A - R0) / (1 + (C / x)^B)``
  (Khatri et al. 2025, "The Art of Scaling Reinforcement Learning Compute for LLMs");
* the parametric families of Domhan, Springenberg & Hutter (2015), "Speeding up automatic
  hyperparameter optimization of deep neural networks by extrapolation of learning curves":
  ``pow3``, ``pow4``, ``log_power``, ``mmf``, ``janoschek``, ``weibull``, ``exp3``, ``exp4``,
  ``ilog2``, ``vapor_pressure``, ``log_linear``, ``hill3``. They were written for accuracies
  in [0, 1]; here they are fitted to the window rescaled to [0, 1] (its min and max), and the
  forecast is mapped back, which gives them the scale they were designed for.

Bands: ``exponential``, ``logistic``, ``scalerl`` and each Domhan family report the delta-method
band of the forecast from ``curve_fit``'s parameter covariance; ``domhan_mean`` (the plain
average of the families that converged) has none (Domhan et al. obtain one from MCMC over a
weighted combination, which is not reproduced here).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

__all__ = ["AnchorForecast", "ANCHORS", "DOMHAN_FAMILIES", "anchor_forecast", "domhan_mean"]


@dataclass(frozen=True)
class AnchorForecast:
    """One anchor's forecast.

    ``plateau`` is the family's value far beyond the run (at 100x the horizon; the asymptote for
    the saturating families), ``final`` the mean of the fitted curve over the last 20% of the
    run's steps; ``final_low``/``final_high`` its band (NaN when the anchor has none).
    ``declined`` names why no forecast was made (the fit failed), else ``None``.
    """

    name: str
    plateau: float
    final: float
    final_low: float
    final_high: float
    declined: str | None = None


def _declined(name: str, why: str) -> AnchorForecast:
    nan = float("nan")
    return AnchorForecast(name, nan, nan, nan, nan, why)


def _pw(x, e):
    with np.errstate(all="ignore"):
        return np.power(x, e)


# name -> (f(x, *p), initial guess from (x, y) with y scaled to about [0, 1])
_Family = tuple[Callable, Callable]

DOMHAN_FAMILIES: dict[str, _Family] = {
    "pow3": (lambda x, c, a, al: c - a * _pw(x, -al), lambda x, y: [y[-1], y[-1] - y[0], 0.5]),
    "pow4": (lambda x, c, a, b, al: c - _pw(np.abs(a * x + b), -al),
             lambda x, y: [y[-1], 1.0 / x[-1], 1.0, 0.5]),
    "log_power": (lambda x, a, b, c: a / (1 + _pw(x / math.e ** b, -c)),
                  lambda x, y: [max(y[-1], 0.1), math.log(x[len(x) // 2]), 1.0]),
    "mmf": (lambda x, al, be, ka, de: al - (al - be) / (1 + _pw(np.abs(ka * x), de)),
            lambda x, y: [y[-1], y[0], 1.0 / x[len(x) // 2], 1.0]),
    "janoschek": (lambda x, al, be, ka, de: al - (al - be) * np.exp(-ka * _pw(x, de)),
                  lambda x, y: [y[-1], y[0], 1.0 / x[len(x) // 2], 1.0]),
    "weibull": (lambda x, al, be, ka, de: al - (al - be) * np.exp(-_pw(np.abs(ka * x), de)),
                lambda x, y: [y[-1], y[0], 1.0 / x[len(x) // 2], 1.0]),
    "exp3": (lambda x, a, b, c: c - np.exp(np.clip(-a * x + b, -50, 50)),
             lambda x, y: [1.0 / x[len(x) // 2], 0.0, y[-1]]),
    "exp4": (lambda x, a, b, c, al: c - np.exp(np.clip(-a * _pw(x, al) + b, -50, 50)),
             lambda x, y: [1.0 / x[len(x) // 2], 0.0, y[-1], 1.0]),
    "ilog2": (lambda x, a, c: c - a / np.log(x + 1.0), lambda x, y: [1.0, y[-1]]),
    "vapor_pressure": (lambda x, a, b, c: np.exp(np.clip(a + b / x + c * np.log(x), -50, 50)),
                       lambda x, y: [math.log(max(y[-1], 0.05)), -1.0, 0.0]),
    "log_linear": (lambda x, a, b: a * np.log(x) + b, lambda x, y: [0.1, y[0]]),
    "hill3": (lambda x, th, et, ka: th * _pw(x, et) / (_pw(ka, et) + _pw(x, et)),
              lambda x, y: [max(y[-1], 0.1), 1.0, x[len(x) // 2]]),
}

ANCHORS: dict[str, _Family] = {
    "exponential": (lambda x, c, b, k: c - (c - b) * np.exp(-k * x),
                    lambda x, y: [y[-1], y[0], 3.0 / x[-1]]),
    "logistic": (lambda x, lo, hi, r, m: lo + (hi - lo) / (1 + np.exp(np.clip(-r * (x - m), -50, 50))),
                 lambda x, y: [y[0], y[-1], 8.0 / x[-1], x[len(x) // 2]]),
    "scalerl": (lambda x, r0, a, c, b: r0 + (a - r0) / (1 + _pw(np.abs(c) / x, b)),
                lambda x, y: [y[0], y[-1], x[len(x) // 2], 1.0]),
}


def _final_mean(f, x_tail, p) -> float:
    return float(np.mean(f(x_tail, *p)))


def anchor_forecast(name: str, t, y, *, horizon: float, level: float = 0.9) -> AnchorForecast:
    """Fit one anchor family to the window ``(t, y)`` with ``curve_fit`` and forecast the run's end.

    Parameters
    ----------
    name : str
        A key of :data:`ANCHORS` or :data:`DOMHAN_FAMILIES`.
    t, y : array_like, shape (n,)
        The window: optimizer steps (>= 1, increasing) and rewards.
    horizon : float
        The run's last step; ``final`` averages the fitted curve over its last 20%.
    level : float
        Coverage of the delta-method band.

    Returns
    -------
    AnchorForecast
        ``declined`` is set (and the numbers NaN) when ``curve_fit`` fails or returns a
        non-finite forecast.
    """
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    f, guess = ANCHORS[name] if name in ANCHORS else DOMHAN_FAMILIES[name]
    lo, span = (float(np.min(y)), float(np.ptp(y)) or 1.0) if name in DOMHAN_FAMILIES else (0.0, 1.0)
    ys = (y - lo) / span
    x_tail = np.linspace(0.8 * horizon, horizon, 50)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            p, cov = optimize.curve_fit(f, t, ys, p0=guess(t, ys), maxfev=4000)
    except (RuntimeError, ValueError, TypeError, optimize.OptimizeWarning) as exc:
        return _declined(name, f"curve_fit failed: {type(exc).__name__}")
    with np.errstate(all="ignore"):
        final = _final_mean(f, x_tail, p)
        plateau = float(f(np.array([100.0 * horizon]), *p)[0])
    if not (math.isfinite(final) and math.isfinite(plateau)):
        return _declined(name, "non-finite forecast")
    band = (float("nan"), float("nan"))
    if np.all(np.isfinite(cov)):
        g = np.zeros(p.size)
        for j in range(p.size):
            h = 1e-6 * max(abs(p[j]), 1e-6)
            q = p.copy()
            q[j] += h
            with np.errstate(all="ignore"):
                g[j] = (_final_mean(f, x_tail, q) - final) / h
        se = math.sqrt(max(float(g @ cov @ g), 0.0))
        if math.isfinite(se):
            z = special.ndtri(0.5 + level / 2)
            band = (final - z * se, final + z * se)
    return AnchorForecast(name, lo + span * plateau, lo + span * final,
                          lo + span * band[0], lo + span * band[1])


def domhan_mean(t, y, *, horizon: float) -> tuple[AnchorForecast, dict[str, AnchorForecast]]:
    """Every Domhan family on the window and their plain average (no band).

    Families whose forecast leaves the window's range by more than 10 of its spans are left out
    of the average (Domhan et al. likewise discard curves that do not fit); ``declined`` when
    none is left. Returns the average and the per-family forecasts.
    """
    each = {name: anchor_forecast(name, t, y, horizon=horizon) for name in DOMHAN_FAMILIES}
    y = np.asarray(y, float)
    span = float(np.ptp(y)) or 1.0
    ok = [a for a in each.values() if a.declined is None
          and np.min(y) - 10 * span <= a.final <= np.max(y) + 10 * span]
    if not ok:
        return _declined("domhan_mean", "no family converged"), each
    nan = float("nan")
    return AnchorForecast("domhan_mean", float(np.mean([a.plateau for a in ok])),
                          float(np.mean([a.final for a in ok])), nan, nan), each
