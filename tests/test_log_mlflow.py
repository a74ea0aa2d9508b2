"""MLflow file stores (``mlruns/``): the reader against a store MLflow wrote, and against the layout's edge cases.

The committed store (``grpo_core/data/tracker_runs/50-mlflow-...``) was written by MLflow 3.18 from two real GRPO
runs' console logs, as ``MLflowCallback`` logs a run (its ``SOURCE.md``); the values read are checked against the
metric files' lines and against the same runs' console logs. Edge cases are stores written by hand in MLflow's
layout (``mlflow/store/tracking/file_store.py``).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from grpo_core.errors import DataError, SeveralRunsError
from grpo_core.runs import datasets
from grpo_core.runs.logs import LogWarning, mlflow_store, read_log
from grpo_dynamics.cli import main

STORE = "50-mlflow-Caitlyn-Yin-grpo-norm-replay"
EXPERIMENT = "479939085428702959"
STANDARD = "483dd62ef74d488780ad6dddafae881f"  # easy_standard, started first
NO_STD = "0d118e1973b149308bbd0d4d8df0a95c"  # easy_no_std


def store() -> Path:
    return datasets.tracker_run_path(STORE)


def run_dir(run_id: str, root: Path | None = None) -> Path:
    return (root or store()) / "mlruns" / EXPERIMENT / run_id


def lines(run_id: str, key: str) -> dict[int, float]:
    """step -> value of a metric file, by reading its lines (``timestamp value step``)."""
    out = {}
    for ln in (run_dir(run_id) / "metrics" / key).read_text().splitlines():
        _, value, step = ln.split(" ")
        out[int(step)] = float(value)
    return out


def quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        return read_log(path, **kw)


# --- the committed store ----------------------------------------------------------------------------------

@pytest.mark.parametrize("run_id, run", [(STANDARD, "easy_standard"), (NO_STD, "easy_no_std")])
def test_the_store_reads_with_no_mapping(run_id, run):
    log = quiet(store(), run=run)
    assert log.container == "mlflow" and log.format == "trl"
    assert len(log.train) == 200
    assert log.train.index[0] == 5 and log.train.index[-1] == 1000
    assert log.train.index.tolist() == list(range(5, 1001, 5))
    for key, column in (("reward", "reward"), ("kl", "kl"), ("reward_std", "reward_std"),
                        ("rewards/correctness_reward_func_qa/mean", "reward/correctness_reward_func_qa"),
                        ("completions/mean_length", "completion_length"), ("entropy", "entropy")):
        want = lines(run_id, key)
        assert len(want) == 200
        for step in (5, 500, 1000):
            assert log.train.loc[step, column] == want[step], (key, step)
    assert log.meta["max_steps"] == 1000
    assert log.meta["mlflow_run"]["run_id"] == run_id and log.meta["mlflow_run"]["status"] == "FINISHED"


def test_values_at_steps_as_the_files_hold_them():
    log = quiet(store(), run=STANDARD)
    # metrics/reward lines 1, 100 and 200: "<ts> 0.3875 5", "<ts> 1.4125 500", "<ts> 1.2375 1000"
    assert log.train.loc[[5, 500, 1000], "reward"].tolist() == [0.3875, 1.4125, 1.2375]
    assert log.train.loc[[5, 1000], "reward/correctness_reward_func_qa"].tolist() == [0.25, 0.75]
    assert log.train.loc[5, "kl"] == 0.0005064928164529193 and log.train.loc[1000, "kl"] == 0.09227355321636424


@pytest.mark.parametrize("run_id, real", [(STANDARD, "04"), (NO_STD, "22")])
def test_the_store_holds_what_the_console_log_holds(run_id, real):
    """The run read from MLflow equals the same run read from its console log, column by column."""
    log = quiet(store(), run=run_id)
    ref = quiet(datasets.real_run(real).path)
    assert log.train.index.tolist() == ref.train.index.tolist()
    assert sorted(log.train.columns) == sorted(ref.train.columns)
    for col in ref.train.columns:
        np.testing.assert_array_equal(log.train[col].to_numpy(float), ref.train[col].to_numpy(float), err_msg=col)


def test_the_final_summary_repeating_epoch_needs_no_warning():
    # MLflowCallback logs the trainer's final summary at the last step: `epoch` has two equal lines at step 1000
    epoch = (run_dir(STANDARD) / "metrics" / "epoch").read_text().splitlines()
    assert [ln.split(" ")[2] for ln in epoch[-2:]] == ["1000", "1000"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LogWarning)
        log = read_log(store(), run=STANDARD, reward_std_kind="group_mean_std")
    assert log.train.loc[1000, "epoch"] == 0.21
    assert not any("logged again" in n for n in log.notes)


def test_several_runs_are_listed_and_one_chosen():
    with pytest.raises(SeveralRunsError) as info:
        read_log(store())
    assert info.value.runs == [STANDARD, NO_STD]
    msg = str(info.value)
    assert (f"an MLflow store of 2 runs (1: grpo_norm-final3_difficulty/easy_standard ({STANDARD}); "
            f"2: grpo_norm-final3_difficulty/easy_no_std ({NO_STD})); choose one with run='{NO_STD}'") in msg
    assert "\n" not in msg
    assert mlflow_store.run_names(store()) == [STANDARD, NO_STD]
    for run, want in (("1", STANDARD), ("last", NO_STD), ("first", STANDARD), (NO_STD, NO_STD),
                      (STANDARD[:8], STANDARD), ("easy_no_std", NO_STD),
                      ("grpo_norm-final3_difficulty/easy_standard", STANDARD)):
        log = quiet(store(), run=run)
        assert log.meta["mlflow_run"]["run_id"] == want, run
        assert any("left out 1 other run(s)" in n for n in log.notes)
    with pytest.raises(DataError, match=r"`run` 'easy' is not one of the MLflow runs \(1: .*easy_no_std.*\); "
                                        r"give a run id, a run name, a number 1..2 or 'last'"):
        read_log(store(), run="easy")
    with pytest.raises(DataError, match="not one of the MLflow runs"):
        read_log(store(), run=STANDARD[:6])  # a prefix shorter than 8 characters names no run


@pytest.mark.parametrize("where", ["experiment", "run", "metrics", "project"])
def test_an_experiment_a_run_or_a_folder_holding_mlruns(where, tmp_path):
    if where == "project":  # a folder holding mlruns/ (nothing else): the store
        path = store()
        assert mlflow_store.matches(path)
        assert len(mlflow_store.store_runs(path)) == 2
        return
    path = {"experiment": store() / "mlruns" / EXPERIMENT, "run": run_dir(NO_STD),
            "metrics": run_dir(NO_STD) / "metrics"}[where]
    log = quiet(path, run="last" if where == "experiment" else None)
    assert log.meta["mlflow_run"]["run_id"] == NO_STD and len(log.train) == 200
    assert log.meta["mlflow_run"]["experiment"] == "grpo_norm-final3_difficulty"


def test_the_cli_diagnoses_the_store(capsys):
    # without --run every run of the store is diagnosed, one JSON record each, named by its run name
    assert main(["diagnose", str(store()), "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["run"] for r in records] == [STANDARD, NO_STD]
    assert [r["label"].rsplit(" [", 1)[1] for r in records] == ["easy_standard]", "easy_no_std]"]
    assert all(r["steps"] == [5, 1000] and r["verdict"] == "healthy" for r in records)
    rc = main(["diagnose", str(store()), "--json", "--run", "easy_standard"])
    assert rc not in (2, 70)
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == [5, 1000]
    assert any("read the MLflow run grpo_norm-final3_difficulty/easy_standard" in n for n in out["notes"])


# --- a store MLflowCallback wrote (TRL SFTTrainer, not GRPO) ------------------------------------------------

SFT = "51-mlflow-ssjs545688-drone-qwen3-sft"
KILLED = "7ab3201b89d749a8b8b7b0fa3e2966b0"  # status RUNNING, end_time null: killed at about step 930
FINISHED = "1deddf808cb440c7b32194fee17d9e96"  # status FINISHED, 6250 steps


def sft_lines(run_id: str, key: str) -> dict[int, float]:
    path = datasets.tracker_run_path(SFT) / "mlruns" / "0" / run_id / "metrics" / key
    return {int(s): float(v) for _, v, s in (ln.split(" ") for ln in path.read_text().splitlines())}


def test_the_sft_store_lists_two_runs_of_one_name():
    path = datasets.tracker_run_path(SFT)
    with pytest.raises(SeveralRunsError) as info:
        read_log(path)
    assert info.value.runs == [KILLED, FINISHED]  # in the order they started
    assert (f"1: Default/capable-auk-759 ({KILLED}); 2: Default/capable-auk-759 ({FINISHED})") in str(info.value)
    with pytest.raises(DataError, match="`run` 'capable-auk-759' names 2 runs"):
        read_log(path, run="capable-auk-759")


def test_the_killed_sft_run_reads_with_no_mapping():
    log = quiet(datasets.tracker_run_path(SFT), run=KILLED[:8])
    assert log.container == "mlflow" and log.format == "trl"
    assert len(log.train) == 93 and log.train.index[0] == 10 and log.train.index[-1] == 930
    for key in ("loss", "grad_norm", "learning_rate", "entropy", "mean_token_accuracy", "num_tokens", "epoch"):
        want = sft_lines(KILLED, key)
        assert log.train[key].tolist() == [want[s] for s in range(10, 931, 10)], key
    # the file lines: "1789544011054 4.6325 10", "1789544527185 0.077 930", "... 8.321194648742676 10"
    assert log.train.loc[[10, 930], "loss"].tolist() == [4.6325, 0.077]
    assert log.train.loc[10, "grad_norm"] == 8.321194648742676
    assert log.meta["mlflow_run"]["status"] == "RUNNING"
    assert any("the run's status is RUNNING" in n for n in log.notes)
    assert "max_steps" not in log.meta  # not among the params kept


def test_the_finished_sft_run_keeps_its_final_summary_apart():
    log = quiet(datasets.tracker_run_path(SFT), run="last")
    assert log.meta["mlflow_run"]["run_id"] == FINISHED
    assert len(log.train) == 625 and log.train.index[0] == 10 and log.train.index[-1] == 6250
    want = sft_lines(FINISHED, "loss")
    assert log.train.loc[[10, 1500, 6250], "loss"].tolist() == [want[10], want[1500], want[6250]] == [4.6284, 0.1155,
                                                                                                   0.0715]
    assert list(log.train.columns) == ["step", "loss"]
    assert any("kept the final summary row" in n for n in log.notes)


def test_the_cli_diagnoses_the_killed_sft_run(capsys):
    rc = main(["diagnose", str(datasets.tracker_run_path(SFT)), "--json", "--run", KILLED])
    assert rc not in (2, 70)
    assert json.loads(capsys.readouterr().out)["steps"] == [10, 930]


# --- stores written by hand in MLflow's layout -------------------------------------------------------------

def write_run(root: Path, experiment: str, run_id: str, metrics: dict[str, list[tuple[int, float, int]]], *,
              name: str | None = None, start: int = 1_700_000_000_000, params: dict | None = None,
              stage: str = "active", exp_name: str | None = None) -> Path:
    """One run in MLflow's file layout: ``<root>/<experiment>/<run_id>/{meta.yaml,metrics/<key>,params,tags}``."""
    exp = root / experiment
    exp.mkdir(parents=True, exist_ok=True)
    if not (exp / "meta.yaml").exists():
        (exp / "meta.yaml").write_text(f"artifact_location: file://{exp}\nexperiment_id: '{experiment}'\n"
                                       f"lifecycle_stage: active\nname: {exp_name or 'exp' + experiment}\n")
    run = exp / run_id
    (run / "metrics").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (run / "meta.yaml").write_text(
        f"artifact_uri: file://{run}/artifacts\nend_time: {start + 1000}\nentry_point_name: ''\n"
        f"experiment_id: '{experiment}'\nlifecycle_stage: {stage}\nrun_id: {run_id}\nrun_name: {name or ''}\n"
        f"run_uuid: {run_id}\nsource_type: 4\nstart_time: {start}\nstatus: 3\ntags: []\nuser_id: u\n")
    if name:
        (run / "tags" / "mlflow.runName").write_text(name)
    for k, v in (params or {}).items():
        (run / "params" / k).write_text(str(v))
    for key, rows in metrics.items():
        f = run / "metrics" / key
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(f"{ts} {value} {step}\n" for ts, value, step in rows))
    return run


