"""Single charts in a real browser, each on its own page with the book's vendored Vega files (no
book build): the drawn marks are read back from the SVG, for the charts that misled (issue 17).

* Fig. 2 of the oscillator chapter (:func:`widgets.oscillator_charts.regime_trajectories_chart`):
  the unstable panel's curves run out of the frame once, no vertical strokes.
* The bandit slider chart (:func:`widgets.explorer_charts.static_bandit_chart`, bandit chapter and
  Explorers): its labels stay inside the chart at every K_ref, the dashed prediction (the exact
  recurrence) stays in the frame exactly when the prediction label, the library's verdict, says
  stable, and where the bandit cycles the measured label is the chapter's classification of the
  mean-field line the chart draws.
* The oscillator slider chart (:func:`widgets.oscillator_charts.slider_chart`): a barely growing
  oscillation (zeta = -0.01) is drawn for its whole horizon, slow growth as slow growth.
* The group-size slider chart (:func:`widgets.ustat_charts.group_size_slider_chart`): the budget
  slider moves over log2 N, and the chart shows N.
"""

from __future__ import annotations

import re

import pytest
from vega_page import TIMEOUT

pytestmark = [pytest.mark.browser]

_NUM = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def path_vertices(d: str) -> list[tuple[float, float]]:
    """The vertices of an SVG path made of M/L commands (Vega's linear lines), in the mark group's
    coordinates (the plot area is ``[0, width] x [0, height]``)."""
    if re.search(r"[CQSTAHVZ]", d, re.I):
        raise AssertionError(f"not a polyline: {d[:80]}")
    nums = [float(x) for x in _NUM.findall(d)]
    return list(zip(nums[::2], nums[1::2]))


def drawn(page, mark_prefix: str) -> list[dict]:
    """For each mark group whose Vega-Lite name starts with ``mark_prefix``: the path data of its
    items, the transforms of its symbols and the plot area's size (the enclosing group's clip)."""
    return page.evaluate(
        """(prefix) => [...document.querySelectorAll('g.role-mark')]
            .filter(g => g.getAttribute('class').split(' ').some(c => c.startsWith(prefix) && c.endsWith('_marks')))
            .map(g => {
                const cell = g.closest('g.mark-group') ;
                const bg = cell && cell.querySelector(':scope > g > path.background');
                const box = bg ? bg.getBBox() : null;
                return {cls: g.getAttribute('class'),
                        paths: [...g.querySelectorAll('path')].map(p => p.getAttribute('d')),
                        transforms: [...g.querySelectorAll('path')].map(p => p.getAttribute('transform')),
                        frame: box ? [box.width, box.height] : null};
            })""",
        mark_prefix,
    )


def test_fig2_unstable_panel_is_cut_not_clipped(chart_server, probe):
    from widgets.oscillator_charts import UNSTABLE_FRAME, regime_trajectories_chart

    chart = regime_trajectories_chart(mu=0.5, k_ref=4, curvature=1.0, n_steps=120)  # as in the chapter
    chart_server(probe, chart, "fig2")
    page = probe.page
    page.wait_for_selector("g.role-mark path", timeout=TIMEOUT * 1000)
    lines = drawn(page, "regime_line_")
    assert len(lines) == 4
    for mark in lines:
        width, height = mark["frame"]
        assert (width, height) == (260, 150)
        (d,) = mark["paths"]
        pts = path_vertices(d)
        inside = [0 <= x <= width + 0.5 and -0.5 <= y <= height + 0.5 for x, y in pts]
        if "unstable" in mark["cls"]:
            # the curve leaves the frame once and ends there: every vertex but the last inside,
            # the last half a frame beyond the edge (not at +-1e6, which drew the vertical strokes)
            assert all(inside[:-1]) and not inside[-1]
            assert -0.5 * height - 1 <= pts[-1][1] <= 1.5 * height + 1
            assert len(pts) > 20  # a few growing oscillations are drawn before it leaves
            assert pts[-1][0] < width * 0.9  # ... and it leaves well before the last step
        else:
            assert all(inside) and pts[-1][0] == pytest.approx(width, abs=0.5)  # the whole horizon
    # the exact recurrence's dots: in the unstable panel none after the first one outside
    (dots,) = drawn(page, "regime_dots_unstable")
    ys = [float(_NUM.findall(t)[1]) for t in dots["transforms"]]
    outside = [not -0.5 <= y <= dots["frame"][1] + 0.5 for y in ys]
    assert outside[-1] and not any(outside[:-1])
    lo, hi = UNSTABLE_FRAME
    assert (lo, hi) == (-1.0, 3.0)
    page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'center'})")
    probe.screenshot("fig2-regimes")
    assert probe.console_errors == []
    assert probe.external_requests == []


