"""The oscillator theory of GRPO training dynamics (book part "From update rule to oscillator").

* :mod:`~grpo_core.model.hyperparameters` -- the checks of ``eta``, ``mu``, ``k_ref``, ... (one table);
* :mod:`~grpo_core.model.oscillator` -- coefficients ``M, C, K_eff``, the step response, the regime
  and THE regime verdict (:func:`regime_verdict`: exact stability + continuous regime);
* :mod:`~grpo_core.model.trajectories` -- closed form, exact recurrence, time scales;
* :mod:`~grpo_core.model.noise` -- the noisy recurrence, stationary variances, noise bands;
* :mod:`~grpo_core.model.stability` -- continuous and exact thresholds, critical values;
* :mod:`~grpo_core.model.advice` -- the ``advise`` report built on all of the above.

Imports run one way: hyperparameters <- stability <- oscillator <- noise <- trajectories <- advice.
The names re-exported here are the room's public interface.
"""

from .advice import Advice, advise
from .noise import (
    noise_bands,
    simulate,
    simulate_reference,
    stationary_variance,
    stationary_variance_exact,
    variance_trajectory,
)
from .oscillator import (
    REGIME_LABELS,
    REGIMES,
    VERDICT_LABELS,
    VERDICTS,
    OscillatorCoefficients,
    classify_regime,
    coefficients,
    coefficients_verdict,
    regime_verdict,
    relaxation,
    reward_curve,
)
from .stability import (
    critical_a_continuous,
    critical_a_exact,
    critical_value,
    exact_threshold_rows,
    is_stable_exact,
    threshold_table,
)
from .trajectories import closed_form_trajectory, discrete_trajectory, settling_time, time_to_fraction

__all__ = [
    "Advice", "advise",
    "noise_bands", "simulate", "simulate_reference", "stationary_variance", "stationary_variance_exact",
    "variance_trajectory",
    "REGIMES", "REGIME_LABELS", "VERDICTS", "VERDICT_LABELS", "OscillatorCoefficients", "classify_regime",
    "coefficients", "coefficients_verdict", "regime_verdict", "relaxation", "reward_curve",
    "critical_a_continuous", "critical_a_exact", "critical_value", "exact_threshold_rows", "is_stable_exact",
    "threshold_table",
    "closed_form_trajectory", "discrete_trajectory", "settling_time", "time_to_fraction",
]
