"""The README's command-line examples run as written (the front door must not rot)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from grpo_dynamics.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
EXAMPLES = [shlex.split(line)[1:] for line in re.findall(r"^\.venv/bin/grpo-dynamics .*$", README, re.M)]


def test_readme_names_the_two_commands():
    assert "make book" in README and "make test" in README
    assert {e[0] for e in EXAMPLES} >= {"advise", "fit", "diagnose", "bandit", "experiment", "--help"}


@pytest.mark.parametrize("argv", EXAMPLES, ids=[" ".join(e[:2]) for e in EXAMPLES])
def test_readme_example_runs(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    argv = [str(tmp_path / a) if a.endswith(".html") else a for a in argv]  # reports go to tmp
    if argv[0] == "experiment":
        argv += ["--dry-run", "--out", str(tmp_path / "runs")]  # plan only: training is minutes per run
    if argv == ["--help"]:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0 and "advise" in capsys.readouterr().out
        return
    code = main(argv)
    out = capsys.readouterr().out
    # diagnose exits 1 when it finds something (the Qwen run: zero-spread groups), by design
    assert code == 0, out  # the Qwen run learned: healthy, its early zero spread reported as a cost
    if argv[0] == "advise":
        v = json.loads(out)
        assert v["regime"] in {"overdamped", "critically_damped", "underdamped", "unstable"}
        assert v["critical_k_ref_continuous"] == pytest.approx((1 - 0.9) / (1e-6 * 2e4))
    elif argv[0] == "bandit":
        v = json.loads(out)
        assert v["measured_critical_k_ref"] == v["predicted_exact"] == 3
    elif argv[0] == "diagnose":
        assert "advantage_degeneration" in out and (tmp_path / "report.html").stat().st_size > 10_000
    elif argv[0] == "fit":
        assert "250 points" in out and "best by AIC: logistic" in out
    elif argv[0] == "experiment":
        assert out.count("planned") == 6
