"""Helpers for browser tests of Vega-Lite charts on the built book (used with the ``probe`` fixture).

A chart is found by the names of its bound params (vega-embed renders each bound param as an
``<input name=...>`` or ``<select name=...>`` inside the chart's container). Moving a slider sets
the input's value and dispatches the ``input`` and ``change`` events a user's drag produces. Text
marks are read from the SVG (charts built for tests ask vega-embed for the SVG renderer); a
Vega-Lite mark named ``x`` renders as ``<g class="... x_marks">``.
"""

from __future__ import annotations

import time

import pytest
from conftest import BUILT_HTML

#: Seconds to wait for a chart to render or a label to change.
TIMEOUT = 20.0
#: Seconds to wait for a page and all its charts to load (a cold page on a busy 2-core machine
#: has taken over 20 s).
LOAD_TIMEOUT = 90.0

#: JavaScript for chart ``i``: a handle from :func:`chart_index` (a string) or a position (an int).
CHART_JS = ("(typeof i === 'string' ? document.querySelector(`.vega-embed[data-grpo-chart=\"${i}\"]`)"
            " : document.querySelectorAll('.vega-embed')[i])")


def open_page(probe, url: str) -> None:
    """Load ``url``, wait for the network to settle and every Vega chart to draw."""
    probe.page.goto(url, wait_until="networkidle", timeout=LOAD_TIMEOUT * 1000)
    probe.page.wait_for_function(
        "() => { const e = [...document.querySelectorAll('.vega-embed')];"
        " return e.length > 0 && e.every(x => x.querySelector('svg, canvas')); }",
        timeout=LOAD_TIMEOUT * 1000,
    )


def open_built_page(probe, book_server: str, name: str) -> None:
    """Open the built book's page ``name`` (``"explorers.html"``) served at ``book_server`` with
    :func:`open_page`; skip the test when the book was built without that page."""
    if not (BUILT_HTML / name).exists():
        pytest.skip(f"{name} is not in the built book")
    open_page(probe, f"{book_server}/{name}")


def chart_index(page, params: set[str], mark: str | None = None) -> str:
    """Handle of the first chart whose bound params include ``params`` and, if given, that draws a
    mark named ``mark``; the helpers below take it in place of a position.

    The chart is tagged (``data-grpo-chart``) because positions are not stable: a saved widget's
    Output area can render its own charts after the page has loaded, ahead of this one in the page.
    """
    handle = page.evaluate(
        """([params, mark]) => {
            const found = [...document.querySelectorAll('.vega-embed')].find(el => {
                const names = new Set([...el.querySelectorAll('input[name], select[name]')].map(x => x.name));
                const marks = [...el.querySelectorAll('g.role-mark')]
                    .map(g => (g.getAttribute('class') || '').split(' '));
                return params.every(p => names.has(p))
                    && (mark === null || marks.some(m => m.includes(`${mark}_marks`)));
            });
            if (!found) return null;
            if (!found.dataset.grpoChart) {
                found.dataset.grpoChart = `c${document.querySelectorAll('.vega-embed[data-grpo-chart]').length}`;
            }
            return found.dataset.grpoChart;
        }""",
        [sorted(params), mark],
    )
    if handle is None:
        charts = page.evaluate(
            "() => [...document.querySelectorAll('.vega-embed')].map(el =>"
            " [...el.querySelectorAll('input[name], select[name]')].map(x => x.name))")
        raise AssertionError(f"no chart with params {sorted(params)} and mark {mark!r}; charts have {charts}")
    return handle


def evaluate_chart(page, script: str, arg=None):
    """``page.evaluate(script, arg)`` with ``CHART(i)`` in ``script`` standing for chart ``i``
    (see :data:`CHART_JS`)."""
    return page.evaluate(script.replace("CHART(i)", CHART_JS), arg)


def set_param(page, index: int | str, name: str, value) -> None:
    """Move chart ``index``'s bound input ``name`` to ``value`` as a user would."""
    ok = evaluate_chart(
        page,
        """([i, name, value]) => {
            const el = CHART(i).querySelector(`[name="${name}"]`);
            if (!el) return false;
            el.value = String(value);
            el.dispatchEvent(new Event('input', {bubbles: true}));
            el.dispatchEvent(new Event('change', {bubbles: true}));
            return true;
        }""",
        [index, name, value],
    )
    assert ok, f"chart {index} has no input named {name!r}"


def mark_texts(page, index: int | str, mark: str) -> list[str]:
    """Texts of the Vega-Lite text mark named ``mark`` in chart ``index`` (Vega's typographic
    minus sign U+2212 read back as ``-``)."""
    return [t.replace("\u2212", "-") for t in evaluate_chart(
        page,
        """([i, mark]) => [...CHART(i)
               .querySelectorAll(`g.${mark}_marks text`)].map(t => t.textContent)""",
        [index, mark],
    )]