def text_boxes(page, mark: str) -> list[dict]:
    """Text and bounding box (page pixels) of each text of mark ``mark``, with the chart svg's box."""
    return page.evaluate(
        """(mark) => [...document.querySelectorAll(`g.${mark}_marks text`)].map(t => {
            const r = t.getBoundingClientRect(), s = t.closest('svg').getBoundingClientRect();
            return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                    svg_left: s.left, svg_right: s.right};
        })""",
        mark,
    )


@pytest.fixture(scope="module")
def bandit_grid():
    from widgets.explorer_charts import BANDIT_DEFAULTS, static_bandit_grid

    d = BANDIT_DEFAULTS  # as in the chapter and Explorers
    return static_bandit_grid(eta=d["eta"], mu=d["mu"], beta=d["beta"], group_size=d["group_size"])


def test_bandit_chart_labels_fit_and_agree_with_the_dashed_prediction(chart_server, probe, bandit_grid):
    from vega_page import set_param, wait_text

    from widgets.explorer_charts import BANDIT_PREDICTIONS, static_bandit_chart

    labels = bandit_grid["labels"].set_index("k_ref")
    chart_server(probe, static_bandit_chart(bandit_grid, k_ref=4), "bandit")
    page = probe.page
    stable = "fixed point stable (exact recurrence only)"
    assert labels.loc[7, "predicted"].endswith(stable) and labels.loc[8, "predicted"].endswith(stable)
    assert labels.loc[9, "predicted"].endswith("fixed point unstable")
    marks = ("bandit_measured_label", "bandit_regime_label", "bandit_detail_label")
    for k in range(1, 17):
        set_param(page, 0, "k_ref", k)
        for mark, column in zip(marks, ("measured", "predicted", "detail")):
            wait_text(page, 0, mark, lambda t, k=k, column=column: t == labels.loc[k, column])
            (box,) = text_boxes(page, mark)
            assert box["svg_left"] <= box["left"] and box["right"] <= box["svg_right"], (k, box)
            assert "…" not in box["text"]  # not cut short by the mark's limit either
        tops = [text_boxes(page, mark)[0] for mark in marks]
        assert tops[0]["bottom"] <= tops[1]["top"] + 1 and tops[1]["bottom"] <= tops[2]["top"] + 1  # no overlap
        marks_drawn = drawn(page, "bandit_curves")
        width, height = marks_drawn[0]["frame"]
        dashes = page.evaluate(
            "() => [...document.querySelectorAll('g.bandit_curves_marks path')]"
            ".map(p => p.getAttribute('stroke-dasharray'))")
        paths = [d for m in marks_drawn for d in m["paths"]]
        assert len(paths) == len(dashes) == 4
        (d,) = [d for d, dash in zip(paths, dashes) if dash and dash.replace(" ", "") == "6,3"]
        pts = path_vertices(d)
        inside = all(-0.5 <= y <= height + 0.5 for _, y in pts)
        # the dashed curve is the exact recurrence: in the frame for all steps iff the verdict is stable
        assert inside == bool(labels.loc[k, "stable_exact"]), (k, labels.loc[k, "predicted"])
        if inside:
            assert pts[-1][0] == pytest.approx(width, abs=0.5)
        if k == 9:
            page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'center'})")
            probe.screenshot("bandit-k_ref-9")
    assert BANDIT_PREDICTIONS[0] in set(bandit_grid["curves"].curve)
    assert probe.console_errors == []
    assert probe.external_requests == []


def test_bandit_chart_shows_the_measured_cycle_of_the_curve_it_draws(chart_server, probe, bandit_grid):
    """At the first K_ref where the bandit cycles, the chart's measured label is the chapter's
    classification (classify_trajectory) of the exact mean field read back from the drawn line, and
    its period is that line's."""
    import numpy as np
    from vega_page import set_param, wait_text

    from grpo_core import bandit
    from grpo_core.bandit import BanditSpec
    from grpo_core.bandit.stability import classify_trajectory
    from widgets.explorer_charts import BANDIT_MEASURED, bandit_measured_verdict, static_bandit_chart
    from widgets.style import DARK2

    labels = bandit_grid["labels"].set_index("k_ref")
    k = int(labels.index[labels.measured_regime == "divergent"].min())
    p_star = bandit.fixed_point(BanditSpec.binary(group_size=8), 1.0).p_star
    chart_server(probe, static_bandit_chart(bandit_grid, k_ref=4), "bandit-cycle")
    page = probe.page
    set_param(page, 0, "k_ref", k)
    shown = wait_text(page, 0, "bandit_measured_label", lambda t: t.startswith("measured: bounded cycle"))
    (frame,) = {tuple(m["frame"]) for m in drawn(page, "bandit_curves")}
    width, height = frame
    green = DARK2["green"].lower()
    (d,) = page.evaluate(
        "(c) => [...document.querySelectorAll('g.bandit_curves_marks path')]"
        ".filter(p => (p.getAttribute('stroke') || '').toLowerCase() === c).map(p => p.getAttribute('d'))", green)
    xy = np.array(path_vertices(d))
    steps = int(bandit_grid["curves"].step.max())
    t = xy[:, 0] / width * steps
    p = 1.05 - xy[:, 1] / height * 1.1  # the y scale: [-0.05, 1.05] over the plot's height
    assert classify_trajectory(p, p_star)[()] == "divergent"
    from_page = bandit_measured_verdict(t, p, p_star)
    assert shown == labels.loc[k, "measured"] == from_page["text"]
    assert shown == f"measured: {BANDIT_MEASURED['divergent']}, period ≈ {from_page['period']:.0f} steps"
    assert labels.loc[k, "stable_exact"] is False or not labels.loc[k, "stable_exact"]
    assert probe.console_errors == []


