"""Every chart, equation and printed output of the built book is legible on a phone (390 x 844) and
on a desktop (1280 x 900), in a real browser.

* Charts (book/assets/grpo-charts.js): each Vega chart is drawn at (nearly) its natural size in its
  column, so every text of it is drawn at 10 px or more on screen (the font size times the chart's
  rendered width over its natural width), and no chart is wider than its container. A chart too
  wide for a phone's column is stacked (side-by-side panels one under the other) and narrowed,
  its sliders still moving its labels.
* A display equation or a table wider than its column scrolls in its own box, which shows a
  shadow at the edge with more to see (book/assets/grpo.css, "scroll shadows").
* A cell's printed text and a ```text block wrap at the column's edge instead of running out of it.

The page tests read the built book (``_build/html``, run after ``make book``); the stacked-chart
test draws its own chart and needs only the vendored Vega files.
"""

from __future__ import annotations

import functools
import http.server
import socketserver
import threading

import pytest
from conftest import BUILT_HTML, ROOT, VENDOR, PageProbe
from vega_page import LOAD_TIMEOUT, open_page, set_param

pytestmark = [pytest.mark.browser]

VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
CHAPTERS = ["intro", "grpo_update", "oscillator", "fitting", "bandit", "ustatistic", "group_size",
            "diagnostics", "llm", "explorers", "use_it"]
#: The smallest text (px on screen) a chart may draw.
MIN_TEXT_PX = 10.0

#: JavaScript: every chart of the page (``.vega-embed``) with the smallest text it draws on screen.
#: The texts are read from the chart's Vega scenegraph (``el.grpoView``, kept by grpoEmbed), so a
#: chart drawn on a canvas is measured as one drawn as SVG: each visible text item's font size
#: times the chart's rendered width over its natural width. A chart without a view was not
#: embedded through grpoEmbed.
CHART_TEXT = """() => {
    const natural = el => {
        const svg = el.querySelector('svg');
        if (svg) return (svg.viewBox && svg.viewBox.baseVal.width) || parseFloat(svg.getAttribute('width'));
        const c = el.querySelector('canvas');
        return c ? (parseFloat(c.style.width) || c.width) : 0;
    };
    const texts = view => {
        const out = [];
        (function walk(mark) {
            if (!mark) return;
            for (const item of mark.items || []) {
                if (mark.marktype === 'text') {
                    const t = Array.isArray(item.text) ? item.text.join(' ') : item.text;
                    if (t == null || String(t).trim() === '' || item.opacity === 0 || item.fillOpacity === 0) continue;
                    out.push([String(t).slice(0, 40), item.fontSize == null ? 11 : item.fontSize]);
                } else if (item.items) {
                    item.items.forEach(walk);
                }
            }
        })(view.scenegraph().root);
        return out;
    };
    return [...document.querySelectorAll('.vega-embed')].map((el, i) => {
        const node = el.querySelector('svg, canvas');
        const params = [...el.querySelectorAll('input[name], select[name]')].map(x => x.name);
        const box = el.getBoundingClientRect();
        if (!node || box.width === 0) return {i, params, hidden: true};
        const r = node.getBoundingClientRect();
        const w = natural(el);
        const scale = r.width / w;
        const items = el.grpoView ? texts(el.grpoView).map(([t, f]) => [t, f * scale]) : [];
        items.sort((a, b) => a[1] - b[1]);
        return {i, params, natural: w, drawn: r.width, container: box.width, right: r.right,
                boxRight: box.right, scale, view: !!el.grpoView, layout: el.dataset.grpoLayout || null,
                n: items.length, smallest: items.slice(0, 3)};
    });
}"""

#: JavaScript: wait (in the page) until every chart is drawn and was laid out by grpoEmbed and
#: their number has not changed for a second (saved widgets draw theirs after the page loaded),
#: or `ms` passed; resolves to the number of charts not laid out.
SETTLE = """(ms) => new Promise(resolve => {
    const t0 = performance.now();
    let count = -1, since = t0;
    (function poll() {
        const els = [...document.querySelectorAll('[id^="altair-viz"]')];
        const now = performance.now();
        if (els.length !== count) { count = els.length; since = now; }
        const done = els.every(e => e.dataset.grpoLayout || (window.grpoChartsOff && e.querySelector('svg, canvas')));
        if ((done && now - since > 1000) || now - t0 > ms) {
            setTimeout(() => resolve(els.filter(e => !e.dataset.grpoLayout).length), 200);
        } else setTimeout(poll, 100);
    })();
})"""

