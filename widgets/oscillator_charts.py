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
    OKABE_ITO,
    REGIME_COLORS,
    STATUS_COLORS,
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
    "PHASE_K_REFS",
    "HERO_CONTROLS",
    "HERO_PARAMS",
    "HERO_LOG_ETA",
    "HERO_WIDTH",
    "K_REF_NO_EFFECT",
    "hero_eta_expression",
    "hero_key",
    "hero_table",
    "hero_frames",
    "hero_explorer",
    "hero_mark",
    "HERO_MARKS",
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



def _trajectory_layers(response: Expr, horizon: int, legend_at: tuple[float, float] | None = None,
                       ) -> tuple[alt.Chart, alt.Chart, alt.Chart, alt.Chart]:
    """The trajectory layers of :func:`slider_chart` and :func:`hero_explorer`: an invisible frame
    (``least_frame``), the plateau rules (``plateau_rules``), the closed form (``trajectory``, solid)
    and the exact recurrence (``exact_trajectory``, dashed), over ``t = 0..horizon``, with a legend
    of the two curves below the plot or, given ``legend_at``, at that ``(x, y)`` in the plot's pixels.

    ``response`` is ``e(t)/e0`` as an expression of the params and ``datum.t``; the exact recurrence
    reads the params ``eta``, ``mu``, ``k_ref``, ``curvature``, ``optimizer``, ``lag_model``.
    """
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
                       legend=alt.Legend(direction="horizontal", symbolType="stroke",
                                         fillColor="rgba(255, 255, 255, 0.85)",
                                         **({"orient": "bottom"} if legend_at is None else
                                            {"orient": "none", "legendX": legend_at[0], "legendY": legend_at[1]}),
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
    return least, rules, line, exact


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
    least, rules, line, exact = _trajectory_layers(ex["response"], horizon)
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
        # without lag (ratio-corrected reuse, refresh at K_ref = 1) the continuous model has no threshold
        label=str(where(ex["continuous_eta"] < 1e300,
                        "unstable above η = " + fn.format(ex["continuous_eta"], THRESHOLD_FORMAT) + " (continuous), "
                        + fn.format(exact_eta, THRESHOLD_FORMAT) + " (exact, " + lag_words + ")",
                        "unstable above η = " + fn.format(exact_eta, THRESHOLD_FORMAT) + " (exact, " + lag_words
                        + "); no continuous threshold (no lag)")),
    ).mark_text(align="left", baseline="bottom", fontSize=12, color=NOTE).encode(
        x=alt.value(0), y=alt.value(-10), text="label:N").properties(name="threshold_label")
    chart = alt.layer(least, rules, line, exact, regime_text, zeta_text, thr_text).add_params(*params).properties(
        width=width, height=height,
        usermeta={"embedOptions": {"renderer": "svg", "actions": False}},
    )
    return chart


# ----------------------------------------------------------------------------------------------
# The hero explorer: the trajectory and the phase diagram driven by one set of controls
# ----------------------------------------------------------------------------------------------

#: ``K_ref`` values of the phase diagrams (log-spaced; their ``K_ref`` controls snap to them).
PHASE_K_REFS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64)
#: The bound controls of :func:`hero_explorer`, in the order the page shows them.
HERO_CONTROLS = ("log_eta", "mu", "k_ref", "curvature", "optimizer", "lag_model")
#: Every top-level param of :func:`hero_explorer`: the controls, ``eta`` (derived from ``log_eta``)
#: and the phase diagram's frame ``phase_lo``, ``phase_hi`` (derived from the optimizer and lag model).
HERO_PARAMS = HERO_CONTROLS + ("eta", "phase_lo", "phase_hi")
#: Range of the step-size slider in ``log10(eta)``: from 1e-5 to 1e4, past the largest threshold of
#: every mode on the control grid (Adam with ratio-corrected reuse at ``mu = 0.99``, ``K = 0.1``:
#: ``eta = 3980``) and below the smallest (heavy ball, constant lag, ``mu = 0.99``, ``K_ref = 64``,
#: ``K = 5``: ``eta = 3.1e-5``); ``tests/test_oscillator_charts.py`` checks both ends.
HERO_LOG_ETA = (-5.0, 4.0)
#: Notch of the step-size slider in ``log10(eta)`` (2.3% of ``eta``).
HERO_LOG_ETA_STEP = 0.01
#: The curvature slider: (least, most, step).
HERO_CURVATURE = (0.1, 5.0, 0.1)
#: Width in pixels of both stacked views of :func:`hero_explorer` (with its y-axis the figure is
#: about 670 px wide: the book's text column at 1280 px).
HERO_WIDTH = 600
#: Heights in pixels of the trajectory and of the phase diagram.
HERO_HEIGHTS = (230, 260)
#: The line :func:`hero_explorer` shows under ratio-corrected reuse, where ``K_ref`` does nothing.
K_REF_NO_EFFECT = "K_ref has no effect: ratio-corrected reuse has no lag in expectation"
#: Name of :func:`hero_table`'s dataset in :func:`hero_explorer`'s spec (top-level ``datasets``).
HERO_TABLE_NAME = "hero_thresholds"
#: The control grid of ``mu`` (0.01 steps).
_MU_GRID = np.round(np.arange(0.0, 0.995, 0.01), 2)
#: The marks of :func:`hero_explorer`'s two views, by the names the builder gives them (see :func:`hero_mark`).
HERO_MARKS = (
    ("least_frame", "plateau_rules", "trajectory", "exact_trajectory", "regime_label", "eta_label", "zeta_label",
     "threshold_label"),
    ("exact_boundary", "continuous_boundary", "critical_damping", "critical_damping_label", "phase_point",
     "phase_regime_label", "phase_point_label", "k_ref_note", "phase_key"),
)
#: Colour of the critical-damping curve (the critically damped regime's colour).
CRITICAL_COLOR = REGIME_COLORS["critically damped"]


