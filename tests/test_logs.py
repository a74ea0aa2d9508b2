"""Reading training logs: every format, every TRL era, and every kind of bad input.

The TRL-era logs in tests/data/logs were written by tests/data/logs/make_logs.py from simulated
groups of binary rewards, with each release's keys and its meaning of `reward_std`.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import log_cases

from grpo_core.errors import DataError, ParameterError
from grpo_core.runs.datasets import real_log_path
from grpo_core.runs.logs import (
    LogWarning,
    from_frame,
    from_records,
    normalize_key,
    normalize_record,
    parse_version,
    read_log,
)

DATA = Path(__file__).parent / "data" / "logs"
CASES = Path(__file__).parent / "data" / "cases"


def read_quiet(path, **kw):
    """read_log, failing the test on any warning (a clean log must read cleanly)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_log(path, **kw)


# --------------------------------------------------------------------------------------------
# TRL eras
# --------------------------------------------------------------------------------------------

ERAS = [
    # file, era, reward_std kind, columns that must be there, eval rows
    (
        "trl_0.14_trainer_state.json",
        "<0.18",
        "group_mean_std",
        {"completion_length", "reward/accuracy_reward", "reward/format_reward", "kl"},
        2,
    ),
    (
        "trl_0.19_trainer_state.json",
        ">=0.18",
        "unknown",
        {
            "completion_length",
            "completion_length_min",
            "completion_length_max",
            "clipped_ratio",
            "terminated_length",
            "reward/accuracy_reward",
            "reward_std/accuracy_reward",
            "frac_reward_zero_std",
            "clip_ratio_region",
            "clip_ratio_low",
            "clip_ratio_high",
            "num_tokens",
        },
        2,
    ),
    (
        "trl_0.23_trainer_state.json",
        ">=0.21",
        "group_mean_std",
        {"entropy", "clip_ratio_low_min", "clip_ratio_high_max", "frac_reward_zero_std"},
        0,
    ),
    (
        "trl_0.29_trainer_state.json",
        ">=0.21",
        "batch_std",
        {
            "entropy",
            "importance_ratio_min",
            "importance_ratio_mean",
            "importance_ratio_max",
            "logp_difference_mean",
        },
        0,
    ),
]


@pytest.mark.parametrize("name,era,kind,cols,n_eval", ERAS)
def test_trl_eras_parse(name, era, kind, cols, n_eval):
    log = read_quiet(DATA / name)
    assert log.format == "trl" and log.container == "trainer_state"
    assert log.meta["trl_era"] == era
    assert log.reward_std_kind == kind
    assert cols <= set(log.train.columns)
    assert {"step", "loss", "grad_norm", "learning_rate", "reward", "reward_std"} <= set(log.train.columns)
    # one row per optimizer step 1..20, the index is the step
    assert log.train.index.tolist() == list(range(1, 21))
    assert (log.train["step"].to_numpy() == log.train.index.to_numpy()).all()
    assert log.train.index.is_unique and log.train.index.is_monotonic_increasing
    assert len(log.eval) == n_eval
    # the summary row is not a training row
    assert log.summary["train_runtime"] == 123.4 and log.summary["step"] == 20
    assert "train_runtime" not in log.train.columns


@pytest.mark.parametrize("name", [e[0] for e in ERAS])
def test_trl_values_are_the_raw_values(name):
    raw = json.loads((DATA / name).read_text())["log_history"]
    log = read_quiet(DATA / name)
    for rec in raw:
        if "train_runtime" in rec or any(k.startswith("eval_") for k in rec):
            continue
        row = log.train.loc[rec["step"]]
        for key, value in rec.items():
            norm, split = normalize_key(key)
            assert split == "train"
            assert row[norm] == value, (key, norm)


