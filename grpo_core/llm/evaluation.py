"""Evaluation of a language model on held-out problems: greedy and sampled accuracy.

One routine for both kinds of experiment: the arithmetic tasks of the CPU preset (exact match of
the completion, which must end with EOS) and the math benchmarks of the GPU presets (the final
number, or a LaTeX answer, extracted from the completion). Generation is batched, left-padded,
with ``torch.no_grad``; greedy decoding gives the *greedy accuracy*, ``k`` samples per problem at
the training temperature give the *sampled accuracy* (the mean reward GRPO optimises, measured on
problems it never trains on).

:class:`EvalCallback` runs the primary evaluation every N optimizer steps during training and
logs it through the trainer (``eval_accuracy``, ``eval_sampled_accuracy``), so the metrics file,
``trainer_state.json`` and the diagnostics (train-eval decoupling) all see it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_integer, check_real
from .answers import answers_match, extract_answer, extract_math_answer, math_answers_equal

__all__ = [
    "EvalResult",
    "generate_completions",
    "evaluate",
    "make_scorer",
    "EvalCallback",
]


@dataclass(frozen=True)
class EvalResult:
    """Accuracy of one model on one evaluation set.

    Attributes
    ----------
    name : str
        The set (``"add2"``, ``"gsm8k"``).
    n : int
        Problems.
    accuracy : float
        Greedy accuracy, in [0, 1].
    sampled_accuracy : float
        Mean reward of ``samples`` sampled completions per problem (NaN when ``samples`` = 0).
    samples : int
        Sampled completions per problem.
    seconds : float
        Wall time.
    stderr : float
        Binomial standard error of the greedy accuracy, sqrt(a (1 - a) / n).
    """

    name: str
    n: int
    accuracy: float
    sampled_accuracy: float
    samples: int
    seconds: float
    stderr: float = field(default=float("nan"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN as ``None``)."""
        out = {k: getattr(self, k) for k in ("name", "n", "accuracy", "sampled_accuracy", "samples", "seconds",
                                            "stderr")}
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in out.items()}


def make_scorer(kind: str, eos_token_id: int | None = None) -> Callable[[str, list[int], Any], float]:
    """A scorer ``(completion_text, completion_ids, reference) -> 0.0 or 1.0``.

    Parameters
    ----------
    kind : {"exact", "number", "math"}
        ``exact``: the text equals the reference string and the ids end with ``eos_token_id``
        (arithmetic); ``number``: :func:`~grpo_core.llm.answers.extract_answer` matches the
        numeric reference; ``math``: :func:`~grpo_core.llm.answers.math_answers_equal`.
    eos_token_id : int, optional
        Required by ``exact``.

    Returns
    -------
    callable
        ``scorer(text, ids, reference) -> float``, 1.0 when right, else 0.0. ``exact`` compares
        ``text.strip()`` with ``str(reference)``; ``number`` uses
        :func:`~grpo_core.llm.answers.answers_match` (absolute tolerance 1e-6); ``math`` compares
        :func:`~grpo_core.llm.answers.extract_math_answer` with ``str(reference)``. ``ids`` is
        only read by ``exact``.

    Raises
    ------
    ParameterError
        Unknown ``kind``, or ``exact`` without ``eos_token_id``.

    Examples
    --------
    >>> make_scorer("exact", eos_token_id=2)("85", [12, 9, 2], "85"), make_scorer("number")("so #### 1,080", [], 1080.0)
    (1.0, 1.0)
    >>> make_scorer("math")(r"\\boxed{\\frac{1}{2}}", [], "0.5")
    1.0
    """
    if kind == "exact":
        if eos_token_id is None:
            raise ParameterError("eos_token_id", "`eos_token_id` is required by the 'exact' scorer")

        def exact(text: str, ids: Sequence[int], ref: Any) -> float:
            return 1.0 if len(ids) and int(ids[-1]) == eos_token_id and text.strip() == str(ref) else 0.0

        return exact
    if kind == "number":
        return lambda text, ids, ref: 1.0 if answers_match(extract_answer(text), ref) else 0.0
    if kind == "math":
        return lambda text, ids, ref: 1.0 if math_answers_equal(extract_math_answer(text), str(ref)) else 0.0
    raise ParameterError("kind", f"`kind` must be one of 'exact', 'number', 'math'; got {kind!r}")


