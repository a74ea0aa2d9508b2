"""``grpo-dynamics groupsize``: G* and the MSE table from constants or from a file of samples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grpo_core.groupsize import beta_difficulty_pool, optimal_group_size, pool_constants, sample_pool_groups
from grpo_dynamics.cli import main


def test_constants_give_g_star_and_the_table(capsys):
    assert main(["groupsize", "--c1", "1", "--c2", "5", "--c3", "961", "--budget", "1024", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # `g_star` is the text's G* = 1 + sqrt(c3/c1); the leading order has its own name
    assert out["g_star"] == pytest.approx(32.0) and out["g_star_leading_order"] == pytest.approx(31.0)
    assert "g_star_exact" not in out
    assert out["best_group_size"] == 32
    rows = {r["group_size"]: r for r in out["table"]}
    assert sorted(rows) == [2**j for j in range(1, 11)]
    assert rows[32]["relative_to_best"] == 1.0 and rows[32]["num_prompts"] == 32
    # the table is the exact law: (c1 + c2/G + c3/(G(G-1))) G / N
    assert rows[2]["mse"] == pytest.approx((1 + 5 / 2 + 961 / 2) * 2 / 1024)


def test_text_report_marks_the_best(capsys):
    assert main(["groupsize", "--c1", "0.0034", "--c2", "0.085", "--c3", "0.157", "--budget", "256"]) == 0
    out = capsys.readouterr().out
    assert "G* = 1 + sqrt(c3/c1) = 7.80" in out
    assert [line for line in out.splitlines() if "<- best" in line][0].split()[0] == "8"


def test_zero_between_prompt_variance_is_json_null(capsys):
    assert main(["groupsize", "--c1", "0", "--c2", "1", "--c3", "1", "--budget", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["g_star"] is None and out["best_group_size"] == 64


def test_all_zero_constants_give_a_flat_table_not_nan(capsys):
    assert main(["groupsize", "--c1", "0", "--c2", "0", "--c3", "0", "--budget", "8", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [r["mse"] for r in out["table"]] == [0.0, 0.0, 0.0]
    assert [r["relative_to_best"] for r in out["table"]] == [1.0, 1.0, 1.0]
    assert main(["groupsize", "--c1", "0", "--c2", "0", "--c3", "0", "--budget", "8"]) == 0
    captured = capsys.readouterr()
    assert "nan" not in captured.out and "warning" not in captured.err
    assert captured.out.count("1.00x") == 3


def test_samples_file_estimates_the_constants(tmp_path, capsys):
    pool = beta_difficulty_pool(128, 8, mean=0.3, spread=0.15)
    w, z, _ = sample_pool_groups(pool, 4000, 8, np.random.default_rng(0))
    path = tmp_path / "groups.npz"
    np.savez(path, scores=w, rewards=z)
    assert (
        main(["groupsize", "--samples", str(path), "--budget", "1024", "--bootstrap", "200", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    exact = pool_constants(pool)
    assert out["num_prompts"] == 4000 and out["group_size"] == 8
    assert out["c2"] == pytest.approx(exact.c2, rel=0.05) and out["c3"] == pytest.approx(exact.c3, rel=0.05)
    lo, hi = out["intervals"]["g_star"]
    assert lo < out["g_star"] < hi
    assert out["g_star"] == pytest.approx(optimal_group_size(out["c1"], out["c3"]))
    lo0, hi0 = out["intervals"]["g_star_leading_order"]
    assert (lo0, hi0) == pytest.approx((lo - 1, hi - 1))


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--c1", "1", "--c2", "1", "--budget", "64"], "`--c1`, `--c2` and `--c3`"),
        (["--c1", "-1", "--c2", "1", "--c3", "1", "--budget", "64"], "`c1`"),
        (["--c1", "1", "--c2", "1", "--c3", "1", "--budget", "64", "--max-group-size", "65"],
         "`--max-group-size` must be an integer in [2, 64]"),
        (["--c1", "1", "--c2", "1", "--c3", "1", "--budget", "64", "--max-group-size", "1"],
         "`--max-group-size` must be an integer in [2, 64]"),
        (["--c1", "1", "--c2", "1", "--c3", "1", "--budget", "1"], "`budget`"),
        (["--c1", "nan", "--c2", "1", "--c3", "1", "--budget", "64"], "`c1`"),
        (["--samples", "x.npz", "--c1", "1", "--budget", "64"], "`--samples`"),
        (["--c1", "1", "--c2", "1", "--c3", "1", "--budget", "1e30"], "`budget` must be an integer in [2, "),
        # a training log given to groupsize (a user's first guess) is answered with what it reads instead
        (["trainer_state.json"], "groupsize reads no training log (got 'trainer_state.json'): give the rollout "
                                 "budget `--budget N`"),
        (["--c1", "1", "--c2", "1", "--c3", "1"], "`--budget` is required"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    assert main(["groupsize", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_samples_files(tmp_path, capsys):
    missing = tmp_path / "nothing.npz"
    assert main(["groupsize", "--samples", str(missing), "--budget", "64"]) == 2
    assert "file not found" in capsys.readouterr().err
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, rewards=np.zeros((3, 4)))
    assert main(["groupsize", "--samples", str(wrong), "--budget", "64"]) == 2
    assert "'scores'" in capsys.readouterr().err
    small = tmp_path / "small.npz"
    np.savez(small, scores=np.zeros((3, 2, 4)), rewards=np.zeros((3, 2)))
    assert main(["groupsize", "--samples", str(small), "--budget", "64"]) == 2
    assert "`group_size`" in capsys.readouterr().err
    flat = tmp_path / "flat.npz"  # every group at zero spread
    np.savez(flat, scores=np.random.default_rng(0).normal(size=(20, 4, 3)), rewards=np.ones((20, 4)))
    assert main(["groupsize", "--samples", str(flat), "--budget", "64"]) == 2
    assert "every group in" in capsys.readouterr().err
    text = tmp_path / "text.npz"
    text.write_text("not an archive")
    assert main(["groupsize", "--samples", str(text), "--budget", "64"]) == 2
    err = capsys.readouterr().err
    assert "is not a .npz file" in err and "pickle" not in err  # numpy's advice to unpickle is not ours
    objects = tmp_path / "objects.npz"
    np.savez(objects, scores=np.array([{"a": 1}], dtype=object), rewards=np.zeros((3, 4)))
    assert main(["groupsize", "--samples", str(objects), "--budget", "64"]) == 2  # was a traceback
    err = capsys.readouterr().err
    assert "Python objects" in err and err.count("\n") == 1
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(wrong.read_bytes()[:100])
    assert main(["groupsize", "--samples", str(truncated), "--budget", "64"]) == 2
    assert "is not a .npz file" in capsys.readouterr().err


def test_best_group_size_refuses_a_budget_past_exact_integers():
    from grpo_core.errors import ParameterError
    from grpo_core.groupsize import MAX_BUDGET, best_group_size

    assert best_group_size(MAX_BUDGET, 1.0, 1.0, 1.0) == 2
    with pytest.raises(
        ParameterError, match="`budget`"
    ):  # was numpy's "'int' object has no attribute 'log2'"
        best_group_size(10**30, 1.0, 1.0, 1.0)


def test_every_divisor_of_the_budget_is_considered_and_listed(capsys):
    """N = 1000: only the powers of two 2, 4, 8 were tried and G = 8 (B = 125) recommended, at 2.16x the MSE
    of G = 40 (B = 25); the report did not say which G it had tried. An odd budget (63) was refused."""
    assert main(["groupsize", "--c1", "1", "--c2", "5", "--c3", "961", "--budget", "1000"]) == 0
    out = capsys.readouterr().out
    assert ("considered: the 15 divisors G of N = 1000 from 2 to N (B = N/G prompts must be whole): 2, 4, 5, 8, "
            "10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000") in out
    assert "best of them: G = 40 (B = 25 prompts per step)" in out
    rows = [ln.split() for ln in out.splitlines() if ln.strip() and ln.split()[0].isdigit()]
    assert [int(r[0]) for r in rows] == [2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000]
    assert rows[3][3] == "2.16x" and rows[7][3:] == ["1.00x", "<-", "best"]
    assert main(["groupsize", "--c1", "1", "--c2", "5", "--c3", "961", "--budget", "63", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["candidates"] == [3, 7, 9, 21, 63] and d["best_group_size"] == 21
    assert [r["num_prompts"] for r in d["table"]] == [21, 9, 7, 3, 1]
    # what fits in memory: at most G = 24 of 1000's divisors
    assert main(["groupsize", "--c1", "1", "--c2", "5", "--c3", "961", "--budget", "1000", "--max-group-size",
                 "24", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["candidates"] == [2, 4, 5, 8, 10, 20] and d["best_group_size"] == 20 and d["max_group_size"] == 24


def test_a_budget_with_many_divisors_shows_the_ends_and_the_rows_around_the_best(capsys):
    assert main(["groupsize", "--c1", "1", "--c2", "5", "--c3", "961", "--budget", "720720"]) == 0
    out = capsys.readouterr().out
    assert "considered: the 239 divisors G of N = 720720 from 2 to N (B = N/G prompts must be whole): 2, 3, 4, " \
           "5, 6, ..., 360360, 720720" in out
    rows = [int(ln.split()[0]) for ln in out.splitlines() if ln.strip() and ln.split()[0].isdigit()]
    assert rows == [2, 3, 21, 22, 24, 26, 28, 30, 33, 35, 36, 39, 40, 42, 44, 360360, 720720]
    assert "(17 of the 239 candidates shown; --json lists every one)" in out
    assert main(["groupsize", "--c1", "1", "--c2", "5", "--c3", "961", "--budget", "720720", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["table"]) == 239 and d["best_group_size"] == 33
