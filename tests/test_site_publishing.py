"""Publishing the book: the Pages workflow, the site's address, Binder, the favicon, the
bibliography and the "Use it on your run" page (its outputs are what the commands print)."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import venv

import pytest
import yaml
from conftest import BUILT_HTML, ROOT

from grpo_dynamics.cli import main

BOOK = ROOT / "book"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"]
README = (ROOT / "README.md").read_text()


def _pages_module():
    spec = importlib.util.spec_from_file_location("pages_url", BOOK / "_ext" / "pages_url.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the workflow -----------------------------------------------------------------------------

def test_workflow_parses_and_runs_the_readmes_command():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    # PyYAML reads the key `on` as True (YAML 1.1)
    assert wf[True]["push"]["branches"] == ["main"]
    assert wf["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    runs = [s["run"] for s in build["steps"] if "run" in s]
    assert runs == ["make book"] and "make book" in README
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@")


def test_pages_url_is_derived_from_repository_url():
    pages_url = _pages_module().pages_url
    assert pages_url("https://github.com/grpo-dynamics/grpo-dynamics") == "https://grpo-dynamics.github.io/grpo-dynamics/"
    assert pages_url("https://github.com/Some-Owner/my.repo.git/") == "https://some-owner.github.io/my.repo/"
    with pytest.raises(ValueError, match="repository.url"):
        pages_url("https://gitlab.com/a/b")
    # The README's "read it online" link is that address, not a second setting.
    assert pages_url(REPO_URL) in README


# --- Binder -----------------------------------------------------------------------------------

def test_binder_installs_the_pinned_set_and_the_project():
    reqs = [line for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert reqs == ["-r ../requirements.txt"]
    post = ROOT / "binder" / "postBuild"
    assert os.access(post, os.X_OK) and "pip install --no-deps -e ." in post.read_text()


@pytest.mark.slow
def test_fresh_binder_environment_imports_the_project(tmp_path):
    """A fresh venv built from exactly binder/'s files (as repo2docker does, from the root) imports
    grpo_core and widgets. pip reads this machine's configured indexes and wheel cache."""
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bindir = env_dir / "bin"
    environ = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH="")
    run = dict(cwd=ROOT, env=environ, check=True, capture_output=True, text=True, timeout=900)
    subprocess.run([bindir / "python", "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], **run)
    subprocess.run(["bash", "binder/postBuild"], **run)
    out = subprocess.run(
        [bindir / "python", "-c", "import grpo_core, widgets; print(grpo_core.__file__, widgets.__file__)"],
        **dict(run, cwd=tmp_path),
    ).stdout
    assert str(ROOT / "grpo_core") in out and str(ROOT / "widgets") in out


# --- the bibliography -------------------------------------------------------------------------

def _bib_keys() -> list[str]:
    return re.findall(r"^@\w+\{([^,]+),", (BOOK / "references.bib").read_text(), re.M)


def test_every_reference_is_cited_and_every_citation_exists():
    keys = _bib_keys()
    assert len(keys) == len(set(keys)) >= 16
    assert CONFIG["bibtex_bibfiles"] == ["references.bib"]
    cited = set()
    for md in BOOK.rglob("*.md"):
        for group in re.findall(r"\{cite(?::[pt])?\}`([^`]+)`", md.read_text()):
            cited |= {k.strip() for k in group.split(",")}
    assert cited <= set(keys), f"cited but not in references.bib: {sorted(cited - set(keys))}"
    assert set(keys) <= cited, f"in references.bib but cited nowhere: {sorted(set(keys) - cited)}"
    text = (BOOK / "references.bib").read_text()
    for entry in re.split(r"\n(?=@)", text)[1:]:
        assert re.search(r"^\s*(url|doi)\s*=", entry, re.M), f"no link: {entry.splitlines()[0]}"


def test_citations_tell_the_sources_apart(tmp_path):
    """Issue 17: both DeepSeek-AI reports of 2025 were cited "[DeepSeek-AI, 2025]" and DAPO "Yu and
    others, 2025". A small Sphinx project with the book's references.bib and its bibtex settings
    renders the citations as the book does."""
    import shutil
    import sys

    pytest.importorskip("sphinxcontrib.bibtex")
    shutil.copy(BOOK / "references.bib", tmp_path / "references.bib")
    sphinx = CONFIG["sphinx"]["config"]
    (tmp_path / "conf.py").write_text(
        'extensions = ["sphinxcontrib.bibtex"]\nbibtex_bibfiles = ["references.bib"]\n'
        f'bibtex_reference_style = {sphinx["bibtex_reference_style"]!r}\n'
        f'bibtex_default_style = {sphinx["bibtex_default_style"]!r}\n')
    (tmp_path / "index.rst").write_text(
        "Test\n====\n\n:cite:p:`deepseek2025r1` :cite:p:`deepseek2025v32` :cite:p:`yu2025dapo` "
        ":cite:p:`ghosh2026predictable`\n\n.. bibliography::\n")
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp_path), str(tmp_path / "out")],
                   check=True, capture_output=True, timeout=300)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", (tmp_path / "out" / "index.html").read_text()))
    for cited in ("[DeepSeek-AI, 2025a]", "[DeepSeek-AI, 2025b]", "[Yu et al., 2025]", "[Ghosh et al., 2026]"):
        assert cited in text, cited
    assert "Yu and others" not in text


