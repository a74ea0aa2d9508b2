"""Reward-curve laws, fits, information criteria and forecasts (grpo_core.laws, widgets.laws_charts)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from grpo_core import DataError, ParameterError, laws
from grpo_core.laws import models as laws_models
from grpo_core.model import oscillator
from grpo_core.runs import datasets
from grpo_core.runs.datasets import real_log_path
from grpo_core.runs.logs import read_log

T300 = np.arange(1, 301, dtype=float)


def noisy(law: str, params, t=T300, sd=0.03, seed=0):
    return laws.LAWS[law](t, params) + np.random.default_rng(seed).normal(0.0, sd, t.size)


# --------------------------------------------------------------------------------------------
# The laws themselves
# --------------------------------------------------------------------------------------------


def test_three_phase_is_the_oscillator_step_response():
    # R = R_inf - (R_inf - R_0) * relaxation(t; M = tau, C = 1, K = k)   (oscillator chapter)
    t = np.linspace(0, 200, 401)
    for k, tau in [(0.05, 2.0), (0.05, 5.0), (0.05, 40.0)]:  # over-, critically, underdamped
        got = laws.LAWS["three_phase"](t, [0.2, 1.1, k, tau])
        ref = 1.1 - 0.9 * oscillator.relaxation(t, tau, 1.0, k)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
        # Scale invariance: only the ratios M/C and K/C matter.
        ref2 = 1.1 - 0.9 * oscillator.relaxation(t, 3 * tau, 3.0, 3 * k)
        np.testing.assert_allclose(got, ref2, atol=1e-12)


def test_three_phase_has_zero_initial_slope_and_nests_the_exponential():
    law = laws.LAWS["three_phase"]
    h = 1e-4
    slope = (law(np.array([h]), [0.0, 1.0, 0.05, 10.0])[0] - 0.0) / h
    assert abs(slope) < 1e-3  # slow start: R'(0) = 0 (the exponential has R'(0) = k = 0.05)
    t = np.linspace(0, 100, 51)
    np.testing.assert_allclose(
        law(t, [0.1, 0.9, 0.03, 0.0]), laws.LAWS["exponential"](t, [0.1, 0.9, 0.03]), atol=1e-14
    )


def test_onset_law_is_at_rest_before_t0():
    law = laws.LAWS["three_phase_onset"]
    t = np.array([0.0, 10.0, 19.9, 20.0, 30.0])
    r = law(t, [0.3, 1.0, 0.1, 2.0, 20.0])
    np.testing.assert_allclose(r[:4], 0.3, atol=1e-15)
    assert r[4] > 0.3 + 1e-3
    np.testing.assert_allclose(
        law(t + 20, [0.3, 1.0, 0.1, 2.0, 20.0]), laws.LAWS["three_phase"](t, [0.3, 1.0, 0.1, 2.0])
    )


def test_logistic_and_plateaus():
    law = laws.LAWS["logistic"]
    assert law(np.array([50.0]), [0.0, 2.0, 0.1, 50.0])[0] == pytest.approx(1.0)
    for name, p in [
        ("three_phase", [0, 1.3, 0.1, 1]),
        ("exponential", [0, 1.3, 0.1]),
        ("logistic", [0, 1.3, 0.1, 5]),
    ]:
        assert laws.LAWS[name].plateau(np.array(p, dtype=float)) == 1.3
        assert laws.LAWS[name](np.array([1e5]), p)[0] == pytest.approx(1.3)


def test_law_call_accepts_a_dict_and_validates():
    law = laws.LAWS["exponential"]
    assert law([0.0], {"r0": 0.5, "r_inf": 1.0, "k": 0.1})[0] == 0.5
    with pytest.raises(ParameterError, match="`params`"):
        law([0.0], [0.5, 1.0])
    with pytest.raises(ParameterError, match="lacks"):
        law([0.0], {"r0": 0.5})
    with pytest.raises(ParameterError, match="`t`"):
        law([np.nan], [0.5, 1.0, 0.1])
    with pytest.raises(ParameterError, match="`law`"):
        laws.get_law("gompertz")


def test_oscillator_quantities():
    q = laws.oscillator_quantities(0.05, 5.0)  # k tau = 1/4: critical damping
    assert q["damping_ratio"] == pytest.approx(1.0) and q["regime"] == "critically_damped"
    q = laws.oscillator_quantities(0.05, 40.0)
    zeta = 1 / (2 * math.sqrt(0.05 * 40.0))
    assert q["damping_ratio"] == pytest.approx(zeta) and q["regime"] == "underdamped"
    assert q["mass_over_stiffness"] == pytest.approx(40.0 / 0.05)
    assert q["stiffness_over_mass"] == pytest.approx(0.05 / 40.0)
    assert q["damping_over_mass"] == pytest.approx(1 / 40.0)
    # With M = tau, C = 1, K = k: zeta = C / (2 sqrt(M K)); period 2 pi / omega_d.
    omega_d = math.sqrt(0.05 / 40.0 - 1 / (4 * 40.0**2))
    assert q["period"] == pytest.approx(2 * math.pi / omega_d)
    # The response really oscillates with that period: successive maxima one period apart.
    t = np.linspace(0, 1500, 150001)
    r = oscillator.relaxation(t, 40.0, 1.0, 0.05)
    peaks = t[1:-1][(r[1:-1] < r[:-2]) & (r[1:-1] < r[2:])]
    assert peaks[1] - peaks[0] == pytest.approx(q["period"], rel=1e-3)
    q0 = laws.oscillator_quantities(0.05, 0.0)
    assert q0["regime"] == "overdamped" and math.isinf(q0["damping_ratio"])
    with pytest.raises(ParameterError, match="`k`"):
        laws.oscillator_quantities(0.0, 1.0)
    with pytest.raises(ParameterError, match="`tau`"):
        laws.oscillator_quantities(0.1, -1.0)


# --------------------------------------------------------------------------------------------
# Fits recover what generated the data
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("law", "truth"),
    [
        ("three_phase", [0.1, 1.2, 0.04, 15.0]),   # overdamped slow start (zeta = 0.65)
        ("three_phase", [0.0, 1.0, 0.08, 30.0]),   # underdamped, overshoots (zeta = 0.32)
        ("exponential", [0.2, 0.9, 0.02]),
        ("logistic", [0.05, 1.4, 0.06, 120.0]),
    ],
)
def test_fit_recovers_known_parameters(law, truth):
    y = noisy(law, truth, sd=0.03, seed=1)
    res = laws.fit_law(T300, y, law)
    assert res.success and not res.at_bound
    for name, true in zip(laws.LAWS[law].param_names, truth):
        se = res.stderr[name]
        assert 0 < se < abs(true) + 1, (name, se)
        assert abs(res.params[name] - true) <= 4 * se, (name, res.params[name], true, se)
    assert res.sigma == pytest.approx(0.03, rel=0.15)
    assert abs(res.residual_autocorr) < 0.2


def test_standard_errors_match_the_scatter_of_repeated_fits():
    # The Jacobian standard error of r_inf against the spread over 40 independent noisy curves.
    truth = [0.1, 1.2, 0.04, 15.0]
    fits = [
        laws.fit_law(T300, noisy("three_phase", truth, sd=0.05, seed=s), "three_phase") for s in range(40)
    ]
    spread = np.std([f.plateau for f in fits], ddof=1)
    mean_se = np.mean([f.plateau_stderr for f in fits])
    assert mean_se == pytest.approx(spread, rel=0.3)


def test_underdamped_fit_reports_the_regime():
    res = laws.fit_law(T300, noisy("three_phase", [0.0, 1.0, 0.08, 30.0], sd=0.02, seed=3), "three_phase")
    q = res.oscillator
    assert q["regime"] == "underdamped"
    assert q["damping_ratio"] == pytest.approx(1 / (2 * math.sqrt(0.08 * 30.0)), rel=0.1)
    assert laws.fit_law(T300, noisy("exponential", [0, 1, 0.02]), "exponential").oscillator is None


def test_long_curve_uses_the_subsample_search_and_still_recovers():
    t = np.arange(1, 20001, dtype=float)
    truth = [0.0, 1.0, 0.0004, 600.0]
    res = laws.fit_law(t, noisy("three_phase", truth, t=t, sd=0.05, seed=4), "three_phase")
    for name, true in zip(("r0", "r_inf", "k", "tau"), truth):
        assert abs(res.params[name] - true) <= 4 * res.stderr[name]


# --------------------------------------------------------------------------------------------
# Model comparison
# --------------------------------------------------------------------------------------------


def test_three_phase_beats_the_exponential_on_slow_start_data():
    # Critically damped slow start (k tau = 1/4): an inertial delay the exponential cannot make.
    y = noisy("three_phase", [0.0, 1.0, 0.04, 6.25], sd=0.04, seed=5)
    cmp = laws.fit_all(T300, y, laws=("three_phase", "exponential"))
    assert cmp.results["three_phase"].aic < cmp.results["exponential"].aic - 10
    assert cmp.best == "three_phase" and cmp.delta()["exponential"] > 10
    assert cmp.results["three_phase"].params["tau"] == pytest.approx(6.25, rel=0.5)


def test_three_phase_does_not_beat_the_exponential_on_exponential_data():
    # The three-phase law nests the exponential (tau = 0), so its extra parameter can only pay by
    # chance: AIC prefers it when the likelihood-ratio statistic exceeds 2, P(chi2_1 > 2) = 0.157.
    wins, taus = 0, []
    for seed in range(20):
        y = noisy("exponential", [0.0, 1.0, 0.02], sd=0.04, seed=seed)
        cmp = laws.fit_all(T300, y, laws=("three_phase", "exponential"))
        tp, ex = cmp.results["three_phase"], cmp.results["exponential"]
        assert tp.rss <= ex.rss * (1 + 1e-9)  # nested: never a worse fit
        wins += tp.aic < ex.aic
        taus.append(tp.params["tau"])
    assert wins <= 7  # expected ~3 of 20; 7 or more has probability < 0.02
    assert np.median(taus) < 3.0  # the fitted inertia stays near 0 (1/k = 50 steps)


def test_information_criteria_match_hand_computation():
    y = noisy("logistic", [0.0, 1.0, 0.05, 100.0], sd=0.05, seed=7)
    res = laws.fit_law(T300, y, "logistic")
    r = y - res.predict(T300)
    n, p = T300.size, 4
    rss = float(r @ r)
    assert res.rss == pytest.approx(rss)
    loglik = stats.norm.logpdf(r, scale=math.sqrt(rss / n)).sum()
    assert res.loglik == pytest.approx(loglik, rel=1e-12)
    assert res.aic == pytest.approx(2 * (p + 1) - 2 * loglik, rel=1e-12)
    assert res.bic == pytest.approx((p + 1) * math.log(n) - 2 * loglik, rel=1e-12)
    assert res.aicc == pytest.approx(res.aic + 2 * 5 * 6 / (n - 5 - 1), rel=1e-12)
    assert res.r2 == pytest.approx(1 - rss / np.sum((y - y.mean()) ** 2), rel=1e-12)
    assert res.sigma == pytest.approx(math.sqrt(rss / (n - p)))
    assert res.residual_autocorr == pytest.approx(
        np.corrcoef(r[:-1] - r.mean(), r[1:] - r.mean())[0, 1], abs=0.02
    )


def test_gaussian_information_criteria_edge_cases():
    ic = laws.gaussian_information_criteria(rss=0.0, n=10, n_params=2)
    assert all(math.isfinite(ic[k]) for k in ("aic", "bic", "aicc"))
    assert math.isinf(laws.gaussian_information_criteria(1.0, n=5, n_params=3)["aicc"])  # n <= q + 1
    with pytest.raises(ParameterError, match="`rss`"):
        laws.gaussian_information_criteria(-1.0, 10, 2)
    with pytest.raises(ParameterError, match="`n`"):
        laws.gaussian_information_criteria(1.0, 0, 2)


def test_best_by_each_criterion_and_json():
    y = noisy("three_phase", [0.0, 1.0, 0.04, 6.25], sd=0.04, seed=5)
    for crit in ("aic", "aicc", "bic"):
        cmp = laws.fit_all(T300, y, criterion=crit)
        assert cmp.best == min(cmp.results, key=lambda k: getattr(cmp.results[k], crit))
    out = json.loads(json.dumps(cmp.to_dict(), allow_nan=False))
    assert set(out["models"]) == {"three_phase", "exponential", "logistic"}
    for m in out["models"].values():
        assert {"r2", "aic", "bic", "plateau", "params", "stderr", "t90", "notes"} <= set(m)
    assert out["models"]["three_phase"]["oscillator"]["regime"] in (
        "overdamped",
        "critically_damped",
        "underdamped",
    )
    table = cmp.table()
    assert (
        list(table.index) == ["three_phase", "exponential", "logistic"]
        and table.loc[cmp.best, "delta_bic"] == 0
    )


def test_time_to_90_percent():
    res = laws.fit_law(T300, laws.LAWS["exponential"](T300, [0.0, 1.0, 0.02]), "exponential")
    assert res.t90 == pytest.approx(math.log(10) / 0.02, rel=1e-6)
    assert res.time_to_fraction(0.5) == pytest.approx(math.log(2) / 0.02, rel=1e-6)
    # Three-phase, critically damped: (1 + g t) exp(-g t) = 0.1 with g = 1 / (2 tau).
    law = laws.LAWS["three_phase"]
    t90 = laws_models._time_to_fraction(law, np.array([0.0, 1.0, 0.04, 6.25]), 0.9)
    g = 1 / 12.5
    assert (1 + g * t90) * math.exp(-g * t90) == pytest.approx(0.1, abs=1e-9)
    batch = laws_models._time_to_fraction_batch(
        law, np.array([[0.0, 1.0, 0.04, 6.25], [0.0, 1.0, 0.02, 0.0]]), 0.9, 300.0
    )
    np.testing.assert_allclose(batch, [t90, math.log(10) / 0.02], rtol=2e-3)
    with pytest.raises(ParameterError, match="`fraction`"):
        res.time_to_fraction(1.0)


# --------------------------------------------------------------------------------------------
# Helpers: smoothing and the noise reference
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 5, 20])
def test_rolling_mean_matches_pandas_centred_rolling(window):
    rng = np.random.default_rng(0)
    y = rng.normal(size=97)
    t = np.arange(97) + 1.0
    ts, ys = laws.rolling_mean(t, y, window)
    ref = pd.Series(y, index=t).rolling(window, center=True).mean().dropna()
    np.testing.assert_allclose(ts, ref.index.to_numpy())
    np.testing.assert_allclose(ys, ref.to_numpy(), atol=1e-12)
    with pytest.raises(ParameterError, match="`window`"):
        laws.rolling_mean(t, y, 98)


def test_noise_variance_and_reference():
    y = noisy("three_phase", [0.0, 1.0, 0.04, 6.25], sd=0.1, seed=2)
    assert laws.noise_variance(y) == pytest.approx(0.01, rel=0.2)
    cmp = laws.fit_all(T300, y)
    assert cmp.best_fit.r2 == pytest.approx(cmp.noise_r2_reference, abs=0.03)


# --------------------------------------------------------------------------------------------
# Forecasts
# --------------------------------------------------------------------------------------------


def test_forecast_from_the_first_part_of_a_synthetic_curve():
    y = noisy("three_phase", [0.0, 1.0, 0.03, 20.0], sd=0.03, seed=8)
    fc = laws.forecast(T300, y, law="three_phase", fraction=0.4, n_boot=60, seed=1)
    assert fc.fit.n == 120 and fc.t_fit_end == 120.0
    assert fc.band_method == "bootstrap" and fc.plateau_bootstrap == (fc.plateau_low, fc.plateau_high)
    assert fc.plateau_low < 1.0 < fc.plateau_high
    assert fc.plateau_high - fc.plateau_low < 0.3
    assert fc.actual_t.size == 180 and fc.tail == 50
    assert fc.actual_tail_mean == pytest.approx(float(np.mean(y[-50:])))
    assert fc.error == pytest.approx(fc.plateau - fc.actual_tail_mean)
    assert fc.t.shape == fc.curve.shape == fc.curve_low.shape == fc.curve_high.shape == (300,)
    assert np.all(fc.curve_low <= fc.curve + 1e-9) and np.all(fc.curve <= fc.curve_high + 1e-9)
    assert fc.t90_low <= fc.t90 <= fc.t90_high
    d = json.loads(json.dumps(fc.to_dict(), allow_nan=False))
    assert d["covered"] is True and d["n_fit"] == 120
    delta = laws.forecast(T300, y, law="three_phase", fraction=0.4, n_boot=0)
    assert delta.band_method == "delta" and delta.plateau_bootstrap is None
    assert (delta.plateau_low, delta.plateau_high) == delta.plateau_delta
    assert delta.plateau == fc.plateau


def test_forecast_best_law_and_horizon():
    y = noisy("logistic", [0.0, 1.0, 0.06, 80.0], sd=0.03, seed=9)
    fc = laws.forecast(T300, y, fraction=0.5, n_boot=0, horizon=600)
    assert fc.comparison is not None and fc.law == fc.comparison.best
    assert fc.t[-1] == 600 and fc.t.size > 300
    full = laws.forecast(T300, y, fraction=1.0, n_boot=0)
    assert full.actual_tail_mean is None and full.covered is None and full.error is None


def test_forecast_band_coverage_delta_method():
    # A small coverage check: 60 synthetic curves, 90% band; binomial sd 0.039.
    out = laws.forecast_coverage(
        "three_phase", [0.0, 1.0, 0.03, 20.0], T300, noise_std=0.05, reps=60, seed=100
    )
    assert out["band_method"] == "delta" and out["truth"] == 1.0
    assert 0.78 <= out["coverage"] <= 0.99, out


def test_forecast_band_coverage_bootstrap():
    # 60 curves x 60 bootstrap refits; nominal 0.9, binomial sd 0.039 (percentile bootstrap
    # bands run slightly narrow at this sample size: measured 0.86-0.91 over 100 curves).
    out = laws.forecast_coverage(
        "exponential", [0.0, 1.0, 0.01], T300, noise_std=0.05, reps=60, n_boot=60, seed=200
    )
    assert out["band_method"] == "bootstrap"
    assert 0.75 <= out["coverage"] <= 0.99, out


def test_forecast_sweep_columns():
    y = noisy("logistic", [0.0, 1.0, 0.06, 80.0], sd=0.03, seed=9)
    df = laws.forecast_sweep(T300, y, fractions=(0.5, 0.8), laws=("best", "logistic"), n_boot=0)
    assert list(df["fraction"]) == [0.5, 0.5, 0.8, 0.8]
    assert {"plateau", "low", "high", "actual", "covered", "fitted_law", "at_bound"} <= set(df.columns)
    assert df["covered"].all()


# --------------------------------------------------------------------------------------------
# Real runs
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qwen_reward():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = read_log(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    return log.series("reward")


def test_qwen_smoothed_reward_fits(qwen_reward):
    t, y = qwen_reward
    last50 = float(np.mean(y[-50:]))
    assert last50 == pytest.approx(1.437, abs=1e-3)
    ts, ys = laws.rolling_mean(t, y, 20)
    cmp = laws.fit_all(ts, ys)
    tp, lg = cmp.results["three_phase"], cmp.results["logistic"]
    # Measured: three-phase R^2 = 0.936, logistic 0.949 (best), exponential 0.913.
    assert tp.r2 >= 0.93
    assert lg.r2 >= 0.945 and cmp.best == "logistic"
    assert cmp.results["exponential"].r2 < tp.r2
    # The logistic plateau lands near the actual mean of the last 50 steps (1.51 vs 1.44); the
    # three-phase law prefers a barely damped arc (tau at its bound) whose centre line (~0.85) is
    # no plateau estimate, and says so.
    assert abs(lg.plateau - last50) < 0.15
    assert "tau" in tp.at_bound and any("barely damped" in n for n in tp.notes)
    assert tp.oscillator["damping_ratio"] < 0.1
    assert tp.residual_autocorr > 0.85  # smoothing correlates the residuals
    print(f"\nQwen smoothed: R^2 three-phase {tp.r2:.3f}, logistic {lg.r2:.3f}; plateau logistic "
          f"{lg.plateau:.3f}, three-phase {tp.plateau:.3f}; last-50 mean {last50:.3f}")


def test_qwen_raw_reward_fits_reach_the_noise_reference(qwen_reward):
    t, y = qwen_reward
    cmp = laws.fit_all(t, y)
    # Per-step rewards of one prompt x 8 completions are very noisy: every law's R^2 sits near
    # the reference 1 - noise variance / variance (about 0.36), measured R^2 0.37-0.38 (past it:
    # it is not a ceiling).
    for res in cmp.results.values():
        assert 0.34 <= res.r2 <= 0.40
        assert abs(res.residual_autocorr) < 0.1
    assert cmp.noise_r2_reference == pytest.approx(0.36, abs=0.02)
    assert cmp.best == "logistic"
    assert cmp.delta()["three_phase"] < 4  # the laws are close on the raw curve


def test_qwen_forecast_from_40_percent_is_honestly_uncertain(qwen_reward):
    t, y = qwen_reward
    fc = laws.forecast(t, y, law="three_phase", fraction=0.4, n_boot=0)
    assert fc.t_fit_end == 100 and fc.actual_tail_mean == pytest.approx(1.437, abs=1e-3)
    # From steps 1-100 the plateau is not determined: the fit runs to its bound and says so.
    assert fc.fit.notes and fc.plateau_high - fc.plateau_low > 10


def test_gemma_twelve_rows_fit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, y = read_log(real_log_path("gemma3-1b-it_gsm8k_unsloth")).series("reward")
    assert t.size == 12
    cmp = laws.fit_all(t, y, criterion="aicc")
    assert all(math.isfinite(r.aicc) for r in cmp.results.values())
    assert cmp.criterion == "aicc"


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def test_bad_inputs():
    t = np.arange(1.0, 11.0)
    y = np.linspace(0, 1, 10)
    with pytest.raises(DataError, match="at least 5 usable points"):
        laws.fit_law(t[:4], y[:4])
    with pytest.raises(DataError, match="constant"):
        laws.fit_all(t, np.full(10, 0.7))
    # magnitudes float64 cannot fit: a clear refusal (was an overflow and "`rss` must be finite", or a
    # curve at 1e-201 called constant)
    with pytest.raises(DataError, match="too large to fit"):
        laws.fit_all(t, y * 1e300)
    with pytest.raises(DataError, match="too small to fit"):
        laws.fit_all(t, (1 + y) * 1e-201)
    small = laws.fit_law(t, y * 1e-9, "exponential")  # small but fine: the same fit, scaled
    assert small.r2 == pytest.approx(laws.fit_law(t, y, "exponential").r2, abs=1e-6)
    with pytest.raises(ParameterError, match="`t` must be strictly increasing") as e:
        laws.fit_law(t[::-1], y)
    assert e.value.parameter == "t"
    with pytest.raises(ParameterError, match="`t` must be strictly increasing"):
        laws.fit_law(np.r_[t[:5], t[4:9]], y)
    with pytest.raises(ParameterError, match="`t` must be >= 0"):
        laws.fit_law(t - 5, y)
    with pytest.raises(ParameterError, match="same length") as e:
        laws.fit_all(t, y[:-1])
    assert e.value.parameter == "y"
    with pytest.raises(ParameterError, match="1-D"):
        laws.fit_law(t.reshape(2, 5), y.reshape(2, 5))
    with pytest.raises(ParameterError, match="`y`"):
        laws.fit_law(t, ["a"] * 10)
    with pytest.raises(ParameterError, match="`criterion`"):
        laws.fit_all(t, y, criterion="r2")
    with pytest.raises(ParameterError, match="`laws`"):
        laws.fit_all(t, y, laws=())
    with pytest.raises(ParameterError, match="`law`"):
        laws.fit_law(t, y, "power")
    with pytest.raises(ParameterError, match="`starts\\[0\\]` must have 3 values"):
        laws.fit_law(t, y, "exponential", starts=[[0.0, 1.0]])
    with pytest.raises(ParameterError, match="`starts\\[0\\]`"):
        laws.fit_law(t, y, "exponential", starts=[[0.0, np.nan, 0.1]])
    res = laws.fit_law(t, y, "exponential", starts=[[0.0, 1.0, 0.1]])
    assert res.r2 > 0.9


def test_non_finite_points_are_dropped_with_a_count():
    y = np.linspace(0, 1, 20) ** 2
    t = np.arange(1.0, 21.0)
    y_bad = y.copy()
    y_bad[[3, 7]] = np.nan
    y_bad[11] = np.inf
    with pytest.warns(UserWarning, match="dropped 3 of 20 point"):
        cmp = laws.fit_all(t, y_bad)
    assert cmp.n == 17 and cmp.dropped == 3
    with (
        pytest.warns(UserWarning, match="dropped 16 of 20"),
        pytest.raises(DataError, match="got 4 after dropping 16"),
    ):
        laws.fit_law(t, np.r_[y[:4], [np.nan] * 16])


def test_forecast_bad_inputs():
    y = noisy("exponential", [0, 1, 0.02])
    for kwargs, name in [
        ({"fraction": 0.0}, "fraction"),
        ({"fraction": 1.5}, "fraction"),
        ({"level": 1.0}, "level"),
        ({"n_boot": -1}, "n_boot"),
        ({"tail": 0}, "tail"),
        ({"criterion": "x"}, "criterion"),
        ({"horizon": 10.0}, "horizon"),
    ]:
        with pytest.raises(ParameterError, match=f"`{name}`"):
            laws.forecast(T300, y, **kwargs)
    with pytest.raises(DataError, match="fit window"):
        laws.forecast(T300[:20], y[:20], fraction=0.2)
    flat = np.r_[np.zeros(150), np.linspace(0, 1, 150)]
    with pytest.raises(DataError, match="constant over the fit window"):
        laws.forecast(T300, flat, fraction=0.4)
    with pytest.raises(ParameterError, match="`noise_std`"):
        laws.forecast_coverage("exponential", [0, 1, 0.1], T300, noise_std=0.0)


# --------------------------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------------------------


def test_charts_draw_the_results():
    from widgets import laws_charts

    y = noisy("three_phase", [0.0, 1.0, 0.03, 20.0], sd=0.03, seed=8)
    cmp = laws.fit_all(T300, y)
    spec = laws_charts.fits_chart(cmp).to_dict()
    assert len(spec["layer"]) == 2
    resid = laws_charts.residuals_chart(cmp).to_dict()
    assert "facet" in resid
    fc = laws.forecast(T300, y, law="three_phase", fraction=0.4, n_boot=0)
    fspec = laws_charts.forecast_chart(fc).to_dict()
    assert len(fspec["layer"]) == 9  # window, band, points, curve, plateau band/rule/label, actual rule/label
    full = laws.forecast(T300, y, law="three_phase", fraction=1.0, n_boot=0)
    assert len(laws_charts.forecast_chart(full).to_dict()["layer"]) == 7  # no continuation
    sweep = laws.forecast_sweep(T300, y, fractions=(0.4, 0.6), laws=("three_phase",), n_boot=0)
    assert len(laws_charts.forecast_sweep_chart(sweep).to_dict()["layer"]) in (3, 5)  # + clipped band ends, key
    with pytest.raises(ParameterError, match="`comparison`"):
        laws_charts.fits_chart(fc)
    with pytest.raises(ParameterError, match="`fc`"):
        laws_charts.forecast_chart(cmp)
    with pytest.raises(ParameterError, match="`sweep`"):
        laws_charts.forecast_sweep_chart(sweep.drop(columns=["actual"]))
    # a plateau far off the axis is drawn at the edge as a triangle, not as an ordinary point there
    import pandas as pd

    far = pd.DataFrame({"fraction": [0.4, 0.6, 0.8], "law": "logistic", "plateau": [30.0, 1.1, -9.0],
                        "low": [20.0, 1.0, -12.0], "high": [40.0, 1.2, -6.0], "actual": 1.0})
    fspec = laws_charts.forecast_sweep_chart(far).to_dict()
    rows = next(v for v in fspec["datasets"].values() if "where" in v[0])
    assert [r["where"] for r in rows] == ["off the axis, above", "on the axis", "off the axis, below"]
    lo, hi = fspec["layer"][2]["encoding"]["y"]["scale"]["domain"]
    assert [r["plateau_c"] for r in rows] == [hi, 1.1, lo] and rows[0]["plateau"] == 30.0
    assert fspec["layer"][2]["encoding"]["shape"]["scale"]["range"] == [
        "circle",
        "triangle-up",
        "triangle-down",
    ]


def test_notes_say_when_a_0_1_curve_is_forecast_outside_0_1():
    t = np.arange(1, 301)
    acc = np.clip(0.1 + 0.0032 * t + np.random.default_rng(0).normal(0, 0.02, t.size), 0, 1)
    fit = laws.fit_law(t, acc, "logistic")
    assert fit.plateau > 1 and "r_inf" not in fit.at_bound
    assert any("outside [0, 1]" in n for n in fit.notes)
    # the same shape on a reward scale that is not [0, 1]: nothing to say
    assert not any("outside [0, 1]" in n for n in laws.fit_law(t, 2.0 * acc, "logistic").notes)
    # a plateau inside [0, 1]
    sat = 0.1 + 0.8 / (1 + np.exp(-(t - 100) / 15)) + np.random.default_rng(1).normal(0, 0.02, t.size)
    assert not any("outside [0, 1]" in n for n in laws.fit_law(t, np.clip(sat, 0, 1), "logistic").notes)


def test_noise_reference_is_never_negative():
    t = np.arange(1, 201)
    alternating = (t % 2).astype(float)  # all noise: the difference-based estimate is 2 Var(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert laws.fit_all(t, alternating).noise_r2_reference == 0.0
    smooth = 1 - np.exp(-t / 40)
    assert laws.fit_all(t, smooth).noise_r2_reference > 0.99


@pytest.mark.parametrize("k, tau, ar, low", [(0.04, 10.0, 0.0, 0.82), (0.03, 30.0, 0.0, 0.82), (0.04, 10.0, 0.5, 0.78)])
def test_oscillator_interval_covers_the_truth_at_its_level(k, tau, ar, low):
    """90% intervals of zeta, M/C and K/C over 150 noisy three-phase curves (white noise, and AR(1)
    noise with rho = 0.5, which the variance inflation accounts for): coverage within about 2.5
    binomial standard errors (0.025) of 0.9."""
    law = laws_models.get_law("three_phase")
    t = np.arange(1, 301, dtype=float)
    y0 = law(t, np.array([0.2, 0.8, k, tau]))
    truth = {"damping_ratio": 1 / (2 * math.sqrt(k * tau)), "mass_over_damping": tau, "stiffness_over_damping": k}
    rng = np.random.default_rng(1)
    hits = dict.fromkeys(truth, 0)
    for _ in range(150):
        e = rng.normal(0, 0.05, t.size)
        for i in range(1, t.size):
            e[i] = ar * e[i - 1] + math.sqrt(1 - ar * ar) * e[i]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            iv = laws.fit_law(t, y0 + e, "three_phase").oscillator_interval(0.9)
        for name, value in truth.items():
            lo, hi = iv[name]
            assert lo < hi
            hits[name] += lo <= value <= hi
    for name, h in hits.items():
        assert low <= h / 150 <= 0.97, (name, h)


def test_oscillator_interval_is_withheld_where_the_curve_does_not_fix_it():
    log = read_log(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    t, y = log.series("reward")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = laws.fit_law(t.astype(float), y, "three_phase")
    assert "tau" in fit.at_bound  # the barely damped reading: tau on its upper bound
    iv = fit.oscillator_interval()
    assert all(math.isnan(lo) and math.isnan(hi) for lo, hi in iv.values())
    assert fit.to_dict()["oscillator_interval"]["damping_ratio"] == [None, None]
    assert laws.fit_law(t.astype(float), y, "logistic").oscillator_interval() is None
    with pytest.raises(ParameterError, match="level"):
        fit.oscillator_interval(1.0)
    # a tau so poorly fixed that its log-space interval overflows a float (real run 13): (0, inf), no error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = datasets.real_run("13")
        t13, y13 = read_log(r.path, run=r.run).series("reward")
        wide = laws.fit_law(t13.astype(float), y13, "three_phase").oscillator_interval()
    assert wide["mass_over_damping"][0] == 0.0 and wide["mass_over_damping"][1] == math.inf


# --------------------------------------------------------------------------------------------
# The preferred law (a plateau the curve determines) and the small-sample criterion
# --------------------------------------------------------------------------------------------


def _real_reward(run_id: str, collection: str = "real_runs"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, y = read_log(datasets.real_run(run_id, collection).path).series("reward")
    return t.astype(float), y


def test_preferred_skips_a_best_law_whose_plateau_is_at_its_bound():
    """Real run 03 (40 points, a 0/1 reward near its ceiling): the exponential is best by AIC with r_inf at its
    bound (3.75, ten ranges past the data), the three-phase plateau 2.03 has a standard error of 1.2e3; only
    the logistic's 0.957 +- 0.046 is fixed by the curve. `best` stays the exponential (the forecaster uses it)."""
    t, y = _real_reward("03")
    cmp = laws.fit_all(t, y)
    assert cmp.criterion == "aic" and cmp.best == "exponential"
    assert cmp.preferred == "logistic" and cmp.preferred_determined
    issues = {k: r.plateau_issue for k, r in cmp.results.items()}
    assert issues == {"three_phase": "its plateau's standard error exceeds the curve's range",
                      "exponential": "its r_inf is at its bound", "logistic": None}
    assert cmp.results["logistic"].plateau == pytest.approx(0.9572, abs=1e-3)
    d = cmp.to_dict()
    assert d["best"] == "exponential" and d["preferred"] == "logistic" and d["preferred_determined"] is True
    assert [m["plateau_determined"] for m in d["models"].values()] == [False, False, True]
    # real run 18: the exponential's r_inf sits at its bound too; the logistic is best and determined
    cmp18 = laws.fit_all(*_real_reward("18"))
    assert cmp18.results["exponential"].plateau_issue == "its r_inf is at its bound"
    assert cmp18.best == cmp18.preferred == "logistic"


