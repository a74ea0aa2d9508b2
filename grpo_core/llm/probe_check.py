"""The probe's predictions set against the runs that followed them.

The probe (:mod:`grpo_core.llm.probe`) writes ``probe.json`` before the first GRPO step: the
relaxation-rate curvature ``K`` of the starting policy (Adam-preconditioned ``K/sqrt(v)`` for AdamW)
and, from it, the predicted time to 90% of the plateau. After the run two things can be measured on
its own log: the time the smoothed reward actually took to cover 90% of its rise, and the curvature
implied by the run's fitted curve in learning-rate time
(:func:`grpo_core.runs.curvature.advise_from_log`, the reading ``fit`` and ``diagnose`` print). The two
``K`` are independent measurements of the same model quantity: one from a few small steps at the
start, one from the whole curve.

Definitions (our choices, stated with every number): the *start* is the mean reward of the first
10 steps, the *end* the mean of the last 50, the smoothed curve a trailing 20-step mean; the
*measured t90* is the first step at which the smoothed curve reaches ``start + 0.9 (end - start)``.

A learning-rate sweep (:func:`lr_sweep_table`) classifies each run from its own log
(:func:`classify_run`) and brackets the critical learning rate between the largest rate whose run
did not collapse and the smallest whose run did, next to the probe's predictions.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError
from .runs import Run

__all__ = ["RUN_CLASSES", "classify_run", "lr_sweep_table", "lr_time_curves", "measured_t90", "probe_against_runs"]

#: The classes of :func:`classify_run`.
RUN_CLASSES = ("monotone", "oscillating", "collapsed")


def measured_t90(steps, reward, *, window: int = 20, fraction: float = 0.9) -> float:
    """First step at which the trailing ``window``-step mean covers ``fraction`` of the rise.

    Parameters
    ----------
    steps, reward : array_like, shape (T,)
        Optimizer steps (increasing) and the reward per step, ``T >= window + 50``.
    window : int, default 20
        Trailing mean length (steps).
    fraction : float in (0, 1), default 0.9

    Returns
    -------
    float
        The step (the window's last step); ``inf`` when the smoothed curve never gets there, NaN
        when the curve does not rise (end <= start).

    Raises
    ------
    DataError
        Fewer than ``window + 50`` points.

    Examples
    --------
    >>> t = np.arange(1, 401)
    >>> float(measured_t90(t, 1 - np.exp(-t / 50.0)))  # 50 ln 10 = 115, plus the trailing mean's lag
    131.0
    """
    t = np.asarray(steps, dtype=float)
    y = np.asarray(reward, dtype=float)
    if y.size < window + 50 or t.shape != y.shape:
        raise DataError(f"`reward`: measured_t90 needs at least {window + 50} points with their steps; "
                        f"got {y.size}")
    start, end = float(y[:10].mean()), float(y[-50:].mean())
    if not end > start:
        return math.nan
    smooth = np.convolve(y, np.ones(window) / window, mode="valid")
    hit = smooth >= start + fraction * (end - start)
    return float(t[window - 1 + int(np.argmax(hit))]) if hit.any() else math.inf


def probe_against_runs(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per run with a ``probe.json``: the probe's prediction next to what the run did.

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs (:func:`grpo_core.llm.runs.load_runs`); runs without ``probe.json`` are skipped.

    Returns
    -------
    pandas.DataFrame
        ``seed``, ``learning_rate``, ``start``, ``end`` (reward), ``t90_predicted`` (the probe's
        closed-form time to 90% at the run's learning rate, steps), ``t90_measured`` (steps),
        ``t90_ratio`` (measured / predicted), ``K_probe`` with ``K_probe_lo``/``K_probe_hi`` (the
        probe's interval over its repeats), ``K_run`` with ``K_run_lo``/``K_run_hi`` (implied by the
        run's fitted curve, 90% delta interval; NaN with ``K_run_reason`` when the curve gives none),
        and ``K_ratio`` (probe / run).

    Raises
    ------
    DataError
        No run has a ``probe.json``.
    """
    from ..runs import curvature, settings

    rows = []
    for run in runs:
        path = run.path / "probe.json"
        if not path.is_file():
            continue
        probe = json.loads(path.read_text(encoding="utf-8"))
        adam = "adam" in str(run.config.get("optimizer", "adamw")).lower()
        cur = probe["curvature"]
        k_probe, (k_lo, k_hi) = ((cur["k_adam"], cur["k_adam_interval"]) if adam else (cur["k"], cur["k_interval"]))
        steps, reward = run.reward()
        t90_pred = float(probe["predictions"]["t90"]["steps"])
        t90_meas = measured_t90(steps, reward)
        found = settings.settings_for_log(run.path / "metrics.jsonl", run.path / "config.json")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fits at a bound are reported by the reason
            implied = curvature.advise_from_log(run.metrics, found).implied
        rows.append({
            "seed": run.seed, "learning_rate": float(run.config["learning_rate"]),
            "start": float(reward[:10].mean()), "end": float(reward[-50:].mean()),
            "t90_predicted": t90_pred, "t90_measured": t90_meas, "t90_ratio": t90_meas / t90_pred,
            "K_probe": float(k_probe), "K_probe_lo": float(k_lo), "K_probe_hi": float(k_hi),
            "K_run": implied.curvature, "K_run_lo": implied.curvature_low, "K_run_hi": implied.curvature_high,
            "K_run_reason": implied.reason, "K_ratio": float(k_probe) / implied.curvature,
        })
    if not rows:
        raise DataError("`runs`: none of the runs has a probe.json (run the preset with probe = true)")
    return pd.DataFrame(rows)


def classify_run(reward, *, window: int = 10) -> str:
    """The shape of a run's training reward: ``monotone``, ``oscillating`` or ``collapsed``.

    The rule (ours), on the reward per logged step ``y``, its start ``s`` (mean of the first
    ``window`` points) and its end ``e`` (mean of the last 10%, at least ``window`` points):

    * *collapsed*: ``e < s / 2``: the reward ended below half its start, what a divergent GRPO run
      of a 0/1 reward does (the policy leaves every rewarded completion and the reward falls to 0,
      or is still falling there when the run ends);
    * *oscillating*: not collapsed, and the ``window``-point trailing mean falls back from its running
      maximum by more than a fifth of the range it covers, twice or more, separately (it climbs back
      to within a twentieth of the range of that maximum between the falls);
    * *monotone*: otherwise (rises, or stays, with noise).

    Parameters
    ----------
    reward : array_like, shape (T,)
        Reward per logged step (reward units, a 0/1 reward's mean), ``T >= 3 * window``.
    window : int, default 10

    Returns
    -------
    str
        One of :data:`RUN_CLASSES`.

    Raises
    ------
    DataError
        Too few points, or non-finite rewards.

    Examples
    --------
    >>> t = np.arange(300)
    >>> classify_run(0.3 + 0.6 * (1 - np.exp(-t / 80))), classify_run(np.r_[np.full(20, 0.3), np.zeros(280)])
    ('monotone', 'collapsed')
    >>> classify_run(0.3 * np.exp(-t / 250))  # still falling at the end: below half its start
    'collapsed'
    >>> classify_run(0.6 + 0.3 * np.sin(t / 15))
    'oscillating'
    """
    y = np.asarray(reward, dtype=float)
    if y.ndim != 1 or y.size < 3 * window or not np.all(np.isfinite(y)):
        raise DataError(f"`reward`: classify_run needs at least {3 * window} finite values; got {y.size}")
    start = float(y[:window].mean())
    end = float(y[-max(window, y.size // 10):].mean())
    if end < start / 2:
        return "collapsed"
    smooth = np.convolve(y, np.ones(window) / window, mode="valid")
    span = float(smooth.max() - smooth.min())
    falls, peak, armed = 0, -np.inf, True
    for v in smooth:
        peak = max(peak, float(v))
        if not armed and peak - v < 0.05 * span:
            armed = True  # back near the maximum: the next fall is a new swing
        elif armed and span > 0 and peak - v > 0.2 * span:
            falls, armed = falls + 1, False
    return "oscillating" if falls >= 2 else "monotone"


def _bracket(rates: np.ndarray, collapsed: np.ndarray) -> tuple[float, float]:
    """(largest rate below the first collapse that did not collapse, first collapsed rate)."""
    order = np.argsort(rates)
    r, c = rates[order], collapsed[order]
    first = int(np.argmax(c)) if c.any() else None
    hi = float(r[first]) if first is not None else math.inf
    lo = float(r[first - 1]) if first not in (None, 0) else (float(r[-1]) if first is None else 0.0)
    return lo, hi


def lr_sweep_table(runs: Sequence[Run]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A learning-rate sweep: each run classified, the critical rate bracketed, the probe's predictions.

    Parameters
    ----------
    runs : sequence of Run
        Runs of one preset and seed that differ in ``learning_rate``, ``optimizer`` and
        ``num_iterations``; each with its ``probe.json`` (the probe of the shared starting model).

    Returns
    -------
    runs_frame : pandas.DataFrame
        One row per run: ``optimizer``, ``num_iterations``, ``learning_rate``, ``seed``, ``start``,
        ``end`` (reward), ``shape`` (:func:`classify_run`), ``steps`` (its last logged step),
        ``stopped`` (the step at which ``stop_collapsed`` stopped it, from ``summary.json``; 0 for a
        run that ran all its steps), ``collapsed_at`` (for a collapsed run, the first logged step at
        which the 10-point trailing mean of the reward is below half its start; NaN otherwise).
    critical : pandas.DataFrame
        One row per (``optimizer``, ``num_iterations``): ``seeds`` and ``runs`` (counts),
        ``seeds_per_rate`` (the fewest seeds at any of its rates),
        ``stable_up_to`` (largest rate below the first collapse), ``collapsed_from`` (smallest
        collapsed rate; inf when none collapsed), a rate counting as collapsed when at least half
        of its seeds did, ``seeds_agree`` (every seed, bracketed alone, gives the same bracket), and
        the probe's critical rates: ``pred_sharpness`` (the top Hessian eigenvalue: ``2(1+mu)/lambda``
        for heavy ball, Cohen et al.'s adaptive edge for Adam), ``pred_k_on_policy`` (the reward
        curvature K, on-policy; with ``num_iterations`` > 1 the stale refresh model),
        ``pred_k_constant_lag`` (K with the paper's constant lag ``d = k_ref``), each with
        ``*_ratio_lo``/``*_ratio_hi``: the bracket over the prediction.

    Raises
    ------
    DataError
        A run without ``probe.json``, or fewer than two rates for a group.
    """
    rows, probes = [], {}
    for run in runs:
        path = run.path / "probe.json"
        if not path.is_file():
            raise DataError(f"`runs`: {run.name} has no probe.json (run the preset with probe = true)")
        cfg = run.config
        key = (str(cfg["optimizer"]), int(cfg["num_iterations"]))
        probes.setdefault(key, json.loads(path.read_text(encoding="utf-8")))
        t, y = run.reward()
        stop = (run.summary or {}).get("stopped_early") or {}
        shape, start = classify_run(y), float(y[:10].mean())
        below = np.flatnonzero(np.convolve(y, np.ones(10) / 10, mode="valid") < start / 2)
        collapsed_at = float(t[below[0] + 9]) if shape == "collapsed" and below.size else math.nan
        rows.append({"optimizer": key[0], "num_iterations": key[1], "learning_rate": float(cfg["learning_rate"]),
                     "seed": run.seed, "start": start,
                     "end": float(y[-max(10, y.size // 10):].mean()), "shape": shape,
                     "steps": int(t[-1]), "stopped": int(stop.get("step", 0)), "collapsed_at": collapsed_at})
    frame = pd.DataFrame(rows).sort_values(["optimizer", "num_iterations", "learning_rate", "seed"],
                                           ignore_index=True)
    crit = []
    for (opt, ni), grp in frame.groupby(["optimizer", "num_iterations"], sort=True):
        # a rate is collapsed when at least half of its seeds collapsed
        by_rate = grp.groupby("learning_rate")["shape"].apply(lambda s: float((s == "collapsed").mean()))
        if len(by_rate) < 2:
            raise DataError(f"`runs`: {opt} at num_iterations {ni} has one learning rate; a sweep needs two")
        lo, hi = _bracket(by_rate.index.to_numpy(), by_rate.to_numpy() >= 0.5)
        per_seed = {seed: _bracket(g.learning_rate.to_numpy(), (g["shape"] == "collapsed").to_numpy())
                    for seed, g in grp.groupby("seed") if g.learning_rate.nunique() >= 2}
        pred = probes[(opt, ni)]["predictions"]["adam" if "adam" in opt.lower() else "sgd_momentum"]
        reuse = pred["num_iterations_4"] if ni == 4 else None
        preds = {"pred_sharpness": pred["eta_crit_sharpness"],
                 "pred_k_on_policy": reuse["eta_crit"] if reuse else pred["eta_crit"],
                 "pred_k_constant_lag": reuse["eta_crit_constant_lag"] if reuse else pred["eta_crit_constant_lag"]}
        row = {"optimizer": opt, "num_iterations": ni, "seeds": int(grp.seed.nunique()),
               "runs": len(grp), "seeds_per_rate": int(grp.groupby("learning_rate").seed.nunique().min()),
               "stable_up_to": lo, "collapsed_from": hi,
               "seeds_agree": len(set(per_seed.values())) <= 1}
        for name, value in preds.items():
            row[name] = float(value)
            row[f"{name}_ratio_lo"], row[f"{name}_ratio_hi"] = lo / float(value), hi / float(value)
        crit.append(row)
    return frame, pd.DataFrame(crit)


def lr_time_curves(runs: Sequence[Run], *, window: int = 10) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs that did not collapse, in learning-rate time, with the probe's predicted time scale.

    The oscillator model's clock is the cumulative learning rate ``tau = sum_t eta_t``
    (:func:`grpo_core.laws.clock.learning_rate_clock`, the logged warm-up included): runs that
    differ only in their (stable) rate follow one curve in ``tau``. The probe's prediction of the
    time to 90% of the plateau, in steps at the probe's rate, is turned into ``tau`` the same way.

    Parameters
    ----------
    runs : sequence of Run
        Runs with a logged ``learning_rate`` and a ``probe.json``.
    window : int, default 10
        Trailing mean of the reward (logged points).

    Returns
    -------
    curves : pandas.DataFrame
        ``optimizer``, ``num_iterations``, ``learning_rate``, ``seed``, ``tau``, ``reward`` (the
        trailing mean), for the runs :func:`classify_run` does not call collapsed.
    scales : pandas.DataFrame
        One row per (``optimizer``, ``num_iterations``): ``tau90_predicted`` (the probe's t90 at its
        rate, times that rate) and ``tau90_measured`` (the median over the stable runs of the
        cumulative rate at their :func:`measured_t90`; NaN when no run rose).

    Raises
    ------
    DataError
        A run without ``probe.json`` or without a logged learning rate.
    """
    from ..laws.clock import learning_rate_clock

    curves, scales = [], {}
    for run in runs:
        t, yy = run.reward()
        if classify_run(yy) == "collapsed":
            continue
        path = run.path / "probe.json"
        if not path.is_file():
            raise DataError(f"`runs`: {run.name} has no probe.json")
        steps, rate = run.metrics.series("learning_rate")
        if steps.size == 0:
            raise DataError(f"`runs`: {run.name} logs no learning_rate")
        clock, eta_ref = learning_rate_clock(t, steps, rate)  # steps at the peak rate, warm-up counted
        tau = clock * eta_ref
        smooth = np.convolve(yy, np.ones(window) / window, mode="valid")
        key = (str(run.config["optimizer"]), int(run.config["num_iterations"]))
        curves.append(pd.DataFrame({"optimizer": key[0], "num_iterations": key[1],
                                    "learning_rate": float(run.config["learning_rate"]), "seed": run.seed,
                                    "tau": tau[window - 1:], "reward": smooth}))
        t90 = json.loads(path.read_text(encoding="utf-8"))["predictions"]["t90"]
        entry = scales.setdefault(key, {"tau90_predicted": float(t90["steps"]) * float(t90["learning_rate"]),
                                        "measured": []})
        m = measured_t90(t, yy, window=window) if yy.size >= window + 50 else math.nan
        if math.isfinite(m):
            entry["measured"].append(float(np.interp(m, t, tau)))
    if not curves:
        raise DataError("`runs`: every run collapsed; there is no curve in learning-rate time")
    table = pd.DataFrame([{"optimizer": k[0], "num_iterations": k[1], "tau90_predicted": v["tau90_predicted"],
                           "tau90_measured": float(np.median(v["measured"])) if v["measured"] else math.nan}
                          for k, v in sorted(scales.items())])
    return pd.concat(curves, ignore_index=True), table
