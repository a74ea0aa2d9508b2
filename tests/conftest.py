"""Shared test helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
CASES = DATA / "cases"


def load_case(name: str) -> dict:
    """The case folder's ``input.txt`` (JSON) and ``expected.json`` as ``{"input":..., "expected":...}``."""
    folder = CASES / name
    out = {"folder": folder, "expected": json.loads((folder / "expected.json").read_text())}
    if (folder / "input.txt").exists():
        out["input"] = json.loads((folder / "input.txt").read_text())
    return out


@pytest.fixture
def case():
    return load_case
