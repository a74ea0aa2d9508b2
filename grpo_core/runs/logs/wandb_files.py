"""Weights & Biases run files: the ``run-<id>.wandb`` file W&B writes beside every run, online or offline.

W&B keeps each run in a folder ``wandb/run-YYYYMMDD_HHMMSS-<id>/`` (``offline-run-...`` for an offline run)
holding ``run-<id>.wandb``: every record the run sent (its history rows, config, summary, system stats,
console output) in the order it sent them. :func:`read_wandb` reads the history rows of that file, one
record per row, ``{"step": int, key: value}`` with the row's numbers (a histogram, an image, a table or a
text is left out); :func:`grpo_core.runs.logs.read_log` then normalises the records like any other log.

The step: W&B's own ``_step`` counts the calls to ``wandb.log``. ``transformers``' ``WandbCallback`` (TRL's
trainers) logs the trainer's step as ``train/global_step`` in every row and makes it the runs' step
(``define_metric("*", step_metric="train/global_step")``); that is the ``step`` of ``trainer_state.json``,
so it is read as the step where the rows hold it, else ``_step``. A note says which. The rows one after the
other at one trainer step (TRL's metrics, its completions table, its ``profiling/`` timings each come in a row
of their own) are merged into one record (:func:`_merge_steps`).

Keys: ``WandbCallback`` writes ``train/<key>`` and ``eval/<key>`` as ``TensorBoardCallback`` does; they are
read as the keys TRL logs (``train/reward`` -> ``reward``, ``eval/loss`` -> ``eval_loss``), with the rule of
:mod:`.tensorboard`.

Files and folders:

* a ``.wandb`` file: its history;
* a run folder (``run-...-<id>/``): its ``.wandb`` file; a run folder of an old W&B release (before 0.10) that
  has ``wandb-history.jsonl`` instead: those JSON lines;
* a ``wandb/`` folder, or a folder holding ``wandb/``: its run folders, listed (``latest-run``, a link to
  one of them, is not listed again); one is chosen with ``run=``: its run id, its folder name, its number
  from 1 in the list (in the order of the start times in the folders' names), or ``"last"``.

The config (the run's ``config`` records) gives ``meta["max_steps"]`` where it holds a positive
``max_steps`` (TRL's ``GRPOConfig``); the run folder's ``files/requirements.txt`` (the packages W&B found
installed) gives ``meta["trl_version"]`` for a transformers Trainer's run (rows with ``train/global_step``),
which says what TRL's ``reward_std`` means; ``meta["wandb"]`` holds the run's id, name and project and the file
read.

The frames are read here and the records parsed with W&B's own protocol buffers
(``wandb.proto.wandb_internal_pb2.Record``; the extra ``grpo-dynamics[wandb]``). W&B's own scanner
(``wandb.sdk.internal.datastore.DataStore``) is not used: recent releases no longer ship it (0.26.1 does;
0.30.0 and 0.31.0 do not), and it opens the file for writing and stops at the first bad frame with an
``AssertionError``. Each frame's CRC-32 is
checked; a frame cut off at the end of the file (a run killed while writing, a file copied while the run was
going on) is dropped with a warning, and so is a bad frame in the last 32 KiB block (a block being written);
a bad frame before that is a :class:`~grpo_core.errors.DataError`.

References
----------
W&B ``wandb/sdk/internal/datastore.py`` (release 0.26.1: the file's header and frames, after LevelDB's
log format, ``leveldb/doc/log_format.md``); ``wandb/proto/wandb_internal.proto`` (``Record``,
``HistoryRecord``, ``ConfigRecord``); ``transformers.integrations.WandbCallback`` (``rewrite_logs``, the
``train/global_step`` step metric).
"""

from __future__ import annotations

import json
import math
import re
import struct
import zlib
from pathlib import Path

from ...errors import DataError, SeveralRunsError
from .aliases import choose_segment
from .schema import _note
from .tensorboard import _trl_keys

