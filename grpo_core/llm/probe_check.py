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

__all__ = ["measured_t90", "probe_against_runs"]


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
