"""Softmax policies: probabilities, sampling, score functions (grpo_core.softmax)."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_core.errors import ParameterError
from grpo_core.softmax import (
    PROBABILITY_SUM_ATOL,
    arm_counts,
    check_probabilities,
    sample_categorical,
    score,
    softmax,
)


def test_softmax_is_stable_and_normalised():
    p = softmax([[1000.0, 1000.0, -1000.0], [0.0, np.log(3.0), 0.0]])
    np.testing.assert_allclose(p, [[0.5, 0.5, 0.0], [0.2, 0.6, 0.2]], atol=1e-15)


def test_sampling_frequencies_match_the_policy():
    rng = np.random.default_rng(7)
    p = softmax(rng.normal(size=(4, 6)))
    n = 400_000
    freq = arm_counts(sample_categorical(p, n, rng), 6) / n
    # binomial standard error per cell, 5 sigma
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) < 5 * se + 1e-12)


def test_zero_probability_arms_are_never_drawn():
    rng = np.random.default_rng(0)
    a = sample_categorical([0.0, 0.3, 0.0, 0.7, 0.0], 50_000, rng)
    assert set(np.unique(a)) == {1, 3}


def test_score_is_onehot_minus_pi_with_zero_mean():
    p = np.array([0.1, 0.2, 0.7])
    w = score([0, 1, 2], p)
    np.testing.assert_allclose(w, np.eye(3) - p)
    # E_pi[W] = sum_a pi_a (e_a - pi) = 0, E||W||^2 = 1 - ||pi||^2
    np.testing.assert_allclose(p @ w, 0.0, atol=1e-15)
    np.testing.assert_allclose(p @ (w**2).sum(-1), 1 - p @ p)


def test_weighted_counts():
    c = arm_counts([[0, 2, 2], [1, 1, 1]], 3, weights=[[1.0, 2.0, 3.0], [0.5, 0.5, 1.0]])
    np.testing.assert_allclose(c, [[1.0, 0.0, 5.0], [0.0, 2.0, 0.0]])


def test_probability_tolerance_is_documented_and_enforced():
    ok = check_probabilities("probs", [0.5, 0.5 + 0.5 * PROBABILITY_SUM_ATOL])
    assert ok.sum() == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ParameterError, match="`probs` must sum to 1"):
        check_probabilities("probs", [0.5, 0.5 + 2 * PROBABILITY_SUM_ATOL])
    with pytest.raises(ParameterError, match="`probs`"):
        check_probabilities("probs", [-0.1, 1.1])
    with pytest.raises(ParameterError, match="`probs`"):
        check_probabilities("probs", [np.nan, 1.0])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: sample_categorical([0.5, 0.5], 0, np.random.default_rng(0)), "size"),
        (lambda: score([0, 2], [0.5, 0.5]), "actions"),
        (lambda: score([0.5], [0.5, 0.5]), "actions"),
        (lambda: arm_counts([0, 1], 0), "num_arms"),
        (lambda: arm_counts([0, 1], 2, weights=[1.0]), "weights"),
        (lambda: softmax(1.0), "logits"),
    ],
)
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ParameterError, match=f"`{name}`"):
        call()


def test_log_softmax_matches_log_of_softmax_and_stays_exact_where_softmax_underflows():
    from grpo_core.softmax import log_softmax

    rng = np.random.default_rng(3)
    z = rng.normal(size=(5, 7))
    np.testing.assert_allclose(log_softmax(z), np.log(softmax(z)), atol=1e-12)
    np.testing.assert_allclose(np.exp(log_softmax(z)).sum(-1), 1.0, atol=1e-12)
    out = log_softmax([[0.0, -800.0, -1200.0]])
    assert out.tolist() == [[0.0, -800.0, -1200.0]]
    with pytest.raises(ParameterError, match="logits"):
        log_softmax([0.0, np.nan])
