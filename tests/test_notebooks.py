"""Chapters and their paired notebooks: in sync, without outputs, with the right Colab set-up cell.

Colab opens ``.ipynb`` files, so each chapter's MyST ``.md`` (what the book builds) has a paired
``.ipynb`` in the repository, kept in sync with ``jupytext --sync``.
"""

from __future__ import annotations

import re

import jupytext
import nbformat
import pytest
import yaml
from conftest import ROOT

BOOK = ROOT / "book"
PAIRED = sorted(
    p
    for p in BOOK.rglob("*.md")
    if "assets" not in p.parts
    and "ipynb" in (jupytext.read(p).metadata.get("jupytext", {}).get("formats") or "")
)
REPO_URL = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")


def _cells(nb):
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_chapters_are_paired():
    chapters = [p for p in BOOK.glob("*.md") if "{code-cell}" in p.read_text()]
    unpaired = sorted(set(chapters) - set(PAIRED))
    assert not unpaired, f"chapters without a paired notebook (add `formats: md:myst,ipynb`): {unpaired}"


@pytest.mark.parametrize("md", PAIRED, ids=lambda p: str(p.relative_to(BOOK)))
def test_paired_notebook_in_sync(md):
    ipynb = md.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run `jupytext --sync {md.relative_to(ROOT)}`"
    from_md = jupytext.read(md)
    from_nb = nbformat.read(ipynb, as_version=4)
    assert _cells(from_md) == _cells(from_nb), f"{ipynb.name} is out of sync: run `jupytext --sync`"


@pytest.mark.parametrize("md", PAIRED, ids=lambda p: str(p.relative_to(BOOK)))
def test_committed_notebook_has_no_outputs(md):
    nb = nbformat.read(md.with_suffix(".ipynb"), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{md.with_suffix('.ipynb').name} carries outputs"


@pytest.mark.parametrize("md", PAIRED, ids=lambda p: str(p.relative_to(BOOK)))
def test_colab_setup_cell_installs_this_repository(md):
    nb = jupytext.read(md)
    setup = [c for c in nb.cells if c.cell_type == "code" and "google.colab" in c.source]
    assert len(setup) == 1, f"{md.name}: needs exactly one Colab set-up cell"
    urls = re.findall(r"git\+(https://[^\"' ]+)", setup[0].source)
    assert urls and urls[0].rstrip("/") == REPO_URL, (
        f"{md.name}: the set-up cell installs {urls}, but _config.yml says {REPO_URL}: "
        "run `make sync-notebooks`"
    )
    # It must keep Colab's own torch: no torch pin in the set-up cell.
    assert "torch==" not in setup[0].source