#: JavaScript: scroll boxes of wide display equations and tables, and whether they show a cue.
SCROLL_CUES = """() => {
    const boxes = [...document.querySelectorAll(
        'mjx-container[display="true"], .pst-scrollable-table-container, div.table-wrapper,'
        + ' .cell_output .output.text_html')];
    return boxes.filter(b => b.clientWidth > 0 && b.scrollWidth > b.clientWidth + 1).map(b => ({
        what: b.tagName.toLowerCase() + '.' + [...b.classList].join('.'),
        text: b.textContent.trim().slice(0, 40),
        background: getComputedStyle(b).backgroundImage,
        cue: !!b.querySelector('.grpo-scroll-cue')}));
}"""

#: JavaScript: printed text (a cell's output, a ```text block) whose lines run past its box.
TEXT_OVERFLOW = """() => [...document.querySelectorAll(
        '.cell_output pre, div.highlight-text pre, div.highlight-none pre')]
    .filter(p => p.clientWidth > 0 && p.scrollWidth > p.clientWidth + 1)
    .map(p => `${p.textContent.trim().slice(0, 50)} (${p.scrollWidth} > ${p.clientWidth})`)"""


def open_settled(probe, url: str) -> None:
    """Open ``url``, wait for its charts to draw and be laid out, and for MathJax to typeset."""
    page = probe.page
    page.goto(url, wait_until="networkidle", timeout=LOAD_TIMEOUT * 1000)
    page.evaluate(SETTLE, LOAD_TIMEOUT * 1000)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise.then(() => true) : true")
    page.wait_for_timeout(300)


def chart_offenders(charts: list[dict]) -> list[str]:
    """What is wrong with each chart of :data:`CHART_TEXT`'s list (empty: all legible)."""
    bad = []
    for c in charts:
        if c.get("hidden"):
            continue
        name = f"chart {c['i']} (params {c['params']}, natural {c['natural']:.0f} px, layout {c['layout']})"
        if not c["view"]:
            bad.append(f"{name}: not embedded through grpoEmbed")
            continue
        if c["drawn"] > c["container"] + 1 or c["right"] > c["boxRight"] + 1:
            bad.append(f"{name}: drawn {c['drawn']:.0f} px in a {c['container']:.0f} px container")
        small = [f"{t!r} at {px:.1f} px" for t, px in c["smallest"] if px < MIN_TEXT_PX - 0.05]
        if small:
            bad.append(f"{name}: text drawn at scale {c['scale']:.2f}: {', '.join(small)}")
    return bad


@pytest.fixture(params=list(VIEWPORTS))
def screen(request, browser):
    size = VIEWPORTS[request.param]
    phone = request.param == "phone"
    context = browser.new_context(viewport=size, device_scale_factor=1, is_mobile=phone, has_touch=phone)
    probe = PageProbe(context.new_page())
    probe.kind = request.param
    yield probe
    context.close()


@pytest.mark.book
@pytest.mark.parametrize("name", CHAPTERS)
def test_page_is_legible(book_server, screen, name):
    if not (BUILT_HTML / f"{name}.html").exists():
        pytest.skip(f"{name}.html is not in the built book")
    open_settled(screen, f"{book_server}/{name}.html")
    page = screen.page
    charts = page.evaluate(CHART_TEXT)
    assert chart_offenders(charts) == [], f"{name} at {screen.kind}"
    assert all(c["n"] > 0 for c in charts if not c.get("hidden")), f"{name}: a chart without text"
    missing = [b for b in page.evaluate(SCROLL_CUES) if b["background"] == "none" and not b["cue"]]
    assert missing == [], f"{name} at {screen.kind}: wide scroll boxes without a cue"
    if screen.kind == "desktop":
        assert page.evaluate(TEXT_OVERFLOW) == [], f"{name}: printed text runs past its box"
    assert screen.console_errors == [], screen.console_errors


# --- A chart drawn on its own page (no book build needed) -------------------------------------


@pytest.fixture(scope="module")
def grpo_chart_server(tmp_path_factory):
    """Serve single charts as the book embeds them (book renderer's html, grpo-charts.js and
    grpo.css loaded); yields ``show(probe, chart, name)``."""
    if not (VENDOR / "vega@6").exists():
        pytest.skip("no vendored Vega files in book/assets/vendor: run `make assets` (make test does)")
    from widgets.rendering import _book_renderer

    folder = tmp_path_factory.mktemp("legible")
    (folder / "vendor").symlink_to(VENDOR, target_is_directory=True)
    for asset in ("grpo-charts.js", "grpo.css"):
        (folder / asset).symlink_to(ROOT / "book" / "assets" / asset)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a: None
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def show(probe, chart, name: str) -> None:
        body = _book_renderer(chart.to_dict(), base_url="vendor")["text/html"]  # what a chapter's cell shows
        (folder / f"{name}.html").write_text(
            '<!DOCTYPE html><html><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<link rel="stylesheet" href="grpo.css">'
            '<script src="grpo-charts.js"></script><style>body { margin: 0 24px; }</style></head>'
            f"<body>{body}</body></html>")
        open_page(probe, f"{base}/{name}.html")
        probe.page.evaluate(SETTLE, 20000)

    yield show
    server.shutdown()
    server.server_close()


