"""Column names people's logs use for the step and the common metrics, and files holding several runs.

:func:`prepare_frame` runs on the raw table of a log (one row per log entry, the file's own column
names) before the format's key mapping, and rewrites only what that mapping cannot read:

* **W&B CSV exports**: ``Step`` and ``<run> - <metric>`` columns; the ``__MIN``/``__MAX`` band
  columns are dropped (counted in a note), the ``<run> - `` prefix is removed (several runs: choose
  one with ``run=``), and W&B's ``train/``/``eval/`` key prefixes become TRL keys
  (``train/reward`` -> ``reward``, ``eval/reward`` -> ``eval_reward``).
* **The step**: ms-swift's ``global_step/max_steps`` (``"9/547"``) gives the step; ``system/step``
  and ``train/global_step`` are read as the step when there is no other; several step columns that
  agree on every row (``step`` and ``training/global_step`` of verl) are one step column. Step
  columns that disagree stay an error (named by the reader).
* **Several runs in one table** (a text column named like a run label, ``arm``, ``run``, ``name``,
  ``experiment`` ..., whose labels each hold a whole run, steps repeating across labels): ``run=`` picks one
  (``"pure-GRPO"`` or ``"arm=pure-GRPO"``);
  without it the reader stops with the labels, since merging the runs would be wrong.
* **Aliases** of the total reward and of other metrics, used only when the canonical column is absent:
  see :data:`REWARD_ALIASES` and :data:`METRIC_ALIASES`. Without a total reward, a single per-function
  reward (``rewards/<f>/mean`` or ``rewards/<f>``) is the reward; several are summed (TRL's total
  with every weight 1) with a warning.

Every rewrite is appended to the notes; those that change what is read are warned.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from ...errors import DataError, SeveralRunsError
from .schema import NAN_MARK, _nan_text

__all__ = ["prepare_frame", "REWARD_ALIASES", "METRIC_ALIASES", "STEP_ALIASES", "report_broken_lines",
           "MAX_BROKEN_FRACTION"]

#: At most this fraction of a JSON-lines log's lines may be broken mid-file (skipped with a warning);
#: more means the file is not JSON lines, or is damaged beyond a stray write, and is an error.
MAX_BROKEN_FRACTION = 0.1

#: The total reward under other names (first found wins; only when no canonical reward column).
REWARD_ALIASES = ("reward_mean", "mean_reward", "reward/mean", "reward/selected_mean", "train/reward",
                  "rewards/mean", "avg_reward", "score/mean", "rollout/raw_reward")
#: Canonical reward columns (TRL ``reward``, verl ``critic/score/mean``, notebook ``Reward``).
_REWARD_CANONICAL = ("reward", "critic/score/mean", "Reward")
#: Other metrics under other names: canonical key (as TRL/verl spell it) -> aliases.
METRIC_ALIASES = {
    "grad_norm": ("actor_train/grad_norm", "grad-norm", "gradient_norm"),
    "kl": ("approx_kl", "kl_mean", "mean_kl"),
    # slime's rollout manager logs rollout/response_len/mean and rollout/truncated_ratio (samples cut at the cap)
    "completion_length": ("avg_gen_tokens", "length/mean", "mean_completion_length", "completion_length_mean",
                          "rollout/response_len/mean"),
    # slime's train/entropy_loss is the mean token entropy (the loss term before its coefficient)
    "entropy": ("entropy_mean", "policy_entropy", "entropy_loss"),
    "clipped_ratio": ("length/cap_hit_rate", "truncated_ratio", "clip_ratio_length", "rollout/truncated_ratio"),
    # the share of samples whose advantage is 0: with group-normalised advantages, those of groups whose
    # rewards are all equal (real run 11, a ROLL-style pipeline)
    "frac_reward_zero_std": ("advantage/zero_rate",),
    # slime's train/lr-pg_0: the learning rate of the optimizer's first parameter group
    "learning_rate": ("lr-pg_0",),
}
# Columns a format's own mapping already reads as the canonical metric (verl, TRL): no alias then.
_COVERED = {
    "grad_norm": {"actor/grad_norm"},
    "kl": {"actor/kl_loss", "kl"},
    "completion_length": {"response_length/mean", "completions/mean_length"},
    "entropy": {"actor/entropy", "actor/entropy_loss"},
    "clipped_ratio": {"response_length/clip_ratio", "completions/clipped_ratio"},
    "frac_reward_zero_std": set(),
    "learning_rate": {"actor/lr", "lr"},
}
#: Step columns besides the ones every format knows (``step``, ``Step``, ``global_step`` ...).
STEP_ALIASES = ("system/step", "train/global_step", "trainer/global_step")
_STEP_KNOWN = ("step", "Step", "global_step", "training/global_step", "_step")
_WANDB = re.compile(r"^(.+?) - (.+)$")
# Names of a column that labels runs (a text column of another name is left to the reader, which warns
# when steps repeat with different values).
_LABEL_NAMES = ("arm", "run", "run_name", "run_id", "name", "experiment", "exp", "exp_name", "variant", "group",
                "tag", "config", "method", "algorithm", "condition", "setting", "seed_name")


def _note(notes: list[str], message: str, *, warn: bool) -> None:
    from .schema import LogWarning

    notes.append(message)
    if warn:
        warnings.warn(message, LogWarning, stacklevel=4)


def prepare_frame(frame: pd.DataFrame, source: str, notes: list[str], *, run: str | None = None) -> pd.DataFrame:
    """Rewrite the raw columns of a log that the format mapping cannot read (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per log entry, the file's own column names.
    source : str
        Name used in messages.
    notes : list of str
        Appended to.
    run : str, optional
        Which run of a table holding several: a label (``"pure-GRPO"``), ``"column=label"`` or, for a
        W&B export, the run name before `` - ``.

    Returns
    -------
    pandas.DataFrame
        The table to normalise (a copy where anything changed).

    Raises
    ------
    DataError
        The table holds several runs and ``run`` does not name one of them (the message lists them).
    """
    frame, used = _wandb_export(frame, source, notes, run)
    frame = _steps(frame, source, notes)  # first: a step found by name also tells the runs of a run column apart
    frame, labelled = _select_run(frame, source, notes, None if used else run)
    frame = _restarted_runs(frame, source, notes, None if used or labelled else run)
    frame = _aliases(frame, notes)
    return _total_reward(frame, source, notes)


def _wandb_export(frame: pd.DataFrame, source: str, notes: list[str],
                  run: str | None) -> tuple[pd.DataFrame, bool]:
    """The frame with one W&B run's columns renamed, and whether it was a W&B export."""
    cols = [str(c) for c in frame.columns]
    step_cols = [c for c in cols if c in _STEP_KNOWN]
    metric_cols = [c for c in cols if c not in step_cols]
    if not step_cols or not metric_cols or not all(_WANDB.match(c) for c in metric_cols):
        return frame, False
    band = [c for c in metric_cols if c.endswith(("__MIN", "__MAX"))]
    if band:
        frame = frame.drop(columns=band)
        _note(notes, f"W&B export: dropped {len(band)} __MIN/__MAX band column(s) (the smoothing range, not "
                     "the logged value)", warn=False)
    runs: dict[str, list[str]] = {}
    for c in metric_cols:
        if c not in band:
            runs.setdefault(_WANDB.match(c).group(1), []).append(c)
    if len(runs) > 1 and run is None:
        raise SeveralRunsError(f"{source}: a W&B export of {len(runs)} runs ({', '.join(sorted(runs))}); choose "
                               f"one with run='{sorted(runs)[0]}' (command line: --run '{sorted(runs)[0]}')",
                               sorted(runs))
    name = next(iter(runs)) if len(runs) == 1 else run
    if name not in runs:
        raise DataError(f"{source}: `run` {run!r} is not a run of this W&B export; runs: {', '.join(sorted(runs))}")
    keep = {c: _wandb_key(_WANDB.match(c).group(2)) for c in runs[name]}
    others = [c for r, cs in runs.items() if r != name for c in cs]
    frame = frame.drop(columns=others).rename(columns=keep)
    if "Step" in frame.columns and "step" not in frame.columns:
        frame = frame.rename(columns={"Step": "step"})
    _note(notes, f"W&B export of run {name!r}: read {len(keep)} metric column(s)" +
          (f", left out {len(others)} column(s) of {len(runs) - 1} other run(s)" if others else ""), warn=False)
    # W&B exports have one row per step of the x-axis, empty where the run did not log
    return frame.dropna(how="all", subset=list(keep.values())), True


def _wandb_key(key: str) -> str:
    if key.startswith("train/"):
        return key[len("train/"):]
    if key.startswith("eval/"):
        return "eval_" + key[len("eval/"):]
    return key


def _label_column(frame: pd.DataFrame, step_col: str) -> str | None:
    """A text column whose labels each hold a run of their own (steps repeat across labels)."""
    steps = frame[step_col]
    if not steps.duplicated().any():
        return None
    for col in frame.columns:
        if col == step_col or frame[col].dtype.kind in "fiub":
            continue
        labels = frame[col]
        if labels.isna().any() or pd.to_numeric(labels, errors="coerce").notna().any():
            continue
        n = labels.nunique()
        if 2 <= n <= 100 and col.lower() in _LABEL_NAMES:
            if not frame.assign(_s=steps).duplicated(subset=[col, "_s"]).any():
                return col
    return None


def _select_run(frame: pd.DataFrame, source: str, notes: list[str], run: str | None) -> tuple[pd.DataFrame, bool]:
    """The rows of the run ``run`` names when a label column holds several runs, and whether one did."""
    step_col = next((c for c in _STEP_KNOWN + STEP_ALIASES if c in frame.columns), None)
    label = _label_column(frame, step_col) if step_col is not None and len(frame) > 1 else None
    if label is None:
        return frame, False  # `run` may still name one of runs appended one after the other
    labels = [str(x) for x in pd.unique(frame[label])]
    counts = frame[label].astype(str).value_counts()
    shown = ", ".join(f"{lab!r} ({counts[lab]} rows)" for lab in labels)
    if run is None:
        raise SeveralRunsError(f"{source}: the table holds {len(labels)} runs in column {label!r}: {shown}; choose "
                               f"one with run='{labels[0]}' (command line: --run '{labels[0]}')",
                               [f"{label}={lab}" for lab in labels])
    want = run.split("=", 1)[1] if run.startswith(f"{label}=") else run
    if want not in labels:
        raise DataError(f"{source}: `run` {run!r} is not a label of column {label!r}; labels: {shown}")
    kept = frame.loc[frame[label].astype(str) == want].drop(columns=[label])
    _note(notes, f"read run {label}={want!r} ({len(kept)} of {len(frame)} rows; the others belong to "
                 f"{len(labels) - 1} other run(s))", warn=False)
    return kept, True


def restart_rows(steps: np.ndarray) -> list[int]:
    """Where a step counter starts again: the row indices at which a new run begins in a table of runs
    appended one after the other (``1..200`` then ``1..150``), ``[]`` for one run.

    The table is read as several runs only when every place where the step goes down goes back to at most
    the first step of the run before (the counter started again), each run so split counts up (steps
    never go down within it) over at least two distinct steps, and each shares steps with the run before
    (its last step is at least the first step of that run). Anything else is one run whose rows are
    merged and sorted as usual: a run resumed from a checkpoint re-logs the steps after the checkpoint,
    not from the start; a shuffled log goes down at places that are no restart; two halves of one run in
    the wrong order share no step.

    Parameters
    ----------
    steps : numpy.ndarray
        The step of each row in file order (float; NaN for a row without one, skipped).
    """
    idx = np.flatnonzero(np.isfinite(steps))
    s = steps[idx]
    if s.size < 4:
        return []
    cuts = np.flatnonzero(np.diff(s) < 0) + 1
    if cuts.size == 0:
        return []
    bounds = np.concatenate([[0], cuts, [s.size]])
    first, last = s[bounds[:-1]], s[bounds[1:] - 1]  # each segment counts up, so these are its min and max
    if np.any(s[cuts] > first[:-1]) or np.any(last[1:] < first[:-1]) or np.any(last <= first):
        return []
    return [int(i) for i in idx[cuts]]


def choose_segment(names: list[str], run: str) -> int | None:
    """The index of the run ``run`` names among ``names`` (runs in order): its name, its number from 1, or
    ``"last"``/``"first"``; ``None`` when it names none."""
    want = run.strip()
    if want.lower() == "last":
        return len(names) - 1
    if want.lower() == "first":
        return 0
    if want in names:
        return names.index(want)
    if want.isdigit() and 1 <= int(want) <= len(names):
        return int(want) - 1
    return None


def _epoch_hint(frame: pd.DataFrame, cuts: list[int]) -> str:
    """A clause for when an ``epoch`` column goes up at every place the step starts again: then the step may
    count steps within an epoch, and the whole log is one run."""
    if "epoch" not in frame.columns:
        return ""
    epoch = pd.to_numeric(frame["epoch"], errors="coerce").to_numpy(dtype=float)
    if all(np.isfinite(epoch[k]) and np.isfinite(epoch[k - 1]) and epoch[k] > epoch[k - 1] for k in cuts):
        return (", or one run whose step counts within each epoch (`epoch` goes up where the step starts again; "
                "then map a step column that counts on with --map step=COLUMN)")
    return ""


def _restarted_runs(frame: pd.DataFrame, source: str, notes: list[str], run: str | None) -> pd.DataFrame:
    """One of several runs appended one after the other in one table (the step counter starts again,
    :func:`restart_rows`): the one ``run`` names (``"2"``, ``"last"``); without ``run`` the reader stops with
    the list, as for a table whose run column holds several runs (reading them as one run would merge their
    steps, and reading one of them unasked would hide the others)."""
    step_col = next((c for c in ("step",) + _STEP_KNOWN if c in frame.columns), None)
    cuts = restart_rows(pd.to_numeric(frame[step_col], errors="coerce").to_numpy(dtype=float)) \
        if step_col is not None else []
    bounds = [0, *cuts, len(frame)]
    logged = [set(frame.iloc[a:b].drop(columns=[step_col]).dropna(axis=1, how="all").columns)
              for a, b in zip(bounds, bounds[1:])] if cuts else []
    if cuts and any(not (x & y) for x, y in zip(logged, logged[1:])):
        # the rows after the drop log other metrics (evaluations at steps 0, 20, ... written after the
        # training rows): one run's two tables, not a second run
        cuts = []
    if not cuts:
        if run is not None:
            raise DataError(f"{source}: `run` {run!r} given, but the file holds a single run")
        return frame
    steps = pd.to_numeric(frame[step_col], errors="coerce")
    parts = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:]), 1):
        st = steps.iloc[a:b]
        parts.append(f"run {i}: data rows {a + 1}-{b}, steps {st.min():.0f}..{st.max():.0f}")
    shown = "; ".join(parts)
    names = [str(i) for i in range(1, len(bounds))]
    if run is None:
        raise SeveralRunsError(f"{source}: the step counter starts again {len(cuts)} time(s): the file holds "
                               f"{len(cuts) + 1} runs one after the other ({shown}){_epoch_hint(frame, cuts)}; choose "
                               "one with run='last' or run='1' (command line: --run last, --run 1)", names)
    k = choose_segment(names, run)
    if k is None:
        raise DataError(f"{source}: `run` {run!r} is not one of the {len(names)} runs one after the other in "
                        f"this file ({shown}); give 1..{len(names)} or 'last'")
    _note(notes, f"{source}: the step counter starts again {len(cuts)} time(s); read run {k + 1} of "
                 f"{len(names)} ({parts[k]}), left out the other rows", warn=False)
    return frame.iloc[bounds[k]:bounds[k + 1]]


def _steps(frame: pd.DataFrame, source: str, notes: list[str]) -> pd.DataFrame:
    if "global_step/max_steps" in frame.columns:
        text = frame["global_step/max_steps"].astype(str).str.split("/").str[0].str.strip()
        parsed = pd.to_numeric(text, errors="coerce")
        if parsed.notna().any():
            frame = frame.drop(columns=["global_step/max_steps"])
            if "step" in frame.columns:
                ok = frame["step"].isna() | parsed.isna() | (pd.to_numeric(frame["step"], errors="coerce") == parsed)
                if not ok.all():
                    raise DataError(f"{source}: `step` and `global_step/max_steps` disagree on "
                                    f"{int((~ok).sum())} row(s)")
            else:
                frame = frame.assign(step=parsed.to_numpy())
            _note(notes, "step read from ms-swift's `global_step/max_steps` (e.g. '9/547' is step 9)", warn=False)
    present = [c for c in _STEP_KNOWN if c in frame.columns]
    if present == ["_step"]:
        # W&B's `_step` counts the calls to wandb.log, not optimizer steps: any step column by name is better
        better = next((c for c in STEP_ALIASES if c in frame.columns), None) or _step_by_name(frame, source)
        if better is not None:
            frame = frame.drop(columns=["_step"]).rename(columns={better: "step"})
            _note(notes, f"column {better!r} read as the step, not W&B's `_step` (which counts the calls to "
                         "wandb.log)", warn=False)
            return frame
    if not present:
        alias = next((c for c in STEP_ALIASES if c in frame.columns), None)
        if alias is None:
            alias = _step_by_name(frame, source)
        if alias is not None:
            frame = frame.rename(columns={alias: "step"})
            _note(notes, f"column {alias!r} read as the step", warn=False)
        return frame
    if len(present) > 1:
        values = {c: pd.to_numeric(frame[c], errors="coerce") for c in present}
        keep = present[0]
        agree = all(((values[c] == values[keep]) | values[c].isna() | values[keep].isna()).all() for c in present)
        if agree:
            merged = values[keep]
            for c in present[1:]:
                merged = merged.fillna(values[c])
            frame = frame.drop(columns=present[1:]).assign(**{keep: merged.to_numpy()})
            _note(notes, f"step columns {present} agree on every row; read them as one ({keep!r})", warn=False)
    return frame


