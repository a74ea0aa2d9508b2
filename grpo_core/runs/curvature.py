"""The curvature a run implies: eta*K and K, with an interval, from its fitted time scale.

The oscillator model (book chapter "From update rule to oscillator") writes the mean-field update of
the expected reward, linearised at its fixed point, as

    e[k+1] - e[k] - mu (e[k] - e[k-1]) = -g e[k - d_k],   g = a (heavy ball), g = (1 - mu) a (EMA),

with ``a = eta K`` per step. Its continuous form ``M e'' + C e' + g e = 0`` has ``C = 1 - mu - g d1``
(``d1`` the mean lag), and a reward curve fixes the ratio ``k = g / C`` (the three-phase law's rate,
:mod:`grpo_core.laws`). Inverting (our derivation):

    g = k (1 - mu) / (1 + k d1),   a = g  or  g / (1 - mu),   K = a / eta.

A monotone map, so an interval of ``k`` is an interval of ``a`` and ``K``.

*Schedules.* The model's clock is the cumulative learning rate: the curve is fitted against
``s_t = sum_{j <= t} eta_j / eta_ref`` (equivalent steps at the peak rate ``eta_ref``), so the rate
``k`` is per step at the peak and ``a = eta_ref K`` is the per-step gain where the run was most
exposed. Warm-up and decay are then no longer part of the curve's shape.

*Adam.* With an Adam-family optimizer the step is ``eta / sqrt(v)``: what the log measures is the
product ``eta K_pre`` with ``K_pre = K / sqrt(v)`` the preconditioned curvature; ``K`` itself and
``v`` are not separately identified by a reward curve.

*A time scale, not a stability verdict.* ``a`` says how fast the reward relaxes. It does not say
where training becomes unstable: on the CPU transformer of the book's chapter "GRPO on a language
model" the learning-rate threshold built on the reward curvature ``K`` (measured on the starting model)
was :data:`K_THRESHOLD_TOO_PERMISSIVE` times too permissive, and the ``K`` each run's fitted curve implies
was about an order of magnitude smaller still (a threshold built on it more permissive again), while
the sharpness of the loss (its top Hessian eigenvalue, which a reward curve does not contain) gave a
bound that held, the edge lying :data:`SHARPNESS_EDGE_FACTOR` times above it. So
nothing here compares ``a`` with a threshold; :data:`NO_STABILITY_VERDICT` is what the commands print
in its place, and :data:`ASSUMED_K_CAVEAT` what the plain ``advise`` (a what-if at an assumed ``K``)
says beside its thresholds.

:func:`implied_curvature` works on arrays; :func:`implied_curvature_from_log` on a
:class:`~grpo_core.runs.logs.RunLog` and its :class:`~grpo_core.runs.settings.RunSettings` (the
function a diagnosis can call).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from scipy import special

from ..errors import DataError, ParameterError
from ..laws import Law, fit_law, get_law
from ..laws.clock import learning_rate_clock
from ..validation import check_choice, check_integer, check_real
from .settings import Conventions, RunSettings

__all__ = ["ImpliedCurvature", "LogAdvice", "ModelLaw", "advise_implied", "advise_from_log", "implied_curvature",
           "implied_curvature_from_log", "reason_kind", "gain_from_rate", "INTERVAL_METHODS",
           "FLAT_P_VALUE", "BEND_P_VALUE", "K_THRESHOLD_TOO_PERMISSIVE", "SHARPNESS_EDGE_FACTOR",
           "NO_STABILITY_VERDICT", "ASSUMED_K_CAVEAT"]

INTERVAL_METHODS = ("delta", "bootstrap")

#: ``(low, high)``: how many times too permissive the on-policy learning-rate threshold built on the reward
#: curvature ``K`` (the probe's, measured on the starting model; the ``K`` a fitted curve implies was smaller
#: still) was on the CPU transformer (the measured critical rate over that threshold, inverted,
#: for AdamW and for SGD with heavy ball; book chapter "GRPO on a language model", its committed
#: learning-rate sweep read by :func:`grpo_core.llm.probe_check.lr_sweep_table`), to the unit printed there.
K_THRESHOLD_TOO_PERMISSIVE = (119.0, 169.0)
#: ``(low, high)``: the measured critical learning rate over the sharpness bound on the same transformer,
#: both optimizers (heavy ball: ``eta lambda_max < 2 (1 + mu)``; Adam: the preconditioned bound of Cohen
#: et al. 2022), to the one decimal printed there: the sharpness bound held, with that much room.
SHARPNESS_EDGE_FACTOR = (2.6, 5.4)

_K_FACTOR = f"{K_THRESHOLD_TOO_PERMISSIVE[0]:.0f}-{K_THRESHOLD_TOO_PERMISSIVE[1]:.0f}x"
_SHARP_FACTOR = f"{SHARPNESS_EDGE_FACTOR[0]:.1f}-{SHARPNESS_EDGE_FACTOR[1]:.1f}x"

#: What a log-derived output says where a stability verdict would be (one line).
NO_STABILITY_VERDICT = (
    "No stability verdict: a reward curve measures how fast the reward relaxes, not the curvature that limits "
    f"the step (on a transformer the learning-rate threshold built on the reward curvature was {_K_FACTOR} too "
    "permissive, and the K a reward curve implies was an order of magnitude smaller still). "
    "A stability bound needs the sharpness of the loss (its top Hessian eigenvalue): `grpo-dynamics probe` "
    "measures it on this project's tiny transformer only (for another network: Lanczos on Hessian-vector "
    f"products, grpo_core.llm.curvature), and there the measured edge lay {_SHARP_FACTOR} above the sharpness "
    "bound.")

#: What the plain ``advise`` (``K`` given, not read from a log) says beside its thresholds (one line).
ASSUMED_K_CAVEAT = (
    "What if: K is assumed, not measured, and the regime and thresholds are the model's at that K. On a "
    f"transformer the threshold built on the reward curvature K was {_K_FACTOR} too permissive (the K a reward "
    "curve implies was an order of magnitude smaller still); the "
    f"sharpness (top Hessian eigenvalue) gave a bound that held instead, the edge lying {_SHARP_FACTOR} above it "
    "(`grpo-dynamics probe` measures it on this project's tiny transformer).")


@dataclass(frozen=True)
class ImpliedCurvature:
    """The stiffness and curvature a reward curve implies under a run's conventions.

    ``ok`` is False when the curve has no time scale; ``reason`` then says why, and the numbers are NaN.

    Attributes
    ----------
    ok : bool
    reason : str or None
        Why no curvature could be read (flat run, rate at its bound, too few points, no learning rate).
    eta : float
        Reference learning rate ``eta_ref`` (the peak of the logged schedule, or the configured one).
    clock : {"learning_rate", "steps"}
        Whether the curve was fitted in cumulative-learning-rate time or in steps (constant ``eta``).
    conventions : Conventions
        Momentum style, ``mu``, lag model, ``k_ref`` (and why).
    a, a_low, a_high : float
        ``eta_ref * K`` per step (with Adam: ``eta_ref * K / sqrt(v)``) and its interval, from the fit of
        :class:`ModelLaw` (the oscillator at the run's conventions).
    curvature, curvature_low, curvature_high : float
        ``K = a / eta_ref`` (per unit learning rate; preconditioned with Adam).
    r2 : float
        R^2 of that fit.
    rate_free, tau_fit, damping_ratio_fit : float
        The free three-phase fit (``k``, ``tau`` in steps of the clock, ``zeta``): the consistency check.
    tau_fit_low, tau_fit_high : float
        The interval of ``tau_fit`` (:meth:`grpo_core.laws.FitResult.oscillator_interval`, the one ``fit``
        prints as M/C); NaN when ``tau`` is on a bound or not fixed by the curve.
    tau_model : float
        ``M / C`` in steps that the conventions predict at ``a`` (the momentum's inertia); a free
        ``tau_fit`` whose whole interval lies above 3x it means the slow start is not the momentum's.
    plateau, plateau_stderr : float
        ``R_inf`` of the fit at the conventions and its standard error (reward units).
    curve_range : float
        ``max - min`` of the fitted values: a plateau whose standard error exceeds it is not determined
        (the rule of :attr:`grpo_core.laws.FitResult.plateau_issue`).
    t90, t90_low, t90_high : float
        Time from the clock's 0 to 90% of the way to ``plateau`` of the fit at the conventions, over the
        interval of ``a`` (:func:`grpo_core.laws.models._time_to_fraction`, the computation behind
        ``fit``'s t90 column; the same number as the advice's ``time_to_90`` at ``eta_ref``). In steps
        of the clock: optimizer steps on the step clock, equivalent steps at ``eta_ref`` on the
        learning-rate clock.
    t90_step : float
        ``t90`` as a logged optimizer step (the clock inverted); NaN when ``t90`` lies beyond the log.
    clock_end, last_step : float
        The clock at the curve's last point and that point's logged step.
    level : float
        Coverage of the intervals.
    interval_method : {"delta", "bootstrap"}
    n : int
        Points fitted (bin means for a curve of more than :data:`MAX_FIT_POINTS` points).
    notes : tuple of str
    """

    ok: bool
    reason: str | None
    eta: float
    clock: str
    conventions: Conventions
    a: float = math.nan
    a_low: float = math.nan
    a_high: float = math.nan
    curvature: float = math.nan
    curvature_low: float = math.nan
    curvature_high: float = math.nan
    r2: float = math.nan
    rate_free: float = math.nan
    tau_fit: float = math.nan
    damping_ratio_fit: float = math.nan
    tau_fit_low: float = math.nan
    tau_fit_high: float = math.nan
    tau_model: float = math.nan
    plateau: float = math.nan
    plateau_stderr: float = math.nan
    curve_range: float = math.nan
    t90: float = math.nan
    t90_low: float = math.nan
    t90_high: float = math.nan
    t90_step: float = math.nan
    clock_end: float = math.nan
    last_step: float = math.nan
    level: float = 0.9
    interval_method: str = "delta"
    n: int = 0
    notes: tuple[str, ...] = ()

    def line(self) -> str:
        """The reward's time scale: ``eta*K`` per step and ``K`` per unit learning rate with their interval,
        and on a second line (when there is one) :meth:`t90_text` (what ``fit`` prints); ``reward time
        scale: none (reason)`` without one."""
        if not self.ok:
            return f"reward time scale: none ({self.reason})"
        pre = " (Adam: preconditioned K/sqrt(v))" if self.conventions.preconditioned else ""
        first = (f"reward time scale: eta*K = {self.a:.4g} per step [{self.a_low:.4g}, {self.a_high:.4g}], "
                 f"K = {self.curvature:.4g} per unit learning rate{pre} [{self.curvature_low:.4g}, "
                 f"{self.curvature_high:.4g}] ({self.level:.0%} {self.interval_method}; eta = {self.eta:.3g}, "
                 f"{'cumulative-learning-rate clock' if self.clock == 'learning_rate' else 'step clock'})")
        t90 = self.t90_text()
        return first + (f"\n  {t90}" if t90 else "")

    @property
    def clock_unit(self) -> str:
        """``"steps"`` (optimizer steps) on the step clock, ``"equivalent steps"`` (steps at ``eta_ref``)
        on the learning-rate clock."""
        return "steps" if self.clock == "steps" else "equivalent steps"

    @property
    def plateau_determined(self) -> bool:
        """Whether the curve fixes the fit's ``R_inf``: a finite standard error no wider than the curve's
        range (the rule of :attr:`grpo_core.laws.FitResult.plateau_issue`)."""
        return bool(math.isfinite(self.plateau_stderr) and self.plateau_stderr <= self.curve_range)

    def t90_text(self) -> str:
        """The fit's time to 90% of its plateau, saying which model, which clock, from where, and
        whether the log reaches it and the curve fixes that plateau; ``""`` without a curvature.

        ``fit``'s t90 column is each free law's own time (its own slow start and plateau, in logged
        steps); this one is the oscillator's whose only inertia is the momentum's, so the two differ
        when the slow start is longer than momentum explains (real run 18: 457 steps here, 46.6 for
        the free logistic law).
        """
        if not self.ok or not math.isfinite(self.t90):
            return ""
        u = self.clock_unit
        at = (f" (logged step {self.t90_step:.4g})" if self.clock != "steps" and math.isfinite(self.t90_step)
              else "")
        plateau = f"R_inf = {self.plateau:.4g}"
        if not self.plateau_determined:
            plateau += (f" +- {self.plateau_stderr:.2g}, which the curve does not fix (its standard error exceeds "
                        f"the curve's range {self.curve_range:.3g})")
        beyond = (f", beyond the log's last step ({self.last_step:.4g}): an extrapolation"
                  if self.t90 > self.clock_end else "")
        return (f"time to 90% of this fit's plateau: {self.t90:.4g} [{self.t90_low:.4g}, {self.t90_high:.4g}] {u}{at} "
                f"from step 0{beyond}. The fit is the oscillator at the run's conventions (its slow start is the "
                f"momentum's, M/C = {self.tau_model:.3g} {u}), its plateau {plateau}; `fit`'s t90 column is each "
                "free law's own (its own slow start and plateau, in logged steps)")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready ``dict`` (NaN/inf as ``None``; the conventions as a sub-dict)."""
        from .._json import json_ready

        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "conventions"}
        c = self.conventions
        out["conventions"] = {"momentum": c.momentum, "mu": c.mu, "lag": c.lag, "k_ref": c.k_ref,
                              "preconditioned": c.preconditioned, "text": c.text()}
        return json_ready(out)


def gain_from_rate(rate: Any, conventions: Conventions) -> np.ndarray:
    """``a = eta K`` per step from the three-phase rate ``k = g / C`` (see the module docstring).

    Parameters
    ----------
    rate : array_like
        ``k`` per step, ``>= 0``.
    conventions : Conventions

    Returns
    -------
    ndarray
        Shape of ``rate``.

    Examples
    --------
    >>> from grpo_core.runs.settings import RunSettings
    >>> float(gain_from_rate(0.02, RunSettings().conventions()))  # Adam, on-policy: a = k
    0.02
    """
    from ..model.stability import lag_moments

    k = np.asarray(rate, dtype=float)
    d1 = float(lag_moments(conventions.k_ref, conventions.lag)[0][()])
    mu = conventions.mu
    g = k * (1.0 - mu) / (1.0 + k * d1)
    return g if conventions.momentum == "heavy_ball" else g / (1.0 - mu)


class ModelLaw(Law):
    """The three-phase law with the run's conventions built in: one time-scale parameter ``a = eta K``.

    ``R(s) = R_inf - (R_inf - R_0) rho(s; M(a), C(a), g(a))`` with ``M = (1 + mu + g d2)/2``,
    ``C = 1 - mu - g d1``, ``g = a`` (heavy ball) or ``(1 - mu) a`` (EMA) and ``d1, d2`` the lag
    moments of the conventions (:func:`grpo_core.model.stability.lag_moments`). The inertia is then
    the momentum's, not a free parameter: the curve's one time scale measures ``a``.
    Parameters ``(r0, r_inf, a)``; bounds of ``a``: the exponential law's rate bounds mapped by
    :func:`gain_from_rate` (so ``C > 0`` throughout).
    """

    param_names = ("r0", "r_inf", "a")
    param_units = ("reward", "reward", "per step")
    formula = r"R(s) = R_\infty - (R_\infty - R_0)\,\rho(s; M(a), C(a), g(a))"

    def __init__(self, conventions: Conventions):
        from ..model.stability import lag_moments

        self.conventions = conventions
        d1, d2 = lag_moments(conventions.k_ref, conventions.lag)
        self._d1, self._d2 = float(d1[()]), float(d2[()])
        self.name = "oscillator_at_conventions"
        self.title = "three-phase at the run's conventions"
        self.description = "The oscillator's step response with mu and the lag fixed by the run's settings."

    def evaluate(self, t, params):
        from ..model.oscillator import reward_curve

        r0, r_inf, a = (params[..., i, None] for i in range(3))
        mu = self.conventions.mu
        g = a if self.conventions.momentum == "heavy_ball" else (1.0 - mu) * a
        return reward_curve(t, r0, r_inf, (1.0 + mu + g * self._d2) / 2.0, 1.0 - mu - g * self._d1, g)

    def bounds(self, t, y):
        lb, ub = _EXPONENTIAL.bounds(t, y)
        lb[2], ub[2] = gain_from_rate([lb[2], ub[2]], self.conventions)
        return lb, ub

    def initial_guesses(self, t, y):
        out = []
        for p in _EXPONENTIAL.initial_guesses(t, y):
            q = np.array(p, dtype=float)
            q[2] = float(gain_from_rate(q[2], self.conventions))
            out.append(q)
        return out


_EXPONENTIAL = get_law("exponential")


def _interval(law: ModelLaw, fit, s, level: float, method: str, n_boot: int, seed: int) -> tuple[float, float]:
    """Interval of ``a``: log-normal delta method, or a residual moving-block bootstrap."""
    a = fit.params["a"]
    if method == "delta":
        se = fit.stderr["a"]
        if not math.isfinite(se):
            return math.nan, math.nan
        spread = math.exp(_norm_ppf(0.5 + level / 2.0) * se / a)  # a positive rate's interval stays positive
        return a / spread, a * spread
    rng = np.random.default_rng(seed)
    resid = fit.y - fit.fitted
    resid = resid - resid.mean()
    n = resid.size
    rho = float(np.corrcoef(resid[:-1], resid[1:])[0, 1]) if n > 2 else 0.0
    block = int(min(max(1, math.ceil((1 + max(rho, 0.0)) / (1 - min(max(rho, 0.0), 0.99)))), max(1, n // 4)))
    p_hat = np.array([fit.params[k] for k in law.param_names])
    draws = np.empty(n_boot)
    for b in range(n_boot):
        starts = rng.integers(0, n - block + 1, size=-(-n // block))
        idx = (starts[:, None] + np.arange(block)[None, :]).ravel()[:n]
        draws[b] = fit_law(fit.t, fit.fitted + resid[idx], law, starts=[p_hat]).params["a"]
    lo, hi = np.quantile(draws, [0.5 - level / 2.0, 0.5 + level / 2.0])
    return float(min(lo, a)), float(max(hi, a))


def _norm_ppf(q: float) -> float:
    """The standard normal quantile, as ``scipy.stats.norm.ppf`` gives it (its ``ndtri``; ``scipy.special``
    imports in a tenth of the time of ``scipy.stats``)."""
    return special.ndtri(q)


def _f_sf(x: float, dfn: int, dfd: int) -> float:
    """``scipy.stats.f.sf(x, dfn, dfd)``: its ``fdtrc`` inside the support, and its values at the edges (NaN
    for a NaN or for degrees of freedom that are not positive, 1 at ``x <= 0``, 0 at ``x = inf``)."""
    if not (dfn > 0 and dfd > 0) or math.isnan(x):
        return math.nan
    if x <= 0:
        return 1.0
    if math.isinf(x):
        return 0.0
    return float(special.fdtrc(dfn, dfd, x))


def _no_time_scale(fit, law: ModelLaw) -> str | None:
    """Why a fit at the conventions gives no time scale, or None."""
    n, p = fit.n, 3
    tss = float(np.sum((fit.y - fit.y.mean()) ** 2))
    f_stat = ((tss - fit.rss) / (p - 1)) / (fit.rss / (n - p)) if fit.rss > 0 else math.inf
    p_value = _f_sf(f_stat, p - 1, n - p)
    if p_value > FLAT_P_VALUE:
        return (f"flat run: the fitted law explains no more than the noise (R^2 = {fit.r2:.3f}, F-test p = "
                f"{p_value:.2g} > {FLAT_P_VALUE:g}), so the curve has no time scale")
    lb, ub = law.bounds(fit.t, fit.y)
    low_rate = "a" in fit.at_bound and fit.params["a"] < ub[2] * (1 - 1e-6)
    if "a" in fit.at_bound and not low_rate:
        return "the rate sits at the fit's upper bound: the curve jumps faster than the logging interval"
    if not (low_rate or "r_inf" in fit.at_bound):
        return None
    # a rate or plateau at its bound is what a straight line gives: say whether the curve is one
    p_bend, r2_line = _bend_test(fit.t, fit.y)
    if p_bend > BEND_P_VALUE:
        evidence = (f"a straight line fits as well: R^2 {r2_line:.3f} vs the fit's {fit.r2:.3f}, and a cubic's bend "
                    f"over the line has F-test p = {p_bend:.2g} > {BEND_P_VALUE:g}")
        if low_rate:
            return f"the rate sits at the fit's lower bound: no relaxation is detected within the log ({evidence})"
        return (f"the plateau lies beyond the data (the fit's R_inf at its bound, {fit.params['r_inf']:.4g}): the "
                f"curve's bend is not determined ({evidence}), so only the product of the rise and the rate is "
                "identified, not the rate")
    evidence = (f"the curve does bend (a cubic beats a straight line: F-test p = {p_bend:.2g}), but not as the "
                f"oscillator at the run's conventions relaxes to a plateau (its R^2 {fit.r2:.3f}, a line's "
                f"{r2_line:.3f})")
    if low_rate:
        return f"the rate sits at the fit's lower bound: {evidence}, so the rate is not determined"
    return (f"the plateau lies beyond the data (the fit's R_inf at its bound, {fit.params['r_inf']:.4g}): {evidence}, "
            "so the rate is not determined")


def _bend_test(t: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """F-test p-value of a cubic over a straight line in ``t`` (nested, 2 extra parameters) and the line's R^2.

    A cubic, not a quadratic: an S-shaped rise (slow start, then a plateau) bends in the cubic term.
    """
    x = (t - t.mean()) / (t.std() or 1.0)
    rss = [float(np.sum((y - np.polyval(np.polyfit(x, y, d), x)) ** 2)) for d in (1, 3)]
    n = y.size
    tss = float(np.sum((y - y.mean()) ** 2))
    r2_line = 1.0 - rss[0] / tss if tss > 0 else 0.0
    if n <= 4 or rss[1] <= 0:
        return (0.0 if rss[0] > rss[1] else 1.0), r2_line
    f_stat = ((rss[0] - rss[1]) / 2.0) / (rss[1] / (n - 4))
    return _f_sf(f_stat, 2, n - 4), r2_line


#: Most points the time scale is fitted to: a longer curve is fitted to the means of bins of consecutive
#: points (:func:`_fit_points`). Above the longest shipped run (9,751 points), so that none of them changes;
#: a 100,000-point curve took seconds to fit point by point.
MAX_FIT_POINTS = 10_000


def _fit_points(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The clock and the curve as fitted, and a note when they were binned: at most :data:`MAX_FIT_POINTS`
    points, the means of ``k = ceil(n / MAX_FIT_POINTS)`` consecutive points each (the last bin holds the
    rest); a curve of at most that many points is fitted as it is.

    A bin mean has ``1/k`` of a point's noise variance and there are ``k`` times fewer of them, so the fit's
    standard errors and F-tests stay about what the points give (for independent noise).
    """
    n = y.size
    if n <= MAX_FIT_POINTS:
        return s, y, ()
    k = -(-n // MAX_FIT_POINTS)
    m = (n // k) * k

    def means(v: np.ndarray) -> np.ndarray:
        head = v[:m].reshape(-1, k).mean(axis=1)
        return head if m == n else np.append(head, v[m:].mean())

    s_bins, y_bins = means(s), means(y)
    return s_bins, y_bins, (f"fitted to {y_bins.size:,} bin means of {k} consecutive points (the curve has "
                            f"{n:,}; at most {MAX_FIT_POINTS:,} are fitted)",)


#: F-test p-value of the fit against a constant above which a curve is called flat.
FLAT_P_VALUE = 0.01
#: F-test p-value of a cubic over a straight line above which a curve is not shown to bend.
BEND_P_VALUE = 0.01


def implied_curvature(
    t: Any,
    y: Any,
    conventions: Conventions,
    *,
    eta: Any = None,
    lr_steps: Any = None,
    lr_values: Any = None,
    level: Any = 0.9,
    method: str = "delta",
    n_boot: int = 200,
    seed: int = 0,
) -> ImpliedCurvature:
    """Fit the oscillator at the run's conventions in the model's clock and read off ``a = eta K`` and ``K``.

    A curve of more than :data:`MAX_FIT_POINTS` points (10,000) is thinned before the two fits: they are made
    to the means of bins of ``ceil(n / 10,000)`` consecutive points (clock and reward alike), with a note in
    ``notes`` (:func:`_fit_points`); no shipped run is that long, and a 100,000-point curve fitted point by
    point took seconds. ``curve_range``, ``clock_end`` and ``last_step`` are read off the curve itself.

    Parameters
    ----------
    t, y : array_like, shape (n,)
        Steps (``>= 0``) and the reward there.
    conventions : Conventions
        From :meth:`RunSettings.conventions`.
    eta : float, optional
        The constant learning rate, used when no schedule is given; ``> 0``.
    lr_steps, lr_values : array_like, optional
        The logged learning rate; when given the clock is the cumulative learning rate and
        ``eta_ref`` its peak (:func:`~grpo_core.laws.clock.learning_rate_clock`).
    level : float
        Interval coverage in (0, 1), default 0.9.
    method : {"delta", "bootstrap"}
        Interval of ``a`` from the fit's covariance (log-normal delta method) or a residual
        moving-block bootstrap (``n_boot`` refits, ``seed``).

    Returns
    -------
    ImpliedCurvature
        ``ok = False`` with a ``reason`` for a curve without a time scale (flat: the fit is no better
        than a constant by an F-test at p = 0.01; the rate or the plateau at a bound).

    Raises
    ------
    ParameterError
        Neither ``eta`` nor a schedule; bad ``level``, ``method``, ``n_boot``, ``seed``.

    References
    ----------
    Our derivation (module docstring); Cohen et al. 2022 for the preconditioned sharpness.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.runs.settings import RunSettings
    >>> conv = RunSettings().conventions()  # Adam b1 = 0.9, on-policy
    >>> t = np.arange(1, 301)
    >>> y = ModelLaw(conv)(t, [0.2, 0.8, 0.02]) + np.random.default_rng(1).normal(0, 0.02, t.size)
    >>> ic = implied_curvature(t, y, conv, eta=1e-5)
    >>> ic.a_low < 0.02 < ic.a_high, round(ic.curvature / 2000, 1)
    (True, 1.0)
    """
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    method = check_choice("method", method, INTERVAL_METHODS)
    n_boot, seed = check_integer("n_boot", n_boot, low=10), check_integer("seed", seed, low=0)
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if lr_values is not None:
        s, eta_ref = learning_rate_clock(t, lr_steps, lr_values)
        clock = "learning_rate"
    elif eta is not None:
        eta_ref = check_real("eta", eta, low=0.0, low_inclusive=False)
        s, clock = t, "steps"
    else:
        raise ParameterError("eta", "`eta` (a constant learning rate) or a logged schedule is required")
    common = dict(eta=eta_ref, clock=clock, conventions=conventions, level=level, interval_method=method)
    keep = np.concatenate([[True], np.diff(s) > 0]) & np.isfinite(y)  # lr = 0 steps do not move the clock
    notes = () if keep.all() else (f"{int((~keep).sum())} point(s) where the clock did not advance dropped",)
    s_fit, y_fit, binned = _fit_points(s[keep], y[keep])
    notes += binned
    law = ModelLaw(conventions)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_law(s_fit, y_fit, law)
            free = fit_law(s_fit, y_fit, "three_phase")
    except DataError as exc:
        return ImpliedCurvature(ok=False, reason=str(exc), n=int(y_fit.size), notes=notes, **common)
    k, tau = free.params["k"], free.params["tau"]
    tau_lo, tau_hi = free.oscillator_interval(level)["mass_over_damping"]
    check = dict(rate_free=k, tau_fit=tau, damping_ratio_fit=1.0 / (2.0 * math.sqrt(k * tau)) if tau > 0 else math.inf,
                 tau_fit_low=tau_lo, tau_fit_high=tau_hi, r2=fit.r2, n=fit.n, notes=notes,
                 plateau=fit.params["r_inf"], plateau_stderr=fit.stderr["r_inf"],
                 curve_range=float(np.ptp(y[keep])), clock_end=float(s[keep][-1]), last_step=float(t[keep][-1]))
    why = _no_time_scale(fit, law)
    if why is not None:
        return ImpliedCurvature(ok=False, reason=why, **check, **common)
    a = fit.params["a"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a_lo, a_hi = _interval(law, fit, s_fit, level, method, n_boot, seed)
    if not (math.isfinite(a_lo) and math.isfinite(a_hi)):
        return ImpliedCurvature(ok=False, reason="the rate is not identified (infinite standard error)",
                                **check, **common)
    return ImpliedCurvature(
        ok=True, reason=None, a=a, a_low=a_lo, a_high=a_hi, curvature=a / eta_ref,
        curvature_low=a_lo / eta_ref, curvature_high=a_hi / eta_ref, tau_model=_tau_model(a, conventions),
        **_t90(law, fit, (a, a_lo, a_hi), s[keep], t[keep], clock), **check, **common)


def _t90(law: ModelLaw, fit, gains, s, t, clock: str) -> dict[str, float]:
    """``t90``, its interval over the gains' ends and the logged step, by the laws' own time to 90%."""
    from ..laws.models import _time_to_fraction

    r0, r_inf = fit.params["r0"], fit.params["r_inf"]
    t90, *ends = (_time_to_fraction(law, np.array([r0, r_inf, g]), 0.9) for g in gains)
    if clock == "steps":
        step = t90
    else:  # the clock is known only up to the log's last step
        step = float(np.interp(t90, np.r_[0.0, s], np.r_[0.0, t])) if t90 <= s[-1] else math.nan
    return dict(t90=t90, t90_low=min(ends), t90_high=max(ends), t90_step=step)


def _tau_model(a: float, c: Conventions) -> float:
    from ..model.oscillator import coefficients

    co = coefficients(1.0, c.mu, c.k_ref, a, lag=c.lag, momentum=c.momentum)
    return co.mass / co.damping if co.damping > 0 else math.inf


def implied_curvature_from_log(log, settings: RunSettings | None = None, *, metric: str = "reward",
                               split: str = "train", eta: Any = None, **kwargs) -> ImpliedCurvature:
    """:func:`implied_curvature` of one metric of a :class:`~grpo_core.runs.logs.RunLog`.

    The clock is the log's ``learning_rate`` when it has one (cumulative, see
    :func:`~grpo_core.laws.clock.learning_rate_clock`), else ``eta`` or ``settings.learning_rate`` held constant.

    Parameters
    ----------
    log : RunLog
    settings : RunSettings, optional
        Default: TRL's defaults (:class:`RunSettings`).
    metric, split : str
        The curve to fit (default the training reward).
    eta : float, optional
        Overrides the learning rate (then the clock is in steps).
    **kwargs
        ``level``, ``method``, ``n_boot``, ``seed`` of :func:`implied_curvature`.

    Returns
    -------
    ImpliedCurvature
        ``ok = False`` with a reason when there is no curve, no learning rate, or no time scale.

    Examples
    --------
    >>> from grpo_core.runs import datasets, logs, settings
    >>> r = datasets.real_run("04")
    >>> ic = implied_curvature_from_log(logs.read_log(r.path), settings.read_settings(r.folder / "meta.json"))
    >>> ic.ok, ic.clock, ic.a_low < ic.a < ic.a_high
    (True, 'learning_rate', True)
    """
    settings = settings or RunSettings()
    conv = settings.conventions()
    with warnings.catch_warnings():  # dropped rows are the fit's to report, not this line's
        warnings.simplefilter("ignore")
        t, y = log.series(metric, split=split)
    lr_kw: dict[str, Any] = {}
    lr_why = "the log has no `learning_rate` column"
    if eta is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ls, lv = log.series("learning_rate")
            if lv.size and np.nanmax(lv) > 0:
                lr_kw = dict(lr_steps=ls, lr_values=lv)
            elif lv.size:  # a logged rate that is never positive is no clock; say what is wrong with it
                lr_why = ("the log's `learning_rate` is 0 on every step" if np.all(lv == 0) else
                          f"the log's `learning_rate` is never positive (min {np.min(lv):.3g})")
        except DataError:
            pass
        eta = settings.learning_rate
    if not lr_kw and eta is None:
        return ImpliedCurvature(ok=False, reason=f"no learning rate: {lr_why} and no config gives one (give the "
                                "run's config with --config)", eta=math.nan,
                                clock="steps", conventions=conv)
    return implied_curvature(t, y, conv, eta=None if lr_kw else eta, **lr_kw, **kwargs)


@dataclass(frozen=True)
class LogAdvice:
    """What ``advise --from-log`` reads from a run's log: its time scale and the shape of its curve.

    No stability verdict: ``a = eta K`` is how fast the reward relaxes, not the curvature that limits the
    step (module docstring; :data:`NO_STABILITY_VERDICT`), so nothing here compares it with a threshold
    or suggests a learning rate.

    Attributes
    ----------
    implied : ImpliedCurvature
        ``a`` per step and ``K`` per unit learning rate with their interval, ``t90`` with its interval.
    regime : str or None
        The continuous model's regime at ``eta_ref`` and the implied ``K`` (``overdamped``,
        ``critically_damped``, ``underdamped``: the shape of the fitted curve, monotone or overshooting);
        None without a time scale.
    damping_ratio : float
        ``zeta`` there (NaN without a time scale).
    damping_ratio_low, damping_ratio_high : float
        ``zeta`` at the top and at the bottom of the interval of ``K`` (``zeta`` falls as ``K`` grows).
    regime_determined : bool or None
        Whether the regime holds over the whole interval (it does not when ``zeta`` spans 1: the data
        cannot tell a monotone approach from an overshoot). None without a time scale.
    """

    implied: ImpliedCurvature
    regime: str | None = None
    damping_ratio: float = math.nan
    damping_ratio_low: float = math.nan
    damping_ratio_high: float = math.nan
    regime_determined: bool | None = None

    def regime_text(self) -> str:
        """The regime at the run's eta with ``zeta`` and its interval; "undetermined" when the interval
        spans critical damping (``zeta = 1``); ``""`` without a time scale."""
        if self.regime is None:
            return ""
        z = (f"zeta = {self.damping_ratio:.3g} [{self.damping_ratio_low:.3g}, {self.damping_ratio_high:.3g}] over "
             "the interval of K")
        label = self.regime.replace("_", " ")
        if self.regime_determined:
            return f"{label} ({z})"
        return (f"undetermined ({z}: overdamped at the low end of K, underdamped at the high end; {label} at "
                "the point estimate)")

    def consistency_text(self) -> str:
        """The free three-phase fit's slow start ``tau`` (M/C, with its interval) against the momentum's
        ``M/C``: longer than momentum explains only when the whole interval lies above 3x it; undetermined,
        and not compared by its point value, when ``tau`` has no interval (on a bound, or not fixed by the
        curve) or its interval reaches both sides of 3x (real run 18: ``tau`` = 200 steps at its bound).
        """
        ic = self.implied
        u, edge = ic.clock_unit, 3.0 * ic.tau_model
        model = f"the momentum's M/C = {ic.tau_model:.3g} {u}"
        lo, hi = ic.tau_fit_low, ic.tau_fit_high
        if not (math.isfinite(lo) and math.isfinite(hi) and lo > 0):
            return (f"free three-phase fit tau = {ic.tau_fit:.3g} {u} is undetermined (tau is on a bound or not "
                    f"fixed by the curve: no interval), so its slow start is not compared with {model}")
        text = f"free three-phase fit tau = {ic.tau_fit:.3g} [{lo:.3g}, {hi:.3g}] {u} ({ic.level:.0%}) vs {model}"
        if lo > edge:
            return text + " (the slow start is longer than momentum explains, over the whole interval)"
        if hi >= edge:
            return text + (" (undetermined: the interval reaches both sides of 3x M/C, so the curve cannot tell "
                           "whether the slow start is longer than momentum explains)")
        return text

    def summary(self) -> str:
        """The report ``grpo-dynamics advise --from-log`` prints: the conventions, the time scale with its
        interval and t90, the consistency line, the regime (the curve's shape), and
        :data:`NO_STABILITY_VERDICT`."""
        ic = self.implied
        lines = ["Conventions: " + ic.conventions.text(), ic.line()]
        if ic.ok:
            lines.append("  consistency: " + self.consistency_text())
        for note in ic.notes:
            lines.append(f"  ! {note}")
        lines.append("")
        if self.regime is None:
            lines.append("No time scale: the log does not measure eta*K here (the plain advise with --curvature is "
                         "a what-if at an assumed K).")
        else:
            lines.append(f"Regime of the fitted curve at the run's eta = {ic.eta:.3g}: {self.regime_text()}")
        lines.append(NO_STABILITY_VERDICT)
        return "\n".join(lines)

    def entry(self) -> dict[str, Any]:
        """The short JSON-ready summary a diagnosis carries (``diagnose``'s ``implied_curvature`` key).

        Keys: ``a``, ``a_lo``, ``a_hi`` (the time scale ``eta_ref K`` per step in the run's clock, and its
        interval), ``K``, ``lo``, ``hi`` (``K`` per unit learning rate and its interval; preconditioned
        ``K/sqrt(v)`` with Adam), ``t90``, ``t90_lo``, ``t90_hi`` (time to 90% of the fit's plateau and its
        interval, in ``clock_unit``), ``t90_step`` (``t90`` as a logged step; None beyond the log),
        ``clock_unit``, ``regime`` (``"undetermined"`` when the interval of ``zeta`` spans 1), ``zeta``,
        ``zeta_lo``, ``zeta_hi``, ``eta``, ``clock``, ``level``, ``preconditioned``, ``conventions`` (text),
        ``no_stability_verdict`` (:data:`NO_STABILITY_VERDICT`), ``reason`` (None when a time scale was
        read, else why not) and ``reason_kind`` (None, ``"flat"``, ``"plateau_beyond_data"``,
        ``"rate_at_bound"``, ``"no_learning_rate"``, ``"not_identified"``, or ``"other"``). NaN is ``None``.
        """
        from .._json import json_ready

        ic, c = self.implied, self.implied.conventions
        return json_ready({
            "a": ic.a, "a_lo": ic.a_low, "a_hi": ic.a_high,
            "K": ic.curvature, "lo": ic.curvature_low, "hi": ic.curvature_high,
            "t90": ic.t90, "t90_lo": ic.t90_low, "t90_hi": ic.t90_high, "t90_step": ic.t90_step,
            "clock_unit": ic.clock_unit,
            "regime": None if self.regime is None else (self.regime if self.regime_determined else "undetermined"),
            "zeta": self.damping_ratio, "zeta_lo": self.damping_ratio_low, "zeta_hi": self.damping_ratio_high,
            "eta": ic.eta, "clock": ic.clock, "level": ic.level, "preconditioned": c.preconditioned,
            "conventions": c.text(), "no_stability_verdict": NO_STABILITY_VERDICT,
            "reason": ic.reason, "reason_kind": reason_kind(ic.reason),
        })

    def line(self) -> str:
        """One line: the time scale ``eta*K`` per step and ``K`` with their interval, and ``t90`` with its
        interval, or why there is none (what ``diagnose`` prints)."""
        ic = self.implied
        if not ic.ok:
            return f"reward time scale: none ({ic.reason})"
        c = ic.conventions
        pre = " (Adam: K/sqrt(v))" if c.preconditioned else ""
        conv = f"{'EMA' if c.momentum == 'ema' else 'heavy-ball'} mu = {c.mu:g}, {c.lag} lag, k_ref = {c.k_ref}"
        where = ("beyond the log" if ic.t90 > ic.clock_end else
                 f"logged step {ic.t90_step:.4g}" if ic.clock != "steps" and math.isfinite(ic.t90_step) else "")
        t90 = (f"; t90 = {ic.t90:.4g} [{ic.t90_low:.4g}, {ic.t90_high:.4g}] {ic.clock_unit}"
               + (f" ({where})" if where else "") if math.isfinite(ic.t90) else "")
        return (f"reward time scale: eta*K = {ic.a:.4g} per step [{ic.a_low:.4g}, {ic.a_high:.4g}], "
                f"K = {ic.curvature:.4g}{pre} [{ic.curvature_low:.4g}, {ic.curvature_high:.4g}] ({ic.level:.0%})"
                f"{t90} ({conv})")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready ``dict``: ``implied`` (:meth:`ImpliedCurvature.as_dict`), ``regime``, ``regime_text``,
        ``damping_ratio``, ``damping_ratio_low``, ``damping_ratio_high``, ``regime_determined``,
        ``time_to_90_note`` (:meth:`ImpliedCurvature.t90_text`; None without a time scale) and
        ``no_stability_verdict`` (:data:`NO_STABILITY_VERDICT`)."""
        from .._json import json_ready

        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "implied"}
        out["implied"] = self.implied.as_dict()
        out["regime_text"] = self.regime_text() or None
        out["time_to_90_note"] = self.implied.t90_text() or None
        out["no_stability_verdict"] = NO_STABILITY_VERDICT
        return json_ready(out)


_REASON_KINDS = (("flat run", "flat"), ("the plateau lies beyond", "plateau_beyond_data"),
                 ("the rate sits at", "rate_at_bound"), ("no learning rate", "no_learning_rate"),
                 ("the rate is not identified", "not_identified"))


def reason_kind(reason: str | None) -> str | None:
    """The kind of a :attr:`ImpliedCurvature.reason`: None (a curvature was read), ``"flat"``,
    ``"plateau_beyond_data"``, ``"rate_at_bound"``, ``"no_learning_rate"``, ``"not_identified"`` or
    ``"other"`` (a fit that failed, a log without the curve).

    Examples
    --------
    >>> reason_kind(None), reason_kind("flat run: the fitted law explains no more than the noise")
    (None, 'flat')
    """
    if reason is None:
        return None
    return next((kind for prefix, kind in _REASON_KINDS if reason.startswith(prefix)), "other")


def advise_implied(implied: ImpliedCurvature) -> LogAdvice:
    """The shape of a run's curve at its implied time scale: the continuous model's regime and ``zeta``
    (:func:`grpo_core.model.oscillator.coefficients`) at ``eta_ref`` and ``K``, over the interval of ``K``.

    The stiffness is passed as the total ``K`` with ``beta = 0`` (the log measures the sum
    ``curvature + beta * kl_curvature``). No threshold is computed (see :class:`LogAdvice`).

    Parameters
    ----------
    implied : ImpliedCurvature

    Returns
    -------
    LogAdvice
        ``regime = None`` when ``implied.ok`` is False.
    """
    from ..model.oscillator import coefficients

    if not implied.ok:
        return LogAdvice(implied=implied)
    c = implied.conventions

    def at(k: float):
        return coefficients(implied.eta, c.mu, c.k_ref, k, 0.0, lag=c.lag, momentum=c.momentum)

    point = at(implied.curvature)
    # zeta falls as K grows: its interval from the ends of K's
    zetas = [at(k).damping_ratio if math.isfinite(k) and k > 0 else math.nan
             for k in (implied.curvature_high, implied.curvature_low)]
    determined = bool(all(math.isfinite(z) for z in zetas) and not (zetas[0] < 1.0 < zetas[1]))
    return LogAdvice(implied=implied, regime=point.regime, damping_ratio=point.damping_ratio,
                     damping_ratio_low=zetas[0], damping_ratio_high=zetas[1], regime_determined=determined)


def advise_from_log(log, settings: RunSettings | None = None, **kwargs) -> LogAdvice:
    """:func:`implied_curvature_from_log` then :func:`advise_implied` (keyword arguments go to the former).

    Examples
    --------
    >>> from grpo_core.runs import datasets, logs, settings
    >>> r = datasets.real_run("22")
    >>> out = advise_from_log(logs.read_log(r.path), settings.read_settings(r.folder / "meta.json"))
    >>> out.regime, round(out.implied.a, 4), out.implied.a_low < out.implied.a < out.implied.a_high
    ('overdamped', 0.0101, True)
    """
    return advise_implied(implied_curvature_from_log(log, settings, **kwargs))
