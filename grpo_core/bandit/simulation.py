"""The bandit simulator: GRPO with momentum and a lagged behaviour policy, as one array program.

:func:`simulate` runs a batch of (configurations x seeds) step by step; the lagged behaviour policy
is a :class:`_LagBuffer`, what is kept a :class:`_Recorder`, the random numbers one
:class:`_UniformStreams` per seed. The result is a :class:`BanditRun`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..model.hyperparameters import (
    check_beta,
    check_eta,
    check_k_ref,
    check_mu,
)
from ..validation import check_array, check_choice, check_flag, check_integer, check_real
from .gradients import _Algebra, _check_logits, _mean_field_gradient, _policies, _stochastic_gradient
from .optimizers import OPTIMIZERS, Adam, MomentumSGD, check_adam_betas, check_lr_schedule
from .spec import BanditSpec, check_spec

__all__ = ["PROGRESS_THRESHOLD", "MAX_MEMORY_BYTES", "MAX_SEEDS", "BanditRun", "simulate"]


#: Work (configurations x seeds x groups x group size x steps) above which a progress bar is shown.
PROGRESS_THRESHOLD = 2e8
#: Bytes of uniforms drawn per block of steps (per-seed streams are drawn in blocks).
_BLOCK_BYTES = 1 << 24
#: Memory a :func:`simulate` call may plan for (recorded trajectories, state, per-step samples);
#: a larger request is refused up front instead of failing in numpy or swapping.
MAX_MEMORY_BYTES = 4 << 30
#: Most seeds in one :func:`simulate` call (each has its own random generator).
MAX_SEEDS = 1_000_000


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
    optimizer_state : dict of str to ndarray
        With ``optimizer="adam"``: ``exp_avg_sq``, the bias-corrected second moment ``v_hat`` after the
        last step, shape (C, S, A); empty for SGD.
    overflow_step : ndarray of int, shape (C, S), or None
        The step at which a run's logits left the float range (``|theta| > 1.8e308``: it diverged), 0
        for a run that did not; from that step on its ``p`` and metrics are NaN and its ``theta`` is NaN.
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
    optimizer_state: dict = field(default_factory=dict)
    overflow_step: np.ndarray | None = None

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
                  metrics: bool, num_prompts: int = 1) -> None:
    """Refuse a run whose arrays would exceed :data:`MAX_MEMORY_BYTES` (8-byte floats), naming the
    parameter that makes them large: the samples of one step (``num_prompts`` x ``group_size``, held
    three times over per arm) or the recorded steps and seeds."""
    n_rec = n_steps // every + 2
    runs = n_conf * n_seeds
    fixed = n_rec * (8 if metrics else 1) + arms * (depth + 8)
    samples = 3 * per_step * arms
    need = 8 * runs * (fixed + samples)
    if need > MAX_MEMORY_BYTES and samples > fixed:
        gib, limit = need / 2**30, MAX_MEMORY_BYTES / 2**30
        group = per_step // num_prompts
        most = (MAX_MEMORY_BYTES // (8 * runs) - fixed) // (3 * group * arms)
        fits = (f"`num_prompts` must be at most {most:,} here" if most >= 1 else
                "lower `seeds` or `group_size` (not even one prompt per step fits)")
        raise ParameterError(
            "num_prompts", f"`num_prompts` ({_count(num_prompts)}) x `group_size` ({group}) samples per step x "
            f"`seeds` ({n_seeds}) x configurations ({n_conf}) need about {gib:.3g} GiB (limit {limit:g} GiB): {fits}")
    if need > MAX_MEMORY_BYTES:
        gib, limit = need / 2**30, MAX_MEMORY_BYTES / 2**30
        raise ParameterError(
            "steps", f"`steps` ({n_steps}) x `seeds` ({n_seeds}) x configurations ({n_conf}) needs about {gib:.3g} GiB "
            f"(limit {limit:g} GiB): lower `steps` or `seeds`, or record every n-th step "
            "(`record_every` of grpo_core.bandit.simulate)")


def _count(n: int) -> str:
    """A count for a message: its digits, or ``1e+308`` for one too long to read."""
    return f"{n:,}" if n < 10 ** 15 else f"{float(n):.3g}"


def _configs(eta: Any, mu: Any, k_ref: Any, beta: Any) -> tuple[np.ndarray, ...]:
    """The per-configuration hyperparameters, validated and broadcast to one length C."""
    checked = [_per_config(n, v) for n, v in (("eta", eta), ("mu", mu), ("k_ref", k_ref), ("beta", beta))]
    try:
        return tuple(np.broadcast_arrays(*checked))
    except ValueError:
        raise ParameterError(
            "eta", "`eta`, `mu`, `k_ref` and `beta` must be scalars or sequences of one common length; got lengths "
            f"{np.size(eta)}, {np.size(mu)}, {np.size(k_ref)}, {np.size(beta)}"
        ) from None


def _run_seeds(spec: BanditSpec, seeds: Any, mean_field: Any) -> np.ndarray:
    """Seed values of a run: a single ``-1`` in mean field (deterministic)."""
    if not isinstance(mean_field, bool | np.bool_):
        raise ParameterError("mean_field", f"`mean_field` must be True or False; got {mean_field!r}")
    if mean_field:
        return np.array([-1], dtype=np.int64)
    if spec.group_size_is_infinite:
        raise ParameterError("group_size", "`group_size` must be finite in a stochastic run (inf is mean field only)")
    return _seed_values(seeds)


def _initial_logits(spec: BanditSpec, theta0: Any, n_conf: int, a: int) -> np.ndarray:
    """Initial logits per configuration, shape (C, A)."""
    if theta0 is None:
        return np.broadcast_to(np.asarray(spec.init_logits), (n_conf, a))
    th0 = _check_logits("theta0", theta0, a)
    if th0.ndim > 2 or (th0.ndim == 2 and th0.shape[0] not in (1, n_conf)):
        raise ParameterError("theta0", f"`theta0` must have shape ({a},) or ({n_conf}, {a}); got {th0.shape}")
    return np.broadcast_to(th0.reshape(-1, a), (n_conf, a))


def _progress_bar(n_steps: int, show: bool):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=n_steps, desc="bandit", unit="step", file=sys.stderr, leave=False)


class _LagBuffer:
    """The behaviour policy's log-probabilities at every step, for the spec's lag model.

    ``"constant"``: a ring buffer of the last ``max(k_ref) + 1`` policies, read ``k_ref`` steps back
    (per configuration); ``"refresh"``: a snapshot replaced at every multiple of ``k_ref``.
    """

    def __init__(self, lag: str, k_ref: np.ndarray, logp0: np.ndarray):
        self.k = k_ref
        self.constant = lag == "constant"
        if self.constant:
            self.depth = int(k_ref.max()) + 1
            self.hist = np.broadcast_to(logp0, (self.depth, *logp0.shape)).copy()
            self.conf_idx = np.arange(k_ref.size)
            self.same_lag = bool(np.all(k_ref == k_ref[0]))
        else:
            self.logp_b = logp0.copy()

    def behaviour(self, t: int, logp_t: np.ndarray) -> np.ndarray:
        """Store the current policy (step ``t``) and return the behaviour policy of step ``t``."""
        if self.constant:
            self.hist[t % self.depth] = logp_t
            if self.same_lag:
                return self.hist[(t - int(self.k[0])) % self.depth]
            return self.hist[(t - self.k) % self.depth, self.conf_idx]
        refresh = (t % self.k) == 0
        if np.all(refresh):
            self.logp_b = logp_t
        elif np.any(refresh):
            self.logp_b = np.where(refresh[:, None, None], logp_t, self.logp_b)
        return self.logp_b


#: Names of the TRL-style metrics a run records with ``metrics=True`` (see :class:`BanditRun`).
METRICS = ("reward", "reward_std", "frac_reward_zero_std", "kl", "entropy", "grad_norm", "clip_ratio")


class _Recorder:
    """What a run keeps: ``p`` (and with ``metrics``, the TRL-style logs) every ``every`` steps and at the end."""

    def __init__(self, alg: _Algebra, n_conf: int, n_seeds: int, n_steps: int, every: int, metrics: bool,
                 logp0: np.ndarray, pi0: np.ndarray):
        self.alg = alg
        self.steps = np.unique(np.r_[np.arange(0, n_steps + 1, every), n_steps])
        self.n = self.steps.size
        self.p = np.empty((n_conf, n_seeds, self.n))
        self.with_metrics = metrics
        self.metrics = {k: np.full((n_conf, n_seeds, self.n), np.nan) for k in METRICS} if metrics else {}
        self.pos = 0
        self._policy_state(logp0, pi0)
        self.pos = 1

    def due(self, t: int) -> bool:
        """Whether the state after step ``t`` (0-based) is recorded."""
        return (t + 1) == self.steps[min(self.pos, self.n - 1)]

    def wants_metrics(self, t: int) -> bool:
        return self.with_metrics and self.due(t)

    def _policy_state(self, logp: np.ndarray, pi: np.ndarray) -> None:
        """``p`` and, with metrics, the exact KL to the reference and the entropy (nats)."""
        self.p[:, :, self.pos] = pi @ self.alg.q
        if self.with_metrics:
            self.metrics["kl"][:, :, self.pos] = np.sum(pi * (logp - self.alg.log_ref), -1)
            self.metrics["entropy"][:, :, self.pos] = -np.sum(pi * logp, -1)

    def record(self, t: int, logp: np.ndarray, pi: np.ndarray, g: np.ndarray, step_m: dict | None) -> None:
        """Record the state after step ``t`` if due: the policy, the step's sampled metrics, ``|g|``."""
        if not self.due(t):
            return
        if self.with_metrics:
            for key, val in step_m.items():
                self.metrics[key][:, :, self.pos] = val
            self.metrics["grad_norm"][:, :, self.pos] = np.sqrt(np.sum(g * g, -1))
        self._policy_state(logp, pi)
        self.pos += 1


