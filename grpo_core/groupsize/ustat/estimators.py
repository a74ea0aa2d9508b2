r"""The GRPO policy gradient as a U-statistic: the per-group estimators.

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
orthogonal degenerate part ``U - oracle`` (:func:`hoeffding_parts`; their exact variances are in
:mod:`grpo_core.groupsize.ustat.moments`).

Everything here is vectorised over leading axes (prompts, configurations, seeds).

References
----------
Hoeffding, W. (1948), "A class of statistics with asymptotically normal distribution", Ann. Math.
Statist. 19.
"Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025),
Lemma 1 (U-statistic form).
"""

from __future__ import annotations

import numpy as np

from ...errors import ParameterError
from ...grpo import DEFAULT_SPREAD_RTOL, DEFAULT_STD_EPS, group_advantages
from ...validation import check_array, check_choice

#: Every per-group estimator, in the order the book plots them.
ESTIMATORS = ("vanilla", "mean", "leave_one_out", "oracle", "std")


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
        raise ParameterError(
            "rewards", f"`rewards` has an empty group (shape {z.shape}); every group needs >= 1 completion"
        )
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
            raise ParameterError(
                "value", f"`value` must broadcast to the group shape {z.shape[:-1]}; got {v.shape}"
            ) from None
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
        The kernel's value, an unbiased estimate of the gradient from the pair.

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
    return _kernel(wi, zi, wj, zj)


def _kernel(wi: np.ndarray, zi: np.ndarray, wj: np.ndarray, zj: np.ndarray) -> np.ndarray:
    """:func:`u_kernel` without the checks: ``(W_i - W_j)(Z_i - Z_j) / 2``, shape (..., D)."""
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
    h = _kernel(w[..., i, :], z[..., i], w[..., j, :], z[..., j])
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