def trl_rows(n: int = 6, scale: float = 0.1) -> dict[str, list[tuple[int, float, int]]]:
    t = 1_700_000_000_000
    return {"reward": [(t + s, scale * s, s) for s in range(1, n + 1)],
            "rewards/accuracy_reward/mean": [(t + s, scale * s, s) for s in range(1, n + 1)],
            "rewards/accuracy_reward/std": [(t + s, 0.3, s) for s in range(1, n + 1)],
            "kl": [(t + s, 0.001 * s, s) for s in range(1, n + 1)],
            "loss": [(t + s, 0.0, s) for s in range(1, n + 1)]}


def test_nested_keys_and_params(tmp_path):
    root = tmp_path / "mlruns"
    write_run(root, "0", "a" * 32, trl_rows(), name="grpo-run", params={"max_steps": 300, "learning_rate": 1e-6})
    log = quiet(root)
    assert log.format == "trl" and log.train.index.tolist() == list(range(1, 7))
    assert log.train["reward/accuracy_reward"].tolist() == [0.1 * s for s in range(1, 7)]
    assert log.train["reward_std/accuracy_reward"].tolist() == [0.3] * 6
    assert log.meta["max_steps"] == 300
    assert mlflow_store.run_names(root) == ["."]  # one run


def test_max_steps_minus_one_is_not_a_length(tmp_path):
    root = tmp_path / "mlruns"
    write_run(root, "0", "a" * 32, trl_rows(), params={"max_steps": -1})
    assert "max_steps" not in quiet(root).meta


