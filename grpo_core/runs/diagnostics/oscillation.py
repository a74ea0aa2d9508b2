"""The periodogram test: a periodic component of a curve, its period, and whether it grows.

References
----------
Fisher (1929), "Tests of significance in harmonic analysis" (the g-test of a periodogram peak).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..._json import json_ready
from ...errors import ParameterError
from ...validation import check_array, check_real
from .series import _bin, _noise_sd, _smooth


@dataclass(frozen=True)
class Oscillation:
    """Periodic component of a detrended curve (:func:`oscillation`).

    Attributes
    ----------
    detected : bool
        The periodogram peak passes Fisher's g-test at the chosen level and the detrended curve
        repeats itself after one period (autocorrelation at that lag >= 0.2).
    period : float
        Period of the peak in steps (``nan`` if the curve is too short).
    p_value : float
        Fisher g-test p-value of the peak (small: a real oscillation).
    power_fraction : float
        Fraction of the detrended variance in the peak's Fourier bin (Fisher's g).
    autocorrelation : float
        Autocorrelation of the detrended curve at a lag of one period (near 1 for a clean
        oscillation, near 0 for noise).
    growth_rate : float
        Slope of the log amplitude envelope, per step (> 0 growing, < 0 decaying); ``nan`` when
        fewer than three periods were observed.
    growth_factor : float
        ``exp(growth_rate * span)``: how much the amplitude grew over the analysed steps.
    damping_ratio : float
        ``zeta = -growth_rate / sqrt(growth_rate^2 + omega^2)``, ``omega = 2 pi / period``: the
        damping ratio of the damped oscillator ``e^{-gamma t} cos(omega t)`` with the measured
        decay (``zeta < 0``: growing, past the stability threshold).
    amplitude_start, amplitude_end : float
        Amplitude (sqrt(2) x RMS) of the detrended curve in the first and the last period.
    steps : tuple of int
        First and last step analysed.
    swing_ratio : float
        Median amplitude of the detrended curve over one-period blocks, over ``sqrt(2)`` times the
        step-to-step noise (MAD of first differences / sqrt(2)): about 1 when the curve is its
        trend plus white noise, large when it swings persistently around its trend, periodic or
        not.
    """

    detected: bool
    period: float
    p_value: float
    power_fraction: float
    autocorrelation: float
    growth_rate: float
    growth_factor: float
    damping_ratio: float
    amplitude_start: float
    amplitude_end: float
    steps: tuple[int, int]
    swing_ratio: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the attributes."""
        return json_ready(asdict(self))


