"""GRPO on a softmax bandit: the setting where the mean-field reduction is exact.

A policy ``pi = softmax(theta)`` over ``A`` arms; arm ``a`` pays reward 1 with probability
``q_a`` (binary rewards: ``q_a`` in {0, 1}, one or more correct arms; Bernoulli rewards: any
``q_a`` in [0, 1]). The expected reward is ``p = sum_a pi_a q_a``. Each optimizer step draws
``num_prompts`` (B) groups of ``group_size`` (G) arms from the behaviour policy, scores them, turns
the rewards into group advantages with :func:`grpo_core.grpo.group_advantages`, and ascends

    J(theta) = E[GRPO surrogate] - beta * KL(pi_theta || pi_ref)

with heavy-ball momentum (``v = mu v + g; theta += eta v``) or EMA momentum
(``v = mu v + (1 - mu) g``). Book chapter "The bandit: where the mean field is exact".

Two gradient estimators
-----------------------
``estimator="score"`` (the exact delay model): the whole gradient, reward part and KL part, is the
score-function gradient evaluated at the behaviour policy,
``g = (1/BG) sum_i A_i (e_{a_i} - pi_b) - beta grad KL(pi_b || pi_ref)``: a gradient that is
``d`` steps old, exactly the oscillator model's assumption.
``estimator="surrogate"`` (what TRL computes): the gradient of the clipped surrogate
``min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A)`` at the current policy, with the importance
ratio ``rho = pi_theta(a) / pi_b(a)`` (per-sample weights from
:func:`grpo_core.grpo.clipped_surrogate`), and the KL gradient at the current policy.

Two lag models (``k_ref`` optimizer steps): ``"constant"``, the behaviour policy is the policy
``k_ref`` steps back (``pi_b = pi_{t - k_ref}``); ``"refresh"``, the behaviour policy is refreshed
every ``k_ref`` steps and each optimizer step draws a fresh minibatch from it (TRL's
``steps_per_generation = k_ref``), so the lag cycles 0, 1, ..., k_ref - 1.

The KL term is either the exact gradient of ``KL(pi || pi_ref)`` for the softmax,
``pi * (log pi - log pi_ref - KL)`` (``kl_estimator="exact"``, deterministic; the expectation of
TRL >= 1.10's default ratio-corrected k3, ``use_bias_correction_kl=True``), or the gradient of the
plain per-sample k3 estimator ``exp(l_ref - l) - (l_ref - l) - 1`` on the sampled arms
(``kl_estimator="k3"``; TRL < 1.10), whose on-policy expectation is ``pi - pi_ref``: the gradient
of ``KL(pi_ref || pi)`` (arguments swapped), not of ``KL(pi || pi_ref)``. See
:func:`grpo_core.grpo.kl_k3_grad`.

Exact expectations (our derivation, book chapter "The bandit", section "Mean field")
-----------------------------------------------------------------------------------
Rewards are binary, so a group's advantages depend only on each sample's own reward and on the
number ``k`` of rewarded samples in the group: ``A_+(k)`` for a rewarded sample, ``A_-(k)`` for
an unrewarded one (tables built once from :func:`~grpo_core.grpo.group_advantages`). Given the
rewards, the arms are independent draws from ``pi_b`` restricted to rewarded (weights
``pi_b q``) or unrewarded (weights ``pi_b (1 - q)``) arms. Hence the exact expected reward gradient
at every finite G is

    E[g] = alpha_+ sum_a pi_b,a q_a f_+,a (e_a - pi_e) + alpha_- sum_a pi_b,a (1 - q_a) f_-,a (e_a - pi_e),
    alpha_+ = E[A_+(1 + J)],  alpha_- = E[A_-(J)],  J ~ Binomial(G - 1, p_b),

with ``f = 1, pi_e = pi_b`` for the score estimator and ``f_+ = rho 1[rho <= 1 + eps_high]``,
``f_- = rho 1[rho >= 1 - eps_low]``, ``pi_e = pi_theta`` for the surrogate. For the mean
baseline ``alpha_+ = (G-1)/G (1 - p)`` and ``alpha_- = -(G-1)/G p``, so
``E[g] = (G-1)/G pi * (q - p)``: the plain mean baseline shrinks the expected gradient by
(G-1)/G; leave-one-out removes the factor (``alpha_+ - alpha_- = 1`` at every G). ``G -> inf``:
``alpha_+ = (1 - p)/s``, ``alpha_- = -p/s`` with ``s = 1``, or ``s = sqrt(p (1 - p)) + eps`` with
std scaling. The stochastic simulator uses the same formula with the sampled counts in place of
the expectations, so the two modes share every line that is not sampling.

Random numbers
--------------
Each seed owns one stream of uniforms (``numpy.random.default_rng(seed)``), consumed at a fixed
rate of ``B * G`` numbers per step (one per sampled arm: its position in the behaviour policy's
CDF decides the arm and, for Bernoulli rewards, the reward). Configurations with the same seed
share these numbers (common random numbers), so a run's trajectory depends only on its
configuration and its seed, never on which other configurations are in the batch, and
comparisons across a sweep are not blurred by independent sampling noise.

At ``G = 1`` the mean baseline gives every sample advantage 0 (a single completion has nothing to
be compared with): the reward gradient vanishes and only the KL term acts, so the policy relaxes
to the reference. ``baseline="none"`` (vanilla REINFORCE) works at ``G = 1``; leave-one-out and
std scaling need ``G >= 2`` and are refused below.

References
----------
Shao et al. (2024), DeepSeekMath, eq. (3) (GRPO objective); TRL ``GRPOTrainer`` (v1.x) for the
clipped surrogate, k3 KL and ``steps_per_generation``; J. Schulman (2020), "Approximating KL
divergence" (k3). The exact expectations, fixed points and stiffness are our derivation, book
chapter "The bandit: where the mean field is exact".
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize
from scipy.special import gammaln, xlog1py, xlogy

from ..errors import ParameterError
from ..grpo import DEFAULT_STD_EPS, clipped_surrogate, group_advantages
from ..model.hyperparameters import (
    LAG_MODELS,
    MOMENTUM_STYLES,
    check_beta,
    check_eta,
    check_k_ref,
    check_mu,
)
from ..softmax import log_softmax
from ..validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "LAGS",
    "ESTIMATORS",
    "MOMENTA",
    "KL_ESTIMATORS",
    "BanditSpec",
    "BanditRun",
    "FixedPoint",
    "expected_gradient",
    "sample_gradient",
    "gradient_covariance",
    "simulate",
    "fixed_point",
    "reduced_flow",
    "stiffness",
    "advantage_coefficients",
]

LAGS = LAG_MODELS
ESTIMATORS = ("score", "surrogate")
MOMENTA = MOMENTUM_STYLES
KL_ESTIMATORS = ("exact", "k3")
BASELINES = ("mean", "leave_one_out", "none")
SCALES = ("none", "group_std")

#: Fixed points closer than this (relative) to the extreme rewards are not interior.
_EDGE = 1e-6
#: Work (configurations x seeds x groups x group size x steps) above which a progress bar is shown.
PROGRESS_THRESHOLD = 2e8
#: Bytes of uniforms drawn per block of steps (per-seed streams are drawn in blocks).
_BLOCK_BYTES = 1 << 24
#: Memory a :func:`simulate` call may plan for (recorded trajectories, state, per-step samples);
#: a larger request is refused up front instead of failing in numpy or swapping.
MAX_MEMORY_BYTES = 4 << 30
#: Largest number of arms and largest finite group size a :class:`BanditSpec` accepts: the exact
#: mean field sums over Bin(G - 1, p) and every step holds (prompts x G x arms) arrays, so beyond
#: these a single step would not fit in memory (the experiments here use A <= 64, G <= 1024).
MAX_ARMS = 100_000
MAX_GROUP_SIZE = 1_000_000
#: Most seeds in one :func:`simulate` call (each has its own random generator).
MAX_SEEDS = 1_000_000


# ----------------------------------------------------------------------------------------------
# The specification
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BanditSpec:
    """Everything a batch of bandit runs shares (the per-run knobs eta, mu, k_ref, beta are not here).

    Parameters
    ----------
    reward_probs : sequence of float, shape (A,), each in [0, 1]
        Probability that arm ``a`` pays reward 1 (``q_a``). Binary rewards: 0/1 entries (the 1s
        are the correct arms). At least two arms, not all equal (otherwise nothing can be learnt).
    group_size : int >= 1, or ``math.inf``
        G, samples per group. ``inf`` (the ``G -> infinity`` limit) is allowed only in mean-field
        runs. ``G >= 2`` with ``baseline="leave_one_out"`` or ``scale="group_std"``.
    num_prompts : int >= 1
        B, groups per optimizer step (all of the single bandit "prompt"): N = B G samples per step.
    baseline : {"mean", "leave_one_out", "none"}
        Group baseline (see :func:`grpo_core.grpo.group_advantages`).
    scale : {"none", "group_std"}
        Divide advantages by the group's std (ddof = 1) plus ``std_eps`` (GRPO / TRL default).
        TRL's batch-std scaling couples the groups of a step and is not modelled. Needs a baseline.
    estimator : {"score", "surrogate"}
        Stale score-function gradient (exact delay model) or the clipped surrogate with importance
        ratios (module docstring).
    lag : {"constant", "refresh"}
        Lag model of the behaviour policy (module docstring).
    momentum : {"heavy_ball", "ema"}
        ``v = mu v + g`` or ``v = mu v + (1 - mu) g``; then ``theta += eta v``.
    kl_estimator : {"exact", "k3"}
        Exact gradient of KL(pi || pi_ref) (the mean of TRL >= 1.10's ratio-corrected k3), or the
        gradient of the plain sampled k3 estimator (TRL < 1.10).
    eps_low, eps_high : float
        Clip range of the surrogate: ``rho`` is clipped to ``[1 - eps_low, 1 + eps_high]``
        (TRL ``epsilon`` = 0.2 and ``epsilon_high``, default ``eps_low``; DAPO's clip-higher uses
        0.28). ``eps_low`` in (0, 1), ``eps_high`` > 0.
    std_eps : float > 0
        Added to the std before dividing (TRL: 1e-4).
    init_logits, ref_logits : sequence of float, shape (A,), optional
        Initial logits and reference logits (nats); default: zeros (uniform). ``ref_logits``
        defaults to ``init_logits``.

    Raises
    ------
    ParameterError
        Any value outside its range; ``group_size`` < 2 with leave-one-out or std scaling; std
        scaling without a baseline; fewer than 2 arms; all reward probabilities equal.

    Examples
    --------
    >>> spec = BanditSpec.binary(arms=4, correct=1, group_size=8)
    >>> spec.num_arms, spec.reward_probs
    (4, (1.0, 0.0, 0.0, 0.0))
    """

    reward_probs: tuple[float, ...]
    group_size: float = 8
    num_prompts: int = 1
    baseline: str = "mean"
    scale: str = "none"
    estimator: str = "score"
    lag: str = "constant"
    momentum: str = "heavy_ball"
    kl_estimator: str = "exact"
    eps_low: float = 0.2
    eps_high: float | None = None
    std_eps: float = DEFAULT_STD_EPS
    init_logits: tuple[float, ...] | None = None
    ref_logits: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        q = check_array("reward_probs", self.reward_probs, ndim=1, low=0.0, high=1.0)
        if q.size > MAX_ARMS:
            raise ParameterError("arms", f"`arms` must be an integer in [2, {MAX_ARMS}]; got {q.size}")
        if q.size < 2:
            raise ParameterError("arms", f"`arms` must be an integer >= 2; got {q.size}")
        if np.ptp(q) == 0:
            raise ParameterError(
                "reward_probs",
                "`reward_probs` must differ between arms (at least one correct and one wrong arm); "
                f"got all equal to {q[0]!r}",
            )
        object.__setattr__(self, "reward_probs", tuple(float(x) for x in q))
        g = self.group_size
        if isinstance(g, float | np.floating) and math.isinf(g) and g > 0:
            object.__setattr__(self, "group_size", math.inf)
        else:
            object.__setattr__(self, "group_size", check_integer("group_size", g, low=1, high=MAX_GROUP_SIZE))
        object.__setattr__(self, "num_prompts", check_integer("num_prompts", self.num_prompts, low=1))
        check_choice("baseline", self.baseline, BASELINES)
        check_choice("scale", self.scale, SCALES)
        check_choice("estimator", self.estimator, ESTIMATORS)
        check_choice("lag", self.lag, LAGS)
        check_choice("momentum", self.momentum, MOMENTA)
        check_choice("kl_estimator", self.kl_estimator, KL_ESTIMATORS)
        if self.group_size < 2 and (self.baseline == "leave_one_out" or self.scale != "none"):
            what = "baseline='leave_one_out'" if self.baseline == "leave_one_out" else "scale='group_std'"
            raise ParameterError("group_size", f"`group_size` must be >= 2 with {what}; got {self.group_size}")
        if self.scale != "none" and self.baseline == "none":
            raise ParameterError("scale", "`scale`='group_std' needs a baseline ('mean' or 'leave_one_out')")
        lo = check_real("eps_low", self.eps_low, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        object.__setattr__(self, "eps_low", lo)
        hi = lo if self.eps_high is None else check_real("eps_high", self.eps_high, low=0.0, low_inclusive=False)
        object.__setattr__(self, "eps_high", hi)
        object.__setattr__(self, "std_eps", check_real("std_eps", self.std_eps, low=0.0, low_inclusive=False))
        a = q.size
        init = np.zeros(a) if self.init_logits is None else check_array("init_logits", self.init_logits, ndim=1)
        if init.size != a:
            raise ParameterError("init_logits", f"`init_logits` must have one entry per arm ({a}); got {init.size}")
        ref = init if self.ref_logits is None else check_array("ref_logits", self.ref_logits, ndim=1)
        if ref.size != a:
            raise ParameterError("ref_logits", f"`ref_logits` must have one entry per arm ({a}); got {ref.size}")
        object.__setattr__(self, "init_logits", tuple(float(x) for x in init))
        object.__setattr__(self, "ref_logits", tuple(float(x) for x in ref))

    @classmethod
    def binary(cls, arms: int = 2, correct: int = 1, **kwargs: Any) -> BanditSpec:
        """A bandit with binary rewards: the first ``correct`` of ``arms`` arms pay 1, the others 0.

        Parameters
        ----------
        arms : int >= 2
        correct : int in [1, arms - 1]
        **kwargs
            Any other :class:`BanditSpec` field.

        Raises
        ------
        ParameterError
            ``arms`` < 2, or ``correct`` outside [1, arms - 1] (no correct arm, or no wrong one).

        Examples
        --------
        >>> BanditSpec.binary(arms=3, correct=2).reward_probs
        (1.0, 1.0, 0.0)
        """
        a = check_integer("arms", arms, low=2, high=MAX_ARMS)
        c = check_integer("correct", correct, low=1, high=a - 1)
        return cls(reward_probs=tuple([1.0] * c + [0.0] * (a - c)), **kwargs)

    @property
    def num_arms(self) -> int:
        """A, the number of arms."""
        return len(self.reward_probs)

    @property
    def binary_rewards(self) -> bool:
        """True when every arm's reward is deterministic (probability 0 or 1)."""
        return all(x in (0.0, 1.0) for x in self.reward_probs)

    @property
    def group_size_is_infinite(self) -> bool:
        """True for the ``G -> infinity`` limit (mean-field runs only)."""
        return math.isinf(self.group_size)

    def replace(self, **changes: Any) -> BanditSpec:
        """A copy with some fields changed (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)


# ----------------------------------------------------------------------------------------------
# Advantage tables and the shared gradient algebra
# ----------------------------------------------------------------------------------------------


def advantage_coefficients(spec: BanditSpec) -> tuple[np.ndarray, np.ndarray]:
    """Advantages of a rewarded and of an unrewarded sample, by the group's number of rewarded samples.

    With binary rewards a group's advantages depend only on a sample's own reward and on the
    count ``k`` of rewarded samples in its group. The tables are computed once with
    :func:`grpo_core.grpo.group_advantages` on the canonical groups ``[1]*k + [0]*(G-k)``.

    Parameters
    ----------
    spec : BanditSpec
        Finite ``group_size`` G.

    Returns
    -------
    a_plus, a_minus : ndarray, shape (G + 1,)
        ``a_plus[k]``: advantage of a rewarded sample in a group with ``k`` rewarded samples
        (``a_plus[0] = 0``, unused); ``a_minus[k]``: of an unrewarded one (``a_minus[G] = 0``).

    Raises
    ------
    ParameterError
        If ``spec.group_size`` is infinite.

    Examples
    --------
    >>> ap, am = advantage_coefficients(BanditSpec.binary(group_size=4))
    >>> ap.tolist(), am.tolist()
    ([0.0, 0.75, 0.5, 0.25, 0.0], [0.0, -0.25, -0.5, -0.75, 0.0])
    """
    if spec.group_size_is_infinite:
        raise ParameterError("group_size", "`group_size` must be finite for the advantage tables")
    g = int(spec.group_size)
    canon = (np.arange(g)[None, :] < np.arange(g + 1)[:, None]).astype(float)
    adv = group_advantages(canon, baseline=spec.baseline, scale=spec.scale, eps=spec.std_eps)
    a_plus = np.zeros(g + 1)
    a_minus = np.zeros(g + 1)
    a_plus[1:] = adv[1:, 0]
    a_minus[:g] = adv[:g, g - 1]
    return a_plus, a_minus


class _Algebra:
    """Precomputed pieces of one spec: reward vector, reference, advantage tables."""

    def __init__(self, spec: BanditSpec):
        self.spec = spec
        self.q = np.asarray(spec.reward_probs)
        self.num_arms = self.q.size
        # Sums over the (short) arm axis as products with ones: numpy's row-wise reduce is slow there.
        self.ones = np.ones(self.num_arms)
        self.log_ref = log_softmax(np.asarray(spec.ref_logits))
        self.infinite = spec.group_size_is_infinite
        if not self.infinite:
            g = int(spec.group_size)
            self.g = g
            self.a_plus, self.a_minus = advantage_coefficients(spec)
            j = np.arange(g)
            self.j = j
            self.log_comb = gammaln(g) - gammaln(j + 1.0) - gammaln(g - j)
        # Boundaries of the CDF intervals used to turn uniforms into (arm, reward) counts.
        self.binary = spec.binary_rewards

    # -- mean field -----------------------------------------------------------------------------
    def alphas(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact E[A_+(1 + J)] and E[A_-(J)], J ~ Bin(G - 1, p); G -> inf limits."""
        spec = self.spec
        if self.infinite:
            b = p if spec.baseline != "none" else np.zeros_like(p)
            if spec.scale == "group_std":
                var = p * (1.0 - p)
                safe = np.where(var > 0, var, 1.0)
                s = np.sqrt(safe) + spec.std_eps
                return np.where(var > 0, (1.0 - b) / s, 0.0), np.where(var > 0, -b / s, 0.0)
            return 1.0 - b, -b
        pp = p[..., None]
        n = self.g - 1
        w = np.exp(self.log_comb + xlogy(self.j, pp) + xlog1py(n - self.j, -pp))
        return w @ self.a_plus[1:], w @ self.a_minus[:-1]

    # -- shared ---------------------------------------------------------------------------------
    def clip_factors(self, logp_e: np.ndarray, logp_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-arm gradient factors of the surrogate for positive/negative advantages, and clip masks."""
        terms = clipped_surrogate(
            logp_e[None], logp_b[None], np.array([1.0, -1.0]).reshape((2,) + (1,) * logp_e.ndim),
            eps_low=self.spec.eps_low, eps_high=self.spec.eps_high,
        )
        return terms.grad_logp[0], -terms.grad_logp[1], terms.clipped

    def kl_gradient(self, logp_e: np.ndarray, pi_e: np.ndarray, weights_b: np.ndarray | None) -> np.ndarray:
        """Gradient of the KL term (to be subtracted, times beta) at the evaluation policy.

        ``weights_b``: sampling weights of the arms (behaviour probabilities in mean field, sampled
        frequencies in stochastic mode); only used by the k3 estimator.
        """
        if self.spec.kl_estimator == "exact":
            lr = logp_e - self.log_ref
            kl = (pi_e * lr) @ self.ones
            return pi_e * (lr - kl[..., None])
        # k3 per sample: d/dtheta [exp(l_ref - l) - (l_ref - l) - 1] = (1 - ref/pi)(e_a - pi).
        h = weights_b * (1.0 - np.exp(self.log_ref - logp_e))
        return h - pi_e * (h @ self.ones)[..., None]

    def reward_gradient(self, w_plus, w_minus, f_plus, f_minus, pi_e) -> np.ndarray:
        """``sum_a (w_+ f_+ + w_- f_-)_a (e_a - pi_e)``; the w's are per-arm advantage masses."""
        weff = w_plus if f_plus is None else w_plus * f_plus
        weff = weff + (w_minus if f_minus is None else w_minus * f_minus)
        return weff - pi_e * (weff @ self.ones)[..., None]


def _cumsum_arms(x: np.ndarray) -> np.ndarray:
    """Cumulative sum over the (short) last axis, slice by slice (numpy's row-wise scan is slow there)."""
    if x.shape[-1] > 32:
        return np.cumsum(x, axis=-1)
    out = np.empty_like(x)
    acc = x[..., 0].copy()
    out[..., 0] = acc
    for i in range(1, x.shape[-1]):
        acc += x[..., i]
        out[..., i] = acc
    return out


def _policies(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    logp = log_softmax(theta)
    return logp, np.exp(logp)


# ----------------------------------------------------------------------------------------------
# Gradients at given policies
# ----------------------------------------------------------------------------------------------


def expected_gradient(spec: BanditSpec, theta, theta_behaviour=None, beta: Any = 0.0) -> np.ndarray:
    """Exact expected GRPO ascent direction of the bandit (mean field), vectorised.

    ``E[g] = alpha_+ sum_a pi_b,a q_a f_+,a (e_a - pi_e) + alpha_- sum_a pi_b,a (1 - q_a) f_-,a
    (e_a - pi_e) - beta grad_KL`` (module docstring), at the spec's finite group size (exact
    finite-G expectation) or its ``G -> inf`` limit.

    Parameters
    ----------
    spec : BanditSpec
    theta : array_like, shape (..., A)
        Current logits (nats).
    theta_behaviour : array_like, shape (..., A), optional
        Logits of the behaviour policy that sampled the groups; default ``theta`` (on-policy).
    beta : float or array_like broadcastable to ``theta.shape[:-1]``, >= 0
        KL weight.

    Returns
    -------
    ndarray, shape (..., A)
        Expected ascent direction per unit learning rate (logit units per step); sums to 0 over arms.

    Raises
    ------
    ParameterError
        Non-finite logits, wrong arm count, negative beta.

    Examples
    --------
    Two arms, uniform policy, no KL: ``E[g] = (G-1)/G pi (q - p) = 0.75 * (0.25, -0.25)`` at G = 4.

    >>> spec = BanditSpec.binary(group_size=4)
    >>> expected_gradient(spec, [0.0, 0.0]).round(4).tolist()
    [0.1875, -0.1875]
    """
    alg = _Algebra(spec)
    th = _check_logits("theta", theta, alg.num_arms)
    thb = th if theta_behaviour is None else _check_logits("theta_behaviour", theta_behaviour, alg.num_arms)
    th, thb = np.broadcast_arrays(th, thb)
    b = check_array("beta", beta, low=0.0)
    logp_t, pi_t = _policies(th)
    logp_b, pi_b = _policies(thb)
    return _mean_field_gradient(alg, logp_t, pi_t, logp_b, pi_b, np.asarray(b)[..., None])[0]


def _mean_field_gradient(alg: _Algebra, logp_t, pi_t, logp_b, pi_b, beta):
    """Mean-field ascent direction and the expected clip fraction (0 for the score estimator)."""
    spec = alg.spec
    q = alg.q
    p_b = pi_b @ q
    ap, am = alg.alphas(p_b)
    w_plus = ap[..., None] * pi_b * q
    w_minus = am[..., None] * pi_b * (1.0 - q)
    clip_frac = None
    if spec.estimator == "score":
        g = alg.reward_gradient(w_plus, w_minus, None, None, pi_b)
        logp_e, pi_e = logp_b, pi_b
    else:
        fp, fm, clipped = alg.clip_factors(logp_t, logp_b)
        g = alg.reward_gradient(w_plus, w_minus, fp, fm, pi_t)
        logp_e, pi_e = logp_t, pi_t
        # Expected fraction of samples whose ratio is clipped (advantage signs: rewarded +, else -).
        clip_frac = np.sum(pi_b * (q * clipped[0] * (ap[..., None] > 0) + (1 - q) * clipped[1] * (am[..., None] < 0)), -1)
    g = g - beta * alg.kl_gradient(logp_e, pi_e, pi_b)
    return g, clip_frac


def _sampled_counts(alg: _Algebra, u: np.ndarray, pi_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rewarded and unrewarded counts per arm and group from uniforms.

    u : (G, S, B) uniforms in [0, 1); pi_b : (C, S, A). Returns n1, n0 of shape (C, S, B, A).
    Arm a owns the CDF interval [c_{a-1}, c_a); its first fraction q_a is "rewarded". Counting the
    uniforms below each boundary is the only per-sample work (the group axis first, so the count
    is a sum of G slices).
    """
    cdf = _cumsum_arms(pi_b)
    if alg.binary:
        bounds = cdf[..., :-1]  # (C, S, A - 1)
    else:
        lower = cdf - pi_b
        split = lower + alg.q * pi_b
        bounds = np.stack([split, cdf], axis=-1).reshape(*cdf.shape[:-1], -1)[..., :-1]  # (C, S, 2A - 1)
    below = np.add.reduce(u[:, None, :, :, None] < bounds[None, :, :, None, :], axis=0, dtype=np.int64)
    g = u.shape[0]
    if alg.num_arms == 2 and alg.binary:
        first = below[..., 0].astype(float)
        n = np.stack([first, g - first], axis=-1)
        return n * alg.q, n * (1.0 - alg.q)
    lead = below.shape[:-1]
    cum = np.concatenate([np.zeros((*lead, 1), dtype=below.dtype), below, np.full((*lead, 1), g, dtype=below.dtype)], -1)
    n = (cum[..., 1:] - cum[..., :-1]).astype(float)
    if alg.binary:
        return n * alg.q, n * (1.0 - alg.q)
    return n[..., 0::2], n[..., 1::2]


def _stochastic_gradient(alg: _Algebra, u, logp_t, pi_t, logp_b, pi_b, beta, want_metrics=False):
    """Sampled ascent direction from uniforms u (G, S, B); policies (C, S, A); beta (C, 1, 1)."""
    spec = alg.spec
    n1, n0 = _sampled_counts(alg, u, pi_b)
    k = (n1 @ alg.ones).astype(np.int64)  # (C, S, B)
    ap = alg.a_plus[k]
    am = alg.a_minus[k]
    n_total = u.shape[0] * u.shape[2]
    w_plus = np.einsum("csba,csb->csa", n1, ap) / n_total
    w_minus = np.einsum("csba,csb->csa", n0, am) / n_total
    clipped = None
    if spec.estimator == "score":
        g = alg.reward_gradient(w_plus, w_minus, None, None, pi_b)
        logp_e, pi_e = logp_b, pi_b
    else:
        fp, fm, clipped = alg.clip_factors(logp_t, logp_b)
        g = alg.reward_gradient(w_plus, w_minus, fp, fm, pi_t)
        logp_e, pi_e = logp_t, pi_t
    freq = None
    if spec.kl_estimator == "k3" or want_metrics:
        freq = (n1 + n0).sum(axis=-2) / n_total
    g = g - beta * alg.kl_gradient(logp_e, pi_e, freq)
    if not want_metrics:
        return g, None
    g_size = u.shape[0]
    mean_r = k.sum(-1) / n_total
    m = {
        "reward": mean_r,
        "reward_std": np.sqrt(np.maximum(mean_r * (1 - mean_r), 0.0) * (n_total / max(n_total - 1, 1))),
        "frac_reward_zero_std": np.mean((k == 0) | (k == g_size), axis=-1),
    }
    if clipped is not None:
        pos = np.einsum("csba,csa,csb->cs", n1, clipped[0].astype(float), (ap > 0).astype(float))
        neg = np.einsum("csba,csa,csb->cs", n0, clipped[1].astype(float), (am < 0).astype(float))
        m["clip_ratio"] = (pos + neg) / n_total
    else:
        m["clip_ratio"] = np.zeros_like(mean_r)
    return g, m


def sample_gradient(
    spec: BanditSpec, theta, theta_behaviour=None, beta: Any = 0.0, *, num_draws: int = 1, seed: int = 0
) -> np.ndarray:
    """Independent stochastic GRPO ascent directions at fixed policies (one step's estimator).

    Each draw samples ``num_prompts`` groups of ``group_size`` arms from the behaviour policy and
    returns the same estimator the simulator uses. Their average converges to
    :func:`expected_gradient` (checked in the tests).

    Parameters
    ----------
    spec : BanditSpec
        Finite ``group_size``.
    theta, theta_behaviour : array_like, shape (A,)
        Current and behaviour logits (default: on-policy).
    beta : float >= 0
        KL weight.
    num_draws : int >= 1
        Number of independent estimates.
    seed : int
        Seed of the uniforms (``numpy.random.default_rng(seed)``).

    Returns
    -------
    ndarray, shape (num_draws, A)

    Raises
    ------
    ParameterError
        Infinite ``group_size``; bad logits, beta or ``num_draws``.

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=4, num_prompts=8)
    >>> sample_gradient(spec, [0.0, 0.0], num_draws=3, seed=1).shape
    (3, 2)
    """
    if spec.group_size_is_infinite:
        raise ParameterError("group_size", "`group_size` must be finite to sample gradients")
    alg = _Algebra(spec)
    th = _check_logits("theta", theta, alg.num_arms, ndim=1)
    thb = th if theta_behaviour is None else _check_logits("theta_behaviour", theta_behaviour, alg.num_arms, ndim=1)
    b = check_real("beta", beta, low=0.0)
    n = check_integer("num_draws", num_draws, low=1)
    rng = np.random.default_rng(seed)
    u = rng.random((n, spec.num_prompts, int(spec.group_size))).transpose(2, 0, 1)
    logp_t, pi_t = _policies(np.broadcast_to(th, (1, n, alg.num_arms)))
    logp_b, pi_b = _policies(np.broadcast_to(thb, (1, n, alg.num_arms)))
    g, _ = _stochastic_gradient(alg, u, logp_t, pi_t, logp_b, pi_b, b)
    return g[0]


def gradient_covariance(spec: BanditSpec, theta, theta_behaviour=None) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and covariance of one step's stochastic reward-gradient estimate.

    Condition on the number ``k ~ Binomial(G, p_b)`` of rewarded samples in a group: the rewarded
    samples are then i.i.d. with arm weights ``m1 = pi_b q / p_b`` and contribute
    ``A_+(k) c_+(a)`` each (``c_+(a) = f_+(a) (e_a - pi_e)``, module docstring), the unrewarded ones
    i.i.d. with ``m0 = pi_b (1 - q) / (1 - p_b)``. With ``S`` the group's sum,

        E[S | k] = k A_+ mu_1 + (G - k) A_- mu_0,   Cov[S | k] = k A_+^2 Sigma_1 + (G - k) A_-^2 Sigma_0,

    and the step's estimate is the mean of B groups' ``S / G``: ``Cov = (E_k Cov[S|k] +
    Cov_k E[S|k]) / (B G^2)``. Exact at every finite G, for every baseline and scaling (the std
    scaling included, where no closed form in G exists), for both estimators.

    Parameters
    ----------
    spec : BanditSpec
        Finite ``group_size``; ``kl_estimator="exact"`` (the KL gradient is then deterministic and
        adds no noise).
    theta, theta_behaviour : array_like, shape (A,)
        Current and behaviour logits (default on-policy).

    Returns
    -------
    mean : ndarray, shape (A,)
        Expected reward gradient (equals :func:`expected_gradient` with ``beta = 0``).
    cov : ndarray, shape (A, A)
        Covariance of the estimate per optimizer step (squared logit units).

    Raises
    ------
    ParameterError
        Infinite ``group_size``, ``kl_estimator="k3"``, bad logits.

    References
    ----------
    Our derivation (book chapter "The bandit", section "Noise"). For the leave-one-out baseline the
    trace equals the U-statistic MSE of :meth:`grpo_core.groupsize.ustat.BanditMoments.mse` (tested).

    Examples
    --------
    >>> m, c = gradient_covariance(BanditSpec.binary(group_size=2, baseline="leave_one_out"), [0.0, 0.0])
    >>> m.round(4).tolist(), round(float(np.trace(c)), 4)
    ([0.25, -0.25], 0.125)
    """
    if spec.group_size_is_infinite:
        raise ParameterError("group_size", "`group_size` must be finite for the gradient covariance")
    if spec.kl_estimator != "exact":
        raise ParameterError("kl_estimator", "`kl_estimator` must be 'exact' for the exact covariance (k3 adds sampled noise)")
    alg = _Algebra(spec)
    th = _check_logits("theta", theta, alg.num_arms, ndim=1)
    thb = th if theta_behaviour is None else _check_logits("theta_behaviour", theta_behaviour, alg.num_arms, ndim=1)
    logp_t, pi_t = _policies(th)
    logp_b, pi_b = _policies(thb)
    q = alg.q
    a = alg.num_arms
    if spec.estimator == "score":
        fp = fm = np.ones(a)
        pi_e = pi_b
    else:
        fp, fm, _ = alg.clip_factors(logp_t, logp_b)
        pi_e = pi_t
    basis = np.eye(a) - pi_e  # row a: e_a - pi_e
    p_b = float(pi_b @ q)

    def moments(weights, f):
        tot = weights.sum()
        if tot <= 0:
            return np.zeros(a), np.zeros((a, a))
        m = weights / tot
        rows = f[:, None] * basis
        mu = m @ rows
        second = rows.T @ (m[:, None] * rows)
        return mu, second - np.outer(mu, mu)

    mu1, sig1 = moments(pi_b * q, fp)
    mu0, sig0 = moments(pi_b * (1.0 - q), fm)
    g = alg.g
    k = np.arange(g + 1)
    pmf = np.exp(gammaln(g + 1.0) - gammaln(k + 1.0) - gammaln(g - k + 1.0) + xlogy(k, p_b) + xlog1py(g - k, -p_b))
    ap, am = alg.a_plus, alg.a_minus
    cond_mean = (k * ap)[:, None] * mu1 + ((g - k) * am)[:, None] * mu0  # (G+1, A)
    mean_s = pmf @ cond_mean
    cov_between = cond_mean.T @ (pmf[:, None] * cond_mean) - np.outer(mean_s, mean_s)
    cov_within = (pmf @ (k * ap**2)) * sig1 + (pmf @ ((g - k) * am**2)) * sig0
    scale = 1.0 / (spec.num_prompts * g * g)
    return mean_s / g, (cov_between + cov_within) * scale


# ----------------------------------------------------------------------------------------------
# The simulator
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BanditRun:
    """Result of :func:`simulate`: trajectories of a batch of (configurations x seeds).

    Attributes
    ----------
    spec : BanditSpec
    eta, mu, beta : ndarray, shape (C,)
        Learning rate, momentum, KL weight of each configuration.
    k_ref : ndarray of int, shape (C,)
        Lag (constant) or refresh interval (refresh), in optimizer steps.
    seeds : ndarray of int, shape (S,)
        Seeds (a single ``-1`` for mean-field runs, which are deterministic).
    mean_field : bool
    steps : ndarray of int, shape (T',)
        Optimizer steps at which the state was recorded (0 = initial policy).
    p : ndarray, shape (C, S, T')
        Expected reward ``sum_a pi_a q_a`` of the current policy (exact, not sampled).
    theta : ndarray, shape (C, S, A)
        Final logits.
    metrics : dict of str to ndarray, shape (C, S, T'), or empty
        With ``metrics=True``: TRL-style per-step logs, each recorded at the step that used them:
        ``reward`` (mean sampled reward of the step's B*G samples, drawn from the behaviour
        policy), ``reward_std`` (std, ddof = 1, of those B*G rewards: TRL >= 0.27's batch std),
        ``frac_reward_zero_std`` (fraction of the B groups with no reward spread), ``clip_ratio``
        (fraction of samples whose ratio was clipped, TRL's ``clip_ratio/region_mean``; 0 for the
        score estimator), ``grad_norm`` (Euclidean norm of the ascent direction g), and the exact
        ``kl`` (KL(pi || pi_ref), nats) and ``entropy`` (nats) of the policy after the step. The
        sampled ones are NaN at step 0 (nothing sampled yet). In mean field they are expectations
        (``reward_std = sqrt(p_b (1 - p_b))``, ``frac_reward_zero_std = p_b^G + (1 - p_b)^G``).
    """

    spec: BanditSpec
    eta: np.ndarray
    mu: np.ndarray
    k_ref: np.ndarray
    beta: np.ndarray
    seeds: np.ndarray
    mean_field: bool
    steps: np.ndarray
    p: np.ndarray
    theta: np.ndarray
    metrics: dict = field(default_factory=dict)

    @property
    def mean(self) -> np.ndarray:
        """Mean expected reward over seeds, shape (C, T')."""
        return self.p.mean(axis=1)

    def stationary_variance(self, burn_in: int) -> np.ndarray:
        """Variance of ``p`` over seeds and recorded steps after ``burn_in`` steps, shape (C,).

        Per configuration: ``mean_t Var_seeds(p_t)`` (across-seed variance, averaged over the
        stationary window), so a drift of the mean is not counted as fluctuation.

        Raises
        ------
        ParameterError
            If ``burn_in`` leaves no recorded step, or the run has a single seed.
        """
        b = check_integer("burn_in", burn_in, low=0)
        sel = self.steps >= b
        if not np.any(sel):
            raise ParameterError("burn_in", f"`burn_in` must be below the last step {int(self.steps[-1])}; got {b}")
        if self.p.shape[1] < 2:
            raise ParameterError("seeds", "`seeds` must be >= 2 to estimate a variance")
        return self.p[:, :, sel].var(axis=1, ddof=1).mean(axis=-1)


_CHECKS = {"eta": check_eta, "mu": check_mu, "k_ref": check_k_ref, "beta": check_beta}


def _per_config(name: str, value: Any) -> np.ndarray:
    """Validate a per-configuration hyperparameter (scalar or 1-D sequence) element by element."""
    arr = np.atleast_1d(np.asarray(value, dtype=object))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(name, f"`{name}` must be a number or a 1-D sequence of numbers; got shape {arr.shape}")
    out = [_CHECKS[name](v) for v in arr.tolist()]
    return np.asarray(out, dtype=np.int64 if name == "k_ref" else float)


def _check_logits(name: str, value, num_arms: int, ndim: int | None = None) -> np.ndarray:
    arr = check_array(name, value)
    if arr.ndim == 0 or arr.shape[-1] != num_arms or (ndim is not None and arr.ndim != ndim):
        raise ParameterError(name, f"`{name}` must have shape (..., {num_arms}) (one logit per arm); got {arr.shape}")
    return arr


def _seed_values(seeds: Any) -> np.ndarray:
    if np.ndim(seeds) == 0:
        s = check_integer("seeds", seeds, low=1, high=MAX_SEEDS)
        return np.arange(s, dtype=np.int64)
    arr = check_array("seeds", seeds, ndim=1, min_size=1, low=0.0)
    if arr.size > MAX_SEEDS:
        raise ParameterError("seeds", f"`seeds` may hold at most {MAX_SEEDS} values; got {arr.size}")
    if not np.all(arr == np.round(arr)):
        raise ParameterError("seeds", "`seeds` must be a count >= 1 or a sequence of non-negative integers")
    return arr.astype(np.int64)


class _UniformStreams:
    """One uniform stream per seed, drawn in blocks of steps (the values do not depend on the block size).

    Seed s draws ``B * G`` numbers per step, in the order (group, sample); they are stored with
    the sample axis first, shape (G, S, B) per step.
    """

    def __init__(self, seeds: np.ndarray, num_prompts: int, group_size: int, total_steps: int):
        self.gens = [np.random.default_rng(int(s)) for s in seeds]
        self.b, self.g = num_prompts, group_size
        per_step = num_prompts * group_size
        self.block = max(1, min(total_steps, _BLOCK_BYTES // (8 * per_step * len(seeds))))
        self.buf = None
        self.pos = self.block

    def next(self) -> np.ndarray:
        if self.pos == self.block:
            self.buf = np.empty((self.block, self.g, len(self.gens), self.b))
            for i, gen in enumerate(self.gens):
                draws = gen.random((self.block, self.b, self.g))
                self.buf[:, :, i, :] = draws.transpose(0, 2, 1)
            self.pos = 0
        out = self.buf[self.pos]
        self.pos += 1
        return out


def _check_memory(n_conf: int, n_seeds: int, n_steps: int, every: int, arms: int, depth: int, per_step: int,
                  metrics: bool) -> None:
    """Refuse a run whose arrays would exceed :data:`MAX_MEMORY_BYTES` (8-byte floats)."""
    n_rec = n_steps // every + 2
    runs = n_conf * n_seeds
    need = 8 * runs * (n_rec * (8 if metrics else 1) + arms * (depth + 8) + 3 * per_step * arms)
    if need > MAX_MEMORY_BYTES:
        gib, limit = need / 2**30, MAX_MEMORY_BYTES / 2**30
        raise ParameterError(
            "steps", f"`steps` ({n_steps}) x `seeds` ({n_seeds}) x configurations ({n_conf}) needs about {gib:.3g} GiB "
            f"(limit {limit:g} GiB): lower `steps` or `seeds`, or record every n-th step "
            "(`record_every` of grpo_core.bandit.simulate)")


def simulate(
    spec: BanditSpec,
    *,
    eta: Any,
    mu: Any = 0.0,
    k_ref: Any = 1,
    beta: Any = 0.0,
    steps: int,
    seeds: Any = 1,
    mean_field: bool = False,
    theta0: Any = None,
    record_every: int = 1,
    metrics: bool = False,
    progress: bool | None = None,
) -> BanditRun:
    """Run GRPO on the softmax bandit for a batch of configurations and seeds, as one array program.

    Per step (module docstring): draw B groups of G arms from the behaviour policy (or take the
    exact expectation in mean field), form group advantages, compute the ascent direction
    ``g`` (score or surrogate estimator, minus ``beta`` times the KL gradient), then
    ``v <- mu v + g`` (EMA: ``v <- mu v + (1 - mu) g``), ``theta <- theta + eta v``.

    Parameters
    ----------
    spec : BanditSpec
        Shared settings (arms, rewards, G, B, baseline, scaling, estimator, lag model, momentum).
    eta : float or sequence, > 0
        Learning rate (per optimizer step). Scalars and sequences of length C broadcast together
        with ``mu``, ``k_ref`` and ``beta`` to C configurations.
    mu : float or sequence, in [0, 1)
        Momentum coefficient.
    k_ref : int or sequence, >= 1
        Constant lag in steps (``lag="constant"``: the behaviour policy is ``theta_{t - k_ref}``)
        or refresh interval (``lag="refresh"``; 1 = on-policy).
    beta : float or sequence, >= 0
        KL weight to the reference policy.
    steps : int >= 1
        Optimizer steps T.
    seeds : int >= 1 or sequence of int >= 0
        Number of seeds (0..S-1) or the seed values. Ignored in mean field (deterministic).
    mean_field : bool
        Exact expected gradient instead of sampling (finite G: exact finite-G expectation;
        ``group_size=math.inf``: the G -> infinity limit).
    theta0 : array_like, shape (A,) or (C, A), optional
        Initial logits (default ``spec.init_logits``); the run starts from rest (zero velocity,
        and the lagged history filled with ``theta0``).
    record_every : int >= 1
        Record the state every this many steps (and at the last step).
    metrics : bool
        Also record TRL-style logs (see :class:`BanditRun`).
    progress : bool, optional
        Show a tqdm bar on stderr; default: only for large runs.

    Returns
    -------
    BanditRun
        ``p`` of shape (C, S, T') (S = 1 in mean field).

    Raises
    ------
    ParameterError
        A parameter outside its range (``eta`` <= 0, ``mu`` outside [0, 1), ``k_ref`` < 1,
        ``beta`` < 0, ``steps`` < 1, ``seeds`` < 1 or above :data:`MAX_SEEDS`), lengths that do not
        broadcast, an infinite ``group_size`` in a stochastic run, or a run whose arrays would need
        more than :data:`MAX_MEMORY_BYTES` (4 GiB).

    Notes
    -----
    Cost per step: O(C S B G A) comparisons (uniforms against the CDF boundaries) and O(C S B A)
    for everything else; no Python loop over configurations or seeds.

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=8)
    >>> run = simulate(spec, eta=0.5, beta=1.0, steps=400, mean_field=True)
    >>> round(float(run.p[0, 0, -1]), 4)   # p* = sigmoid(7/8) at G = 8 (mean baseline)
    0.7058
    """
    alg = _Algebra(spec)
    eta_c = _per_config("eta", eta)
    mu_c = _per_config("mu", mu)
    k_c = _per_config("k_ref", k_ref)
    beta_c = _per_config("beta", beta)
    try:
        eta_c, mu_c, k_c, beta_c = np.broadcast_arrays(eta_c, mu_c, k_c, beta_c)
    except ValueError:
        raise ParameterError(
            "eta", "`eta`, `mu`, `k_ref` and `beta` must be scalars or sequences of one common length; got lengths "
            f"{np.size(eta)}, {np.size(mu)}, {np.size(k_ref)}, {np.size(beta)}"
        ) from None
    n_conf = eta_c.size
    n_steps = check_integer("steps", steps, low=1)
    every = check_integer("record_every", record_every, low=1)
    if not isinstance(mean_field, bool | np.bool_):
        raise ParameterError("mean_field", f"`mean_field` must be True or False; got {mean_field!r}")
    if mean_field:
        seed_vals = np.array([-1], dtype=np.int64)
    else:
        if spec.group_size_is_infinite:
            raise ParameterError("group_size", "`group_size` must be finite in a stochastic run (inf is mean field only)")
        seed_vals = _seed_values(seeds)
    n_seeds = seed_vals.size
    a = alg.num_arms
    _check_memory(n_conf, n_seeds, n_steps, every, a, int(k_c.max()) if spec.lag == "constant" else 1,
                  0 if mean_field else spec.num_prompts * int(spec.group_size), metrics)
    if theta0 is None:
        th0 = np.broadcast_to(np.asarray(spec.init_logits), (n_conf, a))
    else:
        th0 = _check_logits("theta0", theta0, a)
        if th0.ndim > 2 or (th0.ndim == 2 and th0.shape[0] not in (1, n_conf)):
            raise ParameterError("theta0", f"`theta0` must have shape ({a},) or ({n_conf}, {a}); got {th0.shape}")
        th0 = np.broadcast_to(th0.reshape(-1, a), (n_conf, a))

    theta = np.broadcast_to(th0[:, None, :], (n_conf, n_seeds, a)).copy()
    vel = np.zeros_like(theta)
    eta3, mu3, beta3 = eta_c[:, None, None], mu_c[:, None, None], beta_c[:, None, None]
    ema = spec.momentum == "ema"
    logp_t, pi_t = _policies(theta)

    constant = spec.lag == "constant"
    if constant:
        depth = int(k_c.max()) + 1
        hist = np.broadcast_to(logp_t, (depth, n_conf, n_seeds, a)).copy()
        conf_idx = np.arange(n_conf)
        same_lag = bool(np.all(k_c == k_c[0]))
    else:
        logp_b = logp_t.copy()

    rec_steps = np.unique(np.r_[np.arange(0, n_steps + 1, every), n_steps])
    n_rec = rec_steps.size
    p_rec = np.empty((n_conf, n_seeds, n_rec))
    p_rec[:, :, 0] = pi_t @ alg.q
    rec_pos = 1
    names = ("reward", "reward_std", "frac_reward_zero_std", "kl", "entropy", "grad_norm", "clip_ratio")
    mets = {k: np.full((n_conf, n_seeds, n_rec), np.nan) for k in names} if metrics else {}
    if metrics:
        mets["kl"][:, :, 0] = np.sum(pi_t * (logp_t - alg.log_ref), -1)
        mets["entropy"][:, :, 0] = -np.sum(pi_t * logp_t, -1)

    streams = None
    if not mean_field:
        streams = _UniformStreams(seed_vals, spec.num_prompts, int(spec.group_size), n_steps)
    work = n_conf * n_seeds * n_steps * (1 if mean_field else spec.num_prompts * spec.group_size)
    show = (work > PROGRESS_THRESHOLD) if progress is None else bool(progress)
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_steps, desc="bandit", unit="step", file=sys.stderr, leave=False)

    for t in range(n_steps):
        if constant:
            slot = t % depth
            hist[slot] = logp_t
            if same_lag:
                logp_b = hist[(t - int(k_c[0])) % depth]
            else:
                logp_b = hist[(t - k_c) % depth, conf_idx]
        else:
            refresh = (t % k_c) == 0
            if np.all(refresh):
                logp_b = logp_t
            elif np.any(refresh):
                logp_b = np.where(refresh[:, None, None], logp_t, logp_b)
        pi_b = np.exp(logp_b)
        record = metrics and (t + 1) == rec_steps[min(rec_pos, n_rec - 1)]
        if mean_field:
            g, clip_frac = _mean_field_gradient(alg, logp_t, pi_t, logp_b, pi_b, beta3)
            step_m = None
            if record:
                pb = pi_b @ alg.q
                step_m = {"reward": pb, "reward_std": np.sqrt(pb * (1 - pb)),
                          "frac_reward_zero_std": (pb**spec.group_size + (1 - pb) ** spec.group_size
                                                   if not alg.infinite else np.zeros_like(pb)),
                          "clip_ratio": clip_frac if clip_frac is not None else np.zeros_like(pb)}
        else:
            u = streams.next()
            g, step_m = _stochastic_gradient(alg, u, logp_t, pi_t, logp_b, pi_b, beta3, want_metrics=record)
        if ema:
            vel = mu3 * vel + (1.0 - mu3) * g
        else:
            vel = mu3 * vel + g
        theta = theta + eta3 * vel
        logp_t, pi_t = _policies(theta)
        if (t + 1) == rec_steps[min(rec_pos, n_rec - 1)]:
            p_rec[:, :, rec_pos] = pi_t @ alg.q
            if metrics:
                for key, val in step_m.items():
                    mets[key][:, :, rec_pos] = val
                mets["kl"][:, :, rec_pos] = np.sum(pi_t * (logp_t - alg.log_ref), -1)
                mets["entropy"][:, :, rec_pos] = -np.sum(pi_t * logp_t, -1)
                mets["grad_norm"][:, :, rec_pos] = np.sqrt(np.sum(g * g, -1))
            rec_pos += 1
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return BanditRun(spec=spec, eta=eta_c.copy(), mu=mu_c.copy(), k_ref=k_c.copy(), beta=beta_c.copy(),
                     seeds=seed_vals, mean_field=bool(mean_field), steps=rec_steps, p=p_rec, theta=theta,
                     metrics=mets)


# ----------------------------------------------------------------------------------------------
# Fixed point and stiffness
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FixedPoint:
    """Where the on-policy mean-field flow from the initial policy settles.

    Attributes
    ----------
    p_star : float
        Expected reward at the fixed point (or its limit when there is no interior fixed point).
    theta_star : ndarray, shape (A,)
        Logits at the fixed point (same mean as the initial logits).
    interior : bool
        False when the flow runs away (``p`` -> its largest or smallest reachable value with no
        restoring force, e.g. ``beta = 0``): then there is nothing to linearise around. A fixed
        point within 1e-6 (relative) of the extreme rewards also counts as not interior: with std
        scaling, ``std_eps`` creates one at ``p ~ 1 - 1e-16`` (where ``sqrt(p(1-p)) < eps``), which
        is ``p = 1`` for every practical purpose.
    stiffness : float
        K, the relaxation rate of the flow at the fixed point per unit learning rate (logit
        units; ``a = eta K`` per optimizer step); 0 when not interior.
    gap : float
        Logit gap ``x*`` between a correct and a wrong arm (two-level symmetric bandits; NaN
        otherwise).
    symmetric : bool
        True when the state is one number (two reward levels, symmetric initial and reference
        logits within each level): the mean-field reduction to ``p`` is then exact.
    direction : ndarray, shape (A,)
        Unit logit direction of the mode that carries ``p`` (for perturbations).
    """

    p_star: float
    theta_star: np.ndarray
    interior: bool
    stiffness: float
    gap: float
    symmetric: bool
    direction: np.ndarray


def _symmetric_levels(spec: BanditSpec) -> np.ndarray | None:
    """Indicator of the high-reward arms if the bandit reduces to one logit gap, else None."""
    q = np.asarray(spec.reward_probs)
    levels = np.unique(q)
    if levels.size != 2:
        return None
    hi = q == levels[1]
    init, ref = np.asarray(spec.init_logits), np.asarray(spec.ref_logits)
    d = init - ref
    for arr in (ref, d):
        if np.ptp(arr[hi]) > 1e-12 or np.ptp(arr[~hi]) > 1e-12:
            return None
    return hi.astype(float)


def _flow(spec: BanditSpec, beta: float):
    """On-policy mean-field ascent direction theta -> E[g] (vectorised over leading axes)."""
    alg = _Algebra(spec)

    def f(theta):
        logp, pi = _policies(np.asarray(theta, dtype=float))
        return _mean_field_gradient(alg, logp, pi, logp, pi, beta)[0]

    return alg, f


def fixed_point(spec: BanditSpec, beta: float, *, max_gap: float = 60.0) -> FixedPoint:
    """Fixed point of the on-policy mean-field flow reached from the spec's initial policy.

    Two-level symmetric bandits (``_symmetric_levels``; e.g. binary rewards from a uniform
    start): the state is the logit gap ``x`` between a correct and a wrong arm, ``x' = F(x)``;
    scan ``F`` from the initial gap in the direction of the flow and refine the first sign change
    with Brent's method (the stable fixed point the flow reaches; with std scaling a second,
    unstable one may lie beyond it). No sign change within ``max_gap`` nats: no interior fixed
    point. Other bandits: integrate the flow (LSODA), then refine with a root finder.
    Stiffness: ``K = -F'(x*)`` (central difference); in general the eigenvalue of the flow's
    Jacobian whose eigenvector carries ``p``.

    Closed forms (two arms, uniform reference; book chapter "The bandit: where the mean field is exact"): mean baseline, ``G -> inf``:
    ``p* = sigmoid(1/beta)``, ``K = 2 beta p* (1 - p*)``; finite G: ``p* = sigmoid((G-1)/(G beta))``.

    Parameters
    ----------
    spec : BanditSpec
        The bandit (its ``group_size``, baseline, scaling and KL estimator matter; lag, momentum
        and estimator do not: the flow is on-policy).
    beta : float >= 0
        KL weight.
    max_gap : float > 0
        How far (nats) to look for a sign change of ``F``.

    Returns
    -------
    FixedPoint

    Raises
    ------
    ParameterError
        ``beta`` < 0 or not finite; ``max_gap`` <= 0.

    References
    ----------
    Our derivation; book chapter "The bandit: where the mean field is exact", section "Fixed point".

    Examples
    --------
    >>> fp = fixed_point(BanditSpec.binary(group_size=math.inf), beta=1.0)
    >>> round(fp.p_star, 4), round(fp.stiffness, 4)
    (0.7311, 0.3932)
    """
    b = check_beta(beta)
    max_gap = check_real("max_gap", max_gap, low=0.0, low_inclusive=False)
    alg, f = _flow(spec, b)
    hi = _symmetric_levels(spec)
    ref = np.asarray(spec.ref_logits)
    init = np.asarray(spec.init_logits)
    if hi is not None:
        return _fixed_point_symmetric(alg, f, hi, ref, init, max_gap)
    return _fixed_point_general(alg, f, init)


def _gap_flow(f, hi: np.ndarray, ref: np.ndarray):
    def big_f(x):
        x = np.asarray(x, dtype=float)
        th = ref + x[..., None] * hi
        g = f(th)
        return (g * hi).sum(-1) / hi.sum() - (g * (1 - hi)).sum(-1) / (1 - hi).sum()

    return big_f


def reduced_flow(spec: BanditSpec, beta: float, gaps) -> np.ndarray:
    """The one-dimensional mean-field flow ``x' = F(x)`` of a two-level symmetric bandit.

    ``x`` is the logit gap between a correct (high-reward) and a wrong arm; the logits are
    ``theta = theta_ref + x 1_H``. ``F(x)`` is the rate of change of the gap per unit learning rate
    under the on-policy expected gradient (the spec's group size, baseline, scaling and KL
    estimator). Two arms, uniform reference (book chapter "The bandit: where the mean field is exact"): mean baseline, G -> inf:
    ``F = 2 p (1 - p)(1 - beta x)``; std scaling: ``F = 2 sqrt(p (1 - p)) - 2 beta p (1 - p) x``.

    Parameters
    ----------
    spec : BanditSpec
        Two reward levels, reference logits constant within each level.
    beta : float >= 0
    gaps : array_like
        Values of ``x`` (nats).

    Returns
    -------
    ndarray, shape of ``gaps``
        ``F(x)`` in logit units per step per unit learning rate.

    Raises
    ------
    ParameterError
        A bandit that does not reduce to one gap; bad ``beta`` or ``gaps``.

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> reduced_flow(spec, 1.0, [0.0, 1.0]).round(4).tolist()
    [0.5, 0.0]
    """
    b = check_beta(beta)
    x = check_array("gaps", gaps)
    hi = _symmetric_levels(spec.replace(init_logits=spec.ref_logits))
    if hi is None:
        raise ParameterError("reward_probs", "`reward_probs` must have two levels (and `ref_logits` be symmetric "
                                             "within each) for a one-dimensional flow")
    _, f = _flow(spec, b)
    return _gap_flow(f, hi, np.asarray(spec.ref_logits))(x)


def _fixed_point_symmetric(alg, f, hi, ref, init, max_gap) -> FixedPoint:
    big_f = _gap_flow(f, hi, ref)
    x0 = float(np.mean((init - ref)[hi > 0]) - np.mean((init - ref)[hi == 0]))
    direction = hi - hi.mean()
    direction = direction / np.linalg.norm(direction)
    f0 = float(big_f(x0))
    if f0 == 0.0:
        x_star = x0
    else:
        sgn = 1.0 if f0 > 0 else -1.0
        grid = x0 + sgn * np.linspace(0.0, max_gap, int(max_gap * 40) + 1)
        vals = big_f(grid)
        change = np.nonzero(np.sign(vals[1:]) != np.sign(vals[:-1]))[0]
        if change.size == 0:
            th = ref + grid[-1] * hi
            p_lim = float(alg.q.max()) if sgn > 0 else float(alg.q.min())
            return FixedPoint(p_star=p_lim, theta_star=th, interior=False, stiffness=0.0, gap=math.inf * sgn,
                              symmetric=True, direction=direction)
        i = int(change[0])
        scalar_f = lambda x: float(big_f(x))  # noqa: E731
        fa, fb = scalar_f(grid[i]), scalar_f(grid[i + 1])
        if fa == 0.0 or fb == 0.0 or np.sign(fa) == np.sign(fb):
            # A root on a grid point (the array and scalar evaluations may differ by rounding).
            x_star = float(grid[i] if abs(fa) <= abs(fb) else grid[i + 1])
        else:
            x_star = optimize.brentq(scalar_f, grid[i], grid[i + 1], xtol=1e-14, rtol=1e-14)
    theta_star = ref + x_star * hi
    theta_star = theta_star - theta_star.mean() + init.mean()
    h = 1e-5 * max(1.0, abs(x_star))
    k = -float(big_f(x_star + h) - big_f(x_star - h)) / (2 * h)
    p_star = float(np.exp(log_softmax(theta_star)) @ alg.q)
    interior = bool(k > 0 and _inside(p_star, alg.q))
    return FixedPoint(p_star=p_star, theta_star=theta_star, interior=interior, stiffness=k if interior else 0.0,
                      gap=x_star, symmetric=True, direction=direction)


def _inside(p_star: float, q: np.ndarray) -> bool:
    """A fixed point within 1e-6 (relative) of the extreme rewards is not interior (p = 1 in practice)."""
    frac = (p_star - q.min()) / (q.max() - q.min())
    return _EDGE < frac < 1.0 - _EDGE


def _jacobian(f, theta: np.ndarray) -> np.ndarray:
    a = theta.size
    h = 1e-6 * max(1.0, float(np.abs(theta).max()))
    eye = np.eye(a) * h
    return ((f(theta + eye) - f(theta - eye)) / (2 * h)).T


def _fixed_point_general(alg, f, init) -> FixedPoint:
    from scipy.integrate import solve_ivp

    sol = solve_ivp(lambda t, y: f(y), (0.0, 1e4), init, method="LSODA", rtol=1e-10, atol=1e-12)
    th = sol.y[:, -1]
    a = init.size
    # Refine on the hyperplane mean(theta) = mean(init): replace one equation by the constraint.
    def eqs(y):
        g = f(y)
        return np.r_[g[:-1], y.mean() - init.mean()]

    root = optimize.root(eqs, th, method="hybr", tol=1e-13)
    th_star = root.x if root.success and np.abs(f(root.x)).max() < 1e-9 else th
    interior = bool(np.abs(f(th_star)).max() < 1e-7)
    pi = np.exp(log_softmax(th_star))
    p_star = float(pi @ alg.q)
    if not interior:
        return FixedPoint(p_star=p_star, theta_star=th_star, interior=False, stiffness=0.0, gap=math.nan,
                          symmetric=False, direction=np.zeros(a))
    jac = _jacobian(f, th_star)
    vals, vecs = np.linalg.eig(jac)
    grad_p = pi * (alg.q - p_star)
    weights = np.abs(grad_p @ vecs.real) / np.maximum(np.linalg.norm(vecs.real, axis=0), 1e-300)
    weights[np.abs(vals) < 1e-10] = -1.0  # the shift-invariance null mode never carries p
    i = int(np.argmax(weights))
    v = vecs[:, i].real
    k = -float(vals[i].real)
    interior = bool(k > 0 and _inside(p_star, alg.q))
    return FixedPoint(p_star=p_star, theta_star=th_star, interior=interior, stiffness=k if interior else 0.0, gap=math.nan,
                      symmetric=False, direction=v / np.linalg.norm(v))


def stiffness(spec: BanditSpec, beta: float, *, method: str = "derivative", eta: float = 0.01,
              steps: int = 200, delta: float = 1e-4) -> float:
    """Stiffness K of the bandit at its fixed point, measured independently of any sweep.

    ``method="derivative"``: the derivative of the expected update at ``p*`` (as in
    :func:`fixed_point`). ``method="relaxation"``: simulate the on-policy mean-field flow with a
    small learning rate, no momentum and no lag from ``theta* + delta * direction`` and read the
    decay per step ``e_{t+1}/e_t = 1 - eta K`` off the trajectory of ``e = p - p*``:
    ``K = (1 - (e_T / e_0)^(1/T)) / eta``.

    Parameters
    ----------
    spec : BanditSpec
    beta : float >= 0
    method : {"derivative", "relaxation"}
    eta : float > 0
        Learning rate of the relaxation run (small: the decay must be in the linear regime).
    steps : int >= 1
        Length of the relaxation run.
    delta : float > 0
        Size of the initial perturbation (logit units).

    Returns
    -------
    float
        K in logit units per unit learning rate (``a = eta K`` per optimizer step).

    Raises
    ------
    ParameterError
        Bad parameters, or no interior fixed point (``beta`` too small: nothing restores ``p``).

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> round(stiffness(spec, 1.0, method="relaxation"), 4)
    0.3932
    """
    check_choice("method", method, ("derivative", "relaxation"))
    fp = fixed_point(spec, beta)
    if not fp.interior:
        raise ParameterError(
            "beta", f"`beta` = {beta!r} leaves no interior fixed point (p runs to {fp.p_star:.3g}): no stiffness; "
            "increase beta")
    if method == "derivative":
        return fp.stiffness
    eta = check_real("eta", eta, low=0.0, low_inclusive=False)
    steps = check_integer("steps", steps, low=1)
    delta = check_real("delta", delta, low=0.0, low_inclusive=False)
    # On-policy (refresh every step), no momentum: e_{t+1} = (1 - eta K) e_t in the linear regime.
    on_policy = spec.replace(lag="refresh", momentum="heavy_ball")
    start = fp.theta_star + delta * fp.direction
    run = simulate(on_policy, eta=eta, mu=0.0, k_ref=1, beta=beta, steps=steps, mean_field=True, theta0=start)
    e = run.p[0, 0] - fp.p_star
    return float((1.0 - (e[-1] / e[0]) ** (1.0 / steps)) / eta)
