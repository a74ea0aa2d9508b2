"""``grpo-dynamics diagnose``: name the failure modes in a training log and forecast its plateau.

Examples::

    grpo-dynamics diagnose output/checkpoint-500/trainer_state.json
    grpo-dynamics diagnose metrics.jsonl --group-size 8 --json
    grpo-dynamics diagnose run.csv --map step=iter --map reward=acc --report run.html
    grpo-dynamics diagnose runs/                       # every run below: one table
    grpo-dynamics diagnose runs/*/trainer_state.json --json --report sweep.html

Exit status: 0 healthy (no warning or critical finding, and the checks that establish it ran),
1 findings (at least one warning or critical finding), 2 the log could not be read or an argument is
wrong (one line on stderr; an unknown ``--eval-metric`` or ``--correctness`` column too),
3 inconclusive (no warning or critical finding, but the log lacks what the checks that can establish
health read: the learning check, or at least two of the four failure-mode checks; the report says what
is missing). A CI gate that wants "known healthy" tests for 0.

Several logs (several paths, or a folder that is not one run: a sweep's ``runs/``, a ``tensorboard_log/`` of
several experiments): one table row per run (an input holding several runs gives a row each), diagnosed in
parallel (``--jobs``); ``--json`` prints one JSON object per run per line; ``--report`` writes one page comparing
them. The exit status is the worst run's: 2 when a path given could not be read, else 1 when a run has a finding,
else 3 when one is inconclusive, else 0. Files found in a folder that are not logs are listed, and do not count.
"""

from __future__ import annotations

import argparse
import json

