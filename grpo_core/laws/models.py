"""The reward-curve laws: named parametric curves R(t; theta) with bounds and starting guesses.

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

Also here: the oscillator ratios a three-phase fit implies (:func:`oscillator_quantities`) and
the time a law with given parameters takes to cover a fraction of its way to the plateau.

References
----------
Our derivation, book chapter "From update rule to oscillator" (the three-phase law) and chapter
"Fitting real reward curves" (fits, criteria and forecasts on real runs).
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np
from scipy import optimize

from ..errors import ParameterError
from ..model import oscillator
from ..validation import check_array, check_choice, check_flag, check_real


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


def _level_rate_starts(t: np.ndarray, y: np.ndarray, build) -> list[np.ndarray]:
    """Six starts: a plateau at or 50% beyond the end level (``far`` = 0, 0.5), each with the rate
    heuristic times 1, 0.3 and 3 (``mult``); ``build(y0, r_inf, mult, far, half_time, span)`` returns
    the parameter vector."""
    y0, y1, _, span, _ = _level_scales(t, y)
    th = _half_time(t, y, y0, y1)
    return [
        np.array(build(y0, y1 + far * (y1 - y0), mult, far, th, span)) for far in (0.0, 0.5) for mult in (1.0, 0.3, 3.0)
    ]


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
        self.onset = check_flag("onset", onset)
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
        return _level_rate_starts(t, y, lambda y0, r_inf, mult, far, th, span: [y0, r_inf, mult * math.log(2.0) / th])


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
        return _level_rate_starts(
            t, y, lambda y0, r_inf, mult, far, th, span: [y0, r_inf, mult * 8.0 / span, th + far * th]
        )


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
