"""The damped-oscillator model of GRPO training dynamics.

Near its fixed point ``p*`` the expected reward ``p`` of a policy trained with GRPO, heavy-ball
momentum ``mu`` and a behaviour policy that lags the current one, obeys (book chapter "From
update rule to oscillator")::

    M e'' + C e' + K_eff e = noise,        e = p - p*,   t in optimizer steps

This module holds everything that chapter computes:

* :func:`relaxation` -- the normalised step response ``e(t)/e0`` from rest in every regime,
  numerically stable through critical damping (the building block of the three-phase reward law);
* :func:`coefficients` -- mass, damping, stiffness, damping ratio and regime from the
  hyperparameters (``eta``, ``mu``, ``k_ref``, ``curvature``, ``beta``) for both lag models and both
  momentum conventions;
* the exact discrete recurrence behind it and its trajectories (deterministic and stochastic,
  vectorised over seeds), with the exact stationary variance from a discrete Lyapunov equation;
* time scales (time to 90% of the plateau, settling time).

The stability thresholds (continuous and exact discrete) live in :mod:`grpo_core.model.stability` and
are re-exported here (``oscillator.critical_a_exact is stability.critical_a_exact``); the
hyperparameter checks are in :mod:`grpo_core.model.hyperparameters`.

Units: time ``t`` is in optimizer steps; ``e`` is in the units of the reward (for a 0/1 reward, a
probability); ``mass`` is in steps^2, ``damping`` in steps, ``stiffness`` dimensionless (per step^2
after dividing by the mass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_broadcast, check_choice, check_integer, check_real
from .hyperparameters import (
    LAG_MODELS,
    MOMENTUM_STYLES,
    check_beta,
    check_curvature,
    check_eta,
    check_k_ref,
    check_kl_curvature,
    check_lag,
    check_momentum,
    check_mu,
)
from .stability import (
    _gain,
    critical_a_continuous,
    critical_a_damping,
    critical_a_exact,
    critical_value,
    is_stable_exact,
    lag_moments,
    monodromy,
    spectral_radius,
    threshold_table,
)

__all__ = [
    "LAG_MODELS",
    "MOMENTUM_STYLES",
    "REGIMES",
    "REGIME_LABELS",
    "CRITICAL_TOLERANCE",
    "DAMPING_ROUNDING",
    "relaxation",
    "reward_curve",
    "OscillatorCoefficients",
    "coefficients",
    "classify_regime",
    "lag_moments",
    "closed_form_trajectory",
    "simulate",
    "simulate_reference",
    "discrete_trajectory",
    "stationary_variance",
    "stationary_variance_exact",
    "variance_trajectory",
    "time_to_fraction",
    "settling_time",
    # re-exported from grpo_core.model.stability
    "critical_a_continuous",
    "critical_a_exact",
    "critical_a_damping",
    "monodromy",
    "spectral_radius",
    "is_stable_exact",
    "critical_value",
    "threshold_table",
]

#: Regime names (code form).
REGIMES = ("overdamped", "critically_damped", "underdamped", "unstable")
#: Regime names as printed in charts and reports.
REGIME_LABELS = {
    "overdamped": "overdamped",
    "critically_damped": "critically damped",
    "underdamped": "underdamped",
    "unstable": "unstable",
}
#: A damping ratio within this relative distance of 1 is called critically damped. The responses
#: of zeta = 1 and zeta = 1 +/- 1e-3 differ by less than 1e-3 of e0 at every time (a slider or
#: a fit cannot tell them apart), so finer distinctions would be noise.
CRITICAL_TOLERANCE = 1e-3
#: A damping ``|C| <= DAMPING_ROUNDING * (1 + mu + g d)`` is rounding residue of a setting exactly on
#: the continuous threshold (``1 - 0.99 - 0.01`` is 8.7e-18 in floating point) and is taken as 0.
DAMPING_ROUNDING = 8 * float(np.finfo(float).eps)
#: Largest memory :func:`simulate` allocates (its noise draws and trajectories); larger runs are
#: refused up front rather than failing inside numpy.
MAX_MEMORY_BYTES = 4 << 30

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
    The general solution from rest is
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
    >>> from grpo_core.model.oscillator import relaxation
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
    The reward law: our derivation, book chapter "From update rule to
    oscillator".

    Examples
    --------
    >>> from grpo_core.model.oscillator import reward_curve
    >>> [round(float(x), 4) for x in reward_curve([0, 2, 50], 0.2, 0.8, 1.0, 2.0, 1.0)]
    [0.2, 0.5564, 0.8]
    """
    r0 = check_array("r0", r0)
    r_inf = check_array("r_inf", r_inf)
    rel = relaxation(t, mass, damping, stiffness)
    r0, r_inf, _ = check_broadcast(r0=r0, r_inf=r_inf, t=rel)
    return r_inf - (r_inf - r0) * rel


# ----------------------------------------------------------------------------------------------
# Coefficients of the continuous model
# ----------------------------------------------------------------------------------------------


def classify_regime(damping_ratio: Any, damping: Any) -> np.ndarray:
    """Regime names from the damping ratio and the damping (vectorised).

    ``"unstable"`` when ``damping <= 0``; otherwise ``"critically_damped"`` when
    ``|damping_ratio - 1| <= CRITICAL_TOLERANCE``, ``"overdamped"`` above, ``"underdamped"`` below.

    Parameters
    ----------
    damping_ratio, damping : array_like
        Broadcast together.

    Returns
    -------
    ndarray of str
        Broadcast shape; values from :data:`REGIMES`.

    Raises
    ------
    ParameterError
        Non-finite input.

    Examples
    --------
    >>> from grpo_core.model.oscillator import classify_regime
    >>> classify_regime([2.0, 1.0, 0.3, -0.1], [1.0, 1.0, 1.0, -0.1]).tolist()
    ['overdamped', 'critically_damped', 'underdamped', 'unstable']
    """
    zeta = check_array("damping_ratio", damping_ratio)
    c = check_array("damping", damping)
    zeta, c = check_broadcast(damping_ratio=zeta, damping=c)
    out = np.where(zeta > 1.0, "overdamped", "underdamped").astype("<U17")
    out[np.abs(zeta - 1.0) <= CRITICAL_TOLERANCE] = "critically_damped"
    out[c <= 0] = "unstable"
    return out


