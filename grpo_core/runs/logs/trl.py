"""Hugging Face TRL ``GRPOTrainer`` logs (and notebook display names): keys, releases, ``reward_std``.

The meaning of ``reward_std``
-----------------------------
Before TRL 0.27 ``reward_std`` was the mean over groups of the within-group standard deviation;
from 0.27 it is the standard deviation over the whole batch (always at least as large, since
batch variance = mean within-group variance + between-group variance). The two cannot be compared,
so :attr:`RunLog.reward_std_kind` records which one a log holds:

1. the ``reward_std_kind`` argument, if given;
2. else a TRL version (``trl_version`` argument, a ``trl_version`` field in the file or in the
   records): ``< 0.27`` gives ``"group_mean_std"``, ``>= 0.27`` gives ``"batch_std"``;
3. else the key era: pre-0.18 keys (``completion_length``, ``rewards/<f>`` without ``/mean``)
   can only come from a release before 0.27: ``"group_mean_std"``;
4. else the values: with a single reward function, ``rewards/<f>/std`` *is* the batch std of the
   reward, so ``reward_std`` equal to it on >= 90 % of the steps means ``"batch_std"``, and
   ``reward_std`` clearly below it means ``"group_mean_std"``; a step with every group zero-spread
   (``frac_reward_zero_std == 1``) but ``reward_std > 0`` can only be a batch std;
5. else ``"unknown"``. Records that disagree (a log concatenated across releases) give
   ``"mixed"`` and a warning; nothing downstream then uses ``reward_std`` as either kind.

References
----------
TRL ``GRPOTrainer`` source, ``_generate_and_score_completions`` and ``log`` (keys and their
meaning per release).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .schema import BATCH_STD_SINCE, _note

# --- TRL ------------------------------------------------------------------------------------
_TRL_EXACT = {
    "step": "step", "epoch": "epoch", "loss": "loss", "grad_norm": "grad_norm",
    "learning_rate": "learning_rate", "reward": "reward", "reward_std": "reward_std",
    "frac_reward_zero_std": "frac_reward_zero_std", "entropy": "entropy", "kl": "kl",
    "num_tokens": "num_tokens", "policy_loss": "policy_loss",
    "global_step": "step",
    # < 0.18
    "completion_length": "completion_length",
    "clip_ratio": "clip_ratio_region",
    # >= 0.18
    "completions/mean_length": "completion_length",
    "completions/min_length": "completion_length_min",
    "completions/max_length": "completion_length_max",
    "completions/mean_terminated_length": "terminated_length",
    "completions/min_terminated_length": "terminated_length_min",
    "completions/max_terminated_length": "terminated_length_max",
    "completions/clipped_ratio": "clipped_ratio",
    "clip_ratio/low_mean": "clip_ratio_low",
    "clip_ratio/high_mean": "clip_ratio_high",
    "clip_ratio/region_mean": "clip_ratio_region",
    "clip_ratio/low_min": "clip_ratio_low_min",
    "clip_ratio/high_max": "clip_ratio_high_max",
    "sampling/importance_sampling_ratio/min": "importance_ratio_min",
    "sampling/importance_sampling_ratio/mean": "importance_ratio_mean",
    "sampling/importance_sampling_ratio/max": "importance_ratio_max",
    "sampling/sampling_logp_difference/mean": "logp_difference_mean",
    "sampling/sampling_logp_difference/max": "logp_difference_max",
}
#: Keys of the final summary row ``Trainer.train`` logs (kept in :attr:`RunLog.summary`).
_TRL_SUMMARY = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second",
                          "total_flos", "train_loss"})
#: Keys that only TRL writes (used to detect the format).
_TRL_MARKERS = frozenset({"frac_reward_zero_std", "completion_length", "reward_std",
                          "clip_ratio", "num_tokens"}) | _TRL_SUMMARY
_TRL_PREFIXES = ("rewards/", "completions/", "clip_ratio/", "sampling/", "eval_")

# --- notebook display names -----------------------------------------------------------------
_DISPLAY = {
    "step": "step", "training loss": "loss", "validation loss": "eval_loss", "epoch": "epoch",
    "learning rate": "learning_rate", "grad norm": "grad_norm", "reward std": "reward_std",
}


def _display_to_trl(name: str) -> str:
    """Notebook display name -> TRL key (``"rewards / x"`` -> ``"rewards/x"``)."""
    stripped = " ".join(str(name).split())
    low = stripped.lower()
    if low in _DISPLAY:
        return _DISPLAY[low]
    key = re.sub(r"\s*/\s*", "/", stripped)
    return key if "/" in key else key.replace(" ", "_").lower() if " " in key else key


def _trl_key(key: str) -> tuple[str, str]:
    """TRL key -> (normalised name, split)."""
    if key in _TRL_SUMMARY:
        return key, "summary"
    split = "train"
    if key.startswith("eval_"):
        split, key = "eval", key[len("eval_"):]
    if key in _TRL_EXACT:
        return _TRL_EXACT[key], split
    if key.startswith("rewards/"):
        rest = key[len("rewards/"):]
        if rest.endswith("/mean"):
            return "reward/" + rest[: -len("/mean")], split
        if rest.endswith("/std"):
            return "reward_std/" + rest[: -len("/std")], split
        return "reward/" + rest, split
    return key, split



def parse_version(text: str) -> tuple[int, ...] | None:
    """``"0.27.1"`` -> ``(0, 27, 1)``; ``None`` if no version number is found.

    Parameters
    ----------
    text : str
        A version string; anything else goes through ``str()``. Leading whitespace and a ``v`` are
        allowed; ``major.minor`` or ``major.minor.patch`` must come first, anything after it
        (``.dev0``, ``rc1``, a fourth component) is ignored.

    Returns
    -------
    tuple of int or None
        ``(major, minor)`` or ``(major, minor, patch)``; ``None`` when ``text`` does not start
        with a version number (``"1"`` alone is not one). Never raises.

    Examples
    --------
    >>> parse_version("0.19.0.dev0")
    (0, 19, 0)
    """
    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not m:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


def _trl_era(raw_columns, fmt: str) -> str | None:
    """The TRL release range the key names say (``"<0.18"``, ``">=0.18"``, ``">=0.21"``), if any."""
    if fmt not in ("trl", "notebook"):
        return None
    raw = [str(c) for c in raw_columns]
    keys = {_display_to_trl(c) for c in raw} if fmt == "notebook" else set(raw)
    keys = {k[5:] if k.startswith("eval_") else k for k in keys}
    old = "completion_length" in keys or any(
        k.startswith("rewards/") and not k.endswith(("/mean", "/std")) for k in keys)
    new = any(k.startswith("completions/") or k.startswith("rewards/") and k.endswith("/mean") for k in keys)
    if old and not new:
        return "<0.18"
    if new:
        return ">=0.21" if "entropy" in keys else ">=0.18"
    return None


def _reward_std_kind(train: pd.DataFrame, raw_columns, fmt: str, versions: set[str], override: str | None,
                     notes: list[str], source: str) -> tuple[str, str | None]:
    """What ``reward_std`` means, decided in the order of the module docstring; and the key era."""
    era = _trl_era(raw_columns, fmt)
    if override is not None:
        _note(notes, f"reward_std taken as {override} (given)", warn=False)
        return override, era
    if "reward_std" not in train.columns:
        return "unknown", era
    kind = _kind_from_versions(versions, notes, source) if versions else None
    if kind is not None:
        return kind, era
    if era == "<0.18":
        _note(notes, "reward_std is the mean per-group std (pre-0.18 TRL keys, so before 0.27)", warn=False)
        return "group_mean_std", era
    kind = _kind_from_values(train, notes)
    if kind is not None:
        return kind, era
    _note(notes, "could not tell whether reward_std is the mean per-group std (TRL < 0.27) or the batch std "
                 "(>= 0.27); pass trl_version= (--trl-version) or reward_std_kind= to say", warn=False)
    return "unknown", era


def _kind_from_versions(versions: set[str], notes: list[str], source: str) -> str | None:
    kinds = set()
    for v in versions:
        parsed = parse_version(v)
        if parsed is None:
            continue
        kinds.add("batch_std" if parsed[:2] >= BATCH_STD_SINCE else "group_mean_std")
    if len(kinds) > 1:
        _note(notes, f"{source}: the log mixes TRL versions {sorted(versions)} from before and after 0.27, "
                     "whose reward_std mean different things (per-group mean vs batch std); reward_std_kind "
                     "= 'mixed', not used as either", warn=True)
        return "mixed"
    if kinds:
        kind = kinds.pop()
        _note(notes, f"reward_std is the {'batch std' if kind == 'batch_std' else 'mean per-group std'} "
                     f"(TRL {', '.join(sorted(versions))})", warn=False)
        return kind
    return None


def _kind_from_values(train: pd.DataFrame, notes: list[str]) -> str | None:
    """The kind the values prove (rule 4 of the module docstring), or ``None``."""
    rs = train["reward_std"].to_numpy(dtype=float)
    if "frac_reward_zero_std" in train.columns:
        frac = train["frac_reward_zero_std"].to_numpy(dtype=float)
        ok = np.isfinite(frac) & np.isfinite(rs)
        if np.any(ok & (frac >= 1 - 1e-9) & (rs > 1e-6)):
            _note(notes, "reward_std is the batch std (it is > 0 on a step where every group had zero spread)",
                  warn=False)
            return "batch_std"
    funcs = [c for c in train.columns if c.startswith("reward_std/")]
    means = [c for c in train.columns if c.startswith("reward/")]
    if not (len(funcs) == 1 and len(means) == 1 and "reward" in train.columns):
        return None
    fs = train[funcs[0]].to_numpy(dtype=float)
    # Only if that function *is* the reward (weight 1, no other component).
    r, fm = train["reward"].to_numpy(dtype=float), train[means[0]].to_numpy(dtype=float)
    same = np.isfinite(r) & np.isfinite(fm)
    is_whole = same.sum() >= 3 and np.mean(np.abs(r[same] - fm[same]) <= 1e-6 + 1e-6 * np.abs(r[same])) >= 0.9
    ok = np.isfinite(fs) & np.isfinite(rs) & is_whole
    if ok.sum() < 3:
        return None
    scale = np.maximum(np.abs(fs[ok]), 1e-12)
    equal = np.abs(rs[ok] - fs[ok]) <= 1e-6 + 1e-4 * scale
    below = rs[ok] < fs[ok] * (1 - 1e-3) - 1e-9
    if equal.mean() >= 0.9:
        _note(notes, f"reward_std is the batch std (equal to {funcs[0]}, the batch std of the only "
                     "reward function, on >= 90% of steps)", warn=False)
        return "batch_std"
    if below.mean() >= 0.5:
        _note(notes, f"reward_std is the mean per-group std (below {funcs[0]}, the batch std of the only "
                     "reward function, on most steps)", warn=False)
        return "group_mean_std"
    return None