def test_trl_eval_rows_are_kept_apart_with_prefix_stripped():
    log = read_quiet(DATA / "trl_0.14_trainer_state.json")
    raw = [r for r in json.loads((DATA / "trl_0.14_trainer_state.json").read_text())["log_history"]
           if "eval_reward" in r]
    assert log.eval.index.tolist() == [10, 20]
    assert log.eval.loc[10, "reward"] == raw[0]["eval_reward"]
    assert log.eval.loc[20, "reward/accuracy_reward"] == raw[1]["eval_rewards/accuracy_reward"]
    # the training row of step 10 is the training value, not the eval one
    assert log.train.loc[10, "reward"] != raw[0]["eval_reward"]
    steps, values = log.series("reward", split="eval")
    assert steps.tolist() == [10, 20]
    # the log's own eval name reads the eval table, and never the training column it maps to
    steps, values = log.series("eval_reward", split="eval")
    assert steps.tolist() == [10, 20] and values[0] == raw[0]["eval_reward"]
    assert not log.has("eval_reward") and log.has("eval_reward", "eval")
    with pytest.raises(
        DataError, match=r"'eval_reward' is an evaluation metric.*--split eval --metric reward"
    ):
        log.series("eval_reward")


def test_partial_rows_of_one_step_are_merged_not_duplicated():
    """steps_per_generation = 2: reward keys only on generation steps, in the same row as the
    optimisation keys; the eval row at the same step does not create a second training row."""
    log = read_quiet(DATA / "trl_0.19_trainer_state.json")
    rewards = log.train["reward"]
    assert rewards[1::2].isna().all() and rewards[0::2].notna().all()  # steps 2, 4, ... have none
    assert log.train["loss"].notna().all()
    # the steps that did not log the reward are not NaN values: the series is the logged steps, quietly
    steps, values = log.series("reward")
    assert steps.tolist() == list(range(1, 21, 2)) and np.isfinite(values).all()
    assert log.logged_nan == {} and log.nonfinite_steps("reward").size == 0


def test_trl_log_history_as_jsonl_equals_trainer_state():
    a = read_quiet(DATA / "trl_log_history.jsonl")
    assert a.format == "trl" and a.container == "jsonl"
    raw = [json.loads(line) for line in (DATA / "trl_log_history.jsonl").read_text().splitlines()]
    b = from_records(raw)
    pd.testing.assert_frame_equal(a.train, b.train)
    assert a.reward_std_kind == "group_mean_std"


@pytest.mark.parametrize("version,kind", [("0.14.0", "group_mean_std"), ("0.26.2", "group_mean_std"),
                                          ("0.27.0", "batch_std"), ("1.16.0", "batch_std")])
def test_trl_version_decides_reward_std_kind(version, kind):
    log = read_quiet(DATA / "trl_0.19_trainer_state.json", trl_version=version)
    assert log.reward_std_kind == kind


def test_reward_std_kind_override_and_mixed_versions():
    log = read_quiet(DATA / "trl_0.19_trainer_state.json", reward_std_kind="batch_std")
    assert log.reward_std_kind == "batch_std"
    recs = [{"step": 1, "reward": 0.1, "reward_std": 0.2, "trl_version": "0.26.0"},
            {"step": 2, "reward": 0.1, "reward_std": 0.3, "trl_version": "0.27.1"}]
    with pytest.warns(LogWarning, match="mixes TRL versions"):
        log = from_records(recs)
    assert log.reward_std_kind == "mixed"
    with pytest.raises(ParameterError, match="`reward_std_kind`"):
        read_log(DATA / "trl_0.19_trainer_state.json", reward_std_kind="mean")


def test_batch_std_detected_from_a_zero_spread_step():
    # every group zero-spread but reward_std > 0: only the batch std can do that
    recs = [
        {
            "step": s,
            "reward": 0.5,
            "reward_std": 0.5,
            "frac_reward_zero_std": f,
            "completions/mean_length": 9.0,
        }
        for s, f in [(1, 0.5), (2, 1.0), (3, 0.25)]
    ]
    assert from_records(recs).reward_std_kind == "batch_std"


def test_parse_version():
    assert parse_version("0.27.0") == (0, 27, 0)
    assert parse_version("v1.16") == (1, 16)
    assert parse_version("dev") is None


# --------------------------------------------------------------------------------------------
# Other formats
# --------------------------------------------------------------------------------------------

def test_notebook_csv_display_names():
    log = read_quiet(DATA / "notebook_progress.csv")
    assert log.format == "notebook" and log.container == "csv"
    assert {"loss", "reward", "reward_std", "completion_length", "kl", "reward/accuracy_reward",
            "reward_std/accuracy_reward"} <= set(log.train.columns)
    # "No log" is a placeholder, read as missing without a warning
    assert log.train["loss"].iloc[:2].isna().all() and log.train["loss"].iloc[2] == pytest.approx(0.0003)
    # "Validation Loss" is an eval metric, kept apart
    assert log.eval.index.tolist() == [6, 12] and "loss" in log.eval.columns
    # the single reward function is not the whole reward here: no guess about reward_std
    assert log.reward_std_kind == "unknown"
    # original names work in series()
    assert log.series("rewards / accuracy_reward / mean")[1][0] == log.train["reward/accuracy_reward"].iloc[0]


