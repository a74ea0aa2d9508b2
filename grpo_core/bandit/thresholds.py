"""Measured stability thresholds of the softmax bandit, next to the oscillator's predictions.

The critical gain ``a = eta K`` at fixed ``mu``, ``k_ref`` and the smallest unstable ``k_ref`` at fixed
``eta``, ``mu``, both from the zero crossing of the measured growth rate
(:func:`grpo_core.bandit.stability.growth_rates`), set beside the continuous and exact predictions of
:mod:`grpo_core.bandit.prediction` (book chapter "The bandit: where the mean field is exact"):

* :func:`critical_a`: the measured critical ``a = eta K`` at fixed ``mu``, ``k_ref``
  (vectorised sweep of ``eta``, then the zero crossing of the growth rate).
* :func:`critical_k_ref`: the measured smallest unstable integer ``k_ref`` at fixed ``eta``, ``mu``.
* :func:`threshold_table`: the chapter's table of measured against predicted critical ``a``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..model.hyperparameters import check_beta, check_k_ref, check_mu
from ..validation import check_integer, check_real
from .prediction import _interior_fixed_point, predicted_critical_a, predicted_critical_k_ref
from .spec import BanditSpec
from .stability import _broadcast_configs, _steps_for, growth_rates

__all__ = ["CriticalA", "critical_a", "critical_k_ref", "threshold_table"]


@dataclass(frozen=True)
class CriticalA:
    """Result of :func:`critical_a` (arrays of shape (C,) over the settings)."""

    mu: np.ndarray
    k_ref: np.ndarray
    beta: float
    curvature: float
    p_star: float
    measured: np.ndarray
    predicted_continuous: np.ndarray
    predicted_exact: np.ndarray


def critical_a(
    spec: BanditSpec,
    *,
    mu: Any,
    k_ref: Any,
    beta: float,
    points: int = 12,
    rounds: int = 4,
    a_range: tuple[float, float] = (1e-3, 8.0),
) -> CriticalA:
    """Measured critical ``a = eta K`` of the bandit, for several (mu, k_ref) settings at once.

    A vectorised sweep: ``points`` learning rates per setting, log-spaced over ``a_range / K``, all
    in one mean-field batch (:func:`growth_rates`); the bracket around the first sign change of the
    growth rate is refined ``rounds`` times, and the threshold is the zero crossing of the growth
    rate interpolated linearly in ``log a`` inside the final bracket.

    Parameters
    ----------
    spec : BanditSpec
    mu, k_ref : float / int or sequences (broadcast to C settings)
    beta : float >= 0
        KL weight (sets ``p*`` and ``K``; must leave an interior fixed point).
    points : int >= 4
        Learning rates per setting and round.
    rounds : int >= 1
    a_range : (float, float)
        Range of ``a`` searched, ``0 < low < high``. A setting still stable at ``high`` gets ``inf``.

    Returns
    -------
    CriticalA
        ``measured`` next to the oscillator's ``predicted_continuous`` and ``predicted_exact``.

    Raises
    ------
    ParameterError
        ``beta``, ``mu`` or ``k_ref`` out of range, ``mu`` and ``k_ref`` of different lengths,
        ``points < 4``, ``rounds < 1``, an ``a_range`` that is not ``0 < low < high``; a ``beta`` that
        leaves no interior fixed point.

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> res = critical_a(spec, mu=0.0, k_ref=2, beta=1.0, points=12, rounds=2)
    >>> round(float(res.measured[0]), 2), round(float(res.predicted_exact[0]), 2)
    (0.62, 0.62)
    """
    b = check_beta(beta)
    mu_c = np.atleast_1d(np.asarray([check_mu(x) for x in np.atleast_1d(np.asarray(mu, dtype=object)).tolist()]))
    k_c = np.atleast_1d(np.asarray([check_k_ref(x) for x in np.atleast_1d(np.asarray(k_ref, dtype=object)).tolist()]))
    try:
        mu_c, k_c = np.broadcast_arrays(mu_c, k_c)
    except ValueError:
        raise ParameterError("mu", "`mu` and `k_ref` must be scalars or sequences of one length") from None
    points = check_integer("points", points, low=4)
    rounds = check_integer("rounds", rounds, low=1)
    lo_a, hi_a = (check_real("a_range", x, low=0.0, low_inclusive=False) for x in a_range)
    if hi_a <= lo_a:
        raise ParameterError("a_range", f"`a_range` must be (low, high) with low < high; got {a_range!r}")
    fp = _interior_fixed_point(spec, b)
    k_stiff = fp.stiffness
    n_set = mu_c.size
    lo = np.full(n_set, math.log(lo_a))
    hi = np.full(n_set, math.log(hi_a))
    measured = np.full(n_set, math.inf)
    # Settings that need runs of similar length share a batch (lengths rounded up to powers of 2).
    need = np.array([_steps_for(np.array([k]), np.array([m])) for k, m in zip(k_c, mu_c)])
    bucket = 2 ** np.ceil(np.log2(need)).astype(int)
    for _ in range(rounds):
        grid = np.linspace(lo, hi, points, axis=-1)  # (n_set, points) in log a (a = eta K)
        a_vals = np.exp(grid)
        rates = np.empty((n_set, points))
        for steps in np.unique(bucket):
            sel = np.nonzero(bucket == steps)[0]
            rates[sel] = growth_rates(
                spec,
                eta=(a_vals[sel] / k_stiff).ravel(),
                mu=np.repeat(mu_c[sel], points),
                k_ref=np.repeat(k_c[sel], points),
                beta=b,
                steps=int(steps),
            ).reshape(sel.size, points)
        unstable = rates > 0
        for i in range(n_set):
            if not unstable[i].any():
                measured[i] = math.inf
                continue
            j = int(np.argmax(unstable[i]))
            if j == 0:
                measured[i] = a_vals[i, 0]
                lo[i], hi[i] = grid[i, 0] - 1.0, grid[i, 0]
                continue
            r0, r1 = rates[i, j - 1], rates[i, j]
            x = grid[i, j - 1] + (grid[i, j] - grid[i, j - 1]) * (-r0) / (r1 - r0)
            measured[i] = math.exp(x)
            lo[i], hi[i] = grid[i, j - 1], grid[i, j]
    cont, exact = predicted_critical_a(spec, mu_c, k_c)
    return CriticalA(
        mu=mu_c,
        k_ref=k_c,
        beta=b,
        curvature=k_stiff,
        p_star=fp.p_star,
        measured=measured,
        predicted_continuous=cont,
        predicted_exact=exact,
    )


def critical_k_ref(spec: BanditSpec, *, eta: Any, mu: Any, beta: float, k_max: int = 64) -> pd.DataFrame:
    """Measured smallest unstable ``k_ref`` for several (eta, mu) settings, next to both predictions.

    All ``k_ref = 1..k_max`` of all settings run in one mean-field batch (:func:`growth_rates`).

    Parameters
    ----------
    spec : BanditSpec
    eta, mu : float or sequences (broadcast to C settings)
    beta : float
        KL weight (interior fixed point required).
    k_max : int >= 1
        Largest ``k_ref`` tried; a setting stable up to it gets ``inf``.

    Returns
    -------
    pandas.DataFrame
        One row per setting: ``eta``, ``mu``, ``lag``, ``curvature``, ``a`` (= eta K),
        ``measured_critical_k_ref``, ``predicted_continuous``, ``predicted_exact``, and
        ``growth_rates`` (list over k_ref = 1..k_max).

    Raises
    ------
    ParameterError
        ``beta``, ``eta`` or ``mu`` out of range, ``eta`` and ``mu`` of different lengths, ``k_max < 1``;
        a ``beta`` that leaves no interior fixed point.

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> df = critical_k_ref(spec, eta=0.5, mu=0.5, beta=1.0, k_max=12)
    >>> int(df.measured_critical_k_ref[0]), int(df.predicted_exact[0])
    (4, 4)
    """
    b = check_beta(beta)
    k_max = check_integer("k_max", k_max, low=1)
    eta_c, mu_c, _, _ = _broadcast_configs(eta, mu, 1, b)
    fp = _interior_fixed_point(spec, b)
    ks = np.arange(1, k_max + 1)
    n_set = eta_c.size
    rates = growth_rates(
        spec, eta=np.repeat(eta_c, k_max), mu=np.repeat(mu_c, k_max), k_ref=np.tile(ks, n_set), beta=b
    ).reshape(n_set, k_max)
    rows = []
    for i in range(n_set):
        unstable = rates[i] > 0
        meas = float(ks[np.argmax(unstable)]) if unstable.any() else math.inf
        cont, exact = predicted_critical_k_ref(spec, eta=float(eta_c[i]), mu=float(mu_c[i]), curvature=fp.stiffness)
        rows.append(
            {
                "eta": float(eta_c[i]),
                "mu": float(mu_c[i]),
                "lag": spec.lag,
                "curvature": fp.stiffness,
                "a": float(eta_c[i] * fp.stiffness),
                "measured_critical_k_ref": meas,
                "predicted_continuous": cont,
                "predicted_exact": exact,
                "growth_rates": rates[i].tolist(),
            }
        )
    return pd.DataFrame(rows)


def threshold_table(settings: list[dict], *, beta: float = 1.0, base: BanditSpec | None = None) -> pd.DataFrame:
    """The chapter's threshold table: measured critical ``a = eta K`` against both predictions.

    Parameters
    ----------
    settings : list of dict
        Each with ``mu``, ``k_ref``, ``lag`` and optionally ``estimator`` and ``momentum``.
    beta : float
        KL weight.
    base : BanditSpec, optional
        Spec the settings modify (default: two arms, G -> inf mean field, mean baseline).

    Returns
    -------
    pandas.DataFrame
        Columns ``lag``, ``estimator``, ``momentum``, ``mu``, ``k_ref``, ``measured``,
        ``continuous``, ``exact``, ``measured_over_exact``, ``measured_over_continuous``, and the
        critical learning rate ``eta_star = measured / K``.

    Raises
    ------
    ParameterError
        Bad settings.

    Examples
    --------
    >>> df = threshold_table([{"mu": 0.0, "k_ref": 1, "lag": "constant"}])
    >>> round(float(df.measured[0]), 3)
    1.0
    """
    spec0 = base if base is not None else BanditSpec.binary(group_size=math.inf)
    groups: dict[tuple, list[int]] = {}
    for i, s in enumerate(settings):
        key = (s.get("lag", spec0.lag), s.get("estimator", spec0.estimator), s.get("momentum", spec0.momentum))
        groups.setdefault(key, []).append(i)
    rows: list[dict | None] = [None] * len(settings)
    for (lag, est, mom), idx in groups.items():
        spec = spec0.replace(lag=lag, estimator=est, momentum=mom)
        res = critical_a(
            spec, mu=[settings[i]["mu"] for i in idx], k_ref=[settings[i]["k_ref"] for i in idx], beta=beta
        )
        for j, i in enumerate(idx):
            m, c, e = float(res.measured[j]), float(res.predicted_continuous[j]), float(res.predicted_exact[j])
            rows[i] = {
                "lag": lag,
                "estimator": est,
                "momentum": mom,
                "mu": float(res.mu[j]),
                "k_ref": int(res.k_ref[j]),
                "measured": m,
                "continuous": c,
                "exact": e,
                "measured_over_exact": m / e,
                "measured_over_continuous": m / c,
                "eta_star": m / res.curvature,
                "curvature": res.curvature,
                "p_star": res.p_star,
            }
    return pd.DataFrame(rows)
