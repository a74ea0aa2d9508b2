"""Domains of two claims of the oscillator chapter's "What applies to your TRL run".

* The beta = 0 law (grpo_core.model.anchorless) is a plain-SGD result: momentum rescales its clock,
  Adam does not follow it (book/how_oscillator.md, check 3).
* The clip ceiling (grpo_core.model.reuse.clip_ceiling) holds up to the last step's overshoot, which
  vanishes with the learning rate (book/how_oscillator.md, check 2).

All runs: the two-arm bandit's exact mean field unless said, mean baseline, G = 8.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_core.bandit import BanditSpec, simulate
from grpo_core.model.anchorless import anchorless_rate, anchorless_reward, approach_slopes
from grpo_core.model.reuse import clip_ceiling

SPEC = BanditSpec.binary(group_size=8, scale="none")
RATE = anchorless_rate(1, 2, 8)  # s = 7/4
WINDOWS = [(4, 8), (16, 32), (64, 128)]  # learning-rate time, check 3 of book/how_oscillator.md


def _mean_field(eta, steps, **kw):
    run = simulate(SPEC, eta=eta, beta=0.0, steps=steps, mean_field=True, record_every=10, **kw)
    return eta * run.steps, run.p[0, 0], run


# --- Claim A: the beta = 0 law is for plain gradient steps ---------------------------------------


def test_sgd_follows_the_law_late_slope_minus_one():
    # tau in [1000, 2000]: measured slope -1.005, (1 - p) s tau = 1.004 at tau = 2000.
    tau, p, _ = _mean_field(0.05, 40_000)
    slope = approach_slopes(tau, p, [(1000, 2000)])[0]
    assert slope == pytest.approx(-1.0, abs=0.02)
    assert (1 - p[-1]) * RATE * tau[-1] == pytest.approx(1.0, rel=0.02)


def test_sgd_slopes_are_the_laws_own_in_the_chapter_windows():
    # SGD -1.00, -1.10, -1.04; the law's local slopes on the same grid agree (not yet -1 at tau 16-32).
    tau, p, _ = _mean_field(0.02, 6400)
    law = anchorless_reward(tau, r0=float(p[0]), rate=RATE)
    np.testing.assert_allclose(approach_slopes(tau, p, WINDOWS), approach_slopes(tau, law, WINDOWS), atol=0.01)


def test_momentum_only_rescales_learning_rate_time():
    # Heavy ball: tau = eta t / (1 - mu). EMA (v = mu v + (1 - mu) g) is heavy ball at eta (1 - mu),
    # so it keeps tau = eta t. Past a transient of a few 1/(1 - mu) steps, the plain-SGD curve.
    tau, p_sgd, _ = _mean_field(0.02, 12_800)
    _, p_hb, _ = _mean_field(0.002, 12_800, mu=0.9)
    ema = simulate(SPEC.replace(momentum="ema"), eta=0.02, mu=0.9, beta=0.0, steps=12_800, mean_field=True,
                   record_every=10)
    np.testing.assert_allclose(ema.p[0, 0], p_hb, rtol=1e-12)
    late = tau >= 16
    rel = np.abs((1 - p_hb[late]) / (1 - p_sgd[late]) - 1)
    assert rel.max() < 0.012  # measured 0.0107; 0.0027 from tau = 256 on
    assert rel[-1] < 0.003


def test_adam_noise_free_is_not_the_power_law_and_steepens():
    # betas (0.9, 0.999), eta = 0.02: slopes -1.49, -1.68, -2.72 (SGD -1.00, -1.10, -1.04).
    tau, p, _ = _mean_field(0.02, 6400, optimizer="adam", adam_betas=(0.9, 0.999))
    s = approach_slopes(tau, p, WINDOWS)
    np.testing.assert_allclose(s, [-1.49, -1.68, -2.72], atol=0.02)
    assert s[0] < -1.4 and s[1] < -1.6 and s[2] < -2.5  # steeper than the law's -1 in every window
    assert np.all(np.diff(s) < -0.15)  # and drifting: no single exponent


def test_adam_with_64_rollouts_per_step_is_not_the_power_law_either():
    # 8 prompts x G = 8 = 64 rollouts per step, 128 seeds (0..127), slope of the mean 1 - p over seeds:
    # -1.48, -1.67, -2.68.
    spec = BanditSpec.binary(group_size=8, num_prompts=8, scale="none")
    run = simulate(spec, eta=0.02, beta=0.0, steps=6400, seeds=128, record_every=10, optimizer="adam")
    s = approach_slopes(0.02 * run.steps, run.p[0].mean(0), WINDOWS)
    np.testing.assert_allclose(s, [-1.48, -1.67, -2.68], atol=0.05)
    assert s[0] < -1.4 and s[2] < -2.4 and np.all(np.diff(s) < -0.1)


@pytest.mark.parametrize("eta", [0.02, 0.05])
def test_adam_late_approach_is_exponential_in_steps_at_rate_set_by_beta2(eta):
    # Noise-free, late: 1 - p falls by beta2^(1/2) per step whatever eta (the gradient decays as fast as
    # v forgets): d ln(1 - p)/dt = ln(0.999)/2 = -5.003e-4; measured -5.002e-4 (eta 0.02), -5.010e-4 (0.05).
    _, p, run = _mean_field(eta, 20_000, optimizer="adam", adam_betas=(0.9, 0.999))
    q = 1 - p
    i = int(np.nonzero(q > 1e-7)[0][-1])  # well above Adam's eps floor
    rate = (np.log(q[i]) - np.log(q[i - 200])) / (run.steps[i] - run.steps[i - 200])
    assert rate == pytest.approx(np.log(0.999) / 2, rel=0.01)


# --- Claim B: the clip ceiling holds up to the last step's overshoot ------------------------------


def _clip_batches(eta, k, batches=4):
    """Check 2 of book/how_oscillator.md, its run: p at each batch's start and end, the ceiling, the
    crossing step's move."""
    spec = BanditSpec.binary(group_size=8, lag="refresh", estimator="surrogate")
    p = simulate(spec, eta=eta, k_ref=k, beta=0.0, steps=batches * k, mean_field=True, theta0=[-1.0, 0.0]).p[0, 0]
    start, end = p[:-1:k], p[k::k]
    ceiling = clip_ceiling(start)
    moves, after = [], []
    for b in range(batches):
        seg = p[b * k:(b + 1) * k + 1]
        i = int(np.nonzero(seg > ceiling[b])[0][0])  # the first step that carried p past the ceiling
        moves.append(seg[i] - seg[i - 1])
        after.append(np.ptp(seg[i:]))  # what moved after it
    return start, end, ceiling, np.array(moves), np.array(after)


