"""The container: one JSON document (``trainer_state.json``, a list), JSON lines, or CSV."""

from __future__ import annotations

import csv
import json
import re
import warnings
from collections import Counter

import pandas as pd

from ...errors import DataError
from . import aliases, console
from .schema import _CSV_MISSING, _note, load_json


def parse_text(text: str, source: str, notes: list[str], meta: dict) -> tuple[list | None, pd.DataFrame | None, str]:
    """``(records, frame, container)`` of a log's text: a console or stream log (:mod:`.console`),
    JSON records, or else a CSV table."""
    found = console.parse_text(text, source, notes, meta)
    if found is not None:
        return found[0], None, found[1]
    if text.lstrip()[0] in "{[":
        records, container = _parse_json_text(text, source, notes, meta)
        return records, None, container
    return None, _parse_csv_text(text, source, notes), "csv"


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {col}"


def _parse_json_text(text: str, source: str, notes: list[str], meta: dict) -> tuple[list, str]:
    try:
        obj = load_json(text, source)
    except json.JSONDecodeError as exc:
        # not one JSON document: JSON lines (or one broken document)
        return _json_lines(text, source, notes, exc)
    return _json_document(obj, source, meta)


def _json_document(obj, source: str, meta: dict) -> tuple[list, str]:
    """Records of one JSON document: a ``trainer_state.json``, a list of records, one record."""
    if isinstance(obj, dict) and "log_history" in obj:
        history = obj["log_history"]
        if not isinstance(history, list):
            raise DataError(f"{source}: `log_history` is a {type(history).__name__}, expected a list of dicts")
        for key in ("global_step", "max_steps", "train_batch_size", "logging_steps", "num_train_epochs",
                    "trl_version"):
            if key in obj:
                meta[key] = obj[key]
        if not history:
            raise DataError(f"{source}: `log_history` is empty (no step was logged yet; is "
                            "`logging_steps` larger than the number of steps run?)")
        return history, "trainer_state"
    if isinstance(obj, list):
        return obj, "json"
    if isinstance(obj, dict):
        return [obj], "jsonl"
    raise DataError(f"{source}: JSON holds a {type(obj).__name__}; expected a trainer_state.json "
                    "object with `log_history`, a list of records or one record per line")


