"""Training on TRL's ``GRPOTrainer``: the reward functions, the mapped ``GRPOConfig``, the trainer and its callbacks.

:func:`grpo_args` maps the experiment's settings to TRL's options, :func:`build_trainer` adds the
:class:`~grpo_core.runs.callback.DynamicsCallback` and the periodic held-out evaluation, and
:func:`train` resumes from the newest complete checkpoint.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from ..errors import GrpoError
from .config import ExperimentConfig
from .runs import last_checkpoint
from .session import RunContext

__all__ = ["reward_functions", "grpo_args", "build_trainer", "train", "CollapseStop"]


try:
    from transformers import TrainerCallback as _Base
except ImportError:  # pragma: no cover
    _Base = object


class CollapseStop(_Base):
    """Stop training once the run has certainly collapsed (the ``stop_collapsed`` setting).

    The rule: after the learning-rate warm-up (``global_step > after``), the logged training reward
    (the mean 0/1 reward of the step's sampled completions) has been exactly 0 for ``steps``
    consecutive logged steps, and the run did not start at 0 (the mean of its first 10 logged
    rewards is > 0). With every completion of every group at 0 the group-relative advantages are 0
    and so is the gradient: only the optimizer's momentum still moves the weights. A run stopped
    so is what :func:`~grpo_core.llm.probe_check.classify_run` calls *collapsed* as long as
    ``steps >= max(10, T // 10)`` for its ``T`` logged steps (its tail is all zeros, below half its
    start), which :func:`~grpo_core.llm.config.make_config` checks against ``max_steps``.

    Parameters
    ----------
    steps : int
        Consecutive logged steps at a reward of exactly 0, >= 1.
    after : int, default 0
        Steps before which zeros do not count (the learning-rate warm-up).

    Attributes
    ----------
    stopped_at : int or None
        The global step at which training was stopped (``None``: not stopped).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> cb, control = CollapseStop(3, after=2), NS(should_training_stop=False)
    >>> for step, r in enumerate([0.3, 0.2, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0], 1):
    ...     _ = cb.on_log(None, NS(global_step=step), control, logs={"reward": r})
    >>> cb.stopped_at, control.should_training_stop
    (8, True)
    """

    def __init__(self, steps: int, *, after: int = 0):
        from ..validation import check_integer

        self.steps = check_integer("steps", steps, low=1)
        self.after = check_integer("after", after, low=0)
        self.zeros = 0
        self.first: list[float] = []
        self.stopped_at: int | None = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        """Count the training rows at a reward of exactly 0; stop at ``steps`` in a row.

        Parameters
        ----------
        args : transformers.TrainingArguments
            Unused.
        state : transformers.TrainerState
            ``global_step``.
        control : transformers.TrainerControl
            ``should_training_stop`` is set when the rule fires.
        logs : dict, optional
            The logged row; rows without ``reward`` (evaluations) are ignored.
        **kwargs
            Ignored.

        Returns
        -------
        transformers.TrainerControl
            ``control``.
        """
        if not logs or "reward" not in logs:
            return control
        reward = float(logs["reward"])
        if len(self.first) < 10:
            self.first.append(reward)
        self.zeros = self.zeros + 1 if (reward == 0.0 and state.global_step > self.after) else 0
        if self.zeros >= self.steps and sum(self.first) > 0:
            control.should_training_stop = True
            self.stopped_at = int(state.global_step)
        return control


def reward_functions(cfg: ExperimentConfig, tokenizer) -> list:
    """TRL reward functions: exact match (arithmetic) or correctness (+ format, if weighted).

    Parameters
    ----------
    cfg : ExperimentConfig
        ``model`` (tiny or not) and ``format_reward`` (weight; 0 = no format reward) are read.
    tokenizer : object
        Its ``eos_token_id`` (tiny model only: a right completion must end with EOS).

    Returns
    -------
    list of callable
        ``[exact_match]`` (:func:`~grpo_core.llm.tasks.exact_match_reward`, column ``answer``), or
        ``[correctness]`` (:func:`~grpo_core.llm.answers.correctness_reward`, column
        ``reference``) followed by ``format`` (:func:`~grpo_core.llm.answers.format_reward`) when
        ``format_reward > 0``. TRL sums them per completion (reward units).

    References
    ----------
    TRL documentation, ``GRPOTrainer``, "Using a custom reward function".
    """
    from .answers import correctness_reward, format_reward
    from .tasks import exact_match_reward

    if cfg.is_tiny:
        return [exact_match_reward(tokenizer.eos_token_id)]
    funcs = [correctness_reward("reference")]
    if cfg.format_reward > 0:
        funcs.append(format_reward(cfg.format_reward))
    return funcs


def grpo_args(cfg: ExperimentConfig, ctx: RunContext):
    """TRL ``GRPOConfig`` for the settings (learning rate, momentum, lag, G, beta, epsilon mapped to TRL options).

    ``per_device_train_batch_size`` = completions per step / (number of processes x
    ``gradient_accumulation_steps``), TRL's ``steps_per_generation`` = ``steps_per_generation`` x
    ``gradient_accumulation_steps`` (so a generation batch is still ``steps_per_generation``
    optimizer steps); the vLLM settings passed through; logging every step; checkpoints every
    ``save_every`` steps (the last two kept); Adam's beta1 or SGD's momentum = ``momentum``;
    ``bf16``, ``fp16`` and gradient checkpointing as ``cfg`` sets them (they are not switched off
    here on the CPU; :func:`~grpo_core.llm.config.make_config` refuses ``bf16``/``fp16`` with
    ``device='cpu'`` and :func:`~grpo_core.llm.config.check_environment` on a machine without a
    GPU).

    Other mappings: ``lr_scheduler="constant"`` with a warm-up is TRL's
    ``constant_with_warmup``; ``max_grad_norm = 0`` (no clipping) becomes 1e9; sampling uses the
    full distribution (``top_k=0``, ``top_p=1``) at ``temperature``; no reporting integrations, no
    progress bar.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings.
    ctx : RunContext
        ``output_dir`` is ``<ctx.path>/checkpoints``; ``use_cpu`` when ``ctx.device == "cpu"``.

    Returns
    -------
    trl.GRPOConfig

    Raises
    ------
    GrpoError
        The completions per step do not split evenly over the processes (``WORLD_SIZE``) times
        the accumulation steps.

    References
    ----------
    TRL documentation, ``GRPOConfig`` (``num_generations``, ``steps_per_generation``,
    ``num_iterations``, ``beta``, ``epsilon``, ``scale_rewards``, ``loss_type``).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from grpo_core.llm.config import make_config
    >>> cfg = make_config("cpu-tiny", group_size=16, completions_per_step=256, optimizer="sgd", momentum=0.9)
    >>> args = grpo_args(cfg, RunContext(path=Path(tempfile.mkdtemp()), name="x", device="cpu"))
    >>> args.per_device_train_batch_size, args.num_generations, args.optim_args, args.bf16
    (256, 16, 'momentum=0.9', False)
    >>> args = grpo_args(cfg.replace(gradient_accumulation_steps=4, steps_per_generation=2),
    ...                  RunContext(path=Path(tempfile.mkdtemp()), name="x", device="cpu"))
    >>> args.per_device_train_batch_size, args.gradient_accumulation_steps, args.steps_per_generation
    (64, 4, 8)
    """
    from trl import GRPOConfig

    world = int(os.environ.get("WORLD_SIZE", "1"))
    accumulation = cfg.gradient_accumulation_steps
    if cfg.completions % (world * accumulation):
        raise GrpoError(f"{cfg.completions} completions per step cannot be split over {world} processes x "
                        f"{accumulation} accumulation steps; pick a number of processes (or "
                        "gradient_accumulation_steps) whose product divides it")
    per_device = cfg.completions // (world * accumulation)
    scheduler = {"constant": "constant_with_warmup" if cfg.lr_warmup_steps else "constant", "cosine": "cosine"}[
        cfg.lr_scheduler
    ]
    kwargs: dict[str, Any] = dict(
        output_dir=str(ctx.path / "checkpoints"),
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=accumulation,
        num_generations=cfg.group_size,
        # TRL counts steps_per_generation in micro-batches: x accumulation keeps the lag in optimizer steps
        steps_per_generation=cfg.steps_per_generation * accumulation,
        num_iterations=cfg.num_iterations,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=scheduler,
        warmup_steps=cfg.lr_warmup_steps,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm if cfg.max_grad_norm > 0 else 1e9,
        beta=cfg.beta,
        epsilon=cfg.epsilon,
        scale_rewards=cfg.scale_rewards,
        loss_type=cfg.loss_type,
        temperature=cfg.temperature,
        top_k=0,
        top_p=1.0,
        max_completion_length=cfg.max_completion_length,
        max_steps=cfg.max_steps,
        logging_steps=1,
        save_strategy="steps",
        save_steps=cfg.save_every,
        save_total_limit=2,
        bf16=cfg.bf16,
        fp16=cfg.fp16,
        use_cpu=ctx.device == "cpu",
        seed=cfg.seed,
        data_seed=cfg.seed,
        report_to=[],
        disable_tqdm=True,
        dataloader_num_workers=0,
        use_vllm=cfg.use_vllm,
        vllm_mode=cfg.vllm_mode,
        vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
        vllm_server_host=cfg.vllm_server_host,
        vllm_server_port=cfg.vllm_server_port,
        log_completions=False,
        remove_unused_columns=False,
    )
    # transformers 5 renamed gradient checkpointing (the old name still works, with a warning)
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    kwargs["activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"] = (
        cfg.gradient_checkpointing
    )
    if cfg.optimizer == "sgd":
        kwargs.update(optim="sgd", optim_args=f"momentum={cfg.momentum}")
    else:
        kwargs.update(optim="adamw_torch", adam_beta1=cfg.momentum, adam_beta2=cfg.adam_beta2)
    return GRPOConfig(**kwargs)


def build_trainer(
    cfg: ExperimentConfig,
    ctx: RunContext,
    model,
    tokenizer,
    train_set,
    eval_sets: dict,
    *,
    extra_callbacks: list | None = None,
    dynamics: bool = True,
):
    """TRL ``GRPOTrainer`` with the :class:`~grpo_core.runs.callback.DynamicsCallback` (metrics file,
    periodic diagnosis) and the periodic held-out evaluation (``eval_every`` > 0).

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (:func:`grpo_args`, :func:`reward_functions`; ``eval_every``,
        ``eval_sampled``, ``diagnose_every`` for the callbacks).
    ctx : RunContext
        The run (the metrics file and checkpoints go to ``ctx.path``).
    model, tokenizer
        The starting policy (:func:`~grpo_core.llm.policy.build_policy`); the tokenizer is TRL's ``processing_class``.
    train_set : datasets.Dataset
        From :func:`~grpo_core.llm.prompts.build_train_dataset`.
    eval_sets : dict of str to EvalSet
        From :func:`~grpo_core.llm.prompts.build_eval_sets`; the first one is evaluated every ``eval_every`` steps (none
        when empty or ``eval_every = 0``).
    extra_callbacks : list of TrainerCallback, optional
        Appended after the project's callbacks.
    dynamics : bool, default True
        Add the :class:`~grpo_core.runs.callback.DynamicsCallback` (diagnosis every
        ``diagnose_every`` steps, train-eval check on ``sampled_accuracy`` when the periodic
        evaluation samples).

    Returns
    -------
    trl.GRPOTrainer
        Not yet trained; transformers' printer and progress callbacks removed; the
        :class:`~grpo_core.llm.evaluation.EvalCallback` (first in the list) has its ``trainer``
        set.

    Raises
    ------
    GrpoError
        As :func:`grpo_args` (completions per step not divisible by the number of processes).

    References
    ----------
    TRL documentation, ``GRPOTrainer``.
    """
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    from ..runs.callback import DynamicsCallback
    from .evaluation import EvalCallback, evaluate

    callbacks = []
    if dynamics:
        # the held-out counterpart of the training reward (mean reward of sampled completions) is
        # the sampled accuracy; the greedy one can stay flat while sampling sharpens
        eval_metric = "sampled_accuracy" if (cfg.eval_every and cfg.eval_sampled) else None
        callbacks.append(
            DynamicsCallback(
                ctx.path,
                every=cfg.diagnose_every,
                group_size=cfg.group_size,
                num_prompts=cfg.prompts_per_step,
                eval_metric=eval_metric,
            )
        )
    eval_cb = None
    if cfg.eval_every and eval_sets:
        first = next(iter(eval_sets.values()))
        eval_cb = EvalCallback(
            lambda m: evaluate(
                m,
                tokenizer,
                first.items,
                first.scorer,
                name=first.name,
                max_new_tokens=first.max_new_tokens,
                samples=cfg.eval_sampled,
                temperature=cfg.temperature,
                seed=cfg.seed,
            ),
            every=cfg.eval_every,
        )
        callbacks.insert(0, eval_cb)
    if cfg.stop_collapsed:
        callbacks.append(CollapseStop(cfg.stop_collapsed, after=cfg.lr_warmup_steps))
    callbacks += list(extra_callbacks or [])
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_functions(cfg, tokenizer),
        args=grpo_args(cfg, ctx),
        train_dataset=train_set,
        processing_class=tokenizer,
        callbacks=callbacks,
    )
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    if eval_cb is not None:
        eval_cb.trainer = trainer
    return trainer


def train(trainer, ctx: RunContext, cfg: ExperimentConfig | None = None):
    """Train, resuming from the newest complete checkpoint of the run when there is one.

    Parameters
    ----------
    trainer : trl.GRPOTrainer
        From :func:`build_trainer`.
    ctx : RunContext
        The run: checkpoints are looked up under ``ctx.path/checkpoints``; ``ctx.resumed_from``
        is set (the checkpoint path or ``None``) and the training time (seconds) is added to
        ``ctx.timings["grpo"]``.
    cfg : ExperimentConfig, optional
        ``cfg.resume = False`` starts from scratch even when a checkpoint exists; ``None``
        resumes.

    Returns
    -------
    transformers.trainer_utils.TrainOutput
        What ``trainer.train`` returns.

    Raises
    ------
    Exception
        Whatever ``trainer.train`` raises (nothing is caught).
    """
    ckpt = last_checkpoint(ctx.path) if (cfg is None or cfg.resume) else None
    ctx.resumed_from = str(ckpt) if ckpt else None
    if ckpt:
        print(f"resuming from {ckpt}")
    t0 = time.perf_counter()
    out = trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
    ctx.timings["grpo"] = ctx.timings.get("grpo", 0.0) + time.perf_counter() - t0
    return out
