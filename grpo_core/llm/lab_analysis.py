"""Reading the lab's runs and predicting them: relaxation rate, thresholds, regimes, brackets.

Pure numpy on the traces of :mod:`grpo_core.llm.lab` (no torch):

* :func:`relaxation_fit`: the restoring rate ``K`` per unit learning rate from a first-order return;
* :func:`lab_predictions`: from ``K`` and the sharpness, the oscillator's critical learning rate
  for a refresh interval and lag mode (the exact discrete threshold of the refresh-lag recurrence),
  its critical-damping rate, the parameter-space edge, which of the two fires first, and the
  ``K_ref`` where they cross;
* :func:`predicted_regime` and :func:`predicted_period`: the 1-D model's regime and ringing period
  at one learning rate;
* :func:`classify_trace`: the regime a run showed (monotone return, damped ringing with its period,
  growing oscillation, collapse);
* :func:`model_trace` and :func:`model_period`: the 1-D model's own deviation from the same start, and
  the period its dips show, read as the runs are;
* :func:`critical_bracket`: the measured critical learning rate, between the largest stable rate
  and the smallest unstable one; :func:`sweep_table`: predicted against measured per setting;
* :func:`recurrence_fit` (``K`` from a return under momentum), :func:`prediction_curves` (for a chart),
  :func:`ablation_table` (the group-size ablation), :class:`LabRecord` and :func:`load_lab_record`
  (the committed record).

Units: learning rates as the optimizer's; ``K`` per unit learning rate; periods in steps.

References
----------
The thresholds: :mod:`grpo_core.model.stability` (our derivation: the refresh-lag recurrence, heavy
ball and EMA momentum); the edge of stability of SGD with heavy ball on a quadratic,
``eta lambda_max < 2 (1 + mu)``, and of Adam, ``lambda_max(P^-1 H) < (2 + 2 b1) / ((1 - b1) eta)``
(Cohen et al. 2021, 2022); the classification rules are ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..model import stability as model_stability
from ..validation import check_array, check_choice, check_integer, check_real

__all__ = ["relaxation_fit", "recurrence_fit", "oscillator_critical_lr", "sharpness_critical_lr", "lab_predictions",
           "predicted_regime", "predicted_period", "model_trace", "model_period", "classify_trace",
           "critical_bracket", "sweep_table", "prediction_curves", "LabRecord", "load_lab_record",
           "ablation_table", "REGIMES", "UNSTABLE"]

#: Regimes of :func:`classify_trace`, calmest first.
REGIMES = ("monotone", "damped ringing", "growing oscillation", "collapse")
#: The regimes that count as unstable.
UNSTABLE = ("growing oscillation", "collapse")

_MOMENTUM = {"sgd": "heavy_ball", "adamw": "ema"}


def relaxation_fit(p: Any, p_star: float, eta: float, *, floor: float) -> dict[str, float]:
    """Restoring rate from a return ``p_0, p_1, ...`` toward ``p*`` under steps of learning rate ``eta``.

    The oscillator's linear return with no momentum and no lag, ``e_{t+1} = (1 - eta K) e_t``
    (``e = p - p*``), fitted by least squares on ``log |e_t|`` over the steps before ``|e|`` first
    falls below ``floor`` (the noise level): ``K = (1 - exp(slope)) / eta``.

    Parameters
    ----------
    p : array_like, shape (T,), T >= 3
        Exact expected reward, step by step.
    p_star : float
        The fixed point.
    eta : float > 0
    floor : float > 0
        Deviations below it are noise, not return.

    Returns
    -------
    dict
        ``k`` (per unit learning rate), ``gain`` (``eta K`` per step), ``steps_used``.

    Raises
    ------
    ParameterError
        Fewer than 3 steps above ``floor``, a start inside the noise, or a trajectory that does not
        shrink.

    Examples
    --------
    >>> p = 0.6 - 0.3 * 0.9 ** np.arange(30)
    >>> round(relaxation_fit(p, 0.6, eta=0.5, floor=0.01)["k"], 6)
    0.2
    """
    arr = check_array("p", p, ndim=1)
    eta = check_real("eta", eta, low=0, low_inclusive=False)
    floor = check_real("floor", floor, low=0, low_inclusive=False)
    e = np.abs(arr - float(p_star))
    if not e[0] > floor:
        raise ParameterError("p", f"the run starts within the noise floor ({e[0]:.3g} <= {floor:.3g})")
    below = np.flatnonzero(e <= floor)
    n = int(below[0]) if below.size else e.size
    if n < 3:
        raise ParameterError("p", f"only {n} steps above the floor {floor:.3g}: too few to fit a rate")
    slope = float(np.polyfit(np.arange(n), np.log(e[:n]), 1)[0])
    if not slope < 0:
        raise ParameterError("p", f"the deviation does not shrink (log slope {slope:.3g}): not a relaxation")
    gain = 1.0 - math.exp(slope)
    return {"k": gain / eta, "gain": gain, "steps_used": n}


def recurrence_fit(p: Any, eta: float, mu: float, optimizer: str) -> dict[str, float]:
    """Restoring rate ``K`` and fixed point ``p*`` from a return under momentum (least squares).

    The oscillator's linear recurrence ``e_{t+1} - (1 + mu) e_t + mu e_{t-1} = -g e_t`` (``e = p - p*``)
    with ``g = eta K`` for heavy ball (SGD) and ``g = (1 - mu) eta K`` for EMA momentum (AdamW's beta1):
    ``y_t = p_{t+1} - (1 + mu) p_t + mu p_{t-1}`` regressed on ``p_t`` has slope ``-g`` and intercept
    ``g p*``. Process noise enters ``y`` only, so the fit is unbiased in ``g``.

    Parameters
    ----------
    p : array_like, shape (T,), T >= 4
    eta : float > 0
    mu : float in [0, 1)
    optimizer : {"sgd", "adamw"}

    Returns
    -------
    dict
        ``k`` (per unit learning rate), ``gain`` (``eta K``), ``p_star``.

    Raises
    ------
    ParameterError
        Fewer than 4 values, non-finite values, bad ``eta``/``mu``/``optimizer``.

    Examples
    --------
    >>> e = [0.2, 0.2]
    >>> for _ in range(40):
    ...     e.append(e[-1] + 0.9 * (e[-1] - e[-2]) - 0.05 * e[-1])
    >>> fit = recurrence_fit(0.6 + np.array(e), eta=0.5, mu=0.9, optimizer="sgd")
    >>> round(fit["k"], 6), round(fit["p_star"], 6)
    (0.1, 0.6)
    """
    arr = check_array("p", p, ndim=1)
    if arr.size < 4:
        raise ParameterError("p", f"`p` must hold at least 4 values; got {arr.size}")
    eta = check_real("eta", eta, low=0, low_inclusive=False)
    mu = check_real("mu", mu, low=0, high=1, high_inclusive=False)
    y = arr[2:] - (1 + mu) * arr[1:-1] + mu * arr[:-2]
    slope, intercept = np.polyfit(arr[1:-1], y, 1)
    g = -float(slope)
    a = g if _momentum(optimizer) == "heavy_ball" else g / (1 - mu)
    return {"k": a / eta, "gain": a, "p_star": float(intercept) / g if g else math.nan}


def _momentum(optimizer: str) -> str:
    return _MOMENTUM[check_choice("optimizer", optimizer, tuple(_MOMENTUM))]


def oscillator_critical_lr(k: float, optimizer: str, mu: float, k_ref: int, mode: str = "stale") -> float:
    """The 1-D model's critical learning rate ``a*(mu, K_ref) / K`` (exact, refresh lag).

    ``mode="ratio"``: the importance ratio removes the lag from the expected gradient (mean baseline),
    so the on-policy ``a*`` applies at every ``K_ref``; ``"stale"`` and ``"frozen"`` (:mod:`grpo_core.llm.lab`)
    take the refresh lag. SGD: heavy ball; AdamW: EMA momentum.

    Examples
    --------
    >>> round(oscillator_critical_lr(0.5, "sgd", 0.9, 1), 6)
    7.6
    """
    k = check_real("k", k, low=0, low_inclusive=False)
    mode = check_choice("mode", mode, ("stale", "ratio", "frozen"))
    kr = 1 if mode == "ratio" else check_integer("k_ref", k_ref, low=1)
    return float(model_stability.critical_a_exact(mu, kr, "refresh", _momentum(optimizer))) / k


def sharpness_critical_lr(top: float, optimizer: str, mu: float) -> float:
    """The parameter-space edge: ``2 (1 + mu) / lambda_max`` (SGD, heavy ball) or
    ``(2 + 2 b1) / ((1 - b1) lambda_max(P^-1 H))`` (Adam, Cohen et al. 2022).

    Examples
    --------
    >>> round(sharpness_critical_lr(100.0, "sgd", 0.9), 6)
    0.038
    """
    top = check_real("top", top, low=0, low_inclusive=False)
    mu = check_real("mu", mu, low=0, high=1, high_inclusive=False)
    if _momentum(optimizer) == "heavy_ball":
        return 2.0 * (1.0 + mu) / top
    return (2.0 + 2.0 * mu) / ((1.0 - mu) * top)


def lab_predictions(k: float, top: float, optimizer: str, mu: float, k_refs=(1, 4, 16, 64),
                    modes=("stale", "ratio")) -> dict[str, Any]:
    """Predictions for a sweep, made from the measured ``K`` and sharpness before it runs.

    Parameters
    ----------
    k : float > 0
        Restoring rate per unit learning rate (:func:`relaxation_fit`; for AdamW along Adam's step).
    top : float > 0
        Top Hessian eigenvalue of the loss (for AdamW: of the Adam-preconditioned Hessian).
    optimizer : {"sgd", "adamw"}
    mu : float in [0, 1)
        Heavy-ball momentum or beta1.
    k_refs : sequence of int
    modes : sequence of {"stale", "ratio", "frozen"}

    Returns
    -------
    dict
        ``settings``: one row per (mode, K_ref) with ``eta_osc`` (oscillator threshold), ``eta_sharp``
        (parameter-space edge), ``eta_pred`` (the smaller), ``first`` (``"oscillator"`` or
        ``"sharpness"``), ``eta_damping`` (critical damping: below it the return is monotone);
        ``crossover_k_ref``: the smallest ``K_ref`` at which the stale oscillator threshold falls below
        the edge (``None`` beyond 4096).
    """
    rows = []
    eta_sharp = sharpness_critical_lr(top, optimizer, mu)
    for mode in modes:
        for kr in k_refs:
            eta_osc = oscillator_critical_lr(k, optimizer, mu, kr, mode)
            kr_eff = 1 if mode == "ratio" else int(kr)
            damp = float(model_stability.critical_a_damping(mu, kr_eff, "refresh", _momentum(optimizer))) / k
            rows.append({"mode": mode, "k_ref": int(kr), "eta_osc": eta_osc, "eta_sharp": eta_sharp,
                         "eta_pred": min(eta_osc, eta_sharp),
                         "first": "oscillator" if eta_osc < eta_sharp else "sharpness", "eta_damping": damp})
    cross = None
    for kr in range(1, 4097):
        if oscillator_critical_lr(k, optimizer, mu, kr, "stale") < eta_sharp:
            cross = kr
            break
    return {"optimizer": optimizer, "mu": float(mu), "k": float(k), "top": float(top), "settings": rows,
            "crossover_k_ref": cross}


def predicted_period(eta: float, k: float, optimizer: str, mu: float, k_ref: int, mode: str = "stale") -> float:
    """Ringing period (steps) of the refresh-lag recurrence at gain ``eta K``: ``2 pi K_ref / arg(lambda)``.

    ``lambda`` is the dominant eigenvalue of the one-cycle map
    (:func:`grpo_core.model.stability.monodromy`); ``inf`` when it is real and positive (monotone).
    Read once per cycle, so motion faster than a cycle is aliased.

    Examples
    --------
    >>> round(predicted_period(1.0, 0.01, "sgd", 0.9, 1), 2)   # 2 pi / arccos((1 + mu - a) / (2 sqrt(mu)))
    71.28
    """
    kr = 1 if mode == "ratio" else check_integer("k_ref", k_ref, low=1)
    a = check_real("eta", eta, low=0, low_inclusive=False) * check_real("k", k, low=0, low_inclusive=False)
    ev = np.linalg.eigvals(model_stability.monodromy(a, mu, kr, momentum=_momentum(optimizer)))
    lam = ev[np.argmax(np.abs(ev))]
    ang = abs(float(np.angle(lam)))
    return math.inf if ang < 1e-9 else 2.0 * math.pi * kr / ang


def predicted_regime(eta: float, row: dict, k: float, optimizer: str, mu: float) -> str:
    """The regime the predictions ``row`` (of :func:`lab_predictions`) give at learning rate ``eta``.

    ``"collapse"`` at or above the parameter-space edge when it fires first, ``"growing oscillation"``
    at or above the oscillator's threshold when it fires first, ``"damped ringing"`` between the
    critical-damping rate and the threshold, ``"monotone"`` below.
    """
    eta = check_real("eta", eta, low=0, low_inclusive=False)
    if eta >= row["eta_pred"]:
        return "collapse" if row["first"] == "sharpness" else "growing oscillation"
    if math.isinf(predicted_period(eta, k, optimizer, mu, row["k_ref"], row["mode"])):
        return "monotone"
    return "damped ringing"


def _crossings(e: np.ndarray, h: float) -> list[int]:
    """Steps at which ``e`` crosses from beyond ``+h`` to beyond ``-h`` or back (hysteresis)."""
    out, side = [], 0
    for t, x in enumerate(e):
        s = 1 if x > h else (-1 if x < -h else 0)
        if s and side and s != side:
            out.append(t)
        if s:
            side = s
    return out


def _smooth(x: np.ndarray, window: int = 5) -> np.ndarray:
    """Centred moving average (shorter at the ends)."""
    half = window // 2
    c = np.concatenate([[0.0], np.cumsum(x)])
    idx = np.arange(x.size)
    lo, hi = np.maximum(idx - half, 0), np.minimum(idx + half + 1, x.size)
    return (c[hi] - c[lo]) / (hi - lo)


def _troughs(x: np.ndarray, drop: float) -> list[int]:
    """Steps of the lowest points of the dips of ``x`` that fall more than ``drop`` below the preceding high
    and rise more than ``drop`` after (the last dip counts without the rise)."""
    troughs, high, low, low_at = [], x[0], None, None
    for t in range(1, x.size):
        if low is None:
            high = max(high, x[t])
            if high - x[t] > drop:
                low, low_at = x[t], t
        elif x[t] < low:
            low, low_at = x[t], t
        elif x[t] - low > drop:
            troughs.append(low_at)
            low, high = None, x[t]
    if low is not None:
        troughs.append(low_at)
    return troughs


def model_trace(eta: float, k: float, optimizer: str, mu: float, k_ref: int, steps: int, mode: str = "stale",
                e0: float = -1.0) -> np.ndarray:
    """The 1-D model's deviation ``e_t`` from rest at ``e0``, step by step (refresh lag, exact recurrence).

    Heavy ball (SGD): ``v <- mu v - eta K e_r``, ``e <- e + v``; EMA (AdamW): ``m <- mu m + (1 - mu) e_r``,
    ``e <- e - eta K m``; ``e_r`` the deviation at the last refresh (every ``K_ref`` steps; every step for
    ``mode="ratio"``, where the ratio removes the lag).

    Returns
    -------
    ndarray, shape (steps + 1,)
    """
    mode = check_choice("mode", mode, ("stale", "ratio", "frozen"))
    kr = 1 if mode == "ratio" else check_integer("k_ref", k_ref, low=1)
    a = check_real("eta", eta, low=0, low_inclusive=False) * check_real("k", k, low=0, low_inclusive=False)
    ema = _momentum(optimizer) == "ema"
    e, v, ref = [float(e0)], 0.0, float(e0)
    for t in range(check_integer("steps", steps, low=1)):
        if t % kr == 0:
            ref = e[-1]
        v = mu * v + ((1 - mu) * ref if ema else -a * ref)
        e.append(e[-1] - a * v if ema else e[-1] + v)
    return np.array(e)


def model_period(eta: float, k: float, optimizer: str, mu: float, k_ref: int, steps: int,
                 mode: str = "stale") -> float:
    """The ringing period the model's own trace shows (:func:`model_trace`), read as the runs are: the mean
    spacing of the troughs that fall and rise by more than 5% of the start (``inf`` with fewer than two)."""
    e = model_trace(eta, k, optimizer, mu, k_ref, steps, mode)
    scale = np.maximum(1.0, np.abs(e))   # a growing mode: troughs relative to the local size
    troughs = _troughs(e / scale, 0.05 * 2)
    return float(np.mean(np.diff(troughs))) if len(troughs) >= 2 else math.inf


def classify_trace(p: Any, p_star: float, *, noise: float, grow: float = 1.5, floor: float = 0.02,
                   rule: str = "swings") -> dict[str, Any]:
    """The regime a run from a displaced start showed, from its exact expected reward (our rule).

    ``rule="swings"`` (the default). The reward of a network at an interior plateau is bounded by the
    ceiling above, so an oscillation shows as repeated dips below ``p*`` rather than as swings to either
    side. With ``e = p - p*``, ``e0 = e[0] < 0``, ``s`` the 5-step centred mean of ``p``, the step noise
    ``sigma`` (the larger of ``noise`` and the run's own, from the differences of its second half) and a
    hysteresis ``h = max(3 sigma, 0.1 |e0|)``:

    * **growing oscillation**: ``s`` fell deeper than ``grow |e0|`` below ``p*`` at least twice, recovering
      above the start (``p* - |e0|``) in between; or once, recovering, and it kept swinging (at least three
      troughs, below);
    * **collapse**: the weights became non-finite, or ``s`` fell that deep otherwise (a fall that is not
      repeated);
    * **damped ringing**: bounded, and the return is not monotone: ``s`` falls by more than ``2 h`` from a
      previous high (or rises above ``p* + h`` and comes back);
    * **monotone**: otherwise.

    ``rule="registered"``: the rule registered with the predictions (crossings of ``p* +- h`` with
    ``h = max(3 noise, 0.1 |e0|)``; growing oscillation when ``|e|`` passes ``grow |e0|`` in the second half
    after two crossings; collapse when it passes it before two, or ``p`` ends below ``floor``; damped
    ringing with one crossing). It misses oscillations that stay below ``p* + h``.

    Parameters
    ----------
    p : array_like, shape (T,), T >= 8
        ``nan`` where the weights were not finite.
    p_star : float
    noise : float >= 0
        Standard deviation of ``p`` around ``p*`` at rest (from the plateau).
    grow, floor : float
    rule : {"swings", "registered"}

    Returns
    -------
    dict
        ``regime`` (one of :data:`REGIMES`), ``period`` (steps between successive troughs of ``s``, averaged;
        ``inf`` with fewer than two), ``troughs`` (their steps), ``peak`` (largest ``|e| / |e0|``).

    Raises
    ------
    ParameterError
        Fewer than 8 steps, a start within the noise (not displaced), an unknown rule.
    """
    arr = check_array("p", p, ndim=1, finite=False)
    rule = check_choice("rule", rule, ("swings", "registered"))
    if arr.size < 8:
        raise ParameterError("p", "`p` must hold at least 8 steps")
    noise = check_real("noise", noise, low=0)
    e = arr - float(p_star)
    e0 = abs(float(e[0]))
    if not e0 > 3.0 * noise or not e0 > 0:
        raise ParameterError("p", f"the run must start displaced beyond the noise (|e0| = {e0:.3g})")
    finite = np.isfinite(e)
    peak = float(np.nanmax(np.abs(e)) / e0) if finite.any() else math.inf
    if rule == "registered":
        return _classify_registered(arr, e, e0, noise, grow, floor, peak)
    if not finite.all():
        return {"regime": "collapse", "period": math.inf, "troughs": [], "peak": peak}
    half = arr[arr.size // 2:]
    sigma = max(noise, float(np.std(np.diff(half)) / math.sqrt(2.0)) if half.size > 2 else noise)
    h = max(3.0 * sigma, 0.1 * e0)
    sm = _smooth(arr) - float(p_star)
    troughs = _troughs(sm, 2 * h)
    period = float(np.mean(np.diff(troughs))) if len(troughs) >= 2 else math.inf
    out = {"period": period, "troughs": troughs, "peak": peak}
    # deep dips, each counted once it has recovered above the start in between
    dips, below, recovered = 0, False, False
    for x in sm[1:]:
        if not below and x <= -grow * e0:
            dips, below = dips + 1, True
        elif below and x > -e0:
            below, recovered = False, True
    if dips:
        oscillating = dips >= 2 or (recovered and len(troughs) >= 3)
        return {**out, "regime": "growing oscillation" if oscillating else "collapse"}
    over = bool(np.any(sm[1:] > h)) and bool(np.any(sm[int(np.argmax(sm > h)):] < h / 2))
    return {**out, "regime": "damped ringing" if (troughs or over) else "monotone"}


def _classify_registered(arr, e, e0, noise, grow, floor, peak) -> dict[str, Any]:
    h = max(3.0 * noise, 0.1 * e0)
    finite = np.isfinite(e)
    cross = _crossings(np.where(finite, e, 0.0), h)
    period = 2.0 * float(np.mean(np.diff(cross))) if len(cross) >= 3 else math.inf
    out = {"troughs": cross, "period": period, "peak": peak}
    if not finite.all():
        return {**out, "regime": "collapse"}
    tail = arr[-max(3, arr.size // 10):]
    if np.all(tail < floor):
        return {**out, "regime": "collapse"}
    big = np.flatnonzero(np.abs(e) >= grow * e0)
    if big.size:
        before = [c for c in cross if c <= big[0]]
        if len(before) < 2:
            return {**out, "regime": "collapse"}
        if np.any(big >= arr.size // 2):
            return {**out, "regime": "growing oscillation"}
    return {**out, "regime": "damped ringing" if cross else "monotone"}


def critical_bracket(etas: Any, unstable: Any) -> tuple[float, float]:
    """The measured critical learning rate as ``(largest stable below the first unstable, smallest unstable)``.

    ``(largest stable, inf)`` when no rate was unstable; ``(0, smallest unstable)`` when none was stable.

    Raises
    ------
    ParameterError
        Empty or mismatched inputs.

    Examples
    --------
    >>> critical_bracket([0.1, 0.2, 0.4], [False, False, True])
    (0.2, 0.4)
    """
    e = check_array("etas", etas, ndim=1)
    u = np.asarray(unstable, dtype=bool)
    if e.size == 0 or u.shape != e.shape:
        raise ParameterError("unstable", "`etas` and `unstable` must be non-empty and of one length")
    hi = float(e[u].min()) if u.any() else math.inf
    stable_below = e[(~u) & (e < hi)]
    return (float(stable_below.max()) if stable_below.size else 0.0, hi)


def sweep_table(predictions: dict, traces: list[dict]) -> list[dict[str, Any]]:
    """Predicted against measured, one row per (optimizer, mode, ``K_ref``) of a sweep.

    Parameters
    ----------
    predictions : dict
        The predictions file of the sweep: ``p_star``, ``noise``, ``mu`` and ``predictions`` (per optimizer,
        :func:`lab_predictions`'s dict).
    traces : list of dict
        :meth:`grpo_core.llm.lab.LabTrace.to_dict` records of the sweep's runs.

    Returns
    -------
    list of dict
        ``optimizer``, ``mode``, ``k_ref``, ``first`` (predicted mechanism), ``eta_pred``, ``eta_osc``,
        ``eta_sharp``, ``lo``/``hi`` (measured bracket, :func:`critical_bracket`), ``within_1_5``
        (``eta_pred`` within a factor 1.5 of the bracket: ``lo / 1.5 <= eta_pred <= 1.5 hi``), ``mechanism`` (the
        regime of the smallest unstable rate; ``None`` when none was unstable), ``mechanism_as_predicted``
        (growing oscillation where the oscillator fires first, collapse where the edge does), and ``runs``:
        per run ``eta``, ``seed``, ``measured`` and ``predicted`` regime (:func:`predicted_regime`, with
        ringing only where the model's own trace from the same start overshoots ``p*`` by 10% of the start),
        ``period`` (the run's trough spacing) and ``period_pred`` (the model's, :func:`model_period`; steps,
        ``inf`` when none). Settings without runs are left out; at ``K_ref = 1`` (on-policy) the modes
        coincide and only the ``"stale"`` row is given.
    """
    p_star, noise, mu = float(predictions["p_star"]), float(predictions["noise"]), float(predictions["mu"])
    rows = []
    for opt, pr in predictions["predictions"].items():
        for row in pr["settings"]:
            if row["mode"] == "ratio" and row["k_ref"] == 1:
                continue   # on-policy: the same runs as the stale row at K_ref = 1
            mine = [t for t in traces if t["settings"]["optimizer"] == opt and t["settings"]["k_ref"] == row["k_ref"]
                    and (t["settings"]["mode"] == row["mode"] or row["k_ref"] == 1)]
            if not mine:
                continue
            runs = []
            for t in sorted(mine, key=lambda t: (t["settings"]["learning_rate"], t["settings"]["seed"])):
                eta = float(t["settings"]["learning_rate"])
                p = np.array([math.nan if x is None else x for x in t["p"]], dtype=float)
                c = classify_trace(p, p_star, noise=noise)
                pred = predicted_regime(eta, row, pr["k"], opt, mu)
                if pred == "damped ringing":   # visible ringing: the model's own trace overshoots by 10% of e0
                    e = model_trace(eta, pr["k"], opt, mu, row["k_ref"], p.size - 1, row["mode"])
                    if not (e.max() > 0.1 or len(_troughs(e, 0.2)) > 0):
                        pred = "monotone"
                runs.append({"eta": eta, "seed": t["settings"]["seed"], "measured": c["regime"], "predicted": pred,
                             "period": c["period"],
                             "period_pred": model_period(eta, pr["k"], opt, mu, row["k_ref"], p.size - 1,
                                                         row["mode"]),
                             "peak": c["peak"]})
            lo, hi = critical_bracket([r["eta"] for r in runs], [r["measured"] in UNSTABLE for r in runs])
            within = (lo / 1.5 <= row["eta_pred"] <= 1.5 * hi) and math.isfinite(hi) and lo > 0
            first_unstable = [r["measured"] for r in runs if r["eta"] == hi]
            mechanism = first_unstable[0] if first_unstable else None
            rows.append({"optimizer": opt, "mode": row["mode"], "k_ref": row["k_ref"], "first": row["first"],
                         "eta_pred": row["eta_pred"], "eta_osc": row["eta_osc"], "eta_sharp": row["eta_sharp"],
                         "eta_damping": row["eta_damping"], "lo": lo, "hi": hi, "within_1_5": bool(within),
                         "mechanism": mechanism,
                         "mechanism_as_predicted": None if mechanism is None else
                         mechanism == ("growing oscillation" if row["first"] == "oscillator" else "collapse"),
                         "runs": runs})
    return rows


def prediction_curves(predictions: dict, k_refs: Any = None) -> list[dict[str, Any]]:
    """The predicted critical learning rates as curves over ``K_ref`` (for a chart).

    Returns
    -------
    list of dict
        ``optimizer``, ``mode``, ``k_ref``, ``eta`` and ``line``: ``"oscillator"`` (``a*/K``, refresh lag;
        on-policy for the ratio), ``"sharpness"`` (the edge, flat in ``K_ref``).
    """
    mu = float(predictions["mu"])
    grid = list(k_refs) if k_refs is not None else sorted({int(round(x)) for x in np.geomspace(1, 64, 25)})
    out = []
    for opt, pr in predictions["predictions"].items():
        edge = sharpness_critical_lr(pr["top"], opt, mu)
        for mode in predictions.get("modes", ("stale", "ratio")):
            for kr in grid:
                out.append({"optimizer": opt, "mode": mode, "k_ref": kr, "line": "oscillator",
                            "eta": oscillator_critical_lr(pr["k"], opt, mu, kr, mode)})
                out.append({"optimizer": opt, "mode": mode, "k_ref": kr, "line": "sharpness", "eta": edge})
    return out


@dataclass
class LabRecord:
    """The committed record of the oscillator lab (folder ``book/experiments/runs/oscillator-lab``).

    Attributes
    ----------
    stages : dict
        ``stages.json``: plateau, holds (``p_star``, ``noise``), displacement, relaxation, sharpness.
    predictions : dict
        ``predictions.json`` (written before the sweep), with the rows of ``predictions_frozen.json`` (the
        frozen mode's, written before its sweep) added to each optimizer's ``settings`` when present.
    traces : list of dict
        ``traces.jsonl``: the sweep's runs.
    ablation : list of dict
        ``ablation.jsonl``: the group-size ablation's runs.
    """

    stages: dict
    predictions: dict
    traces: list
    ablation: list

    def relaxation_table(self) -> list[dict[str, Any]]:
        """Per optimizer and learning rate: ``K`` of each seed's return, their mean, its 95% Student-t interval
        over the seeds (``k_interval``) and ``eta K`` per step (``gain``, with ``gain_interval``)."""
        from .probe import _t_interval

        out = []
        rel = self.stages["relaxation"]
        for opt in dict.fromkeys(r["optimizer"] for r in rel):
            for eta in dict.fromkeys(r["learning_rate"] for r in rel if r["optimizer"] == opt):
                ks = [r["k"] for r in rel if r["optimizer"] == opt and r["learning_rate"] == eta]
                ci = _t_interval(ks)
                out.append({"optimizer": opt, "eta": eta, "k_seeds": ks, "k": float(np.mean(ks)),
                            "k_sd": float(np.std(ks, ddof=1)) if len(ks) > 1 else math.nan, "k_interval": ci,
                            "gain": float(np.mean(ks)) * eta, "gain_interval": [c * eta for c in ci]})
        return out

    def stage_runs(self) -> list[dict]:
        """The runs of the preparation: plateau, holds, displacement, returns (their trace dicts)."""
        st = self.stages
        return ([st["plateau_run"]] + list(st.get("hold_runs", [])) + list(st.get("displace_runs", []))
                + [r["trace"] for r in st.get("relaxation", [])])

    def cpu_hours(self) -> float:
        """CPU hours of every run in the record (one thread each; the sharpness probe not counted)."""
        runs = self.stage_runs() + self.traces + self.ablation
        return sum(float(t.get("seconds", 0.0)) for t in runs) / 3600.0


def load_lab_record(folder: Any) -> LabRecord:
    """Read the lab's committed record (:class:`LabRecord`).

    Raises
    ------
    DataError
        A missing ``stages.json`` or ``predictions.json``, or a line of a ``.jsonl`` that is not JSON
        (named with its line number).
    """
    import json
    from pathlib import Path

    from ..errors import DataError

    root = Path(folder)

    def one(name):
        path = root / name
        if not path.exists():
            raise DataError(f"{path}: missing (the oscillator lab's record)")
        return json.loads(path.read_text())

    def lines(name):
        path = root / name
        if not path.exists():
            return []
        out = []
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path}, line {i}: not JSON ({exc.msg})") from None
        return out

    predictions = one("predictions.json")
    later = root / "predictions_frozen.json"
    if later.exists():   # the frozen mode's rows, registered before its own sweep (after the first)
        extra = json.loads(later.read_text())
        predictions = json.loads(json.dumps(predictions))
        for opt, rows in extra["settings"].items():
            predictions["predictions"][opt]["settings"] += rows
        predictions["modes"] = ["stale", "ratio", "frozen"]
    return LabRecord(one("stages.json"), predictions, lines("traces.jsonl"), lines("ablation.jsonl"))


def ablation_table(runs: list[dict], *, tail: int = 25) -> list[dict[str, Any]]:
    """The group-size ablation: per (optimizer, advantages, arm) the gap between the largest and the smallest ``G``.

    Each run's end is the mean exact expected reward over its last ``tail`` steps; runs of one seed are
    paired. An arm is the settings other than ``G`` (e.g. the learning rate or prompts per step).

    Returns
    -------
    list of dict
        ``optimizer``, ``scale_rewards``, ``arm`` (dict of the settings that differ from the cell's first
        arm), ``g_small``/``g_large``, ``ends_small``/``ends_large`` (per seed), ``gaps`` (large - small, per
        seed), ``gap`` (their mean).
    """
    cells: dict = {}
    for r in runs:
        s = r["settings"]
        arm = (s["optimizer"], s["scale_rewards"], s["learning_rate"], s["num_prompts"], s.get("max_grad_norm", 0.0))
        end = float(np.mean([x for x in r["p"][-tail:] if x is not None]))
        cells.setdefault(arm, {}).setdefault(s["group_size"], {})[s["seed"]] = end
    out = []
    for (opt, scale, lr, b, clip), by_g in cells.items():
        gs = sorted(by_g)
        small, large = by_g[gs[0]], by_g[gs[-1]]
        seeds = sorted(set(small) & set(large))
        gaps = [large[s] - small[s] for s in seeds] if len(gs) > 1 else []
        out.append({"optimizer": opt, "scale_rewards": scale, "learning_rate": lr, "num_prompts": b,
                    "max_grad_norm": clip, "g_small": gs[0], "g_large": gs[-1],
                    "ends_small": [small[s] for s in sorted(small)], "ends_large": [large[s] for s in sorted(large)],
                    "gaps": gaps, "gap": float(np.mean(gaps)) if gaps else math.nan})
    return out
