"""Altair charts of the GRPO oscillator model (book chapter "From update rule to oscillator").

Every builder is a pure function returning an ``alt.Chart`` (or layered/concatenated chart); the
numbers come from :mod:`grpo_core.model.oscillator` and :mod:`grpo_core.model.stability`.

* :func:`slider_chart` -- THE static slider chart: sliders bound to the top-level params ``eta``,
  ``mu``, ``k_ref`` and ``curvature``; the closed-form trajectory and the exact recurrence are computed
  in the page's Vega runtime from :func:`oscillator_expressions` and :func:`exact_recurrence_expressions`
  (no kernel needed), with text marks named
  ``regime_label`` (exactly ``overdamped``, ``critically damped``, ``underdamped`` or ``unstable``),
  ``zeta_label`` and ``threshold_label``.
* :func:`phase_diagram_chart` -- critical ``eta*K`` against ``K_ref`` for several ``mu``: the
  continuous and the exact boundaries of both lag models drawn together.
* :func:`threshold_ratio_chart` -- exact over continuous threshold (the reference table as a chart).
* :func:`regime_trajectories_chart` -- one trajectory per regime, closed form and exact recurrence.
* :func:`noise_bands_chart` -- mean and +/- 2 sd bands for several group sizes, simulated and exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.errors import ParameterError
from grpo_core.model import oscillator as osc
from grpo_core.model import stability, trajectories
from grpo_core.model.hyperparameters import check_curvature, check_lag, check_momentum
from grpo_core.validation import check_integer

from .style import (
    ACCENT,
    FONT,
    INK,
    NOTE,
    REGIME_COLORS,
    k_ref_x,
    require_columns,
)
from .vega_expr import Expr, field_at, fn, lit, var, where

__all__ = [
    "SLIDER_PARAMS",
    "UNSTABLE_FRAME",
    "SLIDER_FRAME",
    "SLIDER_CAP",
    "SLIDER_CURVES",
    "cut_at_frame",
    "oscillator_expressions",
    "exact_recurrence_expressions",
    "slider_chart",
    "regime_examples",
    "phase_diagram_data",
    "phase_diagram_chart",
    "threshold_ratio_chart",
    "regime_trajectories_chart",
    "noise_bands_chart",
]

#: Names of the slider chart's top-level params (a browser test moves them).
SLIDER_PARAMS = ("eta", "mu", "k_ref", "curvature", "optimizer", "lag_model")
#: The slider chart's optimizer control: param value -> (momentum convention, label).
OPTIMIZERS = {0: ("heavy_ball", "SGD, heavy ball"), 1: ("ema", "Adam (EMA, μ = β₁, K = K/√v)")}
#: The slider chart's lag-model control: param value -> (lag model, label).
LAG_MODELS = {0: ("constant", "constant lag"), 1: ("refresh", "refresh (stale reuse)"),
              2: ("ratio", "ratio-corrected reuse")}
#: The slider chart's two curves (legend labels): the continuous closed form (solid) and the exact
#: discrete recurrence (dashed), which the verdict is about.
SLIDER_CURVES = ("closed form (continuous)", "exact recurrence")
#: Colour of the exact recurrence in :func:`slider_chart`.
EXACT_COLOR = INK
#: d3-format of the thresholds in :func:`slider_chart`'s ``threshold_label``: three significant digits
#: (a fixed ``.4f`` printed 0.000171 and 0.000129 both as ``0.0001``).
THRESHOLD_FORMAT = ".3~g"
#: Least y-range of :func:`slider_chart` (reward progress; a stable trajectory from rest stays in it).
SLIDER_FRAME = (-0.5, 2.0)
#: Most y-range of :func:`slider_chart`: the plateau 1 plus or minus 4 (a growing curve is cut there).
SLIDER_CAP = (-3.0, 5.0)
#: y-domain of the unstable panel of :func:`regime_trajectories_chart` (reward progress): the
#: plateau 1 plus or minus 2.
UNSTABLE_FRAME = (-1.0, 3.0)



def cut_at_frame(chart: alt.Chart, field: str, lo: float, hi: float, *, sort: str = "t",
                 groupby: Sequence[str] = (), pad: float = 0.5) -> alt.Chart:
    """Vega transforms that cut a curve after its first point outside the frame ``[lo, hi]``.

    A diverging oscillation drawn with its values clipped at the frame fills the plot with
    vertical strokes; cut instead, it runs out of the frame once and stays out. Every point of
    each curve (``groupby``, in the order of ``sort``) up to and including the first one outside
    ``[lo, hi]`` is kept, none after; that last point's ``field`` is moved to ``pad`` frames beyond
    the edge it crossed (the line runs visibly out of a clipped frame, and no point lies far off
    the plot: an SVG path point at ``1e6`` would be drawn at millions of pixels). Non-finite or
    missing values count as outside (above). The Python counterpart for precomputed curves is
    :func:`widgets.explorer_charts._until_exit`.

    Parameters
    ----------
    chart : alt.Chart
        A chart whose data has the columns ``field``, ``sort`` and ``groupby``.
    field : str
        The plotted value.
    lo, hi : float
        The frame (the y-scale's domain), ``lo < hi``.
    sort : str
        The curve's order (a step or time column).
    groupby : sequence of str
        Columns that tell one curve from another.
    pad : float
        How far past the edge the exit point is drawn, in frame heights.

    Returns
    -------
    alt.Chart
        ``chart`` with the transforms added (``exits``: the points outside before this one).

    Raises
    ------
    ParameterError
        If ``lo >= hi`` or ``pad`` is negative.

    Examples
    --------
    >>> import pandas as pd
    >>> data = pd.DataFrame({"t": range(6), "y": [0.0, 0.5, 2.5, 0.4, -3.0, 0.2]})
    >>> spec = cut_at_frame(alt.Chart(data), "y", -1.0, 1.0).mark_line().encode(x="t:Q", y="y:Q")
    >>> spec.to_dict()["transform"][-1]["as"]
    'y'
    """
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError("lo", f"the frame must be finite with `lo` < `hi`; got [{lo}, {hi}]")
    if not (math.isfinite(pad) and pad >= 0):
        raise ParameterError("pad", f"`pad` must be >= 0; got {pad}")
    v = f"datum[{field!r}]"
    bad = f"(!isValid({v}) || !isFinite({v}))"
    out = f"({bad} || {v} > {hi!r} || {v} < {lo!r})"
    edge_hi, edge_lo = hi + pad * (hi - lo), lo - pad * (hi - lo)
    return chart.transform_calculate(
        _outside=f"{out} ? 1 : 0",
    ).transform_window(
        # up to and including this point (Vega's frame [null, -1] reaches one point *ahead*)
        _seen="sum(_outside)", sort=[alt.SortField(sort)], frame=[None, 0], groupby=list(groupby),
    ).transform_calculate(
        exits="datum._seen - datum._outside",
    ).transform_filter("!(datum.exits > 0)").transform_calculate(
        **{field: f"{v} < {lo!r} ? {edge_lo!r} : ({bad} || {v} > {hi!r}) ? {edge_hi!r} : {v}"}
    )



# ----------------------------------------------------------------------------------------------
# The model as Vega expressions (tested against grpo_core in tests/test_oscillator_charts.py)
# ----------------------------------------------------------------------------------------------


def oscillator_expressions(lag: str = "constant", momentum: str = "heavy_ball") -> dict[str, Expr]:
    """The continuous oscillator model written as :class:`~widgets.vega_expr.Expr` objects.

    Variables: the params ``eta``, ``mu``, ``k_ref``, ``curvature`` and the datum field ``t``
    (``datum.t`` in Vega). The formulas are those of :func:`grpo_core.model.oscillator.coefficients`
    (``beta = 0``: ``curvature`` is the whole stiffness) and :func:`grpo_core.model.oscillator.relaxation`
    (its stable forms: the cancellation-free roots, ``expm1(x)/x`` and ``sinc`` by series near 0).

    Parameters
    ----------
    lag : {"constant", "refresh", "ratio"}
        ``"ratio"``: a reused generation batch with TRL's importance ratio, which removes the lag
        from the expected update until the clip binds (:mod:`grpo_core.model.reuse`): the on-policy
        recurrence whatever ``k_ref`` (the refresh model at ``k_ref = 1``).
    momentum : {"heavy_ball", "ema"}

    Returns
    -------
    dict of str to Expr
        ``a``, ``gain``, ``mass``, ``damping``, ``stiffness``, ``damping_ratio``, ``regime`` (the
        printed label, e.g. ``"critically damped"``), ``continuous_eta`` (critical step size of the
        continuous model), ``response`` (``e(t)/e0``, valid for ``t > 0``) and ``verdict`` (the label
        of :func:`grpo_core.model.oscillator.regime_verdict`; it reads the exact threshold ``a = eta K``
        from the datum field ``a_star`` of :func:`grpo_core.model.stability.exact_threshold_rows`).

    Raises
    ------
    ParameterError
        Unknown ``lag`` or ``momentum``.

    Examples
    --------
    >>> from widgets.oscillator_charts import oscillator_expressions
    >>> ex = oscillator_expressions()
    >>> str(ex["mass"])
    '(((1.0 + mu) + ((eta * curvature) * (k_ref * k_ref))) / 2.0)'
    >>> round(float(ex["damping"].evaluate(eta=0.01, mu=0.9, k_ref=4, curvature=1.0)), 12)
    0.06
    """
    ratio = lag == "ratio"
    lag, momentum = ("refresh" if ratio else check_lag(lag)), check_momentum(momentum)
    eta, mu, k, curv, t = var("eta"), var("mu"), var("k_ref"), var("curvature"), var("t", "datum.t")
    a = eta * curv
    gain = a if momentum == "heavy_ball" else (1.0 - mu) * a
    if ratio:
        d1, d2 = lit(0.0), lit(0.0)  # refresh lag at k_ref = 1: (k - 1)/2 = 0, (k - 1)(2k - 1)/6 = 0
    elif lag == "constant":
        d1, d2 = k, k * k
    else:
        d1, d2 = (k - 1.0) / 2.0, (k - 1.0) * (2.0 * k - 1.0) / 6.0
    mass = (1.0 + mu + gain * d2) / 2.0
    raw_damping = (1.0 - mu) - gain * d1
    # the same snap of rounding residue to 0 as grpo_core.model.oscillator.coefficients
    damping = where(fn.abs(raw_damping) <= osc.DAMPING_ROUNDING * (1.0 + mu + gain * d1), 0.0, raw_damping)
    zeta = damping / (2.0 * fn.sqrt(mass * gain))
    tol = osc.CRITICAL_TOLERANCE
    regime = where(
        damping <= 0, "unstable",
        where(fn.abs(zeta - 1.0) <= tol, "critically damped", where(zeta > 1.0, "overdamped", "underdamped")),
    )
    # the verdict of grpo_core.model.oscillator.regime_verdict, with the exact threshold a_star looked up
    # from stability.exact_threshold_rows (tests/test_oscillator_charts.py compares the two on a grid)
    a_star_exact = var("a_star", "datum.a_star")
    verdict = where(a >= a_star_exact, osc.VERDICT_LABELS["unstable"],
                    where(damping <= 0, osc.VERDICT_LABELS["stable_exact_only"], regime))
    # critical eta of the continuous model: C = 0
    g_star = (1.0 - mu) / d1
    a_star = g_star if momentum == "heavy_ball" else g_star / (1.0 - mu)
    continuous_eta = where(d1 > 0, a_star / curv, lit(math.inf))

    disc = damping * damping - 4.0 * mass * gain
    sign = where(damping >= 0, 1.0, -1.0)
    q = -(damping + sign * fn.sqrt(disc)) / 2.0
    r1, r2 = q / mass, gain / q
    r_a, r_b = fn.max(r1, r2), fn.min(r1, r2)
    x = (r_b - r_a) * t
    phi = where(fn.abs(x) < 1e-4, 1.0 + x / 2.0 + x * x / 6.0, (fn.exp(x) - 1.0) / x)
    real = fn.exp(r_a * t) * (1.0 - r_a * t * phi)
    gamma = damping / (2.0 * mass)
    omega = fn.sqrt(-disc) / (2.0 * mass)
    y = omega * t
    sinc = where(fn.abs(y) < 1e-4, 1.0 - y * y / 6.0, fn.sin(y) / y)
    cplx = fn.exp(-gamma * t) * (fn.cos(y) + gamma * t * sinc)
    response = where(disc >= 0, real, cplx)
    return {
        "a": a, "gain": gain, "mass": mass, "damping": damping, "stiffness": gain,
        "damping_ratio": zeta, "regime": regime, "continuous_eta": continuous_eta, "response": response,
        "verdict": verdict,
    }


def _switched_expressions() -> dict[str, Expr]:
    """The slider chart's expressions for every optimizer and lag model, chosen by the ``optimizer``
    and ``lag_model`` params (:data:`OPTIMIZERS`, :data:`LAG_MODELS`)."""
    combos = {(m, lag): oscillator_expressions(lag, m)
              for m, _ in OPTIMIZERS.values() for lag, _ in LAG_MODELS.values()}
    opt, lag_model = var("optimizer"), var("lag_model")

    def pick(key: str) -> Expr:
        def by_lag(m: str) -> Expr:
            return where(lag_model > 1.5, combos[(m, "ratio")][key],
                         where(lag_model > 0.5, combos[(m, "refresh")][key], combos[(m, "constant")][key]))
        return where(opt > 0.5, by_lag("ema"), by_lag("heavy_ball"))

    return {key: pick(key) for key in ("response", "damping_ratio", "verdict", "continuous_eta")}


def exact_recurrence_expressions(horizon: int) -> list[tuple[str, Expr]]:
    """The exact discrete recurrence from rest, unrolled into one expression per step for the page.

    The recurrence of :func:`grpo_core.model.noise.simulate` without noise (the curve of
    :func:`grpo_core.model.trajectories.discrete_trajectory`), ``e_0 = 1`` and ``e_j = 1`` for ``j < 0``:

    .. math:: e_{k+1} = e_k + \\mu (e_k - e_{k-1}) - g\\, e_{k - d_k},

    ``g = eta * curvature`` (heavy ball) or ``(1 - mu) eta curvature`` (Adam's EMA, ``optimizer = 1``),
    ``d_k = k_ref`` (constant lag, ``lag_model = 0``), ``k mod k_ref`` (refresh lag, ``lag_model = 1``)
    or 0 (ratio-corrected reuse, ``lag_model = 2``: the on-policy recurrence). Vega has no loops: step
    ``k + 1`` is the datum field ``e<k+1>``, computed from the fields already there (the lagged one
    found by name, :func:`widgets.vega_expr.field_at`). The fields ``e0 .. e<horizon>`` of one datum
    are the trajectory; tests evaluate the same expressions in order and compare with grpo_core.

    Parameters
    ----------
    horizon : int >= 1
        Steps.

    Returns
    -------
    list of (str, Expr)
        ``("e0", 1)``, ``("e1", ...)``, ... ``("e<horizon>", ...)``, in the order to evaluate them.

    Examples
    --------
    >>> steps = exact_recurrence_expressions(3)
    >>> env = dict(eta=0.05, mu=0.5, k_ref=2, curvature=1.0, optimizer=0, lag_model=0)
    >>> for name, ex in steps:
    ...     env[name] = ex.evaluate(**env)
    >>> [round(float(env[f"e{k}"]), 6) for k in range(4)]  # as grpo_core.model.noise.simulate
    [1.0, 0.95, 0.875, 0.7875]
    """
    horizon = check_integer("horizon", horizon, low=1)
    eta, mu, k_ref, curv = var("eta"), var("mu"), var("k_ref"), var("curvature")
    opt, lag_model = var("optimizer"), var("lag_model")
    gain = where(opt > 0.5, 1.0 - mu, 1.0) * eta * curv
    steps: list[tuple[str, Expr]] = [("e0", lit(1.0))]
    for k in range(horizon):
        e_k, e_prev = var(f"e{k}", f"datum.e{k}"), var(f"e{max(k - 1, 0)}", f"datum.e{max(k - 1, 0)}")
        lagged_index = where(lag_model > 1.5, lit(k),
                             where(lag_model > 0.5, k_ref * fn.floor(k / k_ref), fn.max(k - k_ref, 0)))
        steps.append((f"e{k + 1}", e_k + mu * (e_k - e_prev) - gain * field_at("e", lagged_index)))
    return steps


def slider_chart(
    eta: float = 0.02,
    mu: float = 0.8,
    k_ref: int = 4,
    curvature: float = 1.0,
    *,
    lag: str = "constant",
    momentum: str = "heavy_ball",
    horizon: int = 300,
    eta_max: float = 0.1,
    k_ref_max: int = 16,
    width: int = 480,
    height: int = 260,
) -> alt.LayerChart:
    """The static slider chart: closed-form reward trajectory computed on the page, no kernel.

    Four sliders bound to the top-level params ``eta``, ``mu``, ``k_ref`` and ``curvature``, and two
    radio controls, ``optimizer`` (SGD with heavy-ball momentum, or Adam: the EMA convention with
    ``mu = beta1`` and the curvature read as Adam's preconditioned ``K/sqrt(v)``, :mod:`grpo_core.model.adam`)
    and ``lag_model`` (constant, refresh, or ratio-corrected reuse, :mod:`grpo_core.model.reuse`),
    drive Vega expressions (:func:`oscillator_expressions`) evaluated over ``t = 0..horizon`` in the
    browser: the reward's progress to the plateau ``1 - e(t)/e0`` in every regime. The y-range is
    :data:`SLIDER_FRAME` or, for a growing oscillation, as much more as the curve needs up to
    :data:`SLIDER_CAP`: slow growth shows as slow growth; a curve that reaches the cap is cut there
    (:func:`cut_at_frame`). Two curves, named in a legend (:data:`SLIDER_CURVES`): ``trajectory``, the
    continuous closed form (solid), and ``exact_trajectory``, the exact discrete recurrence (dashed,
    :func:`exact_recurrence_expressions`), which the verdict is about: between the continuous and the
    exact threshold the first diverges and the second stays bounded. Text marks, by Vega-Lite name:

    * ``regime_label``: the verdict of :func:`grpo_core.model.oscillator.regime_verdict`, exactly
      ``overdamped``, ``critically damped``, ``underdamped`` (both models stable), ``unstable`` (the
      exact recurrence is) or ``stable (exact recurrence only)`` (past the continuous threshold);
    * ``zeta_label``: the damping ratio, ``"damping ratio ζ = 0.41"``;
    * ``threshold_label``: the continuous and the exact critical ``eta`` at the current ``mu``,
      ``k_ref`` and ``curvature`` (the exact one looked up from a table precomputed by
      :func:`grpo_core.model.stability.critical_a_exact` on the slider grid).

    The chart asks vega-embed for the SVG renderer (``usermeta.embedOptions``), so the labels are
    ``<text>`` elements a browser test can read.

    Parameters
    ----------
    eta, mu, k_ref, curvature : float
        Initial slider positions (``mu`` is snapped to the 0.01 grid).
    lag : {"constant", "refresh", "ratio"}
        Initial lag model.
    momentum : {"heavy_ball", "ema"}
        Initial optimizer (``"ema"``: Adam).
    horizon : int
        Steps shown (``t = 0..horizon``).
    eta_max : float
        Right end of the ``eta`` slider.
    k_ref_max : int
        Right end of the ``k_ref`` slider (and of the exact-threshold table).
    width, height : int
        Plot size in pixels.

    Returns
    -------
    alt.LayerChart
        Sliders bound to top-level params; the trajectory and the named text marks.

    Raises
    ------
    ParameterError
        Invalid initial values, ``lag`` or ``momentum``.

    Examples
    --------
    >>> from widgets.oscillator_charts import slider_chart
    >>> spec = slider_chart().to_dict()
    >>> sorted(p["name"] for p in spec["params"])
    ['curvature', 'eta', 'k_ref', 'lag_model', 'mu', 'optimizer']
    """
    lag_keys = {name: key for key, (name, _) in LAG_MODELS.items()}
    if lag not in lag_keys:
        raise ParameterError("lag", f"`lag` must be one of {sorted(lag_keys)}; got {lag!r}")
    momentum = check_momentum(momentum)
    c0 = osc.coefficients(eta, mu, k_ref, curvature, lag="refresh" if lag == "ratio" else lag, momentum=momentum)
    if not 1 <= k_ref <= k_ref_max:
        raise ParameterError("k_ref", f"`k_ref` must be in [1, {k_ref_max}] (the slider range); got {k_ref}")
    ex = _switched_expressions()
    params = [
        alt.param(name="eta", value=c0.eta,
                  bind=alt.binding_range(min=0.001, max=eta_max, step=0.001, name="η (step size) ")),
        alt.param(name="mu", value=round(c0.mu, 2),
                  bind=alt.binding_range(min=0.0, max=0.99, step=0.01, name="μ (momentum) ")),
        alt.param(name="k_ref", value=c0.k_ref,
                  bind=alt.binding_range(min=1, max=k_ref_max, step=1, name="K_ref (refresh interval) ")),
        alt.param(name="curvature", value=c0.curvature,
                  bind=alt.binding_range(min=0.1, max=5.0, step=0.1, name="K (curvature) ")),
        alt.param(name="optimizer", value={m: k for k, (m, _) in OPTIMIZERS.items()}[momentum],
                  bind=alt.binding_radio(options=list(OPTIMIZERS), labels=[v[1] for v in OPTIMIZERS.values()],
                                         name="optimizer ")),
        alt.param(name="lag_model", value=lag_keys[lag],
                  bind=alt.binding_radio(options=list(LAG_MODELS), labels=[v[1] for v in LAG_MODELS.values()],
                                         name="reuse of a batch ")),
    ]
    response = ex["response"]
    progress = 1.0 - fn.max(fn.min(response, 1e3), -1e3)
    # The y-range follows the curve: at least SLIDER_FRAME, growing with a slowly growing
    # oscillation up to SLIDER_CAP (zeta = -0.01 then shows all its growing swings, not an
    # instant blow-up at the first peak past 2); a curve that leaves the cap is cut there (its
    # last point on the edge), so a diverging one is not drawn as clipped vertical strokes.
    (y_min, y_max), (cap_lo, cap_hi) = SLIDER_FRAME, SLIDER_CAP
    base = cut_at_frame(
        alt.Chart(alt.sequence(0, horizon + 1, 1, as_="t")).transform_calculate(
            progress=str(where(var("t", "datum.t") > 0, progress, 0.0)),
        ),
        "progress", cap_lo, cap_hi, sort="t", pad=0.0,
    )
    x = alt.X("t:Q", title="optimizer step t", scale=alt.Scale(domain=[0, horizon], nice=False))
    y_scale = alt.Scale(zero=False, nice=True)
    # one legend for the two curves: solid, the continuous closed form; dashed, the exact recurrence
    # (what the verdict is about: past the continuous threshold only the dashed curve stays bounded)
    models = list(SLIDER_CURVES)
    colour = alt.Color("model:N", title=None, scale=alt.Scale(domain=models, range=[ACCENT, EXACT_COLOR]),
                       legend=alt.Legend(orient="bottom", direction="horizontal", symbolType="stroke",
                                         symbolStrokeWidth=2.5, labelLimit=300))
    dash = alt.StrokeDash("model:N", title=None, scale=alt.Scale(domain=models, range=[[1, 0], [6, 3]]))
    line = base.transform_calculate(model=repr(models[0])).mark_line(clip=True, strokeWidth=2.5).encode(
        x=x,
        y=alt.Y("progress:Q", title="reward progress 1 − e(t)/e₀", scale=y_scale),
        color=colour, strokeDash=dash,
    ).properties(name="trajectory")
    recurrence = alt.Chart(alt.Data(values=[{"_": 0}]))
    for name, step in exact_recurrence_expressions(horizon):
        recurrence = recurrence.transform_calculate(**{name: str(step)})
    exact = cut_at_frame(
        recurrence.transform_fold([f"e{k}" for k in range(horizon + 1)], as_=["step", "e"]).transform_calculate(
            t="toNumber(substring(datum.step, 1))", progress="1 - datum.e", model=repr(models[1])),
        "progress", cap_lo, cap_hi, sort="t", pad=0.0,
    ).mark_line(clip=True, strokeWidth=2).encode(
        x=x, y=alt.Y("progress:Q", scale=y_scale), color=colour, strokeDash=dash,
    ).properties(name="exact_trajectory")
    least = alt.Chart(alt.Data(values=[{"y": y_min}, {"y": y_max}])).mark_point(opacity=0, size=1).encode(
        y=alt.Y("y:Q", scale=y_scale)).properties(name="least_frame")
    rules = alt.Chart(alt.Data(values=[{"y": 1.0, "what": "plateau"}, {"y": 0.9, "what": "90%"}])).mark_rule(
        strokeDash=[4, 4], color="gray").encode(y="y:Q").properties(name="plateau_rules")
    one = alt.Data(values=[{"_": 0}])
    mu_grid = np.round(np.arange(0.0, 0.995, 0.01), 2)
    # the exact thresholds of both lag models and both momentum conventions; the ratio-corrected
    # reuse reads the refresh model's row at k_ref = 1 (no lag in expectation)
    rows = [dict(r, L=li, M=mi)
            for li, lag_name in enumerate(("constant", "refresh")) for mi, (mom_name, _) in OPTIMIZERS.items()
            for r in stability.exact_threshold_rows(mu_grid, np.arange(1, k_ref_max + 1), lag_name, mom_name)]
    table = alt.Data(values=rows)
    this_row = ("datum.k_ref == (lag_model > 1.5 ? 1 : k_ref) && datum.m == round(mu * 100)"
                " && datum.L == (lag_model > 0.5 ? 1 : 0) && datum.M == optimizer")
    lag_words = where(var("lag_model") > 1.5, lit("ratio-corrected reuse"),
                      where(var("lag_model") > 0.5, lit("refresh lag"), lit("constant lag")))
    regime_text = alt.Chart(table).transform_filter(this_row).transform_calculate(
        label=str(ex["verdict"])).transform_calculate(
        label_colour=" : ".join(f"datum.label == {k!r} ? {v!r}" for k, v in REGIME_COLORS.items()) + f" : {INK!r}",
    ).mark_text(
        align="left", baseline="bottom", fontSize=FONT["verdict"], fontWeight="bold",
    ).encode(
        x=alt.value(0), y=alt.value(-44), text="label:N",
        # the colour as a value (no scale): a colour scale would be merged with the curves' legend
        color=alt.Color("label_colour:N", scale=None),
    ).properties(name="regime_label")
    zeta_text = alt.Chart(one).transform_calculate(
        label=str("damping ratio ζ = " + fn.format(ex["damping_ratio"], ".2f")),
    ).mark_text(align="left", baseline="bottom", fontSize=13).encode(
        x=alt.value(0), y=alt.value(-25), text="label:N").properties(name="zeta_label")
    exact_eta = var("a_star", "datum.a_star") / var("curvature")
    thr_text = alt.Chart(table).transform_filter(this_row).transform_calculate(
        label=str("unstable above η = "
                  + where(ex["continuous_eta"] < 1e300, fn.format(ex["continuous_eta"], THRESHOLD_FORMAT), lit("none"))
                  + " (continuous), "
                  + fn.format(exact_eta, THRESHOLD_FORMAT) + " (exact, " + lag_words + ")"),
    ).mark_text(align="left", baseline="bottom", fontSize=12, color=NOTE).encode(
        x=alt.value(0), y=alt.value(-10), text="label:N").properties(name="threshold_label")
    chart = alt.layer(least, rules, line, exact, regime_text, zeta_text, thr_text).add_params(*params).properties(
        width=width, height=height,
        usermeta={"embedOptions": {"renderer": "svg", "actions": False}},
    )
    return chart


# ----------------------------------------------------------------------------------------------
# Static charts computed in Python
# ----------------------------------------------------------------------------------------------


def regime_examples(
    mu: float = 0.5,
    k_ref: int = 4,
    curvature: float = 1.0,
    *,
    lag: str = "constant",
    momentum: str = "heavy_ball",
) -> dict[str, osc.OscillatorCoefficients]:
    """One setting of ``eta`` per regime at fixed ``mu``, ``k_ref``, ``curvature``.

    ``overdamped``: a quarter of the critically damped ``eta``; ``critically_damped``: exactly it;
    ``underdamped``: the geometric mean of it and the continuous threshold; ``unstable``: 1.1 times the
    larger of the continuous and the exact threshold (unstable in both senses).

    Returns
    -------
    dict of str to OscillatorCoefficients
        Keyed by regime (code names).

    Raises
    ------
    ParameterError
        Invalid inputs; ``lag="refresh"`` with ``k_ref = 1`` (no continuous threshold).

    Examples
    --------
    >>> from widgets.oscillator_charts import regime_examples
    >>> [c.regime for c in regime_examples().values()]
    ['overdamped', 'critically_damped', 'underdamped', 'unstable']
    """
    k_total = check_curvature(curvature)
    a_cd = float(stability.critical_a_damping(mu, k_ref, lag, momentum)[()])
    a_c = float(stability.critical_a_continuous(mu, k_ref, lag, momentum)[()])
    a_x = float(stability.critical_a_exact(mu, k_ref, lag, momentum)[()])
    if not math.isfinite(a_c):
        raise ParameterError(
            "k_ref", "`k_ref` must be >= 2 with lag='refresh' (no lag, no continuous threshold)"
        )
    etas = {
        "overdamped": 0.25 * a_cd / k_total,
        "critically_damped": a_cd / k_total,
        "underdamped": math.sqrt(a_cd * a_c) / k_total,
        "unstable": 1.1 * max(a_c, a_x) / k_total,
    }
    return {r: osc.coefficients(e, mu, k_ref, curvature, lag=lag, momentum=momentum) for r, e in etas.items()}


def regime_trajectories_chart(
    mu: float = 0.5, k_ref: int = 4, curvature: float = 1.0, *, lag: str = "constant",
    momentum: str = "heavy_ball", n_steps: int = 120, width: int = 260, height: int = 150,
) -> alt.ConcatChart:
    """Trajectories in each regime: the closed form (line) and the exact recurrence (dots).

    Settings from :func:`regime_examples`, shown as reward progress ``1 - e/e0``. Each panel has
    its own y-domain: a stable panel's covers its curves (and 0 and 1) with a little room; the
    unstable panel's is :data:`UNSTABLE_FRAME`, two plateaus either side of the plateau, and both
    of its curves are cut after their first point outside it (:func:`cut_at_frame`): each runs
    out of the frame once instead of filling it with clipped vertical strokes. The line marks are
    named ``regime_line_<regime>_<i>`` and the dots ``regime_dots_<regime>_<i>`` (code names and
    the panel's index, which Altair appends in a concatenation: ``regime_line_unstable_3``).

    Parameters
    ----------
    mu, k_ref, curvature : float
        As :func:`regime_examples`.
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}
    n_steps : int >= 1
        Steps shown.
    width, height : int
        Size of each panel in pixels.

    Returns
    -------
    alt.ConcatChart
        One panel per regime, two panels per row (fits the book's content column).

    Raises
    ------
    ParameterError
        As :func:`regime_examples`; ``n_steps < 1``.

    Examples
    --------
    >>> from widgets.oscillator_charts import regime_trajectories_chart
    >>> spec = regime_trajectories_chart(n_steps=20).to_dict()
    >>> [panel["layer"][1]["name"] for panel in spec["concat"]][-1]
    'regime_line_unstable_3'
    >>> spec["concat"][-1]["layer"][1]["encoding"]["y"]["scale"]["domain"]
    [-1.0, 3.0]
    """
    n_steps = check_integer("n_steps", n_steps, low=1)
    t_fine = np.linspace(0, n_steps, 4 * n_steps + 1)
    color = alt.Color("model:N", title=None, legend=alt.Legend(orient="bottom"),
                      scale=alt.Scale(domain=["closed form (continuous)", "exact recurrence"]))
    # every panel shows the whole horizon, also where its curves left the frame early
    x = alt.X("t:Q", title="step", scale=alt.Scale(domain=[0, n_steps], nice=False))
    panels = []
    for regime, c in regime_examples(mu, k_ref, curvature, lag=lag, momentum=momentum).items():
        label = f"{osc.REGIME_LABELS[regime]} (η = {c.eta:.3g}, ζ = {c.damping_ratio:.2f})"
        with np.errstate(over="ignore", invalid="ignore"):
            cf = 1.0 - trajectories.closed_form_trajectory(c, t_fine)
            dt = 1.0 - trajectories.discrete_trajectory(c, n_steps)
        df = pd.concat([
            pd.DataFrame({"t": t_fine, "progress": cf, "model": "closed form (continuous)"}),
            pd.DataFrame({"t": np.arange(n_steps + 1), "progress": dt, "model": "exact recurrence"}),
        ], ignore_index=True)
        if regime == "unstable":
            lo, hi = UNSTABLE_FRAME
        else:
            both = df["progress"].to_numpy()
            lo, hi = min(0.0, float(np.min(both))), max(1.0, float(np.max(both)))
            room = 0.08 * (hi - lo)
            lo, hi = math.floor((lo - room) * 10) / 10, math.ceil((hi + room) * 10) / 10
        # JSON has no inf: a value past the frame only needs to read as outside
        df["progress"] = df["progress"].clip(-1e6, 1e6)
        y = alt.Y("progress:Q", title="reward progress 1 − e/e₀",
                  scale=alt.Scale(domain=[lo, hi], nice=False))
        base = cut_at_frame(alt.Chart(df), "progress", lo, hi, sort="t", groupby=["model"])
        lines = base.transform_filter("datum.model == 'closed form (continuous)'").mark_line(
            strokeWidth=1.5, clip=True).encode(x=x, y=y, color=color).properties(
            name=f"regime_line_{regime}")
        dots = base.transform_filter("datum.model == 'exact recurrence'").mark_circle(
            size=14, opacity=0.55, clip=True).encode(x=x, y=y, color=color).properties(
            name=f"regime_dots_{regime}")
        # the line on top: where the two agree the dots would hide it
        panels.append(alt.layer(dots, lines).properties(
            width=width, height=height, title=alt.Title(label, fontSize=11, fontWeight="normal")))
    return alt.concat(*panels, columns=2)


def phase_diagram_data(
    mus: Sequence[float] = (0.0, 0.5, 0.9), k_refs: Sequence[int] | None = None, momentum: str = "heavy_ball"
) -> pd.DataFrame:
    """Critical ``eta*K`` against ``K_ref`` for each ``mu``: four boundaries.

    Columns: ``mu``, ``k_ref``, ``boundary`` (``"continuous, constant lag (paper)"``,
    ``"exact, constant lag"``, ``"continuous, refresh lag (ours)"``, ``"exact, refresh lag"``),
    ``lag``, ``method``, ``a_star`` (``inf`` rows dropped: the continuous refresh model has no
    threshold at ``K_ref = 1``).

    Raises
    ------
    ParameterError
        Invalid ``mus``, ``k_refs`` or ``momentum``.

    Examples
    --------
    >>> from widgets.oscillator_charts import phase_diagram_data
    >>> df = phase_diagram_data(mus=[0.0], k_refs=[1, 2])
    >>> df[df.boundary == "exact, refresh lag"].a_star.round(6).tolist()
    [2.0, 1.0]
    """
    k = np.arange(1, 65) if k_refs is None else np.asarray(k_refs)
    frames = []
    names = {
        ("constant", "continuous"): "continuous, constant lag (paper)",
        ("constant", "exact"): "exact, constant lag",
        ("refresh", "continuous"): "continuous, refresh lag (ours)",
        ("refresh", "exact"): "exact, refresh lag",
    }
    for m in mus:
        for (lag, method), name in names.items():
            f = stability.critical_a_exact if method == "exact" else stability.critical_a_continuous
            a = f(m, k, lag, momentum)
            frames.append(pd.DataFrame({"mu": float(m), "k_ref": k, "boundary": name, "lag": lag,
                                        "method": method, "a_star": a}))
    df = pd.concat(frames, ignore_index=True)
    return df[np.isfinite(df["a_star"])].reset_index(drop=True)


def phase_diagram_chart(
    mus: Sequence[float] = (0.0, 0.5, 0.9), k_refs: Sequence[int] | None = None, momentum: str = "heavy_ball",
) -> alt.FacetChart:
    """Phase diagram over ``(eta*K, K_ref)``: stable below each boundary, unstable above.

    One panel per ``mu``; log-log axes; colour = lag model, dash = continuous vs exact.

    Returns
    -------
    alt.FacetChart
        One panel per ``mu``; one line per lag model and threshold (continuous, exact).

    Raises
    ------
    ParameterError
        As :func:`phase_diagram_data`.

    Examples
    --------
    >>> from widgets.oscillator_charts import phase_diagram_chart
    >>> phase_diagram_chart(mus=[0.5], k_refs=[1, 2, 4]).to_dict()["facet"]["column"]["field"]
    'mu'
    """
    df = phase_diagram_data(mus, k_refs, momentum)
    return alt.Chart(df).mark_line(strokeWidth=2).encode(
        x=alt.X("k_ref:Q", title="K_ref (steps)", scale=alt.Scale(type="log", nice=False),
                axis=alt.Axis(values=[1, 2, 4, 8, 16, 32, 64])),
        y=alt.Y("a_star:Q", title="critical η·K (unstable above)", scale=alt.Scale(type="log")),
        color=alt.Color("lag:N", title="lag model", legend=alt.Legend(orient="bottom")),
        strokeDash=alt.StrokeDash("method:N", title="threshold",
                                  scale=alt.Scale(domain=["exact", "continuous"], range=[[1, 0], [6, 3]]),
                                  legend=alt.Legend(orient="bottom")),
        detail="boundary:N",
        tooltip=["boundary:N", "mu:Q", "k_ref:Q", alt.Tooltip("a_star:Q", format=".4g")],
    ).properties(width=180, height=200).facet(column=alt.Column("mu:Q", title="momentum μ"))


def threshold_ratio_chart(
    mus: Sequence[float] = (0.0, 0.5, 0.9), k_refs: Sequence[int] | None = None, momentum: str = "heavy_ball",
) -> alt.Chart:
    """Exact threshold in units of the paper's: ``a*(exact) * K_ref / (1 - mu)`` against ``K_ref``.

    1 means the continuous (paper) formula is exact; constant lag climbs from 1 (``K_ref = 1``)
    towards ``pi/2`` (``mu = 0``); the refresh lag sits near 2 (exactly 2 for ``mu = 0``).

    Returns
    -------
    alt.Chart
        Colour by ``mu``, dash by lag model, log axis; 1 on it is the paper's threshold.

    Raises
    ------
    ParameterError
        Invalid inputs.

    Examples
    --------
    >>> from widgets.oscillator_charts import threshold_ratio_chart
    >>> threshold_ratio_chart(mus=[0.0], k_refs=[1, 2]).to_dict()["mark"]["type"]
    'line'
    """
    df = phase_diagram_data(mus, k_refs, momentum)
    df = df[df["method"] == "exact"].copy()
    scale = (1.0 - df["mu"]) if momentum == "heavy_ball" else 1.0
    df["ratio"] = df["a_star"] * df["k_ref"] / scale
    # the y-domain fitted to the data, a tenth of room either side (niced, a log scale ran 0.1..100
    # for ratios 1..38: an empty lower half)
    finite = df["ratio"][np.isfinite(df["ratio"]) & (df["ratio"] > 0)]
    domain = [float(finite.min()) / 1.1, float(finite.max()) * 1.1] if len(finite) else None
    return alt.Chart(df).mark_line(strokeWidth=2).encode(
        x=k_ref_x(),
        y=alt.Y("ratio:Q", title="exact threshold × K_ref / (1 − μ)",
                scale=alt.Scale(type="log", nice=False, **({"domain": domain} if domain else {})),
                axis=alt.Axis(values=[v * 10.0**j for j in range(-2, 4) for v in (1, 2, 5)
                                      if domain is None or domain[0] <= v * 10.0**j <= domain[1]])),
        color=alt.Color("mu:N", title="μ"),
        strokeDash=alt.StrokeDash("lag:N", title="lag model"),
        tooltip=["lag:N", "mu:Q", "k_ref:Q", alt.Tooltip("ratio:Q", format=".3f")],
    ).properties(width=420, height=260)


def noise_bands_chart(data: pd.DataFrame) -> alt.LayerChart:
    """Noise bands per group size: simulated +/- 2 sd (shaded) and the exact band (dashed lines).

    Parameters
    ----------
    data : pandas.DataFrame
        From :func:`grpo_core.model.noise.noise_bands`.

    Returns
    -------
    alt.LayerChart
        Per group size: the simulated band (area), its mean and the exact band (dashed).

    Raises
    ------
    ParameterError
        If ``data`` lacks the columns of :func:`grpo_core.model.noise.noise_bands`.

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.noise import noise_bands
    >>> from widgets.oscillator_charts import noise_bands_chart
    >>> chart = noise_bands_chart(noise_bands(coefficients(0.05, 0.5, 2, 1.0), n_seeds=8, n_steps=10))
    >>> len(chart.layer)
    4
    """
    require_columns(data, "data", ["t", "group_size", "sim_mean", "sim_lo", "sim_hi", "mean", "lo", "hi"],
                    source="grpo_core.model.noise.noise_bands")
    color = alt.Color("group_size:N", title="group size G")
    base = alt.Chart(data).encode(x=alt.X("t:Q", title="optimizer step"), color=color)
    band = base.mark_area(opacity=0.25).encode(
        y=alt.Y("sim_lo:Q", title="reward progress 1 − e/e₀"), y2="sim_hi:Q"
    )
    mean = base.mark_line(strokeWidth=1.5).encode(y="sim_mean:Q")
    lo = base.mark_line(strokeDash=[5, 3], strokeWidth=1).encode(y="lo:Q")
    hi = base.mark_line(strokeDash=[5, 3], strokeWidth=1).encode(y="hi:Q")
    return alt.layer(band, mean, lo, hi).properties(width=520, height=260)
