"""Kinds of log that ``diagnose`` misread, each rebuilt from a public report, with the rule that reads it.

Each test names its source. Where the report gives only part of the log, the docstring says which part is
the report's and how the rest was built.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest
from conftest import DATA

from grpo_core.errors import DataError, ParameterError
from grpo_core.runs import datasets
from grpo_core.runs.diagnostics import diagnose, not_learning, recurring_spikes
from grpo_core.runs.diagnostics.series import OVERFLOW
from grpo_core.runs.logs import from_records, read_log
from grpo_dynamics.cli import main

KINDS = DATA / "diagnosis_kinds"


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _run(name: str, collection: str):
    r = datasets.real_run(name, collection)
    return _quiet(read_log, r.path, run=r.run)


def _flat(n: int, max_steps: int | None = None):
    """``n`` steps of a reward with no trend (deterministic noise of +-0.05 around 0.3)."""
    log = from_records([{"step": s, "reward": 0.3 + 0.05 * ((s * 7919) % 13 - 6) / 6} for s in range(1, n + 1)])
    if max_steps is not None:
        log.meta["max_steps"] = max_steps
    return log


# --- 1. too early to call is not "not learning" -----------------------------------------------------------

def test_a_notebook_stopped_at_56_of_250_planned_steps_is_too_early_to_judge():
    """unslothai/notebooks, nb/Mistral_v0.3_(7B)-GRPO.ipynb (held-out run 41, planned ``max_steps=250``): its
    reward reads flat over steps 1-56 and rises later (the whole run is healthy). Stopped at step 56 with the
    plan known (as a ``trainer_state.json`` says it), the verdict is "inconclusive", not "not learning"."""
    log = _run("41", "holdout_runs")
    assert not_learning(log) is None  # the whole run rose significantly
    early = dataclasses.replace(log, train=log.train.loc[:56], meta={**log.meta, "max_steps": 250})
    d = _quiet(diagnose, early, forecast=False)
    assert d.verdict == "inconclusive" and d.find("not_learning") is None
    assert d.missing[0].startswith("56 of 250 planned steps: too early to judge whether it learns (needs step 125")
    # without the plan, 56 steps pass the step floor (50): the flat stretch is called what it is
    unplanned = dataclasses.replace(early, meta={k: v for k, v in early.meta.items() if k != "max_steps"})
    assert _quiet(not_learning, unplanned).severity == "warning"


def test_half_of_the_planned_run_is_the_boundary():
    assert _quiet(not_learning, _flat(125, max_steps=250)).severity == "warning"
    with pytest.raises(DataError, match="124 of 250 planned steps: too early"):
        not_learning(_flat(124, max_steps=250))
    # a planned run shorter than the step floor is judged at its end
    assert _quiet(not_learning, _flat(40, max_steps=40)).severity == "warning"
    with pytest.raises(DataError, match="39 of 40 planned steps: too early"):
        not_learning(_flat(39, max_steps=40))


def test_23_steps_whose_loss_of_0_was_the_only_worry_are_too_early():
    """unslothai/unsloth#2291 ("Loss Always Zero While Training GRPO Model"): a notebook table whose training
    loss is 0.0000-0.0001 while a composite reward swings between -18.75 and 7.5. Steps 1-11 are the issue's
    rows (tests/data/diagnosis_kinds/unsloth2291_steps1_11.csv; the excerpt we hold stops there); steps 12-23
    replay them. A loss of 0 is GRPO's normal (huggingface/trl#2703), and 23 flat steps are no verdict."""
    rows = _quiet(read_log, KINDS / "unsloth2291_steps1_11.csv").train
    assert rows["loss"].abs().max() <= 1e-4 and rows["reward"].min() == -18.75

    def replayed(n):
        cols = ["loss", "reward", "reward_std", "completion_length", "kl"]
        return from_records([{"step": s, **rows[cols].iloc[(s - 1) % 11].to_dict()} for s in range(1, n + 1)])

    d = _quiet(diagnose, replayed(23), forecast=False)
    assert d.verdict == "inconclusive" and d.find("not_learning") is None
    assert d.missing[0].startswith("23 steps: too early to judge whether it learns (needs at least 50")
    assert d.summary().count("too early to judge") == 1  # on its "inconclusive" line, not again as "not checked"
    with pytest.raises(DataError, match="49 steps: too early"):
        not_learning(replayed(49))
    assert _quiet(not_learning, replayed(50)).severity == "warning"  # the floor reached: flat is flat


