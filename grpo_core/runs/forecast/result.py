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
    """Where a run's reward ends (:func:`~grpo_core.runs.forecast.forecast_end`): the mean ``metric`` over the
    last 20% of the steps up to ``horizon``, with its band, as the forecaster made it and as it is shown.

    Attributes
    ----------
    metric : str
    level : float
        Nominal coverage of the band, in (0, 1).
    horizon : float
        The run's last step the forecast is of.
    horizon_kind : {"planned", "doubled", "log_end"}
        The log's planned ``max_steps``; twice the last logged step (a finished run trained on); the
        log's own last step (a forecast from its first ``fit_fraction``, compared with what happened).
    point, low, high : float
        The forecaster's own forecast and band (NaN when declined).
    shown_point, shown_low, shown_high : float
        The same within ``shown_range`` (equal to the forecaster's without one).
    shown_range : tuple (low, high, name) or None
        The declared ``reward_range`` or [0, 1] for a reward logged within it; ``None``: none.
    range_declared : bool
        ``shown_range`` is the declared ``reward_range``.
    band_clipped : bool
        The band as shown differs from the forecaster's.
    asymptote : float
        The laws' asymptote (shrunk and shifted like ``point``).
    asymptote_determined : bool
        The forecaster's verdict: the asymptote lies inside the band and within 0.1 of the window's
        spread of ``point`` (the laws have levelled off by the horizon).
    plateau_past_range : bool
        A determined asymptote outside ``shown_range``.
    plateau_determined : bool
        ``asymptote_determined`` and not ``plateau_past_range``: a plateau to quote.
    now : float
        The forecaster's current level (mean of the window's last 10% of points, at least 3).
    now_steps : tuple (first, last) or None
        The steps behind ``now`` (``None`` when declined).
    clock : {"learning_rate", "step"}
    method : str
        One line naming the forecaster.
    weights : dict
        Each law's weight.
    fit_fraction : float or None
    t_fit_end : float
    n_fit : int
        The points the window holds.
    actual, actual_steps, actual_points, actual_in_window, covered, error
        With ``fit_fraction``: the mean of the log's last 20% of points (the benchmark's truth), their
        first and last step, how many, how many the window holds, whether the band covers it, and
        ``point - actual``; ``None`` (``actual_in_window`` 0) otherwise.
    declined : str or None
        Why no forecast was made (then the numbers are NaN).
    window_range : float
        ``max - min`` of the window's values (NaN when declined).
    late_gain : float
        The part of ``point`` added by the prior's late gain (NaN when declined).
    late_gain_unit : {"reward_std", "window_spread"} or None
    caveats : tuple of str
        Why the forecast is to be read with care: the run is unstable, the forecast lies outside the range.
    law_fit : CurveLawFit or None
        The law that describes the curve, when asked for (with its caveats), else ``None``.
    law_fit_error : str or None
        Why the law fit failed, when asked for.
    """

    metric: str
    level: float
    horizon: float
    horizon_kind: str
    point: float
    low: float
    high: float
    shown_point: float
    shown_low: float
    shown_high: float
    shown_range: tuple[float, float, str] | None
    range_declared: bool
    band_clipped: bool
    asymptote: float
    asymptote_determined: bool
    plateau_past_range: bool
    plateau_determined: bool
    now: float
    now_steps: tuple[float, float] | None
    clock: str
    method: str
    weights: dict
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
    late_gain: float
    late_gain_unit: str | None
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
        """``""``, or a note that the band as shown is at least as wide as every value the fit window logged
        (``window_range``): a truth "inside" it is then weak evidence (real run 32 from 40%: a band 3.3x the
        range of its 33 rewards)."""
        low, high, rng = self.shown_low, self.shown_high, self.window_range
        # at least as wide (to rounding): a band clipped to a declared range that the window spanned is as wide
        # as everything, real run 34 from 20% with reward_range (-7.5, 13) (its first 20 points span -7.5 to 13)
        if not (rng > 0 and math.isfinite(high - low) and high - low >= rng * (1 - 1e-9)):
            return ""
        return (f"the band is {(high - low) / rng:.2f}x as wide as the whole range of the values the fit window "
                "logged: it says little about where the run ends")

    @property
    def late_gain_text(self) -> str:
        """``late_gain`` signed to 3 significant digits, or ``"+0"`` when it is below 1e-4 of the window's
        range (real run 08 doubled: its learning rate has decayed to ~0, so a gain of 1.4e-13 is no gain)."""
        v, rng = float(self.late_gain), float(self.window_range)
        if math.isfinite(v) and math.isfinite(rng) and rng > 0 and abs(v) < 1e-4 * rng:
            return "+0"
        return f"{v:+.3g}"

    def lines(self) -> list[str]:
        """The forecast in two lines (what ``diagnose`` and the callback print): where the reward ends (the
        end-of-run mean with its band as shown, and the plateau or why it is not quoted), and now (the
        forecaster's current level and the steps it averages, with the caveats)."""
        h = self.horizon
        where = (f"at the planned end of the run (step {h:g})" if self.horizon_kind == "planned"
                 else f"if trained on to step {h:g} (twice as long)")
        plateau = (f"plateau {self.asymptote:.4g}" if self.plateau_determined else
                   f"plateau not determined (the laws have not levelled off by step {h:g})")
        a, b = self.now_steps
        wide = self.wide_band_note
        return [f"forecast: {where}, the mean reward over steps {round(0.8 * h):d}-{h:g} is {self.shown_point:.4g} "
                f"[{self.shown_low:.4g}, {self.shown_high:.4g}] ({self.level:.0%} band"
                + (f", clipped to {range_text(self.shown_range)}" if self.band_clipped else "")
                + (f"; {wide}" if wide else "") + f"); {plateau}",
                f"now {self.now:.4g} (the forecaster's current level: mean of steps {a:g}-{b:g}; {self.clock} clock)"
                + (f" (caveat: {self.caveat})" if self.caveat else "")]

    # -- dicts -----------------------------------------------------------------------------------------

    def forecaster_dict(self) -> dict[str, Any]:
        """The forecaster's own numbers (unclipped) under their record names: ``final``, ``final_low``,
        ``final_high``, ``plateau``, ``current``, ``current_steps``, ``plateau_determined`` (the
        forecaster's), ``weights``, ``clock``, ``level``, ``fit_fraction``, ``t_fit_end``, ``horizon``,
        ``n_fit``, ``method``, ``actual``, ``actual_steps``, ``actual_in_window``, ``actual_points``,
        ``covered``, ``error``, ``declined``, ``window_range``, ``late_gain``, ``late_gain_unit``, and
        ``horizon_kind`` unless the forecast is of the log's own end."""
        out = {"metric": self.metric, "final": self.point, "final_low": self.low, "final_high": self.high,
               "plateau": self.asymptote, "current": self.now, "current_steps": _list(self.now_steps),
               "plateau_determined": self.asymptote_determined, "weights": dict(self.weights), "clock": self.clock,
               "level": self.level, "fit_fraction": self.fit_fraction, "t_fit_end": self.t_fit_end,
               "horizon": self.horizon, "n_fit": self.n_fit, "method": self.method, "actual": self.actual,
               "actual_steps": _list(self.actual_steps), "actual_in_window": self.actual_in_window,
               "actual_points": self.actual_points, "covered": self.covered, "error": self.error,
               "declined": self.declined, "window_range": self.window_range, "late_gain": self.late_gain,
               "late_gain_unit": self.late_gain_unit}
        if self.horizon_kind != "log_end":
            out["horizon_kind"] = self.horizon_kind
        return out

    def to_dict(self) -> dict[str, Any]:
        """The forecast as JSON-ready keys (not yet :func:`~grpo_core._json.json_ready`; no curves).

        An end-of-run forecast (``horizon_kind`` ``"planned"`` or ``"doubled"``, the JSON of ``diagnose``):
        ``metric``, ``level``, ``end_of_run`` (:meth:`forecaster_dict`), ``final``, ``final_low``,
        ``final_high`` (as shown), ``band_clipped``, ``shown_range``, ``horizon``, ``horizon_kind``,
        ``asymptote``, ``plateau_determined`` (quoted), ``now``, ``now_steps``, ``clock``,
        ``forecast_caveat``, ``window_range`` and ``law_fit`` (the curve's law fit, :meth:`CurveLawFit.to_dict`,
        or ``{"law": None, "law_fit_error": ...}``; ``None`` when not asked for).

        A forecast from the first ``fit_fraction`` (``horizon_kind`` ``"log_end"``, the JSON of ``fit
        --fit-fraction``): :meth:`forecaster_dict` with ``unit_range`` (the range shown is [0, 1] for a
        reward logged within it, not declared), ``shown_range`` and ``shown`` (``final``, ``low``, ``high``,
        ``clipped_to``, ``plateau_past_range``, ``plateau_determined``, ``error``: what the text shows).
        """
        rng = None if self.shown_range is None else list(self.shown_range)
        if self.horizon_kind == "log_end":
            out = self.forecaster_dict()
            out["unit_range"] = self.shown_range is not None and not self.range_declared
            out["shown_range"] = rng
            out["shown"] = {"final": self.shown_point, "low": self.shown_low, "high": self.shown_high,
                            "clipped_to": None if rng is None else rng[:2],
                            "plateau_past_range": self.plateau_past_range,
                            "plateau_determined": self.plateau_determined,
                            "error": None if self.actual is None or self.declined is not None
                            else self.shown_point - self.actual}
            return out
        if self.law_fit is not None:
            law_fit = self.law_fit.to_dict()
        elif self.law_fit_error is not None:
            law_fit = {"law": None, "law_fit_error": self.law_fit_error}
        else:
            law_fit = None
        return {"metric": self.metric, "level": self.level, "end_of_run": self.forecaster_dict(),
                "final": self.shown_point, "final_low": self.shown_low, "final_high": self.shown_high,
                "band_clipped": self.band_clipped, "shown_range": rng, "horizon": self.horizon,
                "horizon_kind": self.horizon_kind, "asymptote": self.asymptote,
                "plateau_determined": self.plateau_determined, "now": self.now, "now_steps": _list(self.now_steps),
                "clock": self.clock, "forecast_caveat": self.caveat, "window_range": self.window_range,
                "law_fit": law_fit}

    def to_record(self) -> dict[str, Any]:
        """What the training callback keeps of each forecast: ``final``, ``final_low``, ``final_high`` (as
        shown), ``horizon``, ``horizon_kind``, ``asymptote``, ``plateau_determined``, ``now``, ``now_steps``,
        ``band_clipped``, the law fit's ``plateau``, ``plateau_low``, ``plateau_high``, ``law``, ``current``,
        ``reached``, ``t90``, ``reliable`` (``None`` without a law fit), and ``end_of_run`` (``horizon``,
        ``final``, ``final_low``, ``final_high``, ``clock``: the forecaster's own) when the horizon is the
        planned one."""
        fit = self.law_fit
        out = {"final": self.shown_point, "final_low": self.shown_low, "final_high": self.shown_high,
               "horizon": self.horizon, "horizon_kind": self.horizon_kind, "asymptote": self.asymptote,
               "plateau_determined": self.plateau_determined, "now": self.now, "now_steps": _list(self.now_steps),
               "band_clipped": self.band_clipped}
        out.update({k: None if fit is None else getattr(fit, k) for k in
                    ("plateau", "plateau_low", "plateau_high", "law", "current", "reached", "t90", "reliable")})
        if self.declined is None and self.horizon_kind == "planned":
            out["end_of_run"] = {"horizon": self.horizon, "final": self.point, "final_low": self.low,
                                 "final_high": self.high, "clock": self.clock}
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

