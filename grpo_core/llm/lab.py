"""The oscillator in its own domain on a network: short GRPO runs from one interior plateau.

The oscillator model (book chapter "From update rule to oscillator") assumes a restoring force (a
KL anchor, ``beta > 0``, so the fixed point ``p*`` is interior), a gradient that lags the policy
(a behaviour policy refreshed every ``K_ref`` steps whose samples are used as if current), and a
linear pull ``eta K (p* - p)`` per step. :class:`Lab` trains the ``cpu-dynamics`` transformer in
exactly that setting, many short runs from one shared starting point, and records the *exact*
expected reward after every step (teacher-forced, no evaluation noise), so that a run's return to
``p*`` can be read step by step.

The loop (:meth:`Lab.train`) is TRL's ``GRPOTrainer`` loss written out, so that the lag can be
switched: each step samples ``num_prompts`` prompts from a fixed pool and ``G`` completions per
prompt from the *behaviour* policy (the weights of the last refresh), scores them with the
exact-match reward and takes one optimizer step on

* ``mode="ratio"``: TRL's clipped surrogate ``-min(r A, clip(r, 1 - eps, 1 + eps) A)``,
  ``r = pi_theta / pi_behaviour`` (TRL's reuse of a generation batch, ``steps_per_generation =
  K_ref``);
* ``mode="stale"``: the same loss with ``r = pi_theta / stopgrad(pi_theta)`` (value 1, gradient
  of ``log pi_theta``): the stale samples used as if current (the KL term, as in TRL, at the current
  weights);
* ``mode="frozen"``: the stale loss's gradient taken *at the behaviour policy's weights* and applied to
  the current ones, the whole update direction (reward and KL terms) as of the last refresh: the
  oscillator model's lag ``g(theta_{t-d})``;

plus ``beta`` times TRL's per-token KL estimate ``exp(q - l) - (q - l) - 1`` (``l``, ``q`` the
policy's and the reference's token log-probabilities; the reference is the warmed-up model),
aggregated as TRL's ``loss_type="dapo"`` (sum over completion tokens / their number), with the
mean baseline (``scale_rewards="none"``) unless asked otherwise. No gradient clipping (the model
has none). SGD is heavy ball (``v = mu v + g``), AdamW's ``beta1`` is EMA momentum.

Units: learning rates as the optimizer's; ``K`` per unit learning rate (the gap closes by
``eta K`` per plain step); steps are optimizer steps; rewards in [0, 1].

References
----------
TRL documentation, ``GRPOTrainer`` (loss, KL estimator, ``steps_per_generation``); Schulman (2020),
"Approximating KL divergence" (the k3 estimator); the lag model and its exact thresholds: our
derivation (:mod:`grpo_core.model.stability`).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_choice, check_integer, check_real
from .probe import _advantages, _pack, _token_logps, expected_reward

__all__ = ["LabSettings", "LabTrace", "Lab", "MODES", "OPTIMIZERS", "warmed_policy"]

#: Lag modes of :class:`LabSettings`.
MODES = ("stale", "ratio", "frozen")
#: Optimizers of :class:`LabSettings`.
OPTIMIZERS = ("sgd", "adamw")


@dataclass(frozen=True)
class LabSettings:
    """One short run of the lab loop (validated on construction).

    Attributes
    ----------
    optimizer : {"sgd", "adamw"}
    learning_rate : float > 0
    momentum : float in [0, 1)
        SGD's heavy-ball momentum or AdamW's beta1.
    k_ref : int >= 1
        Refresh interval of the behaviour policy, in steps.
    mode : {"stale", "ratio", "frozen"}
        Samples of the behaviour policy used as if current, corrected by TRL's clipped ratio, or the whole
        gradient taken at the behaviour policy (module docstring).
    beta : float >= 0
        KL weight to the reference (warmed-up) policy.
    steps : int >= 1
    seed : int >= 0
        Seed of the prompt draws and the sampling.
    group_size, num_prompts : int >= 2, >= 1
    scale_rewards : {"none", "group"}
        Mean baseline, or TRL's std-scaled advantages.
    flip : bool
        Reward ``1 - r`` (the displacement runs push the policy away from the task).
    adam_beta2, epsilon : float
        AdamW's beta2; TRL's clip range.
    max_grad_norm : float >= 0
        Gradient clipping threshold (0: none, the default: the oscillator model has none).
    lr_warmup_steps : int >= 0
        Linear learning-rate warm-up (TRL's ``warmup_steps``); 0: none.
    """

    optimizer: str = "sgd"
    learning_rate: float = 1e-2
    momentum: float = 0.9
    k_ref: int = 1
    mode: str = "stale"
    beta: float = 0.5
    steps: int = 100
    seed: int = 0
    group_size: int = 8
    num_prompts: int = 16
    scale_rewards: str = "none"
    flip: bool = False
    adam_beta2: float = 0.99
    epsilon: float = 0.2
    max_grad_norm: float = 0.0
    lr_warmup_steps: int = 0

    def __post_init__(self):
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("mode", self.mode, MODES)
        check_choice("scale_rewards", self.scale_rewards, ("none", "group"))
        check_real("learning_rate", self.learning_rate, low=0, low_inclusive=False)
        check_real("momentum", self.momentum, low=0, high=1, high_inclusive=False)
        check_real("adam_beta2", self.adam_beta2, low=0, high=1, high_inclusive=False)
        check_real("beta", self.beta, low=0)
        check_real("epsilon", self.epsilon, low=0, low_inclusive=False)
        check_real("max_grad_norm", self.max_grad_norm, low=0)
        check_integer("lr_warmup_steps", self.lr_warmup_steps, low=0)
        check_integer("k_ref", self.k_ref, low=1)
        check_integer("steps", self.steps, low=1)
        check_integer("seed", self.seed, low=0)
        check_integer("group_size", self.group_size, low=2)
        check_integer("num_prompts", self.num_prompts, low=1)

    def replace(self, **changes) -> LabSettings:
        """A validated copy with some settings changed."""
        return LabSettings(**{**asdict(self), **changes})


@dataclass
class LabTrace:
    """What one run of the lab loop measured.

    Attributes
    ----------
    settings : dict
        :class:`LabSettings` as a dict.
    p : list of float, length steps + 1
        Exact expected reward on the pool before the first step and after each step (``nan`` once
        the weights are not finite).
    reward : list of float, length steps
        Mean sampled reward of each step's completions (the task's reward, also when ``flip``).
    kl : list of float, length steps
        Mean per-token KL estimate to the reference.
    grad_norm : list of float, length steps
        Euclidean norm of the loss gradient.
    finite : bool
        Whether the weights stayed finite to the end.
    seconds : float
    """

    settings: dict
    p: list = field(default_factory=list)
    reward: list = field(default_factory=list)
    kl: list = field(default_factory=list)
    grad_norm: list = field(default_factory=list)
    finite: bool = True
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (floats rounded to 6 significant digits; non-finite as ``None``)."""

        def r(xs):
            return [float(f"{x:.6g}") if math.isfinite(x) else None for x in xs]

        return {"settings": dict(self.settings), "p": r(self.p), "reward": r(self.reward), "kl": r(self.kl),
                "grad_norm": r(self.grad_norm), "finite": self.finite, "seconds": round(self.seconds, 2)}

    @classmethod
    def from_dict(cls, d: dict) -> LabTrace:
        """Inverse of :meth:`to_dict` (``None`` read back as ``nan``)."""

        def f(xs):
            return [math.nan if x is None else float(x) for x in xs]

        return cls(settings=dict(d["settings"]), p=f(d["p"]), reward=f(d["reward"]), kl=f(d["kl"]),
                   grad_norm=f(d["grad_norm"]), finite=bool(d["finite"]), seconds=float(d.get("seconds", 0.0)))


