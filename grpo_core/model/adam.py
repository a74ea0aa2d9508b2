"""Adam near the operating point: the effective gain, its stability limit, and what G does to it.

Adam's update (PyTorch convention, ascent) is ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
``theta += eta m_hat / (sqrt(v_hat) + eps)``. With ``b2`` close to 1, ``v`` averages ``g^2`` over about
``1 / (1 - b2)`` steps, so near an operating point it is a slowly varying diagonal preconditioner and
the update is EMA momentum (``mu = b1``, :mod:`grpo_core.model.stability`'s ``momentum="ema"``) with the
per-coordinate step ``eta / (sqrt(v) + eps)``. The oscillator of :mod:`grpo_core.model.oscillator`
therefore applies with the gain

    a = eta K / (sqrt(v) + eps)                                   (our derivation)

in place of ``eta K`` (``K`` the curvature along the coordinate that carries the reward).

What sets ``v``. ``v = E[g^2] = (E g)^2 + Var g``. Far from the operating point the mean gradient
dominates and Adam's step is about ``eta`` per coordinate whatever the gradient's size (sign-like);
at the operating point ``E g = 0`` and ``v`` is the gradient noise, ``Var g = s^2 / (B G)`` for B
prompts of G completions (the U-statistic chapter: ``s^2`` ~ ``c2 + c3 / G``). Hence (our derivation)

* the gain grows with the batch: ``a = eta K sqrt(B G) / s``; at fixed ``eta`` a larger G (or B) is a
  larger effective learning rate, and the critical ``eta* = a* s / (K sqrt(B G))`` shrinks as
  ``1 / sqrt(B G)``. Under SGD, G is only a noise temperature (``Var e ~ 1/G`` at an unchanged
  mean path); under Adam near the operating point it moves the stability threshold;
* the stationary fluctuation at fixed ``eta`` is ``Var(x) ~ eta^2 / (2 a C) ~ eta s / sqrt(B G)``:
  it falls as ``1/sqrt(B G)``, not ``1/(B G)``;
* when the dynamics are noise-free (mean field, or large batches), ``v`` falls as ``b2^t`` once the
  mean gradient vanishes, the gain grows until it reaches the critical gain ``a*``, and the run then
  hovers there: an oscillation grows just enough to hold ``v`` at ``(eta K / a*)^2``. This is the
  edge of stability of adaptive methods (classical result: Cohen et al. 2022, "Adaptive gradient
  methods at the edge of stability": the preconditioned sharpness ``lambda_max(P^-1 H)`` equilibrates
  at ``(2 + 2 b1) / ((1 - b1) eta)``). In our notation ``a = eta lambda_max(P^-1 H)``, and the bound is the
  on-policy (no lag) exact threshold of the EMA recurrence, ``a* = 2 (1 + b1) / (1 - b1)``; with a
  refresh lag of ``k_ref`` steps (reused generation batches without the ratio correction) it is
  :func:`grpo_core.model.stability.critical_a_exact` with ``momentum="ema"`` (our derivation).

Checked on the bandit (tests/test_model_adam.py; :func:`grpo_core.bandit.simulate` with
``optimizer="adam"``): the stationary ``v_hat`` of a stochastic run against the exact gradient
variance; the mean-field gain settling at ``a*`` for ``b1`` in {0, 0.9} and ``k_ref`` in {1, 4};
the ``sqrt(G)`` scaling of the gain. The critical ``eta`` of the *sampled* bandit against
``a* sigma / K`` (v set by the noise) is measured by :mod:`grpo_core.bandit.adam_threshold`: with
``b1 = 0.9`` 1.2-1.3x the prediction at G = 4 and 16 (the ``1/sqrt(BG)`` scaling holds); with
``b1 = 0`` the prediction fails (v follows the jitter; there is no linear threshold).

References
----------
Kingma & Ba (2015), Adam. Cohen, Ghorbani, Krishnan, Agarwal, Medapati, Badura, Suo, Cardoze, Nado,
Dahl, Gilmer (2022), "Adaptive gradient methods at the edge of stability", arXiv:2207.14484.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_real
from . import stability

__all__ = [
    "adam_effective_gain", "adam_critical_gain", "adam_critical_learning_rate", "cohen_sharpness_bound",
    "noise_second_moment", "stationary_second_moment",
]


def _positive(name: str, value: Any) -> np.ndarray:
    arr = check_array(name, value)
    if arr.size and np.any(arr <= 0):
        raise ParameterError(name, f"`{name}` must be > 0; min is {float(np.min(arr))!r}")
    return arr


def _nonnegative(name: str, value: Any) -> np.ndarray:
    return check_array(name, value, low=0.0)


def adam_effective_gain(eta: Any, curvature: Any, second_moment: Any, eps: float = 1e-8) -> np.ndarray:
    """The oscillator gain of Adam near the operating point, ``a = eta K / (sqrt(v) + eps)`` (our derivation).

    Parameters
    ----------
    eta : array_like, > 0
        Learning rate (the logged ``learning_rate`` at that step).
    curvature : array_like, > 0
        K, the curvature of the reward direction per unit learning rate (parameter units).
    second_moment : array_like, >= 0
        Adam's ``v_hat`` along that direction (squared gradient units); near the operating point
        the gradient noise variance per step (:func:`noise_second_moment`).
    eps : float > 0
        Adam's epsilon (PyTorch default 1e-8).

    Returns
    -------
    ndarray
        ``a`` (dimensionless, per optimizer step), the broadcast shape of the inputs. Use it with
        ``mu = beta1`` and ``momentum="ema"`` in :mod:`grpo_core.model.stability`.

    Raises
    ------
    ParameterError
        ``eta`` or ``curvature`` <= 0, ``second_moment`` < 0, ``eps`` <= 0, a non-finite value.

    Examples
    --------
    >>> float(adam_effective_gain(1e-3, 0.4, 1e-6, eps=1e-8).round(4))
    0.4
    """
    e = check_real("eps", eps, low=0.0, low_inclusive=False)
    return _positive("eta", eta) * _positive("curvature", curvature) / (np.sqrt(_nonnegative("second_moment",
                                                                                             second_moment)) + e)


def adam_critical_gain(beta1: Any, k_ref: Any = 1, lag: str = "refresh") -> np.ndarray:
    """Critical gain ``a*`` of Adam's EMA-momentum recurrence (exact discrete threshold).

    ``k_ref = 1`` (on-policy, or reuse corrected by the importance ratio): ``a* = 2 (1 + b1) / (1 - b1)``,
    Cohen et al.'s adaptive edge of stability (classical result). ``k_ref > 1`` with a stale gradient:
    :func:`grpo_core.model.stability.critical_a_exact` with ``momentum="ema"`` (our derivation).

    Parameters
    ----------
    beta1 : array_like, in [0, 1)
        Adam's ``beta1`` (TRL ``adam_beta1``, default 0.9).
    k_ref : array_like of int >= 1
        Lag (constant) or refresh interval (refresh), optimizer steps.
    lag : {"constant", "refresh"}

    Returns
    -------
    ndarray
        ``a*``, broadcast shape of ``beta1`` and ``k_ref``.

    Raises
    ------
    ParameterError
        Out-of-range ``beta1`` or ``k_ref``, unknown ``lag``.

    Examples
    --------
    >>> adam_critical_gain([0.0, 0.9]).round(3).tolist()
    [2.0, 38.0]
    """
    return np.asarray(stability.critical_a_exact(beta1, k_ref, lag, "ema"), dtype=float)


def adam_critical_learning_rate(curvature: Any, second_moment: Any, beta1: Any = 0.9, k_ref: Any = 1,
                                lag: str = "refresh", eps: float = 1e-8) -> np.ndarray:
    """Largest stable learning rate under Adam, ``eta* = a* (sqrt(v) + eps) / K`` (our derivation).

    Parameters are those of :func:`adam_effective_gain` and :func:`adam_critical_gain`.

    Returns
    -------
    ndarray
        ``eta*`` (same units as the learning rate).

    Raises
    ------
    ParameterError
        As the two functions above.

    Examples
    --------
    >>> float(adam_critical_learning_rate(0.4, 1e-6, beta1=0.9, eps=0.0 + 1e-12).round(6))
    0.095
    """
    e = check_real("eps", eps, low=0.0, low_inclusive=False)
    root = np.sqrt(_nonnegative("second_moment", second_moment)) + e
    return adam_critical_gain(beta1, k_ref, lag) * root / _positive("curvature", curvature)


def cohen_sharpness_bound(beta1: Any, eta: Any) -> np.ndarray:
    """Cohen et al. (2022)'s bound on Adam's preconditioned sharpness, ``(2 + 2 b1) / ((1 - b1) eta)``.

    Classical result (Cohen et al. 2022, arXiv:2207.14484, for Adam without a lag). Equals
    ``adam_critical_gain(beta1, 1) / eta``.

    Raises
    ------
    ParameterError
        ``beta1`` outside [0, 1), ``eta`` <= 0.

    Examples
    --------
    >>> round(float(cohen_sharpness_bound(0.9, 1e-3)), 6)
    38000.0
    """
    b1 = check_array("beta1", beta1, low=0.0, high=1.0)
    if b1.size and np.any(b1 >= 1):
        raise ParameterError("beta1", f"`beta1` must be in [0, 1); max is {float(np.max(b1))!r}")
    return (2.0 + 2.0 * b1) / ((1.0 - b1) * _positive("eta", eta))


def noise_second_moment(per_group_variance: Any, num_prompts: Any = 1, mean_gradient: Any = 0.0) -> np.ndarray:
    """Adam's ``v`` near the operating point: ``mean^2 + Var``, ``Var = s^2 / B`` (our derivation).

    Parameters
    ----------
    per_group_variance : array_like, >= 0
        Variance of one group's gradient estimate along the coordinate (``s^2 / G`` in the U-statistic
        chapter's terms; it falls as 1/G). For the bandit:
        :func:`grpo_core.bandit.gradient_covariance` with ``num_prompts=1``.
    num_prompts : array_like, >= 1
        B, prompts (groups) per optimizer step.
    mean_gradient : array_like
        The expected gradient along the coordinate (0 at the operating point).

    Returns
    -------
    ndarray
        ``v`` (squared gradient units).

    Raises
    ------
    ParameterError
        A negative variance, ``num_prompts`` < 1.

    Examples
    --------
    >>> float(noise_second_moment(0.008, 16))
    0.0005
    """
    b = check_array("num_prompts", num_prompts, low=1.0)
    return check_array("mean_gradient", mean_gradient) ** 2 + _nonnegative("per_group_variance",
                                                                            per_group_variance) / b


def stationary_second_moment(noise_variance: Any, eta: Any, curvature: Any) -> np.ndarray:
    """Adam's stationary ``v`` at the operating point with ``beta1 = 0``, noise plus the jitter it causes.

    Our derivation: the jitter of the parameter adds ``K^2 Var(x)`` to ``E[g^2]``; for ``beta1 = 0``
    (``x <- x - a x - (eta / sqrt(v)) xi``) ``K^2 Var(x) = sigma^2 a / (2 - a)``, so
    ``v = sigma^2 2 / (2 - a)`` with ``a = eta K / sqrt(v)``, whose root is
    ``sqrt(v) = (eta K + sqrt(eta^2 K^2 + 16 sigma^2)) / 4``. As ``a -> 0``, ``v -> sigma^2``. (With
    ``beta1 > 0`` the leading term ``sigma^2`` holds for small ``a``; the correction is not derived here.)
    Bandit: within 3% for ``a`` up to 0.8 at G = 4 and 16 (tests/test_model_adam.py).

    Parameters
    ----------
    noise_variance : array_like, >= 0
        ``sigma^2``, the gradient's variance per optimizer step along the coordinate.
    eta, curvature : array_like, > 0

    Returns
    -------
    ndarray
        ``v``; the gain is then ``eta K / sqrt(v) < 2`` always (noise alone keeps RMSprop below its
        edge at the operating point).

    Raises
    ------
    ParameterError
        Negative variance, ``eta`` or ``curvature`` <= 0.

    Examples
    --------
    >>> float(stationary_second_moment(1.0, 1.0, 0.0 + 1e-12).round(6))
    1.0
    """
    s2 = _nonnegative("noise_variance", noise_variance)
    ek = _positive("eta", eta) * _positive("curvature", curvature)
    return ((ek + np.sqrt(ek * ek + 16.0 * s2)) / 4.0) ** 2