def oscillation(steps, values, *, min_period: float = 4.0, max_period: float | None = None,
                p_value: float = 0.01, min_autocorrelation: float = 0.2) -> Oscillation:
    """Find a periodic component of a curve, its period and whether its amplitude grows.

    Method: the curve is put on a uniform step grid (interpolating over gaps), detrended with a
    centred rolling mean (first over a fifth of the curve, then over exactly one period of the
    first estimate, which removes a sinusoid of that period from the trend), and the periodogram
    of the residual is searched for its largest peak between ``min_period`` and ``max_period``
    (zero-padded 8x for the period's resolution; 2x above 16,384 points). Fisher's g-test (largest Fourier ordinate over
    their sum, ``P(g > x) ~ m (1 - x)^(m - 1)`` for ``m`` ordinates) says whether the peak stands
    out of noise, and the detrended curve must also correlate with itself one period later
    (autocorrelation >= ``min_autocorrelation``): a single step change (a collapse) puts power at
    every frequency but does not repeat. The amplitude envelope is sqrt(2) x the RMS of the residual in consecutive
    one-period blocks; a least-squares line through its logarithm gives the growth rate.

    Parameters
    ----------
    steps : array_like, shape (n,)
        Optimizer steps, increasing (gaps allowed).
    values : array_like, shape (n,)
        The curve (reward per step); finite.
    min_period, max_period : float
        Period search range in steps (default max: a third of the span, so that at least three
        periods are seen).
    p_value : float
        Level of the g-test for ``detected`` (0.01).
    min_autocorrelation : float
        Smallest autocorrelation at a lag of one period for ``detected`` (0.2).

    Returns
    -------
    Oscillation

    Raises
    ------
    ParameterError
        Arrays of different lengths, non-finite values, fewer than 16 points, non-increasing steps.

    References
    ----------
    Fisher (1929), Proc. R. Soc. A 125, 54-59 (the g-test); our procedure, book chapter
    "Reading a training log".

    Examples
    --------
    >>> t = np.arange(1, 201)
    >>> y = 0.5 + 0.05 * np.exp(0.01 * t) * np.sin(2 * np.pi * t / 22)
    >>> osc = oscillation(t, y)
    >>> bool(osc.detected), round(osc.period), bool(osc.growth_factor > 3)
    (True, 22, True)
    """
    t = check_array("steps", steps, ndim=1, min_size=16)
    y = check_array("values", values, ndim=1, min_size=16)
    if t.size != y.size:
        raise ParameterError("values", f"`values` must have the same length as `steps`; got {y.size} and {t.size}")
    if np.any(np.diff(t) <= 0):
        raise ParameterError("steps", "`steps` must be strictly increasing")
    min_period = check_real("min_period", min_period, low=2.0)
    p_value = check_real("p_value", p_value, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    t, y = _bin(t, y, 1 << 18)
    stride = float(np.median(np.diff(t)))
    grid = np.arange(t[0], t[-1] + 0.5 * stride, stride)
    yg = np.interp(grid, t, y)
    n = yg.size
    span = float(grid[-1] - grid[0])
    if max_period is None:
        max_period = span / 3.0
    max_period = check_real("max_period", max_period, low=min_period)
    steps_out = (int(round(t[0])), int(round(t[-1])))
    nan = float("nan")

    def peak(resid: np.ndarray) -> tuple[float, float, float]:
        r = resid - resid.mean()
        pad = 8 * n if n <= 16384 else 2 * n
        power = np.abs(np.fft.rfft(r, pad)) ** 2
        freqs = np.fft.rfftfreq(pad, d=stride)
        with np.errstate(divide="ignore"):
            periods = np.where(freqs > 0, 1.0 / freqs, np.inf)
        band = (periods >= min_period) & (periods <= max_period)
        if not band.any():
            return nan, 1.0, 0.0
        i = np.flatnonzero(band)[int(np.argmax(power[band]))]
        # Fisher's g on the unpadded Fourier ordinates (k = 1 .. m).
        ordinates = np.abs(np.fft.rfft(r)) ** 2
        m = (n - 1) // 2
        ords = ordinates[1 : m + 1]
        total = float(ords.sum())
        fk = np.fft.rfftfreq(n, d=stride)[1 : m + 1]
        pk = 1.0 / fk
        in_band = (pk >= min_period * 0.8) & (pk <= max_period * 1.25)
        g = float(ords[in_band].max() / total) if total > 0 and in_band.any() else 0.0
        pv = min(1.0, m * (1.0 - g) ** (m - 1)) if g > 0 else 1.0
        return float(periods[i]), pv, g

    w0 = max(3, n // 5)
    trend = _smooth(yg, w0)
    period, pv, g = peak(yg - trend)
    if math.isfinite(period):
        w1 = max(3, int(round(period / stride)))
        trend = _smooth(yg, w1)
        p2, pv2, g2 = peak(yg - trend)
        if math.isfinite(p2):
            period, pv, g = p2, pv2, g2
    if not math.isfinite(period):
        return Oscillation(False, nan, 1.0, 0.0, nan, nan, nan, nan, nan, nan, steps_out)
    resid = yg - trend
    lag = int(round(period / stride))
    r = resid - resid.mean()
    den = float(np.dot(r, r))
    acf = float(np.dot(r[:-lag], r[lag:]) / den) if 0 < lag < n and den > 0 else nan
    block = max(2, lag)
    nb = n // block
    growth_rate = growth_factor = zeta = nan
    amp_start = amp_end = swing = nan
    if nb >= 1:
        blocks = resid[: nb * block].reshape(nb, block)
        amps = math.sqrt(2.0) * np.sqrt(np.mean((blocks - blocks.mean(axis=1, keepdims=True)) ** 2, axis=1))
        amp_start, amp_end = float(amps[0]), float(amps[-1])
        noise = _noise_sd(yg)
        swing = float(np.median(amps) / (math.sqrt(2.0) * noise)) if noise > 0 else float("inf")
        if nb >= 3 and np.all(amps > 0):
            centres = grid[0] + (np.arange(nb) + 0.5) * block * stride
            slope = float(np.polyfit(centres, np.log(amps), 1)[0])
            growth_rate = slope
            growth_factor = float(math.exp(slope * span))
            omega = 2 * math.pi / period
            zeta = float(-slope / math.hypot(slope, omega))
    detected = bool(pv < p_value and math.isfinite(acf) and acf >= min_autocorrelation)
    return Oscillation(detected, float(period), float(pv), float(g), acf, growth_rate, growth_factor,
                       zeta, amp_start, amp_end, steps_out, swing)
