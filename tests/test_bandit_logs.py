"""Bandit runs as training logs; the chapter's runs made to fail in each mode, diagnosed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core import bandit as bd
from grpo_core.errors import ParameterError
from grpo_core.runs.bandit_logs import SCENARIOS, instability_sweep, run_log, scenario_log, simulate_log
from grpo_core.runs.diagnostics import MODES, diagnose


def test_run_log_is_the_runs_metrics():
    spec = bd.BanditSpec.binary(arms=4, correct=1, group_size=8, num_prompts=4)
    run = bd.simulate(spec, eta=[0.3, 0.6], beta=1.0, steps=30, seeds=3, metrics=True)
    log = run_log(run, config=1, seed=2)
    assert log.format == "grpo_dynamics" and log.reward_std_kind == "group_mean_std"
    assert log.train.index.tolist() == list(range(1, 31))  # step 0 (nothing sampled) left out
    for key, col in [("reward", "reward"), ("frac_reward_zero_std", "frac_reward_zero_std"),
                     ("entropy", "entropy"), ("kl", "kl"), ("grad_norm", "grad_norm"),
                     ("clip_ratio", "clip_ratio_region")]:
        assert np.array_equal(log.train[col].to_numpy(), run.metrics[key][1, 2, 1:], equal_nan=True)
    assert np.array_equal(log.train["expected_reward"].to_numpy(), run.p[1, 2, 1:])
    assert "eta=0.6" in log.source
    with pytest.raises(ParameterError, match="`config`"):
        run_log(run, config=2)
    with pytest.raises(ParameterError, match="metrics=True"):
        run_log(bd.simulate(spec, eta=0.3, steps=5))


def test_simulate_log_eval_rows():
    spec = bd.BanditSpec.binary(arms=2, correct=1, group_size=8, num_prompts=4, lag="refresh")
    log = simulate_log(spec, eta=0.5, beta=1.0, k_ref=2, steps=65, seed=3, eval_reward_probs=[1.0, 0.0],
                       eval_every=10, eval_samples=400)
    assert log.train.index.tolist() == list(range(1, 66))
    assert log.eval.index.tolist() == [10, 20, 30, 40, 50, 60]  # no eval after the partial last chunk
    acc, exact = log.eval["accuracy"].to_numpy(), log.eval["expected_accuracy"].to_numpy()
    # eval accuracy is a Binomial(400, p)/400 draw: within 5 standard deviations of p
    assert np.all(np.abs(acc - exact) <= 5 * np.sqrt(exact * (1 - exact) / 400) + 1e-12)
    # the exact accuracy after a chunk is the training reward's p (same reward here)
    assert np.allclose(exact, log.train.loc[[10, 20, 30, 40, 50, 60], "expected_reward"].to_numpy())
    # reproducible
    again = simulate_log(spec, eta=0.5, beta=1.0, k_ref=2, steps=65, seed=3, eval_reward_probs=[1.0, 0.0],
                         eval_every=10, eval_samples=400)
    assert np.array_equal(log.eval["accuracy"].to_numpy(), again.eval["accuracy"].to_numpy())


@pytest.mark.parametrize("kwargs,match", [
    (dict(mu=0.5), "`mu` = 0"),
    (dict(k_ref=3), "multiple of `k_ref`"),
    (dict(eval_reward_probs=[1.0, 0.0, 0.0]), "one entry per arm"),
])
def test_simulate_log_refuses_inexact_chunking(kwargs, match):
    spec = bd.BanditSpec.binary(arms=2, correct=1, group_size=4, lag="refresh")
    args = dict(eta=0.5, beta=1.0, steps=20, eval_reward_probs=[1.0, 0.0], eval_every=10) | kwargs
    with pytest.raises(ParameterError, match=match):
        simulate_log(spec, **args)
    with pytest.raises(ParameterError, match="lag='refresh'"):
        simulate_log(spec.replace(lag="constant"), eta=0.5, steps=20, eval_reward_probs=[1.0, 0.0])


def test_scenarios_cover_every_mode():
    assert set(SCENARIOS) == {"healthy", *MODES}
    for name, sc in SCENARIOS.items():
        assert sc.name == name and sc.title and sc.why
        assert sc.params()["scenario"] == name


@pytest.mark.parametrize("seed", [0, 1])
def test_healthy_bandit_run_is_healthy(seed):
    sc = SCENARIOS["healthy"]
    d = diagnose(scenario_log("healthy", seed=seed), group_size=sc.group_size)
    assert d.healthy and d.modes == []
    assert set(MODES) <= set(d.checked)  # it has an eval metric, so every mode of the paper was checked
    # the forecast plateau lands on the bandit's exact finite-G fixed point p* = sigmoid(7/8) = 0.7058
    p_star = bd.fixed_point(sc.spec, sc.beta).p_star
    assert p_star == pytest.approx(1 / (1 + math.exp(-7 / 8)), abs=1e-6)
    assert abs(d.forecast["plateau"] - p_star) < 0.01
    assert d.forecast["plateau_low"] - 0.005 <= p_star <= d.forecast["plateau_high"] + 0.005


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [0, 1])
def test_each_failing_bandit_run_is_diagnosed(mode, seed):
    sc = SCENARIOS[mode]
    d = diagnose(scenario_log(mode, seed=seed), group_size=sc.group_size, forecast=False)
    if mode == "advantage_degeneration":
        # the bandit still reaches its fixed point: zero spread in a run that learns is a cost
        # (severity info, issue 13), not a failure
        f = d.find(mode)
        assert f is not None and f.severity == "info" and "cost" in f.message, d.summary()
        return
    assert not d.healthy
    assert d.primary.mode == mode, d.summary()
    assert d.primary.severity in ("warning", "critical")


def test_instability_sweep_flags_runs_past_the_threshold():
    sc = SCENARIOS["healthy"]
    table = instability_sweep([2, 6, 12], seeds=2, steps=400)
    k = table.attrs["stiffness"]
    # refresh lag, mu = 0: the exact threshold is eta K k_ref = 2
    # (book chapter "From update rule to oscillator")
    assert 2 * 6 < 2 / (sc.eta * k) * 2 < 2 * 12
    flagged = table.groupby("k_ref")["flagged"].all()
    assert not flagged[2] and not flagged[6] and flagged[12]
    assert table.loc[table.k_ref == 12, "period"].between(20, 28).all()  # about 2 k_ref
    with pytest.raises(ParameterError, match="`k_refs`"):
        instability_sweep([2.5])
