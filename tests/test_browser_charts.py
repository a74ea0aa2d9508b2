"""Single charts in a real browser, each on its own page with the book's vendored Vega files (no
book build): the drawn marks are read back from the SVG, for the charts that misled (issue 17).

* Fig. 2 of the oscillator chapter (:func:`widgets.oscillator_charts.regime_trajectories_chart`):
  the unstable panel's curves run out of the frame once, no vertical strokes.
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
