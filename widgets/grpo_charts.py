"""Altair charts of the GRPO update (book chapter "The GRPO update").

* :func:`clip_objective_data` / :func:`clip_objective_chart` -- the clipped surrogate
  ``min(rho A, clip(rho) A)`` and its gradient weight against the importance ratio, for a positive
  and a negative advantage, with the symmetric clip and DAPO's clip-higher.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.errors import ParameterError
from grpo_core.grpo import clipped_surrogate
from grpo_core.validation import check_array

from .style import require_columns

__all__ = ["clip_objective_data", "clip_objective_chart"]


def clip_objective_data(ratios=None, clip_settings: Sequence[tuple[str, float, float]] = (
        ("epsilon = 0.2", 0.2, 0.2), ("clip-higher: 0.2 / 0.28", 0.2, 0.28))) -> pd.DataFrame:
    """The clipped surrogate and its gradient weight on a grid of importance ratios.

    Parameters
    ----------
    ratios : array_like, optional
        Importance ratios rho > 0 (default: 0.5 to 1.6).
    clip_settings : sequence of (label, eps_low, eps_high)

    Returns
    -------
    pandas.DataFrame
        Columns ``clip``, ``advantage`` ("A = +1" / "A = -1"), ``ratio``, ``objective`` (per unit
        |A|), ``weight`` (d objective / d log pi: ``rho A`` where the clip is inactive, 0 where it is
        active) and ``clipped``; computed with :func:`grpo_core.grpo.clipped_surrogate`.

    Raises
    ------
    ParameterError
        Non-positive ratios or bad clip ranges.

    Examples
    --------
    >>> df = clip_objective_data([0.5, 1.0, 1.5])
    >>> df[(df["advantage"] == "A = +1") & (df["clip"] == "epsilon = 0.2")]["objective"].round(6).tolist()
    [0.5, 1.0, 1.2]
    """
    r = np.linspace(0.5, 1.6, 221) if ratios is None else check_array("ratios", ratios, ndim=1, min_size=1)
    if np.any(r <= 0):
        raise ParameterError("ratios", "`ratios` must be > 0")
    frames = []
    for label, lo, hi in clip_settings:
        for adv in (1.0, -1.0):
            t = clipped_surrogate(np.log(r), np.zeros_like(r), adv, eps_low=lo, eps_high=hi)
            frames.append(
                pd.DataFrame(
                    {
                        "clip": label,
                        "advantage": f"A = {adv:+.0f}",
                        "ratio": r,
                        "objective": t.objective,
                        "weight": t.grad_logp,
                        "clipped": t.clipped,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def clip_objective_chart(data: pd.DataFrame, *, width: int = 270, height: int = 200) -> alt.VConcatChart:
    """Objective (top) and gradient weight (bottom) against the ratio, one column per advantage sign.

    Parameters
    ----------
    data : DataFrame
        From :func:`clip_objective_data`.
    width, height : int

    Returns
    -------
    alt.VConcatChart
        Two rows (objective, gradient weight), coloured by clip setting.

    Raises
    ------
    ParameterError
        ``data`` lacks one of its columns above.
    """
    require_columns(data, "data", ["clip", "advantage", "ratio", "objective", "weight"],
                    source="clip_objective_data")
    color = alt.Color("clip:N", title=None, legend=alt.Legend(orient="bottom"))
    x = alt.X("ratio:Q", title="importance ratio rho = pi / pi_old")
    top = alt.Chart(data).mark_line().encode(
        x=x, y=alt.Y("objective:Q", title="min(rho A, clip(rho) A)"), color=color,
        strokeDash=alt.StrokeDash("clip:N", legend=None),
    ).properties(width=width, height=height).facet(column=alt.Column("advantage:N", title=None))
    bottom = alt.Chart(data).mark_line().encode(
        x=x, y=alt.Y("weight:Q", title="gradient weight on log pi"), color=color,
        strokeDash=alt.StrokeDash("clip:N", legend=None),
    ).properties(width=width, height=height * 0.7).facet(column=alt.Column("advantage:N", title=None))
    return alt.vconcat(top, bottom)
