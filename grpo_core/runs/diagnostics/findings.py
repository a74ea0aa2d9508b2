"""What a check reports: the modes, the severities, what to try, and one :class:`Finding`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._json import json_ready

#: The four failure modes of the paper.
MODES = ("train_eval_decoupling", "advantage_degeneration", "policy_concentration", "dynamic_instability")
#: The ones users hit first (one module each).
USER_MODES = ("not_learning", "truncation", "numerical_failure", "no_update", "off_policy_mismatch",
              "entropy_explosion", "kl_drift", "recurring_spikes", "saturation")
#: Every mode a :class:`Finding` can have.
ALL_MODES = MODES + USER_MODES
#: Severities, least to most severe.
SEVERITIES = ("info", "warning", "critical")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}
#: Verdicts of :class:`~grpo_core.runs.diagnostics.Diagnosis`: no warning or critical finding and the
#: checks that establish it ran; some warning or critical finding; no such finding, but too few checks ran.
VERDICTS = ("healthy", "unhealthy", "inconclusive")

#: What to try, per mode (a finding may say something more specific).
ADVICE = {
    "train_eval_decoupling": "check the reward function against held-out answers (reward hacking): tighten the "
                             "verifier, add the eval metric to the reward, or stop at the eval peak",
    "advantage_degeneration": "make groups carry signal: a larger group size G, prompts of middling difficulty "
                              "(filter all-solved and all-failed ones), or a denser reward",
    "policy_concentration": "keep exploration: a higher sampling temperature, an entropy bonus, clip-higher "
                            "(epsilon_high), or a larger KL coefficient",
    "dynamic_instability": "lower the learning rate, clip gradients (max_grad_norm), or raise the KL "
                           "coefficient; check the reward scale",
    "not_learning": "raise the learning rate (GRPO runs commonly use about 1e-6 for full fine-tuning and 1e-5 to "
                    "1e-4 with LoRA), check that the reward can be earned (print a few completions and their "
                    "rewards), or use easier prompts",
    "truncation": "raise max_completion_length, shorten the prompt's requested reasoning, or add a length "
                  "penalty; truncated completions get no answer and no reward",
    "numerical_failure": "restart from the last finite checkpoint with a lower learning rate; use bf16 rather "
                         "than fp16, clip gradients, and check the reward for NaN",
    "no_update": "the optimizer receives no gradient: check that the LoRA/trainable parameters are attached, "
                 "the learning rate is not 0, and the loss is not detached (beta, loss_type)",
    "off_policy_mismatch": "generation and training disagree on the log-probabilities: align the dtype and "
                           "kernels of vLLM and the trainer, sync weights every step, or enable importance "
                           "sampling correction",
    "entropy_explosion": "lower the learning rate, lower the sampling temperature, or raise the KL "
                         "coefficient; look at the completions (degenerate text)",
    "kl_drift": "the policy moves away from the reference without gain: lower the learning rate or raise the "
                "KL coefficient; check that the reward rewards what you want",
    "recurring_spikes": "clip gradients (max_grad_norm), lower the learning rate, and look at the batches of "
                        "the spike steps (very long or degenerate completions)",
    "saturation": "the task is solved at this difficulty: stop, or move to harder prompts",
}


@dataclass(frozen=True)
class Finding:
    """One failure mode found in a log.

    Attributes
    ----------
    mode : str
        One of :data:`ALL_MODES`.
    severity : {"info", "warning", "critical"}
        See :mod:`grpo_core.runs.diagnostics`.
    steps : tuple of int
        ``(first, last)`` optimizer steps the finding covers.
    onset : int or None
        Step at which the failure began, where that is meaningful (growth, entropy halving).
    evidence : dict
        The numbers behind the finding (observed and expected fractions, growth factors, ...).
    message : str
        One sentence for a person.
    advice : str
        What to try (default: :data:`ADVICE` of the mode).
    """

    mode: str
    severity: str
    steps: tuple[int, int]
    onset: int | None
    evidence: dict[str, Any]
    message: str
    advice: str = ""

    def __post_init__(self) -> None:
        if not self.advice:
            object.__setattr__(self, "advice", ADVICE.get(self.mode, ""))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``mode``, ``severity``, ``steps``, ``onset``, ``evidence``, ``message``, ``advice``)."""
        return json_ready({"mode": self.mode, "severity": self.severity, "steps": list(self.steps),
                           "onset": self.onset, "evidence": self.evidence, "message": self.message,
                           "advice": self.advice})


def new_findings(findings, seen: dict[str, int]) -> list[Finding]:
    """The findings whose mode is new or more severe than ``seen`` (mode -> rank in :data:`SEVERITIES`), which is
    updated: a mode is reported once, and again only when its severity rises; a finding's numbers (its steps, its
    evidence) do not make it new. The rule of the TRL callback's alerts and of ``grpo-dynamics watch``."""
    new = []
    for f in findings:
        r = _RANK.get(f.severity, 0)
        if seen.get(f.mode, -1) >= r:
            continue
        seen[f.mode] = r
        new.append(f)
    return new
