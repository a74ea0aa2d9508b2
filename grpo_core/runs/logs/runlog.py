"""The normalised run log: one table per split, and the record of what reading it did."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...errors import DataError
from ...validation import check_choice
from .keys import normalize_key
from .schema import LogWarning


@dataclass
class RunLog:
    """A training log as one normalised table per split.

    Attributes
    ----------
    train : pandas.DataFrame
        Training rows, one per optimizer step: index = step (int64, sorted, unique), columns the
        normalised names (``step`` is a column too). NaN where a step did not log a metric.
    eval : pandas.DataFrame
        Evaluation rows in the same shape (``eval_`` prefix stripped); empty if none.
    format : str
        The detected (or given) format, one of :data:`FORMATS`.
    reward_std_kind : str
        ``"group_mean_std"``, ``"batch_std"``, ``"unknown"`` or ``"mixed"`` (:mod:`grpo_core.runs.logs.trl`).
    source : str
        Where the log came from (the path, or ``"<records>"``).
    notes : list of str
        What was done: renamed columns, merged/sorted/dropped rows, how the era was decided.
    container : str
        ``"trainer_state"``, ``"json"``, ``"jsonl"``, ``"csv"`` or ``"records"``.
    columns : dict of str to str
        Original column name -> normalised name (per split: ``"eval_reward"`` -> ``"reward"``).
    summary : dict
        The final summary row of a TRL log (``train_runtime``, ``train_loss``...), if any.
    meta : dict
        Other facts read from the file (``trl_version``, ``trl_era``, ``trainer_state``'s
        ``global_step``, ``max_steps``, ``train_batch_size``...).
    logged_nan : dict
        ``{split: {normalised name: steps}}`` (int64 arrays, increasing): the steps at which the log
        *wrote* NaN for a metric (``nan`` in a CSV cell or a printed dict, ``NaN`` in JSON). In the
        tables a NaN cell also means "not logged at this step" (an empty cell, a key missing from a
        record: TRL logs the reward keys on generation steps only); this keeps the failures apart. A
        metric logged NaN on every step is here though its column was dropped from the table.
    dropped : dict
        ``{split: {normalised name: why}}``: the columns the file has but the tables do not, because
        they hold no number (``"every value is empty or NaN"``, ``"it holds no numbers"``), so that a check
        that needs one can say why rather than "no such column".
    """

    train: pd.DataFrame
    eval: pd.DataFrame
    format: str
    reward_std_kind: str = "unknown"
    source: str = "<records>"
    notes: list[str] = field(default_factory=list)
    container: str = "records"
    columns: dict[str, str] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    logged_nan: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    dropped: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def steps(self) -> np.ndarray:
        """Training steps, shape (T,), int64."""
        return self.train.index.to_numpy()

    @property
    def metrics(self) -> list[str]:
        """Normalised training columns other than ``step`` (in table order)."""
        return [c for c in self.train.columns if c != "step"]

    def has(self, metric: str, split: str = "train") -> bool:
        """True if ``metric`` (normalised or original name) has at least one finite value."""
        frame = self._frame(split)
        name = self._resolve(metric, frame, split, strict=False)
        if name is None:
            return False
        values = frame[name].to_numpy(dtype=float, na_value=np.nan)
        return bool(np.isfinite(values).any())

    def nonfinite_steps(self, metric: str, split: str = "train") -> np.ndarray:
        """The steps at which ``metric`` (a normalised name) was logged as NaN or infinite.

        Steps where the metric was not logged at all (an empty cell, a missing key) are not among
        them.

        Parameters
        ----------
        metric : str
            Normalised name (``"grad_norm"``, ``"reward"``).
        split : {"train", "eval"}
            Which table.

        Returns
        -------
        ndarray of int64, shape (n,)
            Increasing; empty when the metric has no such step or no column.

        Raises
        ------
        ParameterError
            Unknown ``split``.

        Examples
        --------
        >>> from grpo_core.runs.logs import from_records
        >>> log = from_records([{"step": 1, "reward": 0.1, "kl": 0.0}, {"step": 2, "kl": 0.1},
        ...                     {"step": 3, "reward": float("nan"), "kl": float("inf")}])
        >>> log.nonfinite_steps("reward"), log.nonfinite_steps("kl")
        (array([3]), array([3]))
        """
        frame = self._frame(split)
        nan = self.logged_nan.get(split, {}).get(metric, np.zeros(0, np.int64))
        if metric not in frame.columns:
            return nan.astype(np.int64)
        values = frame[metric].to_numpy(dtype=float, na_value=np.nan)
        inf = frame.index.to_numpy(dtype=np.int64)[np.isinf(values)]
        return np.union1d(nan, inf).astype(np.int64)

    def reward_functions(self) -> list[str]:
        """Names ``<f>`` of the per-reward-function columns ``reward/<f>``."""
        return [c[len("reward/"):] for c in self.train.columns if c.startswith("reward/")]

    def _frame(self, split: str) -> pd.DataFrame:
        split = check_choice("split", split, ("train", "eval"))
        return self.train if split == "train" else self.eval

    def _resolve(self, metric: str, frame: pd.DataFrame, split: str, strict: bool = True) -> str | None:
        if metric in frame.columns:
            return metric
        formats = (self.format, "trl", "notebook", "verl")
        # 'eval_reward' names the eval table's 'reward', never the training reward
        eval_key = split == "train" and any(normalize_key(metric, source_format=f)[1] == "eval" for f in formats)
        if not eval_key and metric in self.columns and self.columns[metric] in frame.columns:
            return self.columns[metric]
        for fmt in formats if not eval_key else ():
            name, _ = normalize_key(metric, source_format=fmt)
            if name in frame.columns:
                return name
        if not strict:
            return None
        available = [c for c in frame.columns if c != "step"]
        hint = (f" ({metric!r} is an evaluation metric: read the eval table, e.g. `fit --split eval "
                f"--metric {normalize_key(metric, source_format='trl')[0]}`)") if eval_key else ""
        # a column read but dropped for holding no numbers: say so rather than "no column"
        dropped = self.dropped.get(split, {})
        names = [metric, self.columns.get(metric)] + [normalize_key(metric, source_format=f)[0] for f in formats]
        why = next((dropped[n] for n in names if n in dropped), None)
        dropped_hint = f"; column {metric!r} was dropped: {why}" if why else ""
        raise DataError(
            f"no column {metric!r} in the {split} table of {self.source}{hint}{dropped_hint}; available: "
            + (", ".join(available) if available else "none")
        )

    def series(self, metric: str, *, split: str = "train", finite: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """One metric as arrays ``(steps, values)``: the steps that logged it.

        Parameters
        ----------
        metric : str
            A normalised name (``"reward"``, ``"reward/correctness"``) or the name as the log
            spells it (``"rewards/correctness/mean"``, ``"Training Loss"``, ``"critic/score/mean"``).
        split : {"train", "eval"}
            Which table.
        finite : bool
            Keep only the steps that logged a finite value (default): steps that did not log the
            metric are left out, and a :class:`LogWarning` says how many logged NaN
            (:attr:`logged_nan`) or infinite values were dropped. ``False``: every row of the table,
            NaN where the metric was not logged or logged NaN.

        Returns
        -------
        steps : ndarray of int64, shape (n,)
            Optimizer steps, increasing.
        values : ndarray of float64, shape (n,)

        Raises
        ------
        DataError
            If the table has no such column; the message lists the available ones.

        Examples
        --------
        >>> from grpo_core.runs.logs import from_records
        >>> log = from_records([{"step": 1, "reward": 0.1}, {"step": 2, "reward": 0.3}])
        >>> log.series("reward")
        (array([1, 2]), array([0.1, 0.3]))
        """
        frame = self._frame(split)
        name = self._resolve(metric, frame, split)
        steps = frame.index.to_numpy(dtype=np.int64)
        values = frame[name].to_numpy(dtype=float, na_value=np.nan)
        if finite:
            # steps that did not log the metric are left out quietly; logged NaN and infinities are said
            nan = np.isnan(values) & np.isin(steps, self.logged_nan.get(split, {}).get(name, ()))
            inf = np.isinf(values)
            logged = ~np.isnan(values) | nan
            if nan.any() or inf.any():
                parts = []
                if nan.any():
                    parts.append(f"{int(nan.sum())} NaN (first at step {int(steps[nan][0])})")
                if inf.any():
                    parts.append(f"{int(inf.sum())} infinite (first at step {int(steps[inf][0])})")
                warnings.warn(
                    f"{self.source}: {name!r} ({split}): dropped {' and '.join(parts)} of the {int(logged.sum())} "
                    "logged steps",
                    LogWarning, stacklevel=2,
                )
            keep = np.isfinite(values)
            steps, values = steps[keep], values[keep]
        return steps, values

    def to_records(self, split: str = "train") -> list[dict[str, Any]]:
        """The table as a list of dicts (NaN cells left out), in step order.

        Parameters
        ----------
        split : {"train", "eval"}, default "train"
            Which table.

        Returns
        -------
        list of dict
            One dict per row: ``step`` as ``int``, every other non-missing cell as ``float``
            (normalised column names). Empty for an empty table.

        Raises
        ------
        ParameterError
            Unknown ``split``.

        Examples
        --------
        >>> from grpo_core.runs.logs import from_records
        >>> from_records([{"step": 1, "reward": 0.5}, {"step": 2, "loss": 0.1}]).to_records()
        [{'step': 1, 'reward': 0.5}, {'step': 2, 'loss': 0.1}]
        """
        frame = self._frame(split)
        cols = list(frame.columns)
        out = []
        for row in frame.itertuples(index=False, name=None):
            out.append({c: (int(v) if c == "step" else float(v)) for c, v in zip(cols, row) if pd.notna(v)})
        return out

    def describe(self) -> str:
        """Short human-readable summary (format, steps, columns, reward_std kind, notes)."""
        lines = [
            f"{self.source}: {self.format} ({self.container}), {len(self.train)} training steps"
            + (f" [{self.steps[0]}..{self.steps[-1]}]" if len(self.train) else "")
            + f", {len(self.eval)} eval rows",
            f"columns: {', '.join(self.metrics)}",
            f"reward_std: {self.reward_std_kind}",
        ]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)
