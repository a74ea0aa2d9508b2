"""Names from a log (file, run, metric) that would break the HTML pages the commands write: JSON in a
``<script>`` element holding ``<!--<script>`` hid the page's closing tag and blanked every chart;
``</script>`` ended the element; a metric name used as a Vega field with ``.`` or ``[0]`` was read as
nested access (an empty panel). The pages' JSON must parse, hold no raw ``<``, ``>``, ``&``, U+2028 or
U+2029, and every chart must draw its data in a browser with no console error."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from grpo_dynamics.cli import main
from widgets.rendering import ScriptJSONEncoder, script_json

#: A column name with everything that broke a page: an HTML comment opening a script, a closing tag,
#: Vega's nested-access characters, a quote, a backslash, a JavaScript line separator, and "&", ">".
NAME = '<!--<script>a.b[0]"\\\u2028</script> & >'
#: A file name with the same, less "/" (not allowed in a file name).
FILE = 'run <!--<script> [0]."\\\u2028 & x.json'
UNSAFE = "<>&\u2028\u2029"


def _trainer_state(path, n: int = 200) -> None:
    """A TRL trainer_state.json whose reward rises while an eval metric named ``NAME`` falls (a
    train-eval decoupling finding, so the name reaches an evidence chart), with a reward function
    named ``NAME`` too (so ``fit --metric reward/NAME`` fits a column of that name)."""
    t = np.arange(1, n + 1)
    y = 1 - np.exp(-t / 40) + np.random.default_rng(0).normal(0, 0.02, n)
    hist = []
    for s, r in zip(t, y):
        hist.append({"step": int(s), "reward": float(r), "reward_std": 0.3, "entropy": float(1 - 0.4 * r),
                     "kl": float(0.001 * s), "grad_norm": 1.0 + 0.1 * float(np.sin(s)),
                     f"rewards/{NAME}/mean": float(r)})
        if s % 10 == 0:
            hist.append({"step": int(s), f"eval_{NAME}": float(0.9 - 0.004 * s)})
    path.write_text(json.dumps({"log_history": hist, "global_step": n, "max_steps": n}))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The diagnosis report and the fit plot of the hostile log: ``{"report": path, "fit": path}``."""
    folder = tmp_path_factory.mktemp("hostile") / 'dir <!--<script> [0]."'
    folder.mkdir()
    log = folder / FILE
    _trainer_state(log)
    report, plot = folder / "report.html", folder / "fit.html"
    assert main(["diagnose", str(log), "--eval-metric", NAME, "--report", str(report)]) == 1  # the decoupling
    assert main(["fit", str(log), "--metric", f"reward/{NAME}", "--fit-fraction", "0.4", "--plot", str(plot)]) == 0
    return {"report": report, "fit": plot}


def _spec_json(page: str, start: str, end: str) -> str:
    i = page.index(start) + len(start)
    return page[i:page.index(end, i)]


