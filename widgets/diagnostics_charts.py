"""Altair charts of a diagnosed training log (pure functions returning charts).

Used by the chapter "Reading a training log", the ``grpo-dynamics diagnose --report`` page and the
log explorer. Every number drawn comes from :mod:`grpo_core.runs.diagnostics` (the forecast, the
zero-spread series and its binary expectation, the findings' onsets); the builders only draw. Long
logs are thinned to at most ``max_points`` points per series (bin means) so that pages stay small.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.errors import DataError, ParameterError
from grpo_core.grpo import expected_zero_spread_fraction
from grpo_core.runs import diagnostics as _diag
from grpo_core.runs.diagnostics.series import _bin as _thin  # the checks' binning: the chart shows what they read
from grpo_core.runs.logs import RunLog

from .laws_charts import LAW_COLORS
from .style import GREYS, INK, OKABE_ITO, WIDTH, require_columns, step_x

__all__ = [
    "SEVERITY_COLORS",
    "reward_chart",
    "zero_spread_chart",
    "metric_chart",
    "diagnosis_charts",
    "diagnosis_dashboard",
    "zero_spread_expectation_chart",
    "instability_sweep_chart",
]

#: Colours of the severities (Okabe-Ito): info blue, warning orange, critical vermillion.
SEVERITY_COLORS = {
    "info": OKABE_ITO["blue"],
    "warning": OKABE_ITO["orange"],
    "critical": OKABE_ITO["vermillion"],
}
_DATA = "#9a9a9a"  # the raw points, lighter than GREY under the smoothed INK line
_EVAL = OKABE_ITO["pink"]
#: Colours of several metrics on one panel (Okabe-Ito, without the severity colours).
_SERIES_COLORS = [
    INK,
    OKABE_ITO["green"],
    OKABE_ITO["pink"],
    OKABE_ITO["sky"],
    OKABE_ITO["yellow"],
    GREYS["mid"],
]


def _check_log(log) -> RunLog:
    if not isinstance(log, RunLog):
        raise ParameterError("log", f"`log` must be a grpo_core.runs.logs.RunLog; got {type(log).__name__}")
    return log


def _series(log: RunLog, metric: str, max_points: int, split: str = "train") -> pd.DataFrame:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, v = log.series(metric, split=split)
    s, v = _thin(s.astype(float), v, max_points)
    return pd.DataFrame({"step": s, "value": v, "series": metric})


def _onset_rules(diagnosis, height_domain=None) -> list[alt.Chart]:
    """Vertical dashed rules at the onsets of the diagnosis' findings, coloured by severity."""
    if diagnosis is None:
        return []
    rows = [{"step": f.onset, "finding": f"{f.mode.replace('_', ' ')} ({f.severity})",
             "severity": f.severity} for f in diagnosis.findings if f.onset is not None]
    if not rows:
        return []
    df = pd.DataFrame(rows)
    present = [s for s in SEVERITY_COLORS if s in set(df["severity"])]
    return [
        alt.Chart(df)
        .mark_rule(strokeDash=[6, 4], strokeWidth=1.5)
        .encode(
            x="step:Q",
            color=alt.Color(
                "severity:N",
                scale=alt.Scale(domain=present, range=[SEVERITY_COLORS[s] for s in present]),
                legend=alt.Legend(title="onset of"),
            ),
            tooltip=["finding:N", "step:Q"],
        )
    ]