__all__ = ["read_wandb", "run_folders", "EXTRA", "CONTAINER", "matches", "run_names", "read_store"]

#: ``RunLog.container`` of a log read from W&B run files.
CONTAINER = "wandb"

#: How to install what reading ``.wandb`` files needs.
EXTRA = "pip install 'grpo-dynamics[wandb]' (wandb)"

# The file's header (ident, magic, version) and frames: W&B's datastore.py, after LevelDB's log format.
_HEADER = struct.pack("<4sHB", b":W&B", 0xBEE1, 0)
_HEADER_LEN = 7
_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) & 0xFFFFFFFF for t in (_FULL, _FIRST, _MIDDLE, _LAST)}

#: A run folder's name: ``run-20250101_120000-<id>`` or ``offline-run-...``; the id is the run's.
_RUN_FOLDER = re.compile(r"^(?:offline-)?run-(\d{8}_\d{6})-([A-Za-z0-9_-]+)$")
#: The history file of W&B releases before 0.10 (in the run folder, or in its ``files/``).
_OLD_HISTORY = "wandb-history.jsonl"
# W&B's own keys in a history row besides the step: times, not metrics.
_W_AND_B_KEYS = ("_timestamp", "_runtime", "_wandb")
#: The trainer's step, as ``WandbCallback`` logs it.
_TRAINER_STEP = "train/global_step"


def _library():
    """W&B's ``Record`` protocol buffer; a DataError naming the extra when wandb is not installed."""
    try:
        from wandb.proto.wandb_internal_pb2 import Record
    except ImportError:
        raise DataError(f"reading W&B run files (.wandb) needs the wandb package: {EXTRA}") from None
    return Record


def is_wandb_file(path: Path) -> bool:
    """Whether ``path`` is named as W&B names a run's file (``*.wandb``)."""
    return path.suffix == ".wandb"


def _run_file(folder: Path) -> Path | None:
    """The run file of a run folder: its ``.wandb`` file, else an old release's ``wandb-history.jsonl``."""
    try:
        files = sorted(f for f in folder.glob("*.wandb") if f.is_file())
    except OSError:
        return None
    if files:
        return files[-1] if len(files) == 1 else max(files, key=lambda f: f.stat().st_size)
    for old in (folder / _OLD_HISTORY, folder / "files" / _OLD_HISTORY):
        if old.is_file():
            return old
    return None


def run_folders(path: Path) -> dict[str, Path]:
    """The W&B run folders of ``path`` (a run folder, a ``wandb/`` folder, or a folder holding ``wandb/``):
    folder name -> its run file, in the order of the start times in their names (then by name); ``{".": file}``
    for a run folder itself.

    ``latest-run`` and any other link to a run folder listed already are left out."""
    own = _run_file(path)
    if own is not None:
        return {".": own}
    found: dict[str, Path] = {}
    seen: set[Path] = set()
    for parent in (path, path / "wandb"):
        if not parent.is_dir():
            continue
        children = sorted(parent.iterdir(), key=lambda p: (p.is_symlink(), p.name))  # real folders first
        for child in children:
            if not child.is_dir():
                continue
            real = child.resolve()
            if real in seen:
                continue
            f = _run_file(child)
            if f is None:
                continue
            seen.add(real)
            name = child.name if parent == path else f"wandb/{child.name}"
            found[name] = f
    return dict(sorted(found.items(), key=lambda kv: _start(kv[0])))


def _start(name: str) -> tuple[str, str]:
    """A run folder's sort key: its start time (``offline-run-`` and ``run-`` folders interleaved), then name."""
    m = _RUN_FOLDER.match(name.rsplit("/", 1)[-1])
    return (m.group(1) if m else "", name)


def matches(path: Path) -> bool:
    """Whether ``path`` is a ``.wandb`` file or a folder with a W&B run folder (or is one)."""
    if path.is_dir():
        return bool(run_folders(path))
    return is_wandb_file(path) and path.is_file()


