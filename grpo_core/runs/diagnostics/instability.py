"""Dynamic instability: unbounded growth of a metric, or a growing oscillation of the reward."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import DataError, GrpoError
from ..logs import RunLog
from .findings import _RANK, SEVERITIES, Finding
from .oscillation import Oscillation, oscillation
from .series import _bin, _overflowed, _quiet_series, _smooth, _usable, _window
from .thresholds import DEFAULT_THRESHOLDS, Thresholds

_GROWTH_METRICS = ("grad_norm", "kl", "ppo_kl", "importance_ratio_max", "clip_ratio_region", "clip_ratio_low",
                   "clip_ratio_high")


def _growth(steps: np.ndarray, v: np.ndarray, floor: float, th: Thresholds) -> dict[str, Any]:
    steps, v = _bin(steps.astype(float), v, 4000)
    n = v.size
    q = max(3, n // 4)
    base_raw = float(np.median(v[:q]))
    if base_raw == 0 and np.any(v[:q] > 0):
        # a gradient norm of 0 on most early steps is zero-spread groups (no gradient), not the run's
        # normal level: measure growth from the steps that had one
        base_raw = float(np.median(v[:q][v[:q] > 0]))
    base = max(base_raw, floor)
    k = max(3, int(round(0.1 * n)))
    late = float(np.median(v[-k:]))
    sm = _smooth(v, min(max(3, _window(n, th)), n), "median")
    peak = float(np.max(sm[q:])) if n > q else float(np.max(sm))  # after the baseline window
    above = sm >= th.onset_factor * base
    onset = None
    if above.any():
        below_after = np.cumsum(~above[::-1])[::-1]  # number of steps at or after i below the level
        remaining = n - np.arange(n)
        # the growth must hold over a real stretch: at least 5 points and 10% of the log
        ok = above & (below_after <= 0.1 * remaining) & (remaining >= max(5, 0.1 * n))
        idx = np.flatnonzero(ok)
        if idx.size:
            onset = int(round(steps[idx[0]]))
    lo, hi = int(0.65 * n), max(int(0.75 * n), int(0.65 * n) + 1)
    before_end = max(float(np.median(v[lo:hi])), floor)
    return {"early": base_raw, "baseline": base, "late": late, "peak": peak, "growth_factor": late / base,
            "peak_factor": peak / base, "onset": onset, "last_quarter_factor": late / before_end,
            "first": float(v[0]), "first_step": int(round(steps[0]))}


def dynamic_instability(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS,
                        osc: Oscillation | None = None) -> Finding | None:
    """Check for unbounded growth (grad norm, importance ratios, clip fractions, KL) and a growing
    oscillation of the reward.

    Growth: per metric, the early level is the median of the first quarter of the steps, raised
    to a floor (:attr:`Thresholds.floors`) so that a KL that starts at 0 is not "growing" when it
    reaches an ordinary value; the late level is the median of the last 10%. Late over early of
    at least ``growth_warning`` (10) is a warning, ``growth_critical`` (100) critical (clip
    fractions: absolute level ``clip_critical``; the KL to the reference must also still be growing
    over the last quarter, ``kl_still_growing``). Infinite values (an overflowed gradient norm or
    loss) are critical, unless the metric is finite again after its last infinite value (steps skipped
    on overflow, as fp16 loss scaling does: info, and the finite values are judged). The onset is the first step from
    which the smoothed metric stays above
    ``onset_factor`` (3) times its early level. A metric that peaked but came back (peak factor
    >= 100, late < 10) is reported as info (a transient spike).

    Oscillation: :func:`oscillation` of the reward; a significant oscillation whose amplitude grew
    by ``oscillation_growth_warning`` (1.5x) over the log is a warning, by
    ``oscillation_growth_critical`` (3x) critical; one that neither grows nor decays and repeats
    itself (a limit cycle, :class:`Thresholds`) is a warning; a decaying one is info. Persistent
    irregular swings well above the step-to-step noise (``swing_ratio``) are a warning too.

    Parameters
    ----------
    log : RunLog
    thresholds : Thresholds
    osc : Oscillation, optional
        A precomputed oscillation analysis of the reward (:func:`diagnose` passes its own).

    Returns
    -------
    Finding or None
        One finding combining every signal (severity: the worst), or ``None``.

    Raises
    ------
    DataError
        The log has none of the growth metrics and no reward, or too few steps to judge (fewer than 8 of
        every growth metric and fewer than 16 rewards): no verdict either way.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "grad_norm": 0.3 if s < 30 else 0.3 * 1.2 ** (s - 30)} for s in range(1, 101)]
    >>> f = dynamic_instability(from_records(recs))
    >>> f.severity, f.onset
    ('critical', 37)
    """
    th = thresholds
    present = [m for m in _GROWTH_METRICS if _usable(log, m)]  # a KL 0 on every step is not computed
    if not present and not log.has("reward"):
        raise DataError(f"dynamic_instability needs grad_norm, kl, importance ratios, clip fractions or the "
                        f"reward; {log.source} has none of them")
    signals, levels = _growth_levels(log, present, th)
    if osc is None and log.has("reward"):
        st, r = _quiet_series(log, "reward")
        if r.size >= 16 and not _overflowed(r).any():  # overflowed values: numerical_failure's, no spectrum
            try:
                osc = oscillation(st, r, p_value=th.oscillation_p_value)
            except GrpoError:
                osc = None
    if not signals and osc is None:
        n_reward = _quiet_series(log, "reward")[1].size if log.has("reward") else 0
        if n_reward < 16:  # nothing was long enough to look at: no verdict either way
            raise DataError(f"dynamic_instability needs at least 8 logged steps of "
                            f"{', '.join(present) or 'a growth metric'} or 16 of the reward; {log.source} has "
                            f"{len(log.train)} row(s)")
    osc_level = _oscillation_level(osc, th)
    if osc_level is not None:
        signals["reward_oscillation"] = osc.to_dict()
        levels.append(osc_level)
    if not levels:
        return None
    return _instability_finding(log, signals, levels)


@dataclass(frozen=True)
class Level:
    """One signal of instability: its severity, onset (a step, or ``None``), kind and description.

    ``kind`` is ``"growth"`` (a metric grew or spiked), ``"overflow"`` (infinite values skipped)
    or ``"oscillation"`` (of the reward).
    """

    severity: str
    onset: int | None
    kind: str
    description: str


def _growth_levels(log: RunLog, present: list[str], th: Thresholds) -> tuple[dict[str, Any], list[Level]]:
    """The growth signals of every metric present (evidence per metric, and the levels they reach)."""
    signals: dict[str, Any] = {}
    levels: list[Level] = []
    for m in present:
        col = log.train[m].to_numpy(dtype=float)
        inf = np.isinf(col)
        infinite = None
        if inf.any():
            first_inf = int(log.train.index[np.flatnonzero(inf)[0]])
            infinite = {"infinite_steps": int(inf.sum()), "first_infinite": first_inf}
            # finite values after the last infinite one: the overflowed steps were skipped (fp16 loss
            # scaling logs grad_norm = inf while it calibrates) and the run went on; judge the rest
            if not np.isfinite(col[np.flatnonzero(inf)[-1] + 1:]).any():
                signals[m] = infinite
                levels.append(Level("critical", first_inf, "growth", f"{m} overflowed (infinite)"))
                continue
            levels.append(Level("info", None, "overflow",
                                f"{m} was infinite on {int(inf.sum())} step(s) from step {first_inf} and finite "
                                "after (overflowed steps skipped, as fp16 loss scaling does)"))
        steps, v = _quiet_series(log, m)
        if v.size < 8:
            continue
        g = _growth(steps, np.abs(v), th.floors.get(m, 1e-8), th)
        signals[m] = g | infinite if infinite is not None else g
        level = _growth_level(m, g, th)
        if level is not None:
            levels.append(level)
    return signals, levels


def _growth_level(m: str, g: dict[str, Any], th: Thresholds) -> Level | None:
    """The level one metric's growth (:func:`_growth`) reaches, or ``None``."""
    is_clip = m.startswith("clip_ratio")
    crit = g["late"] >= th.clip_critical if is_clip else g["growth_factor"] >= th.growth_critical
    warn = g["growth_factor"] >= th.growth_warning
    rose = f"{m} rose from {g['early']:.3g} to {g['late']:.3g} ({g['growth_factor']:.3g}x"
    rose += f" its early level floored at {g['baseline']:.3g}" if g["early"] < g["baseline"] else ""
    if m == "kl" and g["early"] >= g["baseline"] and g["first"] <= 0.1 * g["early"]:
        # the KL starts at 0 (policy = reference): a jump inside the first quarter, to above the KL
        # floor, hides in its median; in the parenthesis, so that the onset the caller appends reads on
        rose += (f"; the early level {g['early']:.3g} came after a jump from {g['first']:.3g} at step "
                 f"{g['first_step']} within the first quarter of the log")
    rose += ")"
    if m == "kl" and (crit or warn) and g["last_quarter_factor"] < th.kl_still_growing:
        # The KL to the reference drifts up as the policy learns (without bound when beta = 0);
        # only growth that continues to the end of the log is instability.
        return Level("info", g["onset"], "growth",
                     rose + f", drifting but no longer accelerating (x{g['last_quarter_factor']:.2g} over the "
                            "last quarter)")
    if crit or warn:
        return Level("critical" if crit else "warning", g["onset"], "growth", rose)
    if g["peak_factor"] >= th.growth_critical:
        return Level("info", g["onset"], "growth", f"{m} spiked {g['peak_factor']:.3g}x and came back")
    if g["growth_factor"] >= th.onset_factor and g["onset"] is not None:
        return Level("info", g["onset"], "growth", rose)
    return None


