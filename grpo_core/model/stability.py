"""Stability of the GRPO oscillator: the continuous threshold and the exact discrete one.

The continuous model ``M e'' + C e' + K_eff e = 0`` (:mod:`grpo_core.model.oscillator`) loses stability
when its damping ``C`` reaches 0: for heavy-ball momentum and a constant lag ``d = k_ref`` that is
the paper's ``eta K K_ref = 1 - mu``. The update itself is a discrete recurrence,

    e[k+1] - e[k] - mu (e[k] - e[k-1]) = -g e[k - d_k],

and its exact threshold differs: higher than the continuous one for a constant lag (roots of
``z^(d-1) (z - 1)(z - mu) + g``), and for the refresh lag (``d_k`` cycling ``0..k_ref-1``) given by the
one-cycle (monodromy) map. This module computes both, in closed form where we could derive one,
and the critical value of any one hyperparameter with the others held (:func:`critical_value`).

Units: ``a = eta * K`` and ``g`` are per optimizer step; ``k_ref`` in optimizer steps.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_broadcast, check_choice
from .hyperparameters import (
    LAG_MODELS,
    MAX_K_REF,
    MOMENTUM_STYLES,
    check_beta,
    check_curvature,
    check_eta,
    check_k_ref,
    check_k_ref_array,
    check_kl_curvature,
    check_lag,
    check_momentum,
    check_mu,
    check_mu_array,
)

__all__ = [
    "LAG_MODELS",
    "MAX_CONSTANT_LAG_K_REF",
    "MOMENTUM_STYLES",
    "lag_moments",
    "critical_a_continuous",
    "critical_a_exact",
    "critical_a_damping",
    "monodromy",
    "spectral_radius",
    "is_stable_exact",
    "critical_value",
    "threshold_table",
    "exact_threshold_rows",
]


# ----------------------------------------------------------------------------------------------
# Lag moments and gain
# ----------------------------------------------------------------------------------------------


def _check_grid(mu: Any, k_ref: Any, lag: Any, momentum: Any) -> tuple[np.ndarray, np.ndarray, str, str]:
    """Checked momenta, refresh intervals (arrays), lag model and momentum convention."""
    return check_mu_array(mu), check_k_ref_array(k_ref), check_lag(lag), check_momentum(momentum)


def _check_a_array(a: Any) -> np.ndarray:
    return check_array("a", a, low=0.0)


def _gain(a: Any, mu: Any, momentum: str) -> Any:
    """Per-step restoring gain of the recurrence: ``a`` (heavy ball) or ``(1 - mu) a`` (EMA)."""
    return a if momentum == "heavy_ball" else (1.0 - np.asarray(mu)) * a


def lag_moments(k_ref: Any, lag: str = "constant") -> tuple[np.ndarray, np.ndarray]:
    r"""Mean lag and mean squared lag of the gradient, in optimizer steps.

    * ``"constant"``: every gradient is ``d = k_ref`` steps old: mean ``k_ref``, mean square
      ``k_ref**2``.
    * ``"refresh"``: the behaviour policy is refreshed every ``k_ref`` steps, so the lag cycles
      ``0, 1, ..., k_ref - 1``: mean :math:`(K_{ref} - 1)/2`, mean square
      :math:`(K_{ref} - 1)(2K_{ref} - 1)/6`.

    Parameters
    ----------
    k_ref : int or array_like of int
        Refresh interval (optimizer steps), ``>= 1``.
    lag : {"constant", "refresh"}
        Lag model.

    Returns
    -------
    mean, mean_square : ndarray
        Shape of ``k_ref``; steps and steps^2.

    Raises
    ------
    ParameterError
        ``k_ref`` not an integer ``>= 1`` or unknown ``lag``.

    Examples
    --------
    >>> from grpo_core.model.stability import lag_moments
    >>> [float(x) for x in lag_moments(4, "refresh")]
    [1.5, 3.5]
    """
    lag = check_lag(lag)
    k = check_k_ref_array(k_ref).astype(float)
    if lag == "constant":
        return k, k * k
    return (k - 1.0) / 2.0, (k - 1.0) * (2.0 * k - 1.0) / 6.0


# ----------------------------------------------------------------------------------------------
# Thresholds: continuous and exact
# ----------------------------------------------------------------------------------------------


def critical_a_continuous(mu: Any, k_ref: Any, lag: str = "constant", momentum: str = "heavy_ball") -> np.ndarray:
    r"""Critical ``a = eta K`` of the continuous model (where the damping ``C`` reaches 0).

    * heavy ball, constant lag: :math:`a^* = (1 - \mu)/K_{ref}` (the paper's condition
      ``K eta K_ref < 1 - mu``);
    * EMA momentum, constant lag: :math:`a^* = 1/K_{ref}`;
    * refresh lag (our mean-lag model): :math:`a^* = 2(1 - \mu)/(K_{ref} - 1)` (heavy ball),
      :math:`2/(K_{ref} - 1)` (EMA); ``inf`` for ``K_ref = 1`` (no lag: the continuous model is
      never unstable, although the discrete update is, at ``a = 2(1 + mu)``).

    Parameters
    ----------
    mu : array_like
        Momentum, in ``[0, 1)``.
    k_ref : array_like of int
        Refresh interval (steps), ``>= 1``. Broadcasts with ``mu``.
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    ndarray
        Broadcast shape of ``mu`` and ``k_ref``; ``inf`` where the continuous model is never unstable.

    Raises
    ------
    ParameterError
        Out-of-range ``mu`` or ``k_ref``, unknown ``lag``/``momentum``.

    References
    ----------
    Damped-oscillator paper (stated threshold); refresh lag and EMA: our derivation.

    Examples
    --------
    >>> from grpo_core.model.stability import critical_a_continuous
    >>> critical_a_continuous(0.5, [1, 2, 4]).tolist()
    [0.5, 0.25, 0.125]
    >>> critical_a_continuous(0.0, [1, 3], lag="refresh").tolist()
    [inf, 1.0]
    """
    mu, k, lag, momentum = _check_grid(mu, k_ref, lag, momentum)
    d_mean, _ = lag_moments(k, lag)
    mu, d_mean = check_broadcast(mu=mu, k_ref=d_mean)
    with np.errstate(divide="ignore"):
        g_star = np.where(d_mean > 0, (1.0 - mu) / np.where(d_mean > 0, d_mean, 1.0), np.inf)
    if momentum == "ema":
        g_star = g_star / (1.0 - mu)
    return np.asarray(g_star, dtype=float)


def _bisect_theta(d: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Smallest theta in (0, pi) with (d - 1/2) theta + arg(e^{i theta} - mu) = pi/2 (vectorised)."""
    lo = np.zeros(np.broadcast(d, mu).shape)
    hi = np.full(lo.shape, np.pi)
    for _ in range(60):  # the bracket halves each time: 60 halvings reach machine precision
        mid = 0.5 * (lo + hi)
        f = (d - 0.5) * mid + np.angle(np.exp(1j * mid) - mu) - np.pi / 2
        up = f > 0
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return 0.5 * (lo + hi)


