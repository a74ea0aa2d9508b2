"""Reading and diagnosing long training logs; writing the HTML report.

A constructed log (:func:`grpo_core.runs.synthetic.synthetic_log`, the unstable kind, so every check
has something to do) is written as a TRL ``trainer_state.json``, as JSON lines and as a CSV, then
read back and diagnosed. The aim: a 100,000-step log read and diagnosed in under 2 s. Rows print
the seconds of each stage and the total; ``report_s`` is the HTML report of the same log (charts
thinned to 1,500 points per series).
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from pathlib import Path

from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import read_log
from grpo_core.runs.synthetic import synthetic_log

_TRL_NAMES = {"reward/accuracy": "rewards/accuracy/mean"}


def _write(folder: Path, n_steps: int) -> dict[str, Path]:
    log = synthetic_log("dynamic_instability", n_steps=n_steps, num_prompts=8, seed=0)
    train = log.train.rename(columns=_TRL_NAMES)
    records = [{k: (int(v) if k == "step" else float(v)) for k, v in row.items()}
               for row in train.to_dict(orient="records")]
    paths = {
        "trainer_state.json": folder / "trainer_state.json",
        "jsonl": folder / "log_history.jsonl",
        "csv": folder / "log.csv",
    }
    paths["trainer_state.json"].write_text(json.dumps({"global_step": n_steps, "log_history": records}))
    with paths["jsonl"].open("w") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    train.to_csv(paths["csv"], index=False)
    return paths


def main(quick: bool = False) -> list[dict]:
    sizes = [10_000] if quick else [10_000, 100_000]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # One small diagnosis first: the one-off imports (scipy.optimize, scipy.stats: about
        # 1.5 s) are not part of the per-log cost measured below.
        t0 = time.perf_counter()
        diagnose(synthetic_log("healthy", n_steps=200), n_boot=10)
        rows.append({"steps": 200, "format": "(warm-up: imports)", "total_s": time.perf_counter() - t0})
        for n in sizes:
            folder = Path(tmp) / str(n)
            folder.mkdir()
            paths = _write(folder, n)
            for name, path in paths.items():
                t0 = time.perf_counter()
                log = read_log(path)
                t1 = time.perf_counter()
                diagnosis = diagnose(log, group_size=8)
                t2 = time.perf_counter()
                row = {"steps": n, "format": name, "MB": round(path.stat().st_size / 1e6, 1),
                       "read_s": t1 - t0, "diagnose_s": t2 - t1, "total_s": t2 - t0,
                       "under_2s": (t2 - t0) < 2.0, "modes": ",".join(diagnosis.modes)}
                if name == "trainer_state.json":
                    from grpo_dynamics.report import render_report

                    render_report(log, diagnosis, group_size=8)  # first call builds the JS bundle
                    t3 = time.perf_counter()
                    render_report(log, diagnosis, group_size=8)
                    row["report_s"] = time.perf_counter() - t3
                rows.append(row)
    return rows