def generate_completions(model, tokenizer, prompts: Sequence[Any], *, max_new_tokens: int, do_sample: bool = False,
                         temperature: float = 1.0, num_return_sequences: int = 1, batch_size: int = 256,
                         seed: int = 0) -> tuple[list[str], list[list[int]]]:
    """Generate completions for a list of prompts; returns (texts, token ids up to and incl. EOS).

    Parameters
    ----------
    model, tokenizer
        A causal LM and its tokenizer (left padding).
    prompts : sequence of str or of chat messages
        Plain strings, or lists of ``{"role", "content"}`` messages (the chat template is applied).
    max_new_tokens : int
        Longest completion, >= 1.
    do_sample : bool
        Sample (full distribution: ``top_k=0``, ``top_p=1``) or decode greedily.
    temperature : float
        Sampling temperature, > 0.
    num_return_sequences : int
        Completions per prompt (consecutive in the output).
    batch_size : int
        Prompts per generate call.
    seed : int
        Seed of the sampling; the global torch random state is saved and restored around the
        call, so evaluating during training does not change the training's own rollouts.

    Returns
    -------
    texts : list of str, length len(prompts) * num_return_sequences
        Decoded without special tokens.
    ids : list of list of int
        Completion token ids, cut after the first EOS (padding removed).

    Raises
    ------
    ParameterError
        ``max_new_tokens`` < 1, ``batch_size`` < 1, or ``temperature`` not > 0 (checked also for
        greedy decoding).
    """
    import torch

    max_new_tokens = check_integer("max_new_tokens", max_new_tokens, low=1)
    batch_size = check_integer("batch_size", batch_size, low=1)
    temperature = check_real("temperature", temperature, low=0, low_inclusive=False)
    eos = tokenizer.eos_token_id
    texts: list[str] = []
    ids_out: list[list[int]] = []
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    # Sample with our own seed without touching the caller's random stream (this runs in the
    # middle of training: resetting the global RNG there would replay the same rollouts).
    rng_guard = torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else [])
    rng_guard.__enter__()
    if do_sample:
        torch.manual_seed(seed)
    gen_kwargs = dict(max_new_tokens=max_new_tokens, do_sample=do_sample, num_return_sequences=num_return_sequences,
                      pad_token_id=tokenizer.pad_token_id, eos_token_id=eos)
    if do_sample:
        gen_kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
    else:
        gen_kwargs.update(temperature=None, top_k=None, top_p=None)
    try:
        for start in range(0, len(prompts), batch_size):
            chunk = list(prompts[start:start + batch_size])
            if chunk and not isinstance(chunk[0], str):
                chunk = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in chunk]
                enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
            else:
                enc = tokenizer(chunk, return_tensors="pt", padding=True)
            enc = {k: v.to(device) for k, v in enc.items()}
            with torch.no_grad():
                out = model.generate(**enc, **gen_kwargs)
            completions = out[:, enc["input_ids"].shape[1]:].tolist()
            for row in completions:
                if eos in row:
                    row = row[: row.index(eos) + 1]
                row = [t for t in row if t != tokenizer.pad_token_id or t == eos]
                ids_out.append(row)
                texts.append(tokenizer.decode(row, skip_special_tokens=True))
    finally:
        rng_guard.__exit__(None, None, None)
        if was_training:
            model.train()
    return texts, ids_out


