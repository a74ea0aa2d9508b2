"""`grpo-dynamics diagnose`: JSON output, exit status, every format, bad input, the HTML report."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXIT_CODE, log_cases

from grpo_core.runs.datasets import real_log_path
from grpo_dynamics.cli import main

TESTS = Path(__file__).parent
CASES = TESTS / "data" / "cases"
LOGS = TESTS / "data" / "logs"
REAL_RUNS = Path(__file__).parents[1] / "grpo_core" / "data" / "real_runs"


def run(capsys, *argv):
    code = main(["diagnose", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


# every user case whose answer is a verdict, whatever its input file (the others' input.txt holds
# hyperparameters); a case of a file kind the suffix list of old left out (10's console train.log) is here
LOG_CASES = log_cases()


def test_the_log_cases_are_found():
    assert LOG_CASES == {
        "01-all-groups-zero-spread": "trainer_state.json", "02-zero-loss-but-learning": "trainer_state.json",
        "03-growing-oscillation": "log.csv", "06-collapse-after-high-lr": "trainer_state.json",
        "07-entropy-collapse-verl": "metrics.jsonl", "10-dead-run-memgen": "train.log",
        "11-no-update-ms-swift": "logging.jsonl", "12-nan-late-ms-swift": "logging.jsonl",
        "13-kl-drift-lmbook": "wandb_export.csv"}


@pytest.mark.parametrize("name", sorted(LOG_CASES))
def test_cases_json_and_exit_status(capsys, name):
    expected = json.loads((CASES / name / "expected.json").read_text())
    code, out, err = run(capsys, CASES / name / LOG_CASES[name], "--json", "--no-forecast")
    data = json.loads(out)  # exactly one JSON object on stdout
    assert data["healthy"] is expected["healthy"]
    verdict = expected.get("verdict", "healthy" if expected["healthy"] else "unhealthy")
    assert data["verdict"] == verdict and code == EXIT_CODE[verdict]
    modes = {f["mode"] for f in data["findings"] if f["severity"] != "info"}
    assert set(expected.get("must_include_modes", [])) <= modes
    assert not set(expected.get("must_not_include_modes", [])) & {f["mode"] for f in data["findings"]}
    for f in data["findings"]:
        assert set(f) >= {"mode", "severity", "steps", "evidence", "message"}
        assert f["severity"] in ("info", "warning", "critical") and len(f["steps"]) == 2
    assert data["format"] in ("trl", "verl", "grpo_dynamics")  # 13: a W&B export reads as the generic CSV
    assert "forecast" in data and "checked" in data and "skipped" in data


def test_forecast_in_json(capsys):
    from grpo_core.runs import datasets
    from grpo_core.runs.forecast import calibrated

    code, out, _ = run(capsys, datasets.real_run("22").path, "--json", "--no-curvature")
    fc = json.loads(out)["forecast"]
    law = fc["law_fit"]  # the law that describes the curve, apart from what the text prints
    assert law["plateau_low"] <= law["plateau"] <= law["plateau_high"]
    assert {"law", "r2", "t90", "current", "reliable"} <= set(law) and not {"plateau", "current", "law"} & set(fc)
    # the forecast: the current level in its calibrated band, now over named steps, and what it is
    assert fc["final_low"] <= fc["final"] <= fc["final_high"] and fc["end_of_run"]["final"] == fc["final"]
    assert fc["now"] == fc["end_of_run"]["current"] == fc["final"] and fc["now_steps"] == [905, 1000]
    assert fc["method"] == calibrated.METHOD and fc["fraction_seen"] == 0.5 and fc["horizon_kind"] == "assumed"
    assert fc["calibration"] == "bench/results/forecast_fair.json"
    assert not {"asymptote", "plateau_determined", "clock", "late_gain"} & (set(fc) | set(fc["end_of_run"]))
    assert "fitted" not in fc  # the curves are for charts, not the JSON
    # a finished run whose trainer_state.json gives its planned end: nothing left to forecast, and why
    code, out, _ = run(capsys, CASES / "02-zero-loss-but-learning" / "trainer_state.json", "--json")
    assert code == 0 and json.loads(out)["forecast"] is None
    code, out, _ = run(capsys, CASES / "02-zero-loss-but-learning" / "trainer_state.json")
    assert ("no end-of-run forecast: the run has reached its planned end (step 120): its end is what the log shows, "
            "the mean of steps 96-120: ") in out


def test_max_steps_gives_the_planned_end_the_band_is_read_at(capsys):
    """Real run 22 (1000 steps, no max_steps in its log): taken as half done by default (the band's quantile at
    0.5); --max-steps 2500 reads it at 0.4 (wider), --max-steps 1000 is a finished run (no forecast, its end is
    what the log shows), --max-steps 0 is refused naming the flag."""
    from grpo_core.runs import datasets

    path = datasets.real_run("22").path
    half = json.loads(run(capsys, path, "--json", "--no-curvature")[1])["forecast"]
    at40 = json.loads(run(capsys, path, "--json", "--no-curvature", "--max-steps", "2500")[1])["forecast"]
    assert half["fraction_seen"] == 0.5 and at40["fraction_seen"] == 0.4 and at40["horizon_kind"] == "planned"
    assert at40["final"] == half["final"] and at40["final_high"] - at40["final"] == pytest.approx(
        (half["final_high"] - half["final"]) * 1.700886 / 1.352408)
    _, text, _ = run(capsys, path, "--no-curvature")
    assert "the band assumes the run is half done, to end at step 2000; give the planned steps with " in text
    _, text, _ = run(capsys, path, "--no-curvature", "--max-steps", "2500")
    assert "planned end: step 2500, 40% of it seen" in text
    _, text, _ = run(capsys, path, "--no-curvature", "--max-steps", "1000")
    assert "no end-of-run forecast: the run has reached its planned end (step 1000)" in text
    code, _, err = run(capsys, path, "--max-steps", "0")
    assert code == 2 and "max_steps" in err


def test_the_json_forecast_is_what_the_text_prints_with_the_law_fit_apart(capsys):
    """Real run 01 (a 0/1 reward that collapsed to 0.006 by its end, 40 rows): the JSON's top-level
    "current" was 0.524 (the law fit's mean of the last 50 rows: all 40) beside the text's "now 0.00625".
    The top level holds what the text prints; the law fit is under "law_fit"."""
    from grpo_core.runs import datasets

    path = datasets.real_run("01").path
    code, out, _ = run(capsys, path, "--json", "--no-curvature")
    fc = json.loads(out)["forecast"]
    code, text, _ = run(capsys, path, "--no-curvature")
    assert fc["forecast"] in text and "(mean of steps 185-200)" in fc["forecast"]
    assert fc["now"] == 0.00625 and fc["final"] == 0.00625 and fc["horizon_note"] in text
    assert fc["law_fit"]["current"] == pytest.approx(0.52375) and fc["law_fit"]["tail"] == 40  # all 40 rows
    assert "current" not in fc and "plateau" not in fc


def test_a_forecast_band_wider_than_the_log_ever_went_says_so(capsys):
    """Real run 22 (a smooth rise, taken as half done): the band [0.573, 2.22] is 1.28x the whole range of the
    rewards it logged; the forecast says it says little. Real run 27 (Phi-4 14B, rewards over 2.2): its band
    [-0.267, 0.761] is narrower than that: no note."""
    from grpo_core.runs import datasets

    for rid, wide in (("22", True), ("27", False)):
        code, out, _ = run(capsys, datasets.real_run(rid).path, "--json")
        fc = json.loads(out)["forecast"]
        ratio = (fc["final_high"] - fc["final_low"]) / fc["window_range"]
        assert (ratio > 1) is wide
        _, text, _ = run(capsys, datasets.real_run(rid).path)
        assert (f"the band is {ratio:.2f}x as wide as the whole range of the values seen: it says little about where "
                "the run ends" in text) is wide


# the exit code each log must give: the constructed logs are healthy (0; 0.23 has an info finding
# only), or inconclusive (3) when they have fewer than 16 rewards (too few to establish that the run
# learns); the Qwen Unsloth run learned through its early zero spread (a cost, info: 0), the 12-step
# Gemma run cannot show that it learned, so its sustained zero spread stays a warning (1)
@pytest.mark.parametrize("path,fmt,want", [
    (LOGS / "trl_0.14_trainer_state.json", "trl", 0),
    (LOGS / "trl_0.19_trainer_state.json", "trl", 3),
    (LOGS / "trl_0.23_trainer_state.json", "trl", 0),
    (LOGS / "trl_0.29_trainer_state.json", "trl", 0),
    (LOGS / "trl_log_history.jsonl", "trl", 0),
    (LOGS / "notebook_progress.csv", "notebook", 3),
    (LOGS / "verl_metrics.jsonl", "verl", 3),
    (LOGS / "verl_metrics.csv", "verl", 3),
    (LOGS / "grpo_dynamics_metrics.jsonl", "grpo_dynamics", 3),
    (real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"), "notebook", 0),
    (real_log_path("gemma3-1b-it_gsm8k_unsloth"), "notebook", 1),
])
def test_every_format(capsys, path, fmt, want):
    code, out, err = run(capsys, path, "--json", "--no-forecast")
    assert code == want
    data = json.loads(out)
    assert data["format"] == fmt
    assert data["healthy"] is (want == 0)
    assert data["verdict"] == {0: "healthy", 1: "unhealthy", 3: "inconclusive"}[want]
    if want == 1:
        assert [(f["mode"], f["severity"]) for f in data["findings"]] == [("advantage_degeneration", "warning")]


def test_generic_with_map(capsys):
    code, out, _ = run(capsys, LOGS / "generic.tsv", "--json", "--no-forecast",
                       "--map", "step=iter", "--map", "reward=acc", "--map", "kl=my_kl")
    data = json.loads(out)
    # 15 rewards and one of the four checks: no finding, and too little to call the run healthy
    assert code == 3 and data["format"] == "generic" and data["verdict"] == "inconclusive"
    assert not data["healthy"] and data["findings"] == []


def test_text_output_names_the_modes(capsys):
    code, out, _ = run(capsys, CASES / "07-entropy-collapse-verl" / "metrics.jsonl", "--no-forecast")
    assert code == 1
    assert "NOT healthy" in out and "[critical] policy_concentration" in out
    assert "not checked: advantage_degeneration" in out


def test_trl_version_flag(capsys):
    _, out, _ = run(
        capsys, LOGS / "trl_0.19_trainer_state.json", "--json", "--no-forecast", "--trl-version", "0.28.0"
    )
    assert json.loads(out)["reward_std_kind"] == "batch_std"


@pytest.mark.parametrize("text,argv,match", [
    ("", [], "the file is empty"),
    ('{"log_history": [{"step": 1, "loss"', [], "invalid JSON at line 1"),
    # json's message "Unterminated string starting at" was printed cut off after "at"
    ('{"log_history": [{"step": 1, "rew', [], r"invalid JSON at line 1, column 30: Unterminated string starting$"),
    ("a,b\n1,2\n", [], "unknown log format"),
    ("\x00\x01\x02binary", [], "not a text file .it holds NUL bytes."),
    ("idx,acc\n1,0.1\n", ["--map", "reward=acc"], "no step column"),
    ("step,reward\n1,0.1\n", ["--map", "reward"], "`--map` must be KEY=COLUMN"),
    ("step,reward\n1,0.1\n", ["--group-size", "1"], "`group_size` must be an integer >= 2"),
    ("step,reward\n1,0.1\n", ["--format", "wandb"], "`format` must be one of"),
])
def test_bad_input_one_line_exit_2(capsys, tmp_path, text, argv, match):
    path = tmp_path / "log.txt"
    path.write_text(text)
    code, out, err = run(capsys, path, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grpo-dynamics diagnose: error:")
    assert re.search(match, lines[0])


def test_report_path_is_checked_before_any_work_and_never_overwrites_the_log(capsys, tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("step,reward\n" + "".join(f"{i},{i / 40:.3f}\n" for i in range(1, 41)))
    before = log.read_bytes()
    for report, match in ((log, "`--report` must end in .html"),          # the log itself: refused
                          (tmp_path / "r.png", "`--report` must end in .html"),
                          (tmp_path, "`--report` must end in .html"),
                          (log / "r.html", "cannot read or write a file: Not a directory")):
        code, out, err = run(capsys, log, "--report", report)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert match in err and "Traceback" not in err
    assert log.read_bytes() == before
    code, out, _ = run(capsys, log, "--report", tmp_path / "R.HTML")  # the suffix in any case
    # a steady linear rise with only a reward column: no finding, but inconclusive (exit 3)
    assert code == 3 and (tmp_path / "R.HTML").read_text().lstrip().startswith("<!DOCTYPE html")


def test_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, tmp_path / "nope.json")
    assert code == 2 and "no such file" in err


def test_warnings_are_one_line_each(capsys, tmp_path):
    path = tmp_path / "u.csv"
    rows = [(s, 0.01 * s) for s in range(1, 21)]
    rows[0], rows[1] = rows[1], rows[0]  # one place where the step goes back
    path.write_text("step,reward\n" + "".join(f"{s},{r}\n" for s, r in rows))
    code, out, err = run(capsys, path, "--no-forecast")
    assert code == 3  # a reward-only log of 20 steps: inconclusive
    assert (
        err.strip()
        == f"warning: {path}: steps were out of order (1 place(s) where the step goes back, train); "
        "sorted them"
    )
    # --json keeps stdout to one object and stderr quiet; the note is in the JSON
    code, out, err = run(capsys, path, "--json", "--no-forecast")
    assert err == "" and any("out of order" in n for n in json.loads(out)["notes"])


def test_too_short_log_is_no_verdict(capsys, tmp_path):
    # three rewards are too few for any check: an error, not "healthy"
    path = tmp_path / "short.csv"
    path.write_text("step,reward\n1,0.1\n2,0.2\n3,0.3\n")
    code, out, err = run(capsys, path, "--no-forecast")
    assert code == 2 and out == ""
    assert "nothing to diagnose" in err and "16 of the reward" in err and "has 3 row(s)" in err
    assert "healthy" not in err


def test_console_script_no_traceback(tmp_path):
    exe = shutil.which("grpo-dynamics") or str(Path(sys.executable).parent / "grpo-dynamics")
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"step": 1, "reward": 0.1}\n{"step": 2, "rew\n{"step": 3, "reward": 0.3}\n')
    proc = subprocess.run([exe, "diagnose", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "line 2 is not valid JSON" in proc.stderr
    proc = subprocess.run([exe, "diagnose", str(CASES / "01-all-groups-zero-spread" / "trainer_state.json"),
                           "--json", "--no-forecast"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and json.loads(proc.stdout)["healthy"] is False


# --------------------------------------------------------------------------------------------
# The HTML report
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def report06(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "r06.html"
    code = main(
        [
            "diagnose",
            str(CASES / "06-collapse-after-high-lr" / "trainer_state.json"),
            "--report",
            str(path),
            "--json",
        ]
    )
    assert code == 1
    return path


def test_report_is_one_self_contained_page(report06):
    page = report06.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"<script[^>]+src=", page)  # no external script
    assert not re.search(r"<link[^>]+href=", page)  # no external stylesheet
    assert "vegaEmbed" in page and len(page) > 500_000  # the Vega bundle is inlined
    assert "dynamic instability" in page and "onset at step 28" in page
    specs = json.loads(re.search(r"const SPECS = (\{.*?\});\n", page, re.S).group(1).replace("<\\/", "</"))
    # reward, zero-spread, KL and grad norm panels (this log has no entropy), and one evidence chart
    # per finding (tests/test_report.py)
    assert {k for k in specs if k.startswith("chart_")} == {"chart_reward", "chart_zero_spread", "chart_kl",
                                                            "chart_grad_norm"}
    assert {k for k in specs if not k.startswith("chart_")} == {f"evidence_{i}" for i in
                                                                range(page.count('class="finding"'))}
    for key in specs:
        assert f'id="{key}"' in page


@pytest.mark.browser
def test_report_renders_offline_in_chromium(report06, probe):
    # `probe` (tests/conftest.py): the shared Chromium, console errors and off-machine requests recorded.
    page = probe.page
    page.goto(report06.resolve().as_uri())
    n = page.locator(".chart").count()  # the four panels and one evidence chart per finding
    assert n > 4
    page.wait_for_function(f"document.querySelectorAll('.chart svg').length >= {n}", timeout=20_000)
    assert page.locator(".chart svg").count() == n
    probe.screenshot("diagnose-report")
    assert probe.external_requests == []
    assert probe.console_errors == []


def _write_curve(path: Path, reward) -> Path:
    lines = ["step,reward"] + [f"{i + 1},{v!r}" for i, v in enumerate(map(float, reward))]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_forecast_past_what_a_0_1_reward_can_reach_is_flagged_not_reliable(capsys, tmp_path):
    import numpy as np

    # an accuracy still rising linearly at the end of the log: the best law's plateau is above 1
    t = np.arange(1, 301)
    acc = np.clip(0.1 + 0.0032 * t + np.random.default_rng(0).normal(0, 0.02, t.size), 0, 1)
    log = _write_curve(tmp_path / "rising.csv", acc)
    code, out, err = run(capsys, log, "--json")
    fc = json.loads(out)["forecast"]
    assert fc["law_fit"]["plateau"] > 1  # reported as fitted, not clipped ...
    assert fc["law_fit"]["reliable"] is False and "outside [0, 1]" in fc["law_fit"]["caveat"]  # ... out of reach
    # the end forecast is the current level, within [0, 1]; its band is shown clipped to it (end_of_run keeps
    # the method's own numbers)
    assert fc["final"] <= 1 and fc["end_of_run"]["final_high"] > 1 and fc["band_clipped"] is True
    assert fc["final_low"] >= 0 and fc["final_high"] == 1.0 and fc["forecast_caveat"] is None
    code, out, err = run(capsys, log)
    assert "clipped to [0, 1], the range of a 0/1 reward" in out
    # a reward that is not 0/1 (the user says so): no such caveat
    code, out, err = run(capsys, log, "--json", "--binary-reward", "no")
    assert json.loads(out)["forecast"]["law_fit"]["reliable"] is True


def test_forecast_whose_plateau_sits_at_the_law_bound_is_flagged(capsys, tmp_path):
    import numpy as np

    # a straight line: no law determines a plateau; the fit parks r_inf at its bound
    log = _write_curve(tmp_path / "line.csv", 0.1 + 0.002 * np.arange(1, 200))
    code, out, err = run(capsys, log, "--json")
    fc = json.loads(out)["forecast"]["law_fit"]
    assert "r_inf" in fc["at_bound"]
    assert fc["reliable"] is False and "does not determine its plateau" in fc["caveat"]


def test_text_report_says_why_there_is_no_forecast(capsys, tmp_path):
    code, out, err = run(capsys, _write_curve(tmp_path / "flat.csv", [0.5] * 100))
    # no significance gate (whether the run learns is not_learning's verdict): a reward that never
    # changes is declined by the forecast itself
    assert ("no end-of-run forecast: the seen part's rolling mean does not change (its spread is 0): the band has "
            "no scale") in out
    # ten steps of grad_norm let a check run; the reward was logged on only three of them
    three = tmp_path / "three.csv"
    three.write_text("step,grad_norm,reward\n" + "".join(
        f"{s},0.3,{0.1 * s if s <= 3 else ''}\n" for s in range(1, 11)))
    code, out, err = run(capsys, three)
    # the 7 empty reward cells mean "not logged at this step", not a logged NaN: no numerical failure
    # (it was exit 1 while empty cells read as NaN); three rewards are too few to say whether the run
    # learns, so the verdict is inconclusive (exit 3)
    assert code == 3 and "numerical" not in out and "no end-of-run forecast: only 3 reward point(s)" in out
    assert "the reward is logged on 3 of 10 training steps" in out


def test_a_log_with_nothing_to_check_is_an_error_not_healthy(capsys, tmp_path):
    log = tmp_path / "loss_only.csv"
    log.write_text("step,loss\n" + "".join(f"{i},0.1\n" for i in range(1, 50)))
    code, out, err = run(capsys, log)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "nothing to diagnose" in err and "step, loss" in err and "--map" in err
    # a reward column of text: the error says it was there and why it was dropped
    log.write_text("step,loss,reward\n" + "".join(f"{i},0.1,good\n" for i in range(1, 50)))
    code, out, err = run(capsys, log)
    assert code == 2 and "its columns: step, loss; column 'reward' was dropped: it holds no numbers." in err
    # beside columns other checks read, the run is inconclusive, and the forecast's note says why, not that
    # the log has no 'reward' column
    log.write_text("step,loss,grad_norm,kl,reward\n" + "".join(f"{i},0.1,0.{i % 7 + 1},0.0{i},good\n"
                                                             for i in range(1, 50)))
    code, out, err = run(capsys, log)
    assert code == 3 and ("no end-of-run forecast: the log has no reward values (the column 'reward' was dropped: it "
                          "holds no numbers)") in out
    assert "no 'reward' column" not in out


def test_correctness_option_and_what_the_messages_tell_a_command_line_user(capsys):
    gemma = real_log_path("gemma3-1b-it_gsm8k_unsloth.csv")
    code, out, err = run(capsys, gemma, "--correctness", "check_numbers", "--json")
    assert "train_eval_decoupling" in json.loads(out)["checked"]
    # a name that is not a reward function is said, with the ones there are (it was ignored)
    code, out, err = run(capsys, gemma, "--correctness", "nosuch", "--json")
    assert code == 2 and out == "" and "'nosuch'" in err and "check_answer" in err
    # the hint names the command's options, not only the library's keywords
    code, out, err = run(capsys, CASES / "02-zero-loss-but-learning" / "trainer_state.json", "--no-forecast")
    assert "(--eval-metric)" in out and "(--correctness)" in out


def test_missing_or_partly_missing_reward_is_said_in_the_text_report(capsys, tmp_path):
    empty = tmp_path / "allnan.csv"
    empty.write_text("step,reward,kl\n" + "".join(f"{i},nan,{0.01 * i:.3f}\n" for i in range(1, 61)))
    code, out, err = run(capsys, empty)
    assert ("no end-of-run forecast: the log has no reward values (the column 'reward' was dropped: every value is "
            "empty or NaN)") in out
    assert "dropped column 'reward': every value is empty or NaN" in err
    some = tmp_path / "somenan.csv"
    some.write_text("step,reward,kl\n" + "".join(
        f"{i},{'nan' if i % 5 == 0 else round(i / 60, 3)},{0.01 * i:.3f}\n" for i in range(1, 61)))
    code, out, _ = run(capsys, some)
    assert "data: 12 of 60 reward value(s) are NaN or infinite" in out
    code, out, _ = run(capsys, some, "--json")
    assert any(n.startswith("data: 12 of 60") for n in json.loads(out)["notes"])


def test_one_row_is_no_evidence_and_a_full_bound_reads_every_group(capsys, tmp_path):
    one = tmp_path / "one.csv"
    one.write_text("step,reward,reward_std\n1,0.5,0\n")
    code, out, err = run(capsys, one)
    assert code == 2 and "nothing to diagnose" in err  # was a critical finding from one step
    flat = tmp_path / "flat.csv"
    flat.write_text("step,reward,reward_std\n" + "".join(f"{i},0.5,0\n" for i in range(1, 31)))
    code, out, _ = run(capsys, flat)
    assert code == 1 and "Every group had zero reward spread over steps 1-30" in out and "At least" not in out


def test_binary_reward_claim_that_contradicts_the_log_is_refused(capsys):
    qwen = TESTS.parent / "grpo_core" / "data" / "real_logs" / "qwen2.5-3b-instruct_gsm8k_unsloth.csv"
    code, out, err = run(capsys, qwen, "--binary-reward", "yes")
    assert (
        code == 2
        and out == ""
        and "`binary_reward` is True but the reward" in err
        and "outside [0, 1]" in err
    )


def test_no_reward_is_inconclusive_and_a_map_typo_is_an_error(capsys, tmp_path):
    # zero-spread stretches in reward_std, the reward column empty on every step: never "NOT healthy" on
    # evidence about a metric that is not there
    path = tmp_path / "allnan.csv"
    path.write_text("step,loss,reward,reward_std,kl\n" + "".join(
        f"{s},0.01,,{0.0 if 20 <= s < 60 else 0.3},{0.001 * s}\n" for s in range(1, 101)))
    code, out, err = run(capsys, path, "--json", "--no-forecast")
    data = json.loads(out)
    assert code == 3 and data["verdict"] == "inconclusive"
    assert any("reward" in m and "every value is empty or NaN" in m for m in data["missing"])
    assert {f["mode"]: f["severity"] for f in data["findings"]}.get("advantage_degeneration") == "info"
    # the same log with the reward under another name and a typo in --map
    odd = tmp_path / "odd.csv"
    odd.write_text("iteration,Total Score (avg),reward_std\n" + "".join(
        f"{s},{0.1 + 0.005 * s},{0.0 if 20 <= s < 60 else 0.3}\n" for s in range(1, 101)))
    code, out, err = run(capsys, odd, "--map", "step=iteration", "--map", "rewrad=Total Score (avg)")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "unknown key 'rewrad'" in err and "known keys: step, " in err
    code, out, err = run(capsys, odd, "--map", "step=iteration", "--map", "reward=Total Score (avg)", "--json",
                         "--no-forecast")
    assert code in (0, 1, 3) and "not_learning" in json.loads(out)["checked"]


def test_an_all_nan_entropy_is_said_not_called_absent(capsys, tmp_path):
    path = tmp_path / "entnan.csv"
    path.write_text("step,reward,reward_std,entropy\n" + "".join(
        f"{s},{0.1 + 0.005 * s},0.3,\n" for s in range(1, 101)))
    code, out, err = run(capsys, path, "--no-forecast")
    assert ("not checked: policy_concentration (policy_concentration needs entropy: the column entropy was dropped "
            f"from {path}: every value is empty or NaN)") in out
    assert "not checked: entropy_explosion (" in out and "does not have the column" not in out


def test_a_collapse_is_unlearning_without_raise_the_learning_rate(capsys):
    code, out, _ = run(capsys, REAL_RUNS / "01-Sunshine535-rho1-collapse" / "rho1.00_seed42.log", "--no-forecast")
    assert code == 1 and "[critical] not_learning: The reward fell from 0.842 to 0.005" in out
    assert "raise the learning rate" not in out


def test_wasted_rollouts_of_a_log_written_every_5_steps_count_steps(capsys):
    code, out, _ = run(capsys, REAL_RUNS / "07-Rusheel86-chaos-economy" / "vsr-new.log", "--json", "--no-forecast")
    f = next(f for f in json.loads(out)["findings"] if f["mode"] == "advantage_degeneration")
    assert f["steps"] == [105, 500] and f["evidence"]["steps_in_stretch"] == 400  # one row per 5 steps
    assert 300 < f["evidence"]["wasted_steps"] < 320 and "(310 steps' worth" in f["message"]


def test_a_declared_reward_range_bounds_the_forecast_like_a_0_1_reward(capsys, tmp_path):
    """Real run 04: format (0.5) + correctness (1.0); its log reaches 1.5 exactly and no more. Taken as half
    done, its band runs past 1.5: past what the reward can be. --reward-range 0 1.5 shows it within [0, 1.5]
    with the reason, in the text, the JSON and the HTML report; end_of_run keeps the method's numbers. A
    range the log leaves is refused, naming the flag."""
    log = REAL_RUNS / "04-Caitlyn-Yin-easy-standard" / "easy_standard.log"
    code, out, _ = run(capsys, log, "--json", "--no-curvature")
    plain = json.loads(out)["forecast"]
    assert plain["final_high"] > 1.5 and plain["band_clipped"] is False and plain["shown_range"] is None
    report = tmp_path / "r04.html"
    code, out, _ = run(capsys, log, "--json", "--no-curvature", "--reward-range", "0", "1.5", "--report", report)
    fc = json.loads(out)["forecast"]
    assert fc["end_of_run"]["final_high"] == plain["final_high"]  # the method's own, unchanged
    assert fc["final_high"] == 1.5 and fc["final_low"] == plain["final_low"] and fc["band_clipped"] is True
    assert fc["shown_range"] == [0.0, 1.5, "the reward's declared range"]
    import html

    assert "clipped to [0, 1.5], the reward's declared range" in html.unescape(report.read_text())
    code, out, _ = run(capsys, log, "--no-curvature", "--reward-range", "0", "1.5")
    assert ", 1.5] (clipped to [0, 1.5], the reward's declared range): the current level" in out
    code, out, err = run(capsys, log, "--reward-range", "0", "1.4")
    assert code == 2 and "`--reward-range` (0, 1.4) does not hold the reward" in err and "0.175 to 1.5" in err


def test_the_time_scale_of_a_run_that_fell_carries_advises_caveat(capsys, tmp_path):
    """Real run 36 rose to 21.9 (steps 13-18) and fell to about 8.4: diagnose said "the run unlearned ...
    lower the learning rate" and, two lines below, a stability verdict read off a relaxation fitted to that
    curve. The time scale stays, with the caveat that it does not explain the fall, in the line, the JSON and
    the report; there is no verdict beside it; a run that levelled off (04) gets no caveat."""
    import html

    from grpo_core.runs import datasets

    log = datasets.real_run("36").path
    report = tmp_path / "r36.html"
    code, out, _ = run(capsys, log, "--json", "--no-forecast", "--report", report)
    ic = json.loads(out)["implied_curvature"]
    assert code == 1 and ic["a_lo"] < ic["a"] < ic["a_hi"] and "stable" not in ic  # the time scale stays ...
    assert ic["caveat"] == ("the reward is not a relaxation to a plateau (not_learning above): the time scale and "
                            "regime are those of a relaxation fitted to it and do not explain the fall")
    assert "<b>Caveat:</b> the reward is not a relaxation to a plateau" in html.unescape(report.read_text())
    code, out, _ = run(capsys, log, "--no-forecast")
    line = next(s for s in out.splitlines() if "reward time scale" in s)
    assert "stable" not in line and line.endswith("(caveat: " + ic["caveat"] + ")")
    code, out, _ = run(capsys, REAL_RUNS / "04-Caitlyn-Yin-easy-standard" / "easy_standard.log", "--json",
                       "--no-forecast")
    assert json.loads(out)["implied_curvature"]["caveat"] is None


def test_a_saturated_0_1_run_is_forecast_within_its_range(capsys):
    # a committed language-model run (cpu-dynamics, G = 16) near its ceiling: the end forecast is its current
    # level (a mean of rewards within [0, 1]), the band shown clipped to [0, 1], no caveat
    from pathlib import Path

    log = (Path(__file__).resolve().parents[1] / "book" / "experiments" / "runs" / "prompts-fixed-dynamics"
           / "cpu-dynamics__G16-B32__s2" / "metrics.jsonl")
    code, out, err = run(capsys, str(log), "--json")
    fc = json.loads(out)["forecast"]
    end = fc["end_of_run"]
    assert 0.9 < fc["final"] == end["final"] < 1 and end["final_high"] > 1 and fc["final_high"] == 1.0
    assert fc["band_clipped"] is True and fc["forecast_caveat"] is None
