"""Altair charts of the language-model runs (book chapter "GRPO on a language model").

Pure functions returning Altair charts; the tables come from :mod:`grpo_core.llm.analysis`.

* :func:`trajectories_chart` -- mean reward trajectory per group size with the between-seed band.
* :func:`fits_grid_chart` -- every run's smoothed reward curve with its fitted three-phase law.
* :func:`spread_chart` -- the between-seed standard deviation of the reward along training, per G.
* :func:`transfer_chart` -- accuracy change from the start to the end of GRPO, per evaluation set,
  nearest to the training distribution first.
* :func:`budget_chart` -- the fixed-budget sweep: final reward against G with the predicted G*.
* :func:`lr_time_chart` -- the sweep's runs that the collapse rule did not flag, in learning-rate time,
  with the probe's predicted time scale (a run that ends below its start drawn dashed; :func:`curve_trends`).
* :func:`lr_sweep_chart` -- the learning-rate sweep: each run's final reward against its rate, per
  optimizer, with the probe's predicted critical rates as rules.
* :func:`oscillator_lab_chart` -- the lag sweep on the network: every run at its (``K_ref``, learning rate),
  coloured by the regime it showed, under the predicted critical rates (oscillator and sharpness edge).
* :func:`lab_returns_chart` -- returns to the fixed point of chosen lab runs, step by step.
* :func:`colab_url`, :func:`colab_badge` -- the "Open in Colab" link of a notebook of the repository,
  built from ``_config.yml``'s ``repository`` settings (the one place the public URL is kept).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.errors import ParameterError

from .style import CATEGORY10, GREYS, WIDTH, require_columns, step_x

__all__ = [
    "trajectories_chart",
    "fits_grid_chart",
    "spread_chart",
    "transfer_chart",
    "budget_chart",
    "lr_sweep_chart",
    "lr_time_chart",
    "curve_trends",
    "colab_url",
    "colab_badge",
    "oscillator_lab_chart",
    "lab_returns_chart",
]

#: Colours of the regimes of :func:`grpo_core.llm.lab_analysis.classify_trace`.
_REGIME_COLOURS = {"monotone": CATEGORY10["blue"], "damped ringing": CATEGORY10["green"],
                   "growing oscillation": CATEGORY10["orange"], "collapse": CATEGORY10["red"]}
_OPT_NAMES = {"sgd": "SGD, heavy ball", "adamw": "AdamW"}
_MODE_NAMES = {"stale": "stale samples, no ratio", "frozen": "frozen lag (the model's)",
               "ratio": "ratio-corrected (TRL)"}

_G_SCALE = alt.Scale(scheme="category10")


def trajectories_chart(
    traj: pd.DataFrame, *, by: str = "G", width: int = WIDTH["wide"], height: int = 280
) -> alt.LayerChart:
    """Mean training reward per step for each group size, with a band of +/- one between-seed sd.

    Parameters
    ----------
    traj : pandas.DataFrame
        From :func:`grpo_core.llm.analysis.mean_trajectories` (``step``, ``by``, ``mean``, ``lo``, ``hi``).
    by : str
        The grouping column (``"G"``).

    Examples
    --------
    >>> df = pd.DataFrame({"step": [1, 2, 1, 2], "G": [4, 4, 16, 16], "mean": [0.5, 0.6, 0.5, 0.62],
    ...                    "lo": [0.4, 0.5, 0.48, 0.6], "hi": [0.6, 0.7, 0.52, 0.64]})
    >>> isinstance(trajectories_chart(df), alt.LayerChart)
    True
    """
    require_columns(traj, "traj", ["step", by, "mean", "lo", "hi"])
    data = traj.assign(**{by: traj[by].astype(str)})
    color = alt.Color(f"{by}:N", title=by, scale=_G_SCALE, sort=sorted(data[by].unique(), key=float))
    base = alt.Chart(data).encode(x=step_x())
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("lo:Q", title="mean training reward"), y2="hi:Q", color=color
    )
    line = base.mark_line().encode(y="mean:Q", color=color,
                                   tooltip=["step:Q", f"{by}:N", alt.Tooltip("mean:Q", format=".3f")])
    return (band + line).properties(width=width, height=height)


def fits_grid_chart(
    curves: pd.DataFrame, *, columns: int = 3, width: int = 170, height: int = 110
) -> alt.FacetChart:
    """Small multiples: each run's smoothed reward (grey) and its fitted law (coloured).

    Parameters
    ----------
    curves : pandas.DataFrame
        Long table with ``run``, ``step``, ``smoothed`` and ``fitted`` (and ``label``, the facet
        title, e.g. ``"G=4 seed 0, R² 0.97"``).
    columns : int
        Facets per row.

    Returns
    -------
    altair.FacetChart
        One panel per run, in the order the runs first appear in ``curves`` (for
        :func:`grpo_core.llm.analysis.fitted_curves`: by G, then seed), not alphabetically.

    Examples
    --------
    >>> df = pd.DataFrame({"run": ["b"] * 2 + ["a"] * 2, "step": [1, 2, 1, 2],
    ...                    "smoothed": [0.5, 0.6, 0.4, 0.5], "fitted": [0.5, 0.6, 0.4, 0.5],
    ...                    "label": ["G=4"] * 2 + ["G=16"] * 2})
    >>> fits_grid_chart(df).to_dict()["facet"]["sort"]
    ['G=4', 'G=16']
    """
    require_columns(curves, "curves", ["run", "step", "smoothed", "fitted"])
    data = curves.copy()
    if "label" not in data:
        data["label"] = data["run"]
    order = list(dict.fromkeys(data["label"]))
    base = alt.Chart().encode(x=alt.X("step:Q", title="step"))
    pts = base.mark_line(color=GREYS["mid"]).encode(
        y=alt.Y("smoothed:Q", title="reward", scale=alt.Scale(zero=False))
    )
    fit = base.mark_line(color=CATEGORY10["red"], strokeWidth=2).encode(y="fitted:Q")
    return alt.layer(pts, fit, data=data).properties(width=width, height=height).facet(
        facet=alt.Facet("label:N", title=None, sort=order), columns=columns)


def spread_chart(traj: pd.DataFrame, *, by: str = "G", column: str = "raw_sd", width: int = WIDTH["wide"],
                 height: int = 200) -> alt.Chart:
    """Between-seed standard deviation of the reward along training, per group size (smoothed over
    25 steps for legibility).

    Parameters
    ----------
    traj : pandas.DataFrame
        From :func:`grpo_core.llm.analysis.mean_trajectories` (``step``, ``by``, ``column``).
    column : str
        ``"raw_sd"`` (per-step rewards) or ``"sd"`` (smoothed trajectories).
    """
    require_columns(traj, "traj", ["step", by, column])
    data = traj.sort_values([by, "step"]).copy()
    data["value"] = data.groupby(by)[column].transform(
        lambda s: s.rolling(25, center=True, min_periods=1).mean()
    )
    data[by] = data[by].astype(str)
    return alt.Chart(data).mark_line().encode(
        x=step_x(),
        y=alt.Y("value:Q", title="between-seed sd of the reward"),
        color=alt.Color(f"{by}:N", title=by, scale=_G_SCALE, sort=sorted(data[by].unique(), key=float)),
    ).properties(width=width, height=height)


def transfer_chart(
    table: pd.DataFrame, *, sampled: bool = False, width: int = WIDTH["half"], height: int = 220
) -> alt.LayerChart:
    """Start and end accuracy of each evaluation set (a dumbbell: grey start, coloured end), nearest
    to the training distribution at the top.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`grpo_core.llm.analysis.transfer_table`.
    sampled : bool
        Draw the sampled accuracy (at the training temperature) instead of the greedy one.

    Examples
    --------
    >>> t = pd.DataFrame({"set": ["add2", "sub2"], "distance": [0, 3], "start": [0.7, 0.6],
    ...                   "end": [0.95, 0.2], "sampled_start": [0.5, 0.4], "sampled_end": [0.9, 0.1]})
    >>> isinstance(transfer_chart(t), alt.LayerChart)
    True
    """
    s, e = ("sampled_start", "sampled_end") if sampled else ("start", "end")
    require_columns(table, "table", ["set", "distance", s, e])
    data = table.assign(start_=table[s], end_=table[e], change_=table[e] - table[s])
    order = list(data.sort_values("distance")["set"])
    y = alt.Y("set:N", sort=order, title=None)
    what = "sampled accuracy" if sampled else "greedy accuracy"
    rule = alt.Chart(data).mark_rule(color=GREYS["light"], strokeWidth=3).encode(
        y=y, x=alt.X("start_:Q", title=what, scale=alt.Scale(domain=[0, 1])), x2="end_:Q")
    start = alt.Chart(data).mark_point(filled=True, color=GREYS["mid"], size=80).encode(y=y, x="start_:Q")
    end = (
        alt.Chart(data)
        .mark_point(filled=True, size=100)
        .encode(
            y=y,
            x="end_:Q",
            color=alt.condition(
                "datum.change_ >= 0", alt.value(CATEGORY10["green"]), alt.value(CATEGORY10["red"])
            ),
            tooltip=[
                "set:N",
                alt.Tooltip("start_:Q", format=".3f", title="start"),
                alt.Tooltip("end_:Q", format=".3f", title="end"),
                alt.Tooltip("change_:Q", format="+.3f"),
            ],
        )
    )
    return (rule + start + end).properties(width=width, height=height)


def budget_chart(
    sweep: pd.DataFrame,
    *,
    g_star: float | None = None,
    g_star_interval=None,
    g_star_end: float | None = None,
    metric: str = "final_reward",
    width: int = WIDTH["half"],
    height: int = 260,
) -> alt.LayerChart:
    """Final reward (mean over seeds, +/- one standard error) against G at a fixed budget, with the
    predicted G* as a dashed rule and its interval as a band.

    Parameters
    ----------
    sweep : pandas.DataFrame
        From :func:`grpo_core.llm.analysis.budget_sweep_table` (``G``, ``metric``, ``metric_se``).
    g_star : float, optional
        Predicted optimum (drawn when finite).
    g_star_interval : (float, float), optional
        Its interval (clipped to the plotted range; an infinite end runs to the edge).
    g_star_end : float, optional
        A second prediction (the constants measured on the trained models), drawn as a dotted rule.
    metric : str
        ``"final_reward"``, ``"auc"``, ``"eval_end"``, or the paired ``"auc_paired"`` /
        ``"final_reward_paired"``.

    Examples
    --------
    >>> sw = pd.DataFrame({"G": [2, 4, 8], "final_reward": [0.7, 0.8, 0.75],
    ...                    "final_reward_se": [0.01, 0.01, 0.02]})
    >>> isinstance(budget_chart(sw, g_star=5.0, g_star_interval=(3, 9), g_star_end=2.5), alt.LayerChart)
    True
    """
    require_columns(sweep, "sweep", ["G", metric, f"{metric}_se"])
    data = sweep.assign(lo=sweep[metric] - sweep[f"{metric}_se"], hi=sweep[metric] + sweep[f"{metric}_se"])
    gmin, gmax = float(data["G"].min()) / 1.5, float(data["G"].max()) * 1.5
    xscale = alt.Scale(type="log", base=2, domain=[gmin, gmax])
    x = alt.X("G:Q", scale=xscale, title="group size G (log scale)")
    titles = {"final_reward": "final training reward", "auc": "mean reward over the run",
              "eval_end": "held-out accuracy at the end",
              "auc_paired": "mean reward over the run, vs the seed's mean",
              "final_reward_paired": "final reward, vs the seed's mean"}
    layers = []
    if g_star_interval is not None:
        lo, hi = (float(v) if v is not None and np.isfinite(v) else np.nan for v in g_star_interval)
        lo = gmin if not np.isfinite(lo) else max(lo, gmin)
        hi = gmax if not np.isfinite(hi) else min(hi, gmax)
        if hi > lo:
            layers.append(
                alt.Chart(pd.DataFrame({"lo": [lo], "hi": [hi]}))
                .mark_rect(opacity=0.12, color=CATEGORY10["blue"])
                .encode(x=alt.X("lo:Q", scale=xscale), x2="hi:Q")
            )
    err = alt.Chart(data).mark_errorbar().encode(x=x, y=alt.Y("lo:Q", title=titles.get(metric, metric),
                                                                 scale=alt.Scale(zero=False)), y2="hi:Q")
    pts = alt.Chart(data).mark_line(point=True).encode(
        x=x, y=f"{metric}:Q", tooltip=["G:Q", alt.Tooltip(f"{metric}:Q", format=".3f")])
    layers += [err, pts]
    for value, dash in ((g_star, [6, 4]), (g_star_end, [1, 3])):
        if value is not None and np.isfinite(value):
            layers.append(
                alt.Chart(pd.DataFrame({"g": [min(max(float(value), gmin), gmax)]}))
                .mark_rule(strokeDash=dash, strokeWidth=2 if dash == [1, 3] else 1, color=CATEGORY10["blue"])
                .encode(x=alt.X("g:Q", scale=xscale))
            )
    return alt.layer(*layers).properties(width=width, height=height)


def _sweep_panel(frame: pd.DataFrame) -> pd.Series:
    """The panel title of a sweep arm: optimizer and num_iterations."""
    return (frame.optimizer.str.replace("adamw", "AdamW").str.replace("sgd", "SGD + heavy ball")
            + ", num_iterations " + frame.num_iterations.astype(str))


#: The predictions :func:`lr_sweep_chart` draws: column of ``critical`` -> (legend label, dash).
_PREDICTIONS = {"pred_sharpness": ("sharpness", [2, 2]),
                "pred_k_constant_lag": ("K, constant lag (paper)", [6, 3]),
                "pred_k_on_policy": ("K, on-policy / refresh", [1, 0])}


def lr_sweep_chart(runs: pd.DataFrame, critical: pd.DataFrame, *, width: int = 170,
                   height: int = 150) -> alt.FacetChart:
    """One panel per (optimizer, num_iterations): the final reward of each run against its learning
    rate (log scale), coloured by its shape, and the probe's predicted critical rates as vertical rules.

    Parameters
    ----------
    runs, critical : pandas.DataFrame
        The two tables of :func:`grpo_core.llm.probe_check.lr_sweep_table`.

    Returns
    -------
    altair.FacetChart
        Configured (legends under the panels): display it as it is, do not layer it further.

    Examples
    --------
    >>> r = pd.DataFrame({"optimizer": ["sgd"] * 2, "num_iterations": [1, 1], "learning_rate": [0.01, 0.1],
    ...                   "end": [0.8, 0.0], "shape": ["monotone", "collapsed"]})
    >>> c = pd.DataFrame({"optimizer": ["sgd"], "num_iterations": [1], "pred_sharpness": [0.02],
    ...                   "pred_k_constant_lag": [0.2], "pred_k_on_policy": [8.0]})
    >>> spec = lr_sweep_chart(r, c).to_dict()
    >>> spec["facet"]["field"], spec["config"]["legend"]["orient"]
    ('panel', 'bottom')
    """
    require_columns(runs, "runs", ["optimizer", "num_iterations", "learning_rate", "end", "shape"])
    require_columns(critical, "critical", ["optimizer", "num_iterations", *_PREDICTIONS])

    data = runs.assign(panel=_sweep_panel(runs), kind="run")
    lo, hi = float(data.learning_rate.min()) / 3, float(data.learning_rate.max()) * 3
    rules = pd.concat([
        pd.DataFrame({"panel": _sweep_panel(critical), "rate": critical[col].clip(lo, hi), "prediction": label,
                      "kind": "rule"})
        for col, (label, _) in _PREDICTIONS.items()], ignore_index=True)
    scale = alt.Scale(type="log", domain=[lo, hi])
    x = alt.X("learning_rate:Q", scale=scale, title="learning rate (log scale)")
    runs_only = "datum.kind == 'run'"
    line = alt.Chart().mark_line(color=GREYS["mid"]).encode(
        x=x, y=alt.Y("end:Q", title="reward at the end", scale=alt.Scale(domain=[0, 1]))
    ).transform_filter(runs_only)
    dots = alt.Chart().mark_point(filled=True, size=70).encode(
        x=x, y="end:Q",
        color=alt.Color("shape:N", title="the run", scale=alt.Scale(
            domain=["monotone", "oscillating", "collapsed"],
            range=[CATEGORY10["blue"], CATEGORY10["green"], CATEGORY10["red"]])),
        tooltip=["learning_rate:Q", alt.Tooltip("end:Q", format=".3f"), "shape:N"],
    ).transform_filter(runs_only)
    rule = alt.Chart().mark_rule(color="#444444").encode(
        x=alt.X("rate:Q", scale=scale),
        strokeDash=alt.StrokeDash("prediction:N", title="predicted critical rate", scale=alt.Scale(
            domain=[v[0] for v in _PREDICTIONS.values()], range=[v[1] for v in _PREDICTIONS.values()])),
    ).transform_filter("datum.kind == 'rule'")
    joined = pd.concat([data, rules], ignore_index=True)
    # the legends under the panels: three panels and a legend beside them overflow the text column
    return alt.layer(line, dots, rule, data=joined).properties(width=width, height=height).facet(
        facet=alt.Facet("panel:N", title=None), columns=3).configure_legend(orient="bottom", direction="vertical")


#: The columns that name one run of a sweep in :func:`grpo_core.llm.probe_check.lr_time_curves`.
_CURVE_KEY = ("optimizer", "num_iterations", "learning_rate", "seed")


def curve_trends(curves: pd.DataFrame) -> pd.DataFrame:
    """Per run of :func:`grpo_core.llm.probe_check.lr_time_curves`: the first and last point of its
    trailing-mean reward and ``trend``, ``"falls"`` when it ends below where it started, else
    ``"rises"``.

    Parameters
    ----------
    curves : pandas.DataFrame
        ``optimizer``, ``num_iterations``, ``learning_rate``, ``seed``, ``tau`` and ``reward``.

    Returns
    -------
    pandas.DataFrame
        One row per run: the four key columns, ``first``, ``last`` (reward units) and ``trend``.
    """
    require_columns(curves, "curves", [*_CURVE_KEY, "tau", "reward"])
    ends = (curves.sort_values("tau").groupby(list(_CURVE_KEY)).reward.agg(["first", "last"]).reset_index())
    return ends.assign(trend=np.where(ends["last"] < ends["first"], "falls", "rises"))


def lr_time_chart(curves: pd.DataFrame, scales: pd.DataFrame, *, width: int = 170,
                  height: int = 150) -> alt.FacetChart:
    """The runs of a sweep that the collapse rule did not flag, reward against cumulative learning
    rate (log scale), one colour per rate, and the probe's predicted time to 90% as a dashed rule.

    :func:`grpo_core.llm.probe_check.classify_run` calls a run collapsed only when its reward ends
    below half its start, so a run that declines more slowly is drawn too: every curve whose trailing
    mean ends below where it started is drawn dashed (``trend`` "falls", in the legend), so that no
    falling run passes for a surviving one.

    Parameters
    ----------
    curves, scales : pandas.DataFrame
        The two tables of :func:`grpo_core.llm.probe_check.lr_time_curves`.

    Returns
    -------
    altair.FacetChart
        Configured (legends under the panels).

    Examples
    --------
    >>> c = pd.DataFrame({"optimizer": ["sgd"] * 2, "num_iterations": [1, 1], "learning_rate": [0.01] * 2,
    ...                   "seed": [0, 0], "tau": [0.1, 0.2], "reward": [0.3, 0.4]})
    >>> s = pd.DataFrame({"optimizer": ["sgd"], "num_iterations": [1], "tau90_predicted": [0.5]})
    >>> lr_time_chart(c, s).to_dict()["facet"]["field"]
    'panel'
    >>> sorted(curve_trends(c).trend)
    ['rises']
    """
    require_columns(curves, "curves", ["optimizer", "num_iterations", "learning_rate", "seed", "tau", "reward"])
    require_columns(scales, "scales", ["optimizer", "num_iterations", "tau90_predicted"])

    trends = curve_trends(curves).set_index(list(_CURVE_KEY)).trend
    data = curves.assign(panel=_sweep_panel(curves), kind="run",
                         curve=(curves.optimizer + curves.num_iterations.astype(str) + " "
                                + curves.learning_rate.astype(str) + " s" + curves.seed.astype(str)),
                         trend=[trends[k] for k in zip(*(curves[c] for c in _CURVE_KEY))])
    rules = scales.assign(panel=_sweep_panel(scales), kind="rule", tau=scales.tau90_predicted)
    scale = alt.Scale(type="log")
    line = alt.Chart().mark_line(strokeWidth=1.2).encode(
        x=alt.X("tau:Q", scale=scale, title="τ = Σ learning rate (log)"),
        y=alt.Y("reward:Q", title="training reward", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("learning_rate:Q", title="learning rate", scale=alt.Scale(type="log", scheme="viridis")),
        strokeDash=alt.StrokeDash("trend:N", title="reward over the run", scale=alt.Scale(
            domain=["rises", "falls"], range=[[1, 0], [4, 2]])),
        detail="curve:N",
    ).transform_filter("datum.kind == 'run'")
    rule = alt.Chart().mark_rule(strokeDash=[5, 3], color="#444444").encode(
        x=alt.X("tau:Q", scale=scale)).transform_filter("datum.kind == 'rule'")
    joined = pd.concat([data, rules], ignore_index=True)
    return alt.layer(line, rule, data=joined).properties(width=width, height=height).facet(
        facet=alt.Facet("panel:N", title=None), columns=3).resolve_scale(x="independent").configure_legend(
        orient="bottom")


def colab_url(notebook: str, config_path=None) -> str:
    """The Colab URL that opens ``notebook`` (a path relative to the repository root) from GitHub.

    The repository comes from ``_config.yml`` (``repository.url`` and ``repository.branch``), the
    single setting behind every launch button and badge of the book.

    Parameters
    ----------
    notebook : str
        Path of the ``.ipynb`` from the repository root, e.g. ``"book/experiments/grpo_llm.ipynb"``.
    config_path : path, optional
        The book's ``_config.yml`` (default: the one of this checkout).

    Raises
    ------
    ParameterError
        The notebook is not an ``.ipynb`` path, or ``repository.url`` is not a GitHub URL.

    Examples
    --------
    >>> colab_url("book/experiments/grpo_llm.ipynb").startswith("https://colab.research.google.com/github/")
    True
    """
    from pathlib import Path

    import yaml

    if not str(notebook).endswith(".ipynb"):
        raise ParameterError("notebook", f"`notebook` must be the path of an .ipynb file; got {notebook!r}")
    path = Path(config_path) if config_path else Path(__file__).resolve().parents[1] / "_config.yml"
    repo = (yaml.safe_load(path.read_text()) or {}).get("repository", {})
    url = str(repo.get("url", "")).rstrip("/")
    prefix = "https://github.com/"
    if not url.startswith(prefix):
        raise ParameterError(
            "repository.url", f"`repository.url` in {path.name} must be a GitHub URL; got {url!r}"
        )
    branch = repo.get("branch", "main")
    return f"https://colab.research.google.com/github/{url[len(prefix):]}/blob/{branch}/{str(notebook).lstrip('/')}"


def colab_badge(notebook: str, config_path=None, *, text: str = "Open in Colab") -> str:
    """Markdown link to :func:`colab_url`, for the page: text, not Colab's badge image, because the
    book's pages load nothing from other sites."""
    return f"[**{text}**]({colab_url(notebook, config_path)})"


