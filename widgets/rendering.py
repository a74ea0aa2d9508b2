"""How charts are rendered: in the book (local JavaScript) or in a live notebook (defaults).

During ``make book`` the environment variable ``GRPO_BOOK_BUILD=1`` is set; :func:`setup_book`
then points Altair's ``html`` renderer at the Vega files the site serves itself, so no page asks a
CDN for anything. In Jupyter, Colab or VS Code nothing changes: Altair keeps its default renderer.
"""

from __future__ import annotations

import os
import textwrap

import altair as alt

from grpo_core.validation import check_integer

__all__ = ["setup_book", "in_book_build", "vendor_base_url", "wrap_report"]


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


def wrap_report(text: str, width: int = 78) -> str:
    """Wrap a multi-line text report to ``width`` columns, keeping each line's indentation.

    Reports such as :meth:`grpo_core.model.advice.Advice.summary` or a diagnosis's ``summary()`` are
    laid out for a terminal; on a book page a code output shows about 78 monospace characters
    before it scrolls sideways. Each line longer than ``width`` is broken at spaces; its
    continuation lines get the line's own indentation plus four spaces. Blank lines and short
    lines are kept as they are, and no word is split.

    Parameters
    ----------
    text : str
        The report, lines separated by ``"\\n"``.
    width : int, >= 20
        Maximum line length in characters (a single word longer than that stays whole).

    Returns
    -------
    str
        The wrapped report.

    Raises
    ------
    ParameterError
        ``width`` not an integer >= 20.

    Examples
    --------
    >>> print(wrap_report("Stability\\n  exact threshold 0.0265, first unstable k_ref = 12", width=30))
    Stability
      exact threshold 0.0265,
          first unstable k_ref =
          12
    """
    width = check_integer("width", width, low=20)
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.append(textwrap.fill(line.strip(), width, initial_indent=indent,
                                 subsequent_indent=indent + "    ", break_long_words=False,
                                 break_on_hyphens=False))
    return "\n".join(out)
