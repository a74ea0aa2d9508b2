"""Measuring the softmax bandit against the oscillator model: regimes, thresholds, noise vs G.

The bandit (:mod:`grpo_core.bandit`) is simulated; the oscillator model (:mod:`grpo_core.model.oscillator`,
:mod:`grpo_core.model.stability`) predicts. The bridge is the stiffness ``K`` measured on the bandit at
its fixed point (:func:`grpo_core.bandit.stiffness`): the model's restoring gain per optimizer step
is ``a = eta * K`` with the momentum convention of the bandit's spec (heavy ball ``v = mu v + g``:
gain ``a``; EMA ``v = mu v + (1 - mu) g``: gain ``(1 - mu) a``). ``K`` already contains the KL
anchor's pull (it is measured with the KL term on), so the oscillator functions are called with
``curvature = K`` and ``beta = 0``.

The oscillator's predictions themselves (gain, thresholds, noise, the predicted path) are in
:mod:`grpo_core.bandit.prediction`. What is measured here, and how (book chapter "The bandit: where the mean field is
exact"):

* :func:`classify_trajectory`: monotone / oscillatory / divergent, from a trajectory of ``p``.
* :func:`growth_rates`: the asymptotic growth rate per step of a small perturbation of the fixed
  point, from a mean-field run (deterministic): negative is stable.
* :func:`critical_a`: the measured critical ``a = eta K`` at fixed ``mu``, ``k_ref``
  (vectorised sweep of ``eta``, then the zero crossing of the growth rate).
* :func:`critical_k_ref`: the measured smallest unstable integer ``k_ref`` at fixed ``eta``, ``mu``.
* :func:`g_sweep`: mean trajectories and stationary variances across group sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..model import oscillator, trajectories
from ..model.hyperparameters import check_beta, check_eta, check_k_ref, check_mu
from ..validation import check_array, check_integer, check_real
from .fixed_points import fixed_point
from .prediction import _interior_fixed_point, predicted_critical_a, predicted_critical_k_ref, predicted_noise
from .simulation import simulate
from .spec import BanditSpec

__all__ = [
    "REGIMES",
    "classify_trajectory",
    "growth_rates",
    "critical_a",
    "critical_k_ref",
    "threshold_table",
    "predicted_regimes",
    "k_ref_sweep",
    "g_sweep",
    "compare_variants",
    "smallest_anchoring_beta",
]

#: Regime labels of a measured trajectory.
REGIMES = ("monotone", "oscillatory", "divergent")

#: Perturbation (logit units) of the fixed point in :func:`growth_rates`: small enough that the
#: run stays linear up to the saturation guard, large enough that a 10^5-fold decay still sits far
#: above the float64 rounding of p.
_DELTA = 1e-6
#: A deviation that has decayed below this fraction of its start is stable whatever the windows
#: say (below it, rounding noise of p would dominate the envelope).
_FLOOR = 1e-5
#: A perturbation that grows past this many times its start is unstable (the linear system from
#: rest never amplifies that much while stable in the ranges used here; checked in the tests).
_SATURATION = 1e4


def classify_trajectory(p, p_star, *, rtol: float = 1e-3) -> np.ndarray:
    """Regime of trajectories of the expected reward: monotone, oscillatory or divergent.

    With ``e = p - p*`` and ``e0 = |e(0)|``: *divergent* when the late amplitude (max ``|e|`` over
    the last quarter) is at least 0.9 times the mid amplitude (second quarter) and above
    ``rtol * e0`` (the deviation is not dying out), except that a trajectory that never overshoots
    and whose late amplitude is below the mid one is a slow monotone approach; else *oscillatory*
    when ``e`` changes sign with ``|e| > rtol * e0`` on both sides (it overshoots); else *monotone*.

    Parameters
    ----------
    p : array_like, shape (..., T), T >= 8
        Trajectories (mean over seeds for stochastic runs).
    p_star : float or array_like broadcastable to ``p.shape[:-1]``
        Fixed point.
    rtol : float in (0, 1)
        Relative tolerance: deviations below ``rtol * e0`` count as converged.

    Returns
    -------
    ndarray of str, shape (...)
        One of :data:`REGIMES` per trajectory.

    Raises
    ------
    ParameterError
        Fewer than 8 steps, a non-finite ``p_star``, ``rtol`` out of range. A trajectory holding
        NaN or inf (a run that overflowed float64) is *divergent*, not an error.

    Examples
    --------
    >>> t = np.arange(200)
    >>> classify_trajectory([0.5 + 0.2 * (1 - 0.9**t), 0.7 - 0.2 * 0.95**t * np.cos(0.3 * t)], 0.7).tolist()
    ['monotone', 'oscillatory']
    """
    arr = check_array("p", p, min_size=8, finite=False)
    tol = check_real("rtol", rtol, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    ps = check_array("p_star", p_star)
    # a run that overflowed float64 (NaN/inf after the overflow step) grew without bound: divergent
    overflowed = ~np.all(np.isfinite(arr), axis=-1)
    arr = np.where(np.isfinite(arr), arr, 0.0)
    e = arr - np.asarray(ps)[..., None]
    n = e.shape[-1]
    e0 = np.abs(e[..., 0])
    scale = np.where(e0 > 0, e0, np.abs(e).max(axis=-1))
    scale = np.where(scale > 0, scale, 1.0)
    mid = np.abs(e[..., n // 4 : n // 2]).max(axis=-1)
    late = np.abs(e[..., 3 * n // 4 :]).max(axis=-1)
    big = np.abs(e) > tol * scale[..., None]
    sgn = np.where(big, np.sign(e), 0.0)
    # Sign changes between consecutive significant samples (ignoring the small ones in between).
    crossed = np.zeros(e.shape[:-1], dtype=bool)
    last = np.zeros(e.shape[:-1])
    for i in range(n):
        s = sgn[..., i]
        crossed |= (s != 0) & (last != 0) & (s != last)
        last = np.where(s != 0, s, last)
    # A slow monotone approach (no overshoot, still shrinking) is not divergent, however little it
    # shrank over the window (a small learning rate); a sustained oscillation is.
    divergent = ((late >= 0.9 * mid) & (late > tol * scale) & (crossed | (late >= mid))) | overflowed
    out = np.where(divergent, "divergent", np.where(crossed, "oscillatory", "monotone"))
    return out.astype(object) if out.ndim else np.asarray(str(out), dtype=object)


def _steps_for(k_ref: np.ndarray, mu: np.ndarray) -> int:
    """Length of a growth-rate run: several periods of the slowest critical oscillation."""
    k = float(np.max(k_ref))
    m = float(np.max(mu))
    return int(min(40000, max(800, 40 * (k + 2) / math.sqrt(1.0 - m))))


def growth_rates(
    spec: BanditSpec,
    *,
    eta: Any,
    mu: Any = 0.0,
    k_ref: Any = 1,
    beta: Any,
    steps: int | None = None,
) -> np.ndarray:
    """Measured asymptotic growth rate per step of a small perturbation of the fixed point.

    Runs the mean-field bandit (deterministic, exact expected gradient) from ``theta* + delta u``
    (``u`` the mode that carries ``p``; ``delta = 1e-6``), from rest, and compares the amplitude of
    ``e = p - p*`` over the last quarter of the run with the amplitude over the quarter before the
    middle: ``rate = log(A_late / A_mid) / (steps / 2)``. A run whose deviation grows 10^4-fold is
    unstable; its rate is then the average growth up to that point. A run whose deviation falls
    below 10^-5 of its start before the middle is stable; the same two windows are then taken over
    the part of the run before the step from which it stays below (later steps hold only rounding
    noise). Negative: stable.

    Parameters
    ----------
    spec : BanditSpec
        The bandit (estimator, lag model, momentum, G, baseline, scaling).
    eta, mu, k_ref, beta : float or sequence
        Per-configuration hyperparameters (broadcast as in :func:`grpo_core.bandit.simulate`).
    steps : int, optional
        Run length; default grows with ``k_ref`` and ``1/sqrt(1 - mu)`` (slow oscillations need long
        runs).

    Returns
    -------
    ndarray, shape (C,)
        Growth rate per optimizer step (1/step).

    Raises
    ------
    ParameterError
        Bad hyperparameters, or a ``beta`` with no interior fixed point.

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> r = growth_rates(spec, eta=[0.5, 5.0], mu=0.0, k_ref=1, beta=1.0)
    >>> (r < 0).tolist()                      # a = 0.20 and 1.97 < 1 - mu ... only the first is stable
    [True, False]
    """
    eta_c, mu_c, k_c, beta_c = _broadcast_configs(eta, mu, k_ref, beta)
    fps = {b: _interior_fixed_point(spec, b) for b in np.unique(beta_c)}
    theta0 = np.stack([fps[b].theta_star + _DELTA * fps[b].direction for b in beta_c])
    p_star = np.array([fps[b].p_star for b in beta_c])
    n = _steps_for(k_c, mu_c) if steps is None else check_integer("steps", steps, low=8)
    run = simulate(spec, eta=eta_c, mu=mu_c, k_ref=k_c, beta=beta_c, steps=n, mean_field=True, theta0=theta0)
    e = np.abs(run.p[:, 0, :] - p_star[:, None])
    return _envelope_rate(e)


def _envelope_rate(e: np.ndarray) -> np.ndarray:
    n = e.shape[-1] - 1
    e0 = np.maximum(e[:, 0], 1e-300)
    mid = e[:, n // 4 : n // 2 + 1].max(axis=-1)
    late = e[:, 3 * n // 4 :].max(axis=-1)
    with np.errstate(divide="ignore"):
        rate = np.log(np.maximum(late, 1e-300) / np.maximum(mid, 1e-300)) / (n / 2)
        # Decayed below the floor before the mid window: the windows hold rounding noise only (or
        # exact zeros). Measure the same envelope ratio on the part of the run before the step from
        # which the deviation stays below the floor (a zero crossing dips below it earlier).
        gone = mid < _FLOOR * e0
        for i in np.flatnonzero(gone):
            above = np.flatnonzero(e[i, : n // 2 + 1] >= _FLOOR * e0[i])
            m = int(above[-1]) + 1 if above.size else 1
            if m < 8:  # too short for two windows: the average decay up to m
                rate[i] = np.log(_FLOOR) / m
                continue
            mid_i = e[i, m // 4 : m // 2 + 1].max()
            late_i = e[i, 3 * m // 4 : m + 1].max()
            rate[i] = np.log(max(late_i, 1e-300) / max(mid_i, 1e-300)) / (m / 2)
    over = e > _SATURATION * e0[:, None]
    sat = over.any(axis=-1)
    if np.any(sat):
        first = np.argmax(over, axis=-1)
        sat_rate = np.log(_SATURATION) / np.maximum(first, 1)
        rate = np.where(sat, np.maximum(sat_rate, np.abs(rate)), rate)
    return rate


def _broadcast_configs(eta, mu, k_ref, beta):
    def arr(name, v, check):
        a = np.atleast_1d(np.asarray(v, dtype=object))
        return np.array([check(x) for x in a.ravel().tolist()], dtype=np.int64 if name == "k_ref" else float)

    e, m, k, b = arr("eta", eta, check_eta), arr("mu", mu, check_mu), arr("k_ref", k_ref, check_k_ref), arr(
        "beta", beta, check_beta)
    try:
        return np.broadcast_arrays(e, m, k, b)
    except ValueError:
        raise ParameterError(
            "eta", "`eta`, `mu`, `k_ref` and `beta` must be scalars or sequences of one length"
        ) from None


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
        Bad inputs; no interior fixed point.

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
        Bad inputs; no interior fixed point.

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


def predicted_regimes(spec: BanditSpec, *, eta, mu, k_ref, curvature: float, steps: int = 400) -> pd.DataFrame:
    """The oscillator's regime predictions for the bandit's hyperparameters.

    ``continuous``: the continuous model's regime from its damping ratio
    (:func:`grpo_core.model.oscillator.coefficients`: overdamped / critically damped / underdamped /
    unstable), mapped to monotone / oscillatory / divergent. ``exact``: the exact discrete
    recurrence run from rest (:func:`grpo_core.model.trajectories.discrete_trajectory`) and classified with
    the same rule as the measurements (:func:`classify_trajectory`).

    Parameters
    ----------
    spec : BanditSpec
        Its ``lag`` and ``momentum``.
    eta, mu, k_ref : scalars or sequences (broadcast)
    curvature : float
        Measured stiffness K.
    steps : int
        Length of the exact recurrence run.

    Returns
    -------
    pandas.DataFrame
        ``eta``, ``mu``, ``k_ref``, ``damping_ratio``, ``continuous``, ``exact``.

    Raises
    ------
    ParameterError
        Bad inputs.

    Examples
    --------
    >>> spec = BanditSpec.binary()
    >>> df = predicted_regimes(spec, eta=0.25, mu=0.3, k_ref=[1, 2, 12], curvature=0.3932)
    >>> df.continuous.tolist(), df.exact.tolist()
    (['monotone', 'oscillatory', 'divergent'], ['monotone', 'oscillatory', 'divergent'])
    """
    eta_c, mu_c, k_c, _ = _broadcast_configs(eta, mu, k_ref, 0.0)
    names = {
        "overdamped": "monotone",
        "critically_damped": "monotone",
        "underdamped": "oscillatory",
        "unstable": "divergent",
    }
    rows = []
    for e, m, k in zip(eta_c, mu_c, k_c):
        c = oscillator.coefficients(float(e), float(m), int(k), curvature, 0.0, lag=spec.lag, momentum=spec.momentum)
        traj = trajectories.discrete_trajectory(c, steps)
        exact = str(classify_trajectory(np.clip(traj, -1e12, 1e12), 0.0)[()])
        rows.append(
            {
                "eta": float(e),
                "mu": float(m),
                "k_ref": int(k),
                "damping_ratio": float(c.damping_ratio),
                "continuous": names[c.regime],
                "exact": exact,
            }
        )
    return pd.DataFrame(rows)


def k_ref_sweep(
    spec: BanditSpec, *, eta: float, mu: float, beta: float, k_refs, steps: int = 300, seeds: int = 0
) -> dict:
    """Trajectories from the initial policy across ``k_ref`` at fixed ``eta``, ``mu``: regimes measured and predicted.

    Parameters
    ----------
    spec : BanditSpec
        Mean-field runs use it as given (``group_size=math.inf`` for the G -> inf limit).
    eta, mu, beta : float
    k_refs : sequence of int
    steps : int
    seeds : int
        If > 0 (and the spec's group size is finite), also run that many stochastic seeds per
        ``k_ref`` and report their mean.

    Returns
    -------
    dict
        ``trajectories``: DataFrame (``k_ref``, ``step``, ``p``, ``kind`` in {"mean field",
        "stochastic mean"}); ``regimes``: DataFrame per ``k_ref`` with ``measured`` (mean-field
        trajectory), ``continuous`` and ``exact`` (:func:`predicted_regimes`), ``damping_ratio``;
        ``p_star`` and ``curvature``.

    Raises
    ------
    ParameterError
        Bad inputs; no interior fixed point.
    """
    ks = [check_k_ref(k) for k in np.atleast_1d(k_refs).tolist()]
    fp = _interior_fixed_point(spec, check_beta(beta))
    mf = simulate(spec, eta=eta, mu=mu, k_ref=ks, beta=beta, steps=steps, mean_field=True)
    frames = [
        pd.DataFrame({"k_ref": k, "step": mf.steps, "p": mf.p[i, 0], "kind": "mean field"}) for i, k in enumerate(ks)
    ]
    if seeds and not spec.group_size_is_infinite:
        st = simulate(spec, eta=eta, mu=mu, k_ref=ks, beta=beta, steps=steps, seeds=seeds)
        frames += [
            pd.DataFrame({"k_ref": k, "step": st.steps, "p": st.p[i].mean(0), "kind": "stochastic mean"})
            for i, k in enumerate(ks)
        ]
    regimes = predicted_regimes(spec, eta=eta, mu=mu, k_ref=ks, curvature=fp.stiffness, steps=steps)
    regimes.insert(3, "measured", classify_trajectory(mf.p[:, 0], fp.p_star))
    return {
        "trajectories": pd.concat(frames, ignore_index=True),
        "regimes": regimes,
        "p_star": fp.p_star,
        "curvature": fp.stiffness,
    }


def g_sweep(
    base: BanditSpec,
    group_sizes,
    *,
    eta: float,
    beta: float,
    mu: float = 0.0,
    k_ref: int = 1,
    seeds: int = 256,
    steps: int = 300,
    burn_in: int | None = None,
    start: str = "reference",
    record_every: int = 1,
) -> dict:
    """Run the same bandit at several group sizes: mean trajectories and stationary variances.

    Parameters
    ----------
    base : BanditSpec
        Everything but the group size.
    group_sizes : sequence of int
        G values (each a separate batch of ``seeds`` runs; the seeds are the same at every G).
    eta, beta, mu, k_ref : scalars
    seeds : int
        Runs per G.
    steps : int
    burn_in : int, optional
        Steps discarded before the variance is measured (default: half the run).
    start : {"reference", "fixed_point"}
        Start from the spec's initial policy (transient: for mean trajectories) or from each G's own
        fixed point (stationary: for variances).
    record_every : int

    Returns
    -------
    dict
        ``trajectories``: DataFrame (``group_size``, ``step``, ``mean``, ``sem``, ``mean_field``) with
        the seed mean, its standard error and the exact finite-G mean-field trajectory;
        ``variance``: DataFrame (``group_size``, ``p_star``, ``variance``, ``variance_se``,
        ``predicted``) with the measured stationary variance of ``p`` (mean over the window of the
        across-seed variance), a batch-means standard error, and :func:`predicted_noise`;
        ``plateau``: DataFrame (``group_size``, ``p_star``, ``plateau``, ``plateau_se``,
        ``mean_field_end``): the seeds' time-averaged ``p`` after ``burn_in`` with its standard
        error, next to the finite-G fixed point and the mean-field run's last value.

    Raises
    ------
    ParameterError
        Bad inputs.
    """
    gs = [check_integer("group_size", g, low=1) for g in np.atleast_1d(group_sizes).tolist()]
    steps = check_integer("steps", steps, low=8)
    burn = steps // 2 if burn_in is None else check_integer("burn_in", burn_in, low=0, high=steps - 1)
    if start not in ("reference", "fixed_point"):
        raise ParameterError("start", f"`start` must be 'reference' or 'fixed_point'; got {start!r}")
    traj, var, plateau = [], [], []
    for g in gs:
        spec = base.replace(group_size=g)
        fp = _interior_fixed_point(spec, beta)
        theta0 = fp.theta_star if start == "fixed_point" else None
        run = simulate(
            spec,
            eta=eta,
            mu=mu,
            k_ref=k_ref,
            beta=beta,
            steps=steps,
            seeds=seeds,
            theta0=theta0,
            record_every=record_every,
        )
        mf = simulate(
            spec,
            eta=eta,
            mu=mu,
            k_ref=k_ref,
            beta=beta,
            steps=steps,
            mean_field=True,
            theta0=theta0,
            record_every=record_every,
        )
        p = run.p[0]
        traj.append(
            pd.DataFrame(
                {
                    "group_size": g,
                    "step": run.steps,
                    "mean": p.mean(0),
                    "sem": p.std(0, ddof=1) / math.sqrt(p.shape[0]),
                    "mean_field": mf.p[0, 0],
                }
            )
        )
        late = p[:, run.steps >= burn].mean(axis=1)  # per-seed time average over the late window
        plateau.append(
            {
                "group_size": g,
                "p_star": fp.p_star,
                "plateau": float(late.mean()),
                "plateau_se": float(late.std(ddof=1) / math.sqrt(late.size)),
                "mean_field_end": float(mf.p[0, 0, -1]),
            }
        )
        sel = run.steps >= burn
        v_t = p[:, sel].var(axis=0, ddof=1)
        nb = 8
        chunks = np.array_split(v_t, nb)
        means = np.array([c.mean() for c in chunks])
        pred = math.nan
        if fp.symmetric and spec.kl_estimator == "exact":
            pred = predicted_noise(spec, eta=eta, mu=mu, k_ref=k_ref, beta=beta)["variance_exact"]
        var.append(
            {
                "group_size": g,
                "p_star": fp.p_star,
                "variance": float(v_t.mean()),
                "variance_se": float(means.std(ddof=1) / math.sqrt(nb)),
                "predicted": pred,
            }
        )
    return {
        "trajectories": pd.concat(traj, ignore_index=True),
        "variance": pd.DataFrame(var),
        "plateau": pd.DataFrame(plateau),
    }


def compare_variants(
    base: BanditSpec, variants: list[dict], *, steps: int, seeds: int = 0, record_every: int = 1
) -> pd.DataFrame:
    """Trajectories of several variants of one bandit (mean field, and optionally stochastic).

    Parameters
    ----------
    base : BanditSpec
        The common bandit.
    variants : list of dict
        Each with a ``label``, the hyperparameters ``eta``, ``mu`` (default 0), ``k_ref``
        (default 1), ``beta``, optionally a ``panel`` name and any :class:`BanditSpec` field to
        change (``scale``, ``estimator``, ``lag``, ``group_size``, ...).
    steps : int
    seeds : int
        If > 0, also the mean over that many stochastic seeds (finite group size only).
    record_every : int

    Returns
    -------
    pandas.DataFrame
        Long format: ``panel``, ``label``, ``kind`` ("mean field" / "stochastic mean"), ``step``,
        ``p``, ``kl``, ``clip_ratio``, and the variant's ``p_star`` (NaN without an interior fixed
        point).

    Raises
    ------
    ParameterError
        Unknown spec fields or bad hyperparameters.

    Examples
    --------
    >>> df = compare_variants(BanditSpec.binary(group_size=math.inf),
    ...                       [{"label": "KL on", "eta": 0.5, "beta": 1.0},
    ...                        {"label": "KL off", "eta": 0.5, "beta": 0.0}],
    ...                       steps=50)
    >>> sorted(df.label.unique().tolist())
    ['KL off', 'KL on']
    """
    hyper = ("label", "panel", "eta", "mu", "k_ref", "beta")
    frames = []
    for v in variants:
        if "label" not in v or "eta" not in v or "beta" not in v:
            raise ParameterError("variants", "each variant needs a `label`, `eta` and `beta`")
        changes = {k: val for k, val in v.items() if k not in hyper}
        try:
            spec = base.replace(**changes)
        except TypeError as exc:
            raise ParameterError("variants", f"unknown bandit setting in variant {v['label']!r}: {exc}") from None
        kw = dict(
            eta=v["eta"],
            mu=v.get("mu", 0.0),
            k_ref=v.get("k_ref", 1),
            beta=v["beta"],
            steps=steps,
            record_every=record_every,
            metrics=True,
        )
        fp = fixed_point(spec, check_beta(v["beta"]))
        p_star = fp.p_star if fp.interior else math.nan
        runs = [("mean field", simulate(spec, mean_field=True, **kw))]
        if seeds and not spec.group_size_is_infinite:
            runs.append(("stochastic mean", simulate(spec, seeds=seeds, **kw)))
        for kind, run in runs:
            clip = np.full(run.steps.size, np.nan)  # nothing sampled at step 0
            clip[1:] = run.metrics["clip_ratio"][0, :, 1:].mean(0)
            frames.append(
                pd.DataFrame(
                    {
                        "panel": v.get("panel", ""),
                        "label": v["label"],
                        "kind": kind,
                        "step": run.steps,
                        "p": run.p[0].mean(0),
                        "kl": run.metrics["kl"][0].mean(0),
                        "clip_ratio": clip,
                        "p_star": p_star,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def smallest_anchoring_beta(spec: BanditSpec, betas) -> float:
    """Smallest KL weight in ``betas`` that gives the bandit an interior fixed point.

    With std scaling and ``G -> inf`` this is about 1.51 (book chapter "The bandit: where the mean field is exact"); at
    finite G the sample
    std caps the advantages' gain and far smaller weights anchor the policy.

    Parameters
    ----------
    spec : BanditSpec
    betas : array_like
        Candidate KL weights (>= 0), scanned in increasing order.

    Returns
    -------
    float
        The smallest anchoring value, or ``inf`` if none in ``betas`` anchors.

    Raises
    ------
    ParameterError
        Negative or non-finite ``betas``.

    Examples
    --------
    >>> b = smallest_anchoring_beta(BanditSpec.binary(group_size=math.inf, scale="group_std"),
    ...                             np.arange(1.40, 1.60, 0.01))
    >>> round(b, 2)
    1.51
    """
    grid = np.sort(check_array("betas", betas, ndim=1, min_size=1, low=0.0))
    for b in grid:
        if fixed_point(spec, float(b)).interior:
            return float(b)
    return math.inf
