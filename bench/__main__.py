"""Run the benchmarks and print their rows side by side; also write bench/results/<topic>.json.

Usage: ``python -m bench [TOPIC ...] [--quick]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import platform
import time
from pathlib import Path

import bench

RESULTS = Path(__file__).resolve().parent / "results"


def _print_rows(topic: str, rows: list[dict]) -> None:
    print(f"\n== {topic} ==")
    records = [r for r in rows if r.get("method") == "record"]  # per-run rows: in the json file only
    rows = [r for r in rows if r.get("method") != "record"]
    if records:
        print(f"({len(records)} per-run records written to the results file, not printed)")
    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    widths = {k: max(len(k), *(len(_fmt(r.get(k, ""))) for r in rows)) for k in keys}
    print("  ".join(k.ljust(widths[k]) for k in keys))
    for r in rows:
        print("  ".join(_fmt(r.get(k, "")).ljust(widths[k]) for k in keys))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("topics", nargs="*", help="topics to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    found = sorted(
        m.name[len("bench_") :] for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    topics = args.topics or found
    unknown = sorted(set(topics) - set(found))
    if unknown:
        parser.error(f"unknown topic(s) {unknown}; available: {found}")
    RESULTS.mkdir(exist_ok=True)
    print(f"python {platform.python_version()} on {platform.machine()}, {time.strftime('%Y-%m-%d %H:%M')}")
    for topic in topics:
        module = importlib.import_module(f"bench.bench_{topic}")
        rows = module.main(quick=args.quick)
        _print_rows(topic, rows)
        (RESULTS / f"{topic}.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
