"""Group-size explorer: rollout budget N, prompt-difficulty spread and G; the MSE curves and G*.

A live-kernel explorer over :mod:`grpo_core.groupsize`: a pool of prompts whose initial success
probability follows a Beta distribution (:func:`~grpo_core.groupsize.beta_difficulty_pool`), its
exact constants c1, c2, c3 (:func:`~grpo_core.groupsize.pool_constants`), the minibatch MSE of
each estimator against G at a fixed budget N = B G (:func:`~grpo_core.groupsize.minibatch_mse`) and
the optimum G* (:func:`~grpo_core.groupsize.optimal_group_size`,
:func:`~grpo_core.groupsize.best_group_size`). The chart is
:func:`widgets.ustat_charts.explorer_mse_chart`.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import pandas as pd

from grpo_core import groupsize

from . import ustat_charts
from ._controls import Explorer, NumberControl, readout_table, toggle
from .ustat_charts import GROUP_SIZE_DEFAULTS

__all__ = ["GroupSizeExplorer", "group_size_explorer", "compute_group_size_view", "DEFAULTS"]

#: The explorer's initial setting: the book's one default pool (mean 0.2, spread 0.1, N = 1024,
#: :data:`widgets.ustat_charts.GROUP_SIZE_DEFAULTS`) and G = 16.
DEFAULTS = {**GROUP_SIZE_DEFAULTS, "group_size": 16}
_D = DEFAULTS

RANGES = {
    "budget": (8, 8192),
    "spread": (0.0, 0.45),
    "mean": (0.05, 0.95),
    "group_size": (2, 8192),
}
#: Prompts in the pool (the constants are exact for this quadrature of the Beta distribution).
POOL_PROMPTS = 256
POOL_ARMS = 8


def compute_group_size_view(budget: int, spread: float, group_size: int, *, mean: float = _D["mean"],
                            correct_sets: str = "shared") -> dict:
    """What the group-size explorer shows, computed by :mod:`grpo_core.groupsize`.

    Parameters
    ----------
    budget : int >= 8
        Rollouts per step N = B G.
    spread : float >= 0
        Standard deviation of the prompts' initial success probability (below
        ``sqrt(mean (1 - mean))``).
    group_size : int >= 2
        The G to compare with the optimum; must divide ``budget``.
    mean : float in (0, 1)
        Mean initial success probability.
    correct_sets : {"shared", "random"}
        See :func:`grpo_core.groupsize.beta_difficulty_pool`.

    Returns
    -------
    dict
        ``constants`` (:class:`~grpo_core.groupsize.GroupSizeConstants`), ``g_star`` (leading
        order), ``g_star_exact``, ``best_g`` (best G dividing N), ``curves``
        (a DataFrame with columns ``group_size``, ``num_prompts``, ``estimator``, ``mse``: the
        leave-one-out and plain-mean estimators, exact law, for every G >= 2 dividing N),
        ``mse_at_g`` and ``mse_best`` (leave-one-out), ``ratio`` (their quotient, >= 1).

    Raises
    ------
    ParameterError
        Out-of-range inputs, or a ``group_size`` that does not divide ``budget``.

    Examples
    --------
    >>> v = compute_group_size_view(1024, 0.1, 8)
    >>> v["best_g"], round(v["g_star_exact"], 2)
    (8, 7.77)
    """
    pool = groupsize.beta_difficulty_pool(POOL_PROMPTS, POOL_ARMS, mean=mean, spread=spread,
                                          correct_sets=correct_sets)
    k = groupsize.pool_constants(pool)
    n = int(budget)
    candidates = groupsize.group_size_candidates(n)
    g = np.array(candidates, dtype=float)
    rows = []
    for estimator in ("leave_one_out", "mean"):
        mse = k.mse(g, budget=n, estimator=estimator)
        rows.append(pd.DataFrame({"group_size": g.astype(int), "num_prompts": (n // g).astype(int),
                                  "estimator": estimator, "mse": mse}))
    curves = pd.concat(rows, ignore_index=True)
    best = groupsize.best_group_size(n, k.c1, k.c2, k.c3)
    mse_g = float(k.mse(group_size, budget=n))
    mse_best = float(k.mse(best, budget=n))
    return {
        "constants": k,
        "g_star": k.g_star,
        "g_star_exact": k.g_star_exact,
        "best_g": best,
        "curves": curves,
        "group_size": int(group_size),
        "budget": n,
        "mse_at_g": mse_g,
        "mse_best": mse_best,
        "ratio": mse_g / mse_best,
    }


class GroupSizeExplorer(Explorer):
    """The widget returned by :func:`group_size_explorer` (see there)."""

    def __init__(self, *, budget=_D["budget"], spread=_D["spread"], group_size=_D["group_size"], mean=_D["mean"],
                 correct_sets="shared"):
        super().__init__()
        r = RANGES
        self.controls = {
            "budget": NumberControl("budget", "N (rollouts/step)", budget, *r["budget"], integer=True,
                                    log=True),
            "spread": NumberControl("spread", "difficulty spread", spread, *r["spread"], 0.005),
            "mean": NumberControl("mean", "mean success p", mean, *r["mean"], 0.01),
            "group_size": NumberControl("group_size", "G (group size)", group_size, *r["group_size"],
                                        integer=True, log=True),
        }
        self.correct_sets = toggle("correct_sets", [("one skill (shared)", "shared"),
                                                    ("different skills", "random")], correct_sets, "prompts")
        self.readout = widgets.HTML()
        self._output("mse")
        for c in self.controls.values():
            c.observe_value(lambda _: self.update())
        self.correct_sets.observe(lambda _: self.update(), names="value")
        self.children = [
            widgets.HTML("<b>Group-size explorer</b>: the minibatch gradient's error against G at a "
                         "fixed rollout budget"),
            widgets.HBox([widgets.VBox([*self.controls.values(), self.correct_sets]), self.readout],
                         layout={"flex_flow": "row wrap"}),
            self.status,
            self.outputs["mse"],
        ]
        self.view: dict | None = None
        self.update()

    def update(self) -> None:
        """Recompute and redraw from the current controls."""
        self._begin()
        self._run(self._update)

    def _update(self) -> None:
        p = {k: c.value for k, c in self.controls.items()}
        view = compute_group_size_view(p["budget"], p["spread"], p["group_size"], mean=p["mean"],
                                       correct_sets=self.correct_sets.value)
        self.view = view
        k = view["constants"]
        self.values = {key: view[key] for key in ("g_star", "g_star_exact", "best_g", "mse_at_g",
                                                  "mse_best", "ratio", "group_size", "budget")}
        self.values.update(c1=k.c1, c2=k.c2, c3=k.c3)
        def star(x):
            return "∞ (no between-prompt variance)" if x > 1e6 else f"{x:.3g}"

        self.readout.value = readout_table([
            ("c1 (between prompts)", f"{k.c1:.3g}"),
            ("c2 (oracle, within)", f"{k.c2:.3g}"),
            ("c3 (second order)", f"{k.c3:.3g}"),
            ("G* = 1 + sqrt(c3/c1) (exact)", star(view["g_star_exact"])),
            ("G* = sqrt(c3/c1) (paper's law)", star(view["g_star"])),
            ("best feasible G (power of 2 | N)", str(view["best_g"])),
            (f"MSE at G = {view['group_size']} / at best", f"{view['ratio']:.3f}×"),
        ])
        self._chart("mse", ustat_charts.explorer_mse_chart(view))


def group_size_explorer(budget: int = _D["budget"], spread: float = _D["spread"],
                        group_size: int = _D["group_size"], *, mean: float = _D["mean"],
                        correct_sets: str = "shared") -> GroupSizeExplorer:
    """Interactive fixed-budget trade-off: more prompts (small G) or more samples per prompt (large G).

    The defaults are the book's one default pool (:data:`DEFAULTS`: N = 1024, spread 0.1,
    mean 0.2, the pool of the group-size chapter) with G = 16.

    Parameters
    ----------
    budget : int in [8, 8192]
        Rollouts per step N = B G.
    spread : float in [0, 0.45]
        Standard deviation of the prompts' initial success probability (between-prompt variance
        of the true gradient grows with it, which lowers G*).
    group_size : int in [2, 8192]
        The G marked on the chart; a G that does not divide N shows a message.
    mean : float in [0.05, 0.95]
        Mean initial success probability.
    correct_sets : {"shared", "random"}
        Prompts that exercise one skill (parallel gradients) or different ones.

    Returns
    -------
    GroupSizeExplorer
        An :class:`ipywidgets.VBox`: display it. ``.values`` holds ``g_star``, ``g_star_exact``,
        ``best_g``, ``c1``, ``c2``, ``c3`` and the MSE ratio shown.

    Raises
    ------
    ValueError
        If an initial value lies outside its control's range.

    Examples
    --------
    >>> ex = group_size_explorer(group_size=8)   # the default pool: mean 0.2, spread 0.1, N = 1024
    >>> ex.values["best_g"], round(ex.values["ratio"], 3)
    (8, 1.0)
    """
    return GroupSizeExplorer(budget=budget, spread=spread, group_size=group_size, mean=mean,
                             correct_sets=correct_sets)
