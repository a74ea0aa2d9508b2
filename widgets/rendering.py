"""How charts are rendered: in the book (local JavaScript) or in a live notebook (defaults).

During ``make book`` the environment variable ``GRPO_BOOK_BUILD=1`` is set; :func:`setup_book`
then enables the book's renderer (:data:`BOOK_RENDERER`): Altair's ``html`` renderer pointed at the
Vega files the site serves itself, so no page asks a CDN for anything, whose page calls
``grpoEmbed`` (``book/assets/grpo-charts.js``, loaded on every page) instead of ``vegaEmbed``, so
a chart wider than its column is laid out for it (panels stacked, widths reduced) rather than
scaled down with its text. In Jupyter, Colab or VS Code nothing changes: Altair keeps its default
renderer.

The chapters are also the notebooks people open on Colab, where neither myst-nb nor the repository
is there: :func:`glue` is myst-nb's ``glue`` when myst-nb is installed and otherwise shows and keeps
the value, and :func:`repo_path` finds the repository's files (shipped runs, benchmark records)
next to the book or, on Colab, in the clone the set-up cell made (``GRPO_DYNAMICS_DATA``).
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import altair as alt

from grpo_core.validation import check_integer

__all__ = ["setup_book", "in_book_build", "vendor_base_url", "wrap_report", "glue", "GLUED", "repo_path", "DATA_ENV",
           "BOOK_RENDERER", "book_embed_html", "ScriptJSONEncoder", "script_json"]

#: Environment variable naming a clone of the repository (set by the Colab set-up cells that fetch it).
DATA_ENV = "GRPO_DYNAMICS_DATA"

#: Values passed to :func:`glue` while myst-nb is not installed (name -> value).
GLUED: dict[str, object] = {}

#: Name of the Altair renderer :func:`setup_book` enables in the book build.
BOOK_RENDERER = "grpo_book"
#: The call Altair's html renderer writes, and what the book's renderer writes in its place: the
#: page's ``grpoEmbed`` (book/assets/grpo-charts.js) when it is loaded, else the same vegaEmbed call.
_VEGA_EMBED_CALL = "vegaEmbed(outputDiv, spec, embedOpt)"
_GRPO_EMBED_CALL = ('(typeof grpoEmbed === "function" ? grpoEmbed(outputDiv, spec, embedOpt, vegaEmbed)'
                    " : vegaEmbed(outputDiv, spec, embedOpt))")


#: Characters JSON inside an HTML ``<script>`` element must not hold raw, and their JSON escapes:
#: ``<`` (a ``</script>`` ends the element early; ``<!--<script>`` makes the parser skip the real
#: ``</script>``, so every chart after it is blank), ``>`` and ``&`` (the same parsing rules in
#: XHTML and in attributes), and the line terminators U+2028/U+2029 (a syntax error in JavaScript
#: before ES2019). Outside strings JSON has none of them, so the replacement never changes a value.
_SCRIPT_UNSAFE = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                  0x2028: "\\u2028", 0x2029: "\\u2029"}


class ScriptJSONEncoder(json.JSONEncoder):
    """:class:`json.JSONEncoder` whose output is safe inside an HTML ``<script>`` element.

    ``<``, ``>``, ``&``, U+2028 and U+2029 are written as ``\\u003c``, ``\\u003e``, ``\\u0026``,
    ``\\u2028``, ``\\u2029`` (the same string to a JSON parser); anything without them is encoded
    byte for byte as :class:`json.JSONEncoder` encodes it. Pass it as ``cls=`` to :func:`json.dumps`
    or in Altair's ``json_kwds``.
    """

    def encode(self, o) -> str:
        return super().encode(o).translate(_SCRIPT_UNSAFE)

    def iterencode(self, o, _one_shot: bool = False):
        for chunk in super().iterencode(o, _one_shot):
            yield chunk.translate(_SCRIPT_UNSAFE)


def script_json(obj, **kwargs) -> str:
    """``json.dumps(obj, **kwargs)`` safe to place inside an HTML ``<script>`` element.

    A run, file or metric name from a log (``<!--<script>``, ``</script>``, U+2028) can reach a chart's
    spec; written raw it would end or hide the script and blank every chart of the page. See
    :class:`ScriptJSONEncoder` for what is escaped.

    Parameters
    ----------
    obj : object
        Anything :func:`json.dumps` accepts.
    **kwargs
        Passed to :func:`json.dumps` (``allow_nan=False`` for strict JSON).

    Returns
    -------
    str
        The JSON text, with no raw ``<``, ``>``, ``&``, U+2028 or U+2029.

    Raises
    ------
    TypeError, ValueError
        As :func:`json.dumps` (an object it cannot encode; NaN with ``allow_nan=False``).

    Examples
    --------
    >>> print(script_json({"title": "</script><!--"}))
    {"title": "\\u003c/script\\u003e\\u003c!--"}
    """
    return json.dumps(obj, cls=ScriptJSONEncoder, **kwargs)


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
        alt.renderers.enable(BOOK_RENDERER, base_url=vendor_base_url(page_depth))


def book_embed_html(html: str) -> str:
    """Altair's html output with its ``vegaEmbed(...)`` call going through the page's ``grpoEmbed``.

    ``grpoEmbed`` (``book/assets/grpo-charts.js``, loaded on every page of the book) draws the
    chart laid out for its container's width; where it is not defined the original call runs.

    Raises
    ------
    ValueError
        ``html`` does not contain Altair's call exactly once (an Altair whose template changed).
    """
    count = html.count(_VEGA_EMBED_CALL)
    if count != 1:
        raise ValueError(f"expected one {_VEGA_EMBED_CALL!r} in Altair's html output; found {count}")
    return html.replace(_VEGA_EMBED_CALL, _GRPO_EMBED_CALL)


def _book_renderer(spec: dict, **metadata):
    """Altair's ``html`` renderer, its page calling ``grpoEmbed`` (:func:`book_embed_html`)."""
    from altair.vegalite.v6.display import html_renderer

    # the spec's JSON goes into a <script> element: escaped so a name from a log cannot end it
    metadata.setdefault("json_kwds", {"cls": ScriptJSONEncoder})
    out = html_renderer(spec, **metadata)
    bundle, meta = out if isinstance(out, tuple) else (out, None)
    bundle = dict(bundle)
    bundle["text/html"] = book_embed_html(bundle["text/html"])
    return bundle if meta is None else (bundle, meta)


