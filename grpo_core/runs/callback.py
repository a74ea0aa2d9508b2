"""A live hook for TRL training: normalised metrics as they come, findings and forecast every N steps.

:class:`DynamicsCallback` is a ``transformers.TrainerCallback``. Give it to any ``Trainer`` (TRL's
``GRPOTrainer`` in particular) and it

* appends every log entry, normalised by :func:`grpo_core.runs.logs.normalize_record`, as one JSON line
  to ``<output_dir>/metrics.jsonl`` the moment the trainer logs it (``logging_steps=1`` gives one
  training line per optimizer step; evaluation entries are lines of their own with
  ``"split": "eval"``). The file is the ``"grpo_dynamics"`` format of
  :func:`grpo_core.runs.logs.read_log`: the book, ``grpo-dynamics diagnose`` and ``fit`` read it;
* every ``every`` optimizer steps runs :func:`grpo_core.runs.diagnostics.diagnose` on what has been
  logged so far and prints the verdict, each finding and the plateau forecast (and keeps the
  result in :attr:`DynamicsCallback.last_diagnosis`);
* at the end of training writes ``<output_dir>/diagnosis.json`` (the final diagnosis).

Resuming
--------
The file is append-only while a run trains. When training resumes from a checkpoint at step k
(``trainer.train(resume_from_checkpoint=...)``), the lines the killed run wrote *after* step k
describe steps the resumed run will redo; they are moved to ``metrics.discarded.jsonl`` (kept,
never lost) and ``metrics.jsonl`` is rewritten once with the lines up to step k. The result is a
file with every step exactly once: no gap, no duplicate. Only the main process writes (several
GPUs under ``accelerate launch`` log the same gathered values).

Cost
----
Writing a line costs microseconds. The periodic diagnosis costs more (a few law fits; the forecast
band by bootstrap), so it runs only every ``every`` steps, with a small bootstrap
(``n_boot=20``); ``bench/bench_llm.py`` measures the total against the same run without the
callback.

References
----------
Book chapters "Reading a training log" (the failure modes and the TRL log keys) and "GRPO on a
language model".
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, TextIO

from ..validation import check_integer
from .logs import from_records, normalize_record

try:  # transformers is an optional dependency of grpo_core (the ``llm`` extra)
    from transformers import TrainerCallback as _Base
except ImportError:  # pragma: no cover - exercised only without transformers
    _Base = object

__all__ = ["DynamicsCallback", "METRICS_FILE", "DISCARDED_FILE", "DIAGNOSIS_FILE", "read_metrics_lines"]

#: Name of the per-step metrics file in the output folder.
METRICS_FILE = "metrics.jsonl"
#: Where the lines past a resumed checkpoint go.
DISCARDED_FILE = "metrics.discarded.jsonl"
#: The final diagnosis (JSON).
DIAGNOSIS_FILE = "diagnosis.json"


def read_metrics_lines(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file (an incomplete last line, from a kill mid-write,
    is skipped).

    Parameters
    ----------
    path : str or path
        The file (usually :attr:`DynamicsCallback.path`).

    Returns
    -------
    list of dict
        One dict per non-blank line, in file order, as written (normalised by
        :func:`grpo_core.runs.logs.normalize_record`: ``step``, ``split`` and the metrics). Empty when
        the file does not exist.

    Raises
    ------
    grpo_core.errors.DataError
        A broken line that is not the last one.

    Warns
    -----
    UserWarning
        When a broken last line is dropped.
    """
    from ..errors import DataError

    p = Path(path)
    if not p.exists():
        return []
    lines = p.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                warnings.warn(f"{p}: dropped an incomplete last line (a run killed mid-write)", stacklevel=2)
                continue
            raise DataError(f"{p}: line {i + 1} is not valid JSON") from None
    return out


