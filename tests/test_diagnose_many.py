"""Diagnosing many runs with one command: the logs a folder's walk finds, one row per run (an input holding several
runs split), the rows equal to one diagnosis at a time, the exit status of the worst, the JSON records, the
comparison page (opened in Chromium: no error, no request)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from grpo_core.errors import DataError, ParameterError
from grpo_core.runs import datasets
from grpo_core.runs.diagnostics import diagnose
from grpo_core.runs.diagnostics.many import NOT_READ, RunRow, diagnose_many, worst_exit
from grpo_core.runs.logs import LogWarning, read_log
from grpo_core.runs.logs.discover import find_runs
from grpo_dynamics.cli import main

REAL_RUNS = Path(str(datasets._folder("real_runs")))


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    # the table fits COLUMNS when set (a CI shell may set it): these tests read the full table
    monkeypatch.delenv("COLUMNS", raising=False)


def state(steps, rewards, max_steps=None) -> str:
    history = [{"step": s, "loss": 0.0, "reward": r, "reward_std": 0.3, "rewards/acc/mean": r}
               for s, r in zip(steps, rewards)]
    return json.dumps({"log_history": history, "global_step": steps[-1], "max_steps": max_steps or steps[-1]})


def sweep(tmp_path: Path) -> Path:
    """runs/lr1 with three checkpoints, runs/lr2 with a final trainer_state.json and a checkpoint, settings files
    and a README beside them."""
    root = tmp_path / "runs"
    for n in (10, 20, 30):
        d = root / "lr1" / f"checkpoint-{n}"
        d.mkdir(parents=True)
        (d / "trainer_state.json").write_text(state(list(range(1, n + 1)), [0.1 + 0.02 * s for s in range(n)], 60))
        (d / "config.json").write_text('{"model_type": "qwen2"}')
    (root / "lr2" / "checkpoint-5").mkdir(parents=True)
    (root / "lr2" / "checkpoint-5" / "trainer_state.json").write_text(state([1, 2, 3, 4, 5], [0.2] * 5))
    (root / "lr2" / "trainer_state.json").write_text(state(list(range(1, 41)), [0.5] * 40))
    (root / "lr2" / "training_args.json").write_text("{}")
    (root / "README.md").write_text("# sweep\n")
    return root


def test_a_sweeps_walk_takes_the_last_checkpoint_and_no_settings_file(tmp_path):
    root = sweep(tmp_path)
    refs, notes = find_runs([root])
    rel = [r.path.relative_to(root).as_posix() for r in refs]
    assert rel == ["lr1/checkpoint-30/trainer_state.json", "lr2/trainer_state.json"]
    assert not any(r.explicit for r in refs)
    assert notes == ["left out 2 earlier checkpoint(s)' trainer_state.json (the last checkpoint's holds the same "
                     "history and more)"]


def test_a_shipped_run_folder_gives_its_raw_file_not_its_parsed_rows():
    refs, _ = find_runs([REAL_RUNS])
    assert len(refs) == len(datasets.real_runs()) == 20
    assert {r.path for r in refs} == {datasets.real_run(i.split("-")[0]).path for i in datasets.real_runs()}


def test_find_runs_refuses_what_is_not_there(tmp_path):
    with pytest.raises(DataError, match="no such file or folder"):
        find_runs([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no log found in this folder"):
        find_runs([tmp_path / "empty"])
    with pytest.raises(ParameterError, match="`paths`"):
        find_runs([])


def single(path, run=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose(read_log(path, run=run))


def test_every_shipped_real_run_is_one_row_as_diagnosed_alone():
    refs, _ = find_runs([REAL_RUNS])
    rows = diagnose_many(refs, jobs=2)
    # runs 13 and 14 are one file holding two arms: a row per arm
    assert len(rows) == 22
    assert [r.run for r in rows if r.run] == ["arm=pure-GRPO", "arm=SFT-GRPO"] * 2
    for row in rows:
        assert row.read, row.error
        alone = single(row.path, row.run)
        assert (row.verdict, row.steps, row.format) == (alone.verdict, alone.steps, alone.format)
        top = alone.primary
        assert row.top == (None if top is None else {"severity": top.severity, "mode": top.mode,
                                                      "message": top.message, "onset": top.onset})
        if alone.forecast is not None and not alone.forecast.declined:
            assert row.forecast["point"] == alone.forecast.shown_point
            assert (row.forecast["low"], row.forecast["high"]) == (alone.forecast.shown_low, alone.forecast.shown_high)
            assert row.now == alone.forecast.now
    assert worst_exit(rows) == 1  # run 01 collapses (critical)
    verdicts = {r.label.split("/")[-2][:2]: r.verdict for r in rows if r.run is None}
    assert verdicts["01"] == "unhealthy" and verdicts["03"] == "healthy" and verdicts["20"] == "healthy"


def test_parallel_and_in_process_give_the_same_rows(tmp_path):
    refs, _ = find_runs([sweep(tmp_path), datasets.example_log_path("01-all-groups-zero-spread")])
    one = diagnose_many(refs, jobs=1)
    two = diagnose_many(refs, jobs=2)
    strip = [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in one]
    assert strip == [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in two]
    # lr1 rises over 30 of its 60 planned steps; lr2 stays at 0.5 for its 40 steps; case 01 has no reward spread
    assert [r.verdict for r in one] == ["healthy", "unhealthy", "unhealthy"]
    assert [r.top and r.top["mode"] for r in one] == [None, "not_learning", "advantage_degeneration"]


def row(verdict, code, explicit=True):
    return RunRow(label="x", path="x", run=None, verdict=verdict, exit_code=code, explicit=explicit)


@pytest.mark.parametrize("codes, worst", [
    ([("healthy", 0), ("inconclusive", 3)], 3),
    ([("inconclusive", 3), ("unhealthy", 1), ("healthy", 0)], 1),
    ([("unhealthy", 1), (NOT_READ, 2)], 2),
    ([("healthy", 0)], 0),
])
def test_the_worst_run_decides_the_exit_status(codes, worst):
    assert worst_exit([row(v, c) for v, c in codes]) == worst


def test_a_file_found_in_a_folder_that_is_no_log_does_not_count_but_one_named_does():
    rows = [row("healthy", 0), row(NOT_READ, 0, explicit=False)]
    assert worst_exit(rows) == 0
    assert worst_exit(rows + [row(NOT_READ, 2)]) == 2
    assert worst_exit([row(NOT_READ, 0, explicit=False)]) == 2  # nothing read at all


def test_the_command_prints_one_line_per_run_and_lists_what_it_could_not_read(tmp_path, capsys):
    root = sweep(tmp_path)
    (root / "notes.txt").write_text("nothing to see here\n")
    code = main(["diagnose", str(root), "--jobs", "1"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("diagnosed 2 runs in ") and out[0].endswith("; 1 other file(s) were not logs")
    # the folder the runs share and the file name they share are said once
    assert out[1] == f"in {root}/ (each .../trainer_state.json)"
    assert out[2].split()[:2] == ["run", "verdict"]
    assert [line.split()[0] for line in out[3:5]] == ["lr1/checkpoint-30", "lr2"]
    assert out[5] == "found in the folders but not read as logs (1; not counted):"
    assert out[6].startswith("  notes.txt: ")
    assert code == 1  # lr2 is flat at 0.5 for its 40 steps: not learning


def test_a_path_named_that_is_no_log_makes_the_exit_status_2(tmp_path, capsys):
    bad = tmp_path / "broken.json"
    bad.write_text('{"log_history": [')
    code = main(["diagnose", str(datasets.example_log_path("01-all-groups-zero-spread")), str(bad)])
    out = capsys.readouterr().out
    assert code == 2
    assert "broken.json" in out and "not read" in out


def test_json_gives_one_record_per_run_with_the_whole_diagnosis(tmp_path, capsys):
    root = sweep(tmp_path)
    main(["diagnose", str(root), "--json", "--jobs", "2"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["label"].split("/")[-2] for r in records] == ["checkpoint-30", "lr2"]
    for r in records:
        alone = single(r["path"]).to_dict()
        assert r["diagnosis"]["verdict"] == alone["verdict"] == r["verdict"]
        assert r["diagnosis"]["findings"] == alone["findings"]


def test_run_is_refused_with_several_logs(tmp_path, capsys):
    root = sweep(tmp_path)
    assert main(["diagnose", str(root / "lr1"), str(root / "lr2"), "--run", "last"]) == 2
    assert "`--run` chooses one run of one log" in capsys.readouterr().err


def test_a_folder_holding_one_log_is_diagnosed_as_that_log(capsys):
    folder = REAL_RUNS / datasets.real_runs()[1]
    code = main(["diagnose", str(folder)])
    out = capsys.readouterr().out
    main(["diagnose", str(datasets.real_run("03").path)])
    assert out == capsys.readouterr().out
    assert code == 0


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp") / "sweep.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        code = main(["diagnose", str(REAL_RUNS), str(datasets.example_log_path("03-growing-oscillation")),
                     "--report", str(out), "--jobs", "2"])
    return out, code


def test_the_comparison_page_names_every_run_and_needs_no_network(comparison):
    out, code = comparison
    page = out.read_text(encoding="utf-8")
    assert code == 1
    assert "<script src=" not in page and "http://" not in page.split("<script>", 1)[0]
    assert page.count('<tr><td class="run">') == 23
    for rid in datasets.real_runs():
        assert rid in page
    assert "critical: dynamic_instability" in page  # the constructed growing oscillation


@pytest.mark.browser
def test_the_comparison_page_opens_in_chromium_and_draws_every_curve(comparison, probe):
    out, _ = comparison
    probe.page.goto(out.as_uri())
    probe.page.wait_for_selector("#overlay svg", timeout=20_000)
    lines = probe.page.evaluate("document.querySelectorAll('#overlay g.mark-line path').length")
    assert probe.console_errors == [] and probe.external_requests == []
    assert lines == 23
    assert probe.page.evaluate("document.documentElement.scrollWidth") <= 1280


@pytest.mark.parametrize("run_id", ["01", "20", "22"])
def test_leaving_out_the_law_fit_changes_nothing_else(run_id):
    path = datasets.real_run(run_id).path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = diagnose(read_log(path)).to_dict()
        lean = diagnose(read_log(path), fit_laws=False).to_dict()
    assert full["law_fit"] is not None or full["forecast"]["law_fit"] is not None
    assert lean["law_fit"] is None and (lean["forecast"] is None or lean["forecast"]["law_fit"] is None)
    for d in (full, lean):
        d.pop("law_fit")
        if d["forecast"] is not None:
            d["forecast"].pop("law_fit")
            d["forecast"].pop("law_fit_error", None)
    assert lean == full


def test_a_narrow_terminal_gets_the_finding_under_its_run(tmp_path):
    from grpo_dynamics.comparison import table_text

    rows = diagnose_many(find_runs([sweep(tmp_path)])[0], jobs=1)
    wide, narrow = table_text(rows, columns=None).splitlines(), table_text(rows, columns=66).splitlines()
    assert [c.strip() for c in wide[2].split("  ") if c.strip()][:3] == ["run", "verdict", "top finding"]
    assert len(wide) == 6
    table = narrow[2:6]
    assert all(len(line) <= 66 for line in narrow[2:])  # the footnote wrapped too
    assert table[0].split() == ["run", "verdict", "steps", "end", "of", "run", "[90%", "band]"]
    assert all(len(line) <= 66 for line in table)
    # lr2 is flat: its finding on the line under it, indented; lr1 has none
    assert table[1].startswith("lr1/checkpoint-30 ") and table[2].startswith("lr2 ")
    assert table[3] == "    warning: not_learning" and narrow[6].startswith("end of run: ")
    assert table[2].endswith("ended 0.5")  # a finished run: the mean of its last 20% of steps


def test_a_log_given_twice_or_found_twice_is_read_once(tmp_path):
    root = sweep(tmp_path)
    state = root / "lr2" / "trainer_state.json"
    refs, notes = find_runs([root, state, f"{root}/../runs/lr2/trainer_state.json"])
    assert [r.path.relative_to(root).as_posix() for r in refs] == ["lr1/checkpoint-30/trainer_state.json",
                                                                  "lr2/trainer_state.json"]
    assert notes[-1] == "read 2 path(s) once that were given or found twice"


def test_a_trainer_output_folder_with_its_wandb_folder_gives_both_logs(tmp_path):
    import shutil

    out = sweep(tmp_path) / "lr2"
    run = "run-20250318_111614-8m4eakd6"
    shutil.copytree(datasets.tracker_run_path("42-wandb-kokolerk-ton-8m4eakd6") / run, out / "wandb" / run)
    refs, _ = find_runs([out])
    # the trainer's own log and the W&B run beside it: both read, not the folder taken for a W&B folder
    assert sorted(r.path.relative_to(out).as_posix() for r in refs) == ["trainer_state.json", "wandb"]


def test_a_tracker_folder_of_several_runs_given_alone_is_one_row_per_run(capsys):
    store = datasets.tracker_run_path("50-mlflow-Caitlyn-Yin-grpo-norm-replay")
    assert main(["diagnose", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("diagnosed 2 runs in ") and out[0].endswith("2 healthy")
    names = [line.split("  ")[0] for line in out if "[easy_" in line]
    assert [n.rsplit("[", 1)[1] for n in names] == ["easy_standard]", "easy_no_std]"]
    assert any(line.endswith("holds 2 runs; --run chooses one (e.g. --run '0d118e1973b149308bbd0d4d8df0a95c')")
               for line in out)


def test_fit_and_watch_read_a_trainer_output_folder_as_its_last_checkpoint(tmp_path, capsys):
    root = sweep(tmp_path)
    assert main(["fit", str(root / "lr1"), "--metric", "reward"]) == 0
    assert capsys.readouterr().out.startswith(f"{root / 'lr1'} [reward]: 30 points")
    assert main(["watch", str(root / "lr1"), "--once"]) in (0, 1, 3)
    assert "step 30/60" in capsys.readouterr().out
    # a folder of several runs is for diagnose: the others name the logs
    assert main(["fit", str(root), "--metric", "reward"]) == 2
    err = capsys.readouterr().err
    assert "a folder of 2 logs (lr1/checkpoint-30/trainer_state.json, lr2/trainer_state.json)" in err
