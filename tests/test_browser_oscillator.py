"""The oscillator's hero explorer in a real browser (:func:`widgets.oscillator_charts.hero_explorer`):
one spec, two views (the trajectory and the phase diagram) driven by one set of controls, computed
on the page with no kernel. What is drawn is read back and compared with :mod:`grpo_core`.

The standalone tests serve the chart alone (the ``chart_server`` fixture, no book needed). The book
tests find the same chart by its ``log_eta`` control on the built chapter and on the Explorers page.
"""

from __future__ import annotations

import math

import numpy as np
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

from grpo_core.model import oscillator, stability, trajectories
from widgets import oscillator_charts as oc

pytestmark = [pytest.mark.browser]

PAGES = ["oscillator.html", "explorers.html"]
M = oc.hero_mark  # the marks' names in the page ("regime_label" -> "regime_label_0")


def _eta(log_eta: float) -> float:
    """The step size the page derives from the slider's notch ``log_eta``."""
    return float(oc.hero_eta_expression().evaluate(log_eta=log_eta))


def _r3(v: float) -> str:
    """d3's ``format(v, '.3~r')``, as the chart prints its numbers."""
    return np.format_float_positional(float(f"{v:.3g}"), trim="-")


def _verdict(eta, mu, k_ref, curvature=1.0, lag="constant", momentum="heavy_ball"):
    lib_lag, lib_k = ("refresh", 1) if lag == "ratio" else (lag, k_ref)
    c = oscillator.coefficients(eta, mu, lib_k, curvature, lag=lib_lag, momentum=momentum)
    return oscillator.VERDICT_LABELS[oscillator.coefficients_verdict(c)]


def _click(page, i, name, value):
    evaluate_chart(page, "([i, name, value]) => CHART(i)"
                   ".querySelector(`input[name=\"${name}\"][value=\"${value}\"]`).click()", [i, name, value])


def _labels(page, i) -> dict[str, list[str]]:
    return {m: mark_texts(page, i, M(m)) for m in ("regime_label", "eta_label", "zeta_label", "threshold_label",
                                                    "phase_regime_label", "phase_point_label", "k_ref_note")}


def _all_texts(page, i) -> list[str]:
    return evaluate_chart(page, "i => [...CHART(i).querySelectorAll('svg text')].map(t => t.textContent)", i)


def _assert_texts_inside(page, i) -> None:
    """Every text of chart ``i`` lies inside its SVG (a long label is not cut at the edge)."""
    out = evaluate_chart(
        page,
        """i => { const svg = CHART(i).querySelector('svg'), s = svg.getBoundingClientRect();
            return [...svg.querySelectorAll('text')].filter(t => t.textContent).map(t => {
                const r = t.getBoundingClientRect();
                return [t.textContent, r.left >= s.left - 0.5 && r.right <= s.right + 0.5]; })
                .filter(([, inside]) => !inside).map(([text]) => text); }""", i)
    assert out == [], out


def _phase_box(page, i) -> dict:
    """The phase diagram's plot area in page pixels (the background of the view holding the point)."""
    return evaluate_chart(
        page,
        """i => { const g = CHART(i).querySelector('g.phase_point_1_marks').closest('g.mark-group');
            const r = g.querySelector(':scope > g > path.background').getBoundingClientRect();
            return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; }""", i)


def _point_px(page, i) -> tuple[float, float]:
    """Centre of the current point on the phase diagram, in page pixels."""
    return tuple(evaluate_chart(
        page,
        """i => { const r = CHART(i).querySelector('g.phase_point_1_marks path').getBoundingClientRect();
            return [(r.left + r.right) / 2, (r.top + r.bottom) / 2]; }""", i))


def _line_px(page, i, mark) -> list[tuple[float, float]]:
    """Vertices of the line mark ``mark`` of chart ``i``, in page pixels."""
    return [tuple(p) for p in evaluate_chart(
        page,
        """([i, mark]) => { const p = CHART(i).querySelector(`g.${mark}_marks path`);
            if (!p) return [];
            const m = p.getScreenCTM(), d = p.getAttribute('d');
            const n = (d.match(/-?\\d+(?:\\.\\d+)?(?:e-?\\d+)?/g) || []).map(Number), out = [];
            for (let k = 0; k + 1 < n.length; k += 2)
                out.push([m.a * n[k] + m.c * n[k + 1] + m.e, m.b * n[k] + m.d * n[k + 1] + m.f]);
            return out; }""", [i, mark])]


