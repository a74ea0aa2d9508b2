"""A live hook for TRL training: normalised metrics as they come, findings and forecast every N steps.

:class:`DynamicsCallback` is a ``transformers.TrainerCallback``. Give it to any ``Trainer`` (TRL's
``GRPOTrainer`` in particular) and it

* appends every log entry, normalised by :func:`grpo_core.runs.logs.normalize_record`, as one JSON line
  to ``<output_dir>/metrics.jsonl`` the moment the trainer logs it (``logging_steps=1`` gives one
  training line per optimizer step; evaluation entries are lines of their own with
  ``"split": "eval"``). The file is the ``"grpo_dynamics"`` format of
  :func:`grpo_core.runs.logs.read_log`: the book, ``grpo-dynamics diagnose`` and ``fit`` read it;
* every ``every`` optimizer steps runs :func:`grpo_core.runs.diagnostics.diagnose` (exactly the checks
  of ``grpo-dynamics diagnose``, whatever modes it has) on what has been logged so far, binned to
  at most ``max_points`` training rows so that the cost stays flat in a long run, and keeps the
  result in :attr:`DynamicsCallback.last_diagnosis`;
* prints one line the first time each failure mode reaches a printed severity (``print_severities``,
  default warning and critical), and once more if it escalates; never the same line every check;
* records the end-of-run forecast with its step at each diagnosis (:attr:`DynamicsCallback.forecasts`)
  and prints it on one line;
* records the reward's time scale (``eta*K`` per step, ``K`` and t90 with their intervals, or why the
  log gives none) at each diagnosis (:attr:`DynamicsCallback.curvatures`), under the conventions of
  the trainer's arguments (optimizer, betas, ``num_iterations``), and prints it the first time one is
  read (a time scale, not a stability verdict: a reward curve does not give one,
  :data:`grpo_core.runs.curvature.NO_STABILITY_VERDICT`);
* with ``stop_on_critical=True`` stops training at the first critical finding
  (``control.should_training_stop = True``): the finding is printed and written, with the
  diagnosis, to ``<output_dir>/dynamics_stop.json``;
* keeps the alerts and the forecasts in ``<output_dir>/dynamics_live.json`` (rewritten at each
  diagnosis) and at the end of training writes ``<output_dir>/diagnosis.json`` (the final diagnosis).

Against the closest peer
------------------------
The TRL callback of Microsoft's post-training toolkit checks a few YAML heuristics (group reward
std < 0.01 over 20 steps, importance ratio < 0.5, entropy down 50% in 30 steps, reward/quality
divergence) and can stop on a critical one. Here the same questions are answered by the tested
checks of :mod:`grpo_core.runs.diagnostics` with their documented thresholds (zero-spread groups
against the 0/1-reward expectation, policy concentration, unbounded growth and oscillation,
train-eval decoupling, and any mode added there later), plus the end-of-run forecast.

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
Writing a line costs microseconds. The periodic diagnosis costs more (a few law fits; the law fit's
band by bootstrap), so it runs only every ``every`` steps, with a small bootstrap
(``n_boot=20``) on a log binned to ``max_points`` (2000) training rows: bin means of every numeric
metric, so NaN and inf survive the binning; ``bench/bench_llm.py`` measures the total against the
same run without the callback.

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

from ..validation import check_integer, check_n_boot
from .logs import from_records, normalize_record

try:  # transformers is an optional dependency of grpo_core (the ``llm`` extra)
    from transformers import TrainerCallback as _Base
except ImportError:  # pragma: no cover - exercised only without transformers
    _Base = object

__all__ = ["DynamicsCallback", "METRICS_FILE", "DISCARDED_FILE", "DIAGNOSIS_FILE", "STOP_FILE", "LIVE_FILE",
           "read_metrics_lines", "binned_records"]

#: Name of the per-step metrics file in the output folder.
METRICS_FILE = "metrics.jsonl"
#: Where the lines past a resumed checkpoint go.
DISCARDED_FILE = "metrics.discarded.jsonl"
#: The final diagnosis (JSON).
DIAGNOSIS_FILE = "diagnosis.json"
#: Written when ``stop_on_critical`` stops training: the step, the finding, the diagnosis (JSON).
STOP_FILE = "dynamics_stop.json"
#: The alerts and forecasts of the periodic diagnoses so far (JSON, rewritten at each one).
LIVE_FILE = "dynamics_live.json"
_SEVERITIES = ("info", "warning", "critical")


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


def binned_records(records: list[dict[str, Any]], max_points: int) -> list[dict[str, Any]]:
    """Training records binned to at most ``max_points`` (others kept as they are).

    Parameters
    ----------
    records : list of dict
        Normalised records (:func:`grpo_core.runs.logs.normalize_record`), in step order.
    max_points : int
        Most training rows to return, >= 8.

    Returns
    -------
    list of dict
        The records unchanged when there are at most ``max_points`` training rows. Otherwise
        consecutive training rows are merged ``k = 2**j`` at a time (the smallest such ``k`` that
        fits): each numeric metric is the mean of the values present in the bin (a NaN or inf in a
        bin stays in its mean), the step and any other field is the bin's last; the eval and
        summary records follow unchanged. The same bins as :class:`DynamicsCallback` keeps as it
        goes.

    Raises
    ------
    ParameterError
        ``max_points`` below 8.
    """
    binner = _Binner(check_integer("max_points", max_points, low=8))
    others = []
    for r in records:
        if r.get("split", "train") == "train":
            binner.add(r)
        else:
            others.append(r)
    return binner.rows() + others


class _Binner:
    """Running bins of training records: ``2**j`` rows each, halved in number when full (O(1) a row)."""

    def __init__(self, max_points: int):
        self.max_points = max_points
        self.width = 1
        self.bins: list[tuple[dict[str, float], dict[str, int], dict[str, Any]]] = []
        self._open: tuple[dict[str, float], dict[str, int], dict[str, Any]] | None = None
        self._n_open = 0

    @staticmethod
    def _merge(into, row_sums, row_counts, last):
        sums, counts, _ = into
        for key, v in row_sums.items():
            sums[key] = sums.get(key, 0.0) + v
            counts[key] = counts.get(key, 0) + row_counts[key]
        return sums, counts, last

    def add(self, record: dict[str, Any]) -> None:
        nums = {k: float(v) for k, v in record.items()
                if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}
        other = {k: v for k, v in record.items() if k not in nums}
        if self._open is None:
            self._open = ({}, {}, other)
        self._open = self._merge(self._open, nums, dict.fromkeys(nums, 1), other)
        self._n_open += 1
        if self._n_open == self.width:
            self.bins.append(self._open)
            self._open, self._n_open = None, 0
            if len(self.bins) >= self.max_points:  # full (with room for the open bin): halve
                odd = self.bins[-1] if len(self.bins) % 2 else None
                self.bins = [self._merge(({**a[0]}, {**a[1]}, a[2]), b[0], b[1], b[2])
                             for a, b in zip(self.bins[0::2], self.bins[1::2])]
                self.width *= 2
                if odd is not None:  # half a bin of the new width: fill it up
                    self._open, self._n_open = odd, self.width // 2

    def rows(self) -> list[dict[str, Any]]:
        bins = self.bins + ([self._open] if self._open is not None else [])
        return [{**last, **{k: sums[k] / counts[k] for k in sums}} for sums, counts, last in bins]


class DynamicsCallback(_Base):
    """TRL/transformers callback: normalised per-step metrics, live findings, forecast, stop on critical.

    Parameters
    ----------
    output_dir : str or path
        Folder of ``metrics.jsonl`` (created if missing); usually the run folder.
    every : int
        Diagnose every ``every`` optimizer steps, >= 0 (0 disables the periodic diagnosis, the
        alerts and the stop; the lines are still written and the final diagnosis still made).
    stop_on_critical : bool
        Stop training (``control.should_training_stop = True``) at the first periodic diagnosis
        with a critical finding; the finding is printed (whatever ``print_severities``) and
        written to ``STOP_FILE`` with the step and the diagnosis. Default False (alerts only).
    print_severities : sequence of str
        Severities whose first appearance in a mode prints an alert line (default
        ``("warning", "critical")``; add ``"info"`` for everything, ``()`` for none). A mode is
        printed once, and again only when its severity rises.
    print_forecast : bool
        Print the end-of-run forecast (two lines) at each periodic diagnosis that makes one.
    max_points : int
        Training rows the periodic diagnosis sees at most, >= 8 (2000): longer runs are binned
        (:func:`binned_records`), so a check costs the same at step 2,000 and step 200,000.
    correctness : list of str, optional
        Reward functions that measure correctness (as ``diagnose --correctness``).
    group_size : int, optional
        G for the zero-spread expectation; default: the trainer's ``num_generations``.
    num_prompts : int, optional
        Prompts per optimizer step; default from the trainer's arguments
        (``per_device_train_batch_size * world_size * gradient_accumulation_steps / G``).
    binary_reward : bool, optional
        Whether the reward is 0/1 (default: decided by :func:`grpo_core.runs.diagnostics.diagnose`).
    reward_range : (float, float), optional
        The least and the most a step's mean reward can be (as ``diagnose --reward-range``): the forecast
        is shown within it. A logged reward outside it makes the periodic diagnosis say so instead.
    eval_metric : str, optional
        Evaluation column for the train-eval decoupling check (default: chosen by ``diagnose``).
    n_boot : int
        Bootstrap replicates of the law fit's bands in the periodic diagnosis (0: delta method).
    min_steps : int
        No diagnosis before this many training lines (a forecast needs a curve).
    stream : file-like, optional
        Where to print (default ``sys.stdout``).
    quiet : bool
        Do not print (the diagnosis is still made and kept).
    settings : RunSettings or path, optional
        The run's settings for the implied curvature (default: read from the trainer's arguments at
        ``on_train_begin``: optimizer, betas, ``num_iterations``, ``steps_per_generation``, ``beta``).
    print_curvature : bool
        Print the time-scale line (:attr:`Diagnosis.implied_curvature
        <grpo_core.runs.diagnostics.Diagnosis.implied_curvature>`: ``eta*K``, ``K`` and t90 with their
        intervals) and why it is no stability verdict, the first time a diagnosis reads a time scale.

    Attributes
    ----------
    path : pathlib.Path
        The metrics file.
    alerts : list of dict
        One per printed-or-not first appearance (or escalation) of a mode: ``step``, ``mode``,
        ``severity``, ``onset``, ``steps``, ``message`` (every severity, ``info`` included).
    forecasts : list of dict
        The forecast of each periodic diagnosis that made one (the one ``diagnose`` prints): ``step``
        (the last logged step); the end-of-run forecast's (:func:`~grpo_core.runs.forecast.forecast_end`)
        ``final``, ``final_low``, ``final_high`` (the mean reward over the last 20% of the run up to
        ``horizon``: the trainer's ``max_steps`` when known, ``horizon_kind`` ``"planned"``, else
        twice the last step, ``"assumed"``: the run taken as half done), ``method``, ``fraction_seen``,
        ``calibration``, ``forecast`` (the line it prints), ``now`` (the current level, the forecast's
        point) and ``now_steps`` (the steps it averages); and ``end_of_run`` (``horizon``, ``final``,
        ``final_low``, ``final_high``) when ``max_steps`` is known. No forecast before 20% or after 80% of
        ``max_steps`` (the band is calibrated between). The law that describes the curve so far, as before: ``plateau``,
        ``plateau_low``, ``plateau_high``, ``law``, ``current`` (the mean of the last 50 logged
        rows), ``reached``, ``t90``, ``reliable`` (``None`` where the law fit failed).
    max_steps : int or None
        The trainer's planned steps (``state.max_steps`` at ``on_train_begin``).
    curvatures : list of dict
        The reward's time scale at each periodic diagnosis: ``step``, ``a``, ``a_lo``, ``a_hi`` (``eta*K`` per
        step and its interval), ``K``, ``lo``, ``hi`` (per unit learning rate), ``t90``, ``t90_lo``,
        ``t90_hi`` (in ``clock_unit``), ``clock_unit``, ``reason`` (None when a time scale was read).
    stopped : dict or None
        ``{"step", "finding"}`` when ``stop_on_critical`` stopped training.
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
        Bad ``every``, ``n_boot``, ``min_steps``, ``max_points``, ``group_size`` or an unknown
        severity in ``print_severities``.

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
                 stream: TextIO | None = None, quiet: bool = False, stop_on_critical: bool = False,
                 print_severities: tuple[str, ...] | list[str] = ("warning", "critical"),
                 print_forecast: bool = True, max_points: int = 2000, correctness: list[str] | None = None,
                 settings: Any = None, print_curvature: bool = True,
                 reward_range: tuple[float, float] | None = None):
        from ..validation import check_flag, check_names, check_path
        from .forecast import check_reward_range
        from .settings import RunSettings

        self.output_dir = check_path("output_dir", output_dir, what="a folder path")
        if settings is not None and not isinstance(settings, RunSettings):
            check_path("settings", settings, what="a RunSettings or a path to the run's config JSON")
        for flag, value in (("stop_on_critical", stop_on_critical), ("print_forecast", print_forecast),
                            ("quiet", quiet), ("print_curvature", print_curvature)):
            check_flag(flag, value)
        if binary_reward is not None:
            check_flag("binary_reward", binary_reward)
        if correctness is not None:
            correctness = list(check_names("correctness", correctness))
        self.every = check_integer("every", every, low=0)
        self.n_boot = check_n_boot("n_boot", n_boot)
        self.min_steps = check_integer("min_steps", min_steps, low=1)
        self.group_size = None if group_size is None else check_integer("group_size", group_size, low=2)
        self.num_prompts = None if num_prompts is None else check_integer("num_prompts", num_prompts, low=1)
        self.max_points = check_integer("max_points", max_points, low=8)
        self.print_severities = check_names("print_severities", print_severities, choices=_SEVERITIES)
        self.stop_on_critical = bool(stop_on_critical)
        self.print_forecast = bool(print_forecast)
        self.correctness = correctness
        self.alerts: list[dict[str, Any]] = []
        self.forecasts: list[dict[str, Any]] = []
        self._no_forecast: str | None = None  # the reason last printed for no forecast
        self.curvatures: list[dict[str, Any]] = []
        self.settings = settings
        self.print_curvature = bool(print_curvature)
        self._curvature_printed = False
        self.stopped: dict[str, Any] | None = None
        self._seen: dict[str, int] = {}
        self._binner = _Binner(self.max_points)
        self._others: list[dict[str, Any]] = []
        self.binary_reward = binary_reward
        self.reward_range = check_reward_range(reward_range)
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
        self.max_steps: int | None = None

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
        self._binner, self._others = _Binner(self.max_points), []
        for r in keep:
            self._keep(r)
        self._file = open(self.path, "a")  # noqa: SIM115 - closed in on_train_end

    def _keep(self, record: dict[str, Any]) -> None:
        if record.get("split", "train") == "train":
            self._binner.add(record)
        else:
            self._others.append(record)

    def _react(self, diagnosis, step: int, control) -> None:
        """Alerts for modes new (or worse) since the last check, the forecast, the stop."""
        from .diagnostics.findings import new_findings

        for f in new_findings(diagnosis.findings, self._seen):
            self.alerts.append({"step": step, "mode": f.mode, "severity": f.severity, "onset": f.onset,
                                "steps": list(f.steps), "message": f.message})
            if f.severity in self.print_severities:
                onset = f", onset step {f.onset}" if f.onset is not None else ""
                self._print(f"[dynamics] step {step}: {f.severity} {f.mode} (steps {f.steps[0]}-{f.steps[1]}"
                            f"{onset}): {f.message}")
        fc = diagnosis.forecast
        if fc is not None:
            self._no_forecast = None
            self.forecasts.append({"step": step, **fc.to_record()})
            if self.print_forecast:
                self._print(f"[dynamics] step {step}: " + f"\n[dynamics] step {step}: ".join(fc.lines()))
        else:  # why not, once per reason (too early for the band, too few points ...)
            why = next((n for n in diagnosis.notes if n.startswith("no end-of-run forecast")), None)
            if why is not None and why != self._no_forecast and self.print_forecast:
                self._print(f"[dynamics] step {step}: {why}")
            self._no_forecast = why
        self._react_curvature(diagnosis.implied_curvature, step)
        critical = next((f for f in diagnosis.findings if f.severity == "critical"), None)
        if self.stop_on_critical and critical is not None and self.stopped is None:
            self.stopped = {"step": step, "finding": critical.to_dict()}
            if control is not None:
                control.should_training_stop = True
            self._print(f"[dynamics] step {step}: stopping training (stop_on_critical): {critical.mode}: "
                        f"{critical.message}")
            _write_json(self.output_dir / STOP_FILE, {**self.stopped, "diagnosis": diagnosis.to_dict()})
        _write_json(self.output_dir / LIVE_FILE, {"alerts": self.alerts, "forecasts": self.forecasts,
                                                  "curvatures": self.curvatures, "stopped": self.stopped})

    def _react_curvature(self, ic: dict[str, Any] | None, step: int) -> None:
        """Record the reward's time scale; print it (and why it is no stability verdict) when first read."""
        if ic is None:
            return
        keep = ("a", "a_lo", "a_hi", "K", "lo", "hi", "t90", "t90_lo", "t90_hi", "clock_unit", "reason")
        self.curvatures.append({"step": step, **{k: ic.get(k) for k in keep}})
        if ic.get("reason") is None and self.print_curvature and not self._curvature_printed:
            self._curvature_printed = True
            self._print(f"[dynamics] step {step}: {ic['line']}\n[dynamics] {ic['no_stability_verdict']}")

    # -- TrainerCallback events --------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):
        """Open the metrics file (trimming it to the resumed step) and read G, B and the settings from ``args``."""
        if self.group_size is None:
            g = getattr(args, "num_generations", None)
            self.group_size = int(g) if g else None
        if self.num_prompts is None and self.group_size:
            per_step = (int(getattr(args, "per_device_train_batch_size", 0) or 0)
                        * int(getattr(args, "world_size", 1) or 1)
                        * int(getattr(args, "gradient_accumulation_steps", 1) or 1))
            if per_step and per_step % self.group_size == 0:
                self.num_prompts = per_step // self.group_size
        if self.settings is None and args is not None:
            from ..errors import GrpoError
            from .settings import settings_from_mapping

            try:
                self.settings = settings_from_mapping(args)
            except (GrpoError, TypeError):  # arguments without the config's fields: the diagnosis looks beside
                self.settings = None
        self.max_steps = int(getattr(state, "max_steps", 0) or 0) or None
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
        self._keep(record)
        self.write_seconds += time.perf_counter() - t0
        if (self.every and record["split"] == "train" and step % self.every == 0
                and step != self._last_diagnosed):
            self._last_diagnosed = step
            diagnosis = self.diagnose_now(print_it=False)
            if diagnosis is not None:
                self._react(diagnosis, step, control)
        return control

    def close(self) -> None:
        """Close ``metrics.jsonl`` (idempotent; :meth:`on_train_end` calls it)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def on_train_end(self, args, state, control, **kwargs):
        """Close the file; write the final diagnosis to ``diagnosis.json``.

        Standard ``transformers.TrainerCallback`` event (``args``, ``state``, ``control``; only the
        main process acts; ``control`` is returned unchanged). The final diagnosis uses at least
        100 bootstrap replicates and needs only 2 training lines; nothing is written when it cannot
        be made.
        """
        if not self._main(state):
            return control
        self.close()
        diagnosis = self.diagnose_now(print_it=False, n_boot=max(self.n_boot, 100), min_steps=2, binned=False)
        if diagnosis is not None:
            (self.output_dir / DIAGNOSIS_FILE).write_text(json.dumps(diagnosis.to_dict(), indent=1))
        return control

    # -- diagnosis ------------------------------------------------------------------------------
    def diagnose_now(self, *, print_it: bool = True, n_boot: int | None = None, min_steps: int | None = None,
                     binned: bool = True):
        """Diagnose the records so far; returns the :class:`~grpo_core.runs.diagnostics.Diagnosis`
        (or ``None`` with fewer than ``min_steps`` training lines, default :attr:`min_steps`, or
        when the log cannot be diagnosed; the reason is printed).

        ``binned`` (default) diagnoses the training rows binned to :attr:`max_points`
        (:func:`binned_records`; the records themselves when there are fewer); ``False`` every
        record, as ``grpo-dynamics diagnose`` reads the file. ``print_it`` prints the diagnosis'
        summary."""
        from ..errors import GrpoError
        from .diagnostics import diagnose

        train = [r for r in self.records if r.get("split") == "train" and r.get("reward") is not None]
        if len(train) < (self.min_steps if min_steps is None else min_steps):
            return None
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows = self._binner.rows() + self._others if binned else self.records
                log = from_records(rows, format="grpo_dynamics", source=str(self.path))
                if self.max_steps:  # the planned end: the forecast of the run's end (forecast_end)
                    log.meta["max_steps"] = self.max_steps
                diagnosis = diagnose(log, group_size=self.group_size, num_prompts=self.num_prompts,
                                     binary_reward=self.binary_reward, reward_range=self.reward_range,
                                     eval_metric=self.eval_metric,
                                     correctness=self.correctness, settings=self.settings,
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


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    """Write ``obj`` (made JSON-ready) atomically: a reader never sees half a file."""
    from .._json import json_ready

    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(json_ready(obj), indent=1))
    os.replace(tmp, path)


def _trl_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("trl")
    except Exception:  # noqa: BLE001 - TRL not installed: the records just carry no version
        return None

