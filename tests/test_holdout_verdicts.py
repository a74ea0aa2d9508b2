"""The verdict of ``diagnose`` on each of the 17 held-out real runs (grpo_core/data/holdout_runs), which no
rule of the diagnostics was written or tuned on, set against a careful reading of each log and its
meta.json. Where the expected verdict disagrees with meta.json's shape label the reason is given (47,
48, 55). Run 54's rise-then-fall was read as "not learning" before ``not_learning`` looked for a peak.
"""

from __future__ import annotations

import warnings

import pytest

from grpo_core.runs import datasets, logs
from grpo_core.runs.diagnostics import diagnose

# run -> (expected verdict, modes that must be warning/critical, the reading)
EXPECTED = {
    "40": ("unhealthy", {"not_learning", "truncation"}, "oscillates -1.3 -> -3.2; length pinned at the 1846 cap"),
    "41": ("healthy", set(), "rises -0.28 -> 0.28 and plateaus low"),
    "42": ("healthy", set(), "rises 0.67 -> 1.94 and plateaus"),
    "43": ("healthy", set(), "rises -0.64 -> 7.75 (interrupted at 292 of 1000 steps)"),
    "44": ("unhealthy", {"not_learning", "truncation"}, "oscillates; half the completions at the cap"),
    "45": ("unhealthy", {"not_learning", "truncation"}, "oscillates, slight decline; clipped share to 0.7"),
    "46": ("healthy", set(), "still rising 0.29 -> 4.5; KL above 1 is info only"),
    # meta.json: "rises and plateaus", but it lists the late zero spread: reward_std is 0 on 96% of the
    # last quarter's steps (one program for every prompt), so the run gets no gradient: the tool is right
    "47": ("unhealthy", {"advantage_degeneration"}, "rises 4.6 -> 10.1, then zero spread on 94% of steps"),
    # meta.json: a small gain, no failure signal. About 90% of the training gain is the format reward;
    # correctness rose 0.054 -> 0.171 only (z 1.7): the train/eval decoupling warning is the tool's reading
    "48": ("unhealthy", {"train_eval_decoupling"}, "gain mostly format; correctness barely moves"),
    "49": ("unhealthy", {"not_learning", "truncation"}, "flat; three quarters of completions clipped"),
    "50": ("unhealthy", {"advantage_degeneration", "not_learning"}, "flat; reward_std 0 on 92% of steps"),
    "51": ("unhealthy", {"advantage_degeneration", "not_learning"}, "flat; zero spread"),
    "52": ("healthy", set(), "rises 0.48 -> 1.30 and plateaus"),
    "53": ("healthy", set(), "saturates at 1.45 of 1.5 (zero spread from groups all at the maximum)"),
    "54": ("unhealthy", {"not_learning"}, "rises 0.29 -> 0.74 (steps 61-120), falls back to 0.41"),
    # meta.json: flat (learning rate 1e-6). The halves rise 0.124 -> 0.183 and the slope is significant
    # (p 0.0065 < 0.01), a small rise next to the sibling run's 0.41 -> 0.88: healthy, if slow
    "55": ("healthy", set(), "a small, significant rise at lr 1e-6"),
    "56": ("healthy", set(), "rises 0.41 -> 0.88 near the maximum"),
}
DISAGREE_WITH_META = {"47", "48", "55"}


@pytest.fixture(scope="module")
def verdicts():
    out = {}
    for key in EXPECTED:
        r = datasets.real_run(key, "holdout_runs")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[key] = diagnose(logs.read_log(r.path, run=r.run), forecast=False)
    return out


def test_every_holdout_run_has_an_expected_verdict():
    assert sorted(i.split("-", 1)[0] for i in datasets.real_runs("holdout_runs")) == sorted(EXPECTED)


@pytest.mark.parametrize("run_id", sorted(EXPECTED))
def test_verdict_of_each_holdout_run(verdicts, run_id):
    want, modes, why = EXPECTED[run_id]
    d = verdicts[run_id]
    assert d.verdict == want, (run_id, why, d.summary())
    assert modes <= {f.mode for f in d.findings if f.severity in ("warning", "critical")}, (run_id, why, d.modes)


def test_the_rise_then_fall_names_its_peak_not_a_learning_rate_to_raise(verdicts):
    f = verdicts["54"].find("not_learning")
    assert f.severity == "critical" and f.evidence["rose_then_fell"] and "raise the learning rate" not in f.advice


def test_agreement_with_meta_shape_labels(verdicts):
    """Healthy exactly where meta.json's shape says the run learned, except the three argued above."""
    learned = {k for k in EXPECTED
               if datasets.real_run(k, "holdout_runs").meta["curve_shape"] in ("rises and plateaus", "still rising")}
    agree = {k for k in EXPECTED if (verdicts[k].verdict == "healthy") == (k in learned)}
    assert set(EXPECTED) - agree == DISAGREE_WITH_META


def test_the_spike_message_quotes_the_baseline_its_rule_used():
    """Run 46: "at least 10x above its running median ... up to 3.62 against a median of 0.401" (9x): the
    median quoted was the run's, not the running median the rule compares with."""
    from grpo_core.runs.diagnostics import recurring_spikes

    r = datasets.real_run("46", "holdout_runs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = recurring_spikes(logs.read_log(r.path))
    top = f.evidence["kl"]["top_spike"]
    assert top["value"] >= 10 * top["running_median"]
    assert f"the highest {top['value']:.3g} at step {top['step']} against a running median of " \
           f"{top['running_median']:.3g} there" in f.message


def test_a_law_plateau_band_wider_than_the_data_is_not_called_reliable():
    """Run 44: the law fit's plateau band reached 284 for a reward that never passed 6, with
    ``reliable: true``; a band over three times the reward's whole range now carries the caveat."""
    r = datasets.real_run("44", "holdout_runs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = logs.read_log(r.path)
        fc = diagnose(log, n_boot=30).forecast
    _, y = log.series("reward")
    assert fc["plateau_high"] - fc["plateau_low"] > 3 * (y.max() - y.min())
    assert fc["reliable"] is False and "does not determine its plateau" in fc["caveat"]