#: Names of a step column besides the known ones: ``<anything>_step`` (``grpo_step``, ``optimizer_step``),
#: ``<anything>/step``, ``iteration``, ``iter``; never ``<anything>_per_step`` or a count such as ``max_step``.
_STEP_NAME = re.compile(r"^(?:[\w/.-]*[_/](?:global_)?step|iteration|iter|iters)$", re.I)
_NOT_STEP_NAME = re.compile(r"(?:^|[_/])(?:per|max|num|total|n)_(?:global_)?step$|^_step$", re.I)


def _step_by_name(frame: pd.DataFrame, source: str) -> str | None:
    """The one column named like a step counter (:data:`_STEP_NAME`) that holds whole numbers >= 0, or ``None``.

    Several such columns that agree on every row are one (the first is read); several that disagree are
    an error naming them, since which one counts optimizer steps is the user's to say.
    """
    found = [c for c in map(str, frame.columns) if _STEP_NAME.match(c) and not _NOT_STEP_NAME.search(c)]
    values = {}
    for c in found:
        v = pd.to_numeric(frame[c], errors="coerce")
        if v.notna().any() and (v.dropna() >= 0).all() and (v.dropna() == v.dropna().round()).all():
            values[c] = v
    if not values:
        return None
    names = list(values)
    first = values[names[0]]
    disagree = [c for c in names[1:] if not ((values[c] == first) | values[c].isna() | first.isna()).all()]
    if disagree:
        raise DataError(f"{source}: no `step` column, and {len(names)} columns could be the step and disagree: "
                        f"{', '.join(map(repr, names))}; choose the one that counts optimizer steps with "
                        f"mapping={{'step': '{names[0]}'}} (command line: --map step={names[0]})")
    return names[0]


