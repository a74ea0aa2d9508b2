"""The typed results of the forecast room: :class:`EndForecast` and the curve's :class:`CurveLawFit`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .reward_range import range_text

__all__ = ["EndForecast", "CurveLawFit"]

#: The law fit's keys in the JSON of a diagnosis (under ``law_fit``), in their order.
_LAW_FIT_KEYS = ("law", "plateau", "plateau_low", "plateau_high", "band_method", "r2", "r2_smoothed", "t90",
                 "current", "tail", "reached", "window", "start", "at_bound", "laws")
#: The runs the end forecast's band is calibrated on (``grpo_core/data/real_runs``, ``holdout_runs``,
#: ``holdout_runs_2``) and the new runs of the test fixed beforehand (``holdout_runs_3``), as
#: ``calibrated.json``'s provenance counts them.
CALIBRATION_RUNS = 52
HOLDOUT_RUNS = 15
#: The curves a chart draws (arrays; never in the JSON).
_CURVE_KEYS = ("t", "fitted", "fitted_low", "fitted_high", "smoothed_t", "smoothed")


@dataclass(frozen=True, eq=False)  # its curves are arrays: two fits are equal only as one object
class CurveLawFit:
    """The law that describes a reward curve (:func:`~grpo_core.runs.forecast.fit_curve_laws`): every law of
    :mod:`grpo_core.laws` fitted to the (bin-averaged) curve, the best by AIC, its plateau with a band.

    A description of the curve so far, not the forecast of where the run ends (that is
    :class:`EndForecast`): real run 01 has ``current`` 0.524, the mean of all 40 rows, where the end
    forecast's "now" is 0.00625.

    Attributes
    ----------
    metric : str
    law : str
        The law chosen by AIC.
    plateau, plateau_low, plateau_high : float
        Its plateau and band (``level`` coverage, ``band_method``: ``"bootstrap"`` or ``"delta"``).
    level : float
    band_method : str
    r2, r2_smoothed : float
        R^2 of the fit on the raw (binned) curve and of the same law against the rolling mean.
    t90 : float
        Steps to 90% of the plateau.
    current : float
        Mean of the last ``tail`` raw values.
    tail, window : int
        Values averaged for ``current``; the rolling-mean window in (binned) points.
    reached : float
        Fraction of the way from the fitted start to the plateau that ``current`` has made.
    start : float
        The fitted start.
    at_bound : tuple of str
        The chosen law's parameters on a bound (``"r_inf"``: the curve does not determine its plateau).
    laws : dict
        Law name -> ``{"r2", "aic", "plateau"}``.
    t, fitted, fitted_low, fitted_high : ndarray, shape (k,)
        The fitted curve and its band, for charts.
    smoothed_t, smoothed : ndarray, shape (m,)
        The centred rolling mean, for charts.
    reliable : bool or None
        Set by :func:`~grpo_core.runs.forecast.forecast_end` when it carries the fit: no caveat applies.
    caveat : str or None
        Why the fit's plateau is not to be read (``"; "``-joined), or ``None``.
    """

    metric: str
    law: str
    plateau: float
    plateau_low: float
    plateau_high: float
    level: float
    band_method: str
    r2: float
    r2_smoothed: float
    t90: float
    current: float
    tail: int
    reached: float
    window: int
    start: float
    at_bound: tuple[str, ...]
    laws: dict
    t: np.ndarray
    fitted: np.ndarray
    fitted_low: np.ndarray
    fitted_high: np.ndarray
    smoothed_t: np.ndarray
    smoothed: np.ndarray
    reliable: bool | None = None
    caveat: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fit's numbers as a dict in the order of a diagnosis' JSON (no curves): ``law``, ``plateau``,
        ..., ``laws``, then ``reliable`` and ``caveat`` when :func:`~grpo_core.runs.forecast.forecast_end`
        judged it (``caveat`` only when there is one)."""
        out = {k: (list(self.at_bound) if k == "at_bound" else getattr(self, k)) for k in _LAW_FIT_KEYS}
        if self.reliable is not None:
            out["reliable"] = self.reliable
            if self.caveat is not None:
                out["caveat"] = self.caveat
        return out


