"""Reward-curve laws, least-squares fits, model comparison and plateau forecasts.

Three laws describe how a GRPO reward curve R(t) (t in optimizer steps, counted from the start of
training, where the policy is at rest) rises from R_0 to a plateau R_inf:

``three_phase`` (inertial law, our derivation, book chapters "From update rule to oscillator" and
"Fitting real reward curves")
    The step response of the damped oscillator ``M e'' + C e' + K e = 0`` from rest,

        R(t) = R_inf - (R_inf - R_0) * relaxation(t; M, C, K).

    The normalised response depends on two ratios only, so the law is written with two
    identifiable time scales: the rate ``k = K / C`` (per step; the relaxation rate in the
    overdamped limit) and the inertial time ``tau = M / C`` (steps; how long the slow start
    lasts). It has zero initial slope (slow start), an inflection (rapid rise) and the plateau.
    Damping ratio ``zeta = C / (2 sqrt(M K)) = 1 / (2 sqrt(k tau))``: overdamped for
    ``k tau < 1/4``, underdamped (overshoot) above.
``exponential`` (single exponential)
    ``R(t) = R_inf - (R_inf - R_0) exp(-k t)``: the ``M -> 0`` (``tau -> 0``) limit of the
    three-phase law, which it nests exactly.
``logistic``
    ``R(t) = R_low + (R_inf - R_low) / (1 + exp(-r (t - t_mid)))``: the usual empirical sigmoid,
    the solution of ``R' = r (R - R_low)(R_inf - R) / (R_inf - R_low)``: nonlinear saturation
    with a symmetric knee, which a linear model cannot produce.

A fourth law, ``three_phase_onset``, adds an onset shift ``t0`` (at rest until ``t0``, then the
three-phase response); a learning-rate warm-up is the usual reason for one. It is not part of
the default comparison: use it when the information criteria say the extra parameter pays.

Every fit (:func:`fit_law`) is a bounded nonlinear least-squares problem solved with
:func:`scipy.optimize.least_squares` from several starting points; it reports standard errors
from the Jacobian, R^2, AIC, AICc and BIC under a Gaussian likelihood, and the residuals' spread
and lag-1 autocorrelation. :func:`fit_all` fits every law and names the best one;
:func:`forecast` fits the first part of a curve and forecasts the plateau with an uncertainty band.

References
----------
Our derivation, book chapter "From update rule to oscillator" (the three-phase law) and chapter
"Fitting real reward curves" (fits, criteria and forecasts on real runs).
Akaike (1974), "A new look at the statistical model identification"; Hurvich & Tsai (1989)
(AICc); Schwarz (1978) (BIC); Kuensch (1989) (moving-block bootstrap).
"""

from __future__ import annotations

import abc
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, stats

from .._json import json_ready
from ..errors import DataError, ParameterError
from ..model import oscillator
from ..validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "Law",
    "ThreePhaseLaw",
    "ExponentialLaw",
    "LogisticLaw",
    "LAWS",
    "DEFAULT_LAWS",
    "MIN_POINTS",
    "get_law",
    "FitResult",
    "FitComparison",
    "Forecast",
    "fit_law",
    "fit_all",
    "forecast",
    "forecast_sweep",
    "forecast_coverage",
    "rolling_mean",
    "noise_variance",
    "gaussian_information_criteria",
    "oscillator_quantities",
    "plateau_outside_unit_interval",
]

#: Fewest usable (finite) points a fit accepts.
MIN_POINTS = 5
#: Laws compared by :func:`fit_all` unless told otherwise.
DEFAULT_LAWS = ("three_phase", "exponential", "logistic")
CRITERIA = ("aic", "aicc", "bic")
# Curves longer than this are searched on an even subsample first (all starts), then polished.
_SEARCH_POINTS = 2000
BAND_METHODS = ("bootstrap", "delta")


# ---------------------------------------------------------------------------------------------
# Laws
# ---------------------------------------------------------------------------------------------


