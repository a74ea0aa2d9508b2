"""Diagnosing many runs with one command: 100 logs of 1,000 steps, as a sweep folder (``runs/<name>/
trainer_state.json``), read and diagnosed by :func:`grpo_core.runs.diagnostics.many.diagnose_many` in one process
and in one process per core, and end to end by ``grpo-dynamics diagnose runs/`` (a fresh process: imports, the
walk, the table). Then the shipped real runs, as a folder.

The logs are :func:`grpo_core.runs.synthetic.synthetic_log` of the five kinds in turn, seeds 0-19 (so the checks
and the forecast have work of every kind). The aim: the 100 runs in under 30 s on two cores (``under_30s`` says;
never asserted). Rows give seconds and the ratio to one process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

_KINDS = ("healthy", "train_eval_decoupling", "advantage_degeneration", "policy_concentration",
          "dynamic_instability")


def _write_sweep(root: Path, n_runs: int, n_steps: int) -> None:
    from grpo_core.runs.synthetic import synthetic_log

    trl = {"reward/accuracy": "rewards/accuracy/mean"}
    for i in range(n_runs):
        kind = _KINDS[i % len(_KINDS)]
        train = synthetic_log(kind, n_steps=n_steps, num_prompts=8, seed=i // len(_KINDS)).train
        history = [{trl.get(k, k): float(v) for k, v in row.items() if v == v} for row in train.to_dict("records")]
        for h in history:
            h["step"] = int(h["step"])
        d = root / f"{i:03d}-{kind}"
        d.mkdir(parents=True)
        (d / "trainer_state.json").write_text(json.dumps({"log_history": history, "global_step": n_steps,
                                                          "max_steps": n_steps}))


def main(quick: bool = False) -> list[dict]:
    from grpo_core.runs import datasets
    from grpo_core.runs.diagnostics.many import diagnose_many
    from grpo_core.runs.logs.discover import find_runs

    n_runs, n_steps = (20, 300) if quick else (100, 1000)
    cores = os.cpu_count() or 1
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        _write_sweep(root, n_runs, n_steps)
        refs, _ = find_runs([root])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            diagnose_many(refs[:2], jobs=1)  # one-off imports
        timings = {}
        for jobs in (1, cores):
            t0 = time.perf_counter()
            out = diagnose_many(refs, jobs=jobs)
            timings[jobs] = time.perf_counter() - t0
            rows.append({"case": f"{n_runs} runs x {n_steps} steps", "how": f"diagnose_many, {jobs} process(es)",
                         "seconds": round(timings[jobs], 2), "ratio_to_1_process": round(timings[jobs] / timings[1], 3),
                         "runs": len(out), "unhealthy": sum(r.verdict == "unhealthy" for r in out)})
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "grpo_dynamics", "diagnose", str(root)], capture_output=True,
                              text=True, check=False)
        cli = time.perf_counter() - t0
        rows.append({"case": f"{n_runs} runs x {n_steps} steps", "how": "grpo-dynamics diagnose runs/ (fresh process)",
                     "seconds": round(cli, 2), "ratio_to_1_process": round(cli / timings[1], 3),
                     "runs": len(proc.stdout.splitlines()) - 4, "exit": proc.returncode,
                     "under_30s": cli < 30})
    real = Path(str(datasets._folder("real_runs")))
    t0 = time.perf_counter()
    out = diagnose_many(find_runs([real])[0], jobs=cores)
    rows.append({"case": "the 20 shipped real runs (22 rows)", "how": f"diagnose_many, {cores} process(es)",
                 "seconds": round(time.perf_counter() - t0, 2), "runs": len(out)})
    rows.append({"case": "machine", "how": f"{cores} cores", "seconds": None})
    return rows