def _check_threshold_crossing(probe, i, tag):
    """Below the thresholds the trajectory drawn is grpo_core's closed form; past the exact threshold
    both views read "unstable" and the numbers are grpo_core's, thresholds in eta K."""
    page = probe.page
    mu, k_ref, curvature = 0.8, 4, 1.0
    set_param(page, i, "mu", mu)
    set_param(page, i, "k_ref", k_ref)
    set_param(page, i, "curvature", curvature)
    # below the continuous threshold (eta K K_ref < 1 - mu: eta < 0.05): stable, oscillatory
    eta = _eta(-1.35)
    assert eta == 0.0447 and _verdict(eta, mu, k_ref) == "underdamped"
    set_param(page, i, "log_eta", -1.35)
    wait_text(page, i, M("eta_label"), lambda t: t == "η = 0.0447, η·K = 0.0447")
    for mark in ("regime_label", "phase_regime_label"):
        wait_text(page, i, M(mark), lambda t: t == "underdamped")
    before = {"path": path_data(page, i, M("trajectory")), "point": point_positions(page, i, M("phase_point"))}
    # the curve on the page is grpo_core's closed form, read back through the axes (within 2 px; the
    # discrete recurrence, a different curve, is 5 to 10 px away from it here)
    c = oscillator.coefficients(eta, mu, k_ref, curvature)
    pts, px = line_points(page, i, M("trajectory"))
    assert min(x for x, _ in pts) < 5 and max(x for x, _ in pts) > 250  # the whole horizon was read
    t = np.linspace(0, 300, 3001)
    assert max_distance_px(pts, np.c_[t, 1.0 - trajectories.closed_form_trajectory(c, t)], px) < 2.0
    discrete = np.c_[np.arange(301), 1.0 - trajectories.discrete_trajectory(c, 300)]
    assert max_distance_px(pts, discrete, px) > 4.0  # the check can tell the two apart
    scroll_to(page, i)
    probe.screenshot(f"hero-{tag}-stable")
    # past the exact threshold of the discrete recurrence (a* = 0.0557; the continuous one is 0.05)
    a_exact = float(stability.critical_a_exact(mu, k_ref, "constant")[()])
    log_eta = math.ceil(math.log10(a_exact / curvature) * 100) / 100
    eta = _eta(log_eta)
    assert eta == 0.0562 and not stability.is_stable_exact(eta * curvature, mu, k_ref, "constant")
    set_param(page, i, "log_eta", log_eta)
    for mark in ("regime_label", "phase_regime_label"):  # both views, one control
        wait_text(page, i, M(mark), lambda t: t == "unstable")
    labels = _labels(page, i)
    assert labels["eta_label"] == [f"η = {_r3(eta)}, η·K = {_r3(eta * curvature)}"]
    zeta = oscillator.coefficients(eta, mu, k_ref, curvature).damping_ratio
    assert labels["zeta_label"] == [f"damping ratio ζ = {zeta:.2f}"]
    assert labels["threshold_label"] == [
        f"threshold η·K = {_r3((1 - mu) / k_ref)} (continuous, C = 0) and {_r3(a_exact)} (exact, constant lag)"]
    assert labels["phase_point_label"] == [
        f"point: K_ref = {k_ref}, η·K = {_r3(eta)}; exact threshold η·K = {_r3(a_exact)} (μ = {mu:.2f})"]
    assert labels["k_ref_note"] == []
    after = {"path": path_data(page, i, M("trajectory")), "point": point_positions(page, i, M("phase_point"))}
    assert after["path"] != before["path"] and after["point"] != before["point"]  # both views moved
    scroll_to(page, i)
    probe.screenshot(f"hero-{tag}-unstable")