def _json_lines(text: str, source: str, notes: list[str], whole_error: json.JSONDecodeError) -> tuple[list, str]:
    """Records of a JSON-lines text; ``whole_error`` is why the text is not one JSON document."""
    # Fast path: every line at once, as one JSON array.
    lines = text.splitlines()
    nonblank = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
    try:
        whole = load_json("[" + ",".join(ln for _, ln in nonblank) + "]", source)
    except json.JSONDecodeError:
        whole = None  # some line is broken (or two share a line): find which, line by line
    if whole is not None and len(whole) == len(nonblank) and all(isinstance(r, dict) for r in whole):
        return whole, "jsonl"
    records: list = []
    broken: list[tuple[int, str]] = []
    for k, (lineno, line) in enumerate(nonblank):
        try:
            rec = load_json(line, source)
        except json.JSONDecodeError as exc:
            if k == 0:
                # The first line is not a JSON object on its own: one (pretty-printed) JSON
                # document that is broken or truncated.
                err = whole_error
                at_end = err.pos >= len(text.rstrip()) - 1
                why = (" (the file ends before the JSON is closed: truncated, e.g. a run killed "
                       "while writing it)") if at_end else ""
                # json's own messages end in " at" before the place it appends ("Unterminated string
                # starting at"); the place is said first here
                raise DataError(f"{source}: invalid JSON at {_where(text, err.pos)}: "
                                f"{err.msg.removesuffix(' at')}{why}") from None
            if k == len(nonblank) - 1:
                _note(notes, f"{source}: line {lineno} (the last) is not complete JSON ({exc.msg}); "
                             f"kept the {len(records)} complete lines before it", warn=True)
                break
            # a few broken lines mid-file are skipped and counted, many are an error
            broken.append((lineno, f"line {lineno} is not valid JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(rec, dict):
            raise DataError(f"{source}: line {lineno} is a JSON {type(rec).__name__}, expected an object "
                            "(one record of metrics per line)")
        records.append(rec)
    aliases.report_broken_lines(broken, len(nonblank), source, notes)
    return records, "jsonl"


# One physical line with its ending (``\r\n``, ``\r`` or ``\n``), or the last line without one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
_NONSPACE = re.compile(r"\S")


def _first_line(text: str) -> tuple[str, int]:
    """The first non-blank line (from its first non-blank character, without its ending) and the offset where
    the line after it starts."""
    m = _NONSPACE.search(text)
    start = m.start() if m else len(text)
    line = _LINE.match(text, start)
    end = line.end() if line else len(text)
    return text[start:end].rstrip("\r\n"), end


def _records(text: str, sep: str, n_fields: int):
    """``(line, start, end, fields)`` of each non-blank record after the header: the physical line (1-based)
    where it starts, its character span in ``text`` and its number of fields (at most ``n_fields``). A quoted
    cell may hold line breaks (RFC 4180), so a record may span several lines: the csv module reads them."""
    bounds = [0, 0]  # the offset and the line number after the last line handed to the csv reader

    def lines():
        for m in _LINE.finditer(text):
            bounds[0] = m.end()
            bounds[1] += 1
            yield m.group()

    reader = csv.reader(lines(), delimiter=sep)
    header_seen = False
    offset, line = 0, 0
    for row in reader:
        if row and (len(row) > 1 or row[0].strip()):
            if header_seen:
                yield line + 1, offset, bounds[0], min(len(row), n_fields)
            header_seen = True
        offset, line = bounds[0], bounds[1]


def _content_end(text: str) -> int:
    """The offset just after the last non-blank character (without copying a long text as ``rstrip`` does)."""
    size = 4096
    while True:
        piece = text[-size:]
        kept = piece.rstrip()
        if kept or size >= len(text):
            return len(text) - len(piece) + len(kept)
        size *= 16


def _full_lines(text: str, sep: str, n_fields: int, start: int, end: int) -> int | None:
    """The number of lines of ``text[start:end]`` when each holds ``n_fields`` fields, else ``None``; found by
    counting the separators of the whole span at once, which is exact for a text without quotes (every line is
    then a record) and without blank lines. ``None`` leaves the question to :func:`_records`. (A line with more
    fields than the header could make up for a short one, but pandas refuses such a line.)"""
    if text.find('"', start, end) >= 0 or text.find("\r", start, end) >= 0:  # a quoted header is fine
        return None
    n_lines = text.count("\n", start, end) + (0 if end == start or text[end - 1] == "\n" else 1)
    return n_lines if text.count(sep, start, end) == (n_fields - 1) * n_lines else None


def _short_rows(text: str, sep: str, n_fields: int) -> tuple[list[tuple[int, int, int]], int, int]:
    """``(short, n_rows, width)``: ``(line, start, end)`` of the data rows with fewer fields than the table's
    rows have (the line where each starts, 1-based, and its character span), the number of data rows, and
    that width.

    A CSV writer writes every field of a row (empty ones as nothing between separators), so a row shorter
    than the others is a line cut off: the last one when a run is killed while writing it. The width is the
    header's, or the one most rows share when every row is narrower (a header that names a column no row
    writes: read as before, the column empty). A count of the separators over the whole text clears the
    common case (:func:`_full_lines`; also tried without the last line, the one a killed run cuts); else the
    csv module reads every record (quotes, cells holding line breaks).
    """
    _, body = _first_line(text)
    n_rows = _full_lines(text, sep, n_fields, body, len(text))
    if n_rows is not None:
        return [], n_rows, n_fields
    end = _content_end(text)
    last = text.rfind("\n", 0, end) + 1
    n_rows = _full_lines(text, sep, n_fields, body, last) if last > body else None
    if n_rows is not None:
        # every line is whole but perhaps the last (a run killed mid-write): it is read alone
        fields = len(next(csv.reader([text[last:end]], delimiter=sep)))
        cut = fields < n_fields or text.count('"', last, end) % 2  # too few fields, or inside a quoted cell
        short = [(text.count("\n", 0, last) + 1, last, len(text))] if cut else []
        return short, n_rows + 1, n_fields
    rows = list(_records(text, sep, n_fields))
    if rows and text.count('"', rows[-1][1], rows[-1][2]) % 2:
        # the last record ends inside a quoted cell (the csv module reads to the end of the file): cut off
        rows[-1] = rows[-1][:3] + (0,)
    counts = Counter(r[3] for r in rows)
    # the most common width (ties: the wider), the header's when it is that of most rows or of no row
    width = max(counts, key=lambda c: (counts[c], c)) if len(rows) > 1 else n_fields
    return [r[:3] for r in rows if r[3] < width], len(rows), width


def _drop_short_rows(text: str, sep: str, n_fields: int, source: str, notes: list[str]) -> str:
    """The text without its short rows (:func:`_short_rows`), each dropped with a warning that counts them:
    a short last row is a line cut off mid-write (as the broken last line of a JSON-lines log); short rows
    elsewhere are corrupt lines, skipped and counted (more than 10% of the rows is an error)."""
    short, n_rows, n_fields = _short_rows(text, sep, n_fields)
    if not short:
        return text
    if _NONSPACE.search(text, short[-1][2]) is None:
        last = short.pop()
        what = ("ends inside a quoted cell" if text.count('"', last[1], last[2]) % 2
                else f"has fewer fields than the other rows' {n_fields}")
        _note(notes, f"{source}: line {last[0]} (the last) {what} (cut off mid-line, e.g. a run killed while "
                     f"writing it); dropped it, kept the {n_rows - 1} complete row(s) before it", warn=True)
        text = text[:last[1]]
    broken = [(n, f"line {n} has fewer fields than the other rows' {n_fields}") for n, _, _ in short]
    aliases.report_broken_lines(broken, n_rows, source, notes, what="rows with fewer fields than the others")
    kept, at = [], 0
    for _, start, end in short:
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    return "".join(kept)


class _TextSource:
    """A file-like view of a text for pandas' C parser: it reads the text piece by piece (``io.StringIO``
    copies a text into four bytes per character, 760 MB for a 190 MB log)."""

    def __init__(self, text: str):
        self._text, self._pos = text, 0

    def read(self, size: int = -1) -> str:
        end = len(self._text) if size is None or size < 0 else self._pos + size
        piece = self._text[self._pos:end]
        self._pos += len(piece)
        return piece

    def __iter__(self):  # pandas asks a file-like object to be iterable; its C parser only calls read()
        return (m.group() for m in _LINE.finditer(self._text, self._pos))


_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+(?:[eE][+-]?\d+)?$")


def _head_lines(text: str, n: int) -> list[str]:
    """The first ``n`` lines from the first non-blank one (without splitting the whole text)."""
    m = _NONSPACE.search(text)
    found = _LINE.finditer(text, m.start() if m else len(text))
    return [line.group().rstrip("\r\n") for line, _ in zip(found, range(n))]


def _parse_csv_text(text: str, source: str, notes: list[str] | None = None) -> pd.DataFrame:
    """The table of a CSV text (comma, tab or semicolon separated); RFC 4180 quoting, so a quoted cell may
    hold separators and line breaks (a logged completion). Short rows are dropped first
    (:func:`_drop_short_rows`); pandas' C parser reads the text piece by piece (:class:`_TextSource`).
    A field may be as long as the text: the csv module's default limit (131,072 characters) stopped a
    long logged completion or column name with an internal error; the file's size is bounded on read."""
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text) + 1))
    try:
        return _parse_csv_fields(text, source, notes)
    finally:
        csv.field_size_limit(limit)