@dataclass(frozen=True)
class OscillatorCoefficients:
    r"""Coefficients of ``M e'' + C e' + K_eff e = noise`` for one set of hyperparameters.

    Build it with :func:`coefficients`, which documents the maths. All times are optimizer steps.

    Attributes
    ----------
    eta, mu, k_ref, curvature, beta, kl_curvature, lag, momentum
        The hyperparameters it was built from.
    stiffness_per_eta : float
        Total stiffness per unit step size, ``curvature + beta * kl_curvature``.
    a : float
        ``eta * stiffness_per_eta``: restoring strength per step before momentum scaling
        (the ``a`` of the book's oscillator chapter and of :func:`critical_a_exact`).
    gain : float
        Per-step restoring gain of the recurrence: ``a`` (heavy ball) or ``(1 - mu) a`` (EMA).
    noise_gain : float
        Factor on ``eta * xi`` with which gradient noise enters ``e``: 1 (heavy ball) or ``1 - mu``.
    lag_mean, lag_mean_square : float
        Mean and mean squared gradient lag (steps, steps^2); see :func:`lag_moments`.
    mass : float
        ``M = (1 + mu + gain * lag_mean_square) / 2`` (steps^2).
    damping : float
        ``C = 1 - mu - gain * lag_mean`` (steps).
    stiffness : float
        ``K_eff = gain`` (dimensionless).
    damping_ratio : float
        ``zeta = C / (2 sqrt(M K_eff))``; negative when unstable.
    regime : str
        One of :data:`REGIMES`.
    """

    eta: float
    mu: float
    k_ref: int
    curvature: float
    beta: float
    kl_curvature: float
    lag: str
    momentum: str
    stiffness_per_eta: float
    a: float
    gain: float
    noise_gain: float
    lag_mean: float
    lag_mean_square: float
    mass: float
    damping: float
    stiffness: float
    damping_ratio: float
    regime: str

    @property
    def stable(self) -> bool:
        """Stability of the continuous model (``damping > 0``); see :func:`is_stable_exact` for the exact one."""
        return self.damping > 0

    @property
    def regime_label(self) -> str:
        """The regime as printed (``"critically damped"`` with a space)."""
        return REGIME_LABELS[self.regime]

    def as_dict(self) -> dict[str, Any]:
        """Plain ``dict`` of every field (JSON-ready)."""
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def coefficients(
    eta: Any,
    mu: Any,
    k_ref: Any,
    curvature: Any,
    beta: Any = 0.0,
    *,
    kl_curvature: Any = 1.0,
    lag: str = "constant",
    momentum: str = "heavy_ball",
) -> OscillatorCoefficients:
    r"""Oscillator coefficients (mass, damping, stiffness, damping ratio, regime) from hyperparameters.

    **The recurrence.** Linearise the mean-field update of the expected reward ``p`` around its
    fixed point ``p*`` (``e = p - p*``). The expected gradient pulls ``e`` back with strength
    :math:`a = \eta K` per step, where ``K`` is the stiffness of the effective potential. With
    heavy-ball momentum (``v = mu v + g``; ``theta -= eta v``) and a gradient that is ``d`` steps
    old:

    .. math:: e_{k+1} - e_k - \mu (e_k - e_{k-1}) = -g\, e_{k-d} + \text{noise},
              \qquad g = a \ \text{(heavy ball)},\quad g = (1 - \mu) a \ \text{(EMA)}.

    EMA momentum (``v = mu v + (1 - mu) g``, Adam's ``beta1``) is the same recurrence with the
    gradient scaled by ``1 - mu``: that is the whole difference between the two conventions.

    **Second-order Taylor expansion** in the step (delta = 1, expanded about step ``k``):
    :math:`e_{k+1} - e_k \approx e' + e''/2`, :math:`e_k - e_{k-1} \approx e' - e''/2`,
    :math:`e_{k-d} \approx e - d e' + d^2 e''/2`, which gives

    .. math:: M = \frac{1 + \mu + g\,\overline{d^2}}{2}, \qquad C = 1 - \mu - g\,\bar d, \qquad K_{eff} = g.

    * ``lag="constant"``: ``d = k_ref`` always (:math:`\bar d = K_{ref}`, :math:`\overline{d^2} = K_{ref}^2`):
      ``M = (1 + mu + a d^2)/2``, ``C = 1 - mu - a d``, ``K_eff = a``.
    * ``lag="refresh"`` (our derivation): the behaviour policy is refreshed every ``k_ref`` steps,
      so the lag cycles ``0, 1, ..., k_ref - 1``. Averaging the expansion over one cycle replaces
      ``d`` and ``d^2`` by their cycle means, :math:`\bar d = (K_{ref}-1)/2` and
      :math:`\overline{d^2} = (K_{ref}-1)(2K_{ref}-1)/6`. (Valid when ``e`` changes little within a
      cycle; the exact threshold of this lag model is :func:`critical_a_exact`.)

    Continuous stability is ``C > 0``: heavy ball with constant lag gives the paper's
    ``eta K K_ref < 1 - mu``; EMA momentum gives ``eta K K_ref < 1`` (``C = (1 - mu)(1 - a d)``).

    **How beta enters.** The KL penalty ``beta * KL(pi || pi_ref)`` adds its own curvature to the
    effective potential, so the stiffness per unit step size is

    .. math:: K = \text{curvature} + \beta \cdot \text{kl\_curvature}, \qquad a = \eta K.

    ``kl_curvature`` is the curvature of ``KL(pi || pi_ref)`` along the direction in which ``p``
    moves, i.e. the Fisher information of the policy in that direction. The default ``1.0`` is its
    exact value at ``pi = pi_ref`` in Fisher-normalised coordinates (where ``KL ~ |delta|^2 / 2``),
    the same coordinates in which ``curvature`` should then be expressed. ``beta = 0`` means
    ``curvature`` alone. Example of a fixed point held by the KL term only: the softmax bandit
    with the plain mean baseline has no reward curvature at ``p*`` and a total stiffness
    ``K = 2 beta p* (1 - p*)`` (book chapter "The bandit: where the mean field is exact") -- pass that measured ``K`` as ``curvature``
    with ``beta=0``.

    Parameters
    ----------
    eta : float
        Step size (learning rate), ``> 0``.
    mu : float
        Momentum coefficient, in ``[0, 1)``.
    k_ref : int
        Refresh interval of the behaviour policy (optimizer steps), integer ``>= 1``.
    curvature : float
        Curvature (stiffness scale) of the effective potential at the fixed point, ``> 0``.
    beta : float, default 0
        KL weight to the reference policy, ``>= 0``.
    kl_curvature : float, default 1.0
        Curvature of the KL term along the direction of motion, ``> 0`` (see above).
    lag : {"constant", "refresh"}
        Lag model of the behaviour policy.
    momentum : {"heavy_ball", "ema"}
        Momentum convention.

    Returns
    -------
    OscillatorCoefficients

    Raises
    ------
    ParameterError
        ``eta <= 0``, ``mu`` outside ``[0, 1)``, ``k_ref`` not an integer ``>= 1``,
        ``curvature <= 0``, ``beta < 0``, ``kl_curvature <= 0``, any NaN/inf, an unknown
        ``lag``/``momentum``, or a gain ``a = eta K`` that overflows or underflows float64.

    Notes
    -----
    The damping ratio is :math:`\zeta = C / (2\sqrt{M K_{eff}})`. Regimes: ``unstable`` if
    ``C <= 0``; otherwise ``critically_damped`` if :math:`|\zeta - 1| \le` :data:`CRITICAL_TOLERANCE`,
    ``overdamped`` above and ``underdamped`` below. The inertia ``M`` never destabilises the
    continuous model; the exact discrete recurrence can be unstable where ``C > 0`` (refresh lag,
    large ``a``) and stable where ``C <= 0`` (constant lag) -- see :func:`critical_a_exact`.

    References
    ----------
    Damped-oscillator paper (stated results: ``M e'' + C e' + K_eff e = sqrt(D/G) xi``, instability at
    ``K eta K_ref > 1 - mu``). The Taylor coefficients, the refresh-lag averaging,
    the EMA convention and the KL stiffness are our derivation (book chapter "From update rule to
    oscillator").

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> c = coefficients(eta=0.05, mu=0.5, k_ref=4, curvature=1.0)
    >>> round(c.mass, 4), round(c.damping, 4), c.stiffness, round(c.damping_ratio, 4), c.regime
    (1.15, 0.3, 0.05, 0.6255, 'underdamped')
    >>> coefficients(eta=0.2, mu=0.5, k_ref=4, curvature=1.0).regime
    'unstable'
    """
    eta = check_eta(eta)
    mu = check_mu(mu)
    k_ref = check_k_ref(k_ref)
    curvature = check_curvature(curvature)
    beta = check_beta(beta)
    kl_curvature = check_kl_curvature(kl_curvature)
    lag = check_lag(lag)
    momentum = check_momentum(momentum)
    k_total = curvature + beta * kl_curvature
    a = eta * k_total
    gain = float(_gain(a, mu, momentum))
    if not (math.isfinite(a) and gain > 0.0):
        raise ParameterError(
            "eta", f"`eta` * (`curvature` + `beta` * `kl_curvature`), the gain a = eta K per step, must be a finite "
            f"number > 0 in floating point; got {eta:g} * {k_total:g} = {a:g}")
    noise_gain = 1.0 if momentum == "heavy_ball" else 1.0 - mu
    d_mean, d_sq = (float(x) for x in lag_moments(k_ref, lag))
    mass = (1.0 + mu + gain * d_sq) / 2.0
    damping = 1.0 - mu - gain * d_mean
    if abs(damping) <= DAMPING_ROUNDING * (1.0 + mu + gain * d_mean):
        # rounding residue of 1 - mu - g d at the threshold (1 - 0.99 - 0.01 = 8.7e-18): exactly on it
        damping = 0.0
    zeta = damping / (2.0 * math.sqrt(mass) * math.sqrt(gain))  # two roots: mass * gain may overflow
    regime = str(classify_regime(zeta, damping))
    return OscillatorCoefficients(
        eta=eta, mu=mu, k_ref=k_ref, curvature=curvature, beta=beta, kl_curvature=kl_curvature,
        lag=lag, momentum=momentum, stiffness_per_eta=k_total, a=a, gain=gain, noise_gain=noise_gain,
        lag_mean=d_mean, lag_mean_square=d_sq, mass=mass, damping=damping, stiffness=gain,
        damping_ratio=zeta, regime=regime,
    )


