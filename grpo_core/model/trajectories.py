"""Trajectories of the oscillator: the closed-form response, the exact recurrence, time scales.

* :func:`closed_form_trajectory` (the continuous model's
  :func:`~grpo_core.model.oscillator.relaxation` with a configuration's coefficients) and :func:`discrete_trajectory`
  (the exact
  recurrence, deterministic: :func:`grpo_core.model.noise.simulate` without noise);
* time scales: :func:`time_to_fraction` (time to 90% of the plateau) and :func:`settling_time`.

Units: ``t`` in optimizer steps; ``e`` in reward units. Book chapter "From update rule to oscillator".
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_choice, check_real
from .noise import simulate
from .oscillator import OscillatorCoefficients, _check_coeffs, relaxation
from .stability import is_stable_exact

__all__ = [
    "closed_form_trajectory",
    "discrete_trajectory",
    "time_to_fraction",
    "settling_time",
]

# ----------------------------------------------------------------------------------------------
# Trajectories
# ----------------------------------------------------------------------------------------------


def closed_form_trajectory(coeffs: OscillatorCoefficients, t: Any, e0: float = 1.0) -> np.ndarray:
    r"""Mean trajectory ``e(t)`` of the continuous model from rest at ``e0``.

    ``e0 * relaxation(t, M, C, K_eff)`` with the coefficients of ``coeffs`` (every regime; a
    growing curve when unstable).

    Parameters
    ----------
    coeffs : OscillatorCoefficients
        From :func:`coefficients`.
    t : array_like
        Times in optimizer steps.
    e0 : float, default 1
        Initial deviation from the fixed point (reward units).

    Returns
    -------
    ndarray
        Shape of ``t``.

    Raises
    ------
    ParameterError
        ``coeffs`` of the wrong type, non-finite ``t`` or ``e0``.

    References
    ----------
    Our derivation, book chapter "From update rule to oscillator".

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.trajectories import closed_form_trajectory
    >>> c = coefficients(eta=0.01, mu=0.0, k_ref=1, curvature=1.0)
    >>> [round(float(x), 4) for x in closed_form_trajectory(c, [0, 100, 300])]
    [1.0, 0.3642, 0.0478]
    """
    coeffs = _check_coeffs(coeffs)
    e0 = check_real("e0", e0)
    return e0 * relaxation(t, coeffs.mass, coeffs.damping, coeffs.stiffness)


def discrete_trajectory(coeffs: OscillatorCoefficients, n_steps: int, e0: float = 1.0) -> np.ndarray:
    """Deterministic exact recurrence from rest (no noise): ``e_0 .. e_T``.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    n_steps : int
        ``T >= 1``.
    e0 : float, default 1

    Returns
    -------
    ndarray, shape (n_steps + 1,)

    Raises
    ------
    ParameterError
        ``coeffs`` not an :class:`~grpo_core.model.oscillator.OscillatorCoefficients`, ``n_steps < 1``
        (or too many steps to hold in memory), a non-finite ``e0``.

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.trajectories import discrete_trajectory
    >>> discrete_trajectory(coefficients(0.1, 0.0, 2, 1.0, lag="refresh"), 4).round(4).tolist()
    [1.0, 0.9, 0.8, 0.72, 0.64]
    """
    return simulate(_check_coeffs(coeffs), n_steps, 1, e0=e0)[0]


# ----------------------------------------------------------------------------------------------
# Time scales
# ----------------------------------------------------------------------------------------------

_FRACTION_METHODS = ("closed_form", "discrete")
_MAX_DISCRETE_STEPS = 10_000_000


def time_to_fraction(coeffs: OscillatorCoefficients, fraction: float = 0.9, method: str = "closed_form") -> float:
    r"""Time (optimizer steps) until the reward first covers ``fraction`` of the way to the plateau.

    First passage of :math:`e(t)/e_0` below ``1 - fraction`` (``fraction = 0.9``: "time to 90% of the
    plateau"). Underdamped curves pass it before overshooting; see :func:`settling_time` for when
    they stay within the band.

    * ``method="closed_form"``: the continuous model, solved with ``brentq``. The response is
      monotone until its first minimum (at ``t = pi / omega`` when underdamped), which brackets the
      root.
    * ``method="discrete"``: the first step ``k`` of the exact recurrence with ``e_k <= (1 - fraction) e0``.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    fraction : float, default 0.9
        In ``(0, 1)``.
    method : {"closed_form", "discrete"}

    Returns
    -------
    float
        Steps; ``inf`` when unstable (continuous ``C <= 0`` or exact instability, per method).

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``fraction`` outside ``(0, 1)``, unknown ``method``; coefficients whose time to
        converge overflows float64 (``eta`` below about 1.9e-307 (1 - mu) / K: :func:`check_time_scale`).

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator").

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.trajectories import time_to_fraction
    >>> c = coefficients(eta=0.01, mu=0.0, k_ref=1, curvature=1.0)
    >>> round(time_to_fraction(c), 2), time_to_fraction(c, method="discrete")
    (227.29, 227.0)
    """
    from scipy.optimize import brentq

    coeffs = _check_coeffs(coeffs)
    fraction = check_real("fraction", fraction, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    method = check_choice("method", method, _FRACTION_METHODS)
    level = 1.0 - fraction
    if method == "discrete":
        if not bool(is_stable_exact(coeffs.a, coeffs.mu, coeffs.k_ref, coeffs.lag, coeffs.momentum)):
            return math.inf
        horizon = int(min(_MAX_DISCRETE_STEPS, 2 * _estimate_time(coeffs, level) + 64))
        while True:
            path = discrete_trajectory(coeffs, horizon)
            hit = np.nonzero(path <= level)[0]
            if hit.size:
                return float(hit[0])
            if horizon >= _MAX_DISCRETE_STEPS:  # pragma: no cover - needs a ~1e-7 gain
                return math.inf
            horizon = min(_MAX_DISCRETE_STEPS, horizon * 4)
    if coeffs.damping <= 0:
        return math.inf
    check_time_scale(coeffs)
    m, c, k = coeffs.mass, coeffs.damping, coeffs.stiffness
    f = lambda t: float(relaxation(t, m, c, k)) - level  # noqa: E731
    disc = c * c - 4 * m * k
    if disc < 0:
        hi = math.pi * 2.0 * m / math.sqrt(-disc)  # first minimum of the response
    else:
        hi = max(1.0, _estimate_time(coeffs, level))
        while f(hi) > 0:
            hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-10, rtol=1e-12))


#: The time to converge is timed only where a few multiples of it are still floats (the root search
#: brackets it by doubling): the estimate times this factor must stay below 1.8e308.
_TIME_HEADROOM = 8.0


def check_time_scale(coeffs: OscillatorCoefficients, name: str = "coeffs") -> None:
    """Refuse coefficients whose time to converge is beyond the float range.

    A slow (overdamped) response relaxes at ``k / c`` per step for a small gain ``k = eta K`` (times
    ``1 - mu`` for EMA momentum), so the time to reach 90% of the plateau is about
    ``(ln 10 + 2) c / k`` steps (:func:`_estimate_time`; ``c = 1 - mu - ...``). With ``eta`` below
    about ``1.9e-307 (1 - mu) / K`` (heavy ball) that time, times 8, exceeds the largest float, 1.8e308.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    name : str
        The parameter the message blames (``"eta"`` for :func:`grpo_core.model.advice.advise`).

    Raises
    ------
    ParameterError
        The time exceeds ``1.8e308 / 8``; the message gives the least ``eta`` that can be timed.
    """
    coeffs = _check_coeffs(coeffs)
    if coeffs.damping <= 0:
        return
    t = _estimate_time(coeffs, 0.1)
    if math.isfinite(_TIME_HEADROOM * t):
        return
    per_gain = (1.0 if coeffs.momentum == "heavy_ball" else 1.0 - coeffs.mu) * coeffs.stiffness_per_eta
    least = _TIME_HEADROOM * (math.log(10.0) + 2.0) * (1.0 - coeffs.mu) / sys.float_info.max / per_gain
    given = f"`eta` = {coeffs.eta:.3g}" if name == "eta" else f"`{name}` (eta = {coeffs.eta:.3g})"
    raise ParameterError(
        name, f"{given} is too small to time: a = eta K = {coeffs.a:.3g} per step, and the time to reach 90% of "
        f"the plateau, about (ln 10 + 2) (1 - mu) / a steps, overflows float64 (1.8e308); eta must be at least "
        f"{least:.3g} at this curvature and mu")


def _estimate_time(coeffs: OscillatorCoefficients, level: float) -> float:
    """Rough time for the envelope of the continuous response to fall to ``level``."""
    m, c, k = coeffs.mass, coeffs.damping, coeffs.stiffness
    disc = c * c - 4 * m * k
    if c <= 0:
        return 1e3
    slow = 2 * k / (c + math.sqrt(disc)) if disc >= 0 else c / (2 * m)
    return (math.log(1.0 / level) + 2.0) / slow


def settling_time(coeffs: OscillatorCoefficients, tolerance: float = 0.1) -> float:
    r"""Time after which the continuous response stays within ``tolerance * |e0|`` of the plateau.

    Equal to :func:`time_to_fraction` with ``fraction = 1 - tolerance`` when the response is
    monotone (overdamped or critically damped). Underdamped: the extrema of ``e`` are at
    ``t_n = n pi / omega`` with ``|e(t_n)| = e0 exp(-gamma t_n)``; the last one above the band is
    followed by a monotone stretch in which the exit time is found with ``brentq``.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    tolerance : float, default 0.1
        Band half-width relative to ``e0``, in ``(0, 1)``.

    Returns
    -------
    float
        Steps; ``inf`` when unstable.

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``tolerance`` outside ``(0, 1)``.

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.trajectories import settling_time, time_to_fraction
    >>> c = coefficients(eta=0.05, mu=0.9, k_ref=1, curvature=1.0)  # underdamped
    >>> round(time_to_fraction(c), 1), round(settling_time(c), 1)
    (7.0, 86.2)
    """
    from scipy.optimize import brentq

    coeffs = _check_coeffs(coeffs)
    tolerance = check_real("tolerance", tolerance, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    if coeffs.damping <= 0:
        return math.inf
    m, c, k = coeffs.mass, coeffs.damping, coeffs.stiffness
    disc = c * c - 4 * m * k
    if disc >= 0:
        return time_to_fraction(coeffs, 1.0 - tolerance)
    gamma, omega = c / (2 * m), math.sqrt(-disc) / (2 * m)
    half = math.pi / omega
    if gamma * half < 1e-12:  # decays by less than 1e-12 per half period: never settles in practice
        return math.inf
    # last n with exp(-gamma t_n) > tol; -log(tol), as 1 / tol overflows for a subnormal tol
    n_last = math.floor(-math.log(tolerance) / (gamma * half))
    if math.exp(-gamma * n_last * half) <= tolerance:
        n_last -= 1
    if n_last < 0:  # pragma: no cover - the first extremum is e0 itself, always above the band
        return 0.0
    sign = (-1.0) ** n_last
    f = lambda t: sign * float(relaxation(t, m, c, k)) - tolerance  # noqa: E731
    return float(brentq(f, n_last * half, (n_last + 1) * half, xtol=1e-10, rtol=1e-12))
