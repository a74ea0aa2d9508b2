"""The Explorers page in a real browser: saved explorers render, static sliders compute, offline.

Static charts: :func:`widgets.oscillator_charts.hero_explorer`,
:func:`~widgets.explorer_charts.static_bandit_chart`, :func:`~widgets.laws_charts.static_forecast_chart`.
Labels are checked against what :mod:`grpo_core` computes for the same settings.
"""

from __future__ import annotations

import math

import pytest
from vega_page import (
    chart_index,
    evaluate_chart,
    line_points,
    mark_texts,
    max_distance_px,
    open_built_page,
    path_data,
    point_positions,
    scroll_to,
    set_param,
    wait_text,
)

from grpo_core.model import oscillator, stability

pytestmark = [pytest.mark.browser, pytest.mark.book]

PAGE = "explorers.html"


@pytest.fixture
def explorers(book_server, probe):
    open_built_page(probe, book_server, PAGE)
    yield probe
    assert probe.console_errors == []
    assert probe.external_requests == []


@pytest.fixture
def opened(book_server, probe):
    """Open a built chapter (the static charts also sit on their own chapters' pages)."""
    def _open(name):
        open_built_page(probe, book_server, name)
        return probe
    yield _open
    assert probe.console_errors == []
    assert probe.external_requests == []


