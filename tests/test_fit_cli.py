"""`grpo-dynamics fit`: the JSON and the table, the plots, every log format, and refused input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grpo_core import laws
from grpo_core.errors import DataError
from grpo_core.runs import datasets
from grpo_core.runs.datasets import real_log_path
from grpo_core.runs.forecast import calibrated
from grpo_dynamics.cli import main

QWEN = str(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
LOGS = Path(__file__).resolve().parent / "data" / "logs"
CASES = Path(__file__).resolve().parent / "data" / "cases"


def _json(capsys, *args):
    assert main(["fit", *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def _fails(capsys, *args) -> str:
    assert main(["fit", *args]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == ""
    assert len(err) == 1 and err[0].startswith("grpo-dynamics fit: error:"), err
    return err[0]


def test_json_models_and_best_match_the_library(capsys):
    d = _json(capsys, QWEN, "--metric", "reward")
    assert set(d["models"]) == {"three_phase", "exponential", "logistic"}
    for m in d["models"].values():
        assert {"r2", "aic", "bic", "aicc", "plateau", "params", "stderr", "t90", "notes"} <= set(m)
    y = _qwen_reward()
    cmp = laws.fit_all(np.arange(1, 251, dtype=float), y)
    assert d["best"] == cmp.best == "logistic" and d["criterion"] == "aic" and d["n"] == 250
    for name, res in cmp.results.items():
        assert d["models"][name]["r2"] == pytest.approx(res.r2, rel=1e-9)
        assert d["models"][name]["aic"] == pytest.approx(res.aic, rel=1e-9)
        assert d["models"][name]["plateau"] == pytest.approx(res.plateau, rel=1e-6)
    assert d["forecast"] is None and d["plot"] is None
    assert d["models"]["three_phase"]["oscillator"]["regime"] == "underdamped"


def test_json_forecast_and_smoothing(capsys):
    d = _json(capsys, QWEN, "--fit-fraction", "0.4", "--n-boot", "0", "--smooth", "20")
    assert d["smooth"] == 20 and d["n"] == 231
    assert d["models"]["three_phase"]["r2"] >= 0.93
    fc = d["forecast"]
    assert fc["fraction"] == 0.4 and fc["band_method"] == "delta" and fc["n_fit"] == 92
    assert fc["plateau_low"] <= fc["plateau"] <= fc["plateau_high"]
    # the law fit is scored against the last 20% of the (smoothed) points, 47 of 231, as the end-of-run forecast
    assert fc["tail"] == 47 and fc["actual_tail_mean"] == pytest.approx(float(np.mean(laws.rolling_mean(
        np.arange(1, 251), _qwen_reward(), 20)[1][-47:])))
    # the end-of-run forecast reads the raw log (not the smoothed curve): the first 100 of 250 steps, the
    # mean of the last 20% (50 steps) as the truth
    end = d["end_of_run_forecast"]
    assert end["n_fit"] == 100 and end["horizon"] == 250 and end["fraction_seen"] == 0.4
    assert end["actual"] == pytest.approx(float(np.mean(_qwen_reward()[-50:]))) and end["actual_steps"] == [201, 250]
    # the point is "now": the mean of the window's last 10%
    assert end["current_steps"] == [91, 100] and end["final"] == pytest.approx(np.mean(_qwen_reward()[90:100]))
    assert end["final_low"] <= end["final"] <= end["final_high"] and end["method"] == calibrated.METHOD
    assert end["calibration"] == "bench/results/forecast_fair.json" and end["forecast"].startswith("end of run")
    assert not {"clock", "late_gain", "late_gain_unit", "weights", "plateau"} & set(end)


def _qwen_reward():
    import warnings

    from grpo_core.runs.logs import read_log

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_log(QWEN).series("reward")[1]


def test_table_report(capsys):
    assert main(["fit", QWEN, "--fit-fraction", "0.4", "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\*logistic\s+0\.38\d", out, re.M)
    assert re.search(r"^ three_phase\s+0\.37\d", out, re.M)
    assert "best by AIC: logistic" in out
    assert "oscillator: damping ratio" in out
    # one forecast, the calibrated one (the law fits above describe the curve; no second, differently-banded
    # law plateau competes with it)
    assert out.count("forecast from the first") == 1 and "90% bootstrap band" not in out
    assert ("forecast from the first 40% of the points (100, to step 100): end of run (mean of the last 20% of "
            "steps, 200-250): ") in out
    assert ("the current level (mean of steps 91-100), band calibrated on 52 real runs at 40% of this run "
            "(split-conformal); on 15 new runs no point forecast beat holding the level") in out
    # the actual: the last 20% of the log, all after the fit window (steps 201-250)
    assert re.search(r"actual: mean of steps 201-250 \(the log's last 20%, after the fit window\) 1\.437 "
                     r"\((inside|outside) the band; error [+-]", out)
    assert "late gain" not in out and "clock" not in out.split("forecast from")[1]


def test_actual_is_what_the_forecast_is_of_and_says_how_much_the_window_saw(capsys, tmp_path):
    """A fit fraction above 0.8: the actual is still the mean of the log's last 20% (the steps the forecast
    is of, the calibration's truth), and the JSON says how many of its points the window holds (40 rows
    logged every 5 steps, as real run 01); no forecast is made past 80% of a run, and the text says why."""
    log = tmp_path / "every5.csv"
    log.write_text("step,reward\n" + "".join(f"{5 * i},{min(1.0, 0.02 * i)}\n" for i in range(1, 41)))
    d = _json(capsys, str(log), "--fit-fraction", "0.9", "--n-boot", "0")
    end = d["end_of_run_forecast"]
    assert end["n_fit"] == 36 and end["t_fit_end"] == 180 and end["actual_steps"] == [165, 200]
    assert end["actual"] == pytest.approx(np.mean([min(1.0, 0.02 * i) for i in range(33, 41)]))
    assert end["actual_points"] == 8 and end["actual_in_window"] == 4
    assert end["declined"] == ("90% of the run is seen: its end is nearly what the log shows now; the band is "
                               "calibrated up to 80% of a run") and end["covered"] is None
    assert main(["fit", str(log), "--fit-fraction", "0.9", "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert ("forecast from the first 90% of the points (36, to step 180): end of run (mean of the last 20% of "
            "steps, 160-200): no forecast: 90% of the run is seen") in out and "actual:" not in out
    # at 0.8 the window ends where the last 20% begins
    end = _json(capsys, str(log), "--fit-fraction", "0.8", "--n-boot", "0")["end_of_run_forecast"]
    assert end["declined"] is None and end["t_fit_end"] == 160 and end["actual_in_window"] == 0


def test_a_zero_one_reward_forecast_is_shown_within_zero_one(capsys, tmp_path):
    """Real run 01 (a 0/1 reward that collapses): the band from 40% runs past [0, 1]; fit shows it clipped
    to the reward's range and says so, as diagnose does; the JSON keeps the method's own numbers."""
    path = str(datasets.real_run("01").path)
    d = _json(capsys, path, "--fit-fraction", "0.4", "--n-boot", "0")
    end = d["end_of_run_forecast"]
    assert end["unit_range"] and end["final_low"] < 0 < 1 < end["final_high"]
    # and what is shown beside them
    shown = {k: end["shown"][k] for k in ("final", "low", "high", "clipped_to")}
    assert shown == {"final": end["final"], "low": 0.0, "high": 1.0, "clipped_to": [0.0, 1.0]}
    plot = tmp_path / "f.html"
    assert main(["fit", path, "--fit-fraction", "0.4", "--n-boot", "0", "--plot", str(plot)]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("forecast from"))
    assert "0.9083, 90% band [0, 1] (clipped to [0, 1], the range of a 0/1 reward)" in line
    # the plot's band is the printed one, not the method's unclipped [-0.034, 1.85]
    boxes = [json.loads(r) for r in re.findall(r'\{[^{}]*"what": "forecast"[^{}]*\}', plot.read_text())]
    assert boxes and all(r["low"] == 0.0 and r["high"] == 1.0 for r in boxes)


def test_a_declared_reward_range_clips_a_composite_rewards_forecast(capsys):
    """Real run 04: format (0.5) + correctness (1.0), so its step mean cannot pass 1.5 (its log reaches 1.5
    exactly). From 40% the level is 1.4125 with a band up to 2.78; with --reward-range 0 1.5 the band is shown
    within it and the text says the method's own band runs past it. The JSON keeps the method's numbers."""
    path = str(datasets.real_run("04").path)
    end = _json(capsys, path, "--fit-fraction", "0.4", "--n-boot", "0", "--reward-range", "0", "1.5")[
        "end_of_run_forecast"]
    assert end["final"] == pytest.approx(1.4125) and end["final_high"] > 1.5 and not end["unit_range"]
    shown = {k: end["shown"][k] for k in ("final", "low", "high", "clipped_to")}
    assert shown == {"final": end["final"], "low": end["final_low"], "high": 1.5, "clipped_to": [0.0, 1.5]}
    assert end["shown_range"] == [0.0, 1.5, "the reward's declared range"]
    assert main(["fit", path, "--fit-fraction", "0.4", "--n-boot", "0", "--reward-range", "0", "1.5"]) == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("forecast from"))
    assert ", 1.5] (clipped to [0, 1.5], the reward's declared range)" in line
    # the clipped band does not hide the method's own
    assert (f"  the method's own band [{end['final_low']:.4g}, {end['final_high']:.4g}] runs past [0, 1.5], the "
            "reward's declared range") in out
    assert end["shown"]["error"] == pytest.approx(end["final"] - end["actual"]) == end["error"]
    actual = next(s for s in out.splitlines() if s.startswith("actual:"))
    assert f"error {end['error']:+.4g})" in actual
    # without the range: shown as the method has it (a reward past 1 is no 0/1 reward)
    plain = _json(capsys, path, "--fit-fraction", "0.4", "--n-boot", "0")["end_of_run_forecast"]
    assert plain["shown"]["clipped_to"] is None and plain["shown"]["high"] == plain["final_high"] > 1.5
    # a range the log leaves, a reversed one, a non-reward metric: one-line errors naming the flag
    assert "`--reward-range` (0, 1.2) does not hold the reward" in _fails(
        capsys, path, "--fit-fraction", "0.4", "--reward-range", "0", "1.2")
    assert "runs from 0.175 to 1.5" in _fails(capsys, path, "--fit-fraction", "0.4", "--reward-range", "0", "1.2")
    assert "low < high" in _fails(capsys, path, "--fit-fraction", "0.4", "--reward-range", "1.5", "0")
    assert "is the range of a reward" in _fails(capsys, path, "--metric", "kl", "--fit-fraction", "0.4",
                                                "--reward-range", "0", "1")
    assert "give it with --fit-fraction" in _fails(capsys, path, "--reward-range", "0", "1.5")  # not ignored


def test_the_law_fits_forecast_says_when_it_means_nothing_and_reads_the_last_20pct(capsys):
    """Held-out run 49 (rewards -7.5 to 2.75) from 40%: the law fit's JSON plateau was 58.5 in [-67.5, 58.5] with
    nothing to say so; it now carries at_bound, reliable and the caveat, as diagnose's law_fit does. Real run 18
    (50 points): the law fit was scored against the last 50 points, the whole log and its own window; now
    against the last 20%, the end-of-run forecast's actual."""
    d = _json(capsys, str(datasets.real_run("49", "holdout_runs").path), "--fit-fraction", "0.4", "--n-boot", "0")
    fc = d["forecast"]
    assert fc["at_bound"] == ["r_inf"] and fc["reliable"] is False
    assert fc["caveat"].startswith("the plateau sits at the law's bound") and "three times as wide" in fc["caveat"]
    d = _json(capsys, str(datasets.real_run("18").path), "--fit-fraction", "0.4", "--n-boot", "0")
    assert d["n"] == 50 and d["forecast"]["tail"] == 10
    assert d["forecast"]["actual_tail_mean"] == pytest.approx(d["end_of_run_forecast"]["actual"], abs=1e-12)
    # its plateau band [0.23, 3.45] is wider than three times the window's range (0.31): said too
    assert d["forecast"]["reliable"] is False and "three times as wide" in d["forecast"]["caveat"]
    # a smooth rise (real run 22): [1.34, 1.50], nothing to say
    fc = _json(capsys, str(datasets.real_run("22").path), "--fit-fraction", "0.4", "--n-boot", "0")["forecast"]
    assert fc["reliable"] is True and fc["caveat"] is None and fc["at_bound"] == []


