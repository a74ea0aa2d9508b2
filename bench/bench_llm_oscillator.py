"""The oscillator in its own domain on a transformer: threshold and ringing predicted, then measured.

The ``cpu-dynamics`` transformer (the warmed-up model every ``cpu-dynamics`` run starts from) is
trained by the lab loop (:mod:`grpo_core.llm.lab`: TRL's GRPO loss with a KL anchor, the mean
baseline, a behaviour policy refreshed every ``K_ref`` steps, with or without the importance ratio).
Stages, each written to ``book/experiments/runs/oscillator-lab/`` before the next runs:

``prepare``
    1. *Plateau*: AdamW from the warm-up, on-policy, ``beta = BETA``, until the exact expected reward
       settles at an interior ``p*``; ``p*`` and its spread from ``HOLD_SEEDS`` continuations.
    2. *Displacement*: a few AdamW steps on the flipped reward push ``p`` below ``p*``; every later
       run starts there, the optimizer fresh (AdamW's second moment primed at the start).
    3. *Relaxation*: on-policy returns from the displaced start, for SGD and AdamW, at two learning
       rates each, several seeds; ``K`` from the momentum recurrence (``e_{t+1} - (1 + mu) e_t +
       mu e_{t-1} = -g e_t``, ``g = eta K`` for heavy ball, ``(1 - mu) eta K`` for EMA).
    4. *Probe*: the sharpness (top Hessian eigenvalue of the loss, and Adam-preconditioned) at the
       plateau.
    5. *Predictions* (``predictions.json``, written before any sweep run): the oscillator's critical
       learning rate per optimizer, mode and ``K_ref``, the critical-damping rate, the edge of the
       sharpness, which fires first and where they cross, and the ladder of learning rates the sweep
       will run.
``sweep``
    Every (optimizer, mode, ``K_ref``, learning rate) of the ladder, ``SWEEP_SEEDS`` seeds, from the
    displaced start; each run's trace appended to ``traces.jsonl`` (resumable).
``predict-frozen``, ``sweep-frozen``
    The frozen mode (the whole gradient taken at the behaviour policy: the model's lag exactly), added after
    the first sweep showed the stale mode stable far above its prediction: its predictions (the stale
    formula) are registered in ``predictions_frozen.json`` before its sweep runs.
``extend``
    Brackets the ladder left open, continued by a factor 2.5 per round (not registered; labelled so).
``ablation``
    The group-size ablation: ``G`` in {4, 16} at a fixed prompts per step, {std-scaled, mean baseline}
    x {AdamW, SGD}, ``beta = 0`` from the warm-up (the setting where TRL's runs ended apart).

``python -m bench.bench_llm_oscillator STAGE [--jobs N]``. Warmed-up model and
weights stay in ``--work`` (not committed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "book" / "experiments" / "runs" / "oscillator-lab"

BETA = 0.1
POOL = {"task": "add2", "n": 128, "seed": 123, "split": "train"}
PLATEAU = {"optimizer": "adamw", "learning_rate": 3e-4, "momentum": 0.9, "steps": 600, "seed": 0}
HOLD = {"optimizer": "adamw", "learning_rate": 1e-4, "momentum": 0.9, "steps": 60}
HOLD_SEEDS = (1, 2, 3)
DISPLACE = {"optimizer": "adamw", "learning_rate": 5e-5, "momentum": 0.9, "steps": 3, "seed": 0, "flip": True}
#: The displacement: chunks of DISPLACE until p is this far below p* (at most DISPLACE_CHUNKS chunks).
DISPLACEMENT = 0.2
DISPLACE_CHUNKS = 20
MU = 0.9
RELAX_STEPS = 40
RELAX_SEEDS = (0, 1, 2)
#: Learning rates of the first-order returns (two per optimizer: K per unit rate should not depend on it).
RELAX_ETAS = {"sgd": (0.005, 0.01), "adamw": (1e-4, 2e-4)}
#: The returns are fitted while the gap exceeds this (about 10 times the plateau's noise).
RELAX_FLOOR = 0.05
K_REFS = (1, 4, 16, 64)
MODES = ("stale", "ratio")
OPTIMIZERS = ("sgd", "adamw")
#: The ladder: multiples of the predicted critical learning rate.
LADDER = (0.4, 0.63, 1.0, 1.6, 2.5)
SWEEP_SEEDS = (0,)


def steps_for(k_ref: int) -> int:
    """Sweep run length: at least 120 steps and five refresh cycles."""
    return max(120, 5 * int(k_ref))


def _lab(work: Path):
    import torch

    from grpo_core.llm.lab import Lab, warmed_policy
    from grpo_core.llm.tasks import sample_problems

    torch.set_num_threads(1)
    model, tok = warmed_policy(cache=str(work / "warmup-cache"))
    pool = sample_problems(POOL["task"], POOL["n"], seed=POOL["seed"], split=POOL["split"], replace=False)
    return Lab(model, model, tok, pool)


def _write(path: Path, obj) -> None:
    from grpo_core.llm.runs import write_json

    write_json(path, obj)


def _read(path: Path):
    return json.loads(path.read_text())


# ---------------------------------------------------------------------------------------------
def _displace(lab, plateau, p_star):
    from grpo_core.llm.lab import LabSettings

    displaced, pushes = plateau, []
    for chunk in range(DISPLACE_CHUNKS):
        d, displaced = lab.train(LabSettings(beta=BETA, **{**DISPLACE, "seed": chunk}), displaced)
        pushes.append(d.to_dict())
        if d.p[-1] <= p_star - DISPLACEMENT:
            break
    return displaced, pushes


def prepare(work: Path) -> None:
    import torch

    from grpo_core.llm.lab import LabSettings
    from grpo_core.llm.lab_analysis import lab_predictions
    from grpo_core.llm.runs import provenance

    OUT.mkdir(parents=True, exist_ok=True)
    lab = _lab(work)
    t0 = time.perf_counter()
    stages: dict = {"beta": BETA, "pool": POOL, "p_warmup": lab.expected(lab.model)}
    # 1. plateau
    partial = work / "plateau_stage.json"
    if partial.exists() and (work / "plateau.pt").exists():   # resume: the plateau and holds are kept
        plateau = torch.load(work / "plateau.pt")
        stages["plateau_run"], holds = _read(partial)
    else:
        tr, plateau = lab.train(LabSettings(beta=BETA, **PLATEAU), progress=True)
        torch.save(plateau, work / "plateau.pt")
        stages["plateau_run"] = tr.to_dict()
        holds = []
        for seed in HOLD_SEEDS:
            h, _ = lab.train(LabSettings(beta=BETA, seed=seed, **HOLD), plateau)
            holds.append(h.to_dict())
        _write(partial, [stages["plateau_run"], holds])
    tails = np.array([h["p"][-40:] for h in holds])
    p_star = float(tails.mean())
    noise = float(np.sqrt(np.mean((tails - tails.mean(1, keepdims=True)) ** 2)))
    stages.update(hold_runs=holds, p_star=p_star, p_star_seeds=tails.mean(1).tolist(), noise=noise)
    print(f"plateau p* = {p_star:.3f} (seeds {np.round(tails.mean(1), 3)}), noise {noise:.4f}", flush=True)
    # 2. displacement
    if (work / "displace_stage.json").exists() and (work / "displaced.pt").exists():
        displaced, pushes = torch.load(work / "displaced.pt"), _read(work / "displace_stage.json")
    else:
        displaced, pushes = _displace(lab, plateau, p_star)
        torch.save(displaced, work / "displaced.pt")
        _write(work / "displace_stage.json", pushes)
    stages["displace_runs"] = pushes
    stages["p_displaced"] = pushes[-1]["p"][-1]
    adam = lab.adam_second_moment(displaced, LabSettings(beta=BETA, optimizer="adamw", momentum=MU))
    torch.save(adam, work / "adam_state.pt")
    print(f"displaced to p = {stages['p_displaced']:.3f}", flush=True)
    # 4. probe: the sharpness at the plateau
    sharp = lab.sharpness(plateau, LabSettings(beta=BETA, optimizer="adamw", momentum=MU),
                          adam_state=lab.adam_second_moment(plateau, LabSettings(beta=BETA, optimizer="adamw")))
    stages["sharpness"] = sharp
    print(f"sharpness {sharp['top']:.4g}, Adam-preconditioned {sharp['top_adam']:.4g}", flush=True)
    # 3. relaxation: first-order returns (no momentum: plain SGD, AdamW with beta1 = 0), so that
    # e_{t+1} = (1 - eta K) e_t is the whole model; fitted until the gap is within RELAX_FLOOR of p*
    from grpo_core.llm.lab_analysis import relaxation_fit

    relax = []
    for opt in OPTIMIZERS:
        for eta in RELAX_ETAS[opt]:
            for seed in RELAX_SEEDS:
                r, _ = lab.train(LabSettings(beta=BETA, optimizer=opt, momentum=0.0, learning_rate=eta,
                                             steps=RELAX_STEPS, seed=seed),
                                 displaced, adam_state=adam if opt == "adamw" else None)
                fit = relaxation_fit(r.p, p_star, eta, floor=RELAX_FLOOR)
                relax.append({"optimizer": opt, "learning_rate": eta, "seed": seed, **fit, "trace": r.to_dict()})
                print(f"relax {opt} eta={eta:.3g} seed {seed}: K = {fit['k']:.4g} (eta K = {fit['gain']:.3g} per "
                      f"step, {fit['steps_used']} steps)", flush=True)
    stages["relaxation"] = relax
    ks = {opt: [r["k"] for r in relax if r["optimizer"] == opt] for opt in OPTIMIZERS}
    stages["k"] = {opt: float(np.median(v)) for opt, v in ks.items()}
    stages["seconds"] = time.perf_counter() - t0
    _write(OUT / "stages.json", stages)
    # 5. predictions, before any sweep run
    preds = {}
    for opt in OPTIMIZERS:
        pr = lab_predictions(stages["k"][opt], sharp["top"] if opt == "sgd" else sharp["top_adam"], opt, MU,
                             K_REFS, MODES)
        for row in pr["settings"]:
            row["ladder"] = [row["eta_pred"] * f for f in LADDER]
        preds[opt] = pr
    _write(OUT / "predictions.json", {
        "written_before_sweep": True, "beta": BETA, "mu": MU, "p_star": p_star, "noise": noise,
        "ladder_factors": list(LADDER), "steps": {str(k): steps_for(k) for k in K_REFS},
        "seeds": list(SWEEP_SEEDS), "classification": "grpo_core.llm.lab_analysis.classify_trace",
        "criterion": "eta_pred within a factor 1.5 of the measured bracket [largest stable, smallest unstable]",
        "predictions": preds, "provenance": provenance(0, "cpu", extra={"platform": platform.platform()}),
    })
    print(json.dumps({o: [(r["mode"], r["k_ref"], round(r["eta_pred"], 6), r["first"]) for r in p["settings"]]
                      for o, p in preds.items()}, indent=1))


# ---------------------------------------------------------------------------------------------
def _run_one(args):
    work, settings, start = args
    import torch

    from grpo_core.llm.lab import LabSettings

    lab = _lab(Path(work))
    state = torch.load(Path(work) / f"{start}.pt")
    s = LabSettings(**settings)
    adam = torch.load(Path(work) / "adam_state.pt") if (s.optimizer == "adamw" and start == "displaced") else None
    tr, _ = lab.train(s, state, adam_state=adam)
    return tr.to_dict()


def _key(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True)


def _done(path: Path) -> set:
    if not path.exists():
        return set()
    return {_key(json.loads(line)["settings"]) for line in path.read_text().splitlines() if line.strip()}


def _execute(jobs: list, path: Path, n_jobs: int, start: str, work: Path) -> None:
    from grpo_core.llm.lab import LabSettings

    done = _done(path)
    todo = [j for j in jobs if _key(LabSettings(**j).__dict__) not in done]
    print(f"{len(jobs)} runs, {len(jobs) - len(todo)} done, {len(todo)} to run", flush=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(n_jobs) as ex, path.open("a") as fh:
        futs = [ex.submit(_run_one, (str(work), j, start)) for j in todo]
        for i, f in enumerate(as_completed(futs), 1):
            d = f.result()
            fh.write(json.dumps(d) + "\n")
            fh.flush()
            s = d["settings"]
            print(f"[{i}/{len(todo)} {time.perf_counter() - t0:.0f}s] {s['optimizer']} {s['mode']} "
                  f"K_ref={s['k_ref']} lr={s['learning_rate']:.4g} seed {s['seed']}: "
                  f"p {d['p'][0]} -> {d['p'][-1]} ({d['seconds']:.0f}s)", flush=True)


def sweep(work: Path, n_jobs: int, seeds=None, modes=None) -> None:
    pred = _read(OUT / "predictions.json")
    if seeds is not None:
        pred["seeds"] = list(seeds)
    jobs = []
    for opt, pr in pred["predictions"].items():
        for row in pr["settings"]:
            if row["mode"] == "ratio" and row["k_ref"] == 1:
                continue  # identical to stale at K_ref = 1 (on-policy)
            if modes is not None and (row["mode"] if row["k_ref"] > 1 else "on-policy") not in modes:
                continue
            for eta in row["ladder"]:
                for seed in pred["seeds"]:
                    jobs.append({"optimizer": opt, "learning_rate": float(eta), "momentum": pred["mu"],
                                 "k_ref": row["k_ref"], "mode": row["mode"], "beta": pred["beta"],
                                 "steps": pred["steps"][str(row["k_ref"])], "seed": seed})
    jobs.sort(key=lambda j: -j["steps"])  # longest first: the pool ends together
    _execute(jobs, OUT / "traces.jsonl", n_jobs, "displaced", work)


#: As the TRL fixed-prompt pair (cpu-dynamics: beta 0, gradient clipping 1, 20 warm-up steps, AdamW 3e-4), with
#: 8 prompts per step instead of 32 and 250 steps instead of 800 (CPU time); SGD at half its sharpness edge.
ABLATION = {"group_sizes": (4, 16), "num_prompts": 8, "steps": 250, "seeds": (0, 1), "beta": 0.0,
            "learning_rate": {"adamw": 3e-4, "sgd": 0.01}, "momentum": 0.9, "max_grad_norm": 1.0,
            "lr_warmup_steps": 20}


def ablation(work: Path, n_jobs: int) -> None:
    import torch

    lab = _lab(work)
    torch.save(lab.state(), work / "warmup.pt")
    a = ABLATION
    jobs = [{"optimizer": opt, "learning_rate": a["learning_rate"][opt], "momentum": a["momentum"], "k_ref": 1,
             "mode": "ratio", "beta": a["beta"], "steps": a["steps"], "seed": seed, "group_size": g,
             "num_prompts": a["num_prompts"], "scale_rewards": scale, "max_grad_norm": a["max_grad_norm"],
             "lr_warmup_steps": a["lr_warmup_steps"]}
            for opt in OPTIMIZERS for scale in ("group", "none") for g in a["group_sizes"] for seed in a["seeds"]]
    # two arms that split what is left (SGD, mean baseline): G = 4 with its learning rate raised by
    # (15/16) / (3/4) = 1.25, which cancels the mean baseline's (G - 1)/G shrink of the expected gradient;
    # and G = 4 with four times the prompts, the completions (and so the sampling noise) of G = 16
    base = {"optimizer": "sgd", "momentum": a["momentum"], "k_ref": 1, "mode": "ratio", "beta": a["beta"],
            "steps": a["steps"], "scale_rewards": "none", "max_grad_norm": a["max_grad_norm"],
            "lr_warmup_steps": a["lr_warmup_steps"], "group_size": 4}
    for seed in a["seeds"]:
        jobs.append({**base, "seed": seed, "num_prompts": a["num_prompts"],
                     "learning_rate": a["learning_rate"]["sgd"] * (15 / 16) / (3 / 4)})
        jobs.append({**base, "seed": seed, "num_prompts": 4 * a["num_prompts"],
                     "learning_rate": a["learning_rate"]["sgd"]})
    jobs.sort(key=lambda j: -j["group_size"] * j["num_prompts"])
    _execute(jobs, OUT / "ablation.jsonl", n_jobs, "warmup", work)


def predict_frozen() -> None:
    """Register the frozen mode's predictions (the same formula as the stale mode's) before its sweep."""
    from grpo_core.llm.lab_analysis import lab_predictions
    from grpo_core.llm.runs import provenance

    pred = _read(OUT / "predictions.json")
    rows = {}
    for opt, pr in pred["predictions"].items():
        new = lab_predictions(pr["k"], pr["top"], opt, pred["mu"], [k for k in K_REFS if k > 1], ("frozen",))
        for row in new["settings"]:
            row["ladder"] = [row["eta_pred"] * f for f in LADDER]
        rows[opt] = new["settings"]
    _write(OUT / "predictions_frozen.json", {
        "written_before_sweep": "of the frozen mode (after the stale and ratio-corrected sweep)",
        "settings": rows, "provenance": provenance(0, "cpu", extra={"platform": platform.platform()})})


def sweep_frozen(work: Path, n_jobs: int, seeds=None) -> None:
    pred = _read(OUT / "predictions.json")
    if seeds is not None:
        pred["seeds"] = list(seeds)
    frozen = _read(OUT / "predictions_frozen.json")
    jobs = [{"optimizer": opt, "learning_rate": float(eta), "momentum": pred["mu"], "k_ref": row["k_ref"],
             "mode": "frozen", "beta": pred["beta"], "steps": pred["steps"][str(row["k_ref"])], "seed": seed}
            for opt, rows in frozen["settings"].items() for row in rows for eta in row["ladder"]
            for seed in pred["seeds"]]
    jobs.sort(key=lambda j: -j["steps"])
    _execute(jobs, OUT / "traces.jsonl", n_jobs, "displaced", work)


#: The extension of an open bracket: steps of this factor beyond the ladder, at most EXTEND_ROUNDS.
EXTEND_FACTOR = 2.5
EXTEND_ROUNDS = 5


def extend(work: Path, n_jobs: int) -> None:
    """Close the brackets the ladder left open (not registered: run after looking at the sweep).

    A setting with no unstable run continues upward, one with no stable run downward, by EXTEND_FACTOR per
    round, until its bracket closes or EXTEND_ROUNDS rounds; the settings of a round run in parallel.
    """
    from grpo_core.llm.lab_analysis import load_lab_record, sweep_table

    for _ in range(EXTEND_ROUNDS):
        rec = load_lab_record(OUT)
        jobs = []
        for row in sweep_table(rec.predictions, rec.traces):
            etas = [r["eta"] for r in row["runs"]]
            if math.isinf(row["hi"]):
                eta = max(etas) * EXTEND_FACTOR
            elif row["lo"] == 0.0:
                eta = min(etas) / EXTEND_FACTOR
            else:
                continue
            mode = row["mode"] if row["k_ref"] > 1 else "stale"
            jobs.append({"optimizer": row["optimizer"], "learning_rate": float(eta), "momentum": rec.predictions["mu"],
                         "k_ref": row["k_ref"], "mode": mode, "beta": rec.predictions["beta"],
                         "steps": rec.predictions["steps"][str(row["k_ref"])], "seed": 0})
        if not jobs:
            return
        jobs.sort(key=lambda j: -j["steps"])
        _execute(jobs, OUT / "traces.jsonl", n_jobs, "displaced", work)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=("prepare", "sweep", "ablation", "predict-frozen", "sweep-frozen", "extend"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", default=str(ROOT / "runs" / "oscillator-lab-work"))
    ap.add_argument("--seeds", type=int, nargs="+", help="sweep, sweep-frozen: these seeds instead of the registered")
    ap.add_argument("--modes", nargs="+", choices=("on-policy", "stale", "ratio"), help="sweep: only these rows")
    a = ap.parse_args(argv)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    {"prepare": lambda: prepare(work), "sweep": lambda: sweep(work, a.jobs, a.seeds, a.modes),
     "ablation": lambda: ablation(work, a.jobs), "predict-frozen": predict_frozen,
     "sweep-frozen": lambda: sweep_frozen(work, a.jobs, a.seeds), "extend": lambda: extend(work, a.jobs)}[a.stage]()


if __name__ == "__main__":
    sys.exit(main())
