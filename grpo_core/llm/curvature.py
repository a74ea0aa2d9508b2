"""Curvature numerics of the probe: Lanczos on Hessian-vector products, the relaxation rate, Adam's v.

Generic pieces of :mod:`grpo_core.llm.probe`, on flat parameter vectors (1-D torch tensors the
length of the model's trainable parameters, in ``model.parameters()`` order):

* :func:`lanczos_extremes`: extreme eigenvalues of a symmetric operator (exact once the
  iterations reach its dimension);
* :func:`hvp_operator`: ``v -> D H D v`` for the Hessian ``H`` of a scalar loss by double backward;
* :func:`relaxation_rate`: the oscillator model's K from an expected-reward trajectory;
* :func:`adam_second_moment`: Adam's bias-corrected ``v`` after a few gradients.

References
----------
Lanczos (1950); Golub and Van Loan, "Matrix Computations", section 10.1; Pearlmutter (1994),
"Fast Exact Multiplication by the Hessian" (Hessian-vector products).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..validation import check_integer, check_real

__all__ = ["lanczos_extremes", "hvp_operator", "relaxation_rate", "adam_second_moment", "flat_grad",
           "set_flat", "unflatten"]


def lanczos_extremes(matvec, dim: int, iters: int, *, seed: int = 0, dtype=None, device=None) -> dict[str, float]:
    """Extreme eigenvalues of a symmetric operator from ``iters`` Lanczos steps (full reorthogonalisation).

    Parameters
    ----------
    matvec : callable
        ``v -> A v`` on 1-D torch tensors of length ``dim`` (A symmetric).
    dim : int >= 1
        Dimension of the operator.
    iters : int >= 1
        Lanczos steps (at most ``dim`` are taken; with ``iters >= dim`` the result is exact up to
        rounding).
    seed : int
        Seed of the random start vector (a private generator; the global state is untouched).

    Returns
    -------
    dict
        ``top`` and ``bottom`` (largest and smallest Ritz values), ``residual`` (``|beta_k s_k|``,
        the error bound of the top Ritz pair: ``|A y - top y|``), ``iters`` (steps taken).

    Raises
    ------
    ParameterError
        ``dim`` or ``iters`` < 1.

    References
    ----------
    Lanczos (1950); Golub and Van Loan, "Matrix Computations", section 10.1.
    """
    import torch

    dim = check_integer("dim", dim, low=1)
    iters = min(check_integer("iters", iters, low=1), dim)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(dim, generator=gen, dtype=torch.float64).to(dtype=dtype or torch.float32, device=device)
    q = q / q.norm()
    basis, alphas, betas = [q], [], []
    for j in range(iters):
        w = matvec(basis[j]).detach()
        alpha = float(torch.dot(w, basis[j]))
        alphas.append(alpha)
        for b in basis:  # full reorthogonalisation (twice is enough)
            w = w - torch.dot(w, b) * b
        for b in basis:
            w = w - torch.dot(w, b) * b
        beta = float(w.norm())
        if j == iters - 1 or beta < 1e-10 * max(1.0, abs(alpha)):
            betas.append(beta)
            break
        betas.append(beta)
        basis.append(w / beta)
    k = len(alphas)
    t = np.diag(alphas) + np.diag(betas[:k - 1], 1) + np.diag(betas[:k - 1], -1)
    vals, vecs = np.linalg.eigh(t)
    return {"top": float(vals[-1]), "bottom": float(vals[0]), "residual": float(abs(betas[k - 1] * vecs[-1, -1])),
            "iters": k}


def relaxation_rate(rewards, eta: float, p_star: float | None = None) -> dict[str, float]:
    """Relaxation rate K of an expected-reward trajectory under plain steps of learning rate ``eta``.

    The oscillator model's linearised update with no momentum and no lag is
    ``e_{k+1} = (1 - eta K) e_k`` with ``e = p - p*`` (book chapter "From update rule to
    oscillator", section "The update rule, linearised").

    Parameters
    ----------
    rewards : array_like, shape (n + 1,)
        Expected reward ``p_0 .. p_n`` after 0..n steps, n >= 1.
    eta : float > 0
        The steps' learning rate.
    p_star : float, optional
        The fixed point. Given: ``K = (1 - (e_n / e_0)^(1/n)) / eta``. Not given (n >= 2): the
        least-squares line ``p_{k+1} - p_k = eta K (p* - p_k)`` gives K (minus its slope / eta) and
        ``p* = intercept / (eta K)``.

    Returns
    -------
    dict
        ``k`` and ``p_star`` (the one given or the fitted one).

    Raises
    ------
    ParameterError
        Fewer than 2 rewards (3 without ``p_star``), ``eta`` <= 0, an ``e_n / e_0`` <= 0 (the
        trajectory crossed the fixed point: not a relaxation).

    Examples
    --------
    >>> r = relaxation_rate([0.0, 0.1, 0.19, 0.271], eta=0.1, p_star=1.0)
    >>> round(r["k"], 9)
    1.0
    >>> round(relaxation_rate([0.0, 0.1, 0.19, 0.271], eta=0.1)["p_star"], 9)
    1.0
    """
    p = np.asarray(rewards, dtype=float)
    eta = check_real("eta", eta, low=0, low_inclusive=False)
    if p.ndim != 1 or p.size < (2 if p_star is not None else 3):
        raise ParameterError("rewards", f"`rewards` must be 1-D with at least {2 if p_star is not None else 3} "
                             f"values; got shape {p.shape}")
    n = p.size - 1
    if p_star is not None:
        ratio = (p[-1] - p_star) / (p[0] - p_star)
        if not ratio > 0:
            raise ParameterError(
                "rewards", f"the trajectory crossed p* = {p_star} (e_n/e_0 = {ratio:.3g}): not a relaxation"
            )
        return {"k": float((1.0 - ratio ** (1.0 / n)) / eta), "p_star": float(p_star)}
    slope, intercept = np.polyfit(p[:-1], np.diff(p), 1)
    k = -slope / eta
    return {"k": float(k), "p_star": float(intercept / (eta * k)) if k else math.nan}


def flat_grad(loss, params, create_graph: bool = False):
    """Gradient of a scalar ``loss`` with respect to ``params`` as one flat tensor (zeros where unused).

    ``create_graph=True`` keeps the graph for a second derivative (:func:`hvp_operator`).
    """
    import torch

    grads = torch.autograd.grad(loss, params, create_graph=create_graph, allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)])


def hvp_operator(loss, params, scale=None):
    """The operator ``v -> D H D v`` of the Hessian ``H`` of ``loss`` (``D = diag(scale)``, identity when None).

    Parameters
    ----------
    loss : torch.Tensor
        Scalar, built from ``params`` (its graph is kept for repeated products).
    params : list of torch.Tensor
        The parameters, flattened in this order.
    scale : torch.Tensor, shape (D,), optional
        Diagonal scaling, e.g. ``P^{-1/2}`` for Adam's preconditioned Hessian.

    Returns
    -------
    callable
        ``v`` (shape ``(D,)``) -> ``D H D v`` (shape ``(D,)``), by double backward (Pearlmutter 1994).
    """
    import torch

    grad = flat_grad(loss, params, create_graph=True)

    def matvec(v):
        u = v if scale is None else v * scale
        hv = torch.autograd.grad(grad @ u, params, retain_graph=True, allow_unused=True)
        out = torch.cat([(h if h is not None else torch.zeros_like(p)).reshape(-1) for h, p in zip(hv, params)])
        return out if scale is None else out * scale

    return matvec


def unflatten(v, params) -> list:
    """Views of the flat tensor ``v`` shaped as each of ``params``, in order."""
    out, i = [], 0
    for p in params:
        out.append(v[i : i + p.numel()].view_as(p))
        i += p.numel()
    return out


def adam_second_moment(grads: list, beta2: float):
    """Adam's bias-corrected second moment after ``len(grads)`` steps: ``sum_j (1 - b2) b2^(J-j) g_j^2 / (1 - b2^J)``.

    Parameters
    ----------
    grads : list of torch.Tensor, each shape (D,)
        The per-batch gradients, oldest first.
    beta2 : float in [0, 1)

    Returns
    -------
    torch.Tensor, shape (D,)
    """
    j = len(grads)
    v = sum((1 - beta2) * beta2 ** (j - 1 - i) * g.pow(2) for i, g in enumerate(grads))
    return v / (1 - beta2**j)


def set_flat(params, flat) -> None:
    """Copy the flat tensor ``flat`` into ``params`` (in place, no gradient)."""
    import torch

    with torch.no_grad():
        for p, x in zip(params, unflatten(flat, params)):
            p.copy_(x)
