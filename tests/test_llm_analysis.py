"""The book's analysis of committed LLM runs, on run folders written here with known curves."""

from __future__ import annotations

import json
import warnings

import altair as alt
import numpy as np
import pandas as pd
import pytest

from grpo_core.errors import DataError, ParameterError
from grpo_core.llm import analysis
from grpo_core.llm.runs import load_run, load_runs, runs_table
from widgets import llm_charts


def _write_run(root, name, *, G, seed, curve, evals=None, constants=None, completions=None):
    folder = root / name
    folder.mkdir(parents=True)
    cfg = {"run_name": name, "preset": "cpu-tiny", "group_size": G, "seed": seed, "prompts_per_step": 32,
           "completions": completions or 32 * G, "eval_suite": ["add2", "sub2"]}
    (folder / "config.json").write_text(json.dumps(cfg))
    lines = [
        {
            "step": i + 1,
            "reward": float(r),
            "frac_reward_zero_std": 0.3,
            "entropy": 0.4,
            "grad_norm": 1.0,
            "split": "train",
            "trl_version": "1.16.0",
        }
        for i, r in enumerate(curve)
    ]
    (folder / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    if evals:
        (folder / "evals.json").write_text(json.dumps(evals))
    if constants:
        (folder / "gradient_constants.json").write_text(json.dumps(constants))
    (folder / "provenance.json").write_text(
        json.dumps(
            {
                "device": "cpu",
                "packages": {"torch": "2", "trl": "1"},
                "git": {"commit": "abc"},
                "date": "2026-01-01T00:00:00Z",
            }
        )
    )
    return folder


def _curve(t, r0, r_inf, k, noise, rng):
    return r_inf - (r_inf - r0) * np.exp(-k * t) + rng.normal(0, noise, t.size)


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(0)
    t = np.arange(1, 301)
    ev = lambda a, b: {"start": {"add2": {"accuracy": a, "sampled_accuracy": a - 0.2},  # noqa: E731
                                 "sub2": {"accuracy": 0.6, "sampled_accuracy": 0.4}},
                       "end": {"add2": {"accuracy": b, "sampled_accuracy": b - 0.05},
                               "sub2": {"accuracy": 0.3, "sampled_accuracy": 0.2}}}
    for g, noise in ((4, 0.06), (16, 0.03)):
        for s in range(3):
            _write_run(tmp_path, f"cpu-tiny__G{g}-B32__s{s}", G=g, seed=s,
                       curve=_curve(t, 0.5, 0.9, 0.02, noise, rng), evals=ev(0.7, 0.95))
    return load_runs(tmp_path)


def test_loader_and_table(runs):
    assert len(runs) == 6 and {r.group_size for r in runs} == {4, 16}
    table = runs_table(runs)
    assert list(table["G"]) == [16, 16, 16, 4, 4, 4]  # sorted by name
    assert np.allclose(table["final_reward"], 0.9, atol=0.03)
    with pytest.raises(ParameterError, match="`root`"):
        load_runs("/no/such/folder")
    with pytest.raises(DataError, match="not a run folder"):
        load_run(runs[0].path.parent)


def test_fits_recover_the_plateau_and_report_r2(runs):
    fits = analysis.curve_fits(runs)
    assert set(fits["law"]) == {"three_phase", "exponential", "logistic"}
    three = fits[fits["law"] == "three_phase"]
    assert np.allclose(three["plateau"], 0.9, atol=0.03)
    assert (three["r2"] > 0.95).all()                       # the smoothed curve
    assert (three["r2_raw"] < three["r2"]).all()            # raw per-step rewards carry the noise
    assert fits.groupby("run")["best"].sum().eq(1).all()    # one best law per run
    assert fits.groupby("run")["preferred"].sum().eq(1).all()
    # every law's plateau is fixed on these curves, so the preferred law is the best one
    assert (fits["preferred"] == fits["best"]).all()


def test_trajectories_spread_scales_with_noise(runs):
    traj = analysis.mean_trajectories(runs, window=1)
    assert set(traj["G"]) == {4, 16} and (traj["n"] == 3).all()
    sd4 = traj[traj.G == 4]["raw_sd"].mean()
    sd16 = traj[traj.G == 16]["raw_sd"].mean()
    assert 1.4 < sd4 / sd16 < 2.8          # the curves were written with noise 0.06 and 0.03
    late = traj[traj.step > 250].groupby("G")["mean"].mean()
    assert abs(late[4] - late[16]) < 0.02  # same mean path
    with pytest.raises(ParameterError):
        analysis.mean_trajectories(runs, by="seed")
    chart = llm_charts.trajectories_chart(traj)
    assert isinstance(chart, alt.LayerChart) and chart.to_dict()["layer"]
    assert isinstance(llm_charts.spread_chart(traj), alt.Chart) and llm_charts.spread_chart(traj).to_dict()


def test_transfer_table(runs):
    tab = analysis.transfer_table(runs)
    assert list(tab["set"]) == ["add2", "sub2"]  # nearest first
    add2 = tab.set_index("set").loc["add2"]
    assert (
        add2["change"] == pytest.approx(0.25)
        and add2["n_runs"] == 6
        and add2["change_se"] == pytest.approx(0)
    )
    assert tab.set_index("set").loc["sub2", "sampled_change"] == pytest.approx(-0.2)
    assert isinstance(llm_charts.transfer_chart(tab, sampled=True), alt.LayerChart)
    assert len(llm_charts.transfer_chart(tab).to_dict()["layer"]) == 3


def test_diagnose_runs(runs):
    table, diagnoses = analysis.diagnose_runs(runs, n_boot=0)
    assert len(table) == 6 and set(diagnoses) == {r.name for r in runs}
    # diagnose's end-of-run forecast, for the run trained twice as long
    assert np.allclose(table["final"], 0.9, atol=0.05) and np.allclose(table["now"], 0.9, atol=0.05)
    assert (table["final_low"] <= table["final"]).all() and (table["final"] <= table["final_high"]).all()
    assert (table["horizon"] == [2 * r.metrics.series("reward")[0][-1] for r in runs]).all()


def test_budget_sweep_and_constants(tmp_path):
    rng = np.random.default_rng(1)
    t = np.arange(1, 201)
    plateaus = {2: 0.8, 4: 0.85, 8: 0.83}
    for g, p in plateaus.items():
        for s in range(2):
            const = {"start": {"c1": 2.0, "c2": 5.0, "c3": 50.0, "g_star": 5.0, "g_star_exact": 6.0,
                               "intervals": {"g_star_exact": [4.0, None]}, "mean_reward": 0.5}}
            _write_run(tmp_path, f"run_G{g}_s{s}", G=g, seed=s, curve=_curve(t, 0.5, p, 0.05, 0.01, rng),
                       completions=128, constants=const,
                       evals={"start": {"add2": {"accuracy": 0.5, "sampled_accuracy": 0.4}},
                              "end": {"add2": {"accuracy": p, "sampled_accuracy": p - 0.1}}})
    runs = load_runs(tmp_path)
    sweep = analysis.budget_sweep_table(runs)
    assert list(sweep["G"]) == [2, 4, 8] and (sweep["N"] == 128).all() and (sweep["n"] == 2).all()
    assert sweep.loc[sweep["final_reward"].idxmax(), "G"] == 4
    assert sweep.set_index("G").loc[4, "eval_end"] == pytest.approx(0.75)
    # paired: each run against its seed's mean over G, so the paired values average to 0 over G
    assert sweep["auc_paired"].mean() == pytest.approx(0.0, abs=1e-12)
    assert sweep.loc[sweep["final_reward_paired"].idxmax(), "G"] == 4
    consts = analysis.constants_table(runs)
    assert list(consts["seed"]) == [0, 1, -1]  # one row per seed (the start model is shared) + pooled
    pooled = consts.iloc[-1]
    assert pooled["g_star_exact"] == pytest.approx(1 + np.sqrt(50.0 / 2.0))
    assert np.isinf(consts.iloc[0]["g_star_hi"])
    chart = llm_charts.budget_chart(sweep, g_star=pooled["g_star_exact"], g_star_interval=(4.0, np.inf))
    assert isinstance(chart, alt.LayerChart)
    spec = chart.to_dict()  # a valid Vega-Lite spec: the rule sits at the predicted G*
    assert [{"g": pytest.approx(pooled["g_star_exact"])}] in list(spec["datasets"].values())
    both = llm_charts.budget_chart(sweep, g_star=5.0, g_star_end=2.5).to_dict()  # the end's G*: dotted
    rules = [layer for layer in both["layer"] if layer["mark"]["type"] == "rule"]
    assert [r["mark"]["strokeDash"] for r in rules] == [[6, 4], [1, 3]]
    assert [{"g": 5.0}] in list(both["datasets"].values()) and [{"g": 2.5}] in list(both["datasets"].values())
    # runs of different budgets are not one sweep
    _write_run(tmp_path, "other", G=4, seed=0, curve=_curve(t, 0.5, 0.8, 0.05, 0.01, rng), completions=256)
    with pytest.raises(DataError, match="share one budget"):
        analysis.budget_sweep_table(load_runs(tmp_path))


def test_provenance_table(runs):
    prov = analysis.provenance_table(runs)
    assert len(prov) == 1 and prov.loc[0, "runs"] == 6 and prov.loc[0, "device"] == "cpu"


def test_fits_grid_and_badge(runs):
    curves = pd.DataFrame(
        {"run": ["a"] * 3, "step": [1, 2, 3], "smoothed": [0.1, 0.2, 0.3], "fitted": [0.1, 0.2, 0.3]}
    )
    assert (
        isinstance(llm_charts.fits_grid_chart(curves), alt.FacetChart)
        and llm_charts.fits_grid_chart(curves).to_dict()
    )
    url = llm_charts.colab_url("book/experiments/grpo_llm.ipynb")
    assert url.startswith("https://colab.research.google.com/github/") and url.endswith(
        "/book/experiments/grpo_llm.ipynb"
    )
    assert llm_charts.colab_badge("book/x.ipynb").startswith("[**Open in Colab**](https://colab.research.google.com/")
    with pytest.raises(ParameterError, match="ipynb"):
        llm_charts.colab_url("book/llm.md")
    with pytest.raises(ParameterError, match="lacks column"):
        llm_charts.fits_grid_chart(curves.drop(columns="fitted"))


def test_fits_grid_panels_by_group_size_then_seed(runs):
    # The run folders load as G16 before G4 (by name); the panels must read G = 4 first.
    order = llm_charts.fits_grid_chart(analysis.fitted_curves(runs)).to_dict()["facet"]["sort"]
    assert [label.split(":")[0] for label in order] == [
        f"G={g}, seed {s}" for g in (4, 16) for s in range(3)]


def test_step_noise_matches_the_binomial_floor(tmp_path):
    rng = np.random.default_rng(3)
    n, p = 128, 0.7
    curve = rng.binomial(n, p, 600) / n   # a flat policy: only sampling noise
    _write_run(tmp_path, "flat", G=4, seed=0, curve=curve, completions=n)
    row = analysis.step_noise(load_runs(tmp_path)).iloc[0]
    assert row["binomial_sd"] == pytest.approx(np.sqrt(p * (1 - p) / n), rel=0.02)
    assert row["ratio"] == pytest.approx(1.0, abs=0.08)


def test_paired_differences(runs):
    paired = analysis.paired_differences(runs, a=4, b=16)
    assert list(paired["seed"]) == [0, 1, 2]
    assert np.allclose(paired["difference"], paired["final_G16"] - paired["final_G4"])
    assert (paired["difference"].abs() < 0.05).all()  # the same law with different noise
    with pytest.raises(DataError, match="no seed"):
        analysis.paired_differences(runs, a=4, b=8)


def test_analysis_refuses_bad_arguments(runs):
    for call in (lambda: analysis.paired_differences(runs, a=4, b=16, tail=0),
                 lambda: analysis.final_level(runs[0], tail=0),
                 lambda: runs_table(runs, tail=-1),
                 lambda: analysis.budget_sweep_table(runs, tail=0)):
        with pytest.raises(ParameterError, match="`tail` must be an integer >= 1"):
            call()
    with pytest.raises(ParameterError, match="`phase` must be 'start' or 'end'"):
        analysis.constants_table(runs, phase="middle")
    with pytest.raises(ParameterError, match="`runs` must hold at least one run"):
        analysis.fitted_curves([])


# --- the chapter's figures on the committed runs ----------------------------------------------------

def _committed(name):
    from pathlib import Path

    return load_runs(Path(__file__).resolve().parents[1] / "book" / "experiments" / "runs" / name)


def test_lr_time_chart_draws_every_falling_run_dashed():
    """Fig. 'fig-llm-lr-time' of book/llm.md: its caption says the drawn runs are those the collapse rule
    did not flag, that every one rises but one (AdamW, num_iterations 4, at 1.5e-3, seed 1), and that
    this one is dashed. Checked on the committed sweep: every drawn run ends at least half its start
    and either ends above its start or is marked 'falls' in the chart's data."""
    from grpo_core.llm.probe_check import classify_run, lr_time_curves

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sweep = _committed("lr-sweep")
        curves, scales = lr_time_curves(sweep)
    trends = llm_charts.curve_trends(curves)
    drawn = {(r.config["optimizer"], int(r.config["num_iterations"]), float(r.config["learning_rate"]), r.seed)
             for r in sweep if classify_run(r.reward()[1]) != "collapsed"}
    assert set(zip(trends.optimizer, trends.num_iterations, trends.learning_rate, trends.seed)) == drawn
    assert (trends["last"] >= trends["first"] / 2).all()           # none of them collapsed by the rule
    rising = trends[trends.trend == "rises"]
    assert (rising["last"] > rising["first"] + 0.2).all()           # the others rise, clearly
    falls = trends[trends.trend == "falls"]
    assert [tuple(x) for x in falls[["optimizer", "num_iterations", "learning_rate", "seed"]].to_numpy()] == [
        ("adamw", 4, 0.0015, 1)]
    (fall,) = falls.itertuples()
    assert fall.last < fall.first - 0.05 and f"{fall.first:.2f}" == "0.29" and f"{fall.last:.2f}" == "0.19"
    with alt.data_transformers.disable_max_rows():   # as setup_book() does for the chapters
        spec = llm_charts.lr_time_chart(curves, scales).to_dict()
    rows = [row for data in spec["datasets"].values() for row in data if row.get("kind") == "run"]
    dashed = {(row["optimizer"], row["num_iterations"], row["learning_rate"], row["seed"])
              for row in rows if row["trend"] == "falls"}
    assert dashed == {("adamw", 4, 0.0015, 1)}
    line = spec["spec"]["layer"][0]["encoding"]["strokeDash"]
    assert line["field"] == "trend" and line["scale"]["domain"] == ["rises", "falls"]
    assert line["scale"]["range"][1] != [1, 0]                    # 'falls' is drawn dashed


def test_llm_chapter_charts_fit_the_text_column():
    """Every chart of book/llm.md, built as the chapter builds it, is at most 720 px wide at its natural
    size (the text column at a 1280 px window) with no text under 10 px, read from the rendered SVG."""
    import re

    vlc = pytest.importorskip("vl_convert")
    from grpo_core.llm.probe_check import lr_sweep_table, lr_time_curves

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dynamics = _committed("cpu-dynamics")
        fixed = [r for r in _committed("prompts-fixed-dynamics") + dynamics if r.group_size in (4, 16)]
        sweep_lr, budget = _committed("lr-sweep"), _committed("budget-sweep-dynamics")
        sweep = analysis.budget_sweep_table(budget)
        start = analysis.constants_table(budget, "start")
        pooled = start.set_index("run").loc["pooled (means)"]
        end = analysis.constants_table(budget, "end")
        seeds = start[start.seed >= 0]
        transfer = analysis.transfer_table(fixed)
        charts = {
            "fig-llm-lr-sweep": llm_charts.lr_sweep_chart(*lr_sweep_table(sweep_lr)),
            "fig-llm-lr-time": llm_charts.lr_time_chart(*lr_time_curves(sweep_lr)),
            "fig-llm-dynamics": llm_charts.fits_grid_chart(analysis.fitted_curves(dynamics)),
            "fig-llm-fits": llm_charts.fits_grid_chart(analysis.fitted_curves(fixed)),
            "fig-llm-traj": llm_charts.trajectories_chart(analysis.mean_trajectories(fixed, window=10)),
            "fig-llm-transfer": (llm_charts.transfer_chart(transfer, width=250)
                                 | llm_charts.transfer_chart(transfer, sampled=True, width=250)),
            "fig-llm-budget": alt.hconcat(*(llm_charts.budget_chart(
                sweep, g_star=pooled.g_star_exact, g_star_interval=(seeds.g_star_lo.min(), seeds.g_star_hi.max()),
                g_star_end=float(end[end.seed >= 0].g_star_exact.mean()), metric=m, width=240)
                for m in ("auc", "final_reward"))),
        }
    for name, chart in charts.items():
        with alt.data_transformers.disable_max_rows():   # as setup_book() does for the chapters
            svg = vlc.vegalite_to_svg(chart.to_dict())
        width = float(re.search(r'<svg[^>]*\swidth="([\d.]+)"', svg).group(1))
        sizes = [float(x) for x in re.findall(r'font-size="([\d.]+)px"', svg)]
        assert width <= 720, (name, width)
        assert sizes and min(sizes) >= 10, (name, min(sizes or [0]))
