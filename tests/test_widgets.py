"""The explorers without a browser: set controls from Python, read back what they show.

Each explorer keeps the numbers it prints in ``.values`` and the Vega-Lite spec of each chart in
``.specs``; the tests compare those with what :mod:`grpo_core` computes for the same inputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest

from grpo_core import oscillator, stability
from grpo_core.errors import ParameterError
from widgets._controls import NumberControl, StatusLine, short_message


@pytest.fixture(autouse=True)
def _quiet():
    """Outside a kernel an Output widget prints what it displays: keep the test log short."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


# --- controls -----------------------------------------------------------------------------


def test_typed_value_out_of_range_is_clamped_with_message():
    c = NumberControl("mu", "mu", 0.5, 0.0, 0.99, 0.01)
    c.text.value = "1.5"
    assert c.value == 0.99
    assert "`mu` must be in [0, 0.99]" in c.message.value and "clamped to 0.99" in c.message.value
    c.text.value = "-3"
    assert c.value == 0.0 and "clamped to 0" in c.message.value
    c.slider.value = 0.3  # a slider move clears the message and updates the box
    assert c.message.value == "" and c.text.value == "0.3"


def test_typed_non_number_is_refused_and_value_kept():
    c = NumberControl("eta", "eta", 0.1, 1e-3, 2.0, log=True)
    for bad in ("abc", "nan", "inf", ""):
        c.text.value = bad
        assert c.value == pytest.approx(0.1)
        assert "is not a finite number" in c.message.value
        assert c.text.value == "0.1"


def test_integer_control_rounds_with_message():
    c = NumberControl("k_ref", "K_ref", 4, 1, 64, integer=True)
    c.text.value = "6.6"
    assert c.value == 7 and isinstance(c.value, int)
    assert "rounded to 7" in c.message.value
    c.text.value = "1000"
    assert c.value == 64 and "clamped to 64" in c.message.value


def test_control_rejects_bad_construction():
    with pytest.raises(ValueError, match="outside"):
        NumberControl("mu", "mu", 2.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="low > 0"):
        NumberControl("eta", "eta", 0.5, 0.0, 1.0, log=True)


def test_short_message_is_one_line_without_traceback():
    assert short_message(ParameterError("mu", "`mu` must be in [0, 1); got 1.0")) == "`mu` must be in [0, 1); got 1.0"
    msg = short_message(RuntimeError("line one\nline two " + "x" * 1000))
    assert msg.startswith("RuntimeError: line one line two") and len(msg) <= 300 and "\n" not in msg
    s = StatusLine()
    s.error(ZeroDivisionError("division by zero"))
    assert s.kind == "error" and "ZeroDivisionError: division by zero" in s.value


# --- log explorer ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def log_ex():
    from widgets.log_explorer import log_explorer

    with contextlib.redirect_stdout(io.StringIO()):
        return log_explorer("qwen2.5-3b-instruct_gsm8k_unsloth")


def test_log_explorer_shows_the_library_fit(log_ex):
    import warnings

    from grpo_core import datasets, laws, logs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = logs.read_log(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
        t, y = log.series("reward")
        comparison = laws.fit_all(t, y)
    assert log_ex.values["steps"] == len(t) == 250
    assert log_ex.values["best_law"] == comparison.best
    assert log_ex.values["plateau"] == pytest.approx(comparison.best_fit.plateau, rel=1e-6)
    assert set(log_ex.specs) >= {"fits", "forecast"}
    assert log_ex.values["forecast_low"] <= log_ex.values["forecast_plateau"] <= log_ex.values["forecast_high"]


def test_log_explorer_lists_the_diagnosis(log_ex):
    import warnings

    from grpo_core import datasets, diagnostics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = diagnostics.diagnose(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"), forecast=False)
    assert log_ex.values["findings"] == [f.mode for f in report.findings]
    for f in report.findings:
        assert f.mode.replace("_", " ") in log_ex.findings_html.value
    for mode in report.skipped:
        assert f"{mode.replace('_', ' ')}: not checked" in log_ex.findings_html.value


def test_log_explorer_refuses_a_file_that_is_not_a_log(log_ex):
    before = log_ex.values["best_law"], log_ex.source.value
    assert log_ex.load_bytes("notes.txt", b"just some text, not a log\n") is False
    assert log_ex.status.kind == "error"
    assert log_ex.status.text.startswith("notes.txt is not a training log this explorer can read")
    assert "/tmp" not in log_ex.status.text  # the user's file name, not our temporary path
    assert (log_ex.values["best_law"], log_ex.source.value) == before
    assert log_ex.load_bytes("image.png", bytes(range(256))) is False
    assert "not a training log" in log_ex.status.text


def test_log_explorer_reads_an_upload(log_ex):
    from conftest import DATA

    content = (DATA / "logs" / "trl_0.19_trainer_state.json").read_bytes()
    # The FileUpload widget's value, as ipywidgets 8 delivers it.
    log_ex._on_upload({"new": ({"name": "trainer_state.json", "content": memoryview(content)},)})
    assert log_ex.source.value == "uploaded: trainer_state.json"
    assert log_ex.run_log.format == "trl"
    assert log_ex.values["steps"] == len(log_ex.run_log.series(log_ex.metric.value)[0])


def test_log_explorer_short_log_says_why_the_forecast_is_missing():
    from widgets.log_explorer import log_explorer

    ex = log_explorer("gemma3-1b-it_gsm8k_unsloth")
    assert ex.values["steps"] == 12
    assert "forecast: the fit window" in ex.status.text and "at least 5" in ex.status.text
    assert "forecast_plateau" not in ex.values
    ex.fraction.text.value = "1.0"  # the whole curve: 12 points are enough
    assert "forecast_plateau" in ex.values and "forecast:" not in ex.status.text


# --- oscillator explorer --------------------------------------------------------------------


def test_oscillator_view_matches_grpo_core():
    from widgets.oscillator_explorer import compute_oscillator_view

    for lag in ("constant", "refresh"):
        v = compute_oscillator_view(0.05, 0.5, 4, 1.0, 0.2, 8, lag=lag, steps=50)
        c = oscillator.coefficients(0.05, 0.5, 4, 1.0, 0.2, lag=lag)
        assert v["regime"] == c.regime and v["damping_ratio"] == pytest.approx(c.damping_ratio)
        assert v["critical_a_exact"] == pytest.approx(float(stability.critical_a_exact(0.5, 4, lag)))
        assert v["critical_a_continuous"] == pytest.approx(float(stability.critical_a_continuous(0.5, 4, lag)))
        assert v["runs"].shape == (64, 51) and v["discrete"].shape == (51,)
    # heavy ball, constant lag: continuous critical K_ref = (1 - mu) / (eta K)
    v = compute_oscillator_view(0.05, 0.5, 4, 1.0)
    assert v["critical_k_ref_continuous"] == pytest.approx(0.5 / 0.05)


def test_json_specs_are_serialisable(log_ex):
    for spec in log_ex.specs.values():
        assert json.loads(json.dumps(spec))["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    assert not math.isnan(log_ex.values["plateau"])
