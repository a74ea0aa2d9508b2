"""``grpo-dynamics fit``: fit the reward-curve laws to one metric of a training log.

Examples::

    grpo-dynamics fit trainer_state.json --metric reward
    grpo-dynamics fit run.csv --metric "rewards/correctness/mean" --json
    grpo-dynamics fit run.csv --metric reward --fit-fraction 0.4 --plot fit.html

A log longer than ``--max-points`` (2,000) is fitted on bin means, as ``diagnose`` does (100,000 raw
points took 44 s and 5.5 GB; the bin means of a smooth curve give the same plateau, and the report
says how many points were binned). Every format :func:`grpo_core.runs.logs.read_log` reads is accepted (TRL
``trainer_state.json`` of every
era, notebook CSV exports, verl dumps, JSONL). The laws, fits and criteria are those of
:mod:`grpo_core.laws`; the book chapter "Fitting real reward curves" explains them.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from grpo_core._json import json_ready
from grpo_core.errors import DataError, ParameterError
from grpo_core.runs.forecast import check_reward_range, plateau_checks, range_text, shown_range

from ._logargs import add_log_arguments, as_flag, output_path, read_log_from_args

#: Most points ``fit`` fits by default (longer logs are bin-averaged, as ``diagnose`` does).
MAX_POINTS = 2000
#: Fewest points ``fit`` accepts (:data:`grpo_core.laws.plateau.MIN_WINDOW`, as the calibrated end forecast's
#: :data:`~grpo_core.runs.forecast.calibrated.MIN_POINTS`, which ``diagnose`` also asks of a reward curve).
MIN_POINTS = 8


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fit",
        help="fit the three-phase, exponential and logistic laws to a metric of a training log",
        description=(
            "Read a training log (TRL trainer_state.json, CSV, JSONL, verl), take one metric per step, "
            "fit the reward-curve laws by least squares and compare them by R^2, AIC, AICc and BIC "
            "(Gaussian likelihood); the starred law is the best whose plateau the curve determines. With "
            "--fit-fraction, also forecast the end of the run from the first part of the log as diagnose "
            "does (the current level with a 90% band calibrated on 52 real runs, for a training reward seen "
            "at 20% to 80% of the run) and compare it with what happened (the mean of the log's last 20% of "
            "points, what the forecast is of)."
        ),
    )
    p.add_argument("log", metavar="LOG",
                   help="the training log file, a tracker's folder (TensorBoard, W&B, MLflow) or a trainer's output "
                        "folder (its last checkpoint's trainer_state.json)")
    p.add_argument("--metric", default="reward",
                   help="column to fit: a normalised name (reward, kl, entropy, reward/<f>) or the log's own "
                        "name ('rewards/correctness/mean', 'rewards/correctness', 'critic/score/mean'); "
                        "default reward")
    p.add_argument("--split", default="train", choices=("train", "eval"),
                   help="fit the training rows (default) or the evaluation rows")
    add_log_arguments(p)
    p.add_argument("--laws", default="three_phase,exponential,logistic",
                   help="comma-separated laws to compare: three_phase, three_phase_onset, exponential, "
                        "logistic (default: the first, third and fourth)")
    p.add_argument("--criterion", default="auto", choices=("auto", "aic", "aicc", "bic"),
                   help="how the laws are ranked: auto (default) is AIC, or AICc when the log has fewer than 40 "
                        "points per parameter (Burnham & Anderson's rule; AIC favours the larger laws there)")
    p.add_argument("--smooth", type=int, default=None, metavar="W",
                   help="fit a centred W-step rolling mean instead of the raw values (criteria and standard "
                        "errors are then optimistic: the residuals are correlated)")
    p.add_argument("--fit-fraction", dest="fit_fraction", default=None, metavar="F",
                   help="also forecast the end of the log from its first fraction F in (0, 1) of the points")
    p.add_argument("--max-points", dest="max_points", type=int, default=MAX_POINTS, metavar="N",
                   help=f"fit at most N points: a longer log is averaged in equal bins first (default {MAX_POINTS}; "
                        "0 fits every point)")
    p.add_argument("--n-boot", dest="n_boot", type=int, default=200,
                   help="bootstrap refits for the law fit's bands (0: delta method, else at least 2); default 200")
    p.add_argument("--reward-range", dest="reward_range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None,
                   help="with --fit-fraction: the least and the most the fitted reward's step mean can be (a "
                        "composite reward: the sums of its functions' minima and maxima, e.g. 0 1.5); the end-of-run "
                        "forecast's band is shown within it (default: [0, 1] for a reward logged within it)")
    p.add_argument("--level", default="0.9",
                   help="coverage of the law fit's bands, in (0, 1); default 0.9 (the end-of-run forecast's band "
                        "is calibrated at 0.9 only: at another level it stays 90%% and says so)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="the run's settings for the reward time-scale line (eta*K, K, t90; TRL config JSON, "
                        "trainer_state.json, meta.json); default: a file beside the log, else TRL's defaults")
    p.add_argument("--ignore-config", action="store_true",
                   help="ignore a meta.json/config.json/training_args.json beside the log (another tool's file); "
                        "use TRL's defaults unless --config is given")
    p.add_argument("--eta", default=None,
                   help="learning rate for the reward time-scale line when the log has none (default: the config's)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="write the fits, residuals (and forecast) to FILE.png or a self-contained FILE.html")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from grpo_core import laws
    from grpo_core.validation import check_integer, check_n_boot, check_real

    # checked even without --fit-fraction: a bad value is never silently ignored; the errors name the flags
    check_n_boot("--n-boot", args.n_boot)
    check_real("--level", args.level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    check_integer("--seed", args.seed, low=0)
    if check_integer("--max-points", args.max_points, low=0) and args.max_points < MIN_POINTS:
        raise ParameterError("--max-points", f"`--max-points` must be 0 (every point) or at least {MIN_POINTS} "
                                             f"(the fewest points fit takes); got {args.max_points}")
    if args.smooth is not None:
        check_integer("--smooth", args.smooth, low=1)
    if args.fit_fraction is not None:
        # 1 would leave nothing after the window to forecast
        args.fit_fraction = check_real("--fit-fraction", args.fit_fraction, low=0.0, high=1.0,
                                       low_inclusive=False, high_inclusive=False)
    if args.reward_range is not None and args.fit_fraction is None:
        raise ParameterError("--reward-range", "`--reward-range` bounds the forecast: give it with --fit-fraction")
    if args.reward_range is not None and not args.metric.startswith("reward"):
        raise ParameterError("--reward-range",
                             f"`--reward-range` is the range of a reward; --metric is {args.metric!r}")
    plot = output_path("--plot", args.plot, (".png", ".html"), (args.log,))
    law_names = [name.strip() for name in args.laws.split(",") if name.strip()]
    for name in law_names:
        laws.get_law(name)  # unknown names: one-line error naming `law`
    log = read_log_from_args(args)
    t, y = _series(log, args.metric, args.split)
    t = t.astype(float)
    with as_flag("reward_range", "--reward-range"):
        args.reward_range = check_reward_range(args.reward_range, y, str(args.log))
    if y.size < MIN_POINTS:
        raise DataError(f"fit needs at least {MIN_POINTS} points of {args.metric} (the laws have 3-4 parameters; "
                        f"diagnose and the forecaster ask the same); {args.log} has {y.size}")
    args.binned_from = None
    if args.max_points and y.size > args.max_points:
        args.binned_from = int(y.size)
        t, y = _bin_means(t, y, args.max_points)
    if args.smooth is not None:
        with as_flag("window", "--smooth"):
            t, y = laws.rolling_mean(t, y, args.smooth)
    comparison = laws.fit_all(t, y, laws=law_names, criterion=args.criterion)
    args.warmup_steps = _warmup(log)
    fc = None
    fc_declined = None
    if args.fit_fraction is not None:
        # the law fit's own plateau forecast (JSON only): a window it cannot fit (a reward stuck at 0 over
        # it) is its refusal, not the command's; the end-of-run forecast the text prints declines on its own
        criterion = args.criterion
        if criterion == "auto":  # the rule on the window the forecast fits (the default laws: 4 parameters)
            n_window = max(int(math.floor(args.fit_fraction * y.size + 1e-9)), 1)
            criterion = laws.choose_criterion(n_window, max(laws.get_law(n).n_params for n in laws.DEFAULT_LAWS))
        try:
            with as_flag("fraction", "--fit-fraction"):
                # scored against the last 20% of the points, as the end-of-run forecast and the benchmark are
                # (50 points read the whole of a 50-point log, the fit window included: real run 18)
                fc = laws.forecast(
                    t, y, law="best", fraction=args.fit_fraction, n_boot=args.n_boot, level=args.level,
                    seed=args.seed, criterion=criterion, tail=max(1, math.ceil(0.2 * y.size)),
                )
        except DataError as exc:
            fc_declined = str(exc)
    end = _end_of_run(log, args)
    implied = _implied(log, args)
    if plot is not None:
        _save_plot(comparison, end, plot, args.metric, _series(log, args.metric, args.split))
    if args.json:
        out = {"log": str(args.log), "metric": args.metric, "split": args.split, "smooth": args.smooth,
               "binned_from": args.binned_from}
        out.update(comparison.to_dict())
        out["criterion_requested"] = args.criterion
        out["learning_rate_warmup_steps"] = args.warmup_steps
        out["forecast"] = None if fc is None else _law_forecast_json(fc, y, args)
        if args.fit_fraction is not None:
            out["forecast_note"] = (
                "the law fit's plateau forecast (grpo_core.laws.forecast); its actual_tail_mean and covered "
                "use the log's last `tail` points (its last 20%). The forecast the text prints, scored against "
                "the log's last 20% as the benchmark is, is end_of_run_forecast"
                + (f"; declined: {fc_declined}" if fc_declined else ""))
        out["end_of_run_forecast"] = None if end is None else json_ready(end.to_dict())
        out["plot"] = None if plot is None else str(plot)
        out["implied_curvature"] = implied.as_dict()
        print(json.dumps(out, allow_nan=False))
    else:
        print(_report(comparison, args))
        if end is not None:
            print(_end_line(end))
        print("")
        print(implied.line())
        if plot is not None:
            print(f"plot written to {plot}")
    return 0


def _law_forecast_json(fc, y, args) -> dict:
    """The law fit's plateau forecast as JSON, with ``at_bound``, ``reliable`` and ``caveat``: diagnose's rules
    for its law fit (held-out run 49 from 40%: a plateau of 58.5 in [-67.5, 58.5] for a reward that never left
    -7.5 to 2.75, reported with nothing to say it means nothing)."""
    d = fc.to_dict()
    window = np.asarray(y[:int(d["n_fit"])], dtype=float)
    span = float(np.ptp(window)) if window.size else float("nan")
    rng = shown_range(y, None, args.reward_range) if args.metric.startswith("reward") else None
    at_bound, outside, wide = plateau_checks(fc.plateau, fc.plateau_low, fc.plateau_high, fc.fit.at_bound, span, rng)
    why = []
    if at_bound:
        why.append("the plateau sits at the law's bound: the window does not determine it")
    if outside:
        why.append(f"the plateau {fc.plateau:.4g} lies outside {range_text(rng)}")
    if wide:
        why.append(f"the plateau's band is more than three times as wide as the window's whole range ({span:.4g})")
    d.update({"at_bound": list(fc.fit.at_bound), "reliable": not why, "caveat": "; ".join(why) or None})
    return d


def _end_of_run(log, args):
    """The end-of-run forecast from the first ``--fit-fraction`` (:func:`grpo_core.runs.forecast.forecast_end`,
    shown within the declared --reward-range, or [0, 1] for a reward logged within it); ``None`` without
    ``--fit-fraction`` (checked to lie in (0, 1) by the handler)."""
    from grpo_core.runs.forecast import forecast_end

    if args.fit_fraction is None:
        return None
    try:
        return forecast_end(log, fit_fraction=float(args.fit_fraction), metric=args.metric, split=args.split,
                            level=float(args.level), reward_range=args.reward_range)
    except DataError:
        return None


def _end_line(e) -> str:
    """The forecast from the first ``--fit-fraction``: its line (the end-of-log mean with its band as shown
    and its evidence, or why there is none), the notes, and the actual (the mean of the log's last 20%, all
    after the window: a window reaching into it is past 80% of the log, where no forecast is made). A reward
    with a range is shown within it, and the error is the shown forecast's."""
    seen = f"{e.n_fit}, to step {e.t_fit_end:g}" if e.n_fit else "none"
    head, notes = e.lines()
    lines = [f"\nforecast from the first {e.fit_fraction:.0%} of the points ({seen}): {head}", notes]
    if e.declined is None:
        if e.band_clipped:
            lines.append(f"  the method's own band [{e.low:.4g}, {e.high:.4g}] runs past "
                         f"{range_text(e.shown_range)}")
        c, d = e.actual_steps
        lines.append(f"actual: mean of steps {c:g}-{d:g} (the log's last 20%, after the fit window) {e.actual:.4g} "
                     f"({'inside' if e.covered else 'outside'} the band; error {e.shown_point - e.actual:+.4g})")
    return "\n".join(lines)


