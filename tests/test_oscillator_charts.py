"""The oscillator charts: the static slider chart's Vega expressions against grpo_core, its params and
named label marks (rendered by Vega itself through vl-convert), and the data behind the other charts."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import marks

from grpo_core.errors import ParameterError
from grpo_core.model import noise, stability, trajectories
from grpo_core.model import oscillator as osc
from widgets import oscillator_charts as oc
from widgets.vega_expr import fn, lit, var, where


def _grid(rng, n=400):
    return dict(
        eta=rng.uniform(1e-3, 0.1, n), mu=rng.choice(np.round(np.arange(0, 0.995, 0.01), 2), n),
        k_ref=rng.integers(1, 17, n).astype(float), curvature=rng.uniform(0.1, 5.0, n),
    )


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("momentum", ["heavy_ball", "ema"])
def test_vega_response_equals_relaxation(lag, momentum):
    ex = oc.oscillator_expressions(lag, momentum)
    rng = np.random.default_rng(0)
    g = _grid(rng)
    t = np.linspace(0.5, 200, 60)[:, None]
    got = ex["response"].evaluate(t=t, **g)
    for i in range(0, 400, 7):
        c = osc.coefficients(
            g["eta"][i], g["mu"][i], int(g["k_ref"][i]), g["curvature"][i], lag=lag, momentum=momentum
        )
        ref = osc.relaxation(t[:, 0], c.mass, c.damping, c.stiffness)
        ok = np.abs(ref) < 1e6  # compare where the (possibly growing) curve is on the page's scale
        np.testing.assert_allclose(got[ok[:, None].ravel(), i], ref[ok], rtol=1e-9, atol=1e-12)
        assert float(ex["damping_ratio"].evaluate(**{k: v[i] for k, v in g.items()})) == pytest.approx(
            c.damping_ratio
        )


def test_vega_response_near_critical_damping_has_no_cancellation():
    ex = oc.oscillator_expressions()
    mu, k_ref, curv = 0.5, 4, 1.0
    a_cd = float(stability.critical_a_damping(mu, k_ref)[()])
    t = np.linspace(0.01, 100, 300)
    for f in (1 - 1e-9, 1.0, 1 + 1e-9, 1 + 1e-6):
        c = osc.coefficients(a_cd * f, mu, k_ref, curv)
        got = ex["response"].evaluate(t=t, eta=a_cd * f, mu=mu, k_ref=k_ref, curvature=curv)
        np.testing.assert_allclose(
            got, osc.relaxation(t, c.mass, c.damping, c.stiffness), rtol=1e-8, atol=1e-10
        )


@pytest.mark.parametrize("lag", ["constant", "refresh"])
def test_vega_regime_agrees_with_coefficients_on_a_grid(lag):
    ex = oc.oscillator_expressions(lag)
    etas = np.linspace(0.001, 0.1, 100)
    mus = np.round(np.arange(0, 1.0, 0.05), 2)
    checked = set()
    for mu in mus:
        for k in (1, 2, 4, 8, 16):
            labels = ex["regime"].evaluate(eta=etas, mu=mu, k_ref=k, curvature=1.0)
            # add the critically damped point itself
            a_cd = float(stability.critical_a_damping(mu, k, lag)[()])
            crit = str(ex["regime"].evaluate(eta=a_cd, mu=mu, k_ref=k, curvature=1.0))
            assert crit == "critically damped"
            for e, lab in zip(etas, labels):
                assert lab == osc.coefficients(e, mu, k, 1.0, lag=lag).regime_label
                checked.add(str(lab))
    assert {"overdamped", "underdamped", "unstable"} <= checked


def test_continuous_eta_expression():
    ex = oc.oscillator_expressions()
    got = ex["continuous_eta"].evaluate(eta=0.01, mu=np.array([0.0, 0.9]), k_ref=4.0, curvature=2.0)
    np.testing.assert_allclose(got, [(1 - 0.0) / 8, (1 - 0.9) / 8])
    ref = oc.oscillator_expressions("refresh")["continuous_eta"].evaluate(
        eta=0.01, mu=0.5, k_ref=1.0, curvature=1.0
    )
    assert np.isinf(ref)


def test_expression_language_renders_what_it_evaluates():
    x = var("x", "datum.x")
    e = where((x > 1) & (x < 3), fn.sqrt(x) * 2 - lit(-1.5), fn.max(x, 0.5) / 2)
    assert (
        str(e)
        == "(((datum.x > 1.0) && (datum.x < 3.0)) ? ((sqrt(datum.x) * 2.0) - (-1.5)) : (max(datum.x, 0.5) / "
           "2.0))"
    )
    np.testing.assert_allclose(e.evaluate(x=np.array([0.0, 2.0, 4.0])), [0.25, 2 * np.sqrt(2) + 1.5, 2.0])
    label = "ζ = " + fn.format(x, ".2f")
    assert label.evaluate(x=np.array([0.4149])).tolist() == ["ζ = 0.41"]


def test_slider_chart_params_and_named_marks():
    spec = oc.slider_chart().to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert set(params) == set(oc.SLIDER_PARAMS)
    assert params["eta"]["bind"]["input"] == "range"
    names = [layer.get("name") for layer in spec["layer"]]
    for n in ("regime_label", "zeta_label", "threshold_label", "trajectory"):
        assert n in names
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"


def _svg_texts(chart):
    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(chart.to_dict())
    return svg, re.findall(r"<text[^>]*>([^<]*)</text>", svg)


@pytest.mark.parametrize("eta,mu,k_ref", [(0.02, 0.8, 4), (0.06, 0.8, 4), (0.002, 0.8, 4), (0.03, 0.5, 2),
                                         (0.053, 0.8, 4)])
def test_vega_runtime_computes_the_same_labels(eta, mu, k_ref):
    """Vega itself (vl-convert's engine) evaluates the expressions: the verdict, the damping ratio
    and the exact threshold it prints equal grpo_core's (0.053 at mu 0.8, K_ref 4 lies between the
    continuous threshold 0.05 and the exact one 0.0557: "stable (exact recurrence only)")."""
    chart = oc.slider_chart(eta=eta, mu=mu, k_ref=k_ref)
    svg, texts = _svg_texts(chart)
    c = osc.coefficients(eta, mu, k_ref, 1.0)
    assert osc.VERDICT_LABELS[osc.coefficients_verdict(c)] in texts
    assert "regime_label_marks" in svg
    assert f"damping ratio ζ = {c.damping_ratio:.2f}".replace("-", "−") in texts
    exact = float(stability.critical_a_exact(mu, k_ref)[()])
    thr = [t for t in texts if t.startswith("unstable above")]
    assert thr and f"{exact:.3g} (exact" in thr[0] and f"{(1 - mu) / k_ref:.3g} (continuous)" in thr[0]


@pytest.mark.parametrize("lag", ["constant", "refresh", "ratio"])
@pytest.mark.parametrize("momentum", ["heavy_ball", "ema"])
@pytest.mark.parametrize("eta,mu,k_ref", [(0.02, 0.8, 4), (0.06, 0.5, 8), (0.3, 0.9, 2)])
def test_optimizer_and_lag_controls_switch_the_model(lag, momentum, eta, mu, k_ref):
    """Issue 15: the slider chart's optimizer (heavy ball / Adam) and lag-model (constant / refresh /
    ratio-corrected) controls. Vega evaluates the switched expressions; its verdict, damping ratio and
    exact threshold equal grpo_core's for that optimizer and lag model. Ratio-corrected reuse is the
    on-policy recurrence (the refresh model at k_ref = 1) whatever the k_ref slider says."""
    chart = oc.slider_chart(eta=eta, mu=mu, k_ref=k_ref, lag=lag, momentum=momentum)
    params = {p["name"]: p for p in chart.to_dict()["params"]}
    assert params["optimizer"]["bind"]["input"] == "radio" and params["lag_model"]["bind"]["input"] == "radio"
    svg, texts = _svg_texts(chart)
    lib_lag, lib_k = ("refresh", 1) if lag == "ratio" else (lag, k_ref)
    c = osc.coefficients(eta, mu, lib_k, 1.0, lag=lib_lag, momentum=momentum)
    assert osc.VERDICT_LABELS[osc.coefficients_verdict(c)] in texts
    zeta = [t for t in texts if t.startswith("damping ratio")]
    assert zeta == [f"damping ratio ζ = {c.damping_ratio:.2f}".replace("-", "−")]
    exact = float(stability.critical_a_exact(mu, lib_k, lib_lag, momentum)[()])
    thr = [t for t in texts if t.startswith("unstable above")][0]
    words = {"constant": "constant lag", "refresh": "refresh lag", "ratio": "ratio-corrected reuse"}[lag]
    assert f"{exact:.3g} (exact, {words})" in thr
    if lag == "ratio":  # no lag: no continuous threshold (was printed as "Infinity", then "none")
        assert thr == f"unstable above η = {exact:.3g} (exact, {words}); no continuous threshold (no lag)"
        assert "none" not in thr


def test_switched_expressions_equal_grpo_core_on_a_grid():
    ex = oc._switched_expressions()
    eta, mu, k = np.meshgrid([0.005, 0.05, 0.2], [0.0, 0.5, 0.9], [1, 3, 8], indexing="ij")
    eta, mu, k = eta.ravel(), mu.ravel(), k.ravel()
    for o, (momentum, _) in oc.OPTIMIZERS.items():
        for lm, (lag, _) in oc.LAG_MODELS.items():
            env = dict(eta=eta, mu=mu, k_ref=k.astype(float), curvature=np.ones_like(eta),
                       optimizer=np.full(eta.shape, o), lag_model=np.full(eta.shape, lm))
            got = ex["damping_ratio"].evaluate(**env)
            lib_lag, ks = ("refresh", np.ones_like(k)) if lag == "ratio" else (lag, k)
            want = [osc.coefficients(e, m, int(kk), 1.0, lag=lib_lag, momentum=momentum).damping_ratio
                    for e, m, kk in zip(eta, mu, ks)]
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{momentum} {lag}")


def test_regime_examples_hit_their_regimes():
    for lag in ("constant", "refresh"):
        ex = oc.regime_examples(0.5, 4, 2.0, lag=lag)
        assert [c.regime for c in ex.values()] == list(ex)
        unstable = ex["unstable"]
        assert not stability.is_stable_exact(unstable.a, 0.5, 4, lag)[()]


def test_phase_diagram_data_holds_the_four_boundaries():
    df = oc.phase_diagram_data(mus=[0.0, 0.9], k_refs=[1, 2, 4, 8])
    assert set(df.boundary) == {"continuous, constant lag (paper)", "exact, constant lag",
                                "continuous, refresh lag (ours)", "exact, refresh lag"}
    paper = df[(df.boundary == "continuous, constant lag (paper)") & (df.mu == 0.9)]
    np.testing.assert_allclose(paper.a_star, 0.1 / paper.k_ref)
    assert not ((df.boundary == "continuous, refresh lag (ours)") & (df.k_ref == 1)).any()


def test_noise_bands_agree_with_the_exact_variance():
    c = osc.coefficients(0.05, 0.5, 2, 1.0)
    df = noise.noise_bands(c, (4, 16), n_seeds=256, n_steps=300, seed=1)
    late = df[df.t > 150]
    for g, part in late.groupby("group_size"):
        sd_exact = np.sqrt(noise.stationary_variance_exact(c, 1.0, g))
        assert part.sim_sd.mean() == pytest.approx(sd_exact, rel=0.1)
        np.testing.assert_allclose(part.sim_hi - part.sim_lo, 4 * part.sim_sd, rtol=1e-12)
        np.testing.assert_allclose(part.hi - part.lo, 4 * part.sd, rtol=1e-12)
    ratio = late[late.group_size == 4].sd.mean() / late[late.group_size == 16].sd.mean()
    assert ratio == pytest.approx(2.0, rel=1e-6)  # sd ~ 1/sqrt(G)
    seen = marks(oc.noise_bands_chart(df))
    # the simulated band (area), its mean (solid) and the exact +-2 sd (dashed), by group size
    assert (seen["area"]["y"], seen["area"]["y2"], seen["area"]["color"]) == (
        "sim_lo",
        "sim_hi",
        "group_size",
    )
    assert (
        seen["area"]["x.title"] == "optimizer step" and seen["area"]["y.title"] == "reward progress 1 − e/e₀"
    )
    assert seen["line"]["y"] == "sim_mean"
    dashed = [layer.encoding.y.shorthand for layer in oc.noise_bands_chart(df).layer
              if getattr(layer.mark, "strokeDash", None) == [5, 3]]
    assert dashed == ["lo:Q", "hi:Q"]
    with pytest.raises(
        ParameterError, match=r"`data` lacks column\(s\) \['sim_lo'\] \(use grpo_core\.model\.noise\.noise_bands\)"
    ):
        oc.noise_bands_chart(df.drop(columns=["sim_lo"]))


@pytest.mark.parametrize("lag,momentum", [("constant", "heavy_ball"), ("refresh", "heavy_ball"), ("constant", "ema")])
def test_vega_verdict_equals_the_library_verdict_on_a_grid(lag, momentum):
    """The page's verdict expression, fed the same threshold table, gives regime_verdict's label at
    every (eta, mu, K_ref) of the slider grid, including just past the continuous threshold."""
    ex = oc.oscillator_expressions(lag, momentum)
    etas = np.round(np.arange(0.001, 0.1005, 0.001), 3)
    mus = np.round(np.arange(0.0, 0.995, 0.03), 2)
    k_refs = np.arange(1, 17)
    rows = {(r["m"], r["k_ref"]): r["a_star"] for r in stability.exact_threshold_rows(mus, k_refs, lag, momentum)}
    n_between = 0
    for mu in mus:
        for k in k_refs:
            page = ex["verdict"].evaluate(eta=etas, mu=mu, k_ref=k, curvature=1.0,
                                          a_star=rows[(int(round(mu * 100)), int(k))])
            cs = [osc.coefficients(e, mu, k, 1.0, lag=lag, momentum=momentum) for e in etas]
            stable = stability.is_stable_exact(etas, mu, k, lag, momentum)
            lib = [osc.VERDICT_LABELS[osc.regime_verdict(c.regime, s)] for c, s in zip(cs, stable)]
            assert page.tolist() == lib, (mu, k)
            n_between += lib.count("stable (exact recurrence only)")
    if (lag, momentum) == ("constant", "heavy_ball"):
        assert n_between > 100  # the disputed band between the two thresholds is on the grid


def test_verdict_between_the_thresholds_at_mu_08_k_ref_4():
    """eta K in (0.05, 0.0557]: C <= 0 but the exact recurrence decays (spectral radius < 1), so the
    verdict is "stable (exact recurrence only)"; the slider chart printed "unstable" here before."""
    ex = oc.oscillator_expressions()
    a_star = stability.exact_threshold_rows([0.8], [4])[0]["a_star"]
    assert a_star == pytest.approx(0.0557211, abs=1e-7)
    # a tie: on the continuous threshold at K_ref 1 (radius exactly 1); page and library agree
    tie = stability.exact_threshold_rows([0.96], [1])[0]["a_star"]
    assert str(ex["verdict"].evaluate(eta=0.04, mu=0.96, k_ref=1, curvature=1.0, a_star=tie)) == \
        osc.VERDICT_LABELS[osc.coefficients_verdict(osc.coefficients(0.04, 0.96, 1, 1.0))]
    etas = np.array([0.049, 0.051, 0.053, 0.055, 0.0557, 0.0558])
    page = ex["verdict"].evaluate(eta=etas, mu=0.8, k_ref=4, curvature=1.0, a_star=a_star).tolist()
    assert page == ["underdamped"] + ["stable (exact recurrence only)"] * 4 + ["unstable"]
    for eta, label in zip(etas, page):
        path = trajectories.discrete_trajectory(osc.coefficients(eta, 0.8, 4, 1.0), 20000)
        assert (np.abs(path[-200:]).max() < 1.0) == (label != "unstable")


def _line_vertices(svg: str, mark: str) -> list[tuple[float, float]]:
    """Vertices of the first path of the mark named ``mark`` in a vl-convert SVG (M/L polyline)."""
    group = svg[svg.index(f"{mark}_marks"):]
    d = re.search(r'<path[^>]* d="(M[^"]*)"', group).group(1)
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]
    return list(zip(nums[::2], nums[1::2]))


def test_regime_trajectories_unstable_curve_is_cut_at_the_frame():
    """Fig. 2: Vega itself (vl-convert) draws the unstable closed form up to its first point outside
    [-1, 3] and no further (the clipped version drew hundreds of points at +-1e6 px)."""
    import vl_convert as vlc

    chart = oc.regime_trajectories_chart(mu=0.5, k_ref=4, curvature=1.0, n_steps=120)
    svg = vlc.vegalite_to_svg(chart.to_dict())
    c = oc.regime_examples(0.5, 4, 1.0)["unstable"]
    t = np.linspace(0, 120, 481)
    progress = 1.0 - trajectories.closed_form_trajectory(c, t)
    first_out = int(np.argmax((progress < -1) | (progress > 3)))
    pts = _line_vertices(svg, "regime_line_unstable_3")
    assert len(pts) == first_out + 1  # every point up to the exit, the exit, none after
    assert all(0 <= y <= 150 for _, y in pts[:-1])
    assert pts[-1][1] == pytest.approx(150 + 75 if progress[first_out] < -1 else -75)
    spec = chart.to_dict()
    domains = [p["layer"][1]["encoding"]["y"]["scale"]["domain"] for p in spec["concat"]]
    assert domains[-1] == list(oc.UNSTABLE_FRAME)
    for d in domains[:-1]:  # stable panels: 0 and 1 in, within a frame of height < 2
        assert d[0] <= 0 and d[1] >= 1 and d[1] - d[0] < 2


@pytest.mark.parametrize("eta, whole", [(0.051, True), (0.02, True), (0.1, False)])
def test_slider_chart_draws_slow_growth_for_the_whole_horizon(eta, whole):
    """zeta = -0.01 (eta 0.051 at mu 0.8, K_ref 4): the frame grows with the swings (peaks 2.5, past
    the least frame's 2) and the curve runs all 300 steps; fast growth (eta 0.1) is cut at the cap."""
    import vl_convert as vlc

    chart = oc.slider_chart(eta=eta, mu=0.8, k_ref=4)
    svg = vlc.vegalite_to_svg(chart.to_dict())
    pts = _line_vertices(svg, "trajectory")
    assert (pts[-1][0] == pytest.approx(480)) == whole
    assert all(-0.5 <= y <= 260.5 for _, y in pts)  # every vertex inside the (grown) frame
    c = osc.coefficients(eta, 0.8, 4, 1.0)
    peak = float(np.max(1.0 - trajectories.closed_form_trajectory(c, np.arange(301))))
    if eta == 0.051:
        assert peak > oc.SLIDER_FRAME[1] and len(pts) == 301


@pytest.mark.parametrize("lag_model", sorted(oc.LAG_MODELS))
@pytest.mark.parametrize("optimizer", sorted(oc.OPTIMIZERS))
def test_exact_recurrence_expressions_equal_grpo_core(lag_model, optimizer):
    """The slider chart's dashed curve: the exact recurrence unrolled into one Vega expression per
    step, evaluated in order, is grpo_core's discrete_trajectory for every optimizer and lag model."""
    steps = oc.exact_recurrence_expressions(80)
    momentum, lag = oc.OPTIMIZERS[optimizer][0], oc.LAG_MODELS[lag_model][0]
    for eta, mu, k_ref, curvature in [(0.02, 0.8, 4, 1.0), (0.055, 0.8, 4, 1.0), (0.3, 0.5, 3, 0.5),
                                      (0.05, 0.0, 1, 2.0), (0.01, 0.95, 16, 1.3)]:
        env = dict(eta=eta, mu=mu, k_ref=k_ref, curvature=curvature, optimizer=optimizer, lag_model=lag_model)
        for name, ex in steps:
            env[name] = ex.evaluate(**env)
        got = np.array([float(env[f"e{k}"]) for k in range(81)])
        lib_lag, lib_k = ("refresh", 1) if lag == "ratio" else (lag, k_ref)
        c = osc.coefficients(eta, mu, lib_k, curvature, lag=lib_lag, momentum=momentum)
        np.testing.assert_allclose(got, trajectories.discrete_trajectory(c, 80), rtol=1e-12, atol=1e-12,
                                   err_msg=f"{momentum} {lag} {eta} {mu} {k_ref}")


@pytest.mark.parametrize("eta", [0.053, 0.055, 0.065])
def test_slider_chart_draws_the_exact_recurrence_that_the_verdict_is_about(eta):
    """Issue 17: between the continuous threshold (0.05 at mu 0.8, K_ref 4) and the exact one (0.0557)
    the verdict reads "stable (exact recurrence only)" while the closed form diverges: Vega (vl-convert)
    also draws the exact recurrence, dashed, and it stays in the frame for all 300 steps exactly when
    the verdict says stable (at 0.065, unstable, it leaves at step 128); the closed form is cut where
    it leaves."""
    import vl_convert as vlc

    chart = oc.slider_chart(eta=eta, mu=0.8, k_ref=4)
    svg = vlc.vegalite_to_svg(chart.to_dict())
    verdict = osc.coefficients_verdict(osc.coefficients(eta, 0.8, 4, 1.0))
    assert verdict == ("unstable" if eta > 0.0557 else "stable_exact_only")
    assert osc.VERDICT_LABELS[verdict] in re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    exact = _line_vertices(svg, "exact_trajectory")
    closed = _line_vertices(svg, "trajectory")
    assert all(-0.5 <= y <= 260.5 for _, y in exact)
    assert (exact[-1][0] == pytest.approx(480)) == (verdict == "stable_exact_only")
    if eta == 0.055:
        assert closed[-1][0] < 400  # the closed form leaves the frame (step ~180) ...
        assert len(exact) == 301  # ... the exact recurrence runs all 300 steps
    assert all(m in svg for m in oc.SLIDER_CURVES)  # the legend names both curves


def test_slider_threshold_label_has_significant_digits():
    """mu 0.99, K_ref 16, K 5: the thresholds are ~1.3e-4; a fixed .4f printed both as 0.0001."""
    import vl_convert as vlc

    chart = oc.slider_chart(eta=0.001, mu=0.99, k_ref=16, curvature=5.0)
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", vlc.vegalite_to_svg(chart.to_dict()))
    (thr,) = [t for t in texts if t.startswith("unstable above")]
    exact = float(stability.critical_a_exact(0.99, 16)[()]) / 5.0
    continuous = (1 - 0.99) / 16 / 5.0
    assert thr == f"unstable above η = {continuous:.3g} (continuous), {exact:.3g} (exact, constant lag)"
    assert f"{continuous:.3g}" != f"{exact:.3g}"


# --- The hero explorer: one spec, two views, one set of controls ----------------------------------


def _d3_r3(v: float) -> str:
    """d3's ``format(v, '.3~r')`` (three significant digits, decimal notation, zeros trimmed)."""
    return np.format_float_positional(float(f"{v:.3g}"), trim="-")


def _page_eta(log_eta: float) -> float:
    return float(oc.hero_eta_expression().evaluate(log_eta=log_eta))


@pytest.fixture(scope="module")
def hero_spec():
    return oc.hero_explorer().to_dict()


def _used_params(view: dict) -> set[str]:
    """The params a view's expressions read (names as whole words in its JSON, outside the data)."""
    import json

    text = json.dumps(view)
    return {p for p in oc.HERO_PARAMS if re.search(rf"(?<![\w.'\"]){p}(?![\w'\"])", text)}


def test_hero_is_one_spec_whose_params_both_views_read(hero_spec):
    """One set of top-level params (the controls and eta derived from log_eta), none inside a view,
    and both views read every control that acts on them: a reader's setting is never lost between
    the trajectory and the phase diagram."""
    params = {p["name"]: p for p in hero_spec["params"]}
    assert set(params) == set(oc.HERO_PARAMS)
    assert [p["name"] for p in hero_spec["params"] if "bind" in p] == list(oc.HERO_CONTROLS)
    top, phase = hero_spec["vconcat"]
    assert all("params" not in v and "params" not in layer for v in (top, phase) for layer in v["layer"])
    shared = {"eta", "mu", "k_ref", "curvature", "optimizer", "lag_model"}
    assert shared <= _used_params(top) and shared | {"phase_lo", "phase_hi"} <= _used_params(phase)
    # the step size: a range slider over log10(eta); eta is derived from it, and is what the chart prints
    bind = params["log_eta"]["bind"]
    assert (bind["input"], bind["min"], bind["max"], bind["step"]) == ("range", -5.0, 4.0, 0.01)
    assert params["log_eta"]["value"] == pytest.approx(-1.70) and "log_eta" in params["eta"]["expr"]
    assert "eta" not in {p["name"] for p in hero_spec["params"] if "bind" in p}
    # one K_ref control, a select over the phase diagram's K_ref grid (1 to 64)
    assert params["k_ref"]["bind"] == {"input": "select", "options": list(oc.PHASE_K_REFS),
                                       "name": "K_ref (refresh interval) "}
    # the defaults of the chapter and of the Explorers page
    assert (params["mu"]["value"], params["k_ref"]["value"], params["curvature"]["value"]) == (0.8, 4, 1.0)
    assert (params["optimizer"]["value"], params["lag_model"]["value"]) == (0, 0)
    # stacked, one width for both views (a phone script narrows widths, it does not rearrange)
    assert top["width"] == phase["width"] == oc.HERO_WIDTH and oc.HERO_WIDTH <= 620
    assert hero_spec["usermeta"]["embedOptions"]["renderer"] == "svg"
    # no text below 10 px
    sizes = [layer["mark"].get("fontSize") for v in (top, phase) for layer in v["layer"]
             if isinstance(layer["mark"], dict) and layer["mark"]["type"] == "text"]
    assert sizes and all(s is None or s >= 10 for s in sizes)


def test_hero_eta_slider_reaches_past_every_threshold():
    """log_eta runs from 1e-5 to 1e4: past the largest exact and continuous threshold of every
    optimizer and lag model on the controls' grid (mu 0..0.99, K_ref 1..64, K 0.1..5), Adam's included,
    and below the smallest; eta is 10**log_eta to three significant digits (0.02 at -1.70)."""
    mu = np.round(np.arange(0.0, 0.995, 0.01), 2)[:, None]
    k = np.asarray(oc.PHASE_K_REFS)[None, :]
    k_lo, k_hi, _ = oc.HERO_CURVATURE
    least, most = np.inf, 0.0
    for lag, ks in (("constant", k), ("refresh", k), ("refresh", np.ones_like(k))):  # last: ratio-corrected
        for momentum in ("heavy_ball", "ema"):
            with np.errstate(divide="ignore"):
                a = np.concatenate([np.ravel(stability.critical_a_exact(mu, ks, lag, momentum)),
                                    np.ravel(stability.critical_a_continuous(mu, ks, lag, momentum))])
            a = a[np.isfinite(a)]
            least, most = min(least, a.min() / k_hi), max(most, a.max() / k_lo)
    lo, hi = oc.HERO_LOG_ETA
    assert 10.0**lo < least < 1e-4 and 1e3 < most < 10.0**hi  # 3.1e-5 and 3980
    adam = float(stability.critical_a_exact(0.8, 4, "constant", "ema")[()])
    assert adam == pytest.approx(0.2786, abs=1e-4)  # the defaults' Adam threshold, well inside
    notches = np.round(np.arange(lo, hi + 1e-9, 0.01), 2)
    etas = oc.hero_eta_expression().evaluate(log_eta=notches)
    np.testing.assert_allclose(etas, 10.0**notches, rtol=5e-3)
    assert np.all(np.diff(etas) >= 0) and float(etas[0]) == 1e-5 and float(etas[-1]) == 1e4
    for eta in (0.02, 0.2, 0.001, 1.0, 100.0):
        assert _page_eta(round(np.log10(eta), 2)) == eta


def test_hero_table_holds_grpo_core_thresholds_and_the_critical_damping_curve():
    """The table the page looks up: the exact threshold at full precision, the continuous one, and the
    critical-damping a at which the coefficients' damping ratio C / (2 sqrt(M K_eff)) is 1."""
    rows = {r["key"]: r for r in oc.hero_table()}
    assert len(rows) == 2 * 2 * 100 * len(oc.PHASE_K_REFS)
    rng = np.random.default_rng(3)
    for _ in range(300):
        li, mi = int(rng.integers(2)), int(rng.integers(2))
        m, k = int(rng.integers(100)), int(rng.choice(oc.PHASE_K_REFS))
        lag, momentum = ("constant", "refresh")[li], oc.OPTIMIZERS[mi][0]
        r = rows[oc.hero_key(li, mi, m, k)]
        assert r["x"] == float(stability.critical_a_exact(m / 100, k, lag, momentum)[()])
        if lag == "refresh" and k == 1:
            assert r["c"] is None
        else:
            assert r["c"] == pytest.approx(float(stability.critical_a_continuous(m / 100, k, lag, momentum)[()]),
                                           rel=1e-5)
        c = osc.coefficients(eta=r["z"], mu=m / 100, k_ref=k, curvature=1.0, lag=lag, momentum=momentum)
        assert c.damping_ratio == pytest.approx(1.0, abs=1e-5)
        assert osc.coefficients(r["z"] * 0.99, m / 100, k, 1.0, lag=lag, momentum=momentum).regime == "overdamped"
        assert osc.coefficients(r["z"] * 1.01, m / 100, k, 1.0, lag=lag, momentum=momentum).regime == "underdamped"
    # every mode's frame holds all its boundaries (the axis changes only with the optimizer or lag model)
    frames = oc.hero_frames(list(rows.values()))
    assert frames[(0, 0)] == (1e-5, 10.0) and frames[(2, 1)] == (1e-3, 1e3)


def _hero_texts(set_values=None, **kw):
    """The SVG and its texts, drawn by Vega (vl-convert) with the params ``set_values`` moved."""
    import vl_convert as vlc

    spec = oc.hero_explorer(**kw).to_dict()
    for p in spec["params"]:
        if p["name"] in (set_values or {}):
            p["value"] = set_values[p["name"]]
    svg = vlc.vegalite_to_svg(spec)
    return svg, re.findall(r"<text[^>]*>([^<]*)</text>", svg)


@pytest.mark.parametrize("log_eta, mu, k_ref, lag, momentum", [
    (-1.70, 0.8, 4, "constant", "heavy_ball"),   # the defaults: underdamped
    (-1.25, 0.8, 4, "constant", "heavy_ball"),   # past the exact threshold 0.0557
    (-1.27, 0.8, 4, "constant", "heavy_ball"),   # between the thresholds: stable (exact recurrence only)
    (-0.55, 0.8, 4, "constant", "ema"),          # Adam past its exact threshold 0.279
    (-1.70, 0.8, 16, "refresh", "heavy_ball"),
    (0.5, 0.8, 16, "ratio", "heavy_ball"),      # ratio-corrected: on-policy edge 3.6
    (1.30, 0.8, 4, "ratio", "ema"),             # Adam, ratio-corrected: edge 18
])
def test_hero_labels_in_vega_equal_grpo_core(log_eta, mu, k_ref, lag, momentum):
    """Vega itself (vl-convert) computes both views' labels: the verdict in each view, eta and eta K, the
    damping ratio, and the thresholds in eta K, as grpo_core gives them; ratio-corrected reuse says that
    K_ref has no effect and no label reads "none"."""
    eta = _page_eta(log_eta)
    svg, texts = _hero_texts(mu=mu, k_ref=k_ref, lag=lag, momentum=momentum, set_values={"log_eta": log_eta})
    lib_lag, lib_k = ("refresh", 1) if lag == "ratio" else (lag, k_ref)
    c = osc.coefficients(eta, mu, lib_k, 1.0, lag=lib_lag, momentum=momentum)
    verdict = osc.VERDICT_LABELS[osc.coefficients_verdict(c)]
    assert texts.count(verdict) == 2  # the trajectory's regime_label and the phase diagram's
    assert f"η = {_d3_r3(eta)}, η·K = {_d3_r3(eta)}" in texts
    assert f"damping ratio ζ = {c.damping_ratio:.2f}".replace("-", "−") in texts
    exact = float(stability.critical_a_exact(mu, lib_k, lib_lag, momentum)[()])
    words = {"constant": "constant lag", "refresh": "refresh lag", "ratio": "ratio-corrected reuse"}[lag]
    (thr,) = [t for t in texts if t.startswith("threshold η·K = ")]
    (point,) = [t for t in texts if t.startswith("point: ")]
    if lag == "ratio":
        assert thr == f"threshold η·K = {_d3_r3(exact)} (exact, {words}); no continuous threshold (no lag)"
        assert point == (f"point: η·K = {_d3_r3(eta)}; exact threshold η·K = {_d3_r3(exact)} at every K_ref"
                         f" (μ = {mu:.2f})")
        assert oc.K_REF_NO_EFFECT in texts
    else:
        cont = float(stability.critical_a_continuous(mu, k_ref, lag, momentum)[()])
        assert thr == f"threshold η·K = {_d3_r3(cont)} (continuous, C = 0) and {_d3_r3(exact)} (exact, {words})"
        assert point == (f"point: K_ref = {k_ref}, η·K = {_d3_r3(eta)}; exact threshold η·K = {_d3_r3(exact)}"
                         f" (μ = {mu:.2f})")
        assert oc.K_REF_NO_EFFECT not in texts
    assert not any("none" in t for t in texts)
    drawn = set(re.findall(r'class="mark-[a-z]+ role-mark ([^"]*)_marks"', svg))
    assert drawn == {oc.hero_mark(n) for view in oc.HERO_MARKS for n in view}  # every mark, by its name
    for mark in ("exact_boundary", "critical_damping", "trajectory", "exact_trajectory", "continuous_boundary"):
        tag, body = re.search(rf'role-mark {oc.hero_mark(mark)}_marks"[^>]*?(/>|>(.*?)</g>)', svg).group(1, 2)
        drawn_line = tag != "/>" and 'd="M' in (body or "")
        assert drawn_line == (mark != "continuous_boundary" or lag != "ratio"), mark  # no C = 0 without lag


def test_hero_refuses_values_off_its_controls():
    for kw, name in [(dict(eta=1e-6), "eta"), (dict(k_ref=7), "k_ref"), (dict(mu=0.995), "mu"),
                     (dict(curvature=6.0), "curvature"), (dict(lag="x"), "lag"), (dict(momentum="x"), "momentum")]:
        with pytest.raises(ParameterError, match=name):
            oc.hero_explorer(**kw)


def test_phase_and_ratio_charts_share_one_encoding():
    """Figs. 3 and 4: colour = lag model (the same colours, with a legend), one panel per mu; Fig. 3 also
    dashes the continuous threshold, with a legend."""
    k = np.arange(1, 17)
    fig3 = oc.phase_diagram_chart(k_refs=k).to_dict()
    fig4 = oc.threshold_ratio_chart(k_refs=k).to_dict()
    for spec in (fig3, fig4):
        assert spec["facet"]["column"]["field"] == "mu"
        colour = spec["spec"]["encoding"]["color"]
        assert colour["field"] == "lag" and colour["title"] == "lag model" and "legend" in colour
        assert colour["scale"] == {"domain": list(oc.LAG_COLORS), "range": list(oc.LAG_COLORS.values())}
        assert spec["spec"]["encoding"]["strokeDash"]["field"] == "method"
    assert fig3["spec"]["encoding"]["strokeDash"]["scale"]["domain"] == ["exact", "continuous"]
