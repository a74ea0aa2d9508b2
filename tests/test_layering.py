"""The import rules of the tree, as a test.

The data flow is one way: ``grpo_core`` (numerics) <- ``widgets`` (charts, UI) <- the book and the
command line (``grpo_dynamics``). Inside ``grpo_core`` the subpackages are layered (the same table
is in ``grpo_core/__init__.py``); a module imports its own subpackage and lower layers only (the shared modules of
layer 0 may
import each other)::

    0  shared     errors, validation, _json, grpo, softmax, data
    1  model      the oscillator theory
    2  bandit     the softmax bandit (uses model)      laws   reward-curve laws, fits, forecasts
    3  groupsize  U-statistic and the group size (uses bandit's exact covariance)
    4  runs       real logs in, diagnostics, callback, shipped data (uses laws, bandit, model)
    5  llm        the language-model experiment (uses runs, groupsize)

No import circle anywhere in ``grpo_core``, ``widgets`` or ``grpo_dynamics``, counting imports
inside functions too (a lazy import hides a circle, it does not remove it). A module inside a
package imports its siblings directly, never through the package's ``__init__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

FORBIDDEN_IN_CORE = {"widgets", "grpo_dynamics", "ipywidgets", "altair", "IPython", "myst_nb", "papermill"}

#: Layer of each top-level part of grpo_core (a module or a subpackage).
LAYERS = {
    "errors": 0, "validation": 0, "_json": 0, "grpo": 0, "softmax": 0, "data": 0,
    "model": 1,
    "bandit": 2, "laws": 2,
    "groupsize": 3,
    "runs": 4,
    "llm": 5,
}
PACKAGES = ("grpo_core", "widgets", "grpo_dynamics")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """Absolute name of what a ``from ... import`` statement imports from."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path, packages=PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports (module level and inside functions).

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module, else ``pkg``.
    """
    files = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            files[_module_name(path, root)] = path
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(node, module, is_package)
                names = [f"{src}.{a.name}" if f"{src}.{a.name}" in files else src for a in node.names]
            else:
                continue
            for name in names:
                # the longest known module that prefixes the name
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    targets.add(name)
        graph[module] = targets
    return graph


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports inside grpo_core that go up, or sideways above layer 0, in :data:`LAYERS`."""
    out = []
    for module, targets in sorted(graph.items()):
        parts = module.split(".")
        if parts[0] != "grpo_core" or len(parts) < 2:
            continue
        here = parts[1]
        for target in sorted(targets):
            tparts = target.split(".")
            if tparts[0] in FORBIDDEN_IN_CORE:
                out.append(f"{module} imports {target} (grpo_core never imports UI or the command line)")
            if tparts[0] != "grpo_core" or len(tparts) < 2 or tparts[1] == here:
                continue
            if here not in LAYERS or tparts[1] not in LAYERS:
                out.append(f"{module} -> {target}: {here!r} or {tparts[1]!r} has no layer in LAYERS")
            elif LAYERS[tparts[1]] > LAYERS[here] or (LAYERS[tparts[1]] == LAYERS[here] > 0):
                out.append(f"{module} (layer {LAYERS[here]}) imports {target} (layer {LAYERS[tparts[1]]})")
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT)


def test_every_part_of_grpo_core_has_a_layer(graph):
    parts = {m.split(".")[1] for m in graph if m.startswith("grpo_core.")}
    assert parts <= set(LAYERS), f"add to LAYERS (and grpo_core/__init__.py): {sorted(parts - set(LAYERS))}"
    assert {"model", "bandit", "laws", "groupsize", "runs", "llm"} <= parts


def test_grpo_core_imports_go_down_the_layers(graph):
    bad = layering_violations(graph)
    assert not bad, "\n".join(bad)


def test_no_import_circle(graph):
    cycles = import_cycles(graph)
    assert not cycles, f"import circles: {cycles}"


def test_widgets_never_import_the_command_line(graph):
    offenders = [
        m for m, t in graph.items() if m.startswith("widgets") and any(x.startswith("grpo_dynamics") for x in t)
    ]
    assert not offenders


def test_the_layering_table_is_the_package_docstring():
    doc = (ROOT / "grpo_core" / "__init__.py").read_text()
    for part in LAYERS:
        if part in ("data",):
            continue
        assert part in doc, f"grpo_core/__init__.py must describe {part!r}"


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_the_checks_fail_on_a_planted_bad_import(tmp_path):
    """The same checks on a small planted tree: an upward import and a circle are both found."""
    root = _plant(
        tmp_path,
        {
            "grpo_core/__init__.py": "",
            "grpo_core/errors.py": "",
            "grpo_core/model/__init__.py": "",
            "grpo_core/model/oscillator.py": "from ..runs import diagnostics\nfrom ..errors import X\n",
            "grpo_core/runs/__init__.py": "",
            "grpo_core/runs/diagnostics.py": "def f():\n    from grpo_core.model import oscillator\n",
            "grpo_core/laws/__init__.py": "import widgets.style\n",
            "widgets/__init__.py": "",
            "widgets/style.py": "",
        },
    )
    g = import_graph(root, packages=("grpo_core", "widgets"))
    assert g["grpo_core.model.oscillator"] == {"grpo_core.runs.diagnostics", "grpo_core.errors"}
    bad = layering_violations(g)
    assert any("grpo_core.model.oscillator (layer 1) imports grpo_core.runs.diagnostics (layer 4)" in b for b in bad)
    assert any("grpo_core.laws imports widgets.style" in b for b in bad)
    assert import_cycles(g) == [["grpo_core.model.oscillator", "grpo_core.runs.diagnostics"]]