@pytest.mark.parametrize("eta, zeta_text", [(0.02, "0.41"), (0.051, "-0.01"), (0.1, "-0.24")])
def test_slider_chart_shows_slow_growth_as_slow_growth(chart_server, probe, eta, zeta_text):
    import numpy as np
    from vega_page import line_points, mark_texts, max_distance_px, set_param, wait_text

    from grpo_core.model import oscillator as osc
    from grpo_core.model import trajectories
    from widgets.oscillator_charts import SLIDER_CAP, SLIDER_FRAME, slider_chart

    mu, k_ref = 0.8, 4  # as in the chapter
    chart_server(probe, slider_chart(eta=0.02, mu=mu, k_ref=k_ref), "slider")
    page = probe.page
    set_param(page, 0, "eta", eta)
    wait_text(page, 0, "zeta_label", lambda t: t == f"damping ratio ζ = {zeta_text}")
    c = osc.coefficients(eta, mu, k_ref, 1.0)
    t = np.linspace(0, 300, 3001)
    progress = 1.0 - trajectories.closed_form_trajectory(c, t)
    pts, px = line_points(page, 0, "trajectory", n=400)
    xs = np.array([x for x, _ in pts])
    ys = np.array([y for _, y in pts])
    ticks = [float(v.replace("\u2212", "-")) for v in page.evaluate(
        "() => [...document.querySelectorAll('g.role-axis')].filter(a => (a.getAttribute('aria-label') || '')"
        ".startsWith('Y-axis')).flatMap(a => [...a.querySelectorAll('g.role-axis-label text')]"
        ".map(t => t.textContent))")]
    lo, hi = min(ticks), max(ticks)
    if eta == 0.02:  # stable: the least frame, the whole horizon
        assert (lo, hi) == SLIDER_FRAME and xs.max() > 299
    elif eta == 0.051:
        # zeta = -0.01 (-0.0077): every swing of 300 steps drawn, inside the frame (which grew to hold
        # them: peaks 2.5, not cut at the first one past 2 near step 15), on grpo_core's closed form
        assert progress.max() > SLIDER_FRAME[1] and xs.max() > 299
        assert hi >= progress.max() and lo <= progress.min() and hi <= SLIDER_CAP[1]
        assert (ys[xs > 12] > SLIDER_FRAME[1]).sum() > 5  # beyond step 12, above the old frame's top
        assert max_distance_px(pts, np.c_[t, progress], px) < 2.0
    else:  # fast growth: cut where it reaches the cap, early
        assert xs.max() < 60 and lo >= SLIDER_CAP[0] and hi <= SLIDER_CAP[1]
        edge = SLIDER_CAP[0] if ys[-1] < 1 else SLIDER_CAP[1]
        assert abs(ys[-1] - edge) < 0.05 and edge in (lo, hi)  # it ends on the cap, the frame's edge
    assert mark_texts(page, 0, "regime_label")[0] == osc.VERDICT_LABELS[osc.coefficients_verdict(c)]
    # the three labels inside the chart, none over another (the verdict used to run into zeta's)
    boxes = [text_boxes(page, m)[0] for m in ("regime_label", "zeta_label", "threshold_label")]
    for b in boxes:
        assert b["svg_left"] <= b["left"] and b["right"] <= b["svg_right"]
    for a, b in zip(boxes, boxes[1:]):
        assert a["bottom"] <= b["top"] + 1 or a["right"] <= b["left"], (a, b)
    page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'center'})")
    probe.screenshot(f"slider-eta-{eta}")
    assert probe.console_errors == []
    assert probe.external_requests == []


