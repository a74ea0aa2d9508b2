"""The group-size chapter's static slider chart in a real browser: moving `budget` moves the MSE curve but
not G*; moving `spread` moves G*, to the value grpo_core computes. No kernel, nothing leaves localhost."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grpo_core.groupsize import constants_by_spread
from widgets.ustat_charts import GROUP_SIZE_DEFAULTS

pytestmark = [pytest.mark.browser, pytest.mark.book]


def _set_slider(page, name: str, value: float) -> None:
    page.evaluate(
        """([name, value]) => {
            const el = document.querySelector(`.vega-bind input[type=range][name="${name}"]`);
            el.value = value;
            el.dispatchEvent(new Event('input', {bubbles: true}));
        }""",
        [name, value],
    )
    page.wait_for_timeout(300)


def _state(page) -> tuple[str, str]:
    label = page.locator("g.role-mark.g_star_label_marks text").first.text_content()
    curve = page.locator("g.role-mark.mse_curve_marks path").first.get_attribute("d")
    return label, curve


def _g_star(label: str) -> float:
    return float(re.match(r"G\* = ([0-9.]+)", label).group(1))


def test_group_size_sliders_move_the_curve_and_g_star(book_server, probe):
    page = probe.page
    page.goto(f"{book_server}/group_size.html", wait_until="networkidle")
    page.wait_for_selector("g.role-mark.g_star_label_marks text", timeout=20_000)
    # the budget slides over log2 N, one notch per doubling; N is shown on the chart
    assert page.locator('.vega-bind input[type=range][name="log2_budget"]').count() == 1
    assert page.locator('.vega-bind input[type=range][name="spread"]').count() == 1
    label0, curve0 = _state(page)
    # it starts at the book's one default pool (mean 0.2, spread 0.1, N = 1024)
    d = GROUP_SIZE_DEFAULTS
    g0 = constants_by_spread([d["spread"]], mean=d["mean"]).g_star_exact.iloc[0]
    assert _g_star(label0) == pytest.approx(round(float(g0), 1), abs=0.051)
    assert page.locator("g.role-mark.budget_label_marks text").first.text_content() == (
        f"N = {d['budget']} rollouts per step")

    _set_slider(page, "log2_budget", 8)
    assert page.locator("g.role-mark.budget_label_marks text").first.text_content() == "N = 256 rollouts per step"
    label1, curve1 = _state(page)
    assert curve1 != curve0, "the budget slider did not move the curve"
    assert _g_star(label1) == _g_star(label0), "G* must not depend on the budget"

    _set_slider(page, "spread", 0.25)
    label2, _ = _state(page)
    expected = constants_by_spread([0.25], mean=0.2).g_star_exact.iloc[0]
    assert _g_star(label2) == pytest.approx(round(float(expected), 1), abs=0.051)
    assert _g_star(label2) < _g_star(label1)

    # the narrowest spread on the slider: G* exceeds the smallest budget
    _set_slider(page, "spread", 0.01)
    _set_slider(page, "log2_budget", 6)
    label3, _ = _state(page)
    g3 = constants_by_spread([0.01], mean=0.2).g_star_exact.iloc[0]
    assert g3 > 64 and "one prompt per step" in label3
    page.locator("g.role-mark.g_star_label_marks text").first.scroll_into_view_if_needed()
    probe.screenshot("group_size_slider")
    assert probe.external_requests == []
    assert probe.console_errors == []
    assert np.isfinite(g3)


def test_group_size_slider_comes_early(book_server, probe):
    """The chapter's interactive figure is met early: its first slider lies in the first fifth of
    the page (right after the results box and the opening paragraph)."""
    page = probe.page
    page.goto(f"{book_server}/group_size.html", wait_until="networkidle")
    page.wait_for_selector('.vega-bind input[type=range][name="log2_budget"]', timeout=20_000)
    where = page.evaluate(
        "() => { const el = document.querySelector('.vega-bind input[type=range]');"
        " return (el.getBoundingClientRect().top + window.scrollY) / document.documentElement.scrollHeight; }")
    assert where < 0.2, f"the first slider is {100 * where:.0f}% down the page"
