"""Entry point of the ``grpo-dynamics`` command.

User errors (:class:`grpo_core.errors.GrpoError`, a missing file) are printed as one line on
stderr with exit status 2 and no traceback. Anything else is a bug of ours: one line naming the
exception, exit status 70 (``EX_SOFTWARE`` of BSD's sysexits), so a CI gate can tell a crash from a
finding (``diagnose`` exits 1 for a finding, 3 when inconclusive); set ``GRPO_DYNAMICS_DEBUG=1`` for
the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
import warnings
from collections.abc import Sequence

from grpo_core.errors import GrpoError

from . import commands as _commands

EXIT_USAGE = 2
#: Exit status of an unexpected error (a bug): sysexits' EX_SOFTWARE, distinct from every status a
#: command returns on purpose (0 ok, 1 a finding, 2 a user error, 3 inconclusive, 130 interrupted).
EXIT_CRASH = 70
#: Environment variable that makes a crash print its traceback.
DEBUG_ENV = "GRPO_DYNAMICS_DEBUG"

EXIT_STATUSES = (
    "exit status: 0 ok; 1 a finding (diagnose: a warning or critical finding); 2 a bad argument or "
    "an unreadable input; 3 inconclusive (diagnose: too few checks could run); 70 an internal error "
    f"(a bug: please report it; {DEBUG_ENV}=1 prints the traceback); 130 interrupted."
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments as one line (the default prints usage + message)."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every sub-command found in :mod:`grpo_dynamics.commands`."""
    parser = _Parser(
        prog="grpo-dynamics",
        description="GRPO training dynamics: advise on hyperparameters, fit reward curves, "
        "diagnose training logs, run the bandit and LLM experiments.",
        epilog=EXIT_STATUSES,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for info in sorted(pkgutil.iter_modules(_commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def _one_line_warnings(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (:data:`EXIT_STATUSES`: 0 ok, 1 a finding, 2 a user
    error, 3 inconclusive, 70 an internal error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # The command line shows its warnings (user and runtime ones, as a plain Python process does) as
    # one line each, whatever filters its caller set (a test runner's "error"), and leaves the
    # caller's warning state as it was.
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaped(out), _Escaped(err, keep="\t\n\r")
    try:
        with warnings.catch_warnings():
            for category in (UserWarning, RuntimeWarning):
                warnings.simplefilter("default", category)
            warnings.showwarning = _one_line_warnings
            return _run(args)
    finally:
        sys.stdout, sys.stderr = out, err


class _Escaped:
    """A text stream that shows control characters as escapes (``\\x1b``) instead of sending them.

    Everything the commands print can quote a log (a column name, a run name, a file name): a name
    holding ANSI escape sequences would otherwise clear the terminal, retitle it or print fake
    text. C0 controls other than ``keep``, DEL and the C1 range are written as ``\\xNN``; stderr also
    keeps the carriage return its progress bars use. The bidirectional overrides and isolates (which
    reorder what a terminal shows) and the line and paragraph separators are written as ``\\uNNNN``;
    a file name's undecodable byte (Python's surrogate escape, U+DC80-U+DCFF) as ``\\xNN``, the byte
    it stands for, so that a strict UTF-8 stream can print it.
    """

    def __init__(self, stream, keep: str = "\t\n"):
        self._stream = stream
        self._table = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in keep}
        self._table.update({c: f"\\u{c:04x}" for c in [0x2028, 0x2029, *range(0x202A, 0x202F),
                                                          *range(0x2066, 0x206A), *range(0xD800, 0xE000)]})
        self._table.update({c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)})

    def write(self, text: str) -> int:
        self._stream.write(text.translate(self._table))
        return len(text)

    def __getattr__(self, name):  # flush, fileno, isatty, encoding, buffer ...
        return getattr(self._stream, name)


def _run(args) -> int:
    try:
        return int(args.func(args) or 0)
    except GrpoError as exc:
        print(f"grpo-dynamics {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except FileNotFoundError as exc:
        name = exc.filename or str(exc)
        print(f"grpo-dynamics {args.command}: error: file not found: {name}", file=sys.stderr)
        return EXIT_USAGE
    except IsADirectoryError as exc:
        print(
            f"grpo-dynamics {args.command}: error: expected a file, got a directory: {exc.filename}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"grpo-dynamics {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`grpo-dynamics ... | head`): not an error of ours, no traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:  # after BrokenPipeError, one of them
        # unwritable or unreadable paths (permissions, a file used as a folder, a full disk ...)
        what = exc.strerror or type(exc).__name__
        where = f": {exc.filename}" if exc.filename else f" ({exc})" if str(exc) else ""
        print(
            f"grpo-dynamics {args.command}: error: cannot read or write a file: {what}{where}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - the last resort: a bug, reported as one line
        if os.environ.get(DEBUG_ENV, "").strip() not in ("", "0"):
            traceback.print_exc()
        detail = " ".join(str(exc).split())[:300]
        print(
            f"grpo-dynamics {args.command}: internal error (a bug, not your input's fault unless the "
            f"message says so): {type(exc).__name__}: {detail or '(no message)'}; "
            f"set {DEBUG_ENV}=1 for the traceback",
            file=sys.stderr,
        )
        return EXIT_CRASH


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
