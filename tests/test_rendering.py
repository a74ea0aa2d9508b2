"""widgets.rendering: how the book renders (vendored Vega files) and lays out text reports."""

from __future__ import annotations

import pytest

from grpo_core.errors import ParameterError
from grpo_core.model.advice import advise
from widgets.rendering import vendor_base_url, wrap_report


def test_wrap_report_fits_the_width_and_keeps_every_word_in_order():
    report = advise(eta=0.01, mu=0.9, k_ref=4, curvature=1.0).summary()
    assert max(map(len, report.splitlines())) > 78  # the terminal report is wider than a page
    wrapped = wrap_report(report, 78)
    assert max(map(len, wrapped.splitlines())) <= 78
    assert wrapped.split() == report.split()
    # Blank lines (the report's sections) survive; short lines are untouched.
    assert wrapped.count("\n\n") == report.count("\n\n")
    short = [line for line in report.splitlines() if len(line) <= 78]
    assert all(line in wrapped.splitlines() for line in short)


def test_wrap_report_indents_continuations_below_their_line():
    out = wrap_report("Thresholds\n  exact discrete: critical eta*K = 0.0265, first unstable k_ref = 12", 40)
    assert out.splitlines() == [
        "Thresholds",
        "  exact discrete: critical eta*K =",
        "      0.0265, first unstable k_ref = 12",
    ]


def test_wrap_report_refuses_a_tiny_width():
    with pytest.raises(ParameterError, match="width"):
        wrap_report("x", 5)


def test_vendor_base_url_depth():
    assert vendor_base_url(0) == "_static/vendor"
    assert vendor_base_url(2) == "../../_static/vendor"
    with pytest.raises(ValueError, match="page_depth"):
        vendor_base_url(-1)
