"""The built book: every chapter executed without errors, self-contained (no CDN), launch buttons.

These tests read the HTML that ``make book`` wrote into ``_build/html`` (``make test`` builds it
first). They are skipped with a clear reason when no built book is present, e.g. when running
``make test-fast``.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import jupytext
import pytest
import yaml
from conftest import BUILT_HTML, ROOT

pytestmark = pytest.mark.book

HTML = BUILT_HTML
BOOK = ROOT / "book"
CDN_HOSTS = (
    "cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com", "code.jquery.com", "fonts.googleapis.com",
    "fonts.gstatic.com", "ajax.googleapis.com", "cdn.plot.ly", "stackpath.bootstrapcdn.com", "esm.sh",
)


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    files += [c["file"] for c in toc.get("chapters", [])]
    return files


def _executable(name: str) -> bool:
    src = BOOK / f"{name}.md"
    return src.exists() and "{code-cell}" in src.read_text()


@pytest.fixture(scope="module")
def built():
    if not (HTML / "index.html").exists():
        pytest.skip("no built book in _build/html: run `make book` (make test does)")
    return HTML


class _Resources(HTMLParser):
    """Collects the URLs a page loads (scripts, styles, images, frames)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "audio", "video") and a.get("src"):
            self.urls.append(a["src"])
        if (
            tag == "link"
            and a.get("href")
            and (a.get("rel") or "") in ("stylesheet", "preload", "modulepreload", "icon")
        ):
            self.urls.append(a["href"])


def test_every_toc_page_was_built(built):
    for name in _toc_files():
        assert (built / f"{name}.html").exists(), f"{name}.html missing from the built book"


@pytest.mark.parametrize("name", [n for n in _toc_files() if _executable(n)])
def test_chapter_executed_without_errors(built, name):
    html = (built / f"{name}.html").read_text()
    # Executed code cells leave output areas; a failing cell would leave a traceback.
    nb = jupytext.read(BOOK / f"{name}.md")
    n_code = sum(c.cell_type == "code" for c in nb.cells)
    # a cell's container, tagged or not ("cell tag_hide-input docutils container")
    assert re.search(r'class="cell(?: tag_[\w-]+)* docutils container"', html) or n_code == 0
    assert "cell_output" in html, f"{name}: no executed output at all"
    # An error output (MyST-NB renders it as "output traceback"), a warning printed by a cell
    # ("output stderr"), or a chart that failed to embed must not reach the rendered page.
    for marker in (
        "Traceback (most recent call last)",
        "output traceback",
        "output stderr",
        "JavaScript Error",
    ):
        assert marker not in html, f"{name}: {marker!r} in the built page"


def test_no_page_loads_anything_from_a_cdn(built):
    pages = sorted(built.rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(errors="replace")
        parser = _Resources()
        parser.feed(text)
        for url in parser.urls:
            assert not re.match(r"^(https?:)?//", url), f"{page.name} loads {url}"
        for host in CDN_HOSTS:
            assert host not in text, f"{page.name} mentions {host}"
    # The vendored files are really there.
    for rel in ("vendor/require.js", "vendor/mathjax/tex-mml-chtml.js", "vendor/html-manager/embed-amd.js"):
        assert (built / "_static" / rel).exists(), rel


def test_launch_buttons_point_at_committed_notebooks(built):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].rstrip("/")
    org_repo = "/".join(repo.split("/")[-2:])
    for name in _toc_files():
        if not _executable(name):
            continue
        html = (built / f"{name}.html").read_text()
        colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html)
        assert colab, f"{name}: no Colab button"
        assert colab[0].endswith(f"github/{org_repo}/blob/main/book/{name}.ipynb"), colab[0]
        assert (BOOK / f"{name}.ipynb").exists(), f"{name}.ipynb (the Colab target) is not in the repository"
        assert "mybinder.org/v2/gh/" + org_repo in html, f"{name}: no Binder button"
        assert "btn-download" in html or "download-source-button" in html, f"{name}: no download button"


def test_math_is_rendered_with_local_mathjax(built):
    html = (built / "intro.html").read_text()
    assert "_static/vendor/mathjax/tex-mml-chtml.js" in html


def test_widget_state_pages_use_local_widget_manager(built):
    for page in built.glob("*.html"):
        html = page.read_text()
        if "application/vnd.jupyter.widget-state+json" in html:
            assert "_static/vendor/html-manager/embed-amd.js" in html
            assert 'data-jupyter-widgets-cdn="about:blank"' in html


def test_no_cell_error_outputs_in_cache(built):
    # The executed notebooks myst-nb writes next to the HTML (``_build/html/_sources`` has the
    # sources only); errors would also fail the build itself (nb_execution_raise_on_error).
    for nb_path in (HTML.parent / "jupyter_execute").rglob("*.ipynb"):
        nb = json.loads(nb_path.read_text())
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []):
                assert out.get("output_type") != "error", f"{nb_path.name}: error output"


def _page_specs(page: str) -> list[dict]:
    """The Vega-Lite specs Altair embedded in a built page (``(function(spec, embedOpt){...})(SPEC, ...)``),
    also those inside a JSON string (a widget's saved state), one level of escaping undone."""
    dec = json.JSONDecoder()
    specs = []
    for m in re.finditer(r"\(function\(spec, embedOpt\)\{", page):
        j = page.find("})(", m.end()) + 3
        if page.startswith('{\\"', j):
            end = re.search(r'(?<!\\)"', page[j:]).start()
            specs.append(dec.raw_decode(json.loads('"' + page[j:j + end] + '"'))[0])
        else:
            specs.append(dec.raw_decode(page, j)[0])
    return specs


def test_every_chart_draws_its_lines(built):
    # Vega draws a series that falls outside a colour scale's fixed domain with no stroke: an empty
    # panel with axes and no error anywhere. Render every chart of the book and look.
    vlc = pytest.importorskip("vl_convert")
    n = 0
    for path in sorted(built.glob("*.html")) + sorted(built.glob("experiments/*.html")):
        for k, spec in enumerate(_page_specs(path.read_text(encoding="utf-8"))):
            n += 1
            svg = vlc.vegalite_to_svg(spec)
            lines = re.findall(r'<path[^>]*aria-roledescription="line mark"[^>]*>', svg)
            blank = [t for t in lines if 'stroke="' not in t]
            assert not blank, (
                f"{path.name} chart {k}: {len(blank)} of {len(lines)} lines drawn without a stroke"
            )
            marks = re.findall(r'aria-roledescription="\w+ mark"', svg)
            assert marks, f"{path.name} chart {k} draws no mark"
    assert n >= 40, f"only {n} charts found in the built book: has the embedding changed?"
