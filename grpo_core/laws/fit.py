"""Least-squares fits of one law (:func:`fit_law`) or of several, compared (:func:`fit_all`).

Every fit is a bounded nonlinear least-squares problem solved with
:func:`scipy.optimize.least_squares` from several starting points; it reports standard errors
from the Jacobian, R^2, AIC, AICc and BIC under a Gaussian likelihood, and the residuals' spread
and lag-1 autocorrelation (:class:`FitResult`). :func:`fit_all` fits every law and names the best
one by an information criterion and the one whose plateau to read (:class:`FitComparison`);
:func:`choose_criterion` is the small-sample rule (AICc below 40 points per parameter).

References
----------
Our derivation, book chapter "Fitting real reward curves". Akaike (1974); Hurvich & Tsai (1989)
(AICc); Schwarz (1978) (BIC); Burnham & Anderson (2002) (criterion differences, the n / K < 40 rule).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from .._json import json_ready
from ..errors import DataError, ParameterError
from ..validation import check_array, check_choice, check_integer, check_names, check_real
from .curves import (
    _lag1_autocorrelation,
    _prepare,
    gaussian_information_criteria,
    noise_variance,
    plateau_outside_unit_interval,
)
from .models import LAWS, Law, _gradient, _time_to_fraction, get_law, oscillator_quantities

#: Laws compared by :func:`fit_all` unless told otherwise.
DEFAULT_LAWS = ("three_phase", "exponential", "logistic")
CRITERIA = ("aic", "aicc", "bic")
#: Below this many points per estimated parameter (the law's plus the noise variance) ``"auto"`` ranks
#: by AICc rather than AIC (Burnham & Anderson 2002, section 2.4).
AICC_POINTS_PER_PARAMETER = 40
# Curves longer than this are searched on an even subsample first (all starts), then polished.
_SEARCH_POINTS = 2000


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
        half = special.ndtri(0.5 + level / 2) * np.sqrt(np.maximum(var, 0.0))
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

    def oscillator_interval(self, level: float = 0.9) -> dict[str, tuple[float, float]] | None:
        """Intervals of the oscillator ratios of a three-phase fit: ``damping_ratio``,
        ``mass_over_damping`` (M/C, steps) and ``stiffness_over_damping`` (K/C, per step), each
        ``(low, high)`` at coverage ``level``; ``None`` for other laws.

        Delta method in log space (the ratios are products of powers of ``k`` and ``tau``:
        ``zeta = 1 / (2 sqrt(k tau))``), from the fit's covariance with its variance inflated by
        ``(1 + rho) / (1 - rho)`` for the residuals' lag-1 autocorrelation ``rho > 0`` (correlated
        noise carries less information than its count says). An interval is ``(nan, nan)`` when
        ``k`` or ``tau`` sits on a bound or is not identified by the data: the curve does not fix
        that ratio, and no interval is given rather than a false one.

        Raises
        ------
        ParameterError
            ``level`` outside (0, 1).

        References
        ----------
        Our derivation (book chapter "Fitting real reward curves"); the delta method as in
        :meth:`confidence_band`.
        """
        level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        osc = self.oscillator
        if osc is None:
            return None
        names = self.law_object.param_names
        ik, it = names.index("k"), names.index("tau")
        k, tau = self.params["k"], self.params["tau"]
        nan = (math.nan, math.nan)
        cov = self.cov[np.ix_([ik, it], [ik, it])]
        if {"k", "tau"} & set(self.at_bound) or not np.all(np.isfinite(cov)) or k <= 0 or tau <= 0:
            return {"damping_ratio": nan, "mass_over_damping": nan, "stiffness_over_damping": nan}
        rho = self.residual_autocorr if math.isfinite(self.residual_autocorr) else 0.0
        inflate = (1.0 + rho) / (1.0 - rho) if 0.0 < rho < 1.0 else 1.0
        # covariance of (log k, log tau)
        jac = np.diag([1.0 / k, 1.0 / tau])
        lcov = inflate * (jac @ cov @ jac)
        z = float(special.ndtri(0.5 + level / 2.0))

        def band(value: float, weights: tuple[float, float]) -> tuple[float, float]:
            w = np.asarray(weights)
            se = math.sqrt(max(float(w @ lcov @ w), 0.0))
            with np.errstate(over="ignore"):  # an interval wider than floats: (0, inf), not fixed by the curve
                return float(value * np.exp(-z * se)), float(value * np.exp(z * se))

        return {"damping_ratio": band(osc["damping_ratio"], (-0.5, -0.5)),
                "mass_over_damping": band(tau, (0.0, 1.0)),
                "stiffness_over_damping": band(k, (1.0, 0.0))}

    def _bound_side(self, name: str) -> str:
        """``"upper"`` or ``"lower"``: the bound parameter ``name`` (one of :attr:`at_bound`) is on."""
        law = self.law_object
        lb, ub = law.bounds(self.t, self.y)
        i = law.param_names.index(name)
        return "upper" if abs(self.params[name] - ub[i]) <= abs(self.params[name] - lb[i]) else "lower"

    @property
    def plateau_issue(self) -> str | None:
        """Why the curve does not determine this fit's plateau, in a few words; ``None`` when it does.

        The plateau is not determined when ``r_inf`` sits on its bound (ten reward ranges beyond the
        data), or when its standard error is infinite or wider than the curve's whole range (max -
        min of ``y``): the cases :attr:`notes` calls a plateau the curve does not determine. (A
        three-phase ``tau`` on its upper bound is a note of its own, not one of these: the plateau
        can still be fixed to within a small error, as on held-out run 75.)

        References
        ----------
        Our choice, book chapter "Fitting real reward curves".
        """
        if "r_inf" in self.at_bound:
            return "its r_inf is at its bound"
        if not (math.isfinite(self.plateau) and math.isfinite(self.plateau_stderr)):
            return "its plateau has an infinite standard error"
        if self.plateau_stderr > float(np.ptp(self.y)):
            return "its plateau's standard error exceeds the curve's range"
        return None

    @property
    def plateau_determined(self) -> bool:
        """Whether the curve determines the plateau (:attr:`plateau_issue` is ``None``)."""
        return self.plateau_issue is None

    @property
    def notes(self) -> list[str]:
        """Plain-language warnings about this fit: parameters on a bound, unidentified parameters,
        a plateau the data do not reach."""
        out = []
        for name in self.at_bound:
            side = self._bound_side(name)
            if name == "tau" and side == "upper":
                out.append(
                    "tau is at its upper bound: the curve looks like part of a barely damped "
                    "oscillation; r_inf is the centre line it would swing about, not a level the curve reaches"
                )
            elif name == "r_inf":
                out.append(
                    "r_inf is at its bound (ten reward ranges beyond the data): the curve does not "
                    "determine its plateau"
                    + (f"; {self.plateau:.4g} also lies outside [0, 1], where every value of the curve lies"
                       if plateau_outside_unit_interval(self.y, self.plateau) else "")
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
            "plateau_determined": self.plateau_determined,
            "t90": json_ready(self.t90),
            "oscillator": None if osc is None else {k: json_ready(v) for k, v in osc.items()},
            "oscillator_interval": None if osc is None else {
                k: [json_ready(lo), json_ready(hi)] for k, (lo, hi) in self.oscillator_interval().items()},
            "success": bool(self.success),
            "notes": self.notes,
        }


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
    """Characteristic size of each parameter (reward range, 1/span, span, 1 for a logit) for the optimiser."""
    span = max(float(t[-1]), float(np.min(np.diff(t))))
    yscale = max(float(np.ptp(y)), 1e-12)
    by_unit = {"reward": yscale, "per step": 1.0 / span, "steps": span, "logit": 1.0}
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
    >>> y = get_law("three_phase")(t, [0.0, 1.0, 0.04, 20.0])
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
    # a law with a fixed plateau (no r_inf parameter) says where it is; it then has no standard error
    i_inf = law.param_names.index("r_inf") if "r_inf" in law.param_names else None
    plateau = float(x[i_inf]) if i_inf is not None else law.plateau(x)
    plateau_se = float(se[i_inf]) if i_inf is not None else 0.0
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
        plateau=plateau,
        plateau_stderr=plateau_se,
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
        The criterion that chose ``best`` and :attr:`preferred` (``"auto"`` given to :func:`fit_all`
        is stored as the one it chose).
    best : str
        Name of the law with the lowest criterion.
    n : int
        Usable points.
    dropped : int
        Points dropped as non-finite.
    noise_r2_reference : float
        ``max(0, 1 - noise_variance(y) / Var(y))``: the R^2 a law would reach if the
        successive-difference noise estimate were exact; a reference, not a ceiling (negatively
        correlated residuals inflate the estimate, and fits can pass it).
    """

    results: dict[str, FitResult]
    criterion: str
    best: str
    n: int
    dropped: int
    noise_r2_reference: float

    @property
    def best_fit(self) -> FitResult:
        """The :class:`FitResult` of the best law."""
        return self.results[self.best]

    @property
    def preferred(self) -> str:
        """The law to read the plateau from: the lowest :attr:`criterion` among the laws whose plateau
        the curve determines (:attr:`FitResult.plateau_determined`), else :attr:`best`.

        It differs from :attr:`best` when the best law's plateau sits at its bound or has an interval
        wider than the curve (a lower criterion bought with a plateau the data do not fix);
        :attr:`preferred_determined` says whether any law's plateau was determined. :attr:`best` is
        left as it is (the plateau forecaster of :func:`grpo_core.laws.forecast` uses it).

        References
        ----------
        Our choice, book chapter "Fitting real reward curves".
        """
        fixed = [k for k, r in self.results.items() if r.plateau_determined]
        if not fixed:
            return self.best
        return min(fixed, key=lambda k: getattr(self.results[k], self.criterion))

    @property
    def preferred_determined(self) -> bool:
        """``False`` when no law's plateau is determined and :attr:`preferred` fell back to :attr:`best`."""
        return self.results[self.preferred].plateau_determined

    @property
    def points_per_parameter(self) -> float:
        """``n / K``, K the most estimated parameters of any law compared (its own plus the noise
        variance); below :data:`AICC_POINTS_PER_PARAMETER` (40) AICc is the criterion to rank by."""
        return self.n / (max(r.n_params for r in self.results.values()) + 1)

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
        """JSON-ready summary: ``models`` (one entry per law), ``best``, ``preferred``,
        ``preferred_determined``, ``criterion``, ``n``, ``points_per_parameter``."""
        return {
            "models": {k: r.to_dict() for k, r in self.results.items()},
            "best": self.best,
            "preferred": self.preferred,
            "preferred_determined": self.preferred_determined,
            "criterion": self.criterion,
            "points_per_parameter": json_ready(self.points_per_parameter),
            "n": self.n,
            "dropped": self.dropped,
            "noise_r2_reference": json_ready(self.noise_r2_reference),
        }


