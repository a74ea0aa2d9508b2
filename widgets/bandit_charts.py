"""Altair charts of the softmax bandit (book chapter "The bandit: where the mean field is exact").

Pure builders: each takes the DataFrames produced by :mod:`grpo_core.bandit`,
:mod:`grpo_core.bandit.thresholds` and :mod:`grpo_core.bandit.sweeps` and returns an Altair chart;
nothing is simulated here.

* :func:`flow_chart` -- the one-dimensional mean-field flow ``F`` against ``p`` (fixed points where
  it crosses zero; std scaling's bistability).
* :func:`k_ref_sweep_chart` -- trajectories across ``K_ref``, one panel each, titled with the
  measured and predicted regimes.
* :func:`threshold_chart` -- measured critical ``eta*K`` (points) against the continuous and exact
  boundaries (lines) of :func:`widgets.oscillator_charts.phase_diagram_data`.
* :func:`g_invariance_chart` -- mean trajectories for several group sizes, one panel per baseline.
* :func:`variance_chart` -- stationary variance against G on log-log axes, measured and predicted.
* :func:`variants_chart` -- trajectories of variants (KL on/off, std scaling, surrogate vs stale score).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from .style import (
    BANDIT_REGIME_COLORS,
    DARK2,
    INK,
    OKABE_ITO,
    WIDTH,
    color_scale,
    group_size_x,
    require_columns,
    step_x,
    two_se_bounds,
)

__all__ = [
    "flow_chart",
    "k_ref_sweep_chart",
    "threshold_chart",
    "g_invariance_chart",
    "variance_chart",
    "variants_chart",
]


def flow_chart(flows: pd.DataFrame, *, width: int = WIDTH["wide"], height: int = 260) -> alt.LayerChart:
    """The reduced flow ``F`` (logit gap per step per unit learning rate) against ``p``.

    Parameters
    ----------
    flows : DataFrame
        Columns ``label``, ``p``, ``F`` (from :func:`grpo_core.bandit.reduced_flow` on a grid).
    width, height : int
        Pixels.

    Returns
    -------
    alt.LayerChart
        Lines per label and the zero line: a fixed point is where a line crosses zero from above.

    Raises
    ------
    ParameterError
        ``flows`` lacks one of its columns above.

    Examples
    --------
    >>> df = pd.DataFrame({"label": "a", "p": [0.5, 0.7, 0.9], "F": [0.5, 0.0, -0.3]})
    >>> isinstance(flow_chart(df), alt.LayerChart)
    True
    """
    require_columns(flows, "flows", ["label", "p", "F"])
    lines = alt.Chart(flows).mark_line().encode(
        x=alt.X("p:Q", title="expected reward p", scale=alt.Scale(domain=[0.5, 1.0])),
        y=alt.Y("F:Q", title="flow F (logit gap per step, per unit eta)"),
        color=alt.Color("label:N", title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=400)),
        tooltip=["label:N", alt.Tooltip("p:Q", format=".3f"), alt.Tooltip("F:Q", format=".4f")],
    )
    zero = alt.Chart(pd.DataFrame({"F": [0.0]})).mark_rule(color="gray", strokeDash=[4, 3]).encode(y="F:Q")
    return (zero + lines).properties(width=width, height=height)


def k_ref_sweep_chart(trajectories: pd.DataFrame, regimes: pd.DataFrame, p_star: float, *, columns: int = 2,
                      width: int = 260, height: int = 150) -> alt.FacetChart:
    """Reward trajectories across ``K_ref`` at fixed ``eta``, ``mu``: one panel per ``K_ref``.

    Parameters
    ----------
    trajectories : DataFrame
        Columns ``k_ref``, ``step``, ``p``, ``kind`` (from :func:`grpo_core.bandit.sweeps.k_ref_sweep`).
    regimes : DataFrame
        Columns ``k_ref``, ``measured``, ``continuous``, ``exact``.
    p_star : float
        Fixed point (dashed rule).
    columns, width, height : int

    Returns
    -------
    alt.FacetChart
        Panel titles "K_ref = k: measured / continuous / exact"; the line colour is the measured regime.

    Raises
    ------
    ParameterError
        ``trajectories`` or ``regimes`` lacks one of its columns above.
    """
    require_columns(trajectories, "trajectories", ["k_ref", "step", "p", "kind"])
    require_columns(regimes, "regimes", ["k_ref", "measured", "continuous", "exact"])
    reg = regimes.set_index("k_ref")
    data = trajectories.copy()
    data["panel"] = [
        f"K_ref = {k}: {reg.measured[k]} (continuous: {reg.continuous[k]}, exact: {reg.exact[k]})"
        for k in data["k_ref"]
    ]
    data["regime"] = [reg.measured[k] for k in data["k_ref"]]
    data["p_star"] = float(p_star)
    order = [f"K_ref = {k}: {reg.measured[k]} (continuous: {reg.continuous[k]}, exact: {reg.exact[k]})"
             for k in reg.index]
    base = alt.Chart(data)
    lines = base.mark_line().encode(
        x=step_x(),
        y=alt.Y("p:Q", title="expected reward p", scale=alt.Scale(zero=False)),
        color=alt.Color("regime:N", title="measured regime", legend=alt.Legend(orient="bottom"),
                        scale=color_scale(BANDIT_REGIME_COLORS)),
        strokeDash=alt.StrokeDash("kind:N", title=None, legend=alt.Legend(orient="bottom")),
        detail="kind:N",
    )
    rule = base.mark_rule(color="gray", strokeDash=[2, 2]).encode(y="mean(p_star):Q")
    return alt.layer(lines, rule).properties(width=width, height=height).facet(
        # Two header lines (the measured regime, then the predictions) so that a panel's label is no
        # wider than the panel and the grid fits a page's content column.
        facet=alt.Facet("panel:N", title=None, sort=order, header=alt.Header(
            labelExpr="[split(datum.value, ' (')[0], '(' + split(datum.value, ' (')[1]]",
            labelLimit=width + 40, labelFontSize=10)),
        columns=columns,
    )


def threshold_chart(measured: pd.DataFrame, boundaries: pd.DataFrame, *, width: int = 300,
                    height: int = 240) -> alt.HConcatChart:
    """Measured critical ``a = eta K`` (points) on the continuous and exact boundaries (lines).

    Parameters
    ----------
    measured : DataFrame
        Columns ``lag``, ``mu``, ``k_ref``, ``measured`` (from
        :func:`grpo_core.bandit.thresholds.threshold_table`).
    boundaries : DataFrame
        Columns ``lag``, ``mu``, ``k_ref``, ``method``, ``a_star`` (from
        :func:`widgets.oscillator_charts.phase_diagram_data`).
    width, height : int

    Returns
    -------
    alt.HConcatChart
        One panel per lag model; log-log axes; colour = mu; solid = exact, dashed = continuous;
        black points = the bandit.

    Raises
    ------
    ParameterError
        ``measured`` or ``boundaries`` lacks one of its columns above.
    """
    require_columns(measured, "measured", ["lag", "mu", "k_ref", "measured"])
    require_columns(boundaries, "boundaries", ["lag", "mu", "k_ref", "method", "a_star"])
    b = boundaries.copy()
    m = measured[np.isfinite(measured["measured"])].rename(columns={"measured": "a_star"})
    m = m.assign(source="bandit (measured)")
    b["mu"] = b["mu"].map(lambda v: f"{v:g}")
    m["mu"] = m["mu"].map(lambda v: f"{v:g}")
    # labelled at the powers of two the data span (a log axis's default labels stopped at 9)
    k_max = float(max(b["k_ref"].max(), m["k_ref"].max() if len(m) else 1))
    x = alt.X("k_ref:Q", title="K_ref (steps)", scale=alt.Scale(type="log", nice=False),
              axis=alt.Axis(values=[2**j for j in range(int(np.log2(k_max)) + 1)], format="d"))
    y = alt.Y("a_star:Q", title="critical eta*K", scale=alt.Scale(type="log"))
    color = alt.Color("mu:N", title="mu")
    panels = []
    for lag in ("constant", "refresh"):
        bl, ml = b[b["lag"] == lag], m[m["lag"] == lag]
        if bl.empty and ml.empty:
            continue
        lines = (
            alt.Chart(bl)
            .mark_line()
            .encode(
                x=x,
                y=y,
                color=color,
                strokeDash=alt.StrokeDash(
                    "method:N",
                    title="prediction",
                    scale=alt.Scale(domain=["exact", "continuous"], range=[[1, 0], [5, 4]]),
                ),
            )
        )
        points = alt.Chart(ml).mark_point(size=60, filled=True, color="black").encode(
            x=x, y=y, shape=alt.Shape("source:N", title=None),
            tooltip=["mu:N", "k_ref:Q", alt.Tooltip("a_star:Q", format=".4f")])
        panels.append(alt.layer(lines, points).properties(width=width, height=height, title=f"{lag} lag"))
    return alt.hconcat(*panels)


def g_invariance_chart(trajectories: pd.DataFrame, *, width: int = 230, height: int = 200) -> alt.FacetChart:
    """Mean trajectories for several group sizes, one panel per baseline.

    Parameters
    ----------
    trajectories : DataFrame
        Columns ``baseline``, ``group_size``, ``step``, ``mean`` (seed mean).
    width, height : int

    Returns
    -------
    alt.FacetChart
        Colour = G (ordinal). With leave-one-out the lines coincide; with the plain mean baseline and
        with std scaling they fan out.

    Raises
    ------
    ParameterError
        ``trajectories`` lacks one of its columns above.
    """
    require_columns(trajectories, "trajectories", ["baseline", "group_size", "step", "mean"])
    order = list(dict.fromkeys(trajectories["baseline"]))
    return alt.Chart(trajectories).mark_line(strokeWidth=1.5).encode(
        x=step_x(),
        y=alt.Y("mean:Q", title="mean expected reward p", scale=alt.Scale(zero=False)),
        color=alt.Color("group_size:O", title="G", scale=alt.Scale(scheme="viridis")),
        tooltip=["baseline:N", "group_size:O", "step:Q", alt.Tooltip("mean:Q", format=".4f")],
    ).properties(width=width, height=height).facet(
        column=alt.Column("baseline:N", title=None, sort=order, header=alt.Header(labelLimit=300)))


def variance_chart(
    variance: pd.DataFrame, *, width: int = WIDTH["half"], height: int = 300
) -> alt.LayerChart:
    """Stationary variance of ``p`` against G, log-log: measured (points, +-2 se) and predicted (lines).

    Parameters
    ----------
    variance : DataFrame
        Columns ``baseline``, ``group_size``, ``variance``, ``variance_se``, ``predicted``.
    width, height : int

    Returns
    -------
    alt.LayerChart
        Measured variance (points) with +-2 se bars, the prediction as dashed lines, per baseline.

    Raises
    ------
    ParameterError
        ``variance`` lacks one of its columns above.
    """
    require_columns(variance, "variance", ["baseline", "group_size", "variance", "variance_se", "predicted"])
    v = variance.copy()
    v["lo"], v["hi"] = two_se_bounds(v["variance"], v["variance_se"])
    x = group_size_x()
    color = alt.Color("baseline:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400))
    pts = alt.Chart(v).mark_point(filled=True, size=60).encode(
        x=x, y=alt.Y("variance:Q", title="stationary Var(p)", scale=alt.Scale(type="log")), color=color,
        tooltip=["baseline:N", "group_size:Q", alt.Tooltip("variance:Q", format=".3e"),
                 alt.Tooltip("predicted:Q", format=".3e")])
    bars = alt.Chart(v).mark_rule().encode(x=x, y="lo:Q", y2="hi:Q", color=color)
    lines = alt.Chart(v).mark_line(strokeDash=[5, 3]).encode(x=x, y="predicted:Q", color=color)
    return alt.layer(lines, bars, pts).properties(width=width, height=height)


#: The colours of :func:`variants_chart`'s curves, in the order of the frame's labels.
VARIANT_COLORS = [OKABE_ITO["blue"], OKABE_ITO["vermillion"], OKABE_ITO["green"], OKABE_ITO["orange"],
                  OKABE_ITO["sky"], OKABE_ITO["pink"], DARK2["purple"], INK, DARK2["brown"]]


def variants_chart(
    frame: pd.DataFrame, *, width: int = 240, height: int = 190, y: str = "p"
) -> alt.FacetChart:
    """Trajectories of bandit variants, one panel per ``panel`` value.

    Parameters
    ----------
    frame : DataFrame
        From :func:`grpo_core.bandit.sweeps.compare_variants` (``panel``, ``label``, ``kind``,
        ``step``, and the column ``y``).
    width, height : int
    y : str
        Column to plot (``p``, ``kl`` or ``clip_ratio``).

    Returns
    -------
    alt.FacetChart
        One panel per ``panel``; colour by ``label``, dash by ``kind``, against the step.

    Raises
    ------
    ParameterError
        ``frame`` lacks one of its columns above.
    """
    require_columns(frame, "frame", ["panel", "label", "kind", "step", y])
    titles = {"p": "expected reward p", "kl": "KL(pi || pi_ref) (nats)", "clip_ratio": "clipped fraction"}
    order = list(dict.fromkeys(frame["panel"]))
    labels = list(dict.fromkeys(frame["label"]))
    colours = (VARIANT_COLORS * (len(labels) // len(VARIANT_COLORS) + 1))[: len(labels)]
    return alt.Chart(frame).mark_line().encode(
        x=step_x(),
        y=alt.Y(f"{y}:Q", title=titles.get(y, y)),
        # distinct colours in the frame's order (the default scheme gave the last panel's two
        # curves, stale score and clipped surrogate, two near-identical teals)
        color=alt.Color("label:N", title=None, scale=alt.Scale(domain=labels, range=colours),
                        legend=alt.Legend(orient="bottom", columns=3, labelLimit=300)),
        strokeDash=alt.StrokeDash("kind:N", title=None, legend=alt.Legend(orient="bottom")),
        detail="kind:N",
        tooltip=["label:N", "kind:N", "step:Q", alt.Tooltip(f"{y}:Q", format=".4f")],
    ).properties(width=width, height=height).facet(
        column=alt.Column("panel:N", title=None, sort=order, header=alt.Header(labelLimit=300)))