def test_group_size_budget_slider_is_log2(chart_server, probe):
    import numpy as np
    from vega_page import mark_texts, set_param, wait_text

    from grpo_core.groupsize import constants_by_spread
    from widgets.ustat_charts import group_size_slider_chart

    grid = constants_by_spread(np.round(np.arange(0.01, 0.31, 0.01), 2), mean=0.2)  # as in the chapter
    chart_server(probe, group_size_slider_chart(grid, budget=1024, spread=0.1), "group_size")
    page = probe.page
    attrs = page.evaluate(
        "() => { const el = document.querySelector('input[name=log2_budget]');"
        " return [el.min, el.max, el.step, el.value]; }")
    assert [float(a) for a in attrs] == [6, 12, 1, 10]  # N from 64 to 4096, one notch per doubling
    assert mark_texts(page, 0, "budget_label") == ["N = 1024 rollouts per step"]
    for j in (6, 7, 9, 12):
        set_param(page, 0, "log2_budget", j)
        wait_text(page, 0, "budget_label", lambda t, j=j: t == f"N = {2**j} rollouts per step")
        # the feasible points are the powers of two that divide N = 2**j: G = 2 .. 2**j
        assert len(page.evaluate(
            "() => [...document.querySelectorAll('g.feasible_points_marks path')]")) == j
    page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'center'})")
    probe.screenshot("group-size-log2-budget")
    assert probe.console_errors == []
    assert probe.external_requests == []


@pytest.mark.parametrize("eta", [0.055, 0.065])
def test_slider_chart_draws_the_exact_recurrence_its_verdict_reads(chart_server, probe, eta):
    """Issue 17: at mu 0.8, K_ref 4, K 1 and eta in (0.050, 0.0557] the verdict reads "stable (exact
    recurrence only)" while the closed form swings out of the frame (+-4.5 at step ~180 for eta 0.055).
    The chart also draws the exact recurrence (dashed), computed on the page: it is grpo_core's
    discrete_trajectory (read back through the axes, within 2 px), and it runs all 300 steps in the
    frame exactly when the verdict says stable."""
    import numpy as np
    from vega_page import line_points, mark_texts, max_distance_px, set_param, wait_text

    from grpo_core.model import oscillator as osc
    from grpo_core.model import trajectories
    from widgets.oscillator_charts import SLIDER_CURVES, slider_chart

    mu, k_ref = 0.8, 4
    chart_server(probe, slider_chart(eta=0.02, mu=mu, k_ref=k_ref), "slider_exact")
    page = probe.page
    set_param(page, 0, "eta", eta)
    c = osc.coefficients(eta, mu, k_ref, 1.0)
    verdict = osc.VERDICT_LABELS[osc.coefficients_verdict(c)]
    assert verdict == ("stable (exact recurrence only)" if eta < 0.0557 else "unstable")
    wait_text(page, 0, "regime_label", lambda t: t == verdict)
    discrete = 1.0 - trajectories.discrete_trajectory(c, 300)
    pts, px = line_points(page, 0, "exact_trajectory", n=600)
    xs = np.array([x for x, _ in pts])
    inside = bool(np.all((discrete >= -3.0) & (discrete <= 5.0)))
    assert inside == (verdict != "unstable")
    # up to the first step out of the cap [-3, 5], that one drawn on the edge
    keep = np.arange(301) <= (300 if inside else int(np.argmax((discrete < -3) | (discrete > 5))))
    reference = np.c_[np.arange(301)[keep], np.clip(discrete[keep], -3.0, 5.0)]
    assert max_distance_px(pts, reference, px) < 2.0
    closed, _ = line_points(page, 0, "trajectory", n=400)
    if inside:
        assert xs.max() > 299  # the dashed curve the verdict is about: all 300 steps, in the frame
        assert max(x for x, _ in closed) < 200  # the closed form leaves the frame (step ~180)
    else:
        assert xs.max() < 200  # both run out of the frame
    dash = page.evaluate("() => document.querySelector('g.exact_trajectory_marks path')"
                         ".getAttribute('stroke-dasharray')")
    assert dash and dash.replace(" ", "") == "6,3"
    legend = page.evaluate("() => [...document.querySelectorAll('g.role-legend text')].map(t => t.textContent)")
    assert set(SLIDER_CURVES) <= set(legend)
    assert mark_texts(page, 0, "regime_label") == [verdict]
    page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'center'})")
    probe.screenshot(f"slider-exact-eta-{eta}")
    assert probe.console_errors == []
    assert probe.external_requests == []


def test_slider_threshold_label_reads_significant_digits(chart_server, probe):
    """mu 0.99, K_ref 16, K 5: a fixed .4f printed "0.0001 (continuous), 0.0001 (exact)"."""
    from vega_page import set_param, wait_text

    from grpo_core.model import stability
    from widgets.oscillator_charts import slider_chart

    chart_server(probe, slider_chart(), "slider_digits")
    page = probe.page
    for name, value in (("mu", 0.99), ("k_ref", 16), ("curvature", 5)):
        set_param(page, 0, name, value)
    exact = float(stability.critical_a_exact(0.99, 16)[()]) / 5
    want = f"unstable above η = {0.01 / 16 / 5:.3g} (continuous), {exact:.3g} (exact, constant lag)"
    wait_text(page, 0, "threshold_label", lambda t: t == want)
    assert probe.console_errors == []


