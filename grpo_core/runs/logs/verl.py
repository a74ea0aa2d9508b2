"""verl metric dumps: keys and their split.

References
----------
verl ``trainer/ppo/metric_utils.py`` (``compute_data_metrics``).
"""

from __future__ import annotations

# --- verl -----------------------------------------------------------------------------------
_VERL_EXACT = {
    "step": "step", "training/global_step": "step", "training/epoch": "epoch",
    "critic/score/mean": "reward", "critic/score/max": "reward_max", "critic/score/min": "reward_min",
    "actor/entropy": "entropy", "actor/entropy_loss": "entropy",
    "actor/ppo_kl": "ppo_kl", "actor/kl_loss": "kl",
    "actor/grad_norm": "grad_norm", "actor/pg_clipfrac": "clip_ratio_region",
    "actor/pg_loss": "loss", "actor/lr": "learning_rate",
    "response_length/mean": "completion_length", "response_length/max": "completion_length_max",
    "response_length/min": "completion_length_min", "response_length/clip_ratio": "clipped_ratio",
}
_VERL_PREFIXES = ("actor/", "critic/", "response_length/", "prompt_length/", "training/", "timing_s/",
                  "perf/", "val-core/", "val-aux/")
_VERL_EVAL_PREFIXES = ("val-core/", "val-aux/", "val/")


def _verl_key(key: str) -> tuple[str, str]:
    if key in _VERL_EXACT:
        return _VERL_EXACT[key], "train"
    for prefix in _VERL_EVAL_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix):], "eval"
    return key, "train"