def _refresh_monodromy_parts(mu: np.ndarray, k: np.ndarray):
    """Trace and determinant of the refresh-lag one-cycle map as affine functions of the gain g.

    Returns (T0, T1, D0, D1) with trace = T0 - g T1 and det = D0 + g D1.
    """
    k = k.astype(float)
    mu = np.asarray(mu, dtype=float)

    def s1(n):  # sum_{j=1}^n mu^j
        return np.where(mu == 0, 0.0, mu * (1.0 - mu ** n) / (1.0 - mu))

    def s2(n):  # sum_{j=1}^n (1 - mu^j) / (1 - mu)
        return (n - s1(n)) / (1.0 - mu)

    a1, a2 = s1(k), s2(k)
    b1, b2 = s1(k - 1.0), s2(k - 1.0)
    # monodromy [[1 + a1 - g a2, -a1], [1 + b1 - g b2, -b1]]
    t0, t1 = 1.0 + a1 - b1, a2
    d0 = -(1.0 + a1) * b1 + a1 * (1.0 + b1)
    d1 = a2 * b1 - a1 * b2
    return t0, t1, d0, d1


def monodromy(a: Any, mu: Any, k_ref: Any, momentum: str = "heavy_ball") -> np.ndarray:
    r"""One-cycle map of the refresh-lag recurrence, in closed form.

    With the behaviour policy refreshed at step ``s`` and held for ``k_ref`` steps, the state
    ``(e_s, e_{s-1})`` is mapped to ``(e_{s+K}, e_{s+K-1})`` by the 2 x 2 matrix

    .. math:: \Phi = \begin{pmatrix} 1 + S_1(K) - g S_2(K) & -S_1(K) \\
                                     1 + S_1(K-1) - g S_2(K-1) & -S_1(K-1) \end{pmatrix},

    :math:`S_1(n) = \sum_{j=1}^n \mu^j`, :math:`S_2(n) = \sum_{j=1}^n (1 - \mu^j)/(1 - \mu)`, ``g`` the
    gain (``a`` heavy ball, ``(1 - mu) a`` EMA). It equals the product of the ``K`` per-step companion
    maps with lags ``0, 1, ..., K - 1`` (tested). Derivation: the increments
    ``y_j = e_{s+j} - e_{s+j-1}`` obey ``y_{j+1} = mu y_j - g e_s``, a geometric recursion.

    Parameters
    ----------
    a : array_like
        ``eta * K`` (per step), ``>= 0``.
    mu : array_like
        Momentum in ``[0, 1)``.
    k_ref : array_like of int
        Refresh interval ``>= 1``. All three broadcast.
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    ndarray, shape (..., 2, 2)

    Raises
    ------
    ParameterError
        A negative or non-finite ``a``, a momentum outside ``[0, 1)``, a ``k_ref`` that is not an integer
        ``>= 1``, an unknown ``momentum``, shapes that do not broadcast.

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator", exact stability).

    Examples
    --------
    >>> from grpo_core.model.stability import monodromy
    >>> monodromy(0.1, 0.0, 4).round(6).tolist()  # mu = 0: e_{s+K} = (1 - K a) e_s
    [[0.6, 0.0], [0.7, 0.0]]
    """
    a = _check_a_array(a)
    mu = check_mu_array(mu)
    k = check_k_ref_array(k_ref)
    momentum = check_momentum(momentum)
    a, mu, k = check_broadcast(a=a, mu=mu, k_ref=k)
    g = _gain(a, mu, momentum)
    kf = k.astype(float)
    s1 = lambda n: np.where(mu == 0, 0.0, mu * (1.0 - mu ** n) / (1.0 - mu))  # noqa: E731
    a1, b1 = s1(kf), s1(kf - 1.0)
    a2, b2 = (kf - a1) / (1.0 - mu), (kf - 1.0 - b1) / (1.0 - mu)
    out = np.empty(a.shape + (2, 2))
    out[..., 0, 0] = 1.0 + a1 - g * a2
    out[..., 0, 1] = 0.0 - a1  # 0.0 - x: no negative zeros
    out[..., 1, 0] = 1.0 + b1 - g * b2
    out[..., 1, 1] = 0.0 - b1
    return out


