"""Every check on one log: :func:`diagnose` and its :class:`Diagnosis`."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..._json import json_ready
from ...errors import DataError, GrpoError, ParameterError
from ...validation import check_flag, check_integer, check_path
from ..curvature import NO_STABILITY_VERDICT
from ..forecast import CurveLawFit, EndForecast, check_reward_range, forecast_end
from ..logs import RunLog, read_log
from .concentration import policy_concentration
from .decoupling import train_eval_decoupling
from .degeneration import advantage_degeneration
from .drift import kl_drift
from .explosion import entropy_explosion
from .findings import _RANK, MODES, Finding
from .implied import implied_curvature_entry, run_settings
from .instability import dynamic_instability
from .learning import not_learning
from .no_update import no_update
from .numerical import numerical_failure
from .off_policy import off_policy_mismatch
from .oscillation import Oscillation, oscillation
from .saturation import judge_degeneration
from .series import _is_binary_compatible, _quiet_series
from .spikes import recurring_spikes
from .thresholds import DEFAULT_THRESHOLDS, Thresholds
from .truncation import truncation


@dataclass
class Diagnosis:
    """What :func:`diagnose` found.

    Attributes
    ----------
    findings : list of Finding
        Most severe first (then by onset).
    healthy : bool
        ``verdict == "healthy"``.
    forecast : EndForecast or None
        Where the reward ends (:func:`grpo_core.runs.forecast.forecast_end`): the mean reward over the last
        20% of the run up to ``horizon`` (the log's ``max_steps``, or twice its last step: the run assumed
        half done), the current level with its calibrated 90% band as shown within the reward's range, the
        caveats, and the law that describes the curve (``law_fit``, with its curves for charts;
        ``law_fit_error`` when the curve is too short for it). ``None`` if no forecast was made (fewer than 8
        reward points, a reward that does not change, a run seen past 80% of its planned steps; the reason
        is in ``notes``).
    oscillation : Oscillation or None
        Oscillation analysis of the reward.
    checked : list of str
        Modes that were checked.
    skipped : dict of str to str
        Modes that could not be checked, with the reason (a missing column...).
    source, format, reward_std_kind : str
        From the log.
    steps : tuple of int
        First and last training step.
    notes : list of str
        What the reading of the log did, and anything the checks want to say.
    verdict : {"healthy", "unhealthy", "inconclusive"}
        ``unhealthy``: some finding is a warning or critical. ``healthy``: none is, and the checks that
        can establish it ran (the learning check and at least ``Thresholds.min_checks_for_healthy`` of
        the four checks of the paper). ``inconclusive``: none is, but those checks could not all run.
    missing : list of str
        Why the verdict is inconclusive (empty otherwise).
    implied_curvature : dict or None
        The reward's time scale under the run's conventions
        (:func:`~grpo_core.runs.diagnostics.implied.implied_curvature_entry`: ``a``, ``a_lo``, ``a_hi``
        (``eta K`` per step), ``K``, ``lo``, ``hi``, ``t90``, ``t90_lo``, ``t90_hi``, ..., ``reason`` when
        there is none, ``caveat``, ``line``); no stability verdict (a reward curve does not give one:
        :data:`grpo_core.runs.curvature.NO_STABILITY_VERDICT`). ``None`` when not computed
        (``curvature=False``, or no reward).
    law_fit : CurveLawFit or None
        The law that describes the reward curve (:func:`grpo_core.runs.forecast.fit_curve_laws`), also when
        the end forecast is declined (a finished run): the charts draw it. ``None`` when not made.
    """

    findings: list[Finding]
    healthy: bool
    forecast: EndForecast | None
    oscillation: Oscillation | None
    checked: list[str]
    skipped: dict[str, str]
    source: str
    format: str
    reward_std_kind: str
    steps: tuple[int, int]
    notes: list[str] = field(default_factory=list)
    verdict: str = ""
    missing: list[str] = field(default_factory=list)
    implied_curvature: dict[str, Any] | None = None
    law_fit: CurveLawFit | None = None

    def __post_init__(self) -> None:
        if not self.verdict:
            self.verdict = "healthy" if self.healthy else "unhealthy"

    @property
    def modes(self) -> list[str]:
        """Modes with a warning or critical finding."""
        return [f.mode for f in self.findings if _RANK[f.severity] >= 1]

    @property
    def primary(self) -> Finding | None:
        """The most severe finding (earliest onset among equals), or ``None``."""
        return self.findings[0] if self.findings else None

    def find(self, mode: str) -> Finding | None:
        """The finding of one mode, or ``None``.

        Parameters
        ----------
        mode : str
            One of :data:`MODES` (``"train_eval_decoupling"``, ``"advantage_degeneration"``,
            ``"policy_concentration"``, ``"dynamic_instability"``). Not validated: an unknown
            name gives ``None``.

        Returns
        -------
        Finding or None
            The first (most severe) finding of that mode, whatever its severity (``info``
            included); ``None`` when there is none.
        """
        return next((f for f in self.findings if f.mode == mode), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``verdict``, ``healthy``, ``missing``, ``findings``, ``forecast`` (what the text
        prints at its top level; the law fit that describes the curve under ``forecast["law_fit"]``; no curves),
        ``oscillation``, ``checked``, ``skipped``, ``format``, ``source``, ``reward_std_kind``, ``steps``,
        ``notes``, ``implied_curvature``, ``law_fit`` (the law fit when no end forecast carries it, e.g. a
        finished run; else ``None``)."""
        return json_ready({
            "verdict": self.verdict,
            "healthy": self.healthy,
            "missing": self.missing,
            "findings": [f.to_dict() for f in self.findings],
            "forecast": None if self.forecast is None else self.forecast.to_dict(),
            "oscillation": None if self.oscillation is None else self.oscillation.to_dict(),
            "checked": self.checked,
            "skipped": self.skipped,
            "format": self.format,
            "source": self.source,
            "reward_std_kind": self.reward_std_kind,
            "steps": list(self.steps),
            "notes": self.notes,
            "implied_curvature": self.implied_curvature,
            "law_fit": (self.law_fit.to_dict() if self.forecast is None and self.law_fit is not None else None),
        })

    def table(self) -> pd.DataFrame:
        """The findings as a table: ``mode``, ``severity``, ``first``, ``last``, ``onset``, ``message``
        (most severe first; empty with these columns when nothing was found; the steps as pandas'
        nullable ``Int64``, ``<NA>`` for a finding without an onset)."""
        cols = ["mode", "severity", "first", "last", "onset", "message"]
        table = pd.DataFrame([{"mode": f.mode, "severity": f.severity, "first": f.steps[0], "last": f.steps[1],
                               "onset": f.onset, "message": f.message} for f in self.findings], columns=cols)
        # integer steps, <NA> for a finding without an onset (not None, not a float)
        return table.astype({"first": "Int64", "last": "Int64", "onset": "Int64"})

    def summary(self) -> str:
        """A few lines for a console: verdict, each finding, the forecast."""
        head = {"healthy": "healthy", "unhealthy": "NOT healthy"}.get(self.verdict, self.verdict)
        lines = [f"{self.source}: {head} (steps {self.steps[0]}-{self.steps[1]}, {self.format})"]
        lines += [f"  inconclusive: {why}" for why in self.missing]
        for f in self.findings:
            lines.append(f"  [{f.severity}] {f.mode}: {f.message}")
            if f.advice and f.severity != "info":
                lines.append(f"      try: {f.advice}")
        if self.forecast:
            lines += [f"  {line}" for line in self.forecast.lines()]
        else:
            lines += [f"  {note}" for note in self.notes if note.startswith("no end-of-run forecast")]
        if self.implied_curvature is not None:
            lines.append(f"  {self.implied_curvature['line']}")
            if self.implied_curvature.get("reason") is None:
                lines.append(f"  {NO_STABILITY_VERDICT}")
        lines += [f"  {note}" for note in self.notes if note.startswith("data: ")]
        core = MODES + ("not_learning",)
        for mode, why in self.skipped.items():
            # a column that is there but empty, all NaN or not computed is said, not listed as absent
            if any(why in m for m in self.missing):
                continue  # said on its "inconclusive" line already
            if mode in core or "does not have" not in why:
                lines.append(f"  not checked: {mode} ({why})")
        rest = [m for m in self.skipped if m not in core and "does not have" in self.skipped[m]]
        if rest:
            lines.append(f"  not checked (no column for them): {', '.join(rest)}")
        return "\n".join(lines)


