"""Forecasting the end of real runs: our plateau forecaster against the anchors a user would pick.

For every shipped real run (grpo_core/data/real_runs, 20 runs, and grpo_core/data/holdout_runs, 17
runs collected later: 37) and cut fractions 0.2, 0.4, 0.6,
each method sees the first cut of the steps and forecasts the mean reward over the last 20% of the
run (the truth). Error: ``|forecast - truth|`` divided by the run's spread (p95 - p5 of its 10-step
rolling mean). Rows, per method and cut: the median error of the forecast of the run's end
(``final``: the fitted curve averaged over the last 20% of the steps) and of the asymptote
(``plateau``), the fraction of runs with a ``final`` error within 0.1, the coverage of the 90% band
of ``final`` (over the runs the method forecast and gave a band for; ``-`` when it has none), and
the fraction of runs it declined.

Methods: ``hold`` (the mean of the window's last 10%; band: its block standard error);
``exponential``, ``logistic`` (4 parameters), ``scalerl`` and the Domhan et al. (2015) families
(plain ``curve_fit``; band: the delta method on its covariance) and their average ``domhan_mean``
(no band); ``product`` (``grpo_core.laws.forecast(law="best", n_boot=200)``, the single-law
forecast line of ``grpo-dynamics fit --fit-fraction``; band: its block bootstrap of the plateau);
``plateau`` (``grpo_core.laws.plateau.forecast_plateau``: constant, exponential, logistic and
Janoschek laws in learning-rate time with a weak rate prior, plus a late gain (the continued rise
after the laws' bend); its shrinkage, late gain and band quantile tuned leave-one-run-out: the run
being scored never takes part in the tuning; what
``grpo_core.runs.forecast.forecast_end`` runs, behind ``fit --fit-fraction``'s end-of-run line,
``diagnose``'s ``end_of_run`` and the live callback). This is a printed comparison, not a timed test.
The book's fitting chapter reads the committed ``bench/results/forecast.json`` of a ``--quick`` run.
Besides the rows per method and cut (see :func:`summarise` for the statistics of how sure they are), the
row ``plateau_prior_all_runs`` is the prior tuned on all runs, the product's ``SHIPPED_PRIOR``, and the
rows with ``method == "record"`` are the per-run forecasts of :data:`RECORDED` (:func:`run_records`).
"""

from __future__ import annotations

import json
import math
import time
import warnings

import numpy as np
import pandas as pd

from grpo_core import laws
from grpo_core.errors import DataError
from grpo_core.laws import anchors, plateau
from grpo_core.runs import datasets
from grpo_core.runs.logs import LogWarning, read_log

CUTS = (0.2, 0.4, 0.6)
LEVEL = 0.9


def load_run(run_id: str, collection: str = "real_runs") -> dict:
    """One real run: ``{"id", "t", "y", "lr", "reward_std", "meta"}`` (``lr``: ``(t, rates)`` or ``None``;
    ``reward_std``: ``(t, values)`` of the logged within-group reward standard deviation, or ``None``).

    Reads the run's raw file with :func:`grpo_core.runs.logs.read_log` (the reader a user's log goes
    through; ``meta.json``'s ``run_filter`` picks the run of a file holding two), the training
    ``reward`` and, where logged, ``learning_rate`` (kept when finite and not all 0); steps are the
    log's optimizer steps. ``tests/test_real_runs_reading.py`` checks these equal ``parsed_rows.csv``.
    """
    run = datasets.real_run(run_id, collection)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        log = read_log(run.path, run=run.run)
        t, y = log.series("reward")
        lr = None
        if log.has("learning_rate"):
            t_lr, rates = log.series("learning_rate")
            if t_lr.size >= 2 and np.any(rates > 0):
                lr = (t_lr.astype(float), rates)
        std = None
        if log.has("reward_std"):
            t_s, s = log.series("reward_std")
            std = (t_s.astype(float), s) if t_s.size else None
    return {"id": run.run_id, "t": t.astype(float), "y": y, "lr": lr, "reward_std": std, "meta": run.meta}


#: The collections the benchmark scores and the shipped prior is tuned on (the 37 runs).
BENCHMARK_COLLECTIONS = ("real_runs", "holdout_runs")


def load_runs(collection: str | None = None) -> list[dict]:
    """The runs of one collection (:data:`grpo_core.runs.datasets.RUN_COLLECTIONS`), or of the benchmark's
    (``None``: :data:`BENCHMARK_COLLECTIONS`, the 20 real runs and the 17 held-out ones)."""
    names = BENCHMARK_COLLECTIONS if collection is None else (collection,)
    return [load_run(rid, name) for name in names for rid in datasets.real_runs(name)]


def truth_and_spread(y: np.ndarray) -> tuple[float, float]:
    """The mean of the last 20% of the run and the spread (p95 - p5 of its 10-step rolling mean)."""
    n_tail = max(1, int(math.ceil(0.2 * y.size)))
    roll = pd.Series(y).rolling(10, min_periods=10).mean().dropna().to_numpy()
    roll = roll if roll.size else y
    p5, p95 = np.percentile(roll, [5, 95])
    return float(np.mean(y[-n_tail:])), float(p95 - p5)


