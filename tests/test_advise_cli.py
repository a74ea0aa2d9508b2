"""`grpo-dynamics advise`: the report, the JSON keys and values, and refused input (case 08)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from grpo_core.model import stability
from grpo_core.model.advice import advise
from grpo_core.runs import curvature
from grpo_dynamics.cli import main

REQUIRED_KEYS = {
    "regime", "damping_ratio", "mass", "damping", "stiffness", "critical_k_ref_continuous",
    "critical_a_exact", "stable_exact", "time_to_90",
}


def _run_json(capsys, *args):
    assert main(["advise", *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def test_json_has_the_documented_keys_and_values(capsys):
    d = _run_json(capsys, "--eta", "0.01", "--mu", "0.9", "--k-ref", "4", "--curvature", "1")
    assert REQUIRED_KEYS <= d.keys()
    assert d["regime"] == "underdamped"
    assert d["mass"] == pytest.approx((1 + 0.9 + 0.01 * 16) / 2)
    assert d["damping"] == pytest.approx(1 - 0.9 - 0.01 * 4)
    assert d["stiffness"] == pytest.approx(0.01)
    assert d["critical_k_ref_continuous"] == pytest.approx((1 - 0.9) / 0.01)
    assert d["critical_a_exact"] == pytest.approx(float(stability.critical_a_exact(0.9, 4)[()]))
    assert d["stable_exact"] is True
    assert d["critical_k_ref_exact"] == 12  # smallest unstable integer (exact > continuous 10)
    assert 0 < d["time_to_90"] < math.inf


def test_critical_beta_with_a_kl_anchor(capsys):
    d = _run_json(capsys, "--eta", "0.01", "--mu", "0.9", "--k-ref", "4", "--curvature", "1", "--beta", "0.1")
    b_star = stability.critical_value("beta", eta=0.01, mu=0.9, k_ref=4, curvature=1.0)
    assert d["critical_beta_exact"] == pytest.approx(b_star) and b_star == pytest.approx(
        d["critical_a_exact"] / 0.01 - 1
    )
    assert (
        main(["advise", "--eta", "0.01", "--mu", "0.9", "--k-ref", "4", "--curvature", "1", "--beta", "0.1"])
        == 0
    )
    assert f"critical beta = {b_star:.3g}" in capsys.readouterr().out


def test_json_for_refresh_lag_ema_and_unstable(capsys):
    d = _run_json(
        capsys, "--eta", "0.3", "--mu", "0.5", "--k-ref", "8", "--curvature", "1", "--lag", "refresh"
    )
    assert d["critical_a_exact"] == pytest.approx(float(stability.critical_a_exact(0.5, 8, "refresh")[()]))
    assert d["critical_k_ref_continuous"] == pytest.approx(0.5 / 0.3)  # the paper's formula
    assert d["critical_k_ref_continuous_lag_model"] == pytest.approx(1 + 2 * 0.5 / 0.3)
    assert d["stable_exact"] is False and d["regime"] == "unstable"
    assert d["time_to_90"] is None  # inf is written as null (JSON has no infinity)
    e = _run_json(
        capsys, "--eta", "0.001", "--mu", "0.9", "--k-ref", "4", "--curvature", "20", "--momentum", "ema"
    )
    assert e["critical_k_ref_continuous"] == pytest.approx(1 / 0.02)  # EMA: eta K K_ref < 1
    assert e["critical_a_exact"] == pytest.approx(
        float(stability.critical_a_exact(0.9, 4, momentum="ema")[()])
    )


def test_beta_adds_to_the_stiffness(capsys):
    d = _run_json(capsys, "--eta", "0.01", "--mu", "0.5", "--k-ref", "2", "--curvature", "1", "--beta", "0.5")
    assert d["stiffness"] == pytest.approx(0.01 * 1.5)
    assert d["a"] == pytest.approx(0.015)


def test_human_report_names_regime_thresholds_and_advice(capsys):
    assert main(["advise", "--eta", "0.01", "--mu", "0.9", "--k-ref", "4", "--curvature", "1"]) == 0
    out = capsys.readouterr().out
    for needle in (
        "underdamped",
        "damping ratio",
        "time to 90%",
        "critical k_ref = 10",
        "first unstable k_ref = 12",
        "Recommendation",
        "largest stable k_ref at this eta is 11",
    ):
        assert needle in out


def test_plain_advise_says_k_is_assumed_with_the_measured_factor(capsys):
    """Without a log K is a what-if: the text opens with the caveat and the JSON carries it beside the
    model's numbers, which do not change (the same as grpo_core.model.advice.advise)."""
    args = ("--eta", "5e-6", "--mu", "0.9", "--k-ref", "4", "--lag", "refresh", "--momentum", "ema",
            "--curvature", "2e4")
    d = _run_json(capsys, *args)
    model = advise(5e-6, 0.9, 4, 2e4, lag="refresh", momentum="ema").as_dict()
    assert set(d) == set(model) | {"domain", "caveat"}
    assert {k: d[k] for k in model} == model
    assert d["domain"] == "assumed_curvature" and d["caveat"] == curvature.ASSUMED_K_CAVEAT
    assert "K is assumed, not measured" in d["caveat"] and "119-169x too permissive" in d["caveat"]
    assert main(["advise", *args]) == 0
    out = capsys.readouterr().out
    head = out.split("\neta=")[0]  # the caveat, wrapped, above the model's report
    assert " ".join(head.split()) == curvature.ASSUMED_K_CAVEAT and max(map(len, head.splitlines())) <= 100
    assert "exact per-step growth factor = 0.9569  ->  stable" in out  # the what-if's own numbers stay