@pytest.mark.parametrize("name", ["verl_metrics.jsonl", "verl_metrics.csv"])
def test_verl(name):
    log = read_quiet(DATA / name)
    assert log.format == "verl"
    raw = [json.loads(line) for line in (DATA / "verl_metrics.jsonl").read_text().splitlines()]
    assert log.train.index.tolist() == [r["training/global_step"] for r in raw]
    assert np.allclose(log.train["reward"], [r["critic/score/mean"] for r in raw])
    assert np.allclose(log.train["entropy"], [r["actor/entropy"] for r in raw])
    assert np.allclose(log.train["ppo_kl"], [r["actor/ppo_kl"] for r in raw])
    assert np.allclose(log.train["kl"], [r["actor/kl_loss"] for r in raw])
    assert np.allclose(log.train["grad_norm"], [r["actor/grad_norm"] for r in raw])
    assert np.allclose(log.train["clip_ratio_region"], [r["actor/pg_clipfrac"] for r in raw])
    assert np.allclose(log.train["completion_length"], [r["response_length/mean"] for r in raw])
    # unrecognised keys are kept under their own names, not lost
    assert "critic/advantages/mean" in log.train.columns
    # validation metrics are eval rows
    assert log.eval.index.tolist() == [5, 10, 15]
    assert "openai/gsm8k/reward/mean@1" in log.eval.columns


def test_verl_csv_and_jsonl_agree():
    a, b = read_quiet(DATA / "verl_metrics.jsonl"), read_quiet(DATA / "verl_metrics.csv")
    pd.testing.assert_frame_equal(a.train, b.train, check_exact=False, rtol=1e-12)


def test_own_metrics_jsonl():
    log = read_quiet(DATA / "grpo_dynamics_metrics.jsonl")
    assert log.format == "grpo_dynamics"
    assert log.reward_std_kind == "batch_std"  # from the trl_version field
    assert log.meta["trl_version"] == "1.16.0"
    assert log.train.index.tolist() == list(range(1, 11))
    assert log.eval.index.tolist() == [5, 10] and log.eval["reward"].tolist() == [0.3, 0.3]
    assert "split" not in log.train.columns and "trl_version" not in log.train.columns


def test_generic_table_with_mapping():
    mapping = {"step": "iter", "reward": "acc", "kl": "my_kl", "grad_norm": "gn"}
    log = read_quiet(DATA / "generic.tsv", mapping=mapping)
    assert log.format == "generic"
    assert log.train.index.tolist() == list(range(0, 30, 2))
    assert log.train["reward"].iloc[3] == pytest.approx(0.1 + 0.02 * 6)
    with pytest.raises(DataError, match="unknown log format.*mapping="):
        read_log(DATA / "generic.tsv")
    with pytest.raises(DataError, match="'nope'.*columns: iter, acc, my_kl, gn"):
        read_log(DATA / "generic.tsv", mapping={"step": "nope"})
    # its `iter` column is found by name as the step (and said), once the reward is named
    log = read_quiet(DATA / "generic.tsv", mapping={"reward": "acc"})
    assert log.train.index.tolist() == list(range(0, 30, 2)) and "column 'iter' read as the step" in log.notes


def test_from_frame_and_named_index():
    df = pd.DataFrame({"reward": [0.1, 0.2], "kl": [0.0, 0.1]}, index=pd.Index([5, 6], name="step"))
    log = from_frame(df)
    assert log.train.index.tolist() == [5, 6]


# --------------------------------------------------------------------------------------------
# The real logs and the cases
# --------------------------------------------------------------------------------------------

