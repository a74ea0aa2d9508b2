"""Shared test helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
CASES = DATA / "cases"


def load_case(name: str) -> dict:
    """The case folder's ``input.txt`` (JSON) and ``expected.json`` as ``{"input":..., "expected":...}``."""
    folder = CASES / name
    out = {"folder": folder, "expected": json.loads((folder / "expected.json").read_text())}
    if (folder / "input.txt").exists():
        out["input"] = json.loads((folder / "input.txt").read_text())
    return out


def log_cases() -> dict[str, str]:
    """Every case whose answer is a verdict (``expected.json`` has ``healthy``): case name -> its input
    file, of whatever kind (``trainer_state.json``, ``.csv``, ``.jsonl``, a console ``.log`` or ``.txt``).
    The other cases (``input.txt`` of hyperparameters, answers of their own) are tested on their own.

    Raises AssertionError for a verdict case without exactly one input file (a case must never be
    skipped unseen)."""
    out = {}
    for folder in sorted(CASES.iterdir()):
        expected = json.loads((folder / "expected.json").read_text())
        if "healthy" not in expected:
            continue
        inputs = [f.name for f in sorted(folder.iterdir()) if f.name not in ("README.md", "expected.json")]
        assert len(inputs) == 1, f"{folder.name}: a verdict case needs exactly one input file; found {inputs}"
        out[folder.name] = inputs[0]
    return out


#: The exit status of `grpo-dynamics diagnose` for each verdict.
EXIT_CODE = {"healthy": 0, "unhealthy": 1, "inconclusive": 3}


@pytest.fixture
def case():
    return load_case


def cli_params(**settings) -> list[str]:
    """``-p KEY VALUE`` for each setting, in order (the overrides of ``grpo-dynamics experiment`` and ``probe``,
    and of ``python -m grpo_core.llm``)."""
    return [arg for key, value in settings.items() for arg in ("-p", key, str(value))]


def marks(chart) -> dict[str, dict]:
    """What a reader of a layered chart sees, by mark type: ``{"line": {"x": field, "y": field, ...,
    "x.title": ..., "x.scale": {...}}, ...}`` (the first layer of each type; a rule's constant
    ``datum`` appears as ``"y.datum"``). Tests read encodings and titles, not layer counts."""
    out: dict[str, dict] = {}
    for layer in chart.to_dict()["layer"]:
        mark = layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]
        seen = {}
        for channel, enc in layer.get("encoding", {}).items():
            if isinstance(enc, dict):
                for key in ("field", "datum", "value"):
                    if key in enc:
                        seen[channel if key == "field" else f"{channel}.{key}"] = enc[key]
                for key in ("title", "scale"):
                    if key in enc:
                        seen[f"{channel}.{key}"] = enc[key]
        out.setdefault(mark, seen)
    return out


# --- Browser tests (headless Debian Chromium driven by Playwright) --------------------------

import functools  # noqa: E402
import http.server  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import socketserver  # noqa: E402
import threading  # noqa: E402
from urllib.parse import urlparse  # noqa: E402

# GRPO_BOOK_HTML points the browser tests at another built book (e.g. a private build folder).
BUILT_HTML = Path(os.environ.get("GRPO_BOOK_HTML") or ROOT / "_build" / "html")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def book_server():
    """Serve the built book on a free localhost port; yields the base URL."""
    if not (BUILT_HTML / "index.html").exists():
        pytest.skip("no built book in _build/html: run `make book` (make test does)")
    handler = functools.partial(_QuietHandler, directory=str(BUILT_HTML))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium is not installed: `make chromium` (make test does) installs Debian's package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageProbe:
    """A browser page that records console errors and every request that leaves localhost."""

    def __init__(self, page):
        self.page = page
        self.console_errors: list[str] = []
        self.external_requests: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda exc: self.console_errors.append(f"pageerror: {exc}"))
        page.route("**/*", self._route)

    def _on_console(self, msg):
        if msg.type == "error":
            self.console_errors.append(msg.text)

    def _route(self, route):
        host = urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:", "about:", "file:")) or host in (
            "127.0.0.1",
            "localhost",
        ):
            route.continue_()
        else:
            self.external_requests.append(route.request.url)
            route.abort()

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=False)
        return path


@pytest.fixture
def probe(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    p = PageProbe(page)
    yield p
    context.close()


VENDOR = ROOT / "book" / "assets" / "vendor"


@pytest.fixture(scope="session")
def chart_server(tmp_path_factory):
    """Serve single charts on a free localhost port, with the book's vendored Vega files (no book
    build needed): yields ``show(probe, chart, name)``, which writes ``chart`` (an Altair chart) as a
    page, opens it in ``probe`` and waits for it to draw."""
    if not (VENDOR / "vega@6").exists():
        pytest.skip("no vendored Vega files in book/assets/vendor: run `make assets` (make test does)")
    folder = tmp_path_factory.mktemp("charts")
    (folder / "vendor").symlink_to(VENDOR, target_is_directory=True)
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def show(probe, chart, name: str) -> None:
        from vega_page import open_page

        (folder / f"{name}.html").write_text(chart.to_html(base_url="vendor", fullhtml=True))
        open_page(probe, f"{base}/{name}.html")

    yield show
    server.shutdown()
    server.server_close()
