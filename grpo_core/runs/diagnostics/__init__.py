"""Name what is going wrong in a GRPO training log: four failure modes, oscillation, forecast.

:func:`diagnose` takes a :class:`~grpo_core.runs.logs.RunLog` (or a path) and checks four failure
modes, each with an operational definition and documented thresholds (the
definitions and thresholds are ours, justified below and in the book chapter "Reading a
training log"):

``train_eval_decoupling`` (reward hacking)
    The training reward rises clearly while the evaluation metric, or the reward function that
    measures correctness, does not. :func:`train_eval_decoupling`.
``advantage_degeneration``
    A large fraction of groups has zero reward spread, so their advantages are zero and they give
    no gradient; compared with ``p^G + (1 - p)^G``, the fraction expected for a 0/1 reward at
    accuracy ``p`` and group size ``G``. :func:`advantage_degeneration`.
``policy_concentration``
    The policy entropy falls to a fraction of its initial value while the reward is still rising:
    exploration is lost before learning is done, and the mean-field premise (a policy spread over
    many outputs, whose expected reward moves smoothly) erodes. :func:`policy_concentration`.
``dynamic_instability``
    Unbounded growth of the gradient norm, the importance ratios, the clip fractions or the KL, or
    a growing oscillation of the reward (the oscillator past its stability threshold).
    :func:`dynamic_instability`, :func:`oscillation`.

Severity is one of ``"info"`` (worth knowing, not a failure), ``"warning"`` (a failure mode is
present and costs learning) and ``"critical"`` (the run is not learning, or is diverging). A run
is *healthy* when no finding is a warning or critical. A mode that cannot be checked (the log has
no entropy, no eval metric...) is listed in :attr:`Diagnosis.skipped` with the reason, never
reported as fine.

The room, one module per concept: ``thresholds`` (:class:`Thresholds`, every threshold with its
reason), ``findings`` (the modes, severities, :class:`Finding`), ``series`` (the numerics the
checks share), ``oscillation`` (the periodogram test), one module per failure mode
(``decoupling``, ``degeneration``, ``concentration``, ``instability``), ``forecast`` (the plateau
forecast) and ``diagnose`` (:func:`diagnose`, :class:`Diagnosis`). A new failure mode gets its own
module and its thresholds in :class:`Thresholds`. Constructed logs to test them on are in
:mod:`grpo_core.runs.synthetic`, which none of these modules imports.

References
----------
Our operational definitions (book chapter "Reading a training log").
Fisher (1929), "Tests of significance in harmonic analysis" (the g-test of a periodogram peak).
Cui et al. (2025), "The Entropy Mechanism of Reinforcement Learning for Reasoning Language
Models" (entropy collapse while performance saturates).
"""

from __future__ import annotations

from .concentration import policy_concentration
from .decoupling import train_eval_decoupling
from .degeneration import advantage_degeneration, group_size_for_zero_spread, zero_spread_series
from .diagnose import Diagnosis, diagnose
from .findings import MODES, SEVERITIES, Finding
from .forecast import FORECAST_POINTS, plateau_forecast
from .instability import dynamic_instability
from .oscillation import Oscillation, oscillation
from .thresholds import DEFAULT_THRESHOLDS, Thresholds

__all__ = [
    "MODES",
    "SEVERITIES",
    "Thresholds",
    "DEFAULT_THRESHOLDS",
    "FORECAST_POINTS",
    "Finding",
    "Oscillation",
    "Diagnosis",
    "group_size_for_zero_spread",
    "oscillation",
    "zero_spread_series",
    "advantage_degeneration",
    "policy_concentration",
    "dynamic_instability",
    "train_eval_decoupling",
    "plateau_forecast",
    "diagnose",
]
