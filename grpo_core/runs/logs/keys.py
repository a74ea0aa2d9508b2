"""Metric names: each format's key -> the normalised name and its split (train, eval, summary)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import DataError
from ...validation import check_choice
from .schema import FORMATS
from .trl import _display_to_trl, _trl_key
from .verl import _verl_key


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
