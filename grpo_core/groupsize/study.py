"""The fixed-budget training study: does the best G in training match G*?

:func:`train_fixed_budget` trains the contextual bandit with GRPO at a fixed rollout budget for
several G and seeds; :func:`summarise_study` gives each G's mean reward with its standard error
and the G tied with the best; :func:`study_path` compares the predicted G* along training with the
best G; :func:`study_logits` reads back the logits a study recorded.

References
----------
Our measurement, book chapter "Choosing the group size", section "Does the best G in training
match G*?".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..grpo import DEFAULT_STD_EPS, group_advantages
from ..softmax import arm_counts, sample_categorical, softmax
from ..validation import check_choice, check_instance, check_integer, check_memory, check_real
from .law import num_prompts_for_budget, optimal_group_size
from .pool import PromptPool, _draw_rewards, check_pool, pool_constants


def train_fixed_budget(
    pool: PromptPool,
    budget: int,
    group_sizes,
    *,
    num_seeds: int = 8,
    num_steps: int = 200,
    learning_rate: float = 1.0,
    optimizer: str = "sgd",
    adam_betas: tuple[float, float] = (0.9, 0.999),
    checkpoints=None,
    baseline: str = "leave_one_out",
    scale: str = "none",
    eps: float = DEFAULT_STD_EPS,
    seed: int = 0,
    record_theta: bool = False,
    progress: bool = False,
) -> pd.DataFrame:
    """Train the contextual bandit with GRPO at a fixed rollout budget, for several G and seeds.

    Each step: for every seed, draw B = N/G prompts uniformly from the pool, G arms per prompt
    from pi_x = softmax(theta + offsets[x]), rewards, group advantages
    (:func:`grpo_core.grpo.group_advantages`), the gradient estimate

        g_hat = (1/(B G)) sum_{b, i} A_{b,i} (e_{a_{b,i}} - pi_{x_b}),

    and one ascent step: plain SGD ``theta += learning_rate * g_hat``, or Adam (bias-corrected,
    epsilon 1e-8), whose per-coordinate normalisation makes progress depend on the gradient's
    signal-to-noise ratio, as in LLM training.

    On-policy (importance ratio 1, so the clipped surrogate's gradient is this one), no KL: the
    setting of the U-statistic analysis. The reward recorded is the exact objective
    J(theta) = E_x p_x(theta) (no evaluation noise).

    Parameters
    ----------
    pool : PromptPool
        The prompt distribution.
    budget : int
        N, rollouts per step (every G must divide it: see :func:`num_prompts_for_budget`).
    group_sizes : sequence of int, each in [2, N]
        The G values compared.
    num_seeds : int, >= 1
        Independent runs per G (vectorised).
    num_steps : int, >= 1
        Optimizer steps.
    learning_rate : float, > 0
        Step size eta (per optimizer step).
    optimizer : {"sgd", "adam"}
        Update rule.
    adam_betas : (float, float), each in [0, 1)
        Adam's beta1 (momentum, EMA convention) and beta2.
    checkpoints : sequence of int, optional
        Steps at which J is recorded (0 = before training; default: 0, 10 %, ..., 100 % of
        ``num_steps``).
    baseline : {"leave_one_out", "mean", "none"}
        Group baseline (see :func:`grpo_core.grpo.group_advantages`).
    scale : {"none", "group_std"}
        Optional std scaling of the advantages.
    eps : float, > 0
        Std epsilon.
    seed : int
        Seed; G value k uses the stream ``(seed, k)``, so adding a G leaves the others unchanged.
    record_theta : bool
        Also record the logits at each checkpoint (columns ``theta_0`` .. ``theta_{A-1}``), e.g.
        to recompute the constants along training with :func:`pool_constants`.
    progress : bool
        Show a tqdm bar over the group sizes.

    Returns
    -------
    pandas.DataFrame
        Columns ``budget``, ``group_size``, ``num_prompts``, ``seed``, ``step``, ``reward``
        (and the logits when ``record_theta``); one row per (G, seed, checkpoint).

    Raises
    ------
    ParameterError
        Indivisible budget, G outside [2, N], other arguments outside their ranges.

    Notes
    -----
    Runs are vectorised over seeds; the group sizes run one after the other because their
    arrays have different shapes (B x G with B = N/G).

    Examples
    --------
    >>> from grpo_core.groupsize import beta_difficulty_pool
    >>> pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.1)
    >>> df = train_fixed_budget(pool, 16, [2, 4], num_seeds=2, num_steps=5, checkpoints=[0, 5])
    >>> df.groupby(["group_size", "step"]).size().tolist()
    [2, 2, 2, 2]
    """
    check_pool(pool)
    n = check_integer("budget", budget, low=2)
    check_memory("budget", n, 8 * 4 * pool.num_arms, what=f"a sample's {pool.num_arms} arms x 4 arrays")
    sizes = [check_integer("group_sizes", g, low=2, high=n) for g in np.atleast_1d(group_sizes)]
    prompts = [num_prompts_for_budget(n, g) for g in sizes]
    s = check_integer("num_seeds", num_seeds, low=1)
    check_memory("num_seeds", s, 8 * 4 * n * pool.num_arms,
                 what=f"a seed's {n} samples x {pool.num_arms} arms x 4 arrays")
    t_max = check_integer("num_steps", num_steps, low=1)
    lr = check_real("learning_rate", learning_rate, low=0.0, low_inclusive=False)
    check_choice("baseline", baseline, ("leave_one_out", "mean", "none"))
    check_choice("scale", scale, ("none", "group_std"))
    check_choice("optimizer", optimizer, ("sgd", "adam"))
    beta1 = check_real("adam_betas", adam_betas[0], low=0.0, high=1.0, high_inclusive=False)
    beta2 = check_real("adam_betas", adam_betas[1], low=0.0, high=1.0, high_inclusive=False)
    if checkpoints is None:
        marks = sorted({int(round(t_max * f)) for f in np.linspace(0, 1, 11)})
    else:
        marks = sorted({check_integer("checkpoints", c, low=0, high=t_max) for c in np.atleast_1d(checkpoints)})
    iterator = list(zip(range(len(sizes)), sizes, prompts))
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc=f"N={n}", leave=False)
    rows = []
    a_count = pool.num_arms
    for k, g, b in iterator:
        rng = np.random.default_rng([seed, k])
        theta = np.zeros((s, a_count))
        m1, m2 = np.zeros_like(theta), np.zeros_like(theta)
        curve = {}
        for step in range(t_max + 1):
            if step in marks:
                curve[step] = (pool.expected_reward(theta), theta.copy())
            if step == t_max:
                break
            x = rng.integers(pool.num_prompts, size=(s, b))
            probs = softmax(theta[:, None, :] + pool.offsets[x])  # (S, B, A)
            arms = sample_categorical(probs, g, rng)  # (S, B, G)
            z = _draw_rewards(pool, x, arms, rng)
            adv = group_advantages(z, baseline=baseline, scale=scale, eps=eps)
            weighted = arm_counts(arms, a_count, weights=adv)  # sum_i A_i e_{a_i}
            grad = (weighted - adv.sum(axis=-1, keepdims=True) * probs).sum(axis=1) / (b * g)
            if optimizer == "sgd":
                theta = theta + lr * grad
            else:
                m1 = beta1 * m1 + (1 - beta1) * grad
                m2 = beta2 * m2 + (1 - beta2) * grad**2
                m_hat, v_hat = m1 / (1 - beta1 ** (step + 1)), m2 / (1 - beta2 ** (step + 1))
                theta = theta + lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        for step, (values, thetas) in curve.items():
            for i, v in enumerate(values):
                row = {"budget": n, "group_size": g, "num_prompts": b, "seed": i, "step": step, "reward": float(v)}
                if record_theta:
                    row.update({_logit_column(j): float(t) for j, t in enumerate(thetas[i])})
                rows.append(row)
    return pd.DataFrame(rows)


def summarise_study(study: pd.DataFrame) -> pd.DataFrame:
    """Mean reward and its standard error per (budget, step, group size), with the best G marked.

    Parameters
    ----------
    study : pandas.DataFrame
        Output of :func:`train_fixed_budget` (several budgets may be concatenated).

    Returns
    -------
    pandas.DataFrame
        Columns ``budget``, ``step``, ``group_size``, ``reward``, ``reward_se``, ``best`` (the G
        with the highest mean reward at that budget and step), ``within_se`` (G whose mean is
        within two standard errors of the best: statistically indistinguishable from it).

    Raises
    ------
    ParameterError
        ``study`` lacks one of the columns ``budget``, ``group_size``, ``seed``, ``step``, ``reward``.

    Examples
    --------
    >>> df = pd.DataFrame({"budget": 8, "group_size": [2, 2, 4, 4], "seed": [0, 1, 0, 1],
    ...                    "step": 1, "reward": [0.5, 0.6, 0.7, 0.8]})
    >>> summarise_study(df)[["group_size", "best"]].values.tolist()
    [[2, False], [4, True]]
    """
    check_instance("study", study, pd.DataFrame, "the DataFrame of train_fixed_budget(...)")
    need = {"budget", "group_size", "seed", "step", "reward"}
    missing = need - set(study.columns)
    if missing:
        raise ParameterError("study", f"`study` lacks column(s) {sorted(missing)}")
    grouped = study.groupby(["budget", "step", "group_size"])["reward"]
    out = grouped.agg(reward="mean", sd="std", n="count").reset_index()
    out["reward_se"] = (out["sd"] / np.sqrt(out["n"])).fillna(0.0)
    out = out.drop(columns=["sd", "n"])
    best_idx = out.groupby(["budget", "step"])["reward"].idxmax()
    out["best"] = False
    out.loc[best_idx, "best"] = True
    top = out.loc[best_idx, ["budget", "step", "reward", "reward_se"]]
    joined = out.merge(top, on=["budget", "step"], how="left", suffixes=("", "_top"))
    gap = joined["reward_top"] - joined["reward"]
    out["within_se"] = gap <= 2.0 * np.hypot(joined["reward_se"], joined["reward_se_top"])
    return out


def study_path(study: pd.DataFrame, pool: PromptPool, *, reference_group_size: int) -> pd.DataFrame:
    """Predicted G* along training against the study's empirically best G, per budget and checkpoint.

    The constants change as the policy learns. At each checkpoint the exact constants are
    computed at every seed's logits of the ``reference_group_size`` run and averaged over seeds
    (the constants are expectations, so they average); G* = 1 + sqrt(c3/c1) follows.

    Parameters
    ----------
    study : pandas.DataFrame
        :func:`train_fixed_budget` output with ``record_theta=True`` (several budgets may be
        concatenated).
    pool : PromptPool
        The pool the study trained on.
    reference_group_size : int
        Which run's policies to take the constants from (runs at different G learn at slightly
        different speeds).

    Returns
    -------
    pandas.DataFrame
        Columns ``budget``, ``step``, ``c1``, ``c2``, ``c3``, ``g_star`` (exact), ``best_g`` (highest
        mean reward), ``tied_low`` and ``tied_high`` (smallest and largest G within two standard
        errors of the best, see :func:`summarise_study`).

    Raises
    ------
    ParameterError
        No logits recorded, or no run at ``reference_group_size``.

    Examples
    --------
    >>> from grpo_core.groupsize import beta_difficulty_pool
    >>> pool = beta_difficulty_pool(32, 4, mean=0.3, spread=0.1)
    >>> st = train_fixed_budget(pool, 16, [2, 4], num_seeds=2, num_steps=4, checkpoints=[0, 4],
    ...                         record_theta=True)
    >>> study_path(st, pool, reference_group_size=4)[["step", "best_g"]].shape
    (2, 2)
    """
    check_pool(pool)
    check_instance("study", study, pd.DataFrame, "the DataFrame of train_fixed_budget(...)")
    cols = [_logit_column(j) for j in range(pool.num_arms)]
    if any(c not in study.columns for c in cols):
        raise ParameterError("study", "`study` has no logits: run train_fixed_budget(..., record_theta=True)")
    ref = check_integer("reference_group_size", reference_group_size, low=2)
    runs = study[study.group_size == ref]
    if runs.empty:
        raise ParameterError("reference_group_size", f"`reference_group_size` = {ref} is not in the study")
    summary = summarise_study(study)
    rows = []
    for (n, step), part in runs.groupby(["budget", "step"]):
        ks = [pool_constants(pool, th) for th in part[cols].to_numpy()]
        c1, c2, c3 = (float(np.mean([getattr(k, a) for k in ks])) for a in ("c1", "c2", "c3"))
        here = summary[(summary.budget == n) & (summary.step == step)]
        tied = here[here.within_se].group_size
        rows.append({
            "budget": int(n), "step": int(step), "c1": c1, "c2": c2, "c3": c3,
            "g_star": optimal_group_size(c1, c3),
            "best_g": int(here.loc[here.reward.idxmax(), "group_size"]),
            "tied_low": int(tied.min()), "tied_high": int(tied.max()),
        })
    return pd.DataFrame(rows)


def study_logits(study: pd.DataFrame, *, group_size: int, step: int, budget: int | None = None) -> np.ndarray:
    """The logits each seed's run held at one checkpoint of a study, one row per seed.

    Parameters
    ----------
    study : pandas.DataFrame
        A study recorded with ``record_theta=True`` (:func:`train_fixed_budget`; one budget or
        several concatenated).
    group_size : int
        G of the runs to read.
    step : int
        The checkpoint (optimizer steps; one of the study's ``checkpoints``).
    budget : int, optional
        N of the runs; needed only when the study holds several budgets.

    Returns
    -------
    ndarray, shape (S, A)
        Row s: the shared logits theta (nats) of one seed's run, in the study's row order (seed
        order for :func:`train_fixed_budget` output); column a: arm a.

    Raises
    ------
    ParameterError
        No logits recorded (``study``), no run at that ``group_size`` / ``step`` / ``budget``, or
        several budgets in the study and no ``budget``.

    Examples
    --------
    >>> from grpo_core.groupsize import beta_difficulty_pool
    >>> st = train_fixed_budget(beta_difficulty_pool(8, 3), 8, [4], num_seeds=2, num_steps=2, record_theta=True)
    >>> study_logits(st, group_size=4, step=0).tolist()     # every run starts at theta = 0
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    check_instance("study", study, pd.DataFrame, "the DataFrame of train_fixed_budget(...)")
    cols = []
    while _logit_column(len(cols)) in study.columns:
        cols.append(_logit_column(len(cols)))
    if not cols:
        raise ParameterError("study", "`study` has no logits: run train_fixed_budget(..., record_theta=True)")
    g = check_integer("group_size", group_size, low=2)
    t = check_integer("step", step, low=0)
    budgets = sorted(study["budget"].unique())
    if budget is None and len(budgets) > 1:
        raise ParameterError("budget", f"`budget` must name one of the study's budgets {budgets}")
    n = budgets[0] if budget is None else check_integer("budget", budget, low=2)
    rows = study[(study.budget == n) & (study.group_size == g) & (study.step == t)]
    if rows.empty:
        raise ParameterError(
            "group_size", f"the study has no run at `group_size` = {g}, `step` = {t}, `budget` = {n}"
        )
    return rows[cols].to_numpy()


def _logit_column(arm: int) -> str:
    """The study frame's column holding the logit of ``arm`` (``record_theta=True``)."""
    return f"theta_{arm}"
