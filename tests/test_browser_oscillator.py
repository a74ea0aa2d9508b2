"""The oscillator chapter's static slider chart in a real browser: move eta past the stability
threshold and the regime label and the trajectory change, with no kernel behind the page.

The same chart (:func:`widgets.oscillator_charts.slider_chart`) also sits on the Explorers page, so
the test runs on both pages that are built.
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
    scroll_to,
    set_param,
    wait_text,
)

from grpo_core.model import oscillator, stability, trajectories

pytestmark = [pytest.mark.browser, pytest.mark.book]

PAGES = ["oscillator.html", "explorers.html"]


def _label(eta, mu, k_ref, curvature):
    return oscillator.VERDICT_LABELS[
        oscillator.coefficients_verdict(oscillator.coefficients(eta, mu, k_ref, curvature))
    ]


@pytest.mark.parametrize("page_name", PAGES)
def test_eta_past_the_threshold_reads_unstable(book_server, probe, page_name):
    open_built_page(probe, book_server, page_name)
    page = probe.page
    i = chart_index(page, {"eta", "mu", "k_ref", "curvature"}, mark="regime_label")
    mu, k_ref, curvature = 0.8, 4, 1.0
    set_param(page, i, "mu", mu)
    set_param(page, i, "k_ref", k_ref)
    set_param(page, i, "curvature", curvature)
    # Below the continuous threshold (eta K K_ref < 1 - mu: eta < 0.05): stable, oscillatory.
    set_param(page, i, "eta", 0.045)
    expected = _label(0.045, mu, k_ref, curvature)
    assert expected == "underdamped"
    wait_text(page, i, "regime_label", lambda t: t == expected)
    before = path_data(page, i, "trajectory")
    # The curve on the page is grpo_core's closed form: progress 1 - e(t)/e0, read back through the axes.
    # (within 2 px; the discrete recurrence, a different curve, is 5 to 10 px away from it here)
    c = oscillator.coefficients(0.045, mu, k_ref, curvature)
    pts, px = line_points(page, i, "trajectory")
    assert min(x for x, _ in pts) < 5 and max(x for x, _ in pts) > 250  # the whole horizon was read
    t = np.linspace(0, 300, 3001)
    closed = np.c_[t, 1.0 - trajectories.closed_form_trajectory(c, t)]
    assert max_distance_px(pts, closed, px) < 2.0
    discrete = np.c_[np.arange(301), 1.0 - trajectories.discrete_trajectory(c, 300)]
    assert max_distance_px(pts, discrete, px) > 4.0  # the check can tell the two apart
    scroll_to(page, i)
    probe.screenshot(f"oscillator-{page_name[:-5]}-stable")
    # Past the exact threshold of the discrete recurrence (a* = 0.0557 here; the continuous one
    # is 0.05): unstable in both senses.
    a_exact = float(stability.critical_a_exact(mu, k_ref, "constant"))
    eta = math.ceil(1.05 * a_exact / curvature * 1000) / 1000
    assert eta <= 0.1 and not stability.is_stable_exact(eta * curvature, mu, k_ref, "constant")
    set_param(page, i, "eta", eta)
    wait_text(page, i, "regime_label", lambda t: t == "unstable")
    after = path_data(page, i, "trajectory")
    assert after and after != before, "the trajectory did not change with eta"
    zeta = oscillator.coefficients(eta, mu, k_ref, curvature).damping_ratio
    assert mark_texts(page, i, "zeta_label") == [f"damping ratio ζ = {zeta:.2f}"]
    threshold = mark_texts(page, i, "threshold_label")[0]
    assert (
        f"{a_exact / curvature:.3g} (exact" in threshold
        and f"{(1 - mu) / k_ref / curvature:.3g} (continuous)" in threshold
    )
    scroll_to(page, i)
    probe.screenshot(f"oscillator-{page_name[:-5]}-unstable")
    assert probe.console_errors == []
    assert probe.external_requests == []


@pytest.mark.parametrize("page_name", PAGES)
def test_optimizer_and_reuse_controls_move_the_regions(book_server, probe, page_name):
    # issue 15: a reader switches heavy ball -> Adam and constant lag -> ratio-corrected reuse and
    # sees the verdict and the thresholds move, as grpo_core computes them
    open_built_page(probe, book_server, page_name)
    page = probe.page
    i = chart_index(page, {"eta", "optimizer", "lag_model"}, mark="regime_label")
    eta, mu, k_ref = 0.06, 0.8, 4
    for name, value in (("mu", mu), ("k_ref", k_ref), ("curvature", 1.0), ("eta", eta)):
        set_param(page, i, name, value)
    wait_text(page, i, "regime_label", lambda t: t == "unstable")  # heavy ball: a* = 0.0557 < 0.06

    def click(name, value):
        evaluate_chart(page, "([i, name, value]) => CHART(i)"
                      ".querySelector(`input[name=\"${name}\"][value=\"${value}\"]`).click()", [i, name, value])

    click("optimizer", 1)  # Adam: gain (1 - mu) eta K
    adam = oscillator.coefficients(eta, mu, k_ref, 1.0, momentum="ema")
    expected = oscillator.VERDICT_LABELS[oscillator.coefficients_verdict(adam)]
    assert expected != "unstable"
    wait_text(page, i, "regime_label", lambda t: t == expected)
    a_exact = float(stability.critical_a_exact(mu, k_ref, "constant", "ema"))
    wait_text(page, i, "threshold_label", lambda t: f"{a_exact:.3g} (exact, constant lag)" in t)
    click("lag_model", 2)  # ratio-corrected reuse: the on-policy recurrence, whatever k_ref
    on_policy = float(stability.critical_a_exact(mu, 1, "refresh", "ema"))
    wait_text(page, i, "threshold_label", lambda t: f"{on_policy:.3g} (exact, ratio-corrected reuse)" in t)
    scroll_to(page, i)
    probe.screenshot(f"oscillator-{page_name[:-5]}-adam-ratio")