def _parse_csv_fields(text: str, source: str, notes: list[str] | None) -> pd.DataFrame:
    first, _ = _first_line(text)
    counts = {sep: first.count(sep) for sep in (",", "\t", ";")}
    sep = max(counts, key=counts.get)
    if counts[sep] == 0:
        sep = ","
    header = [h.strip() for h in next(csv.reader([first], delimiter=sep))]
    seen: dict[str, int] = {}
    for h in header:  # counted in one pass: header.count per name was quadratic in the columns
        seen[h] = seen.get(h, 0) + 1
    repeated = sorted(h for h, n in seen.items() if n > 1)
    if repeated:
        shown = [h if len(h) <= 40 else h[:37] + "..." for h in repeated[:5]]
        more = f" and {len(repeated) - 5} more" if len(repeated) > 5 else ""
        raise DataError(f"{source}: column name(s) {shown}{more} appear more than once in the header")
    if len(header) > 1:
        text = _drop_short_rows(text, sep, len(header), source, notes if notes is not None else [])
    # a semicolon-separated file with decimal commas (a spreadsheet's export in many locales): its
    # numbers ("2,41") were read as text and their column dropped as holding no numbers
    decimal = "."
    if sep == ";" and any(_DECIMAL_COMMA.match(field.strip())
                          for line in _head_lines(text, 21)[1:] for field in line.split(";")):
        decimal = ","
        _note(notes if notes is not None else [], f"{source}: semicolon-separated with decimal commas "
                                                  "('2,41' read as 2.41)", warn=False)
    try:
        # an empty cell means "not logged at this step"; a written `nan` is a value the run logged
        # (kept as text here, marked by the builder): the two must not be read alike. The parser reads a long
        # text in pieces (low_memory); a column that is text in one piece and numbers in another is then a
        # column of both (DtypeWarning), which the builder reads cell by cell as it reads a text column
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            frame = pd.read_csv(_TextSource(text), sep=sep, skipinitialspace=True, low_memory=True,
                                keep_default_na=False, na_values=list(_CSV_MISSING), decimal=decimal)
    except (pd.errors.ParserError, csv.Error) as exc:
        # a text that is no format: say what was found and what is accepted
        raise DataError(f"{source}: no log format recognised: {console.describe_text(text)} "
                        f"({str(exc).strip()}); {console.ACCEPTED}") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{source}: the file is empty") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame
