"""A run's settings as the oscillator model needs them, read from the files people have.

:func:`read_settings` reads a TRL ``GRPOConfig`` / ``TrainingArguments`` JSON (``config.json``,
``training_args.json``, ``GRPOConfig.to_dict()``), a ``trainer_state.json``, a committed real run's
``meta.json`` (``grpo_core/data/real_runs``), or a plain JSON of this module's own field names, and
returns :class:`RunSettings`: the optimizer and its first moment, ``num_iterations``,
``steps_per_generation``, ``gradient_accumulation_steps``, ``beta``, ``G``, the peak learning rate,
and :meth:`RunSettings.conventions`, the model's conventions for that run (momentum style, ``mu``,
lag model, ``k_ref``) with the reason for each.

Defaults are TRL's (``transformers.TrainingArguments`` / ``trl.GRPOConfig``): ``optim="adamw_torch"``
with ``adam_beta1 = 0.9``, ``adam_beta2 = 0.999``, ``num_iterations = 1``, ``steps_per_generation =
gradient_accumulation_steps = 1``. A value the file does not give is taken from them and the
settings say so (:attr:`RunSettings.defaulted`).
"""

from __future__ import annotations

import json
import math
import numbers
import re
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import DataError, ParameterError
from ..validation import check_path

__all__ = ["RunSettings", "Conventions", "read_settings", "settings_for_log", "settings_from_mapping", "TRL_DEFAULTS"]

#: TRL / transformers defaults for the fields the model uses.
TRL_DEFAULTS: dict[str, Any] = {
    "optimizer": "adamw_torch", "beta1": 0.9, "beta2": 0.999, "sgd_momentum": 0.0,
    "num_iterations": 1, "steps_per_generation": None, "gradient_accumulation_steps": 1,
    "beta": 0.0, "group_size": None, "learning_rate": None,
}

# Keys seen in configs and in the real runs' meta.json "hyperparameters", per field (lower-cased).
_ALIASES: dict[str, tuple[str, ...]] = {
    "optimizer": ("optimizer", "optim"),
    "beta1": ("beta1", "adam_beta1"),
    "beta2": ("beta2", "adam_beta2"),
    "sgd_momentum": ("momentum", "sgd_momentum"),
    "num_iterations": ("num_iterations", "mu", "ppo_epochs", "num_ppo_epochs"),
    "steps_per_generation": ("steps_per_generation",),
    "gradient_accumulation_steps": ("gradient_accumulation_steps",),
    "beta": ("beta", "kl_coef (beta)", "kl_beta", "kl_coef", "kl_coeff", "kl_loss_coef", "init_kl_coef"),
    "group_size": ("group_size", "num_generations", "num_generations (g)", "group_size (g)", "rollout.n (g)",
                   "num_return_sequences_in_group (g)", "group_size_g"),
    "learning_rate": ("learning_rate", "learning_rate_peak", "learning_rate_peak_logged", "actor lr",
                      "learning_rate (grpo)"),
    "k_ref": ("k_ref",),
    "lag": ("lag",),
}


@dataclass(frozen=True)
class Conventions:
    """The oscillator model's conventions for one run, with the reason for each.

    Attributes
    ----------
    momentum : {"ema", "heavy_ball"}
        ``"ema"`` for Adam-family optimizers (``beta1`` is an EMA of the gradient), ``"heavy_ball"``
        for SGD with momentum.
    mu : float
        Momentum coefficient in ``[0, 1)`` (Adam's ``beta1``, or SGD's momentum).
    lag : {"refresh", "constant"}
        ``"refresh"``: one generation batch is reused for ``k_ref`` optimizer steps, so the gradient's
        lag cycles ``0 .. k_ref - 1`` (TRL's reuse).
    k_ref : int
        Optimizer steps per generation batch, ``>= 1``.
    preconditioned : bool
        True for Adam-family optimizers: the curvature read off the log is ``K / sqrt(v)``.
    lines : tuple of str
        One sentence per convention saying what was used and why.
    """

    momentum: str
    mu: float
    lag: str
    k_ref: int
    preconditioned: bool
    lines: tuple[str, ...]

    def text(self) -> str:
        """The conventions as one paragraph (what the commands print)."""
        return " ".join(self.lines)


