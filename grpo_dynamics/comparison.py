"""The comparison page of many runs: one self-contained HTML file (no request when opened).

The page holds the batch's counts, one table row per run (verdict, most severe finding, the reward's current
level, the end-of-run forecast with its 90% band), the reward curves overlaid (click a run in the legend to pick
it out; hover for its name), then each run's findings with what to try, and the logs that could not be read with
the reason. The Vega JavaScript is inlined as in :mod:`grpo_dynamics.report`.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

from grpo_core.runs.diagnostics.many import NOT_READ, RunRow

from .report import _CSS, _script_json, _write_atomic

__all__ = ["render_comparison", "write_comparison", "table_text", "forecast_text", "finding_text"]

_EXTRA_CSS = """
body { max-width: 1200px; }
.scroll { overflow-x: auto; } table.runs td, table.runs th { border-bottom: 1px solid #eee; padding: 0.25em 0.8em
0.25em 0; vertical-align: top; } table.runs th { position: sticky; top: 0; background: white; }
.v-healthy { color: #007a5a; font-weight: 600; } .v-unhealthy { color: #b34700; font-weight: 600; }
.v-inconclusive { color: #555; font-weight: 600; } .v-not-read { color: #8a1c1c; font-weight: 600; }
.num { font-variant-numeric: tabular-nums; white-space: nowrap; } td.run { min-width: 13em; overflow-wrap: anywhere; }
h3.run, .finding p { overflow-wrap: anywhere; }
#overlay { width: 100%; } #overlay svg { max-width: 100%; height: auto; } .vega-bindings { margin: 0.3em 0; }
"""

_VERDICT_TEXT = {"healthy": "healthy", "unhealthy": "NOT healthy", "inconclusive": "inconclusive",
                 NOT_READ: "not read"}


def forecast_text(row: RunRow) -> str:
    """The forecast cell: ``0.83 [0.71, 0.95]`` (the end-of-run mean reward and its 90% band); ``ended 0.85`` for a
    run that reached its planned end (the mean reward over its last 20% of steps); else ``-`` (the reason is in the
    details)."""
    fc = row.forecast or {}
    if "point" not in fc:
        return f"ended {fc['ended']:.3g}" if "ended" in fc else "-"
    return f"{fc['point']:.3g} [{fc['low']:.3g}, {fc['high']:.3g}]"


def finding_text(row: RunRow) -> str:
    """The top-finding cell: ``warning: truncation (from step 40)``, ``-`` when no finding is a warning or critical
    (an ``info`` finding is no verdict), the error when not read."""
    if not row.read:
        return row.error or "not read"
    if row.top is None or row.top["severity"] == "info":
        return "-"
    onset = f" (from step {row.top['onset']})" if row.top.get("onset") is not None else ""
    return f"{row.top['severity']}: {row.top['mode']}{onset}"


def table_text(rows: list[RunRow], *, seconds: float | None = None, notes: list[str] | None = None,
               columns: int | None = None) -> str:
    """The batch as a console table: a header line with the counts, one line per run (run, verdict, top finding,
    steps, now, end of run with its 90% band), then the logs not read with the reason.

    Run names are shown relative to the folder they share, cut in the middle to fit. ``columns``: the width to
    fit (default: the terminal's when the output is one, the ``COLUMNS`` environment variable when set, else no
    limit). Where the table is wider, the top finding moves to a line of its own under its run and ``now`` is
    left out (it is the forecast's point where there is a forecast; without one it is shown in its place).
    """
    import textwrap

    skipped = [r for r in rows if not r.read and not r.explicit]  # files found in a folder that are not logs
    rows = [r for r in rows if r.read or r.explicit]
    lines = [_summary(rows, skipped, seconds)]
    prefix, suffix, names = short_names(rows)
    if prefix or suffix:
        lines.append(f"in {prefix or './'}" + (f" (each .../{suffix})" if suffix else ""))
    limit = _columns() if columns is None else columns
    wide = [_wide_row(r, name, 52, bool(prefix)) for r, name in zip(rows, names)]
    header = ("run", "verdict", "top finding", "steps", "now", "end of run [90% band]")
    if limit is None or _width([header, *wide]) <= limit:
        lines += _aligned([header, *wide])
        tail = ("now: mean of the last 10% of the reward's points; end of run: the mean reward over the last 20% of "
                "the run, the current level with its calibrated 90% band")
    else:
        header = ("run", "verdict", "steps", "end of run [90% band]")
        short = [(name, verdict, steps, end if end != "-" else (f"now {now}" if now != "-" else "-"))
                 for name, verdict, _, steps, now, end in wide]
        room = max(20, limit - _width([header[1:], *[row[1:] for row in short]]) - 2)
        short = [(_cut_path(name, room, bool(prefix)), *row[1:]) for name, row in zip(names, short)]
        table = _aligned([header, *short])
        lines.append(table[0])
        for line, (_, _, top, *_) in zip(table[1:], wide):
            lines.append(line)
            if top not in ("-", "(see below)"):
                lines.append(f"    {top}")
        tail = ("end of run: the mean reward over the last 20% of the run, the current level (the mean of the last "
                "10% of the reward's points) with its calibrated 90% band")
    unread = [r for r in rows if not r.read]
    if unread:
        lines.append(f"not read ({len(unread)}):")
        lines += [f"  {name}: {r.error}" for r, name in zip(rows, names) if not r.read]
    if skipped:
        lines.append(f"found in the folders but not read as logs ({len(skipped)}; not counted):")
        lines += [f"  {_relative(r.label, prefix)}: {_first_sentence(r.error, r.path)}" for r in skipped]
    lines += list(notes or [])
    lines.append(tail + " (--json or --report for each run's findings)")
    if limit is not None:
        width = max(40, limit)
        lines[-1:] = textwrap.wrap(lines[-1], width)
        lines[:1] = textwrap.wrap(lines[0], width)
        # the lists of what was not read: each entry wrapped under its indent
        lines = [part for line in lines for part in
                 (textwrap.wrap(line, width, initial_indent="  ", subsequent_indent="      ")
                  if line.startswith("  ") and not line.startswith("    ") and len(line) > width else [line])]
    return "\n".join(lines)


def _summary(rows: list[RunRow], skipped: list[RunRow], seconds: float | None) -> str:
    counts = Counter(r.verdict for r in rows)
    summary = ", ".join(f"{counts[v]} {_VERDICT_TEXT[v]}" for v in ("healthy", "unhealthy", "inconclusive", NOT_READ)
                        if counts[v])
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    extra = f"; {len(skipped)} other file(s) were not logs" if skipped else ""
    return f"diagnosed {len(rows)} run{'s' * (len(rows) != 1)}{took}: {summary or 'none read'}{extra}"


def _relative(label: str, prefix: str) -> str:
    return label[len(prefix):] if prefix and label.startswith(prefix) else label


def _first_sentence(text: str | None, path: str = "", limit: int = 160) -> str:
    text = (text or "").split("; ")[0]
    text = text[len(path) + 2:] if path and text.startswith(f"{path}: ") else text  # the path is said already
    return text if len(text) <= limit else text[:limit - 3] + "..."


def short_names(rows: list[RunRow]) -> tuple[str, str, list[str]]:
    """``(prefix, suffix, names)``: the folder every run's label starts with, the file name every label ends with
    (``trainer_state.json`` in a sweep; ``""`` unless all share it), and each run's label without them."""
    labels = [r.label for r in rows]
    prefix = _common_folder(labels)
    names = [label[len(prefix):] for label in labels]
    ends = {n.rsplit("/", 1)[-1] for n in names}
    suffix = ""
    if len(names) > 1 and len(ends) == 1 and all("/" in n for n in names):
        shorter = [n.rsplit("/", 1)[0] for n in names]
        if len(set(shorter)) == len(shorter):
            suffix, names = ends.pop(), shorter
    return prefix, suffix, names


def _wide_row(r: RunRow, name: str, width: int, first: bool) -> tuple[str, ...]:
    steps = "-" if r.steps is None else f"{r.steps[0]}-{r.steps[1]}"
    top = finding_text(r) if r.read else "(see below)"
    return (_cut_path(name, width, first), _VERDICT_TEXT.get(r.verdict, r.verdict), top[:48], steps,
            "-" if r.now is None else f"{r.now:.4g}", forecast_text(r))


def _width(table) -> int:
    return sum(max(len(row[i]) for row in table) for i in range(len(table[0]))) + 2 * (len(table[0]) - 1)


def _aligned(table) -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]


def _columns() -> int | None:
    """The width to fit: ``COLUMNS`` when set, else the terminal's when stdout is one, else ``None``."""
    import os
    import shutil
    import sys

    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        if sys.stdout.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


def _common_folder(labels: list[str]) -> str:
    """The folder every label starts with (ending in "/"), or ""."""
    if len(labels) < 2:
        return ""
    parts = [label.split("/")[:-1] for label in labels]
    common = []
    for segs in zip(*parts):
        if len(set(segs)) != 1:
            break
        common.append(segs[0])
    return "/".join(common) + "/" if common else ""


def _cut_path(name: str, width: int, first: bool = True) -> str:
    """A run's name cut to ``width``: its last folder and file kept where they fit (what tells runs apart), the
    folders above shown as "..." (but the first, a run's folder in the folder given, with ``first``); a longer
    name cut in its middle."""
    if len(name) <= width:
        return name
    head, sep, run = name.partition(" [")
    run = sep + run
    if len(run) > max(16, width // 2):
        run = _cut(run[:-1], max(16, width // 2) - 1) + "]"
    parts = head.split("/")
    keep = 2 if "." in parts[-1] else 1  # a file: with its folder; a run folder alone
    tail = "/".join(parts[-keep:])
    room = max(12, width - len(run))
    if first and len(parts) > keep + 1:
        # deeper: the first folder (a run's folder in a collection) and the tail, each cut to its share
        first = parts[0]
        if len(first) + 3 + len(tail) <= room:
            return f"{first}/…/{tail}{run}"
        share = max(6, 2 * (room - 3) // 3)
        return f"{_cut(first, share)}/…/{_cut(tail, room - 3 - min(share, len(first)))}{run}"
    dots = "…/" if len(parts) > keep else ""
    if len(dots) + len(tail) <= room:
        return dots + tail + run
    return _cut(dots + tail, room) + run


def _cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    half = (width - 3) // 2
    return f"{text[:half]}...{text[len(text) - (width - 3 - half):]}"


def render_comparison(rows: list[RunRow], *, title: str | None = None) -> str:
    """The comparison page as an HTML string.

    Parameters
    ----------
    rows : list of RunRow
        From :func:`grpo_core.runs.diagnostics.many.diagnose_many` (with ``record=True`` for each run's
        findings and ``series=True`` for the curves).
    title : str, optional
        Page title (default: ``"GRPO diagnosis of N runs"``).

    Returns
    -------
    str
        A complete HTML document with the JavaScript inlined (about 1 MB).
    """
    import altair as alt
    import vl_convert

    skipped = [r for r in rows if not r.read and not r.explicit]  # files found in a folder that are not logs
    rows = [r for r in rows if r.read or r.explicit]
    title = title or f"GRPO diagnosis of {len(rows)} run{'s' * (len(rows) != 1)}"
    summary = _summary(rows, skipped, None).split(": ", 1)[1]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_CSS}{_EXTRA_CSS}</style>",
        f"<script>{vl_convert.javascript_bundle()}</script>",
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">{html.escape(summary)}. The forecast is the mean reward over the last 20% of each run '
        "with its calibrated 90% band (the current level; see each run's details); \"now\" is the mean of the "
        "last 10% of the reward's points.</p>",
        '<div class="scroll"><table class="runs"><tr><th>run</th><th>verdict</th>'
        "<th>top finding (warning or critical)</th><th>steps</th><th>now</th><th>end of run [90% band]</th></tr>",
    ]
    prefix, suffix, names = short_names(rows)
    if prefix or suffix:
        parts.insert(-1, f'<p class="meta">Runs in <code>{html.escape(prefix or "./")}</code>'
                         + (f" (each <code>.../{html.escape(suffix)}</code>)" if suffix else "") + ":</p>")
    for i, r in enumerate(rows):
        v = r.verdict.replace(" ", "-")
        steps = "-" if r.steps is None else f"{r.steps[0]}&ndash;{r.steps[1]}"
        now = "-" if r.now is None else f"{r.now:.3g}"
        parts.append(
            f'<tr><td class="run"><a href="#run-{i}">{html.escape(names[i])}</a></td>'
            f'<td class="v-{v}">{html.escape(_VERDICT_TEXT.get(r.verdict, r.verdict))}</td>'
            f"<td>{html.escape(finding_text(r))}</td><td class=\"num\">{steps}</td>"
            f'<td class="num">{now}</td><td class="num">{html.escape(forecast_text(r))}</td></tr>')
    parts.append("</table></div>")
    specs = {}
    curves = [(_cut_path(name, 60, bool(prefix)), s, y, z) for r, name in zip(rows, names) if r.series
              for s, y, z in zip(r.series["steps"], r.series["reward"], _scaled(r.series["reward"]))]
    if curves:
        parts += ["<h2>Reward curves</h2>",
                  '<p class="muted">Each run\'s mean reward per step (at most 600 points per run). Click a run in '
                  "the legend (or a curve) to pick it out, shift-click for more; hover a curve for its name. "
                  "Rewards of different scales compare better each scaled to its own range (0 its least, 1 its "
                  "most).</p>",
                  '<div class="chart" id="overlay"></div>']
        specs["overlay"] = _overlay(alt, curves).to_dict()
    parts.append("<h2>Each run</h2>")
    for i, r in enumerate(rows):
        parts.append(f'<div class="finding" id="run-{i}"><h3 class="run">{html.escape(names[i])}</h3>')
        parts += _run_details(r)
        parts.append("</div>")
    if skipped:
        parts.append(f'<h2>Found in the folders but not read as logs ({len(skipped)})</h2><ul class="muted">')
        parts += [f"<li>{html.escape(_relative(r.label, prefix))}: {html.escape(_first_sentence(r.error, r.path))}</li>"
                  for r in skipped]
        parts.append("</ul>")
    parts.append('<p class="muted">Definitions and thresholds: grpo_core.runs.diagnostics (book chapter "Reading a '
                 'training log"). Generated by grpo-dynamics.</p>')
    parts.append(
        "<script>const SPECS = " + _script_json(specs) + ";\n"
        "for (const [id, spec] of Object.entries(SPECS)) {\n"
        "  vegaEmbed('#' + id, spec, {actions: false, renderer: 'svg'})"
        ".catch(e => { document.getElementById(id).textContent = 'chart error: ' + e; });\n}\n</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _scaled(values: list[float]) -> list[float]:
    lo, hi = min(values, default=0.0), max(values, default=0.0)
    return [0.5 if hi == lo else (v - lo) / (hi - lo) for v in values]


def _overlay(alt, curves):
    import pandas as pd

    # inline values (600 points per run at most): Altair's 5,000-row guard is for data a notebook would embed
    data = alt.Data(values=pd.DataFrame(curves, columns=["run", "step", "reward", "scaled"]).to_dict("records"))
    runs = len({c[0] for c in curves})
    # a legend of up to 60 runs (click one to pick it out); past that the curves are named on hover only
    legend = (alt.Legend(orient="bottom", columns=1, symbolLimit=0, labelLimit=380, title="run (click to pick out)")
              if runs <= 60 else None)
    pick = alt.selection_point(fields=["run"], on="click", **({"bind": "legend"} if legend is not None else {}))
    view = alt.param(name="y_axis", value="mean reward",
                     bind=alt.binding_radio(options=["mean reward", "scaled to each run's range"], name="show: "))
    return (
        alt.Chart(data)
        .transform_calculate(y="y_axis == 'mean reward' ? datum.reward : datum.scaled")
        .mark_line(strokeWidth=1.4)
        .encode(
            x=alt.X("step:Q", title="step"),
            y=alt.Y("y:Q", title="mean reward (or scaled to the run's range)"),
            color=alt.Color("run:N", scale=alt.Scale(scheme="tableau20"), legend=legend),
            opacity=alt.condition(pick, alt.value(0.9), alt.value(0.08)),
            tooltip=["run:N", "step:Q", alt.Tooltip("reward:Q", format=".4g", title="mean reward")],
        )
        .add_params(pick, view)
        .properties(width="container", height=320)
    )


def _run_details(r: RunRow) -> list[str]:
    from widgets.evidence_charts import what_to_try

    out = [f'<p class="meta">{html.escape(r.path)}'
           + (f" &middot; run <code>{html.escape(r.run)}</code>" if r.run else "")
           + (f" &middot; format <code>{html.escape(r.format)}</code>" if r.format else "")
           + (f" &middot; steps {r.steps[0]}&ndash;{r.steps[1]}" if r.steps else "") + "</p>"]
    if not r.read:
        out.append(f"<p><b>Not read:</b> {html.escape(r.error or '')}</p>")
        return out
    record = r.record or {}
    findings = record.get("findings", [])
    if not findings:
        out.append("<p>No failure mode found in the checks that could be run.</p>")
    for why in record.get("missing", []):
        out.append(f"<p><b>Inconclusive:</b> {html.escape(why)}</p>")
    for f in findings:
        onset = f", onset at step {f['onset']}" if f.get("onset") is not None else ""
        out.append(
            f'<p><span class="badge {html.escape(f["severity"])}">{html.escape(f["severity"])}</span>'
            f"<b>{html.escape(f['mode'].replace('_', ' '))}</b> (steps {f['steps'][0]}&ndash;{f['steps'][1]}{onset}): "
            f"{html.escape(f['message'])}</p>")
        if f["severity"] != "info":
            out.append(f'<p class="try"><b>What to try:</b> {html.escape(what_to_try(_Finding(f)))}</p>')
    reading = [n for n in record.get("notes", []) if not n.startswith(("no end-of-run forecast", "data: "))]
    if reading:
        out.append('<details class="muted"><summary>reading the log</summary><ul>'
                   + "".join(f"<li>{html.escape(n)}</li>" for n in reading) + "</ul></details>")
    fc = r.forecast or {}
    if "point" in fc:
        out.append(f"<p>End of run (mean of the last 20% of steps up to {fc['horizon']:g}, "
                   f"{'planned' if fc['horizon_kind'] == 'planned' else 'the run assumed half done'}): "
                   f"{html.escape(forecast_text(r))}.</p>")
    elif "ended" in fc:
        out.append(f"<p>The run reached its planned end: the mean reward over its last 20% of steps was "
                   f"{fc['ended']:.4g}.</p>")
    elif fc.get("declined"):
        out.append(f'<p class="muted">{html.escape(fc["declined"])}.</p>')
    return out


class _Finding:
    """A finding's dict read as the attributes :func:`widgets.evidence_charts.what_to_try` reads."""

    def __init__(self, d: dict):
        self.evidence, self.advice, self.mode = d.get("evidence") or {}, d.get("advice"), d.get("mode", "")


def write_comparison(path: str | Path, rows: list[RunRow], **kwargs) -> Path:
    """Write :func:`render_comparison` to ``path`` (UTF-8, replaced whole) and return the path.

    Raises
    ------
    grpo_core.errors.DataError
        ``path`` is a directory or its folder does not exist.
    """
    return _write_atomic(path, render_comparison(rows, **kwargs))
