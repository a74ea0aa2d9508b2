"""The built site in a real browser: pages render offline, math typesets, nothing leaves localhost."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.book]


def test_intro_renders_math_offline(book_server, probe):
    probe.page.goto(f"{book_server}/intro.html", wait_until="networkidle")
    probe.page.wait_for_selector("mjx-container", timeout=20_000)
    assert probe.page.locator("mjx-container").count() >= 1
    probe.screenshot("intro")
    assert probe.external_requests == []
    assert probe.console_errors == []


CHAPTERS = ["intro", "grpo_update", "oscillator", "fitting", "bandit", "ustatistic", "group_size",
            "diagnostics", "llm", "explorers"]


def test_display_equations_fit_the_text_column(book_server, probe):
    """A display equation wider than the column is cut off (its end is only reachable by scrolling
    inside it, and nothing shows that): every one must fit at a desktop width."""
    from conftest import BUILT_HTML

    too_wide = {}
    for name in CHAPTERS:
        if not (BUILT_HTML / f"{name}.html").exists():
            continue
        probe.page.goto(f"{book_server}/{name}.html", wait_until="networkidle")
        probe.page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                     timeout=20_000)
        probe.page.evaluate("() => MathJax.startup.promise")
        wide = probe.page.evaluate(
            """() => [...document.querySelectorAll('mjx-container[display="true"]')].map(c => {
                   const m = c.querySelector('mjx-math');
                   return [c.clientWidth, m ? m.getBoundingClientRect().width : 0,
                           c.textContent.slice(0, 50)];
               }).filter(([cw, mw]) => mw > cw + 1)"""
        )
        if wide:
            too_wide[name] = wide
    assert too_wide == {}
    assert probe.console_errors == []