def hero_eta_expression() -> Expr:
    """The step size ``eta`` from the slider's ``log_eta``: ``10 ** log_eta`` to three significant digits.

    Returns
    -------
    Expr
        ``eta`` as a function of the param ``log_eta`` (the rounding keeps the shown ``eta`` a plain
        number: ``log_eta = -1.70`` gives ``0.02``, not ``0.0199526``).

    Examples
    --------
    >>> float(hero_eta_expression().evaluate(log_eta=-1.70))
    0.02
    >>> float(hero_eta_expression().evaluate(log_eta=3.6))
    3980.0
    """
    log_eta = var("log_eta")
    e, f = fn.pow(10.0, log_eta), fn.floor(log_eta)
    q, p = fn.pow(10.0, 2.0 - f), fn.pow(10.0, f - 2.0)  # exact powers of ten on either branch
    return where(f <= 2.0, fn.round(e * q) / q, fn.round(e / p) * p)


def hero_key(lag_index: Expr | int, optimizer: Expr | int, mu_percent: Expr | int, k_ref: Expr | int):
    """The key of :func:`hero_table`'s rows: ``((lag_index * 2 + optimizer) * 100 + mu_percent) * 100 + k_ref``.

    ``lag_index`` 0 (constant lag) or 1 (refresh lag; ratio-corrected reuse reads the refresh rows at
    ``k_ref = 1``), ``optimizer`` a key of :data:`OPTIMIZERS`, ``mu_percent = round(100 mu)``.
    Integers give an int, :class:`~widgets.vega_expr.Expr` operands an ``Expr`` for the page.

    >>> hero_key(1, 0, 80, 4)
    28004
    """
    return ((lag_index * 2 + optimizer) * 100 + mu_percent) * 100 + k_ref


def _key_on_page(k_ref: Expr) -> Expr:
    """:func:`hero_key` of the current controls, at ``k_ref`` (the param or a datum field)."""
    lag_model = var("lag_model")
    return hero_key(where(lag_model > 0.5, 1.0, 0.0), var("optimizer"), fn.round(var("mu") * 100.0),
                    where(lag_model > 1.5, 1.0, k_ref))


def _sig(value: float, digits: int = 6) -> float | None:
    """``value`` to ``digits`` significant digits; ``None`` (JSON null) when not finite."""
    return float(f"{value:.{digits}g}") if math.isfinite(value) else None