def wait_text(page, index: int | str, mark: str, predicate, timeout: float = TIMEOUT) -> str:
    """Wait until a text of mark ``mark`` satisfies ``predicate``; return it (AssertionError if not)."""
    deadline = time.monotonic() + timeout
    texts: list[str] = []
    while time.monotonic() < deadline:
        texts = mark_texts(page, index, mark)
        for t in texts:
            if predicate(t):
                return t
        time.sleep(0.05)
    raise AssertionError(f"mark {mark!r} of chart {index} never matched; last texts {texts}")


def path_data(page, index: int | str, mark: str) -> list[str]:
    """The SVG path data of the line/area mark named ``mark`` in chart ``index``."""
    return evaluate_chart(
        page,
        """([i, mark]) => [...CHART(i)
               .querySelectorAll(`g.${mark}_marks path`)].map(p => p.getAttribute('d'))""",
        [index, mark],
    )


def point_positions(page, index: int | str, mark: str) -> list[str]:
    """The ``transform`` attributes of the symbols of point mark ``mark`` in chart ``index``."""
    return evaluate_chart(
        page,
        """([i, mark]) => [...CHART(i)
               .querySelectorAll(`g.${mark}_marks path`)].map(p => p.getAttribute('transform'))""",
        [index, mark],
    )


def scroll_to(page, index: int | str) -> None:
    """Scroll chart ``index`` into the middle of the viewport (for screenshots)."""
    evaluate_chart(page, "i => CHART(i).scrollIntoView({block: 'center'})", index)


def line_points(
    page, index: int | str, mark: str, n: int = 120
) -> tuple[list[tuple[float, float]], tuple[float, float]]:
    """Points of the line mark ``mark`` in chart ``index`` in *data* units, read back from the SVG.

    The path is sampled at ``n + 1`` points along its length (in page coordinates); each axis's
    scale is recovered from its tick marks and their labels (a least-squares line through
    (page position, label value); both axes must be linear). Good to about a pixel (Vega draws
    axis ticks half a pixel off for crisp lines). Returns the points and the pixels per data unit
    of the x and y axes (to compare curves in pixels, see :func:`max_distance_px`).
    """
    raw = evaluate_chart(
        page,
        """([i, mark, n]) => {
            const el = CHART(i);
            const num = s => parseFloat(s.replace('\\u2212', '-').replace(/,/g, ''));
            const axes = [...el.querySelectorAll('g.role-axis')].map(ax => {
                const labels = [...ax.querySelectorAll('g.role-axis-label text')];
                const ticks = [...ax.querySelectorAll('g.role-axis-tick line')];
                const at = (ticks.length === labels.length ? ticks : labels).map(e => {
                    const r = e.getBoundingClientRect();
                    return [r.x + r.width / 2, r.y + r.height / 2];
                });
                return {label: ax.getAttribute('aria-label') || '',
                        values: labels.map(t => num(t.textContent)), at};
            });
            const path = el.querySelector(`g.${mark}_marks path`);
            const m = path.getScreenCTM(), len = path.getTotalLength(), pts = [];
            for (let k = 0; k <= n; k++) {
                const p = path.getPointAtLength(len * k / n);
                pts.push([m.a * p.x + m.c * p.y + m.e, m.b * p.x + m.d * p.y + m.f]);
            }
            return {axes, pts};
        }""",
        [index, mark, n],
    )

    def scale(axis_name: str, coord: int):
        axis = next(a for a in raw["axes"] if a["label"].startswith(axis_name))
        pos = [p[coord] for p in axis["at"]]
        vals = axis["values"]
        if len(vals) < 2:
            raise AssertionError(f"{axis_name} of chart {index} has fewer than two labelled ticks")
        mp, mv = sum(pos) / len(pos), sum(vals) / len(vals)
        slope = sum((p - mp) * (v - mv) for p, v in zip(pos, vals)) / sum((p - mp) ** 2 for p in pos)
        return lambda p: mv + slope * (p - mp)

    sx, sy = scale("X-axis", 0), scale("Y-axis", 1)
    px_per_unit = (1.0 / abs(sx(1.0) - sx(0.0)), 1.0 / abs(sy(1.0) - sy(0.0)))
    return [(sx(x), sy(y)) for x, y in raw["pts"]], px_per_unit


def max_distance_px(points, curve, px_per_unit) -> float:
    """Largest distance, in pixels, from a point of ``points`` to the polyline ``curve``.

    points, curve : sequences of (x, y) in data units (``curve`` dense enough to be a line);
    px_per_unit : (x, y) pixels per data unit from :func:`line_points`.
    """
    import numpy as np

    p = np.asarray(points, float) * px_per_unit
    c = np.asarray(curve, float) * px_per_unit
    a, b = c[:-1], c[1:]
    ab = b - a
    worst = 0.0
    for q in p:
        u = np.clip(np.einsum("ij,ij->i", q - a, ab) / np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-12), 0, 1)
        worst = max(worst, float(np.min(np.hypot(*(a + u[:, None] * ab - q).T))))
    return worst
