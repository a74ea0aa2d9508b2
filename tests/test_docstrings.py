"""Every docstring example in the library runs and prints what it says (SciPy/QuantEcon practice)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import grpo_core
import widgets

MODULES = sorted(
    m.name
    for pkg in (grpo_core, widgets)
    for m in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + ".")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # optional heavy dependency missing: say so, do not hide it
        pytest.skip(f"{name}: {exc}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} docstring example(s) failed"


def test_the_sweep_collected_examples():
    total = 0
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        finder = doctest.DocTestFinder()
        total += sum(len(t.examples) for t in finder.find(module))
    assert total >= 10, f"only {total} docstring examples found in grpo_core and widgets"
