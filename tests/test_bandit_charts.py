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


def test_static_bandit_grid_labels_are_the_library_verdict_and_the_dashed_curve_follows_it():
    """The label is regime_verdict's; the dashed prediction (the exact recurrence) stays in the frame
    for all steps exactly when it says stable (at K_ref 7 and 8: stable, exact recurrence only,
    while the continuous closed form leaves the frame), and leaves it otherwise."""
    from grpo_core.bandit import BanditSpec, prediction
    from grpo_core.model import oscillator as osc
    from widgets.explorer_charts import BANDIT_PREDICTIONS, static_bandit_grid

    grid = static_bandit_grid(eta=0.2, mu=0.5, beta=1.0, group_size=8)
    spec = BanditSpec.binary(arms=2, correct=1, group_size=8, baseline="leave_one_out")
    curves = grid["curves"]
    for row in grid["labels"].itertuples():
        pred = prediction.predicted_path(spec, eta=0.2, mu=0.5, k_ref=row.k_ref, beta=1.0, steps=200)
        verdict = osc.regime_verdict(pred["coefficients"].regime, pred["stable_exact"])
        assert row.text == f"oscillator predicts: {osc.VERDICT_LABELS[verdict]}"
        assert len(row.text) <= 52 and len(row.detail) <= 60  # two lines that fit in 540 px
        exact = curves[(curves.k_ref == row.k_ref) & (curves.curve == BANDIT_PREDICTIONS[0])]
        in_frame = bool(exact.p.between(-0.05, 1.05).all()) and exact.step.max() == 200
        assert in_frame == bool(row.stable_exact), row.k_ref
    by_k = grid["labels"].set_index("k_ref")
    assert by_k.loc[[7, 8], "text"].str.endswith("stable (exact recurrence only)").all()
    closed = curves[(curves.curve == BANDIT_PREDICTIONS[1]) & curves.k_ref.isin([7, 8])]
    assert closed.groupby("k_ref").step.max().lt(200).all()  # the continuous model's curve leaves
