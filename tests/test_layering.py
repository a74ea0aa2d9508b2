"""The data flow is one way: grpo_core (numerics) <- widgets (charts, UI) <- book / command line."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

FORBIDDEN_IN_CORE = {"widgets", "grpo_dynamics", "ipywidgets", "altair", "IPython", "myst_nb", "papermill"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_grpo_core_imports_no_ui_and_no_notebook_code():
    offenders = {}
    for path in sorted((ROOT / "grpo_core").rglob("*.py")):
        bad = _imports(path) & FORBIDDEN_IN_CORE
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert not offenders, f"grpo_core must not import UI or notebook code: {offenders}"


def test_widgets_never_import_the_command_line():
    offenders = [
        str(p.relative_to(ROOT)) for p in (ROOT / "widgets").rglob("*.py") if "grpo_dynamics" in _imports(p)
    ]
    assert not offenders
