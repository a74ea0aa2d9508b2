"""``grpo-dynamics advise``: regime, time to the plateau and stability thresholds for a setting.

Example::

    grpo-dynamics advise --eta 0.01 --mu 0.9 --k-ref 4 --curvature 1
    grpo-dynamics advise --eta 3e-4 --mu 0.9 --k-ref 8 --curvature 20 --momentum ema --json
"""

from __future__ import annotations

import argparse
import json


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "advise",
        help="regime, damping ratio, time to 90%% of the plateau and both stability thresholds",
        description=(
            "Apply the damped-oscillator model of GRPO to one hyperparameter setting: the regime and "
            "damping ratio of the continuous model, the time to 90% of the reward plateau, the "
            "continuous (paper) threshold eta*K*K_ref < 1 - mu and the exact threshold of the discrete "
            "update, and a recommendation (largest stable eta and k_ref, critically damped eta). "
            "Values are read as given: eta is the step size, K the curvature of the effective "
            "potential in the same units."
        ),
    )
    p.add_argument("--eta", required=True, help="step size (learning rate), > 0")
    p.add_argument(
        "--mu", required=True, help="momentum coefficient in [0, 1) (Adam's beta1 with --momentum ema)"
    )
    p.add_argument("--k-ref", dest="k_ref", required=True,
                   help="refresh interval of the behaviour policy, in optimizer steps (integer >= 1; at most "
                        "1024 with --lag constant, whose growth factor is a degree k_ref + 1 eigenproblem)")
    p.add_argument("--curvature", required=True, help="curvature K of the effective potential, > 0")
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
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from grpo_core.model.advice import advise

    adv = advise(
        args.eta, args.mu, args.k_ref, args.curvature, args.beta,
        kl_curvature=args.kl_curvature, lag=args.lag, momentum=args.momentum,
    )
    if args.json:
        print(json.dumps(adv.as_dict(), allow_nan=False))
    else:
        print(adv.summary())
    return 0