def _aliases(frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    cols = set(map(str, frame.columns))
    renames: dict[str, str] = {}
    if not cols & set(_REWARD_CANONICAL):
        alias = next((a for a in REWARD_ALIASES if a in cols), None)
        if alias is not None:
            renames[alias] = "reward"
    for canonical, names in METRIC_ALIASES.items():
        if canonical in cols or cols & _COVERED[canonical]:
            continue
        alias = next((a for a in names if a in cols and a not in renames), None)
        if alias is not None:
            renames[alias] = canonical
    if renames:
        frame = frame.rename(columns=renames)
        _note(notes, "read by alias: " + ", ".join(f"{a!r} as {c!r}" for a, c in renames.items()), warn=False)
    return frame


def _total_reward(frame: pd.DataFrame, source: str, notes: list[str]) -> pd.DataFrame:
    cols = [str(c) for c in frame.columns]
    if set(cols) & set(_REWARD_CANONICAL):
        return frame
    means = [c for c in cols if c.startswith("rewards/") and c.endswith("/mean")]
    if not means:
        means = [c for c in cols if c.startswith("rewards/") and not c.endswith("/std") and c.count("/") == 1]
    if not means:
        return frame
    values = frame[means].apply(pd.to_numeric, errors="coerce")
    if len(means) == 1:
        _note(notes, f"no total reward column; the only reward function {means[0]!r} is the reward", warn=False)
    else:
        _note(notes, f"{source}: no total reward column; the reward is the sum of the {len(means)} reward "
                     f"functions {means} (every weight taken as 1)", warn=True)
    total = values.sum(axis=1, min_count=len(means)).to_numpy(dtype=float)
    reward = np.where(values.isna().any(axis=1), np.nan, total)
    # a reward function that logged NaN makes the total a logged NaN, not a step without a reward
    logged_nan = np.logical_or.reduce([_nan_text(frame[c]) for c in means])
    if logged_nan.any():
        reward = np.where(logged_nan, NAN_MARK, reward.astype(object))
    return frame.assign(reward=reward)


def report_broken_lines(broken: list[tuple[int, str]], n_lines: int, source: str, notes: list[str],
                        what: str = "not valid JSON") -> None:
    """Warn about the corrupt lines skipped in a JSON-lines log or a CSV table (count and line numbers), or
    refuse it.

    Parameters
    ----------
    broken : list of (line number, message)
        The lines that are not valid JSON, in order (not counting an incomplete last line).
    n_lines : int
        The number of non-blank lines of the file.
    what : str
        What is wrong with them, for the warning.

    Raises
    ------
    DataError
        More than :data:`MAX_BROKEN_FRACTION` of the lines are broken (the message names the first).
    """
    if not broken:
        return
    if len(broken) > MAX_BROKEN_FRACTION * n_lines:
        raise DataError(f"{source}: {broken[0][1]}; {len(broken)} of {n_lines} lines are broken (more than "
                        f"{MAX_BROKEN_FRACTION:.0%}); only the last line of a log may be incomplete, "
                        "and a few corrupt lines are skipped")
    lines = [n for n, _ in broken]
    shown = ", ".join(map(str, lines[:10])) + (", ..." if len(lines) > 10 else "")
    _note(notes, f"{source}: skipped {len(lines)} corrupt line(s) of {n_lines} ({what}; line(s) {shown}); "
                 "kept the other lines", warn=True)
