"""Every raw file of grpo_core/data/real_runs reads as committed, and matches its parsed_rows.csv.

The 20 runs (README.md of that folder) are logs other people committed: TRL console logs, a Kaggle
stream log, ms-swift console output, verl/ROLL JSONL, a W&B curve export of two runs, trainer_state.json,
custom-loop JSON/JSONL, Unsloth progress tables. ``read_log`` gets the raw file and nothing else (no
``mapping``); only the two runs sharing one file name the run they are (``meta.json``'s ``run_filter``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from grpo_core.errors import ParameterError
from grpo_core.runs import datasets
from grpo_core.runs.logs import LogWarning, read_log
from grpo_dynamics.cli import main

RUNS = datasets.real_runs()

# normalised metric -> the raw names it has in the runs' parsed_rows.csv (first present is compared)
METRICS = {
    "loss": ("loss", "Training Loss", "actor/pg_loss"),
    "kl": ("kl", "actor/kl_loss", "approx_kl"),
    "entropy": ("entropy", "actor/entropy", "actor/entropy_loss"),
    "grad_norm": ("grad_norm", "actor_train/grad_norm"),
    "completion_length": ("completions/mean_length", "completion_length", "response_length/mean",
                          "avg_gen_tokens", "length/mean", "completions / mean_length"),
    "clipped_ratio": ("completions/clipped_ratio", "completions / clipped_ratio", "length/cap_hit_rate"),
    "frac_reward_zero_std": ("frac_reward_zero_std",),
}
EXPECTED_FORMAT = {
    "01": "trl", "03": "trl", "04": "trl", "07": "trl", "08": "trl", "10": "trl", "11": "verl",
    "13": "verl", "14": "verl", "16": "trl", "18": "trl", "20": "trl", "22": "trl",
}
CONTAINER = {"01": "console", "03": "console", "04": "console", "07": "stream", "10": "console",
             "16": "console", "22": "console", "08": "jsonl", "11": "jsonl", "13": "csv", "18": "json",
             "20": "trainer_state"}


def expected_steps(run: datasets.RealRun, rows: pd.DataFrame) -> np.ndarray:
    """The step of each parsed row: its own step column, else (row + 1) * the logging interval."""
    for col in ("step", "Step", "system/step"):
        if col in rows.columns:
            return rows[col].to_numpy(dtype=np.int64)
    if "global_step/max_steps" in rows.columns:
        return rows["global_step/max_steps"].str.split("/").str[0].astype(np.int64).to_numpy()
    return (rows["row"].to_numpy(dtype=np.int64) + 1) * int(run.meta["logging_interval_steps"])


def read_quietly(run: datasets.RealRun):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = read_log(run.path, run=run.run)
    return log, [str(w.message) for w in caught if issubclass(w.category, LogWarning)]


def test_there_are_20_runs_and_the_accessor_names_them():
    assert len(RUNS) == 20 and RUNS[0] == "01-Sunshine535-rho1-collapse"
    run = datasets.real_run("01")
    assert run.run_id == RUNS[0] and run.path.name == "rho1.00_seed42.log" and run.path.is_file()
    assert run.meta["reward_metric"] == "reward" and run.meta["group_size_G"] == 4
    assert run.parsed_rows_path.is_file() and run.run is None
    assert datasets.real_run("14-memoryoffish-game24-sft").run == "arm=SFT-GRPO"
    with pytest.raises(ParameterError, match="01-Sunshine535-rho1-collapse"):
        datasets.real_run("99")


@pytest.mark.parametrize("run_id", RUNS)
def test_raw_file_reads_as_committed_and_matches_parsed_rows(run_id):
    run = datasets.real_run(run_id)
    log, warned = read_quietly(run)
    assert warned == [], warned  # these files need no repair: nothing merged, dropped or renumbered
    rows = pd.read_csv(run.parsed_rows_path, low_memory=False)
    reward_col = run.meta["reward_metric"]
    rows = rows[rows[reward_col].notna()]
    steps = expected_steps(run, rows)
    train = log.train
    assert len(train) == len(rows) == run.meta["logged_rows"]
    np.testing.assert_array_equal(train["step"].to_numpy(), steps)
    np.testing.assert_allclose(train["reward"].to_numpy(), rows[reward_col].to_numpy(dtype=float),
                               rtol=0, atol=1e-9)
    compared = []
    for name, raw_names in METRICS.items():
        raw = next((c for c in raw_names if c in rows.columns), None)
        if raw is None:
            continue
        assert name in train.columns, (name, raw)
        np.testing.assert_allclose(train[name].to_numpy(dtype=float), rows[raw].to_numpy(dtype=float),
                                   rtol=0, atol=1e-9, equal_nan=True, err_msg=name)
        compared.append(name)
    number = run_id.split("-", 1)[0]
    if number in EXPECTED_FORMAT:
        assert log.format == EXPECTED_FORMAT[number]
    if number in CONTAINER:
        assert log.container == CONTAINER[number]
    # the metrics each run is known to log (index.csv) were found
    if run.meta.get("metrics_present") and "frac_reward_zero_std" in run.meta["metrics_present"]:
        assert "frac_reward_zero_std" in compared


def test_console_logs_number_the_steps_by_the_progress_bar():
    # run 01 (Sunshine535/nips-grpo-dynamics): logging_steps=5, stdout buffered after the bars
    log, _ = read_quietly(datasets.real_run("01"))
    assert log.train["step"].tolist()[:3] == [5, 10, 15] and log.train["step"].iloc[-1] == 200
    assert "redraw" in " ".join(log.notes)
    assert log.summary["step"] == 200 and log.summary["train_runtime"] == pytest.approx(814.2689)


def test_the_two_runs_of_one_w_and_b_curve_file_are_told_apart():
    # runs 13/14 (memoryoffish/nlp_grpo): one CSV, column `arm`; without a choice it is an error
    run13, run14 = datasets.real_run("13"), datasets.real_run("14")
    assert run13.path.read_bytes() == run14.path.read_bytes()
    with pytest.raises(Exception, match="holds 2 runs in column 'arm'.*pure-GRPO.*SFT-GRPO.*--run"):
        read_log(run13.path)
    a, b = read_log(run13.path, run="pure-GRPO"), read_log(run14.path, run="arm=SFT-GRPO")
    assert a.train["reward"].iloc[0] == pytest.approx(0.083) and b.train["reward"].iloc[0] == pytest.approx(0.269)
    assert a.eval["test_score/game24"].iloc[0] == pytest.approx(0.061)
    with pytest.raises(Exception, match="not a label of column 'arm'"):
        read_log(run13.path, run="no-such-arm")


@pytest.mark.parametrize("command", ["diagnose", "fit"])
@pytest.mark.parametrize("run_id", RUNS)
def test_the_commands_read_the_raw_files(capsys, command, run_id):
    # whatever the verdict (another issue's work), the file is read: exit 2 is the bad-input code
    run = datasets.real_run(run_id)
    argv = [command, str(run.path)] + (["--run", run.run] if run.run else [])
    if command == "diagnose":
        argv.append("--no-forecast")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    assert str(run.path) in out