def _window(run: dict, cut: float) -> tuple[np.ndarray, np.ndarray]:
    n = int(math.floor(cut * run["t"].size + 1e-9))
    return run["t"][:n], run["y"][:n]


def _row(final, plateau_, low, high, declined=None) -> dict:
    return {"final": final, "plateau": plateau_, "low": low, "high": high, "declined": declined}


def _hold(t, y) -> dict:
    k = max(1, int(math.ceil(0.1 * y.size)))
    c = float(np.mean(y[-k:]))
    r = y - pd.Series(y).rolling(5, center=True, min_periods=1).mean().to_numpy()
    se = float(np.std(r)) * math.sqrt(plateau._block(min(max(plateau._lag1(r), 0.0), 0.95), y.size) / k)
    return _row(c, c, c - 1.645 * se, c + 1.645 * se)


def _product(t, y, horizon, n_boot) -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fc = laws.forecast(t, y, law="best", fraction=1.0, n_boot=n_boot, level=LEVEL)
    except DataError as exc:
        return _row(*[float("nan")] * 4, declined=str(exc))
    lo, hi = fc.plateau_low, fc.plateau_high
    tt = np.linspace(0.8 * horizon, horizon, 40)
    final = float(np.mean(fc.fit.law_object.evaluate(tt, fc.fit.param_vector())))
    return _row(final, fc.plateau, lo, hi)


def _anchor(a) -> dict:
    return _row(a.final, a.plateau, a.final_low, a.final_high, a.declined)