def _check_modes(probe, i, tag):
    """Adam (the slider reaches past its threshold) and ratio-corrected reuse (K_ref has no effect, and
    the chart says so), as grpo_core computes them."""
    page = probe.page
    mu, k_ref = 0.8, 4
    for name, value in (("mu", mu), ("k_ref", k_ref), ("curvature", 1.0), ("log_eta", -1.70)):
        set_param(page, i, name, value)
    _click(page, i, "optimizer", 1)  # Adam: gain (1 - mu) eta K
    a_adam = float(stability.critical_a_exact(mu, k_ref, "constant", "ema")[()])
    assert round(a_adam, 3) == 0.279
    log_eta = math.ceil(math.log10(a_adam) * 100) / 100  # the first notch past Adam's exact threshold
    assert log_eta <= float(evaluate_chart(page, "i => CHART(i).querySelector('[name=log_eta]').max", i))
    set_param(page, i, "log_eta", log_eta)
    for mark in ("regime_label", "phase_regime_label"):
        wait_text(page, i, M(mark), lambda t: t == "unstable")
    assert _verdict(_eta(log_eta), mu, k_ref, momentum="ema") == "unstable"
    assert mark_texts(page, i, M("threshold_label")) == [
        f"threshold η·K = 0.25 (continuous, C = 0) and {_r3(a_adam)} (exact, constant lag)"]
    set_param(page, i, "log_eta", log_eta - 0.01)  # one notch back: stable again (exact recurrence only)
    below = _verdict(_eta(log_eta - 0.01), mu, k_ref, momentum="ema")
    assert below == "stable (exact recurrence only)"
    wait_text(page, i, M("regime_label"), lambda t: t == below)
    scroll_to(page, i)
    probe.screenshot(f"hero-{tag}-adam")
    # ratio-corrected reuse: the on-policy recurrence whatever K_ref, and the chart says so
    _click(page, i, "lag_model", 2)
    on_policy = float(stability.critical_a_exact(mu, 1, "refresh", "ema")[()])
    thr = f"threshold η·K = {_r3(on_policy)} (exact, ratio-corrected reuse); no continuous threshold (no lag)"
    wait_text(page, i, M("threshold_label"), lambda t: t == thr)
    wait_text(page, i, M("k_ref_note"), lambda t: t == oc.K_REF_NO_EFFECT)
    before = _labels(page, i)
    point = point_positions(page, i, M("phase_point"))
    set_param(page, i, "k_ref", 16)
    deadline = 50
    while point_positions(page, i, M("phase_point")) == point and deadline:  # the point slides along K_ref
        page.wait_for_timeout(100)
        deadline -= 1
    after = _labels(page, i)
    assert {k: v for k, v in after.items() if k != "phase_point_label"} == \
        {k: v for k, v in before.items() if k != "phase_point_label"}  # ... and nothing else changes
    assert after["regime_label"] == [_verdict(_eta(log_eta - 0.01), mu, 16, lag="ratio", momentum="ema")]
    assert not [t for t in _all_texts(page, i) if "none" in t]
    _assert_texts_inside(page, i)
    scroll_to(page, i)
    probe.screenshot(f"hero-{tag}-adam-ratio")
    _click(page, i, "lag_model", 0)
    wait_text(page, i, M("threshold_label"), lambda t: t.endswith("(exact, constant lag)"))
    assert mark_texts(page, i, M("k_ref_note")) == []


# --- the chart alone ------------------------------------------------------------------------------


@pytest.fixture
def hero(chart_server, probe):
    chart_server(probe, oc.hero_explorer(), "hero")
    i = chart_index(probe.page, {"log_eta", "k_ref"}, mark=M("regime_label"))
    yield probe, i
    assert probe.console_errors == []
    assert probe.external_requests == []


def test_hero_defaults_and_log_eta_slider(hero):
    probe, i = hero
    page = probe.page
    attrs = evaluate_chart(page, "i => { const el = CHART(i).querySelector('[name=log_eta]');"
                                 " return [el.type, el.min, el.max, el.step, el.value]; }", i)
    assert attrs[0] == "range" and [float(a) for a in attrs[1:]] == [-5, 4, 0.01, -1.7]
    assert evaluate_chart(page, "i => CHART(i).querySelector('[name=k_ref]').tagName", i) == "SELECT"
    labels = _labels(page, i)
    assert labels["regime_label"] == labels["phase_regime_label"] == [_verdict(0.02, 0.8, 4)] == ["underdamped"]
    assert labels["eta_label"] == ["η = 0.02, η·K = 0.02"]
    # the figure fits the book's text column at 1280 px (about 720 px) without scaling down
    width = evaluate_chart(page, "i => CHART(i).querySelector('svg').getBoundingClientRect().width", i)
    assert width <= 720
    sizes = evaluate_chart(page, "i => [...CHART(i).querySelectorAll('svg text')]"
                                 ".map(t => parseFloat(getComputedStyle(t).fontSize))", i)
    assert min(sizes) >= 10
    _assert_texts_inside(page, i)
    scroll_to(page, i)
    probe.screenshot("hero-defaults")


def test_hero_log_eta_past_the_exact_threshold_moves_both_views(hero):
    probe, i = hero
    _check_threshold_crossing(probe, i, "standalone")


def test_hero_k_ref_moves_the_point_and_the_trajectory_label(hero):
    probe, i = hero
    page = probe.page
    x0, _ = _point_px(page, i)
    before = _labels(page, i)
    set_param(page, i, "k_ref", 16)
    a16 = float(stability.critical_a_exact(0.8, 16)[()])
    wait_text(page, i, M("threshold_label"), lambda t: t == (
        f"threshold η·K = {_r3(0.2 / 16)} (continuous, C = 0) and {_r3(a16)} (exact, constant lag)"))
    verdict = _verdict(0.02, 0.8, 16)
    assert verdict != before["regime_label"][0]
    wait_text(page, i, M("regime_label"), lambda t: t == verdict)
    wait_text(page, i, M("phase_regime_label"), lambda t: t == verdict)
    assert mark_texts(page, i, M("phase_point_label"))[0].startswith("point: K_ref = 16, η·K = 0.02;")
    x1, _ = _point_px(page, i)
    box = _phase_box(page, i)
    # the x-axis is log over [1/1.25, 64*1.25]: K_ref 4 -> 16 is two doublings to the right
    per_doubling = (box["right"] - box["left"]) * math.log10(2) / math.log10(100)
    assert abs((x1 - x0) - 2 * per_doubling) < 1.5
    zeta = oscillator.coefficients(0.02, 0.8, 16, 1.0).damping_ratio
    assert mark_texts(page, i, M("zeta_label")) == [f"damping ratio ζ = {zeta:.2f}".replace("−", "-")]


