"""Validation of the training hyperparameters shared by the models (oscillator, bandit, advice).

One checker per hyperparameter, so every public function refuses the same bad values with the
same message (``"`mu` must be a finite number in [0, 1); got 1.0"``), plus the names of the lag
models and momentum conventions. Notation of DESIGN section 3.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ParameterError
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
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


def check_eta(eta: Any) -> float:
    """Step size ``eta``: a finite number ``> 0``.

    Raises
    ------
    ParameterError
        Otherwise, naming ``eta`` and the range.

    Examples
    --------
    >>> from grpo_core.hyperparameters import check_eta
    >>> check_eta("0.01")
    0.01
    """
    return check_real("eta", eta, low=0.0, low_inclusive=False)


def check_mu(mu: Any) -> float:
    """Momentum ``mu``: a finite number in ``[0, 1)``. Raises ParameterError otherwise."""
    return check_real("mu", mu, low=0.0, high=1.0, high_inclusive=False)


def check_k_ref(k_ref: Any) -> int:
    """Refresh interval ``k_ref``: an integer ``>= 1`` (``4.0`` is accepted, ``2.5`` is not)."""
    return check_integer("k_ref", k_ref, low=1)


def check_curvature(curvature: Any) -> float:
    """Curvature ``K``: a finite number ``> 0``. Raises ParameterError otherwise."""
    return check_real("curvature", curvature, low=0.0, low_inclusive=False)


def check_beta(beta: Any) -> float:
    """KL weight ``beta``: a finite number ``>= 0``. Raises ParameterError otherwise."""
    return check_real("beta", beta, low=0.0)


def check_kl_curvature(kl_curvature: Any) -> float:
    """Curvature of the KL term along the direction of motion: a finite number ``> 0``."""
    return check_real("kl_curvature", kl_curvature, low=0.0, low_inclusive=False)


def check_group_size(group_size: Any) -> int:
    """Group size ``G``: an integer ``>= 1``. Raises ParameterError otherwise."""
    return check_integer("group_size", group_size, low=1)


def check_lag(lag: Any) -> str:
    """Lag model: one of :data:`LAG_MODELS`."""
    return check_choice("lag", lag, LAG_MODELS)


def check_momentum(momentum: Any) -> str:
    """Momentum convention: one of :data:`MOMENTUM_STYLES`."""
    return check_choice("momentum", momentum, MOMENTUM_STYLES)


def check_mu_array(mu: Any) -> np.ndarray:
    """Array of momenta, each in ``[0, 1)``. Raises ParameterError otherwise."""
    arr = check_array("mu", mu, low=0.0)
    if arr.size and np.max(arr) >= 1.0:
        raise ParameterError("mu", f"`mu` must be a finite number in [0, 1); max is {float(np.max(arr))!r}")
    return arr


def check_k_ref_array(k_ref: Any) -> np.ndarray:
    """Array of refresh intervals, each an integer ``>= 1``; returned as int64."""
    arr = check_array("k_ref", k_ref, low=1.0)
    if arr.size and not np.all(arr == np.round(arr)):
        raise ParameterError("k_ref", "`k_ref` must be an integer >= 1; got non-integer value(s)")
    return arr.astype(np.int64)
