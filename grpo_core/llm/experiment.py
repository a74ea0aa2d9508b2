"""One GRPO experiment on a language model, step by step (the notebook calls these in order).

::

    cfg = make_config("cpu-tiny", group_size=16)          # validated settings
    run = start_run(cfg)                                  # folder, config.json, provenance.json
    model, tokenizer = build_policy(cfg, run)             # warm-up (tiny) or from_pretrained
    train_set = build_train_dataset(cfg, tokenizer)
    evals = build_eval_sets(cfg, tokenizer)
    evaluate_suite(model, tokenizer, cfg, evals, run, "start")
    measure_gradient_constants(model, tokenizer, cfg, evals, run, "start")   # if cfg.measure_constants
    trainer = build_trainer(cfg, run, model, tokenizer, train_set, evals)
    train(trainer, run)                                   # resumes from the last checkpoint
    evaluate_suite(trainer.model, tokenizer, cfg, evals, run, "end")
    finish_run(cfg, run, trainer)                         # summary.json; weights removed

The steps live by concept: :mod:`~grpo_core.llm.session` (:func:`~grpo_core.llm.session.start_run`,
:func:`~grpo_core.llm.session.finish_run`, :class:`~grpo_core.llm.session.RunContext`),
:mod:`~grpo_core.llm.policy` (:func:`~grpo_core.llm.policy.build_policy`), :mod:`~grpo_core.llm.prompts`
(:func:`~grpo_core.llm.prompts.build_train_dataset`, :func:`~grpo_core.llm.prompts.build_eval_sets`),
:mod:`~grpo_core.llm.measurements` (:func:`~grpo_core.llm.measurements.evaluate_suite`,
:func:`~grpo_core.llm.measurements.measure_gradient_constants`) and :mod:`~grpo_core.llm.training`
(:func:`~grpo_core.llm.training.build_trainer`, :func:`~grpo_core.llm.training.train`).

:func:`run_experiment` does all of it (it is what ``python -m grpo_core.llm`` and
``accelerate launch -m grpo_core.llm`` run). Training is TRL's ``GRPOTrainer``; with several
processes (``accelerate launch`` on GPUs, ``torch.distributed.run`` over gloo on the CPU, both
started by ``grpo-dynamics experiment --num-processes N``) the same code runs in every process,
the step's completions are shared out, and only the main process writes files.
"""

from __future__ import annotations

from typing import Any

from .config import ExperimentConfig
from .measurements import evaluate_suite, measure_gradient_constants
from .policy import build_policy
from .prompts import build_eval_sets, build_train_dataset
from .session import finish_run, start_run
from .training import build_trainer, train

__all__ = ["run_experiment"]


def run_experiment(cfg: ExperimentConfig, *, extra_callbacks: list | None = None) -> dict[str, Any]:
    """Everything of one run, in order (see the module docstring); returns the summary.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (:func:`~grpo_core.llm.config.make_config`).
    extra_callbacks : list of TrainerCallback, optional
        Passed to :func:`~grpo_core.llm.training.build_trainer`.

    Returns
    -------
    dict
        The summary of :func:`~grpo_core.llm.session.finish_run` (also written to ``<run>/summary.json``).

    Raises
    ------
    GrpoError
        No GPU for a GPU preset or a model that cannot be loaded (both checked by
        :func:`~grpo_core.llm.session.start_run` before anything is built); a dataset or benchmark that cannot be
        loaded.
    DataError
        A dataset in the wrong schema; a broken JSON file in an existing run folder.
    ParameterError
        As the steps it calls (e.g. an empty evaluation set).

    References
    ----------
    Book chapter "GRPO on a language model"; TRL documentation, ``GRPOTrainer``.
    """
    ctx = start_run(cfg)
    model, tokenizer = build_policy(cfg, ctx)
    train_set = build_train_dataset(cfg, tokenizer)
    evals = build_eval_sets(cfg, tokenizer)
    evaluate_suite(model, tokenizer, cfg, evals, ctx, "start")
    if cfg.measure_constants:
        measure_gradient_constants(model, tokenizer, cfg, evals, ctx, "start")
    if cfg.probe:  # before the first GRPO step; weights and random state are left as they were
        from .probe import write_probe

        write_probe(model, tokenizer, cfg, ctx)
    trainer = build_trainer(cfg, ctx, model, tokenizer, train_set, evals, extra_callbacks=extra_callbacks)
    train(trainer, ctx, cfg)
    evaluate_suite(trainer.model, tokenizer, cfg, evals, ctx, "end", force=True)
    if cfg.measure_constants:
        measure_gradient_constants(trainer.model, tokenizer, cfg, evals, ctx, "end")
    return finish_run(cfg, ctx, trainer)
