"""The chapter notebooks run as Colab runs them: a fresh environment, the project installed by pip, no checkout.

Colab opens ``book/*.ipynb`` in an empty working folder (``/content``) with its own packages, and the
notebook's set-up cell installs the project with ``pip install "grpo-dynamics @ git+<repository>"``;
the chapters that read files of the repository (the shipped language-model runs, the benchmark's
records) also clone it and set ``GRPO_DYNAMICS_DATA`` to the clone. Nothing of the checkout is on
``sys.path`` there and myst-nb is not installed.

:func:`colab_env` builds that environment once per session: ``python -m venv`` (not the project's
``.venv``, no system site-packages), then :data:`COLAB_BASE` (the packages Colab ships that matter
here), then the project from a copy of this checkout's files with plain ``pip install <folder>``:
the same package and dependencies the git URL gives, but of the working tree under test. Each
notebook with a Colab set-up cell then runs with nbclient on a kernel of that environment, in an
empty temporary folder. The set-up cell itself does nothing there (``google.colab`` is not
imported), so the test stands in for it: the repository cannot be cloned from here, so
``GRPO_DYNAMICS_DATA`` points at this checkout, as it would point at the clone on Colab.

The fast tests below check the parts the slow one cannot: the set-up cells that fetch data clone
the configured repository and set the variable, and the experiment notebook lists every preset.

Skipped only when the package index cannot be reached. About 4 minutes on two cores (the
environment about 1.5 of them, the nine chapters the rest).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext
import pytest
import yaml
from conftest import ROOT

from grpo_core.llm.config import PRESETS

BOOK = ROOT / "book"
CHAPTERS = sorted(p for p in BOOK.glob("*.ipynb") if "google.colab" in p.read_text())
REPO_URL = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")

#: What Colab ships that the chapters use (their versions float, as on Colab). torch: the CPU wheel
#: served here; on Colab it is the CUDA build, which the set-up cell keeps. PyYAML, IPython,
#: transformers: preinstalled on Colab, not dependencies of the project's base install.
COLAB_BASE = [
    "numpy", "pandas", "scipy", "matplotlib", "altair", "ipywidgets", "ipython", "ipykernel",
    "nbclient", "nbformat", "pyyaml", "tqdm", "requests", "transformers", "torch==2.13.0",
]

_NETWORK = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
            "Network is unreachable", "Failed to establish a new connection", "ConnectTimeout")

# Runs inside the fresh environment: execute one notebook on that environment's own kernel.
_RUNNER = textwrap.dedent(
    """
    import sys, nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(sys.argv[1], as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": sys.argv[2]}}).execute()
    print("ran", sys.argv[1])
    """
)


def _pip(python: Path, *args: str, cwd: Path) -> None:
    out = subprocess.run([str(python), "-m", "pip", "install", "-q", *args], capture_output=True, text=True,
                         cwd=cwd, timeout=1800)
    if out.returncode:
        if any(m in out.stderr for m in _NETWORK):
            pytest.skip(f"the package index cannot be reached: {out.stderr.strip().splitlines()[-1]}")
        raise AssertionError(f"pip install {' '.join(args)} failed:\n{out.stderr[-4000:]}")


def _checkout_copy(dest: Path, paths: tuple[str, ...] = ()) -> Path:
    """The files git would give (tracked and untracked-not-ignored, under ``paths`` if given), as they are
    in the working tree."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
                           cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="session")
def colab_env(tmp_path_factory):
    """(python of the fresh environment, environment variables for its kernel), built once."""
    base = tmp_path_factory.mktemp("colab")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    _pip(python, *COLAB_BASE, cwd=base)
    _pip(python, str(_checkout_copy(base / "grpo-dynamics")), cwd=base)  # as the set-up cell, from here
    # The kernel "python3" must be this environment's, whatever kernels the machine has installed.
    kernels = base / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab-like", "language": "python"}))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GRPO_BOOK_BUILD", "JUPYTER_PATH")}
    env.update(JUPYTER_PATH=str(base / "jupyter"), GRPO_DYNAMICS_DATA=str(ROOT), MPLBACKEND="agg")
    out = subprocess.run([str(python), "-c", "import myst_nb"], capture_output=True, env=env)
    assert out.returncode != 0, "myst-nb is installed in the Colab-like environment; Colab has none"
    return python, env