def test_real_qwen_log():
    log = read_quiet(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    assert log.format == "notebook" and log.reward_std_kind == "group_mean_std"
    assert log.train.index.tolist() == list(range(1, 251))
    assert set(log.train.columns) == {"step", "loss", "reward", "reward_std", "completion_length", "kl"}
    # reward_std = 0 on several early steps (all 8 completions scored the same)
    assert int((log.train["reward_std"].iloc[:30] == 0).sum()) >= 3
    assert log.train["reward"].iloc[-50:].mean() == pytest.approx(1.44, abs=0.01)


def test_real_gemma_log():
    log = read_quiet(real_log_path("gemma3-1b-it_gsm8k_unsloth"))
    assert len(log.train) == 12
    assert sorted(log.reward_functions()) == sorted(
        ["match_format_exactly", "match_format_approximately", "check_answer", "check_numbers"])
    # the four functions add up to the reward
    funcs = log.train[[f"reward/{f}" for f in log.reward_functions()]].sum(axis=1)
    assert np.allclose(funcs, log.train["reward"], atol=1e-5)


# every verdict case's input (conftest.log_cases): format, container, training rows
CASE_LOGS = {
    "01-all-groups-zero-spread": ("trl", "trainer_state", 60),
    "02-zero-loss-but-learning": ("trl", "trainer_state", 120),
    "03-growing-oscillation": ("trl", "csv", 200),
    "06-collapse-after-high-lr": ("trl", "trainer_state", 100),
    "07-entropy-collapse-verl": ("verl", "jsonl", 150),
    "10-dead-run-memgen": ("trl", "console", 30),
    "11-no-update-ms-swift": ("trl", "jsonl", 40),
    "12-nan-late-ms-swift": ("trl", "jsonl", 60),
    "13-kl-drift-lmbook": ("grpo_dynamics", "csv", 500),
}


def test_every_case_log_is_read_here():
    assert log_cases().keys() == CASE_LOGS.keys()


@pytest.mark.parametrize("folder", sorted(CASE_LOGS))
def test_case_logs_parse(folder):
    fmt, container, n = CASE_LOGS[folder]
    path = CASES / folder / log_cases()[folder]
    if folder == "10-dead-run-memgen":  # printed dicts without a step, no progress bar: said
        with pytest.warns(LogWarning, match="carry no step"):
            log = read_log(path)
    else:
        log = read_quiet(path)
    assert (log.format, log.container, len(log.train)) == (fmt, container, n)
    assert {"reward"} <= set(log.train.columns)


def test_case06_old_keys():
    log = read_quiet(CASES / "06-collapse-after-high-lr" / "trainer_state.json")
    assert log.meta["trl_era"] == "<0.18" and log.reward_std_kind == "group_mean_std"
    assert {"completion_length", "reward/correctness", "kl", "grad_norm"} <= set(log.train.columns)


def test_case01_reward_std_is_the_group_mean():
    # reward_std 0 while the single reward function's batch std is large: per-group mean
    log = read_quiet(CASES / "01-all-groups-zero-spread" / "trainer_state.json")
    assert log.reward_std_kind == "group_mean_std"


# --------------------------------------------------------------------------------------------
# normalize_record (what the training callback writes)
# --------------------------------------------------------------------------------------------

def test_normalize_record_keys():
    rec = {"step": 7, "epoch": 0.5, "loss": 0.0, "rewards/acc/mean": 0.4, "rewards/acc/std": 0.5,
           "completions/mean_length": 31.0, "clip_ratio/region_mean": 0.01,
           "sampling/importance_sampling_ratio/max": 1.3, "frac_reward_zero_std": 0.25}
    out = normalize_record(rec)
    assert out == {"step": 7, "epoch": 0.5, "loss": 0.0, "reward/acc": 0.4, "reward_std/acc": 0.5,
                   "completion_length": 31.0, "clip_ratio_region": 0.01, "importance_ratio_max": 1.3,
                   "frac_reward_zero_std": 0.25, "split": "train"}
    assert normalize_record({"step": 7, "epoch": 0.5, "eval_reward": 0.3})["split"] == "eval"
    assert normalize_record({"step": 9, "train_runtime": 1.0, "epoch": 1.0})["split"] == "summary"
    assert normalize_record({"step": 1, "reward": np.float32(0.5)}, trl_version="0.25.0") == {
        "step": 1, "reward": 0.5, "split": "train", "trl_version": "0.25.0"}
    assert normalize_record({"step": 1, "kl": float("nan")})["kl"] is None  # valid JSON
    with pytest.raises(DataError, match="mixes splits"):
        normalize_record({"step": 1, "reward": 0.1, "eval_reward": 0.2})
    with pytest.raises(DataError):
        normalize_record([1, 2])
    with pytest.raises(ParameterError, match="`source_format`"):
        normalize_record({"step": 1}, source_format="wandb")


def test_normalized_records_round_trip(tmp_path):
    """The callback's output (normalize_record per log entry) reads back to the same table."""
    raw = json.loads((DATA / "trl_0.14_trainer_state.json").read_text())["log_history"]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(normalize_record(r, trl_version="0.14.0")) + "\n" for r in raw))
    a, b = read_quiet(path), read_quiet(DATA / "trl_0.14_trainer_state.json")
    assert a.format == "grpo_dynamics" and a.reward_std_kind == b.reward_std_kind == "group_mean_std"
    pd.testing.assert_frame_equal(a.train[b.train.columns], b.train)
    pd.testing.assert_frame_equal(a.eval[b.eval.columns], b.eval)