def _oscillation_level(osc: Oscillation | None, th: Thresholds) -> Level | None:
    """The level of the reward's oscillation (growing, limit cycle, damped, erratic swings), or ``None``."""
    if osc is None:
        return None
    level = None
    if osc.detected:
        gf = osc.growth_factor
        period = f"the reward oscillates with a period of {osc.period:.1f} steps"
        sustained = (math.isfinite(gf) and gf >= th.sustained_growth
                     and osc.autocorrelation >= th.sustained_autocorrelation)
        if math.isfinite(gf) and gf >= th.oscillation_growth_critical:
            level = Level("critical", None, "oscillation", f"{period} and a growing amplitude (x{gf:.2g})")
        elif math.isfinite(gf) and gf >= th.oscillation_growth_warning:
            level = Level("warning", None, "oscillation", f"{period} and a growing amplitude (x{gf:.2g})")
        elif sustained:
            level = Level("warning", None, "oscillation",
                          f"{period} at a sustained amplitude of {osc.amplitude_end:.2g} (a limit cycle: past the "
                          "stability threshold, held by saturation)")
        else:
            how = "decaying" if math.isfinite(gf) and gf < 1 else "not growing"
            level = Level("info", None, "oscillation", f"{period} ({how}: damped, near the threshold)")
    swings = ((level is None or level.severity == "info")
              and osc.p_value < th.oscillation_p_value
              and math.isfinite(osc.swing_ratio) and osc.swing_ratio >= th.swing_ratio
              and (osc.steps[1] - osc.steps[0]) >= th.swing_min_periods * osc.period)
    if swings:
        level = Level("warning", None, "oscillation",
                      f"the reward swings around its trend by about {osc.swing_ratio:.2g}x its step-to-step noise "
                      f"without a clean period (strongest near {osc.period:.0f} steps): the irregular oscillation "
                      "of a run past its stability threshold")
    return level