def diagnose(log: RunLog | str | Path, *, group_size: int | None = None, binary_reward: bool | None = None,
             num_prompts: int | None = None, eval_metric: str | None = None, correctness: list[str] | None = None,
             thresholds: Thresholds | None = None, forecast: bool = True, n_boot: int = 50,
             settings: Any = None, curvature: bool = True,
             reward_range: tuple[float, float] | None = None, fit_laws: bool = True) -> Diagnosis:
    """Check a training log for every failure mode and forecast its plateau.

    Parameters
    ----------
    log : RunLog or path
        A log (a path is read with :func:`grpo_core.runs.logs.read_log`).
    group_size : int, optional
        ``G`` (TRL ``num_generations``), for the binary zero-spread expectation.
    binary_reward : bool, optional
        Whether the reward is 0/1 (default: assumed when every reward lies in [0, 1]).
    num_prompts : int, optional
        Prompts per step (1 makes ``reward_std == 0`` the exact zero-spread fraction).
    eval_metric : str, optional
        Eval column for :func:`train_eval_decoupling`.
    correctness : list of str, optional
        Reward functions that measure correctness.
    thresholds : Thresholds, optional
        Operational thresholds (default :class:`Thresholds`).
    forecast : bool
        Make the forecast and the law fit (:func:`grpo_core.runs.forecast.forecast_end`).
    n_boot : int
        Bootstrap replicates of the law fit's bands (the end forecast's band is calibrated, not
        bootstrapped). 50 keeps a 100,000-step diagnosis under a
        second; against 1,000 replicates the ends of the 90% band moved by 4-17% of its width on
        the logs we measured (the Qwen run, case 02, a constructed healthy log).
    settings : RunSettings or path, optional
        The run's settings for the implied curvature (a TRL config JSON, ``trainer_state.json``, a
        real run's ``meta.json``); default: a file beside the log (:func:`run_settings`), else TRL's
        defaults.
    curvature : bool
        Report the reward's time scale ``eta K`` with ``K`` and t90 (:attr:`Diagnosis.implied_curvature`;
        two law fits, about 0.15 s on the real runs).
    fit_laws : bool
        Fit the laws that describe the reward curve (:attr:`Diagnosis.law_fit`, the forecast's ``law_fit``): a
        description for charts, not a forecast, and most of a diagnosis' time on a flat or noisy curve (0.1-3 s
        on 1,000 steps); ``False`` leaves it out (``law_fit`` ``None``) and changes nothing else.
    reward_range : (float, float), optional
        The least and the most a step's mean reward can be (a composite reward: the sums of its functions'
        minima and maxima, e.g. ``(0, 1.5)`` for a format reward of 0.5 and a correctness reward of 1). The
        forecast's band is shown within it. Default: ``[0, 1]``
        for a reward logged within it (unless ``binary_reward`` is False), else none.

    Returns
    -------
    Diagnosis
        ``verdict`` "unhealthy" iff some finding is a warning or critical; "inconclusive" when none is
        but the checks that establish health did not run; ``healthy`` iff the verdict is "healthy". The forecast's
        curves
        stay in ``Diagnosis.forecast`` (arrays) for charts; :meth:`Diagnosis.to_dict` leaves them
        out.

    Raises
    ------
    DataError
        The log cannot be read (path input), or no check can run on it but the check of its values for
        NaN and overflow, and that finds none (it has none of the columns the others read: a verdict would
        be about nothing).
    ParameterError
        Bad ``group_size`` or ``num_prompts``; ``binary_reward=True`` for a reward outside [0, 1]; a
        ``reward_range`` that is not ``low < high`` or does not hold every logged reward; an
        ``eval_metric`` or ``correctness`` name the log does not have (the message lists its columns), or of the
        wrong type (``eval_metric`` not a str, ``correctness`` not a list of str). A ``settings`` path that is
        not a file.

    Examples
    --------
    >>> from grpo_core.runs.synthetic import synthetic_log
    >>> d = diagnose(synthetic_log("policy_concentration"), forecast=False)
    >>> d.healthy, d.modes
    (False, ['policy_concentration'])
    """
    th = thresholds or DEFAULT_THRESHOLDS
    if not isinstance(log, RunLog):
        log = read_log(check_path("log", log, what="a RunLog or a log file path"))
    forecast, curvature = check_flag("forecast", forecast), check_flag("curvature", curvature)
    fit_laws = check_flag("fit_laws", fit_laws)
    if group_size is not None:
        group_size = check_integer("group_size", group_size, low=2)
    eval_metric, correctness = _check_names(log, eval_metric, correctness)
    if reward_range is not None:
        reward_range = check_reward_range(reward_range, _quiet_series(log, "reward")[1] if log.has("reward") else None,
                                          str(log.source))
    notes = list(log.notes)
    from .series import _overflowed

    with np.errstate(over="ignore", invalid="ignore"):
        osc = _reward_oscillation(log, binary_reward, th)
    if osc is not None and _overflowed(_quiet_series(log, "reward")[1]).any():
        osc = None  # the spectrum of overflowed values is no dynamics (numerical_failure reports them)
    checks = {
        "train_eval_decoupling": lambda: train_eval_decoupling(log, eval_metric=eval_metric,
                                                               correctness=correctness, thresholds=th),
        "advantage_degeneration": lambda: advantage_degeneration(log, group_size=group_size,
                                                                 binary_reward=binary_reward,
                                                                 num_prompts=num_prompts, thresholds=th),
        "policy_concentration": lambda: policy_concentration(log, thresholds=th),
        "dynamic_instability": lambda: dynamic_instability(log, thresholds=th, osc=osc),
        "not_learning": lambda: not_learning(log, thresholds=th),
        "truncation": lambda: truncation(log, thresholds=th),
        "numerical_failure": lambda: numerical_failure(log),
        "no_update": lambda: no_update(log),
        "off_policy_mismatch": lambda: off_policy_mismatch(log, thresholds=th),
        "entropy_explosion": lambda: entropy_explosion(log, thresholds=th),
        "kl_drift": lambda: kl_drift(log, thresholds=th),
        "recurring_spikes": lambda: recurring_spikes(log, thresholds=th),
    }
    findings, checked, skipped = _run_checks(log, checks)
    findings = _rejudge(log, findings, "not_learning" in checked, group_size, num_prompts, th)
    findings.sort(key=lambda f: (-_RANK[f.severity], f.onset if f.onset is not None else f.steps[0]))
    verdict, missing = _verdict(findings, checked, skipped, th)
    failed = next((f for f in findings if f.mode == "numerical_failure" and f.severity == "critical"), None)
    if failed is not None and (forecast or curvature) and log.has("reward"):
        # NaN, inf or overflowed values poison the update: what follows is no learning curve to extrapolate or fit
        notes.append(f"no end-of-run forecast and no reward time scale: the run failed numerically (numerical_failure, "
                     f"from step {failed.steps[0]}); a curve with NaN, infinite or overflowed values is not fitted")
        forecast = curvature = False
    fc, law_fit = (_forecast(log, findings, binary_reward, n_boot if fit_laws else None, th, notes, reward_range)
                   if forecast and log.has("reward") else (None, None))
    if log.has("reward"):
        raw = log.train["reward"].to_numpy(float)
        n_bad = int(log.nonfinite_steps("reward").size)
        n_unlogged = int(np.isnan(raw).sum()) - len(log.logged_nan.get("train", {}).get("reward", ()))
        if n_bad:
            notes.append(f"data: {n_bad} of {raw.size} reward value(s) are NaN or infinite; the checks and the "
                         "forecast leave them out")
        if n_unlogged > 0:
            notes.append(f"data: the reward is logged on {raw.size - n_unlogged} of {raw.size} training steps "
                         "(the other steps logged other metrics)")
    if forecast and not log.has("reward"):
        gone = (getattr(log, "dropped", None) or {}).get("train", {}).get("reward")
        notes.append(f"no end-of-run forecast: the log has no reward values (the column 'reward' was dropped: {gone})"
                     if gone else
                     "no end-of-run forecast: the log has no reward values (no 'reward' column, or every value "
                     "empty or NaN)")
    implied = None
    if curvature and log.has("reward"):
        implied, line = implied_curvature_entry(log, run_settings(log, settings))
        fell = next((f for f in findings if f.mode == "not_learning" and f.severity == "critical"), None)
        implied["caveat"] = not_a_relaxation(fell, quote=False) if implied.get("reason") is None else None
        implied["line"] = line + (f" (caveat: {implied['caveat']})" if implied["caveat"] else "")
    steps = (int(log.train.index[0]), int(log.train.index[-1])) if len(log.train) else (0, 0)
    return Diagnosis(findings=findings, healthy=verdict == "healthy", forecast=fc, oscillation=osc,
                     checked=checked, skipped=skipped, source=log.source, format=_format_label(log),
                     reward_std_kind=log.reward_std_kind, steps=steps, notes=notes, verdict=verdict,
                     missing=missing, implied_curvature=implied, law_fit=law_fit)


