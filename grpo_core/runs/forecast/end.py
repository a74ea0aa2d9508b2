"""Where a run's reward ends: :func:`forecast_end`, the one forecast of the run's end, with its band as shown."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...errors import DataError, GrpoError, ParameterError
from ...laws import plateau
from ...validation import check_n_boot, check_real
from ..logs import RunLog
from .checks import check_log
from .law_fit import FORECAST_POINTS, fit_curve_laws, plateau_checks
from .result import CurveLawFit, EndForecast
from .reward_range import check_reward_range, outside_range, range_text, shown_range

__all__ = ["forecast_end", "END_N_BOOT", "WINDOW_N_BOOT"]

#: Block-bootstrap replicates of an end forecast as the commands make it: ``grpo-dynamics fit
#: --fit-fraction`` from a fit window (its ``--n-boot``, default 200, capped at ``WINDOW_N_BOOT``),
#: ``diagnose`` (and the report and the callback) from the whole log (capped at ``END_N_BOOT``: a
#: forecast made on every diagnosis). A chart of the same forecast uses the same number, so that it shows
#: the band the command prints (the band's quantiles move with the replicates).
WINDOW_N_BOOT = 100
END_N_BOOT = 30

_UNSTABLE = "the run is unstable: a plateau law does not describe it"


def forecast_end(log: RunLog, *, fit_fraction: float | None = None, horizon: float | None = None,
                 metric: str = "reward", split: str = "train", n_boot: int = 30, level: float = 0.9, seed: int = 0,
                 prior: plateau.PlateauPrior | None = None, reward_range: tuple[float, float] | None = None,
                 binary_reward: bool | None = None, unstable: bool = False,
                 law_fit_boot: int | None = None) -> EndForecast:
    """Forecast the mean ``metric`` over the last 20% of a run, with its band, as the forecaster makes it and
    as it is shown.

    The forecaster is the benchmarked one (``python -m bench forecast``; :func:`grpo_core.laws.plateau.
    forecast_plateau`): laws fitted in learning-rate time (the log's ``learning_rate`` when logged, else
    steps), averaged by evidence, shrunk toward the current level, plus the late gain (in units of the
    logged ``reward_std`` where the training log has it), with a block-bootstrap band widened by the
    conformal quantile of :data:`~grpo_core.laws.plateau.SHIPPED_PRIOR`. Long logs are bin-averaged to
    :data:`~grpo_core.runs.forecast.law_fit.FORECAST_POINTS` points first.

    Which end: with ``fit_fraction``, the log's own (the first ``fit_fraction`` of its points are fitted and
    the forecast is compared with the mean of its last 20%: ``horizon_kind`` ``"log_end"``); else
    ``horizon`` when given, else the log's planned ``max_steps`` when it lies after the last logged step (a
    run in progress: ``"planned"``), else the same run trained twice as long with the logged schedule's last
    rate held (``"doubled"``; within the benchmarked cuts 0.4 and 0.6).

    A reward's step mean lies in the range its functions allow: the declared ``reward_range``, or [0, 1] for
    a reward logged within it (unless ``binary_reward`` is False). The forecast and its band are shown
    within it (``shown_*``, ``band_clipped``), a forecast or plateau past it is said to be
    (``caveats``, ``plateau_past_range``); the forecaster's own numbers are kept beside.

    Parameters
    ----------
    log : RunLog
    fit_fraction : float in (0, 1), optional
        Fit the first ``fit_fraction`` of the points and forecast the end of the log.
    horizon : float, optional
        The run's planned last step (> the last logged step); not with ``fit_fraction``.
    metric : str
        The column to forecast (a range applies to names starting with ``"reward"`` only).
    split : {"train", "eval"}
        Its table (the learning rate and ``reward_std`` are read from the training table).
    n_boot : int, 0 or >= 2
        Block-bootstrap replicates.
    level : float in (0, 1)
        Nominal coverage of the band; the band's quantile is the prior's (tuned for 0.9), scaled by the
        normal quantile ratio at other levels.
    seed : int
        Bootstrap seed.
    prior : PlateauPrior, optional
        Default :data:`~grpo_core.laws.plateau.SHIPPED_PRIOR`.
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
        ``declined`` set (the numbers NaN) when the window holds fewer than 8 points, does not change, or
        reaches the end it is to forecast.

    Raises
    ------
    ParameterError
        ``log`` not a RunLog (None, a DataFrame); ``fit_fraction`` not in (0, 1) or given with ``horizon``;
        bad ``n_boot``, ``level`` or ``reward_range``.
    DataError
        No ``metric`` values, or (without ``fit_fraction``) a ``horizon`` not after the last logged step.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.0 - 0.8 * np.exp(-t / 60) + np.random.default_rng(0).normal(0, 0.05, 300)
    >>> log = from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)])
    >>> fc = forecast_end(log)
    >>> fc.horizon, fc.horizon_kind, bool(fc.low < 1.0 < fc.high)
    (600.0, 'doubled', True)
    >>> back = forecast_end(log, fit_fraction=0.5)
    >>> back.clock, bool(back.low < back.actual < back.high)
    ('step', True)
    """
    from ..diagnostics.series import _bin, _quiet_series  # here: the diagnostics import this room

    check_log(log)
    n_boot = check_n_boot("n_boot", n_boot)
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    steps, y = _quiet_series(log, metric, split)
    steps = steps.astype(float)
    if fit_fraction is not None:
        if horizon is not None:
            raise ParameterError("horizon", "`horizon` is the log's own end with `fit_fraction`: give one of them")
        fit_fraction = check_real("fit_fraction", fit_fraction, low=0.0, high=1.0, low_inclusive=False,
                                  high_inclusive=False)
        n_fit = int(math.floor(fit_fraction * y.size + 1e-9))
        horizon, kind = (float(steps[-1]) if steps.size else float("nan")), "log_end"
    else:
        if not steps.size:
            raise DataError(f"{log.source} has no values of {metric}")
        n_fit, last, planned = y.size, float(steps[-1]), log.meta.get("max_steps")
        if horizon is not None:
            horizon = check_real("horizon", horizon)
            if not horizon > last:
                raise DataError(f"{log.source}: the horizon {horizon:g} is not after the last logged step {last:g}")
            horizon, kind = float(horizon), "planned"
        elif planned is not None and float(planned) > last:
            horizon, kind = float(planned), "planned"
        else:
            horizon, kind = 2.0 * last if last > 0 else 2.0, "doubled"
    reward_range = check_reward_range(reward_range, y, str(log.source))
    t_fit, y_fit = steps[:n_fit], y[:n_fit]
    bt, by = _bin(t_fit, y_fit, FORECAST_POINTS)
    if bt.size < plateau.MIN_WINDOW:  # said before the end: an empty window has no end to compare
        fc, prior = plateau._nan_forecast(f"window too short ({bt.size} points, at least {plateau.MIN_WINDOW})",
                                          "step"), None
    elif horizon <= bt[-1]:
        fc, prior = plateau._nan_forecast("the fit window reaches the end of the log", "step"), None
    else:
        fc, prior = _point_and_band(log, bt, by, y_fit, t_fit, horizon=horizon, metric=metric, split=split,
                                    n_boot=n_boot, level=level, seed=seed, prior=prior)
    return _assemble(log, fc, prior, steps, y, n_fit, bt.size, horizon, kind, metric, level, fit_fraction,
                     shown_range(y, binary_reward, reward_range) if metric.startswith("reward") else None,
                     reward_range is not None, unstable, law_fit_boot)


def _point_and_band(log: RunLog, bt: np.ndarray, by: np.ndarray, y_fit: np.ndarray, t_fit: np.ndarray, *,
                    horizon: float, metric: str, split: str, n_boot: int, level: float, seed: int,
                    prior: plateau.PlateauPrior | None) -> tuple[plateau.PlateauForecast, plateau.PlateauPrior]:
    """The forecast's point and band from the window (``bt``, ``by``: its bin means; ``t_fit``, ``y_fit``: its
    raw steps and values), to ``horizon``: the forecaster of :func:`grpo_core.laws.plateau.forecast_plateau`
    with its prior (the late gain off for a metric that is not a reward, the band's quantile scaled to
    ``level``). Returns the forecast (``final``, ``final_low``, ``final_high``, ``plateau``, ``level``,
    ``weights``, ``clock``, ``declined``, ``std_unit``, :meth:`~grpo_core.laws.plateau.PlateauForecast.late_gain`)
    and the prior it used."""
    from scipy import stats

    from ..diagnostics.series import _quiet_series

    lr = None
    if log.has("learning_rate"):
        t_lr, rates = _quiet_series(log, "learning_rate")
        if t_lr.size >= 2 and np.any(rates > 0) and t_fit.size and t_lr[0] <= t_fit[0] and t_lr[-1] >= t_fit[-1]:
            lr = (t_lr.astype(float), rates)
    reward_std = None
    if metric == "reward" and split == "train" and log.has("reward_std"):
        t_s, s_s = _quiet_series(log, "reward_std")
        reward_std = (t_s.astype(float), s_s) if t_s.size else None
    prior = plateau.SHIPPED_PRIOR if prior is None else prior
    if not metric.startswith("reward"):
        # the late gain is the continued rise of real runs' rewards: no law for a KL, an entropy or a length
        prior = dataclasses.replace(prior, gain=0.0, std_gain=0.0)
    if level != 0.9:
        prior = dataclasses.replace(prior, q=prior.q * stats.norm.ppf(0.5 + level / 2) / stats.norm.ppf(0.95))
    # the late gain's unit is the raw window's spread (the benchmark's), not the bin averages'
    fc = plateau.forecast_plateau(bt, by, horizon=horizon, lr=lr, prior=prior, n_boot=n_boot, seed=seed,
                                  spread=plateau.window_spread(y_fit), reward_std=reward_std)
    return fc, prior


def _assemble(log, fc, prior, steps, y, n_fit, n_bins, horizon, kind, metric, level, fit_fraction, rng, declared,
              unstable, law_fit_boot) -> EndForecast:
    """The :class:`EndForecast` of a forecaster's result: the truth it is compared with (a log's own end), the
    range it is shown within, the caveats, and the law fit when asked for."""
    t_fit, y_fit = steps[:n_fit], y[:n_fit]
    ok = fc.declined is None
    actual = covered = error = actual_steps = actual_points = None
    actual_in_window = 0
    if fit_fraction is not None:
        # what the forecast is of: the mean of the log's last 20% of points (the benchmark's truth), also
        # when the window reaches into it (a fit fraction above 0.8: then partly seen, and counted)
        first = y.size - max(1, int(math.ceil(0.2 * y.size)))
        actual = float(np.mean(y[first:]))
        actual_steps = (float(steps[first]), float(steps[-1]))
        actual_in_window = max(0, n_fit - first)
        actual_points = int(y.size - first)
        if ok:
            covered = bool(fc.final_low <= actual <= fc.final_high)
            error = fc.final - actual
    spread = plateau.window_spread(y_fit)
    determined = bool(ok and math.isfinite(fc.plateau) and fc.final_low <= fc.plateau <= fc.final_high
                      and abs(fc.plateau - fc.final) <= 0.1 * spread)
    late_gain = fc.late_gain(prior) if ok else float("nan")
    caveats = []
    if ok and unstable:
        caveats.append(_UNSTABLE)
    if ok and outside_range(fc.final, rng):
        laws_only = fc.final - late_gain
        edge = f"{rng[1]:g}" if fc.final > rng[1] else f"{rng[0]:g}"
        if outside_range(laws_only, rng):
            caveats.append(f"the laws' forecast {fc.final:.4g} lies outside {range_text(rng)}: they extrapolate a "
                           f"rise that has not bent over yet (shown clipped to [{rng[0]:g}, {rng[1]:g}])")
        else:  # the laws have levelled off inside the range; the late gain carries the forecast past its edge
            caveats.append(f"the forecast {fc.final:.4g} lies outside {range_text(rng)}: the laws level off at "
                           f"{laws_only:.4g}, and the late gain (the slow rise real runs keep after their last "
                           f"bend, learned from the benchmark's runs) carries it past {edge}; a reward at its "
                           f"ceiling cannot keep rising (shown clipped to [{rng[0]:g}, {rng[1]:g}])")
    raw = (fc.final, fc.final_low, fc.final_high)
    shown = tuple(min(max(v, rng[0]), rng[1]) for v in raw) if rng is not None else raw
    past = bool(determined and outside_range(fc.plateau, rng))
    law_fit, law_fit_error = None, None
    if ok and law_fit_boot is not None:
        try:
            law_fit = fit_curve_laws(log, metric=metric, n_boot=law_fit_boot)
        except GrpoError as exc:  # too short for the law fit: the forecast alone
            law_fit_error = str(exc)
        else:
            law_fit = _judge_law_fit(law_fit, list(caveats), rng, y)
    return EndForecast(
        metric=metric, level=level, horizon=horizon, horizon_kind=kind, point=fc.final, low=fc.final_low,
        high=fc.final_high, shown_point=shown[0], shown_low=shown[1], shown_high=shown[2], shown_range=rng,
        range_declared=declared, band_clipped=bool(ok and rng is not None and shown[1:] != raw[1:]),
        asymptote=fc.plateau, asymptote_determined=determined, plateau_past_range=past,
        plateau_determined=determined and not past, now=fc.level, now_steps=_level_steps(t_fit, n_bins, fc),
        clock=fc.clock, method=plateau.METHOD, weights=dict(fc.weights), fit_fraction=fit_fraction,
        t_fit_end=float(t_fit[-1]) if t_fit.size else float("nan"), n_fit=int(n_fit), actual=actual,
        actual_steps=actual_steps, actual_points=actual_points, actual_in_window=actual_in_window, covered=covered,
        error=error, declined=fc.declined,
        window_range=float(np.ptp(y_fit)) if ok and np.size(y_fit) else float("nan"), late_gain=late_gain,
        late_gain_unit=None if not ok else ("reward_std" if math.isfinite(fc.std_unit) else "window_spread"),
        caveats=tuple(caveats), law_fit=law_fit, law_fit_error=law_fit_error)


def _judge_law_fit(fit: CurveLawFit, caveats: list[str], rng, r: np.ndarray) -> CurveLawFit:
    """The law fit with ``reliable`` and ``caveat``: the forecast's ``caveats`` and the first of
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


def _level_steps(t_fit: np.ndarray, n_points: int, fc) -> tuple[float, float] | None:
    """The first and last logged step behind the forecaster's current level (the mean of the fit window's
    last :data:`~grpo_core.laws.plateau.LEVEL_FRACTION` of its ``n_points`` binned points, at least 3), or
    ``None`` when the forecast was declined."""
    if fc.declined is not None or not n_points:
        return None
    n_last = min(n_points, max(3, int(math.ceil(plateau.LEVEL_FRACTION * n_points))))
    k = 1 if t_fit.size <= FORECAST_POINTS else int(math.ceil(t_fit.size / FORECAST_POINTS))  # as _bin
    return float(t_fit[(n_points - n_last) * k]), float(t_fit[n_points * k - 1])