def _lab_panel(frame: pd.DataFrame) -> pd.Series:
    return frame.optimizer.map(_OPT_NAMES) + " · " + frame["mode"].map(_MODE_NAMES)


def oscillator_lab_chart(runs: pd.DataFrame, curves: pd.DataFrame, *, width: int = 170,
                         height: int = 150) -> alt.FacetChart:
    """One panel per (optimizer, lag mode), a row per mode: each run at its refresh interval and learning rate,
    coloured by the regime it showed; the predicted critical rates as lines (solid: the oscillator's
    ``a*/K``; dashed: the sharpness edge). A run above the lower line should be unstable.

    Parameters
    ----------
    runs : pandas.DataFrame
        ``optimizer``, ``mode``, ``k_ref``, ``eta``, ``measured`` (a regime).
    curves : pandas.DataFrame
        :func:`grpo_core.llm.lab_analysis.prediction_curves` as a frame.

    Returns
    -------
    altair.FacetChart
        Configured (legends under the panels).

    Examples
    --------
    >>> r = pd.DataFrame({"optimizer": ["sgd"], "mode": ["stale"], "k_ref": [4], "eta": [0.01],
    ...                   "measured": ["damped ringing"]})
    >>> c = pd.DataFrame({"optimizer": ["sgd"] * 2, "mode": ["stale"] * 2, "k_ref": [1, 64],
    ...                   "line": ["oscillator"] * 2, "eta": [1.0, 0.01]})
    >>> oscillator_lab_chart(r, c).to_dict()["facet"]["field"]
    'panel'
    """
    require_columns(runs, "runs", ["optimizer", "mode", "k_ref", "eta", "measured"])
    require_columns(curves, "curves", ["optimizer", "mode", "k_ref", "eta", "line"])
    lo = float(min(runs.eta.min(), curves.eta.min())) / 2
    hi = float(runs.eta.max()) * 2
    data = pd.concat([runs.assign(kind="run"), curves.assign(kind="curve", eta=curves.eta.clip(lo, hi))],
                     ignore_index=True)
    data["panel"] = _lab_panel(data)
    x = alt.X("k_ref:Q", scale=alt.Scale(type="log", base=2, domain=[0.8, 80]), title="refresh interval K_ref",
              axis=alt.Axis(values=[1, 4, 16, 64]))
    y = alt.Y("eta:Q", scale=alt.Scale(type="log", domain=[lo, hi]), title="learning rate")
    line = alt.Chart().mark_line(color="#444444").encode(
        x=x, y=y, detail="line:N",
        strokeDash=alt.StrokeDash("line:N", title="predicted critical rate", scale=alt.Scale(
            domain=["oscillator", "sharpness"], range=[[1, 0], [5, 3]]))).transform_filter("datum.kind == 'curve'")
    dots = alt.Chart().mark_point(filled=True, size=60, opacity=0.85).encode(
        x=x, y=y,
        color=alt.Color("measured:N", title="the run", scale=alt.Scale(
            domain=list(_REGIME_COLOURS), range=list(_REGIME_COLOURS.values()))),
        tooltip=["k_ref:Q", alt.Tooltip("eta:Q", format=".3g"), "measured:N"],
    ).transform_filter("datum.kind == 'run'")
    # one row per lag mode, the two optimizers side by side
    order = [f"{_OPT_NAMES[o]} · {_MODE_NAMES[m]}" for m in _MODE_NAMES for o in _OPT_NAMES]
    return alt.layer(line, dots, data=data).properties(width=width, height=height).facet(
        facet=alt.Facet("panel:N", title=None, sort=[p for p in order if p in set(data.panel)]),
        columns=2).configure_legend(orient="bottom", direction="vertical")


