"""The contextual softmax bandit (:class:`PromptPool`), whose group-size constants are exact.

Prompts share the logits theta and differ in a fixed logit offset (their difficulty), so the
between-prompt variance c1 comes from the spread of difficulties. :func:`beta_difficulty_pool`
builds a pool with a Beta distribution of initial success probabilities; :func:`pool_constants`
gives its exact c1, c2, c3 (:func:`constants_by_spread`, :func:`spread_for_optimal_group_size`
over the spread); :func:`sample_pool_groups` draws groups from it and
:func:`minibatch_mse_monte_carlo` measures the minibatch MSE that the law predicts.

References
----------
Our derivation, book chapter "Choosing the group size".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import ParameterError
from ..softmax import sample_categorical, score, softmax
from ..validation import (
    check_array,
    check_choice,
    check_flag,
    check_instance,
    check_integer,
    check_memory,
    check_real,
    check_seed,
)
from .law import GroupSizeConstants
from .ustat import bandit_traces, group_gradient


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


def check_pool(pool: Any, name: str = "pool") -> PromptPool:
    """Validate a prompt-pool argument.

    Raises
    ------
    ParameterError
        If ``pool`` is not a :class:`PromptPool`.
    """
    return check_instance(name, pool, PromptPool, "a PromptPool (beta_difficulty_pool(...) or PromptPool(...))")


#: The least non-zero difficulty spread of :func:`beta_difficulty_pool`: below it the Beta quantiles
#: (concentration ``m (1 - m) / spread^2 > 1e13``) lose their digits in float64; measured on 256
#: prompts at mean 0.3, the pool's spread is 0.25% off at 1e-7 (as at 1e-4: the quantile grid), 3%
#: off at 1e-8, and its quantiles are NaN at 1e-9.
MIN_SPREAD = 1e-7


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
    if 0.0 < s < MIN_SPREAD:
        raise ParameterError("spread", f"`spread` must be 0 or in [{MIN_SPREAD:g}, {limit:.4g}) (below "
                                       f"{MIN_SPREAD:g} the Beta quantiles of the prompts lose their digits in "
                                       f"float64); got {spread!r}")
    check_memory("num_arms", a, 8 * 4, what="4 arrays per arm")
    check_memory("num_prompts", p_count, 8 * 4 * a, what=f"{a} arms x 4 arrays per prompt")
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
        rng = np.random.default_rng(check_seed("seed", seed))
        picks = np.argsort(rng.random((p_count, a)), axis=1)[:, :k]
        np.put_along_axis(rewards, picks, 1.0, axis=1)
    offsets = np.where(rewards > 0, np.log(p / k)[:, None], np.log((1 - p) / (a - k))[:, None])
    return PromptPool(offsets=offsets, rewards=rewards)


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
        ``pool`` not a :class:`PromptPool`; ``theta`` not of shape (A,), or not finite.

    Examples
    --------
    >>> pool = beta_difficulty_pool(64, 4, mean=0.3, spread=0.1)
    >>> k = pool_constants(pool)
    >>> round(k.g_star_exact, 2)
    11.08
    """
    check_pool(pool)
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
    key = "g_star_exact" if check_flag("exact", exact) else "g_star"

    def f(log_sp: float) -> float:
        row = constants_by_spread([np.exp(log_sp)], **pool_kwargs).iloc[0]
        return float(np.log(row[key]) - np.log(target))

    lo_v, hi_v = f(np.log(1e-4)), f(np.log(hi))
    if lo_v * hi_v > 0:
        raise ParameterError("g_star", f"`g_star` = {target:g} is not reached for spreads in [1e-4, {hi:.3g}]")
    return float(np.exp(brentq(f, np.log(1e-4), np.log(hi), xtol=1e-8)))


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
    check_pool(pool)
    check_instance("rng", rng, np.random.Generator, "a numpy.random.Generator (numpy.random.default_rng(seed))")
    p = check_integer("num_prompts", num_prompts, low=1)
    g = check_integer("group_size", group_size, low=1)
    check_memory("group_size", g, 8 * 4 * pool.num_arms, what=f"a sample's {pool.num_arms} arms x 4 arrays")
    check_memory("num_prompts", p, 8 * 4 * g * pool.num_arms,
                 what=f"a group's {g} samples x {pool.num_arms} arms x 4 arrays")
    probs = pool.probs(theta)
    x = rng.integers(pool.num_prompts, size=p)
    arms = sample_categorical(probs[x], g, rng)
    z = _draw_rewards(pool, x, arms, rng)
    return score(arms, probs[x]), z, x


def _draw_rewards(pool: PromptPool, prompts: np.ndarray, arms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r = np.take_along_axis(pool.rewards[prompts], arms, axis=-1)
    if pool.bernoulli:
        r = (rng.random(r.shape) < r).astype(float)
    return r


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
    check_pool(pool)
    g = check_integer("group_size", group_size, low=2)
    b = check_integer("num_prompts", num_prompts, low=1)
    check_memory("group_size", g, 8 * 4 * pool.num_arms, what=f"a sample's {pool.num_arms} arms x 4 arrays")
    check_memory("num_prompts", b, 8 * 4 * g * pool.num_arms,
                 what=f"a group's {g} samples x {pool.num_arms} arms x 4 arrays")
    reps = check_integer("num_batches", num_batches, low=2)
    check_choice("estimator", estimator, ("leave_one_out", "mean"))
    chunk = max(1, check_integer("chunk_groups", chunk_groups, low=1) // b)
    th = None if theta is None else _check_theta(theta, pool.num_arms)
    t = bandit_traces(pool.probs(th), pool.rewards, bernoulli=pool.bernoulli)
    target = t.gradient.mean(axis=0)
    rng = np.random.default_rng(check_seed("seed", seed))
    sq = []
    for start in range(0, reps, chunk):
        k = min(chunk, reps - start)
        w, z, _ = sample_pool_groups(pool, k * b, g, rng, theta=th)
        est = group_gradient(w, z, estimator=estimator).reshape(k, b, -1).mean(axis=1)
        sq.append(((est - target) ** 2).sum(axis=-1))
    e = np.concatenate(sq)
    return float(e.mean()), float(e.std(ddof=1) / np.sqrt(reps))
