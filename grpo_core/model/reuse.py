"""Reused generation batches with the importance ratio: what is left of the lag, and where the clip binds.

TRL reuses one generation batch for ``steps_per_generation x num_iterations`` optimizer steps (the
refresh interval ``k_ref`` of the model) and corrects the reuse with the ratio
``rho = pi_theta / pi_old`` inside the clipped surrogate ``min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A)``.

What is left of the lag (our derivation, exact on the bandit). While no sample is clipped the
expected surrogate gradient is ``E_old[rho A grad log pi_theta] = E_theta[A grad log pi_theta]``:
the gradient at the *current* policy, with advantages whose baseline and scale were computed from
the old group. A baseline that is constant within the batch drops out (the score has mean zero), so

* mean baseline (also Dr. GRPO, leave-one-out), no std scaling: the expected update is exactly the
  on-policy one, ``(G - 1)/G pi * (q - p)`` on the bandit, whatever the behaviour policy. The lag
  drops out exactly: the oscillator's lag is ``d = 0`` and the threshold is the on-policy one
  (``2 (1 + mu)`` for heavy ball) at every ``k_ref``.
* std scaling (TRL's default ``scale_rewards="group"``): the on-policy reward force divided by the
  stale ``std_old`` instead of the current one. At a KL-anchored fixed point that force is not zero
  (it balances the KL pull), so the stale ``1 / std_old`` leaves a *lagged* term: linearised, the
  gradient is ``-(K + c) e_k + c e_old`` with ``c = dF/dx_old`` and ``K`` the on-policy stiffness.
  The lag does not drop out; :func:`ratio_critical_a` gives the threshold. Two arms, uniform
  reference, ``G -> inf``: ``c = (2 p* - 1) sqrt(p* (1 - p*))``, ``K = 2 beta p* (1 - p*) - c``
  (``beta = 3``: ``c / K = 0.137``, and at ``k_ref = 8`` (refresh lag) the critical ``a = eta K`` is
  1.759, 2.638, 3.234 for ``mu = 0, 0.5, 0.9`` instead of the on-policy 2, 3, 3.8; ``G = 8``: 1.889,
  2.834, 3.590). ``c`` changes sign at ``p* = 1/2``: with ``p* > 1/2`` the lag lowers the threshold.
  It does not grow with ``k_ref``: for long reuse the threshold tends to ``2 (1 + mu) / (1 + c/K)``,
  the on-policy edge for the gain of the current step ``eta (K + c)`` (heavy ball).

So the stale-gradient thresholds (``d`` = the age of the whole gradient) apply only to a reuse
without the ratio correction; with the ratio the lag is gone for the mean baseline and reduced to
the share ``c / K`` for std scaling. What the ratio adds in both cases is that the step is capped.

Where the clip takes over (our derivation). A sample with ``A > 0`` stops contributing when
``rho > 1 + eps_high``, one with ``A < 0`` when ``rho < 1 - eps_low``. For a binary reward the
rewarded completions' ratio is ``p / p_old`` (bandit: exactly, by symmetry) and the unrewarded ones'
``(1 - p)/(1 - p_old)``; the update stops only when both are clipped, so within one generation batch
(``beta = 0``)

    p  <=  max((1 + eps_high) p_old,  1 - (1 - eps_low)(1 - p_old))      (:func:`clip_ceiling`)

up to the overshoot of the last step. The clip zeroes a sample's gradient only once its ratio is
already past the clip range, and the ratio is evaluated before each step, so the step that carries
``p`` past the ceiling is taken in full and then nothing moves: the batch ends above the ceiling by
less than that one step's move (bandit, ``eta = 0.5``, ``k_ref = 64``, from ``p = 0.27``: excess
up to 0.0147 against a crossing step of 0.0229; the largest excess is 0.0053, 0.0022, 0.0015 at
``eta`` = 0.25, 0.125, 0.0625 over the same learning-rate time per batch). The formula is the limit
of small steps. Along the mean-baseline flow ``d log p / dtau = s p (1 - p)^2``
and ``d log(1 - p) / dtau = -s p^2 (1 - p)``: the first clip binds after the learning-rate time
:func:`clip_onset` within the batch. A batch reused for less than that in learning-rate time
(``eta * (k_ref - 1)`` below the onset) is exactly on-policy in expectation; beyond, the reward can rise by
at most ``eps * max(p, 1 - p)`` per generation batch, plus that overshoot, whatever the learning rate.

Domain: one token per sample (the bandit: one action). The ceiling and the exact absence of lag
above (mean baseline) are one-token results. With per-token ratios over sequences (TRL, per-token clipping) they
hold only to first order in the batch's move: each token's prefix stays the one sampled from the
old policy, so the reweighting is not exact, and each token is clipped on its own, so a sequence's
probability, the product of its tokens', can move by more than the factor ``1 + eps_high``.

Checked on the bandit's exact mean field (tests/test_model_reuse.py, tests/test_domain_claims_bandit.py;
the overshoot: tests/test_domain_claims_oscillator.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..validation import check_array, check_real
from .hyperparameters import check_k_ref, check_momentum, check_mu

__all__ = ["clip_ceiling", "clip_onset", "ratio_critical_a"]


def _eps(eps_low: Any, eps_high: Any) -> tuple[float, float]:
    lo = check_real("eps_low", eps_low, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    hi = lo if eps_high is None else check_real("eps_high", eps_high, low=0.0, low_inclusive=False)
    return lo, hi


def clip_ceiling(p_old: Any, eps_low: float = 0.2, eps_high: float | None = None) -> np.ndarray:
    """Largest expected reward one generation batch can reach under the clipped surrogate, beta = 0.

    Our derivation (module docstring): ``max((1 + eps_high) p_old, 1 - (1 - eps_low)(1 - p_old))``,
    at most 1. Exact for one token in the limit of small steps; a finite step overshoots it by less
    than the step that crosses it (0.0147 at most on the bandit at ``eta = 0.5``; book chapter "From
    update rule to oscillator", check 2). On sequences with per-token clipping, first order only.

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


def _refresh_cycle_radius(gain: float, mu: float, k_ref: int, stale: float) -> float:
    """Spectral radius of the one-cycle map of the refresh-lag recurrence with a stale share."""
    # State (e, v, e_old); per step v' = mu v + g, e' = e + gain v', g = -(1 + s) e + s e_old.
    step = np.array([[1.0 - gain * (1.0 + stale), gain * mu, gain * stale],
                     [-(1.0 + stale), mu, stale],
                     [0.0, 0.0, 1.0]])
    refresh = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    with np.errstate(over="ignore", invalid="ignore"):
        cycle = np.linalg.matrix_power(step, k_ref) @ refresh
    if not np.all(np.isfinite(cycle)):
        return math.inf
    return float(np.abs(np.linalg.eigvals(cycle)).max())


def ratio_critical_a(mu: Any, k_ref: Any, stale: float = 0.0, momentum: str = "heavy_ball") -> float:
    """Critical ``a = eta K`` of a reused batch with the importance ratio, when a share of the force is stale.

    Our derivation (module docstring). Within one generation batch of ``k_ref`` optimizer steps (the
    refresh lag, TRL's ``steps_per_generation x num_iterations``) the linearised expected gradient is
    ``-(1 + s) e_k + s e_old`` in units of ``K``, with ``e_old`` the deviation when the batch was
    generated and ``s = c / K`` the stale share. The threshold is the smallest ``a`` at which the
    one-cycle map has a root of modulus 1 (scan of ``a``, then Brent's method to 1e-12).

    ``s = 0``: the mean baseline (the lag drops out exactly), ``2 (1 + mu)`` for heavy ball at every
    ``k_ref``. ``s != 0``: std scaling; two arms, uniform reference, ``G -> inf``:
    ``s = c / K`` with ``c = (2 p* - 1) sqrt(p* (1 - p*))``, ``K = 2 beta p* (1 - p*) - c``. At finite
    ``G`` measure ``c`` on the bandit (``dF/dx_old`` of the expected surrogate gradient).
    ``k_ref = 1`` gives the on-policy threshold whatever ``s``.

    Parameters
    ----------
    mu : float in [0, 1)
        Momentum.
    k_ref : int >= 1
        Optimizer steps per generation batch.
    stale : float
        ``s = c / K``, the share of the restoring force computed from the old policy (dimensionless;
        0.14 for std scaling at ``beta = 3``, ``G -> inf``).
    momentum : {"heavy_ball", "ema"}
        ``v = mu v + g`` or ``v = mu v + (1 - mu) g`` (Adam's ``beta_1``; the gain is ``(1 - mu) a``).

    Returns
    -------
    float
        The critical ``a = eta K`` (per optimizer step); ``inf`` if none up to a gain of 64.

    Raises
    ------
    ParameterError
        ``mu`` outside [0, 1), ``k_ref`` not an integer >= 1, ``stale`` not finite, unknown
        ``momentum``.

    References
    ----------
    Our derivation; book chapter "The bandit: where the mean field is exact", section "Thresholds:
    measured against both predictions".

    Examples
    --------
    >>> round(ratio_critical_a(0.5, 8), 6)
    3.0
    >>> round(ratio_critical_a(0.0, 8, stale=0.1371), 3)
    1.759
    """
    from scipy.optimize import brentq

    m = check_mu(mu)
    k = check_k_ref(k_ref)
    s = check_real("stale", stale)
    style = check_momentum(momentum)
    scale = 1.0 - m if style == "ema" else 1.0
    gains = np.geomspace(1e-4, 64.0, 800)
    i = next((j for j, g in enumerate(gains) if _refresh_cycle_radius(g, m, k, s) > 1.0 + 1e-12), None)
    if i is None:
        return math.inf
    if i == 0:
        return float(gains[0] / scale)
    root = brentq(lambda g: _refresh_cycle_radius(g, m, k, s) - 1.0, gains[i - 1], gains[i], xtol=1e-12)
    return float(root / scale)
