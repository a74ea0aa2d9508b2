"""widgets.rendering: how the book renders (vendored Vega files) and lays out text reports."""

from __future__ import annotations

import pytest

from grpo_core.errors import ParameterError
from grpo_core.model.advice import advise
from widgets.rendering import vendor_base_url, wrap_report


def test_wrap_report_fits_the_width_and_keeps_every_word_in_order():
    report = advise(eta=0.01, mu=0.9, k_ref=4, curvature=1.0).summary()
    assert max(map(len, report.splitlines())) > 78  # the terminal report is wider than a page
    wrapped = wrap_report(report, 78)
    assert max(map(len, wrapped.splitlines())) <= 78
    assert wrapped.split() == report.split()
    # Blank lines (the report's sections) survive; short lines are untouched.
    assert wrapped.count("\n\n") == report.count("\n\n")
    short = [line for line in report.splitlines() if len(line) <= 78]
    assert all(line in wrapped.splitlines() for line in short)


def test_wrap_report_indents_continuations_below_their_line():
    out = wrap_report("Thresholds\n  exact discrete: critical eta*K = 0.0265, first unstable k_ref = 12", 40)
    assert out.splitlines() == [
        "Thresholds",
        "  exact discrete: critical eta*K =",
        "      0.0265, first unstable k_ref = 12",
    ]


def test_wrap_report_refuses_a_tiny_width():
    with pytest.raises(ParameterError, match="width"):
        wrap_report("x", 5)


def test_vendor_base_url_depth():
    assert vendor_base_url(0) == "_static/vendor"
    assert vendor_base_url(2) == "../../_static/vendor"
    with pytest.raises(ValueError, match="page_depth"):
        vendor_base_url(-1)


# --- The book's chart renderer and its page script (book/assets/grpo-charts.js) ---------------

import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402

from conftest import ROOT  # noqa: E402

CHARTS_JS = ROOT / "book" / "assets" / "grpo-charts.js"


def test_book_renderer_calls_grpo_embed_with_a_plain_vega_embed_fallback(monkeypatch):
    import altair as alt
    import pandas as pd

    from widgets.rendering import BOOK_RENDERER, book_embed_html, setup_book

    monkeypatch.setenv("GRPO_BOOK_BUILD", "1")
    previous = alt.renderers.active
    try:
        setup_book(1)
        assert alt.renderers.active == BOOK_RENDERER
        chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q")
        html = alt.renderers.get()(chart.to_dict())["text/html"]
    finally:
        alt.renderers.enable(previous)
    assert '"../_static/vendor/vega-embed@7?noext"' in html  # the site's own Vega files
    assert ('typeof grpoEmbed === "function" ? grpoEmbed(outputDiv, spec, embedOpt, vegaEmbed)'
            " : vegaEmbed(outputDiv, spec, embedOpt)") in html
    with pytest.raises(ValueError, match="vegaEmbed"):
        book_embed_html("<div></div>")


def test_setup_book_outside_the_build_keeps_altairs_renderer(monkeypatch):
    import altair as alt

    from widgets.rendering import setup_book

    monkeypatch.delenv("GRPO_BOOK_BUILD", raising=False)
    before = alt.renderers.active
    setup_book()
    assert alt.renderers.active == before


