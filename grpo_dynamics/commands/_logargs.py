"""Options shared by every command that reads a training log (``fit``, ``diagnose``)."""

from __future__ import annotations

import argparse
import contextlib


def add_log_arguments(p: argparse.ArgumentParser) -> None:
    """``--format``, ``--map KEY=COLUMN`` (repeatable), ``--trl-version`` and ``--run``."""
    p.add_argument("--format", default="auto",
                   help="log format: auto (default), trl, notebook, verl, grpo_dynamics, generic")
    p.add_argument("--map", action="append", metavar="KEY=COLUMN",
                   help="map a normalised name to a column of the file (repeatable), e.g. --map step=iter "
                        "--map reward=acc")
    p.add_argument("--trl-version", dest="trl_version", default=None,
                   help="TRL version that wrote the log (decides whether reward_std is the per-group mean "
                        "(< 0.27) or the batch std)")
    p.add_argument("--run", default=None, metavar="RUN",
                   help="which run of a file holding several (a label of its run column, e.g. --run pure-GRPO "
                        "or --run arm=pure-GRPO; a W&B export's run name)")


def add_group_arguments(p: argparse.ArgumentParser) -> None:
    """``--group-size``, ``--num-prompts`` and ``--binary-reward``: what the zero-spread check reads (``diagnose``,
    ``watch``)."""
    p.add_argument("--group-size", dest="group_size", default=None,
                   help="completions per prompt G (TRL num_generations), for the 0/1-reward expectation "
                        "p^G + (1-p)^G of the zero-spread fraction")
    p.add_argument("--num-prompts", dest="num_prompts", default=None,
                   help="prompts per step; 1 makes reward_std == 0 the exact zero-spread fraction")
    p.add_argument("--binary-reward", dest="binary_reward", choices=("auto", "yes", "no"), default="auto",
                   help="whether the reward is 0/1 (auto: when every reward lies in [0, 1])")


def mapping(items: list[str] | None) -> dict[str, str] | None:
    """``["step=iter", "reward=acc"]`` -> ``{"step": "iter", "reward": "acc"}``.

    Raises
    ------
    ParameterError
        An item is not of the form KEY=COLUMN.
    """
    from grpo_core.errors import ParameterError

    if not items:
        return None
    out = {}
    for item in items:
        key, sep, col = item.partition("=")
        if not sep or not key.strip() or not col.strip():
            raise ParameterError("map", f"`--map` must be KEY=COLUMN (e.g. --map step=iter); got {item!r}")
        out[key.strip()] = col.strip()
    return out


def read_log_from_args(args: argparse.Namespace):
    """Read ``args.log`` with the shared options; returns a :class:`grpo_core.runs.logs.RunLog`.

    A folder that no tracker reads as a whole (a trainer's output folder) is read as the one log it holds (the
    last checkpoint's ``trainer_state.json``: :func:`grpo_core.runs.logs.discover.find_runs`), found again at
    each call, so ``watch`` follows the newest checkpoint.

    Raises
    ------
    DataError
        The log cannot be read; the folder holds no log, or several (the message lists them).
    """
    from pathlib import Path

    from grpo_core.runs.logs import read_log

    path = Path(args.log)
    if path.is_dir():
        from grpo_core.errors import DataError
        from grpo_core.runs.logs.discover import find_runs, is_one_run

        if not is_one_run(path):
            refs, _ = find_runs([path])
            if len(refs) > 1:
                shown = ", ".join(str(r.path.relative_to(path)) for r in refs[:8]) + (" ..." if len(refs) > 8 else "")
                raise DataError(f"{args.log}: a folder of {len(refs)} logs ({shown}); give one of them (`diagnose` "
                                "takes a folder of runs)")
            path = refs[0].path
    return read_log(path, format=args.format, mapping=mapping(args.map), trl_version=args.trl_version,
                    run=getattr(args, "run", None))


def output_path(flag: str, path: str | None, suffixes: tuple[str, ...], inputs: tuple[str, ...] = ()):
    """Check an output file before any work is done; returns it as a :class:`~pathlib.Path` (or None).

    Refuses (one-line :class:`~grpo_core.errors.ParameterError` naming ``flag``): a name not ending
    in one of ``suffixes`` (compared case-insensitively), an existing directory, and a path that is
    one of the ``inputs`` (writing the report over the log it reads would lose the log).
    """
    from pathlib import Path

    from grpo_core.errors import ParameterError

    if path is None:
        return None
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise ParameterError(flag, f"`{flag}` must end in {' or '.join(suffixes)}; got {path!r}")
    if p.is_dir():
        raise ParameterError(flag, f"`{flag}` {path!r} is a directory; give a file name")
    for src in inputs:
        s = Path(src)
        same = s.exists() and p.exists() and p.samefile(s)
        if same or p.resolve() == s.resolve():
            raise ParameterError(flag, f"`{flag}` {path!r} is the input log; it would be overwritten "
                                       "(choose another file name)")
    return p


@contextlib.contextmanager
def as_flag(parameter: str, flag: str):
    """Re-raise the library's error about ``parameter`` naming the command's ``flag`` instead."""
    from grpo_core.errors import ParameterError

    try:
        yield
    except ParameterError as exc:
        if exc.parameter != parameter:
            raise
        raise ParameterError(flag, str(exc).replace(f"`{parameter}`", f"`{flag}`")) from None