def test_the_shipped_runs_keep_the_not_learning_verdicts_the_floor_allows():
    # the shortest runs pinned "not learning": held-out 50 and 51 (60 steps) and real run 32 (84 steps)
    for name, coll in (("50", "holdout_runs"), ("51", "holdout_runs"), ("32", "real_runs")):
        assert _quiet(not_learning, _run(name, coll)).severity == "warning", name


# --- 2. checks that need no reward run without one --------------------------------------------------------

def test_completion_lengths_alone_are_diagnosed_not_refused(capsys):
    """jsboige/CoursIA#13596: 40 logged GRPO steps whose completions all stop at ``max_completion_length=80``:
    mean = min = max length 80 on 40 of 40 steps, ``completions/clipped_ratio`` 1 on 39 (0.975 once),
    ``mean_terminated_length`` 0 on 39 (4 once); the issue does not say which step was the exception (step 20
    here). No reward column: truncation needs none."""
    path = KINDS / "length_only_cap80.jsonl"
    d = _quiet(diagnose, path, forecast=False)
    assert d.verdict == "unhealthy" and d.find("truncation").severity == "critical"
    assert "not_learning" in d.skipped and "reward" in d.skipped["not_learning"]
    assert main(["diagnose", str(path), "--no-forecast"]) == 1
    out, err = capsys.readouterr()
    assert "nothing to diagnose" not in err and "[critical] truncation" in out


def test_without_a_reward_nothing_is_called_healthy():
    recs = [{"step": s, "completion_length": 300 + 40 * math.sin(s), "clipped_ratio": 0.0} for s in range(1, 41)]
    d = _quiet(diagnose, from_records(recs), forecast=False)
    assert d.verdict == "inconclusive" and not d.findings
    assert any("whether the run learns was not checked" in m for m in d.missing)


# --- 3. a dead run names its cause ------------------------------------------------------------------------

def test_a_dead_run_at_the_length_cap_names_truncation():
    """huggingface/trl#5697: the GRPO quickstart with the default ``max_completion_length=256``; its table reads
    loss 0, grad_norm 0, reward 0, clipped_ratio 1.0, mean_length 256 on steps 1-10 (``reward_mean`` there)."""
    f = _quiet(diagnose, KINDS / "trl5697_dead_cap256.csv", forecast=False).find("not_learning")
    assert f.severity == "critical" and f.message.startswith("Dead run")
    assert "No reward, because the completions are cut at the length cap of 256 tokens" in f.message
    assert f.evidence["truncation"] == {"clipped_ratio_median": 1.0, "max_length": 256.0}
    assert f.advice.startswith("raise max_completion_length")
    assert "advantage_degeneration" not in f.message  # the log has no spread column to show it


def test_a_dead_run_links_truncation_and_zero_advantage():
    """greyhaven-ai/autocontext#1067: a GSM8K GRPO run whose metrics read mean_length 256, clipped_ratio 1,
    mean_terminated_length 0, reward 0, reward_std 0, frac_reward_zero_std 1, loss 0, grad_norm 0; that record
    repeated for 20 steps."""
    rec = {"completions/mean_length": 256, "completions/clipped_ratio": 1, "completions/mean_terminated_length": 0,
           "reward": 0, "reward_std": 0, "frac_reward_zero_std": 1, "loss": 0, "grad_norm": 0}
    d = _quiet(diagnose, from_records([{"step": s, **rec} for s in range(1, 21)]), forecast=False)
    f = d.find("not_learning")
    assert "cut at the length cap of 256 tokens" in f.message and "(truncation)" in f.message
    assert ("No update, because every group's rewards are equal (frac_reward_zero_std 1 on every step): every "
            "advantage is 0, and so is the gradient (advantage_degeneration)") in f.message
    assert {"truncation", "advantage_degeneration"} <= set(d.modes)


