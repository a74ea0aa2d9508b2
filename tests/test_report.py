"""The report's evidence charts (widgets.evidence_charts) and their place in the HTML page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grpo_core.errors import ParameterError
from grpo_core.runs import diagnostics, synthetic
from grpo_core.runs.diagnostics import DEFAULT_THRESHOLDS as TH
from grpo_core.runs.diagnostics import Finding
from grpo_core.runs.logs import read_log
from grpo_dynamics.report import render_report
from widgets.evidence_charts import ADVICE, evidence_chart, evidence_series, what_to_try

CASES = Path(__file__).parent / "data" / "cases"


def _finding(mode, n_steps=200):
    log = synthetic.synthetic_log(mode, n_steps=n_steps)
    return log, diagnostics.diagnose(log, forecast=False).find(mode)


def test_zero_spread_evidence_is_the_smoothed_fraction_against_the_level_it_crossed():
    log, f = _finding("advantage_degeneration")
    e = evidence_series(log, f)
    assert f.severity == "critical" and e["metrics"][0] == "zero-spread fraction (smoothed)"
    assert e["rules"].to_dict("records") == [{"series": e["metrics"][0], "value": TH.zero_spread_critical,
                                              "label": "level crossed"}]
    z = e["series"][e["series"]["series"] == e["metrics"][0]]
    inside = z[(z["step"] >= f.steps[0]) & (z["step"] <= f.steps[1])]["value"]
    # the stretch holds the level it is reported at (dips shorter than the window are bridged)
    assert (inside >= TH.zero_spread_critical).mean() >= 0.9 and inside.mean() >= TH.zero_spread_critical
    assert e["onset"] == f.steps[0] and e["span"] == tuple(f.steps)


def test_entropy_evidence_draws_half_and_a_tenth_of_the_initial_entropy():
    log, f = _finding("policy_concentration")
    e = evidence_series(log, f)
    h0 = f.evidence["entropy_initial"]
    rules = {r["label"]: r["value"] for r in e["rules"].to_dict("records")}
    assert rules == {"0.5 x initial": pytest.approx(0.5 * h0), "0.1 x initial": pytest.approx(0.1 * h0)}
    assert e["onset"] == f.onset == f.evidence["step_entropy_halved"]


def test_growth_evidence_draws_10x_and_100x_the_floored_early_level_around_the_onset():
    log, f = _finding("dynamic_instability")
    e = evidence_series(log, f)
    assert "grad_norm" in e["metrics"]
    base = f.evidence["grad_norm"]["baseline"]
    g = e["rules"][e["rules"]["series"] == "grad_norm"]["value"].tolist()
    assert g == pytest.approx([10 * base, 100 * base])
    lo, hi = e["window"]
    assert lo < f.onset <= hi and lo == max(1, f.onset - max(10, (f.steps[1] - f.onset) // 2))
    assert e["series"]["step"].between(lo, hi).all()
    spec = evidence_chart(log, f).to_dict()
    assert len(spec["vconcat"]) == len(e["metrics"]) and "dynamic instability" in spec["title"]


def test_decoupling_evidence_shows_the_eval_measure_beside_the_reward():
    log, f = _finding("train_eval_decoupling")
    e = evidence_series(log, f)
    assert e["metrics"] == ["reward", "eval reward"]
    assert len(e["series"][e["series"]["series"] == "eval reward"]) == len(log.eval)


def test_a_mode_added_later_gets_a_chart_from_its_fields():
    log = synthetic.synthetic_log("dynamic_instability", n_steps=120)
    f = Finding("numerical_failure", "critical", (60, 120), 60, {"metric": "grad_norm", "threshold": 1e3},
                "grad_norm became NaN at step 60.")
    e = evidence_series(log, f)
    assert e["metrics"] == ["grad_norm"] and e["rules"]["value"].tolist() == [1e3]
    assert e["window"] == (30.0, 120.0)
    assert what_to_try(f) == ADVICE["numerical_failure"]
    unknown = Finding("brand_new", "warning", (10, 20), None, {"what_to_try": "do X"}, "kl misbehaved")
    assert evidence_series(log, unknown)["metrics"] == ["kl"]  # named in the message
    assert what_to_try(unknown) == "do X"
    with pytest.raises(ParameterError, match="`finding`"):
        evidence_series(log, {"mode": "x"})
    with pytest.raises(ParameterError, match="`log`"):
        evidence_series("log.csv", f)


def test_report_has_each_findings_evidence_what_to_try_and_the_forecasters_now():
    log = read_log(CASES / "06-collapse-after-high-lr" / "trainer_state.json")
    d = diagnostics.diagnose(log, n_boot=0)
    page = render_report(log, d)
    specs = json.loads(re.search(r"const SPECS = (\{.*?\});\n", page, re.S).group(1).replace("<\\/", "</"))
    evidence = [k for k in specs if k.startswith("evidence_")]
    assert len(evidence) == len(d.findings) == page.count("<b>What to try:</b>") >= 1
    first = specs["evidence_0"]
    assert d.findings[0].mode.replace("_", " ") in first["title"]
    assert html_escape(what_to_try(d.findings[0])) in page
    if d.forecast:
        # "now" is the forecaster's current level over the steps it names (not a fixed 50-row mean)
        a, b = d.forecast["now_steps"]
        row = re.search(r"now \(the current level as the forecaster sees it: mean of steps (\d+)-(\d+)\)</th>"
                        r"<td>([^<]+)</td>", page)
        assert (float(row.group(1)), float(row.group(2))) == (a, b)
        assert float(row.group(3)) == pytest.approx(d.forecast["now"], rel=1e-3)
        assert d.forecast["now"] == d.forecast["end_of_run"]["current"]
        # the band in the table is the forecaster's, and no law plateau band competes with it
        assert f"{d.forecast['final_low']:.4g} to {d.forecast['final_high']:.4g}" in page
        assert "forecast plateau" not in page


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_a_run_in_progress_gets_the_forecast_of_its_planned_end():
    """A log that knows its max_steps beyond the last step (a trainer_state.json mid-run): diagnose's
    summary and the report give the end-of-run forecast (forecast_end) with its band and what it is."""
    import numpy as np

    from grpo_core.runs.forecast import forecast_end
    from grpo_core.runs.logs import from_records

    t = np.arange(1, 201)
    y = 1.0 - 0.8 * np.exp(-t / 50) + np.random.default_rng(0).normal(0, 0.03, t.size)
    log = from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)])
    log.meta["max_steps"] = 500
    d = diagnostics.diagnose(log, n_boot=0)
    end = d.forecast.forecaster_dict()
    assert end["horizon_kind"] == "planned" and d.forecast.horizon_kind == "planned"
    assert end == forecast_end(log).forecaster_dict() and end["final_low"] <= 1.0 <= end["final_high"]
    assert end["final"] == float(np.mean(y[-20:])) and end["fraction_seen"] == 0.4
    # the noise takes the reward past 1: no range to show the band within
    assert (f"end of run (mean of the last 20% of steps, 400-500): {end['final']:.4g}, 90% band "
            f"[{end['final_low']:.4g}, {end['final_high']:.4g}]: the current level "
            "(mean of steps 181-200), band calibrated on 52 real runs at 40% of this run (split-conformal); on "
            "15 new runs no point forecast beat holding the level") in d.summary()
    assert "planned end: step 500, 40% of it seen" in d.summary()
    page = render_report(log, d)
    assert "where the reward ends: mean of steps 400-500" in page
    assert f"{end['final_low']:.4g} to {end['final_high']:.4g}" in page
    assert "band calibrated on 52 real runs at 40% of this run (split-conformal)" in page


def test_a_finished_run_without_its_planned_end_is_taken_as_half_done_in_the_report():
    from grpo_core.runs import datasets

    # real run 08's log does not give max_steps: the band assumes the run is half done, and says so
    log = read_log(datasets.real_run("08").path)
    d = diagnostics.diagnose(log, n_boot=0)
    fc = d.forecast
    assert fc.horizon_kind == "assumed" and fc.fraction_seen == 0.5 and fc.horizon == 2 * d.steps[1]
    page = render_report(log, d)
    table = page[page.index("<h2>Forecast</h2>"): page.index("<h2>Charts</h2>")]
    assert "the band assumes the run is half done" in table and "late gain" not in table


def test_the_zero_spread_panel_names_the_0_1_expectation_only_where_it_is_drawn():
    from grpo_core.runs import datasets

    heading = "Groups without reward spread (zero advantages)"
    # real run 08: rewards up to 1.5 are not 0/1, so no expectation line; the heading does not promise one
    log = read_log(datasets.real_run("08").path)
    page = render_report(log, diagnostics.diagnose(log, n_boot=0))
    assert f'<h3 class="muted">{heading}</h3>' in page and "against the 0/1-reward expectation" not in page
    # a 0/1 reward with its group size known draws it, and the heading says so
    log = synthetic.synthetic_log("advantage_degeneration", n_steps=120)
    d = diagnostics.diagnose(log, group_size=4, n_boot=0)
    page = render_report(log, d, group_size=4)
    assert f"{heading}, against the 0/1-reward expectation</h3>" in page


def test_a_failed_report_leaves_the_earlier_one_whole(tmp_path, monkeypatch):
    from grpo_dynamics import report

    log, _ = _finding("advantage_degeneration")
    d = diagnostics.diagnose(log, forecast=False)
    target = tmp_path / "report.html"
    report.write_report(target, log, d)
    before = target.read_bytes()
    assert before.startswith(b"<!DOCTYPE html") or b"<html" in before[:200]

    def broken(*args, **kwargs):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(report, "render_report", broken)
    with pytest.raises(RuntimeError):
        report.write_report(target, log, d)
    assert target.read_bytes() == before  # not a 0-byte file, not half a page
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left


def test_a_report_named_with_undecodable_bytes_is_written(tmp_path):
    import os

    from grpo_dynamics import report

    log, _ = _finding("advantage_degeneration")
    d = diagnostics.diagnose(log, forecast=False)
    name = os.fsdecode(b"run-\xff\xfe.html")  # a Linux file name that is not UTF-8 (surrogate escapes)
    log.source = str(tmp_path / os.fsdecode(b"log-\xff.csv"))  # the page quotes the log's name
    path = report.write_report(tmp_path / name, log, d)
    assert path.exists() and path.stat().st_size > 1000
    assert "log-?.csv" in path.read_text(encoding="utf-8")  # the undecodable byte shown as "?"
