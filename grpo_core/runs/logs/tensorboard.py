"""TensorBoard event files (``events.out.tfevents.*``): what TRL, verl, OpenRLHF and slime write when asked.

An event file is a sequence of TFRecord frames (a little-endian ``uint64`` length, its masked CRC-32C, the
bytes of one ``Event`` protocol buffer, their masked CRC-32C). :func:`read_events` reads the scalar values
of every ``Event.summary`` (``simple_value``, as ``torch.utils.tensorboard`` and tensorboardX write them, or a
one-element ``tensor``, as TensorFlow 2 writes them) as records ``{"step": Event.step, tag: value}``: the events
of one step that follow each other are one record (``torch.utils.tensorboard`` writes one event per scalar) until
a tag comes again (a second logging call at the same step); :func:`grpo_core.runs.logs.read_log` then
normalises the records like any other log.

Tags: TRL (``transformers``' ``TensorBoardCallback``) writes ``train/<key>`` and ``eval/<key>``; they are read as
the key TRL logs (``train/reward`` -> ``reward``, ``eval/loss`` -> ``eval_loss``). verl's tags are its metric
names (``critic/score/mean`` ...); where its ``training/global_step`` differs from the event step (fully-async
verl writes its events at the parameter version, one ahead) the step is ``training/global_step``. slime's
``rollout/raw_reward`` is the reward (an alias of :mod:`.aliases`); its ``rollout/rewards`` is the group-normalised
value and is not read as the reward; its ``train/*`` tags count optimizer steps, ``k`` per rollout, and are read
on the rollout axis of its ``rollout/*`` tags, each the mean of its rollout's ``k`` values.

Files and folders:

* a file: its events;
* a folder: every event file below it, grouped by the folder that holds them (one folder, one run); the
  event files of one run (a job restarted into the same folder) are read in the order of the time in
  their names and merged by step (a step logged twice keeps the later file's value, with a warning);
  several run folders are listed and one is chosen with ``run=`` (its folder, the folder's last part,
  its number from 1 in the list, or ``"last"``), except the sibling folders of one run's several writers
  (slime's rollout manager and trainer: no tag in common, steps shared), read as one run when ``run`` is not
  given.

The frames and protocol buffers are read with ``tensorboardX`` (a dependency of grpo-dynamics; the extra
``grpo-dynamics[tensorboard]`` is kept for old install lines) or, where it is missing, ``tensorboard``;
each frame's length is checked against its CRC (the data's CRC is not: in pure Python it costs 0.2 s per
megabyte), and a frame cut off at the end (a run killed while writing) is dropped with a warning.

References
----------
TensorFlow ``tensorflow/core/lib/io/record_writer.cc`` (the TFRecord frame);
``tensorboard/compat/proto/event.proto``, ``summary.proto``; ``transformers.integrations.TensorBoardCallback``
(``rewrite_logs``: ``train/`` and ``eval/`` prefixes).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from ...errors import DataError, SeveralRunsError
from .aliases import choose_segment
from .schema import _note

__all__ = ["read_events", "event_files", "EXTRA", "CONTAINER", "matches", "run_names", "read_store",
           "writers_of_one_run"]

#: ``RunLog.container`` of a log read from event files.
CONTAINER = "tensorboard"

#: How to install what reading event files needs.
EXTRA = "pip install 'grpo-dynamics[tensorboard]' (tensorboardX)"

# TensorFlow's DataType numbers of the scalar types a summary tensor may hold.
_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64, 19: np.float16, 4: np.uint8, 6: np.int8,
           5: np.int16}


def _library():
    """``(Event, masked_crc32c)`` from tensorboardX, else tensorboard; a DataError naming the extra when
    neither is installed."""
    try:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.record_writer import masked_crc32c
        return Event, masked_crc32c
    except ImportError:
        pass
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
        return Event, masked_crc32c
    except ImportError:
        raise DataError(f"reading TensorBoard event files needs tensorboardX or tensorboard: {EXTRA}") from None


def is_event_file(path: Path) -> bool:
    """Whether ``path`` is named as TensorBoard names its event files (``events.out.tfevents.*``)."""
    return "tfevents" in path.name


def event_files(folder: Path) -> dict[str, list[Path]]:
    """The event files below ``folder``, grouped by the folder holding them (relative to ``folder``, ``"."``
    for itself), each group in the order of the time in the file names."""
    groups: dict[str, list[Path]] = {}
    for f in folder.rglob("*tfevents*"):
        if f.is_file():
            rel = f.parent.relative_to(folder).as_posix()
            groups.setdefault(rel, []).append(f)
    return {k: sorted(v, key=_file_order) for k, v in sorted(groups.items())}


def matches(path: Path) -> bool:
    """Whether ``path`` is an event file (by its name) or a folder with one below it."""
    if path.is_dir():
        return bool(event_files(path))
    return is_event_file(path) and path.is_file()


def run_names(path: Path) -> list[str]:
    """The runs ``path`` holds, each a value of ``run``: the folders holding event files (``["."]`` for an
    event file, a folder of one run's files, or the folders of one run's several writers,
    :func:`writers_of_one_run`)."""
    if not path.is_dir():
        return ["."]
    names = list(event_files(path))
    return names if len(names) > 1 and not writers_of_one_run(path) else ["."]


def writers_of_one_run(folder: Path) -> bool:
    """Whether the several folders of event files below ``folder`` are one run written by several processes
    (slime's rollout manager and trainer each write ``tensorboard_log/<project>/<time>/``): sibling folders
    that log no tag in common and share steps. :func:`read_events` reads them as one run.

    Raises
    ------
    DataError
        Neither tensorboardX nor tensorboard is installed.
    """
    groups = event_files(Path(folder))
    return _one_run_written_by_several(groups, list(groups), None, _library()[0])


def _file_order(f: Path) -> tuple:
    # events.out.tfevents.<seconds>.<host>.<pid>.<n>
    part = f.name.split("tfevents.", 1)[-1].split(".", 1)[0]
    return (int(part) if part.isdigit() else 0, f.name)


def _scalar(value) -> float | None:
    """The number one ``Summary.Value`` holds, or ``None`` (a histogram, an image, a text, a tensor of more
    than one element)."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor":
        return None
    t = value.tensor
    if any(d.size != 1 for d in t.tensor_shape.dim):
        return None
    for field in ("float_val", "double_val", "int_val", "int64_val", "half_val"):
        vals = getattr(t, field)
        if len(vals) == 1:
            return float(np.frombuffer(np.uint16(vals[0]).tobytes(), np.float16)[0]) if field == "half_val" \
                else float(vals[0])
    dtype = _DTYPES.get(t.dtype)
    if dtype is not None and len(t.tensor_content) == np.dtype(dtype).itemsize:
        return float(np.frombuffer(t.tensor_content, dtype)[0])
    return None


def _file_records(path: Path, source: str, notes: list[str], Event, crc, skipped: dict[str, int]) -> list[dict]:
    data = path.read_bytes()
    out: list[dict] = []
    pos, n = 0, len(data)
    while pos < n:
        if pos + 12 > n:
            _note(notes, f"{source}: {path.name} ends inside a record's header (cut off, e.g. a run killed "
                         f"while writing it); kept the {len(out)} record(s) before it", warn=True)
            break
        length, length_crc = struct.unpack_from("<QI", data, pos)
        if crc(data[pos:pos + 8]) != length_crc:
            raise DataError(f"{source}: {path.name} is not a TensorBoard event file or is damaged at byte {pos} "
                            "(a record's length fails its checksum)")
        end = pos + 12 + length + 4
        if end > n:
            _note(notes, f"{source}: {path.name}: the last record is cut off (a run killed while writing it); "
                         f"kept the {len(out)} record(s) before it", warn=True)
            break
        event = Event()
        try:
            event.ParseFromString(data[pos + 12:pos + 12 + length])
        except Exception:  # google.protobuf.message.DecodeError, whichever protobuf build
            raise DataError(f"{source}: {path.name}: the record at byte {pos} is not a TensorBoard event") from None
        pos = end
        if not event.HasField("summary"):
            continue
        record: dict = {}
        for v in event.summary.value:
            x = _scalar(v)
            if x is None:
                skipped[v.tag] = skipped.get(v.tag, 0) + 1
            else:
                record[v.tag] = x
        if not record:
            continue
        # torch's SummaryWriter writes one event per scalar: the events of one step that follow each other are
        # one logging call's record, until a tag comes again (a second call at the same step: fully-async verl)
        last = out[-1] if out else None
        if last is not None and last["step"] == int(event.step) and not (record.keys() & last.keys()):
            last.update(record)
        else:
            record["step"] = int(event.step)
            out.append(record)
    return out


#: verl's own step counter, logged with every training step's metrics.
VERL_STEP = "training/global_step"


def _verl_steps(records: list[dict], notes: list[str]) -> list[dict]:
    """The step of each record that holds verl's ``training/global_step`` is that counter, where it differs from
    the event's step: fully-async verl (``verl.experimental.fully_async_policy``) writes its events at the
    parameter version, one ahead of the training step, and writes two steps' metrics at the last version. A record
    without the counter (a validation, the rollouter's timings) moves by the usual offset (event step minus
    training step); those that land before the first training step (the rollouter's timings of the versions
    before any training) are left out, with a note."""
    train = [r for r in records if VERL_STEP in r and float(r[VERL_STEP]).is_integer()]
    offsets = [r["step"] - int(r[VERL_STEP]) for r in train]
    if not any(offsets):
        return records
    offset = max(set(offsets), key=offsets.count)
    first = min(int(r[VERL_STEP]) for r in train)
    out, left = [], []
    for r in records:
        if VERL_STEP in r and float(r[VERL_STEP]).is_integer():
            out.append(dict(r, step=int(r[VERL_STEP])))
        elif r["step"] - offset >= first:
            out.append(dict(r, step=r["step"] - offset))
        else:
            left.append(r["step"])
    _note(notes, f"step read from verl's {VERL_STEP!r}, not the event step, in {sum(map(bool, offsets))} of "
                 f"{len(train)} training record(s) (fully-async verl writes its events at the parameter version); "
                 f"other records moved by {-offset:+d}"
                 + (f"; left out {len(left)} record(s) that would come before the first training step (event "
                    f"step(s) {', '.join(map(str, sorted(set(left))[:5]))}: the rollouter's timings before any "
                    "training)" if left else ""), warn=False)
    return out


def _slime_steps(records: list[dict], notes: list[str]) -> tuple[list[dict], bool]:
    """slime's ``train/*`` tags on the rollout axis of its ``rollout/*`` tags: slime writes ``train/*`` at each
    optimizer step (``k`` per rollout) and ``rollout/*`` at each rollout; read as they are, the two axes would
    be mixed. Where the optimizer steps are a whole multiple ``k >= 2`` of the rollouts that logged
    ``rollout/raw_reward``, optimizer step ``s`` belongs to rollout ``s // k`` and each ``train/*`` tag is the
    mean of its rollout's ``k`` values (as verl averages its updates of one step). Returns the records and
    whether they changed."""
    train = [r for r in records if any(t.startswith("train/") for t in r if t != "step")]
    rollouts = {r["step"] for r in records if "rollout/raw_reward" in r}
    if not train or not rollouts:
        return records, False
    n_train = len({r["step"] for r in train})
    k = n_train // len(rollouts)
    if k < 2 or n_train != k * len(rollouts) or min(r["step"] for r in train) != 0:
        return records, False
    sums: dict[int, dict[str, list[float]]] = {}
    out = []
    for r in records:
        keys = [t for t in r if t.startswith("train/")]
        if not keys:
            out.append(r)
            continue
        acc = sums.setdefault(r["step"] // k, {})
        for t in keys:
            acc.setdefault(t, []).append(r[t])
        rest = {t: v for t, v in r.items() if t != "step" and not t.startswith("train/")}
        if rest:
            out.append(dict(rest, step=r["step"]))
    out.extend(dict({t: float(np.mean(v)) for t, v in acc.items()}, step=s) for s, acc in sorted(sums.items()))
    _note(notes, f"slime: train/* tags logged at {n_train} optimizer steps, {k} per rollout of the "
                 f"{len(rollouts)} with rollout/raw_reward; read on the rollout axis, each the mean of its "
                 f"rollout's {k} optimizer steps", warn=False)
    return out, True


def _trl_keys(records: list[dict], notes: list[str]) -> list[dict]:
    """``train/<key>`` -> ``<key>`` and ``eval/<key>`` -> ``eval_<key>`` (``TensorBoardCallback``'s prefixes),
    unless the new name is a tag of its own."""
    tags = {t for r in records for t in r}
    rename = {}
    for t in tags:
        new = t[len("train/"):] if t.startswith("train/") else "eval_" + t[len("eval/"):] if t.startswith("eval/") \
            else None
        if new and new not in tags and new != "step":
            rename[t] = new
    if not rename:
        return records
    _note(notes, f"TensorBoard tags train/<key> and eval/<key> read as TRL's <key> and eval_<key> "
                 f"({len(rename)} tag(s))", warn=False)
    return [{rename.get(k, k): v for k, v in r.items()} for r in records]


def read_events(path: Path, source: str, notes: list[str], meta: dict, run: str | None,
                max_bytes: int) -> tuple[list[dict], bool]:
    """The records of the event files of one run: ``(records, run_used)``.

    Parameters
    ----------
    path : pathlib.Path
        An event file, or a folder with event files below it.
    source : str
        Name used in messages.
    notes, meta : list, dict
        Appended to / filled in (``meta["tensorboard_files"]``: the files read).
    run : str, optional
        Which run folder, where the folder holds several.
    max_bytes : int
        The most bytes of event files read.

    Returns
    -------
    (list of dict, bool)
        One record per event with scalar values (``{"step": int, tag: float}``), in file order; whether
        ``run`` chose a run folder (else it is left to the reader).

    Raises
    ------
    DataError
        Neither tensorboardX nor tensorboard is installed (the message names the extra); the folder holds
        several runs and ``run`` names none of them (the message lists them); a file is not an event file or
        is damaged mid-file; no scalar was logged; the files are larger than ``max_bytes``.
    """
    Event, crc = _library()
    used = writers = False
    if path.is_dir():
        groups = event_files(path)
        names = list(groups)
        writers = _one_run_written_by_several(groups, names, run, Event)
        if writers:
            files = [f for n in names for f in groups[n]]
            _note(notes, f"{source}: the {len(names)} folders {', '.join(map(repr, names))} log no tag in common "
                         "and count the same steps: one run written by several processes (slime's rollout "
                         "manager and trainer each open a folder), read as one", warn=False)
        elif len(names) > 1:
            shown = "; ".join(f"{i}: {n!r} ({len(groups[n])} file(s))" for i, n in enumerate(names, 1))
            if run is None:
                raise SeveralRunsError(f"{source}: event files of {len(names)} runs, one per folder ({shown}); "
                                       f"choose one with run='{names[-1]}' or run='last' (command line: --run "
                                       f"'{names[-1]}')", names)
            last_parts = [n.rsplit("/", 1)[-1] for n in names]
            k = choose_segment(names, run)
            if k is None and last_parts.count(run) == 1:
                k = last_parts.index(run)
            if k is None:
                raise DataError(f"{source}: `run` {run!r} is not one of the run folders ({shown})")
            used = True
            files, where = groups[names[k]], names[k]
            _note(notes, f"read the run in folder {where!r} ({len(files)} event file(s)); left out "
                         f"{len(names) - 1} other run folder(s)", warn=False)
        else:
            files, where = groups[names[0]], names[0]
    else:
        files, where = [path], None
        others = [f for f in path.parent.glob("*tfevents*") if f.is_file() and f != path]
        if others:
            _note(notes, f"{source}: {len(others)} other event file(s) in the same folder not read (pass the "
                         "folder to merge the files of one run)", warn=True)
    total = sum(f.stat().st_size for f in files)
    if total > max_bytes:
        raise DataError(f"{source}: {total / 2 ** 20:.0f} MiB of event files, larger than the "
                        f"{max_bytes / 2 ** 20:.0f} MiB a log may be")
    skipped: dict[str, int] = {}
    records: list[dict] = []
    for f in files:
        records.extend(_file_records(f, source, notes, Event, crc, skipped))
    if not records:
        raise DataError(f"{source}: no scalar value in {len(files)} TensorBoard event file(s)"
                        + (f" (only non-scalar tags: {', '.join(sorted(skipped)[:5])})" if skipped else ""))
    meta["tensorboard_files"] = [str(f) for f in files]
    notes.append(f"read {len(records)} record(s) of scalars (the events of one step and logging call) from "
                 f"{len(files)} TensorBoard event file(s)"
                 + (" (merged by step, in the order of the times in their names)" if len(files) > 1 else "")
                 + "; values as the files hold them (simple_value: 32-bit floats, about 7 significant digits)")
    if skipped:
        notes.append(f"left out {len(skipped)} tag(s) that are not scalars (histograms, images, text): "
                     f"{', '.join(sorted(skipped)[:5])}{' ...' if len(skipped) > 5 else ''}")
    records, slime = _slime_steps(_verl_steps(records, notes), notes)
    if writers or slime:
        records.sort(key=lambda r: r["step"])  # stable: several writers' records, one step after the other
    return _trl_keys(records, notes), used


def _tags(files: list[Path], Event) -> tuple[set[str], set[int]]:
    """The tags and the steps of some event files' summaries (frames unchecked: the full read checks them)."""
    tags: set[str] = set()
    steps: set[int] = set()
    for f in files:
        data, pos = f.read_bytes(), 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack_from("<Q", data, pos)
            if pos + 12 + length > len(data):
                break
            event = Event()
            try:
                event.ParseFromString(data[pos + 12:pos + 12 + length])
            except Exception:  # damaged: left to the full read, which names the byte
                break
            if event.summary.value:
                tags.update(v.tag for v in event.summary.value)
                steps.add(int(event.step))
            pos += 12 + length + 4
    return tags, steps


def _one_run_written_by_several(groups: dict[str, list[Path]], names: list[str], run: str | None, Event) -> bool:
    """Whether the several run folders of ``groups`` are one run's writers: no ``run`` given, sibling folders
    (slime's ``tensorboard_log/<project>/<time>``, one per process), no tag logged in two of them (two runs
    log the same tags; two writers of one run do not), and each sharing steps with the others."""
    if run is not None or len(names) < 2 or len({n.rsplit("/", 1)[0] if "/" in n else "" for n in names}) != 1:
        return False
    seen: set[str] = set()
    found = [_tags(groups[n], Event) for n in names]
    for i, (tags, steps) in enumerate(found):
        if not tags or tags & seen or not steps & set().union(*(s for j, (_, s) in enumerate(found) if j != i)):
            return False
        seen |= tags
    return True


#: The reader :func:`grpo_core.runs.logs.read_log` calls (:data:`grpo_core.runs.logs.read.STORES`).
read_store = read_events
