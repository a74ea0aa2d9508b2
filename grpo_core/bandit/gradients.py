"""The bandit's gradient algebra: advantage tables, exact and sampled GRPO ascent directions.

Rewards are binary, so a group's advantages depend only on a sample's own reward and the count of
rewarded samples in its group (:func:`advantage_coefficients`). :class:`_Algebra` holds the pieces
of one spec; :func:`expected_gradient` (the exact mean field), :func:`sample_gradient` (one step's
estimator) and :func:`gradient_covariance` evaluate them at given policies. The mean field and the
sampler share every line that is not sampling (see :mod:`grpo_core.bandit`, "Exact expectations").
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import gammaln, xlog1py, xlogy

from ..errors import ParameterError
from ..grpo import clipped_surrogate, group_advantages
from ..softmax import log_softmax
from ..validation import check_array, check_integer, check_memory, check_real, check_seed
from .spec import BanditSpec, check_spec

__all__ = ["advantage_coefficients", "expected_gradient", "sample_gradient", "gradient_covariance"]


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
    check_spec(spec)
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

    def estimator_gradient(self, w_plus, w_minus, logp_t, pi_t, logp_b, pi_b):
        """Reward gradient of the spec's estimator from the advantage masses ``w_+``, ``w_-``.

        Returns ``(g, logp_e, pi_e, clipped)``: the score estimator evaluates at the behaviour
        policy (``clipped`` None); the surrogate at the current one, with its clip masks.
        """
        if self.spec.estimator == "score":
            return self.reward_gradient(w_plus, w_minus, None, None, pi_b), logp_b, pi_b, None
        fp, fm, clipped = self.clip_factors(logp_t, logp_b)
        return self.reward_gradient(w_plus, w_minus, fp, fm, pi_t), logp_t, pi_t, clipped

    def reward_gradient(self, w_plus, w_minus, f_plus, f_minus, pi_e) -> np.ndarray:
        """``sum_a (w_+ f_+ + w_- f_-)_a (e_a - pi_e)``; the w's are per-arm advantage masses."""
        weff = w_plus if f_plus is None else w_plus * f_plus
        weff = weff + (w_minus if f_minus is None else w_minus * f_minus)
        return weff - pi_e * (weff @ self.ones)[..., None]


def _check_logits(name: str, value, num_arms: int, ndim: int | None = None) -> np.ndarray:
    arr = check_array(name, value)
    if arr.ndim == 0 or arr.shape[-1] != num_arms or (ndim is not None and arr.ndim != ndim):
        raise ParameterError(name, f"`{name}` must have shape (..., {num_arms}) (one logit per arm); got {arr.shape}")
    return arr


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
    check_spec(spec)
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
    q = alg.q
    p_b = pi_b @ q
    ap, am = alg.alphas(p_b)
    w_plus = ap[..., None] * pi_b * q
    w_minus = am[..., None] * pi_b * (1.0 - q)
    g, logp_e, pi_e, clipped = alg.estimator_gradient(w_plus, w_minus, logp_t, pi_t, logp_b, pi_b)
    clip_frac = None
    if clipped is not None:
        # Expected fraction of samples whose ratio is clipped (advantage signs: rewarded +, else -).
        clip_frac = np.sum(
            pi_b * (q * clipped[0] * (ap[..., None] > 0) + (1 - q) * clipped[1] * (am[..., None] < 0)), -1
        )
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
    cum = np.concatenate(
        [np.zeros((*lead, 1), dtype=below.dtype), below, np.full((*lead, 1), g, dtype=below.dtype)], -1
    )
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
    g, logp_e, pi_e, clipped = alg.estimator_gradient(w_plus, w_minus, logp_t, pi_t, logp_b, pi_b)
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
    check_spec(spec)
    if spec.group_size_is_infinite:
        raise ParameterError("group_size", "`group_size` must be finite to sample gradients")
    alg = _Algebra(spec)
    th = _check_logits("theta", theta, alg.num_arms, ndim=1)
    thb = th if theta_behaviour is None else _check_logits("theta_behaviour", theta_behaviour, alg.num_arms, ndim=1)
    b = check_real("beta", beta, low=0.0)
    n = check_integer("num_draws", num_draws, low=1)
    check_memory("num_draws", n, 8 * 4 * spec.num_prompts * int(spec.group_size) * alg.num_arms,
                 what=f"a draw's {spec.num_prompts} x {int(spec.group_size)} samples x {alg.num_arms} arms x 4 arrays")
    rng = np.random.default_rng(check_seed("seed", seed))
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
    check_spec(spec)
    if spec.group_size_is_infinite:
        raise ParameterError("group_size", "`group_size` must be finite for the gradient covariance")
    if spec.kl_estimator != "exact":
        raise ParameterError(
            "kl_estimator", "`kl_estimator` must be 'exact' for the exact covariance (k3 adds sampled noise)"
        )
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