@pytest.fixture(scope="module")
def qwen_forecast_grid():
    """The grid both pages precompute from the Qwen run's raw reward."""
    from grpo_core.runs import datasets, logs
    from widgets.laws_charts import static_forecast_grid

    return static_forecast_grid(logs.read_log(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth")))


def _verdict(eta, curvature, mu, k_ref, lag="constant"):
    c = oscillator.coefficients(eta, mu, k_ref, curvature, lag=lag)
    return oscillator.VERDICT_LABELS[oscillator.coefficients_verdict(c)]


def test_saved_explorers_render_with_their_charts(explorers):
    page = explorers.page
    # Four explorers' saved state: their controls and their charts (inside widget Output areas).
    page.wait_for_selector(".widget-slider", timeout=20_000)
    assert page.locator(".widget-slider").count() >= 20
    n_widget_charts = page.evaluate(
        "() => [...document.querySelectorAll('.vega-embed')].filter(e => e.closest('.widget-output')"
        " && e.querySelector('svg, canvas')).length")
    assert n_widget_charts >= 5  # oscillator (2), bandit, group size, log (2)
    body = page.inner_text("body")
    for text in ("Oscillator explorer", "Bandit explorer", "Group-size explorer", "Log explorer",
                 "regime: underdamped", "live on Colab/Binder"):
        assert text in body, text
    # MathJax 3 still typesets next to the widgets' MathJax 2 shim (book/assets/mathjax-hub-shim.js).
    page.wait_for_selector("mjx-container", timeout=20_000)
    assert page.evaluate("typeof window.MathJax.typesetPromise") == "function"
    assert page.evaluate("typeof window.MathJax.Hub.Queue") == "function"
    page.evaluate("document.querySelector('.widget-output .vega-embed').scrollIntoView({block: 'center'})")
    explorers.screenshot("explorers-page")


def test_saved_explorers_have_no_dead_control(explorers):
    # issue 17: a saved explorer's handle could be dragged and its Run/Upload clicked, and nothing
    # happened. Each saved explorer is now greyed out, every control disabled, with a launch note.
    page = explorers.page
    page.wait_for_selector(".widget-slider", timeout=20_000)
    state = page.evaluate(
        "() => { const views = document.querySelectorAll("
        "'script[type=\"application/vnd.jupyter.widget-view+json\"]');"
        " const boxes = [...document.querySelectorAll('.grpo-static-widget')];"
        " const controls = boxes.flatMap(b => [...b.querySelectorAll('input, button, select, textarea')]);"
        " const notes = [...document.querySelectorAll('.grpo-static-note')];"
        " return {views: views.length, boxes: boxes.length, controls: controls.length,"
        "  enabled: controls.filter(c => !c.disabled).length,"
        "  clickable: boxes.filter(b => getComputedStyle(b).pointerEvents !== 'none').length,"
        "  notes: notes.map(n => [n.innerText, [...n.querySelectorAll('a')].map(a => a.href)]),"
        "  outside: [...document.querySelectorAll('.widget-slider input, .widget-button, .widget-upload')]"
        "   .filter(c => !c.closest('.grpo-static-widget')).length}; }")
    assert state["views"] >= 4 and state["boxes"] == state["views"]  # every saved explorer is marked
    assert state["controls"] >= 20 and state["enabled"] == 0 and state["clickable"] == 0
    assert state["outside"] == 0
    assert len(state["notes"]) == state["boxes"]
    for text, hrefs in state["notes"]:
        assert "need a Python kernel" in text
        assert any("colab.research.google.com" in h for h in hrefs), hrefs
        assert any("mybinder.org" in h for h in hrefs), hrefs
    # a drag on a saved slider changes nothing
    handle = page.locator(".grpo-static-widget .widget-slider").first
    before = handle.inner_text()
    box = handle.bounding_box()
    page.mouse.move(box["x"] + 5, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 5, box["y"] + box["height"] / 2)
    page.mouse.up()
    assert handle.inner_text() == before
    page.evaluate("document.querySelector('.grpo-static-note').scrollIntoView({block: 'start'})")
    explorers.screenshot("explorers-static-note")


# Effective contrast of each text of a saved explorer's output against the page: its colour, made
# lighter by the opacity of every ancestor (composited on the white page), per WCAG.
SAVED_TEXT_CONTRAST = """() => {
    const lum = c => { const v = c.match(/[\\d.]+/g).slice(0, 3).map(x => +x / 255)
        .map(x => x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4);
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
    const out = [];
    for (const box of document.querySelectorAll('.grpo-static-widget')) {
        for (const el of box.querySelectorAll('.widget-html *, .widget-output li, .widget-output div')) {
            const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
            if (!own || el.closest('svg')) continue;
            let alpha = 1;
            for (let a = el; a; a = a.parentElement) alpha *= +getComputedStyle(a).opacity;
            const rgb = getComputedStyle(el).color.match(/[\\d.]+/g).map(Number);
            const a = alpha * (rgb.length > 3 ? rgb[3] : 1);
            const mixed = `rgb(${rgb.slice(0, 3).map(c => c * a + 255 * (1 - a)).join(',')})`;
            out.push([own.slice(0, 40), (1.05) / (lum(mixed) + 0.05)]);
        }
    }
    return out;
}"""


@pytest.mark.parametrize("page_name", [PAGE, "fitting.html"])
def test_saved_view_text_is_readable(opened, page_name):
    """Issue 17 (cosmetic): the saved explorers' text (the log explorer's "Not checked" list, the
    forecast label) was very light grey: the whole saved widget was drawn at 60% opacity. Only the
    controls are greyed now; every text of the saved view reaches 4.5:1 against the page."""
    page = opened(page_name).page
    page.wait_for_selector(".grpo-static-widget .widget-html", timeout=20_000)
    texts = page.evaluate(SAVED_TEXT_CONTRAST)
    assert len(texts) >= 5
    low = [(t, round(c, 2)) for t, c in texts if c < 4.5]
    assert low == [], low
    if page_name == "fitting.html":
        assert any(t.startswith("Not checked") for t, _ in texts)
    # the controls stay greyed out
    assert page.evaluate("() => getComputedStyle(document.querySelector("
                         "'.grpo-static-widget .widget-slider')).opacity") == "0.6"


@pytest.mark.parametrize("page_name, log_eta, curvature, mu, k_ref", [
    (PAGE, -0.70, 1.0, 0.5, 4),     # eta 0.2, past the exact threshold 0.156: unstable
    (PAGE, -0.85, 1.0, 0.5, 4),     # eta 0.141, between the continuous (0.125) and the exact threshold
    (PAGE, -1.30, 1.0, 0.5, 4),     # eta 0.0501, underdamped
    (PAGE, -2.00, 1.0, 0.5, 4),     # eta 0.01, overdamped
    (PAGE, -1.30, 1.0, 0.5, 16),    # K_ref from the select: past both thresholds
    (PAGE, -0.52, 2.0, 0.9, 1),
    ("oscillator.html", -0.85, 1.0, 0.5, 4),  # the same chart on the derivation chapter
    ("oscillator.html", -2.00, 1.0, 0.5, 4),
])
def test_hero_phase_view_labels_the_current_point(opened, page_name, log_eta, curvature, mu, k_ref):
    """The hero explorer's phase diagram (:func:`widgets.oscillator_charts.hero_explorer`): the point's
    verdict and label, thresholds in eta K, as grpo_core computes them."""
    import numpy as np

    from widgets.oscillator_charts import hero_eta_expression, hero_mark

    explorers = opened(page_name)
    page = explorers.page
    i = chart_index(page, {"log_eta", "curvature", "mu", "k_ref"}, mark=hero_mark("phase_regime_label"))
    # k_ref is a <select> (snapped to the phase grid), one control for both views
    assert evaluate_chart(page, "i => CHART(i).querySelector('[name=k_ref]').tagName", i) == "SELECT"
    before = point_positions(page, i, hero_mark("phase_point"))
    for name, value in (("curvature", curvature), ("mu", mu), ("k_ref", k_ref), ("log_eta", log_eta)):
        set_param(page, i, name, value)
    eta = float(hero_eta_expression().evaluate(log_eta=log_eta))
    expected = _verdict(eta, curvature, mu, k_ref)
    for mark in ("phase_regime_label", "regime_label"):
        wait_text(page, i, hero_mark(mark), lambda t: t == expected)
    a_exact = float(stability.critical_a_exact(mu, k_ref, "constant"))

    def r3(v):  # d3's format(v, '.3~r'), as the chart prints
        return np.format_float_positional(float(f"{v:.3g}"), trim="-")

    label = mark_texts(page, i, hero_mark("phase_point_label"))[0]
    assert label == f"point: K_ref = {k_ref}, η·K = {r3(eta * curvature)}; exact threshold η·K = {r3(a_exact)} " \
                    f"(μ = {mu:.2f})"
    assert point_positions(page, i, hero_mark("phase_point")) != before
    scroll_to(page, i)
    explorers.screenshot(f"{page_name[:-5]}-hero-phase-{expected.split()[0]}")


@pytest.mark.parametrize("page_name", [PAGE, "bandit.html"])
def test_static_bandit_chart_follows_k_ref(opened, page_name):
    from widgets.explorer_charts import BANDIT_DEFAULTS, static_bandit_grid

    explorers = opened(page_name)
    d = BANDIT_DEFAULTS  # one setting on both pages
    grid = static_bandit_grid(eta=d["eta"], mu=d["mu"], beta=d["beta"], group_size=d["group_size"])
    labels = grid["labels"].set_index("k_ref")
    page = explorers.page
    i = chart_index(page, {"k_ref"}, mark="bandit_measured_label")
    first_unstable = int(labels.index[~labels.stable_exact].min())
    seen = []
    for k in (2, first_unstable, 16):
        set_param(page, i, "k_ref", k)
        wait_text(page, i, "bandit_regime_label", lambda t, k=k: t == labels.loc[k, "predicted"])
        wait_text(page, i, "bandit_measured_label", lambda t, k=k: t == labels.loc[k, "measured"])
        seen.append(path_data(page, i, "bandit_curves"))
    assert labels.loc[first_unstable, "predicted"].endswith("fixed point unstable")
    # the nonlinear bandit does not diverge: past the threshold it is measured on a bounded cycle
    assert labels.loc[first_unstable, "measured"].startswith("measured: bounded cycle, period")
    assert seen[0] != seen[1] != seen[2]  # the curves follow the slider, not only the label
    scroll_to(page, i)
    explorers.screenshot(f"{page_name[:-5]}-bandit-unstable")


@pytest.mark.parametrize("page_name", [PAGE, "fitting.html"])
def test_static_forecast_chart_follows_the_fit_window(opened, page_name, qwen_forecast_grid):
    explorers = opened(page_name)
    labels = qwen_forecast_grid["labels"].set_index("fraction")
    curves = qwen_forecast_grid["curves"]
    page = explorers.page
    i = chart_index(page, {"fraction"}, mark="forecast_label")
    for pct in (20, 60, 80):  # the band is calibrated from 20% to 80% of a run
        set_param(page, i, "fraction", pct)
        text = wait_text(page, i, "forecast_label", lambda t, p=pct: t.startswith(f"seen: the first {p}%"))
        # the numbers grpo_core computes for that window (the label wraps: its lines join without the space)
        assert text.replace(" ", "") == labels.loc[pct, "text"].replace(" ", "")
        # the forecast drawn is that window's (within 2 px)
        pts, px = line_points(page, i, "forecast_curve")
        want = curves[curves.fraction == pct][["step", "forecast"]].to_numpy()
        assert max_distance_px(pts, want, px) < 2.0
    scroll_to(page, i)
    explorers.screenshot(f"{page_name[:-5]}-forecast")


def test_slider_input_to_redraw_is_fast(explorers):
    """Time from a slider input to the redrawn label (Vega's dataflow + SVG render), median of 15, on
    the hero explorer (both views redraw)."""
    from widgets.oscillator_charts import hero_mark

    page = explorers.page
    i = chart_index(page, {"log_eta", "curvature", "mu", "k_ref"}, mark=hero_mark("phase_regime_label"))
    ms = evaluate_chart(
        page,
        """async ([i, mark]) => {
            const el = CHART(i);
            const input = el.querySelector('[name=log_eta]');
            const label = () => [...el.querySelectorAll(`g.${mark}_marks text`)]
                .map(t => t.textContent).join();
            const times = [];
            for (let n = 0; n < 15; n++) {
                const before = label();
                const t0 = performance.now();
                input.value = String(-2 + 0.03 * (n + 1));
                input.dispatchEvent(new Event('input', {bubbles: true}));
                while (label() === before) { await new Promise(r => requestAnimationFrame(r)); }
                times.push(performance.now() - t0);
            }
            times.sort((a, b) => a - b);
            return times[7];
        }""",
        [i, hero_mark("phase_point_label")],
    )
    assert math.isfinite(ms) and ms < 1000  # the benchmark reports the number; this only guards a hang
