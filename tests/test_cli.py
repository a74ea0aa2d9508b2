"""The command line as a whole: discovery of sub-commands, one-line errors, closed pipes."""

from __future__ import annotations

import subprocess
import sys

from grpo_dynamics.cli import build_parser

EXE = [sys.executable, "-m", "grpo_dynamics.cli"]


def test_every_command_module_is_registered():
    import pkgutil

    from grpo_dynamics import commands

    names = {m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")}
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert names <= set(sub.choices), names - set(sub.choices)
    assert {"advise", "fit"} <= names


def test_unknown_option_is_one_line_exit_2():
    proc = subprocess.run([*EXE, "advise", "--bogus"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_closed_pipe_is_not_a_traceback():
    # The reader (`true`) exits long before the interpreter has started and writes: EPIPE.
    cmd = " ".join(EXE) + " advise --eta 0.01 --mu 0.9 --k-ref 4 --curvature 1 --json | true; echo ${PIPESTATUS[0]}"
    proc = subprocess.run(cmd, shell=True, capture_output=True, text=True, executable="/bin/bash")
    assert proc.stdout.strip() == "141"
    assert "Traceback" not in proc.stderr