def test_a_metric_that_is_not_a_reward_gets_no_end_forecast(capsys):
    """The band is calibrated on training rewards: a KL (real run 28) gets its law fit, not an end forecast."""
    d = _json(capsys, str(datasets.real_run("28").path), "--metric", "kl", "--fit-fraction", "0.4", "--n-boot", "0")
    end = d["end_of_run_forecast"]
    assert end["declined"] == ("no end forecast for `kl`: its band is calibrated on training rewards only; the law "
                               "fit still describes the curve") and end["final"] is None
    assert d["forecast"]["plateau"] is not None and d["models"]


def test_a_band_wider_than_the_window_ever_went_says_it_says_little(capsys):
    """Real run 04 from 40%: the band [0.041, 2.78] is 2.09x the whole range of the 80 rewards the window
    logged, and the actual "inside the band" means little; the text says so. Real run 32 (rewards -12.5 to
    10.5): its band [-3.3, 3.3] is narrower than that range: no note. The ratio is the printed band's width
    over the window's max - min, read off the raw log."""
    import dataclasses

    from grpo_core.runs.forecast import forecast_end
    from grpo_core.runs.logs import read_log

    for rid, wide in (("04", True), ("32", False)):
        path = str(datasets.real_run(rid).path)
        end = _json(capsys, path, "--fit-fraction", "0.4")["end_of_run_forecast"]
        _, y = read_log(path).series("reward")
        assert end["window_range"] == pytest.approx(np.ptp(y[:end["n_fit"]]))
        ratio = (end["final_high"] - end["final_low"]) / end["window_range"]
        fc = forecast_end(read_log(path), fit_fraction=0.4)
        assert (ratio > 1) is wide and bool(fc.wide_band_note) is wide
        assert main(["fit", path, "--fit-fraction", "0.4"]) == 0
        out = capsys.readouterr().out
        assert (f"the band is {ratio:.2f}x as wide as the whole range of the values seen: it says little about "
                "where the run ends" in out) is wide
    def note(low, high, window_range):  # the band as shown against the window's range
        return dataclasses.replace(fc, shown_low=low, shown_high=high, window_range=window_range).wide_band_note

    assert note(0.0, 2.0, float("nan")) == ""
    assert note(0.0, 3.0, 1.0).startswith("the band is 3.00x")
    assert note(0.0, 2.0, 2.5) == ""
    assert note(0.0, 2.0, 1.0).startswith("the band is 2.00x")
    # as wide as the window's range, to rounding (a band clipped to a declared range the window spanned)
    assert note(-7.5, 13.0, 20.5).startswith("the band is 1.00x")
    assert note(-7.5, 12.9, 20.5) == ""