def test_verl_record_normalised():
    out = normalize_record({"step": 3, "critic/score/mean": 0.2, "actor/entropy": 0.5}, source_format="verl")
    assert out == {"step": 3, "reward": 0.2, "entropy": 0.5, "split": "train"}
    # a verl record holding train and val keys together is split by read_log/from_records, not here
    with pytest.raises(DataError, match="mixes splits"):
        normalize_record(
            {"step": 3, "critic/score/mean": 0.2, "val-core/gsm8k/acc": 0.1}, source_format="verl"
        )


# --------------------------------------------------------------------------------------------
# Bad input: a clear error or a warning that says what was done
# --------------------------------------------------------------------------------------------

def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


@pytest.mark.parametrize("name,text,match", [
    ("empty.json", "", "the file is empty"),
    ("blank.csv", "\n\n  \n", "the file is empty"),
    ("header.csv", "step,reward\n", "no rows"),
    ("hist.json", '{"log_history": []}', "`log_history` is empty"),
    ("list.json", "[1, 2]", "record 0 is a int"),
    ("scalar.json", "[]", "no records"),
    ("nostep.csv", "reward,kl\n0.1,0.2\n", "no step column.*mapping=\\{'step'"),
    ("unknown.csv", "a,b\n1,2\n", "unknown log format \\(columns: a, b\\)"),
    ("frac.csv", "step,reward\n1.5,0.1\n", "whole numbers"),
    ("neg.csv", "step,reward\n-1,0.1\n", ">= 0"),
    ("textsteps.csv", "step,reward\nx,0.1\ny,0.2\n", "holds no numbers"),
    ("binary.log", b"\x00\xff\xfe\x00", "not a text file"),
    ("mid.jsonl", '{"step": 1, "reward": 0.1}\n{"step": 2, "rew\n{"step": 3, "reward": 0.3}\n',
     "line 2 is not valid JSON"),
    ("arr.jsonl", '{"step": 1, "reward": 0.1}\n[1, 2]\n', "line 2 is a JSON list"),
    ("dupcol.csv", "step,reward,reward\n1,0.1,0.2\n", "more than once"),
])
def test_bad_input_is_a_clear_error(tmp_path, name, text, match):
    path = write(tmp_path, name, text)
    with pytest.raises(DataError, match=match) as info:
        read_log(path)
    assert str(path) in str(info.value) or "mapping" in str(info.value)


