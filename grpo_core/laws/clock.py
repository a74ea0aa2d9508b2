"""The learning-rate clock: a run's time as the cumulative learning rate, in steps at the peak rate.

The model's update is ``eta_t`` times a gradient (book chapter "From update rule to oscillator"), so
a schedule's warm-up stretches the early steps' time and its decay compresses the late steps'. The
reward laws are fitted in this clock by the end-of-run forecaster (:mod:`grpo_core.laws.plateau`),
the implied curvature (:mod:`grpo_core.runs.curvature`), the slow-start and anchorless fits and the
probe check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataError, ParameterError

__all__ = ["learning_rate_clock"]


def learning_rate_clock(steps: Any, lr_steps: Any, lr_values: Any, *, grid: Any = None,
                        floor: float = 0.0) -> tuple[np.ndarray, float]:
    """Cumulative learning rate at ``steps``, in equivalent steps at the peak rate.

    The logged rate is interpolated linearly between its steps (held at its first and last value
    outside them) onto a grid and summed with the rate at the right end of each grid interval:
    ``s(g_i) = sum_{j <= i} eta(g_j) (g_j - g_{j-1}) / eta_ref`` (``g_{-1} = 0``), then read at
    ``steps`` by linear interpolation. A constant rate gives ``s = steps``.

    Parameters
    ----------
    steps : array_like, shape (n,)
        Steps where the clock is read (>= 0).
    lr_steps, lr_values : array_like, shape (m,)
        The logged learning rate: its steps and values (``m >= 1``, values ``>= 0``, some ``> 0``;
        non-finite entries are skipped as steps the log did not record).
    grid : array_like, shape (k,), optional
        Increasing steps the rate is summed over. Default: every optimizer step ``1 .. max(steps)``
        (each step's rate counted once). The end-of-run forecaster passes the union of its points,
        which are bin means between steps and a far horizon.
    floor : float, >= 0
        Added to the rate on ``grid``, as a fraction of the peak, so the clock keeps rising where the
        rate is 0 (only with ``grid``; the forecaster uses 1e-12).

    Returns
    -------
    clock : ndarray, shape (n,)
    eta_ref : float
        The peak logged rate.

    Raises
    ------
    ParameterError
        ``lr_steps`` and ``lr_values`` not 1-d of one shape, a negative rate, ``grid`` not 1-d and
        increasing, ``floor`` negative, or ``steps`` not finite.
    DataError
        No positive learning rate logged.

    Examples
    --------
    >>> clock, peak = learning_rate_clock([1, 2, 3, 4], [1, 4], [0.0, 3e-6])
    >>> clock.round(3).tolist(), peak
    ([0.0, 0.333, 1.0, 2.0], 3e-06)
    """
    t = np.asarray(steps, dtype=float)
    ls, lv = np.asarray(lr_steps, dtype=float), np.asarray(lr_values, dtype=float)
    if ls.shape != lv.shape or ls.ndim != 1:
        raise ParameterError("lr_values", "`lr_steps` and `lr_values` must be 1-d of one shape; got "
                                          f"{ls.shape} and {lv.shape}")
    if not np.all(np.isfinite(t)):
        raise ParameterError("steps", "`steps` must be finite")
    ok = np.isfinite(ls) & np.isfinite(lv)
    ls, lv = ls[ok], lv[ok]
    if np.any(lv < 0):
        raise ParameterError("lr_values", f"`lr_values` must be >= 0 (learning rates); got {float(lv.min()):g}")
    if not float(floor) >= 0:
        raise ParameterError("floor", f"`floor` must be >= 0; got {floor!r}")
    if lv.size == 0 or float(lv.max()) <= 0:
        raise DataError("the log's `learning_rate` has no positive value: no learning-rate clock")
    eta_ref = float(lv.max())
    if grid is None:
        grid = np.arange(1, int(max(1.0, t.max(initial=1.0))) + 1, dtype=float)
        cum = np.concatenate([[0.0], np.cumsum(np.interp(grid, ls, lv) / eta_ref)])
        return np.interp(t, np.arange(cum.size, dtype=float), cum), eta_ref
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or not grid.size or np.any(np.diff(grid) <= 0) or not np.all(np.isfinite(grid)):
        raise ParameterError("grid", "`grid` must be a non-empty, finite, increasing 1-d array of steps")
    rate = np.maximum(np.interp(grid, ls, lv), 0.0) + float(floor) * eta_ref
    cum = np.cumsum(rate * np.diff(grid, prepend=0.0)) / float(np.max(rate))
    return np.interp(t, grid, cum), eta_ref
