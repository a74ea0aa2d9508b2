"""The container: one JSON document (``trainer_state.json``, a list), JSON lines, or CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter

import pandas as pd

from ...errors import DataError
from . import aliases, console
from .schema import _CSV_MISSING, _note


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
        obj = json.loads(text)
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
        whole = json.loads("[" + ",".join(ln for _, ln in nonblank) + "]")
    except json.JSONDecodeError:
        whole = None  # some line is broken (or two share a line): find which, line by line
    if whole is not None and len(whole) == len(nonblank) and all(isinstance(r, dict) for r in whole):
        return whole, "jsonl"
    records: list = []
    broken: list[tuple[int, str]] = []
    for k, (lineno, line) in enumerate(nonblank):
        try:
            rec = json.loads(line)
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


def _short_rows(text: str, sep: str, n_fields: int) -> tuple[list[int], int, int]:
    """``(short, n_rows, width)``: the line numbers (1-based) of the data rows with fewer fields than the
    table's rows have, the number of data rows, and that width.

    A CSV writer writes every field of a row (empty ones as nothing between separators), so a row shorter
    than the others is a line cut off: the last one when a run is killed while writing it. The width is the
    header's, or the one most rows share when every row is narrower (a header that names a column no row
    writes: read as before, the column empty). A quick count of the separators finds the candidates; the
    csv module (quotes) confirms them.
    """
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip()) + 1  # after the header
    rows = [(i + 1, lines[i]) for i in range(start, len(lines)) if lines[i].strip()]
    counts = Counter(min(line.count(sep) + 1, n_fields) for _, line in rows)
    # the most common width (ties: the wider), the header's when it is that of most rows or of no row
    width = max(counts, key=lambda c: (counts[c], c)) if len(rows) > 1 else n_fields
    short = [n for n, line in rows
             if line.count(sep) + 1 < width and len(next(csv.reader([line], delimiter=sep))) < width]
    return short, len(rows), width


def _drop_short_rows(text: str, sep: str, n_fields: int, source: str, notes: list[str]) -> str:
    """The text without its short rows (:func:`_short_rows`), each dropped with a warning that counts them:
    a short last row is a line cut off mid-write (as the broken last line of a JSON-lines log); short rows
    elsewhere are corrupt lines, skipped and counted (more than 10% of the rows is an error)."""
    short, n_rows, n_fields = _short_rows(text, sep, n_fields)
    if not short:
        return text
    lines = text.splitlines(keepends=True)
    last = max(i + 1 for i, ln in enumerate(lines) if ln.strip())
    if short[-1] == last:
        short = short[:-1]
        _note(notes, f"{source}: line {last} (the last) has fewer fields than the other rows' {n_fields} (cut "
                     f"off mid-line, e.g. a run killed while writing it); dropped it, kept the {n_rows - 1} complete "
                     "row(s) before it", warn=True)
        lines = lines[:last - 1] + lines[last:]
    broken = [(n, f"line {n} has fewer fields than the other rows' {n_fields}") for n in short]
    aliases.report_broken_lines(broken, n_rows, source, notes, what="rows with fewer fields than the others")
    drop = set(short)
    return "".join(ln for i, ln in enumerate(lines, 1) if i not in drop)


_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+(?:[eE][+-]?\d+)?$")


def _parse_csv_text(text: str, source: str, notes: list[str] | None = None) -> pd.DataFrame:
    first = text.lstrip().splitlines()[0]
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
                          for line in text.lstrip().splitlines()[1:21] for field in line.split(";")):
        decimal = ","
        _note(notes if notes is not None else [], f"{source}: semicolon-separated with decimal commas "
                                                  "('2,41' read as 2.41)", warn=False)
    try:
        # an empty cell means "not logged at this step"; a written `nan` is a value the run logged
        # (kept as text here, marked by the builder): the two must not be read alike
        frame = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True, low_memory=False,
                            keep_default_na=False, na_values=list(_CSV_MISSING), decimal=decimal)
    except (pd.errors.ParserError, csv.Error) as exc:
        # a text that is no format: say what was found and what is accepted
        raise DataError(f"{source}: no log format recognised: {console.describe_text(text)} "
                        f"({str(exc).strip()}); {console.ACCEPTED}") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{source}: the file is empty") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame
