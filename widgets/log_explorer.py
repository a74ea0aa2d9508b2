"""Log explorer: pick a shipped training log or upload your own; see the fits, the forecast, the findings.

Live kernels only (Jupyter, Colab, VS Code): the file is read, fitted and diagnosed in Python by
:func:`grpo_core.runs.logs.read_log`, :func:`grpo_core.laws.fit_all`,
:func:`grpo_core.runs.forecast.forecast_end` (the end-of-run forecast of ``fit`` and ``diagnose``) and
:func:`grpo_core.runs.diagnostics.diagnose`; the charts are the builders of :mod:`widgets.laws_charts`.
Nothing is computed here that the library does not compute.
"""

from __future__ import annotations

import html
import tempfile
import warnings
from pathlib import Path

import ipywidgets as widgets

from grpo_core import laws
from grpo_core.errors import GrpoError
from grpo_core.runs import datasets, logs

from ._controls import Explorer, NumberControl, readout_table, short_message

__all__ = ["LogExplorer", "log_explorer"]

#: Files the upload button offers (any text log :func:`grpo_core.runs.logs.read_log` reads).
UPLOAD_ACCEPT = ".csv,.tsv,.txt,.json,.jsonl"


def _reward_metrics(log: logs.RunLog) -> list[str]:
    """Columns worth fitting: the reward first, then per-function rewards, then the rest."""
    names = [m for m in log.metrics if log.has(m)]
    rewards = [m for m in names if m == "reward" or m.startswith("reward/")]
    others = [m for m in names if m not in rewards]
    return rewards + others


