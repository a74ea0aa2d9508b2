"""Oscillator explorer: drag eta, mu, K_ref, K, beta and G; see the regime, thresholds and trajectories.

A live-kernel explorer (Jupyter, Colab, VS Code) over :mod:`grpo_core.model.oscillator` and
:mod:`grpo_core.model.stability`. Every number it shows is computed by those modules; the charts are the
builders of :mod:`widgets.oscillator_charts`. The book's static pages carry a kernel-free
counterpart (Vega expressions) in the chapter "From update rule to oscillator".
"""

from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np

from grpo_core.model import noise, oscillator, stability, trajectories
from grpo_core.validation import check_integer

from . import explorer_charts
from ._controls import Explorer, LiveChart, NumberControl, readout_table, toggle

__all__ = ["OscillatorExplorer", "oscillator_explorer", "compute_oscillator_view"]

#: Seeds of the stochastic runs behind the noise band.
BAND_SEEDS = 64
#: Ranges of the controls (inclusive); typed values outside are clamped with a message.
RANGES = {
    "eta": (1e-3, 2.0),
    "mu": (0.0, 0.99),
    "k_ref": (1, 64),
    "curvature": (0.01, 10.0),
    "beta": (0.0, 5.0),
    "group_size": (1, 256),
    "noise_scale": (0.0, 10.0),
    "steps": (20, 2000),
}


