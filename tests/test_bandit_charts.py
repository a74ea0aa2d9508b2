"""Chart builders of the bandit and GRPO-update chapters (widgets.bandit_charts, widgets.grpo_charts)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import marks

from grpo_core import ParameterError
from grpo_core.bandit import BanditSpec, sweeps, thresholds
from widgets import bandit_charts, grpo_charts
from widgets.oscillator_charts import phase_diagram_data


def test_clip_objective_data_is_the_clipped_surrogate():
    df = grpo_charts.clip_objective_data([0.5, 1.0, 1.25, 1.5])
    pos = df[(df["advantage"] == "A = +1") & (df["clip"] == "epsilon = 0.2")]
    np.testing.assert_allclose(pos["objective"], [0.5, 1.0, 1.2, 1.2])
    np.testing.assert_allclose(pos["weight"], [0.5, 1.0, 0.0, 0.0])  # clipped: no gradient
    high = df[(df["advantage"] == "A = +1") & (df["clip"] == "clip-higher: 0.2 / 0.28")]
    np.testing.assert_allclose(high["weight"], [0.5, 1.0, 1.25, 0.0])  # 1.25 < 1.28: still free
    neg = df[(df["advantage"] == "A = -1") & (df["clip"] == "epsilon = 0.2")]
    np.testing.assert_allclose(neg["weight"], [0.0, -1.0, -1.25, -1.5])  # clipped below 0.8
    assert "vconcat" in grpo_charts.clip_objective_chart(df).to_dict()
    with pytest.raises(ParameterError, match="ratios"):
        grpo_charts.clip_objective_data([0.0, 1.0])


def test_bandit_chart_builders_render_specs():
    sweep = sweeps.k_ref_sweep(
        BanditSpec.binary(group_size=math.inf), eta=0.25, mu=0.3, beta=1.0, k_refs=[1, 12], steps=60
    )
    spec = bandit_charts.k_ref_sweep_chart(sweep["trajectories"], sweep["regimes"], sweep["p_star"]).to_dict()
    assert spec["facet"]["field"] == "panel"
    table = thresholds.threshold_table([dict(mu=0.0, k_ref=2, lag="constant"), dict(mu=0.0, k_ref=2, lag="refresh")])
    chart = bandit_charts.threshold_chart(table, phase_diagram_data(mus=(0.0,), k_refs=[1, 2, 4])).to_dict()
    assert len(chart["hconcat"]) == 2
    flows = pd.DataFrame({"label": "a", "p": [0.5, 0.7, 0.9], "F": [0.5, 0.0, -0.3]})
    seen = marks(bandit_charts.flow_chart(flows))
    assert (seen["line"]["x"], seen["line"]["y"], seen["line"]["color"]) == ("p", "F", "label")
    assert seen["line"]["x.title"] == "expected reward p" and seen["line"]["x.scale"] == {
        "domain": [0.5, 1.0]
    }
    assert seen["line"]["y.title"] == "flow F (logit gap per step, per unit eta)"
    g = pd.DataFrame(
        {"baseline": "loo", "group_size": [2, 2, 4, 4], "step": [0, 1, 0, 1], "mean": [0.5, 0.6, 0.5, 0.6]}
    )
    assert bandit_charts.g_invariance_chart(g).to_dict()["facet"]["column"]["field"] == "baseline"
    v = pd.DataFrame(
        {
            "baseline": "loo",
            "group_size": [2, 4],
            "variance": [1e-3, 4e-4],
            "variance_se": [6e-4, 1e-5],
            "predicted": [1.1e-3, 4e-4],
        }
    )
    chart = bandit_charts.variance_chart(v)
    seen = marks(chart)
    # measured points, +-2 se bars (floored at half the value on the log axis), predicted dashed line
    assert (seen["point"]["x"], seen["point"]["y"], seen["line"]["y"]) == (
        "group_size",
        "variance",
        "predicted",
    )
    assert seen["point"]["x.scale"] == {"type": "log", "base": 2} and seen["point"]["y.scale"] == {
        "type": "log"
    }
    assert seen["point"]["y.title"] == "stationary Var(p)" and seen["point"]["x.title"] == "group size G"
    assert (seen["rule"]["y"], seen["rule"]["y2"]) == ("lo", "hi")
    np.testing.assert_allclose(chart.data["lo"], [5e-4, 3.8e-4])  # 1e-3 - 1.2e-3 < 5e-4: floored
    np.testing.assert_allclose(chart.data["hi"], [2.2e-3, 4.2e-4])
    comp = sweeps.compare_variants(BanditSpec.binary(group_size=math.inf),
                               [{"panel": "x", "label": "on", "eta": 0.5, "beta": 1.0}], steps=10)
    assert bandit_charts.variants_chart(comp, y="kl").to_dict()["facet"]["column"]["field"] == "panel"


def test_bandit_chart_builders_refuse_missing_columns():
    with pytest.raises(ParameterError, match="flows"):
        bandit_charts.flow_chart(pd.DataFrame({"p": [0.5]}))
    with pytest.raises(ParameterError, match="variance"):
        bandit_charts.variance_chart(pd.DataFrame({"group_size": [2]}))
    with pytest.raises(ParameterError, match="frame"):
        bandit_charts.variants_chart(pd.DataFrame({"panel": ["x"]}))


@pytest.fixture(scope="module")
def default_grid():
    from widgets.explorer_charts import BANDIT_DEFAULTS, static_bandit_grid

    d = BANDIT_DEFAULTS
    return static_bandit_grid(eta=d["eta"], mu=d["mu"], beta=d["beta"], group_size=d["group_size"])


def test_static_bandit_grid_labels_are_the_library_verdict_and_the_dashed_curve_follows_it(default_grid):
    """The prediction label is regime_verdict's, about the fixed point; the dashed prediction (the
    exact recurrence) stays in the frame for all steps exactly when it says stable (at K_ref 7 and
    8: stable, exact recurrence only, while the continuous closed form leaves the frame), and leaves
    it otherwise. The grid uses the chapter's plain mean baseline."""
    from grpo_core.bandit import prediction
    from grpo_core.model import oscillator as osc
    from widgets.explorer_charts import BANDIT_DEFAULTS, BANDIT_PREDICTED, BANDIT_PREDICTIONS

    grid = default_grid
    spec = BanditSpec.binary(arms=2, correct=1, group_size=8)  # the chapter's analysis: mean baseline
    assert spec.baseline == "mean" == BANDIT_DEFAULTS["baseline"]
    steps = BANDIT_DEFAULTS["steps"]
    curves = grid["curves"]
    for row in grid["labels"].itertuples():
        pred = prediction.predicted_path(spec, eta=0.2, mu=0.5, k_ref=row.k_ref, beta=1.0, steps=steps)
        verdict = osc.regime_verdict(pred["coefficients"].regime, pred["stable_exact"])
        assert row.predicted == f"prediction (linearised): {BANDIT_PREDICTED[verdict]}"
        assert len(row.measured) <= 52 and len(row.predicted) <= 68 and len(row.detail) <= 60
        mean_field = curves[(curves.k_ref == row.k_ref) & (curves.curve == "exact mean field")]
        np.testing.assert_allclose(mean_field.p, pred["mean_field"][mean_field.step], rtol=1e-12)
        exact = curves[(curves.k_ref == row.k_ref) & (curves.curve == BANDIT_PREDICTIONS[0])]
        in_frame = bool(exact.p.between(-0.05, 1.05).all()) and exact.step.max() == steps
        assert in_frame == bool(row.stable_exact), row.k_ref
    by_k = grid["labels"].set_index("k_ref")
    assert by_k.loc[[7, 8], "predicted"].str.endswith("fixed point stable (exact recurrence only)").all()
    assert by_k.loc[9, "predicted"].endswith("fixed point unstable")
    closed = curves[(curves.curve == BANDIT_PREDICTIONS[1]) & curves.k_ref.isin([7, 8])]
    assert closed.groupby("k_ref").step.max().lt(steps).all()  # the continuous model's curve leaves


