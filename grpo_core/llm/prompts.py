"""What the run is trained and evaluated on: the prompts, the training dataset, the evaluation sets.

Arithmetic (the tiny model) or GSM8K-style text (pretrained models); :func:`make_prompt` writes a
question as chat messages or plain text, :func:`build_train_dataset` and :func:`build_eval_sets`
are the experiment's data steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import ExperimentConfig

__all__ = ["make_prompt", "build_train_dataset", "EvalSet", "build_eval_sets"]


def make_prompt(question: str, cfg: ExperimentConfig, tokenizer) -> Any:
    """A GSM8K-style prompt: chat messages when the tokenizer has a chat template, else plain text.

    Parameters
    ----------
    question : str
        The problem text.
    cfg : ExperimentConfig
        Only ``system_prompt`` is read (``""`` = none).
    tokenizer : object
        Only its ``chat_template`` attribute is read (missing or empty: plain text).

    Returns
    -------
    list of dict or str
        With a chat template: ``[{"role": "system", ...}, {"role": "user", "content": question}]``
        (the system message only when ``system_prompt`` is set; TRL applies the template). Else
        ``"<system_prompt>\\n\\nQuestion: <question>\\nAnswer:"`` (without the first part when
        ``system_prompt`` is empty).

    References
    ----------
    TRL documentation, ``GRPOTrainer`` / dataset formats (standard vs. conversational prompts).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from grpo_core.llm.config import make_config
    >>> cfg = make_config("gsm8k-qwen2.5-0.5b", system_prompt="Be brief.")
    >>> make_prompt("1+1?", cfg, SimpleNamespace(chat_template=None))
    'Be brief.\\n\\nQuestion: 1+1?\\nAnswer:'
    >>> make_prompt("1+1?", cfg, SimpleNamespace(chat_template="{{...}}"))[-1]
    {'role': 'user', 'content': '1+1?'}
    """
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": cfg.system_prompt}] if cfg.system_prompt else []
        return messages + [{"role": "user", "content": question}]
    head = f"{cfg.system_prompt}\n\n" if cfg.system_prompt else ""
    return f"{head}Question: {question}\nAnswer:"


def build_train_dataset(cfg: ExperimentConfig, tokenizer):
    """The GRPO training prompts as a ``datasets.Dataset`` (``prompt`` + the reward's columns).

    Arithmetic: ``(max_steps x steps_per_generation + 1) x prompts_per_step`` problems drawn with
    replacement from the training pairs of ``add2`` (seed ``cfg.seed + 1``), enough prompts for
    every step of the run and one spare step. GSM8K: the training split, with ``reference`` = the
    number after ``####``.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (``dataset``, ``dataset_config``, ``train_split``, ``max_steps``,
        ``prompts_per_step``, ``steps_per_generation``, ``seed``, ``system_prompt``).
    tokenizer : object
        Passed to :func:`make_prompt` (chat template or plain text); unused for arithmetic.

    Returns
    -------
    datasets.Dataset
        Arithmetic: columns ``prompt`` (``"47+38="``) and ``answer`` (``"85"``), read by
        :func:`~grpo_core.llm.tasks.exact_match_reward`. GSM8K: ``prompt`` (string or chat
        messages) and ``reference`` (float), read by
        :func:`~grpo_core.llm.answers.correctness_reward`; every item whose answer ends in
        ``#### <number>``, in the split's order.

    Raises
    ------
    GrpoError
        The dataset cannot be loaded.
    DataError
        It is not in the GSM8K schema (no ``question``/``answer`` column) or has no item with a
        ``####`` answer.

    References
    ----------
    Cobbe et al. (2021), "Training Verifiers to Solve Math Word Problems" (GSM8K).
    """
    from datasets import Dataset

    from .data import load_gsm8k
    from .tasks import TRAIN_TASK, sample_problems

    if cfg.is_tiny:
        n = cfg.max_steps * cfg.prompts_per_step * cfg.steps_per_generation + cfg.prompts_per_step
        probs = sample_problems(TRAIN_TASK, n, seed=cfg.seed + 1, split="train")
        return Dataset.from_list([{"prompt": p["prompt"], "answer": p["answer"]} for p in probs])
    items = load_gsm8k(cfg.dataset, cfg.dataset_config, cfg.train_split, revision="")
    return Dataset.from_list(
        [{"prompt": make_prompt(it["question"], cfg, tokenizer), "reference": it["reference"]} for it in items]
    )


@dataclass
class EvalSet:
    """One evaluation set: items (``prompt``, ``reference``), the scorer, generation length.

    Attributes
    ----------
    name : str
        The set (``"add2"``, ``"gsm8k"``).
    items : list of dict
        ``{"prompt": str or chat messages, "reference": str or float}``.
    scorer : callable
        From :func:`~grpo_core.llm.evaluation.make_scorer`.
    max_new_tokens : int
        Longest completion, in tokens.
    skipped : int
        Items of the source left out for want of a usable reference.
    """

    name: str
    items: list[dict]
    scorer: Any
    max_new_tokens: int
    skipped: int = 0


def build_eval_sets(cfg: ExperimentConfig, tokenizer) -> dict[str, EvalSet]:
    """The evaluation suite, first entry = the held-out training distribution.

    Arithmetic: held-out pairs of each task (``eval_samples`` of them, fixed seed, so every run
    sees the same problems). GSM8K presets: the benchmarks by hub id (:mod:`grpo_core.llm.data`),
    the first ``eval_samples`` usable items of each.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings (``eval_suite``, ``eval_samples`` (0 = all), ``benchmark_dir``,
        ``max_completion_length``, ``system_prompt``).
    tokenizer : object
        Its ``eos_token_id`` makes the arithmetic scorer; passed to :func:`make_prompt` otherwise.

    Returns
    -------
    dict of str to EvalSet
        In ``eval_suite`` order. Arithmetic: ``min(eval_samples, held-out pairs)`` held-out pairs
        drawn without replacement (seed 12345), the ``exact`` scorer, ``max_new_tokens`` = longest
        answer + 2. Benchmarks: the ``number`` or ``math`` scorer, ``max_new_tokens`` =
        ``max_completion_length``, ``skipped`` = items without a usable reference.

    Raises
    ------
    GrpoError
        A benchmark cannot be loaded.
    DataError
        A benchmark lacks its question or answer column.
    ParameterError
        An unknown benchmark name (:func:`~grpo_core.llm.config.make_config` refuses it already).
    """
    from .data import BENCHMARKS, load_benchmark
    from .evaluation import make_scorer
    from .tasks import TASKS, _pairs, max_answer_length, sample_problems

    out: dict[str, EvalSet] = {}
    for name in cfg.eval_suite:
        if cfg.is_tiny:
            available = len(_pairs(TASKS[name], "test"))
            n = min(cfg.eval_samples or available, available)
            probs = sample_problems(name, n, seed=12345, split="test", replace=False)
            items = [{"prompt": p["prompt"], "reference": p["answer"]} for p in probs]
            out[name] = EvalSet(name, items, make_scorer("exact", tokenizer.eos_token_id), max_answer_length(name) + 2)
        else:
            local = str(Path(cfg.benchmark_dir) / name) if cfg.benchmark_dir else ""
            raw, skipped = load_benchmark(name, path=local, limit=cfg.eval_samples)
            kind = "math" if BENCHMARKS[name].answer_kind == "math" else "number"
            items = [
                {"prompt": make_prompt(it["question"], cfg, tokenizer), "reference": it["reference"]} for it in raw
            ]
            out[name] = EvalSet(name, items, make_scorer(kind), cfg.max_completion_length, skipped)
    return out
