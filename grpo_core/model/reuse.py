"""Reused generation batches with the importance ratio: what is left of the lag, and where the clip binds.

TRL reuses one generation batch for ``steps_per_generation x num_iterations`` optimizer steps (the
refresh interval ``k_ref`` of the model) and corrects the reuse with the ratio
``rho = pi_theta / pi_old`` inside the clipped surrogate ``min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A)``.

What is left of the lag (our derivation, exact on the bandit). While no sample is clipped the
expected surrogate gradient is ``E_old[rho A grad log pi_theta] = E_theta[A grad log pi_theta]``:
the gradient at the *current* policy, with advantages whose baseline and scale were computed from
the old group. A baseline that is constant within the batch drops out (the score has mean zero), so

* mean baseline (also Dr. GRPO, leave-one-out): the expected update is exactly the on-policy one,
  ``(G - 1)/G pi * (q - p)`` on the bandit, whatever the behaviour policy: no lag at all;
* std scaling: the on-policy update times the stale ``1 / std_old`` (G -> inf: ``sigma(p) / sigma(p_old)``
  times the on-policy one), a gain change of order ``p - p_old``, no delayed restoring force: the
  linearised dynamics have no lag either.

So with the ratio the oscillator's lag is ``d = 0`` (use ``k_ref = 1``; the stale-gradient thresholds
apply only to a reuse without the ratio correction). What changes is that the step is capped.

Where the clip takes over (our derivation). A sample with ``A > 0`` stops contributing when
``rho > 1 + eps_high``, one with ``A < 0`` when ``rho < 1 - eps_low``. For a binary reward the
rewarded completions' ratio is ``p / p_old`` (bandit: exactly, by symmetry) and the unrewarded ones'
``(1 - p)/(1 - p_old)``; the update stops only when both are clipped, so within one generation batch
(``beta = 0``)

    p  <=  max((1 + eps_high) p_old,  1 - (1 - eps_low)(1 - p_old))      (:func:`clip_ceiling`)

up to the overshoot of the last step. Along the mean-baseline flow ``d log p / dtau = s p (1 - p)^2``
and ``d log(1 - p) / dtau = -s p^2 (1 - p)``: the first clip binds after the learning-rate time
:func:`clip_onset` within the batch. A batch reused for less than that in learning-rate time
(``eta * (k_ref - 1)`` below the onset) is exactly on-policy in expectation; beyond, the reward can rise by
at most ``eps * max(p, 1 - p)`` per generation batch, whatever the learning rate.

Checked on the bandit's exact mean field (tests/test_model_reuse.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import check_array, check_real

__all__ = ["clip_ceiling", "clip_onset"]


def _eps(eps_low: Any, eps_high: Any) -> tuple[float, float]:
    lo = check_real("eps_low", eps_low, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    hi = lo if eps_high is None else check_real("eps_high", eps_high, low=0.0, low_inclusive=False)
    return lo, hi


def clip_ceiling(p_old: Any, eps_low: float = 0.2, eps_high: float | None = None) -> np.ndarray:
    """Largest expected reward one generation batch can reach under the clipped surrogate, beta = 0.

    Our derivation (module docstring): ``max((1 + eps_high) p_old, 1 - (1 - eps_low)(1 - p_old))``,
    at most 1.

    Parameters
    ----------
    p_old : array_like, in [0, 1]
        Expected reward of the policy that generated the batch.
    eps_low, eps_high : float
        TRL's ``epsilon`` and ``epsilon_high`` (default: ``eps_low``).

    Returns
    -------
    ndarray, shape of ``p_old``

    Raises
    ------
    ParameterError
        ``p_old`` outside [0, 1], ``eps_low`` outside (0, 1), ``eps_high`` <= 0.

    Examples
    --------
    >>> clip_ceiling([0.2, 0.5, 0.9]).round(3).tolist()
    [0.36, 0.6, 1.0]
    """
    p = check_array("p_old", p_old, low=0.0, high=1.0)
    lo, hi = _eps(eps_low, eps_high)
    return np.minimum(1.0, np.maximum((1.0 + hi) * p, 1.0 - (1.0 - lo) * (1.0 - p)))


def clip_onset(p_old: Any, rate: float, eps_low: float = 0.2, eps_high: float | None = None) -> np.ndarray:
    """Learning-rate time within a generation batch after which the first clip binds (mean baseline).

    Our derivation: the smaller of ``log(1 + eps_high) / (s p (1 - p)^2)`` (rewarded completions) and
    ``-log(1 - eps_low) / (s p^2 (1 - p))`` (unrewarded ones), to first order in the batch's move.
    TRL evaluates the ratio before each of the ``k_ref`` steps of a batch, so the clip first binds
    when ``(k_ref - 1) * eta`` reaches it; below, the reuse is exactly on-policy in expectation
    (bandit: the onset within 5%, tests/test_model_reuse.py).

    Parameters
    ----------
    p_old : array_like, in (0, 1)
    rate : float > 0
        ``s`` of :mod:`grpo_core.model.anchorless` (bandit: :func:`~grpo_core.model.anchorless.anchorless_rate`).
    eps_low, eps_high : float

    Returns
    -------
    ndarray
        ``tau_clip`` (units of the learning rate x steps).

    Raises
    ------
    ParameterError
        ``p_old`` outside (0, 1), bad ``rate`` or clip range.

    Examples
    --------
    >>> clip_onset([0.5], 2.0).round(4).tolist()
    [0.7293]
    """
    p = check_array("p_old", p_old, low=0.0, high=1.0)
    p = np.clip(p, 1e-300, 1.0 - 1e-16)
    s = check_real("rate", rate, low=0.0, low_inclusive=False)
    lo, hi = _eps(eps_low, eps_high)
    up = np.log1p(hi) / (s * p * (1.0 - p) ** 2)
    down = -np.log1p(-lo) / (s * p**2 * (1.0 - p))
    return np.minimum(up, down)
