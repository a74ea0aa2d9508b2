"""Learning-rate time: the model's clock under warm-up and decay schedules.

The oscillator and the beta = 0 law are written per optimizer step with a constant ``eta``; with a
schedule ``eta_t`` (TRL's ``lr_scheduler_type``, ``warmup_steps`` / ``warmup_ratio``) the mean-field
flow ``dx/dtau = F(x)`` is driven by the learning-rate time

    tau_t = sum_{s < t} eta_s                                     (our derivation; the flow limit)

so a scheduled run and a constant-rate run collapse onto one curve in ``tau`` as long as each step
is small (the flow limit: ``eta_t K`` small, no momentum ringing). Under Adam the same holds with
``eta_t / sqrt(v_t)`` per coordinate: the logged ``learning_rate`` gives ``tau`` up to the
preconditioner, which is the part a fit absorbs into its rate. Checked on the bandit
(tests/test_model_schedule.py): a warm-up + cosine run against the constant-rate run, in ``tau``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_choice, check_integer, check_real

__all__ = ["SCHEDULES", "lr_time", "lr_schedule", "warmup_length"]

SCHEDULES = ("constant", "linear", "cosine")


def lr_time(learning_rate: Any, steps: Any = None) -> np.ndarray:
    """Cumulative learning rate before each logged row: the model's time (our derivation).

    Parameters
    ----------
    learning_rate : array_like, shape (n,), > 0
        The logged ``learning_rate`` (TRL logs the rate of the step just taken). NaN rows (a log
        without the key on that row) are filled from the previous logged value.
    steps : array_like of int, shape (n,), optional
        The logged optimizer ``step`` of each row (increasing). Rows may be several steps apart
        (``logging_steps`` > 1): the rate of a row is taken to hold over the steps since the previous
        row. Default: one row per step, ``1, 2, ..., n``.

    Returns
    -------
    ndarray, shape (n,)
        ``tau`` at each row: the sum of the learning rates of the steps up to and including that
        row's step (``tau = eta * step`` for a constant rate).

    Raises
    ------
    DataError / ParameterError
        A rate <= 0 or all NaN, steps that are not increasing or of another length.

    Examples
    --------
    >>> lr_time([1e-3, 1e-3, 2e-3]).tolist()
    [0.001, 0.002, 0.004]
    >>> lr_time([1e-3, 2e-3], steps=[10, 20]).tolist()
    [0.01, 0.03]
    """
    lr = check_array("learning_rate", learning_rate, ndim=1, min_size=1, finite=False)
    good = np.isfinite(lr)
    if not np.any(good):
        raise ParameterError("learning_rate", "`learning_rate` has no finite value")
    idx = np.where(good, np.arange(lr.size), 0)
    idx = np.maximum.accumulate(idx)
    filled = np.where(good[idx], lr[idx], lr[good][0])
    if np.any(filled <= 0):
        raise ParameterError("learning_rate", f"`learning_rate` must be > 0; min is {float(filled.min())!r}")
    if steps is None:
        widths = np.ones(lr.size)
    else:
        st = check_array("steps", steps, ndim=1, min_size=1)
        if st.size != lr.size:
            raise ParameterError("steps", f"`steps` must have one entry per row ({lr.size}); got {st.size}")
        widths = np.diff(np.r_[0.0, st])
        if np.any(widths <= 0):
            raise ParameterError("steps", "`steps` must be increasing and > 0")
    return np.cumsum(filled * widths)


def warmup_length(learning_rate: Any, steps: Any = None, *, reach: float = 0.99) -> float:
    """Steps a logged learning rate takes to warm up: from the first logged step to the first step
    whose rate is at least ``reach`` times the largest logged rate (0 when the log starts there).

    A slow start of the reward that lasts about as long is the schedule's, not the optimizer's
    inertia: in learning-rate time (:func:`lr_time`) it goes away.

    Parameters
    ----------
    learning_rate : array_like, shape (n,)
        The logged ``learning_rate``; NaN rows are ignored.
    steps : array_like, shape (n,), optional
        The logged step of each row (default ``1, ..., n``).
    reach : float in (0, 1]
        Share of the peak rate that ends the warm-up.

    Returns
    -------
    float
        Steps (0.0 without a warm-up).

    Raises
    ------
    ParameterError
        No finite positive rate, ``steps`` of another length, or ``reach`` outside (0, 1].

    Examples
    --------
    >>> warmup_length([1e-4, 5e-4, 1e-3, 1e-3, 8e-4], steps=[1, 6, 11, 16, 21])
    10.0
    >>> warmup_length([1e-3, 1e-3])
    0.0
    """
    reach = check_real("reach", reach, low=0.0, high=1.0, low_inclusive=False)
    lr = check_array("learning_rate", learning_rate, ndim=1, min_size=1, finite=False)
    st = np.arange(1.0, lr.size + 1.0) if steps is None else check_array("steps", steps, ndim=1, min_size=1)
    if st.size != lr.size:
        raise ParameterError("steps", f"`steps` must have one entry per row ({lr.size}); got {st.size}")
    good = np.isfinite(lr)
    if not np.any(good) or not np.nanmax(lr) > 0:
        raise ParameterError("learning_rate", "`learning_rate` has no finite positive value")
    lr, st = lr[good], st[good]
    first = int(np.argmax(lr >= reach * lr.max()))
    return float(st[first] - st[0])


def lr_schedule(steps: int, kind: str = "constant", warmup_steps: int = 0, min_ratio: float = 0.0) -> np.ndarray:
    """Per-step learning-rate multiplier in the transformers convention (linear warm-up, then decay).

    ``multiplier[t]`` for optimizer step ``t = 0 .. steps-1``: ``(t + 1)/warmup_steps`` during the
    warm-up, then ``1`` (constant), or a linear or half-cosine decay from 1 at ``t = warmup_steps``
    towards ``min_ratio`` at ``t = steps`` (the shape of transformers' ``get_*_schedule_with_warmup``;
    the exact off-by-one of a given release does not matter for :func:`lr_time`, which uses the logged
    rates).

    Raises
    ------
    ParameterError
        ``steps`` < 1, ``warmup_steps`` outside [0, steps), unknown ``kind``, ``min_ratio`` outside [0, 1).

    Examples
    --------
    >>> lr_schedule(4, "linear", warmup_steps=2).round(3).tolist()
    [0.5, 1.0, 1.0, 0.5]
    """
    n = check_integer("steps", steps, low=1)
    w = check_integer("warmup_steps", warmup_steps, low=0, high=n - 1)
    check_choice("kind", kind, SCHEDULES)
    lo = check_real("min_ratio", min_ratio, low=0.0, high=1.0, high_inclusive=False)
    t = np.arange(n, dtype=float)
    frac = np.clip((t - w) / max(n - w, 1), 0.0, 1.0)
    decay = {"constant": np.ones(n), "linear": 1.0 - frac, "cosine": 0.5 * (1.0 + np.cos(np.pi * frac))}[kind]
    out = lo + (1.0 - lo) * decay
    if w:
        out = np.where(t < w, (t + 1.0) / w, out)
    return np.maximum(out, 1e-12)