# --- 4. spikes of orders of magnitude ---------------------------------------------------------------------

def test_recurring_spikes_of_orders_of_magnitude_are_a_warning():
    """verl-project/verl#1066 and PR #2328: gradient spikes "several or even a dozen orders of magnitude above
    the normal range". Built from that description: ``ppo_kl`` near 1e-3 jumps 5e8-fold at three steps, the
    gradient norm 400-fold at two; three spikes were info (fewer than five)."""
    recs = []
    for s in range(1, 201):
        kl = 1e-3 * (1 + 0.1 * ((s * 37) % 11) / 11) * (5e8 if s in (50, 110, 170) else 1)
        g = 0.5 * (1 + 0.1 * ((s * 53) % 7) / 7) * (400 if s in (60, 150) else 1)
        recs.append({"step": s, "reward": 0.2 + 0.003 * s, "ppo_kl": kl, "grad_norm": g})
    f = _quiet(recurring_spikes, from_records(recs))
    assert f.severity == "warning" and f.evidence["ppo_kl"]["large_steps"] == [50, 110, 170]
    assert f.evidence["grad_norm"]["large_steps"] == [60, 150]
    assert "ppo_kl 3 times (steps 50, 110, 170" in f.message and "grad_norm 2 times (steps 60, 150" in f.message


def test_a_real_run_with_huge_kl_spikes_and_one_with_small_ones():
    """Held-out run 70 (matthewchung74/qwen_2_5_3B_GRPO_medical_thinking): its KL jumps to 102x, 4.9e8x and
    more of its running median; to step 700 it spikes four times (info by count), three of them large. Real
    run 28 (unslothai/notebooks, Advanced_Llama3_2_(3B)_GRPO_LoRA) spikes four times, at most 53x: info."""
    log = _run("70", "holdout_runs_2")
    f = recurring_spikes(dataclasses.replace(log, train=log.train.loc[:700]))
    assert f.severity == "warning" and f.evidence["kl"]["spikes"] == 4
    assert f.evidence["kl"]["large_steps"] == [48, 453, 670] and f.evidence["kl"]["largest_ratio"] > 1e8
    f28 = recurring_spikes(_run("28", "real_runs"))
    assert f28.severity == "info" and f28.evidence["kl"]["spikes"] == 4
    assert 50 < f28.evidence["kl"]["largest_ratio"] < 100


# --- 5. numerical failures --------------------------------------------------------------------------------

def test_a_log_of_nan_and_inf_is_a_numerical_failure_not_nothing(tmp_path, capsys):
    """ruc-datalab/DeepAnalyze#116: policy loss, entropy and gradient norm NaN on every batch. Taken one step
    further, as the reports of runs that broke from the first step read: every metric NaN, the gradient norm
    inf, for 30 steps."""
    path = tmp_path / "nan.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": float("nan"), "entropy": float("nan"),
                                        "grad_norm": float("inf"), "reward": float("nan")}) + "\n"
                            for s in range(1, 31)))
    d = _quiet(diagnose, path)
    f = d.find("numerical_failure")
    assert d.verdict == "unhealthy" and f.severity == "critical" and f.steps == (1, 30)
    assert set(f.evidence) == {"loss", "entropy", "grad_norm", "reward"}
    assert main(["diagnose", str(path)]) == 1
    assert "nothing to diagnose" not in capsys.readouterr().err


