"""Hyperparameter advice from the oscillator model: regime, time scales, both thresholds.

:func:`advise` gathers what a practitioner wants to know about one setting of
``(eta, mu, k_ref, curvature, beta)``: the regime and damping ratio of the continuous model, the time
to 90% of the plateau, the continuous (paper) and the exact discrete stability thresholds, and a
plain-language recommendation (largest stable ``eta`` and ``k_ref``, the critically damped ``eta``).
The command ``grpo-dynamics advise`` prints it; the book uses the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from .oscillator import REGIME_LABELS, coefficients
from .stability import (
    K_REF_SEARCH_MAX,
    critical_a_continuous,
    critical_a_damping,
    critical_a_exact,
    critical_value,
    spectral_radius,
)
from .trajectories import _MAX_DISCRETE_STEPS, check_time_scale, settling_time, time_to_fraction

__all__ = ["Advice", "advise"]


@dataclass(frozen=True)
class Advice:
    """Everything :func:`advise` computes for one hyperparameter setting.

    Times are in optimizer steps; ``a`` values are ``eta * K`` per step (``K`` the total stiffness
    ``curvature + beta * kl_curvature``). ``inf`` means "never" (no threshold, or no plateau).

    Attributes
    ----------
    eta, mu, k_ref, curvature, beta, kl_curvature, lag, momentum
        The inputs.
    a : float
        ``eta * K``.
    mass, damping, stiffness, damping_ratio : float
        Continuous-model coefficients (see :func:`grpo_core.model.oscillator.coefficients`).
    regime : str
        Continuous-model regime (``overdamped``, ``critically_damped``, ``underdamped``, ``unstable``).
    time_to_90, time_to_90_discrete : float
        First time the reward covers 90% of the way to the plateau: closed form and exact recurrence.
    settling_time : float
        Time after which the closed-form reward stays within 10% of the distance to the plateau.
    critical_k_ref_continuous : float
        The paper's threshold ``(1 - mu)/(eta K)`` (heavy ball; ``1/(eta K)`` with EMA momentum): the
        continuous model with a constant lag ``d = k_ref``, real-valued.
    critical_k_ref_continuous_lag_model : float
        Continuous threshold of the chosen lag model (equal to the above for ``lag="constant"``;
        ``1 + 2(1 - mu)/(eta K)`` for ``lag="refresh"``).
    critical_k_ref_exact : float
        Smallest integer ``k_ref`` at which the exact recurrence is strictly unstable: when the given
        ``k_ref`` is on the threshold to rounding (growth factor 1 within 1e-9), the next one.
    critical_a_continuous, critical_a_exact : float
        Critical ``eta * K`` at the given ``mu`` and ``k_ref``: continuous model and exact recurrence.
    critical_eta_continuous, critical_eta_exact : float
        The same thresholds expressed as step sizes.
    critically_damped_eta : float
        ``eta`` at which the continuous model is critically damped (fastest monotone approach).
    critical_beta_exact : float
        KL weight at which the exact recurrence becomes unstable, the others held:
        ``(a*/eta - curvature)/kl_curvature`` (the KL term adds stiffness); 0 if unstable without it.
    spectral_radius : float
        Per-step growth factor of the exact recurrence (< 1: stable).
    stable_continuous, stable_exact : bool
    on_threshold : bool
        ``eta K`` equals the exact critical value to rounding (relative 1e-9): neither stable nor unstable.
    recommendation : str
        Plain-language advice.
    """

    eta: float
    mu: float
    k_ref: int
    curvature: float
    beta: float
    kl_curvature: float
    lag: str
    momentum: str
    a: float
    mass: float
    damping: float
    stiffness: float
    damping_ratio: float
    regime: str
    time_to_90: float
    time_to_90_discrete: float
    settling_time: float
    critical_k_ref_continuous: float
    critical_k_ref_continuous_lag_model: float
    critical_k_ref_exact: float
    critical_a_continuous: float
    critical_a_exact: float
    critical_eta_continuous: float
    critical_eta_exact: float
    critically_damped_eta: float
    critical_beta_exact: float
    spectral_radius: float
    stable_continuous: bool
    stable_exact: bool
    on_threshold: bool
    recommendation: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready ``dict``: every field, with ``inf`` written as ``None`` (JSON has no infinity)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            out[f.name] = v
        return out

    def summary(self) -> str:
        """Multi-line human-readable report (what ``grpo-dynamics advise`` prints)."""
        mom = "heavy-ball" if self.momentum == "heavy_ball" else "EMA (Adam-style)"
        lines = [
            f"eta={_given(self.eta)}  mu={_given(self.mu)}  k_ref={self.k_ref}  curvature={_given(self.curvature)}  "
            f"beta={_given(self.beta)}   [{self.lag} lag, {mom} momentum]",
            f"  a = eta*K = {_g(self.a)} per step",
            "",
            "Continuous model  M e'' + C e' + K e = noise",
            f"  mass M = {_g(self.mass)}   damping C = {_g(self.damping)}   stiffness K = {_g(self.stiffness)}",
            f"  damping ratio zeta = {_g(self.damping_ratio)}  ->  {REGIME_LABELS[self.regime]}",
            f"  time to 90% of the plateau: {_steps(self.time_to_90)} (closed form), "
            f"{_discrete_steps(self.time_to_90_discrete, self.stable_exact)} (exact recurrence)",
            f"  settles within 10% after {_steps(self.settling_time)}",
            "",
            "Stability thresholds",
            f"  continuous (paper, eta*K*K_ref < {'1 - mu' if self.momentum == 'heavy_ball' else '1'}): "
            f"critical k_ref = {_g(self.critical_k_ref_continuous)}, "
            f"critical eta = {_g(self.critical_k_ref_continuous * self.eta / self.k_ref)}"
            + ("" if self.lag == "constant" else
               f"\n  continuous, refresh-lag model: critical k_ref = {_g(self.critical_k_ref_continuous_lag_model)}, "
               f"critical eta = {_g(self.critical_eta_continuous)}"),
            f"  exact discrete ({self.lag} lag): critical eta*K = {_g(self.critical_a_exact)} "
            f"(eta = {_g(self.critical_eta_exact)}), first unstable k_ref = {_k_ref_text(self.critical_k_ref_exact)}"
            + (f" ({self.k_ref} is on the threshold)" if self.on_threshold else "")
            + (f", critical beta = {_g(self.critical_beta_exact)}" if self.beta > 0 else ""),
            f"  exact per-step growth factor = {_factor(self.spectral_radius)}  ->  "
            f"{_verdict(self.stable_exact, self.spectral_radius)}",
            "",
            "Recommendation",
            *("  " + line for line in self.recommendation.splitlines()),
        ]
        return "\n".join(lines)


def _k_ref_text(k: float) -> str:
    """An exact critical k_ref for the report: the integer, 4 digits when huge, the search limit for inf."""
    if math.isinf(k):
        return f"none up to {K_REF_SEARCH_MAX:.3g} (the search limit; far past any run length)"
    return str(int(k)) if k < 1e6 else f"{k:.4g}"


def _g(x: float) -> str:
    if isinstance(x, float) and math.isinf(x):
        return "none" if x > 0 else "-inf"
    if isinstance(x, int):
        return str(x)
    return f"{x:.4g}"


def _steps(x: float) -> str:
    if math.isinf(x):
        return "never (no plateau)"
    return f"{x:.1f} steps" if x < 1e6 else f"{x:.4g} steps"


def _discrete_steps(x: float, stable: bool) -> str:
    # time_to_fraction(method="discrete") is inf both when unstable and past its simulated horizon
    if math.isinf(x) and stable:
        return f"more than {_MAX_DISCRETE_STEPS:,} steps"
    return _steps(x)


def _given(x: float) -> str:
    """A value the user typed, shown with all its digits (mu = 0.999999 must not print as 1)."""
    return _g(x) if isinstance(x, int) or math.isinf(x) else f"{x:.12g}"


def _on_threshold(rho: float) -> bool:
    """The exact growth factor is 1 to rounding: deviations neither decay nor grow."""
    return math.isfinite(rho) and abs(rho - 1.0) < 1e-9


def _verdict(stable: bool, rho: float) -> str:
    """``stable`` / ``UNSTABLE``, or the marginal case: on the threshold to rounding."""
    if _on_threshold(rho):
        return "on the threshold (to rounding): deviations neither decay nor grow"
    return "stable" if stable else "UNSTABLE"


def _factor(x: float) -> str:
    """A growth factor; one within 5e-4 of 1 is written ``1 + 3.4e-06`` (``.4g`` would print 1)."""
    if math.isfinite(x) and x != 1.0 and abs(x - 1.0) < 5e-4:
        return f"1 {'+' if x > 1 else '-'} {abs(x - 1.0):.3g}"
    return _g(x)


def advise(
    eta: Any,
    mu: Any,
    k_ref: Any,
    curvature: Any,
    beta: Any = 0.0,
    *,
    kl_curvature: Any = 1.0,
    lag: str = "constant",
    momentum: str = "heavy_ball",
) -> Advice:
    """Regime, time scales, thresholds and a recommendation for one hyperparameter setting.

    Parameters
    ----------
    eta : float
        Step size, ``> 0``.
    mu : float
        Momentum in ``[0, 1)``.
    k_ref : int
        Refresh interval (optimizer steps), integer ``>= 1``.
    curvature : float
        Curvature of the effective potential, ``> 0``.
    beta : float, default 0
        KL weight, ``>= 0``; adds ``beta * kl_curvature`` to the stiffness.
    kl_curvature : float, default 1
        See :func:`grpo_core.model.oscillator.coefficients`.
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    Advice

    Raises
    ------
    ParameterError
        Any invalid hyperparameter (the message names it and its allowed range); an ``eta`` so small
        (below about 1.9e-307 (1 - mu) / K) that the time to converge overflows float64
        (:func:`grpo_core.model.trajectories.check_time_scale`).

    References
    ----------
    Book chapter "From update rule to oscillator" (the model, both thresholds, the recommendation).

    Examples
    --------
    >>> from grpo_core.model.advice import advise
    >>> adv = advise(eta=0.01, mu=0.9, k_ref=4, curvature=1.0)
    >>> adv.regime, adv.stable_exact, round(adv.critical_k_ref_continuous, 6), adv.critical_k_ref_exact
    ('underdamped', True, 10.0, 12.0)
    """
    c = coefficients(eta, mu, k_ref, curvature, beta, kl_curvature=kl_curvature, lag=lag, momentum=momentum)
    check_time_scale(c, "eta")  # an eta near 1e-307: the time to converge is beyond the float range
    k_total = c.stiffness_per_eta
    a_cont_paper = float(critical_a_continuous(c.mu, 1, "constant", c.momentum)[()])  # = (1 - mu) or 1, per k_ref
    a_cont = float(critical_a_continuous(c.mu, c.k_ref, c.lag, c.momentum)[()])
    a_exact = float(critical_a_exact(c.mu, c.k_ref, c.lag, c.momentum)[()])
    a_damp = float(critical_a_damping(c.mu, c.k_ref, c.lag, c.momentum)[()])
    common = dict(eta=c.eta, mu=c.mu, curvature=c.curvature, beta=c.beta, kl_curvature=c.kl_curvature,
                  momentum=c.momentum)
    k_cont_lag = critical_value("k_ref", lag=c.lag, method="continuous", **common)
    k_exact = critical_value("k_ref", lag=c.lag, method="exact", **common)
    rho = float(spectral_radius(c.a, c.mu, c.k_ref, c.lag, c.momentum)[()])
    stable_exact = c.a < a_exact
    # a at the exact critical value to rounding: the given k_ref neither decays nor grows, so the
    # first unstable k_ref is the next one (a tiny a, whose factor is also 1 - 1e-12, is not this)
    on_threshold = math.isfinite(a_exact) and abs(c.a - a_exact) <= 1e-9 * a_exact
    if on_threshold:
        k_exact = float(c.k_ref + 1)
    adv = dict(
        eta=c.eta, mu=c.mu, k_ref=c.k_ref, curvature=c.curvature, beta=c.beta, kl_curvature=c.kl_curvature,
        lag=c.lag, momentum=c.momentum, a=c.a, mass=c.mass, damping=c.damping, stiffness=c.stiffness,
        damping_ratio=c.damping_ratio, regime=c.regime,
        time_to_90=time_to_fraction(c, 0.9), time_to_90_discrete=time_to_fraction(c, 0.9, method="discrete"),
        settling_time=settling_time(c, 0.1),
        critical_k_ref_continuous=a_cont_paper / c.a,
        critical_k_ref_continuous_lag_model=k_cont_lag,
        critical_k_ref_exact=k_exact,
        critical_a_continuous=a_cont, critical_a_exact=a_exact,
        critical_eta_continuous=a_cont / k_total, critical_eta_exact=a_exact / k_total,
        critically_damped_eta=a_damp / k_total,
        critical_beta_exact=max(0.0, (a_exact / c.eta - c.curvature) / c.kl_curvature),
        spectral_radius=rho, stable_continuous=c.stable, stable_exact=bool(stable_exact),
        on_threshold=bool(on_threshold),
    )
    adv["recommendation"] = _recommend(adv)
    return Advice(**adv)


def _recommend(v: dict[str, Any]) -> str:
    eta, eta_x, eta_cd = v["eta"], v["critical_eta_exact"], v["critically_damped_eta"]
    k_first = v["critical_k_ref_exact"]
    # the largest strictly stable k_ref: one below the given k_ref when that one is on the threshold
    on_edge = v["on_threshold"]
    k_last = k_first - (2 if on_edge else 1)
    k_stable = (f"beyond {K_REF_SEARCH_MAX:.3g} (the search limit; far past any run length)" if math.isinf(k_first)
                else _k_ref_text(k_last))
    lines = []
    if not v["stable_exact"] or on_edge:
        lines.append(
            (f"UNSTABLE: deviations grow by a factor {_factor(v['spectral_radius'])} per step. "
             if v["spectral_radius"] > 1.0 + 1e-9 else
             "ON THE THRESHOLD (to rounding): deviations neither decay nor grow. ")
            + "Lower eta below "
            f"{_g(eta_x)} (exact threshold at this mu and k_ref)"
            + (f" or k_ref to {k_stable} or less" if math.isfinite(k_first) and k_last >= 1 else "")
            + ", or lower mu."
        )
        lines.append(f"For a monotone approach to the plateau use eta <= {_g(eta_cd)} (critical damping).")
        return "\n".join(lines)
    margin = eta_x / eta
    lines.append(f"Stable: eta is {margin:.3g}x below the exact threshold ({_g(eta_x)}); "
                 f"the largest stable k_ref at this eta is {k_stable}.")
    if not v["stable_continuous"]:
        lines.append("The continuous model has no damping left (C <= 0): only the discrete update keeps it "
                     "bounded, so expect large, slowly decaying oscillations. Treat it as the edge of stability.")
    elif v["regime"] == "underdamped":
        lines.append(f"Oscillatory (zeta = {v['damping_ratio']:.3g}): the reward will overshoot the plateau and "
                     f"ring. For a monotone approach lower eta to {_g(eta_cd)} (critical damping), or lower mu "
                     "or k_ref.")
    elif v["regime"] == "critically_damped":
        lines.append("Critically damped: the fastest approach to the plateau without overshoot.")
    else:
        lines.append(f"Overdamped (zeta = {v['damping_ratio']:.3g}): monotone approach. eta can grow to "
                     f"{_g(eta_cd)} (critical damping, {eta_cd / eta:.3g}x) before the reward starts to overshoot.")
    if v["momentum"] == "heavy_ball" and v["mu"] > 0:
        lines.append("(Heavy-ball convention v = mu v + g. With Adam, mu is beta1: use --momentum ema.)")
    return "\n".join(lines)
