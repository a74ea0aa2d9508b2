"""Name what is going wrong in a GRPO training log: four failure modes, oscillation, forecast.

:func:`diagnose` takes a :class:`~grpo_core.runs.logs.RunLog` (or a path) and checks four failure
modes, each with an operational definition and documented thresholds (the
definitions and thresholds are ours, justified below and in the book chapter "Reading a
training log"):

``train_eval_decoupling`` (reward hacking)
    The training reward rises clearly while the evaluation metric, or the reward function that
    measures correctness, does not. :func:`train_eval_decoupling`.
``advantage_degeneration``
    A large fraction of groups has zero reward spread, so their advantages are zero and they give
    no gradient; compared with ``p^G + (1 - p)^G``, the fraction expected for a 0/1 reward at
    accuracy ``p`` and group size ``G``. :func:`advantage_degeneration`.
``policy_concentration``
    The policy entropy falls to a fraction of its initial value while the reward is still rising:
    exploration is lost before learning is done, and the mean-field premise (a policy spread over
    many outputs, whose expected reward moves smoothly) erodes. :func:`policy_concentration`.
``dynamic_instability``
    Unbounded growth of the gradient norm, the importance ratios, the clip fractions or the KL, or
    a growing oscillation of the reward (the oscillator past its stability threshold).
    :func:`dynamic_instability`, :func:`oscillation`.

Severity is one of ``"info"`` (worth knowing, not a failure), ``"warning"`` (a failure mode is
present and costs learning) and ``"critical"`` (the run is not learning, or is diverging). A run
is *healthy* when no finding is a warning or critical. A mode that cannot be checked (the log has
no entropy, no eval metric...) is listed in :attr:`Diagnosis.skipped` with the reason, never
reported as fine.

References
----------
Our operational definitions (book chapter "Reading a training log").
Fisher (1929), "Tests of significance in harmonic analysis" (the g-test of a periodogram peak).
Cui et al. (2025), "The Entropy Mechanism of Reinforcement Learning for Reasoning Language
Models" (entropy collapse while performance saturates).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..._json import json_ready
from ...errors import DataError, GrpoError, ParameterError
from ...laws import plateau_outside_unit_interval
from ...validation import check_array, check_integer, check_real
from ..logs import RunLog, read_log

__all__ = [
    "MODES",
    "SEVERITIES",
    "Thresholds",
    "Finding",
    "Oscillation",
    "Diagnosis",
    "expected_zero_spread_fraction",
    "group_size_for_zero_spread",
    "oscillation",
    "zero_spread_series",
    "advantage_degeneration",
    "policy_concentration",
    "dynamic_instability",
    "train_eval_decoupling",
    "plateau_forecast",
    "diagnose",
    "synthetic_log",
    "SYNTHETIC_KINDS",
]

#: The four failure modes, in the order they are checked and reported.
MODES = ("train_eval_decoupling", "advantage_degeneration", "policy_concentration", "dynamic_instability")
#: Severities, least to most severe.
SEVERITIES = ("info", "warning", "critical")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Thresholds:
    """Operational thresholds of the four failure modes (all documented and justified here).

    Attributes
    ----------
    zero_spread_info, zero_spread_warning, zero_spread_critical : float
        Fraction of zero-spread groups (smoothed over ``window`` steps, sustained over a stretch)
        for an info / warning / critical advantage-degeneration finding: 0.25, 0.5, 0.9. At a
        fraction f the batch carries the gradient of (1 - f) of its groups: at 0.5 half the
        rollouts are wasted (the effective batch is halved, the gradient variance doubled); at
        0.9 the update rests on a tenth of the batch, and at 1 there is no gradient at all.
    min_stretch_fraction, min_stretch_steps : float, int
        A level must hold over at least ``max(min_stretch_steps, min_stretch_fraction * T)``
        steps (0.1 and 5): a few unlucky steps are not a failure mode.
    excess_over_binary : float
        Observed minus expected zero-spread fraction above which the spread is called
        "below what a 0/1 reward at this accuracy gives" (0.15, about three standard errors of a
        fraction measured on 8 groups per step and averaged over 5 steps: sqrt(0.25 / 40) = 0.08
        is the worst case, heterogeneity across prompts raises it further, see
        :func:`advantage_degeneration`).
    entropy_warning, entropy_critical : float
        Late entropy over initial entropy at or below which the policy is called concentrated
        (0.5) or collapsed (0.1). Halving the entropy in nats removes about half of the
        effective number of outputs' log; a tenth leaves a nearly deterministic policy.
    progress_still_rising : float
        The reward counts as "still rising" when the entropy halved before the reward had made
        this fraction (0.75) of its total gain, i.e. at least a quarter of the gain came later.
    trend_z : float
        z-score of a rise (late minus early mean over its standard error) above which a curve
        is called rising (3.0: about a 1-in-700 chance for noise alone, one-sided).
    flat_z : float
        z-score below which an eval curve is called flat (2.0: its rise is not significant at the
        one-sided 2.3% level; a truly flat eval curve passes 97.7% of the time).
    falling_z : float
        z-score at or below which an eval curve is called falling (-2.0).
    growth_warning, growth_critical : float
        Late level over (floored) early level of a growth metric for a warning (10) or critical
        (100) instability: one and two orders of magnitude. A stationary metric fluctuates by a
        factor of 2-3 at most; a factor of 10 that persists to the end of the log is growth.
    onset_factor : float
        The onset of growth is the first step from which the smoothed metric stays above this
        multiple (3) of its early level (allowing 10% of later steps below it).
    floors : dict of str to float
        Floor of the early level per metric, so that a metric that starts at 0 (the KL to the
        reference at step 1) is not called growing when it reaches a normal value: ``kl`` 0.05
        (warning at 0.5, critical at 5 nats per token: the sequence-level log-ratio of a
        200-token completion would be ~100 nats), ``ppo_kl`` 0.01, clip fractions 0.02 (warning
        at 20% of tokens clipped), ``importance_ratio_max`` 1.0 (warning at a ratio of 10).
    clip_critical : float
        Clip fractions are bounded by 1, so their critical level is absolute: 0.5 (half the
        tokens clipped: the update is mostly the clip, not the gradient).
    kl_still_growing : float
        The KL to the reference policy drifts up whenever the policy learns (without bound when
        ``beta = 0``), unlike the gradient norm or the clip fractions, which are stationary in a
        stable run. A KL growth counts as instability only if it is still growing at the end:
        the last 10% of the log at least 1.5x the level at 65-75% of it (an exponential with the
        warning factor 10 over the log grows by ~1.8x over that stretch; a saturating drift by
        little).
    oscillation_p_value : float
        Fisher g-test p-value below which a periodogram peak is an oscillation (0.01).
    oscillation_growth_warning, oscillation_growth_critical : float
        Growth factor of the oscillation's amplitude envelope over the analysed span for a warning
        (1.5) or critical (3.0) instability.
    sustained_growth, sustained_autocorrelation : float
        An oscillation that does not decay (growth factor >= 2/3 over the log) and repeats itself
        (autocorrelation at one period >= 0.5) is a limit cycle, a warning: the linear dynamics is
        past its threshold and saturation holds the amplitude. A stable oscillator driven by noise
        has autocorrelation ``exp(-2 pi zeta / sqrt(1 - zeta^2))`` at one period, which reaches 0.5
        only for a damping ratio ``zeta <= 0.11``, i.e. at the threshold for practical purposes.
        Any other detected oscillation is info (underdamped, stable).
    swing_ratio, swing_min_periods : float
        Erratic swings: a significant periodogram peak without a clean repetition, but a median
        swing amplitude at least 3x the step-to-step noise (:attr:`Oscillation.swing_ratio`)
        over at least 5 periods (so that one collapse or one knee of the learning curve cannot
        make the median), is a warning. Stable runs measure 0.5-1.7 (the cases, the real logs,
        the constructed and bandit logs); the two-arm bandit past its refresh-lag threshold 3-15,
        where saturation makes its oscillation irregular.
    window : int
        Default smoothing window in steps for the short logs (5); long logs use 2% of their
        length.
    """

    zero_spread_info: float = 0.25
    zero_spread_warning: float = 0.5
    zero_spread_critical: float = 0.9
    min_stretch_fraction: float = 0.1
    min_stretch_steps: int = 5
    excess_over_binary: float = 0.15
    entropy_warning: float = 0.5
    entropy_critical: float = 0.1
    progress_still_rising: float = 0.75
    trend_z: float = 3.0
    flat_z: float = 2.0
    falling_z: float = -2.0
    growth_warning: float = 10.0
    growth_critical: float = 100.0
    onset_factor: float = 3.0
    floors: dict[str, float] = field(default_factory=lambda: {
        "grad_norm": 1e-8, "kl": 0.05, "ppo_kl": 0.01, "clip_ratio_region": 0.02, "clip_ratio_low": 0.02,
        "clip_ratio_high": 0.02, "importance_ratio_max": 1.0,
    })
    clip_critical: float = 0.5
    kl_still_growing: float = 1.5
    oscillation_p_value: float = 0.01
    oscillation_growth_warning: float = 1.5
    oscillation_growth_critical: float = 3.0
    sustained_growth: float = 2.0 / 3.0
    sustained_autocorrelation: float = 0.5
    swing_ratio: float = 3.0
    swing_min_periods: float = 5.0
    window: int = 5

    def __post_init__(self) -> None:
        # fractions in [0, 1] and ordered levels; counts >= 1; every other threshold finite and > 0
        # (a bad value would silently change every verdict)
        fractions = ("zero_spread_info", "zero_spread_warning", "zero_spread_critical", "min_stretch_fraction",
                     "excess_over_binary", "entropy_warning", "entropy_critical", "progress_still_rising",
                     "clip_critical", "oscillation_p_value", "sustained_growth", "sustained_autocorrelation")
        for name in fractions:
            check_real(name, getattr(self, name), low=0.0, high=1.0)
        for name in ("min_stretch_steps", "window"):
            check_integer(name, getattr(self, name), low=1)
        for name in ("trend_z", "flat_z", "growth_warning", "growth_critical", "onset_factor", "kl_still_growing",
                     "oscillation_growth_warning", "oscillation_growth_critical", "swing_ratio", "swing_min_periods"):
            check_real(name, getattr(self, name), low=0.0, low_inclusive=False)
        check_real("falling_z", self.falling_z, high=0.0, high_inclusive=False)
        for lo, hi in (("zero_spread_info", "zero_spread_warning"), ("zero_spread_warning", "zero_spread_critical"),
                       ("entropy_critical", "entropy_warning"), ("growth_warning", "growth_critical"),
                       ("oscillation_growth_warning", "oscillation_growth_critical")):
            if getattr(self, lo) > getattr(self, hi):
                raise ParameterError(lo, f"`{lo}` ({getattr(self, lo)!r}) must not exceed `{hi}` "
                                         f"({getattr(self, hi)!r})")
        for key, value in self.floors.items():
            check_real(f"floors[{key!r}]", value, low=0.0)


DEFAULT_THRESHOLDS = Thresholds()
#: Most points a plateau forecast fits (longer logs are bin-averaged first; 500 bins keep a
#: 100,000-step log's forecast, bootstrap included, well under a second).
FORECAST_POINTS = 500
_GROWTH_METRICS = ("grad_norm", "kl", "ppo_kl", "importance_ratio_max", "clip_ratio_region", "clip_ratio_low",
                   "clip_ratio_high")
_CORRECTNESS_WORDS = ("correct", "accuracy", "acc", "answer", "exact", "solution", "solved", "pass", "math",
                      "verif")


# ============================================================================================
# Results
# ============================================================================================


@dataclass(frozen=True)
class Finding:
    """One failure mode found in a log.

    Attributes
    ----------
    mode : str
        One of :data:`MODES`.
    severity : {"info", "warning", "critical"}
        See the module docstring.
    steps : tuple of int
        ``(first, last)`` optimizer steps the finding covers.
    onset : int or None
        Step at which the failure began, where that is meaningful (growth, entropy halving).
    evidence : dict
        The numbers behind the finding (observed and expected fractions, growth factors, ...).
    message : str
        One sentence for a person.
    """

    mode: str
    severity: str
    steps: tuple[int, int]
    onset: int | None
    evidence: dict[str, Any]
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``mode``, ``severity``, ``steps``, ``onset``, ``evidence``, ``message``)."""
        return json_ready({"mode": self.mode, "severity": self.severity, "steps": list(self.steps),
                      "onset": self.onset, "evidence": self.evidence, "message": self.message})


