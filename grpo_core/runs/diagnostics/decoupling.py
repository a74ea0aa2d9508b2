"""Train/eval decoupling (reward hacking): the training reward rises, what it should measure does not."""

from __future__ import annotations

import numpy as np

from ...errors import DataError
from ..logs import RunLog
from .findings import _RANK, Finding
from .series import _needed_series, _quiet_series, _too_few, _trend
from .thresholds import DEFAULT_THRESHOLDS, Thresholds

_CORRECTNESS_WORDS = ("correct", "accuracy", "acc", "answer", "exact", "solution", "solved", "pass", "math",
                      "verif")


def _eval_metric(log: RunLog, eval_metric: str | None) -> str | None:
    if eval_metric is not None:
        return eval_metric
    cols = [c for c in log.eval.columns if c != "step" and log.has(c, "eval")]
    corr = [c for c in cols if c.startswith("reward/") and any(w in c.lower() for w in _CORRECTNESS_WORDS)]
    for cand in corr + ["accuracy", "reward"]:
        if cand in cols:
            return cand
    scored = [c for c in cols if any(w in c.lower() for w in ("acc", "score", "reward", "pass", "correct"))]
    return scored[0] if scored else None


def train_eval_decoupling(log: RunLog, *, eval_metric: str | None = None, correctness: list[str] | None = None,
                          thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the training reward rises while what it should measure does not.

    Two comparisons, each between the training reward and a measure of real success:

    * the eval metric (``eval_metric``; default: an eval reward function named like correctness,
      else ``accuracy``, else the eval ``reward``, else the first eval column named like a score),
      at least 3 eval points;
    * inside the training log, the reward functions named like correctness (``correct``,
      ``accuracy``, ``answer``, ``exact``...; or the ``correctness`` list) against the total
      reward, when the log has several reward functions.

    Each curve's rise is the z-score of its least-squares slope over the steps they share (every
    point counts; the messages quote the means of the first 10% and the last 25%). Decoupled: the
    training reward rises (z >= ``trend_z``) and the measure does not (z < ``flat_z``): warning;
    or the measure falls (z <= ``falling_z``) while the reward rises: critical (reward hacking
    proper).

    Parameters
    ----------
    log : RunLog
    eval_metric : str, optional
        Eval column to compare (normalised or original name).
    correctness : list of str, optional
        Reward-function names (``<f>`` of ``reward/<f>``) that measure correctness.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        The most severe comparison (every one in ``evidence["comparisons"]``); ``None`` when no
        measure is left behind by a rising reward.

    Raises
    ------
    DataError
        No reward, or neither an eval metric nor a correctness-like reward function to compare
        (the message says what to pass); an ``eval_metric`` that is not in the eval table; a
        ``correctness`` name that is not one of the log's reward functions.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "reward": 0.2 + 0.006 * s} for s in range(1, 101)]
    >>> recs += [{"step": s, "eval_reward": 0.3 + 0.001 * (s % 20 == 0)} for s in range(10, 101, 10)]
    >>> train_eval_decoupling(from_records(recs)).severity
    'warning'
    """
    th = thresholds
    rt, r = _needed_series(log, "train_eval_decoupling", "reward")
    comparisons = _comparisons(log, eval_metric, correctness)
    if not comparisons:
        raise DataError(
            f"train_eval_decoupling needs eval rows (at least 3) or a correctness reward function "
            f"besides others in {log.source}; pass eval_metric= (--eval-metric) or correctness= (--correctness)"
        )
    if r.size < 8:
        raise _too_few(log, "train_eval_decoupling", 8, "training rewards", r.size)
    findings = []
    for label, t_m, v_m, _kind in comparisons:
        lo, hi = max(t_m[0], rt[0]), min(t_m[-1], rt[-1])
        sel = (rt >= lo) & (rt <= hi)
        if sel.sum() < 8:
            continue
        # a measure taken before the first logged training step (an eval at step 0) is of the policy
        # that step's rollouts came from: it is where the measure started, so it counts
        before = t_m[t_m <= rt[0]]
        msel = (t_m >= (before.max() if before.size else lo)) & (t_m <= hi)
        if msel.sum() < 3:
            continue
        train_rise = _trend(rt[sel], r[sel])
        meas_rise = _trend(t_m[msel], v_m[msel])
        ev = {"measure": label, "train_reward": train_rise, "measure_rise": meas_rise, "steps": [int(lo), int(hi)]}
        if train_rise["z"] >= th.trend_z and meas_rise["z"] <= th.falling_z:
            findings.append(
                (
                    "critical",
                    ev,
                    (
                        f"The training reward rose from {train_rise['early']:.3g} "
                        f"to {train_rise['late']:.3g} while the "
                        f"{label} fell from {meas_rise['early']:.3g} to {meas_rise['late']:.3g} (slope z = "
                        f"{meas_rise['z']:.2g}; reward hacking)"
                    ),
                )
            )
        elif train_rise["z"] >= th.trend_z and meas_rise["z"] < th.flat_z:
            findings.append(
                (
                    "warning",
                    ev,
                    (
                        f"The training reward rose from {train_rise['early']:.3g} "
                        f"to {train_rise['late']:.3g} while the "
                        f"{label} did not rise significantly ({meas_rise['early']:.3g} -> {meas_rise['late']:.3g}, "
                        f"slope z = {meas_rise['z']:.2g})"
                    ),
                )
            )
    if not findings:
        return None
    findings.sort(key=lambda x: -_RANK[x[0]])
    severity, ev, msg = findings[0]
    evidence = {"comparisons": [f[1] for f in findings], **ev}
    first, last = ev["steps"]
    return Finding("train_eval_decoupling", severity, (first, last), None, evidence, msg + ".")


def _comparisons(
    log: RunLog, eval_metric: str | None, correctness: list[str] | None
) -> list[tuple[str, np.ndarray, np.ndarray, str]]:
    """``(label, steps, values, split)`` of each measure of real success the log has."""
    comparisons: list[tuple[str, np.ndarray, np.ndarray, str]] = []
    metric = _eval_metric(log, eval_metric)
    if metric is not None and len(log.eval):
        et, ev = _quiet_series(log, metric, "eval")
        if ev.size >= 3:
            comparisons.append((f"eval {metric}", et, ev, "eval"))
    elif eval_metric is not None:
        log.series(eval_metric, split="eval")  # raises the DataError listing the eval columns
    funcs = log.reward_functions()
    unknown = [f for f in (correctness or []) if f not in funcs]
    if unknown:
        raise DataError(
            f"`correctness` names {unknown}, not reward functions of {log.source}; its reward "
            f"functions: {', '.join(funcs) or 'none'}"
        )
    if len(funcs) >= 2:
        names = (
            correctness
            if correctness is not None
            else [f for f in funcs if any(w in f.lower() for w in _CORRECTNESS_WORDS)]
        )
        for f in names:
            if f in funcs and len(names) < len(funcs):
                ft, fv = _quiet_series(log, f"reward/{f}")
                if correctness is None and fv.size and np.ptp(fv) == 0:
                    continue  # a reward function that never varies (never fires) measures nothing
                comparisons.append((f"reward function {f}", ft, fv, "train"))
    return comparisons
