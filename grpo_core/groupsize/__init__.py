"""Choosing the group size G under a fixed rollout budget.

``ustat``
    The GRPO policy gradient of one prompt as a U-statistic: the per-group estimators, the
    Hoeffding split, exact moments on the softmax bandit and a fast Monte Carlo.
``law``
    The minibatch MSE law ``(1/B)(c1 + c2/G + c3/(G(G-1)))`` (:class:`GroupSizeConstants`,
    :func:`minibatch_mse`), its fixed-budget optimum G* (:func:`optimal_group_size`,
    :func:`best_group_size`, over every divisor of N: :func:`group_size_candidates`) and B = N/G
    (:func:`num_prompts_for_budget`).
``pool``
    The contextual softmax bandit (:class:`PromptPool`), whose constants are exact
    (:func:`pool_constants`), and a Monte Carlo check of the law on it.
``estimate``
    Unbiased estimates of c1, c2, c3 with bootstrap intervals from any model's samples
    (:func:`estimate_constants`).
``study``
    The fixed-budget training study on the bandit (:func:`train_fixed_budget`,
    :func:`summarise_study`, :func:`study_path`, :func:`study_logits`).

References
----------
Our derivation, book chapters "The GRPO gradient is a U-statistic" and "Choosing the group size";
"Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025).
"""

from .estimate import estimate_constants
from .law import (
    MAX_BUDGET,
    GroupSizeConstants,
    best_group_size,
    group_size_candidates,
    minibatch_mse,
    num_prompts_for_budget,
    optimal_group_size,
)
from .pool import (
    PromptPool,
    beta_difficulty_pool,
    constants_by_spread,
    minibatch_mse_monte_carlo,
    pool_constants,
    sample_pool_groups,
    spread_for_optimal_group_size,
)
from .study import study_logits, study_path, summarise_study, train_fixed_budget

__all__ = [
    "PromptPool",
    "beta_difficulty_pool",
    "GroupSizeConstants",
    "pool_constants",
    "constants_by_spread",
    "spread_for_optimal_group_size",
    "estimate_constants",
    "num_prompts_for_budget",
    "minibatch_mse",
    "optimal_group_size",
    "best_group_size",
    "group_size_candidates",
    "sample_pool_groups",
    "minibatch_mse_monte_carlo",
    "train_fixed_budget",
    "summarise_study",
    "study_path",
    "study_logits",
    "MAX_BUDGET",
]