@pytest.mark.parametrize("flags,named", [
    (["--n-boot", "1"], "`--n-boot` must be 0 (no bootstrap) or at least 2"),
    (["--fit-fraction", "1"], "`--fit-fraction` must be a finite number in (0, 1)"),
    (["--fit-fraction", "0"], "`--fit-fraction` must be a finite number in (0, 1)"),
    (["--smooth", "0"], "`--smooth` must be an integer >= 1"),
    (["--max-points", "3"], "`--max-points` must be 0 (every point) or at least 8"),
])
def test_bad_flags_are_refused_by_their_flag_name(capsys, flags, named):
    assert main(["fit", str(datasets.real_run("04").path), *flags]) == 2
    assert named in capsys.readouterr().err


def test_too_few_points_are_refused(capsys, tmp_path):
    # 5 points: three- and four-parameter laws would fit them (exit 0, a plateau, a damping ratio)
    five = tmp_path / "five.csv"
    five.write_text("step,reward\n" + "".join(f"{i},{0.1 * i}\n" for i in range(1, 6)))
    assert "fit needs at least 8 points of reward" in _fails(capsys, str(five))


# (points, best law by AIC, its plateau, the R^2 of every law) per format, measured on these logs
# (tolerances: optimizer round-off). The notebook log's plateau 7.1875 is the laws' bound (ten reward
# ranges above the data): its 12 points do not determine one.
FITS = {
    "trl_0.14_trainer_state.json": (20, "exponential", 5.057542,
                                    {"three_phase": 0.840551, "exponential": 0.824521, "logistic": 0.838508}),
    "trl_0.29_trainer_state.json": (20, "logistic", 0.773732,
                                    {"three_phase": 0.657468, "exponential": 0.613127, "logistic": 0.701492}),
    "verl_metrics.jsonl": (15, "three_phase", 0.419286,
                           {"three_phase": 0.570820, "exponential": 0.146866, "logistic": 0.252153}),
    "notebook_progress.csv": (12, "logistic", 7.1875,
                              {"three_phase": 0.624812, "exponential": 0.554494, "logistic": 0.746508}),
    "06-collapse-after-high-lr": (100, "logistic", 0.023743,
                                  {"three_phase": 0.932069, "exponential": 0.851399, "logistic": 0.993009}),
}


