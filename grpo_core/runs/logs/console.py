"""Read the metrics out of text logs: what a training run printed, not a metrics file.

People often have only the console output of a run (``nohup python train.py > run.log 2>&1``, a
Kaggle notebook's log, a pasted terminal). The metrics are in it, mixed with progress bars,
warnings and other output. :func:`parse_text` finds them and returns one record per logged dict,
with the optimizer step it belongs to; :func:`grpo_core.runs.logs.read_log` then normalises the
records like any other log.

Formats
-------
TRL / ``transformers`` console log
    Every line (or ``\\r``-separated segment) holding a printed metrics dict
    ``{'loss': 0.01, 'grad_norm': 0.3, 'reward': 0.75, ...}`` wherever it sits. Values may be
    numbers or numbers in quotes (Unsloth prints ``'0.005131'``). Dicts without a known metric key
    (``{'bos_token_id': None, ...}``) are not metrics and are skipped. The dicts carry no step:
    it is taken from ``global_step/max_steps`` (ms-swift, ``"9/547"``) or ``step`` when the dict
    has one; else from the progress bar, where ``ProgressCallback.on_log`` clears and redraws the
    bar at the step of each log (``5/200`` printed twice around a blank clear); else from the
    bar just before each dict; else the dicts are numbered 1, 2, ... with a warning.
    Dicts with ``eval_`` keys are evaluation rows; dicts of evaluation metrics printed without the
    prefix (Unsloth: ``runtime``, ``samples_per_second`` ...) get it, so they never overwrite the
    training values of the same step. The final ``train_runtime`` dict is the summary row.
Hard-wrapped console log
    A terminal that broke every line at a fixed width splits the printed dicts mid-key or mid-number; a
    dict that opens on one line and closes on a later one, every line but the last of one width, is
    joined back (:func:`unwrap_dicts`), with a note.
ms-swift console log
    The same dict lines with ``global_step/max_steps``, ``percentage``, ``elapsed_time`` ...
verl console
    Lines ``step:12 - actor/entropy:0.51 - critic/score/mean:0.25 - ...`` (values may be
    printed as ``np.float64(0.25)``).
MiniMind console
    Lines ``Epoch:[1/1](12/9751), Reward: -1.83, KL_ref: 0.01, ..., Learning Rate: 0.0000003`` (and the
    ``loss:2.3 lr:0.0001`` style of its other trainers): the step is ``(epoch - 1) * iters + step``; the
    keys become TRL's where they mean the same (``Reward`` -> ``reward``, ``KL_ref`` -> ``kl``, ``Actor
    Loss`` -> ``loss``, ``Avg Response Len`` -> ``completion_length``, ``Learning Rate``/``lr`` ->
    ``learning_rate``), the others are lower-cased with ``_`` for blanks.
Step lines of custom loops
    Lines ``GRPO step 40/500 | loss: -0.0000 | mean_reward: 0.6327 | KL: 0.0001 | lr: 0.000004`` (a
    ``step N`` or ``step N/M``, then ``key: value`` fields separated by ``|``): the keys are lower-cased
    (``mean_reward`` is then read as the reward by the aliases of :mod:`.aliases`). Lines whose fields hold no
    known metric are not read.
Stream log (Kaggle, Jupyter)
    A JSON list (or JSON lines) of ``{"stream_name": "stdout", "time": ..., "data": "..."}``
    records: the ``data`` fields are joined in order and read as a console log.

References
----------
``transformers`` ``ProgressCallback.on_log`` (``self.training_bar.write(str(logs))``); ms-swift
``swift/trainers/mixin.py`` (``global_step/max_steps``); verl ``verl/utils/tracking.py``
(console logger, ``step:{step} - key:value``); jingyaogong/minimind ``trainer/train_grpo.py``
(``Logger(f'Epoch:[{epoch + 1}/{args.epochs}]({step}/{iters}), Reward: ...')``).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import json
import operator
import re
import warnings
from typing import Any

from ...errors import DataError
from .schema import load_json

__all__ = ["parse_text", "looks_like_console", "stream_text", "describe_text", "unwrap_dicts", "ACCEPTED"]

#: One line saying what a text log may hold (used in the error for an unknown format).
ACCEPTED = ("accepted: TRL trainer_state.json or log_history (JSON/JSONL), CSV tables (TRL keys, notebook "
            "progress tables, W&B exports, verl metrics), metrics JSONL (TRL, verl, ms-swift logging.jsonl, "
            "custom loops with a step key), console logs with printed metric dicts {'loss': ...} (TRL, "
            "Unsloth, ms-swift), verl console lines 'step:N - key:value', "
            "MiniMind lines 'Epoch:[1/1](N/M), Reward: ...', "
            "custom-loop lines 'step N/M | key: value | ...', Kaggle/Jupyter stream logs, TensorBoard event "
            "files (events.out.tfevents.*, or their folder)")

# A printed Python dict on one line, without nested braces.
_DICT = re.compile(r"\{'[^{}\n\r]*\}")
# A bare nan/inf value of a printed dict.
_BARE_NONFINITE = re.compile(r"(:\s*)(-?(?:nan|inf))(?=\s*[,}])")
# One 'key': value pair of a printed dict: a number, a string, or a bare nan/inf (groups: key, number,
# string, nan/inf); a whole dict of such pairs, as Python prints it.
_NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_NONFINITE = r"-?(?:nan|inf)"
_PAIR = re.compile(rf"'([^'\\\n]*)': (?:({_NUM})|'([^'\\\n]*)'|({_NONFINITE}))")
_ONE_PAIR = rf"'[^'\\\n]*': (?:{_NUM}|'[^'\\\n]*'|{_NONFINITE})"
_FLAT_DICT = re.compile(rf"\{{{_ONE_PAIR}(?:, {_ONE_PAIR})*\}}")
_FLOATISH = re.compile(r"[.eE]")
# A tqdm bar: "| 5/200 [".
_BAR = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")
# A bar, a clear (>= 20 blanks) and the same bar again: ProgressCallback.on_log wrote a log there.
# A bar, a clear (>= 20 blanks) and the same bar again: ProgressCallback.on_log wrote a log there. Found
# in two parts (_REDRAW_HEAD, then the two '|' of the redrawn bar by position, _REDRAW_TAIL) so that a long
# text costs linear time: one pattern with `[^|]*` backtracked over the rest of the text at every bar.
_REDRAW_HEAD = re.compile(r"(?<!\d)(\d{1,15})/(\d{1,15}) \[[^\]\n]{0,200}\]\s{20,}")
_REDRAW_TAIL = re.compile(r"\s*(\d{1,15})/(\d{1,15}) \[")
_VERL_LINE = re.compile(r"(?:^|[\s\]>])step:(\d+) - (.+)$", re.M)
# MiniMind: "Epoch:[e/E](step/iters), key: value, ..." (groups: epoch, step, iters, the rest).
_EPOCH_LINE = re.compile(r"^Epoch:\[(\d+)/\d+\]\((\d+)/(\d+)\),?\s*(.+)$", re.M)
# A key starts a word and is at most 64 characters (an unbounded key made a long line cost cubic time).
_EPOCH_PAIR = re.compile(rf"(?<!\w)([A-Za-z_][\w ]{{0,63}}?)\s{{0,20}}:\s{{0,20}}({_NUM}|{_NONFINITE})(?![\w.])")
#: MiniMind's names for what TRL logs (other keys are lower-cased, blanks as ``_``).
_EPOCH_KEYS = {"reward": "reward", "kl_ref": "kl", "actor_loss": "loss", "avg_response_len": "completion_length",
               "learning_rate": "learning_rate", "lr": "learning_rate", "loss": "loss"}
# A custom loop's "... step 40/500 | loss: 0.1 | mean_reward: 0.6 | ..." line (groups: step, the fields).
_PIPE_LINE = re.compile(r"^[^\n|]*?\bstep[\s:=]+(\d+)(?:\s*/\s*\d+)?\s*\|(.+)$", re.M | re.I)
_PIPE_FIELD = re.compile(rf"^\s*([A-Za-z_][\w/ .-]*?)\s*[:=]\s*({_NUM}|{_NONFINITE})\s*$")
_PIPE_METRICS = frozenset({"loss", "reward", "mean_reward", "avg_reward", "reward_mean", "kl", "lr", "learning_rate"})
_VERL_NUMBER = re.compile(
    r"^(?:np\.float\d+\(|np\.int\d+\(|tensor\()?\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)"
)

#: Keys that make a printed dict a metrics dict.
_METRIC_KEYS = frozenset(
    {
        "loss",
        "grad_norm",
        "learning_rate",
        "reward",
        "kl",
        "train_runtime",
        "global_step/max_steps",
        "eval_loss",
        "eval_reward",
        "completion_length",
    }
)
#: Evaluation metrics ``Trainer.evaluate`` reports; printed without ``eval_`` they mark an eval dict.
_EVAL_ONLY = frozenset({"runtime", "samples_per_second", "steps_per_second"})
_SUMMARY_KEYS = frozenset(
    {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss", "total_flos", "epoch"}
)
_TRAIN_ONLY = frozenset({"grad_norm", "learning_rate"})


def looks_like_console(text: str) -> bool:
    """Whether ``text`` is a console or stream log (not a JSON document or a CSV table).

    Cheap: looks at the start of the text for a stream record, and for a printed metrics dict or a
    verl ``step:N -`` line anywhere.
    """
    head = text.lstrip()[:4000]
    if head[:1] in "[{" and '"stream_name"' in head and '"data"' in head:
        return True
    if head[:1] in "[{" and not head.startswith("{'"):
        return False
    # each pattern's fixed text first: a plain substring search is ~10x faster than the pattern's (which has
    # no literal prefix to skip ahead with), seconds on a 2-million-row CSV
    return (bool(_find_dicts(text, limit=1)) or ("step:" in text and bool(_VERL_LINE.search(text)))
            or ("Epoch:[" in text and bool(_EPOCH_LINE.search(text))) or bool(_pipe_records(text[:200_000])))


def stream_text(text: str, source: str) -> str:
    """The ``data`` fields of a stream log (JSON list or JSON lines of records), joined in order.

    Raises
    ------
    DataError
        The stream log is not valid JSON (the message names the line).
    """
    body = text.strip()
    try:
        records = load_json(body, source)
    except json.JSONDecodeError:
        records = []
        for lineno, line in enumerate(body.splitlines(), 1):
            line = line.strip().lstrip(",").rstrip(",").strip()
            if line in ("", "[", "]"):
                continue
            try:
                records.append(load_json(line, source))
            except json.JSONDecodeError as exc:
                raise DataError(f"{source}: stream log line {lineno} is not valid JSON ({exc.msg})") from None
    if isinstance(records, dict):
        records = [records]
    return "".join(str(r.get("data", "")) for r in records if isinstance(r, dict))


def _find_dicts(text: str, limit: int | None = None) -> list[tuple[int, dict]]:
    """(position, dict) of every printed metrics dict in ``text``."""
    found: list[tuple[int, dict]] = []
    metric_keys = _METRIC_KEYS
    if limit is None:
        chunks = [(m.start(), m.group()) for m in _DICT.finditer(text)]
        read = _json_blocks([c for _, c in chunks])
    else:
        chunks = ((m.start(), m.group()) for m in _DICT.finditer(text))
        read = itertools.repeat(None)
    for (start, chunk), value in zip(chunks, read):
        if "'" not in chunk[:2]:
            continue
        if value is None:
            value = _json_dict(chunk)
        if value is None:
            value = _flat_dict(chunk)
        if value is None:
            value = _literal_dict(chunk)
            if value is None:
                continue
        # a known metric key (a set operation, then the prefixes only where none is found)
        if not isinstance(value, dict) or (metric_keys.isdisjoint(value) and not any(
            isinstance(k, str) and k.startswith(("eval_", "rewards/")) for k in value
        )):
            continue
        found.append((start, value))
        if limit is not None and len(found) >= limit:
            break
    return found


class _NotJson(ValueError):
    """A JSON constant (``NaN``, ``Infinity``) that a printed Python dict does not hold."""


def _no_constant(name: str):
    raise _NotJson(name)


_JSON = json.JSONDecoder(parse_constant=_no_constant)
_PLAIN_TYPES = frozenset({str, int, float})


def _json_dict(chunk: str) -> dict | None:
    """A printed dict of plain text and numbers, read as JSON (its quotes made double): the common TRL line,
    ~3 times faster than :func:`_flat_dict`; ``None`` for anything else, left to :func:`_flat_dict` and
    :func:`_literal_dict`.

    The same dict as theirs. Only an ASCII chunk without a double quote, a backslash, a ``[`` or the words
    ``true``, ``false`` and ``null`` is tried: a quoted text then means the same in both languages, and
    the values are texts and numbers, a JSON number being a Python literal of the same value and type
    (``int`` without a fraction or exponent, else ``float``); JSON refuses what Python reads otherwise
    (``1.``, ``.5``, ``01``, a bare ``nan``, a tab in a text), and its constants ``NaN`` and ``Infinity``
    are refused here.
    """
    if not _json_candidate(chunk):
        return None
    try:
        value = _JSON.decode(chunk.replace("'", '"'))
    except (ValueError, RecursionError):
        return None
    return value if _PLAIN_TYPES.issuperset(map(type, value.values())) else None


#: Printed dicts read as one JSON text (:func:`_json_blocks`).
_BLOCK = 512


def _json_blocks(chunks: list[str]) -> list[dict | None]:
    """:func:`_json_dict` of each chunk, ``_BLOCK`` chunks read as one JSON list at a time; ``None`` for each
    chunk of a block that does not read so (each is then read alone).

    A block is read when its text passes :func:`_json_dict`'s test (then every chunk of it does: the
    chunks are joined by ``","``, so no word is made across two), holds one ``{`` a chunk and reads as a
    list of as many objects of text and numbers as it has chunks: every ``{`` then opens an object, so no
    quoted text runs from one chunk into the next, and each object is one chunk's, as that chunk alone
    reads.
    """
    out: list[dict | None] = []
    for i in range(0, len(chunks), _BLOCK):
        block = chunks[i:i + _BLOCK]
        text = ",".join(block)
        # one "{" a chunk (as _DICT finds them: no brace inside)
        values = _json_block(text) if text.count("{") == len(block) else None
        # each "{" follows "[" or ",": it opens an item of the list, never a value inside an object, so the
        # values of these objects are texts and numbers
        if values is None or len(values) != len(block) or not all(type(v) is dict for v in values):
            values = [None] * len(block)
        out.extend(values)
    return out


def _json_block(text: str) -> list | None:
    if not _json_candidate(text):
        return None
    try:
        return _JSON.decode("[" + text.replace("'", '"') + "]")
    except (ValueError, RecursionError):
        return None


def _json_candidate(text: str) -> bool:
    """Whether a printed dict (or several, joined by ``","``) may be read as JSON (:func:`_json_dict`)."""
    return text.isascii() and not ('"' in text or "\\" in text or "[" in text or "true" in text
                                   or "false" in text or "null" in text)


def _flat_dict(chunk: str) -> dict | None:
    """A printed dict of ``'key': value`` pairs (numbers, strings, bare ``nan``/``inf``) read with one
    regular expression, as :func:`ast.literal_eval` reads it but ~10 times faster (the common TRL line);
    ``None`` for anything else (nested values, other literals), left to :func:`_literal_dict`."""
    if not _FLAT_DICT.fullmatch(chunk):
        return None
    out: dict = {}
    for key, number, text, nonfinite in _PAIR.findall(chunk):
        if number:
            out[key] = float(number) if _FLOATISH.search(number) else int(number)
        else:
            out[key] = text if not nonfinite else nonfinite  # a bare nan/inf as text, as _literal_dict
    return out


def _literal_dict(chunk: str):
    """:func:`ast.literal_eval` of a printed dict, or ``None``; a bare ``nan``/``inf`` (how Python prints a
    non-finite float) is read as text (the builder reads ``nan`` as a logged NaN, ``inf`` as infinity)."""
    try:
        return ast.literal_eval(chunk)
    except ValueError:
        try:
            return ast.literal_eval(_BARE_NONFINITE.sub(r"\1'\2'", chunk))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    except (SyntaxError, MemoryError, RecursionError):
        return None


_STARTS_EVAL = operator.methodcaller("startswith", "eval_")


def _kind(record: dict) -> str:
    keys = set(record)
    if "train_runtime" in keys:
        return "summary"
    if any(map(_STARTS_EVAL, keys)):
        return "eval"
    if keys & _EVAL_ONLY and not keys & _TRAIN_ONLY:
        return "eval_unprefixed"
    return "train"


def _kinds(records: list[dict]) -> list[str]:
    """:func:`_kind` of each record, once per sequence of keys (a log prints a few kinds of dict, each many
    times; the kind depends on the keys alone)."""
    seen: dict[tuple, str] = {}
    out = []
    for record in records:
        keys = tuple(record)
        kind = seen.get(keys)
        if kind is None:
            kind = seen[keys] = _kind(record)
        out.append(kind)
    return out


def _given_step(record: dict) -> int | None:
    value = record.get("global_step/max_steps", record.get("step", record.get("global_step")))
    if value is None:
        return None
    text = str(value).split("/")[0].strip()
    try:
        step = float(text)
    except ValueError:
        return None
    return int(step) if step == int(step) else None


# Where a head (_REDRAW_HEAD) can start: at most 233 characters before its "]" (two 15-digit numbers, "/",
# " [" and 200 characters).
_HEAD_SPAN = 240
# A "]" followed by a clear (>= 20 blanks): found by its fixed "]" first, fast, where the head has no such text
_CLEAR = re.compile(r"\]\s{20}")
_BLANKS = re.compile(r"\s*")


def _redraws(text: str) -> list[tuple[str, str]]:
    """Each bar cleared and drawn again, as (the step it showed, the step redrawn): a bar
    ``5/200 [...]``, >= 20 blanks, then ``|...|`` and the same total (``5/200 [``), left to right,
    non-overlapping.

    Each head ends at a ``]`` followed by a clear, and the first head at or after a position ends at
    the first such ``]`` that has one: so the search for it is the head's pattern over the few hundred
    characters before each ``]`` and clear in turn (:data:`_CLEAR`), not over all the text.
    """
    pipes: list[int] | None = None
    out, pos = [], 0
    clear = _CLEAR.search(text, pos)
    while clear is not None:
        x = clear.start()
        head = _REDRAW_HEAD.search(text, max(pos, x - _HEAD_SPAN), _BLANKS.match(text, x + 1).end())
        if head is None:
            clear = _CLEAR.search(text, x + 1)
            continue
        if pipes is None:
            pipes = [m.start() for m in re.finditer(r"\|", text)]
        i = bisect.bisect_left(pipes, head.end())
        tail = _REDRAW_TAIL.match(text, pipes[i + 1] + 1) if i + 1 < len(pipes) else None
        if tail is not None and tail.group(2) == head.group(2):
            out.append((head.group(1), tail.group(1)))
            pos = tail.end()
        else:
            pos = head.start() + 1
        clear = _CLEAR.search(text, pos)
    return out


def _bar_steps(text: str, positions: list[int], n_train: int, kinds: list[str]) -> tuple[list[int] | None, str]:
    """Steps of the training dicts from the progress bar, and how they were found."""
    redraws = [int(shown) for shown, again in _redraws(text) if shown == again]
    if len(redraws) == n_train and all(b > a for a, b in zip(redraws, redraws[1:])):
        return redraws, "the progress bar's redraw at each log"
    if len(redraws) == len(kinds) and all(b >= a for a, b in zip(redraws, redraws[1:])):
        return [s for s, k in zip(redraws, kinds) if k == "train"], "the progress bar's redraw at each log"
    if len(redraws) > len(kinds) == n_train and all(b > a for a, b in zip(redraws, redraws[1:])):
        # a log cut while running: stdout (the dicts) is buffered behind stderr (the bar), so the
        # last redraws have no dict yet; the k-th dict is still the k-th log
        return redraws[:n_train], (
            f"the progress bar's redraw at each log ({len(redraws) - n_train} later "
            "redraw(s) have no dict yet: buffered output of a cut log)"
        )
    before = _bars_before(text, positions, kinds)
    if before and None not in before and all(b > a for a, b in zip(before, before[1:])):
        return before, "the progress bar just before each dict"
    return None, ""


def _bars_before(text: str, positions: list[int], kinds: list[str]) -> list[int | None]:
    """The step of the last progress bar (:data:`_BAR`) before each training dict (``None`` before the first
    bar); ``positions`` increase.

    A bar holds one ``|``, where it starts, so the bars are the ``|`` where the pattern matches: the last one
    before a dict is found searching back from it to the dict before, each stretch of text once.
    """
    before: list[int | None] = []
    last, prev = None, 0
    for pos, kind in zip(positions, kinds):
        if kind != "train":
            continue
        j = text.rfind("|", prev, pos)
        while j >= 0:
            m = _BAR.match(text, j)
            if m is not None:
                last = int(m.group(1))
                break
            j = text.rfind("|", prev, j)
        prev = pos
        before.append(last)
    return before


# The start of a printed metrics dict (counted, so a dict cut off or garbled is never lost unseen).
_DICT_START = re.compile(r"\{'(?:loss|reward|grad_norm|learning_rate|train_runtime|eval_[\w/]+)'\s*:")


def _dict_records(text: str, source: str, notes: list[str], meta: dict) -> list[dict]:
    found = _find_dicts(text)
    if not found:
        return []
    starts = [m.start() for m in _DICT_START.finditer(text)]
    read = {p for p, _ in found}
    lost = [p for p in starts if p not in read]
    if lost:
        _warn(
            notes,
            f"{source}: {len(lost)} printed metric dict(s) could not be read (cut off or not a Python "
            f"dict; first at line {text.count(chr(10), 0, lost[0]) + 1}); read the other {len(found)}",
        )
    positions = [p for p, _ in found]
    records = [d for _, d in found]  # each a dict of its own, changed below
    kinds = _kinds(records)
    n_train = kinds.count("train")
    given = [_given_step(r) for r in records]
    if all(g is not None for g, k in zip(given, kinds) if k == "train"):
        steps, how = [g for g, k in zip(given, kinds) if k == "train"], "the dicts' own step"
        for r in records:
            total = str(r.get("global_step/max_steps", ""))
            if "/" in total and total.split("/")[1].strip().isdigit():
                meta.setdefault("max_steps", int(total.split("/")[1]))
    else:
        steps, how = _bar_steps(text, positions, n_train, kinds)
        if steps is None:
            steps, how = list(range(1, n_train + 1)), ""
            _warn(
                notes,
                f"{source}: the {n_train} printed metric dicts carry no step and the progress bar does "
                "not say it; numbered them 1..{n_train} (pass a log with steps for true step numbers)".replace(
                    "{n_train}", str(n_train)
                ),
            )
    out: list[dict] = []
    last = 0
    it = iter(steps)
    n_eval_fixed = 0
    for record, kind in zip(records, kinds):
        record.pop("global_step/max_steps", None)
        if kind == "train":
            last = next(it)
        elif kind == "summary":
            # ms-swift adds its progress keys (memory, speed) to the summary: not training values
            record = {k: v for k, v in record.items() if k in _SUMMARY_KEYS}
        elif kind == "eval_unprefixed":
            n_eval_fixed += 1
            record = {
                k if k in ("epoch", "step") or k.startswith("eval_") else f"eval_{k}": v for k, v in record.items()
            }
        record["step"] = last
        out.append(record)
    if how:
        notes.append(f"read {len(out)} printed metric dict(s) ({n_train} training); steps from {how}")
    if n_eval_fixed:
        notes.append(
            f"{n_eval_fixed} dict(s) of evaluation metrics printed without the `eval_` prefix "
            "(Unsloth) kept as evaluation rows"
        )
    return out


def _verl_records(text: str) -> list[dict]:
    out = []
    for m in _VERL_LINE.finditer(text):
        record: dict[str, Any] = {"step": int(m.group(1))}
        for part in m.group(2).split(" - "):
            key, sep, value = part.partition(":")
            if not sep:
                continue
            number = _VERL_NUMBER.match(value.strip())
            if number:
                record[key.strip()] = float(number.group(1))
        if len(record) > 1:
            out.append(record)
    return out


def _epoch_records(text: str) -> list[dict]:
    """Records of MiniMind's ``Epoch:[e/E](step/iters), key: value, ...`` lines (global step
    ``(e - 1) * iters + step``)."""
    out = []
    for m in _EPOCH_LINE.finditer(text):
        epoch, step, iters = int(m.group(1)), int(m.group(2)), int(m.group(3))
        record: dict[str, Any] = {"step": (epoch - 1) * iters + step}
        for key, value in _EPOCH_PAIR.findall(m.group(4)):
            name = re.sub(r"\s+", "_", key.strip()).lower()
            record[_EPOCH_KEYS.get(name, name)] = float(value)
        if len(record) > 1:
            out.append(record)
    return out


def _pipe_records(text: str) -> list[dict]:
    """Records of ``step N[/M] | key: value | ...`` lines (keys lower-cased, blanks as ``_``, ``lr`` as
    ``learning_rate``); a line without a known metric among its fields is skipped."""
    out = []
    for m in _PIPE_LINE.finditer(text):
        record: dict[str, Any] = {"step": int(m.group(1))}
        for field_ in m.group(2).split("|"):
            pair = _PIPE_FIELD.match(field_)
            if pair:
                name = re.sub(r"\s+", "_", pair.group(1).strip()).lower()
                record["learning_rate" if name == "lr" else name] = float(pair.group(2))
        if set(record) & _PIPE_METRICS:
            out.append(record)
    return out


def _warn(notes: list[str], message: str) -> None:
    from .schema import LogWarning

    notes.append(message)
    warnings.warn(message, LogWarning, stacklevel=4)


# A dict opened at the end of a line, its first key on the next (a wrap between "{" and "'").
_OPEN_AT_END = re.compile(r"\{\r?\n'")


def _wrapped_opener(text: str) -> bool:
    """Whether some line opens a printed dict (``{'``, or ``{`` at its end) and does not close it: a
    terminal that hard-wrapped the line. One pass: each line is searched once from its first ``{'``."""
    pos = text.find("{'")
    while pos >= 0:
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        if text.find("}", pos, end) < 0 and end < len(text):
            return True
        pos = text.find("{'", end)
    return _OPEN_AT_END.search(text) is not None


def unwrap_dicts(text: str) -> tuple[str, int, list[int]]:
    """The text with each printed metrics dict that a terminal hard-wrapped at a fixed width joined back
    into one line: ``(text, n_joined, widths)``.

    A dict is taken as hard-wrapped when it opens on one line (``{'`` or ``{`` at the line's end) and
    closes on a later one, every line but the last has the same length (the terminal's width; line ends
    not counted) and the last is no longer, and the joined text reads as a metrics dict. Anything else is
    left as it is. Linear time: each line is looked at a bounded number of times.
    """
    if "{" not in text or not _wrapped_opener(text):
        return text, 0, []
    lines = text.split("\n")
    out: list[str] = []
    widths: set[int] = set()
    n_joined = 0
    i, n = 0, len(lines)
    while i < n:
        body = lines[i].rstrip("\r")
        o = body.rfind("{")
        if o < 0 or body.rfind("}") > o or not (body.startswith("'", o + 1) or o == len(body) - 1) or i + 1 >= n:
            out.append(lines[i])
            i += 1
            continue
        width, j = len(body), i + 1
        while j < n and "}" not in lines[j] and len(lines[j].rstrip("\r")) == width:
            j += 1
        last = lines[j].rstrip("\r") if j < n else ""
        if j < n and "}" in last and len(last) <= width and width >= 20:
            joined = "".join(ln.rstrip("\r") for ln in lines[i:j + 1])
            if _find_dicts(joined[o:joined.find("}", o) + 1], limit=1):
                out.append(joined)
                widths.add(width)
                n_joined += 1
                i = j + 1
                continue
        # lines i+1 .. j-1 have this width and no "}": an opener among them would fail alike
        out.extend(lines[i:j])
        i = max(j, i + 1)
    return "\n".join(out), n_joined, sorted(widths)


def parse_text(text: str, source: str, notes: list[str], meta: dict) -> tuple[list[dict], str] | None:
    """Records of a console or stream log, or ``None`` when ``text`` is not one.

    Parameters
    ----------
    text : str
        The whole file, decoded (``\\r\\n`` and ``\\r`` line ends are fine).
    source : str
        Name used in messages.
    notes, meta : list, dict
        Appended to / filled in (``max_steps`` from ms-swift's ``global_step/max_steps``).

    Returns
    -------
    (records, container) or None
        One dict per logged row with a ``"step"`` key (container ``"console"``, ``"stream"``,
        ``"verl_console"``, ``"minimind_console"`` or ``"step_lines"``); ``None`` when no metric line is
        found (the caller tries JSON and CSV).

    Raises
    ------
    DataError
        A stream log that is not valid JSON, or one whose text has no metric line.
    """
    text, n_joined, widths = unwrap_dicts(text)
    if not looks_like_console(text):
        return None
    if n_joined:
        notes.append(f"{source}: {n_joined} printed metric dict(s) were hard-wrapped by the terminal at "
                     f"{' or '.join(map(str, widths))} characters a line; joined each back into one line")
    container = "console"
    head = text.lstrip()[:4000]
    if head[:1] in "[{" and '"stream_name"' in head:
        text, container = stream_text(text, source), "stream"
        notes.append("stream log: read the metrics printed in its `data` fields")
    records = _dict_records(text, source, notes, meta)
    if not records:
        records = _verl_records(text)
        if records:
            container = "verl_console"
    if not records:
        records = _epoch_records(text)
        if records:
            container = "minimind_console"
            notes.append(f"read {len(records)} MiniMind 'Epoch:[e/E](step/iters), key: value' line(s)")
    if not records:
        records = _pipe_records(text)
        if records:
            container = "step_lines"
            notes.append(f"read {len(records)} 'step N | key: value' line(s)")
    if not records:
        if container == "stream":
            raise DataError(
                f"{source}: a stream log whose text has no printed metric dict or verl step line; {ACCEPTED}"
            )
        return None
    return records, container


def describe_text(text: str) -> str:
    """A short description of a text that is no known format (for a one-line error)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0].strip()[:60] if lines else ""
    braces = sum("{" in ln for ln in lines)
    return (
        f"{len(lines)} line(s) of text starting {first!r}, with no printed metric dict "
        f"({{'loss': ...}}, {braces} line(s) with braces) and no verl 'step:N - key:value' line, "
        "and not a CSV table"
    )
