"""Public functions refuse values of the wrong kind with the project's errors, naming the parameter.

Paths that are None or a DataFrame, a bare string where a list of names goes (not read letter by
letter), integers beyond the float range, NaN and infinities, subnormal and huge numbers: each gives a
:class:`~grpo_core.errors.GrpoError` whose message names the parameter and what it accepts, never a
TypeError from pathlib, an OverflowError from ``float()`` or numpy's "truth value is ambiguous".
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_core import bandit, groupsize, laws, model
from grpo_core.errors import DataError, GrpoError, ParameterError
from grpo_core.runs import settings as run_settings
from grpo_core.runs.callback import DynamicsCallback
from grpo_core.runs.logs import read_log
from grpo_core.validation import (
    MAX_MEMORY_BYTES,
    check_array,
    check_flag,
    check_integer,
    check_memory,
    check_names,
    check_path,
    check_real,
    check_seed,
)
from grpo_dynamics.cli import main

FRAME = pd.DataFrame({"step": [1, 2, 3], "reward": [0.1, 0.2, 0.3]})
HUGE = 10 ** 400


def _least(message: str) -> float:
    return float(re.search(r"at least (\S+) at", message).group(1))


# -- the shared checks -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, FRAME, b"log.csv", 3, True, ""])
def test_check_path_refuses_what_is_not_a_path(value):
    with pytest.raises(ParameterError, match="`log` must be a file path") as info:
        check_path("log", value)
    assert info.value.parameter == "log"


def test_check_path_says_a_table_is_not_a_path_and_accepts_str_and_path(tmp_path):
    with pytest.raises(ParameterError, match="a table in memory is not a path"):
        check_path("log", FRAME)
    assert check_path("log", str(tmp_path)) == tmp_path
    assert check_path("log", tmp_path) == tmp_path


def test_check_names_refuses_a_bare_string_instead_of_reading_its_letters():
    with pytest.raises(ParameterError, match=r"not one string; write \['logistic'\]") as info:
        check_names("laws", "logistic", choices=("logistic", "exponential"))
    assert info.value.parameter == "laws"
    with pytest.raises(ParameterError, match="`laws` must be a list of names"):
        check_names("laws", None)
    with pytest.raises(ParameterError, match="got 'l'"):
        check_names("laws", ["l"], choices=("logistic",))
    with pytest.raises(ParameterError, match="got 3 in it"):
        check_names("laws", ["logistic", 3])
    assert check_names("laws", ["logistic"], choices=("logistic",)) == ("logistic",)
    assert check_names("laws", np.array(["a", "b"])) == ("a", "b")


def test_check_flag_and_check_seed():
    assert check_flag("exact", np.bool_(False)) is False
    for bad in (1, "False", float("nan"), FRAME, None):
        with pytest.raises(ParameterError, match="`exact` must be True or False"):
            check_flag("exact", bad)
    assert check_seed("seed", 2 ** 100) == 2 ** 100  # numpy takes big seeds
    for bad in (-1, HUGE, FRAME, "abc", 0.5, None):
        with pytest.raises(ParameterError, match="`seed`"):
            check_seed("seed", bad)


def test_integers_beyond_the_float_range_are_named_not_overflow_errors():
    with pytest.raises(ParameterError, match="`eta` must be a finite number > 0; got an integer of 401 digits"):
        check_real("eta", HUGE, low=0.0, low_inclusive=False)
    with pytest.raises(ParameterError, match="`steps` must be a finite integer >= 1; got an integer of 401 digits"):
        check_integer("steps", HUGE, low=1)
    with pytest.raises(ParameterError, match="`num_correct` must be an integer in \\[1, 1.000e\\+400\\]"):
        check_integer("num_correct", 0, low=1, high=HUGE)
    with pytest.raises(ParameterError, match="`t` must be an array of finite numbers"):
        check_array("t", [1, HUGE])
    with pytest.raises(ParameterError, match="`t` must be an array of numbers; got NoneType"):
        check_array("t", None)  # not "1 NaN found"


def test_check_memory_both_sides_of_the_limit():
    check_memory("n", MAX_MEMORY_BYTES // 8, 8, what="one float")
    with pytest.raises(ParameterError, match=f"`n` must be at most {MAX_MEMORY_BYTES // 8:,} here"):
        check_memory("n", MAX_MEMORY_BYTES // 8 + 1, 8, what="one float")


# -- paths, settings, the callback -----------------------------------------------------------------


@pytest.mark.parametrize("value", [None, FRAME])
def test_read_log_and_read_settings_refuse_none_and_a_frame(value):
    with pytest.raises(ParameterError, match="`path` must be a file path") as info:
        read_log(value)
    assert info.value.parameter == "path"
    with pytest.raises(ParameterError, match="`config` must be a path to a JSON file") as info:
        run_settings.read_settings(value)
    assert info.value.parameter == "config"
    with pytest.raises(ParameterError, match="`log_path` must be the log's file path"):
        run_settings.settings_for_log(value)


@pytest.mark.parametrize("value", [None, FRAME, "learning_rate=1e-5", b"{}", 3, True])
def test_settings_from_mapping_refuses_what_is_not_a_mapping(value):
    with pytest.raises(ParameterError, match="`d` must be a mapping of settings") as info:
        run_settings.settings_from_mapping(value)
    assert info.value.parameter == "d"


@pytest.mark.parametrize("value, why", [
    (float("inf"), "must be finite"), (float("nan"), "must be finite"), (True, "is not a number"),
    (-1.0, "must be >= 0"), (1e308, "must be 0 or in"), (5e-324, "must be 0 or in"),
    (HUGE, "an integer of 401 digits is beyond the float range"),
])
def test_settings_from_mapping_refuses_unusable_learning_rates(value, why):
    with pytest.raises(DataError, match=f"`learning_rate` = .*{re.escape(why)}"):
        run_settings.settings_from_mapping({"learning_rate": value})


def test_learning_rate_range_is_where_its_reciprocal_is_a_normal_float():
    lo, hi = run_settings.LEARNING_RATE_RANGE
    assert lo == 1.0 / sys.float_info.max and hi == 1.0 / sys.float_info.min
    for ok in (0.0, lo, 1e-5, hi):
        assert run_settings.settings_from_mapping({"learning_rate": ok}).learning_rate == ok
    for bad in (np.nextafter(lo, 0.0), np.nextafter(hi, math.inf)):
        with pytest.raises(DataError, match="`learning_rate`"):
            run_settings.settings_from_mapping({"learning_rate": float(bad)})


@pytest.mark.parametrize("value", [None, FRAME, b"run"])
def test_callback_refuses_an_output_dir_that_is_not_a_path(value):
    with pytest.raises(ParameterError, match="`output_dir` must be a folder path") as info:
        DynamicsCallback(value)
    assert info.value.parameter == "output_dir"


def test_callback_refuses_one_severity_as_a_string_and_other_wrong_kinds(tmp_path):
    with pytest.raises(ParameterError, match=r"`print_severities` .* not one string; write \['warning'\]"):
        DynamicsCallback(tmp_path, print_severities="warning")
    with pytest.raises(ParameterError, match="`print_severities` must hold names among .*got 'loud'"):
        DynamicsCallback(tmp_path, print_severities=["loud"])
    with pytest.raises(ParameterError, match=r"`correctness` .* not one string; write \['accuracy'\]"):
        DynamicsCallback(tmp_path, correctness="accuracy")
    with pytest.raises(ParameterError, match="`settings` must be a RunSettings or a path"):
        DynamicsCallback(tmp_path, settings=FRAME)
    with pytest.raises(ParameterError, match="`quiet` must be True or False"):
        DynamicsCallback(tmp_path, quiet="no")
    cb = DynamicsCallback(tmp_path, print_severities=["critical"], correctness=["accuracy"])
    assert cb.print_severities == ("critical",) and cb.correctness == ["accuracy"]


# -- names, objects and flags of the numerical core --------------------------------------------------


def test_fit_all_refuses_one_law_as_a_string():
    t = np.arange(1.0, 41.0)
    y = 0.8 - 0.6 * np.exp(-t / 10)
    with pytest.raises(ParameterError, match=r"`laws` .* not one string; write \['logistic'\]") as info:
        laws.fit_all(t, y, laws="logistic")
    assert info.value.parameter == "laws"
    with pytest.raises(ParameterError, match="`laws` needs at least 1 name"):
        laws.fit_all(t, y, laws=[])
    assert sorted(laws.fit_all(t, y, laws=["logistic", laws.get_law("exponential")]).results) == [
        "exponential", "logistic"]


def test_monte_carlo_estimators_refuse_one_name_as_a_string():
    from grpo_core.groupsize.ustat.montecarlo import monte_carlo_mse

    with pytest.raises(ParameterError, match=r"`estimators` .* write \['leave_one_out'\]"):
        monte_carlo_mse([0.2, 0.8], [1.0, 0.0], [4], 100, estimators="leave_one_out")


@pytest.mark.parametrize("call, name", [
    (lambda v: bandit.fixed_point(v, 1.0), "spec"),
    (lambda v: bandit.simulate(v, eta=0.5, steps=5), "spec"),
    (lambda v: bandit.advantage_coefficients(v), "spec"),
    (lambda v: groupsize.pool_constants(v), "pool"),
    (lambda v: groupsize.summarise_study(v), "study"),
    (lambda v: groupsize.sample_pool_groups(groupsize.beta_difficulty_pool(8, 3), 2, 2, v), "rng"),
    (lambda v: model.noise_bands(v), "coeffs"),
    (lambda v: model.simulate(v, 5), "coeffs"),
])
def test_the_library_objects_are_checked_by_name(call, name):
    for value in (None, "abc", 3):
        with pytest.raises(ParameterError, match=f"`{name}` must be") as info:
            call(value)
        assert info.value.parameter == name


def test_flags_refuse_a_frame_instead_of_its_truth_value():
    with pytest.raises(ParameterError, match="`exact` must be True or False"):
        groupsize.optimal_group_size(1.0, 0.1, exact=FRAME)
    with pytest.raises(ParameterError, match="`onset` must be True or False"):
        laws.ThreePhaseLaw(onset=FRAME)
    with pytest.raises(ParameterError, match="`metrics` must be True or False"):
        bandit.simulate(bandit.BanditSpec.binary(), eta=0.5, steps=3, metrics=FRAME)


# -- the ranges that hold, by the mathematics of the code -------------------------------------------


def test_advise_refuses_a_subnormal_eta_by_name_with_the_least_eta_that_can_be_timed():
    with pytest.raises(ParameterError, match="`eta` = 1e-320 is too small to time") as info:
        model.advise(1e-320, 0.9, 1, 1.0)
    assert info.value.parameter == "eta" and "overflows float64" in str(info.value)
    least = _least(str(info.value))
    assert 1e-308 < least < 1e-307  # 8 (ln 10 + 2) (1 - mu) / 1.8e308 at mu = 0.9, K = 1
    assert math.isfinite(model.advise(least * 1.01, 0.9, 1, 1.0).time_to_90)
    with pytest.raises(ParameterError, match="`eta`"):
        model.advise(least * 0.99, 0.9, 1, 1.0)
    # the functions of the coefficients blame the coefficients
    with pytest.raises(ParameterError, match=r"`coeffs` \(eta = 1e-320\) is too small to time"):
        model.time_to_fraction(model.coefficients(1e-320, 0.9, 1, 1.0))


def test_cli_advise_subnormal_eta_names_eta(capsys):
    assert main(["advise", "--eta", "1e-320", "--mu", "0.9", "--k-ref", "1", "--curvature", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`eta` = 1e-320 is too small" in err and "`t`" not in err


def test_a_bandit_run_whose_logits_overflow_is_divergent_from_that_step_and_spares_the_others():
    spec = bandit.BanditSpec.binary(group_size=8)
    run = bandit.simulate(spec, eta=[1e308, 0.5], mu=0.9, beta=1.0, steps=30, seeds=2)
    assert run.overflow_step.tolist() == [[3, 3], [0, 0]]
    assert np.all(np.isfinite(run.p[0, :, :3])) and np.all(np.isnan(run.p[0, :, 3:]))
    assert np.all(np.isnan(run.theta[0]))
    alone = bandit.simulate(spec, eta=0.5, mu=0.9, beta=1.0, steps=30, seeds=2)
    np.testing.assert_array_equal(run.p[1], alone.p[0])
    assert alone.overflow_step.tolist() == [[0, 0]]


def test_cli_bandit_huge_eta_reports_the_divergence_and_its_step(capsys):
    assert main(["bandit", "--eta", "1e308", "--mu", "0.9", "--steps", "30", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "the run diverged: every seed overflowed float64 (logits past 1.8e308; the first at step 3)" in out
    assert "`logits`" not in out


def test_bandit_num_prompts_beyond_memory_is_blamed_with_its_largest_value(capsys):
    assert main(["bandit", "--eta", "1", "--num-prompts", "1e308"]) == 2
    err = capsys.readouterr().err
    assert "`num_prompts` (1e+308) x `group_size` (8)" in err and "`steps`" not in err
    most = int(re.search(r"`num_prompts` must be at most ([\d,]+) here", err).group(1).replace(",", ""))
    from grpo_core.bandit.simulation import _check_memory

    args = dict(n_conf=1, n_seeds=16, n_steps=500, every=1, arms=2, depth=2, metrics=False)
    _check_memory(**args, per_step=most * 8, num_prompts=most)
    with pytest.raises(ParameterError, match="`num_prompts`"):
        _check_memory(**args, per_step=(most + 1) * 8, num_prompts=most + 1)


def test_noise_scale_whose_variance_overflows_is_refused_at_its_bound():
    c = model.coefficients(0.01, 0.9, 1, 1.0)
    most = math.sqrt(sys.float_info.max) * 2.0 / 0.01  # sqrt(max G) / (noise_gain eta), G = 4
    # the first step's variance is the per-step one: 0.98 of the largest float just below the bound
    assert model.variance_trajectory(c, 1, most * 0.99, 4)[1] == pytest.approx(0.99 ** 2 * sys.float_info.max)
    with pytest.raises(ParameterError, match="`noise_scale` must be at most 2.68e\\+156"):
        model.stationary_variance(c, most * 1.01, 4)


def test_fixed_point_gap_search_stops_where_exp_underflows():
    spec = bandit.BanditSpec.binary()
    assert bandit.fixed_point(spec, 1.0, max_gap=745.0).interior
    with pytest.raises(ParameterError, match=r"`max_gap` must be a finite number in \(0, 745\]"):
        bandit.fixed_point(spec, 1.0, max_gap=745.5)


def test_pool_spread_below_float_precision_is_refused_not_nan():
    from grpo_core.groupsize.pool import MIN_SPREAD

    pool = groupsize.beta_difficulty_pool(256, 4, spread=MIN_SPREAD)
    assert pool.success().std() == pytest.approx(MIN_SPREAD, rel=0.01)
    for bad in (MIN_SPREAD / 2, 1e-320):
        with pytest.raises(ParameterError, match=r"`spread` must be 0 or in \[1e-07"):
            groupsize.beta_difficulty_pool(256, 4, spread=bad)


def test_settling_time_of_a_subnormal_tolerance_is_a_time():
    c = model.coefficients(0.05, 0.5, 4, 1.0)  # underdamped
    assert c.regime == "underdamped"
    assert model.settling_time(c, 1e-300) < model.settling_time(c, 1e-320) < math.inf


def test_cli_groupsize_tiny_c1_is_not_called_zero(capsys):
    assert main(["groupsize", "--budget", "64", "--c1", "1e-320", "--c2", "0.5", "--c3", "1e308"]) == 0
    out = capsys.readouterr().out
    assert "c3/c1 overflows float64" in out and "no between-prompt variance" not in out


# -- the sweep: hostile values anywhere give the project's errors ----------------------------------

HOSTILE = [None, FRAME, "abc", b"abc", True, float("nan"), float("inf"), 1e308, -1, 0, HUGE, 1e-320, "logistic"]
_C = model.coefficients(0.01, 0.9, 1, 1.0)
_SPEC = bandit.BanditSpec.binary(group_size=4)
_POOL = groupsize.beta_difficulty_pool(16, 4)
_T = np.arange(1.0, 31.0)
SWEPT = {
    "advise": (model.advise, dict(eta=0.01, mu=0.9, k_ref=1, curvature=1.0, beta=0.0, lag="constant")),
    "coefficients": (model.coefficients, dict(eta=0.01, mu=0.9, k_ref=1, curvature=1.0, momentum="ema")),
    "noise_bands": (model.noise_bands, dict(coeffs=_C, group_sizes=(4,), noise_scale=1.0, n_seeds=2, n_steps=5,
                                            seed=0)),
    "stationary_variance": (model.stationary_variance, dict(coeffs=_C, noise_scale=1.0, group_size=4)),
    "variance_trajectory": (model.variance_trajectory, dict(coeffs=_C, n_steps=5, noise_scale=1.0, group_size=4)),
    "settling_time": (model.settling_time, dict(coeffs=_C, tolerance=0.1)),
    "critical_value": (model.critical_value, dict(parameter="eta", mu=0.9, k_ref=2, curvature=1.0)),
    "threshold_table": (model.threshold_table, dict(mus=(0.0, 0.5), k_refs=(1, 2))),
    "bandit.simulate": (bandit.simulate, dict(spec=_SPEC, eta=0.5, mu=0.5, k_ref=2, steps=5, seeds=2, metrics=False)),
    "sample_gradient": (bandit.sample_gradient, dict(spec=_SPEC, theta=[0.0, 0.0], beta=0.5, num_draws=2, seed=0)),
    "fixed_point": (bandit.fixed_point, dict(spec=_SPEC, beta=1.0, max_gap=60.0)),
    "BanditSpec.binary": (bandit.BanditSpec.binary, dict(arms=2, correct=1, group_size=4, num_prompts=1)),
    "beta_difficulty_pool": (groupsize.beta_difficulty_pool, dict(num_prompts=16, num_arms=4, spread=0.15, seed=0)),
    "minibatch_mse": (groupsize.minibatch_mse, dict(group_size=[2, 4], c1=1.0, c2=0.5, c3=0.1, budget=64,
                                                    exact=True)),
    "best_group_size": (groupsize.best_group_size, dict(budget=64, c1=1.0, c2=0.5, c3=0.1, exact=True)),
    "sample_pool_groups": (groupsize.sample_pool_groups, dict(pool=_POOL, num_prompts=2, group_size=2,
                                                              rng=np.random.default_rng(0))),
    "fit_all": (laws.fit_all, dict(t=_T, y=0.8 - 0.6 * np.exp(-_T / 8), laws=("exponential",), criterion="aic")),
    "settings_from_mapping": (run_settings.settings_from_mapping, dict(d={"learning_rate": 1e-5}, source="x")),
    "read_settings": (run_settings.read_settings, dict(path="missing.json")),
    "DynamicsCallback": (DynamicsCallback, dict(output_dir="unused-folder", every=50, n_boot=20,
                                                print_severities=("warning",), quiet=False)),
}
CASES = [(f, p) for f, (_, base) in SWEPT.items() for p in base]


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), value=st.sampled_from(HOSTILE))
def test_hostile_values_give_the_projects_errors(case, value):
    fname, param = case
    fn, base = SWEPT[fname]
    try:
        fn(**{**base, param: value})
    except GrpoError as exc:
        assert str(exc) and "Traceback" not in str(exc)
    # anything else (TypeError, OverflowError, AttributeError, numpy's ValueError) fails the test


def test_run_settings_names_a_log_and_settings_of_the_wrong_kind():
    """The settings a diagnosis reads: a log that is a DataFrame, settings that are a DataFrame or a
    number are named as such (they gave AttributeError, or blamed `config`)."""
    from grpo_core.runs.diagnostics.implied import run_settings as settings_of
    from grpo_core.runs.settings import RunSettings
    from grpo_core.runs.synthetic import synthetic_log

    log = synthetic_log("policy_concentration")
    with pytest.raises(ParameterError, match=r"^`log` must be a RunLog"):
        settings_of(FRAME)
    for bad in (FRAME, 5):
        with pytest.raises(ParameterError, match=r"^`settings` must be a RunSettings or a settings file path"):
            settings_of(log, bad)
    found = settings_of(log)  # a synthetic log has nothing beside it: TRL's defaults
    assert (found.source, found.optimizer, found.learning_rate) == ("TRL defaults", RunSettings().optimizer, None)


@pytest.mark.parametrize("value, hint", [(None, "NoneType"), (FRAME, "use from_frame"), ("step,reward", "str"),
                                         ({"step": 1}, "dict"), (5, "int")])
def test_from_records_names_what_is_not_an_iterable_of_records(value, hint):
    """None gave TypeError; a DataFrame iterated its column names, a dict its keys, a string its letters."""
    from grpo_core.runs.logs import from_records

    with pytest.raises(ParameterError, match=r"^`records` must be an iterable of mappings") as info:
        from_records(value)
    assert hint in str(info.value)
    assert from_records(iter([{"step": 1, "reward": 0.5}])).series("reward")[1].tolist() == [0.5]  # a generator


def test_diagnose_names_a_log_and_switches_of_the_wrong_kind():
    """A DataFrame as the log blamed `path`; a DataFrame as a switch raised numpy's truth-value error."""
    from grpo_core.runs.diagnostics import diagnose
    from grpo_core.runs.synthetic import synthetic_log

    with pytest.raises(ParameterError, match=r"^`log` must be a RunLog or a log file path"):
        diagnose(FRAME)
    for flag in ("forecast", "curvature"):
        with pytest.raises(ParameterError, match=f"^`{flag}`"):
            diagnose(synthetic_log("policy_concentration"), **{flag: FRAME})
    assert diagnose(synthetic_log("policy_concentration"), forecast=False, curvature=False).modes == [
        "policy_concentration"]