def _implied(log, args):
    """The time scale eta*K (per step), K and t90 of the fitted metric under the run's conventions."""
    from grpo_core.runs import curvature, settings

    found = settings.settings_for_log(args.log, args.config, ignore_beside=args.ignore_config)
    return curvature.implied_curvature_from_log(log, found, metric=args.metric, split=args.split, eta=args.eta,
                                                level=args.level)
def _series(log, metric: str, split: str):
    """The metric's ``(steps, values)``; a reward function in either spelling (``rewards/f`` as the log
    writes it, ``reward/f`` normalised)."""
    from grpo_core.errors import DataError

    splits = [name for name, frame in (("train", log.train), ("eval", log.eval))
              if len(frame) and any(c != "step" for c in frame.columns)]
    if split not in splits:  # "no column 'reward' in the eval table ...; available: none" named no way out
        other = {"eval": " (drop `--split eval` to fit the training rows)",
                 "train": " (`--split eval` fits the evaluation rows)"}[split] if splits else ""
        raise DataError(f"{log.source} has no {split} rows (`--split {split}`); splits available: "
                        f"{', '.join(splits) or 'none'}{other}")
    try:
        return log.series(metric, split=split)
    except DataError:
        for a, b in (("rewards/", "reward/"), ("reward/", "rewards/")):
            if metric.startswith(a):
                alt = b + metric[len(a):]
                for cand in (alt, alt.removesuffix("/mean"), alt + "/mean"):
                    if log.has(cand, split):
                        return log.series(cand, split=split)
        raise


