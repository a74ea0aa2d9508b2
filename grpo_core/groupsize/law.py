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

The contextual softmax bandit (:class:`grpo_core.groupsize.pool.PromptPool`) makes every
constant exact: prompts share the logits theta and differ in a fixed logit offset (their
difficulty), so between-prompt variance c1 comes from the spread of difficulties.

References
----------
"Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025),
Theorem 7 (scaling law, optimal G independent of N and of the iterations) and Table 2 / Fig. 5
(empirical G* = 32 on GSM8K with Qwen2.5-1.5B-Instruct at N = 1024, 64 on MATH with Qwen2.5-Math-7B).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_choice, check_flag, check_integer, check_real

#: Largest rollout budget N accepted: 2**53, the largest integer a float64 holds exactly.
MAX_BUDGET = 2**53


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
            The minibatch gradient's MSE (squared gradient units).

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
    grpo_core.errors.ParameterError: `budget` must be a multiple of `group_size` = 32 (B = N/G prompts per step); got
    1000 (nearest: 992 or 1024)
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


def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (the first twelve primes as bases)."""
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in bases:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _split(n: int) -> int:
    """A non-trivial factor of an odd composite ``n`` (Pollard's rho, Brent's cycle finding)."""
    c = 1
    while True:
        x = y = 2
        d = 1
        while d == 1:
            x = (x * x + c) % n
            y = (y * y + c) % n
            y = (y * y + c) % n
            d = math.gcd(abs(x - y), n)
        if d != n:
            return d
        c += 1


def _prime_factors(n: int) -> list[int]:
    """The prime factors of ``n >= 1`` with multiplicity, increasing."""
    out = []
    for p in (2, 3):
        while n % p == 0:
            out.append(p)
            n //= p
    # trial division up to the cube root: what is left then has at most two prime factors
    p = 5
    while p * p * p <= n:
        for q in (p, p + 2):
            while n % q == 0:
                out.append(q)
                n //= q
        p += 6
    if n > 1:
        if _is_prime(n):
            out.append(n)
        else:
            root = math.isqrt(n)
            a = root if root * root == n else _split(n)
            out += [a, n // a]
    return sorted(out)


def group_size_candidates(budget, *, low: int = 2, high=None) -> list[int]:
    """Every group size G in ``[low, high]`` that divides the budget N: the feasible G at that budget.

    B = N / G prompts must be a whole number (TRL likewise asks the generation batch to be
    divisible by ``num_generations``), so these are the divisors of N; a power of two is one of
    them only when N is.

    Parameters
    ----------
    budget : int, in [1, 2**53]
        N, rollouts (completions) per optimizer step.
    low : int, >= 1
        Smallest G (default 2: the leave-one-out estimator needs two completions per prompt).
    high : int, optional
        Largest G (default N: one prompt per step).

    Returns
    -------
    list of int
        Increasing; empty when no divisor of N lies in ``[low, high]``.

    Raises
    ------
    ParameterError
        ``budget`` not an integer in [1, 2**53], ``low`` < 1, ``high`` < ``low``.

    References
    ----------
    Our derivation, book chapter "Choosing the group size" (B = N/G).

    Examples
    --------
    >>> group_size_candidates(96)
    [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96]
    >>> group_size_candidates(96, high=16)
    [2, 3, 4, 6, 8, 12, 16]
    """
    n = check_integer("budget", budget, low=1, high=MAX_BUDGET)
    lo = check_integer("low", low, low=1)
    hi = n if high is None else check_integer("high", high, low=lo)
    divisors = [1]
    factors = _prime_factors(n)
    for p in sorted(set(factors)):
        powers = [p**e for e in range(1, factors.count(p) + 1)]
        divisors += [d * q for d in divisors for q in powers]
    return sorted(d for d in divisors if lo <= d <= hi)


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
    exact = check_flag("exact", exact)
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
    exact = check_flag("exact", exact)
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
        G values to consider (default: every divisor of N from 2 to N,
        :func:`group_size_candidates`). Those that do not divide N are dropped.
    exact : bool
        Use the exact or the leading-order law.

    Returns
    -------
    int
        The best G among the candidates, a divisor of ``budget``.

    Raises
    ------
    ParameterError
        No candidate divides the budget, or invalid constants.

    Examples
    --------
    >>> best_group_size(1024, 1.0, 5.0, 961.0)
    32
    >>> best_group_size(1000, 1.0, 5.0, 961.0)   # G* = 32 does not divide 1000; 40 does (B = 25)
    40
    """
    exact = check_flag("exact", exact)
    n = check_integer("budget", budget, low=2, high=MAX_BUDGET)
    if candidates is None:
        cand = group_size_candidates(n)
    else:
        cand = [check_integer("candidates", c, low=2) for c in np.atleast_1d(candidates)]
        cand = [c for c in cand if c <= n and n % c == 0]
    if not cand:
        raise ParameterError(
            "candidates", f"`candidates` must include a group size that divides `budget` = {n}; none does"
        )
    # every candidate divides N: B = N // G directly (a per-G divisibility check is slow over many divisors)
    mse = minibatch_mse(cand, c1, c2, c3, num_prompts=[n // c for c in cand], exact=exact)
    return int(cand[int(np.argmin(mse))])