def _plot_box(page) -> dict:
    """The plot area of the first chart, in page pixels (its background rect)."""
    return page.evaluate(
        "() => { const r = document.querySelector('.vega-embed svg g.mark-group path.background')"
        ".getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; }")


def _vertices_px(page, mark: str) -> list[tuple[float, float]]:
    """The vertices of the first path of mark ``mark``, in page pixels."""
    return [tuple(p) for p in page.evaluate(
        """(mark) => { const p = document.querySelector(`g.${mark}_marks path`);
            if (!p) return [];
            const m = p.getScreenCTM(), d = p.getAttribute('d');
            const n = (d.match(/-?\\d+(?:\\.\\d+)?(?:e-?\\d+)?/g) || []).map(Number), out = [];
            for (let k = 0; k + 1 < n.length; k += 2)
                out.push([m.a * n[k] + m.c * n[k + 1] + m.e, m.b * n[k] + m.d * n[k + 1] + m.f]);
            return out; }""", mark)]


def test_phase_chart_boundaries_stay_in_the_frame_and_the_point_is_whole(chart_server, probe):
    """Issue 17, Fig. 7 (oscillator chapter and Explorers): at mu = 0.99 the exact boundary used to hit
    the 0.001 floor at K_ref ~ 9 and run flat along the bottom to 64; at 0.95 the dashed continuous line
    left through the bottom; the point was pinned to the top corner at eta K = 5 and half cut off at
    K_ref = 1 and 64; the key was drawn over the boundaries. Now: every boundary vertex lies inside the
    frame at its true height (log scale read from the domain), the point is whole, an off-frame point
    is a triangle on the edge, and the key sits below the plot."""
    import math

    import numpy as np
    from vega_page import set_param, wait_text

    from grpo_core.model import stability
    from widgets.explorer_charts import PHASE_K_REFS, _phase_frame, static_phase_chart

    chart = static_phase_chart(eta=0.02, curvature=1.0, mu=0.8, k_ref=4, eta_max=3.0)
    spec = chart.to_dict()
    (lo, hi) = next(layer["encoding"]["y"]["scale"]["domain"] for layer in spec["layer"]
                    if layer.get("name") == "exact_boundary")
    mu_grid = np.round(np.arange(0.0, 0.995, 0.01), 2)
    assert (lo, hi) == _phase_frame(stability.exact_threshold_rows(mu_grid, PHASE_K_REFS), mu_grid,
                                    "constant", "heavy_ball") == (1e-4, 10.0)
    chart_server(probe, chart, "phase")
    page = probe.page
    for mu in (0.99, 0.95, 0.5):
        set_param(page, 0, "mu", mu)
        a64 = float(stability.critical_a_exact(mu, 64)[()])
        wait_text(page, 0, "phase_point_label", lambda t, a=a64: f"exact threshold {a:.3g})" in t
                  if "K_ref = 64" in t else True)
        box = _plot_box(page)
        height = box["bottom"] - box["top"]

        def y_px(a, box=box, height=height):
            return box["top"] + height * (math.log10(hi) - math.log10(a)) / (math.log10(hi) - math.log10(lo))

        exact = _vertices_px(page, "exact_boundary")
        want = [float(stability.critical_a_exact(mu, k)[()]) for k in PHASE_K_REFS]
        assert len(exact) == len(PHASE_K_REFS)  # every K_ref, none dropped or flattened onto the floor
        for (_, y), a in zip(exact, want):
            assert abs(y - y_px(a)) < 1.0, (mu, a)
            assert box["top"] + 1 < y < box["bottom"] - 1
        cont = _vertices_px(page, "continuous_boundary")
        assert len(cont) == len(PHASE_K_REFS)
        for (_, y), k in zip(cont, PHASE_K_REFS):
            assert abs(y - y_px((1 - mu) / k)) < 1.0
            assert box["top"] + 1 < y < box["bottom"] - 1
    set_param(page, 0, "mu", 0.99)
    set_param(page, 0, "k_ref", 64)
    wait_text(page, 0, "phase_point_label", lambda t: "K_ref = 64 (exact threshold 0.000171)" in t)

    def point():
        return page.evaluate(
            "() => { const p = document.querySelector('g.phase_point_marks path'), r = p.getBoundingClientRect();"
            " return {d: p.getAttribute('d'), left: r.left, right: r.right, top: r.top, bottom: r.bottom}; }")

    for k_ref, eta, curvature in ((64, 0.02, 1.0), (1, 0.02, 1.0), (1, 1.0, 5.0), (64, 0.001, 0.1)):
        set_param(page, 0, "k_ref", k_ref)
        set_param(page, 0, "eta", eta)
        set_param(page, 0, "curvature", curvature)
        wait_text(page, 0, "phase_point_label", lambda t, k=k_ref, a=eta * curvature: t.startswith(
            f"η·K = {a:.3g}, K_ref = {k} "))
        p = point()
        assert box["left"] <= p["left"] and p["right"] <= box["right"], (k_ref, p)  # whole, not half cut
        assert box["top"] - 0.5 <= (p["top"] + p["bottom"]) / 2 <= box["bottom"] + 0.5
        assert p["d"].count("L") == 3  # a diamond: in the frame
    set_param(page, 0, "eta", 3.0)  # eta K = 15, past the frame's top (10): a triangle on the edge
    set_param(page, 0, "curvature", 5.0)
    wait_text(page, 0, "phase_point_label", lambda t: t.startswith("η·K = 15, K_ref = 64 "))
    p = point()
    assert p["d"].count("L") == 2 and abs((p["top"] + p["bottom"]) / 2 - box["top"]) < 4
    key = text_boxes(page, "phase_key")[0]
    axis_bottom = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('g.role-axis')].map(a => a.getBoundingClientRect().bottom))")
    assert key["top"] >= axis_bottom - 0.5  # the key is under the axes, not over the boundaries
    for mark in ("phase_regime_label", "phase_point_label"):
        assert text_boxes(page, mark)[0]["bottom"] <= box["top"] + 0.5  # above the plot
    page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'center'})")
    probe.screenshot("phase-off-frame")
    assert probe.console_errors == []
    assert probe.external_requests == []


