"""Policy concentration: a collapse is critical only when the reward it comes with stalls below its ceiling
or falls (book chapters "Reading a training log" and "GRPO on a language model")."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from grpo_core.runs import bandit_logs
from grpo_core.runs.diagnostics import policy_concentration
from grpo_core.runs.logs import from_records, read_log

RUNS = Path(__file__).resolve().parents[1] / "book" / "experiments" / "runs"
# the language-model chapter's six shipped runs (and the first chapter run): reward 0.25 -> 0.91-0.97,
# late entropy 4-9% of its start, healthy by every other account
HEALTHY = [f"prompts-fixed-dynamics/cpu-dynamics__G{g}-B32__s{s}" for g in (4, 16) for s in range(3)] + [
    "cpu-dynamics/cpu-dynamics__G8-B32__s0"]
# the learning-rate sweep's runs whose entropy collapsed with a reward that fell to 0 (Adam at 3e-3) or stalled
# below the healthy runs' ceiling (SGD at 0.03: 0.87 over the last 10%)
COLLAPSED = ["lr-sweep/cpu-dynamics__G8-B32__learning_rate0.003-max_steps300__s2",
             "lr-sweep/cpu-dynamics__G8-B32__learning_rate0.03-max_steps300-optimizersgd__s0"]


def _read(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_log(RUNS / name / "metrics.jsonl")


@pytest.mark.parametrize("name", HEALTHY)
def test_collapse_that_ends_at_the_ceiling_is_a_warning(name):
    f = policy_concentration(_read(name))
    assert f.evidence["entropy_ratio"] <= 0.1  # collapsed, while the reward was still rising
    assert f.evidence["reward_progress_at_halving"] < 0.75
    assert f.evidence["reward_at_ceiling"] and f.severity == "warning"
    assert "ceiling" in f.message


@pytest.mark.parametrize("name", COLLAPSED)
def test_collapse_with_a_reward_that_stalls_or_falls_stays_critical(name):
    f = policy_concentration(_read(name))
    assert f.evidence["entropy_ratio"] <= 0.1 and f.severity == "critical"
    assert not f.evidence.get("reward_at_ceiling", False)


def test_bandit_made_to_concentrate_stays_critical():
    # the bandit run made to concentrate: its reward peaks and falls back below its ceiling
    f = policy_concentration(bandit_logs.scenario_log("policy_concentration", seed=0))
    assert f.severity == "critical" and f.evidence["reward_at_ceiling"] is False


def test_same_collapse_two_endings():
    t = np.arange(1, 301)
    entropy = 1.3 * np.exp(-t / 40)  # a tenth by step ~92, halved by step ~28

    def run(top):
        reward = 0.25 + (top - 0.25) * (1 - np.exp(-t / 60))  # still rising when the entropy halves
        return from_records([{"step": int(s), "entropy": h, "reward": r} for s, h, r in zip(t, entropy, reward)])

    solved, stalled = policy_concentration(run(0.95)), policy_concentration(run(0.7))
    assert solved.severity == "warning" and solved.evidence["reward_at_ceiling"]
    assert stalled.severity == "critical" and not stalled.evidence["reward_at_ceiling"]
