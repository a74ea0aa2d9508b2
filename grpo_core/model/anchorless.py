"""The beta = 0 law: how the expected reward runs to its ceiling without a KL anchor.

Without the KL term there is no interior fixed point: the restoring force of the oscillator is gone
and the policy runs to the reward's ceiling. For plain gradient steps ``theta += eta_t g`` (SGD without
momentum), in learning-rate time ``tau = sum_t eta_t`` (:mod:`grpo_core.model.schedule`), the
mean-field flow of the logit ``x = logit(p)`` of a binary reward is one-dimensional, and integrates in
closed form (our derivation; exact on the softmax bandit, where ``x`` is the logit gap up to a
constant):

* mean baseline (GRPO without std scaling; Dr. GRPO, which also drops the std):
  ``dx/dtau = s p (1 - p)``, so ``x + sinh x = x0 + sinh x0 + s tau / 2``. Late on ``1 - p ~ 1/(s tau)``:
  a hyperbolic approach to the ceiling, not an exponential one.
* std-scaled advantages (GRPO's default, the ``G -> inf`` limit, ``std_eps -> 0``):
  ``dx/dtau = s sqrt(p (1 - p))``, so ``sinh(x/2) = sinh(x0/2) + s tau / 4``. Late on
  ``1 - p ~ 4 / (s tau)^2``: faster, because dividing by the shrinking std keeps the push alive.
  At a finite G the groups become all-correct as ``p -> 1`` and the approach turns hyperbolic again.

The rate ``s``: on a bandit with ``c`` correct arms out of ``A`` (symmetric start),
``s = kappa (1/c + 1/(A - c))`` with ``kappa = (G - 1)/G`` for the plain mean baseline, 1 for
leave-one-out and for the std-scaled limit. On an LLM it is a fitted parameter (per unit learning
rate; it absorbs the curvature of the logits along the reward direction), like the ceiling.

Where the oscillator picture applies: only with a restoring force, i.e. a KL anchor (beta > 0, with
std scaling beta above about 1.51 on the two-arm bandit) or a reward that saturates below 1 for
another reason (a capability ceiling, a length penalty). With beta = 0 and a reward that can reach 1,
the curve is this law, and its late phase is a power law, so a single-exponential fit underestimates
the final reward and overestimates how early the plateau comes.

Which optimizer (our derivation and measurements on the bandit, mean baseline, G = 8, two arms,
eta = 0.02; tests/test_domain_claims_oscillator.py):

* plain SGD: the law. Local slope of ``log(1 - p)`` against ``log(tau)``: -1.005 over tau in
  [1000, 2000], and ``(1 - p) s tau`` = 1.004 at tau = 2000 (eta = 0.05).
* momentum: heavy ball (``v = mu v + g``) only rescales time, ``tau = sum_t eta_t / (1 - mu)``; EMA
  momentum (``v = mu v + (1 - mu) g``) leaves ``tau = sum_t eta_t``. Past the first steps the curve is
  the plain-SGD one (heavy ball, mu = 0.9: within 1.1% in ``1 - p`` from tau = 16 on).
* Adam (TRL's default): not this law. Its step is ``eta m / sqrt(v)``, so a shrinking gradient does
  not shrink the step in proportion, and the approach steepens: the local log-log slope over tau in
  [4, 8], [16, 32], [64, 128] is -1.49, -1.68, -2.72 noise-free (betas (0.9, 0.999)) and -1.48,
  -1.67, -2.68 with 64 rollouts per step (8 prompts x G = 8; mean of 128 seeds), against -1.00,
  -1.10, -1.04 for SGD (the law's own slopes). Noise-free and late, ``1 - p`` falls exponentially
  in *steps*, by ``beta2^(1/2)`` per step whatever the learning rate (once ``eta`` is well above
  ``1 - beta2``, until ``sqrt(v)`` reaches Adam's ``eps``): the gradient then decays exactly as fast
  as ``v`` forgets. So under Adam the curve is not even a function of ``tau`` alone. The closed
  forms above, and their late power laws, are plain-SGD results; on an Adam run fit the law as an
  empirical curve (:class:`grpo_core.laws.anchorless.AnchorlessLaw`), not as the derived one.

Checked on the bandit's mean-field flow (tests/test_model_anchorless.py): within 1% of the reward
along the path for the mean baseline (G = 4, 16, inf) and the std-scaled limit, with SGD.
On the committed real runs without a working anchor (:mod:`grpo_core.runs.anchorless`, trained with
AdamW, so outside the derived law's domain; as a fitted law
:class:`grpo_core.laws.anchorless.AnchorlessLaw`): in-sample R^2 no better than an exponential's
(the curves are noise-dominated), a smaller error than the exponential and the logistic when the
second half is forecast from the first (tests/test_anchorless_real_runs.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_choice, check_real

__all__ = ["ANCHORLESS_SCALES", "anchorless_logit", "anchorless_reward", "anchorless_rate", "approach_slopes"]

ANCHORLESS_SCALES = ("none", "group_std")


def _solve_x_plus_sinh(c: np.ndarray) -> np.ndarray:
    """The root of ``x + sinh x = c`` (increasing in x), by Newton from ``asinh(c)`` and ``c / 2``."""
    x = np.where(np.abs(c) > 2.0, np.arcsinh(c), c / 2.0)
    for _ in range(60):
        step = (x + np.sinh(x) - c) / (1.0 + np.cosh(x))
        x = x - step
        if np.all(np.abs(step) <= 1e-14 * np.maximum(1.0, np.abs(x))):
            break
    return x


def anchorless_logit(lr_time: Any, x0: float, rate: float, scale: str = "none") -> np.ndarray:
    """Logit ``x = logit(p)`` of the expected reward along the beta = 0 flow (our derivation).

    Parameters
    ----------
    lr_time : array_like, >= 0
        Learning-rate time ``tau`` (cumulative learning rate; :func:`grpo_core.model.schedule.lr_time`).
    x0 : float
        Logit of the starting reward fraction.
    rate : float > 0
        ``s`` (module docstring), per unit learning rate.
    scale : {"none", "group_std"}
        Mean baseline (also Dr. GRPO) or std-scaled advantages.

    Returns
    -------
    ndarray
        ``x(tau)``, shape of ``lr_time``.

    Raises
    ------
    ParameterError
        Negative or non-finite ``lr_time``, ``rate`` <= 0, unknown ``scale``.

    Examples
    --------
    >>> anchorless_logit([0.0, 10.0], 0.0, 2.0).round(4).tolist()
    [0.0, 2.6874]
    """
    tau = check_array("lr_time", lr_time, low=0.0)
    x0 = check_real("x0", x0)
    s = check_real("rate", rate, low=0.0, low_inclusive=False)
    check_choice("scale", scale, ANCHORLESS_SCALES)
    if scale == "group_std":
        return 2.0 * np.arcsinh(np.sinh(x0 / 2.0) + s * tau / 4.0)
    return _solve_x_plus_sinh(x0 + np.sinh(x0) + s * tau / 2.0)


def anchorless_reward(lr_time: Any, *, r0: float, rate: float, ceiling: float = 1.0, floor: float = 0.0,
                      scale: str = "none") -> np.ndarray:
    """Expected reward vs learning-rate time without a KL anchor: the forecaster's law (our derivation).

    ``R(tau) = floor + (ceiling - floor) * sigmoid(x(tau))`` with ``x`` from :func:`anchorless_logit`,
    ``x0 = logit((r0 - floor) / (ceiling - floor))``.

    Parameters
    ----------
    lr_time : array_like, >= 0
        Cumulative learning rate since the start (``tau = 0`` at ``r0``).
    r0 : float
        Reward at ``tau = 0``, strictly between ``floor`` and ``ceiling``.
    rate : float > 0
        ``s``, per unit learning rate (fitted on an LLM run; on the bandit :func:`anchorless_rate`).
    ceiling, floor : float
        The reward's reachable maximum and minimum (1 and 0 for an exact-match reward).
    scale : {"none", "group_std"}
        ``"none"``: mean baseline, Dr. GRPO (``1 - R ~ 1/(s tau)`` late); ``"group_std"``: std-scaled
        advantages (``~ 4/(s tau)^2`` late).

    Returns
    -------
    ndarray
        Reward, shape of ``lr_time``.

    Raises
    ------
    ParameterError
        ``r0`` outside (floor, ceiling), ``ceiling`` <= ``floor``, bad ``rate``, ``lr_time`` or ``scale``.

    Examples
    --------
    >>> anchorless_reward([0.0, 5.0, 50.0], r0=0.5, rate=2.0).round(4).tolist()
    [0.5, 0.8655, 0.9891]
    """
    lo = check_real("floor", floor)
    hi = check_real("ceiling", ceiling)
    if hi <= lo:
        raise ParameterError("ceiling", f"`ceiling` must be > `floor` ({lo!r}); got {hi!r}")
    r0 = check_real("r0", r0, low=lo, high=hi, low_inclusive=False, high_inclusive=False)
    f0 = (r0 - lo) / (hi - lo)
    x = anchorless_logit(lr_time, float(np.log(f0 / (1.0 - f0))), rate, scale)
    return lo + (hi - lo) / (1.0 + np.exp(-x))


def anchorless_rate(correct: int = 1, arms: int = 2, group_size: float = np.inf, baseline: str = "mean") -> float:
    """The rate ``s`` of the beta = 0 law on a symmetric softmax bandit (our derivation).

    ``s = kappa (1/c + 1/(A - c))``; ``kappa = (G - 1)/G`` for the plain mean baseline (its expected
    gradient is shrunk by that factor), 1 for leave-one-out and for the std-scaled ``G -> inf`` limit.

    Raises
    ------
    ParameterError
        ``correct`` outside [1, arms - 1], ``group_size`` < 2, unknown ``baseline``.

    Examples
    --------
    >>> anchorless_rate(1, 2, 4)
    1.5
    """
    check_choice("baseline", baseline, ("mean", "leave_one_out"))
    a = check_real("arms", arms, low=2.0)
    c = check_real("correct", correct, low=1.0, high=a - 1.0)
    g = np.inf if np.isposinf(np.float64(group_size)) else check_real("group_size", group_size, low=2.0)
    kappa = (g - 1.0) / g if (baseline == "mean" and np.isfinite(g)) else 1.0
    return float(kappa * (1.0 / c + 1.0 / (a - c)))


def approach_slopes(lr_time: Any, reward: Any, windows: Any, *, ceiling: float = 1.0) -> np.ndarray:
    """Local slope of ``log(ceiling - R)`` against ``log(tau)`` in each window: how the reward nears its ceiling.

    The slope is the exponent of a local power law ``ceiling - R ~ tau^slope``: the beta = 0 law
    under plain SGD tends to -1 (mean baseline) or -2 (std scaling); a slope that keeps steepening
    is a faster-than-power approach, as under Adam (module docstring). Least-squares fit of
    ``log(ceiling - R)`` on ``log(tau)`` over the points with ``lo <= tau <= hi``.

    Parameters
    ----------
    lr_time : array_like, shape (T,), > 0 where used
        Learning-rate time (or steps) of each point.
    reward : array_like, shape (T,)
        Reward at each point, below ``ceiling`` where used.
    windows : array_like, shape (W, 2)
        ``(lo, hi)`` of each window, ``0 < lo < hi``, in the units of ``lr_time``.
    ceiling : float
        The reward's maximum (1 for an exact-match reward).

    Returns
    -------
    ndarray, shape (W,)
        The slope in each window (dimensionless).

    Raises
    ------
    ParameterError
        ``lr_time`` and ``reward`` of different shapes; a window with ``lo <= 0`` or ``hi <= lo``,
        fewer than 3 points, or a point whose reward is not below ``ceiling``.

    References
    ----------
    Our derivation; book chapter "From update rule to oscillator", check 3.

    Examples
    --------
    >>> tau = np.geomspace(1.0, 100.0, 50)
    >>> approach_slopes(tau, 1.0 - 0.5 / tau**2, [(1.0, 10.0), (10.0, 100.0)]).round(6).tolist()
    [-2.0, -2.0]
    """
    t = check_array("lr_time", lr_time, ndim=1)
    r = check_array("reward", reward, ndim=1)
    if r.shape != t.shape:
        raise ParameterError("reward", f"`reward` must have the shape of `lr_time` {t.shape}; got {r.shape}")
    top = check_real("ceiling", ceiling)
    w = check_array("windows", windows, ndim=2)
    if w.shape[1] != 2:
        raise ParameterError("windows", f"`windows` must have shape (W, 2); got {w.shape}")
    out = np.empty(w.shape[0])
    for i, (lo, hi) in enumerate(w):
        if not 0.0 < lo < hi:
            raise ParameterError("windows", f"`windows` must satisfy 0 < lo < hi; got ({lo!r}, {hi!r})")
        sel = (t >= lo) & (t <= hi)
        gap = top - r[sel]
        if sel.sum() < 3 or np.any(gap <= 0.0):
            raise ParameterError("windows", f"`windows` ({lo!r}, {hi!r}) needs >= 3 points with `reward` below "
                                 f"`ceiling`; got {int(sel.sum())} points, {int(np.sum(gap <= 0.0))} at or above it")
        out[i] = np.polyfit(np.log(t[sel]), np.log(gap), 1)[0]
    return out
