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

The room
--------
:mod:`~grpo_core.bandit.spec` (:class:`BanditSpec`), :mod:`~grpo_core.bandit.gradients` (the
advantage tables and exact / sampled ascent directions), :mod:`~grpo_core.bandit.simulation`
(:func:`simulate`, :class:`BanditRun`), :mod:`~grpo_core.bandit.fixed_points` (fixed point, reduced
flow, stiffness, the KL weight that puts ``p*`` at a given level; a true smallest anchoring weight
exists only at G -> infinity with std scaling), :mod:`~grpo_core.bandit.prediction` (the
oscillator model's prediction for a bandit), and the bandit measured against that prediction:
:mod:`~grpo_core.bandit.stability` (regimes, growth rates), :mod:`~grpo_core.bandit.thresholds`
(critical ``a`` and ``k_ref``, the threshold table) and :mod:`~grpo_core.bandit.sweeps`
(trajectories across ``k_ref``, G and variants). Imports run spec <- gradients <- simulation <-
fixed_points <- prediction <- stability <- thresholds, sweeps; the bandit uses :mod:`grpo_core.model`,
never the reverse.
"""

from .fixed_points import FixedPoint, fixed_point, reduced_flow, stiffness
from .gradients import advantage_coefficients, expected_gradient, gradient_covariance, sample_gradient
from .simulation import MAX_MEMORY_BYTES, MAX_SEEDS, PROGRESS_THRESHOLD, BanditRun, simulate
from .spec import (
    BASELINES,
    ESTIMATORS,
    KL_ESTIMATORS,
    LAGS,
    MAX_ARMS,
    MAX_GROUP_SIZE,
    MOMENTA,
    SCALES,
    BanditSpec,
)

__all__ = [
    "LAGS", "ESTIMATORS", "MOMENTA", "KL_ESTIMATORS", "BASELINES", "SCALES", "MAX_ARMS", "MAX_GROUP_SIZE",
    "MAX_SEEDS", "MAX_MEMORY_BYTES", "PROGRESS_THRESHOLD",
    "BanditSpec", "BanditRun", "FixedPoint",
    "expected_gradient", "sample_gradient", "gradient_covariance", "simulate",
    "fixed_point", "reduced_flow", "stiffness", "advantage_coefficients",
]