def test_bibliography_and_requirement_pins_agree():
    pin = next(line for line in (ROOT / "requirements.txt").read_text().splitlines()
               if line.startswith("sphinxcontrib-bibtex=="))
    assert f'"{pin}"' in (ROOT / "pyproject.toml").read_text()


# --- the "Use it on your run" page ------------------------------------------------------------
# A notebook page: each visible code cell is one call cli("grpo-dynamics ...") that runs the command
# in the kernel and prints its output rewrapped for the page. The tests execute the page the way the
# book build does and compare what each cell shows with what the command prints when run here.

USE_IT = BOOK / "use_it.md"
_WIDTH = 78  # the page's output width; a table's rows (lines in columns) stay whole
_COLUMNS = re.compile(r"\S {2,}\S.* {2,}\S.* {2,}\S")


def _use_it_notebook():
    import jupytext

    return jupytext.read(USE_IT)


def _command_cells(nb) -> list[tuple[object, str]]:
    """(cell, command line) for every code cell that calls cli(...)."""
    import ast

    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "cli(" not in cell.source or "def cli" in cell.source:
            continue
        (stmt,) = ast.parse(cell.source).body  # the whole cell is the one call
        call = stmt.value
        assert isinstance(call, ast.Call) and call.func.id == "cli" and len(call.args) == 1, cell.source
        found.append((cell, call.args[0].value))
    return found


@pytest.fixture(scope="module")
def use_it_executed():
    """use_it.md run as the book build runs it (scripts/run_chapter.py: kernel in book/, GRPO_BOOK_BUILD=1)."""
    from nbclient import NotebookClient

    nb = _use_it_notebook()
    old = os.environ.get("GRPO_BOOK_BUILD")
    os.environ["GRPO_BOOK_BUILD"] = "1"
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(BOOK)}}).execute()
    finally:
        if old is None:
            os.environ.pop("GRPO_BOOK_BUILD")
        else:
            os.environ["GRPO_BOOK_BUILD"] = old
    return nb


def test_use_it_is_a_notebook_page_that_shows_the_commands():
    text = USE_IT.read_text()
    assert text.startswith("---\njupytext:") and "format_name: myst" in text  # launch buttons
    nb = _use_it_notebook()
    code = [c for c in nb.cells if c.cell_type == "code"]
    # the same Colab set-up cell (the same pip line) as the chapters
    chapter_setup = next(c for c in _notebook_cells(BOOK / "group_size.md") if c.cell_type == "code")
    assert code[0].source == chapter_setup.source and "%pip install" in code[0].source
    commands = _command_cells(nb)
    assert [cmd.split()[1] for _, cmd in commands] == ["diagnose", "diagnose", "diagnose", "fit", "advise",
                                                      "groupsize"]
    for cell, command in commands:
        # the reader sees the command line: the cell's input is shown, and it is a grpo-dynamics command
        tags = set(cell.metadata.get("tags", []))
        assert not tags & {"remove-cell", "remove-input", "hide-input", "hide-cell"}, command
        assert cell.source.startswith('cli("grpo-dynamics ') and command.startswith("grpo-dynamics ")
        # the logs are the ones the package ships (the path resolves under the installed grpo_core)
        for arg in shlex.split(command):
            if arg.startswith("grpo_core/"):
                assert (ROOT / arg).is_file() or (ROOT / arg).is_dir(), arg


