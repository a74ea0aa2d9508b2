"""Measure the curvature of a GRPO run before training it: the probe.

On the starting policy and a fixed batch of sampled groups (``groups`` prompts x ``G`` completions
from the policy, rewards from the task), :func:`probe_policy` measures what the oscillator model's
coefficients need and turns it into predictions:

* **Sharpness.** The top eigenvalue of the Hessian of the GRPO surrogate loss that TRL minimises,
  ``L(theta) = -agg_{i,t} min(r_{i,t} A_i, clip(r_{i,t}, 1 - eps, 1 + eps) A_i)`` with
  ``r = pi_theta / pi_old`` at ``theta = theta_old`` (the advantages ``A`` held fixed), by Lanczos
  iteration on Hessian-vector products (``torch.autograd`` double backward):
  :func:`~grpo_core.llm.curvature.lanczos_extremes`.
  Also of the Adam-preconditioned Hessian ``P^{-1/2} H P^{-1/2}``, ``P = diag(sqrt(v) + eps)``, with
  ``v`` from a short warm-start: the bias-corrected EMA (``adam_beta2``) of the squared gradients of
  ``adam_steps`` fresh batches at the starting weights.
* **Reward-direction curvature K** (the oscillator model's stiffness, book chapter "From update
  rule to oscillator", section "The update rule, linearised": the gain per step is ``a = eta K``
  and the gap ``e = p - p*`` shrinks by ``1 - eta K`` per plain-SGD step with no lag). ``p`` is
  the *exact* expected reward on ``reward_prompts`` fixed prompts of the training task: for the
  exact-match arithmetic reward at temperature ``T`` it is the probability
  of the answer's tokens followed by the end-of-sequence token, by teacher forcing (no sampling
  noise). Without a KL anchor (``beta = 0``) the fixed point of GRPO is the largest reward,
  ``p* = 1`` (book chapter "The bandit: where the mean field is exact", section "The fixed point,
  and why the KL anchor is needed"), so ``e = p - 1``. Each of ``repeats`` probes samples a fresh
  batch and takes the rate of the first small SGD step, ``K = grad p . g / (1 - p)`` (``g`` the
  GRPO ascent direction of the batch: the ``eta -> 0`` limit of the relaxation rate, exact in the
  reward and unbiased in the sampling); the interval is a Student-t interval over the repeats.
  Each probe then takes ``steps`` plain SGD steps (a fresh batch each, learning rate
  ``step_gain / K``, so a step closes about ``step_gain`` of the gap) and reads the finite-step rate
  ``(1 - (e_n / e_0)^(1/n)) / eta`` off the exact reward
  (:func:`~grpo_core.llm.curvature.relaxation_rate`): ``k_steps``. It
  differs from K by the second-order drift of the sampling noise (``eta^2 tr(H_p Sigma) / 2``,
  which lowers the reward), so the two together say how linear the small-step regime is. The
  same first-order value along Adam's direction ``g / P`` is ``k_adam`` (Adam's gain per step is
  ``eta k_adam``).
* **Predictions** with :mod:`grpo_core.model`'s exact thresholds (:func:`predict`): the critical
  learning rate of SGD with heavy-ball momentum (``mu = 0.9``) from K, and from the sharpness
  (``eta lambda_max < 2 (1 + mu)``, the heavy-ball edge of stability on a quadratic); of Adam
  (``b1 = 0.9``) from ``k_adam`` (EMA momentum) and from the edge of stability of adaptive methods
  (Cohen et al. 2022: preconditioned sharpness at most ``(2 + 2 b1) / ((1 - b1) eta)``); how
  ``num_iterations = 4`` (a generation batch reused for 4 steps: ``k_ref = 4``) moves the model's
  thresholds; the time to 90% of the plateau at the config's learning rate.

Units: learning rates as the optimizer's; K and ``k_adam`` per unit learning rate (reward-gap
relaxation per step = ``eta K``); eigenvalues in loss units per squared parameter unit (the
preconditioned ones per squared Adam step unit); times in optimizer steps; costs in seconds.

The probe restores the weights and the global random state, so a run that probes first trains
exactly as one that does not. Only the arithmetic task (the tiny model built from a config) has
the exact expected reward; other models raise :class:`~grpo_core.errors.GrpoError`.

References
----------
Cohen, Kaur, Li, Kolter, Talwalkar (2021), "Gradient Descent on Neural Networks Typically Occurs
at the Edge of Stability"; Cohen et al. (2022), "Adaptive Gradient Methods at the Edge of
Stability" (the ``(2 + 2 b1) / ((1 - b1) eta)`` bound); Lanczos (1950); TRL documentation,
``GRPOTrainer`` (the loss and its aggregations). The model's thresholds: book chapter "From update
rule to oscillator".
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._json import json_ready
from ..errors import GrpoError
from ..validation import check_integer, check_real
from .curvature import (
    adam_second_moment,
    flat_grad,
    hvp_operator,
    lanczos_extremes,
    relaxation_rate,
    set_flat,
    unflatten,
)

__all__ = [
    "ProbeResult",
    "ProbeBatch",
    "probe_policy",
    "predict",
    "sample_batch",
    "surrogate_loss",
    "expected_reward",
    "write_probe",
]

#: Adam's epsilon in the preconditioner (``transformers``' default ``adam_epsilon``).
ADAM_EPS = 1e-8
#: Momentum of the predictions (SGD heavy ball and Adam's beta1), as the issue asks.
PREDICT_MU = 0.9
#: ``num_iterations`` of the lag prediction.
PREDICT_ITERATIONS = 4


@dataclass
class ProbeResult:
    """What the probe measured and predicted (see the module docstring for definitions and units).

    Attributes
    ----------
    settings : dict
        The probe's budget (groups, group size, Lanczos iterations, repeats, steps, Adam steps,
        reward prompts, Hessian groups, seed) and the config's optimizer settings it read.
    sharpness : dict
        ``top`` / ``bottom`` eigenvalue of the surrogate's Hessian and the top Ritz residual;
        ``top_adam`` / ``bottom_adam`` / ``residual_adam`` for ``P^{-1/2} H P^{-1/2}``.
    curvature : dict
        ``reward`` (exact expected reward p0 on the reward prompts), ``k`` (first-order rate, mean
        over repeats), ``k_interval`` (95%), ``k_repeats``, ``k_steps`` (finite-step rate) with
        interval and repeats, ``k_adam`` (first order along ``g / P``) with interval and repeats,
        ``probe_learning_rate`` (the steps' SGD rate), ``grad_norm`` (of the surrogate on the
        first batch, before clipping), ``batch_reward`` (mean sampled reward of the fixed batch).
    predictions : dict
        From :func:`predict`.
    seconds : dict
        Cost per part (``sampling`` included in each) and ``total``.
    """

    settings: dict
    sharpness: dict
    curvature: dict
    predictions: dict
    seconds: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (non-finite numbers -> ``None``)."""
        return json_ready(asdict(self))

    def to_json(self, indent: int | None = 1) -> str:
        """The result as JSON text (:meth:`to_dict`)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> ProbeResult:
        """Rebuild from :meth:`to_dict` output (``None`` stays ``None``)."""
        return cls(**{k: data[k] for k in ("settings", "sharpness", "curvature", "predictions")},
                   seconds=data.get("seconds", {}))


# ---------------------------------------------------------------------------------------------
# The GRPO batch and its surrogate
@dataclass
class ProbeBatch:
    """One fixed batch of sampled groups.

    Attributes
    ----------
    input_ids, attention_mask : torch.Tensor, shape (N, P + C)
        Left-padded prompt then right-padded completion, N = groups x G.
    completion_mask : torch.Tensor, shape (N, P + C - 1)
        1 on the positions whose next token is a completion token (TRL's completion mask, shifted).
    rewards : torch.Tensor, shape (N,)
    advantages : torch.Tensor, shape (N,)
        TRL's: ``r - group mean``, divided by the group (or batch) std + 1e-4 unless ``scale_rewards='none'``.
    old_logps : torch.Tensor, shape (N, P + C - 1)
        Token log-probabilities of the behaviour policy (detached), 0 off the completion.
    """

    input_ids: Any
    attention_mask: Any
    completion_mask: Any
    rewards: Any
    advantages: Any
    old_logps: Any


def _token_logps(model, input_ids, attention_mask, temperature: float):
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1] / temperature
    return torch.gather(torch.log_softmax(logits.float(), -1), 2, input_ids[:, 1:, None])[..., 0]


def _pack(tokenizer, prompts: list[str], completions: list[list[int]], device):
    """Left-padded prompts + right-padded completions; mask of the completion targets."""
    import torch

    enc = [tokenizer(p)["input_ids"] for p in prompts]
    lp, lc = max(map(len, enc)), max(1, max(map(len, completions)))
    pad = tokenizer.pad_token_id
    ids = torch.full((len(enc), lp + lc), pad, dtype=torch.long)
    att = torch.zeros_like(ids)
    cmask = torch.zeros((len(enc), lp + lc - 1))
    for i, (p, c) in enumerate(zip(enc, completions)):
        ids[i, lp - len(p):lp] = torch.tensor(p)
        att[i, lp - len(p):lp + len(c)] = 1
        if c:
            ids[i, lp:lp + len(c)] = torch.tensor(c)
            cmask[i, lp - 1:lp - 1 + len(c)] = 1
    return ids.to(device), att.to(device), cmask.to(device)


def _advantages(rewards, group_size: int, scale: str):
    r = rewards.view(-1, group_size)
    adv = r - r.mean(1, keepdim=True)
    if scale == "group":
        adv = adv / (r.std(1, keepdim=True) + 1e-4)
    elif scale == "batch":
        adv = adv / (rewards.std() + 1e-4)
    return adv.reshape(-1)


def sample_batch(model, tokenizer, cfg, prompts: list[dict], *, seed: int) -> ProbeBatch:
    """Sample ``G = cfg.group_size`` completions per prompt from the policy and score them.

    Parameters
    ----------
    model, tokenizer
        The policy (its weights now) and the character tokenizer.
    cfg : ExperimentConfig
        ``group_size``, ``temperature``, ``max_completion_length``, ``scale_rewards``.
    prompts : list of dict
        ``{"prompt": str, "answer": str}`` (from :func:`~grpo_core.llm.tasks.sample_problems`).
    seed : int
        Sampling seed (the global random state is restored afterwards).

    Returns
    -------
    ProbeBatch
        Rewards from :func:`~grpo_core.llm.tasks.exact_match_reward` (what TRL is given).
    """
    import torch

    from .evaluation import generate_completions
    from .tasks import exact_match_reward

    device = next(model.parameters()).device
    texts, ids = generate_completions(model, tokenizer, [p["prompt"] for p in prompts],
                                      max_new_tokens=cfg.max_completion_length, do_sample=True,
                                      temperature=cfg.temperature, num_return_sequences=cfg.group_size, seed=seed)
    rep = [p for p in prompts for _ in range(cfg.group_size)]
    reward = exact_match_reward(tokenizer.eos_token_id)
    rewards = torch.tensor(reward(prompts=[p["prompt"] for p in rep], completions=texts, completion_ids=ids,
                                  answer=[p["answer"] for p in rep]), dtype=torch.float32, device=device)
    input_ids, att, cmask = _pack(tokenizer, [p["prompt"] for p in rep], ids, device)
    with torch.no_grad():
        old = _token_logps(model, input_ids, att, cfg.temperature) * cmask
    return ProbeBatch(input_ids, att, cmask, rewards, _advantages(rewards, cfg.group_size, cfg.scale_rewards), old)


def surrogate_loss(model, batch: ProbeBatch, cfg):
    """TRL's GRPO loss on a fixed batch (advantages fixed, ``beta = 0``), differentiable twice.

    ``per_token = -min(r A, clip(r, 1 - epsilon, 1 + epsilon) A)``, ``r = exp(logp - old_logp)``;
    aggregated as TRL's ``loss_type``: ``dapo``/``bnpo``: sum over completion tokens / their
    number; ``grpo``: mean over sequences of the per-sequence token mean; ``dr_grpo``: sum / (N x
    ``max_completion_length``).

    Returns
    -------
    torch.Tensor
        Scalar loss (TRL minimises it).
    """
    import torch

    logps = _token_logps(model, batch.input_ids, batch.attention_mask, cfg.temperature)
    ratio = torch.exp((logps - batch.old_logps) * batch.completion_mask)
    adv = batch.advantages[:, None]
    per_token = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - cfg.epsilon, 1 + cfg.epsilon) * adv)
    m = batch.completion_mask
    if cfg.loss_type == "grpo":
        return ((per_token * m).sum(1) / m.sum(1).clamp(min=1)).mean()
    if cfg.loss_type == "dr_grpo":
        return (per_token * m).sum() / (m.shape[0] * cfg.max_completion_length)
    return (per_token * m).sum() / m.sum().clamp(min=1)


def expected_reward(model, tokenizer, prompts: list[dict], temperature: float):
    """Exact expected exact-match reward: mean over prompts of P(answer tokens, then EOS), teacher-forced.

    Returns
    -------
    torch.Tensor
        Scalar in [0, 1], differentiable in the weights. (Completions that decode to the answer
        through special tokens inside it also score 1 under the sampled reward; their probability
        is left out, a lower bound that is tight for a trained policy.)
    """
    eos = tokenizer.eos_token_id
    ans = [[tokenizer.convert_tokens_to_ids(ch) for ch in p["answer"]] + [eos] for p in prompts]
    device = next(model.parameters()).device
    ids, att, cmask = _pack(tokenizer, [p["prompt"] for p in prompts], ans, device)
    logps = _token_logps(model, ids, att, temperature)
    return ((logps * cmask).sum(1)).exp().mean()


def _params(model) -> list:
    return [p for p in model.parameters() if p.requires_grad]


# ---------------------------------------------------------------------------------------------
# Predictions from the model
def predict(k_sgd: float, k_adam: float, top: float, top_adam: float, cfg, *, mu: float = PREDICT_MU,
            iterations: int = PREDICT_ITERATIONS, grad_norm: float = math.nan) -> dict[str, Any]:
    """Critical learning rates and the time to 90% of the plateau from the probe's numbers.

    Parameters
    ----------
    k_sgd : float
        K along the plain GRPO gradient (per unit SGD learning rate).
    k_adam : float
        K along Adam's direction ``g / P`` (per unit Adam learning rate).
    top, top_adam : float
        Top eigenvalue of the surrogate's Hessian, plain and Adam-preconditioned.
    cfg : ExperimentConfig
        ``learning_rate``, ``optimizer``, ``momentum``, ``lag``, ``max_grad_norm`` for the time to 90%.
    mu : float
        Momentum of the critical rates (SGD heavy ball; Adam beta1).
    iterations : int
        ``num_iterations`` of the lag prediction (``k_ref = iterations x steps_per_generation``).
    grad_norm : float
        Norm of the surrogate's gradient; with ``max_grad_norm = c < grad_norm`` TRL clips the SGD
        step, which the ``*_clipped`` rates undo (the learning rate whose clipped step is critical).

    Returns
    -------
    dict
        ``sgd_momentum`` and ``adam``: ``eta_crit`` (the model, exact discrete threshold, refresh lag
        ``k_ref = 1``: the behaviour policy is refreshed each step), ``eta_crit_constant_lag``
        (constant lag ``d = 1``), ``eta_crit_continuous`` (the paper's ``eta K K_ref = 1 - mu``, EMA:
        ``= 1``), ``eta_crit_sharpness`` (edge of stability), ``num_iterations_4`` (the model's
        ``eta_crit`` at ``k_ref = 4``, refresh and constant lag, and the ratio to ``k_ref = 1``);
        ``t90`` (steps to 90% of the plateau at the config's learning rate, optimizer and momentum,
        closed form and discrete; ``None`` when the model is unstable there) with its ``gain``
        ``a = eta K``.

    References
    ----------
    :func:`grpo_core.model.stability.critical_value`, :func:`grpo_core.model.oscillator.time_to_fraction`;
    Cohen et al. (2022) for the adaptive edge of stability.
    """
    from ..model.oscillator import coefficients
    from ..model.stability import critical_value
    from ..model.trajectories import time_to_fraction

    def rates(k: float, momentum: str) -> dict[str, float]:
        if not (k > 0 and math.isfinite(k)):
            return {"eta_crit": math.nan, "eta_crit_constant_lag": math.nan, "eta_crit_continuous": math.nan,
                    "num_iterations_4": {}}
        crit = lambda **kw: critical_value("eta", mu=mu, curvature=k, momentum=momentum, **kw)  # noqa: E731
        k4 = iterations * cfg.steps_per_generation
        one, four = crit(k_ref=1, lag="refresh"), crit(k_ref=k4, lag="refresh")
        return {"eta_crit": one, "eta_crit_constant_lag": crit(k_ref=1, lag="constant"),
                "eta_crit_continuous": crit(k_ref=1, lag="constant", method="continuous"),
                "num_iterations_4": {"k_ref": k4, "eta_crit": four, "ratio": four / one,
                                     "eta_crit_constant_lag": crit(k_ref=k4, lag="constant"),
                                     "ratio_constant_lag": crit(k_ref=k4, lag="constant")
                                     / crit(k_ref=1, lag="constant")}}

    sgd = {
        **rates(k_sgd, "heavy_ball"),
        "k": k_sgd,
        "mu": mu,
        "eta_crit_sharpness": 2 * (1 + mu) / top if top > 0 else math.inf,
    }
    clip = cfg.max_grad_norm
    scale = grad_norm / clip if clip and grad_norm > clip else 1.0
    sgd.update(
        clip_scale=scale,
        eta_crit_clipped=sgd["eta_crit"] * scale,
        eta_crit_sharpness_clipped=sgd["eta_crit_sharpness"] * scale,
    )
    adam = {
        **rates(k_adam, "ema"),
        "k": k_adam,
        "b1": mu,
        "eta_crit_sharpness": (2 + 2 * mu) / ((1 - mu) * top_adam) if top_adam > 0 else math.inf,
    }
    return {"sgd_momentum": sgd, "adam": adam, "t90": _t90(cfg, k_sgd, k_adam, scale, coefficients, time_to_fraction)}


def _t90(cfg, k_sgd, k_adam, clip_scale, coefficients, time_to_fraction) -> dict[str, Any]:
    adam = cfg.optimizer == "adamw"
    k = k_adam if adam else k_sgd / clip_scale
    out: dict[str, Any] = {
        "learning_rate": cfg.learning_rate,
        "optimizer": cfg.optimizer,
        "momentum": cfg.momentum,
        "k_ref": cfg.lag,
        "lag": "refresh",
        "curvature": k,
    }
    if not (k > 0 and math.isfinite(k)):
        return {**out, "gain": math.nan, "steps": math.nan, "steps_discrete": math.nan}
    co = coefficients(
        cfg.learning_rate, cfg.momentum, cfg.lag, k, lag="refresh", momentum="ema" if adam else "heavy_ball"
    )
    out["gain"] = cfg.learning_rate * k
    for key, method in (("steps", "closed_form"), ("steps_discrete", "discrete")):
        try:
            out[key] = float(time_to_fraction(co, 0.9, method=method))
        except GrpoError:  # unstable or never reaching 90%
            out[key] = math.nan
    return out


# ---------------------------------------------------------------------------------------------
# The probe
def _t_interval(values: list[float], level: float = 0.95) -> list[float]:
    from scipy import stats

    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return [math.nan, math.nan]
    half = stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return [float(x.mean() - half), float(x.mean() + half)]


def _check_budget(cfg, groups, iters, repeats, steps, adam_steps, reward_prompts, step_gain) -> dict[str, Any]:
    if not cfg.is_tiny:
        raise GrpoError(
            f"the probe needs the exact expected reward of the arithmetic task (model 'tiny-qwen2'); "
            f"preset {cfg.preset!r} uses {cfg.model!r}"
        )
    return {
        "groups": check_integer("groups", groups or cfg.prompts_per_step, low=1),
        "group_size": cfg.group_size,
        "iters": check_integer("iters", iters, low=1),
        "repeats": check_integer("repeats", repeats, low=1),
        "steps": check_integer("steps", steps, low=1),
        "adam_steps": check_integer("adam_steps", adam_steps, low=1),
        "reward_prompts": check_integer("reward_prompts", reward_prompts, low=1),
        "step_gain": check_real("step_gain", step_gain, low=0, high=0.5, low_inclusive=False),
    }


def probe_policy(
    model,
    tokenizer,
    cfg,
    *,
    groups: int = 0,
    iters: int = 10,
    repeats: int = 4,
    steps: int = 2,
    adam_steps: int = 4,
    reward_prompts: int = 256,
    step_gain: float = 0.01,
    hessian_groups: int = 8,
    seed: int | None = None,
) -> ProbeResult:
    """Measure the sharpness and the reward-direction curvature K of the starting policy; predict.

    Parameters
    ----------
    model, tokenizer
        The starting policy (the tiny model on the arithmetic task) and its tokenizer. Its weights
        and the global random state are the same afterwards.
    cfg : ExperimentConfig
        Group size, temperature, completion length, advantage scaling, loss type, clip range,
        ``adam_beta2``; learning rate, optimizer, momentum, lag, ``max_grad_norm`` for the predictions.
    groups : int
        Prompts (groups) per batch, ``0`` = ``cfg.prompts_per_step``.
    iters : int >= 1
        Lanczos steps per eigenvalue (each one Hessian-vector product).
    repeats : int >= 1
        Independent K probes (fresh batches); the interval is over them (Student t, 95%; NaN
        with one).
    steps : int >= 1
        SGD steps per K probe.
    adam_steps : int >= 1
        Batches of Adam's warm-start of ``v`` (the fixed batch first).
    reward_prompts : int >= 1
        Prompts of the exact expected reward (training distribution, train split).
    step_gain : float in (0, 0.5]
        Fraction of the reward gap a probe step is meant to close (sets the probe's SGD rate).
    hessian_groups : int >= 1
        Groups of the fixed batch whose surrogate's Hessian is probed (at most ``groups``): the
        Hessian-vector products are the probe's main cost, and the sharpness of a smaller batch
        is an upper estimate of the full batch's (its top eigenvalue includes more sampling noise).
    seed : int, optional
        Seed of the prompts and the sampling (default ``cfg.seed``).

    Returns
    -------
    ProbeResult

    Raises
    ------
    GrpoError
        A model other than the tiny one (no exact expected reward).
    ParameterError
        A budget parameter out of range.
    """
    import torch

    settings = _check_budget(cfg, groups, iters, repeats, steps, adam_steps, reward_prompts, step_gain)
    settings["hessian_groups"] = min(check_integer("hessian_groups", hessian_groups, low=1), settings["groups"])
    seed = cfg.seed if seed is None else check_integer("seed", seed, low=0)
    settings.update(
        seed=seed,
        loss_type=cfg.loss_type,
        scale_rewards=cfg.scale_rewards,
        epsilon=cfg.epsilon,
        temperature=cfg.temperature,
        adam_beta2=cfg.adam_beta2,
        adam_eps=ADAM_EPS,
    )
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    params = _params(model)
    theta0 = torch.cat([p.detach().reshape(-1) for p in params]).clone()
    guard = torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else [])
    guard.__enter__()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.MATH]):  # the fused kernels have no double backward
            result = _probe(model, tokenizer, cfg, params, theta0, settings)
    finally:
        set_flat(params, theta0)
        guard.__exit__(None, None, None)
        if was_training:
            model.train()
    return result


def _probe(model, tokenizer, cfg, params, theta0, s: dict) -> ProbeResult:
    from .tasks import TRAIN_TASK, sample_problems

    t_start = time.perf_counter()
    seconds: dict[str, float] = {}
    g_count = s["groups"]
    n_batches = s["adam_steps"] + s["repeats"] * s["steps"]
    pool = sample_problems(TRAIN_TASK, g_count * n_batches, seed=s["seed"] + 104729, split="train")
    batches = iter(range(n_batches))

    def fresh(i=None):
        i = next(batches) if i is None else i
        return sample_batch(model, tokenizer, cfg, pool[i * g_count : (i + 1) * g_count], seed=s["seed"] + 31 * i)

    reward_set = sample_problems(TRAIN_TASK, s["reward_prompts"], seed=s["seed"] + 7, split="train")
    p_fn = lambda: expected_reward(model, tokenizer, reward_set, cfg.temperature)  # noqa: E731
    p0_t = p_fn()
    p0 = float(p0_t.detach())
    grad_p = flat_grad(p0_t, params).detach()

    t0 = time.perf_counter()
    first = fresh()
    head = _head(first, s["hessian_groups"] * cfg.group_size)
    plain = lanczos_extremes(
        hvp_operator(surrogate_loss(model, head, cfg), params),
        theta0.numel(),
        s["iters"],
        seed=s["seed"],
        dtype=theta0.dtype,
        device=theta0.device,
    )
    g_first = -flat_grad(surrogate_loss(model, first, cfg), params).detach()
    seconds["sharpness"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    grads = [-g_first] + [
        flat_grad(surrogate_loss(model, fresh(), cfg), params).detach() for _ in range(s["adam_steps"] - 1)
    ]
    precond = adam_second_moment(grads, cfg.adam_beta2).sqrt() + ADAM_EPS
    adam = lanczos_extremes(
        hvp_operator(surrogate_loss(model, head, cfg), params, scale=precond.rsqrt()),
        theta0.numel(),
        s["iters"],
        seed=s["seed"],
        dtype=theta0.dtype,
        device=theta0.device,
    )
    seconds["sharpness_adam"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    curvature = _curvature(model, params, theta0, p_fn, p0, grad_p, precond, g_first, fresh, cfg, s)
    curvature["batch_reward"] = float(first.rewards.mean())
    seconds["curvature"] = time.perf_counter() - t0
    sharp = {
        "top": plain["top"],
        "bottom": plain["bottom"],
        "residual": plain["residual"],
        "top_adam": adam["top"],
        "bottom_adam": adam["bottom"],
        "residual_adam": adam["residual"],
        "iters": plain["iters"],
    }
    preds = predict(
        curvature["k"], curvature["k_adam"], sharp["top"], sharp["top_adam"], cfg, grad_norm=curvature["grad_norm"]
    )
    seconds["total"] = time.perf_counter() - t_start
    return ProbeResult(
        settings=s,
        sharpness=sharp,
        curvature=curvature,
        predictions=preds,
        seconds={k: round(v, 3) for k, v in seconds.items()},
    )


def _head(batch: ProbeBatch, rows: int) -> ProbeBatch:
    """The first ``rows`` completions (whole groups) of a batch; TRL's normaliser becomes theirs."""
    return ProbeBatch(
        *(
            getattr(batch, f)[:rows]
            for f in ("input_ids", "attention_mask", "completion_mask", "rewards", "advantages", "old_logps")
        )
    )


def _curvature(model, params, theta0, p_fn, p0, grad_p, precond, g_first, fresh, cfg, s) -> dict[str, Any]:
    """First-order K and K_adam of ``repeats`` fresh batches; finite-step K of ``steps`` SGD steps from each."""
    import torch

    gap = 1.0 - p0
    k1 = float(grad_p @ g_first) / gap
    eta = s["step_gain"] / abs(k1) if k1 else 1e-3
    k_steps, k_first, k_adam = [], [], []
    for r in range(s["repeats"]):
        g = g_first
        rewards = [p0]
        for j in range(s["steps"]):
            if j or r:
                g = -flat_grad(surrogate_loss(model, fresh(), cfg), params).detach()
            if j == 0:
                k_first.append(float(grad_p @ g) / gap)
                k_adam.append(float(grad_p @ (g / precond)) / gap)
            with torch.no_grad():
                for p, d in zip(params, unflatten(eta * g, params)):
                    p.add_(d)
                rewards.append(float(p_fn()))  # no_grad: no graph kept
        set_flat(params, theta0)
        k_steps.append(relaxation_rate(rewards, eta, p_star=1.0)["k"])  # negative if the steps lowered p
    return {
        "reward": p0,
        "p_star": 1.0,
        "probe_learning_rate": eta,
        "grad_norm": float(g_first.norm()),
        "k": float(np.mean(k_first)),
        "k_interval": _t_interval(k_first),
        "k_repeats": k_first,
        "k_steps": float(np.mean(k_steps)),
        "k_steps_interval": _t_interval(k_steps),
        "k_steps_repeats": k_steps,
        "k_adam": float(np.mean(k_adam)),
        "k_adam_interval": _t_interval(k_adam),
        "k_adam_repeats": k_adam,
    }


def write_probe(model, tokenizer, cfg, ctx) -> dict[str, Any]:
    """Run :func:`probe_policy` with the config's ``probe_*`` budget and write ``<run>/probe.json``.

    A run folder that already holds ``probe.json`` (a resumed run) keeps it: the probe is of the
    starting policy. ``ctx.timings["probe"]`` is set (seconds).

    Parameters
    ----------
    model, tokenizer
        The starting policy (unchanged afterwards).
    cfg : ExperimentConfig
        ``probe_groups``, ``probe_iters``, ``probe_repeats``, ``probe_steps``, ``seed`` and what
        :func:`probe_policy` reads.
    ctx : RunContext
        The run folder; only the main process writes.

    Returns
    -------
    dict
        The stored result (:meth:`ProbeResult.to_dict`).
    """
    from .runs import read_json, write_json

    path = ctx.path / "probe.json"
    if path.exists():
        return read_json(path)
    t0 = time.perf_counter()
    result = probe_policy(
        model,
        tokenizer,
        cfg,
        groups=cfg.probe_groups,
        iters=cfg.probe_iters,
        repeats=cfg.probe_repeats,
        steps=cfg.probe_steps,
    ).to_dict()
    ctx.timings["probe"] = time.perf_counter() - t0
    if ctx.main:
        write_json(path, result)
    return result