def test_forecast_sweep_marks_a_band_cut_at_the_axis(chart_server, probe):
    """Issue 17, Fig. 13 (fitting chapter): a band [-66800, 66856] was cut to the axis window and drawn
    like a band [-2.4, 7.5] that fits in it. Now each cut end carries an open triangle on the edge,
    pointing the way the band runs on; a band inside the window has none."""
    import pandas as pd
    from vega_page import mark_texts

    from widgets.laws_charts import forecast_sweep_chart

    sweep = pd.DataFrame({"fraction": [0.4, 0.6, 0.8], "law": "logistic", "plateau": [0.1, 2.6, 30.0],
                          "low": [-0.1, -2.4, -66800.0], "high": [0.3, 7.5, 66856.0], "actual": 1.43})
    chart = forecast_sweep_chart(sweep, width=500)
    lo, hi = chart.to_dict()["layer"][2]["encoding"]["y"]["scale"]["domain"]
    assert lo < -2.4 and 7.5 < hi  # the middle band fits in the window, the last does not
    chart_server(probe, chart, "sweep")
    page = probe.page
    page.wait_for_selector("g.band_clipped_ends_marks path", timeout=TIMEOUT * 1000)
    (ends,) = drawn(page, "band_clipped_ends")
    width, height = ends["frame"]
    at = sorted((float(_NUM.findall(t)[0]), float(_NUM.findall(t)[1]), "rotate(180)" in t.replace(" ", ""))
                for t in ends["transforms"])
    assert len(at) == 2 and abs(at[0][0] - at[1][0]) < 0.5  # both ends of the one cut band, none elsewhere
    by_y = sorted(at, key=lambda p: p[1])
    assert abs(by_y[0][1]) < 0.5 and not by_y[0][2]  # top edge, pointing up
    assert abs(by_y[1][1] - height) < 0.5 and by_y[1][2]  # bottom edge, pointing down
    # the error bars: <line transform="translate(x, y0)" y2="dy">
    bars = [(*map(float, _NUM.findall(t)[:2]), float(dy)) for t, dy in page.evaluate(
        "() => [...document.querySelectorAll('g.mark-rule.role-mark line')]"
        ".filter(l => l.getAttribute('x2') === '0').map(l => [l.getAttribute('transform'), l.getAttribute('y2')])")]
    assert len(bars) == 3
    (cut,) = [b for b in bars if abs(b[0] - at[0][0]) < 0.5]
    assert cut[1] == pytest.approx(height, abs=0.5) and cut[1] + cut[2] == pytest.approx(0, abs=0.5)  # edge to edge
    for x, y0, dy in bars:  # the bars that fit end inside the frame and carry no marker
        if abs(x - at[0][0]) >= 0.5:
            assert 0.5 < y0 + dy and y0 < height - 0.5
    assert mark_texts(page, 0, "band_clipped_key") == ["open triangle: the band runs on past the axis"]
    page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'center'})")
    probe.screenshot("forecast-sweep-clipped")
    assert probe.console_errors == []
    assert probe.external_requests == []


def _axis_labels(page, axis: str) -> list[dict]:
    """Text and page box of each label of the axes whose aria-label starts with ``axis`` ("X-axis")."""
    return page.evaluate(
        """(axis) => [...document.querySelectorAll('g.role-axis')]
            .filter(a => (a.getAttribute('aria-label') || '').startsWith(axis))
            .flatMap(a => [...a.querySelectorAll('g.role-axis-label text')])
            .filter(t => (t.getAttribute('opacity') ?? '1') !== '0' && t.textContent)
            .map(t => { const r = t.getBoundingClientRect();
                        return {text: t.textContent.replace('\\u2212', '-'), left: r.left, right: r.right,
                                top: r.top, bottom: r.bottom}; })""",
        axis,
    )


