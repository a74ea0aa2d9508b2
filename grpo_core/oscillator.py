"""The damped-oscillator model of GRPO training dynamics.

Near its fixed point ``p*`` the expected reward ``p`` of a policy trained with GRPO, heavy-ball
momentum ``mu`` and a behaviour policy that lags the current one, obeys (book chapter "From
update rule to oscillator")::

    M e'' + C e' + K_eff e = noise,        e = p - p*,   t in optimizer steps

This module holds everything that chapter computes:

* :func:`relaxation` -- the normalised step response ``e(t)/e0`` from rest in every regime,
  numerically stable through critical damping (the building block of the three-phase reward law);
* the exact discrete recurrence behind it and its trajectories (deterministic and stochastic,
  vectorised over seeds), with the exact stationary variance from a discrete Lyapunov equation.

Units: time ``t`` is in optimizer steps; ``e`` is in the units of the reward (for a 0/1 reward, a
probability); ``mass`` is in steps^2, ``damping`` in steps, ``stiffness`` dimensionless (per step^2
after dividing by the mass).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ParameterError
from .validation import check_array

__all__ = [
    "relaxation",
    "reward_curve",
]

#: Below this |x| the series of ``expm1(x)/x`` and ``sin(x)/x`` replace the direct quotients.
_SERIES_EPS = 1e-4


# ----------------------------------------------------------------------------------------------
# Closed-form step response
# ----------------------------------------------------------------------------------------------


def _expm1_over_x(x: np.ndarray) -> np.ndarray:
    """``expm1(x) / x`` with the value 1 at ``x = 0`` (series below ``_SERIES_EPS``); x <= 0 here."""
    small = np.abs(x) < _SERIES_EPS
    safe = np.where(small, 1.0, x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        direct = np.expm1(safe) / safe
    series = 1.0 + x / 2.0 + x * x / 6.0
    out = np.where(small, series, direct)
    # x = -inf (mass -> 0 limit): expm1(-inf)/-inf = 0.
    return np.where(np.isneginf(x), 0.0, out)


def _sinc(x: np.ndarray) -> np.ndarray:
    """``sin(x) / x`` with the value 1 at ``x = 0``."""
    small = np.abs(x) < _SERIES_EPS
    safe = np.where(small, 1.0, x)
    return np.where(small, 1.0 - x * x / 6.0, np.sin(safe) / safe)


def _broadcast_coefficients(t: Any, mass: Any, damping: Any, stiffness: Any):
    t = check_array("t", t)
    mass = check_array("mass", mass, low=0.0)
    damping = check_array("damping", damping)
    stiffness = check_array("stiffness", stiffness, low=0.0)
    if np.any((mass == 0) & (damping <= 0)):
        raise ParameterError(
            "damping", "`damping` must be > 0 where `mass` is 0 (the first-order limit needs a positive damping)"
        )
    try:
        return np.broadcast_arrays(t, mass, damping, stiffness)
    except ValueError:
        raise ParameterError(
            "t",
            f"`t`, `mass`, `damping` and `stiffness` must broadcast together; got shapes "
            f"{t.shape}, {mass.shape}, {damping.shape}, {stiffness.shape}",
        ) from None


def relaxation(t: Any, mass: Any, damping: Any, stiffness: Any) -> np.ndarray:
    r"""Normalised step response ``e(t) / e0`` of ``M e'' + C e' + K e = 0`` from rest.

    Solves :math:`M e'' + C e' + K e = 0` with :math:`e(0) = e_0`, :math:`e'(0) = 0` (the system is
    released from rest), in every regime, with one formula that stays accurate through critical
    damping (no ``0/0`` when the two roots meet) and in the first-order limit ``M -> 0``.

    With :math:`D = C^2 - 4MK`:

    * real roots (:math:`D \ge 0`; overdamped, critically damped, or growing when ``C < 0``):
      with :math:`r_A` the root of larger real part and :math:`r_B` the other,

      .. math:: e/e_0 = e^{r_A t}\,\bigl[1 - r_A\, t\, \varphi((r_B - r_A) t)\bigr],
                \qquad \varphi(x) = \frac{e^x - 1}{x},

      which equals :math:`(r_B e^{r_A t} - r_A e^{r_B t})/(r_B - r_A)` but never divides by the
      gap :math:`r_B - r_A`; at critical damping it is :math:`e^{-\gamma t}(1 + \gamma t)`;
    * complex roots (:math:`D < 0`; underdamped, or a growing oscillation when ``C < 0``): with
      :math:`\gamma = C/(2M)` and :math:`\omega = \sqrt{-D}/(2M)`,

      .. math:: e/e_0 = e^{-\gamma t}\,\bigl[\cos \omega t + \gamma\, t\, \mathrm{sinc}(\omega t)\bigr];

    * ``M = 0`` (first-order limit): :math:`e/e_0 = e^{-K t / C}`.

    For ``t < 0`` the system is at rest: the value is 1 (``e`` is continuous with a continuous
    slope at ``t = 0``), which makes delayed onsets easy to fit.

    Parameters
    ----------
    t : array_like
        Time in optimizer steps; any finite values (``t <= 0`` gives 1).
    mass : array_like
        Inertia ``M`` in steps^2, ``>= 0``. ``0`` selects the first-order limit.
    damping : array_like
        Damping ``C`` in steps; any finite value (``C <= 0`` makes the response grow). Must be
        ``> 0`` where ``mass`` is 0.
    stiffness : array_like
        Restoring strength ``K`` (dimensionless, per step), ``>= 0``. ``0`` gives ``e = e0``.

    All four broadcast together (numpy rules).

    Returns
    -------
    ndarray
        ``e(t) / e0``, float64, of the broadcast shape. Equal to 1 at ``t = 0``; tends to 0 when
        ``C > 0`` and ``K > 0``; grows without bound (possibly to ``inf``) when ``C < 0``.

    Raises
    ------
    ParameterError
        If any input is not finite, ``mass < 0``, ``stiffness < 0``, ``damping <= 0`` where
        ``mass == 0``, or the shapes do not broadcast.

    See Also
    --------
    reward_curve : the same response on the reward scale.

    Notes
    -----
    The general solution from rest is the DESIGN formula
    :math:`e_0 (l_+ e^{l_- t} - l_- e^{l_+ t}) / (l_+ - l_-)` with
    :math:`l_\pm = (-C \pm \sqrt{C^2 - 4MK}) / (2M)`. Written that way it loses all precision near
    critical damping (``l_+ ~ l_-``) and overflows for ``M -> 0``; the forms above are exact
    rewritings that do neither. The roots are computed with the cancellation-free quadratic formula
    (:math:`q = -(C + \operatorname{sign}(C)\sqrt{D})/2`, roots :math:`q/M` and :math:`K/q`).

    References
    ----------
    Our derivation; book chapter "From update rule to oscillator", section "Closed form".

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.oscillator import relaxation
    >>> t = np.array([0.0, 1.0, 5.0])
    >>> np.round(relaxation(t, mass=1.0, damping=2.0, stiffness=1.0), 6)  # critical: (1+t) e^-t
    array([1.      , 0.735759, 0.040428])
    >>> float(relaxation(3.0, 0.0, 2.0, 1.0)) == float(np.exp(-1.5))  # first-order limit
    True
    """
    t, mass, damping, stiffness = _broadcast_coefficients(t, mass, damping, stiffness)
    out = np.ones(t.shape)
    live = t > 0
    if not np.any(live):
        return out
    tt, m, c, k = t[live], mass[live], damping[live], stiffness[live]
    res = np.empty(tt.shape)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        first = m == 0
        disc = c * c - 4.0 * m * k
        real = (disc >= 0) & ~first
        cplx = (disc < 0) & ~first
        if np.any(first):
            res[first] = np.exp(-k[first] * tt[first] / c[first])
        if np.any(real):
            mr, cr, kr, tr = m[real], c[real], k[real], tt[real]
            sq = np.sqrt(disc[real])
            sign = np.where(cr >= 0, 1.0, -1.0)
            q = -(cr + sign * sq) / 2.0  # never 0 unless C = 0 and D = 0, i.e. K = 0 or M = 0
            q_safe = np.where(q == 0, 1.0, q)
            r1 = np.where(q == 0, 0.0, q / mr)
            r2 = np.where(q == 0, 0.0, kr / q_safe)
            r_a = np.maximum(r1, r2)
            r_b = np.minimum(r1, r2)
            res[real] = np.exp(r_a * tr) * (1.0 - r_a * tr * _expm1_over_x((r_b - r_a) * tr))
        if np.any(cplx):
            mc, cc, tc = m[cplx], c[cplx], tt[cplx]
            gamma = cc / (2.0 * mc)
            omega = np.sqrt(-disc[cplx]) / (2.0 * mc)
            res[cplx] = np.exp(-gamma * tc) * (np.cos(omega * tc) + gamma * tc * _sinc(omega * tc))
    out[live] = res
    return out


def reward_curve(t: Any, r0: Any, r_inf: Any, mass: Any, damping: Any, stiffness: Any) -> np.ndarray:
    r"""Reward on its own scale: ``R(t) = R_inf - (R_inf - R_0) * relaxation(t, M, C, K)``.

    The three-phase (inertial) reward law of the oscillator model: a zero initial slope (slow
    start), an inflection (rapid rise) and the plateau ``R_inf`` (or an overshoot and ringing when
    underdamped).

    Parameters
    ----------
    t : array_like
        Time in optimizer steps.
    r0 : array_like
        Reward at ``t = 0`` (and before), in reward units.
    r_inf : array_like
        Plateau (fixed point ``p*``), in reward units.
    mass, damping, stiffness : array_like
        Oscillator coefficients, see :func:`relaxation`.

    Returns
    -------
    ndarray
        Broadcast shape of all inputs, float64.

    Raises
    ------
    ParameterError
        Non-finite ``r0``/``r_inf`` or any error of :func:`relaxation`.

    References
    ----------
    DESIGN section 4 (the reward law); our derivation, book chapter "From update rule to
    oscillator".

    Examples
    --------
    >>> from grpo_core.oscillator import reward_curve
    >>> [round(float(x), 4) for x in reward_curve([0, 2, 50], 0.2, 0.8, 1.0, 2.0, 1.0)]
    [0.2, 0.5564, 0.8]
    """
    r0 = check_array("r0", r0)
    r_inf = check_array("r_inf", r_inf)
    return r_inf - (r_inf - r0) * relaxation(t, mass, damping, stiffness)
