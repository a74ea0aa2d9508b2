"""The lab loop (grpo_core.llm.lab) on an untrained tiny model: the ratio-mode loss is the probe's (TRL's) surrogate,
the stale loss has the advantage-weighted score gradient at the current weights, both agree at a refresh and
differ after it, the KL term vanishes at the reference, runs are reproducible and their records round-trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grpo_core.errors import ParameterError  # noqa: E402
from grpo_core.llm import probe  # noqa: E402
from grpo_core.llm.lab import Lab, LabSettings, LabTrace  # noqa: E402


@pytest.fixture(scope="module")
def lab():
    from grpo_core.llm.model import TinyModelSpec, build_tiny_model
    from grpo_core.llm.tasks import build_char_tokenizer, sample_problems

    torch.manual_seed(0)
    tok = build_char_tokenizer()
    model = build_tiny_model(tok, TinyModelSpec(hidden_size=32, num_layers=1), seed=0)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return Lab(model, model, tok, sample_problems("add1", 8, seed=0, replace=False), temperature=1.0,
               max_completion_length=3)


def _batch(lab, s, model=None, seed=0, mixed=True):
    b = lab.sample(model or lab.model, s, np.random.default_rng(seed), seed)
    if mixed:   # untrained: all rewards 0; give each group one success so the advantages are not all 0
        r = torch.zeros_like(b["rewards"])
        r[:: s.group_size] = 1.0
        b["rewards"] = r
        from grpo_core.llm.probe import _advantages

        b["adv"] = _advantages(r, s.group_size, s.scale_rewards)
    return b


def _grad(model, loss):
    params = [q for q in model.parameters() if q.requires_grad]
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)])


def test_settings_refuse_out_of_range_values_naming_the_parameter():
    for bad, name in [({"optimizer": "lion"}, "optimizer"), ({"mode": "fresh"}, "mode"), ({"k_ref": 0}, "k_ref"),
                      ({"learning_rate": 0.0}, "learning_rate"), ({"momentum": 1.0}, "momentum"),
                      ({"beta": -0.1}, "beta"), ({"group_size": 1}, "group_size")]:
        with pytest.raises(ParameterError, match=name):
            LabSettings(**bad)
    assert LabSettings().replace(k_ref=4).k_ref == 4


def test_ratio_loss_is_the_probe_surrogate_and_the_kl_term_vanishes_at_the_reference(lab):
    s = LabSettings(mode="ratio", beta=0.0, group_size=4, num_prompts=3)
    b = _batch(lab, s)
    batch = probe.ProbeBatch(b["ids"], b["att"], b["cmask"], b["rewards"], b["adv"], b["old"])
    cfg = type("C", (), {"temperature": 1.0, "epsilon": 0.2, "loss_type": "dapo", "max_completion_length": 3})
    model = lab.policy()
    ours, kl = lab.loss(model, b, s)
    assert ours.item() == pytest.approx(probe.surrogate_loss(model, batch, cfg).item(), abs=1e-6)
    assert kl == pytest.approx(0.0, abs=1e-6)   # the policy is the reference
    with_kl, _ = lab.loss(model, b, s.replace(beta=5.0))
    g0, g1 = _grad(model, lab.loss(model, b, s)[0]), _grad(model, lab.loss(model, b, s.replace(beta=5.0))[0])
    assert with_kl.item() == pytest.approx(ours.item(), abs=1e-6) and torch.allclose(g0, g1, atol=1e-6)


def test_stale_gradient_is_the_advantage_weighted_score_at_the_current_weights(lab):
    s = LabSettings(mode="stale", beta=0.0, group_size=4, num_prompts=3)
    model = lab.policy()
    with torch.no_grad():   # move the policy away from the one that sampled the batch
        for q in model.parameters():
            q.add_(0.05 * torch.randn_like(q))
    b = _batch(lab, s)
    loss, _ = lab.loss(model, b, s)
    m = b["cmask"]

    def score():
        logps = probe._token_logps(model, b["ids"], b["att"], lab.temperature)
        return -(b["adv"][:, None] * logps * m).sum() / m.sum()

    assert torch.allclose(_grad(model, loss), _grad(model, score()), atol=1e-6)
    # the ratio-corrected loss differs off the behaviour policy, and agrees on it
    ratio, _ = lab.loss(model, b, s.replace(mode="ratio"))
    assert not torch.allclose(_grad(model, ratio), _grad(model, score()), atol=1e-5)
    fresh = _batch(lab, s, model=model)
    a = _grad(model, lab.loss(model, fresh, s)[0])
    r = _grad(model, lab.loss(model, fresh, s.replace(mode="ratio"))[0])
    assert torch.allclose(a, r, atol=1e-6)


def test_train_is_reproducible_and_its_trace_round_trips(lab):
    s = LabSettings(optimizer="adamw", learning_rate=1e-3, k_ref=2, mode="ratio", beta=0.1, steps=4,
                    group_size=2, num_prompts=2, seed=3)
    t1, w1 = lab.train(s)
    t2, w2 = lab.train(s)
    assert len(t1.p) == 5 and len(t1.reward) == len(t1.kl) == len(t1.grad_norm) == 4 and t1.finite
    assert t1.p == t2.p and all(torch.equal(w1[k], w2[k]) for k in w1)
    assert t1.p[0] == pytest.approx(lab.expected(lab.model))
    back = LabTrace.from_dict(t1.to_dict())
    assert back.settings == t1.settings and np.allclose(back.p, t1.p, rtol=1e-5)


def test_a_non_finite_loss_stops_the_run_and_is_recorded(lab, monkeypatch):
    s = LabSettings(optimizer="sgd", learning_rate=0.1, momentum=0.0, beta=0.0, steps=5, group_size=2,
                    num_prompts=2, seed=0)
    real, calls = Lab.loss, []

    def blows_up_at_the_third_step(self, model, batch, st):
        calls.append(1)
        loss, kl = real(self, model, batch, st)
        return (loss * math.nan if len(calls) == 3 else loss), kl

    monkeypatch.setattr(Lab, "loss", blows_up_at_the_third_step)
    t, _ = lab.train(s)
    assert not t.finite and len(calls) == 3 and len(t.p) == 6 and len(t.reward) == 3
    assert all(math.isfinite(x) for x in t.p[:3]) and all(math.isnan(x) for x in t.p[3:])
    assert t.to_dict()["p"][-1] is None


def test_adam_second_moment_primes_adamw(lab):
    s = LabSettings(optimizer="adamw", beta=0.1, group_size=2, num_prompts=2)
    moved = {k: v + 0.05 * torch.randn_like(v) if v.is_floating_point() else v for k, v in lab.state().items()}
    st = lab.adam_second_moment(moved, s, batches=2)   # away from the reference: the KL term has a gradient
    params = [q for q in lab.model.parameters() if q.requires_grad]
    assert st["step"] == 2 and len(st["exp_avg_sq"]) == len(params) and st["norm"] > 0
    opt = lab.optimizer(lab.policy(), s, st)
    first = next(iter(opt.state.values()))
    assert float(first["exp_avg"].abs().sum()) == 0.0 and float(first["step"]) == 2.0


def test_frozen_mode_takes_the_gradient_at_the_behaviour_weights(lab):
    s = LabSettings(optimizer="sgd", learning_rate=0.5, momentum=0.0, beta=0.5, steps=3, group_size=2,
                    num_prompts=2, seed=1)
    moved = {k: v + 0.05 * torch.randn_like(v) if v.is_floating_point() else v for k, v in lab.state().items()}
    # on-policy (K_ref = 1) the behaviour policy is the current one: the three modes take the same steps
    _, stale = lab.train(s.replace(mode="stale"), moved)
    _, frozen = lab.train(s.replace(mode="frozen"), moved)
    _, ratio = lab.train(s.replace(mode="ratio"), moved)
    assert all(torch.allclose(stale[k], frozen[k], atol=1e-6) and torch.allclose(stale[k], ratio[k], atol=1e-6)
               for k in stale)
    # with a lag, every loss of a cycle is taken at the refresh's weights (frozen) or at the current ones (stale)
    seen = []
    real = Lab.loss

    def record(self, model, batch, st):
        seen.append(next(model.parameters()).detach().clone())
        return real(self, model, batch, st)

    start = next(lab.policy(moved).parameters()).detach()
    for mode, same in (("frozen", True), ("stale", False)):
        seen.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Lab, "loss", record)
            lab.train(s.replace(mode=mode, k_ref=3, steps=3), moved)
        assert len(seen) == 3 and torch.equal(seen[0], start)
        assert all(torch.equal(x, seen[0]) == same for x in seen[1:])