def test_axis_labels_do_not_collide_and_fit_the_data(chart_server, probe):
    """Issue 17 (cosmetic): the diagnostics reward charts drew "190200" and "380400" (the last step
    label, flush with the end, ran into the one before); the bandit threshold chart's K_ref axis had no
    label past 9 though the data run to 16; Fig. 4's log y-axis ran 0.1-100 for ratios 1-38."""
    import numpy as np

    from grpo_core.runs import datasets, diagnostics, logs
    from widgets import bandit_charts, diagnostics_charts
    from widgets.oscillator_charts import phase_diagram_data, threshold_ratio_chart

    log = logs.read_log(datasets.example_log_path("03"))
    for name, chart in (("case03", diagnostics_charts.reward_chart(log, diagnostics.diagnose(log), width=600,
                                                                   height=200)),):
        chart_server(probe, chart, name)
        labels = _axis_labels(probe.page, "X-axis")
        assert len(labels) >= 4
        for a, b in zip(labels, labels[1:]):
            assert a["right"] + 2 <= b["left"], (name, a["text"], b["text"])
    k_grid = np.unique(np.geomspace(1, 16, 30).round().astype(int))
    boundaries = phase_diagram_data(mus=(0.0, 0.5, 0.9), k_refs=k_grid)
    measured = boundaries[boundaries.method == "exact"].rename(columns={"a_star": "measured"})
    chart_server(probe, bandit_charts.threshold_chart(measured, boundaries, width=200), "thresholds")
    texts = [lab["text"] for lab in _axis_labels(probe.page, "X-axis")]
    assert texts == ["1", "2", "4", "8", "16"] * 2  # both panels, up to the data's 16
    chart_server(probe, threshold_ratio_chart(mus=[0.0, 0.5, 0.9], k_refs=np.arange(1, 65)), "ratio")
    values = [float(lab["text"]) for lab in _axis_labels(probe.page, "Y-axis")]
    assert min(values) >= 1 and max(values) <= 38 * 1.1 and len(values) >= 3
    assert probe.console_errors == []


def test_variants_chart_gives_each_curve_its_own_colour(chart_server, probe):
    """Issue 17 (cosmetic), bandit Fig. 22: "stale score" and "clipped surrogate", the two curves of
    one panel, were drawn in near-identical teals. Every pair of drawn colours is now far apart."""
    import numpy as np
    import pandas as pd

    from widgets.bandit_charts import variants_chart

    labels = {"KL anchor": ["mean baseline, beta = 1", "mean baseline, beta = 0"],
              "std scaling": ["std, G -> inf, beta = 1.4", "std, G -> inf, beta = 1.6", "std, G -> inf, beta = 3",
                              "std, G = 8, beta = 1.4"],
              "stale score vs surrogate": ["stale score", "clipped surrogate"]}  # as in the chapter
    steps = np.arange(0, 300, 2)
    frame = pd.concat([pd.DataFrame({"panel": panel, "label": lab, "kind": kind, "step": steps,
                                     "p": 0.5 + 0.4 * (1 - np.exp(-steps / (30 + 10 * i)))})
                       for panel, labs in labels.items() for i, lab in enumerate(labs)
                       for kind in ("mean field", "mean of seeds")], ignore_index=True)
    chart_server(probe, variants_chart(frame, width=170), "variants")
    strokes = probe.page.evaluate(
        "() => [...new Set([...document.querySelectorAll('g.mark-line path')].map(p => p.getAttribute('stroke')))]")
    assert len(strokes) == 8
    rgb = [tuple(int(s[i:i + 2], 16) for i in (1, 3, 5)) for s in strokes]
    closest = min(np.linalg.norm(np.subtract(a, b)) for i, a in enumerate(rgb) for b in rgb[i + 1:])
    assert closest > 60, strokes
    assert probe.console_errors == []


