"""Out of sample: the forecasting benchmark on runs the forecaster never saw.

The runs in ``grpo_core/data/holdout_runs`` were collected from public repositories after the plateau
forecaster and its prior (:data:`grpo_core.laws.plateau.SHIPPED_PRIOR`, tuned on the 20 runs of
``grpo_core/data/real_runs``) were fixed, and take part in no tuning. Here the product's forecaster runs
exactly as shipped (``plateau``: the shipped prior, no leave-one-out) next to the same anchors as
:mod:`bench.bench_forecast`, with the same cuts, truth, error unit and statistics
(:func:`bench.bench_forecast.summarise`). Where the 20-run benchmark can only score a tuned method
leave-one-run-out, this is the test a user's run is: a forecaster tuned on other runs, applied to a new one.
A printed comparison, not a timed test.
"""

from __future__ import annotations

import json
import time

from bench import bench_forecast as bf
from grpo_core.laws import plateau

COLLECTION = "holdout_runs"


def main(quick: bool = False) -> list[dict]:
    runs = bf.load_runs(COLLECTION)
    t0 = time.perf_counter()
    recs, secs = bf.forecasts(runs, n_boot=50 if quick else 200, prior=plateau.SHIPPED_PRIOR)
    total = time.perf_counter() - t0
    rows = bf.summarise(recs)
    order = ["plateau", "product", "hold", "exponential", "logistic", "scalerl", "domhan_mean"]
    rows.sort(key=lambda r: (r["cut"] if r["cut"] != "all" else 9.0,
                             order.index(r["method"]) if r["method"] in order else 99, r["method"]))
    rows.append({"method": "runs", "cut": "all", "n": len(runs), "note": json.dumps([r["id"] for r in runs])})
    rows.append({"method": "seconds", "cut": "all", "n": len(runs),
                 "median_err": total, "note": json.dumps({k: round(v, 1) for k, v in secs.items()})})
    return rows + bf.run_records(recs)


if __name__ == "__main__":
    from bench.__main__ import _print_rows

    _print_rows("forecast_holdout", main())
