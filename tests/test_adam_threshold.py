"""The critical eta of the sampled bandit under Adam (finite G, B = 16, 32 seeds) against the noise-set
prediction eta* = a*(b1) sigma / K of grpo_core.model.adam (grpo_core.bandit.adam_threshold).

Tolerances are the seeds' own: each measured threshold carries a 90% percentile interval from
resampling its 32 seeds (``eta_low``, ``eta_high``), and the claims below are made within it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_core import ParameterError
from grpo_core.bandit.adam_threshold import adam_escape_threshold, adam_threshold_table


@pytest.fixture(scope="module")
def table():
    return adam_threshold_table(steps=1000, seeds=32).set_index(["beta1", "G"])


def test_the_prediction_is_a_star_sigma_over_k(table):
    for (b1, _g), row in table.iterrows():
        assert row["a_star"] == pytest.approx(2 * (1 + b1) / (1 - b1), rel=1e-9)
        # (sigma + eps) / K with Adam's eps = 1e-8
        assert row["eta_predicted"] == pytest.approx(row["a_star"] * (row["sigma"] + 1e-8) / row["K"], rel=1e-12)
    # sigma falls with G (B = 16 groups): by 1.86x from G = 4 to 16
    assert table.loc[(0.9, 4), "sigma"] / table.loc[(0.9, 16), "sigma"] == pytest.approx(1.862, rel=1e-3)


def test_with_momentum_the_sampled_threshold_is_the_noise_prediction_within_a_third(table):
    for g in (4, 16):
        row = table.loc[(0.9, g)]
        assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]
        # measured / predicted = 1.23-1.28; the interval from the seeds spans [0.94, 1.70]
        assert 1.0 < row["ratio"] < 1.35
        assert row["ratio_low"] < 1.05 and row["ratio_high"] < 1.75
    # the G-dependence is the prediction's: eta* ~ sigma ~ 1/sqrt(B G) (measured 1.81x, predicted 1.73x)
    measured = table.loc[(0.9, 4), "eta_measured"] / table.loc[(0.9, 16), "eta_measured"]
    predicted = table.loc[(0.9, 4), "eta_predicted"] / table.loc[(0.9, 16), "eta_predicted"]
    low = table.loc[(0.9, 4), "eta_low"] / table.loc[(0.9, 16), "eta_high"]
    high = table.loc[(0.9, 4), "eta_high"] / table.loc[(0.9, 16), "eta_low"]
    assert low < predicted < high and measured == pytest.approx(predicted, rel=0.10)


def test_without_momentum_the_noise_prediction_fails_and_the_threshold_does_not_move_with_g(table):
    # RMSprop's v grows with the jitter and holds a below 2: no linear threshold. The escape comes at
    # eta ~ 0.85 (a logit step of order the basin) at both G, 9x and 14x above a* sigma / K.
    for g in (4, 16):
        row = table.loc[(0.0, g)]
        assert row["ratio_low"] > 5
        assert 0.75 < row["eta_low"] <= row["eta_measured"] <= row["eta_high"] < 1.0
    ratio = table.loc[(0.0, 4), "eta_measured"] / table.loc[(0.0, 16), "eta_measured"]
    assert 0.95 < ratio < 1.2  # the prediction's sqrt(G) scaling would be 1.73


def test_escape_fraction_rises_across_the_grid_and_bad_grids_are_refused():
    r = adam_escape_threshold(4, 0.9, multipliers=[0.5, 4.0], steps=400, seeds=8, n_boot=20)
    assert r.escape_fraction.tolist() == [0.0, 1.0] and r.multipliers[0] < r.ratio < r.multipliers[1]
    # a grid already past the threshold at its first point does not bracket it
    assert math.isnan(adam_escape_threshold(4, 0.9, multipliers=[8.0, 16.0], steps=200, seeds=4,
                                            n_boot=10).eta_measured)
    with pytest.raises(ParameterError, match="multipliers"):
        adam_escape_threshold(4, 0.9, multipliers=[2.0, 1.0], steps=10, seeds=2)
    assert np.all(np.isfinite([r.eta_low, r.eta_high]))
