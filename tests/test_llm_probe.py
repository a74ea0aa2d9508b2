"""The probe (grpo_core.llm.probe, grpo_core.llm.curvature): Lanczos on Hessian-vector products against a known
spectrum, the relaxation rate on the softmax bandit against its exact stiffness, the surrogate's derivatives on the
tiny model, and a tiny-budget probe written before the first GRPO step."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grpo_core import bandit  # noqa: E402
from grpo_core.errors import GrpoError, ParameterError  # noqa: E402
from grpo_core.llm import curvature, probe  # noqa: E402
from grpo_core.llm.config import make_config  # noqa: E402


class _Quadratic(torch.nn.Module):
    """loss(x) = 0.5 x^T A x with a known spectrum (the Hessian is A)."""

    def __init__(self, eigenvalues, seed=0):
        super().__init__()
        n = len(eigenvalues)
        q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(n, n)))
        self.a = torch.tensor(q @ np.diag(eigenvalues) @ q.T)
        self.x = torch.nn.Parameter(torch.tensor(np.random.default_rng(seed + 1).normal(size=n)))

    def loss(self):
        return 0.5 * self.x @ self.a @ self.x


def test_lanczos_on_hessian_vector_products_recovers_a_known_spectrum():
    spectrum = [7.5, 3.0, 2.0, 1.0, 0.5, -0.25, -4.0]
    m = _Quadratic(spectrum)
    op = curvature.hvp_operator(m.loss(), [m.x])
    out = curvature.lanczos_extremes(op, 7, 7, dtype=torch.float64)
    assert abs(out["top"] - 7.5) < 1e-6 and abs(out["bottom"] + 4.0) < 1e-6
    assert out["residual"] < 1e-6


def test_preconditioned_operator_is_d_h_d():
    # P^{-1/2} H P^{-1/2} with H = diag(h), P = diag(p): eigenvalues h / p
    m = _Quadratic([1.0, 1.0, 1.0])
    m.a = torch.diag(torch.tensor([4.0, 9.0, 1.0], dtype=torch.float64))
    p = torch.tensor([1.0, 3.0, 0.5], dtype=torch.float64)
    out = curvature.lanczos_extremes(
        curvature.hvp_operator(m.loss(), [m.x], scale=p.rsqrt()), 3, 3, dtype=torch.float64
    )
    assert abs(out["top"] - 4.0) < 1e-9 and abs(out["bottom"] - 2.0) < 1e-9


def test_lanczos_few_iterations_bound_the_spectrum():
    spectrum = np.linspace(-1.0, 10.0, 40)
    m = _Quadratic(spectrum, seed=3)
    out = curvature.lanczos_extremes(curvature.hvp_operator(m.loss(), [m.x]), 40, 12, dtype=torch.float64)
    # Ritz values lie inside the spectrum; the top one converges first
    assert -1.0 - 1e-9 <= out["bottom"] and out["top"] <= 10.0 + 1e-9
    assert out["top"] > 9.0 and out["iters"] == 12


def test_adam_second_moment_is_bias_corrected_ema():
    g1, g2 = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 0.0])
    v = curvature.adam_second_moment([g1, g2], 0.9)
    expect = (0.1 * 0.9 * g1**2 + 0.1 * g2**2) / (1 - 0.81)
    assert torch.allclose(v, expect)
    assert torch.allclose(curvature.adam_second_moment([g1], 0.99), g1**2)


def test_relaxation_rate_closed_forms_and_errors():
    p = 1.0 - 0.5 * (1 - 0.05) ** np.arange(6)
    assert curvature.relaxation_rate(p, 0.01, p_star=1.0)["k"] == pytest.approx(5.0, rel=1e-12)
    fit = curvature.relaxation_rate(p, 0.01)
    assert fit["k"] == pytest.approx(5.0, rel=1e-9) and fit["p_star"] == pytest.approx(1.0, rel=1e-9)
    with pytest.raises(ParameterError, match="rewards"):
        curvature.relaxation_rate([0.5], 0.1, p_star=1.0)
    with pytest.raises(ParameterError, match="crossed"):
        curvature.relaxation_rate([0.5, 1.2], 0.1, p_star=1.0)
    with pytest.raises(ParameterError, match="eta"):
        curvature.relaxation_rate([0.1, 0.2, 0.3], 0.0)


@pytest.mark.parametrize("beta", [1.0, 2.0])
def test_relaxation_rate_on_the_bandit_matches_its_exact_stiffness(beta):
    # a few small SGD steps along the bandit's exact expected GRPO direction, from near p*:
    # the probe's relaxation rate is the bandit's mean-field stiffness at its fixed point
    spec = bandit.BanditSpec.binary(group_size=math.inf)
    fp = bandit.fixed_point(spec, beta)
    r = np.array([1.0, 0.0])
    theta = fp.theta_star + 0.005 * fp.direction
    eta, rewards = 0.1, []
    for _ in range(6):
        pi = np.exp(theta - theta.max())
        rewards.append(float((pi / pi.sum()) @ r))
        theta = theta + eta * bandit.expected_gradient(spec, theta, beta=beta)
    k_known = fp.stiffness
    assert curvature.relaxation_rate(rewards, eta, p_star=fp.p_star)["k"] == pytest.approx(k_known, rel=0.05)
    fit = curvature.relaxation_rate(rewards, eta)
    assert fit["k"] == pytest.approx(k_known, rel=0.05) and fit["p_star"] == pytest.approx(fp.p_star, abs=1e-3)
    if beta == 1.0:
        assert k_known == pytest.approx(2 * beta * fp.p_star * (1 - fp.p_star), rel=1e-6)


def test_predict_uses_the_model_thresholds():
    from grpo_core.model.stability import critical_value

    cfg = make_config("cpu-tiny", learning_rate=1e-3)
    out = probe.predict(2.0, 300.0, 280.0, 5e4, cfg, grad_norm=2.5)
    sgd, adam = out["sgd_momentum"], out["adam"]
    assert sgd["eta_crit_constant_lag"] == pytest.approx(0.1 / 2.0)  # a* = 1 - mu at d = 1
    assert sgd["eta_crit"] == pytest.approx(2 * 1.9 / 2.0)  # refresh lag, k_ref = 1: a* = 2 (1 + mu)
    assert sgd["eta_crit_sharpness"] == pytest.approx(3.8 / 280.0)
    assert sgd["eta_crit_clipped"] == pytest.approx(sgd["eta_crit"] * 2.5)
    assert adam["eta_crit_sharpness"] == pytest.approx(3.8 / (0.1 * 5e4))
    assert adam["eta_crit_continuous"] == pytest.approx(1 / 300.0)  # EMA: eta K K_ref = 1
    four = adam["num_iterations_4"]
    assert four["eta_crit"] == pytest.approx(
        critical_value("eta", mu=0.9, k_ref=4, curvature=300.0, lag="refresh", momentum="ema")
    )
    assert four["ratio"] == pytest.approx(four["eta_crit"] / adam["eta_crit"])
    assert out["t90"]["gain"] == pytest.approx(0.3) and out["t90"]["steps"] > 0
    bad = probe.predict(-1.0, 0.0, 1.0, 1.0, cfg)
    assert math.isnan(bad["sgd_momentum"]["eta_crit"]) and math.isnan(bad["t90"]["steps"])


# --- on the tiny model ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    from grpo_core.llm.model import TinyModelSpec, build_tiny_model
    from grpo_core.llm.tasks import build_char_tokenizer

    tok = build_char_tokenizer()
    model = build_tiny_model(tok, TinyModelSpec(hidden_size=32, num_layers=1), seed=0)
    return model.eval(), tok


def _mixed_batch(model, tok, cfg):
    """A fixed batch with known rewards: per prompt, G - 1 wrong completions and the right one."""
    from grpo_core.llm.tasks import sample_problems

    probs = sample_problems("add2", 3, seed=0)
    comps, rewards, prompts = [], [], []
    for p in probs:
        right = [tok.convert_tokens_to_ids(c) for c in p["answer"]] + [tok.eos_token_id]
        wrong = [tok.convert_tokens_to_ids(c) for c in "7"] + [tok.eos_token_id]
        for j in range(cfg.group_size):
            comps.append(right if j == 0 else wrong[: 1 + j % 2])
            rewards.append(1.0 if j == 0 else 0.0)
            prompts.append(p["prompt"])
    ids, att, cmask = probe._pack(tok, prompts, comps, "cpu")
    r = torch.tensor(rewards)
    with torch.no_grad():
        old = probe._token_logps(model, ids, att, cfg.temperature) * cmask
    return probe.ProbeBatch(ids, att, cmask, r, probe._advantages(r, cfg.group_size, cfg.scale_rewards), old)


def test_surrogate_gradient_is_the_advantage_weighted_score_and_hvp_matches_differences(tiny):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    model, tok = tiny
    cfg = make_config("cpu-tiny", group_size=4)
    params = probe._params(model)
    with sdpa_kernel([SDPBackend.MATH]):
        batch = _mixed_batch(model, tok, cfg)
        g = curvature.flat_grad(probe.surrogate_loss(model, batch, cfg), params)
        # at theta_old the ratio is 1: grad L = -sum_i A_i grad log pi(o_i) / (number of completion tokens)
        logp = (probe._token_logps(model, batch.input_ids, batch.attention_mask, 1.0) * batch.completion_mask).sum(1)
        ref = curvature.flat_grad(-(batch.advantages * logp).sum() / batch.completion_mask.sum(), params)
        assert torch.allclose(g, ref, atol=1e-6)
        v = torch.randn(g.numel(), generator=torch.Generator().manual_seed(1))
        v = v / v.norm()
        hv = curvature.hvp_operator(probe.surrogate_loss(model, batch, cfg), params)(v)
        h = 1e-3
        grads = []
        for sgn in (1, -1):
            curvature.set_flat(params, torch.cat([p.detach().reshape(-1) for p in params]) + sgn * h * v)
            grads.append(curvature.flat_grad(probe.surrogate_loss(model, batch, cfg), params))
            curvature.set_flat(params, torch.cat([p.detach().reshape(-1) for p in params]) - sgn * h * v)
    fd = (grads[0] - grads[1]) / (2 * h)
    assert float((hv - fd).norm() / hv.norm()) < 1e-2


def test_expected_reward_is_the_teacher_forced_answer_probability(tiny):
    model, tok = tiny
    from grpo_core.llm.tasks import sample_problems

    p = sample_problems("add2", 2, seed=1)
    with torch.no_grad():
        got = float(probe.expected_reward(model, tok, p, 1.0))
        each = []
        for item in p:
            ids = tok(item["prompt"])["input_ids"]
            ans = [tok.convert_tokens_to_ids(c) for c in item["answer"]] + [tok.eos_token_id]
            logits = model(input_ids=torch.tensor([ids + ans])).logits[0]
            lp = torch.log_softmax(logits, -1)
            each.append(math.exp(sum(float(lp[len(ids) - 1 + j, t]) for j, t in enumerate(ans))))
    assert got == pytest.approx(np.mean(each), rel=1e-5)


def test_probe_refuses_pretrained_models_and_bad_budgets(tiny):
    model, tok = tiny
    with pytest.raises(GrpoError, match="tiny-qwen2"):
        probe.probe_policy(model, tok, make_config("gsm8k-qwen2.5-0.5b"))
    with pytest.raises(ParameterError, match="iters"):
        probe.probe_policy(model, tok, make_config("cpu-tiny"), iters=0)
    with pytest.raises(ParameterError, match="probe"):
        make_config("gsm8k-qwen2.5-0.5b", probe=True)


def test_tiny_budget_probe_in_a_run_is_written_before_the_first_step(tmp_path):
    from transformers import TrainerCallback

    from grpo_core.llm.experiment import run_experiment

    seen = {}

    class _Check(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            seen.setdefault("probe_before_step_1", (tmp_path / "run" / "probe.json").exists())

    cfg = make_config(
        "cpu-tiny",
        warmup_steps=20,
        warmup_batch_size=16,
        warmup_learning_rate=3e-3,
        tiny_hidden_size=32,
        tiny_layers=1,
        max_steps=2,
        group_size=4,
        num_prompts=4,
        eval_samples=8,
        eval_every=0,
        eval_sampled=0,
        eval_suite="add2",
        diagnose_every=0,
        num_threads=1,
        output_dir=str(tmp_path / "run"),
        probe=True,
        probe_iters=3,
        probe_repeats=2,
        probe_steps=1,
        temperature=2.0,
    )
    summary = run_experiment(cfg, extra_callbacks=[_Check()])
    assert seen["probe_before_step_1"] is True
    data = json.loads((tmp_path / "run" / "probe.json").read_text())
    back = probe.ProbeResult.from_dict(data)
    assert json.loads(back.to_json()) == data
    assert data["settings"]["groups"] == 4 and data["settings"]["iters"] == 3
    c, s = data["curvature"], data["sharpness"]
    for x in (c["reward"], c["k"], c["k_adam"], c["grad_norm"], s["top"], s["top_adam"], data["seconds"]["total"]):
        assert x is not None and math.isfinite(x)
    assert 0.0 <= c["reward"] <= 1.0 and len(c["k_repeats"]) == 2
    assert s["bottom"] <= s["top"]
    assert summary["timings"]["probe"] > 0


def test_probe_command_prints_json_and_refuses_pretrained_presets(capsys):
    from conftest import cli_params

    from grpo_dynamics.cli import main

    small = cli_params(
        warmup_steps=10,
        warmup_batch_size=16,
        tiny_hidden_size=32,
        tiny_layers=1,
        group_size=4,
        num_threads=1,
        temperature=2,
    )
    assert (
        main(
            [
                "probe",
                "--preset",
                "cpu-tiny",
                *small,
                "--groups",
                "3",
                "--iters",
                "2",
                "--repeats",
                "2",
                "--steps",
                "1",
                "--seed",
                "1",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["groups"] == 3 and out["settings"]["seed"] == 1 and out["sharpness"]["iters"] <= 2
    assert main(["probe", "--preset", "cpu-tiny", *small, "--groups", "2", "--iters", "1", "--repeats", "1"]) == 0
    text = capsys.readouterr().out
    assert "sharpness: top Hessian eigenvalue" in text and "t90 at lr 0.0003" in text
    assert main(["probe", "--preset", "gsm8k-qwen2.5-0.5b"]) == 2
    assert "`probe` needs the tiny model" in capsys.readouterr().err


def test_notebook_parameters_include_the_probe():
    import jupytext
    from conftest import ROOT

    nb = jupytext.read(ROOT / "book" / "experiments" / "grpo_llm.md")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    for name in ("probe", "probe_iters", "probe_repeats"):
        assert f"\n{name} =" in "\n" + cell.source, name
    assert "write_probe(policy, tokenizer, cfg, run)" in "".join(c.source for c in nb.cells)


def test_cpu_dynamics_preset_shares_one_warm_up_and_probes_first():
    from grpo_core.llm.policy import _warmup_key

    cfgs = [make_config("cpu-dynamics", seed=s) for s in (0, 1, 2)]
    assert {c.warmup_seed_used for c in cfgs} == {1} and len({_warmup_key(c) for c in cfgs}) == 1
    assert all(c.probe and c.temperature == 2.5 and c.max_steps == 800 for c in cfgs)
    # cpu-tiny keeps one warm-up per seed (its committed runs' cache keys are unchanged)
    tiny = [make_config("cpu-tiny", seed=s) for s in (0, 1)]
    assert [c.warmup_seed_used for c in tiny] == [0, 1] and _warmup_key(tiny[0]) != _warmup_key(tiny[1])
    assert _warmup_key(make_config("cpu-tiny", seed=1)) == _warmup_key(make_config("cpu-tiny", seed=0, warmup_seed=1))
    with pytest.raises(ParameterError, match="warmup_seed"):
        make_config("cpu-tiny", warmup_seed=-2)
