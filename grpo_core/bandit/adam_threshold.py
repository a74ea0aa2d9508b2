"""The critical learning rate of the *sampled* bandit under Adam, against the noise-set prediction.

:mod:`grpo_core.model.adam` predicts that near the operating point Adam's second moment ``v`` is the
gradient noise ``sigma^2`` (the variance of one step's gradient along the reward coordinate, falling
as ``1 / (B G)``), so the gain is ``a = eta K / sigma`` and the largest stable learning rate is

    eta*_noise = a*(b1) sigma / K,     a*(b1) = 2 (1 + b1) / (1 - b1)      (our derivation)

(:func:`grpo_core.model.adam.adam_critical_learning_rate` with ``second_moment = sigma^2``). The
mean-field checks (tests/test_model_adam.py) test ``a*`` where there is no noise; here the bandit is
sampled (finite G, B prompts per step) and ``eta`` is swept as one array program over
configurations x seeds (:func:`grpo_core.bandit.simulate` with ``optimizer="adam"``).

What is measured. A sampled run past its threshold does not diverge to infinity: its oscillation
grows until the policy leaves the fixed point's basin and is caught at a corner (``p`` below 0.02
or above 0.98, where every group has the same reward and the advantages vanish: GRPO's zero-spread
trap). :func:`adam_escape_threshold` takes the measured critical ``eta`` as the learning rate at
which half of the seeds have escaped within ``steps`` (log-linear interpolation of the escape
fraction between grid points), with a percentile interval from resampling the seeds.

Result (our measurement, 32 seeds, B = 16, beta = 1, beta2 = 0.999; tests/test_adam_threshold.py):
with ``b1 = 0.9`` the escape is sharp (the same ``eta`` for 1,000 and 6,000 steps) and sits at
1.28 and 1.23 ``eta*_noise`` for G = 4 and G = 16 (90% intervals over the seeds [0.94, 1.49] and
[1.03, 1.70]): the prediction has the ``1 / sqrt(G)`` scaling right and is low by a quarter, because
the jitter the run itself causes adds to ``v``. With ``b1 = 0`` the noise-set prediction fails by an
order of magnitude (escape at 8.9 and 14 ``eta*_noise``, drifting down a few percent from 1,000 to
6,000 steps), and the escape ``eta`` (0.94, 0.87) hardly moves with G: as
:func:`grpo_core.model.adam.stationary_second_moment` says, RMSprop's ``v`` grows with the jitter fast
enough to hold ``a`` below 2, so there is no linear threshold; the step becomes sign-like, about
``eta`` in logit units whatever the noise, and the policy escapes when that step is of the basin's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..model.adam import adam_critical_gain, adam_critical_learning_rate
from ..validation import check_array, check_integer, check_real
from .fixed_points import fixed_point
from .gradients import gradient_covariance
from .simulation import simulate
from .spec import BanditSpec

__all__ = ["AdamThreshold", "adam_escape_threshold", "adam_threshold_table", "ESCAPE_BAND", "MULTIPLIERS_NO_MOMENTUM",
           "MULTIPLIERS_MOMENTUM"]

#: ``p`` outside this band counts as escaped from the fixed point (caught at a corner).
ESCAPE_BAND = (0.02, 0.98)
#: Learning rates swept for ``beta1 = 0``, in units of ``eta*_noise`` (ratio 1.2 between neighbours).
MULTIPLIERS_NO_MOMENTUM = tuple(float(x) for x in np.geomspace(4.0, 24.0, 11))
#: Learning rates swept for ``beta1 > 0``, in units of ``eta*_noise`` (ratio 1.2 between neighbours).
MULTIPLIERS_MOMENTUM = tuple(float(x) for x in np.geomspace(0.6, 3.0, 10))


@dataclass(frozen=True)
class AdamThreshold:
    """The measured and the predicted critical learning rate of one (G, b1) cell.

    Attributes
    ----------
    group_size, num_prompts : int
    beta1, beta2 : float
    stiffness : float
        ``K`` at the fixed point (KL anchor included).
    noise_variance : float
        ``sigma^2``, the variance of one step's gradient along the reward coordinate at the fixed point.
    critical_gain : float
        ``a*(b1)``.
    eta_predicted : float
        ``a* sigma / K`` (v set by the noise).
    eta_measured, eta_low, eta_high : float
        Where half of the seeds escape within ``steps``, and its percentile interval over resampled
        seeds (NaN when the grid does not bracket it).
    multipliers : ndarray, shape (C,)
        The grid, in units of ``eta_predicted``.
    escape_fraction : ndarray, shape (C,)
        Fraction of seeds escaped within ``steps`` at each grid point.
    seeds, steps : int
    level : float
        Coverage of the interval.
    """

    group_size: int
    num_prompts: int
    beta1: float
    beta2: float
    stiffness: float
    noise_variance: float
    critical_gain: float
    eta_predicted: float
    eta_measured: float
    eta_low: float
    eta_high: float
    multipliers: np.ndarray = field(repr=False)
    escape_fraction: np.ndarray = field(repr=False)
    seeds: int = 0
    steps: int = 0
    level: float = 0.9

    @property
    def ratio(self) -> float:
        """``eta_measured / eta_predicted``."""
        return self.eta_measured / self.eta_predicted

    def row(self) -> dict[str, Any]:
        """One row of :func:`adam_threshold_table`."""
        return {"G": self.group_size, "beta1": self.beta1, "K": self.stiffness, "sigma": math.sqrt(self.noise_variance),
                "a_star": self.critical_gain, "eta_predicted": self.eta_predicted, "eta_measured": self.eta_measured,
                "eta_low": self.eta_low, "eta_high": self.eta_high, "ratio": self.ratio,
                "ratio_low": self.eta_low / self.eta_predicted, "ratio_high": self.eta_high / self.eta_predicted}


def _half_crossing(mult: np.ndarray, frac: np.ndarray) -> float:
    """First crossing of 1/2 by ``frac`` along ``mult``, interpolated in ``log(mult)``; NaN if none."""
    above = np.flatnonzero(frac >= 0.5)
    if above.size == 0 or above[0] == 0:
        return math.nan  # never reached, or already past at the first grid point: not bracketed
    i = int(above[0])
    f0, f1 = frac[i - 1], frac[i]
    x0, x1 = math.log(mult[i - 1]), math.log(mult[i])
    return math.exp(x0 + (0.5 - f0) / (f1 - f0) * (x1 - x0))


def adam_escape_threshold(group_size: int, beta1: float, *, num_prompts: int = 16, beta: float = 1.0,
                          beta2: float = 0.999, multipliers: Any = None, steps: int = 2000, seeds: int = 32,
                          n_boot: int = 400, level: float = 0.9, record_every: int = 10) -> AdamThreshold:
    """Measure the critical ``eta`` of the sampled binary bandit under Adam against ``a* sigma / K``.

    Parameters
    ----------
    group_size : int >= 2
        G.
    beta1 : float in [0, 1)
        Adam's ``beta1``.
    num_prompts : int >= 1
        B, groups per step (default 16).
    beta : float > 0
        KL weight (the anchor that gives the bandit its interior fixed point; default 1).
    beta2 : float in [0, 1)
        Adam's ``beta2`` (default PyTorch's 0.999).
    multipliers : array_like, optional
        Grid of ``eta / eta_predicted`` (increasing; default :data:`MULTIPLIERS_NO_MOMENTUM`, 4 to 24,
        for ``beta1 = 0``, :data:`MULTIPLIERS_MOMENTUM`, 0.6 to 3, otherwise).
    steps, seeds : int
        Horizon and number of seeds (defaults 2000, 32).
    n_boot : int
        Seed resamples for the interval.
    level : float in (0, 1)
    record_every : int
        The escape is read from ``p`` recorded every this many steps.

    Returns
    -------
    AdamThreshold

    Raises
    ------
    ParameterError
        Out-of-range arguments (as :func:`grpo_core.bandit.simulate`), a grid that is not increasing.

    Examples
    --------
    >>> r = adam_escape_threshold(4, 0.9, multipliers=[0.8, 1.0, 1.26, 1.6], steps=600, seeds=16, n_boot=50)
    >>> round(r.eta_predicted, 3), 1.0 < r.ratio < 1.6
    (1.996, True)
    """
    b1 = check_real("beta1", beta1, low=0.0, high=1.0, high_inclusive=False)
    n_seeds = check_integer("seeds", seeds, low=2)
    n_boot = check_integer("n_boot", n_boot, low=10)
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    if multipliers is None:
        multipliers = MULTIPLIERS_NO_MOMENTUM if b1 == 0 else MULTIPLIERS_MOMENTUM
    mult = check_array("multipliers", multipliers, ndim=1, min_size=2, low=0.0)
    if mult[0] <= 0 or np.any(np.diff(mult) <= 0):
        raise ParameterError("multipliers", "`multipliers` must be an increasing grid of positive values")
    spec = BanditSpec.binary(group_size=group_size, num_prompts=num_prompts, lag="refresh")
    fp = fixed_point(spec, beta)
    s2 = float(gradient_covariance(spec, fp.theta_star)[1][0, 0])
    eta_pred = float(adam_critical_learning_rate(fp.stiffness, s2, beta1=b1))
    run = simulate(spec, eta=eta_pred * mult, beta=beta, steps=steps, seeds=n_seeds, optimizer="adam",
                   adam_betas=(b1, beta2), theta0=fp.theta_star, record_every=record_every, progress=False)
    lo, hi = ESCAPE_BAND
    escaped = ((run.p < lo) | (run.p > hi)).any(-1)  # (C, S)
    frac = escaped.mean(1)
    rng = np.random.default_rng(0)
    boot = np.array([_half_crossing(mult, escaped[:, rng.integers(0, n_seeds, n_seeds)].mean(1))
                     for _ in range(n_boot)])
    boot = boot[np.isfinite(boot)]
    q = np.quantile(boot, [0.5 - level / 2, 0.5 + level / 2]) if boot.size else (math.nan, math.nan)
    return AdamThreshold(group_size=int(spec.group_size), num_prompts=int(num_prompts), beta1=b1, beta2=float(beta2),
                         stiffness=float(fp.stiffness), noise_variance=s2,
                         critical_gain=float(adam_critical_gain(b1)), eta_predicted=eta_pred,
                         eta_measured=eta_pred * _half_crossing(mult, frac), eta_low=eta_pred * float(q[0]),
                         eta_high=eta_pred * float(q[1]), multipliers=mult, escape_fraction=frac, seeds=n_seeds,
                         steps=int(steps), level=level)


def adam_threshold_table(group_sizes: Any = (4, 16), beta1s: Any = (0.0, 0.9), **kwargs) -> pd.DataFrame:
    """:func:`adam_escape_threshold` over ``group_sizes x beta1s``, one row each (what the chapter shows).

    Columns: ``G``, ``beta1``, ``K``, ``sigma``, ``a_star``, ``eta_predicted``, ``eta_measured``,
    ``eta_low``, ``eta_high``, ``ratio`` (measured / predicted), ``ratio_low``, ``ratio_high``.
    Keyword arguments go to :func:`adam_escape_threshold`. About 10 s for the default four cells.
    """
    return pd.DataFrame([adam_escape_threshold(g, b1, **kwargs).row() for b1 in beta1s for g in group_sizes])