alt.renderers.register(BOOK_RENDERER, _book_renderer)


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


def glue(name: str, value, display: bool = True) -> None:
    """myst-nb's ``glue`` in the book build; without myst-nb (Colab, a plain Jupyter), show and keep.

    With myst-nb importable this is exactly ``myst_nb.glue(name, value, display=display)``, so the
    book's ``{glue:text}`` references work as before. Without it the value is stored in
    :data:`GLUED` under ``name`` and, when ``display`` is true, shown with IPython's ``display``
    (what myst-nb shows in the cell), so a notebook reader sees the same figures and tables.

    Parameters
    ----------
    name : str
        The key the book's text refers to.
    value : object
        Anything IPython can display (a number, a chart, a table).
    display : bool
        Show the value in the cell's output.
    """
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        myst_glue = None
    if myst_glue is not None:
        myst_glue(name, value, display=display)
        return
    GLUED[name] = value
    if display:
        from IPython.display import display as ipython_display

        ipython_display(value)


def repo_path(relative: str) -> Path:
    """Path of a file or folder of the repository (``"book/experiments/runs"``) that pip does not install.

    Looked for, in order: in the checkout this package lies in (an editable install, the book
    build), in the working folder and its parents (a chapter run from ``book/`` of a checkout,
    Binder), and in the folder named by the environment variable ``GRPO_DYNAMICS_DATA`` (on Colab
    the set-up cell of a chapter that needs data clones the repository and sets it).

    Parameters
    ----------
    relative : str
        The path relative to the repository's root, with ``/`` separators.

    Returns
    -------
    pathlib.Path
        The first existing match; relative to the working folder when it lies inside it (the book,
        built from ``book/``, gets ``experiments/runs`` for ``"book/experiments/runs"``).

    Raises
    ------
    ValueError
        ``relative`` absolute or empty.
    FileNotFoundError
        Found nowhere; the message names the path and how to get it.
    """
    rel = Path(relative)
    if not str(relative).strip() or rel.is_absolute():
        raise ValueError(f"`relative` must be a path relative to the repository's root; got {relative!r}")
    cwd = Path.cwd().resolve()
    roots = [Path(__file__).resolve().parents[1], cwd, *cwd.parents]
    data = os.environ.get(DATA_ENV, "").strip()
    if data:
        roots.append(Path(data).expanduser().resolve())
    for root in roots:
        hit = root / rel
        if hit.exists():
            # relative to the working folder when inside it, so what prints a path reads as before
            return hit.relative_to(cwd) if hit.is_relative_to(cwd) else hit
    where = f"{DATA_ENV}={data!r} does not hold it either" if data else f"{DATA_ENV} is not set"
    raise FileNotFoundError(
        f"{rel.as_posix()}: this file of the grpo-dynamics repository is not installed by pip, and it is "
        f"not next to this notebook ({where}). Clone the repository this notebook comes from "
        "(`git clone --depth 1 <its URL>`), then run the notebook from the clone's book/ folder or "
        f"set {DATA_ENV} to the clone's folder."
    )
