r"""The GRPO policy gradient as a U-statistic: per-group estimators and their exact error.

For one prompt x, a group of G completions y_1..y_G ~ pi(.|x) gives scores
``W_i = grad log pi(y_i|x)`` (vectors, one entry per parameter) and rewards ``Z_i``. Five
estimators of the prompt's policy gradient ``g = E[W Z]`` (book chapter "The GRPO gradient is a
U-statistic"):

======================  ==================================================  ============
name                    estimator                                           unbiased
======================  ==================================================  ============
``"vanilla"``           (1/G) sum_i W_i Z_i   (REINFORCE, no baseline)      yes
``"oracle"``            (1/G) sum_i W_i (Z_i - V),  V = E[Z] (true value)   yes
``"leave_one_out"``     (1/G) sum_i W_i (Z_i - mean_{j != i} Z_j)           yes
``"mean"``              (1/G) sum_i W_i (Z_i - Zbar)  (GRPO as published)   no: -g/G
``"std"``               the mean-baseline one divided by (sd(Z) + eps)      no
======================  ==================================================  ============

The leave-one-out estimator is the U-statistic of order 2 with kernel

    h((W_i, Z_i), (W_j, Z_j)) = (W_i - W_j)(Z_i - Z_j) / 2,
    U = binom(G, 2)^{-1} sum_{i<j} h,

and the mean-baseline estimator is exactly ``(G-1)/G`` times it. Hoeffding's decomposition
splits U - g into the first projection, which is exactly the oracle estimator minus g, and an
orthogonal degenerate part ``U - oracle``. That gives the exact finite-G error (our derivation,
book section "The exact error"; the paper bounds it):

    MSE_oracle = tr Sigma_oracle / G,                Sigma_oracle = Cov(W (Z - V))
    MSE_loo    = tr Sigma_oracle / G + c3 / (G (G - 1)),  c3 = E||W||^2 Var(Z) + ||g||^2
    MSE_mean   = ((G-1)/G)^2 MSE_loo + ||g||^2 / G^2
    MSE_vanilla = tr Cov(W Z) / G.

(``c3`` is twice the variance of the degenerate kernel h2 = -(W_1 (Z_2 - V) + W_2 (Z_1 - V))/2.)
The vanilla estimator's 1/G coefficient is *not* always larger than the oracle's: the constant
baseline that minimises tr Cov(W (Z - b)) is the score-weighted mean reward
``b* = E[||W||^2 Z] / E||W||^2``, not V, and ``tr Cov(W Z) - tr Sigma_oracle = E||W||^2 V (2 b* - V)``,
which is negative when b* < V/2 (an easy prompt whose correct answers are the likely ones).

Everything here is vectorised over leading axes (prompts, configurations, seeds). The exact
moments and a fast Monte Carlo use the softmax bandit, whose score is ``W = e_a - pi``; the Monte
Carlo works on the multinomial arm counts (sufficient statistics), so one group of any size costs
O(A), not O(G).

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
import pandas as pd

from ..errors import ParameterError
from ..grpo import DEFAULT_SPREAD_RTOL, DEFAULT_STD_EPS, group_advantages
from ..softmax import check_probabilities
from ..validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "ESTIMATORS",
    "EXACT_ESTIMATORS",
    "check_groups",
    "group_gradient",
    "u_kernel",
    "pairwise_leave_one_out",
    "hoeffding_parts",
    "BanditMoments",
    "BanditTraces",
    "bandit_traces",
    "bandit_moments",
    "gradients_from_counts",
    "sample_bandit_gradients",
    "monte_carlo_mse",
    "std_scaled_mse",
    "loglog_slope",
]

#: Every per-group estimator, in the order the book plots them.
ESTIMATORS = ("vanilla", "mean", "leave_one_out", "oracle", "std")
#: The estimators whose finite-G MSE has a closed form (:meth:`BanditMoments.mse`).
EXACT_ESTIMATORS = ("vanilla", "mean", "leave_one_out", "oracle")


# --------------------------------------------------------------------------------------------
# Generic per-group estimators on (W, Z) samples
# --------------------------------------------------------------------------------------------


def check_groups(scores, rewards, *, min_group_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Validate per-group samples: scores ``(..., G, D)`` and rewards ``(..., G)``.

    Parameters
    ----------
    scores : array_like, shape (..., G, D)
        Score vectors W_i = grad log pi(y_i|x) of each completion (D parameters).
    rewards : array_like, shape (..., G)
        Rewards Z_i; the last axis is the group. All groups must have the same size G.
    min_group_size : int
        Smallest allowed G (2 for estimators that compare completions, 3 for the constants).

    Returns
    -------
    (scores, rewards) : tuple of ndarray
        float64 arrays with the shapes above.

    Raises
    ------
    ParameterError
        Ragged groups (``rewards``), empty groups, G below ``min_group_size`` (``group_size``),
        NaN/inf values, or ``scores`` whose leading shape does not match ``rewards``.

    Examples
    --------
    >>> w, z = check_groups(np.zeros((3, 4, 2)), np.ones((3, 4)))
    >>> w.shape, z.shape
    ((3, 4, 2), (3, 4))
    """
    z = _as_group_array("rewards", rewards)
    w = _as_group_array("scores", scores)
    if z.ndim < 1:
        raise ParameterError("rewards", "`rewards` must have a group axis (shape (..., G)); got a scalar")
    g = z.shape[-1]
    if g == 0 or z.size == 0:
        raise ParameterError("rewards", f"`rewards` has an empty group (shape {z.shape}); every group needs >= 1 completion")
    if g < min_group_size:
        raise ParameterError("group_size", f"`group_size` must be >= {min_group_size} here; got {g}")
    if w.ndim != z.ndim + 1 or w.shape[:-1] != z.shape:
        raise ParameterError(
            "scores", f"`scores` must have shape (*rewards.shape, D) = {(*z.shape, 'D')}; got {w.shape}"
        )
    if w.shape[-1] == 0:
        raise ParameterError("scores", "`scores` has no parameter axis entries (D = 0)")
    return w, z


