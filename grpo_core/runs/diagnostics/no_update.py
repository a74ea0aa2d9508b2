"""No update: the gradient norm is zero while groups have reward spread (nothing reaches the weights)."""

from __future__ import annotations

import numpy as np

from ..logs import RunLog
from .findings import Finding
from .series import _need, _quiet_series, _too_few


def no_update(log: RunLog) -> Finding | None:
    """Check for a learning rate that cannot update, or a gradient norm of exactly 0 on (almost) every step
    while groups have spread.

    A ``learning_rate`` column with no positive value (over 5 logged steps at least) is a finding whatever
    the other columns say: 0 on every step is critical (no update can happen: a scheduler or config that
    zeroes the rate); negative on every step (or 0 and negative) is a warning (a standard optimizer refuses
    a negative rate, so the column does not say what the optimizer used; if it was applied, the update
    climbs the loss).

    Groups with reward spread have non-zero advantages, so a zero gradient on their steps means the
    update does not reach the weights (frozen or detached parameters, a learning-rate or loss
    misconfiguration). Critical when ``grad_norm`` is 0 on at least 95% of the steps and the groups
    had spread on average on at least a quarter of them (``1 - frac_reward_zero_std``; without it,
    ``reward_std > 0`` on at least a quarter). A run whose zero gradients come with zero spread is
    advantage degeneration, not this.

    Parameters
    ----------
    log : RunLog
        Needs ``learning_rate``, or ``grad_norm`` and ``frac_reward_zero_std`` or ``reward_std``.

    Returns
    -------
    Finding or None
        ``None`` unless the learning rate is never positive, or ``grad_norm`` is 0 on 95% of the steps while
        the groups had spread on a quarter.

    Raises
    ------
    DataError
        (When the learning rate has a positive value or is not logged) ``grad_norm`` or both spread columns
        missing, or fewer than 5 steps with both.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "reward": 0.5, "grad_norm": 0.0, "kl": 0.0, "frac_reward_zero_std": 0.5}
    ...         for s in range(1, 31)]
    >>> no_update(from_records(recs)).severity
    'critical'
    >>> no_update(from_records([{"step": s, "reward": 0.5, "learning_rate": 0.0} for s in range(1, 31)])).message
    'No update: the learning rate is 0 on every step (1-30): no update can happen, whatever the gradient.'
    """
    lr = _learning_rate_finding(log)
    if lr is not None:
        return lr
    _need(log, "no_update", "grad_norm")
    spread_col = "frac_reward_zero_std" if log.has("frac_reward_zero_std") else "reward_std"
    _need(log, "no_update", spread_col)
    table = log.train[["grad_norm", spread_col]].dropna()
    table = table[np.isfinite(table.to_numpy(float)).all(axis=1)]
    if len(table) < 5:
        raise _too_few(log, "no_update", 5, f"steps with grad_norm and {spread_col}", len(table))
    g = table["grad_norm"].to_numpy(float)
    s = table[spread_col].to_numpy(float)
    spread = (1.0 - s) if spread_col == "frac_reward_zero_std" else (s > 1e-12).astype(float)
    zero = float(np.mean(np.abs(g) <= 1e-12))
    with_spread = float(np.mean(spread))
    if zero < 0.95 or with_spread < 0.25:
        return None
    ev = {"grad_norm_zero_fraction": zero, "spread_fraction": with_spread, "spread_column": spread_col}
    if log.has("kl"):
        kl = log.series("kl", finite=True)[1]
        ev["kl_zero_fraction"] = float(np.mean(np.abs(kl) <= 1e-12))
    first, last = int(table.index[0]), int(table.index[-1])
    msg = (f"No update: grad_norm is 0 on {zero:.0%} of steps {first}-{last} while {with_spread:.0%} of the groups "
           "(on average) had reward spread, hence non-zero advantages")
    if ev.get("kl_zero_fraction", 0) >= 1.0:
        # a KL 0 on every step may also be one that is not computed (series.ZERO_MEANS_NOT_COMPUTED)
        msg += "; the KL to the reference is 0 on every step too (the policy never moved, or the KL is not computed)"
    elif ev.get("kl_zero_fraction", 0) >= 0.95:
        msg += "; the KL to the reference is 0 too: the policy never moved"
    return Finding("no_update", "critical", (first, last), first, ev, msg + ".")


def _span(v: np.ndarray) -> str:
    lo, hi = float(np.min(v)), float(np.max(v))
    return f"{lo:.3g} on every step" if lo == hi else f"from {lo:.3g} to {hi:.3g}"


def _learning_rate_finding(log: RunLog) -> Finding | None:
    """The finding of a logged learning rate with no positive value (0 on every step: critical; negative:
    warning), or ``None`` (no such column, fewer than 5 values, or some positive value)."""
    if not log.has("learning_rate"):
        return None
    st, lr = _quiet_series(log, "learning_rate")
    # five logged values at least (as the gradient test): the first steps of a warmup from 0 are no finding
    if lr.size < 5 or np.any(lr > 0):
        return None
    first, last = int(st[0]), int(st[-1])
    ev = {"learning_rate_min": float(np.min(lr)), "learning_rate_max": float(np.max(lr)),
          "learning_rate_steps": int(lr.size)}
    if np.all(lr == 0):
        return Finding("no_update", "critical", (first, last), first, ev,
                       f"No update: the learning rate is 0 on every step ({first}-{last}): no update can happen, "
                       "whatever the gradient.",
                       "set a positive learning_rate (and check the scheduler: warmup that never ends, a decay "
                       "to 0 at the first step)")
    return Finding("no_update", "warning", (first, last), first, ev,
                   f"The logged learning rate is never positive ({_span(lr)} over steps {first}-{last}): a "
                   "standard optimizer refuses a negative rate, so the column does not say what the optimizer "
                   "used; if it was applied, the update climbs the loss.",
                   "check the learning_rate in the config and what the logger writes (a sign flipped, a logged "
                   "log-rate)")