def _no_runtime_warning(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    return out


def test_rewards_that_overflow_float64_arithmetic_are_said_to_overflow():
    """A reward logged at 1e308 (a float64 near its largest value) on every step: the mean of two is inf. No
    public report; the kind is what a reward function returning ``sys.float_info.max`` writes."""
    log = from_records([{"step": s, "reward": 1e308 if s % 2 else 9e307, "grad_norm": 0.3} for s in range(1, 61)])
    d = _no_runtime_warning(diagnose, log)
    f = d.find("numerical_failure")
    assert f.severity == "critical" and "an overflow" in f.message and "reward on 60 step(s)" in f.message
    assert "inf" not in " ".join(x.message for x in d.findings).replace("infinite", "")
    assert "overflow" in d.skipped["not_learning"] and d.forecast is None and d.implied_curvature is None


def test_spikes_at_the_float32_maximum_are_a_failure_and_are_not_forecast():
    """``torch.nan_to_num`` writes inf as the dtype's largest value, 3.4028e38 for float32 (PyTorch's
    documentation): three reward steps at that value in a rising run."""
    top = float(np.finfo(np.float32).max)
    log = from_records([{"step": s, "reward": top if s in (30, 60, 90) else 0.2 + 0.001 * s, "grad_norm": 0.3}
                        for s in range(1, 101)])
    d = _no_runtime_warning(diagnose, log)
    f = d.find("numerical_failure")
    assert d.verdict == "unhealthy" and f.severity == "critical"
    assert f.evidence["reward"]["overflow_steps"] == [30, 60, 90]
    assert "step(s) 30, 60, 90" in f.message
    assert d.forecast is None and any(n.startswith("no end-of-run forecast and no reward time scale: the run failed "
                                                   "numerically") for n in d.notes)
    # the boundary: a value just under the float32 maximum as a log rounds it is no overflow
    assert OVERFLOW == 3.4e38
    ok = from_records([{"step": s, "reward": 3.39e38 if s == 30 else 0.2, "grad_norm": 0.3} for s in range(1, 41)])
    assert _quiet(diagnose, ok, forecast=False).find("numerical_failure") is None


# --- 6. another tool's meta.json beside the log -----------------------------------------------------------

def test_text_where_a_number_goes_in_a_meta_json_beside_the_log_does_not_stop_fit_or_diagnose(tmp_path, capsys):
    """A ``meta.json`` written by another tool (an export's own fields: ``"see config"``, ``"eight"``) beside a
    ``trainer_state.json``: its fields are defaulted, and both commands read the log (exit 2 was an error)."""
    rows = [{"step": s, "reward": 0.8 - 0.6 * math.exp(-s / 40) + 0.02 * math.sin(s), "learning_rate": 1e-6,
             "grad_norm": 0.3} for s in range(1, 201)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": rows}))
    (tmp_path / "meta.json").write_text(json.dumps({"learning_rate": "see config", "num_generations": "eight",
                                                    "hyperparameters": {"num_iterations": "two"}}))
    log = str(tmp_path / "trainer_state.json")
    assert main(["diagnose", log, "--no-forecast"]) in (0, 1, 3)
    err = capsys.readouterr().err
    assert "error" not in err
    for said in ("`learning_rate` = 'see config' (is not a number)", "`group_size` = 'eight' (is not a number)",
                 "`num_iterations` = 'two' (is not a number)"):
        assert said in err  # each field defaulted is said, not silently replaced
    assert main(["fit", log]) == 0
    assert "error" not in capsys.readouterr().err
    (tmp_path / "meta.json").write_text(json.dumps({"beta": "TRL default (not set)"}))
    assert main(["diagnose", log, "--no-forecast"]) in (0, 1, 3)
    assert "meta.json" not in capsys.readouterr().err  # words saying "not set" are the default, no warning


# --- 7. parameters of the wrong type ----------------------------------------------------------------------

@pytest.mark.parametrize("kw, name", [({"eval_metric": 5}, "eval_metric"), ({"correctness": "acc"}, "correctness"),
                                      ({"correctness": ["acc", 3]}, "correctness"),
                                      ({"correctness": {"acc": 1}}, "correctness")])
def test_a_parameter_of_the_wrong_type_is_refused_by_name(kw, name):
    log = from_records([{"step": s, "reward": 0.1 + 0.002 * s, "reward/acc": 0.1} for s in range(1, 60)])
    with pytest.raises(ParameterError, match=f"`{name}` must") as info:
        diagnose(log, forecast=False, **kw)
    assert info.value.parameter == name
    if kw.get("correctness") == "acc":
        assert "['acc']" in str(info.value)  # the spelling that works
    assert diagnose(log, forecast=False, correctness=["acc"]).checked  # the list is accepted
