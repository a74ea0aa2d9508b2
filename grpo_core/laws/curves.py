"""A reward curve's preparation and statistics, shared by the fits and the forecasts.

:func:`gaussian_information_criteria` (AIC, AICc, BIC of a least-squares fit),
:func:`noise_variance` (Rice's difference estimator, the R^2 ceiling), :func:`rolling_mean`,
:func:`plateau_outside_unit_interval`; and the validation every fit runs first (``_prepare``).

References
----------
Akaike (1974), "A new look at the statistical model identification"; Hurvich & Tsai (1989)
(AICc); Schwarz (1978) (BIC); Rice (1984) (the difference-based noise variance).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import DataError, ParameterError
from ..validation import check_array, check_integer, check_real

#: Fewest usable (finite) points a fit accepts.
MIN_POINTS = 5


def _prepare(t, y, *, min_points: int = MIN_POINTS) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a curve: 1-D, same length, finite (non-finite rows dropped with a warning),
    strictly increasing non-negative t, at least ``min_points`` points, not constant."""
    arrays = []
    for name, v in (("t", t), ("y", y)):
        if v is None or isinstance(v, bytes):  # None would read as one NaN point, bytes as a number
            raise ParameterError(name, f"`{name}` must be a 1-D array of numbers; got {type(v).__name__}")
        try:
            a = np.asarray(v, dtype=float)
        except OverflowError:
            raise ParameterError(name, f"`{name}` must be a 1-D array of finite numbers; got an integer beyond the "
                                       "float range (1.8e308)") from None
        except (TypeError, ValueError):
            raise ParameterError(name, f"`{name}` must be a 1-D array of numbers; got {type(v).__name__}") from None
        if a.ndim != 1:
            raise ParameterError(name, f"`{name}` must be a 1-D array; got shape {a.shape}")
        arrays.append(a)
    t_arr, y_arr = arrays
    if t_arr.size != y_arr.size:
        raise ParameterError(
            "y", f"`y` must have the same length as `t`; got {y_arr.size} values of `y` and {t_arr.size} of `t`"
        )
    ok = np.isfinite(t_arr) & np.isfinite(y_arr)
    dropped = int(ok.size - np.count_nonzero(ok))
    if dropped:
        warnings.warn(
            f"dropped {dropped} of {ok.size} point(s) with NaN or infinite `t` or `y`",
            UserWarning,
            stacklevel=3,
        )
        t_arr, y_arr = t_arr[ok], y_arr[ok]
    if y_arr.size < min_points:
        raise DataError(
            f"`y` needs at least {min_points} usable points (finite `t` and `y`); got {y_arr.size}"
            + (f" after dropping {dropped} non-finite" if dropped else "")
        )
    steps = np.diff(t_arr)
    if np.any(steps <= 0):
        i = int(np.argmax(steps <= 0))
        raise ParameterError(
            "t", f"`t` must be strictly increasing; t[{i + 1}] = {t_arr[i + 1]!r} follows t[{i}] = {t_arr[i]!r}"
        )
    if t_arr[0] < 0:
        raise ParameterError("t", f"`t` must be >= 0 (steps since the start of training); got {t_arr[0]!r}")
    scale = float(np.max(np.abs(y_arr)))
    if scale > 1e100 or 0 < scale < 1e-100:
        # sums of squares would overflow or underflow float64: no fit means anything there
        raise DataError(f"`y` values reach {scale:.3g}, {'too large' if scale > 1 else 'too small'} to fit in "
                        "floating point (|y| must lie within 1e-100 .. 1e100); rescale the metric")
    if np.ptp(y_arr) <= 1e-12 * scale:
        raise DataError(f"`y` is constant (every value is {y_arr[0]!r}); a reward law needs a curve that changes")
    return t_arr, y_arr, dropped


def gaussian_information_criteria(rss: float, n: int, n_params: int) -> dict[str, float]:
    """Log-likelihood, AIC, AICc and BIC of a least-squares fit under Gaussian noise.

    With i.i.d. N(0, sigma^2) errors and sigma^2 at its maximum-likelihood value ``RSS / n``,

        log L = -n/2 * (log(2 pi RSS / n) + 1),
        AIC  = 2 q - 2 log L,     q = n_params + 1 (the noise variance counts),
        AICc = AIC + 2 q (q + 1) / (n - q - 1)       (inf when n <= q + 1),
        BIC  = q log(n) - 2 log L.

    Parameters
    ----------
    rss : float, >= 0
        Residual sum of squares (reward^2). A perfect fit (``rss = 0``) is floored at 1e-300 so
        the criteria stay finite (and very negative).
    n : int, >= 1
        Number of points.
    n_params : int, >= 0
        Number of fitted parameters of the law (without the noise variance).

    Returns
    -------
    dict
        ``loglik``, ``aic``, ``aicc``, ``bic`` (floats).

    Raises
    ------
    ParameterError
        If ``rss < 0`` or not finite, or ``n`` / ``n_params`` out of range.

    References
    ----------
    Akaike (1974); Hurvich & Tsai (1989), eq. (3) (AICc); Schwarz (1978).

    Examples
    --------
    >>> ic = gaussian_information_criteria(rss=2.0, n=100, n_params=3)
    >>> round(ic["aic"] - ic["bic"], 6) == round(2 * 4 - 4 * math.log(100), 6)
    True
    """
    rss = check_real("rss", rss, low=0.0)
    n = check_integer("n", n, low=1)
    n_params = check_integer("n_params", n_params, low=0)
    q = n_params + 1
    loglik = -0.5 * n * (math.log(2.0 * math.pi * max(rss, 1e-300) / n) + 1.0)
    aic = 2.0 * q - 2.0 * loglik
    aicc = aic + (2.0 * q * (q + 1) / (n - q - 1) if n > q + 1 else math.inf)
    bic = q * math.log(n) - 2.0 * loglik
    return {"loglik": loglik, "aic": aic, "aicc": aicc, "bic": bic}


