"""The end-of-run forecast chart shows the band the commands print (book chapters "Fitting real reward
curves" and "Use it on your run": the same forecast from the first 40% of the Qwen run, one band)."""

from __future__ import annotations

import json
import warnings

import pytest

from grpo_core.runs import datasets, logs
from grpo_core.runs.diagnostics import diagnose
from grpo_dynamics.cli import main
from widgets.laws_charts import static_forecast_grid

QWEN = datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth")


@pytest.fixture(scope="module")
def qwen():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return logs.read_log(QWEN)


def test_chart_band_is_the_fit_commands_band(qwen, capsys):
    # `grpo-dynamics fit LOG --metric reward --fit-fraction 0.4` with its defaults, as "Use it on your run" runs it
    assert main(["fit", str(QWEN), "--metric", "reward", "--eta", "5e-6", "--fit-fraction", "0.4", "--json"]) == 0
    end = json.loads(capsys.readouterr().out)["end_of_run_forecast"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        label = static_forecast_grid(qwen, fractions=(0.4,))["labels"].iloc[0]
    assert label["final"] == pytest.approx(end["final"], rel=1e-12)
    assert label["low"] == pytest.approx(end["final_low"], rel=1e-12)
    assert label["high"] == pytest.approx(end["final_high"], rel=1e-12)
    # the level of steps 91-100 and the band q(0.4) = 1.700886 window spreads either side
    assert label["final"] == pytest.approx(float(qwen.series("reward")[1][90:100].mean()), rel=1e-12)
    assert (round(label["final"], 4), round(label["low"], 3), round(label["high"], 3)) == (0.5303, -0.641, 1.702)
    assert (label["high"] - label["final"]) / 1.700886 == pytest.approx(end["scale"], rel=1e-12)


def test_chart_whole_log_band_is_diagnoses_band(qwen):
    # the whole-log position (fraction 1) is diagnose's end-of-run forecast
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        label = static_forecast_grid(qwen, fractions=(1.0,))["labels"].iloc[0]
        fc = diagnose(qwen, num_prompts=1).forecast
    assert label["final"] == pytest.approx(fc["final"], rel=1e-12)
    assert (label["low"], label["high"]) == pytest.approx((fc["final_low"], fc["final_high"]), rel=1e-12)
