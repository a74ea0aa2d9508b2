"""Each log format people have, in a small case cut from a real run (named in each test), and bad input.

The real runs are in grpo_core/data/real_runs (``datasets.real_run``); each case takes a piece of a raw
file as committed (the first dicts of a console log, the first records of a stream log, rows of a
table) or writes the same values in the shape of another tool (ms-swift ``logging.jsonl``, verl console
lines, a W&B export) and checks the steps and values the reader gives.
"""

from __future__ import annotations

import ast
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from grpo_core.errors import DataError
from grpo_core.runs import datasets
from grpo_core.runs.logs import LogWarning, read_log
from grpo_dynamics.cli import main


def raw_text(run_id: str) -> str:
    return datasets.real_run(run_id).path.read_text(encoding="utf-8")


def parsed(run_id: str) -> pd.DataFrame:
    return pd.read_csv(datasets.real_run(run_id).parsed_rows_path, low_memory=False)


def dict_lines(run_id: str) -> list[str]:
    """The printed metric dicts of a console log, verbatim."""
    return [m.group() for m in re.finditer(r"\{'loss'[^{}\n]*\}", raw_text(run_id))]


def write(tmp_path, name: str, content, *, bom: bool = False, crlf: bool = False):
    path = tmp_path / name
    if isinstance(content, str):
        if crlf:
            content = content.replace("\r\n", "\n").replace("\n", "\r\n")
        content = (("\ufeff" if bom else "") + content).encode("utf-8")
    path.write_bytes(content)
    return path


