"""``grpo-dynamics bandit``: run GRPO on the softmax bandit, or measure its stability threshold.

Examples::

    grpo-dynamics bandit --eta 0.5 --mu 0.5 --k-ref 4 --group-size 8 --seeds 64 --steps 400
    grpo-dynamics bandit --eta 0.5 --mu 0.5 --k-ref 4 --mean-field --out run.csv --json
    grpo-dynamics bandit --sweep k_ref --eta 0.5 --mu 0.5 --lag refresh --json
    grpo-dynamics bandit --sweep eta --mu 0.9 --k-ref 8 --json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from grpo_core._json import json_ready


def _exact(x: float) -> str:
    """An input echoed with all its digits (``:g`` printed mu = 0.9999999 as 1), without a trailing .0."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bandit",
        help="run GRPO on a softmax bandit (final p, spread, p*, K) or measure its critical k_ref / eta",
        description=(
            "GRPO on a softmax bandit over A arms with binary (or Bernoulli) rewards: B groups of G samples "
            "per step, group advantages, a stale score-function or clipped-surrogate gradient, a KL term to "
            "the reference policy and momentum. Prints the final expected reward (mean and spread over "
            "seeds), the fixed point p*, the measured stiffness K and the regime. With --sweep, measures "
            "the critical k_ref (or eta) of the mean-field bandit and prints it next to the oscillator "
            "model's continuous and exact predictions."
        ),
    )
    p.add_argument(
        "--eta",
        help="learning rate per optimizer step, > 0; required for a run and for --sweep k_ref "
        "(not with --sweep eta, which solves for it)",
    )
    p.add_argument("--mu", default="0", help="momentum coefficient in [0, 1) (default 0)")
    p.add_argument(
        "--k-ref",
        dest="k_ref",
        default="1",
        help="lag (constant) or refresh interval (refresh), in optimizer steps, integer >= 1 (default 1)",
    )
    p.add_argument("--group-size", dest="group_size", default="8",
                   help="G, samples per group, integer >= 1 (>= 2 with leave-one-out or --scale-std); "
                        "'inf' with --mean-field for the G -> infinity limit (default 8)")
    p.add_argument("--num-prompts", dest="num_prompts", default="1", help="B, groups per step (default 1)")
    p.add_argument("--seeds", default="16", help="number of seeds, integer >= 1 (default 16)")
    p.add_argument("--steps", default="500", help="optimizer steps, integer >= 1 (default 500)")
    p.add_argument("--lag", default="constant", help="'constant' (gradient k_ref steps old) or 'refresh' "
                   "(behaviour policy refreshed every k_ref steps); default constant")
    p.add_argument("--arms", default="2", help="number of arms A >= 2 (default 2)")
    p.add_argument("--correct", default="1", help="number of correct arms, in [1, arms - 1] (default 1)")
    p.add_argument("--reward-probs", dest="reward_probs",
                   help="comma-separated Bernoulli reward probabilities per arm (overrides --arms/--correct)")
    p.add_argument("--beta", default="1", help="KL weight to the reference policy, >= 0 (default 1; 0 has no "
                   "interior fixed point: p runs to 1)")
    p.add_argument(
        "--baseline", default="mean", help="'mean' (GRPO), 'leave_one_out' or 'none' (default mean)"
    )
    p.add_argument("--scale-std", dest="scale_std", action="store_true",
                   help="divide advantages by the group std (+1e-4), as GRPO/TRL do by default")
    p.add_argument("--estimator", default="score", help="'score' (stale score-function gradient, the exact "
                   "delay model) or 'surrogate' (clipped surrogate with importance ratios); default score")
    p.add_argument("--momentum", default="heavy_ball",
                   help="'heavy_ball' (v = mu v + g) or 'ema' (v = mu v + (1 - mu) g); default heavy_ball")
    p.add_argument("--mean-field", dest="mean_field", action="store_true",
                   help="exact expected gradient instead of sampling (deterministic; seeds ignored)")
    p.add_argument("--sweep", choices=("k_ref", "eta"),
                   help="measure the critical k_ref (at --eta, --mu) or eta (at --mu, --k-ref) in mean field")
    p.add_argument(
        "--k-max", dest="k_max", default=None,
        help="largest k_ref tried by --sweep k_ref (default 64, extended past the exact prediction "
        "when that is larger, up to 1024)"
    )
    p.add_argument("--seed", default="0", help="first seed value (seeds are seed, seed+1, ...; default 0)")
    p.add_argument("--out", help="write the trajectories to this CSV file (columns step, seed, p)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.add_argument("--progress", action="store_true", help="always show the progress bar (stderr)")
    p.set_defaults(func=handler)


def _spec(args):
    from grpo_core.bandit import BanditSpec
    from grpo_core.errors import ParameterError
    from grpo_core.validation import check_integer

    g = args.group_size
    if str(g).strip().lower() in ("inf", "infinity"):
        if not args.mean_field and not args.sweep:
            raise ParameterError(
                "group_size", "`group_size` 'inf' needs --mean-field (the G -> infinity limit)"
            )
        g = math.inf
    common = dict(group_size=g, num_prompts=args.num_prompts, baseline=args.baseline,
                  scale="group_std" if args.scale_std else "none", estimator=args.estimator, lag=args.lag,
                  momentum=args.momentum)
    if args.reward_probs:
        try:
            probs = tuple(float(x) for x in args.reward_probs.split(","))
        except ValueError:
            raise ParameterError("reward_probs", "`reward_probs` must be comma-separated numbers in [0, 1]; "
                                 f"got {args.reward_probs!r}") from None
        return BanditSpec(reward_probs=probs, **common)
    arms = check_integer("arms", args.arms, low=2)
    return BanditSpec.binary(arms=arms, correct=args.correct, **common)



def handler(args: argparse.Namespace) -> int:
    import numpy as np

    from grpo_core import bandit
    from grpo_core.bandit import stability as bandit_stability
    from grpo_core.bandit import thresholds as bandit_thresholds
    from grpo_core.errors import ParameterError
    from grpo_core.model.hyperparameters import check_beta
    from grpo_core.validation import check_integer

    spec = _spec(args)
    beta = check_beta(args.beta)
    if args.out is not None and args.sweep:
        raise ParameterError("--out", "`--out` writes one run's trajectories; a --sweep writes none (its table "
                             "is printed; --json prints it as JSON)")
    if args.out is not None and Path(args.out).is_dir():
        raise ParameterError("--out", f"`--out` {args.out!r} is a directory; give a file name (e.g. run.csv)")
    if args.sweep == "k_ref":
        if args.eta is None:
            raise ParameterError("eta", "`eta` is required with --sweep k_ref")
        # the mean-field runs of the search cost ~k_max^2: a bound a machine finishes
        k_max = check_integer("k_max", 64 if args.k_max is None else args.k_max, low=1, high=K_MAX_LIMIT)
        df = bandit_thresholds.critical_k_ref(spec, eta=args.eta, mu=args.mu, beta=beta, k_max=k_max)
        row = df.iloc[0]
        extended = _extended_k_max(row, k_max) if args.k_max is None else None
        if extended is not None:
            # the default search stopped short of the prediction: look past it, so measured and
            # predicted can be compared (the user's own --k-max is kept as given)
            k_max = extended
            row = bandit_thresholds.critical_k_ref(spec, eta=args.eta, mu=args.mu, beta=beta, k_max=k_max).iloc[0]
        out = {"sweep": "k_ref", "eta": row.eta, "mu": row.mu, "lag": spec.lag, "momentum": spec.momentum,
               "estimator": spec.estimator, "beta": beta, "curvature": row.curvature, "a": row.a,
               "measured_critical_k_ref": json_ready(row.measured_critical_k_ref),
               "predicted_continuous": json_ready(row.predicted_continuous),
               "predicted_exact": json_ready(row.predicted_exact), "k_max": int(k_max),
               "k_max_extended": extended is not None,
               "growth_rates": [float(r) for r in row.growth_rates]}
        return _emit(args, out, _sweep_report(out, "k_ref"))
    if args.sweep == "eta":
        if args.eta is not None:
            raise ParameterError(
                "eta", "`eta` is the parameter solved for by --sweep eta: do not also give it"
            )
        res = bandit_thresholds.critical_a(spec, mu=args.mu, k_ref=args.k_ref, beta=beta)
        k = res.curvature
        out = {"sweep": "eta", "mu": float(res.mu[0]), "k_ref": int(res.k_ref[0]), "lag": spec.lag,
               "momentum": spec.momentum, "estimator": spec.estimator, "beta": beta, "curvature": k,
               "measured_critical_eta": json_ready(float(res.measured[0]) / k),
               "predicted_continuous": json_ready(float(res.predicted_continuous[0]) / k),
               "predicted_exact": json_ready(float(res.predicted_exact[0]) / k),
               "measured_critical_a": json_ready(float(res.measured[0])),
               "predicted_continuous_a": json_ready(float(res.predicted_continuous[0])),
               "predicted_exact_a": json_ready(float(res.predicted_exact[0]))}
        return _emit(args, out, _sweep_report(out, "eta"))

    if args.eta is None:
        raise ParameterError("eta", "`eta` is required (a finite number > 0)")
    seeds = check_integer("seeds", args.seeds, low=1, high=bandit.MAX_SEEDS)
    first = check_integer("seed", args.seed, low=0, high=2 ** 32 - seeds)  # numpy's seeds: 32-bit here
    run = bandit.simulate(spec, eta=args.eta, mu=args.mu, k_ref=args.k_ref, beta=beta,
                          steps=args.steps, seeds=np.arange(first, first + seeds), mean_field=args.mean_field,
                          progress=True if args.progress else None)
    fp = bandit.fixed_point(spec, beta)
    final = run.p[0, :, -1]
    overflowed = int(np.count_nonzero(~np.all(np.isfinite(run.p[0]), axis=-1)))
    final = final[np.isfinite(final)]  # seeds that overflowed float64 are counted, not averaged
    out = {
        "eta": float(run.eta[0]),
        "mu": float(run.mu[0]),
        "k_ref": int(run.k_ref[0]),
        "beta": beta,
        "lag": spec.lag,
        "estimator": spec.estimator,
        "momentum": spec.momentum,
        "baseline": spec.baseline,
        "scale": spec.scale,
        "group_size": None if math.isinf(spec.group_size) else int(spec.group_size),
        "num_prompts": spec.num_prompts,
        "arms": spec.num_arms,
        "steps": int(run.steps[-1]),
        "seeds": 1 if args.mean_field else seeds,
        "mean_field": bool(args.mean_field),
        "final_p_mean": float(final.mean()) if final.size else None,
        "final_p_spread": float(final.std(ddof=1)) if final.size > 1 else (0.0 if final.size else None),
        "overflowed_seeds": overflowed,
        # the first step at which a seed's logits left the float range (None: none did)
        "overflow_step": int(run.overflow_step[0][run.overflow_step[0] > 0].min()) if overflowed else None,
        "p_star": fp.p_star,
        "interior_fixed_point": fp.interior,
        "curvature": fp.stiffness if fp.interior else None,
    }
    if fp.interior:
        out["a"] = float(run.eta[0] * fp.stiffness)
        # The regime is read off the deterministic mean-field run with the same settings: the mean of
        # stochastic seeds blurs the phases of a growing oscillation into what looks like damping.
        mf = (
            run
            if args.mean_field
            else bandit.simulate(
                spec,
                eta=run.eta[0],
                mu=run.mu[0],
                k_ref=run.k_ref[0],
                beta=beta,
                steps=args.steps,
                mean_field=True,
            )
        )
        # stable or not from the growth rate and the exact test, the shape from the run
        out.update(bandit_stability.run_regimes(spec, eta=float(run.eta[0]), mu=float(run.mu[0]),
                                                k_ref=int(run.k_ref[0]), beta=beta, trajectory=mf.p[0, 0],
                                                p_star=fp.p_star, curvature=fp.stiffness))
    if args.out:
        import pandas as pd

        frame = pd.DataFrame({"step": np.tile(run.steps, run.p.shape[1]),
                              "seed": np.repeat(run.seeds, run.steps.size),
                              "p": run.p[0].reshape(-1)})
        frame.to_csv(args.out, index=False)
        out["out"] = args.out
    return _emit(args, out, _run_report(out))


def _from_step(o: dict) -> str:
    """`` (logits past 1.8e308; the first at step N)`` for a run that says when it overflowed."""
    step = o.get("overflow_step")
    return f" (logits past 1.8e308; the first at step {step})" if step else ""


def _emit(args, out: dict, report: str) -> int:
    if args.json:
        print(json.dumps(out, allow_nan=False))
    else:
        print(report)
    return 0


#: Largest k_ref the default --sweep k_ref extends its search to (the mean-field runs cost ~k_max^2).
K_MAX_EXTENDED = 1024
#: Largest --k-max accepted.
K_MAX_LIMIT = 4096


def _extended_k_max(row, k_max: int) -> int | None:
    """A larger search bound when nothing unstable was found up to ``k_max`` but the exact
    prediction lies beyond it (a quarter past the prediction, at most K_MAX_EXTENDED); else None."""
    pred = row.predicted_exact
    if math.isfinite(row.measured_critical_k_ref) or not math.isfinite(pred) or pred <= k_max:
        return None
    return min(K_MAX_EXTENDED, math.ceil(1.25 * pred))


def _fmt(x) -> str:
    return "none (stable at every value)" if x is None else f"{x:.4g}"


def _fmt_k(x, k_max: int) -> str:
    """The measured critical k_ref: a value, or "> k_max" when the search found none."""
    return f"> {k_max} (none unstable up to --k-max {k_max})" if x is None else f"{x:.4g}"


def _run_report(o: dict) -> str:
    lines = [
        f"softmax bandit: {o['arms']} arms, "
        f"G = {'inf' if o['group_size'] is None else int(o['group_size'])}, "
        f"B = {o['num_prompts']}, baseline {o['baseline']}, scale {o['scale']}, {o['estimator']} gradient, "
        f"{o['lag']} lag, {o['momentum']} momentum",
        f"eta = {_exact(o['eta'])}, mu = {_exact(o['mu'])}, k_ref = {o['k_ref']}, "
        f"beta = {_exact(o['beta'])}, {o['steps']} steps x {o['seeds']} seed(s)"
        f"{' (mean field)' if o['mean_field'] else ''}",
    ]
    if o["final_p_mean"] is not None:
        lines.append(
            f"final p: {o['final_p_mean']:.4f} (spread over seeds {o['final_p_spread']:.4f})"
            + (f"; {o['overflowed_seeds']} more seed(s) overflowed{_from_step(o)}" if o["overflowed_seeds"] else "")
        )
    else:
        lines.append(f"final p: none, the run diverged: every seed overflowed float64{_from_step(o)}, unstable")
    if o["interior_fixed_point"]:
        lines += [
            f"fixed point p* = {o['p_star']:.4f}, stiffness K = {o['curvature']:.4g}, "
            f"a = eta K = {o['a']:.4g}",
            f"regime: measured {o['regime_measured'] or 'not classified (fewer than 8 points, step 0 included)'} "
            f"(mean-field run; growth rate {o['growth_rate_measured']:+.3g} per step); oscillator predicts "
            f"{o['regime_continuous']} (continuous), {o['regime_exact']} (exact recurrence: "
            f"{'stable' if o['stable_exact'] else 'unstable'})",
            "  (stable or not from the growth rate and the exact test; the shape from the run)",
        ]
    else:
        lines.append(f"no interior fixed point: p runs to {o['p_star']:.4g} (increase --beta)")
    if "out" in o:
        lines.append(f"trajectories written to {o['out']}")
    return "\n".join(lines)


def _sweep_report(o: dict, what: str) -> str:
    if what == "k_ref":
        return "\n".join(
            [
                f"critical k_ref at eta = {_exact(o['eta'])}, mu = {_exact(o['mu'])} ({o['lag']} lag, "
                f"{o['estimator']} gradient, {o['momentum']}); "
                f"K = {o['curvature']:.4f}, a = eta K = {o['a']:.4g}",
                f"measured (mean-field bandit, smallest unstable k_ref <= {o['k_max']}"
                f"{', search extended past the prediction' if o['k_max_extended'] else ''}): "
                f"{_fmt_k(o['measured_critical_k_ref'], o['k_max'])}",
                f"predicted: continuous {_fmt(o['predicted_continuous'])}, exact discrete "
                f"{_fmt(o['predicted_exact'])}",
            ]
        )
    return "\n".join(
        [
            f"critical eta at mu = {_exact(o['mu'])}, k_ref = {o['k_ref']} ({o['lag']} lag, "
            f"{o['estimator']} gradient, {o['momentum']}); K = {o['curvature']:.4f}",
            f"measured: eta* = {_fmt(o['measured_critical_eta'])} (a* = eta* K = "
            f"{_fmt(o['measured_critical_a'])})",
            f"predicted: continuous {_fmt(o['predicted_continuous'])}, exact discrete "
            f"{_fmt(o['predicted_exact'])}",
        ]
    )
