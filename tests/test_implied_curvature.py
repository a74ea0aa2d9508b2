"""The implied curvature (grpo_core.runs.curvature) and a run's settings (grpo_core.runs.settings).

Synthetic curves come from the exact discrete recurrence of the oscillator model with a known K and
a warm-up + cosine schedule; the real runs are the committed ones (grpo_core/data/real_runs).
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

from grpo_core.errors import DataError, ParameterError
from grpo_core.laws.clock import learning_rate_clock
from grpo_core.model import oscillator
from grpo_core.runs import curvature, datasets, logs, settings

T = 400
STEPS = np.arange(1, T + 1)
ETA, K_TRUE = 1e-5, 1500.0


def _schedule() -> np.ndarray:
    """40 warm-up steps, then a cosine decay to 20% of the peak."""
    decay = np.where(STEPS > 40, 0.2 + 0.8 * 0.5 * (1 + np.cos(np.pi * (STEPS - 40) / (T - 40))), 1.0)
    return ETA * np.minimum(1.0, STEPS / 40) * decay


def _simulate(k: float, lr: np.ndarray, conv, r0: float = 0.2, r_inf: float = 0.8) -> np.ndarray:
    """Reward after each step of e[k+1] = e[k] + mu (e[k] - e[k-1]) - g_k e[k - d_k] (refresh lag)."""
    e = np.empty(lr.size + 1)
    e[0] = prev = r_inf - r0
    scale = 1.0 if conv.momentum == "heavy_ball" else 1.0 - conv.mu
    for i in range(lr.size):
        cur = e[i]
        e[i + 1] = cur + conv.mu * (cur - prev) - scale * lr[i] * k * e[i - i % conv.k_ref]
        prev = cur
    return r_inf - e[1:]


CONVENTIONS = {
    "adam-on-policy": settings.RunSettings(),
    "sgd-momentum-0.5": settings.RunSettings(optimizer="sgd", sgd_momentum=0.5),
    "adam-k_ref-4": settings.RunSettings(k_ref=4),
    "sgd-k_ref-4": settings.RunSettings(optimizer="sgd", k_ref=4),
}


@pytest.mark.parametrize("name", list(CONVENTIONS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_known_curvature_is_recovered_through_a_warm_up_schedule(name, seed):
    conv = CONVENTIONS[name].conventions()
    lr = _schedule()
    y = _simulate(K_TRUE, lr, conv) + np.random.default_rng(seed).normal(0.0, 0.02, T)
    ic = curvature.implied_curvature(STEPS, y, conv, lr_steps=STEPS, lr_values=lr)
    assert ic.ok and ic.clock == "learning_rate" and ic.eta == pytest.approx(ETA)
    assert ic.curvature == pytest.approx(K_TRUE, rel=0.03)
    assert ic.curvature_low < K_TRUE < ic.curvature_high
    assert ic.a == pytest.approx(ETA * ic.curvature) and ic.a_low < ic.a < ic.a_high


def test_step_clock_misreads_a_schedule_that_the_lr_clock_reads():
    """Fitting the same curve in steps (ignoring the schedule) is off by far more than the interval."""
    conv = CONVENTIONS["adam-on-policy"].conventions()
    lr = _schedule()
    y = _simulate(K_TRUE, lr, conv) + np.random.default_rng(0).normal(0.0, 0.02, T)
    in_steps = curvature.implied_curvature(STEPS, y, conv, eta=ETA)
    assert in_steps.ok and in_steps.clock == "steps"
    assert not in_steps.curvature_low < K_TRUE < in_steps.curvature_high


def test_bootstrap_interval_agrees_with_the_delta_interval():
    conv = CONVENTIONS["adam-on-policy"].conventions()
    y = _simulate(K_TRUE, np.full(T, ETA), conv) + np.random.default_rng(3).normal(0.0, 0.02, T)
    delta = curvature.implied_curvature(STEPS, y, conv, eta=ETA)
    boot = curvature.implied_curvature(STEPS, y, conv, eta=ETA, method="bootstrap", n_boot=60, seed=1)
    assert boot.a == delta.a and boot.interval_method == "bootstrap"
    assert boot.a_low < K_TRUE * ETA < boot.a_high
    assert (boot.a_high - boot.a_low) == pytest.approx(delta.a_high - delta.a_low, rel=0.5)


@pytest.mark.parametrize("name", list(CONVENTIONS))
def test_gain_from_rate_inverts_the_models_rate(name):
    """k = K_eff / C of the model's coefficients maps back to a = eta K exactly."""
    conv = CONVENTIONS[name].conventions()
    for a in (1e-4, 0.01, 0.05):
        c = oscillator.coefficients(1.0, conv.mu, conv.k_ref, a, lag=conv.lag, momentum=conv.momentum)
        assert float(curvature.gain_from_rate(c.stiffness / c.damping, conv)) == pytest.approx(a, rel=1e-12)


