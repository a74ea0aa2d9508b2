"""Reward-curve laws, least-squares fits, model comparison and plateau forecasts.

``models``
    The laws (:class:`Law`; ``three_phase``, the damped oscillator's step response from rest, our
    derivation; ``three_phase_onset``; ``exponential``; ``logistic``), the registry :data:`LAWS`,
    :func:`get_law`, and the oscillator ratios of a three-phase fit (:func:`oscillator_quantities`).
``curves``
    What every fit needs of a curve: validation, Gaussian information criteria, the noise variance
    (R^2 ceiling), a rolling mean, the check of a plateau outside [0, 1].
``fit``
    :func:`fit_law` (bounded least squares from several starts, standard errors, criteria) and
    :func:`fit_all` (every law, the best by AIC, AICc or BIC, and the preferred one: the best whose
    plateau the curve determines), :func:`choose_criterion` (AICc on short curves).
``forecasting``
    :func:`forecast` (fit the first part of a curve, forecast its plateau with a delta-method or
    block-bootstrap band), :func:`forecast_sweep`, :func:`forecast_coverage`.

References
----------
Our derivation, book chapters "From update rule to oscillator" and "Fitting real reward curves".
"""

from .curves import (
    MIN_POINTS,
    gaussian_information_criteria,
    noise_variance,
    plateau_outside_unit_interval,
    rolling_mean,
)
from .fit import AICC_POINTS_PER_PARAMETER, DEFAULT_LAWS, FitComparison, FitResult, choose_criterion, fit_all, fit_law
from .forecasting import Forecast, forecast, forecast_coverage, forecast_sweep
from .models import LAWS, ExponentialLaw, Law, LogisticLaw, ThreePhaseLaw, get_law, oscillator_quantities

__all__ = [
    "Law",
    "ThreePhaseLaw",
    "ExponentialLaw",
    "LogisticLaw",
    "LAWS",
    "DEFAULT_LAWS",
    "MIN_POINTS",
    "get_law",
    "FitResult",
    "FitComparison",
    "Forecast",
    "fit_law",
    "fit_all",
    "choose_criterion",
    "AICC_POINTS_PER_PARAMETER",
    "forecast",
    "forecast_sweep",
    "forecast_coverage",
    "rolling_mean",
    "noise_variance",
    "gaussian_information_criteria",
    "oscillator_quantities",
    "plateau_outside_unit_interval",
]