#: Largest ``k_ref`` for which :func:`spectral_radius` solves the constant-lag eigenproblem (a dense
#: ``(k_ref + 1)``-square companion matrix: about 1.5 s at 1024; 2048 takes 7 s, 10^5 would need 75 GiB).
MAX_CONSTANT_LAG_K_REF = 1024


def _constant_lag_radius(g: np.ndarray, mu: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Largest root modulus of z^{d-1}(z-1)(z-mu) + g (d >= 1), by companion matrices."""
    out = np.empty(g.shape)
    for d in np.unique(k):
        sel = k == d
        gs, ms = g[sel], mu[sel]
        n = int(d) + 1
        comp = np.zeros((gs.size, n, n))
        comp[:, 0, 0] = 1.0 + ms
        comp[:, 0, 1] = -ms
        comp[:, 0, n - 1] -= gs
        idx = np.arange(1, n)
        comp[:, idx, idx - 1] = 1.0
        out[sel] = np.max(np.abs(np.linalg.eigvals(comp)), axis=-1)
    return out


def spectral_radius(
    a: Any, mu: Any, k_ref: Any, lag: str = "constant", momentum: str = "heavy_ball"
) -> np.ndarray:
    r"""Asymptotic growth factor per optimizer step of the exact discrete recurrence.

    * ``lag="constant"`` (``d = k_ref``): the largest modulus of the roots of
      :math:`z^{d-1}(z - 1)(z - \mu) + g = 0` (eigenvalues of its companion matrix);
    * ``lag="refresh"``: the spectral radius of the one-cycle map :func:`monodromy`, to the power
      ``1 / k_ref`` (so that both are per step).

    The recurrence is stable (deviations decay) iff the value is ``< 1``. At ``a = 0`` it is exactly
    1 (the root ``z = 1`` of a free particle).

    Parameters
    ----------
    a : array_like
        ``eta * K``, ``>= 0``.
    mu : array_like
        Momentum in ``[0, 1)``.
    k_ref : array_like of int
        Refresh interval ``>= 1``. All three broadcast.
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    ndarray
        Broadcast shape; per step.

    Raises
    ------
    ParameterError
        Out-of-range inputs; with ``lag="constant"``, ``k_ref`` above
        :data:`MAX_CONSTANT_LAG_K_REF` (1024).

    Notes
    -----
    Cost: the constant-lag version solves a degree ``k_ref + 1`` eigenproblem per point (grouped
    by ``k_ref``), so ``k_ref`` is limited to :data:`MAX_CONSTANT_LAG_K_REF`; the refresh version is
    closed-form. For thresholds use :func:`critical_a_exact`,
    which does not need a scan.

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator"): the characteristic polynomial and the monodromy
    form.

    Examples
    --------
    >>> from grpo_core.model.stability import spectral_radius
    >>> [round(float(r), 6) for r in spectral_radius([0.4, 0.6], 0.5, 1)]  # d = 1: a* = 1 - mu
    [0.948683, 1.048809]
    """
    a = _check_a_array(a)
    mu, k, lag, momentum = _check_grid(mu, k_ref, lag, momentum)
    a, mu, k = check_broadcast(a=a, mu=mu, k_ref=k)
    g = np.asarray(_gain(a, mu, momentum), dtype=float)
    if lag == "constant":
        if k.size and int(k.max()) > MAX_CONSTANT_LAG_K_REF:
            raise ParameterError(
                "k_ref", f"`k_ref` must be an integer in [1, {MAX_CONSTANT_LAG_K_REF}] for the constant-lag growth "
                f"factor (a degree k_ref + 1 eigenproblem); got {int(k.max())}")
        return _constant_lag_radius(g.ravel(), mu.ravel(), k.ravel()).reshape(a.shape)
    phi = monodromy(a, mu, k, momentum)
    tr = phi[..., 0, 0] + phi[..., 1, 1]
    det = phi[..., 0, 0] * phi[..., 1, 1] - phi[..., 0, 1] * phi[..., 1, 0]
    disc = (tr / 2.0) ** 2 - det
    sq = np.sqrt(np.abs(disc))
    rho = np.where(disc >= 0, np.abs(tr) / 2.0 + sq, np.sqrt(np.maximum(det, 0.0)))
    return rho ** (1.0 / k)


def critical_a_exact(mu: Any, k_ref: Any, lag: str = "constant", momentum: str = "heavy_ball") -> np.ndarray:
    r"""Exact critical ``a = eta K`` of the discrete recurrence: the first ``a > 0`` at which it turns unstable.

    **Constant lag** (``d = k_ref``). On the stability boundary a root :math:`z = e^{i\theta}` of
    :math:`z^{d-1}(z-1)(z-\mu) + g = 0` lies on the unit circle. Since
    :math:`\arg(e^{i\theta} - 1) = \pi/2 + \theta/2`, the phase condition reads

    .. math:: (d - \tfrac12)\,\theta + \arg(e^{i\theta} - \mu) = \tfrac{\pi}{2},

    whose left side increases with :math:`\theta`, so it has one root :math:`\theta_1 \in (0, \pi)`
    (found by bisection to machine precision). Both :math:`|e^{i\theta} - 1|` and
    :math:`|e^{i\theta} - \mu|` increase on :math:`[0, \pi]`, so the smallest crossing gain is

    .. math:: g^* = 2 \sin(\theta_1 / 2)\, |e^{i\theta_1} - \mu|.

    ``mu = 0``: :math:`\theta_1 = \pi/(2d+1)` and :math:`a^* = 2\sin(\pi/(2(2d+1)))`; ``d = 1``:
    :math:`a^* = 1 - \mu`.

    **Refresh lag.** The one-cycle map :func:`monodromy` is 2 x 2 with trace ``T0 - g T1`` and
    determinant ``D0 + g D1``, both affine in ``g``. By the Jury conditions it is stable iff
    ``|det| < 1`` and ``|trace| < 1 + det``. At ``g = 0`` the root ``z = 1`` sits on the boundary and
    small ``g > 0`` is stable, so the critical gain is the smallest positive ``g`` at which one of
    ``det = 1``, ``det = -1`` or ``trace = -(1 + det)`` is reached: a closed form. ``mu = 0``:
    :math:`a^* = 2/K_{ref}` exactly; ``K_ref = 1``: :math:`a^* = 2(1 + \mu)`.

    EMA momentum divides the critical gain by ``1 - mu`` (``g = (1 - mu) a``).

    Parameters
    ----------
    mu : array_like
        Momentum in ``[0, 1)``.
    k_ref : array_like of int
        Refresh interval ``>= 1``; broadcasts with ``mu``.
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    ndarray
        Broadcast shape; the critical ``eta * K`` (``inf`` if never unstable).

    Raises
    ------
    ParameterError
        Out-of-range inputs.

    Notes
    -----
    Both closed forms are cross-checked in the tests against root finding (``brentq`` on
    :func:`spectral_radius` minus 1, bracketed by a dense scan from ``a = 0``), and the reference
    table of ``a* d / (1 - mu)`` is reproduced to 3 decimals. Results are memoised per scalar
    ``(mu, k_ref, lag, momentum)``.

    References
    ----------
    Characteristic polynomial and reference values: our derivation. The phase-condition solution
    and the refresh-lag monodromy thresholds are our derivation (book chapter "From update rule to
    oscillator").

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.model.stability import critical_a_exact
    >>> d = np.array([1, 2, 4, 8, 16])
    >>> np.round(critical_a_exact(0.0, d) * d, 3).tolist()
    [1.0, 1.236, 1.389, 1.476, 1.523]
    >>> np.round(critical_a_exact(0.0, [1, 2, 8], lag="refresh"), 6).tolist()
    [2.0, 1.0, 0.25]
    """
    mu, k, lag, momentum = _check_grid(mu, k_ref, lag, momentum)
    mu, k = check_broadcast(mu=mu, k_ref=k)
    if mu.size == 1:
        return np.full(mu.shape, _critical_a_scalar(float(mu.flat[0]), int(k.flat[0]), lag, momentum))
    return _critical_a_array(mu, k, lag, momentum)


@lru_cache(maxsize=4096)
def _critical_a_scalar(mu: float, k: int, lag: str, momentum: str) -> float:
    return float(_critical_a_array(np.array([mu]), np.array([k]), lag, momentum)[0])


def _critical_a_array(mu: np.ndarray, k: np.ndarray, lag: str, momentum: str) -> np.ndarray:
    mu = np.asarray(mu, dtype=float)
    if lag == "constant":
        theta = _bisect_theta(k.astype(float), mu)
        g_star = 2.0 * np.sin(theta / 2.0) * np.abs(np.exp(1j * theta) - mu)
    else:
        t0, t1, d0, d1 = _refresh_monodromy_parts(mu, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            cands = [
                np.where(d1 > 0, (1.0 - d0) / np.where(d1 > 0, d1, 1.0), np.inf),  # det = 1
                np.where(d1 < 0, (-1.0 - d0) / np.where(d1 < 0, d1, 1.0), np.inf),  # det = -1
                np.where(t1 - d1 > 0, (1.0 + d0 + t0) / np.where(t1 - d1 > 0, t1 - d1, 1.0), np.inf),  # z = -1
            ]
        g_star = np.min(np.stack(cands), axis=0)
        # trace = 1 + det (z = +1) holds at g = 0 and again only if t1 + d1 = 0; with t1 + d1 > 0 it
        # is never crossed for g > 0 (t1 + d1 = K (1 - mu^... ) > 0 always; checked in the tests).
        g_star = np.where(g_star > 0, g_star, np.inf)
    if momentum == "ema":
        g_star = g_star / (1.0 - mu)
    return np.asarray(g_star, dtype=float)


def critical_a_damping(mu: Any, k_ref: Any, lag: str = "constant", momentum: str = "heavy_ball") -> np.ndarray:
    r"""The ``a = eta K`` at which the continuous model is critically damped (``zeta = 1``).

    Below it the approach to the plateau is monotone (overdamped), above it oscillatory, until the
    threshold :func:`critical_a_continuous`. It is the fastest non-oscillating choice. From
    :math:`C^2 = 4 M K_{eff}` with ``C = 1 - mu - g d1``, ``M = (1 + mu + g d2)/2``, ``K_eff = g``
    (``d1``, ``d2`` the lag moments):

    .. math:: A g^2 - 2 B g + (1 - \mu)^2 = 0,\quad A = d_1^2 - 2 d_2 \le 0,\quad
              B = (1 - \mu) d_1 + 1 + \mu,
              \qquad g = \frac{(1-\mu)^2}{B + \sqrt{B^2 - A (1-\mu)^2}}.

    Parameters
    ----------
    mu, k_ref, lag, momentum
        As in :func:`critical_a_exact` (``mu`` and ``k_ref`` broadcast).

    Returns
    -------
    ndarray
        Broadcast shape. Raises :class:`ParameterError` on out-of-range inputs.

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator").

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.stability import critical_a_damping
    >>> a = float(critical_a_damping(0.5, 4)[()])
    >>> round(coefficients(eta=a, mu=0.5, k_ref=4, curvature=1.0).damping_ratio, 12)
    1.0
    """
    mu, k, lag, momentum = _check_grid(mu, k_ref, lag, momentum)
    d1, d2 = lag_moments(k, lag)
    mu, d1 = check_broadcast(mu=mu, k_ref=d1)
    d2 = np.broadcast_to(d2, d1.shape)
    big_a = d1 * d1 - 2.0 * d2
    big_b = (1.0 - mu) * d1 + 1.0 + mu
    g = (1.0 - mu) ** 2 / (big_b + np.sqrt(big_b * big_b - big_a * (1.0 - mu) ** 2))
    if momentum == "ema":
        g = g / (1.0 - mu)
    return np.asarray(g, dtype=float)


def is_stable_exact(a: Any, mu: Any, k_ref: Any, lag: str = "constant", momentum: str = "heavy_ball") -> np.ndarray:
    """Whether the exact discrete recurrence is stable: ``0 < a < critical_a_exact(mu, k_ref)``.

    Parameters
    ----------
    a : array_like
        ``eta * K``, ``>= 0``.
    mu, k_ref, lag, momentum
        As in :func:`critical_a_exact`; all broadcast.

    Returns
    -------
    ndarray of bool
        Broadcast shape. ``a = 0`` is marginal and returns False.

    Raises
    ------
    ParameterError
        A negative or non-finite ``a``; ``mu``, ``k_ref``, ``lag`` or ``momentum`` as
        :func:`critical_a_exact` refuses them.

    Examples
    --------
    >>> from grpo_core.model.stability import is_stable_exact
    >>> is_stable_exact([0.49, 0.51], 0.5, 1).tolist()
    [True, False]
    """
    a = _check_a_array(a)
    crit = critical_a_exact(mu, k_ref, lag, momentum)
    return (a > 0) & (a < crit)


_PARAMETERS = ("eta", "mu", "k_ref", "curvature", "beta")
_METHODS = ("exact", "continuous")
#: Largest k_ref the exact k_ref search tries (critical_value); beyond it critical_a_exact loses digits.
K_REF_SEARCH_MAX = MAX_K_REF


def critical_value(
    parameter: str,
    *,
    eta: Any = None,
    mu: Any = None,
    k_ref: Any = None,
    curvature: Any = None,
    beta: Any = None,
    kl_curvature: Any = 1.0,
    lag: str = "constant",
    momentum: str = "heavy_ball",
    method: str = "exact",
) -> float:
    r"""Critical value of one hyperparameter with the others held: where stability is lost.

    Returns the infimum of the admissible values of ``parameter`` at which the model is unstable,
    the others held fixed (``inf`` if no admissible value is unstable):

    * ``"eta"``: :math:`\eta^* = a^* / (\text{curvature} + \beta\,\text{kl\_curvature})`; stable below.
    * ``"curvature"``: :math:`a^*/\eta - \beta\,\text{kl\_curvature}`; stable below. ``0.0`` means every
      positive curvature is unstable (the KL term alone is already too stiff).
    * ``"beta"``: :math:`(a^*/\eta - \text{curvature}) / \text{kl\_curvature}`; stable below (the KL
      term adds stiffness, so a stronger anchor can push a stable run over the threshold).
      ``0.0`` means unstable already without the KL term.
    * ``"k_ref"``: ``method="continuous"``: the real-valued :math:`K^*` at which ``C = 0``
      (heavy ball, constant lag: :math:`(1 - \mu)/(\eta K)`; refresh: :math:`1 + 2(1-\mu)/(\eta K)`;
      EMA: without the ``1 - mu``), at least 1. ``method="exact"``: the smallest unstable integer
      (stable for every ``k_ref`` below it; exact stability is monotone in ``k_ref``, checked in the
      tests), found by doubling and bisection over :func:`critical_a_exact` up to ``2**40``
      (about 1.1e12 steps): ``inf`` means none up to there, not none at all (every ``a > 0`` is
      unstable at a large enough ``k_ref``). Above ~1e6 the integer is good to about
      ``k_ref * 1e-12`` relative, the precision of :func:`critical_a_exact` there.
    * ``"mu"``: the smallest unstable ``mu`` in ``[0, 1)`` (``0.0`` if already unstable at
      ``mu = 0``). The stable set need not start at 0: with ``lag="refresh"`` and ``k_ref = 1``,
      momentum *stabilises* (``a* = 2(1 + mu)``), so check :func:`is_stable_exact` above the
      returned value if that case matters. Exact: scan of 2001 values refined with ``brentq``.

    Parameters
    ----------
    parameter : {"eta", "mu", "k_ref", "curvature", "beta"}
        The parameter to solve for; it must not be given.
    eta, mu, k_ref, curvature : float
        The other hyperparameters (validated as in :func:`coefficients`); all four are required
        except the one solved for.
    beta : float, optional
        KL weight, ``>= 0`` (default 0 when another parameter is solved for).
    kl_curvature : float
        Curvature of the KL term (see :func:`coefficients`).
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}
    method : {"exact", "continuous"}
        Exact discrete recurrence (:func:`critical_a_exact`) or the continuous model (``C = 0``).

    Returns
    -------
    float
        The critical value (``inf`` if never unstable).

    Raises
    ------
    ParameterError
        Unknown ``parameter``/``method``; ``parameter`` also given a value; one of the others
        missing or out of range.

    References
    ----------
    Damped-oscillator paper (continuous heavy-ball threshold); the rest our derivation.

    Examples
    --------
    >>> from grpo_core.model.stability import critical_value
    >>> round(critical_value("k_ref", eta=0.01, mu=0.9, curvature=1.0, method="continuous"), 9)
    10.0
    >>> critical_value("k_ref", eta=0.01, mu=0.9, curvature=1.0)  # exact: first unstable integer
    12.0
    >>> round(critical_value("eta", mu=0.5, k_ref=1, curvature=2.0), 12)
    0.25
    >>> round(critical_value("beta", eta=0.1, mu=0.5, k_ref=1, curvature=2.0), 12)  # (0.5/0.1 - 2)/1
    3.0
    """
    parameter = check_choice("parameter", parameter, _PARAMETERS)
    method = check_choice("method", method, _METHODS)
    given = {"eta": eta, "mu": mu, "k_ref": k_ref, "curvature": curvature, "beta": beta}
    if given[parameter] is not None:
        raise ParameterError(parameter, f"`{parameter}` is the parameter solved for: do not also give a value")
    for name, value in given.items():
        if name != parameter and value is None and name != "beta":
            raise ParameterError(name, f"`{name}` is required to solve for `{parameter}`")
    checks = {"eta": check_eta, "mu": check_mu, "k_ref": check_k_ref, "curvature": check_curvature}
    vals = {n: checks[n](v) for n, v in given.items() if n not in (parameter, "beta")}
    beta = 0.0 if parameter == "beta" or beta is None else check_beta(beta)
    kl_curvature = check_kl_curvature(kl_curvature)
    lag, momentum = check_lag(lag), check_momentum(momentum)
    crit = critical_a_exact if method == "exact" else critical_a_continuous

    if parameter in ("eta", "curvature", "beta"):
        a_star = float(crit(vals["mu"], vals["k_ref"], lag, momentum)[()])
        if parameter == "eta":
            return a_star / (vals["curvature"] + beta * kl_curvature)
        if parameter == "beta":
            return max(0.0, (a_star / vals["eta"] - vals["curvature"]) / kl_curvature)
        return max(0.0, a_star / vals["eta"] - beta * kl_curvature)

    a = vals["eta"] * (vals["curvature"] + beta * kl_curvature)
    if parameter == "k_ref":
        mu_v = vals["mu"]
        if method == "continuous":
            g = float(_gain(a, mu_v, momentum))
            d_star = (1.0 - mu_v) / g
            k_star = d_star if lag == "constant" else 1.0 + 2.0 * d_star
            return max(1.0, k_star)
        return float(_smallest_unstable_k_ref(a, mu_v, lag, momentum))

    # parameter == "mu"
    k_v = vals["k_ref"]
    grid = np.concatenate([np.linspace(0.0, 0.999, 2000), [1.0 - 1e-6]])
    a_grid = crit(grid, k_v, lag, momentum)
    unstable = a >= a_grid
    if not np.any(unstable):
        return math.inf
    i = int(np.argmax(unstable))
    if i == 0:
        return 0.0
    from scipy.optimize import brentq

    f = lambda m: float(crit(m, k_v, lag, momentum)[()]) - a  # noqa: E731
    return float(brentq(f, grid[i - 1], grid[i], xtol=1e-14, rtol=1e-13))


def _smallest_unstable_k_ref(a: float, mu: float, lag: str, momentum: str) -> float:
    def unstable(k: int) -> bool:
        return bool(a >= _critical_a_scalar(mu, k, lag, momentum))

    if unstable(1):
        return 1
    hi = 2
    while not unstable(hi):
        if hi >= K_REF_SEARCH_MAX:
            return math.inf
        hi *= 2
    lo = hi // 2  # stable
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if unstable(mid):
            hi = mid
        else:
            lo = mid
    return hi


def threshold_table(
    mus: Any = (0.0, 0.5, 0.9),
    k_refs: Any = (1, 2, 4, 8, 16),
    lag: str = "constant",
    momentum: str = "heavy_ball",
):
    r"""Exact critical ``a = eta K`` in units of the paper's continuous threshold, as a table.

    Entry ``(mu, k_ref)`` is :math:`a^*_{exact}\, K_{ref} / (1 - \mu)` for heavy-ball momentum
    (:math:`a^*_{exact} K_{ref}` for EMA, whose continuous threshold is ``eta K K_ref < 1``): 1 where
    the paper's ``eta K K_ref < 1 - mu`` is exact, above 1 where the discrete update tolerates more.
    With the defaults it is the reference table of the book chapter "From update rule to oscillator".

    Parameters
    ----------
    mus : array_like
        Momenta in ``[0, 1)`` (rows).
    k_refs : array_like of int
        Refresh intervals ``>= 1`` (columns).
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    pandas.DataFrame
        Index ``mu``, columns ``k_ref``.

    Raises
    ------
    ParameterError
        A momentum outside ``[0, 1)``, a ``k_ref`` that is not an integer ``>= 1``, an unknown ``lag``
        or ``momentum``.

    References
    ----------
    Reference values and our derivation (book chapter "From update rule to
    oscillator").

    Examples
    --------
    >>> from grpo_core.model.stability import threshold_table
    >>> threshold_table().round(3).loc[0.5].tolist()
    [1.0, 1.123, 1.247, 1.361, 1.448]
    """
    import pandas as pd

    mu, k, lag, momentum = _check_grid(mus, k_refs, lag, momentum)
    mu, k = mu.ravel(), k.ravel()
    a = critical_a_exact(mu[:, None], k[None, :], lag, momentum)
    scale = (1.0 - mu[:, None]) if momentum == "heavy_ball" else 1.0
    table = pd.DataFrame(a * k[None, :] / scale, index=pd.Index(mu, name="mu"), columns=pd.Index(k, name="k_ref"))
    return table


def exact_threshold_rows(
    mu_grid: Any, k_refs: Any, lag: str = "constant", momentum: str = "heavy_ball"
) -> list[dict[str, Any]]:
    """Exact critical ``a = eta K`` for every ``(mu, k_ref)`` pair, as records a static page looks up.

    One record per pair, ``mu`` major: ``m`` (``round(100 mu)``, the key of a 0.01 slider grid),
    ``k_ref`` and ``a_star`` (:func:`critical_a_exact` at full precision: a page that compares
    ``eta K >= a_star`` then gives :func:`is_stable_exact`'s answer even on a tie such as
    ``mu = 0.96``, ``k_ref = 1``, ``eta K = 0.04``, where a rounded threshold would flip it).

    Parameters
    ----------
    mu_grid : array_like
        Momenta in ``[0, 1)``.
    k_refs : array_like of int
        Refresh intervals ``>= 1``.
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    list of dict
        ``len(mu_grid) * len(k_refs)`` records with keys ``m``, ``k_ref``, ``a_star``.

    Raises
    ------
    ParameterError
        A momentum outside ``[0, 1)``, a ``k_ref`` that is not an integer ``>= 1``, an unknown ``lag``
        or ``momentum``.

    Examples
    --------
    >>> from grpo_core.model.stability import exact_threshold_rows
    >>> exact_threshold_rows([0.8], [1, 4])
    [{'m': 80, 'k_ref': 1, 'a_star': 0.2}, {'m': 80, 'k_ref': 4, 'a_star': 0.05572114504704759}]
    """
    mu, k, lag, momentum = _check_grid(mu_grid, k_refs, lag, momentum)
    a = critical_a_exact(mu.ravel()[:, None], k.ravel()[None, :], lag, momentum)
    return [{"m": int(round(m * 100)), "k_ref": int(kk), "a_star": float(a[i, j])}
            for i, m in enumerate(mu.ravel()) for j, kk in enumerate(k.ravel())]