@pytest.mark.slow
@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.name)
def test_chapter_runs_as_on_colab(notebook, colab_env, tmp_path):
    python, env = colab_env
    work = tmp_path / "content"  # empty: no checkout beside the notebook
    work.mkdir()
    runner = tmp_path / "run_notebook.py"
    runner.write_text(_RUNNER)
    out = subprocess.run([str(python), str(runner), str(notebook), str(work)], capture_output=True, text=True,
                         cwd=work, env=env, timeout=1200)
    assert out.returncode == 0, f"{notebook.name} fails on Colab:\n{out.stderr[-6000:]}"


def test_wheel_ships_every_data_file(tmp_path):
    """pip installs every file of grpo_core/data (folders named like ``rho0.7`` are no packages)."""
    import zipfile

    src = _checkout_copy(tmp_path / "src", ("grpo_core", "widgets", "grpo_dynamics", "pyproject.toml", "README.md"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                          str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    data = {p.relative_to(src).as_posix() for p in (src / "grpo_core" / "data").rglob("*") if p.is_file()}
    assert data and not data - shipped, sorted(data - shipped)[:10]


def test_glue_without_myst_nb_shows_and_keeps_the_value(monkeypatch, capsys):
    from widgets import rendering

    monkeypatch.setitem(sys.modules, "myst_nb", None)  # import myst_nb now raises ImportError
    rendering.glue("colab_test_value", 0.25)
    rendering.glue("colab_test_hidden", 7, display=False)
    assert rendering.GLUED["colab_test_value"] == 0.25 and rendering.GLUED["colab_test_hidden"] == 7
    assert capsys.readouterr().out.split() == ["0.25"]


def test_repo_path_finds_the_checkout_then_the_data_folder(monkeypatch, tmp_path):
    from widgets import rendering

    monkeypatch.chdir(BOOK)  # as the book build: relative to book/, as the chapters' paths always were
    assert rendering.repo_path("book/experiments/runs") == Path("experiments/runs")
    assert rendering.repo_path("bench/results/forecast.json") == ROOT / "bench" / "results" / "forecast.json"
    # no checkout around (the package installed by pip, an empty working folder): the data folder
    monkeypatch.setattr(rendering, "__file__", str(tmp_path / "site-packages" / "widgets" / "rendering.py"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(rendering.DATA_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="bench/results/forecast.json.*GRPO_DYNAMICS_DATA is not set"):
        rendering.repo_path("bench/results/forecast.json")
    monkeypatch.setenv(rendering.DATA_ENV, str(ROOT))
    assert rendering.repo_path("bench/results/forecast.json") == ROOT / "bench" / "results" / "forecast.json"
    with pytest.raises(FileNotFoundError, match="does not hold it either"):
        rendering.repo_path("bench/results/no-such-file.json")
    with pytest.raises(ValueError):
        rendering.repo_path("/etc")


def test_every_chapter_notebook_is_covered():
    chapters = {p.stem for p in BOOK.glob("*.md") if "{code-cell}" in p.read_text()}
    assert chapters == {p.stem for p in CHAPTERS}


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.name)
def test_setup_cell_fetches_the_data_the_chapter_reads(notebook):
    """A chapter that calls repo_path clones the configured repository and points GRPO_DYNAMICS_DATA at it;
    the others fetch nothing. No chapter imports myst_nb itself (widgets.rendering.glue does, when present)."""
    nb = jupytext.read(notebook)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    setup = next(c.source for c in nb.cells if c.cell_type == "code" and "google.colab" in c.source)
    assert "myst_nb" not in code
    if "repo_path(" in code:
        clone = re.search(r"git clone -q --depth 1 (\S+) (\S+)", setup)
        assert clone and clone.group(1).rstrip("/") == REPO_URL, "run `make sync-notebooks`"
        assert f'os.environ["GRPO_DYNAMICS_DATA"] = "{clone.group(2)}"' in setup
    else:
        assert "git clone" not in setup and "GRPO_DYNAMICS_DATA" not in setup


def test_experiment_notebook_names_every_preset_and_defaults_by_runtime():
    nb = jupytext.read(BOOK / "experiments" / "grpo_llm.md")
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    missing = [name for name in PRESETS if f"`{name}`" not in prose]
    assert not missing, f"the experiment notebook does not name the presets {missing}"
    params = next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert re.search(r'^preset = "auto"', params, re.M)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert '"gsm8k-qwen2.5-0.5b" if torch.cuda.is_available() else "cpu-dynamics"' in code
