"""Plateau forecasts from the first part of a curve, with delta-method and bootstrap bands.

:func:`forecast` fits the first ``fraction`` of a curve and forecasts its plateau (and the time to
90% of it) with an uncertainty band (:class:`Forecast`); :func:`forecast_sweep` repeats it over
growing fractions and several laws; :func:`forecast_coverage` measures how often the band covers
the truth on synthetic curves.

References
----------
Kuensch (1989), "The jackknife and the bootstrap for general stationary observations"
(moving-block bootstrap); our measurement of coverage, book chapter "Fitting real reward curves".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from .._json import json_ready
from ..errors import DataError, ParameterError
from ..validation import check_array, check_choice, check_integer, check_n_boot, check_real
from .curves import MIN_POINTS, _lag1_autocorrelation, _prepare
from .fit import CRITERIA, FitComparison, FitResult, _fit_prepared, _solve, fit_all
from .models import Law, _time_to_fraction, _time_to_fraction_batch, get_law

BAND_METHODS = ("bootstrap", "delta")


@dataclass(frozen=True)
class Forecast:
    """A plateau forecast from the first part of a curve.

    Attributes
    ----------
    law : str
        The law used (the best on the fit window by ``criterion`` when asked for ``"best"``).
    fit : FitResult
        The fit on the first ``n_fit`` points.
    comparison : FitComparison or None
        All laws on the fit window when the law was chosen as ``"best"``.
    fraction : float
        Fraction of the points used for the fit.
    t_fit_end : float
        Last step of the fit window.
    level : float
        Coverage level of the bands (e.g. 0.9).
    band_method : {"bootstrap", "delta"}
        Which band ``plateau_low``/``plateau_high`` and ``curve_low``/``curve_high`` report.
    plateau : float
        Forecast plateau ``r_inf`` (reward).
    plateau_low, plateau_high : float
        The reported band of the plateau.
    plateau_delta : tuple of float
        Delta-method band ``r_inf +- z se`` (always computed).
    plateau_bootstrap : tuple of float or None
        Percentile band of the residual block bootstrap (``None`` when ``n_boot = 0``).
    t90, t90_low, t90_high : float
        Steps to 90% of the plateau and its band (same method as the plateau band).
    t, curve, curve_low, curve_high : ndarray, shape (m,)
        Forecast curve (the fitted law) over every step of the input, with the band of the mean
        curve.
    actual_t, actual_y : ndarray
        The points after the fit window (empty when the curve was only the window).
    actual_tail_mean : float or None
        Mean of the last ``tail`` points of the whole curve (what "actually happened").
    tail : int
        Points averaged for ``actual_tail_mean``.
    n_boot, block_length : int
        Bootstrap replicates and residual block length.
    """

    law: str
    fit: FitResult
    comparison: FitComparison | None
    fraction: float
    t_fit_end: float
    level: float
    band_method: str
    plateau: float
    plateau_low: float
    plateau_high: float
    plateau_delta: tuple[float, float]
    plateau_bootstrap: tuple[float, float] | None
    t90: float
    t90_low: float
    t90_high: float
    t: np.ndarray = field(repr=False)
    curve: np.ndarray = field(repr=False)
    curve_low: np.ndarray = field(repr=False)
    curve_high: np.ndarray = field(repr=False)
    actual_t: np.ndarray = field(repr=False)
    actual_y: np.ndarray = field(repr=False)
    actual_tail_mean: float | None
    tail: int
    n_boot: int
    block_length: int

    @property
    def covered(self) -> bool | None:
        """Whether the band contains ``actual_tail_mean`` (``None`` without a continuation)."""
        if self.actual_tail_mean is None:
            return None
        return bool(self.plateau_low <= self.actual_tail_mean <= self.plateau_high)

    @property
    def error(self) -> float | None:
        """``plateau - actual_tail_mean`` (reward), or ``None`` without a continuation."""
        return None if self.actual_tail_mean is None else self.plateau - self.actual_tail_mean

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the curves)."""
        j = json_ready
        return {
            "law": self.law,
            "fraction": self.fraction,
            "n_fit": self.fit.n,
            "t_fit_end": j(self.t_fit_end),
            "level": self.level,
            "band_method": self.band_method,
            "plateau": j(self.plateau),
            "plateau_low": j(self.plateau_low),
            "plateau_high": j(self.plateau_high),
            "plateau_delta": [j(v) for v in self.plateau_delta],
            "plateau_bootstrap": None if self.plateau_bootstrap is None else [j(v) for v in self.plateau_bootstrap],
            "t90": j(self.t90),
            "t90_low": j(self.t90_low),
            "t90_high": j(self.t90_high),
            "actual_tail_mean": j(self.actual_tail_mean),
            "tail": self.tail,
            "covered": self.covered,
            "n_boot": self.n_boot,
            "block_length": self.block_length,
        }


