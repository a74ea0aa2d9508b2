"""``grpo-dynamics advise``: regime, time to the plateau and stability thresholds for a setting.

Example::

    grpo-dynamics advise --eta 0.01 --mu 0.9 --k-ref 4 --curvature 1
    grpo-dynamics advise --eta 3e-4 --mu 0.9 --k-ref 8 --curvature 20 --momentum ema --json
    grpo-dynamics advise --from-log trainer_state.json --config training_args.json

With ``--curvature`` the output is a what-if: ``K`` is assumed, not measured, and the text and JSON say
so (:data:`grpo_core.runs.curvature.ASSUMED_K_CAVEAT`, with the factor by which the threshold built on
a reward curve's ``K`` was too permissive on a transformer). With ``--from-log`` the log gives the
reward's time scale (``eta*K`` per step, ``K`` per unit learning rate, t90, with their intervals:
:mod:`grpo_core.runs.curvature`) under the conventions of the run's config
(:mod:`grpo_core.runs.settings`; TRL's defaults when none is found: Adam -> EMA momentum
``mu = beta1 = 0.9``, refresh lag over the optimizer steps one generation batch serves), and no
stability verdict: a reward curve does not contain the curvature that limits the step.
"""

from __future__ import annotations

import argparse
import json
import textwrap

from ._logargs import add_log_arguments, mapping


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "advise",
        help="what if the curvature were K: regime, time to 90%% and both stability thresholds at an assumed K; "
             "with --from-log, a run's reward time scale (no stability verdict)",
        description=(
            "Apply the damped-oscillator model of GRPO to one hyperparameter setting: the regime and "
            "damping ratio of the continuous model, the time to 90% of the reward plateau, the "
            "continuous (paper) threshold eta*K*K_ref < 1 - mu and the exact threshold of the discrete "
            "update, and a recommendation. Values are read as given: eta is the step size, K the "
            "curvature of the effective potential in the same units, assumed, not measured (a what-if; "
            "the output says how far the threshold built on a reward curve's K was from a transformer's "
            "measured edge). With --from-log: the reward's time scale eta*K, K and t90 read off a log, "
            "with no stability verdict."
        ),
    )
    p.add_argument("--eta", default=None, help="step size (learning rate), > 0")
    p.add_argument("--mu", default=None, help="momentum coefficient in [0, 1) (Adam's beta1 with --momentum ema)")
    p.add_argument("--k-ref", dest="k_ref", default=None,
                   help="refresh interval of the behaviour policy, in optimizer steps (integer >= 1; at most "
                        "1024 with --lag constant, whose growth factor is a degree k_ref + 1 eigenproblem)")
    p.add_argument("--curvature", default=None, help="curvature K of the effective potential, > 0")
    p.add_argument("--beta", default="0", help="KL weight to the reference policy, >= 0 (default 0)")
    p.add_argument("--kl-curvature", dest="kl_curvature", default="1",
                   help="curvature of the KL term along the direction of motion, > 0 (default 1: "
                        "Fisher-normalised coordinates)")
    p.add_argument(
        "--lag",
        default="constant",
        help="lag model: 'constant' (every gradient k_ref steps old, the paper's model; k_ref = 1 "
        "is one step stale) or 'refresh' (behaviour policy refreshed every k_ref steps: TRL's "
        "reuse of a generation batch, k_ref = 1 on-policy); default constant",
    )
    p.add_argument("--momentum", default="heavy_ball",
                   help="momentum convention: 'heavy_ball' (v = mu v + g) or 'ema' (v = mu v + (1-mu) g, "
                        "Adam); default heavy_ball")
    p.add_argument("--from-log", dest="from_log", default=None, metavar="LOG",
                   help="read the reward's time scale off a training log instead of --curvature: eta*K per step, "
                        "K per unit learning rate and t90 with their intervals, and the regime of the fitted "
                        "curve; no stability verdict (a reward curve does not give one)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="with --from-log: the run's settings (TRL GRPOConfig/TrainingArguments JSON, "
                        "trainer_state.json, a real run's meta.json); default: a meta.json/config.json beside "
                        "the log, else TRL's defaults")
    p.add_argument("--ignore-config", action="store_true",
                   help="with --from-log: ignore a meta.json/config.json/training_args.json beside the log "
                        "(another tool's file); use TRL's defaults unless --config is given")
    p.add_argument("--metric", default="reward", help="with --from-log: the curve to fit (default reward)")
    p.add_argument("--interval", default="delta", choices=("delta", "bootstrap"),
                   help="with --from-log: interval of eta*K from the fit's covariance (default) or a residual "
                        "block bootstrap")
    p.add_argument("--level", default="0.9", help="with --from-log: interval coverage in (0, 1); default 0.9")
    add_log_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from grpo_core.errors import ParameterError
    from grpo_core.model.advice import advise

    if args.from_log is not None:
        return _from_log(args)
    if args.config is not None or args.ignore_config:
        raise ParameterError("config", "`--config` and `--ignore-config` name the settings of a logged run: "
                             "they need `--from-log LOG`")
    for flag, value in (("--eta", args.eta), ("--mu", args.mu), ("--k-ref", args.k_ref),
                        ("--curvature", args.curvature)):
        if value is None:
            raise ParameterError(flag.lstrip("-").replace("-", "_"),
                                 f"`{flag}` is required (or read the run from its log with --from-log LOG)")
    from grpo_core.runs.curvature import ASSUMED_K_CAVEAT

    adv = advise(
        args.eta, args.mu, args.k_ref, args.curvature, args.beta,
        kl_curvature=args.kl_curvature, lag=args.lag, momentum=args.momentum,
    )
    if args.json:
        # the model's numbers unchanged, and what they are: a what-if at an assumed K
        print(json.dumps({**adv.as_dict(), "domain": "assumed_curvature", "caveat": ASSUMED_K_CAVEAT},
                         allow_nan=False))
    else:
        print(textwrap.fill(ASSUMED_K_CAVEAT, width=100, break_on_hyphens=False))  # the report's lines stay short
        print(adv.summary())
    return 0