class Law(abc.ABC):
    """A reward-curve law: a named parametric curve R(t; theta) with bounds and starting guesses.

    Subclasses define :meth:`evaluate`, :meth:`bounds` and :meth:`initial_guesses`. The attributes
    document the law for readers and for the command line.

    Attributes
    ----------
    name : str
        Registry key (``"three_phase"``).
    title : str
        Human-readable name.
    param_names : tuple of str
        Names of the parameters, in the order :meth:`evaluate` takes them.
    param_units : tuple of str
        Units of each parameter ("reward", "per step", "steps").
    formula : str
        The law in LaTeX.
    description : str
        Where the law comes from and what its parameters mean.

    Examples
    --------
    >>> law = LAWS["exponential"]
    >>> law.param_names, law.n_params
    (('r0', 'r_inf', 'k'), 3)
    >>> [round(float(v), 4) for v in law([0.0, 10.0], {"r0": 0.0, "r_inf": 1.0, "k": 0.1})]
    [0.0, 0.6321]
    """

    name: str = ""
    title: str = ""
    param_names: tuple[str, ...] = ()
    param_units: tuple[str, ...] = ()
    formula: str = ""
    description: str = ""

    @property
    def n_params(self) -> int:
        """Number of parameters of the law (the noise variance is not counted)."""
        return len(self.param_names)

    @abc.abstractmethod
    def evaluate(self, t: np.ndarray, params: np.ndarray) -> np.ndarray:
        """Value of the law at times ``t`` (steps, shape (n,)) for ``params``.

        ``params`` has shape (n_params,) or (..., n_params) (a batch of parameter vectors); the
        result has shape (n,) or (..., n). No validation (internal, called in the fit loop).
        """

    def __call__(self, t, params) -> np.ndarray:
        """Evaluate the law; ``params`` may be a sequence or a ``{name: value}`` mapping."""
        if isinstance(params, dict):
            missing = [p for p in self.param_names if p not in params]
            if missing:
                raise ParameterError("params", f"`params` lacks {missing} for law {self.name!r}")
            params = [params[p] for p in self.param_names]
        p = check_array("params", params)
        if p.shape != (self.n_params,):
            raise ParameterError(
                "params", f"`params` must have {self.n_params} values {self.param_names}; got shape {p.shape}"
            )
        return self.evaluate(check_array("t", t, ndim=(0, 1)), p)

    @abc.abstractmethod
    def bounds(self, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of the parameters for data ``(t, y)``, each shape (n_params,).

        Parameters
        ----------
        t : ndarray, shape (n,)
            Steps, strictly increasing, >= 0 (as validated by :func:`fit_law`; not checked here).
        y : ndarray, shape (n,)
            Rewards at ``t``, finite.

        Returns
        -------
        lower, upper : ndarray, shape (n_params,)
            In :attr:`param_names` order, in :attr:`param_units`. The laws here bound reward
            levels by ten data ranges beyond ``[min(y), max(y)]``, rates (per step) by
            ``[1e-4 / span, 10 / dt]`` (``span`` = last step, ``dt`` = smallest spacing), ``tau``
            by ``[0, max_tau_spans * span]``; the onset ``t0`` lies in ``[0, t[-1]]`` and the
            logistic's ``t_mid`` in ``[-span, t[-1] + 4 span]`` (steps).

        References
        ----------
        Our choice (heuristic bounds), book chapter "Fitting real reward curves".
        """

    @abc.abstractmethod
    def initial_guesses(self, t: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
        """Starting points for the least-squares fit (the first one is the heuristic's best).

        Parameters
        ----------
        t : ndarray, shape (n,)
            Steps, strictly increasing (not checked here).
        y : ndarray, shape (n,)
            Rewards at ``t``, finite.

        Returns
        -------
        list of ndarray, each shape (n_params,)
            In :attr:`param_names` order. The laws here give six starts, built from the start and
            end levels (means of the first 5% and last 10% of the points, at least 3), the time the
            10%-smoothed curve first passes halfway, and a plateau at or 50% beyond the end level
            (for curves that have not levelled off). Not clipped to :meth:`bounds`.

        References
        ----------
        Our choice (heuristic starts), book chapter "Fitting real reward curves".
        """

    def plateau(self, params: np.ndarray) -> float:
        """The law's limit as t -> infinity (``r_inf`` for every law here).

        Parameters
        ----------
        params : array_like, shape (n_params,)
            Parameter values in :attr:`param_names` order.

        Returns
        -------
        float
            The plateau, in reward units.

        Raises
        ------
        ValueError
            If the law has no parameter named ``r_inf`` (a subclass must then override this).
        """
        return float(params[self.param_names.index("r_inf")])

    def __repr__(self) -> str:
        return f"<Law {self.name}: {', '.join(self.param_names)}>"


def _level_scales(t: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, float]:
    """Start level, end level, reward range, time span, smallest step of a curve."""
    n = y.size
    head = max(3, n // 20)
    tail = max(3, n // 10)
    y0 = float(np.mean(y[:head]))
    y1 = float(np.mean(y[-tail:]))
    yr = float(np.ptp(y))
    span = float(t[-1])
    dt = float(np.min(np.diff(t))) if n > 1 else 1.0
    return y0, y1, yr, max(span, dt), dt


def _half_time(t: np.ndarray, y: np.ndarray, y0: float, y1: float) -> float:
    """First time the curve, smoothed over a tenth of its points, passes halfway from ``y0`` to
    ``y1`` (a rate heuristic robust to single noisy points)."""
    mid = 0.5 * (y0 + y1)
    w = max(1, y.size // 10)
    c = np.concatenate([[0.0], np.cumsum(np.pad(y, (w // 2, w - 1 - w // 2), mode="edge"))])
    smooth = (c[w:] - c[:-w]) / w
    passed = (smooth - mid) * np.sign(y1 - y0 or 1.0) >= 0
    idx = int(np.argmax(passed)) if passed.any() else y.size - 1
    return float(max(t[idx], t[0], 1e-12))


def _level_bounds(y: np.ndarray) -> tuple[float, float]:
    """Bounds for reward levels: ten ranges beyond the data on either side."""
    yr = float(np.ptp(y))
    return float(np.min(y) - 10 * yr), float(np.max(y) + 10 * yr)


class ThreePhaseLaw(Law):
    """The three-phase (inertial) law: the damped oscillator's step response from rest.

    ``R(t) = R_inf - (R_inf - R_0) * relaxation(t - t0; M = tau, C = 1, K = k)`` with
    :func:`grpo_core.model.oscillator.relaxation` (zero initial slope, every damping regime), and
    ``R(t) = R_0`` before the onset ``t0`` (only when ``onset=True``; else ``t0 = 0``).

    Parameters
    ----------
    onset : bool
        Add the onset shift ``t0`` (steps, >= 0) as a fifth parameter.
    max_tau_spans : float
        Upper bound of ``tau`` in units of the data's time span (default 4): beyond it the curve
        seen in the data is a fraction of a barely damped oscillation, and tau is not identified.

    Notes
    -----
    Only the ratios of the oscillator coefficients are identified by a curve; with C = 1 the
    parameters are ``k = K / C`` (per step) and ``tau = M / C`` (steps).
    :func:`oscillator_quantities` maps them back to ``M/K``, ``C/K``, ``K/M``, ``C/M``, the natural
    frequency and the damping ratio. ``tau = 0`` is exactly the single exponential.
    """

    def __init__(self, onset: bool = False, max_tau_spans: float = 4.0):
        self.onset = bool(onset)
        self.max_tau_spans = check_real("max_tau_spans", max_tau_spans, low=0.0, low_inclusive=False)
        self.name = "three_phase_onset" if self.onset else "three_phase"
        self.title = "three-phase (inertial), with onset" if self.onset else "three-phase (inertial)"
        names = ("r0", "r_inf", "k", "tau")
        units = ("reward", "reward", "per step", "steps")
        self.param_names = names + (("t0",) if self.onset else ())
        self.param_units = units + (("steps",) if self.onset else ())
        shift = "t - t_0" if self.onset else "t"
        self.formula = (
            rf"R(t) = R_\infty - (R_\infty - R_0)\,\rho({shift}),\quad "
            r"\tau \rho'' + \rho' + k \rho = 0,\ \rho(0) = 1,\ \rho'(0) = 0"
        )
        self.description = (
            "Step response from rest of M e'' + C e' + K e = 0 (the mean-field GRPO oscillator); "
            "k = K/C is the relaxation rate, tau = M/C the inertial time of the slow start"
            + ("; t0 delays the start (learning-rate warm-up)." if self.onset else ".")
        )

    def evaluate(self, t: np.ndarray, params: np.ndarray) -> np.ndarray:
        r0, r_inf, k, tau = (params[..., i, None] for i in range(4))
        s = t - params[..., 4, None] if self.onset else t
        # M = tau, C = 1, K = k; at rest (value r0) for s <= 0; tau = 0 is the exponential.
        return oscillator.reward_curve(s, r0, r_inf, tau, 1.0, k)

    def bounds(self, t, y):
        lo, hi = _level_bounds(y)
        _, _, _, span, dt = _level_scales(t, y)
        lb = [lo, lo, 1e-4 / span, 0.0]
        ub = [hi, hi, 10.0 / dt, self.max_tau_spans * span]
        if self.onset:
            lb.append(0.0)
            ub.append(float(t[-1]))
        return np.array(lb), np.array(ub)

    def initial_guesses(self, t, y):
        y0, y1, yr, span, _ = _level_scales(t, y)
        th = _half_time(t, y, y0, y1)
        guesses = []
        for far in (0.0, 0.5):  # the plateau may lie beyond the data (a partial curve)
            r_inf = y1 + far * (y1 - y0)
            for tau_frac in (0.5, 0.15, 1.5):
                tau = tau_frac * th
                k = math.log(2.0) / max(th - tau, 0.3 * th)
                p = [y0, r_inf, k, tau]
                if self.onset:
                    p.append(0.3 * th)
                guesses.append(np.array(p))
        return guesses


class ExponentialLaw(Law):
    """Single exponential saturation, the overdamped (``M -> 0``) limit of the three-phase law.

    ``R(t) = R_inf - (R_inf - R_0) exp(-k t)`` with ``k = K / C`` per step.
    """

    name = "exponential"
    title = "single exponential"
    param_names = ("r0", "r_inf", "k")
    param_units = ("reward", "reward", "per step")
    formula = r"R(t) = R_\infty - (R_\infty - R_0)\,e^{-k t}"
    description = "Overdamped (M -> 0) limit of the oscillator: first-order relaxation at rate k = K/C."

    def evaluate(self, t, params):
        r0, r_inf, k = (params[..., i, None] for i in range(3))
        return r_inf - (r_inf - r0) * np.exp(-k * np.maximum(t, 0.0))

    def bounds(self, t, y):
        lo, hi = _level_bounds(y)
        _, _, _, span, dt = _level_scales(t, y)
        return np.array([lo, lo, 1e-4 / span]), np.array([hi, hi, 10.0 / dt])

    def initial_guesses(self, t, y):
        y0, y1, _, _, _ = _level_scales(t, y)
        th = _half_time(t, y, y0, y1)
        out = []
        for far in (0.0, 0.5):
            for mult in (1.0, 0.3, 3.0):
                out.append(np.array([y0, y1 + far * (y1 - y0), mult * math.log(2.0) / th]))
        return out


class LogisticLaw(Law):
    """The logistic (sigmoid) law, the usual empirical alternative.

    ``R(t) = R_low + (R_inf - R_low) / (1 + exp(-r (t - t_mid)))``; ``R_low`` is the lower
    asymptote (not R(0)), ``r`` the growth rate per step, ``t_mid`` the step of the inflection.
    """

    name = "logistic"
    title = "logistic"
    param_names = ("r_low", "r_inf", "rate", "t_mid")
    param_units = ("reward", "reward", "per step", "steps")
    formula = r"R(t) = R_{\mathrm{low}} + \frac{R_\infty - R_{\mathrm{low}}}{1 + e^{-r (t - t_{\mathrm{mid}})}}"
    description = (
        "Empirical sigmoid; solves R' = r (R - R_low)(R_inf - R)/(R_inf - R_low), a nonlinear "
        "saturation with a knee symmetric about t_mid."
    )

    def evaluate(self, t, params):
        r_low, r_inf, rate, t_mid = (params[..., i, None] for i in range(4))
        return r_low + (r_inf - r_low) * _expit(rate * (t - t_mid))

    def bounds(self, t, y):
        lo, hi = _level_bounds(y)
        _, _, _, span, dt = _level_scales(t, y)
        return np.array([lo, lo, 1e-4 / span, -span]), np.array([hi, hi, 10.0 / dt, float(t[-1]) + 4 * span])

    def initial_guesses(self, t, y):
        y0, y1, _, span, _ = _level_scales(t, y)
        th = _half_time(t, y, y0, y1)
        out = []
        for far in (0.0, 0.5):
            for mult in (1.0, 0.3, 3.0):
                out.append(np.array([y0, y1 + far * (y1 - y0), mult * 8.0 / span, th + far * th]))
        return out


def _expit(x: np.ndarray) -> np.ndarray:
    """Logistic sigmoid without overflow warnings."""
    from scipy.special import expit

    return expit(x)


#: Every law by name.
LAWS: dict[str, Law] = {
    law.name: law for law in (ThreePhaseLaw(), ThreePhaseLaw(onset=True), ExponentialLaw(), LogisticLaw())
}


def get_law(law: str | Law) -> Law:
    """The law object for a name (``"three_phase"``, ``"three_phase_onset"``, ``"exponential"``,
    ``"logistic"``), or the law itself.

    Parameters
    ----------
    law : str or Law
        A key of :data:`LAWS`, or a :class:`Law` instance (returned unchanged).

    Returns
    -------
    Law
        The registry's instance (shared, not a copy) or ``law`` itself.

    Raises
    ------
    ParameterError
        If the name is unknown (the message lists the known ones).

    Examples
    --------
    >>> get_law("three_phase").param_names
    ('r0', 'r_inf', 'k', 'tau')
    """
    if isinstance(law, Law):
        return law
    return LAWS[check_choice("law", law, tuple(LAWS))]


# ---------------------------------------------------------------------------------------------
# Oscillator quantities of a three-phase fit
# ---------------------------------------------------------------------------------------------


def oscillator_quantities(k: float, tau: float) -> dict[str, Any]:
    """The oscillator ratios implied by the three-phase law's ``k = K/C`` and ``tau = M/C``.

    A curve fixes the oscillator ``M e'' + C e' + K e = 0`` only up to a common factor, so these are
    the identifiable combinations.

    Parameters
    ----------
    k : float, > 0
        Relaxation rate ``K / C`` (per optimizer step).
    tau : float, >= 0
        Inertial time ``M / C`` (optimizer steps).

    Returns
    -------
    dict
        ``stiffness_over_damping`` (K/C, per step), ``mass_over_damping`` (M/C, steps),
        ``mass_over_stiffness`` (M/K, steps^2), ``stiffness_over_mass`` (K/M, per step^2),
        ``damping_over_mass`` (C/M, per step), ``natural_frequency`` (sqrt(K/M), radians per
        step), ``damping_ratio`` (zeta = C / (2 sqrt(M K)) = 1 / (2 sqrt(k tau))),
        ``regime`` (``"overdamped"``, ``"critically_damped"`` within 1e-6, ``"underdamped"``),
        ``period`` (steps, ``2 pi / omega_d`` when underdamped, else ``inf``).
        With ``tau = 0`` (the exponential limit) the ratios over M are ``inf`` and zeta is ``inf``.

    Raises
    ------
    ParameterError
        If ``k <= 0`` or ``tau < 0`` or either is not finite.

    References
    ----------
    Our derivation, book chapter "From update rule to oscillator".

    Examples
    --------
    >>> q = oscillator_quantities(0.05, 5.0)
    >>> round(q["damping_ratio"], 4), q["regime"]
    (1.0, 'critically_damped')
    """
    k = check_real("k", k, low=0.0, low_inclusive=False)
    tau = check_real("tau", tau, low=0.0)
    inf = math.inf
    zeta = inf if tau == 0 else 1.0 / (2.0 * math.sqrt(k * tau))
    if abs(zeta - 1.0) <= 1e-6:
        regime = "critically_damped"
    elif zeta > 1.0:
        regime = "overdamped"
    else:
        regime = "underdamped"
    if regime == "underdamped":
        omega_d = math.sqrt(k / tau - 1.0 / (4.0 * tau * tau))
        period = 2.0 * math.pi / omega_d
    else:
        period = inf
    return {
        "stiffness_over_damping": k,
        "mass_over_damping": tau,
        "mass_over_stiffness": tau / k,
        "stiffness_over_mass": inf if tau == 0 else k / tau,
        "damping_over_mass": inf if tau == 0 else 1.0 / tau,
        "natural_frequency": inf if tau == 0 else math.sqrt(k / tau),
        "damping_ratio": zeta,
        "regime": regime,
        "period": period,
    }


# ---------------------------------------------------------------------------------------------
# Data preparation and statistics
# ---------------------------------------------------------------------------------------------


def _prepare(t, y, *, min_points: int = MIN_POINTS) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a curve: 1-D, same length, finite (non-finite rows dropped with a warning),
    strictly increasing non-negative t, at least ``min_points`` points, not constant."""
    arrays = []
    for name, v in (("t", t), ("y", y)):
        try:
            a = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError(name, f"`{name}` must be a 1-D array of numbers; got {type(v).__name__}") from None
        if a.ndim != 1:
            raise ParameterError(name, f"`{name}` must be a 1-D array; got shape {a.shape}")
        arrays.append(a)
    t_arr, y_arr = arrays
    if t_arr.size != y_arr.size:
        raise ParameterError(
            "y", f"`y` must have the same length as `t`; got {y_arr.size} values of `y` and {t_arr.size} of `t`"
        )
    ok = np.isfinite(t_arr) & np.isfinite(y_arr)
    dropped = int(ok.size - np.count_nonzero(ok))
    if dropped:
        warnings.warn(
            f"dropped {dropped} of {ok.size} point(s) with NaN or infinite `t` or `y`",
            UserWarning,
            stacklevel=3,
        )
        t_arr, y_arr = t_arr[ok], y_arr[ok]
    if y_arr.size < min_points:
        raise DataError(
            f"`y` needs at least {min_points} usable points (finite `t` and `y`); got {y_arr.size}"
            + (f" after dropping {dropped} non-finite" if dropped else "")
        )
    steps = np.diff(t_arr)
    if np.any(steps <= 0):
        i = int(np.argmax(steps <= 0))
        raise ParameterError(
            "t", f"`t` must be strictly increasing; t[{i + 1}] = {t_arr[i + 1]!r} follows t[{i}] = {t_arr[i]!r}"
        )
    if t_arr[0] < 0:
        raise ParameterError("t", f"`t` must be >= 0 (steps since the start of training); got {t_arr[0]!r}")
    scale = float(np.max(np.abs(y_arr)))
    if scale > 1e100 or 0 < scale < 1e-100:
        # sums of squares would overflow or underflow float64: no fit means anything there
        raise DataError(f"`y` values reach {scale:.3g}, {'too large' if scale > 1 else 'too small'} to fit in "
                        "floating point (|y| must lie within 1e-100 .. 1e100); rescale the metric")
    if np.ptp(y_arr) <= 1e-12 * scale:
        raise DataError(f"`y` is constant (every value is {y_arr[0]!r}); a reward law needs a curve that changes")
    return t_arr, y_arr, dropped


def gaussian_information_criteria(rss: float, n: int, n_params: int) -> dict[str, float]:
    """Log-likelihood, AIC, AICc and BIC of a least-squares fit under Gaussian noise.

    With i.i.d. N(0, sigma^2) errors and sigma^2 at its maximum-likelihood value ``RSS / n``,

        log L = -n/2 * (log(2 pi RSS / n) + 1),
        AIC  = 2 q - 2 log L,     q = n_params + 1 (the noise variance counts),
        AICc = AIC + 2 q (q + 1) / (n - q - 1)       (inf when n <= q + 1),
        BIC  = q log(n) - 2 log L.

    Parameters
    ----------
    rss : float, >= 0
        Residual sum of squares (reward^2). A perfect fit (``rss = 0``) is floored at 1e-300 so
        the criteria stay finite (and very negative).
    n : int, >= 1
        Number of points.
    n_params : int, >= 0
        Number of fitted parameters of the law (without the noise variance).

    Returns
    -------
    dict
        ``loglik``, ``aic``, ``aicc``, ``bic`` (floats).

    Raises
    ------
    ParameterError
        If ``rss < 0`` or not finite, or ``n`` / ``n_params`` out of range.

    References
    ----------
    Akaike (1974); Hurvich & Tsai (1989), eq. (3) (AICc); Schwarz (1978).

    Examples
    --------
    >>> ic = gaussian_information_criteria(rss=2.0, n=100, n_params=3)
    >>> round(ic["aic"] - ic["bic"], 6) == round(2 * 4 - 4 * math.log(100), 6)
    True
    """
    rss = check_real("rss", rss, low=0.0)
    n = check_integer("n", n, low=1)
    n_params = check_integer("n_params", n_params, low=0)
    q = n_params + 1
    loglik = -0.5 * n * (math.log(2.0 * math.pi * max(rss, 1e-300) / n) + 1.0)
    aic = 2.0 * q - 2.0 * loglik
    aicc = aic + (2.0 * q * (q + 1) / (n - q - 1) if n > q + 1 else math.inf)
    bic = q * math.log(n) - 2.0 * loglik
    return {"loglik": loglik, "aic": aic, "aicc": aicc, "bic": bic}


def noise_variance(y) -> float:
    """Noise variance of a curve estimated from successive differences (Rice's estimator).

    ``sigma^2 = sum (y[i+1] - y[i])^2 / (2 (n - 1))``: unbiased for white noise around a smooth
    trend whose step-to-step change is small against the noise. It gives the best R^2 any law can
    reach on the curve, ``1 - sigma^2 / Var(y)`` (the noise ceiling). On a smoothed curve (correlated
    noise) it underestimates the noise.

    Parameters
    ----------
    y : array_like, shape (n,)
        Curve values on an (approximately) even grid, n >= 2; NaN/inf are refused.

    Returns
    -------
    float
        Estimated noise variance (reward^2).

    Raises
    ------
    ParameterError
        If ``y`` is not 1-D, has fewer than 2 values, or holds NaN/inf.

    References
    ----------
    Rice (1984), "Bandwidth choice for nonparametric regression", Ann. Statist. 12, eq. (4).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = np.linspace(0, 1, 10_000) + rng.normal(0, 0.1, 10_000)
    >>> round(noise_variance(y) / 0.01, 1)
    1.0
    """
    arr = check_array("y", y, ndim=1, min_size=2)
    d = np.diff(arr)
    return float(np.sum(d * d) / (2.0 * d.size))


def rolling_mean(t, y, window: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Centred rolling mean of a curve, keeping only the points with a full window.

    Point i of the result is the mean of ``y[i - window//2 : i - window//2 + window]`` (for an
    even window the centre lies half a step late, as in pandas' ``rolling(window,
    center=True).mean()``, which this reproduces exactly on its non-NaN rows).

    Parameters
    ----------
    t : array_like, shape (n,)
        Steps (returned for the kept points).
    y : array_like, shape (n,)
        Values to smooth; must be finite (drop NaN rows first).
    window : int, 1 <= window <= n
        Window length in points (20 for the book's smoothed Qwen curve).

    Returns
    -------
    t_smooth, y_smooth : ndarray, shape (n - window + 1,)

    Raises
    ------
    ParameterError
        If the arrays differ in length, hold NaN/inf, or ``window`` is out of range.

    Notes
    -----
    Smoothing makes the residuals of a later fit strongly autocorrelated (over about ``window``
    points), so R^2 rises but AIC/BIC differences and Jacobian standard errors on a smoothed curve
    are overconfident: compare laws on the raw curve.

    Examples
    --------
    >>> rolling_mean([1, 2, 3, 4, 5], [0.0, 1.0, 2.0, 3.0, 4.0], window=3)
    (array([2., 3., 4.]), array([1., 2., 3.]))
    """
    t_arr = check_array("t", t, ndim=1)
    y_arr = check_array("y", y, ndim=1)
    if t_arr.size != y_arr.size:
        raise ParameterError("y", f"`y` must have the same length as `t`; got {y_arr.size} and {t_arr.size}")
    w = check_integer("window", window, low=1, high=max(1, y_arr.size))
    c = np.concatenate([[0.0], np.cumsum(y_arr)])
    means = (c[w:] - c[:-w]) / w
    start = w // 2
    return t_arr[start : start + means.size].copy(), means


def _lag1_autocorrelation(r: np.ndarray) -> float:
    d = r - r.mean()
    den = float(np.dot(d, d))
    return float(np.dot(d[:-1], d[1:]) / den) if den > 0 else 0.0


# ---------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------



@dataclass(frozen=True)
class FitResult:
    """One law fitted to one curve by least squares.

    Attributes
    ----------
    law : str
        Name of the law.
    params : dict of str to float
        Best-fit parameters (units: see the law's ``param_units``).
    stderr : dict of str to float
        Standard errors from the Jacobian, ``sqrt(diag(s^2 (J^T J)^-1))`` with
        ``s^2 = RSS / (n - p)``; ``inf`` for a parameter the data do not identify (a flat
        direction of the cost). Parameters at a bound (``at_bound``) get the unconstrained value,
        which is not a valid interval there.
    cov : ndarray, shape (p, p)
        The covariance matrix behind ``stderr`` (``inf`` rows/columns for unidentified directions).
    at_bound : tuple of str
        Parameters that ended on (within 1e-6 relative of) one of their bounds.
    n : int
        Number of points fitted.
    rss, r2, aic, aicc, bic, loglik : float
        Residual sum of squares, coefficient of determination ``1 - RSS / TSS``, and the Gaussian
        criteria of :func:`gaussian_information_criteria`.
    sigma : float
        Residual standard deviation ``sqrt(RSS / (n - p))`` (reward).
    residual_autocorr : float
        Lag-1 autocorrelation of the residuals (near 0 for white noise; near 1 on smoothed data).
    plateau, plateau_stderr : float
        ``r_inf`` and its standard error.
    t, y, fitted : ndarray, shape (n,)
        The data fitted and the law's values there; ``residuals = y - fitted``.
    success : bool
        Whether the optimiser reported convergence.
    """

    law: str
    params: dict[str, float]
    stderr: dict[str, float]
    cov: np.ndarray = field(repr=False)
    at_bound: tuple[str, ...]
    n: int
    rss: float
    r2: float
    aic: float
    aicc: float
    bic: float
    loglik: float
    sigma: float
    residual_autocorr: float
    plateau: float
    plateau_stderr: float
    t: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    fitted: np.ndarray = field(repr=False)
    success: bool = True

    @property
    def law_object(self) -> Law:
        """The :class:`Law` that was fitted."""
        return get_law(self.law)

    @property
    def residuals(self) -> np.ndarray:
        """``y - fitted``, shape (n,)."""
        return self.y - self.fitted

    @property
    def n_params(self) -> int:
        """Number of law parameters."""
        return len(self.params)

    @property
    def residual_std(self) -> float:
        """Standard deviation of the residuals (ddof = 0)."""
        return float(np.std(self.residuals))

    def param_vector(self) -> np.ndarray:
        """Parameters as an array in the law's order, shape (p,)."""
        return np.array([self.params[p] for p in self.law_object.param_names])

    def predict(self, t) -> np.ndarray:
        """The fitted law at steps ``t`` (array_like, shape (m,)); returns shape (m,)."""
        return self.law_object(np.asarray(t, dtype=float), self.param_vector())

    def confidence_band(self, t, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Delta-method band of the fitted curve (not of new observations) at steps ``t``.

        ``Var R(t) = g^T Cov g`` with ``g = dR(t)/dtheta`` (central differences); the band is
        ``R(t) +- z_{(1+level)/2} sqrt(Var)``.

        Returns
        -------
        low, high : ndarray, shape (m,)

        Raises
        ------
        ParameterError
            If ``level`` is not in (0, 1).
        """
        level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        t = np.asarray(t, dtype=float)
        g = _gradient(self.law_object, t, self.param_vector())
        var = np.einsum("ij,jk,ik->i", g, np.nan_to_num(self.cov, posinf=1e300), g)
        half = stats.norm.ppf(0.5 + level / 2) * np.sqrt(np.maximum(var, 0.0))
        mid = self.predict(t)
        return mid - half, mid + half

    def time_to_fraction(self, fraction: float = 0.9) -> float:
        """Steps until the fitted law first covers ``fraction`` of its way from R(0) to the plateau.

        The first ``t >= 0`` with ``|R_inf - R(t)| <= (1 - fraction) |R_inf - R(0)|`` (an
        underdamped three-phase curve reaches it on its first rise, before any overshoot);
        ``inf`` if the law never gets there. Found by a doubling search and Brent's method.

        Parameters
        ----------
        fraction : float in (0, 1)
            0.9 gives the time to 90% of the plateau.

        Returns
        -------
        float
            Optimizer steps.

        Raises
        ------
        ParameterError
            If ``fraction`` is not in (0, 1).
        """
        return _time_to_fraction(self.law_object, self.param_vector(), fraction)

    @property
    def t90(self) -> float:
        """Time to 90% of the plateau (steps), see :meth:`time_to_fraction`."""
        return self.time_to_fraction(0.9)

    @property
    def oscillator(self) -> dict[str, Any] | None:
        """:func:`oscillator_quantities` of a three-phase fit; ``None`` for other laws."""
        if not self.law.startswith("three_phase"):
            return None
        return oscillator_quantities(self.params["k"], self.params["tau"])

    @property
    def notes(self) -> list[str]:
        """Plain-language warnings about this fit: parameters on a bound, unidentified parameters,
        a plateau the data do not reach."""
        law = self.law_object
        lb, ub = law.bounds(self.t, self.y)
        out = []
        for name in self.at_bound:
            i = law.param_names.index(name)
            side = "upper" if abs(self.params[name] - ub[i]) <= abs(self.params[name] - lb[i]) else "lower"
            if name == "tau" and side == "upper":
                out.append(
                    "tau is at its upper bound: the curve looks like part of a barely damped "
                    "oscillation; r_inf is the centre line it would swing about, not a level the curve reaches"
                )
            elif name == "r_inf":
                out.append(
                    "r_inf is at its bound (ten reward ranges beyond the data): the curve does not "
                    "determine its plateau"
                )
            else:
                out.append(f"{name} is at its {side} bound ({self.params[name]:.4g})")
        weak = [k for k, v in self.stderr.items() if not math.isfinite(v) and k not in self.at_bound]
        if weak:
            out.append(f"not identified by the data (infinite standard error): {', '.join(weak)}")
        if "r_inf" not in self.at_bound and math.isfinite(self.plateau_stderr):
            if self.plateau_stderr > float(np.ptp(self.y)):
                out.append("the plateau's standard error exceeds the curve's range: the plateau is not determined")
        if "r_inf" not in self.at_bound and plateau_outside_unit_interval(self.y, self.plateau):
            out.append(
                f"the plateau {self.plateau:.4g} lies outside [0, 1], where every value of the curve lies: for a "
                "0/1 reward or an accuracy it cannot be reached; the law extrapolates a curve that has not bent over"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (non-finite numbers become ``None``)."""
        osc = self.oscillator
        return {
            "law": self.law,
            "params": {k: json_ready(v) for k, v in self.params.items()},
            "stderr": {k: json_ready(v) for k, v in self.stderr.items()},
            "at_bound": list(self.at_bound),
            "n": self.n,
            "r2": json_ready(self.r2),
            "aic": json_ready(self.aic),
            "aicc": json_ready(self.aicc),
            "bic": json_ready(self.bic),
            "rss": json_ready(self.rss),
            "sigma": json_ready(self.sigma),
            "residual_autocorr": json_ready(self.residual_autocorr),
            "plateau": json_ready(self.plateau),
            "plateau_stderr": json_ready(self.plateau_stderr),
            "t90": json_ready(self.t90),
            "oscillator": None if osc is None else {k: json_ready(v) for k, v in osc.items()},
            "success": bool(self.success),
            "notes": self.notes,
        }


def plateau_outside_unit_interval(y, plateau: float) -> bool:
    """Whether a curve lying in [0, 1] (a 0/1 reward's mean, an accuracy) has a plateau outside it.

    Parameters
    ----------
    y : array_like, shape (n,)
        The curve (non-finite values are ignored).
    plateau : float
        Its fitted plateau.

    Returns
    -------
    bool
        True when every finite value of ``y`` lies in [0, 1] and ``plateau`` does not (by more than
        1e-9): a law that forecasts such a plateau is extrapolating past the largest (or smallest)
        value the metric can take.

    Examples
    --------
    >>> plateau_outside_unit_interval([0.1, 0.5, 0.9], 1.8), plateau_outside_unit_interval([0.1, 0.9], 0.95)
    (True, False)
    >>> plateau_outside_unit_interval([0.5, 1.5, 2.0], 2.4)  # not a [0, 1] metric
    False
    """
    arr = np.asarray(y, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0 or not math.isfinite(plateau) or arr.min() < 0.0 or arr.max() > 1.0:
        return False
    return bool(plateau > 1.0 + 1e-9 or plateau < -1e-9)


def _gradient(law: Law, t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """dR/dtheta at times t by central differences, shape (len(t), p)."""
    g = np.empty((t.size, p.size))
    for j in range(p.size):
        h = 1e-6 * max(abs(p[j]), 1e-3)
        hi, lo = p.copy(), p.copy()
        hi[j] += h
        lo[j] -= h
        g[:, j] = (law.evaluate(t, hi) - law.evaluate(t, lo)) / (2 * h)
    return g


def _time_to_fraction(law: Law, p: np.ndarray, fraction: float) -> float:
    fraction = check_real("fraction", fraction, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    start = float(law.evaluate(np.array([0.0]), p)[0])
    target_gap = (1.0 - fraction) * abs(law.plateau(p) - start)
    if target_gap == 0.0:
        return 0.0
    plateau = law.plateau(p)

    def remaining(s):
        return np.abs(plateau - law.evaluate(np.atleast_1d(np.asarray(s, dtype=float)), p)) - target_gap

    horizon = 1.0
    for _ in range(80):  # doubling search for the first step past the target
        grid = np.linspace(0.0, horizon, 513)
        r = remaining(grid)
        hit = np.flatnonzero(r <= 0)
        if hit.size:
            i = int(hit[0])
            if i == 0:
                return 0.0
            return float(optimize.brentq(lambda s: float(remaining(s)[0]), grid[i - 1], grid[i], xtol=1e-10))
        horizon *= 2.0
    return math.inf


def _covariance(jac: np.ndarray, rss: float, n: int) -> np.ndarray:
    """``s^2 (J^T J)^+`` with inf along directions the Jacobian does not resolve."""
    p = jac.shape[1]
    s2 = rss / max(n - p, 1)
    # Scale columns so that the singular-value cut is about identifiability, not units.
    norms = np.linalg.norm(jac, axis=0)
    norms[norms == 0] = 1.0
    js = jac / norms
    _, sv, vt = np.linalg.svd(js, full_matrices=False)
    keep = sv > sv[0] * 1e-8 if sv.size and sv[0] > 0 else np.zeros_like(sv, dtype=bool)
    inv = (vt[keep].T / sv[keep] ** 2) @ vt[keep]
    cov = s2 * inv / np.outer(norms, norms)
    if not np.all(keep):
        # Parameters with weight on a dropped direction are not identified.
        null = vt[~keep]
        weak = np.any(np.abs(null) > 1e-3, axis=0)
        cov[weak, :] = np.inf
        cov[:, weak] = np.inf
    return cov


def _typical_scales(law: Law, t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Characteristic size of each parameter (reward range, 1/span, span) for the optimiser."""
    span = max(float(t[-1]), float(np.min(np.diff(t))))
    yscale = max(float(np.ptp(y)), 1e-12)
    by_unit = {"reward": yscale, "per step": 1.0 / span, "steps": span}
    return np.array([by_unit[u] for u in law.param_units])


def _fd_jacobian(law: Law, t: np.ndarray, x: np.ndarray, ub: np.ndarray, scales: np.ndarray):
    """Forward-difference Jacobian of the law at ``x`` (shape (..., p)) in ONE batched evaluation.

    Returns ``(f, J)``: the law's values, shape (..., n), and dR/dtheta, shape (..., n, p). Steps
    go towards the inside of the box at an upper bound.
    """
    p = x.shape[-1]
    h = 1.49e-8 * np.maximum(np.abs(x), scales)
    h = np.where(x + h > ub, -h, h)
    pts = np.concatenate([x[..., None, :], x[..., None, :] + np.eye(p) * h[..., None, :]], axis=-2)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        vals = law.evaluate(t, pts)  # (..., p + 1, n)
    f = vals[..., 0, :]
    jac = (vals[..., 1:, :] - f[..., None, :]) / h[..., :, None]
    return f, np.swapaxes(jac, -1, -2)


def _solve(law: Law, t: np.ndarray, y: np.ndarray, starts: list[np.ndarray], lb, ub, tol: float = 1e-8):
    """Best of scipy ``least_squares`` (trf, box bounds) runs from each start; ``None`` if all fail."""
    width = np.maximum(np.abs(ub - lb), 1e-12)
    yscale = max(float(np.ptp(y)), 1e-12)
    x_scale = _typical_scales(law, t, y)
    cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def both(p):
        key = p.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = _fd_jacobian(law, t, p, ub, x_scale)
        return cache[key]

    def fun(p):
        return (both(p)[0] - y) / yscale

    def jac(p):
        return both(p)[1] / yscale

    best = None
    for x0 in starts:
        x0 = np.clip(np.asarray(x0, dtype=float), lb, ub)
        # Keep the start strictly inside the box (least_squares requires it for 'trf').
        x0 = np.where(x0 <= lb, lb + 1e-9 * width, x0)
        x0 = np.where(x0 >= ub, ub - 1e-9 * width, x0)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            res = optimize.least_squares(
                fun,
                x0,
                jac=jac,
                bounds=(lb, ub),
                x_scale=x_scale,
                method="trf",
                max_nfev=400 * len(x0),
                ftol=tol,
                xtol=tol,
                gtol=tol,
            )
        if not np.isfinite(res.cost):
            continue
        if best is None or res.cost < best.cost:
            best = res
    return best


def fit_law(t, y, law: str | Law = "three_phase", *, starts: list | None = None) -> FitResult:
    """Fit one reward-curve law to a curve by bounded nonlinear least squares.

    Minimises ``sum_i (y_i - R(t_i; theta))^2`` with :func:`scipy.optimize.least_squares`
    (trust-region reflective, box bounds of the law) from each of the law's starting points and
    keeps the best.

    Parameters
    ----------
    t : array_like, shape (n,)
        Optimizer steps since the start of training (>= 0, strictly increasing).
    y : array_like, shape (n,)
        The metric at those steps (mean reward per step, or any curve that saturates).
        Points where ``t`` or ``y`` is NaN/inf are dropped with a warning saying how many.
    law : str or Law
        ``"three_phase"`` (default), ``"three_phase_onset"``, ``"exponential"`` or ``"logistic"``.
    starts : list of array_like, optional
        Extra starting points (each shape (p,), finite; clipped into the law's bounds) tried
        before the law's own guesses.

    Returns
    -------
    FitResult

    Raises
    ------
    ParameterError
        ``t``/``y`` not 1-D, different lengths, ``t`` not strictly increasing or negative, an
        unknown law, a start of the wrong length or with NaN/inf (``starts``).
    DataError
        Fewer than 5 usable points, or no more points than the law has parameters; a constant curve.

    Notes
    -----
    Standard errors assume independent Gaussian noise; on smoothed or otherwise autocorrelated
    curves (see ``residual_autocorr``) they are too small.

    References
    ----------
    Our derivation, book chapter "Fitting real reward curves".

    Examples
    --------
    >>> t = np.arange(1, 201)
    >>> y = LAWS["three_phase"](t, [0.0, 1.0, 0.04, 20.0])
    >>> res = fit_law(t, y + np.random.default_rng(0).normal(0, 0.02, t.size))
    >>> round(res.plateau, 2), res.r2 > 0.99
    (1.0, True)
    """
    law_obj = get_law(law)
    t_arr, y_arr, _ = _prepare(t, y)
    extra = []
    for i, start in enumerate(starts or []):
        x0 = check_array(f"starts[{i}]", start, ndim=1)
        if x0.size != law_obj.n_params:
            raise ParameterError(
                "starts", f"`starts[{i}]` must have {law_obj.n_params} values {law_obj.param_names}; got {x0.size}"
            )
        extra.append(x0)
    return _fit_prepared(law_obj, t_arr, y_arr, extra)


def _fit_prepared(law: Law, t: np.ndarray, y: np.ndarray, starts: list | None = None) -> FitResult:
    n, p = y.size, law.n_params
    if n <= p:
        raise DataError(f"`y` needs more points than the {p} parameters of law {law.name!r}; got {n}")
    lb, ub = law.bounds(t, y)
    tries = [np.asarray(s, dtype=float) for s in (starts or [])] + law.initial_guesses(t, y)
    if n > _SEARCH_POINTS:
        # Long curve: search from every start on an even subsample, polish the best on all points.
        sub = np.unique(np.linspace(0, n - 1, _SEARCH_POINTS).round().astype(int))
        coarse = _solve(law, t[sub], y[sub], tries, lb, ub, tol=1e-6)
        tries = [coarse.x] if coarse is not None else tries
    res = _solve(law, t, y, tries, lb, ub)
    if res is None:  # pragma: no cover - every start overflowed; not reachable with finite data
        raise DataError(f"law {law.name!r} could not be evaluated on this curve")
    x = res.x
    fitted = law.evaluate(t, x)
    resid = y - fitted
    rss = float(np.dot(resid, resid))
    tss = float(np.sum((y - y.mean()) ** 2))
    ic = gaussian_information_criteria(rss, n, p)
    jac = res.jac * max(float(np.ptp(y)), 1e-12)
    cov = _covariance(jac, rss, n)
    se = np.sqrt(np.where(np.isfinite(np.diag(cov)), np.maximum(np.diag(cov), 0.0), np.inf))
    width = ub - lb
    at_bound = tuple(
        name
        for name, xi, lo, hi, w in zip(law.param_names, x, lb, ub, width)
        if xi - lo <= 1e-6 * w or hi - xi <= 1e-6 * w
    )
    i_inf = law.param_names.index("r_inf")
    return FitResult(
        law=law.name,
        params={k: float(v) for k, v in zip(law.param_names, x)},
        stderr={k: float(v) for k, v in zip(law.param_names, se)},
        cov=cov,
        at_bound=at_bound,
        n=n,
        rss=rss,
        r2=1.0 - rss / tss,
        aic=ic["aic"],
        aicc=ic["aicc"],
        bic=ic["bic"],
        loglik=ic["loglik"],
        sigma=math.sqrt(rss / (n - p)),
        residual_autocorr=_lag1_autocorrelation(resid),
        plateau=float(x[i_inf]),
        plateau_stderr=float(se[i_inf]),
        t=t,
        y=y,
        fitted=fitted,
        success=bool(res.success),
    )


@dataclass(frozen=True)
class FitComparison:
    """Every law fitted to one curve, and the best one by an information criterion.

    Attributes
    ----------
    results : dict of str to FitResult
        One fit per law, in the order given.
    criterion : {"aic", "aicc", "bic"}
        The criterion that chose ``best``.
    best : str
        Name of the law with the lowest criterion.
    n : int
        Usable points.
    dropped : int
        Points dropped as non-finite.
    noise_r2_ceiling : float
        ``max(0, 1 - noise_variance(y) / Var(y))``: about the best R^2 any smooth law can reach on
        this curve.
    """

    results: dict[str, FitResult]
    criterion: str
    best: str
    n: int
    dropped: int
    noise_r2_ceiling: float

    @property
    def best_fit(self) -> FitResult:
        """The :class:`FitResult` of the best law."""
        return self.results[self.best]

    def delta(self, criterion: str | None = None) -> dict[str, float]:
        """Each law's criterion minus the lowest (0 for the best; > 10: essentially no support).

        Parameters
        ----------
        criterion : {"aic", "aicc", "bic"}, optional
            The criterion to compare (default: :attr:`criterion`, the one that chose ``best``).

        Returns
        -------
        dict of str to float
            Law name -> difference (>= 0, dimensionless), in the order of :attr:`results`.

        Raises
        ------
        ParameterError
            Unknown ``criterion``.

        References
        ----------
        Burnham & Anderson (2002), "Model Selection and Multimodel Inference", section 2.6 (the
        rule of thumb for the differences).
        """
        c = check_choice("criterion", criterion or self.criterion, CRITERIA)
        values = {k: getattr(r, c) for k, r in self.results.items()}
        low = min(values.values())
        return {k: v - low for k, v in values.items()}

    def table(self):
        """One row per law: R^2, AIC, AICc, BIC, their differences, sigma, residual lag-1
        autocorrelation, plateau and its standard error, t90 (a :class:`pandas.DataFrame`)."""
        import pandas as pd

        rows = []
        d = self.delta()
        for name, r in self.results.items():
            rows.append(
                {
                    "law": name,
                    "params": r.n_params,
                    "r2": r.r2,
                    "aic": r.aic,
                    "aicc": r.aicc,
                    "bic": r.bic,
                    f"delta_{self.criterion}": d[name],
                    "sigma": r.sigma,
                    "resid_lag1": r.residual_autocorr,
                    "plateau": r.plateau,
                    "plateau_se": r.plateau_stderr,
                    "t90": r.t90,
                }
            )
        return pd.DataFrame(rows).set_index("law")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: ``models`` (one entry per law), ``best``, ``criterion``, ``n``."""
        return {
            "models": {k: r.to_dict() for k, r in self.results.items()},
            "best": self.best,
            "criterion": self.criterion,
            "n": self.n,
            "dropped": self.dropped,
            "noise_r2_ceiling": json_ready(self.noise_r2_ceiling),
        }


def fit_all(t, y, *, laws=DEFAULT_LAWS, criterion: str = "aic") -> FitComparison:
    """Fit several laws to one curve and pick the best by an information criterion.

    Parameters
    ----------
    t : array_like, shape (n,)
        Optimizer steps (>= 0, strictly increasing).
    y : array_like, shape (n,)
        Metric values; NaN/inf rows are dropped with a warning saying how many.
    laws : sequence of str or Law
        Laws to compare (default: three-phase, exponential, logistic).
    criterion : {"aic", "aicc", "bic"}
        How ``best`` is chosen. Default AIC: the aim is prediction (a plateau forecast), which is
        what AIC estimates (expected out-of-sample log-likelihood); BIC aims at finding a true
        model among the candidates, and none of these laws is literally true for a training run.
        With few points per parameter (n / p < 40, e.g. a 12-row log) prefer ``"aicc"``.

    Returns
    -------
    FitComparison

    Raises
    ------
    ParameterError
        Bad ``t``/``y`` (see :func:`fit_law`), an unknown law or criterion, an empty ``laws``.
    DataError
        Fewer than 5 usable points or a constant curve.

    Notes
    -----
    A law with as many parameters as points is skipped with a warning. The criteria assume
    independent noise: on a smoothed curve their differences are inflated (the residuals are
    correlated over the smoothing window), so compare laws on the raw curve.

    Examples
    --------
    >>> t = np.arange(1, 151)
    >>> y = LAWS["exponential"](t, [0.0, 1.0, 0.03]) + np.random.default_rng(1).normal(0, 0.03, t.size)
    >>> cmp = fit_all(t, y)
    >>> sorted(cmp.results), round(cmp.results["exponential"].plateau, 1)
    (['exponential', 'logistic', 'three_phase'], 1.0)
    """
    criterion = check_choice("criterion", criterion, CRITERIA)
    law_objs = [get_law(law) for law in laws]
    if not law_objs:
        raise ParameterError("laws", "`laws` must name at least one law")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t_arr, y_arr, dropped = _prepare(t, y)
    for w in caught:
        warnings.warn(str(w.message), w.category, stacklevel=2)
    results = {}
    for law in law_objs:
        if y_arr.size <= law.n_params:
            warnings.warn(
                f"skipped law {law.name!r}: {law.n_params} parameters need more than {y_arr.size} points",
                UserWarning,
                stacklevel=2,
            )
            continue
        results[law.name] = _fit_prepared(law, t_arr, y_arr)
    best = min(results, key=lambda k: getattr(results[k], criterion))
    # the difference-based noise estimate can exceed Var(y) on a curve that is all noise (an
    # alternating 0/1 series gives -1): no law explains any of it, so the ceiling is 0
    ceiling = max(0.0, 1.0 - noise_variance(y_arr) / float(np.var(y_arr)))
    return FitComparison(
        results=results, criterion=criterion, best=best, n=int(y_arr.size), dropped=dropped, noise_r2_ceiling=ceiling
    )


# ---------------------------------------------------------------------------------------------
# Forecasting
# ---------------------------------------------------------------------------------------------


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
    >>> y = LAWS["three_phase"](t, [0.0, 1.0, 0.03, 20.0]) + np.random.default_rng(2).normal(0, 0.03, 300)
    >>> fc = forecast(t, y, law="three_phase", fraction=0.4, n_boot=50)
    >>> fc.plateau_low < 1.0 < fc.plateau_high
    True
    """
    fraction = check_real("fraction", fraction, low=0.0, high=1.0, low_inclusive=False)
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    n_boot = check_integer("n_boot", n_boot, low=0)
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
    z = stats.norm.ppf(0.5 + level / 2)
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


def _time_to_fraction_batch(law: Law, params: np.ndarray, fraction: float, span: float) -> np.ndarray:
    """:func:`_time_to_fraction` for many parameter vectors (shape (B, p)) on one shared grid.

    The grid is 0 plus 4,000 geometric points from 1e-3 to 1e4 time spans (0.4% apart); the
    crossing is interpolated linearly. ``inf`` where the law does not get there within the grid.
    """
    grid = np.concatenate([[0.0], np.geomspace(1e-3 * span, 1e4 * span, 4000)])
    vals = law.evaluate(grid, params)  # (B, m)
    start = vals[:, 0]
    plateau = params[:, law.param_names.index("r_inf")]
    gap = np.abs(plateau[:, None] - vals) - (1.0 - fraction) * np.abs(plateau - start)[:, None]
    hit = gap <= 0
    first = np.argmax(hit, axis=1)
    found = hit[np.arange(len(first)), first]
    out = np.full(len(first), np.inf)
    j = first[found]
    rows = np.flatnonzero(found)
    at_zero = j == 0
    jj = np.maximum(j, 1)
    g0, g1 = gap[rows, jj - 1], gap[rows, jj]
    w = np.where(g0 != g1, g0 / np.where(g0 != g1, g0 - g1, 1.0), 0.0)
    t_cross = grid[jj - 1] + w * (grid[jj] - grid[jj - 1])
    out[rows] = np.where(at_zero, 0.0, t_cross)
    return out


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
    >>> y = LAWS["logistic"](t, [0.0, 1.0, 0.08, 60.0]) + np.random.default_rng(3).normal(0, 0.03, 200)
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
