"""The plateau forecast of the reward (every law of :mod:`grpo_core.laws`, the best by AIC)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ...errors import DataError
from ...validation import check_integer, check_n_boot
from ..logs import RunLog
from .series import _bin, _quiet_series

#: Most points a plateau forecast fits (longer logs are bin-averaged first; 500 bins keep a
#: 100,000-step log's forecast, bootstrap included, well under a second).
FORECAST_POINTS = 500

#: Block-bootstrap replicates of an end-of-run forecast (:func:`forecast_run`) as the commands make it:
#: ``grpo-dynamics fit --fit-fraction`` from a fit window (its ``--n-boot``, default 200, capped at
#: ``WINDOW_N_BOOT``), ``diagnose`` (and the report and the callback) from the whole log (capped at
#: ``END_N_BOOT``: a forecast made on every diagnosis). A chart of the same forecast uses the same
#: number, so that it shows the band the command prints (the band's quantiles move with the replicates).
WINDOW_N_BOOT = 100
END_N_BOOT = 30


def plateau_forecast(log: RunLog, *, metric: str = "reward", window: int = 20, n_boot: int = 100,
                     level: float = 0.9, seed: int = 0, tail: int = 50) -> dict[str, Any]:
    """Forecast where the reward will plateau, with a band.

    Every law of :mod:`grpo_core.laws` is fitted to the raw reward curve (long logs are first
    bin-averaged to :data:`FORECAST_POINTS` points), the best by AIC forecasts the plateau, and a
    residual block bootstrap gives the band (:func:`grpo_core.laws.forecast` with
    ``fraction = 1``). The fit is made on the
    raw curve, not a smoothed one, because smoothing correlates the residuals and makes both the
    law comparison and the band overconfident; the centred ``window``-step rolling mean is
    returned for display, with the R^2 of the fitted law against it.

    Parameters
    ----------
    log : RunLog
    metric : str
        Column to forecast (``"reward"``).
    window : int
        Rolling-mean window in (binned) points for the smoothed curve, >= 1.
    n_boot : int
        Bootstrap replicates (0: the delta-method band).
    level : float
        Coverage of the band, in (0, 1).
    seed : int
        Bootstrap seed.
    tail : int
        Steps averaged for ``current`` (the mean of the last ``tail`` raw values).

    Returns
    -------
    dict
        ``law``, ``plateau``, ``plateau_low``, ``plateau_high``, ``level``, ``band_method``,
        ``r2`` (of the fit on the raw curve), ``r2_smoothed`` (the same law against the smoothed
        curve), ``t90`` (steps to 90% of the plateau), ``current`` (mean of the last ``tail`` raw
        values), ``reached`` (fraction of the way from the fitted start to the plateau that
        ``current`` has made), ``start``, ``window``, ``at_bound`` (the chosen law's parameters on
        a bound; ``r_inf`` there means the curve does not determine its plateau), ``laws`` (R^2,
        AIC and plateau of each law), and the curves for charts: ``t``, ``fitted``, ``fitted_low``, ``fitted_high``,
        ``smoothed_t``, ``smoothed``; and ``end_of_run``: when the log knows its planned
        ``max_steps`` beyond the last logged step (a run in progress: a TRL ``trainer_state.json``,
        the live callback), :func:`forecast_run`'s forecast of the mean reward over the last 20% of
        the planned run, else ``None``.

    Raises
    ------
    DataError
        Fewer than ``window + 5`` points, or a constant curve.
    ParameterError
        Bad ``window``, ``n_boot``, ``level``, ``tail``.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.5 / (1 + np.exp(-(t - 90) / 20)) + np.random.default_rng(0).normal(0, 0.1, 300)
    >>> fc = plateau_forecast(from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)]))
    >>> fc["law"], bool(fc["plateau_low"] < 1.5 < fc["plateau_high"])
    ('logistic', True)
    """
    from ... import laws

    window = check_integer("window", window, low=1)
    tail = check_integer("tail", tail, low=1)
    steps, y = _quiet_series(log, metric)
    current = float(np.mean(y[-tail:])) if y.size else float("nan")
    bt, by = _bin(steps.astype(float), y, FORECAST_POINTS)
    if by.size < window + 5:
        raise DataError(f"a plateau forecast needs at least {window + 5} points of {metric}; {log.source} has "
                        f"{by.size}")
    fc = laws.forecast(bt, by, law="best", fraction=1.0, n_boot=n_boot, level=level, seed=seed, tail=tail)
    fit = fc.fit
    ts, ys = laws.rolling_mean(bt, by, window)
    fitted_s = fit.predict(ts)
    tss = float(np.sum((ys - ys.mean()) ** 2))
    r2_smooth = 1.0 - float(np.sum((ys - fitted_s) ** 2)) / tss if tss > 0 else float("nan")
    r0 = float(fit.params.get("r0", fit.params.get("r_low", fit.fitted[0])))
    span = fc.plateau - r0
    reached = (current - r0) / span if abs(span) > 1e-12 else float("nan")
    return {
        "metric": metric, "law": fc.law, "plateau": fc.plateau, "plateau_low": fc.plateau_low,
        "plateau_high": fc.plateau_high, "level": level, "band_method": fc.band_method, "r2": fit.r2,
        "r2_smoothed": r2_smooth, "t90": fc.t90, "current": current, "tail": int(min(tail, y.size)),
        "reached": reached, "window": window, "start": r0, "at_bound": list(fit.at_bound),
        "laws": {} if fc.comparison is None else {
            name: {"r2": f.r2, "aic": f.aic, "plateau": f.plateau} for name, f in fc.comparison.results.items()},
        "t": fc.t, "fitted": fc.curve, "fitted_low": fc.curve_low, "fitted_high": fc.curve_high,
        "smoothed_t": ts, "smoothed": ys, "end_of_run": _end_of_run(log, metric, n_boot, level, seed),
    }


def _end_of_run(log: RunLog, metric: str, n_boot: int, level: float, seed: int) -> dict[str, Any] | None:
    """:func:`forecast_run` to the log's planned ``max_steps`` when it lies after the last step, else ``None``."""
    horizon = log.meta.get("max_steps")
    steps = log.steps
    if horizon is None or not steps.size or not float(horizon) > float(steps[-1]):
        return None
    return forecast_run(log, horizon=float(horizon), metric=metric, n_boot=min(n_boot, END_N_BOOT), level=level,
                        seed=seed)


