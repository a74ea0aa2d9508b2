"""Charts of the explorers: the current setting drawn over the library's data and chart builders.

The explorers show the *current* point of a model (a trajectory with its noise band, a dot on the
phase diagram, the G marked on the MSE curve). Where a builder of :mod:`widgets.oscillator_charts`,
:mod:`widgets.bandit_charts` or :mod:`widgets.ustat_charts` draws the background, these functions
reuse it and add the layers that mark the current setting. The ``static_*`` charts compute on the
page with no kernel (Altair params bound to sliders, Vega expressions, precomputed grids filtered
by the params): the book's counterparts of the live explorers (the forecast's is
:func:`widgets.laws_charts.static_forecast_chart`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import lru_cache

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.model import oscillator as osc
from grpo_core.model import stability
from grpo_core.model.hyperparameters import check_lag, check_momentum

from . import oscillator_charts
from .style import (
    ACCENT,
    DARK2,
    FONT,
    GREY,
    NOTE,
    REGIME_COLORS,
    WIDTH,
    color_scale,
    grid_values,
    k_ref_x,
    step_x,
)
from .vega_expr import lit, var, where

__all__ = [
    "CLIP",
    "trajectory_frames",
    "trajectory_view_chart",
    "phase_frames",
    "phase_point_chart",
    "static_phase_chart",
    "STATIC_PHASE_PARAMS",
    "PHASE_K_REFS",
    "BANDIT_PATHS_SHOWN",
    "bandit_frames",
    "bandit_view_chart",
    "STATIC_BANDIT_PARAMS",
    "BANDIT_PREDICTIONS",
    "BANDIT_DEFAULTS",
    "BANDIT_MEASURED",
    "BANDIT_PREDICTED",
    "bandit_measured_verdict",
    "static_bandit_grid",
    "static_bandit_chart",
]

#: Plotted values of ``e / e0`` (or progress) are clipped to this range, so an unstable run
#: leaves the frame instead of flattening the stable part of the chart.
CLIP = (-1.0, 3.0)
#: ``K_ref`` values of the phase diagrams (log-spaced; the slider snaps to them); defined beside
#: :func:`widgets.oscillator_charts.hero_explorer`, which snaps to the same values.
PHASE_K_REFS = oscillator_charts.PHASE_K_REFS
#: Names of :func:`static_phase_chart`'s params (the browser tests move them).
STATIC_PHASE_PARAMS = ("eta", "curvature", "mu", "k_ref")



def _until_exit(t, x, lo: float = -0.05, hi: float = 1.05) -> tuple[np.ndarray, np.ndarray]:
    """A curve cut where it first leaves ``[lo, hi]``: the points up to the first one outside (moved
    to half a frame beyond the edge, so the line visibly runs out of the clipped frame), none after.

    Clamping instead would draw a diverging prediction as flat runs along the frame's edges, which
    reads as a bounded oscillation.
    """
    t = np.asarray(t)
    x = np.asarray(x, float)
    out = ~np.isfinite(x) | (x < lo) | (x > hi)
    if not out.any():
        return t, x
    i = int(np.argmax(out))
    x = x[: i + 1].copy()
    pad = 0.5 * (hi - lo)
    x[i] = lo - pad if x[i] < lo else hi + pad  # NaN/inf count as above
    return t[: i + 1], x


def trajectory_frames(bands: pd.DataFrame, closed_form: np.ndarray) -> dict[str, pd.DataFrame]:
    """The data of :func:`trajectory_view_chart`, clipped to :data:`CLIP`.

    Parameters
    ----------
    bands : pandas.DataFrame
        From :func:`grpo_core.model.noise.noise_bands` (one group size).
    closed_form : ndarray, shape (T + 1,)
        ``e(t)/e0`` of the continuous model at ``t = 0..T``.

    Returns
    -------
    dict
        ``bands`` (the input with every band column clipped; inf and NaN, i.e. overflowed
        unstable runs, set to the upper clip) and ``lines`` (columns ``t``, ``progress``,
        ``model``: the closed form and the exact recurrence's mean as reward progress ``1 - e/e0``).

    Raises
    ------
    ValueError
        If ``closed_form`` does not have one value per step of ``bands``.
    """
    lo, hi = CLIP
    data = bands.copy()
    cols = [c for c in ("sim_mean", "sim_lo", "sim_hi", "mean", "lo", "hi", "stationary_sd") if c in data]
    with np.errstate(invalid="ignore"):
        data[cols] = data[cols].astype(float).replace([np.inf, -np.inf], np.nan).clip(lo, hi).fillna(hi)
    t = np.sort(data["t"].unique())
    if len(closed_form) != len(t):
        raise ValueError(f"`closed_form` has {len(closed_form)} values; the bands have {len(t)} steps")
    with np.errstate(over="ignore", invalid="ignore"):
        progress = np.clip(
            np.nan_to_num(1.0 - np.asarray(closed_form, float), nan=hi, posinf=hi, neginf=lo), lo, hi
        )
    exact = data.drop_duplicates("t").sort_values("t")
    lines = pd.concat([
        pd.DataFrame({"t": t, "progress": progress, "model": "closed form (continuous)"}),
        pd.DataFrame({"t": exact["t"].to_numpy(), "progress": exact["mean"].to_numpy(),
                      "model": "exact recurrence (mean)"}),
    ], ignore_index=True)
    return {"bands": data, "lines": lines}


def trajectory_view_chart(frames: dict[str, pd.DataFrame], *, width: int = 440,
                          height: int = 260) -> alt.LayerChart:
    """The oscillator explorer's trajectory: noise band for G, exact recurrence, closed form.

    The band and the simulated mean are :func:`widgets.oscillator_charts.noise_bands_chart`; on
    top, the closed-form trajectory of the continuous model (solid black) and the exact
    recurrence's mean (dots), all as reward progress ``1 - e/e0`` clipped to :data:`CLIP`.

    Parameters
    ----------
    frames : dict
        From :func:`trajectory_frames`.
    width, height : int
        Size in pixels.

    Returns
    -------
    alt.LayerChart
        The seeds' band, the closed form (line) and the exact recurrence's mean (dots).

    Raises
    ------
    KeyError
        If ``frames`` lacks ``bands`` or ``lines``.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.trajectories import closed_form_trajectory
    >>> from grpo_core.model.noise import noise_bands
    >>> c = coefficients(0.05, 0.5, 4, 1.0)
    >>> bands = noise_bands(c, (8,), n_seeds=8, n_steps=20)
    >>> chart = trajectory_view_chart(trajectory_frames(bands, closed_form_trajectory(c, np.arange(21))))
    >>> len(chart.layer)
    3
    """
    lo, hi = CLIP
    background = oscillator_charts.noise_bands_chart(frames["bands"])
    lines = frames["lines"]
    model_scale = alt.Scale(domain=["closed form (continuous)", "exact recurrence (mean)"],
                            range=["#000000", ACCENT])
    closed = alt.Chart(lines).transform_filter("datum.model == 'closed form (continuous)'").mark_line(
        strokeWidth=2, clip=True).encode(
        x="t:Q", y="progress:Q", stroke=alt.Stroke("model:N", scale=model_scale, title="model"))
    dots = alt.Chart(lines).transform_filter("datum.model == 'exact recurrence (mean)'").mark_circle(
        size=10, clip=True).encode(
        x="t:Q", y="progress:Q", fill=alt.Fill("model:N", scale=model_scale, legend=None))
    return alt.layer(background, closed, dots).resolve_scale(color="independent").properties(
        width=width, height=height,
        title=alt.Title("reward progress from rest",
                        subtitle=["black: closed form (continuous); dots: exact recurrence;",
                                  "shaded: simulated mean ± 2 sd over seeds; dashed: exact ± 2 sd;",
                                  f"clipped to [{lo:g}, {hi:g}]"]))


def phase_frames(a: float, k_ref: int, mu: float, label: str, *, lag: str = "constant",
                 momentum: str = "heavy_ball") -> dict[str, pd.DataFrame]:
    """The data of :func:`phase_point_chart`.

    Parameters
    ----------
    a : float
        ``eta * K`` of the current setting (per step).
    k_ref : int
        Current refresh interval.
    mu : float
        Momentum (the boundaries are computed for it).
    label : str
        The regime, written next to the point.
    lag : {"constant", "refresh"}
        The current lag model (its boundaries are emphasised).
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    dict
        ``boundaries`` (:func:`widgets.oscillator_charts.phase_diagram_data` at ``mu`` over
        :data:`PHASE_K_REFS`, with a boolean ``current`` column) and ``point`` (one row ``k_ref``,
        ``a``, ``label``, ``mu``).

    Raises
    ------
    ParameterError
        Invalid ``mu``, ``lag`` or ``momentum``.
    """
    df = _phase_boundaries(float(mu), check_lag(lag), check_momentum(momentum))
    point = pd.DataFrame({"k_ref": [k_ref], "a": [min(max(a, 1e-3), 4.0)], "label": [label],
                          "title": [f"current point (μ = {mu:.2f})"]})
    return {"boundaries": df, "point": point}


@lru_cache(maxsize=256)
def _phase_boundaries(mu: float, lag: str, momentum: str) -> pd.DataFrame:
    """Boundaries at one ``mu`` (cached: a slider move that keeps ``mu`` reuses the same frame,
    which :class:`widgets._controls.LiveChart` then does not even re-serialise). Read-only."""
    df = oscillator_charts.phase_diagram_data(mus=(mu,), k_refs=PHASE_K_REFS, momentum=momentum)
    df["current"] = df["lag"] == lag
    return df


def phase_point_chart(frames: dict[str, pd.DataFrame], *, width: int = 360,
                      height: int = 260) -> alt.LayerChart:
    """Phase diagram over (eta K, K_ref) at one ``mu``, with the current point and its regime label.

    Boundaries (continuous and exact, both lag models; the current lag model drawn thicker), the
    point ``(K_ref, eta K)`` coloured and labelled by its regime. Stable below a boundary,
    unstable above.

    Parameters
    ----------
    frames : dict
        From :func:`phase_frames`.
    width, height : int

    Returns
    -------
    alt.LayerChart
        Boundary lines (current lag model thicker) and the point, coloured and labelled by regime.

    Raises
    ------
    KeyError
        If ``frames`` lacks ``boundaries`` or ``point``.

    Examples
    --------
    >>> chart = phase_point_chart(phase_frames(0.05, 4, 0.5, "underdamped"))
    >>> [layer.mark.type if hasattr(layer.mark, "type") else layer.mark for layer in chart.layer][-2:]
    ['point', 'text']
    """
    x = k_ref_x(domain=[1, 64])
    y_scale = alt.Scale(type="log", domain=[1e-3, 4], clamp=True, nice=False)
    lines = alt.Chart(frames["boundaries"]).mark_line().encode(
        x=x, y=alt.Y("a_star:Q", title="η·K (per step)", scale=y_scale),
        color=alt.Color("lag:N", title="lag model"),
        strokeDash=alt.StrokeDash("method:N", title="threshold",
                                  scale=alt.Scale(domain=["exact", "continuous"], range=[[1, 0], [6, 3]])),
        strokeWidth=alt.condition("datum.current", alt.value(2.5), alt.value(1)),
        detail="boundary:N",
        tooltip=["boundary:N", "k_ref:Q", alt.Tooltip("a_star:Q", format=".4g")],
    )
    colour = alt.Color("label:N", legend=None,
                       scale=color_scale(REGIME_COLORS))
    point = alt.Chart(frames["point"])
    dot = point.mark_point(shape="diamond", size=160, filled=True, stroke="black").encode(
        x="k_ref:Q", y=alt.Y("a:Q", scale=y_scale), color=colour, tooltip=["title:N", "label:N"])
    text = point.mark_text(align="left", dx=9, dy=-9, fontSize=13, fontWeight="bold").encode(
        x="k_ref:Q", y="a:Q", text="label:N", color=colour)
    layers = alt.layer(lines, dot, text).resolve_scale(color="independent")
    return layers.properties(width=width, height=height)


def _phase_frame(rows: list[dict], mu_grid, lag: str, momentum: str) -> tuple[float, float]:
    """The y-domain of :func:`static_phase_chart`: whole decades holding every boundary of the slider
    grid (exact ``rows`` and continuous) with a quarter of room, and the point's least ``eta K``
    (1e-4: the sliders' least ``eta`` times least ``K``) and ``eta K = 1``."""
    exact = [r["a_star"] for r in rows if math.isfinite(r["a_star"])]
    with np.errstate(divide="ignore"):
        cont = stability.critical_a_continuous(np.asarray(mu_grid)[:, None], np.asarray(PHASE_K_REFS)[None, :],
                                               lag, momentum)
    cont = [float(v) for v in np.ravel(cont) if np.isfinite(v) and v > 0]
    least, most = min(exact + cont + [1e-4 * 1.25]), max(exact + cont + [1.0])
    return 10.0 ** math.floor(math.log10(least / 1.25)), 10.0 ** math.ceil(math.log10(most * 1.25))


def static_phase_chart(
    eta: float = 0.02,
    curvature: float = 1.0,
    mu: float = 0.5,
    k_ref: int = 4,
    *,
    lag: str = "constant",
    momentum: str = "heavy_ball",
    eta_max: float = 1.0,
    width: int = WIDTH["half"],
    height: int = 300,
) -> alt.LayerChart:
    """Phase diagram with sliders, computed on the page: the current point and its regime label.

    Sliders (top-level params, :data:`STATIC_PHASE_PARAMS`): ``eta``, ``curvature``, ``mu`` (0.01
    grid) and ``k_ref`` (snapped to :data:`PHASE_K_REFS` by the lookup). The page draws, for the
    current ``mu``, the exact stability boundary of the chosen lag model (a table precomputed by
    :func:`grpo_core.model.stability.critical_a_exact` for every ``mu`` of the slider grid and every
    ``K_ref`` of :data:`PHASE_K_REFS`, filtered by the param) and the continuous one (a Vega
    expression, :func:`widgets.oscillator_charts.oscillator_expressions`), the point
    ``(K_ref, eta K)`` and two text marks, by Vega-Lite name:

    * ``phase_regime_label``: the regime of the current point: the continuous model's regime
      (``overdamped``, ``critically damped``, ``underdamped``) when the exact recurrence is
      stable, else ``unstable`` (exact recurrence); ``stable (exact recurrence only)`` between the
      two thresholds (heavy ball, constant lag: the exact threshold lies above the paper's);
    * ``phase_point_label``: ``"η·K = 0.02, K_ref = 4 (exact threshold 0.0557)"``.

    Both labels sit above the plot; the key (``phase_key``) below the axes. The y-domain holds every
    boundary of the slider grid (:func:`_phase_frame`), so no boundary is flattened onto an edge; the
    x-domain is padded so the point is whole at ``K_ref = 1`` and 64; a point outside the frame is
    drawn on its edge as a triangle pointing where it lies (``phase_point``'s shape).

    The chart asks vega-embed for the SVG renderer, so the labels are ``<text>`` elements.

    Parameters
    ----------
    eta, curvature, mu, k_ref : float
        Initial slider positions (``k_ref`` must be one of :data:`PHASE_K_REFS`).
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}
    eta_max : float
        Right end of the ``eta`` slider.
    width, height : int

    Returns
    -------
    alt.LayerChart
        Sliders as top-level params; the boundaries, the point and its named text marks.

    Raises
    ------
    ParameterError
        Invalid initial values, ``lag`` or ``momentum``; ``k_ref`` not in :data:`PHASE_K_REFS`.

    Examples
    --------
    >>> spec = static_phase_chart().to_dict()
    >>> sorted(p["name"] for p in spec["params"])
    ['curvature', 'eta', 'k_ref', 'mu']
    """
    from grpo_core.errors import ParameterError

    lag = check_lag(lag)
    momentum = check_momentum(momentum)
    c0 = osc.coefficients(eta, mu, k_ref, curvature, lag=lag, momentum=momentum)
    if k_ref not in PHASE_K_REFS:
        raise ParameterError("k_ref", f"`k_ref` must be one of {PHASE_K_REFS}; got {k_ref}")
    ex = oscillator_charts.oscillator_expressions(lag, momentum)
    params = [
        alt.param(name="eta", value=c0.eta,
                  bind=alt.binding_range(min=0.001, max=eta_max, step=0.001, name="η (step size) ")),
        alt.param(name="curvature", value=c0.curvature,
                  bind=alt.binding_range(min=0.1, max=5.0, step=0.1, name="K (curvature) ")),
        alt.param(name="mu", value=round(c0.mu, 2),
                  bind=alt.binding_range(min=0.0, max=0.99, step=0.01, name="μ (momentum) ")),
        alt.param(name="k_ref", value=c0.k_ref,
                  bind=alt.binding_select(options=list(PHASE_K_REFS), name="K_ref (refresh interval) ")),
    ]
    mu_grid = np.round(np.arange(0.0, 0.995, 0.01), 2)
    rows = stability.exact_threshold_rows(mu_grid, PHASE_K_REFS, lag, momentum)
    table = alt.Data(values=rows)
    lo, hi = _phase_frame(rows, mu_grid, lag, momentum)
    # the K_ref axis padded by a quarter of a notch either side: a point at K_ref = 1 or 64 is whole
    x = k_ref_x(domain=[PHASE_K_REFS[0] / 1.25, PHASE_K_REFS[-1] * 1.25])
    decades = [10.0 ** j for j in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
    y = alt.Y("a_star:Q", title="η·K (per step)", scale=alt.Scale(type="log", domain=[lo, hi], nice=False),
              axis=alt.Axis(values=decades, format="~g"))
    # The frame holds every boundary of the slider grid; a point that would still fall outside is
    # filtered out of the line (cut, not drawn flat along the edge).
    in_frame = f"isFinite(datum.a_star) && datum.a_star >= {lo!r} && datum.a_star <= {hi!r}"
    exact_line = alt.Chart(table).transform_filter("datum.m == round(mu * 100)").transform_filter(
        in_frame).mark_line(color=ACCENT, strokeWidth=2.5, clip=True).encode(
        x=x, y=y).properties(name="exact_boundary")
    k_var = var("k", "datum.k_ref")
    # The continuous threshold as an expression of (mu, k_ref): C = 0 (coefficients' formula).
    if lag == "constant":
        d1 = k_var
    else:
        d1 = (k_var - 1.0) / 2.0
    g_star = (1.0 - var("mu")) / d1
    a_cont = g_star if momentum == "heavy_ball" else g_star / (1.0 - var("mu"))
    cont_line = alt.Chart(alt.Data(values=[{"k_ref": k} for k in PHASE_K_REFS])).transform_calculate(
        a_star=str(where(d1 > 0, a_cont, lit(math.inf))),  # no lag (refresh, K_ref = 1): no boundary
    ).transform_filter(in_frame).mark_line(
        color=ACCENT, strokeDash=[6, 3], strokeWidth=1.5, clip=True).encode(x=x, y=y).properties(
        name="continuous_boundary")
    # The current point, with the exact boundary at its K_ref looked up from the table; outside the
    # frame it is drawn on the edge as a triangle pointing where it lies (as the fitting chart does).
    point_base = alt.Chart(table).transform_filter("datum.m == round(mu * 100) && datum.k_ref == k_ref") \
        .transform_calculate(a_exact="datum.a_star", a=str(ex["a"])) \
        .transform_calculate(verdict=str(ex["verdict"]), a_plot=f"clamp(datum.a, {lo!r}, {hi!r})",
                             shape=f"datum.a > {hi!r} ? 'triangle-up' : datum.a < {lo!r} ? 'triangle-down'"
                                   " : 'diamond'")
    colour = alt.Color("verdict:N", legend=None, scale=color_scale(REGIME_COLORS))
    point = point_base.mark_point(size=200, filled=True, stroke="black", strokeWidth=1).encode(
        x="k_ref:Q", y=alt.Y("a_plot:Q", scale=alt.Scale(type="log", domain=[lo, hi], nice=False)),
        shape=alt.Shape("shape:N", scale=None), color=colour).properties(name="phase_point")
    # the two labels above the plot, where no point or boundary can lie under them
    regime_text = point_base.mark_text(align="left", baseline="bottom", fontSize=FONT["verdict"],
                                       fontWeight="bold").encode(
        x=alt.value(0), y=alt.value(-24), text="verdict:N", color=colour).properties(name="phase_regime_label")
    point_text = point_base.transform_calculate(
        label="'η·K = ' + format(datum.a, '.3~g') + ', K_ref = ' + datum.k_ref "
              "+ ' (exact threshold ' + format(datum.a_exact, '.3~g') + ')'",
    ).mark_text(align="left", baseline="bottom", fontSize=12, color=NOTE).encode(
        x=alt.value(0), y=alt.value(-6), text="label:N").properties(name="phase_point_label")
    # the key under the x-axis title, out of the plot (it was drawn over the boundaries' low end)
    legend = alt.Chart(alt.Data(values=[
        {"y": 0, "text": f"solid: exact boundary ({lag} lag); dashed: continuous C = 0"}])).mark_text(
        align="left", baseline="top", fontSize=11, color=ACCENT).encode(
        x=alt.value(0), y=alt.value(height + 42), text="text:N").properties(name="phase_key")
    layers = alt.layer(exact_line, cont_line, point, regime_text, point_text, legend)
    return layers.add_params(*params).properties(
        width=width, height=height, usermeta={"embedOptions": {"renderer": "svg", "actions": False}})


# ----------------------------------------------------------------------------------------------
# Bandit explorer
# ----------------------------------------------------------------------------------------------

#: Seeds drawn as individual thin lines in the bandit explorer (the mean uses all of them).
BANDIT_PATHS_SHOWN = 12


def bandit_frames(result: dict) -> dict[str, pd.DataFrame]:
    """The data of :func:`bandit_view_chart` from a bandit explorer run.

    Parameters
    ----------
    result : dict
        ``p`` (ndarray, shape (S, T'): expected reward of each seed at the recorded steps),
        ``steps`` (shape (T',)), ``seeds`` (shape (S,)) and ``prediction`` (from
        :func:`grpo_core.bandit.prediction.predicted_path`: ``t``, ``mean_field``, ``closed_form``,
        ``discrete``, ``fixed_point``).

    Returns
    -------
    dict
        ``paths`` (``step``, ``p``, ``seed``: the first :data:`BANDIT_PATHS_SHOWN` seeds),
        ``curves`` (``step``, ``p``, ``curve``: the mean over seeds with its ± 2 standard errors
        as ``lo``/``hi``, the exact mean field, the oscillator closed form and exact recurrence,
        each prediction cut where it leaves [-0.05, 1.05]) and ``fixed`` (one row: ``p_star``).
    """
    p = np.asarray(result["p"], float)
    steps = np.asarray(result["steps"])
    pred = result["prediction"]
    shown = p[:BANDIT_PATHS_SHOWN]
    paths = pd.DataFrame({
        "step": np.tile(steps, shown.shape[0]),
        "p": shown.ravel(),
        "seed": np.repeat(np.asarray(result["seeds"])[: shown.shape[0]], steps.size),
    })
    mean = p.mean(axis=0)
    se = p.std(axis=0, ddof=1) / np.sqrt(p.shape[0]) if p.shape[0] > 1 else np.zeros_like(mean)
    t = np.asarray(pred["t"])

    def cut(x, name):
        ts, xs = _until_exit(t, x)
        return pd.DataFrame({"step": ts, "p": xs, "curve": name})

    with np.errstate(invalid="ignore", over="ignore"):
        curves = pd.concat([
            pd.DataFrame({"step": steps, "p": mean, "lo": mean - 2 * se, "hi": mean + 2 * se,
                          "curve": "mean over seeds"}),
            cut(pred["mean_field"], "exact mean field (bandit)"),
            cut(pred["closed_form"], "oscillator, closed form"),
            cut(pred["discrete"], "oscillator, exact recurrence"),
        ], ignore_index=True)
    fixed = pd.DataFrame({"p_star": [pred["fixed_point"].p_star], "label": ["p*"]})
    return {"paths": paths, "curves": curves, "fixed": fixed}


def bandit_view_chart(
    frames: dict[str, pd.DataFrame], *, width: int = WIDTH["wide"], height: int = 280
) -> alt.LayerChart:
    """The bandit explorer's chart: seed paths, their mean, the mean field and the oscillator prediction.

    Parameters
    ----------
    frames : dict
        From :func:`bandit_frames`.
    width, height : int

    Returns
    -------
    alt.LayerChart
        Seed paths (grey), their mean, the exact mean field, the two oscillator predictions.

    Raises
    ------
    KeyError
        If ``frames`` lacks ``paths``, ``curves`` or ``fixed``.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.bandit import BanditSpec
    >>> from grpo_core.bandit.prediction import predicted_path
    >>> pred = predicted_path(BanditSpec.binary(group_size=8), eta=0.5, mu=0.0, k_ref=1, beta=1.0, steps=10)
    >>> res = {"p": np.full((2, 11), 0.6), "steps": np.arange(11), "seeds": [0, 1], "prediction": pred}
    >>> len(bandit_view_chart(bandit_frames(res)).layer)
    5
    """
    x = step_x()
    y = alt.Y("p:Q", title="expected reward p", scale=alt.Scale(domain=[-0.05, 1.05], nice=False))
    names = sorted(frames["curves"]["curve"].unique(), key=lambda s: (s != "mean over seeds", s))
    palette = {"exact mean field (bandit)": DARK2["green"], "oscillator, closed form": "#000000",
               "oscillator, exact recurrence": DARK2["magenta"]}
    colour = alt.Color("curve:N", title=None, legend=alt.Legend(orient="bottom", columns=2),
                       scale=alt.Scale(domain=names, range=[palette.get(n, ACCENT) for n in names]))
    solid = [[1, 0] if n == "mean over seeds" or n.startswith("exact") else [5, 3] for n in names]
    dash = alt.StrokeDash("curve:N", legend=None, scale=alt.Scale(domain=names, range=solid))
    paths = alt.Chart(frames["paths"]).mark_line(strokeWidth=0.6, opacity=0.35, color=GREY, clip=True).encode(
        x=x, y=y, detail="seed:N")
    band = alt.Chart(frames["curves"]).transform_filter("isValid(datum.lo)").mark_area(
        opacity=0.25, color=ACCENT, clip=True).encode(x="step:Q", y="lo:Q", y2="hi:Q")
    curves = alt.Chart(frames["curves"]).mark_line(strokeWidth=2, clip=True).encode(
        x="step:Q", y="p:Q", color=colour, strokeDash=dash)
    rule = alt.Chart(frames["fixed"]).mark_rule(strokeDash=[2, 2], color="#555").encode(y="p_star:Q")
    text = alt.Chart(frames["fixed"]).mark_text(align="left", dx=4, dy=-6, color="#555").encode(
        x=alt.value(0), y="p_star:Q", text="label:N")
    return alt.layer(paths, band, curves, rule, text).properties(width=width, height=height)


# ----------------------------------------------------------------------------------------------
# Static counterparts of the bandit and log explorers (precomputed grids filtered by a slider)
# ----------------------------------------------------------------------------------------------

#: Names of :func:`static_bandit_chart`'s params.
STATIC_BANDIT_PARAMS = ("k_ref",)
#: The oscillator's two predictions in :func:`static_bandit_grid`: the exact recurrence (what the
#: verdict is about: dashed) and the continuous model's closed form (dotted).
BANDIT_PREDICTIONS = ("oscillator, exact recurrence", "oscillator, closed form (continuous)")
#: The one default setting of the bandit explorer, live (:func:`widgets.explorers.bandit_explorer`)
#: and static (:func:`static_bandit_grid`), used on the bandit chapter and the Explorers page: the
#: chapter's plain mean baseline, two arms, one correct, constant lag.
BANDIT_DEFAULTS = {"eta": 0.2, "mu": 0.5, "beta": 1.0, "group_size": 8, "k_ref": 4, "steps": 400,
                   "baseline": "mean"}
#: What a regime of :func:`grpo_core.bandit.stability.classify_trajectory` is on the bandit, whose
#: expected reward is bounded: a run that does not settle ("divergent") stays on a bounded cycle.
BANDIT_MEASURED = {"monotone": "monotone approach to p*", "oscillatory": "damped oscillation toward p*",
                   "divergent": "bounded cycle"}
#: The linear prediction at the fixed point, per verdict of
#: :func:`grpo_core.model.oscillator.regime_verdict` (the exact recurrence decides stability).
BANDIT_PREDICTED = {"unstable": "fixed point unstable",
                    "stable_exact_only": "fixed point stable (exact recurrence only)",
                    "underdamped": "fixed point stable, underdamped",
                    "critically_damped": "fixed point stable, critically damped",
                    "overdamped": "fixed point stable, overdamped"}


def bandit_measured_verdict(steps, p, p_star: float) -> dict:
    """The regime of one bandit run, measured the way the bandit chapter labels its ``K_ref`` sweep.

    The regime is :func:`grpo_core.bandit.stability.classify_trajectory` of the run against the
    fixed point. A run that does not settle (``"divergent"``) is a bounded cycle on the bandit
    (``p`` stays in [0, 1]); its period is the mean spacing of the upward crossings of its mean
    level over the second half of the run (linearly interpolated between recorded steps).

    Parameters
    ----------
    steps : array_like, shape (T,)
        Optimizer steps of the recorded points (increasing).
    p : array_like, shape (T,), T >= 8
        Expected reward at those steps (the exact mean field, not a mean over seeds: averaging
        seeds dephases a cycle into an apparent damping).
    p_star : float
        Fixed point.

    Returns
    -------
    dict
        ``regime`` (one of ``monotone``, ``oscillatory``, ``divergent``), ``period`` (steps, float;
        NaN unless a cycle with at least two upward crossings in the second half) and ``text``
        (``"measured: "`` and :data:`BANDIT_MEASURED`'s words, with the period for a cycle).

    Raises
    ------
    ParameterError
        From :func:`~grpo_core.bandit.stability.classify_trajectory` (fewer than 8 points, a
        non-finite ``p_star``).

    Examples
    --------
    >>> t = np.arange(400)
    >>> v = bandit_measured_verdict(t, 0.7 + 0.2 * np.sin(2 * np.pi * t / 40), 0.7)
    >>> v["regime"], round(v["period"]), v["text"]
    ('divergent', 40, 'measured: bounded cycle, period ≈ 40 steps')
    """
    from grpo_core.bandit.stability import classify_trajectory

    t = np.asarray(steps, dtype=float)
    x = np.asarray(p, dtype=float)
    regime = str(classify_trajectory(x, p_star)[()])
    period = math.nan
    text = f"measured: {BANDIT_MEASURED[regime]}"
    if regime == "divergent":
        half = x.size // 2
        tl, xl = t[half:], x[half:]
        level = float(np.mean(xl))
        i = np.flatnonzero((xl[:-1] < level) & (xl[1:] >= level))
        if i.size >= 2:
            cross = tl[i] + (level - xl[i]) / (xl[i + 1] - xl[i]) * (tl[i + 1] - tl[i])
            period = float(np.mean(np.diff(cross)))
            text += f", period ≈ {period:.0f} steps"
    return {"regime": regime, "period": period, "text": text}


def static_bandit_grid(
    *,
    eta: float = BANDIT_DEFAULTS["eta"],
    mu: float = BANDIT_DEFAULTS["mu"],
    beta: float = BANDIT_DEFAULTS["beta"],
    group_size: int = BANDIT_DEFAULTS["group_size"],
    k_refs: Sequence[int] = tuple(range(1, 17)),
    steps: int = BANDIT_DEFAULTS["steps"],
    seeds: int = 64,
    record_every: int = 2,
    lag: str = "constant",
    baseline: str = BANDIT_DEFAULTS["baseline"],
) -> dict[str, pd.DataFrame]:
    """Bandit runs for every ``K_ref`` of a slider, with the measured regime and the oscillator's prediction.

    One vectorised call of :func:`grpo_core.bandit.simulate` per mode runs every ``K_ref``
    together: the exact mean field and ``seeds`` stochastic runs (two arms, one correct, uniform
    start and reference; the plain mean baseline by default, as in the bandit chapter). The
    measured regime is :func:`bandit_measured_verdict` of the mean-field run as recorded (the curve
    the chart draws). The prediction is :func:`grpo_core.bandit.prediction.predicted_path`: the
    oscillator with the bandit's own fixed point and stiffness, i.e. the linearisation at ``p*``.
    It is about the fixed point; past the exact threshold the nonlinear bandit does not diverge but
    saturates in a bounded cycle.

    Parameters
    ----------
    eta, mu, beta : float
        Step size, heavy-ball momentum, KL weight.
    group_size : int
        G of the stochastic runs (and of the expected update of the mean field).
    k_refs : sequence of int
        Lags of the slider.
    steps, seeds, record_every : int
        Run length, stochastic seeds per ``K_ref``, recording stride.
    lag : {"constant", "refresh"}
    baseline : {"mean", "leave_one_out"}

    Returns
    -------
    dict
        ``curves`` (``k_ref``, ``step``, ``p``, ``curve``: stochastic mean, exact mean field, the
        oscillator's exact recurrence and closed form (:data:`BANDIT_PREDICTIONS`); each prediction
        cut where it leaves [-0.05, 1.05]) and ``labels`` (one row per ``k_ref``: ``regime``, the
        continuous model's regime; ``stable_exact``; ``measured_regime`` and ``period`` from
        :func:`bandit_measured_verdict`; ``measured``, its text; ``predicted``,
        ``"prediction (linearised): "`` and :data:`BANDIT_PREDICTED`'s words for the verdict of
        :func:`grpo_core.model.oscillator.regime_verdict`; ``detail``, the damping ratio, ``eta K``
        and ``K_ref``).

    Raises
    ------
    ParameterError
        Invalid hyperparameters (from :mod:`grpo_core.bandit`).
    """
    from grpo_core import bandit
    from grpo_core.bandit import prediction

    spec = bandit.BanditSpec.binary(arms=2, correct=1, group_size=group_size, baseline=baseline, lag=lag)
    k = np.asarray(k_refs, dtype=int)
    mf = bandit.simulate(spec, eta=eta, mu=mu, k_ref=k, beta=beta, steps=steps, mean_field=True,
                         record_every=record_every)
    st = bandit.simulate(spec, eta=eta, mu=mu, k_ref=k, beta=beta, steps=steps, seeds=seeds,
                         record_every=record_every)
    rows, labels = [], []
    for i, kr in enumerate(k):
        pred = prediction.predicted_path(spec, eta=eta, mu=mu, k_ref=int(kr), beta=beta, steps=steps)
        c = pred["coefficients"]
        t = mf.steps
        with np.errstate(over="ignore", invalid="ignore"):
            closed = np.asarray(pred["closed_form"])[t]
            discrete = np.asarray(pred["discrete"])[t]
        for name, values in ((f"mean of {seeds} seeds (G = {group_size})", st.p[i].mean(axis=0)),
                             ("exact mean field", mf.p[i, 0]),
                             (BANDIT_PREDICTIONS[0], discrete), (BANDIT_PREDICTIONS[1], closed)):
            ts, v = _until_exit(t, values)
            rows.append(pd.DataFrame({"k_ref": int(kr), "step": ts, "p": v, "curve": name}))
        verdict = osc.regime_verdict(c.regime, pred["stable_exact"])
        measured = bandit_measured_verdict(t, mf.p[i, 0], pred["fixed_point"].p_star)
        labels.append({
            "k_ref": int(kr), "regime": c.regime_label, "stable_exact": pred["stable_exact"],
            "measured_regime": measured["regime"], "period": measured["period"],
            "measured": measured["text"],
            "predicted": f"prediction (linearised): {BANDIT_PREDICTED[verdict]}",
            "detail": f"ζ = {c.damping_ratio:.2f} (continuous model), η·K = {c.a:.3f}, K_ref = {int(kr)}",
        })
    return {"curves": pd.concat(rows, ignore_index=True), "labels": pd.DataFrame(labels)}


def static_bandit_chart(grid: dict[str, pd.DataFrame], k_ref: int = BANDIT_DEFAULTS["k_ref"], *,
                        width: int = 540, height: int = 280) -> alt.LayerChart:
    """Bandit runs filtered by a ``K_ref`` slider on the page (no kernel).

    Parameters
    ----------
    grid : dict
        From :func:`static_bandit_grid`.
    k_ref : int
        Initial slider position (one of the grid's values).
    width, height : int

    Returns
    -------
    alt.LayerChart
        A param ``k_ref`` bound to a range slider; the curves of that ``K_ref`` (the oscillator's
        exact recurrence dashed, its continuous closed form dotted) and three text marks inside the
        plot: ``bandit_measured_label`` (the grid's ``measured``: the regime measured on the exact
        mean field), ``bandit_regime_label`` (``predicted``: the linear prediction at the fixed
        point) and ``bandit_detail_label`` (``detail``). The curves travel as codes with ``p``
        rounded to 4 decimals (the page carries every ``K_ref``).

    Raises
    ------
    ParameterError
        If ``k_ref`` is not in the grid.
    """
    ks = grid_values(grid, "k_ref", k_ref)
    param = alt.param(name="k_ref", value=int(k_ref),
                      bind=alt.binding_range(min=int(ks[0]), max=int(ks[-1]), step=1, name="K_ref (lag) "))
    curves = grid["curves"]
    names = list(dict.fromkeys(curves["curve"]))
    code = {n: i for i, n in enumerate(names)}
    # inline values (not a DataFrame): the grid's rows exceed Altair's default row limit, and the
    # chart must draw without the book's set-up (Colab)
    data = alt.Data(values=pd.DataFrame({
        "k_ref": curves["k_ref"], "step": curves["step"], "p": curves["p"].round(4),
        "c": curves["curve"].map(code)}).to_dict("records"))
    palette = [ACCENT, DARK2["green"], DARK2["magenta"], "#000000"]
    dashes = [[1, 0], [1, 0], [6, 3], [2, 3]]
    colour = alt.Color("curve:N", title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=260),
                       scale=alt.Scale(domain=names, range=palette[: len(names)]))
    lines = alt.Chart(data).transform_filter("datum.k_ref == k_ref").transform_calculate(
        curve=f"{json.dumps(names)}[datum.c]").mark_line(strokeWidth=2, clip=True).encode(
        x=step_x(),
        y=alt.Y("p:Q", title="expected reward p", scale=alt.Scale(domain=[-0.05, 1.05], nice=False)),
        color=colour, strokeDash=alt.StrokeDash("curve:N", legend=None, scale=alt.Scale(
            domain=names, range=dashes[: len(names)])),
        detail="curve:N",
    ).properties(name="bandit_curves")
    # three short lines at the bottom left, inside the plot (the runs stay above p = 0.4): what was
    # measured, what the linearisation predicts, its numbers
    label = alt.Chart(grid["labels"][["k_ref", "measured", "predicted", "detail"]]).transform_filter(
        "datum.k_ref == k_ref")
    measured = label.mark_text(
        align="left", baseline="bottom", fontSize=13, fontWeight="bold", dx=6, dy=-40, limit=width - 12).encode(
        x=alt.value(0), y=alt.value(height), text="measured:N").properties(name="bandit_measured_label")
    predicted = label.mark_text(
        align="left", baseline="bottom", fontSize=12, dx=6, dy=-23, limit=width - 12).encode(
        x=alt.value(0), y=alt.value(height), text="predicted:N").properties(name="bandit_regime_label")
    detail = label.mark_text(
        align="left", baseline="bottom", fontSize=12, color=NOTE, dx=6, dy=-6, limit=width - 12).encode(
        x=alt.value(0), y=alt.value(height), text="detail:N").properties(name="bandit_detail_label")
    return alt.layer(lines, measured, predicted, detail).add_params(param).properties(
        width=width, height=height, usermeta={"embedOptions": {"renderer": "svg", "actions": False}})
