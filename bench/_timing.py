"""The one timer the benchmarks share: best wall time of a few repeats (noisy machines)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def timed(func: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best wall time in seconds over ``repeat`` calls of ``func()``, and the last call's result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - t0)
    return best, out


def best_of(func: Callable[[], Any], repeat: int = 1) -> float:
    """Best wall time in seconds over ``repeat`` calls of ``func()``."""
    return timed(func, repeat)[0]
