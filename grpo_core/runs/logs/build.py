"""Building the normalised tables: a short pipeline of named stages (:func:`_build`).

Row handling (each action is appended to :attr:`RunLog.notes` and, when it changes data,
raised as a :class:`LogWarning`)
-------------------------------------------------------------------------------------------
* Rows of the same step and split are **merged**: TRL writes partial rows (the reward keys only
  on generation steps when a batch is reused, eval rows and the summary row at the same step).
  Where two rows of one step give *different* values for the same column (a run resumed from a
  checkpoint re-logs the steps after it), the **last** one wins: it is the one the resumed run
  continued from. This is warned with the number of steps affected.
* Steps out of order are sorted (stable), with a warning.
* Rows without a step value are dropped, with a warning; non-integer steps are an error. Rows with a
  step but no value at all are dropped, with a warning that counts them; a row that logged NaN keeps
  its place (the NaN is a value the run wrote, :attr:`RunLog.logged_nan`).
* Cells that are not numbers (``"No log"`` in notebook tables) become NaN, with a warning; a
  column with no number at all is dropped, with a note. NaN cells are kept (no row is dropped for
  them); :meth:`RunLog.series` drops them per metric and warns how many.
* An empty file, a file without rows, an unknown format, a missing step column or a truncated
  JSON file raise :class:`~grpo_core.errors.DataError` naming the file and what to do; the broken
  *last* line of a JSONL file, or a CSV row cut short (fewer fields than the other rows), from a run
  killed mid-write, is dropped with a warning; corrupt lines (short CSV rows) elsewhere are skipped with
  a warning that counts them and gives their line numbers, up to 10 % of the lines (more is an error).
* A log of more than ``max_rows`` training steps (:data:`MAX_ROWS`, 100,000, by default in
  :func:`~grpo_core.runs.logs.read_log`) is **thinned**, with a warning: every ``k``-th value of each metric,
  every NaN, infinite or extreme value with its neighbours, and every evaluation and summary row are kept
  (:func:`_thin` says what and why); ``RunLog.meta["thinned"]`` holds the counts.
* A ``mapping`` key that is not a normalised column name is a
  :class:`~grpo_core.errors.ParameterError` (a typo would rename a column to a name no check reads).

"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...errors import DataError, ParameterError
from ...validation import check_choice
from . import aliases
from .detect import _detect
from .keys import _mapper
from .runlog import RunLog
from .schema import _NORMALISED, _SPLITS, _STEP_CANDIDATES, NAN_MARK, NORMALISED_COLUMNS, _nan_text, _note, quoted
from .trl import _reward_std_kind, parse_version


def _build(records, frame, *, container, fmt, mapping, source, notes, meta, trl_version, reward_std_kind,
           run=None, max_rows: int = 0) -> RunLog:
    """The pipeline: rows -> versions -> user mapping -> format -> names -> steps -> numbers -> thinning (a log
    of more than ``max_rows`` training steps, :func:`_thin`; 0 keeps every row) -> splits."""
    if reward_std_kind is not None:
        check_choice("reward_std_kind", reward_std_kind, ("group_mean_std", "batch_std", "unknown"))
    frame = _rows(records, frame, source)
    frame, versions = _versions(frame, meta, trl_version)
    frame, protected = _user_mapping(frame, mapping, source, notes)
    # after the user's mapping, so a column it names is never renamed
    frame = aliases.prepare_frame(frame, source, notes, run=run)
    fmt = _format(frame, fmt, mapping, protected, source, notes)
    frame, split_of_row = _split_column(frame, fmt, source)
    frame, targets, step_col = _targets(frame, fmt, protected, source, notes)
    columns_map = {c: n for c, (n, _) in targets.items() if c != n}
    frame, split_of_row, steps = _steps(frame, step_col, split_of_row, source, notes)
    # Numbers: every cell that is not a number becomes NaN (with a warning unless it is a
    # known placeholder such as "No log"); a column with no number at all is dropped.
    values, logged_nan = _numeric_columns(frame, [c for c in frame.columns if c != step_col], source, notes)
    values, logged_nan, steps, split_of_row, thinned = _thin(values, logged_nan, steps, split_of_row, targets,
                                                             max_rows, source, notes)
    if thinned:
        meta["thinned"] = thinned
    dropped: dict[str, dict[str, str]] = {}
    for col in frame.columns:
        if col != step_col and col not in values and targets[col][1] in ("train", "eval"):
            dropped.setdefault(targets[col][1], {})[targets[col][0]] = "it holds no numbers"
    tables, summary = _split_tables(values, targets, split_of_row, steps, source, notes, dropped, logged_nan,
                                    among=" among the kept steps" if thinned else "")
    nan_steps = _logged_nan_steps(logged_nan, targets, split_of_row, steps, tables)
    kind, era = _reward_std_kind(tables["train"], frame.columns, fmt, versions, reward_std_kind, notes, source)
    if versions:
        meta["trl_version"] = sorted(versions)[0] if len(versions) == 1 else sorted(versions)
    if era:
        meta["trl_era"] = era
    _note_renamed(columns_map, step_col, notes)
    return RunLog(train=tables["train"], eval=tables["eval"], format=fmt, reward_std_kind=kind, source=source,
                  notes=notes, container=container, columns=columns_map, summary=summary, meta=meta,
                  logged_nan=nan_steps, dropped=dropped)


def _rows(records, frame, source: str) -> pd.DataFrame:
    """The rows as one table with string column names, each once."""
    if records is not None:
        if not records:
            raise DataError(f"{source}: no records (the log has no rows)")
        for i, rec in enumerate(records):
            if type(rec) is not dict and not isinstance(rec, Mapping):
                raise DataError(f"{source}: record {i} is a {type(rec).__name__}, not an object of metric names "
                                "to values")
        frame = pd.DataFrame.from_records(records)
        if _marks_nan(records, frame):
            frame = pd.DataFrame.from_records(_mark_nan(records))
    if frame is None or len(frame) == 0:
        raise DataError(f"{source}: no rows (only a header?)")
    frame.columns = [str(c) for c in frame.columns]
    if frame.columns.duplicated().any():
        dup = sorted(set(frame.columns[frame.columns.duplicated()]))
        raise DataError(f"{source}: column name(s) {dup} appear more than once")
    return frame


def _marks_nan(records: list, frame: pd.DataFrame) -> bool:
    """Whether :func:`_mark_nan` would mark a value of ``records``; ``frame`` is their table unmarked.

    Such a value is a missing cell of the table: only the missing cells whose record has the key are looked at
    (the keys of a record found once per sequence of keys), not every value (a 100,000-row log has a million).
    """
    columns = list(frame.columns)
    if not all(type(c) is str for c in columns) or frame.columns.has_duplicates:
        return True  # keys the table may have merged: every value is looked at
    missing = [frame[c].isna().to_numpy() for c in columns]
    if not any(m.any() for m in missing):
        return False
    layouts: dict[tuple, int] = {}
    has_key: list[np.ndarray] = []
    layout_of = np.empty(len(records), dtype=np.intp)
    for i, rec in enumerate(records):
        keys = tuple(rec)
        j = layouts.get(keys)
        if j is None:
            j = layouts[keys] = len(has_key)
            has_key.append(np.array([c in rec for c in columns], dtype=bool))
        layout_of[i] = j
    has = np.stack(has_key)  # layout x column
    for j, column in enumerate(columns):
        for i in np.flatnonzero(missing[j] & has[layout_of, j]).tolist():
            rec = records[i]
            v = rec[column]
            if (isinstance(v, float | np.floating) and v != v) or (v is None and "split" in rec):
                return True
    return False


def _mark_nan(records: list) -> list:
    """The records with each logged NaN written as :data:`NAN_MARK` (text), so that the table keeps it
    apart from a key the record does not have (not logged at that step; NaN in the table).

    A ``None`` counts as a logged NaN in our own records (they carry ``split``: the training callback
    writes non-finite values as ``null``); elsewhere it is a missing value.
    """
    out = None
    for i, rec in enumerate(records):
        own = "split" in rec
        if any((isinstance(v, float | np.floating) and v != v) or (v is None and own) for v in rec.values()):
            if out is None:
                out = list(records[:i])
            rec = {k: NAN_MARK if (isinstance(v, float | np.floating) and v != v) or (v is None and own) else v
                   for k, v in rec.items()}
        if out is not None:
            out.append(rec)
    return records if out is None else out


def _versions(frame: pd.DataFrame, meta: dict, trl_version: str | None) -> tuple[pd.DataFrame, set[str]]:
    """TRL versions recorded in the rows (our callback writes ``trl_version``), the file or the argument."""
    versions: set[str] = set()
    if "trl_version" in frame.columns:
        versions = {str(v) for v in frame["trl_version"].dropna().unique()}
        frame = frame.drop(columns=["trl_version"])
    if "trl_version" in meta:
        versions.add(str(meta["trl_version"]))
    if trl_version is not None:
        if parse_version(trl_version) is None:
            raise ParameterError("trl_version", f"`trl_version` must be a version number such as '0.19.1' or "
                                                f"'0.27'; got {trl_version!r}")
        versions = {str(trl_version)}
    return frame, versions


def _known_key(key: str) -> bool:
    """A normalised column name: one of :data:`NORMALISED_COLUMNS`, or ``reward/<f>`` / ``reward_std/<f>``."""
    for family in ("reward/", "reward_std/"):
        if key.startswith(family) and len(key) > len(family):
            return True
    return key in _NORMALISED


def _check_mapping_keys(mapping: Mapping) -> None:
    """Refuse a key that is not a normalised column name: a typo (``rewrad``) would rename a column to a name
    no check reads, silently (``foo=kl`` would even hide the KL from every check)."""
    for target in mapping:
        if not isinstance(target, str) or not target:
            raise ParameterError("mapping", f"`mapping` keys must be normalised column names; got {target!r}")
        if not _known_key(target):
            close = difflib.get_close_matches(target, NORMALISED_COLUMNS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ParameterError("mapping", f"`mapping` (--map) has an unknown key {target!r}{hint}; known keys: "
                                 f"{', '.join(NORMALISED_COLUMNS)}, reward/<f>, reward_std/<f> (the normalised "
                                 "column names; a column with another name is read under its own name, unmapped)")


def _user_mapping(frame: pd.DataFrame, mapping, source: str, notes: list[str]) -> tuple[pd.DataFrame, set[str]]:
    """Apply ``mapping`` (normalised name -> the file's column); the names it gave."""
    if not mapping:
        return frame, set()
    if not isinstance(mapping, Mapping):
        raise DataError(f"`mapping` must be a dict of normalised name -> column; got {type(mapping).__name__}")
    _check_mapping_keys(mapping)
    renamed_by_user: dict[str, str] = {}
    for target, column in mapping.items():
        if column not in frame.columns:
            raise DataError(f"{source}: `mapping` names column {quoted(column)} (for {quoted(target)}), which the file "
                            f"does not have; columns: {', '.join(frame.columns)}")
        renamed_by_user[column] = target
    clash = set(renamed_by_user.values()) & (set(frame.columns) - set(renamed_by_user))
    for c in clash:
        frame = frame.drop(columns=[c])
        _note(notes, f"column {quoted(c)} replaced by the one `mapping` names for it", warn=True)
    frame = frame.rename(columns=renamed_by_user)
    _note(notes, "mapped by the user: " + ", ".join(f"{quoted(c)} -> {quoted(t)}" for c, t in renamed_by_user.items()),
          warn=False)
    return frame, set(renamed_by_user.values())


def _shown_columns(frame: pd.DataFrame) -> str:
    """The first 20 column names for a message, each cut to 60 characters (a broken file's "name" can
    be a whole line)."""
    names = [str(c) if len(str(c)) <= 60 else f"{str(c)[:57]}... ({len(str(c))} characters)"
             for c in list(frame.columns)[:20]]
    return ", ".join(names) + (" ..." if frame.shape[1] > 20 else "")


def _format(frame: pd.DataFrame, fmt: str, mapping, protected: set[str], source: str,
            notes: list[str] | None = None) -> str:
    """The given format, or the one the columns the user did not map say. A given format the columns
    contradict is kept (the user may know better) with a warning: `--format verl` on a TRL console log was
    read and labelled verl without a word."""
    detected = _detect([c for c in frame.columns if c not in protected])
    if fmt != "auto":
        # verl and notebook tables name their metrics their own way; TRL's and our normalised names overlap
        distinct = {"verl", "notebook"}
        if detected is not None and detected != fmt and (detected in distinct or fmt in distinct) and notes is not None:
            _note(notes, f"{source}: read as format {fmt!r} as asked, but its columns look like {detected!r}: "
                         "metrics under another format's names may be missed", warn=True)
        return fmt
    if detected is not None:
        return detected
    if mapping:
        return "generic"
    raise DataError(
        f"{source}: unknown log format (columns: {_shown_columns(frame)}). Recognised: TRL trainer_state.json or "
        "log_history, notebook progress-table CSV, verl metrics, grpo-dynamics metrics.jsonl. For "
        "another table give the column mapping, e.g. mapping={'step': 'iter', 'reward': 'acc'} "
        "(command line: --map step=iter --map reward=acc)")


def _split_column(frame: pd.DataFrame, fmt: str, source: str) -> tuple[pd.DataFrame, pd.Series | None]:
    """The per-row ``split`` of our own format (``None`` for the others)."""
    if "split" not in frame.columns or fmt not in ("grpo_dynamics", "generic"):
        return frame, None
    split_of_row = frame["split"].astype(str).str.lower().where(frame["split"].notna(), "train")
    bad = sorted(set(split_of_row.unique()) - set(_SPLITS))
    if bad:
        raise DataError(f"{source}: `split` must be one of {list(_SPLITS)}; found {bad}")
    return frame.drop(columns=["split"]), split_of_row


def _targets(frame: pd.DataFrame, fmt: str, protected: set[str], source: str,
             notes: list[str]) -> tuple[pd.DataFrame, dict[str, tuple[str, str]], str]:
    """Every column -> (normalised name, split), and the one step column."""
    mapper = _mapper(fmt)
    targets: dict[str, tuple[str, str]] = {}
    for col in frame.columns:
        if col in protected:
            targets[col] = (col, "train")
        elif col in ("step",):
            targets[col] = ("step", "train")
        else:
            targets[col] = mapper(col)
    if "step" in protected:
        # the user named the step column: any other column the format reads as the step gives way
        for c in [c for c, (n, _) in targets.items() if n == "step" and c != "step"]:
            frame = frame.drop(columns=[c])
            del targets[c]
            _note(notes, f"column {quoted(c)} ignored: `mapping` names another column as the step", warn=True)
    step_cols = [c for c, (n, _) in targets.items() if n == "step"]
    if not step_cols:
        for cand in _STEP_CANDIDATES:
            if cand in frame.columns:
                targets[cand] = ("step", "train")
                step_cols = [cand]
                break
    if not step_cols:
        raise DataError(
            f"{source}: no step column (columns: {_shown_columns(frame)}); name the column that counts optimizer "
            "steps with mapping={'step': '<column>'} (command line: --map step=<column>)")
    if len(step_cols) > 1:
        raise DataError(f"{source}: several columns could be the step: {step_cols}; choose one with "
                        f"mapping={{'step': '{step_cols[0]}'}} (command line: --map step={step_cols[0]})")
    return frame, targets, step_cols[0]


#: The largest step a log may hold: every whole number up to 2**53 is exact in float64, which the
#: readers parse through.
MAX_STEP = float(2 ** 53)


def _steps(frame: pd.DataFrame, step_col: str, split_of_row: pd.Series | None, source: str,
           notes: list[str]) -> tuple[pd.DataFrame, pd.Series | None, np.ndarray]:
    """The step of each row (int64, >= 0); rows without one dropped, with a warning."""
    steps = pd.to_numeric(frame[step_col], errors="coerce").to_numpy(dtype=float)
    missing = ~np.isfinite(steps)
    if missing.all():
        raise DataError(f"{source}: the step column {quoted(step_col)} holds no numbers")
    if missing.any():
        _note(
            notes,
            f"dropped {int(missing.sum())} row(s) without a step value (first at row {int(np.argmax(missing))})",
            warn=True,
        )
        frame = frame.loc[~missing]
        if split_of_row is not None:
            split_of_row = split_of_row.loc[~missing]
        steps = steps[~missing]
    if np.any(steps != np.round(steps)):
        bad = steps[steps != np.round(steps)][:3]
        raise DataError(f"{source}: steps must be whole numbers; found {bad.tolist()} in column {quoted(step_col)}")
    if np.any(steps < 0):
        raise DataError(f"{source}: steps must be >= 0; found {int(steps.min())}")
    if np.any(steps > MAX_STEP):
        # past 2**53 a float64 no longer tells neighbouring steps apart (and past 2**63 int64 wraps):
        # rows would merge or turn negative
        raise DataError(f"{source}: steps must be at most 2**53 = {MAX_STEP:.0f} (the largest whole number "
                        f"read exactly); found {steps.max():.17g} in column {quoted(step_col)}. If this column does "
                        "not count optimizer steps, name the one that does with --map step=<column>")
    return frame, split_of_row, steps.astype(np.int64)


def _split_tables(
    values: dict[str, np.ndarray],
    targets: dict[str, tuple[str, str]],
    split_of_row,
    steps: np.ndarray,
    source: str,
    notes: list[str],
    dropped: dict[str, dict[str, str]] | None = None,
    logged_nan: dict[str, np.ndarray] | None = None,
    among: str = "",
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The train and eval tables and the summary row.

    Our own format says the split per row (``split``); every other format says it per column (an
    ``eval_``/``val-core/`` key, a summary key). A row contributes to a split when it has a value in
    one of that split's columns other than ``epoch`` (TRL repeats ``epoch`` and ``step`` in eval and
    summary rows), or logged a NaN in one (``logged_nan``: a NaN the run wrote is a value, not an empty
    cell). The columns dropped for holding no number are added to ``dropped`` (``{split: {name: why}}``).
    """
    n_rows = steps.size
    tables: dict[str, pd.DataFrame] = {}
    summary: dict[str, Any] = {}
    used = np.zeros(n_rows, bool)
    for split in _SPLITS:
        cols, keep = _rows_of_split(split, values, targets, split_of_row, n_rows, logged_nan or {})
        used |= keep
        if split == "summary":
            summary = _summary_row(cols, keep, values, steps, notes)
            continue
        data = {c: values[c][keep] for c in cols}
        tables[split] = _tidy(data, steps[keep], {c: targets[c][0] for c in cols}, split, source, notes,
                              dropped if dropped is not None else {}, among=among)
    if not used.all():
        # a row with a step but not one value (every cell empty or not a number; a NaN the run wrote is a
        # value, and its row stays): say so, never drop it quietly
        empty_steps = steps[~used]
        shown = ", ".join(str(int(s)) for s in empty_steps[:5]) + (", ..." if len(empty_steps) > 5 else "")
        _note(
            notes,
            f"{source}: dropped {len(empty_steps)} row(s) with a step but no metric value (every cell "
            f"empty or not a number; step(s) {shown})",
            warn=True,
        )
    if tables["train"].empty or tables["train"].shape[1] <= 1:
        raise DataError(f"{source}: no training rows with metrics (rows: {n_rows}; eval rows: {len(tables['eval'])})")
    return tables, summary


#: The most training steps :func:`~grpo_core.runs.logs.read_log` keeps every row of (``max_rows``); a longer
#: log is thinned (:func:`_thin`). 100,000 steps is past any GRPO run we know of; a 2-million-row CSV took
#: 3 GB and 40 s to diagnose in full, most of it in fits that gain nothing from the extra rows.
MAX_ROWS = 100_000
#: Values per block over which a metric's usual level is measured when a log is thinned.
_BLOCK = 128
#: A value at least this many times the median magnitude of its block is kept when a log is thinned: the
#: recurring-spikes check calls 10x the running median a spike; 8 leaves room for a block median above the
#: running one. Lower would keep, and so over-represent, the ordinary tail of a noisy metric.
_SPIKE_RATIO = 8.0
#: ... and so is a value this many median absolute deviations from its block's median (about 11 standard
#: deviations of Gaussian noise): a drop or a negative excursion no ratio to the magnitude sees.
_OUTLIER_MADS = 16.0


def _extreme(w: np.ndarray) -> np.ndarray:
    """Which of the finite values ``w`` (one metric, in log order) stand out from their block of
    :data:`_BLOCK` neighbours: ``|w| >= _SPIKE_RATIO x`` the block's median ``|w|`` (with that median 0, any
    value but 0), or more than :data:`_OUTLIER_MADS` median absolute deviations from the block's median. Fewer
    than 8 values are all kept (bool array, shape of ``w``)."""
    m = w.size
    if m < 8:
        return np.ones(m, bool)
    size = min(_BLOCK, m)
    n_full, rest = divmod(m, size)
    # the last, partial block is measured on the last `size` values (overlapping the one before)
    blocks = w[:n_full * size].reshape(n_full, size)
    if rest:
        blocks = np.concatenate([blocks, w[-size:].reshape(1, size)])
    mid = (size - 1) // 2
    mag = np.abs(blocks)
    scale = np.partition(mag, mid, axis=1)[:, mid:mid + 1]
    centre = np.partition(blocks, mid, axis=1)[:, mid:mid + 1]
    dev = np.abs(blocks - centre)
    mad = np.partition(dev, mid, axis=1)[:, mid:mid + 1]
    flag = ((mag >= _SPIKE_RATIO * scale) & (mag > 0)) | ((dev > _OUTLIER_MADS * mad) & (mad > 0))
    out = flag[:n_full].ravel()
    return np.concatenate([out, flag[n_full, size - rest:]]) if rest else out


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of integers by sorting (numpy's hashing took 2 s for 2 million steps; sorting, 0.1 s)."""
    a = np.sort(a)
    return a[np.concatenate([[True], a[1:] != a[:-1]])] if a.size else a


