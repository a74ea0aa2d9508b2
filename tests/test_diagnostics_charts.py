"""The diagnostics charts as Vega draws them (vl-convert's engine): every line has a colour.

A colour scale whose domain is fixed (the onset rules' severities) and shared with a layer that
colours by series leaves every series outside the domain: Vega then draws the lines with no
stroke, an empty panel with axes (the book's case-06 figure once looked like that).
"""

from __future__ import annotations

import re
import warnings
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


# --- In a browser: what the chapter's figures draw ------------------------------------------------

_DRAWN_JS = """() => {
  const axes = [...document.querySelectorAll('g.role-axis')]
      .map(a => a.getAttribute('aria-label') || '').filter(l => l.startsWith('X-axis'));
  const legends = [...document.querySelectorAll('g.role-legend')].map(g =>
      [...g.querySelectorAll('g.role-legend-label text')].map(t => t.textContent));
  const lines = [...document.querySelectorAll('path[aria-roledescription="line mark"]')].map(p => {
      const r = p.getBoundingClientRect();
      return {label: p.getAttribute('aria-label') || '', left: r.left, right: r.right}; });
  const areas = document.querySelectorAll('path[aria-roledescription="area mark"]').length;
  return {axes, legends, lines, areas};
}"""


def _domain(axis_label: str) -> tuple[float, float]:
    """The x domain Vega states for an axis ("... with values from 1 to 500")."""
    lo, hi = re.search(r"values from (-?[\d.,e+-]+) to (-?[\d.,e+-]+)", axis_label).groups()
    return float(lo.replace(",", "")), float(hi.replace(",", ""))


def _show(chart_server, probe, chart, name) -> dict:
    chart = chart.properties(usermeta={"embedOptions": {"renderer": "svg", "actions": False}})
    chart_server(probe, chart, name)
    drawn = probe.page.evaluate(_DRAWN_JS)
    assert probe.console_errors == []
    return drawn


@pytest.mark.browser
def test_stacked_panels_share_one_step_axis(chart_server, probe):
    """The chapter's first figure (the Qwen run as diagnose sees it): reward, zero spread and KL
    panels have one step axis, from the first step to the forecast's horizon, and a step sits at
    the same place in every panel (the last logged step, 250, ends every panel's line at one x)."""
    from grpo_core.runs import datasets, diagnostics, logs

    log = logs.read_log(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    d = diagnostics.diagnose(log, num_prompts=1, n_boot=50)
    charts = dc.diagnosis_charts(log, d, num_prompts=1, width=600)
    drawn = _show(chart_server, probe, dc.stack_panels(charts["reward"], charts["zero_spread"], charts["kl"]),
                  "qwen_stack")
    domains = [_domain(a) for a in drawn["axes"]]
    assert len(domains) == 3
    assert domains == [(1.0, d.forecast["horizon"])] * 3 == [(1.0, 500.0)] * 3
    # the line that runs to the last step, in each panel: the raw reward, the zero-spread rolling
    # mean, the KL; their right ends are one x
    ends = [max(ln["right"] for ln in drawn["lines"] if key in ln["label"])
            for key in ("mark: per step", "rolling mean (12 steps)", "series: kl")]
    assert max(ends) - min(ends) < 2.0, ends
    lefts = [min(ln["left"] for ln in drawn["lines"] if key in ln["label"])
             for key in ("mark: per step", "series: kl")]
    # 250 of the 1-500 domain: the line ends half-way across the 600 px panel
    assert ends[0] - lefts[0] == pytest.approx(600 * (250 - 1) / (500 - 1), abs=3)
    labels = [t for legend in drawn["legends"] for t in legend]
    assert "90% band of the forecast" in labels  # the shaded band is named
    assert "forecast: the current level held to step 500 (the run assumed half done)" in labels
    assert any(t.startswith("advantage-degeneration finding (info), steps ") for t in labels)


@pytest.mark.browser
def test_bandit_failure_figures_fit_the_data_and_name_their_marks(chart_server, probe):
    """The chapter's two bandit failure figures (the limit cycle, the format-only reward): the step
    axis ends at the run's last step (no empty half, no forecast band), and a legend names each mark."""
    from grpo_core.runs import bandit_logs, diagnostics

    for name, eval_metric, want in (
            ("dynamic_instability", None, ["per step", "rolling mean (20 points)"]),
            ("train_eval_decoupling", "accuracy", ["per step", "rolling mean (20 points)", "eval accuracy"])):
        log = bandit_logs.scenario_log(name, seed=0)
        d = diagnostics.diagnose(log, group_size=bandit_logs.SCENARIOS[name].group_size)
        chart = dc.reward_chart(log, d, eval_metric=eval_metric, forecast=False, width=600, height=180)
        drawn = _show(chart_server, probe, chart, name)
        (axis,) = drawn["axes"]
        lo, hi = _domain(axis)
        last = float(log.train["step"].max())
        assert lo == float(log.train["step"].min()) and hi == pytest.approx(last, rel=0.01), (name, axis)
        assert drawn["areas"] == 0  # no shaded band left unexplained
        labels = [t for legend in drawn["legends"] for t in legend]
        assert [t for t in labels if not t.endswith("law fitted to the curve (R² 0.96)")] == want, labels
        if name == "train_eval_decoupling":  # the fitted law is named with its fit
            assert "exponential law fitted to the curve (R² 0.96)" in labels


@pytest.mark.browser
def test_long_findings_wrap_inside_the_page_column(probe):
    """The chapter's table of the real runs: a findings cell as long as run 01's (five modes) wraps
    inside the book's 688 px column at a 1280 px window, where the plain DataFrame table ran past
    the column's edge and was cut mid-line."""
    import pandas as pd

    from grpo_core.runs import datasets

    run = datasets.real_run("01")
    with warnings.catch_warnings():  # what reading the console log did is not what this test reads
        warnings.simplefilter("ignore")
        d = diagnose(read_log(run.path, run=run.run), forecast=False)
    findings = ", ".join(f"{dc.mode_name(f.mode)} ({f.severity})" for f in d.findings
                         if f.severity in ("warning", "critical"))
    assert findings.count("(critical)") == 5 and "off-policy mismatch (critical)" in findings
    frame = pd.DataFrame([{"run": "01", "model": run.meta["model"], "reader's description": "collapses",
                           "verdict": d.verdict, "findings": findings}])

    def widths(table_html: str) -> dict:
        probe.page.set_content(f'<div id="box" style="width: 688px; overflow-x: auto">{table_html}</div>')
        return probe.page.evaluate("""() => {
            const box = document.getElementById('box'), right = box.getBoundingClientRect().right;
            return {scroll: box.scrollWidth, client: box.clientWidth,
                    cells_past: [...box.querySelectorAll('td')].filter(
                        td => td.getBoundingClientRect().right > right + 0.5).map(td => td.textContent)}; }""")

    # the table as it was: a plain DataFrame, mode names with underscores (no place to break), the
    # reader's failure signals beside them
    old = frame.assign(**{"failure signals (reader)": str(run.meta["failure_signals"]),
                          "findings": ", ".join(f"{f.mode} ({f.severity})" for f in d.findings
                                                if f.severity in ("warning", "critical")), "info": "-"})
    before = widths(old.to_html(index=False))
    assert before["scroll"] > before["client"] and before["cells_past"]  # the check sees the cut
    wrapped = widths(dc.wrapped_table(frame, max_width="16em", index=False).to_html())
    assert wrapped["scroll"] <= wrapped["client"] and wrapped["cells_past"] == [], wrapped
    assert probe.console_errors == []
