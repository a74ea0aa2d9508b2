"""Softmax policies over a finite set of arms: probabilities, sampling, score functions.

The shared building block of every bandit in the library (the single-prompt softmax bandit, the
contextual bandit of the group-size study, the U-statistic estimators). A policy over A arms is
``pi = softmax(theta)``; its score function (the gradient of the log-probability of the sampled
arm with respect to the logits) is

    W(a) = d log pi_a / d theta = e_a - pi,

a vector with E_{a ~ pi}[W] = 0 and E||W||^2 = 1 - ||pi||^2.

Every function is vectorised over leading axes (prompts, configurations, seeds): the arm axis is
always the last one.

Probability vectors given by the caller must sum to 1 within :data:`PROBABILITY_SUM_ATOL`
(absolute, per vector); they are then renormalised exactly, so float32 softmax outputs are
accepted and sampling sees an exact distribution.
"""

from __future__ import annotations

import numpy as np

from .errors import ParameterError
from .validation import check_array, check_integer

__all__ = [
    "PROBABILITY_SUM_ATOL",
    "softmax",
    "log_softmax",
    "check_probabilities",
    "sample_categorical",
    "score",
    "arm_counts",
]

#: Largest allowed |sum(p) - 1| of a caller's probability vector (absolute, per vector). Loose
#: enough for float32 softmax outputs over thousands of arms (rounding ~1e-7 per entry), tight
#: enough to catch a vector that is not a distribution at all (a missing normalisation).
PROBABILITY_SUM_ATOL = 1e-5
#: Up to this many arms, :func:`log_softmax` reduces the arm axis slice by slice (faster).
_FEW_ARMS = 32


def _check_logits(logits) -> np.ndarray:
    z = check_array("logits", logits, min_size=1)
    if z.ndim == 0:
        raise ParameterError("logits", "`logits` must have an arm axis (shape (..., A)); got a scalar")
    return z