def reward_chart(log: RunLog, diagnosis=None, *, metric: str = "reward", eval_metric: str | None = None,
                 width: int = WIDTH["column"], height: int = 260, max_points: int = 1500) -> alt.LayerChart:
    """The reward per step with its smoothed curve, the fitted law, the forecast plateau and band.

    Parameters
    ----------
    log : RunLog
    diagnosis : Diagnosis, optional
        From :func:`grpo_core.runs.diagnostics.diagnose`; adds the smoothed curve, the fitted law with
        its band, the plateau (dashed) with its band (shaded), and the findings' onsets. A forecast
        marked unreliable (an unstable run) is drawn as the smoothed curve only.
    metric : str
        Training column to draw (``"reward"``).
    eval_metric : str, optional
        Eval column to overlay (default: the eval ``reward`` if the log has one).
    width, height : int
        Size in pixels.
    max_points : int
        Most points drawn per series (longer logs are bin-averaged).

    Returns
    -------
    altair.LayerChart
        Raw reward (grey), smoothed curve, fitted law with its band, eval points, finding onsets.

    Raises
    ------
    ParameterError
        ``log`` is not a RunLog.
    DataError
        The log has no such column.

    Examples
    --------
    >>> from grpo_core.runs.diagnostics import diagnose
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> log = synthetic_log("healthy", n_steps=120)
    >>> chart = reward_chart(log, diagnose(log, n_boot=0))
    >>> len(chart.layer) >= 4
    True
    """
    _check_log(log)
    raw = _series(log, metric, max_points)
    x = step_x()
    y_title = metric
    layers = [
        alt.Chart(raw).mark_line(strokeWidth=0.6, opacity=0.5, color=_DATA).encode(
            x=x, y=alt.Y("value:Q", title=y_title)),
        alt.Chart(raw).mark_circle(size=10, opacity=0.5, color=_DATA).encode(
            x=x, y="value:Q", tooltip=["step:Q", alt.Tooltip("value:Q", format=".4g")]),
    ]
    fc = diagnosis.forecast if diagnosis is not None else None
    if fc is not None and fc.get("metric", "reward") == metric and fc.get("law") is not None:
        sm_t, sm = _thin(np.asarray(fc["smoothed_t"], float), np.asarray(fc["smoothed"], float), max_points)
        smooth = pd.DataFrame({"step": sm_t, "value": sm, "curve": f"rolling mean ({fc['window']} points)"})
        if fc.get("reliable", True):  # the law that describes the curve (its own band is not the forecast's)
            ft, fv = np.asarray(fc["t"], float), np.asarray(fc["fitted"], float)
            keep = np.unique(np.linspace(0, ft.size - 1, min(ft.size, max_points)).astype(int))
            fit = pd.DataFrame({"step": ft[keep], "value": fv[keep],
                                "law": f"{fc['law']} law (R² {fc['r2_smoothed']:.2f} on the smoothed curve)"})
            color = LAW_COLORS.get(fc["law"], OKABE_ITO["blue"])
            layers.append(alt.Chart(fit).mark_line(color=color, strokeWidth=2.5).encode(
                x=x, y="value:Q", tooltip=["law:N", alt.Tooltip("value:Q", format=".4g")]))
        layers.append(alt.Chart(smooth).mark_line(color=INK, strokeWidth=1.5).encode(
            x=x, y="value:Q", tooltip=["curve:N", "step:Q", alt.Tooltip("value:Q", format=".4g")]))
    if fc is not None and fc.get("metric", "reward") == metric:  # on top: the forecast and its "now"
        layers += _forecast_layers(fc, x)
    if eval_metric is None and len(log.eval) and log.has("reward", "eval") and metric == "reward":
        eval_metric = "reward"
    if eval_metric is not None:
        ev = _series(log, eval_metric, max_points, split="eval")
        layers.append(
            alt.Chart(ev)
            .mark_line(point=alt.OverlayMarkDef(color=_EVAL), color=_EVAL, strokeDash=[2, 2])
            .encode(
                x=x,
                y="value:Q",
                tooltip=["step:Q", alt.Tooltip("value:Q", format=".4g", title=f"eval {eval_metric}")],
            )
        )
    layers += _onset_rules(diagnosis)
    return alt.layer(*layers).properties(width=width, height=height)


def _forecast_layers(fc: dict, x) -> list:
    """The forecast of :func:`~grpo_core.runs.diagnostics.diagnose` (the benchmarked forecaster): its
    band over the steps whose mean it forecasts (the last 20% up to the horizon), a rule at the
    forecast, and the current level over the steps it averages. Nothing when it has no forecast."""
    if "final" not in fc:
        return []
    h = float(fc["horizon"])
    color = OKABE_ITO["vermillion"]
    box = pd.DataFrame({"step": [0.8 * h, h], "low": fc["final_low"], "high": fc["final_high"],
                        "forecast": fc["final"]})
    a, b = fc["now_steps"]
    now = pd.DataFrame({"step": [a, b], "now": fc["now"]})
    return [
        alt.Chart(box).mark_area(opacity=0.18, color=color).encode(x=x, y="low:Q", y2="high:Q"),
        alt.Chart(box).mark_line(color=color, strokeWidth=2.5).encode(
            x=x, y="forecast:Q",
            tooltip=[alt.Tooltip("forecast:Q", format=".4g", title="forecast (mean of these steps)"),
                     alt.Tooltip("low:Q", format=".4g"), alt.Tooltip("high:Q", format=".4g")]),
        alt.Chart(now).mark_line(color=color, strokeWidth=2.5, strokeDash=[2, 2]).encode(
            x=x, y="now:Q", tooltip=[alt.Tooltip("now:Q", format=".4g", title="now (current level)"), "step:Q"]),
    ]


