"""Copy the page JavaScript installed by ``npm ci`` into ``book/assets/vendor``.

The built book serves MathJax, require.js, the ipywidgets HTML manager and Vega from its own
files (``_static/vendor`` in the HTML), so the pages make no request to a CDN. The source folder
is named ``assets`` and not ``_static`` on purpose: Jupyter Book injects every ``.js`` file found
under a source ``_static`` folder into every page.

Vega files are stored under the names Altair's ``html`` renderer asks for
(``vega@6``, ``vega-lite@<schema version>``, ``vega-embed@7``; see ``widgets.rendering``).

Usage: ``python scripts/vendor_assets.py [NODE_MODULES] [DEST]``
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _copytree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.map", "*.d.ts", "*.md"))


def main(node_modules: Path, dest: Path) -> None:
    from altair.vegalite.v6.display import VEGA_VERSION, VEGAEMBED_VERSION, VEGALITE_VERSION

    lite = json.loads((node_modules / "vega-lite" / "package.json").read_text())["version"]
    if lite != VEGALITE_VERSION:
        sys.exit(
            f"vega-lite {lite} from npm does not match Altair's schema {VEGALITE_VERSION}: "
            "pin the same version in package.json"
        )
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    _copytree(node_modules / "mathjax" / "es5", dest / "mathjax")
    _copytree(node_modules / "@jupyter-widgets" / "html-manager" / "dist", dest / "html-manager")
    shutil.copy2(node_modules / "requirejs" / "require.js", dest / "require.js")
    shutil.copy2(node_modules / "vega" / "build" / "vega.min.js", dest / f"vega@{VEGA_VERSION}")
    shutil.copy2(
        node_modules / "vega-lite" / "build" / "vega-lite.min.js", dest / f"vega-lite@{VEGALITE_VERSION}"
    )
    shutil.copy2(
        node_modules / "vega-embed" / "build" / "vega-embed.min.js", dest / f"vega-embed@{VEGAEMBED_VERSION}"
    )
    print(f"vendored page JavaScript into {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")


if __name__ == "__main__":
    nm = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "node_modules"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "book" / "assets" / "vendor"
    main(nm, out)
