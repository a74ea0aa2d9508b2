"""How fast a long console log is read and diagnosed, now and at a reference commit, side by side.

The log is the TRL console log of :mod:`bench.bench_diagnostics` (its ``_write``: the printed metric dict of
each step between progress-bar lines, the unstable constructed series, 100,000 steps, 29 MB; 2,000 with
``--quick``). Rows, each measured in a fresh process after a warm-up diagnosis that does the one-off imports
(CPU seconds, best of ``REPEAT``; the machine is shared, so CPU time is steadier than wall time):

* ``read``: :func:`grpo_core.runs.logs.read_log` of the log;
* ``diagnose``: :func:`grpo_core.runs.diagnostics.diagnose` of what was read (defaults: forecast, law fit,
  implied curvature);
* ``command line``: ``python -m grpo_dynamics diagnose LOG --json``, start to end (imports included), CPU of
  the child process and its wall time;
* ``1,000-step run``: read + diagnose of the same series at 1,000 steps;
* ``shipped runs``: read + diagnose of every run of the four collections of real runs
  (:func:`grpo_core.runs.datasets.real_runs`, with their ``run`` selection), per run: mean, median and
  largest (left out with ``--quick``).

``now_s`` is this working tree; ``before_s`` the commit :data:`REFERENCE` (the tree before the reading and
the curvature fit were made faster), extracted with ``git archive`` into a temporary folder and imported from
there; ``speedup`` is ``before_s / now_s``. Without git or that commit the ``before`` columns are left out.
The aim (never asserted): the 100,000-step log read and diagnosed, and diagnosed through the command line,
in under 2 s (``under_2s``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The commit measured as "before": the parent of the first commit that made log reading faster.
REFERENCE = "4eaec2a"
#: Repeats of each measurement (the best is kept).
REPEAT = 3
_ROOT = Path(__file__).resolve().parent.parent

# Runs in a fresh interpreter whose ``sys.path`` starts with the tree measured; prints one JSON object.
_WORKER = r"""
import json, statistics, sys, time, warnings
warnings.simplefilter("ignore")
from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.logs import read_log
what, repeat, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
diagnose(read_log(paths[0]))  # the one-off imports and caches

def best(f):
    out, b = None, float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        out = f()
        b = min(b, time.process_time() - t0)
    return b, out

if what == "log":
    read_s, log = best(lambda: read_log(paths[0]))
    diag_s, d = best(lambda: diagnose(log))
    print(json.dumps({"read": read_s, "diagnose": diag_s, "rows": len(log.train), "verdict": d.verdict}))
else:
    from grpo_core.runs import datasets
    per = []
    for coll in datasets.RUN_COLLECTIONS:
        for rid in datasets.real_runs(coll):
            r = datasets.real_run(rid, coll)
            t0 = time.process_time()
            diagnose(read_log(r.path, run=r.run))
            per.append(time.process_time() - t0)
    print(json.dumps({"mean": statistics.mean(per), "median": statistics.median(per), "max": max(per),
                      "runs": len(per)}))
"""


def _reference_tree(folder: Path) -> Path | None:
    """The packages at :data:`REFERENCE`, extracted into ``folder``; ``None`` without git or that commit."""
    try:
        archive = subprocess.run(["git", "-C", str(_ROOT), "archive", REFERENCE, "grpo_core", "grpo_dynamics"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return folder


def _env(tree: Path) -> dict[str, str]:
    # the tree measured comes first on the path (before an installed copy of the package)
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}


def _worker(tree: Path, what: str, paths: list[str], cwd: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _WORKER, what, str(REPEAT), *paths], env=_env(tree), cwd=cwd,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _command_line(tree: Path, log: str, cwd: str) -> tuple[float, float, int]:
    """Best CPU seconds (user + system of the child) and best wall seconds of ``diagnose LOG --json``, and its
    exit status."""
    cpu, wall, code = float("inf"), float("inf"), None
    for _ in range(REPEAT):
        before = os.times()
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "grpo_dynamics", "diagnose", log, "--json"], env=_env(tree),
                              cwd=cwd, capture_output=True, text=True)
        wall = min(wall, time.perf_counter() - t0)
        after = os.times()
        cpu = min(cpu, (after.children_user - before.children_user) + (after.children_system - before.children_system))
        json.loads(done.stdout)  # one JSON object, as the command promises
        code = done.returncode
    return cpu, wall, code


def _row(case: str, what: str, now: float, before: float | None, **extra) -> dict:
    row = {"case": case, "what": what, "now_s": round(now, 3)}
    if before is not None:
        row["before_s"] = round(before, 3)
        row["speedup"] = round(before / now, 2) if now > 0 else None
    return row | extra


def main(quick: bool = False) -> list[dict]:
    from bench.bench_diagnostics import _write

    n_long = 2_000 if quick else 100_000
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        logs = {}
        for n in (n_long, 1_000):
            folder = tmp_path / f"log{n}"
            folder.mkdir()
            logs[n] = str(_write(folder, n)["trl console .log"])
        ref_dir = tmp_path / "reference"
        ref_dir.mkdir()
        trees = {"now": _ROOT, "before": _reference_tree(ref_dir)}
        got: dict[str, dict] = {}
        for label, tree in trees.items():
            if tree is None:
                continue
            got[label] = {"long": _worker(tree, "log", [logs[n_long]], tmp),
                          "short": _worker(tree, "log", [logs[1_000]], tmp),
                          "cli": _command_line(tree, logs[n_long], tmp)}
            if not quick:
                got[label]["runs"] = _worker(tree, "runs", [logs[1_000]], tmp)
        now, before = got["now"], got.get("before")

        def b(*keys):
            if before is None:
                return None
            v = before
            for k in keys:
                v = v[k]
            return v

        case = f"{n_long:,}-step TRL console log ({Path(logs[n_long]).stat().st_size / 1e6:.0f} MB)"
        rows.append(_row(case, "read", now["long"]["read"], b("long", "read"), rows=now["long"]["rows"]))
        rows.append(_row(case, "diagnose", now["long"]["diagnose"], b("long", "diagnose"),
                         verdict=now["long"]["verdict"]))
        total = now["long"]["read"] + now["long"]["diagnose"]
        total_before = None if before is None else b("long", "read") + b("long", "diagnose")
        rows.append(_row(case, "read + diagnose", total, total_before, under_2s=total < 2.0))
        rows.append(_row(case, "command line (CPU)", now["cli"][0], b("cli", 0), under_2s=now["cli"][0] < 2.0,
                         exit=now["cli"][2]))
        rows.append(_row(case, "command line (wall)", now["cli"][1], b("cli", 1), under_2s=now["cli"][1] < 2.0))
        short = now["short"]["read"] + now["short"]["diagnose"]
        short_before = None if before is None else b("short", "read") + b("short", "diagnose")
        rows.append(_row("1,000-step TRL console log", "read + diagnose", short, short_before,
                         verdict=now["short"]["verdict"]))
        if not quick:
            for stat in ("mean", "median", "max"):
                rows.append(_row(f"shipped real runs ({now['runs']['runs']}), per run", f"read + diagnose, {stat}",
                                 now["runs"][stat], b("runs", stat)))
    return rows