def zero_spread_chart(
    log: RunLog,
    diagnosis=None,
    *,
    group_size: int | None = None,
    binary_reward: bool | None = None,
    num_prompts: int | None = None,
    width: int = WIDTH["column"],
    height: int = 200,
    max_points: int = 1500,
) -> alt.LayerChart:
    """Fraction of groups with zero reward spread per step, smoothed, against ``p^G + (1 - p)^G``.

    Draws :func:`grpo_core.runs.diagnostics.zero_spread_series`: the observed fraction (points), its
    rolling mean (line), the binary-reward expectation at the logged accuracy (dashed, when
    ``group_size`` is given and the reward can be 0/1), the warning and critical levels (faint
    rules), and the advantage-degeneration finding's stretch (shaded) if there is one.

    Parameters
    ----------
    log : RunLog
    diagnosis : Diagnosis, optional
    group_size, binary_reward, num_prompts
        As :func:`grpo_core.runs.diagnostics.zero_spread_series`.
    width, height, max_points : int

    Returns
    -------
    altair.LayerChart
        The observed fraction (points, smoothed line), the expected fraction, flagged spans shaded.

    Raises
    ------
    DataError
        The log has neither ``frac_reward_zero_std`` nor ``reward_std``.

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> chart = zero_spread_chart(synthetic_log("advantage_degeneration", n_steps=100), group_size=2)
    >>> isinstance(chart, alt.LayerChart)
    True
    """
    _check_log(log)
    table = _diag.zero_spread_series(log, group_size=group_size, binary_reward=binary_reward,
                                     num_prompts=num_prompts)
    label = "observed" + (" (lower bound: reward_std = 0)" if table.attrs["lower_bound"] else
                          " (reward_std = 0)" if table.attrs["source"] != "frac_reward_zero_std" else "")
    s, obs = _thin(table["step"].to_numpy(float), table["observed"].to_numpy(), max_points)
    _, sm = _thin(table["step"].to_numpy(float), table["smoothed"].to_numpy(), max_points)
    _, ex = _thin(table["step"].to_numpy(float), table["expected_smoothed"].to_numpy(), max_points)
    x = step_x()
    y = alt.Y("value:Q", title="zero-spread fraction", scale=alt.Scale(domain=[0, 1]))
    lines = [
        pd.DataFrame({"step": s, "value": sm, "series": f"rolling mean ({table.attrs['window']} steps)"})
    ]
    if np.isfinite(ex).any():
        lines.append(
            pd.DataFrame(
                {
                    "step": s,
                    "value": ex,
                    "series": f"0/1-reward expectation p^G + (1-p)^G, G = {group_size} (rolling mean)",
                }
            )
        )
    line_df = pd.concat(lines, ignore_index=True)
    domain = list(dict.fromkeys(line_df["series"]))
    color = alt.Color(
        "series:N",
        scale=alt.Scale(domain=domain, range=[INK, OKABE_ITO["blue"]][: len(domain)]),
        legend=alt.Legend(title=None, orient="top", labelLimit=0),
    )
    th = _diag.DEFAULT_THRESHOLDS
    levels = pd.DataFrame({"value": [th.zero_spread_warning, th.zero_spread_critical],
                           "level": ["warning level", "critical level"]})
    layers = []
    f = diagnosis.find("advantage_degeneration") if diagnosis is not None else None
    if f is not None:
        span = pd.DataFrame({"start": [f.steps[0]], "end": [f.steps[1]], "severity": [f.severity]})
        layers.append(alt.Chart(span).mark_rect(opacity=0.12, color=SEVERITY_COLORS[f.severity]).encode(
            x="start:Q", x2="end:Q"))
    layers += [
        alt.Chart(pd.DataFrame({"step": s, "value": obs}))
        .mark_circle(size=10, opacity=0.4, color=_DATA)
        .encode(x=x, y=y, tooltip=["step:Q", alt.Tooltip("value:Q", format=".3f", title=label)]),
        alt.Chart(levels).mark_rule(opacity=0.35, strokeDash=[2, 3]).encode(y="value:Q", tooltip=["level:N"]),
        alt.Chart(line_df)
        .mark_line(strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=alt.StrokeDash(
                "series:N", scale=alt.Scale(domain=domain, range=[[1, 0], [6, 3]][: len(domain)]), legend=None
            ),
        ),
    ]
    # a title above the legend ties the legend to this panel (stacked under another panel, a bare
    # legend at the top reads as the caption of the panel above)
    return alt.layer(*layers).properties(
        width=width,
        height=height,
        title=alt.TitleParams(
            "groups with zero reward spread", anchor="start", fontSize=12, fontWeight="normal"
        ),
    )


