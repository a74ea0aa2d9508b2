"""The operational thresholds of every check, each with its reason, in one place (:class:`Thresholds`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import ParameterError
from ...validation import check_integer, check_real


@dataclass(frozen=True)
class Thresholds:
    """Operational thresholds of every check (all documented and justified here).

    Attributes
    ----------
    zero_spread_info, zero_spread_warning, zero_spread_critical : float
        Fraction of zero-spread groups (smoothed over ``window`` steps, sustained over a stretch)
        for an info / warning / critical advantage-degeneration finding: 0.25, 0.5, 0.9. At a
        fraction f the batch carries the gradient of (1 - f) of its groups: at 0.5 half the
        rollouts are wasted (the effective batch is halved, the gradient variance doubled); at
        0.9 the update rests on a tenth of the batch, and at 1 there is no gradient at all.
    min_stretch_fraction, min_stretch_steps : float, int
        A level must hold over at least ``max(min_stretch_steps, min_stretch_fraction * T)``
        steps (0.1 and 5): a few unlucky steps are not a failure mode.
    excess_over_binary : float
        Observed minus expected zero-spread fraction above which the spread is called
        "below what a 0/1 reward at this accuracy gives" (0.15, about three standard errors of a
        fraction measured on 8 groups per step and averaged over 5 steps: sqrt(0.25 / 40) = 0.08
        is the worst case, heterogeneity across prompts raises it further, see
        :func:`advantage_degeneration`).
    entropy_warning, entropy_critical : float
        Late entropy over initial entropy at or below which the policy is called concentrated
        (0.5) or collapsed (0.1). Halving the entropy in nats removes about half of the
        effective number of outputs' log; a tenth leaves a nearly deterministic policy.
    progress_still_rising : float
        The reward counts as "still rising" when the entropy halved before the reward had made
        this fraction (0.75) of its total gain, i.e. at least a quarter of the gain came later.
    trend_z : float
        z-score of a rise (late minus early mean over its standard error) above which a curve
        is called rising (3.0: about a 1-in-700 chance for noise alone, one-sided).
    flat_z : float
        z-score below which an eval curve is called flat (2.0: its rise is not significant at the
        one-sided 2.3% level; a truly flat eval curve passes 97.7% of the time).
    falling_z : float
        z-score at or below which an eval curve is called falling (-2.0). The training reward has
        unlearned (:func:`~grpo_core.runs.diagnostics.learning.not_learning`, critical) when its rise
        z is at most ``-trend_z`` (a fall as significant as a rise must be), or at most ``falling_z``
        with the slope's one-sided p-value for a rise above ``1 - learning_p_value`` (the slope
        confirms a smaller fall). The slope test alone misses a collapse in a short log: 40 rows with
        strongly autocorrelated residuals leave p = 0.97 for a fall from 0.84 to 0.005 (real run 01).
    growth_warning, growth_critical : float
        Late level over (floored) early level of a growth metric for a warning (10) or critical
        (100) instability: one and two orders of magnitude. A stationary metric fluctuates by a
        factor of 2-3 at most; a factor of 10 that persists to the end of the log is growth.
    onset_factor : float
        The onset of growth is the first step from which the smoothed metric stays above this
        multiple (3) of its early level (allowing 10% of later steps below it).
    floors : dict of str to float
        Floor of the early level per metric, so that a metric that starts at 0 (the KL to the
        reference at step 1) is not called growing when it reaches a normal value: ``kl`` 0.05
        (warning at 0.5, critical at 5 nats per token: the sequence-level log-ratio of a
        200-token completion would be ~100 nats), ``ppo_kl`` 0.01, clip fractions 0.02 (warning
        at 20% of tokens clipped), ``importance_ratio_max`` 1.0 (warning at a ratio of 10).
    clip_critical : float
        Clip fractions are bounded by 1, so their critical level is absolute: 0.5 (half the
        tokens clipped: the update is mostly the clip, not the gradient).
    kl_still_growing : float
        The KL to the reference policy drifts up whenever the policy learns (without bound when
        ``beta = 0``), unlike the gradient norm or the clip fractions, which are stationary in a
        stable run. A KL growth counts as instability only if it is still growing at the end:
        the last 10% of the log at least 1.5x the level at 65-75% of it (an exponential with the
        warning factor 10 over the log grows by ~1.8x over that stretch; a saturating drift by
        little).
    oscillation_p_value : float
        Fisher g-test p-value below which a periodogram peak is an oscillation (0.01).
    oscillation_growth_warning, oscillation_growth_critical : float
        Growth factor of the oscillation's amplitude envelope over the analysed span for a warning
        (1.5) or critical (3.0) instability.
    sustained_growth, sustained_autocorrelation : float
        An oscillation that does not decay (growth factor >= 2/3 over the log) and repeats itself
        (autocorrelation at one period >= 0.5) is a limit cycle, a warning: the linear dynamics is
        past its threshold and saturation holds the amplitude. A stable oscillator driven by noise
        has autocorrelation ``exp(-2 pi zeta / sqrt(1 - zeta^2))`` at one period, which reaches 0.5
        only for a damping ratio ``zeta <= 0.11``, i.e. at the threshold for practical purposes.
        Any other detected oscillation is info (underdamped, stable).
    swing_ratio, swing_min_periods : float
        Erratic swings: a significant periodogram peak without a clean repetition, but a median
        swing amplitude at least 3x the step-to-step noise (:attr:`Oscillation.swing_ratio`)
        over at least 5 periods (so that one collapse or one knee of the learning curve cannot
        make the median), is a warning. Stable runs measure 0.5-1.7 (the cases, the real logs,
        the constructed and bandit logs); the two-arm bandit past its refresh-lag threshold 3-15,
        where saturation makes its oscillation irregular.
    learning_p_value : float
        One-sided p-value of the reward's rise above which a run is "not learning" (0.01). The test
        is the least-squares slope over the whole run with its standard error corrected for the lag-1
        autocorrelation of the residuals (effective ``n (1 - rho) / (1 + rho)``, Bretherton et al.
        1999), and the early/late rise (:attr:`trend_z`) must fail too: a run that rose and then
        plateaued passes one of them.
    min_learning_points : int
        Reward points the learning check needs (16): fewer make no verdict either way.
    min_learning_steps, min_planned_fraction : int, float
        The least a run must have trained before a reward with no significant rise is called "not
        learning": ``min_learning_steps`` (50) optimizer steps (the last logged step), and, where the log
        knows its planned ``max_steps``, ``min_planned_fraction`` (0.5) of them. Short of either the
        verdict is "inconclusive": too early to judge (a significant rise or fall, or a dead run, is
        reported at any length). From the 52 shipped real runs (``real_runs``, ``holdout_runs``,
        ``holdout_runs_2``): the 33 whose whole log rose significantly first showed it at step 16 to 440
        (quartiles 46, 64, 81; the five logged every 5 steps cannot show it before their 16th point, step 80
        or 85), so 23 of the 33 had not shown it by step 49; the shortest planned run among the 52 is 50
        steps (18, 55, 56). Read on prefixes, 13 of the 33 still read flat at 22% of their run (56 of 250
        steps), 12 past a quarter of it, 4 past half (08, 46, 55, 60).
    saturation_level : float
        The reward counts as "at its ceiling" over a zero-spread stretch when its mean there is at
        least this fraction (0.9) of the way from the run's lowest to its highest per-step reward and
        at least 0.9 of the highest (a positive reward): the groups are all-correct, the task is
        solved (``saturation``, info), not a failure.
    truncation_warning, truncation_critical : float
        Median ``clipped_ratio`` (completions that hit the length cap) over the last quarter of the
        run for a warning (0.5: half the completions end without an answer) or critical (0.9) finding.
    pinned_fraction : float
        Without ``clipped_ratio``: the mean completion length is "pinned at its cap" when at least this
        fraction (0.3) of the last quarter's steps sit at the run's maximum length (within 0.5%); a mean
        over a batch equals the maximum only when every completion hit it (noise alone makes one step
        the maximum, not a third of them).
    ratio_warning, ratio_critical : float
        The mean importance-sampling ratio (generation vs training log-probabilities) of an on-policy
        run is 1; a smoothed mean strictly outside ``[ratio_warning, 1 / ratio_warning]`` (0.8) over a
        sustained stretch is a warning, strictly outside ``[ratio_critical, 1 / ratio_critical]`` (0.5)
        critical (a ratio of exactly 0.5 is a warning, as the message's interval says; the peer toolkit's
        rule is "ratio < 0.5" too). A ratio column that is 0 on every step was not computed and is not
        read (:data:`~grpo_core.runs.diagnostics.series.ZERO_MEANS_NOT_COMPUTED`, the same rule for the
        entropy and the KL).
    explosion_warning, explosion_critical : float
        Late entropy over initial entropy at or above which the entropy exploded (2 and 4: the
        policy spreads over e^H outputs per token; 4x the nats is random text).
    kl_drift_level : float
        KL to the reference (nats per token) above which, grown tenfold from its floored early level
        while the reward did not rise, the policy drifts without gain (0.1).
    spike_factor, spike_min_count : float, int
        A spike is a step at least ``spike_factor`` (10) times the metric's running median (floored by
        :attr:`spike_floors`); ``spike_min_count`` (5) separate spikes are a warning even when each
        recovers. Three real runs that learned well (04, 22, 28 of ``real_runs``) have four KL spikes
        each: up to four are info, unless two are large (:attr:`spike_large_factor`).
    spike_large_factor : float
        A spike at least this many times (100, two orders of magnitude) its running median is large: two or
        more large spikes of one metric are a warning whatever their count. The spikes of the shipped runs
        that learned reach 68x their running median at most (a single KL spike of held-out run 47; 53x with
        two or more, run 28); an update whose KL or gradient jumps a hundredfold is dominated by a few
        sequences, and again and again is one jump from diverging.
    spike_floors : dict of str to float
        Floor of the running median per metric for the spike count: ``kl`` 0.05 and ``ppo_kl`` 0.01 (as
        :attr:`floors`), ``importance_ratio_max`` 1 (its value on policy), ``grad_norm`` 1 (TRL's
        default ``max_grad_norm``: a saturated run whose groups mostly have zero spread logs a median
        gradient norm near 0, and its ordinary steps with spread would all count as spikes).
    min_checks_for_healthy : int
        A run is called healthy only when the learning check and at least this many (2) of the four
        checks of the paper ran; otherwise the verdict is "inconclusive".
    window : int
        Default smoothing window in steps for the short logs (5); long logs use 2% of their
        length.
    """

    zero_spread_info: float = 0.25
    zero_spread_warning: float = 0.5
    zero_spread_critical: float = 0.9
    min_stretch_fraction: float = 0.1
    min_stretch_steps: int = 5
    excess_over_binary: float = 0.15
    entropy_warning: float = 0.5
    entropy_critical: float = 0.1
    progress_still_rising: float = 0.75
    trend_z: float = 3.0
    flat_z: float = 2.0
    falling_z: float = -2.0
    growth_warning: float = 10.0
    growth_critical: float = 100.0
    onset_factor: float = 3.0
    floors: dict[str, float] = field(default_factory=lambda: {
        "grad_norm": 1e-8, "kl": 0.05, "ppo_kl": 0.01, "clip_ratio_region": 0.02, "clip_ratio_low": 0.02,
        "clip_ratio_high": 0.02, "importance_ratio_max": 1.0,
    })
    clip_critical: float = 0.5
    kl_still_growing: float = 1.5
    oscillation_p_value: float = 0.01
    oscillation_growth_warning: float = 1.5
    oscillation_growth_critical: float = 3.0
    sustained_growth: float = 2.0 / 3.0
    sustained_autocorrelation: float = 0.5
    swing_ratio: float = 3.0
    swing_min_periods: float = 5.0
    window: int = 5
    learning_p_value: float = 0.01
    min_learning_points: int = 16
    min_learning_steps: int = 50
    min_planned_fraction: float = 0.5
    saturation_level: float = 0.9
    truncation_warning: float = 0.5
    truncation_critical: float = 0.9
    pinned_fraction: float = 0.3
    ratio_warning: float = 0.8
    ratio_critical: float = 0.5
    explosion_warning: float = 2.0
    explosion_critical: float = 4.0
    kl_drift_level: float = 0.1
    spike_factor: float = 10.0
    spike_min_count: int = 5
    spike_large_factor: float = 100.0
    spike_floors: dict[str, float] = field(default_factory=lambda: {
        "kl": 0.05, "ppo_kl": 0.01, "importance_ratio_max": 1.0, "grad_norm": 1.0})
    min_checks_for_healthy: int = 2

    def __post_init__(self) -> None:
        # fractions in [0, 1] and ordered levels; counts >= 1; every other threshold finite and > 0
        # (a bad value would silently change every verdict)
        fractions = ("zero_spread_info", "zero_spread_warning", "zero_spread_critical", "min_stretch_fraction",
                     "excess_over_binary", "entropy_warning", "entropy_critical", "progress_still_rising",
                     "clip_critical", "oscillation_p_value", "sustained_growth", "sustained_autocorrelation",
                     "learning_p_value", "saturation_level", "truncation_warning", "truncation_critical",
                     "pinned_fraction", "ratio_warning", "ratio_critical", "min_planned_fraction")
        for name in fractions:
            check_real(name, getattr(self, name), low=0.0, high=1.0)
        for name in ("min_stretch_steps", "window", "min_learning_points", "spike_min_count", "min_learning_steps"):
            check_integer(name, getattr(self, name), low=1)
        for name in ("trend_z", "flat_z", "growth_warning", "growth_critical", "onset_factor", "kl_still_growing",
                     "oscillation_growth_warning", "oscillation_growth_critical", "swing_ratio", "swing_min_periods",
                     "explosion_warning", "explosion_critical", "kl_drift_level", "spike_factor", "spike_large_factor"):
            check_real(name, getattr(self, name), low=0.0, low_inclusive=False)
        check_real("falling_z", self.falling_z, high=0.0, high_inclusive=False)
        for lo, hi in (("zero_spread_info", "zero_spread_warning"), ("zero_spread_warning", "zero_spread_critical"),
                       ("entropy_critical", "entropy_warning"), ("growth_warning", "growth_critical"),
                       ("oscillation_growth_warning", "oscillation_growth_critical"),
                       ("truncation_warning", "truncation_critical"), ("ratio_critical", "ratio_warning"),
                       ("spike_factor", "spike_large_factor"),
                       ("explosion_warning", "explosion_critical")):
            if getattr(self, lo) > getattr(self, hi):
                raise ParameterError(lo, f"`{lo}` ({getattr(self, lo)!r}) must not exceed `{hi}` "
                                         f"({getattr(self, hi)!r})")
        check_integer("min_checks_for_healthy", self.min_checks_for_healthy, low=0, high=4)
        for key, value in self.floors.items():
            check_real(f"floors[{key!r}]", value, low=0.0)
        for key, value in self.spike_floors.items():
            check_real(f"spike_floors[{key!r}]", value, low=0.0)


DEFAULT_THRESHOLDS = Thresholds()