@dataclass(frozen=True)
class RunSettings:
    """What the oscillator model needs of a run's configuration.

    Attributes
    ----------
    optimizer : str
        The optimizer name as the config spells it (``"adamw_torch"``, ``"adamw_8bit"``, ``"sgd"``).
    beta1, beta2 : float
        Adam's moment coefficients (used when the optimizer is Adam-family).
    sgd_momentum : float
        SGD's (heavy-ball) momentum, from ``optim_args="momentum=0.9"`` or a ``momentum`` key.
    num_iterations : int
        Passes over one generation batch (TRL ``num_iterations``; GRPO's ``mu``), ``>= 1``.
    steps_per_generation, gradient_accumulation_steps : int
        TRL's micro-steps per generation and per optimizer step; the generation is reused for
        ``num_iterations * steps_per_generation / gradient_accumulation_steps`` optimizer steps.
    beta : float
        KL weight (0: no anchor).
    group_size : int or None
        ``G``, completions per prompt (noise temperature only; recorded, not used by the thresholds).
    learning_rate : float or None
        The configured (peak) learning rate.
    k_ref, lag : int / str or None
        Explicit overrides of the lag model (a config of this module's own fields).
    source : str
        Where the settings came from.
    defaulted : tuple of str
        Fields not given by the source and taken from :data:`TRL_DEFAULTS`.
    unreadable : tuple of str
        ``"name = 'text'"`` for each field the source gives as words without a number (a human-written
        ``meta.json``: ``"TRL default (not set)"``, ``"unknown"``); those fields are defaulted.
    """

    optimizer: str = "adamw_torch"
    beta1: float = 0.9
    beta2: float = 0.999
    sgd_momentum: float = 0.0
    num_iterations: int = 1
    steps_per_generation: int | None = None
    gradient_accumulation_steps: int = 1
    beta: float = 0.0
    group_size: int | None = None
    learning_rate: float | None = None
    k_ref: int | None = None
    lag: str | None = None
    source: str = "TRL defaults"
    defaulted: tuple[str, ...] = field(default_factory=tuple)
    unreadable: tuple[str, ...] = field(default_factory=tuple)

    @property
    def adam(self) -> bool:
        """Whether the optimizer is Adam-family (Adam, AdamW, 8-bit and paged variants, Lion excluded)."""
        return "adam" in self.optimizer.lower()

    @property
    def steps_per_generation_batch(self) -> int:
        """Optimizer steps one generation batch is used for (``>= 1``)."""
        if self.k_ref is not None:
            return int(self.k_ref)
        spg = self.steps_per_generation or self.gradient_accumulation_steps
        return max(1, int(round(self.num_iterations * spg / max(1, self.gradient_accumulation_steps))))

    def conventions(self) -> Conventions:
        """The model's conventions for this run and why (see :class:`Conventions`)."""
        lines = []
        if "optimizer" not in self.defaulted:
            given = ""
        elif self.source == "TRL defaults":
            given = " (no config found: TRL's default)"
        else:
            given = f" ({self.source} names none: TRL's default)"
        if self.adam:
            momentum, mu = "ema", float(self.beta1)
            lines.append(f"Optimizer {self.optimizer}{given}: EMA momentum mu = beta1 = {mu:g} "
                         f"({'TRL default' if 'beta1' in self.defaulted else 'from ' + self.source}); the "
                         "curvature the log measures is Adam's preconditioned K / sqrt(v), and eta*K per step is "
                         "what is identified.")
        else:
            momentum, mu = "heavy_ball", float(self.sgd_momentum)
            lines.append(f"Optimizer {self.optimizer}{given}: heavy-ball momentum mu = {mu:g} (v = mu v + g); "
                         "K is the raw curvature.")
        k_ref = self.steps_per_generation_batch
        lag = self.lag or "refresh"
        if self.k_ref is not None:
            lines.append(f"Lag: {lag}, k_ref = {k_ref} (given).")
        elif k_ref == 1:
            lines.append("Lag: on-policy (num_iterations = 1 and one generation per optimizer step): k_ref = 1, "
                         "refresh lag.")
        else:
            lines.append(
                f"Lag: one generation batch serves {k_ref} optimizer steps (num_iterations = {self.num_iterations} x "
                f"steps_per_generation / gradient_accumulation_steps): refresh lag, k_ref = {k_ref}. This is the "
                "stale-gradient bound; TRL's importance ratio removes the lag in expectation until the clip binds "
                "(k_ref = 1 is the optimistic end).")
        if self.unreadable:
            lines.append(f"{self.source} gives {', '.join(self.unreadable)}, not a number: TRL's default is used.")
        return Conventions(momentum=momentum, mu=mu, lag=lag, k_ref=k_ref, preconditioned=self.adam,
                           lines=tuple(lines))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready ``dict`` of the fields."""
        from .._json import json_ready

        return json_ready({f: getattr(self, f) for f in self.__dataclass_fields__})


def _flatten(d: dict[str, Any]) -> dict[str, Any]:
    """Lower-cased keys of ``d`` and of its ``hyperparameters`` sub-dict (meta.json), top level last wins."""
    out: dict[str, Any] = {}
    for key in ("hyperparameters", "args", "training_args"):
        if isinstance(d.get(key), dict):
            out.update({str(k).lower(): v for k, v in d[key].items()})
    out.update({str(k).lower(): v for k, v in d.items() if not isinstance(v, dict)})
    return out


def _number(name: str, value: Any, source: str) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an int beyond the float range
            raise DataError(f"{source}: `{name}` = an integer of {len(str(abs(value)))} digits is beyond the "
                            "float range (1.8e308)") from None
    m = re.match(r"\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", str(value))  # "8 (scripts/...; README says 4)"
    if m is None:
        if not re.search(r"\d", str(value)):
            return _WORDS  # "TRL default (not set)", "unknown": the field is not given
        raise DataError(f"{source}: `{name}` = {value!r} is not a number")
    return float(m.group(1))


#: What :func:`_number` returns for a value in words (no digit at all).
_WORDS = object()

#: Words that say a field was not set ("TRL default (not set)", "unknown", "auto"): its default is
#: used without a warning. Other words in a file beside a log ("see config", "eight") are warned about.
_NOT_GIVEN = re.compile(r"default|not set|unset|unknown|none|n/a|auto|unspecified", re.IGNORECASE)


def _is_adam(optimizer: Any) -> bool:
    """An Adam-family optimizer name (``adamw_torch``, ``adamw``, ``paged_adamw_8bit``, ...)."""
    return optimizer is not None and "adam" in str(optimizer).lower()


def _optim_args_momentum(flat: dict[str, Any]) -> float | None:
    m = re.search(r"momentum\s*=\s*([0-9.eE+-]+)", str(flat.get("optim_args") or ""))
    return float(m.group(1)) if m else None


#: The largest count a config may give (num_iterations, steps_per_generation, ...): beyond it a value
#: is a typo or a sentinel, and the lag it implies would overflow the model's coefficients.
MAX_COUNT = 10 ** 6


#: The positive learning rates whose reciprocal is a normal float: ``K = (eta K) / eta`` is computed with it,
#: and a subnormal ``eta`` makes ``K`` overflow, an ``eta`` above ``1 / 2.2e-308`` leaves it subnormal
#: (digits lost) for any rate below 1 per step.
LEARNING_RATE_RANGE = (1.0 / sys.float_info.max, 1.0 / sys.float_info.min)


def _from_mapping(d: dict[str, Any], source: str, lenient: bool = False) -> RunSettings:
    """Settings from a JSON object. Each field is parsed and checked on its own; a bad one raises
    DataError naming it, or, ``lenient`` (a file found beside a log, written by another tool), is
    dropped for TRL's default and listed in ``unreadable`` with a warning."""
    flat = _flatten(d)
    values: dict[str, Any] = {}
    unreadable: list[str] = []
    dropped: list[str] = []

    def drop(name: str, hit: Any, why: str) -> None:
        if not lenient:
            raise DataError(f"{source}: `{name}` = {_shown(hit)} {why}")
        dropped.append(f"`{name}` = {_shown(hit)} ({why})")

    for name, keys in _ALIASES.items():
        hit = next((flat[k] for k in keys if k in flat and flat[k] is not None), None)
        if hit is None:
            continue
        if name == "lag" and isinstance(hit, (int, float)) and not isinstance(hit, bool):
            # grpo-dynamics' own config.json records the lag in steps (steps_per_generation x
            # num_iterations), which the two counts already give; `lag` here is the lag model
            continue
        if name in ("optimizer", "lag"):
            if not isinstance(hit, str):
                drop(name, hit, "is not a name")
                continue
            values[name] = hit
        else:
            if isinstance(hit, bool) or not isinstance(hit, (int, float, str)):
                drop(name, hit, "is not a number")
                continue
            try:
                value = _number(name, hit, source)
            except DataError:
                drop(name, hit, "is beyond the float range (1.8e308)" if isinstance(hit, int) else "is not a number")
                continue
            if value is _WORDS:
                if lenient and not _NOT_GIVEN.search(str(hit)):
                    drop(name, hit, "is not a number")  # "see config", "eight": said, not silently defaulted
                else:
                    unreadable.append(f"`{name}` = {hit!r}")
                continue
            values[name] = value
        problem = _field_problem(name, values[name])
        if problem:
            del values[name]
            drop(name, hit, problem)
    try:
        momentum = _optim_args_momentum(flat)
    except ValueError:
        momentum = None
        drop("optim_args", flat.get("optim_args"), "has a momentum that is not a number")
    if momentum is not None:
        problem = _field_problem("sgd_momentum", momentum)
        if problem:
            drop("optim_args", flat.get("optim_args"), f"gives momentum {momentum:g}, which {problem}")
        else:
            values["sgd_momentum"] = momentum
    if "beta1" not in values and "sgd_momentum" in values and _is_adam(values.get("optimizer")):
        # a config whose one `momentum` means Adam's beta1 (grpo-dynamics' experiment config)
        values["beta1"] = values.pop("sgd_momentum")
    for name in ("num_iterations", "steps_per_generation", "gradient_accumulation_steps", "group_size", "k_ref"):
        if name in values:
            values[name] = int(values[name])
    if dropped:
        warnings.warn(f"{source}: ignored {', '.join(dropped)}; TRL's defaults used for those", stacklevel=3)
    unreadable += dropped
    defaulted = tuple(n for n in ("optimizer", "beta1", "num_iterations", "steps_per_generation",
                                  "gradient_accumulation_steps", "beta", "group_size", "learning_rate")
                      if n not in values)
    return RunSettings(**values, source=source, defaulted=defaulted, unreadable=tuple(unreadable))


