"""The evidence of a finding on a chart: the metric around its onset, the threshold it crossed, what to try.

Used by the ``grpo-dynamics diagnose --report`` page (one chart per finding). Generic over
findings: what is drawn is read from a :class:`~grpo_core.runs.diagnostics.Finding`'s ``mode``,
``steps``, ``onset`` and ``evidence``, so a mode added to :mod:`grpo_core.runs.diagnostics` later
gets a chart without a change here:

* the **metrics** are the log columns the finding names: ``evidence["metric"]`` or
  ``evidence["metrics"]`` when a check sets them, the evidence keys that are columns
  (``dynamic_instability`` keys its signals by metric), string evidence values that are columns
  (``advantage_degeneration``'s ``source``), columns named in the message, and the reward when
  nothing else is named;
* the **thresholds** are ``evidence["threshold"]`` (a number, for the first metric) or
  ``evidence["thresholds"]`` (metric to number) when a check sets them; for the four modes of the
  paper they are rebuilt from the evidence and :class:`~grpo_core.runs.diagnostics.Thresholds`
  (the zero-spread level, half and a tenth of the initial entropy, 10x and 100x the floored early
  level of a growing metric);
* the **window** is the finding's steps with a margin on each side (half their length, at least
  10 steps), the onset (or the first step) a dashed rule and the finding's steps shaded.

Colours: the severities of :data:`widgets.diagnostics_charts.SEVERITY_COLORS` (Okabe-Ito).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.errors import ParameterError
from grpo_core.runs import diagnostics as _diag
from grpo_core.runs.diagnostics.findings import ADVICE
from grpo_core.runs.logs import RunLog

from .diagnostics_charts import SEVERITY_COLORS

__all__ = ["evidence_series", "evidence_chart", "what_to_try", "ADVICE"]

_LINE = "#333333"
_RULE = "#555555"

#: What to try, per mode (the modes of :mod:`grpo_core.runs.diagnostics` and those the issue adds).
# What to try, per mode: the one table lives with the findings (grpo_core.runs.diagnostics.findings).
_GENERIC_ADVICE = "Look at the metric around the onset and at a few completions from those steps."
_MAX_METRICS = 3


def _check(log, finding) -> None:
    if not isinstance(log, RunLog):
        raise ParameterError("log", f"`log` must be a grpo_core.runs.logs.RunLog; got {type(log).__name__}")
    for attr in ("mode", "severity", "steps", "onset", "evidence", "message"):
        if not hasattr(finding, attr):
            raise ParameterError("finding", f"`finding` must be a grpo_core.runs.diagnostics.Finding (no "
                                 f"`{attr}`); got {type(finding).__name__}")


def what_to_try(finding) -> str:
    """What to try about a finding: ``evidence["what_to_try"]`` when the check gives it, else
    :data:`ADVICE` for its mode, else a generic line. Info findings about saturation say "done"."""
    ev = getattr(finding, "evidence", {}) or {}
    text = ev.get("what_to_try") or getattr(finding, "advice", None)
    return str(text) if text else ADVICE.get(getattr(finding, "mode", ""), _GENERIC_ADVICE)


def _named_metrics(log: RunLog, finding) -> list[str]:
    """The log columns the finding names, most specific first (at most three)."""
    cols = [str(c) for c in log.train.columns]
    colset = set(cols)
    ev = finding.evidence or {}
    named: list[str] = []
    explicit = ev.get("metrics") or ([ev["metric"]] if isinstance(ev.get("metric"), str) else [])
    named += [m for m in explicit if isinstance(m, str)]
    named += [k for k, v in ev.items() if k in colset and isinstance(v, dict)]
    named += [v for v in ev.values() if isinstance(v, str) and v in colset]
    if finding.mode == "policy_concentration":
        named.append("entropy")
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_/]*", finding.message or ""))
    named += [c for c in cols if c in words and c not in ("step", "epoch")]
    if finding.mode == "train_eval_decoupling" or not named:
        named.append("reward")
    out: list[str] = []
    for m in named:
        if m in colset and m not in out and log.train[m].notna().any():
            out.append(m)
    return out[:_MAX_METRICS]


def _thresholds(finding, metrics: list[str], th) -> dict[str, list[tuple[float, str]]]:
    """Rules per metric: ``(value, label)``."""
    ev = finding.evidence or {}
    rules: dict[str, list[tuple[float, str]]] = {m: [] for m in metrics}

    def add(metric, value, label):
        if metric in rules and isinstance(value, (int, float)) and np.isfinite(value):
            rules[metric].append((float(value), label))

    if isinstance(ev.get("threshold"), (int, float)) and metrics:
        add(metrics[0], ev["threshold"], "threshold")
    for m, v in (ev.get("thresholds") or {}).items():
        add(m, v, "threshold")
    if finding.mode == "policy_concentration" and "entropy_initial" in ev:
        add("entropy", th.entropy_warning * ev["entropy_initial"], f"{th.entropy_warning:g} x initial")
        add("entropy", th.entropy_critical * ev["entropy_initial"], f"{th.entropy_critical:g} x initial")
    if finding.mode == "dynamic_instability":
        for m in metrics:
            g = ev.get(m)
            if isinstance(g, dict) and "baseline" in g:
                if m.startswith("clip_ratio"):
                    add(m, th.clip_critical, "critical level")
                else:
                    add(m, th.growth_warning * g["baseline"], f"{th.growth_warning:g} x early level")
                    add(m, th.growth_critical * g["baseline"], f"{th.growth_critical:g} x early level")
    return rules


def _window(log: RunLog, finding) -> tuple[float, float]:
    first, last = (int(finding.steps[0]), int(finding.steps[1])) if finding.steps else (0, 0)
    onset = finding.onset if finding.onset is not None else first
    lo, hi = min(first, onset), max(last, onset)
    pad = max(10, (hi - lo) // 2)
    idx = log.train.index
    return float(max(idx.min(), lo - pad)), float(min(idx.max(), hi + pad))


def _thin(df: pd.DataFrame, max_points: int) -> pd.DataFrame:
    n = len(df)
    if n <= max_points:
        return df
    k = int(np.ceil(n / max_points))
    g = np.arange(n) // k
    return df.groupby(g).agg({"step": "last", "value": "mean", "series": "first"}).reset_index(drop=True)


def evidence_series(log: RunLog, finding, *, num_prompts: int | None = None,
                    thresholds=None, max_points: int = 600) -> dict[str, Any]:
    """The numbers an evidence chart draws.

    Parameters
    ----------
    log : RunLog
        The diagnosed log.
    finding : grpo_core.runs.diagnostics.Finding
    num_prompts : int, optional
        As given to ``diagnose`` (the zero-spread fraction of ``advantage_degeneration``).
    thresholds : Thresholds, optional
        As given to ``diagnose`` (default :data:`~grpo_core.runs.diagnostics.DEFAULT_THRESHOLDS`).
    max_points : int
        Most points per series (bin means beyond).

    Returns
    -------
    dict
        ``series`` (DataFrame ``step``, ``value``, ``series``: the metrics inside the window),
        ``rules`` (DataFrame ``series``, ``value``, ``label``: the thresholds), ``window``
        ``(first, last)``, ``onset`` (a step), ``span`` (the finding's steps), ``metrics``.

    Raises
    ------
    ParameterError
        ``log`` is not a RunLog or ``finding`` not a Finding.

    Examples
    --------
    >>> from grpo_core.runs import diagnostics, synthetic
    >>> log = synthetic.synthetic_log("policy_concentration", n_steps=120)
    >>> f = diagnostics.diagnose(log, forecast=False).find("policy_concentration")
    >>> e = evidence_series(log, f)
    >>> e["metrics"], sorted(e["rules"]["label"])
    (['entropy', 'reward'], ['0.1 x initial', '0.5 x initial'])
    """
    _check(log, finding)
    th = thresholds or _diag.DEFAULT_THRESHOLDS
    lo, hi = _window(log, finding)
    metrics = _named_metrics(log, finding)
    frames = []
    rules = _thresholds(finding, metrics, th)
    if finding.mode == "advantage_degeneration":
        # the smoothed zero-spread fraction is what the level was compared with
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = _diag.zero_spread_series(log, num_prompts=num_prompts, thresholds=th)
        name = "zero-spread fraction (smoothed)"
        frames.append(pd.DataFrame({"step": table["step"].astype(float), "value": table["smoothed"].astype(float),
                                    "series": name}))
        rules[name] = [(float(finding.evidence["level"]), "level crossed")] if "level" in finding.evidence else []
        metrics = [name] + [m for m in metrics if m not in ("frac_reward_zero_std", "reward_std")][:_MAX_METRICS - 1]
    measure = str((finding.evidence or {}).get("measure", ""))
    if measure.startswith("reward function ") and log.has(f"reward/{measure[16:]}"):
        metrics = (metrics + [f"reward/{measure[16:]}"])[:_MAX_METRICS]
    if measure.startswith("eval ") and len(log.eval) and measure[5:] in log.eval.columns:
        # the eval measure (its own rows) drawn as a panel of its own
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s, v = log.series(measure[5:], split="eval")
        frames.append(pd.DataFrame({"step": s.astype(float), "value": v.astype(float), "series": measure}))
        metrics = metrics[:_MAX_METRICS - 1] + [measure]
    for m in metrics:
        if m in log.train.columns:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s, v = log.series(m)
            frames.append(pd.DataFrame({"step": s.astype(float), "value": v.astype(float), "series": m}))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["step", "value", "series"])
    df = df[(df["step"] >= lo) & (df["step"] <= hi) & np.isfinite(df["value"])]
    df = pd.concat([_thin(g, max_points) for _, g in df.groupby("series", sort=False)], ignore_index=True) \
        if len(df) else df
    rule_rows = [{"series": m, "value": v, "label": lab} for m in metrics for v, lab in rules.get(m, [])]
    return {"series": df, "rules": pd.DataFrame(rule_rows, columns=["series", "value", "label"]),
            "window": (lo, hi), "onset": finding.onset if finding.onset is not None else int(finding.steps[0]),
            "span": (int(finding.steps[0]), int(finding.steps[1])), "metrics": metrics}


def evidence_chart(log: RunLog, finding, *, num_prompts: int | None = None,
                   thresholds=None, width: int = 620, height: int = 130, max_points: int = 600) -> alt.VConcatChart:
    """One panel per metric the finding names, around its onset, with the thresholds as rules.

    Parameters
    ----------
    log, finding, num_prompts, thresholds, max_points
        As :func:`evidence_series`.
    width, height : int
        Size of each panel (pixels).

    Returns
    -------
    altair.VConcatChart
        Panels sharing the step axis; the finding's steps shaded in its severity's colour, the
        onset a dashed rule, each threshold a dotted grey rule with its label.

    Raises
    ------
    ParameterError
        As :func:`evidence_series`.

    Examples
    --------
    >>> from grpo_core.runs import diagnostics, synthetic
    >>> log = synthetic.synthetic_log("dynamic_instability", n_steps=120)
    >>> f = diagnostics.diagnose(log, forecast=False).find("dynamic_instability")
    >>> len(evidence_chart(log, f).to_dict()["vconcat"]) >= 1
    True
    """
    e = evidence_series(log, finding, num_prompts=num_prompts, thresholds=thresholds,
                        max_points=max_points)
    color = SEVERITY_COLORS.get(finding.severity, _RULE)
    xscale = alt.Scale(domain=list(e["window"]), nice=False)
    x = alt.X("step:Q", title="optimizer step", scale=xscale)
    span = pd.DataFrame([{"start": e["span"][0], "end": e["span"][1]}])
    onset = pd.DataFrame([{"step": e["onset"], "what": f"onset ({finding.severity})"}])
    panels = []
    for m in e["metrics"] or ["(no metric)"]:
        df = e["series"][e["series"]["series"] == m]
        rules = e["rules"][e["rules"]["series"] == m]
        v = np.concatenate([df["value"].to_numpy(float), rules["value"].to_numpy(float)])
        log_scale = bool(v.size and np.all(v > 0) and v.max() / v.min() > 100)
        y = alt.Y("value:Q", title=m, scale=alt.Scale(type="log") if log_scale else alt.Scale(zero=False))
        layers = [
            alt.Chart(span).mark_rect(opacity=0.12, color=color).encode(x=alt.X("start:Q", scale=xscale),
                                                                        x2="end:Q"),
            alt.Chart(df).mark_line(strokeWidth=1.5, color=_LINE).encode(
                x=x, y=y, tooltip=["series:N", "step:Q", alt.Tooltip("value:Q", format=".4g")]),
            alt.Chart(onset).mark_rule(strokeDash=[6, 4], strokeWidth=1.5, color=color).encode(
                x="step:Q", tooltip=["what:N", "step:Q"]),
        ]
        if len(rules):
            layers.append(alt.Chart(rules).mark_rule(strokeDash=[2, 3], color=_RULE).encode(
                y="value:Q", tooltip=["label:N", alt.Tooltip("value:Q", format=".4g")]))
            layers.append(alt.Chart(rules).mark_text(align="left", dx=3, dy=-5, fontSize=10, color=_RULE).encode(
                x=alt.value(2), y="value:Q", text="label:N"))
        panels.append(alt.layer(*layers).properties(width=width, height=height))
    title = f"{finding.mode.replace('_', ' ')} ({finding.severity}): evidence"
    return alt.vconcat(*panels).properties(title=title)
