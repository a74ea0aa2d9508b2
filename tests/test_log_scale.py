"""Long logs: a log of more than ``max_rows`` training steps is thinned on read, and every check sees what it
would in the full log (:func:`grpo_core.runs.logs.build._thin`): the same diagnosis, every NaN, infinity and
spike, every evaluation row."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from grpo_core.errors import DataError, ParameterError
from grpo_core.runs.diagnostics import diagnose, numerical_failure, recurring_spikes
from grpo_core.runs.logs import LogWarning, read_log
from grpo_core.runs.logs.build import MAX_ROWS


def _run(n: int, seed: int = 1) -> pd.DataFrame:
    """A GRPO-like run of ``n`` steps: a saturating reward with noise, a drifting KL, a steady gradient norm."""
    rng = np.random.default_rng(seed)
    s = np.arange(1, n + 1)
    return pd.DataFrame({
        "step": s,
        "reward": 0.9 - 0.7 * np.exp(-s / (0.15 * n)) + 0.05 * rng.standard_normal(n),
        "reward_std": 0.3 + 0.01 * rng.standard_normal(n),
        "loss": 0.01 * rng.standard_normal(n),
        "kl": 0.002 + 0.02 * s / n + 1e-4 * rng.random(n),
        "grad_norm": 0.5 + 0.05 * rng.standard_normal(n),
        "learning_rate": np.full(n, 1e-6),
        "completion_length": 200 + 10 * rng.standard_normal(n),
    })


def _csv(frame: pd.DataFrame, path) -> str:
    # a NaN is written as the run writes it (`nan`), so that it is a logged value, not an empty cell
    frame.to_csv(path, index=False, float_format="%.10g", na_rep="nan")
    return str(path)


def _read(path: str, max_rows: int | None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        return read_log(path, max_rows=max_rows)


def _dropped(step: int, every: int) -> bool:
    """Whether the stride alone would drop ``step`` (a metric logged on every step 1, 2, ...)."""
    return (step - 1) % every != 0


def _shape(d) -> list:
    return [(f.mode, f.severity, f.steps, f.onset) for f in d.findings]


@pytest.mark.slow
def test_a_200k_step_csv_is_thinned_and_diagnosed_as_in_full(tmp_path):
    run = _run(200_000)
    # six gradient-norm spikes, all on steps the stride drops (even steps; two of them two steps apart)
    spikes = [40_000, 40_200, 90_000, 150_000, 150_002, 170_000]
    run.loc[run["step"].isin(spikes), "grad_norm"] = 5e5
    path = _csv(run, tmp_path / "long.csv")
    with pytest.warns(LogWarning, match=r"200,000 training steps, more than the 100,000 read in full"):
        thin = read_log(path)
    full = _read(path, max_rows=0)
    assert MAX_ROWS == 100_000 and len(full.train) == 200_000 and "thinned" not in full.meta
    assert thin.meta["thinned"]["training_steps"] == 200_000 and thin.meta["thinned"]["every"] == 2
    assert all(_dropped(s, 2) for s in spikes)
    # the stride's 100,000 odd steps, the last step, and the six spikes (the steps beside them are odd)
    assert len(thin.train) == 100_000 + 1 + len(spikes) == thin.meta["thinned"]["kept_steps"]
    # the implied curvature (a fit to every reward point, most of the time here) is no finding: left out
    a, b = diagnose(thin, curvature=False), diagnose(full, curvature=False)
    assert a.verdict == b.verdict == "unhealthy"
    assert _shape(a) == _shape(b) and [f.mode for f in a.findings] == ["recurring_spikes"]
    assert a.checked == b.checked and a.skipped.keys() == b.skipped.keys()
    ev_a, ev_b = a.findings[0].evidence["grad_norm"], b.findings[0].evidence["grad_norm"]
    assert ev_a["spikes"] == ev_b["spikes"] == 6 and ev_a["steps"] == ev_b["steps"] == spikes
    assert ev_a["top_spike"]["value"] == ev_b["top_spike"]["value"] == 5e5


def test_a_nan_and_an_infinity_in_dropped_rows_are_still_found(tmp_path):
    run = _run(20_000)
    run.loc[run["step"] == 10_005, "reward"] = np.nan
    run.loc[run["step"].isin([12_347, 12_348]), "grad_norm"] = np.inf
    path = _csv(run, tmp_path / "nan.csv")
    thin, full = _read(path, 2_000), _read(path, 0)
    every = thin.meta["thinned"]["every"]
    assert every == 10 and all(_dropped(s, every) for s in (10_005, 12_347, 12_348))
    assert 10_003 not in thin.train.index  # an ordinary step the stride drops is dropped
    assert {sp: {m: v.tolist() for m, v in per.items()} for sp, per in thin.logged_nan.items()} == {
        "train": {"reward": [10_005]}}
    assert thin.nonfinite_steps("grad_norm").tolist() == [12_347, 12_348]
    fa, fb = numerical_failure(thin), numerical_failure(full)
    assert fa.severity == fb.severity == "critical" and fa.steps == fb.steps == (10_005, 20_000)
    assert fa.evidence == fb.evidence
    assert fa.evidence["reward"]["steps"] == 1 and fa.evidence["grad_norm"]["steps"] == 2
    assert fa.evidence["reward"]["finite_after"] and fa.evidence["grad_norm"]["finite_after"]


def test_a_single_1e6x_spike_in_a_dropped_row_is_kept_with_its_neighbours(tmp_path):
    run = _run(20_000)
    run.loc[run["step"] == 7_004, "grad_norm"] = 5e5  # 1e6 x the gradient norm's 0.5
    path = _csv(run, tmp_path / "spike.csv")
    thin = _read(path, 2_000)
    assert _dropped(7_004, thin.meta["thinned"]["every"])
    assert thin.train.loc[7_004, "grad_norm"] == 5e5
    assert {7_003, 7_005} <= set(thin.train.index)
    assert thin.train["grad_norm"].max() == 5e5


def test_two_spikes_in_dropped_rows_are_two_spikes_as_in_full(tmp_path):
    run = _run(20_000)
    run.loc[run["step"].isin([7_004, 7_006, 12_006]), "grad_norm"] = 5e5  # 7004 and 7006: two episodes
    path = _csv(run, tmp_path / "spikes.csv")
    thin, full = _read(path, 2_000), _read(path, 0)
    fa, fb = recurring_spikes(thin), recurring_spikes(full)
    assert fa.severity == fb.severity and fa.steps == fb.steps == (7_004, 20_000)
    assert fa.evidence["grad_norm"]["spikes"] == fb.evidence["grad_norm"]["spikes"] == 3
    assert fa.evidence["grad_norm"]["steps"] == fb.evidence["grad_norm"]["steps"] == [7_004, 7_006, 12_006]


def test_each_metric_keeps_its_own_stride_and_every_eval_row(tmp_path):
    # the reward logged every 10th step only (a stride of 10 over all steps, from step 1, would miss it
    # entirely), an evaluation every 500 steps in rows of their own
    n = 4_000
    rows = []
    for s in range(1, n + 1):
        rows.append({"step": s, "loss": 0.01 * np.sin(s), "reward": 0.5 + 1e-4 * s if s % 10 == 0 else None})
        if s % 500 == 0:
            rows.append({"step": s, "eval_reward": 0.4 + 1e-4 * s})
    path = tmp_path / "trl.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.warns(LogWarning, match=r"kept 4\d\d: 1 in 10 values of each metric"):
        log = read_log(path, max_rows=400)
    steps, reward = log.series("reward")
    assert steps.tolist() == list(range(10, n + 1, 100)) + [n]
    assert reward[:2].tolist() == pytest.approx([0.501, 0.511])
    assert log.eval.index.tolist() == list(range(500, n + 1, 500))
    assert log.eval["reward"].tolist() == pytest.approx([0.4 + 1e-4 * s for s in range(500, n + 1, 500)])


def test_a_log_at_max_rows_is_read_whole(tmp_path):
    path = _csv(_run(1_000), tmp_path / "short.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LogWarning)
        log = read_log(path, max_rows=1_000)
    assert len(log.train) == 1_000 and "thinned" not in log.meta
    assert len(_read(path, 999).train) < 1_000


@pytest.mark.parametrize("value", [-1, 2.5, "many", True])
def test_max_rows_must_be_a_whole_number_at_least_0(tmp_path, value):
    path = _csv(_run(20), tmp_path / "x.csv")
    with pytest.raises(ParameterError, match="`max_rows` must be an? (finite )?integer >= 0"):
        read_log(path, max_rows=value)


def test_the_default_max_rows_comes_from_the_environment(tmp_path, monkeypatch):
    path = _csv(_run(1_000), tmp_path / "x.csv")
    monkeypatch.setenv("GRPO_DYNAMICS_MAX_LOG_ROWS", "100")
    assert _read(path, None).meta["thinned"]["every"] == 10
    monkeypatch.setenv("GRPO_DYNAMICS_MAX_LOG_ROWS", "0")
    assert len(_read(path, None).train) == 1_000
    monkeypatch.setenv("GRPO_DYNAMICS_MAX_LOG_ROWS", "ten")
    with pytest.raises(DataError, match="GRPO_DYNAMICS_MAX_LOG_ROWS='ten' is not a number of rows"):
        read_log(path)
