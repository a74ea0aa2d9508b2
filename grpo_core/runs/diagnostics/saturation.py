"""Saturation and the cost of early zero spread: advantage degeneration that is not a failure.

Zero-spread groups give no gradient whatever the reason, but two reasons are not failures: the reward
sits at its ceiling (every group all-correct: the task is solved, ``saturation``, info), and the run
learned anyway (a hard task at the start leaves many groups all-failed; the finding stays
``advantage_degeneration``, as info, with what it cost in rollouts).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..logs import RunLog
from .findings import _RANK, Finding
from .series import _is_binary_compatible, _quiet_series, _steps_spanned
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def at_ceiling(log: RunLog, first: int, last: int, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> bool:
    """Whether the reward over steps ``first``-``last`` sits at its ceiling.

    A 0/1-compatible reward: its mean there is at least ``saturation_level`` (0.9). Otherwise the
    ceiling is the run's highest per-step reward: the mean there must be at least ``saturation_level``
    of the way from the run's lowest to it, and (a positive reward) at least ``saturation_level`` of it.

    Parameters
    ----------
    log : RunLog
    first, last : int
        Steps of the stretch.
    thresholds : Thresholds

    Returns
    -------
    bool
        ``False`` without rewards in the stretch.
    """
    th = thresholds
    if not log.has("reward"):
        return False
    st, r = _quiet_series(log, "reward")
    sel = (st >= first) & (st <= last)
    if not sel.any():
        return False
    mean = float(np.mean(r[sel]))
    if _is_binary_compatible(r):
        return mean >= th.saturation_level
    lo, hi = float(np.min(r)), float(np.max(r))
    return hi > 0 and hi > lo and mean >= lo + th.saturation_level * (hi - lo) and mean >= th.saturation_level * hi


def judge_degeneration(log: RunLog, finding: Finding, learning: Finding | None, *, group_size: int | None = None,
                       num_prompts: int | None = None, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding:
    """Re-read an :func:`advantage_degeneration` finding: saturation, a cost, or the failure it is.

    Parameters
    ----------
    log : RunLog
    finding : Finding
        The advantage-degeneration finding.
    learning : Finding or None
        The :func:`not_learning` finding (``None``: the reward rose significantly).
    group_size, num_prompts : int, optional
        For the number of wasted completions (``G`` x prompts per step x zero-spread group-steps).
    thresholds : Thresholds

    Returns
    -------
    Finding
        Without a reward (no column, or every value empty or NaN) the same finding as info (evidence
        ``no_reward``): zero spread alone cannot tell a failure from saturation or from the cost of a run
        that learns, and the verdict must not rest on a metric that is not there (it is "inconclusive":
        the learning check cannot run). ``saturation`` (info) when the reward sits at its ceiling over the
        stretch; the same finding as info with the cost (``wasted_rollout_fraction``, ``wasted_steps``
        (optimizer steps, not logged rows: a log written every N steps has a row per N steps),
        ``wasted_completions``) when the run learned (no not-learning warning) and the reward at the end is
        not below its level in the stretch; the finding unchanged otherwise (or when it is info already).
    """
    if _RANK[finding.severity] == 0:
        return finding
    s0, s1 = finding.steps
    frac = finding.evidence.get("observed_zero_spread_fraction", 0.0)
    if not log.has("reward"):
        return replace(finding, severity="info", evidence=dict(finding.evidence, no_reward=True),
                       message=finding.message.rstrip(".") + ". Without a reward this cannot be judged (a failure, "
                       "saturation with every group all-correct, or the cost of a run that learns look alike): "
                       "reported as info.")
    n_steps = _steps_spanned(log, s0, s1)
    if at_ceiling(log, s0, s1, thresholds):
        ev = dict(finding.evidence, saturated=True)
        return Finding("saturation", "info", finding.steps, s0, ev,
                       f"Saturation: {frac:.0%} of groups had zero spread over steps {s0}-{s1} because the reward "
                       "sits at its ceiling (groups all-correct): the task is solved at this difficulty, the run "
                       "is done.")
    learned = learning is None or _RANK[learning.severity] == 0
    if not learned or not log.has("reward"):
        return finding
    st, r = _quiet_series(log, "reward")
    sel = (st >= s0) & (st <= s1)
    late = float(np.mean(r[-max(2, r.size // 10):]))
    if sel.any() and late < float(np.mean(r[sel])):
        return finding
    wasted = frac * n_steps
    ev = dict(finding.evidence, wasted_rollout_fraction=frac, wasted_steps=wasted)
    cost = f"about {frac:.0%} of the rollouts of steps {s0}-{s1} ({wasted:.0f} steps' worth of generation"
    if group_size is not None and num_prompts is not None:
        ev["wasted_completions"] = int(round(wasted * group_size * num_prompts))
        cost += f", {ev['wasted_completions']} completions"
    cost += ")"
    return replace(finding, severity="info", evidence=ev,
                   message=finding.message.rstrip(".") + f". The run learned anyway: this is a cost, not a failure: "
                   f"{cost} gave no gradient.",
                   advice="a larger G or a difficulty filter (drop prompts solved 0/G or G/G) would recover "
                          "those rollouts")
