"""The diagnostics charts as Vega draws them (vl-convert's engine): every line has a colour.

A colour scale whose domain is fixed (the onset rules' severities) and shared with a layer that
colours by series leaves every series outside the domain: Vega then draws the lines with no
stroke, an empty panel with axes (the book's case-06 figure once looked like that).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import read_log
from widgets import diagnostics_charts as dc

CASES = Path(__file__).parent / "data" / "cases"
vlc = pytest.importorskip("vl_convert")


def _line_strokes(chart) -> list[tuple[str, bool]]:
    """(aria label's start, has a stroke) for every line path Vega drew."""
    svg = vlc.vegalite_to_svg(chart.to_dict())
    paths = re.findall(r'<path aria-label="([^"]*)"[^>]*aria-roledescription="line mark"[^>]*>', svg)
    assert paths, "no line drawn at all"
    drawn = re.findall(r'<path aria-label="[^"]*"[^>]*aria-roledescription="line mark"[^>]*>', svg)
    return [(label, 'stroke="' in tag) for label, tag in zip(paths, drawn)]


@pytest.fixture(scope="module")
def case06():
    log = read_log(CASES / "06-collapse-after-high-lr" / "trainer_state.json")
    return log, diagnose(log)


def test_two_metrics_with_onsets_are_both_drawn(case06):
    log, d = case06
    assert d.find("dynamic_instability").onset == 28  # the chart has an onset rule to clash with
    chart = dc.metric_chart(log, ["grad_norm", "kl"], d)
    strokes = _line_strokes(chart)
    assert sorted(re.search(r"series: (\w+)", s).group(1) for s, _ in strokes) == ["grad_norm", "kl"]
    assert all(ok for _, ok in strokes), strokes
    # stacked under the reward panel, as the book does
    assert all(ok for _, ok in _line_strokes(dc.alt.vconcat(dc.reward_chart(log, d), chart)))


def test_every_report_panel_draws_its_lines(case06):
    log, d = case06
    for name, chart in dc.diagnosis_charts(log, d).items():
        assert all(ok for _, ok in _line_strokes(chart)), name


def test_a_metric_logged_as_0_on_every_step_says_so_under_its_panel():
    # real run 08 (beibeizzz, countdown) logs kl = 0 and entropy = 0 on all 500 steps: a flat line at
    # 0 would read as "no drift" when nothing was measured
    from grpo_core.runs import datasets

    log = read_log(datasets.real_run("08").path)
    charts = dc.diagnosis_charts(log)
    assert charts["kl"].to_dict()["title"]["text"] == [
        "kl: 0 on every logged step (500 points):", "the KL term was not computed (TRL skips it when beta = 0)"]
    assert charts["entropy"].to_dict()["title"]["text"][0] == "entropy: 0 on every logged step (500 points):"
    assert "title" not in charts["reward"].to_dict()              # a metric that moves has no such line
    svg = vlc.vegalite_to_svg(charts["kl"].to_dict())
    assert "the KL term was not computed" in svg                  # Vega draws it
    # a clip ratio held at 0 by a one-pass run is explained, not called missing (run 04, TRL)
    clip = dc.diagnosis_charts(read_log(datasets.real_run("04").path))["clip"].to_dict()["title"]["text"]
    assert clip[0].endswith("0 on every logged step (200 points):") and "importance ratio" in clip[1]
