"""The committed language-model runs of the ``cpu-dynamics`` preset, read from their ``metrics.jsonl``.

Issue 16, section 1: for every seed the sampled training reward starts below 0.4 and rises by at
least 0.35 to a plateau within 800 steps, at most about 8 minutes a run on two cores. The runs were
made by ``grpo-dynamics experiment --preset cpu-dynamics --seeds 0 1 2`` (book/experiments/runs/
cpu-dynamics; provenance.json in each folder). Also pinned: the probe's prediction of the time scale
against the one the runs show, and the two independent measurements of K (the probe's relaxation rate
before training, the curvature implied by the run's own fitted curve).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DYNAMICS = ROOT / "book" / "experiments" / "runs" / "cpu-dynamics"
SEEDS = (0, 1, 2)


def _folder(seed: int) -> Path:
    return DYNAMICS / f"cpu-dynamics__G8-B32__s{seed}"


def _train_rewards(seed: int) -> np.ndarray:
    rows = [json.loads(line) for line in (_folder(seed) / "metrics.jsonl").read_text().splitlines() if line]
    train = [r for r in rows if r.get("split", "train") == "train" and "reward" in r]
    assert [r["step"] for r in train] == list(range(1, len(train) + 1))  # every step, once
    return np.array([r["reward"] for r in train])


@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_starts_low_and_rises_to_a_plateau_within_800_steps(seed):
    y = _train_rewards(seed)
    assert y.size == 800
    start, end = y[:20].mean(), y[-100:].mean()
    assert start < 0.4, start  # the sampled reward of the first 20 steps
    assert end - start >= 0.35, (start, end)
    # a plateau: the last 100 steps rise by less than a tenth of the whole rise
    assert y[-100:].mean() - y[-200:-100].mean() < 0.1 * (end - start)
    summary = json.loads((_folder(seed) / "summary.json").read_text())
    assert summary["wall_seconds"] < 8 * 60
    prov = json.loads((_folder(seed) / "provenance.json").read_text())
    assert prov["git"]["dirty"] is False and prov["seed"] == seed


def test_the_seeds_share_one_warmed_up_start():
    warm = [json.loads((_folder(s) / "warmup.json").read_text()) for s in SEEDS]
    cfgs = [json.loads((_folder(s) / "config.json").read_text()) for s in SEEDS]
    assert len({c["warmup_seed"] for c in cfgs}) == 1 and {c["seed"] for c in cfgs} == set(SEEDS)
    # one warm-up, trained once and then read from the cache: the seeds differ only in GRPO's sampling
    assert {w["key"] for w in warm} == {warm[0]["key"]}
    assert {w["final_loss"] for w in warm} == {warm[0]["final_loss"]}
    assert sum(not w["cached"] for w in warm) <= 1


@pytest.fixture(scope="module")
def checked():
    from grpo_core.llm.probe_check import probe_against_runs
    from grpo_core.llm.runs import load_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return probe_against_runs(load_runs(DYNAMICS)).set_index("seed")


def test_the_probe_predicts_a_rise_ten_times_too_fast(checked):
    # What came out, pinned. The probe's K (the relaxation rate of the expected reward under a few
    # small steps at the start, Adam-preconditioned) predicts 90% of the rise in 29-39 steps; the runs
    # take 440-500. The curvature implied by each run's own curve is 11-15 times smaller than the
    # probe's: two independent measurements that disagree by the same factor as the time scales.
    assert sorted(checked.index) == list(SEEDS)
    assert checked.t90_predicted.between(25, 45).all() and checked.t90_measured.between(400, 520).all()
    assert checked.t90_ratio.between(9, 18).all()
    assert (checked.K_run_lo < checked.K_run).all() and (checked.K_run < checked.K_run_hi).all()
    assert checked.K_run.between(12, 18).all() and checked.K_probe.between(140, 240).all()
    assert checked.K_ratio.between(9, 18).all()
    # the two disagreements agree: K_probe / K_run tracks t90_measured / t90_predicted within 15%
    assert np.allclose(checked.K_ratio, checked.t90_ratio, rtol=0.15)


SWEEP = ROOT / "book" / "experiments" / "runs" / "lr-sweep"


@pytest.fixture(scope="module")
def lr_sweep():
    from grpo_core.llm.probe_check import lr_sweep_table
    from grpo_core.llm.runs import load_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs, critical = lr_sweep_table(load_runs(SWEEP))
    return runs, critical.set_index(["optimizer", "num_iterations"])


def test_the_sweep_covers_two_optimizers_and_the_reuse(lr_sweep):
    runs, crit = lr_sweep
    rates = runs.groupby(["optimizer", "num_iterations"]).learning_rate.nunique().to_dict()
    assert rates == {("adamw", 1): 10, ("adamw", 4): 10, ("sgd", 1): 10}
    # seeds 0, 1 and 2 at every rate of every arm (issue 16: at least 8 rates x 3 seeds)
    assert (crit.seeds == 3).all() and (crit.seeds_per_rate == 3).all()
    seeds = runs.groupby(["optimizer", "num_iterations", "learning_rate"]).seed.apply(lambda s: sorted(s))
    assert all(v == [0, 1, 2] for v in seeds)
    for folder in SWEEP.iterdir():  # every run has the probe of its starting model and its provenance
        assert (folder / "probe.json").is_file() and (folder / "provenance.json").is_file()
        assert json.loads((folder / "provenance.json").read_text())["git"]["dirty"] is False
        # one shared warm-up: the same model at the start of every run
        warm = json.loads((folder / "warmup.json").read_text())
        assert (warm["key"], warm["final_loss"]) == ("460de466a643f7db", 0.1864113003015518)
        # a run that ended before its last step was stopped by stop_collapsed, says so, and collapsed
        cfg, summary = (json.loads((folder / f).read_text()) for f in ("config.json", "summary.json"))
        if summary["steps"] < cfg["max_steps"]:
            assert cfg.get("stop_collapsed", 0) > 0 and summary["stopped_early"]["step"] == summary["steps"]
    assert runs.loc[runs.stopped > 0, "shape"].eq("collapsed").all()  # every stopped run is collapsed


def test_the_measured_critical_rate_against_the_probe(lr_sweep):
    # What came out, pinned (issue 16, section 3). Each run is classified from its own log; the
    # critical rate is bracketed by the last rate most of whose seeds survive and the first rate
    # most of whose seeds collapse.
    runs, crit = lr_sweep

    def bracket(key):
        return tuple(crit.loc[key, ["stable_up_to", "collapsed_from"]])

    assert bracket(("adamw", 1)) == (1.5e-3, 2e-3)
    assert bracket(("adamw", 4)) == (1e-3, 1.5e-3)  # the reuse moves the edge one grid step at most
    assert bracket(("sgd", 1)) == (0.05, 0.07)
    # three seeds at every rate: away from the bracket every seed agrees (all rise below it, all collapse above)
    for key, grp in runs.groupby(["optimizer", "num_iterations"]):
        lo, hi = bracket(key)
        assert (grp[grp.learning_rate < lo]["shape"] != "collapsed").all()
        assert (grp[grp.learning_rate > hi]["shape"] == "collapsed").all()
    # the larger the rate, the faster the collapse (num_iterations 1: a reward every step)
    plain = runs[(runs.num_iterations == 1) & (runs["shape"] == "collapsed")]
    for opt, grp in plain.groupby("optimizer"):
        at_edge = grp[grp.learning_rate == crit.loc[(opt, 1), "collapsed_from"]].collapsed_at
        at_top = grp[grp.learning_rate == grp.learning_rate.max()].collapsed_at
        assert at_edge.min() > 50 and at_top.max() < 20
    adam = runs[(runs.optimizer == "adamw") & (runs.num_iterations == 1)]
    assert (adam[adam.learning_rate <= 1e-3]["shape"] != "collapsed").all()
    assert (adam[adam.learning_rate >= 2e-3]["shape"] == "collapsed").all()
    assert sorted(adam[adam.learning_rate == 1.5e-3]["shape"]) == ["collapsed", "monotone", "monotone"]
    # the sharpness bounds the edge from below within a factor 2.5-5.5 for both optimizers
    for key in (("adamw", 1), ("sgd", 1)):
        assert 2.5 < crit.loc[key, "pred_sharpness_ratio_lo"] < crit.loc[key, "pred_sharpness_ratio_hi"] < 5.5
    # the reward curvature K on-policy is two orders of magnitude too permissive
    assert (crit.loc[[("adamw", 1), ("sgd", 1)], "pred_k_on_policy_ratio_hi"] < 0.01).all()
    # SGD rings just below its edge: all three seeds at 0.05 oscillate; no AdamW run does
    osc = runs[runs["shape"] == "oscillating"]
    assert sorted(zip(osc.optimizer, osc.learning_rate, osc.seed)) == [("sgd", 0.05, s) for s in (0, 1, 2)]


FIXED_PROMPTS = ROOT / "book" / "experiments" / "runs" / "prompts-fixed-dynamics"


def test_group_size_at_fixed_prompts_with_the_cpu_dynamics_preset():
    # G = 4 and 16 at 32 prompts per step, seeds 0-2, 800 steps, from the shared warm-up; with the
    # preset's own G = 8 seeds (cpu-dynamics/) the reward at the end grows with G in every seed.
    from grpo_core.llm.runs import load_runs, runs_table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = runs_table(load_runs(FIXED_PROMPTS) + load_runs(DYNAMICS))
    assert sorted(zip(table.G, table.seed)) == [(g, s) for g in (4, 8, 16) for s in SEEDS]
    assert (table.steps == 800).all() and (table.start_reward < 0.3).all()
    final = table.pivot(index="seed", columns="G", values="final_reward")
    assert ((final[4] < final[8]) & (final[8] < final[16])).all()
    assert (final[16] - final[4]).min() > 0.03
    for folder in FIXED_PROMPTS.iterdir():
        warm = json.loads((folder / "warmup.json").read_text())
        assert (warm["key"], warm["final_loss"]) == ("460de466a643f7db", 0.1864113003015518)
        assert (folder / "probe.json").is_file()
        assert json.loads((folder / "provenance.json").read_text())["git"]["dirty"] is False


BUDGET = ROOT / "book" / "experiments" / "runs" / "budget-sweep-dynamics"


def test_fixed_budget_sweep_with_the_cpu_dynamics_preset():
    # N = 256 completions per step split as B = 256 / G prompts, G = 2..32, seeds 0-2, 800 steps, from the
    # shared warm-up, with the gradient constants measured at the start and the end of every run.
    from grpo_core.llm import analysis
    from grpo_core.llm.runs import load_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = load_runs(BUDGET)
        sweep = analysis.budget_sweep_table(runs).set_index("G")
        start = analysis.constants_table(runs, "start").set_index("seed")
        end = analysis.constants_table(runs, "end")
    assert sorted((r.group_size, r.seed) for r in runs) == [(g, s) for g in (2, 4, 8, 16, 32) for s in SEEDS]
    assert (sweep.N == 256).all() and (sweep.n == 3).all() and list(sweep.B) == [128, 64, 32, 16, 8]
    # G = 4 is best by the mean reward over the run and by the final reward; 16 and 32 are the worst
    assert sweep.auc.idxmax() == sweep.final_reward.idxmax() == 4
    assert sweep.auc.loc[[16, 32]].max() < sweep.auc.loc[[2, 4, 8]].min()
    # G* from the starting model's constants (pooled over seeds) lies above the measured optimum, the
    # end's below it
    assert 6.5 < start.loc[-1, "g_star_exact"] < 9.0
    g_end = end[end.seed >= 0].g_star_exact
    assert 2.0 < g_end.min() and g_end.max() < 3.5
    # at a fixed budget the per-step noise grows with G (completions of one prompt are correlated)
    ratio = analysis.step_noise(runs).groupby("G")["ratio"].mean()
    assert ratio.is_monotonic_increasing and ratio.loc[32] > 1.5 * ratio.loc[2]
    # the G = 8 runs are the preset's settings: the same reward at every step as the preset's runs
    for seed in SEEDS:
        mine = [json.loads(x) for x in (BUDGET / f"cpu-dynamics__G8-B32__s{seed}" / "metrics.jsonl").read_text()
                .splitlines() if x]
        assert np.array_equal([r["reward"] for r in mine if r.get("split", "train") == "train" and "reward" in r],
                              _train_rewards(seed))
    for folder in BUDGET.iterdir():
        warm = json.loads((folder / "warmup.json").read_text())
        assert (warm["key"], warm["final_loss"]) == ("460de466a643f7db", 0.1864113003015518)
        assert (folder / "probe.json").is_file() and (folder / "gradient_constants.json").is_file()
        assert json.loads((folder / "provenance.json").read_text())["git"]["dirty"] is False
