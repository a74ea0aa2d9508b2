"""A tiny expression language that renders to a Vega expression AND evaluates with numpy.

Charts that must compute on a static page (no kernel) carry their model as Vega expressions
(``transform_calculate``). Written as bare strings, such formulas cannot be tested. Written with
:class:`Expr`, the same object gives the Vega string (``str(expr)``) and its numpy value
(``expr.evaluate(eta=..., t=...)``), so tests compare it with :mod:`grpo_core` directly.

Supported: numbers, strings, named variables (a Vega param such as ``eta`` or a data field such
as ``datum.t``), ``+ - * /``, unary minus, comparisons, ``&`` / ``|`` (rendered ``&&`` / ``||``),
the functions of :data:`FUNCTIONS` and the conditional :func:`where` (``c ? a : b``). Evaluation
is element-wise and evaluates both branches of a conditional (with floating-point warnings
silenced); Vega evaluates only the taken branch, so keep the value of the branch not taken
irrelevant, as with ``numpy.where``.

Example
-------
>>> from widgets.vega_expr import var, fn, where
>>> x = var("x")
>>> e = where(x > 0, fn.sqrt(x), -x)
>>> str(e)
'((x > 0.0) ? sqrt(x) : (-(x)))'
>>> e.evaluate(x=[4.0, -2.0]).tolist()
[2.0, 2.0]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Expr", "var", "lit", "where", "field_at", "fn", "FUNCTIONS"]


class Expr:
    """An expression with a Vega rendering and a numpy evaluator.

    Parameters
    ----------
    vega : str
        The Vega expression text.
    evaluator : callable
        ``evaluator(env) -> ndarray`` where ``env`` maps variable names to arrays.
    """

    __slots__ = ("vega", "_eval")

    def __init__(self, vega: str, evaluator: Callable[[dict[str, Any]], Any]):
        self.vega = vega
        self._eval = evaluator

    def __str__(self) -> str:
        return self.vega

    def __repr__(self) -> str:
        return f"Expr({self.vega!r})"

    def evaluate(self, **env: Any) -> np.ndarray:
        """Numeric (or string) value with numpy, variables given by keyword (broadcast together)."""
        arrays = {k: np.asarray(v) for k, v in env.items()}
        with np.errstate(all="ignore"):
            return np.asarray(self._eval(arrays))

    # arithmetic -------------------------------------------------------------------------------
    def _bin(self, other: Any, op: str, func: Callable, reverse: bool = False) -> Expr:
        other = _as_expr(other)
        left, right = (other, self) if reverse else (self, other)
        return Expr(f"({left.vega} {op} {right.vega})", lambda env: func(left._eval(env), right._eval(env)))

    def __add__(self, o):
        return self._bin(o, "+", _add)

    def __radd__(self, o):
        return self._bin(o, "+", _add, reverse=True)

    def __sub__(self, o):
        return self._bin(o, "-", np.subtract)

    def __rsub__(self, o):
        return self._bin(o, "-", np.subtract, reverse=True)

    def __mul__(self, o):
        return self._bin(o, "*", np.multiply)

    def __rmul__(self, o):
        return self._bin(o, "*", np.multiply, reverse=True)

    def __truediv__(self, o):
        return self._bin(o, "/", np.divide)

    def __rtruediv__(self, o):
        return self._bin(o, "/", np.divide, reverse=True)

    def __neg__(self):
        return Expr(f"(-({self.vega}))", lambda env: -self._eval(env))

    def __lt__(self, o):
        return self._bin(o, "<", np.less)

    def __le__(self, o):
        return self._bin(o, "<=", np.less_equal)

    def __gt__(self, o):
        return self._bin(o, ">", np.greater)

    def __ge__(self, o):
        return self._bin(o, ">=", np.greater_equal)

    def __and__(self, o):
        return self._bin(o, "&&", np.logical_and)

    def __or__(self, o):
        return self._bin(o, "||", np.logical_or)

    __hash__ = None  # type: ignore[assignment]  # == is not overloaded; do not hash


def _add(a: Any, b: Any) -> Any:
    if np.asarray(a).dtype.kind in "US" or np.asarray(b).dtype.kind in "US":
        return np.char.add(np.asarray(a).astype(str), np.asarray(b).astype(str))
    return np.add(a, b)


def _as_expr(x: Any) -> Expr:
    return x if isinstance(x, Expr) else lit(x)


def lit(value: float | int | str | bool) -> Expr:
    """A literal number, string or boolean."""
    if isinstance(value, bool):
        return Expr("true" if value else "false", lambda env: np.asarray(value))
    if isinstance(value, str):
        return Expr(json.dumps(value).replace('"', "'") if "'" not in value else json.dumps(value),
                    lambda env: np.asarray(value))
    v = float(value)
    text = repr(v) if np.isfinite(v) else ("(1 / 0)" if v > 0 else "(-1 / 0)")  # Vega has no Infinity name
    return Expr(text if v >= 0 else f"({text})", lambda env: np.asarray(v))


def var(name: str, vega: str | None = None) -> Expr:
    """A variable: a Vega param (``var("eta")``) or a datum field (``var("t", "datum.t")``).

    ``name`` is the keyword used by :meth:`Expr.evaluate`; ``vega`` the text in the expression
    (default: ``name``).
    """
    return Expr(vega or name, lambda env: env[name])


def where(cond: Expr, a: Any, b: Any) -> Expr:
    """Conditional: Vega ``(cond ? a : b)``; numpy ``np.where(cond, a, b)``."""
    a, b = _as_expr(a), _as_expr(b)
    return Expr(
        f"({cond.vega} ? {a.vega} : {b.vega})",
        lambda env: np.where(cond._eval(env), a._eval(env), b._eval(env)),
    )


def field_at(prefix: str, index: Any) -> Expr:
    """The datum field named ``prefix`` followed by an integer index computed on the page.

    Vega ``datum['e' + (index)]``; numpy: the variable ``f"{prefix}{index}"`` of the environment
    (element-wise over ``index``). A recurrence unrolled into one ``calculate`` per step reads an
    earlier step whose distance is a param (a lag of ``k_ref`` steps) this way.

    >>> e = field_at("e", var("k") - 1)
    >>> str(e)
    "datum['e' + ((k - 1.0))]"
    >>> float(e.evaluate(k=2, e0=0.5, e1=0.25))
    0.25
    """
    index = _as_expr(index)

    def evaluate(env: dict[str, Any]) -> Any:
        idx = np.asarray(index._eval(env))
        out = np.empty(idx.shape)
        for pos, i in np.ndenumerate(idx):
            v = np.asarray(env[f"{prefix}{int(round(float(i)))}"], float)
            out[pos] = v[pos] if v.ndim else v
        return out

    return Expr(f"datum[{prefix!r} + ({index.vega})]", evaluate)


def _format(x: Any, spec: str) -> Any:
    return np.vectorize(lambda v: format(float(v), spec), otypes=[str])(x)


#: Vega expression functions available through :data:`fn`, with their numpy twins.
FUNCTIONS: dict[str, Callable] = {
    "exp": np.exp,
    "sqrt": np.sqrt,
    "cos": np.cos,
    "sin": np.sin,
    "abs": np.abs,
    "log": np.log,
    "floor": np.floor,
    "round": np.round,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "isFinite": np.isfinite,
}


class _Functions:
    """``fn.exp(x)``, ``fn.max(a, b)``, ... and ``fn.format(x, '.3f')`` (d3-format specifier)."""

    def __getattr__(self, name: str) -> Callable[..., Expr]:
        if name not in FUNCTIONS:
            raise AttributeError(f"no Vega function {name!r} in widgets.vega_expr.FUNCTIONS")
        func = FUNCTIONS[name]

        def call(*args: Any) -> Expr:
            exprs = [_as_expr(a) for a in args]
            text = f"{name}({', '.join(e.vega for e in exprs)})"
            return Expr(text, lambda env: func(*(e._eval(env) for e in exprs)))

        return call

    @staticmethod
    def format(x: Any, spec: str) -> Expr:
        """Vega ``format(x, spec)`` (d3-format). The Python twin agrees for fixed-point specs (``.2f``);
        d3 and Python differ on others (d3 ``.3g`` keeps trailing zeros), so test with ``f`` specs."""
        x = _as_expr(x)
        return Expr(f"format({x.vega}, '{spec}')", lambda env: _format(x._eval(env), spec))


fn = _Functions()