def _shown(value: Any) -> str:
    text = repr(value)
    if isinstance(value, int) and len(text) > 60:
        return f"an integer of {len(text.lstrip('-'))} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def _field_problem(name: str, v: Any) -> str | None:
    """Why a parsed value is out of range, or None (the words end a sentence "`name` = v ...")."""
    if name in ("optimizer",):
        return None
    if name == "lag":
        return None if v in ("refresh", "constant") else "must be 'refresh' or 'constant'"
    if not math.isfinite(v):
        return "must be finite"
    if name in ("beta1", "beta2", "sgd_momentum"):
        return None if 0.0 <= v < 1.0 else "must be in [0, 1)"
    if name in ("num_iterations", "steps_per_generation", "gradient_accumulation_steps", "k_ref", "group_size"):
        if v < 1 or v != int(v):
            return "must be a whole number >= 1"
        return None if v <= MAX_COUNT else f"must be at most {MAX_COUNT:,}"
    if name == "learning_rate" and v > 0 and not LEARNING_RATE_RANGE[0] <= v <= LEARNING_RATE_RANGE[1]:
        return (f"must be 0 or in [{LEARNING_RATE_RANGE[0]:.3g}, {LEARNING_RATE_RANGE[1]:.3g}] (its reciprocal, "
                "which turns the fitted rate eta*K per step into K, must be a normal float)")
    if name in ("beta", "learning_rate"):
        return None if v >= 0 else "must be >= 0"
    return None