def test_preferred_falls_back_to_best_with_a_flag_when_no_plateau_is_determined():
    """A straight ramp that never bends: every law's plateau is at its bound or wider than the curve."""
    t = np.arange(1, 61, dtype=float)
    y = 0.01 * t + np.random.default_rng(2).normal(0, 0.05, t.size)
    cmp = laws.fit_all(t, y)
    assert not any(r.plateau_determined for r in cmp.results.values())
    assert cmp.preferred == cmp.best == "exponential" and cmp.preferred_determined is False


def test_choose_criterion_is_burnham_and_andersons_rule():
    # n / K < 40 with K = parameters + the noise variance: 4-parameter laws switch at 200 points
    assert [laws.choose_criterion(n, 4) for n in (12, 40, 199, 200, 250)] == ["aicc"] * 3 + ["aic"] * 2
    assert laws.choose_criterion(79, 1) == "aicc" and laws.choose_criterion(80, 1) == "aic"
    with pytest.raises(ParameterError, match="`n`"):
        laws.choose_criterion(0, 3)


def test_auto_ranks_a_short_curve_by_aicc():
    """Held-out run 50 (60 points): AIC picks the four-parameter three-phase law by 0.08, AICc the
    three-parameter exponential by 0.30; "auto" (n/K = 12 < 40) ranks by AICc. A 250-point log stays on AIC."""
    t, y = _real_reward("50", "holdout_runs")
    by_aic, auto = laws.fit_all(t, y), laws.fit_all(t, y, criterion="auto")
    assert by_aic.best == "three_phase" and by_aic.criterion == "aic"
    assert auto.criterion == "aicc" and auto.best == "exponential" and auto.points_per_parameter == 12.0
    r = auto.results["three_phase"]
    assert r.aicc - r.aic == pytest.approx(2 * 5 * 6 / (60 - 5 - 1))  # Hurvich & Tsai's correction, q = 5
    assert auto.delta()["three_phase"] == pytest.approx(0.30, abs=0.01)
    long = laws.fit_all(np.arange(1, 251, dtype=float), read_log(real_log_path(
        "qwen2.5-3b-instruct_gsm8k_unsloth")).series("reward")[1], criterion="auto")
    assert long.criterion == "aic" and long.points_per_parameter == 50.0
