"""The damped-oscillator model of GRPO training dynamics: its coefficients and its regime.

Near its fixed point ``p*`` the expected reward ``p`` of a policy trained with GRPO, heavy-ball
momentum ``mu`` and a behaviour policy that lags the current one, obeys (book chapter "From
update rule to oscillator")::

    M e'' + C e' + K_eff e = noise,        e = p - p*,   t in optimizer steps

This module holds the model's coefficients and its classification:

* :func:`coefficients` -- mass, damping, stiffness, damping ratio and regime from the
  hyperparameters (``eta``, ``mu``, ``k_ref``, ``curvature``, ``beta``) for both lag models and both
  momentum conventions;
* :func:`relaxation` -- the normalised step response ``e(t)/e0`` from rest in every regime,
  numerically stable through critical damping (the building block of the three-phase reward law),
  and :func:`reward_curve`;
* :func:`classify_regime` -- the continuous model's regime from the damping ratio and damping;
* :func:`regime_verdict` -- THE verdict shown to a reader, which combines that regime with the
  exact recurrence's stability (``"unstable"``, the regime, or ``"stable_exact_only"``).

The trajectories (closed form, exact recurrence, time scales) are in
:mod:`grpo_core.model.trajectories`, the noisy simulation and variances in
:mod:`grpo_core.model.noise`, the thresholds in :mod:`grpo_core.model.stability`.

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
from ..validation import check_array, check_broadcast
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
from .stability import _gain, is_stable_exact, lag_moments

__all__ = [
    "LAG_MODELS",
    "MOMENTUM_STYLES",
    "REGIMES",
    "REGIME_LABELS",
    "VERDICTS",
    "VERDICT_LABELS",
    "CRITICAL_TOLERANCE",
    "DAMPING_ROUNDING",
    "relaxation",
    "reward_curve",
    "OscillatorCoefficients",
    "coefficients",
    "classify_regime",
    "regime_verdict",
    "coefficients_verdict",
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
    ``K = 2 beta p* (1 - p*)`` (book chapter "The bandit: where the mean field is exact") -- pass that measured ``K``
    as ``curvature``
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


def _check_coeffs(coeffs: Any) -> OscillatorCoefficients:
    if not isinstance(coeffs, OscillatorCoefficients):
        raise ParameterError(
            "coeffs", f"`coeffs` must be an OscillatorCoefficients (from coefficients()); got {type(coeffs).__name__}"
        )
    return coeffs


#: Verdicts of :func:`regime_verdict` (code form): a regime, or stable only by the exact recurrence.
VERDICTS = ("overdamped", "critically_damped", "underdamped", "stable_exact_only", "unstable")
#: Verdicts as printed in charts and explorers.
VERDICT_LABELS = {**REGIME_LABELS, "stable_exact_only": "stable (exact recurrence only)"}


def regime_verdict(regime: Any, stable_exact: Any) -> Any:
    """The one regime verdict: the exact recurrence decides stability, the continuous model the regime.

    ``"unstable"`` where the exact recurrence is unstable; the continuous regime where both models
    are stable; ``"stable_exact_only"`` where the exact recurrence is stable past the continuous
    threshold (``C <= 0``: heavy ball with constant lag, whose exact threshold lies above the
    paper's ``eta K K_ref = 1 - mu``). Print it with :data:`VERDICT_LABELS`.

    Parameters
    ----------
    regime : str or array_like of str
        Continuous regime(s), values of :data:`REGIMES` (``OscillatorCoefficients.regime``).
    stable_exact : bool or array_like of bool
        Exact stability (:func:`grpo_core.model.stability.is_stable_exact`); broadcast with ``regime``.

    Returns
    -------
    str, or ndarray of str for array input
        Values of :data:`VERDICTS`.

    Raises
    ------
    ParameterError
        A regime not in :data:`REGIMES`.

    Examples
    --------
    >>> from grpo_core.model.oscillator import regime_verdict
    >>> regime_verdict("unstable", True), regime_verdict("underdamped", False)
    ('stable_exact_only', 'unstable')
    >>> regime_verdict(["overdamped", "unstable"], [True, True]).tolist()
    ['overdamped', 'stable_exact_only']
    """
    reg = np.asarray(regime)
    bad = ~np.isin(reg, REGIMES)
    if np.any(bad):
        raise ParameterError("regime", f"`regime` must be one of {REGIMES}; got {reg[bad].ravel()[0]!r}")
    stable = np.asarray(stable_exact, dtype=bool)
    out = np.where(~stable, "unstable", np.where(reg != "unstable", reg, "stable_exact_only")).astype("<U17")
    return str(out) if out.ndim == 0 else out


def coefficients_verdict(coeffs: OscillatorCoefficients) -> str:
    """:func:`regime_verdict` of one set of coefficients (its exact stability computed here).

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients, coefficients_verdict
    >>> coefficients_verdict(coefficients(0.055, 0.8, 4, 1.0))  # past C = 0, exactly stable
    'stable_exact_only'
    """
    c = _check_coeffs(coeffs)
    return regime_verdict(c.regime, bool(is_stable_exact(c.a, c.mu, c.k_ref, c.lag, c.momentum)))
