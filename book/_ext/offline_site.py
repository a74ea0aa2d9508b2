"""Sphinx extension: keep the built site free of CDN references.

sphinx-thebe (loaded by Jupyter Book) writes ``THEBE_JS_URL = "https://unpkg.com/..."`` into every
page even when live code is off. The book has no kernel behind it (live notebooks are offered
through the Colab and Binder launch buttons instead), so the URL is blanked.
"""

from __future__ import annotations


def _blank_thebe_url(app, *args) -> None:
    try:
        import sphinx_thebe
    except ImportError:  # pragma: no cover - Jupyter Book always ships it
        return
    sphinx_thebe.THEBE_JS_URL = ""


def setup(app):
    # Runs before sphinx-thebe's own env-before-read-docs handler reads the constant.
    app.connect("config-inited", _blank_thebe_url)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