# Why a logged metric can sit at one value on every step (said under the panel, not left to guess).
_NOT_CLIPPED = ("no token's importance ratio left the clip range (it is exactly 1 when each generation "
                "batch is used for one optimizer step)")
_CONSTANT_WHY = {
    "kl": "the KL term was not computed (TRL skips it when beta = 0)",
    "ppo_kl": "the KL term was not computed",
    "entropy": "the entropy was not computed",
    **dict.fromkeys(("clip_ratio_region", "clip_ratio_low", "clip_ratio_high"), _NOT_CLIPPED),
}


def _constant_note(df: pd.DataFrame) -> list[str] | None:
    """Title lines for a panel whose every series holds one value on every logged step, else None."""
    notes = []
    for name, grp in df.groupby("series", sort=False):
        v = grp["value"].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if v.size < 2 or v.min() != v.max():
            return None
        notes.append((name, v[0], v.size))
    names = ", ".join(n for n, _, _ in notes)
    value, count = notes[0][1], max(c for _, _, c in notes)
    same = all(val == value for _, val, _ in notes)
    head = (f"{names}: {value:g} on every logged step ({count} points)" if same else
            f"{names}: each constant on every logged step")
    why = _CONSTANT_WHY.get(notes[0][0]) if same and value == 0 else None
    return [head + (":" if why else ""), why] if why else [head]


def metric_chart(
    log: RunLog,
    metrics,
    diagnosis=None,
    *,
    title: str | None = None,
    log_scale: bool | None = None,
    width: int = WIDTH["column"],
    height: int = 180,
    max_points: int = 1500,
) -> alt.LayerChart:
    """One or more training metrics per step (entropy, KL, gradient norm ...), with findings' onsets.

    Parameters
    ----------
    log : RunLog
    metrics : str or list of str
        Columns to draw (missing ones are skipped; at least one must exist).
    diagnosis : Diagnosis, optional
        Adds the onsets of its findings as dashed rules.
    title : str, optional
        y-axis title (default: the metric names).
    log_scale : bool, optional
        Logarithmic y axis; by default when every value is positive and they span more than two
        decades (growing KL and gradient norms).
    width, height, max_points : int

    Returns
    -------
    altair.LayerChart
        One line per metric present (log axis when they span decades), onset rules of findings.

    Raises
    ------
    DataError
        None of ``metrics`` is in the log.

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> chart = metric_chart(synthetic_log("dynamic_instability", n_steps=100), ["grad_norm"])
    >>> chart.to_dict()["layer"][0]["encoding"]["y"]["scale"]["type"]
    'log'
    """
    _check_log(log)
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    present = [m for m in names if log.has(m)]
    if not present:
        raise DataError(f"none of {names} is in {log.source}")
    df = pd.concat([_series(log, m, max_points) for m in present], ignore_index=True)
    if log_scale is None:
        v = df["value"].to_numpy()
        log_scale = bool(np.all(v > 0) and v.max() / v.min() > 100)
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=False)
    y = alt.Y("value:Q", title=title or ", ".join(present), scale=scale)
    enc = dict(x=step_x(), y=y,
               tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=".4g")])
    if len(present) > 1:
        # none of the severity colours of the onset rules: a series must not read as an onset
        enc["color"] = alt.Color("series:N", legend=alt.Legend(title=None, orient="top"),
                                 scale=alt.Scale(domain=present, range=_SERIES_COLORS[: len(present)]))
        line = alt.Chart(df).mark_line(strokeWidth=1.5).encode(**enc)
    else:
        line = alt.Chart(df).mark_line(strokeWidth=1.5, color=INK).encode(**enc)
    chart = alt.layer(line, *_onset_rules(diagnosis)).properties(width=width, height=height)
    note = _constant_note(df)
    if note:
        chart = chart.properties(title=alt.TitleParams(note, fontSize=11, fontWeight="normal",
                                                       anchor="start", color=INK))
    # the onset rules fix their colour domain to the severities: shared with the series' colours,
    # every series would fall outside it and draw without a stroke
    return chart.resolve_scale(color="independent") if len(present) > 1 else chart


