"""The beta = 0 law on the committed real runs that trained without a KL anchor.

:mod:`grpo_core.model.anchorless` says that without a KL anchor the expected reward of a 0/1-like
reward runs to its ceiling along a closed-form curve in learning-rate time (our derivation).
:func:`anchorless_real_runs` fits that law (:class:`grpo_core.laws.anchorless.AnchorlessLaw`), and the
plain exponential and logistic laws, to each committed real run with ``beta = 0`` (or 0.001) and a
bounded reward, in the run's learning-rate clock (:func:`grpo_core.laws.clock.learning_rate_clock`
when the log has ``learning_rate``, else steps at the configured constant rate), and reports R^2 and
the error of a forecast from the first half (:func:`grpo_core.laws.anchorless.compare_anchorless`).

The runs (:data:`ANCHORLESS_RUNS`, from each run's ``meta.json``): 08 (``kl_coeff = 0``; format 0.5 +
answer 1.0, ceiling 1.5), 11 (``init_kl_coef = 0``; a [0, 1] rubric score), 18 (a custom GRPO loop
with no KL term; GSM8K accuracy in [0, 1]); and two with ``beta = 0.001``, an anchor far too weak
to hold the policy within these runs: 13 (verl ``kl_loss_coef``; Game-of-24 score in [0, 1]) and 20
(TRL ``beta``; classification + format, ceiling 2).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..laws import noise_variance
from ..laws.anchorless import COMPARED_LAWS, compare_anchorless
from ..laws.clock import learning_rate_clock
from . import datasets, logs

__all__ = ["ANCHORLESS_RUNS", "anchorless_real_runs"]

#: run -> (beta, floor, ceiling, why it is here): the committed runs without a working KL anchor.
ANCHORLESS_RUNS: dict[str, tuple[float, float, float, str]] = {
    "08": (0.0, 0.0, 1.5, "kl_coeff 0; format 0.5 + answer 1.0"),
    "11": (0.0, 0.0, 1.0, "init_kl_coef 0; rubric score in [0, 1]"),
    "13": (0.001, 0.0, 1.0, "kl_loss_coef 0.001; Game-of-24 score in [0, 1]"),
    "18": (0.0, 0.0, 1.0, "custom GRPO loop, no KL term; GSM8K accuracy"),
    "20": (0.001, 0.0, 2.0, "beta 0.001; classification + format, max 2"),
}


def _clock(log, meta) -> tuple[np.ndarray, np.ndarray, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, y = log.series("reward")
        if log.has("learning_rate"):
            ls, lv = log.series("learning_rate")
            s, _ = learning_rate_clock(t, ls, lv)
            keep = np.concatenate([[True], np.diff(s) > 0])
            return s[keep], y[keep], "learning_rate"
    return t.astype(float), y, "steps"


def anchorless_real_runs(run_ids=None, *, fraction: float = 0.5) -> pd.DataFrame:
    """Fit the beta = 0 law and the plain laws to the anchorless real runs.

    Parameters
    ----------
    run_ids : iterable of str, optional
        Default: every key of :data:`ANCHORLESS_RUNS`.
    fraction : float
        Forecasts are fitted on the first ``fraction`` of the clock and scored on the rest.

    Returns
    -------
    DataFrame
        One row per run: ``run``, ``beta``, ``ceiling``, ``n``, ``clock``, then ``r2_<law>`` and
        ``rmse_<law>`` (forecast error, reward units) for each law of
        :data:`grpo_core.laws.anchorless.COMPARED_LAWS`, ``ceiling_fit`` (the free-ceiling
        std-scaled law's plateau) and ``noise_sd`` (the per-step noise, Rice's estimator
        :func:`grpo_core.laws.noise_variance`: the floor of any forecast error).

    Raises
    ------
    ParameterError
        An unknown run id.

    Examples
    --------
    >>> tab = anchorless_real_runs(["18"])
    >>> tab.loc[0, "clock"], round(float(tab.loc[0, "r2_anchorless_std"]), 2)
    ('steps', 0.86)
    """
    rows = []
    for rid in run_ids or ANCHORLESS_RUNS:
        beta, floor, ceiling, _why = ANCHORLESS_RUNS[rid]
        run = datasets.real_run(rid)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            log = logs.read_log(run.path, run=run.run)
        t, y, clock = _clock(log, run.meta)
        ok = np.isfinite(y)
        t, y = t[ok], y[ok]
        res = compare_anchorless(t - t[0], y, ceiling=ceiling, floor=floor, fraction=fraction)
        row = {"run": rid, "beta": beta, "ceiling": ceiling, "n": int(y.size), "clock": clock}
        row.update({f"r2_{law}": res[law]["r2"] for law in COMPARED_LAWS})
        row.update({f"rmse_{law}": res[law]["forecast_rmse"] for law in COMPARED_LAWS})
        row["ceiling_fit"] = res["anchorless_std_free"]["plateau"]
        row["noise_sd"] = float(np.sqrt(noise_variance(y)))
        rows.append(row)
    return pd.DataFrame(rows)
