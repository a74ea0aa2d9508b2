"""Where a run's reward ends: :func:`forecast_end`, the one forecast of the run's end, with its band as shown."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...errors import DataError, GrpoError, ParameterError
from ...validation import check_real
from ..logs import RunLog
from . import calibrated
from .checks import check_log
from .law_fit import fit_curve_laws, plateau_checks
from .result import CurveLawFit, EndForecast
from .reward_range import check_reward_range, range_text, shown_range

__all__ = ["forecast_end", "is_reward"]

_UNSTABLE = "the run is unstable: a forecast from its current level assumes it stays where it is"


def is_reward(metric: str, split: str = "train") -> bool:
    """Whether ``metric`` of ``split`` is a training reward, the only curve the end forecast's band is
    calibrated on: ``"reward"`` or a reward function's mean (``rewards/<f>`` or ``reward/<f>``, not its
    ``/std``), of the training table."""
    if split != "train":
        return False
    return metric == "reward" or (metric.startswith(("rewards/", "reward/")) and not metric.endswith("/std"))


def forecast_end(log: RunLog, *, fit_fraction: float | None = None, horizon: float | None = None,
                 metric: str = "reward", split: str = "train", level: float = 0.9,
                 reward_range: tuple[float, float] | None = None, binary_reward: bool | None = None,
                 unstable: bool = False, law_fit_boot: int | None = None) -> EndForecast:
    """Forecast the mean training reward over the last 20% of a run, with its 90% band, as the shipped
    method makes it (:func:`grpo_core.runs.forecast.calibrated.forecast_calibrated`) and as it is shown.

    The point is the current level (the mean of the seen part's last 10% of points, at least 3); the band
    is ``level +- q(f) s_w``, ``s_w`` the seen part's spread and ``q(f)`` the split-conformal quantile
    calibrated on 52 real runs at the fraction ``f`` of the run seen (``calibrated.json``). On 15 new runs
    in a test fixed beforehand (``bench/results/preregistration_v3.md``) no point forecast beat holding the
    current level, so none is added to it.

    Which end, and the fraction seen: with ``fit_fraction``, the log's own (its first ``fit_fraction`` of
    points are seen, ``f = fit_fraction`` as the calibration cuts runs; ``horizon_kind`` ``"log_end"``);
    else ``horizon`` when given, else the log's planned ``max_steps`` when it is known (``"planned"``,
    ``f = last step / horizon``), else twice the last logged step: the run is assumed half done
    (``"assumed"``, ``f = 0.5``, said in the lines).

    Declined (``declined`` says why, the numbers NaN): a metric that is not a training reward
    (:func:`is_reward`: the calibration is of rewards), ``f`` outside :data:`~grpo_core.runs.forecast.
    calibrated.DOMAIN` (before 20% the band is not calibrated; after 80% the end is nearly what the log
    shows), fewer than :data:`~grpo_core.runs.forecast.calibrated.MIN_POINTS` points seen, a seen part
    whose rolling mean does not change (the band has no scale).

    A reward's step mean lies in the range its functions allow: the declared ``reward_range``, or [0, 1] for
    a reward logged within it (unless ``binary_reward`` is False). The band is shown within it
    (``shown_*``, ``band_clipped``); the method's own numbers are kept beside.

    Parameters
    ----------
    log : RunLog
    fit_fraction : float in (0, 1), optional
        See the first ``fit_fraction`` of the points and forecast the end of the log.
    horizon : float, optional
        The run's planned last step (> the last logged step); not with ``fit_fraction``.
    metric : str
        The column (forecast for a training reward only, :func:`is_reward`).
    split : {"train", "eval"}
    level : float in (0, 1)
        The coverage asked for. The band is calibrated at 0.9 only: at any other level the 90% band is
        given and ``caveats`` say so (``EndForecast.level`` is 0.9).
    reward_range : (float, float), optional
        The least and the most a step's mean reward can be (checked to hold every logged value).
    binary_reward : bool, optional
        False: a reward logged within [0, 1] is not shown within it.
    unstable : bool
        The run was found unstable (``dynamic_instability``): said among the caveats.
    law_fit_boot : int, optional
        Also fit the curve's laws (:func:`~grpo_core.runs.forecast.fit_curve_laws` with this many
        replicates) and judge them (``law_fit`` with ``reliable`` and ``caveat``; ``law_fit_error`` when the
        curve is too short for them). ``None``: no law fit.

    Returns
    -------
    EndForecast

    Raises
    ------
    ParameterError
        ``log`` not a RunLog (None, a DataFrame); ``fit_fraction`` not in (0, 1) or given with ``horizon``;
        bad ``level`` or ``reward_range``.
    DataError
        No ``metric`` values, or (without ``fit_fraction``) a ``horizon`` not after the last logged step.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.0 - 0.8 * np.exp(-t / 60) + np.random.default_rng(0).normal(0, 0.05, 300)
    >>> log = from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)])
    >>> fc = forecast_end(log)
    >>> fc.horizon, fc.horizon_kind, fc.fraction_seen, bool(fc.point == fc.now)
    (600.0, 'assumed', 0.5, True)
    >>> back = forecast_end(log, fit_fraction=0.4)
    >>> back.fraction_seen, bool(back.low < back.actual < back.high)
    (0.4, True)
    """
    from ..diagnostics.series import _quiet_series  # here: the diagnostics import this room

    check_log(log)
    asked = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    steps, y = _quiet_series(log, metric, split)
    steps = steps.astype(float)
    if fit_fraction is not None:
        if horizon is not None:
            raise ParameterError("horizon", "`horizon` is the log's own end with `fit_fraction`: give one of them")
        fit_fraction = check_real("fit_fraction", fit_fraction, low=0.0, high=1.0, low_inclusive=False,
                                  high_inclusive=False)
        n_fit = int(math.floor(fit_fraction * y.size + 1e-9))
        horizon, kind = (float(steps[-1]) if steps.size else float("nan")), "log_end"
        fraction = float(fit_fraction)  # of the points, as the calibration cuts its runs
    else:
        if not steps.size:
            raise DataError(f"{log.source} has no values of {metric}")
        n_fit, last, planned = y.size, float(steps[-1]), log.meta.get("max_steps")
        if horizon is not None:
            horizon = check_real("horizon", horizon)
            if not horizon > last:
                raise DataError(f"{log.source}: the horizon {horizon:g} is not after the last logged step {last:g}")
            horizon, kind = float(horizon), "planned"
        elif planned is not None and float(planned) > 0:
            horizon, kind = float(planned), "planned"
        else:
            horizon, kind = 2.0 * last if last > 0 else 2.0, "assumed"
        fraction = last / horizon if kind == "planned" else 0.5
    reward_range = check_reward_range(reward_range, y, str(log.source))
    t_fit, y_fit = steps[:n_fit], y[:n_fit]
    cal, declined = _point_and_band(t_fit, y_fit, horizon=horizon, fraction=fraction, metric=metric, split=split)
    return _assemble(log, cal, declined, steps, y, n_fit, horizon, kind, fraction, metric, asked, fit_fraction,
                     shown_range(y, binary_reward, reward_range) if is_reward(metric, split) else None,
                     reward_range is not None, unstable, law_fit_boot)


def _point_and_band(t_fit: np.ndarray, y_fit: np.ndarray, *, horizon: float, fraction: float, metric: str,
                    split: str) -> tuple[calibrated.CalibratedForecast | None, str | None]:
    """The forecast's point and band from the seen part (``t_fit``, ``y_fit``: its raw steps and values) at
    ``fraction`` of a run ending at ``horizon``: :func:`~grpo_core.runs.forecast.calibrated.forecast_calibrated`,
    or ``None`` with the reason it is declined."""
    lo, hi = calibrated.DOMAIN
    if not is_reward(metric, split):
        which = f"`{metric}`" + ("" if split == "train" else f" of the {split} rows")
        return None, (f"no end forecast for {which}: its band is calibrated on training rewards only; "
                      "the law fit still describes the curve")
    if fraction < lo - 1e-9:
        return None, (f"too early: {fraction:.0%} of the run is seen, and the band is calibrated from "
                      f"{lo:.0%} of a run on")
    if fraction >= 1.0 - 1e-9:
        if fraction > 1.0 + 1e-9:
            return None, f"the log runs past its planned end (max_steps {horizon:g}): nothing is left to forecast"
        last = y_fit[t_fit >= 0.8 * horizon]
        return None, (f"the run has reached its planned end (step {horizon:g}): its end is what the log shows, "
                      f"the mean of steps {round(0.8 * horizon):d}-{horizon:g}: {float(np.mean(last)):.4g}")
    if fraction > hi + 1e-9:
        return None, (f"{fraction:.0%} of the run is seen: its end is nearly what the log shows now; the band "
                      f"is calibrated up to {hi:.0%} of a run")
    if y_fit.size < calibrated.MIN_POINTS:
        return None, (f"too few points seen: {y_fit.size}, and the calibrated band needs at least "
                      f"{calibrated.MIN_POINTS}")
    try:
        # the seen part's last step is before the horizon here (fraction <= 0.8)
        return calibrated.forecast_calibrated(t_fit, y_fit, horizon=horizon, fraction=fraction), None
    except DataError as exc:
        return None, str(exc)


def _assemble(log, cal, declined, steps, y, n_fit, horizon, kind, fraction, metric, asked, fit_fraction, rng,
              declared, unstable, law_fit_boot) -> EndForecast:
    """The :class:`EndForecast` of the method's result: the truth it is compared with (a log's own end), the
    range it is shown within, the caveats, and the law fit when asked for."""
    t_fit, y_fit = steps[:n_fit], y[:n_fit]
    ok = cal is not None
    nan = float("nan")
    point, low, high = (cal.point, cal.low, cal.high) if ok else (nan, nan, nan)
    actual = covered = error = actual_steps = actual_points = None
    actual_in_window = 0
    if fit_fraction is not None:
        # what the forecast is of: the mean of the log's last 20% of points (the calibration's truth), also
        # when the window reaches into it (then partly seen, and counted)
        first = y.size - max(1, int(math.ceil(0.2 * y.size)))
        actual = float(np.mean(y[first:]))
        actual_steps = (float(steps[first]), float(steps[-1]))
        actual_in_window = max(0, n_fit - first)
        actual_points = int(y.size - first)
        if ok:
            covered = bool(low <= actual <= high)
            error = point - actual
    caveats = []
    if ok and unstable:
        caveats.append(_UNSTABLE)
    if ok and not math.isclose(asked, cal.coverage):
        caveats.append(f"the band is calibrated at {cal.coverage:.0%} only: this is the {cal.coverage:.0%} band, "
                       f"not the {asked:.0%} asked for")
    raw = (point, low, high)
    shown = tuple(min(max(v, rng[0]), rng[1]) for v in raw) if ok and rng is not None else raw
    law_fit, law_fit_error = None, None
    if law_fit_boot is not None:
        try:
            law_fit = fit_curve_laws(log, metric=metric, n_boot=law_fit_boot)
        except GrpoError as exc:  # too short for the law fit: the forecast alone
            law_fit_error = str(exc)
        else:
            law_fit = _judge_law_fit(law_fit, [_UNSTABLE] if unstable else [], rng, y)
    if ok:
        k = min(y_fit.size, max(3, int(math.ceil(0.1 * y_fit.size))))  # as calibrated.current_level
        now_steps = (float(t_fit[-k]), float(t_fit[-1]))
    return EndForecast(
        metric=metric, level=calibrated.CONSTANTS["coverage"], horizon=horizon, horizon_kind=kind,
        fraction_seen=float(fraction), point=point, low=low, high=high, shown_point=shown[0], shown_low=shown[1],
        shown_high=shown[2], shown_range=rng, range_declared=declared,
        band_clipped=bool(ok and rng is not None and shown[1:] != raw[1:]), now=point,
        now_steps=now_steps if ok else None, q=cal.q if ok else nan, scale=cal.scale if ok else nan,
        method=calibrated.METHOD, calibration=CALIBRATION, fit_fraction=fit_fraction,
        t_fit_end=float(t_fit[-1]) if t_fit.size else nan, n_fit=int(n_fit), actual=actual,
        actual_steps=actual_steps, actual_points=actual_points, actual_in_window=actual_in_window, covered=covered,
        error=error, declined=declined, window_range=float(np.ptp(y_fit)) if ok else nan,
        caveats=tuple(caveats), law_fit=law_fit, law_fit_error=law_fit_error)


#: The record the band's quantiles come from.
CALIBRATION = "bench/results/forecast_fair.json"


def _judge_law_fit(fit: CurveLawFit, caveats: list[str], rng, r: np.ndarray) -> CurveLawFit:
    """The law fit with ``reliable`` and ``caveat``: ``caveats`` and the first of
    :func:`~grpo_core.runs.forecast.plateau_checks` that holds (its plateau at the law's bound, outside
    ``rng``, a band more than three times the reward's whole range, that of ``r``)."""
    at_bound, outside, wide = plateau_checks(fit.plateau, fit.plateau_low, fit.plateau_high, fit.at_bound,
                                             float(np.ptp(r)), rng)
    if at_bound:
        caveats.append("the curve does not determine its plateau: the fitted value sits at the law's "
                       "bound, ten reward ranges beyond the data")
    elif outside:
        caveats.append(f"the fitted plateau {fit.plateau:.4g} lies outside {range_text(rng)}: the curve "
                       "has not bent over yet and the law extrapolates past it")
    elif wide:
        caveats.append(f"the fitted plateau's band [{fit.plateau_low:.4g}, {fit.plateau_high:.4g}] is more "
                       f"than three times as wide as the reward's whole range ({float(np.min(r)):.4g} to "
                       f"{float(np.max(r)):.4g}): the curve does not determine its plateau")
    return dataclasses.replace(fit, reliable=not caveats, caveat="; ".join(caveats) or None)
