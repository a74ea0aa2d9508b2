"""Constructed GRPO training logs, healthy or showing one failure mode on purpose (test data).

:func:`synthetic_log` is tuned together with the thresholds of :mod:`grpo_core.runs.diagnostics`
that it tests; it lives apart from them so that no check can depend on it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..validation import check_choice, check_integer
from .diagnostics import MODES
from .logs import RunLog, from_frame

__all__ = ["synthetic_log", "SYNTHETIC_KINDS"]

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
    >>> from grpo_core.runs.diagnostics import diagnose
    >>> log = synthetic_log("advantage_degeneration", n_steps=100)
    >>> diagnose(log, group_size=2, forecast=False).modes
    ['advantage_degeneration', 'not_learning']
    """
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
