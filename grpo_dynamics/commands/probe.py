"""``grpo-dynamics probe``: measure the starting policy's curvature and predict the critical learning rates.

Builds the preset's starting policy (the tiny model's warm-up, or reads it from ``--warmup-cache``),
samples a fixed batch of groups and runs :func:`grpo_core.llm.probe.probe_policy`::

    grpo-dynamics probe --preset cpu-tiny --seed 0 --groups 32 --iters 10 --json

Prints the sharpness (top Hessian eigenvalue of the GRPO surrogate, plain and Adam-preconditioned),
the reward-direction curvature K with its interval, the predicted critical learning rates (SGD with
heavy-ball momentum 0.9, Adam with beta1 0.9, and at num_iterations 4) and the time to 90% of the
plateau at the preset's learning rate; ``--json`` prints the whole result (as ``probe.json``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from ._presetargs import add_preset_parser


def register(subparsers) -> None:
    """Add the ``probe`` sub-command."""
    p = add_preset_parser(
        subparsers, "probe", __doc__,
        summary="measure the starting policy's sharpness and curvature K; predict critical learning rates",
        preset_help="preset name (default cpu-tiny; the tiny model only)",
        param_help="override one setting of the preset (repeatable), e.g. -p temperature 1.5",
    )
    p.add_argument("--seed", default=None, help="seed of the starting model and the probe (default: the preset's)")
    p.add_argument("--groups", default=None, help="prompts (groups) per batch (default: the preset's prompts per step)")
    p.add_argument("--iters", default=None, help="Lanczos iterations per eigenvalue (default: probe_iters, 10)")
    p.add_argument("--repeats", default=None, help="independent K measurements (default: probe_repeats, 4)")
    p.add_argument("--steps", default=None, help="SGD steps per K measurement (default: probe_steps, 2)")
    p.add_argument("--warmup-cache", default="", help="folder of cached warmed-up models (default: warm up now)")
    p.add_argument("--json", action="store_true", help="print the whole result as one JSON object")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from grpo_core.llm.config import check_environment, make_config
    from grpo_core.llm.policy import build_policy
    from grpo_core.llm.probe import probe_policy
    from grpo_core.llm.runs import run_name
    from grpo_core.llm.session import RunContext

    overrides = dict(args.param)
    for key, value in (("seed", args.seed), ("probe_groups", args.groups), ("probe_iters", args.iters),
                       ("probe_repeats", args.repeats), ("probe_steps", args.steps)):
        if value is not None:
            overrides[key] = value
    if args.warmup_cache:
        overrides["warmup_cache"] = str(Path(args.warmup_cache).resolve())
    cfg = make_config(args.preset, **overrides, probe=True)
    with tempfile.TemporaryDirectory(prefix="grpo-probe-") as tmp:
        ctx = RunContext(path=Path(tmp), name=run_name(cfg), device=check_environment(cfg))
        model, tokenizer = build_policy(cfg, ctx)
        result = probe_policy(model, tokenizer, cfg, groups=cfg.probe_groups, iters=cfg.probe_iters,
                              repeats=cfg.probe_repeats, steps=cfg.probe_steps)
    if args.json:
        print(result.to_json(indent=None))
        return 0
    print(_report(result.to_dict(), cfg))
    return 0


def _num(x, fmt: str = ".3g") -> str:
    return "n/a" if x is None else format(x, fmt)


def _report(r: dict, cfg) -> str:
    s, c, pr = r["sharpness"], r["curvature"], r["predictions"]
    sgd, adam, t90 = pr["sgd_momentum"], pr["adam"], pr["t90"]
    ki, kai = c["k_interval"], c["k_adam_interval"]
    lines = [
        f"probe of {cfg.preset} (seed {r['settings']['seed']}): {r['settings']['groups']} prompts x "
        f"G = {r['settings']['group_size']}, {s['iters']} Lanczos steps, {len(c['k_repeats'])} repeats; "
        f"{_num(r['seconds']['total'], '.1f')} s",
        f"expected reward p0 = {_num(c['reward'], '.3f')} (sampled batch: {_num(c['batch_reward'], '.3f')}); "
        f"gradient norm {_num(c['grad_norm'])}",
        f"sharpness: top Hessian eigenvalue {_num(s['top'])}; Adam-preconditioned {_num(s['top_adam'])}",
        f"K (SGD direction) = {_num(c['k'])} [{_num(ki[0])}, {_num(ki[1])}]; finite-step {_num(c['k_steps'])}; "
        f"K (Adam direction) = {_num(c['k_adam'])} [{_num(kai[0])}, {_num(kai[1])}]",
        f"SGD + heavy ball (mu 0.9): eta* = {_num(sgd['eta_crit'])} (model, refresh lag), "
        f"{_num(sgd['eta_crit_constant_lag'])} (constant lag 1), {_num(sgd['eta_crit_sharpness'])} (sharpness); "
        f"with clipping at {cfg.max_grad_norm:g}: x{_num(sgd['clip_scale'])}",
        f"Adam (b1 0.9): eta* = {_num(adam['eta_crit'])} (model, refresh lag), "
        f"{_num(adam['eta_crit_constant_lag'])} (constant lag 1), {_num(adam['eta_crit_sharpness'])} "
        "(edge of stability, Cohen et al. 2022)",
    ]
    for name, d in (("SGD", sgd), ("Adam", adam)):
        four = d.get("num_iterations_4") or {}
        if four:
            lines.append(f"num_iterations 4 ({name}): eta* x{_num(four['ratio'])} (refresh lag), "
                         f"x{_num(four['ratio_constant_lag'])} (constant lag)")
    lines.append(f"t90 at lr {t90['learning_rate']:g} ({t90['optimizer']}): {_num(t90['steps'])} steps "
                 f"(gain eta K = {_num(t90['gain'])})")
    return "\n".join(lines)


__all__ = ["register", "handler"]
