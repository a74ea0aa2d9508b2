"""Validation of the training hyperparameters shared by the models (oscillator, bandit, advice).

One checker per hyperparameter, so every public function refuses the same bad values with the
same message (``"`mu` must be a finite number in [0, 1); got 1.0"``), plus the names of the lag
models and momentum conventions. Notation as in the book (chapter "From update rule to oscillator").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "MAX_K_REF",
    "LAG_MODELS",
    "MOMENTUM_STYLES",
    "check_eta",
    "check_mu",
    "check_k_ref",
    "check_curvature",
    "check_beta",
    "check_kl_curvature",
    "check_group_size",
    "check_lag",
    "check_momentum",
    "check_mu_array",
    "check_k_ref_array",
]

#: Lag models of the behaviour policy: ``"constant"`` (every gradient is ``k_ref`` steps old) and
#: ``"refresh"`` (the behaviour policy is refreshed every ``k_ref`` steps: lags cycle 0..k_ref-1).
LAG_MODELS = ("constant", "refresh")
#: Momentum conventions: heavy ball ``v = mu v + g`` and EMA ``v = mu v + (1 - mu) g`` (Adam's beta1).
MOMENTUM_STYLES = ("heavy_ball", "ema")


#: Largest refresh interval accepted (about 1.1e12 steps, far past any training run): beyond it the
#: lag moments (d^2 ~ k^2) and int64 arithmetic lose meaning (2**64 wrapped to a negative lag).
MAX_K_REF = 2**40

def check_eta(eta: Any) -> float:
    """Step size ``eta``: a finite number ``> 0``.

    Raises
    ------
    ParameterError
        Otherwise, naming ``eta`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_eta
    >>> check_eta("0.01")
    0.01
    """
    return check_real("eta", eta, low=0.0, low_inclusive=False)


def check_mu(mu: Any) -> float:
    """Momentum ``mu`` (heavy ball or Adam's ``beta1``).

    Parameters
    ----------
    mu : number, numeric string
        The value to check; allowed: a finite number in ``[0, 1)``.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``mu`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_mu
    >>> check_mu(0.9)
    0.9
    """
    return check_real("mu", mu, low=0.0, high=1.0, high_inclusive=False)


def check_k_ref(k_ref: Any) -> int:
    """Refresh interval ``k_ref`` of the behaviour policy, in optimizer steps.

    Parameters
    ----------
    k_ref : number, numeric string
        The value to check; allowed: an integer ``>= 1`` (``4.0`` is accepted, ``2.5`` is not).

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``k_ref`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_k_ref
    >>> check_k_ref(4.0)
    4
    """
    return check_integer("k_ref", k_ref, low=1, high=MAX_K_REF)


def check_curvature(curvature: Any) -> float:
    """Curvature ``K`` of the effective potential at the fixed point.

    Parameters
    ----------
    curvature : number, numeric string
        The value to check; allowed: a finite number ``> 0``.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``curvature`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_curvature
    >>> check_curvature(2)
    2.0
    """
    return check_real("curvature", curvature, low=0.0, low_inclusive=False)


def check_beta(beta: Any) -> float:
    """KL weight ``beta`` to the reference policy.

    Parameters
    ----------
    beta : number, numeric string
        The value to check; allowed: a finite number ``>= 0``.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``beta`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_beta
    >>> check_beta(0)
    0.0
    """
    return check_real("beta", beta, low=0.0)


def check_kl_curvature(kl_curvature: Any) -> float:
    """Curvature of the KL term along the direction of motion (Fisher information).

    Parameters
    ----------
    kl_curvature : number, numeric string
        The value to check; allowed: a finite number ``> 0``.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``kl_curvature`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_kl_curvature
    >>> check_kl_curvature(1)
    1.0
    """
    return check_real("kl_curvature", kl_curvature, low=0.0, low_inclusive=False)


def check_group_size(group_size: Any) -> int:
    """Group size ``G`` (completions per prompt).

    Parameters
    ----------
    group_size : number, numeric string
        The value to check; allowed: an integer ``>= 1``.

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``group_size`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_group_size
    >>> check_group_size(16)
    16
    """
    return check_integer("group_size", group_size, low=1)


def check_lag(lag: Any) -> str:
    """Lag model of the behaviour policy.

    Parameters
    ----------
    lag : number, numeric string
        The value to check; allowed: one of :data:`LAG_MODELS`.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``lag`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_lag
    >>> check_lag('refresh')
    'refresh'
    """
    return check_choice("lag", lag, LAG_MODELS)


def check_momentum(momentum: Any) -> str:
    """Momentum convention.

    Parameters
    ----------
    momentum : number, numeric string
        The value to check; allowed: one of :data:`MOMENTUM_STYLES`.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``momentum`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_momentum
    >>> check_momentum('ema')
    'ema'
    """
    return check_choice("momentum", momentum, MOMENTUM_STYLES)


def check_mu_array(mu: Any) -> np.ndarray:
    """Array of momenta.

    Parameters
    ----------
    mu : number, numeric string or array_like
        The value to check; allowed: finite numbers in ``[0, 1)``.

    Returns
    -------
    ndarray of float

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``mu`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_mu_array
    >>> check_mu_array([0.0, 0.5])
    array([0. , 0.5])
    """
    arr = check_array("mu", mu, low=0.0)
    if arr.size and np.max(arr) >= 1.0:
        raise ParameterError("mu", f"`mu` must be a finite number in [0, 1); max is {float(np.max(arr))!r}")
    return arr


def check_k_ref_array(k_ref: Any) -> np.ndarray:
    """Array of refresh intervals.

    Parameters
    ----------
    k_ref : number, numeric string or array_like
        The value to check; allowed: integers ``>= 1``.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``k_ref`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_k_ref_array
    >>> check_k_ref_array([1, 4.0])
    array([1, 4])
    """
    arr = check_array("k_ref", k_ref, low=1.0)
    if arr.size and not np.all(arr == np.round(arr)):
        raise ParameterError("k_ref", "`k_ref` must be an integer in [1, 2**40]; got non-integer value(s)")
    if arr.size and np.max(arr) > MAX_K_REF:
        raise ParameterError("k_ref", f"`k_ref` must be an integer in [1, 2**40]; got {np.max(arr):.4g}")
    return arr.astype(np.int64)