def _as_group_array(name: str, value) -> np.ndarray:
    """``check_array`` that names ragged input (groups of different sizes) explicitly."""
    if isinstance(value, list | tuple):
        sizes = _ragged_sizes(value)
        if sizes is not None:
            raise ParameterError(
                name,
                f"`{name}` has groups of different sizes {sorted(sizes)} (ragged); the estimators need "
                "equal-size groups: pad nothing, call once per group size instead",
            )
    return check_array(name, value)


def _ragged_sizes(value) -> set[int] | None:
    """Sizes of the innermost sequences if they differ, else None."""
    if not value or not isinstance(value[0], list | tuple | np.ndarray):
        return None
    if isinstance(value[0], list | tuple) and value[0] and isinstance(value[0][0], list | tuple | np.ndarray):
        for item in value:
            sizes = _ragged_sizes(list(item))
            if sizes is not None:
                return sizes
        sizes = {len(item) for item in value}
        return sizes if len(sizes) > 1 else None
    sizes = {len(item) for item in value}
    return sizes if len(sizes) > 1 else None


def group_gradient(
    scores,
    rewards,
    *,
    estimator: str = "leave_one_out",
    value=None,
    eps: float = DEFAULT_STD_EPS,
    spread_rtol: float = DEFAULT_SPREAD_RTOL,
) -> np.ndarray:
    """One prompt's policy-gradient estimate from its group, O(G) per group, vectorised.

    ``(1/G) sum_i A_i W_i`` with the advantage A_i of the chosen estimator (module table); the
    advantages come from :func:`grpo_core.grpo.group_advantages` (zero-spread groups give 0).

    Parameters
    ----------
    scores : array_like, shape (..., G, D)
        Score vectors W_i (gradient of the log-probability of completion i, per parameter).
    rewards : array_like, shape (..., G)
        Rewards Z_i (reward units).
    estimator : {"vanilla", "mean", "leave_one_out", "oracle", "std"}
        See the module table. ``"std"`` uses the unbiased group std (ddof = 1) plus ``eps``.
    value : float or array_like, shape (...), optional
        The true value V(x) = E[Z|x]; required by (and only used for) ``"oracle"``.
    eps : float, > 0
        Added to the group std by ``"std"`` (TRL's 1e-4, :data:`grpo_core.grpo.DEFAULT_STD_EPS`).
    spread_rtol : float, >= 0
        Zero-spread tolerance of :func:`grpo_core.grpo.zero_spread_mask`.

    Returns
    -------
    ndarray, shape (..., D)
        Gradient estimate (reward units per unit of the parameters; standard units for "std").

    Raises
    ------
    ParameterError
        Bad groups (see :func:`check_groups`); G < 2 for "leave_one_out" and "std"; unknown
        ``estimator``; ``value`` missing, non-finite or of the wrong shape for "oracle".

    References
    ----------
    Paper (module references), eq. for the GRPO gradient; Shao et al. (2024), eq. (3).

    Examples
    --------
    >>> w = np.array([[[1.0], [-1.0], [0.0]]])          # one group, G = 3, D = 1
    >>> z = np.array([[1.0, 0.0, 0.0]])
    >>> group_gradient(w, z, estimator="leave_one_out").round(4).tolist()
    [[0.5]]
    >>> group_gradient(w, z, estimator="mean").round(4).tolist()
    [[0.3333]]
    """
    check_choice("estimator", estimator, ESTIMATORS)
    min_g = 2 if estimator in ("leave_one_out", "std") else 1
    w, z = check_groups(scores, rewards, min_group_size=min_g)
    if estimator == "oracle":
        if value is None:
            raise ParameterError("value", "`value` (the true value V(x) = E[Z|x]) is required by estimator='oracle'")
        v = check_array("value", value)
        try:
            v = np.broadcast_to(v, z.shape[:-1])
        except ValueError:
            raise ParameterError("value", f"`value` must broadcast to the group shape {z.shape[:-1]}; got {v.shape}") from None
        adv = z - v[..., None]
    else:
        baseline = {"vanilla": "none", "mean": "mean", "leave_one_out": "leave_one_out", "std": "mean"}[estimator]
        scale = "group_std" if estimator == "std" else "none"
        adv = group_advantages(z, baseline=baseline, scale=scale, eps=eps, spread_rtol=spread_rtol)
    return np.einsum("...g,...gd->...d", adv, w) / z.shape[-1]


