"""The bandit's optimizers: momentum SGD (heavy ball / EMA) and Adam, with a learning-rate schedule.

:func:`grpo_core.bandit.simulate` turns each step's ascent direction ``g`` into a parameter update
with one of these; they hold the optimizer state for a batch of (configurations x seeds x arms).

* :class:`MomentumSGD`: ``v <- mu v + g`` (heavy ball) or ``v <- mu v + (1 - mu) g`` (EMA);
  ``theta <- theta + eta_t v``.
* :class:`Adam`: PyTorch's ``torch.optim.Adam`` (as TRL's default AdamW with weight decay 0) for
  ascent: ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``, ``m_hat = m / (1 - b1^t)``,
  ``v_hat = v / (1 - b2^t)``, ``theta <- theta + eta_t m_hat / (sqrt(v_hat) + eps)``.

``eta_t = eta * lr_schedule[t]`` (the schedule is a per-step multiplier, 1 by default), as TRL's
``lr_scheduler_type`` / ``warmup_steps`` multiply the base ``learning_rate``.

References
----------
Kingma & Ba (2015), "Adam: a method for stochastic optimization" (the update; classical);
PyTorch ``torch.optim.Adam`` (bias correction, eps outside the square root).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_real

__all__ = ["OPTIMIZERS", "MomentumSGD", "Adam", "check_adam_betas", "check_lr_schedule"]

OPTIMIZERS = ("sgd", "adam")


def check_adam_betas(betas: Any) -> tuple[float, float]:
    """``(beta1, beta2)`` of Adam, each in [0, 1).

    Raises
    ------
    ParameterError
        Not a pair, or an entry outside [0, 1).
    """
    arr = np.asarray(betas, dtype=float) if np.ndim(betas) == 1 else None
    if arr is None or arr.size != 2:
        raise ParameterError("adam_betas", f"`adam_betas` must be a pair (beta1, beta2) in [0, 1); got {betas!r}")
    b1 = check_real("adam_betas", arr[0], low=0.0, high=1.0, high_inclusive=False)
    b2 = check_real("adam_betas", arr[1], low=0.0, high=1.0, high_inclusive=False)
    return b1, b2


def check_lr_schedule(lr_schedule: Any, steps: int) -> np.ndarray | None:
    """A per-step learning-rate multiplier of length ``steps``, each > 0 (None: constant 1).

    Raises
    ------
    ParameterError
        Wrong length, a value <= 0 or not finite.
    """
    if lr_schedule is None:
        return None
    arr = check_array("lr_schedule", lr_schedule, ndim=1, min_size=1)
    if arr.size != steps:
        raise ParameterError("lr_schedule", f"`lr_schedule` must have one entry per step ({steps}); got {arr.size}")
    if np.any(arr <= 0):
        raise ParameterError("lr_schedule", f"`lr_schedule` must be > 0 at every step; min is {float(arr.min())!r}")
    return arr


class MomentumSGD:
    """Heavy-ball (``ema=False``) or EMA momentum; ``eta``, ``mu`` of shape (C, 1, 1)."""

    def __init__(self, shape: tuple[int, ...], eta: np.ndarray, mu: np.ndarray, ema: bool):
        self.vel = np.zeros(shape)
        self.eta, self.mu, self.ema = eta, mu, ema

    def update(self, g: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """The parameter increment of this step for ascent direction ``g``."""
        self.vel = self.mu * self.vel + ((1.0 - self.mu) * g if self.ema else g)
        return (scale * self.eta) * self.vel

    def reset(self, runs: np.ndarray) -> None:
        """Restart the runs selected by the boolean mask ``runs`` (shape (C, S)) from rest."""
        self.vel[runs] = 0.0

    def state(self) -> dict:
        return {}


class Adam:
    """Adam with PyTorch's bias correction; ``eta`` of shape (C, 1, 1), ``betas`` scalars."""

    def __init__(self, shape: tuple[int, ...], eta: np.ndarray, betas: tuple[float, float], eps: float):
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.eta = eta
        self.b1, self.b2 = betas
        self.eps = eps
        self.t = 0

    def update(self, g: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """The parameter increment of this step for ascent direction ``g``."""
        self.t += 1
        self.m = self.b1 * self.m + (1.0 - self.b1) * g
        self.v = self.b2 * self.v + (1.0 - self.b2) * g * g
        m_hat = self.m / (1.0 - self.b1**self.t)
        v_hat = self.v / (1.0 - self.b2**self.t)
        return (scale * self.eta) * m_hat / (np.sqrt(v_hat) + self.eps)

    def reset(self, runs: np.ndarray) -> None:
        """Zero the moments of the runs selected by the boolean mask ``runs`` (shape (C, S))."""
        self.m[runs] = 0.0
        self.v[runs] = 0.0

    def state(self) -> dict:
        """``exp_avg_sq``: the bias-corrected second moment ``v_hat`` at the end, shape (C, S, A)."""
        return {"exp_avg_sq": self.v / (1.0 - self.b2**max(self.t, 1))}
