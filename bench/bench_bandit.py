"""Benchmark of the softmax-bandit simulator (grpo_core.bandit) and of the bandit chapter.

Rows (printed side by side by ``python -m bench bandit``):

* ``vectorised``: one call of :func:`grpo_core.bandit.simulate` for 32 K_ref values x 64 seeds x
  2,000 steps (two arms, G = 8, B = 1, constant lag, heavy ball, beta = 1): the sweep as one array
  program.
* ``loop over configurations``: the same 32 configurations, one ``simulate`` call each (64 seeds
  vectorised inside each call).
* ``loop over runs``: the same shipped simulator called once per (configuration, seed) run, i.e.
  2,048 calls; timed on a subset of runs spread over the K_ref values and extrapolated (the
  trajectories of the subset are checked to be identical to the vectorised ones: each seed owns its
  random stream).
* ``threshold table``: the chapter's 34 measured critical ``eta*K`` (mean field).
* ``chapter``: the bandit chapter executed end to end (``book/bandit.md``, as the book build does).

Speed is reported as ratios measured in one run, never asserted in tests.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from bench._timing import timed
from grpo_core.bandit import BanditSpec, simulate, thresholds

ROOT = Path(__file__).resolve().parents[1]




def _chapter_seconds(path: Path) -> float:
    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(path)
    os.environ["GRPO_BOOK_BUILD"] = "1"
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    return time.perf_counter() - t0


def main(quick: bool = False) -> list[dict]:
    n_k, n_seeds = (8, 16) if quick else (32, 64)
    steps = 300 if quick else 2000
    spec = BanditSpec.binary(group_size=8)
    k_refs = np.arange(1, n_k + 1)
    kw = dict(eta=0.5, mu=0.5, beta=1.0, steps=steps)
    samples = n_k * n_seeds * steps * spec.num_prompts * spec.group_size

    t_vec, run = timed(lambda: simulate(spec, k_ref=k_refs, seeds=n_seeds, **kw), repeat=1 if quick else 2)
    t_cfg, per_cfg = timed(lambda: [simulate(spec, k_ref=int(k), seeds=n_seeds, **kw) for k in k_refs])
    assert all(np.array_equal(per_cfg[i].p[0], run.p[i]) for i in range(n_k))

    # Per-run loop on a subset (two seeds per K_ref value), extrapolated to all runs.
    subset = [(i, s) for i in range(n_k) for s in (0, n_seeds - 1)]
    t_sub, singles = timed(lambda: [simulate(spec, k_ref=int(k_refs[i]), seeds=[s], **kw) for i, s in subset])
    assert all(np.array_equal(r.p[0, 0], run.p[i, s]) for r, (i, s) in zip(singles, subset))
    t_runs = t_sub * (n_k * n_seeds) / len(subset)

    rows = [
        {"case": f"vectorised ({n_k} K_ref x {n_seeds} seeds x {steps} steps)", "seconds": t_vec,
         "ratio_vs_vectorised": 1.0, "samples_per_s": samples / t_vec},
        {"case": "loop over configurations (seeds vectorised)", "seconds": t_cfg,
         "ratio_vs_vectorised": t_cfg / t_vec, "samples_per_s": samples / t_cfg},
        {"case": f"loop over runs (extrapolated from {len(subset)} of {n_k * n_seeds})", "seconds": t_runs,
         "ratio_vs_vectorised": t_runs / t_vec, "samples_per_s": samples / t_runs},
    ]
    settings = [dict(lag=lag, mu=mu, k_ref=k) for lag in ("constant", "refresh") for mu in (0.0, 0.5, 0.9)
                for k in (1, 2, 4, 8, 16)]
    if quick:
        settings = settings[:6]
    t_thr, _ = timed(lambda: thresholds.threshold_table(settings, beta=1.0))
    rows.append({"case": f"threshold table ({len(settings)} critical eta*K, mean field)", "seconds": t_thr})
    if not quick:
        rows.append(
            {
                "case": "chapter book/bandit.md, all cells",
                "seconds": _chapter_seconds(ROOT / "book" / "bandit.md"),
            }
        )
    return rows