def u_kernel(w_i, z_i, w_j, z_j) -> np.ndarray:
    """The U-statistic kernel ``h = (W_i - W_j)(Z_i - Z_j) / 2`` of the GRPO gradient.

    Symmetric in (i, j) and unbiased for the prompt's gradient: E h = g.

    Parameters
    ----------
    w_i, w_j : array_like, shape (..., D)
        Scores of two completions of the same prompt.
    z_i, z_j : array_like, shape (...)
        Their rewards.

    Returns
    -------
    ndarray, shape (..., D)

    Raises
    ------
    ParameterError
        NaN/inf inputs.

    Examples
    --------
    >>> u_kernel([1.0, 0.0], 1.0, [0.0, 1.0], 0.0).tolist()
    [0.5, -0.5]
    """
    wi, wj = check_array("w_i", w_i), check_array("w_j", w_j)
    zi, zj = check_array("z_i", z_i), check_array("z_j", z_j)
    return (wi - wj) * ((zi - zj) / 2.0)[..., None]


def pairwise_leave_one_out(scores, rewards) -> np.ndarray:
    """Reference O(G^2) form of the leave-one-out estimator: the U-statistic over all pairs.

    ``U = binom(G, 2)^{-1} sum_{i<j} h(i, j)`` with :func:`u_kernel`. Equal to
    ``group_gradient(..., estimator="leave_one_out")`` up to rounding; kept to prove the identity
    in the tests and to time the O(G) form against it.

    Parameters
    ----------
    scores : array_like, shape (..., G, D)
    rewards : array_like, shape (..., G)

    Returns
    -------
    ndarray, shape (..., D)

    Raises
    ------
    ParameterError
        Bad groups or G < 2.

    Examples
    --------
    >>> w = np.array([[[1.0], [-1.0], [0.0]]])
    >>> z = np.array([[1.0, 0.0, 0.0]])
    >>> pairwise_leave_one_out(w, z).round(4).tolist()
    [[0.5]]
    """
    w, z = check_groups(scores, rewards, min_group_size=2)
    g = z.shape[-1]
    i, j = np.triu_indices(g, k=1)
    h = (w[..., i, :] - w[..., j, :]) * ((z[..., i] - z[..., j]) / 2.0)[..., None]
    return h.sum(axis=-2) / (g * (g - 1) / 2)


