"""The chapters' shape, read from their sources: results before the argument, exercises with
solutions computed by the chapter, an appendix page for how the results were made, and no
project-internal language on any page.

The rendered measures (words in each chapter's main flow, where the first slider sits) are checked
on the built book in tests/test_browser_book_shape.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

CHAPTERS = ["grpo_update", "oscillator", "fitting", "bandit", "ustatistic", "group_size",
            "diagnostics", "llm"]
#: Chapters whose process and provenance live on an appendix page ``how_<chapter>.md``.
WITH_APPENDIX = ["oscillator", "fitting", "bandit", "diagnostics", "llm"]


def _source(name: str) -> str:
    return (BOOK / f"{name}.md").read_text()


def _prose(text: str) -> str:
    """The page's Markdown without code cells (their source is code, not reading)."""
    return re.sub(r"```\{code-cell\}.*?\n```", "", text, flags=re.S)


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = []
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files.extend(s["file"] for s in chapter.get("sections", []))
    return files


@pytest.mark.parametrize("name", CHAPTERS)
def test_results_box_comes_before_the_first_section(name):
    text = _prose(_source(name))
    box = text.find("{admonition} In this chapter")
    first = re.search(r"^## ", text, flags=re.M)
    assert box != -1, f"{name}.md has no 'In this chapter' box"
    assert first is not None and box < first.start(), f"{name}.md: the results box is not before the first section"


def _exercises(text: str) -> list[str]:
    """The numbered items of the chapter's '## Exercises' section (each item with its solution)."""
    match = re.search(r"^## Exercises\s*$(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, "no '## Exercises' section"
    return re.split(r"^\d+\. ", match.group(1), flags=re.M)[1:]


@pytest.mark.parametrize("name", CHAPTERS)
def test_two_or_three_exercises_each_with_a_collapsed_solution(name):
    items = _exercises(_prose(_source(name)))
    assert 2 <= len(items) <= 3, f"{name}.md has {len(items)} exercises"
    for i, item in enumerate(items, 1):
        solution = re.search(r"\{admonition\} Solution\s*\n\s*:class: dropdown(.*?)(?:\n\s*:::|\n\s*```)",
                             item, flags=re.S)
        assert solution, f"{name}.md exercise {i}: no collapsed 'Solution' admonition"


@pytest.mark.parametrize("name", CHAPTERS)
def test_exercise_numbers_come_from_the_chapter_code(name):
    """A solution that quotes a number glues it from a cell the chapter runs, so it cannot go stale."""
    text = _source(name)
    items = _exercises(_prose(text))
    glued = [key for item in items for key in re.findall(r"\{glue:text\}`([A-Za-z0-9_]+)", item)]
    assert glued, f"{name}.md: no exercise solution quotes a computed number"
    # a key glued by name, or by an f-string whose literal start it begins with (glue(f"ex3_gap_{step}", ...))
    prefixes = re.findall(r"glue\(\s*f[\"']([A-Za-z0-9_]+)\{", text)
    for key in glued:
        literal = re.search(rf"glue\(\s*[\"']{key}[\"']", text)
        assert literal or any(key.startswith(pre) for pre in prefixes), f"{name}.md: {key!r} is not glued on the page"


@pytest.mark.parametrize("name", WITH_APPENDIX)
def test_each_long_chapter_links_its_appendix_page_which_is_in_the_toc(name):
    page = f"how_{name}"
    assert (BOOK / f"{page}.md").exists(), f"book/{page}.md is missing"
    assert page in _toc_files(), f"{page} is not in _toc.yml"
    assert f"{page}.md" in _source(name), f"{name}.md does not link {page}.md"
    title = (BOOK / f"{page}.md").read_text()
    assert re.search(r"^# How .* (were|was) made", _prose(title), flags=re.M), f"{page}.md has no 'How ... made' title"


#: Words that belong to the project's workflow, not to a reader's page.
INTERNAL = re.compile(
    r"\bissue #?\d+|\bcommit [0-9a-f]{7,}|\bwe ship\b|(?<![.\w])sessions?\b|\bshims?\b|\bpre-?commit\b"
    r"|\bhelper agent|\bthis (?:PR|pull request)\b",
    flags=re.I,
)


def test_no_page_carries_project_internal_language():
    pages = [p for p in BOOK.rglob("*.md") if "assets" not in p.parts and "_build" not in p.parts]
    found = []
    for page in pages:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if line.lstrip().startswith(("from ", "import ")):
                continue
            for m in INTERNAL.finditer(line):
                found.append(f"{page.relative_to(ROOT)}:{n}: {m.group(0)!r}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_notation_page_is_linked_before_the_first_section(name):
    """A reader meeting a symbol in the results box can look it up: the box (or the text before the
    first section) links the notation page."""
    text = _prose(_source(name))
    first = re.search(r"^## ", text, flags=re.M)
    assert "notation.md" in text[: first.start()], f"{name}.md does not link notation.md before its first section"
