"""Oscillator model: vectorised stochastic simulation against the plain loop, and threshold timings.

Rows:

* ``simulate`` (one array program: ``lfilter`` over all seeds; the refresh lag lifted to one cycle)
  against ``simulate_reference`` (the shipped per-seed, per-step Python loop), 256 seeds x 10,000
  steps, with the same noise numbers (the outputs are checked equal): end to end (each draws its
  own noise, one array vs one number at a time) and for the recurrence alone (noise given);
* exact threshold ``critical_a_exact``: one uncached scalar call, one memoised call, and a full
  phase-diagram grid (100 momenta x 256 refresh intervals, both lag models), against root finding on
  the spectral radius (a scan of 400 points from a = 0, then ``brentq``), per point;
* ``critical_value("k_ref", method="exact")``: the smallest unstable integer refresh interval.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import brentq

from bench._timing import best_of
from grpo_core.model import noise, stability
from grpo_core.model import oscillator as osc


def _root_finding_threshold(mu: float, k: int, lag: str) -> float:
    """Reference: first crossing of spectral radius 1 from a = 0 (scan, then brentq)."""
    grid = np.linspace(1e-6, 4.0 * (1 + mu) / k + 1e-3, 400)
    rho = stability.spectral_radius(grid, mu, k, lag)
    i = int(np.argmax(rho > 1.0))
    return brentq(lambda a: float(stability.spectral_radius(a, mu, k, lag)[()]) - 1.0, grid[i - 1], grid[i])


def main(quick: bool = False) -> list[dict]:
    n_seeds, n_steps = (64, 2000) if quick else (256, 10_000)
    rows: list[dict] = []
    for lag in ("constant", "refresh"):
        c = osc.coefficients(0.02, 0.9, 4, 1.0, lag=lag)
        kw = dict(noise_scale=1.0, group_size=8, seed=0)
        vec = best_of(lambda c=c, kw=kw: noise.simulate(c, n_steps, n_seeds, **kw), 3)
        t0 = time.perf_counter()
        ref_out = noise.simulate_reference(c, n_steps, n_seeds, **kw)
        ref = time.perf_counter() - t0
        diff = float(np.max(np.abs(noise.simulate(c, n_steps, n_seeds, **kw) - ref_out)))
        rows.append({
            "case": f"simulate {lag} lag, {n_seeds} seeds x {n_steps} steps (with noise draws)",
            "vectorised_s": vec, "loop_s": ref, "ratio": ref / vec, "max_abs_diff": diff,
        })
        # the recurrence alone: both given the same pre-drawn noise
        z = np.random.default_rng(0).standard_normal((n_seeds, n_steps))
        vec_k = best_of(
            lambda c=c, z=z: noise.simulate(c, n_steps, n_seeds, noise_scale=1.0, group_size=8, noise=z), 3
        )
        t0 = time.perf_counter()
        noise.simulate_reference(c, n_steps, n_seeds, noise_scale=1.0, group_size=8, noise=z)
        ref_k = time.perf_counter() - t0
        rows.append({"case": f"simulate {lag} lag, recurrence only (noise given)",
                     "vectorised_s": vec_k, "loop_s": ref_k, "ratio": ref_k / vec_k})
    draw = best_of(lambda: np.random.default_rng(0).standard_normal((n_seeds, n_steps)), 3)
    rows.append(
        {"case": f"noise draw alone ({n_seeds} x {n_steps} normals, shared by both)", "vectorised_s": draw}
    )

    # thresholds
    mus = np.linspace(0.0, 0.99, 100)
    ks = np.arange(1, 257)
    for lag in ("constant", "refresh"):
        rng = np.random.default_rng(1)

        def uncached(lag=lag, rng=rng):
            stability._critical_a_scalar.cache_clear()
            stability.critical_a_exact(float(rng.uniform(0, 0.99)), int(rng.integers(1, 64)), lag)

        per_call = best_of(uncached, 50)
        stability.critical_a_exact(0.5, 8, lag)
        cached = best_of(lambda lag=lag: stability.critical_a_exact(0.5, 8, lag), 200)
        grid = best_of(lambda lag=lag: stability.critical_a_exact(mus[:, None], ks[None, :], lag), 3)
        n_ref = 20 if quick else 60
        sample = [(float(rng.uniform(0, 0.95)), int(rng.integers(1, 64))) for _ in range(n_ref)]
        t0 = time.perf_counter()
        worst = 0.0
        for m, k in sample:
            a_ref = _root_finding_threshold(m, k, lag)
            worst = max(worst, abs(a_ref / float(stability.critical_a_exact(m, k, lag)[()]) - 1))
        root_per_point = (time.perf_counter() - t0) / n_ref
        rows.append(
            {
                "case": f"critical_a_exact {lag} lag",
                "per_call_ms": per_call * 1e3,
                "cached_us": cached * 1e6,
                "grid_100x256_ms": grid * 1e3,
                "grid_per_point_us": grid / (100 * 256) * 1e6,
                "root_finding_per_point_ms": root_per_point * 1e3,
                "speedup_vs_root_finding": root_per_point / (grid / (100 * 256)),
                "max_rel_diff_vs_root_finding": worst,
            }
        )
    stability._critical_a_scalar.cache_clear()
    kv = best_of(lambda: (stability._critical_a_scalar.cache_clear(),
                           stability.critical_value("k_ref", eta=1e-4, mu=0.9, curvature=1.0)), 5)
    rows.append({"case": "critical_value k_ref exact (eta*K = 1e-4, mu = 0.9; answer "
                 f"{stability.critical_value('k_ref', eta=1e-4, mu=0.9, curvature=1.0):.0f})",
                 "per_call_ms": kv * 1e3})
    return rows