def test_a_flat_curve_has_no_time_scale():
    y = 0.5 + np.random.default_rng(0).normal(0.0, 0.05, T)
    ic = curvature.implied_curvature(STEPS, y, settings.RunSettings().conventions(), eta=1e-6)
    assert not ic.ok and ic.reason.startswith("flat run") and math.isnan(ic.curvature)
    out = curvature.advise_implied(ic)
    assert out.regime is None and out.regime_determined is None and math.isnan(out.damping_ratio)
    assert "No time scale" in out.summary() and out.summary().endswith(curvature.NO_STABILITY_VERDICT)


def test_learning_rate_clock():
    clock, peak = learning_rate_clock([1, 3, 10], [1, 10], [2.0, 2.0])
    assert peak == 2.0 and clock.tolist() == [1.0, 3.0, 10.0]
    clock, peak = learning_rate_clock([2, 4], [1, 2, 3, 4], [1.0, 2.0, 4.0, 4.0])
    assert peak == 4.0 and clock.tolist() == pytest.approx([0.75, 2.75])
    with pytest.raises(DataError, match="no positive value"):
        learning_rate_clock([1, 2], [1, 2], [0.0, 0.0])
    with pytest.raises(ParameterError, match="eta"):
        curvature.implied_curvature(STEPS, STEPS * 1.0, settings.RunSettings().conventions())


# --- settings ---------------------------------------------------------------------------------


def test_trl_config_with_sgd_and_reuse(tmp_path):
    cfg = {"learning_rate": 3e-4, "optim": "sgd", "optim_args": "momentum=0.9", "num_iterations": 2,
           "steps_per_generation": 8, "gradient_accumulation_steps": 4, "beta": 0.04, "num_generations": 8}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    s = settings.read_settings(path)
    c = s.conventions()
    assert (s.optimizer, s.sgd_momentum, s.beta, s.group_size, s.learning_rate) == ("sgd", 0.9, 0.04, 8, 3e-4)
    assert (c.momentum, c.mu, c.lag, c.k_ref, c.preconditioned) == ("heavy_ball", 0.9, "refresh", 4, False)
    assert "importance ratio" in c.text()


def test_trl_adam_config_and_trainer_state(tmp_path):
    (tmp_path / "args.json").write_text(json.dumps({"optim": "adamw_8bit", "adam_beta1": 0.8, "adam_beta2": 0.99}))
    c = settings.read_settings(tmp_path / "args.json").conventions()
    assert (c.momentum, c.mu, c.k_ref, c.preconditioned) == ("ema", 0.8, 1, True)
    assert "K / sqrt(v)" in c.text()
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": [{"step": 1}], "max_steps": 10}))
    s = settings.read_settings(tmp_path / "trainer_state.json")
    assert s.optimizer == "adamw_torch" and "optimizer" in s.defaulted and s.conventions().mu == 0.9


def test_our_experiment_config_json_is_read(tmp_path):
    # grpo-dynamics experiment's own config.json: `lag` is the lag in steps (an integer, was refused as
    # "must be 'refresh' or 'constant'") and `momentum` is Adam's beta1 when the optimizer is AdamW
    base = {"optimizer": "adamw", "momentum": 0.8, "adam_beta2": 0.99, "learning_rate": 3e-4,
            "num_iterations": 4, "steps_per_generation": 1, "lag": 4, "group_size": 8, "beta": 0.0}
    (tmp_path / "config.json").write_text(json.dumps(base))
    s = settings.read_settings(tmp_path / "config.json")
    c = s.conventions()
    assert (s.beta1, s.num_iterations, s.lag, s.k_ref) == (0.8, 4, None, None)
    assert (c.momentum, c.mu, c.lag, c.k_ref, c.preconditioned) == ("ema", 0.8, "refresh", 4, True)
    (tmp_path / "config.json").write_text(json.dumps(base | {"optimizer": "sgd", "momentum": 0.9}))
    c = settings.read_settings(tmp_path / "config.json").conventions()
    assert (c.momentum, c.mu, c.preconditioned) == ("heavy_ball", 0.9, False)


