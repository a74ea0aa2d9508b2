"""U-statistic estimators and the group-size chapters: speed, measured as ratios in one run.

Rows:

* the O(G) leave-one-out estimator (``ustat.group_gradient``) against the pairwise O(G^2)
  U-statistic (``ustat.pairwise_leave_one_out``) at G = 256 (results checked equal);
* the whole MSE-against-G curve, G = 2 .. 1,024, 100,000 groups per point, all five estimators
  (``ustat.monte_carlo_mse``, count-based sampling), and the same curve by sampling every
  completion explicitly (scores and rewards, then ``group_gradient``) for a few G, per group;
* the constants' estimator with a 1,000-resample bootstrap (``groupsize.estimate_constants``);
* one fixed-budget training study (``groupsize.train_fixed_budget``, N = 1,024, 7 group sizes,
  16 seeds, 200 Adam steps);
* both chapters executed as the book build does (``scripts/run_chapter.py``): target under 2 minutes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench._timing import best_of
from grpo_core import groupsize
from grpo_core.groupsize import ustat
from grpo_core.softmax import sample_categorical, score

ROOT = Path(__file__).resolve().parents[1]
PROBS = np.array([0.2] + [0.8 / 7] * 7)
REWARDS = np.array([1.0] + [0.0] * 7)




def _explicit_curve_per_group(sizes, groups: int) -> float:
    """Seconds per group of the explicit (per-completion) Monte Carlo, averaged over ``sizes``."""
    rng = np.random.default_rng(0)
    total = 0.0
    for g in sizes:
        t0 = time.perf_counter()
        probs = np.broadcast_to(PROBS, (groups, PROBS.size))
        arms = sample_categorical(probs, g, rng)
        w, z = score(arms, probs), REWARDS[arms]
        for name in ustat.ESTIMATORS:
            ustat.group_gradient(w, z, estimator=name, value=float(PROBS @ REWARDS))
        total += (time.perf_counter() - t0) / groups
    return total / len(sizes)


def main(quick: bool = False) -> list[dict]:
    rows: list[dict] = []

    # O(G) against O(G^2) at G = 256
    g, d = 256, 8
    n = 20 if quick else 200
    rng = np.random.default_rng(0)
    w, z = rng.normal(size=(n, g, d)), rng.normal(size=(n, g))
    fast = best_of(lambda: ustat.group_gradient(w, z, estimator="leave_one_out"), 5)
    slow = best_of(lambda: ustat.pairwise_leave_one_out(w, z), 2)
    diff = float(np.abs(ustat.group_gradient(w, z) - ustat.pairwise_leave_one_out(w, z)).max())
    rows.append({"case": f"leave-one-out, G = {g}, D = {d}, {n} groups: O(G) vs pairwise O(G^2)",
                 "fast_s": fast, "reference_s": slow, "ratio": slow / fast, "max_abs_diff": diff})

    # the whole MSE-against-G curve
    groups = 10_000 if quick else 100_000
    sizes = 2 ** np.arange(1, 11)
    t0 = time.perf_counter()
    ustat.monte_carlo_mse(PROBS, REWARDS, sizes, groups, seed=0)
    curve = time.perf_counter() - t0
    per_group_counts = curve / (groups * len(sizes))
    per_group_explicit = _explicit_curve_per_group([8, 64, 256], 2_000 if quick else 10_000)
    rows.append({"case": f"MSE curve G = 2..1024, {groups:,} groups per point, 5 estimators (target < 5 s)",
                 "fast_s": curve})
    rows.append({"case": "per group, averaged over G in {8, 64, 256}: explicit samples vs arm counts",
                 "fast_s": per_group_counts, "reference_s": per_group_explicit,
                 "ratio": per_group_explicit / per_group_counts})

    # estimating the constants
    pool = groupsize.beta_difficulty_pool(256, 8, mean=0.2, spread=0.1)
    ws, zs, _ = groupsize.sample_pool_groups(pool, 512, 8, np.random.default_rng(0))
    est = best_of(lambda: groupsize.estimate_constants(ws, zs, num_bootstrap=1000), 3)
    rows.append({"case": "estimate_constants, 512 prompts x 8, 1,000 bootstrap resamples", "fast_s": est})

    # one fixed-budget study
    seeds, steps = (4, 50) if quick else (16, 200)
    t0 = time.perf_counter()
    groupsize.train_fixed_budget(pool, 1024, [2, 4, 8, 16, 32, 64, 128], num_seeds=seeds, num_steps=steps,
                                 learning_rate=0.02, optimizer="adam")
    rows.append({"case": f"train_fixed_budget N = 1024, 7 G, {seeds} seeds x {steps} Adam steps",
                 "fast_s": time.perf_counter() - t0})

    if not quick:
        total = 0.0
        for chapter in ("ustatistic", "group_size"):
            t0 = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "scripts" / "run_chapter.py"),
                    str(ROOT / "book" / f"{chapter}.md"),
                ],
                check=True,
                capture_output=True,
            )
            took = time.perf_counter() - t0
            total += took
            rows.append({"case": f"chapter {chapter}.md executed (kernel start included)", "fast_s": took})
        rows.append({"case": "both chapters together (target < 120 s)", "fast_s": total})
    return rows
