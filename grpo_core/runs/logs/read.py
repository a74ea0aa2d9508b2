"""Reading a log: from a file, from records in memory, from a table in memory."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ...errors import DataError, ParameterError
from ...validation import check_choice, check_integer
from .build import MAX_ROWS, _build
from .parsing import parse_text
from .runlog import RunLog
from .schema import FORMATS


def read_log(
    path: str | Path,
    *,
    format: str = "auto",  # noqa: A002 - the natural name for users
    mapping: Mapping[str, str] | None = None,
    trl_version: str | None = None,
    reward_std_kind: str | None = None,
    run: str | None = None,
    max_rows: int | None = None,
) -> RunLog:
    """Read a training log of any supported format into a :class:`RunLog`.

    The format is detected from the content, not the file name: a JSON object with
    ``log_history`` is a TRL ``trainer_state.json``; a JSON list or JSON lines are records; anything
    else is read as CSV (comma, tab or semicolon separated). The records' keys then decide
    between TRL, notebook display names, verl, our own normalised keys, or ``mapping``.

    Parameters
    ----------
    path : str or pathlib.Path
        The log file; or a tracker's files as it wrote them: a TensorBoard event file or a folder of them
        (:mod:`grpo_core.runs.logs.tensorboard`), a W&B ``.wandb`` file, run folder or ``wandb/`` folder
        (:mod:`grpo_core.runs.logs.wandb_files`; needs ``pip install 'grpo-dynamics[wandb]'``), an MLflow file store,
        experiment or run folder (:mod:`grpo_core.runs.logs.mlflow_store`).
    format : {"auto", "trl", "notebook", "verl", "grpo_dynamics", "generic"}
        Force a format instead of detecting it.
    mapping : dict of str to str, optional
        Normalised name -> the file's column, e.g. ``{"step": "iter", "reward": "acc"}``. Applied
        before the format's own names; each column named must exist, and each key must be a normalised
        column name (:data:`~grpo_core.runs.logs.schema.NORMALISED_COLUMNS`, ``reward/<f>``,
        ``reward_std/<f>``); other columns need no mapping (they keep their own names).
    trl_version : str, optional
        The TRL release that wrote the log (decides what ``reward_std`` means; :mod:`grpo_core.runs.logs.trl`).
    reward_std_kind : {"group_mean_std", "batch_std", "unknown"}, optional
        Override the detection of what ``reward_std`` means.
    run : str, optional
        Which run of a file holding several (a label of its run column, ``"arm=pure-GRPO"``, or a
        W&B export's run name; of runs appended one after the other, the step counter starting again, its
        number from 1 or ``"last"``; of a folder of TensorBoard runs, its folder, number or ``"last"``); see
        :mod:`grpo_core.runs.logs.aliases`.
    max_rows : int, optional
        The most training steps read in full (>= 0; 0 reads every row). A longer log is thinned to about
        this many steps: every ``k``-th value of each metric, and every NaN, infinite or extreme value
        (with its neighbours) and every evaluation row, so that the checks for numerical failure and
        spikes still see them (:func:`grpo_core.runs.logs.build._thin`; the counts are in
        ``RunLog.meta["thinned"]``). Default: the environment variable ``GRPO_DYNAMICS_MAX_LOG_ROWS``, else
        :data:`~grpo_core.runs.logs.build.MAX_ROWS` (100,000).

    Returns
    -------
    RunLog

    Raises
    ------
    DataError
        The file does not exist, is empty, has no rows, is truncated or broken JSON (the message
        names the line and column), has no step column (the message says what ``mapping`` to
        pass) or two columns named like one that disagree, has non-integer steps, holds several runs and
        ``run`` names none of them (the message lists them), or its format is not recognised (the message
        lists the formats and how to map columns); a TensorBoard log without tensorboardX or tensorboard
        installed (the message names the extra).
    ParameterError
        ``format`` or ``reward_std_kind`` is not an allowed value, ``trl_version`` is not a
        version number, a ``mapping`` key is not a normalised column name, or ``max_rows`` is not an
        integer >= 0.

    Warns
    -----
    LogWarning
        When rows were merged, sorted, dropped or thinned, cells were not numbers, or the last JSONL
        line was incomplete (:mod:`grpo_core.runs.logs.build`, "Row handling").

    Examples
    --------
    >>> from grpo_core.runs.datasets import real_log_path
    >>> log = read_log(real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth"))
    >>> log.format, len(log.train), log.reward_std_kind
    ('notebook', 250, 'group_mean_std')
    """
    check_choice("format", format, ("auto",) + FORMATS)
    if not isinstance(path, (str, Path)):
        raise ParameterError("path", f"`path` must be a file path (str or pathlib.Path); got {type(path).__name__}"
                             + (" (for a table in memory use from_frame)" if isinstance(path, pd.DataFrame) else ""))
    rows = _max_rows(max_rows)
    p = Path(path)
    source = str(path)
    store = _store_for(p)
    if store is not None:
        notes: list[str] = []
        meta: dict[str, Any] = {}
        records, used = store.read_store(p, source, notes, meta, run, _max_bytes())
        return _build(records, None, container=store.CONTAINER, fmt=format, mapping=mapping, source=source,
                      notes=notes, meta=meta, trl_version=trl_version, reward_std_kind=reward_std_kind,
                      run=None if used else run, max_rows=rows)
    raw = _read_regular_file(p, source)
    try:
        # a UTF-16 file with its byte-order mark (Windows PowerShell's default export) was "not a text file"
        text = raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{source}: not a text file (byte {exc.start} is not UTF-8); "
                        "expected JSON, JSON lines or CSV") from None
    del raw  # a long log is not held twice (nor copied by strip)
    if not text or text.isspace():
        raise DataError(f"{source}: the file is empty")
    if "\x00" in text[:4096]:  # valid UTF-8 but control bytes: a binary file read "no rows (only a header?)"
        raise DataError(f"{source}: not a text file (it holds NUL bytes); expected JSON, JSON lines or CSV")
    _refuse_bare_json(text, source)
    notes: list[str] = []
    meta: dict[str, Any] = {}
    records, frame, container = parse_text(text, source, notes, meta)
    del text
    return _build(records, frame, container=container, fmt=format, mapping=mapping, source=source,
                  notes=notes, meta=meta, trl_version=trl_version, reward_std_kind=reward_std_kind, run=run,
                  max_rows=rows)


#: Environment variable that raises the largest log read (bytes); see :data:`MAX_LOG_BYTES`.
MAX_BYTES_ENV = "GRPO_DYNAMICS_MAX_LOG_BYTES"
#: The largest log read by default (512 MiB): a log is held in memory twice while it is decoded (its bytes and
#: its text), and its table beside its text while parsed (a 2-million-row CSV, 160 MB, peaks near 600 MB
#: in ``grpo-dynamics diagnose``), so a larger one would take gigabytes.
MAX_LOG_BYTES = 512 * 2 ** 20


#: Environment variable that sets the default ``max_rows`` of :func:`read_log` (0 reads every row).
MAX_ROWS_ENV = "GRPO_DYNAMICS_MAX_LOG_ROWS"


def _max_rows(value) -> int:
    """``max_rows`` checked, or the default (:data:`MAX_ROWS_ENV`, else :data:`~.build.MAX_ROWS`)."""
    if value is not None:
        return check_integer("max_rows", value, low=0)
    env = os.environ.get(MAX_ROWS_ENV, "").strip()
    if not env:
        return MAX_ROWS
    try:
        rows = float(env)
    except ValueError:
        raise DataError(f"{MAX_ROWS_ENV}={env!r} is not a number of rows") from None
    if not (rows >= 0 and rows.is_integer()):
        raise DataError(f"{MAX_ROWS_ENV} must be a whole number >= 0 (0 reads every row); got {env}")
    return int(rows)


#: The modules that read a tracker's files or folders (TensorBoard, W&B, MLflow), tried in this order. Each has
#: ``CONTAINER`` (its name in ``RunLog.container``), ``matches(path) -> bool``, ``run_names(path) -> list[str]``
#: (the runs a path holds, each a value of ``run``) and ``read_store(path, source, notes, meta, run, max_bytes)
#: -> (records, run_used)``.
STORES = ("tensorboard", "wandb_files", "mlflow_store")


def _store_module(name: str):
    import importlib

    return importlib.import_module(f"{__package__}.{name}")


def _store_for(p: Path):
    """The tracker module that reads ``p`` (an event file, a W&B run folder, an MLflow store ...), or None."""
    for name in STORES:
        module = _store_module(name)
        try:
            if module.matches(p):
                return module
        except OSError:
            continue  # a link loop, no permission: the regular reading says what is wrong
    return None


def _max_bytes() -> int:
    value = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not value:
        return MAX_LOG_BYTES
    try:
        limit = int(float(value))
    except ValueError:
        raise DataError(f"{MAX_BYTES_ENV}={value!r} is not a number of bytes") from None
    if limit < 1:
        raise DataError(f"{MAX_BYTES_ENV} must be >= 1 (bytes); got {value}")
    return limit


def _read_regular_file(p: Path, source: str) -> bytes:
    """The bytes of a regular file of at most :func:`_max_bytes`; a clear DataError for anything else
    (no such file, a link loop, a folder, a device or FIFO that would be read forever, too large)."""
    try:
        st = p.stat()
    except FileNotFoundError:
        dangling = " (a symbolic link to a missing file)" if p.is_symlink() else ""
        raise DataError(f"{source}: no such file{dangling}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DataError(f"{source}: a loop of symbolic links, not a file") from None
        raise
    if stat.S_ISDIR(st.st_mode):
        raise DataError(f"{source}: is a directory; pass the log file itself (trainer_state.json, "
                        "metrics.jsonl or a CSV), or a folder with TensorBoard event files (events.out.tfevents.*)")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode)
                else "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "not a regular file")
        raise DataError(f"{source}: {kind}, not a log file; save the log to a file first")
    limit = _max_bytes()
    if st.st_size > limit:
        raise DataError(f"{source}: {st.st_size / 2 ** 20:.0f} MiB, larger than the {limit / 2 ** 20:.0f} MiB a log "
                        f"may be; set {MAX_BYTES_ENV} to a larger number of bytes to read it anyway")
    with p.open("rb") as fh:
        raw = fh.read(limit + 1)  # a file that grew since stat() is still bounded
    if len(raw) > limit:
        raise DataError(f"{source}: larger than the {limit / 2 ** 20:.0f} MiB a log may be (it grew while read); "
                        f"set {MAX_BYTES_ENV} to read it anyway")
    return raw


def _refuse_bare_json(text: str, source: str) -> None:
    """A file holding one JSON number, string, true/false or null is no log (it read as "no rows")."""
    head = text.lstrip()[:1]
    if head in ("{", "[") or len(text) > 10_000:
        return
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return
    if not isinstance(value, (dict, list)):
        shown = json.dumps(value)[:60]
        raise DataError(f"{source}: holds a single JSON value ({shown}), not a log; expected a JSON object "
                        "with log_history (trainer_state.json), a list of records, JSON lines or CSV")


def from_records(
    records: Iterable[Mapping[str, Any]],
    *,
    format: str = "auto",  # noqa: A002
    mapping: Mapping[str, str] | None = None,
    source: str = "<records>",
    trl_version: str | None = None,
    reward_std_kind: str | None = None,
) -> RunLog:
    """Build a :class:`RunLog` from log entries in memory (a TRL ``log_history`` list, dicts).

    Parameters and behaviour as :func:`read_log` (``records`` replaces the file), but every row is kept
    (no ``max_rows``: the records are in memory already).

    Raises
    ------
    DataError
        No records, a record that is not a mapping, no step column, unknown format.

    Examples
    --------
    >>> log = from_records([{"step": 1, "loss": 0.0, "rewards/acc": 0.2},
    ...                     {"step": 2, "loss": 0.0, "rewards/acc": 0.4}])
    >>> log.format, list(log.train.columns)
    ('trl', ['step', 'loss', 'reward/acc', 'reward'])
    """
    check_choice("format", format, ("auto",) + FORMATS)
    if isinstance(records, (str, bytes, Mapping, pd.DataFrame)) or not isinstance(records, Iterable):
        # a DataFrame iterates over its column names, a dict over its keys, a string over its letters
        hint = " (use from_frame for a DataFrame)" if isinstance(records, pd.DataFrame) else ""
        raise ParameterError("records", "`records` must be an iterable of mappings (one per log entry); "
                                        f"got {type(records).__name__}{hint}")
    records = list(records)
    for i, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise DataError(f"{source}: record {i} is a {type(r).__name__}, not a mapping of metric names to values")
    return _build(records, None, container="records", fmt=format, mapping=mapping, source=source,
                  notes=[], meta={}, trl_version=trl_version, reward_std_kind=reward_std_kind)


def from_frame(
    frame: pd.DataFrame,
    *,
    format: str = "auto",  # noqa: A002
    mapping: Mapping[str, str] | None = None,
    source: str = "<frame>",
    trl_version: str | None = None,
    reward_std_kind: str | None = None,
) -> RunLog:
    """Build a :class:`RunLog` from a table in memory (one row per log entry).

    Parameters and behaviour as :func:`read_log`, but every row is kept (no ``max_rows``); a named index
    that is not in the columns (``step``) is used as a column.

    Raises
    ------
    DataError
        No rows, no step column, unknown format.

    Examples
    --------
    >>> import pandas as pd
    >>> log = from_frame(pd.DataFrame({"step": [1, 2], "reward": [0.1, 0.2], "kl": [0.0, 0.01]}))
    >>> log.series("kl")[1]
    array([0.  , 0.01])
    """
    check_choice("format", format, ("auto",) + FORMATS)
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}")
    if frame.index.name is not None and frame.index.name not in frame.columns:
        frame = frame.reset_index()
    return _build(None, frame.copy(), container="records", fmt=format, mapping=mapping, source=source,
                  notes=[], meta={}, trl_version=trl_version, reward_std_kind=reward_std_kind)
