"""Name what is going wrong in a GRPO training log: the failure modes, oscillation, forecast, a verdict.

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

Beside these, the failures users hit first, one module each (thresholds in :class:`Thresholds`):
``not_learning`` (no significant rise, with the slope test's p-value; a significant fall, the run
unlearned; or a dead run, all zeros: :func:`not_learning`), ``truncation`` (completions at the length
cap: :func:`truncation`),
``numerical_failure`` (NaN or inf in the loss, grad_norm, KL, entropy or reward:
:func:`numerical_failure`), ``no_update`` (grad_norm 0 while groups have spread, or a learning rate that
is never positive: :func:`no_update`),
``off_policy_mismatch`` (the mean importance ratio far from 1: :func:`off_policy_mismatch`),
``entropy_explosion`` (:func:`entropy_explosion`), ``kl_drift`` (the KL grows while the reward stays
flat: :func:`kl_drift`), ``recurring_spikes`` (:func:`recurring_spikes`) and ``saturation`` (zero spread
because the reward sits at its ceiling: done, info; :func:`judge_degeneration` also reports zero
spread in a run that learned anyway as a cost, with the wasted rollouts, not as a failure). Every
finding says what to try (:attr:`Finding.advice`).

Severity is one of ``"info"`` (worth knowing, not a failure), ``"warning"`` (a failure mode is
present and costs learning) and ``"critical"`` (the run is not learning, or is diverging). The
verdict (:attr:`Diagnosis.verdict`) is ``"unhealthy"`` when some finding is a warning or critical,
``"healthy"`` when none is *and* the checks that can establish it ran (the learning check and at
least two of the four checks of the paper, :attr:`Thresholds.min_checks_for_healthy`), and
``"inconclusive"`` otherwise, naming what is missing (:attr:`Diagnosis.missing`); ``healthy`` is
``verdict == "healthy"``. The command line exits 0 healthy, 1 unhealthy, 3 inconclusive (2: the log
or an argument is wrong). A mode that cannot be checked (the log has no entropy, no eval metric, a
column every value of which is empty or NaN, an entropy, KL or importance ratio that is 0 on every step
and so was not computed: ``series.ZERO_MEANS_NOT_COMPUTED``) is listed in :attr:`Diagnosis.skipped`
with the reason, never reported as fine. Without a reward the verdict is at best ``"inconclusive"``: zero
spread alone is reported as info (:func:`judge_degeneration`).

The room, one module per concept: ``thresholds`` (:class:`Thresholds`, every threshold with its
reason), ``findings`` (the modes, severities, :class:`Finding`), ``series`` (the numerics the
checks share), ``oscillation`` (the periodogram test), one module per failure mode
(``decoupling``, ``degeneration``, ``concentration``, ``instability``, ``learning``, ``truncation``,
``numerical``, ``no_update``, ``off_policy``, ``explosion``, ``drift``, ``spikes``, ``saturation``),
and ``diagnose`` (:func:`diagnose`, :class:`Diagnosis`; its forecast is made in
:mod:`grpo_core.runs.forecast`). A new failure mode gets its own
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
from .drift import kl_drift
from .explosion import entropy_explosion
from .findings import ADVICE, ALL_MODES, MODES, SEVERITIES, USER_MODES, VERDICTS, Finding
from .instability import dynamic_instability
from .learning import not_learning, slope_test
from .no_update import no_update
from .numerical import numerical_failure
from .off_policy import off_policy_mismatch
from .oscillation import Oscillation, oscillation
from .saturation import at_ceiling, judge_degeneration
from .spikes import recurring_spikes
from .thresholds import DEFAULT_THRESHOLDS, Thresholds
from .truncation import truncation

__all__ = [
    "MODES",
    "USER_MODES",
    "ALL_MODES",
    "SEVERITIES",
    "VERDICTS",
    "ADVICE",
    "Thresholds",
    "DEFAULT_THRESHOLDS",
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
    "not_learning",
    "slope_test",
    "truncation",
    "numerical_failure",
    "no_update",
    "off_policy_mismatch",
    "entropy_explosion",
    "kl_drift",
    "recurring_spikes",
    "at_ceiling",
    "judge_degeneration",
    "diagnose",
]