# ----------------------------------------------------------------------------------------------
# Trajectories
# ----------------------------------------------------------------------------------------------


def _check_coeffs(coeffs: Any) -> OscillatorCoefficients:
    if not isinstance(coeffs, OscillatorCoefficients):
        raise ParameterError(
            "coeffs", f"`coeffs` must be an OscillatorCoefficients (from coefficients()); got {type(coeffs).__name__}"
        )
    return coeffs


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
    >>> from grpo_core.model.oscillator import coefficients, closed_form_trajectory
    >>> c = coefficients(eta=0.01, mu=0.0, k_ref=1, curvature=1.0)
    >>> [round(float(x), 4) for x in closed_form_trajectory(c, [0, 100, 300])]
    [1.0, 0.3642, 0.0478]
    """
    coeffs = _check_coeffs(coeffs)
    e0 = check_real("e0", e0)
    return e0 * relaxation(t, coeffs.mass, coeffs.damping, coeffs.stiffness)


def _noise_std_per_step(coeffs: OscillatorCoefficients, noise_scale: float, group_size: int) -> float:
    """Standard deviation of the noise added to ``e`` per step: ``noise_gain * eta * s / sqrt(G)``."""
    return coeffs.noise_gain * coeffs.eta * noise_scale / math.sqrt(group_size)


def _check_sim_args(n_steps, n_seeds, noise_scale, group_size, e0):
    return (
        check_integer("n_steps", n_steps, low=1),
        check_integer("n_seeds", n_seeds, low=1),
        check_real("noise_scale", noise_scale, low=0.0),
        check_integer("group_size", group_size, low=1),
        check_real("e0", e0),
    )


def _rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(check_integer("seed", seed, low=0))


def _noise_array(noise: Any, seed: Any, shape: tuple[int, int, int], noise_scale: float, squeeze: bool) -> np.ndarray:
    """Standard normals of shape (C, S, T): given (validated), drawn from ``seed``, or zeros."""
    if noise is not None:
        want = shape[1:] if squeeze else shape
        arr = check_array("noise", noise)
        if arr.shape != want:
            raise ParameterError("noise", f"`noise` must have shape {want} (seeds x steps); got {arr.shape}")
        return arr.reshape(shape)
    if noise_scale == 0:
        return np.zeros(shape)
    return _rng(seed).standard_normal(shape)


def _simulate_constant(gain: float, mu: float, d: int, sigma: float, e0: float, noise: np.ndarray) -> np.ndarray:
    """Constant-lag recurrence for all seeds at once, as an IIR filter (scipy.signal.lfilter).

    ``e[k+1] = (1+mu) e[k] - mu e[k-1] - gain e[k-d] + sigma w[k]`` with ``e[j] = e0`` for j <= 0.
    noise: (S, T) standard normals -> returns (S, T+1).
    """
    from scipy.signal import lfilter, lfiltic

    den = np.zeros(d + 2)
    den[0], den[1] = 1.0, -(1.0 + mu)
    den[2] += mu
    den[d + 1] += gain
    zi = lfiltic([1.0], den, y=np.full(d + 1, e0))
    n_seeds, n_steps = noise.shape
    out = np.empty((n_seeds, n_steps + 1))
    out[:, 0] = e0
    with np.errstate(over="ignore", invalid="ignore"):
        # the noise scale sits in the numerator: no scaled copy of the noise
        out[:, 1:], _ = lfilter([sigma], den, noise, axis=-1, zi=np.tile(zi, (n_seeds, 1)))
    return out


def _simulate_refresh(gain: float, mu: float, k: int, sigma: float, e0: float, noise: np.ndarray) -> np.ndarray:
    """Refresh-lag recurrence for all seeds at once, lifted to one cycle (no loop over time).

    Within a cycle starting at ``s = cK`` the snapshot ``e_s`` is fixed, so
    ``e_{s+j} = A_j e_s + B_j e_{s-1} + N_{c,j}`` with ``(A_j, B_j)`` the deterministic response
    (``j`` steps of the recurrence from the basis states) and ``N_{c,j}`` the response of the free
    heavy ball to the cycle's noise (``K`` vector steps over all seeds and cycles at once).
    The cycle states ``x_c = (e_s, e_{s-1})`` obey ``x_{c+1} = Phi x_c + n_c``; by Cayley-Hamilton
    each component obeys ``x_{c+2} = tr x_{c+1} - det x_c + n_{c+1} + (Phi - tr I) n_c``, a second
    ``lfilter``. noise: (S, T) standard normals -> returns (S, T+1).
    """
    from scipy.signal import lfilter, lfiltic

    n_seeds, n_steps = noise.shape
    n_cyc = -(-(n_steps + 1) // k)  # cycles covering e_0 .. e_T
    padded = np.zeros((n_seeds, n_cyc * k))
    padded[:, :n_steps] = sigma * noise
    w = np.ascontiguousarray(padded.reshape(n_seeds, n_cyc, k).transpose(2, 0, 1))  # (K, S, C)
    # deterministic responses A_j, B_j (j = 0..K) from (e_s, e_{s-1}) = (1, 0) and (0, 1)
    resp = np.empty((k + 1, 2))
    cur, prev = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    snap = cur.copy()
    resp[0] = cur
    for j in range(k):
        cur, prev = cur + mu * (cur - prev) - gain * snap, cur
        resp[j + 1] = cur
    (p00, p01), (p10, p11) = resp[k], resp[k - 1]  # one-cycle map: rows e_{s+K}, e_{s+K-1}
    tr, det = p00 + p11, p00 * p11 - p01 * p10
    with np.errstate(over="ignore", invalid="ignore"):
        # noise response inside every cycle at once (free heavy ball from rest): K vector steps,
        # each over all (seed, cycle) pairs
        big_n = np.empty((k + 1, n_seeds, n_cyc))
        big_n[0] = 0.0
        big_n[1] = w[0]
        for j in range(1, k):
            big_n[j + 1] = (1.0 + mu) * big_n[j] - mu * big_n[j - 1] + w[j]
        n_k, n_k1 = big_n[k], big_n[k - 1]
        u = np.empty((n_seeds, n_cyc))  # e at cycle starts
        v = np.empty((n_seeds, n_cyc))  # e one step before
        u[:, 0] = v[:, 0] = e0
        if n_cyc > 1:
            u[:, 1] = (p00 + p01) * e0 + n_k[:, 0]
            v[:, 1] = (p10 + p11) * e0 + n_k1[:, 0]
        if n_cyc > 2:
            den = np.array([1.0, -tr, det])
            # lfiltic is linear in the past outputs: build the basis once, combine for all seeds
            z1, z0 = lfiltic([1.0], den, y=[1.0, 0.0]), lfiltic([1.0], den, y=[0.0, 1.0])
            drive_u = n_k[:, 1:-1] + (p00 - tr) * n_k[:, :-2] + p01 * n_k1[:, :-2]
            drive_v = n_k1[:, 1:-1] + p10 * n_k[:, :-2] + (p11 - tr) * n_k1[:, :-2]
            for x, drive in ((u, drive_u), (v, drive_v)):
                zi = x[:, 1, None] * z1 + x[:, 0, None] * z0
                x[:, 2:], _ = lfilter([1.0], den, drive, axis=-1, zi=zi)
        e = np.empty((n_seeds, n_cyc, k))
        for j in range(k):
            e[:, :, j] = resp[j, 0] * u + resp[j, 1] * v + big_n[j]
    return e.reshape(n_seeds, n_cyc * k)[:, : n_steps + 1]


def simulate(
    coeffs: OscillatorCoefficients | Any,
    n_steps: int,
    n_seeds: int = 1,
    *,
    noise_scale: float = 0.0,
    group_size: int = 1,
    e0: float = 1.0,
    seed: Any = 0,
    noise: Any = None,
) -> np.ndarray:
    r"""Exact discrete recurrence with per-step gradient noise, vectorised over seeds (and configurations).

    Each step (``g`` the gain, ``d_k`` the lag of step ``k``: ``k_ref`` for ``lag="constant"``,
    ``k mod k_ref`` for ``lag="refresh"``):

    .. math:: e_{k+1} = e_k + \mu (e_k - e_{k-1}) - g\, e_{k - d_k}
              - c\, \eta\, \xi_k, \qquad \xi_k \sim \mathcal N(0, s^2 / G),

    with ``c = 1`` (heavy ball) or ``1 - mu`` (EMA), started from rest: ``e_j = e0`` for ``j <= 0``.
    ``xi_k`` is the gradient noise of one step along the slow direction: ``s`` the per-sample
    standard deviation (``noise_scale``; fold the number of prompts per step into it), ``G`` the group
    size. Noise draws are independent across steps (a fresh batch each step).

    Implementation: one array program per configuration, no Python loop over seeds or steps. The
    constant lag is a linear IIR filter, run for all seeds at once by :func:`scipy.signal.lfilter`.
    The refresh lag is periodic; lifted to one cycle it becomes linear time-invariant: the noise
    response inside every cycle is computed for all cycles at once (``k_ref`` vector steps), and
    the states at the cycle starts follow a 2 x 2 linear recursion that Cayley-Hamilton turns into
    two ``lfilter`` calls. The noise is drawn as one array of shape ``(n_seeds, n_steps)``
    (``(C, n_seeds, n_steps)`` for ``C`` configurations); :func:`simulate_reference`, a plain
    Python loop drawing the same numbers one at a time, gives the same trajectories (to rounding).

    Parameters
    ----------
    coeffs : OscillatorCoefficients or sequence of them
        From :func:`coefficients`. Several configurations are simulated together.
    n_steps : int
        Number of optimizer steps ``T``, ``>= 1``.
    n_seeds : int, default 1
        Independent runs ``S``, ``>= 1``.
    noise_scale : float, default 0
        Per-sample gradient noise ``s`` (``>= 0``; 0 gives the deterministic recurrence).
    group_size : int, default 1
        Completions per prompt ``G``, ``>= 1``.
    e0 : float, default 1
        Initial deviation (reward units).
    seed : int, numpy Generator or None, default 0
        Seed of :func:`numpy.random.default_rng` (or a Generator to draw from).
    noise : array_like, optional
        Standard normal draws to use instead of drawing: shape ``(S, T)`` for one configuration,
        ``(C, S, T)`` for several (common random numbers, e.g. to compare group sizes on the same
        draws). ``seed`` is then ignored.

    Returns
    -------
    ndarray
        ``(S, T + 1)`` for one configuration, ``(C, S, T + 1)`` for a sequence of ``C``; column 0 is
        ``e0``. Memory: ``8 C S (T + 1)`` bytes.

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``n_steps < 1``, ``n_seeds < 1``, ``noise_scale < 0``, ``group_size < 1``,
        non-finite ``e0``, negative ``seed``; a run needing more than :data:`MAX_MEMORY_BYTES`
        (4 GiB).

    Warns
    -----
    RuntimeWarning
        If an unstable configuration overflows float64 (its trajectory then holds ``inf``/``nan``).

    References
    ----------
    Recurrence with per-step noise ``s^2/G``: book chapter "From update rule to oscillator".

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, simulate
    >>> c = coefficients(eta=0.05, mu=0.5, k_ref=2, curvature=1.0)
    >>> paths = simulate(c, n_steps=1000, n_seeds=64, noise_scale=1.0, group_size=4, seed=1)
    >>> paths.shape
    (64, 1001)
    >>> simulate(c, n_steps=3).round(6).tolist()  # deterministic recurrence
    [[1.0, 0.95, 0.875, 0.7875]]
    """
    single = isinstance(coeffs, OscillatorCoefficients)
    confs = [coeffs] if single else [_check_coeffs(c) for c in coeffs]
    if not confs:
        raise ParameterError("coeffs", "`coeffs` must hold at least one configuration")
    n_steps, n_seeds, noise_scale, group_size, e0 = _check_sim_args(n_steps, n_seeds, noise_scale, group_size, e0)
    n_conf = len(confs)
    need = 16 * n_conf * n_seeds * (n_steps + 1)  # the noise draws and the trajectories, float64
    if need > MAX_MEMORY_BYTES:
        raise ParameterError("n_steps", f"`n_steps` ({n_steps}) x `n_seeds` ({n_seeds}) x configurations ({n_conf}) "
                                        f"needs about {need / 2**30:.3g} GiB (limit {MAX_MEMORY_BYTES / 2**30:g} GiB): "
                                        "lower `n_steps` or `n_seeds`, or simulate in chunks of seeds")
    noise = _noise_array(noise, seed, (n_conf, n_seeds, n_steps), noise_scale, squeeze=single)
    sigma = np.array([_noise_std_per_step(c, noise_scale, group_size) for c in confs])
    kernels = {"constant": _simulate_constant, "refresh": _simulate_refresh}
    runs = [kernels[c.lag](c.gain, c.mu, c.k_ref, sigma[i], e0, noise[i]) for i, c in enumerate(confs)]
    out = runs[0] if single else np.stack(runs)
    if not np.all(np.isfinite(out)):
        import warnings

        warnings.warn(
            "simulate: an unstable configuration overflowed float64; its trajectory holds inf/nan "
            "after the overflow step", RuntimeWarning, stacklevel=2,
        )
    return out


def simulate_reference(
    coeffs: OscillatorCoefficients,
    n_steps: int,
    n_seeds: int = 1,
    *,
    noise_scale: float = 0.0,
    group_size: int = 1,
    e0: float = 1.0,
    seed: Any = 0,
    noise: Any = None,
) -> np.ndarray:
    """Plain Python loop over seeds and steps: the readable definition of :func:`simulate`.

    The obvious simulator: for each seed, for each step, draw the gradient noise and apply the
    recurrence with an explicit lag history. It draws the noise one number at a time from the same
    generator, in the same order as :func:`simulate`'s array draw (seed by seed, step by step), so both
    return the same numbers (or it uses ``noise`` when given). It is the reference of the equivalence
    tests and the baseline of ``bench/bench_oscillator.py``; use :func:`simulate` for real work.

    Parameters
    ----------
    coeffs, n_steps, n_seeds, noise_scale, group_size, e0, seed, noise
        As in :func:`simulate` (one configuration).

    Returns
    -------
    ndarray, shape (n_seeds, n_steps + 1)

    Raises
    ------
    ParameterError
        As :func:`simulate`.

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, simulate, simulate_reference
    >>> c = coefficients(eta=0.05, mu=0.5, k_ref=3, curvature=1.0, lag="refresh")
    >>> bool(np.allclose(simulate_reference(c, 50, 3, noise_scale=1.0, seed=2),
    ...                  simulate(c, 50, 3, noise_scale=1.0, seed=2)))
    True
    """
    coeffs = _check_coeffs(coeffs)
    n_steps, n_seeds, noise_scale, group_size, e0 = _check_sim_args(n_steps, n_seeds, noise_scale, group_size, e0)
    given = None if noise is None else _noise_array(noise, seed, (1, n_seeds, n_steps), noise_scale, squeeze=True)[0]
    rng = _rng(seed) if given is None and noise_scale > 0 else None
    sigma = _noise_std_per_step(coeffs, noise_scale, group_size)
    g, mu, k_ref, refresh = coeffs.gain, coeffs.mu, coeffs.k_ref, coeffs.lag == "refresh"
    out = np.empty((n_seeds, n_steps + 1))
    for s in range(n_seeds):
        row = given[s].tolist() if given is not None else None
        hist = [e0]  # hist[j] = e_j for j >= 0; e_j = e0 for j < 0
        e_prev, e, snap = e0, e0, e0
        for k in range(n_steps):
            if refresh:
                if k % k_ref == 0:
                    snap = e
                lagged = snap
            else:
                lagged = hist[k - k_ref] if k >= k_ref else e0
            if row is not None:
                w = row[k]
            elif rng is not None:
                w = rng.standard_normal()
            else:
                w = 0.0
            e_next = e + mu * (e - e_prev) - g * lagged + sigma * w
            e_prev, e = e, e_next
            hist.append(e)
        out[s] = hist
    return out


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
        As :func:`simulate`.

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, discrete_trajectory
    >>> discrete_trajectory(coefficients(0.1, 0.0, 2, 1.0, lag="refresh"), 4).round(4).tolist()
    [1.0, 0.9, 0.8, 0.72, 0.64]
    """
    return simulate(_check_coeffs(coeffs), n_steps, 1, e0=e0)[0]


