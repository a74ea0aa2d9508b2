"""Exceptions raised by :mod:`grpo_core`.

Every error a user can cause (a bad hyperparameter, an unreadable log) is a subclass of
:class:`GrpoError`, so the command line can print it as one line and exit non-zero, and library
users can catch one type. Both concrete classes are also :class:`ValueError`, so code written
against the usual numpy/scipy convention keeps working.
"""

from __future__ import annotations

import re

__all__ = ["GrpoError", "ParameterError", "DataError", "SeveralRunsError"]

# NumPy >= 2 writes scalars as ``np.float64(0.5)``; a message shows the plain value ``0.5``.
_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint|complex|bool|str)_?\d*\(([^()]*)\)")


def _plain(message: str) -> str:
    return _NUMPY_SCALAR.sub(r"\1", message)


class GrpoError(Exception):
    """Base class of every error caused by the caller's input.

    A message that quotes a NumPy scalar (``np.float64(0.5)``, as ``repr`` writes it under NumPy 2)
    shows the plain value (``0.5``).
    """

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (_plain(args[0]),) + args[1:]
        super().__init__(*args)


class ParameterError(GrpoError, ValueError):
    """A parameter is outside its allowed range.

    Attributes
    ----------
    parameter : str
        The offending parameter's name, as the caller spelled it (``"eta"``, ``"k_ref"``).
    """

    def __init__(self, parameter: str, message: str):
        super().__init__(message)
        self.parameter = parameter


class DataError(GrpoError, ValueError):
    """Input data (a log, a curve, a rewards array) cannot be used as given."""


class SeveralRunsError(DataError):
    """The input holds several runs and ``run`` chose none of them.

    Attributes
    ----------
    runs : list of str
        For each run, a value of ``run`` that reads it (a label, ``"arm=pure-GRPO"``, a run folder, ``"2"``), in
        the input's order.
    labels : list of str
        For each run, how to name it to a person (its name where ``runs`` holds ids; default: ``runs``).
    """

    def __init__(self, message: str, runs, labels=None):
        super().__init__(message)
        self.runs = [str(r) for r in runs]
        self.labels = self.runs if labels is None else [str(x) for x in labels]
