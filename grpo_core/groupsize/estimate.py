"""Unbiased estimates of the group-size constants c1, c2, c3 from P prompts x G samples.

Works on any model (:func:`estimate_constants`): per-prompt U-statistics of the completions' score
vectors and rewards, with percentile-bootstrap intervals over prompts.

References
----------
Our derivation (book chapter "Choosing the group size", section "Estimating the constants");
Hoeffding (1948) for U-statistics.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..validation import check_integer, check_real, check_seed
from .law import GroupSizeConstants
from .ustat import check_groups, group_gradient

#: The most bootstrap resamples :func:`estimate_constants` runs (a percentile end's Monte Carlo
#: error falls as 1/sqrt(resamples); 100,000 puts it far below the sampling error of any real pool).
MAX_BOOTSTRAP = 100_000


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
    num_bootstrap : int, in [0, MAX_BOOTSTRAP]
        Bootstrap resamples of the prompts (0: no intervals). At most :data:`MAX_BOOTSTRAP` (100,000):
        the Monte Carlo error of a percentile end falls as 1/sqrt(resamples), so more only adds run time.
    confidence : float in (0, 1)
        Level of the percentile intervals.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    GroupSizeConstants
        Point estimates (c1 can come out <= 0 when the between-prompt variance is too small to
        resolve; G* is then inf) and intervals for c1, c2, c3 (variances: clipped at 0 from below), G*,
        G*_exact.

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
    >>> from grpo_core.groupsize import beta_difficulty_pool, pool_constants, sample_pool_groups
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
    nb = check_integer("num_bootstrap", num_bootstrap, low=0, high=MAX_BOOTSTRAP)
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
        rng = np.random.default_rng(check_seed("seed", seed))
        draws = [constants(rng.multinomial(p, np.full(p, 1.0 / p), size=min(256, nb - i)).astype(float))
                 for i in range(0, nb, 256)]
        b1, b2, b3, _ = (np.concatenate(parts) for parts in zip(*draws))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(b1 > 0, b3 / np.where(b1 > 0, b1, 1.0), np.inf)
        root = np.sqrt(ratio)
        lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
        for name, arr in (("c1", b1), ("c2", b2), ("c3", b3), ("g_star", root), ("g_star_exact", 1.0 + root)):
            # inverted-CDF quantiles: no interpolation between an infinite and a finite G*
            lo, hi = (float(np.percentile(arr, q, method="inverted_cdf")) for q in (lo_q, hi_q))
            # c1, c2, c3 are variances: an unbiased resample can dip below 0, the quantity cannot
            intervals[name] = (max(lo, 0.0), max(hi, 0.0)) if name in ("c1", "c2", "c3") else (lo, hi)
    return GroupSizeConstants(
        c1=c1, c2=c2, c3=c3, grad_sq=max(cross, 0.0), intervals=intervals,
        confidence=level if nb > 0 else None, num_prompts=p, group_size=int(z.shape[1]),
    )