def _bin_means(t, y, max_points: int):
    """Equal bins of consecutive points, averaged, at most ``max_points`` of them (the last partial
    bin kept)."""
    import numpy as np

    k = int(math.ceil(y.size / max_points))
    edges = np.arange(0, y.size, k)
    counts = np.diff(np.append(edges, y.size))
    return np.add.reduceat(t, edges) / counts, np.add.reduceat(y, edges) / counts


def _fmt(x: float, spec: str = ".4g") -> str:
    return "-" if x is None or not math.isfinite(x) else format(x, spec)


#: How the criteria are written in the report.
_CRITERION_NAMES = {"aic": "AIC", "aicc": "AICc", "bic": "BIC"}


def _criterion_line(comparison, requested: str) -> str | None:
    """Which criterion ranked and why, on a log with fewer than 40 points per parameter (Burnham &
    Anderson 2002's rule for AICc); ``None`` on a longer log."""
    from grpo_core.laws import AICC_POINTS_PER_PARAMETER

    ratio = comparison.points_per_parameter
    if ratio >= AICC_POINTS_PER_PARAMETER:
        return None
    k = round(comparison.n / ratio)
    few = (f"{comparison.n} points for up to {k} parameters (n/K = {ratio:.3g} < {AICC_POINTS_PER_PARAMETER}, "
           "Burnham & Anderson 2002)")
    if comparison.criterion == "aicc" and requested == "auto":
        by_aic = min(comparison.results, key=lambda name: comparison.results[name].aic)
        differs = f"; by AIC the best would be {by_aic}" if by_aic != comparison.best else ""
        return (f"ranked by AICc, not AIC: {few}, too few for AIC, which favours the larger laws "
                f"(AICc: Hurvich & Tsai 1989){differs}")
    if comparison.criterion == "aic":
        return f"ranked by AIC as asked, though {few}: AICc (--criterion auto) is the criterion for so few points"
    return None


def _best_line(comparison) -> str:
    """The best law by the criterion, and the starred (preferred) law with why it differs."""
    crit = _CRITERION_NAMES[comparison.criterion]
    best, preferred = comparison.best, comparison.preferred
    if preferred != best:
        why = comparison.best_fit.plateau_issue
        return (f"best by {crit}: {best}, but {why}; * {preferred}: the best by {crit} of the laws whose "
                "plateau the curve determines  (! see notes)")
    if not comparison.preferred_determined:
        return f"best by {crit}: {best}  (* best; no law's plateau is determined by the curve, ! see notes)"
    return f"best by {crit}: {best}  (* best, ! see notes)"


def _report(comparison, args) -> str:
    delta = comparison.delta()
    src = f"{args.log} [{args.metric}" + (f", {args.smooth}-step rolling mean" if args.smooth else "") + "]"
    lines = [
        f"{src}: {comparison.n} points"
        + (f" (bin means of {args.binned_from} points)" if getattr(args, "binned_from", None) else "")
        + (f" ({comparison.dropped} non-finite dropped)" if comparison.dropped else "")
        + f"; noise reference R^2 ~ {comparison.noise_r2_reference:.3f} (the R^2 of a fit that left only the "
        "step-to-step noise; not a ceiling)",
    ]
    criterion_line = _criterion_line(comparison, getattr(args, "criterion", comparison.criterion))
    if criterion_line:
        lines.append(criterion_line)
    lines += [
        "",
        f"{'law':<18} {'R^2':>7} {'AIC':>10} {'AICc':>10} {'BIC':>10} "
        f"{'d' + _CRITERION_NAMES[comparison.criterion]:>8} {'plateau':>9} {'+-se':>9} {'t90 steps':>10}",
    ]
    for name, r in comparison.results.items():
        mark = "*" if name == comparison.preferred else " "
        flag = "!" if r.notes else " "
        lines.append(
            f"{mark}{name:<17} {r.r2:>7.3f} {r.aic:>10.2f} {_fmt(r.aicc, '.2f'):>10} {r.bic:>10.2f} "
            f"{delta[name]:>8.2f} {_fmt(r.plateau):>9} {_fmt(r.plateau_stderr, '.2g'):>9} "
            f"{_fmt(r.t90, '.4g'):>10}{flag}"
        )
    lines.append("")
    lines.append(_best_line(comparison))
    for name, r in comparison.results.items():
        params = ", ".join(f"{k}={v:.4g}" for k, v in r.params.items())
        lines.append(f"  {name}: {params}")
        if r.oscillator is not None:
            lines.extend(_oscillator_lines(r, getattr(args, "warmup_steps", None)))
        for note in r.notes:
            lines.append(f"    ! {note}")
    return "\n".join(lines)