def run_names(path: Path) -> list[str]:
    """The runs ``path`` holds, each a value of ``run``: the run folders (``["."]`` for a file or one run)."""
    if not path.is_dir():
        return ["."]
    names = list(run_folders(path))
    return names if len(names) > 1 else ["."]


def _run_id(name: str) -> str | None:
    m = _RUN_FOLDER.match(name.rsplit("/", 1)[-1])
    return m.group(2) if m else None


def _choose(folders: dict[str, Path], run: str, source: str, shown: str) -> str:
    names = list(folders)
    k = choose_segment(names, run)
    if k is not None:
        return names[k]
    want = run.strip()
    by_last = [n for n in names if n.rsplit("/", 1)[-1] == want]
    if len(by_last) == 1:
        return by_last[0]
    by_id = [n for n in names if _run_id(n) == want]
    if len(by_id) == 1:
        return by_id[0]
    if len(by_id) > 1:
        raise DataError(f"{source}: run id {want!r} has {len(by_id)} run folders (a resumed run): "
                        f"{', '.join(by_id)}; choose one by its folder name")
    raise DataError(f"{source}: `run` {run!r} is not one of the runs ({shown}); give a run id, a folder name, "
                    "a number from 1 or 'last'")


# --- the .wandb file -------------------------------------------------------------------------------------

def _frames(data: bytes, name: str, source: str, notes: list[str]) -> list[bytes]:
    """The records' bytes of a ``.wandb`` file (its frames joined), checking each frame's CRC."""
    if len(data) < _HEADER_LEN:
        raise DataError(f"{source}: {name} is empty or cut off inside its header (a run killed as it started?)")
    if data[:_HEADER_LEN] != _HEADER:
        if data[:4] == b":W&B":
            raise DataError(f"{source}: {name} is a W&B run file of a format version this reader does not know "
                            f"(header {data[:_HEADER_LEN]!r})")
        raise DataError(f"{source}: {name} is not a W&B run file (it does not start with ':W&B')")
    out: list[bytes] = []
    parts: list[bytes] | None = None
    pos, n = _HEADER_LEN, len(data)
    last_block = (n - 1) // _BLOCK
    cut = None
    while pos < n:
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER_LEN:  # the block's tail: zeros
            pos += left
            continue
        if pos + _HEADER_LEN > n:
            cut = "ends inside a frame's header"
            break
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0 and length == 0 and crc == 0:  # zeros: the end of what was written
            if data[pos:].strip(b"\x00"):
                raise DataError(f"{source}: {name} is damaged at byte {pos} (zeros followed by more data)")
            break
        end = pos + _HEADER_LEN + length
        if end > n:
            cut = "ends inside a frame"
            break
        body = data[pos + _HEADER_LEN:end]
        if kind not in _TYPE_CRC or zlib.crc32(body, _TYPE_CRC[kind]) & 0xFFFFFFFF != crc:
            if pos // _BLOCK == last_block:
                cut = f"has a damaged frame at byte {pos}, in its last block"
                break
            raise DataError(f"{source}: {name} is not a W&B run file or is damaged at byte {pos} (a frame fails "
                            "its checksum)")
        pos = end
        if kind == _FULL:
            out.append(body)
            parts = None
        elif kind == _FIRST:
            parts = [body]
        elif parts is None:  # a MIDDLE or LAST without its FIRST
            raise DataError(f"{source}: {name} is damaged at byte {pos} (a record's continuation without its start)")
        else:
            parts.append(body)
            if kind == _LAST:
                out.append(b"".join(parts))
                parts = None
    if cut is None and parts is not None:
        cut = "ends inside a record"
    if cut is not None:
        _note(notes, f"{source}: {name} {cut} (cut off, e.g. a run killed while writing it or a file copied "
                     f"while the run went on); kept the {len(out)} record(s) before it", warn=True)
    return out


def _value(text: str):
    """A history value from its JSON: a number (NaN and infinities as W&B writes them), else None."""
    try:
        v = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v