def test_bad_settings_are_refused(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"adam_beta1": 1.2}))
    with pytest.raises(DataError, match="beta1"):
        settings.read_settings(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="JSON object"):
        settings.read_settings(tmp_path / "list.json")
    with pytest.raises(ParameterError, match="config"):
        settings.read_settings(tmp_path / "missing.json")


def test_real_run_meta_json_settings():
    s01 = settings.read_settings(datasets.real_run("01").folder / "meta.json")
    assert (s01.beta, s01.group_size, s01.learning_rate, s01.gradient_accumulation_steps) == (0.05, 4, 1e-4, 4)
    s18 = settings.read_settings(datasets.real_run("18").folder / "meta.json")
    assert s18.num_iterations == 1 and s18.group_size == 8  # GRPO's mu = 1 is num_iterations
    s13 = settings.read_settings(datasets.real_run("13").folder / "meta.json")
    assert s13.group_size == 8 and s13.beta == 0.001  # "8 (scripts/...; README says 4)"


# --- the committed real runs ------------------------------------------------------------------

#: Runs whose log gives a time scale (the others get a reason); pinned so that a change shows.
MEASURED = {"04", "07", "11", "18", "20", "22", "28", "30", "36"}
REASONS = ("flat run", "the plateau lies beyond the data", "the rate sits at the fit's")