def test_forecast_slider_shows_the_products_forecast(chart_server, probe):
    """Issue 14: the fitting chapter's slider chart is the forecaster of ``fit`` and ``diagnose``
    (``forecast_end``): at every slider position the label gives its numbers for that window."""
    import warnings

    from vega_page import set_param, wait_text

    from grpo_core.runs import datasets, logs
    from grpo_core.runs.forecast import forecast_end
    from widgets.laws_charts import static_forecast_chart, static_forecast_grid

    log = logs.read_log(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    grid = static_forecast_grid(log)
    chart_server(probe, static_forecast_chart(grid, fraction=40), "forecast")
    for pct in grid["labels"]["fraction"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fc = forecast_end(log, fit_fraction=pct / 100)  # what `fit --fit-fraction` prints
        set_param(probe.page, 0, "fraction", int(pct))
        text = wait_text(probe.page, 0, "forecast_label", lambda t, p=pct: t.startswith(f"seen: the first {p}%"))
        assert f"end of run {fc.point:.3f}, 90% band [{fc.low:.3f}, {fc.high:.3f}]" in text, text
        assert f"actual {fc.actual:.3f}" in text and fc.point == fc.now, text
    # the band is calibrated from 20% to 80% of a run: 90% is declined, so the slider stops at 80
    assert list(grid["labels"]["fraction"]) == [20, 30, 40, 50, 60, 70, 80]
    assert probe.console_errors == []


#: JavaScript: the smallest text size as drawn (px on screen) in the first chart of the page, after
#: the book's own rule for charts (``book/assets/grpo.css``: an SVG is scaled down to its column) in
#: a 720 px column, the fitting chapter's text column at a 1280 px viewport: each text's font size
#: times the SVG's rendered width over its viewBox width.
_DRAWN_TEXT_PX = """() => {
    const style = document.createElement('style');
    style.textContent = '#vis, .vega-embed { width: 720px; max-width: 720px; }'
        + ' .vega-embed svg { max-width: 100%; height: auto; }';
    document.head.appendChild(style);
    const svg = document.querySelector('.vega-embed svg');
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const sizes = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
        .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
    return {natural: svg.viewBox.baseVal.width, scale, n: sizes.length, smallest: Math.min(...sizes)};
}"""


def test_fig15_real_run_forecasts_are_drawn_at_readable_size(chart_server, probe):
    """Fitting chapter, Fig. 15 ("Each real run's forecast of its end from 20%, 40% and 60% of its
    steps", :func:`widgets.laws_charts.forecast_runs_chart` on bench/results/forecast.json): at a
    1280 px viewport the book's text column is about 720 px wide; a wider chart is scaled down with
    its text (it once drew 981 px wide, its 10 px labels at 7 px). It now fits the column at its
    natural size and every text is drawn at 10 px or more."""
    import json

    from widgets.laws_charts import forecast_runs_chart
    from widgets.rendering import repo_path

    rows = json.loads(repo_path("bench/results/forecast.json").read_text())
    records = [r for r in rows if r["method"] == "record"]
    assert len({r["run"] for r in records}) == 37
    chart_server(probe, forecast_runs_chart(records), "fig15")
    assert probe.page.viewport_size["width"] == 1280
    got = probe.page.evaluate(_DRAWN_TEXT_PX)
    assert got["natural"] <= 720, got
    assert got["scale"] == pytest.approx(1.0, abs=1e-3), got
    assert got["n"] > 37 + 3, got  # the run labels, the cut headers, the axes and the legends
    assert got["smallest"] >= 10, got
    assert probe.console_errors == []


def test_ustat_mse_chart_shows_the_oracle_on_top(chart_server, probe):
    """The U-statistic chapter's MSE figure (:func:`widgets.ustat_charts.mse_chart`) in Chromium: the
    oracle's exact line, which nearly coincides with the mean baseline's from G = 8 on, is the last
    line painted (over the mean baseline's), dashed, in its own colour, with its "oracle" label."""
    import numpy as np

    from grpo_core.groupsize.ustat import monte_carlo_mse
    from widgets import ustat_charts as uc

    probs = np.array([0.2] + [0.8 / 7] * 7)  # the chapter's hard prompt
    df = monte_carlo_mse(probs, np.array([1.0] + [0.0] * 7), 2 ** np.arange(1, 11), 2_000, seed=1)
    chart = uc.mse_chart(df).properties(usermeta={"embedOptions": {"renderer": "svg"}})
    chart_server(probe, chart, "ustat_mse")
    page = probe.page
    lines = page.evaluate(
        "() => [...document.querySelectorAll('.vega-embed svg g.mark-line.role-mark path')].map(p =>"
        " [p.closest('g.mark-line').getAttribute('class'), p.getAttribute('aria-label') || '',"
        "  p.getAttribute('stroke'), p.getAttribute('stroke-dasharray') || '', p.getAttribute('d')])")
    assert len(lines) == 5
    group, label, stroke, dash, d = lines[-1]
    assert "oracle_line_marks" in group and "label: oracle" in label  # painted last, on top
    assert stroke == uc.ESTIMATOR_COLORS["oracle"] and dash == ",".join(map(str, uc.ORACLE_DASH))
    (mean,) = [line for line in lines if "label: mean baseline" in line[1]]
    assert mean[2] != stroke and mean[3] != dash
    # the two lines really overlap from G = 8 on (why the oracle must be on top): within 3 px
    oracle_pts, mean_pts = path_vertices(d)[2:], path_vertices(mean[4])[2:]
    assert max(abs(a[1] - b[1]) for a, b in zip(oracle_pts, mean_pts)) < 3.0
    texts = page.evaluate(
        "() => [...document.querySelectorAll('.vega-embed svg g.oracle_label_marks text')].map(t => t.textContent)")
    assert texts == ["oracle"]
    assert probe.console_errors == [] and probe.external_requests == []
