"""Reward-curve fits and forecasts (grpo_core.laws): how long they take, and what the design choices buy.

Rows:

* ``fit_all`` (three laws, several starts each) on the real 250-step Qwen log;
* ``fit_all`` on a 100,000-step synthetic three-phase curve: the shipped path (every start searched on
  an even 2,000-point subsample, the best polished on all points) against searching every start on
  all points (the same fit, slower);
* one three-phase fit with the batched finite-difference Jacobian (one law evaluation per Jacobian)
  against scipy's own ``2-point`` differences (one evaluation per parameter);
* ``forecast`` from the first 40% of the Qwen log with the 200-refit block bootstrap, per law, and
  with the delta method (no refits);
* the time to 90% of the plateau for 200 bootstrap parameter vectors: the shared-grid vectorised
  version against the scalar search (Brent's method) in a loop.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from scipy import optimize

from bench._timing import best_of
from grpo_core import laws
from grpo_core.laws import fit as laws_fit
from grpo_core.laws import models as laws_models
from grpo_core.runs.datasets import real_log_path
from grpo_core.runs.logs import read_log


def _qwen():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, y = read_log(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth")).series("reward")
    return t.astype(float), y


def _scipy_two_point(law, t, y, starts, lb, ub):
    """The same multi-start fit with scipy's own finite differences (reference for the Jacobian)."""
    yscale = float(np.ptp(y))
    x_scale = laws_fit._typical_scales(law, t, y)
    best = None
    for x0 in starts:
        x0 = np.clip(x0, lb + 1e-9 * (ub - lb), ub - 1e-9 * (ub - lb))
        res = optimize.least_squares(lambda p: (law.evaluate(t, p) - y) / yscale, x0, jac="2-point",
                                     bounds=(lb, ub), x_scale=x_scale, method="trf", max_nfev=1600)
        if best is None or res.cost < best.cost:
            best = res
    return best


def main(quick: bool = False) -> list[dict]:
    rows: list[dict] = []
    t, y = _qwen()

    sec = best_of(lambda: laws.fit_all(t, y), 1 if quick else 3)
    rows.append({"case": f"fit_all, 3 laws, real Qwen log ({t.size} steps)", "seconds": sec})

    # Long curve: subsample search vs full search.
    n_long = 20_000 if quick else 100_000
    tl = np.arange(1, n_long + 1, dtype=float)
    truth = [0.0, 1.0, 3.0 / n_long, 0.05 * n_long]
    yl = laws.LAWS["three_phase"](tl, truth) + np.random.default_rng(0).normal(0, 0.1, n_long)
    t0 = time.perf_counter()
    cmp = laws.fit_all(tl, yl)
    fast = time.perf_counter() - t0
    saved = laws_fit._SEARCH_POINTS
    laws_fit._SEARCH_POINTS = n_long + 1
    try:
        t0 = time.perf_counter()
        cmp_full = laws.fit_all(tl, yl)
        full = time.perf_counter() - t0
    finally:
        laws_fit._SEARCH_POINTS = saved
    rows.append({
        "case": f"fit_all, 3 laws, synthetic {n_long:,}-step curve: subsample search vs all points",
        "seconds": fast, "reference_s": full, "ratio": full / fast,
        "note": f"same best law: {cmp.best == cmp_full.best}; max |d plateau| "
                f"{max(abs(cmp.results[k].plateau - cmp_full.results[k].plateau) for k in cmp.results):.1e}",
    })

    # Batched Jacobian vs scipy's 2-point differences (one three-phase multi-start fit).
    law = laws.LAWS["three_phase"]
    lb, ub = law.bounds(t, y)
    starts = law.initial_guesses(t, y)
    ours = best_of(lambda: laws_fit._solve(law, t, y, starts, lb, ub), 1 if quick else 3)
    ref = best_of(lambda: _scipy_two_point(law, t, y, starts, lb, ub), 1 if quick else 3)
    a = laws_fit._solve(law, t, y, starts, lb, ub)
    b = _scipy_two_point(law, t, y, starts, lb, ub)
    rows.append({
        "case": "three-phase fit (6 starts, 250 points): batched Jacobian vs scipy 2-point",
        "seconds": ours, "reference_s": ref, "ratio": ref / ours,
        "note": f"cost {2 * a.cost:.6g} vs {2 * b.cost:.6g} (scaled units)",
    })

    # Forecasts with the bootstrap.
    n_boot = 50 if quick else 200
    for name in ("three_phase", "exponential", "logistic"):
        sec = best_of(lambda name=name: laws.forecast(t, y, law=name, fraction=0.4, n_boot=n_boot))
        delta = best_of(lambda name=name: laws.forecast(t, y, law=name, fraction=0.4, n_boot=0))
        rows.append({
            "case": f"forecast {name}, 40% window, {n_boot} bootstrap refits vs delta method",
            "seconds": sec, "reference_s": delta, "ratio": sec / delta,
            "note": f"{1000 * (sec - delta) / n_boot:.1f} ms per refit",
        })

    # Time to 90%: vectorised vs loop.
    fit = laws.fit_law(t[:150], y[:150], "three_phase")
    params = fit.param_vector() * np.exp(np.random.default_rng(1).normal(0, 0.05, (200, 4)))
    params[:, 3] = np.abs(params[:, 3])
    vec = best_of(lambda: laws_models._time_to_fraction_batch(law, params, 0.9, span=150.0), 3)
    loop = best_of(lambda: [laws_models._time_to_fraction(law, p, 0.9) for p in params])
    v = laws_models._time_to_fraction_batch(law, params, 0.9, span=150.0)
    lo = np.array([laws_models._time_to_fraction(law, p, 0.9) for p in params])
    rows.append({
        "case": "t90 of 200 parameter vectors: shared-grid vectorised vs Brent loop",
        "seconds": vec, "reference_s": loop, "ratio": loop / vec,
        "note": f"max relative difference {np.max(np.abs(v - lo) / lo):.1e}",
    })
    return rows
