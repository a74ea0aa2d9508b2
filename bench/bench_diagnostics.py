"""Reading and diagnosing long training logs, in every format the reader knows; writing the HTML report.

One constructed series (:func:`grpo_core.runs.synthetic.synthetic_log`, the unstable kind, so every
check has something to do) is written in each format :func:`grpo_core.runs.logs.read_log` reads (see
:mod:`grpo_core.runs.logs.detect` and :mod:`grpo_core.runs.logs.console`): a TRL ``trainer_state.json``,
its ``log_history`` as JSON lines, a CSV of TRL keys, a notebook progress-table CSV, a TRL console log
(the printed metric dicts between progress-bar lines), verl metrics as JSON lines and as console lines
(``step:N - key:value``; verl logs no zero-spread fraction, so fewer checks run), a W&B CSV export
(``Step``, ``<run> - train/<key>`` with the ``__MIN``/``__MAX`` band columns) and an ms-swift
``logging.jsonl`` (``global_step/max_steps``). Each is read back and diagnosed.

A row per format and size: the file's size, the seconds to read and to diagnose (each format in a
fresh process, after a warm-up diagnosis that does the one-off imports), the peak of memory traced
by :mod:`tracemalloc` during read + diagnose (a second, traced run: Python and NumPy allocations),
and the growth of the process's peak resident set over the timed run (``VmHWM`` after a reset of the
high-water mark, less ``VmRSS`` before; Linux). The aim: a
100,000-step log read and diagnosed in under 2 s (``under_2s`` says; never asserted). ``report_s``
is the HTML report of the ``trainer_state.json`` log (charts thinned to 1,500 points per series).

Then a long CSV (2,000,000 rows of eight float columns, 163 MB; 200,000 rows with ``--quick``), past the
100,000 steps :func:`~grpo_core.runs.logs.read_log` reads in full: read and diagnosed as read by default
(thinned) and with ``max_rows=0`` (every row, as before logs were thinned; the parser is the current one),
each in a fresh process, with its CPU seconds (``cpu_s``) and absolute peak resident set (``peak_rss_MB``), and a
row of the ratios (every row / thinned) and whether the verdict and findings agree.
"""

from __future__ import annotations

import json
import multiprocessing
import resource
import sys
import tempfile
import time
import tracemalloc
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

#: Normalised name -> the key TRL logs it under (the others are spelled alike).
_TRL_NAMES = {"reward/accuracy": "rewards/accuracy/mean"}
#: Normalised name -> verl's key (verl logs no reward_std or zero-spread fraction).
_VERL_NAMES = {"reward": "critic/score/mean", "entropy": "actor/entropy", "kl": "actor/kl_loss",
               "grad_norm": "actor/grad_norm", "loss": "actor/pg_loss"}
#: Normalised name -> the notebook progress table's column.
_NOTEBOOK_NAMES = {"step": "Step", "loss": "Training Loss", "reward/accuracy": "rewards / accuracy"}
_FORMATS = ("trainer_state.json", "trl jsonl", "trl csv", "notebook csv", "trl console .log", "verl jsonl",
            "verl console", "wandb csv export", "ms-swift logging.jsonl")


def _series(n_steps: int):
    from grpo_core.runs.synthetic import synthetic_log

    train = synthetic_log("dynamic_instability", n_steps=n_steps, num_prompts=8, seed=0).train
    cols = [c for c in train.columns if c != "step"]
    steps = train["step"].to_numpy(dtype=int)
    return steps, {c: train[c].to_numpy(dtype=float) for c in cols}


def _records(steps, values, names) -> list[dict]:
    keys = [(names.get(c, c), v.tolist()) for c, v in values.items()]
    return [{"step": int(s), **{k: v[i] for k, v in keys}} for i, s in enumerate(steps.tolist())]


def _write_csv(path: Path, header: list[str], columns: list[list]) -> None:
    with path.open("w") as fh:
        fh.write(",".join(header) + "\n")
        for row in zip(*columns):
            fh.write(",".join(map(repr, row)) + "\n")


