"""The oscillator model's predictions for a bandit: gain, thresholds, noise and the predicted path.

The bridge is the stiffness ``K`` measured on the bandit at its fixed point
(:func:`grpo_core.bandit.stiffness`): the model's restoring gain per step is ``a = eta K`` with the
spec's momentum convention, and ``K`` already contains the KL pull, so the oscillator is called with
``curvature = K`` and ``beta = 0``. :func:`predicted_path` is what the bandit explorer and the
static bandit chart draw (the mean-field path next to the closed form and the exact recurrence);
:mod:`grpo_core.bandit.stability`, :mod:`grpo_core.bandit.thresholds` and :mod:`grpo_core.bandit.sweeps`
measure the bandit against these predictions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..model import noise, oscillator, stability, trajectories
from ..model.hyperparameters import check_beta, check_eta, check_k_ref, check_mu, check_mu_array
from ..validation import check_array
from .fixed_points import fixed_point
from .gradients import gradient_covariance
from .simulation import simulate
from .spec import BanditSpec

__all__ = [
    "oscillator_gain",
    "predicted_critical_a",
    "predicted_critical_k_ref",
    "predicted_noise",
    "predicted_path",
    "regime_given_stability",
]


def oscillator_gain(spec: BanditSpec, eta, mu, curvature) -> np.ndarray:
    """Restoring gain per optimizer step of the oscillator recurrence for this bandit.

    ``a = eta * K`` for heavy-ball momentum; ``(1 - mu) * eta * K`` for EMA momentum (the same
    recurrence with the gradient scaled by ``1 - mu``).

    Parameters
    ----------
    spec : BanditSpec
        Only its ``momentum`` is used.
    eta, mu, curvature : array_like
        Broadcast together.

    Returns
    -------
    ndarray
        The gain per step, in the broadcast shape of the inputs.

    Raises
    ------
    ParameterError
        ``eta`` or ``curvature`` not finite and > 0, ``mu`` outside [0, 1).

    Examples
    --------
    >>> float(oscillator_gain(BanditSpec.binary(momentum="ema"), 0.5, 0.5, 0.4))
    0.1
    """
    eta = check_array("eta", eta)
    curvature = check_array("curvature", curvature)
    mu = check_mu_array(mu)
    for name, arr in (("eta", eta), ("curvature", curvature)):
        if arr.size and np.any(arr <= 0):
            raise ParameterError(name, f"`{name}` must be > 0; min is {float(np.min(arr))!r}")
    a = eta * curvature
    if spec.momentum == "ema":
        a = a * (1.0 - mu)
    return a


def _interior_fixed_point(spec: BanditSpec, beta: float):
    fp = fixed_point(spec, beta)
    if not fp.interior:
        raise ParameterError(
            "beta", f"`beta` = {beta!r} leaves no interior fixed point (p runs to {fp.p_star:.3g}), so there is "
            "no threshold to measure; increase beta")
    return fp


def predicted_critical_a(spec: BanditSpec, mu, k_ref) -> tuple[np.ndarray, np.ndarray]:
    """Oscillator predictions of the critical ``a = eta K`` (continuous model, exact recurrence).

    From :func:`grpo_core.model.stability.critical_a_continuous` and
    :func:`grpo_core.model.stability.critical_a_exact` with the spec's lag model and momentum convention
    (for EMA the returned ``a`` is ``eta K``, the threshold on the learning rate times K).

    Returns
    -------
    continuous, exact : ndarray
        Broadcast shape of ``mu`` and ``k_ref``.

    Examples
    --------
    >>> c, e = predicted_critical_a(BanditSpec.binary(), 0.0, [1, 4])
    >>> c.round(4).tolist(), e.round(4).tolist()
    ([1.0, 0.25], [1.0, 0.3473])
    """
    cont = stability.critical_a_continuous(mu, k_ref, spec.lag, spec.momentum)
    exact = stability.critical_a_exact(mu, k_ref, spec.lag, spec.momentum)
    return np.asarray(cont, dtype=float), np.asarray(exact, dtype=float)


def predicted_critical_k_ref(spec: BanditSpec, *, eta: float, mu: float, curvature: float) -> tuple[float, float]:
    """Oscillator predictions of the critical ``k_ref`` at fixed ``eta``, ``mu`` and stiffness.

    Continuous: the real-valued ``K_ref`` at which the damping vanishes; exact: the smallest unstable
    integer of the discrete recurrence (:func:`grpo_core.model.stability.critical_value`, ``beta = 0``
    because the measured ``curvature`` already contains the KL pull).

    Returns
    -------
    continuous, exact : float
        ``inf`` if never unstable.

    Examples
    --------
    >>> predicted_critical_k_ref(BanditSpec.binary(), eta=0.1, mu=0.0, curvature=1.0)
    (10.0, 16.0)
    """
    kw = dict(eta=eta, mu=mu, curvature=curvature, beta=0.0, lag=spec.lag, momentum=spec.momentum)
    return (float(stability.critical_value("k_ref", method="continuous", **kw)),
            float(stability.critical_value("k_ref", method="exact", **kw)))


def predicted_noise(spec: BanditSpec, *, eta: float, mu: float, k_ref: int, beta: float) -> dict:
    """Exact linear-noise prediction of the stationary variance of ``p`` for a stochastic run.

    At the fixed point ``theta*`` the one-step estimate has the exact covariance ``Sigma``
    (:func:`grpo_core.bandit.gradient_covariance`); its component along the logit gap
    ``x`` (``u = 1_H/|H| - 1_L/|L|``) has variance ``sigma_x^2 = u' Sigma u``, and ``e = p - p*``
    moves by ``dp/dx`` per unit gap. The linearised recurrence (:mod:`grpo_core.model.oscillator`, gain
    ``a = eta K``) driven by per-step noise of standard deviation ``eta (dp/dx) sigma_x`` has the
    stationary variance of :func:`grpo_core.model.noise.stationary_variance_exact` (we pass
    ``noise_scale = (dp/dx) sigma_x sqrt(G)`` and ``group_size = G``, so that ``s^2 / G`` is the
    exact per-step variance, 1/G^2 terms included).

    Parameters
    ----------
    spec : BanditSpec
        Two-level symmetric bandit, finite G, exact KL.
    eta, mu, k_ref, beta : scalars

    Returns
    -------
    dict
        ``p_star``, ``curvature``, ``sigma_x2`` (per-step gap-noise variance), ``dp_dx``,
        ``variance_exact`` (discrete Lyapunov) and ``variance_continuous`` (continuous model).

    Raises
    ------
    ParameterError
        Non-symmetric bandit, infinite G, bad hyperparameters, no interior fixed point.

    References
    ----------
    Our derivation; book chapter "The bandit", section "Noise and the group size".

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=8, baseline="leave_one_out")
    >>> r = predicted_noise(spec, eta=0.5, mu=0.0, k_ref=1, beta=1.0)
    >>> round(r["variance_exact"] * 1e4, 2)   # measured in the chapter: 8.89e-4
    8.84
    """
    eta = check_eta(eta)
    mu = check_mu(mu)
    k_ref = check_k_ref(k_ref)
    beta = check_beta(beta)
    fp = _interior_fixed_point(spec, beta)
    if not fp.symmetric:
        raise ParameterError(
            "reward_probs", "`reward_probs` must have two levels with symmetric logits for the noise prediction"
        )
    q = np.asarray(spec.reward_probs)
    hi = (q == q.max()).astype(float)
    u = hi / hi.sum() - (1 - hi) / (1 - hi).sum()
    _, cov = gradient_covariance(spec, fp.theta_star)
    sigma_x2 = float(u @ cov @ u)
    pi = np.exp(fp.theta_star - fp.theta_star.max())
    pi /= pi.sum()
    pi_h = float(pi @ hi)
    dp_dx = (q.max() - q.min()) * pi_h * (1.0 - pi_h)
    g = int(spec.group_size)
    coeffs = oscillator.coefficients(eta, mu, k_ref, fp.stiffness, 0.0, lag=spec.lag, momentum=spec.momentum)
    scale = dp_dx * math.sqrt(sigma_x2 * g)
    return {
        "p_star": fp.p_star,
        "curvature": fp.stiffness,
        "sigma_x2": sigma_x2,
        "dp_dx": dp_dx,
        "variance_exact": noise.stationary_variance_exact(coeffs, scale, g),
        "variance_continuous": noise.stationary_variance(coeffs, scale, g),
    }


def predicted_path(spec: BanditSpec, *, eta: float, mu: float, k_ref: int, beta: float, steps: int) -> dict:
    """Mean-field path and oscillator prediction for one bandit configuration.

    Parameters
    ----------
    spec : BanditSpec
        The bandit (its lag model and momentum convention are used for the prediction too).
    eta, mu, k_ref, beta : float
        As :func:`grpo_core.bandit.simulate`.
    steps : int
        Horizon (optimizer steps).

    Returns
    -------
    dict
        ``fixed_point`` (:class:`~grpo_core.bandit.FixedPoint`), ``p0`` (initial expected reward),
        ``coefficients`` (the oscillator with ``curvature`` = the bandit's stiffness K and
        ``beta = 0``, since K already contains the KL pull), ``t`` (shape (steps+1,)),
        ``mean_field`` (the bandit's exact mean-field path, shape (steps+1,)), ``closed_form`` and
        ``discrete`` (oscillator predictions of ``p``, shape (steps+1,)), ``stable_exact``.

    Raises
    ------
    ParameterError
        Out-of-range hyperparameters; a fixed point that is not interior (no restoring force,
        e.g. too small a KL weight with std scaling), where there is nothing to predict.

    Examples
    --------
    >>> spec = BanditSpec.binary(arms=2, group_size=8)
    >>> pred = predicted_path(spec, eta=0.5, mu=0.0, k_ref=1, beta=1.0, steps=200)
    >>> round(pred["fixed_point"].p_star, 4), round(float(pred["mean_field"][-1]), 4)
    (0.7058, 0.7058)
    """
    fp = fixed_point(spec, beta)
    if not fp.interior:
        raise ParameterError(
            "beta",
            f"no interior fixed point at `beta` = {beta:g}: p runs to "
            f"{fp.p_star:.3g} with no restoring force; raise `beta`",
        )
    mf = simulate(spec, eta=eta, mu=mu, k_ref=k_ref, beta=beta, steps=steps, mean_field=True)
    p_mf = mf.p[0, 0]
    p0 = float(p_mf[0])
    coeffs = oscillator.coefficients(eta, mu, k_ref, fp.stiffness, 0.0, lag=spec.lag, momentum=spec.momentum)
    t = np.arange(steps + 1, dtype=float)
    e0 = p0 - fp.p_star
    closed = fp.p_star + trajectories.closed_form_trajectory(coeffs, t, e0=e0)
    discrete = fp.p_star + trajectories.discrete_trajectory(coeffs, steps, e0=e0)
    return {
        "fixed_point": fp,
        "p0": p0,
        "coefficients": coeffs,
        "stable_exact": bool(stability.is_stable_exact(coeffs.a, mu, k_ref, spec.lag, spec.momentum)),
        "t": t,
        "mean_field": p_mf,
        "closed_form": closed,
        "discrete": discrete,
    }


def regime_given_stability(shape: Any, stable: Any) -> np.ndarray:
    """A regime label whose stable/unstable call comes from a stability test, not from the run's length.

    :func:`grpo_core.bandit.stability.classify_trajectory` reads the shape of a finite run; near the
    threshold a slowly decaying oscillation keeps 90% of its amplitude over a few hundred steps and
    reads *divergent*, and a slowly growing one can read *oscillatory*. With the exact test's (or the
    measured growth rate's) verdict: unstable is *divergent*; a stable run that read *divergent* is a
    slowly decaying *oscillatory* one (a monotone approach that shrinks already reads *monotone*);
    other labels are kept. Our rule.

    Parameters
    ----------
    shape : str or array_like of str
        Labels from ``classify_trajectory`` (``monotone``, ``oscillatory``, ``divergent``).
    stable : bool or array_like of bool
        The stability test's verdict, broadcast against ``shape``.

    Returns
    -------
    ndarray of str
        ``monotone``, ``oscillatory`` or ``divergent``.

    Raises
    ------
    ParameterError
        A label that is not one of the three.

    Examples
    --------
    >>> regime_given_stability(["divergent", "oscillatory", "monotone"], [True, False, True]).tolist()
    ['oscillatory', 'divergent', 'monotone']
    """
    labels = np.asarray(shape, dtype=object)
    bad = sorted({str(x) for x in labels.ravel()} - {"monotone", "oscillatory", "divergent"})
    if bad:
        raise ParameterError("shape", f"`shape` labels must be monotone, oscillatory or divergent; got {bad}")
    ok = np.asarray(stable, dtype=bool)
    out = np.where(~ok, "divergent", np.where(labels == "divergent", "oscillatory", labels))
    return np.asarray(out, dtype=str)
