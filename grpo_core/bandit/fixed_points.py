"""Where the bandit settles and how hard it is pulled back: fixed point, reduced flow, stiffness.

:func:`fixed_point` follows the on-policy mean-field flow to its fixed point ``p*``;
:func:`reduced_flow` is the flow on the gaps of a symmetric bandit; :func:`stiffness` measures the
restoring stiffness ``K`` at ``p*`` (the bridge to the oscillator model: ``a = eta K``);
:func:`beta_for_fixed_point` is the KL weight that puts ``p*`` at a given value, and
:func:`smallest_anchoring_beta` the threshold below which no interior fixed point exists (std
scaling, ``G -> inf`` only: at finite ``G`` every ``beta > 0`` has one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..errors import ParameterError
from ..model.hyperparameters import (
    check_beta,
)
from ..softmax import log_softmax
from ..validation import check_array, check_choice, check_integer, check_real
from .gradients import _Algebra, _mean_field_gradient, _policies
from .simulation import simulate
from .spec import _EDGE, BanditSpec, check_spec

__all__ = ["FixedPoint", "fixed_point", "reduced_flow", "stiffness", "beta_for_fixed_point", "smallest_anchoring_beta"]


# ----------------------------------------------------------------------------------------------
# Fixed point and stiffness
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FixedPoint:
    """Where the on-policy mean-field flow from the initial policy settles.

    Attributes
    ----------
    p_star : float
        Expected reward at the fixed point (or its limit when there is no interior fixed point).
    theta_star : ndarray, shape (A,)
        Logits at the fixed point (same mean as the initial logits).
    interior : bool
        False when the flow runs away (``p`` -> its largest or smallest reachable value with no
        restoring force, e.g. ``beta = 0``): then there is nothing to linearise around. A fixed
        point within 1e-6 (relative) of the extreme rewards also counts as not interior: with std
        scaling, ``std_eps`` creates one at ``p ~ 1 - 1e-16`` (where ``sqrt(p(1-p)) < eps``), which
        is ``p = 1`` for every practical purpose.
    stiffness : float
        K, the relaxation rate of the flow at the fixed point per unit learning rate (logit
        units; ``a = eta K`` per optimizer step); 0 when not interior.
    gap : float
        Logit gap ``x*`` between a correct and a wrong arm (two-level symmetric bandits; NaN
        otherwise).
    symmetric : bool
        True when the state is one number (two reward levels, symmetric initial and reference
        logits within each level): the mean-field reduction to ``p`` is then exact.
    direction : ndarray, shape (A,)
        Unit logit direction of the mode that carries ``p`` (for perturbations).
    """

    p_star: float
    theta_star: np.ndarray
    interior: bool
    stiffness: float
    gap: float
    symmetric: bool
    direction: np.ndarray


def _symmetric_levels(spec: BanditSpec) -> np.ndarray | None:
    """Indicator of the high-reward arms if the bandit reduces to one logit gap, else None."""
    q = np.asarray(spec.reward_probs)
    levels = np.unique(q)
    if levels.size != 2:
        return None
    hi = q == levels[1]
    init, ref = np.asarray(spec.init_logits), np.asarray(spec.ref_logits)
    d = init - ref
    for arr in (ref, d):
        if np.ptp(arr[hi]) > 1e-12 or np.ptp(arr[~hi]) > 1e-12:
            return None
    return hi.astype(float)


def _flow(spec: BanditSpec, beta: float):
    """On-policy mean-field ascent direction theta -> E[g] (vectorised over leading axes)."""
    alg = _Algebra(spec)

    def f(theta):
        logp, pi = _policies(np.asarray(theta, dtype=float))
        return _mean_field_gradient(alg, logp, pi, logp, pi, beta)[0]

    return alg, f


#: The widest logit gap :func:`fixed_point` searches (nats): ``exp(-745)`` is below the smallest float64
#: (5e-324), so past it the probabilities, hence the flow, are exactly constant.
MAX_GAP = 745.0


def fixed_point(spec: BanditSpec, beta: float, *, max_gap: float = 60.0) -> FixedPoint:
    """Fixed point of the on-policy mean-field flow reached from the spec's initial policy.

    Two-level symmetric bandits (``_symmetric_levels``; e.g. binary rewards from a uniform
    start): the state is the logit gap ``x`` between a correct and a wrong arm, ``x' = F(x)``;
    scan ``F`` from the initial gap in the direction of the flow and refine the first sign change
    with Brent's method (the stable fixed point the flow reaches; with std scaling a second,
    unstable one may lie beyond it). No sign change within ``max_gap`` nats: no interior fixed
    point. Other bandits: integrate the flow (LSODA), then refine with a root finder.
    Stiffness: ``K = -F'(x*)`` (central difference); in general the eigenvalue of the flow's
    Jacobian whose eigenvector carries ``p``.

    Closed forms (two arms, uniform reference; book chapter "The bandit: where the mean field is exact"): mean
    baseline, ``G -> inf``:
    ``p* = sigmoid(1/beta)``, ``K = 2 beta p* (1 - p*)``; finite G: ``p* = sigmoid((G-1)/(G beta))``.

    Parameters
    ----------
    spec : BanditSpec
        The bandit (its ``group_size``, baseline, scaling and KL estimator matter; lag, momentum
        and estimator do not: the flow is on-policy).
    beta : float >= 0
        KL weight.
    max_gap : float in (0, 745]
        How far (nats) to look for a sign change of ``F``.

    Returns
    -------
    FixedPoint

    Raises
    ------
    ParameterError
        ``beta`` < 0 or not finite; ``max_gap`` outside (0, 745] (:data:`MAX_GAP`).

    References
    ----------
    Our derivation; book chapter "The bandit: where the mean field is exact", section "Fixed point".

    Examples
    --------
    >>> fp = fixed_point(BanditSpec.binary(group_size=math.inf), beta=1.0)
    >>> round(fp.p_star, 4), round(fp.stiffness, 4)
    (0.7311, 0.3932)
    """
    check_spec(spec)
    b = check_beta(beta)
    # beyond 745 nats exp(-gap) underflows to 0 in float64: the flow is flat there, no sign change to find
    max_gap = check_real("max_gap", max_gap, low=0.0, high=MAX_GAP, low_inclusive=False)
    alg, f = _flow(spec, b)
    hi = _symmetric_levels(spec)
    ref = np.asarray(spec.ref_logits)
    init = np.asarray(spec.init_logits)
    if hi is not None:
        return _fixed_point_symmetric(alg, f, hi, ref, init, max_gap)
    return _fixed_point_general(alg, f, init)


def _gap_flow(f, hi: np.ndarray, ref: np.ndarray):
    def big_f(x):
        x = np.asarray(x, dtype=float)
        th = ref + x[..., None] * hi
        g = f(th)
        return (g * hi).sum(-1) / hi.sum() - (g * (1 - hi)).sum(-1) / (1 - hi).sum()

    return big_f


def reduced_flow(spec: BanditSpec, beta: float, gaps) -> np.ndarray:
    """The one-dimensional mean-field flow ``x' = F(x)`` of a two-level symmetric bandit.

    ``x`` is the logit gap between a correct (high-reward) and a wrong arm; the logits are
    ``theta = theta_ref + x 1_H``. ``F(x)`` is the rate of change of the gap per unit learning rate
    under the on-policy expected gradient (the spec's group size, baseline, scaling and KL
    estimator). Two arms, uniform reference (book chapter "The bandit: where the mean field is exact"): mean baseline,
    G -> inf:
    ``F = 2 p (1 - p)(1 - beta x)``; std scaling: ``F = 2 sqrt(p (1 - p)) - 2 beta p (1 - p) x``.

    Parameters
    ----------
    spec : BanditSpec
        Two reward levels, reference logits constant within each level.
    beta : float >= 0
    gaps : array_like
        Values of ``x`` (nats).

    Returns
    -------
    ndarray, shape of ``gaps``
        ``F(x)`` in logit units per step per unit learning rate.

    Raises
    ------
    ParameterError
        A bandit that does not reduce to one gap; bad ``beta`` or ``gaps``.

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> reduced_flow(spec, 1.0, [0.0, 1.0]).round(4).tolist()
    [0.5, 0.0]
    """
    check_spec(spec)
    b = check_beta(beta)
    x = check_array("gaps", gaps)
    hi = _symmetric_levels(spec.replace(init_logits=spec.ref_logits))
    if hi is None:
        raise ParameterError("reward_probs", "`reward_probs` must have two levels (and `ref_logits` be symmetric "
                                             "within each) for a one-dimensional flow")
    _, f = _flow(spec, b)
    return _gap_flow(f, hi, np.asarray(spec.ref_logits))(x)


def _fixed_point_symmetric(alg, f, hi, ref, init, max_gap) -> FixedPoint:
    big_f = _gap_flow(f, hi, ref)
    x0 = float(np.mean((init - ref)[hi > 0]) - np.mean((init - ref)[hi == 0]))
    direction = hi - hi.mean()
    direction = direction / np.linalg.norm(direction)
    f0 = float(big_f(x0))
    if f0 == 0.0:
        x_star = x0
    else:
        sgn = 1.0 if f0 > 0 else -1.0
        grid = x0 + sgn * np.linspace(0.0, max_gap, int(max_gap * 40) + 1)
        vals = big_f(grid)
        change = np.nonzero(np.sign(vals[1:]) != np.sign(vals[:-1]))[0]
        if change.size == 0:
            th = ref + grid[-1] * hi
            p_lim = float(alg.q.max()) if sgn > 0 else float(alg.q.min())
            return FixedPoint(p_star=p_lim, theta_star=th, interior=False, stiffness=0.0, gap=math.inf * sgn,
                              symmetric=True, direction=direction)
        i = int(change[0])
        scalar_f = lambda x: float(big_f(x))  # noqa: E731
        fa, fb = scalar_f(grid[i]), scalar_f(grid[i + 1])
        if fa == 0.0 or fb == 0.0 or np.sign(fa) == np.sign(fb):
            # A root on a grid point (the array and scalar evaluations may differ by rounding).
            x_star = float(grid[i] if abs(fa) <= abs(fb) else grid[i + 1])
        else:
            x_star = optimize.brentq(scalar_f, grid[i], grid[i + 1], xtol=1e-14, rtol=1e-14)
    theta_star = ref + x_star * hi
    theta_star = theta_star - theta_star.mean() + init.mean()
    h = 1e-5 * max(1.0, abs(x_star))
    k = -float(big_f(x_star + h) - big_f(x_star - h)) / (2 * h)
    p_star = float(np.exp(log_softmax(theta_star)) @ alg.q)
    interior = bool(k > 0 and _inside(p_star, alg.q))
    return FixedPoint(p_star=p_star, theta_star=theta_star, interior=interior, stiffness=k if interior else 0.0,
                      gap=x_star, symmetric=True, direction=direction)


def _inside(p_star: float, q: np.ndarray) -> bool:
    """A fixed point within 1e-6 (relative) of the extreme rewards is not interior (p = 1 in practice)."""
    frac = (p_star - q.min()) / (q.max() - q.min())
    return _EDGE < frac < 1.0 - _EDGE


def _jacobian(f, theta: np.ndarray) -> np.ndarray:
    a = theta.size
    h = 1e-6 * max(1.0, float(np.abs(theta).max()))
    eye = np.eye(a) * h
    return ((f(theta + eye) - f(theta - eye)) / (2 * h)).T


def _fixed_point_general(alg, f, init) -> FixedPoint:
    from scipy.integrate import solve_ivp

    sol = solve_ivp(lambda t, y: f(y), (0.0, 1e4), init, method="LSODA", rtol=1e-10, atol=1e-12)
    th = sol.y[:, -1]
    a = init.size
    # Refine on the hyperplane mean(theta) = mean(init): replace one equation by the constraint.
    def eqs(y):
        g = f(y)
        return np.r_[g[:-1], y.mean() - init.mean()]

    root = optimize.root(eqs, th, method="hybr", tol=1e-13)
    th_star = root.x if root.success and np.abs(f(root.x)).max() < 1e-9 else th
    interior = bool(np.abs(f(th_star)).max() < 1e-7)
    pi = np.exp(log_softmax(th_star))
    p_star = float(pi @ alg.q)
    if not interior:
        return FixedPoint(p_star=p_star, theta_star=th_star, interior=False, stiffness=0.0, gap=math.nan,
                          symmetric=False, direction=np.zeros(a))
    jac = _jacobian(f, th_star)
    vals, vecs = np.linalg.eig(jac)
    grad_p = pi * (alg.q - p_star)
    weights = np.abs(grad_p @ vecs.real) / np.maximum(np.linalg.norm(vecs.real, axis=0), 1e-300)
    weights[np.abs(vals) < 1e-10] = -1.0  # the shift-invariance null mode never carries p
    i = int(np.argmax(weights))
    v = vecs[:, i].real
    k = -float(vals[i].real)
    interior = bool(k > 0 and _inside(p_star, alg.q))
    return FixedPoint(
        p_star=p_star,
        theta_star=th_star,
        interior=interior,
        stiffness=k if interior else 0.0,
        gap=math.nan,
        symmetric=False,
        direction=v / np.linalg.norm(v),
    )


def stiffness(
    spec: BanditSpec,
    beta: float,
    *,
    method: str = "derivative",
    eta: float = 0.01,
    steps: int = 200,
    delta: float = 1e-4,
) -> float:
    """Stiffness K of the bandit at its fixed point, measured independently of any sweep.

    ``method="derivative"``: the derivative of the expected update at ``p*`` (as in
    :func:`fixed_point`). ``method="relaxation"``: simulate the on-policy mean-field flow with a
    small learning rate, no momentum and no lag from ``theta* + delta * direction`` and read the
    decay per step ``e_{t+1}/e_t = 1 - eta K`` off the trajectory of ``e = p - p*``:
    ``K = (1 - (e_T / e_0)^(1/T)) / eta``.

    Parameters
    ----------
    spec : BanditSpec
    beta : float >= 0
    method : {"derivative", "relaxation"}
    eta : float > 0
        Learning rate of the relaxation run (small: the decay must be in the linear regime).
    steps : int >= 1
        Length of the relaxation run.
    delta : float > 0
        Size of the initial perturbation (logit units).

    Returns
    -------
    float
        K in logit units per unit learning rate (``a = eta K`` per optimizer step).

    Raises
    ------
    ParameterError
        Bad parameters, or no interior fixed point (``beta`` too small: nothing restores ``p``).

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> round(stiffness(spec, 1.0, method="relaxation"), 4)
    0.3932
    """
    check_spec(spec)
    check_choice("method", method, ("derivative", "relaxation"))
    fp = fixed_point(spec, beta)
    if not fp.interior:
        raise ParameterError(
            "beta",
            f"`beta` = {beta!r} leaves no interior fixed point (p runs to {fp.p_star:.3g}): no stiffness; "
            "increase beta",
        )
    if method == "derivative":
        return fp.stiffness
    eta = check_real("eta", eta, low=0.0, low_inclusive=False)
    steps = check_integer("steps", steps, low=1)
    delta = check_real("delta", delta, low=0.0, low_inclusive=False)
    # On-policy (refresh every step), no momentum: e_{t+1} = (1 - eta K) e_t in the linear regime.
    on_policy = spec.replace(lag="refresh", momentum="heavy_ball")
    start = fp.theta_star + delta * fp.direction
    run = simulate(on_policy, eta=eta, mu=0.0, k_ref=1, beta=beta, steps=steps, mean_field=True, theta0=start)
    e = run.p[0, 0] - fp.p_star
    return float((1.0 - (e[-1] / e[0]) ** (1.0 / steps)) / eta)


def beta_for_fixed_point(spec: BanditSpec, p_star) -> np.ndarray:
    """KL weight at which the on-policy mean-field flow has a fixed point at ``p_star``.

    Exact for two-level symmetric bandits (e.g. binary rewards, uniform reference). The flow is
    linear in ``beta``, ``F(x) = F_0(x) - beta D(x)`` with ``D = F_0 - F_1``, so the gap ``x`` of
    ``p_star`` is a fixed point for ``beta = F_0(x) / D(x)``. Two arms, uniform reference:
    ``beta = h_G(p) / logit(p)`` with ``h_G = alpha_+ - alpha_-`` the advantage pull
    (book chapter "The bandit: where the mean field is exact"). With std scaling at finite ``G`` the
    pull is bounded, ``h_G <= (G - 1) / sqrt(G)`` (the limit ``p -> 1``, a group with one failure), so
    every ``beta > 0`` has a fixed point, and for small ``beta``
    ``1 - p* ~ exp(-(G - 1) / (sqrt(G) beta))``; conversely the ``beta`` that puts ``1 - p*`` at a
    level ``eps`` is about ``(G - 1) / (sqrt(G) log(1/eps))``. Where ``beta`` is not monotone in
    ``p_star`` (std scaling at ``G -> inf``; at large finite ``G`` a narrow window near
    ``beta ~ 1.5``) a ``beta`` has several fixed points, and :func:`fixed_point` returns the first
    one the flow reaches from the initial policy.

    Parameters
    ----------
    spec : BanditSpec
        Two reward levels, reference logits constant within each level (its group size, baseline,
        scaling and KL estimator matter).
    p_star : float or array_like
        Expected reward at the fixed point, strictly between the two reward levels.

    Returns
    -------
    ndarray, shape of ``p_star``
        The KL weight (dimensionless). Negative where the advantage pull points away from
        ``p_star`` (no ``beta >= 0`` puts the fixed point there).

    Raises
    ------
    ParameterError
        A bandit that does not reduce to one gap; ``p_star`` not strictly between the reward levels.

    References
    ----------
    Our derivation; book chapter "The bandit: where the mean field is exact", section "What the std
    scaling, the clipped surrogate and the KL anchor change".

    Examples
    --------
    >>> spec = BanditSpec.binary(group_size=math.inf)
    >>> round(float(beta_for_fixed_point(spec, 0.7310585786)), 6)  # sigmoid(1): beta = 1
    1.0
    >>> std8 = BanditSpec.binary(group_size=8, scale="group_std")
    >>> round(float(beta_for_fixed_point(std8, 1 - 1e-6)), 3)
    0.179
    """
    ref = np.asarray(spec.ref_logits, dtype=float)
    hi = _symmetric_levels(spec.replace(init_logits=spec.ref_logits))
    if hi is None:
        raise ParameterError("reward_probs", "`reward_probs` must have two levels (and `ref_logits` be symmetric "
                                             "within each) for a one-dimensional flow")
    q = np.asarray(spec.reward_probs, dtype=float)
    q_lo, q_hi = float(q.min()), float(q.max())
    p = check_array("p_star", p_star, low=q_lo, high=q_hi)
    share = (p - q_lo) / (q_hi - q_lo)  # probability mass on the high-reward arms
    if np.any((share <= 0.0) | (share >= 1.0)):
        raise ParameterError("p_star", f"`p_star` must lie strictly between {q_lo:g} and {q_hi:g}")
    log_hi = float(np.logaddexp.reduce(ref[hi > 0]))
    log_lo = float(np.logaddexp.reduce(ref[hi == 0]))
    x = np.log(share) - np.log1p(-share) + log_lo - log_hi
    _, f = _flow(spec, 0.0)
    f0 = _gap_flow(f, hi, ref)(x)
    _, f = _flow(spec, 1.0)
    pull_kl = f0 - _gap_flow(f, hi, ref)(x)
    return f0 / pull_kl


def smallest_anchoring_beta(spec: BanditSpec, betas) -> float:
    """Smallest KL weight in ``betas`` whose fixed point :func:`fixed_point` counts as interior.

    A true threshold only where the advantage pull is unbounded: std scaling with ``G -> inf``, where
    the pull ``1/sqrt(p (1 - p))`` outruns the KL pull and no fixed point exists below about 1.51
    (book chapter "The bandit: where the mean field is exact"). At finite ``G`` the sample std bounds
    the pull by ``(G - 1) / sqrt(G)`` and every ``beta > 0`` has a fixed point (:func:`beta_for_fixed_point`);
    what this returns there is only where ``1 - p*`` crosses the interior tolerance of
    :class:`FixedPoint` (1e-6 of the reward range): about 0.18 at ``G = 8``. Use
    :func:`beta_for_fixed_point` with a level that matters instead.

    Parameters
    ----------
    spec : BanditSpec
    betas : array_like
        Candidate KL weights (>= 0), scanned in increasing order.

    Returns
    -------
    float
        The smallest value in ``betas`` with an interior fixed point, or ``inf`` if there is none.

    Raises
    ------
    ParameterError
        Negative or non-finite ``betas``.

    Examples
    --------
    >>> b = smallest_anchoring_beta(BanditSpec.binary(group_size=math.inf, scale="group_std"),
    ...                             np.arange(1.40, 1.60, 0.01))
    >>> round(b, 2)
    1.51
    """
    grid = np.sort(check_array("betas", betas, ndim=1, min_size=1, low=0.0))
    for b in grid:
        if fixed_point(spec, float(b)).interior:
            return float(b)
    return math.inf