def _key(item) -> str:
    # W&B 0.12.10+ writes `nested_key` (a nested dict's path); older releases `key`
    return ".".join(item.nested_key) if len(item.nested_key) else item.key


def _config_value(text: str):
    try:
        v = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(v, dict) and "value" in v:  # {"desc": ..., "value": ...} as some releases write it
        v = v["value"]
    return v


def _wandb_rows(path: Path, source: str, notes: list[str], meta: dict, skipped: dict[str, int]) -> list[dict]:
    """The history rows of one ``.wandb`` file: ``{"_step": int, key: number}`` in file order."""
    Record = _library()
    data = path.read_bytes()
    rows: list[dict] = []
    config: dict = {}
    info: dict = {}
    for i, raw in enumerate(_frames(data, path.name, source, notes)):
        rec = Record()
        try:
            rec.ParseFromString(raw)
        except Exception:  # google.protobuf.message.DecodeError, whichever protobuf build
            raise DataError(f"{source}: {path.name}: record {i + 1} is not a W&B record") from None
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            row: dict = {}
            items = [(_key(item), item.value_json) for item in rec.history.item]
            # a table, histogram or image is a dict with `_type`, written key by key (`completions.nrows` ...)
            media = tuple(k[:-len("_type")] for k, _ in items if k.endswith("._type"))
            for key, text in items:
                if key in _W_AND_B_KEYS:
                    continue
                v = None if media and key.startswith(media) else _value(text)
                if v is None:
                    name = next((m[:-1] for m in media if key.startswith(m)), key)
                    skipped[name] = skipped.get(name, 0) + 1
                else:
                    row[key] = v
            if rec.history.HasField("step"):
                row["_step"] = int(rec.history.step.num)
            if any(k not in ("_step", _TRAINER_STEP) for k in row):
                rows.append(row)
        elif kind == "config":
            for item in rec.config.update:
                config[_key(item)] = _config_value(item.value_json)
        elif kind == "run":
            r = rec.run
            info.update({k: v for k, v in (("id", r.run_id), ("name", r.display_name), ("project", r.project))
                         if v})
            for item in r.config.update:
                config.setdefault(_key(item), _config_value(item.value_json))
    max_steps = config.get("max_steps")
    if isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps > 0:
        meta["max_steps"] = max_steps
    meta["wandb"] = {**info, "file": str(path)}
    return rows


def _old_history_rows(path: Path, source: str, notes: list[str], skipped: dict[str, int]) -> list[dict]:
    """The rows of an old release's ``wandb-history.jsonl`` (one JSON object a line)."""
    rows: list[dict] = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            if n == len(lines):
                _note(notes, f"{source}: the last line of {path.name} is incomplete (cut off); kept the "
                             f"{len(rows)} row(s) before it", warn=True)
                break
            raise DataError(f"{source}: {path.name} line {n} is not JSON") from None
        if not isinstance(obj, dict):
            raise DataError(f"{source}: {path.name} line {n} is a {type(obj).__name__}, not a row of metrics")
        row: dict = {}
        for key, v in obj.items():
            if key in _W_AND_B_KEYS:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                skipped[key] = skipped.get(key, 0) + 1
            else:
                row[key] = v
        if any(k not in ("_step", _TRAINER_STEP) for k in row):
            rows.append(row)
    return rows


