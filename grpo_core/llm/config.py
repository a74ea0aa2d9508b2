"""Experiment configurations: one frozen dataclass, named presets, and validation before training.

Every LLM experiment is described by an :class:`ExperimentConfig`. A *preset* is a named config
with documented defaults; a run is a preset plus overrides (the notebook's parameters, or
``grpo-dynamics experiment -p KEY VALUE``). :func:`make_config` builds and validates one, and every
error a user can make (an unknown preset or parameter name, G < 2, a group size that does not
divide the completions per step, a learning rate <= 0, a model that cannot be loaded, no GPU for a
GPU preset) is raised before any model is built or any step is trained.

Presets
-------
``cpu-tiny``
    The tiny Qwen2-style model (~0.4 M parameters, built from a config, no download) on two-digit
    addition with an exact-match reward, after a supervised warm-up on a mixture of arithmetic
    tasks (800 steps at lr 1e-3). GRPO: Adam, lr 3e-4 after a 20-step linear warm-up, G = 8, 32
    prompts per step, 500 steps; the training reward rises from the warm-up level (~0.5) towards
    ~0.9. A few minutes on one CPU core.
``cpu-dynamics``
    ``cpu-tiny`` with the whole GRPO curve: every GRPO seed starts from one warmed-up model (the
    warm-up of seed 1, ``warmup_seed=1``, which has learnt the task: sampled reward ~0.90 at
    temperature 1), and the completions are sampled at temperature 2.5, where that model is unsure
    rather than unable (exact expected reward ~0.26). GRPO then sharpens the policy: the sampled
    reward starts below 0.4 and rises by more than 0.35 within the 800 steps. Seeds differ only in
    GRPO's sampling (and data order). The probe runs before the first step (``probe=True``).
``gsm8k-qwen2.5-0.5b``
    Colab-sized: Qwen2.5-0.5B-Instruct on GSM8K (``openai/gsm8k``), one GPU (a T4 works in fp16 with
    ``bf16=False``; an A100/H100 in bf16).
``gsm8k-qwen2.5-1.5b``
    Qwen2.5-1.5B-Instruct, the model of the U-statistic paper's G* experiment (one 24 GB+ GPU).
``gsm8k-r1-distill-qwen-1.5b``, ``gsm8k-nemotron-mini-4b``, ``gsm8k-deepseek-llm-7b-chat``
    The three models of the damped-oscillator paper (DeepSeek-R1-Distill-Qwen-1.5B,
    Nemotron-Mini-4B-Instruct, DeepSeek-LLM-7B-Chat). The 7B model needs several GPUs: full
    fine-tuning with Adam keeps 8 bytes per parameter in bf16 (16 under DeepSpeed's mixed
    precision), ~52 GiB for 6.9 B parameters before the reference policy and the activations.

Each GSM8K preset's ``gradient_accumulation_steps`` is sized for the GPUs of
:data:`grpo_core.llm.sizing.PRESET_SIZING` (one GPU, except the 7B model on four); on more
processes lower it, keeping ``completions`` divisible by processes x accumulation. Several
processes: ``grpo-dynamics experiment --num-processes N`` (``accelerate launch`` on GPUs,
``torch.distributed.run`` with gloo on the CPU), DeepSpeed ZeRO or FSDP with
``--accelerate-config zero2|zero3|fsdp`` (the files in ``grpo_core/llm/accelerate/``). Generation
with vLLM: ``use_vllm=true`` with ``vllm_mode`` ``"colocate"`` (default) or ``"server"``.

The papers ran G in {4, 16}: every GSM8K preset defaults to G = 4; sweep with
``grpo-dynamics experiment --preset P --group-sizes 4 16``.

Momentum convention: with ``optimizer="adamw"`` the ``momentum`` is Adam's beta1 (EMA momentum,
``v = mu v + (1 - mu) g``); with ``optimizer="sgd"`` it is heavy-ball momentum
(``v = mu v + g``). The oscillator's threshold reads ``eta K K_ref < 1`` for the first and
``< 1 - mu`` for the second (book chapter "The damped oscillator").
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import GrpoError, ParameterError
from ..validation import check_choice, check_integer, check_real

__all__ = [
    "ExperimentConfig",
    "PRESETS",
    "make_config",
    "preset_names",
    "parameter_help",
    "check_environment",
    "check_model_loadable",
    "EVAL_SUITE_GSM8K",
    "TINY_MODEL",
    "ARITHMETIC_DATASET",
]

#: ``model`` value of the tiny model built from a config.
TINY_MODEL = "tiny-qwen2"
#: ``dataset`` value of the arithmetic task.
ARITHMETIC_DATASET = "arithmetic"
#: Default evaluation suite of the GSM8K presets (names in :data:`grpo_core.llm.data.BENCHMARKS`),
#: nearest to the training distribution first.
EVAL_SUITE_GSM8K = ("gsm8k", "gsm_plus", "svamp", "asdiv", "gsm_hard", "math500", "amc23", "aime24", "aime25")


def _h(text: str, **kw) -> Any:
    return field(metadata={"help": text}, **kw)



#: The largest seed (torch, numpy and Python's random all take it; 1e308 made torch fail).
MAX_SEED = 2 ** 32 - 1

@dataclass(frozen=True)
class ExperimentConfig:
    """All settings of one GRPO experiment (defaults: the ``cpu-tiny`` preset).

    Each attribute's documentation is in its ``metadata["help"]`` (see :func:`parameter_help`).
    Units: steps are optimizer steps; a "completion" is one sampled answer; a step uses
    ``num_prompts`` prompts x ``group_size`` completions.

    References
    ----------
    TRL documentation, ``GRPOConfig`` (the meaning of ``num_generations``, ``steps_per_generation``,
    ``num_iterations``, ``beta``, ``epsilon``, ``scale_rewards``, ``loss_type``, to which
    :func:`~grpo_core.llm.training.grpo_args` maps these settings); book chapter "GRPO on a
    language model".
    """

    preset: str = _h("Name of the preset these settings started from.", default="cpu-tiny")
    model: str = _h("Hub id or local folder of a causal LM, or 'tiny-qwen2' (built from a config).",
                    default=TINY_MODEL)
    model_revision: str = _h("Hub revision of the model ('' = default branch).", default="")
    dataset: str = _h("Training data: hub id or local folder in GSM8K schema (question/answer), or "
                      "'arithmetic' (the CPU task).", default=ARITHMETIC_DATASET)
    dataset_config: str = _h("Dataset configuration name ('main' for GSM8K; '' = none).", default="")
    train_split: str = _h("Training split.", default="train")
    group_size: int = _h("G: completions sampled per prompt (TRL num_generations), >= 2.", default=8)
    num_prompts: int = _h("B: prompts per optimizer step (0: derived from completions_per_step).", default=32)
    completions_per_step: int = _h("N = B G, the rollout budget per step; when > 0 it fixes N and "
                                   "num_prompts = N / G (G must divide N).", default=0)
    learning_rate: float = _h("eta: peak learning rate, > 0.", default=3e-4)
    lr_scheduler: str = _h("Learning-rate schedule after the warm-up: 'constant' or 'cosine'.",
                           default="constant")
    lr_warmup_steps: int = _h("Linear learning-rate warm-up, in optimizer steps (Adam's first steps are "
                              "large: without it the tiny model's reward first drops).", default=20)
    optimizer: str = _h("'adamw' (momentum = Adam beta1) or 'sgd' (heavy-ball momentum).", default="adamw")
    momentum: float = _h("mu: Adam beta1 or SGD momentum, in [0, 1).", default=0.9)
    adam_beta2: float = _h("Adam beta2, in [0, 1).", default=0.99)
    weight_decay: float = _h("Decoupled weight decay, >= 0.", default=0.0)
    max_grad_norm: float = _h("Gradient clipping threshold (0 = none).", default=1.0)
    steps_per_generation: int = _h("Optimizer steps per generation batch (TRL's steps_per_generation is this x "
                                   "gradient_accumulation_steps micro-batches); the lag of the behaviour policy "
                                   "is steps_per_generation x num_iterations.", default=1)
    num_iterations: int = _h("Passes over each generation batch (TRL mu), >= 1.", default=1)
    beta: float = _h("KL weight to the reference policy (the warm-up / pretrained model), >= 0.",
                     default=0.0)
    epsilon: float = _h("Clip range of the importance ratio, > 0.", default=0.2)
    scale_rewards: str = _h("Advantage scaling: 'group' (std within the group), 'batch' or 'none'.",
                            default="group")
    loss_type: str = _h("TRL loss aggregation: 'dapo', 'grpo', 'dr_grpo', 'bnpo'.", default="dapo")
    temperature: float = _h("Sampling temperature of the completions, > 0.", default=1.0)
    max_completion_length: int = _h("Longest completion, in tokens.", default=6)
    max_steps: int = _h("Optimizer steps of GRPO, >= 1.", default=500)
    eval_every: int = _h("Evaluate the held-out set every N steps (0 = only at start and end).", default=25)
    eval_samples: int = _h("Problems per evaluation set (0 = all).", default=256)
    eval_suite: tuple = _h("Benchmarks evaluated at the start and the end (names; first = the held-out "
                           "training distribution).", default=("add2", "add1", "add3", "sub2"))
    benchmark_dir: str = _h("Folder of local copies of the benchmarks, one sub-folder per name in the hub "
                            "layout ('' = load them from the hub).", default="")
    eval_sampled: int = _h("Sampled completions per evaluation problem for the sampled accuracy (0 = greedy "
                           "only).", default=4)
    measure_constants: bool = _h("Estimate c1, c2, c3 of the gradient-MSE law on the model at the start and the "
                                 "end (gradient_constants.json).", default=False)
    constants_samples: int = _h("Sampled completions per prompt for the constants (>= 3); the prompts are the "
                                "first evaluation set's.", default=16)
    probe: bool = _h("Measure the starting policy's sharpness and reward curvature K and predict the critical "
                     "learning rates (grpo_core.llm.probe; probe.json, written before the first GRPO step; tiny "
                     "model only).", default=False)
    probe_groups: int = _h("Probe: prompts (groups of group_size completions) per batch (0 = prompts_per_step).",
                           default=0)
    probe_iters: int = _h("Probe: Lanczos iterations (Hessian-vector products) per eigenvalue.", default=10)
    probe_repeats: int = _h("Probe: independent K measurements (the interval is over them), >= 2 for an interval.",
                            default=4)
    probe_steps: int = _h("Probe: small SGD steps per K measurement (the finite-step check).", default=2)
    format_reward: float = _h("Weight of the format reward (a final '#### <number>' line); 0 = off.",
                              default=0.0)
    system_prompt: str = _h("System prompt of chat models ('' = none).", default="")
    seed: int = _h("Seed of everything (data order, sampling, initial weights).", default=0)
    output_dir: str = _h("Folder of the run ('' = runs/<run name>).", default="")
    save_every: int = _h("Checkpoint every N steps (for resuming).", default=50)
    keep_checkpoints: bool = _h("Keep the checkpoints when the run ends (they hold weights).", default=False)
    resume: bool = _h("Resume from the last checkpoint in output_dir when there is one.", default=True)
    diagnose_every: int = _h("Print findings and the plateau forecast every N steps (0 = never).", default=50)
    stop_collapsed: int = _h("Stop GRPO once the sampled training reward has been exactly 0 for N consecutive "
                             "steps after the learning-rate warm-up (0 = never; else >= 10, and at least a tenth "
                             "of max_steps, so that classify_run calls the stopped run collapsed). summary.json "
                             "records the stop.", default=0)
    device: str = _h("'auto', 'cpu' or 'cuda'.", default="auto")
    requires_gpu: bool = _h("Refuse to start without a CUDA GPU.", default=False)
    bf16: bool = _h("Train in bfloat16 (GPU only).", default=False)
    gradient_checkpointing: bool = _h("Recompute activations in the backward pass (saves GPU memory).",
                                      default=False)
    fp16: bool = _h("Train in float16 with loss scaling (GPU only; for GPUs without bfloat16, e.g. a T4; not "
                    "together with bf16).", default=False)
    gradient_accumulation_steps: int = _h("Micro-batches per optimizer step on each process: the per-device batch is "
                                          "completions / (processes x this); the completions per optimizer step and "
                                          "the lag stay as set (TRL's steps_per_generation is multiplied by it).",
                                          default=1)
    use_vllm: bool = _h("Generate with vLLM (a CUDA GPU and the vllm package; refused without them).", default=False)
    vllm_mode: str = _h("vLLM with use_vllm: 'colocate' (vLLM inside each training process, sharing its GPU; "
                        "vllm_gpu_memory_utilization of it) or 'server' (a separate `trl vllm-serve --model M` on "
                        "other GPUs, reached at vllm_server_host:vllm_server_port).", default="colocate")
    vllm_gpu_memory_utilization: float = _h("Colocate mode: fraction of each GPU's memory vLLM reserves (weights, "
                                            "KV cache), in (0, 1].", default=0.3)
    vllm_server_host: str = _h("Server mode: host of `trl vllm-serve`.", default="0.0.0.0")
    vllm_server_port: int = _h("Server mode: port of `trl vllm-serve`.", default=8000)
    num_threads: int = _h("CPU threads for torch (0 = torch's default).", default=1)
    # cpu-tiny: the supervised warm-up
    warmup_steps: int = _h("Supervised warm-up steps before GRPO (tiny model only).", default=800)
    warmup_batch_size: int = _h("Problems per warm-up step.", default=128)
    warmup_learning_rate: float = _h("Learning rate of the warm-up (constant).", default=1e-3)
    warmup_anneal: float = _h("Fraction of the warm-up over which its rate decays linearly to 10% at the end.",
                              default=0.3)
    warmup_seed: int = _h("Seed of the warm-up (initial weights and warm-up data); -1 = the run's seed. A fixed "
                          "value gives every GRPO seed the same starting model.", default=-1)
    warmup_cache: str = _h("Folder caching warmed-up models by (settings, seed) ('' = no cache).",
                           default="")
    tiny_hidden_size: int = _h("Tiny model: hidden size.", default=128)
    tiny_layers: int = _h("Tiny model: transformer blocks.", default=2)

    # ---------------------------------------------------------------------------------------
    @property
    def lag(self) -> int:
        """Refresh interval K_ref of the behaviour policy in optimizer steps: steps_per_generation x num_iterations
        (TRL's general form divides its micro-batch count by gradient_accumulation_steps, which
        :func:`~grpo_core.llm.training.grpo_args` multiplies in)."""
        return self.steps_per_generation * self.num_iterations

    @property
    def warmup_seed_used(self) -> int:
        """Seed of the warm-up: ``warmup_seed``, or ``seed`` when ``warmup_seed`` is -1."""
        return self.seed if self.warmup_seed < 0 else self.warmup_seed

    @property
    def prompts_per_step(self) -> int:
        """B: prompts per optimizer step."""
        if self.completions_per_step:
            return self.completions_per_step // self.group_size
        return self.num_prompts

    @property
    def completions(self) -> int:
        """N = B G: completions per optimizer step (TRL's per-device batch on one device)."""
        return self.prompts_per_step * self.group_size

    @property
    def is_tiny(self) -> bool:
        """Whether the model is built from a config (no download)."""
        return self.model == TINY_MODEL

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict, with the derived ``lag``, ``prompts_per_step``, ``completions``."""
        out = dataclasses.asdict(self)
        out["eval_suite"] = list(self.eval_suite)
        out.update(lag=self.lag, prompts_per_step=self.prompts_per_step, completions=self.completions)
        return out

    def replace(self, **changes) -> ExperimentConfig:
        """A validated copy with some settings changed (same rules as :func:`make_config`).

        Parameters
        ----------
        **changes
            Parameter values by name (strings are converted to the parameter's type; ``None``
            values are ignored). ``preset`` cannot be changed.

        Returns
        -------
        ExperimentConfig
            A new frozen, validated config; ``self`` is unchanged.

        Raises
        ------
        ParameterError
            As :func:`make_config`: an unknown name, a value of the wrong type or out of range, or
            a change of ``preset``.

        Examples
        --------
        >>> cfg = make_config("cpu-tiny").replace(group_size="4", steps_per_generation=2)
        >>> cfg.group_size, cfg.lag
        (4, 2)
        """
        return make_config(self.preset, self, **changes)


_GSM8K_SYSTEM = ("Solve the math problem step by step. End your answer with a final line of the form "
                 "'#### <number>'.")
_GSM8K_COMMON = dict(
    dataset="openai/gsm8k", dataset_config="main", learning_rate=1e-6, lr_scheduler="constant",
    lr_warmup_steps=10, momentum=0.9, adam_beta2=0.99, weight_decay=0.0, max_grad_norm=0.2, beta=0.04,
    epsilon=0.2, group_size=4, num_prompts=16, max_completion_length=512, max_steps=500, eval_every=50,
    eval_samples=500, eval_suite=EVAL_SUITE_GSM8K, eval_sampled=0, system_prompt=_GSM8K_SYSTEM,
    save_every=50, diagnose_every=25, device="cuda", requires_gpu=True, bf16=True,
    gradient_checkpointing=True, num_threads=0, warmup_steps=0,
)

#: Named presets (see the module docstring).
PRESETS: dict[str, ExperimentConfig] = {
    "cpu-tiny": ExperimentConfig(),
    "cpu-dynamics": ExperimentConfig(preset="cpu-dynamics", warmup_seed=1, temperature=2.5, max_steps=800,
                                     probe=True),
    "gsm8k-qwen2.5-0.5b": ExperimentConfig(preset="gsm8k-qwen2.5-0.5b", model="Qwen/Qwen2.5-0.5B-Instruct",
                                           **{**_GSM8K_COMMON, "learning_rate": 2e-6, "gradient_checkpointing": False,
                                              "max_completion_length": 384, "max_steps": 200,
                                              "gradient_accumulation_steps": 16}),
    "gsm8k-qwen2.5-1.5b": ExperimentConfig(preset="gsm8k-qwen2.5-1.5b", model="Qwen/Qwen2.5-1.5B-Instruct",
                                           **{**_GSM8K_COMMON, "gradient_accumulation_steps": 8}),
    "gsm8k-r1-distill-qwen-1.5b": ExperimentConfig(
        preset="gsm8k-r1-distill-qwen-1.5b", model="deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        **{**_GSM8K_COMMON, "max_completion_length": 1024, "system_prompt": "",
           "temperature": 0.6, "gradient_accumulation_steps": 8}),
    "gsm8k-nemotron-mini-4b": ExperimentConfig(preset="gsm8k-nemotron-mini-4b",
                                               model="nvidia/Nemotron-Mini-4B-Instruct",
                                               **{**_GSM8K_COMMON, "gradient_accumulation_steps": 8}),
    "gsm8k-deepseek-llm-7b-chat": ExperimentConfig(
        preset="gsm8k-deepseek-llm-7b-chat", model="deepseek-ai/deepseek-llm-7b-chat",
        **{**_GSM8K_COMMON, "num_prompts": 8}),
}

_CHOICES = {
    "optimizer": ("adamw", "sgd"),
    "scale_rewards": ("group", "batch", "none"),
    "loss_type": ("dapo", "grpo", "dr_grpo", "bnpo"),
    "lr_scheduler": ("constant", "cosine"),
    "device": ("auto", "cpu", "cuda"),
    "vllm_mode": ("colocate", "server"),
}
# (setting, check, bounds) of the settings that only have to lie in a range, in the order _validate checks
# them: the optimizer, sampling, evaluation and probe sizes; then (after the probe's model check) the reward,
# seed, saving, threads, warm-up and tiny model
_POSITIVE = {"low": 0, "low_inclusive": False}
_TRAINING_RANGES = (
    ("learning_rate", check_real, _POSITIVE),
    ("momentum", check_real, {"low": 0, "high": 1, "high_inclusive": False}),
    ("adam_beta2", check_real, {"low": 0, "high": 1, "high_inclusive": False}),
    ("weight_decay", check_real, {"low": 0}),
    ("max_grad_norm", check_real, {"low": 0}),
    ("steps_per_generation", check_integer, {"low": 1}),
    ("num_iterations", check_integer, {"low": 1}),
    ("beta", check_real, {"low": 0}),
    ("epsilon", check_real, _POSITIVE),
    ("temperature", check_real, _POSITIVE),
    ("max_completion_length", check_integer, {"low": 1}),
    ("max_steps", check_integer, {"low": 1}),
    ("lr_warmup_steps", check_integer, {"low": 0}),
    ("eval_every", check_integer, {"low": 0}),
    ("eval_samples", check_integer, {"low": 0}),
    ("eval_sampled", check_integer, {"low": 0}),
    ("constants_samples", check_integer, {"low": 3}),
    ("probe_groups", check_integer, {"low": 0}),
    ("probe_iters", check_integer, {"low": 1}),
    ("probe_repeats", check_integer, {"low": 1}),
    ("probe_steps", check_integer, {"low": 1}),
)
_RUN_RANGES = (
    ("format_reward", check_real, {"low": 0}),
    ("seed", check_integer, {"low": 0, "high": MAX_SEED}),
    ("save_every", check_integer, {"low": 1}),
    ("diagnose_every", check_integer, {"low": 0}),
    ("stop_collapsed", check_integer, {"low": 0}),
    ("num_threads", check_integer, {"low": 0}),
    ("warmup_steps", check_integer, {"low": 0}),
    ("warmup_seed", check_integer, {"low": -1, "high": MAX_SEED}),
    ("warmup_batch_size", check_integer, {"low": 1}),
    ("warmup_learning_rate", check_real, _POSITIVE),
    ("warmup_anneal", check_real, {"low": 0, "high": 1}),
    ("tiny_hidden_size", check_integer, {"low": 8}),
    ("tiny_layers", check_integer, {"low": 1}),
    ("vllm_gpu_memory_utilization", check_real, {"low": 0, "low_inclusive": False, "high": 1}),
    ("vllm_server_port", check_integer, {"low": 1, "high": 65535}),
)
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def preset_names() -> list[str]:
    """Names of the presets, ``cpu-tiny`` first.

    Returns
    -------
    list of str
        The keys of :data:`PRESETS`, in definition order.

    Examples
    --------
    >>> preset_names()[0]
    'cpu-tiny'
    """
    return list(PRESETS)


def parameter_help() -> dict[str, str]:
    """Parameter name -> one-line documentation (with the ``cpu-tiny`` default).

    Returns
    -------
    dict of str to str
        One entry per field of :class:`ExperimentConfig`: its ``metadata["help"]`` followed by
        ``(cpu-tiny: <default>)``.
    """
    base = PRESETS["cpu-tiny"]
    return {f.name: f"{f.metadata['help']} (cpu-tiny: {getattr(base, f.name)!r})" for f in fields(ExperimentConfig)}


def _coerce(name: str, value: Any, kind: Any) -> Any:
    """Convert a parameter value (possibly a string from the command line) to its field type."""
    kind = {"int": int, "float": float, "bool": bool, "str": str, "tuple": tuple}.get(kind, kind)
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise ParameterError(name, f"`{name}` must be true or false; got {value!r}")
    if kind is int:
        return check_integer(name, value)
    if kind is float:
        return check_real(name, value)
    if kind is tuple:
        if isinstance(value, str):
            value = [v.strip() for v in value.replace(",", " ").split() if v.strip()]
        if not isinstance(value, list | tuple):
            raise ParameterError(name, f"`{name}` must be a list of names; got {value!r}")
        return tuple(str(v) for v in value)
    if value is None:
        return ""
    return str(value)


def make_config(preset: str = "cpu-tiny", base: ExperimentConfig | None = None, /, **overrides) -> ExperimentConfig:
    """Build and validate the configuration of one run: a preset plus overrides.

    Parameters
    ----------
    preset : str
        A name in :data:`PRESETS`.
    base : ExperimentConfig, optional
        Start from this config instead of the preset's (used by :meth:`ExperimentConfig.replace`).
    **overrides
        Parameter values; strings are converted to the parameter's type (``"16"`` -> 16,
        ``"true"`` -> True, ``"add2 sub2"`` -> a tuple). ``None`` values are ignored (papermill
        parameters left unset).

    Returns
    -------
    ExperimentConfig
        Frozen and validated.

    Raises
    ------
    ParameterError
        Unknown preset or parameter name (the message lists the valid ones), a value of the wrong
        type or out of range: ``group_size`` < 2, ``completions_per_step`` not divisible by
        ``group_size``, ``learning_rate`` <= 0, ``momentum`` outside [0, 1), ``beta`` < 0,
        ``epsilon`` <= 0, ``max_steps`` < 1, unknown choices (``optimizer``, ``scale_rewards``,
        ``loss_type``, ``lr_scheduler``, ``device``, ``vllm_mode``), ``bf16``, ``fp16`` or
        ``use_vllm`` with ``device='cpu'``, ``bf16`` together with ``fp16``, the tiny model with
        a dataset other than ``'arithmetic'`` (or the reverse), an evaluation name that does not
        exist for the dataset, an attempt to override ``preset``, ``gradient_accumulation_steps``
        that does not divide the completions per step.

    Examples
    --------
    >>> cfg = make_config("cpu-tiny", group_size="16", completions_per_step=256)
    >>> cfg.group_size, cfg.prompts_per_step, cfg.lag
    (16, 16, 1)
    >>> make_config("cpu-tiny", group_size=1)
    Traceback (most recent call last):
    ...
    grpo_core.errors.ParameterError: `group_size` must be an integer >= 2; got 1
    """
    names = preset_names()
    if preset not in PRESETS:
        raise ParameterError("preset", f"`preset` must be one of {', '.join(names)}; got {preset!r}")
    cfg = base if base is not None else PRESETS[preset]
    types = {f.name: f.type for f in fields(ExperimentConfig)}
    unknown = sorted(k for k in overrides if k not in types)
    if unknown:
        raise ParameterError(
            unknown[0], f"unknown parameter(s) {', '.join(repr(u) for u in unknown)}; valid parameters: "
            + ", ".join(sorted(types))
        )
    changes = {k: _coerce(k, v, types[k]) for k, v in overrides.items() if v is not None}
    if "preset" in changes and changes["preset"] != preset:
        raise ParameterError("preset", "`preset` cannot be overridden; pick another preset instead")
    cfg = dataclasses.replace(cfg, **changes)
    _validate(cfg)
    return cfg


def _check_ranges(cfg: ExperimentConfig, ranges: tuple) -> None:
    for name, check, bounds in ranges:
        check(name, getattr(cfg, name), **bounds)


def _validate(cfg: ExperimentConfig) -> None:
    check_integer("group_size", cfg.group_size, low=2)
    check_integer("completions_per_step", cfg.completions_per_step, low=0)
    if cfg.completions_per_step:
        if cfg.completions_per_step % cfg.group_size:
            raise ParameterError(
                "group_size", f"`group_size` (num_generations) must divide `completions_per_step` = "
                f"{cfg.completions_per_step}; got {cfg.group_size}")
    else:
        check_integer("num_prompts", cfg.num_prompts, low=1)
    _check_ranges(cfg, _TRAINING_RANGES)
    check_integer("gradient_accumulation_steps", cfg.gradient_accumulation_steps, low=1)
    if cfg.completions % cfg.gradient_accumulation_steps:
        raise ParameterError(
            "gradient_accumulation_steps", f"`gradient_accumulation_steps` must divide the {cfg.completions} "
            f"completions per step (num_prompts x group_size); got {cfg.gradient_accumulation_steps}")
    if cfg.probe and not cfg.is_tiny:
        raise ParameterError("probe", "`probe` needs the tiny model on the arithmetic task (its exact expected "
                             f"reward); got model={cfg.model!r}")
    _check_ranges(cfg, _RUN_RANGES)
    if cfg.stop_collapsed and cfg.stop_collapsed < max(10, cfg.max_steps // 10):
        raise ParameterError(
            "stop_collapsed",
            f"`stop_collapsed` must be 0 or at least max(10, max_steps // 10) = {max(10, cfg.max_steps // 10)} "
            f"(the tail classify_run reads must be all zeros); got {cfg.stop_collapsed}",
        )
    for name, choices in _CHOICES.items():
        check_choice(name, getattr(cfg, name), choices)
    if cfg.bf16 and cfg.fp16:
        raise ParameterError("fp16", "`fp16` and `bf16` exclude each other; set one of them to false")
    gpu_only = [name for name in ("bf16", "fp16", "use_vllm") if getattr(cfg, name)]
    if cfg.device == "cpu" and gpu_only:
        bad = gpu_only[0]
        raise ParameterError(bad, f"`{bad}` needs a GPU; set it to false with device='cpu'")
    if cfg.is_tiny != (cfg.dataset == ARITHMETIC_DATASET):
        raise ParameterError("dataset", "the tiny model ('tiny-qwen2') goes with dataset='arithmetic' and "
                             f"pretrained models with a GSM8K-schema dataset; got model={cfg.model!r}, "
                             f"dataset={cfg.dataset!r}")
    from .data import BENCHMARKS
    from .tasks import TASKS

    valid = TASKS if cfg.is_tiny else BENCHMARKS
    for name in cfg.eval_suite:
        if name not in valid:
            raise ParameterError("eval_suite", f"`eval_suite` entries must be among {', '.join(valid)}; got {name!r}")
    if not math.isfinite(cfg.learning_rate):  # pragma: no cover - check_real refuses it already
        raise ParameterError("learning_rate", "`learning_rate` must be finite")


def check_environment(cfg: ExperimentConfig) -> str:
    """Check the machine can run ``cfg``; return the device to use (``"cpu"`` or ``"cuda"``).

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings; ``device``, ``requires_gpu`` and ``preset`` are read.

    Returns
    -------
    str
        ``cfg.device`` when it is ``"cpu"`` or ``"cuda"``; for ``"auto"``, ``"cuda"`` when
        ``torch.cuda.is_available()`` else ``"cpu"``.

    Raises
    ------
    GrpoError
        A GPU preset (``requires_gpu``) or ``device='cuda'`` without a CUDA GPU; the message says
        how to run on the CPU instead (``cpu-tiny``, or ``device=cpu requires_gpu=false`` for a
        slow smoke test). ``bf16``, ``fp16`` or ``use_vllm`` when ``device='auto'`` resolves to
        the CPU (all GPU only, as :func:`make_config` says for ``device='cpu'``); ``use_vllm``
        without the vllm package.
    """
    import torch

    has_cuda = torch.cuda.is_available()
    if (cfg.requires_gpu or cfg.device == "cuda") and not has_cuda:
        raise GrpoError(
            f"preset {cfg.preset!r} needs a CUDA GPU and none is available here; run it on a GPU machine "
            "or Colab, use the 'cpu-tiny' preset, or force a (slow) CPU smoke test with "
            "-p device cpu -p requires_gpu false -p bf16 false"
        )
    device = ("cuda" if has_cuda else "cpu") if cfg.device == "auto" else cfg.device
    gpu_only = [name for name in ("bf16", "fp16", "use_vllm") if getattr(cfg, name)]
    if device == "cpu" and gpu_only:
        bad = gpu_only[0]
        raise GrpoError(f"`{bad}` needs a CUDA GPU and none is available here (device 'auto' resolved to "
                        f"the CPU); pass -p {bad} false")
    if cfg.use_vllm and importlib.util.find_spec("vllm") is None:
        raise GrpoError("`use_vllm` needs the vllm package, which is not installed here: `pip install vllm` on "
                        "the GPU machine (vllm_mode 'server' also needs `trl vllm-serve --model "
                        f"{cfg.model}` running), or pass -p use_vllm false to generate with transformers")
    return device


def check_model_loadable(cfg: ExperimentConfig) -> None:
    """Check that the model's configuration can be loaded (hub id reachable or local folder valid).

    Cheap (reads ``config.json`` only, through ``transformers.AutoConfig.from_pretrained``); the
    tiny model always passes.

    Parameters
    ----------
    cfg : ExperimentConfig
        Validated settings; ``model`` (hub id or local folder) and ``model_revision`` (``""`` =
        default branch) are read.

    Returns
    -------
    None

    Raises
    ------
    GrpoError
        The model cannot be loaded (``AutoConfig`` raised ``OSError`` or ``ValueError``): names
        the model and the first line of the cause (no such repository or folder, no network,
        gated model without a token). Other exceptions propagate unchanged.
    """
    if cfg.is_tiny:
        return
    from transformers import AutoConfig

    kwargs = {"revision": cfg.model_revision} if cfg.model_revision else {}
    try:
        AutoConfig.from_pretrained(cfg.model, **kwargs)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GrpoError(f"model {cfg.model!r} cannot be loaded: {first}") from exc