def test_static_bandit_grid_measures_the_regime_as_the_chapter_does(default_grid):
    """The measured label is the chapter's classification (classify_trajectory, as k_ref_sweep labels
    the sweep panels) of the exact mean field the chart draws; a run that does not settle is a
    bounded cycle, with the period of the full-resolution run's spectral peak."""
    from grpo_core import bandit
    from grpo_core.bandit.stability import classify_trajectory, growth_rates

    labels = default_grid["labels"].set_index("k_ref")
    curves = default_grid["curves"]
    ks = labels.index.to_list()
    spec = BanditSpec.binary(group_size=8)
    fp = bandit.fixed_point(spec, 1.0)
    for k in ks:
        mf = curves[(curves.k_ref == k) & (curves.curve == "exact mean field")]
        assert labels.loc[k, "measured_regime"] == classify_trajectory(mf.p.to_numpy(), fp.p_star)[()]
    # the chapter's own sweep function, at full resolution, gives the same regimes
    sweep = sweeps.k_ref_sweep(spec, eta=0.2, mu=0.5, beta=1.0, k_refs=ks, steps=400)
    assert sweep["regimes"].measured.to_list() == labels.measured_regime.to_list()
    # a bounded cycle exactly where the fixed point is unstable (measured growth rate of a small
    # perturbation), and here exactly where the exact recurrence predicts it: from K_ref 9 on
    cycle = labels.measured_regime == "divergent"
    rates = growth_rates(spec, eta=0.2, mu=0.5, k_ref=ks, beta=1.0)
    assert (cycle.to_numpy() == (rates > 0)).all()
    assert (cycle == ~labels.stable_exact.astype(bool)).all()
    assert labels.index[cycle].min() == 9
    assert labels.loc[9, "measured"] == f"measured: bounded cycle, period ≈ {labels.loc[9, 'period']:.0f} steps"
    assert labels.measured[~cycle].isin(["measured: damped oscillation toward p*",
                                         "measured: monotone approach to p*"]).all()
    assert labels.period[~cycle].isna().all()
    # the period against the spectral peak of the full-resolution mean field's second half
    full = bandit.simulate(spec, eta=0.2, mu=0.5, k_ref=labels.index[cycle].to_list(), beta=1.0, steps=4000,
                           mean_field=True)
    for i, k in enumerate(labels.index[cycle]):
        late = full.p[i, 0, 2000:] - full.p[i, 0, 2000:].mean()
        power = np.abs(np.fft.rfft(late, n=1 << 16)) ** 2
        peak = 1 / np.fft.rfftfreq(1 << 16)[1 + np.argmax(power[1:])]
        assert labels.loc[k, "period"] == pytest.approx(peak, rel=0.03), k