def softmax(logits, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax ``exp(theta - max) / sum exp(theta - max)``.

    Parameters
    ----------
    logits : array_like, shape (..., A)
        Logits theta (nats); any finite values.
    axis : int
        The arm axis (default: last).

    Returns
    -------
    ndarray, shape (..., A)
        Probabilities (float64) that sum to 1 along ``axis``.

    Raises
    ------
    ParameterError
        If ``logits`` is empty or contains NaN/inf.

    Examples
    --------
    >>> softmax([0.0, 0.0]).tolist()
    [0.5, 0.5]
    >>> softmax([[0.0, 1000.0]]).round(6).tolist()
    [[0.0, 1.0]]
    """
    z = _check_logits(logits)
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(logits, axis: int = -1) -> np.ndarray:
    """Numerically stable log-softmax ``theta - max - log sum exp(theta - max)``.

    Exact where :func:`softmax` underflows: an arm 800 nats below the best has probability 0.0
    in float64 but log-probability -800 here, which is what importance ratios and KL terms need.

    Parameters
    ----------
    logits, axis
        As in :func:`softmax` (the same :class:`ParameterError` on a scalar, empty or non-finite input).

    Returns
    -------
    ndarray, shape (..., A)
        Log-probabilities (nats, float64, all <= 0); ``exp`` of them sums to 1 along ``axis``.

    Examples
    --------
    >>> log_softmax([0.0, 0.0]).round(6).tolist()
    [-0.693147, -0.693147]
    >>> log_softmax([0.0, -800.0]).tolist()
    [0.0, -800.0]
    """
    z = _check_logits(logits)
    if axis in (-1, z.ndim - 1) and z.shape[-1] <= _FEW_ARMS and z.ndim > 1:
        # numpy reduces a short last axis row by row (slow for many rows): with few arms, take
        # the max over slices and the sum as a product with ones (10-20x faster, same result).
        m = z[..., 0]
        for i in range(1, z.shape[-1]):
            m = np.maximum(m, z[..., i])
        z = z - m[..., None]
        return z - np.log(np.exp(z) @ np.ones(z.shape[-1]))[..., None]
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def check_probabilities(name: str, probs, *, atol: float = PROBABILITY_SUM_ATOL) -> np.ndarray:
    """Validate probability vectors on the last axis and renormalise them exactly.

    Parameters
    ----------
    name : str
        Parameter name used in error messages (``"probs"``).
    probs : array_like, shape (..., A)
        Non-negative entries; each vector along the last axis must sum to 1 within ``atol``.
    atol : float
        Allowed absolute deviation of each sum from 1 (default :data:`PROBABILITY_SUM_ATOL`).

    Returns
    -------
    ndarray, shape (..., A)
        float64 copy, divided by its sums (so they are 1 to machine precision).

    Raises
    ------
    ParameterError
        Scalar input, no arms, NaN/inf, negative entries, or a sum off 1 by more than ``atol``
        (the message gives the worst sum).

    Examples
    --------
    >>> check_probabilities("probs", [0.25, 0.75]).tolist()
    [0.25, 0.75]
    >>> check_probabilities("probs", [0.5, 0.6])
    Traceback (most recent call last):
    ...
    grpo_core.errors.ParameterError: `probs` must sum to 1 along its last axis (tolerance 1e-05); a sum is 1.1
    """
    p = check_array(name, probs, min_size=1, low=0.0)
    if p.ndim == 0:
        raise ParameterError(name, f"`{name}` must have an arm axis (shape (..., A)); got a scalar")
    sums = p.sum(axis=-1, keepdims=True)
    off = np.abs(sums - 1.0)
    if off.size and float(off.max()) > atol:
        worst = float(sums.reshape(-1)[int(np.argmax(off))])
        raise ParameterError(
            name, f"`{name}` must sum to 1 along its last axis (tolerance {atol:g}); a sum is {worst:.6g}"
        )
    return p / sums


def sample_categorical(probs, size: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``size`` i.i.d. arms from each categorical distribution, vectorised over rows.

    Inverse-CDF sampling with one ``searchsorted`` over all rows at once (row r's CDF is shifted
    by r, so the rows do not mix): O(size * log A) per row, no Python loop.

    Parameters
    ----------
    probs : array_like, shape (..., A)
        Probability vectors (checked with :func:`check_probabilities`).
    size : int, >= 1
        Samples per distribution (the group size G).
    rng : numpy.random.Generator
        Source of randomness (seeded by the caller).

    Returns
    -------
    ndarray of int64, shape (..., size)
        Arm indices in [0, A).

    Raises
    ------
    ParameterError
        Invalid ``probs`` or ``size`` < 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = sample_categorical([[0.0, 1.0], [1.0, 0.0]], 3, rng)
    >>> a.tolist()
    [[1, 1, 1], [0, 0, 0]]
    """
    p = check_probabilities("probs", probs)
    g = check_integer("size", size, low=1)
    lead, n_arms = p.shape[:-1], p.shape[-1]
    rows = int(np.prod(lead, dtype=np.int64))
    cdf = np.cumsum(p.reshape(rows, n_arms), axis=-1)
    cdf[:, -1] = 1.0
    offset = np.arange(rows, dtype=float)[:, None]
    u = rng.random((rows, g))
    # An arm with zero probability has an empty CDF step and can never be hit: searchsorted
    # with side="right" returns the first index whose CDF exceeds u.
    idx = np.searchsorted((cdf + offset).ravel(), (u + offset).ravel(), side="right")
    arms = idx.reshape(rows, g) - np.arange(rows)[:, None] * n_arms
    np.clip(arms, 0, n_arms - 1, out=arms)
    return arms.reshape(*lead, g)


def score(actions, probs) -> np.ndarray:
    """Score function W = e_a - pi of a softmax policy, for each sampled arm.

    Parameters
    ----------
    actions : array_like of int, shape (..., G)
        Sampled arm indices in [0, A).
    probs : array_like, shape (..., A)
        The policy that sampled them (leading axes match ``actions``'s).

    Returns
    -------
    ndarray, shape (..., G, A)
        ``W[..., i, :] = onehot(actions[..., i]) - probs``: the gradient of log pi(a_i) with
        respect to the logits.

    Raises
    ------
    ParameterError
        Invalid ``probs``, non-integer actions, or actions outside [0, A).

    Examples
    --------
    >>> score([0, 1], [0.25, 0.75]).tolist()
    [[0.75, -0.75], [-0.25, 0.25]]
    """
    p = check_probabilities("probs", probs)
    a = _check_actions(actions, p.shape[-1])
    w = -np.broadcast_to(p[..., None, :], (*a.shape, p.shape[-1])).copy()
    np.put_along_axis(w, a[..., None], np.take_along_axis(w, a[..., None], axis=-1) + 1.0, axis=-1)
    return w


def arm_counts(actions, num_arms: int, weights=None) -> np.ndarray:
    """How often each arm was drawn in each group (optionally weighted), vectorised.

    Parameters
    ----------
    actions : array_like of int, shape (..., G)
        Arm indices in [0, A).
    num_arms : int, >= 1
        A.
    weights : array_like, shape (..., G), optional
        Per-sample weights (e.g. advantages): the result is then ``sum_i w_i onehot(a_i)``.

    Returns
    -------
    ndarray, shape (..., A)
        Counts (float64), or weighted sums.

    Raises
    ------
    ParameterError
        Non-integer or out-of-range actions, ``num_arms`` < 1, weights of another shape.

    Examples
    --------
    >>> arm_counts([[0, 0, 2]], 3).tolist()
    [[2.0, 0.0, 1.0]]
    """
    k = check_integer("num_arms", num_arms, low=1)
    a = _check_actions(actions, k)
    if weights is None:
        w = np.ones(a.shape)
    else:
        w = check_array("weights", weights)
        if w.shape != a.shape:
            raise ParameterError("weights", f"`weights` must have the shape of `actions` {a.shape}; got {w.shape}")
    lead = a.shape[:-1]
    rows = int(np.prod(lead, dtype=np.int64))
    flat = (a.reshape(rows, -1) + np.arange(rows)[:, None] * k).ravel()
    out = np.bincount(flat, weights=w.reshape(-1), minlength=rows * k)
    return out.reshape(*lead, k)


def _check_actions(actions, num_arms: int) -> np.ndarray:
    a = np.asarray(actions)
    if a.ndim < 1:
        raise ParameterError("actions", "`actions` must have a group axis (shape (..., G))")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        af = check_array("actions", a)
        if not np.all(af == np.round(af)):
            raise ParameterError("actions", "`actions` must be integer arm indices")
        a = af.astype(np.int64)
    a = a.astype(np.int64, copy=False)
    if a.size and (a.min() < 0 or a.max() >= num_arms):
        raise ParameterError("actions", f"`actions` must lie in [0, {num_arms}); got {int(a.min())}..{int(a.max())}")
    return a