def test_truncated_trainer_state_names_where_it_broke(tmp_path):
    full = (CASES / "02-zero-loss-but-learning" / "trainer_state.json").read_text()
    path = write(tmp_path, "trainer_state.json", full[:3000])
    line = full[:3000].count("\n") + 1
    with pytest.raises(DataError, match=rf"trainer_state.json: invalid JSON at line {line}, .*truncated"):
        read_log(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_log(tmp_path / "nope.json")
    with pytest.raises(DataError, match="is a directory"):
        read_log(tmp_path)


def test_bad_format_argument():
    with pytest.raises(ParameterError, match="`format` must be one of"):
        read_log(DATA / "generic.tsv", format="tensorboard")


def test_broken_last_jsonl_line_is_dropped_with_a_warning(tmp_path):
    path = write(
        tmp_path, "m.jsonl", '{"step": 1, "reward": 0.1}\n{"step": 2, "reward": 0.2}\n{"step": 3, "rew'
    )
    with pytest.warns(
        LogWarning, match="line 3 \\(the last\\) is not complete JSON.*kept the 2 complete lines"
    ):
        log = read_log(path)
    assert log.train.index.tolist() == [1, 2]
    assert any("line 3" in n for n in log.notes)


def test_unordered_steps_are_sorted_with_a_warning(tmp_path):
    path = write(tmp_path, "u.csv", "step,reward,kl\n3,0.3,0.1\n1,0.1,0.1\n2,0.2,0.1\n")
    with pytest.warns(LogWarning, match="out of order.*sorted"):
        log = read_log(path)
    assert log.train.index.tolist() == [1, 2, 3] and log.train["reward"].tolist() == [0.1, 0.2, 0.3]


def test_shuffled_log_reads_the_same():
    raw = json.loads((DATA / "trl_0.23_trainer_state.json").read_text())["log_history"]
    ref = from_records(raw).train
    rng = np.random.default_rng(0)
    for _ in range(3):
        shuffled = [raw[i] for i in rng.permutation(len(raw))]
        with pytest.warns(LogWarning, match="out of order"):
            got = from_records(shuffled).train
        pd.testing.assert_frame_equal(got[ref.columns], ref)


def test_resumed_run_keeps_the_last_value_with_a_warning():
    first = [{"step": s, "loss": 0.1, "reward": 0.1 * s} for s in range(1, 6)]
    resumed = [{"step": s, "loss": 0.2, "reward": 0.2 * s} for s in range(4, 8)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = from_records(first + resumed)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "out of order" in messages[0]
    assert "2 step(s) logged more than once with different values (train; first at step 4)" in messages[1]
    assert "kept the last value" in messages[1]
    assert log.train.index.tolist() == list(range(1, 8))
    assert log.train["reward"].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.8, 1.0, 1.2, 1.4])


def test_non_number_cells_become_nan_with_a_warning(tmp_path):
    path = write(tmp_path, "n.csv", "step,reward,kl\n1,0.1,\n2,nan,0.1\n3,0.3,oops\n")
    with pytest.warns(
        LogWarning, match="1 cell\\(s\\) of 'kl' are not numbers \\(e.g. 'oops' in data row 3\\)"
    ):
        log = read_log(path)
    assert np.isnan(log.train.loc[1, "kl"]) and np.isnan(log.train.loc[3, "kl"])
    assert len(log.train) == 3  # no row lost for a NaN cell
    # an empty cell and a cell that is no number are not logged values: left out without a warning
    steps, values = log.series("kl")
    assert steps.tolist() == [2] and values.tolist() == [0.1]
    # the written `nan` of the reward at step 2 is a logged NaN, said when the series drops it
    assert {sp: {m: s.tolist() for m, s in per.items()} for sp, per in log.logged_nan.items()} == {
        "train": {"reward": [2]}}
    with pytest.warns(LogWarning, match="'reward' \\(train\\): dropped 1 NaN \\(first at step 2\\) of the 3 logged"):
        assert log.series("reward")[0].tolist() == [1, 3]


def test_rows_with_a_step_and_only_nan_are_dropped_with_a_count(tmp_path):
    # an empty row is dropped with a count; a row that logged NaN holds values (NaN the run wrote): it is
    # kept and counted once, as NaN steps, never both "dropped" and "NaN on step 3"
    csv = write(tmp_path, "r.csv", "step,reward,kl\n1,0.1,0.01\n2,,\n3,nan,nan\n4,0.4,0.04\n")
    with pytest.warns(
        LogWarning, match="dropped 1 row\\(s\\) with a step but no metric value .*step\\(s\\) 2\\)"
    ):
        log = read_log(csv)
    assert log.train.index.tolist() == [1, 3, 4]
    assert any("dropped 1 row(s)" in n for n in log.notes)
    assert log.nonfinite_steps("reward").tolist() == [3] and log.nonfinite_steps("kl").tolist() == [3]
    state = {
        "log_history": [
            {"step": 1, "reward": 0.1},
            {"step": 2, "reward": float("nan"), "kl": float("nan")},
            {"step": 3, "reward": 0.3},
        ]
    }
    path = write(tmp_path, "trainer_state.json", json.dumps(state))
    with warnings.catch_warnings():
        warnings.simplefilter("error", LogWarning)  # the NaN row is not "dropped" (it was reported so, then
        log = read_log(path)  # counted as a NaN step as well)
    assert log.train.index.tolist() == [1, 2, 3] and log.nonfinite_steps("reward").tolist() == [2]