def forecast_run(log: RunLog, *, fit_fraction: float | None = None, horizon: float | None = None,
                 metric: str = "reward", split: str = "train", n_boot: int = 30, level: float = 0.9, seed: int = 0,
                 prior=None) -> dict[str, Any]:
    """Forecast the mean reward over the last 20% of a run with :func:`grpo_core.laws.plateau.forecast_plateau`.

    The forecaster of the forecasting benchmark (issue 14, ``python -m bench forecast``): laws fitted
    in learning-rate time (the log's ``learning_rate`` column when logged, else steps), averaged by
    evidence, shrunk toward the current level, plus the late gain, with a block-bootstrap band widened
    by the conformal quantile of :data:`grpo_core.laws.plateau.SHIPPED_PRIOR` (all three tuned on the
    shipped real runs; the late gain in units of the logged ``reward_std`` where the training log has it). Long
    logs are bin-averaged to :data:`FORECAST_POINTS` points first.

    Parameters
    ----------
    log : RunLog
    fit_fraction : float in (0, 1), optional
        Fit the first ``fit_fraction`` of the points and forecast the end of the log (then
        ``actual``, ``covered`` and ``error`` compare with what happened). ``None``: fit the whole
        log and forecast the end of the planned run at ``horizon``.
    horizon : float, optional
        The run's planned last step (> the last logged step) when ``fit_fraction`` is ``None``;
        default the log's ``max_steps`` (a TRL ``trainer_state.json``'s).
    metric : str
        The column to forecast.
    split : {"train", "eval"}
        Its table (the learning rate is read from the training table).
    n_boot : int, >= 0
        Block-bootstrap replicates.
    level : float in (0, 1)
        Nominal coverage of the band; the band's quantile is the shipped prior's (tuned for 0.9),
        scaled by the normal quantile ratio at other levels.
    seed : int
        Bootstrap seed.
    prior : PlateauPrior, optional
        Default :data:`~grpo_core.laws.plateau.SHIPPED_PRIOR`.

    Returns
    -------
    dict
        ``metric``, ``final``, ``final_low``, ``final_high`` (the forecast of the mean over the last
        20% of the steps up to ``horizon`` and its band), ``plateau`` (the asymptote),
        ``plateau_determined`` (the asymptote lies inside the band of ``final`` and within 0.1 of the
        window's spread of it, the benchmark's tolerance: the laws have levelled off by the horizon;
        otherwise the window does not determine a plateau and none should be quoted),
        ``current`` (the level the forecast starts from: the mean of the window's last 10% of
        points, at least 3) and ``current_steps`` (the first and last step of those points),
        ``weights`` (of each law), ``clock`` (``"learning_rate"`` or ``"step"``), ``level``,
        ``fit_fraction``, ``t_fit_end``, ``horizon``, ``n_fit``, ``method`` (one line naming it),
        ``actual`` (when ``fit_fraction`` is given: the mean of the log's last 20% of points, what
        the forecast is of and the benchmark's truth; ``None`` without ``fit_fraction``),
        ``actual_steps`` (their first and last step), ``actual_points`` (how many),
        ``actual_in_window`` (how many of them the fit window holds: a fit fraction above 0.8 sees
        part of what it forecasts), ``covered``, ``error`` and ``declined`` (why
        no forecast was made, else ``None``; the numbers are then NaN) and ``late_gain`` (the part of
        ``final`` added by the prior's late gain: the continued rise that real runs showed after the
        laws' bend; see :mod:`grpo_core.laws.plateau`) and ``late_gain_unit`` (``"reward_std"`` where the
        training log has the within-group reward standard deviation, which then sets the gain's unit, else
        ``"window_spread"``; ``None`` when declined; 0 for a metric that is not a reward: the gain was
        learned from rewards), ``window_range`` (the whole range of the window's
        values, ``max - min``, for :func:`wide_band_note`; NaN when declined).

    Raises
    ------
    DataError
        No horizon after the log (no ``fit_fraction``, no ``horizon``, no ``max_steps``), or no
        ``metric`` column.
    ParameterError
        ``fit_fraction`` not in (0, 1), bad ``n_boot``, ``level``.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.0 - 0.8 * np.exp(-t / 60) + np.random.default_rng(0).normal(0, 0.05, 300)
    >>> fc = forecast_run(from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)]),
    ...                   fit_fraction=0.5)
    >>> fc["clock"], bool(fc["final_low"] < fc["actual"] < fc["final_high"])
    ('step', True)
    """
    from scipy import stats

    from ...laws import plateau
    from ...validation import check_real

    n_boot = check_n_boot("n_boot", n_boot)
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    steps, y = _quiet_series(log, metric, split)
    steps = steps.astype(float)
    if fit_fraction is not None:
        fit_fraction = check_real("fit_fraction", fit_fraction, low=0.0, high=1.0, low_inclusive=False,
                                  high_inclusive=False)
        n_fit = int(math.floor(fit_fraction * y.size + 1e-9))
        horizon = float(steps[-1]) if steps.size else float("nan")
    else:
        n_fit = y.size
        if horizon is None:
            horizon = log.meta.get("max_steps")
        if horizon is None or not steps.size or not float(horizon) > steps[-1]:
            raise DataError(f"{log.source}: no planned horizon after the last logged step: pass fit_fraction "
                            "(forecast the log's end from its first part) or horizon (the run's max_steps)")
        horizon = float(horizon)
    t_fit, y_fit = steps[:n_fit], y[:n_fit]
    lr = None
    if log.has("learning_rate"):
        t_lr, rates = _quiet_series(log, "learning_rate")
        if t_lr.size >= 2 and np.any(rates > 0) and t_fit.size and t_lr[0] <= t_fit[0] and t_lr[-1] >= t_fit[-1]:
            lr = (t_lr.astype(float), rates)
    reward_std = None
    if metric == "reward" and split == "train" and log.has("reward_std"):
        t_s, s_s = _quiet_series(log, "reward_std")
        reward_std = (t_s.astype(float), s_s) if t_s.size else None
    bt, by = _bin(t_fit, y_fit, FORECAST_POINTS)
    prior = plateau.SHIPPED_PRIOR if prior is None else prior
    if not metric.startswith("reward"):
        # the late gain is the continued rise of real runs' rewards: no law for a KL, an entropy or a length
        prior = dataclasses.replace(prior, gain=0.0, std_gain=0.0)
    if level != 0.9:
        prior = dataclasses.replace(prior, q=prior.q * stats.norm.ppf(0.5 + level / 2) / stats.norm.ppf(0.95))
    if bt.size < plateau.MIN_WINDOW:  # said before the end: an empty window has no end to compare
        fc = plateau._nan_forecast(f"window too short ({bt.size} points, at least {plateau.MIN_WINDOW})", "step")
    elif horizon <= bt[-1]:
        fc = plateau._nan_forecast("the fit window reaches the end of the log", "step")
    else:
        # the late gain's unit is the raw window's spread (the benchmark's), not the bin averages'
        fc = plateau.forecast_plateau(bt, by, horizon=horizon, lr=lr, prior=prior, n_boot=n_boot, seed=seed,
                                      spread=plateau.window_spread(y_fit), reward_std=reward_std)
    actual = covered = error = actual_steps = None
    actual_in_window = 0
    if fit_fraction is not None:
        # what the forecast is of: the mean of the log's last 20% of points (the benchmark's truth), also
        # when the window reaches into it (a fit fraction above 0.8: then partly seen, and counted)
        first = y.size - max(1, int(math.ceil(0.2 * y.size)))
        actual = float(np.mean(y[first:]))
        actual_steps = [float(steps[first]), float(steps[-1])]
        actual_in_window = max(0, n_fit - first)
        if fc.declined is None:
            covered = bool(fc.final_low <= actual <= fc.final_high)
            error = fc.final - actual
    return {
        "metric": metric, "final": fc.final, "final_low": fc.final_low, "final_high": fc.final_high,
        "plateau": fc.plateau, "current": fc.level, "current_steps": _level_steps(t_fit, bt.size, fc),
        "plateau_determined": _plateau_determined(fc, plateau.window_spread(y_fit)),
        "weights": dict(fc.weights), "clock": fc.clock,
        "level": level, "fit_fraction": fit_fraction, "t_fit_end": float(t_fit[-1]) if t_fit.size else float("nan"),
        "horizon": horizon, "n_fit": int(n_fit), "method": plateau.METHOD, "actual": actual,
        "actual_steps": actual_steps, "actual_in_window": actual_in_window, "actual_points": (
            None if actual is None else int(y.size - first)), "covered": covered, "error": error,
        "declined": fc.declined,
        "window_range": _window_range(fc, y_fit),
        "late_gain": fc.late_gain(prior) if fc.declined is None else float("nan"),
        "late_gain_unit": None if fc.declined is not None else (
            "reward_std" if math.isfinite(fc.std_unit) else "window_spread"),
    }