def _two_panel_chart():
    """Two 300 px panels side by side (about 700 px wide), a slider moving a text label."""
    import altair as alt
    import pandas as pd

    k = alt.param(name="k", value=2, bind=alt.binding_range(min=1, max=5, step=1, name="k "))
    data = pd.DataFrame({"x": range(10), "y": [v * v for v in range(10)]})
    left = alt.Chart(data).mark_line().encode(x=alt.X("x:Q", title="step"), y=alt.Y("y:Q", title="a long y title"))
    label = alt.Chart(pd.DataFrame({"x": [1]})).mark_text(align="left", fontSize=8).encode(
        x="x:Q", text=alt.Text("label:N")).transform_calculate(label="'k is ' + k")
    right = alt.layer(left, label).properties(title="a second panel with its own label")
    return alt.hconcat(left.properties(width=300, height=150), right.properties(width=300, height=150)).add_params(k)


def test_a_wide_chart_is_stacked_on_a_phone_and_its_slider_still_works(browser, grpo_chart_server):
    context = browser.new_context(viewport=VIEWPORTS["phone"], device_scale_factor=1, is_mobile=True)
    probe = PageProbe(context.new_page())
    try:
        grpo_chart_server(probe, _two_panel_chart(), "two-panels")
        page = probe.page
        (chart,) = page.evaluate(CHART_TEXT)
        assert chart["layout"] in ("stacked", "narrowed"), chart
        assert chart_offenders([chart]) == []
        assert chart["natural"] <= VIEWPORTS["phone"]["width"] - 48 + 1, chart
        # stacked: the second panel's plot is below the first one's
        tops = page.evaluate("() => { const v = document.querySelector('.vega-embed').grpoView;"
                             " return v.scenegraph().root.items[0].items.filter(m => m.role === 'scope')"
                             ".flatMap(m => m.items.map(g => [g.x, g.y])); }")
        assert len(tops) == 2 and tops[0][0] == tops[1][0] and tops[1][1] > tops[0][1], tops
        # the font below the floor was raised to it
        assert min(px for _, px in chart["smallest"]) >= MIN_TEXT_PX
        set_param(page, 0, "k", 4)
        got = page.wait_for_function(
            "() => { const v = document.querySelector('.vega-embed').grpoView; const out = [];"
            " (function w(m) { for (const it of m.items || []) { if (m.marktype === 'text') out.push(it.text);"
            " else if (it.items) it.items.forEach(w); } })(v.scenegraph().root);"
            " return out.includes('k is 4') ? out : null; }", timeout=10000).json_value()
        assert "k is 4" in got
        assert probe.console_errors == []
    finally:
        context.close()


def test_a_chart_that_fits_is_drawn_as_given(browser, grpo_chart_server):
    context = browser.new_context(viewport=VIEWPORTS["desktop"], device_scale_factor=1)
    probe = PageProbe(context.new_page())
    try:
        grpo_chart_server(probe, _two_panel_chart(), "two-panels-desktop")
        (chart,) = probe.page.evaluate(CHART_TEXT)
        assert chart["layout"] == "natural" and chart["scale"] == pytest.approx(1.0), chart
        assert chart_offenders([chart]) == []
    finally:
        context.close()


def _phone_chart(browser, grpo_chart_server, chart, name):
    context = browser.new_context(viewport=VIEWPORTS["phone"], device_scale_factor=1, is_mobile=True)
    probe = PageProbe(context.new_page())
    grpo_chart_server(probe, chart, name)
    return context, probe