def hoeffding_parts(scores, rewards, value, gradient) -> tuple[np.ndarray, np.ndarray]:
    """Hoeffding decomposition of the leave-one-out estimator U around the true gradient g.

    ``U - g = (oracle - g) + (U - oracle)``: the first term is the first-order projection
    ``(2/G) sum_i (h1(X_i) - g)`` with ``h1(w, z) = (w (z - V) + g) / 2``, i.e. exactly the oracle
    estimator's error; the second is the degenerate second-order part
    ``binom(G,2)^{-1} sum_{i<j} h2`` with ``h2 = -(W_i (Z_j - V) + W_j (Z_i - V)) / 2``.
    The two are uncorrelated; their variances are tr Sigma_oracle / G and c3 / (G (G - 1)).

    Parameters
    ----------
    scores : array_like, shape (..., G, D)
    rewards : array_like, shape (..., G)
    value : float or array_like, shape (...)
        True value V(x) = E[Z|x].
    gradient : array_like, shape (..., D) or (D,)
        True gradient g(x) = E[W Z].

    Returns
    -------
    (first, degenerate) : tuple of ndarray, each shape (..., D)

    Raises
    ------
    ParameterError
        Bad groups, G < 2, bad ``value`` or ``gradient``.

    References
    ----------
    Hoeffding (1948); our derivation, book section "The Hoeffding split".

    Examples
    --------
    >>> w = np.array([[[0.5], [-0.5]]]); z = np.array([[1.0, 0.0]])
    >>> first, rest = hoeffding_parts(w, z, 0.5, [0.25])
    >>> (first + rest).tolist(), group_gradient(w, z).tolist()
    ([[0.25]], [[0.5]])
    """
    w, z = check_groups(scores, rewards, min_group_size=2)
    g = check_array("gradient", gradient)
    oracle = group_gradient(w, z, estimator="oracle", value=value)
    loo = group_gradient(w, z, estimator="leave_one_out")
    try:
        first = oracle - g
    except ValueError:
        raise ParameterError("gradient", f"`gradient` must broadcast to {oracle.shape}; got {g.shape}") from None
    return first, loo - oracle


# --------------------------------------------------------------------------------------------
# The softmax bandit: exact moments and the exact finite-G MSE
# --------------------------------------------------------------------------------------------


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
        raise ParameterError("rewards", f"`rewards` must broadcast to the policies' shape {p.shape}; got {r.shape}") from None
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


# --------------------------------------------------------------------------------------------
# Fast Monte Carlo on the softmax bandit (sufficient statistics)
# --------------------------------------------------------------------------------------------