def _window_range(fc, y_fit) -> float:
    """The whole range of the fit window's values (``max - min``, single steps); NaN when declined."""
    return float(np.ptp(y_fit)) if fc.declined is None and np.size(y_fit) else float("nan")


def wide_band_note(fc: dict, low: float | None = None, high: float | None = None) -> str:
    """``""``, or a note that the band (``low``-``high``, default ``fc``'s; pass the band as shown when it is
    clipped) is wider than every value the fit window logged (``fc["window_range"]``): a truth "inside" it
    is then weak evidence (real run 32 from 40%: a band 3.3x the range of its 33 rewards). The diagnose
    caveat on a plateau band likewise compares it with the reward's whole range."""
    low = fc["final_low"] if low is None else low
    high = fc["final_high"] if high is None else high
    rng = fc.get("window_range")
    rng = float("nan") if rng is None else float(rng)  # None: NaN after a JSON round trip
    # at least as wide (to rounding): a band clipped to a declared range that the window spanned is as wide as
    # everything, real run 34 from 20% with --reward-range -7.5 13 (its first 20 points span -7.5 to 13)
    if not (rng > 0 and math.isfinite(high - low) and high - low >= rng * (1 - 1e-9)):
        return ""
    return (f"the band is {(high - low) / rng:.2f}x as wide as the whole range of the values the fit window "
            "logged: it says little about where the run ends")


