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
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
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
    "check_flag",
    "check_seed",
    "check_path",
    "check_names",
    "check_instance",
    "check_memory",
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
    if isinstance(x, numbers.Integral) and abs(int(x)) >= 10 ** 16:  # 10**400 has no float
        digits = str(abs(int(x)))
        return f"{'-' if x < 0 else ''}{digits[0]}.{digits[1:4]}e+{len(digits) - 1}"
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
    try:
        out = float(value)
    except OverflowError:  # an int beyond the float range (10**400): not a finite number
        raise ParameterError(name, f"`{name}` must be a finite {kind}; got an integer of "
                                   f"{len(str(abs(int(value))))} digits (beyond the float range, 1.8e308)") from None
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
    if isinstance(value, bytes) or value is None:  # None would read as one NaN, bytes as a number
        raise ParameterError(name, f"`{name}` must be an array of numbers; got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=dtype)
    except OverflowError:
        raise ParameterError(name, f"`{name}` must be an array of finite numbers; got an integer beyond the "
                                   "float range (1.8e308)") from None
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


def check_flag(name: str, value: Any) -> bool:
    """Validate a switch: ``True`` or ``False`` (NumPy's booleans too).

    Anything else (``1``, ``"yes"``, a NaN, a DataFrame) is refused rather than read by its truth
    value, which would turn ``"False"`` into ``True``.

    Raises
    ------
    ParameterError
        If ``value`` is not a boolean.
    """
    if not isinstance(value, bool | np.bool_):
        raise ParameterError(name, f"`{name}` must be True or False; got {_short(value)}")
    return bool(value)


#: The largest seed accepted: NumPy's generators take any non-negative integer; beyond 2**128 the
#: extra digits add nothing to the 128-bit state they seed.
MAX_SEED = 2 ** 128 - 1


def check_seed(name: str, value: Any) -> int:
    """Validate a random seed: an integer in [0, 2**128).

    Raises
    ------
    ParameterError
        If ``value`` is not a whole number in that range.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        if 0 <= int(value) <= MAX_SEED:
            return int(value)
        raise ParameterError(name, f"`{name}` must be an integer in [0, 2**128); got {_short(value)}")
    return check_integer(name, value, low=0, high=2 ** 53)  # a float seed: exact only up to 2**53


def _short(value: Any) -> str:
    """``repr`` of a value for a message, at most 60 characters (a DataFrame by its type and shape)."""
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, np.generic) and len(shape):
        return f"a {type(value).__name__} of shape {tuple(shape)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_path(name: str, value: Any, *, what: str = "a file path") -> Path:
    """Validate a file-system path: a ``str`` or ``os.PathLike`` (``pathlib.Path``), not empty.

    Bytes, ``None``, numbers and tables in memory are refused (a DataFrame is data, not where it lies).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        If ``value`` is not a path, naming ``name`` and what it should be.
    """
    if isinstance(value, str | os.PathLike) and not isinstance(value, bytes):
        try:
            p = Path(value)
        except TypeError:  # a PathLike whose __fspath__ returns bytes
            p = None
        if p is not None and str(value).strip():
            return p
        if p is not None:
            raise ParameterError(name, f"`{name}` must be {what} (str or pathlib.Path); got an empty string")
    hint = " (a table in memory is not a path)" if hasattr(value, "columns") else ""
    raise ParameterError(name, f"`{name}` must be {what} (str or pathlib.Path); got {type(value).__name__}{hint}")


def check_names(name: str, value: Any, *, choices: Iterable[str] | None = None, min_size: int = 0,
                objects: type | tuple[type, ...] = ()) -> tuple[Any, ...]:
    """Validate a sequence of names (a list or tuple of ``str``), optionally each among ``choices``.

    A bare string is refused, not iterated character by character (``"logistic"`` would be read as
    the names ``"l"``, ``"o"``, ...); the message shows the list to write instead.

    Parameters
    ----------
    name : str
        Parameter name used in the message.
    value : sequence of str
    choices : iterable of str, optional
        The allowed names.
    min_size : int
        Least number of names.
    objects : type or tuple of type
        Entries of these types are accepted as they are, in place of a name (a ``Law`` for its name).

    Returns
    -------
    tuple
        The names (and ``objects`` entries), in order.

    Raises
    ------
    ParameterError
        A string, a mapping or a non-iterable; an entry that is not a ``str``; an unknown name; too
        few names.
    """
    allowed = None if choices is None else tuple(choices)
    among = "" if allowed is None else f" among {', '.join(repr(c) for c in allowed)}"
    if isinstance(value, str | bytes):
        shown = value if isinstance(value, str) else value.decode("utf-8", "replace")
        raise ParameterError(name, f"`{name}` must be a list of names{among}, not one string; "
                                   f"write [{shown!r}] for the single name {shown!r}")
    if isinstance(value, dict) or hasattr(value, "columns") or not isinstance(value, Iterable):
        raise ParameterError(name, f"`{name}` must be a list of names{among}; got {_short(value)}")
    items = tuple(value.tolist() if isinstance(value, np.ndarray) else value)
    bad = [x for x in items if not isinstance(x, str) and not (objects and isinstance(x, objects))]
    if bad:
        raise ParameterError(name, f"`{name}` must be a list of names (str){among}; got {_short(bad[0])} in it")
    if allowed is not None:
        unknown = [x for x in items if isinstance(x, str) and x not in allowed]
        if unknown:
            raise ParameterError(name, f"`{name}` must hold names{among}; got {', '.join(map(repr, unknown))}")
    if len(items) < min_size:
        raise ParameterError(name, f"`{name}` needs at least {min_size} name(s){among}; got {len(items)}")
    return items


def check_instance(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """Validate that ``value`` is an instance of ``kind`` (the library's own objects: a spec, a pool).

    ``what`` says how to make one, e.g. ``"a BanditSpec (BanditSpec.binary(...))"``.

    Raises
    ------
    ParameterError
        Naming ``name``, what it must be, and the type received.
    """
    if not isinstance(value, kind):
        raise ParameterError(name, f"`{name}` must be {what}; got {type(value).__name__}")
    return value


#: The most memory the arrays of one call may take (4 GiB, as :func:`grpo_core.bandit.simulate` and
#: :func:`grpo_core.model.simulate` allow): a count beyond it is a slip, and NumPy would fail with
#: "Maximum allowed size exceeded" or take the machine's memory.
MAX_MEMORY_BYTES = 4 << 30


def check_memory(name: str, count: int, bytes_each: int, *, what: str) -> None:
    """Refuse a ``count`` whose arrays (``count * bytes_each`` bytes) exceed :data:`MAX_MEMORY_BYTES`.

    Parameters
    ----------
    name : str
        The parameter that sets ``count`` (the message blames it and gives its largest value here).
    count : int
        Its value (already checked as an integer).
    bytes_each : int
        Bytes the call's arrays hold per unit of ``count`` (the other dimensions times 8 bytes).
    what : str
        What one unit holds, for the message (``"a group of 8 samples x 4 arms"``).

    Raises
    ------
    ParameterError
        ``count * bytes_each > MAX_MEMORY_BYTES``.
    """
    if count * bytes_each > MAX_MEMORY_BYTES:
        most = MAX_MEMORY_BYTES // max(1, bytes_each)
        shown = f"{count:,}" if count < 10 ** 15 else _fmt(count)
        raise ParameterError(name, f"`{name}` must be at most {most:,} here ({what}, {bytes_each:,} bytes each, "
                                   f"must fit in {MAX_MEMORY_BYTES >> 30} GiB); got {shown}")