def _fmt(x: float, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "∞ (never)" if x > 0 else "-∞"
    return f"{x:.{digits}g}"


def compute_oscillator_view(
    eta: float,
    mu: float,
    k_ref: int,
    curvature: float,
    beta: float = 0.0,
    group_size: int = 8,
    *,
    lag: str = "constant",
    momentum: str = "heavy_ball",
    noise_scale: float = 1.0,
    steps: int = 200,
    seed: int = 0,
    n_seeds: int = BAND_SEEDS,
) -> dict:
    """Everything the oscillator explorer shows, computed by :mod:`grpo_core` (no widgets involved).

    Parameters
    ----------
    eta, mu, k_ref, curvature, beta : float
        As :func:`grpo_core.model.oscillator.coefficients` (validated there).
    group_size : int
        ``G >= 1``: the per-step gradient noise variance is ``noise_scale**2 / G``.
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}
    noise_scale : float
        Per-sample gradient noise ``s >= 0`` along the slow direction.
    steps : int
        Horizon ``T`` of the trajectories (optimizer steps).
    seed : int
        Seed of the stochastic runs behind the noise band.
    n_seeds : int
        Number of stochastic runs.

    Returns
    -------
    dict
        ``coefficients`` (:class:`~grpo_core.model.oscillator.OscillatorCoefficients`), ``regime`` (code
        name, continuous model), ``regime_label``, ``stable_exact`` (bool), ``verdict`` and
        ``verdict_label`` (``"unstable"`` when the exact recurrence is unstable; the continuous
        regime when both models are stable; ``"stable_exact_only"`` past the continuous threshold
        but below the exact one), ``damping_ratio``, ``a`` (``eta * K``), ``critical_a_continuous``,
        ``critical_a_exact``, ``critical_k_ref_continuous``, ``critical_k_ref_exact``,
        ``stationary_variance``, ``stationary_variance_exact``, the trajectories ``t`` (shape
        (T+1,)), ``closed_form`` and ``discrete`` (shape (T+1,), deviations ``e / e0`` from the
        fixed point), and ``bands``: :func:`grpo_core.model.noise.noise_bands` for G
        (simulated mean +/- 2 sd over ``n_seeds`` runs and the exact +/- 2 sd band, as reward
        progress ``1 - e/e0``).

    Raises
    ------
    ParameterError
        Any hyperparameter out of range (from :mod:`grpo_core`).

    Examples
    --------
    >>> v = compute_oscillator_view(0.05, 0.5, 4, 1.0)
    >>> v["regime"], v["stable_exact"], round(v["critical_a_continuous"], 4)
    ('underdamped', True, 0.125)
    """
    c = oscillator.coefficients(eta, mu, k_ref, curvature, beta, lag=lag, momentum=momentum)
    a_cont = float(stability.critical_a_continuous(c.mu, c.k_ref, lag, momentum))
    a_exact = float(stability.critical_a_exact(c.mu, c.k_ref, lag, momentum))
    stable_exact = bool(stability.is_stable_exact(c.a, c.mu, c.k_ref, lag, momentum))
    held = {"eta": c.eta, "mu": c.mu, "curvature": c.curvature, "beta": c.beta, "lag": lag,
            "momentum": momentum}
    k_cont = float(stability.critical_value("k_ref", method="continuous", **held))
    k_exact = float(stability.critical_value("k_ref", method="exact", **held))
    t = np.arange(steps + 1, dtype=float)
    closed = trajectories.closed_form_trajectory(c, t)
    with np.errstate(over="ignore", invalid="ignore"):
        discrete = trajectories.discrete_trajectory(c, steps)
        bands = noise.noise_bands(c, (group_size,), noise_scale=noise_scale,
                                  n_seeds=n_seeds, n_steps=steps, seed=seed)
    var = float(noise.stationary_variance(c, noise_scale, group_size))
    var_exact = (float(noise.stationary_variance_exact(c, noise_scale, group_size))
                 if stable_exact else math.inf)
    verdict = oscillator.regime_verdict(c.regime, stable_exact)
    verdict_label = oscillator.VERDICT_LABELS[verdict]
    return {
        "coefficients": c,
        "regime": c.regime,
        "regime_label": c.regime_label,
        "stable_exact": stable_exact,
        "verdict": verdict,
        "verdict_label": verdict_label,
        "damping_ratio": c.damping_ratio,
        "a": c.a,
        "critical_a_continuous": a_cont,
        "critical_a_exact": a_exact,
        "critical_k_ref_continuous": k_cont,
        "critical_k_ref_exact": k_exact,
        "stationary_variance": var,
        "stationary_variance_exact": var_exact,
        "t": t,
        "closed_form": closed,
        "discrete": discrete,
        "bands": bands,
    }


class OscillatorExplorer(Explorer):
    """The widget returned by :func:`oscillator_explorer` (see there)."""

    def __init__(self, *, eta=0.05, mu=0.5, k_ref=4, curvature=1.0, beta=0.0, group_size=8,
                 lag="constant", momentum="heavy_ball", noise_scale=1.0, steps=200, seed=0):
        super().__init__()
        r = RANGES
        self.controls = {
            "eta": NumberControl("eta", "η (step size)", eta, *r["eta"], log=True),
            "mu": NumberControl("mu", "μ (momentum)", mu, *r["mu"], 0.01),
            "k_ref": NumberControl("k_ref", "K_ref (refresh)", k_ref, *r["k_ref"], integer=True),
            "curvature": NumberControl("curvature", "K (curvature)", curvature, *r["curvature"], log=True),
            "beta": NumberControl("beta", "β (KL weight)", beta, *r["beta"], 0.01),
            "group_size": NumberControl("group_size", "G (group size)", group_size, *r["group_size"],
                                        integer=True, log=True),
            "noise_scale": NumberControl("noise_scale", "s (noise/sample)", noise_scale,
                                         *r["noise_scale"], 0.05),
            "steps": NumberControl("steps", "steps shown", steps, *r["steps"], integer=True),
        }
        self.lag = toggle("lag", [("constant lag", "constant"), ("refresh", "refresh")], lag, "lag model")
        self.momentum = toggle("momentum", [("heavy ball", "heavy_ball"), ("EMA (Adam β1)", "ema")], momentum,
                               "momentum")
        self.seed = check_integer("seed", seed, low=0)  # refused here, not as numpy's message in the status
        self.readout = widgets.HTML()
        self.regime_html = widgets.HTML()
        self._output("trajectory")
        self._output("phase")
        self._live = {"trajectory": LiveChart(explorer_charts.trajectory_view_chart),
                      "phase": LiveChart(explorer_charts.phase_point_chart)}
        for control in self.controls.values():
            control.observe_value(lambda _: self.update())
        self.lag.observe(lambda _: self.update(), names="value")
        self.momentum.observe(lambda _: self.update(), names="value")
        left = widgets.VBox([*self.controls.values(), self.lag, self.momentum])
        right = widgets.VBox([self.regime_html, self.readout])
        self.children = [
            widgets.HTML(
                "<b>Oscillator explorer</b>: the damped-oscillator model of GRPO near its fixed point"
            ),
            widgets.HBox([left, right], layout={"flex_flow": "row wrap"}),
            self.status,
            self.outputs["trajectory"],
            self.outputs["phase"],
        ]
        self.view: dict | None = None
        self.update()

    def parameters(self) -> dict:
        """Current control values as keyword arguments of :func:`compute_oscillator_view`."""
        p = {name: c.value for name, c in self.controls.items()}
        p.update(lag=self.lag.value, momentum=self.momentum.value, seed=self.seed)
        return p

    def update(self) -> None:
        """Recompute and redraw from the current controls (called on every change)."""
        self._begin()
        self._run(self._update)

    def _update(self) -> None:
        p = self.parameters()
        view = compute_oscillator_view(**p)
        self.view = view
        c = view["coefficients"]
        self.values = {k: v for k, v in view.items()
                       if k not in ("coefficients", "t", "closed_form", "discrete", "bands")}
        self.values.update(mass=c.mass, damping=c.damping, stiffness=c.stiffness)
        colour = {"overdamped": "#1b5e20", "critically_damped": "#1b5e20", "underdamped": "#8a6d00",
                  "stable_exact_only": "#8a6d00", "unstable": "#b00020"}[view["verdict"]]
        self.regime_html.value = (
            f'<div style="font-size:130%">regime: <b style="color:{colour}">{view["verdict_label"]}</b></div>'
            + ("" if view["verdict"] == view["regime"] else
               f'<div style="color:#555">continuous model: {view["regime_label"]}</div>')
        )
        std = (
            math.sqrt(view["stationary_variance_exact"])
            if math.isfinite(view["stationary_variance_exact"])
            else math.inf
        )
        self.readout.value = readout_table(
            [
                ("damping ratio ζ", _fmt(view["damping_ratio"])),
                (
                    "mass M / damping C / stiffness K_eff",
                    f"{_fmt(c.mass)} / {_fmt(c.damping)} / {_fmt(c.stiffness)}",
                ),
                ("a = η K (incl. β)", _fmt(view["a"])),
                ("critical a, continuous (C = 0)", _fmt(view["critical_a_continuous"])),
                ("critical a, exact recurrence", _fmt(view["critical_a_exact"])),
                ("exact recurrence", "stable" if view["stable_exact"] else "unstable"),
                ("critical K_ref, continuous", _fmt(view["critical_k_ref_continuous"])),
                ("critical K_ref, exact", _fmt(view["critical_k_ref_exact"])),
                (f"stationary sd of e at G = {p['group_size']}", _fmt(std)),
            ]
        )
        self._live_chart("trajectory", self._live["trajectory"],
                         explorer_charts.trajectory_frames(view["bands"], view["closed_form"]))
        self._live_chart("phase", self._live["phase"], explorer_charts.phase_frames(
            view["a"], p["k_ref"], p["mu"], view["verdict_label"], lag=p["lag"], momentum=p["momentum"]))


def oscillator_explorer(
    eta: float = 0.05,
    mu: float = 0.5,
    k_ref: int = 4,
    curvature: float = 1.0,
    beta: float = 0.0,
    group_size: int = 8,
    *,
    lag: str = "constant",
    momentum: str = "heavy_ball",
    noise_scale: float = 1.0,
    steps: int = 200,
    seed: int = 0,
) -> OscillatorExplorer:
    """Interactive damped-oscillator model: sliders for eta, mu, K_ref, K, beta, G and the lag model.

    Shows, for the current hyperparameters, the closed-form trajectory of the continuous model
    (:func:`grpo_core.model.trajectories.closed_form_trajectory`), the exact discrete recurrence
    (:func:`~grpo_core.model.trajectories.discrete_trajectory`) and a noise band from
    :data:`BAND_SEEDS` stochastic runs at group size G (:func:`~grpo_core.model.noise.simulate`);
    the regime and damping ratio (:func:`~grpo_core.model.oscillator.coefficients`); both thresholds
    (:func:`grpo_core.model.stability.critical_a_continuous`,
    :func:`~grpo_core.model.stability.critical_a_exact`,
    :func:`~grpo_core.model.stability.critical_value`); and the current point on the (eta K, K_ref)
    phase diagram.

    Parameters
    ----------
    eta : float in [0.001, 2]
        Step size.
    mu : float in [0, 0.99]
        Momentum coefficient.
    k_ref : int in [1, 64]
        Refresh interval of the behaviour policy (optimizer steps).
    curvature : float in [0.01, 10]
        Curvature K of the effective potential.
    beta : float in [0, 5]
        KL weight (adds ``beta`` to the stiffness per unit step; see
        :func:`grpo_core.model.oscillator.coefficients`).
    group_size : int in [1, 256]
        Group size G (noise temperature).
    lag : {"constant", "refresh"}
    momentum : {"heavy_ball", "ema"}
    noise_scale : float in [0, 10]
        Per-sample gradient noise ``s``.
    steps : int in [20, 2000]
        Horizon of the trajectories.
    seed : int
        Seed of the stochastic runs.

    Returns
    -------
    OscillatorExplorer
        An :class:`ipywidgets.VBox`: display it. ``.controls[name].value = x`` sets a control
        (typed values out of range are clamped with a message); ``.values`` holds what is shown.

    Raises
    ------
    ValueError
        If an initial value lies outside its control's range.

    Notes
    -----
    The headline regime is the exact recurrence's verdict: the continuous model's regime when
    the exact recurrence is stable, ``unstable`` otherwise; when the two disagree the continuous
    regime is shown beneath it. Heavy-ball momentum ``v = mu v + g``; EMA ``v = mu v + (1 - mu) g``.

    Examples
    --------
    >>> ex = oscillator_explorer(eta=0.05, mu=0.5, k_ref=4)
    >>> ex.values["verdict"]
    'underdamped'
    >>> ex.controls["eta"].value = 0.2         # past both thresholds
    >>> ex.values["verdict"]
    'unstable'
    """
    return OscillatorExplorer(eta=eta, mu=mu, k_ref=k_ref, curvature=curvature, beta=beta,
                              group_size=group_size, lag=lag, momentum=momentum,
                              noise_scale=noise_scale, steps=steps, seed=seed)
