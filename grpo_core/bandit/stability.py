"""Measuring the softmax bandit's stability: regimes of its trajectories and growth rates.

The bandit (:mod:`grpo_core.bandit`) is simulated; the oscillator model (:mod:`grpo_core.model.oscillator`,
:mod:`grpo_core.model.stability`) predicts. The bridge is the stiffness ``K`` measured on the bandit at
its fixed point (:func:`grpo_core.bandit.stiffness`): the model's restoring gain per optimizer step
is ``a = eta * K`` with the momentum convention of the bandit's spec (heavy ball ``v = mu v + g``:
gain ``a``; EMA ``v = mu v + (1 - mu) g``: gain ``(1 - mu) a``). ``K`` already contains the KL
anchor's pull (it is measured with the KL term on), so the oscillator functions are called with
``curvature = K`` and ``beta = 0``.

The oscillator's predictions themselves (gain, thresholds, noise, the predicted path) are in
:mod:`grpo_core.bandit.prediction`; the threshold searches built on :func:`growth_rates` are in
:mod:`grpo_core.bandit.thresholds`, the trajectory sweeps (``k_ref``, G, variants) in
:mod:`grpo_core.bandit.sweeps`. What is measured here, and how (book chapter "The bandit: where the mean
field is exact"):

* :func:`classify_trajectory`: monotone / oscillatory / divergent, from a trajectory of ``p``.
* :func:`growth_rates`: the asymptotic growth rate per step of a small perturbation of the fixed
  point, from a mean-field run (deterministic): negative is stable.
* :func:`predicted_regimes`: the oscillator's regimes for the same hyperparameters, classified
  with the same rule.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..model import oscillator, trajectories
from ..model.hyperparameters import check_beta, check_eta, check_k_ref, check_mu
from ..validation import check_array, check_integer, check_real
from .prediction import _interior_fixed_point, oscillator_gain, regime_given_stability
from .simulation import simulate
from .spec import BanditSpec

__all__ = ["REGIMES", "classify_trajectory", "growth_rates", "predicted_regimes", "run_regimes"]

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

    e, m, k, b = (
        arr("eta", eta, check_eta),
        arr("mu", mu, check_mu),
        arr("k_ref", k_ref, check_k_ref),
        arr("beta", beta, check_beta),
    )
    try:
        return np.broadcast_arrays(e, m, k, b)
    except ValueError:
        raise ParameterError(
            "eta", "`eta`, `mu`, `k_ref` and `beta` must be scalars or sequences of one length"
        ) from None


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
        ``eta``, ``mu`` or ``k_ref`` out of range or of different lengths; a ``curvature`` or ``steps``
        that :func:`~grpo_core.model.oscillator.coefficients` or
        :func:`~grpo_core.model.trajectories.discrete_trajectory` refuses.

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
        with warnings.catch_warnings():
            # the oscillator's own recurrence overflowing float64 is its answer ("divergent"), not an overflow
            # of the bandit run: its warning would read as if the seeds had overflowed (`overflowed_seeds`)
            warnings.simplefilter("ignore", RuntimeWarning)
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


def run_regimes(spec: BanditSpec, *, eta: float, mu: float, k_ref: int, beta: float, trajectory: Any,
                p_star: float, curvature: float) -> dict[str, Any]:
    """The regime of one bandit setting, measured and predicted, with the stable/unstable call made by
    a stability test rather than by the run's length.

    Near the threshold a finite run cannot tell a slow decay from a slow growth
    (:func:`~grpo_core.bandit.prediction.regime_given_stability`). So: *measured* is the mean-field
    bandit's growth rate (:func:`growth_rates`, which sets its own run length) for stable or not,
    and the shape of ``trajectory``; *exact* is the exact recurrence's spectral-radius test
    (:func:`grpo_core.model.stability.is_stable_exact`) and the shape of its run from rest; the
    *continuous* regime is the oscillator's damping ratio (:func:`predicted_regimes`).

    Parameters
    ----------
    spec : BanditSpec
    eta, mu : float
    k_ref : int
    beta : float
        KL weight (interior fixed point).
    trajectory : array_like, shape (T,)
        The mean-field expected reward of the run; ``T < 8`` is not classified.
    p_star, curvature : float
        The fixed point and its stiffness K.

    Returns
    -------
    dict
        ``growth_rate_measured`` (per step; > 0 unstable), ``stable_exact`` (bool),
        ``regime_measured`` (str, or None for a run under 8 points), ``regime_continuous``,
        ``regime_exact``: each one of :data:`REGIMES`.

    Raises
    ------
    ParameterError
        ``eta``, ``mu``, ``k_ref``, ``beta`` or ``curvature`` out of range (as :func:`growth_rates` and
        :func:`predicted_regimes` check them).

    Examples
    --------
    >>> from grpo_core.bandit import BanditSpec, fixed_point, simulate
    >>> spec = BanditSpec.binary()
    >>> fp = fixed_point(spec, 1.0)
    >>> mf = simulate(spec, eta=0.0085, mu=0.9, k_ref=37, beta=1.0, steps=500, mean_field=True)
    >>> r = run_regimes(spec, eta=0.0085, mu=0.9, k_ref=37, beta=1.0, trajectory=mf.p[0, 0], p_star=fp.p_star,
    ...                 curvature=fp.stiffness)
    >>> r["stable_exact"], r["regime_exact"], r["regime_measured"]  # k_ref 38 is the first unstable one
    (True, 'oscillatory', 'oscillatory')
    """
    from ..model.stability import is_stable_exact

    rate = float(growth_rates(spec, eta=eta, mu=mu, k_ref=k_ref, beta=beta)[0])
    stable = bool(is_stable_exact(oscillator_gain(spec, eta, mu, curvature), mu, k_ref, lag=spec.lag,
                                  momentum=spec.momentum))
    pred = predicted_regimes(spec, eta=eta, mu=mu, k_ref=k_ref, curvature=curvature)
    p = np.asarray(trajectory, dtype=float)
    measured = (str(regime_given_stability(classify_trajectory(p, p_star), rate <= 0)[()])
                if p.shape[-1] >= 8 else None)
    return {"growth_rate_measured": rate, "stable_exact": stable, "regime_measured": measured,
            "regime_continuous": str(pred.continuous[0]),
            "regime_exact": str(regime_given_stability(pred.exact[0], stable)[()])}