def _write(folder: Path, n_steps: int) -> dict[str, Path]:
    """The one series in every format; format name -> file."""
    steps, values = _series(n_steps)
    trl = _records(steps, values, _TRL_NAMES)
    paths = {name: folder / f"{i}-{name.replace(' ', '_')}" for i, name in enumerate(_FORMATS)}
    paths["trainer_state.json"].write_text(json.dumps({"global_step": n_steps, "log_history": trl}))
    paths["trl jsonl"].write_text("".join(json.dumps(r) + "\n" for r in trl))
    cols = list(trl[0])
    _write_csv(paths["trl csv"], cols, [[r[c] for r in trl] for c in cols])
    nb = {"step": steps.tolist(), **{k: v.tolist() for k, v in values.items()}}
    _write_csv(paths["notebook csv"], [_NOTEBOOK_NAMES.get(c, c) for c in nb], list(nb.values()))
    with paths["trl console .log"].open("w") as fh:
        # what a TRL run prints: the progress bar, redrawn, and the metric dict of each logged step
        fh.write("***** Running training *****\n")
        for r in trl:
            s = r["step"]
            fh.write(f"{100 * s // n_steps:3d}%|#         | {s}/{n_steps} [00:{s % 60:02d}<00:10,  1.00it/s]\n")
            fh.write(str({k: v for k, v in r.items() if k != "step"} | {"epoch": round(s / n_steps, 4)}) + "\n")
    verl = [{("step" if k == "step" else _VERL_NAMES[k]): v for k, v in r.items() if k == "step" or k in _VERL_NAMES}
            for r in _records(steps, values, {})]
    paths["verl jsonl"].write_text("".join(json.dumps(r) + "\n" for r in verl))
    with paths["verl console"].open("w") as fh:
        for r in verl:
            fh.write(f"(TaskRunner pid=1) step:{r['step']} - " +
                     " - ".join(f"{k}:{v!r}" for k, v in r.items() if k != "step") + "\n")
    wandb_cols = {"Step": steps.tolist()}
    for c, v in values.items():
        key = "run-a - train/" + _TRL_NAMES.get(c, c)
        wandb_cols[key] = v.tolist()
        wandb_cols[key + "__MIN"] = v.tolist()
        wandb_cols[key + "__MAX"] = v.tolist()
    _write_csv(paths["wandb csv export"], list(wandb_cols), list(wandb_cols.values()))
    with paths["ms-swift logging.jsonl"].open("w") as fh:
        for r in trl:
            rec = {k: v for k, v in r.items() if k != "step"}
            rec |= {"epoch": round(r["step"] / n_steps, 6), "global_step/max_steps": f"{r['step']}/{n_steps}",
                    "percentage": f"{100 * r['step'] / n_steps:.2f}%", "memory(GiB)": 21.5,
                    "train_speed(iter/s)": 0.05}
            fh.write(json.dumps(rec) + "\n")
    return paths


def _status_mb(field: str) -> float | None:
    """``VmRSS``/``VmHWM`` of this process in MB (Linux ``/proc``), or None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e3  # kB
    except OSError:
        pass
    return None


def _reset_peak_rss() -> float:
    """Reset the resident-set high-water mark to the current size (Linux ``clear_refs``); the current size
    in MB. ``ru_maxrss`` cannot be used: it keeps the size of the parent at ``fork``, across ``exec``."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    now = _status_mb("VmRSS")
    return now if now is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def _peak_rss() -> float:
    peak = _status_mb("VmHWM")
    if peak is not None:
        return peak
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1e6 if sys.platform == "darwin" else rss / 1e3  # bytes on macOS, KiB elsewhere


def _measure(name: str, path: str, n_steps: int, report: bool) -> dict:
    """One format, in a process of its own: time, traced peak and resident-set growth of read + diagnose."""
    from grpo_core.runs.diagnostics import diagnose
    from grpo_core.runs.logs import read_log
    from grpo_core.runs.synthetic import synthetic_log

    warnings.simplefilter("ignore")
    diagnose(synthetic_log("healthy", n_steps=200), n_boot=10)  # the one-off imports (scipy ...)
    rss0 = _reset_peak_rss()
    t0 = time.perf_counter()
    log = read_log(path)
    t1 = time.perf_counter()
    diagnosis = diagnose(log, group_size=8)
    t2 = time.perf_counter()
    rss_growth = _peak_rss() - rss0
    tracemalloc.start()
    diagnose(read_log(path), group_size=8)
    traced_peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    row = {"steps": n_steps, "format": name, "container": log.container, "rows": len(log.train),
           "MB": round(Path(path).stat().st_size / 1e6, 1), "read_s": t1 - t0, "diagnose_s": t2 - t1,
           "total_s": t2 - t0, "under_2s": (t2 - t0) < 2.0, "traced_peak_MB": traced_peak,
           "rss_growth_MB": rss_growth, "verdict": diagnosis.verdict, "modes": ",".join(diagnosis.modes)}
    if report:
        from grpo_dynamics.report import render_report

        render_report(log, diagnosis, group_size=8)  # first call builds the JS bundle
        t3 = time.perf_counter()
        render_report(log, diagnosis, group_size=8)
        row["report_s"] = time.perf_counter() - t3
    return row


