"""The notation page: one table of the book's symbols, in the table of contents, no code to run."""

from __future__ import annotations

import re

import yaml
from conftest import ROOT

BOOK = ROOT / "book"
PAGE = BOOK / "notation.md"

#: The symbols the page must define, as the LaTeX of its table's first column.
REQUIRED = [
    r"$a$", r"$g$", r"$\eta$", r"$K$", r"$K_\text{eff}$", r"$M$", r"$C$", r"$\zeta$", r"$\tau$",
    r"$K_\text{ref}$", r"$\mu$", r"$\beta_1$", r"$\beta$", r"$G$", r"$B$", r"$N$", r"$p$", r"$p^*$",
]


def _rows() -> list[list[str]]:
    """The table's body rows, split into cells (the header and the separator left out)."""
    lines = [line for line in PAGE.read_text().splitlines() if line.startswith("|")]
    assert len(lines) > 2, "notation.md has no table"
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[2:]]


def _symbols() -> set[str]:
    """Every ``$...$`` of the first column, one per symbol (``$R(t)$, $R_0$`` gives two)."""
    return {m for row in _rows() for m in re.findall(r"\$[^$]+\$", row[0])}


def test_page_lists_each_symbol_in_its_table():
    symbols = _symbols()
    missing = [s for s in REQUIRED if s not in symbols]
    assert not missing, f"notation.md's table does not list {missing}"


def test_every_row_has_meaning_units_and_a_chapter_link():
    chapters = {p.stem for p in BOOK.glob("*.md")}
    for row in _rows():
        assert len(row) == 4, row
        symbol, meaning, units, where = row
        assert meaning and units, symbol
        links = re.findall(r"\]\(([a-z_]+)\.md\)", where)
        assert links, f"{symbol}: no link to the chapter that defines it"
        assert set(links) <= chapters, f"{symbol}: links to a missing chapter {set(links) - chapters}"


def test_symbols_with_two_meanings_say_so():
    rows = {row[0]: row[1] for row in _rows()}
    # tau: the inertial time M/C and the learning-rate time sum eta_t
    assert "M/C" in rows[r"$\tau$"] and r"\sum_t \eta_t" in rows[r"$\tau$"]
    # epsilon: the clip range and the std-scaling constant 1e-4
    assert "clip" in rows[r"$\epsilon$"] and "10^{-4}" in rows[r"$\epsilon$"]
    # g: the heavy-ball gain a and the EMA gain (1 - mu) a
    assert r"g = a" in rows[r"$g$"] and r"g = (1-\mu)a" in rows[r"$g$"]


def test_page_is_plain_markdown_with_one_title():
    text = PAGE.read_text()
    assert "{code-cell}" not in text  # nothing to execute, so no paired notebook is needed
    assert not text.startswith("---")  # no jupytext header
    assert re.findall(r"^# .+$", text, re.M) == ["# Notation"]
    assert not (BOOK / "notation.ipynb").exists()


def test_toc_lists_notation_under_tools():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    tools = next(part for part in toc["parts"] if part["caption"] == "Tools")
    files = [c["file"] for c in tools["chapters"]]
    assert "notation" in files
    assert files.index("use_it") < files.index("notation") < files.index("explorers")


def test_every_section_a_row_points_at_exists():
    """A row's "[Chapter](page.md), *Section*" names a heading of that page (its start), so a
    reader who follows it finds the place; a renamed or moved section fails here."""
    import re

    text = (BOOK / "notation.md").read_text()
    missing = []
    for m in re.finditer(r"\]\(([a-z_]+)\.md\),?\s*\*([^*]+)\*(?:\s*and\s*\*([^*]+)\*)?", text):
        heads = [re.sub(r"\s+", " ", h.strip())
                 for h in re.findall(r"^#+ (.+)$", (BOOK / f"{m.group(1)}.md").read_text(), flags=re.M)]
        for section in filter(None, (m.group(2), m.group(3))):
            if not any(h.startswith(re.sub(r"\s+", " ", section.strip())) for h in heads):
                missing.append(f"{m.group(1)}.md: {section}")
    assert not missing, sorted(set(missing))