def _mean_field_metrics(alg: _Algebra, pi_b: np.ndarray, clip_frac: np.ndarray | None) -> dict:
    """The expectations of the sampled metrics at the behaviour policy (mean-field runs)."""
    pb = pi_b @ alg.q
    g = alg.spec.group_size
    return {"reward": pb, "reward_std": np.sqrt(pb * (1 - pb)),
            "frac_reward_zero_std": pb**g + (1 - pb) ** g if not alg.infinite else np.zeros_like(pb),
            "clip_ratio": clip_frac if clip_frac is not None else np.zeros_like(pb)}


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
    optimizer: str = "sgd",
    adam_betas: Any = (0.9, 0.999),
    adam_eps: float = 1e-8,
    lr_schedule: Any = None,
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
    optimizer : {"sgd", "adam"}
        ``"sgd"``: the momentum update above. ``"adam"``: PyTorch's Adam for ascent
        (:class:`grpo_core.bandit.optimizers.Adam`); its momentum is ``adam_betas[0]``, so ``mu`` must be 0.
    adam_betas : (float, float), each in [0, 1)
        Adam's ``(beta1, beta2)`` (TRL / PyTorch default (0.9, 0.999)).
    adam_eps : float > 0
        Adam's epsilon, added to ``sqrt(v_hat)`` (PyTorch default 1e-8).
    lr_schedule : array_like, shape (steps,), optional
        Per-step multiplier of ``eta`` (warm-up, decay), each > 0; default constant 1.

    Returns
    -------
    BanditRun
        ``p`` of shape (C, S, T') (S = 1 in mean field). A run whose logits overflow float64 (a
        divergent one at a huge ``eta``) is NaN from that step on and its step is in
        :attr:`BanditRun.overflow_step`; the other runs of the batch are unaffected.

    Raises
    ------
    ParameterError
        A parameter outside its range (``eta`` <= 0, ``mu`` outside [0, 1), ``k_ref`` < 1,
        ``beta`` < 0, ``steps`` < 1, ``seeds`` < 1 or above :data:`MAX_SEEDS`), lengths that do not
        broadcast, an infinite ``group_size`` in a stochastic run, or a run whose arrays would need
        more than :data:`MAX_MEMORY_BYTES` (4 GiB); an unknown ``optimizer``, ``mu`` != 0 with Adam,
        bad ``adam_betas`` / ``adam_eps`` / ``lr_schedule``.

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
    check_spec(spec)
    alg = _Algebra(spec)
    eta_c, mu_c, k_c, beta_c = _configs(eta, mu, k_ref, beta)
    n_conf = eta_c.size
    n_steps = check_integer("steps", steps, low=1)
    every = check_integer("record_every", record_every, low=1)
    metrics = check_flag("metrics", metrics)
    progress = None if progress is None else check_flag("progress", progress)
    seed_vals = _run_seeds(spec, seeds, mean_field)
    n_seeds, a = seed_vals.size, alg.num_arms
    _check_memory(n_conf, n_seeds, n_steps, every, a, int(k_c.max()) if spec.lag == "constant" else 1,
                  0 if mean_field else spec.num_prompts * int(spec.group_size), metrics, spec.num_prompts)
    th0 = _initial_logits(spec, theta0, n_conf, a)
    opt = _optimizer(optimizer, adam_betas, adam_eps, mu_c, (n_conf, n_seeds, a), eta_c, spec.momentum == "ema")
    schedule = check_lr_schedule(lr_schedule, n_steps)

    theta = np.broadcast_to(th0[:, None, :], (n_conf, n_seeds, a)).copy()
    overflow_step = np.zeros((n_conf, n_seeds), dtype=np.int64)
    beta3 = beta_c[:, None, None]
    logp_t, pi_t = _policies(theta)
    lagged = _LagBuffer(spec.lag, k_c, logp_t)
    rec = _Recorder(alg, n_conf, n_seeds, n_steps, every, metrics, logp_t, pi_t)
    streams = None
    if not mean_field:
        streams = _UniformStreams(seed_vals, spec.num_prompts, int(spec.group_size), n_steps)
    work = n_conf * n_seeds * n_steps * (1 if mean_field else spec.num_prompts * spec.group_size)
    bar = _progress_bar(n_steps, (work > PROGRESS_THRESHOLD) if progress is None else bool(progress))

    for t in range(n_steps):
        logp_b = lagged.behaviour(t, logp_t)
        pi_b = np.exp(logp_b)
        want = rec.wants_metrics(t)
        if mean_field:
            g, clip_frac = _mean_field_gradient(alg, logp_t, pi_t, logp_b, pi_b, beta3)
            step_m = _mean_field_metrics(alg, pi_b, clip_frac) if want else None
        else:
            u = streams.next()
            g, step_m = _stochastic_gradient(alg, u, logp_t, pi_t, logp_b, pi_b, beta3, want_metrics=want)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught just below
            theta = theta + opt.update(g, 1.0 if schedule is None else float(schedule[t]))
            gone = ~np.isfinite(theta).all(axis=-1)
            theta[gone] = 0.0
            logp_t, pi_t = _policies(theta)
        gone |= ~np.isfinite(logp_t).all(axis=-1)
        if gone.any():
            # logits (or their spread) beyond the float range, 1.8e308: that run diverged at this step.
            # It is recorded as NaN from here on and carried on from rest at zero logits (finite
            # numbers, so that no NaN spreads into the other runs of the batch)
            overflow_step[gone & (overflow_step == 0)] = t + 1
            theta[gone] = 0.0
            opt.reset(gone)
            logp_t, pi_t = _policies(theta)
        rec.record(t, logp_t, pi_t, g, step_m)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    dead = (overflow_step > 0)[..., None] & (rec.steps >= overflow_step[..., None])
    for arr in (rec.p, *rec.metrics.values()):
        arr[dead] = np.nan
    theta[overflow_step > 0] = np.nan
    return BanditRun(spec=spec, eta=eta_c.copy(), mu=mu_c.copy(), k_ref=k_c.copy(), beta=beta_c.copy(),
                     seeds=seed_vals, mean_field=bool(mean_field), steps=rec.steps, p=rec.p, theta=theta,
                     metrics=rec.metrics, optimizer_state=opt.state(), overflow_step=overflow_step)


def _optimizer(name: Any, betas: Any, eps: Any, mu_c: np.ndarray, shape: tuple[int, ...], eta_c: np.ndarray,
               ema: bool) -> MomentumSGD | Adam:
    """The checked optimizer of a :func:`simulate` call."""
    check_choice("optimizer", name, OPTIMIZERS)
    eta3 = eta_c[:, None, None]
    if name == "sgd":
        return MomentumSGD(shape, eta3, mu_c[:, None, None], ema)
    if np.any(mu_c != 0):
        raise ParameterError("mu", "`mu` must be 0 with optimizer='adam' (its momentum is adam_betas[0])")
    return Adam(shape, eta3, check_adam_betas(betas), check_real("adam_eps", eps, low=0.0, low_inclusive=False))
