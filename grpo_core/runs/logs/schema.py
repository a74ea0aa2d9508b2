"""The normalised log: formats read, column names, splits, and the warning that reports changes.

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
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import numpy as np

from ...errors import DataError

#: Formats :func:`~grpo_core.runs.logs.read_log` understands (``"auto"`` detects one of them).
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
#: Columns tried, in order, as the step when the format names none.
_STEP_CANDIDATES = ("step", "Step", "global_step", "training/global_step", "trainer/global_step", "_step")
_SPLITS = ("train", "eval", "summary")
#: How a logged NaN is written as text (lower case): Python/NumPy ``nan``, C ``-nan``, MSVC ``1.#QNAN``.
#: Such a cell is a value the run logged (a numerical failure), unlike an empty cell or a missing key,
#: which mean the metric was not logged at that step. JSON records' float NaN are marked with
#: :data:`NAN_MARK` before the table is built, so the two stay apart through every stage.
_NAN_TEXT = frozenset({"nan", "-nan", "+nan", "nan(ind)", "-nan(ind)", "1.#qnan", "-1.#qnan", "1.#ind", "-1.#ind"})
NAN_MARK = "nan"
#: Cells read as "not logged" in a CSV (pandas' defaults without the NaN spellings of :data:`_NAN_TEXT`).
_CSV_MISSING = ("", "#N/A", "#N/A N/A", "#NA", "<NA>", "N/A", "NA", "NULL", "None", "n/a", "null")


def _nan_text(values) -> np.ndarray:
    """Which cells of a column (pandas Series) are a NaN written as text (bool array)."""
    if values.dtype.kind in "fiub":
        return np.zeros(len(values), bool)
    text = values.astype(str).str.strip().str.lower()
    return (values.notna() & text.isin(_NAN_TEXT)).to_numpy(dtype=bool)


class LogWarning(UserWarning):
    """Something was done to a log to make it usable (rows merged, sorted, dropped)."""


def load_json(text: str, source: str):
    """``json.loads`` for a log: JSON nested deeper than the parser's recursion allows (about 1,000
    levels; a training log is a few deep) is a :class:`DataError` naming ``source``, not a
    RecursionError. A :class:`json.JSONDecodeError` passes through (callers try JSON lines next)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise DataError(f"{source}: JSON nested deeper than can be read (more than about "
                        f"{sys.getrecursionlimit()} levels); a training log's records are a few levels "
                        "deep") from None


def quoted(value: Any, limit: int = 80) -> str:
    """``repr`` of a name or a cell quoted from a log, cut to about ``limit`` characters with how long it
    was: a 10 MB cell or column name is said, not echoed whole into every message, note and report."""
    text = str(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else repr(value)
    return repr(text[: limit - 20] + "...") + f" ({len(text):,} characters)"


def _note(notes: list[str], message: str, *, warn: bool) -> None:
    notes.append(message)
    if warn:
        warnings.warn(message, LogWarning, stacklevel=3)
