"""The oscillator model (grpo_core.model.oscillator) and its exact stability (grpo_core.model.stability).

Equation references are to the book chapter "From update rule to
oscillator" (book/oscillator.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from grpo_core.errors import ParameterError
from grpo_core.model import noise, stability, trajectories
from grpo_core.model import oscillator as osc
from grpo_core.model.advice import advise

# ---------------------------------------------------------------------------------------------
# Closed-form step response
# ---------------------------------------------------------------------------------------------


def _ode_response(m, c, k, t):
    sol = solve_ivp(lambda s, y: [y[1], (-c * y[1] - k * y[0]) / m], (0, t[-1]), [1.0, 0.0],
                    t_eval=t, rtol=1e-11, atol=1e-13)
    return sol.y[0]


@pytest.mark.parametrize("zeta", [3.0, 1.5, 1.0 + 1e-9, 1.0, 1.0 - 1e-9, 0.7, 0.2, 0.02, -0.05])
@pytest.mark.parametrize("m,k", [(1.0, 1.0), (0.6, 0.02), (2.5, 0.003)])
def test_relaxation_solves_the_ode_in_every_regime(zeta, m, k):
    c = zeta * 2.0 * math.sqrt(m * k)
    t = np.linspace(0.0, 12.0 * math.sqrt(m / k), 80)
    got = osc.relaxation(t, m, c, k)
    ref = _ode_response(m, c, k, t)
    assert np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))) < 1e-7


def test_relaxation_is_continuous_through_critical_damping():
    # (1 + t) e^{-t} exactly at critical damping (M = 1, C = 2, K = 1); the neighbours agree to O(dz).
    t = np.linspace(0.0, 30.0, 301)
    exact = (1.0 + t) * np.exp(-t)
    for dz in (0.0, 1e-15, -1e-15, 1e-12, -1e-12, 1e-8, -1e-8):
        got = osc.relaxation(t, 1.0, 2.0 * (1.0 + dz), 1.0)
        assert np.all(np.isfinite(got))
        assert np.max(np.abs(got - exact)) < 1e-12 + 10 * abs(dz)


def test_relaxation_first_order_limit_and_rest_before_zero():
    t = np.array([-5.0, 0.0, 0.5, 3.0, 40.0])
    first = osc.relaxation(t, 0.0, 2.0, 1.0)
    assert first.tolist()[:2] == [1.0, 1.0]
    np.testing.assert_allclose(first[2:], np.exp(-t[2:] / 2.0), rtol=1e-14)
    # a tiny mass tends to the same curve (no overflow of the fast root)
    np.testing.assert_allclose(osc.relaxation(t, 1e-12, 2.0, 1.0), first, rtol=1e-9, atol=1e-14)


def test_relaxation_zero_initial_slope_and_plateau():
    m, c, k = 1.3, 0.9, 0.05
    h = 1e-4
    slope = (osc.relaxation(h, m, c, k) - 1.0) / h
    assert abs(float(slope)) < 1e-3  # e'(0) = 0: the slow start
    assert abs(float(osc.relaxation(5000.0, m, c, k))) < 1e-12


def test_relaxation_broadcasts():
    out = osc.relaxation(np.arange(5)[:, None], np.array([0.5, 1.0, 2.0]), 1.0, 0.1)
    assert out.shape == (5, 3)


def test_reward_curve_scale():
    t = np.array([0.0, 10.0, 1e4])
    r = osc.reward_curve(t, 0.2, 0.7, 1.0, 1.0, 0.1)
    assert r[0] == pytest.approx(0.2) and r[-1] == pytest.approx(0.7)
    assert r[1] == pytest.approx(0.7 - 0.5 * float(osc.relaxation(10.0, 1.0, 1.0, 0.1)))


@pytest.mark.parametrize("kwargs,name", [
    (dict(t=[0, np.nan], mass=1, damping=1, stiffness=1), "t"),
    (dict(t=[0, 1], mass=-1, damping=1, stiffness=1), "mass"),
    (dict(t=[0, 1], mass=1, damping=np.inf, stiffness=1), "damping"),
    (dict(t=[0, 1], mass=1, damping=1, stiffness=-0.1), "stiffness"),
    (dict(t=[0, 1], mass=0, damping=-1, stiffness=1), "damping"),
    (dict(t=[0, 1, 2], mass=[1, 2], damping=1, stiffness=1), "t"),
])
def test_relaxation_refuses_bad_input(kwargs, name):
    with pytest.raises(ParameterError) as err:
        osc.relaxation(**kwargs)
    assert err.value.parameter == name and f"`{name}`" in str(err.value)


@pytest.mark.parametrize("call,name,shapes", [
    (lambda: osc.reward_curve([0, 1, 2], [0.1, 0.2], 0.7, 1, 1, 1), "r0", "(2,), (), (3,)"),
    (lambda: osc.classify_regime([0.5, 2.0], [1.0, 1.0, 1.0]), "damping_ratio", "(2,), (3,)"),
    (lambda: stability.critical_a_exact([0.1, 0.2], [1, 2, 3]), "mu", "(2,), (3,)"),
    (lambda: stability.critical_a_continuous([0.1, 0.2], [1, 2, 3]), "mu", "(2,), (3,)"),
    (lambda: stability.critical_a_damping([0.1, 0.2], [1, 2, 3]), "mu", "(2,), (3,)"),
    (lambda: stability.spectral_radius([0.1, 0.2], [0.5, 0.5, 0.5], 1), "a", "(2,), (3,), ()"),
    (lambda: stability.monodromy([0.1, 0.2], [0.5, 0.5, 0.5], 2), "a", "(2,), (3,), ()"),
])
def test_shapes_that_do_not_broadcast_are_named(call, name, shapes):
    # numpy's "shape mismatch" ValueError before
    with pytest.raises(ParameterError, match="must broadcast together") as err:
        call()
    assert err.value.parameter == name and f"got shapes {shapes}" in str(err.value)
    # shapes that do broadcast still give the broadcast result
    assert stability.critical_a_exact([[0.0], [0.5]], [1, 2]).round(6).tolist() == [
        [1.0, 0.618034],
        [0.5, 0.280776],
    ]


@settings(max_examples=60, deadline=None)
@given(m=st.floats(0.5, 5.0), k=st.floats(1e-3, 1.0), zeta=st.floats(0.05, 6.0))
def test_relaxation_envelope_property(m, k, zeta):
    """Stable responses stay in their envelope: monotone in [0, 1] when zeta >= 1, else |e| <= the
    envelope exp(-gamma t) sqrt(1 + gamma^2 / omega^2)."""
    c = zeta * 2.0 * math.sqrt(m * k)
    t = np.linspace(0, 20 * math.sqrt(m / k), 400)
    e = osc.relaxation(t, m, c, k)
    if zeta >= 1.0:
        assert np.all(np.diff(e) <= 1e-12) and e.min() >= -1e-12 and e.max() <= 1.0
    else:
        gamma = c / (2 * m)
        omega = math.sqrt(4 * m * k - c * c) / (2 * m)
        env = np.exp(-gamma * t) * math.sqrt(1 + (gamma / omega) ** 2)
        assert np.all(np.abs(e) <= env * (1 + 1e-9) + 1e-12)


# ---------------------------------------------------------------------------------------------
# Coefficients and regimes
# ---------------------------------------------------------------------------------------------


def test_coefficients_follow_design_section_4():
    # by hand: a = 0.03 * 2 = 0.06; M = (1 + 0.6 + 0.06 * 25) / 2 = 1.55; C = 1 - 0.6 - 0.06 * 5 = 0.1;
    # zeta = 0.1 / (2 sqrt(1.55 * 0.06)) = 0.1 / (2 * 0.3049590...) = 0.1639565
    c = osc.coefficients(0.03, 0.6, 5, 2.0)
    assert (c.a, c.mass, c.stiffness) == pytest.approx((0.06, 1.55, 0.06), abs=1e-15)
    assert c.damping == pytest.approx(0.1, abs=1e-15)
    assert c.damping_ratio == pytest.approx(0.1639565, abs=1e-7)
    assert c.regime == "underdamped"


def test_refresh_lag_uses_the_cycle_moments():
    # lags 0..7: mean 28/8 = 3.5, mean square 140/8 = 17.5; C = 0.5 - 0.035, M = (1.5 + 0.175) / 2
    c = osc.coefficients(0.01, 0.5, 8, 1.0, lag="refresh")
    assert (c.lag_mean, c.lag_mean_square) == (3.5, 17.5)
    assert c.damping == pytest.approx(0.465, abs=1e-15)
    assert c.mass == pytest.approx(0.8375, abs=1e-15)


def test_ema_momentum_threshold_is_eta_k_kref_below_one():
    # C = (1 - mu)(1 - a K_ref) for EMA momentum: the sign does not depend on mu.
    for mu in (0.0, 0.5, 0.9, 0.99):
        below = osc.coefficients(0.99 / 4, mu, 4, 1.0, momentum="ema")
        above = osc.coefficients(1.01 / 4, mu, 4, 1.0, momentum="ema")
        assert below.damping > 0 > above.damping
        assert below.damping == pytest.approx((1 - mu) * (1 - 0.99))
    assert float(stability.critical_a_continuous(0.9, 4, momentum="ema")[()]) == pytest.approx(0.25)


def test_beta_adds_kl_stiffness():
    base = osc.coefficients(0.01, 0.5, 2, 1.0)
    assert osc.coefficients(0.01, 0.5, 2, 1.0, beta=0.0).a == base.a
    with_kl = osc.coefficients(0.01, 0.5, 2, 1.0, beta=0.5, kl_curvature=2.0)
    assert with_kl.stiffness_per_eta == pytest.approx(2.0) and with_kl.a == pytest.approx(0.02)


@settings(max_examples=200, deadline=None)
@given(eta=st.floats(1e-4, 0.5), mu=st.floats(0.0, 0.99), k_ref=st.integers(1, 32),
       curvature=st.floats(0.05, 5.0), lag=st.sampled_from(["constant", "refresh"]),
       momentum=st.sampled_from(["heavy_ball", "ema"]))
def test_regime_labels_agree_with_the_eigenvalues(eta, mu, k_ref, curvature, lag, momentum):
    c = osc.coefficients(eta, mu, k_ref, curvature, lag=lag, momentum=momentum)
    roots = np.roots([c.mass, c.damping, c.stiffness])
    if c.regime == "unstable":
        assert np.max(roots.real) >= -1e-12
        return
    assert np.max(roots.real) < 0
    complex_pair = abs(roots[0].imag) > 1e-12 * max(1.0, abs(roots[0]))
    if c.regime == "underdamped":
        assert complex_pair
    elif c.regime == "overdamped":
        assert not complex_pair
    else:  # critically damped: within CRITICAL_TOLERANCE of a double root
        assert abs(c.damping_ratio - 1) <= osc.CRITICAL_TOLERANCE


def test_critically_damped_eta_is_zeta_one():
    for lag in ("constant", "refresh"):
        for momentum in ("heavy_ball", "ema"):
            for mu, k in [(0.0, 1), (0.5, 4), (0.9, 16)]:
                a = float(stability.critical_a_damping(mu, k, lag, momentum)[()])
                c = osc.coefficients(a, mu, k, 1.0, lag=lag, momentum=momentum)
                assert c.damping_ratio == pytest.approx(1.0, abs=1e-10)
                assert c.regime == "critically_damped"


# ---------------------------------------------------------------------------------------------
# Exact thresholds
# ---------------------------------------------------------------------------------------------

REFERENCE_TABLE = {  # a* d / (1 - mu): the reference table of the oscillator chapter
    0.0: [1.000, 1.236, 1.389, 1.476, 1.523],
    0.5: [1.000, 1.123, 1.247, 1.361, 1.448],
    0.9: [1.000, 1.025, 1.060, 1.115, 1.198],
}


@pytest.mark.parametrize("mu", sorted(REFERENCE_TABLE))
def test_design_table_to_three_decimals(mu):
    d = np.array([1, 2, 4, 8, 16])
    ratio = stability.critical_a_exact(mu, d) * d / (1 - mu)
    np.testing.assert_array_equal(np.round(ratio, 3), REFERENCE_TABLE[mu])


def test_d_equals_one_threshold_is_one_minus_mu():
    mu = np.linspace(0.0, 0.99, 100)
    np.testing.assert_allclose(stability.critical_a_exact(mu, 1), 1 - mu, rtol=1e-13, atol=1e-15)


def test_mu_zero_threshold_is_two_sines():
    d = np.arange(1, 65)
    np.testing.assert_allclose(
        stability.critical_a_exact(0.0, d), 2 * np.sin(np.pi / (2 * (2 * d + 1))), rtol=1e-13
    )


def test_refresh_lag_mu_zero_is_two_over_kref_and_kref_one_is_heavy_ball():
    k = np.arange(1, 65)
    np.testing.assert_allclose(stability.critical_a_exact(0.0, k, lag="refresh"), 2.0 / k, rtol=1e-13)
    mu = np.linspace(0, 0.99, 50)
    np.testing.assert_allclose(stability.critical_a_exact(mu, 1, lag="refresh"), 2 * (1 + mu), rtol=1e-13)


def _first_crossing_by_root_finding(mu, k, lag, momentum, a_max):
    """Independent reference: dense scan of the spectral radius from a = 0, then brentq."""
    grid = np.linspace(a_max * 1e-4, a_max, 1500)
    rho = stability.spectral_radius(grid, mu, k, lag, momentum)
    i = int(np.argmax(rho > 1.0))
    assert rho[i] > 1.0, "no crossing in the scan"
    return brentq(lambda a: float(stability.spectral_radius(a, mu, k, lag, momentum)[()]) - 1.0,
                  grid[i - 1], grid[i], xtol=1e-14)


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("momentum", ["heavy_ball", "ema"])
def test_closed_form_thresholds_match_root_finding_on_the_spectral_radius(lag, momentum):
    for mu in (0.0, 0.3, 0.7, 0.9, 0.97):
        for k in (1, 2, 3, 5, 9, 17, 33):
            a_star = float(stability.critical_a_exact(mu, k, lag, momentum)[()])
            ref = _first_crossing_by_root_finding(mu, k, lag, momentum, 1.5 * a_star)
            assert a_star == pytest.approx(ref, rel=1e-8), (mu, k)


def test_monodromy_equals_the_product_of_per_step_maps():
    """The closed-form one-cycle map equals the product of the simulator's own per-step maps
    (noise._step_maps), and those maps reproduce the simulator's trajectory step by step."""
    rng = np.random.default_rng(0)
    for _ in range(30):
        mu, k, a = rng.uniform(0, 0.99), int(rng.integers(1, 40)), rng.uniform(0.01, 1)
        c = osc.coefficients(a, mu, k, 1.0, lag="refresh")
        maps, _ = noise._step_maps(c)
        prod = np.eye(3)
        for step in maps:
            prod = step @ prod
        # on states (e_s, e_{s-1}, snapshot) the 3x3 product acts on (e_s, e_{s-1}) alone
        embed = np.array([[1, 0], [0, 1], [1, 0.0]])
        np.testing.assert_allclose((prod @ embed)[:2], stability.monodromy(a, mu, k), atol=1e-10)
        x, path = np.ones(3), [1.0]
        for j in range(3 * k):
            x = maps[j % k] @ x
            path.append(x[0])
        np.testing.assert_allclose(path, noise.simulate_reference(c, 3 * k)[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lag", ["constant", "refresh"])
def test_just_below_is_stable_and_just_above_is_not(lag):
    for mu in (0.0, 0.5, 0.9):
        for k in (1, 2, 4, 8, 16):
            a = float(stability.critical_a_exact(mu, k, lag)[()])
            below, above = stability.spectral_radius([a * (1 - 1e-6), a * (1 + 1e-6)], mu, k, lag)
            assert below < 1.0 < above


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("momentum", ["heavy_ball", "ema"])
def test_exact_threshold_decreases_with_k_ref(lag, momentum):
    a = stability.critical_a_exact(
        np.linspace(0, 0.99, 60)[:, None], np.arange(1, 129)[None, :], lag, momentum
    )
    assert np.all(np.diff(a, axis=1) < 0)


def test_exact_constant_lag_is_more_permissive_than_the_paper():
    # for d >= 2 the exact threshold is above the continuous one
    mu = np.linspace(0, 0.99, 40)[:, None]
    d = np.arange(2, 65)[None, :]
    assert np.all(stability.critical_a_exact(mu, d) > stability.critical_a_continuous(mu, d))


def test_ema_exact_threshold_is_heavy_ball_scaled():
    mu, k = np.array([0.0, 0.5, 0.9]), 6
    for lag in ("constant", "refresh"):
        np.testing.assert_allclose(stability.critical_a_exact(mu, k, lag, "ema") * (1 - mu),
                                   stability.critical_a_exact(mu, k, lag, "heavy_ball"), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# critical_value round trips
# ---------------------------------------------------------------------------------------------


def _stable(eta, mu, k_ref, curvature, lag="constant", momentum="heavy_ball", beta=0.0):
    c = osc.coefficients(eta, mu, k_ref, curvature, beta, lag=lag, momentum=momentum)
    return bool(stability.is_stable_exact(c.a, c.mu, c.k_ref, lag, momentum)[()])


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("momentum", ["heavy_ball", "ema"])
def test_critical_value_round_trips(lag, momentum):
    kw = dict(lag=lag, momentum=momentum)
    eta_star = stability.critical_value("eta", mu=0.7, k_ref=6, curvature=1.5, **kw)
    assert _stable(eta_star * (1 - 1e-7), 0.7, 6, 1.5, **kw) and not _stable(
        eta_star * (1 + 1e-7), 0.7, 6, 1.5, **kw
    )
    curv_star = stability.critical_value("curvature", eta=0.02, mu=0.7, k_ref=6, **kw)
    assert curv_star == pytest.approx(eta_star * 1.5 / 0.02, rel=1e-12)
    k_star = stability.critical_value("k_ref", eta=0.02, mu=0.7, curvature=1.5, **kw)
    assert k_star == int(k_star) and k_star > 1
    assert _stable(0.02, 0.7, int(k_star) - 1, 1.5, **kw) and not _stable(0.02, 0.7, int(k_star), 1.5, **kw)
    # mu: with EMA momentum the threshold hardly depends on mu, so use a step size near it
    eta_mu = 0.02 if momentum == "heavy_ball" else 0.95 * eta_star
    mu_star = stability.critical_value("mu", eta=eta_mu, k_ref=6, curvature=1.5, **kw)
    if mu_star == 0.0:  # documented: already unstable at mu = 0 (here refresh + EMA, where mu stabilises)
        assert not _stable(eta_mu, 0.0, 6, 1.5, **kw) and _stable(eta_mu, 0.7, 6, 1.5, **kw)
        return
    assert 0 < mu_star < 1
    assert _stable(eta_mu, mu_star - 1e-6, 6, 1.5, **kw)
    assert not _stable(eta_mu, min(mu_star + 1e-6, 0.999999), 6, 1.5, **kw)


def test_critical_value_mu_never_unstable_is_inf():
    # EMA momentum, a K_ref = 0.18 < 1: stable for every mu (continuous and exact)
    assert stability.critical_value("mu", eta=0.02, k_ref=6, curvature=1.5, momentum="ema") == math.inf
    assert stability.critical_value("mu", eta=0.02, k_ref=6, curvature=1.5, momentum="ema",
                                    method="continuous") == math.inf


def test_critical_value_continuous_is_the_paper_formula():
    for eta, mu, curv in [(0.01, 0.9, 1.0), (0.003, 0.5, 7.0), (0.1, 0.0, 0.3)]:
        k = stability.critical_value("k_ref", eta=eta, mu=mu, curvature=curv, method="continuous")
        assert k == pytest.approx(max(1.0, (1 - mu) / (eta * curv)), rel=1e-12)
        e = stability.critical_value("eta", mu=mu, k_ref=4, curvature=curv, method="continuous")
        assert e == pytest.approx((1 - mu) / (curv * 4), rel=1e-12)
        m = stability.critical_value("mu", eta=eta, k_ref=4, curvature=curv, method="continuous")
        assert m == pytest.approx(max(0.0, 1 - eta * curv * 4), abs=1e-9)


def test_critical_value_with_the_kl_term_alone_too_stiff():
    # a* = 1 - mu = 0.5 at k_ref = 1; beta * kl_curvature = 100 with eta = 0.01 already gives a = 1.
    assert stability.critical_value("curvature", eta=0.01, mu=0.5, k_ref=1, beta=100.0) == 0.0


def test_critical_value_refuses_ambiguous_requests():
    with pytest.raises(ParameterError) as err:
        stability.critical_value("eta", eta=0.1, mu=0.5, k_ref=2, curvature=1.0)
    assert err.value.parameter == "eta"
    with pytest.raises(ParameterError) as err:
        stability.critical_value("eta", mu=0.5, k_ref=2)
    assert err.value.parameter == "curvature"
    with pytest.raises(ParameterError) as err:
        stability.critical_value("beta", eta=0.1, mu=0.5, k_ref=2, curvature=1.0, beta=0.1)
    assert err.value.parameter == "beta"
    with pytest.raises(ParameterError) as err:
        stability.critical_value("damping", eta=0.1, mu=0.5, k_ref=2, curvature=1.0)
    assert err.value.parameter == "parameter"


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("method", ["exact", "continuous"])
def test_critical_beta_is_where_the_kl_stiffness_crosses_the_threshold(lag, method):
    kw = dict(eta=0.02, mu=0.5, k_ref=3, curvature=2.0, kl_curvature=4.0, lag=lag, method=method)
    b_star = stability.critical_value("beta", **kw)
    a_star = (stability.critical_a_exact if method == "exact" else stability.critical_a_continuous)(
        0.5, 3, lag
    )
    assert b_star == pytest.approx((float(a_star) / 0.02 - 2.0) / 4.0, rel=1e-12)
    # eta solved back at that beta gives the same eta: the two are one boundary
    back = {k: v for k, v in kw.items() if k != "eta"}
    assert stability.critical_value("eta", beta=b_star, **back) == pytest.approx(0.02, rel=1e-10)
    if method == "exact":
        for beta, stable in ((0.99 * b_star, True), (1.01 * b_star, False)):
            c = osc.coefficients(0.02, 0.5, 3, 2.0, beta, kl_curvature=4.0, lag=lag)
            assert bool(stability.is_stable_exact(c.a, 0.5, 3, lag)) is stable
    # already unstable without the KL term: 0
    assert stability.critical_value("beta", **{**kw, "eta": 10.0}) == 0.0
    with pytest.raises(ParameterError):
        stability.critical_value("eta", mu=0.5, k_ref=2, curvature=1.0, method="approximate")


# ---------------------------------------------------------------------------------------------
# Trajectories
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("mu,k_ref", [(0.0, 1), (0.5, 4), (0.9, 8)])
def test_closed_form_agrees_with_the_discrete_recurrence_at_small_a(lag, mu, k_ref):
    # Taylor expansion error is O(a k_ref): at a k_ref <= 1e-3 (1 - mu) the paths agree to ~1e-3.
    eta = 1e-3 * (1 - mu) / k_ref
    c = osc.coefficients(eta, mu, k_ref, 1.0, lag=lag)
    n = int(4 * trajectories.time_to_fraction(c, 0.99))
    disc = trajectories.discrete_trajectory(c, n)
    cont = trajectories.closed_form_trajectory(c, np.arange(n + 1))
    assert np.max(np.abs(disc - cont)) < 2e-3


def test_discrete_recurrence_matches_hand_computation():
    c = osc.coefficients(0.05, 0.5, 2, 1.0)
    # e1 = 1 - 0.05 e0; e2 = e1 + 0.5 (e1 - e0) - 0.05 e0; e3 = e2 + 0.5 (e2 - e1) - 0.05 e1
    e1 = 0.95
    e2 = e1 + 0.5 * (e1 - 1.0) - 0.05
    e3 = e2 + 0.5 * (e2 - e1) - 0.05 * 1.0  # lag 2 at step 2 reads e0
    np.testing.assert_allclose(trajectories.discrete_trajectory(c, 3), [1.0, e1, e2, e3], rtol=1e-14)


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("momentum", ["heavy_ball", "ema"])
def test_vectorised_simulation_equals_the_plain_loop(lag, momentum):
    c = osc.coefficients(0.03, 0.6, 3, 1.2, lag=lag, momentum=momentum)
    kw = dict(noise_scale=0.7, group_size=4, e0=0.5, seed=11)
    np.testing.assert_allclose(noise.simulate(c, 400, 7, **kw), noise.simulate_reference(c, 400, 7, **kw),
                               rtol=1e-10, atol=1e-12)


def test_several_configurations_equal_separate_runs():
    confs = [osc.coefficients(0.02, 0.5, k, 1.0, lag=lag) for k in (1, 3) for lag in ("constant", "refresh")]
    together = noise.simulate(confs, 200, 5, noise_scale=1.0, group_size=8, seed=3)
    assert together.shape == (4, 5, 201)
    draws = np.random.default_rng(3).standard_normal((4, 5, 200))  # the one (C, S, T) draw
    for i, c in enumerate(confs):
        alone = noise.simulate_reference(c, 200, 5, noise_scale=1.0, group_size=8, noise=draws[i])
        np.testing.assert_allclose(together[i], alone, rtol=1e-10, atol=1e-12)
    # the first configuration of a batch sees the same draws as a single run with that seed
    np.testing.assert_allclose(
        together[0], noise.simulate(confs[0], 200, 5, noise_scale=1.0, group_size=8, seed=3)
    )


@pytest.mark.parametrize("k_ref", [1, 2, 7, 50])
@pytest.mark.parametrize("n_steps", [1, 6, 7, 8, 120])
def test_lifted_refresh_simulation_edges(k_ref, n_steps):
    # cycles longer than the run, runs ending mid-cycle, k_ref = 1 (no lag): all equal the plain loop
    c = osc.coefficients(0.04, 0.8, k_ref, 1.0, lag="refresh")
    kw = dict(noise_scale=1.0, group_size=2, e0=-0.3, seed=4)
    np.testing.assert_allclose(noise.simulate(c, n_steps, 3, **kw), noise.simulate_reference(c, n_steps, 3, **kw),
                               rtol=1e-10, atol=1e-12)


def test_simulation_is_reproducible_and_deterministic_without_noise():
    c = osc.coefficients(0.02, 0.5, 3, 1.0)
    a = noise.simulate(c, 100, 4, noise_scale=1.0, seed=5)
    b = noise.simulate(c, 100, 4, noise_scale=1.0, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    quiet = noise.simulate(c, 100, 3)
    np.testing.assert_array_equal(quiet[0], quiet[2])


def test_unstable_overflow_warns_instead_of_silent_nan():
    c = osc.coefficients(1.5, 0.5, 2, 1.0)
    with pytest.warns(RuntimeWarning, match="overflow"):
        noise.simulate(c, 5000, 2)


# ---------------------------------------------------------------------------------------------
# Noise: stationary variance
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lag", ["constant", "refresh"])
@pytest.mark.parametrize("momentum", ["heavy_ball", "ema"])
def test_stationary_variance_matches_simulation(lag, momentum):
    c = osc.coefficients(0.04, 0.5, 3, 1.0, lag=lag, momentum=momentum)
    paths = noise.simulate(c, 6000, 200, noise_scale=1.0, group_size=4, seed=7)[:, 1000:]
    measured = paths.var()
    exact = noise.stationary_variance_exact(c, 1.0, 4)
    # sampling error: ~200 seeds x ~(5000 / correlation time) effectively independent samples
    tau = max(10.0, 2 * c.mass / c.damping)
    n_eff = 200 * 5000 / (2 * tau)
    assert measured == pytest.approx(exact, rel=5 * math.sqrt(2 / n_eff))
    # the continuous formula is close at this small a (a K_ref = 0.12)
    assert noise.stationary_variance(c, 1.0, 4) == pytest.approx(exact, rel=0.05)


def test_stationary_variance_scales_as_one_over_group_size():
    c = osc.coefficients(0.03, 0.7, 2, 1.0)
    v = {g: noise.stationary_variance_exact(c, 1.0, g) for g in (1, 4, 16)}
    assert v[4] / v[16] == pytest.approx(4.0, rel=1e-12) and v[1] / v[4] == pytest.approx(4.0, rel=1e-12)
    assert noise.stationary_variance(c, 1.0, 4) / noise.stationary_variance(c, 1.0, 16) == pytest.approx(4.0)
    sims = {
        g: noise.simulate(c, 4000, 128, noise_scale=1.0, group_size=g, seed=1)[:, 800:].var() for g in (4, 16)
    }
    assert sims[4] / sims[16] == pytest.approx(4.0, rel=0.1)


def test_stationary_variance_formula_design_form_and_limits():
    eta, s, g = 0.02, 1.3, 8
    c = osc.coefficients(eta, 0.4, 2, 1.0)
    assert noise.stationary_variance(c, s, g) == pytest.approx(eta**2 * s**2 / (2 * g * c.a * c.damping))
    assert noise.stationary_variance(osc.coefficients(0.5, 0.4, 2, 1.0), s, g) == math.inf
    assert noise.stationary_variance_exact(osc.coefficients(0.5, 0.4, 2, 1.0), s, g) == math.inf
    # mass-independence of the continuous formula: same C and K, different M via the lag model
    a = osc.coefficients(0.01, 0.0, 1, 1.0)
    np.testing.assert_allclose(noise.stationary_variance(a, 1, 1), 1e-4 / (2 * a.damping * a.stiffness))


@pytest.mark.parametrize("lag", ["constant", "refresh"])
def test_variance_trajectory_tends_to_the_stationary_value(lag):
    c = osc.coefficients(0.05, 0.5, 4, 1.0, lag=lag)
    v = noise.variance_trajectory(c, 4000, 1.0, 4)
    assert v[0] == 0.0
    assert v[-4 * 4:].mean() == pytest.approx(noise.stationary_variance_exact(c, 1.0, 4), rel=2e-3)


# ---------------------------------------------------------------------------------------------
# Time scales
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eta,mu,k_ref", [(0.01, 0.0, 1), (0.01, 0.9, 4), (0.002, 0.5, 2), (0.05, 0.5, 1)])
def test_time_to_fraction_is_the_first_passage(eta, mu, k_ref):
    c = osc.coefficients(eta, mu, k_ref, 1.0)
    t90 = trajectories.time_to_fraction(c, 0.9)
    grid = np.linspace(0, 2 * t90, 200001)
    first = grid[np.argmax(osc.relaxation(grid, c.mass, c.damping, c.stiffness) <= 0.1)]
    step = 2 * t90 / 200000
    assert t90 <= first + 1e-9 and first - t90 <= step * 1.001
    disc = trajectories.time_to_fraction(c, 0.9, method="discrete")
    path = trajectories.discrete_trajectory(c, int(disc) + 1)
    assert path[int(disc)] <= 0.1 < path[int(disc) - 1]


def test_settling_time_is_the_last_exit_from_the_band():
    c = osc.coefficients(0.05, 0.9, 1, 1.0)
    ts = trajectories.settling_time(c, 0.1)
    grid = np.linspace(0, 3 * ts, 300001)
    e = osc.relaxation(grid, c.mass, c.damping, c.stiffness)
    last = grid[np.nonzero(np.abs(e) > 0.1)[0][-1]]
    assert ts == pytest.approx(last, abs=3 * ts / 300000 * 2)
    mono = osc.coefficients(0.001, 0.0, 1, 1.0)
    assert trajectories.settling_time(mono, 0.1) == pytest.approx(trajectories.time_to_fraction(mono, 0.9))


def test_unstable_has_no_plateau():
    c = osc.coefficients(0.2, 0.5, 4, 1.0)
    assert trajectories.time_to_fraction(c) == math.inf
    assert trajectories.time_to_fraction(c, method="discrete") == math.inf
    assert trajectories.settling_time(c) == math.inf


# ---------------------------------------------------------------------------------------------
# Bad hyperparameters (case 08) and other invalid input
# ---------------------------------------------------------------------------------------------


def _case08_rows(case):
    return case("08-bad-hyperparameters")["input"]


def test_case_08_bad_hyperparameters_library(case):
    for row in _case08_rows(case):
        args = {k: row[k] for k in ("eta", "mu", "k_ref", "curvature")}
        for func in (osc.coefficients, advise):
            with pytest.raises(ParameterError) as err:
                func(**args)
            assert err.value.parameter == row["bad"]
            msg = str(err.value)
            assert f"`{row['bad']}`" in msg and ("must be" in msg)
        others = {k: v for k, v in args.items() if k != "eta"}
        if row["bad"] != "eta":
            with pytest.raises(ParameterError) as err:
                stability.critical_value("eta", **others)
            assert err.value.parameter == row["bad"]


@pytest.mark.parametrize(
    "bad,name",
    [
        (dict(eta=-0.1), "eta"),
        (dict(eta=float("inf")), "eta"),
        (dict(mu=-0.1), "mu"),
        (dict(mu=float("nan")), "mu"),
        (dict(k_ref=-3), "k_ref"),
        (dict(k_ref="4.5"), "k_ref"),
        (dict(k_ref=True), "k_ref"),
        (dict(curvature=0.0), "curvature"),
        (dict(beta=-1.0), "beta"),
        (dict(kl_curvature=0.0), "kl_curvature"),
        (dict(lag="stale"), "lag"),
        (dict(momentum="adam"), "momentum"),
    ],
)
def test_every_hyperparameter_is_validated(bad, name):
    kw = dict(eta=0.01, mu=0.9, k_ref=4, curvature=1.0) | bad
    with pytest.raises(ParameterError) as err:
        osc.coefficients(**kw)
    assert err.value.parameter == name


def test_array_functions_validate():
    with pytest.raises(ParameterError, match="`mu`"):
        stability.critical_a_exact([0.5, 1.0], 2)
    with pytest.raises(ParameterError, match="`k_ref`"):
        stability.critical_a_exact(0.5, [1, 2.5])
    with pytest.raises(ParameterError, match="`a`"):
        stability.spectral_radius(-0.1, 0.5, 2)
    c = osc.coefficients(0.01, 0.5, 2, 1.0)
    for kw, name in [(dict(group_size=0), "group_size"), (dict(noise_scale=-1.0), "noise_scale"),
                     (dict(n_seeds=0), "n_seeds"), (dict(e0=float("nan")), "e0")]:
        with pytest.raises(ParameterError) as err:
            noise.simulate(c, 10, **({"n_seeds": 1} | kw))
        assert err.value.parameter == name
    with pytest.raises(ParameterError):
        noise.stationary_variance(c, 1.0, 0)
    with pytest.raises(ParameterError):
        noise.simulate("not coefficients", 10)
    with pytest.raises(ParameterError):
        trajectories.time_to_fraction(c, 1.0)


def test_k_ref_beyond_2_to_the_40_is_refused_not_wrapped():
    # 2**64 wrapped to a negative lag in int64 arithmetic and gave a wrong 'underdamped'
    for call in (lambda: osc.coefficients(0.1, 0.5, 2**64, 1.0),
                 lambda: stability.critical_a_exact(0.5, 2**70, "refresh"),
                 lambda: advise(0.1, 0.5, 2**70, 1.0)):
        with pytest.raises(ParameterError, match="`k_ref` must be an integer in \\[1, "):
            call()
    assert osc.coefficients(1e-13, 0.5, 2**40, 1.0).k_ref == 2**40


def test_variance_of_an_unstable_setting_is_inf_with_a_warning_never_nan():
    with pytest.warns(RuntimeWarning, match="overflowed float64"):
        v = noise.variance_trajectory(osc.coefficients(10.0, 0.9, 16, 1.0), 5000, 1.0, 8)
    assert not np.isnan(v).any() and np.isinf(v[-1])
    first = int(np.argmax(np.isinf(v)))
    assert np.all(np.isinf(v[first:])) and np.all(np.isfinite(v[:first]))


def test_advise_exactly_at_the_critical_eta_does_not_claim_growth():
    eta_c = stability.critical_value("eta", mu=0.5, k_ref=4, curvature=1.0)
    rec = advise(eta_c, 0.5, 4, 1.0).recommendation
    assert "grow by a factor 1 -" not in rec
    assert rec.startswith("ON THE THRESHOLD") or rec.startswith("Stable")


def test_simulations_too_large_for_memory_are_refused_up_front():
    c = osc.coefficients(0.01, 0.5, 2, 1.0)
    for call in (lambda: noise.simulate(c, 10**12), lambda: trajectories.discrete_trajectory(c, 10**12),
                 lambda: noise.simulate(c, 10**6, 10**4, noise_scale=1.0)):
        with pytest.raises(ParameterError, match="GiB \\(limit 4 GiB\\)") as err:
            call()
        assert err.value.parameter == "n_steps"
