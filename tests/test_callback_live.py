"""DynamicsCallback live: one alert per mode, the forecast with its step, the stop on critical,
binned diagnoses; in a real TRL ``GRPOTrainer`` run with a planted failure."""

from __future__ import annotations

import io
import json
import math
import time
from types import SimpleNamespace

import numpy as np
import pytest

from grpo_core.errors import ParameterError
from grpo_core.runs.callback import LIVE_FILE, STOP_FILE, DynamicsCallback, binned_records, read_metrics_lines
from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import from_records

ARGS = SimpleNamespace(num_generations=4, per_device_train_batch_size=16, world_size=1, gradient_accumulation_steps=1)
@pytest.fixture(autouse=True)
def _close_callbacks(monkeypatch):
    """Every callback a test makes is closed after it (the tests feed on_log without on_train_end)."""
    made = []
    init = DynamicsCallback.__init__

    def tracking(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(DynamicsCallback, "__init__", tracking)
    yield
    for cb in made:
        cb.close()


DEAD_FROM = 11  # first step whose every group has zero spread


def _row(step, rng):
    """A TRL log line; from DEAD_FROM on the reward is constant 0 (no spread, no gradient)."""
    dead = step >= DEAD_FROM
    return {"loss": 0.0 if dead else 0.01, "grad_norm": 0.0 if dead else float(1 + rng.normal(0, 0.1)),
            "reward": 0.0 if dead else float(rng.uniform(0.2, 0.4)), "reward_std": 0.0 if dead else 0.3,
            "frac_reward_zero_std": 1.0 if dead else 0.0, "entropy": 0.5}


def _feed(cb, n, control=None, rng=None):
    rng = rng or np.random.default_rng(0)
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    cb.on_train_begin(ARGS, state, control)
    for step in range(1, n + 1):
        state.global_step = step
        cb.on_log(ARGS, state, control, logs=_row(step, rng))
        if control is not None and control.should_training_stop:
            return step
    return n


def _feed_rise(cb, state, n):
    """Feed steps 1..n of a healthy run: the reward rises from 0.2 to a plateau of 0.8 (time constant 25
    steps, noise sd 0.02, seed 1), with spread, entropy and gradient."""
    cb.on_train_begin(ARGS, state, None)
    rng = np.random.default_rng(1)
    for step in range(1, n + 1):
        state.global_step = step
        r = 0.2 + 0.6 * (1 - math.exp(-step / 25)) + rng.normal(0, 0.02)
        cb.on_log(ARGS, state, None, logs={"reward": float(r), "reward_std": 0.3, "frac_reward_zero_std": 0.1,
                                           "entropy": 0.5, "grad_norm": 1.0})


def test_stop_on_critical_at_the_first_critical_finding(tmp_path):
    # The zero-spread fraction is smoothed by a centred mean of 5 steps: its warning (the 0.5 level)
    # comes at DEAD_FROM + 4 = 15 and its critical stretch would be complete at DEAD_FROM + 6 = 17;
    # but at DEAD_FROM + 5 = 16 the reward has fallen from ~0.3 to 0 for six steps, and the
    # not-learning check ("the run unlearned") is critical first.
    out = io.StringIO()
    control = SimpleNamespace(should_training_stop=False)
    cb = DynamicsCallback(tmp_path, every=1, min_steps=5, n_boot=0, stream=out, stop_on_critical=True)
    stopped_at = _feed(cb, 40, control)
    assert stopped_at == DEAD_FROM + 5 and control.should_training_stop
    assert cb.stopped["step"] == 16 and cb.stopped["finding"]["mode"] == "not_learning"
    assert cb.stopped["finding"]["steps"] == [1, 16]
    saved = json.loads((tmp_path / STOP_FILE).read_text())
    assert saved["finding"]["severity"] == "critical" and saved["diagnosis"]["healthy"] is False
    # one line per (mode, severity): the warning at 15, the critical at 16, then the stop line (beside the
    # forecast's two lines at each diagnosis: there is no significance gate on the forecast any more, so a
    # reward that has barely moved gets one too, from its 8th point)
    lines = [ln for ln in out.getvalue().splitlines()
             if ": end of run (" not in ln and ":   " not in ln and ": no end-of-run forecast" not in ln]
    assert [ln.split(":")[0] for ln in lines] == ["[dynamics] step 15", "[dynamics] step 16", "[dynamics] step 16"]
    assert "warning advantage_degeneration" in lines[0] and "critical not_learning" in lines[1]
    assert "stopping training" in lines[2]
    live = json.loads((tmp_path / LIVE_FILE).read_text())
    # info (the 0.25 level, not printed) at 14, warning at 15, then not_learning critical at 16
    assert [(a["step"], a["mode"], a["severity"]) for a in live["alerts"]] == [
        (14, "advantage_degeneration", "info"), (15, "advantage_degeneration", "warning"),
        (16, "not_learning", "critical")]


def test_alerts_are_not_repeated_and_the_run_goes_on_without_stop(tmp_path):
    out = io.StringIO()
    control = SimpleNamespace(should_training_stop=False)
    cb = DynamicsCallback(tmp_path, every=1, min_steps=5, n_boot=0, stream=out)
    assert _feed(cb, 24, control) == 24 and not control.should_training_stop and cb.stopped is None
    assert out.getvalue().count("advantage_degeneration") == 2  # warning once, critical once
    assert not (tmp_path / STOP_FILE).exists()
    quiet = DynamicsCallback(tmp_path / "q", every=1, min_steps=5, n_boot=0, stream=io.StringIO(),
                             print_severities=("critical",))
    _feed(quiet, 24)
    assert quiet.stream.getvalue().count("advantage_degeneration") == 1
    # recorded all the same: degeneration info/warning/critical and not_learning's critical
    assert [a["severity"] for a in quiet.alerts] == ["info", "warning", "critical", "critical"]


def test_the_forecast_is_recorded_with_its_step(tmp_path):
    out = io.StringIO()
    cb = DynamicsCallback(tmp_path, every=20, min_steps=30, n_boot=0, stream=out)
    _feed_rise(cb, SimpleNamespace(global_step=0, is_world_process_zero=True), 160)
    assert [f["step"] for f in cb.forecasts] == [40, 60, 80, 100, 120, 140, 160]
    last = cb.forecasts[-1]
    assert abs(last["plateau"] - 0.8) < 0.05 and last["plateau_low"] <= last["plateau"] <= last["plateau_high"]
    # the forecast is diagnose's (the current level with its calibrated band), and "now" is that level over
    # the steps it names: what diagnose returns on the same records
    d = diagnose(from_records(cb.records), group_size=4, num_prompts=4, n_boot=0)
    assert last["now"] == pytest.approx(d.forecast.now) and last["now_steps"] == list(d.forecast.now_steps)
    assert last["final"] == pytest.approx(d.forecast.shown_point)
    assert last["final_low"] <= last["final"] <= last["final_high"]
    assert last["current"] == pytest.approx(d.forecast.law_fit.current)  # the law fit's, kept
    printed = out.getvalue()
    assert printed.count("end of run (mean of the last 20% of steps") == 7
    # no max_steps: each diagnosis takes the run as half done, and says so
    assert printed.count("band calibrated on 52 real runs at 50% of this run (split-conformal)") == 7
    assert printed.count("the band assumes the run is half done") == 7
    assert last["method"] == d.forecast.method and last["fraction_seen"] == 0.5 and "clock" not in last
    assert "(logistic law)" not in printed  # no second, law-banded plateau beside it


def test_binned_records_keep_means_nan_and_eval_rows():
    recs = [{"step": s, "split": "train", "reward": float(s), "grad_norm": math.nan if s == 777 else 1.0}
            for s in range(1, 10_001)] + [{"step": 10_000, "split": "eval", "accuracy": 0.5}]
    rows = binned_records(recs, 100)
    train = [r for r in rows if r["split"] == "train"]
    assert len(train) <= 100 and rows[-1] == recs[-1]
    width = train[0]["step"]
    assert width == 128 and train[1]["reward"] == np.mean(np.arange(width + 1, 2 * width + 1))
    assert sum(math.isnan(r["grad_norm"]) for r in train) == 1  # the NaN survives in its bin
    assert train[-1]["step"] == 10_000
    assert binned_records(recs[:50], 100) == recs[:50]
    with pytest.raises(ParameterError, match="`max_points`"):
        binned_records(recs, 4)
    with pytest.raises(ParameterError, match="`print_severities`"):
        DynamicsCallback("x", print_severities=("fatal",))


def test_live_binned_diagnosis_matches_the_batch_binning(tmp_path):
    cb = DynamicsCallback(tmp_path, every=0, quiet=True, max_points=64)
    _feed(cb, 1000)
    assert cb._binner.rows() == [r for r in binned_records(cb.records, 64) if r["split"] == "train"]


def test_planted_failure_stops_a_real_grpo_trainer(tmp_path):
    """Real TRL GRPOTrainer on the tiny model; from step 11 the reward is constant: it stops at 17."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from grpo_core.llm.model import TinyModelSpec, build_tiny_model
    from grpo_core.llm.tasks import build_char_tokenizer, sample_problems

    torch.set_num_threads(1)
    tok = build_char_tokenizer()
    model = build_tiny_model(tok, TinyModelSpec(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2))
    data = Dataset.from_list([{"prompt": p["prompt"], "answer": p["answer"]}
                              for p in sample_problems("add2", 64, seed=0)])
    rng = np.random.default_rng(0)

    def planted(completions, trainer_state=None, **kwargs):
        # generation for step s happens at global_step s - 1
        if trainer_state.global_step + 1 >= DEAD_FROM:
            return [0.0] * len(completions)
        return rng.uniform(0, 1, len(completions)).tolist()

    args = GRPOConfig(output_dir=str(tmp_path / "ckpt"), per_device_train_batch_size=16, num_generations=4,
                      max_completion_length=4, learning_rate=3e-4, bf16=False, use_cpu=True, logging_steps=1,
                      max_steps=40, report_to=[], save_strategy="no", disable_tqdm=True, seed=0)
    out = io.StringIO()
    cb = DynamicsCallback(tmp_path / "run", every=1, min_steps=5, n_boot=0, stream=out, stop_on_critical=True)
    trainer = GRPOTrainer(model=model, reward_funcs=[planted], args=args, train_dataset=data,
                          processing_class=tok, callbacks=[cb])
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    # the reward falls to 0 at DEAD_FROM: not_learning ("the run unlearned") is critical at DEAD_FROM + 5
    assert trainer.state.global_step == DEAD_FROM + 5, out.getvalue()
    assert cb.stopped["finding"]["mode"] == "not_learning"
    assert cb.stopped["finding"]["severity"] == "critical" and cb.stopped["finding"]["steps"] == [1, 16]
    saved = json.loads((tmp_path / "run" / STOP_FILE).read_text())
    assert saved["step"] == 16 and "stopping training" in out.getvalue()
    train = [r for r in read_metrics_lines(tmp_path / "run" / "metrics.jsonl") if r["split"] == "train"]
    assert [r["step"] for r in train] == list(range(1, 17))
    assert all(r["frac_reward_zero_std"] == 1.0 for r in train[DEAD_FROM - 1:])
    print(f"stopped at step {trainer.state.global_step} after {wall:.1f} s")


def test_with_max_steps_the_forecast_of_the_planned_end_is_recorded(tmp_path):
    """state.max_steps known: each diagnosis from 20% of the planned run on forecasts the mean reward over
    its last 20% (forecast_end), the same numbers as on the records; at step 40 of 300 (13%) it is too
    early for the calibrated band, and no forecast is recorded."""
    from grpo_core.runs.forecast import forecast_end

    out = io.StringIO()
    cb = DynamicsCallback(tmp_path, every=40, min_steps=30, n_boot=0, stream=out)
    _feed_rise(cb, SimpleNamespace(global_step=0, is_world_process_zero=True, max_steps=300), 80)
    assert cb.max_steps == 300 and [f["step"] for f in cb.forecasts] == [80]
    end = cb.forecasts[-1]["end_of_run"]
    log = from_records(cb.records)
    log.meta["max_steps"] = 300
    want = forecast_end(log)
    assert end["horizon"] == 300 and end["final"] == pytest.approx(want.point) and want.horizon_kind == "planned"
    assert want.fraction_seen == pytest.approx(80 / 300) and cb.forecasts[-1]["fraction_seen"] == want.fraction_seen
    # the point is the level of steps 73-80 (~0.78); the curve's level at steps 240-300 is 0.8: the band covers it
    assert want.now_steps == (73.0, 80.0) and end["final_low"] <= 0.8 <= end["final_high"]
    printed = out.getvalue()
    assert "step 80: end of run (mean of the last 20% of steps, 240-300): " in printed
    assert "planned end: step 300, 27% of it seen" in printed
    assert ("step 40: no end-of-run forecast: too early: 13% of the run is seen, and the band is calibrated from "
            "20% of a run on") in printed
