"""Keep every chapter's paired ``.ipynb`` in sync and its Colab set-up cell on the right repository.

The repository URL lives in one place, ``_config.yml`` (``repository.url``). This script writes it
into each chapter's Colab set-up cell (``pip install "grpo-dynamics @ git+<url>"``, and
``git clone -q --depth 1 <url>`` where the chapter reads files of the repository), then runs
``jupytext --sync`` so the ``.ipynb`` that Colab opens matches the ``.md`` the book builds.

Usage: ``python scripts/sync_notebooks.py`` (``make sync-notebooks``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    changed = 0
    for md in sorted((ROOT / "book").rglob("*.md")):
        if "assets" in md.parts:
            continue
        text = md.read_text()
        if "formats: md:myst,ipynb" not in text:
            continue
        new = re.sub(r'git\+https://[^"\' ]+', f"git+{url}", text)
        # set-up cells of chapters that read repository files also clone it (for repo_path)
        new = re.sub(r"(git clone -q --depth 1 )https://\S+", rf"\g<1>{url}", new)
        if new != text:
            md.write_text(new)
            changed += 1
        subprocess.run(
            [sys.executable, "-m", "jupytext", "--sync", "--quiet", str(md)], check=True, cwd=ROOT
        )
    print(f"synced notebooks; {changed} set-up cell(s) pointed at {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