def gradients_from_counts(
    counts,
    reward_sums,
    reward_sq_sums,
    probs,
    zero_spread,
    *,
    value=None,
    estimators=ESTIMATORS,
    eps: float = DEFAULT_STD_EPS,
) -> dict[str, np.ndarray]:
    """The five estimators of a softmax-bandit group from its sufficient statistics, O(A).

    With W_i = e_{a_i} - pi, every estimator depends on a group only through its arm counts n_a,
    its per-arm reward sums s_a, and S2 = sum_i Z_i^2: sum_i W_i Z_i = s - S pi and
    sum_i W_i = n - G pi with S = sum_a s_a. So a group of any size costs O(A).

    Parameters
    ----------
    counts : array_like, shape (..., A)
        Arm counts n_a of each group; G = sum_a n_a must be the same for every group.
    reward_sums : array_like, shape (..., A)
        Sum of the rewards of the draws of each arm.
    reward_sq_sums : array_like, shape (...)
        Sum of squared rewards of the group (needed by "std" only).
    probs : array_like, shape (..., A) or (A,)
        Policy that drew the group.
    zero_spread : array_like of bool, shape (...)
        Groups whose rewards are all equal (their advantages are 0, as in
        :func:`grpo_core.grpo.group_advantages`).
    value : float or array_like, shape (...), optional
        True value V; required for "oracle".
    estimators : sequence of str
        Which of :data:`ESTIMATORS` to return.
    eps : float, > 0
        Std epsilon of "std".

    Returns
    -------
    dict of str -> ndarray, shape (..., A)

    Raises
    ------
    ParameterError
        Inconsistent shapes, unequal group sizes, G < 2 for the estimators that need it,
        unknown estimators, missing ``value`` for "oracle".

    Examples
    --------
    >>> out = gradients_from_counts([[1, 2]], [[1.0, 0.0]], [1.0], [0.5, 0.5], [False],
    ...                              estimators=("leave_one_out",))
    >>> out["leave_one_out"].round(4).tolist()        # rewards (1, 0, 0) on arms (0, 1, 1)
    [[0.3333, -0.3333]]
    """
    n = check_array("counts", counts, low=0.0)
    s = check_array("reward_sums", reward_sums)
    q = check_array("reward_sq_sums", reward_sq_sums)
    p = check_probabilities("probs", probs)
    flat = np.asarray(zero_spread, dtype=bool)
    for name in estimators:
        check_choice("estimators", name, ESTIMATORS)
    if s.shape != n.shape:
        raise ParameterError("reward_sums", f"`reward_sums` must have the shape of `counts` {n.shape}; got {s.shape}")
    sizes = n.sum(axis=-1)
    if sizes.size == 0:
        raise ParameterError("counts", "`counts` holds no groups")
    g = float(sizes.reshape(-1)[0])
    if not np.all(sizes == g):
        raise ParameterError("counts", f"every group must have the same size; got sizes {np.unique(sizes)[:5]}...")
    if g < 1:
        raise ParameterError("group_size", f"`group_size` must be >= 1; got {g:g}")
    if g < 2 and any(e in ("leave_one_out", "std") for e in estimators):
        raise ParameterError("group_size", f"`group_size` must be >= 2 for leave_one_out/std; got {g:g}")
    total = s.sum(axis=-1, keepdims=True)
    zw = s - total * p  # sum_i Z_i W_i
    sw = n - g * p  # sum_i W_i
    out: dict[str, np.ndarray] = {}
    centred = None
    if any(e in ("mean", "leave_one_out", "std") for e in estimators):
        centred = np.where(flat[..., None], 0.0, (zw - (total / g) * sw) / g)
    for name in estimators:
        if name == "vanilla":
            out[name] = zw / g
        elif name == "oracle":
            if value is None:
                raise ParameterError("value", "`value` is required for the 'oracle' estimator")
            v = np.asarray(check_array("value", value))[..., None] if np.ndim(value) else float(value)
            out[name] = (zw - v * sw) / g
        elif name == "mean":
            out[name] = centred
        elif name == "leave_one_out":
            out[name] = centred * (g / (g - 1))
        else:  # std
            var = np.maximum(q - total[..., 0] ** 2 / g, 0.0) / (g - 1)
            out[name] = centred / (np.sqrt(var) + eps)[..., None]
    return out


