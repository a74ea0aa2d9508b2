"""scripts/book_cache.py: a change to the library the chapters run on invalidates the book's cache."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("book_cache", ROOT / "scripts" / "book_cache.py")
book_cache = importlib.util.module_from_spec(spec)
spec.loader.exec_module(book_cache)


def _tree(root: Path) -> Path:
    for rel, text in {
        "grpo_core/a.py": "x = 1\n",
        "widgets/b.py": "y = 2\n",
        "requirements.txt": "numpy==2\n",
        "book/experiments/runs/r/metrics.jsonl": "{}\n",
        "book/intro.md": "# hi\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_hash_follows_library_runs_and_requirements_not_chapters(tmp_path):
    root = _tree(tmp_path)
    h0 = book_cache.inputs_hash(root)
    (root / "book/intro.md").write_text("# changed\n")  # a chapter: jupyter-cache sees that itself
    (root / "grpo_core/__pycache__").mkdir()
    (root / "grpo_core/__pycache__/a.cpython-311.pyc").write_bytes(b"\0")
    assert book_cache.inputs_hash(root) == h0
    for rel in (
        "grpo_core/a.py",
        "widgets/b.py",
        "requirements.txt",
        "book/experiments/runs/r/metrics.jsonl",
    ):
        before = book_cache.inputs_hash(root)
        (root / rel).write_text((root / rel).read_text() + "# edit\n")
        assert book_cache.inputs_hash(root) != before, rel


def test_stale_cache_and_environment_are_removed_once(tmp_path):
    root = _tree(tmp_path / "repo")
    build = tmp_path / "_build"
    for d in (".jupyter_cache", ".doctrees", "html"):
        (build / d).mkdir(parents=True)
    assert book_cache.main(str(build), root) is True  # no stamp yet: cannot trust the cache
    assert not (build / ".jupyter_cache").exists() and not (build / ".doctrees").exists()
    assert (build / "html").exists()
    (build / ".jupyter_cache").mkdir()
    assert book_cache.main(str(build), root) is False and (build / ".jupyter_cache").exists()  # unchanged
    (root / "widgets/b.py").write_text("y = 3\n")
    assert book_cache.main(str(build), root) is True and not (build / ".jupyter_cache").exists()