# ----------------------------------------------------------------------------------------------
# Stationary variance
# ----------------------------------------------------------------------------------------------


def stationary_variance(coeffs: OscillatorCoefficients, noise_scale: float, group_size: int) -> float:
    r"""Stationary variance of ``e`` in the continuous model: :math:`\sigma^2 / (2 C K_{eff})`.

    With per-step noise variance :math:`\sigma^2 = c^2 \eta^2 s^2 / G` (``c`` the noise gain: 1 for heavy
    ball, ``1 - mu`` for EMA), the stationary variance of :math:`M e'' + C e' + K e = \sigma \xi` is
    :math:`\sigma^2/(2 C K)`; for heavy ball this is the formula

    .. math:: \mathrm{Var}(e) \approx \frac{\eta^2 s^2}{2\, G\, a\, C}:

    proportional to ``1/G``, independent of the mass, diverging as ``C -> 0``.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    noise_scale : float
        Per-sample gradient noise ``s``, ``>= 0``.
    group_size : int
        ``G >= 1``.

    Returns
    -------
    float
        Reward units squared; ``inf`` when the continuous model is unstable (``C <= 0``).

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``noise_scale < 0`` or ``group_size < 1``.

    See Also
    --------
    stationary_variance_exact : the exact value for the discrete recurrence.

    References
    ----------
    Damped-oscillator paper (stated: fluctuation proportional to 1/G); book chapter "From update rule to oscillator".

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, stationary_variance
    >>> c = coefficients(eta=0.02, mu=0.0, k_ref=1, curvature=1.0)
    >>> round(stationary_variance(c, noise_scale=1.0, group_size=4), 8)
    0.00255102
    """
    coeffs = _check_coeffs(coeffs)
    noise_scale = check_real("noise_scale", noise_scale, low=0.0)
    group_size = check_integer("group_size", group_size, low=1)
    if coeffs.damping <= 0:
        return math.inf
    sigma2 = _noise_std_per_step(coeffs, noise_scale, group_size) ** 2
    return sigma2 / (2.0 * coeffs.damping * coeffs.stiffness)