def _strings(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj


def _fields(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "field" and isinstance(v, str):
                yield v
            yield from _fields(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _fields(v)


@pytest.mark.parametrize("which, start, end", [
    ("report", "const SPECS = ", ";\nfor (const"),
    ("fit", "const spec = ", ";\n  const embedOpt"),
])
def test_the_pages_json_parses_holds_the_names_and_no_raw_markup(pages, capsys, which, start, end):
    capsys.readouterr()
    page = pages[which].read_text(encoding="utf-8")
    text = _spec_json(page, start, end)
    assert not any(c in text for c in UNSAFE)
    spec = json.loads(text)
    # the name reached the spec (so the escaping was needed), whole, as a title or a data value
    assert any(NAME in s for s in _strings(spec))
    # a page has the Vega bundle's script and the one with the spec: none more, none ended early
    assert page.count("<script") == 2 and page.count("</script>") == 2
    # every field is a plain key: a log's name is a title or a value, never read as a Vega path
    fields = set(_fields(spec))
    assert fields and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", f) for f in fields), fields


def test_script_json_escapes_markup_and_keeps_everything_else_byte_for_byte():
    ordinary = {"title": "reward (R² = 0.98)", "data": [1.5, None, True, "a/b", "x\ty"], "é": "ü"}
    assert script_json(ordinary) == json.dumps(ordinary)
    assert json.dumps(ordinary, cls=ScriptJSONEncoder, indent=2) == json.dumps(ordinary, indent=2)
    hostile = {NAME: [NAME, "\u2029"]}
    for kwargs in ({}, {"ensure_ascii": False}, {"indent": 1}):
        text = script_json(hostile, **kwargs)
        assert not any(c in text for c in UNSAFE) and json.loads(text) == hostile
    assert script_json("<&>") == '"\\u003c\\u0026\\u003e"'
    with pytest.raises(ValueError):
        script_json(float("nan"), allow_nan=False)


def test_the_book_renderer_escapes_a_hostile_spec_and_leaves_an_ordinary_one_as_altair_writes_it():
    import altair as alt
    import pandas as pd
    from altair.vegalite.v6.display import html_renderer

    from widgets.rendering import _book_renderer, book_embed_html

    def page(renderer, chart):
        out = renderer(chart.to_dict())
        html = (out[0] if isinstance(out, tuple) else out)["text/html"]
        return re.sub(r"altair-viz-[0-9a-f]+", "altair-viz-ID", html)

    plain = alt.Chart(pd.DataFrame({"step": [1, 2], "reward": [0.1, 0.2]})).mark_line().encode(x="step", y="reward")
    assert page(_book_renderer, plain) == book_embed_html(page(html_renderer, plain))
    hostile = plain.properties(title=NAME)
    text = page(_book_renderer, hostile)
    assert NAME not in text and "\\u003c!--\\u003cscript\\u003e" in text
    assert "<!--<script>" in page(html_renderer, hostile)  # what Altair writes by itself


def test_the_laws_charts_keep_a_metric_name_out_of_vega_fields():
    from grpo_core import laws
    from widgets import laws_charts

    t = np.arange(1.0, 201.0)
    y = 1 - np.exp(-t / 40) + np.random.default_rng(1).normal(0, 0.02, t.size)
    for metric in (NAME, "step", "law"):  # "step"/"law" were columns of the chart's own data
        for chart in (laws_charts.fits_chart(laws.fit_all(t, y), metric=metric),
                      laws_charts.forecast_chart(laws.forecast(t, y, law="exponential", fraction=0.5, n_boot=0),
                                                 metric=metric)):
            spec = chart.to_dict()
            assert metric in set(_strings(spec))  # the axis title
            ys = [layer["encoding"]["y"] for layer in spec["layer"] if "y" in layer.get("encoding", {})]
            assert {"field": "value", "type": "quantitative", "title": metric} in [
                {k: y.get(k) for k in ("field", "type", "title")} for y in ys]
            assert metric in ("step", "law") or metric not in set(_fields(spec))
            points = [d for d in spec["datasets"].values() if d and "value" in d[0]]
            assert points and all(len(d) >= 100 and np.isfinite(d[0]["value"]) for d in points)


#: Each chart's marks: Vega's SVG paths and lines of the drawn mark groups, per chart container.
_COUNT_MARKS = """sel => [...document.querySelectorAll(sel)].map(el => [el.id || el.className,
    el.querySelectorAll('g.mark-symbol path, g.mark-line path, g.mark-area path, g.mark-rect path,'
                        + ' g.mark-rule line').length, !!el.querySelector('svg')])"""


@pytest.mark.browser
@pytest.mark.parametrize("which, selector, panels", [
    ("report", "div.chart", None),
    ("fit", "g[class*='concat_'][class*='_group']", 3),  # fits, residuals, forecast
])
def test_every_chart_draws_its_data_with_no_console_error(pages, probe, capsys, which, selector, panels):
    capsys.readouterr()
    probe.page.goto(pages[which].as_uri(), wait_until="load", timeout=60_000)
    probe.page.wait_for_function(
        "() => [...document.querySelectorAll('div.chart, #vis')].every(e => e.querySelector('svg')"
        " || e.textContent.includes('error'))", timeout=60_000)
    charts = probe.page.evaluate(_COUNT_MARKS, selector)
    assert not probe.console_errors, probe.console_errors
    assert charts and all(svg or which == "fit" for _, _, svg in charts), charts
    if panels is not None:
        assert len(charts) == panels, charts
    else:  # two evidence charts (the decoupling, the KL rise) and the five panels
        assert len(charts) == 7, charts
    assert all(n > 0 for _, n, _ in charts), charts
