r"""Choosing the group size G under a fixed rollout budget: the c1, c2, c3 law and G*.

A training step draws B prompts and G completions per prompt: N = B G rollouts. With the
unbiased leave-one-out estimator of each prompt's gradient (:mod:`grpo_core.groupsize.ustat`), prompts drawn
i.i.d. from the prompt distribution, the minibatch gradient's exact mean squared error is (our
derivation, book chapter "Choosing the group size")

    MSE(B, G) = (1/B) (c1 + c2 / G + c3 / (G (G - 1)))

    c1 = E_x ||g(x)||^2 - ||E_x g(x)||^2        between-prompt variance of the true gradient
    c2 = E_x tr Sigma_oracle(x)                  the oracle's within-prompt variance
    c3 = E_x [E||W||^2 Var(Z|x) + ||g(x)||^2]   twice the degenerate kernel's variance

Expanding 1/(G(G-1)) = 1/G^2 + 1/G^3 + ... gives the paper's law c1/B + c2/(BG) + c3/(BG^2).
At a fixed budget B = N/G:

    N MSE = c1 G + c2 + c3 / (G - 1)  (exact)    or    c1 G + c2 + c3 / G  (leading order),

minimised at ``G* = 1 + sqrt(c3'/c1)`` (exact) or ``G* = sqrt(c3/c1)`` (leading order), with
``c3' = c3`` the same constant: the exact optimum is the paper's plus one. Neither depends on N
nor on the number of steps. (For the plain mean baseline the bias term ||E_x g||^2/G^2 does not
shrink with B, which pushes its optimum up: :func:`minibatch_mse` has it.)

The contextual softmax bandit (:class:`PromptPool`) makes every constant exact: prompts share
the logits theta and differ in a fixed logit offset (their difficulty), so between-prompt
variance c1 comes from the spread of difficulties.

References
----------
"Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025),
Theorem 7 (scaling law, optimal G independent of N and of the iterations) and Table 2 / Fig. 5
(empirical G* = 32 on GSM8K with Qwen2.5-1.5B-Instruct at N = 1024, 64 on MATH with Qwen2.5-Math-7B).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import ParameterError
from ..grpo import DEFAULT_STD_EPS, group_advantages
from ..softmax import arm_counts, sample_categorical, score, softmax
from ..validation import check_array, check_choice, check_integer, check_real
from .ustat import bandit_traces, check_groups, group_gradient

__all__ = [
    "PromptPool",
    "beta_difficulty_pool",
    "GroupSizeConstants",
    "pool_constants",
    "constants_by_spread",
    "spread_for_optimal_group_size",
    "estimate_constants",
    "num_prompts_for_budget",
    "minibatch_mse",
    "optimal_group_size",
    "best_group_size",
    "sample_pool_groups",
    "minibatch_mse_monte_carlo",
    "train_fixed_budget",
    "summarise_study",
    "study_path",
    "MAX_BUDGET",
]

#: Largest rollout budget N accepted: 2**53, the largest integer a float64 holds exactly.
MAX_BUDGET = 2**53


# --------------------------------------------------------------------------------------------
# The contextual bandit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptPool:
    """A contextual softmax bandit: P prompts, A arms, shared logits theta.

    Prompt x's policy is ``pi_x = softmax(theta + offsets[x])``; arm a earns ``rewards[x, a]``
    (a Bernoulli(rewards[x, a]) draw when ``bernoulli``). The prompt distribution is uniform over
    the pool. The gradient of log pi_x(a) with respect to the shared theta is e_a - pi_x, so the
    per-prompt moments are those of :func:`grpo_core.groupsize.ustat.bandit_traces`.

    Attributes
    ----------
    offsets : ndarray, shape (P, A)
        Prompt-specific logit offsets (nats): what the model "already knows" about each prompt.
    rewards : ndarray, shape (P, A)
        Arm rewards per prompt, in [0, 1].
    bernoulli : bool
        Bernoulli rewards instead of deterministic ones.
    """

    offsets: np.ndarray
    rewards: np.ndarray
    bernoulli: bool = False

    def __post_init__(self):
        b = check_array("offsets", self.offsets, ndim=2, min_size=2)
        r = check_array("rewards", self.rewards, ndim=2, low=0.0, high=1.0)
        if b.shape != r.shape:
            raise ParameterError("rewards", f"`rewards` must have the shape of `offsets` {b.shape}; got {r.shape}")
        if b.shape[0] < 1:
            raise ParameterError("offsets", "`offsets` needs at least one prompt")
        object.__setattr__(self, "offsets", b)
        object.__setattr__(self, "rewards", r)

    @property
    def num_prompts(self) -> int:
        """P."""
        return self.offsets.shape[0]

    @property
    def num_arms(self) -> int:
        """A."""
        return self.offsets.shape[1]

    def probs(self, theta=None) -> np.ndarray:
        """Every prompt's policy pi_x = softmax(theta + offsets[x]).

        Parameters
        ----------
        theta : array_like, shape (..., A), optional
            Shared logits (nats); leading axes (seeds, configurations) are batched. Default 0.

        Returns
        -------
        ndarray, shape (..., P, A)

        Raises
        ------
        ParameterError
            ``theta`` of the wrong shape or not finite.

        Examples
        --------
        >>> pool = beta_difficulty_pool(4, 3, mean=0.5, spread=0.0)
        >>> pool.probs().round(3)[0].tolist()
        [0.5, 0.25, 0.25]
        """
        th = np.zeros(self.num_arms) if theta is None else _check_theta(theta, self.num_arms)
        return softmax(th[..., None, :] + self.offsets)

    def success(self, theta=None) -> np.ndarray:
        """Each prompt's expected reward p_x(theta) = pi_x . r_x, shape (..., P) (see :meth:`probs`)."""
        return (self.probs(theta) * self.rewards).sum(axis=-1)

    def expected_reward(self, theta=None) -> np.ndarray:
        """J(theta) = E_x p_x(theta), shape (...): the training objective (see :meth:`probs`)."""
        return self.success(theta).mean(axis=-1)