def hero_table(mu_grid: Sequence[float] | None = None,
               k_refs: Sequence[int] = PHASE_K_REFS) -> list[dict[str, float | int | None]]:
    """The thresholds :func:`hero_explorer` looks up on the page, one record per setting of its controls.

    For each lag model (constant, refresh), optimizer (:data:`OPTIMIZERS`), ``mu`` and ``k_ref``: the
    critical ``a = eta K`` (per step) of the exact recurrence, of the continuous model and of critical
    damping.

    Parameters
    ----------
    mu_grid : sequence of float, optional
        Momenta in ``[0, 1)`` on the 0.01 grid (default: the control's grid, 0 to 0.99).
    k_refs : sequence of int
        Refresh intervals ``>= 1`` (below 100: the key holds two digits).

    Returns
    -------
    list of dict
        ``2 * 2 * len(mu_grid) * len(k_refs)`` records: ``key`` (:func:`hero_key`), ``x`` (exact
        threshold, :func:`grpo_core.model.stability.critical_a_exact` at full precision: the page's
        verdict compares ``eta K >= x``), ``c`` (continuous threshold ``C = 0``,
        :func:`~grpo_core.model.stability.critical_a_continuous`, 6 significant digits, ``None`` where
        there is no lag) and ``z`` (critical damping ``zeta = 1``, where ``C^2 = 4 M K_eff`` for the
        coefficients of :func:`grpo_core.model.oscillator.coefficients`:
        :func:`~grpo_core.model.stability.critical_a_damping`, 6 significant digits).

    Raises
    ------
    ParameterError
        A momentum outside ``[0, 1)`` or off the 0.01 grid, a ``k_ref`` outside ``1..99``.

    Examples
    --------
    >>> rows = {r["key"]: r for r in hero_table([0.8], [1, 4])}
    >>> round(rows[hero_key(0, 0, 80, 4)]["x"], 4), rows[hero_key(0, 0, 80, 4)]["c"]
    (0.0557, 0.05)
    >>> rows[hero_key(1, 0, 80, 1)]["c"] is None  # refresh lag at K_ref = 1: no lag, no C = 0
    True
    """
    mu = np.asarray(_MU_GRID if mu_grid is None else mu_grid, dtype=float)
    k = np.asarray(k_refs)
    percent = np.round(mu * 100).astype(int)
    if mu.ndim != 1 or not np.allclose(percent / 100, mu, atol=1e-9):
        raise ParameterError("mu_grid", "`mu_grid` must be momenta on the 0.01 grid")
    if k.ndim != 1 or not np.all((k >= 1) & (k <= 99)):
        raise ParameterError("k_refs", f"`k_refs` must be integers in 1..99; got {list(k)}")
    rows: list[dict[str, float | int | None]] = []
    for li, lag in enumerate(("constant", "refresh")):
        for mi, (momentum, _) in OPTIMIZERS.items():
            exact = stability.critical_a_exact(mu[:, None], k[None, :], lag, momentum)
            with np.errstate(divide="ignore"):
                cont = stability.critical_a_continuous(mu[:, None], k[None, :], lag, momentum)
            damp = stability.critical_a_damping(mu[:, None], k[None, :], lag, momentum)
            for i, m in enumerate(percent):
                for j, kk in enumerate(k):
                    rows.append({"key": hero_key(li, mi, int(m), int(kk)),
                                 "x": float(exact[i, j]) if np.isfinite(exact[i, j]) else None,
                                 "c": _sig(float(cont[i, j])), "z": _sig(float(damp[i, j]))})
    return rows


