r"""Exact moments of the GRPO gradient on the softmax bandit, and the exact finite-G MSE.

Hoeffding's decomposition of the leave-one-out estimator U (:mod:`grpo_core.groupsize.ustat.estimators`)
into the oracle estimator's error and an orthogonal degenerate part gives the exact finite-G error
(our derivation, book section "The exact error"; the paper bounds it):

    MSE_oracle = tr Sigma_oracle / G,                Sigma_oracle = Cov(W (Z - V))
    MSE_loo    = tr Sigma_oracle / G + c3 / (G (G - 1)),  c3 = E||W||^2 Var(Z) + ||g||^2
    MSE_mean   = ((G-1)/G)^2 MSE_loo + ||g||^2 / G^2
    MSE_vanilla = tr Cov(W Z) / G.

(``c3`` is twice the variance of the degenerate kernel h2 = -(W_1 (Z_2 - V) + W_2 (Z_1 - V))/2.)
The vanilla estimator's 1/G coefficient is *not* always larger than the oracle's: the constant
baseline that minimises tr Cov(W (Z - b)) is the score-weighted mean reward
``b* = E[||W||^2 Z] / E||W||^2``, not V, and ``tr Cov(W Z) - tr Sigma_oracle = E||W||^2 V (2 b* - V)``,
which is negative when b* < V/2 (an easy prompt whose correct answers are the likely ones).

On the softmax bandit the score is ``W = e_a - pi``, so every moment is a finite sum over arms
(:func:`bandit_moments` for one prompt, :func:`bandit_traces` vectorised over prompts).

References
----------
Hoeffding, W. (1948), "A class of statistics with asymptotically normal distribution", Ann. Math.
Statist. 19 (the decomposition and Var U = (2/(G(G-1))) (2 (G-2) zeta1 + zeta2)).
"Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025),
Lemma 1 (U-statistic form), Theorem 2 / Proposition 3 (MSE = O(1/G) oracle term + O(1/G^2)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ParameterError
from ...grpo import DEFAULT_STD_EPS
from ...softmax import check_probabilities
from ...validation import check_array, check_choice, check_integer, check_real

#: The estimators whose finite-G MSE has a closed form (:meth:`BanditMoments.mse`).
EXACT_ESTIMATORS = ("vanilla", "mean", "leave_one_out", "oracle")


@dataclass(frozen=True)
class BanditMoments:
    """Exact moments of the score-function gradient of one softmax-bandit prompt.

    Built by :func:`bandit_moments`. With W = e_a - pi and Z the reward of arm a:

    Attributes
    ----------
    probs : ndarray, shape (A,)
        The policy pi.
    gradient : ndarray, shape (A,)
        g = E[W Z] = pi * (r - V) (gradient of the expected reward w.r.t. the logits).
    value : float
        V = E[Z] = pi . r.
    reward_var : float
        Var(Z) (includes the per-arm reward noise when rewards are Bernoulli).
    score_sq : float
        E||W||^2 = 1 - ||pi||^2.
    sigma_oracle : ndarray, shape (A, A)
        Sigma_oracle = Cov(W (Z - V)).
    sigma_vanilla : ndarray, shape (A, A)
        Cov(W Z).
    degenerate : float
        c3 = E||W||^2 Var(Z) + ||g||^2, the coefficient of 1/(G(G-1)) in the leave-one-out MSE.
    optimal_constant_baseline : float
        b* = E[||W||^2 Z] / E||W||^2: the constant baseline with the smallest variance.
    """

    probs: np.ndarray
    gradient: np.ndarray
    value: float
    reward_var: float
    score_sq: float
    sigma_oracle: np.ndarray
    sigma_vanilla: np.ndarray
    degenerate: float
    optimal_constant_baseline: float

    @property
    def grad_sq(self) -> float:
        """||g||^2."""
        return float(self.gradient @ self.gradient)

    @property
    def oracle_trace(self) -> float:
        """tr Sigma_oracle: the oracle's (and the leave-one-out's leading) 1/G coefficient."""
        return float(np.trace(self.sigma_oracle))

    @property
    def zeta1(self) -> float:
        """Hoeffding's zeta_1 = tr Var(h1) = tr Sigma_oracle / 4."""
        return self.oracle_trace / 4.0

    @property
    def zeta2(self) -> float:
        """Hoeffding's zeta_2 = tr Var(h) = 2 zeta_1 + c3 / 2."""
        return 2.0 * self.zeta1 + self.degenerate / 2.0

    def hoeffding_variances(self, group_size) -> tuple[np.ndarray, np.ndarray]:
        """Variances (traces) of the two Hoeffding parts of the leave-one-out estimator.

        Parameters
        ----------
        group_size : int or array_like of int, >= 2

        Returns
        -------
        (first, degenerate) : ndarrays shaped like ``group_size``
            ``tr Sigma_oracle / G`` and ``c3 / (G (G - 1))``.

        Raises
        ------
        ParameterError
            G < 2 or not an integer.
        """
        g = _check_group_sizes(group_size, low=2)
        return self.oracle_trace / g, self.degenerate / (g * (g - 1))

    def mse(self, estimator: str, group_size) -> np.ndarray:
        """Exact mean squared error E||g_hat - g||^2 of a G-sample estimator.

        Parameters
        ----------
        estimator : {"vanilla", "mean", "leave_one_out", "oracle"}
            ("std" has no closed form: measure it with :func:`monte_carlo_mse`.)
        group_size : int or array_like of int
            G >= 1 (>= 2 for "mean" and "leave_one_out").

        Returns
        -------
        ndarray shaped like ``group_size``
            MSE in squared reward-gradient units.

        Raises
        ------
        ParameterError
            Unknown estimator (or "std"), G out of range.

        Notes
        -----
        vanilla: tr Cov(WZ)/G; oracle: tr Sigma_oracle/G; leave-one-out: tr Sigma_oracle/G +
        c3/(G(G-1)); mean: ((G-1)/G)^2 MSE_loo + ||g||^2/G^2 (variance shrunk, bias -g/G).
        """
        check_choice("estimator", estimator, EXACT_ESTIMATORS)
        low = 2 if estimator in ("mean", "leave_one_out") else 1
        g = _check_group_sizes(group_size, low=low)
        if estimator == "vanilla":
            return np.trace(self.sigma_vanilla) / g
        if estimator == "oracle":
            return self.oracle_trace / g
        loo = self.oracle_trace / g + self.degenerate / (g * (g - 1))
        if estimator == "leave_one_out":
            return loo
        return ((g - 1) / g) ** 2 * loo + self.grad_sq / g**2