@pytest.mark.parametrize(
    "log",
    [
        LOGS / "trl_0.14_trainer_state.json",
        LOGS / "trl_0.29_trainer_state.json",
        LOGS / "verl_metrics.jsonl",
        LOGS / "notebook_progress.csv",
        CASES / "06-collapse-after-high-lr" / "trainer_state.json",
    ],
    ids=lambda p: p.name if p.parent.name == "logs" else p.parent.name,
)
def test_every_log_format_fits(capsys, log):
    n, best, plateau, r2 = FITS[log.name if log.parent.name == "logs" else log.parent.name]
    d = _json(capsys, str(log))
    assert d["n"] == n and d["best"] == best and d["metric"] == "reward"
    assert d["models"][best]["plateau"] == pytest.approx(plateau, rel=1e-3)
    assert {k: v["r2"] for k, v in d["models"].items()} == pytest.approx(r2, abs=1e-4)


def test_steps_without_a_reward_are_left_out_quietly(capsys):
    # the reward is logged on the 10 generation steps of 20: the other 10 are not NaN values, no warning
    assert main(["fit", str(LOGS / "trl_0.19_trainer_state.json"), "--json"]) == 0
    captured = capsys.readouterr()
    d, err = json.loads(captured.out), captured.err
    assert d["n"] == 10 and err == ""


