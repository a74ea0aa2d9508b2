"""No update: the gradient norm is zero while groups have reward spread (nothing reaches the weights)."""

from __future__ import annotations

import numpy as np

from ..logs import RunLog
from .findings import Finding
from .series import _need, _too_few


def no_update(log: RunLog) -> Finding | None:
    """Check for a gradient norm of exactly 0 on (almost) every step while groups have spread.

    Groups with reward spread have non-zero advantages, so a zero gradient on their steps means the
    update does not reach the weights (frozen or detached parameters, a learning-rate or loss
    misconfiguration). Critical when ``grad_norm`` is 0 on at least 95% of the steps and the groups
    had spread on average on at least a quarter of them (``1 - frac_reward_zero_std``; without it,
    ``reward_std > 0`` on at least a quarter). A run whose zero gradients come with zero spread is
    advantage degeneration, not this.

    Parameters
    ----------
    log : RunLog
        Needs ``grad_norm`` and ``frac_reward_zero_std`` or ``reward_std``.

    Returns
    -------
    Finding or None
        ``None`` unless ``grad_norm`` is 0 on 95% of the steps while the groups had spread on a quarter.

    Raises
    ------
    DataError
        A column missing, or fewer than 5 steps with both.

    Examples
    --------
    >>> from grpo_core.runs.logs import from_records
    >>> recs = [{"step": s, "reward": 0.5, "grad_norm": 0.0, "kl": 0.0, "frac_reward_zero_std": 0.5}
    ...         for s in range(1, 31)]
    >>> no_update(from_records(recs)).severity
    'critical'
    """
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
    if ev.get("kl_zero_fraction", 0) >= 0.95:
        msg += "; the KL to the reference is 0 too: the policy never moved"
    return Finding("no_update", "critical", (first, last), first, ev, msg + ".")
