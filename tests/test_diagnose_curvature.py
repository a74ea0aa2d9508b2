"""The reward's time scale in ``diagnose`` (text, JSON), in the HTML report and in the live callback:
eta*K and K with their interval and t90 on the real runs that have a time scale, the reason on the
others (the same function as ``fit`` and ``advise --from-log``: runs/curvature.py); never a stability
verdict."""

from __future__ import annotations

import io
import json
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from grpo_core.runs import curvature, datasets, logs, settings
from grpo_core.runs.callback import LIVE_FILE, DynamicsCallback
from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import from_records
from grpo_dynamics.cli import main

# run -> (K, lo, hi) of the training reward (Adam: the preconditioned K/sqrt(v)), 90% delta interval
FINITE = {
    "04": (821.2, 738.3, 913.4), "07": (999.8, 824.7, 1212.0), "11": (7637.0, 4051.0, 14400.0),
    "18": (979.9, 9.899, 97000.0), "20": (9169.0, 8302.0, 10130.0), "22": (1014.0, 910.2, 1131.0),
    "28": (463.2, 375.6, 571.3), "30": (5648.0, 2261.0, 14100.0), "36": (315.8, 1.887, 52850.0),
}
#: runs whose log has no learning_rate column: the step clock at meta.json's learning rate
STEP_CLOCK = {"18", "28", "30", "36"}
# run -> why there is no K
NONE = {
    "01": "plateau_beyond_data", "03": "flat", "08": "rate_at_bound", "10": "flat", "13": "plateau_beyond_data",
    "14": "flat", "16": "flat", "25": "plateau_beyond_data", "27": "flat", "32": "flat", "34": "flat",
}


def _log(run_id):
    r = datasets.real_run(run_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return logs.read_log(r.path, run=r.run)


@pytest.fixture(scope="module")
def implied():
    out = {}
    for run_id in datasets.real_runs():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[run_id[:2]] = diagnose(_log(run_id[:2]), forecast=False).implied_curvature
    return out


def test_every_real_run_is_in_one_of_the_two_tables():
    assert sorted(FINITE) + sorted(NONE) != [] and sorted({*FINITE, *NONE}) == [r[:2] for r in datasets.real_runs()]


@pytest.mark.parametrize("run_id", sorted(FINITE))
def test_a_run_with_a_time_scale_has_it_with_its_interval_and_no_verdict(implied, run_id):
    ic = implied[run_id]
    k, lo, hi = FINITE[run_id]
    assert (ic["K"], ic["lo"], ic["hi"]) == pytest.approx((k, lo, hi), rel=2e-3)
    assert ic["reason"] is None and ic["reason_kind"] is None and ic["preconditioned"] is True
    assert ic["settings_source"] == "meta.json"
    assert ic["clock"] == ("steps" if run_id in STEP_CLOCK else "learning_rate")
    # the time scale a = eta K per step, over the interval of K; t90 over the same interval
    assert (ic["a"], ic["a_lo"], ic["a_hi"]) == pytest.approx((k * ic["eta"], lo * ic["eta"], hi * ic["eta"]), rel=2e-3)
    assert ic["t90_lo"] < ic["t90"] < ic["t90_hi"]
    assert not {"margin", "margin_lo", "margin_hi", "stable", "stable_over_interval"} & ic.keys()
    assert f"eta*K = {ic['a']:.4g} per step [{ic['a_lo']:.4g}, {ic['a_hi']:.4g}]" in ic["line"]
    assert f"t90 = {ic['t90']:.4g} [{ic['t90_lo']:.4g}, {ic['t90_hi']:.4g}]" in ic["line"]
    assert "margin" not in ic["line"] and "stable" not in ic["line"]


@pytest.mark.parametrize("run_id", sorted(NONE))
def test_a_run_without_a_time_scale_says_why(implied, run_id):
    ic = implied[run_id]
    assert ic["reason_kind"] == NONE[run_id]
    assert ic["K"] is None and ic["a"] is None and ic["t90"] is None and "stable" not in ic
    assert ic["line"] == f"reward time scale: none ({ic['reason']})"


def test_diagnose_is_the_same_number_as_advise_from_log():
    r = datasets.real_run("28")
    adv = curvature.advise_from_log(_log("28"), settings.read_settings(r.folder / "meta.json"))
    ic = diagnose(_log("28"), forecast=False).implied_curvature
    assert ic["K"] == adv.implied.curvature and ic["a"] == adv.implied.a and ic["t90"] == adv.implied.t90


def test_no_learning_rate_and_opt_out():
    rng = np.random.default_rng(3)
    rows = [{"step": s, "reward": float(0.8 - 0.6 * math.exp(-s / 40) + rng.normal(0, 0.02)), "reward_std": 0.3,
             "grad_norm": 1.0, "entropy": 0.5} for s in range(1, 201)]
    log = from_records(rows, format="grpo_dynamics")
    ic = diagnose(log, forecast=False).implied_curvature
    assert ic["reason_kind"] == "no_learning_rate" and ic["K"] is None and ic["settings_source"] == "TRL defaults"
    # a constant learning rate from the settings gives the step clock, and a = 1/40 per step (mu = 0.9 EMA,
    # on-policy: the exponential's rate is a)
    ic = diagnose(log, forecast=False, settings=settings.RunSettings(learning_rate=1e-6)).implied_curvature
    assert ic["clock"] == "steps" and ic["a"] == pytest.approx(1 / 40, rel=0.15)
    assert ic["K"] == pytest.approx(ic["a"] / 1e-6, rel=1e-12)
    assert diagnose(log, forecast=False, curvature=False).implied_curvature is None


def test_cli_text_json_and_config(capsys, tmp_path):
    path = datasets.real_run("22").path
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("reward time scale: eta*K = 0.0101 per step [0.009066, 0.01126], K = 1014 (Adam: K/sqrt(v)) "
            "[910.2, 1131] (90%); t90 = 214.7 [191.2, 240.9] equivalent steps (logged step 243.4)") in out
    assert f"  {curvature.NO_STABILITY_VERDICT}\n" in out
    main(["diagnose", str(path), "--json"])
    text = capsys.readouterr().out
    d = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert d["implied_curvature"]["K"] == pytest.approx(1014.4, rel=1e-3)
    # a config with heavy-ball SGD changes the conventions and with them K
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"optim": "sgd", "optim_args": "momentum=0.9", "learning_rate": 1e-5}))
    main(["diagnose", str(path), "--json", "--config", str(cfg)])
    sgd = json.loads(capsys.readouterr().out)["implied_curvature"]
    assert sgd["preconditioned"] is False and sgd["settings_source"] == "config.json"
    assert "heavy-ball momentum mu = 0.9" in sgd["conventions"] and sgd["K"] != d["implied_curvature"]["K"]
    main(["diagnose", str(datasets.real_run("03").path), "--json", "--no-forecast"])
    flat = json.loads(capsys.readouterr().out)["implied_curvature"]
    assert flat["reason_kind"] == "flat" and flat["K"] is None
    main(["diagnose", str(path), "--json", "--no-curvature"])
    assert json.loads(capsys.readouterr().out)["implied_curvature"] is None


