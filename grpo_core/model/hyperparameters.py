"""Validation of the training hyperparameters shared by the models (oscillator, bandit, advice).

One checker per hyperparameter, built from one table (:data:`_SCALARS`), so every public function
refuses the same bad values with the same message (``"`mu` must be a finite number in [0, 1); got 1.0"``), plus the
names of the lag
models and momentum conventions. Notation as in the book (chapter "From update rule to oscillator").
"""

from __future__ import annotations

from collections.abc import Callable
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

#: The scalar hyperparameters: name -> (checker, its bounds, summary, allowed values, example in, out).
#: One row per hyperparameter drives both the check and its docstring, so every public function
#: refuses the same bad values with the same message.
_SCALARS: dict[str, tuple[Callable[..., Any], dict[str, Any], str, str, str, str]] = {
    "eta": (check_real, {"low": 0.0, "low_inclusive": False}, "Step size ``eta`` (learning rate).",
            "a finite number ``> 0``", '"0.01"', "0.01"),
    "mu": (check_real, {"low": 0.0, "high": 1.0, "high_inclusive": False},
           "Momentum ``mu`` (heavy ball or Adam's ``beta1``).", "a finite number in ``[0, 1)``", "0.9", "0.9"),
    "k_ref": (check_integer, {"low": 1, "high": MAX_K_REF},
              "Refresh interval ``k_ref`` of the behaviour policy, in optimizer steps.",
              "an integer ``>= 1`` (``4.0`` is accepted, ``2.5`` is not)", "4.0", "4"),
    "curvature": (check_real, {"low": 0.0, "low_inclusive": False},
                  "Curvature ``K`` of the effective potential at the fixed point.", "a finite number ``> 0``",
                  "2", "2.0"),
    "beta": (check_real, {"low": 0.0}, "KL weight ``beta`` to the reference policy.", "a finite number ``>= 0``",
             "0", "0.0"),
    "kl_curvature": (check_real, {"low": 0.0, "low_inclusive": False},
                     "Curvature of the KL term along the direction of motion (Fisher information).",
                     "a finite number ``> 0``", "1", "1.0"),
    "group_size": (check_integer, {"low": 1}, "Group size ``G`` (completions per prompt).",
                   "an integer ``>= 1``", "16", "16"),
    "lag": (check_choice, {"choices": LAG_MODELS}, "Lag model of the behaviour policy.",
            "one of :data:`LAG_MODELS`", "'refresh'", "'refresh'"),
    "momentum": (check_choice, {"choices": MOMENTUM_STYLES}, "Momentum convention.",
                 "one of :data:`MOMENTUM_STYLES`", "'ema'", "'ema'"),
}

_RETURNS = {check_real: "float", check_integer: "int", check_choice: "str"}


def _scalar_check(name: str) -> Callable[[Any], Any]:
    """The checker of one row of :data:`_SCALARS`, with its docstring."""
    checker, bounds, summary, allowed, example, shown = _SCALARS[name]
    if checker is check_choice:
        def check(value: Any) -> Any:
            return check_choice(name, value, bounds["choices"])
    else:
        def check(value: Any) -> Any:
            return checker(name, value, **bounds)
    check.__name__ = check.__qualname__ = f"check_{name}"
    check.__doc__ = f"""{summary}

    Parameters
    ----------
    {name} : number, numeric string
        The value to check; allowed: {allowed}.

    Returns
    -------
    {_RETURNS[checker]}

    Raises
    ------
    ParameterError
        If the value is not allowed; the message names ``{name}`` and the range.

    Examples
    --------
    >>> from grpo_core.model.hyperparameters import check_{name}
    >>> check_{name}({example})
    {shown}
    """
    return check


check_eta = _scalar_check("eta")
check_mu = _scalar_check("mu")
check_k_ref = _scalar_check("k_ref")
check_curvature = _scalar_check("curvature")
check_beta = _scalar_check("beta")
check_kl_curvature = _scalar_check("kl_curvature")
check_group_size = _scalar_check("group_size")
check_lag = _scalar_check("lag")
check_momentum = _scalar_check("momentum")


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