def _check_group_sizes(group_size, *, low: int) -> np.ndarray:
    if np.ndim(group_size) == 0:
        return np.asarray(float(check_integer("group_size", group_size, low=low)))
    g = check_array("group_size", group_size, low=low)
    if not np.all(g == np.round(g)):
        raise ParameterError("group_size", f"`group_size` must contain integers >= {low}")
    return g


def _check_arm_rewards(rewards, num_arms: int, bernoulli: bool) -> np.ndarray:
    r = check_array("rewards", rewards, low=0.0 if bernoulli else None, high=1.0 if bernoulli else None)
    if r.shape[-1:] != (num_arms,):
        raise ParameterError("rewards", f"`rewards` must have one entry per arm (A = {num_arms}); got shape {r.shape}")
    return r


@dataclass(frozen=True)
class BanditTraces:
    """Scalar moments (traces) of the score-function gradient, vectorised over prompts.

    Built by :func:`bandit_traces`; every attribute has the leading shape ``(...)`` of the
    policies it came from (``gradient`` has an extra arm axis).

    Attributes
    ----------
    gradient : ndarray, shape (..., A)
        g = pi * (r - V).
    value : ndarray, shape (...)
        V = pi . r.
    reward_var : ndarray, shape (...)
        Var(Z).
    score_sq : ndarray, shape (...)
        E||W||^2 = 1 - ||pi||^2.
    oracle_trace : ndarray, shape (...)
        tr Sigma_oracle = E[||W||^2 (Z - V)^2] - ||g||^2.
    vanilla_trace : ndarray, shape (...)
        tr Cov(W Z) = E[||W||^2 Z^2] - ||g||^2.
    degenerate : ndarray, shape (...)
        c3 = E||W||^2 Var(Z) + ||g||^2.
    optimal_constant_baseline : ndarray, shape (...)
        b* = E[||W||^2 Z] / E||W||^2.
    """

    gradient: np.ndarray
    value: np.ndarray
    reward_var: np.ndarray
    score_sq: np.ndarray
    oracle_trace: np.ndarray
    vanilla_trace: np.ndarray
    degenerate: np.ndarray
    optimal_constant_baseline: np.ndarray

    @property
    def grad_sq(self) -> np.ndarray:
        """||g||^2, shape (...)."""
        return (self.gradient**2).sum(axis=-1)