from ._logargs import add_group_arguments, add_log_arguments, as_flag, output_path, read_log_from_args


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diagnose",
        help="name the failure modes in a training log (TRL, notebook CSV, verl, metrics.jsonl) and "
             "forecast its plateau",
        description=(
            "Read a GRPO training log (TRL trainer_state.json or log_history, a notebook's progress-table CSV, "
            "verl metrics, grpo-dynamics metrics.jsonl, or any CSV/JSONL with --map), check the four failure "
            "modes (train-eval decoupling, advantage degeneration, policy concentration, dynamic instability) "
            "and the ones users hit first (not learning, truncation, numerical failure, no update, off-policy "
            "mismatch, entropy explosion, KL drift, recurring spikes, saturation), and forecast where the reward "
            "will plateau. Exit status: 0 healthy, 1 findings (a warning or critical finding), 2 unreadable log "
            "or bad argument (an unknown --eval-metric/--correctness column included), 3 inconclusive (no "
            "finding, but too few checks could run to call the run healthy)."
        ),
    )
    p.add_argument("log", nargs="+", metavar="LOG",
                   help="the log file, or a tracker's folder (TensorBoard, W&B, MLflow); several paths or a folder of "
                        "runs diagnose each run (one table)")
    add_log_arguments(p)
    add_group_arguments(p)
    p.add_argument("--reward-range", dest="reward_range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None,
                   help="the least and the most a step's mean reward can be (a composite reward: the sums of its "
                        "functions' minima and maxima, e.g. 0 1.5); the forecast and its band are shown within it "
                        "(default: [0, 1] for a reward logged within it)")
    p.add_argument("--eval-metric", dest="eval_metric", default=None,
                   help="eval column to compare with the training reward (default: chosen by name; an unknown "
                        "column is an error listing the eval columns)")
    p.add_argument("--correctness", action="append", metavar="NAME", default=None,
                   help="reward function that measures correctness, compared with the total training reward "
                        "for train-eval decoupling (repeatable; default: chosen by name; the log's spelling "
                        "rewards/f or the normalised reward/f or f; an unknown name is an error)")
    p.add_argument("--no-forecast", dest="forecast", action="store_false", help="skip the end-of-run forecast")
    p.add_argument("--max-steps", dest="max_steps", default=None, metavar="N",
                   help="the run's planned steps (TRL's max_steps) when the log does not record them: the end-of-run "
                        "forecast is of their last 20%%, and its band is read at the fraction of them logged "
                        "(without it, a log that does not say is taken as half done)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="the run's settings for the reward's time scale eta*K (TRL config JSON, trainer_state.json, "
                        "a real run's meta.json); default: a file beside the log, else TRL's defaults")
    p.add_argument("--ignore-config", action="store_true",
                   help="ignore a meta.json/config.json/training_args.json beside the log (another tool's file); "
                        "use TRL's defaults unless --config is given")
    p.add_argument("--no-curvature", dest="curvature", action="store_false",
                   help="skip the reward's time scale (eta*K, K and t90 read off the reward curve)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (findings, healthy, forecast, format, ...) instead of the report; for several "
             "paths, a folder of runs or a log holding several runs: one JSON object per run per line (label, path, "
             "run, verdict, exit_code, top, forecast, diagnosis ...)",
    )
    p.add_argument("--report", metavar="FILE.html", default=None,
                   help="also write a self-contained HTML report with the charts (several runs: one page comparing "
                        "them)")
    p.add_argument("--jobs", default=None, metavar="N",
                   help="several runs: processes diagnosing them at once (default: the machine's cores)")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    import warnings

    from grpo_core.runs.diagnostics import diagnose
    from grpo_core.validation import check_integer

    if args.reward_range is not None and not args.forecast:
        from grpo_core.errors import ParameterError

        raise ParameterError("reward_range", "`--reward-range` is the range the forecast is shown within; with "
                             "`--no-forecast` it does nothing (drop one of them)")
    group_size = None if args.group_size is None else check_integer("group_size", args.group_size, low=2)
    num_prompts = None if args.num_prompts is None else check_integer("num_prompts", args.num_prompts, low=1)
    binary = {"auto": None, "yes": True, "no": False}[args.binary_reward]
    report = output_path("--report", args.report, (".html", ".htm"), tuple(args.log))  # before any work
    several = _several(args)
    if several is not None:
        return _many(args, several, report, group_size, num_prompts, binary)
    from grpo_core.errors import SeveralRunsError

    quiet = args.json
    with warnings.catch_warnings():
        if quiet:
            # --json prints exactly one JSON object; what reading did is in its "notes".
            warnings.simplefilter("ignore")
        try:
            log = read_log_from_args(args)
        except SeveralRunsError as exc:
            if args.run is not None:
                raise
            # a log or tracker folder of several runs: each run diagnosed, one row each (--run reads one)
            from pathlib import Path

            from grpo_core.runs.logs.discover import RunRef

            note = f"{args.log} holds {len(exc.runs)} runs; --run chooses one (e.g. --run '{exc.runs[-1]}')"
            return _many(args, ([RunRef(Path(args.log), None, str(args.log), True)], [note]), report, group_size,
                         num_prompts, binary)
        if args.max_steps is not None:
            log.meta["max_steps"] = check_integer("max_steps", args.max_steps, low=1)
        with as_flag("reward_range", "--reward-range"):
            diagnosis = diagnose(
                log,
                group_size=group_size,
                binary_reward=binary,
                num_prompts=num_prompts,
                eval_metric=args.eval_metric,
                correctness=args.correctness,
                forecast=args.forecast,
                settings=_settings(args),
                curvature=args.curvature,
                reward_range=args.reward_range,
            )
    if report is not None:
        from grpo_dynamics.report import write_report

        write_report(report, log, diagnosis, group_size=group_size, binary_reward=binary,
                     num_prompts=num_prompts)
    if args.json:
        out = diagnosis.to_dict()
        if args.report:
            out["report"] = str(args.report)
        print(json.dumps(out, allow_nan=False))
    else:
        print(diagnosis.summary())
        if args.report:
            print(f"report: {args.report}")
    from grpo_core.runs.diagnostics.many import EXIT_OF_VERDICT

    return EXIT_OF_VERDICT[diagnosis.verdict]


def _several(args):
    """``(refs, notes)`` of :func:`~grpo_core.runs.logs.discover.find_runs` when the paths hold several logs (several
    paths, or a folder of runs), else ``None`` with ``args.log`` set to the one log (a folder holding one log: that
    log)."""
    from pathlib import Path

    from grpo_core.runs.logs.discover import find_runs, is_one_run

    paths = args.log
    if len(paths) == 1:
        p = Path(paths[0])
        if args.run is not None or not p.is_dir() or is_one_run(p):
            args.log = paths[0]
            return None
    refs, notes = find_runs(paths)
    if len(refs) == 1 and len(paths) == 1 and not args.json:
        # a folder holding one log: its diagnosis in full (with --json, the records of a folder, whatever its count)
        args.log = str(refs[0].path)
        return None
    return refs, notes


def _many(args, several, report, group_size, num_prompts, binary) -> int:
    import sys
    import time

    from grpo_core.errors import ParameterError
    from grpo_core.runs.diagnostics.many import diagnose_many, worst_exit
    from grpo_core.validation import check_integer

    from ._logargs import mapping

    if args.run is not None:
        raise ParameterError("run", "`--run` chooses one run of one log; with several logs every run is "
                                    "diagnosed (give one path to choose)")
    jobs = None if args.jobs is None else check_integer("jobs", args.jobs, low=1)
    refs, notes = several
    options = {"format": args.format, "mapping": mapping(args.map), "trl_version": args.trl_version,
               "group_size": group_size, "binary_reward": binary, "num_prompts": num_prompts,
               "eval_metric": args.eval_metric, "correctness": args.correctness, "forecast": args.forecast,
               "settings": _settings(args), "curvature": args.curvature, "reward_range": args.reward_range,
               "max_steps": None if args.max_steps is None else check_integer("max_steps", args.max_steps, low=1)}
    bar = _Bar(len(refs))
    t0 = time.perf_counter()
    try:
        rows = diagnose_many(refs, jobs=jobs, options=options, record=bool(args.json or report),
                             series=report is not None, progress=bar)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    if report is not None:
        from grpo_dynamics.comparison import write_comparison

        write_comparison(report, rows)
    if args.json:
        for row in rows:
            out = row.to_dict()
            out.pop("series", None)
            print(json.dumps(out, allow_nan=False))
    else:
        from grpo_dynamics.comparison import table_text

        print(table_text(rows, seconds=seconds, notes=notes))
        if report is not None:
            print(f"report: {report}")
    sys.stdout.flush()
    return worst_exit(rows)


class _Bar:
    """A progress bar on stderr when it is a terminal and there are more than 3 logs (tqdm)."""

    def __init__(self, total: int):
        import sys

        self._bar = None
        if total > 3 and sys.stderr.isatty():
            from tqdm import tqdm

            tqdm.monitor_interval = 0  # no monitor thread: the workers are forked, which threads make unsafe
            self._bar = tqdm(total=total, unit="log", desc="diagnosing", leave=False, file=sys.stderr)

    def __call__(self, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _settings(args):
    """--config, or TRL's defaults with --ignore-config, or None (a file beside the log, read leniently)."""
    if args.config is None and args.ignore_config:
        from grpo_core.runs.settings import TRL_DEFAULTS, RunSettings

        return RunSettings(defaulted=tuple(k for k in TRL_DEFAULTS if k not in ("sgd_momentum", "beta2")))
    return args.config