def test_empty_experiments_deleted_runs_and_the_trash_are_left_out(tmp_path):
    root = tmp_path / "mlruns"
    (root / "0").mkdir(parents=True)
    (root / "0" / "meta.yaml").write_text("artifact_location: x\nexperiment_id: '0'\nlifecycle_stage: active\n"
                                          "name: Default\n")
    write_run(root, "5", "b" * 32, trl_rows(), name="kept")
    write_run(root, "5", "c" * 32, trl_rows(scale=0.2), name="deleted", stage="deleted")
    write_run(root / ".trash", "7", "d" * 32, trl_rows(scale=0.3), name="trashed")
    runs = mlflow_store.store_runs(root)
    assert [r.run_name for r in runs] == ["kept"]
    log = quiet(root)
    assert log.train["reward"].tolist() == pytest.approx([0.1 * s for s in range(1, 7)], abs=1e-15)


def test_runs_are_listed_in_the_order_they_started(tmp_path):
    root = tmp_path / "mlruns"
    write_run(root, "1", "f" * 32, trl_rows(scale=0.1), name="second", start=1_700_000_500_000, exp_name="e")
    write_run(root, "1", "0" * 32, trl_rows(scale=0.2), name="third", start=1_700_000_900_000, exp_name="e")
    write_run(root, "2", "9" * 32, trl_rows(scale=0.3), name="first", start=1_700_000_000_000, exp_name="g")
    assert [r.label for r in mlflow_store.store_runs(root)] == [
        f"g/first ({'9' * 32})", f"e/second ({'f' * 32})", f"e/third ({'0' * 32})"]
    assert quiet(root, run="last").train["reward"].iloc[0] == 0.2
    assert quiet(root, run="2").meta["mlflow_run"]["run_name"] == "second"


