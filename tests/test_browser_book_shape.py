"""The built book's chapters as a reader meets them in Chromium at 1280 px: a results box before the
first section, a main flow of readable length, and the oscillator chapter's explorer in the first
quarter of the page.

Main flow: the article's text without code, chart specs, scripts and collapsed exercise solutions
(prose, captions, tables and printed outputs count). The limit is the one the book is written to,
about 4,500 words; the measured counts are in the assertion messages.
"""

from __future__ import annotations

import pytest
from conftest import BUILT_HTML
from vega_page import open_page

pytestmark = [pytest.mark.browser, pytest.mark.book]

CHAPTERS = ["grpo_update", "oscillator", "fitting", "bandit", "ustatistic", "group_size",
            "diagnostics", "llm"]
MAX_WORDS = 4700

MEASURE = """() => {
    const art = document.querySelector('article.bd-article') || document.querySelector('main');
    const c = art.cloneNode(true);
    c.querySelectorAll('script, style, .vega-embed, .cell_input, .headerlink, details.dropdown,'
        + ' div.dropdown, .admonition.dropdown').forEach(e => e.remove());
    const words = (c.textContent || '').split(/\\s+/).filter(w => /[A-Za-z0-9]/.test(w)).length;
    const top = el => el.getBoundingClientRect().top + window.scrollY;
    const H = document.documentElement.scrollHeight;
    const box = [...art.querySelectorAll('.admonition')].find(
        a => /In this chapter/.test((a.querySelector('.admonition-title') || {}).textContent || ''));
    const first = art.querySelector('section section');
    const control = [...art.querySelectorAll('.vega-embed input, .vega-embed select')]
        .find(e => e.getBoundingClientRect().height > 0);
    return {words, box: box ? top(box) : null, first: first ? top(first) : null,
            control: control ? top(control) / H : null};
}"""


@pytest.fixture
def measured(book_server, probe):
    def measure(name: str) -> dict:
        if not (BUILT_HTML / f"{name}.html").exists():
            pytest.skip(f"{name}.html is not in the built book")
        open_page(probe, f"{book_server}/{name}.html")
        return probe.page.evaluate(MEASURE)
    return measure


@pytest.mark.parametrize("name", CHAPTERS)
def test_results_first_and_a_readable_length(measured, name):
    got = measured(name)
    assert got["box"] is not None and got["first"] is not None and got["box"] < got["first"], got
    assert got["words"] <= MAX_WORDS, f"{name}: {got['words']} words in the main flow"


def test_the_oscillator_explorer_is_in_the_first_quarter(measured):
    got = measured("oscillator")
    assert got["control"] is not None and got["control"] < 0.25, got
