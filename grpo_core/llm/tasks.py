"""The CPU task: multi-digit arithmetic with an exact-match reward, and its tokenizer.

A prompt is ``"<bos>47+38="``, the right completion ``"85<eos>"``. The reward is 1 when the
completion (decoded without special tokens) equals the result *and* ends with the end-of-sequence
token, else 0: a verifiable, binary reward that needs no download. The task family has a training
distribution and variants at growing distance from it, for the transfer study:

========== ================================== =============================================
name       problems                           distance from training
========== ================================== =============================================
``add2``   a + b, a, b in [10, 99]            training distribution (held-out pairs for eval)
``add1``   a + b, a, b in [0, 99], one < 10  near: another operand range (a one-digit operand)
``add3``   a + b, a, b in [100, 999]          mid: more digits (longer prompt and answer)
``sub2``   a - b, 10 <= b <= a <= 99          far: another operation (an unseen token)
========== ================================== =============================================

Every task's held-out split is fixed by the pair itself (a hash of the pair: 10% of the pairs), so neither the warm-up
nor GRPO ever sees an evaluation pair, whatever the seed. The
supervised warm-up (the stand-in for pre-training) draws from a mixture of all four tasks; GRPO
then trains on ``add2`` alone, and the evaluations at the start and the end measure how much of
the improvement carries over to each variant.

The tokenizer is built in code: one token per character of ``0123456789+-=`` plus ``<pad>``,
``<bos>``, ``<eos>``, ``<unk>``; a ``tokenizers`` WordLevel model with a per-character
``Split(..., behavior="isolated")`` pre-tokenizer, a ``Fuse`` decoder (so decoding inserts no
spaces), ``<bos>`` prepended by the post-processor, and left padding, wrapped in
``PreTrainedTokenizerFast`` so TRL accepts it as ``processing_class``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..validation import check_choice, check_integer

__all__ = [
    "ArithmeticTask",
    "TASKS",
    "TRAIN_TASK",
    "TRANSFER_TASKS",
    "WARMUP_MIX",
    "SPLITS",
    "sample_mixture",
    "ALPHABET",
    "SPECIAL_TOKENS",
    "build_char_tokenizer",
    "sample_problems",
    "exact_match_reward",
    "max_answer_length",
]

#: Characters of the arithmetic tasks (one token each).
ALPHABET = "0123456789+-="
#: Special tokens, in vocabulary order (ids 0..3).
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


@dataclass(frozen=True)
class ArithmeticTask:
    """One arithmetic problem family.

    Attributes
    ----------
    name : str
        Short name (``"add2"``).
    op : {"+", "-"}
        The operation.
    a_range, b_range : tuple of int
        Inclusive ranges of the two operands.
    distance : int
        Rank of the distance from the training distribution (0 = training), for plots.
    description : str
        One line for tables and charts.
    short_operand : bool
        Keep only pairs where at least one operand is below 10.
    """

    name: str
    op: str
    a_range: tuple[int, int]
    b_range: tuple[int, int]
    distance: int = 0
    description: str = ""
    short_operand: bool = False

    def answer(self, a: int, b: int) -> int:
        """The exact result of ``a op b``.

        Parameters
        ----------
        a, b : int
            The operands (not checked against ``a_range``/``b_range``).

        Returns
        -------
        int
            ``a + b`` for ``op = "+"``, else ``a - b`` (negative if ``b > a``).

        Examples
        --------
        >>> TASKS["sub2"].answer(47, 38)
        9
        """
        return a + b if self.op == "+" else a - b

    def prompt(self, a: int, b: int) -> str:
        """The prompt text (without ``<bos>``, which the tokenizer adds): ``"47+38="``.

        Parameters
        ----------
        a, b : int
            The operands (not checked against the task's ranges).

        Returns
        -------
        str
            ``f"{a}{op}{b}="``, no spaces.

        Examples
        --------
        >>> TASKS["add2"].prompt(47, 38)
        '47+38='
        """
        return f"{a}{self.op}{b}="


TASKS: dict[str, ArithmeticTask] = {
    "add2": ArithmeticTask("add2", "+", (10, 99), (10, 99), 0, "two-digit addition (the GRPO task)"),
    "add1": ArithmeticTask("add1", "+", (0, 99), (0, 99), 1, "addition with a one-digit operand (other operand range)",
                           short_operand=True),
    "add3": ArithmeticTask("add3", "+", (100, 999), (100, 999), 2, "three-digit addition (more digits)"),
    "sub2": ArithmeticTask("sub2", "-", (10, 99), (10, 99), 3, "two-digit subtraction, a >= b (other operation)"),
}
#: The task GRPO trains on.
TRAIN_TASK = "add2"
#: Evaluation tasks, nearest first: in-distribution (held-out pairs), near, mid, far.
TRANSFER_TASKS = ("add2", "add1", "add3", "sub2")
#: Default warm-up ("pre-training") mixture: the GRPO task and every transfer variant, so the
#: warmed-up model has some competence everywhere and GRPO on ``add2`` alone can transfer (or not).
WARMUP_MIX = (("add2", 0.4), ("add1", 0.2), ("add3", 0.2), ("sub2", 0.2))


SPLITS = ("train", "test", "all")


def _held_out(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The 10% of pairs kept for evaluation: a multiplicative hash of the pair, so that the split
    is not tied to the answer (a rule like ``(7a + 3b) % 10`` would hold out every subtraction
    whose result ends in 0)."""
    h = ((a.astype(np.uint64) * np.uint64(1000003) + b.astype(np.uint64)) * np.uint64(2654435761)) % np.uint64(2**32)
    return (h >> np.uint64(16)) % np.uint64(10) == 0


def _pairs(task: ArithmeticTask, split: str = "all") -> np.ndarray:
    a = np.arange(task.a_range[0], task.a_range[1] + 1)
    b = np.arange(task.b_range[0], task.b_range[1] + 1)
    aa, bb = np.meshgrid(a, b, indexing="ij")
    keep = np.ones_like(aa, dtype=bool)
    if task.op == "-":
        keep &= aa >= bb
    if task.short_operand:
        keep &= (aa < 10) | (bb < 10)
    held_out = _held_out(aa, bb)
    if split == "train":
        keep &= ~held_out
    elif split == "test":
        keep &= held_out
    return np.stack([aa[keep], bb[keep]], axis=1)


def sample_problems(
    task: ArithmeticTask | str, n: int, seed: int, *, split: str = "train", replace: bool = True
) -> list[dict]:
    """Draw ``n`` problems of one task.

    Parameters
    ----------
    task : ArithmeticTask or str
        The task or its name in :data:`TASKS`.
    n : int
        Number of problems, >= 1. Without replacement, at most the number of pairs.
    seed : int
        Seed of the draw (numpy ``default_rng``), >= 0.
    split : {"train", "test", "all"}
        The 90% training pairs, the 10% held out (a fixed hash of the pair), or all.
    replace : bool
        Draw with replacement (training streams) or without (evaluation sets).

    Returns
    -------
    list of dict
        Each ``{"prompt": "47+38=", "answer": "85", "a": 47, "b": 38}``.

    Raises
    ------
    ParameterError
        Unknown task name or ``split``, ``n < 1``, a negative ``seed``, or more problems than pairs
        without replacement.

    Examples
    --------
    >>> [p["prompt"] + p["answer"] for p in sample_problems("sub2", 2, seed=0)]
    ['93-10=83', '81-65=16']
    """
    if isinstance(task, str):
        task = TASKS[check_choice("task", task, TASKS)]
    n = check_integer("n", n, low=1)
    pairs = _pairs(task, check_choice("split", split, SPLITS))
    if not replace and n > len(pairs):
        raise ParameterError(
            "n", f"`n` must be <= {len(pairs)} (the number of {task.name} pairs) without replacement; got {n}"
        )
    rng = np.random.default_rng(check_integer("seed", seed, low=0))
    idx = rng.choice(len(pairs), size=n, replace=replace)
    return [
        {"prompt": task.prompt(int(a), int(b)), "answer": str(task.answer(int(a), int(b))), "a": int(a), "b": int(b)}
        for a, b in pairs[idx]
    ]


def sample_mixture(mix, n: int, seed: int, *, split: str = "train") -> list[dict]:
    """Draw ``n`` problems from a weighted mixture of tasks, shuffled.

    Parameters
    ----------
    mix : sequence of (str, float)
        Task names and non-negative weights (normalised here), e.g. :data:`WARMUP_MIX`.
    n : int
        Number of problems, >= 1.
    seed : int
        Seed of the draw.
    split : {"train", "test", "all"}
        Which pairs of every task.

    Returns
    -------
    list of dict
        As :func:`sample_problems`; each task contributes ``floor(n * weight / sum(weights))``
        problems, the task with the largest weight the remainder as well, in random order.

    Raises
    ------
    ParameterError
        Unknown task or ``split``, ``n < 1``, a negative ``seed``, an empty ``mix``, a weight that is
        not a number, non-finite, negative or all-zero weights.

    Examples
    --------
    >>> probs = sample_mixture((("add2", 0.5), ("sub2", 0.5)), 10, seed=1)
    >>> sum("-" in p["prompt"] for p in probs)
    5
    """
    n = check_integer("n", n, low=1)
    seed = check_integer("seed", seed, low=0)
    names = [check_choice("task", name, TASKS) for name, _ in mix]
    try:
        weights = np.array([float(w) for _, w in mix])
    except (TypeError, ValueError):
        raise ParameterError("mix", f"`mix` weights must be numbers; got {[w for _, w in mix]}") from None
    if weights.size == 0 or np.any(~np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise ParameterError("mix", f"`mix` weights must be finite, >= 0 and not all 0; got {list(weights)}")
    counts = np.floor(n * weights / weights.sum()).astype(int)
    counts[int(np.argmax(weights))] += n - int(counts.sum())
    problems = []
    for i, (name, count) in enumerate(zip(names, counts)):
        if count > 0:
            problems += sample_problems(name, int(count), seed=seed * 101 + i, split=split)
    order = np.random.default_rng(seed).permutation(len(problems))
    return [problems[i] for i in order]


def max_answer_length(task: ArithmeticTask | str) -> int:
    """Characters of the longest answer of a task (e.g. 3 for ``add2``: 99 + 99 = 198).

    Parameters
    ----------
    task : ArithmeticTask or str
        The task or its name in :data:`TASKS`.

    Returns
    -------
    int
        Length of the longest ``str(answer)`` over all pairs of the task (both splits), in
        characters (= tokens of the character tokenizer, EOS not counted).

    Raises
    ------
    ParameterError
        Unknown task name.

    Examples
    --------
    >>> max_answer_length("add2"), max_answer_length("add3"), max_answer_length("sub2")
    (3, 4, 2)
    """
    if isinstance(task, str):
        task = TASKS[check_choice("task", task, TASKS)]
    pairs = _pairs(task, "all")
    results = [task.answer(int(a), int(b)) for a, b in pairs]
    return max(len(str(r)) for r in results)


def build_char_tokenizer(alphabet: str = ALPHABET):
    """A character-level tokenizer built in code, usable as TRL's ``processing_class``.

    Parameters
    ----------
    alphabet : str
        The characters, one token each (after the four special tokens). Unique characters.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        Vocabulary ``<pad> <bos> <eos> <unk>`` + ``alphabet`` (ids 0..3 then in order); adds
        ``<bos>`` in front of every text; pads on the left (generation needs it).

    Raises
    ------
    ParameterError
        If ``alphabet`` is empty or repeats a character.

    Examples
    --------
    >>> tok = build_char_tokenizer()
    >>> tok("12+3=")["input_ids"]
    [1, 5, 6, 14, 7, 16]
    >>> tok.decode([5, 6, 2], skip_special_tokens=True)
    '12'
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    if not alphabet or len(set(alphabet)) != len(alphabet):
        raise ParameterError(
            "alphabet", f"`alphabet` must be a non-empty string of distinct characters; got {alphabet!r}"
        )
    vocab = {tok: i for i, tok in enumerate((*SPECIAL_TOKENS, *alphabet))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        padding_side="left",
    )
    return tokenizer


def exact_match_reward(eos_token_id: int):
    """TRL reward function of the arithmetic task: 1 if the completion is exactly the answer + EOS.

    Parameters
    ----------
    eos_token_id : int
        The end-of-sequence id; a completion must end with it (TRL decodes completions without
        special tokens, so the text alone cannot tell "85" from "85" cut off by the length limit).

    Returns
    -------
    callable
        ``f(prompts, completions, completion_ids, answer, **kw) -> list[float]`` named
        ``exact_match`` (TRL logs ``rewards/exact_match/mean``): 1.0 when
        ``completion.strip() == str(answer)`` and the ids end with ``eos_token_id``, else 0.0.
        Without ``completion_ids`` (``None``) the EOS check is skipped.

    References
    ----------
    TRL documentation, ``GRPOTrainer``, "Using a custom reward function" (the reward-function
    signature, with ``completion_ids`` and the dataset columns as keyword arguments).

    Examples
    --------
    >>> f = exact_match_reward(eos_token_id=2)
    >>> f(completions=["85", "85", "86"], completion_ids=[[12, 9, 2], [12, 9], [12, 10, 2]], answer=["85"] * 3)
    [1.0, 0.0, 0.0]
    """

    def exact_match(prompts=None, completions=(), completion_ids=None, answer=(), **kwargs) -> list[float]:
        out = []
        ids = completion_ids if completion_ids is not None else [None] * len(completions)
        for text, token_ids, ref in zip(completions, ids, answer):
            ended = token_ids is None or (len(token_ids) > 0 and int(token_ids[-1]) == eos_token_id)
            out.append(1.0 if ended and str(text).strip() == str(ref) else 0.0)
        return out

    return exact_match