def read_silent(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", LogWarning)
        return read_log(path, **kw)


def one_line_error(path, match: str, **kw) -> str:
    with pytest.raises(DataError, match=match) as info:
        read_log(path, **kw)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


# --- TRL console logs -------------------------------------------------------------------------

def test_trl_console_log_cut_while_running(tmp_path):
    # run 04 (Caitlyn-Yin/grpo_norm easy_standard.log), cut after its 3rd dict: the bar is 26 steps
    # ahead of the buffered dicts, the redraws at 5, 10, 15 still number them
    text = raw_text("04")
    third = [m.end() for m in re.finditer(r"\{'loss'[^{}\n]*\}", text)][2]
    log = read_silent(write(tmp_path, "easy_standard.log", text[:third] + "\n"))
    assert log.format == "trl" and log.container == "console"
    assert log.train["step"].tolist() == [5, 10, 15]
    rows = parsed("04")
    np.testing.assert_allclose(log.train["reward"], rows["reward"][:3], atol=1e-12)
    np.testing.assert_allclose(log.train["kl"], rows["kl"][:3], atol=1e-12)
    assert "buffered" in " ".join(log.notes)


def test_trl_console_dicts_without_a_bar_are_numbered_with_a_warning(tmp_path):
    # run 10 (wallacexuhanxiao/FinQA-tool-calling-GRPO-GSPO): three dicts pasted on their own
    path = write(tmp_path, "pasted.log", "\n".join(dict_lines("10")[:3]) + "\n")
    with pytest.warns(LogWarning, match="3 printed metric dicts carry no step.*numbered them 1..3"):
        log = read_log(path)
    assert log.train["step"].tolist() == [1, 2, 3]
    assert log.train["reward"].tolist() == pytest.approx(parsed("10")["reward"][:3].tolist(), abs=1e-12)


def test_trl_console_eval_dicts_are_kept_apart(tmp_path):
    # run 16 (T-Sunm/VINLE-GRPO, ms-swift console) with an evaluation dict printed after step 2
    lines = dict_lines("16")[:3]
    lines.insert(2, "{'eval_loss': 0.5, 'eval_reward': 2.9, 'epoch': 0.01, 'global_step/max_steps': '2/200'}")
    log = read_silent(write(tmp_path, "log_check.txt", "\n".join(lines) + "\n"))
    assert log.train["step"].tolist() == [1, 2, 3]
    assert log.train["reward"].tolist() == pytest.approx(parsed("16")["reward"][:3].tolist(), abs=1e-12)
    assert log.eval["step"].tolist() == [2] and log.eval["reward"].iloc[0] == 2.9


def test_unsloth_eval_keys_without_prefix_do_not_overwrite_training_values(tmp_path):
    # run 16's dicts with an Unsloth-style evaluation dict (no `eval_` prefix) at step 2
    lines = dict_lines("16")[:3]
    lines.insert(2, "{'loss': 0.7, 'reward': 9.0, 'runtime': 12.5, 'samples_per_second': 0.3, "
                    "'steps_per_second': 0.1, 'epoch': 0.01, 'global_step/max_steps': '2/200'}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = read_log(write(tmp_path, "unsloth.log", "\n".join(lines) + "\n"))
    assert not any("resumed" in str(w.message) or "more than once" in str(w.message) for w in caught)
    rows = parsed("16")
    assert log.train.loc[2, "reward"] == pytest.approx(rows["reward"][1], abs=1e-12)
    assert log.train.loc[2, "loss"] == pytest.approx(rows["loss"][1], abs=1e-12)
    assert log.eval.loc[2, "reward"] == 9.0 and log.eval.loc[2, "runtime"] == 12.5
    assert "without the `eval_` prefix" in " ".join(log.notes)


def test_a_cut_off_dict_is_counted(tmp_path):
    # run 16's first two dicts and a third cut mid-write
    lines = dict_lines("16")[:3]
    lines[2] = lines[2][:80]
    with pytest.warns(LogWarning, match="1 printed metric dict\\(s\\) could not be read.*line 3"):
        log = read_log(write(tmp_path, "cut.log", "\n".join(lines) + "\n"))
    assert log.train["step"].tolist() == [1, 2]


def test_ms_swift_console_and_logging_jsonl_step_from_global_step_max_steps(tmp_path):
    # run 16: the same dicts as ms-swift's logging.jsonl ("global_step/max_steps": "1/200")
    records = [ast.literal_eval(d) for d in dict_lines("16")[:4]]
    records[3]["global_step/max_steps"] = "9/547"
    jsonl = write(tmp_path, "logging.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    log = read_silent(jsonl)
    assert log.format == "trl" and log.train["step"].tolist() == [1, 2, 3, 9]
    assert log.train.loc[9, "reward"] == pytest.approx(parsed("16")["reward"][3], abs=1e-12)
    assert "global_step/max_steps" in " ".join(log.notes)
    records[0]["step"] = 7  # a `step` that disagrees with global_step/max_steps
    bad = write(tmp_path, "bad.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    one_line_error(bad, "`step` and `global_step/max_steps` disagree on 1 row")


# --- stream logs, verl ------------------------------------------------------------------------

def test_kaggle_stream_log_metrics_in_the_data_field(tmp_path):
    # run 07 (Rusheel86/Chaos-Economy vsr-new.log): the stream records up to the second metric dict
    records = json.loads(raw_text("07"))
    with_dict = [i for i, r in enumerate(records) if "{'loss'" in r["data"]]
    path = write(tmp_path, "vsr.log", json.dumps(records[: with_dict[1] + 1]))
    log = read_silent(path)
    assert log.container == "stream" and log.train["step"].tolist() == [5, 10]
    assert log.train["reward"].tolist() == pytest.approx(parsed("07")["reward"][:2].tolist(), abs=1e-12)
    # the same records as JSON lines, with CRLF line ends
    lines = "\n".join(json.dumps(r) for r in records[: with_dict[1] + 1]) + "\n"
    again = read_silent(write(tmp_path, "vsr.jsonl", lines, crlf=True))
    assert again.train["reward"].tolist() == log.train["reward"].tolist()


def test_verl_console_lines(tmp_path):
    # run 13 (memoryoffish/nlp_grpo, pure-GRPO arm) printed as verl's console logger does
    rows = parsed("13").dropna(subset=["critic/score/mean"]).head(3)
    lines = [f"(main_task pid=1) step:{int(r.step)} - critic/score/mean:{r['critic/score/mean']} - "
             f"actor/entropy_loss:np.float64({r['actor/entropy_loss']}) - response_length/mean:"
             f"{r['response_length/mean']}" for _, r in rows.iterrows()]
    log = read_silent(write(tmp_path, "verl.log", "INFO starting\n" + "\n".join(lines) + "\n"))
    assert log.format == "verl" and log.container == "verl_console"
    assert log.train["step"].tolist() == [1, 2, 3]
    assert log.train["reward"].tolist() == rows["critic/score/mean"].tolist()
    assert log.train["entropy"].tolist() == rows["actor/entropy_loss"].tolist()
    single = read_silent(write(tmp_path, "one.log", lines[0]))  # one pasted line is one row
    assert len(single.train) == 1 and single.train["reward"].iloc[0] == rows["critic/score/mean"].iloc[0]


def test_minimind_console_lines(tmp_path):
    # MiniMind's train_grpo.py line (Coicozoi/minimind-from-scratch logs/grpo.log, steps 1-2), among its other
    # output, and a second epoch: the step is (epoch - 1) * iters + step
    lines = [
        "`torch_dtype` is deprecated! Use `dtype` instead!",
        "Epoch:[1/2](1/3), Reward: -2.3041, KL_ref: -0.0010, Adv Std: 0.9258, Adv Mean: -0.0000, Actor Loss: 0.0000, "
        "Avg Response Len: 271.38, Learning Rate: 0.00000030",
        "[DEBUG] step=50, sample[0]",
        "Epoch:[1/2](2/3), Reward: -1.7233, KL_ref: 0.0002, Adv Std: 0.9257, Adv Mean: 0.0000, Actor Loss: 0.0000, "
        "Avg Response Len: 297.00, Learning Rate: 0.00000030",
        "Epoch:[2/2](1/3), Reward: -1.4468, KL_ref: 0.0409, Adv Std: 0.9257, Adv Mean: 0.0000, Actor Loss: 0.0065, "
        "Avg Response Len: 286.75, Learning Rate: 0.00000029",
    ]
    log = read_silent(write(tmp_path, "grpo.log", "\n".join(lines) + "\n"))
    assert log.container == "minimind_console"
    assert log.train["step"].tolist() == [1, 2, 4]
    assert log.train["reward"].tolist() == [-2.3041, -1.7233, -1.4468]
    assert log.train["kl"].tolist() == [-0.0010, 0.0002, 0.0409]
    assert log.train["completion_length"].tolist() == [271.38, 297.0, 286.75]
    assert log.train["learning_rate"].tolist() == [3.0e-7, 3.0e-7, 2.9e-7]
    # its pre-training / SFT trainers' style: no commas, an `epoch_Time:12min:` that is no metric
    sft = read_silent(write(tmp_path, "sft.log", "Epoch:[1/1](100/4416) loss:2.345678 lr:0.000500000000 "
                                                  "epoch_Time:12min:\n"))
    assert sft.train["step"].tolist() == [100] and sft.train["loss"].tolist() == [2.345678]
    assert sft.train["learning_rate"].tolist() == [5e-4]


def test_custom_loop_step_lines(tmp_path):
    # adv06/WidgetAnchor grpo_log.txt (a custom GRPO loop, GLM-4.1V-9B): a summary line every 10 steps among
    # per-step progress lines ("Step 40: generating ...") that hold no metric
    lines = [
        "Found 1000 images for GRPO training",
        "  Step 10: generating 2 candidates for prompt 1/1...",
        "  Rewards: [-1.0, -1.0] (0/2 rendered)",
        "GRPO step 10/500 | loss: 0.0000 | mean_reward: -1.0000 | KL: 0.0001 | clip_frac: 0.000 | lr: 0.000001",
        "  Step 40: generating 2 candidates for prompt 1/1...",
        "GRPO step 40/500 | loss: -0.0000 | mean_reward: 0.6327 | KL: 0.0001 | clip_frac: 0.001 | lr: 0.000004",
    ]
    log = read_silent(write(tmp_path, "grpo_log.txt", "\n".join(lines) + "\n"))
    assert log.container == "step_lines"
    assert log.train["step"].tolist() == [10, 40]
    assert log.train["reward"].tolist() == [-1.0, 0.6327]
    assert log.train["kl"].tolist() == [0.0001, 0.0001]
    assert log.train["learning_rate"].tolist() == [1e-6, 4e-6]
    # progress lines alone are no metrics: still no format
    one_line_error(write(tmp_path, "progress.txt", "\n".join(lines[:3]) + "\n"), "no log format recognised")


def test_verl_jsonl_with_training_global_step(tmp_path):
    # run 11 (beingamanforever/RDAN-GRPO metrics.jsonl) with its step as verl's `training/global_step`
    records = [json.loads(line) for line in raw_text("11").splitlines()[:5]]
    for r in records:
        r["training/global_step"] = r.pop("system/step")
    log = read_silent(write(tmp_path, "m.jsonl", "".join(json.dumps(r) + "\n" for r in records)))
    assert log.train["step"].tolist() == parsed("11")["system/step"][:5].tolist()
    assert log.train["reward"].tolist() == parsed("11")["reward/selected_mean"][:5].tolist()
    # both `step` and `training/global_step`: one step when they agree, an error when they do not
    for r in records:
        r["step"] = r["training/global_step"]
    both = read_silent(write(tmp_path, "both.jsonl", "".join(json.dumps(r) + "\n" for r in records)))
    assert both.train["step"].tolist() == log.train["step"].tolist()
    records[2]["step"] += 1
    bad = write(tmp_path, "bad.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    one_line_error(bad, "several columns could be the step")
    with pytest.raises(DataError, match=r"\(command line: --map step=\S+\)"):
        read_silent(bad)


# --- tables -----------------------------------------------------------------------------------

def wandb_export(rows: pd.DataFrame, runs: list[str]) -> pd.DataFrame:
    table = {"Step": rows["step"].to_numpy()}
    for run in runs:
        for col in ("critic/score/mean", "actor/entropy_loss"):
            table[f"{run} - {col}"] = rows[col].to_numpy()
            table[f"{run} - {col}__MIN"] = rows[col].to_numpy() - 0.01
            table[f"{run} - {col}__MAX"] = rows[col].to_numpy() + 0.01
    return pd.DataFrame(table)


def test_wandb_csv_export(tmp_path):
    # run 13's values as a W&B export ("Step", "<run> - metric", __MIN/__MAX bands)
    rows = parsed("13").dropna(subset=["critic/score/mean"]).head(6)
    path = tmp_path / "wandb_export.csv"
    wandb_export(rows, ["game24-pure"]).to_csv(path, index=False)
    log = read_silent(path)
    assert log.train["step"].tolist() == rows["step"].tolist()
    assert log.train["reward"].tolist() == rows["critic/score/mean"].tolist()
    assert "dropped 4 __MIN/__MAX" in " ".join(log.notes)
    two = tmp_path / "two.csv"
    wandb_export(rows, ["game24-pure", "game24-sft"]).to_csv(two, index=False)
    one_line_error(two, "a W&B export of 2 runs \\(game24-pure, game24-sft\\).*--run")
    assert read_silent(two, run="game24-sft").train["reward"].tolist() == rows["critic/score/mean"].tolist()


def test_wandb_trl_keys(tmp_path):
    # run 01's first rows as W&B logs TRL keys: train/reward, train/kl ..., eval/reward
    rows = parsed("01").head(4)
    table = pd.DataFrame({"Step": (rows["row"] + 1) * 5, "rho1 - train/reward": rows["reward"],
                          "rho1 - train/entropy": rows["entropy"], "rho1 - eval/reward": [np.nan, 0.5, np.nan, 0.6]})
    path = tmp_path / "w.csv"
    table.to_csv(path, index=False)
    log = read_silent(path)
    assert log.train["reward"].tolist() == rows["reward"].tolist()
    assert log.eval["reward"].tolist() == [0.5, 0.6] and log.eval["step"].tolist() == [10, 20]


def test_unsloth_progress_table_with_bom_and_crlf(tmp_path):
    # run 25 (unslothai/notebooks Qwen2.5_(3B)-GRPO): the first rows of the progress table
    text = "\n".join(raw_text("25").splitlines()[:6]) + "\n"
    plain = read_silent(write(tmp_path, "p.csv", text))
    marked = read_silent(write(tmp_path, "q.csv", text, bom=True, crlf=True))
    assert plain.format == marked.format == "notebook"
    assert plain.train["step"].tolist() == [1, 2, 3, 4, 5]
    pd.testing.assert_frame_equal(plain.train, marked.train)
    assert plain.train["reward"].tolist() == parsed("25")["reward"][:5].tolist()


@pytest.mark.parametrize("run_id,name", [("18", "reward_mean"), ("08", "mean_reward"),
                                         ("11", "reward/selected_mean"), ("13", "critic/score/mean")])
def test_common_reward_column_names(tmp_path, run_id, name):
    run = datasets.real_run(run_id)
    rows = parsed(run_id).dropna(subset=[name])
    step = "system/step" if run_id == "11" else "step"
    table = pd.DataFrame({"step": rows[step].to_numpy()[:8], name: rows[name].to_numpy()[:8]})
    if run_id in ("13", "11"):
        table["actor/kl_loss"] = rows["actor/kl_loss"].to_numpy()[:8]  # a verl key beside it
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    log = read_silent(path)
    assert run.meta["reward_metric"] == name
    assert log.train["reward"].tolist() == rows[name].tolist()[:8]


def test_per_function_rewards_without_a_total(tmp_path):
    # run 04: two reward functions (format 0.5 + correctness 1.0, weights 1): their sum is TRL's total
    rows = parsed("04").head(10)
    funcs = ["rewards/format_reward_func_qa/mean", "rewards/correctness_reward_func_qa/mean"]
    table = rows[["loss"] + funcs].assign(step=(rows["row"] + 1) * 5)
    path = tmp_path / "f.csv"
    table.to_csv(path, index=False)
    with pytest.warns(LogWarning, match="sum of the 2 reward functions"):
        log = read_log(path)
    np.testing.assert_allclose(log.train["reward"], rows["reward"], atol=1e-12)
    # run 01: one function, pre-0.18 spelling `rewards/<f>`: it is the reward
    rows = parsed("01").head(10)
    table = pd.DataFrame({"step": (rows["row"] + 1) * 5, "loss": rows["loss"],
                          "rewards/reward_fn": rows["rewards/reward_fn/mean"]})
    table.to_csv(path, index=False)
    log = read_silent(path)
    assert log.train["reward"].tolist() == rows["reward"].tolist()


# --- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,content,match", [
    ("empty.log", "", "the file is empty"),
    ("empty.jsonl", "\r\n\r\n", "the file is empty"),
    ("bom-only.csv", "\ufeff", "the file is empty"),
    ("header.csv", "Step,Training Loss,reward,reward_std,completion_length,kl\r\n", "no rows"),
    ("notes.txt", "Loading checkpoint shards: 100%\nstarting training\nloss went down, {nice}\n",
     "no log format recognised: 3 line\\(s\\) of text.*accepted: "),
])
def test_bad_input_is_a_one_line_error(tmp_path, name, content, match):
    one_line_error(write(tmp_path, name, content), match)


def test_truncated_json(tmp_path):
    # run 18 (tonywang1990/gsm8k-grpo step_stat_history.json) cut mid-write
    text = raw_text("18")
    one_line_error(write(tmp_path, "step_stat_history.json", text[: len(text) // 2]), "truncated")


def test_a_corrupt_jsonl_line_mid_file_is_skipped_and_counted(tmp_path):
    # run 08 (beibeizzz/countdown_post_train metrics.jsonl): lines 5 and 17 garbled of 500
    lines = raw_text("08").splitlines()
    lines[4], lines[16] = lines[4][:40], "#" + lines[16]
    path = write(tmp_path, "metrics.jsonl", "\n".join(lines) + "\n", bom=True, crlf=True)
    with pytest.warns(LogWarning, match="skipped 2 corrupt line\\(s\\) of 500.*line\\(s\\) 5, 17"):
        log = read_log(path)
    assert len(log.train) == 498 and 5 not in log.train.index and 17 not in log.train.index
    rows = parsed("08").set_index("step")
    assert log.train.loc[6, "reward"] == rows.loc[6, "mean_reward"]
    # many broken lines: not a JSON-lines log
    lines = [ln[:30] if i % 3 == 1 else ln for i, ln in enumerate(raw_text("08").splitlines()[:30])]
    one_line_error(write(tmp_path, "many.jsonl", "\n".join(lines) + "\n"),
                   "line 2 is not valid JSON.*10 of 30 lines are broken")


def test_console_log_with_crlf_reads_the_same(tmp_path):
    # run 03 (Sunshine535/nips-grpo-dynamics), written with Windows line ends and a BOM
    text = raw_text("03")
    log = read_silent(write(tmp_path, "rho.log", text, bom=True, crlf=True))
    same = read_silent(datasets.real_run("03").path)
    pd.testing.assert_frame_equal(log.train, same.train)


@pytest.mark.parametrize("command", ["diagnose", "fit"])
def test_the_cli_exits_2_on_an_unreadable_text(tmp_path, capsys, command):
    path = write(tmp_path, "notes.txt", "Loading checkpoint shards: 100%\nstarting training\nloss went down, {nice}\n")
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no log format recognised" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("line", [
    "{'loss': 0.0, 'grad_norm': 0.08656957000494003, 'learning_rate': 6.916666666666667e-06, 'reward': 1.7171, "
    "'kl': 0.0005371240986278281, 'epoch': 0.31}",
    "{'loss': -0.0, 'grad_norm': nan, 'reward': 0, 'kl': -inf, 'global_step/max_steps': '9/547', 'epoch': 1.}",
    "{'train_runtime': 1234.5, 'train_samples_per_second': 0.5, 'train_loss': 2e-05, 'epoch': 1.0}",
])
def test_the_fast_reading_of_a_printed_dict_is_literal_eval(line):
    from grpo_core.runs.logs import console

    fast, slow = console._flat_dict(line), console._literal_dict(line)
    assert fast is not None and fast == slow
    assert [type(v) for v in fast.values()] == [type(v) for v in slow.values()]


def test_a_printed_dict_the_fast_reading_declines_is_still_read():
    from grpo_core.runs.logs import console

    # a nested value, a double-quoted string, a value with no space after the colon: left to literal_eval
    for line, expected in [("{'loss': 0.5, 'rewards': [1, 0]}", {"loss": 0.5, "rewards": [1, 0]}),
                           ("{'loss': 0.5, 'note': \"it's\"}", {"loss": 0.5, "note": "it's"}),
                           ("{'loss':0.5}", {"loss": 0.5})]:
        assert console._flat_dict(line) is None and console._literal_dict(line) == expected