def settings_from_mapping(d: Any, source: str = "trainer arguments") -> RunSettings:
    """Settings from a mapping or an object with the config's fields (a live ``GRPOConfig``).

    Parameters
    ----------
    d : dict, or an object with ``to_dict()`` (``transformers.TrainingArguments``) or attributes
    source : str
        Recorded in :attr:`RunSettings.source`.

    Returns
    -------
    RunSettings

    Raises
    ------
    ParameterError
        ``d`` is not a mapping or a config object (a string, a number, ``None``, a DataFrame).
    DataError
        A value out of range (as :func:`read_settings`; ``learning_rate`` must be 0 or in
        :data:`LEARNING_RATE_RANGE`).

    Examples
    --------
    >>> s = settings_from_mapping({"optim": "sgd", "optim_args": "momentum=0.9", "num_iterations": 2})
    >>> s.conventions().momentum, s.sgd_momentum, s.conventions().k_ref
    ('heavy_ball', 0.9, 2)
    """
    d = _as_mapping(d)
    return _from_mapping({k: getattr(v, "value", v) for k, v in d.items()}, source)


def _as_mapping(d: Any) -> dict[str, Any]:
    """The settings of ``d`` as a dict: a mapping, ``d.to_dict()`` (a config object), or ``vars(d)``."""
    if isinstance(d, Mapping):
        return dict(d)
    if isinstance(d, str | bytes | numbers.Number) or d is None or hasattr(d, "columns") or hasattr(d, "dtype"):
        # a table's to_dict() is its columns, not settings; a string or a number has none
        raise ParameterError("d", "`d` must be a mapping of settings (a dict, a GRPOConfig or TrainingArguments); "
                                  f"got {type(d).__name__}")
    if callable(getattr(d, "to_dict", None)):
        out = d.to_dict()
        if isinstance(out, Mapping):
            return dict(out)
        raise ParameterError("d", f"`d`.to_dict() must return a mapping of settings; got {type(out).__name__}")
    if hasattr(d, "__dict__"):
        return dict(vars(d))
    raise ParameterError("d", "`d` must be a mapping of settings (a dict, a GRPOConfig or TrainingArguments); "
                              f"got {type(d).__name__}")