class Lab:
    """The ``cpu-dynamics`` policy, its reference and a fixed prompt pool: the lab loop's world.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The starting policy (copied; the lab never changes it).
    reference : transformers.PreTrainedModel
        The KL reference (the warmed-up model; frozen).
    tokenizer : PreTrainedTokenizerFast
        The character tokenizer.
    pool : list of dict
        ``{"prompt", "answer"}`` problems. Training prompts are drawn from it and ``p`` is the mean
        over it of the exact probability of the answer.
    temperature : float > 0
        Sampling temperature (also of the log-probabilities, as TRL).
    max_completion_length : int >= 1

    Raises
    ------
    ParameterError
        An empty pool, a non-positive temperature or length.
    """

    def __init__(self, model, reference, tokenizer, pool: list[dict], *, temperature: float = 2.5,
                 max_completion_length: int = 6):
        if not pool:
            raise ParameterError("pool", "`pool` must hold at least one problem")
        self.model = copy.deepcopy(model)
        self.reference = copy.deepcopy(reference).eval()
        for q in self.reference.parameters():
            q.requires_grad_(False)
        self.tokenizer = tokenizer
        self.pool = list(pool)
        self.temperature = check_real("temperature", temperature, low=0, low_inclusive=False)
        self.max_completion_length = check_integer("max_completion_length", max_completion_length, low=1)

    # -------------------------------------------------------------------------------------------
    def state(self, model=None) -> dict:
        """A detached copy of the weights (of ``model``, default the lab's starting policy)."""
        return {k: v.detach().clone() for k, v in (model or self.model).state_dict().items()}

    def policy(self, state: dict | None = None):
        """A fresh trainable copy of the starting policy, with ``state``'s weights when given."""
        m = copy.deepcopy(self.model)
        if state is not None:
            m.load_state_dict(state)
        m.train()
        return m

    def expected(self, model) -> float:
        """Exact expected reward of ``model`` on the pool (:func:`~grpo_core.llm.probe.expected_reward`)."""
        import torch

        with torch.no_grad():
            return float(expected_reward(model, self.tokenizer, self.pool, self.temperature))

    # -------------------------------------------------------------------------------------------
    def sample(self, behaviour, s: LabSettings, rng: np.random.Generator, seed: int, *,
               need_old: bool = True) -> dict:
        """One step's batch: prompts drawn from the pool, ``G`` completions each from ``behaviour``.

        Returns
        -------
        dict
            ``ids``, ``att``, ``cmask`` (as :func:`~grpo_core.llm.probe._pack`), ``rewards`` (task
            reward, shape (N,)), ``adv`` (advantages of the trained reward, flipped when
            ``s.flip``), ``old`` and ``ref`` (behaviour and reference token log-probabilities;
            ``old`` is ``None`` unless ``need_old``: the stale loss and an on-policy step do not use it).
        """
        import torch

        from .evaluation import generate_completions
        from .tasks import exact_match_reward

        probs = [self.pool[i] for i in rng.integers(0, len(self.pool), s.num_prompts)]
        texts, comp = generate_completions(behaviour, self.tokenizer, [p["prompt"] for p in probs],
                                           max_new_tokens=self.max_completion_length, do_sample=True,
                                           temperature=self.temperature, num_return_sequences=s.group_size,
                                           seed=seed)
        rep = [p for p in probs for _ in range(s.group_size)]
        score = exact_match_reward(self.tokenizer.eos_token_id)
        rewards = torch.tensor(score(prompts=[p["prompt"] for p in rep], completions=texts, completion_ids=comp,
                                     answer=[p["answer"] for p in rep]), dtype=torch.float32)
        trained = 1.0 - rewards if s.flip else rewards
        ids, att, cmask = _pack(self.tokenizer, [p["prompt"] for p in rep], comp, "cpu")
        with torch.no_grad():
            old = _token_logps(behaviour, ids, att, self.temperature) * cmask if need_old else None
            ref = _token_logps(self.reference, ids, att, self.temperature) * cmask
        return {"ids": ids, "att": att, "cmask": cmask, "rewards": rewards,
                "adv": _advantages(trained, s.group_size, s.scale_rewards), "old": old, "ref": ref}

    def loss(self, model, batch: dict, s: LabSettings):
        """The step's loss (module docstring) and its mean per-token KL; the loss is differentiable twice."""
        import torch

        logps = _token_logps(model, batch["ids"], batch["att"], self.temperature)
        m = batch["cmask"]
        if s.mode == "ratio" and batch["old"] is not None:
            ratio = torch.exp((logps - batch["old"]) * m)
        else:
            ratio = torch.exp((logps - logps.detach()) * m)
        adv = batch["adv"][:, None]
        per_token = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - s.epsilon, 1 + s.epsilon) * adv)
        d = (batch["ref"] - logps) * m
        kl = torch.exp(d) - d - 1
        n = m.sum().clamp(min=1)
        return ((per_token + s.beta * kl) * m).sum() / n, float(((kl * m).sum() / n).detach())

    def optimizer(self, model, s: LabSettings, adam_state: dict | None = None):
        """The torch optimizer of ``s`` on ``model``; AdamW starts from ``adam_state`` (``exp_avg_sq`` per
        parameter, in order, and the step count) when given, with a zero first moment."""
        import torch

        params = [q for q in model.parameters() if q.requires_grad]
        if s.optimizer == "sgd":
            return torch.optim.SGD(params, lr=s.learning_rate, momentum=s.momentum, dampening=0.0)
        opt = torch.optim.AdamW(params, lr=s.learning_rate, betas=(s.momentum, s.adam_beta2), eps=1e-8,
                                weight_decay=0.0)
        if adam_state is not None:
            for q, v in zip(params, adam_state["exp_avg_sq"]):
                opt.state[q] = {"step": torch.tensor(float(adam_state["step"])), "exp_avg": torch.zeros_like(q),
                                "exp_avg_sq": v.clone()}
        return opt

    def train(self, s: LabSettings, state: dict | None = None, *, adam_state: dict | None = None,
              progress: bool = False) -> tuple[LabTrace, dict]:
        """Run ``s.steps`` steps of the lab loop from ``state`` (default: the starting policy).

        Returns
        -------
        (LabTrace, dict)
            The measurements and the final weights (:meth:`state`). A run whose weights become
            non-finite stops there; its remaining ``p`` are ``nan`` and ``finite`` is False.
        """
        import torch

        t0 = time.perf_counter()
        model = self.policy(state)
        opt = self.optimizer(model, s, adam_state)
        params = [q for q in model.parameters() if q.requires_grad]
        rng = np.random.default_rng([s.seed, 7])
        tr = LabTrace(settings=asdict(s), p=[self.expected(model)])
        behaviour = lagged = None
        lagged_params: list = []
        steps = range(s.steps)
        if progress:
            from tqdm.auto import tqdm

            steps = tqdm(steps, desc=f"{s.optimizer} {s.mode} K_ref={s.k_ref} lr={s.learning_rate:.3g}", leave=False)
        for t in steps:
            if t % s.k_ref == 0:
                behaviour = copy.deepcopy(model).eval()
                if s.mode == "frozen":   # a trainable twin of the behaviour policy: the gradient is taken there
                    lagged = copy.deepcopy(model)
                    lagged_params = [q for q in lagged.parameters() if q.requires_grad]
            # at a refresh the behaviour is the policy itself: the ratio is 1 with the gradient of log pi
            fresh = t % s.k_ref == 0
            batch = self.sample(behaviour, s, rng, seed=int(rng.integers(2**31)),
                                need_old=s.mode == "ratio" and not fresh)
            opt.zero_grad(set_to_none=True)
            if s.mode == "frozen":
                loss, kl = self.loss(lagged, batch, s)
                lagged.zero_grad(set_to_none=True)
                loss.backward()
                for q, b in zip(params, lagged_params):
                    q.grad = None if b.grad is None else b.grad.detach().clone()
            else:
                loss, kl = self.loss(model, batch, s)
                loss.backward()
            gn = float(torch.sqrt(sum((q.grad.detach() ** 2).sum() for q in params if q.grad is not None)))
            if not (math.isfinite(gn) and math.isfinite(loss.item())):
                tr.finite = False
            else:
                if s.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, s.max_grad_norm)
                if s.lr_warmup_steps:
                    for g in opt.param_groups:
                        g["lr"] = s.learning_rate * min(1.0, (t + 1) / s.lr_warmup_steps)
                opt.step()
                tr.finite = all(bool(torch.isfinite(q).all()) for q in params)
            tr.reward.append(float(batch["rewards"].mean()))
            tr.kl.append(kl)
            tr.grad_norm.append(gn)
            if not tr.finite:
                tr.p.extend([math.nan] * (s.steps - t))
                break
            tr.p.append(self.expected(model))
        tr.seconds = time.perf_counter() - t0
        return tr, self.state(model)

    # -------------------------------------------------------------------------------------------
    def adam_second_moment(self, state: dict, s: LabSettings, batches: int = 20) -> dict:
        """Adam's second moment at ``state``: AdamW run ``batches`` steps at learning rate 0 (on-policy).

        Returns
        -------
        dict
            ``exp_avg_sq`` (list of tensors, one per trainable parameter) and ``step`` (= ``batches``),
            for :meth:`train`'s ``adam_state``.
        """
        import torch

        batches = check_integer("batches", batches, low=1)
        model = self.policy(state)
        z = s.replace(optimizer="adamw", learning_rate=1.0, k_ref=1)
        opt = self.optimizer(model, z)
        for g in opt.param_groups:
            g["lr"] = 0.0
        rng = np.random.default_rng([s.seed, 11])
        for _ in range(batches):
            batch = self.sample(model, z, rng, seed=int(rng.integers(2**31)))
            loss, _ = self.loss(model, batch, z)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        params = [q for q in model.parameters() if q.requires_grad]
        return {"exp_avg_sq": [opt.state[q]["exp_avg_sq"].detach().clone() for q in params],
                "step": batches, "norm": float(torch.sqrt(sum(opt.state[q]["exp_avg_sq"].sum() for q in params)))}

    def sharpness(self, state: dict, s: LabSettings, *, adam_state: dict | None = None, batches: int = 3,
                  iters: int = 20) -> dict[str, Any]:
        """Top Hessian eigenvalue of the ratio-mode loss (with the KL term) at ``state``, on-policy.

        Lanczos (:func:`~grpo_core.llm.curvature.lanczos_extremes`) on ``batches`` fresh batches; with
        ``adam_state`` also of the Adam-preconditioned Hessian ``P^{-1/2} H P^{-1/2}``,
        ``P = sqrt(v) + 1e-8`` (v bias-corrected).

        Returns
        -------
        dict
            ``top`` and ``top_adam`` (means over batches), ``each`` and ``each_adam`` (per batch).
        """
        import torch

        from .curvature import hvp_operator, lanczos_extremes

        model = self.policy(state)
        params = [q for q in model.parameters() if q.requires_grad]
        dim = sum(q.numel() for q in params)
        z = s.replace(mode="ratio", k_ref=1, flip=False)
        rng = np.random.default_rng([s.seed, 13])
        scale = None
        if adam_state is not None:
            v = torch.cat([x.reshape(-1) for x in adam_state["exp_avg_sq"]])
            v = v / (1 - s.adam_beta2 ** adam_state["step"])
            scale = 1.0 / torch.sqrt(v.sqrt() + 1e-8)
        from torch.nn.attention import SDPBackend, sdpa_kernel

        tops, tops_adam = [], []
        for b in range(check_integer("batches", batches, low=1)):
            batch = self.sample(model, z, rng, seed=int(rng.integers(2**31)))
            with sdpa_kernel([SDPBackend.MATH]):  # the fused kernels have no double backward
                loss, _ = self.loss(model, batch, z)
                tops.append(lanczos_extremes(hvp_operator(loss, params), dim, iters, seed=b)["top"])
                if scale is not None:
                    loss, _ = self.loss(model, batch, z)
                    tops_adam.append(lanczos_extremes(hvp_operator(loss, params, scale), dim, iters, seed=b)["top"])
        out: dict[str, Any] = {"top": float(np.mean(tops)), "each": tops}
        if tops_adam:
            out.update(top_adam=float(np.mean(tops_adam)), each_adam=tops_adam)
        return out