def _thin(values: dict[str, np.ndarray], logged_nan: dict[str, np.ndarray], steps: np.ndarray, split_of_row,
          targets: dict[str, tuple[str, str]], max_rows: int, source: str, notes: list[str]):
    """A log of more than ``max_rows`` training steps, thinned to about that many: ``(values, logged_nan,
    steps, split_of_row, thinned)`` with the rows kept, and ``thinned`` the counts for ``RunLog.meta``
    (``{}`` when every row is kept).

    What is kept, so that every check sees what it would in the full log:

    * every ``k``-th value of each training metric, ``k = ceil(steps / max_rows)``, counted along the
      rows that logged that metric (TRL logs the reward keys on generation steps only: one stride over
      the steps could miss them all), and the first and last step;
    * every value logged NaN or infinite (the numerical-failure check counts them all, and asks whether the
      metric was finite after the last), and every value that stands out from its block of 128 neighbours
      (:func:`_extreme`: 8x their median magnitude, a margin below the recurring-spikes check's default of
      10x its running median, which is not the block's; or 16 median absolute deviations off their median),
      with the value before and after it in the metric's order, so that two spikes stay two episodes;
    * every row of a kept step (partial rows merge as in the full log), and every evaluation and summary
      row, and every row with no training value (so that their counts stay exact).

    A sample, not bin means: a kept value is a single step's, with its noise (a mean of ``k`` steps would
    shrink it by ``sqrt(k)`` and hide every spike); only the rare extremes are added beyond the stride. A
    test over the whole run sees ``k`` times fewer points (100,000 still make a slope's standard error
    tiny). Where extremes are common (a metric that is 0 on most steps, heavy tails) more rows are kept
    than ``max_rows``. Notes that count steps after this stage (sorted, merged) count the kept ones.
    A check whose threshold a user sets below 8x the running median sees the extremes between 8x and
    the threshold only where the stride kept them.
    """
    n = steps.size
    cols, train = _rows_of_split("train", values, targets, split_of_row, n, logged_nan)
    if not max_rows or not train.any():
        return values, logged_nan, steps, split_of_row, {}
    train_steps = _sorted_unique(steps[train])
    if train_steps.size <= max_rows:
        return values, logged_nan, steps, split_of_row, {}
    every = -(-train_steps.size // max_rows)
    kept = [train_steps[[0, -1]]]
    for col in cols:
        if targets[col][0] == "epoch":
            continue
        v = values[col]
        has = ~np.isnan(v)
        if col in logged_nan:
            has |= logged_nan[col]
        at = np.flatnonzero(train & has)
        if at.size == 0:
            continue
        pick = np.zeros(at.size, bool)
        pick[::every] = True
        pick[-1] = True
        w = v[at]
        finite = np.isfinite(w)
        odd = ~finite
        odd[finite] = _extreme(w[finite])
        pick |= odd
        pick[1:] |= odd[:-1]
        pick[:-1] |= odd[1:]
        kept.append(steps[at[pick]])
    kept_steps = _sorted_unique(np.concatenate(kept))
    rows = ~train | np.isin(steps, kept_steps)
    thinned = {"training_steps": int(train_steps.size), "kept_steps": int(kept_steps.size), "every": int(every)}
    _note(notes, f"{source}: {train_steps.size:,} training steps, more than the {max_rows:,} read in full "
                 f"(max_rows); kept {kept_steps.size:,}: 1 in {every} values of each metric, every NaN, "
                 "infinite or extreme value (8x its neighbours' median magnitude) with the values beside it, "
                 "and every evaluation and summary row", warn=True)
    keep = np.flatnonzero(rows)
    return ({c: v[keep] for c, v in values.items()}, {c: m[keep] for c, m in logged_nan.items()}, steps[keep],
            None if split_of_row is None else split_of_row.iloc[keep], thinned)


def _logged_nan_steps(logged_nan: dict[str, np.ndarray], targets, split_of_row, steps: np.ndarray,
                      tables: dict[str, pd.DataFrame]) -> dict[str, dict[str, np.ndarray]]:
    """``{split: {normalised name: steps}}``: the steps at which a metric was logged as NaN.

    Kept apart from the tables, where a NaN cell also stands for "not logged at this step"; a step
    whose table value is a number (a row of the same step logged it, e.g. a resumed run) is not one.
    A metric whose every value is NaN (dropped from its table) keeps its steps here.
    """
    out: dict[str, dict[str, np.ndarray]] = {}
    for col, mask in logged_nan.items():
        name, split = targets[col]
        if split_of_row is not None:
            split_mask = {sp: mask & (split_of_row.to_numpy() == sp) for sp in ("train", "eval")}
        else:
            split_mask = {split: mask} if split in ("train", "eval") else {}
        for sp, m in split_mask.items():
            if m.any():
                prev = out.setdefault(sp, {}).get(name)
                found = np.unique(steps[m])
                out[sp][name] = found if prev is None else np.union1d(prev, found)
    for sp, per in out.items():
        table = tables[sp]
        for name in list(per):
            if name in table.columns:
                vals = table[name].reindex(per[name]).to_numpy(dtype=float, na_value=np.nan)
                per[name] = per[name][np.isnan(vals)].astype(np.int64)
            if per[name].size == 0:
                del per[name]
    return {sp: per for sp, per in out.items() if per}


def _rows_of_split(
    split: str, values: dict[str, np.ndarray], targets, split_of_row, n_rows: int,
    logged_nan: dict[str, np.ndarray] | None = None,
) -> tuple[list[str], np.ndarray]:
    """The columns of one split and which rows belong to it (a row with a value, or a logged NaN)."""
    if split_of_row is not None:
        return list(values), split_of_row.to_numpy() == split
    cols = [c for c in values if targets[c][1] == split]
    keep = np.zeros(n_rows, bool)
    for c in cols:
        if targets[c][0] != "epoch":
            keep |= ~np.isnan(values[c])
            if logged_nan and c in logged_nan:
                keep |= logged_nan[c]
    return cols, keep


def _summary_row(
    cols: list[str], keep: np.ndarray, values: dict[str, np.ndarray], steps: np.ndarray, notes: list[str]
) -> dict[str, Any]:
    """The last summary row (``train_runtime``, ``train_loss``...), or ``{}``."""
    if not keep.any():
        return {}
    last = np.flatnonzero(keep)[-1]
    summary: dict[str, Any] = {c: float(values[c][last]) for c in cols if not np.isnan(values[c][last])}
    summary["step"] = int(steps[last])
    _note(notes, f"kept the final summary row ({', '.join(sorted(summary))}) apart from the training rows", warn=False)
    return summary


def _note_renamed(columns_map: dict[str, str], step_col: str, notes: list[str]) -> None:
    renamed = {c: n for c, n in columns_map.items() if c != step_col or n != "step"}
    if renamed:
        shown = ", ".join(f"{quoted(c)} -> {quoted(n)}" for c, n in list(renamed.items())[:12])
        more = f" and {len(renamed) - 12} more" if len(renamed) > 12 else ""
        _note(notes, f"renamed {len(renamed)} column(s): {shown}{more}", warn=False)


_NA_TOKENS = frozenset({"", "none", "null", "na", "n/a", "no log", "-"})


def _numeric_columns(frame: pd.DataFrame, cols: list[str], source: str,
                     notes: list[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each column as float64 (NaN where it was not logged or not a number), and, for the columns that
    logged a NaN (text ``nan``, or a JSON NaN marked by :func:`_mark_nan`), which rows did."""
    out: dict[str, np.ndarray] = {}
    logged_nan: dict[str, np.ndarray] = {}
    for col in cols:
        s = frame[col]
        if s.dtype == np.float64:
            out[col] = s.to_numpy()  # no copy: a 2-million-row column is 16 MB
            continue
        if s.dtype.kind in "fiub":
            out[col] = s.to_numpy(dtype=float, na_value=np.nan)
            continue
        numeric = pd.to_numeric(s, errors="coerce")
        text = s.astype(str).str.strip().str.lower()
        nan_text = _nan_text(s)
        placeholder = s.notna() & numeric.isna() & text.isin(_NA_TOKENS)
        bad = s.notna() & numeric.isna() & ~placeholder & ~nan_text
        if bad.any() and not numeric.notna().any():
            _note(notes, f"dropped column {quoted(col)}: no numbers in it (e.g. {quoted(s[bad].iloc[0])})", warn=False)
            continue
        if bad.any():
            _note(
                notes,
                f"{source}: {int(bad.sum())} cell(s) of {quoted(col)} are not numbers (e.g. {quoted(s[bad].iloc[0])} "
                f"in data row {int(np.flatnonzero(bad.to_numpy())[0]) + 1}); set to NaN",
                warn=True,
            )
        if placeholder.any():
            _note(
                notes,
                f"{int(placeholder.sum())} placeholder cell(s) of {quoted(col)} "
                f"(e.g. {quoted(s[placeholder].iloc[0])}) read as missing",
                warn=False,
            )
        if nan_text.any():
            logged_nan[col] = nan_text
        out[col] = numeric.to_numpy(dtype=float, na_value=np.nan)
    return out, logged_nan


def _tidy(
    data: dict[str, np.ndarray], steps: np.ndarray, names: dict[str, str], split: str, source: str, notes: list[str],
    dropped: dict[str, dict[str, str]] | None = None, among: str = "",
) -> pd.DataFrame:
    """Rename, merge columns of one meaning and rows of one step, sort by step (``among`` qualifies the counts
    of a thinned log's notes: " among the kept steps")."""
    if len(steps) == 0:
        return pd.DataFrame({"step": pd.Series([], dtype=np.int64)}, index=pd.Index([], dtype=np.int64))
    merged_cols: dict[str, np.ndarray] = {}
    for col, values in data.items():
        name = names.get(col, col)
        if name in merged_cols:
            # Two source columns with one meaning (e.g. `completion_length` and
            # `completions/mean_length` in a log concatenated across TRL releases): merge.
            old = merged_cols[name]
            both = np.isfinite(old) & np.isfinite(values) & (old != values)
            if both.any():
                _note(
                    notes,
                    f"{source}: columns mapping to {quoted(name)} ({split}) disagree on {int(both.sum())} "
                    f"step(s); kept {quoted(col)}",
                    warn=True,
                )
            merged_cols[name] = np.where(np.isnan(values), old, values)
            _note(notes, f"merged column {quoted(col)} into {quoted(name)} ({split})", warn=False)
        else:
            merged_cols[name] = values
    table = pd.DataFrame(merged_cols)
    table.insert(0, "step", steps)
    all_nan = [c for c in table.columns if c != "step" and table[c].isna().all()]
    if all_nan:
        table = table.drop(columns=all_nan)
        for col in all_nan:
            if dropped is not None:
                dropped.setdefault(split, {})[col] = "every value is empty or NaN"
            # the reward is what every fit and check reads: losing it must not go unseen
            _note(
                notes,
                f"{source}: dropped column {quoted(col)}: every value is empty or NaN ({split})",
                warn=col == "reward" and split == "train",
            )
    if len(table) > 1 and np.any(np.diff(steps) < 0):
        n_back = int(np.sum(np.diff(steps) < 0))
        _note(
            notes,
            f"{source}: steps were out of order ({n_back} place(s) where the step goes back, {split}{among}); "
            "sorted them",
            warn=True,
        )
        table = table.sort_values("step", kind="stable")
    dup = table["step"].duplicated(keep=False).to_numpy()
    if dup.any():
        dups = table.loc[dup]
        value_cols = [c for c in table.columns if c != "step"]
        conflict_steps: list[int] = []
        if value_cols:
            counts = dups.groupby("step", sort=False)[value_cols].nunique()
            conflicted = counts.gt(1).any(axis=1)
            conflict_steps = sorted(int(s) for s in conflicted.index[conflicted.to_numpy()])
        merged = table.groupby("step", sort=True).last()  # last non-null value per column
        merged.insert(0, "step", merged.index.to_numpy(dtype=np.int64))
        n_dup = int(dups["step"].nunique())
        if conflict_steps:
            _note(
                notes,
                f"{source}: {len(conflict_steps)} step(s) logged more than once with different values "
                f"({split}{among}; first at step {conflict_steps[0]}), e.g. a run resumed from a checkpoint; "
                "kept the last value of each",
                warn=True,
            )
        if n_dup > len(conflict_steps):
            _note(
                notes,
                f"merged the partial rows of {n_dup - len(conflict_steps)} step(s) ({split}{among}; TRL logs "
                "some keys in separate rows)",
                warn=False,
            )
        table = merged
    table.index = pd.Index(table["step"].to_numpy(dtype=np.int64))
    table["step"] = table["step"].astype(np.int64)
    table.index.name = None
    return table
