"""Wall time of the book build: from a clean output folder, then again on the unchanged tree.

The first build executes every chapter (jupyter-cache is empty); the second finds every notebook
in the cache and only re-renders what changed (nothing). Both use the current ``.venv`` and the
vendored page assets, into a temporary output folder (``_build`` is left alone).
Aims (2 cores): clean under 5 minutes, unchanged under 30 seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(out: Path) -> float:
    cmd = [
        str(Path(sys.executable).with_name("jupyter-book")), "build", "book",
        "--config", str(ROOT / "_config.yml"), "--toc", str(ROOT / "_toc.yml"),
        "--path-output", str(out), "-W", "-n", "--keep-going",
    ]
    env = dict(os.environ, GRPO_BOOK_BUILD="1", PYTHONHASHSEED="0")
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(quick: bool = False) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-book-") as tmp:
        out = Path(tmp)
        clean = _build(out)
        unchanged = _build(out)
    return [
        {"build": "clean tree (executes every chapter)", "seconds": clean, "aim_s": 300},
        {"build": "unchanged tree (cache hit)", "seconds": unchanged, "aim_s": 30},
        {"build": "ratio clean/unchanged", "seconds": clean / unchanged, "aim_s": ""},
    ]
