"""What a check reports: the modes, the severities and one :class:`Finding`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._json import json_ready

MODES = ("train_eval_decoupling", "advantage_degeneration", "policy_concentration", "dynamic_instability")
#: Severities, least to most severe.
SEVERITIES = ("info", "warning", "critical")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Finding:
    """One failure mode found in a log.

    Attributes
    ----------
    mode : str
        One of :data:`MODES`.
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
    """

    mode: str
    severity: str
    steps: tuple[int, int]
    onset: int | None
    evidence: dict[str, Any]
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``mode``, ``severity``, ``steps``, ``onset``, ``evidence``, ``message``)."""
        return json_ready({"mode": self.mode, "severity": self.severity, "steps": list(self.steps),
                      "onset": self.onset, "evidence": self.evidence, "message": self.message})
