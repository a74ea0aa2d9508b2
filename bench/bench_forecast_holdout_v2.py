"""The second out-of-sample test of the plateau forecaster, as pre-registered.

``bench/results/preregistration_v2.md`` fixed, before any of these runs was seen, the runs to collect
(``grpo_core/data/holdout_runs_2``: public repositories that gave no run to the 37 runs the forecaster was
tuned on), the forecasters and the decision rules:

* ``plateau`` (A): the forecaster as shipped then, :func:`grpo_core.laws.plateau.forecast_plateau` without
  ``reward_std`` and with :data:`PRIOR_A` (the ``SHIPPED_PRIOR`` of the time), nothing tuned on these runs;
* ``plateau_std_gain`` (B): A's law average plus ``STD_GAIN * std_end * min(r, STD_CAP)``, the late gain in
  units of the logged within-group reward standard deviation (:func:`std_gain_forecast`); A where fewer than
  6 ``reward_std`` values are logged in the window;
* ``plateau_or_janoschek`` (C): the plain Janoschek anchor where it converges and stays within the window's
  range widened by half its span, else A.

The anchors are scored as in ``python -m bench forecast``. Writes ``bench/results/forecast_holdout_v2.json``.
By the pre-registered rule B won (pooled capped mean error 0.268 against A's 0.300, median at 0.4 0.099
against 0.139) and is now the product's late gain (``reward_std`` in
:func:`~grpo_core.laws.plateau.forecast_plateau`); this module keeps scoring A and B as they were defined.
"""

from __future__ import annotations

import math
import time

import numpy as np

from bench import bench_forecast as bf
from grpo_core.laws import plateau

COLLECTION = "holdout_runs_2"
#: A's prior: ``SHIPPED_PRIOR`` as pre-registered (tuned on the 37 runs before B was adopted; A never sees
#: ``reward_std``).
PRIOR_A = plateau.PlateauPrior(lam=1.0, q=2.6606, gain=0.11,
                               runs=("the 37 real runs of grpo_core/data/real_runs and grpo_core/data/holdout_runs",))
#: Variant B's gain and cap (pre-registered: tuned on the 34 of the 37 runs that log ``reward_std``).
STD_GAIN = 0.15
STD_CAP = 1.5
#: Variant C's range: the window's [min, max] widened by this share of its span on each side.
JANOSCHEK_RANGE = 0.5


def std_end(run: dict, t_end: float) -> float | None:
    """Mean of the last 20% (at least 3) of the ``reward_std`` values logged up to ``t_end``; None when
    fewer than 6 are."""
    if run.get("reward_std") is None:
        return None
    t, s = run["reward_std"]
    keep = (t <= t_end) & np.isfinite(s)
    s = s[keep]
    if s.size < 6:
        return None
    k = max(3, int(math.ceil(0.2 * s.size)))
    return float(np.mean(s[-k:]))


def remaining_time(run: dict, t: np.ndarray, horizon: float) -> float:
    """``r``: the remaining learning-rate time (steps without a schedule) from the window's end to the middle
    of the run's last 20%, in window lengths (as the plateau forecaster's late gain)."""
    t_tail = np.linspace(0.8 * horizon, horizon, 40)
    u, u_tail, _ = plateau._clock(t, t_tail, 100.0 * horizon, run["lr"])
    return float(np.mean(u_tail)) / float(u[-1]) - 1.0


def std_gain_forecast(run: dict, cut: float, fc: plateau.PlateauForecast) -> float | None:
    """Variant B's point forecast, or None where it falls back to A."""
    t, _y = bf._window(run, cut)
    s = std_end(run, float(t[-1]))
    if s is None or fc.declined is not None:
        return None
    return fc.law_mean + STD_GAIN * s * min(remaining_time(run, t, float(run["t"][-1])), STD_CAP)


def main(quick: bool = False) -> list[dict]:
    runs = bf.load_runs(COLLECTION)
    t0 = time.perf_counter()
    fits: list = []
    recs, _secs = bf.forecasts(runs, n_boot=50 if quick else 200, prior=PRIOR_A, fits=fits, use_reward_std=False)
    a = {(r["run"], r["cut"]): r for r in recs if r["method"] == "plateau"}
    jan = {(r["run"], r["cut"]): r for r in recs if r["method"] == "domhan:janoschek"}
    nan = float("nan")
    for run, cut, fc in fits:
        key = (run["id"], cut)
        base = {k: a[key][k] for k in ("run", "cut", "truth", "spread")}
        b = std_gain_forecast(run, cut, fc)
        final = a[key]["final"] if b is None else b
        recs.append({**base, "method": "plateau_std_gain", **bf._row(final, nan, nan, nan, a[key]["declined"]),
                     "fell_back": b is None})
        _t, y = bf._window(run, cut)
        lo, hi = float(np.min(y)), float(np.max(y))
        pad = JANOSCHEK_RANGE * (hi - lo)
        j = jan[key]
        use = j["declined"] is None and math.isfinite(j["final"]) and lo - pad <= j["final"] <= hi + pad
        final = j["final"] if use else a[key]["final"]
        recs.append({**base, "method": "plateau_or_janoschek", **bf._row(final, nan, nan, nan, a[key]["declined"]),
                     "fell_back": not use})
    rows = bf.summarise(recs)
    order = ["plateau", "plateau_std_gain", "plateau_or_janoschek", "product", "hold", "exponential", "logistic",
             "scalerl", "domhan_mean"]
    rows.sort(key=lambda r: (r["cut"] if r["cut"] != "all" else 9.0,
                             order.index(r["method"]) if r["method"] in order else 99, r["method"]))
    rows.append({"method": "seconds", "cut": "all", "n": len(runs), "median_err": time.perf_counter() - t0})
    return rows + bf.run_records(recs, methods=(*bf.RECORDED, "plateau_std_gain", "plateau_or_janoschek"))


if __name__ == "__main__":
    from bench.__main__ import _print_rows

    _print_rows("forecast_holdout_v2", main())
