"""Charts of the U-statistic and group-size chapters: the static slider chart's Vega expressions against
grpo_core, its params and named text marks (rendered by Vega itself through vl-convert), and the other
builders on real data."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from conftest import marks

from grpo_core.errors import ParameterError
from grpo_core.groupsize import constants_by_spread, minibatch_mse, optimal_group_size, summarise_study
from grpo_core.groupsize.ustat import bandit_moments, monte_carlo_mse
from widgets import ustat_charts as uc

SPREADS = np.round(np.arange(0.02, 0.305, 0.01), 2)


@pytest.fixture(scope="module")
def grid():
    return constants_by_spread(SPREADS, mean=0.2)


def test_law_expressions_equal_grpo_core(grid):
    ex = uc.law_expressions()
    g = 2.0 ** np.arange(1, 12)
    for row in grid.itertuples():
        for n in (64, 1024, 4096):
            feasible = g[g <= n]
            got = ex["mse"].evaluate(G=feasible, c1=row.c1, c2=row.c2, c3=row.c3, budget=n)
            ref = minibatch_mse(feasible, row.c1, row.c2, row.c3, budget=n)
            np.testing.assert_allclose(got, ref, rtol=1e-12)
        assert float(ex["g_star"].evaluate(c1=row.c1, c3=row.c3)) == pytest.approx(
            optimal_group_size(row.c1, row.c3)
        )


def _svg_texts(chart):
    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(chart.to_dict())
    return svg, re.findall(r"<text[^>]*>([^<]*)</text>", svg)


@pytest.mark.parametrize("budget, spread", [(1024, 0.1), (64, 0.02), (256, 0.3)])
def test_vega_runtime_prints_grpo_cores_g_star(grid, budget, spread):
    """Vega evaluates the slider chart at the initial param values: its G* label is grpo_core's."""
    chart = uc.group_size_slider_chart(grid, budget=budget, spread=spread)
    spec = chart.to_dict()
    assert sorted(p["name"] for p in spec["params"]) == sorted(uc.SLIDER_PARAMS)
    svg, texts = _svg_texts(chart)
    assert "g_star_label_marks" in svg
    row = grid[np.isclose(grid.spread, spread)].iloc[0]
    gs = optimal_group_size(row.c1, row.c3)
    label = [t for t in texts if t.startswith("G* = ")]
    assert label and label[0].startswith(f"G* = {gs:.1f}")
    if gs > budget:
        assert "one prompt per step" in label[0]
    # the feasible points: every power of two that divides the budget, and only those
    assert spec["layer"][1]["name"] == "feasible_points"


def test_slider_chart_refuses_values_off_its_grid(grid):
    with pytest.raises(ParameterError, match="`budget`"):
        uc.group_size_slider_chart(grid, budget=1000)
    with pytest.raises(ParameterError, match="`spread`"):
        uc.group_size_slider_chart(grid, spread=0.123)
    with pytest.raises(ParameterError, match="`constants`"):
        uc.group_size_slider_chart(pd.DataFrame({"spread": [0.1]}))


def test_u_statistic_chapter_charts_build_and_render():
    probs = np.array([0.2] + [0.8 / 7] * 7)
    rewards = np.array([1.0] + [0.0] * 7)
    df = monte_carlo_mse(probs, rewards, [2, 4, 8, 16], 2_000)
    m = bandit_moments(probs, rewards)
    import vl_convert as vlc

    for chart in (
        uc.mse_chart(df),
        uc.gap_chart(df),
        uc.hoeffding_chart(df, m),
        uc.bias_variance_chart(m, [2, 4, 8]),
    ):
        assert vlc.vegalite_to_svg(chart.to_dict()).startswith("<svg")
    # the mse chart plots every estimator, each divided by its own target's squared norm
    data = uc.mse_chart(df).data
    assert set(data.estimator) == {"vanilla", "mean", "leave_one_out", "oracle", "std"}
    np.testing.assert_allclose(data.y, data.relative_mse)
    with pytest.raises(ParameterError, match="`df`"):
        uc.mse_chart(pd.DataFrame({"x": [1]}))


def test_mse_chart_draws_the_oracle_on_top_dashed_and_labelled():
    """The oracle's exact line nearly coincides with the mean baseline's from G = 8 on and was drawn
    under it (invisible): in the SVG Vega renders, it is now the last line painted (after every other
    line, bar and point), dashed, in its own colour, with a text label beside it, and its legend
    entry is dashed too."""
    import vl_convert as vlc

    probs = np.array([0.2] + [0.8 / 7] * 7)
    rewards = np.array([1.0] + [0.0] * 7)
    df = monte_carlo_mse(probs, rewards, 2 ** np.arange(1, 11), 2_000, seed=1)
    svg = vlc.vegalite_to_svg(uc.mse_chart(df).to_dict())
    groups = re.findall(r'<g class="mark-(\w+) role-mark ([^"]*)"', svg)
    assert groups[-2:] == [("line", "oracle_line_marks"), ("text", "oracle_label_marks")]
    plot = svg[:svg.index("role-legend")] if "role-legend" in svg else svg
    paths = re.findall(r'<path[^>]*aria-roledescription="line mark"[^>]*>', plot)
    oracle = [p for p in paths if "label: oracle" in p]
    assert len(oracle) == 1 and paths[-1] == oracle[0], "the oracle's line must be painted last"
    dash = ",".join(str(v) for v in uc.ORACLE_DASH)
    assert f'stroke-dasharray="{dash}"' in oracle[0]
    assert f'stroke="{uc.ESTIMATOR_COLORS["oracle"]}"' in oracle[0]
    others = [p for p in paths if p is not oracle[0]]
    assert others and all(f'stroke-dasharray="{dash}"' not in p for p in others)
    mean = [p for p in paths if "label: mean baseline" in p]
    assert uc.ESTIMATOR_COLORS["oracle"] != uc.ESTIMATOR_COLORS["mean"] and mean
    assert f'stroke="{uc.ESTIMATOR_COLORS["mean"]}"' in mean[0]
    label = re.search(r'oracle_label_marks.*?<text[^>]*>([^<]*)</text>', svg, re.S)
    assert label and label[1] == "oracle"
    # the legend shows the dash: one legend (colour and dash merged), its oracle symbol dashed
    legend = svg[svg.index("role-legend"):]
    assert legend.count("role-legend-symbol") >= 1 and f'stroke-dasharray="{dash}"' in legend