def read_settings(path: Any, *, lenient: bool = False) -> RunSettings:
    """Read a run's settings from a config file.

    Parameters
    ----------
    path : str or path-like
        A JSON file: a TRL ``GRPOConfig`` / ``TrainingArguments`` dump, a ``trainer_state.json``
        (it names no optimizer: TRL's defaults are used and recorded in ``defaulted``), a real run's
        ``meta.json`` (its ``hyperparameters`` and ``group_size_G``/``learning_rate``), or a JSON of
        this module's own field names (``optimizer``, ``beta1``, ``sgd_momentum``, ``num_iterations``,
        ``steps_per_generation``, ``gradient_accumulation_steps``, ``beta``, ``group_size``,
        ``learning_rate``, ``k_ref``, ``lag``).

    Returns
    -------
    RunSettings

    Raises
    ------
    ParameterError
        The file does not exist.
    DataError
        It is not a JSON object, or a value is out of range (``beta1`` outside [0, 1), ...).

    Examples
    --------
    >>> from grpo_core.runs import datasets
    >>> s = read_settings(datasets.real_run("01").folder / "meta.json")
    >>> s.optimizer, s.beta, s.group_size, s.learning_rate, s.conventions().k_ref
    ('adamw_torch', 0.05, 4, 0.0001, 1)
    """
    p = check_path("config", path, what="a path to a JSON file")
    if not p.is_file():
        raise ParameterError("config", f"`config` must be an existing JSON file; got {str(path)!r}")
    if p.stat().st_size > 64 * 2 ** 20:
        raise DataError(f"{p}: {p.stat().st_size / 2 ** 20:.0f} MiB is too large for a settings file")
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: not a JSON file ({exc})") from None
    except RecursionError:
        raise DataError(f"{p}: JSON nested too deeply to be a settings file") from None
    if not isinstance(d, dict):
        raise DataError(f"{p}: expected a JSON object of settings, got {type(d).__name__}")
    if "log_history" in d:  # trainer_state.json: only the batch and step counts; lr comes from the log
        d = {k: v for k, v in d.items() if k != "log_history"}
    return _from_mapping(d, p.name, lenient=lenient)


def settings_for_log(log_path: Any, config: Any = None, *, ignore_beside: bool = False) -> RunSettings:
    """The settings of the run that wrote ``log_path``: ``config`` if given, else a file beside the log.

    Looked for beside the log, in this order: ``meta.json`` (a committed real run), ``config.json``,
    ``training_args.json``; a ``trainer_state.json`` log is itself read. None found (or
    ``ignore_beside``): TRL's defaults (``source = "TRL defaults"``). ``config`` is read strictly (a
    bad value raises DataError); a file found beside the log may be another tool's, so it is read
    leniently: each value that parses and is in range is used, each other one is replaced by TRL's
    default and named in a warning, and a file that is not a JSON object is ignored with a warning.

    Raises
    ------
    ParameterError, DataError
        ``config`` missing, not JSON, or with a bad value.
    """
    log = check_path("log_path", log_path, what="the log's file path")
    if config is not None:
        return read_settings(config)
    if not ignore_beside:
        for name in ("meta.json", "config.json", "training_args.json"):
            if (log.parent / name).is_file() and log.name != name:
                # another tool's file: what parses is used, the rest is named in a warning
                try:
                    return read_settings(log.parent / name, lenient=True)
                except DataError as exc:
                    warnings.warn(f"{exc}; the file is ignored, TRL's defaults used (--config gives the "
                                  "settings, --ignore-config ignores files beside the log)", stacklevel=2)
                    break
        if log.suffix == ".json" and log.is_file():
            try:
                return read_settings(log, lenient=True)
            except DataError:
                pass
    return RunSettings(defaulted=tuple(k for k in TRL_DEFAULTS if k != "sgd_momentum" and k != "beta2"))
