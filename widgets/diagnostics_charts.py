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
    "stack_panels",
    "step_domain",
    "wrapped_table",
    "mode_name",
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


def step_domain(log: RunLog, diagnosis=None, *, forecast: bool = True) -> list[float]:
    """The x domain that holds every logged step (train and eval) and, with ``forecast``, the steps
    the diagnosis' forecast covers (up to its horizon): one domain for every panel of a run.

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> step_domain(synthetic_log("healthy", n_steps=80))
    [1.0, 80.0]
    """
    _check_log(log)
    steps = [pd.to_numeric(frame["step"], errors="coerce").to_numpy(float)
             for frame in (log.train, log.eval) if len(frame) and "step" in frame]
    steps = np.concatenate(steps) if steps else np.array([])
    steps = steps[np.isfinite(steps)]
    if not steps.size:
        raise DataError(f"{log.source} has no step to draw")
    lo, hi = float(steps.min()), float(steps.max())
    fc = diagnosis.forecast if diagnosis is not None else None
    if forecast and fc is not None and fc.declined is None:
        hi = max(hi, float(fc.horizon))
    return [lo, hi if hi > lo else lo + 1.0]


def _step_scale(domain):
    """The step scale over ``domain`` exactly (no rounding to nice values, no forced zero); Vega's
    default when ``domain`` is None."""
    if domain is None:
        return alt.Undefined
    return alt.Scale(domain=[float(v) for v in domain], nice=False, zero=False)


def _x(domain) -> alt.X:
    """The step axis over ``domain`` (:func:`_step_scale`)."""
    return step_x() if domain is None else step_x(scale=_step_scale(domain))


