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
    cmd = (
        " ".join(EXE)
        + " advise --eta 0.01 --mu 0.9 --k-ref 4 --curvature 1 --json | true; echo ${PIPESTATUS[0]}"
    )
    proc = subprocess.run(cmd, shell=True, capture_output=True, text=True, executable="/bin/bash")
    assert proc.stdout.strip() == "141"
    assert "Traceback" not in proc.stderr


def test_experiment_checks_timeout_and_out_before_anything_runs(tmp_path, capsys):
    from grpo_dynamics.cli import main

    # both were accepted by --dry-run and failed only when a run started
    for args, needle in ((["--timeout", "-5"], "`timeout` must be an integer >= 1"),
                         (["--timeout", "0"], "`timeout` must be an integer >= 1")):
        assert main(["experiment", "--dry-run", "--out", str(tmp_path), *args]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1
    a_file = tmp_path / "runs.txt"
    a_file.write_text("")
    assert main(["experiment", "--dry-run", "--out", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert "`out` must be a folder" in err and err.count("\n") == 1
    assert main(["experiment", "--dry-run", "--timeout", "60", "--out", str(tmp_path / "new")]) == 0
    assert not (tmp_path / "new").exists()  # a dry run creates nothing