def _block_length(resid: np.ndarray) -> int:
    """Residual block length from the lag-1 autocorrelation rho: ceil((1 + rho) / (1 - rho)),
    the AR(1) integrated autocorrelation time (1 for white noise), at most n // 4."""
    rho = min(max(_lag1_autocorrelation(resid), 0.0), 0.99)
    return int(min(max(1, math.ceil((1 + rho) / (1 - rho))), max(1, resid.size // 4)))


def forecast(
    t,
    y,
    *,
    law: str | Law = "best",
    fraction: float = 0.4,
    level: float = 0.9,
    n_boot: int = 200,
    seed: int = 0,
    tail: int = 50,
    criterion: str = "aic",
    horizon: float | None = None,
) -> Forecast:
    """Fit the first part of a reward curve and forecast its plateau with an uncertainty band.

    The first ``fraction`` of the points is fitted (:func:`fit_law`, or :func:`fit_all` when
    ``law="best"``); the plateau forecast is the fitted ``r_inf``. Two bands are computed:

    * **delta method**: ``r_inf +- z se(r_inf)``, with the Jacobian standard error; cheap, but
      symmetric and blind to the law's nonlinearity and to its bounds.
    * **residual block bootstrap** (reported when ``n_boot > 0``): the residuals of the window fit
      are resampled in blocks of ``ceil((1 + rho) / (1 - rho))`` points (rho: their lag-1
      autocorrelation) and added to the fitted curve; the law is refitted ``n_boot`` times; the
      band is the percentile interval of the refitted ``r_inf`` (and of the curve, pointwise).

    Parameters
    ----------
    t : array_like, shape (n,)
        Optimizer steps (>= 0, strictly increasing).
    y : array_like, shape (n,)
        The whole curve; the points after the window are kept as the "actual" continuation.
        NaN/inf rows are dropped with a warning.
    law : str or Law
        Law to forecast with, or ``"best"`` (lowest ``criterion`` on the window).
    fraction : float in (0, 1]
        Fraction of the points used for the fit (first points); at least 5 points.
    level : float in (0, 1)
        Coverage of the bands (0.9: a 90% band).
    n_boot : int, >= 0
        Bootstrap replicates; 0 reports the delta-method band.
    seed : int, >= 0
        Seed of the bootstrap's random generator.
    tail : int, >= 1
        The actual plateau is the mean of the last ``tail`` points of the whole curve.
    criterion : {"aic", "aicc", "bic"}
        Used when ``law="best"``.
    horizon : float, optional
        Last step of the forecast curve (default: the last step of ``t``).

    Returns
    -------
    Forecast

    Raises
    ------
    ParameterError
        Bad ``t``/``y``, ``fraction``, ``level``, ``n_boot``, ``tail``, ``law`` or ``criterion``.
    DataError
        Fewer than 5 points in the fit window, or a constant window.

    Notes
    -----
    A forecast made before the curve's inflection extrapolates a plateau the data barely
    constrain; the bootstrap band then becomes wide (and may reach the law's bounds), which is
    the honest answer. The bootstrap band is the one reported because the delta method's
    symmetric interval is unreliable exactly in that situation.

    References
    ----------
    Kuensch (1989), "The jackknife and the bootstrap for general stationary observations"
    (moving-block bootstrap); our measurement of coverage, book chapter "Fitting real reward curves".

    Examples
    --------
    >>> t = np.arange(1, 301)
    >>> y = get_law("three_phase")(t, [0.0, 1.0, 0.03, 20.0]) + np.random.default_rng(2).normal(0, 0.03, 300)
    >>> fc = forecast(t, y, law="three_phase", fraction=0.4, n_boot=50)
    >>> fc.plateau_low < 1.0 < fc.plateau_high
    True
    """
    fraction = check_real("fraction", fraction, low=0.0, high=1.0, low_inclusive=False)
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    n_boot = check_n_boot("n_boot", n_boot)
    seed = check_integer("seed", seed, low=0)
    tail = check_integer("tail", tail, low=1)
    criterion = check_choice("criterion", criterion, CRITERIA)
    t_all, y_all, _ = _prepare(t, y)
    n_fit = int(math.floor(fraction * t_all.size + 1e-9))
    if n_fit < MIN_POINTS:
        raise DataError(
            f"the fit window (`fraction` = {fraction} of {t_all.size} points) holds {n_fit} points; "
            f"a fit needs at least {MIN_POINTS}"
        )
    t_fit, y_fit = t_all[:n_fit], y_all[:n_fit]
    scale = max(1.0, float(np.max(np.abs(y_fit))))
    if np.ptp(y_fit) <= 1e-12 * scale:
        raise DataError("`y` is constant over the fit window; a reward law needs a curve that changes")
    comparison = None
    if isinstance(law, str) and law == "best":
        comparison = fit_all(t_fit, y_fit, criterion=criterion)
        fit = comparison.best_fit
    else:
        law_obj = get_law(law)
        fit = _fit_prepared(law_obj, t_fit, y_fit)
    law_obj = fit.law_object
    p_hat = fit.param_vector()
    end = float(t_all[-1]) if horizon is None else check_real("horizon", horizon, low=float(t_fit[-1]))
    t_curve = t_all if horizon is None else np.union1d(t_all, np.linspace(t_all[0], end, 400))
    t_curve = t_curve[t_curve <= end]
    curve = law_obj.evaluate(t_curve, p_hat)
    z = special.ndtri(0.5 + level / 2)
    delta_band = (fit.plateau - z * fit.plateau_stderr, fit.plateau + z * fit.plateau_stderr)
    t90 = fit.t90
    boot_band = None
    block = _block_length(fit.residuals)
    if n_boot > 0:
        boot_p, boot_curves, boot_t90 = _bootstrap(law_obj, fit, t_curve, n_boot, seed, block)
        q = [(1 - level) / 2, (1 + level) / 2]
        i_inf = law_obj.param_names.index("r_inf")
        boot_band = tuple(float(v) for v in np.quantile(boot_p[:, i_inf], q))
        lo_curve, hi_curve = np.quantile(boot_curves, q, axis=0)
        t90_lo, t90_hi = (float(v) for v in np.quantile(boot_t90, q))
        method = "bootstrap"
        low, high = boot_band
    else:
        lo_curve, hi_curve = fit.confidence_band(t_curve, level)
        g = _gradient_t90(law_obj, p_hat)
        se_t90 = math.sqrt(max(float(g @ np.nan_to_num(fit.cov, posinf=1e300) @ g), 0.0))
        t90_lo, t90_hi = max(t90 - z * se_t90, 0.0), t90 + z * se_t90
        method = "delta"
        low, high = delta_band
    k_tail = min(tail, t_all.size)
    actual_tail = float(np.mean(y_all[-k_tail:])) if n_fit < t_all.size else None
    return Forecast(
        law=fit.law,
        fit=fit,
        comparison=comparison,
        fraction=fraction,
        t_fit_end=float(t_fit[-1]),
        level=level,
        band_method=method,
        plateau=fit.plateau,
        plateau_low=float(low),
        plateau_high=float(high),
        plateau_delta=(float(delta_band[0]), float(delta_band[1])),
        plateau_bootstrap=boot_band,
        t90=t90,
        t90_low=float(t90_lo),
        t90_high=float(t90_hi),
        t=t_curve,
        curve=curve,
        curve_low=np.asarray(lo_curve),
        curve_high=np.asarray(hi_curve),
        actual_t=t_all[n_fit:],
        actual_y=y_all[n_fit:],
        actual_tail_mean=actual_tail,
        tail=k_tail,
        n_boot=n_boot,
        block_length=block,
    )


def _gradient_t90(law: Law, p: np.ndarray) -> np.ndarray:
    g = np.zeros(p.size)
    for j in range(p.size):
        h = 1e-5 * max(abs(p[j]), 1e-3)
        hi, lo = p.copy(), p.copy()
        hi[j] += h
        lo[j] -= h
        g[j] = (_time_to_fraction(law, hi, 0.9) - _time_to_fraction(law, lo, 0.9)) / (2 * h)
    return g


def _bootstrap(law: Law, fit: FitResult, t_curve: np.ndarray, n_boot: int, seed: int, block: int):
    """Residual moving-block bootstrap: ``n_boot`` resampled curves, each refitted from the
    original optimum with scipy; returns parameters (n_boot, p), curves (n_boot, m), t90s (n_boot,)."""
    rng = np.random.default_rng(seed)
    resid = fit.residuals - fit.residuals.mean()
    n = resid.size
    n_blocks = -(-n // block)
    starts = rng.integers(0, n - block + 1, size=(n_boot, n_blocks))
    idx = (starts[:, :, None] + np.arange(block)[None, None, :]).reshape(n_boot, -1)[:, :n]
    y_boot = fit.fitted[None, :] + resid[idx]
    lb, ub = law.bounds(fit.t, fit.y)
    p_hat = fit.param_vector()
    params = np.empty((n_boot, p_hat.size))
    for b in range(n_boot):
        res = _solve(law, fit.t, y_boot[b], [p_hat], lb, ub)
        params[b] = p_hat if res is None else res.x
    curves = law.evaluate(t_curve, params)
    t90s = _time_to_fraction_batch(law, params, 0.9, span=float(fit.t[-1]))
    return params, curves, t90s


def forecast_sweep(
    t,
    y,
    *,
    fractions=(0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
    laws=("best", "three_phase", "logistic"),
    **kwargs: Any,
):
    """Plateau forecasts from growing fractions of one curve, for several laws.

    Shows when a forecast becomes trustworthy: each row is one :func:`forecast` with the given
    ``fraction`` and ``law``, compared with the same "actual" plateau (the mean of the last
    ``tail`` points of the whole curve).

    Parameters
    ----------
    t, y : array_like, shape (n,)
        The whole curve (see :func:`forecast`).
    fractions : sequence of float in (0, 1)
        Fractions of the points used for the fit.
    laws : sequence of str
        Laws (or ``"best"``) to forecast with.
    **kwargs
        Passed to :func:`forecast` (``level``, ``n_boot``, ``seed``, ``tail``, ``criterion``).

    Returns
    -------
    pandas.DataFrame
        One row per (fraction, law): ``fraction``, ``law`` (as asked), ``fitted_law`` (the law
        chosen for ``"best"``), ``t_fit_end``, ``plateau``, ``low``, ``high`` (reported band),
        ``band_method``, ``actual``, ``error`` (plateau - actual), ``covered`` (bool), ``t90``,
        ``at_bound`` (the window fit's parameters on a bound, comma-separated).

    Raises
    ------
    ParameterError, DataError
        As :func:`forecast`; also an empty ``fractions`` or ``laws``.

    Examples
    --------
    >>> t = np.arange(1, 201)
    >>> y = get_law("logistic")(t, [0.0, 1.0, 0.08, 60.0]) + np.random.default_rng(3).normal(0, 0.03, 200)
    >>> df = forecast_sweep(t, y, fractions=(0.5, 0.7), laws=("logistic",), n_boot=0)
    >>> df["covered"].tolist()
    [True, True]
    """
    import pandas as pd

    fractions = [check_real("fractions", f, low=0.0, high=1.0, low_inclusive=False) for f in fractions]
    laws = list(laws)
    if not fractions:
        raise ParameterError("fractions", "`fractions` must hold at least one fraction")
    if not laws:
        raise ParameterError("laws", "`laws` must name at least one law")
    rows = []
    for frac in fractions:
        for law in laws:
            fc = forecast(t, y, law=law, fraction=frac, **kwargs)
            rows.append(
                {
                    "fraction": frac,
                    "law": law if isinstance(law, str) else law.name,
                    "fitted_law": fc.law,
                    "t_fit_end": fc.t_fit_end,
                    "plateau": fc.plateau,
                    "low": fc.plateau_low,
                    "high": fc.plateau_high,
                    "band_method": fc.band_method,
                    "actual": fc.actual_tail_mean,
                    "error": fc.error,
                    "covered": fc.covered,
                    "t90": fc.t90,
                    "at_bound": ", ".join(fc.fit.at_bound),
                }
            )
    return pd.DataFrame(rows)


def forecast_coverage(
    law: str | Law,
    params,
    t,
    *,
    noise_std: float,
    fraction: float = 0.4,
    level: float = 0.9,
    reps: int = 100,
    n_boot: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """How often the plateau band covers the true plateau, on synthetic noisy curves.

    Draws ``reps`` curves ``law(t; params) + N(0, noise_std^2)`` (independent noise), forecasts
    each from its first ``fraction`` with the same law (:func:`forecast`), and counts how often
    the reported band contains the true ``r_inf``. A calibrated band covers at the rate
    ``level``, up to the binomial error ``sqrt(level (1 - level) / reps)``.

    Parameters
    ----------
    law : str or Law
        The law that generates the curves and is fitted.
    params : array_like, shape (p,) or dict
        True parameters.
    t : array_like, shape (n,)
        Steps of each synthetic curve.
    noise_std : float, > 0
        Standard deviation of the noise (reward units).
    fraction, level, n_boot : see :func:`forecast`
        ``n_boot = 0`` (default) measures the delta-method band; ``> 0`` the bootstrap band
        (slow: ``reps * n_boot`` fits).
    reps : int, >= 1
        Number of synthetic curves.
    seed : int, >= 0
        Seed of the noise (replicate r uses ``seed + r``; the bootstrap too).

    Returns
    -------
    dict
        ``coverage`` (fraction of bands containing the truth), ``binomial_se``, ``reps``,
        ``median_width`` (of the band), ``median_abs_error`` (|forecast - truth|),
        ``band_method``, ``level``, ``truth``.

    Raises
    ------
    ParameterError
        Bad ``law``, ``params``, ``t``, ``noise_std``, ``reps`` or the forecast's parameters.

    References
    ----------
    Our measurement, book chapter "Fitting real reward curves", section "Does the band keep its
    promise?".

    Examples
    --------
    >>> out = forecast_coverage("exponential", [0.0, 1.0, 0.02], np.arange(1, 201), noise_std=0.05, reps=20)
    >>> 0.6 <= out["coverage"] <= 1.0
    True
    """
    law_obj = get_law(law)
    t_arr = check_array("t", t, ndim=1, min_size=MIN_POINTS)
    curve = law_obj(t_arr, params)
    truth = law_obj.plateau(_as_vector(law_obj, params))
    noise_std = check_real("noise_std", noise_std, low=0.0, low_inclusive=False)
    reps = check_integer("reps", reps, low=1)
    seed = check_integer("seed", seed, low=0)
    hits, widths, errors = 0, [], []
    method = "delta"
    for r in range(reps):
        y = curve + np.random.default_rng(seed + r).normal(0.0, noise_std, t_arr.size)
        fc = forecast(t_arr, y, law=law_obj, fraction=fraction, level=level, n_boot=n_boot, seed=seed + r)
        method = fc.band_method
        hits += fc.plateau_low <= truth <= fc.plateau_high
        widths.append(fc.plateau_high - fc.plateau_low)
        errors.append(abs(fc.plateau - truth))
    cov = hits / reps
    return {
        "coverage": cov,
        "binomial_se": math.sqrt(level * (1 - level) / reps),
        "reps": reps,
        "median_width": float(np.median(widths)),
        "median_abs_error": float(np.median(errors)),
        "band_method": method,
        "level": level,
        "truth": truth,
    }


def _as_vector(law: Law, params) -> np.ndarray:
    if isinstance(params, dict):
        return np.array([params[p] for p in law.param_names], dtype=float)
    return np.asarray(params, dtype=float)
