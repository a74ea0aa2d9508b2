"""The bandit's specification: arms, rewards, group size, baseline, estimator, lag and momentum.

:class:`BanditSpec` holds everything a batch of runs shares (the per-run knobs ``eta``, ``mu``,
``k_ref``, ``beta`` are arguments of :func:`grpo_core.bandit.simulate`), with the names of the
choices and the size limits. Book chapter "The bandit: where the mean field is exact".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..grpo import DEFAULT_STD_EPS
from ..model.hyperparameters import (
    LAG_MODELS,
    MOMENTUM_STYLES,
)
from ..validation import check_array, check_choice, check_instance, check_integer, check_real

__all__ = [
    "LAGS", "ESTIMATORS", "MOMENTA", "KL_ESTIMATORS", "BASELINES", "SCALES", "MAX_ARMS", "MAX_GROUP_SIZE", "BanditSpec",
]


LAGS = LAG_MODELS
ESTIMATORS = ("score", "surrogate")
MOMENTA = MOMENTUM_STYLES
KL_ESTIMATORS = ("exact", "k3")
BASELINES = ("mean", "leave_one_out", "none")
SCALES = ("none", "group_std")

#: Fixed points closer than this (relative) to the extreme rewards are not interior.
_EDGE = 1e-6
#: Largest number of arms and largest finite group size a :class:`BanditSpec` accepts: the exact
#: mean field sums over Bin(G - 1, p) and every step holds (prompts x G x arms) arrays, so beyond
#: these a single step would not fit in memory (the experiments here use A <= 64, G <= 1024).
MAX_ARMS = 100_000
MAX_GROUP_SIZE = 1_000_000


# ----------------------------------------------------------------------------------------------
# The specification
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BanditSpec:
    """Everything a batch of bandit runs shares (the per-run knobs eta, mu, k_ref, beta are not here).

    Parameters
    ----------
    reward_probs : sequence of float, shape (A,), each in [0, 1]
        Probability that arm ``a`` pays reward 1 (``q_a``). Binary rewards: 0/1 entries (the 1s
        are the correct arms). At least two arms, not all equal (otherwise nothing can be learnt).
    group_size : int >= 1, or ``math.inf``
        G, samples per group. ``inf`` (the ``G -> infinity`` limit) is allowed only in mean-field
        runs. ``G >= 2`` with ``baseline="leave_one_out"`` or ``scale="group_std"``.
    num_prompts : int >= 1
        B, groups per optimizer step (all of the single bandit "prompt"): N = B G samples per step.
    baseline : {"mean", "leave_one_out", "none"}
        Group baseline (see :func:`grpo_core.grpo.group_advantages`).
    scale : {"none", "group_std"}
        Divide advantages by the group's std (ddof = 1) plus ``std_eps`` (GRPO / TRL default).
        TRL's batch-std scaling couples the groups of a step and is not modelled. Needs a baseline.
    estimator : {"score", "surrogate"}
        Stale score-function gradient (exact delay model) or the clipped surrogate with importance
        ratios (module docstring).
    lag : {"constant", "refresh"}
        Lag model of the behaviour policy (module docstring).
    momentum : {"heavy_ball", "ema"}
        ``v = mu v + g`` or ``v = mu v + (1 - mu) g``; then ``theta += eta v``.
    kl_estimator : {"exact", "k3"}
        Exact gradient of KL(pi || pi_ref) (the mean of TRL >= 1.10's ratio-corrected k3), or the
        gradient of the plain sampled k3 estimator (TRL < 1.10).
    eps_low, eps_high : float
        Clip range of the surrogate: ``rho`` is clipped to ``[1 - eps_low, 1 + eps_high]``
        (TRL ``epsilon`` = 0.2 and ``epsilon_high``, default ``eps_low``; DAPO's clip-higher uses
        0.28). ``eps_low`` in (0, 1), ``eps_high`` > 0.
    std_eps : float > 0
        Added to the std before dividing (TRL: 1e-4).
    init_logits, ref_logits : sequence of float, shape (A,), optional
        Initial logits and reference logits (nats); default: zeros (uniform). ``ref_logits``
        defaults to ``init_logits``.

    Raises
    ------
    ParameterError
        Any value outside its range; ``group_size`` < 2 with leave-one-out or std scaling; std
        scaling without a baseline; fewer than 2 arms; all reward probabilities equal.

    Examples
    --------
    >>> spec = BanditSpec.binary(arms=4, correct=1, group_size=8)
    >>> spec.num_arms, spec.reward_probs
    (4, (1.0, 0.0, 0.0, 0.0))
    """

    reward_probs: tuple[float, ...]
    group_size: float = 8
    num_prompts: int = 1
    baseline: str = "mean"
    scale: str = "none"
    estimator: str = "score"
    lag: str = "constant"
    momentum: str = "heavy_ball"
    kl_estimator: str = "exact"
    eps_low: float = 0.2
    eps_high: float | None = None
    std_eps: float = DEFAULT_STD_EPS
    init_logits: tuple[float, ...] | None = None
    ref_logits: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        q = check_array("reward_probs", self.reward_probs, ndim=1, low=0.0, high=1.0)
        if q.size > MAX_ARMS:
            raise ParameterError("arms", f"`arms` must be an integer in [2, {MAX_ARMS}]; got {q.size}")
        if q.size < 2:
            raise ParameterError("arms", f"`arms` must be an integer >= 2; got {q.size}")
        if np.ptp(q) == 0:
            raise ParameterError(
                "reward_probs",
                "`reward_probs` must differ between arms (at least one correct and one wrong arm); "
                f"got all equal to {q[0]!r}",
            )
        object.__setattr__(self, "reward_probs", tuple(float(x) for x in q))
        g = self.group_size
        if isinstance(g, float | np.floating) and math.isinf(g) and g > 0:
            object.__setattr__(self, "group_size", math.inf)
        else:
            object.__setattr__(self, "group_size", check_integer("group_size", g, low=1, high=MAX_GROUP_SIZE))
        object.__setattr__(self, "num_prompts", check_integer("num_prompts", self.num_prompts, low=1))
        check_choice("baseline", self.baseline, BASELINES)
        check_choice("scale", self.scale, SCALES)
        check_choice("estimator", self.estimator, ESTIMATORS)
        check_choice("lag", self.lag, LAGS)
        check_choice("momentum", self.momentum, MOMENTA)
        check_choice("kl_estimator", self.kl_estimator, KL_ESTIMATORS)
        if self.group_size < 2 and (self.baseline == "leave_one_out" or self.scale != "none"):
            what = "baseline='leave_one_out'" if self.baseline == "leave_one_out" else "scale='group_std'"
            raise ParameterError("group_size", f"`group_size` must be >= 2 with {what}; got {self.group_size}")
        if self.scale != "none" and self.baseline == "none":
            raise ParameterError("scale", "`scale`='group_std' needs a baseline ('mean' or 'leave_one_out')")
        lo = check_real("eps_low", self.eps_low, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        object.__setattr__(self, "eps_low", lo)
        hi = lo if self.eps_high is None else check_real("eps_high", self.eps_high, low=0.0, low_inclusive=False)
        object.__setattr__(self, "eps_high", hi)
        object.__setattr__(self, "std_eps", check_real("std_eps", self.std_eps, low=0.0, low_inclusive=False))
        a = q.size
        init = np.zeros(a) if self.init_logits is None else check_array("init_logits", self.init_logits, ndim=1)
        if init.size != a:
            raise ParameterError("init_logits", f"`init_logits` must have one entry per arm ({a}); got {init.size}")
        ref = init if self.ref_logits is None else check_array("ref_logits", self.ref_logits, ndim=1)
        if ref.size != a:
            raise ParameterError("ref_logits", f"`ref_logits` must have one entry per arm ({a}); got {ref.size}")
        object.__setattr__(self, "init_logits", tuple(float(x) for x in init))
        object.__setattr__(self, "ref_logits", tuple(float(x) for x in ref))

    @classmethod
    def binary(cls, arms: int = 2, correct: int = 1, **kwargs: Any) -> BanditSpec:
        """A bandit with binary rewards: the first ``correct`` of ``arms`` arms pay 1, the others 0.

        Parameters
        ----------
        arms : int >= 2
        correct : int in [1, arms - 1]
        **kwargs
            Any other :class:`BanditSpec` field.

        Raises
        ------
        ParameterError
            ``arms`` < 2, or ``correct`` outside [1, arms - 1] (no correct arm, or no wrong one).

        Examples
        --------
        >>> BanditSpec.binary(arms=3, correct=2).reward_probs
        (1.0, 1.0, 0.0)
        """
        a = check_integer("arms", arms, low=2, high=MAX_ARMS)
        c = check_integer("correct", correct, low=1, high=a - 1)
        return cls(reward_probs=tuple([1.0] * c + [0.0] * (a - c)), **kwargs)

    @property
    def num_arms(self) -> int:
        """A, the number of arms."""
        return len(self.reward_probs)

    @property
    def binary_rewards(self) -> bool:
        """True when every arm's reward is deterministic (probability 0 or 1)."""
        return all(x in (0.0, 1.0) for x in self.reward_probs)

    @property
    def group_size_is_infinite(self) -> bool:
        """True for the ``G -> infinity`` limit (mean-field runs only)."""
        return math.isinf(self.group_size)

    def replace(self, **changes: Any) -> BanditSpec:
        """A copy with some fields changed (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)


def check_spec(spec: Any, name: str = "spec") -> BanditSpec:
    """Validate a bandit specification argument.

    Raises
    ------
    ParameterError
        If ``spec`` is not a :class:`BanditSpec`.
    """
    return check_instance(name, spec, BanditSpec,
                          "a BanditSpec (BanditSpec.binary(...) or BanditSpec(reward_probs=...))")
