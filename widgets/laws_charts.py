"""Altair charts of reward-curve fits and forecasts (pure functions returning charts).

Used by the chapter "Fitting real reward curves", ``grpo-dynamics fit --plot``, the diagnostics
report and the log explorer. Each builder takes the result objects of :mod:`grpo_core.laws`
(:class:`~grpo_core.laws.FitComparison`, :class:`~grpo_core.laws.Forecast`) and draws them; no
fitting happens here.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from grpo_core import laws as _laws
from grpo_core.errors import ParameterError

from .style import GREY, GREYS, INK, OKABE_ITO, WIDTH, grid_values, require_columns, step_x

__all__ = [
    "LAW_COLORS",
    "law_color_scale",
    "law_family_chart",
    "fits_chart",
    "residuals_chart",
    "forecast_chart",
    "forecast_sweep_chart",
    "STATIC_FORECAST_PARAMS",
    "static_forecast_grid",
    "static_forecast_chart",
    "RUN_FORECAST_METHODS",
    "forecast_runs_chart",
]

#: One colour per law, shared by every chart (colour-blind safe, Okabe-Ito).
LAW_COLORS = {
    "three_phase": OKABE_ITO["blue"],
    "three_phase_onset": OKABE_ITO["sky"],
    "exponential": OKABE_ITO["orange"],
    "logistic": OKABE_ITO["green"],
}
#: How the information criteria are written (``"aicc".upper()`` read "AICC").
_CRITERION = {"aic": "AIC", "aicc": "AICc", "bic": "BIC"}


def law_color_scale(names) -> alt.Scale:
    """Colour scale mapping law names (in the given order) to :data:`LAW_COLORS`."""
    names = list(names)
    return alt.Scale(domain=names, range=[LAW_COLORS.get(n, OKABE_ITO["pink"]) for n in names])


def _curve_grid(t: np.ndarray, points: int = 300) -> np.ndarray:
    return np.union1d(np.linspace(0.0 if t[0] <= 0.05 * t[-1] else t[0], t[-1], points), t)


def law_family_chart(
    law: str,
    base: dict,
    vary: str,
    values,
    *,
    t_max: float = 300.0,
    width: int = WIDTH["wide"],
    height: int = 240,
) -> alt.Chart:
    """Curves of one law as one of its parameters varies (the others held at ``base``).

    Parameters
    ----------
    law : str
        A name of :data:`grpo_core.laws.LAWS`.
    base : dict of str to float
        Every parameter of the law.
    vary : str
        The parameter to vary.
    values : sequence of float
        Its values, one curve each.
    t_max : float, > 0
        Last step drawn (from 0).
    width, height : int
        Size in pixels.

    Returns
    -------
    altair.Chart
        One line per value, coloured by ``"<vary> = <value>"``.

    Raises
    ------
    ParameterError
        Unknown law, ``vary`` not a parameter of the law, a missing parameter in ``base``, or
        non-finite values.

    Examples
    --------
    >>> base = {"r0": 0, "r_inf": 1, "k": 0.03, "tau": 0}
    >>> chart = law_family_chart("three_phase", base, "tau", [0, 10, 40])
    >>> type(chart).__name__
    'Chart'
    """
    law_obj = _laws.get_law(law)
    if vary not in law_obj.param_names:
        raise ParameterError("vary", f"`vary` must be one of {law_obj.param_names}; got {vary!r}")
    t = np.linspace(0.0, float(t_max), 301)
    rows = []
    for v in values:
        params = dict(base, **{vary: v})
        rows.append(pd.DataFrame({"step": t, "R": law_obj(t, params), "curve": f"{vary} = {v:g}"}))
    data = pd.concat(rows, ignore_index=True)
    return (
        alt.Chart(data)
        .mark_line(strokeWidth=2)
        .encode(
            x=step_x(),
            y=alt.Y("R:Q", title="R(t)"),
            color=alt.Color("curve:N", sort=list(dict.fromkeys(data["curve"])), title=None,
                            scale=alt.Scale(scheme="viridis")),
        )
        .properties(width=width, height=height)
    )


def fits_chart(
    comparison: _laws.FitComparison,
    *,
    metric: str = "reward",
    width: int = WIDTH["column"],
    height: int = 300,
) -> alt.LayerChart:
    """The data with every law's fitted curve.

    Parameters
    ----------
    comparison : FitComparison
        From :func:`grpo_core.laws.fit_all`.
    metric : str
        Label of the y axis.
    width, height : int
        Size in pixels.

    Returns
    -------
    altair.LayerChart
        Grey points (the data) and one line per law, labelled ``law (R^2 = ...)``; the best law
        by the comparison's criterion is drawn thicker.

    Raises
    ------
    ParameterError
        If ``comparison`` is not a :class:`~grpo_core.laws.FitComparison`.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.laws import fit_all
    >>> t = np.arange(1, 101); y = 1 - np.exp(-t / 30) + np.random.default_rng(0).normal(0, 0.02, 100)
    >>> chart = fits_chart(fit_all(t, y))
    >>> type(chart).__name__
    'LayerChart'
    """
    if not isinstance(comparison, _laws.FitComparison):
        raise ParameterError("comparison", "`comparison` must be a FitComparison from grpo_core.laws.fit_all")
    any_fit = next(iter(comparison.results.values()))
    # the log's name is a title only: as a Vega field, "." or "[" would be read as nested access
    data = pd.DataFrame({"step": any_fit.t, "value": any_fit.y})
    grid = _curve_grid(any_fit.t)
    rows = []
    labels = []
    for name, res in comparison.results.items():
        label = f"{name} (R² = {res.r2:.3f})"
        labels.append(label)
        rows.append(
            pd.DataFrame(
                {"step": grid, "value": res.predict(grid), "law": label, "best": name == comparison.preferred}
            )
        )
    curves = pd.concat(rows, ignore_index=True)
    scale = alt.Scale(domain=labels, range=[LAW_COLORS.get(n, OKABE_ITO["pink"]) for n in comparison.results])
    points = (
        alt.Chart(data)
        .mark_circle(size=14, color=GREY, opacity=0.55)
        .encode(x=step_x(), y=alt.Y("value:Q", title=metric))
    )
    lines = (
        alt.Chart(curves)
        .mark_line()
        .encode(
            x="step:Q",
            y="value:Q",
            color=alt.Color(
                "law:N",
                scale=scale,
                title=[
                    "law",
                    f"(best by {_CRITERION.get(comparison.criterion, comparison.criterion)}: "
                    f"{comparison.best})" if comparison.preferred == comparison.best else
                    f"(read: {comparison.preferred}; {comparison.best} is best by "
                    f"{_CRITERION.get(comparison.criterion, comparison.criterion)} but its plateau is not fixed)",
                ],
            ),
            strokeWidth=alt.condition("datum.best", alt.value(3.2), alt.value(1.6)),
            tooltip=["law:N", alt.Tooltip("step:Q", format=".0f"), alt.Tooltip("value:Q", format=".3f", title=metric)],
        )
    )
    return alt.layer(points, lines).properties(width=width, height=height)


def residuals_chart(
    comparison: _laws.FitComparison,
    *,
    width: int = WIDTH["column"],
    height: int = 90,
    smooth: int | None = 15,
) -> alt.FacetChart:
    """Residuals ``y - fit`` of every law against the step, one row per law.

    Parameters
    ----------
    comparison : FitComparison
        From :func:`grpo_core.laws.fit_all`.
    width, height : int
        Size of each row in pixels.
    smooth : int or None
        Also draw a centred rolling mean of the residuals over this many points (structure left
        in the residuals shows where a law misses the curve's shape); ``None`` for none.

    Returns
    -------
    altair.FacetChart
        One row per law: residual points against the step, a dashed zero rule, the smoothed trend.

    Raises
    ------
    ParameterError
        If ``comparison`` is not a FitComparison or ``smooth`` < 1.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.laws import fit_all
    >>> t = np.arange(1, 101); y = 1 - np.exp(-t / 30) + np.random.default_rng(0).normal(0, 0.02, 100)
    >>> type(residuals_chart(fit_all(t, y))).__name__
    'FacetChart'
    """
    if not isinstance(comparison, _laws.FitComparison):
        raise ParameterError("comparison", "`comparison` must be a FitComparison from grpo_core.laws.fit_all")
    if smooth is not None and (not isinstance(smooth, int | np.integer) or smooth < 1):
        raise ParameterError("smooth", f"`smooth` must be an integer >= 1 or None; got {smooth!r}")
    rows = []
    for name, res in comparison.results.items():
        resid = res.residuals
        trend = (
            pd.Series(resid).rolling(int(smooth), center=True, min_periods=1).mean().to_numpy()
            if smooth
            else np.full(resid.size, np.nan)
        )
        rows.append(
            pd.DataFrame(
                {
                    "step": res.t,
                    "residual": resid,
                    "trend": trend,
                    "law": f"{name} (lag-1 r = {res.residual_autocorr:.2f})",
                    "name": name,
                }
            )
        )
    data = pd.concat(rows, ignore_index=True)
    names = list(comparison.results)
    color = alt.Color("name:N", scale=law_color_scale(names), legend=None)
    base = alt.Chart().encode(x=step_x())
    layers = [
        alt.Chart().mark_rule(color="black", strokeDash=[3, 3]).encode(y=alt.datum(0)),
        base.mark_circle(size=10, opacity=0.5).encode(y=alt.Y("residual:Q", title="residual"), color=color),
    ]
    if smooth:
        layers.append(base.mark_line(strokeWidth=2).encode(y="trend:Q", color=color))
    return (
        alt.layer(*layers, data=data)
        .properties(width=width, height=height)
        .facet(
            row=alt.Row(
                "law:N",
                title=None,
                sort=list(data["law"].unique()),
                header=alt.Header(
                    labelAngle=0, labelOrient="top", labelAnchor="start", labelFontWeight="bold"
                ),
            )
        )
        .resolve_scale(y="shared")
    )


def forecast_chart(
    fc: _laws.Forecast,
    *,
    metric: str = "reward",
    width: int = WIDTH["column"],
    height: int = 300,
) -> alt.LayerChart:
    """A plateau forecast: fit window shaded, forecast curve with its band, what actually happened.

    Parameters
    ----------
    fc : Forecast
        From :func:`grpo_core.laws.forecast`.
    metric : str
        Label of the y axis.
    width, height : int
        Size in pixels.

    Returns
    -------
    altair.LayerChart
        The shaded fit window; the data (dark inside the window, light after it); the band of the
        forecast curve and the curve; the forecast plateau as a dashed line with its band and a
        label; the mean of the last ``fc.tail`` actual points as a solid black segment over those
        steps, labelled.

    Raises
    ------
    ParameterError
        If ``fc`` is not a :class:`~grpo_core.laws.Forecast`.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.laws import forecast
    >>> t = np.arange(1, 201); y = 1 - np.exp(-t / 40) + np.random.default_rng(0).normal(0, 0.02, 200)
    >>> chart = forecast_chart(forecast(t, y, law="exponential", fraction=0.5, n_boot=0))
    >>> len(chart.layer)  # window, band, data, curve, plateau band/rule/label, actual rule/label
    9
    """
    if not isinstance(fc, _laws.Forecast):
        raise ParameterError("fc", "`fc` must be a Forecast from grpo_core.laws.forecast")
    color = LAW_COLORS.get(fc.law, OKABE_ITO["pink"])
    pts = pd.DataFrame(
        {
            "step": np.concatenate([fc.fit.t, fc.actual_t]),
            "value": np.concatenate([fc.fit.y, fc.actual_y]),  # the log's name: titles only
            "part": ["fit window"] * fc.fit.n + ["after the window"] * fc.actual_t.size,
        }
    )
    curve = pd.DataFrame({"step": fc.t, "forecast": fc.curve, "low": fc.curve_low, "high": fc.curve_high})
    t_end = float(fc.t[-1])
    window = alt.Chart(pd.DataFrame({"start": [float(fc.fit.t[0])], "end": [fc.t_fit_end]})).mark_rect(
        color=GREYS["pale"], opacity=0.45
    ).encode(x="start:Q", x2="end:Q")
    band = alt.Chart(curve).mark_area(color=color, opacity=0.22).encode(x="step:Q", y="low:Q", y2="high:Q")
    line = alt.Chart(curve).mark_line(color=color, strokeWidth=2.5).encode(
        x="step:Q", y=alt.Y("forecast:Q", title=metric)
    )
    points = (
        alt.Chart(pts)
        .mark_circle(size=16)
        .encode(
            x=step_x(),
            y=alt.Y("value:Q", title=metric),
            color=alt.Color(
                "part:N",
                scale=alt.Scale(domain=["fit window", "after the window"], range=[INK, GREYS["soft"]]),
                title="data",
            ),
        )
    )
    level = int(round(100 * fc.level))
    plateau = pd.DataFrame(
        {
            "start": [fc.t_fit_end],
            "end": [t_end],
            "plateau": [fc.plateau],
            "low": [fc.plateau_low],
            "high": [fc.plateau_high],
            "label": [
                f"forecast plateau {fc.plateau:.3g} ({level}% band {fc.plateau_low:.3g} to "
                f"{fc.plateau_high:.3g})"
            ],
        }
    )
    y_lo = float(np.min(np.concatenate([pts["value"].to_numpy(), fc.curve])))
    y_hi = float(np.max(np.concatenate([pts["value"].to_numpy(), fc.curve])))
    clip_lo, clip_hi = y_lo - 0.5 * (y_hi - y_lo), y_hi + 0.5 * (y_hi - y_lo)
    plateau["low_c"] = plateau["low"].clip(clip_lo, clip_hi)
    plateau["high_c"] = plateau["high"].clip(clip_lo, clip_hi)
    plateau["plateau_c"] = plateau["plateau"].clip(clip_lo, clip_hi)
    plateau_band = alt.Chart(plateau).mark_rect(color=color, opacity=0.10).encode(
        x="start:Q", x2="end:Q", y="low_c:Q", y2="high_c:Q"
    )
    plateau_rule = alt.Chart(plateau).mark_rule(color=color, strokeDash=[6, 4]).encode(
        x="start:Q", x2="end:Q", y="plateau_c:Q", tooltip=["label:N"]
    )
    plateau_text = alt.Chart(plateau).mark_text(align="right", dy=-7, color=color, fontSize=11).encode(
        x="end:Q", y="plateau_c:Q", text="label:N"
    )
    layers = [window, band, points, line, plateau_band, plateau_rule, plateau_text]
    if fc.actual_tail_mean is not None:
        tail_t = np.concatenate([fc.fit.t, fc.actual_t])[-fc.tail :]
        actual = pd.DataFrame(
            {
                "start": [float(tail_t[0])],
                "end": [float(tail_t[-1])],
                "actual": [fc.actual_tail_mean],
                "label": [f"actual mean of the last {fc.tail} steps: {fc.actual_tail_mean:.3g}"],
            }
        )
        layers.append(
            alt.Chart(actual).mark_rule(color="black", strokeWidth=3).encode(
                x="start:Q", x2="end:Q", y="actual:Q", tooltip=["label:N"]
            )
        )
        layers.append(
            alt.Chart(actual).mark_text(align="right", dy=12, color="black", fontSize=11).encode(
                x="end:Q", y="actual:Q", text="label:N"
            )
        )
    return (
        alt.layer(*layers)
        .properties(width=width, height=height)
        .encode()
        .resolve_scale(color="independent")
    )


def forecast_sweep_chart(
    sweep: pd.DataFrame, *, width: int = WIDTH["column"], height: int = 260
) -> alt.LayerChart:
    """Forecast plateau (with its band) against the fraction of the curve used for the fit.

    Parameters
    ----------
    sweep : pandas.DataFrame
        From :func:`grpo_core.laws.forecast_sweep` (columns ``fraction``, ``law``, ``plateau``,
        ``low``, ``high``, ``actual``).
    width, height : int
        Size in pixels.

    Returns
    -------
    altair.LayerChart
        One point and error bar per (fraction, law), offset by law, and the actual plateau as a
        black line. The axis spans at most three times the data's range around the actual value;
        a plateau beyond it is drawn at the edge as a triangle pointing its way (the tooltip gives
        its value), and bands are cut at the edge, where an open arrowhead (mark
        ``band_clipped_ends``, present only when a band is cut) points the way the band runs on.

    Raises
    ------
    ParameterError
        If a column is missing.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.laws import forecast_sweep
    >>> t = np.arange(1, 201); y = 1 - np.exp(-t / 40) + np.random.default_rng(0).normal(0, 0.02, 200)
    >>> sweep = forecast_sweep(t, y, fractions=(0.4, 0.6), laws=("exponential",), n_boot=0)
    >>> len(forecast_sweep_chart(sweep).layer)  # actual, bars, points; the cut band ends and their key
    5
    """
    require_columns(sweep, "sweep", ["fraction", "law", "plateau", "low", "high", "actual"],
                    source="grpo_core.laws.forecast_sweep")
    data = sweep.copy()
    actual = float(data["actual"].iloc[0])
    span = max(float(np.nanmax(np.abs(data["plateau"] - actual))), 1e-9)
    span = min(span, 3.0 * max(abs(actual), 1.0))
    lo, hi = actual - 1.5 * span, actual + 1.5 * span
    for c in ("plateau", "low", "high"):
        data[f"{c}_c"] = data[c].clip(lo, hi)
    names = list(dict.fromkeys(data["law"]))
    fractions = np.unique(data["fraction"])
    gap = float(np.min(np.diff(fractions))) if fractions.size > 1 else 0.1
    shift = {n: (i - (len(names) - 1) / 2) * gap * 0.6 / max(len(names), 1) for i, n in enumerate(names)}
    data["x"] = data["fraction"] + data["law"].map(shift)
    color = alt.Color("law:N", scale=law_color_scale(names), title="law")
    x = alt.X("x:Q", title="fraction of the steps used for the fit", axis=alt.Axis(format="%"))
    bars = alt.Chart(data).mark_rule(strokeWidth=2).encode(x=x, y="low_c:Q", y2="high_c:Q", color=color)
    # a plateau off the axis is drawn at the edge as a triangle pointing where it lies
    data["where"] = np.where(data["plateau"] > hi, "off the axis, above",
                             np.where(data["plateau"] < lo, "off the axis, below", "on the axis"))
    shapes = {
        "on the axis": "circle",
        "off the axis, above": "triangle-up",
        "off the axis, below": "triangle-down",
    }
    present = [k for k in shapes if (data["where"] == k).any()]
    dots = (
        alt.Chart(data)
        .mark_point(size=70, filled=True, opacity=1)
        .encode(
            x=x,
            # not niced: the window's ends are the frame's edges, where cut bands end
            y=alt.Y("plateau_c:Q", title="forecast plateau", scale=alt.Scale(domain=[lo, hi], nice=False)),
            color=color,
            shape=alt.Shape(
                "where:N",
                title="plateau",
                scale=alt.Scale(domain=present, range=[shapes[k] for k in present]),
                legend=alt.Legend(orient="bottom") if len(present) > 1 else None,
            ),
            tooltip=[
                "law:N",
                alt.Tooltip("fraction:Q", format=".0%"),
                alt.Tooltip("plateau:Q", format=".3f"),
                alt.Tooltip("low:Q", format=".3f"),
                alt.Tooltip("high:Q", format=".3f"),
            ],
        )
    )
    truth = alt.Chart(pd.DataFrame({"actual": [actual]})).mark_rule(color="black", strokeDash=[4, 3]).encode(
        y="actual:Q"
    )
    # a band cut at the axis's edge ends in an open arrowhead there, pointing the way it goes on
    # (a band [-66800, 66856] and one [-2.4, 7.5] were drawn alike, as bars from edge to edge)
    ends = pd.concat([
        data.loc[data["high"] > hi].assign(edge=hi, angle=0, side="band runs on above"),
        data.loc[data["low"] < lo].assign(edge=lo, angle=180, side="band runs on below"),
    ], ignore_index=True)
    ends = ends[["x", "law", "fraction", "low", "high", "edge", "angle", "side"]]
    clipped = (
        alt.Chart(ends)
        .mark_point(shape="triangle-up", size=90, filled=False, strokeWidth=2, opacity=1)
        .encode(
            x=x,
            y=alt.Y("edge:Q", scale=alt.Scale(domain=[lo, hi], nice=False)),
            angle=alt.Angle("angle:Q", scale=None),
            color=color,
            tooltip=["law:N", "side:N", alt.Tooltip("fraction:Q", format=".0%"),
                     alt.Tooltip("low:Q", format=".3g"), alt.Tooltip("high:Q", format=".3g")],
        )
        .properties(name="band_clipped_ends")
    )
    key = alt.Chart(pd.DataFrame({"text": ["open triangle: the band runs on past the axis"]})).mark_text(
        align="right", baseline="top", fontSize=11, color=INK).encode(
        x=alt.value(width), y=alt.value(height + 40), text="text:N").properties(name="band_clipped_key")
    layers = [truth, bars, dots] + ([clipped, key] if len(ends) else [])
    return alt.layer(*layers).properties(width=width, height=height)


#: Names of :func:`static_forecast_chart`'s params.
STATIC_FORECAST_PARAMS = ("fraction",)


def static_forecast_grid(log, *, metric: str = "reward",
                         fractions: Sequence[float] = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)) -> dict[str, pd.DataFrame]:
    """End-of-run forecasts from growing fit windows of one log, precomputed for a slider.

    Each fraction is one call of :func:`grpo_core.runs.forecast.forecast_end` (the forecast of ``fit``,
    ``diagnose``, the report and the callback): the mean ``metric`` over the last 20% of the log, the
    current level with its 90% band calibrated on 52 real runs, from the first ``fraction`` of the points.
    A fraction the forecast declines (outside 20% to 80% of the run, too few points, a flat window, a
    metric that is not a training reward) is left out.

    Parameters
    ----------
    log : RunLog
        From :func:`grpo_core.runs.logs.read_log`.
    metric : str
        The column to forecast (a training reward).
    fractions : sequence of float in (0, 1]
        1 sees the whole log and forecasts the end of the planned run
        (:func:`grpo_core.runs.forecast.forecast_end`; the run assumed half done when the log does
        not know its ``max_steps``); then ``actual`` is NaN.

    Returns
    -------
    dict
        ``points`` (``step``, ``reward``: the metric), ``curves`` (two rows per fraction spanning the
        steps the forecast is of: ``fraction``, ``step``, ``forecast``, ``low``, ``high``) and ``labels``
        (one row per fraction: ``fraction`` in percent, ``t_fit_end``, ``final``, ``low``, ``high``,
        ``now`` with ``now_start``, ``now_end`` (the current level and the steps behind it),
        ``actual``, ``covered``, ``text``).

    Raises
    ------
    ParameterError
        ``log`` not a RunLog; ``fractions`` empty or outside (0, 1].
    DataError
        If no fraction gives a forecast (the message gives each fraction's reason), or no ``metric``.
    """
    import warnings

    from grpo_core.errors import DataError
    from grpo_core.runs.forecast import forecast_end
    from grpo_core.runs.logs import RunLog
    from grpo_core.validation import check_real

    if not isinstance(log, RunLog):
        raise ParameterError("log", "`log` must be a RunLog from grpo_core.runs.logs.read_log; "
                                    f"got {type(log).__name__}")
    fractions = [check_real("fractions", f, low=0.0, high=1.0, low_inclusive=False) for f in fractions]
    if not fractions:
        raise ParameterError("fractions", "`fractions` must hold at least one fit fraction in (0, 1]")
    t, y = log.series(metric)
    curves, labels, why = [], [], []
    for f in fractions:
        key = int(round(f * 100))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fc = (forecast_end(log, metric=metric) if f >= 1.0 else
                      forecast_end(log, fit_fraction=f, metric=metric))
            except DataError as exc:
                why.append(f"{key}%: {exc}")
                continue
        if fc.declined is not None:
            why.append(f"{key}%: {fc.declined}")
            continue
        # the steps the forecast is of: what happened there, or the last 20% of the planned run
        t0, t1 = fc.actual_steps or (t[0] + 0.8 * (fc.horizon - t[0]), fc.horizon)
        actual = float("nan") if fc.actual is None else fc.actual
        curves.append(pd.DataFrame({"fraction": key, "step": [t0, t1], "forecast": fc.point,
                                    "low": fc.low, "high": fc.high}))
        labels.append({"fraction": key, "t_fit_end": fc.t_fit_end, "final": fc.point,
                       "low": fc.low, "high": fc.high, "now": fc.now,
                       "now_start": fc.now_steps[0], "now_end": fc.now_steps[1],
                       "actual": actual, "covered": fc.covered,
                       "text": f"seen: the first {key}%; end of run {fc.point:.3f}, {fc.level:.0%} band "
                               f"[{fc.low:.3f}, {fc.high:.3f}]: the current level, band calibrated on 52 real "
                               f"runs at {fc.fraction_seen:.0%} of the run"
                               + (f"; actual {actual:.3f}" if fc.actual is not None else
                                  f" (at step {fc.horizon:.0f}, {fc.horizon_kind})")})
    if not labels:
        raise DataError(f"no forecast of {metric!r} from {log.source}: " + "; ".join(why))
    return {"points": pd.DataFrame({"step": t.astype(float), "reward": y}),
            "curves": pd.concat(curves, ignore_index=True), "labels": pd.DataFrame(labels)}


def static_forecast_chart(grid: dict[str, pd.DataFrame], fraction: int = 40, *, metric: str = "reward",
                          width: int = WIDTH["wide"], height: int = 260) -> alt.LayerChart:
    """The end-of-run forecast for the fit window chosen with a slider on the page (no kernel).

    Parameters
    ----------
    grid : dict
        From :func:`static_forecast_grid`.
    fraction : int
        Initial slider position, in percent (one of the grid's).
    metric : str
        y-axis title.
    width, height : int

    Returns
    -------
    alt.LayerChart
        A param ``fraction`` (percent) bound to a range slider (unbound for a grid of one window); the
        data, the fit window's end (dashed rule), the current level over the steps behind it (dark
        bar), the forecast of the last 20% of the run (a line named ``forecast_curve`` over those
        steps, its band shaded, what happened there as a dashed black line) and a text mark named
        ``forecast_label``.

    Raises
    ------
    ParameterError
        If ``fraction`` is not in the grid.
    """
    fs = grid_values(grid, "fraction", fraction)
    step = int(np.min(np.diff(fs))) if len(fs) > 1 else 1
    # a grid of one window (the live explorer's) draws no slider
    bind = ({"bind": alt.binding_range(min=int(fs[0]), max=int(fs[-1]), step=step,
                                       name="seen: the first % of the steps ")} if len(fs) > 1 else {})
    param = alt.param(name="fraction", value=int(fraction), **bind)
    x = step_x()
    # One frame for every slider position (the data's range, with room for the label on top):
    # a wild forecast runs out of the frame and is flagged, instead of rescaling the axis.
    yv = grid["points"]["reward"].to_numpy(float)
    span = float(np.ptp(yv)) or 1.0
    y_lo, y_hi = float(np.min(yv)) - 0.1 * span, float(np.max(yv)) + 0.45 * span
    y = alt.Y("reward:Q", title=metric, scale=alt.Scale(domain=[y_lo, y_hi], nice=False))
    points = alt.Chart(grid["points"]).mark_circle(size=12, color=GREY, opacity=0.5).encode(x=x, y=y)
    sel = "datum.fraction == fraction"
    band = (
        alt.Chart(grid["curves"])
        .transform_filter(sel)
        .mark_area(opacity=0.25, color=OKABE_ITO["blue"], clip=True)
        .encode(x="step:Q", y="low:Q", y2="high:Q")
    )
    curve = (
        alt.Chart(grid["curves"])
        .transform_filter(sel)
        .mark_line(color=OKABE_ITO["blue"], strokeWidth=3, clip=True)
        .encode(x="step:Q", y="forecast:Q")
        .properties(name="forecast_curve")
    )
    labels = alt.Chart(grid["labels"]).transform_filter(sel)
    window = labels.mark_rule(strokeDash=[4, 3], color="#555").encode(x="t_fit_end:Q")
    now = labels.mark_rule(color=INK, strokeWidth=4).encode(x="now_start:Q", x2="now_end:Q", y="now:Q")
    tail = alt.Chart(grid["curves"]).transform_filter(sel).transform_aggregate(
        start="min(step)", end="max(step)", groupby=["fraction"]).transform_lookup(
        lookup="fraction", from_=alt.LookupData(grid["labels"], "fraction", ["actual"]))
    actual = (tail.transform_filter("isValid(datum.actual) && isFinite(datum.actual)")
              .mark_rule(color=INK, strokeDash=[6, 3], strokeWidth=2, clip=True)
              .encode(x="start:Q", x2="end:Q", y="actual:Q"))
    text = labels.mark_text(align="left", baseline="top", fontSize=13, dx=6, dy=6).encode(
        x=alt.value(0), y=alt.value(0), text="text:N").properties(name="forecast_label")
    key = alt.Chart(pd.DataFrame({"text": ["dark bar: now · blue: forecast of the last 20% and its "
                                           "band · dashed: what happened"]})).mark_text(
        align="left", baseline="top", fontSize=11, color=INK, dx=6, dy=24).encode(
        x=alt.value(0), y=alt.value(0), text="text:N")
    off = (
        labels.transform_filter(f"datum.final > {y_hi!r} || datum.final < {y_lo!r}")
        .transform_calculate(
            note=f"datum.final > {y_hi!r} ? '▲ forecast above the frame' : '▼ forecast below the frame'",
        )
        .mark_text(align="right", baseline="bottom", fontSize=12, color=OKABE_ITO["blue"], dx=-6, dy=-6)
        .encode(x=alt.value(width), y=alt.value(height), text="note:N")
        .properties(name="forecast_off_axis")
    )
    return alt.layer(points, band, curve, actual, window, now, text, key, off).add_params(param).properties(
        width=width, height=height, usermeta={"embedOptions": {"renderer": "svg", "actions": False}})


#: The methods :func:`forecast_runs_chart` draws by default, in legend order (the benchmark's names).
RUN_FORECAST_METHODS = ("plateau", "hold", "exponential", "logistic", "domhan:janoschek", "domhan_mean")
_RUN_METHOD_COLORS = {"plateau": OKABE_ITO["blue"], "hold": INK, "exponential": OKABE_ITO["orange"],
                      "logistic": OKABE_ITO["green"], "domhan:janoschek": OKABE_ITO["pink"],
                      "domhan_mean": OKABE_ITO["vermillion"]}


def forecast_runs_chart(records, *, methods: Sequence[str] = RUN_FORECAST_METHODS, clip: float = 2.0,
                        width: int = 160, row_height: int = 15) -> alt.FacetChart:
    """Every run's forecast of its end against what happened, one panel per cut, methods side by side.

    Parameters
    ----------
    records : pandas.DataFrame or list of dict
        Per-run forecasts, the ``method == "record"`` rows of ``bench/results/forecast*.json``
        (:func:`bench.bench_forecast.run_records`): columns ``run``, ``cut``, ``of`` (the method),
        ``truth``, ``spread`` (> 0), ``final``, ``low``, ``high`` (NaN without a band), ``declined``.
    methods : sequence of str
        Methods to draw (values of ``of``), in legend order; ``"plateau"`` (ours) is drawn large
        with its 90% band.
    clip : float, > 0
        The x axis runs over ``[-clip, clip]`` run spreads; a forecast beyond it is drawn at the edge
        as a triangle pointing its way (the tooltip gives the value).
    width, row_height : int
        Panel width and pixels per run. The defaults keep three panels, the run labels (cut to
        about 24 characters; the tooltip has the full name) and the legends within 720 px, a book
        page's text column, so the chart is drawn at its natural size with 10 px text or larger.

    Returns
    -------
    alt.FacetChart
        Columns: the cuts. Rows of each panel: the runs. x: the signed error
        ``(final - truth) / spread`` (0, the black rule, is what happened; the grey strip is
        within 0.1). Declined forecasts are not drawn.

    Raises
    ------
    ParameterError
        ``records`` lacks a column, ``methods`` names none present, or ``clip`` is not positive.
    """
    frame = pd.DataFrame(records) if not isinstance(records, pd.DataFrame) else records
    require_columns(frame, "records", ["run", "cut", "of", "truth", "spread", "final", "low", "high", "declined"],
                    source="bench.bench_forecast.run_records")
    if not (np.isfinite(clip) and clip > 0):
        raise ParameterError("clip", f"`clip` must be a positive number of spreads; got {clip!r}")
    present = [m for m in methods if (frame["of"] == m).any()]
    if not present:
        raise ParameterError("methods", f"`methods` names none of the records' methods {sorted(frame['of'].unique())}")
    d = frame[frame["of"].isin(present) & frame["declined"].isna()].copy()
    d = d[np.isfinite(d["final"].astype(float))]
    sp = d["spread"].astype(float)
    d["error"] = (d["final"] - d["truth"]) / sp
    d["band_lo"] = ((d["low"] - d["truth"]) / sp).clip(-clip, clip)
    d["band_hi"] = ((d["high"] - d["truth"]) / sp).clip(-clip, clip)
    d["x"] = d["error"].clip(-clip, clip)
    d["where"] = np.where(d["error"] > clip, "beyond, above",
                          np.where(d["error"] < -clip, "beyond, below", "on the axis"))
    d["method"] = d["of"]
    d["cut_label"] = (100 * d["cut"].astype(float)).round().astype(int).astype(str) + "% seen"
    runs = sorted(d["run"].unique())
    x = alt.X("x:Q", title="error / run spread", scale=alt.Scale(domain=[-clip, clip], nice=False))
    y = alt.Y("run:N", sort=runs, title=None, axis=alt.Axis(labelLimit=130, labelFontSize=10))
    color = alt.Color("method:N", title="method", scale=alt.Scale(domain=present,
                      range=[_RUN_METHOD_COLORS.get(m, GREY) for m in present]),
                      legend=alt.Legend(orient="top", columns=3, labelFontSize=11, titleFontSize=11))
    shapes = {"on the axis": "circle", "beyond, above": "triangle-right", "beyond, below": "triangle-left"}
    near = alt.Chart().mark_rect(color=GREYS["light"], opacity=0.5).encode(
        x=alt.datum(-0.1), x2=alt.datum(0.1))
    zero = alt.Chart().mark_rule(color="black").encode(x=alt.datum(0))
    ours = alt.datum.method == "plateau"
    band = alt.Chart().transform_filter(ours).transform_filter("isFinite(datum.band_lo)").mark_rule(
        color=OKABE_ITO["blue"], strokeWidth=2, opacity=0.5).encode(x="band_lo:Q", x2="band_hi:Q", y=y)
    tip = ["run:N", "method:N", alt.Tooltip("cut:Q", format=".0%"), alt.Tooltip("error:Q", format="+.2f"),
           alt.Tooltip("final:Q", format=".4g"), alt.Tooltip("truth:Q", format=".4g")]
    shape = alt.Shape("where:N", title="forecast", scale=alt.Scale(domain=list(shapes), range=list(shapes.values())),
                      legend=alt.Legend(orient="top", columns=1, labelFontSize=11, titleFontSize=11))
    others = alt.Chart().transform_filter(~ours).mark_point(size=35, filled=True, opacity=0.75).encode(
        x=x, y=y, color=color, shape=shape, tooltip=tip)
    main = alt.Chart().transform_filter(ours).mark_point(size=110, filled=True, opacity=1).encode(
        x=x, y=y, color=color, shape=shape, tooltip=tip)
    layered = alt.layer(near, zero, band, others, main, data=d).properties(width=width, height=row_height * len(runs))
    cuts = sorted(d["cut_label"].unique(), key=lambda s: int(s.split("%")[0]))
    return layered.facet(column=alt.Column("cut_label:N", sort=cuts, title=None,
                                           header=alt.Header(labelFontSize=11)), spacing=10).properties(
        usermeta={"embedOptions": {"renderer": "svg", "actions": False}})
