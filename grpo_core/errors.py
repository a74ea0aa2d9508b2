"""Exceptions raised by :mod:`grpo_core`.

Every error a user can cause (a bad hyperparameter, an unreadable log) is a subclass of
:class:`GrpoError`, so the command line can print it as one line and exit non-zero, and library
users can catch one type. Both concrete classes are also :class:`ValueError`, so code written
against the usual numpy/scipy convention keeps working.
"""

from __future__ import annotations

__all__ = ["GrpoError", "ParameterError", "DataError"]


class GrpoError(Exception):
    """Base class of every error caused by the caller's input."""


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