@dataclass(frozen=True)
class EndForecast:
    """Where a run's reward ends (:func:`~grpo_core.runs.forecast.forecast_end`): the mean reward over the
    last 20% of the steps up to ``horizon``, with its 90% band, as the method made it and as it is shown.

    Attributes
    ----------
    metric : str
    level : float
        Nominal coverage of the band: 0.9, the only level it is calibrated at.
    horizon : float
        The run's last step the forecast is of.
    horizon_kind : {"planned", "assumed", "log_end"}
        The planned end (the log's ``max_steps`` or a given horizon); twice the last logged step (the run
        assumed half done: the log does not give its planned end); the log's own last step (a forecast from
        its first ``fit_fraction``, compared with what happened).
    fraction_seen : float
        The fraction of the run seen, at which the band's quantile is read (``fit_fraction``; the last
        logged step over a planned horizon; 0.5 when assumed).
    point, low, high : float
        The method's forecast (the current level) and band (NaN when declined).
    shown_point, shown_low, shown_high : float
        The same within ``shown_range`` (equal to the method's without one).
    shown_range : tuple (low, high, name) or None
        The declared ``reward_range`` or [0, 1] for a reward logged within it; ``None``: none.
    range_declared : bool
        ``shown_range`` is the declared ``reward_range``.
    band_clipped : bool
        The band as shown differs from the method's.
    now : float
        The current level: the mean of the seen part's last 10% of points, at least 3 (``point``).
    now_steps : tuple (first, last) or None
        The steps behind ``now`` (``None`` when declined).
    q : float
        The band's conformal quantile at ``fraction_seen`` (window spreads; NaN when declined).
    scale : float
        The seen part's spread ``s_w`` (reward units; NaN when declined): the band is ``point +- q scale``.
    method : str
        One line naming the method.
    calibration : str
        The record the band's quantiles were calibrated in.
    fit_fraction : float or None
    t_fit_end : float
    n_fit : int
        The points seen.
    actual, actual_steps, actual_points, actual_in_window, covered, error
        With ``fit_fraction``: the mean of the log's last 20% of points (the calibration's truth), their
        first and last step, how many, how many the window holds, whether the band covers it, and
        ``point - actual``; ``None`` (``actual_in_window`` 0) otherwise.
    declined : str or None
        Why no forecast was made (then the numbers are NaN).
    window_range : float
        ``max - min`` of the seen values (NaN when declined).
    caveats : tuple of str
        Why the forecast is to be read with care: the run is unstable, the level asked for is not 0.9.
    law_fit : CurveLawFit or None
        The law that describes the curve, when asked for (with its caveats), else ``None``.
    law_fit_error : str or None
        Why the law fit failed, when asked for.
    """

    metric: str
    level: float
    horizon: float
    horizon_kind: str
    fraction_seen: float
    point: float
    low: float
    high: float
    shown_point: float
    shown_low: float
    shown_high: float
    shown_range: tuple[float, float, str] | None
    range_declared: bool
    band_clipped: bool
    now: float
    now_steps: tuple[float, float] | None
    q: float
    scale: float
    method: str
    calibration: str
    fit_fraction: float | None
    t_fit_end: float
    n_fit: int
    actual: float | None
    actual_steps: tuple[float, float] | None
    actual_points: int | None
    actual_in_window: int
    covered: bool | None
    error: float | None
    declined: str | None
    window_range: float
    caveats: tuple[str, ...] = ()
    law_fit: CurveLawFit | None = None
    law_fit_error: str | None = None

    # -- text ------------------------------------------------------------------------------------------

    @property
    def caveat(self) -> str | None:
        """The caveats joined with ``"; "``, or ``None``."""
        return "; ".join(self.caveats) or None

    @property
    def wide_band_note(self) -> str:
        """``""``, or a note that the band as shown is at least as wide as every value the seen part logged
        (``window_range``): a truth "inside" it is then weak evidence (from 20% of a run the band is about
        10 window spreads wide)."""
        low, high, rng = self.shown_low, self.shown_high, self.window_range
        # at least as wide (to rounding): a band clipped to a declared range that the window spanned
        if not (rng > 0 and math.isfinite(high - low) and high - low >= rng * (1 - 1e-9)):
            return ""
        return (f"the band is {(high - low) / rng:.2f}x as wide as the whole range of the values seen: it says "
                "little about where the run ends")

    @property
    def evidence(self) -> str:
        """What the forecast is and its evidence, in one clause (``""`` when declined)."""
        if self.declined is not None:
            return ""
        a, b = self.now_steps
        return (f"the current level (mean of steps {a:g}-{b:g}), band calibrated on {CALIBRATION_RUNS} real runs "
                f"at {self.fraction_seen:.0%} of this run (split-conformal); on {HOLDOUT_RUNS} new runs no point "
                "forecast beat holding the level")

    @property
    def horizon_note(self) -> str:
        """Where the run's end was taken from, in words."""
        h = self.horizon
        if self.horizon_kind == "assumed":
            return (f"the log does not give its planned end (max_steps): the band assumes the run is half done, to "
                    f"end at step {h:g}; give the planned steps with `diagnose --max-steps N`")
        if self.horizon_kind == "planned":
            return f"planned end: step {h:g}, {self.fraction_seen:.0%} of it seen"
        return f"the log's end: step {h:g}, the first {self.fraction_seen:.0%} of its points seen"

    def headline(self) -> str:
        """The forecast in one line: the end-of-run mean with its band as shown and its evidence, or why
        there is none."""
        h = self.horizon
        head = f"end of run (mean of the last 20% of steps, {round(0.8 * h):d}-{h:g})"
        if self.declined is not None:
            return f"{head}: no forecast: {self.declined}"
        return (f"{head}: {self.shown_point:.4g}, {self.level:.0%} band [{self.shown_low:.4g}, {self.shown_high:.4g}]"
                + (f" (clipped to {range_text(self.shown_range)})" if self.band_clipped else "")
                + f": {self.evidence}")

    def lines(self) -> list[str]:
        """The forecast in two lines (what ``diagnose`` and the callback print): :meth:`headline`, and where
        the end was taken from with the notes and caveats."""
        notes = [self.horizon_note]
        if self.declined is None and self.wide_band_note:
            notes.append(self.wide_band_note)
        notes += list(self.caveats)
        return [self.headline(), "  " + "; ".join(notes)]

    # -- dicts -----------------------------------------------------------------------------------------

    def forecaster_dict(self) -> dict[str, Any]:
        """The method's own numbers (unclipped) under their record names: ``final``, ``final_low``,
        ``final_high``, ``current``, ``current_steps``, ``level``, ``method``, ``fraction_seen``,
        ``calibration``, ``q``, ``scale``, ``fit_fraction``, ``t_fit_end``, ``horizon``, ``n_fit``,
        ``actual``, ``actual_steps``, ``actual_in_window``, ``actual_points``, ``covered``, ``error``,
        ``declined``, ``window_range``, and ``horizon_kind`` unless the forecast is of the log's own end."""
        out = {"metric": self.metric, "final": self.point, "final_low": self.low, "final_high": self.high,
               "current": self.now, "current_steps": _list(self.now_steps), "level": self.level,
               "method": self.method, "fraction_seen": self.fraction_seen, "calibration": self.calibration,
               "q": self.q, "scale": self.scale, "fit_fraction": self.fit_fraction, "t_fit_end": self.t_fit_end,
               "horizon": self.horizon, "n_fit": self.n_fit, "actual": self.actual,
               "actual_steps": _list(self.actual_steps), "actual_in_window": self.actual_in_window,
               "actual_points": self.actual_points, "covered": self.covered, "error": self.error,
               "declined": self.declined, "window_range": self.window_range}
        if self.horizon_kind != "log_end":
            out["horizon_kind"] = self.horizon_kind
        return out

    def to_dict(self) -> dict[str, Any]:
        """The forecast as JSON-ready keys (not yet :func:`~grpo_core._json.json_ready`; no curves).

        An end-of-run forecast (``horizon_kind`` ``"planned"`` or ``"assumed"``, the JSON of ``diagnose``):
        ``metric``, ``level``, ``method``, ``fraction_seen``, ``calibration``, ``forecast`` (:meth:`headline`),
        ``end_of_run`` (:meth:`forecaster_dict`), ``final``, ``final_low``, ``final_high`` (as shown),
        ``band_clipped``, ``shown_range``, ``horizon``, ``horizon_kind``, ``horizon_note``, ``now``,
        ``now_steps``, ``forecast_caveat``, ``window_range`` and ``law_fit`` (the curve's law fit,
        :meth:`CurveLawFit.to_dict`, or ``{"law": None, "law_fit_error": ...}``; ``None`` when not asked for).

        A forecast from the first ``fit_fraction`` (``horizon_kind`` ``"log_end"``, the JSON of ``fit
        --fit-fraction``): :meth:`forecaster_dict` with ``forecast`` (:meth:`headline`), ``unit_range`` (the
        range shown is [0, 1] for a reward logged within it, not declared), ``shown_range`` and ``shown``
        (``final``, ``low``, ``high``, ``clipped_to``, ``error``: what the text shows).
        """
        rng = None if self.shown_range is None else list(self.shown_range)
        if self.horizon_kind == "log_end":
            out = self.forecaster_dict()
            out["forecast"] = self.headline()
            out["unit_range"] = self.shown_range is not None and not self.range_declared
            out["shown_range"] = rng
            out["shown"] = {"final": self.shown_point, "low": self.shown_low, "high": self.shown_high,
                            "clipped_to": None if rng is None else rng[:2],
                            "error": None if self.actual is None or self.declined is not None
                            else self.shown_point - self.actual}
            return out
        if self.law_fit is not None:
            law_fit = self.law_fit.to_dict()
        elif self.law_fit_error is not None:
            law_fit = {"law": None, "law_fit_error": self.law_fit_error}
        else:
            law_fit = None
        return {"metric": self.metric, "level": self.level, "method": self.method,
                "fraction_seen": self.fraction_seen, "calibration": self.calibration, "forecast": self.headline(),
                "end_of_run": self.forecaster_dict(), "final": self.shown_point, "final_low": self.shown_low,
                "final_high": self.shown_high, "band_clipped": self.band_clipped, "shown_range": rng,
                "horizon": self.horizon, "horizon_kind": self.horizon_kind, "horizon_note": self.horizon_note,
                "now": self.now, "now_steps": _list(self.now_steps), "forecast_caveat": self.caveat,
                "window_range": self.window_range, "law_fit": law_fit}

    def to_record(self) -> dict[str, Any]:
        """What the training callback keeps of each forecast: ``final``, ``final_low``, ``final_high`` (as
        shown), ``horizon``, ``horizon_kind``, ``method``, ``fraction_seen``, ``calibration``, ``forecast``
        (:meth:`headline`), ``now``, ``now_steps``, ``band_clipped``, the law fit's ``plateau``,
        ``plateau_low``, ``plateau_high``, ``law``, ``current``, ``reached``, ``t90``, ``reliable`` (``None``
        without a law fit), and ``end_of_run`` (``horizon``, ``final``, ``final_low``, ``final_high``: the
        method's own) when the horizon is the planned one."""
        fit = self.law_fit
        out = {"final": self.shown_point, "final_low": self.shown_low, "final_high": self.shown_high,
               "horizon": self.horizon, "horizon_kind": self.horizon_kind, "method": self.method,
               "fraction_seen": self.fraction_seen, "calibration": self.calibration, "forecast": self.headline(),
               "now": self.now, "now_steps": _list(self.now_steps), "band_clipped": self.band_clipped}
        out.update({k: None if fit is None else getattr(fit, k) for k in
                    ("plateau", "plateau_low", "plateau_high", "law", "current", "reached", "t90", "reliable")})
        if self.declined is None and self.horizon_kind == "planned":
            out["end_of_run"] = {"horizon": self.horizon, "final": self.point, "final_low": self.low,
                                 "final_high": self.high}
        return out

    # -- read-only mapping view ------------------------------------------------------------------------

    def _flat(self) -> dict[str, Any]:
        out = dict(self.to_dict())
        law_fit = out.pop("law_fit", None) or {}
        out.update(law_fit)
        if self.law_fit is not None:
            out.update({k: getattr(self.law_fit, k) for k in _CURVE_KEYS})
        return out

    def __getitem__(self, key: str) -> Any:
        """The value under its JSON name (``fc["final"]`` is ``fc.shown_point``; the law fit's names at the
        top level, its curves included): a read-only view for code that reads the forecast as a dict.
        New code reads the attributes."""
        return self._flat()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """:meth:`__getitem__`, or ``default`` for a name it does not hold."""
        return self._flat().get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self._flat()


def _list(pair) -> list | None:
    return None if pair is None else list(pair)