class LogExplorer(Explorer):
    """The widget returned by :func:`log_explorer` (see there)."""

    def __init__(self, log: str | None = None, metric: str = "reward", fraction: float = 0.4):
        super().__init__()
        shipped = datasets.list_real_logs()
        if not shipped:
            raise GrpoError("no shipped logs found in grpo_core.data.real_logs")
        self._uploaded: dict[str, logs.RunLog] = {}
        self.run_log: logs.RunLog | None = None
        self.comparison: laws.FitComparison | None = None
        self.forecast: dict | None = None
        self.findings = None
        start = log if log is not None else next(
            (n for n in shipped if n.startswith("qwen")), shipped[0])
        self.source = widgets.Dropdown(options=shipped, value=start, description="log",
                                       layout={"width": "32em"})
        self.upload = widgets.FileUpload(accept=UPLOAD_ACCEPT, multiple=False,
                                         description="Upload a log")
        self.metric = widgets.Dropdown(options=[metric], value=metric, description="metric",
                                       layout={"width": "32em"})
        self.fraction = NumberControl("fraction", "forecast from", fraction, 0.1, 1.0, 0.05,
                                      continuous_update=False,
                                      tooltip="fraction of the steps used to fit the forecast")
        self.summary = widgets.HTML()
        self.table = widgets.HTML()
        self.findings_html = widgets.HTML()
        self._output("fits")
        self._output("forecast")
        self._busy = False
        self.source.observe(lambda _: self._load_selected(), names="value")
        self.metric.observe(lambda _: self._update(), names="value")
        self.fraction.observe_value(lambda _: self._update_forecast())
        self.upload.observe(self._on_upload, names="value")
        self.children = [
            widgets.HTML("<b>Log explorer</b>: fit, forecast and diagnose a GRPO training log"),
            widgets.HBox([self.source, self.upload]),
            self.metric, self.fraction, self.status, self.summary,
            self.outputs["fits"], self.table, self.outputs["forecast"], self.findings_html,
        ]
        self._load_selected()

    # -- loading ----------------------------------------------------------------------------
    def _load_selected(self) -> None:
        name = self.source.value
        if name in self._uploaded:
            self._set_log(self._uploaded[name])
            return
        self._begin()
        self._run(lambda: self._set_log(self._read(datasets.real_log_path(name))), "reading")

    @staticmethod
    def _read(path) -> logs.RunLog:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", logs.LogWarning)
            return logs.read_log(path)

    def load_bytes(self, name: str, content: bytes) -> bool:
        """Read an uploaded file's ``content`` as a log and select it; False if it is not a log.

        A file that :func:`grpo_core.runs.logs.read_log` cannot read is refused with the message
        ``"<name> is not a training log this explorer can read: <why>"`` and the explorer keeps
        the log it had.
        """
        safe = Path(name).name or "upload"
        path = None
        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / safe
                path.write_bytes(bytes(content))
                log = self._read(path)
            if not _reward_metrics(log):
                raise GrpoError("it has no numeric metric column")
        except Exception as exc:  # noqa: BLE001 - report, never raise into the widget
            self.error = exc
            why = short_message(exc)
            if path is not None:
                why = why.replace(f"{path}: ", "").replace(str(path), safe)
            self.status.show(f"{safe} is not a training log this explorer can read: {why}", "error")
            return False
        label = f"uploaded: {safe}"
        self._uploaded[label] = log
        options = list(self.source.options)
        if label not in options:
            options.append(label)
        with self.source.hold_trait_notifications():
            self.source.options = options
        if self.source.value == label:
            self._set_log(log)
        else:
            self.source.value = label  # triggers _load_selected
        return True

    def _on_upload(self, change) -> None:
        files = change["new"]
        if not files:
            return
        item = files[0]
        self.load_bytes(item["name"], item["content"])
        self.upload.value = ()  # so that the same file can be uploaded again

    def _set_log(self, log: logs.RunLog) -> None:
        self.run_log = log
        metrics = _reward_metrics(log)
        current = self.metric.value if self.metric.value in metrics else metrics[0]
        with self.metric.hold_trait_notifications():
            self.metric.options = metrics
            self.metric.value = current
        self.summary.value = readout_table([
            ("source", Path(log.source).name),
            ("format", f"{log.format} ({log.container})"),
            ("training steps", f"{len(log.train)}"),
            ("reward_std means", log.reward_std_kind),
        ])
        self._update()

    # -- computing --------------------------------------------------------------------------
    def _update(self) -> None:
        if self.run_log is None:
            return
        self._begin()
        self.values = {}
        self._run(self._update_fits, "fit")
        self._run(self._update_forecast_now, "forecast")
        self._run(self._update_findings, "diagnostics")

    def _series(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", logs.LogWarning)
            return self.run_log.series(self.metric.value)

    def _update_fits(self) -> None:
        from . import laws_charts

        self.comparison = None
        self.table.value = ""
        self.outputs["fits"].outputs = ()
        self.specs.pop("fits", None)
        t, y = self._series()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            comparison = laws.fit_all(t, y)
        self.comparison = comparison
        self._chart("fits", laws_charts.fits_chart(comparison, metric=self.metric.value, width=440))
        # the law whose plateau the curve fixes, as `fit` stars it (not a lower AIC bought with a plateau at a bound)
        best = comparison.results[comparison.preferred]
        self.values.update(best_law=comparison.preferred, plateau=best.plateau, r2=best.r2,
                           steps=int(len(t)))
        # inline padding: the notebook's and the book's table styles differ, and an exported page has neither
        td = 'style="padding:2px 12px 2px 0;text-align:{}"'
        rows = "".join(
            f"<tr><td {td.format('left')}>{html.escape(name)}</td><td {td.format('right')}>{r.r2:.3f}</td>"
            f"<td {td.format('right')}>{d:.1f}</td>"
            f"<td {td.format('right')}>{r.plateau:.3f} ± {r.plateau_stderr:.3f}</td></tr>"
            for (name, r), d in zip(comparison.results.items(), comparison.delta().values())
        )
        self.table.value = (
            f'<table style="border-collapse:collapse"><tr><th {td.format("left")}>law</th>'
            f'<th {td.format("right")}>R²</th><th {td.format("right")}>Δ{comparison.criterion.upper()}</th>'
            f'<th {td.format("right")}>plateau ± s.e.</th></tr>{rows}</table>'
        )

    def _update_forecast(self) -> None:
        if self.run_log is None:
            return
        self._begin()
        self._run(self._update_forecast_now, "forecast")

    def _update_forecast_now(self) -> None:
        from . import laws_charts

        self.forecast = None
        for key in ("forecast_final", "forecast_low", "forecast_high", "forecast_now", "actual_final"):
            self.values.pop(key, None)
        self.outputs["forecast"].outputs = ()
        self.specs.pop("forecast", None)
        fraction = float(self.fraction.value)
        grid = laws_charts.static_forecast_grid(self.run_log, metric=self.metric.value, fractions=(fraction,))
        row = grid["labels"].iloc[0]
        self.forecast = row.to_dict()
        self.values.update(forecast_final=float(row.final), forecast_low=float(row.low),
                           forecast_high=float(row.high), forecast_now=float(row.now), actual_final=float(row.actual))
        self._chart("forecast", laws_charts.static_forecast_chart(grid, fraction=int(row.fraction),
                                                                  metric=self.metric.value, width=470))

    def _update_findings(self) -> None:
        from grpo_core.runs import diagnostics

        self.findings = None
        self.findings_html.value = ""
        report = diagnostics.diagnose(self.run_log, forecast=False)
        self.findings = report
        self.findings_html.value = _findings_html(report).replace(
            html.escape(str(self.run_log.source)), html.escape(Path(self.run_log.source).name))
        self.values["findings"] = _finding_names(report)


def _finding_names(report) -> list[str]:
    return [f.mode for f in report.findings]


def _findings_html(report) -> str:
    """The diagnosis as HTML: one item per finding (mode, severity, steps, message), then the
    modes that could not be checked and why."""
    items = "".join(
        f"<li><b>{html.escape(f.mode.replace('_', ' '))}</b> ({html.escape(f.severity)}, steps "
        f"{f.steps[0]}-{f.steps[1]}): {html.escape(f.message)}</li>"
        for f in report.findings
    )
    skipped = "".join(
        f"<li>{html.escape(mode.replace('_', ' '))}: not checked ({html.escape(why)})</li>"
        for mode, why in report.skipped.items()
    )
    verdict = "healthy: no warning" if report.healthy else "needs attention"
    body = f"<ul>{items}</ul>" if items else "<p>no failure mode found</p>"
    return (f"<b>Diagnostics</b> ({verdict})" + body
            + (f'<div style="color:#555">Not checked:<ul>{skipped}</ul></div>' if skipped else ""))


def log_explorer(log: str | None = None, *, metric: str = "reward", fraction: float = 0.4) -> LogExplorer:
    """An interactive view of one training log: fits of the reward laws, a forecast, the diagnostics.

    Choose one of the logs shipped with the package (:func:`grpo_core.runs.datasets.list_real_logs`)
    or upload your own (TRL ``trainer_state.json``, JSON lines, a notebook's CSV, verl metrics;
    whatever :func:`grpo_core.runs.logs.read_log` reads). The explorer fits every law of
    :func:`grpo_core.laws.fit_all` to the chosen metric, forecasts the mean over the last 20% of the
    run from the first ``fraction`` of the steps (:func:`grpo_core.runs.forecast.forecast_end`, the
    forecast of ``fit`` and ``diagnose``: the current level with a 90% band calibrated on 52 real runs,
    made from 20% to 80% of a run; at 1, the end of the planned run from the whole log) and lists the
    findings of
    :func:`grpo_core.runs.diagnostics.diagnose`.

    Parameters
    ----------
    log : str, optional
        Name of a shipped log (default: the Qwen2.5-3B GSM8K run).
    metric : str
        Metric to fit (normalised name, e.g. ``"reward"`` or ``"reward/check_answer"``).
    fraction : float in [0.1, 1]
        Fraction of the steps the forecast is fitted on (1: the whole log, forecasting the planned
        end, or twice the logged steps, the run assumed half done, when the log does not know its
        ``max_steps``).

    Returns
    -------
    LogExplorer
        An :class:`ipywidgets.VBox`; display it. ``.values`` holds the numbers shown
        (``best_law``, ``plateau``, ``forecast_final``, ``forecast_low``, ``forecast_high``,
        ``forecast_now``, ``actual_final``, ``findings``...), ``.load_bytes(name,
        content)`` loads a file programmatically.

    Raises
    ------
    ParameterError
        If ``log`` is not a shipped log's name. (Problems with a log's content are shown in the
        widget, not raised.)

    Notes
    -----
    A file that is not a log, a metric too short to fit or a forecast the method declines (a fraction
    outside 20% to 80% of the run, fewer than eight points, a flat window, a metric that is not a
    training reward) shows a one-line message in the widget; the rest of the view keeps working.

    Examples
    --------
    >>> ex = log_explorer()
    >>> ex.values["steps"] > 100
    True
    >>> ex.load_bytes("notes.txt", b"hello")
    False
    >>> "is not a training log" in ex.status.text
    True
    """
    if log is not None:
        log = datasets.real_log_path(log).name
    return LogExplorer(log=log, metric=metric, fraction=fraction)
