"""Bandit explorer: run GRPO on the softmax bandit live and hold it against the oscillator prediction.

A live-kernel explorer (Jupyter, Colab, VS Code). The simulation is
:func:`grpo_core.bandit.simulate` (vectorised over seeds); the prediction is the damped oscillator
of :mod:`grpo_core.model.oscillator` with the bandit's own fixed point and stiffness
(:func:`grpo_core.bandit.fixed_point`). The run happens in a worker thread, in chunks of seeds:
the kernel stays responsive, a progress bar advances after each chunk, the chart is redrawn with
the seeds done so far, and **Stop** ends the run after the current chunk. Each seed owns its own
random stream, so a chunked run gives exactly the numbers of one big call.
"""

from __future__ import annotations

import threading
import time

import ipywidgets as widgets
import numpy as np

from grpo_core import bandit
from grpo_core.bandit import prediction
from grpo_core.model import oscillator as osc

from . import explorer_charts
from ._controls import Explorer, LiveChart, NumberControl, readout_table, toggle

__all__ = ["BanditExplorer", "bandit_explorer", "CHUNK_SEEDS"]

#: Most recorded points per trajectory (longer runs record every k-th step; the charts stay small).
MAX_POINTS = 300
#: Seeds simulated per chunk (one vectorised call each); progress and redraws happen between chunks.
CHUNK_SEEDS = 16
#: The explorer's defaults: the one setting of the bandit chapter and the Explorers page.
D = explorer_charts.BANDIT_DEFAULTS
RANGES = {
    "eta": (0.01, 5.0),
    "mu": (0.0, 0.99),
    "k_ref": (1, 64),
    "beta": (0.05, 5.0),
    "group_size": (2, 256),
    "seeds": (1, 1024),
    "steps": (20, 5000),
    "first_seed": (0, 1_000_000),
}


