"""Invalidate the book's execution cache when the code or data the chapters run on changes.

jupyter-cache keys each chapter on its own code cells only, so after a change to ``grpo_core`` or
``widgets`` an unchanged chapter would be served from the cache with outputs of the old code.
This script hashes what the chapters import and read (the two packages, the committed LLM runs,
the pinned requirements); when the hash differs from the one stored with the cache, it deletes
the cache (and Sphinx's saved environment, without which Sphinx would not even re-read an
unchanged chapter) so that ``make book`` executes every chapter again.

Usage: ``python scripts/book_cache.py BUILD_DIR`` (``make book`` calls it).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INPUTS = ("grpo_core", "widgets", "book/experiments/runs", "requirements.txt")
SKIP = {"__pycache__", ".ipynb_checkpoints"}


def inputs_hash(root: Path = ROOT) -> str:
    """SHA-256 over the relative paths and bytes of every file under :data:`INPUTS`."""
    h = hashlib.sha256()
    for name in INPUTS:
        top = root / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            if SKIP & set(path.relative_to(root).parts) or path.suffix == ".pyc":
                continue
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def main(build_dir: str, root: Path = ROOT) -> bool:
    """Delete the stale caches under ``build_dir``; returns whether it did."""
    build = Path(build_dir)
    stamp = build / ".jupyter_cache.inputs"
    new = inputs_hash(root)
    old = stamp.read_text().strip() if stamp.exists() else None
    # the notebook cache and Sphinx's environment (else Sphinx re-reads no unchanged chapter)
    stale = [build / ".jupyter_cache", build / ".doctrees"]
    invalid = old != new and any(p.exists() for p in stale)
    if invalid:
        print("book: grpo_core, widgets or the committed runs changed: executing every chapter again")
        for p in stale:
            shutil.rmtree(p, ignore_errors=True)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(new + "\n")
    return invalid


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "_build"))
