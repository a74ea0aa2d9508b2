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

def _page_examples():
    text = (BOOK / "use_it.md").read_text()
    return re.findall(r"```bash\n(grpo-dynamics [^\n]+)\n```\n\n```text\n(.*?)```", text, re.S)


_NUMBER = re.compile(r"[-+]?\d+(?:\.(\d+))?(?:e[-+]?\d+)?")


def _same_line(shown: str, printed: str) -> bool:
    """The same words, and each number within one unit of the page's last printed digit: a bootstrap
    band's fourth digit moves with the machine's floating point (0.2624 on one, 0.2623 on another)."""
    if _NUMBER.sub("#", shown) != _NUMBER.sub("#", printed):
        return False
    for a, b in zip(_NUMBER.finditer(shown), _NUMBER.finditer(printed)):
        exp = re.search(r"e([-+]?\d+)$", a[0])
        unit = 10.0 ** (-len(a[1] or "") + (int(exp[1]) if exp else 0))
        if abs(float(a[0]) - float(b[0])) > unit * 1.001:
            return False
    return True


def test_same_line_tolerates_the_last_digit_only():
    assert _same_line("band [0.2624, 3.11]", "band [0.2623, 3.11]")
    assert not _same_line("band [0.2624, 3.11]", "band [0.2621, 3.11]")
    assert not _same_line("band [0.2624, 3.11]", "range [0.2624, 3.11]")
    assert _same_line("eta 5e-06", "eta 5e-06") and not _same_line("eta 5e-06", "eta 7e-06")


@pytest.mark.parametrize("command,shown", _page_examples(), ids=lambda v: v.split()[1] if v.startswith("grpo") else "")
def test_use_it_page_shows_real_output(command, shown, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    main(shlex.split(command)[1:])
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    for line in shown.splitlines():
        if "..." in line:  # shortened on the page: its start must still be printed
            head = line.split("...")[0].rstrip()
            assert any(p.startswith(head) for p in printed), line
        else:
            assert line.rstrip() in printed or any(_same_line(line.rstrip(), p) for p in printed), line


def test_use_it_page_covers_the_four_commands_and_is_linked():
    assert {c.split()[1] for c, _ in _page_examples()} == {"diagnose", "fit", "advise", "groupsize"}
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