class BanditExplorer(Explorer):
    """The widget returned by :func:`bandit_explorer` (see there)."""

    def __init__(self, *, eta=D["eta"], mu=D["mu"], k_ref=D["k_ref"], beta=D["beta"], group_size=D["group_size"],
                 seeds=64, steps=D["steps"], first_seed=0, lag="constant", baseline=D["baseline"], arms=2,
                 run=True):
        super().__init__()
        r = RANGES
        self.arms = arms
        self.controls = {
            "eta": NumberControl("eta", "η (step size)", eta, *r["eta"], log=True),
            "mu": NumberControl("mu", "μ (momentum)", mu, *r["mu"], 0.01),
            "k_ref": NumberControl("k_ref", "K_ref (lag)", k_ref, *r["k_ref"], integer=True),
            "beta": NumberControl("beta", "β (KL weight)", beta, *r["beta"], log=True),
            "group_size": NumberControl("group_size", "G (group size)", group_size, *r["group_size"],
                                        integer=True, log=True),
            "seeds": NumberControl("seeds", "seeds", seeds, *r["seeds"], integer=True, log=True),
            "steps": NumberControl("steps", "steps", steps, *r["steps"], integer=True),
            "first_seed": NumberControl("first_seed", "first seed", first_seed, *r["first_seed"],
                                        integer=True),
        }
        self.lag = toggle("lag", [("constant lag", "constant"), ("refresh", "refresh")], lag, "lag model")
        self.baseline = toggle("baseline", [("group mean", "mean"), ("leave-one-out", "leave_one_out")],
                               baseline, "baseline")
        self.run_button = widgets.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = widgets.Button(description="Stop", icon="stop", disabled=True)
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="seeds done",
                                            layout={"width": "28em"})
        self.readout = widgets.HTML()
        self._output("trajectories")
        self._live = LiveChart(explorer_charts.bandit_view_chart)
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.result: dict | None = None
        self.timings: dict[str, float] = {}
        self.children = [
            widgets.HTML("<b>Bandit explorer</b>: GRPO on a two-armed softmax bandit, where the "
                         "mean-field reduction is exact"),
            widgets.HBox([widgets.VBox([*self.controls.values(), self.lag, self.baseline]),
                          self.readout], layout={"flex_flow": "row wrap"}),
            widgets.HBox([self.run_button, self.stop_button, self.progress]),
            self.status,
            self.outputs["trajectories"],
        ]
        if run:
            self.start(block=True)

    # -- running ----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def parameters(self) -> dict:
        return {name: c.value for name, c in self.controls.items()} | {
            "lag": self.lag.value, "baseline": self.baseline.value}

    def start(self, block: bool = False) -> None:
        """Start a run with the current controls (in a worker thread unless ``block``)."""
        if self.running:
            self.status.show("a run is in progress: press Stop first", "warning")
            return
        self._stop.clear()
        self.run_button.disabled = True
        self.stop_button.disabled = False
        if block:
            self._run_all()
        else:
            self._thread = threading.Thread(target=self._run_all, name="bandit-explorer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Ask the run to end after the current chunk of seeds."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the worker thread (if any) has finished."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run_all(self) -> None:
        self._begin()
        self.values = {}
        t_start = time.perf_counter()
        self.timings = {}
        try:
            self._run(lambda: self._simulate(t_start))
        finally:
            self.run_button.disabled = False
            self.stop_button.disabled = True

    def _simulate(self, t_start: float) -> None:
        p = self.parameters()
        spec = bandit.BanditSpec.binary(arms=self.arms, correct=1, group_size=p["group_size"],
                                        baseline=p["baseline"], lag=p["lag"])
        knobs = {"eta": p["eta"], "mu": p["mu"], "k_ref": p["k_ref"], "beta": p["beta"]}
        pred = prediction.predicted_path(spec, steps=p["steps"], **knobs)
        every = max(1, -(-p["steps"] // MAX_POINTS))
        pred = {k: (v[::every] if k in ("t", "mean_field", "closed_form", "discrete") else v)
                for k, v in pred.items()}
        seeds = np.arange(p["first_seed"], p["first_seed"] + p["seeds"])
        self.progress.max = len(seeds)
        self.progress.value = 0
        chunks = [seeds[i:i + CHUNK_SEEDS] for i in range(0, len(seeds), CHUNK_SEEDS)]
        done: list[np.ndarray] = []
        self.result = None
        for chunk in chunks:
            if self._stop.is_set():
                break
            run = bandit.simulate(spec, steps=p["steps"], seeds=chunk, record_every=every, **knobs)
            done.append(run.p[0])
            paths = np.concatenate(done, axis=0)
            self.progress.value = paths.shape[0]
            self.result = {"spec": spec, "prediction": pred, "seeds": seeds[: paths.shape[0]],
                           "p": paths, "steps": run.steps, "params": p}
            self._draw()
            if "first_frame" not in self.timings:
                self.timings["first_frame"] = time.perf_counter() - t_start
        self.timings["total"] = time.perf_counter() - t_start
        n_done = 0 if self.result is None else self.result["p"].shape[0]
        stopped = n_done < len(seeds)
        self.values["seeds_done"] = n_done
        self.values["stopped"] = stopped
        if stopped:
            self.status.show(f"stopped after {n_done} of {len(seeds)} seeds", "warning")
        else:
            self.status.show(f"{n_done} seeds x {p['steps']} steps in {self.timings['total']:.2f} s", "ok")

    def _draw(self) -> None:
        res = self.result
        pred = res["prediction"]
        c = pred["coefficients"]
        fp = pred["fixed_point"]
        paths = res["p"]
        tail = paths[:, paths.shape[1] // 2:]
        measured = explorer_charts.bandit_measured_verdict(pred["t"], pred["mean_field"], fp.p_star)
        verdict = osc.regime_verdict(c.regime, pred["stable_exact"])
        self.values.update(
            measured_regime=measured["regime"], period=measured["period"],
            p_star=fp.p_star, stiffness=fp.stiffness, regime=c.regime, stable_exact=pred["stable_exact"],
            damping_ratio=c.damping_ratio, final_mean=float(paths[:, -1].mean()),
            late_std=float(tail.std(axis=0, ddof=1).mean()) if paths.shape[0] > 1 else float("nan"),
        )
        self.readout.value = readout_table([
            ("fixed point p*", f"{fp.p_star:.4f}"),
            ("stiffness K (bandit)", f"{fp.stiffness:.4f}"),
            ("a = η K", f"{c.a:.4g}"),
            ("measured on the exact mean field", measured["text"].removeprefix("measured: ")),
            ("linear prediction at p*", explorer_charts.BANDIT_PREDICTED[verdict]),
            ("predicted regime (continuous)", c.regime_label),
            ("damping ratio ζ", f"{c.damping_ratio:.3g}"),
            ("seeds done", f"{paths.shape[0]}"),
            ("mean p at the last step", f"{self.values['final_mean']:.4f}"),
        ])
        self._live_chart("trajectories", self._live, explorer_charts.bandit_frames(res))


def bandit_explorer(
    eta: float = D["eta"],
    mu: float = D["mu"],
    k_ref: int = D["k_ref"],
    beta: float = D["beta"],
    group_size: int = D["group_size"],
    *,
    seeds: int = 64,
    steps: int = D["steps"],
    first_seed: int = 0,
    lag: str = "constant",
    baseline: str = D["baseline"],
    arms: int = 2,
    run: bool = True,
) -> BanditExplorer:
    """Run GRPO on a softmax bandit live, with the oscillator's prediction drawn over it.

    One arm of ``arms`` pays reward 1; policy ``softmax(theta)`` from uniform, KL weight ``beta``
    to the uniform reference, stale score-function gradient (the exact delay model) with lag
    ``k_ref``, heavy-ball momentum ``mu``. The chart shows the expected reward ``p`` of every seed
    (thin), their mean, the exact mean-field path, and the oscillator prediction (closed form and
    exact recurrence) built from the bandit's fixed point and stiffness
    (:func:`grpo_core.bandit.prediction.predicted_path`). The readout sets the regime measured on
    the exact mean field (:func:`widgets.explorer_charts.bandit_measured_verdict`: a run that does
    not settle is a bounded cycle, with its period) beside the linear prediction at the fixed point.
    The defaults are :data:`widgets.explorer_charts.BANDIT_DEFAULTS`, the setting of the bandit
    chapter's slider figure (plain mean baseline, as in the chapter's analysis).

    Parameters
    ----------
    eta : float in [0.01, 5]
    mu : float in [0, 0.99]
    k_ref : int in [1, 64]
    beta : float in [0.05, 5]
    group_size : int in [2, 256]
    seeds : int in [1, 1024]
        Number of independent runs (seeds ``first_seed, first_seed + 1, ...``).
    steps : int in [20, 5000]
    first_seed : int >= 0
    lag : {"constant", "refresh"}
    baseline : {"mean", "leave_one_out"}
    arms : int >= 2
    run : bool
        Run once at construction (blocking), so the saved notebook shows a result.

    Returns
    -------
    BanditExplorer
        An :class:`ipywidgets.VBox`: display it; **Run** starts a run in a worker thread,
        **Stop** ends it after the current chunk of :data:`CHUNK_SEEDS` seeds. ``.start(block=True)``
        runs in the calling thread; ``.values`` and ``.result`` hold what is shown;
        ``.timings["first_frame"]`` is the seconds from start to the first chart.

    Raises
    ------
    ValueError
        If an initial value lies outside its control's range. (Simulation errors are shown in the
        widget.)

    Examples
    --------
    >>> ex = bandit_explorer(eta=0.5, mu=0.0, k_ref=1, seeds=16, steps=100)
    >>> round(ex.values["p_star"], 4), ex.values["seeds_done"]  # mean baseline: sigmoid((G - 1) / (G beta))
    (0.7058, 16)
    >>> ex.values["measured_regime"]
    'monotone'
    """
    return BanditExplorer(eta=eta, mu=mu, k_ref=k_ref, beta=beta, group_size=group_size, seeds=seeds,
                          steps=steps, first_seed=first_seed, lag=lag, baseline=baseline, arms=arms,
                          run=run)