def bandit_traces(probs, rewards, *, bernoulli: bool = False) -> BanditTraces:
    """Exact scalar moments of the softmax-bandit gradient for many prompts at once.

    Parameters
    ----------
    probs : array_like, shape (..., A)
        Policies pi (each must sum to 1 within :data:`grpo_core.softmax.PROBABILITY_SUM_ATOL`).
    rewards : array_like, shape (..., A)
        Arm rewards, broadcastable to ``probs`` (means when ``bernoulli``).
    bernoulli : bool
        Bernoulli(r_a) rewards (r_a in [0, 1]) instead of deterministic ones.

    Returns
    -------
    BanditTraces

    Raises
    ------
    ParameterError
        Invalid policies or rewards.

    Notes
    -----
    With ||W_a||^2 = 1 - 2 pi_a + ||pi||^2 and s_a the per-arm reward variance (0, or
    r_a (1 - r_a)): E[||W||^2 (Z - b)^2] = sum_a pi_a ||W_a||^2 (s_a + (r_a - b)^2) for any
    constant b; the traces follow by subtracting ||g||^2.

    Examples
    --------
    >>> t = bandit_traces([[0.5, 0.5], [0.2, 0.8]], [1.0, 0.0])
    >>> t.value.tolist(), t.oracle_trace.round(4).tolist()
    ([0.5, 0.2], [0.0, 0.1152])
    """
    p = check_probabilities("probs", probs)
    r = check_array("rewards", rewards, low=0.0 if bernoulli else None, high=1.0 if bernoulli else None)
    try:
        r = np.broadcast_to(r, p.shape)
    except ValueError:
        raise ParameterError(
            "rewards", f"`rewards` must broadcast to the policies' shape {p.shape}; got {r.shape}"
        ) from None
    s = r * (1.0 - r) if bernoulli else np.zeros_like(r)
    value = (p * r).sum(axis=-1)
    grad = p * (r - value[..., None])
    grad_sq = (grad**2).sum(axis=-1)
    wsq = 1.0 - 2.0 * p + (p**2).sum(axis=-1, keepdims=True)
    score_sq = (p * wsq).sum(axis=-1)
    reward_var = (p * (s + r**2)).sum(axis=-1) - value**2
    oracle_second = (p * wsq * (s + (r - value[..., None]) ** 2)).sum(axis=-1)
    vanilla_second = (p * wsq * (s + r**2)).sum(axis=-1)
    safe = np.where(score_sq > 0, score_sq, 1.0)
    b_star = np.where(score_sq > 0, (p * wsq * r).sum(axis=-1) / safe, value)
    return BanditTraces(
        gradient=grad,
        value=value,
        reward_var=reward_var,
        score_sq=score_sq,
        oracle_trace=oracle_second - grad_sq,
        vanilla_trace=vanilla_second - grad_sq,
        degenerate=score_sq * reward_var + grad_sq,
        optimal_constant_baseline=b_star,
    )