def test_original_column_names_and_other_metrics(capsys):
    d = _json(
        capsys, QWEN, "--metric", "Training Loss", "--criterion", "bic", "--laws", "exponential,logistic"
    )
    assert d["criterion"] == "bic" and set(d["models"]) == {"exponential", "logistic"}


def test_png_and_self_contained_html(tmp_path, capsys):
    upper = tmp_path / "FIT.PNG"  # the suffix in any case (altair refused 'PNG' with a traceback)
    assert main(["fit", QWEN, "--plot", str(upper), "--n-boot", "0"]) == 0
    assert upper.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png = tmp_path / "fit.png"
    assert main(["fit", QWEN, "--plot", str(png), "--fit-fraction", "0.5", "--n-boot", "0"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    capsys.readouterr()
    html = tmp_path / "sub" / "fit.html"
    assert main(["fit", QWEN, "--plot", str(html), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plot"] == str(html)
    text = html.read_text()
    assert "vegaEmbed" in text or "vega-embed" in text
    assert not re.search(r"<script[^>]+src=", text)  # everything inline, nothing fetched
    assert "cdn.jsdelivr" not in text and "https://cdn" not in text


def test_refused_input(tmp_path, capsys):
    assert "no column 'nope'" in _fails(capsys, QWEN, "--metric", "nope")
    assert "available: loss, reward" in _fails(capsys, QWEN, "--metric", "nope")
    assert "no such file" in _fails(capsys, str(tmp_path / "missing.csv"))
    short = tmp_path / "short.csv"
    short.write_text("step,reward\n1,0.1\n2,0.2\n3,0.4\n4,0.5\n")
    assert "at least 8 points" in _fails(capsys, str(short))
    flat = tmp_path / "flat.csv"
    flat.write_text("step,reward\n" + "".join(f"{i},0.5\n" for i in range(1, 30)))
    assert "constant" in _fails(capsys, str(flat))
    assert "`--plot` must end in .png or .html" in _fails(capsys, QWEN, "--plot", "x.pdf")
    assert "cannot read or write a file: File exists" in _fails(capsys, QWEN, "--plot", str(flat / "x.html"))
    assert "`--fit-fraction`" in _fails(capsys, QWEN, "--fit-fraction", "1.5")
    assert "`--fit-fraction`" in _fails(capsys, QWEN, "--fit-fraction", "nan")
    assert "`law`" in _fails(capsys, QWEN, "--laws", "three_phase,power")
    assert "`--smooth`" in _fails(capsys, QWEN, "--smooth", "0")
    assert "`--level`" in _fails(capsys, QWEN, "--fit-fraction", "0.5", "--level", "2")
    # the forecast's options are checked even without --fit-fraction (they were silently ignored)
    assert "`--level`" in _fails(capsys, QWEN, "--level", "1")
    assert "`--n-boot`" in _fails(capsys, QWEN, "--n-boot", "-1")
    assert "`--seed`" in _fails(capsys, QWEN, "--seed", "-1")
    # a negative seed reached numpy's generator: a traceback
    assert "`--seed`" in _fails(capsys, QWEN, "--fit-fraction", "0.5", "--seed", "-1")
    # a TRL version that is not a version number was silently ignored
    assert "`trl_version` must be a version number" in _fails(capsys, QWEN, "--trl-version", "abc")


def test_console_script_runs(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "grpo_dynamics.cli", "fit", QWEN, "--json", "--laws", "exponential"],
        capture_output=True, text=True, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["best"] == "exponential"
    bad = subprocess.run([sys.executable, "-m", "grpo_dynamics.cli", "fit", str(tmp_path / "x.csv")],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1


def test_fit_reads_a_generic_csv_with_a_column_mapping(tmp_path):
    import numpy as np

    from grpo_dynamics.cli import main

    t = np.arange(1, 121)
    y = 0.8 - 0.6 * np.exp(-t / 25.0) + np.random.default_rng(3).normal(0, 0.01, t.size)
    path = tmp_path / "run.csv"
    path.write_text("iter,acc\n" + "".join(f"{a},{b}\n" for a, b in zip(t, y, strict=True)))
    import contextlib
    import io
    import json

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["fit", str(path), "--map", "step=iter", "--map", "reward=acc", "--json"])
    assert rc == 0
    res = json.loads(out.getvalue())
    # The exponential generated the data: its plateau is recovered within a few standard errors.
    assert abs(res["models"]["exponential"]["plateau"] - 0.8) < 0.01


def test_fit_prints_the_time_scale_line(capsys):
    from grpo_core.runs import datasets

    path = str(datasets.real_run("22").path)
    assert main(["fit", path]) == 0
    out = capsys.readouterr().out
    assert ("reward time scale: eta*K = 0.0101 per step [0.009066, 0.01126], K = 1014 per unit learning rate "
            "(Adam: preconditioned K/sqrt(v)) [910.2, 1131] (90% delta; eta = 9.96e-06, "
            "cumulative-learning-rate clock)") in out
    d = _json(capsys, path)
    assert d["implied_curvature"]["ok"] and d["implied_curvature"]["conventions"]["k_ref"] == 1
    d = _json(capsys, str(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth.csv")))
    assert "no learning rate" in d["implied_curvature"]["reason"]


def test_oscillator_intervals_and_the_warm_up_note(capsys, tmp_path):
    # an overdamped three-phase curve (k 0.03, tau 20) under a 20-step linear learning-rate warm-up
    law = laws.models.get_law("three_phase")
    t = np.arange(1, 301, dtype=float)
    y = law(t, np.array([0.2, 0.8, 0.03, 20.0])) + np.random.default_rng(3).normal(0, 0.03, t.size)
    lr = np.minimum(t / 21, 1.0) * 1e-6
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps({"step": int(s), "reward": float(v), "learning_rate": float(r)}) + "\n"
                            for s, v, r in zip(t, y, lr)))
    assert main(["fit", str(path), "--laws", "three_phase"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "oscillator: damping ratio" in x)
    zeta, lo, hi = map(float, re.search(r"damping ratio ([\d.]+) \[([\d.]+), ([\d.]+)\]", line).groups())
    assert lo < 1 / (2 * np.sqrt(0.03 * 20)) < hi and lo < zeta < hi and "(90% intervals)" in line
    assert "as long as the learning-rate warm-up (20 steps)" in out
    d = _json(capsys, str(path), "--laws", "three_phase")
    assert d["learning_rate_warmup_steps"] == 20
    lo_j, hi_j = d["models"]["three_phase"]["oscillator_interval"]["damping_ratio"]
    assert lo_j == pytest.approx(lo, rel=1e-2) and hi_j == pytest.approx(hi, rel=1e-2)
    # a constant rate: no warm-up, no note
    path.write_text("".join(json.dumps({"step": int(s), "reward": float(v), "learning_rate": 1e-6}) + "\n"
                            for s, v in zip(t, y)))
    assert main(["fit", str(path), "--laws", "three_phase"]) == 0
    assert "warm-up" not in capsys.readouterr().out


def test_a_slow_start_the_curve_cannot_time_is_not_put_down_to_the_warm_up(capsys):
    # real run 08: M/C 7.0 steps beside a 14-step warm-up, but its 90% interval spans 1e-13 to 3e14 steps, so
    # "about as long as the warm-up" was a coincidence of the point estimate
    assert main(["fit", str(datasets.real_run("08").path)]) == 0
    out = capsys.readouterr().out
    lo, hi = map(float, re.search(r"M/C is undetermined \(\[([^,]+), ([^\]]+)\] steps", out).groups())
    assert lo < 7.0 / 3 and hi > 3 * 14 and hi / lo > 1e6 and "14-step warm-up" in out
    assert "is about as long as the learning-rate warm-up" not in out


def test_a_plateau_at_its_bound_outside_zero_one_says_both(capsys):
    """Real run 03 (a 0/1 reward near its ceiling): the exponential's r_inf sits at its bound, 3.75, outside
    [0, 1]; its note said only 'at its bound' while the three-phase law's same 3.75 was called unreachable."""
    assert main(["fit", str(datasets.real_run("03").path)]) == 0
    out = capsys.readouterr().out
    exp_notes = out.split("  exponential:")[1].split("  logistic:")[0]
    assert "r_inf is at its bound" in exp_notes and "3.75 also lies outside [0, 1]" in exp_notes


def test_a_window_stuck_at_zero_declines_the_forecast_not_the_command(capsys, tmp_path):
    """Reward 0 for 50 steps, then a ramp: the law table and a declined forecast line, not an error about
    `y` (the law fit's own forecast, JSON only, refused the constant window and took the command down)."""
    log = tmp_path / "flatstart.csv"
    log.write_text("step,reward\n" + "".join(f"{i},0\n" for i in range(1, 51))
                   + "".join(f"{i},{(i - 50) / 75:.3f}\n" for i in range(51, 126)))
    assert main(["fit", str(log), "--fit-fraction", "0.4", "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "best by AIC" in out and ("forecast from the first 40% of the points (50, to step 50): end of run (mean "
                                     "of the last 20% of steps, 100-125): no forecast: the seen part's rolling mean "
                                     "does not change") in out
    d = _json(capsys, str(log), "--fit-fraction", "0.4", "--n-boot", "0")
    assert d["forecast"] is None and "declined: `y` is constant" in d["forecast_note"]
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("step,reward\n" + "".join(f"{i},{i / 40}\n" for i in range(1, 41)))
    assert main(["fit", str(tiny), "--fit-fraction", "0.01", "--n-boot", "0"]) == 0
    assert ("(none): end of run (mean of the last 20% of steps, 32-40): no forecast: too early: 1% of the run is seen, "
            "and the band is calibrated from 20% of a run on") in capsys.readouterr().out
    assert main(["fit", str(tiny), "--smooth", "1000"]) == 2
    assert "`--smooth` must be an integer in [1, 40]" in capsys.readouterr().err


def test_oscillator_lines_say_when_the_fit_cannot_carry_them(capsys):
    """A damping-ratio interval across 1 leaves the regime undetermined, and a law no better than a constant
    has no oscillator (runs 80 and 61 of the second held-out set printed 'underdamped' with an interval
    [0.00228, 419], and an oscillator for a flat run whose own last line said 'no time scale')."""
    def fit_of(key):
        run = datasets.real_run(key, "holdout_runs_2")
        assert main(["fit", str(run.path), "--fit-fraction", "0.4", "--n-boot", "0"]) == 0
        return [ln for ln in capsys.readouterr().out.splitlines() if "oscillator:" in ln]

    spans = fit_of("80")
    assert spans and all("(underdamped)" not in ln and "(overdamped)" not in ln for ln in spans)
    assert any("the interval spans 1, so the regime is undetermined" in ln for ln in spans)
    flat = fit_of("61")
    none = "oscillator: none (the law explains no more than the noise"
    assert flat and all(ln.strip().startswith(none) for ln in flat)


def test_a_setting_in_words_is_defaulted_and_said(tmp_path):
    """meta.json written by people: "TRL default (not set)" for beta is not a number, so TRL's default is used
    and the conventions say so (fit refused the whole run before: held-out run 73)."""
    from grpo_core.runs.settings import read_settings

    path = tmp_path / "meta.json"
    path.write_text(json.dumps({"hyperparameters": {"beta": "TRL default (not set)", "learning_rate": 2e-6}}))
    s = read_settings(path)
    assert s.beta == 0.0 and "beta" in s.defaulted and s.learning_rate == 2e-6
    assert s.unreadable == ("`beta` = 'TRL default (not set)'",)
    assert "gives `beta` = 'TRL default (not set)', not a number: TRL's default is used." in s.conventions().text()
    path.write_text(json.dumps({"hyperparameters": {"beta": "abc 0.1"}}))  # digits, not a number: still an error
    with pytest.raises(DataError, match="not a number"):
        read_settings(path)


def test_the_star_is_on_the_best_law_whose_plateau_the_curve_determines(capsys):
    """Real run 03 (40 points): the exponential, best by AIC and AICc, has r_inf at its bound (3.75); the star
    was on it ("best by AIC"). Now it is on the logistic (plateau 0.957 +- 0.046), and one line says why."""
    path = str(datasets.real_run("03").path)
    assert main(["fit", path]) == 0
    out = capsys.readouterr().out
    starred = [ln.split()[0] for ln in out.splitlines() if ln.startswith("*")]
    assert starred == ["*logistic"]
    assert ("best by AICc: exponential, but its r_inf is at its bound; * logistic: the best by AICc of the laws "
            "whose plateau the curve determines  (! see notes)") in out
    d = _json(capsys, path)
    assert d["best"] == "exponential" and d["preferred"] == "logistic" and d["preferred_determined"] is True
    # a log whose best law has a determined plateau: the star and the best line as before
    assert main(["fit", QWEN]) == 0
    out = capsys.readouterr().out
    assert [ln.split()[0] for ln in out.splitlines() if ln.startswith("*")] == ["*logistic"]
    assert "best by AIC: logistic  (* best, ! see notes)" in out


def test_a_short_log_is_ranked_by_aicc_and_says_so(capsys):
    """n/K < 40 (Burnham & Anderson): run 03's 40 points for up to 5 parameters were ranked by AIC. Held-out
    run 50 (60 points): AIC and AICc disagree, and the line says which AIC would have picked."""
    path = str(datasets.real_run("03").path)
    assert main(["fit", path]) == 0
    out = capsys.readouterr().out
    assert ("ranked by AICc, not AIC: 40 points for up to 5 parameters (n/K = 8 < 40, Burnham & Anderson "
            "2002)") in out
    header = next(ln for ln in out.splitlines() if ln.startswith("law "))
    assert header.split() == ["law", "R^2", "AIC", "AICc", "BIC", "dAICc", "plateau", "+-se", "t90", "steps"]
    row = next(ln for ln in out.splitlines() if ln.startswith(" exponential"))
    assert row.split()[3] == "-97.28" and row.split()[5] == "0.00"  # its AICc, and 0: the lowest
    d = _json(capsys, path)
    assert d["criterion"] == "aicc" and d["criterion_requested"] == "auto" and d["points_per_parameter"] == 8
    # asked for AIC: ranked by it, with the caution
    assert main(["fit", path, "--criterion", "aic"]) == 0
    out = capsys.readouterr().out
    assert "ranked by AIC as asked, though 40 points for up to 5 parameters (n/K = 8 < 40" in out
    assert "best by AIC: exponential, but its r_inf is at its bound" in out
    run50 = str(datasets.real_run("50", "holdout_runs").path)
    assert main(["fit", run50]) == 0
    out = capsys.readouterr().out
    assert "(AICc: Hurvich & Tsai 1989); by AIC the best would be three_phase" in out
    assert "best by AICc: exponential  (* best, ! see notes)" in out
    # 250 points (n/K = 50): AIC, and no ranking line
    assert main(["fit", QWEN]) == 0
    assert "ranked by" not in capsys.readouterr().out


def test_noise_reference_and_t90_are_explained(capsys):
    assert main(["fit", str(datasets.real_run("18").path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("50 points; noise reference R^2 ~ 0.834 (the R^2 of a fit that left only the "
                          "step-to-step noise; not a ceiling)")


def test_a_split_the_log_lacks_names_the_splits_it_has(capsys, tmp_path):
    """Real run 03 has no eval rows: the error said "no column 'reward' in the eval table ...; available: none"."""
    path = str(datasets.real_run("03").path)
    err = _fails(capsys, path, "--split", "eval")
    assert err.endswith(f"{path} has no eval rows (`--split eval`); splits available: train (drop `--split eval` "
                        "to fit the training rows)")
    # a log with eval rows but not the metric: the library's list of the eval table's columns
    log = tmp_path / "evals.jsonl"
    log.write_text("".join(json.dumps({"step": i, "reward": i / 20}) + "\n" for i in range(1, 21))
                   + json.dumps({"step": 20, "eval_loss": 0.5}) + "\n")
    assert "no column 'reward' in the eval table" in _fails(capsys, str(log), "--split", "eval")


def test_plot_prints_the_path_it_wrote(capsys, tmp_path):
    html = tmp_path / "fit.html"
    assert main(["fit", QWEN, "--plot", str(html)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"plot written to {html}"
    assert html.stat().st_size > 10_000