def _step_maps(coeffs: OscillatorCoefficients) -> tuple[list[np.ndarray], np.ndarray]:
    """Per-step state maps of the recurrence (one per phase of the cycle) and the noise input vector.

    Constant lag: state ``(e_k, e_{k-1}, ..., e_{k-d})`` (dimension d + 1), one map.
    Refresh lag: state ``(e_k, e_{k-1}, snap)``; the map of phase 0 first copies ``e_k`` into ``snap``.
    """
    g, mu = coeffs.gain, coeffs.mu
    if coeffs.lag == "constant":
        d = coeffs.k_ref
        n = d + 1
        a = np.zeros((n, n))
        a[0, 0], a[0, 1] = 1.0 + mu, -mu
        a[0, d] -= g
        a[np.arange(1, n), np.arange(0, n - 1)] = 1.0
        b = np.zeros(n)
        b[0] = 1.0
        return [a], b
    step = np.array([[1.0 + mu, -mu, -g], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    reset = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    maps = [step @ reset] + [step] * (coeffs.k_ref - 1)
    return maps, np.array([1.0, 0.0, 0.0])


def stationary_variance_exact(coeffs: OscillatorCoefficients, noise_scale: float, group_size: int) -> float:
    r"""Exact stationary variance of ``e`` for the discrete recurrence (discrete Lyapunov equation).

    Write the recurrence in companion form :math:`x_{k+1} = A x_k + b\,\sigma w_k`. For constant lag
    the stationary covariance solves :math:`P = A P A^\top + \sigma^2 b b^\top` and
    :math:`\mathrm{Var}(e) = P_{00}` (:func:`scipy.linalg.solve_discrete_lyapunov`). The refresh-lag
    recurrence is periodic: solve the Lyapunov equation of the one-cycle map (with the noise of a
    whole cycle accumulated), propagate it through the ``k_ref`` phases, and return the average of
    ``Var(e)`` over the phases (the long-run time average a simulation measures).

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    noise_scale : float
        Per-sample gradient noise ``s``, ``>= 0``.
    group_size : int
        ``G >= 1``.

    Returns
    -------
    float
        Reward units squared; ``inf`` when the recurrence is unstable (exactly).

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``noise_scale < 0`` or ``group_size < 1``.

    Notes
    -----
    Cost ``O(k_ref^3)`` for constant lag (state dimension ``k_ref + 1``), ``O(k_ref)`` for refresh.
    The continuous :func:`stationary_variance` is its small-``a`` limit.

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator", noise section).

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, stationary_variance_exact
    >>> c = coefficients(eta=0.02, mu=0.0, k_ref=1, curvature=1.0)
    >>> round(stationary_variance_exact(c, noise_scale=1.0, group_size=4), 8)
    0.00257628
    """
    from scipy.linalg import solve_discrete_lyapunov

    coeffs = _check_coeffs(coeffs)
    noise_scale = check_real("noise_scale", noise_scale, low=0.0)
    group_size = check_integer("group_size", group_size, low=1)
    if not bool(is_stable_exact(coeffs.a, coeffs.mu, coeffs.k_ref, coeffs.lag, coeffs.momentum)):
        return math.inf
    sigma2 = _noise_std_per_step(coeffs, noise_scale, group_size) ** 2
    maps, b = _step_maps(coeffs)
    q = sigma2 * np.outer(b, b)
    if len(maps) == 1:
        return float(solve_discrete_lyapunov(maps[0], q)[0, 0])
    phi = np.eye(len(b))
    q_cycle = np.zeros_like(q)
    for a in maps:
        phi = a @ phi
        q_cycle = a @ q_cycle @ a.T + q
    p = solve_discrete_lyapunov(phi, q_cycle)
    total = 0.0
    for a in maps:  # P at the start of each phase
        total += p[0, 0]
        p = a @ p @ a.T + q
    return float(total / len(maps))


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
        Bad ``coeffs``, ``fraction`` outside ``(0, 1)``, unknown ``method``.

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator").

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, time_to_fraction
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
    >>> from grpo_core.model.oscillator import coefficients, settling_time, time_to_fraction
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
    n_last = math.floor(math.log(1.0 / tolerance) / (gamma * half))  # last n with exp(-gamma t_n) > tol
    if math.exp(-gamma * n_last * half) <= tolerance:
        n_last -= 1
    if n_last < 0:  # pragma: no cover - the first extremum is e0 itself, always above the band
        return 0.0
    sign = (-1.0) ** n_last
    f = lambda t: sign * float(relaxation(t, m, c, k)) - tolerance  # noqa: E731
    return float(brentq(f, n_last * half, (n_last + 1) * half, xtol=1e-10, rtol=1e-12))


def variance_trajectory(
    coeffs: OscillatorCoefficients, n_steps: int, noise_scale: float, group_size: int
) -> np.ndarray:
    r"""Exact variance of ``e_k`` over seeds at every step, from a deterministic start.

    Propagates the covariance of the companion-form state, :math:`P_{k+1} = A_k P_k A_k^\top +
    \sigma^2 b b^\top` from :math:`P_0 = 0` (every run starts at ``e0``; only the noise spreads them),
    and returns :math:`P_k[0, 0]`. It tends to :func:`stationary_variance_exact` (cycle-averaged for
    the refresh lag) when the recurrence is stable.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    n_steps : int
        ``T >= 1``.
    noise_scale : float
        Per-sample gradient noise ``s``, ``>= 0``.
    group_size : int
        ``G >= 1``.

    Returns
    -------
    ndarray, shape (n_steps + 1,)
        Reward units squared; entry 0 is 0. An unstable setting grows without bound: past
        float64's range the entries are ``inf`` (never NaN).

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``n_steps < 1``, ``noise_scale < 0``, ``group_size < 1``.

    Warns
    -----
    RuntimeWarning
        If the variance overflows float64 (an unstable setting).

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator", noise section).

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, variance_trajectory
    >>> c = coefficients(eta=0.1, mu=0.0, k_ref=1, curvature=1.0)
    >>> variance_trajectory(c, 3, noise_scale=1.0, group_size=1).round(6).tolist()
    [0.0, 0.01, 0.02, 0.0281]
    """
    coeffs = _check_coeffs(coeffs)
    n_steps = check_integer("n_steps", n_steps, low=1)
    noise_scale = check_real("noise_scale", noise_scale, low=0.0)
    group_size = check_integer("group_size", group_size, low=1)
    sigma2 = _noise_std_per_step(coeffs, noise_scale, group_size) ** 2
    maps, b = _step_maps(coeffs)
    q = sigma2 * np.outer(b, b)
    p = np.zeros_like(q)
    out = np.empty(n_steps + 1)
    out[0] = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(n_steps):
            a = maps[k % len(maps)]
            p = a @ p @ a.T + q
            out[k + 1] = p[0, 0]
    bad = ~np.isfinite(out)
    if bad.any():
        # a variance is >= 0: once it overflowed (inf - inf made NaN in the products) it is inf
        out[int(np.argmax(bad)):] = np.inf
        import warnings

        warnings.warn(f"variance_trajectory: the variance overflowed float64 at step {int(np.argmax(bad))} "
                      "(an unstable setting); it is inf from there", RuntimeWarning, stacklevel=2)
    return out