def warmed_policy(cfg=None, cache: str = ""):
    """The warmed-up tiny model of ``cfg`` (default: the ``cpu-dynamics`` preset) and its tokenizer.

    The same model every ``cpu-dynamics`` run starts from (same warm-up settings and seed), read from
    the warm-up cache folder ``cache`` when it holds it (the layout of
    :func:`~grpo_core.llm.policy.build_policy`), else warmed up (about a minute on one CPU thread) and
    stored there.

    Returns
    -------
    (model, tokenizer)
        Float32 on the CPU.
    """
    import os
    import shutil
    from pathlib import Path

    from transformers import AutoModelForCausalLM

    from .config import make_config
    from .model import TinyModelSpec, build_tiny_model, warmup
    from .policy import _warmup_key
    from .tasks import build_char_tokenizer

    cfg = cfg or make_config("cpu-dynamics")
    tok = build_char_tokenizer()
    folder = Path(cache) / _warmup_key(cfg) if cache else None
    if folder is None or not (folder / "config.json").exists():
        model = build_tiny_model(tok, TinyModelSpec(hidden_size=cfg.tiny_hidden_size, num_layers=cfg.tiny_layers),
                                 seed=cfg.warmup_seed_used)
        warmup(model, tok, steps=cfg.warmup_steps, batch_size=cfg.warmup_batch_size,
               learning_rate=cfg.warmup_learning_rate, anneal=cfg.warmup_anneal, seed=cfg.warmup_seed_used)
        if folder is None:
            return model.eval(), tok
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        if folder.exists():
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, folder)
    model = AutoModelForCausalLM.from_pretrained(str(folder))
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model.eval(), tok