def _steps(rows: list[dict], source: str, notes: list[str]) -> list[dict]:
    """Each row's ``step``: the trainer's ``train/global_step`` where the rows hold it, else W&B's ``_step``."""
    trainer = sum(_TRAINER_STEP in r for r in rows)
    out: list[dict] = []
    if trainer:
        last = None
        dropped = 0
        for r in rows:
            s = r.get(_TRAINER_STEP, last)
            if s is None or not (isinstance(s, int) or (isinstance(s, float) and math.isfinite(s) and s.is_integer())):
                dropped += 1  # logged before the trainer's first step, or not a whole number
                continue
            last = s
            out.append({"step": int(s), **{k: v for k, v in r.items() if k not in ("_step", _TRAINER_STEP)}})
        out = _merge_steps(out, source, notes)
        notes.append(f"step: the trainer's step `{_TRAINER_STEP}` (the step of TRL's trainer_state.json), not W&B's "
                     "`_step` (which counts the calls to wandb.log)"
                     + (f"; {len(rows) - trainer} row(s) without it took the trainer's step logged before them"
                        if len(rows) - trainer - dropped > 0 else "")
                     + (f"; left out {dropped} row(s) logged before the trainer's first step" if dropped else ""))
        return out
    if any("_step" not in r for r in rows):
        raise DataError(f"{source}: W&B history rows without a step (`_step`)")
    notes.append("step: W&B's `_step` (it counts the calls to wandb.log; the rows hold no trainer step "
                 f"`{_TRAINER_STEP}`)")
    return [{"step": r["_step"], **{k: v for k, v in r.items() if k != "_step"}} for r in rows]


def _merge_steps(rows: list[dict], source: str, notes: list[str]) -> list[dict]:
    """Rows one after the other at one trainer step merged into one (W&B keeps the trainer's step for every
    ``wandb.log`` call until the next step: TRL's metrics, its completions table and its timings each come
    in a row of their own). A value logged twice in one step keeps the later one; a note names the keys (a
    warning unless they are only TRL's ``profiling/`` timings, logged at each call)."""
    out: list[dict] = []
    twice: dict[str, int] = {}
    for r in rows:
        if out and out[-1]["step"] == r["step"]:
            prev = out[-1]
            for k, v in r.items():
                if k in prev and k != "step" and not (prev[k] == v or (prev[k] != prev[k] and v != v)):
                    twice[k] = twice.get(k, 0) + 1
                prev[k] = v
        else:
            out.append(dict(r))
    if len(out) < len(rows):
        message = f"merged the {len(rows)} W&B rows into {len(out)}, one per trainer step"
        if twice:
            keys = sorted(twice)
            message += (f"; {len(keys)} key(s) logged more than once in a step kept the last value: "
                        f"{', '.join(keys[:4])}{' ...' if len(keys) > 4 else ''}")
        _note(notes, (f"{source}: " if twice else "") + message,
              warn=any(not k.startswith("profiling/") for k in twice))
    return out