def test_hero_adam_and_ratio_corrected_modes(hero):
    probe, i = hero
    _check_modes(probe, i, "standalone")


@pytest.mark.parametrize("mu, k_ref", [(0.8, 4), (0.5, 16)])
def test_hero_critical_damping_curve_separates_the_regimes(hero, mu, k_ref):
    """The dotted curve is zeta = 1 of the continuous model (grpo_core's coefficients): drawn at its
    true height, and a point just below it reads overdamped, just above underdamped."""
    probe, i = hero
    page = probe.page
    set_param(page, i, "mu", mu)
    set_param(page, i, "k_ref", k_ref)
    lo, hi = oc.hero_frames(oc.hero_table())[(0, 0)]
    a_cd = {k: float(stability.critical_a_damping(mu, k)[()]) for k in oc.PHASE_K_REFS}
    wait_text(page, i, M("phase_point_label"), lambda t: f"(μ = {mu:.2f})" in t and f"K_ref = {k_ref}," in t)
    box = _phase_box(page, i)

    def y_px(a):
        return box["top"] + (box["bottom"] - box["top"]) * (math.log10(hi) - math.log10(a)) / math.log10(hi / lo)

    curve = _line_px(page, i, M("critical_damping"))
    assert len(curve) == len(oc.PHASE_K_REFS)
    for (_, y), k in zip(curve, oc.PHASE_K_REFS):
        assert abs(y - y_px(a_cd[k])) < 1.0, k
        assert oscillator.coefficients(a_cd[k], mu, k, 1.0).damping_ratio == pytest.approx(1.0, abs=1e-5)
    assert mark_texts(page, i, M("critical_damping_label")) == ["critical damping ζ = 1"]
    below = math.floor(math.log10(a_cd[k_ref]) * 100) / 100  # the notches either side of the curve
    # the notches just below and above it (2% apart: the labels), and 12% away (2 px: the picture)
    for log_eta, regime in ((below, "overdamped"), (below + 0.01, "underdamped"),
                            (below - 0.05, "overdamped"), (below + 0.06, "underdamped")):
        eta = _eta(log_eta)
        c = oscillator.coefficients(eta, mu, k_ref, 1.0)
        assert c.regime_label == regime and (c.damping_ratio > 1) == (regime == "overdamped")
        set_param(page, i, "log_eta", log_eta)
        for mark in ("regime_label", "phase_regime_label"):
            wait_text(page, i, M(mark), lambda t, r=regime: t == r)
        wait_text(page, i, M("eta_label"), lambda t, e=eta: t.startswith(f"η = {_r3(e)},"))
        _, y = _point_px(page, i)
        assert abs(y - y_px(eta)) < 1.0  # the point at its eta K
        if abs(log_eta - below) > 0.02:  # and on the side of the drawn curve its label says
            curve_y = np.interp(_point_px(page, i)[0], [x for x, _ in curve], [y for _, y in curve])
            assert (y - curve_y > 1.0) if regime == "overdamped" else (curve_y - y > 1.0)
    scroll_to(page, i)
    probe.screenshot(f"hero-critical-damping-{mu}")


# --- the built book ------------------------------------------------------------------------------


@pytest.mark.book
@pytest.mark.parametrize("page_name", PAGES)
def test_book_hero_eta_past_the_threshold_reads_unstable(book_server, probe, page_name):
    open_built_page(probe, book_server, page_name)
    i = chart_index(probe.page, {"log_eta", "k_ref", "optimizer"}, mark=M("regime_label"))
    _check_threshold_crossing(probe, i, page_name[:-5])
    assert probe.console_errors == []
    assert probe.external_requests == []


@pytest.mark.book
@pytest.mark.parametrize("page_name", PAGES)
def test_book_hero_optimizer_and_reuse_controls(book_server, probe, page_name):
    open_built_page(probe, book_server, page_name)
    i = chart_index(probe.page, {"log_eta", "k_ref", "optimizer"}, mark=M("regime_label"))
    _check_modes(probe, i, page_name[:-5])
    assert probe.console_errors == []
    assert probe.external_requests == []
