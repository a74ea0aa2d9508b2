"""The diagnosis report: one self-contained HTML page (no network access needed to view it).

The page holds the verdict, the findings (each with its evidence on a chart of
:mod:`widgets.evidence_charts`: the metrics it names around its onset, the thresholds it crossed,
the onset marked, and what to try), the forecast of where the reward ends (the benchmarked
forecaster's, with its band and the plateau when the laws determine one; "now" is the current level
as the forecaster sees it, and the row names the steps it averages), the reward's time scale (eta*K
per step, K and t90 with their intervals, or why the log gives none; no stability verdict, which a
reward curve does not give), the modes that could not be
checked and what reading the log did, then the charts of :mod:`widgets.diagnostics_charts`. The
Vega, Vega-Lite and Vega-Embed JavaScript is inlined from ``vl-convert-python``'s bundle, so the file
opens anywhere (an air-gapped cluster, an email attachment) and makes no request.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["render_report", "write_report"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 980px; color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.meta { color: #555; font-size: 0.92em; }
.verdict { display: inline-block; padding: 0.25em 0.7em; border-radius: 4px; font-weight: 600; color: white; }
.healthy { background: #009E73; } .unhealthy { background: #D55E00; }
.badge { display: inline-block; min-width: 5.5em; text-align: center; border-radius: 3px; color: white;
         font-size: 0.85em; padding: 0.05em 0.4em; margin-right: 0.5em; }
.info { background: #0072B2; } .warning { background: #E69F00; } .critical { background: #D55E00; }
li { margin: 0.35em 0; } table { border-collapse: collapse; } td, th { padding: 0.15em 0.8em 0.15em 0;
text-align: left; } .muted { color: #666; font-size: 0.9em; } .chart { margin: 0.6em 0 1.4em 0; }
code { background: #f4f4f4; padding: 0 0.2em; }
.finding { margin: 0.8em 0 1.4em 0; } .try { margin: 0.3em 0 0.3em 1.2em; }
"""

_TITLES = {
    "reward": "Reward, with the forecast of where it ends (band) and the law that describes it",
    "zero_spread": "Groups without reward spread (zero advantages), against the 0/1-reward expectation",
    "entropy": "Policy entropy",
    "kl": "KL divergence",
    "grad_norm": "Gradient norm",
    "clip": "Clipped tokens",
}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v))


def _script_json(obj: Any) -> str:
    """Strict JSON (no NaN) safe to place inside a <script> element: no raw ``<``, ``>``, ``&``,
    U+2028 or U+2029, whatever names the log holds (:func:`widgets.rendering.script_json`)."""
    from widgets.rendering import script_json

    return script_json(obj, allow_nan=False)


