"""The Explorers page in a real browser: saved explorers render, static sliders compute, offline.

Static charts: :func:`widgets.explorer_charts.static_phase_chart`,
:func:`~widgets.explorer_charts.static_bandit_chart`, :func:`~widgets.explorer_charts.static_forecast_chart`.
Labels are checked against what :mod:`grpo_core` computes for the same settings.
"""

from __future__ import annotations

import math

import pytest
from conftest import BUILT_HTML
from vega_page import chart_index, mark_texts, open_page, point_positions, scroll_to, set_param, wait_text

from grpo_core import oscillator, stability

pytestmark = [pytest.mark.browser, pytest.mark.book]

PAGE = "explorers.html"


@pytest.fixture
def explorers(book_server, probe):
    if not (BUILT_HTML / PAGE).exists():
        pytest.skip(f"{PAGE} is not in the built book")
    open_page(probe, f"{book_server}/{PAGE}")
    yield probe
    assert probe.console_errors == []
    assert probe.external_requests == []


def _verdict(eta, curvature, mu, k_ref, lag="constant"):
    c = oscillator.coefficients(eta, mu, k_ref, curvature, lag=lag)
    if not stability.is_stable_exact(c.a, mu, k_ref, lag):
        return "unstable"
    return "stable (exact recurrence only)" if c.regime == "unstable" else c.regime_label


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


@pytest.mark.parametrize("eta, curvature, mu, k_ref", [
    (0.2, 1.0, 0.5, 4),     # past the exact threshold 0.156: unstable
    (0.14, 1.0, 0.5, 4),    # between the continuous (0.125) and the exact threshold
    (0.05, 1.0, 0.5, 4),    # underdamped
    (0.01, 1.0, 0.5, 4),    # overdamped
    (0.05, 1.0, 0.5, 16),   # K_ref from the select: past both thresholds
    (0.3, 2.0, 0.9, 1),
])
def test_static_phase_chart_labels_the_current_point(explorers, eta, curvature, mu, k_ref):
    page = explorers.page
    i = chart_index(page, {"eta", "curvature", "mu", "k_ref"}, mark="phase_regime_label")
    # k_ref is a <select> here (snapped to the phase grid); the slider chart has a range instead.
    assert page.evaluate(f"document.querySelectorAll('.vega-embed')[{i}].querySelector('[name=k_ref]').tagName") == "SELECT"
    before = point_positions(page, i, "phase_point")
    for name, value in (("curvature", curvature), ("mu", mu), ("k_ref", k_ref), ("eta", eta)):
        set_param(page, i, name, value)
    expected = _verdict(eta, curvature, mu, k_ref)
    wait_text(page, i, "phase_regime_label", lambda t: t == expected)
    a_exact = float(stability.critical_a_exact(mu, k_ref, "constant"))
    label = mark_texts(page, i, "phase_point_label")[0]
    # Vega's format(x, '.3g') keeps trailing zeros, like Python's '#.3g'.
    assert label == f"η·K = {eta * curvature:#.3g}, K_ref = {k_ref} (exact threshold {a_exact:#.3g})"
    if (eta, curvature, k_ref) != (0.02, 1.0, 4):
        assert point_positions(page, i, "phase_point") != before
    scroll_to(page, i)
    explorers.screenshot(f"explorers-phase-{expected.split()[0]}")


def test_static_bandit_chart_follows_k_ref(explorers):
    from widgets.explorer_charts import static_bandit_grid

    grid = static_bandit_grid(eta=0.2, mu=0.5, beta=1.0, group_size=8)  # as on the page
    labels = grid["labels"].set_index("k_ref")
    page = explorers.page
    i = chart_index(page, {"k_ref"}, mark="bandit_regime_label")
    first_unstable = int(labels.index[~labels.stable_exact].min())
    for k in (2, first_unstable, 16):
        set_param(page, i, "k_ref", k)
        wait_text(page, i, "bandit_regime_label", lambda t, k=k: t == labels.loc[k, "text"])
    assert "unstable" in labels.loc[first_unstable, "text"]
    scroll_to(page, i)
    explorers.screenshot("explorers-bandit-unstable")


def test_static_forecast_chart_follows_the_fit_window(explorers):
    page = explorers.page
    i = chart_index(page, {"fraction"}, mark="forecast_label")
    for pct in (20, 60, 90):
        set_param(page, i, "fraction", pct)
        text = wait_text(page, i, "forecast_label", lambda t, p=pct: t.startswith(f"fit on the first {p}%"))
        assert "plateau" in text and "actual" in text
    scroll_to(page, i)
    explorers.screenshot("explorers-forecast")


def test_slider_input_to_redraw_is_fast(explorers):
    """Time from a slider input to the redrawn label (Vega's dataflow + SVG render), median of 15."""
    page = explorers.page
    i = chart_index(page, {"eta", "curvature", "mu", "k_ref"}, mark="phase_regime_label")
    ms = page.evaluate(
        """async (i) => {
            const el = document.querySelectorAll('.vega-embed')[i];
            const input = el.querySelector('[name=eta]');
            const label = () => [...el.querySelectorAll('g.phase_point_label_marks text')].map(t => t.textContent).join();
            const times = [];
            for (let n = 0; n < 15; n++) {
                const before = label();
                const t0 = performance.now();
                input.value = String(0.01 + 0.004 * (n + 1));
                input.dispatchEvent(new Event('input', {bubbles: true}));
                while (label() === before) { await new Promise(r => requestAnimationFrame(r)); }
                times.push(performance.now() - t0);
            }
            times.sort((a, b) => a - b);
            return times[7];
        }""", i)
    assert math.isfinite(ms) and ms < 1000  # the benchmark reports the number; this only guards a hang