def choose_criterion(n: int, n_params: int) -> str:
    """AICc when a curve has few points per parameter, else AIC: the rule of ``criterion="auto"``.

    ``"aicc"`` when ``n / (n_params + 1) < 40`` (the noise variance counts as a parameter), else
    ``"aic"``. AICc's correction ``2 q (q + 1) / (n - q - 1)`` vanishes as ``n`` grows, so the two
    agree on long curves; on short ones AIC under-penalises the larger laws.

    Parameters
    ----------
    n : int, >= 1
        Points fitted.
    n_params : int, >= 0
        The most parameters of any law compared (without the noise variance).

    Returns
    -------
    {"aic", "aicc"}

    Raises
    ------
    ParameterError
        ``n`` < 1 or ``n_params`` < 0 (or not integers).

    References
    ----------
    Hurvich & Tsai (1989) (AICc); Burnham & Anderson (2002), "Model Selection and Multimodel
    Inference", section 2.4 (use AICc when n / K < 40).

    Examples
    --------
    >>> choose_criterion(40, 4), choose_criterion(250, 4)
    ('aicc', 'aic')
    """
    n = check_integer("n", n, low=1)
    k = check_integer("n_params", n_params, low=0)
    return "aicc" if n / (k + 1) < AICC_POINTS_PER_PARAMETER else "aic"


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
    criterion : {"aic", "aicc", "bic", "auto"}
        How ``best`` is chosen. Default AIC: the aim is prediction (a plateau forecast), which is
        what AIC estimates (expected out-of-sample log-likelihood); BIC aims at finding a true
        model among the candidates, and none of these laws is literally true for a training run.
        With few points per parameter (n / K < 40, e.g. a 12-row log) prefer ``"aicc"``;
        ``"auto"`` chooses between the two by that rule (:func:`choose_criterion`).

    Returns
    -------
    FitComparison

    Raises
    ------
    ParameterError
        Bad ``t``/``y`` (see :func:`fit_law`), an unknown law or criterion, an empty ``laws`` or one law
        given as a string (``["logistic"]``, not ``"logistic"``).
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
    >>> y = get_law("exponential")(t, [0.0, 1.0, 0.03]) + np.random.default_rng(1).normal(0, 0.03, t.size)
    >>> cmp = fit_all(t, y)
    >>> sorted(cmp.results), round(cmp.results["exponential"].plateau, 1)
    (['exponential', 'logistic', 'three_phase'], 1.0)
    """
    criterion = check_choice("criterion", criterion, CRITERIA + ("auto",))
    law_objs = [get_law(law) for law in check_names("laws", laws, choices=tuple(LAWS), objects=Law, min_size=1)]
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
    if criterion == "auto":
        criterion = choose_criterion(y_arr.size, max(r.n_params for r in results.values()))
    best = min(results, key=lambda k: getattr(results[k], criterion))
    # the difference-based noise estimate can exceed Var(y) on a curve that is all noise (an
    # alternating 0/1 series gives -1): no law explains any of it, so the reference is 0
    reference = max(0.0, 1.0 - noise_variance(y_arr) / float(np.var(y_arr)))
    return FitComparison(
        results=results, criterion=criterion, best=best, n=int(y_arr.size), dropped=dropped,
        noise_r2_reference=reference,
    )