def diagnosis_charts(log: RunLog, diagnosis=None, *, group_size: int | None = None,
                     binary_reward: bool | None = None, num_prompts: int | None = None,
                     width: int = WIDTH["column"], max_points: int = 1500) -> dict[str, alt.LayerChart]:
    """Every panel the log allows, by name: ``reward``, ``zero_spread``, ``entropy``, ``kl``,
    ``grad_norm``, ``clip`` (those whose columns exist), in that order.

    Parameters
    ----------
    log : RunLog
    diagnosis : Diagnosis, optional
    group_size, binary_reward, num_prompts
        For the zero-spread panel's expectation.
    width, max_points : int

    Returns
    -------
    dict of str to altair.LayerChart
        Panel name to chart; a panel whose columns the log lacks is left out.

    Raises
    ------
    ParameterError
        ``log`` is not a RunLog.

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> sorted(diagnosis_charts(synthetic_log("healthy", n_steps=80)))
    ['entropy', 'grad_norm', 'kl', 'reward', 'zero_spread']
    """
    _check_log(log)
    out: dict[str, alt.LayerChart] = {}
    if log.has("reward"):
        out["reward"] = reward_chart(log, diagnosis, width=width, max_points=max_points)
    if log.has("frac_reward_zero_std") or log.has("reward_std"):
        out["zero_spread"] = zero_spread_chart(
            log,
            diagnosis,
            group_size=group_size,
            binary_reward=binary_reward,
            num_prompts=num_prompts,
            width=width,
            max_points=max_points,
        )
    panels = [
        ("entropy", ["entropy"], "entropy (nats per token)"),
        ("kl", ["kl", "ppo_kl"], "KL (nats per token)"),
        ("grad_norm", ["grad_norm"], "gradient norm"),
        ("clip", ["clip_ratio_region", "clip_ratio_low", "clip_ratio_high"], "clipped fraction of tokens"),
    ]
    for name, metrics, title in panels:
        if any(log.has(m) for m in metrics):
            out[name] = metric_chart(log, metrics, diagnosis, title=title, width=width, max_points=max_points)
    return out


def diagnosis_dashboard(log: RunLog, diagnosis=None, **kwargs) -> alt.VConcatChart:
    """:func:`diagnosis_charts` stacked vertically with independent colour scales.

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> isinstance(diagnosis_dashboard(synthetic_log("healthy", n_steps=80)), alt.VConcatChart)
    True
    """
    charts = list(diagnosis_charts(log, diagnosis, **kwargs).values())
    return alt.vconcat(*charts).resolve_scale(color="independent")


