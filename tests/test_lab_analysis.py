"""Reading and predicting the lab's runs (grpo_core.llm.lab_analysis): closed forms of the thresholds and
periods, the relaxation and recurrence fits on exact recurrences, the regimes of simulated returns on both
sides of the threshold, the measured bracket."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core.errors import ParameterError
from grpo_core.llm import lab_analysis as la
from grpo_core.model import stability


def _heavy_ball(a, mu, n, e0=-0.25, k_ref=1, ema=False, noise=0.0, seed=0, p_star=0.6):
    """p_t of the refresh-lag recurrence (the gradient read at the last refresh), from rest at e0."""
    rng = np.random.default_rng(seed)
    g = (1 - mu) * a if ema else a
    e, v, stale = [e0], 0.0, e0
    for t in range(n):
        if t % k_ref == 0:
            stale = e[-1]
        v = mu * v - g * stale + noise * rng.normal()
        e.append(e[-1] + v)
    return p_star + np.array(e)


def test_relaxation_fit_recovers_a_geometric_return_and_refuses_what_is_not_one():
    p = 0.7 - 0.3 * (1 - 0.04) ** np.arange(60)
    fit = la.relaxation_fit(p, 0.7, eta=0.02, floor=0.01)
    assert fit["k"] == pytest.approx(2.0, rel=1e-9) and fit["gain"] == pytest.approx(0.04)
    with pytest.raises(ParameterError, match="noise floor"):
        la.relaxation_fit(p, 0.7, eta=0.02, floor=0.5)
    with pytest.raises(ParameterError, match="does not shrink"):
        la.relaxation_fit(0.7 - 0.1 * 1.05 ** np.arange(10), 0.7, eta=0.02, floor=0.01)
    with pytest.raises(ParameterError, match="eta"):
        la.relaxation_fit(p, 0.7, eta=0.0, floor=0.01)


@pytest.mark.parametrize("optimizer,ema", [("sgd", False), ("adamw", True)])
def test_recurrence_fit_recovers_k_and_p_star_under_momentum(optimizer, ema):
    eta, k = 0.01, 3.0
    p = _heavy_ball(eta * k, 0.9, 80, ema=ema)
    fit = la.recurrence_fit(p, eta, 0.9, optimizer)
    assert fit["k"] == pytest.approx(k, rel=1e-6) and fit["p_star"] == pytest.approx(0.6, abs=1e-9)
    noisy = la.recurrence_fit(_heavy_ball(eta * k, 0.9, 400, ema=ema, noise=5e-4, seed=1), eta, 0.9, optimizer)
    assert noisy["k"] == pytest.approx(k, rel=0.25)
    with pytest.raises(ParameterError, match="at least 4"):
        la.recurrence_fit([0.1, 0.2, 0.3], eta, 0.9, optimizer)


def test_thresholds_are_the_exact_refresh_lag_ones_and_the_edges_their_closed_forms():
    k = 0.5
    assert la.oscillator_critical_lr(k, "sgd", 0.9, 1) == pytest.approx(2 * 1.9 / k)
    assert la.oscillator_critical_lr(k, "adamw", 0.9, 1) == pytest.approx(2 * 1.9 / 0.1 / k)
    for kr in (4, 16, 64):
        assert la.oscillator_critical_lr(k, "sgd", 0.9, kr) == pytest.approx(
            float(stability.critical_a_exact(0.9, kr, "refresh", "heavy_ball")) / k)
        assert la.oscillator_critical_lr(k, "sgd", 0.9, kr, "ratio") == pytest.approx(3.8 / k)
    assert la.sharpness_critical_lr(50.0, "sgd", 0.9) == pytest.approx(3.8 / 50)
    assert la.sharpness_critical_lr(50.0, "adamw", 0.9) == pytest.approx(38 / 50)
    with pytest.raises(ParameterError, match="optimizer"):
        la.sharpness_critical_lr(50.0, "lion", 0.9)


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_predictions_cross_where_the_stale_threshold_falls_below_the_edge(optimizer):
    k, top = 0.45, 196.0
    pr = la.lab_predictions(k, top, optimizer, 0.9, (1, 4, 16, 64))
    c = pr["crossover_k_ref"]
    edge = la.sharpness_critical_lr(top, optimizer, 0.9)
    assert la.oscillator_critical_lr(k, optimizer, 0.9, c) < edge <= la.oscillator_critical_lr(k, optimizer, 0.9, c - 1)
    for row in pr["settings"]:
        assert row["eta_pred"] == min(row["eta_osc"], row["eta_sharp"])
        assert row["first"] == ("oscillator" if row["k_ref"] >= c and row["mode"] == "stale" else "sharpness")
        assert row["eta_damping"] < row["eta_osc"]


def test_predicted_period_is_the_heavy_ball_root_angle_and_inf_when_overdamped():
    a, mu = 0.02, 0.9
    theta = math.acos((1 + mu - a) / (2 * math.sqrt(mu)))
    assert la.predicted_period(1.0, a, "sgd", mu, 1) == pytest.approx(2 * math.pi / theta)
    assert math.isinf(la.predicted_period(1.0, 0.001, "sgd", mu, 1))  # below (1 - sqrt mu)^2
    assert math.isinf(la.predicted_period(1.0, 0.1, "sgd", 0.0, 1))


def test_predicted_regime_on_both_sides_of_damping_and_threshold():
    k = 1.0
    row = la.lab_predictions(k, 1e-6, "sgd", 0.9, (1,), ("stale",))["settings"][0]   # no sharpness edge in reach
    assert row["first"] == "oscillator"
    d = row["eta_damping"]
    assert la.predicted_regime(0.9 * d, row, k, "sgd", 0.9) == "monotone"
    assert la.predicted_regime(1.1 * d, row, k, "sgd", 0.9) == "damped ringing"
    assert la.predicted_regime(1.01 * row["eta_pred"], row, k, "sgd", 0.9) == "growing oscillation"
    sharp = la.lab_predictions(k, 1e3, "sgd", 0.9, (1,), ("stale",))["settings"][0]
    assert sharp["first"] == "sharpness"
    assert la.predicted_regime(1.01 * sharp["eta_pred"], sharp, k, "sgd", 0.9) == "collapse"


def test_classify_trace_on_simulated_returns_either_side_of_the_threshold():
    mu = 0.9
    mono = _heavy_ball(0.05, 0.0, 120)
    assert la.classify_trace(mono, 0.6, noise=0.005)["regime"] == "monotone"
    a = 0.02
    ring = la.classify_trace(_heavy_ball(a, mu, 200), 0.6, noise=0.005)
    assert ring["regime"] == "damped ringing"
    light = la.classify_trace(_heavy_ball(a, 0.97, 300), 0.6, noise=0.005)   # lighter damping: several swings
    assert light["regime"] == "damped ringing"
    assert light["period"] == pytest.approx(la.predicted_period(1.0, a, "sgd", 0.97, 1), rel=0.1)
    a_star = float(stability.critical_a_exact(mu, 16, "refresh", "heavy_ball"))
    grow = np.clip(_heavy_ball(1.3 * a_star, mu, 400, k_ref=16, e0=-0.1), 0, 1)
    assert la.classify_trace(grow, 0.6, noise=0.005)["regime"] == "growing oscillation"
    calm = _heavy_ball(0.7 * a_star, mu, 400, k_ref=16, e0=-0.1)
    assert la.classify_trace(calm, 0.6, noise=0.005)["regime"] in ("damped ringing", "monotone")
    # a reward capped just above p* (the network's ceiling): the oscillation shows as repeated dips; the
    # registered rule, which needs swings above p*, calls it a collapse
    capped = np.minimum(grow, 0.61)
    assert la.classify_trace(capped, 0.6, noise=0.005)["regime"] == "growing oscillation"
    assert la.classify_trace(capped, 0.6, noise=0.005, rule="registered")["regime"] == "collapse"
    crash = np.concatenate([0.4 - 0.02 * np.arange(20), np.zeros(40)])
    assert la.classify_trace(crash, 0.6, noise=0.005)["regime"] == "collapse"
    assert la.classify_trace(np.r_[0.4, 0.45, np.full(10, np.nan)], 0.6, noise=0.005)["regime"] == "collapse"
    with pytest.raises(ParameterError, match="displaced"):
        la.classify_trace(np.full(20, 0.6), 0.6, noise=0.005)
    with pytest.raises(ParameterError, match="rule"):
        la.classify_trace(mono, 0.6, noise=0.005, rule="mine")


def test_critical_bracket():
    assert la.critical_bracket([0.1, 0.2, 0.4, 0.8], [False, False, True, True]) == (0.2, 0.4)
    assert la.critical_bracket([0.1, 0.2], [False, False]) == (0.2, math.inf)
    assert la.critical_bracket([0.1, 0.2], [True, True]) == (0.0, 0.1)
    # a stable rate above the first unstable one does not widen the bracket
    assert la.critical_bracket([0.1, 0.2, 0.4], [False, True, False]) == (0.1, 0.2)
    with pytest.raises(ParameterError, match="unstable"):
        la.critical_bracket([0.1], [True, False])


def _trace(opt, mode, k_ref, eta, p, seed=0):
    return {"settings": {"optimizer": opt, "mode": mode, "k_ref": k_ref, "learning_rate": eta, "seed": seed},
            "p": list(p), "reward": [], "kl": [], "grad_norm": [], "finite": True, "seconds": 1.0}


def test_sweep_table_brackets_each_setting_and_scores_the_prediction():
    k, top, mu = 1.0, 1e-6, 0.9
    pr = la.lab_predictions(k, top, "sgd", mu, (16,), ("stale",))
    a_star = float(stability.critical_a_exact(mu, 16, "refresh", "heavy_ball"))
    pred = {"p_star": 0.6, "noise": 0.002, "mu": mu, "predictions": {"sgd": pr}}
    traces = [_trace("sgd", "stale", 16, f * a_star,
                     np.clip(_heavy_ball(f * a_star, mu, 400, k_ref=16, e0=-0.1), 0, 1)) for f in (0.6, 0.9, 1.2, 1.8)]
    (row,) = la.sweep_table(pred, traces)
    assert [r["measured"] in la.UNSTABLE for r in row["runs"]] == [False, False, True, True]
    assert row["lo"] == pytest.approx(0.9 * a_star) and row["hi"] == pytest.approx(1.2 * a_star)
    assert row["within_1_5"] and row["first"] == "oscillator"
    assert row["mechanism"] == "growing oscillation" and row["mechanism_as_predicted"]
    assert [r["predicted"] for r in row["runs"]] == ["damped ringing"] * 2 + ["growing oscillation"] * 2
    # the prediction four times too low is outside a factor 1.5 of the same bracket
    far = {**pred, "predictions": {"sgd": la.lab_predictions(4.0, top, "sgd", mu, (16,), ("stale",))}}
    assert not la.sweep_table(far, traces)[0]["within_1_5"]
    curves = la.prediction_curves(pred, k_refs=[1, 16])
    osc = {(c["mode"], c["k_ref"]): c["eta"] for c in curves if c["line"] == "oscillator"}
    assert osc[("stale", 16)] == pytest.approx(a_star) and osc[("ratio", 16)] == pytest.approx(3.8)


def test_lab_record_reads_the_committed_sweep_and_ablation():
    from pathlib import Path

    from grpo_core.errors import DataError

    root = Path(__file__).resolve().parent.parent / "book" / "experiments" / "runs" / "oscillator-lab"
    rec = la.load_lab_record(root)
    assert 0.5 <= rec.predictions["p_star"] <= 0.85 and rec.predictions["written_before_sweep"]
    sgd = [r for r in rec.relaxation_table() if r["optimizer"] == "sgd"]
    assert len(sgd) == 2 and sgd[0]["k"] == pytest.approx(sgd[1]["k"], rel=0.2)   # K per unit rate: no eta
    runs_only = sum(t["seconds"] for t in rec.traces + rec.ablation) / 3600
    assert rec.cpu_hours() > runs_only > 0   # the preparation counts too
    assert len(rec.stage_runs()) == 1 + len(rec.stages["hold_runs"]) + len(rec.stages["displace_runs"]) + 12
    cells = {(c["optimizer"], c["scale_rewards"]): c for c in la.ablation_table(rec.ablation)
             if c["num_prompts"] == 8 and c["g_large"] == 16}
    assert set(cells) == {("sgd", "group"), ("sgd", "none"), ("adamw", "group"), ("adamw", "none")}
    with pytest.raises(DataError, match="missing"):
        la.load_lab_record(root / "nowhere")


def test_model_trace_is_the_refresh_lag_recurrence_and_its_period_the_root_angle():
    # on-policy heavy ball: e_{t+1} = (1 + mu - a) e_t - mu e_{t-1}
    e = la.model_trace(1.0, 0.02, "sgd", 0.97, 1, 50)
    assert e[0] == -1.0 and e[1] == pytest.approx(-1.0 + 0.02)
    assert np.allclose(e[2:], (1 + 0.97 - 0.02) * e[1:-1] - 0.97 * e[:-2])
    assert la.model_period(1.0, 0.02, "sgd", 0.97, 1, 400) == pytest.approx(
        la.predicted_period(1.0, 0.02, "sgd", 0.97, 1), rel=0.05)
    # EMA momentum is heavy ball with gain (1 - mu) a
    assert np.allclose(la.model_trace(1.0, 0.2, "adamw", 0.9, 1, 30), la.model_trace(1.0, 0.02, "sgd", 0.9, 1, 30))
    # the ratio removes the lag; the stale and frozen modes keep it
    on_policy = la.model_trace(1.0, 0.01, "sgd", 0.9, 1, 60)
    assert np.allclose(la.model_trace(1.0, 0.01, "sgd", 0.9, 16, 60, "ratio"), on_policy)
    lagged = la.model_trace(1.0, 0.01, "sgd", 0.9, 16, 60, "frozen")
    assert np.allclose(lagged, la.model_trace(1.0, 0.01, "sgd", 0.9, 16, 60, "stale"))
    assert np.allclose(np.diff(np.diff(lagged[:17])) / 0.9 ** np.arange(15), np.diff(np.diff(lagged[:17]))[0])
    a_star = float(stability.critical_a_exact(0.9, 16, "refresh", "heavy_ball"))
    assert np.abs(la.model_trace(1.0, 0.9 * a_star, "sgd", 0.9, 16, 2000)[-200:]).max() < 0.5
    assert np.abs(la.model_trace(1.0, 1.1 * a_star, "sgd", 0.9, 16, 2000)[-200:]).max() > 2.0