def late_gain_text(fc: dict) -> str:
    """``fc["late_gain"]`` signed to 3 significant digits, or ``"+0"`` when it is below 1e-4 of the fit
    window's range (real run 08 doubled: its learning rate has decayed to ~0, so a gain of 1.4e-13 is
    no gain, not a number to read)."""
    v = float(fc["late_gain"])
    rng = fc.get("window_range")
    rng = float("nan") if rng is None else float(rng)
    if math.isfinite(v) and math.isfinite(rng) and rng > 0 and abs(v) < 1e-4 * rng:
        return "+0"
    return f"{v:+.3g}"


def _plateau_determined(fc, spread: float) -> bool:
    """Whether the forecast's asymptote is one the window determines: the laws have levelled off by the
    horizon, the asymptote within 0.1 of the window's ``spread`` (:func:`~grpo_core.laws.plateau.window_spread`,
    the benchmark's unit and tolerance) of the end-of-run forecast, and inside its band."""
    if fc.declined is not None or not math.isfinite(fc.plateau):
        return False
    return bool(fc.final_low <= fc.plateau <= fc.final_high and abs(fc.plateau - fc.final) <= 0.1 * spread)


def _level_steps(t_fit: np.ndarray, n_points: int, fc) -> list[float] | None:
    """The first and last logged step behind the forecaster's current level (the mean of the fit
    window's last :data:`~grpo_core.laws.plateau.LEVEL_FRACTION` of its (binned) points, at least 3),
    or ``None`` when the forecast was declined."""
    from ...laws import plateau

    if fc.declined is not None or not n_points:
        return None
    n_last = min(n_points, max(3, int(math.ceil(plateau.LEVEL_FRACTION * n_points))))
    k = 1 if t_fit.size <= FORECAST_POINTS else int(math.ceil(t_fit.size / FORECAST_POINTS))  # as _bin
    return [float(t_fit[(n_points - n_last) * k]), float(t_fit[n_points * k - 1])]