def _save_plot(comparison, end, path: Path, metric: str, series) -> None:
    import altair as alt

    from widgets import laws_charts

    alt.data_transformers.disable_max_rows()
    charts = [laws_charts.fits_chart(comparison, metric=metric), laws_charts.residuals_chart(comparison)]
    if end is not None and end.declined is None:
        charts.append(_forecast_chart(end, series, metric))
    chart = alt.vconcat(*charts).resolve_scale(color="independent")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".html":
        from widgets.rendering import ScriptJSONEncoder  # the spec's names may hold "</script>"

        chart.save(str(path), format="html", inline=True, json_kwds={"cls": ScriptJSONEncoder})
    else:
        chart.save(str(path), format="png", scale_factor=1.5)


def _warmup(log) -> float | None:
    """Steps of the log's learning-rate warm-up (0: none), or ``None`` without a usable ``learning_rate``."""
    from grpo_core.errors import GrpoError
    from grpo_core.model.schedule import warmup_length

    if "learning_rate" not in log.train.columns:
        return None
    steps, lr = log.series("learning_rate")
    try:
        return warmup_length(lr, steps.astype(float))
    except GrpoError:
        return None


def _oscillator_lines(r, warmup_steps: float | None) -> list[str]:
    """The three-phase fit's oscillator ratios with their 90% intervals, and a note when its slow
    start is about as long as the learning-rate warm-up."""
    from scipy import stats

    from grpo_core.runs.curvature import FLAT_P_VALUE

    # a law no better than a constant has no time scale: its oscillator is noise read as dynamics
    tss = float(np.sum((r.y - np.mean(r.y)) ** 2))
    k = r.n_params
    f_stat = ((tss - r.rss) / (k - 1)) / (r.rss / (r.n - k)) if r.rss > 0 and r.n > k else math.inf
    p_value = float(stats.f.sf(f_stat, k - 1, r.n - k))
    if p_value > FLAT_P_VALUE:
        return [f"    oscillator: none (the law explains no more than the noise: R^2 = {r.r2:.3f}, F-test p = "
                f"{p_value:.2g} > {FLAT_P_VALUE:g}, so the curve has no time scale)"]
    q, iv = r.oscillator, r.oscillator_interval(0.9)

    fixed = all(0 < lo and math.isfinite(hi) for lo, hi in iv.values())
    regime = q["regime"]
    if fixed and iv["damping_ratio"][0] < 1.0 < iv["damping_ratio"][1]:
        regime = f"{regime} at the fit; the interval spans 1, so the regime is undetermined"

    def with_band(name: str, fmt: str = ".4g") -> str:
        lo, hi = iv[name]
        return _fmt(q[name], fmt) + (f" [{lo:{fmt}}, {hi:{fmt}}]" if fixed else "")

    lines = [f"    oscillator: damping ratio {with_band('damping_ratio', '.3g')} ({regime}), "
             f"M/C {with_band('mass_over_damping')} steps, K/C {with_band('stiffness_over_damping')} per step"
             + (" (90% intervals)" if fixed else " (no interval: k or tau is on a bound or not fixed by the curve)")]
    tau = q["mass_over_damping"]
    if not (warmup_steps and math.isfinite(tau) and tau > 0 and warmup_steps / 3 <= tau <= 3 * warmup_steps):
        return lines
    lo, hi = iv["mass_over_damping"]
    if not (fixed and hi / lo <= 9):  # wider than the whole [w/3, 3w] band of "about as long as"
        why = (f"[{lo:.3g}, {hi:.3g}] steps, wider than the band of 'about as long as'" if fixed
               else "no interval, so nothing fixes it near")
        lines.append(f"    ! M/C is undetermined ({why} the {warmup_steps:g}-step warm-up): the curve cannot tell "
                     "whether the slow start is the schedule or inertia")
    else:
        lines.append(f"    ! the slow start (M/C = {tau:.3g} steps) is about as long as the learning-rate warm-up "
                     f"({warmup_steps:g} steps): it may be the schedule, not inertia (in learning-rate time, which "
                     "`advise --from-log` and the forecast use, a warm-up is no slow start)")
    return lines


