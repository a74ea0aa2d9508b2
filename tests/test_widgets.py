"""The explorers without a browser: set controls from Python, read back what they show.

Each explorer keeps the numbers it prints in ``.values`` and the Vega-Lite spec of each chart in
``.specs``; the tests compare those with what :mod:`grpo_core` computes for the same inputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest

from grpo_core.errors import ParameterError
from grpo_core.model import noise, oscillator, stability, trajectories
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



def test_group_size_sliders_are_log2():
    """G from 2 to 8192: one slider notch per doubling (position j is G = 2**j), the box shows G."""
    from widgets.group_size_explorer import group_size_explorer

    c = NumberControl("group_size", "G", 16, 2, 8192, integer=True, log=True)
    assert (c.slider.base, c.slider.min, c.slider.max, c.slider.step) == (2, 1, 13, 1)
    assert c.value == 16 and c.text.value == "16"
    seen = []
    c.observe_value(lambda change: seen.append(c.value))
    for j in (1, 7, 13):
        c.slider.value = 2.0**j  # the reader moves the handle to notch j
        assert c.value == 2**j and isinstance(c.value, int) and c.text.value == str(2**j)
    assert seen == [2, 128, 8192]
    c.text.value = "1000"  # any integer in range can still be typed
    assert c.value == 1000 and c.message.value == ""
    c.text.value = "9000"
    assert c.value == 8192 and "clamped to 8192" in c.message.value
    ex = group_size_explorer(budget=1024, spread=0.15, group_size=16)
    for name, (lo, hi) in (("group_size", (1, 13)), ("budget", (3, 13))):
        slider = ex.controls[name].slider
        assert (slider.base, slider.min, slider.max) == (2, lo, hi)
    ex.controls["group_size"].slider.value = 2.0**5
    assert ex.values["group_size"] == 32

def test_control_rejects_bad_construction():
    with pytest.raises(ParameterError, match="`mu` must be a finite number in \\[0, 1\\]; got 2.0"):
        NumberControl("mu", "mu", 2.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="low > 0"):
        NumberControl("eta", "eta", 0.5, 0.0, 1.0, log=True)


def test_short_message_is_one_line_without_traceback():
    assert (
        short_message(ParameterError("mu", "`mu` must be in [0, 1); got 1.0"))
        == "`mu` must be in [0, 1); got 1.0"
    )
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

    from grpo_core import laws
    from grpo_core.runs import datasets, logs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = logs.read_log(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
        t, y = log.series("reward")
        comparison = laws.fit_all(t, y)
    assert log_ex.values["steps"] == len(t) == 250
    assert log_ex.values["best_law"] == comparison.preferred
    assert log_ex.values["plateau"] == pytest.approx(comparison.results[comparison.preferred].plateau, rel=1e-6)
    assert set(log_ex.specs) >= {"fits", "forecast"}
    assert (
        log_ex.values["forecast_low"] <= log_ex.values["forecast_final"] <= log_ex.values["forecast_high"]
    )
    # the forecast is forecast_end's, the one fit and diagnose print
    from grpo_core.runs.forecast import forecast_end

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fc = forecast_end(log, fit_fraction=0.4)
    assert log_ex.values["forecast_final"] == pytest.approx(fc.point, rel=1e-12)
    assert (log_ex.values["forecast_low"], log_ex.values["forecast_high"]) == pytest.approx(
        (fc.low, fc.high), rel=1e-12)
    assert log_ex.values["actual_final"] == pytest.approx(np.mean(y[200:]), rel=1e-12)


def test_log_explorer_lists_the_diagnosis(log_ex):
    import warnings

    from grpo_core.runs import datasets, diagnostics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = diagnostics.diagnose(
            datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"), forecast=False
        )
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
    # this log's accuracy reward is logged every other step: the series is the 10 logged steps
    # (the others are not NaN values: no warning)
    steps, _ = log_ex.run_log.series(log_ex.metric.value)
    assert log_ex.values["steps"] == len(steps) == 10 and log_ex.run_log.logged_nan == {}


def test_log_explorer_short_log_says_why_the_forecast_is_missing():
    from widgets.log_explorer import log_explorer

    ex = log_explorer("gemma3-1b-it_gsm8k_unsloth")
    assert ex.values["steps"] == 12
    assert "40%: too few points seen: 4, and the calibrated band needs at least 8" in ex.status.text
    assert "forecast_final" not in ex.values
    ex.fraction.text.value = "1.0"  # the whole curve: 12 points are enough
    assert "forecast_final" in ex.values and "forecast:" not in ex.status.text
    assert np.isnan(ex.values["actual_final"])  # the end of a run it has not seen


# --- oscillator explorer --------------------------------------------------------------------


def test_oscillator_view_pins_hand_computed_numbers():
    import numpy as np

    from widgets.oscillator_explorer import compute_oscillator_view

    # eta = 0.05, K = curvature + beta = 1.2, so a = eta K = 0.06; mu = 0.5, K_ref = 4.
    # constant lag, d = 4: M = (1.5 + 16 a)/2 = 1.23, C = 0.5 - 4 a = 0.26, zeta = C / (2 sqrt(M a));
    # refresh lag, mean d = 1.5, mean d^2 = 3.5: M = 0.855, C = 0.41.
    hand = {
        "constant": dict(zeta=0.26 / (2 * math.sqrt(1.23 * 0.06)), a_cont=0.5 / 4, k_cont=0.5 / 0.06),
        "refresh": dict(
            zeta=0.41 / (2 * math.sqrt(0.855 * 0.06)), a_cont=0.5 / 1.5, k_cont=1 + 2 * 0.5 / 0.06
        ),
    }
    assert hand["constant"]["zeta"] == pytest.approx(0.478537, abs=1e-6)
    assert hand["refresh"]["zeta"] == pytest.approx(0.905097, abs=1e-6)
    for lag, h in hand.items():
        v = compute_oscillator_view(0.05, 0.5, 4, 1.0, 0.2, 8, lag=lag, steps=50)
        assert v["a"] == pytest.approx(0.06) and v["regime"] == "underdamped" == v["verdict"]
        assert v["damping_ratio"] == pytest.approx(h["zeta"], rel=1e-12)
        assert v["critical_a_continuous"] == pytest.approx(h["a_cont"], rel=1e-12)
        assert v["critical_k_ref_continuous"] == pytest.approx(h["k_cont"], rel=1e-12)
        assert len(v["bands"]) == 51 and v["discrete"].shape == (51,)
    # Exact threshold, constant lag: e_{k+1} = 1.5 e_k - 0.5 e_{k-1} - a e_{k-4} has a root on the
    # unit circle at a = a*, inside it just below.
    v = compute_oscillator_view(0.05, 0.5, 4, 1.0, 0.2, 8, steps=50)
    a_star = v["critical_a_exact"]
    assert a_star == pytest.approx(0.1558513, abs=1e-7)
    assert max(abs(np.roots([1, -1.5, 0.5, 0, 0, a_star]))) == pytest.approx(1.0, abs=1e-9)
    assert max(abs(np.roots([1, -1.5, 0.5, 0, 0, 0.99 * a_star]))) < 1
    assert v["critical_k_ref_exact"] == 12
    # Refresh lag: reference value of the periodic recurrence's threshold (17/38 to 1e-12).
    v = compute_oscillator_view(0.05, 0.5, 4, 1.0, 0.2, 8, lag="refresh", steps=50)
    assert v["critical_a_exact"] == pytest.approx(17 / 38, abs=1e-12) and v["critical_k_ref_exact"] == 19
    # heavy ball, constant lag, beta = 0: continuous critical K_ref = (1 - mu) / (eta K) = 10
    v = compute_oscillator_view(0.05, 0.5, 4, 1.0)
    assert v["critical_k_ref_continuous"] == pytest.approx(10.0)


def test_json_specs_are_serialisable(log_ex):
    for spec in log_ex.specs.values():
        assert json.loads(json.dumps(spec))["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    assert not math.isnan(log_ex.values["plateau"])


def _marks(spec):
    """Every (mark type, dataset records) pair of a layered spec, in order."""
    out = []

    def walk(node):
        for layer in node.get("layer", []):
            walk(layer)
        if "mark" in node:
            mark = node["mark"]["type"] if isinstance(node["mark"], dict) else node["mark"]
            data = node.get("data", {}).get("name")
            out.append((mark, spec["datasets"].get(data) if data else None))

    walk(spec)
    return out


def test_oscillator_explorer_follows_its_controls():
    from widgets.oscillator_explorer import oscillator_explorer

    ex = oscillator_explorer(eta=0.05, mu=0.5, k_ref=4, curvature=1.0, group_size=8, steps=60)
    assert ex.values["verdict"] == "underdamped" and "underdamped" in ex.regime_html.value
    # Past the exact threshold (a* = 0.1559 for mu = 0.5, K_ref = 4, constant lag): unstable.
    a_exact = float(stability.critical_a_exact(0.5, 4, "constant"))
    ex.controls["eta"].value = 1.05 * a_exact
    assert ex.values["verdict"] == "unstable" and ex.values["stable_exact"] is False
    assert ">unstable<" in ex.regime_html.value
    # Between the continuous threshold (0.125) and the exact one: stable only in the exact recurrence.
    ex.controls["eta"].value = 0.14
    assert ex.values["regime"] == "unstable" and ex.values["stable_exact"] is True
    assert ex.values["verdict"] == "stable_exact_only"
    # Every control reaches grpo_core.
    for name, value in [("mu", 0.3), ("k_ref", 6), ("curvature", 0.5), ("beta", 0.2), ("group_size", 32)]:
        ex.controls[name].value = value
    ex.lag.value = "refresh"
    ex.momentum.value = "ema"
    c = oscillator.coefficients(0.14, 0.3, 6, 0.5, 0.2, lag="refresh", momentum="ema")
    assert ex.values["regime"] == c.regime
    assert ex.values["damping_ratio"] == pytest.approx(c.damping_ratio)
    assert ex.values["critical_a_exact"] == pytest.approx(
        float(stability.critical_a_exact(0.3, 6, "refresh", "ema"))
    )
    assert ex.values["critical_k_ref_exact"] == stability.critical_value(
        "k_ref", eta=0.14, mu=0.3, curvature=0.5, beta=0.2, lag="refresh", momentum="ema")
    assert ex.values["stationary_variance_exact"] == pytest.approx(
        noise.stationary_variance_exact(c, 1.0, 32))
    # The phase chart's point is (K_ref, eta K) with the regime as its label.
    point = [recs for mark, recs in _marks(ex.specs["phase"]) if mark == "text"][0][0]
    assert (
        point["k_ref"] == 6
        and point["a"] == pytest.approx(c.a)
        and point["label"] == ex.values["verdict_label"]
    )
    # The trajectory chart carries the closed form of grpo_core.
    lines = [
        recs
        for mark, recs in _marks(ex.specs["trajectory"])
        if mark == "line" and recs and "model" in recs[0]
    ][0]
    closed = [r["progress"] for r in lines if r["model"] == "closed form (continuous)"]
    expected = 1.0 - trajectories.closed_form_trajectory(c, range(61))
    assert closed == pytest.approx(list(expected), abs=1e-9)


def test_oscillator_explorer_typed_values_are_clamped_and_shown():
    from widgets.oscillator_explorer import oscillator_explorer

    ex = oscillator_explorer(steps=40)
    ex.controls["mu"].text.value = "1.0"   # mu must be < 1: the control clamps to 0.99
    assert ex.controls["mu"].value == 0.99 and "clamped to 0.99" in ex.controls["mu"].message.value
    assert ex.values["regime"] == oscillator.coefficients(0.05, 0.99, 4, 1.0).regime
    ex.controls["k_ref"].text.value = "0"
    assert ex.controls["k_ref"].value == 1 and "clamped to 1" in ex.controls["k_ref"].message.value
    ex.controls["eta"].text.value = "fast"
    assert "is not a finite number" in ex.controls["eta"].message.value


def test_explorer_shows_a_failing_computation_as_a_message(monkeypatch):
    from widgets import oscillator_explorer as mod

    ex = mod.oscillator_explorer(steps=40)

    def boom(**kwargs):
        raise FloatingPointError("overflow in the recurrence")

    monkeypatch.setattr(mod, "compute_oscillator_view", boom)
    ex.controls["eta"].value = 0.07
    assert ex.status.kind == "error"
    assert ex.status.text == "FloatingPointError: overflow in the recurrence"
    assert "Traceback" not in ex.status.value


def test_frame_records_equal_altairs_sanitiser():
    # the fast path must give exactly what Altair would embed; other dtypes fall back to Altair
    import numpy as np
    import pandas as pd
    from altair.utils import sanitize_pandas_dataframe

    from widgets._controls import frame_records

    frames = [
        pd.DataFrame({"t": np.arange(4), "y": [0.5, np.nan, np.inf, -np.inf], "ok": [True, False, True, True],
                      "s": ["a", "b", "c", "d"], "u": np.arange(4, dtype=np.uint8)}),
        pd.DataFrame({"t": pd.Series([1, None, 3], dtype="Int64"), "c": pd.Categorical(["x", None, "y"])}),
        pd.DataFrame({"d": pd.to_datetime(["2026-01-01", "2026-01-02"]), "o": [np.array([1, 2]), None]}),
        pd.DataFrame({"y": np.float32([0.1, np.nan])}),
        pd.DataFrame({"y": []}, dtype=float),
        pd.DataFrame({"s": pd.array(["a", None], dtype="string"), "o": pd.Series(["p", "q"], dtype=object)}),
    ]
    for f in frames:
        got = frame_records(f)
        assert got == sanitize_pandas_dataframe(f).to_dict(orient="records")
        assert [list(map(type, r.values())) for r in got] == \
            [list(map(type, r.values())) for r in sanitize_pandas_dataframe(f).to_dict(orient="records")]
    assert frame_records(frames[0])[1] == {"t": 1, "y": None, "ok": False, "s": "b", "u": 1}


def test_live_chart_patches_data_without_rebuilding():
    from widgets.oscillator_explorer import oscillator_explorer

    ex = oscillator_explorer(steps=40)
    live = ex._live["trajectory"]
    before = live.rebuilds
    for eta in (0.02, 0.03, 0.04):
        ex.controls["eta"].value = eta
    assert live.rebuilds == before  # data swapped, chart not rebuilt
    closed = [r["progress"] for mark, recs in _marks(ex.specs["trajectory"]) if mark == "line" and recs
              and "model" in recs[0] for r in recs if r["model"] == "closed form (continuous)"]
    c = oscillator.coefficients(0.04, 0.5, 4, 1.0)
    assert closed == pytest.approx(list(1.0 - trajectories.closed_form_trajectory(c, range(41))), abs=1e-9)


# --- bandit explorer ------------------------------------------------------------------------


def test_bandit_explorer_matches_the_simulator_and_prediction():
    import numpy as np

    from grpo_core import bandit
    from widgets.bandit_explorer import CHUNK_SEEDS, bandit_explorer

    ex = bandit_explorer(eta=0.2, mu=0.5, k_ref=4, beta=1.0, group_size=8, seeds=CHUNK_SEEDS + 4, steps=120,
                         baseline="leave_one_out")
    assert ex.values["seeds_done"] == CHUNK_SEEDS + 4 and ex.values["stopped"] is False
    spec = bandit.BanditSpec.binary(arms=2, correct=1, group_size=8, baseline="leave_one_out")
    fp = bandit.fixed_point(spec, 1.0)
    assert ex.values["p_star"] == pytest.approx(fp.p_star) == pytest.approx(1 / (1 + math.exp(-1.0)))
    # Chunked seeds give exactly the numbers of one vectorised call.
    run = bandit.simulate(
        spec, eta=0.2, mu=0.5, k_ref=4, beta=1.0, steps=120, seeds=np.arange(CHUNK_SEEDS + 4)
    )
    np.testing.assert_array_equal(ex.result["p"], run.p[0])
    # LOO baseline, beta = 1: K = 2 p* (1 - p*) = 0.39322; a = 0.2 K; M = (1.5 + 16 a)/2, C = 0.5 - 4 a
    assert ex.values["stiffness"] == pytest.approx(2 * fp.p_star * (1 - fp.p_star), rel=1e-9)
    assert ex.values["stiffness"] == pytest.approx(0.393224, abs=1e-6)
    assert ex.values["regime"] == "underdamped" and ex.values["stable_exact"] is True
    assert ex.values["damping_ratio"] == pytest.approx(0.281505, abs=1e-6)
    # Same seeds, same numbers.
    first = ex.result["p"].copy()
    ex.start(block=True)
    np.testing.assert_array_equal(ex.result["p"], first)


def test_bandit_explorer_runs_in_a_thread_and_stops():
    from widgets.bandit_explorer import CHUNK_SEEDS, bandit_explorer

    ex = bandit_explorer(seeds=16, steps=50)
    ex.controls["seeds"].value = 1024
    ex.controls["steps"].value = 5000
    ex.start()
    assert ex.running and ex.run_button.disabled and not ex.stop_button.disabled
    ex.start()  # a second press while running is refused with a message
    assert "in progress" in ex.status.text
    ex.stop()
    ex.wait(60)
    assert not ex.running and not ex.run_button.disabled
    assert ex.values["stopped"] is True and ex.values["seeds_done"] % CHUNK_SEEDS == 0
    assert ex.values["seeds_done"] < 1024 and ex.progress.value == ex.values["seeds_done"]
    assert ex.status.text.startswith(f"stopped after {ex.values['seeds_done']} of 1024 seeds")



# --- group-size explorer --------------------------------------------------------------------


def test_group_size_explorer_matches_grpo_core():
    from grpo_core import groupsize
    from widgets.group_size_explorer import POOL_ARMS, POOL_PROMPTS, group_size_explorer

    ex = group_size_explorer(budget=1024, spread=0.1, group_size=16)  # the book's pool: mean 0.2
    for spread, budget in [(0.1, 1024), (0.3, 1024), (0.05, 4096)]:
        ex.controls["spread"].value = spread
        ex.controls["budget"].value = budget
        k = groupsize.pool_constants(
            groupsize.beta_difficulty_pool(POOL_PROMPTS, POOL_ARMS, mean=0.2, spread=spread)
        )
        assert ex.values["c1"] == pytest.approx(k.c1) and ex.values["c3"] == pytest.approx(k.c3)
        assert ex.values["g_star_exact"] == pytest.approx(1 + math.sqrt(k.c3 / k.c1))
        assert ex.values["best_g"] == groupsize.best_group_size(budget, k.c1, k.c2, k.c3)
        assert ex.values["ratio"] == pytest.approx(
            float(k.mse(16, budget=budget)) / float(k.mse(ex.values["best_g"], budget=budget)))
    # More spread between prompts -> more between-prompt variance c1 -> a smaller G*.
    ex.controls["spread"].value = 0.05
    small_spread = ex.values["g_star_exact"]
    ex.controls["spread"].value = 0.3
    assert ex.values["g_star_exact"] < small_spread
    ring = [recs for mark, recs in _marks(ex.specs["mse"]) if mark == "point"][0]
    assert [r["group_size"] for r in ring] == [16]


def test_group_size_explorer_g_that_does_not_divide_the_budget():
    from widgets.group_size_explorer import group_size_explorer

    ex = group_size_explorer(budget=1024, group_size=16)
    ex.controls["group_size"].value = 24
    assert ex.status.kind == "error" and "`budget` must be a multiple of `group_size` = 24" in ex.status.text
    ex.controls["group_size"].value = 32
    assert ex.status.text == "" and ex.values["group_size"] == 32
    ex.controls["spread"].text.value = "0.9"  # beyond the slider: clamped with a message
    assert ex.controls["spread"].value == 0.45 and "clamped" in ex.controls["spread"].message.value


# --- where the explorers run ----------------------------------------------------------------


def test_explorers_use_only_core_ipywidgets():
    """Colab needs ``output.enable_custom_widget_manager()`` only for third-party widget modules;
    every model of every explorer comes from the core modules, which Colab, VS Code, JupyterLab and
    Notebook 7 (and the book's HTML manager) ship."""
    import ipywidgets

    from widgets.explorers import bandit_explorer, group_size_explorer, log_explorer, oscillator_explorer

    core = {"@jupyter-widgets/controls", "@jupyter-widgets/base", "@jupyter-widgets/output"}
    explorers = [oscillator_explorer(steps=30), bandit_explorer(seeds=4, steps=30), group_size_explorer(),
                 log_explorer("gemma3-1b-it_gsm8k_unsloth")]
    for ex in explorers:
        seen, todo = [], [ex]
        while todo:
            w = todo.pop()
            seen.append(w)
            todo.extend(getattr(w, "children", ()))
        assert len(seen) > 10
        modules = {w._model_module for w in seen} | {w._view_module for w in seen if w._view_module}
        assert modules <= core, f"{type(ex).__name__} uses {modules - core}"
        assert all(isinstance(w, ipywidgets.Widget) for w in seen)


def test_controls_refuse_an_integer_too_large_for_a_float_and_a_negative_seed():
    from grpo_core.errors import ParameterError
    from widgets.explorers import oscillator_explorer

    ex = oscillator_explorer()
    before = ex.controls["eta"].value
    ex.controls["eta"].value = 10**400  # OverflowError in float(): was an uncaught exception
    assert ex.controls["eta"].value == before
    with pytest.raises(ParameterError, match="`seed` must be an integer >= 0"):
        oscillator_explorer(seed=-1)


def test_explorers_refuse_bad_initial_arguments_by_name():
    from widgets.explorers import bandit_explorer, group_size_explorer, oscillator_explorer

    for call, name in (
        (lambda: oscillator_explorer(eta=-1), "eta"),
        (lambda: oscillator_explorer(eta="abc"), "eta"),
        (lambda: oscillator_explorer(lag="x"), "lag"),
        (lambda: bandit_explorer(baseline="x"), "baseline"),
        (lambda: group_size_explorer(correct_sets="x"), "correct_sets"),
        (lambda: group_size_explorer(budget=0), "budget"),
    ):
        with pytest.raises(ParameterError) as err:  # was ipywidgets' ValueError or TraitError
            call()
        assert err.value.parameter == name


# --- style -----------------------------------------------------------------------------------


def test_style_error_bars_are_two_se_floored_at_half_the_mean():
    import pandas as pd

    from widgets.style import two_se_bounds

    lo, hi = two_se_bounds(pd.Series([1.0, 2.0]), pd.Series([0.1, 0.6]))
    # 2 - 1.2 = 0.8 is below half the mean: floored at 1
    assert lo.tolist() == pytest.approx([0.8, 1.0]) and hi.tolist() == pytest.approx([1.2, 3.2])
    lo, hi = two_se_bounds(pd.Series([-0.1]), pd.Series([0.05]), floor=None)  # a signed difference
    assert lo.tolist() == pytest.approx([-0.2]) and hi.tolist() == pytest.approx([0.0])


def test_style_column_check_names_the_frame_and_what_is_missing():
    import pandas as pd

    from widgets.style import require_columns

    require_columns(pd.DataFrame({"a": [1], "b": [2]}), "t", ["a", "b"])  # complete: no error
    with pytest.raises(ParameterError, match=r"^`t` lacks column\(s\) \['b', 'c'\] \(use make_t\)$"):
        require_columns(pd.DataFrame({"a": [1]}), "t", ["a", "b", "c"], source="make_t")
    with pytest.raises(ParameterError, match="`t` must be a pandas DataFrame; got dict"):
        require_columns({"a": [1]}, "t", ["a"])


def test_style_regime_palette_covers_every_regime_the_model_names():
    from widgets.style import BANDIT_REGIME_COLORS, OSCILLATOR_REGIMES, REGIME_COLORS

    labels = {oscillator.coefficients(eta, mu, k, 1.0).regime_label
              for eta in (0.001, 0.05, 0.3, 2.0) for mu in (0.0, 0.5, 0.9) for k in (1, 4)}
    assert labels <= set(OSCILLATOR_REGIMES) <= set(REGIME_COLORS)
    assert len(set(REGIME_COLORS.values())) == len(REGIME_COLORS)  # one colour per regime
    assert BANDIT_REGIME_COLORS["oscillatory"] == REGIME_COLORS["underdamped"]


def test_forecast_chart_of_one_window_draws_no_slider():
    """The live explorer's chart shows one fit window: no slider to move (the page's slider chart,
    with every window, keeps its own)."""
    import warnings

    from grpo_core.runs import datasets, logs
    from widgets.laws_charts import static_forecast_chart, static_forecast_grid

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = logs.read_log(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
        one = static_forecast_grid(log, fractions=(0.5,))
        two = static_forecast_grid(log, fractions=(0.4, 0.5))
    assert "bind" not in static_forecast_chart(one, fraction=50).to_dict()["params"][0]
    assert static_forecast_chart(two, fraction=50).to_dict()["params"][0]["bind"]["input"] == "range"


@pytest.mark.parametrize("kwargs, name", [({"fractions": (0.4, 1.5)}, "fractions"), ({"fractions": ()}, "fractions"),
                                          ({"fractions": (float("nan"),)}, "fractions")])
def test_forecast_grid_refuses_bad_settings(kwargs, name):
    from grpo_core.runs import datasets, logs
    from widgets.laws_charts import static_forecast_grid

    log = logs.read_log(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    with pytest.raises(ParameterError) as exc:
        static_forecast_grid(log, **kwargs)
    assert exc.value.parameter == name
    with pytest.raises(ParameterError, match="RunLog"):
        static_forecast_grid([1, 2, 3])
