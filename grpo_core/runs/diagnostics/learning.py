"""Not learning: the reward shows no significant rise over the run, or the run is dead (all zeros).

References
----------
Bretherton, Widmann, Dymnikov, Wallace, Blade (1999), "The effective number of spatial degrees of
freedom of a time-varying field", J. Climate 12 (the ``n (1 - rho) / (1 + rho)`` effective sample size
of an AR(1) series, used for the slope's standard error).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import DataError
from ..logs import RunLog
from .findings import Finding
from .series import (
    OVERFLOW,
    _ar1_noise,
    _bin,
    _is_binary_compatible,
    _need,
    _overflowed,
    _quiet_series,
    _rise,
    _too_few,
)
from .thresholds import DEFAULT_THRESHOLDS, Thresholds


def slope_test(steps: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Least-squares slope of a curve with an autocorrelation-corrected one-sided p-value of a rise.

    Parameters
    ----------
    steps, values : numpy.ndarray
        Shape ``(n,)``, ``n >= 4``, finite.

    Returns
    -------
    dict
        ``slope`` (reward units per step), ``se`` (standard error with the effective sample size
        ``n (1 - rho) / (1 + rho)``, ``rho`` the lag-1 autocorrelation of the residuals, floored at 0),
        ``rho``, ``n_eff``, ``z`` (slope / se) and ``p_value`` (one-sided, a rise; normal approximation).

    Examples
    --------
    >>> t = np.arange(100.0)
    >>> round(slope_test(t, 0.01 * t + np.sin(t))["slope"], 2)
    0.01
    """
    t = steps.astype(float)
    n = values.size
    tc = t - t.mean()
    sxx = float(np.dot(tc, tc))
    slope = float(np.dot(tc, values - values.mean()) / sxx) if sxx > 0 else 0.0
    resid = values - values.mean() - slope * tc
    denom = float(np.dot(resid, resid))
    rho = float(np.dot(resid[1:], resid[:-1]) / denom) if denom > 0 else 0.0
    rho = min(max(rho, 0.0), 0.99)
    n_eff = max(3.0, n * (1 - rho) / (1 + rho))
    s2 = denom / max(n - 2, 1)
    se = math.sqrt(s2 / sxx * n / n_eff) if sxx > 0 and s2 > 0 else 0.0
    z = slope / se if se > 0 else (math.copysign(math.inf, slope) if slope != 0 else 0.0)
    p = 0.5 * math.erfc(z / math.sqrt(2)) if math.isfinite(z) else (0.0 if z > 0 else 1.0)
    return {"slope": slope, "se": se, "rho": rho, "n_eff": n_eff, "z": z, "p_value": p}


def _dead(log: RunLog) -> list[str] | None:
    """The columns among reward, loss, grad_norm that are identically 0, when every one present is."""
    cols = [m for m in ("reward", "loss", "grad_norm") if log.has(m)]
    if "reward" not in cols or len(cols) < 2:
        return None
    for m in cols:
        v = _quiet_series(log, m)[1]
        if v.size == 0 or np.any(np.abs(v) > 1e-12):
            return None
    return cols


#: What a reward with no significant rise in a run too short to judge is called (in the check's reason, which
#: the verdict's ``missing`` quotes).
TOO_EARLY = "too early to judge whether it learns"


def planned_steps(log: RunLog) -> int | None:
    """The run's planned optimizer steps (``max_steps`` of a TRL ``trainer_state.json``, ms-swift's
    ``global_step/max_steps``), or ``None`` when the log does not say (or says something that is not a
    positive whole number)."""
    planned = log.meta.get("max_steps")
    try:
        value = float(planned)
    except (TypeError, ValueError):
        return None
    return int(value) if math.isfinite(value) and value >= 1 and value == int(value) else None


def learning_too_early(log: RunLog, last_step: int, th: Thresholds = DEFAULT_THRESHOLDS) -> str | None:
    """Why a reward with no significant rise up to ``last_step`` is no verdict yet, or ``None`` when the run
    is long enough to be called "not learning".

    The run must have reached ``min_learning_steps`` optimizer steps and, where the log knows its planned
    ``max_steps``, ``min_planned_fraction`` of them (a planned run shorter than ``min_learning_steps`` is
    judged at its end). See :class:`Thresholds` for the evidence behind both.
    """
    planned = planned_steps(log)
    if planned is not None and planned >= last_step:  # a plan the log has not passed
        need = max(math.ceil(th.min_planned_fraction * planned), min(th.min_learning_steps, planned))
        if last_step >= need:
            return None
        return (f"{last_step} of {planned} planned steps: {TOO_EARLY} (needs step {need}, "
                f"{th.min_planned_fraction:.0%} of the planned run and at least {min(th.min_learning_steps, planned)} "
                "steps: runs that learned often read flat before)")
    if last_step >= th.min_learning_steps:
        return None
    return (f"{last_step} steps: {TOO_EARLY} (needs at least {th.min_learning_steps} optimizer steps, or half of "
            "a planned max_steps the log states: runs that learned often read flat before)")