def forecasts(runs: list[dict], cuts=CUTS, n_boot: int = 200, priors: dict | None = None,
              prior: plateau.PlateauPrior | None = None, fits: list | None = None,
              use_reward_std: bool = True) -> tuple[list[dict], dict]:
    """Every method's forecast for every run and cut: long-format records; and the seconds per method.
    ``priors``, when given, receives ``"all_runs"``: the plateau prior tuned on every run (the product's
    :data:`grpo_core.laws.plateau.SHIPPED_PRIOR`; never used to score a run here). ``prior``, when given,
    scores the plateau forecaster with that fixed prior (runs that took no part in tuning it: an
    out-of-sample test) instead of leave-one-run-out. ``fits``, when given, receives ``(run, cut, window
    forecast)`` for every plateau forecast before any prior (its law average and clock, for variants).
    ``use_reward_std=False`` hides the logged ``reward_std`` from the plateau forecaster (its late gain then
    always in window spreads: the forecaster before the second out-of-sample test)."""
    recs: list[dict] = []
    secs: dict[str, float] = {}
    raw: dict[float, list] = {cut: [] for cut in cuts}

    def timed(name, fn, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        secs[name] = secs.get(name, 0.0) + time.perf_counter() - t0
        return out

    for run in runs:
        truth, spread = truth_and_spread(run["y"])
        horizon = float(run["t"][-1])
        for cut in cuts:
            t, y = _window(run, cut)
            base = {"run": run["id"], "cut": cut, "truth": truth, "spread": spread}
            rows = {"hold": timed("hold", _hold, t, y)}
            for name in anchors.ANCHORS:
                rows[name] = _anchor(timed(name, anchors.anchor_forecast, name, t, y, horizon=horizon))
            mean, each = timed("domhan", anchors.domhan_mean, t, y, horizon=horizon)
            rows.update({f"domhan:{k}": _anchor(v) for k, v in each.items()})
            rows["domhan_mean"] = _anchor(mean)
            rows["product"] = timed("product", _product, t, y, horizon, n_boot)
            fc = timed("plateau", plateau.forecast_plateau, t, y, horizon=horizon, lr=run["lr"],
                       reward_std=run.get("reward_std") if use_reward_std else None)
            raw[cut].append((run["id"], fc, truth, spread))
            if fits is not None:
                fits.append((run, cut, fc))
            for method, r in rows.items():
                recs.append({**base, "method": method, **r})
    t0 = time.perf_counter()
    # one prior for all cuts, tuned on the other runs' forecasts at every cut (the held-out run's
    # records at all cuts are left out)
    pooled = [(rid, fc, truth, spread) for cut in cuts for rid, fc, truth, spread in raw[cut]]
    cut_of = [cut for cut in cuts for _ in raw[cut]]
    scored = (plateau.leave_one_out(pooled, level=LEVEL) if prior is None
              else [(fc.with_prior(prior), prior) for _rid, fc, _truth, _spread in pooled])
    for (rid, _fc, truth, spread), cut, (f, used) in zip(pooled, cut_of, scored):
        recs.append({"run": rid, "cut": cut, "truth": truth, "spread": spread, "method": "plateau",
                     **_row(f.final, f.plateau, f.final_low, f.final_high, f.declined),
                     "lam": used.lam, "q": used.q})
    secs["plateau"] += time.perf_counter() - t0
    if priors is not None:
        priors["all_runs"] = plateau.tune_prior(pooled, level=LEVEL)
    return recs, secs


def _median_ci(err: np.ndarray, level: float = 0.9, n_rep: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the median over runs (runs resampled with replacement)."""
    if err.size < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    meds = np.median(err[rng.integers(0, err.size, (n_rep, err.size))], axis=1)
    a = 100 * (1 - level) / 2
    return float(np.percentile(meds, a)), float(np.percentile(meds, 100 - a))


def summarise(recs: list[dict]) -> list[dict]:
    """Per method and cut: median errors, within 0.1, band coverage, declined share; and the
    statistics that say how much the medians can be trusted.

    ``median_err_ci``: 90% bootstrap interval of the median over runs (20 runs: wide).
    ``median_err_fallback``: the median when a declined run is scored with the ``hold`` forecast (what a
    user falls back to), so a method that declines its hard runs is compared on the same runs as one that
    does not. Rows with method ``hindsight_best``: for every run the least error of any method, picked
    after seeing the truth (no forecaster can do this: a bound on what choosing among these methods can
    reach). Rows with cut ``"all"``: per method over the three cuts pooled, the mean error capped at one
    spread (the tuning objective of :func:`grpo_core.laws.plateau.tune_prior`) and the median, declines
    scored as ``hold``.
    """
    df = pd.DataFrame(recs)
    df["err"] = (df["final"] - df["truth"]).abs() / df["spread"]
    df.loc[df["declined"].notna() | ~np.isfinite(df["final"]), "err"] = np.nan
    hold = df[df["method"] == "hold"].set_index(["run", "cut"])["err"]
    df["err_fb"] = df["err"].where(df["err"].notna(), [hold.get((r, c), np.nan) for r, c in zip(df["run"], df["cut"])])
    out = []
    for (method, cut), g in df.groupby(["method", "cut"], sort=False):
        ok = g[g["err"].notna()]
        err = ok["err"]
        perr = (ok["plateau"] - ok["truth"]).abs() / ok["spread"]
        banded = ok[np.isfinite(ok["low"]) & np.isfinite(ok["high"])]
        cover = ((banded["low"] <= banded["truth"]) & (banded["truth"] <= banded["high"])).mean()
        out.append({
            "method": method, "cut": cut, "n": len(g),
            "median_err": float(err.median()) if len(ok) else float("nan"),
            "median_err_plateau": float(perr.median()) if len(ok) else float("nan"),
            "within_0.1": float((err <= 0.1).mean()) if len(ok) else float("nan"),
            "coverage_90": float(cover) if len(banded) else "-",
            "declined": float(1 - len(ok) / len(g)),
            "median_err_ci": list(_median_ci(err.to_numpy())),
            "median_err_fallback": float(g["err_fb"].median()),
        })
    for cut, g in df.groupby("cut", sort=False):
        best = g.groupby("run")["err"].min()
        out.append({"method": "hindsight_best", "cut": cut, "n": int(best.size),
                    "median_err": float(best.median()), "within_0.1": float((best <= 0.1).mean()),
                    "median_err_ci": list(_median_ci(best.to_numpy()))})
    for method, g in df.groupby("method", sort=False):
        out.append({"method": method, "cut": "all", "n": len(g),
                    "capped_mean_err": float(np.minimum(g["err_fb"], 1.0).mean()),
                    "median_err_fallback": float(g["err_fb"].median())})
    return out


#: Methods whose per-run forecasts the results file keeps (rows with ``method == "record"``), for the
#: fitting chapter's chart of every run's forecasts against what happened.
RECORDED = ("plateau", "hold", "exponential", "logistic", "domhan:janoschek", "domhan_mean")


def run_records(recs: list[dict], methods=RECORDED) -> list[dict]:
    """The per-run forecasts of ``methods`` as result rows: ``method`` is ``"record"``, ``of`` the
    method; ``run``, ``cut``, ``truth``, ``spread``, ``final``, ``low``, ``high`` (NaN where there is
    none) and ``declined`` (the reason, or None)."""
    keep = ("run", "cut", "truth", "spread", "final", "low", "high", "declined")
    return [{"method": "record", "of": r["method"], **{k: r[k] for k in keep}} for r in recs if r["method"] in methods]


def main(quick: bool = False) -> list[dict]:
    runs = load_runs()
    t0 = time.perf_counter()
    priors: dict = {}
    recs, secs = forecasts(runs, n_boot=50 if quick else 200, priors=priors)
    total = time.perf_counter() - t0
    rows = summarise(recs)
    order = ["plateau", "product", "hold", "exponential", "logistic", "scalerl", "domhan_mean"]
    rows.sort(key=lambda r: (r["cut"] if r["cut"] != "all" else 9.0,
                             order.index(r["method"]) if r["method"] in order else 99, r["method"]))
    full = priors["all_runs"]
    rows.append({"method": "plateau_prior_all_runs", "cut": "all", "n": len(set(full.runs)),
                 "lam": full.lam, "q": full.q, "gain": full.gain, "std_gain": full.std_gain})
    rows.append({"method": "seconds", "cut": "all", "n": len(runs),
                 "median_err": total, "note": json.dumps({k: round(v, 1) for k, v in secs.items()})})
    return rows + run_records(recs)


if __name__ == "__main__":
    from bench.__main__ import _print_rows

    _print_rows("forecast", main())