def test_case_08_each_bad_value_is_one_line_and_exit_2(case):
    c = case("08-bad-hyperparameters")
    for row in c["input"]:
        args = ["advise"]
        for key, flag in (
            ("eta", "--eta"),
            ("mu", "--mu"),
            ("k_ref", "--k-ref"),
            ("curvature", "--curvature"),
        ):
            args += [flag, str(row[key])]
        proc = subprocess.run(
            [sys.executable, "-m", "grpo_dynamics.cli", *args], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode != 0 and proc.returncode == 2
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        assert f"`{row['bad']}`" in lines[0]


@pytest.mark.parametrize("args,name", [
    (["--lag", "stale"], "lag"), (["--momentum", "adam"], "momentum"), (["--beta", "-1"], "beta"),
    (["--kl-curvature", "0"], "kl_curvature"),
])
def test_other_bad_options(capsys, args, name):
    code = main(["advise", "--eta", "0.01", "--mu", "0.5", "--k-ref", "2", "--curvature", "1", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"`{name}`" in err


@pytest.mark.parametrize("args, fragment", [
    (["--k-ref", "1000000000"], "`k_ref` must be an integer in [1, 1024]"),  # was a 7 EiB allocation
    (["--k-ref", "1025"], "`k_ref` must be an integer in [1, 1024]"),
    (["--eta", "1e300", "--curvature", "1e300"], "`eta` * (`curvature`"),  # a = eta K overflows
    (["--eta", "1e-300", "--curvature", "1e-300"], "`eta` * (`curvature`"),  # a = eta K underflows to 0
])
def test_extreme_values_are_refused_in_one_line(capsys, args, fragment):
    base = {"--eta": "1e-6", "--mu": "0.9", "--k-ref": "4", "--curvature": "2e4"}
    base.update(dict(zip(args[::2], args[1::2])))
    assert main(["advise", *[x for kv in base.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1


def test_extreme_but_valid_values_are_reported_readably(capsys):
    # a huge eta: the damping ratio is computed without overflowing (it was printed as -0)
    d = _run_json(capsys, "--eta", "1e300", "--mu", "0.9", "--k-ref", "4", "--curvature", "2e4")
    a = 2e304
    mass, damping = (1 + 0.9 + a * 16) / 2, 1 - 0.9 - a * 4
    assert d["damping_ratio"] == pytest.approx(damping / (2 * math.sqrt(mass) * math.sqrt(a)))
    assert d["damping_ratio"] == pytest.approx(-1 / math.sqrt(2), rel=1e-6)
    # the report echoes the user's values with their digits, writes huge times compactly, a growth
    # factor next to 1 with its distance to 1, and a stable recurrence past the simulated horizon
    # is not called "no plateau"
    assert main(["advise", "--eta", "1e-300", "--mu", "0.999999", "--k-ref", "4", "--curvature", "2e4"]) == 0
    out = capsys.readouterr().out
    assert "mu=0.999999 " in out
    assert "1.151e+290 steps (closed form)" in out and "more than 10,000,000 steps (exact recurrence)" in out
    assert max(len(line) for line in out.splitlines()) < 200
    assert main(["advise", "--eta", "1e-6", "--mu", "0.9", "--k-ref", "100000", "--curvature", "2e4",
                 "--lag", "refresh"]) == 0
    out = capsys.readouterr().out
    assert "growth factor = 1 + " in out and "by a factor 1 + " in out


def test_help_shows_percent_signs_once(capsys):
    with pytest.raises(SystemExit):
        main(["advise", "--help"])
    out = capsys.readouterr().out
    assert "90% of the reward plateau" in out.replace("\n", " ") and "%%" not in out


def _run(capsys, *args):
    code = main(["advise", *args])
    return code, capsys.readouterr().out


def test_k_ref_beyond_the_search_limit_is_not_called_never_unstable(capsys):
    # mu = 0, a = 1e-12: the exact first unstable k_ref is about pi / (2a) = 1.6e12, past the 2**40
    # search; the report must not say "none"/"any" as if no k_ref were unstable
    code, out = _run(capsys, "--eta", "1e-12", "--mu", "0", "--k-ref", "4", "--curvature", "1")
    assert code == 0
    assert "first unstable k_ref = none up to 1.1e+12 (the search limit" in out
    assert "largest stable k_ref at this eta is beyond 1.1e+12" in out and " is any" not in out
    # below the limit: the exact integer, 4 digits once it is huge (the threshold's own precision)
    code, out = _run(capsys, "--eta", "1e-12", "--mu", "0.9", "--k-ref", "4", "--curvature", "1")
    k = stability.critical_value("k_ref", eta=1e-12, mu=0.9, curvature=1.0)
    assert k == pytest.approx(0.1 * math.pi / 2 / 1e-12, rel=1e-5)  # (1 - mu) pi / (2a) asymptotically
    assert (
        f"first unstable k_ref = {k:.4g}" in out
        and f"largest stable k_ref at this eta is {k - 1:.4g}." in out
    )
    code, out = _run(capsys, "--eta", "0.01", "--mu", "0.9", "--k-ref", "4", "--curvature", "1")
    k = int(stability.critical_value("k_ref", eta=0.01, mu=0.9, curvature=1.0))
    assert f"first unstable k_ref = {k}\n" in out and f"largest stable k_ref at this eta is {k - 1}." in out


@pytest.mark.parametrize(
    "args",
    [
        ("--eta", "0.01", "--mu", "0.99", "--k-ref", "1"),  # 1 - mu - a is 8.7e-18, not 0, in floating point
        ("--eta", "0.01", "--mu", "0.98", "--k-ref", "2"),
        ("--eta", "0.001", "--mu", "0.999", "--k-ref", "1"),
        ("--eta", "0.1", "--mu", "0.95", "--k-ref", "2", "--lag", "refresh"),
    ],
)
def test_settings_on_the_continuous_threshold_are_reported_not_crashed(capsys, args):
    d = _run_json(capsys, *args, "--curvature", "1")
    assert d["damping"] == 0.0 and d["damping_ratio"] == 0.0  # the residue snapped to the threshold
    assert d["settling_time"] is None  # never (JSON null for inf)
    assert main(["advise", *args, "--curvature", "1"]) == 0
    out = capsys.readouterr().out
    assert "settles within 10% after never" in out
    if abs(d["spectral_radius"] - 1) < 1e-9:  # also on the exact threshold (d = 1: a* = 1 - mu)
        assert "on the threshold (to rounding)" in out


# --- advise --from-log: the curvature read off the run (grpo_core.runs.curvature) ---------------

def _from_log_json(capsys, *args):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["advise", "--from-log", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_from_log_on_every_committed_real_run(capsys):
    from grpo_core.runs import datasets

    for rid in datasets.real_runs():
        r = datasets.real_run(rid)
        d = _from_log_json(capsys, str(r.path), *(("--run", r.run) if r.run else ()))
        assert d["settings"]["source"] == "meta.json"
        imp = d["implied"]
        assert imp["conventions"]["momentum"] == "ema" and imp["conventions"]["mu"] == 0.9
        # a time scale, its shape and the sentence saying why there is no verdict; no threshold at all
        assert {"advice", "margin", "stable", "stable_over_interval", "fastest_monotone_eta"}.isdisjoint(d)
        assert d["no_stability_verdict"] == curvature.NO_STABILITY_VERDICT
        if imp["ok"]:
            assert 0 < imp["curvature_low"] < imp["curvature"] < imp["curvature_high"]
            assert imp["a"] == pytest.approx(imp["curvature"] * imp["eta"], rel=1e-12)
            assert d["regime"] in ("overdamped", "critically_damped", "underdamped")
        else:
            assert imp["reason"] and d["regime"] is None and d["regime_text"] is None


def test_from_log_report_names_conventions_time_scale_regime_and_no_verdict(capsys):
    from grpo_core.runs import datasets

    r = datasets.real_run("04")
    assert main(["advise", "--from-log", str(r.path)]) == 0
    out = capsys.readouterr().out
    assert "settings from meta.json" in out
    assert "EMA momentum mu = beta1 = 0.9 (TRL default)" in out and "K / sqrt(v)" in out
    assert "cumulative-learning-rate clock" in out
    assert re.search(r"reward time scale: eta\*K = [0-9.e-]+ per step \[[0-9.e-]+, [0-9.e-]+\], K = ", out)
    assert "Regime of the fitted curve at the run's eta = 9.96e-06: overdamped" in out
    assert out.rstrip().splitlines()[-1] == curvature.NO_STABILITY_VERDICT
    for gone in ("margin", "Stability", "stable by", "UNSTABLE", "largest stable", "Fastest", "critical damping"):
        assert gone not in out


def test_from_log_says_when_the_reward_fell_and_the_relaxation_does_not_describe_it(capsys):
    """Real run 36 (Unsloth Gemma-4 E2B sudoku) rose to 21.9 at steps 13-18 and fell to about 9: diagnose
    calls it unlearned, while a relaxation is fitted to it. The report keeps the time scale and says it does
    not explain the fall; a run that levelled off (run 04) gets no such line."""
    from grpo_core.runs import datasets

    r = datasets.real_run("36")
    d = _from_log_json(capsys, str(r.path))
    assert d["caveat"].startswith("the reward is not a relaxation to a plateau (the reward fell from 12.6 to 8.42")
    assert d["caveat"].endswith("the time scale and regime are those of a relaxation fitted to it and do not "
                                "explain the fall")
    assert d["implied"]["ok"] and "margin" not in d  # the time scale is still there, with the caveat
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["advise", "--from-log", str(r.path)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("Caveat: the reward is not a relaxation") and last.endswith("do not explain the fall")
    assert _from_log_json(capsys, str(datasets.real_run("04").path))["caveat"] is None


def test_from_log_regime_carries_the_interval_of_zeta_and_is_undetermined_when_it_spans_1(capsys):
    """Real run 30 (Unsloth DeepSeek-R1-Qwen3-8B): eta*K [0.011, 0.071] puts zeta on both sides of 1, so the
    regime is undetermined (it printed "underdamped (zeta = 0.965)" and, in JSON, "the reward will overshoot
    the plateau and ring"). Real run 22: the interval is narrow and wholly overdamped."""
    from grpo_core.runs import datasets

    for rid, determined in (("30", False), ("22", True)):
        r = datasets.real_run(rid)
        d = _from_log_json(capsys, str(r.path), *(("--run", r.run) if r.run else ()))
        imp, c = d["implied"], d["implied"]["conventions"]
        ends = [advise(imp["eta"], c["mu"], c["k_ref"], k, 0.0, lag=c["lag"], momentum=c["momentum"]).damping_ratio
                for k in (imp["curvature_high"], imp["curvature_low"])]
        assert (d["damping_ratio_low"], d["damping_ratio_high"]) == pytest.approx(ends)
        assert d["damping_ratio_low"] < d["damping_ratio"] < d["damping_ratio_high"]
        assert d["regime_determined"] is determined
        assert d["regime_text"].startswith("undetermined") is not determined
        assert main(["advise", "--from-log", str(r.path)]) == 0
        out = capsys.readouterr().out
        if determined:
            assert d["damping_ratio_low"] > 1
            assert "Regime of the fitted curve at the run's eta = 9.96e-06: overdamped (zeta = 1.61 [" in out
        else:
            assert d["damping_ratio_low"] < 1 < d["damping_ratio_high"]
            assert ("Regime of the fitted curve at the run's eta = 5e-06: undetermined (zeta = 0.965 [0.611, 1.53]"
                    in out)


@pytest.mark.parametrize("name", ["qwen2.5-3b-instruct_gsm8k_unsloth.csv", "gemma3-1b-it_gsm8k_unsloth.csv"])
def test_from_log_on_the_real_logs(capsys, name):
    from grpo_core.runs.datasets import real_log_path

    d = _from_log_json(capsys, str(real_log_path(name)))
    assert d["settings"]["source"] == "TRL defaults" and "no learning rate" in d["implied"]["reason"]
    d = _from_log_json(capsys, str(real_log_path(name)), "--eta", "5e-6")
    assert d["implied"]["ok"] or d["implied"]["reason"].startswith(("flat run", "the plateau lies beyond"))


def test_from_log_with_a_trl_config_uses_its_optimizer_and_reuse(capsys, tmp_path):
    """SGD + heavy ball 0.5, a generation reused for 2 optimizer steps: a curve made by that model."""
    cfg = {"optim": "sgd", "optim_args": "momentum=0.5", "num_iterations": 2, "learning_rate": 1e-3}
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    steps = np.arange(1, 301)
    e, prev, a, mu = [0.6], 0.6, 1e-3 * 20.0, 0.5
    for i in range(steps.size):  # refresh lag over k_ref = 2
        cur = e[-1]
        e.append(cur + mu * (cur - prev) - a * e[i - i % 2])
        prev = cur
    y = 0.8 - np.array(e[1:]) + np.random.default_rng(0).normal(0, 0.01, steps.size)
    log = tmp_path / "run.csv"
    log.write_text("step,reward,learning_rate\n" + "".join(f"{s},{v},0.001\n" for s, v in zip(steps, y)))
    d = _from_log_json(capsys, str(log), "--config", str(tmp_path / "cfg.json"))
    conv = d["implied"]["conventions"]
    assert (conv["momentum"], conv["mu"], conv["lag"], conv["k_ref"]) == ("heavy_ball", 0.5, "refresh", 2)
    assert d["implied"]["curvature"] == pytest.approx(20.0, rel=0.03)
    assert d["regime"] == "overdamped" and d["regime_determined"] is True


def test_plain_advise_still_needs_its_values_and_from_log_refuses_a_curvature(capsys):
    assert main(["advise", "--eta", "0.01", "--mu", "0.9", "--k-ref", "4"]) == 2
    assert "`--curvature` is required (or read the run from its log with --from-log LOG)" in capsys.readouterr().err
    from grpo_core.runs import datasets

    path = str(datasets.real_run("04").path)
    assert main(["advise", "--from-log", path, "--curvature", "1"]) == 2
    assert "exclude each other" in capsys.readouterr().err


def test_on_the_exact_threshold_the_first_unstable_k_ref_is_the_next_one(capsys):
    # eta K at the exact critical value of mu = 0.9, k_ref = 102: the growth factor is 1 to rounding, so
    # k_ref 102 neither decays nor grows and the first strictly unstable k_ref is 103 (was printed as 102)
    a = float(stability.critical_a_exact(0.9, 102, "constant"))
    assert 0.0014220 < a < 0.0014221
    d = _run_json(capsys, "--eta", repr(a), "--mu", "0.9", "--k-ref", "102", "--curvature", "1")
    assert d["on_threshold"] is True and d["critical_k_ref_exact"] == 103
    assert abs(d["spectral_radius"] - 1) < 1e-12
    code, out = _run(capsys, "--eta", repr(a), "--mu", "0.9", "--k-ref", "102", "--curvature", "1")
    assert code == 0
    assert "first unstable k_ref = 103 (102 is on the threshold)" in out
    assert "k_ref to 101 or less" in out and "on the threshold (to rounding)" in out
    # one step below the edge is strictly stable and is not flagged
    d = _run_json(capsys, "--eta", repr(a * (1 - 1e-6)), "--mu", "0.9", "--k-ref", "102", "--curvature", "1")
    assert d["on_threshold"] is False and d["stable_exact"] is True and d["critical_k_ref_exact"] == 103


def test_from_log_time_to_90_says_which_model_clock_and_start_real_runs_18_28_22(capsys):
    """advise's time_to_90 (457 steps on real run 18) read as if it were fit's t90 (46.6 for the best law,
    logistic): it is the oscillator at the run's conventions, whose only slow start is the momentum's, to
    its own plateau. One computation (the laws' time to 90%) gives both, and the text says which."""
    import warnings

    from grpo_core.laws import fit_all
    from grpo_core.runs import datasets, logs

    for run_id, t90, lo, hi, last in (("18", 457.2, 7.557, 46510.0, 50), ("28", 981.6, 793.6, 1214.0, 500)):
        path = str(datasets.real_run(run_id).path)
        d = _from_log_json(capsys, path)
        ic = d["implied"]
        assert ic["clock"] == "steps" and ic["last_step"] == last and ic["t90_step"] == ic["t90"]
        assert (ic["t90"], ic["t90_low"], ic["t90_high"]) == pytest.approx((t90, lo, hi), rel=2e-3)
        c = ic["conventions"]
        adv = advise(ic["eta"], c["mu"], c["k_ref"], ic["curvature"], 0.0, lag=c["lag"], momentum=c["momentum"])
        assert adv.time_to_90 == pytest.approx(ic["t90"], rel=1e-6)  # the model's time to 90% at that K
        assert d["time_to_90_note"].startswith(f"time to 90% of this fit's plateau: {t90:.4g} [")
        assert main(["advise", "--from-log", path]) == 0
        out = capsys.readouterr().out
        assert (f"steps from step 0, beyond the log's last step ({last}): an extrapolation. The fit is the "
                "oscillator at the run's conventions (its slow start is the momentum's, M/C = 9.5 steps)") in out
        assert "`fit`'s t90 column is each free law's own (its own slow start and plateau, in logged steps)" in out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, y = logs.read_log(path).series("reward")
        free = fit_all(t.astype(float), y).results
        assert free["logistic"].t90 < t90 / 3.5  # 46.6 vs 457, 265 vs 982: another model, not a misprint
    # run 18's plateau is not fixed by its curve (R_inf 4.2 +- 11 on a reward in [0.06, 0.87]): said so
    assert "its plateau R_inf = 4.196 +- 11, which the curve does not fix" in _advise_text(capsys, "18")
    # on the learning-rate clock the time is in equivalent steps, and the logged step is given (real run 22)
    d = _from_log_json(capsys, str(datasets.real_run("22").path))
    assert d["implied"]["t90"] == pytest.approx(214.7, rel=2e-3)
    assert d["implied"]["t90_step"] == pytest.approx(243.4, rel=2e-3)
    assert "time to 90% of this fit's plateau: 214.7 [191.2, 240.9] equivalent steps (logged step 243.4) from step 0." \
        in _advise_text(capsys, "22")


def _advise_text(capsys, run_id):
    import warnings

    from grpo_core.runs import datasets

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["advise", "--from-log", str(datasets.real_run(run_id).path)]) == 0
    return capsys.readouterr().out


def test_from_log_consistency_compares_tau_only_over_its_interval_real_runs_18_28_30(capsys):
    """Real run 18's free three-phase tau sits at its bound (200 steps, no interval) and was printed as 'the
    slow start is longer than momentum explains'; an undetermined tau is said to be undetermined."""
    out = _advise_text(capsys, "18")
    assert ("consistency: free three-phase fit tau = 200 steps is undetermined (tau is on a bound or not fixed by "
            "the curve: no interval), so its slow start is not compared with the momentum's M/C = 9.5 steps") in out
    assert "longer than momentum explains" not in out
    # run 28: the whole interval [36.9, 4.01e4] lies above 3 x 9.5 steps, so the comparison holds
    assert ("free three-phase fit tau = 1.22e+03 [36.9, 4.01e+04] steps (90%) vs the momentum's M/C = 9.5 steps "
            "(the slow start is longer than momentum explains, over the whole interval)") in _advise_text(capsys, "28")
    # run 30: [0.715, 394] reaches both sides of 28.5 steps
    assert ("tau = 16.8 [0.715, 394] steps (90%) vs the momentum's M/C = 9.5 steps (undetermined: the interval "
            "reaches both sides of 3x M/C") in _advise_text(capsys, "30")