def bandit_moments(probs, rewards, *, bernoulli: bool = False) -> BanditMoments:
    """Exact moments of the GRPO gradient for one softmax-bandit prompt.

    Parameters
    ----------
    probs : array_like, shape (A,)
        Policy pi (must sum to 1 within :data:`grpo_core.softmax.PROBABILITY_SUM_ATOL`).
    rewards : array_like, shape (A,)
        Reward r_a of each arm (its mean when ``bernoulli``).
    bernoulli : bool
        Rewards are Bernoulli(r_a) draws (then r_a must lie in [0, 1]) instead of deterministic.

    Returns
    -------
    BanditMoments

    Raises
    ------
    ParameterError
        Invalid ``probs`` (negative, NaN, sum off 1) or ``rewards`` (shape, NaN, outside [0, 1]
        when Bernoulli).

    Notes
    -----
    The scalar moments come from :func:`bandit_traces`; the matrices are
    Sigma_oracle = sum_a pi_a (s_a + (r_a - V)^2) W_a W_a^T - g g^T and Cov(W Z) likewise with
    (s_a + r_a^2), s_a the per-arm reward variance.

    Examples
    --------
    >>> m = bandit_moments([0.5, 0.5], [1.0, 0.0])
    >>> m.gradient.tolist(), m.value, m.reward_var, m.score_sq
    ([0.25, -0.25], 0.5, 0.25, 0.5)
    >>> m.oracle_trace        # two equal arms: W (Z - V) = g whatever arm is drawn
    0.0
    >>> round(float(m.mse("leave_one_out", 4)), 6)    # 0/G + c3/(G(G-1)) = 0.25/12
    0.020833
    """
    p = check_probabilities("probs", probs)
    if p.ndim != 1:
        raise ParameterError("probs", f"`probs` must be one policy of shape (A,); got {p.shape}")
    r = _check_arm_rewards(rewards, p.size, bernoulli)
    if r.ndim != 1:
        raise ParameterError("rewards", f"`rewards` must have shape (A,); got {r.shape}")
    t = bandit_traces(p, r, bernoulli=bernoulli)
    value = float(t.value)
    s = r * (1.0 - r) if bernoulli else np.zeros_like(r)
    w = np.eye(p.size) - p  # row a: W_a
    second_o = (w.T * (p * (s + (r - value) ** 2))) @ w
    second_v = (w.T * (p * (s + r**2))) @ w
    grad = t.gradient
    return BanditMoments(
        probs=p,
        gradient=grad,
        value=value,
        reward_var=float(t.reward_var),
        score_sq=float(t.score_sq),
        sigma_oracle=second_o - np.outer(grad, grad),
        sigma_vanilla=second_v - np.outer(grad, grad),
        degenerate=float(t.degenerate),
        optimal_constant_baseline=float(t.optimal_constant_baseline),
    )


def std_scaled_mse(probs, rewards, group_sizes, *, eps: float = DEFAULT_STD_EPS) -> np.ndarray:
    """Exact MSE of the std-scaled GRPO estimator against g / sd(Z), for 0/1 (Bernoulli) rewards.

    The U-statistic result does not cover the std scaling; for binary rewards the bandit
    module's exact covariance (conditioning on the number of rewarded samples in the group,
    :func:`grpo_core.bandit.gradient_covariance`) does. MSE = ||E g_hat - g/sd||^2 + tr Cov.

    Parameters
    ----------
    probs : array_like, shape (A,)
        Policy pi (all entries > 0).
    rewards : array_like, shape (A,)
        Reward probability of each arm, in [0, 1] (0/1 for deterministic binary rewards).
    group_sizes : int or sequence of int, each >= 2
        G values.
    eps : float, > 0
        Std epsilon (TRL's 1e-4).

    Returns
    -------
    ndarray, shape (len(group_sizes),)

    Raises
    ------
    ParameterError
        Invalid policy (or one with a zero entry: its logits are not finite), rewards outside
        [0, 1] or all equal, G < 2.

    References
    ----------
    Our derivation (book chapter "The bandit", section "Noise", for the covariance).

    Examples
    --------
    >>> std_scaled_mse([0.5, 0.5], [1.0, 0.0], [2, 64]).round(4).tolist()
    [0.2715, 0.0002]
    """
    from ...bandit import BanditSpec, gradient_covariance

    p = check_probabilities("probs", probs)
    if p.ndim != 1 or np.any(p <= 0):
        raise ParameterError("probs", "`probs` must be one policy of shape (A,) with every entry > 0")
    r = _check_arm_rewards(rewards, p.size, True)
    sizes = [check_integer("group_sizes", g, low=2) for g in np.atleast_1d(group_sizes)]
    e = check_real("eps", eps, low=0.0, low_inclusive=False)
    t = bandit_traces(p, r, bernoulli=True)
    target = t.gradient / np.sqrt(t.reward_var)
    out = []
    for g in sizes:
        spec = BanditSpec(reward_probs=tuple(r.tolist()), group_size=g, baseline="mean", scale="group_std", std_eps=e)
        mean, cov = gradient_covariance(spec, np.log(p))
        out.append(float(((mean - target) ** 2).sum() + np.trace(cov)))
    return np.array(out)