def _write_long_csv(path: Path, n_rows: int) -> None:
    """A GRPO-like run of ``n_rows`` steps as a CSV of eight float columns (163 MB at 2,000,000 rows)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    s = np.arange(1, n_rows + 1)
    pd.DataFrame({
        "step": s, "reward": 0.9 - 0.7 * np.exp(-s / (0.15 * n_rows)) + 0.05 * rng.standard_normal(n_rows),
        "reward_std": 0.3 + 0.01 * rng.standard_normal(n_rows), "loss": 0.01 * rng.standard_normal(n_rows),
        "kl": 0.002 + 0.02 * s / n_rows + 1e-4 * rng.random(n_rows),
        "grad_norm": 0.5 + 0.05 * rng.standard_normal(n_rows), "learning_rate": np.full(n_rows, 1e-6),
        "completion_length": 200 + 10 * rng.standard_normal(n_rows),
    }).to_csv(path, index=False, float_format="%.8g")


def _measure_long(path: str, n_rows: int, max_rows: int | None) -> dict:
    """Read + diagnose the long CSV in a process of its own: seconds and the absolute peak resident set."""
    from grpo_core.runs.diagnostics import diagnose
    from grpo_core.runs.logs import read_log
    from grpo_core.runs.synthetic import synthetic_log

    warnings.simplefilter("ignore")
    diagnose(synthetic_log("healthy", n_steps=200), n_boot=10)  # the one-off imports (scipy ...)
    rss0 = _reset_peak_rss()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    log = read_log(path, max_rows=max_rows)
    t1 = time.perf_counter()
    diagnosis = diagnose(log)
    t2 = time.perf_counter()
    cpu = time.process_time() - cpu0  # CPU seconds: steadier than wall time on a shared machine
    return {"steps": n_rows, "format": "long csv, " + ("thinned" if max_rows is None else "every row (max_rows=0)"),
            "container": log.container, "rows": len(log.train), "MB": round(Path(path).stat().st_size / 1e6, 1),
            "read_s": t1 - t0, "diagnose_s": t2 - t1, "total_s": t2 - t0, "cpu_s": cpu, "peak_rss_MB": _peak_rss(),
            "rss_growth_MB": _peak_rss() - rss0, "verdict": diagnosis.verdict, "modes": ",".join(diagnosis.modes),
            "findings": ",".join(f"{f.mode}:{f.severity}" for f in diagnosis.findings)}


def _long_rows(folder: Path, n_rows: int, spawn) -> list[dict]:
    """The long CSV read thinned and whole, and the ratios of the two."""
    path = folder / "long.csv"
    _write_long_csv(path, n_rows)
    rows = []
    for max_rows in (None, 0):
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            rows.append(pool.submit(_measure_long, str(path), n_rows, max_rows).result())
    thin, whole = rows
    rows.append({"steps": n_rows, "format": "long csv, every row / thinned",
                 "total_s_ratio": whole["total_s"] / thin["total_s"], "cpu_s_ratio": whole["cpu_s"] / thin["cpu_s"],
                 "read_s_ratio": whole["read_s"] / thin["read_s"],
                 "peak_rss_ratio": whole["peak_rss_MB"] / thin["peak_rss_MB"],
                 "same_verdict": thin["verdict"] == whole["verdict"],
                 "same_findings": thin["findings"] == whole["findings"]})
    return rows


def main(quick: bool = False) -> list[dict]:
    sizes = [2_000] if quick else [10_000, 100_000]
    rows = []
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            folder = Path(tmp) / str(n)
            folder.mkdir()
            paths = _write(folder, n)
            for name, path in paths.items():
                with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                    rows.append(pool.submit(_measure, name, str(path), n, name == "trainer_state.json").result())
        rows += _long_rows(Path(tmp), 200_000 if quick else 2_000_000, spawn)
    return rows