def test_one_default_bandit_setting_on_both_pages_and_in_the_live_explorer():
    """The chapter's slider figure, the Explorers page's and the live explorer (on both pages and as
    called with no arguments) run the same eta, mu, beta, G and K_ref: BANDIT_DEFAULTS."""
    import ast
    import inspect
    import re
    from pathlib import Path

    import jupytext

    from widgets.bandit_explorer import bandit_explorer
    from widgets.explorer_charts import BANDIT_DEFAULTS, static_bandit_chart, static_bandit_grid

    def effective(fn, call):
        bound = inspect.signature(fn).bind_partial(*[ast.literal_eval(a) for a in call.args[1:]]
                                                   if fn is static_bandit_chart else [])
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
        params = inspect.signature(fn).parameters
        return {name: kwargs.get(name, bound.arguments.get(name, p.default)) for name, p in params.items()}

    book = Path(__file__).resolve().parents[1] / "book"
    keys = ("eta", "mu", "beta", "group_size", "k_ref", "steps", "baseline")
    for page in ("bandit.md", "explorers.md"):
        cells = [c.source for c in jupytext.read(book / page).cells if c.cell_type == "code"]
        trees = [ast.parse(re.sub(r"^(\s*)[%!].*$", r"\1pass", cell, flags=re.M)) for cell in cells]
        calls = [node for tree in trees for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
                 in ("static_bandit_grid", "static_bandit_chart", "bandit_explorer")]
        names = sorted(getattr(c.func, "attr", getattr(c.func, "id", None)) for c in calls)
        assert names == ["bandit_explorer", "static_bandit_chart", "static_bandit_grid"], (page, names)
        for call in calls:
            fn = {"static_bandit_grid": static_bandit_grid, "static_bandit_chart": static_bandit_chart,
                  "bandit_explorer": bandit_explorer}[getattr(call.func, "attr", getattr(call.func, "id", None))]
            got = effective(fn, call)
            for key in keys:
                if key in got:
                    assert got[key] == BANDIT_DEFAULTS[key], (page, fn.__name__, key)
    live = inspect.signature(bandit_explorer).parameters
    assert {k: live[k].default for k in keys} == {k: BANDIT_DEFAULTS[k] for k in keys}