def test_study_charts_build():
    df = pd.DataFrame({
        "budget": 16, "group_size": np.repeat([2, 4, 8], 3), "seed": np.tile(range(3), 3), "step": 5,
        "reward": [0.5, 0.52, 0.51, 0.6, 0.61, 0.62, 0.58, 0.57, 0.59],
    })
    s = summarise_study(df)
    chart = uc.study_chart(s, g_star=4.5)
    # the y-axis is the reward relative to the best G: 0 at the best
    assert chart.to_dict()["facet"]["column"]["field"] == "budget"
    path = pd.DataFrame(
        {"step": [5], "budget": 16, "g_star": [4.5], "best_g": [4], "tied_low": [4], "tied_high": [8]}
    )
    seen = marks(uc.best_g_path_chart(path))
    assert seen["line"]["x"] == "step" and seen["line"]["y"] == "g_star"
    assert seen["line"]["y.scale"] == {"type": "log", "base": 2} and seen["line"]["y.title"] == "group size G"
    assert (seen["rule"]["y"], seen["rule"]["y2"]) == ("tied_low", "tied_high") and seen["point"][
        "y"
    ] == "best_g"
    assert seen["line"]["x.title"] == "checkpoint (optimizer step)" and seen["line"]["color"] == "N"
    with pytest.raises(ParameterError, match="`summary`"):
        uc.study_chart(df.drop(columns="reward"))


@pytest.mark.parametrize("budget, words", [(64, "(B = N/G* = 1 prompt)"), (128, "(B = N/G* = 3 prompts)")])
def test_g_star_label_counts_prompts_in_the_right_number(grid, budget, words):
    """Issue 17: the label read "(B = N/G* = 1 prompts)"."""
    fifty = grid.assign(c3=grid["c1"] * 49.0**2)  # G* = 1 + sqrt(c3/c1) = 50 at every spread
    _, texts = _svg_texts(uc.group_size_slider_chart(fifty, budget=budget))
    (label,) = [t for t in texts if t.startswith("G* = ")]
    assert label == f"G* = 50.0 {words}"


def test_one_default_group_size_pool_on_every_page():
    """The group-size pool has one default setting (mean 0.2, spread 0.1, N = 1024): the chapter's
    slider chart and explorer, the explorers page's, and the functions' defaults all use it."""
    import inspect

    from widgets import group_size_explorer as gse

    d = uc.GROUP_SIZE_DEFAULTS
    assert d == {"mean": 0.2, "spread": 0.1, "budget": 1024}
    sig = inspect.signature(uc.group_size_slider_chart).parameters
    assert (sig["budget"].default, sig["spread"].default) == (d["budget"], d["spread"])
    for fn in (gse.group_size_explorer, gse.GroupSizeExplorer.__init__):
        p = inspect.signature(fn).parameters
        assert (p["budget"].default, p["spread"].default, p["mean"].default) == (d["budget"], d["spread"], d["mean"])
    assert inspect.signature(gse.compute_group_size_view).parameters["mean"].default == d["mean"]
    explorer = gse.group_size_explorer()
    assert explorer.values["budget"] == d["budget"]
    assert explorer.controls["spread"].value == d["spread"] and explorer.controls["mean"].value == d["mean"]
    from conftest import ROOT

    for page in ("group_size.md", "explorers.md"):
        text = (ROOT / "book" / page).read_text()
        assert re.search(r"constants_by_spread\(spreads, mean=0\.2\)", text), page
        assert re.search(r"group_size_slider_chart\(\w+, budget=1024, spread=0\.1\)", text), page
        calls = re.findall(r"group_size_explorer\(([^)]*)\)", text)
        assert calls and all("spread=0.1," in c and "mean=0.2" in c and "budget=1024" in c for c in calls), \
            (page, calls)
    # the static chart starts at the default: its G* label is the default pool's
    spreads = np.round(np.arange(0.01, 0.305, 0.01), 2)
    _, texts = _svg_texts(uc.group_size_slider_chart(constants_by_spread(spreads, mean=d["mean"])))
    (label,) = [t for t in texts if t.startswith("G* = ")]
    g = constants_by_spread([d["spread"]], mean=d["mean"]).g_star_exact.iloc[0]
    assert label.startswith(f"G* = {g:.1f}")
