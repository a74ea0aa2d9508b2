"""A contextual softmax bandit: many prompts sharing parameters, where one restoring rate need not govern.

``P`` prompts, ``A`` arms, a shared parameter ``theta`` of dimension ``d``; the logits of prompt ``p``
are ``z_p = b_p + Phi_p theta`` with fixed features ``Phi_p`` (shape (A, d)) and a fixed prior offset
``b_p`` (shape (A,)). The reference policy is ``softmax(b_p)`` (``theta_ref = 0``), so the prior offset
sets each prompt's difficulty: with ``correct`` arm 0 and ``b_p = (o_p, 0, ..., 0)`` the initial success
rate is ``e^{o_p} / (e^{o_p} + A - 1)``. Each optimizer step draws ``spec.num_prompts`` groups of
``spec.group_size`` arms per prompt from the behaviour policy, forms GRPO advantages and ascends the
mean over prompts of the spec's estimator minus ``beta`` times the mean ``KL(pi_p || pi_ref,p)``, with
heavy-ball momentum (``v = mu v + g; theta += eta v``). The behaviour policy is a snapshot refreshed
every ``k_ref`` steps (the refresh lag of :mod:`grpo_core.bandit`): ``estimator="score"`` is the stale
score-function gradient (no importance ratio; the whole gradient, KL included, at the behaviour
policy), ``estimator="surrogate"`` the clipped surrogate with the importance ratio (at the current
policy).

Per prompt the gradient in logit space is the one of :mod:`grpo_core.bandit.gradients` (exact
expectation at finite ``G`` by enumeration over the arms and the binomial count of rewarded samples, or
the sampled estimator, from the same code); the chain rule gives ``g_theta = (1/P) sum_p Phi_p^T g_p``.

In one dimension the mean-field reduction of the oscillator model is exact (one restoring rate K). Here
the linearised update at the fixed point ``theta*`` is ``delta_{t+1} = delta_t + mu (...) + eta J
delta_{behaviour}`` with a ``d x d`` Jacobian ``J``; on policy with the mean baseline the expected
ascent direction is the gradient of ``(G-1)/G mean_p p_p - beta mean_p KL_p``, so ``J`` is that
objective's Hessian: symmetric, with ``d`` restoring rates ``K_i`` (the eigenvalues of ``-J``). For the
stale score gradient the same ``J`` acts on the lagged deviation, so the linear dynamics split into
``d`` copies of the one-dimensional recurrence with gains ``a_i = eta K_i``; with the importance ratio
and the mean baseline the expected gradient is the current one (the lag drops out until the clip
binds). What is measured here: the spectrum, the rate read off the relaxation of the mean reward
(what one fits to a reward curve), and the critical learning rate of the actual update map, to hold
against the one-dimensional prediction made from either K (book chapter "The bandit", our derivation
and measurements).

Functions: :class:`ContextualBandit` (the model, its exact and sampled ascent directions),
:func:`simulate_contextual`, :func:`contextual_fixed_point`, :func:`relaxation_curvature`,
:func:`cycle_radius`, :func:`critical_eta`, :func:`predicted_critical_eta`, :func:`ringing_period`,
:func:`predicted_period`, :func:`classify_mode`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import root
from scipy.special import log_softmax

from ..errors import ParameterError
from ..model import stability as model_stability
from ..model.hyperparameters import check_beta, check_eta, check_k_ref, check_mu
from ..validation import check_array, check_integer, check_memory, check_real, check_seed
from .gradients import _Algebra, _mean_field_gradient, _policies, _stochastic_gradient
from .spec import BanditSpec, check_spec

__all__ = [
    "MODES",
    "ContextualBandit",
    "ContextualFixedPoint",
    "ContextualRun",
    "classify_mode",
    "contextual_fixed_point",
    "critical_eta",
    "cycle_radius",
    "predicted_critical_eta",
    "predicted_period",
    "relaxation_curvature",
    "ringing_period",
    "simulate_contextual",
]

#: The two ways a stale batch is used: the stale score gradient (no ratio) and the ratio-corrected surrogate.
MODES = {"stale": "score", "ratio": "surrogate"}


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextualBandit:
    """A contextual softmax bandit: prompts with features, one shared parameter vector.

    Parameters
    ----------
    features : array_like, shape (P, A, d)
        ``Phi``: the logit of arm ``a`` on prompt ``p`` is ``b[p, a] + Phi[p, a] . theta``.
    offsets : array_like, shape (P, A)
        Prior logits ``b`` (nats); also the reference policy's logits.
    spec : BanditSpec
        Arms and rewards (``reward_probs``, shape (A,), the same for every prompt), ``group_size`` (G),
        ``num_prompts`` (here: groups per prompt per step), ``baseline``, ``scale``, ``estimator``
        (``"score"``: stale, no ratio; ``"surrogate"``: importance ratio, clip ``eps_low``/``eps_high``),
        ``kl_estimator="exact"``. Must have ``lag="refresh"`` and ``momentum="heavy_ball"`` (the
        simulator here implements those); its ``init_logits``/``ref_logits`` are not used.

    Raises
    ------
    ParameterError
        Shapes that do not match (named ``features`` or ``offsets``), non-finite entries, a spec with
        another lag, momentum or KL estimator.

    Examples
    --------
    >>> cb = ContextualBandit.random(num_prompts=8, arms=3, dim=2, seed=1)
    >>> cb.num_prompts, cb.num_arms, cb.dim
    (8, 3, 2)
    >>> cb.rewards(np.zeros(2)).round(2).tolist()[:3]
    [0.05, 0.18, 0.31]
    """

    features: np.ndarray
    offsets: np.ndarray
    spec: BanditSpec

    def __post_init__(self) -> None:
        phi = check_array("features", self.features, ndim=3)
        if phi.shape[0] < 1 or phi.shape[1] < 2 or phi.shape[2] < 1:
            raise ParameterError("features", f"`features` must have shape (P >= 1, A >= 2, d >= 1); got {phi.shape}")
        off = check_array("offsets", self.offsets, ndim=2)
        if off.shape != phi.shape[:2]:
            raise ParameterError("offsets", f"`offsets` must have shape (P, A) = {phi.shape[:2]}; got {off.shape}")
        spec = check_spec(self.spec)
        if spec.num_arms != phi.shape[1]:
            raise ParameterError("spec", f"`spec` must have {phi.shape[1]} arms (one per feature row); "
                                         f"got {spec.num_arms}")
        for field, want in (("lag", "refresh"), ("momentum", "heavy_ball"), ("kl_estimator", "exact")):
            if getattr(spec, field) != want:
                raise ParameterError(field, f"`{field}` must be {want!r} for the contextual bandit; "
                                            f"got {getattr(spec, field)!r}")
        phi = phi.copy()
        off = off.copy()
        phi.setflags(write=False)
        off.setflags(write=False)
        object.__setattr__(self, "features", phi)
        object.__setattr__(self, "offsets", off)

    @classmethod
    def random(cls, num_prompts: int = 48, arms: int = 4, dim: int = 6, *,
               success_range: tuple[float, float] = (0.05, 0.95), seed: int = 0, **spec_kwargs: Any
               ) -> ContextualBandit:
        """A random instance: bilinear features, prompts spread over a range of initial success rates.

        Feature 0 is a skill every prompt shares, ``Phi[p, a, 0] = s_p (1[a = 0] - 1/A)`` with a strength
        ``s_p ~ U(0.5, 1.5)``; the others are
        bilinear, ``Phi[p, a, k] = x_pk y_ak / sqrt(d - 1)`` with prompt features ``x_p ~ N(0, I_d)`` and
        arm features ``y_a ~ N(0, I_d)`` centred over the arms. Arm 0 is the correct one (binary
        rewards); prompt ``p``'s prior offset on it puts its initial success rate at
        ``linspace(*success_range, P)[p]``.

        Parameters
        ----------
        num_prompts, arms, dim : int
            ``P >= 1``, ``A >= 2``, ``d >= 1``.
        success_range : (float, float)
            Initial success rates of the easiest-to-hardest prompts, each in (0, 1).
        seed : int
            Seed of the features (``numpy.random.default_rng``).
        **spec_kwargs
            :class:`BanditSpec` fields (``group_size``, ``estimator``, ``baseline``, ...).

        Raises
        ------
        ParameterError
            Out-of-range sizes or rates (named), bad spec fields.
        """
        p_n = check_integer("num_prompts", num_prompts, low=1)
        a_n = check_integer("arms", arms, low=2)
        d_n = check_integer("dim", dim, low=1)
        lo, hi = (check_real("success_range", x, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
                  for x in success_range)
        rng = np.random.default_rng(check_seed("seed", seed))
        x = rng.standard_normal((p_n, d_n))
        y = rng.standard_normal((a_n, d_n))
        y = y - y.mean(axis=0)
        phi = x[:, None, :] * y[None, :, :] / math.sqrt(max(d_n - 1, 1))
        # feature 0 is a skill every prompt shares, with a prompt-dependent strength: it raises the correct
        # arm's logit on all of them, but not by the same amount (no one theta puts every prompt at its optimum)
        phi[:, :, 0] = rng.uniform(0.5, 1.5, p_n)[:, None] * (np.eye(a_n)[0] - 1.0 / a_n)
        p0 = np.linspace(lo, hi, p_n)
        off = np.zeros((p_n, a_n))
        off[:, 0] = np.log(p0 * (a_n - 1) / (1.0 - p0))
        spec_kwargs.setdefault("lag", "refresh")
        spec = BanditSpec.binary(arms=a_n, correct=1, **spec_kwargs)
        return cls(features=phi, offsets=off, spec=spec)

    @property
    def num_prompts(self) -> int:
        """P."""
        return self.features.shape[0]

    @property
    def num_arms(self) -> int:
        """A."""
        return self.features.shape[1]

    @property
    def dim(self) -> int:
        """d, the dimension of theta."""
        return self.features.shape[2]

    def with_mode(self, mode: str) -> ContextualBandit:
        """The same bandit with the estimator of ``mode`` (``"stale"``: score, ``"ratio"``: surrogate)."""
        if mode not in MODES:
            raise ParameterError("mode", f"`mode` must be one of {sorted(MODES)}; got {mode!r}")
        return ContextualBandit(self.features, self.offsets, self.spec.replace(estimator=MODES[mode]))

    def _theta(self, theta: Any, name: str = "theta") -> np.ndarray:
        th = check_array(name, theta)
        if th.ndim == 0 or th.shape[-1] != self.dim:
            raise ParameterError(name, f"`{name}` must have shape (..., {self.dim}); got {th.shape}")
        return th

    def logits(self, theta: Any) -> np.ndarray:
        """Logits ``b + Phi theta``: theta (..., d) -> (..., P, A), nats."""
        th = self._theta(theta)
        return self.offsets + np.einsum("pad,...d->...pa", self.features, th)

    def rewards(self, theta: Any) -> np.ndarray:
        """Expected reward of each prompt, ``sum_a pi_pa q_a``: theta (..., d) -> (..., P)."""
        return np.exp(log_softmax(self.logits(theta), axis=-1)) @ np.asarray(self.spec.reward_probs)

    def mean_reward(self, theta: Any) -> np.ndarray:
        """Mean over prompts of the expected reward: theta (..., d) -> (...)."""
        return self.rewards(theta).mean(axis=-1)

    def kl(self, theta: Any) -> np.ndarray:
        """``KL(pi_p || pi_ref,p)`` per prompt (nats): theta (..., d) -> (..., P)."""
        logp = log_softmax(self.logits(theta), axis=-1)
        ref = log_softmax(self.offsets, axis=-1)
        return np.sum(np.exp(logp) * (logp - ref), axis=-1)

    def _algebra(self, copies: int = 1) -> _Algebra:
        alg = _Algebra(self.spec)
        # the reference differs per prompt (its prior offsets); ``copies`` tiles it for flattened batches
        alg.log_ref = np.tile(log_softmax(self.offsets, axis=-1), (copies, 1))
        return alg

    def expected_objective(self, theta: Any, beta: float) -> np.ndarray:
        """The objective whose gradient is the on-policy expected ascent direction (mean field).

        ``c_G mean_p p_p - beta mean_p KL_p`` with ``c_G = (G-1)/G`` for the mean baseline, 1 for
        leave-one-out or no baseline (``G -> inf``: 1).

        Parameters
        ----------
        theta : array_like, shape (..., d)
        beta : float >= 0

        Returns
        -------
        ndarray, shape (...)

        Raises
        ------
        ParameterError
            ``scale="group_std"`` (the std-scaled direction is not the gradient of an objective), bad
            ``theta`` or ``beta``.
        """
        if self.spec.scale != "none":
            raise ParameterError("scale", "`scale` must be 'none' for an expected objective (std scaling has none)")
        b = check_beta(beta)
        g = self.spec.group_size
        c = (g - 1.0) / g if (self.spec.baseline == "mean" and not math.isinf(g)) else 1.0
        return c * self.mean_reward(theta) - b * self.kl(theta).mean(axis=-1)

    def expected_ascent(self, theta: Any, theta_behaviour: Any = None, beta: Any = 0.0) -> np.ndarray:
        """Exact expected ascent direction in theta (mean field, finite or infinite G).

        Parameters
        ----------
        theta : array_like, shape (..., d)
            Current parameters.
        theta_behaviour : array_like, shape (..., d), optional
            Parameters of the behaviour policy that sampled the groups; default ``theta``.
        beta : float or array_like broadcastable to ``theta.shape[:-1]``, >= 0

        Returns
        -------
        ndarray, shape (..., d)
            ``(1/P) sum_p Phi_p^T E[g_p]`` per unit learning rate.

        Raises
        ------
        ParameterError
            Wrong shapes, non-finite values, negative ``beta``.
        """
        th = self._theta(theta)
        thb = th if theta_behaviour is None else self._theta(theta_behaviour, "theta_behaviour")
        th, thb = np.broadcast_arrays(th, thb)
        b = check_array("beta", beta, low=0.0)
        b = np.broadcast_to(b, th.shape[:-1])[..., None, None]
        return self._ascent_mean_field(self._algebra(), th, thb, b)

    def _ascent_mean_field(self, alg: _Algebra, th: np.ndarray, thb: np.ndarray, beta: np.ndarray) -> np.ndarray:
        logp_t, pi_t = _policies(self.offsets + np.einsum("pad,...d->...pa", self.features, th))
        logp_b, pi_b = _policies(self.offsets + np.einsum("pad,...d->...pa", self.features, thb))
        g, _ = _mean_field_gradient(alg, logp_t, pi_t, logp_b, pi_b, beta)
        return np.einsum("...pa,pad->...d", g, self.features) / self.num_prompts


# ----------------------------------------------------------------------------------------------
# Simulation
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextualRun:
    """Result of :func:`simulate_contextual`.

    Attributes
    ----------
    eta, mu, beta : ndarray, shape (C,)
    k_ref : ndarray of int, shape (C,)
    theta : ndarray, shape (C, S, T + 1, d)
        Parameters at every step (0 = start); NaN after a run overflowed.
    reward : ndarray, shape (C, S, T + 1)
        Mean over prompts of the exact expected reward of the current policy.
    velocity : ndarray, shape (C, S, d)
        Final momentum buffer ``v``.
    """

    eta: np.ndarray
    mu: np.ndarray
    k_ref: np.ndarray
    beta: np.ndarray
    theta: np.ndarray
    reward: np.ndarray
    velocity: np.ndarray


def _per_config(eta: Any, mu: Any, k_ref: Any, beta: Any) -> tuple[np.ndarray, ...]:
    def arr(v, check, dtype):
        return np.array([check(x) for x in np.atleast_1d(np.asarray(v, dtype=object)).ravel().tolist()], dtype=dtype)

    parts = (arr(eta, check_eta, float), arr(mu, check_mu, float), arr(k_ref, check_k_ref, np.int64),
             arr(beta, check_beta, float))
    try:
        return tuple(np.broadcast_arrays(*parts))
    except ValueError:
        raise ParameterError("eta", "`eta`, `mu`, `k_ref` and `beta` must be scalars or sequences of one length") \
            from None


def simulate_contextual(
    cb: ContextualBandit,
    *,
    eta: Any,
    mu: Any = 0.0,
    k_ref: Any = 1,
    beta: Any,
    steps: int,
    theta0: Any = None,
    velocity0: Any = None,
    mean_field: bool = True,
    seeds: int = 1,
    seed: int = 0,
) -> ContextualRun:
    """Run the contextual bandit: heavy-ball GRPO with a behaviour snapshot refreshed every ``k_ref`` steps.

    Configurations (``eta``, ``mu``, ``k_ref``, ``beta``, broadcast to C) and seeds run as one array
    program. At every step ``t`` with ``t % k_ref == 0`` the behaviour parameters are set to the current
    ones; the step's direction is the exact expectation (``mean_field=True``) or the sampled estimator
    (``spec.num_prompts`` groups of ``spec.group_size`` per prompt); then ``v = mu v + g`` and
    ``theta += eta v``.

    Parameters
    ----------
    cb : ContextualBandit
    eta, mu, k_ref, beta : scalars or sequences
        Learning rate (> 0), momentum in [0, 1), refresh interval (int >= 1), KL weight (>= 0).
    steps : int >= 1
    theta0, velocity0 : array_like, shape (d,) or (C, d), optional
        Start (default: zeros, the reference) and initial momentum buffer (default: zeros).
    mean_field : bool
    seeds : int >= 1
        Independent sampled runs per configuration (1 in mean field). Seed ``seed + i`` drives run ``i``;
        all configurations share the seeds' random numbers.
    seed : int
        First seed.

    Returns
    -------
    ContextualRun

    Raises
    ------
    ParameterError
        Out-of-range hyperparameters (named), wrong ``theta0``/``velocity0`` shapes, an infinite
        ``group_size`` in a sampled run, a run whose record would exceed the memory limit (``steps``).
    """
    if not isinstance(cb, ContextualBandit):
        raise ParameterError("cb", "`cb` must be a ContextualBandit")
    eta_c, mu_c, k_c, beta_c = _per_config(eta, mu, k_ref, beta)
    n_steps = check_integer("steps", steps, low=1)
    n_conf, d, p_n = eta_c.size, cb.dim, cb.num_prompts
    n_seeds = 1 if mean_field else check_integer("seeds", seeds, low=1)
    if not mean_field and cb.spec.group_size_is_infinite:
        raise ParameterError("group_size", "`group_size` must be finite in a sampled run")
    check_memory("steps", n_steps + 1, 8 * n_conf * n_seeds * (d + 1), what=f"{n_conf} x {n_seeds} runs x {d + 1}")

    def start(name, value):
        if value is None:
            return np.zeros((n_conf, n_seeds, d))
        v = cb._theta(value, name)
        if v.ndim == 1:
            v = np.broadcast_to(v, (n_conf, d))
        if v.shape != (n_conf, d):
            raise ParameterError(name, f"`{name}` must have shape ({d},) or ({n_conf}, {d}); got {v.shape}")
        return np.broadcast_to(v[:, None, :], (n_conf, n_seeds, d)).copy()

    theta = start("theta0", theta0)
    vel = start("velocity0", velocity0)
    thetas = np.empty((n_conf, n_seeds, n_steps + 1, d))
    thetas[:, :, 0] = theta
    theta_b = theta.copy()
    eta3, mu3 = eta_c[:, None, None], mu_c[:, None, None]
    if mean_field:
        alg = cb._algebra()
        beta_mf = beta_c[:, None, None, None]
    else:
        alg = cb._algebra(copies=n_seeds)
        beta_s = beta_c[:, None, None]
        b_n, g_n = cb.spec.num_prompts, int(cb.spec.group_size)
        gens = [np.random.default_rng(check_seed("seed", seed) + i) for i in range(n_seeds)]
    alive = np.ones((n_conf, n_seeds), dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(n_steps):
            refresh = (t % k_c) == 0
            if refresh.any():
                theta_b = np.where(refresh[:, None, None], theta, theta_b)
            if mean_field:
                g = cb._ascent_mean_field(alg, theta, theta_b, beta_mf)
            else:
                # prompts of all seeds on one axis (seed-major), as the bandit's sampler expects (C, S, A)
                z_t = (cb.offsets + np.einsum("pad,csd->cspa", cb.features, theta)).reshape(n_conf, -1, cb.num_arms)
                z_b = (cb.offsets + np.einsum("pad,csd->cspa", cb.features, theta_b)).reshape(n_conf, -1, cb.num_arms)
                logp_t, pi_t = _policies(z_t)
                logp_b, pi_b = _policies(z_b)
                u = np.concatenate([gen.random((g_n, p_n, b_n)) for gen in gens], axis=1)
                gl, _ = _stochastic_gradient(alg, u, logp_t, pi_t, logp_b, pi_b, beta_s)
                gl = gl.reshape(n_conf, n_seeds, p_n, cb.num_arms)
                g = np.einsum("cspa,pad->csd", gl, cb.features) / p_n
            vel = mu3 * vel + g
            theta = theta + eta3 * vel
            ok = np.isfinite(theta).all(axis=-1) & (np.abs(theta).max(axis=-1) < 1e6)
            if not ok.all():
                # a run whose parameters left the float range diverged: NaN from here, carried on at rest
                alive &= ok
                theta[~ok] = 0.0
                vel[~ok] = 0.0
                theta_b[~ok] = 0.0
            thetas[:, :, t + 1] = np.where(alive[..., None], theta, np.nan)
    reward = np.full(thetas.shape[:-1], np.nan)
    fin = np.isfinite(thetas).all(axis=-1)
    reward[fin] = cb.mean_reward(thetas[fin])
    return ContextualRun(eta=eta_c, mu=mu_c, k_ref=k_c, beta=beta_c, theta=thetas, reward=reward,
                         velocity=np.where(alive[..., None], vel, np.nan))


# ----------------------------------------------------------------------------------------------
# Fixed point and its spectrum
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextualFixedPoint:
    """The on-policy fixed point and its spectrum of restoring rates.

    Attributes
    ----------
    beta : float
    theta_star : ndarray, shape (d,)
    rewards : ndarray, shape (P,)
        Expected reward of each prompt at ``theta*``.
    mean_reward : float
    jacobian : ndarray, shape (d, d)
        ``J = d(expected ascent)/d theta`` at ``theta*`` (on policy), per unit learning rate.
    curvatures : ndarray, shape (d,)
        Restoring rates ``K_i``: eigenvalues of ``-(J + J^T)/2``, ascending (per step per unit eta).
    modes : ndarray, shape (d, d)
        Unit eigenvectors, column ``i`` for ``curvatures[i]``.
    asymmetry : float
        ``||J - J^T|| / ||J||`` (0 up to finite-difference error when the direction is a gradient).
    residual : float
        ``||expected ascent(theta*)||``.
    """

    beta: float
    theta_star: np.ndarray
    rewards: np.ndarray
    mean_reward: float
    jacobian: np.ndarray
    curvatures: np.ndarray
    modes: np.ndarray
    asymmetry: float
    residual: float

    @property
    def k_min(self) -> float:
        """Slowest restoring rate."""
        return float(self.curvatures[0])

    @property
    def k_max(self) -> float:
        """Fastest restoring rate (the one that governs the first linear instability)."""
        return float(self.curvatures[-1])


def _jacobian(f, x: np.ndarray, h: float) -> np.ndarray:
    d = x.size
    pts = np.concatenate([x + h * np.eye(d), x - h * np.eye(d)])
    vals = f(pts)
    return ((vals[:d] - vals[d:]) / (2.0 * h)).T


def contextual_fixed_point(cb: ContextualBandit, beta: float, *, h: float = 1e-5) -> ContextualFixedPoint:
    """The on-policy fixed point ``theta*`` of the expected dynamics and the restoring rates there.

    ``theta*`` solves ``E[g](theta) = 0`` (on policy, mean field; scipy's ``root`` from zeros with a
    finite-difference Jacobian, central differences of step ``h``); the restoring rates are the
    eigenvalues of ``-J``'s symmetric part.

    Parameters
    ----------
    cb : ContextualBandit
    beta : float > 0
        KL weight (anchors an interior fixed point).
    h : float > 0
        Finite-difference step (theta units).

    Returns
    -------
    ContextualFixedPoint

    Raises
    ------
    ParameterError
        ``beta`` <= 0 or no stable fixed point found (``beta``).
    """
    b = check_beta(beta)
    if b <= 0:
        raise ParameterError("beta", "`beta` must be > 0 (the KL anchor makes the fixed point interior)")
    h = check_real("h", h, low=0.0, low_inclusive=False)
    alg = cb._algebra()

    def f(th):
        th = np.atleast_2d(th)
        return cb._ascent_mean_field(alg, th, th, np.full((th.shape[0], 1, 1), b))

    sol = root(lambda x: f(x)[0], np.zeros(cb.dim), jac=lambda x: _jacobian(f, x, h), method="hybr", tol=1e-14)
    th = sol.x
    res = float(np.linalg.norm(f(th)[0]))
    jac = _jacobian(f, th, h)
    sym = 0.5 * (jac + jac.T)
    k, vecs = np.linalg.eigh(-sym)
    if not (np.isfinite(res) and res < 1e-9 and k[0] > 0):
        raise ParameterError("beta", f"no stable interior fixed point found at `beta` = {b!r} "
                                     f"(residual {res:.3g}, smallest restoring rate {k[0]:.3g}); raise beta")
    asym = float(np.linalg.norm(jac - jac.T) / np.linalg.norm(jac))
    rew = cb.rewards(th)
    return ContextualFixedPoint(beta=b, theta_star=th, rewards=rew, mean_reward=float(rew.mean()), jacobian=jac,
                                curvatures=k, modes=vecs, asymmetry=asym, residual=res)


# ----------------------------------------------------------------------------------------------
# Relaxation: the K one reads off a reward curve
# ----------------------------------------------------------------------------------------------


def _rate_fit(t: np.ndarray, e: np.ndarray, eta: float, floor: float) -> tuple[float, float]:
    """Single-exponential rates of a return ``e(t)`` (e(0) != 0): least-squares log fit and e-folding.

    Uses the part before the first sign change and above ``floor * |e0|``; converted to a rate per unit
    learning rate with the per-step decay ``r``: ``K = (1 - r) / eta`` (exact for one mode).
    """
    rel = e / e[0]
    bad = np.flatnonzero((rel <= floor) | ~np.isfinite(rel))
    n = int(bad[0]) if bad.size else rel.size
    if n < 3:
        return math.nan, math.nan
    lr = np.log(rel[:n])
    tt = t[:n]
    slope = float(np.sum(tt * lr) / np.sum(tt * tt))  # fit through the origin: log(e/e0) = slope t
    k_fit = (1.0 - math.exp(slope)) / eta
    below = np.flatnonzero(rel[:n] <= math.exp(-1.0))
    if below.size:
        i = int(below[0])
        t_e = tt[i - 1] + (tt[i] - tt[i - 1]) * (-1.0 - lr[i - 1]) / (lr[i] - lr[i - 1])
        k_e = (1.0 - math.exp(-1.0 / t_e)) / eta
    else:
        k_e = math.nan
    return k_fit, k_e


def relaxation_curvature(cb: ContextualBandit, fp: ContextualFixedPoint, direction: Any, *, delta: float = 1e-4,
                         a_small: float = 0.02, floor: float = 0.05, max_steps: int = 200_000) -> dict:
    """The restoring rate read off the return to ``theta*`` after a small displacement (on policy, mu = 0).

    Runs the exact expected dynamics (``k_ref = 1``, ``mu = 0``, ``eta = a_small / K_max``: the flow
    limit) from ``theta* + delta u`` (``u = direction / |direction|``) until the mean reward's deviation
    falls below ``floor`` of its start, and fits a single exponential (through the origin in log space,
    over the part above ``floor`` and before any sign change) to the mean reward's deviation and to the
    distance ``|theta - theta*|``; also the e-folding rate of each. Rates are per step per unit eta,
    ``K = (1 - r) / eta`` with ``r`` the fitted decay per step (exact for a single mode).

    Parameters
    ----------
    cb : ContextualBandit
    fp : ContextualFixedPoint
    direction : array_like, shape (d,)
        Displacement direction (not zero).
    delta : float > 0
        Displacement size (theta units): small, so the return is linear.
    a_small : float in (0, 0.5]
        ``eta K_max`` of the run.
    floor : float in (0, 1)
    max_steps : int

    Returns
    -------
    dict
        ``k_reward_fit``, ``k_reward_efold``, ``k_distance_fit``, ``k_distance_efold``, ``eta``, ``steps``.

    Raises
    ------
    ParameterError
        A zero or wrongly shaped ``direction``, out-of-range options (named).
    """
    u = cb._theta(direction, "direction")
    if u.shape != (cb.dim,) or not np.linalg.norm(u) > 0:
        raise ParameterError("direction", f"`direction` must be a non-zero vector of shape ({cb.dim},)")
    u = u / np.linalg.norm(u)
    delta = check_real("delta", delta, low=0.0, low_inclusive=False)
    a_small = check_real("a_small", a_small, low=0.0, high=0.5, low_inclusive=False)
    floor = check_real("floor", floor, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    max_steps = check_integer("max_steps", max_steps, low=10)
    eta = a_small / fp.k_max
    steps = int(min(max_steps, math.ceil(1.3 * math.log(1.0 / floor) / (eta * fp.k_min)) + 10))
    run = simulate_contextual(cb, eta=eta, beta=fp.beta, steps=steps, theta0=fp.theta_star + delta * u)
    t = np.arange(steps + 1, dtype=float)
    e_r = run.reward[0, 0] - fp.mean_reward
    e_d = np.linalg.norm(run.theta[0, 0] - fp.theta_star, axis=-1)
    kr, kre = _rate_fit(t, e_r, eta, floor)
    kd, kde = _rate_fit(t, e_d, eta, floor)
    return {"k_reward_fit": kr, "k_reward_efold": kre, "k_distance_fit": kd, "k_distance_efold": kde,
            "eta": eta, "steps": steps}


# ----------------------------------------------------------------------------------------------
# Stability of the actual update map
# ----------------------------------------------------------------------------------------------


def cycle_radius(cb: ContextualBandit, fp: ContextualFixedPoint, *, eta: float, mu: float, k_ref: int,
                 h: float = 1e-6, return_eigenvalues: bool = False):
    """Measured growth factor per step of small perturbations of ``(theta*, v = 0)``, from the update map itself.

    The map from the state ``(theta, v)`` at a refresh of the behaviour policy to the state ``k_ref``
    steps later is run with the exact expected dynamics (:func:`simulate_contextual`); its Jacobian at
    the fixed point comes from central differences over all ``2 d`` state directions (step ``h``), and
    the growth factor per step is its spectral radius to the power ``1 / k_ref``. No model of the
    dynamics enters: the linear stability of the simulated update. ``< 1``: stable.

    Parameters
    ----------
    cb : ContextualBandit
        Its spec's estimator is the mode (stale score or ratio-corrected surrogate).
    fp : ContextualFixedPoint
    eta, mu, k_ref : hyperparameters
    h : float > 0
    return_eigenvalues : bool
        Also return the cycle map's eigenvalues (complex, shape (2d,)).

    Returns
    -------
    float, or (float, ndarray)

    Raises
    ------
    ParameterError
        Out-of-range hyperparameters (named).
    """
    eta = check_eta(eta)
    mu = check_mu(mu)
    k = check_k_ref(k_ref)
    d = cb.dim
    n = 2 * d
    basis = np.eye(n)
    x0 = np.concatenate([fp.theta_star, np.zeros(d)])
    pts = np.concatenate([x0 + h * basis, x0 - h * basis])
    run = simulate_contextual(cb, eta=np.full(2 * n, eta), mu=mu, k_ref=k, beta=fp.beta, steps=k,
                              theta0=pts[:, :d], velocity0=pts[:, d:])
    out = np.concatenate([run.theta[:, 0, -1], run.velocity[:, 0]], axis=-1)
    jac = ((out[:n] - out[n:]) / (2.0 * h)).T
    ev = np.linalg.eigvals(jac)
    rad = float(np.max(np.abs(ev)) ** (1.0 / k))
    return (rad, ev) if return_eigenvalues else rad


def critical_eta(cb: ContextualBandit, fp: ContextualFixedPoint, *, mu: float, k_ref: int, guess: float,
                 rtol: float = 1e-6, max_doublings: int = 40) -> float:
    """Measured critical learning rate: the smallest ``eta`` at which :func:`cycle_radius` reaches 1.

    Bracketed from ``guess`` by factors of 2 (``guess`` halved until stable, doubled until unstable),
    then bisected in ``log eta`` to relative width ``rtol``. Assumes one crossing in the bracket (true
    for every setting measured here: the radius grows with eta past the threshold).

    Parameters
    ----------
    cb : ContextualBandit
    fp : ContextualFixedPoint
    mu, k_ref : hyperparameters
    guess : float > 0
        Starting learning rate.
    rtol : float in (0, 0.1)
    max_doublings : int
        Bracketing steps allowed each way; beyond them the result is ``inf`` (never unstable) or the
        search fails.

    Returns
    -------
    float
        ``eta*`` (per step), or ``inf`` when still stable after ``max_doublings`` doublings.

    Raises
    ------
    ParameterError
        Out-of-range inputs (named); ``guess`` still unstable after ``max_doublings`` halvings.
    """
    guess = check_real("guess", guess, low=0.0, low_inclusive=False)
    rtol = check_real("rtol", rtol, low=0.0, high=0.1, low_inclusive=False)

    def unstable(e):
        return cycle_radius(cb, fp, eta=e, mu=mu, k_ref=k_ref) > 1.0

    lo = hi = guess
    if unstable(guess):
        for _ in range(max_doublings):
            lo /= 2.0
            if not unstable(lo):
                break
        else:
            raise ParameterError("guess", f"`guess` = {guess!r}: still unstable {max_doublings} halvings below")
        hi = 2.0 * lo
    else:
        for _ in range(max_doublings):
            hi *= 2.0
            if unstable(hi):
                break
        else:
            return math.inf
        lo = hi / 2.0
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if unstable(mid):
            hi = mid
        else:
            lo = mid
    return math.sqrt(lo * hi)


def predicted_critical_eta(curvature: Any, mu: Any, k_ref: Any, mode: str = "stale") -> np.ndarray:
    """The one-dimensional model's critical learning rate for a restoring rate ``curvature``.

    ``eta* = a*(mu, k_ref) / K`` with ``a*`` the exact discrete threshold of the refresh-lag recurrence
    (:func:`grpo_core.model.stability.critical_a_exact`, heavy ball). ``mode="ratio"``: the importance
    ratio removes the lag from the expected gradient with the mean baseline, so ``a*`` is the on-policy
    one, ``2 (1 + mu)``, at every ``k_ref``.

    Parameters
    ----------
    curvature : array_like, > 0
    mu, k_ref : array_like (broadcast)
    mode : {"stale", "ratio"}

    Returns
    -------
    ndarray (broadcast shape)

    Raises
    ------
    ParameterError
        Non-positive ``curvature``, out-of-range ``mu``/``k_ref``, unknown ``mode``.

    Examples
    --------
    >>> predicted_critical_eta(0.5, 0.0, [1, 4], "stale").tolist()
    [4.0, 1.0]
    >>> predicted_critical_eta(0.5, 0.0, [1, 4], "ratio").tolist()
    [4.0, 4.0]
    """
    k = check_array("curvature", curvature, low=0.0)
    if k.size and np.any(k <= 0):
        raise ParameterError("curvature", "`curvature` must be > 0")
    if mode not in MODES:
        raise ParameterError("mode", f"`mode` must be one of {sorted(MODES)}; got {mode!r}")
    kr = np.ones_like(np.asarray(k_ref)) if mode == "ratio" else k_ref
    a = model_stability.critical_a_exact(mu, kr, "refresh", "heavy_ball")
    return np.asarray(a / k, dtype=float)


# ----------------------------------------------------------------------------------------------
# Ringing: period and regime of one mode
# ----------------------------------------------------------------------------------------------


def predicted_period(a: float, mu: float, k_ref: int) -> float:
    """Ringing period (steps) of the refresh-lag recurrence at gain ``a``: ``2 pi k_ref / arg(lambda)``.

    ``lambda`` is the dominant eigenvalue of the one-cycle map (:func:`grpo_core.model.stability.monodromy`);
    ``inf`` when it is real and positive (a monotone mode), ``2 k_ref`` when real and negative. The
    period is read at the refresh times (one sample per cycle), so faster motion inside a cycle is aliased.

    Raises
    ------
    ParameterError
        Out-of-range inputs.

    Examples
    --------
    >>> predicted_period(1.4, 0.0, 1)
    2.0
    """
    ev = np.linalg.eigvals(model_stability.monodromy(a, mu, k_ref))
    lam = ev[np.argmax(np.abs(ev))]
    ang = abs(float(np.angle(lam)))
    return math.inf if ang < 1e-9 else 2.0 * math.pi * int(k_ref) / ang


def ringing_period(c: Any, k_ref: int, *, rtol: float = 1e-3) -> float:
    """Measured ringing period (steps) of a mode's deviation ``c(t)``, read once per refresh cycle.

    Samples ``c`` at the refresh times (every ``k_ref`` steps), counts sign changes while ``|c|`` stays
    above ``rtol`` of its largest value, and returns ``2 k_ref * cycles / changes`` over the span
    between the first and the last change; ``inf`` with fewer than two changes (no ringing).

    Raises
    ------
    ParameterError
        Fewer than 4 samples per refresh cycle sampling, bad ``k_ref``/``rtol``.
    """
    k = check_k_ref(k_ref)
    arr = check_array("c", c, ndim=1)
    s = arr[::k]
    if s.size < 4:
        raise ParameterError("c", f"`c` must hold at least 4 refresh cycles ({4 * k} steps); got {arr.size}")
    big = np.abs(s) > check_real("rtol", rtol, low=0.0, high=1.0) * np.max(np.abs(s))
    sg = np.sign(s[big])
    idx = np.flatnonzero(big)
    ch = np.flatnonzero(sg[1:] != sg[:-1])
    if ch.size < 2:
        return math.inf
    span = idx[ch[-1] + 1] - idx[ch[0] + 1]
    return 2.0 * k * span / (ch.size - 1)


def classify_mode(c: Any, *, grow: float = 2.0, rtol: float = 0.1) -> str:
    """Regime of a mode's deviation ``c`` (shape (T,) or (S, T) over seeds).

    ``growing oscillation`` when any run is non-finite or the largest ``|c|`` over the second half of
    any run reaches ``grow * |c(0)|`` (the second half, not the end: a grown oscillation of the bounded
    bandit settles on a cycle whose envelope beats slowly); else ``damped ringing`` when the mean over
    runs changes sign at least twice while ``|mean|`` is above ``rtol * |c(0)|``; else ``monotone``.
    Our rule.

    Raises
    ------
    ParameterError
        Fewer than 8 steps, ``c(0) = 0``.
    """
    arr = np.atleast_2d(check_array("c", c, finite=False))
    if arr.shape[-1] < 8:
        raise ParameterError("c", "`c` must hold at least 8 steps")
    c0 = float(np.abs(arr[0, 0]))
    if not c0 > 0:
        raise ParameterError("c", "`c` must start displaced (c(0) != 0)")
    n = arr.shape[-1]
    if (not np.isfinite(arr).all()) or np.max(np.abs(arr[:, n // 2:])) >= grow * c0:
        return "growing oscillation"
    m = arr.mean(axis=0)
    s = np.sign(m[np.abs(m) > rtol * c0])
    return "damped ringing" if np.count_nonzero(s[1:] != s[:-1]) >= 2 else "monotone"