@dataclass(frozen=True)
class Oscillation:
    """Periodic component of a detrended curve (:func:`oscillation`).

    Attributes
    ----------
    detected : bool
        The periodogram peak passes Fisher's g-test at the chosen level and the detrended curve
        repeats itself after one period (autocorrelation at that lag >= 0.2).
    period : float
        Period of the peak in steps (``nan`` if the curve is too short).
    p_value : float
        Fisher g-test p-value of the peak (small: a real oscillation).
    power_fraction : float
        Fraction of the detrended variance in the peak's Fourier bin (Fisher's g).
    autocorrelation : float
        Autocorrelation of the detrended curve at a lag of one period (near 1 for a clean
        oscillation, near 0 for noise).
    growth_rate : float
        Slope of the log amplitude envelope, per step (> 0 growing, < 0 decaying); ``nan`` when
        fewer than three periods were observed.
    growth_factor : float
        ``exp(growth_rate * span)``: how much the amplitude grew over the analysed steps.
    damping_ratio : float
        ``zeta = -growth_rate / sqrt(growth_rate^2 + omega^2)``, ``omega = 2 pi / period``: the
        damping ratio of the damped oscillator ``e^{-gamma t} cos(omega t)`` with the measured
        decay (``zeta < 0``: growing, past the stability threshold).
    amplitude_start, amplitude_end : float
        Amplitude (sqrt(2) x RMS) of the detrended curve in the first and the last period.
    steps : tuple of int
        First and last step analysed.
    swing_ratio : float
        Median amplitude of the detrended curve over one-period blocks, over ``sqrt(2)`` times the
        step-to-step noise (MAD of first differences / sqrt(2)): about 1 when the curve is its
        trend plus white noise, large when it swings persistently around its trend, periodic or
        not.
    """

    detected: bool
    period: float
    p_value: float
    power_fraction: float
    autocorrelation: float
    growth_rate: float
    growth_factor: float
    damping_ratio: float
    amplitude_start: float
    amplitude_end: float
    steps: tuple[int, int]
    swing_ratio: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the attributes."""
        return json_ready(asdict(self))


@dataclass
class Diagnosis:
    """What :func:`diagnose` found.

    Attributes
    ----------
    findings : list of Finding
        Most severe first (then by onset).
    healthy : bool
        No finding is a warning or critical.
    forecast : dict or None
        Plateau forecast of the reward (:func:`plateau_forecast`; ``reliable`` False with a
        ``caveat`` when the run is unstable), or ``None`` if it was not made (the reward did not
        move significantly, or too few points; the reason is in ``notes``).
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
    """

    findings: list[Finding]
    healthy: bool
    forecast: dict[str, Any] | None
    oscillation: Oscillation | None
    checked: list[str]
    skipped: dict[str, str]
    source: str
    format: str
    reward_std_kind: str
    steps: tuple[int, int]
    notes: list[str] = field(default_factory=list)

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
        """JSON-ready dict: ``findings``, ``healthy``, ``forecast``, ``oscillation``, ``checked``,
        ``skipped``, ``format``, ``source``, ``reward_std_kind``, ``steps``, ``notes``."""
        return json_ready({
            "healthy": self.healthy,
            "findings": [f.to_dict() for f in self.findings],
            "forecast": _forecast_json(self.forecast),
            "oscillation": None if self.oscillation is None else self.oscillation.to_dict(),
            "checked": self.checked,
            "skipped": self.skipped,
            "format": self.format,
            "source": self.source,
            "reward_std_kind": self.reward_std_kind,
            "steps": list(self.steps),
            "notes": self.notes,
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
        head = "healthy" if self.healthy else "NOT healthy"
        lines = [f"{self.source}: {head} (steps {self.steps[0]}-{self.steps[1]}, {self.format})"]
        for f in self.findings:
            lines.append(f"  [{f.severity}] {f.mode}: {f.message}")
        if self.forecast:
            fc = self.forecast
            lines.append(f"  forecast: reward plateau {fc['plateau']:.4g} [{fc['plateau_low']:.4g}, "
                         f"{fc['plateau_high']:.4g}] ({fc['law']} law); now {fc['current']:.4g}"
                         + (f" (caveat: {fc['caveat']})" if fc.get("caveat") else ""))
        else:
            lines += [f"  {note}" for note in self.notes if note.startswith("no plateau forecast")]
        lines += [f"  {note}" for note in self.notes if note.startswith("data: ")]
        for mode, why in self.skipped.items():
            lines.append(f"  not checked: {mode} ({why})")
        return "\n".join(lines)


# ============================================================================================
# Closed forms
# ============================================================================================

def expected_zero_spread_fraction(p, group_size):
    """Probability that a group of ``G`` binary rewards is all equal: ``p^G + (1 - p)^G``.

    With a 0/1 reward of success probability ``p`` per completion, a group of ``G`` independent
    completions has zero reward spread (all correct or all wrong) with this probability; its
    advantages are then all zero and it contributes no policy gradient.

    Parameters
    ----------
    p : float or array_like
        Success probability per completion, in [0, 1] (dimensionless).
    group_size : int or array_like of int
        ``G`` >= 1, completions per prompt. Broadcast against ``p``.

    Returns
    -------
    float or ndarray
        Expected fraction of zero-spread groups, in [2^(1-G), 1]; a float for scalar input.

    Raises
    ------
    ParameterError
        ``p`` outside [0, 1] or not finite; ``group_size`` not an integer >= 1.

    Notes
    -----
    For prompts of different difficulty ``p_i``, the expected fraction is the mean of
    ``p_i^G + (1 - p_i)^G``, which by convexity is at least the value at the mean accuracy: a
    batch that mixes solved and unsolvable prompts degenerates more than its mean accuracy says.

    References
    ----------
    The binary-reward expectation used across the GRPO literature; book chapter "Reading a
    training log".

    Examples
    --------
    >>> [round(expected_zero_spread_fraction(0.18, g), 4) for g in (2, 4, 8, 16)]
    [0.7048, 0.4532, 0.2044, 0.0418]
    """
    scalar = np.ndim(p) == 0 and np.ndim(group_size) == 0
    p_arr = check_array("p", p, low=0.0, high=1.0)
    g_arr = np.asarray(group_size)
    if g_arr.dtype.kind not in "iuf" or g_arr.dtype == bool or np.any(~np.isfinite(g_arr.astype(float))) \
            or np.any(g_arr != np.round(g_arr)) or np.any(g_arr < 1):
        from ...errors import ParameterError
        raise ParameterError("group_size", f"`group_size` must be an integer >= 1; got {group_size!r}")
    g_arr = g_arr.astype(float)
    out = p_arr ** g_arr + (1.0 - p_arr) ** g_arr
    return float(out) if scalar else out


def group_size_for_zero_spread(p, target: float = 0.5, max_group_size: int = 4096) -> int:
    """Smallest group size whose expected zero-spread fraction is at most ``target``.

    Parameters
    ----------
    p : float
        Success probability per completion, in (0, 1).
    target : float
        Largest acceptable fraction of zero-spread groups, in (0, 1).
    max_group_size : int
        Search limit (>= 2).

    Returns
    -------
    int
        ``min {G >= 2 : p^G + (1 - p)^G <= target}``.

    Raises
    ------
    ParameterError
        ``p`` not in (0, 1), ``target`` not in (0, 1), or no ``G <= max_group_size`` reaches the
        target (the message says so).

    Examples
    --------
    >>> group_size_for_zero_spread(0.18, 0.5)
    4
    >>> group_size_for_zero_spread(0.02, 0.5)
    35
    """
    from ...errors import ParameterError

    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    target = check_real("target", target, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    max_group_size = check_integer("max_group_size", max_group_size, low=2)
    g = np.arange(2, max_group_size + 1, dtype=float)
    ok = np.flatnonzero(p ** g + (1 - p) ** g <= target)
    if ok.size == 0:
        raise ParameterError("target", f"no group size up to {max_group_size} brings the zero-spread fraction at "
                                       f"p = {p} to {target}")
    return int(g[ok[0]])


# ============================================================================================
# Helpers on series
# ============================================================================================

def _quiet_series(log: RunLog, metric: str, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return log.series(metric, split=split)


def _pct(x: float) -> str:
    """A fraction as a percentage for messages: '43%', '<1%', '0.5%'."""
    if x <= 0:
        return "0%"
    if x < 0.01:
        return "<1%"
    return f"{x:.0%}"


def _window(n: int, th: Thresholds) -> int:
    return int(max(th.window, min(n // 4 if n >= 8 else 1, round(0.02 * n)))) if n > 0 else 1


def _smooth(values: np.ndarray, window: int, how: str = "mean") -> np.ndarray:
    s = pd.Series(values).rolling(window, center=True, min_periods=1)
    return (s.median() if how == "median" else s.mean()).to_numpy()


def _noise_sd(values: np.ndarray) -> float:
    """Noise standard deviation from first differences (robust to slow trends): MAD / sqrt(2)."""
    if values.size < 3:
        return float("nan")
    d = np.diff(values)
    mad = float(np.median(np.abs(d - np.median(d)))) * 1.4826
    sd = mad / math.sqrt(2)
    if sd <= 0:
        sd = float(np.std(d)) / math.sqrt(2)
    return sd


def _rise(values: np.ndarray, early_points: int | None = None) -> dict[str, float]:
    """Early and late means and the rise's z-score.

    Early: the first 10% of the points (at least 2), so that a curve that rises fast is not
    already high in its "early" window (or ``early_points``); late: the last 25% (at least 2);
    halves under 8 points.
    The standard error uses the step-to-step noise (first differences), which a slow trend does
    not inflate.
    """
    n = values.size
    if n >= 8:
        qe, ql = max(2, int(round(0.1 * n))), max(2, n // 4)
        if early_points is not None:
            qe = int(min(max(2, early_points), n - ql))
    else:
        qe = ql = max(1, n // 2)
    early, late = float(np.mean(values[:qe])), float(np.mean(values[-ql:]))
    sd = _noise_sd(values) if n >= 8 else float(np.std(values, ddof=1)) if n >= 3 else float("nan")
    se = sd * math.sqrt(1.0 / qe + 1.0 / ql) if math.isfinite(sd) else float("nan")
    q = ql
    gain = late - early
    if not math.isfinite(se) or se <= 0:
        z = math.copysign(float("inf"), gain) if gain != 0 else 0.0
    else:
        z = gain / se
    return {"early": early, "late": late, "gain": gain, "z": z, "points": q}


def _trend(steps: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Least-squares slope of a curve and its z-score, with early/late means for messages.

    ``z = slope / se(slope)``, ``se`` from the residuals about the line (a curved, saturating
    rise inflates them, which only makes the test conservative). Every point counts, so one
    unlucky early eval does not decide whether a curve rose.
    """
    t = steps.astype(float)
    n = values.size
    rise = _rise(values)
    if n < 3 or np.ptp(t) == 0:
        return {**rise, "slope": float("nan"), "z": 0.0}
    tc = t - t.mean()
    sxx = float(np.dot(tc, tc))
    slope = float(np.dot(tc, values - values.mean()) / sxx)
    resid = values - values.mean() - slope * tc
    s2 = float(np.dot(resid, resid)) / max(n - 2, 1)
    se = math.sqrt(s2 / sxx) if s2 > 0 else 0.0
    z = slope / se if se > 0 else (math.copysign(math.inf, slope) if slope != 0 else 0.0)
    return {**rise, "slope": slope, "z": z}


