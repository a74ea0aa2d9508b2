"""Read GRPO training logs of many formats into one normalised per-step table.

A training run leaves its metrics in one of several shapes. :func:`read_log` detects which,
and returns a :class:`RunLog`: a :class:`pandas.DataFrame` of training rows indexed by the
optimizer step, the evaluation rows kept apart, and a record of everything that was done on
the way (renamed columns, merged or dropped rows), so that no table is ever silently wrong.

Formats (``RunLog.format``; the *container* is what holds them, ``RunLog.container``)
-------------------------------------------------------------------------------------
``"trl"``
    Hugging Face TRL ``GRPOTrainer`` logs: ``trainer_state.json`` (its ``log_history`` list),
    the ``log_history`` list saved on its own (JSON or JSONL), or a CSV whose columns are TRL
    keys. Every release is read:

    ============  ==========================================================================
    TRL release   keys (besides ``loss``, ``grad_norm``, ``learning_rate``, ``epoch``)
    ============  ==========================================================================
    < 0.18        ``reward``, ``reward_std``, ``kl``, ``completion_length``, ``rewards/<f>``
    >= 0.18       ``completions/mean_length`` (and min/max, terminated, ``clipped_ratio``),
                  ``rewards/<f>/mean`` and ``/std``, ``frac_reward_zero_std``,
                  ``clip_ratio/low_mean`` ..., ``num_tokens``
    >= 0.21       ``entropy``
    >= 0.27       the same keys, but ``reward_std`` is the standard deviation over the whole
                  batch, no longer the mean of the per-group standard deviations
    ============  ==========================================================================

    Evaluation rows (``eval_`` keys) go to :attr:`RunLog.eval` with the prefix stripped; the
    final summary row (``train_runtime``, ``train_loss``...) goes to :attr:`RunLog.summary`.
``"notebook"``
    CSV exports of the progress table printed in notebooks (Unsloth, ``transformers``): display
    names such as ``"Step"``, ``"Training Loss"``, ``"rewards / correctness"``. They are TRL keys
    under another spelling and are mapped the same way.
``"verl"``
    verl metric dumps (JSONL, one object per step, or CSV): ``critic/score/mean``,
    ``actor/entropy``, ``actor/ppo_kl``, ``actor/kl_loss``, ``actor/grad_norm``,
    ``actor/pg_clipfrac``, ``response_length/mean`` ...; ``val/``, ``val-core/`` and
    ``val-aux/`` keys are evaluation metrics.
``"grpo_dynamics"``
    Our own ``metrics.jsonl`` (written by the training callback): one JSON object per line, with
    the normalised keys below already; an optional ``"split"`` key (``"train"``/``"eval"``)
    and ``"trl_version"``.
Console and stream logs (what a run printed: TRL/Unsloth/ms-swift metric dicts among progress bars,
verl ``step:N - key:value`` lines, Kaggle stream logs) are read by :mod:`.console` into TRL or verl
records; W&B exports, files holding several runs (``run=``), step and reward aliases
(``reward_mean``, ``mean_reward``, ``reward/selected_mean``, per-function rewards) by :mod:`.aliases`.

``"generic"``
    Any CSV/JSONL table, with a ``mapping`` from normalised names to its columns, e.g.
    ``{"step": "iter", "reward": "my_reward_col"}``; columns that already carry a normalised
    name need no mapping.

Normalised columns (all optional except ``step``; units per optimizer step)
---------------------------------------------------------------------------
``step`` (int), ``epoch``, ``loss``, ``grad_norm``, ``learning_rate``, ``reward`` (mean total
reward per completion), ``reward_std`` (see :attr:`RunLog.reward_std_kind`), ``reward_min``,
``reward_max``, ``frac_reward_zero_std`` (fraction of groups whose rewards are all equal),
``entropy`` (nats per token), ``kl`` (KL to the reference policy, per token), ``ppo_kl`` (KL
between the behaviour and the current policy, verl), ``clip_ratio_low``, ``clip_ratio_high``,
``clip_ratio_region``, ``clip_ratio_low_min``, ``clip_ratio_high_max`` (fractions of tokens
whose importance ratio was clipped), ``importance_ratio_min``/``_mean``/``_max`` (vLLM
importance-sampling correction), ``logp_difference_mean``/``_max``, ``completion_length`` (mean,
tokens) with ``completion_length_min``/``_max``, ``terminated_length`` (mean over completions that
ended with EOS) with ``_min``/``_max``, ``clipped_ratio`` (fraction of completions cut at the
maximum length), ``num_tokens``, ``policy_loss``, ``reward/<f>`` and ``reward_std/<f>`` (mean and
std of reward function ``<f>``). Columns that are not recognised are kept under their own names.

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

Row handling (each action is appended to :attr:`RunLog.notes` and, when it changes data,
raised as a :class:`LogWarning`)
-------------------------------------------------------------------------------------------
* Rows of the same step and split are **merged**: TRL writes partial rows (the reward keys only
  on generation steps when a batch is reused, eval rows and the summary row at the same step).
  Where two rows of one step give *different* values for the same column (a run resumed from a
  checkpoint re-logs the steps after it), the **last** one wins: it is the one the resumed run
  continued from. This is warned with the number of steps affected.
* Steps out of order are sorted (stable), with a warning.
* Rows without a step value are dropped, with a warning; non-integer steps are an error.
* Cells that are not numbers (``"No log"`` in notebook tables) become NaN, with a warning; a
  column with no number at all is dropped, with a note. NaN cells are kept (no row is dropped for
  them); :meth:`RunLog.series` drops them per metric and warns how many.
* An empty file, a file without rows, an unknown format, a missing step column or a truncated
  JSON file raise :class:`~grpo_core.errors.DataError` naming the file and what to do; the broken
  *last* line of a JSONL file (a run killed mid-write) is dropped with a warning; corrupt lines
  elsewhere are skipped with a warning that counts them and gives their line numbers, up to 10 % of
  the lines (more is an error).

References
----------
TRL ``GRPOTrainer`` source, ``_generate_and_score_completions`` and ``log`` (keys and their
meaning per release); verl ``trainer/ppo/metric_utils.py`` (``compute_data_metrics``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import DataError, ParameterError
from ...validation import check_choice
from . import aliases, console

__all__ = [
    "RunLog",
    "LogWarning",
    "read_log",
    "from_records",
    "from_frame",
    "normalize_record",
    "normalize_key",
    "FORMATS",
    "REWARD_STD_KINDS",
    "NORMALISED_COLUMNS",
    "parse_version",
    "example_log_path",
    "list_example_logs",
]

#: Formats :func:`read_log` understands (``"auto"`` detects one of them).
FORMATS = ("trl", "notebook", "verl", "grpo_dynamics", "generic")
#: Values of :attr:`RunLog.reward_std_kind`.
REWARD_STD_KINDS = ("group_mean_std", "batch_std", "unknown", "mixed")
#: First TRL release whose ``reward_std`` is the batch standard deviation.
BATCH_STD_SINCE = (0, 27)

#: The fixed normalised column names (besides ``reward/<f>`` and ``reward_std/<f>``).
NORMALISED_COLUMNS = (
    "step", "epoch", "loss", "grad_norm", "learning_rate",
    "reward", "reward_std", "reward_min", "reward_max", "frac_reward_zero_std",
    "entropy", "kl", "ppo_kl",
    "clip_ratio_low", "clip_ratio_high", "clip_ratio_region", "clip_ratio_low_min", "clip_ratio_high_max",
    "importance_ratio_min", "importance_ratio_mean", "importance_ratio_max",
    "logp_difference_mean", "logp_difference_max",
    "completion_length", "completion_length_min", "completion_length_max",
    "terminated_length", "terminated_length_min", "terminated_length_max",
    "clipped_ratio", "num_tokens", "policy_loss",
)
_NORMALISED = frozenset(NORMALISED_COLUMNS)

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

_STEP_CANDIDATES = ("step", "Step", "global_step", "training/global_step", "trainer/global_step", "_step")
_SPLITS = ("train", "eval", "summary")


class LogWarning(UserWarning):
    """Something was done to a log to make it usable (rows merged, sorted, dropped)."""


# ============================================================================================
# Key normalisation
# ============================================================================================

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


def _verl_key(key: str) -> tuple[str, str]:
    if key in _VERL_EXACT:
        return _VERL_EXACT[key], "train"
    for prefix in _VERL_EVAL_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix):], "eval"
    return key, "train"


def _own_key(key: str) -> tuple[str, str]:
    return key, "train"


def normalize_key(key: str, *, source_format: str = "trl") -> tuple[str, str]:
    """Map one metric name of a log format to its normalised name and split.

    Parameters
    ----------
    key : str
        The name as the log spells it (``"rewards/correctness/mean"``, ``"Training Loss"``,
        ``"critic/score/mean"``, ``"eval_reward"``).
    source_format : {"trl", "notebook", "verl", "grpo_dynamics", "generic"}
        The log format the key comes from.

    Returns
    -------
    name : str
        Normalised column name (``"reward/correctness"``, ``"loss"``, ``"reward"``); a name that
        is not recognised is returned unchanged.
    split : {"train", "eval", "summary"}
        Which table the value belongs to.

    Raises
    ------
    ParameterError
        If ``source_format`` is not one of the formats.

    Examples
    --------
    >>> normalize_key("rewards/correctness/mean")
    ('reward/correctness', 'train')
    >>> normalize_key("eval_completions/mean_length")
    ('completion_length', 'eval')
    >>> normalize_key("rewards / check_answer", source_format="notebook")
    ('reward/check_answer', 'train')
    >>> normalize_key("critic/score/mean", source_format="verl")
    ('reward', 'train')
    """
    source_format = check_choice("source_format", source_format, FORMATS)
    key = str(key)
    if source_format == "notebook":
        return _trl_key(_display_to_trl(key))
    if source_format == "trl":
        return _trl_key(key)
    if source_format == "verl":
        return _verl_key(key)
    if key == "split":
        return key, "train"
    if key.startswith("eval_") and source_format == "generic":
        return key[len("eval_"):], "eval"
    return _own_key(key)


def normalize_record(record: Mapping[str, Any], *, source_format: str = "trl",
                     trl_version: str | None = None) -> dict[str, Any]:
    """Map one raw log entry (a TRL ``log_history`` dict, a verl metrics dict) to normalised keys.

    This is what a training callback calls on each ``on_log`` to write our ``metrics.jsonl``:
    the result is one line of the ``"grpo_dynamics"`` format, readable by :func:`read_log`.

    Parameters
    ----------
    record : mapping of str to number
        One log entry, e.g. ``{"step": 10, "loss": 0.0, "rewards/acc/mean": 0.4, ...}``.
    source_format : {"trl", "notebook", "verl", "grpo_dynamics", "generic"}
        The format the keys come from.
    trl_version : str, optional
        The TRL version that produced the record; stored as ``"trl_version"`` in the result, so
        that :func:`read_log` knows what ``reward_std`` means.

    Returns
    -------
    dict
        Normalised keys -> values (values unchanged, ``None`` kept), plus ``"split"``: ``"train"``,
        ``"eval"`` or ``"summary"``. Numpy scalars and 0-d arrays/tensors become Python floats so
        the dict is JSON-serialisable; non-finite floats become ``None`` (valid JSON).

    Raises
    ------
    DataError
        If ``record`` is not a mapping, or its keys mix splits (an ``eval_`` key next to a
        training key).
    ParameterError
        If ``source_format`` is not one of the formats.

    Examples
    --------
    >>> normalize_record({"step": 3, "rewards/acc/mean": 0.5, "completions/mean_length": 41.0})
    {'step': 3, 'reward/acc': 0.5, 'completion_length': 41.0, 'split': 'train'}
    >>> normalize_record({"step": 3, "eval_reward": 0.4})["split"]
    'eval'
    """
    source_format = check_choice("source_format", source_format, FORMATS)
    if not isinstance(record, Mapping):
        raise DataError(f"`record` must be a mapping of metric names to values; got {type(record).__name__}")
    out: dict[str, Any] = {}
    splits = set()
    for key, value in record.items():
        if key in ("step", "epoch"):
            name, split = key, None
        else:
            name, split = normalize_key(key, source_format=source_format)
        if name == "split" and source_format in ("grpo_dynamics", "generic"):
            splits.add(str(value))
            continue
        if split is not None:
            splits.add(split)
        out[name] = _plain(value)
    splits.discard(None)
    if len(splits) > 1 and "summary" in splits:
        splits.discard("train")
    if len(splits) > 1:
        raise DataError(f"record mixes splits {sorted(splits)}: {sorted(record)}")
    out["split"] = splits.pop() if splits else "train"
    if trl_version is not None:
        out["trl_version"] = str(trl_version)
    return out


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    try:
        f = float(value)  # numpy scalars, 0-d arrays and tensors
    except (TypeError, ValueError):
        return value
    if not math.isfinite(f):
        return None
    if isinstance(value, np.integer):
        return int(value)
    return f


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


# ============================================================================================
# RunLog
# ============================================================================================

@dataclass
class RunLog:
    """A training log as one normalised table per split.

    Attributes
    ----------
    train : pandas.DataFrame
        Training rows, one per optimizer step: index = step (int64, sorted, unique), columns the
        normalised names (``step`` is a column too). NaN where a step did not log a metric.
    eval : pandas.DataFrame
        Evaluation rows in the same shape (``eval_`` prefix stripped); empty if none.
    format : str
        The detected (or given) format, one of :data:`FORMATS`.
    reward_std_kind : str
        ``"group_mean_std"``, ``"batch_std"``, ``"unknown"`` or ``"mixed"`` (module docstring).
    source : str
        Where the log came from (the path, or ``"<records>"``).
    notes : list of str
        What was done: renamed columns, merged/sorted/dropped rows, how the era was decided.
    container : str
        ``"trainer_state"``, ``"json"``, ``"jsonl"``, ``"csv"`` or ``"records"``.
    columns : dict of str to str
        Original column name -> normalised name (per split: ``"eval_reward"`` -> ``"reward"``).
    summary : dict
        The final summary row of a TRL log (``train_runtime``, ``train_loss``...), if any.
    meta : dict
        Other facts read from the file (``trl_version``, ``trl_era``, ``trainer_state``'s
        ``global_step``, ``max_steps``, ``train_batch_size``...).
    """

    train: pd.DataFrame
    eval: pd.DataFrame
    format: str
    reward_std_kind: str = "unknown"
    source: str = "<records>"
    notes: list[str] = field(default_factory=list)
    container: str = "records"
    columns: dict[str, str] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def steps(self) -> np.ndarray:
        """Training steps, shape (T,), int64."""
        return self.train.index.to_numpy()

    @property
    def metrics(self) -> list[str]:
        """Normalised training columns other than ``step`` (in table order)."""
        return [c for c in self.train.columns if c != "step"]

    def has(self, metric: str, split: str = "train") -> bool:
        """True if ``metric`` (normalised or original name) has at least one finite value."""
        frame = self._frame(split)
        name = self._resolve(metric, frame, split, strict=False)
        if name is None:
            return False
        values = frame[name].to_numpy(dtype=float, na_value=np.nan)
        return bool(np.isfinite(values).any())

    def reward_functions(self) -> list[str]:
        """Names ``<f>`` of the per-reward-function columns ``reward/<f>``."""
        return [c[len("reward/"):] for c in self.train.columns if c.startswith("reward/")]

    def _frame(self, split: str) -> pd.DataFrame:
        split = check_choice("split", split, ("train", "eval"))
        return self.train if split == "train" else self.eval

    def _resolve(self, metric: str, frame: pd.DataFrame, split: str, strict: bool = True) -> str | None:
        if metric in frame.columns:
            return metric
        formats = (self.format, "trl", "notebook", "verl")
        # 'eval_reward' names the eval table's 'reward', never the training reward
        eval_key = split == "train" and any(normalize_key(metric, source_format=f)[1] == "eval" for f in formats)
        if not eval_key and metric in self.columns and self.columns[metric] in frame.columns:
            return self.columns[metric]
        for fmt in formats if not eval_key else ():
            name, _ = normalize_key(metric, source_format=fmt)
            if name in frame.columns:
                return name
        if not strict:
            return None
        available = [c for c in frame.columns if c != "step"]
        hint = (f" ({metric!r} is an evaluation metric: read the eval table, e.g. `fit --split eval "
                f"--metric {normalize_key(metric, source_format='trl')[0]}`)") if eval_key else ""
        # a column read but dropped for holding no numbers: say so rather than "no column"
        dropped = [n.split("dropped column ", 1)[1].split(":")[0] for n in self.notes if "dropped column " in n]
        wanted = {repr(metric)} | {repr(c) for c, n in self.columns.items() if n == metric}
        dropped_hint = "".join(f"; column {d} was dropped: it holds no numbers" for d in dropped if d in wanted)
        raise DataError(
            f"no column {metric!r} in the {split} table of {self.source}{hint}{dropped_hint}; available: "
            + (", ".join(available) if available else "none")
        )

    def series(self, metric: str, *, split: str = "train", finite: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """One metric as arrays ``(steps, values)`` without its missing values.

        Parameters
        ----------
        metric : str
            A normalised name (``"reward"``, ``"reward/correctness"``) or the name as the log
            spells it (``"rewards/correctness/mean"``, ``"Training Loss"``, ``"critic/score/mean"``).
        split : {"train", "eval"}
            Which table.
        finite : bool
            Drop NaN and infinite values (default). A :class:`LogWarning` says how many steps
            were dropped and why.

        Returns
        -------
        steps : ndarray of int64, shape (n,)
            Optimizer steps, increasing.
        values : ndarray of float64, shape (n,)

        Raises
        ------
        DataError
            If the table has no such column; the message lists the available ones.

        Examples
        --------
        >>> log = from_records([{"step": 1, "reward": 0.1}, {"step": 2, "reward": 0.3}])
        >>> log.series("reward")
        (array([1, 2]), array([0.1, 0.3]))
        """
        frame = self._frame(split)
        name = self._resolve(metric, frame, split)
        steps = frame.index.to_numpy(dtype=np.int64)
        values = frame[name].to_numpy(dtype=float, na_value=np.nan)
        if finite:
            nan = np.isnan(values)
            inf = np.isinf(values)
            if nan.any() or inf.any():
                parts = []
                if nan.any():
                    parts.append(f"{int(nan.sum())} NaN")
                if inf.any():
                    parts.append(f"{int(inf.sum())} infinite (first at step {int(steps[inf][0])})")
                warnings.warn(
                    f"{self.source}: {name!r} ({split}): dropped {' and '.join(parts)} of {len(values)} steps",
                    LogWarning, stacklevel=2,
                )
                keep = ~(nan | inf)
                steps, values = steps[keep], values[keep]
        return steps, values

    def to_records(self, split: str = "train") -> list[dict[str, Any]]:
        """The table as a list of dicts (NaN cells left out), in step order.

        Parameters
        ----------
        split : {"train", "eval"}, default "train"
            Which table.

        Returns
        -------
        list of dict
            One dict per row: ``step`` as ``int``, every other non-missing cell as ``float``
            (normalised column names). Empty for an empty table.

        Raises
        ------
        ParameterError
            Unknown ``split``.

        Examples
        --------
        >>> from_records([{"step": 1, "reward": 0.5}, {"step": 2, "loss": 0.1}]).to_records()
        [{'step': 1, 'reward': 0.5}, {'step': 2, 'loss': 0.1}]
        """
        frame = self._frame(split)
        cols = list(frame.columns)
        out = []
        for row in frame.itertuples(index=False, name=None):
            out.append({c: (int(v) if c == "step" else float(v)) for c, v in zip(cols, row) if pd.notna(v)})
        return out

    def describe(self) -> str:
        """Short human-readable summary (format, steps, columns, reward_std kind, notes)."""
        lines = [
            f"{self.source}: {self.format} ({self.container}), {len(self.train)} training steps"
            + (f" [{self.steps[0]}..{self.steps[-1]}]" if len(self.train) else "")
            + f", {len(self.eval)} eval rows",
            f"columns: {', '.join(self.metrics)}",
            f"reward_std: {self.reward_std_kind}",
        ]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


# ============================================================================================
# Reading
# ============================================================================================

def _note(notes: list[str], message: str, *, warn: bool) -> None:
    notes.append(message)
    if warn:
        warnings.warn(message, LogWarning, stacklevel=3)


def read_log(
    path: str | Path,
    *,
    format: str = "auto",  # noqa: A002 - the natural name for users
    mapping: Mapping[str, str] | None = None,
    trl_version: str | None = None,
    reward_std_kind: str | None = None,
    run: str | None = None,
) -> RunLog:
    """Read a training log of any supported format into a :class:`RunLog`.

    The format is detected from the content, not the file name: a JSON object with
    ``log_history`` is a TRL ``trainer_state.json``; a JSON list or JSON lines are records; anything
    else is read as CSV (comma, tab or semicolon separated). The records' keys then decide
    between TRL, notebook display names, verl, our own normalised keys, or ``mapping``.

    Parameters
    ----------
    path : str or pathlib.Path
        The log file.
    format : {"auto", "trl", "notebook", "verl", "grpo_dynamics", "generic"}
        Force a format instead of detecting it.
    mapping : dict of str to str, optional
        Normalised name -> the file's column, e.g. ``{"step": "iter", "reward": "acc"}``. Applied
        before the format's own names; each column named must exist.
    trl_version : str, optional
        The TRL release that wrote the log (decides what ``reward_std`` means; module docstring).
    reward_std_kind : {"group_mean_std", "batch_std", "unknown"}, optional
        Override the detection of what ``reward_std`` means.
    run : str, optional
        Which run of a file holding several (a label of its run column, ``"arm=pure-GRPO"``, or a
        W&B export's run name); see :mod:`grpo_core.runs.logs.aliases`.

    Returns
    -------
    RunLog

    Raises
    ------
    DataError
        The file does not exist, is empty, has no rows, is truncated or broken JSON (the message
        names the line and column), has no step column (the message says what ``mapping`` to
        pass), has non-integer steps, or its format is not recognised (the message lists the
        formats and how to map columns).
    ParameterError
        ``format`` or ``reward_std_kind`` is not an allowed value, or ``trl_version`` is not a
        version number.

    Warns
    -----
    LogWarning
        When rows were merged, sorted or dropped, cells were not numbers, or the last JSONL line
        was incomplete (module docstring, "Row handling").

    Examples
    --------
    >>> from grpo_core.runs.datasets import real_log_path
    >>> log = read_log(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    >>> log.format, len(log.train), log.reward_std_kind
    ('notebook', 250, 'group_mean_std')
    """
    check_choice("format", format, ("auto",) + FORMATS)
    p = Path(path)
    source = str(path)
    if not p.exists():
        raise DataError(f"{source}: no such file")
    if p.is_dir():
        raise DataError(f"{source}: is a directory; pass the log file itself (trainer_state.json, "
                        "metrics.jsonl or a CSV)")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{source}: not a text file (byte {exc.start} is not UTF-8); "
                        "expected JSON, JSON lines or CSV") from None
    if not text.strip():
        raise DataError(f"{source}: the file is empty")
    notes: list[str] = []
    meta: dict[str, Any] = {}
    options = dict(fmt=format, mapping=mapping, source=source, notes=notes, meta=meta, trl_version=trl_version,
                   reward_std_kind=reward_std_kind, run=run)
    # [hook: console] console, stream and verl console logs (grpo_core.runs.logs.console)
    found = console.parse_text(text, source, notes, meta)
    if found is not None:
        return _build(found[0], None, container=found[1], **options)
    stripped = text.lstrip()
    if stripped[0] in "{[":
        records, container = _parse_json_text(text, source, notes, meta)
        return _build(records, None, container=container, **options)
    frame = _parse_csv_text(text, source)
    return _build(None, frame, container="csv", **options)


def from_records(
    records: Iterable[Mapping[str, Any]],
    *,
    format: str = "auto",  # noqa: A002
    mapping: Mapping[str, str] | None = None,
    source: str = "<records>",
    trl_version: str | None = None,
    reward_std_kind: str | None = None,
) -> RunLog:
    """Build a :class:`RunLog` from log entries in memory (a TRL ``log_history`` list, dicts).

    Parameters and behaviour as :func:`read_log` (``records`` replaces the file).

    Raises
    ------
    DataError
        No records, a record that is not a mapping, no step column, unknown format.

    Examples
    --------
    >>> log = from_records([{"step": 1, "loss": 0.0, "rewards/acc": 0.2},
    ...                     {"step": 2, "loss": 0.0, "rewards/acc": 0.4}])
    >>> log.format, list(log.train.columns)
    ('trl', ['step', 'loss', 'reward/acc', 'reward'])
    """
    check_choice("format", format, ("auto",) + FORMATS)
    records = list(records)
    for i, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise DataError(f"{source}: record {i} is a {type(r).__name__}, not a mapping of metric names to values")
    return _build(records, None, container="records", fmt=format, mapping=mapping, source=source,
                  notes=[], meta={}, trl_version=trl_version, reward_std_kind=reward_std_kind)


def from_frame(
    frame: pd.DataFrame,
    *,
    format: str = "auto",  # noqa: A002
    mapping: Mapping[str, str] | None = None,
    source: str = "<frame>",
    trl_version: str | None = None,
    reward_std_kind: str | None = None,
) -> RunLog:
    """Build a :class:`RunLog` from a table in memory (one row per log entry).

    Parameters and behaviour as :func:`read_log`; a named index that is not in the columns
    (``step``) is used as a column.

    Raises
    ------
    DataError
        No rows, no step column, unknown format.

    Examples
    --------
    >>> import pandas as pd
    >>> log = from_frame(pd.DataFrame({"step": [1, 2], "reward": [0.1, 0.2], "kl": [0.0, 0.01]}))
    >>> log.series("kl")[1]
    array([0.  , 0.01])
    """
    check_choice("format", format, ("auto",) + FORMATS)
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}")
    if frame.index.name is not None and frame.index.name not in frame.columns:
        frame = frame.reset_index()
    return _build(None, frame.copy(), container="records", fmt=format, mapping=mapping, source=source,
                  notes=[], meta={}, trl_version=trl_version, reward_std_kind=reward_std_kind)


# --- parsing the container ------------------------------------------------------------------

def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {col}"


def _parse_json_text(text: str, source: str, notes: list[str], meta: dict) -> tuple[list, str]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        obj = None
        whole_error = exc
    else:
        whole_error = None
    if whole_error is None:
        if isinstance(obj, dict) and "log_history" in obj:
            history = obj["log_history"]
            if not isinstance(history, list):
                raise DataError(f"{source}: `log_history` is a {type(history).__name__}, expected a list of dicts")
            for key in ("global_step", "max_steps", "train_batch_size", "logging_steps", "num_train_epochs",
                        "trl_version"):
                if key in obj:
                    meta[key] = obj[key]
            if not history:
                raise DataError(f"{source}: `log_history` is empty (no step was logged yet; is "
                                "`logging_steps` larger than the number of steps run?)")
            return history, "trainer_state"
        if isinstance(obj, list):
            return obj, "json"
        if isinstance(obj, dict):
            return [obj], "jsonl"
        raise DataError(f"{source}: JSON holds a {type(obj).__name__}; expected a trainer_state.json "
                        "object with `log_history`, a list of records or one record per line")
    # Not one JSON document: JSON lines? Fast path: every line at once, as one JSON array.
    lines = text.splitlines()
    nonblank = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
    try:
        whole = json.loads("[" + ",".join(ln for _, ln in nonblank) + "]")
    except json.JSONDecodeError:
        whole = None  # some line is broken (or two share a line): find which, line by line
    if whole is not None and len(whole) == len(nonblank) and all(isinstance(r, dict) for r in whole):
        return whole, "jsonl"
    records: list = []
    broken: list[tuple[int, str]] = []
    for k, (lineno, line) in enumerate(nonblank):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            if k == 0:
                # The first line is not a JSON object on its own: one (pretty-printed) JSON
                # document that is broken or truncated.
                err = whole_error
                at_end = err.pos >= len(text.rstrip()) - 1
                why = (" (the file ends before the JSON is closed: truncated, e.g. a run killed "
                       "while writing it)") if at_end else ""
                raise DataError(f"{source}: invalid JSON at {_where(text, err.pos)}: {err.msg}{why}") from None
            if k == len(nonblank) - 1:
                _note(notes, f"{source}: line {lineno} (the last) is not complete JSON ({exc.msg}); "
                             f"kept the {len(records)} complete lines before it", warn=True)
                break
            # [hook: corrupt lines] a few broken lines mid-file are skipped and counted, many are an error
            broken.append((lineno, f"line {lineno} is not valid JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(rec, dict):
            raise DataError(f"{source}: line {lineno} is a JSON {type(rec).__name__}, expected an object "
                            "(one record of metrics per line)")
        records.append(rec)
    aliases.report_broken_lines(broken, len(nonblank), source, notes)
    return records, "jsonl"


def _parse_csv_text(text: str, source: str) -> pd.DataFrame:
    first = text.lstrip().splitlines()[0]
    counts = {sep: first.count(sep) for sep in (",", "\t", ";")}
    sep = max(counts, key=counts.get)
    if counts[sep] == 0:
        sep = ","
    header = [h.strip() for h in next(csv.reader([first], delimiter=sep))]
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise DataError(f"{source}: column name(s) {repeated} appear more than once in the header")
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True, low_memory=False)
    except (pd.errors.ParserError, csv.Error) as exc:
        # [hook: console] a text that is no format: say what was found and what is accepted
        raise DataError(f"{source}: no log format recognised: {console.describe_text(text)} "
                        f"({str(exc).strip()}); {console.ACCEPTED}") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{source}: the file is empty") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


# --- detecting the format -------------------------------------------------------------------

def _detect(keys: Iterable[str]) -> str | None:
    keys = [str(k) for k in keys]
    if any(k.startswith(_VERL_PREFIXES) or k in _VERL_EXACT and k != "step" for k in keys):
        return "verl"
    if any(k in ("Step", "Training Loss", "Validation Loss") or " / " in k for k in keys):
        return "notebook"
    own = _NORMALISED | {"split", "trl_version"}
    specific = own - set(_TRL_EXACT)
    if "split" in keys or any(k.startswith(("reward/", "reward_std/")) or k in specific for k in keys):
        return "grpo_dynamics"
    if any(k in _TRL_MARKERS or k.startswith(_TRL_PREFIXES) or k in _TRL_EXACT and "/" in k for k in keys):
        return "trl"
    known = sum(k in own and k != "step" for k in keys)
    if known >= 2 or (known >= 1 and "step" in keys):
        # Columns named like the normalised table (a CSV export, a custom JSONL): TRL's
        # top-level keys and ours coincide; treat as our own format.
        return "grpo_dynamics"
    return None


def _mapper(fmt: str):
    if fmt == "trl":
        return _trl_key
    if fmt == "notebook":
        return lambda k: _trl_key(_display_to_trl(k))
    if fmt == "verl":
        return _verl_key
    if fmt == "generic":
        return lambda k: (k[5:], "eval") if k.startswith("eval_") else (k, "train")
    return _own_key


# --- building the tables --------------------------------------------------------------------

def _build(records, frame, *, container, fmt, mapping, source, notes, meta, trl_version, reward_std_kind,
           run=None) -> RunLog:
    if reward_std_kind is not None:
        check_choice("reward_std_kind", reward_std_kind, ("group_mean_std", "batch_std", "unknown"))
    if records is not None:
        if not records:
            raise DataError(f"{source}: no records (the log has no rows)")
        for i, rec in enumerate(records):
            if not isinstance(rec, Mapping):
                raise DataError(f"{source}: record {i} is a {type(rec).__name__}, not an object of metric names "
                                "to values")
        frame = pd.DataFrame.from_records(records)
    if frame is None or len(frame) == 0:
        raise DataError(f"{source}: no rows (only a header?)")
    frame.columns = [str(c) for c in frame.columns]
    if frame.columns.duplicated().any():
        dup = sorted(set(frame.columns[frame.columns.duplicated()]))
        raise DataError(f"{source}: column name(s) {dup} appear more than once")

    # Versions recorded in the rows (our callback writes `trl_version`).
    versions: set[str] = set()
    if "trl_version" in frame.columns:
        versions = {str(v) for v in frame["trl_version"].dropna().unique()}
        frame = frame.drop(columns=["trl_version"])
    if "trl_version" in meta:
        versions.add(str(meta["trl_version"]))
    if trl_version is not None:
        if parse_version(trl_version) is None:
            raise ParameterError("trl_version", f"`trl_version` must be a version number such as '0.19.1' or "
                                                f"'0.27'; got {trl_version!r}")
        versions = {str(trl_version)}

    # User mapping: normalised name -> the file's column.
    renamed_by_user: dict[str, str] = {}
    if mapping:
        if not isinstance(mapping, Mapping):
            raise DataError(f"`mapping` must be a dict of normalised name -> column; got {type(mapping).__name__}")
        for target, column in mapping.items():
            if column not in frame.columns:
                raise DataError(f"{source}: `mapping` names column {column!r} (for {target!r}), which the file "
                                f"does not have; columns: {', '.join(frame.columns)}")
            if not isinstance(target, str) or not target:
                raise DataError(f"`mapping` keys must be normalised column names; got {target!r}")
            renamed_by_user[column] = target
        clash = set(renamed_by_user.values()) & (set(frame.columns) - set(renamed_by_user))
        if clash:
            for c in clash:
                frame = frame.drop(columns=[c])
                _note(notes, f"column {c!r} replaced by the one `mapping` names for it", warn=True)
        frame = frame.rename(columns=renamed_by_user)
        _note(notes, "mapped by the user: " + ", ".join(f"{c!r} -> {t!r}" for c, t in renamed_by_user.items()),
              warn=False)

    # [hook: aliases] W&B exports, several runs, step and reward aliases (grpo_core.runs.logs.aliases;
    # after the user's mapping, so a column it names is never renamed)
    frame = aliases.prepare_frame(frame, source, notes, run=run)

    # Format.
    if fmt == "auto":
        rest = [c for c in frame.columns if c not in set(renamed_by_user.values())]
        detected = _detect(rest)
        if detected is None:
            if mapping:
                detected = "generic"
            else:
                shown = ", ".join(list(frame.columns)[:20]) + (" ..." if frame.shape[1] > 20 else "")
                raise DataError(
                    f"{source}: unknown log format (columns: {shown}). Recognised: TRL trainer_state.json or "
                    "log_history, notebook progress-table CSV, verl metrics, grpo-dynamics metrics.jsonl. For "
                    "another table give the column mapping, e.g. mapping={'step': 'iter', 'reward': 'acc'} "
                    "(command line: --map step=iter --map reward=acc)")
        fmt = detected
    mapper = _mapper(fmt)

    # Split column for our own format.
    split_of_row = None
    if "split" in frame.columns and fmt in ("grpo_dynamics", "generic"):
        split_of_row = frame["split"].astype(str).str.lower().where(frame["split"].notna(), "train")
        bad = sorted(set(split_of_row.unique()) - set(_SPLITS))
        if bad:
            raise DataError(f"{source}: `split` must be one of {list(_SPLITS)}; found {bad}")
        frame = frame.drop(columns=["split"])

    # Map every column to (normalised name, split).
    protected = set(renamed_by_user.values())
    targets: dict[str, tuple[str, str]] = {}
    for col in frame.columns:
        if col in protected:
            targets[col] = (col, "train")
        elif col in ("step",):
            targets[col] = ("step", "train")
        else:
            targets[col] = mapper(col)
    if "step" in protected:
        # the user named the step column: any other column the format reads as the step gives way
        for c in [c for c, (n, _) in targets.items() if n == "step" and c != "step"]:
            frame = frame.drop(columns=[c])
            del targets[c]
            _note(notes, f"column {c!r} ignored: `mapping` names another column as the step", warn=True)
    step_cols = [c for c, (n, _) in targets.items() if n == "step"]
    if not step_cols:
        for cand in _STEP_CANDIDATES:
            if cand in frame.columns:
                targets[cand] = ("step", "train")
                step_cols = [cand]
                break
    if not step_cols:
        shown = ", ".join(list(frame.columns)[:20]) + (" ..." if frame.shape[1] > 20 else "")
        raise DataError(
            f"{source}: no step column (columns: {shown}); name the column that counts optimizer steps "
            "with mapping={'step': '<column>'} (command line: --map step=<column>)")
    if len(step_cols) > 1:
        raise DataError(f"{source}: several columns could be the step: {step_cols}; choose one with "
                        f"mapping={{'step': '{step_cols[0]}'}}")
    step_col = step_cols[0]
    columns_map = {c: n for c, (n, _) in targets.items() if c != n}

    # Steps.
    steps = pd.to_numeric(frame[step_col], errors="coerce").to_numpy(dtype=float)
    missing = ~np.isfinite(steps)
    if missing.all():
        raise DataError(f"{source}: the step column {step_col!r} holds no numbers")
    if missing.any():
        _note(notes, f"dropped {int(missing.sum())} row(s) without a step value (first at row {int(np.argmax(missing))})",
              warn=True)
        frame = frame.loc[~missing]
        if split_of_row is not None:
            split_of_row = split_of_row.loc[~missing]
        steps = steps[~missing]
    if np.any(steps != np.round(steps)):
        bad = steps[steps != np.round(steps)][:3]
        raise DataError(f"{source}: steps must be whole numbers; found {bad.tolist()} in column {step_col!r}")
    if np.any(steps < 0):
        raise DataError(f"{source}: steps must be >= 0; found {int(steps.min())}")
    steps_int = steps.astype(np.int64)

    # Numbers: every cell that is not a number becomes NaN (with a warning unless it is a
    # known placeholder such as "No log"); a column with no number at all is dropped.
    values = _numeric_columns(frame, [c for c in frame.columns if c != step_col], source, notes)

    # Which split each value belongs to. Our own format says it per row (`split`); every
    # other format says it per column (an `eval_`/`val-core/` key, a summary key). A row
    # contributes to a split when it has a value in one of that split's columns other than
    # `epoch` (TRL repeats `epoch` and `step` in eval and summary rows).
    tables: dict[str, pd.DataFrame] = {}
    summary: dict[str, Any] = {}
    used = np.zeros(len(frame), bool)
    for split in _SPLITS:
        if split_of_row is not None:
            cols = list(values)
            keep = split_of_row.to_numpy() == split
        else:
            cols = [c for c in values if targets[c][1] == split]
            informative = [values[c] for c in cols if targets[c][0] != "epoch"]
            keep = np.zeros(len(frame), bool)
            for v in informative:
                keep |= ~np.isnan(v)
        used |= keep
        if split == "summary":
            if keep.any():
                last = np.flatnonzero(keep)[-1]
                summary = {c: float(values[c][last]) for c in cols if not np.isnan(values[c][last])}
                summary["step"] = int(steps_int[last])
                _note(notes, f"kept the final summary row ({', '.join(sorted(summary))}) apart from the "
                             "training rows", warn=False)
            continue
        data = {c: values[c][keep] for c in cols}
        tables[split] = _tidy(data, steps_int[keep], {c: targets[c][0] for c in cols}, split, source, notes)
    if not used.all():
        # a row with a step but not one number (every cell empty or NaN): say so, never drop it quietly
        empty_steps = steps_int[~used]
        shown = ", ".join(str(int(s)) for s in empty_steps[:5]) + (", ..." if len(empty_steps) > 5 else "")
        _note(notes, f"{source}: dropped {len(empty_steps)} row(s) with a step but no metric value (every cell "
                     f"empty or NaN; step(s) {shown})", warn=True)
    if tables["train"].empty or tables["train"].shape[1] <= 1:
        raise DataError(f"{source}: no training rows with metrics (rows: {len(frame)}; "
                        f"eval rows: {len(tables['eval'])})")

    kind, era = _reward_std_kind(tables["train"], frame.columns, fmt, versions, reward_std_kind, notes, source)
    if versions:
        meta["trl_version"] = sorted(versions)[0] if len(versions) == 1 else sorted(versions)
    if era:
        meta["trl_era"] = era
    renamed = {c: n for c, n in columns_map.items() if c != step_col or n != "step"}
    if renamed:
        shown = ", ".join(f"{c!r} -> {n!r}" for c, n in list(renamed.items())[:12])
        more = f" and {len(renamed) - 12} more" if len(renamed) > 12 else ""
        _note(notes, f"renamed {len(renamed)} column(s): {shown}{more}", warn=False)
    return RunLog(train=tables["train"], eval=tables["eval"], format=fmt, reward_std_kind=kind, source=source,
                  notes=notes, container=container, columns=columns_map, summary=summary, meta=meta)


_NA_TOKENS = frozenset({"", "nan", "none", "null", "na", "n/a", "no log", "-"})


def _numeric_columns(frame: pd.DataFrame, cols: list[str], source: str, notes: list[str]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for col in cols:
        s = frame[col]
        if s.dtype.kind in "fiub":
            out[col] = s.to_numpy(dtype=float, na_value=np.nan)
            continue
        numeric = pd.to_numeric(s, errors="coerce")
        text = s.astype(str).str.strip().str.lower()
        placeholder = s.notna() & numeric.isna() & text.isin(_NA_TOKENS)
        bad = s.notna() & numeric.isna() & ~placeholder
        if bad.any() and not numeric.notna().any():
            _note(notes, f"dropped column {col!r}: no numbers in it (e.g. {s[bad].iloc[0]!r})", warn=False)
            continue
        if bad.any():
            _note(notes, f"{source}: {int(bad.sum())} cell(s) of {col!r} are not numbers (e.g. {s[bad].iloc[0]!r} "
                         f"in data row {int(np.flatnonzero(bad.to_numpy())[0]) + 1}); set to NaN", warn=True)
        if placeholder.any():
            _note(notes, f"{int(placeholder.sum())} placeholder cell(s) of {col!r} (e.g. {s[placeholder].iloc[0]!r}) "
                         "read as missing", warn=False)
        out[col] = numeric.to_numpy(dtype=float, na_value=np.nan)
    return out


def _tidy(data: dict[str, np.ndarray], steps: np.ndarray, names: dict[str, str], split: str, source: str,
          notes: list[str]) -> pd.DataFrame:
    """Rename, merge columns of one meaning and rows of one step, sort by step."""
    if len(steps) == 0:
        return pd.DataFrame({"step": pd.Series([], dtype=np.int64)}, index=pd.Index([], dtype=np.int64))
    merged_cols: dict[str, np.ndarray] = {}
    for col, values in data.items():
        name = names.get(col, col)
        if name in merged_cols:
            # Two source columns with one meaning (e.g. `completion_length` and
            # `completions/mean_length` in a log concatenated across TRL releases): merge.
            old = merged_cols[name]
            both = np.isfinite(old) & np.isfinite(values) & (old != values)
            if both.any():
                _note(notes, f"{source}: columns mapping to {name!r} ({split}) disagree on {int(both.sum())} "
                             f"step(s); kept {col!r}", warn=True)
            merged_cols[name] = np.where(np.isnan(values), old, values)
            _note(notes, f"merged column {col!r} into {name!r} ({split})", warn=False)
        else:
            merged_cols[name] = values
    table = pd.DataFrame(merged_cols)
    table.insert(0, "step", steps)
    all_nan = [c for c in table.columns if c != "step" and table[c].isna().all()]
    if all_nan:
        table = table.drop(columns=all_nan)
        for col in all_nan:
            # the reward is what every fit and check reads: losing it must not go unseen
            _note(notes, f"{source}: dropped column {col!r}: every value is empty or NaN ({split})",
                  warn=col == "reward" and split == "train")
    if len(table) > 1 and np.any(np.diff(steps) < 0):
        n_back = int(np.sum(np.diff(steps) < 0))
        _note(notes, f"{source}: steps were out of order ({n_back} place(s) where the step goes back, {split}); "
                     "sorted them", warn=True)
        table = table.sort_values("step", kind="stable")
    dup = table["step"].duplicated(keep=False).to_numpy()
    if dup.any():
        dups = table.loc[dup]
        value_cols = [c for c in table.columns if c != "step"]
        conflict_steps: list[int] = []
        if value_cols:
            counts = dups.groupby("step", sort=False)[value_cols].nunique()
            conflicted = counts.gt(1).any(axis=1)
            conflict_steps = sorted(int(s) for s in conflicted.index[conflicted.to_numpy()])
        merged = table.groupby("step", sort=True).last()  # last non-null value per column
        merged.insert(0, "step", merged.index.to_numpy(dtype=np.int64))
        n_dup = int(dups["step"].nunique())
        if conflict_steps:
            _note(notes, f"{source}: {len(conflict_steps)} step(s) logged more than once with different values "
                         f"({split}; first at step {conflict_steps[0]}), e.g. a run resumed from a checkpoint; "
                         "kept the last value of each", warn=True)
        if n_dup > len(conflict_steps):
            _note(notes, f"merged the partial rows of {n_dup - len(conflict_steps)} step(s) ({split}; TRL logs "
                         "some keys in separate rows)", warn=False)
        table = merged
    table.index = pd.Index(table["step"].to_numpy(dtype=np.int64))
    table["step"] = table["step"].astype(np.int64)
    table.index.name = None
    return table


def _reward_std_kind(train: pd.DataFrame, raw_columns, fmt: str, versions: set[str], override: str | None,
                     notes: list[str], source: str) -> tuple[str, str | None]:
    era = None
    raw = [str(c) for c in raw_columns]
    if fmt in ("trl", "notebook"):
        keys = {_display_to_trl(c) for c in raw} if fmt == "notebook" else set(raw)
        keys = {k[5:] if k.startswith("eval_") else k for k in keys}
        old = "completion_length" in keys or any(
            k.startswith("rewards/") and not k.endswith(("/mean", "/std")) for k in keys)
        new = any(k.startswith("completions/") or k.startswith("rewards/") and k.endswith("/mean") for k in keys)
        if old and not new:
            era = "<0.18"
        elif new:
            era = ">=0.21" if "entropy" in keys else ">=0.18"
    if override is not None:
        _note(notes, f"reward_std taken as {override} (given)", warn=False)
        return override, era
    if "reward_std" not in train.columns:
        return "unknown", era
    if versions:
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
            return "mixed", era
        if kinds:
            kind = kinds.pop()
            _note(notes, f"reward_std is the {'batch std' if kind == 'batch_std' else 'mean per-group std'} "
                         f"(TRL {', '.join(sorted(versions))})", warn=False)
            return kind, era
    if era == "<0.18":
        _note(notes, "reward_std is the mean per-group std (pre-0.18 TRL keys, so before 0.27)", warn=False)
        return "group_mean_std", era
    # The values.
    rs = train["reward_std"].to_numpy(dtype=float)
    if "frac_reward_zero_std" in train.columns:
        frac = train["frac_reward_zero_std"].to_numpy(dtype=float)
        ok = np.isfinite(frac) & np.isfinite(rs)
        if np.any(ok & (frac >= 1 - 1e-9) & (rs > 1e-6)):
            _note(notes, "reward_std is the batch std (it is > 0 on a step where every group had zero spread)",
                  warn=False)
            return "batch_std", era
    funcs = [c for c in train.columns if c.startswith("reward_std/")]
    means = [c for c in train.columns if c.startswith("reward/")]
    if len(funcs) == 1 and len(means) == 1 and "reward" in train.columns:
        fs = train[funcs[0]].to_numpy(dtype=float)
        # Only if that function *is* the reward (weight 1, no other component).
        r, fm = train["reward"].to_numpy(dtype=float), train[means[0]].to_numpy(dtype=float)
        same = np.isfinite(r) & np.isfinite(fm)
        is_whole = same.sum() >= 3 and np.mean(np.abs(r[same] - fm[same]) <= 1e-6 + 1e-6 * np.abs(r[same])) >= 0.9
        ok = np.isfinite(fs) & np.isfinite(rs) & is_whole
        if ok.sum() >= 3:
            scale = np.maximum(np.abs(fs[ok]), 1e-12)
            equal = np.abs(rs[ok] - fs[ok]) <= 1e-6 + 1e-4 * scale
            below = rs[ok] < fs[ok] * (1 - 1e-3) - 1e-9
            if equal.mean() >= 0.9:
                _note(notes, f"reward_std is the batch std (equal to {funcs[0]}, the batch std of the only "
                             "reward function, on >= 90% of steps)", warn=False)
                return "batch_std", era
            if below.mean() >= 0.5:
                _note(notes, f"reward_std is the mean per-group std (below {funcs[0]}, the batch std of the only "
                             "reward function, on most steps)", warn=False)
                return "group_mean_std", era
    _note(notes, "could not tell whether reward_std is the mean per-group std (TRL < 0.27) or the batch std "
                 "(>= 0.27); pass trl_version= (--trl-version) or reward_std_kind= to say", warn=False)
    return "unknown", era


# ============================================================================================
# Example logs shipped with the package
# ============================================================================================

def list_example_logs() -> list[str]:
    """Names of the example logs in ``grpo_core/data/example_logs`` (sorted; see its README).

    Examples
    --------
    >>> list_example_logs()[0]
    '01-all-groups-zero-spread.json'
    """
    from importlib import resources

    folder = Path(str(resources.files("grpo_core.data").joinpath("example_logs")))
    return sorted(p.name for p in folder.iterdir() if p.suffix in {".json", ".jsonl", ".csv"})


def example_log_path(name: str) -> Path:
    """Path of one example log shipped with the package (constructed logs of the user cases).

    Parameters
    ----------
    name : str
        A name from :func:`list_example_logs`, with or without its extension, or just its number
        (``"03"``).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        No example log has that name (the message lists them).

    Examples
    --------
    >>> example_log_path("03").name
    '03-growing-oscillation.csv'
    """
    from importlib import resources

    from ...errors import ParameterError

    folder = Path(str(resources.files("grpo_core.data").joinpath("example_logs")))
    names = list_example_logs()
    for candidate in names:
        if name in (candidate, candidate.rsplit(".", 1)[0], candidate.split("-", 1)[0]):
            return folder / candidate
    raise ParameterError("name", f"`name` must be one of {names}; got {name!r}")
