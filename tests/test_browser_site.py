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
