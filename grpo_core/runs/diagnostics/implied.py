"""The time scale of a diagnosed run's reward: :func:`implied_curvature_entry` (what ``diagnose`` reports).

The same computation as ``grpo-dynamics fit`` and ``advise --from-log``
(:func:`grpo_core.runs.curvature.advise_from_log`): the training reward fitted with the oscillator at
the run's conventions, in cumulative-learning-rate time, gives ``eta K`` per step and ``K`` with a 90%
interval, and the time to 90% of the fit's plateau. It is a time scale, not a stability verdict
(:data:`grpo_core.runs.curvature.NO_STABILITY_VERDICT`). A curve without a time scale (flat, the
plateau beyond the data, the rate at a bound) or a log without a learning rate gives none and the
reason.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

from ...errors import GrpoError
from ...validation import check_instance, check_path
from ..curvature import ImpliedCurvature, LogAdvice, advise_from_log
from ..logs import RunLog
from ..settings import RunSettings, read_settings, settings_for_log

__all__ = ["implied_curvature_entry", "run_settings"]


def run_settings(log: RunLog, settings: RunSettings | str | Path | None = None) -> RunSettings:
    """The settings a diagnosis uses: ``settings`` itself, a config file read, or those beside the log.

    Parameters
    ----------
    log : RunLog
        Its ``source``, when it is a file, is where a ``meta.json`` / ``config.json`` /
        ``training_args.json`` is looked for (:func:`grpo_core.runs.settings.settings_for_log`).
    settings : RunSettings, path, or None

    Returns
    -------
    RunSettings
        TRL's defaults when nothing is found (or what is beside the log cannot be read).

    Raises
    ------
    ParameterError, DataError
        A ``log`` that is not a :class:`RunLog`; a ``settings`` that is neither a :class:`RunSettings` nor
        a path; a ``settings`` path that is not a readable settings file.
    """
    check_instance("log", log, RunLog, "a RunLog (grpo_core.runs.logs.read_log(path))")
    if isinstance(settings, RunSettings):
        return settings
    if settings is not None:
        return read_settings(check_path("settings", settings, what="a RunSettings or a settings file path"))
    try:
        return settings_for_log(Path(str(log.source)))
    except GrpoError:  # a malformed file beside the log must not stop the diagnosis
        return RunSettings()


def implied_curvature_entry(log: RunLog, settings: RunSettings | None = None) -> tuple[dict[str, Any], str]:
    """The time scale of a log's training reward (``eta K`` and ``K`` with their interval, t90), as
    ``(entry, line)``.

    Parameters
    ----------
    log : RunLog
    settings : RunSettings, optional
        The run's settings (default: TRL's).

    Returns
    -------
    entry : dict
        :meth:`grpo_core.runs.curvature.LogAdvice.entry` (``a``, ``a_lo``, ``a_hi``, ``K``, ``lo``, ``hi``,
        ``t90``, ..., ``reason``, ``reason_kind``), JSON-ready (no NaN), plus ``settings_source``.
    line : str
        :meth:`~grpo_core.runs.curvature.LogAdvice.line`.

    Examples
    --------
    >>> from grpo_core.runs import datasets, logs
    >>> r = datasets.real_run("22")
    >>> log = logs.read_log(r.path)
    >>> entry, line = implied_curvature_entry(log, run_settings(log))
    >>> round(entry["K"], -1), round(entry["a"], 4), entry["reason"], "stable" in entry
    (1010.0, 0.0101, None, False)
    """
    settings = settings or RunSettings()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            adv = advise_from_log(log, settings)
    except GrpoError as exc:  # a log whose curve cannot be fitted at all
        adv = LogAdvice(implied=ImpliedCurvature(ok=False, reason=f"no fit: {exc}", eta=math.nan, clock="steps",
                                                 conventions=settings.conventions()))
    entry = adv.entry()
    entry["settings_source"] = settings.source
    return entry, adv.line()
