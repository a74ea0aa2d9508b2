"""Input validation shared by every public function.

Each checker returns the cleaned value (a Python ``float``/``int`` or an ``ndarray``) or raises
:class:`~grpo_core.errors.ParameterError` with a message that names the parameter in backticks,
states the allowed range and repeats the value received, e.g.::

    `mu` must be a finite number in [0, 1); got 1.0

NaN and infinities are refused everywhere (a silent NaN is the worst failure a numerical library
can have). Booleans are refused where a number is expected, because ``True`` is almost always a
slip for something else.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .errors import ParameterError

__all__ = [
    "check_real",
    "check_integer",
    "check_choice",
    "check_array",
    "check_broadcast",
    "describe_range",
]


def describe_range(
    low: float | None,
    high: float | None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> str:
    """Human-readable range: ``"> 0"``, ``"in [0, 1)"``, ``">= 1"``, ``"any"``."""
    if low is None and high is None:
        return "any finite value"
    if high is None:
        return f"{'>=' if low_inclusive else '>'} {_fmt(low)}"
    if low is None:
        return f"{'<=' if high_inclusive else '<'} {_fmt(high)}"
    return f"in {'[' if low_inclusive else '('}{_fmt(low)}, {_fmt(high)}{']' if high_inclusive else ')'}"


def _fmt(x: float | None) -> str:
    if x is None:
        return ""
    if float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def _to_float(name: str, value: Any, kind: str) -> float:
    if isinstance(value, bool | np.bool_) or value is None:
        raise ParameterError(name, f"`{name}` must be a finite {kind}; got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ParameterError(name, f"`{name}` must be a finite {kind}; got {value!r}") from None
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise ParameterError(name, f"`{name}` must be a finite {kind}; got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ParameterError(name, f"`{name}` must be a finite {kind}; got {out!r}")
    return out


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Validate a finite real number inside an interval.

    Parameters
    ----------
    name : str
        Parameter name used in the message (``"eta"``).
    value : number or numeric string
        The value to check. Strings such as ``"nan"`` are parsed, then refused if not finite.
    low, high : float, optional
        Bounds; ``None`` means unbounded on that side.
    low_inclusive, high_inclusive : bool
        Whether the bounds are allowed.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If ``value`` is not a finite number or lies outside the interval.
    """
    rng = describe_range(low, high, low_inclusive, high_inclusive)
    x = _to_float(name, value, f"number {rng}" if rng != "any finite value" else "number")
    too_low = low is not None and (x < low or (x == low and not low_inclusive))
    too_high = high is not None and (x > high or (x == high and not high_inclusive))
    if too_low or too_high:
        raise ParameterError(name, f"`{name}` must be a finite number {rng}; got {value!r}")
    return x


def check_integer(
    name: str,
    value: Any,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int:
    """Validate an integer (integral floats such as ``4.0`` are accepted) inside ``[low, high]``.

    Raises
    ------
    ParameterError
        If ``value`` is not a whole number or lies outside the range.
    """
    what = "integer" if low is None and high is None else f"integer {describe_range(low, high)}"
    x = _to_float(name, value, what)
    shown = repr(value) if len(repr(value)) <= 40 else f"{float(x):.4g}"  # not 300 digits of an int
    if not float(x).is_integer():
        raise ParameterError(name, f"`{name}` must be an {what}; got {shown}")
    n = int(x)
    if (low is not None and n < low) or (high is not None and n > high):
        raise ParameterError(name, f"`{name}` must be an {what}; got {shown}")
    return n


def check_n_boot(name: str, value: Any) -> int:
    """Validate a number of bootstrap replicates: 0 (no bootstrap) or at least 2 (one replicate has no
    spread: its band would be NaN).

    Raises
    ------
    ParameterError
        If ``value`` is not a whole number, is negative, or is 1.
    """
    n = check_integer(name, value, low=0)
    if n == 1:
        raise ParameterError(name, f"`{name}` must be 0 (no bootstrap) or at least 2 (one replicate has no "
                                   f"spread to make a band from); got {value!r}")
    return n


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Validate that ``value`` is one of ``choices``.

    Raises
    ------
    ParameterError
        If it is not, listing the allowed values.
    """
    options: Sequence[str] = tuple(choices)
    try:  # an array compares element-wise: not a choice (and never a numpy truth-value error)
        known = not isinstance(value, np.ndarray) and bool(value in options)
    except (TypeError, ValueError):
        known = False
    if not known:
        allowed = ", ".join(repr(c) for c in options)
        raise ParameterError(name, f"`{name}` must be one of {allowed}; got {value!r}")
    return value


def check_array(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    min_size: int = 0,
    finite: bool = True,
    low: float | None = None,
    high: float | None = None,
    dtype: Any = float,
) -> np.ndarray:
    """Validate an array-like of numbers.

    Parameters
    ----------
    name : str
        Parameter name used in the message.
    value : array_like
    ndim : int or tuple of int, optional
        Allowed number(s) of dimensions.
    min_size : int
        Minimum number of elements along the last axis.
    finite : bool
        Refuse NaN and infinities.
    low, high : float, optional
        Inclusive bounds every element must satisfy.
    dtype : numpy dtype
        The returned array's dtype.

    Returns
    -------
    ndarray
        ``value`` as an array of ``dtype``.

    Raises
    ------
    ParameterError
        Wrong dimensions, too few elements, non-numeric, non-finite or out-of-range entries.
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise ParameterError(name, f"`{name}` must be an array of numbers; got {type(value).__name__}") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ParameterError(
                name, f"`{name}` must have {' or '.join(map(str, allowed))} dimension(s); got shape {arr.shape}"
            )
    n = arr.shape[-1] if arr.ndim else 1
    if n < min_size:
        raise ParameterError(name, f"`{name}` needs at least {min_size} values; got {n}")
    if finite and arr.size and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ParameterError(name, f"`{name}` must be finite; {bad} NaN or infinite value(s) found")
    if low is not None and arr.size and np.nanmin(arr) < low:
        raise ParameterError(name, f"`{name}` must be >= {_fmt(low)}; min is {float(np.nanmin(arr))!r}")
    if high is not None and arr.size and np.nanmax(arr) > high:
        raise ParameterError(name, f"`{name}` must be <= {_fmt(high)}; max is {float(np.nanmax(arr))!r}")
    return arr


def check_broadcast(**arrays: np.ndarray) -> list[np.ndarray]:
    """Broadcast the named arrays together (numpy rules), or refuse their shapes by name.

    Raises
    ------
    ParameterError
        Naming the first array, e.g. ```mu` and `k_ref` must broadcast together; got shapes (2,), (3,)``.

    Examples
    --------
    >>> [a.shape for a in check_broadcast(x=np.zeros((2, 1)), y=np.zeros(3))]
    [(2, 3), (2, 3)]
    """
    try:
        return np.broadcast_arrays(*arrays.values())
    except ValueError:
        names = list(arrays)
        listed = ", ".join(f"`{n}`" for n in names[:-1]) + f" and `{names[-1]}`"
        shapes = ", ".join(str(np.shape(a)) for a in arrays.values())
        raise ParameterError(names[0], f"{listed} must broadcast together; got shapes {shapes}") from None
