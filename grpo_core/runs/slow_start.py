r"""What makes the slow start of a reward curve: the warm-up, the logistic start, or momentum's inertia.

A GRPO reward curve often rises late. Three explanations compete, and each predicts something
different that a log can check:

**(a) The learning-rate warm-up.** The update is the learning rate times a gradient, so steps at a
small rate move the policy little. If that is the slow start, it disappears in *learning-rate time*
``s_t = sum_{j <= t} eta_j / max(eta)`` (:func:`~grpo_core.laws.clock.learning_rate_clock`):
there the single exponential, which has no slow start, fits as well as any law.

**(b) The logistic start.** The mean-field flow of a success probability carries a factor
``p (1 - p)``: a rise from a ``p`` near its floor is logistic, slow at first because there is little
reward spread to learn from. If that is the slow start, the logistic beats the exponential even in
learning-rate time, and the curve starts near the logistic's lower asymptote (its inflection lies
after the start).

**(c) Momentum's inertia.** The oscillator ``M e'' + C e' + K e = 0`` released from rest starts
flat for about ``tau = M / C`` steps. For EMA momentum (Adam's ``beta1 = mu``) on-policy, and for
heavy-ball momentum, ``M / C = (1 + mu) / (2 (1 - mu))`` in the ``a = eta K -> 0`` limit
(:func:`momentum_inertia`): 9.5 steps at ``mu = 0.9``. If that is the slow start, the free
three-phase fit's ``tau`` agrees with it.

Definitions (:func:`slow_start`)
--------------------------------
* **Warm-up length** ``warmup_steps``: the first logged step at which the learning rate reaches
  :data:`WARMUP_FRACTION` (95%) of its peak; 0 when the first logged rate already does (a warm-up
  shorter than the first logged step is not resolved).
* **Rise**: from the start level (the mean of the first ``w`` points) to the end level (the mean of the
  last 20% of the points), ``w = max(1, round(n / 20))`` points (5% of the log). The rise is *determined* when it
  is positive and larger than :data:`RISE_Z` (3) of its standard errors (from the successive-difference
  noise :func:`~grpo_core.laws.noise_variance`); otherwise nothing is concluded (a flat, falling or
  too-noisy run).
* **Slow start** ``lag_steps`` (steps): the delay of the exponential that passes through the curve's
  10% and 50% crossings, ``lag = (t10' - c t50') / (1 - c)`` with ``c = ln 0.9 / ln 0.5``, the times
  counted from ``t0``, the mean step of the first window (where the start level is measured):
  ``t10' = t10 - t0``, ``t50' = t50 - t0`` (``t10``, ``t50``: the first steps at which the ``w``-point
  centred rolling mean covers 10% and 50% of the rise). It is about 0 for an exponential (``t10' = c
  t50'``), ``delay - t0`` for one that starts ``delay`` steps late, about ``tau`` for a three-phase
  curve, and positive for a logistic start; it does not depend on any fitted law. Counting from ``t0``
  makes it a lower bound of a delay longer than ``t0`` (the first window cannot show what happened in
  it). ``t10`` and the lag are NaN (undetermined) when 10% of the rise is less than two standard errors
  of the rolling mean, or the curve has no determined rise. ``lag_lr`` is the same lag in
  learning-rate time (peak-rate steps).
* **Is there a slow start?** The exponential (initial slope at its largest) is beaten in steps by more
  than :data:`DELTA_AICC` (2) AICc units by the logistic or the three-phase law (differences below
  about 2 are no evidence; Burnham & Anderson 2002, section 2.6).

Verdicts (``True`` / ``False`` / ``None`` = the curve cannot tell), only for a determined rise with
a slow start:

* ``warmup``: the run has a warm-up and in learning-rate time the exponential is within 2 AICc of the
  best law (the slow start disappears in that clock).
* ``logistic``: in learning-rate time the logistic beats the exponential by more than 2 AICc and
  starts below half-way to its plateau (``start_fraction < 0.5``: its inflection lies after the start,
  so the logistic has a slow start of its own; the fraction is reported, the nearer 0 the nearer the
  floor), and it is within :data:`NO_SUPPORT_AICC` (10) of the best law (beyond: essentially no support).
* ``inertia``: the free three-phase fit in learning-rate time (where a warm-up is taken out; after it
  the clock runs at one peak-rate step per step) gives ``tau`` with a 90% interval
  (:meth:`~grpo_core.laws.FitResult.oscillator_interval`); ``False`` when the whole interval lies
  above :data:`INERTIA_EDGE` (3) times ``M / C`` (longer than momentum explains), when the three-phase law
  is more than 10 AICc behind the best, or when no slow start is left in learning-rate time (the
  exponential within 2 AICc of the best there), ``True`` when the interval lies
  below, ``None`` when it reaches both sides or there is no interval (``tau`` on a bound or not fixed
  by the curve). The 3x edge is the one of
  :meth:`~grpo_core.runs.curvature.LogAdvice.consistency_text`.

References
----------
Our derivation, book chapter "Fitting real reward curves" (section "What makes the slow start") and
chapter "From update rule to oscillator" (``M``, ``C`` of EMA and heavy-ball momentum). Burnham &
Anderson (2002), "Model Selection and Multimodel Inference" (AICc, criterion differences).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError
from ..laws import fit_law, noise_variance, rolling_mean
from ..laws.clock import learning_rate_clock
from ..laws.fit import FitResult
from ..validation import check_array
from .settings import Conventions, RunSettings

__all__ = ["SlowStart", "momentum_inertia", "slow_start", "slow_start_of_run", "slow_start_table",
           "WARMUP_FRACTION", "DELTA_AICC", "NO_SUPPORT_AICC", "RISE_Z", "INERTIA_EDGE", "SLOW_START_LAWS"]

#: Fraction of the peak learning rate at which the warm-up is over.
WARMUP_FRACTION = 0.95
#: AICc difference above which one law is preferred to another (below about 2: no evidence).
DELTA_AICC = 2.0
#: AICc difference beyond which a law has essentially no support (Burnham & Anderson 2002, section 2.6).
NO_SUPPORT_AICC = 10.0
#: Standard errors the rise must exceed to count as a rise.
RISE_Z = 3.0
#: A fitted ``tau`` whose whole interval lies above this many ``M / C`` is longer than inertia explains.
INERTIA_EDGE = 3.0
#: The laws compared, in both clocks.
SLOW_START_LAWS = ("exponential", "logistic", "three_phase")

_C_EXP = math.log(0.9) / math.log(0.5)  # t10 / t50 of an exponential from step 0
_TAIL = 0.2


def momentum_inertia(conventions: Conventions) -> float:
    """Momentum's inertial time ``M / C`` in optimizer steps, in the ``a = eta K -> 0`` limit.

    ``M = (1 + mu + g d2) / 2`` and ``C = 1 - mu - g d1`` (:func:`grpo_core.model.oscillator.coefficients`)
    with the gain ``g -> 0``: ``M / C = (1 + mu) / (2 (1 - mu))`` for either momentum convention and any
    lag (exact for on-policy EMA momentum, where ``d1 = d2 = 0``). Adam with ``beta1 = 0.9``: 9.5 steps.

    Parameters
    ----------
    conventions : Conventions
        From :meth:`~grpo_core.runs.settings.RunSettings.conventions` (``mu``, ``k_ref``, ``lag``,
        ``momentum``).

    Returns
    -------
    float
        ``M / C`` (steps); 0 without momentum (``mu = 0`` gives ``1/2``: the Taylor expansion's
        half-step, not a slow start).

    Raises
    ------
    ParameterError
        ``conventions`` is not a :class:`Conventions`, or its ``mu`` is outside ``[0, 1)``.

    References
    ----------
    Our derivation, book chapter "From update rule to oscillator".

    Examples
    --------
    >>> momentum_inertia(RunSettings().conventions())   # AdamW, beta1 = 0.9, on-policy
    9.5
    """
    from ..model.oscillator import coefficients

    if not isinstance(conventions, Conventions):
        raise ParameterError("conventions", f"`conventions` must be a Conventions; got {type(conventions).__name__}")
    c = coefficients(1.0, conventions.mu, conventions.k_ref, 1e-12, lag=conventions.lag,
                     momentum=conventions.momentum)
    return round(c.mass / c.damping, 9)


@dataclass(frozen=True)
class SlowStart:
    """What one reward curve says about its slow start (see the module docstring for the definitions).

    Attributes
    ----------
    run_id : str
        The run's id (``""`` for a curve given directly).
    n : int
        Points used.
    warmup_steps : float
        Steps until the learning rate first reaches 95% of its peak (0: no warm-up resolved).
    warmup_lr_time : float
        The learning-rate clock at the end of the warm-up (peak-rate steps).
    start_level, end_level, rise, rise_se : float
        Reward at the start (first ``w`` points), at the end (last 20%), their difference and its
        standard error.
    rise_determined : bool
        The rise is positive and larger than :data:`RISE_Z` standard errors.
    window : int
        ``w``, points of the rolling mean.
    t10, t50 : float
        Steps at which the rolling mean first covers 10% / 50% of the rise (NaN: not determined).
    lag_steps, lag_lr : float
        The slow start: the delay of the exponential through the 10% and 50% crossings, in steps and in
        learning-rate time (peak-rate steps).
    inertia : float
        Momentum's ``M / C`` (steps), :func:`momentum_inertia`.
    delta_steps, delta_lr : dict of str to float
        Each law's AICc minus the lowest, fitted in steps and in learning-rate time.
    r2_steps : dict of str to float
        Each law's R^2 in steps.
    tau, tau_low, tau_high : float
        The free three-phase fit's ``tau = M / C`` in learning-rate time and its 90% interval (NaN: none).
    inertia_in_interval : bool or None
        Whether ``M / C`` lies inside the 90% interval of ``tau`` (None: no interval), the strict form of
        the inertia test; ``inertia_fits`` allows the factor :data:`INERTIA_EDGE`.
    start_fraction : float
        Where the logistic (learning-rate time) starts between its lower asymptote and its plateau, at
        clock 0 (0: on the floor; above 0.5: past its inflection, no slow start of its own).
    slow_start : bool or None
        The exponential is beaten in steps by more than 2 AICc (None: no determined rise).
    warmup, logistic, inertia_fits : bool or None
        The three verdicts (None: the curve cannot tell, or there is no slow start to explain).
    explanation : str
        ``"warm-up"``, ``"logistic start"``, ``"inertia"`` (joined by ``" + "`` when several hold),
        ``"no slow start"``, ``"none of the three"``, or ``"undetermined"``.
    reason : str
        One sentence saying why.
    """

    run_id: str
    n: int
    warmup_steps: float
    warmup_lr_time: float
    start_level: float
    end_level: float
    rise: float
    rise_se: float
    rise_determined: bool
    window: int
    t10: float
    t50: float
    lag_steps: float
    lag_lr: float
    inertia: float
    delta_steps: dict[str, float] = field(repr=False)
    delta_lr: dict[str, float] = field(repr=False)
    r2_steps: dict[str, float] = field(repr=False)
    tau: float
    tau_low: float
    tau_high: float
    start_fraction: float
    inertia_in_interval: bool | None
    slow_start: bool | None
    warmup: bool | None
    logistic: bool | None
    inertia_fits: bool | None
    explanation: str
    reason: str

    def row(self) -> dict[str, Any]:
        """The table row of :func:`slow_start_table` (flat ``dict``)."""
        return {
            "run": self.run_id, "n": self.n, "warm-up (steps)": self.warmup_steps,
            "rise": self.rise, "t10 (steps)": self.t10, "slow start (steps)": self.lag_steps,
            "slow start (LR time)": self.lag_lr, "M/C (steps)": self.inertia,
            "dAICc exp, steps": self.delta_steps.get("exponential", math.nan),
            "dAICc exp, LR time": self.delta_lr.get("exponential", math.nan),
            "dAICc logistic, LR time": self.delta_lr.get("logistic", math.nan),
            "tau": self.tau, "tau low": self.tau_low, "tau high": self.tau_high,
            "M/C in tau interval": self.inertia_in_interval,
            "logistic start fraction": self.start_fraction,
            "r2 spread": (max(self.r2_steps.values()) - min(self.r2_steps.values())) if self.r2_steps else math.nan,
            "warm-up explains": self.warmup, "logistic explains": self.logistic,
            "inertia explains": self.inertia_fits, "explanation": self.explanation, "reason": self.reason,
        }


def _crossing(t: np.ndarray, ys: np.ndarray, level: float) -> float:
    hit = np.nonzero(ys >= level)[0]
    return float(t[hit[0]]) if hit.size else math.nan


def _lag(t10: float, t50: float) -> float:
    return (t10 - _C_EXP * t50) / (1.0 - _C_EXP) if math.isfinite(t10) and math.isfinite(t50) else math.nan


def _fits(x: np.ndarray, y: np.ndarray) -> dict[str, FitResult]:
    return {law: fit_law(x, y, law) for law in SLOW_START_LAWS}


def _delta(fits: dict[str, FitResult]) -> dict[str, float]:
    low = min(f.aicc for f in fits.values())
    return {k: f.aicc - low for k, f in fits.items()}


def slow_start(t: Any, y: Any, *, lr_steps: Any = None, lr_values: Any = None,
               conventions: Conventions | None = None, run_id: str = "") -> SlowStart:
    """Measure a reward curve's slow start and test the three explanations (module docstring).

    Parameters
    ----------
    t : array_like, shape (n,)
        Optimizer steps (``>= 0``, strictly increasing).
    y : array_like, shape (n,)
        The reward there (finite).
    lr_steps, lr_values : array_like, shape (m,), optional
        The logged learning rate. Without it the rate is taken as constant (no warm-up, learning-rate
        time = steps).
    conventions : Conventions, optional
        The run's optimizer conventions (default TRL's: AdamW, ``beta1 = 0.9``, on-policy).
    run_id : str
        Carried into the result.

    Returns
    -------
    SlowStart

    Raises
    ------
    ParameterError
        ``t`` / ``y`` not 1-D finite arrays of the same length, or ``t`` not increasing; only one of
        ``lr_steps`` / ``lr_values``.
    DataError
        Fewer than 12 points, or a learning rate that is never positive.

    Examples
    --------
    >>> import numpy as np
    >>> from grpo_core.laws import get_law
    >>> t = np.arange(1.0, 301.0)
    >>> y = get_law("logistic")(t, [0.05, 0.9, 0.05, 120.0]) + np.random.default_rng(0).normal(0, 0.02, t.size)
    >>> r = slow_start(t, y)
    >>> r.explanation, r.lag_steps > 3 * r.inertia
    ('logistic start', True)
    """
    t = check_array("t", t, ndim=1).astype(float)
    y = check_array("y", y, ndim=1).astype(float)
    if t.size != y.size:
        raise ParameterError("y", f"`y` must have the length of `t`; got {y.size} and {t.size}")
    if t.size < 12:
        raise DataError(f"a slow start needs at least 12 points; got {t.size}")
    if np.any(np.diff(t) <= 0) or t[0] < 0:
        raise ParameterError("t", "`t` must be >= 0 and strictly increasing")
    if (lr_steps is None) != (lr_values is None):
        raise ParameterError("lr_values", "`lr_steps` and `lr_values` go together: give both or neither")
    conventions = conventions or RunSettings().conventions()
    inertia = momentum_inertia(conventions)
    if lr_values is None:
        s, warmup = t.copy(), 0.0
    else:
        ls = check_array("lr_steps", lr_steps, ndim=1).astype(float)
        lv = check_array("lr_values", lr_values, ndim=1).astype(float)
        s, peak = learning_rate_clock(t, ls, lv)
        reached = np.nonzero(lv >= WARMUP_FRACTION * peak)[0]
        warmup = 0.0 if reached[0] == 0 else float(ls[reached[0]])
        # a rate that reaches 0 stops the clock: the later points carry no learning-rate time
        keep = np.r_[True, np.diff(s) > 1e-9 * max(float(s[-1]), 1.0)]
        t, y, s = t[keep], y[keep], s[keep]
    warmup_lr = float(np.interp(warmup, np.r_[0.0, t], np.r_[0.0, s]))
    n = t.size
    w = int(max(1, round(n / 20)))
    tail = max(2, int(math.ceil(_TAIL * n)))
    sigma = math.sqrt(noise_variance(y))
    start, end = float(np.mean(y[:w])), float(np.mean(y[-tail:]))
    rise = end - start
    rise_se = sigma * math.sqrt(1.0 / w + 1.0 / tail)
    rise_ok = bool(rise > 0 and rise > RISE_Z * rise_se)
    t10 = t50 = lag_steps = lag_lr = math.nan
    if rise_ok:
        idx = np.arange(n, dtype=float)
        i_s, ys = rolling_mean(idx, y, w)
        i_s = i_s.astype(int)
        if 0.1 * rise > 2.0 * sigma / math.sqrt(w):  # the 10% level stands above the rolling mean's noise
            t10 = _crossing(t[i_s], ys, start + 0.1 * rise)
            s10 = _crossing(s[i_s], ys, start + 0.1 * rise)
            t50 = _crossing(t[i_s], ys, start + 0.5 * rise)
            s50 = _crossing(s[i_s], ys, start + 0.5 * rise)
            t0, s0 = float(np.mean(t[:w])), float(np.mean(s[:w]))  # where the start level is measured
            lag_steps, lag_lr = _lag(t10 - t0, t50 - t0), _lag(s10 - s0, s50 - s0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        steps_fits, lr_fits = _fits(t, y), _fits(s, y)
    d_steps, d_lr = _delta(steps_fits), _delta(lr_fits)
    three = lr_fits["three_phase"]
    lo, hi = three.oscillator_interval(0.9)["mass_over_damping"]
    logi = lr_fits["logistic"].params
    start_fraction = float(1.0 / (1.0 + math.exp(min(700.0, logi["rate"] * logi["t_mid"]))))
    common = dict(run_id=run_id, n=n, warmup_steps=warmup, warmup_lr_time=warmup_lr, start_level=start,
                  end_level=end, rise=rise, rise_se=rise_se, rise_determined=rise_ok, window=w, t10=t10, t50=t50,
                  lag_steps=lag_steps, lag_lr=lag_lr, inertia=inertia, delta_steps=d_steps, delta_lr=d_lr,
                  r2_steps={k: f.r2 for k, f in steps_fits.items()}, tau=three.params["tau"],
                  tau_low=lo, tau_high=hi, start_fraction=start_fraction,
                  inertia_in_interval=bool(lo <= inertia <= hi) if math.isfinite(lo) and math.isfinite(hi) else None)
    if not rise_ok:
        why = "the reward falls" if rise <= 0 else f"the rise {rise:.3g} is within {RISE_Z:g} standard errors"
        return SlowStart(**common, slow_start=None, warmup=None, logistic=None, inertia_fits=None,
                         explanation="undetermined", reason=f"no determined rise: {why} ({rise_se:.3g})")
    if d_steps["exponential"] <= DELTA_AICC:
        return SlowStart(**common, slow_start=False, warmup=None, logistic=None, inertia_fits=None,
                         explanation="no slow start",
                         reason=f"in steps the exponential, which starts at full slope, is within {DELTA_AICC:g} AICc "
                                f"of the best law ({d_steps['exponential']:.1f})")
    warm = bool(warmup > 0 and d_lr["exponential"] <= DELTA_AICC)
    logistic = bool(d_lr["exponential"] - d_lr["logistic"] > DELTA_AICC and start_fraction < 0.5
                    and d_lr["logistic"] <= NO_SUPPORT_AICC)
    if d_lr["three_phase"] > NO_SUPPORT_AICC or d_lr["exponential"] <= DELTA_AICC:
        inert = False  # the three-phase law has no support, or no slow start is left in learning-rate time
    elif not (math.isfinite(lo) and math.isfinite(hi) and lo > 0):
        inert = None
    elif lo > INERTIA_EDGE * inertia:
        inert = False
    elif hi < INERTIA_EDGE * inertia:
        inert = True
    else:
        inert = None
    named = [name for name, ok in (("warm-up", warm), ("logistic start", logistic), ("inertia", inert)) if ok]
    if named:
        explanation = " + ".join(named)
    elif inert is None:
        explanation = "undetermined"
    else:
        explanation = "none of the three"
    tau_text = (f"tau = {three.params['tau']:.3g} [{lo:.3g}, {hi:.3g}] vs M/C = {inertia:.3g}"
                if math.isfinite(lo) else f"tau = {three.params['tau']:.3g} without an interval")
    reason = (f"dAICc of the exponential {d_steps['exponential']:.1f} in steps, {d_lr['exponential']:.1f} in "
              f"learning-rate time (warm-up {warmup:g} steps); logistic {d_lr['logistic']:.1f} starting at "
              f"{start_fraction:.2f} of its way; {tau_text}")
    return SlowStart(**common, slow_start=True, warmup=warm, logistic=logistic, inertia_fits=inert,
                     explanation=explanation, reason=reason)


def slow_start_of_run(run_id: str, collection: str = "real_runs") -> SlowStart:
    """:func:`slow_start` of one shipped real run: its training reward, its logged learning rate, and the
    conventions of its ``meta.json`` (:func:`~grpo_core.runs.settings.settings_for_log`).

    Parameters
    ----------
    run_id : str
        An id of :func:`~grpo_core.runs.datasets.real_runs` or its number (``"22"``).
    collection : str
        See :func:`~grpo_core.runs.datasets.real_runs`.

    Returns
    -------
    SlowStart

    Raises
    ------
    ParameterError
        An unknown run or collection.
    DataError
        The run logs no positive learning rate, or too few reward points.

    Examples
    --------
    >>> r = slow_start_of_run("20")
    >>> r.warmup_steps, r.inertia
    (176.0, 9.5)
    """
    from . import datasets
    from .logs import LogWarning, read_log
    from .settings import settings_for_log

    run = datasets.real_run(run_id, collection)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogWarning)
        log = read_log(run.path, run=run.run)
        t, y = log.series("reward")
        if not log.has("learning_rate"):
            raise DataError(f"run {run.run_id} logs no learning rate")
        ls, lv = log.series("learning_rate")
    if not np.any(lv > 0):
        raise DataError(f"run {run.run_id} logs no positive learning rate")
    conv = settings_for_log(run.path).conventions()
    return slow_start(t.astype(float), y, lr_steps=ls, lr_values=lv, conventions=conv, run_id=run.run_id)


def slow_start_table(collections: Any = ("real_runs",)):
    """:func:`slow_start_of_run` of every run of ``collections`` that logs a positive learning rate.

    Parameters
    ----------
    collections : str or sequence of str
        Names of :data:`~grpo_core.runs.datasets.RUN_COLLECTIONS` (default: the 20 real runs).

    Returns
    -------
    pandas.DataFrame
        One row per run (:meth:`SlowStart.row`), indexed by the run's number (``"04"``; the numbers are
        unique across the collections), in the collections' order.

    Raises
    ------
    ParameterError
        An unknown collection.
    """
    import pandas as pd

    from . import datasets

    rows = []
    for collection in ([collections] if isinstance(collections, str) else list(collections)):
        for rid in datasets.real_runs(collection):
            try:
                rows.append(slow_start_of_run(rid, collection).row())
            except DataError:
                continue  # no learning-rate column (or too short): not a run this analysis can read
    table = pd.DataFrame(rows)
    table.index = [r.split("-", 1)[0] for r in table.pop("run")]
    return table.rename_axis("run")
