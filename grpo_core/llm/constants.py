r"""The constants c1, c2, c3 of the minibatch-MSE law, measured on a language model.

The U-statistic view gives the mean squared error of the GRPO minibatch gradient
``MSE(B, G) = (c1 + c2/G + c3/(G(G-1))) / B`` and, at a fixed rollout budget N = B G, the best group
size ``G* = 1 + sqrt(c3/c1)`` (:mod:`grpo_core.groupsize`). Here the constants are measured on the
model itself: for P held-out prompts, M sampled completions each, the *score* of every completion
``W = grad_theta log pi(y|x)`` (the gradient of the completion's summed token log-probabilities at
the sampling temperature, over every trainable parameter) and its reward Z are handed to
:func:`grpo_core.groupsize.estimate_constants`, whose U-statistic estimators are unbiased for any
model.

Scores have one entry per parameter (~0.4 M for the tiny model, billions for a GPU model), so each
is compressed on the fly by a *count sketch*: coordinate i goes to bucket h(i) in [0, k) with a random
sign s(i), ``S W = sum_i s(i) W_i e_{h(i)}``. Inner products are unbiased,
``E <S u, S v> = <u, v>``, with a relative error of order sqrt(2/k); every constant is a linear
combination of inner products, so the estimates stay unbiased and only gain variance (k = 8192:
about 1.6%).

What the theory covers and what it does not: the result is exact for the plain leave-one-out
gradient of the sequence log-probability. TRL's loss scales advantages by the group's standard
deviation, normalises by token counts ("dapo"), clips importance ratios and feeds the gradient to
Adam; the book says so next to the measured G*.

References
----------
"Demystifying Group Relative Policy Optimization: Its Policy Gradient is a U-Statistic" (2025),
Theorem 7. Charikar, Chen and Farach-Colton (2002), "Finding frequent items in data streams" (the
count sketch). Our derivation of the exact constants: :mod:`grpo_core.groupsize`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..errors import ParameterError
from ..validation import check_integer, check_real

__all__ = ["CountSketch", "sample_scores", "measure_constants"]


class CountSketch:
    """A fixed count sketch R^D -> R^k (``sketch(v) = sum_i s(i) v_i e_{h(i)}``).

    Parameters
    ----------
    dim : int
        Input dimension D (number of parameters), >= 1.
    k : int
        Sketch dimension, >= 1.
    seed : int
        Seed of the hash and the signs.

    Examples
    --------
    >>> import torch
    >>> cs = CountSketch(10_000, 4096, seed=0)
    >>> u, v = torch.randn(10_000, dtype=torch.float64), torch.randn(10_000, dtype=torch.float64)
    >>> exact, approx = float(u @ u), float(cs(u) @ cs(u))
    >>> abs(approx / exact - 1) < 0.1
    True
    """

    def __init__(self, dim: int, k: int, seed: int = 0):
        import torch

        self.dim = check_integer("dim", dim, low=1)
        self.k = check_integer("k", k, low=1)
        gen = torch.Generator().manual_seed(int(seed))
        self.bucket = torch.randint(0, self.k, (self.dim,), generator=gen)
        self.sign = torch.randint(0, 2, (self.dim,), generator=gen, dtype=torch.int8).to(torch.float64) * 2 - 1

    def __call__(self, v):
        import torch

        out = torch.zeros(self.k, dtype=torch.float64)
        return out.index_add_(0, self.bucket, self.sign * v.detach().to(torch.float64).cpu())


def sample_scores(model, tokenizer, prompts: Sequence, references: Sequence, scorer, *, samples_per_prompt: int = 16,
                  max_new_tokens: int, temperature: float = 1.0, sketch_dim: int = 8192, seed: int = 0):
    """Sample M completions per prompt and return their sketched scores and rewards.

    Parameters
    ----------
    model, tokenizer
        The policy (its parameters' ``requires_grad`` decide which enter the score).
    prompts : sequence of str (or chat messages), length P
    references : sequence, length P
        The reference answer of each prompt, passed to ``scorer``.
    scorer : callable
        ``scorer(text, ids, reference) -> 0/1`` (:func:`grpo_core.llm.evaluation.make_scorer`).
    samples_per_prompt : int
        M, >= 3 (the U-statistic estimators need three distinct samples).
    max_new_tokens : int
        Longest completion.
    temperature : float
        Sampling temperature (the log-probabilities are taken at the same temperature, as TRL does).
    sketch_dim : int
        k, coordinates of the count sketch.
    seed : int
        Seed of the sampling and of the sketch.

    Returns
    -------
    scores : ndarray, shape (P, M, k)
        Sketched score vectors (per unit of the parameters; log-probability in nats).
    rewards : ndarray, shape (P, M)
        0/1 rewards.
    info : dict
        ``num_parameters``, ``seconds``, ``mean_completion_tokens``.

    Raises
    ------
    ParameterError
        Fewer than 2 prompts, M < 3, mismatched lengths.
    """
    import torch

    from .evaluation import generate_completions

    p = len(prompts)
    if p < 2 or len(references) != p:
        raise ParameterError("prompts", f"`prompts` needs >= 2 entries and one reference each; got {p} and "
                             f"{len(references)}")
    m = check_integer("samples_per_prompt", samples_per_prompt, low=3)
    temperature = check_real("temperature", temperature, low=0, low_inclusive=False)
    t0 = time.perf_counter()
    texts, ids = generate_completions(model, tokenizer, list(prompts), max_new_tokens=max_new_tokens, do_sample=True,
                                      temperature=temperature, num_return_sequences=m, batch_size=max(1, 512 // m),
                                      seed=seed)
    rewards = np.array([scorer(t, i, references[j // m]) for j, (t, i) in enumerate(zip(texts, ids))],
                       dtype=float).reshape(p, m)
    params = [q for q in model.parameters() if q.requires_grad]
    dim = int(sum(q.numel() for q in params))
    sketch = CountSketch(dim, sketch_dim, seed=seed + 1)
    scores = np.zeros((p, m, sketch.k))
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()  # no dropout: the score of the sampling policy
    lengths = []
    try:
        for j in range(p):
            prompt = prompts[j]
            if not isinstance(prompt, str):
                prompt = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
                prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            else:
                prompt_ids = tokenizer(prompt)["input_ids"]
            for i in range(m):
                completion = ids[j * m + i]
                if not completion:
                    continue  # an empty completion has log-probability 0 and score 0
                lengths.append(len(completion))
                seq = torch.tensor([prompt_ids + list(completion)], device=device)
                logits = model(input_ids=seq).logits[0, len(prompt_ids) - 1:-1].float() / temperature
                logp = torch.log_softmax(logits, dim=-1).gather(1, seq[0, len(prompt_ids):, None]).sum()
                grads = torch.autograd.grad(logp, params)
                flat = torch.cat([g.reshape(-1) for g in grads])
                scores[j, i] = sketch(flat).numpy()
    finally:
        if was_training:
            model.train()
    info = {"num_parameters": dim, "seconds": time.perf_counter() - t0,
            "mean_completion_tokens": float(np.mean(lengths)) if lengths else 0.0}
    return scores, rewards, info


def measure_constants(
    model,
    tokenizer,
    prompts: Sequence,
    references: Sequence,
    scorer,
    *,
    samples_per_prompt: int = 16,
    max_new_tokens: int,
    temperature: float = 1.0,
    sketch_dim: int = 8192,
    seed: int = 0,
    num_bootstrap: int = 1000,
    confidence: float = 0.9,
) -> dict:
    """c1, c2, c3 and G* of the model at its current weights, with bootstrap intervals.

    Parameters
    ----------
    model, tokenizer, prompts, references, scorer, samples_per_prompt, max_new_tokens, temperature,
    sketch_dim, seed
        As :func:`sample_scores`.
    num_bootstrap, confidence
        As :func:`grpo_core.groupsize.estimate_constants`.

    Returns
    -------
    dict
        :meth:`grpo_core.groupsize.GroupSizeConstants.as_dict` (``c1``, ``c2``, ``c3``, ``g_star``,
        ``g_star_exact``, ``intervals``...) plus ``mean_reward`` (the sampled accuracy of these
        prompts), ``frac_zero_spread`` (prompts whose M rewards are all equal), ``sketch_dim``,
        ``samples_per_prompt`` and the ``info`` of :func:`sample_scores`.

    Raises
    ------
    ParameterError
        As :func:`sample_scores` and :func:`~grpo_core.groupsize.estimate_constants`.
    """
    from ..groupsize import estimate_constants

    scores, rewards, info = sample_scores(
        model,
        tokenizer,
        prompts,
        references,
        scorer,
        samples_per_prompt=samples_per_prompt,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        sketch_dim=sketch_dim,
        seed=seed,
    )
    est = estimate_constants(scores, rewards, num_bootstrap=num_bootstrap, confidence=confidence, seed=seed)
    out = est.as_dict()
    out.update(
        mean_reward=float(rewards.mean()),
        frac_zero_spread=float(np.mean(rewards.min(axis=1) == rewards.max(axis=1))),
        sketch_dim=int(sketch_dim),
        samples_per_prompt=int(samples_per_prompt),
        **info,
    )
    return out