class DynamicsCallback(_Base):
    """TRL/transformers callback: normalised per-step metrics, periodic diagnosis and forecast.

    Parameters
    ----------
    output_dir : str or path
        Folder of ``metrics.jsonl`` (created if missing); usually the run folder.
    every : int
        Diagnose and print every ``every`` optimizer steps, >= 1 (0 disables the periodic
        diagnosis; the lines are still written and the final diagnosis still made).
    group_size : int, optional
        G for the zero-spread expectation; default: the trainer's ``num_generations``.
    num_prompts : int, optional
        Prompts per optimizer step; default from the trainer's arguments
        (``per_device_train_batch_size * world_size * gradient_accumulation_steps / G``).
    binary_reward : bool, optional
        Whether the reward is 0/1 (default: decided by :func:`grpo_core.runs.diagnostics.diagnose`).
    eval_metric : str, optional
        Evaluation column for the train-eval decoupling check (default: chosen by ``diagnose``).
    n_boot : int
        Bootstrap replicates of the forecast band in the periodic diagnosis (0: delta method).
    min_steps : int
        No diagnosis before this many training lines (a forecast needs a curve).
    stream : file-like, optional
        Where to print (default ``sys.stdout``).
    quiet : bool
        Do not print (the diagnosis is still made and kept).

    Attributes
    ----------
    path : pathlib.Path
        The metrics file.
    records : list of dict
        Every normalised record of this run so far (those kept on resume included).
    last_diagnosis : grpo_core.runs.diagnostics.Diagnosis or None
    diagnosis_seconds : float
        Wall time spent in periodic diagnoses (for overhead measurements).
    write_seconds : float
        Wall time spent normalising and writing lines.

    Raises
    ------
    ParameterError
        Bad ``every``, ``n_boot``, ``min_steps`` or ``group_size``.

    Examples
    --------
    >>> import tempfile
    >>> from types import SimpleNamespace
    >>> folder = tempfile.mkdtemp()
    >>> cb = DynamicsCallback(folder, every=0, quiet=True)
    >>> state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    >>> args = SimpleNamespace(num_generations=4, per_device_train_batch_size=16, world_size=1,
    ...                        gradient_accumulation_steps=1)
    >>> cb.on_train_begin(args, state, None)
    >>> state.global_step = 1
    >>> cb.on_log(args, state, None, logs={"loss": 0.0, "reward": 0.25, "rewards/acc/mean": 0.25})
    >>> read_metrics_lines(cb.path)[0]["reward/acc"]
    0.25
    """

    def __init__(self, output_dir, every: int = 50, *, group_size: int | None = None,
                 num_prompts: int | None = None, binary_reward: bool | None = None,
                 eval_metric: str | None = None, n_boot: int = 20, min_steps: int = 30,
                 stream: TextIO | None = None, quiet: bool = False):
        self.output_dir = Path(output_dir)
        self.every = check_integer("every", every, low=0)
        self.n_boot = check_integer("n_boot", n_boot, low=0)
        self.min_steps = check_integer("min_steps", min_steps, low=1)
        self.group_size = None if group_size is None else check_integer("group_size", group_size, low=2)
        self.num_prompts = None if num_prompts is None else check_integer("num_prompts", num_prompts, low=1)
        self.binary_reward = binary_reward
        self.eval_metric = eval_metric
        self.stream = stream
        self.quiet = bool(quiet)
        self.path = self.output_dir / METRICS_FILE
        self.records: list[dict[str, Any]] = []
        self.last_diagnosis = None
        self.diagnosis_seconds = 0.0
        self.write_seconds = 0.0
        self._file = None
        self._last_diagnosed = -1
        self._trl_version = _trl_version()

    # -- helpers ------------------------------------------------------------------------------
    def _main(self, state) -> bool:
        return bool(getattr(state, "is_world_process_zero", True))

    def _print(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream or sys.stdout, flush=True)

    def _open(self, resume_step: int) -> None:
        """Keep the lines up to ``resume_step``; move later ones to the discarded file."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        old = read_metrics_lines(self.path)
        keep = [r for r in old if int(r.get("step", 0)) <= resume_step]
        drop = [r for r in old if int(r.get("step", 0)) > resume_step]
        if drop:
            with open(self.output_dir / DISCARDED_FILE, "a") as fh:
                for r in drop:
                    fh.write(json.dumps(r) + "\n")
            tmp = self.path.with_suffix(".jsonl.tmp")
            with open(tmp, "w") as fh:
                for r in keep:
                    fh.write(json.dumps(r) + "\n")
            os.replace(tmp, self.path)
            self._print(f"[dynamics] resumed at step {resume_step}: moved {len(drop)} later line(s) of "
                        f"{self.path.name} to {DISCARDED_FILE}")
        elif len(keep) != len(old):  # an incomplete last line was dropped by the reader
            tmp = self.path.with_suffix(".jsonl.tmp")
            with open(tmp, "w") as fh:
                for r in keep:
                    fh.write(json.dumps(r) + "\n")
            os.replace(tmp, self.path)
        self.records = keep
        self._file = open(self.path, "a")  # noqa: SIM115 - closed in on_train_end

    # -- TrainerCallback events --------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):
        """Open the metrics file (trimming it to the resumed step) and read G and B from ``args``."""
        if self.group_size is None:
            g = getattr(args, "num_generations", None)
            self.group_size = int(g) if g else None
        if self.num_prompts is None and self.group_size:
            per_step = (int(getattr(args, "per_device_train_batch_size", 0) or 0)
                        * int(getattr(args, "world_size", 1) or 1)
                        * int(getattr(args, "gradient_accumulation_steps", 1) or 1))
            if per_step and per_step % self.group_size == 0:
                self.num_prompts = per_step // self.group_size
        if self._main(state):
            self._open(int(getattr(state, "global_step", 0) or 0))
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        """Normalise the entry and append it as one line; diagnose every ``every`` steps.

        Standard ``transformers.TrainerCallback`` event, called on every ``trainer.log``:
        ``args`` (the training arguments, unused here), ``state`` (``global_step`` gives the
        line's step; only the main process, ``is_world_process_zero``, writes), ``control``
        (returned unchanged), ``logs`` (the logged dict; nothing is done when empty or ``None``).
        The periodic diagnosis runs on training lines whose step is a multiple of ``every``, once
        per step; it prints (unless ``quiet``) and sets :attr:`last_diagnosis`.
        """
        if not logs or not self._main(state):
            return control
        t0 = time.perf_counter()
        step = int(state.global_step)
        record = normalize_record({**logs, "step": step}, source_format="trl", trl_version=self._trl_version)
        if self._file is None:  # on_train_begin was not called (a bare trainer.log)
            self._open(step)
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        self.records.append(record)
        self.write_seconds += time.perf_counter() - t0
        if (self.every and record["split"] == "train" and step % self.every == 0
                and step != self._last_diagnosed):
            self._last_diagnosed = step
            self.diagnose_now(print_it=True)
        return control

    def on_train_end(self, args, state, control, **kwargs):
        """Close the file; write the final diagnosis to ``diagnosis.json``.

        Standard ``transformers.TrainerCallback`` event (``args``, ``state``, ``control``; only the
        main process acts; ``control`` is returned unchanged). The final diagnosis uses at least
        100 bootstrap replicates and needs only 2 training lines; nothing is written when it cannot
        be made.
        """
        if not self._main(state):
            return control
        if self._file is not None:
            self._file.close()
            self._file = None
        diagnosis = self.diagnose_now(print_it=False, n_boot=max(self.n_boot, 100), min_steps=2)
        if diagnosis is not None:
            (self.output_dir / DIAGNOSIS_FILE).write_text(json.dumps(diagnosis.to_dict(), indent=1))
        return control

    # -- diagnosis ------------------------------------------------------------------------------
    def diagnose_now(self, *, print_it: bool = True, n_boot: int | None = None, min_steps: int | None = None):
        """Diagnose the records so far; returns the :class:`~grpo_core.runs.diagnostics.Diagnosis`
        (or ``None`` with fewer than ``min_steps`` training lines, default :attr:`min_steps`, or
        when the log cannot be diagnosed; the reason is printed)."""
        from ..errors import GrpoError
        from .diagnostics import diagnose

        train = [r for r in self.records if r.get("split") == "train" and r.get("reward") is not None]
        if len(train) < (self.min_steps if min_steps is None else min_steps):
            return None
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                log = from_records(self.records, format="grpo_dynamics", source=str(self.path))
                diagnosis = diagnose(log, group_size=self.group_size, num_prompts=self.num_prompts,
                                     binary_reward=self.binary_reward, eval_metric=self.eval_metric,
                                     n_boot=self.n_boot if n_boot is None else n_boot)
        except GrpoError as exc:
            self._print(f"[dynamics] no diagnosis at step {train[-1].get('step')}: {exc}")
            self.diagnosis_seconds += time.perf_counter() - t0
            return None
        self.last_diagnosis = diagnosis
        self.diagnosis_seconds += time.perf_counter() - t0
        if print_it:
            self._print("[dynamics] " + diagnosis.summary().replace("\n", "\n[dynamics] "))
        return diagnosis


def _trl_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("trl")
    except Exception:  # noqa: BLE001 - TRL not installed: the records just carry no version
        return None