def _longest_run(mask: np.ndarray, max_gap: int = 0) -> tuple[int, int]:
    """(start, length) of the longest run of True, bridging gaps of at most ``max_gap`` False."""
    if not mask.any():
        return 0, 0
    m = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(m)
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    if max_gap > 0 and starts.size > 1:
        keep = (starts[1:] - ends[:-1]) > max_gap  # gap before run i+1 too long: a new run starts
        starts = starts[np.concatenate([[True], keep])]
        ends = ends[np.concatenate([keep, [True]])]
    lengths = ends - starts
    i = int(np.argmax(lengths))
    return int(starts[i]), int(lengths[i])


def _bin(steps: np.ndarray, values: np.ndarray, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Bin means down to at most ``max_points`` points (long logs)."""
    n = values.size
    if n <= max_points:
        return steps, values
    k = int(math.ceil(n / max_points))
    m = (n // k) * k
    return steps[:m].reshape(-1, k).mean(axis=1), values[:m].reshape(-1, k).mean(axis=1)


# ============================================================================================
# Oscillation
# ============================================================================================

def oscillation(steps, values, *, min_period: float = 4.0, max_period: float | None = None,
                p_value: float = 0.01, min_autocorrelation: float = 0.2) -> Oscillation:
    """Find a periodic component of a curve, its period and whether its amplitude grows.

    Method: the curve is put on a uniform step grid (interpolating over gaps), detrended with a
    centred rolling mean (first over a fifth of the curve, then over exactly one period of the
    first estimate, which removes a sinusoid of that period from the trend), and the periodogram
    of the residual is searched for its largest peak between ``min_period`` and ``max_period``
    (zero-padded 8x for the period's resolution; 2x above 16,384 points). Fisher's g-test (largest Fourier ordinate over
    their sum, ``P(g > x) ~ m (1 - x)^(m - 1)`` for ``m`` ordinates) says whether the peak stands
    out of noise, and the detrended curve must also correlate with itself one period later
    (autocorrelation >= ``min_autocorrelation``): a single step change (a collapse) puts power at
    every frequency but does not repeat. The amplitude envelope is sqrt(2) x the RMS of the residual in consecutive
    one-period blocks; a least-squares line through its logarithm gives the growth rate.

    Parameters
    ----------
    steps : array_like, shape (n,)
        Optimizer steps, increasing (gaps allowed).
    values : array_like, shape (n,)
        The curve (reward per step); finite.
    min_period, max_period : float
        Period search range in steps (default max: a third of the span, so that at least three
        periods are seen).
    p_value : float
        Level of the g-test for ``detected`` (0.01).
    min_autocorrelation : float
        Smallest autocorrelation at a lag of one period for ``detected`` (0.2).

    Returns
    -------
    Oscillation

    Raises
    ------
    ParameterError
        Arrays of different lengths, non-finite values, fewer than 16 points, non-increasing steps.

    References
    ----------
    Fisher (1929), Proc. R. Soc. A 125, 54-59 (the g-test); our procedure, book chapter
    "Reading a training log".

    Examples
    --------
    >>> t = np.arange(1, 201)
    >>> y = 0.5 + 0.05 * np.exp(0.01 * t) * np.sin(2 * np.pi * t / 22)
    >>> osc = oscillation(t, y)
    >>> bool(osc.detected), round(osc.period), bool(osc.growth_factor > 3)
    (True, 22, True)
    """
    from ...errors import ParameterError

    t = check_array("steps", steps, ndim=1, min_size=16)
    y = check_array("values", values, ndim=1, min_size=16)
    if t.size != y.size:
        raise ParameterError("values", f"`values` must have the same length as `steps`; got {y.size} and {t.size}")
    if np.any(np.diff(t) <= 0):
        raise ParameterError("steps", "`steps` must be strictly increasing")
    min_period = check_real("min_period", min_period, low=2.0)
    p_value = check_real("p_value", p_value, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    t, y = _bin(t, y, 1 << 18)
    stride = float(np.median(np.diff(t)))
    grid = np.arange(t[0], t[-1] + 0.5 * stride, stride)
    yg = np.interp(grid, t, y)
    n = yg.size
    span = float(grid[-1] - grid[0])
    if max_period is None:
        max_period = span / 3.0
    max_period = check_real("max_period", max_period, low=min_period)
    steps_out = (int(round(t[0])), int(round(t[-1])))
    nan = float("nan")

    def peak(resid: np.ndarray) -> tuple[float, float, float]:
        r = resid - resid.mean()
        pad = 8 * n if n <= 16384 else 2 * n
        power = np.abs(np.fft.rfft(r, pad)) ** 2
        freqs = np.fft.rfftfreq(pad, d=stride)
        with np.errstate(divide="ignore"):
            periods = np.where(freqs > 0, 1.0 / freqs, np.inf)
        band = (periods >= min_period) & (periods <= max_period)
        if not band.any():
            return nan, 1.0, 0.0
        i = np.flatnonzero(band)[int(np.argmax(power[band]))]
        # Fisher's g on the unpadded Fourier ordinates (k = 1 .. m).
        ordinates = np.abs(np.fft.rfft(r)) ** 2
        m = (n - 1) // 2
        ords = ordinates[1 : m + 1]
        total = float(ords.sum())
        fk = np.fft.rfftfreq(n, d=stride)[1 : m + 1]
        pk = 1.0 / fk
        in_band = (pk >= min_period * 0.8) & (pk <= max_period * 1.25)
        g = float(ords[in_band].max() / total) if total > 0 and in_band.any() else 0.0
        pv = min(1.0, m * (1.0 - g) ** (m - 1)) if g > 0 else 1.0
        return float(periods[i]), pv, g

    w0 = max(3, n // 5)
    trend = _smooth(yg, w0)
    period, pv, g = peak(yg - trend)
    if math.isfinite(period):
        w1 = max(3, int(round(period / stride)))
        trend = _smooth(yg, w1)
        p2, pv2, g2 = peak(yg - trend)
        if math.isfinite(p2):
            period, pv, g = p2, pv2, g2
    if not math.isfinite(period):
        return Oscillation(False, nan, 1.0, 0.0, nan, nan, nan, nan, nan, nan, steps_out)
    resid = yg - trend
    lag = int(round(period / stride))
    r = resid - resid.mean()
    den = float(np.dot(r, r))
    acf = float(np.dot(r[:-lag], r[lag:]) / den) if 0 < lag < n and den > 0 else nan
    block = max(2, lag)
    nb = n // block
    growth_rate = growth_factor = zeta = nan
    amp_start = amp_end = swing = nan
    if nb >= 1:
        blocks = resid[: nb * block].reshape(nb, block)
        amps = math.sqrt(2.0) * np.sqrt(np.mean((blocks - blocks.mean(axis=1, keepdims=True)) ** 2, axis=1))
        amp_start, amp_end = float(amps[0]), float(amps[-1])
        noise = _noise_sd(yg)
        swing = float(np.median(amps) / (math.sqrt(2.0) * noise)) if noise > 0 else float("inf")
        if nb >= 3 and np.all(amps > 0):
            centres = grid[0] + (np.arange(nb) + 0.5) * block * stride
            slope = float(np.polyfit(centres, np.log(amps), 1)[0])
            growth_rate = slope
            growth_factor = float(math.exp(slope * span))
            omega = 2 * math.pi / period
            zeta = float(-slope / math.hypot(slope, omega))
    detected = bool(pv < p_value and math.isfinite(acf) and acf >= min_autocorrelation)
    return Oscillation(detected, float(period), float(pv), float(g), acf, growth_rate, growth_factor,
                       zeta, amp_start, amp_end, steps_out, swing)


# ============================================================================================
# The four modes
# ============================================================================================

def _need(log: RunLog, mode: str, *metrics: str) -> None:
    missing = [m for m in metrics if not log.has(m)]
    if missing:
        raise DataError(f"{mode} needs the column(s) {', '.join(missing)}, which {log.source} does not have")


def _is_binary_compatible(values: np.ndarray) -> bool:
    return bool(values.size and np.all((values >= -1e-9) & (values <= 1 + 1e-9)))


def zero_spread_series(log: RunLog, *, group_size: int | None = None, binary_reward: bool | None = None,
                       num_prompts: int | None = None,
                       thresholds: Thresholds = DEFAULT_THRESHOLDS) -> pd.DataFrame:
    """The observed zero-spread fraction per step, smoothed, and its binary-reward expectation.

    What :func:`advantage_degeneration` judges and the report's chart draws.

    Parameters
    ----------
    log : RunLog
        Needs ``frac_reward_zero_std``, or ``reward_std`` (whose zeros give a lower bound).
    group_size : int, optional
        ``G`` >= 2; with a 0/1-compatible reward, adds the ``expected`` column.
    binary_reward : bool, optional
        Whether the reward is 0/1 (default: every reward in [0, 1]).
    num_prompts : int, optional
        Prompts per step (1: ``reward_std == 0`` is exact, not a lower bound).
    thresholds : Thresholds
        Supplies the smoothing window (5% of the steps, at least ``thresholds.window``).

    Returns
    -------
    pandas.DataFrame
        Columns ``step`` (int), ``observed`` (fraction per step, in [0, 1]), ``smoothed``
        (centred rolling mean), ``expected`` (``p^G + (1 - p)^G`` at the logged reward ``p``;
        NaN when not computable) and ``expected_smoothed`` (its rolling mean over the same window). ``attrs``: ``source`` (which column), ``lower_bound`` (bool),
        ``window`` (int), ``binary`` (bool or None), ``group_size``.

    Raises
    ------
    DataError
        Neither column, or no finite value.
    ParameterError
        Bad ``group_size`` or ``num_prompts``.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> log = from_records([{"step": s, "reward": 0.18, "frac_reward_zero_std": 0.5} for s in range(1, 11)])
    >>> round(float(zero_spread_series(log, group_size=4)["expected"].iloc[0]), 4)
    0.4532
    """
    th = thresholds
    if group_size is not None:
        group_size = check_integer("group_size", group_size, low=2)
    if num_prompts is not None:
        num_prompts = check_integer("num_prompts", num_prompts, low=1)
    if log.has("frac_reward_zero_std"):
        steps, frac = _quiet_series(log, "frac_reward_zero_std")
        source, bound = "frac_reward_zero_std", False
    elif log.has("reward_std"):
        steps, rs = _quiet_series(log, "reward_std")
        frac = (np.abs(rs) <= 1e-12).astype(float)
        source, bound = "reward_std == 0", num_prompts != 1
    else:
        raise DataError(f"advantage_degeneration needs frac_reward_zero_std or reward_std, which {log.source} "
                        "does not have")
    n = frac.size
    if n == 0:
        raise DataError(f"advantage_degeneration: no finite zero-spread values in {log.source}")
    w = min(max(th.window, int(round(0.05 * n))), n)
    expected = np.full(n, np.nan)
    binary = None
    if log.has("reward"):
        _, all_r = _quiet_series(log, "reward")
        binary = binary_reward if binary_reward is not None else _is_binary_compatible(all_r)
        if binary and group_size is not None:
            r = log.train["reward"].reindex(steps).to_numpy(dtype=float)
            ok = np.isfinite(r) & (r >= 0) & (r <= 1)
            expected[ok] = expected_zero_spread_fraction(r[ok], group_size)
    out = pd.DataFrame({"step": steps.astype(np.int64), "observed": frac, "smoothed": _smooth(frac, w),
                        "expected": expected, "expected_smoothed": _smooth(expected, w)})
    out.attrs.update(source=source, lower_bound=bool(bound), window=int(w), binary=binary, group_size=group_size)
    return out


def advantage_degeneration(log: RunLog, *, group_size: int | None = None, binary_reward: bool | None = None,
                           num_prompts: int | None = None,
                           thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check for groups without reward spread (zero advantages, no gradient).

    The observed fraction is ``frac_reward_zero_std`` (TRL >= 0.18). Without it, the steps where
    ``reward_std`` is exactly 0 are steps on which *every* group had zero spread (true for the
    per-group mean and for the batch std), so their fraction is a lower bound of the zero-spread
    fraction (exact when each step holds one group, ``num_prompts = 1``, as in the Unsloth
    notebook runs). The fraction
    is smoothed (centred mean over 5% of the steps, at least 5) and the longest stretch at or above
    the critical, warning or info level (:class:`Thresholds`; dips shorter than the window are
    bridged) that lasts long enough is reported.

    When the reward can be 0/1 (``binary_reward``, or by default every reward value in [0, 1])
    and ``group_size`` is known, the stretch's mean observed fraction is compared with the
    binary expectation ``p^G + (1 - p)^G`` at the logged accuracy ``p``
    (:func:`expected_zero_spread_fraction`). Close to it: the task is too hard (or too easy) for
    that ``G``; well above it: the prompts are all-solved or all-failed (the mean hides a mix of
    trivial and impossible prompts, which by convexity raises the fraction) or the reward does
    not vary within a group at all. A 0/1 reward leaves at least ``2^(1 - G)`` of the groups
    without spread at any accuracy (half of them at G = 2): a warning level at or below that floor,
    with the fraction close to its expectation, is reported as ``info`` (the group size, not a
    symptom; evidence ``binary_floor``).

    Parameters
    ----------
    log : RunLog
    group_size : int, optional
        Completions per prompt (``num_generations``), >= 2.
    binary_reward : bool, optional
        Whether the reward is 0/1; ``None`` assumes so when every reward lies in [0, 1].
    num_prompts : int, optional
        Prompts (groups) per step, >= 1; with 1, ``reward_std == 0`` is the exact fraction.
    thresholds : Thresholds

    Returns
    -------
    Finding or None
        ``None`` when no level is sustained.

    Raises
    ------
    DataError
        The log has neither ``frac_reward_zero_std`` nor ``reward_std``, or fewer than
        ``min_stretch_steps`` (5) steps of them.
    ParameterError
        ``group_size`` not an integer >= 2.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> log = from_records([{"step": s, "reward": 0.05, "frac_reward_zero_std": 0.9} for s in range(1, 41)])
    >>> f = advantage_degeneration(log, group_size=2)
    >>> f.severity, round(f.evidence["expected_binary"], 3)
    ('critical', 0.905)
    """
    th = thresholds
    if group_size is not None:
        group_size = check_integer("group_size", group_size, low=2)
    if num_prompts is not None:
        num_prompts = check_integer("num_prompts", num_prompts, low=1)
    table = zero_spread_series(log, num_prompts=num_prompts, thresholds=th)
    steps, frac, smooth = (table["step"].to_numpy(), table["observed"].to_numpy(), table["smoothed"].to_numpy())
    source, bound, w = table.attrs["source"], table.attrs["lower_bound"], table.attrs["window"]
    n = frac.size
    if n < th.min_stretch_steps:  # a stretch needs that many steps: a shorter log is no evidence either way
        raise DataError(f"advantage_degeneration needs at least {th.min_stretch_steps} logged steps of the zero-spread "
                        f"fraction; {log.source} has {n}")
    need = max(th.min_stretch_steps, int(math.ceil(th.min_stretch_fraction * n)))
    need = min(need, n)
    chosen = None
    for severity, level in (("critical", th.zero_spread_critical), ("warning", th.zero_spread_warning),
                            ("info", th.zero_spread_info)):
        start, length = _longest_run(smooth >= level - 1e-12, max_gap=w)
        if length >= need:
            chosen = (severity, level, start, length)
            break
    if chosen is None:
        return None
    severity, level, start, length = chosen
    sl = slice(start, start + length)
    s_first, s_last = int(steps[start]), int(steps[start + length - 1])
    observed = float(np.mean(frac[sl]))
    ev: dict[str, Any] = {
        "observed_zero_spread_fraction": observed,
        "source": source,
        "lower_bound": bound,
        "level": level,
        "steps_in_stretch": length,
        "run_mean_zero_spread_fraction": float(np.mean(frac)),
    }
    in_range = (log.train.index >= s_first) & (log.train.index <= s_last)
    for metric in ("grad_norm", "loss"):
        if log.has(metric):
            v = log.train.loc[in_range, metric].to_numpy(dtype=float)
            v = v[np.isfinite(v)]
            if v.size:
                ev[f"{metric}_zero_fraction"] = float(np.mean(np.abs(v) <= 1e-12))
    expected = None
    p_mean = None
    if log.has("reward"):
        r = log.train.loc[in_range, "reward"].to_numpy(dtype=float)
        r = r[np.isfinite(r)]
        _, all_r = _quiet_series(log, "reward")
        binary = binary_reward if binary_reward is not None else _is_binary_compatible(all_r)
        ev["binary_reward"] = bool(binary)
        if r.size:
            p_mean = float(np.mean(r))
            ev["mean_reward"] = p_mean
        if binary and group_size is not None and r.size and _is_binary_compatible(r):
            expected = float(np.mean(expected_zero_spread_fraction(np.clip(r, 0, 1), group_size)))
            ev["expected_binary"] = expected
            ev["excess_over_binary"] = observed - expected
            ev["group_size"] = group_size
    if observed >= 0.9995:  # a lower bound of 100% is exact: every group
        head = "Every group had"
    else:
        head = f"{'At least ' if bound else ''}{observed:.0%} of groups had"
    msg = (f"{head} zero reward spread over steps {s_first}-{s_last} "
           f"(their advantages are 0 and give no gradient")
    if ev.get("grad_norm_zero_fraction", 0) >= 0.5:
        msg += f"; grad_norm is 0 on {ev['grad_norm_zero_fraction']:.0%} of these steps"
    msg += ")"
    # With a 0/1 reward at least 2^(1-G) of the groups have zero spread at any accuracy (p = 1/2 is
    # the best case): a level at or below that floor is the group size itself, not a symptom.
    floor = 2.0 ** (1 - group_size) if expected is not None else None
    at_floor = (floor is not None and severity != "info" and floor >= level - 1e-12
                and observed - expected <= th.excess_over_binary)
    if at_floor:
        severity = "info"
        ev["binary_floor"] = floor
        msg += (f", as expected ({expected:.0%}) for a 0/1 reward at accuracy {p_mean:.2f} with G = {group_size}: "
                f"at G = {group_size} at least {floor:.0%} of the groups have zero spread whatever the accuracy, so "
                "this level is a property of the group size (reported as info); a larger G lowers it")
    elif expected is not None:
        if observed - expected > th.excess_over_binary:
            msg += (f", well above the {expected:.0%} a 0/1 reward at accuracy {p_mean:.2f} gives with G = "
                    f"{group_size}: prompts are all-solved or all-failed, or the reward does not vary within a group")
        elif p_mean is not None and p_mean >= 0.5:
            msg += (f", as expected ({expected:.0%}) for a 0/1 reward with G = {group_size} at the logged accuracy "
                    f"(mean {p_mean:.2f}): accuracy near 1 leaves groups all correct (the prompts are too easy "
                    "for further learning)")
        else:
            try:
                g_star = group_size_for_zero_spread(min(max(p_mean, 1e-6), 1 - 1e-6), 0.5)
                hint = f"; G >= {g_star} would halve it, or use easier prompts"
            except GrpoError:
                hint = "; use easier prompts"
            msg += (f", as expected ({expected:.0%}) for a 0/1 reward at accuracy {p_mean:.2f} with G = "
                    f"{group_size}: the prompts are too hard for this group size{hint}")
    return Finding("advantage_degeneration", severity, (s_first, s_last), None, ev, msg + ".")


def policy_concentration(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the entropy falls fast while the reward is still rising.

    The entropy is smoothed (rolling median); its initial level ``H0`` is the median of the first
    1% of the raw values (3 to 20 values: the entropy can fall fast from the first step), its late
    level the median of the smoothed last 5%. The policy has concentrated
    when the late level is at most ``entropy_warning`` (0.5) of ``H0``, collapsed at
    ``entropy_critical`` (0.1). The reward is "still rising" when, at the step the entropy first
    halved, it had made less than ``progress_still_rising`` (75%) of its total gain (its rise
    being significant, z >= ``trend_z``). Severity: critical for a collapse while the reward was
    still rising (or not rising at all); warning for a halving while it was still rising, or for a
    collapse after it had risen; info for a halving after the reward had risen (sharpening of a
    learned policy).

    Parameters
    ----------
    log : RunLog
        Needs ``entropy`` (nats per token; any consistent unit works, only ratios are used).
    thresholds : Thresholds

    Returns
    -------
    Finding or None

    Raises
    ------
    DataError
        No ``entropy`` column, or fewer than 10 finite entropy values.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "entropy": 0.6 * 0.95 ** s, "reward": 0.7 - 0.5 * 0.97 ** s} for s in range(1, 121)]
    >>> policy_concentration(from_records(recs)).severity
    'critical'
    """
    th = thresholds
    _need(log, "policy_concentration", "entropy")
    steps, h = _quiet_series(log, "entropy")
    if h.size < 10:
        raise DataError(f"policy_concentration needs at least 10 entropy values; {log.source} has {h.size}")
    steps, h = _bin(steps.astype(float), h, 4000)
    n = h.size
    hs = _smooth(h, min(_window(n, th), n), "median")
    k0 = int(min(20, max(3, round(0.01 * n))))
    h0 = float(np.median(h[:k0]))
    k = max(3, int(round(0.05 * n)))
    h_late = float(np.median(hs[-k:]))
    if not h0 > 0:
        return None
    ratio_late = h_late / h0
    if ratio_late > th.entropy_warning:
        return None
    below_half = np.flatnonzero(hs <= th.entropy_warning * h0)
    t_half = int(round(steps[below_half[0]]))
    below_tenth = np.flatnonzero(hs <= th.entropy_critical * h0)
    t_tenth = int(round(steps[below_tenth[0]])) if below_tenth.size else None
    ev: dict[str, Any] = {"entropy_initial": h0, "entropy_late": h_late, "entropy_ratio": ratio_late,
                          "step_entropy_halved": t_half, "step_entropy_tenth": t_tenth,
                          "steps_to_halve": t_half - int(round(steps[0]))}
    rising = None
    progress = None
    if log.has("reward"):
        rt, r = _quiet_series(log, "reward")
        if r.size >= 8:
            rsm = _smooth(r, min(_window(r.size, th), r.size))
            kr = int(min(20, max(3, round(0.01 * r.size))))  # as the entropy's initial window
            k1 = max(3, int(round(0.1 * r.size)))
            # start: the first raw values (the reward can jump within a few steps)
            r0, r1 = float(np.median(r[:kr])), float(np.median(rsm[-k1:]))
            at = float(np.interp(t_half, rt, rsm))
            gain = r1 - r0
            sd = _noise_sd(r)
            z = gain / (sd * math.sqrt(1.0 / kr + 1.0 / k1)) if sd > 0 else math.copysign(math.inf, gain)
            ev.update({"reward_start": r0, "reward_end": r1, "reward_rise_z": z})
            if z >= th.trend_z and gain > 0:
                progress = (at - r0) / gain
                ev["reward_progress_at_halving"] = progress
                rising = progress < th.progress_still_rising
            else:
                rising = None  # reward not rising at all
    collapsed = ratio_late <= th.entropy_critical
    if rising is None:
        severity = "critical" if collapsed else "warning"
        why = "without a significant reward gain" if log.has("reward") else "(no reward column to compare)"
    elif rising:
        severity = "critical" if collapsed else "warning"
        why = f"while the reward was still rising (it had made {progress:.0%} of its gain by then)"
    else:
        severity = "warning" if collapsed else "info"
        why = f"after the reward had made {progress:.0%} of its gain (sharpening of a learned policy)"
    word = "collapsed" if collapsed else "concentrated"
    msg = (f"The policy {word}: entropy fell from {h0:.3g} to {h_late:.3g} ({_pct(ratio_late)} of its initial "
           f"level), below half by step {t_half}, {why}.")
    return Finding("policy_concentration", severity, (int(round(steps[0])), int(round(steps[-1]))), t_half, ev, msg)


def _growth(steps: np.ndarray, v: np.ndarray, floor: float, th: Thresholds) -> dict[str, Any]:
    steps, v = _bin(steps.astype(float), v, 4000)
    n = v.size
    q = max(3, n // 4)
    base_raw = float(np.median(v[:q]))
    base = max(base_raw, floor)
    k = max(3, int(round(0.1 * n)))
    late = float(np.median(v[-k:]))
    sm = _smooth(v, min(max(3, _window(n, th)), n), "median")
    peak = float(np.max(sm[q:])) if n > q else float(np.max(sm))  # after the baseline window
    above = sm >= th.onset_factor * base
    onset = None
    if above.any():
        below_after = np.cumsum(~above[::-1])[::-1]  # number of steps at or after i below the level
        remaining = n - np.arange(n)
        # the growth must hold over a real stretch: at least 5 points and 10% of the log
        ok = above & (below_after <= 0.1 * remaining) & (remaining >= max(5, 0.1 * n))
        idx = np.flatnonzero(ok)
        if idx.size:
            onset = int(round(steps[idx[0]]))
    lo, hi = int(0.65 * n), max(int(0.75 * n), int(0.65 * n) + 1)
    before_end = max(float(np.median(v[lo:hi])), floor)
    return {"early": base_raw, "baseline": base, "late": late, "peak": peak, "growth_factor": late / base,
            "peak_factor": peak / base, "onset": onset, "last_quarter_factor": late / before_end}


def dynamic_instability(log: RunLog, *, thresholds: Thresholds = DEFAULT_THRESHOLDS,
                        osc: Oscillation | None = None) -> Finding | None:
    """Check for unbounded growth (grad norm, importance ratios, clip fractions, KL) and a growing
    oscillation of the reward.

    Growth: per metric, the early level is the median of the first quarter of the steps, raised
    to a floor (:attr:`Thresholds.floors`) so that a KL that starts at 0 is not "growing" when it
    reaches an ordinary value; the late level is the median of the last 10%. Late over early of
    at least ``growth_warning`` (10) is a warning, ``growth_critical`` (100) critical (clip
    fractions: absolute level ``clip_critical``; the KL to the reference must also still be growing
    over the last quarter, ``kl_still_growing``). Infinite values (an overflowed gradient norm or
    loss) are critical, unless the metric is finite again after its last infinite value (steps skipped
    on overflow, as fp16 loss scaling does: info, and the finite values are judged). The onset is the first step from which the smoothed metric stays above
    ``onset_factor`` (3) times its early level. A metric that peaked but came back (peak factor
    >= 100, late < 10) is reported as info (a transient spike).

    Oscillation: :func:`oscillation` of the reward; a significant oscillation whose amplitude grew
    by ``oscillation_growth_warning`` (1.5x) over the log is a warning, by
    ``oscillation_growth_critical`` (3x) critical; one that neither grows nor decays and repeats
    itself (a limit cycle, :class:`Thresholds`) is a warning; a decaying one is info. Persistent
    irregular swings well above the step-to-step noise (``swing_ratio``) are a warning too.

    Parameters
    ----------
    log : RunLog
    thresholds : Thresholds
    osc : Oscillation, optional
        A precomputed oscillation analysis of the reward (:func:`diagnose` passes its own).

    Returns
    -------
    Finding or None
        One finding combining every signal (severity: the worst), or ``None``.

    Raises
    ------
    DataError
        The log has none of the growth metrics and no reward, or too few steps to judge (fewer than 8 of
        every growth metric and fewer than 16 rewards): no verdict either way.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "grad_norm": 0.3 if s < 30 else 0.3 * 1.2 ** (s - 30)} for s in range(1, 101)]
    >>> f = dynamic_instability(from_records(recs))
    >>> f.severity, f.onset
    ('critical', 37)
    """
    th = thresholds
    present = [m for m in _GROWTH_METRICS if log.has(m)]
    if not present and not log.has("reward"):
        raise DataError(f"dynamic_instability needs grad_norm, kl, importance ratios, clip fractions or the "
                        f"reward; {log.source} has none of them")
    signals: dict[str, Any] = {}
    levels: list[tuple[str, int | None, str, str]] = []  # (severity, onset, kind, description)
    for m in present:
        col = log.train[m].to_numpy(dtype=float)
        inf = np.isinf(col)
        recovered = False
        if inf.any():
            first_inf = int(log.train.index[np.flatnonzero(inf)[0]])
            # finite values after the last infinite one: the overflowed steps were skipped (fp16 loss
            # scaling logs grad_norm = inf while it calibrates) and the run went on; judge the rest
            recovered = bool(np.isfinite(col[np.flatnonzero(inf)[-1] + 1:]).any())
            if not recovered:
                signals[m] = {"infinite_steps": int(inf.sum()), "first_infinite": first_inf}
                levels.append(("critical", first_inf, "growth", f"{m} overflowed (infinite)"))
                continue
            infinite = {"infinite_steps": int(inf.sum()), "first_infinite": first_inf}
            levels.append(("info", None, "overflow",
                           f"{m} was infinite on {int(inf.sum())} step(s) from step {first_inf} and finite after "
                           "(overflowed steps skipped, as fp16 loss scaling does)"))
        steps, v = _quiet_series(log, m)
        if v.size < 8:
            continue
        floor = th.floors.get(m, 1e-8)
        g = _growth(steps, np.abs(v), floor, th)
        signals[m] = g | infinite if recovered else g
        is_clip = m.startswith("clip_ratio")
        crit = g["late"] >= th.clip_critical if is_clip else g["growth_factor"] >= th.growth_critical
        warn = g["growth_factor"] >= th.growth_warning
        rose = f"{m} rose from {g['early']:.3g} to {g['late']:.3g} ({g['growth_factor']:.3g}x"
        rose += f" its early level floored at {g['baseline']:.3g})" if g["early"] < g["baseline"] else ")"
        if m == "kl" and (crit or warn) and g["last_quarter_factor"] < th.kl_still_growing:
            # The KL to the reference drifts up as the policy learns (without bound when beta = 0);
            # only growth that continues to the end of the log is instability.
            levels.append(("info", g["onset"], "growth",
                           rose + f", drifting but no longer accelerating (x{g['last_quarter_factor']:.2g} over the "
                                  "last quarter)"))
        elif crit or warn:
            levels.append(("critical" if crit else "warning", g["onset"], "growth", rose))
        elif g["peak_factor"] >= th.growth_critical:
            levels.append(("info", g["onset"], "growth", f"{m} spiked {g['peak_factor']:.3g}x and came back"))
        elif g["growth_factor"] >= th.onset_factor and g["onset"] is not None:
            levels.append(("info", g["onset"], "growth", rose))
    if osc is None and log.has("reward"):
        st, r = _quiet_series(log, "reward")
        if r.size >= 16:
            try:
                osc = oscillation(st, r, p_value=th.oscillation_p_value)
            except GrpoError:
                osc = None
    if not signals and osc is None:
        n_reward = _quiet_series(log, "reward")[1].size if log.has("reward") else 0
        if n_reward < 16:  # nothing was long enough to look at: no verdict either way
            raise DataError(f"dynamic_instability needs at least 8 logged steps of "
                            f"{', '.join(present) or 'a growth metric'} or 16 of the reward; {log.source} has "
                            f"{len(log.train)} row(s)")
    osc_level = None
    if osc is not None and osc.detected:
        gf = osc.growth_factor
        sustained = (math.isfinite(gf) and gf >= th.sustained_growth
                     and osc.autocorrelation >= th.sustained_autocorrelation)
        if math.isfinite(gf) and gf >= th.oscillation_growth_critical:
            osc_level = ("critical", f"the reward oscillates with a period of {osc.period:.1f} steps and a growing "
                                     f"amplitude (x{gf:.2g})")
        elif math.isfinite(gf) and gf >= th.oscillation_growth_warning:
            osc_level = ("warning", f"the reward oscillates with a period of {osc.period:.1f} steps and a growing "
                                    f"amplitude (x{gf:.2g})")
        elif sustained:
            osc_level = ("warning", f"the reward oscillates with a period of {osc.period:.1f} steps at a sustained "
                                    f"amplitude of {osc.amplitude_end:.2g} (a limit cycle: past the stability "
                                    "threshold, held by saturation)")
        else:
            how = "decaying" if math.isfinite(gf) and gf < 1 else "not growing"
            osc_level = ("info", f"the reward oscillates with a period of {osc.period:.1f} steps ({how}: damped, "
                                 "near the threshold)")
    swings = (osc is not None and (osc_level is None or osc_level[0] == "info")
              and osc.p_value < th.oscillation_p_value
              and math.isfinite(osc.swing_ratio) and osc.swing_ratio >= th.swing_ratio
              and (osc.steps[1] - osc.steps[0]) >= th.swing_min_periods * osc.period)
    if swings:
        osc_level = ("warning", f"the reward swings around its trend by about {osc.swing_ratio:.2g}x its "
                                f"step-to-step noise without a clean period (strongest near {osc.period:.0f} steps): "
                                "the irregular oscillation of a run past its stability threshold")
    if osc_level is not None:
        signals["reward_oscillation"] = osc.to_dict()
        levels.append((osc_level[0], None, "oscillation", osc_level[1]))
    if not levels:
        return None
    worst = max(_RANK[s] for s, _, _, _ in levels)
    severity = SEVERITIES[worst]
    serious = [x for x in levels if _RANK[x[0]] >= min(worst, 1)]
    signals["signals"] = [{"severity": s, "onset": o, "kind": k, "description": d} for s, o, k, d in levels]
    onsets = [o for s, o, k, _ in serious if o is not None and k == "growth"]
    onset = min(onsets) if onsets else None
    first, last = int(log.train.index[0]), int(log.train.index[-1])
    if onset is not None and log.has("reward"):
        rt, r = _quiet_series(log, "reward")
        before, after = r[rt < onset], r[rt >= onset]
        if before.size >= 3 and after.size >= 3:
            k = max(3, int(round(0.1 * after.size)))
            signals["reward_before_onset"] = float(np.mean(before[-max(3, min(before.size, 10)):]))
            signals["reward_late"] = float(np.mean(after[-k:]))
    growth = [d for s, _, k, d in serious if k == "growth"]
    parts = []
    if growth:
        head = "Unbounded growth: " if worst >= 1 else "Rising: "
        parts.append(head + (", ".join(growth[:-1]) + " and " + growth[-1] if len(growth) > 1 else growth[0])
                     + (f", from step {onset}" if onset is not None else ""))
    parts += ["Skipped steps: " + d for _, _, k, d in serious if k == "overflow"]
    for s_osc, _, k, d in serious:
        if k == "oscillation":
            parts.append(("Unstable oscillation: " if _RANK[s_osc] >= 1 else "Oscillation: ") + d)
    msg = "; ".join(parts)
    if "reward_late" in signals and signals["reward_late"] < signals["reward_before_onset"] - 1e-12:
        msg += f"; the reward fell from {signals['reward_before_onset']:.3g} to {signals['reward_late']:.3g}"
    return Finding("dynamic_instability", severity, (onset if onset is not None else first, last), onset,
                   signals, msg + ".")


def _eval_metric(log: RunLog, eval_metric: str | None) -> str | None:
    if eval_metric is not None:
        return eval_metric
    cols = [c for c in log.eval.columns if c != "step" and log.has(c, "eval")]
    corr = [c for c in cols if c.startswith("reward/") and any(w in c.lower() for w in _CORRECTNESS_WORDS)]
    for cand in corr + ["accuracy", "reward"]:
        if cand in cols:
            return cand
    scored = [c for c in cols if any(w in c.lower() for w in ("acc", "score", "reward", "pass", "correct"))]
    return scored[0] if scored else None


def train_eval_decoupling(log: RunLog, *, eval_metric: str | None = None, correctness: list[str] | None = None,
                          thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Finding | None:
    """Check whether the training reward rises while what it should measure does not.

    Two comparisons, each between the training reward and a measure of real success:

    * the eval metric (``eval_metric``; default: an eval reward function named like correctness,
      else ``accuracy``, else the eval ``reward``, else the first eval column named like a score),
      at least 3 eval points;
    * inside the training log, the reward functions named like correctness (``correct``,
      ``accuracy``, ``answer``, ``exact``...; or the ``correctness`` list) against the total
      reward, when the log has several reward functions.

    Each curve's rise is the z-score of its least-squares slope over the steps they share (every
    point counts; the messages quote the means of the first 10% and the last 25%). Decoupled: the
    training reward rises (z >= ``trend_z``) and the measure does not (z < ``flat_z``): warning;
    or the measure falls (z <= ``falling_z``) while the reward rises: critical (reward hacking
    proper).

    Parameters
    ----------
    log : RunLog
    eval_metric : str, optional
        Eval column to compare (normalised or original name).
    correctness : list of str, optional
        Reward-function names (``<f>`` of ``reward/<f>``) that measure correctness.
    thresholds : Thresholds

    Returns
    -------
    Finding or None

    Raises
    ------
    DataError
        No reward, or neither an eval metric nor a correctness-like reward function to compare
        (the message says what to pass); an ``eval_metric`` that is not in the eval table; a
        ``correctness`` name that is not one of the log's reward functions.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "reward": 0.2 + 0.006 * s} for s in range(1, 101)]
    >>> recs += [{"step": s, "eval_reward": 0.3 + 0.001 * (s % 20 == 0)} for s in range(10, 101, 10)]
    >>> train_eval_decoupling(from_records(recs)).severity
    'warning'
    """
    th = thresholds
    _need(log, "train_eval_decoupling", "reward")
    rt, r = _quiet_series(log, "reward")
    comparisons: list[tuple[str, np.ndarray, np.ndarray, str]] = []
    metric = _eval_metric(log, eval_metric)
    if metric is not None and len(log.eval):
        et, ev = _quiet_series(log, metric, "eval")
        if ev.size >= 3:
            comparisons.append((f"eval {metric}", et, ev, "eval"))
    elif eval_metric is not None:
        log.series(eval_metric, split="eval")  # raises the DataError listing the eval columns
    funcs = log.reward_functions()
    unknown = [f for f in (correctness or []) if f not in funcs]
    if unknown:
        raise DataError(f"`correctness` names {unknown}, not reward functions of {log.source}; its reward "
                        f"functions: {', '.join(funcs) or 'none'}")
    if len(funcs) >= 2:
        names = correctness if correctness is not None else [
            f for f in funcs if any(w in f.lower() for w in _CORRECTNESS_WORDS)]
        for f in names:
            if f in funcs and len(names) < len(funcs):
                ft, fv = _quiet_series(log, f"reward/{f}")
                comparisons.append((f"reward function {f}", ft, fv, "train"))
    if not comparisons:
        raise DataError(f"train_eval_decoupling needs eval rows (at least 3) or a correctness reward function "
                        f"besides others in {log.source}; pass eval_metric= (--eval-metric) or correctness= (--correctness)")
    if r.size < 8:
        raise DataError(f"train_eval_decoupling needs at least 8 training rewards; {log.source} has {r.size}")
    findings = []
    for label, t_m, v_m, _kind in comparisons:
        lo, hi = max(t_m[0], rt[0]), min(t_m[-1], rt[-1])
        sel = (rt >= lo) & (rt <= hi)
        if sel.sum() < 8:
            continue
        msel = (t_m >= lo) & (t_m <= hi)
        if msel.sum() < 3:
            continue
        train_rise = _trend(rt[sel], r[sel])
        meas_rise = _trend(t_m[msel], v_m[msel])
        ev = {"measure": label, "train_reward": train_rise, "measure_rise": meas_rise,
              "steps": [int(lo), int(hi)]}
        if train_rise["z"] >= th.trend_z and meas_rise["z"] <= th.falling_z:
            findings.append(("critical", ev, (
                f"The training reward rose from {train_rise['early']:.3g} to {train_rise['late']:.3g} while the "
                f"{label} fell from {meas_rise['early']:.3g} to {meas_rise['late']:.3g} (slope z = "
                f"{meas_rise['z']:.2g}; reward hacking)")))
        elif train_rise["z"] >= th.trend_z and meas_rise["z"] < th.flat_z:
            findings.append(("warning", ev, (
                f"The training reward rose from {train_rise['early']:.3g} to {train_rise['late']:.3g} while the "
                f"{label} did not rise significantly ({meas_rise['early']:.3g} -> {meas_rise['late']:.3g}, "
                f"slope z = {meas_rise['z']:.2g})")))
    if not findings:
        return None
    findings.sort(key=lambda x: -_RANK[x[0]])
    severity, ev, msg = findings[0]
    evidence = {"comparisons": [f[1] for f in findings], **ev}
    first, last = ev["steps"]
    return Finding("train_eval_decoupling", severity, (first, last), None, evidence, msg + ".")


# ============================================================================================
# Forecast
# ============================================================================================

def plateau_forecast(log: RunLog, *, metric: str = "reward", window: int = 20, n_boot: int = 100,
                     level: float = 0.9, seed: int = 0, tail: int = 50) -> dict[str, Any]:
    """Forecast where the reward will plateau, with a band.

    Every law of :mod:`grpo_core.laws` is fitted to the raw reward curve (long logs are first
    bin-averaged to :data:`FORECAST_POINTS` points), the best by AIC forecasts the plateau, and a
    residual block bootstrap gives the band (:func:`grpo_core.laws.forecast` with
    ``fraction = 1``). The fit is made on the
    raw curve, not a smoothed one, because smoothing correlates the residuals and makes both the
    law comparison and the band overconfident; the centred ``window``-step rolling mean is
    returned for display, with the R^2 of the fitted law against it.

    Parameters
    ----------
    log : RunLog
    metric : str
        Column to forecast (``"reward"``).
    window : int
        Rolling-mean window in (binned) points for the smoothed curve, >= 1.
    n_boot : int
        Bootstrap replicates (0: the delta-method band).
    level : float
        Coverage of the band, in (0, 1).
    seed : int
        Bootstrap seed.
    tail : int
        Steps averaged for ``current`` (the mean of the last ``tail`` raw values).

    Returns
    -------
    dict
        ``law``, ``plateau``, ``plateau_low``, ``plateau_high``, ``level``, ``band_method``,
        ``r2`` (of the fit on the raw curve), ``r2_smoothed`` (the same law against the smoothed
        curve), ``t90`` (steps to 90% of the plateau), ``current`` (mean of the last ``tail`` raw
        values), ``reached`` (fraction of the way from the fitted start to the plateau that
        ``current`` has made), ``start``, ``window``, ``at_bound`` (the chosen law's parameters on
        a bound; ``r_inf`` there means the curve does not determine its plateau), ``laws`` (R^2,
        AIC and plateau of each law), and the curves for charts: ``t``, ``fitted``, ``fitted_low``, ``fitted_high``,
        ``smoothed_t``, ``smoothed``.

    Raises
    ------
    DataError
        Fewer than ``window + 5`` points, or a constant curve.
    ParameterError
        Bad ``window``, ``n_boot``, ``level``, ``tail``.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> t = np.arange(1, 301)
    >>> y = 1.5 / (1 + np.exp(-(t - 90) / 20)) + np.random.default_rng(0).normal(0, 0.1, 300)
    >>> fc = plateau_forecast(from_records([{"step": int(s), "reward": float(v)} for s, v in zip(t, y)]))
    >>> fc["law"], bool(fc["plateau_low"] < 1.5 < fc["plateau_high"])
    ('logistic', True)
    """
    from ... import laws

    window = check_integer("window", window, low=1)
    tail = check_integer("tail", tail, low=1)
    steps, y = _quiet_series(log, metric)
    current = float(np.mean(y[-tail:])) if y.size else float("nan")
    bt, by = _bin(steps.astype(float), y, FORECAST_POINTS)
    if by.size < window + 5:
        raise DataError(f"a plateau forecast needs at least {window + 5} points of {metric}; {log.source} has "
                        f"{by.size}")
    fc = laws.forecast(bt, by, law="best", fraction=1.0, n_boot=n_boot, level=level, seed=seed, tail=tail)
    fit = fc.fit
    ts, ys = laws.rolling_mean(bt, by, window)
    fitted_s = fit.predict(ts)
    tss = float(np.sum((ys - ys.mean()) ** 2))
    r2_smooth = 1.0 - float(np.sum((ys - fitted_s) ** 2)) / tss if tss > 0 else float("nan")
    r0 = float(fit.params.get("r0", fit.params.get("r_low", fit.fitted[0])))
    span = fc.plateau - r0
    reached = (current - r0) / span if abs(span) > 1e-12 else float("nan")
    return {
        "metric": metric, "law": fc.law, "plateau": fc.plateau, "plateau_low": fc.plateau_low,
        "plateau_high": fc.plateau_high, "level": level, "band_method": fc.band_method, "r2": fit.r2,
        "r2_smoothed": r2_smooth, "t90": fc.t90, "current": current, "tail": int(min(tail, y.size)),
        "reached": reached, "window": window, "start": r0, "at_bound": list(fit.at_bound),
        "laws": {} if fc.comparison is None else {
            name: {"r2": f.r2, "aic": f.aic, "plateau": f.plateau} for name, f in fc.comparison.results.items()},
        "t": fc.t, "fitted": fc.curve, "fitted_low": fc.curve_low, "fitted_high": fc.curve_high,
        "smoothed_t": ts, "smoothed": ys,
    }


# ============================================================================================
# Everything
# ============================================================================================

_CURVE_KEYS = ("t", "fitted", "fitted_low", "fitted_high", "smoothed_t", "smoothed")


def diagnose(log: RunLog | str | Path, *, group_size: int | None = None, binary_reward: bool | None = None,
             num_prompts: int | None = None, eval_metric: str | None = None, correctness: list[str] | None = None,
             thresholds: Thresholds | None = None, forecast: bool = True, n_boot: int = 50) -> Diagnosis:
    """Check a training log for the four failure modes and forecast its plateau.

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
        Make the plateau forecast (:func:`plateau_forecast`).
    n_boot : int
        Bootstrap replicates of the forecast band. 50 keeps a 100,000-step diagnosis under a
        second; against 1,000 replicates the ends of the 90% band moved by 4-17% of its width on
        the logs we measured (the Qwen run, case 02, a constructed healthy log).

    Returns
    -------
    Diagnosis
        ``healthy`` is False iff some finding is a warning or critical. The forecast's curves
        stay in ``Diagnosis.forecast`` (arrays) for charts; :meth:`Diagnosis.to_dict` leaves them
        out.

    Raises
    ------
    DataError
        The log cannot be read (path input), or none of the four checks can run on it (it has
        none of the columns they read: a verdict "healthy" would be about nothing).
    ParameterError
        Bad ``group_size`` or ``num_prompts``; ``binary_reward=True`` for a reward outside [0, 1].

    Examples
    --------
    >>> d = diagnose(synthetic_log("policy_concentration"), forecast=False)
    >>> d.healthy, d.modes
    (False, ['policy_concentration'])
    """
    th = thresholds or DEFAULT_THRESHOLDS
    if not isinstance(log, RunLog):
        log = read_log(log)
    if group_size is not None:
        group_size = check_integer("group_size", group_size, low=2)
    findings: list[Finding] = []
    checked: list[str] = []
    skipped: dict[str, str] = {}
    notes = list(log.notes)
    osc = None
    if log.has("reward"):
        st, r = _quiet_series(log, "reward")
        if binary_reward is True and r.size and not _is_binary_compatible(r):
            # the per-step mean of a 0/1 reward lies in [0, 1]: the claim contradicts the log
            raise ParameterError("binary_reward", f"`binary_reward` is True but the reward of {log.source} lies in "
                                 f"[{np.min(r):.4g}, {np.max(r):.4g}], outside [0, 1] where a 0/1 reward's mean must be")
        if r.size >= 16:
            osc = oscillation(st, r, p_value=th.oscillation_p_value)
    checks = {
        "train_eval_decoupling": lambda: train_eval_decoupling(log, eval_metric=eval_metric,
                                                               correctness=correctness, thresholds=th),
        "advantage_degeneration": lambda: advantage_degeneration(log, group_size=group_size,
                                                                 binary_reward=binary_reward,
                                                                 num_prompts=num_prompts, thresholds=th),
        "policy_concentration": lambda: policy_concentration(log, thresholds=th),
        "dynamic_instability": lambda: dynamic_instability(log, thresholds=th, osc=osc),
    }
    for mode, run in checks.items():
        try:
            found = run()
        except DataError as exc:
            skipped[mode] = str(exc)
            continue
        checked.append(mode)
        if found is not None:
            findings.append(found)
    if not checked:
        # "healthy" would be a verdict on nothing
        raise DataError(f"nothing to diagnose: none of the four checks can run on {log.source} (e.g. "
                        f"{skipped['dynamic_instability']}); its columns: "
                        f"{', '.join(map(str, log.train.columns)) or 'none'}. Name yours with mapping= (--map "
                        "KEY=COLUMN)")
    findings.sort(key=lambda f: (-_RANK[f.severity], f.onset if f.onset is not None else f.steps[0]))
    healthy = not any(_RANK[f.severity] >= 1 for f in findings)
    fc = None
    if forecast and log.has("reward"):
        rt, r = _quiet_series(log, "reward")
        # from the very start (a reward can rise within a few steps) to the last quarter
        rise_z = _rise(r, early_points=int(min(20, max(3, round(0.01 * r.size)))))["z"] if r.size >= 8 else 0.0
        if r.size < 8:
            notes.append(f"no plateau forecast: only {r.size} reward point(s); a learning curve to extrapolate "
                         "needs more")
        elif abs(rise_z) < th.trend_z:
            notes.append(f"no plateau forecast: the reward has not moved significantly (rise z = {rise_z:.2g} < "
                         f"{th.trend_z:g}); there is no learning curve to extrapolate")
        else:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fc = plateau_forecast(log, n_boot=n_boot)
                caveats = []
                if any(f.mode == "dynamic_instability" and f.severity in ("warning", "critical") for f in findings):
                    caveats.append("the run is unstable: a plateau law does not describe it")
                if "r_inf" in fc["at_bound"]:
                    caveats.append("the curve does not determine its plateau: the fitted value sits at the law's "
                                   "bound, ten reward ranges beyond the data")
                elif binary_reward is not False and plateau_outside_unit_interval(r, fc["plateau"]):
                    caveats.append(f"the fitted plateau {fc['plateau']:.4g} lies outside [0, 1], the range of a "
                                   "0/1 reward: the curve has not bent over yet and the law extrapolates past it")
                fc["reliable"] = not caveats
                if caveats:
                    fc["caveat"] = "; ".join(caveats)
            except GrpoError as exc:
                notes.append(f"no plateau forecast: {exc}")
    if log.has("reward"):
        raw = log.train["reward"].to_numpy(float)
        n_bad = int((~np.isfinite(raw)).sum())
        if n_bad:
            notes.append(f"data: {n_bad} of {raw.size} reward value(s) are NaN or infinite; the checks and the "
                         "forecast leave them out")
    if forecast and not log.has("reward"):
        notes.append("no plateau forecast: the log has no reward values (no 'reward' column, or every value "
                     "empty or NaN)")
    steps = (int(log.train.index[0]), int(log.train.index[-1])) if len(log.train) else (0, 0)
    return Diagnosis(findings=findings, healthy=healthy, forecast=fc, oscillation=osc, checked=checked,
                     skipped=skipped, source=log.source, format=log.format, reward_std_kind=log.reward_std_kind,
                     steps=steps, notes=notes)


def _forecast_json(fc: dict[str, Any] | None) -> dict[str, Any] | None:
    if fc is None:
        return None
    return {k: v for k, v in fc.items() if k not in _CURVE_KEYS}


# ============================================================================================
# Constructed logs
# ============================================================================================

#: Kinds of :func:`synthetic_log`.
SYNTHETIC_KINDS = ("healthy",) + MODES


def synthetic_log(kind: str = "healthy", *, n_steps: int = 300, group_size: int = 8, num_prompts: int = 16,
                  seed: int = 0) -> RunLog:
    """A constructed GRPO training log, healthy or showing one failure mode on purpose.

    Rewards are simulated, not invented per step: each step draws ``num_prompts`` prompts whose
    accuracy scatters around the step's mean accuracy ``p(t)`` (logit-normal, sd 0.5), then
    ``group_size`` 0/1 rewards per prompt; ``reward``, ``reward_std`` (mean per-group std, as
    TRL < 0.27), ``frac_reward_zero_std`` and ``reward/accuracy`` come from those draws. Entropy,
    KL and gradient norm follow simple curves with noise. Eval rows (every ``n_steps // 10``
    steps) measure the accuracy on 256 fresh completions.

    ``kind``:

    * ``"healthy"``: ``p`` rises from 0.15 to 0.75 (logistic, midpoint at 30% of the run),
      entropy falls by 30%, KL saturates at 0.02, grad norm stationary;
    * ``"train_eval_decoupling"``: the training reward is a format reward that rises while the
      accuracy (a second reward function and the eval metric) stays at 0.2;
    * ``"advantage_degeneration"``: hard prompts (``p`` about 0.03) with ``G = 2``;
    * ``"policy_concentration"``: the entropy falls to 2% of its start within 15% of the run
      while the reward is still rising;
    * ``"dynamic_instability"``: healthy until 40% of the run, then the reward oscillates with a
      period of 20 steps and a growing amplitude while grad norm and KL grow exponentially.

    Parameters
    ----------
    kind : str
        One of :data:`SYNTHETIC_KINDS`.
    n_steps : int
        Optimizer steps, >= 50.
    group_size, num_prompts : int
        ``G`` (>= 2; forced to 2 for ``"advantage_degeneration"``) and ``B`` (>= 1).
    seed : int
        Seed of the generator.

    Returns
    -------
    RunLog
        Format ``"grpo_dynamics"``, ``reward_std_kind = "group_mean_std"``.

    Raises
    ------
    ParameterError
        Unknown ``kind`` or sizes out of range.

    Examples
    --------
    >>> log = synthetic_log("advantage_degeneration", n_steps=100)
    >>> diagnose(log, group_size=2, forecast=False).modes
    ['advantage_degeneration']
    """
    from ...validation import check_choice
    from ..logs import from_frame

    kind = check_choice("kind", kind, SYNTHETIC_KINDS)
    n = check_integer("n_steps", n_steps, low=50)
    g = check_integer("group_size", group_size, low=2)
    b = check_integer("num_prompts", num_prompts, low=1)
    seed = check_integer("seed", seed, low=0)
    if kind == "advantage_degeneration":
        g = 2
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1, dtype=float)
    x = t / n
    logistic = 1.0 / (1.0 + np.exp(-(x - 0.3) / 0.06))
    p = 0.15 + 0.6 * logistic
    entropy = 0.8 * (1.0 - 0.3 * logistic)
    kl = 0.02 * (1.0 - np.exp(-3.0 * x))
    grad = np.full(n, 0.3)
    acc = p.copy()
    if kind == "train_eval_decoupling":
        acc = np.full(n, 0.2)
    elif kind == "advantage_degeneration":
        p = acc = np.full(n, 0.03)
    elif kind == "policy_concentration":
        entropy = 0.8 * np.exp(-x / 0.035) + 0.01
    elif kind == "dynamic_instability":
        t0 = 0.4 * n
        late = np.clip(t - t0, 0.0, None)
        swing = 0.04 * np.exp(late / (0.15 * n)) * np.sin(2 * np.pi * (t - t0) / 20.0) * (t > t0)
        p = acc = np.clip(p + swing, 0.01, 0.99)
        grad = 0.3 * np.exp(late / (0.08 * n))
        kl = kl * np.exp(late / (0.08 * n))
    logit = np.log(p / (1 - p))
    p_prompt = 1.0 / (1.0 + np.exp(-(logit[:, None] + rng.normal(0.0, 0.5, (n, b)))))
    rewards = (rng.random((n, b, g)) < p_prompt[..., None]).astype(np.float32)
    group_std = rewards.std(axis=2, ddof=1)
    frame = {
        "step": t.astype(np.int64),
        "reward": rewards.mean(axis=(1, 2)).astype(float),
        "reward_std": group_std.mean(axis=1).astype(float),
        "frac_reward_zero_std": (group_std == 0).mean(axis=1).astype(float),
        "entropy": entropy * np.exp(rng.normal(0.0, 0.02, n)),
        "kl": kl * np.exp(rng.normal(0.0, 0.05, n)),
        "grad_norm": grad * np.exp(rng.normal(0.0, 0.1, n)),
        "loss": np.zeros(n),
    }
    if kind == "train_eval_decoupling":
        frame["reward/format"] = frame["reward"]
        frame["reward/accuracy"] = (rng.random((n, b * g)) < 0.2).mean(axis=1)
    else:
        frame["reward/accuracy"] = frame["reward"]
    train = pd.DataFrame(frame)
    train["split"] = "train"
    every = max(1, n // 10)
    et = np.arange(every, n + 1, every)
    ev = pd.DataFrame({"step": et, "reward": (rng.random((et.size, 256)) < acc[et - 1, None]).mean(axis=1),
                       "split": "eval"})
    log = from_frame(pd.concat([train, ev], ignore_index=True), format="grpo_dynamics",
                     source=f"<synthetic {kind}>", reward_std_kind="group_mean_std")
    return log
