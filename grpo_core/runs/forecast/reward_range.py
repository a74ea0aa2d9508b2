"""The range a reward forecast is shown within: a declared ``reward_range``, or [0, 1] for a 0/1 reward."""

from __future__ import annotations

import math

import numpy as np

from ...errors import ParameterError

__all__ = ["check_reward_range", "shown_range", "range_text", "outside_range"]


def check_reward_range(reward_range, values: np.ndarray | None = None,
                       source: str = "the log") -> tuple[float, float] | None:
    """Validate a declared reward range ``(low, high)``: the least and the most a step's mean reward can be
    (a composite reward's sum of the reward functions' minima and maxima, e.g. ``(0, 1.5)`` for a format
    reward of 0.5 and a correctness reward of 1). Our rule.

    Parameters
    ----------
    reward_range : sequence of two floats, or None
        ``low < high``, both finite. ``None`` is returned as ``None``.
    values : numpy.ndarray, optional
        The logged rewards, shape ``(n,)``: each finite one must lie in the range (to 1e-9 of its width).
    source : str
        The log's name, for the message.

    Returns
    -------
    tuple of two floats, or None

    Raises
    ------
    ParameterError
        ``reward_range`` not two finite numbers with ``low < high``, or a logged reward outside it (the
        declared range is then wrong, and clipping to it would hide data).

    Examples
    --------
    >>> check_reward_range([0, 1.5])
    (0.0, 1.5)
    """
    if reward_range is None:
        return None
    try:
        lo, hi = (float(v) for v in reward_range)
    except (TypeError, ValueError):
        raise ParameterError("reward_range", "`reward_range` must be two numbers (low, high), the least and the "
                             f"most a step's mean reward can be; got {reward_range!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError("reward_range", f"`reward_range` must be finite with low < high; got ({lo:g}, {hi:g})")
    if values is not None:
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v)]
        tol = 1e-9 * (hi - lo)
        if v.size and (v.min() < lo - tol or v.max() > hi + tol):
            raise ParameterError("reward_range", f"`reward_range` ({lo:g}, {hi:g}) does not hold the reward of "
                                 f"{source}: it runs from {v.min():.6g} to {v.max():.6g}")
    return lo, hi


def shown_range(values: np.ndarray, binary_reward: bool | None = None,
                reward_range: tuple[float, float] | None = None) -> tuple[float, float, str] | None:
    """The range a reward forecast and its band are shown within, with its name: the declared
    ``reward_range`` ("the reward's declared range"), else ``[0, 1]`` for a reward every logged value of
    which lies there unless ``binary_reward`` is False ("the range of a 0/1 reward"), else ``None``.
    A step's mean reward cannot leave the range its reward functions allow, so a forecast past it is
    shown at its edge (the forecaster's own numbers are kept beside it)."""
    if reward_range is not None:
        return float(reward_range[0]), float(reward_range[1]), "the reward's declared range"
    from ..diagnostics.series import _is_binary_compatible  # here: the diagnostics import this room

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if binary_reward is not False and _is_binary_compatible(v):
        return 0.0, 1.0, "the range of a 0/1 reward"
    return None


def outside_range(v: float, rng: tuple[float, float, str] | None) -> bool:
    """Whether ``v`` lies outside the range ``rng`` (by more than 1e-9 of its width); False without one."""
    return rng is not None and not (rng[0] - 1e-9 * (rng[1] - rng[0]) <= v <= rng[1] + 1e-9 * (rng[1] - rng[0]))


def range_text(rng: tuple[float, float, str] | list | None) -> str:
    """``"[0, 1], the range of a 0/1 reward"`` for a :func:`shown_range`; ``""`` for ``None``."""
    return "" if rng is None else f"[{float(rng[0]):g}, {float(rng[1]):g}], {rng[2]}"
