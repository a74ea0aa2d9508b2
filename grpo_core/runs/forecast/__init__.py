"""Where a run's reward ends: the forecast room.

One function forecasts the end of a run, :func:`forecast_end`, and returns one typed result,
:class:`EndForecast`: the method's own point and band (the current level with a split-conformal 90% band,
:mod:`~grpo_core.runs.forecast.calibrated`), the same as shown within the reward's range, the fraction of
the run seen, the record it is calibrated in, the caveats, the text lines
(:meth:`EndForecast.lines`) and the JSON (:meth:`EndForecast.to_dict`) that ``diagnose``, ``fit``, the
report, the training callback and the widgets show. Beside it, :func:`fit_curve_laws` fits the law that
describes the curve so far (:class:`CurveLawFit`), a description, not a second forecast.

``end``
    :func:`forecast_end`, :func:`is_reward`; the point and band come from one internal function
    (``_point_and_band``): :func:`~grpo_core.runs.forecast.calibrated.forecast_calibrated`.
``calibrated``
    The shipped method and its constants (``calibrated.json``).
``law_fit``
    :func:`fit_curve_laws`, :func:`plateau_checks` (when a fitted plateau is not to be read),
    :data:`FORECAST_POINTS`.
``result``
    :class:`EndForecast`, :class:`CurveLawFit`.
``reward_range``
    :func:`check_reward_range`, :func:`shown_range`, :func:`range_text`.
"""

from __future__ import annotations

from .end import forecast_end, is_reward
from .law_fit import FORECAST_POINTS, fit_curve_laws, plateau_checks
from .result import CurveLawFit, EndForecast
from .reward_range import check_reward_range, range_text, shown_range

__all__ = [
    "forecast_end",
    "EndForecast",
    "fit_curve_laws",
    "CurveLawFit",
    "plateau_checks",
    "check_reward_range",
    "shown_range",
    "range_text",
    "is_reward",
    "FORECAST_POINTS",
]
