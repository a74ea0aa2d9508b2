"""The beta = 0 law: how the expected reward runs to its ceiling without a KL anchor.

Without the KL term there is no interior fixed point: the restoring force of the oscillator is gone
and the policy runs to the reward's ceiling. In learning-rate time ``tau = sum_t eta_t`` (plain
gradient steps; :mod:`grpo_core.model.schedule`) the mean-field flow of the logit ``x = logit(p)``
of a binary reward is one-dimensional, and integrates in closed form (our derivation; exact on the
softmax bandit, where ``x`` is the logit gap up to a constant):

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

Checked on the bandit's mean-field flow (tests/test_model_anchorless.py): within 1% of the reward
along the path for the mean baseline (G = 4, 16, inf) and the std-scaled limit.
On the committed real runs without a working anchor (:mod:`grpo_core.runs.anchorless`, as a fitted
law :class:`grpo_core.laws.anchorless.AnchorlessLaw`): in-sample R^2 no better than an exponential's
(the curves are noise-dominated), a smaller error than the exponential and the logistic when the
second half is forecast from the first (tests/test_anchorless_real_runs.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_choice, check_real

__all__ = ["ANCHORLESS_SCALES", "anchorless_logit", "anchorless_reward", "anchorless_rate"]

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
