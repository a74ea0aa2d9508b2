"""The GRPO policy gradient as a U-statistic: per-group estimators and their exact error.

``estimators``
    The five per-group estimators of one prompt's gradient (vanilla, oracle, leave-one-out, mean,
    std; :func:`group_gradient`), the U-statistic kernel, its O(G^2) pairwise form and the
    Hoeffding split into the oracle's error and a degenerate part.
``moments``
    Exact moments on the softmax bandit (:func:`bandit_moments`, :func:`bandit_traces`) and from
    them the exact finite-G MSE of each estimator (:meth:`BanditMoments.mse`, :func:`std_scaled_mse`).
``montecarlo``
    A Monte Carlo on the bandit's sufficient statistics (O(A) per group whatever G is;
    :func:`monte_carlo_mse`) and :func:`loglog_slope`.

References
----------
Our derivation, book chapter "The GRPO gradient is a U-statistic"; Hoeffding (1948);
"Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025).
"""

from .estimators import (
    ESTIMATORS,
    check_groups,
    group_gradient,
    hoeffding_parts,
    pairwise_leave_one_out,
    u_kernel,
)
from .moments import (
    EXACT_ESTIMATORS,
    BanditMoments,
    BanditTraces,
    bandit_moments,
    bandit_traces,
    std_scaled_mse,
)
from .montecarlo import gradients_from_counts, loglog_slope, monte_carlo_mse, sample_bandit_gradients

__all__ = [
    "ESTIMATORS",
    "EXACT_ESTIMATORS",
    "check_groups",
    "group_gradient",
    "u_kernel",
    "pairwise_leave_one_out",
    "hoeffding_parts",
    "BanditMoments",
    "BanditTraces",
    "bandit_traces",
    "bandit_moments",
    "gradients_from_counts",
    "sample_bandit_gradients",
    "monte_carlo_mse",
    "std_scaled_mse",
    "loglog_slope",
]