def _forecast_chart(e, series, metric: str):
    """The forecast of ``--fit-fraction`` (the calibrated end-of-run forecast): the log (dark up to the end of
    the fit window, light after it), the forecast of the last 20%'s mean with its band over those steps, the
    current level (the forecast's point) over the steps it averages, and the actual mean of the last 20%."""
    import altair as alt
    import numpy as np
    import pandas as pd

    t, y = (np.asarray(a, float) for a in series)
    data = pd.DataFrame({"step": t, "value": y, "part": np.where(t <= e.t_fit_end, "fit window", "after it")})
    h = e.horizon
    # as the text says it: within the reward's range
    box = pd.DataFrame({"step": [0.8 * h, h], "low": e.shown_low, "high": e.shown_high, "value": e.shown_point,
                        "what": "forecast"})
    segments = [("now (current level)", e.now_steps, e.now)]
    if e.actual is not None:
        segments.append(("actual (the last 20%)", e.actual_steps, e.actual))
    marks = pd.DataFrame([{"step": s, "value": v, "what": w} for w, steps, v in segments for s in steps])
    x = alt.X("step:Q", title="step")
    what = alt.Color("what:N", title=None, scale=alt.Scale(
        domain=["forecast", "now (current level)", "actual (the last 20%)"],
        range=["#D55E00", "#000000", "#0072B2"]))
    return alt.layer(
        alt.Chart(data).mark_line(strokeWidth=0.8).encode(
            x=x, y=alt.Y("value:Q", title=metric), opacity=alt.Opacity("part:O", scale=alt.Scale(
                domain=["fit window", "after it"], range=[0.9, 0.3]), title=None), color=alt.value("#555555")),
        alt.Chart(box).mark_area(opacity=0.2, color="#D55E00").encode(x=x, y="low:Q", y2="high:Q"),
        alt.Chart(box).mark_line(strokeWidth=2.5).encode(
            x=x, y="value:Q", color=what, tooltip=[alt.Tooltip("value:Q", format=".4g", title="forecast"),
                                       alt.Tooltip("low:Q", format=".4g"), alt.Tooltip("high:Q", format=".4g")]),
        alt.Chart(marks).mark_line(strokeWidth=2.5).encode(
            x=x, y="value:Q", detail="what:N", color=what,
            tooltip=["what:N", alt.Tooltip("value:Q", format=".4g")]),
    ).properties(width=600, height=260,
                 title=f"forecast from the first {e.fit_fraction:.0%}: the current level (shaded: its "
                       f"{e.level:.0%} band, calibrated on 52 real runs)")