def render_report(log, diagnosis, *, group_size: int | None = None, binary_reward: bool | None = None,
                  num_prompts: int | None = None, title: str | None = None) -> str:
    """The report page as an HTML string.

    Parameters
    ----------
    log : grpo_core.runs.logs.RunLog
        The log that was diagnosed.
    diagnosis : grpo_core.runs.diagnostics.Diagnosis
        Its diagnosis (with the forecast's curves, as :func:`~grpo_core.runs.diagnostics.diagnose`
        returns it).
    group_size, binary_reward, num_prompts
        For the zero-spread chart's expectation (as given to ``diagnose``).
    title : str, optional
        Page title (default: the log's file name).

    Returns
    -------
    str
        A complete HTML document with the JavaScript inlined (about 1 MB).

    Raises
    ------
    grpo_core.errors.GrpoError
        From the chart builders, if the log lacks what they draw.

    Examples
    --------
    >>> from grpo_core.runs import diagnostics, synthetic
    >>> log = synthetic.synthetic_log("policy_concentration", n_steps=80)
    >>> page = render_report(log, diagnostics.diagnose(log, n_boot=0))
    >>> "policy_concentration" in page and "<script src=" not in page
    True
    """
    import vl_convert

    from grpo_core.errors import GrpoError
    from widgets.diagnostics_charts import diagnosis_charts
    from widgets.evidence_charts import evidence_chart, what_to_try

    name = title or Path(str(log.source)).name
    charts = diagnosis_charts(log, diagnosis, group_size=group_size, binary_reward=binary_reward,
                              num_prompts=num_prompts, width=820)
    verdict = ('<span class="verdict healthy">healthy</span>' if diagnosis.healthy
               else '<span class="verdict unhealthy">needs attention</span>')
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>GRPO diagnosis: {html.escape(name)}</title><style>{_CSS}</style>",
        f"<script>{vl_convert.javascript_bundle()}</script>",
        "</head><body>",
        f"<h1>GRPO training diagnosis: {html.escape(name)}</h1>",
        f'<p class="meta">{html.escape(str(log.source))} &middot; format '
        f'<code>{html.escape(log.format)}</code> '
        f"({html.escape(log.container)}) &middot; steps {diagnosis.steps[0]}&ndash;{diagnosis.steps[1]} "
        f"({len(log.train)} training rows, {len(log.eval)} eval rows) &middot; reward_std: "
        f"<code>{html.escape(log.reward_std_kind)}</code></p>",
        f"<p>{verdict}</p>",
        "<h2>Findings</h2>",
    ]
    specs = {}
    if diagnosis.findings:
        for i, f in enumerate(diagnosis.findings):
            onset = f", onset at step {f.onset}" if f.onset is not None else ""
            div = f"evidence_{i}"
            parts.append(
                f'<div class="finding"><span class="badge {html.escape(f.severity)}">{html.escape(f.severity)}</span>'
                f"<b>{html.escape(f.mode.replace('_', ' '))}</b> (steps {f.steps[0]}&ndash;{f.steps[1]}{onset}): "
                f"{html.escape(f.message)}"
                f'<p class="try"><b>What to try:</b> {html.escape(what_to_try(f))}</p>')
            try:
                specs[div] = evidence_chart(log, f, num_prompts=num_prompts, width=780).to_dict()
                parts.append(f'<div class="chart" id="{div}"></div>')
            except GrpoError as exc:  # a finding whose metrics the log lacks still gets its text
                parts.append(f'<p class="muted">no evidence chart: {html.escape(str(exc))}</p>')
            parts.append("</div>")
    else:
        parts.append("<p>No failure mode found in the checks that could be run.</p>")
    if diagnosis.skipped:
        parts.append(
            '<p class="muted">Not checked (the log lacks what the check needs):</p><ul class="muted">'
        )
        parts += [f"<li>{html.escape(m.replace('_', ' '))}: {html.escape(why)}</li>"
                  for m, why in diagnosis.skipped.items()]
        parts.append("</ul>")
    parts.append("<h2>Forecast</h2>")
    fc = diagnosis.forecast
    if fc is not None:
        from grpo_core.runs.forecast import range_text

        h, (a, b) = fc.horizon, fc.now_steps
        wide = fc.wide_band_note
        rows = [
            (f"where the reward ends: mean of steps {round(0.8 * h):d}-{h:g}", fc.shown_point),
            (f"{fc.level:.0%} band" + (f" (clipped to {range_text(fc.shown_range)})" if fc.band_clipped else ""),
             f"{fc.shown_low:.4g} to {fc.shown_high:.4g}" + (f" ({wide})" if wide else "")),
            ("what it is", fc.evidence),
            ("the run's end", fc.horizon_note),
            (f"now (the current level: mean of steps {a:g}-{b:g})", fc.now),
        ]
        if fc.law_fit is not None:  # the law that describes the curve (not a second forecast)
            rows += [
                ("law describing the curve (lowest AIC)", fc.law_fit.law),
                ("R² (raw / smoothed)", f"{fc.law_fit.r2:.3f} / {fc.law_fit.r2_smoothed:.3f}"),
            ]
        parts.append(
            "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{_fmt(v)}</td></tr>" for k, v in rows) + "</table>"
        )
        if fc.caveat:
            parts.append(f"<p><b>Caveat:</b> {html.escape(fc.caveat)}.</p>")
    else:
        why = next((n for n in diagnosis.notes if n.startswith("no end-of-run forecast")), "no reward column")
        parts.append(f"<p>{html.escape(why)}.</p>")
    parts += _curvature_section(getattr(diagnosis, "implied_curvature", None))
    osc = diagnosis.oscillation
    if osc is not None and osc.detected:
        parts.append(
            f"<p>Oscillation of the reward: period {osc.period:.1f} steps, amplitude x"
            f"{osc.growth_factor:.3g} over the log (damping ratio {osc.damping_ratio:.3g}; "
            f"Fisher g-test p = {osc.p_value:.2g}).</p>"
        )
    parts.append("<h2>Charts</h2>")
    for key, chart in charts.items():
        div = f"chart_{key}"
        specs[div] = chart.to_dict()
        title = _TITLES.get(key, key)
        if key == "zero_spread" and "0/1-reward expectation" not in json.dumps(specs[div]):
            # the expectation is drawn only for a 0/1 reward with a known G; say what the panel holds
            title = title.split(", against")[0]
        parts.append(f'<h3 class="muted">{html.escape(title)}</h3><div class="chart" id="{div}"></div>')
    parts.append('<h2>Reading the log</h2><ul class="muted">')
    parts += [f"<li>{html.escape(n)}</li>" for n in log.notes] or ["<li>nothing to report</li>"]
    parts.append("</ul>")
    parts.append(
        '<p class="muted">Definitions and thresholds: grpo_core.runs.diagnostics (book chapter "Reading a '
        'training log"). Generated by grpo-dynamics.</p>'
    )
    parts.append(
        "<script>const SPECS = " + _script_json(specs) + ";\n"
        "for (const [id, spec] of Object.entries(SPECS)) {\n"
        "  vegaEmbed('#' + id, spec, {actions: false, renderer: 'svg'})"
        ".catch(e => { document.getElementById(id).textContent = 'chart error: ' + e; });\n}\n</script>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def _curvature_section(ic: dict[str, Any] | None) -> list[str]:
    """The reward's time scale (eta*K per step, K, t90, with their intervals) and why it is no stability
    verdict, or why the log gives none."""
    if ic is None:
        return []
    out = ["<h2>Time scale of the reward</h2>"]
    if ic.get("reason") is not None:
        out.append(f"<p>No time scale read from this log: {html.escape(ic['reason'])}.</p>")
    else:
        pre = " (Adam: the preconditioned K/&radic;v)" if ic.get("preconditioned") else ""
        level = f"{ic['level']:.0%}"
        unit = html.escape(str(ic.get("clock_unit") or "steps"))
        t90 = ("none (the fit does not reach 90% of its plateau)" if ic.get("t90") is None else
               f"{ic['t90']:.4g} [{_fmt(ic.get('t90_lo'))}, {_fmt(ic.get('t90_hi'))}] {unit}"
               + (f" (logged step {ic['t90_step']:.4g})" if ic["clock"] == "learning_rate"
                  and ic.get("t90_step") is not None else ""))
        rows = [
            ("&eta;K per step (the time scale)", f"{ic['a']:.4g} [{ic['a_lo']:.4g}, {ic['a_hi']:.4g}] ({level})"),
            (f"K per unit learning rate{pre}", f"{ic['K']:.4g} [{ic['lo']:.4g}, {ic['hi']:.4g}]"),
            ("time to 90% of the fit's plateau", t90),
            ("regime of the fitted curve", html.escape(str(ic["regime"]).replace("_", " "))),
            ("reference learning rate", f"{ic['eta']:.3g} "
             + ("(peak of the logged schedule; cumulative-learning-rate clock)" if ic["clock"] == "learning_rate"
                else "(constant; step clock)")),
        ]
        out.append("<table>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>")
        out.append(f"<p>{html.escape(ic['no_stability_verdict'])}</p>")
        if ic.get("caveat"):
            out.append(f"<p><b>Caveat:</b> {html.escape(ic['caveat'])}.</p>")
    out.append(f'<p class="muted">Conventions ({html.escape(str(ic.get("settings_source")))}): '
               f"{html.escape(str(ic.get('conventions')))}</p>")
    return out


def write_report(path: str | Path, log, diagnosis, **kwargs) -> Path:
    """Write :func:`render_report` to ``path`` (UTF-8) and return the path.

    Raises
    ------
    grpo_core.errors.DataError
        If ``path`` is a directory or its folder does not exist.
    """
    _check_target(Path(path))
    return _write_atomic(path, render_report(log, diagnosis, **kwargs))


def _check_target(p: Path) -> None:
    from grpo_core.errors import DataError

    if p.is_dir():
        raise DataError(f"{p}: is a directory; give the report's file name (e.g. report.html)")
    if not p.parent.exists():
        raise DataError(f"{p.parent}: no such folder for the report")


def _write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole: rendered in full, then written beside the target and renamed over it, so a
    failure never leaves a truncated page in place of an earlier one; a name that is not valid UTF-8 (a Linux file
    name's undecodable bytes) is written with "?" for those bytes instead of failing."""
    p = Path(path)
    _check_target(p)
    data = text.encode("utf-8", errors="replace")
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p
