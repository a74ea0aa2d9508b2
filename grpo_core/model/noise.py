"""Noise in the oscillator: the exact recurrence with gradient noise, its variance, noise bands.

* :func:`simulate` -- the exact discrete recurrence with per-step gradient noise ``s^2/G``,
  vectorised over seeds and configurations (and :func:`simulate_reference`, its plain-loop
  definition);
* :func:`stationary_variance` (continuous model), :func:`stationary_variance_exact` (discrete
  Lyapunov equation) and :func:`variance_trajectory` (the exact variance at every step);
* :func:`noise_bands` -- simulated and exact mean +/- 2 sd per group size (the book's noise chart).

Units: ``e`` in reward units, variances in reward units squared, time in optimizer steps.
Book chapter "From update rule to oscillator", noise section.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..validation import check_array, check_integer, check_memory, check_real, check_seed
from .oscillator import OscillatorCoefficients, _check_coeffs
from .stability import is_stable_exact

__all__ = [
    "MAX_MEMORY_BYTES",
    "simulate",
    "simulate_reference",
    "stationary_variance",
    "stationary_variance_exact",
    "variance_trajectory",
    "noise_bands",
]

#: Largest memory :func:`simulate` allocates (its noise draws and trajectories); larger runs are
#: refused up front rather than failing inside numpy.
MAX_MEMORY_BYTES = 4 << 30


def _noise_std_per_step(coeffs: OscillatorCoefficients, noise_scale: float, group_size: int) -> float:
    """Standard deviation of the noise added to ``e`` per step: ``noise_gain * eta * s / sqrt(G)``."""
    return coeffs.noise_gain * coeffs.eta * noise_scale / math.sqrt(group_size)


def _checked_noise_variance(coeffs: Any, noise_scale: Any, group_size: Any) -> tuple[OscillatorCoefficients, float]:
    """Validated ``coeffs`` and the per-step noise variance ``sigma^2`` (shared by the variance functions)."""
    coeffs = _check_coeffs(coeffs)
    noise_scale = check_real("noise_scale", noise_scale, low=0.0)
    group_size = check_integer("group_size", group_size, low=1)
    sd = _noise_std_per_step(coeffs, noise_scale, group_size)
    if not math.isfinite(sd * sd):
        # the per-step variance (noise_gain eta s)^2 / G must be a float: s <= sqrt(1.8e308 G) / (noise_gain eta)
        most = math.sqrt(sys.float_info.max) * math.sqrt(group_size) / (coeffs.noise_gain * coeffs.eta)
        raise ParameterError("noise_scale", f"`noise_scale` must be at most {most:.3g} at this eta and group size (the "
                                            f"per-step noise variance (eta s)^2 / G overflows float64 above it); "
                                            f"got {noise_scale!r}")
    return coeffs, sd * sd


def _check_sim_args(n_steps, n_seeds, noise_scale, group_size, e0):
    return (
        check_integer("n_steps", n_steps, low=1),
        check_integer("n_seeds", n_seeds, low=1),
        check_real("noise_scale", noise_scale, low=0.0),
        check_integer("group_size", group_size, low=1),
        check_real("e0", e0),
    )


def _rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(check_seed("seed", seed))


def _noise_array(noise: Any, seed: Any, shape: tuple[int, int, int], noise_scale: float, squeeze: bool) -> np.ndarray:
    """Standard normals of shape (C, S, T): given (validated), drawn from ``seed``, or zeros."""
    if noise is not None:
        want = shape[1:] if squeeze else shape
        arr = check_array("noise", noise)
        if arr.shape != want:
            raise ParameterError("noise", f"`noise` must have shape {want} (seeds x steps); got {arr.shape}")
        return arr.reshape(shape)
    if noise_scale == 0:
        return np.zeros(shape)
    return _rng(seed).standard_normal(shape)


def _simulate_constant(gain: float, mu: float, d: int, sigma: float, e0: float, noise: np.ndarray) -> np.ndarray:
    """Constant-lag recurrence for all seeds at once, as an IIR filter (scipy.signal.lfilter).

    ``e[k+1] = (1+mu) e[k] - mu e[k-1] - gain e[k-d] + sigma w[k]`` with ``e[j] = e0`` for j <= 0.
    noise: (S, T) standard normals -> returns (S, T+1).
    """
    from scipy.signal import lfilter, lfiltic

    den = np.zeros(d + 2)
    den[0], den[1] = 1.0, -(1.0 + mu)
    den[2] += mu
    den[d + 1] += gain
    zi = lfiltic([1.0], den, y=np.full(d + 1, e0))
    n_seeds, n_steps = noise.shape
    out = np.empty((n_seeds, n_steps + 1))
    out[:, 0] = e0
    with np.errstate(over="ignore", invalid="ignore"):
        # the noise scale sits in the numerator: no scaled copy of the noise
        out[:, 1:], _ = lfilter([sigma], den, noise, axis=-1, zi=np.tile(zi, (n_seeds, 1)))
    return out


def _simulate_refresh(gain: float, mu: float, k: int, sigma: float, e0: float, noise: np.ndarray) -> np.ndarray:
    """Refresh-lag recurrence for all seeds at once, lifted to one cycle (no loop over time).

    Within a cycle starting at ``s = cK`` the snapshot ``e_s`` is fixed, so
    ``e_{s+j} = A_j e_s + B_j e_{s-1} + N_{c,j}`` with ``(A_j, B_j)`` the deterministic response
    (``j`` steps of the recurrence from the basis states) and ``N_{c,j}`` the response of the free
    heavy ball to the cycle's noise (``K`` vector steps over all seeds and cycles at once).
    The cycle states ``x_c = (e_s, e_{s-1})`` obey ``x_{c+1} = Phi x_c + n_c``; by Cayley-Hamilton
    each component obeys ``x_{c+2} = tr x_{c+1} - det x_c + n_{c+1} + (Phi - tr I) n_c``, a second
    ``lfilter``. noise: (S, T) standard normals -> returns (S, T+1).
    """
    from scipy.signal import lfilter, lfiltic

    n_seeds, n_steps = noise.shape
    n_cyc = -(-(n_steps + 1) // k)  # cycles covering e_0 .. e_T
    padded = np.zeros((n_seeds, n_cyc * k))
    padded[:, :n_steps] = sigma * noise
    w = np.ascontiguousarray(padded.reshape(n_seeds, n_cyc, k).transpose(2, 0, 1))  # (K, S, C)
    # deterministic responses A_j, B_j (j = 0..K) from (e_s, e_{s-1}) = (1, 0) and (0, 1)
    resp = np.empty((k + 1, 2))
    cur, prev = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    snap = cur.copy()
    resp[0] = cur
    for j in range(k):
        cur, prev = cur + mu * (cur - prev) - gain * snap, cur
        resp[j + 1] = cur
    (p00, p01), (p10, p11) = resp[k], resp[k - 1]  # one-cycle map: rows e_{s+K}, e_{s+K-1}
    tr, det = p00 + p11, p00 * p11 - p01 * p10
    with np.errstate(over="ignore", invalid="ignore"):
        # noise response inside every cycle at once (free heavy ball from rest): K vector steps,
        # each over all (seed, cycle) pairs
        big_n = np.empty((k + 1, n_seeds, n_cyc))
        big_n[0] = 0.0
        big_n[1] = w[0]
        for j in range(1, k):
            big_n[j + 1] = (1.0 + mu) * big_n[j] - mu * big_n[j - 1] + w[j]
        n_k, n_k1 = big_n[k], big_n[k - 1]
        u = np.empty((n_seeds, n_cyc))  # e at cycle starts
        v = np.empty((n_seeds, n_cyc))  # e one step before
        u[:, 0] = v[:, 0] = e0
        if n_cyc > 1:
            u[:, 1] = (p00 + p01) * e0 + n_k[:, 0]
            v[:, 1] = (p10 + p11) * e0 + n_k1[:, 0]
        if n_cyc > 2:
            den = np.array([1.0, -tr, det])
            # lfiltic is linear in the past outputs: build the basis once, combine for all seeds
            z1, z0 = lfiltic([1.0], den, y=[1.0, 0.0]), lfiltic([1.0], den, y=[0.0, 1.0])
            drive_u = n_k[:, 1:-1] + (p00 - tr) * n_k[:, :-2] + p01 * n_k1[:, :-2]
            drive_v = n_k1[:, 1:-1] + p10 * n_k[:, :-2] + (p11 - tr) * n_k1[:, :-2]
            for x, drive in ((u, drive_u), (v, drive_v)):
                zi = x[:, 1, None] * z1 + x[:, 0, None] * z0
                x[:, 2:], _ = lfilter([1.0], den, drive, axis=-1, zi=zi)
        e = np.empty((n_seeds, n_cyc, k))
        for j in range(k):
            e[:, :, j] = resp[j, 0] * u + resp[j, 1] * v + big_n[j]
    return e.reshape(n_seeds, n_cyc * k)[:, : n_steps + 1]


def simulate(
    coeffs: OscillatorCoefficients | Any,
    n_steps: int,
    n_seeds: int = 1,
    *,
    noise_scale: float = 0.0,
    group_size: int = 1,
    e0: float = 1.0,
    seed: Any = 0,
    noise: Any = None,
) -> np.ndarray:
    r"""Exact discrete recurrence with per-step gradient noise, vectorised over seeds (and configurations).

    Each step (``g`` the gain, ``d_k`` the lag of step ``k``: ``k_ref`` for ``lag="constant"``,
    ``k mod k_ref`` for ``lag="refresh"``):

    .. math:: e_{k+1} = e_k + \mu (e_k - e_{k-1}) - g\, e_{k - d_k}
              - c\, \eta\, \xi_k, \qquad \xi_k \sim \mathcal N(0, s^2 / G),

    with ``c = 1`` (heavy ball) or ``1 - mu`` (EMA), started from rest: ``e_j = e0`` for ``j <= 0``.
    ``xi_k`` is the gradient noise of one step along the slow direction: ``s`` the per-sample
    standard deviation (``noise_scale``; fold the number of prompts per step into it), ``G`` the group
    size. Noise draws are independent across steps (a fresh batch each step).

    Implementation: one array program per configuration, no Python loop over seeds or steps. The
    constant lag is a linear IIR filter, run for all seeds at once by :func:`scipy.signal.lfilter`.
    The refresh lag is periodic; lifted to one cycle it becomes linear time-invariant: the noise
    response inside every cycle is computed for all cycles at once (``k_ref`` vector steps), and
    the states at the cycle starts follow a 2 x 2 linear recursion that Cayley-Hamilton turns into
    two ``lfilter`` calls. The noise is drawn as one array of shape ``(n_seeds, n_steps)``
    (``(C, n_seeds, n_steps)`` for ``C`` configurations); :func:`simulate_reference`, a plain
    Python loop drawing the same numbers one at a time, gives the same trajectories (to rounding).

    Parameters
    ----------
    coeffs : OscillatorCoefficients or sequence of them
        From :func:`coefficients`. Several configurations are simulated together.
    n_steps : int
        Number of optimizer steps ``T``, ``>= 1``.
    n_seeds : int, default 1
        Independent runs ``S``, ``>= 1``.
    noise_scale : float, default 0
        Per-sample gradient noise ``s`` (``>= 0``; 0 gives the deterministic recurrence).
    group_size : int, default 1
        Completions per prompt ``G``, ``>= 1``.
    e0 : float, default 1
        Initial deviation (reward units).
    seed : int, numpy Generator or None, default 0
        Seed of :func:`numpy.random.default_rng` (or a Generator to draw from).
    noise : array_like, optional
        Standard normal draws to use instead of drawing: shape ``(S, T)`` for one configuration,
        ``(C, S, T)`` for several (common random numbers, e.g. to compare group sizes on the same
        draws). ``seed`` is then ignored.

    Returns
    -------
    ndarray
        ``(S, T + 1)`` for one configuration, ``(C, S, T + 1)`` for a sequence of ``C``; column 0 is
        ``e0``. Memory: ``8 C S (T + 1)`` bytes.

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``n_steps < 1``, ``n_seeds < 1``, ``noise_scale < 0``, ``group_size < 1``,
        non-finite ``e0``, negative ``seed``; a run needing more than :data:`MAX_MEMORY_BYTES`
        (4 GiB).

    Warns
    -----
    RuntimeWarning
        If an unstable configuration overflows float64 (its trajectory then holds ``inf``/``nan``).

    References
    ----------
    Recurrence with per-step noise ``s^2/G``: book chapter "From update rule to oscillator".

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.noise import simulate
    >>> c = coefficients(eta=0.05, mu=0.5, k_ref=2, curvature=1.0)
    >>> paths = simulate(c, n_steps=1000, n_seeds=64, noise_scale=1.0, group_size=4, seed=1)
    >>> paths.shape
    (64, 1001)
    >>> simulate(c, n_steps=3).round(6).tolist()  # deterministic recurrence
    [[1.0, 0.95, 0.875, 0.7875]]
    """
    single = isinstance(coeffs, OscillatorCoefficients)
    if not single and (isinstance(coeffs, str | bytes | dict) or not isinstance(coeffs, Iterable)):
        _check_coeffs(coeffs)  # neither one configuration nor a sequence of them: refused by name
    confs = [coeffs] if single else [_check_coeffs(c) for c in coeffs]
    if not confs:
        raise ParameterError("coeffs", "`coeffs` must hold at least one configuration")
    n_steps, n_seeds, noise_scale, group_size, e0 = _check_sim_args(n_steps, n_seeds, noise_scale, group_size, e0)
    n_conf = len(confs)
    need = 16 * n_conf * n_seeds * (n_steps + 1)  # the noise draws and the trajectories, float64
    if need > MAX_MEMORY_BYTES:
        raise ParameterError("n_steps", f"`n_steps` ({n_steps}) x `n_seeds` ({n_seeds}) x configurations ({n_conf}) "
                                        f"needs about {need / 2**30:.3g} GiB (limit {MAX_MEMORY_BYTES / 2**30:g} GiB): "
                                        "lower `n_steps` or `n_seeds`, or simulate in chunks of seeds")
    noise = _noise_array(noise, seed, (n_conf, n_seeds, n_steps), noise_scale, squeeze=single)
    sigma = np.array([_noise_std_per_step(c, noise_scale, group_size) for c in confs])
    kernels = {"constant": _simulate_constant, "refresh": _simulate_refresh}
    runs = [kernels[c.lag](c.gain, c.mu, c.k_ref, sigma[i], e0, noise[i]) for i, c in enumerate(confs)]
    out = runs[0] if single else np.stack(runs)
    if not np.all(np.isfinite(out)):
        import warnings

        warnings.warn(
            "simulate: an unstable configuration overflowed float64; its trajectory holds inf/nan "
            "after the overflow step", RuntimeWarning, stacklevel=2,
        )
    return out


def simulate_reference(
    coeffs: OscillatorCoefficients,
    n_steps: int,
    n_seeds: int = 1,
    *,
    noise_scale: float = 0.0,
    group_size: int = 1,
    e0: float = 1.0,
    seed: Any = 0,
    noise: Any = None,
) -> np.ndarray:
    """Plain Python loop over seeds and steps: the readable definition of :func:`simulate`.

    The obvious simulator: for each seed, for each step, draw the gradient noise and apply the
    recurrence with an explicit lag history. It draws the noise one number at a time from the same
    generator, in the same order as :func:`simulate`'s array draw (seed by seed, step by step), so both
    return the same numbers (or it uses ``noise`` when given). It is the reference of the equivalence
    tests and the baseline of ``bench/bench_oscillator.py``; use :func:`simulate` for real work.

    Parameters
    ----------
    coeffs, n_steps, n_seeds, noise_scale, group_size, e0, seed, noise
        As in :func:`simulate` (one configuration).

    Returns
    -------
    ndarray, shape (n_seeds, n_steps + 1)

    Raises
    ------
    ParameterError
        As :func:`simulate`.

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.noise import simulate, simulate_reference
    >>> c = coefficients(eta=0.05, mu=0.5, k_ref=3, curvature=1.0, lag="refresh")
    >>> bool(np.allclose(simulate_reference(c, 50, 3, noise_scale=1.0, seed=2),
    ...                  simulate(c, 50, 3, noise_scale=1.0, seed=2)))
    True
    """
    coeffs = _check_coeffs(coeffs)
    n_steps, n_seeds, noise_scale, group_size, e0 = _check_sim_args(n_steps, n_seeds, noise_scale, group_size, e0)
    check_memory("n_steps", n_steps + 1, 8 * n_seeds, what=f"one value per seed, {n_seeds} seed(s)")
    given = None if noise is None else _noise_array(noise, seed, (1, n_seeds, n_steps), noise_scale, squeeze=True)[0]
    rng = _rng(seed) if given is None and noise_scale > 0 else None
    sigma = _noise_std_per_step(coeffs, noise_scale, group_size)
    g, mu, k_ref, refresh = coeffs.gain, coeffs.mu, coeffs.k_ref, coeffs.lag == "refresh"
    out = np.empty((n_seeds, n_steps + 1))
    for s in range(n_seeds):
        row = given[s].tolist() if given is not None else None
        hist = [e0]  # hist[j] = e_j for j >= 0; e_j = e0 for j < 0
        e_prev, e, snap = e0, e0, e0
        for k in range(n_steps):
            if refresh:
                if k % k_ref == 0:
                    snap = e
                lagged = snap
            else:
                lagged = hist[k - k_ref] if k >= k_ref else e0
            if row is not None:
                w = row[k]
            elif rng is not None:
                w = rng.standard_normal()
            else:
                w = 0.0
            e_next = e + mu * (e - e_prev) - g * lagged + sigma * w
            e_prev, e = e, e_next
            hist.append(e)
        out[s] = hist
    return out


# ----------------------------------------------------------------------------------------------
# Stationary variance
# ----------------------------------------------------------------------------------------------


def stationary_variance(coeffs: OscillatorCoefficients, noise_scale: float, group_size: int) -> float:
    r"""Stationary variance of ``e`` in the continuous model: :math:`\sigma^2 / (2 C K_{eff})`.

    With per-step noise variance :math:`\sigma^2 = c^2 \eta^2 s^2 / G` (``c`` the noise gain: 1 for heavy
    ball, ``1 - mu`` for EMA), the stationary variance of :math:`M e'' + C e' + K e = \sigma \xi` is
    :math:`\sigma^2/(2 C K)`; for heavy ball this is the formula

    .. math:: \mathrm{Var}(e) \approx \frac{\eta^2 s^2}{2\, G\, a\, C}:

    proportional to ``1/G``, independent of the mass, diverging as ``C -> 0``.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    noise_scale : float
        Per-sample gradient noise ``s``, ``>= 0``.
    group_size : int
        ``G >= 1``.

    Returns
    -------
    float
        Reward units squared; ``inf`` when the continuous model is unstable (``C <= 0``).

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``noise_scale < 0`` or ``group_size < 1``.

    See Also
    --------
    stationary_variance_exact : the exact value for the discrete recurrence.

    References
    ----------
    Damped-oscillator paper (stated: fluctuation proportional to 1/G); book chapter "From update rule to oscillator".

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.noise import stationary_variance
    >>> c = coefficients(eta=0.02, mu=0.0, k_ref=1, curvature=1.0)
    >>> round(stationary_variance(c, noise_scale=1.0, group_size=4), 8)
    0.00255102
    """
    coeffs, sigma2 = _checked_noise_variance(coeffs, noise_scale, group_size)
    if coeffs.damping <= 0:
        return math.inf
    return sigma2 / (2.0 * coeffs.damping * coeffs.stiffness)


def _step_maps(coeffs: OscillatorCoefficients) -> tuple[list[np.ndarray], np.ndarray]:
    """Per-step state maps of the recurrence (one per phase of the cycle) and the noise input vector.

    Constant lag: state ``(e_k, e_{k-1}, ..., e_{k-d})`` (dimension d + 1), one map.
    Refresh lag: state ``(e_k, e_{k-1}, snap)``; the map of phase 0 first copies ``e_k`` into ``snap``.
    """
    g, mu = coeffs.gain, coeffs.mu
    if coeffs.lag == "constant":
        d = coeffs.k_ref
        n = d + 1
        a = np.zeros((n, n))
        a[0, 0], a[0, 1] = 1.0 + mu, -mu
        a[0, d] -= g
        a[np.arange(1, n), np.arange(0, n - 1)] = 1.0
        b = np.zeros(n)
        b[0] = 1.0
        return [a], b
    step = np.array([[1.0 + mu, -mu, -g], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    reset = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    maps = [step @ reset] + [step] * (coeffs.k_ref - 1)
    return maps, np.array([1.0, 0.0, 0.0])


def stationary_variance_exact(coeffs: OscillatorCoefficients, noise_scale: float, group_size: int) -> float:
    r"""Exact stationary variance of ``e`` for the discrete recurrence (discrete Lyapunov equation).

    Write the recurrence in companion form :math:`x_{k+1} = A x_k + b\,\sigma w_k`. For constant lag
    the stationary covariance solves :math:`P = A P A^\top + \sigma^2 b b^\top` and
    :math:`\mathrm{Var}(e) = P_{00}` (:func:`scipy.linalg.solve_discrete_lyapunov`). The refresh-lag
    recurrence is periodic: solve the Lyapunov equation of the one-cycle map (with the noise of a
    whole cycle accumulated), propagate it through the ``k_ref`` phases, and return the average of
    ``Var(e)`` over the phases (the long-run time average a simulation measures).

    Parameters
    ----------
    coeffs, noise_scale, group_size
        As in :func:`stationary_variance`.

    Returns
    -------
    float
        Reward units squared; ``inf`` when the recurrence is unstable (exactly).

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``noise_scale < 0`` or ``group_size < 1``.

    Notes
    -----
    Cost ``O(k_ref^3)`` for constant lag (state dimension ``k_ref + 1``), ``O(k_ref)`` for refresh.
    The continuous :func:`stationary_variance` is its small-``a`` limit.

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator", noise section).

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.noise import stationary_variance_exact
    >>> c = coefficients(eta=0.02, mu=0.0, k_ref=1, curvature=1.0)
    >>> round(stationary_variance_exact(c, noise_scale=1.0, group_size=4), 8)
    0.00257628
    """
    from scipy.linalg import solve_discrete_lyapunov

    coeffs, sigma2 = _checked_noise_variance(coeffs, noise_scale, group_size)
    if not bool(is_stable_exact(coeffs.a, coeffs.mu, coeffs.k_ref, coeffs.lag, coeffs.momentum)):
        return math.inf
    maps, b = _step_maps(coeffs)
    q = sigma2 * np.outer(b, b)
    if len(maps) == 1:
        return float(solve_discrete_lyapunov(maps[0], q)[0, 0])
    phi = np.eye(len(b))
    q_cycle = np.zeros_like(q)
    for a in maps:
        phi = a @ phi
        q_cycle = a @ q_cycle @ a.T + q
    p = solve_discrete_lyapunov(phi, q_cycle)
    total = 0.0
    for a in maps:  # P at the start of each phase
        total += p[0, 0]
        p = a @ p @ a.T + q
    return float(total / len(maps))


def variance_trajectory(
    coeffs: OscillatorCoefficients, n_steps: int, noise_scale: float, group_size: int
) -> np.ndarray:
    r"""Exact variance of ``e_k`` over seeds at every step, from a deterministic start.

    Propagates the covariance of the companion-form state, :math:`P_{k+1} = A_k P_k A_k^\top +
    \sigma^2 b b^\top` from :math:`P_0 = 0` (every run starts at ``e0``; only the noise spreads them),
    and returns :math:`P_k[0, 0]`. It tends to :func:`stationary_variance_exact` (cycle-averaged for
    the refresh lag) when the recurrence is stable.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    n_steps : int
        ``T >= 1``.
    noise_scale : float
        Per-sample gradient noise ``s``, ``>= 0``.
    group_size : int
        ``G >= 1``.

    Returns
    -------
    ndarray, shape (n_steps + 1,)
        Reward units squared; entry 0 is 0. An unstable setting grows without bound: past
        float64's range the entries are ``inf`` (never NaN).

    Raises
    ------
    ParameterError
        Bad ``coeffs``, ``n_steps < 1``, ``noise_scale < 0``, ``group_size < 1``.

    Warns
    -----
    RuntimeWarning
        If the variance overflows float64 (an unstable setting).

    References
    ----------
    Our derivation (book chapter "From update rule to oscillator", noise section).

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.noise import variance_trajectory
    >>> c = coefficients(eta=0.1, mu=0.0, k_ref=1, curvature=1.0)
    >>> variance_trajectory(c, 3, noise_scale=1.0, group_size=1).round(6).tolist()
    [0.0, 0.01, 0.02, 0.0281]
    """
    coeffs, sigma2 = _checked_noise_variance(coeffs, noise_scale, group_size)
    n_steps = check_integer("n_steps", n_steps, low=1)
    check_memory("n_steps", n_steps + 1, 8, what="one variance per step")
    maps, b = _step_maps(coeffs)
    q = sigma2 * np.outer(b, b)
    p = np.zeros_like(q)
    out = np.empty(n_steps + 1)
    out[0] = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(n_steps):
            a = maps[k % len(maps)]
            p = a @ p @ a.T + q
            out[k + 1] = p[0, 0]
    bad = ~np.isfinite(out)
    if bad.any():
        # a variance is >= 0: once it overflowed (inf - inf made NaN in the products) it is inf
        out[int(np.argmax(bad)):] = np.inf
        import warnings

        warnings.warn(f"variance_trajectory: the variance overflowed float64 at step {int(np.argmax(bad))} "
                      "(an unstable setting); it is inf from there", RuntimeWarning, stacklevel=2)
    return out


# ----------------------------------------------------------------------------------------------
# Noise bands
# ----------------------------------------------------------------------------------------------


def noise_bands(
    coeffs: OscillatorCoefficients,
    group_sizes: Sequence[int] = (4, 16),
    *,
    noise_scale: float = 1.0,
    n_seeds: int = 256,
    n_steps: int = 400,
    seed: int = 0,
) -> Any:
    """Simulated and exact mean and sd (+/- 2 sd bands) of the reward progress for each group size.

    A Monte Carlo run of :func:`simulate` per group size next to the exact moments: the mean of the
    deterministic recurrence and the sd from :func:`variance_trajectory`. Progress is ``1 - e/e0``
    with ``e0 = 1``. Each group size gets its own noise draws, from
    ``numpy.random.default_rng([seed, G])``, so the ratio of the simulated spreads is a measurement.

    Parameters
    ----------
    coeffs : OscillatorCoefficients
    group_sizes : sequence of int
        Group sizes ``G >= 1``.
    noise_scale : float, default 1
        Per-sample gradient noise ``s``, ``>= 0``.
    n_seeds, n_steps : int
        Runs per group size and steps (``>= 1``).
    seed : int
        Base seed, ``>= 0``.

    Returns
    -------
    pandas.DataFrame
        One row per (group size, step): ``t``, ``group_size``, ``sim_mean``, ``sim_sd`` (over the
        ``n_seeds`` runs, ddof 1; 0 for one seed), ``sim_lo``, ``sim_hi`` (``sim_mean -/+ 2 sim_sd``),
        ``mean`` (exact recurrence), ``sd`` (exact), ``lo``, ``hi`` (``mean -/+ 2 sd``) and
        ``stationary_sd`` (the continuous formula's ``sqrt(Var)``).

    Raises
    ------
    ParameterError
        Invalid arguments (see :func:`simulate`).

    Examples
    --------
    >>> from grpo_core.model.oscillator import coefficients
    >>> from grpo_core.model.noise import noise_bands
    >>> df = noise_bands(coefficients(0.05, 0.5, 2, 1.0), n_seeds=8, n_steps=10)
    >>> sorted(df.group_size.unique().tolist()), len(df)
    ([4, 16], 22)
    >>> round(float(df.sd.iloc[1]), 6)  # one step: eta s / sqrt(G) = 0.05 / 2
    0.025
    """
    import pandas as pd

    coeffs = _check_coeffs(coeffs)
    seed = check_seed("seed", seed)
    if isinstance(group_sizes, str | bytes) or np.ndim(group_sizes) != 1:
        raise ParameterError("group_sizes", f"`group_sizes` must be a sequence of integers >= 1; got {group_sizes!r}")
    group_sizes = [check_integer("group_sizes", g, low=1) for g in group_sizes]
    frames = []
    for g in group_sizes:
        rng = np.random.default_rng([seed, g])
        paths = simulate(coeffs, n_steps, n_seeds, noise_scale=noise_scale, group_size=g, seed=rng)
        prog = 1.0 - paths
        mean = 1.0 - simulate(coeffs, n_steps, 1)[0]  # the deterministic recurrence
        sd = np.sqrt(variance_trajectory(coeffs, n_steps, noise_scale, g))
        sim_mean, sim_sd = prog.mean(axis=0), prog.std(axis=0, ddof=1) if n_seeds > 1 else np.zeros(n_steps + 1)
        frames.append(pd.DataFrame({
            "t": np.arange(n_steps + 1), "group_size": int(g),
            "sim_mean": sim_mean, "sim_sd": sim_sd, "sim_lo": sim_mean - 2 * sim_sd, "sim_hi": sim_mean + 2 * sim_sd,
            "mean": mean, "sd": sd, "lo": mean - 2 * sd, "hi": mean + 2 * sd,
            "stationary_sd": math.sqrt(stationary_variance(coeffs, noise_scale, g)),
        }))
    return pd.concat(frames, ignore_index=True)