def test_report_shows_the_time_scale_or_the_reason():
    from grpo_dynamics.report import render_report

    log = _log("22")
    page = render_report(log, diagnose(log, n_boot=0))
    assert "<h2>Time scale of the reward</h2>" in page and "0.0101 [0.009066, 0.01126] (90%)" in page
    assert "1014 [910.2, 1131]" in page and "214.7 [191.2, 240.9] equivalent steps (logged step 243.4)" in page
    log = _log("03")
    page = render_report(log, diagnose(log, n_boot=0))
    assert "No time scale read from this log: flat run" in page


def test_callback_reads_the_settings_from_the_trainer_and_prints_k_once(tmp_path):
    conv = settings.RunSettings().conventions()
    t = np.arange(1, 301)
    y = curvature.ModelLaw(conv)(t, [0.2, 0.8, 0.02]) + np.random.default_rng(1).normal(0, 0.02, t.size)
    out = io.StringIO()
    cb = DynamicsCallback(tmp_path, every=50, min_steps=30, n_boot=0, stream=out)
    args = SimpleNamespace(num_generations=4, per_device_train_batch_size=16, world_size=1,
                           gradient_accumulation_steps=1, optim="adamw_torch", adam_beta1=0.9, learning_rate=1e-5)
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    cb.on_train_begin(args, state, None)
    for s in t:
        state.global_step = int(s)
        cb.on_log(args, state, None, logs={"loss": 0.0, "reward": float(y[s - 1]), "reward_std": 0.3,
                                           "learning_rate": 1e-5, "grad_norm": 1.0})
    cb.close()
    assert cb.settings.source == "trainer arguments" and cb.settings.optimizer == "adamw_torch"
    assert [c["step"] for c in cb.curvatures] == [50, 100, 150, 200, 250, 300]
    last = cb.curvatures[-1]
    assert last["lo"] < 2000 < last["hi"] and last["K"] == pytest.approx(2000, rel=0.02)  # a = 0.02, eta = 1e-5
    assert last["a"] == pytest.approx(0.02, rel=0.02) and last["a_lo"] < last["a"] < last["a_hi"]
    assert last["t90_lo"] < last["t90"] < last["t90_hi"] and last["clock_unit"] == "equivalent steps"
    assert not {"margin", "stable"} & last.keys()
    assert out.getvalue().count("reward time scale: eta*K =") == 1  # printed once, when first read
    assert out.getvalue().count(curvature.NO_STABILITY_VERDICT) == 1
    assert json.loads((tmp_path / LIVE_FILE).read_text())["curvatures"][-1]["K"] == pytest.approx(last["K"])


def test_diagnose_says_what_the_bound_plateau_of_real_run_01_means(implied):
    """diagnose printed 'the curve is still in its linear part' for real run 01, a reward near 0.9 that
    collapses to 0: the same reason as advise now says that the curve bends, not as the oscillator does."""
    ic = implied["01"]
    assert ic["reason_kind"] == "plateau_beyond_data" and "linear part" not in ic["line"]
    assert ("the curve does bend (a cubic beats a straight line: F-test p = 8.5e-09), but not as the oscillator at "
            "the run's conventions relaxes to a plateau (its R^2 0.344, a line's 0.342)") in ic["line"]