def test_infinite_values_are_kept_in_the_table_and_dropped_by_series():
    log = from_records([{"step": 1, "grad_norm": 0.5}, {"step": 2, "grad_norm": float("inf")}])
    assert np.isinf(log.train.loc[2, "grad_norm"])
    with pytest.warns(LogWarning, match="1 infinite \\(first at step 2\\)"):
        assert log.series("grad_norm")[0].tolist() == [1]


def test_rows_without_step_are_dropped_with_a_warning():
    with pytest.warns(LogWarning, match="dropped 1 row\\(s\\) without a step"):
        log = from_records([{"step": 1, "reward": 0.1}, {"reward": 0.5}, {"step": 2, "reward": 0.2}])
    assert log.train.index.tolist() == [1, 2]


def test_series_unknown_column_lists_the_available_ones():
    log = read_quiet(DATA / "trl_0.23_trainer_state.json")
    with pytest.raises(DataError, match="no column 'accuracy'.*available: loss, grad_norm"):
        log.series("accuracy")
    # original TRL names resolve
    s1 = log.series("rewards/accuracy_reward/mean")
    s2 = log.series("reward/accuracy_reward")
    assert np.array_equal(s1[1], s2[1])


def test_example_logs_are_the_case_inputs():
    """The shipped example logs (used by the book) are byte-identical to the cases' inputs."""
    from grpo_core.runs.datasets import example_log_path, list_example_logs

    pairs = {
        "01": "01-all-groups-zero-spread/trainer_state.json",
        "02": "02-zero-loss-but-learning/trainer_state.json",
        "03": "03-growing-oscillation/log.csv",
        "06": "06-collapse-after-high-lr/trainer_state.json",
        "07": "07-entropy-collapse-verl/metrics.jsonl",
    }
    assert len(list_example_logs()) == len(pairs)
    for key, case in pairs.items():
        assert example_log_path(key).read_bytes() == (CASES / case).read_bytes()
    with pytest.raises(ParameterError, match="`name` must be one of"):
        example_log_path("99")


