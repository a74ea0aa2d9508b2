"""GPU memory of a GSM8K preset, sized by arithmetic: bytes per parameter plus rough activations.

This is *sizing*, not measurement: the bytes a full fine-tuning with AdamW keeps per parameter
(weights, gradients, the two Adam moments, the reference policy when ``beta > 0``), the key/value
cache of generation, and a rough count of the activations and logits of one micro-batch. Real
runs add the CUDA context, allocator fragmentation and temporary buffers; :func:`memory_estimate`
leaves a margin for them (``headroom``) instead of pretending to know them.

Architectures (:data:`ARCHITECTURES`) are those of the models' ``config.json`` on the hub;
:func:`count_parameters_of` gives their parameter counts from the shapes, so the counts can be
checked against the model cards (0.49 B, 1.54 B, 1.78 B, 4.19 B, 6.91 B).

References
----------
Rajbhandari et al. (2020), "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models"
(2 + 2 + 12 bytes per parameter under mixed precision with Adam); Korthikanti et al. (2022),
"Reducing Activation Recomputation in Large Transformer Models" (about 34 s b h bytes of
activations per layer without attention scores).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..validation import check_choice, check_integer, check_real

__all__ = ["Architecture", "ARCHITECTURES", "count_parameters_of", "from_config_kwargs", "memory_estimate",
           "STRATEGIES", "PRESET_SIZING", "sizing_table"]

GIB = 1024 ** 3
#: Ways of spreading the training state over the GPUs (``ddp``: every GPU holds all of it).
STRATEGIES = ("ddp", "zero2", "zero3", "fsdp")


@dataclass(frozen=True)
class Architecture:
    """Shapes of a decoder-only transformer (the fields of its ``config.json``).

    Attributes
    ----------
    hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, vocab_size : int
        As in ``config.json``; the head dimension is ``hidden_size / num_heads``.
    tied_embeddings : bool
        Input and output embeddings share one matrix.
    mlp_matrices : int
        3 for SwiGLU (Qwen2, Llama), 2 for a plain MLP (Nemotron's squared ReLU).
    qkv_bias : bool
        Biases on the query, key and value projections (Qwen2).
    model_type : str
        The transformers model type (``qwen2``, ``nemotron``, ``llama``), for building the
        architecture from a config (:func:`from_config_kwargs`).
    """

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    vocab_size: int
    tied_embeddings: bool
    mlp_matrices: int = 3
    qkv_bias: bool = False
    model_type: str = "qwen2"

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.num_heads


#: The models of the GSM8K presets (hub id -> shapes from its ``config.json``).
ARCHITECTURES: dict[str, Architecture] = {
    "Qwen/Qwen2.5-0.5B-Instruct": Architecture(896, 4864, 24, 14, 2, 151936, True, qkv_bias=True),
    "Qwen/Qwen2.5-1.5B-Instruct": Architecture(1536, 8960, 28, 12, 2, 151936, True, qkv_bias=True),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": Architecture(1536, 8960, 28, 12, 2, 151936, False, qkv_bias=True),
    "nvidia/Nemotron-Mini-4B-Instruct": Architecture(3072, 9216, 32, 24, 8, 256000, False, mlp_matrices=2,
                                                     model_type="nemotron"),
    "deepseek-ai/deepseek-llm-7b-chat": Architecture(4096, 11008, 30, 32, 32, 102400, False, model_type="llama"),
}


def count_parameters_of(arch: Architecture) -> int:
    """Parameters of an architecture, from its shapes (embeddings, attention, MLP, norms).

    Parameters
    ----------
    arch : Architecture

    Returns
    -------
    int
        Number of parameters (scalars).

    Examples
    --------
    >>> round(count_parameters_of(ARCHITECTURES["Qwen/Qwen2.5-0.5B-Instruct"]) / 1e9, 3)
    0.494
    >>> round(count_parameters_of(ARCHITECTURES["deepseek-ai/deepseek-llm-7b-chat"]) / 1e9, 2)
    6.91
    """
    h, kv = arch.hidden_size, arch.num_kv_heads * arch.head_dim
    attention = h * h + 2 * h * kv + h * h + ((h + 2 * kv) if arch.qkv_bias else 0)
    mlp = arch.mlp_matrices * h * arch.intermediate_size
    embeddings = arch.vocab_size * h * (1 if arch.tied_embeddings else 2)
    return int(embeddings + arch.num_layers * (attention + mlp + 2 * h) + h)


def from_config_kwargs(arch: Architecture, *, max_positions: int = 4096, **special) -> dict:
    """Keyword arguments of ``transformers.AutoConfig.for_model(arch.model_type, ...)`` for ``arch``.

    Parameters
    ----------
    arch : Architecture
    max_positions : int
        ``max_position_embeddings``.
    **special
        Token ids (``bos_token_id``, ``eos_token_id``, ``pad_token_id``) passed through.

    Returns
    -------
    dict
        The shapes under transformers' names, ``tie_word_embeddings``, and ``special``.
    """
    return dict(
        hidden_size=arch.hidden_size, intermediate_size=arch.intermediate_size, num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads, num_key_value_heads=arch.num_kv_heads, vocab_size=arch.vocab_size,
        tie_word_embeddings=arch.tied_embeddings, max_position_embeddings=max_positions, **special,
    )


def memory_estimate(
    arch: Architecture,
    *,
    per_device_batch: int,
    generation_batch: int,
    prompt_length: int,
    completion_length: int,
    reference: bool,
    strategy: str = "ddp",
    num_gpus: int = 1,
    precision: str = "bf16",
    gradient_checkpointing: bool = True,
    vllm_fraction: float = 0.0,
    vllm_server: bool = False,
    gpu_gib: float = 80.0,
) -> dict[str, float]:
    """GiB of GPU memory one process needs, by part (sizing arithmetic, not a measurement).

    Parameters
    ----------
    arch : Architecture
    per_device_batch : int
        Completions in one micro-batch of the backward pass, >= 1.
    generation_batch : int
        Completions one process generates at once (per-device batch x gradient accumulation x
        steps per generation), >= 1; sizes the key/value cache.
    prompt_length, completion_length : int
        Tokens, >= 1.
    reference : bool
        A reference policy is kept (``beta > 0``): 2 bytes per parameter (bf16), sharded under
        ``zero3``/``fsdp``.
    strategy : {"ddp", "zero2", "zero3", "fsdp"}
        ``ddp``: bf16 weights, gradients and Adam moments on every GPU, 8 bytes per parameter
        (the weights are loaded in bf16, so torch's AdamW keeps its moments in bf16). ``zero2``:
        bf16 weights (2) on every GPU, fp32 master weights and moments (12) and bf16 gradients (2)
        split over the GPUs. ``zero3``/``fsdp``: all 16 bytes split.
    num_gpus : int
        GPUs the state is split over, >= 1.
    precision : {"bf16", "fp16"}
        ``fp16`` (no bfloat16 on the GPU) loads fp32 weights and keeps 16 bytes per parameter.
    gradient_checkpointing : bool
        With it, 2 bytes per hidden value per layer are kept and one layer's activations (34 bytes
        per hidden value) are rebuilt; without it all layers' are kept.
    vllm_fraction : float
        Share of the GPU reserved by a colocated vLLM, in [0, 1).
    vllm_server : bool
        Generation runs on a separate vLLM server (``trl vllm-serve``): no key/value cache here.
    gpu_gib : float
        The GPU's memory, > 0 (for ``fits``).

    Returns
    -------
    dict
        GiB of ``state`` (weights, gradients, optimizer), ``reference``, ``activations``,
        ``logits`` (8 bytes per vocabulary entry per completion token: bf16 logits, an fp32 copy
        for the log-softmax and the gradient), ``kv_cache``, ``vllm`` and their ``total``;
        ``parameters_billion``; ``fits`` (1.0 when the total is below 90% of ``gpu_gib``, else 0.0).

    Raises
    ------
    ParameterError
        A size < 1, an unknown ``strategy`` or ``precision``, ``vllm_fraction`` outside [0, 1).

    Examples
    --------
    >>> est = memory_estimate(ARCHITECTURES["Qwen/Qwen2.5-0.5B-Instruct"], per_device_batch=8,
    ...                       generation_batch=64, prompt_length=256, completion_length=384, reference=True)
    >>> round(est["state"], 2), round(est["reference"], 2)     # 0.494e9 x 8 and x 2 bytes
    (3.68, 0.92)
    """
    for name, value in (("per_device_batch", per_device_batch), ("generation_batch", generation_batch),
                        ("prompt_length", prompt_length), ("completion_length", completion_length),
                        ("num_gpus", num_gpus)):
        check_integer(name, value, low=1)
    check_choice("strategy", strategy, STRATEGIES)
    check_choice("precision", precision, ("bf16", "fp16"))
    check_real("vllm_fraction", vllm_fraction, low=0, high=1, high_inclusive=False)
    check_real("gpu_gib", gpu_gib, low=0, low_inclusive=False)
    n = count_parameters_of(arch)
    if precision == "fp16":
        per_param = {"ddp": 16.0, "zero2": 4 + 12 / num_gpus, "zero3": 16 / num_gpus, "fsdp": 16 / num_gpus}
    else:
        per_param = {"ddp": 8.0, "zero2": 2 + 14 / num_gpus, "zero3": 16 / num_gpus, "fsdp": 16 / num_gpus}
    ref = (2.0 / (num_gpus if strategy in ("zero3", "fsdp") else 1)) if reference else 0.0
    tokens = per_device_batch * (prompt_length + completion_length)
    h = arch.hidden_size
    if gradient_checkpointing:
        act = tokens * h * (2 * arch.num_layers + 34)
    else:
        act = tokens * h * 34 * arch.num_layers
    logits = per_device_batch * completion_length * arch.vocab_size * 8
    kv = (generation_batch * (prompt_length + completion_length) * arch.num_layers * 2 * arch.num_kv_heads
          * arch.head_dim * 2)
    parts = {
        "state": n * per_param[strategy] / GIB,
        "reference": n * ref / GIB,
        "activations": act / GIB,
        "logits": logits / GIB,
        "kv_cache": 0.0 if (vllm_fraction or vllm_server) else kv / GIB,
        "vllm": vllm_fraction * gpu_gib,
    }
    parts["total"] = sum(parts.values())
    parts["parameters_billion"] = n / 1e9
    parts["fits"] = float(parts["total"] < 0.9 * gpu_gib)
    return parts


#: What each GSM8K preset was sized for (GPUs, their memory, how the state is spread, vLLM): the
#: per-device batch is the preset's completions / (GPUs x its gradient_accumulation_steps).
PRESET_SIZING: dict[str, dict] = {
    "gsm8k-qwen2.5-0.5b": dict(num_gpus=1, gpu_gib=16, strategy="ddp", vllm_mode="colocate", vllm_fraction=0.3),
    "gsm8k-qwen2.5-1.5b": dict(num_gpus=1, gpu_gib=40, strategy="ddp", vllm_mode="colocate", vllm_fraction=0.3),
    "gsm8k-r1-distill-qwen-1.5b": dict(num_gpus=1, gpu_gib=80, strategy="ddp", vllm_mode="colocate",
                                       vllm_fraction=0.3),
    "gsm8k-nemotron-mini-4b": dict(num_gpus=1, gpu_gib=80, strategy="ddp", vllm_mode="colocate", vllm_fraction=0.2),
    "gsm8k-deepseek-llm-7b-chat": dict(num_gpus=4, gpu_gib=80, strategy="zero3", vllm_mode="server",
                                       vllm_fraction=0.0),
}


def sizing_table(prompt_length: int = 256):
    """One row per GSM8K preset: the settings it was sized for and the GiB per GPU they add up to.

    Parameters
    ----------
    prompt_length : int, default 256
        Tokens of a prompt (a GSM8K question with the system prompt and the chat template is
        ~150-250 tokens), >= 1.

    Returns
    -------
    pandas.DataFrame
        Columns ``preset``, ``parameters_B``, ``gpus``, ``gpu_GiB``, ``strategy``,
        ``per_device_batch``, ``grad_accum``, ``global_batch`` (completions per optimizer step),
        ``completion_tokens``, ``vllm``, ``state_GiB`` (weights, gradients, Adam),
        ``reference_GiB``, ``activations_GiB`` (activations + logits), ``generation_GiB`` (KV cache
        or the colocated vLLM's share), ``total_GiB`` (per GPU) and ``fits`` (under 90% of the
        GPU). Sizing arithmetic (:func:`memory_estimate`), not measurements.

    Raises
    ------
    ParameterError
        ``prompt_length`` < 1.
    """
    import pandas as pd

    from .config import PRESETS

    check_integer("prompt_length", prompt_length, low=1)
    rows = []
    for preset, size in PRESET_SIZING.items():
        cfg = PRESETS[preset]
        per_device = cfg.completions // (size["num_gpus"] * cfg.gradient_accumulation_steps)
        est = memory_estimate(
            ARCHITECTURES[cfg.model], per_device_batch=per_device,
            generation_batch=per_device * cfg.gradient_accumulation_steps * cfg.steps_per_generation,
            prompt_length=prompt_length, completion_length=cfg.max_completion_length, reference=cfg.beta > 0,
            strategy=size["strategy"], num_gpus=size["num_gpus"], gradient_checkpointing=cfg.gradient_checkpointing,
            vllm_fraction=size["vllm_fraction"], vllm_server=size["vllm_mode"] == "server", gpu_gib=size["gpu_gib"],
        )
        vllm = size["vllm_mode"] + (f" ({size['vllm_fraction']:.0%})" if size["vllm_fraction"] else " (+1 GPU)")
        rows.append({
            "preset": preset, "parameters_B": round(est["parameters_billion"], 2), "gpus": size["num_gpus"],
            "gpu_GiB": size["gpu_gib"], "strategy": size["strategy"], "per_device_batch": per_device,
            "grad_accum": cfg.gradient_accumulation_steps, "global_batch": cfg.completions,
            "completion_tokens": cfg.max_completion_length, "vllm": vllm,
            "state_GiB": round(est["state"], 1), "reference_GiB": round(est["reference"], 1),
            "activations_GiB": round(est["activations"] + est["logits"], 1),
            "generation_GiB": round(est["kv_cache"] + est["vllm"], 1), "total_GiB": round(est["total"], 1),
            "fits": bool(est["fits"]),
        })
    return pd.DataFrame(rows)
