"""Write the small test logs in this folder (run once; the outputs are committed).

Each TRL-era log is computed from simulated groups of binary rewards, with the statistics TRL
logs in that release (mean per-group std before 0.27, batch std from 0.27), so the values are
consistent with each other the way real logs are. Usage: ``python tests/data/logs/make_logs.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STEPS = 20
PROMPTS, G = 4, 8


def batch(rng, step):
    """One generation batch: rewards (PROMPTS, G) of two reward functions, lengths (PROMPTS*G,)."""
    p_prompt = np.clip(0.15 + 0.03 * step + rng.normal(0, 0.2, PROMPTS), 0.02, 0.98)
    acc = (rng.random((PROMPTS, G)) < p_prompt[:, None]).astype(float)
    fmt = (rng.random((PROMPTS, G)) < 0.6 + 0.015 * step).astype(float) * 0.5
    lengths = rng.integers(40, 129, PROMPTS * G).astype(float)
    return acc, fmt, lengths


def stats(acc, fmt, lengths, *, batch_std: bool):
    total = acc + fmt
    group_std = total.std(axis=1, ddof=1)
    return {
        "reward": float(total.mean()),
        "reward_std": float(total.std(ddof=1)) if batch_std else float(group_std.mean()),
        "frac_reward_zero_std": float(np.isclose(group_std, 0).mean()),
        "acc_mean": float(acc.mean()), "acc_std": float(acc.std(ddof=1)),
        "fmt_mean": float(fmt.mean()), "fmt_std": float(fmt.std(ddof=1)),
        "len_mean": float(lengths.mean()), "len_min": float(lengths.min()), "len_max": float(lengths.max()),
        "clipped": float((lengths >= 128).mean()),
    }


def common(step, rng):
    return {
        "loss": round(float(rng.normal(0, 0.002)), 6),
        "grad_norm": float(abs(rng.normal(0.3, 0.05))),
        "learning_rate": 1e-6 * (1 - step / (STEPS + 1)),
        "epoch": step / STEPS,
        "step": step,
    }


def trainer_state(history, **extra):
    return {"best_metric": None, "epoch": 1.0, "global_step": STEPS, "is_world_process_zero": True,
            "logging_steps": 1, "max_steps": STEPS, "num_train_epochs": 1, "train_batch_size": PROMPTS * G,
            "log_history": history, **extra}


def summary(step):
    return {"epoch": 1.0, "step": step, "total_flos": 0.0, "train_loss": 0.0011, "train_runtime": 123.4,
            "train_samples_per_second": 5.2, "train_steps_per_second": 0.16}


def era_014(rng):
    """TRL 0.14-0.17: completion_length, rewards/<f>, group-mean reward_std."""
    hist = []
    for step in range(1, STEPS + 1):
        s = stats(*batch(rng, step), batch_std=False)
        row = common(step, rng) | {
            "completion_length": s["len_mean"], "reward": s["reward"], "reward_std": s["reward_std"],
            "rewards/accuracy_reward": s["acc_mean"], "rewards/format_reward": s["fmt_mean"],
            "kl": 1e-4 * step,
        }
        hist.append(row)
        if step % 10 == 0:
            e = stats(*batch(rng, step), batch_std=False)
            hist.append(
                {
                    "eval_loss": 0.001,
                    "eval_reward": e["reward"],
                    "eval_reward_std": e["reward_std"],
                    "eval_rewards/accuracy_reward": e["acc_mean"],
                    "eval_rewards/format_reward": e["fmt_mean"],
                    "eval_completion_length": e["len_mean"],
                    "eval_kl": 1e-4 * step,
                    "eval_runtime": 3.2,
                    "eval_samples_per_second": 10.0,
                    "eval_steps_per_second": 1.2,
                    "epoch": step / STEPS,
                    "step": step,
                }
            )
    hist.append(summary(STEPS))
    return trainer_state(hist)


def era_019(rng):
    """TRL 0.18-0.20: completions/*, rewards/<f>/mean|std, frac_reward_zero_std, clip_ratio/*.

    steps_per_generation = 2: generation (and so the reward keys) only on odd steps; the other
    rows carry only the optimisation keys.
    """
    hist = []
    for step in range(1, STEPS + 1):
        row = common(step, rng) | {"kl": 1e-4 * step, "clip_ratio/low_mean": 0.0, "clip_ratio/high_mean": 0.0,
                                   "clip_ratio/region_mean": 0.001 * (step % 3), "num_tokens": 4096.0 * step}
        if step % 2 == 1:
            s = stats(*batch(rng, step), batch_std=False)
            row |= {
                "completions/mean_length": s["len_mean"], "completions/min_length": s["len_min"],
                "completions/max_length": s["len_max"], "completions/clipped_ratio": s["clipped"],
                "completions/mean_terminated_length": s["len_mean"] - 1.0,
                "completions/min_terminated_length": s["len_min"], "completions/max_terminated_length": 127.0,
                "rewards/accuracy_reward/mean": s["acc_mean"], "rewards/accuracy_reward/std": s["acc_std"],
                "rewards/format_reward/mean": s["fmt_mean"], "rewards/format_reward/std": s["fmt_std"],
                "reward": s["reward"], "reward_std": s["reward_std"],
                "frac_reward_zero_std": s["frac_reward_zero_std"],
            }
        hist.append(row)
        if step % 10 == 0:
            e = stats(*batch(rng, step), batch_std=False)
            hist.append({"eval_loss": 0.0, "eval_reward": e["reward"], "eval_reward_std": e["reward_std"],
                         "eval_rewards/accuracy_reward/mean": e["acc_mean"],
                         "eval_rewards/accuracy_reward/std": e["acc_std"],
                         "eval_frac_reward_zero_std": e["frac_reward_zero_std"],
                         "eval_completions/mean_length": e["len_mean"], "eval_runtime": 2.0,
                         "epoch": step / STEPS, "step": step})
    hist.append(summary(STEPS))
    return trainer_state(hist)


def _single_function_rows(rng, *, batch_std: bool, extra_keys: bool):
    hist = []
    for step in range(1, STEPS + 1):
        acc, _, lengths = batch(rng, step)
        s = stats(acc, np.zeros_like(acc), lengths, batch_std=batch_std)
        row = common(step, rng) | {
            "num_tokens": 4096.0 * step,
            "completions/mean_length": s["len_mean"],
            "completions/min_length": s["len_min"],
            "completions/max_length": s["len_max"],
            "completions/clipped_ratio": s["clipped"],
            "completions/mean_terminated_length": s["len_mean"] - 1.0,
            "completions/min_terminated_length": s["len_min"],
            "completions/max_terminated_length": 127.0,
            "rewards/accuracy_reward/mean": s["acc_mean"],
            "rewards/accuracy_reward/std": s["acc_std"],
            "reward": s["reward"],
            "reward_std": s["reward_std"],
            "frac_reward_zero_std": s["frac_reward_zero_std"],
            "kl": 2e-4 * step,
            "entropy": 0.9 - 0.01 * step,
            "clip_ratio/low_mean": 0.0,
            "clip_ratio/low_min": 0.0,
            "clip_ratio/high_mean": 0.0,
            "clip_ratio/high_max": 0.0,
            "clip_ratio/region_mean": 0.0,
        }
        if extra_keys:
            row |= {
                "sampling/sampling_logp_difference/mean": 0.01,
                "sampling/sampling_logp_difference/max": 0.4,
                "sampling/importance_sampling_ratio/min": 0.8,
                "sampling/importance_sampling_ratio/mean": 1.0,
                "sampling/importance_sampling_ratio/max": 1.3,
            }
        hist.append(row)
    hist.append(summary(STEPS))
    return hist


def era_023(rng):
    """TRL 0.21-0.26: entropy added; reward_std still the mean per-group std."""
    return trainer_state(_single_function_rows(rng, batch_std=False, extra_keys=False))


def era_029(rng):
    """TRL 0.27+: reward_std is the batch std; vLLM importance-sampling keys."""
    return trainer_state(_single_function_rows(rng, batch_std=True, extra_keys=True))


def notebook_csv(rng):
    lines = ["Step,Training Loss,Validation Loss,reward,reward_std,completions / mean_length,kl,"
             "rewards / accuracy_reward / mean,rewards / accuracy_reward / std"]
    for step in range(1, 13):
        s = stats(*batch(rng, step), batch_std=False)
        loss = "No log" if step < 3 else f"{0.0001 * step:.6f}"
        val = f"{0.01:.6f}" if step % 6 == 0 else "No log"
        lines.append(f"{step},{loss},{val},{s['reward']:.6f},{s['reward_std']:.6f},{s['len_mean']:.6f},"
                     f"{1e-5 * step:.6f},{s['acc_mean']:.6f},{s['acc_std']:.6f}")
    return "\n".join(lines) + "\n"


def verl_records(rng):
    out = []
    for step in range(1, 16):
        s = stats(*batch(rng, step), batch_std=True)
        rec = {"training/global_step": step, "training/epoch": 0, "critic/score/mean": s["acc_mean"],
               "critic/score/max": 1.0, "critic/score/min": 0.0, "critic/rewards/mean": s["acc_mean"],
               "critic/advantages/mean": 0.0, "actor/entropy": 0.8 - 0.01 * step, "actor/ppo_kl": 1e-4 * step,
               "actor/kl_loss": 2e-4 * step, "actor/pg_clipfrac": 0.002, "actor/pg_loss": -0.01,
               "actor/grad_norm": 0.2, "actor/lr": 1e-6, "response_length/mean": s["len_mean"],
               "response_length/max": s["len_max"], "response_length/min": s["len_min"],
               "response_length/clip_ratio": s["clipped"], "timing_s/step": 12.5}
        if step % 5 == 0:
            rec["val-core/openai/gsm8k/reward/mean@1"] = 0.2 + 0.02 * step
        out.append(rec)
    return out


def own_records(rng):
    out = []
    for step in range(1, 11):
        s = stats(*batch(rng, step), batch_std=True)
        out.append(
            {
                "step": step,
                "reward": s["reward"],
                "reward_std": s["reward_std"],
                "frac_reward_zero_std": s["frac_reward_zero_std"],
                "reward/accuracy_reward": s["acc_mean"],
                "reward_std/accuracy_reward": s["acc_std"],
                "completion_length": s["len_mean"],
                "completion_length_max": s["len_max"],
                "entropy": 0.7,
                "kl": 1e-4 * step,
                "grad_norm": 0.1,
                "split": "train",
                "trl_version": "1.16.0",
            }
        )
        if step % 5 == 0:
            out.append({"step": step, "reward": 0.3, "reward/accuracy_reward": 0.3, "split": "eval",
                        "trl_version": "1.16.0"})
    return out


def main():
    rng = np.random.default_rng(20240501)
    for name, fn in [("trl_0.14_trainer_state.json", era_014), ("trl_0.19_trainer_state.json", era_019),
                     ("trl_0.23_trainer_state.json", era_023), ("trl_0.29_trainer_state.json", era_029)]:
        (HERE / name).write_text(json.dumps(fn(rng), indent=2) + "\n")
    hist = era_023(rng)["log_history"]
    (HERE / "trl_log_history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hist))
    (HERE / "notebook_progress.csv").write_text(notebook_csv(rng))
    recs = verl_records(rng)
    (HERE / "verl_metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    keys = list(dict.fromkeys(k for r in recs for k in r))
    rows = [",".join("" if r.get(k) is None else repr(r[k]) for k in keys) for r in recs]
    (HERE / "verl_metrics.csv").write_text(",".join(keys) + "\n" + "\n".join(rows) + "\n")
    (HERE / "grpo_dynamics_metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in own_records(rng)))
    generic = ["iter\tacc\tmy_kl\tgn"] + [
        f"{i}\t{0.1 + 0.02 * i:.4f}\t{1e-4 * i:.5f}\t0.3" for i in range(0, 30, 2)
    ]
    (HERE / "generic.tsv").write_text("\n".join(generic) + "\n")


if __name__ == "__main__":
    main()
