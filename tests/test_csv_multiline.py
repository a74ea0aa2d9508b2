"""CSV logs whose quoted cells hold line breaks (RFC 4180), e.g. a logged completion text.

Such a cell spans several physical lines; the reader counted each line as a row and refused the file as
"99 of 200 lines are broken". A record is what the csv module reads, and the lines the messages name are
where a record starts.
"""

from __future__ import annotations

import warnings

import pytest

from grpo_core.errors import DataError
from grpo_core.runs.logs import LogWarning, read_log


def _write(path, text: str):
    path.write_bytes(text.encode("utf-8"))
    return path


COMPLETIONS = ['Let me think\nstep by step, carefully\nanswer: ""4""', "short", "two\n\nlines (a blank one)"]


def _multiline_csv(n: int = 3, newline: str = "\n") -> str:
    rows = ["step,reward,loss,completion"]
    for s in range(1, n + 1):
        rows.append(f'{s},{0.4 + 0.1 * s:.2f},{0.1 / s:.4f},"{COMPLETIONS[(s - 1) % 3]}"')
    return newline.join(rows).replace("\n", newline) + newline


def test_quoted_cells_with_line_breaks_are_read_row_by_row(tmp_path):
    path = _write(tmp_path / "completions.csv", _multiline_csv())
    with warnings.catch_warnings():
        warnings.simplefilter("error", LogWarning)  # nothing dropped, merged or broken
        log = read_log(path)
    assert log.container == "csv" and log.train.index.tolist() == [1, 2, 3]
    assert log.train["reward"].tolist() == [0.5, 0.6, 0.7]
    assert log.train["loss"].tolist() == [0.1, 0.05, 0.0333]
    # the text column holds no numbers: dropped, with its first cell (line breaks and quotes kept) in the note
    assert log.notes == ["dropped column 'completion': no numbers in it "
                         "(e.g. 'Let me think\\nstep by step, carefully\\nanswer: \"4\"')"]


def test_two_hundred_rows_of_multiline_cells_are_not_broken_lines(tmp_path):
    # the case that read as "99 of 200 lines are broken"
    path = _write(tmp_path / "long.csv", _multiline_csv(200))
    log = read_log(path)
    assert len(log.train) == 200 and log.train.index[-1] == 200
    assert log.train.loc[200, "reward"] == pytest.approx(0.4 + 0.1 * 200)
    assert not any("corrupt" in n or "fewer fields" in n for n in log.notes)


def test_windows_line_ends_inside_and_between_records(tmp_path):
    path = _write(tmp_path / "crlf.csv", _multiline_csv(newline="\r\n"))
    log = read_log(path)
    assert log.train["reward"].tolist() == [0.5, 0.6, 0.7]
    assert log.train["loss"].tolist() == [0.1, 0.05, 0.0333]


@pytest.mark.parametrize("tail, why", [
    ('4,0.8,0.02,"an unfinished\nthought', "ends inside a quoted cell"),
    ("4,0.8", "has fewer fields than the other rows' 4"),
])
def test_a_record_cut_off_at_the_end_is_named_by_the_line_it_starts_on(tmp_path, tail, why):
    # records 1-3 take lines 2-4, 5 and 6-8; the cut record starts on line 9 (the killed run's last write)
    path = _write(tmp_path / "cut.csv", _multiline_csv() + tail)
    with pytest.warns(LogWarning, match=rf"line 9 \(the last\) {why} \(cut off mid-line") as rec:
        log = read_log(path)
    assert log.train.index.tolist() == [1, 2, 3] and log.train["reward"].tolist() == [0.5, 0.6, 0.7]
    assert "kept the 3 complete row(s) before it" in str(rec[0].message)


def test_a_short_record_among_multiline_ones_is_skipped_and_counted(tmp_path):
    # 20 two-line records, a short one-line record, 10 more: it starts on line 1 + 2 * 20 + 1 = 42
    rows = ["step,reward,completion"]
    rows += [f'{s},0.5,"line one\nline two"' for s in range(1, 21)]
    rows += ["21,0.5"]
    rows += [f'{s},0.6,"line one\nline two"' for s in range(22, 32)]
    path = _write(tmp_path / "short.csv", "\n".join(rows) + "\n")
    with pytest.warns(LogWarning, match=r"skipped 1 corrupt line\(s\) of 31 .*line\(s\) 42\)"):
        log = read_log(path)
    assert 21 not in log.train.index and len(log.train) == 30
    assert log.train.loc[31, "reward"] == 0.6


def test_many_short_records_are_still_refused(tmp_path):
    # steps 1, 4, ..., 28 are short: 10 of 30 rows, more than 10%
    rows = ["step,reward,completion"] + [f"{s},0.5" if s % 3 == 1 else f'{s},0.5,"a\nb"' for s in range(1, 31)]
    path = _write(tmp_path / "broken.csv", "\n".join(rows) + "\n")
    with pytest.raises(DataError, match=r"line 2 has fewer fields .* 10 of 30 lines are broken"):
        read_log(path)
