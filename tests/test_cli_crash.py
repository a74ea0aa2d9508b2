"""A crash is not a finding: an unexpected exception in any command exits with its own status (70,
sysexits' EX_SOFTWARE) and one line on stderr, never 1 (``diagnose``'s status for a finding) and
never a traceback unless asked for; and the input that crashed ``diagnose`` (finite rewards past
1e100) now gets a declined forecast instead."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_dynamics import cli
from grpo_dynamics.cli import DEBUG_ENV, EXIT_CRASH, main


def _crashing_parser(exc: Exception):
    real = cli.build_parser

    def build():
        parser = real()
        original = parser.parse_args

        def parse(argv=None, namespace=None):
            args = original(argv, namespace)

            def boom(_args):
                raise exc

            args.func = boom
            return args

        parser.parse_args = parse
        return parser

    return build


@pytest.mark.parametrize("exc", [ValueError("cannot convert float NaN to integer"), RecursionError(),
                                 TypeError("'<' not supported"), OverflowError("math range error")])
def test_a_crash_exits_70_with_one_line(monkeypatch, capsys, exc):
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    monkeypatch.setattr(cli, "build_parser", _crashing_parser(exc))
    assert main(["diagnose", "x.csv"]) == EXIT_CRASH == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("grpo-dynamics diagnose: internal error") and type(exc).__name__ in err
    assert DEBUG_ENV in err


def test_the_debug_variable_prints_the_traceback(monkeypatch, capsys):
    monkeypatch.setenv(DEBUG_ENV, "1")
    monkeypatch.setattr(cli, "build_parser", _crashing_parser(ValueError("boom")))
    assert main(["fit", "x.csv"]) == EXIT_CRASH
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "ValueError: boom" in err


def test_user_errors_keep_status_2(monkeypatch, capsys, tmp_path):
    from grpo_core.errors import DataError

    monkeypatch.setattr(cli, "build_parser", _crashing_parser(DataError("no rows")))
    assert main(["diagnose", "x.csv"]) == 2


def test_help_lists_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "70 an internal error" in out and "1 a finding" in out and "3 inconclusive" in out


def test_huge_finite_rewards_decline_the_forecast_instead_of_crashing(tmp_path, capsys):
    rng = np.random.default_rng(0)
    reward = np.clip(np.linspace(0.1, 0.8, 200) + rng.normal(0, 0.05, 200), 0, 1)
    reward[50], reward[120] = 1e155, 1e200
    path = tmp_path / "huge.csv"
    path.write_text("step,reward\n" + "".join(f"{i + 1},{float(v)!r}\n" for i, v in enumerate(reward)))
    status = main(["diagnose", str(path)])
    assert status in (0, 1, 3), status
    out = capsys.readouterr().out
    assert ("no end-of-run forecast and no reward time scale: the run failed numerically (numerical_failure, from "
            "step 51)") in out


def test_python_dash_m_runs_the_command():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "grpo_dynamics", "advise", "--eta", "0.02", "--mu", "0.5",
                           "--k-ref", "4", "--curvature", "1", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"exact_threshold"' in done.stdout or "threshold" in done.stdout