def _check_theta(theta, num_arms: int) -> np.ndarray:
    th = check_array("theta", theta)
    if th.ndim < 1 or th.shape[-1] != num_arms:
        raise ParameterError("theta", f"`theta` must have shape (..., {num_arms}); got {th.shape}")
    return th


def beta_difficulty_pool(
    num_prompts: int = 256,
    num_arms: int = 8,
    *,
    mean: float = 0.3,
    spread: float = 0.15,
    num_correct: int = 1,
    correct_sets: str = "shared",
    seed: int = 0,
) -> PromptPool:
    """Prompts whose initial success probability p_x follows a Beta distribution.

    p_x are the Beta quantiles at (i + 1/2)/P (a deterministic, evenly weighted quadrature of
    the distribution, so the pool's constants are smooth in ``spread``). Each prompt has
    ``num_correct`` correct arms (reward 1, others 0); at theta = 0 its correct arms share
    probability p_x equally and its wrong arms share 1 - p_x.

    Parameters
    ----------
    num_prompts : int, >= 2
        P.
    num_arms : int, >= 2
        A.
    mean : float in (0, 1)
        Mean initial success probability E p_x.
    spread : float, >= 0
        Standard deviation of p_x across prompts; must be below sqrt(mean (1 - mean)).
        0 gives identical prompts (then c1 = 0 and the best G is the whole budget).
    num_correct : int in [1, A - 1]
        Correct arms per prompt.
    correct_sets : {"shared", "random"}
        ``"shared"``: arms 0..num_correct-1 are correct for every prompt (one skill, prompts
        differ in difficulty only: their true gradients are parallel at theta = 0).
        ``"random"``: each prompt's correct arms are drawn at random (gradients point in
        different directions: a much larger c1).
    seed : int
        Seed for ``"random"`` correct sets.

    Returns
    -------
    PromptPool

    Raises
    ------
    ParameterError
        Any argument outside its range.

    Examples
    --------
    >>> pool = beta_difficulty_pool(100, 4, mean=0.3, spread=0.1)
    >>> round(float(pool.success().mean()), 3), round(float(pool.success().std()), 3)
    (0.3, 0.1)
    """
    p_count = check_integer("num_prompts", num_prompts, low=2)
    a = check_integer("num_arms", num_arms, low=2)
    m = check_real("mean", mean, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    limit = float(np.sqrt(m * (1 - m)))
    s = check_real("spread", spread, low=0.0, high=limit, high_inclusive=False)
    k = check_integer("num_correct", num_correct, low=1, high=a - 1)
    check_choice("correct_sets", correct_sets, ("shared", "random"))
    if s == 0.0:
        p = np.full(p_count, m)
    else:
        conc = m * (1 - m) / s**2 - 1.0
        p = stats.beta.ppf((np.arange(p_count) + 0.5) / p_count, m * conc, (1 - m) * conc)
    p = np.clip(p, 1e-9, 1 - 1e-9)
    rewards = np.zeros((p_count, a))
    if correct_sets == "shared":
        rewards[:, :k] = 1.0
    else:
        rng = np.random.default_rng(seed)
        picks = np.argsort(rng.random((p_count, a)), axis=1)[:, :k]
        np.put_along_axis(rewards, picks, 1.0, axis=1)
    offsets = np.where(rewards > 0, np.log(p / k)[:, None], np.log((1 - p) / (a - k))[:, None])
    return PromptPool(offsets=offsets, rewards=rewards)


# --------------------------------------------------------------------------------------------
# The constants and the law
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupSizeConstants:
    """The constants of the minibatch MSE law and what follows from them.

    Attributes
    ----------
    c1 : float
        Between-prompt variance of the true per-prompt gradient (squared gradient units).
    c2 : float
        Mean oracle variance E_x tr Sigma_oracle(x).
    c3 : float
        E_x [E||W||^2 Var(Z|x) + ||g(x)||^2] (the exact 1/(G(G-1)) coefficient, c3').
    grad_sq : float
        ||E_x g(x)||^2, the squared norm of the full gradient (sets the mean baseline's bias).
    intervals : dict of str -> (float, float)
        Confidence intervals (estimated constants only): keys ``c1``, ``c2``, ``c3``,
        ``g_star``, ``g_star_exact``.
    confidence : float or None
        Their level.
    num_prompts, group_size : int or None
        The sample the constants were estimated from (None when exact).
    """

    c1: float
    c2: float
    c3: float
    grad_sq: float = float("nan")
    intervals: dict = field(default_factory=dict)
    confidence: float | None = None
    num_prompts: int | None = None
    group_size: int | None = None

    @property
    def g_star(self) -> float:
        """Leading-order optimum sqrt(c3/c1) (inf when c1 <= 0)."""
        return optimal_group_size(self.c1, self.c3, exact=False)

    @property
    def g_star_exact(self) -> float:
        """Exact-MSE optimum 1 + sqrt(c3/c1) (inf when c1 <= 0)."""
        return optimal_group_size(self.c1, self.c3, exact=True)

    def mse(self, group_size, *, budget=None, num_prompts=None, estimator="leave_one_out", exact=True):
        """The minibatch MSE law with these constants (:func:`minibatch_mse`).

        Parameters
        ----------
        group_size : int or array_like of int, >= 2
            G.
        budget, num_prompts : int, optional
            N (then B = N/G) or B; exactly one.
        estimator : {"leave_one_out", "mean"}
            The mean baseline adds the bias ``grad_sq / G^2`` (0 when ``grad_sq`` is unknown).
        exact : bool
            Exact 1/(G(G-1)) or leading-order 1/G^2 second-order term.

        Returns
        -------
        ndarray shaped like ``group_size``

        Raises
        ------
        ParameterError
            As :func:`minibatch_mse` (negative estimated constants included).

        Examples
        --------
        >>> float(GroupSizeConstants(1.0, 2.0, 12.0).mse(4, num_prompts=8))
        0.3125
        """
        return minibatch_mse(
            group_size, self.c1, self.c2, self.c3, budget=budget, num_prompts=num_prompts,
            estimator=estimator, exact=exact, grad_sq=0.0 if np.isnan(self.grad_sq) else self.grad_sq,
        )

    def as_dict(self) -> dict:
        """Plain dict (for JSON and tables): constants, both G*, intervals as [lo, hi] lists.

        Examples
        --------
        >>> GroupSizeConstants(1.0, 2.0, 9.0).as_dict()["g_star_exact"]
        4.0
        """
        out = {
            "c1": self.c1, "c2": self.c2, "c3": self.c3, "grad_sq": self.grad_sq,
            "g_star": self.g_star, "g_star_exact": self.g_star_exact,
            "confidence": self.confidence, "num_prompts": self.num_prompts, "group_size": self.group_size,
        }
        out["intervals"] = {k: [float(v[0]), float(v[1])] for k, v in self.intervals.items()}
        return out


def pool_constants(pool: PromptPool, theta=None) -> GroupSizeConstants:
    """Exact c1, c2, c3 of a contextual bandit at logits theta.

    Parameters
    ----------
    pool : PromptPool
        The prompt distribution (uniform over the pool).
    theta : array_like, shape (A,), optional
        Shared logits (default 0: the initial policy).

    Returns
    -------
    GroupSizeConstants
        Exact constants (no intervals).

    Raises
    ------
    ParameterError
        ``theta`` of the wrong shape or not finite.

    Examples
    --------
    >>> pool = beta_difficulty_pool(64, 4, mean=0.3, spread=0.1)
    >>> k = pool_constants(pool)
    >>> round(k.g_star_exact, 2)
    11.08
    """
    if not isinstance(pool, PromptPool):
        raise ParameterError("pool", f"`pool` must be a PromptPool; got {type(pool).__name__}")
    th = None if theta is None else _check_theta(theta, pool.num_arms)
    if th is not None and th.ndim != 1:
        raise ParameterError("theta", f"`theta` must have shape ({pool.num_arms},); got {th.shape}")
    t = bandit_traces(pool.probs(th), pool.rewards, bernoulli=pool.bernoulli)
    mean_grad = t.gradient.mean(axis=0)
    grad_sq = float(mean_grad @ mean_grad)
    # the variance form (not mean ||g||^2 - ||mean g||^2): no cancellation, exactly 0 for equal prompts
    return GroupSizeConstants(
        c1=float(((t.gradient - mean_grad) ** 2).sum(axis=-1).mean()),
        c2=float(t.oracle_trace.mean()),
        c3=float(t.degenerate.mean()),
        grad_sq=grad_sq,
    )


def constants_by_spread(
    spreads,
    *,
    mean: float = 0.3,
    num_arms: int = 8,
    num_prompts: int = 256,
    num_correct: int = 1,
    correct_sets: str = "shared",
) -> pd.DataFrame:
    """Exact constants and G* of :func:`beta_difficulty_pool` pools over a range of spreads.

    Parameters
    ----------
    spreads : sequence of float
        Standard deviations of the prompts' initial success probability (each in
        [0, sqrt(mean (1 - mean)))).
    mean, num_arms, num_prompts, num_correct, correct_sets
        As in :func:`beta_difficulty_pool`.

    Returns
    -------
    pandas.DataFrame
        Columns ``spread``, ``c1``, ``c2``, ``c3``, ``grad_sq``, ``g_star``, ``g_star_exact``.

    Raises
    ------
    ParameterError
        A spread or another argument out of range.

    Examples
    --------
    >>> constants_by_spread([0.1, 0.2], mean=0.2)["g_star_exact"].round(2).tolist()
    [7.77, 4.77]
    """
    rows = []
    for sp in np.atleast_1d(spreads):
        pool = beta_difficulty_pool(num_prompts, num_arms, mean=mean, spread=sp, num_correct=num_correct,
                                    correct_sets=correct_sets)
        k = pool_constants(pool)
        rows.append({"spread": float(sp), "c1": k.c1, "c2": k.c2, "c3": k.c3, "grad_sq": k.grad_sq,
                     "g_star": k.g_star, "g_star_exact": k.g_star_exact})
    return pd.DataFrame(rows)


def spread_for_optimal_group_size(g_star: float, *, exact: bool = True, **pool_kwargs) -> float:
    """The difficulty spread at which a :func:`beta_difficulty_pool` pool has a given G*.

    Parameters
    ----------
    g_star : float, > 2
        Target optimum (e.g. the paper's 32 or 64).
    exact : bool
        Match the exact-MSE G* (True) or the leading-order sqrt(c3/c1).
    **pool_kwargs
        ``mean``, ``num_arms``, ``num_prompts``, ``num_correct`` of :func:`constants_by_spread`.

    Returns
    -------
    float
        The spread (standard deviation of the initial success probability).

    Raises
    ------
    ParameterError
        ``g_star`` out of range or not reachable between spread 1e-4 and 95% of its maximum.

    Examples
    --------
    >>> round(spread_for_optimal_group_size(32.0, mean=0.2), 4)
    0.0207
    """
    target = check_real("g_star", g_star, low=2.0, low_inclusive=False)
    from scipy.optimize import brentq

    mean = pool_kwargs.get("mean", 0.3)
    hi = 0.95 * float(np.sqrt(mean * (1 - mean)))
    key = "g_star_exact" if exact else "g_star"

    def f(log_sp: float) -> float:
        row = constants_by_spread([np.exp(log_sp)], **pool_kwargs).iloc[0]
        return float(np.log(row[key]) - np.log(target))

    lo_v, hi_v = f(np.log(1e-4)), f(np.log(hi))
    if lo_v * hi_v > 0:
        raise ParameterError("g_star", f"`g_star` = {target:g} is not reached for spreads in [1e-4, {hi:.3g}]")
    return float(np.exp(brentq(f, np.log(1e-4), np.log(hi), xtol=1e-8)))


def num_prompts_for_budget(budget, group_size) -> int:
    """B = N / G, refusing budgets that G does not divide.

    A budget that G does not divide is an error, not rounded: rounding B would silently change
    the number of rollouts per step, the very quantity a fixed-budget comparison holds fixed.

    Parameters
    ----------
    budget : int, >= 1
        N, rollouts (completions) per optimizer step.
    group_size : int, >= 1
        G, completions per prompt.

    Returns
    -------
    int
        B = N / G.

    Raises
    ------
    ParameterError
        ``budget`` or ``group_size`` not a positive integer, G > N, or N not divisible by G
        (the message names ``budget`` and the nearest valid budgets).

    Examples
    --------
    >>> num_prompts_for_budget(1024, 32)
    32
    >>> num_prompts_for_budget(1000, 32)
    Traceback (most recent call last):
    ...
    grpo_core.errors.ParameterError: `budget` must be a multiple of `group_size` = 32 (B = N/G prompts per step); got 1000 (nearest: 992 or 1024)
    """
    n = check_integer("budget", budget, low=1)
    g = check_integer("group_size", group_size, low=1)
    if g > n:
        raise ParameterError("group_size", f"`group_size` must be <= `budget` = {n}; got {g}")
    if n % g:
        lo, hi = (n // g) * g, (n // g + 1) * g
        raise ParameterError(
            "budget",
            f"`budget` must be a multiple of `group_size` = {g} (B = N/G prompts per step); got {n} "
            f"(nearest: {lo} or {hi})",
        )
    return n // g


def minibatch_mse(
    group_size,
    c1: float,
    c2: float,
    c3: float,
    *,
    budget=None,
    num_prompts=None,
    estimator: str = "leave_one_out",
    exact: bool = True,
    grad_sq: float = 0.0,
) -> np.ndarray:
    """MSE of the minibatch gradient: (1/B)(c1 + c2/G + c3/(G(G-1))).

    Parameters
    ----------
    group_size : int or array_like of int, >= 2
        G.
    c1, c2, c3 : float, >= 0
        The constants (squared gradient units).
    budget : int, optional
        N: then B = N/G (every G must divide N, see :func:`num_prompts_for_budget`).
    num_prompts : int or array_like, optional
        B directly (exactly one of ``budget`` and ``num_prompts``).
    estimator : {"leave_one_out", "mean"}
        ``"mean"``: the plain mean baseline, ((G-1)/G)^2 times the variance plus the bias
        ``grad_sq / G^2``.
    exact : bool
        True: the exact 1/(G(G-1)); False: the leading-order 1/G^2 of the paper's law.
    grad_sq : float, >= 0
        ||E_x g||^2 (only used by ``"mean"``).

    Returns
    -------
    ndarray shaped like ``group_size``

    Raises
    ------
    ParameterError
        Negative constants, G < 2, both or neither of ``budget``/``num_prompts``, indivisible
        budgets, unknown estimator.

    Examples
    --------
    >>> float(minibatch_mse(4, 1.0, 2.0, 12.0, num_prompts=8))     # (1 + 2/4 + 12/12) / 8
    0.3125
    >>> minibatch_mse([2, 4, 8], 1.0, 2.0, 12.0, budget=64).round(4).tolist()   # G* = 1 + sqrt(12)
    [0.25, 0.1562, 0.183]
    """
    g = check_array("group_size", group_size, low=2)
    if not np.all(g == np.round(g)):
        raise ParameterError("group_size", "`group_size` must contain integers >= 2")
    a = check_real("c1", c1, low=0.0)
    b2 = check_real("c2", c2, low=0.0)
    b3 = check_real("c3", c3, low=0.0)
    gs = check_real("grad_sq", grad_sq, low=0.0)
    check_choice("estimator", estimator, ("leave_one_out", "mean"))
    if (budget is None) == (num_prompts is None):
        raise ParameterError("budget", "give exactly one of `budget` (N) and `num_prompts` (B)")
    if budget is not None:
        b = np.vectorize(lambda x: num_prompts_for_budget(budget, int(x)), otypes=[float])(g)
    else:
        b = check_array("num_prompts", num_prompts, low=1)
    second = g * (g - 1) if exact else g**2
    var = (a + b2 / g + b3 / second) / b
    if estimator == "mean":
        var = ((g - 1) / g) ** 2 * var + gs / g**2
    return var


def optimal_group_size(c1: float, c3: float, *, exact: bool = True) -> float:
    """The fixed-budget optimum: 1 + sqrt(c3/c1) (exact) or sqrt(c3/c1) (leading order).

    Parameters
    ----------
    c1 : float
        Between-prompt variance. An unbiased estimate can come out negative: ``c1 <= 0`` (no
        between-prompt variance) gives ``inf`` (spend the whole budget on one prompt).
    c3 : float, >= 0
        The second-order constant.
    exact : bool
        Minimise the exact c1 G + c2 + c3/(G-1) (True) or c1 G + c2 + c3/G (False).

    Returns
    -------
    float
        The continuous minimiser (round it to a feasible G with :func:`best_group_size`).

    Raises
    ------
    ParameterError
        Non-finite constants, or a negative ``c3``.

    Examples
    --------
    >>> optimal_group_size(1.0, 961.0, exact=False), optimal_group_size(1.0, 961.0)
    (31.0, 32.0)
    """
    a = check_real("c1", c1)
    b = check_real("c3", c3, low=0.0)
    if a <= 0:
        return float("inf")
    root = float(np.sqrt(b / a))
    return 1.0 + root if exact else root


def best_group_size(budget: int, c1: float, c2: float, c3: float, *, candidates=None, exact: bool = True) -> int:
    """The feasible G with the smallest minibatch MSE at budget N.

    Parameters
    ----------
    budget : int, in [2, 2**53]
        N, rollouts (completions) per optimizer step; at most 2**53, the largest integer a float
        holds exactly.
    c1, c2, c3 : float, >= 0
        The constants.
    candidates : sequence of int, optional
        G values to consider (default: the powers of two from 2 to N that divide N). Those that
        do not divide N are dropped.
    exact : bool
        Use the exact or the leading-order law.

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        No candidate divides the budget, or invalid constants.

    Examples
    --------
    >>> best_group_size(1024, 1.0, 5.0, 961.0)
    32
    """
    n = check_integer("budget", budget, low=2, high=MAX_BUDGET)
    if candidates is None:
        cand = [2**k for k in range(1, int(np.log2(n)) + 1) if n % 2**k == 0]
    else:
        cand = [check_integer("candidates", c, low=2) for c in np.atleast_1d(candidates)]
        cand = [c for c in cand if c <= n and n % c == 0]
    if not cand:
        raise ParameterError("candidates", f"`candidates` must include a group size that divides `budget` = {n}; none does")
    mse = minibatch_mse(cand, c1, c2, c3, budget=n, exact=exact)
    return int(cand[int(np.argmin(mse))])


# --------------------------------------------------------------------------------------------
# Estimating the constants from per-prompt groups
# --------------------------------------------------------------------------------------------


def _per_prompt_statistics(w: np.ndarray, z: np.ndarray) -> dict[str, np.ndarray]:
    """Unbiased per-prompt estimates (U-statistics, O(G D) per prompt); see estimate_constants."""
    g = z.shape[-1]
    a = (w**2).sum(axis=-1)  # ||W_i||^2
    s = z.sum(axis=-1, keepdims=True)
    q = (z**2).sum(axis=-1, keepdims=True)
    t1 = (a * z**2).mean(axis=-1)
    t2 = (a * z * (s - z)).sum(axis=-1) / (g * (g - 1))
    t3 = (a * ((s - z) ** 2 - (q - z**2))).sum(axis=-1) / (g * (g - 1) * (g - 2))
    t4 = (a * (q - z**2)).sum(axis=-1) / (g * (g - 1))
    m2 = t1 - 2.0 * t2 + t3  # E||W (Z - V)||^2
    e = t4 - t3  # E||W||^2 Var(Z)
    loo = group_gradient(w, z, estimator="leave_one_out")
    n2 = ((loo**2).sum(axis=-1) - m2 / g - e / (g * (g - 1))) / (1.0 - 1.0 / g + 1.0 / (g * (g - 1)))
    return {"loo": loo, "grad_sq": n2, "oracle_trace": m2 - n2, "degenerate": e + n2}


def estimate_constants(
    scores,
    rewards,
    *,
    num_bootstrap: int = 1000,
    confidence: float = 0.9,
    seed: int = 0,
) -> GroupSizeConstants:
    """Unbiased estimates of c1, c2, c3 from P prompts x G samples, with bootstrap intervals.

    Works on any model: give each sampled completion's score vector (its log-probability
    gradient, or a fixed Gaussian random projection of it to k coordinates, which keeps squared
    norms, and so each constant, up to a relative error of order sqrt(2/k): Johnson-Lindenstrauss)
    and reward.

    Per prompt (G >= 3 samples, all U-statistics, so unbiased for every distribution):

    - m2 = E||W (Z - V)||^2 = E[a_i z_i^2] - 2 E[a_i z_i z_j] + E[a_i z_j z_k]  (i, j, k distinct,
      a_i = ||W_i||^2), from power sums in O(G);
    - e = E||W||^2 Var(Z) = E[a_i z_j^2] - E[a_i z_j z_k];
    - ||g||^2 from E||U||^2 = ||g||^2 + (m2 - ||g||^2)/G + (e + ||g||^2)/(G(G-1)), U the
      leave-one-out estimate.

    Then c2 = mean(m2 - ||g||^2), c3 = mean(e + ||g||^2), and
    c1 = mean ||g_x||^2 - ||E g||^2 with ||E g||^2 = (||sum_x U_x||^2 - sum_x ||U_x||^2)/(P(P-1))
    (U_x independent across prompts). Intervals: percentile bootstrap over prompts (pairs of a
    resampled prompt with itself are left out of the cross term; the cross
    term from the P x P Gram matrix of the U_x when P <= D, so the cost does not grow with D).

    Parameters
    ----------
    scores : array_like, shape (P, G, D)
        Score vectors W of each prompt's G completions.
    rewards : array_like, shape (P, G)
        Their rewards Z.
    num_bootstrap : int, >= 0
        Bootstrap resamples of the prompts (0: no intervals).
    confidence : float in (0, 1)
        Level of the percentile intervals.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    GroupSizeConstants
        Point estimates (c1 can come out <= 0 when the between-prompt variance is too small to
        resolve; G* is then inf) and intervals for c1, c2, c3, G*, G*_exact.

    Raises
    ------
    ParameterError
        Not shaped (P, G, D) / (P, G), ragged or empty groups, NaN/inf, P < 2, G < 3, bad
        ``num_bootstrap`` or ``confidence``.

    References
    ----------
    Our derivation (book chapter "Choosing the group size", section "Estimating the constants");
    Hoeffding (1948) for U-statistics.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pool = beta_difficulty_pool(64, 4, mean=0.3, spread=0.1)
    >>> w, z, _ = sample_pool_groups(pool, 2000, 8, rng)
    >>> est = estimate_constants(w, z, num_bootstrap=200)
    >>> exact = pool_constants(pool)
    >>> bool(abs(est.c3 / exact.c3 - 1) < 0.05)
    True
    """
    w, z = check_groups(scores, rewards, min_group_size=3)
    if z.ndim != 2:
        raise ParameterError("rewards", f"`rewards` must have shape (P, G) (prompts x group); got {z.shape}")
    p = z.shape[0]
    if p < 2:
        raise ParameterError("num_prompts", f"`num_prompts` (P, the first axis) must be >= 2; got {p}")
    nb = check_integer("num_bootstrap", num_bootstrap, low=0)
    level = check_real("confidence", confidence, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    st = _per_prompt_statistics(w, z)
    if np.all(z == z[:, :1]):
        # every group at zero spread: each estimate is exactly 0 (the formulas would leave rounding
        # residue such as c2 = -1e-17, which fails the c2 >= 0 check); G* is then undefined (inf)
        import warnings

        warnings.warn(f"every group has zero reward spread (all {p} groups): the samples carry no gradient "
                      "signal; c1 = c2 = c3 = 0 and G* is undefined", RuntimeWarning, stacklevel=2)
        st = {k: np.zeros_like(v) for k, v in st.items()}
    loo = st["loo"]
    diag = (loo**2).sum(axis=-1)
    # ||sum_x c_x U_x||^2 for a batch of resampling weights c: through the P x P Gram matrix when
    # there are fewer prompts than parameters (cost independent of D), else directly.
    gram = loo @ loo.T if p <= loo.shape[-1] else None

    def weighted_sq_norm(counts: np.ndarray) -> np.ndarray:
        if gram is not None:
            return np.einsum("rp,pq,rq->r", counts, gram, counts)
        return ((counts @ loo) ** 2).sum(axis=-1)

    def constants(counts: np.ndarray) -> tuple[np.ndarray, ...]:
        # counts: (R, P) multiplicities of each prompt; rows sum to P. The cross term averages
        # U_x . U_y over pairs of *different* original prompts only (a prompt drawn twice is not
        # independent of itself), so the resampled estimate stays unbiased.
        mean_sq = counts @ st["grad_sq"] / p
        ties = (counts**2).sum(axis=-1)
        cross = (weighted_sq_norm(counts) - counts**2 @ diag) / np.maximum(p * p - ties, 1.0)
        return mean_sq - cross, counts @ st["oracle_trace"] / p, counts @ st["degenerate"] / p, cross

    c1, c2, c3, cross = (float(v[0]) for v in constants(np.ones((1, p))))
    intervals = {}
    if nb > 0:
        rng = np.random.default_rng(seed)
        draws = [constants(rng.multinomial(p, np.full(p, 1.0 / p), size=min(256, nb - i)).astype(float))
                 for i in range(0, nb, 256)]
        b1, b2, b3, _ = (np.concatenate(parts) for parts in zip(*draws))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(b1 > 0, b3 / np.where(b1 > 0, b1, 1.0), np.inf)
        root = np.sqrt(ratio)
        lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
        for name, arr in (("c1", b1), ("c2", b2), ("c3", b3), ("g_star", root), ("g_star_exact", 1.0 + root)):
            # inverted-CDF quantiles: no interpolation between an infinite and a finite G*
            intervals[name] = tuple(float(np.percentile(arr, q, method="inverted_cdf")) for q in (lo_q, hi_q))
    return GroupSizeConstants(
        c1=c1, c2=c2, c3=c3, grad_sq=max(cross, 0.0), intervals=intervals,
        confidence=level if nb > 0 else None, num_prompts=p, group_size=int(z.shape[1]),
    )


def sample_pool_groups(pool: PromptPool, num_prompts: int, group_size: int, rng: np.random.Generator, *, theta=None):
    """Draw prompts uniformly from the pool and a group of completions for each.

    Parameters
    ----------
    pool : PromptPool
    num_prompts : int, >= 1
        P prompts (drawn with replacement).
    group_size : int, >= 1
        G completions per prompt.
    rng : numpy.random.Generator
    theta : array_like, shape (A,), optional
        Shared logits (default 0).

    Returns
    -------
    scores : ndarray, shape (P, G, A)
        W = e_a - pi_x.
    rewards : ndarray, shape (P, G)
    prompts : ndarray of int, shape (P,)
        Pool indices of the drawn prompts.

    Raises
    ------
    ParameterError
        Invalid sizes or ``theta``.

    Examples
    --------
    >>> w, z, x = sample_pool_groups(beta_difficulty_pool(16, 4), 5, 3, np.random.default_rng(0))
    >>> w.shape, z.shape, x.shape
    ((5, 3, 4), (5, 3), (5,))
    """
    p = check_integer("num_prompts", num_prompts, low=1)
    g = check_integer("group_size", group_size, low=1)
    probs = pool.probs(theta)
    x = rng.integers(pool.num_prompts, size=p)
    arms = sample_categorical(probs[x], g, rng)
    z = _draw_rewards(pool, x, arms, rng)
    return score(arms, probs[x]), z, x


def minibatch_mse_monte_carlo(
    pool: PromptPool,
    group_size: int,
    num_prompts: int,
    num_batches: int,
    *,
    estimator: str = "leave_one_out",
    seed: int = 0,
    theta=None,
    chunk_groups: int = 200_000,
) -> tuple[float, float]:
    """Monte Carlo MSE of the minibatch gradient E||g_hat - grad J||^2, with its standard error.

    Each batch draws B prompts uniformly from the pool and G completions per prompt and averages
    the B per-prompt estimates (:func:`grpo_core.groupsize.ustat.group_gradient`); the target is the exact
    full gradient grad J = E_x g(x). For checking :func:`minibatch_mse` / :func:`pool_constants`.

    Parameters
    ----------
    pool : PromptPool
    group_size : int, >= 2
        G.
    num_prompts : int, >= 1
        B.
    num_batches : int, >= 2
        Independent minibatches.
    estimator : {"leave_one_out", "mean"}
    seed : int
    theta : array_like, shape (A,), optional
        Shared logits (default 0).
    chunk_groups : int
        Groups per vectorised chunk (bounds memory at about 3 * chunk_groups * G * A floats).

    Returns
    -------
    (mse, standard_error) : tuple of float

    Raises
    ------
    ParameterError
        Invalid sizes or estimator.

    Examples
    --------
    >>> pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.15)
    >>> mse, se = minibatch_mse_monte_carlo(pool, 4, 8, 4000)
    >>> bool(abs(mse - float(pool_constants(pool).mse(4, num_prompts=8))) < 4 * se)
    True
    """
    g = check_integer("group_size", group_size, low=2)
    b = check_integer("num_prompts", num_prompts, low=1)
    reps = check_integer("num_batches", num_batches, low=2)
    check_choice("estimator", estimator, ("leave_one_out", "mean"))
    chunk = max(1, check_integer("chunk_groups", chunk_groups, low=1) // b)
    th = None if theta is None else _check_theta(theta, pool.num_arms)
    t = bandit_traces(pool.probs(th), pool.rewards, bernoulli=pool.bernoulli)
    target = t.gradient.mean(axis=0)
    rng = np.random.default_rng(seed)
    sq = []
    for start in range(0, reps, chunk):
        k = min(chunk, reps - start)
        w, z, _ = sample_pool_groups(pool, k * b, g, rng, theta=th)
        est = group_gradient(w, z, estimator=estimator).reshape(k, b, -1).mean(axis=1)
        sq.append(((est - target) ** 2).sum(axis=-1))
    e = np.concatenate(sq)
    return float(e.mean()), float(e.std(ddof=1) / np.sqrt(reps))


def _draw_rewards(pool: PromptPool, prompts: np.ndarray, arms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r = np.take_along_axis(pool.rewards[prompts], arms, axis=-1)
    if pool.bernoulli:
        r = (rng.random(r.shape) < r).astype(float)
    return r


# --------------------------------------------------------------------------------------------
# The fixed-budget training study
# --------------------------------------------------------------------------------------------


def train_fixed_budget(
    pool: PromptPool,
    budget: int,
    group_sizes,
    *,
    num_seeds: int = 8,
    num_steps: int = 200,
    learning_rate: float = 1.0,
    optimizer: str = "sgd",
    adam_betas: tuple[float, float] = (0.9, 0.999),
    checkpoints=None,
    baseline: str = "leave_one_out",
    scale: str = "none",
    eps: float = DEFAULT_STD_EPS,
    seed: int = 0,
    record_theta: bool = False,
    progress: bool = False,
) -> pd.DataFrame:
    """Train the contextual bandit with GRPO at a fixed rollout budget, for several G and seeds.

    Each step: for every seed, draw B = N/G prompts uniformly from the pool, G arms per prompt
    from pi_x = softmax(theta + offsets[x]), rewards, group advantages
    (:func:`grpo_core.grpo.group_advantages`), the gradient estimate

        g_hat = (1/(B G)) sum_{b, i} A_{b,i} (e_{a_{b,i}} - pi_{x_b}),

    and one ascent step: plain SGD ``theta += learning_rate * g_hat``, or Adam (bias-corrected,
    epsilon 1e-8), whose per-coordinate normalisation makes progress depend on the gradient's
    signal-to-noise ratio, as in LLM training.

    On-policy (importance ratio 1, so the clipped surrogate's gradient is this one), no KL: the
    setting of the U-statistic analysis. The reward recorded is the exact objective
    J(theta) = E_x p_x(theta) (no evaluation noise).

    Parameters
    ----------
    pool : PromptPool
        The prompt distribution.
    budget : int
        N, rollouts per step (every G must divide it: see :func:`num_prompts_for_budget`).
    group_sizes : sequence of int, each in [2, N]
        The G values compared.
    num_seeds : int, >= 1
        Independent runs per G (vectorised).
    num_steps : int, >= 1
        Optimizer steps.
    learning_rate : float, > 0
        Step size eta (per optimizer step).
    optimizer : {"sgd", "adam"}
        Update rule.
    adam_betas : (float, float), each in [0, 1)
        Adam's beta1 (momentum, EMA convention) and beta2.
    checkpoints : sequence of int, optional
        Steps at which J is recorded (0 = before training; default: 0, 10 %, ..., 100 % of
        ``num_steps``).
    baseline : {"leave_one_out", "mean", "none"}
        Group baseline (see :func:`grpo_core.grpo.group_advantages`).
    scale : {"none", "group_std"}
        Optional std scaling of the advantages.
    eps : float, > 0
        Std epsilon.
    seed : int
        Seed; G value k uses the stream ``(seed, k)``, so adding a G leaves the others unchanged.
    record_theta : bool
        Also record the logits at each checkpoint (columns ``theta_0`` .. ``theta_{A-1}``), e.g.
        to recompute the constants along training with :func:`pool_constants`.
    progress : bool
        Show a tqdm bar over the group sizes.

    Returns
    -------
    pandas.DataFrame
        Columns ``budget``, ``group_size``, ``num_prompts``, ``seed``, ``step``, ``reward``
        (and the logits when ``record_theta``); one row per (G, seed, checkpoint).

    Raises
    ------
    ParameterError
        Indivisible budget, G outside [2, N], other arguments outside their ranges.

    Notes
    -----
    Runs are vectorised over seeds; the group sizes run one after the other because their
    arrays have different shapes (B x G with B = N/G).

    Examples
    --------
    >>> pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.1)
    >>> df = train_fixed_budget(pool, 16, [2, 4], num_seeds=2, num_steps=5, checkpoints=[0, 5])
    >>> df.groupby(["group_size", "step"]).size().tolist()
    [2, 2, 2, 2]
    """
    if not isinstance(pool, PromptPool):
        raise ParameterError("pool", f"`pool` must be a PromptPool; got {type(pool).__name__}")
    n = check_integer("budget", budget, low=2)
    sizes = [check_integer("group_sizes", g, low=2, high=n) for g in np.atleast_1d(group_sizes)]
    prompts = [num_prompts_for_budget(n, g) for g in sizes]
    s = check_integer("num_seeds", num_seeds, low=1)
    t_max = check_integer("num_steps", num_steps, low=1)
    lr = check_real("learning_rate", learning_rate, low=0.0, low_inclusive=False)
    check_choice("baseline", baseline, ("leave_one_out", "mean", "none"))
    check_choice("scale", scale, ("none", "group_std"))
    check_choice("optimizer", optimizer, ("sgd", "adam"))
    beta1 = check_real("adam_betas", adam_betas[0], low=0.0, high=1.0, high_inclusive=False)
    beta2 = check_real("adam_betas", adam_betas[1], low=0.0, high=1.0, high_inclusive=False)
    if checkpoints is None:
        marks = sorted({int(round(t_max * f)) for f in np.linspace(0, 1, 11)})
    else:
        marks = sorted({check_integer("checkpoints", c, low=0, high=t_max) for c in np.atleast_1d(checkpoints)})
    iterator = list(zip(range(len(sizes)), sizes, prompts))
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc=f"N={n}", leave=False)
    rows = []
    a_count = pool.num_arms
    for k, g, b in iterator:
        rng = np.random.default_rng([seed, k])
        theta = np.zeros((s, a_count))
        m1, m2 = np.zeros_like(theta), np.zeros_like(theta)
        curve = {}
        for step in range(t_max + 1):
            if step in marks:
                curve[step] = (pool.expected_reward(theta), theta.copy())
            if step == t_max:
                break
            x = rng.integers(pool.num_prompts, size=(s, b))
            probs = softmax(theta[:, None, :] + pool.offsets[x])  # (S, B, A)
            arms = sample_categorical(probs, g, rng)  # (S, B, G)
            z = _draw_rewards(pool, x, arms, rng)
            adv = group_advantages(z, baseline=baseline, scale=scale, eps=eps)
            weighted = arm_counts(arms, a_count, weights=adv)  # sum_i A_i e_{a_i}
            grad = (weighted - adv.sum(axis=-1, keepdims=True) * probs).sum(axis=1) / (b * g)
            if optimizer == "sgd":
                theta = theta + lr * grad
            else:
                m1 = beta1 * m1 + (1 - beta1) * grad
                m2 = beta2 * m2 + (1 - beta2) * grad**2
                m_hat, v_hat = m1 / (1 - beta1 ** (step + 1)), m2 / (1 - beta2 ** (step + 1))
                theta = theta + lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        for step, (values, thetas) in curve.items():
            for i, v in enumerate(values):
                row = {"budget": n, "group_size": g, "num_prompts": b, "seed": i, "step": step, "reward": float(v)}
                if record_theta:
                    row.update({f"theta_{j}": float(t) for j, t in enumerate(thetas[i])})
                rows.append(row)
    return pd.DataFrame(rows)


def summarise_study(study: pd.DataFrame) -> pd.DataFrame:
    """Mean reward and its standard error per (budget, step, group size), with the best G marked.

    Parameters
    ----------
    study : pandas.DataFrame
        Output of :func:`train_fixed_budget` (several budgets may be concatenated).

    Returns
    -------
    pandas.DataFrame
        Columns ``budget``, ``step``, ``group_size``, ``reward``, ``reward_se``, ``best`` (the G
        with the highest mean reward at that budget and step), ``within_se`` (G whose mean is
        within two standard errors of the best: statistically indistinguishable from it).

    Raises
    ------
    ParameterError
        Missing columns.

    Examples
    --------
    >>> df = pd.DataFrame({"budget": 8, "group_size": [2, 2, 4, 4], "seed": [0, 1, 0, 1],
    ...                    "step": 1, "reward": [0.5, 0.6, 0.7, 0.8]})
    >>> summarise_study(df)[["group_size", "best"]].values.tolist()
    [[2, False], [4, True]]
    """
    need = {"budget", "group_size", "seed", "step", "reward"}
    missing = need - set(study.columns)
    if missing:
        raise ParameterError("study", f"`study` lacks column(s) {sorted(missing)}")
    grouped = study.groupby(["budget", "step", "group_size"])["reward"]
    out = grouped.agg(reward="mean", sd="std", n="count").reset_index()
    out["reward_se"] = (out["sd"] / np.sqrt(out["n"])).fillna(0.0)
    out = out.drop(columns=["sd", "n"])
    best_idx = out.groupby(["budget", "step"])["reward"].idxmax()
    out["best"] = False
    out.loc[best_idx, "best"] = True
    top = out.loc[best_idx, ["budget", "step", "reward", "reward_se"]]
    joined = out.merge(top, on=["budget", "step"], how="left", suffixes=("", "_top"))
    gap = joined["reward_top"] - joined["reward"]
    out["within_se"] = gap <= 2.0 * np.hypot(joined["reward_se"], joined["reward_se_top"])
    return out


def study_path(study: pd.DataFrame, pool: PromptPool, *, reference_group_size: int) -> pd.DataFrame:
    """Predicted G* along training against the study's empirically best G, per budget and checkpoint.

    The constants change as the policy learns. At each checkpoint the exact constants are
    computed at every seed's logits of the ``reference_group_size`` run and averaged over seeds
    (the constants are expectations, so they average); G* = 1 + sqrt(c3/c1) follows.

    Parameters
    ----------
    study : pandas.DataFrame
        :func:`train_fixed_budget` output with ``record_theta=True`` (several budgets may be
        concatenated).
    pool : PromptPool
        The pool the study trained on.
    reference_group_size : int
        Which run's policies to take the constants from (runs at different G learn at slightly
        different speeds).

    Returns
    -------
    pandas.DataFrame
        Columns ``budget``, ``step``, ``c1``, ``c2``, ``c3``, ``g_star`` (exact), ``best_g`` (highest
        mean reward), ``tied_low`` and ``tied_high`` (smallest and largest G within two standard
        errors of the best, see :func:`summarise_study`).

    Raises
    ------
    ParameterError
        No logits recorded, or no run at ``reference_group_size``.

    Examples
    --------
    >>> pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.1)
    >>> st = train_fixed_budget(pool, 16, [2, 4], num_seeds=2, num_steps=4, checkpoints=[0, 4],
    ...                         record_theta=True)
    >>> study_path(st, pool, reference_group_size=4)[["step", "best_g"]].shape
    (2, 2)
    """
    cols = [f"theta_{j}" for j in range(pool.num_arms)]
    if any(c not in study.columns for c in cols):
        raise ParameterError("study", "`study` has no logits: run train_fixed_budget(..., record_theta=True)")
    ref = check_integer("reference_group_size", reference_group_size, low=2)
    runs = study[study.group_size == ref]
    if runs.empty:
        raise ParameterError("reference_group_size", f"`reference_group_size` = {ref} is not in the study")
    summary = summarise_study(study)
    rows = []
    for (n, step), part in runs.groupby(["budget", "step"]):
        ks = [pool_constants(pool, th) for th in part[cols].to_numpy()]
        c1, c2, c3 = (float(np.mean([getattr(k, a) for k in ks])) for a in ("c1", "c2", "c3"))
        here = summary[(summary.budget == n) & (summary.step == step)]
        tied = here[here.within_se].group_size
        rows.append({
            "budget": int(n), "step": int(step), "c1": c1, "c2": c2, "c3": c3,
            "g_star": optimal_group_size(c1, c3),
            "best_g": int(here.loc[here.reward.idxmax(), "group_size"]),
            "tied_low": int(tied.min()), "tied_high": int(tied.max()),
        })
    return pd.DataFrame(rows)