def _vconcat_with_long_fixed_labels():
    """Two layered views stacked with shared params (like the oscillator's hero explorer): labels
    placed at fixed pixels above the plot, one far longer than a phone's column, a right-edge label
    on the row of a left one, and a two-line key under the second plot."""
    import altair as alt
    import pandas as pd

    k = alt.param(name="k", value=2, bind=alt.binding_range(min=1, max=5, step=1, name="k "))
    data = pd.DataFrame({"x": range(10), "y": [v * v for v in range(10)]})
    one = alt.Chart(alt.Data(values=[{"_": 0}]))
    line = alt.Chart(data).mark_line().encode(x=alt.X("x:Q", title="step"), y=alt.Y("y:Q", title="a y title"))
    verdict = one.mark_text(align="left", baseline="bottom", fontSize=18, fontWeight="bold").encode(
        x=alt.value(0), y=alt.value(-46), text=alt.value("underdamped")).properties(name="verdict")
    left = one.transform_calculate(label="'k = ' + k + ', k squared = ' + k * k").mark_text(
        align="left", baseline="bottom", fontSize=13).encode(x=alt.value(0), y=alt.value(-27), text="label:N")
    right = one.transform_calculate(label="'damping ratio = ' + format(1 / k, '.2f')").mark_text(
        align="right", baseline="bottom", fontSize=13).encode(x=alt.value("width"), y=alt.value(-27), text="label:N")
    long = one.transform_calculate(
        label="'threshold = ' + k + ' (continuous, C = 0) and ' + (k + 0.5) + ' (exact, the constant lag model)'",
    ).mark_text(align="left", baseline="bottom", fontSize=12).encode(x=alt.value(0), y=alt.value(-10), text="label:N")
    key = alt.Chart(alt.Data(values=[{"t": "solid: the exact threshold; dashed: the continuous threshold C = 0\n"
                                            "dotted: critical damping of the continuous model (overdamped below)"}])
                    ).mark_text(align="left", baseline="top", fontSize=11, lineBreak="\n").encode(
        x=alt.value(0), y=alt.value(200), text="t:N")
    top = alt.layer(line, verdict, left, right, long).properties(width=600, height=200)
    bottom = alt.layer(line, key).properties(width=600, height=160)
    return alt.vconcat(top, bottom, spacing=30).add_params(k)


def _stacked_panels_with_long_legends():
    """Panels stacked with a shared x scale (widgets.diagnostics_charts.stack_panels): several
    legends above each plot, unlimited labels, one far longer than a phone's column."""
    import altair as alt
    import pandas as pd

    data = pd.DataFrame({"x": list(range(20)) * 2, "y": [v % 7 for v in range(40)],
                         "curve": ["per step"] * 20 + ["forecast: mean of steps 400-500 if trained to step 500"] * 20})
    band = pd.DataFrame({"x": [10, 19], "lo": [1, 1], "hi": [5, 5], "what": ["90% band of the forecast"] * 2})
    top = {"orient": "top", "labelLimit": 0, "title": None}
    panel = alt.layer(
        alt.Chart(band).mark_area(opacity=0.3).encode(x="x:Q", y="lo:Q", y2="hi:Q",
                                                      fill=alt.Fill("what:N", legend=alt.Legend(**top))),
        alt.Chart(data).mark_line().encode(x=alt.X("x:Q", title="optimizer step"), y=alt.Y("y:Q", title="reward"),
                                           stroke=alt.Stroke("curve:N", legend=alt.Legend(**top))),
    ).properties(width=600, height=200)
    from widgets.diagnostics_charts import stack_panels

    return stack_panels(panel, panel.properties(title="groups with zero reward spread"))


@pytest.mark.parametrize("make", [_vconcat_with_long_fixed_labels, _stacked_panels_with_long_legends])
def test_stacked_views_with_fixed_size_texts_fit_a_phone(browser, grpo_chart_server, make):
    context, probe = _phone_chart(browser, grpo_chart_server, make(), make.__name__)
    try:
        (chart,) = probe.page.evaluate(CHART_TEXT)
        assert chart_offenders([chart]) == [], chart
        assert chart["natural"] <= chart["container"] + 1 and chart["scale"] == pytest.approx(1.0), chart
        assert chart["layout"] == "narrowed", chart
        # no two texts of the chart overlap (their boxes, read from the scenegraph)
        boxes = probe.page.evaluate("""() => { const v = document.querySelector('.vega-embed').grpoView; const out = [];
            (function walk(mark, ox, oy) { for (const it of mark.items || []) {
                if (mark.marktype === 'text' && it.text != null && String(it.text).trim() !== '' && it.bounds)
                    out.push([String(it.text).slice(0, 30), ox + it.bounds.x1, oy + it.bounds.y1,
                              ox + it.bounds.x2, oy + it.bounds.y2]);
                if (it.items) it.items.forEach(m => walk(m, ox + (it.x || 0), oy + (it.y || 0))); }
            })(v.scenegraph().root, 0, 0);
            return out; }""")
        overlaps = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                    if a[1] < b[3] - 1 and b[1] < a[3] - 1 and a[2] < b[4] - 1 and b[2] < a[4] - 1]
        assert overlaps == [], overlaps
        if make is _vconcat_with_long_fixed_labels:
            set_param(probe.page, 0, "k", 4)
            got = probe.page.wait_for_function(
                "() => { const v = document.querySelector('.vega-embed').grpoView; const out = [];"
                " (function w(m) { for (const it of m.items || []) { if (m.marktype === 'text') out.push(String(it.text));"  # noqa: E501
                " else if (it.items) it.items.forEach(w); } })(v.scenegraph().root);"
                " return out.some(t => t.startsWith('k = 4')) ? out : null; }", timeout=10000).json_value()
            assert any(t.startswith("k = 4") for t in got)
        assert probe.console_errors == []
    finally:
        context.close()
