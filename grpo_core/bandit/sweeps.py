"""Trajectories of the softmax bandit across a setting: ``k_ref``, the group size, variants of one bandit.

Mean-field (and optionally stochastic) runs side by side, with the regimes, stationary variances and
plateaus measured on them next to the oscillator's predictions (book chapter "The bandit: where the
mean field is exact"):

* :func:`k_ref_sweep`: trajectories across ``k_ref``; regimes measured and predicted.
* :func:`g_sweep`: mean trajectories and stationary variances across group sizes.
* :func:`compare_variants`: trajectories of several variants of one bandit.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..model.hyperparameters import check_beta, check_k_ref
from ..validation import check_integer
from .fixed_points import fixed_point
from .prediction import _interior_fixed_point, predicted_noise
from .simulation import simulate
from .spec import BanditSpec
from .stability import classify_trajectory, predicted_regimes

__all__ = ["k_ref_sweep", "g_sweep", "compare_variants"]


def k_ref_sweep(
    spec: BanditSpec, *, eta: float, mu: float, beta: float, k_refs, steps: int = 300, seeds: int = 0
) -> dict:
    """Trajectories from the initial policy across ``k_ref`` at fixed ``eta``, ``mu``: regimes measured and predicted.

    Parameters
    ----------
    spec : BanditSpec
        Mean-field runs use it as given (``group_size=math.inf`` for the G -> inf limit).
    eta, mu, beta : float
    k_refs : sequence of int
    steps : int
    seeds : int
        If > 0 (and the spec's group size is finite), also run that many stochastic seeds per
        ``k_ref`` and report their mean.

    Returns
    -------
    dict
        ``trajectories``: DataFrame (``k_ref``, ``step``, ``p``, ``kind`` in {"mean field",
        "stochastic mean"}); ``regimes``: DataFrame per ``k_ref`` with ``measured`` (mean-field
        trajectory), ``continuous`` and ``exact`` (:func:`predicted_regimes`), ``damping_ratio``;
        ``p_star`` and ``curvature``.

    Raises
    ------
    ParameterError
        Bad inputs; no interior fixed point.
    """
    ks = [check_k_ref(k) for k in np.atleast_1d(k_refs).tolist()]
    fp = _interior_fixed_point(spec, check_beta(beta))
    mf = simulate(spec, eta=eta, mu=mu, k_ref=ks, beta=beta, steps=steps, mean_field=True)
    frames = [
        pd.DataFrame({"k_ref": k, "step": mf.steps, "p": mf.p[i, 0], "kind": "mean field"}) for i, k in enumerate(ks)
    ]
    if seeds and not spec.group_size_is_infinite:
        st = simulate(spec, eta=eta, mu=mu, k_ref=ks, beta=beta, steps=steps, seeds=seeds)
        frames += [
            pd.DataFrame({"k_ref": k, "step": st.steps, "p": st.p[i].mean(0), "kind": "stochastic mean"})
            for i, k in enumerate(ks)
        ]
    regimes = predicted_regimes(spec, eta=eta, mu=mu, k_ref=ks, curvature=fp.stiffness, steps=steps)
    regimes.insert(3, "measured", classify_trajectory(mf.p[:, 0], fp.p_star))
    return {
        "trajectories": pd.concat(frames, ignore_index=True),
        "regimes": regimes,
        "p_star": fp.p_star,
        "curvature": fp.stiffness,
    }


def g_sweep(
    base: BanditSpec,
    group_sizes,
    *,
    eta: float,
    beta: float,
    mu: float = 0.0,
    k_ref: int = 1,
    seeds: int = 256,
    steps: int = 300,
    burn_in: int | None = None,
    start: str = "reference",
    record_every: int = 1,
) -> dict:
    """Run the same bandit at several group sizes: mean trajectories and stationary variances.

    Parameters
    ----------
    base : BanditSpec
        Everything but the group size.
    group_sizes : sequence of int
        G values (each a separate batch of ``seeds`` runs; the seeds are the same at every G).
    eta, beta, mu, k_ref : scalars
    seeds : int
        Runs per G.
    steps : int
    burn_in : int, optional
        Steps discarded before the variance is measured (default: half the run).
    start : {"reference", "fixed_point"}
        Start from the spec's initial policy (transient: for mean trajectories) or from each G's own
        fixed point (stationary: for variances).
    record_every : int

    Returns
    -------
    dict
        ``trajectories``: DataFrame (``group_size``, ``step``, ``mean``, ``sem``, ``mean_field``) with
        the seed mean, its standard error and the exact finite-G mean-field trajectory;
        ``variance``: DataFrame (``group_size``, ``p_star``, ``variance``, ``variance_se``,
        ``predicted``) with the measured stationary variance of ``p`` (mean over the window of the
        across-seed variance), a batch-means standard error, and :func:`predicted_noise`;
        ``plateau``: DataFrame (``group_size``, ``p_star``, ``plateau``, ``plateau_se``,
        ``mean_field_end``): the seeds' time-averaged ``p`` after ``burn_in`` with its standard
        error, next to the finite-G fixed point and the mean-field run's last value.

    Raises
    ------
    ParameterError
        Bad inputs.
    """
    gs = [check_integer("group_size", g, low=1) for g in np.atleast_1d(group_sizes).tolist()]
    steps = check_integer("steps", steps, low=8)
    burn = steps // 2 if burn_in is None else check_integer("burn_in", burn_in, low=0, high=steps - 1)
    if start not in ("reference", "fixed_point"):
        raise ParameterError("start", f"`start` must be 'reference' or 'fixed_point'; got {start!r}")
    traj, var, plateau = [], [], []
    for g in gs:
        spec = base.replace(group_size=g)
        fp = _interior_fixed_point(spec, beta)
        theta0 = fp.theta_star if start == "fixed_point" else None
        kw = dict(eta=eta, mu=mu, k_ref=k_ref, beta=beta, steps=steps, theta0=theta0, record_every=record_every)
        run = simulate(spec, seeds=seeds, **kw)
        mf = simulate(spec, mean_field=True, **kw)
        p = run.p[0]
        traj.append(
            pd.DataFrame(
                {
                    "group_size": g,
                    "step": run.steps,
                    "mean": p.mean(0),
                    "sem": p.std(0, ddof=1) / math.sqrt(p.shape[0]),
                    "mean_field": mf.p[0, 0],
                }
            )
        )
        late = p[:, run.steps >= burn].mean(axis=1)  # per-seed time average over the late window
        plateau.append(
            {
                "group_size": g,
                "p_star": fp.p_star,
                "plateau": float(late.mean()),
                "plateau_se": float(late.std(ddof=1) / math.sqrt(late.size)),
                "mean_field_end": float(mf.p[0, 0, -1]),
            }
        )
        sel = run.steps >= burn
        v_t = p[:, sel].var(axis=0, ddof=1)
        nb = 8
        chunks = np.array_split(v_t, nb)
        means = np.array([c.mean() for c in chunks])
        pred = math.nan
        if fp.symmetric and spec.kl_estimator == "exact":
            pred = predicted_noise(spec, eta=eta, mu=mu, k_ref=k_ref, beta=beta)["variance_exact"]
        var.append(
            {
                "group_size": g,
                "p_star": fp.p_star,
                "variance": float(v_t.mean()),
                "variance_se": float(means.std(ddof=1) / math.sqrt(nb)),
                "predicted": pred,
            }
        )
    return {
        "trajectories": pd.concat(traj, ignore_index=True),
        "variance": pd.DataFrame(var),
        "plateau": pd.DataFrame(plateau),
    }


def compare_variants(
    base: BanditSpec, variants: list[dict], *, steps: int, seeds: int = 0, record_every: int = 1
) -> pd.DataFrame:
    """Trajectories of several variants of one bandit (mean field, and optionally stochastic).

    Parameters
    ----------
    base : BanditSpec
        The common bandit.
    variants : list of dict
        Each with a ``label``, the hyperparameters ``eta``, ``mu`` (default 0), ``k_ref``
        (default 1), ``beta``, optionally a ``panel`` name and any :class:`BanditSpec` field to
        change (``scale``, ``estimator``, ``lag``, ``group_size``, ...).
    steps : int
    seeds : int
        If > 0, also the mean over that many stochastic seeds (finite group size only).
    record_every : int

    Returns
    -------
    pandas.DataFrame
        Long format: ``panel``, ``label``, ``kind`` ("mean field" / "stochastic mean"), ``step``,
        ``p``, ``kl``, ``clip_ratio``, and the variant's ``p_star`` (NaN without an interior fixed
        point).

    Raises
    ------
    ParameterError
        Unknown spec fields or bad hyperparameters.

    Examples
    --------
    >>> df = compare_variants(BanditSpec.binary(group_size=math.inf),
    ...                       [{"label": "KL on", "eta": 0.5, "beta": 1.0},
    ...                        {"label": "KL off", "eta": 0.5, "beta": 0.0}],
    ...                       steps=50)
    >>> sorted(df.label.unique().tolist())
    ['KL off', 'KL on']
    """
    hyper = ("label", "panel", "eta", "mu", "k_ref", "beta")
    frames = []
    for v in variants:
        if "label" not in v or "eta" not in v or "beta" not in v:
            raise ParameterError("variants", "each variant needs a `label`, `eta` and `beta`")
        changes = {k: val for k, val in v.items() if k not in hyper}
        try:
            spec = base.replace(**changes)
        except TypeError as exc:
            raise ParameterError("variants", f"unknown bandit setting in variant {v['label']!r}: {exc}") from None
        kw = dict(
            eta=v["eta"],
            mu=v.get("mu", 0.0),
            k_ref=v.get("k_ref", 1),
            beta=v["beta"],
            steps=steps,
            record_every=record_every,
            metrics=True,
        )
        fp = fixed_point(spec, check_beta(v["beta"]))
        p_star = fp.p_star if fp.interior else math.nan
        runs = [("mean field", simulate(spec, mean_field=True, **kw))]
        if seeds and not spec.group_size_is_infinite:
            runs.append(("stochastic mean", simulate(spec, seeds=seeds, **kw)))
        for kind, run in runs:
            clip = np.full(run.steps.size, np.nan)  # nothing sampled at step 0
            clip[1:] = run.metrics["clip_ratio"][0, :, 1:].mean(0)
            frames.append(
                pd.DataFrame(
                    {
                        "panel": v.get("panel", ""),
                        "label": v["label"],
                        "kind": kind,
                        "step": run.steps,
                        "p": run.p[0].mean(0),
                        "kl": run.metrics["kl"][0].mean(0),
                        "clip_ratio": clip,
                        "p_star": p_star,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)