def test_two_runs_of_one_name_need_the_run_id(tmp_path):
    root = tmp_path / "mlruns"
    write_run(root, "1", "a" * 32, trl_rows(), name="same", start=1)
    write_run(root, "1", "b" * 32, trl_rows(), name="same", start=2)
    with pytest.raises(DataError, match="`run` 'same' names 2 runs .*give the run id"):
        read_log(root, run="same")
    assert quiet(root, run="b" * 32).meta["mlflow_run"]["run_id"] == "b" * 32


def test_a_value_logged_twice_at_a_step_keeps_the_later_timestamp(tmp_path):
    rows = trl_rows()
    t = 1_700_000_000_000
    # a job resumed from a checkpoint logs steps 4..6 again, later, with other values; one line of step 2 is older
    rows["reward"] += [(t + 100 + s, 0.9, s) for s in (4, 5, 6)] + [(t - 5, 0.7, 2)]
    write_run(tmp_path / "mlruns", "0", "a" * 32, rows)
    with pytest.warns(LogWarning, match=r"4 value\(s\) of 1 metric\(s\) logged again with another value at a step "
                                        r"already logged .*first: 'reward' at step 2\); kept, at each step, the value "
                                        r"with the later timestamp"):
        log = read_log(tmp_path / "mlruns")
    assert log.train["reward"].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.9, 0.9, 0.9], abs=1e-15)