def lab_returns_chart(frame: pd.DataFrame, *, width: int = 170, height: int = 130) -> alt.FacetChart:
    """Returns of chosen lab runs: the exact expected reward minus ``p*`` against the step, one panel per
    setting, one line per learning rate, coloured by the regime the run showed.

    Parameters
    ----------
    frame : pandas.DataFrame
        ``panel`` (title; the panels are drawn in the order they first appear), ``step``, ``e`` (``p - p*``),
        ``run`` (a label per line), ``measured``.

    Returns
    -------
    altair.FacetChart

    Examples
    --------
    >>> f = pd.DataFrame({"panel": ["a"] * 2, "step": [0, 1], "e": [-0.2, -0.1], "run": ["x"] * 2,
    ...                   "measured": ["monotone"] * 2})
    >>> lab_returns_chart(f).to_dict()["facet"]["field"]
    'panel'
    """
    require_columns(frame, "frame", ["panel", "step", "e", "run", "measured"])
    zero = alt.Chart().mark_rule(color=GREYS["light"]).encode(y=alt.datum(0))
    lines = alt.Chart().mark_line(strokeWidth=1.4).encode(
        x=alt.X("step:Q", title="step"), y=alt.Y("e:Q", title="p − p*"), detail="run:N",
        color=alt.Color("measured:N", title="the run", scale=alt.Scale(
            domain=list(_REGIME_COLOURS), range=list(_REGIME_COLOURS.values()))),
        tooltip=["run:N", "step:Q", alt.Tooltip("e:Q", format=".3f"), "measured:N"])
    order = [str(p) for p in dict.fromkeys(frame["panel"])]   # the panels in the frame's order
    return alt.layer(zero, lines, data=frame).properties(width=width, height=height).facet(
        facet=alt.Facet("panel:N", title=None, sort=order), columns=2).resolve_scale(
        x="independent").configure_legend(orient="bottom", direction="vertical")