def not_learning(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check that the reward rose significantly over the run (and that the run is not dead).

    Dead: the reward and the loss or grad_norm are exactly 0 on every step (critical: no completion
    earns anything and nothing is updated). Otherwise the rise is tested twice: the slope over the
    whole run (:func:`slope_test`, one-sided p-value against ``learning_p_value``) and the early/late
    rise z (:func:`~grpo_core.runs.diagnostics.series._rise`, against ``trend_z``). The run is not
    learning when neither is significant: a warning. It unlearned (critical, with no advice to raise the
    learning rate) when the reward fell significantly: a fall as significant as a rise must be (rise
    z <= -``trend_z``), or a smaller one (z <= ``falling_z``) with the slope negative at the same p-value
    (p for a rise > 1 - ``learning_p_value``). A 0/1 reward whose late mean is 0.9 or more is at its
    ceiling already (info: nothing left to learn). No significant change in a run too short to judge is no
    verdict (a :class:`DataError` saying so). A dead run names its cause where the log shows it: every
    completion cut at the length cap, every group's rewards equal.

    Parameters
    ----------
    log : RunLog
        Needs ``reward``.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` when the reward rose significantly.

    Raises
    ------
    DataError
        No reward; a reward that reaches :data:`~grpo_core.runs.diagnostics.series.OVERFLOW` (float32's
        largest value: an overflow, which :func:`~grpo_core.runs.diagnostics.numerical.numerical_failure`
        reports); fewer than ``min_learning_points`` (16) finite rewards; or no significant rise nor fall in a
        run too short to judge (:func:`learning_too_early`: fewer than ``min_learning_steps`` (50) steps, or
        less than ``min_planned_fraction`` (half) of its planned ``max_steps``; the reason starts with the
        steps and says :data:`TOO_EARLY`).

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "reward": 0.3 + 0.05 * ((s * 7919) % 13 - 6) / 6} for s in range(1, 201)]
    >>> not_learning(from_records(recs)).severity
    'warning'
    """
    th = thresholds
    _need(log, "not_learning", "reward")
    dead = _dead(log)
    st, r = _quiet_series(log, "reward")
    first, last = (int(st[0]), int(st[-1])) if st.size else (0, 0)
    big = _overflowed(r)
    if big.any():
        # means and differences of such values overflow float64 (a fall "from inf to inf")
        top = float(np.max(np.abs(r[big])))
        raise DataError(f"not_learning cannot read the reward of {log.source}: it reaches {top:.3g} on "
                        f"{int(big.sum())} step(s) (from step {int(st[big][0])}), "
                        f"at or beyond float32's largest value ({OVERFLOW:.2g}): an overflow (numerical_failure), "
                        "not a reward")
    if dead is not None:
        return _dead_finding(log, dead, st, th)
    if r.size < th.min_learning_points:
        raise _too_few(log, "not_learning", th.min_learning_points, "reward values", r.size)
    bs, br = _bin(st.astype(float), r, 4000)
    test = slope_test(bs, br)
    rise = _rise(r, early_points=int(min(20, max(3, round(0.05 * r.size)))))
    ev: dict[str, Any] = {"test": "least-squares slope, AR(1)-corrected se; early/late rise z",
                          "slope": test["slope"], "slope_z": test["z"], "p_value": test["p_value"],
                          "rho": test["rho"], "n_eff": test["n_eff"], "reward_early": rise["early"],
                          "reward_late": rise["late"], "rise_z": rise["z"], "points": int(r.size)}
    if test["p_value"] < th.learning_p_value or rise["z"] >= th.trend_z:
        return None
    # a fall as significant as a rise must be (the slope of a short log, 40 rows, is less sure of it), or a
    # smaller fall that the slope confirms
    fell = rise["z"] <= -th.trend_z or (rise["z"] <= th.falling_z and test["p_value"] > 1 - th.learning_p_value)
    if fell:
        ev["fell"] = True
        # a fall names the best stretch before it when that stands above the end: real run 36 read "fell
        # from 12.6 to 8.42" with 21.9 at steps 13-18 in between, the checkpoint a user wants back
        best = _peak_between(r, st, rise, th, need_rise=False)
        via = ""
        if best is not None:
            ev.update({"best": best["peak"], "best_steps": best["peak_steps"], "z_best": best["z_fall"]})
            via = (f"; it stood highest at {best['peak']:.3g}, the mean of steps {best['peak_steps'][0]:g}-"
                   f"{best['peak_steps'][1]:g}, z = {best['z_fall']:.2g} above the end")
        return Finding("not_learning", "critical", (first, last), None, ev,
                       f"The reward fell from {rise['early']:.3g} to {rise['late']:.3g} over steps {first}-{last} "
                       f"(rise z = {rise['z']:.2g}; slope p = {test['p_value']:.2g} for a rise): the run "
                       f"unlearned{via}.", ADVICE_FELL)
    peak = _peak_between(r, st, rise, th)
    if peak is not None:
        ev.update(peak)
        return Finding("not_learning", "critical", (first, last), None, ev,
                       f"The reward rose from {rise['early']:.3g} to {peak['peak']:.3g} (mean of steps "
                       f"{peak['peak_steps'][0]:g}-{peak['peak_steps'][1]:g}; z = {peak['z_rise']:.2g}) and fell "
                       f"back to {rise['late']:.3g} by the end (z = {peak['z_fall']:.2g}): the run learned, then "
                       "unlearned.", ADVICE_FELL)
    at_ceiling = _is_binary_compatible(r) and rise["late"] >= th.saturation_level
    severity = "info" if at_ceiling else "warning"
    early = None if at_ceiling else learning_too_early(log, last, th)
    if early is not None:
        # no rise yet is no verdict yet: a run that learns often reads flat for its first steps
        raise DataError(f"{early}; so far no significant rise nor fall: {rise['early']:.3g} -> {rise['late']:.3g} "
                        f"over steps {first}-{last} (rise z = {rise['z']:.2g}, slope p = {test['p_value']:.2g})")
    # the windows named: an early mean of a few noisy steps (real run 16: 10 steps at 2.21, while steps
    # 1-20 average 2.09) read as "no change at all" without them
    qe = rise["early_points"]
    msg = (f"No significant rise of the reward over steps {first}-{last}: {rise['early']:.3g} (mean of steps "
           f"{int(st[0])}-{int(st[qe - 1])}) -> {rise['late']:.3g} (steps {int(st[-rise['points']])}-{last}) "
           f"(slope p = {test['p_value']:.2g} one-sided, autocorrelation-corrected; rise z = "
           f"{rise['z']:.2g} < {th.trend_z:g})")
    msg += (": the 0/1 reward is at its ceiling already, nothing left to learn." if at_ceiling else
            ": the run is not learning.")
    return Finding("not_learning", severity, (first, last), None, ev, msg,
                   ADVICE_CEILING if at_ceiling else "")


def _dead_finding(log: RunLog, dead: list[str], st: np.ndarray, th: Thresholds) -> Finding:
    """The critical finding of a dead run, with its cause where the log shows it (completions at the length
    cap; every group's rewards equal, hence no advantage)."""
    first, last = (int(st[0]), int(st[-1])) if st.size else (0, 0)
    ev: dict[str, Any] = {"dead_columns": dead}
    msg = (f"Dead run: {', '.join(dead)} are exactly 0 on every step ({st.size} logged steps): no completion earns "
           "a reward and nothing is updated.")
    cut = _cut_at_cap(log, th)
    if cut is not None:
        ev["truncation"] = cut[1]
        msg += f" No reward, because {cut[0]}: a truncated completion carries no answer (truncation)."
    flat = _all_groups_flat(log)
    if flat is not None:
        ev["zero_spread"] = flat
        msg += (f" No update, because every group's rewards are equal ({flat}): every advantage is 0, and so is "
                "the gradient (advantage_degeneration).")
    advice = ("raise max_completion_length (or ask for shorter reasoning) until completions end with an answer; "
              "then check that the reward function can return non-zero values on a few completions"
              if cut is not None else
              "check that the reward function can return non-zero values on a few completions (answer format, "
              "extraction), that completions are not all truncated, and that the trainable parameters receive "
              "gradients")
    return Finding("not_learning", "critical", (first, last), None, ev, msg, advice)


def _cut_at_cap(log: RunLog, th: Thresholds) -> tuple[str, dict[str, Any]] | None:
    """How the log shows the completions cut at the length cap on (nearly) every step, or ``None``.

    With ``clipped_ratio``, it alone decides: its median at or above ``truncation_critical``. Without it,
    the shortest and the longest completion of every step at one length (``completion_length_min`` ==
    ``completion_length_max``, the same on every step): no completion ended before that length. A mean
    length that never changes is no such evidence (case 10: 396 tokens on every step, none clipped).
    """
    ev: dict[str, Any] = {}
    lengths = {}
    for col in ("completion_length", "completion_length_min", "completion_length_max"):
        if log.has(col):
            v = _quiet_series(log, col)[1]
            if v.size and np.ptp(v) == 0:
                lengths[col] = float(v[0])
    if log.has("clipped_ratio"):
        c = _quiet_series(log, "clipped_ratio")[1]
        if not c.size or float(np.median(c)) < th.truncation_critical:
            return None
        ev["clipped_ratio_median"] = float(np.median(c))
        mean, cap = lengths.get("completion_length"), lengths.get("completion_length_max")
        # every completion clipped on every step: the mean length is the cap
        cap = cap if cap is not None and mean == cap else mean if bool(np.all(c >= 1.0)) else None
        if cap is not None:
            ev["max_length"] = cap
        at = f" of {cap:.0f} tokens" if cap is not None else ""
        return (f"the completions are cut at the length cap{at} (clipped_ratio {ev['clipped_ratio_median']:.0%} on the "
                "median step)"), ev
    low, high = lengths.get("completion_length_min"), lengths.get("completion_length_max")
    if low is None or low != high:
        return None
    ev["max_length"] = high
    return (f"every completion is {high:.0f} tokens long on every step (the shortest and the longest alike): "
            "none ended before the length cap", ev)


def _all_groups_flat(log: RunLog) -> str | None:
    """What shows that every group's rewards were equal on every step (``frac_reward_zero_std`` 1, or
    ``reward_std`` 0), or ``None``."""
    for col, value in (("frac_reward_zero_std", 1.0), ("reward_std", 0.0)):
        if log.has(col):
            v = _quiet_series(log, col)[1]
            if v.size and bool(np.all(np.abs(v - value) <= 1e-12)):
                return f"{col} {value:g} on every step"
    return None


def _peak_between(r: np.ndarray, steps: np.ndarray, rise: dict[str, float], th: Thresholds, *,
                  need_rise: bool = True) -> dict[str, Any] | None:
    """A rise and a fall between the early and late windows of :func:`_rise`: the highest mean of
    ``max(5, 10%)`` consecutive points in between, when it stands above both the early and the late
    mean by ``trend_z + 1`` standard errors (the extra 1 pays for picking the highest of about ten
    windows). ``None`` otherwise. Our rule (held-out run 54: 0.29 -> 0.74 -> 0.41 read as "not
    learning"). With ``need_rise=False`` only the fall from it to the late mean must pass (a run that
    fell: where it stood highest, whether or not that rose above the start).

    The standard errors are those of means of AR(1) noise: the step-to-step noise (the larger of the
    robust and the plain estimate: a few spikes in a flat run, real run 27, leave the robust one tiny)
    and the lag-1 autocorrelation ``rho = 1 + 2 r_d`` read off the differences' own lag-1
    autocorrelation ``r_d`` (-1/2 for white noise, near 0 for a slowly wandering series), which a slow
    trend or a hump barely moves. Without it, a smoothed or running-mean reward's wander passed for a
    peak (flat AR(1) noise with rho 0.9: a critical verdict in about a quarter of the seeds)."""
    n = r.size
    qe, ql = rise["early_points"], rise["points"]  # the windows of _rise's early and late means
    w = max(5, int(round(0.1 * n)))
    mid = r[qe:n - ql]
    noise = _ar1_noise(r)
    if mid.size < w or noise is None:
        return None
    var_mean, rho = noise
    roll = np.convolve(mid, np.ones(w) / w, mode="valid")
    i = int(np.argmax(roll))
    peak = float(roll[i])
    z_rise = (peak - rise["early"]) / math.sqrt(var_mean(w) + var_mean(qe))
    z_fall = (peak - rise["late"]) / math.sqrt(var_mean(w) + var_mean(ql))
    if (min(z_rise, z_fall) if need_rise else z_fall) < th.trend_z + 1:
        return None
    return {"peak": peak, "peak_steps": [float(steps[qe + i]), float(steps[qe + i + w - 1])],
            "z_rise": float(z_rise), "z_fall": float(z_fall), "noise_rho": rho, "rose_then_fell": True}


ADVICE_CEILING = "the task is already solved at this difficulty: use harder prompts"
ADVICE_FELL = ("the run unlearned: keep the checkpoint from before the fall; lower the learning rate or raise the "
               "KL coefficient, and read the completions where the reward fell (degenerate or truncated text, "
               "a reward being gamed)")