def _instability_finding(log: RunLog, signals: dict[str, Any], levels: list[Level]) -> Finding:
    """One finding of every level: the worst severity, the earliest growth onset, one message."""
    worst = max(_RANK[x.severity] for x in levels)
    serious = [x for x in levels if _RANK[x.severity] >= min(worst, 1)]
    signals["signals"] = [{"severity": x.severity, "onset": x.onset, "kind": x.kind, "description": x.description}
                          for x in levels]
    onsets = [x.onset for x in serious if x.onset is not None and x.kind == "growth"]
    onset = min(onsets) if onsets else None
    first, last = int(log.train.index[0]), int(log.train.index[-1])
    if onset is not None and log.has("reward"):
        rt, r = _quiet_series(log, "reward")
        before, after = r[rt < onset], r[rt >= onset]
        if before.size >= 3 and after.size >= 3:
            k = max(3, int(round(0.1 * after.size)))
            signals["reward_before_onset"] = float(np.mean(before[-max(3, min(before.size, 10)):]))
            signals["reward_late"] = float(np.mean(after[-k:]))
    growth = [x.description for x in serious if x.kind == "growth"]
    parts = []
    if growth:
        head = "Unbounded growth: " if worst >= 1 else "Rising: "
        parts.append(head + (", ".join(growth[:-1]) + " and " + growth[-1] if len(growth) > 1 else growth[0])
                     + (f", from step {onset}" if onset is not None else ""))
    parts += ["Skipped steps: " + x.description for x in serious if x.kind == "overflow"]
    for x in serious:
        if x.kind == "oscillation":
            parts.append(("Unstable oscillation: " if _RANK[x.severity] >= 1 else "Oscillation: ") + x.description)
    msg = "; ".join(parts)
    if "reward_late" in signals and signals["reward_late"] < signals["reward_before_onset"] - 1e-12:
        msg += f"; the reward fell from {signals['reward_before_onset']:.3g} to {signals['reward_late']:.3g}"
    return Finding("dynamic_instability", SEVERITIES[worst], (onset if onset is not None else first, last), onset,
                   signals, msg + ".")
