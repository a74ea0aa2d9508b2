"""``grpo-dynamics groupsize``: the optimal group size G* under a fixed rollout budget.

From known constants, or estimated from per-completion score vectors and rewards::

    grpo-dynamics groupsize --c1 0.0034 --c2 0.085 --c3 0.157 --budget 1024
    grpo-dynamics groupsize --samples groups.npz --budget 1024 --json

Every G from 2 to N (or ``--max-group-size``) that divides N is a candidate, not only the powers of
two: B = N/G prompts must be whole, as TRL asks the generation batch to be divisible by
``num_generations``; the report lists the candidates it considered.

The ``.npz`` file holds ``scores`` (P prompts x G completions x D, each completion's
log-probability gradient or a fixed random projection of it) and ``rewards`` (P x G); G >= 3.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings

from grpo_core._json import json_ready
from grpo_core.errors import DataError, ParameterError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "groupsize",
        help="optimal group size G* and the gradient MSE against G at a fixed rollout budget",
        description=(
            "The minibatch gradient's mean squared error with B prompts of G completions is "
            "(c1 + c2/G + c3/(G(G-1)))/B (leave-one-out advantages). At a fixed budget N = B G it is "
            "smallest at G* = 1 + sqrt(c3/c1), whatever N. Give the constants, or a file of "
            "per-completion score vectors and rewards to estimate them (with bootstrap intervals)."
        ),
    )
    p.add_argument(
        "--budget", default=None, help="rollouts (completions) per optimizer step N, integer in [2, 2**53] (required)"
    )
    # a training log given here is answered with what groupsize reads instead (argparse said only "--budget
    # is required")
    p.add_argument("stray", nargs="?", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--max-group-size", dest="max_group_size", default=None, metavar="G",
        help="largest G to consider (e.g. what fits in memory), integer in [2, N]; default N. Every divisor "
             "of N from 2 to it is considered: B = N/G prompts must be whole (TRL asks the generation batch "
             "to be divisible by num_generations)",
    )
    p.add_argument("--c1", help="between-prompt variance of the true gradient, >= 0")
    p.add_argument("--c2", help="mean oracle (within-prompt) variance, >= 0")
    p.add_argument("--c3", help="second-order constant E[E||W||^2 Var(Z) + ||g||^2], >= 0")
    p.add_argument(
        "--samples", help=".npz file with arrays 'scores' (P x G x D) and 'rewards' (P x G), G >= 3"
    )
    p.add_argument(
        "--bootstrap", default=None, help="bootstrap resamples for --samples (default 1000; 0: none; at most 100000)"
    )
    p.add_argument("--confidence", default=None, help="with --samples: level of the bootstrap intervals (default 0.9)")
    p.add_argument("--seed", default=None, help="with --samples: seed of the bootstrap (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    import numpy as np

    from grpo_core import groupsize
    from grpo_core.validation import check_integer, check_real

    if args.stray is not None:
        raise ParameterError("groupsize", f"groupsize reads no training log (got {args.stray!r}): give the rollout "
                             "budget `--budget N` and the constants `--c1 --c2 --c3`, or `--samples FILE.npz` of "
                             "per-completion score vectors and rewards to estimate them")
    if args.budget is None:
        raise ParameterError("budget", "`--budget` is required: the rollouts (completions) per optimizer step N, "
                             "an integer in [2, 2**53]")
    budget = check_integer("budget", args.budget, low=2, high=groupsize.MAX_BUDGET)
    max_g = budget if args.max_group_size is None else check_integer(
        "--max-group-size", args.max_group_size, low=2, high=budget)
    given = [args.c1 is not None, args.c2 is not None, args.c3 is not None]
    if args.samples is not None and any(given):
        raise ParameterError("samples", "give either `--samples` or `--c1/--c2/--c3`, not both")
    loose = [flag for flag, v in (("--bootstrap", args.bootstrap), ("--confidence", args.confidence),
                                  ("--seed", args.seed)) if v is not None]
    if args.samples is None and loose:
        raise ParameterError(loose[0].lstrip("-"), f"{', '.join(loose)} set(s) the bootstrap of constants estimated "
                             "from `--samples`; with `--c1/--c2/--c3` given there is no bootstrap")
    args.bootstrap = "1000" if args.bootstrap is None else args.bootstrap
    args.confidence = "0.9" if args.confidence is None else args.confidence
    args.seed = "0" if args.seed is None else args.seed
    if args.samples is None and not all(given):
        raise ParameterError(
            "c1", "give `--c1`, `--c2` and `--c3` (or `--samples FILE.npz` to estimate them)"
        )
    if args.samples is not None:
        scores, rewards = _load_samples(args.samples)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="every group has zero reward spread")  # said below
            k = groupsize.estimate_constants(
                scores, rewards, num_bootstrap=check_integer("bootstrap", args.bootstrap, low=0,
                                                        high=groupsize.estimate.MAX_BOOTSTRAP),
                confidence=check_real("confidence", args.confidence, low=0.0, high=1.0, low_inclusive=False,
                                      high_inclusive=False),
                seed=check_integer("seed", args.seed, low=0),
            )
        r = np.asarray(rewards, dtype=float)
        if np.all(r == r[:, :1]):
            raise DataError(
                f"every group in {args.samples} has zero reward spread ({r.shape[0]} groups): the "
                "samples carry no gradient signal and the constants c1, c2, c3 cannot be estimated"
            )
    else:
        k = groupsize.GroupSizeConstants(
            c1=check_real("c1", args.c1, low=0.0), c2=check_real("c2", args.c2, low=0.0),
            c3=check_real("c3", args.c3, low=0.0),
        )
    # every divisor of N (not only powers of two: 1000 rollouts allow G = 40, B = 25)
    candidates = groupsize.group_size_candidates(budget, high=max_g)
    best = groupsize.best_group_size(budget, max(k.c1, 0.0), k.c2, max(k.c3, 0.0), candidates=candidates)
    g = np.array(candidates, dtype=float)
    mse = groupsize.minibatch_mse(g, max(k.c1, 0.0), k.c2, max(k.c3, 0.0),
                                  num_prompts=[budget // c for c in candidates])
    low = float(mse.min())
    # all constants 0: every G has MSE 0, each as good as the best (0/0 printed 'nanx' with a warning)
    table = [
        {"group_size": int(gi), "num_prompts": budget // int(gi), "mse": float(m),
         "relative_to_best": 1.0 if m == low else float(m) / low if low > 0 else math.inf}
        for gi, m in zip(g, mse)
    ]
    out = k.as_dict() | {"budget": budget, "max_group_size": max_g, "candidates": candidates,
                         "best_group_size": best, "table": table}
    # one name, one meaning, as in the text report: G* = 1 + sqrt(c3/c1); the library's leading-order
    # sqrt(c3/c1) (its `g_star`) is written under its own name
    names = {"g_star": "g_star_leading_order", "g_star_exact": "g_star"}
    out = {names.get(key, key): value for key, value in out.items()}
    out["intervals"] = {names.get(key, key): value for key, value in out["intervals"].items()}
    if args.json:
        print(json.dumps(json_ready(out), allow_nan=False))
    else:
        print(_report(k, budget, best, table, _considered(budget, max_g, candidates)))
    return 0


def _load_samples(path: str):
    import os
    import zipfile

    import numpy as np

    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise DataError(f"`samples`: {path} is not a .npz file (write one with "
                        "numpy.savez(path, scores=scores, rewards=rewards))")
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        why = "it holds Python objects, which are not loaded" if "pickle" in str(exc) else str(exc)
        raise DataError(f"`samples`: cannot read {path} as a .npz file of arrays ({why})") from None
    missing = [key for key in ("scores", "rewards") if key not in getattr(data, "files", [])]
    if missing:
        raise DataError(
            f"`samples`: {path} lacks array(s) {missing} (need 'scores' P x G x D and 'rewards' P x G)"
        )
    try:
        return data["scores"], data["rewards"]
    except (ValueError, OSError, zipfile.BadZipFile) as exc:  # object arrays, a damaged member
        why = "it holds Python objects, which are not loaded" if "pickle" in str(exc) else str(exc)
        raise DataError(f"`samples`: cannot read the arrays of {path} ({why})") from None



#: Most rows of the text table; a budget with more divisors shows the ends and the rows around the best.
MAX_ROWS = 20


def _considered(budget: int, max_g: int, candidates: list[int]) -> str:
    """Which G were considered, in words, with the list (its ends only when long)."""
    shown = candidates if len(candidates) <= MAX_ROWS else candidates[:5] + ["..."] + candidates[-2:]
    upto = f"from 2 to {max_g}" if max_g < budget else "from 2 to N"
    plural = "s" if len(candidates) != 1 else ""
    return (f"the {len(candidates)} divisor{plural} G of N = {budget} {upto} (B = N/G prompts must be whole): "
            + ", ".join(str(c) for c in shown))


def _report(k, budget: int, best: int, table: list[dict], considered: str) -> str:
    def star(x: float) -> str:
        if math.isfinite(x):
            return f"{x:.2f}"
        if k.c1 > 0:  # c3/c1 beyond the float range: G* exceeds any budget
            return "beyond 1.8e308 (c3/c1 overflows float64; G* exceeds any budget: one prompt per step)"
        return "inf (no between-prompt variance: one prompt per step)"

    source = (
        f" (estimated from {k.num_prompts} prompts x {k.group_size} completions)" if k.num_prompts else ""
    )
    lines = [f"constants{source}:"]
    for name in ("c1", "c2", "c3"):
        value = getattr(k, name)
        ci = k.intervals.get(name)
        extra = f"   {100 * k.confidence:.0f}% interval [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
        lines.append(f"  {name} = {value:.4g}{extra}")
    ci = k.intervals.get("g_star_exact")
    extra = f"   {100 * k.confidence:.0f}% interval [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else ""
    lines.append(
        f"G* = 1 + sqrt(c3/c1) = {star(k.g_star_exact)}{extra}   (leading order sqrt(c3/c1) = {k.g_star:.2f})"
    )
    lines.append(f"considered: {considered}")
    lines.append(f"best of them: G = {best} (B = {budget // best} prompts per step)")
    lines.append("")
    lines.append(f"{'G':>6} {'B':>6} {'MSE':>12} {'vs best':>8}")
    rows = list(range(len(table)))
    if len(table) > MAX_ROWS:  # the ends and the rows around the best
        i = next(j for j, row in enumerate(table) if row["group_size"] == best)
        around = range(max(i - 6, 0), min(i + 7, len(table)))
        rows = sorted({0, 1, len(table) - 2, len(table) - 1, *around})
    last = -1
    for j in rows:
        if j > last + 1:
            lines.append(f"{'...':>6}")
        last = j
        row = table[j]
        mark = "  <- best" if row["group_size"] == best else ""
        lines.append(
            f"{row['group_size']:>6} {row['num_prompts']:>6} {row['mse']:>12.4g} "
            f"{row['relative_to_best']:>7.2f}x{mark}"
        )
    if len(rows) < len(table):
        lines.append(f"({len(rows)} of the {len(table)} candidates shown; --json lists every one)")
    return "\n".join(lines)