def reward_chart(log: RunLog, diagnosis=None, *, metric: str = "reward", eval_metric: str | None = None,
                 forecast: bool = True, x_domain=None, width: int = WIDTH["column"], height: int = 260,
                 max_points: int = 1500) -> alt.LayerChart:
    """The reward per step with its smoothed curve, the fitted law, the forecast and its band, with a
    legend that names every mark.

    Parameters
    ----------
    log : RunLog
    diagnosis : Diagnosis, optional
        From :func:`grpo_core.runs.diagnostics.diagnose`; adds the smoothed curve, the fitted law,
        the forecast with its band (shaded), the forecaster's current level (dotted) and the findings'
        onsets. A forecast marked unreliable (an unstable run) draws no law.
    metric : str
        Training column to draw (``"reward"``).
    eval_metric : str, optional
        Eval column to overlay (default: the eval ``reward`` if the log has one).
    forecast : bool
        Draw the forecast, its band and its current level (``False``: the logged steps only).
    x_domain : pair of float, optional
        The step axis' domain (default :func:`step_domain`: the logged steps, and the forecast's
        horizon when the forecast is drawn).
    width, height : int
        Size in pixels.
    max_points : int
        Most points drawn per series (longer logs are bin-averaged).

    Returns
    -------
    altair.LayerChart
        Raw reward (grey), smoothed curve, fitted law, forecast band, eval points, finding onsets.

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
    fc = diagnosis.forecast if diagnosis is not None else None
    fc = fc if fc is not None and fc.metric == metric else None
    fit = fc.law_fit if fc is not None else getattr(diagnosis, "law_fit", None)
    fit = fit if fit is not None and fit.metric == metric else None
    x = _x(x_domain if x_domain is not None else step_domain(log, diagnosis, forecast=forecast))
    if eval_metric is None and len(log.eval) and log.has("reward", "eval") and metric == "reward":
        eval_metric = "reward"
    # (frame, label, colour, dash, width, tooltip) of every line; the legend names each by its label
    lines: list[tuple] = [(raw, "per step", _DATA, [1, 0], 0.6, ["step:Q", alt.Tooltip("value:Q", format=".4g")])]
    band = None
    if fit is not None:
        sm_t, sm = _thin(np.asarray(fit.smoothed_t, float), np.asarray(fit.smoothed, float), max_points)
        if fit.reliable in (True, None):  # the law that describes the curve (its own band is not the forecast's)
            ft, fv = np.asarray(fit.t, float), np.asarray(fit.fitted, float)
            keep = np.unique(np.linspace(0, ft.size - 1, min(ft.size, max_points)).astype(int))
            lines.append((pd.DataFrame({"step": ft[keep], "value": fv[keep]}),
                          f"{fit.law.replace('_', '-')} law fitted to the curve (R² {fit.r2_smoothed:.2f})",
                          LAW_COLORS.get(fit.law, OKABE_ITO["blue"]), [1, 0], 2.5,
                          [alt.Tooltip("value:Q", format=".4g")]))
        lines.append((pd.DataFrame({"step": sm_t, "value": sm}), f"rolling mean ({fit.window} points)", INK,
                      [1, 0], 1.5, ["step:Q", alt.Tooltip("value:Q", format=".4g")]))
    if forecast and fc is not None and fc.declined is None:  # on top: the forecast and its "now"
        h = float(fc.horizon)
        a, b = fc.now_steps
        color = OKABE_ITO["vermillion"]
        lines.append((pd.DataFrame({"step": [a, b], "value": fc.now}),
                      f"current level (mean of steps {a:.0f}-{b:.0f})", color, [2, 2], 2.5,
                      [alt.Tooltip("value:Q", format=".4g", title="now (current level)"), "step:Q"]))
        end = (f"the planned end, step {h:.0f}" if fc.horizon_kind == "planned"
               else f"step {h:.0f} (the run assumed half done)")
        lines.append((pd.DataFrame({"step": [0.8 * h, h], "value": fc.shown_point}),
                      f"forecast: the current level held to {end}", color,
                      [1, 0], 2.5, [alt.Tooltip("value:Q", format=".4g", title="forecast (mean of these steps)")]))
        band = pd.DataFrame({"step": [0.8 * h, h], "low": fc.shown_low, "high": fc.shown_high,
                             "band": "90% band of the forecast"})
    if eval_metric is not None:
        ev = _series(log, eval_metric, max_points, split="eval")
        lines.append((ev, f"eval {eval_metric}", _EVAL, [2, 2], 1.5,
                      ["step:Q", alt.Tooltip("value:Q", format=".4g", title=f"eval {eval_metric}")]))
    # drawn in list order (the rolling mean over the law); listed with the rolling mean second
    order = sorted(range(len(lines)), key=lambda i: (i > 0, not lines[i][1].startswith("rolling mean"), i))
    labels = [lines[i][1] for i in order]
    legend = alt.Legend(title=None, orient="top", columns=2, labelLimit=0, symbolType="stroke",
                        symbolStrokeWidth=2.5, symbolOpacity=1)
    stroke = alt.Stroke("mark:N", scale=alt.Scale(domain=labels, range=[lines[i][2] for i in order]),
                        legend=legend)
    dash = alt.StrokeDash("mark:N", scale=alt.Scale(domain=labels, range=[lines[i][3] for i in order]),
                          legend=legend)
    layers = []
    if band is not None:
        layers.append(alt.Chart(band).mark_area(opacity=0.18).encode(
            x=x, y=alt.Y("low:Q", title=metric), y2="high:Q",
            fill=alt.Fill("band:N", scale=alt.Scale(domain=["90% band of the forecast"],
                                                    range=[OKABE_ITO["vermillion"]]),
                          legend=alt.Legend(title=None, orient="top", labelLimit=0, symbolType="square",
                                            symbolOpacity=0.3)),
            tooltip=[alt.Tooltip("low:Q", format=".4g"), alt.Tooltip("high:Q", format=".4g")]))
    for frame, label, _, _, stroke_width, tooltip in lines:
        frame = frame.assign(mark=label)
        mark = (alt.Chart(frame).mark_line(strokeWidth=stroke_width, opacity=0.5 if label == "per step" else 1,
                                           point=alt.OverlayMarkDef(color=_EVAL) if label.startswith("eval ")
                                           else False))
        layers.append(mark.encode(x=x, y=alt.Y("value:Q", title=metric), stroke=stroke, strokeDash=dash,
                                  tooltip=["mark:N", *tooltip]))
        if label == "per step":  # the raw values as points too
            layers.append(alt.Chart(frame).mark_circle(size=10, opacity=0.5, color=_DATA).encode(
                x=x, y="value:Q", tooltip=["step:Q", alt.Tooltip("value:Q", format=".4g")]))
    layers += _onset_rules(diagnosis)
    return alt.layer(*layers).resolve_scale(color="independent").properties(width=width, height=height)


def zero_spread_chart(
    log: RunLog,
    diagnosis=None,
    *,
    group_size: int | None = None,
    binary_reward: bool | None = None,
    num_prompts: int | None = None,
    x_domain=None,
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
    x_domain : pair of float, optional
        The step axis' domain, exactly (default: Vega's, from the data).
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
    x = _x(x_domain)
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
        name = f"advantage-degeneration finding ({f.severity}), steps {f.steps[0]}-{f.steps[1]}"
        span = pd.DataFrame({"start": [f.steps[0]], "end": [f.steps[1]], "finding": [name]})
        layers.append(alt.Chart(span).mark_rect(opacity=0.12).encode(
            x=alt.X("start:Q", scale=_step_scale(x_domain)), x2="end:Q",
            fill=alt.Fill("finding:N", scale=alt.Scale(domain=[name], range=[SEVERITY_COLORS[f.severity]]),
                          legend=alt.Legend(title=None, orient="top", labelLimit=0, symbolType="square",
                                            symbolOpacity=0.3)),
            tooltip=["finding:N"]))
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
    x_domain=None,
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
    x_domain : pair of float, optional
        The step axis' domain, exactly (default: Vega's, from the data).
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
    enc = dict(x=_x(x_domain), y=y,
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
    ``grad_norm``, ``clip`` (those whose columns exist), in that order. Every panel has the same
    step axis (:func:`step_domain`: the logged steps and the forecast's horizon), so that panels
    stacked with :func:`stack_panels` line up step for step.

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
    dom = step_domain(log, diagnosis)
    if log.has("reward"):
        out["reward"] = reward_chart(log, diagnosis, x_domain=dom, width=width, max_points=max_points)
    if log.has("frac_reward_zero_std") or log.has("reward_std"):
        out["zero_spread"] = zero_spread_chart(
            log,
            diagnosis,
            group_size=group_size,
            binary_reward=binary_reward,
            num_prompts=num_prompts,
            x_domain=dom,
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
            out[name] = metric_chart(log, metrics, diagnosis, title=title, x_domain=dom, width=width,
                                     max_points=max_points)
    return out


def stack_panels(*charts) -> alt.VConcatChart:
    """Panels of one run stacked vertically: one step scale shared by all (the same domain, so a step
    sits at the same place in every panel), each panel's colours and legends its own.

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> panels = diagnosis_charts(synthetic_log("healthy", n_steps=80))
    >>> stack_panels(panels["reward"], panels["kl"]).to_dict()["resolve"]["scale"]["x"]
    'shared'
    """
    return alt.vconcat(*charts).resolve_scale(x="shared", color="independent", stroke="independent",
                                              strokeDash="independent", fill="independent")


def diagnosis_dashboard(log: RunLog, diagnosis=None, **kwargs) -> alt.VConcatChart:
    """:func:`diagnosis_charts` stacked vertically (:func:`stack_panels`).

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> isinstance(diagnosis_dashboard(synthetic_log("healthy", n_steps=80)), alt.VConcatChart)
    True
    """
    return stack_panels(*diagnosis_charts(log, diagnosis, **kwargs).values())


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


def wrapped_table(frame: pd.DataFrame, *, max_width: str = "16em", index: bool = True):
    """A table whose long cells wrap inside the page's column instead of running past it.

    A table wider than the page's column scrolls sideways, and its last columns are cut off at the
    edge; here every cell wraps between words (``white-space: normal``; a word longer than the cell is
    broken) and is at most ``max_width`` wide, and the text sits at the top of its row. Write mode names
    with spaces (:func:`mode_name`): ``a_b_c`` has no place to break.

    Parameters
    ----------
    frame : DataFrame
    max_width : str
        CSS width of the widest cell.
    index : bool
        Show the index.

    Returns
    -------
    pandas.io.formats.style.Styler
        Displays as HTML in a notebook and on a book page.

    Examples
    --------
    >>> html = wrapped_table(pd.DataFrame({"finding": ["off_policy_mismatch (critical)"]})).to_html()
    >>> "white-space: normal" in html and "max-width: 16em" in html
    True
    """
    if not isinstance(frame, pd.DataFrame):
        raise ParameterError("frame", f"`frame` must be a DataFrame; got {type(frame).__name__}")
    cell = (f"white-space: normal; overflow-wrap: break-word; max-width: {max_width}; vertical-align: top; "
            "text-align: left; padding: 0.2em 0.6em 0.2em 0")
    styler = frame.style.set_table_styles([{"selector": "td, th", "props": cell}])
    return styler if index else styler.hide(axis="index")


#: How a mode is written in a sentence or a table cell, where it differs from its name with spaces.
_MODE_NAMES = {"train_eval_decoupling": "train-eval decoupling", "off_policy_mismatch": "off-policy mismatch",
               "kl_drift": "KL drift"}


def mode_name(mode: str) -> str:
    """A finding's mode as words (``"off_policy_mismatch"`` -> ``"off-policy mismatch"``).

    Examples
    --------
    >>> mode_name("off_policy_mismatch"), mode_name("not_learning")
    ('off-policy mismatch', 'not learning')
    """
    return _MODE_NAMES.get(mode, mode.replace("_", " "))