def read_wandb(path: Path, source: str, notes: list[str], meta: dict, run: str | None,
               max_bytes: int) -> tuple[list[dict], bool]:
    """The history rows of one W&B run: ``(records, run_used)``.

    Parameters
    ----------
    path : pathlib.Path
        A ``.wandb`` file, a run folder, or a ``wandb/`` folder (or a folder holding one) of run folders.
    source : str
        Name used in messages.
    notes, meta : list, dict
        Appended to / filled in (``meta["wandb"]``: the run's id, name, project and the file read;
        ``meta["max_steps"]`` where the run's config has a positive ``max_steps``; ``meta["trl_version"]`` where
        the run folder's ``files/requirements.txt`` lists TRL).
    run : str, optional
        Which run, where the folder holds several: a run id, a folder name, a number from 1, or ``"last"``.
    max_bytes : int
        The most bytes of a run file read.

    Returns
    -------
    (list of dict, bool)
        One record per history row with numbers (``{"step": int, key: number}``, keys as TRL logs them), in file
        order; whether ``run`` chose a run folder (else it is left to the reader).

    Raises
    ------
    DataError
        wandb is not installed (the message names the extra); the folder holds several runs and ``run`` names
        none of them (the message lists them); the file is not a W&B run file, is of an unknown format version,
        or is damaged before its last block; no history row holds a number; the file is larger than
        ``max_bytes``.

    Warns
    -----
    LogWarning
        The file is cut off at its end (the records before the cut are kept).
    """
    used = False
    if path.is_dir():
        folders = run_folders(path)
        names = list(folders)
        if len(names) > 1:
            shown = "; ".join(f"{i}: {n!r}" for i, n in enumerate(names, 1))
            if run is None:
                last_id = _run_id(names[-1]) or names[-1]
                raise SeveralRunsError(f"{source}: {len(names)} W&B runs ({shown}); choose one with run='{last_id}' "
                                       f"(its id), its folder, its number or run='last' (command line: --run "
                                       f"{last_id})", names)
            where = _choose(folders, run, source, shown)
            used = True
            _note(notes, f"read the W&B run in folder {where!r}; left out {len(names) - 1} other run folder(s)",
                  warn=False)
        elif not names:
            raise DataError(f"{source}: no W&B run folder (run-<date>-<id>/ holding run-<id>.wandb)")
        else:
            where = names[0]
        file = folders[where]
    else:
        file = path
    size = file.stat().st_size
    if size > max_bytes:
        raise DataError(f"{source}: {file.name} is {size / 2 ** 20:.0f} MiB, larger than the "
                        f"{max_bytes / 2 ** 20:.0f} MiB a log may be")
    skipped: dict[str, int] = {}
    if file.name == _OLD_HISTORY:
        rows = _old_history_rows(file, source, notes, skipped)
        meta["wandb"] = {"file": str(file)}
        what = f"{len(rows)} W&B history row(s) from {file.name} (a W&B release before 0.10)"
    else:
        rows = _wandb_rows(file, source, notes, meta, skipped)
        what = f"{len(rows)} W&B history row(s) with numbers from {file.name}"
    if not rows:
        raise DataError(f"{source}: no number in the W&B history of {file.name}"
                        + (f" (only keys that are not numbers: {', '.join(sorted(skipped)[:5])})" if skipped else ""))
    records = _steps(rows, source, notes)
    if any(_TRAINER_STEP in r for r in rows) and "trl_version" not in meta:
        _trl_version(file, notes, meta)  # a transformers Trainer's run: TRL's version says what reward_std is
    if not records:
        raise DataError(f"{source}: no W&B history row of {file.name} has a trainer step")
    notes.append("read " + what)
    if skipped:
        notes.append(f"left out {len(skipped)} key(s) that are not numbers (tables, histograms, media, text): "
                     f"{', '.join(sorted(skipped)[:5])}{' ...' if len(skipped) > 5 else ''}")
    return _trl_keys_noted(records, notes), used


def _trl_keys_noted(records: list[dict], notes: list[str]) -> list[dict]:
    """:func:`.tensorboard._trl_keys` (``train/<key>`` -> ``<key>``, ``eval/<key>`` -> ``eval_<key>``), its note
    in W&B's words."""
    before = {k for r in records for k in r}
    out = _trl_keys(records, [])
    renamed = len(before - {k for r in out for k in r})
    if renamed:
        notes.append(f"W&B keys train/<key> and eval/<key> (transformers' WandbCallback) read as TRL's <key> and "
                     f"eval_<key> ({renamed} key(s))")
    return out


def _trl_version(file: Path, notes: list[str], meta: dict) -> None:
    """``meta["trl_version"]`` from the run's ``files/requirements.txt`` (the packages W&B found installed when
    the run started), where it lists ``trl==X``."""
    req = file.parent / "files" / "requirements.txt"
    try:
        lines = req.read_text(encoding="utf-8", errors="replace").splitlines() if req.is_file() else []
    except OSError:
        return
    for line in lines:
        name, sep, version = line.strip().partition("==")
        if sep and name.strip().lower() == "trl" and version.strip():
            meta["trl_version"] = version.strip()
            notes.append(f"TRL {version.strip()}: the version in the run's files/requirements.txt (the packages "
                         "W&B found installed)")
            return


#: The reader :func:`grpo_core.runs.logs.read_log` calls (:data:`grpo_core.runs.logs.read.STORES`).
read_store = read_wandb
