"""One JSON sanitiser for every result the package writes or returns as JSON.

JSON has no NaN or infinity and no numpy types: :func:`json_ready` turns numpy scalars and arrays
into Python numbers and lists, tuples into lists, keys into strings, and a non-finite float into
``None`` (``null``), recursively. Nothing else is changed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["json_ready"]


def json_ready(x: Any) -> Any:
    """A JSON-ready copy of ``x``: numpy scalars/arrays, tuples, string keys, NaN/inf -> None.

    Parameters
    ----------
    x : any
        A number, a container of them (dict, list, tuple, numpy array), or anything else (returned
        as it is).

    Returns
    -------
    any
        The same structure with only JSON types where numbers were.

    Examples
    --------
    >>> json_ready({"a": np.float64("inf"), 2: (np.int64(3), float("nan")), "b": np.array([1.5])})
    {'a': None, '2': [3, None], 'b': [1.5]}
    """
    if isinstance(x, dict):
        return {str(k): json_ready(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_ready(v) for v in x]
    if isinstance(x, np.ndarray):
        return [json_ready(v) for v in x.tolist()]
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        f = float(x)
        return f if math.isfinite(f) else None
    return x
