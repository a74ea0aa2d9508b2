"""The GRPO update's building blocks: group advantages, the clipped surrogate, the KL term.

Notation (book chapter "The GRPO update"): a prompt x gets a group of G completions
o_1..o_G from the behaviour policy pi_old, with rewards r_1..r_G. GRPO replaces PPO's learned
critic by the group itself:

    A_i = r_i - b_i,                 b_i = mean_j r_j              (mean baseline)
                                     b_i = mean_{j != i} r_j       (leave-one-out baseline)
    A_i <- A_i / (std_j r_j + eps)                                 (optional std scaling)

and maximises, per token, the clipped surrogate

    min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A),   rho = pi_theta / pi_old,

minus beta times a KL penalty to the reference policy pi_ref (TRL's k3 estimator).

Zero-spread groups (every completion scored the same) carry no learning signal: their
advantages are exactly 0, never NaN, whatever the baseline or scaling. "The same" allows for
floating-point residue: a group whose rewards differ by less than ``spread_rtol`` (default one part
in a million) of the reward scale is treated as zero-spread, so float32 rounding (rewards such as
1.0, 1.0000001, 0.9999999) is not inflated into advantages of +-1 by the std scaling.

References
----------
Shao et al. (2024), "DeepSeekMath", eq. (3) (GRPO objective, mean/std group advantages).
TRL ``GRPOTrainer`` (v1.x): ``(r - mean) / (std + 1e-4)`` with the unbiased (ddof = 1) group std,
k3 KL estimator ``exp(ref - logp) - (ref - logp) - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ParameterError
from .validation import check_array, check_broadcast, check_choice, check_integer, check_real

__all__ = [
    "DEFAULT_STD_EPS",
    "DEFAULT_SPREAD_RTOL",
    "zero_spread_mask",
    "group_advantages",
    "clipped_surrogate",
    "SurrogateTerms",
    "kl_k3",
    "kl_k3_grad",
    "expected_zero_spread_fraction",
]

#: Added to the group std before dividing (TRL's value), so a tiny std cannot explode advantages.
DEFAULT_STD_EPS = 1e-4
#: Reward spread (max - min) below this fraction of the reward scale counts as zero spread.
DEFAULT_SPREAD_RTOL = 1e-6

BASELINES = ("mean", "leave_one_out", "none")
SCALINGS = ("none", "group_std", "batch_std")


def zero_spread_mask(rewards, *, spread_rtol: float = DEFAULT_SPREAD_RTOL) -> np.ndarray:
    """Which groups have no reward spread (all completions scored the same).

    Parameters
    ----------
    rewards : array_like, shape (..., G)
        Rewards of each group's G completions (last axis).
    spread_rtol : float, >= 0
        A group is zero-spread when ``max - min <= spread_rtol * max(1, max |r|)``; the default
        (1e-6) absorbs float32 rounding residue (float32 resolution is 1.2e-7 relative).

    Returns
    -------
    ndarray of bool, shape (...)

    Raises
    ------
    ParameterError
        If ``rewards`` has no group axis or contains NaN/inf, or ``spread_rtol`` < 0.

    Examples
    --------
    >>> zero_spread_mask([[1, 1, 1, 1], [0, 1, 0, 0]]).tolist()
    [True, False]
    """
    r = check_array("rewards", rewards, min_size=1)
    if r.ndim < 1:
        raise ParameterError("rewards", "`rewards` must have a group axis (shape (..., G))")
    tol = check_real("spread_rtol", spread_rtol, low=0.0)
    spread = r.max(axis=-1) - r.min(axis=-1)
    scale = np.maximum(1.0, np.abs(r).max(axis=-1))
    return spread <= tol * scale


def group_advantages(
    rewards,
    *,
    baseline: str = "mean",
    scale: str = "none",
    eps: float = DEFAULT_STD_EPS,
    spread_rtol: float = DEFAULT_SPREAD_RTOL,
) -> np.ndarray:
    """Group-relative advantages of GRPO.

    Parameters
    ----------
    rewards : array_like, shape (..., G)
        Scalar rewards; the last axis is the group of G completions of one prompt; leading axes
        (prompts, configurations, seeds) are batched.
    baseline : {"mean", "leave_one_out", "none"}
        ``"mean"``: b = mean of the group (GRPO as published; equals (G-1)/G times the
        leave-one-out advantage). ``"leave_one_out"``: b_i = mean of the other G-1 rewards (the
        unbiased U-statistic form; needs G >= 2). ``"none"``: A = r (vanilla REINFORCE).
    scale : {"none", "group_std", "batch_std"}
        Divide by ``std + eps``: the group's own std (GRPO/TRL default ``scale_rewards="group"``),
        or the std over the whole batch (all leading axes and the group; TRL's ``"batch"``).
        The std is the unbiased one (ddof = 1), as TRL computes it; it needs G >= 2.
    eps : float, > 0
        Added to the std before dividing (TRL: 1e-4).
    spread_rtol : float, >= 0
        Zero-spread tolerance, see :func:`zero_spread_mask`.

    Returns
    -------
    ndarray, shape (..., G)
        Advantages (same units as the reward, or standard units when scaled). Exactly 0 in every
        zero-spread group with a baseline; ``baseline="none"`` (vanilla REINFORCE) returns the
        reward itself. With G = 1 the mean baseline gives 0 (a single completion has no group to
        compare with).

    Raises
    ------
    ParameterError
        Unknown ``baseline`` or ``scale``; NaN/inf rewards; ``eps`` <= 0; G < 2 with
        ``baseline="leave_one_out"`` or a std scaling; a std scaling without a baseline (it would
        divide a zero-spread group's rewards by ``eps``: advantages of 1e4).

    Notes
    -----
    Leave-one-out: ``r_i - (S - r_i)/(G - 1) = G/(G-1) (r_i - mean)``, computed in O(G).

    References
    ----------
    Shao et al. (2024), DeepSeekMath, eq. (3); TRL ``GRPOTrainer._generate_and_score_completions``.

    Examples
    --------
    >>> group_advantages([1.0, 0.0, 0.0, 0.0]).round(3).tolist()
    [0.75, -0.25, -0.25, -0.25]
    >>> group_advantages([1.0, 0.0, 0.0, 0.0], baseline="leave_one_out").round(3).tolist()
    [1.0, -0.333, -0.333, -0.333]
    >>> group_advantages([1.0, 1.0, 1.0, 1.0], scale="group_std").tolist()
    [0.0, 0.0, 0.0, 0.0]
    """
    r = check_array("rewards", rewards, min_size=1)
    if r.ndim < 1:
        raise ParameterError("rewards", "`rewards` must have a group axis (shape (..., G))")
    check_choice("baseline", baseline, BASELINES)
    check_choice("scale", scale, SCALINGS)
    eps = check_real("eps", eps, low=0.0, low_inclusive=False)
    g = r.shape[-1]
    if g < 2 and (baseline == "leave_one_out" or scale != "none"):
        what = "baseline='leave_one_out'" if baseline == "leave_one_out" else f"scale={scale!r}"
        raise ParameterError("group_size", f"`group_size` must be >= 2 with {what}; got {g}")
    if scale != "none" and baseline == "none":
        raise ParameterError("scale", f"`scale`={scale!r} needs a baseline ('mean' or 'leave_one_out'): the "
                                      "spread is measured around it")
    flat = zero_spread_mask(r, spread_rtol=spread_rtol)

    mean = r.mean(axis=-1, keepdims=True)
    if baseline == "mean":
        adv = r - mean
    elif baseline == "leave_one_out":
        adv = (r - mean) * (g / (g - 1))
    else:
        adv = r.copy()

    if scale == "group_std":
        adv = adv / (r.std(axis=-1, ddof=1, keepdims=True) + eps)
    elif scale == "batch_std":
        adv = adv / (r.std(ddof=1) + eps)

    if baseline != "none":
        adv = np.where(flat[..., None], 0.0, adv)
    return adv


@dataclass(frozen=True)
class SurrogateTerms:
    """Per-sample terms of the clipped surrogate (all arrays share the input's shape).

    Attributes
    ----------
    objective : ndarray
        ``min(rho A, clip(rho) A)``, the quantity GRPO maximises.
    ratio : ndarray
        Importance ratio rho = pi_theta / pi_old.
    clipped : ndarray of bool
        Where the clip is active (the gradient through rho is zero there).
    grad_logp : ndarray
        d objective / d log pi_theta: ``rho A`` where not clipped, 0 where clipped.
    """

    objective: np.ndarray
    ratio: np.ndarray
    clipped: np.ndarray
    grad_logp: np.ndarray

    @property
    def clip_fraction(self) -> float:
        """Fraction of samples whose ratio was clipped (TRL's ``clip_ratio/region_mean``)."""
        return float(np.mean(self.clipped))


def clipped_surrogate(
    logp, logp_old, advantages, *, eps_low: float = 0.2, eps_high: float | None = None
) -> SurrogateTerms:
    """PPO/GRPO clipped surrogate per sample (or per token).

    Parameters
    ----------
    logp, logp_old : array_like, shape (...)
        Log-probabilities (nats) of the sampled completion (or token) under the current policy
        and under the behaviour policy that generated it.
    advantages : array_like, shape (...)
        Advantages, broadcastable to ``logp``.
    eps_low : float in (0, 1)
        Lower clip range: rho is clipped at 1 - eps_low (TRL ``epsilon``, default 0.2).
    eps_high : float > 0, optional
        Upper clip range (TRL ``epsilon_high``; DAPO's "clip-higher"); defaults to ``eps_low``.

    Returns
    -------
    SurrogateTerms

    Raises
    ------
    ParameterError
        Non-finite inputs, shapes that do not broadcast together, or clip ranges outside their
        intervals.

    Notes
    -----
    With rho = 1 (on-policy: one iteration per generation) the objective's gradient is the
    score-function gradient ``A * grad log pi``: the ratio only matters when a generation batch is
    reused (``num_iterations`` > 1 or ``steps_per_generation`` > 1).

    Examples
    --------
    >>> t = clipped_surrogate([0.0, 0.5], [0.0, 0.0], [1.0, 1.0])
    >>> t.ratio.round(3).tolist(), t.clipped.tolist(), t.objective.round(3).tolist()
    ([1.0, 1.649], [False, True], [1.0, 1.2])
    """
    lp = check_array("logp", logp)
    lpo = check_array("logp_old", logp_old)
    a = check_array("advantages", advantages)
    lo = check_real("eps_low", eps_low, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    hi = lo if eps_high is None else check_real("eps_high", eps_high, low=0.0, low_inclusive=False)
    lp, lpo, a = check_broadcast(logp=lp, logp_old=lpo, advantages=a)
    ratio = np.exp(lp - lpo)
    clipped_ratio = np.clip(ratio, 1.0 - lo, 1.0 + hi)
    unclipped_obj = ratio * a
    clipped_obj = clipped_ratio * a
    objective = np.minimum(unclipped_obj, clipped_obj)
    # The min picks the clipped branch (zero gradient) only where it is strictly smaller.
    clipped = clipped_obj < unclipped_obj
    grad = np.where(clipped, 0.0, unclipped_obj)
    return SurrogateTerms(objective=objective, ratio=ratio, clipped=clipped, grad_logp=grad)


def kl_k3(logp, logp_ref) -> np.ndarray:
    """TRL's per-token KL estimator k3 of KL(pi_theta || pi_ref), in nats.

    ``k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1``: unbiased for the KL when tokens are
    sampled from pi_theta, and non-negative term by term.

    Parameters
    ----------
    logp, logp_ref : array_like, shape (...)
        Log-probabilities (nats) of the sampled tokens under the policy and the reference.

    Returns
    -------
    ndarray, shape (...)

    Raises
    ------
    ParameterError
        Non-finite inputs, or shapes that do not broadcast together.

    References
    ----------
    J. Schulman, "Approximating KL divergence" (2020), estimator k3; TRL ``GRPOTrainer``.

    Examples
    --------
    >>> float(kl_k3(0.0, 0.0))
    0.0
    """
    lp = check_array("logp", logp)
    lr = check_array("logp_ref", logp_ref)
    lp, lr = check_broadcast(logp=lp, logp_ref=lr)
    d = lr - lp
    return np.expm1(d) - d


def kl_k3_grad(logp, logp_ref, logp_old=None) -> np.ndarray:
    """Gradient weight of the k3 KL penalty on ``log pi``: how much ``beta * k3`` pushes each token.

    TRL adds ``beta * k3`` to each token's loss. Two versions:

    * plain k3 (TRL < 1.10, or ``use_bias_correction_kl=False``): the weight is
      ``d k3 / d logp = 1 - pi_ref / pi``. Averaged over tokens sampled from pi it gives
      ``sum_a (pi_a - pi_ref,a) grad log pi_a``, the gradient of ``KL(pi_ref || pi)`` (arguments
      swapped): k3's *value* is unbiased for ``KL(pi || pi_ref)``, its gradient is not.
    * ratio-corrected k3 (``logp_old`` given; TRL >= 1.10's default ``use_bias_correction_kl=True``):
      the penalty is ``rho * k3`` with the differentiable ratio ``rho = pi / pi_old``, and the weight
      is ``rho (k3 + 1 - pi_ref / pi)``. On-policy (``rho = 1``) that is ``log pi - log pi_ref``,
      whose average over tokens from pi is the exact gradient of ``KL(pi || pi_ref)``.

    Parameters
    ----------
    logp, logp_ref : array_like, shape (...)
        Log-probabilities (nats) of the sampled tokens under the policy and the reference.
    logp_old : array_like, shape (...), optional
        Under the behaviour policy that sampled them: selects the ratio-corrected version.

    Returns
    -------
    ndarray, shape (...)
        The weight on ``grad log pi`` (dimensionless); positive pushes the token's probability down
        when the penalty is minimised.

    Raises
    ------
    ParameterError
        Non-finite inputs, or shapes that do not broadcast together.

    References
    ----------
    J. Schulman, "Approximating KL divergence" (2020); TRL ``GRPOConfig.use_bias_correction_kl``
    (DeepSeek-V3.2 report). The expected gradients are our derivation (book chapter "The GRPO
    update", section "The KL term"), checked on a softmax policy in the tests.

    Examples
    --------
    >>> kl_k3_grad([0.0, -1.0], [0.0, 0.0]).round(4).tolist()
    [0.0, -1.7183]
    >>> kl_k3_grad([0.0, -1.0], [0.0, 0.0], logp_old=[0.0, -1.0]).round(4).tolist()  # = logp - logp_ref
    [0.0, -1.0]
    """
    lp = check_array("logp", logp)
    lr = check_array("logp_ref", logp_ref)
    if logp_old is None:
        lp, lr = check_broadcast(logp=lp, logp_ref=lr)
        return 0.0 - np.expm1(lr - lp)  # 0.0 - x: no negative zero where logp == logp_ref
    lo = check_array("logp_old", logp_old)
    lp, lr, lo = check_broadcast(logp=lp, logp_ref=lr, logp_old=lo)
    plain = 0.0 - np.expm1(lr - lp)
    return np.exp(lp - lo) * (kl_k3(lp, lr) + plain)


def expected_zero_spread_fraction(p, group_size) -> np.ndarray | float:
    """Probability that a group of G binary rewards has no spread: ``p**G + (1 - p)**G``.

    With a binary (0/1) reward and success probability p per completion, a group is all-correct
    with probability p^G and all-wrong with (1-p)^G; its advantages are then all zero (advantage
    degeneration). Compare with TRL's logged ``frac_reward_zero_std``.

    Parameters
    ----------
    p : float or array_like, in [0, 1]
        Per-completion success probability (of one prompt).
    group_size : int or array_like of int, >= 1
        G; broadcast against ``p``.

    Returns
    -------
    float or ndarray
        Fraction in [0, 1]; a float when both inputs are scalars.

    Raises
    ------
    ParameterError
        ``p`` outside [0, 1] or not finite; ``group_size`` < 1 or not an integer.

    Notes
    -----
    Over a batch of prompts with different difficulties, average this over the prompts' p, not
    at the mean p (the function is convex in p).

    Examples
    --------
    >>> round(expected_zero_spread_fraction(0.18, 4), 6)
    0.453172
    """
    pa = check_array("p", p, low=0.0, high=1.0)
    if np.ndim(group_size) == 0:
        ga = np.asarray(check_integer("group_size", group_size, low=1))
    else:
        ga = check_array("group_size", group_size, low=1, dtype=float)
        if not np.all(ga == np.round(ga)):
            raise ParameterError("group_size", "`group_size` must contain integers >= 1")
    out = pa**ga + (1.0 - pa) ** ga
    return float(out) if np.ndim(out) == 0 else out