def sample_bandit_gradients(
    probs,
    rewards,
    group_size: int,
    num_groups: int,
    rng: np.random.Generator,
    *,
    bernoulli: bool = False,
    estimators=ESTIMATORS,
    eps: float = DEFAULT_STD_EPS,
    spread_rtol: float = DEFAULT_SPREAD_RTOL,
) -> dict[str, np.ndarray]:
    """Draw ``num_groups`` independent groups of one bandit prompt and return every estimator.

    Arm counts are drawn as one multinomial per group (Bernoulli rewards as binomials per arm),
    so the cost is O(num_groups * A) whatever G is.

    Parameters
    ----------
    probs : array_like, shape (A,)
        Policy pi.
    rewards : array_like, shape (A,)
        Arm rewards (means when ``bernoulli``).
    group_size : int, >= 1
        G (>= 2 for "leave_one_out" and "std").
    num_groups : int, >= 1
        Independent groups to draw.
    rng : numpy.random.Generator
        Seeded randomness.
    bernoulli : bool
        Bernoulli(r_a) rewards instead of deterministic.
    estimators : sequence of str
        Subset of :data:`ESTIMATORS`.
    eps, spread_rtol : float
        As in :func:`grpo_core.grpo.group_advantages`.

    Returns
    -------
    dict of str -> ndarray, shape (num_groups, A)
        Per-group gradient estimates.

    Raises
    ------
    ParameterError
        Invalid policy, rewards, sizes or estimator names.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> est = sample_bandit_gradients([0.5, 0.5], [1.0, 0.0], 4, 1000, rng, estimators=("oracle",))
    >>> est["oracle"].shape
    (1000, 2)
    """
    p = check_probabilities("probs", probs)
    if p.ndim != 1:
        raise ParameterError("probs", f"`probs` must have shape (A,); got {p.shape}")
    r = _check_arm_rewards(rewards, p.size, bernoulli)
    g = check_integer("group_size", group_size, low=1)
    m = check_integer("num_groups", num_groups, low=1)
    n = rng.multinomial(g, p, size=m).astype(float)
    if bernoulli:
        s = rng.binomial(n.astype(np.int64), r).astype(float)
        q = s.sum(axis=-1)
        total = q
        flat = (total == 0) | (total == g)
    else:
        s = n * r
        q = n @ r**2
        drawn = n > 0
        hi = np.where(drawn, r, -np.inf).max(axis=-1)
        lo = np.where(drawn, r, np.inf).min(axis=-1)
        tol = check_real("spread_rtol", spread_rtol, low=0.0)
        flat = (hi - lo) <= tol * np.maximum(1.0, np.maximum(np.abs(hi), np.abs(lo)))
    return gradients_from_counts(n, s, q, p, flat, value=float(p @ r), estimators=estimators, eps=eps)


