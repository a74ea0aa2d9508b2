"""How charts are rendered: in the book (local JavaScript) or in a live notebook (defaults).

During ``make book`` the environment variable ``GRPO_BOOK_BUILD=1`` is set; :func:`setup_book`
then points Altair's ``html`` renderer at the Vega files the site serves itself, so no page asks a
CDN for anything. In Jupyter, Colab or VS Code nothing changes: Altair keeps its default renderer.
"""

from __future__ import annotations

import os

import altair as alt

__all__ = ["setup_book", "in_book_build", "vendor_base_url"]


def in_book_build() -> bool:
    """True while the chapters are executed by ``make book``."""
    return os.environ.get("GRPO_BOOK_BUILD", "") == "1"


def vendor_base_url(page_depth: int = 0) -> str:
    """Relative URL of the site's Vega files from a page ``page_depth`` folders below the root."""
    if page_depth < 0:
        raise ValueError(f"`page_depth` must be >= 0; got {page_depth}")
    return "../" * page_depth + "_static/vendor"


def setup_book(page_depth: int = 0) -> None:
    """Configure Altair for the current context; call once at the top of each chapter.

    Parameters
    ----------
    page_depth : int
        How many folders below the book root the chapter's page lies (``book/x.md``: 0,
        ``book/experiments/x.md``: 1). Used only during the book build.
    """
    alt.data_transformers.disable_max_rows()
    if in_book_build():
        alt.renderers.enable("html", base_url=vendor_base_url(page_depth))
