"""Each explorer executed headlessly in a real kernel (nbclient), then exported to static HTML.

The saved notebook must carry each explorer's widget state, charts included (the Vega-Lite specs
inside the Output widgets), and the nbconvert HTML export must embed that state, so the charts
render on a static page without a kernel.
"""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from conftest import ROOT
from nbclient import NotebookClient
from nbconvert import HTMLExporter

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

CELLS = {
    "oscillator": "oscillator_explorer(eta=0.05, mu=0.5, k_ref=4, steps=60)",
    "bandit": "bandit_explorer(seeds=16, steps=60)",
    "group_size": "group_size_explorer(budget=1024, spread=0.15, group_size=16)",
    "log": 'log_explorer("qwen2.5-3b-instruct_gsm8k_unsloth")',
}
#: Charts each explorer draws (Output widgets holding a Vega-Lite chart).
CHARTS = {"oscillator": 2, "bandit": 1, "group_size": 1, "log": 2}


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from widgets.explorers import bandit_explorer, group_size_explorer, log_explorer, "
            "oscillator_explorer"
        )
    ]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in CELLS.values()]
    client = NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    return nb


def _specs_in(outputs) -> list[dict]:
    """Vega-Lite specs embedded in Altair HTML outputs (``})({spec}, {embed options});``)."""
    specs = []
    for out in outputs:
        html = out.get("data", {}).get("text/html", "")
        if isinstance(html, list):
            html = "".join(html)
        m = re.search(r"\}\)\((\{.*\}), (\{\"mode\": \"vega-lite\"\})\);", html, re.S)
        if m:
            specs.append(json.loads(m.group(1)))
    return specs


def _output_widgets(state: dict) -> dict[str, list]:
    return {mid: m["state"].get("outputs", []) for mid, m in state.items()
            if m["model_name"] == "OutputModel"}


def _children(state: dict, model_id: str) -> set[str]:
    """Every model reachable from ``model_id`` through ``children`` references."""
    seen, todo = set(), [model_id]
    while todo:
        mid = todo.pop()
        if mid in seen or mid not in state:
            continue
        seen.add(mid)
        for ref in state[mid]["state"].get("children", []):
            todo.append(ref.replace("IPY_MODEL_", ""))
    return seen


def test_every_explorer_runs_and_saves_its_charts(executed):
    nb = executed
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    outputs = _output_widgets(state)
    for cell, name in zip(nb.cells[1:], CELLS):
        views = [o for o in cell.outputs if WIDGET_VIEW in o.get("data", {})]
        assert len(views) == 1, f"{name}: no widget view in the cell output"
        root = views[0]["data"][WIDGET_VIEW]["model_id"]
        assert root in state, f"{name}: the root widget is not in the saved state"
        mine = _children(state, root)
        specs = [s for mid in mine if mid in outputs for s in _specs_in(outputs[mid])]
        assert len(specs) == CHARTS[name], f"{name}: {len(specs)} charts saved, expected {CHARTS[name]}"
        for spec in specs:
            assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")
            assert spec.get("datasets") or spec.get("data"), f"{name}: a chart without data"
        # The status line shows no error (the log's forecast/diagnostics messages are warnings at most).
        statuses = [
            state[m]["state"].get("value", "")
            for m in mine
            if state[m]["model_name"] == "HTMLModel" and "#b00020" in state[m]["state"].get("value", "")
        ]
        assert statuses == [], f"{name}: {statuses}"


def test_static_html_export_embeds_the_widget_state_and_specs(executed):
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(executed)
    m = re.search(rf'<script type="{re.escape(WIDGET_STATE)}">\s*(.*?)\s*</script>', html, re.S)
    assert m, "the exported page carries no widget state"
    state = json.loads(m.group(1))["state"]
    specs = [s for outs in _output_widgets(state).values() for s in _specs_in(outs)]
    assert len(specs) == sum(CHARTS.values())
    # Each cell's view is placed on the page, bound to its model.
    for cell in executed.cells[1:]:
        model_id = [o for o in cell.outputs if WIDGET_VIEW in o.get("data", {})][0]["data"][WIDGET_VIEW][
            "model_id"
        ]
        assert model_id in html
    assert html.count(WIDGET_VIEW) >= len(CELLS)