def test_clip_ceiling_is_exceeded_by_less_than_the_crossing_step():
    # eta = 0.5, k_ref = 64: excess 0.0074, 0.0147, 0.0106, 0.0002; crossing steps 0.0138, 0.0229,
    # 0.0198, 0.0071. The clip zeroes the gradient only once the ratio is past 1 + eps, so the step that
    # crosses is taken in full, and then nothing moves.
    _, end, ceiling, moves, after = _clip_batches(0.5, 64)
    excess = end - ceiling
    assert np.all(excess > 0) and np.all(excess < moves)
    assert np.all(after == 0.0)
    assert excess.max() == pytest.approx(0.0147, abs=5e-4)


def test_clip_overshoot_vanishes_with_the_learning_rate():
    # Same batches in learning-rate time (eta k = 32): largest excess 0.0147, 0.0053, 0.0022, 0.0015 for
    # eta = 0.5, 0.25, 0.125, 0.0625; every excess stays below its crossing step.
    worst = []
    for eta in (0.5, 0.25, 0.125, 0.0625):
        _, end, ceiling, moves, _ = _clip_batches(eta, int(32 / eta))
        excess = end - ceiling
        assert np.all(excess >= 0) and np.all(excess <= moves)
        worst.append(excess.max())
    np.testing.assert_allclose(worst, [0.0147, 0.0053, 0.0022, 0.0015], atol=2e-4)  # the chapter's 0.0015
    assert worst[-1] < worst[0] / 8
    assert np.all(np.diff(worst) < 0)