def test_a_text_column_asked_for_says_it_was_dropped(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("step,acc,comment\n" + "".join(f"{i},{0.1 * i},note {i}\n" for i in range(1, 8)))
    log = read_log(path, mapping={"reward": "comment"})
    with pytest.raises(
        DataError,
        match=r"no column 'reward' .*column 'reward' was dropped: it holds no numbers; "
        r"available: acc",
    ):
        log.series("reward")


def test_a_user_mapped_step_wins_over_the_format_s_own(tmp_path):
    # a notebook progress table has its own 'Step'; the user says the step is 'iter'
    path = write(
        tmp_path, "nb.csv", "Step,iter,Training Loss,reward\n1,10,0.1,0.2\n2,20,0.1,0.3\n3,30,0.1,0.4\n"
    )
    with pytest.warns(LogWarning, match="column 'Step' ignored: `mapping` names another column as the step"):
        log = read_log(path, mapping={"step": "iter"})
    assert log.train.index.tolist() == [10, 20, 30]
    assert log.train["reward"].tolist() == pytest.approx([0.2, 0.3, 0.4])


def test_an_unknown_mapping_key_is_refused_naming_the_known_ones(tmp_path):
    path = write(tmp_path, "odd.csv", "iteration,score,my_kl\n" + "".join(f"{i},{0.1 * i},0.01\n" for i in range(1, 9)))
    with pytest.raises(ParameterError, match=r"unknown key 'rewrad' \(did you mean 'reward'\?\); known keys: step, "):
        read_log(path, mapping={"step": "iteration", "rewrad": "score"})
    with pytest.raises(ParameterError, match="unknown key 'foo'"):  # would hide the KL from every check
        read_log(path, mapping={"step": "iteration", "reward": "score", "foo": "my_kl"})
    # the normalised names, and the per-reward-function families, are accepted
    log = read_log(path, mapping={"step": "iteration", "reward/acc": "score", "kl": "my_kl"})
    assert {"reward/acc", "kl"} <= set(log.train.columns)


def test_a_csv_cut_off_mid_line_drops_its_short_last_row_with_a_warning(tmp_path):
    rows = "".join(f"{i},0.0001,{0.1 * i:.3f},0.2,180.0,0.01\n" for i in range(1, 30))
    path = write(tmp_path, "cut.csv", "step,loss,reward,reward_std,completion_length,kl\n" + rows + "30,0.000200,9")
    with pytest.warns(LogWarning, match=r"line 31 \(the last\) has fewer fields than the other rows' 6 .*dropped it, "
                                        r"kept the 29 complete row\(s\)"):
        log = read_log(path)
    assert log.train.index.tolist() == list(range(1, 30)) and log.train["reward"].max() < 9
    # a short row mid-file is skipped and counted; too many are an error
    mid = write(tmp_path, "mid.csv", "step,loss,reward\n" + "".join(
        f"{i},0.1,0.5\n" if i != 7 else "7,0.1\n" for i in range(1, 30)))
    with pytest.warns(LogWarning, match=r"skipped 1 corrupt line\(s\) of 29 \(rows with fewer fields than the "
                                        r"others; line\(s\) 8\)"):
        assert 7 not in read_log(mid).train.index
    rows = "".join(f"{i},0.1,0.5\n" if i % 4 else f"{i},0.1\n" for i in range(1, 30))
    with pytest.raises(DataError, match="lines are broken"):  # a quarter of the rows short: not a log to trust
        read_log(write(tmp_path, "bad.csv", "step,loss,reward\n" + rows))
    # a header naming a column that no row writes is a table, not cut-off rows: read as before
    extra = write(tmp_path, "extra.csv", "step,loss,reward,extra\n" + "".join(f"{i},0.1,0.5\n" for i in range(1, 30)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", LogWarning)
        assert read_log(extra).train.index.tolist() == list(range(1, 30))


def test_a_column_dropped_for_holding_no_number_says_so():
    log = from_records([{"step": s, "reward": 0.1 * s, "entropy": float("nan") if s % 2 else None}
                        for s in range(1, 20)], format="trl")
    assert log.dropped["train"]["entropy"] == "every value is empty or NaN"
    with pytest.raises(DataError, match="column 'entropy' was dropped: every value is empty or NaN"):
        log.series("entropy")


def test_a_semicolon_csv_with_decimal_commas_keeps_its_numbers(tmp_path):
    """A spreadsheet export ("step;train/reward", "1;2,41"): the reward was read as text and dropped as
    holding no numbers. Decimal commas are read as decimal points and the log says so; a semicolon file
    with decimal points reads as before."""
    comma = tmp_path / "comma.csv"
    comma.write_text("\ufeffstep;train/reward;train/kl\n" + "".join(f"{i};{1 + i / 100:.2f};0,0\n".replace(".", ",")
                                                                     for i in range(1, 31)), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = read_log(comma)
    t, y = log.series("reward")
    assert t.size == 30 and y[0] == pytest.approx(1.01) and y[-1] == pytest.approx(1.30)
    assert any("decimal commas" in n for n in log.notes)
    dot = tmp_path / "dot.csv"
    dot.write_text("step;reward\n" + "".join(f"{i};{1 + i / 100:.2f}\n" for i in range(1, 31)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = read_log(dot)
    assert log.series("reward")[1][-1] == pytest.approx(1.30) and not any("decimal commas" in n for n in log.notes)


def test_a_given_format_the_columns_contradict_is_kept_with_a_warning(tmp_path):
    """`--format verl` on a TRL log was read and labelled verl without a word."""
    path = tmp_path / "trl.jsonl"
    path.write_text("".join(json.dumps({"step": i, "reward": 0.1 * i, "completions/mean_length": 100.0,
                                        "kl": 0.01, "reward_std": 0.3}) + "\n" for i in range(1, 21)))
    assert read_log(path).format == "trl"
    with pytest.warns(LogWarning, match="read as format 'verl' as asked, but its columns look like 'trl'"):
        assert read_log(path, format="verl").format == "verl"


def test_a_utf16_csv_with_its_byte_order_mark_reads(tmp_path):
    """Windows PowerShell writes UTF-16 with a byte-order mark: it was 'not a text file (byte 0 is not UTF-8)'."""
    path = tmp_path / "ps.csv"
    path.write_bytes(("step,reward\n" + "".join(f"{i},{i / 20}\n" for i in range(1, 21))).encode("utf-16"))
    assert read_log(path).series("reward")[1][-1] == pytest.approx(1.0)
