"""Bandit runs as training logs, and bandit runs made to fail in each failure mode on purpose.

:func:`run_log` turns one (configuration, seed) of a :class:`~grpo_core.bandit.BanditRun` recorded
with ``metrics=True`` into a :class:`~grpo_core.runs.logs.RunLog`, the same table
:func:`~grpo_core.runs.logs.read_log` makes of a TRL log, so :func:`~grpo_core.runs.diagnostics.diagnose`
reads a simulated run exactly as it reads a real one. :func:`simulate_log` adds an eval metric
measured on a finite eval set, which may differ from the training reward (a reward that pays
format only). :data:`SCENARIOS` are the runs of the book chapter "Reading a training log": a
healthy one and one per failure mode, each made to fail by one documented setting.

References
----------
Book chapter "Reading a training log"; the bandit: :mod:`grpo_core.bandit` (chapter "The bandit:
where the mean field is exact").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import bandit as _bandit
from ..errors import ParameterError
from ..validation import check_array, check_choice, check_integer, check_real
from .logs import RunLog, from_frame

__all__ = ["run_log", "simulate_log", "Scenario", "SCENARIOS", "scenario_log", "instability_sweep"]

#: Bandit metric names -> normalised log columns.
_COLUMNS = {"clip_ratio": "clip_ratio_region"}


def run_log(run: _bandit.BanditRun, *, config: int = 0, seed: int = 0, source: str | None = None,
            eval_rows: pd.DataFrame | None = None) -> RunLog:
    """One configuration and seed of a bandit run as a training log.

    Parameters
    ----------
    run : BanditRun
        From :func:`grpo_core.bandit.simulate` with ``metrics=True``.
    config, seed : int
        Indices into the run's configurations (C) and seeds (S).
    source : str, optional
        Name of the log (default: ``"<bandit eta=..., k_ref=..., beta=...>"``).
    eval_rows : DataFrame, optional
        Eval rows (a ``step`` column and metric columns) to attach.

    Returns
    -------
    RunLog
        Format ``"grpo_dynamics"``; columns ``reward``, ``reward_std``, ``frac_reward_zero_std``,
        ``kl``, ``entropy``, ``grad_norm``, ``clip_ratio_region`` and ``expected_reward`` (the exact
        ``p`` of the policy after the step), steps 1..T (step 0, before any sampling, is left out);
        ``reward_std`` is the mean per-group std (the bandit computes it per group).

    Raises
    ------
    ParameterError
        ``config``/``seed`` out of range, or a run recorded without metrics.

    Examples
    --------
    >>> spec = _bandit.BanditSpec.binary(group_size=8, num_prompts=4)
    >>> run = _bandit.simulate(spec, eta=0.5, beta=1.0, steps=50, seeds=2, metrics=True)
    >>> log = run_log(run, seed=1)
    >>> len(log.train), log.format
    (50, 'grpo_dynamics')
    """
    if not isinstance(run, _bandit.BanditRun):
        raise ParameterError("run", f"`run` must be a grpo_core.bandit.BanditRun; got {type(run).__name__}")
    if not run.metrics:
        raise ParameterError("run", "`run` has no metrics: simulate it with metrics=True")
    n_conf, n_seed = run.p.shape[:2]
    config = check_integer("config", config, low=0, high=n_conf - 1)
    seed = check_integer("seed", seed, low=0, high=n_seed - 1)
    frame = pd.DataFrame({_COLUMNS.get(k, k): v[config, seed] for k, v in run.metrics.items()})
    frame["expected_reward"] = run.p[config, seed]
    frame.insert(0, "step", run.steps.astype(np.int64))
    frame = frame.iloc[1:]
    if source is None:
        source = (f"<bandit eta={run.eta[config]:g}, mu={run.mu[config]:g}, k_ref={int(run.k_ref[config])}, "
                  f"beta={run.beta[config]:g}, seed={int(run.seeds[seed])}>")
    if eval_rows is not None and len(eval_rows):
        frame = pd.concat([frame.assign(split="train"), eval_rows.assign(split="eval")], ignore_index=True)
    return from_frame(frame, format="grpo_dynamics", source=source, reward_std_kind="group_mean_std")


def simulate_log(spec: _bandit.BanditSpec, *, eta: float, mu: float = 0.0, k_ref: int = 1, beta: float = 0.0,
                 steps: int, seed: int = 0, eval_reward_probs: Any = None, eval_every: int = 10,
                 eval_samples: int = 256, source: str | None = None) -> RunLog:
    """Simulate one bandit run and return its training log, optionally with an eval metric.

    Without ``eval_reward_probs`` this is one :func:`grpo_core.bandit.simulate` call. With it, the
    run is simulated in chunks of ``eval_every`` steps; after each chunk the policy is evaluated
    on ``eval_samples`` fresh draws whose success probability per arm is ``eval_reward_probs``
    (e.g. correctness, while the training reward pays format): the eval row ``accuracy`` is the
    fraction of successes, a Binomial(``eval_samples``, ``sum_a pi_a q_eval,a``) draw divided by
    ``eval_samples``, like an accuracy measured on a finite eval set. Chunking is exact (the
    chunked process has the law of the unbroken one) only when nothing carries over a chunk
    boundary: no momentum (``mu = 0``) and the refresh lag with ``eval_every`` a multiple of
    ``k_ref`` (each chunk starts on a refresh); other settings are refused.

    Parameters
    ----------
    spec : BanditSpec
    eta, mu, k_ref, beta : float, float, int, float
        As :func:`grpo_core.bandit.simulate` (one configuration).
    steps : int >= 1
    seed : int >= 0
        Seed of the run (chunk ``c`` uses seed ``seed * 1_000_003 + c``; the eval draws use
        ``numpy.random.default_rng(seed)``).
    eval_reward_probs : sequence of float, shape (A,), optional
        Success probability of each arm for the eval metric.
    eval_every : int >= 1
        Steps between evaluations.
    eval_samples : int >= 1
        Draws per evaluation.
    source : str, optional
        Name of the log.

    Returns
    -------
    RunLog
        As :func:`run_log`, with eval rows (``accuracy``, and ``expected_accuracy``, the exact
        ``sum_a pi_a q_eval,a``) when ``eval_reward_probs`` is given.

    Raises
    ------
    ParameterError
        Bad parameters; an eval with momentum, the constant lag, or ``eval_every`` not a
        multiple of ``k_ref``.

    Examples
    --------
    >>> spec = _bandit.BanditSpec.binary(group_size=8, num_prompts=4, lag="refresh")
    >>> log = simulate_log(spec, eta=0.5, beta=1.0, steps=40, eval_reward_probs=[1.0, 0.0])
    >>> log.eval.index.tolist()
    [10, 20, 30, 40]
    """
    steps = check_integer("steps", steps, low=1)
    seed = check_integer("seed", seed, low=0)
    if eval_reward_probs is None:
        run = _bandit.simulate(spec, eta=eta, mu=mu, k_ref=k_ref, beta=beta, steps=steps, seeds=[seed],
                               metrics=True)
        return run_log(run, source=source)
    q_eval = check_array("eval_reward_probs", eval_reward_probs, ndim=1, low=0.0, high=1.0)
    if q_eval.size != spec.num_arms:
        raise ParameterError("eval_reward_probs", f"`eval_reward_probs` must have one entry per arm "
                                                  f"({spec.num_arms}); got {q_eval.size}")
    every = check_integer("eval_every", eval_every, low=1)
    n_eval = check_integer("eval_samples", eval_samples, low=1)
    mu = check_real("mu", mu, low=0.0, high=1.0, high_inclusive=False)
    k_ref = check_integer("k_ref", k_ref, low=1)
    if mu != 0.0 or spec.lag != "refresh" or every % k_ref:
        raise ParameterError("eval_every", "an eval metric needs chunks that carry nothing over: `mu` = 0, "
                                           "lag='refresh' and `eval_every` a multiple of `k_ref`; got "
                                           f"mu={mu}, lag={spec.lag!r}, eval_every={every}, k_ref={k_ref}")
    rng = np.random.default_rng(seed)
    theta = np.asarray(spec.init_logits, dtype=float)
    parts, evals = [], []
    done = 0
    chunk = 0
    while done < steps:
        n = min(every, steps - done)
        run = _bandit.simulate(spec, eta=eta, mu=0.0, k_ref=k_ref, beta=beta, steps=n,
                               seeds=[seed * 1_000_003 + chunk], theta0=theta, metrics=True)
        part = run_log(run).train.copy()
        part["step"] = part["step"] + done
        parts.append(part)
        theta = run.theta[0, 0]
        done += n
        chunk += 1
        if n == every:
            z = theta - theta.max()
            pi = np.exp(z) / np.exp(z).sum()
            acc = float(pi @ q_eval)
            evals.append({"step": done, "accuracy": rng.binomial(n_eval, min(max(acc, 0.0), 1.0)) / n_eval,
                          "expected_accuracy": acc})
    train = pd.concat(parts, ignore_index=True)
    if source is None:
        source = f"<bandit eta={eta:g}, k_ref={k_ref}, beta={beta:g}, seed={seed}>"
    frame = pd.concat([train.assign(split="train"), pd.DataFrame(evals).assign(split="eval")], ignore_index=True)
    return from_frame(frame, format="grpo_dynamics", source=source, reward_std_kind="group_mean_std")


@dataclass(frozen=True)
class Scenario:
    """One bandit run of the chapter, healthy or made to fail in one mode.

    Attributes
    ----------
    name : str
        Key in :data:`SCENARIOS` (a failure mode of :data:`grpo_core.runs.diagnostics.MODES`, or
        ``"healthy"``).
    title : str
        What was done, in a few words.
    why : str
        Why that setting produces the failure (one or two sentences).
    spec : BanditSpec
    eta, mu, beta : float
    k_ref : int
    steps : int
    eval_reward_probs : tuple of float or None
        Success probability per arm of the eval metric (``None``: the training reward's).
    """

    name: str
    title: str
    why: str
    spec: _bandit.BanditSpec
    eta: float
    k_ref: int
    beta: float
    steps: int
    mu: float = 0.0
    eval_reward_probs: tuple[float, ...] | None = field(default=None)

    @property
    def group_size(self) -> int:
        """G of the spec (for the binary zero-spread expectation)."""
        return int(self.spec.group_size)

    def params(self) -> dict[str, Any]:
        """The run's settings as a flat dict (for tables)."""
        return {"scenario": self.name, "arms": self.spec.num_arms, "G": self.group_size,
                "B": self.spec.num_prompts, "lag": self.spec.lag, "eta": self.eta, "mu": self.mu,
                "k_ref": self.k_ref, "beta": self.beta, "steps": self.steps}


def _scenarios() -> dict[str, Scenario]:
    two_arm = _bandit.BanditSpec.binary(arms=2, correct=1, group_size=8, num_prompts=16, lag="refresh")
    # Format-only reward: arms 0-9 are well formatted (arm 0 also correct), arms 10-19 are not
    # (arm 10 correct): correctness is 1 in 10 either way, so the accuracy cannot follow the format.
    fmt = (1.0,) * 10 + (0.0,) * 10
    correct = tuple(1.0 if a in (0, 10) else 0.0 for a in range(20))
    ten = _bandit.BanditSpec.binary(arms=10, correct=3, group_size=2, num_prompts=8, lag="refresh",
                                    init_logits=(-3.0,) * 3 + (0.0,) * 7)
    graded = _bandit.BanditSpec(reward_probs=(0.8, 0.7, 0.6, 0.5, 0.4, 0.4, 0.3, 0.3, 0.2, 0.1), group_size=8,
                                num_prompts=4, lag="refresh")
    return {
        "healthy": Scenario(
            "healthy", "two arms, KL-anchored, refresh interval 4",
            "The KL term holds an interior fixed point p*, and K_ref = 4 is well inside the stability threshold "
            "of the refresh lag (eta K K_ref < 2 at mu = 0).",
            two_arm, eta=0.5, k_ref=4, beta=1.0, steps=600, eval_reward_probs=(1.0, 0.0)),
        "dynamic_instability": Scenario(
            "dynamic_instability", "the same run with the refresh interval past the threshold (K_ref = 12)",
            "eta K K_ref exceeds 2, the exact threshold of the refresh lag at mu = 0: the fixed point loses "
            "stability and the reward settles on a limit cycle of period about 2 K_ref.",
            two_arm, eta=0.5, k_ref=12, beta=1.0, steps=600),
        "policy_concentration": Scenario(
            "policy_concentration", "ten arms of graded reward, a step size of 10 and no KL anchor",
            "Each step moves the logits by ~eta times the advantage: the sampled arms' noise is amplified and "
            "the policy collapses onto one arm within a few steps, before the reward has made most of its gain.",
            graded, eta=10.0, k_ref=1, beta=0.0, steps=400),
        "advantage_degeneration": Scenario(
            "advantage_degeneration", "hard prompts (p = 0.02) with G = 2",
            "With p = 0.02 a group of two is all wrong with probability 0.96: almost no group has a reward "
            "spread, so almost every advantage is zero and learning waits for rare successes.",
            ten, eta=1.0, k_ref=2, beta=0.5, steps=400),
        "train_eval_decoupling": Scenario(
            "train_eval_decoupling", "a reward that pays format only",
            "The training reward pays the 10 well-formatted arms, one of which is correct; one of the 10 "
            "unformatted arms is correct too. The policy learns format, and the eval accuracy stays at 1 in 10.",
            _bandit.BanditSpec(reward_probs=fmt, group_size=8, num_prompts=8, lag="refresh",
                               init_logits=tuple(-1.0 if f else 0.0 for f in fmt)),
            eta=1.0, k_ref=1, beta=0.5, steps=400, eval_reward_probs=correct),
    }


#: The chapter's runs, by name: ``"healthy"`` and one per failure mode.
SCENARIOS: dict[str, Scenario] = _scenarios()


def scenario_log(name: str, *, seed: int = 0, eval_every: int | None = None, eval_samples: int = 256) -> RunLog:
    """Simulate one of :data:`SCENARIOS` and return its training log.

    Parameters
    ----------
    name : str
        A key of :data:`SCENARIOS`.
    seed : int >= 0
    eval_every : int, optional
        Steps between evaluations (default: the smallest multiple of the scenario's ``k_ref``
        that is at least 10).
    eval_samples : int
        Draws per evaluation (as :func:`simulate_log`).

    Returns
    -------
    RunLog

    Raises
    ------
    ParameterError
        Unknown ``name``.

    Examples
    --------
    >>> from grpo_core.runs.diagnostics import diagnose
    >>> sc = SCENARIOS["advantage_degeneration"]
    >>> diagnose(scenario_log(sc.name), group_size=sc.group_size, forecast=False).primary.mode
    'advantage_degeneration'
    """
    name = check_choice("name", name, tuple(SCENARIOS))
    sc = SCENARIOS[name]
    if eval_every is None:
        eval_every = sc.k_ref * math.ceil(10 / sc.k_ref)
    return simulate_log(sc.spec, eta=sc.eta, mu=sc.mu, k_ref=sc.k_ref, beta=sc.beta, steps=sc.steps, seed=seed,
                        eval_reward_probs=sc.eval_reward_probs, eval_every=eval_every, eval_samples=eval_samples,
                        source=f"<bandit: {sc.title}>")


def instability_sweep(k_refs, *, seeds: int = 4, scenario: str = "healthy", steps: int | None = None) -> pd.DataFrame:
    """Diagnose the scenario's bandit at several refresh intervals: which runs are flagged unstable.

    All (k_ref x seed) runs are one vectorised :func:`grpo_core.bandit.simulate` call; each run is
    then diagnosed (:func:`grpo_core.runs.diagnostics.diagnose`, no forecast).

    Parameters
    ----------
    k_refs : sequence of int >= 1
        Refresh intervals to try.
    seeds : int >= 1
        Seeds per interval.
    scenario : str
        Scenario whose bandit, eta and beta are used (default ``"healthy"``).
    steps : int, optional
        Steps per run (default: the scenario's).

    Returns
    -------
    pandas.DataFrame
        One row per (k_ref, seed): ``k_ref``, ``seed``, ``a_k_ref`` (eta K k_ref with the measured
        stiffness K), ``severity`` of the dynamic-instability finding (``"none"`` if none),
        ``flagged`` (warning or critical), ``period`` and ``autocorrelation`` of the reward
        oscillation (NaN if none was detected), ``p_range`` (max - min of the exact expected reward
        over the second half). ``attrs["stiffness"]`` holds K.

    Raises
    ------
    ParameterError
        Bad ``k_refs``, ``seeds`` or ``scenario``.

    Examples
    --------
    >>> table = instability_sweep([2, 14], seeds=1, steps=300)
    >>> table["flagged"].tolist()
    [False, True]
    """
    from .diagnostics import diagnose

    scenario = check_choice("scenario", scenario, tuple(SCENARIOS))
    sc = SCENARIOS[scenario]
    ks = check_array("k_refs", k_refs, ndim=1, min_size=1, low=1.0)
    if not np.all(ks == np.round(ks)):
        raise ParameterError("k_refs", "`k_refs` must be integers >= 1")
    ks = ks.astype(int)
    n_seeds = check_integer("seeds", seeds, low=1)
    n_steps = sc.steps if steps is None else check_integer("steps", steps, low=50)
    run = _bandit.simulate(sc.spec, eta=sc.eta, mu=sc.mu, k_ref=ks, beta=sc.beta, steps=n_steps, seeds=n_seeds,
                           metrics=True)
    stiff = _bandit.stiffness(sc.spec.replace(group_size=math.inf), sc.beta)
    rows = []
    half = run.steps >= n_steps // 2
    for c, k in enumerate(ks):
        for s in range(n_seeds):
            d = diagnose(run_log(run, config=c, seed=s), group_size=sc.group_size, forecast=False)
            f = d.find("dynamic_instability")
            osc = f.evidence.get("reward_oscillation") if f is not None else None
            rows.append({"k_ref": int(k), "seed": s, "a_k_ref": sc.eta * stiff * k,
                         "severity": f.severity if f is not None else "none",
                         "flagged": f is not None and f.severity in ("warning", "critical"),
                         "period": osc["period"] if osc else float("nan"),
                         "autocorrelation": osc["autocorrelation"] if osc else float("nan"),
                         "p_range": float(np.ptp(run.p[c, s, half]))})
    out = pd.DataFrame(rows)
    out.attrs["stiffness"] = stiff
    return out