def _real(run_id: str):
    r = datasets.real_run(run_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = logs.read_log(r.path, run=r.run)
    return r, curvature.advise_from_log(log, settings.read_settings(r.folder / "meta.json"))


@pytest.fixture(scope="module")
def real_advice():
    return {rid: _real(rid) for rid in datasets.real_runs()}


def test_every_real_run_gives_a_curvature_or_a_specific_reason(real_advice):
    measured = set()
    for rid, (run, out) in real_advice.items():
        ic = out.implied
        if ic.ok:
            measured.add(rid[:2])
            assert 0 < ic.a_low < ic.a < ic.a_high < math.inf
            assert 0 < ic.curvature_low < ic.curvature < ic.curvature_high < math.inf
            assert ic.conventions.preconditioned  # every committed run used an Adam-family optimizer
        else:
            assert ic.reason.startswith(REASONS), (rid, ic.reason)
        if run.meta["curve_shape"] == "flat":
            assert not ic.ok, rid  # a flat run has no time scale
    assert measured == MEASURED


def test_a_run_read_from_its_log_gets_its_curve_shape_and_no_threshold(real_advice):
    """The regime and zeta describe the fitted curve (the continuous model's coefficients at eta_ref and the
    implied K); nothing compares a with a threshold: a reward curve does not give one."""
    for rid, (_, out) in real_advice.items():
        names = {f.name for f in dataclasses.fields(out)}
        assert names == {"implied", "regime", "damping_ratio", "damping_ratio_low", "damping_ratio_high",
                         "regime_determined"}, rid
        if not out.implied.ok:
            continue
        ic, conv = out.implied, out.implied.conventions
        c = oscillator.coefficients(ic.eta, conv.mu, conv.k_ref, ic.curvature, 0.0, lag=conv.lag,
                                    momentum=conv.momentum)
        assert (out.regime, out.damping_ratio) == (c.regime, c.damping_ratio), rid
        assert out.damping_ratio_low <= out.damping_ratio <= out.damping_ratio_high, rid
        assert out.summary().endswith(curvature.NO_STABILITY_VERDICT)


def test_run_22_time_scale_in_the_model_units(real_advice):
    """Adam on-policy: a = eta_ref K per step (K the preconditioned K/sqrt(v)), overdamped over its interval."""
    _, out = real_advice["22-Caitlyn-Yin-easy-nostd"]
    assert out.implied.curvature == pytest.approx(1014, rel=0.02)
    assert out.implied.a == pytest.approx(out.implied.curvature * out.implied.eta, rel=1e-12)
    assert out.regime == "overdamped" and out.regime_determined and out.damping_ratio_low > 1


@pytest.mark.parametrize("name", datasets.list_real_logs())
def test_real_logs_need_a_learning_rate_or_give_a_reason(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = logs.read_log(datasets.real_log_path(name))
    bare = curvature.implied_curvature_from_log(log)
    assert not bare.ok and "no learning rate" in bare.reason
    ic = curvature.implied_curvature_from_log(log, settings.RunSettings(learning_rate=5e-6))
    assert ic.ok or ic.reason.startswith(REASONS)


def _reason(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = logs.read_log(path)
        st = kw.pop("st", None) or settings.settings_for_log(path)
        return curvature.implied_curvature_from_log(log, st, **kw)


def test_a_bound_plateau_says_whether_the_curve_bent_real_run_01_and_the_qwen_log():
    """'the curve is still in its linear part' was printed for real run 01, whose reward sits near 0.9 and
    collapses to 0 after step 130 (a cubic beats a line at p = 8.5e-9), and for the Qwen2.5-3B log. The
    reason now says what the evidence is: a bend the oscillator does not draw, or a bend not determined."""
    ic = _reason(datasets.real_run("01").path)
    assert not ic.ok and curvature.reason_kind(ic.reason) == "plateau_beyond_data"
    assert "linear part" not in ic.reason
    assert ic.reason.startswith("the plateau lies beyond the data (the fit's R_inf at its bound, -9.75): the curve "
                                "does bend (a cubic beats a straight line: F-test p = 8.5e-09), but not as the "
                                "oscillator at the run's conventions relaxes to a plateau (its R^2 0.344, a line's "
                                "0.342), so the rate is not determined")
    ic = _reason(datasets.real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth.csv"), eta=5e-6,
                 st=settings.RunSettings())
    assert curvature.reason_kind(ic.reason) == "plateau_beyond_data" and "linear part" not in ic.reason
    assert ("the curve's bend is not determined (a straight line fits as well: R^2 0.369 vs the fit's 0.369, and a "
            "cubic's bend over the line has F-test p = 0.13 > 0.01)") in ic.reason
    # a rate at its lower bound says the same evidence (real run 08: flat within the noise but not flat)
    ic = _reason(datasets.real_run("08").path)
    assert curvature.reason_kind(ic.reason) == "rate_at_bound"
    assert ("no relaxation is detected within the log (a straight line fits as well: R^2 0.065 vs the fit's 0.065, "
            "and a cubic's bend over the line has F-test p = 0.23 > 0.01)") in ic.reason


def test_bend_test_against_polynomials():
    t = np.arange(1.0, 101.0)
    noise = np.random.default_rng(0).normal(0, 0.05, t.size)
    p_line, r2 = curvature._bend_test(t, 0.3 + 0.004 * t + noise)
    assert p_line > 0.05 and 0.8 < r2 < 0.95
    p_s, _ = curvature._bend_test(t, 1.0 / (1.0 + np.exp(-(t - 50) / 10)) + noise)  # an S: cubic term
    assert p_s < 1e-10


def test_a_curve_longer_than_max_fit_points_is_fitted_to_bin_means(monkeypatch):
    from grpo_core.runs import curvature
    from grpo_core.runs.curvature import ModelLaw, implied_curvature
    from grpo_core.runs.settings import RunSettings

    conv = RunSettings().conventions()
    t = np.arange(1, 20_001)
    y = ModelLaw(conv)(t, [0.2, 0.8, 0.0005]) + np.random.default_rng(3).normal(0, 0.05, t.size)
    binned = implied_curvature(t, y, conv, eta=1e-6)
    monkeypatch.setattr(curvature, "MAX_FIT_POINTS", 10**9)
    whole = implied_curvature(t, y, conv, eta=1e-6)
    assert binned.ok and whole.ok and binned.n == 10_000 and whole.n == 20_000
    assert binned.notes == ("fitted to 10,000 bin means of 2 consecutive points (the curve has 20,000; at most "
                            "10,000 are fitted)",) and whole.notes == ()
    # each fit's rate lies within the other's interval: the binning moves it by less than its uncertainty
    assert whole.a_low < binned.a < whole.a_high and binned.a_low < whole.a < binned.a_high
    assert binned.last_step == whole.last_step == 20_000 and binned.curve_range == whole.curve_range
