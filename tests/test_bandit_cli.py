"""`grpo-dynamics bandit`: the run report, the sweep JSON against the oscillator, bad input."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from scipy.special import expit

from grpo_core.model import stability
from grpo_dynamics.cli import main


def _json(capsys, *args):
    assert main(["bandit", *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_run_prints_final_p_spread_fixed_point_and_stiffness(capsys, tmp_path):
    path = tmp_path / "run.csv"
    d = _json(capsys, "--eta", "0.5", "--mu", "0.3", "--k-ref", "2", "--group-size", "16", "--seeds", "24",
              "--steps", "300", "--baseline", "leave_one_out", "--out", str(path))
    p_star = expit(1.0)  # leave-one-out, beta = 1: p* = sigmoid(1) at every G
    assert d["p_star"] == pytest.approx(p_star, abs=1e-9)
    assert d["curvature"] == pytest.approx(2 * p_star * (1 - p_star), rel=1e-6)
    assert abs(d["final_p_mean"] - p_star) < 4 * d["final_p_spread"] / math.sqrt(24) + 0.01
    assert 0 < d["final_p_spread"] < 0.1
    assert d["regime_measured"] == d["regime_exact"]
    frame = pd.read_csv(path)
    assert list(frame.columns) == ["step", "seed", "p"] and len(frame) == 24 * 301


def test_mean_field_run_is_deterministic_and_reaches_p_star(capsys):
    d = _json(capsys, "--eta", "0.5", "--group-size", "inf", "--mean-field", "--steps", "600")
    assert d["final_p_mean"] == pytest.approx(expit(1.0), abs=1e-9) and d["final_p_spread"] == 0.0


def test_sweep_k_ref_prints_measured_next_to_both_predictions(capsys):
    for lag in ("constant", "refresh"):
        d = _json(capsys, "--sweep", "k_ref", "--eta", "0.5", "--mu", "0.5", "--lag", lag, "--k-max", "24")
        assert {"measured_critical_k_ref", "predicted_continuous", "predicted_exact"} <= d.keys()
        assert d["measured_critical_k_ref"] == d["predicted_exact"]
        k = d["curvature"]
        assert d["predicted_exact"] == stability.critical_value(
            "k_ref", eta=0.5, mu=0.5, curvature=k, lag=lag, method="exact")


def test_sweep_eta_and_the_report(capsys):
    d = _json(capsys, "--sweep", "eta", "--mu", "0.9", "--k-ref", "8")
    assert d["measured_critical_a"] == pytest.approx(float(stability.critical_a_exact(0.9, 8)), rel=0.01)
    assert main(["bandit", "--sweep", "k_ref", "--eta", "0.5", "--mu", "0.5", "--k-max", "12"]) == 0
    text = capsys.readouterr().out
    assert "measured" in text and "exact discrete" in text


def test_no_kl_anchor_says_so(capsys):
    d = _json(capsys, "--eta", "0.2", "--beta", "0", "--steps", "50", "--seeds", "2")
    assert d["interior_fixed_point"] is False and d["curvature"] is None


@pytest.mark.parametrize(
    "args, name",
    [
        (["--eta", "0.1", "--arms", "1"], "arms"),
        (["--eta", "0.1", "--arms", "3", "--correct", "0"], "correct"),
        (["--eta", "0.1", "--group-size", "0"], "group_size"),
        (["--eta", "0.1", "--group-size", "1", "--baseline", "leave_one_out"], "group_size"),
        (["--eta", "0.1", "--group-size", "1", "--scale-std"], "group_size"),
        (["--eta", "0.1", "--reward-probs", "1.2,0"], "reward_probs"),
        (["--eta", "0.1", "--reward-probs", "0.5,x"], "reward_probs"),
        (["--eta", "0"], "eta"),
        (["--eta", "nan"], "eta"),
        (["--eta", "0.1", "--mu", "1"], "mu"),
        (["--eta", "0.1", "--k-ref", "0"], "k_ref"),
        (["--eta", "0.1", "--steps", "0"], "steps"),
        (["--eta", "0.1", "--seeds", "0"], "seeds"),
        (["--eta", "0.1", "--steps", "1e12"], "steps"),  # was a 7 TiB allocation and a traceback
        (["--eta", "0.1", "--seeds", "100000000"], "seeds"),  # was 10^8 generators: a hang
        (["--eta", "0.1", "--group-size", "inf"], "group_size"),
        (["--eta", "0.1", "--group-size", "1e9", "--steps", "2"], "group_size"),  # was an 888 PiB allocation
        (["--eta", "0.1", "--arms", "1000000000"], "arms"),  # was a hang
        (["--eta", "0.1", "--steps", "20", "--out", "."], "--out"),  # a directory
        (["--mu", "0.5"], "eta"),
        (["--sweep", "k_ref", "--eta", "0.5", "--beta", "0"], "beta"),
    ],
)
def test_bad_input_is_one_line_naming_the_parameter(capsys, args, name):
    assert main(["bandit", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"`{name}`" in err and "Traceback" not in err


def test_an_unstable_eta_is_reported_as_divergent_not_as_an_error(capsys):
    # eta = 1e300 overflows float64 in the mean-field run and the exact recurrence; that is the
    # answer (divergent), not a "`p` must be finite" error
    d = _json(capsys, "--eta", "1e300", "--steps", "50", "--seeds", "2")
    assert d["regime_measured"] == "divergent" and d["regime_exact"] == "divergent"
    assert d["regime_continuous"] == "divergent"
    assert main(["bandit", "--eta", "1e300", "--steps", "50", "--mean-field"]) == 0
    out = capsys.readouterr().out
    assert "a = eta K = 4.153e+299" in out and "divergent" in out


def test_report_of_a_run_whose_seeds_all_overflowed():
    from grpo_dynamics.commands.bandit import _run_report

    o = {
        "arms": 2,
        "group_size": 8.0,
        "num_prompts": 1,
        "baseline": "mean",
        "scale": "none",
        "estimator": "score",
        "lag": "constant",
        "momentum": "heavy_ball",
        "eta": 10.0,
        "mu": 0.9,
        "k_ref": 8,
        "beta": 1.0,
        "steps": 100,
        "seeds": 2,
        "mean_field": False,
        "final_p_mean": None,
        "final_p_spread": None,
        "overflowed_seeds": 2,
        "interior_fixed_point": False,
        "p_star": 1.0,
    }
    assert "the run diverged" in _run_report(o)
    o.update(final_p_mean=0.7, final_p_spread=0.0, overflowed_seeds=1)
    assert "0.7000" in _run_report(o) and "1 more seed(s) overflowed" in _run_report(o)


def test_report_echoes_inputs_with_all_their_digits(capsys):
    assert main(["bandit", "--eta", "0.5", "--mu", "0.9999999", "--k-ref", "1", "--group-size", "4",
                 "--seeds", "2", "--steps", "20"]) == 0
    out = capsys.readouterr().out
    assert "eta = 0.5, mu = 0.9999999, k_ref = 1, beta = 1, 20 steps" in out  # ':g' printed mu = 1


def test_a_run_too_short_to_classify_says_so(capsys):
    assert main(["bandit", "--eta", "0.1", "--steps", "5", "--seeds", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["regime_measured"] is None and d["steps"] == 5 and d["regime_exact"] == "monotone"
    assert main(["bandit", "--eta", "0.1", "--steps", "5", "--seeds", "1"]) == 0
    assert "not classified (fewer than 8 points, step 0 included)" in capsys.readouterr().out


def test_k_ref_sweep_extends_past_the_prediction_or_says_greater_than(capsys):
    # eta 0.003, mu 0.9: the exact prediction is k_ref 118, past the default --k-max 64
    d = _json(capsys, "--sweep", "k_ref", "--eta", "0.003", "--mu", "0.9")
    assert d["predicted_exact"] == 118 and d["k_max_extended"] is True and d["k_max"] == 148
    assert d["measured_critical_k_ref"] == 118  # the mean-field bandit agrees with the exact recurrence
    assert main(["bandit", "--sweep", "k_ref", "--eta", "0.003", "--mu", "0.9", "--k-max", "64"]) == 0
    out = capsys.readouterr().out
    assert "measured (mean-field bandit, smallest unstable k_ref <= 64): > 64 (none unstable up to --k-max 64)" in out
    assert "inf" not in out


@pytest.mark.parametrize("k_ref, expected", [(37, "oscillatory"), (38, "divergent")])
def test_run_regime_labels_follow_the_stability_tests_at_the_threshold(capsys, k_ref, expected):
    # eta 0.0085, mu 0.9: the exact first unstable k_ref is 38. A 500-step run cannot tell the slow
    # decay at 37 (growth -1.7e-4 per step) from the slow growth at 38 (+1.6e-4): the labels come from
    # the measured growth rate and the exact test, the shape from the run
    d = _json(capsys, "--eta", "0.0085", "--mu", "0.9", "--k-ref", str(k_ref), "--seeds", "2")
    assert d["regime_measured"] == d["regime_exact"] == expected
    assert d["stable_exact"] is (k_ref == 37)
    assert (d["growth_rate_measured"] < 0) is (k_ref == 37) and abs(d["growth_rate_measured"]) < 3e-4


def test_no_overflow_warning_when_no_seed_overflowed(capsys):
    # at eta = 1e6 the bandit's p saturates at 1 (finite, no seed overflows); only the oscillator's own linear
    # recurrence overflows, which is its answer "divergent": no warning that reads as if the run overflowed
    assert main(["bandit", "--eta", "1e6", "--steps", "100", "--seeds", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["overflowed_seeds"] == 0 and "overflowed" not in err
    assert json.loads(out)["regime_exact"] == "divergent"