def monte_carlo_mse(
    probs,
    rewards,
    group_sizes,
    num_groups: int,
    *,
    seed: int = 0,
    bernoulli: bool = False,
    estimators=ESTIMATORS,
    chunk_size: int = 50_000,
) -> pd.DataFrame:
    """Monte Carlo MSE of each estimator against G, with standard errors and the exact values.

    For every G the same ``num_groups`` groups feed all estimators (common random numbers), so
    differences between estimators are measured precisely. Two derived rows per G:
    ``"gap"`` is E||g_loo - g_oracle||^2, the squared size of the degenerate Hoeffding part, which
    equals MSE_loo - MSE_oracle exactly (the parts are orthogonal) but is measured far more
    precisely than the difference of two noisy MSEs.

    Parameters
    ----------
    probs : array_like, shape (A,)
        Policy pi.
    rewards : array_like, shape (A,)
        Arm rewards (means when ``bernoulli``).
    group_sizes : sequence of int, each >= 2
        The G values.
    num_groups : int, >= 2
        Groups per G.
    seed : int
        Seed of the ``numpy.random.Generator``.
    bernoulli : bool
        Bernoulli rewards.
    estimators : sequence of str
        Subset of :data:`ESTIMATORS`.
    chunk_size : int, >= 1
        Groups per vectorised batch (bounds memory: about 6 * chunk_size * A floats).

    Returns
    -------
    pandas.DataFrame
        One row per (group_size, estimator) with columns ``group_size``, ``estimator``,
        ``mse`` (E||g_hat - target||^2), ``mse_se`` (its Monte Carlo standard error),
        ``relative_mse`` (mse / ||target||^2), ``bias_norm`` (||mean error||), ``exact`` (closed
        form; for "std" from :func:`std_scaled_mse` when rewards are 0/1 or Bernoulli and every
        arm has positive probability, else NaN) and ``target`` ("g", or "g/sd(Z)" for the std-scaled estimator,
        whose natural target is the gradient of the standardised reward).

    Raises
    ------
    ParameterError
        Invalid inputs (see :func:`sample_bandit_gradients`), G < 2, ``num_groups`` < 2.

    Examples
    --------
    >>> df = monte_carlo_mse([0.2, 0.8], [1.0, 0.0], [4], 20000, estimators=("leave_one_out",))
    >>> df["estimator"].tolist(), df["exact"].round(5).tolist()
    (['leave_one_out', 'gap'], [0.03733, 0.00853])
    >>> bool(abs(df["mse"].iloc[0] / df["exact"].iloc[0] - 1) < 0.05)
    True
    """
    moments = bandit_moments(probs, rewards, bernoulli=bernoulli)
    sizes = [check_integer("group_sizes", g, low=2) for g in np.atleast_1d(group_sizes)]
    m = check_integer("num_groups", num_groups, low=2)
    chunk = check_integer("chunk_size", chunk_size, low=1)
    names = tuple(estimators)
    for name in names:
        check_choice("estimators", name, ESTIMATORS)
    need = tuple(dict.fromkeys((*names, "leave_one_out", "oracle")))
    rng = np.random.default_rng(seed)
    arm_r = np.asarray(rewards, dtype=float)
    std_exact_ok = bool(np.all(moments.probs > 0) and (bernoulli or np.all((arm_r == 0) | (arm_r == 1))))
    sd = np.sqrt(moments.reward_var)
    targets = {e: moments.gradient for e in need}
    targets["std"] = moments.gradient / sd if sd > 0 else moments.gradient
    rows = []
    for g in sizes:
        sums = {e: np.zeros(3) for e in (*need, "gap")}
        mean_err = {e: np.zeros_like(moments.gradient) for e in need}
        done = 0
        while done < m:
            k = min(chunk, m - done)
            est = sample_bandit_gradients(moments.probs, rewards, g, k, rng, bernoulli=bernoulli, estimators=need)
            for e in need:
                err = est[e] - targets[e]
                sq = (err**2).sum(axis=-1)
                sums[e] += (k, sq.sum(), (sq**2).sum())
                mean_err[e] += err.sum(axis=0)
            sq = ((est["leave_one_out"] - est["oracle"]) ** 2).sum(axis=-1)
            sums["gap"] += (k, sq.sum(), (sq**2).sum())
            done += k
        for e in (*names, "gap"):
            cnt, s1, s2 = sums[e]
            mse = s1 / cnt
            se = np.sqrt(max(s2 / cnt - mse**2, 0.0) / (cnt - 1))
            if e == "gap":
                exact = float(moments.degenerate / (g * (g - 1)))
                target, tnorm, bias = "g", moments.grad_sq, np.nan
            else:
                if e == "std":
                    exact = float(std_scaled_mse(moments.probs, rewards, g)[0]) if std_exact_ok else np.nan
                else:
                    exact = float(moments.mse(e, g))
                target = "g/sd(Z)" if e == "std" else "g"
                tnorm = float(targets[e] @ targets[e])
                bias = float(np.linalg.norm(mean_err[e] / cnt))
            rows.append(
                {
                    "group_size": g,
                    "estimator": e,
                    "mse": mse,
                    "mse_se": se,
                    "relative_mse": mse / tnorm if tnorm > 0 else np.nan,
                    "bias_norm": bias,
                    "exact": exact,
                    "target": target,
                }
            )
    return pd.DataFrame(rows)


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
    from ..bandit import BanditSpec, gradient_covariance

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
        spec = BanditSpec(reward_probs=tuple(r.tolist()), group_size=g, baseline="mean", scale="group_std",
                          std_eps=e)
        mean, cov = gradient_covariance(spec, np.log(p))
        out.append(float(((mean - target) ** 2).sum() + np.trace(cov)))
    return np.array(out)


def loglog_slope(x, y) -> float:
    """Least-squares slope of log(y) against log(x) (the exponent of a power law y ~ x^k).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Positive values, n >= 2.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        Fewer than two points, non-positive or non-finite values.

    Examples
    --------
    >>> round(loglog_slope([1, 2, 4, 8], [1, 0.25, 0.0625, 0.015625]), 6)
    -2.0
    """
    xa = check_array("x", x, ndim=1, min_size=2)
    ya = check_array("y", y, ndim=1, min_size=2)
    if xa.shape != ya.shape:
        raise ParameterError("y", f"`y` must have the shape of `x` {xa.shape}; got {ya.shape}")
    if np.any(xa <= 0) or np.any(ya <= 0):
        raise ParameterError("y", "`x` and `y` must be > 0 for a log-log fit")
    if np.ptp(np.log(xa)) == 0:
        raise ParameterError("x", f"`x` must hold at least two different values for a slope; got all {xa[0]!r}")
    return float(np.polyfit(np.log(xa), np.log(ya), 1)[0])