def _from_log(args: argparse.Namespace) -> int:
    from grpo_core.errors import ParameterError
    from grpo_core.runs import curvature, settings
    from grpo_core.runs.logs import read_log

    if args.curvature is not None:
        raise ParameterError("curvature", "`--curvature` and `--from-log` exclude each other: the log gives K")
    log = read_log(args.from_log, format=args.format, mapping=mapping(args.map), trl_version=args.trl_version,
                   run=args.run)
    found = settings.settings_for_log(args.from_log, args.config, ignore_beside=args.ignore_config)
    out = curvature.advise_from_log(log, found, metric=args.metric, eta=args.eta, method=args.interval,
                                    level=args.level)
    caveat = _not_a_relaxation(log) if args.metric == "reward" else None
    if args.json:
        d = out.as_dict()
        d["log"], d["settings"] = str(args.from_log), found.as_dict()
        d["caveat"] = caveat
        print(json.dumps(d, allow_nan=False))
    else:
        print(f"{args.from_log}: settings from {found.source}")
        print(out.summary())
        if caveat:
            print(f"Caveat: {caveat}")
    return 0


def _not_a_relaxation(log) -> str | None:
    """diagnose's caveat (:func:`grpo_core.runs.diagnostics.diagnose.not_a_relaxation`) when the reward fell
    (or rose, then fell) over the log: the time scale and regime above come from a relaxation fitted to a
    curve that is not one (real run 36), so they say nothing about the fall."""
    from grpo_core.errors import GrpoError
    from grpo_core.runs.diagnostics import not_learning
    from grpo_core.runs.diagnostics.diagnose import not_a_relaxation

    try:
        return not_a_relaxation(not_learning(log))
    except GrpoError:
        return None
