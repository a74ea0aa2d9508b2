"""Off-policy mismatch: the mean importance ratio of an on-policy run is far from 1."""

from __future__ import annotations

import math

import numpy as np

from ...errors import DataError
from ..logs import RunLog
from .findings import Finding
from .series import _absent_reason, _longest_run, _not_computed, _quiet_series, _smooth, _too_few, _window
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def _ratio_columns(log: RunLog) -> list[str]:
    cols = [c for c in log.train.columns if str(c).endswith("train_infer_ratio_mean") and log.has(c)]
    return (["importance_ratio_mean"] if log.has("importance_ratio_mean") else []) + cols


def off_policy_mismatch(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check that the mean importance-sampling ratio stays near 1.

    The ratio between the training and the generation log-probabilities of the same tokens
    (``importance_ratio_mean``, TRL's vLLM importance-sampling columns; verl's
    ``*train_infer_ratio_mean``) is 1 on average for an on-policy run. Its smoothed value strictly outside
    ``[ratio_warning, 1 / ratio_warning]`` (0.8-1.25) over a sustained stretch (10% of the run, at
    least 5 steps) is a warning, outside ``[ratio_critical, 1 / ratio_critical]`` (0.5-2) critical:
    generation and training disagree (a vLLM/precision mismatch, stale weights), and the update is
    not the gradient of the sampled policy.

    Parameters
    ----------
    log : RunLog
        Needs ``importance_ratio_mean`` or verl's ``*train_infer_ratio_mean``.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` when the smoothed ratio leaves ``[ratio_warning, 1 / ratio_warning]`` over no sustained
        stretch.

    Raises
    ------
    DataError
        No mean-ratio column, one that is 0 on every step (not computed,
        :data:`~grpo_core.runs.diagnostics.series.ZERO_MEANS_NOT_COMPUTED`), or fewer than 8 values.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "importance_ratio_mean": 0.55} for s in range(1, 41)]
    >>> off_policy_mismatch(from_records(recs)).severity
    'warning'
    """
    th = thresholds
    cols = _ratio_columns(log)
    if not cols:
        raise DataError(f"off_policy_mismatch needs a mean importance ratio (importance_ratio_mean), which "
                        f"{log.source} does not have")
    usable = [c for c in cols if not _not_computed(log, c)]
    if not usable:
        raise DataError(f"off_policy_mismatch needs a mean importance ratio: the column {cols[0]} "
                        f"{_absent_reason(log, cols[0])}")
    col = usable[0]
    st, v = _quiet_series(log, col)
    keep = v > 0
    st, v = st[keep], v[keep]
    n = v.size
    if n < 8:
        raise _too_few(log, "off_policy_mismatch", 8, f"values of {col}", n)
    dev = np.abs(np.log(_smooth(v, min(_window(n, th), n), "median")))
    need = max(th.min_stretch_steps, int(math.ceil(th.min_stretch_fraction * n)))
    for severity, level in (("critical", th.ratio_critical), ("warning", th.ratio_warning)):
        # strictly outside [level, 1 / level], as the message says (a ratio of exactly 0.5 is at the bound)
        start, length = _longest_run(dev > -math.log(level) + 1e-9, max_gap=2)
        if length >= need:
            sl = slice(start, start + length)
            s0, s1 = int(st[start]), int(st[start + length - 1])
            med = float(np.median(v[sl]))
            ev = {"column": col, "median_ratio": med, "stretch": [s0, s1], "run_median_ratio": float(np.median(v))}
            return Finding("off_policy_mismatch", severity, (s0, s1), s0, ev,
                           f"Off-policy mismatch: the mean importance ratio ({col}) has a median of {med:.3g} over "
                           f"steps {s0}-{s1} (the steps' mean: {float(np.mean(v[sl])):.3g}), far from the 1 of "
                           f"an on-policy run (outside [{level:g}, {1 / level:.3g}]): "
                           "generation and training log-probabilities disagree.")
    return None
