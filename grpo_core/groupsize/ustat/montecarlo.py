"""Fast Monte Carlo of the per-group estimators on the softmax bandit (sufficient statistics).

With the softmax bandit's score ``W = e_a - pi`` every estimator depends on a group only through
its multinomial arm counts and per-arm reward sums (:func:`gradients_from_counts`), so one group of
any size costs O(A), not O(G). :func:`monte_carlo_mse` measures each estimator's MSE against G
next to its exact value; :func:`loglog_slope` reads the power of G off such a curve.

References
----------
Our measurement, book chapter "The GRPO gradient is a U-statistic".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import ParameterError
from ...grpo import DEFAULT_SPREAD_RTOL, DEFAULT_STD_EPS
from ...softmax import check_probabilities
from ...validation import check_array, check_choice, check_integer, check_names, check_real, check_seed
from .estimators import ESTIMATORS
from .moments import _check_arm_rewards, bandit_moments, std_scaled_mse


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
        Policy pi of the one prompt whose groups are drawn.
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
    names = check_names("estimators", estimators, choices=ESTIMATORS)
    need = tuple(dict.fromkeys((*names, "leave_one_out", "oracle")))
    rng = np.random.default_rng(check_seed("seed", seed))
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


def loglog_slope(x, y) -> float:
    """Least-squares slope of log(y) against log(x) (the exponent of a power law y ~ x^k).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Positive values, n >= 2.

    Returns
    -------
    float
        The exponent k (dimensionless): -1 for an MSE that falls as 1/G.

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
