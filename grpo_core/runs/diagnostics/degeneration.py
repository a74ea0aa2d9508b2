"""Advantage degeneration: groups without reward spread (zero advantages, no gradient)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ...errors import DataError, GrpoError, ParameterError
from ...grpo import expected_zero_spread_fraction
from ...validation import check_integer, check_real
from ..logs import RunLog
from .findings import Finding
from .series import _is_binary_compatible, _longest_run, _quiet_series, _smooth, _steps_spanned
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def group_size_for_zero_spread(p, target: float = 0.5, max_group_size: int = 4096) -> int:
    """Smallest group size whose expected zero-spread fraction is at most ``target``.

    Parameters
    ----------
    p : float
        Success probability per completion, in (0, 1).
    target : float
        Largest acceptable fraction of zero-spread groups, in (0, 1).
    max_group_size : int
        Search limit (>= 2).

    Returns
    -------
    int
        ``min {G >= 2 : p^G + (1 - p)^G <= target}``.

    Raises
    ------
    ParameterError
        ``p`` not in (0, 1), ``target`` not in (0, 1), or no ``G <= max_group_size`` reaches the
        target (the message says so).

    Examples
    --------
    >>> group_size_for_zero_spread(0.18, 0.5)
    4
    >>> group_size_for_zero_spread(0.02, 0.5)
    35
    """
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    target = check_real("target", target, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    max_group_size = check_integer("max_group_size", max_group_size, low=2)
    g = np.arange(2, max_group_size + 1, dtype=float)
    ok = np.flatnonzero(p ** g + (1 - p) ** g <= target)
    if ok.size == 0:
        raise ParameterError("target", f"no group size up to {max_group_size} brings the zero-spread fraction at "
                                       f"p = {p} to {target}")
    return int(g[ok[0]])


def zero_spread_series(log: RunLog, *, group_size: int | None = None, binary_reward: bool | None = None,
                       num_prompts: int | None = None,
                       thresholds: Thresholds = DEFAULT_THRESHOLDS) -> pd.DataFrame:
    """The observed zero-spread fraction per step, smoothed, and its binary-reward expectation.

    What :func:`advantage_degeneration` judges and the report's chart draws.

    Parameters
    ----------
    log : RunLog
        Needs ``frac_reward_zero_std``, or ``reward_std`` (whose zeros give a lower bound).
    group_size : int, optional
        ``G`` >= 2; with a 0/1-compatible reward, adds the ``expected`` column.
    binary_reward : bool, optional
        Whether the reward is 0/1 (default: every reward in [0, 1]).
    num_prompts : int, optional
        Prompts per step (1: ``reward_std == 0`` is exact, not a lower bound).
    thresholds : Thresholds
        Supplies the smoothing window (5% of the steps, at least ``thresholds.window``).

    Returns
    -------
    pandas.DataFrame
        Columns ``step`` (int), ``observed`` (fraction per step, in [0, 1]), ``smoothed``
        (centred rolling mean), ``expected`` (``p^G + (1 - p)^G`` at the logged reward ``p``;
        NaN when not computable) and ``expected_smoothed`` (its rolling mean over the same window). ``attrs``:
        ``source`` (which column), ``lower_bound`` (bool),
        ``window`` (int), ``binary`` (bool or None), ``group_size``.

    Raises
    ------
    DataError
        Neither column, or no finite value.
    ParameterError
        Bad ``group_size`` or ``num_prompts``.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> log = from_records([{"step": s, "reward": 0.18, "frac_reward_zero_std": 0.5} for s in range(1, 11)])
    >>> round(float(zero_spread_series(log, group_size=4)["expected"].iloc[0]), 4)
    0.4532
    """
    th = thresholds
    if group_size is not None:
        group_size = check_integer("group_size", group_size, low=2)
    if num_prompts is not None:
        num_prompts = check_integer("num_prompts", num_prompts, low=1)
    if log.has("frac_reward_zero_std"):
        steps, frac = _quiet_series(log, "frac_reward_zero_std")
        source, bound = "frac_reward_zero_std", False
    elif log.has("reward_std"):
        steps, rs = _quiet_series(log, "reward_std")
        frac = (np.abs(rs) <= 1e-12).astype(float)
        source, bound = "reward_std == 0", num_prompts != 1
    else:
        raise DataError(f"advantage_degeneration needs frac_reward_zero_std or reward_std, which {log.source} "
                        "does not have")
    n = frac.size
    if n == 0:
        raise DataError(f"advantage_degeneration: no finite zero-spread values in {log.source}")
    w = min(max(th.window, int(round(0.05 * n))), n)
    expected = np.full(n, np.nan)
    binary = None
    if log.has("reward"):
        _, all_r = _quiet_series(log, "reward")
        binary = binary_reward if binary_reward is not None else _is_binary_compatible(all_r)
        if binary and group_size is not None:
            r = log.train["reward"].reindex(steps).to_numpy(dtype=float)
            ok = np.isfinite(r) & (r >= 0) & (r <= 1)
            expected[ok] = expected_zero_spread_fraction(r[ok], group_size)
    out = pd.DataFrame({"step": steps.astype(np.int64), "observed": frac, "smoothed": _smooth(frac, w),
                        "expected": expected, "expected_smoothed": _smooth(expected, w)})
    out.attrs.update(source=source, lower_bound=bool(bound), window=int(w), binary=binary, group_size=group_size)
    return out


def advantage_degeneration(log: RunLog, *, group_size: int | None = None, binary_reward: bool | None = None,
                           num_prompts: int | None = None,
                           thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check for groups without reward spread (zero advantages, no gradient).

    The observed fraction is ``frac_reward_zero_std`` (TRL >= 0.18). Without it, the steps where
    ``reward_std`` is exactly 0 are steps on which *every* group had zero spread (true for the
    per-group mean and for the batch std), so their fraction is a lower bound of the zero-spread
    fraction (exact when each step holds one group, ``num_prompts = 1``, as in the Unsloth
    notebook runs). The fraction
    is smoothed (centred mean over 5% of the steps, at least 5) and the longest stretch at or above
    the critical, warning or info level (:class:`Thresholds`; dips shorter than the window are
    bridged) that lasts long enough is reported.

    When the reward can be 0/1 (``binary_reward``, or by default every reward value in [0, 1])
    and ``group_size`` is known, the stretch's mean observed fraction is compared with the
    binary expectation ``p^G + (1 - p)^G`` at the logged accuracy ``p``
    (:func:`~grpo_core.grpo.expected_zero_spread_fraction`). Close to it: the task is too hard (or too easy) for
    that ``G``; well above it: the prompts are all-solved or all-failed (the mean hides a mix of
    trivial and impossible prompts, which by convexity raises the fraction) or the reward does
    not vary within a group at all. A 0/1 reward leaves at least ``2^(1 - G)`` of the groups
    without spread at any accuracy (half of them at G = 2): a warning level at or below that floor,
    with the fraction close to its expectation, is reported as ``info`` (the group size, not a
    symptom; evidence ``binary_floor``).

    Parameters
    ----------
    log : RunLog
    group_size : int, optional
        Completions per prompt (``num_generations``), >= 2.
    binary_reward : bool, optional
        Whether the reward is 0/1; ``None`` assumes so when every reward lies in [0, 1].
    num_prompts : int, optional
        Prompts (groups) per step, >= 1; with 1, ``reward_std == 0`` is the exact fraction.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` when no level is sustained.

    Raises
    ------
    DataError
        The log has neither ``frac_reward_zero_std`` nor ``reward_std``, or fewer than
        ``min_stretch_steps`` (5) steps of them.
    ParameterError
        ``group_size`` not an integer >= 2.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> log = from_records([{"step": s, "reward": 0.05, "frac_reward_zero_std": 0.9} for s in range(1, 41)])
    >>> f = advantage_degeneration(log, group_size=2)
    >>> f.severity, round(f.evidence["expected_binary"], 3)
    ('critical', 0.905)
    """
    th = thresholds
    if group_size is not None:
        group_size = check_integer("group_size", group_size, low=2)
    if num_prompts is not None:
        num_prompts = check_integer("num_prompts", num_prompts, low=1)
    table = zero_spread_series(log, num_prompts=num_prompts, thresholds=th)
    steps, frac, smooth = (table["step"].to_numpy(), table["observed"].to_numpy(), table["smoothed"].to_numpy())
    n = frac.size
    if n < th.min_stretch_steps:  # a stretch needs that many steps: a shorter log is no evidence either way
        raise DataError(f"advantage_degeneration needs at least {th.min_stretch_steps} logged steps of the zero-spread "
                        f"fraction; {log.source} has {n}")
    chosen = _sustained_level(smooth, table.attrs["window"], th)
    if chosen is None:
        return None
    severity, level, start, length = chosen
    sl = slice(start, start + length)
    s_first, s_last = int(steps[start]), int(steps[start + length - 1])
    observed = float(np.mean(frac[sl]))
    ev: dict[str, Any] = {
        "observed_zero_spread_fraction": observed,
        "source": table.attrs["source"],
        "lower_bound": table.attrs["lower_bound"],
        "level": level,
        "steps_in_stretch": _steps_spanned(log, s_first, s_last),  # optimizer steps, not logged rows
        "rows_in_stretch": length,
        "run_mean_zero_spread_fraction": float(np.mean(frac)),
    }
    in_range = (log.train.index >= s_first) & (log.train.index <= s_last)
    _stretch_evidence(log, in_range, ev, group_size, binary_reward, observed)
    expected, p_mean = ev.get("expected_binary"), ev.get("mean_reward")
    if observed >= 0.9995:  # a lower bound of 100% is exact: every group
        head = "Every group had"
    else:
        head = f"{'At least ' if table.attrs['lower_bound'] else ''}{observed:.0%} of groups had"
    msg = (f"{head} zero reward spread over steps {s_first}-{s_last} "
           f"(their advantages are 0 and give no gradient")
    if ev.get("grad_norm_zero_fraction", 0) >= 0.5:
        msg += f"; grad_norm is 0 on {ev['grad_norm_zero_fraction']:.0%} of these steps"
    msg += ")"
    # With a 0/1 reward at least 2^(1-G) of the groups have zero spread at any accuracy (p = 1/2 is
    # the best case): a level at or below that floor is the group size itself, not a symptom.
    floor = 2.0 ** (1 - group_size) if expected is not None else None
    at_floor = (floor is not None and severity != "info" and floor >= level - 1e-12
                and observed - expected <= th.excess_over_binary)
    if at_floor:
        severity = "info"
        ev["binary_floor"] = floor
        msg += (f", as expected ({expected:.0%}) for a 0/1 reward at accuracy {p_mean:.2f} with G = {group_size}: "
                f"at G = {group_size} at least {floor:.0%} of the groups have zero spread whatever the accuracy, so "
                "this level is a property of the group size (reported as info); a larger G lowers it")
    elif expected is not None:
        msg += _against_binary(observed, expected, p_mean, group_size, th)
    return Finding("advantage_degeneration", severity, (s_first, s_last), None, ev, msg + ".")


