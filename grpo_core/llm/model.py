"""Models for the LLM experiments: the tiny Qwen2-style model, its supervised warm-up, hub loading.

On the CPU the experiment uses a small transformer built from a configuration (no download):
Qwen2 architecture (RoPE, RMSNorm, SwiGLU), 2 layers, hidden size 128, 4 heads, ~0.4 M parameters.
A short supervised warm-up on the arithmetic task gives GRPO a policy whose *sampled* answers are
right some of the time, so the group-relative advantage has something to push on; GRPO then mostly
sharpens the sampling distribution towards what the greedy decoder already knows.

On a GPU the same code loads a pretrained model by hub id (``AutoModelForCausalLM.from_pretrained``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import GrpoError, ParameterError
from ..validation import check_integer, check_real
from .tasks import WARMUP_MIX, build_char_tokenizer, sample_mixture

__all__ = [
    "TinyModelSpec",
    "build_tiny_model",
    "warmup",
    "WarmupResult",
    "load_pretrained",
    "count_parameters",
    "CHAT_TEMPLATE",
    "build_chat_tokenizer",
    "save_tiny_chat_model",
]


@dataclass(frozen=True)
class TinyModelSpec:
    """Architecture of the tiny Qwen2-style model (defaults: ~0.4 M parameters).

    Attributes
    ----------
    hidden_size : int
        Width of the residual stream (128).
    intermediate_size : int
        Width of the SwiGLU MLP (384).
    num_layers : int
        Transformer blocks (2).
    num_heads : int
        Attention heads (4); ``hidden_size`` must be a multiple.
    max_positions : int
        Longest sequence (32 tokens covers prompt and answer of every arithmetic task).
    """

    hidden_size: int = 128
    intermediate_size: int = 384
    num_layers: int = 2
    num_heads: int = 4
    max_positions: int = 32


def count_parameters(model) -> int:
    """Number of trainable parameters of a torch module.

    Parameters
    ----------
    model : torch.nn.Module
        Any module; parameters with ``requires_grad=False`` are not counted. Tied weights are
        counted once (``parameters()`` yields a shared tensor once).

    Returns
    -------
    int
        Sum of ``numel()`` over the trainable parameters (scalars, not bytes).

    Examples
    --------
    >>> import torch
    >>> count_parameters(torch.nn.Linear(3, 2))
    8
    """
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def build_tiny_model(tokenizer, spec: TinyModelSpec = TinyModelSpec(), seed: int = 0):
    """A randomly initialised Qwen2-style causal LM sized for the character tokenizer.

    Parameters
    ----------
    tokenizer : PreTrainedTokenizerFast
        From :func:`~grpo_core.llm.tasks.build_char_tokenizer`; gives the vocabulary size and the
        special-token ids.
    spec : TinyModelSpec
        The architecture.
    seed : int
        Seed of the initial weights (``torch.manual_seed``).

    Returns
    -------
    transformers.Qwen2ForCausalLM
        In float32, on the CPU, with tied input and output embeddings.

    Raises
    ------
    ParameterError
        If ``hidden_size`` is not a multiple of ``num_heads``.

    Examples
    --------
    >>> from grpo_core.llm.tasks import build_char_tokenizer
    >>> count_parameters(build_tiny_model(build_char_tokenizer()))
    429568
    """
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    if spec.hidden_size % spec.num_heads:
        raise ParameterError(
            "hidden_size", f"`hidden_size` must be a multiple of `num_heads` ({spec.num_heads}); got {spec.hidden_size}"
        )
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


@dataclass(frozen=True)
class WarmupResult:
    """What the supervised warm-up did.

    Attributes
    ----------
    steps : int
        Optimizer steps taken.
    final_loss : float
        Mean cross-entropy of the last 20 steps (nats per answer token).
    seconds : float
        Wall time.
    losses : tuple of float
        Loss per step (nats per answer token).
    """

    steps: int
    final_loss: float
    seconds: float
    losses: tuple[float, ...]


def warmup(
    model,
    tokenizer,
    *,
    mix=WARMUP_MIX,
    steps: int = 400,
    batch_size: int = 128,
    learning_rate: float = 1e-3,
    anneal: float = 0.3,
    seed: int = 0,
) -> WarmupResult:
    """Supervised warm-up: next-token cross-entropy on ``prompt + answer + <eos>``, answer tokens only.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        Trained in place (AdamW, gradient clipping 1.0; ``learning_rate`` constant, then a linear
        decay to 10% of it over the last ``anneal`` fraction of the steps).
    tokenizer : PreTrainedTokenizerFast
        The character tokenizer.
    mix : sequence of (str, float)
        Task mixture (training pairs of each), default
        :data:`~grpo_core.llm.tasks.WARMUP_MIX`.
    steps : int
        Optimizer steps, >= 0 (0 leaves the model as it is).
    batch_size : int
        Problems per step, >= 1.
    learning_rate : float
        Learning rate, > 0 (1e-3 learns two-digit addition in ~500 steps; 2e-3 was erratic).
    anneal : float
        Fraction of the steps, in [0, 1], over which the rate decays at the end (0: constant).
    seed : int
        Seed of the problem stream.

    Returns
    -------
    WarmupResult

    Raises
    ------
    ParameterError
        Bad ``steps``, ``batch_size``, ``learning_rate`` or ``anneal`` (reported under the names
        ``warmup_steps``, ``warmup_batch_size``, ``warmup_learning_rate``, ``warmup_anneal`` of
        :class:`~grpo_core.llm.config.ExperimentConfig`); unknown task or bad weights in ``mix``.

    Examples
    --------
    >>> model, tok = build_tiny(seed=0)
    >>> result = warmup(model, tok, steps=3, batch_size=8)
    >>> result.steps, len(result.losses), bool(result.losses[0] > 2.0)   # ln(17) = 2.83 at random
    (3, 3, True)
    """
    import torch

    steps = check_integer("warmup_steps", steps, low=0)
    batch_size = check_integer("warmup_batch_size", batch_size, low=1)
    learning_rate = check_real("warmup_learning_rate", learning_rate, low=0, low_inclusive=False)
    anneal = check_real("warmup_anneal", anneal, low=0, high=1)
    start = time.perf_counter()
    if steps == 0:
        return WarmupResult(0, math.nan, 0.0, ())
    problems = sample_mixture(mix, steps * batch_size, seed=seed + 7919)
    eos = tokenizer.eos_token
    texts = [p["prompt"] + p["answer"] + eos for p in problems]
    prompt_lengths = np.array([len(tokenizer(p["prompt"])["input_ids"]) for p in problems])
    enc = tokenizer(texts, padding=True, return_tensors="pt", padding_side="right")
    ids, attn = enc["input_ids"], enc["attention_mask"]
    labels = ids.clone()
    positions = torch.arange(ids.shape[1])[None, :]
    labels[positions < torch.as_tensor(prompt_lengths)[:, None]] = -100
    labels[attn == 0] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    # constant, then a linear decay to 10% over the last `anneal` fraction of the steps: the
    # constant phase learns fast, the decay settles the weights (less seed-to-seed scatter)
    decay_from = int(round(steps * (1.0 - anneal)))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: 1.0 if s < decay_from else 1.0 - 0.9 * (s - decay_from) / max(steps - decay_from, 1)
    )
    model.train()
    losses = []
    for s in range(steps):
        sl = slice(s * batch_size, (s + 1) * batch_size)
        out = model(input_ids=ids[sl], attention_mask=attn[sl], labels=labels[sl])
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(out.loss.detach()))
    model.eval()
    return WarmupResult(steps, float(np.mean(losses[-20:])), time.perf_counter() - start, tuple(losses))


def load_pretrained(
    model_id: str,
    *,
    dtype: str = "auto",
    device: str = "cpu",
    revision: str | None = None,
    attn_implementation: str | None = None,
):
    """Load a pretrained causal LM and its tokenizer from the hub or a local folder.

    Parameters
    ----------
    model_id : str
        Hub id (``"Qwen/Qwen2.5-0.5B-Instruct"``) or path of a folder written by
        ``save_pretrained``.
    dtype : {"auto", "bfloat16", "float16", "float32"}
        Weights' dtype.
    device : str
        ``"cpu"``, ``"cuda"``, ...
    revision : str, optional
        Hub revision (commit, tag or branch).
    attn_implementation : str, optional
        Passed to ``from_pretrained`` (``"sdpa"``, ``"flash_attention_2"``).

    Returns
    -------
    (model, tokenizer)
        The tokenizer pads on the left and has a pad token (the EOS token when it had none).

    Raises
    ------
    ParameterError
        Unknown ``dtype``.
    GrpoError
        If the model or tokenizer cannot be loaded (``OSError`` or ``ValueError`` from
        ``from_pretrained``: unknown id, no network, missing files); the message names the model
        and the cause.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtypes = {"auto": "auto", "bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
    if dtype not in dtypes:
        raise ParameterError("dtype", f"`dtype` must be one of {sorted(dtypes)}; got {dtype!r}")
    kwargs = {"revision": revision} if revision else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_id, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(
            model_id,
            dtype=dtypes[dtype],
            **kwargs,
            **({"attn_implementation": attn_implementation} if attn_implementation else {}),
        )
    except (OSError, ValueError) as exc:
        raise GrpoError(
            f"model `{model_id}` cannot be loaded: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}"
        ) from exc
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(device), tokenizer


def build_tiny(seed: int = 0, spec: TinyModelSpec = TinyModelSpec()):
    """Tokenizer and tiny model for the arithmetic task in one call: ``(model, tokenizer)``.

    Parameters
    ----------
    seed : int, default 0
        Seed of the initial weights (``torch.manual_seed``; sets the global torch seed).
    spec : TinyModelSpec, optional
        The architecture (default: ~0.4 M parameters).

    Returns
    -------
    model : transformers.Qwen2ForCausalLM
        Randomly initialised (no warm-up), float32, on the CPU (:func:`build_tiny_model`).
    tokenizer : transformers.PreTrainedTokenizerFast
        The character tokenizer (:func:`~grpo_core.llm.tasks.build_char_tokenizer`).

    Raises
    ------
    ParameterError
        If ``spec.hidden_size`` is not a multiple of ``spec.num_heads``.

    Examples
    --------
    >>> model, tok = build_tiny(seed=0)
    >>> count_parameters(model), len(tok)
    (429568, 17)
    """
    tokenizer = build_char_tokenizer()
    return build_tiny_model(tokenizer, spec, seed=seed), tokenizer


#: A ChatML-style template (the layout of Qwen's), written in plain characters so that the
#: character tokenizer can encode it.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_chat_tokenizer():
    r"""A character tokenizer over printable ASCII with a chat template, built in code (no download).

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        :func:`~grpo_core.llm.tasks.build_char_tokenizer` over the printable ASCII characters
        (letters, digits, punctuation, space, tab, newline; 4 special tokens + 97 characters) with
        :data:`CHAT_TEMPLATE`, so that chat-formatted prompts take the path of an instruct model's.

    Examples
    --------
    >>> tok = build_chat_tokenizer()
    >>> tok.apply_chat_template([{"role": "user", "content": "2+2?"}], tokenize=False, add_generation_prompt=True)
    '<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n'
    >>> len(tok)
    101
    """
    import string

    alphabet = "".join(dict.fromkeys(string.printable.replace("\x0b", "").replace("\x0c", "").replace("\r", "")))
    tokenizer = build_char_tokenizer(alphabet)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def save_tiny_chat_model(folder, spec: TinyModelSpec | None = None, *, seed: int = 0):
    """Write a from-config causal LM and the chat tokenizer to ``folder``, laid out like a hub model.

    ``model=<folder>`` then takes the pretrained-model path of the GSM8K presets
    (``from_pretrained``, chat-formatted prompts) without a download.

    Parameters
    ----------
    folder : str or path
        Created if missing.
    spec : TinyModelSpec, optional
        The architecture (default: hidden size 32, one layer, 2 heads, 1024 positions: room for a
        GSM8K prompt in characters plus the completion).
    seed : int, default 0
        Seed of the random initial weights.

    Returns
    -------
    pathlib.Path
        The folder (``config.json``, the weights, the tokenizer files with the chat template).

    Raises
    ------
    ParameterError
        ``spec.hidden_size`` not a multiple of ``spec.num_heads``.
    """
    from pathlib import Path

    spec = spec or TinyModelSpec(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_positions=1024)
    tokenizer = build_chat_tokenizer()
    model = build_tiny_model(tokenizer, spec, seed=seed)
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