def forecast_end(log: RunLog, *, metric: str = "reward", n_boot: int = 30, level: float = 0.9,
                 seed: int = 0) -> dict[str, Any]:
    """Where the reward ends: :func:`forecast_run` on the whole log, to the run's end.

    The end is the planned ``max_steps`` when the log knows it and it lies after the last logged
    step (a run in progress: ``horizon_kind`` ``"planned"``); otherwise the log is a finished run
    and the forecast is of the same run trained twice as long, with the logged learning-rate schedule's
    last rate held (``horizon`` twice the last step, ``horizon_kind`` ``"doubled"``; within the
    benchmarked cuts 0.4 and 0.6, whose band coverage ``python -m bench forecast`` measures).

    Parameters
    ----------
    log : RunLog
    metric : str
    n_boot, level, seed
        As :func:`forecast_run`.

    Returns
    -------
    dict
        :func:`forecast_run`'s dict, with ``horizon_kind``.

    Raises
    ------
    DataError
        No ``metric`` values.
    ParameterError
        Bad ``n_boot``, ``level``.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.0 - 0.8 * np.exp(-t / 60) + np.random.default_rng(0).normal(0, 0.05, 300)
    >>> fc = forecast_end(from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)]))
    >>> fc["horizon"], fc["horizon_kind"], bool(fc["final_low"] < 1.0 < fc["final_high"])
    (600.0, 'doubled', True)
    """
    steps, _ = _quiet_series(log, metric)
    if not steps.size:
        raise DataError(f"{log.source} has no values of {metric}")
    last = float(steps[-1])
    planned = log.meta.get("max_steps")
    if planned is not None and float(planned) > last:
        horizon, kind = float(planned), "planned"
    else:
        horizon, kind = 2.0 * last if last > 0 else 2.0, "doubled"
    out = forecast_run(log, horizon=horizon, metric=metric, n_boot=n_boot, level=level, seed=seed)
    out["horizon_kind"] = kind
    return out