def zero_spread_expectation_chart(group_sizes=(2, 4, 8, 16), *, mark_p: float | None = None,
                                  width: int = 520, height: int = 260) -> alt.LayerChart:
    """Expected fraction of zero-spread groups ``p^G + (1 - p)^G`` against the accuracy ``p``.

    One line per group size (:func:`grpo_core.grpo.expected_zero_spread_fraction`), the
    warning and critical levels of advantage degeneration as faint rules, and, with ``mark_p``,
    the values at that accuracy as labelled points.

    Parameters
    ----------
    group_sizes : sequence of int >= 1
    mark_p : float in [0, 1], optional
    width, height : int

    Returns
    -------
    altair.LayerChart
        One curve per group size G over ``p`` in [0, 1]; the values at ``mark_p`` as labelled points.

    Raises
    ------
    ParameterError
        Bad group sizes or ``mark_p``.

    Examples
    --------
    >>> chart = zero_spread_expectation_chart(mark_p=0.18)
    >>> len(chart.layer)
    4
    """
    p = np.linspace(0.0, 1.0, 201)
    gs = [int(g) for g in group_sizes]
    df = pd.concat(
        [
            pd.DataFrame({"p": p, "fraction": expected_zero_spread_fraction(p, g), "G": f"G = {g}"})
            for g in gs
        ],
        ignore_index=True,
    )
    order = [f"G = {g}" for g in gs]
    color = alt.Color("G:N", sort=order, legend=alt.Legend(title="group size"))
    th = _diag.DEFAULT_THRESHOLDS
    levels = pd.DataFrame({"fraction": [th.zero_spread_warning, th.zero_spread_critical],
                           "level": ["warning level", "critical level"]})
    layers = [
        alt.Chart(levels)
        .mark_rule(opacity=0.4, strokeDash=[2, 3])
        .encode(y="fraction:Q", tooltip=["level:N"]),
        alt.Chart(df)
        .mark_line(strokeWidth=2)
        .encode(
            x=alt.X("p:Q", title="accuracy p (0/1 reward)"),
            y=alt.Y("fraction:Q", title="expected zero-spread fraction", scale=alt.Scale(domain=[0, 1])),
            color=color,
            tooltip=["G:N", alt.Tooltip("p:Q", format=".2f"), alt.Tooltip("fraction:Q", format=".3f")],
        ),
    ]
    if mark_p is not None:
        from grpo_core.validation import check_real

        mp = check_real("mark_p", mark_p, low=0.0, high=1.0)
        pts = pd.DataFrame({"p": mp, "fraction": expected_zero_spread_fraction(mp, np.array(gs)),
                            "G": order})
        pts["label"] = pts["fraction"].map(lambda v: f"{v:.3f}")
        layers += [
            alt.Chart(pts)
            .mark_point(filled=True, size=60)
            .encode(x="p:Q", y="fraction:Q", color=color, tooltip=["G:N", "label:N"]),
            alt.Chart(pts)
            .mark_text(align="left", dx=7, dy=-6)
            .encode(x="p:Q", y="fraction:Q", text="label:N", color=color),
        ]
    return alt.layer(*layers).properties(width=width, height=height)


def instability_sweep_chart(table: pd.DataFrame, *, threshold: float | None = None, width: int = 520,
                            height: int = 220) -> alt.LayerChart:
    """Share of runs flagged unstable against the refresh interval, with the predicted threshold.

    Parameters
    ----------
    table : DataFrame
        From :func:`grpo_core.runs.bandit_logs.instability_sweep` (``k_ref``, ``flagged``, ``p_range``).
    threshold : float, optional
        Predicted critical ``k_ref`` (a vertical dashed rule).
    width, height : int

    Returns
    -------
    altair.LayerChart
        Bars: fraction of seeds with a warning or critical dynamic-instability finding; line: the
        mean range of the exact expected reward over the second half of the runs (right axis).

    Raises
    ------
    ParameterError
        ``table`` lacks the columns.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"k_ref": [2, 2, 12, 12], "flagged": [False, False, True, True],
    ...                   "p_range": [.03, .03, .3, .3]})
    >>> len(instability_sweep_chart(t, threshold=10.2).layer)
    2
    """
    require_columns(table, "table", ["k_ref", "flagged", "p_range"])
    agg = table.groupby("k_ref").agg(flagged=("flagged", "mean"), p_range=("p_range", "mean"),
                                     runs=("flagged", "size")).reset_index()
    x = alt.X("k_ref:Q", title="refresh interval K_ref (steps)")
    bars = alt.Chart(agg).mark_bar(color=SEVERITY_COLORS["warning"], opacity=0.8, size=14).encode(
        x=x, y=alt.Y("flagged:Q", title="share of runs flagged unstable", scale=alt.Scale(domain=[0, 1])),
        tooltip=["k_ref:Q", alt.Tooltip("flagged:Q", format=".0%"), "runs:Q"])
    line = alt.Chart(agg).mark_line(point=alt.OverlayMarkDef(color=INK), color=INK).encode(
        x=x, y=alt.Y("p_range:Q", title="range of p over the second half", scale=alt.Scale(domain=[0, 1])),
        tooltip=["k_ref:Q", alt.Tooltip("p_range:Q", format=".3f")])
    left = [bars]
    if threshold is not None:
        rule = pd.DataFrame({"k_ref": [float(threshold)], "what": ["predicted threshold"]})
        left.append(alt.Chart(rule).mark_rule(strokeDash=[6, 4], color=SEVERITY_COLORS["critical"]).encode(
            x="k_ref:Q", tooltip=["what:N", alt.Tooltip("k_ref:Q", format=".1f")]))
    return (
        alt.layer(alt.layer(*left), line)
        .resolve_scale(y="independent")
        .properties(width=width, height=height)
    )
