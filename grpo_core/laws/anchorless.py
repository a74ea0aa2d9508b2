"""The beta = 0 law as a reward-curve law, and its comparison with the plain laws on one curve.

:mod:`grpo_core.model.anchorless` derives how the expected reward runs to its ceiling without a KL
anchor, in learning-rate time ``tau`` (our derivation): with ``x = logit((R - floor) / (ceiling - floor))``,

* mean baseline (Dr. GRPO): ``x + sinh x = x0 + sinh x0 + s tau / 2``;
* std-scaled advantages (GRPO's default): ``sinh(x/2) = sinh(x0/2) + s tau / 4``.

:class:`AnchorlessLaw` is that curve as a :class:`~grpo_core.laws.Law`, fitted in any clock (steps
at a constant learning rate, or the cumulative learning rate in equivalent steps at the peak,
:func:`grpo_core.laws.clock.learning_rate_clock`), so its ``rate`` is ``s * eta_ref`` per clock
unit. Parameters ``(x0, rate)`` with the ceiling fixed (the law's own claim: the policy runs to the
reward's reachable maximum), or ``(x0, r_inf, rate)`` with a free ceiling (an LLM's capability ceiling
below the reward's maximum). It is not in :data:`grpo_core.laws.LAWS` (the default comparison and
the forecaster are unchanged); pass the instance to :func:`~grpo_core.laws.fit_law`.

:func:`compare_anchorless` fits it and the plain laws (exponential, logistic) to one curve and
reports R^2 on the whole curve and the error of a forecast made from its first half.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError
from ..model.anchorless import ANCHORLESS_SCALES, _solve_x_plus_sinh
from ..validation import check_array, check_choice, check_real
from .fit import fit_law
from .models import Law, _half_time, _level_scales, get_law

__all__ = ["AnchorlessLaw", "compare_anchorless", "COMPARED_LAWS"]

_X_BOUND = 12.0  # |logit| of the start: a reward within 6e-6 of its floor or ceiling


class AnchorlessLaw(Law):
    """The beta = 0 law (:func:`grpo_core.model.anchorless.anchorless_reward`) in a fit's clock.

    ``R(t) = floor + (ceiling - floor) sigmoid(x(t))``, ``x(0) = x0``, with ``x`` from the closed form
    of ``scale`` and ``s tau`` replaced by ``rate * t``.

    Parameters
    ----------
    scale : {"none", "group_std"}
        Mean baseline (Dr. GRPO) or std-scaled advantages.
    ceiling : float, optional
        The reward's reachable maximum; ``None`` makes it a free parameter ``r_inf``.
    floor : float
        The reward's minimum (0 for a 0/1 reward).

    Raises
    ------
    ParameterError
        Unknown ``scale``, ``ceiling <= floor``.

    Examples
    --------
    >>> law = AnchorlessLaw("group_std", ceiling=1.0)
    >>> law.param_names, [round(float(v), 4) for v in law([0.0, 10.0], [0.0, 0.4])]
    (('x0', 'rate'), [0.5, 0.8536])
    """

    def __init__(self, scale: str = "group_std", ceiling: float | None = 1.0, floor: float = 0.0):
        self.scale = check_choice("scale", scale, ANCHORLESS_SCALES)
        self.floor = check_real("floor", floor)
        self.ceiling = None if ceiling is None else check_real("ceiling", ceiling)
        if self.ceiling is not None and self.ceiling <= self.floor:
            raise ParameterError("ceiling", f"`ceiling` must be > `floor` ({self.floor!r}); got {self.ceiling!r}")
        free = self.ceiling is None
        self.param_names = ("x0", "r_inf", "rate") if free else ("x0", "rate")
        self.param_units = ("logit", "reward", "per step") if free else ("logit", "per step")
        tag = "mean" if scale == "none" else "std"
        self.name = f"anchorless_{tag}" + ("_free" if free else "")
        self.title = (f"beta = 0 law ({'mean baseline' if scale == 'none' else 'std scaling'}, "
                      f"{'free ceiling' if free else f'ceiling {self.ceiling:g}'})")
        self.formula = (r"x + \sinh x = x_0 + \sinh x_0 + \tfrac{1}{2} r t" if scale == "none"
                        else r"\sinh(x/2) = \sinh(x_0/2) + \tfrac{1}{4} r t")
        self.description = "The expected reward's run to its ceiling without a KL anchor (model.anchorless)."

    def _top(self, params: np.ndarray) -> np.ndarray:
        return params[..., 1, None] if self.ceiling is None else np.asarray(self.ceiling)

    def evaluate(self, t, params):
        x0, rate = params[..., 0, None], params[..., -1, None]
        tt = np.maximum(t, 0.0)
        if self.scale == "group_std":
            x = 2.0 * np.arcsinh(np.sinh(x0 / 2.0) + rate * tt / 4.0)
        else:
            x = _solve_x_plus_sinh(x0 + np.sinh(x0) + rate * tt / 2.0)
        top = self._top(params)
        with np.errstate(over="ignore"):
            return self.floor + (top - self.floor) / (1.0 + np.exp(-x))

    def plateau(self, params) -> float:
        """The ceiling (fixed, or the fitted ``r_inf``)."""
        return float(params[1]) if self.ceiling is None else float(self.ceiling)

    def bounds(self, t, y):
        _, _, _, span, dt = _level_scales(t, y)
        lo = [-_X_BOUND, 1e-4 / span]
        hi = [_X_BOUND, 100.0 / dt]
        if self.ceiling is None:
            top = float(np.max(y))
            lo.insert(1, top if top > self.floor else self.floor + 1e-9)
            hi.insert(1, top + 10.0 * float(np.ptp(y)) + 1e-9)
        return np.array(lo), np.array(hi)

    def initial_guesses(self, t, y):
        y0, y1, _, _, _ = _level_scales(t, y)
        tops = [None] if self.ceiling is not None else [max(y1, float(np.max(y))) * 1.02 + 1e-9,
                                                         y1 + 0.5 * abs(y1 - y0) + 1e-9]
        th = _half_time(t, y, y0, y1)
        out = []
        for top in tops:
            c = self.ceiling if top is None else top
            f0 = min(max((y0 - self.floor) / (c - self.floor), 1e-4), 1 - 1e-4)
            x0 = math.log(f0 / (1 - f0))
            for mult in (1.0, 0.3, 3.0):
                p = [x0, mult * 4.0 / th]
                if top is not None:
                    p.insert(1, top)
                out.append(np.array(p))
        return out


#: The laws :func:`compare_anchorless` fits, by column name.
COMPARED_LAWS = ("exponential", "logistic", "anchorless_std", "anchorless_std_free", "anchorless_mean_free")


def _laws(ceiling: float, floor: float) -> dict[str, Any]:
    return {"exponential": "exponential", "logistic": "logistic",
            "anchorless_std": AnchorlessLaw("group_std", ceiling, floor),
            "anchorless_std_free": AnchorlessLaw("group_std", None, floor),
            "anchorless_mean_free": AnchorlessLaw("none", None, floor)}


def compare_anchorless(t: Any, y: Any, *, ceiling: float, floor: float = 0.0,
                       fraction: float = 0.5) -> dict[str, dict[str, float]]:
    """Fit the beta = 0 law and the plain laws to one curve: R^2, and the error of a forecast.

    Parameters
    ----------
    t : array_like, shape (n,)
        The clock (steps, or cumulative learning rate in equivalent steps), strictly increasing, >= 0.
    y : array_like, shape (n,)
        The reward.
    ceiling, floor : float
        The reward's reachable maximum and minimum.
    fraction : float in (0, 1)
        The forecast is fitted on the points with ``t <= fraction * t[-1]`` and scored on the rest.

    Returns
    -------
    dict
        ``{law: {"r2": ..., "forecast_rmse": ..., "plateau": ..., "rate": ...}}`` for each of
        :data:`COMPARED_LAWS` (NaN where a fit failed). ``forecast_rmse`` is the root mean square
        difference between the first-part fit's curve and the rewards after it.

    Raises
    ------
    ParameterError
        Bad ``fraction``, ``ceiling <= floor``, ``t``/``y`` of different lengths.

    Examples
    --------
    >>> t = np.arange(1.0, 201.0)
    >>> y = AnchorlessLaw("group_std", 1.0)(t, [-2.0, 0.05]) + np.random.default_rng(0).normal(0, 0.03, t.size)
    >>> out = compare_anchorless(t, y, ceiling=1.0)
    >>> out["anchorless_std"]["r2"] > out["exponential"]["r2"], round(out["anchorless_std"]["rate"], 2)
    (True, 0.05)
    """
    frac = check_real("fraction", fraction, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    t = check_array("t", t, ndim=1)
    y = check_array("y", y, ndim=1)
    if t.size != y.size:
        raise ParameterError("y", f"`t` and `y` must have the same length; got {t.size} and {y.size}")
    laws = _laws(ceiling, floor)
    head = t <= frac * t[-1]
    out: dict[str, dict[str, float]] = {}
    for name, law in laws.items():
        row = {"r2": math.nan, "forecast_rmse": math.nan, "plateau": math.nan, "rate": math.nan}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                full = fit_law(t, y, law)
                row["r2"], row["plateau"] = full.r2, full.plateau
                row["rate"] = full.params.get("rate", full.params.get("k", math.nan))
                part = fit_law(t[head], y[head], law)
                obj = get_law(law)
                rest = obj(t[~head], [part.params[p] for p in obj.param_names])
                row["forecast_rmse"] = float(np.sqrt(np.mean((rest - y[~head]) ** 2)))
            except DataError:
                pass
        out[name] = row
    return out