def _sustained_level(smooth: np.ndarray, w: int, th: Thresholds) -> tuple[str, float, int, int] | None:
    """``(severity, level, start, length)`` of the highest level held long enough, or ``None``."""
    n = smooth.size
    need = max(th.min_stretch_steps, int(math.ceil(th.min_stretch_fraction * n)))
    need = min(need, n)
    for severity, level in (("critical", th.zero_spread_critical), ("warning", th.zero_spread_warning),
                            ("info", th.zero_spread_info)):
        start, length = _longest_run(smooth >= level - 1e-12, max_gap=w)
        if length >= need:
            return severity, level, start, length
    return None


def _stretch_evidence(log: RunLog, in_range: np.ndarray, ev: dict[str, Any], group_size: int | None,
                      binary_reward: bool | None, observed: float) -> None:
    """Add to ``ev`` what the stretch's gradient norm, loss and reward say (and the binary expectation)."""
    for metric in ("grad_norm", "loss"):
        if log.has(metric):
            v = log.train.loc[in_range, metric].to_numpy(dtype=float)
            v = v[np.isfinite(v)]
            if v.size:
                ev[f"{metric}_zero_fraction"] = float(np.mean(np.abs(v) <= 1e-12))
    if not log.has("reward"):
        return
    r = log.train.loc[in_range, "reward"].to_numpy(dtype=float)
    r = r[np.isfinite(r)]
    _, all_r = _quiet_series(log, "reward")
    binary = binary_reward if binary_reward is not None else _is_binary_compatible(all_r)
    ev["binary_reward"] = bool(binary)
    if r.size:
        ev["mean_reward"] = float(np.mean(r))
    if binary and group_size is not None and r.size and _is_binary_compatible(r):
        expected = float(np.mean(expected_zero_spread_fraction(np.clip(r, 0, 1), group_size)))
        ev["expected_binary"] = expected
        ev["excess_over_binary"] = observed - expected
        ev["group_size"] = group_size


def _against_binary(observed: float, expected: float, p_mean: float | None, group_size: int,
                    th: Thresholds) -> str:
    """What the fraction says set against the 0/1-reward expectation (the message's tail)."""
    if observed - expected > th.excess_over_binary:
        return (f", well above the {expected:.0%} a 0/1 reward at accuracy {p_mean:.2f} gives with G = "
                f"{group_size}: prompts are all-solved or all-failed, or the reward does not vary within a group")
    if p_mean is not None and p_mean >= 0.5:
        return (f", as expected ({expected:.0%}) for a 0/1 reward with G = {group_size} at the logged accuracy "
                f"(mean {p_mean:.2f}): accuracy near 1 leaves groups all correct (the prompts are too easy "
                "for further learning)")
    try:
        g_star = group_size_for_zero_spread(min(max(p_mean, 1e-6), 1 - 1e-6), 0.5)
        hint = f"; G >= {g_star} would halve it, or use easier prompts"
    except GrpoError:
        hint = "; use easier prompts"
    return (f", as expected ({expected:.0%}) for a 0/1 reward at accuracy {p_mean:.2f} with G = "
            f"{group_size}: the prompts are too hard for this group size{hint}")
