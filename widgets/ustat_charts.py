"""Altair charts of the U-statistic view and of the group-size choice.

Book chapters "The GRPO gradient is a U-statistic" and "Choosing the group size". Every builder
is a pure function returning an Altair chart; the numbers come from :mod:`grpo_core.groupsize.ustat` and
:mod:`grpo_core.groupsize`.

* :func:`mse_chart` -- MSE against G (log-log) for the five estimators: Monte Carlo points with
  error bars over the exact curves.
* :func:`gap_chart` -- the oracle's MSE (slope -1) and the GRPO-minus-oracle gap (slope -2).
* :func:`hoeffding_chart` -- the share of the degenerate Hoeffding part in the leave-one-out MSE.
* :func:`bias_variance_chart` -- the mean baseline's variance and squared bias against the
  unbiased estimators.
* :func:`law_terms_chart` -- the three terms of N * MSE = c1 G + c2 + c3/(G-1) and their minimum.
* :func:`group_size_slider_chart` -- THE static slider chart: params ``budget`` and ``spread``
  move the predicted MSE curve and G* in the page's Vega runtime (no kernel); text mark named
  ``g_star_label``.
* :func:`study_chart`, :func:`best_g_path_chart` -- the fixed-budget training study.
* :func:`explorer_mse_chart` -- the chart of :mod:`widgets.group_size_explorer`.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.errors import ParameterError
from grpo_core.groupsize import GroupSizeConstants, optimal_group_size
from grpo_core.groupsize.ustat import BanditMoments
from grpo_core.validation import check_integer

from .style import ACCENT, DARK2, GREY, LOG2, WIDTH, group_size_x, require_columns, two_se_bounds
from .vega_expr import Expr, fn, var, where

__all__ = [
    "ESTIMATOR_LABELS",
    "ESTIMATOR_COLORS",
    "SLIDER_PARAMS",
    "ORACLE_DASH",
    "GROUP_SIZE_DEFAULTS",
    "mse_chart",
    "gap_chart",
    "hoeffding_chart",
    "bias_variance_chart",
    "law_terms_chart",
    "law_expressions",
    "group_size_slider_chart",
    "study_chart",
    "best_g_path_chart",
    "explorer_mse_chart",
]

#: Legend labels of the estimators of :data:`grpo_core.groupsize.ustat.ESTIMATORS` (and the gap).
ESTIMATOR_LABELS = {
    "vanilla": "vanilla (no baseline)",
    "mean": "mean baseline (GRPO)",
    "leave_one_out": "leave-one-out (U-statistic)",
    "oracle": "oracle (true value V)",
    "std": "std-scaled GRPO (vs g/sd)",
    "gap": "leave-one-out − oracle",
}
ESTIMATOR_COLORS = {
    "vanilla": GREY,
    "mean": DARK2["orange"],
    "leave_one_out": DARK2["green"],
    "oracle": ACCENT,
    "std": DARK2["purple"],
    "gap": DARK2["magenta"],
}
#: Dash pattern of the oracle's exact line in :func:`mse_chart` (drawn on top of the others).
ORACLE_DASH = [7, 4]
#: Names of the static slider chart's params (a browser test moves them).
SLIDER_PARAMS = ("log2_budget", "budget", "spread")
#: The one default setting of the group-size pool wherever the book shows it (the group-size
#: chapter's pool, its static slider chart, the explorers page and the live explorer): mean initial
#: success probability 0.2, difficulty spread (sd of p) 0.1, N = 1024 rollouts per step.
GROUP_SIZE_DEFAULTS = {"mean": 0.2, "spread": 0.1, "budget": 1024}


def _color(names) -> alt.Color:
    names = list(names)
    return alt.Color(
        "label:N",
        title=None,
        scale=alt.Scale(
            domain=[ESTIMATOR_LABELS[n] for n in names], range=[ESTIMATOR_COLORS[n] for n in names]
        ),
        legend=alt.Legend(orient="right"),
    )


def _check_mc(df: pd.DataFrame) -> None:
    require_columns(df, "df", ["group_size", "estimator", "mse", "mse_se", "exact"],
                    source="grpo_core.groupsize.ustat.monte_carlo_mse")


# ----------------------------------------------------------------------------------------------
# The U-statistic chapter
# ----------------------------------------------------------------------------------------------


def mse_chart(
    df: pd.DataFrame, *, relative: bool = True, width: int = WIDTH["half"], height: int = 320
) -> alt.LayerChart:
    """MSE of the five estimators against G, log-log: Monte Carlo points over exact curves.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`grpo_core.groupsize.ustat.monte_carlo_mse` (the ``gap`` rows are ignored).
    relative : bool
        Divide by the squared norm of each estimator's target (||g||^2, or ||g/sd||^2 for the
        std-scaled one) so that all five share one axis.
    width, height : int
        Plot size in pixels.

    Returns
    -------
    alt.LayerChart
        Points with +/- 2 standard-error bars (Monte Carlo) and lines (exact; the std-scaled
        estimator's exact curve when the rewards are binary). The oracle's line nearly coincides
        with the mean baseline's from G = 8 on, so it is drawn last, on top of every other mark,
        dashed (:data:`ORACLE_DASH`, also in the legend) and labelled "oracle" beside its curve
        (the layers named ``oracle_line`` and ``oracle_label``).

    Raises
    ------
    ParameterError
        ``df`` lacks the Monte Carlo columns.

    Examples
    --------
    >>> from grpo_core.groupsize.ustat import monte_carlo_mse
    >>> df = monte_carlo_mse([0.2, 0.8], [1.0, 0.0], [2, 4], 500)
    >>> type(mse_chart(df)).__name__
    'LayerChart'
    """
    _check_mc(df)
    d = df[df.estimator != "gap"].copy()
    scale = d["mse"] / d["relative_mse"] if relative else 1.0
    d["y"] = d["mse"] / scale
    lo, hi = two_se_bounds(d["mse"], d["mse_se"])
    d["lo"], d["hi"] = lo / scale, hi / scale
    d["y_exact"] = d["exact"] / scale
    d["label"] = d["estimator"].map(ESTIMATOR_LABELS)
    names = [n for n in ESTIMATOR_LABELS if n in set(d.estimator)]
    title = "MSE / ||target||²" if relative else "MSE  E||ĝ − g||²"
    x = group_size_x()
    # one legend for colour and dash: the oracle's entry is dashed like its line
    dash = alt.StrokeDash("label:N", title=None, legend=alt.Legend(orient="right", symbolType="stroke"),
                          scale=alt.Scale(domain=[ESTIMATOR_LABELS[n] for n in names],
                                          range=[ORACLE_DASH if n == "oracle" else [1, 0] for n in names]))
    base = alt.Chart(d).encode(x=x, color=_color(names))
    exact = base.transform_filter("isValid(datum.y_exact)").encode(
        y=alt.Y("y_exact:Q", title=title, scale=alt.Scale(type="log")), strokeDash=dash)
    is_oracle = alt.datum.estimator == "oracle"
    lines = exact.transform_filter(~is_oracle).mark_line(strokeWidth=1.8, opacity=0.8)
    points = base.mark_point(filled=True, size=45).encode(
        y="y:Q",
        shape=alt.Shape("label:N", legend=None),
        tooltip=["estimator", "group_size", alt.Tooltip("mse:Q", format=".3e"),
                 alt.Tooltip("exact:Q", format=".3e"), alt.Tooltip("mse_se:Q", format=".1e")])
    bars = base.mark_rule().encode(y="lo:Q", y2="hi:Q")
    # the oracle last, on top: it nearly coincides with the mean baseline from G = 8 on
    oracle = exact.transform_filter(is_oracle).mark_line(strokeWidth=2.6).properties(name="oracle_line")
    g_label = int(d.group_size.max()) // 4 if d.group_size.max() >= 8 else int(d.group_size.max())
    label = (base.transform_filter(is_oracle & (alt.datum.group_size == g_label))
             .transform_filter("isValid(datum.y_exact)")
             .mark_text(text="oracle", align="right", baseline="top", dx=-6, dy=4, fontSize=12,
                        fontWeight="bold")
             .encode(y="y_exact:Q").properties(name="oracle_label"))
    return alt.layer(lines, bars, points, oracle, label).properties(width=width, height=height)


def gap_chart(df: pd.DataFrame, *, width: int = WIDTH["half"], height: int = 280) -> alt.LayerChart:
    """The oracle's MSE and the gap E||g_loo - g_oracle||^2 against G, log-log.

    The oracle falls as 1/G (slope -1); the gap, the degenerate Hoeffding part, as 1/(G(G-1))
    (slope -2 for large G, steeper at small G). Points: Monte Carlo; lines: exact.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`grpo_core.groupsize.ustat.monte_carlo_mse` with ``oracle`` and ``gap`` rows.
    width, height : int

    Returns
    -------
    alt.LayerChart
        Oracle and gap: exact lines, Monte Carlo points with +-2 se bars (floored), log-log.

    Raises
    ------
    ParameterError
        ``df`` lacks the oracle or gap rows.

    Examples
    --------
    >>> from grpo_core.groupsize.ustat import monte_carlo_mse
    >>> df = monte_carlo_mse([0.2, 0.8], [1.0, 0.0], [2, 4], 500, estimators=("oracle",))
    >>> type(gap_chart(df)).__name__
    'LayerChart'
    """
    _check_mc(df)
    d = df[df.estimator.isin(["oracle", "gap"])].copy()
    if set(d.estimator) != {"oracle", "gap"}:
        raise ParameterError(
            "df", "`df` needs 'oracle' and 'gap' rows (monte_carlo_mse with the oracle estimator)"
        )
    d["label"] = d["estimator"].map(ESTIMATOR_LABELS)
    d["lo"], d["hi"] = two_se_bounds(d["mse"], d["mse_se"])
    x = group_size_x()
    base = alt.Chart(d).encode(x=x, color=_color(["oracle", "gap"]))
    lines = base.mark_line(strokeWidth=1.8).encode(
        y=alt.Y("exact:Q", title="mean squared error", scale=alt.Scale(type="log"))
    )
    points = base.mark_point(filled=True, size=45).encode(y="mse:Q")
    bars = base.mark_rule().encode(y="lo:Q", y2="hi:Q")
    return alt.layer(lines, bars, points).properties(width=width, height=height)


def hoeffding_chart(
    df: pd.DataFrame, moments: BanditMoments, *, width: int = 460, height: int = 260
) -> alt.LayerChart:
    """Share of the degenerate (second-order) Hoeffding part in the leave-one-out MSE, against G.

    Exact line: (c3/(G(G-1))) / (tr Sigma_oracle/G + c3/(G(G-1))); points: the Monte Carlo gap
    divided by the Monte Carlo leave-one-out MSE.

    Parameters
    ----------
    df : pandas.DataFrame
        :func:`grpo_core.groupsize.ustat.monte_carlo_mse` output with ``leave_one_out`` and ``gap`` rows.
    moments : grpo_core.groupsize.ustat.BanditMoments
        The same prompt's exact moments.
    width, height : int

    Returns
    -------
    alt.LayerChart
        The exact share (line) and the Monte Carlo share (points), in percent.

    Raises
    ------
    ParameterError
        Missing rows.

    Examples
    --------
    >>> from grpo_core.groupsize.ustat import bandit_moments, monte_carlo_mse
    >>> df = monte_carlo_mse([0.2, 0.8], [1.0, 0.0], [2, 4], 500, estimators=("leave_one_out",))
    >>> type(hoeffding_chart(df, bandit_moments([0.2, 0.8], [1.0, 0.0]))).__name__
    'LayerChart'
    """
    _check_mc(df)
    loo = df[df.estimator == "leave_one_out"].set_index("group_size")
    gap = df[df.estimator == "gap"].set_index("group_size")
    if loo.empty or gap.empty:
        raise ParameterError("df", "`df` needs 'leave_one_out' and 'gap' rows")
    sizes = loo.index.to_numpy()
    grid = np.unique(np.round(np.geomspace(sizes.min(), sizes.max(), 80)).astype(int))
    first, deg = moments.hoeffding_variances(grid)
    exact = pd.DataFrame({"group_size": grid, "share": deg / (first + deg)})
    mc = pd.DataFrame({"group_size": sizes, "share": (gap.mse / loo.mse).to_numpy()})
    x = group_size_x()
    line = alt.Chart(exact).mark_line(color=ESTIMATOR_COLORS["gap"], strokeWidth=2).encode(
        x=x, y=alt.Y("share:Q", title="degenerate share of the leave-one-out MSE", axis=alt.Axis(format="%")))
    points = alt.Chart(mc).mark_point(filled=True, size=50, color="black").encode(x=x, y="share:Q")
    return alt.layer(line, points).properties(width=width, height=height)


def bias_variance_chart(
    moments: BanditMoments, group_sizes, *, width: int = WIDTH["half"], height: int = 280
) -> alt.Chart:
    """The mean baseline's bias-variance trade-off against the unbiased estimators (exact).

    Every curve is divided by the oracle's MSE (so the oracle is the line at 1): the mean
    baseline's variance ((G-1)/G)^2 Var_loo, its squared bias ||g||^2/G^2, their sum, and the
    leave-one-out MSE.

    Parameters
    ----------
    moments : grpo_core.groupsize.ustat.BanditMoments
    group_sizes : sequence of int, each >= 2
    width, height : int

    Returns
    -------
    alt.Chart
        Over the oracle's MSE: leave-one-out, oracle and mean-baseline MSE, its variance and bias² (dashed).

    Raises
    ------
    ParameterError
        Group sizes below 2.

    Examples
    --------
    >>> from grpo_core.groupsize.ustat import bandit_moments
    >>> type(bias_variance_chart(bandit_moments([0.2, 0.8], [1.0, 0.0]), [2, 4, 8])).__name__
    'Chart'
    """
    g = np.asarray([check_integer("group_sizes", x, low=2) for x in np.atleast_1d(group_sizes)], dtype=float)
    loo = moments.mse("leave_one_out", g)
    oracle = moments.mse("oracle", g)
    rows = {
        "leave-one-out: MSE": loo,
        "oracle: MSE": oracle,
        "mean baseline: MSE": moments.mse("mean", g),
        "mean baseline: variance": ((g - 1) / g) ** 2 * loo,
        "mean baseline: bias²": moments.grad_sq / g**2,
    }
    d = pd.concat([pd.DataFrame({"group_size": g, "value": v / oracle, "curve": k}) for k, v in rows.items()])
    domain = list(rows)
    colors = [ESTIMATOR_COLORS["leave_one_out"], ESTIMATOR_COLORS["oracle"], ESTIMATOR_COLORS["mean"],
              ESTIMATOR_COLORS["mean"], ESTIMATOR_COLORS["mean"]]
    dashes = [[1, 0], [1, 0], [1, 0], [6, 3], [2, 2]]
    return alt.Chart(d).mark_line(strokeWidth=2.2).encode(
        x=group_size_x(),
        y=alt.Y("value:Q", title="squared error / oracle's MSE", scale=alt.Scale(type="log")),
        color=alt.Color("curve:N", title=None, scale=alt.Scale(domain=domain, range=colors)),
        strokeDash=alt.StrokeDash("curve:N", title=None, scale=alt.Scale(domain=domain, range=dashes)),
        tooltip=["curve", "group_size", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=width, height=height)


# ----------------------------------------------------------------------------------------------
# The group-size chapter
# ----------------------------------------------------------------------------------------------


def law_expressions() -> dict[str, Expr]:
    """The minibatch MSE law as Vega expressions (and their numpy twins, for the tests).

    Variables: ``G`` (``datum.G``), ``c1``, ``c2``, ``c3`` (``datum.c1`` ...) and the param
    ``budget``.

    Returns
    -------
    dict of str -> Expr
        ``mse``: (G/N)(c1 + c2/G + c3/(G(G-1))), the exact law at B = N/G;
        ``g_star``: 1 + sqrt(c3/c1) (the exact optimum; 1e9 when c1 = 0).

    Examples
    --------
    >>> e = law_expressions()
    >>> float(e["mse"].evaluate(G=4.0, c1=1.0, c2=2.0, c3=12.0, budget=32.0))
    0.3125
    """
    g = var("G", "datum.G")
    c1, c2, c3 = var("c1", "datum.c1"), var("c2", "datum.c2"), var("c3", "datum.c3")
    budget = var("budget")
    mse = (c1 + c2 / g + c3 / (g * (g - 1.0))) * g / budget
    g_star = where(c1 > 0.0, 1.0 + fn.sqrt(c3 / where(c1 > 0.0, c1, 1.0)), 1e9)
    return {"mse": mse, "g_star": g_star}


def group_size_slider_chart(
    constants: pd.DataFrame,
    *,
    budget: int = GROUP_SIZE_DEFAULTS["budget"],
    spread: float = GROUP_SIZE_DEFAULTS["spread"],
    budget_range: tuple[int, int] = (64, 4096),
    width: int = 500,
    height: int = 300,
) -> alt.LayerChart:
    """The static slider chart: budget and difficulty spread move the predicted MSE and G*.

    Two sliders, bound to the top-level params ``log2_budget`` (log2 of N: one notch per doubling,
    N = ``budget`` = ``2 ** log2_budget``, a param computed from it) and ``spread``
    (standard deviation of the prompts' initial success probability; snapped to the rows of
    ``constants``) drive the exact law (:func:`law_expressions`) in the page's Vega runtime: the
    minibatch MSE against G at B = N/G (line), the powers of two that divide N (points), a rule
    at G* = 1 + sqrt(c3/c1), and text marks named ``g_star_label`` (``"G* = 7.8"``, with a note
    when G* > N), ``constants_label`` and ``budget_label`` (``"N = 1024 rollouts per step"``).
    The budget slider moves the curve down as 1/N and leaves G* where it is (the paper's point);
    the spread slider moves G*.

    Parameters
    ----------
    constants : pandas.DataFrame
        :func:`grpo_core.groupsize.constants_by_spread` output on an evenly spaced grid of
        spreads with step 0.01 (the slider's step).
    budget : int
        Initial N (a power of two inside ``budget_range``).
    spread : float
        Initial spread, one of the grid's spreads (default: the book's default pool,
        :data:`GROUP_SIZE_DEFAULTS`).
    budget_range : (int, int)
        Slider range of N (powers of two).
    width, height : int

    Returns
    -------
    alt.LayerChart
        With params ``log2_budget``, ``budget`` and ``spread``; vega-embed is asked for the SVG renderer so that
        the text marks are ``<text>`` elements a browser test can read.

    Raises
    ------
    ParameterError
        Missing columns, a grid not on 0.01 steps, a ``budget_range`` or ``budget`` that is not
        powers of two, or initial values outside the sliders.

    Examples
    --------
    >>> from grpo_core.groupsize import constants_by_spread
    >>> k = constants_by_spread(np.round(np.arange(0.05, 0.16, 0.01), 2), mean=0.2)
    >>> spec = group_size_slider_chart(k).to_dict()
    >>> sorted(p["name"] for p in spec["params"])
    ['budget', 'log2_budget', 'spread']
    """
    require_columns(constants, "constants", ["spread", "c1", "c2", "c3"], source="constants_by_spread")
    table = constants[["spread", "c1", "c2", "c3"]].copy()
    table["key"] = np.round(table["spread"] * 100).astype(int)
    if not np.allclose(table["key"] / 100, table["spread"], atol=1e-9):
        raise ParameterError("constants", "`constants` spreads must lie on a 0.01 grid (the slider's step)")
    lo_n, hi_n = budget_range
    if not all(isinstance(n, int | np.integer) and n >= 2 and n & (n - 1) == 0 for n in budget_range) or lo_n >= hi_n:
        raise ParameterError("budget_range",
                             f"`budget_range` must be two powers of two, low < high; got {budget_range}")
    n0 = check_integer("budget", budget, low=lo_n, high=hi_n)
    if n0 & (n0 - 1):
        raise ParameterError("budget", f"`budget` must be a power of two (the slider's notches); got {n0}")
    sp0 = float(spread)
    if not any(abs(sp0 - table["spread"]) < 1e-9):
        raise ParameterError("spread", f"`spread` must be one of the grid's spreads; got {sp0}")
    params = [
        # the slider moves over log2 N (64 to 4096 is six doublings, one notch each); N itself is a
        # param computed from it, and the chart's budget_label shows it
        alt.param(name="log2_budget", value=int(np.log2(n0)),
                  bind=alt.binding_range(min=int(np.log2(lo_n)), max=int(np.log2(hi_n)), step=1,
                                         name="log₂ N (rollouts per step) ")),
        alt.param(name="budget", expr="pow(2, log2_budget)"),
        alt.param(name="spread", value=sp0,
                  bind=alt.binding_range(min=float(table["spread"].min()), max=float(table["spread"].max()),
                                         step=0.01, name="difficulty spread (sd of p) ")),
    ]
    ex = law_expressions()
    lookup = alt.LookupData(
        data=alt.Data(values=table.to_dict("records")), key="key", fields=["c1", "c2", "c3"]
    )
    g_max = hi_n
    steps = int(np.log2(g_max) * 24)
    curve = (
        alt.Chart(alt.sequence(0, steps + 1, 1, as_="i"))
        .transform_calculate(G="pow(2, 1 + datum.i / 24)", key="round(spread * 100)")
        .transform_filter("datum.G <= budget")
        .transform_lookup(lookup="key", from_=lookup)
        .transform_calculate(mse=str(ex["mse"]))
    )
    mse_all = _slider_mse_range(table, lo_n, hi_n)
    x = group_size_x("G", "group size G (B = N/G prompts)", domain=[2, g_max])
    y = alt.Y(
        "mse:Q", title="minibatch gradient MSE (exact law)", scale=alt.Scale(type="log", domain=mse_all)
    )
    line = curve.mark_line(strokeWidth=2.5, color=ESTIMATOR_COLORS["leave_one_out"], clip=True).encode(
        x=x, y=y).properties(name="mse_curve")
    pow2 = (
        alt.Chart(alt.sequence(1, int(np.log2(g_max)) + 1, 1, as_="j"))
        .transform_calculate(G="pow(2, datum.j)", key="round(spread * 100)")
        .transform_filter("datum.G <= budget && budget % datum.G == 0")
        .transform_lookup(lookup="key", from_=lookup)
        .transform_calculate(mse=str(ex["mse"]))
        .mark_point(filled=True, size=50, color="black", clip=True)
        .encode(x="G:Q", y="mse:Q", tooltip=[alt.Tooltip("G:Q"), alt.Tooltip("mse:Q", format=".2e")])
        .properties(name="feasible_points")
    )
    one = (
        alt.Chart(alt.Data(values=[{"_": 0}]))
        .transform_calculate(key="round(spread * 100)")
        .transform_lookup(lookup="key", from_=lookup)
        .transform_calculate(gstar=str(ex["g_star"]))
    )
    rule = one.transform_filter("datum.gstar <= 4096").mark_rule(strokeDash=[5, 4], color="#444").encode(
        x="gstar:Q").properties(name="g_star_rule")
    g_text = (
        one.transform_calculate(
            label="datum.gstar > budget"
            " ? 'G* = ' + format(datum.gstar, '.1f') + ' > N: one prompt per step (B = 1)'"
            " : 'G* = ' + format(datum.gstar, '.1f')"
            " + ' (B = N/G* = ' + format(budget / datum.gstar, '.0f')"
            " + (round(budget / datum.gstar) == 1 ? ' prompt)' : ' prompts)')"
        )
        .mark_text(align="left", baseline="bottom", fontSize=16, fontWeight="bold")
        .encode(x=alt.value(0), y=alt.value(-26), text="label:N")
        .properties(name="g_star_label")
    )
    c_text = (
        one.transform_calculate(
            label="'c1 = ' + format(datum.c1, '.2e') + ',  c2 = ' + format(datum.c2, '.3f')"
            " + ',  c3 = ' + format(datum.c3, '.3f')"
        )
        .mark_text(align="left", baseline="bottom", fontSize=12, color="#444")
        .encode(x=alt.value(0), y=alt.value(-8), text="label:N")
        .properties(name="constants_label")
    )
    n_text = (
        alt.Chart(alt.Data(values=[{"_": 0}]))
        .transform_calculate(label="'N = ' + format(budget, 'd') + ' rollouts per step'")
        .mark_text(align="right", baseline="bottom", fontSize=13)
        .encode(x=alt.value(width), y=alt.value(-8), text="label:N")
        .properties(name="budget_label")
    )
    return alt.layer(line, pow2, rule, g_text, c_text, n_text).add_params(*params).properties(
        width=width, height=height, usermeta={"embedOptions": {"renderer": "svg", "actions": False}})


def _slider_mse_range(table: pd.DataFrame, lo_n: int, hi_n: int) -> list[float]:
    """A fixed y-domain covering every slider position (so moving the budget visibly moves the curve)."""
    from grpo_core.groupsize import minibatch_mse

    g = 2.0 ** np.arange(1, int(np.log2(hi_n)) + 1)
    vals = []
    for row in table.itertuples():
        for n in (lo_n, hi_n):
            gg = g[g <= n]
            vals.append(minibatch_mse(gg, row.c1, row.c2, row.c3, num_prompts=n / gg))
    v = np.concatenate(vals)
    return [float(10 ** np.floor(np.log10(v.min()))), float(10 ** np.ceil(np.log10(v.max())))]


def law_terms_chart(constants: GroupSizeConstants, *, max_group_size: int = 1024, width: int = WIDTH["half"],
                    height: int = 300) -> alt.LayerChart:
    """The three terms of N * MSE = c1 G + c2 + c3/(G-1) against G, their sum and its minimum.

    Parameters
    ----------
    constants : grpo_core.groupsize.GroupSizeConstants
    max_group_size : int, >= 4
        Right end of the G axis.
    width, height : int

    Returns
    -------
    alt.LayerChart
        The three terms and their sum against G (log-log), the minimum G* marked.

    Raises
    ------
    ParameterError
        ``max_group_size`` < 4.

    Examples
    --------
    >>> from grpo_core.groupsize import GroupSizeConstants
    >>> type(law_terms_chart(GroupSizeConstants(0.01, 0.1, 0.2))).__name__
    'LayerChart'
    """
    top = check_integer("max_group_size", max_group_size, low=4)
    g = np.geomspace(2, top, 120)
    k = constants
    terms = {
        "c1·G (between prompts)": k.c1 * g,
        "c2 (oracle)": np.full_like(g, k.c2),
        "c3/(G−1) (second order)": k.c3 / (g - 1),
        "total": k.c1 * g + k.c2 + k.c3 / (g - 1),
    }
    d = pd.concat([pd.DataFrame({"G": g, "value": v, "term": t}) for t, v in terms.items()])
    domain = list(terms)
    colors = [DARK2["orange"], ESTIMATOR_COLORS["oracle"], ESTIMATOR_COLORS["gap"], "black"]
    lines = alt.Chart(d).mark_line(strokeWidth=2).encode(
        x=group_size_x("G"),
        y=alt.Y("value:Q", title="N × MSE (per rollout)", scale=alt.Scale(type="log")),
        color=alt.Color("term:N", title=None, scale=alt.Scale(domain=domain, range=colors)),
    )
    gs = optimal_group_size(k.c1, k.c3)
    layers = [lines]
    if np.isfinite(gs) and gs <= top:
        star = pd.DataFrame({"G": [gs], "label": [f"G* = {gs:.1f}"]})
        layers.append(alt.Chart(star).mark_rule(strokeDash=[5, 4], color="#444").encode(x="G:Q"))
        layers.append(alt.Chart(star).mark_text(align="left", dx=4, dy=-6, fontSize=12).encode(
            x="G:Q", y=alt.value(12), text="label:N"))
    return alt.layer(*layers).properties(width=width, height=height)


def study_chart(summary: pd.DataFrame, g_star: float | None = None, *, width: int = 260,
                height: int = 240) -> alt.FacetChart:
    """Fixed-budget training study: reward against G at each checkpoint, relative to the best G.

    The y-axis is the reward minus the best group size's reward at the same budget and step (so
    checkpoints with very different rewards share one axis and the best G sits at 0), with
    +/- 2 standard-error bars; one panel per budget; a dashed rule at the predicted G*.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`grpo_core.groupsize.summarise_study` output.
    g_star : float, optional
        Predicted optimum to mark.
    width, height : int
        Size of each panel.

    Returns
    -------
    alt.FacetChart
        One panel per budget: reward minus the best G's, +-2 se bars, one line per checkpoint.

    Raises
    ------
    ParameterError
        ``summary`` lacks one of its columns above.

    Examples
    --------
    >>> s = pd.DataFrame({"budget": 8, "step": 1, "group_size": [2, 4], "reward": [0.5, 0.6],
    ...                   "reward_se": 0.01, "best": [False, True]})
    >>> type(study_chart(s, 3.0)).__name__
    'FacetChart'
    """
    require_columns(summary, "summary", ["budget", "step", "group_size", "reward", "reward_se"],
                    source="summarise_study")
    d = summary.copy()
    top = d.groupby(["budget", "step"])["reward"].transform("max")
    d["delta"] = d["reward"] - top
    d["lo"], d["hi"] = two_se_bounds(d["delta"], d["reward_se"], floor=None)
    d["checkpoint"] = "step " + d["step"].astype(str)
    order = [f"step {s}" for s in sorted(d["step"].unique())]
    x = group_size_x()
    # ordered and far apart (viridis put two neighbouring checkpoints in two teals)
    ramp = ["#440154", "#31688e", "#35b779", "#e3a800", "#d55e00", "#cc79a7"]
    scale = (alt.Scale(domain=order, range=ramp[: len(order)]) if len(order) <= len(ramp)
             else alt.Scale(scheme="viridis"))
    color = alt.Color("checkpoint:N", sort=order, title="checkpoint", scale=scale)
    base = alt.Chart().encode(x=x, color=color)
    layers = [
        base.mark_line(point=True).encode(
            y=alt.Y("delta:Q", title="reward − best G's reward"),
            tooltip=["budget", "step", "group_size", alt.Tooltip("reward:Q", format=".4f"),
                     alt.Tooltip("reward_se:Q", format=".1e")]),
        base.mark_rule(opacity=0.6).encode(y="lo:Q", y2="hi:Q"),
    ]
    if g_star is not None and np.isfinite(g_star):
        layers.append(alt.Chart().transform_calculate(G=f"{float(g_star)}").mark_rule(
            strokeDash=[5, 4], color="#444").encode(x="G:Q"))
    return alt.layer(*layers, data=d).properties(width=width, height=height).facet(
        column=alt.Column("budget:O", title="rollout budget N per step"))


def best_g_path_chart(path: pd.DataFrame, *, width: int = WIDTH["half"], height: int = 260) -> alt.LayerChart:
    """Predicted G* along training against the empirically best G at each checkpoint.

    Per budget: the predicted G* (dashed, diamonds), the empirically best G (dots) and the range
    of G within two standard errors of it (bars).

    Parameters
    ----------
    path : pandas.DataFrame
        Columns ``step``, ``budget``, ``g_star`` (predicted, from the constants at the
        checkpoint's policy) and ``best_g`` (the study's best), ``tied_low`` / ``tied_high``
        (range of G within two standard errors of the best).
    width, height : int

    Returns
    -------
    alt.LayerChart
        Per checkpoint and budget: predicted G* (diamonds), best G (dots), the tied range (bar).

    Raises
    ------
    ParameterError
        ``path`` lacks one of its columns above.

    Examples
    --------
    >>> p = pd.DataFrame({"step": [0, 10], "budget": 64, "g_star": [7.0, 9.0], "best_g": [8, 8],
    ...                   "tied_low": [4, 8], "tied_high": [16, 16]})
    >>> type(best_g_path_chart(p)).__name__
    'LayerChart'
    """
    require_columns(path, "path", ["step", "budget", "g_star", "best_g", "tied_low", "tied_high"])
    d = path.copy()
    d["N"] = "N = " + d["budget"].astype(str)
    x = alt.X("step:O", title="checkpoint (optimizer step)", axis=alt.Axis(labelAngle=0))
    y = alt.Y("g_star:Q", title="group size G", scale=alt.Scale(**LOG2))
    color = alt.Color("N:N", title="rollout budget")
    pred = (
        alt.Chart(d)
        .mark_line(strokeDash=[5, 4], point=alt.OverlayMarkDef(shape="diamond", size=50))
        .encode(
            x=x,
            y=y,
            color=color,
            xOffset=alt.XOffset("N:N"),
            tooltip=["budget", "step", alt.Tooltip("g_star:Q", format=".1f", title="predicted G*")],
        )
    )
    band = alt.Chart(d).mark_rule(strokeWidth=7, opacity=0.3).encode(
        x=x, y="tied_low:Q", y2="tied_high:Q", color=color, xOffset=alt.XOffset("N:N"))
    best = alt.Chart(d).mark_point(filled=True, size=70).encode(
        x=x, y="best_g:Q", color=color, xOffset=alt.XOffset("N:N"),
        tooltip=["budget", "step", "best_g", "tied_low", "tied_high"])
    return alt.layer(band, best, pred).properties(width=width, height=height)


def explorer_mse_chart(view: dict, *, width: int = WIDTH["half"], height: int = 280) -> alt.LayerChart:
    """The group-size explorer's chart: exact minibatch MSE against G at the explorer's budget.

    Parameters
    ----------
    view : dict
        :func:`widgets.group_size_explorer.compute_group_size_view` output: ``curves``
        (``group_size``, ``estimator``, ``mse``), ``g_star_exact``, ``best_g``, ``group_size``,
        ``budget``.
    width, height : int

    Returns
    -------
    alt.LayerChart
        Lines per estimator (leave-one-out, mean baseline), a rule at G*, a ring at the chosen G.

    Raises
    ------
    ParameterError
        ``view`` lacks a key.

    Examples
    --------
    >>> v = {"curves": pd.DataFrame({"group_size": [2, 4], "estimator": "leave_one_out", "mse": [1.0, 0.5]}),
    ...      "g_star_exact": 3.0, "best_g": 4, "group_size": 2, "budget": 8}
    >>> type(explorer_mse_chart(v)).__name__
    'LayerChart'
    """
    for key in ("curves", "g_star_exact", "best_g", "group_size", "budget"):
        if key not in view:
            raise ParameterError("view", f"`view` lacks {key!r} (compute_group_size_view output)")
    d = view["curves"].copy()
    d["label"] = d["estimator"].map(ESTIMATOR_LABELS)
    names = [n for n in ("leave_one_out", "mean") if n in set(d.estimator)]
    x = alt.X("group_size:Q", title=f"group size G (N = {view['budget']} rollouts per step)",
              scale=alt.Scale(**LOG2))
    lines = (
        alt.Chart(d)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("mse:Q", title="minibatch gradient MSE", scale=alt.Scale(type="log")),
            color=_color(names),
            tooltip=["estimator", "group_size", alt.Tooltip("mse:Q", format=".3e")],
        )
    )
    layers = [lines]
    gs = float(view["g_star_exact"])
    if np.isfinite(gs) and gs <= float(d.group_size.max()):
        layers.append(
            alt.Chart(pd.DataFrame({"G": [gs]})).mark_rule(strokeDash=[5, 4], color="#444").encode(x="G:Q")
        )
    chosen = d[(d.group_size == view["group_size"]) & (d.estimator == names[0])]
    if not chosen.empty:
        layers.append(
            alt.Chart(chosen)
            .mark_point(size=220, color="black", strokeWidth=2)
            .encode(x="group_size:Q", y="mse:Q")
        )
    return alt.layer(*layers).properties(width=width, height=height)
