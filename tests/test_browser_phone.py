"""The built book at a phone's width (375 px) in a real browser: no chart is wider than the screen,
nothing pushes the page sideways (a wide table or equation scrolls inside its own box), no inline
formula runs past its paragraph (a long one scrolls in its own box), and the figure captions are
dark enough to read."""

from __future__ import annotations

import pytest
from conftest import BUILT_HTML
from vega_page import open_page

pytestmark = [pytest.mark.browser, pytest.mark.book]

PHONE = {"width": 375, "height": 812}
CHAPTERS = ["intro", "grpo_update", "oscillator", "fitting", "bandit", "ustatistic", "group_size",
            "diagnostics", "llm", "explorers", "use_it"]

# Every element whose box reaches past the viewport's right edge, unless a scrolling (or clipping)
# ancestor inside the viewport holds it; the page's own scroll width.
OVERFLOW = """(vw) => {
    const held = el => {
        for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
            const ox = getComputedStyle(a).overflowX;
            if (['auto', 'scroll', 'hidden', 'clip'].includes(ox) && a.getBoundingClientRect().right <= vw + 1)
                return true;
        }
        return false;
    };
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
        if (r.right > vw + 1 && !held(el)) {
            out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} right=${Math.round(r.right)}`);
        }
    }
    return {scrollWidth: document.documentElement.scrollWidth, offenders: out.slice(0, 8)};
}"""


# Every inline MathJax formula whose box reaches past its paragraph's right edge, or whose content
# is wider than its box without the box scrolling (the content would be cut off, unreachable).
INLINE_MATH = """() => {
    const out = [];
    for (const m of document.querySelectorAll('mjx-container:not([display="true"])')) {
        const r = m.getBoundingClientRect();
        if (r.width === 0) continue;
        const par = m.parentElement.closest('p, li, dd, dt, td, th, figcaption, div, span.caption-text');
        const right = par.getBoundingClientRect().right;
        const scrolls = ['auto', 'scroll'].includes(getComputedStyle(m).overflowX);
        const math = m.querySelector('mjx-math');
        const wide = math && math.getBoundingClientRect().width > r.width + 1;
        if (r.right > right + 1 || (wide && !scrolls))
            out.push(`${m.textContent.slice(0, 40)} right=${Math.round(r.right)} paragraph=${Math.round(right)}`);
    }
    return out;
}"""


def _luminance(rgb: str) -> float:
    """Relative luminance (WCAG) of a CSS ``rgb()``/``rgba()`` colour; a transparent one is the white page."""
    values = [float(x) for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")]
    parts = [255.0] * 3 if len(values) == 4 and values[3] == 0 else values[:3]
    lin = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in parts]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


@pytest.fixture
def phone(browser):
    from conftest import PageProbe

    context = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    p = PageProbe(context.new_page())
    yield p
    context.close()


@pytest.mark.parametrize("name", CHAPTERS)
def test_page_fits_a_phone(book_server, phone, name):
    if not (BUILT_HTML / f"{name}.html").exists():
        pytest.skip(f"{name}.html is not in the built book")
    page = phone.page
    if name in ("intro", "use_it"):
        page.goto(f"{book_server}/{name}.html", wait_until="networkidle")
    else:
        open_page(phone, f"{book_server}/{name}.html")
    page.wait_for_timeout(300)
    charts = page.evaluate(
        "() => [...document.querySelectorAll('.vega-embed svg, .vega-embed canvas')].map(s => {"
        " const r = s.getBoundingClientRect(); return [Math.round(r.left), Math.round(r.right)]; })")
    wide = [c for c in charts if c[1] > PHONE["width"] + 1 or c[0] < -1]
    assert wide == [], f"charts wider than the phone on {name}: {wide}"
    got = page.evaluate(OVERFLOW, PHONE["width"])
    assert got["offenders"] == [] and got["scrollWidth"] <= PHONE["width"] + 1, (name, got)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise.then(() => true) : true")
    assert page.evaluate(INLINE_MATH) == [], f"inline math past its paragraph on {name}"
    # captions: at least 10:1 against the page (the theme's muted grey was about 7:1, and light)
    for colour, background, weight in page.evaluate(
        "() => [...document.querySelectorAll('figcaption')].slice(0, 3).map(f => {"
        " const s = getComputedStyle(f); return [s.color, getComputedStyle(document.body).backgroundColor,"
        " s.fontWeight]; })"):
        lum = sorted([_luminance(colour), _luminance(background)])
        assert (lum[1] + 0.05) / (lum[0] + 0.05) >= 10, (name, colour, background)
        assert int(weight) >= 400
    if name in ("oscillator", "bandit", "explorers"):
        page.evaluate("document.querySelector('.vega-embed').scrollIntoView({block: 'start'})")
        phone.screenshot(f"phone-{name}")
    assert phone.external_requests == []
