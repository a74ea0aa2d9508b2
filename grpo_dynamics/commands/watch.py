"""``grpo-dynamics watch``: follow a training log as it grows and say each new finding once.

Examples::

    grpo-dynamics watch output/metrics.jsonl
    grpo-dynamics watch runs/ --interval 30 --idle 3600      # a TensorBoard folder
    grpo-dynamics watch train.log --json | tee watch.jsonl

Every ``--interval`` seconds (10) the log's size and modification time are compared with the last poll's
(for a folder, those of every file below it); only when they changed is the log read again
(:func:`grpo_core.runs.logs.read_log`, any format it reads) and diagnosed
(:func:`grpo_core.runs.diagnostics.diagnose`, the checks of ``grpo-dynamics diagnose``). What is printed:

* a finding the first time its failure mode reaches a printed severity (``--severity``, default warning),
  and once more if it escalates (warning to critical): never the same finding at every poll. A finding is
  known by its mode and severity, not by its numbers (which change as the log grows), as in the training
  callback (:class:`grpo_core.runs.callback.DynamicsCallback`). The line gives the step it was first seen
  at (the log's last training step then), the steps it covers and its onset;
* one status line each time the log's last training step changes (it advances; it goes back when a run
  resumed from a checkpoint rewrote its log): the step (of ``max_steps`` when known), the reward (the last
  value and the mean of the last 10 logged), the verdict.

It ends when the run has ended (the log's last step reached its planned ``max_steps``, from the log or
``--max-steps``, or the log holds TRL's end-of-training summary, ``train_runtime``), after ``--idle``
seconds without a change, after one pass with ``--once``, or on Ctrl-C (a last summary line, exit 130).

A log that does not exist yet is waited for (said once). A read that fails while the log is being written
(a ``trainer_state.json`` caught half rewritten, a log too short for any check yet) keeps the previous state
and is tried again at the next change; it is said once only when it lasts beyond one poll. A CSV's
half-written last row (which would read as a row of wrong numbers) is read once its line ends; a JSONL
line or a console dict cut off is left out by the reader. An ``--eval-metric`` or ``--correctness`` the log
has not logged yet is left to its default until it has, said once. Warnings about reading are not printed
(at every poll they would repeat); ``grpo-dynamics diagnose LOG`` gives them and the full report.

The forecast is off unless ``--forecast``: it is no finding, it moves with every step, and its law fit
costs 10 to 300 times the checks (0.1-0.3 s on most shipped real runs, 7 s on one of 2,400 steps, against
0.01-0.02 s for the checks), paid at every change of the log. The reward's time scale (``diagnose``'s
``eta*K`` line, the only use of ``--config``) is not computed.

Exit status, as ``diagnose`` at the end: 0 healthy, 1 findings, 3 inconclusive; 2 a bad argument, a log
that never became readable, or one that holds several runs without ``--run``; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path
from typing import Any

from ._logargs import add_group_arguments, add_log_arguments, as_flag, mapping, read_log_from_args

EXIT_UNREADABLE = 2
#: Least ``--interval`` (seconds): a poll is a stat of the log (of each file below a folder).
MIN_INTERVAL = 0.1
#: Most ``--interval`` (seconds, a day): polling less often is no watching (and ``time.sleep`` has a limit).
MAX_INTERVAL = 86400.0
#: Logged rewards averaged in the status line's "mean of last N".
RECENT = 10


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "watch",
        help="follow a training log as it grows: each new finding once, a status line per step",
        description=(
            "Follow a GRPO training log while the run writes it (any format diagnose reads: TRL trainer_state.json "
            "or console log, CSV, JSONL, a TensorBoard event file or folder). Every --interval seconds the log is "
            "read again if it changed and diagnosed with the checks of diagnose; each finding is printed the first "
            "time its failure mode reaches a printed severity (and again if it escalates), with the step it was "
            "first seen at, and a status line (step, reward, verdict) each time the step advances. Ends when the "
            "run has ended (its max_steps reached, or TRL's end-of-training summary logged), after --idle seconds "
            "without growth, after one pass with --once, or on Ctrl-C. Exit status at the end as diagnose: 0 "
            "healthy, 1 findings, 3 inconclusive; 2 a bad argument or a log that never became readable; 130 "
            "interrupted. Warnings about reading the log are not printed (a log being written has a half-written "
            "end at times); `grpo-dynamics diagnose LOG` gives the full report."
        ),
    )
    p.add_argument("log", help="the log file, a tracker's folder (TensorBoard, W&B, MLflow) or a trainer's output "
                               "folder (its newest checkpoint's trainer_state.json, found again as it grows); it "
                               "need not exist yet")
    add_log_arguments(p)
    p.add_argument("--interval", default="10", metavar="S",
                   help=f"seconds between polls (default 10, {MIN_INTERVAL:g} to {MAX_INTERVAL:g}); a poll that finds "
                        "the log unchanged reads nothing")
    p.add_argument("--idle", default=None, metavar="S",
                   help="stop after S seconds in which the log did not change (default: never)")
    p.add_argument("--once", action="store_true",
                   help="one pass: read, diagnose, print the findings and the status, exit (for scripts)")
    p.add_argument("--severity", choices=("info", "warning", "critical"), default="warning",
                   help="the least severity printed (default warning, as the training callback; info adds what "
                        "is worth knowing but no failure, e.g. saturation); the verdict and the exit status do "
                        "not depend on it")
    add_group_arguments(p)
    p.add_argument("--eval-metric", dest="eval_metric", default=None,
                   help="eval column to compare with the training reward (default: chosen by name); until the "
                        "log has it (eval rows come every N steps) the default is used, said once")
    p.add_argument("--correctness", action="append", metavar="NAME", default=None,
                   help="reward function that measures correctness (repeatable; as diagnose --correctness; "
                        "until the log has it the default is used, said once)")
    p.add_argument("--max-steps", dest="max_steps", default=None, metavar="N",
                   help="the run's planned steps when the log does not record them: the watch ends when the log "
                        "reaches them (and the forecast is of their last 20%%)")
    p.add_argument("--forecast", action="store_true",
                   help="add the end-of-run forecast (mean reward over the last 20%% of the run, 90%% band) to each "
                        "status line. Off by default: it is no finding, its number moves with every step, and it "
                        "costs a law fit at every change of the log (0.1-0.3 s on shipped real runs, 7 s on one of "
                        "2,400 steps, against 0.01-0.02 s for the checks)")
    p.add_argument("--reward-range", dest="reward_range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None,
                   help="with --forecast: the least and the most a step's mean reward can be (as diagnose)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per line and event: waiting, unreadable, note, finding, status, end "
                        "(key \"event\")")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from grpo_core.errors import ParameterError
    from grpo_core.validation import check_choice, check_integer, check_real

    # Every argument is checked before the first poll: a wrong one is an error now, not a wait.
    with as_flag("interval", "--interval"):
        interval = check_real("interval", args.interval, low=MIN_INTERVAL, high=MAX_INTERVAL)
    idle = None
    if args.idle is not None:
        with as_flag("idle", "--idle"):
            idle = check_real("idle", args.idle, low=0, low_inclusive=False)
    from grpo_core.runs.logs.schema import FORMATS

    with as_flag("format", "--format"):
        check_choice("format", args.format, ("auto",) + FORMATS)
    mapping(args.map)
    with as_flag("group_size", "--group-size"):
        group_size = None if args.group_size is None else check_integer("group_size", args.group_size, low=2)
    with as_flag("num_prompts", "--num-prompts"):
        num_prompts = None if args.num_prompts is None else check_integer("num_prompts", args.num_prompts, low=1)
    with as_flag("max_steps", "--max-steps"):
        max_steps = None if args.max_steps is None else check_integer("max_steps", args.max_steps, low=1)
    if args.reward_range is not None:
        if not args.forecast:
            raise ParameterError("reward_range", "`--reward-range` is the range the forecast is shown within; "
                                 "without `--forecast` it does nothing (add --forecast or drop it)")
        from grpo_core.runs.forecast import check_reward_range

        with as_flag("reward_range", "--reward-range"):
            check_reward_range(args.reward_range)
    options = dict(group_size=group_size, num_prompts=num_prompts,
                   binary_reward={"auto": None, "yes": True, "no": False}[args.binary_reward],
                   eval_metric=args.eval_metric, correctness=args.correctness, forecast=args.forecast,
                   reward_range=args.reward_range)
    watch = _Watch(args, options, max_steps=max_steps, severity=args.severity, out=_Printer(args.json))
    return watch.run(interval=interval, idle=idle, once=args.once)


class _Printer:
    """Events as text lines or as JSON lines (one object each, ``"event"`` first), flushed at once."""

    def __init__(self, as_json: bool):
        self.as_json = as_json

    def __call__(self, event: str, text: str, **fields: Any) -> None:
        if self.as_json:
            from grpo_core._json import json_ready

            print(json.dumps(json_ready({"event": event, **fields}), allow_nan=False), flush=True)
        else:
            print(text, flush=True)


def fingerprint(path: Path) -> tuple | None:
    """What changes when a log grows: ``(inode, size, mtime_ns)`` of a file; for a folder, ``(relative path,
    size, mtime_ns)`` of every file below it (sorted). ``None`` when ``path`` does not exist."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if not os.path.isdir(path):
        return (st.st_ino, st.st_size, st.st_mtime_ns)
    files = []
    for root, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            try:
                s = os.stat(full)
            except OSError:  # removed between the listing and the stat: the next poll sees it gone
                continue
            files.append((os.path.relpath(full, path), s.st_size, s.st_mtime_ns))
    return tuple(sorted(files))