def _strip_reward_prefix(name: str) -> str:
    for prefix in ("rewards/", "reward/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return name[:-len("/mean")] if name.endswith("/mean") else name


def _check_names(log: RunLog, eval_metric: str | None,
                 correctness: list[str] | None) -> tuple[str | None, list[str] | None]:
    """Resolve ``eval_metric`` and ``correctness`` to the log's names, or refuse unknown ones.

    Both spellings of a reward function are accepted: the log's own (``rewards/accuracy_reward``,
    ``rewards/accuracy_reward/mean``) and the normalised one (``reward/accuracy_reward``), or the bare
    name (``accuracy_reward``). An unknown name is a :class:`ParameterError` naming the available
    columns (a check silently skipped could turn a critical verdict into a healthy one). A name that is not a
    string, or a ``correctness`` that is one string rather than a list of them (iterated, ``'acc'`` would be
    the names ``'a'``, ``'c'``, ``'c'``), is a :class:`ParameterError` too.
    """
    if eval_metric is not None and not isinstance(eval_metric, str):
        raise ParameterError("eval_metric", f"`eval_metric` must be the name of an eval column (a str); got "
                             f"{type(eval_metric).__name__} {eval_metric!r}")
    if correctness is not None:
        if isinstance(correctness, (str, bytes)) or not isinstance(correctness, (list, tuple)):
            hint = f" (for one function write [{correctness!r}])" if isinstance(correctness, str) else ""
            raise ParameterError("correctness", f"`correctness` must be a list of reward-function names; got "
                                 f"{type(correctness).__name__} {correctness!r}{hint}")
        bad = [c for c in correctness if not isinstance(c, str)]
        if bad:
            raise ParameterError("correctness", f"`correctness` must hold reward-function names (str); got "
                                 f"{', '.join(f'{type(c).__name__} {c!r}' for c in bad)}")
    if correctness is not None:
        funcs = log.reward_functions()
        resolved = [_strip_reward_prefix(str(c)) for c in correctness]
        unknown = [c for c, r in zip(correctness, resolved) if r not in funcs]
        if unknown:
            raise ParameterError("correctness", f"`correctness` names {', '.join(map(repr, unknown))}, not a reward "
                                 f"function of {log.source}; its reward functions: "
                                 f"{', '.join(funcs) or 'none'} (written f, reward/f or rewards/f)")
        correctness = resolved
    if eval_metric is not None:
        cols = [str(c) for c in log.eval.columns if c != "step"]
        candidates = [eval_metric, f"reward/{_strip_reward_prefix(eval_metric)}",
                      eval_metric[len("eval_"):] if eval_metric.startswith("eval_") else eval_metric]
        found = next((c for c in candidates if c in cols), None)
        if found is None:
            found = next((c for c in candidates if log.has(c, "eval")), None)
        if found is None:
            raise ParameterError("eval_metric", f"`eval_metric` {eval_metric!r} is not a column of the eval table of "
                                 f"{log.source}; its eval columns: {', '.join(cols) or 'none (no eval rows)'}")
        eval_metric = found
    return eval_metric, correctness


def _rejudge(log: RunLog, findings: list[Finding], learning_checked: bool, group_size: int | None,
             num_prompts: int | None, th: Thresholds) -> list[Finding]:
    """Advantage degeneration read against the reward: saturation, a cost, or the failure it is (a run
    whose learning could not be checked has not shown that it learned)."""
    learning = next((f for f in findings if f.mode == "not_learning"), None)
    if not learning_checked:
        learning = Finding("not_learning", "warning", (0, 0), None, {}, "not checked")
    return [judge_degeneration(log, f, learning, group_size=group_size, num_prompts=num_prompts, thresholds=th)
            if f.mode == "advantage_degeneration" else f for f in findings]


def _verdict(findings: list[Finding], checked: list[str], skipped: dict[str, str],
             th: Thresholds) -> tuple[str, list[str]]:
    """``(verdict, missing)``: see :attr:`Diagnosis.verdict`."""
    if any(_RANK[f.severity] >= 1 for f in findings):
        return "unhealthy", []
    from .learning import TOO_EARLY

    missing = []
    if "not_learning" not in checked:
        why = skipped.get("not_learning", "no reward")
        # a run too short to judge was read, and its reason says so: "56 of 250 planned steps: too early ..."
        missing.append(why if TOO_EARLY in why else f"whether the run learns was not checked ({why})")
    core = [m for m in MODES if m in checked]
    if len(core) < th.min_checks_for_healthy:
        missing.append(f"only {len(core)} of the four failure-mode checks could run ({', '.join(core) or 'none'}; "
                       f"at least {th.min_checks_for_healthy} are needed to call a run healthy): the log lacks "
                       f"what {', '.join(m for m in MODES if m not in checked)} read")
    return ("inconclusive" if missing else "healthy"), missing


def _reward_oscillation(log: RunLog, binary_reward: bool | None, th: Thresholds) -> Oscillation | None:
    """The reward's oscillation (shared by the instability check and the report), after checking
    ``binary_reward`` against the reward's range."""
    if not log.has("reward"):
        return None
    st, r = _quiet_series(log, "reward")
    if binary_reward is True and r.size and not _is_binary_compatible(r):
        # the per-step mean of a 0/1 reward lies in [0, 1]: the claim contradicts the log
        raise ParameterError("binary_reward", f"`binary_reward` is True but the reward of {log.source} lies in "
                             f"[{np.min(r):.4g}, {np.max(r):.4g}], outside [0, 1] where a 0/1 reward's mean must be")
    return oscillation(st, r, p_value=th.oscillation_p_value) if r.size >= 16 else None


def _run_checks(log: RunLog, checks: dict) -> tuple[list[Finding], list[str], dict[str, str]]:
    """Run each check; one that cannot run (a :class:`DataError`) is skipped with its reason."""
    findings: list[Finding] = []
    checked: list[str] = []
    skipped: dict[str, str] = {}
    for mode, run in checks.items():
        try:
            found = run()
        except DataError as exc:
            skipped[mode] = str(exc)
            continue
        checked.append(mode)
        if found is not None:
            findings.append(found)
    # the sanity check of the values alone, finding nothing, says nothing about the run: any other check,
    # or a numerical failure, is something to report (a log of completion lengths, a log of NaN)
    if not [m for m in checked if m != "numerical_failure"] and not findings:
        # "healthy" would be a verdict on nothing
        gone = (getattr(log, "dropped", None) or {}).get("train", {})
        why = "".join(f"; column {k!r} was dropped: {v}" for k, v in gone.items())
        raise DataError(f"nothing to diagnose: no check can run on {log.source} (e.g. "
                        f"{skipped['dynamic_instability']}); its columns: "
                        f"{', '.join(map(str, log.train.columns)) or 'none'}{why}. Name yours with mapping= (--map "
                        "KEY=COLUMN)")
    return findings, checked, skipped


def not_a_relaxation(finding: Finding | None, *, quote: bool = True) -> str | None:
    """The caveat on a time scale read from a reward that fell (a critical :func:`not_learning`: it
    unlearned, or rose then fell), else ``None``. The time scale and regime come from a relaxation fitted
    to a curve that is not one, so they say nothing about the fall (real run 36: 12.0 -> 21.9 at steps
    13-18 -> about 8.4). ``quote``: the finding's message in the caveat (``advise --from-log``, which prints
    no findings), else a pointer to it (``diagnose``, which prints it above). Our rule."""
    if finding is None or finding.mode != "not_learning" or finding.severity != "critical":
        return None
    why = (f"{finding.message[0].lower()}{finding.message[1:].rstrip('.')}; `diagnose`" if quote
           else "not_learning above")
    return (f"the reward is not a relaxation to a plateau ({why}): the time scale and regime are those of a "
            "relaxation fitted to it and do not explain the fall")


def _forecast(log: RunLog, findings: list[Finding], binary_reward: bool | None, n_boot: int | None, th: Thresholds,
              notes: list[str], reward_range: tuple[float, float] | None = None
              ) -> tuple[EndForecast | None, CurveLawFit | None]:
    """The forecast of where the reward ends (:func:`~grpo_core.runs.forecast.forecast_end`), or ``None`` with
    the reason in ``notes``, and the law fit that describes the curve (kept when the forecast is declined). No
    significance gate: whether the run learns is :func:`not_learning`'s verdict alone."""
    from ..forecast.calibrated import MIN_POINTS

    r = _quiet_series(log, "reward")[1]
    if r.size < MIN_POINTS:
        notes.append(f"no end-of-run forecast: only {r.size} reward point(s); the calibrated band needs at "
                     f"least {MIN_POINTS}")
        return None, None
    unstable = any(f.mode == "dynamic_instability" and f.severity in ("warning", "critical") for f in findings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fc = forecast_end(log, binary_reward=binary_reward, reward_range=reward_range, unstable=unstable,
                              law_fit_boot=n_boot)
        except GrpoError as exc:
            notes.append(f"no end-of-run forecast: {exc}")
            return None, None
    if fc.declined is not None:
        notes.append(f"no end-of-run forecast: {fc.declined}")
        return None, fc.law_fit
    return fc, fc.law_fit


#: Containers whose rows were renamed to TRL's keys by the reader: the label names where they came from.
_CONTAINER_LABELS = {"minimind_console": "MiniMind console log", "step_lines": "custom-loop step lines"}


def _format_label(log: RunLog) -> str:
    """The log's format as shown: a MiniMind log or a custom loop's step lines read with TRL's key names say
    so (their ``format`` is the key mapping used, ``"trl"``)."""
    label = _CONTAINER_LABELS.get(getattr(log, "container", None))
    return f"{label}, read as {log.format}" if label else log.format