def evaluate(model, tokenizer, items: Sequence[dict], scorer, *, name: str = "eval", max_new_tokens: int,
             samples: int = 0, temperature: float = 1.0, batch_size: int = 256, seed: int = 0) -> EvalResult:
    """Greedy and sampled accuracy of ``model`` on ``items``.

    Parameters
    ----------
    model, tokenizer
        The model under test.
    items : sequence of dict
        Each with ``"prompt"`` (a string or chat messages) and ``"reference"``.
    scorer : callable
        From :func:`make_scorer`.
    name : str
        Name of the set, for the result.
    max_new_tokens : int
        Longest completion.
    samples : int
        Sampled completions per problem for the sampled accuracy (0: greedy only).
    temperature : float
        Sampling temperature.
    batch_size : int
        Prompts per generate call.
    seed : int
        Sampling seed.

    Returns
    -------
    EvalResult

    Raises
    ------
    ParameterError
        No items, an item without ``prompt``/``reference``, ``samples`` < 0, ``max_new_tokens``
        < 1, ``batch_size`` < 1, ``temperature`` not > 0.

    Examples
    --------
    >>> from grpo_core.llm.model import build_tiny
    >>> model, tok = build_tiny(seed=0)                 # untrained: it cannot add yet
    >>> items = [{"prompt": "12+30=", "reference": "42"}, {"prompt": "11+11=", "reference": "22"}]
    >>> res = evaluate(model, tok, items, make_scorer("exact", tok.eos_token_id), max_new_tokens=4, samples=2)
    >>> res.n, res.accuracy, res.samples
    (2, 0.0, 2)
    """
    if not items:
        raise ParameterError("items", "`items` must hold at least one problem")
    if any("prompt" not in it or "reference" not in it for it in items):
        raise ParameterError("items", "every item needs a 'prompt' and a 'reference'")
    samples = check_integer("samples", samples, low=0)
    batch_size = check_integer("batch_size", batch_size, low=1)
    t0 = time.perf_counter()
    prompts = [it["prompt"] for it in items]
    texts, ids = generate_completions(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
    greedy = np.array([scorer(t, i, it["reference"]) for t, i, it in zip(texts, ids, items)])
    sampled = float("nan")
    if samples:
        texts, ids = generate_completions(model, tokenizer, prompts, max_new_tokens=max_new_tokens, do_sample=True,
                                          temperature=temperature, num_return_sequences=samples,
                                          batch_size=max(1, batch_size // samples), seed=seed)
        refs = [it["reference"] for it in items for _ in range(samples)]
        sampled = float(np.mean([scorer(t, i, r) for t, i, r in zip(texts, ids, refs)]))
    acc = float(greedy.mean())
    return EvalResult(name=name, n=len(items), accuracy=acc, sampled_accuracy=sampled, samples=samples,
                      seconds=time.perf_counter() - t0, stderr=float(np.sqrt(acc * (1 - acc) / len(items))))


try:
    from transformers import TrainerCallback as _Base
except ImportError:  # pragma: no cover
    _Base = object


class EvalCallback(_Base):
    """Evaluate every ``every`` optimizer steps and log ``eval_accuracy`` through the trainer.

    Parameters
    ----------
    run_eval : callable
        ``run_eval(model) -> EvalResult`` (the primary held-out set).
    every : int
        Steps between evaluations, >= 1.

    Raises
    ------
    ParameterError
        ``every`` < 1.

    Notes
    -----
    The result is logged with ``trainer.log`` while the model is in eval mode, so TRL files it as an
    evaluation row (``eval_`` keys) and does not mix it with the training metrics it is averaging;
    set :attr:`trainer` after building the trainer. ``trainer.log`` clears the trainer's
    ``should_log`` flag, which is restored so the step's own training row is still logged.
    """

    def __init__(self, run_eval: Callable[[Any], EvalResult], every: int):
        self.run_eval = run_eval
        self.every = check_integer("every", every, low=1)
        self.trainer = None
        self.seconds = 0.0
        self.history: list[dict[str, Any]] = []

    def on_step_end(self, args, state, control, model=None, **kwargs):
        """After every optimizer step: evaluate and log when ``state.global_step`` is a multiple of
        ``every``.

        Parameters
        ----------
        args : transformers.TrainingArguments
            The trainer's arguments (unused).
        state : transformers.TrainerState
            ``global_step`` decides whether to evaluate.
        control : transformers.TrainerControl
            Returned with ``should_log`` as it was before the evaluation.
        model : torch.nn.Module, optional
            The model being trained; evaluated in eval mode, then put back in train mode. Nothing
            is done without it or before :attr:`trainer` is set.
        **kwargs
            Other objects the trainer passes to callbacks (ignored).

        Returns
        -------
        transformers.TrainerControl
            ``control``. The evaluation's wall time is added to :attr:`seconds` and its logged
            values (``step``, ``eval_accuracy``, and ``eval_sampled_accuracy`` when finite) to
            :attr:`history`.

        References
        ----------
        transformers documentation, ``TrainerCallback`` (the event arguments).
        """
        if state.global_step % self.every or self.trainer is None or model is None:
            return control
        t0 = time.perf_counter()
        should_log = control.should_log  # the trainer's own log of this step must still happen
        model.eval()
        try:
            result = self.run_eval(model)
            logs = {"eval_accuracy": result.accuracy}
            if np.isfinite(result.sampled_accuracy):
                logs["eval_sampled_accuracy"] = result.sampled_accuracy
            self.trainer.log(logs)
            self.history.append({"step": int(state.global_step), **logs})
        finally:
            model.train()
            control.should_log = should_log
        self.seconds += time.perf_counter() - t0
        return control