def test_a_line_that_is_not_timestamp_value_step_is_refused(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(store(), root)
    f = run_dir(STANDARD, root) / "metrics" / "rewards" / "correctness_reward_func_qa" / "mean"
    text = f.read_text().splitlines(keepends=True)
    text[41] = "1796510209990 0.5\n"  # line 42: no step
    f.write_text("".join(text))
    with pytest.raises(DataError) as info:
        read_log(root, run=STANDARD)
    msg = str(info.value)
    assert ("metrics/rewards/correctness_reward_func_qa/mean line 42: '1796510209990 0.5' is not "
            "'timestamp value step'") in msg and "without a step" in msg
    text[41] = "1796510209990 nan? 210\n"
    f.write_text("".join(text))
    with pytest.raises(DataError, match=r"mean line 42: '1796510209990 nan\? 210' is not 'timestamp value step'"):
        read_log(root, run=STANDARD)


def test_a_last_line_cut_off_is_dropped_with_a_warning(tmp_path):
    rows = trl_rows()
    run = write_run(tmp_path / "mlruns", "0", "a" * 32, rows)
    f = run / "metrics" / "reward"
    f.write_text(f.read_text() + "1700000000007 0.")  # the write of step 7 cut off
    with pytest.warns(LogWarning, match=r"metrics/reward: the last line '1700000000007 0\.' is cut off"):
        log = read_log(tmp_path / "mlruns")
    assert log.train.index.tolist() == list(range(1, 7))


def test_logged_nan_is_kept_as_logged(tmp_path):
    rows = trl_rows()
    rows["kl"][2] = (rows["kl"][2][0], float("nan"), 3)  # MLflow writes Python's "nan"
    run = write_run(tmp_path / "mlruns", "0", "a" * 32, rows)
    assert " nan 3\n" in (run / "metrics" / "kl").read_text()
    log = quiet(tmp_path / "mlruns")
    assert np.isnan(log.train.loc[3, "kl"]) and log.train.loc[4, "kl"] == 0.004
    assert log.logged_nan["train"]["kl"].tolist() == [3]


def test_a_store_with_no_metrics_is_refused(tmp_path):
    run = write_run(tmp_path / "mlruns", "0", "a" * 32, {}, name="empty")
    with pytest.raises(DataError, match=r"the MLflow run exp0/empty \(a{32}\) has no metrics"):
        read_log(tmp_path / "mlruns")
    (run / "metrics" / "reward").write_text("")
    with pytest.raises(DataError, match="has 1 metric file\\(s\\) but no value in them"):
        read_log(tmp_path / "mlruns")


def test_a_store_with_no_run_is_refused(tmp_path):
    root = tmp_path / "mlruns"
    (root / "0").mkdir(parents=True)
    (root / "0" / "meta.yaml").write_text("experiment_id: '0'\nname: Default\n")
    assert mlflow_store.matches(root)
    with pytest.raises(DataError, match="an MLflow store with no run"):
        read_log(root)


def test_metric_files_larger_than_the_limit_are_refused(monkeypatch):
    monkeypatch.setenv("GRPO_DYNAMICS_MAX_LOG_BYTES", "100000")
    with pytest.raises(DataError, match="MiB of MLflow metric files, larger than the 0 MiB a log may be"):
        read_log(store(), run="last")


def test_other_folders_are_not_mlflow(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.yaml").write_text("name: something else\n")
    assert not mlflow_store.matches(tmp_path / "a")
    assert not mlflow_store.matches(tmp_path)
    assert not mlflow_store.matches(datasets.real_run("04").path)  # a file
