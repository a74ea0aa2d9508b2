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

from ...errors import DataError
from .schema import NAN_MARK, _nan_text

__all__ = ["prepare_frame", "REWARD_ALIASES", "METRIC_ALIASES", "STEP_ALIASES", "report_broken_lines",
           "MAX_BROKEN_FRACTION"]

#: At most this fraction of a JSON-lines log's lines may be broken mid-file (skipped with a warning);
#: more means the file is not JSON lines, or is damaged beyond a stray write, and is an error.
MAX_BROKEN_FRACTION = 0.1

#: The total reward under other names (first found wins; only when no canonical reward column).
REWARD_ALIASES = ("reward_mean", "mean_reward", "reward/mean", "reward/selected_mean", "train/reward",
                  "rewards/mean", "avg_reward", "score/mean")
#: Canonical reward columns (TRL ``reward``, verl ``critic/score/mean``, notebook ``Reward``).
_REWARD_CANONICAL = ("reward", "critic/score/mean", "Reward")
#: Other metrics under other names: canonical key (as TRL/verl spell it) -> aliases.
METRIC_ALIASES = {
    "grad_norm": ("actor_train/grad_norm", "grad-norm", "gradient_norm"),
    "kl": ("approx_kl", "kl_mean", "mean_kl"),
    "completion_length": ("avg_gen_tokens", "length/mean", "mean_completion_length", "completion_length_mean"),
    "entropy": ("entropy_mean", "policy_entropy"),
    "clipped_ratio": ("length/cap_hit_rate", "truncated_ratio", "clip_ratio_length"),
    # the share of samples whose advantage is 0: with group-normalised advantages, those of groups whose
    # rewards are all equal (real run 11, a ROLL-style pipeline)
    "frac_reward_zero_std": ("advantage/zero_rate",),
}
# Columns a format's own mapping already reads as the canonical metric (verl, TRL): no alias then.
_COVERED = {
    "grad_norm": {"actor/grad_norm"},
    "kl": {"actor/kl_loss", "kl"},
    "completion_length": {"response_length/mean", "completions/mean_length"},
    "entropy": {"actor/entropy", "actor/entropy_loss"},
    "clipped_ratio": {"response_length/clip_ratio", "completions/clipped_ratio"},
    "frac_reward_zero_std": set(),
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
    frame = _select_run(frame, source, notes, None if used else run)
    frame = _steps(frame, source, notes)
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
        raise DataError(f"{source}: a W&B export of {len(runs)} runs ({', '.join(sorted(runs))}); choose one "
                        f"with run='{sorted(runs)[0]}' (command line: --run '{sorted(runs)[0]}')")
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


def _select_run(frame: pd.DataFrame, source: str, notes: list[str], run: str | None) -> pd.DataFrame:
    step_col = next((c for c in _STEP_KNOWN + STEP_ALIASES if c in frame.columns), None)
    label = _label_column(frame, step_col) if step_col is not None and len(frame) > 1 else None
    if label is None:
        if run is not None:
            raise DataError(f"{source}: `run` {run!r} given, but the file holds a single run")
        return frame
    labels = [str(x) for x in pd.unique(frame[label])]
    counts = frame[label].astype(str).value_counts()
    shown = ", ".join(f"{lab!r} ({counts[lab]} rows)" for lab in labels)
    if run is None:
        raise DataError(f"{source}: the table holds {len(labels)} runs in column {label!r}: {shown}; choose one "
                        f"with run='{labels[0]}' (command line: --run '{labels[0]}')")
    want = run.split("=", 1)[1] if run.startswith(f"{label}=") else run
    if want not in labels:
        raise DataError(f"{source}: `run` {run!r} is not a label of column {label!r}; labels: {shown}")
    kept = frame.loc[frame[label].astype(str) == want].drop(columns=[label])
    _note(notes, f"read run {label}={want!r} ({len(kept)} of {len(frame)} rows; the others belong to "
                 f"{len(labels) - 1} other run(s))", warn=False)
    return kept


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
    if not present:
        alias = next((c for c in STEP_ALIASES if c in frame.columns), None)
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