def check_reward_range(reward_range, values: np.ndarray | None = None,
                       source: str = "the log") -> tuple[float, float] | None:
    """Validate a declared reward range ``(low, high)``: the least and the most a step's mean reward can be
    (a composite reward's sum of the reward functions' minima and maxima, e.g. ``(0, 1.5)`` for a format
    reward of 0.5 and a correctness reward of 1). Our rule.

    Parameters
    ----------
    reward_range : sequence of two floats, or None
        ``low < high``, both finite. ``None`` is returned as ``None``.
    values : numpy.ndarray, optional
        The logged rewards, shape ``(n,)``: each finite one must lie in the range (to 1e-9 of its width).
    source : str
        The log's name, for the message.

    Returns
    -------
    tuple of two floats, or None

    Raises
    ------
    ParameterError
        ``reward_range`` not two finite numbers with ``low < high``, or a logged reward outside it (the
        declared range is then wrong, and clipping to it would hide data).

    Examples
    --------
    >>> check_reward_range([0, 1.5])
    (0.0, 1.5)
    """
    from ...errors import ParameterError

    if reward_range is None:
        return None
    try:
        lo, hi = (float(v) for v in reward_range)
    except (TypeError, ValueError):
        raise ParameterError("reward_range", "`reward_range` must be two numbers (low, high), the least and the "
                             f"most a step's mean reward can be; got {reward_range!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError("reward_range", f"`reward_range` must be finite with low < high; got ({lo:g}, {hi:g})")
    if values is not None:
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v)]
        tol = 1e-9 * (hi - lo)
        if v.size and (v.min() < lo - tol or v.max() > hi + tol):
            raise ParameterError("reward_range", f"`reward_range` ({lo:g}, {hi:g}) does not hold the reward of "
                                 f"{source}: it runs from {v.min():.6g} to {v.max():.6g}")
    return lo, hi


def shown_range(values: np.ndarray, binary_reward: bool | None = None,
                reward_range: tuple[float, float] | None = None) -> tuple[float, float, str] | None:
    """The range a reward forecast and its band are shown within, with its name: the declared
    ``reward_range`` ("the reward's declared range"), else ``[0, 1]`` for a reward every logged value of
    which lies there unless ``binary_reward`` is False ("the range of a 0/1 reward"), else ``None``.
    A step's mean reward cannot leave the range its reward functions allow, so a forecast past it is
    shown at its edge (the forecaster's own numbers are kept beside it)."""
    if reward_range is not None:
        return float(reward_range[0]), float(reward_range[1]), "the reward's declared range"
    from .series import _is_binary_compatible

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if binary_reward is not False and _is_binary_compatible(v):
        return 0.0, 1.0, "the range of a 0/1 reward"
    return None


def range_text(rng: tuple[float, float, str] | list | None) -> str:
    """``"[0, 1], the range of a 0/1 reward"`` for a :func:`shown_range`; ``""`` for ``None``."""
    return "" if rng is None else f"[{float(rng[0]):g}, {float(rng[1]):g}], {rng[2]}"