def _notebook_cells(path):
    import jupytext

    return jupytext.read(path).cells


def _page_output(cell, name: str = "stdout") -> str:
    """The text the cell shows on stream ``name`` (a command's warnings go to stderr)."""
    assert all(o["output_type"] == "stream" for o in cell.outputs), cell.outputs  # no error, no traceback
    return "".join(o["text"] for o in cell.outputs if o["name"] == name)


@pytest.mark.parametrize("index", range(6), ids=["diagnose", "diagnose-run22", "diagnose-many", "fit", "advise",
                                                  "groupsize"])
def test_use_it_page_shows_real_output(use_it_executed, index, monkeypatch, capsys):
    """What each cell shows is exactly what its command prints, word for word (only the line breaks
    differ, and the seconds a batch took), and no shown line is wider than the page except a table's rows,
    which are printed lines."""
    cell, command = _command_cells(use_it_executed)[index]
    shown = _page_output(cell)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "72")  # as the page sets it: the batch's table fits it
    # the batch of tracker runs has unhealthy runs: exit status 1
    assert main(shlex.split(command)[1:]) == (1 if index == 2 else 0)
    captured = capsys.readouterr()
    printed = captured.out
    seconds = re.compile(r" in [0-9.]+ s:")
    assert seconds.sub(" in S s:", shown).split() == seconds.sub(" in S s:", printed).split(), command
    assert _page_output(cell, "stderr").split() == captured.err.split(), command
    printed_lines = {line.rstrip() for line in printed.splitlines()}
    for line in shown.splitlines() + _page_output(cell, "stderr").splitlines():
        if len(line) > _WIDTH:
            assert _COLUMNS.search(line) and line.rstrip() in printed_lines, line


def test_use_it_prose_quotes_the_outputs(use_it_executed):
    """The numbers the prose quotes are glued from the outputs (hidden cells parse them, and assert
    the findings the prose describes); none is typed in the text."""
    glued = {}
    for cell in use_it_executed.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                glued[name] = next(iter(out["data"].values()))
    assert glued["diag_verdict"] == "'healthy'" and float(glued["llm_permissive_lo"]) == 119
    assert float(glued["fit_now"]) == pytest.approx(0.5303) and float(glued["fit_actual"]) == pytest.approx(1.437)
    assert float(glued["gs_cost_2"]) == pytest.approx(2.10) and int(glued["gs_best"]) == 8
    prose = "\n".join(c.source for c in _use_it_notebook().cells if c.cell_type == "markdown")
    for typed in ("0.53 ", "1.44", "119 to 169", "2.6 to 5.4", "1.93", "2.9 times", "1.76"):
        assert typed not in prose, typed


def test_use_it_page_is_linked():
    assert "use_it.md" in (BOOK / "intro.md").read_text()
    assert "book/use_it.md" in README


# --- the built site ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built():
    if not (BUILT_HTML / "index.html").exists():
        pytest.skip("no built book in _build/html: run `make book` (make test does)")
    return BUILT_HTML


@pytest.mark.book
def test_pages_reference_an_existing_favicon_and_their_published_address(built):
    pages_url = _pages_module().pages_url(REPO_URL)
    for page in ("intro.html", "bandit.html", "bibliography.html", "use_it.html"):
        html = (built / page).read_text()
        icon = re.search(r'<link rel="icon" href="([^"]+)"', html)
        assert icon, f"{page}: no favicon link"
        assert (built / icon[1]).is_file(), f"{page}: favicon {icon[1]} missing"
        assert f'<link rel="canonical" href="{pages_url}{page}"' in html


@pytest.mark.book
def test_bibliography_renders_with_links(built):
    html = (built / "bibliography.html").read_text()
    for eprint in ("2606.30789", "2603.01162", "2402.03300", "2603.12151"):
        assert f'href="https://arxiv.org/abs/{eprint}"' in html, eprint
    assert 'href="https://doi.org/10.1214/aoms/1177730196"' in html
    chapter = (built / "ustatistic.html").read_text()
    assert 'href="bibliography.html#id' in chapter  # a {cite} role links to its entry
