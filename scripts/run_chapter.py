"""Execute one chapter (a MyST notebook) outside Sphinx, the way the book build does.

Usage: ``python scripts/run_chapter.py book/oscillator.md [--timeout 900]``

Runs every cell with the kernel's working directory set to the chapter's folder and
``GRPO_BOOK_BUILD=1`` (as ``make book`` does), prints each cell's wall time, and exits non-zero
with the failing cell's traceback on the first error. Much faster to iterate with than a full
book build.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jupytext
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("chapter", type=Path)
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args()
    nb = jupytext.read(args.chapter)
    os.environ["GRPO_BOOK_BUILD"] = "1"
    client = NotebookClient(
        nb, timeout=args.timeout, kernel_name="python3",
        resources={"metadata": {"path": str(args.chapter.resolve().parent)}},
    )
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            t0 = time.perf_counter()
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as exc:
                print(f"cell {index} FAILED:\n{exc}", file=sys.stderr)
                return 1
            first = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""
            print(f"cell {index:3d}  {time.perf_counter() - t0:7.2f} s  {first}")
    print(f"{args.chapter}: all cells ran in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
