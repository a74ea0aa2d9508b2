"""Placeholder being replaced: reads nothing yet (matches() is False for every path)."""

from __future__ import annotations

from pathlib import Path

CONTAINER = "mlflow"


def matches(path: Path) -> bool:
    return False


def run_names(path: Path) -> list[str]:
    return ["."]


def read_store(path, source, notes, meta, run, max_bytes):
    raise NotImplementedError