def hero_frames(rows: list[dict]) -> dict[tuple[int, int], tuple[float, float]]:
    """The phase diagram's y-domain of :func:`hero_explorer` for each mode, from :func:`hero_table`'s rows.

    Whole decades holding every boundary of the mode on the control grid (exact, continuous and
    critical damping, every ``mu`` and ``K_ref``) with a quarter of room: the axis stays put while
    ``mu`` and ``K_ref`` move and changes only with the optimizer or the lag model.

    Parameters
    ----------
    rows : list of dict
        :func:`hero_table`'s records (every lag model and optimizer).

    Returns
    -------
    dict
        ``(lag_model, optimizer) -> (lo, hi)`` in ``eta K`` (per step), ``lag_model`` a key of
        :data:`LAG_MODELS` (2: ratio-corrected reuse, the refresh rows at ``K_ref = 1``).

    Raises
    ------
    ParameterError
        If ``rows`` lack a mode's records.

    Examples
    --------
    >>> frames = hero_frames(hero_table())
    >>> frames[(0, 0)], frames[(2, 1)]  # heavy ball, constant lag; Adam, ratio-corrected reuse
    ((1e-05, 10.0), (0.001, 1000.0))
    """
    out = {}
    for lag_model in LAG_MODELS:
        for optimizer in OPTIMIZERS:
            values = [v for r in rows
                      if (r["key"] // 10000) == (1 if lag_model else 0) * 2 + optimizer
                      and (lag_model < 2 or r["key"] % 100 == 1)
                      for v in (r["x"], r["c"], r["z"]) if v is not None and v > 0]
            if not values:
                raise ParameterError("rows", f"`rows` hold no thresholds of lag model {lag_model}, "
                                             f"optimizer {optimizer} (use hero_table)")
            least, most = min(values), max(values)
            out[(lag_model, optimizer)] = (10.0 ** math.floor(math.log10(least / 1.25)),
                                           10.0 ** math.ceil(math.log10(most * 1.25)))
    return out


def hero_mark(name: str) -> str:
    """The Vega-Lite name of :func:`hero_explorer`'s mark ``name`` (with its view's index, 0 for the
    trajectory, 1 for the phase diagram, as Altair writes it).

    Raises
    ------
    ParameterError
        A name that is not one of the hero's marks.

    >>> hero_mark("regime_label"), hero_mark("phase_point")
    ('regime_label_0', 'phase_point_1')
    """
    for index, names in enumerate(HERO_MARKS):
        if name in names:
            return f"{name}_{index}"
    raise ParameterError("name", f"`name` must be one of {sorted(HERO_MARKS[0] + HERO_MARKS[1])}; got {name!r}")


def _by_mode(values: dict[tuple[int, int], float]) -> str:
    """A Vega expression choosing ``values[(lag_model, optimizer)]`` by the params."""
    def by_opt(lag_model: int) -> str:
        return f"(optimizer > 0.5 ? {values[(lag_model, 1)]!r} : {values[(lag_model, 0)]!r})"
    return f"(lag_model > 1.5 ? {by_opt(2)} : lag_model > 0.5 ? {by_opt(1)} : {by_opt(0)})"


def _d3_r3(x: Expr) -> Expr:
    """``x`` to three significant digits in decimal notation (d3 ``.3~r``: 3980, 0.0557, 0.00001)."""
    return Expr(f"format({x.vega}, '.3~r')",
                lambda env: np.vectorize(lambda v: np.format_float_positional(float(f"{float(v):.3g}"), trim="-"),
                                         otypes=[str])(x._eval(env)))


def hero_explorer(
    eta: float = 0.02,
    mu: float = 0.8,
    k_ref: int = 4,
    curvature: float = 1.0,
    *,
    lag: str = "constant",
    momentum: str = "heavy_ball",
    horizon: int = 300,
    width: int = HERO_WIDTH,
) -> alt.VConcatChart:
    """The oscillator explorer on a static page: the trajectory and the phase diagram, one set of controls.

    One Vega-Lite spec, computed in the browser (no kernel). Its controls are top-level params
    (:data:`HERO_CONTROLS`) shared by two stacked views, so a setting moves both:

    * ``log_eta``: a slider over ``log10(eta)`` (:data:`HERO_LOG_ETA`, notches of
      :data:`HERO_LOG_ETA_STEP`); the param ``eta`` is derived from it
      (:func:`hero_eta_expression`) and the chart prints ``eta`` itself (``eta_label``);
    * ``mu`` (0 to 0.99 by 0.01), ``k_ref`` (a select over :data:`PHASE_K_REFS`, 1 to 64),
      ``curvature`` ``K`` (:data:`HERO_CURVATURE`);
    * ``optimizer`` (SGD with heavy-ball momentum, or Adam: the EMA convention, ``mu = beta1``, ``K``
      read as Adam's preconditioned ``K/sqrt(v)``) and ``lag_model`` (constant lag, refresh lag, or
      ratio-corrected reuse, which removes the lag from the expected update: the on-policy
      recurrence whatever ``k_ref``; the chart then says ``K_ref`` has no effect, ``k_ref_note``).

    The top view is the trajectory from rest of :func:`slider_chart` (the continuous closed form,
    ``trajectory``, solid; the exact recurrence, ``exact_trajectory``, dashed). The bottom view is the
    phase diagram over ``(K_ref, eta K)`` at the current ``mu``, optimizer and lag model: the exact
    threshold (``exact_boundary``, solid), the continuous one ``C = 0`` (``continuous_boundary``,
    dashed; absent without lag), the critical-damping curve ``zeta = 1`` of the continuous model
    (``critical_damping``, dotted, labelled ``critical_damping_label``: overdamped below it,
    underdamped above) and the current point (``phase_point``; a triangle on the frame's edge when
    outside it). Every threshold is quoted in ``eta K`` (per step), the phase diagram's y-axis. Text
    marks, by Vega-Lite name (Altair appends the view's index to every mark's name in a
    concatenation: ``regime_label_0``, ``trajectory_0`` in the trajectory, ``phase_point_1`` in the
    phase diagram; :func:`hero_mark` gives the full name):

    * ``regime_label`` and ``phase_regime_label``: the verdict of
      :func:`grpo_core.model.oscillator.regime_verdict` (``overdamped``, ``critically damped``,
      ``underdamped``, ``stable (exact recurrence only)`` or ``unstable``);
    * ``eta_label``: ``"η = 0.02, η·K = 0.02"``; ``zeta_label``: ``"damping ratio ζ = 0.41"``;
    * ``threshold_label``: ``"threshold η·K = 0.05 (continuous, C = 0) and 0.0557 (exact, constant
      lag)"``; without lag ``"threshold η·K = 3.6 (exact, ratio-corrected reuse); no continuous
      threshold (no lag)"``;
    * ``phase_point_label``: ``"point: K_ref = 4, η·K = 0.02; exact threshold η·K = 0.0557 at μ = 0.8"``;
    * ``k_ref_note``: :data:`K_REF_NO_EFFECT`, drawn only under ratio-corrected reuse;
    * ``phase_key``: which line is which.

    The thresholds are looked up in :func:`hero_table` (precomputed by :mod:`grpo_core.model.stability`
    for every ``mu``, ``K_ref``, lag model and optimizer of the controls); the trajectory, the damping
    ratio and the regime are Vega expressions (:func:`oscillator_expressions`,
    :func:`exact_recurrence_expressions`) tested against :mod:`grpo_core`. The chart asks vega-embed for
    the SVG renderer, so the labels are ``<text>`` elements a browser test can read.

    Parameters
    ----------
    eta : float
        Initial step size, in ``[1e-5, 1e4]``; the slider starts at the notch nearest ``log10(eta)``
        and shows that notch's ``eta`` to three significant digits (0.02 exactly).
    mu : float
        Initial momentum in ``[0, 0.99]`` (snapped to the 0.01 grid).
    k_ref : int
        Initial refresh interval, one of :data:`PHASE_K_REFS`.
    curvature : float
        Initial ``K`` in ``[0.1, 5]`` (snapped to the 0.1 grid).
    lag : {"constant", "refresh", "ratio"}
        Initial lag model.
    momentum : {"heavy_ball", "ema"}
        Initial optimizer (``"ema"``: Adam).
    horizon : int
        Steps of the trajectory (``t = 0..horizon``).
    width : int
        Width in pixels of each view (:data:`HERO_WIDTH`; the heights are :data:`HERO_HEIGHTS`).

    Returns
    -------
    alt.VConcatChart
        The two views, stacked, with the params of :data:`HERO_PARAMS` at the top level.

    Raises
    ------
    ParameterError
        An initial value outside its control, ``k_ref`` not in :data:`PHASE_K_REFS`, an unknown ``lag``
        or ``momentum``, ``horizon < 1``.

    See Also
    --------
    slider_chart, widgets.explorer_charts.static_phase_chart : the two views as separate charts.
    widgets.oscillator_explorer.oscillator_explorer : the live explorer (Python kernel).

    Examples
    --------
    >>> spec = hero_explorer().to_dict()
    >>> sorted(p["name"] for p in spec["params"]) == sorted(HERO_PARAMS)
    True
    >>> [p["bind"]["input"] for p in spec["params"] if p["name"] == "log_eta"]
    ['range']
    """
    lag_keys = {name: key for key, (name, _) in LAG_MODELS.items()}
    if lag not in lag_keys:
        raise ParameterError("lag", f"`lag` must be one of {sorted(lag_keys)}; got {lag!r}")
    momentum = check_momentum(momentum)
    horizon = check_integer("horizon", horizon, low=1)
    c0 = osc.coefficients(eta, mu, k_ref, curvature, lag="refresh" if lag == "ratio" else lag, momentum=momentum)
    lo_log, hi_log = HERO_LOG_ETA
    if not 10.0 ** lo_log <= c0.eta <= 10.0 ** hi_log:
        raise ParameterError("eta", f"`eta` must be in [{10.0 ** lo_log:g}, {10.0 ** hi_log:g}]; got {eta}")
    if not 0.0 <= c0.mu <= 0.99:
        raise ParameterError("mu", f"`mu` must be in [0, 0.99] (the slider range); got {mu}")
    if k_ref not in PHASE_K_REFS:
        raise ParameterError("k_ref", f"`k_ref` must be one of {PHASE_K_REFS}; got {k_ref}")
    k_lo, k_hi, k_step = HERO_CURVATURE
    if not k_lo <= c0.curvature <= k_hi:
        raise ParameterError("curvature", f"`curvature` must be in [{k_lo}, {k_hi}]; got {curvature}")
    rows = hero_table()
    frames = hero_frames(rows)
    params = [
        alt.param(name="log_eta", value=round(math.log10(c0.eta) / HERO_LOG_ETA_STEP) * HERO_LOG_ETA_STEP,
                  bind=alt.binding_range(min=lo_log, max=hi_log, step=HERO_LOG_ETA_STEP,
                                         name="log₁₀ η (step size; η is shown in the chart) ")),
        alt.param(name="mu", value=round(c0.mu, 2),
                  bind=alt.binding_range(min=0.0, max=0.99, step=0.01, name="μ (momentum) ")),
        alt.param(name="k_ref", value=int(k_ref),
                  bind=alt.binding_select(options=list(PHASE_K_REFS), name="K_ref (refresh interval) ")),
        alt.param(name="curvature", value=round(c0.curvature / k_step) * k_step,
                  bind=alt.binding_range(min=k_lo, max=k_hi, step=k_step, name="K (curvature) ")),
        alt.param(name="optimizer", value={m: k for k, (m, _) in OPTIMIZERS.items()}[momentum],
                  bind=alt.binding_radio(options=list(OPTIMIZERS), labels=[v[1] for v in OPTIMIZERS.values()],
                                         name="optimizer ")),
        alt.param(name="lag_model", value=lag_keys[lag],
                  bind=alt.binding_radio(options=list(LAG_MODELS), labels=[v[1] for v in LAG_MODELS.values()],
                                         name="reuse of a batch ")),
        alt.param(name="eta", expr=str(hero_eta_expression())),
        alt.param(name="phase_lo", expr=_by_mode({m: f[0] for m, f in frames.items()})),
        alt.param(name="phase_hi", expr=_by_mode({m: f[1] for m, f in frames.items()})),
    ]
    ex = _switched_expressions()
    a = var("eta") * var("curvature")
    # the table by name, stored once at the top level (inline, it was deep-copied with every transform)
    lookup = alt.LookupData(data=alt.NamedData(name=HERO_TABLE_NAME), key="key", fields=["x", "c", "z"])
    lag_words = where(var("lag_model") > 1.5, lit("ratio-corrected reuse"),
                      where(var("lag_model") > 0.5, lit("refresh lag"), lit("constant lag")))
    x_star, c_star = var("x", "datum.x"), var("c", "datum.c")
    has_c = Expr("isValid(datum.c)", lambda env: np.isfinite(np.asarray(env["c"], float)))
    colour_of = " : ".join(f"datum.verdict == {k!r} ? {v!r}" for k, v in REGIME_COLORS.items()) + f" : {INK!r}"

    # the current setting: one row, its thresholds looked up, its verdict computed
    current = alt.Chart(alt.Data(values=[{"_": 0}])).transform_calculate(
        key=str(_key_on_page(var("k_ref")))).transform_lookup(lookup="key", from_=lookup).transform_calculate(
        a_star="datum.x", a=str(a)).transform_calculate(verdict=str(ex["verdict"])).transform_calculate(
        verdict_colour=colour_of)

    # --- the trajectory --------------------------------------------------------------------------
    traj_height, phase_height = HERO_HEIGHTS
    least, rules, line, exact = _trajectory_layers(ex["response"], horizon)
    regime_text = current.mark_text(align="left", baseline="bottom", fontSize=FONT["verdict"],
                                    fontWeight="bold").encode(
        x=alt.value(0), y=alt.value(-46), text="verdict:N",
        color=alt.Color("verdict_colour:N", scale=None)).properties(name="regime_label")
    eta_text = current.transform_calculate(
        label=str("η = " + _d3_r3(var("eta")) + ", η·K = " + _d3_r3(a)),
    ).mark_text(align="left", baseline="bottom", fontSize=FONT["label"]).encode(
        x=alt.value(0), y=alt.value(-27), text="label:N").properties(name="eta_label")
    zeta_text = current.transform_calculate(
        label=str("damping ratio ζ = " + fn.format(ex["damping_ratio"], ".2f")),
    ).mark_text(align="right", baseline="bottom", fontSize=FONT["label"]).encode(
        # at the plot's right edge, wherever a narrower page puts it
        x=alt.value("width"), y=alt.value(-27), text="label:N").properties(name="zeta_label")
    thr_text = current.transform_calculate(
        label=str(where(has_c,
                        "threshold η·K = " + _d3_r3(c_star) + " (continuous, C = 0) and " + _d3_r3(x_star)
                        + " (exact, " + lag_words + ")",
                        "threshold η·K = " + _d3_r3(x_star) + " (exact, " + lag_words
                        + "); no continuous threshold (no lag)")),
    ).mark_text(align="left", baseline="bottom", fontSize=FONT["annotation"], color=NOTE).encode(
        x=alt.value(0), y=alt.value(-10), text="label:N").properties(name="threshold_label")
    trajectory = alt.layer(least, rules, line, exact, regime_text, eta_text, zeta_text, thr_text).properties(
        width=width, height=traj_height)

    # --- the phase diagram -----------------------------------------------------------------------
    # the K_ref axis padded by a quarter of a notch either side: a point at K_ref = 1 or 64 is whole
    x = alt.X("k_ref:Q", title="K_ref (steps)", axis=alt.Axis(values=[1, 2, 4, 8, 16, 32, 64]),
              scale=alt.Scale(type="log", nice=False, domain=[PHASE_K_REFS[0] / 1.25, PHASE_K_REFS[-1] * 1.25]))
    los = [f[0] for f in frames.values()]
    his = [f[1] for f in frames.values()]
    decades = [10.0 ** j for j in range(round(math.log10(min(los))), round(math.log10(max(his))) + 1)]
    y_scale = alt.Scale(type="log", domain=alt.ExprRef("[phase_lo, phase_hi]"), nice=False)

    def y(field: str) -> alt.Y:
        return alt.Y(f"{field}:Q", title="η·K (per step)", scale=y_scale, axis=alt.Axis(values=decades, format="~g"))

    def in_frame(field: str) -> str:
        v = f"datum.{field}"
        return f"isValid({v}) && isFinite({v}) && {v} >= phase_lo && {v} <= phase_hi"

    lines = alt.Chart(alt.Data(values=[{"k_ref": k} for k in PHASE_K_REFS])).transform_calculate(
        key=str(_key_on_page(var("k", "datum.k_ref")))).transform_lookup(lookup="key", from_=lookup)
    exact_line = lines.transform_filter(in_frame("x")).mark_line(color=ACCENT, strokeWidth=2.5, clip=True).encode(
        x=x, y=y("x")).properties(name="exact_boundary")
    cont_line = lines.transform_filter(in_frame("c")).mark_line(
        color=ACCENT, strokeDash=[6, 3], strokeWidth=1.5, clip=True).encode(x=x, y=y("c")).properties(
        name="continuous_boundary")
    damping_line = lines.transform_filter(in_frame("z")).mark_line(
        color=CRITICAL_COLOR, strokeDash=[2, 3], strokeWidth=2, clip=True).encode(x=x, y=y("z")).properties(
        name="critical_damping")
    damping_text = lines.transform_filter(in_frame("z")).transform_filter(
        f"datum.k_ref == {PHASE_K_REFS[0]}").mark_text(
        align="left", baseline="bottom", dx=4, dy=-4, fontSize=FONT["small"], color=CRITICAL_COLOR,
    ).encode(x=x, y=y("z"), text=alt.value("critical damping ζ = 1")).properties(name="critical_damping_label")
    point_base = current.transform_calculate(
        kx="k_ref", a_plot="clamp(datum.a, phase_lo, phase_hi)",
        shape="datum.a > phase_hi ? 'triangle-up' : datum.a < phase_lo ? 'triangle-down' : 'diamond'")
    point = point_base.mark_point(size=200, filled=True, stroke="black", strokeWidth=1).encode(
        x=alt.X("kx:Q"), y=y("a_plot"), shape=alt.Shape("shape:N", scale=None),
        color=alt.Color("verdict_colour:N", scale=None),
        tooltip=[alt.Tooltip("verdict:N", title="verdict"), alt.Tooltip("a:Q", title="η·K", format=".3~r")],
    ).properties(name="phase_point")
    phase_regime = current.mark_text(align="left", baseline="bottom", fontSize=FONT["label"] + 3,
                                     fontWeight="bold").encode(
        x=alt.value(0), y=alt.value(-44), text="verdict:N",
        color=alt.Color("verdict_colour:N", scale=None)).properties(name="phase_regime_label")
    point_text = current.transform_calculate(
        label=str(where(var("lag_model") > 1.5,
                        "point: η·K = " + _d3_r3(a) + "; exact threshold η·K = " + _d3_r3(x_star)
                        + " at every K_ref (μ = " + fn.format(var("mu"), ".2f") + ")",
                        "point: K_ref = " + fn.format(var("k_ref"), "d") + ", η·K = " + _d3_r3(a)
                        + "; exact threshold η·K = " + _d3_r3(x_star) + " (μ = " + fn.format(var("mu"), ".2f")
                        + ")")),
    ).mark_text(align="left", baseline="bottom", fontSize=FONT["annotation"], color=NOTE).encode(
        x=alt.value(0), y=alt.value(-26), text="label:N").properties(name="phase_point_label")
    note = alt.Chart(alt.Data(values=[{"text": K_REF_NO_EFFECT}])).transform_filter("lag_model > 1.5").mark_text(
        align="left", baseline="bottom", fontSize=FONT["annotation"], fontStyle="italic",
        color=STATUS_COLORS["warning"]).encode(
        x=alt.value(0), y=alt.value(-9), text="text:N").properties(name="k_ref_note")
    key = alt.Chart(alt.Data(values=[{"_": 0}])).transform_calculate(
        text="(lag_model > 1.5 ? 'solid: exact threshold (on-policy, the same at every K_ref); "
             "no continuous threshold (no lag)' : 'solid: exact threshold; dashed: continuous C = 0')"
             " + '\\ndotted: critical damping ζ = 1 of the continuous model (overdamped below it, "
             "underdamped above)'",
    ).mark_text(align="left", baseline="top", fontSize=FONT["small"], color=NOTE, lineBreak="\n").encode(
        x=alt.value(0), y=alt.value(phase_height + 40), text="text:N").properties(name="phase_key")
    phase = alt.layer(exact_line, cont_line, damping_line, damping_text, point, phase_regime, point_text, note,
                      key).properties(width=width, height=phase_height)
    # the curves' legend under the trajectory's own axis (shared, it would sit under the phase diagram)
    return alt.vconcat(trajectory, phase, spacing=30).resolve_scale(
        color="independent", strokeDash="independent").add_params(*params).properties(
        datasets={HERO_TABLE_NAME: rows}, usermeta={"embedOptions": {"renderer": "svg", "actions": False}})


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


#: Colour of each lag model in :func:`phase_diagram_chart` and :func:`threshold_ratio_chart` (the same
#: encoding in both: colour = lag model, one panel per ``mu``, dash = continuous or exact).
LAG_COLORS = {"constant": OKABE_ITO["blue"], "refresh": OKABE_ITO["vermillion"]}
#: Dash of each threshold kind in the same two charts.
THRESHOLD_DASHES = {"exact": [1, 0], "continuous": [6, 3]}


def _lag_colour() -> alt.Color:
    return alt.Color("lag:N", title="lag model", legend=alt.Legend(orient="bottom"),
                     scale=alt.Scale(domain=list(LAG_COLORS), range=list(LAG_COLORS.values())))


def _threshold_dash(methods: Sequence[str]) -> alt.StrokeDash:
    return alt.StrokeDash("method:N", title="threshold",
                          scale=alt.Scale(domain=list(methods), range=[THRESHOLD_DASHES[m] for m in methods]),
                          legend=alt.Legend(orient="bottom"))


def phase_diagram_chart(
    mus: Sequence[float] = (0.0, 0.5, 0.9), k_refs: Sequence[int] | None = None, momentum: str = "heavy_ball",
) -> alt.FacetChart:
    """Phase diagram over ``(eta*K, K_ref)``: stable below each boundary, unstable above.

    One panel per ``mu``; log-log axes; colour = lag model (:data:`LAG_COLORS`), dash = continuous
    vs exact (:data:`THRESHOLD_DASHES`), both with a legend: the encoding of
    :func:`threshold_ratio_chart`.

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
        color=_lag_colour(),
        strokeDash=_threshold_dash(["exact", "continuous"]),
        detail="boundary:N",
        tooltip=["boundary:N", "mu:Q", "k_ref:Q", alt.Tooltip("a_star:Q", format=".4g")],
    ).properties(width=180, height=200).facet(column=alt.Column("mu:Q", title="momentum μ"))


def threshold_ratio_chart(
    mus: Sequence[float] = (0.0, 0.5, 0.9), k_refs: Sequence[int] | None = None, momentum: str = "heavy_ball",
) -> alt.FacetChart:
    """Exact threshold in units of the paper's: ``a*(exact) * K_ref / (1 - mu)`` against ``K_ref``.

    1 means the continuous (paper) formula is exact; constant lag climbs from 1 (``K_ref = 1``)
    towards ``pi/2`` (``mu = 0``); the refresh lag sits near 2 (exactly 2 for ``mu = 0``). The
    encoding of :func:`phase_diagram_chart`: one panel per ``mu``, colour = lag model
    (:data:`LAG_COLORS`, with a legend), solid = exact.

    Returns
    -------
    alt.FacetChart
        One panel per ``mu``, one line per lag model, log y-axis fitted to the data (shared by the
        panels); 1 on it is the paper's threshold.

    Raises
    ------
    ParameterError
        Invalid inputs.

    Examples
    --------
    >>> from widgets.oscillator_charts import threshold_ratio_chart
    >>> spec = threshold_ratio_chart(mus=[0.0], k_refs=[1, 2]).to_dict()
    >>> spec["spec"]["mark"]["type"], spec["facet"]["column"]["field"], spec["spec"]["encoding"]["color"]["field"]
    ('line', 'mu', 'lag')
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
        x=alt.X("k_ref:Q", title="K_ref (steps)", scale=alt.Scale(type="log", nice=False),
                axis=alt.Axis(values=[1, 2, 4, 8, 16, 32, 64])),
        y=alt.Y("ratio:Q", title="exact threshold × K_ref / (1 − μ)",
                scale=alt.Scale(type="log", nice=False, **({"domain": domain} if domain else {})),
                axis=alt.Axis(values=[v * 10.0**j for j in range(-2, 4) for v in (1, 2, 5)
                                      if domain is None or domain[0] <= v * 10.0**j <= domain[1]])),
        color=_lag_colour(),
        strokeDash=_threshold_dash(["exact"]),
        tooltip=["lag:N", "mu:Q", "k_ref:Q", alt.Tooltip("ratio:Q", format=".3f")],
    ).properties(width=180, height=200).facet(column=alt.Column("mu:Q", title="momentum μ"))


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