def noise_variance(y) -> float:
    """Noise variance of a curve estimated from successive differences (Rice's estimator).

    ``sigma^2 = sum (y[i+1] - y[i])^2 / (2 (n - 1))``: unbiased for white noise around a smooth
    trend whose step-to-step change is small against the noise. It gives a reference R^2 for a law
    on the curve, ``1 - sigma^2 / Var(y)`` (the noise reference). It is not a ceiling: negatively
    correlated residuals inflate the successive differences, so fits can pass it (the fitting
    chapter shows one). On a smoothed curve (positively correlated noise) it underestimates the noise.

    Parameters
    ----------
    y : array_like, shape (n,)
        Curve values on an (approximately) even grid, n >= 2; NaN/inf are refused.

    Returns
    -------
    float
        Estimated noise variance (reward^2).

    Raises
    ------
    ParameterError
        If ``y`` is not 1-D, has fewer than 2 values, or holds NaN/inf.

    References
    ----------
    Rice (1984), "Bandwidth choice for nonparametric regression", Ann. Statist. 12, eq. (4).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = np.linspace(0, 1, 10_000) + rng.normal(0, 0.1, 10_000)
    >>> round(noise_variance(y) / 0.01, 1)
    1.0
    """
    arr = check_array("y", y, ndim=1, min_size=2)
    d = np.diff(arr)
    return float(np.sum(d * d) / (2.0 * d.size))


def rolling_mean(t, y, window: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Centred rolling mean of a curve, keeping only the points with a full window.

    Point i of the result is the mean of ``y[i - window//2 : i - window//2 + window]`` (for an
    even window the centre lies half a step late, as in pandas' ``rolling(window,
    center=True).mean()``, which this reproduces exactly on its non-NaN rows).

    Parameters
    ----------
    t : array_like, shape (n,)
        Steps (returned for the kept points).
    y : array_like, shape (n,)
        Values to smooth; must be finite (drop NaN rows first).
    window : int, 1 <= window <= n
        Window length in points (20 for the book's smoothed Qwen curve).

    Returns
    -------
    t_smooth, y_smooth : ndarray, shape (n - window + 1,)

    Raises
    ------
    ParameterError
        If the arrays differ in length, hold NaN/inf, or ``window`` is out of range.

    Notes
    -----
    Smoothing makes the residuals of a later fit strongly autocorrelated (over about ``window``
    points), so R^2 rises but AIC/BIC differences and Jacobian standard errors on a smoothed curve
    are overconfident: compare laws on the raw curve.

    Examples
    --------
    >>> rolling_mean([1, 2, 3, 4, 5], [0.0, 1.0, 2.0, 3.0, 4.0], window=3)
    (array([2., 3., 4.]), array([1., 2., 3.]))
    """
    t_arr = check_array("t", t, ndim=1)
    y_arr = check_array("y", y, ndim=1)
    if t_arr.size != y_arr.size:
        raise ParameterError("y", f"`y` must have the same length as `t`; got {y_arr.size} and {t_arr.size}")
    w = check_integer("window", window, low=1, high=max(1, y_arr.size))
    c = np.concatenate([[0.0], np.cumsum(y_arr)])
    means = (c[w:] - c[:-w]) / w
    start = w // 2
    return t_arr[start : start + means.size].copy(), means


def _lag1_autocorrelation(r: np.ndarray) -> float:
    d = r - r.mean()
    den = float(np.dot(d, d))
    return float(np.dot(d[:-1], d[1:]) / den) if den > 0 else 0.0


def plateau_outside_unit_interval(y, plateau: float) -> bool:
    """Whether a curve lying in [0, 1] (a 0/1 reward's mean, an accuracy) has a plateau outside it.

    Parameters
    ----------
    y : array_like, shape (n,)
        The curve (non-finite values are ignored).
    plateau : float
        Its fitted plateau.

    Returns
    -------
    bool
        True when every finite value of ``y`` lies in [0, 1] and ``plateau`` does not (by more than
        1e-9): a law that forecasts such a plateau is extrapolating past the largest (or smallest)
        value the metric can take.

    Examples
    --------
    >>> plateau_outside_unit_interval([0.1, 0.5, 0.9], 1.8), plateau_outside_unit_interval([0.1, 0.9], 0.95)
    (True, False)
    >>> plateau_outside_unit_interval([0.5, 1.5, 2.0], 2.4)  # not a [0, 1] metric
    False
    """
    arr = np.asarray(y, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0 or not math.isfinite(plateau) or arr.min() < 0.0 or arr.max() > 1.0:
        return False
    return bool(plateau > 1.0 + 1e-9 or plateau < -1e-9)