def _node(script: str):
    """Run ``script`` with node, ``g`` bound to grpo-charts.js's functions; its printed JSON."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    code = f"const g = require({json.dumps(str(CHARTS_JS))});\n{script}"
    out = subprocess.run([node, "-e", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_small_fonts_are_raised_to_ten_px():
    spec = {"config": {"axis": {"labelFontSize": 8, "titleFontSize": 12}, "text": {"size": 7}},
            "mark": {"type": "text", "fontSize": 9}, "encoding": {"size": {"value": 6}},
            "facet": {"field": "p", "header": {"labelFontSize": 9.5}},
            "data": {"values": [{"fontSize": 3}]}}
    got = _node(f"const s = {json.dumps(spec)}; const n = g.floorFonts(s); console.log(JSON.stringify([n, s]));")
    n, s = got
    assert n == 5
    assert s["config"]["axis"] == {"labelFontSize": 10, "titleFontSize": 12}
    assert s["config"]["text"]["size"] == 10 and s["mark"]["fontSize"] == 10
    assert s["encoding"]["size"]["value"] == 10 and s["facet"]["header"]["labelFontSize"] == 10
    assert s["data"]["values"] == [{"fontSize": 3}]  # data is not touched


def test_narrow_layout_stacks_panels_and_moves_side_legends_keeping_params():
    params = [{"name": "k", "value": 2, "bind": {"input": "range", "min": 1, "max": 5}}]
    panel = {"mark": "line", "width": 300, "height": 150,
             "encoding": {"x": {"field": "x", "type": "quantitative"},
                          "color": {"field": "c", "type": "nominal"},
                          "strokeDash": {"field": "c", "type": "nominal"}}}
    long_title = "a title far too long for a phone's column of text"
    spec = {"params": params, "hconcat": [panel, dict(panel, title=long_title)],
            "config": {"legend": {"orient": "right"}}}
    facet = {"facet": {"column": {"field": "p", "type": "nominal"}}, "spec": panel}
    wrapped = {"facet": {"field": "p", "type": "nominal"}, "columns": 3, "spec": panel}
    got = _node(
        f"const a = {json.dumps(spec)}, b = {json.dumps(facet)}, c = {json.dumps(wrapped)};"
        " const ca = g.stack(a, 342), cb = g.stack(b, 342), cc = g.stack(c, 342);"
        " console.log(JSON.stringify({a, b, c, ca, cb, cc}));")
    a = got["a"]
    assert "hconcat" not in a and len(a["vconcat"]) == 2 and a["params"] == params
    assert a["vconcat"][0]["width"] == 300 and a["vconcat"][0]["height"] == 150  # widths are narrowed later
    assert a["config"]["legend"]["orient"] == "bottom"
    legends = [a["vconcat"][0]["encoding"][ch]["legend"] for ch in ("color", "strokeDash")]
    assert legends[0] == legends[1] == {"orient": "bottom", "direction": "vertical"}  # one merged legend
    assert isinstance(a["vconcat"][1]["title"], list) and " ".join(a["vconcat"][1]["title"]) == long_title
    assert got["b"]["facet"] == {"field": "p", "type": "nominal"} and got["b"]["columns"] == 1
    assert got["c"]["columns"] == 1 and "facet column->wrapped" in got["cb"]


def test_narrowing_reduces_widths_and_moves_right_edge_labels_with_them():
    spec = {"vconcat": [
        {"width": 500, "layer": [{"mark": "line"},
                                 {"mark": "text", "encoding": {"x": {"value": 500}, "text": {"value": "end"}}}]},
        {"width": 200, "mark": "point"},
        {"facet": {"field": "p", "header": {"labelLimit": 300}}, "spec": {"width": 400, "mark": "bar",
         "encoding": {"color": {"field": "c", "legend": {"orient": "bottom", "columns": 3}}}}}]}
    got = _node(f"const s = {json.dumps(spec)}; const ch = g.narrow(s, 180);"
                " const t = {width: 300, mark: 'point'}; const tiny = g.narrow(t, 1000);"
                " console.log(JSON.stringify({s, ch, t, tiny}));")
    first, second, third = got["s"]["vconcat"]
    assert got["ch"] and first["width"] == 320 and first["layer"][1]["encoding"]["x"]["value"] == 320
    assert second["width"] == 200  # narrower than the new cap: unchanged
    assert third["spec"]["width"] == 320
    assert third["spec"]["encoding"]["color"]["legend"] == {"orient": "bottom", "columns": 1, "direction": "vertical"}
    header = third["facet"]["header"]
    assert header["labelLimit"] == 300 and header["labelExpr"].startswith("split(trim(replace(datum.label")
    assert got["t"]["width"] == 140  # never below MIN_WIDTH


def test_the_page_script_and_the_style_agree_on_the_smallest_font():
    from widgets.style import FONT, MIN_FONT

    assert _node("console.log(JSON.stringify(g.MIN_FONT));") == MIN_FONT == 10
    assert min(FONT.values()) >= MIN_FONT


def test_long_annotations_wrap_and_their_stack_moves_apart():
    text = {"type": "text", "align": "left", "baseline": "bottom"}
    spec = {"width": 300, "layer": [
        {"mark": "line"},
        {"mark": dict(text, fontSize=18), "encoding": {"x": {"value": 0}, "y": {"value": -24},
                                                       "text": {"field": "verdict", "type": "nominal"}}},
        {"mark": dict(text, fontSize=12), "encoding": {"x": {"value": 0}, "y": {"value": -6},
                                                       "text": {"field": "label", "type": "nominal"}}},
        {"mark": dict(text, align="right", fontSize=13), "encoding": {"x": {"value": 300}, "y": {"value": -6},
                                                                      "text": {"field": "note", "type": "nominal"}}}]}
    got = _node(f"const s = {json.dumps(spec)};"
                " const ch = g.annotations(s, 300, {layer_1_marks: 120, layer_2_marks: 450, layer_3_marks: 80});"
                " console.log(JSON.stringify({ch, layers: s.layer.slice(1)}));")
    verdict, label, note = got["layers"]
    assert got["ch"]
    # the long label: two lines (Vega draws them down from the first), its last line where it was
    assert label["encoding"]["text"] == {"field": "grpo_wrap_2", "type": "nominal"}
    assert label["transform"][0]["calculate"].startswith('trim(replace(datum["label"], regexp(')
    assert label["mark"]["lineBreak"] == "\n" and label["mark"]["lineHeight"] == 15
    assert label["encoding"]["y"]["value"] == -6 - 15
    # the right-aligned note joins the stack above it, the verdict above both
    assert note["mark"]["align"] == "left" and note["encoding"]["x"]["value"] == 0
    assert note["encoding"]["y"]["value"] == -6 - 15 - 12 - 3
    assert verdict["encoding"]["y"]["value"] < note["encoding"]["y"]["value"] - 13
    assert "transform" not in verdict  # short enough: one line


def test_annotations_of_a_concatenation_wrap_in_each_panel_and_a_right_edge_text_joins_the_stack():
    text = {"type": "text", "align": "left", "baseline": "bottom", "fontSize": 12}
    panel = {"width": 265, "layer": [
        {"mark": "line"},
        {"name": "eta", "mark": dict(text), "encoding": {"x": {"value": 0}, "y": {"value": -27},
                                                         "text": {"field": "eta", "type": "nominal"}}},
        {"name": "zeta", "mark": dict(text, align="right"),
         "encoding": {"x": {"value": "width"}, "y": {"value": -27}, "text": {"field": "zeta", "type": "nominal"}}},
        {"name": "note", "mark": dict(text),
         "encoding": {"x": {"value": 0}, "y": {"value": -10}, "text": {"field": "note", "type": "nominal"}}}]}
    key = {"name": "key", "data": {"values": [{"k": "solid: the exact threshold of the recurrence; dashed: the continuous one"}]},  # noqa: E501
           "mark": dict(text, baseline="top", lineBreak="\n"),
           "encoding": {"x": {"value": 0}, "y": {"value": 300}, "text": {"field": "k", "type": "nominal"}}}
    spec = {"params": [{"name": "k", "value": 1, "bind": {"input": "range"}}],
            "vconcat": [panel, {"width": 265, "layer": [{"mark": "point"}, key]}]}
    note = "threshold 0.05 (continuous, C = 0) and 0.0557 (exact, constant lag)"  # 450 px drawn
    measured = {"eta_marks": 125, "zeta_marks": 140, "note_marks": 450, "note_marks text": note}
    got = _node(f"const s = {json.dumps(spec)}; const ch = g.annotations(s, 265, {json.dumps(measured)});"
                " console.log(JSON.stringify({ch, s}));")
    assert got["ch"]
    eta, zeta, wrapped = got["s"]["vconcat"][0]["layer"][1:]
    assert wrapped["mark"]["lineBreak"] == "\n" and wrapped["encoding"]["text"]["field"].startswith("grpo_wrap_")
    # 125 + 140 px do not fit beside each other in 265: the right-edge text gets a row of its own
    assert zeta["mark"]["align"] == "left" and zeta["encoding"]["x"]["value"] == 0
    rows = sorted([eta["encoding"]["y"]["value"], zeta["encoding"]["y"]["value"]])
    assert rows[1] < wrapped["encoding"]["y"]["value"] - 12 and rows[0] < rows[1] - 12  # three rows apart
    # the second panel's key (not drawn at the natural layout: estimated from its data) is wrapped too,
    # its own line breaks kept
    (k,) = got["s"]["vconcat"][1]["layer"][1:]
    assert k["encoding"]["text"]["field"].startswith("grpo_wrap_")
    assert "( +|$|\\n)" in k["transform"][-1]["calculate"]
    assert got["s"]["params"] == spec["params"]


def test_a_right_edge_text_that_fits_beside_its_row_stays_and_moves_with_it():
    text = {"type": "text", "align": "left", "baseline": "bottom", "fontSize": 12}
    spec = {"width": 400, "layer": [
        {"name": "a", "mark": dict(text), "encoding": {"x": {"value": 0}, "y": {"value": -27},
                                                       "text": {"field": "a", "type": "nominal"}}},
        {"name": "b", "mark": dict(text, align="right"),
         "encoding": {"x": {"value": "width"}, "y": {"value": -27}, "text": {"field": "b", "type": "nominal"}}},
        {"name": "c", "mark": dict(text), "encoding": {"x": {"value": 0}, "y": {"value": -10},
                                                       "text": {"field": "c", "type": "nominal"}}}]}
    measured = {"a_marks": 100, "b_marks": 100, "c_marks": 700, "c_marks text": "word " * 100}
    got = _node(f"const s = {json.dumps(spec)}; g.annotations(s, 400, {json.dumps(measured)});"
                " console.log(JSON.stringify(s.layer));")
    a, b, _ = got
    assert b["mark"]["align"] == "right" and b["encoding"]["x"]["value"] == "width"
    assert b["encoding"]["y"]["value"] == a["encoding"]["y"]["value"] < -27


def test_legends_of_narrow_stacked_panels_go_one_under_another_with_long_labels_broken():
    legend = {"orient": "top", "labelLimit": 0, "title": None}
    spec = {"vconcat": [{"width": 186, "layer": [
        {"mark": "area", "encoding": {"fill": {"field": "band", "type": "nominal", "legend": dict(legend)}}},
        {"mark": "line", "encoding": {"stroke": {"field": "curve", "type": "nominal", "legend": dict(legend)}}},
        {"mark": "rule", "encoding": {"color": {"field": "c", "type": "nominal",
                                                "legend": {"orient": "bottom", "labelLimit": 100}}}}]}]}
    got = _node(f"const s = {json.dumps(spec)}; const ch = g.legends(s, 186); console.log(JSON.stringify({{ch, s}}));")
    assert got["ch"]
    layers = got["s"]["vconcat"][0]["layer"]
    for layer, ch in zip(layers[:2], ("fill", "stroke")):
        lg = layer["encoding"][ch]["legend"]
        assert lg["labelExpr"].startswith("split(trim(replace(datum.label") and lg["labelLimit"] == 186 - 24
    assert "labelExpr" not in layers[2]["encoding"]["color"]["legend"]  # short enough already
    assert got["s"]["config"]["legend"]["layout"] == {"top": {"direction": "vertical"},
                                                       "bottom": {"direction": "vertical"}}