def _ends_mid_line(path: Path) -> bool:
    """Whether a file's last byte is not a line end (a line being written)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) not in (b"\n", b"\r")
    except OSError:
        return False


class _Watch:
    """The state of one watch: the last readable log's diagnosis, the modes seen, what was said."""

    def __init__(self, args, options: dict[str, Any], *, max_steps: int | None, severity: str, out: _Printer):
        from grpo_core.runs.diagnostics.findings import SEVERITIES

        self.args = args
        self.path = Path(args.log)
        self.options = options
        self.max_steps = max_steps
        self.least = SEVERITIES.index(severity)
        self.out = out
        self.seen: dict[str, int] = {}
        self.diagnosis = None
        self.log = None
        self.step: int | None = None  # the last training step the status line gave
        self.error: Exception | None = None  # why the last read failed (None after a good one)
        self.failed_polls = 0
        self.said_error = False
        self.said_waiting = False
        self.said_missing: set[str] = set()

    # -- one poll ---------------------------------------------------------------------------------
    def read(self, growing: bool = False) -> str:
        """Read and diagnose the log; react to a good result.

        Returns ``"good"``, ``"failed"`` (:attr:`error` says why) or ``"pending"`` (a CSV whose last line is
        being written, or that changed while read: read again when it changes). ``growing``: the log was
        seen before (a CSV's last line is then taken as complete only with its line end).
        """
        from grpo_core.errors import GrpoError, SeveralRunsError

        before = fingerprint(self.path)
        try:
            with warnings.catch_warnings():
                # a growing log has a half-written end at times: the same warning at every poll is noise
                warnings.simplefilter("ignore")
                log = read_log_from_args(self.args)
                if log.container == "csv" and (before != fingerprint(self.path)
                                               or (growing and _ends_mid_line(self.path))):
                    # a CSV's half-written last row reads as a row of wrong numbers (a cut-off 0.45 is 0.4):
                    # wait for its line end (csv and pandas end every row with one)
                    return "pending"
                if self.max_steps is not None:
                    log.meta["max_steps"] = self.max_steps
                diagnosis = self._diagnose(log)
        except SeveralRunsError:
            raise  # waiting does not choose a run: --run does
        except (GrpoError, FileNotFoundError) as exc:  # unreadable now (empty, cut off, too short to check, a
            # file of a folder removed while read): the last state is kept, and this said once if it lasts
            self.error = exc
            return "failed"
        self.error, self.failed_polls, self.said_error = None, 0, False
        self.log, self.diagnosis = log, diagnosis
        self._react()
        return "good"

    def _diagnose(self, log):
        """:func:`~grpo_core.runs.diagnostics.diagnose` with the options; an ``--eval-metric`` or ``--correctness``
        the log does not have yet (eval rows come every N steps) is left to its default until it has it,
        said once."""
        from grpo_core.errors import ParameterError
        from grpo_core.runs.diagnostics import diagnose

        try:
            return diagnose(log, curvature=False, n_boot=0, **self.options)
        except ParameterError as exc:
            if exc.parameter not in ("eval_metric", "correctness"):
                raise
            flag = "--" + exc.parameter.replace("_", "-")
            if flag not in self.said_missing:
                self.said_missing.add(flag)
                why = str(exc).replace(f"`{exc.parameter}`", f"`{flag}`")
                self.out("note", f"{why}; diagnosed without it until the log has it", option=flag, reason=why)
            return diagnose(log, curvature=False, n_boot=0, **{**self.options, "eval_metric": None,
                                                                 "correctness": None})

    def _react(self) -> None:
        from grpo_core.runs.diagnostics.findings import SEVERITIES, new_findings

        d, step = self.diagnosis, self._last_step()
        for f in new_findings(d.findings, self.seen):
            if SEVERITIES.index(f.severity) < self.least:
                continue
            onset = f", onset step {f.onset}" if f.onset is not None else ""
            self.out("finding", f"[{f.severity}] step {step}: {f.mode} (steps {f.steps[0]}-{f.steps[1]}{onset}): "
                                f"{f.message}",
                     step=step, mode=f.mode, severity=f.severity, steps=list(f.steps), onset=f.onset,
                     message=f.message, advice=f.advice)
        if step != self.step:  # advanced, or went back (a run resumed from a checkpoint rewrote its log)
            self.step = step
            self._status()

    def _last_step(self) -> int:
        return int(self.log.train.index[-1]) if len(self.log.train) else 0

    def _planned(self) -> int | None:
        planned = self.log.meta.get("max_steps")
        try:
            return int(planned) if planned is not None and int(planned) > 0 else None
        except (TypeError, ValueError):
            return None

    def _reward(self) -> tuple[float | None, float | None, int | None]:
        """The last logged finite reward, the mean of the last :data:`RECENT` and the step of the last (None without
        a reward): a step's other metrics can be written before its reward (TensorBoard writes one event per value)."""
        if not self.log.has("reward"):
            return None, None, None
        column = self.log.train["reward"]
        pairs = [(int(i), v) for i, v in zip(column.index, column.to_numpy(float)) if math.isfinite(v)]
        if not pairs:
            return None, None, None
        recent = [v for _, v in pairs[-RECENT:]]
        return float(pairs[-1][1]), float(sum(recent) / len(recent)), pairs[-1][0]

    def _verdict_text(self) -> str:
        d = self.diagnosis
        if d.verdict == "unhealthy":
            return "NOT healthy: " + ", ".join(d.modes)
        return d.verdict

    def _status(self) -> None:
        step, planned = self.step, self._planned()
        last, mean, at = self._reward()
        width = len(str(planned)) if planned else 1
        where = f"step {step:>{width}}" + (f"/{planned}" if planned else "")
        reward = "no reward"
        if last is not None:
            reward = (f"reward {last:.4g}" + (f" (at step {at})" if at != step else "")
                      + f" (mean of last {min(RECENT, self._n_rewards())}: {mean:.4g})")
        fields: dict[str, Any] = dict(step=step, max_steps=planned, reward=last, reward_step=at, reward_mean=mean,
                                      reward_mean_steps=min(RECENT, self._n_rewards()),
                                      verdict=self.diagnosis.verdict, modes=self.diagnosis.modes)
        text = f"{where}  {reward}  {self._verdict_text()}"
        fc = self.diagnosis.forecast
        if fc is not None and fc.declined is None:
            text += f"  end ~{fc.shown_point:.4g} [{fc.shown_low:.4g}, {fc.shown_high:.4g}]"
            fields["forecast"] = {"final": fc.shown_point, "final_low": fc.shown_low, "final_high": fc.shown_high,
                                  "horizon": fc.horizon, "horizon_kind": fc.horizon_kind}
        self.out("status", text, **fields)

    def _n_rewards(self) -> int:
        return int(self.log.train["reward"].notna().sum()) if self.log.has("reward") else 0

    def ended(self) -> str | None:
        """Why the run has ended (its planned steps reached, TRL's summary logged), or None."""
        if self.log is None:
            return None
        planned = self._planned()
        done = max(self._last_step(), _as_int(self.log.meta.get("global_step")))
        if planned is not None and done >= planned:
            return f"its max_steps {planned} reached"
        if any(k != "step" for k in self.log.summary):  # TRL logs it once, at the end of train()
            return "training finished: its end-of-training summary is logged"
        return None

    def say_failure(self) -> None:
        """Say why the log cannot be read, once, when that lasted beyond a poll (a write caught halfway does
        not: the next change mends it)."""
        self.failed_polls += 1
        if self.said_error or self.failed_polls < 2:
            return
        self.said_error = True
        keep = f"; keeping step {self.step}" if self.step is not None else ""
        self.out("unreadable", f"{self.path}: cannot read it now ({self.error}){keep}; trying again as it changes",
                 reason=str(self.error), step=self.step)

    # -- the loop --------------------------------------------------------------------------------
    def run(self, *, interval: float, idle: float | None, once: bool) -> int:
        """Poll until the run ends (:meth:`ended`), ``idle`` seconds pass without a change, or Ctrl-C."""
        if once:
            result = "pending"
            for _ in range(5):  # a CSV that changed while read is read again
                result = self.read()
                if result != "pending":
                    break
            if result == "failed":
                raise self.error
            if result == "pending":
                from grpo_core.errors import DataError

                raise DataError(f"{self.path}: it changed every time it was read (5 times); try again")
            return self.finish("one pass")
        if not self.out.as_json:
            print(f"watching {self.path} every {interval:g} s (Ctrl-C to stop)", flush=True)
        last = None
        changed_at = time.monotonic()
        try:
            while True:
                fp = fingerprint(self.path)
                now = time.monotonic()
                if fp is None:
                    if not self.said_waiting:
                        self.said_waiting = True
                        self.out("waiting", f"{self.path} does not exist yet; waiting for it", log=str(self.path))
                elif fp != last:
                    changed_at = now
                    result = self.read(growing=last is not None)
                    if result == "good":
                        why = self.ended()
                        if why is not None:
                            return self.finish(why)
                    elif result == "failed":
                        self.say_failure()
                elif self.error is not None:
                    self.say_failure()
                last = fp
                if idle is not None and now - changed_at >= idle:
                    return self.finish(f"no change for {idle:g} s")
                time.sleep(interval)
        except KeyboardInterrupt:
            self.finish("interrupted", interrupted=True)
            raise

    def finish(self, why: str, interrupted: bool = False) -> int:
        """Print the end line; the exit status of the last diagnosis (raises the last error without one)."""
        if self.diagnosis is None:
            if interrupted:
                self.out("end", f"end ({why}): nothing diagnosed yet", reason=why, step=None, verdict=None,
                         modes=[], exit_status=130)
                return 130
            from grpo_core.errors import DataError

            error = self.error or DataError(f"{self.path}: no such file (nothing was written to it while watched)")
            self.out("end", f"end ({why}): nothing diagnosed", reason=why, step=None, verdict=None, modes=[],
                     exit_status=EXIT_UNREADABLE, error=str(error))
            raise error
        d = self.diagnosis
        from grpo_core.runs.diagnostics.many import EXIT_OF_VERDICT

        status = 130 if interrupted else EXIT_OF_VERDICT[d.verdict]
        self.out("end", f"end at step {self.step} ({why}): {self._verdict_text()}",
                 reason=why, step=self.step, verdict=d.verdict, modes=d.modes, exit_status=status)
        return status


def _as_int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0

