"""Analysis of committed LLM runs for the book: fits, trajectories across G, transfer, budget sweep.

Everything here reads run folders (:func:`grpo_core.llm.runs.load_runs`) and computes; nothing
trains. The chapter "GRPO on a language model" calls these functions and draws their tables with
``widgets.llm_charts``.

Definitions used throughout (state them next to every number):

* *curve*: the mean training reward per optimizer step (the fraction of the step's completions
  that were exactly right), as TRL logs it;
* *warm-up level*: the mean reward of the first 10 steps; *final level*: the mean of the last 50;
* *smoothed curve*: the centred 20-step rolling mean (:func:`grpo_core.laws.rolling_mean`);
* *transfer*: the change of an evaluation set's accuracy from the start to the end of GRPO
  (greedy, and sampled at the training temperature), held-out problems only.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from ..validation import check_integer
from .runs import Run

__all__ = [
    "curve_fits",
    "fitted_curves",
    "mean_trajectories",
    "step_noise",
    "paired_differences",
    "transfer_table",
    "diagnose_runs",
    "budget_sweep_table",
    "constants_table",
    "provenance_table",
    "final_level",
]


def final_level(run: Run, tail: int = 50) -> float:
    """Mean training reward of the last ``tail`` steps of a run.

    Parameters
    ----------
    run : Run
        A loaded run (:func:`~grpo_core.llm.runs.load_run`).
    tail : int, default 50
        Steps averaged (all of them when the run is shorter), ``>= 1``.

    Returns
    -------
    float
        Mean reward (reward units: the fraction of exactly right completions for a 0/1 reward);
        NaN when the run logged no finite reward.

    Raises
    ------
    DataError
        The run's metrics have no ``reward`` column.
    ParameterError
        ``tail`` is not an integer >= 1.
    """
    tail = check_integer("tail", tail, low=1)
    _, r = run.reward()
    return float(np.mean(r[-tail:])) if r.size else float("nan")


def curve_fits(runs: Sequence[Run], *, laws=("three_phase", "exponential", "logistic"), window: int = 20,
               smoothed: bool = True) -> pd.DataFrame:
    """Fit every law to every run's reward curve.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs (:func:`~grpo_core.llm.runs.load_runs`).
    laws : sequence of str
        Law names of :mod:`grpo_core.laws`.
    window : int
        Rolling-mean window (steps) of the smoothed curve, >= 1.
    smoothed : bool
        Fit the smoothed curve (as the paper reports its R^2) and report the R^2 against the raw
        curve as well; ``False`` fits the raw curve.

    Returns
    -------
    pandas.DataFrame
        One row per run and law: ``run``, ``G``, ``seed``, ``law``, ``r2`` (against what was fitted),
        ``r2_raw`` (the same fitted curve against the raw per-step rewards), ``plateau``,
        ``plateau_se``, ``t90`` (steps to 90% of the rise), ``start`` (fitted R_0), ``aic``, ``best``
        (whether the law has the lowest criterion for that run), ``preferred`` (the law the fit reads:
        the lowest criterion among laws whose plateau the curve determines,
        :attr:`grpo_core.laws.fit.FitComparison.preferred`), and for the three-phase law ``k`` (per
        step) and ``tau`` (steps).

    Raises
    ------
    ParameterError
        ``window`` < 1, an unknown law name (from :func:`grpo_core.laws.fit_all`).
    DataError
        A run without a ``reward`` column, or with fewer than ``window + 8`` reward points; a
        constant curve (from :func:`grpo_core.laws.fit_all`).

    References
    ----------
    Laws, AIC and the fits: :mod:`grpo_core.laws`; book chapters "Fitting real reward curves" and
    "GRPO on a language model".
    """
    from .. import laws as _laws

    window = check_integer("window", window, low=1)
    rows = []
    for run in runs:
        t, y = run.reward()
        if t.size < window + 8:
            raise DataError(f"run {run.name}: {t.size} reward points, too few to fit (need {window + 8})")
        ts, ys = _laws.rolling_mean(t, y, window) if smoothed else (t, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            comparison = _laws.fit_all(ts.astype(float), ys, laws=laws)
        for name, fit in comparison.results.items():
            pred = fit.predict(t.astype(float))
            tss = float(np.sum((y - y.mean()) ** 2))
            rows.append({
                "run": run.name, "G": run.group_size, "seed": run.seed, "law": name, "r2": fit.r2,
                "r2_raw": 1.0 - float(np.sum((y - pred) ** 2)) / tss if tss > 0 else np.nan,
                "plateau": fit.plateau, "plateau_se": fit.plateau_stderr, "t90": fit.t90,
                "start": float(fit.params.get("r0", fit.fitted[0])), "aic": fit.aic,
                "best": name == comparison.best, "preferred": name == comparison.preferred,
                "k": fit.params.get("k", np.nan), "tau": fit.params.get("tau", np.nan),
            })
    return pd.DataFrame(rows)


def fitted_curves(runs: Sequence[Run], *, law: str = "three_phase", window: int = 20) -> pd.DataFrame:
    """Each run's smoothed reward curve and one law fitted to it, as a long table for small multiples.

    Parameters
    ----------
    runs : sequence of Run
        At least one run.
    law : str, default "three_phase"
        A law name of :mod:`grpo_core.laws`.
    window : int, default 20
        Rolling-mean window of the smoothed curve (steps), >= 1 and at most the curve length.

    Returns
    -------
    pandas.DataFrame
        ``run``, ``G``, ``seed``, ``step``, ``smoothed`` (centred ``window``-step rolling mean),
        ``fitted`` (the law fitted to the smoothed curve), ``r2`` and ``label``
        (``"G=4, seed 0: R² 0.97"``); runs ordered by G then seed. ``step`` is the optimizer step
        (the centres of the rolling windows), rewards in reward units.

    Raises
    ------
    ParameterError
        Bad ``window`` (:func:`grpo_core.laws.rolling_mean`), an unknown ``law``.
    DataError
        A run without a ``reward`` column; a smoothed curve too short or constant to fit
        (:func:`grpo_core.laws.fit_law`).
    ParameterError
        ``runs`` is empty.
    """
    from .. import laws as _laws

    if not runs:
        raise ParameterError("runs", "`runs` must hold at least one run")
    frames = []
    for run in sorted(runs, key=lambda r: (r.group_size, r.seed)):
        t, y = run.reward()
        ts, ys = _laws.rolling_mean(t, y, window)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = _laws.fit_law(ts.astype(float), ys, law)
        frames.append(pd.DataFrame({"run": run.name, "G": run.group_size, "seed": run.seed, "step": ts,
                                    "smoothed": ys, "fitted": fit.fitted, "r2": fit.r2,
                                    "label": f"G={run.group_size}, seed {run.seed}: R² {fit.r2:.3f}"}))
    return pd.concat(frames, ignore_index=True)


def mean_trajectories(runs: Sequence[Run], *, by: str = "G", window: int = 10) -> pd.DataFrame:
    """Mean reward trajectory across seeds for each group size, with the spread between seeds.

    Parameters
    ----------
    runs : sequence of Run
        Runs of the same length; grouped by ``by``.
    by : {"G", "B"}
        Group by group size or prompts per step.
    window : int
        Each seed's curve is first smoothed by a centred rolling mean of this many steps (1 = raw),
        so that the spread is the between-seed spread of the trajectories, not per-step sampling
        noise.

    Returns
    -------
    pandas.DataFrame
        Columns ``step``, ``G`` (or ``B``), ``mean``, ``sd`` (between seeds, ddof=1), ``lo``, ``hi``
        (mean -/+ sd), ``n`` (seeds), ``raw_sd`` (between-seed sd of the unsmoothed per-step reward).

    Raises
    ------
    ParameterError
        Unknown ``by``, bad ``window``.
    DataError
        No runs; a run without a ``reward`` column.
    """
    if by not in ("G", "B"):
        raise ParameterError("by", f"`by` must be 'G' or 'B'; got {by!r}")
    window = check_integer("window", window, low=1)
    if not runs:
        raise DataError("no runs to average")
    frames = []
    for run in runs:
        t, y = run.reward()
        smooth = pd.Series(y).rolling(window, center=True, min_periods=1).mean().to_numpy()
        key = run.group_size if by == "G" else int(run.config.get("prompts_per_step", 0))
        frames.append(pd.DataFrame({"step": t, by: key, "seed": run.seed, "y": smooth, "raw": y}))
    data = pd.concat(frames, ignore_index=True)
    grouped = data.groupby([by, "step"])
    out = grouped["y"].agg(["mean", "std", "count"]).rename(columns={"std": "sd", "count": "n"}).reset_index()
    out["raw_sd"] = grouped["raw"].std().to_numpy()
    out["lo"], out["hi"] = out["mean"] - out["sd"], out["mean"] + out["sd"]
    return out[["step", by, "mean", "sd", "lo", "hi", "n", "raw_sd"]]


def step_noise(runs: Sequence[Run], *, window: int = 21) -> pd.DataFrame:
    """Per-step fluctuation of each run's reward around its own trend, against the binomial floor.

    The per-step reward is a mean over the step's N completions, so it fluctuates around the
    policy's expected reward even when the policy does not move: for independent 0/1 outcomes
    with success rate p the standard deviation is ``sqrt(p (1 - p) / N)`` (the *binomial floor*;
    completions of one prompt are correlated, which raises it). The measured fluctuation is the
    standard deviation of ``reward - centred rolling mean``.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs; ``N`` is read from ``config["completions"]`` (else ``G x prompts_per_step``).
    window : int
        Rolling-mean window of the trend, odd is best, >= 3.

    Returns
    -------
    pandas.DataFrame
        ``run``, ``G``, ``seed``, ``N`` (completions per step), ``noise_sd``, ``binomial_sd`` (the
        floor at the run's mean reward), ``ratio`` (= noise_sd / binomial_sd). Reward units.
        ``noise_sd`` is the residuals' sd (ddof=1) divided by ``sqrt(1 - 1/window)`` (a centred
        mean of ``window`` points removes ``1/window`` of the variance); NaN (with a numpy
        warning) for a run shorter than ``window``.

    Raises
    ------
    ParameterError
        ``window`` < 3.
    DataError
        A run without a ``reward`` column.

    References
    ----------
    Binomial floor and the variance correction: our derivation (book chapter "GRPO on a language
    model").
    """
    window = check_integer("window", window, low=3)
    rows = []
    for run in runs:
        _, y = run.reward()
        trend = pd.Series(y).rolling(window, center=True).mean().to_numpy()
        resid = (y - trend)[np.isfinite(trend)]
        n = int(run.config.get("completions", 0) or run.group_size * int(run.config.get("prompts_per_step", 1)))
        p = float(np.mean(y))
        # the residual of a centred mean of `window` points keeps (1 - 1/window) of the variance
        noise = float(np.std(resid, ddof=1) / np.sqrt(1.0 - 1.0 / window))
        floor = float(np.sqrt(p * (1 - p) / n)) if n else float("nan")
        rows.append({"run": run.name, "G": run.group_size, "seed": run.seed, "N": n, "noise_sd": noise,
                     "binomial_sd": floor, "ratio": noise / floor if floor > 0 else float("nan")})
    return pd.DataFrame(rows)


def paired_differences(runs: Sequence[Run], *, a: int, b: int, tail: int = 50) -> pd.DataFrame:
    """Run-by-run comparison of two group sizes that share seeds (and so starting models).

    Parameters
    ----------
    runs : sequence of Run
        Runs at (at least) the group sizes ``a`` and ``b``; one run per (G, seed) is used (the
        last one given wins).
    a, b : int
        The two group sizes compared; differences are ``b`` minus ``a``.
    tail : int, default 50
        Steps averaged for the final level.

    Returns
    -------
    pandas.DataFrame
        One row per shared seed, increasing: ``seed``, ``start`` (mean reward of the first 10
        steps of the G = a run), ``final_G{a}``, ``final_G{b}`` (means of the last ``tail`` steps;
        e.g. ``final_G4``, ``final_G16``), ``difference`` (``final_G{b} - final_G{a}``),
        ``auc_difference`` (difference of the whole-run means). Reward units.

    Raises
    ------
    DataError
        No seed has runs at both group sizes; a run without a ``reward`` column.
    ParameterError
        ``tail`` is not an integer >= 1.
    """
    tail = check_integer("tail", tail, low=1)
    by = {(r.group_size, r.seed): r for r in runs}
    seeds = sorted(s for (g, s) in by if g == a and (b, s) in by)
    if not seeds:
        raise DataError(f"no seed has runs at both G = {a} and G = {b}")
    rows = []
    for s in seeds:
        ya, yb = by[(a, s)].reward()[1], by[(b, s)].reward()[1]
        rows.append({"seed": s, "start": float(np.mean(ya[:10])), f"final_G{a}": float(np.mean(ya[-tail:])),
                     f"final_G{b}": float(np.mean(yb[-tail:])),
                     "difference": float(np.mean(yb[-tail:]) - np.mean(ya[-tail:])),
                     "auc_difference": float(np.mean(yb) - np.mean(ya))})
    return pd.DataFrame(rows)


def transfer_table(runs: Sequence[Run], *, distances: dict | None = None) -> pd.DataFrame:
    """Start and end accuracy of every evaluation set, averaged over runs, and the change.

    Parameters
    ----------
    runs : sequence of Run
        Runs with ``evals.json`` (start and end).
    distances : dict of str to int, optional
        Distance rank of each set from the training distribution (default: the arithmetic tasks'
        and the benchmarks' own ranks).

    Returns
    -------
    pandas.DataFrame
        One row per set, nearest first: ``set``, ``distance``, ``n_runs``, ``start``, ``end``,
        ``change`` (greedy accuracy, mean over runs), ``change_se`` (standard error over runs),
        ``sampled_start``, ``sampled_end``, ``sampled_change``, ``sampled_change_se``.

    Raises
    ------
    DataError
        No run has start and end evaluations.
    """
    from .data import BENCHMARKS
    from .tasks import TASKS

    ranks = {**{k: v.distance for k, v in TASKS.items()}, **{k: v.distance for k, v in BENCHMARKS.items()}}
    ranks.update(distances or {})
    rows = []
    for run in runs:
        start, end = run.evals.get("start", {}), run.evals.get("end", {})
        for name in start:
            if name in end:
                rows.append({"set": name, "run": run.name, "start": start[name]["accuracy"],
                             "end": end[name]["accuracy"],
                             "sampled_start": start[name].get("sampled_accuracy"),
                             "sampled_end": end[name].get("sampled_accuracy")})
    if not rows:
        raise DataError("no run has evaluations at both the start and the end")
    data = pd.DataFrame(rows).astype({"sampled_start": float, "sampled_end": float})
    data["change"] = data["end"] - data["start"]
    data["sampled_change"] = data["sampled_end"] - data["sampled_start"]
    g = data.groupby("set")
    out = g[["start", "end", "change", "sampled_start", "sampled_end", "sampled_change"]].mean()
    out["n_runs"] = g.size()
    se = g[["change", "sampled_change"]].std(ddof=1) / np.sqrt(out["n_runs"].to_numpy()[:, None])
    out["change_se"], out["sampled_change_se"] = se["change"], se["sampled_change"]
    out["distance"] = [ranks.get(s, np.nan) for s in out.index]
    out = out.reset_index().sort_values(["distance", "set"])
    return out[["set", "distance", "n_runs", "start", "end", "change", "change_se", "sampled_start", "sampled_end",
                "sampled_change", "sampled_change_se"]].reset_index(drop=True)


def diagnose_runs(runs: Sequence[Run], *, n_boot: int = 100, eval_metric: str | None = "sampled_accuracy",
                  max_reward: float | None = 1.0) -> tuple[pd.DataFrame, dict]:
    """Run :func:`grpo_core.runs.diagnostics.diagnose` on every run's metrics.

    Parameters
    ----------
    runs : sequence of Run
    n_boot : int
        Bootstrap replicates of the forecast band.
    eval_metric : str or None
        Held-out column compared with the training reward for train-eval decoupling. The default,
        the sampled accuracy, measures on held-out problems what the training reward measures on
        training problems; the greedy accuracy can stay flat while GRPO sharpens sampling. A run
        without that column falls back to ``diagnose``'s own choice.
    max_reward : float or None
        The largest reward possible (1 for a 0/1 reward): a band reaching beyond it (before
        ``diagnose`` clips a 0/1 reward's band to [0, 1]) is noted in ``forecast_note``.

    Returns
    -------
    table : pandas.DataFrame
        One row per run: ``run``, ``G``, ``seed``, ``healthy``, ``modes`` (warning or critical),
        ``findings`` (every finding as ``mode:severity``), ``final``, ``final_low``, ``final_high``
        (``diagnose``'s end-of-run forecast as shown: the mean reward over the last 20% of the run up to
        ``horizon``, twice the logged steps when the log does not give ``max_steps``, and its calibrated 90%
        band), ``now`` (the current level, the forecast's point), ``horizon``, ``forecast_note``.
    diagnoses : dict of str to Diagnosis
        By run name, for charts.

    Raises
    ------
    ParameterError
        Bad ``n_boot`` (< 0), or a run whose ``G`` or prompts per step
        :func:`~grpo_core.runs.diagnostics.diagnose` refuses.
    DataError
        A run none of whose metrics the checks can read (from
        :func:`~grpo_core.runs.diagnostics.diagnose`).

    References
    ----------
    Book chapters "Reading a training log" (the failure modes) and "GRPO on a language model".
    """
    from ..runs.diagnostics import diagnose

    rows, out = [], {}
    for run in runs:
        metric = eval_metric if (eval_metric and run.metrics.has(eval_metric, split="eval")) else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = diagnose(run.metrics, group_size=run.group_size, num_prompts=int(run.config.get("prompts_per_step", 0))
                         or None, n_boot=n_boot, eval_metric=metric)
        out[run.name] = d
        fc = d.forecast
        note = ""
        if fc is None:
            note = "no forecast"
        elif max_reward is not None and fc.high > max_reward:
            note = "band reaches beyond the largest possible reward"
        nan = float("nan")
        rows.append({"run": run.name, "G": run.group_size, "seed": run.seed, "healthy": d.healthy,
                     "modes": ", ".join(d.modes) or "-",
                     "findings": ", ".join(f"{f.mode}:{f.severity}" for f in d.findings) or "-",
                     "final": nan if fc is None else fc.shown_point, "final_low": nan if fc is None else fc.shown_low,
                     "final_high": nan if fc is None else fc.shown_high, "now": nan if fc is None else fc.now,
                     "horizon": nan if fc is None else fc.horizon, "forecast_note": note})
    return pd.DataFrame(rows), out


def budget_sweep_table(runs: Sequence[Run], *, tail: int = 50) -> pd.DataFrame:
    """The fixed-budget sweep: final reward and held-out accuracy per group size, over seeds.

    Parameters
    ----------
    runs : sequence of Run
        Runs with the same ``completions`` per step and different G (and seeds).
    tail : int
        Steps averaged for each run's final training reward.

    Returns
    -------
    pandas.DataFrame
        One row per G, increasing: ``G``, ``B``, ``N`` (completions per step), ``n`` (seeds),
        ``final_reward`` (mean over seeds of each run's last-``tail``-step mean), ``final_reward_se``,
        ``auc`` (mean reward over the whole run: the learning speed), ``auc_se``,
        ``eval_end`` (held-out sampled accuracy at the end, or greedy when not sampled),
        ``eval_end_se``, and the paired ``auc_paired`` and ``final_reward_paired`` (each run minus
        the mean of its seed over all G, then averaged over seeds: the seeds' different starting
        levels cancel) with their ``_se``.

    Raises
    ------
    DataError
        The runs do not share one budget N (also when ``runs`` is empty); a run without a
        ``reward`` column.
    ParameterError
        ``tail`` is not an integer >= 1.
    """
    tail = check_integer("tail", tail, low=1)
    rows = []
    budgets = {int(r.config.get("completions", 0)) for r in runs}
    if len(budgets) != 1:
        raise DataError(
            f"the runs of a fixed-budget sweep share one budget; got completions per step {sorted(budgets)}"
        )
    for run in runs:
        _, r = run.reward()
        first = (run.config.get("eval_suite") or [None])[0]
        end = run.evals.get("end", {}).get(first, {})
        eval_end = end.get("sampled_accuracy")
        if eval_end is None:
            eval_end = end.get("accuracy", np.nan)
        rows.append(
            {
                "G": run.group_size,
                "B": int(run.config.get("prompts_per_step", 0)),
                "N": budgets.copy().pop(),
                "seed": run.seed,
                "final_reward": float(np.mean(r[-tail:])),
                "auc": float(np.mean(r)),
                "eval_end": float(eval_end),
            }
        )
    data = pd.DataFrame(rows)
    # paired version: each run against the mean of its seed over every G (seeds start from very
    # different warm-up levels; the comparison between G is within a seed)
    for col in ("final_reward", "auc"):
        data[f"{col}_paired"] = data[col] - data.groupby("seed")[col].transform("mean")
    g = data.groupby("G")
    out = g[["B", "N"]].first()
    out["n"] = g.size()
    for col in ("final_reward", "auc", "eval_end", "final_reward_paired", "auc_paired"):
        out[col] = g[col].mean()
        out[f"{col}_se"] = g[col].std(ddof=1) / np.sqrt(out["n"])
    return out.reset_index()


def constants_table(runs: Sequence[Run], phase: str = "start") -> pd.DataFrame:
    """c1, c2, c3 and G* measured on the model (``gradient_constants.json``), one row per run
    that has them, plus a final row ``pooled`` with the means over distinct seeds.

    Columns: ``run``, ``G`` (of the run; the start model does not depend on it), ``seed``, ``c1``,
    ``c2``, ``c3``, ``g_star``, ``g_star_exact``,
    ``g_star_lo``, ``g_star_hi`` (bootstrap interval of the exact G*), ``mean_reward``.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs; those without constants for ``phase`` are left out.
    phase : {"start", "end"}, default "start"
        Which measurement. ``"start"`` keeps the first run of each seed only (the runs of a seed
        share their starting model); ``"end"`` keeps every run.

    Returns
    -------
    pandas.DataFrame
        The columns above, one row per kept run (``c1``, ``c2``, ``c3`` in the units of squared
        score-function gradients as measured; ``g_star``, ``g_star_exact`` in completions per
        prompt). A missing interval is NaN; an interval end stored as ``null`` (unbounded) is
        ``inf``. The last row, ``run = "pooled (means)"`` with ``G = seed = -1``, holds the means of
        the kept rows' ``c1``, ``c2``, ``c3``, ``mean_reward``, and ``g_star = sqrt(c3/c1)``,
        ``g_star_exact = 1 + sqrt(c3/c1)`` from the mean constants (``inf`` when the mean ``c1``
        <= 0), with NaN intervals. Empty (no columns) when no run has the constants.

    Raises
    ------
    KeyError
        A stored measurement lacks ``c1``, ``c2``, ``c3``, ``g_star`` or ``g_star_exact``.
    ParameterError
        ``phase`` is not ``"start"`` or ``"end"``.

    References
    ----------
    "Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025),
    Theorem 7 (the MSE law and G*); the measurement: :mod:`grpo_core.llm.constants`.
    """
    if phase not in ("start", "end"):
        raise ParameterError("phase", f"`phase` must be 'start' or 'end'; got {phase!r}")
    rows, seen = [], set()
    for run in runs:
        c = run.constants.get(phase)
        if not c or (phase == "start" and run.seed in seen):  # the start model is shared by a seed's runs
            continue
        seen.add(run.seed)
        lo, hi = c.get("intervals", {}).get("g_star_exact") or [np.nan, np.nan]
        rows.append(
            {
                "run": run.name,
                "G": run.group_size,
                "seed": run.seed,
                "c1": c["c1"],
                "c2": c["c2"],
                "c3": c["c3"],
                "g_star": c["g_star"],
                "g_star_exact": c["g_star_exact"],
                "g_star_lo": lo if lo is not None else np.inf,
                "g_star_hi": hi if hi is not None else np.inf,
                "mean_reward": c.get("mean_reward", np.nan),
            }
        )
    table = pd.DataFrame(rows)
    if len(table):
        c1, c3 = table["c1"].mean(), table["c3"].mean()
        pooled = {
            "run": "pooled (means)",
            "G": -1,
            "seed": -1,
            "c1": c1,
            "c2": table["c2"].mean(),
            "c3": c3,
            "g_star": np.sqrt(c3 / c1) if c1 > 0 else np.inf,
            "g_star_exact": 1 + np.sqrt(c3 / c1) if c1 > 0 else np.inf,
            "g_star_lo": np.nan,
            "g_star_hi": np.nan,
            "mean_reward": table["mean_reward"].mean(),
        }
        table = pd.concat([table, pd.DataFrame([pooled])], ignore_index=True)
    return table


def provenance_table(runs: Sequence[Run]) -> pd.DataFrame:
    """Where the runs were made: one row per distinct (device, threads, package versions), with the
    number of runs, the code revisions they ran (short commit hashes, ``+`` when the working tree had
    uncommitted changes to ``grpo_core``) and the date range (UTC).

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs; read from each run's ``provenance.json`` (missing keys count as ``None``).

    Returns
    -------
    pandas.DataFrame
        Columns ``device``, ``cpu_count``, ``threads`` (torch threads), ``torch``,
        ``transformers``, ``trl`` (package versions), ``runs`` (count), ``commits`` (distinct short
        hashes, sorted, comma-separated), ``first``, ``last`` (ISO 8601 UTC dates, compared as
        strings). Empty (no columns) when ``runs`` is empty.
    """
    rows = []
    for run in runs:
        p = run.provenance
        pk = p.get("packages", {})
        git = p.get("git") or {}
        commit = (git.get("commit") or "")[:8] + ("+" if git.get("dirty") else "")
        rows.append(
            {
                "device": p.get("device"),
                "cpu_count": p.get("cpu_count"),
                "threads": p.get("torch_threads"),
                "torch": pk.get("torch"),
                "transformers": pk.get("transformers"),
                "trl": pk.get("trl"),
                "commit": commit,
                "date": p.get("date", ""),
            }
        )
    data = pd.DataFrame(rows)
    if data.empty:
        return data
    keys = ["device", "cpu_count", "threads", "torch", "transformers", "trl"]
    g = data.groupby(keys, dropna=False)
    out = pd.DataFrame(
        {
            "runs": g.size(),
            "commits": g["commit"].agg(lambda c: ", ".join(sorted(set(c)))),
            "first": g["date"].min(),
            "last": g["date"].max(),
        }
    )
    return out.reset_index()
