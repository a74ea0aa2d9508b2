"""The input check every public function of the forecast room makes on its log."""

from __future__ import annotations

from ...errors import ParameterError
from ..logs import RunLog


def check_log(log) -> RunLog:
    """``log`` itself, or :class:`ParameterError` naming it when it is not a :class:`RunLog` (None, a
    DataFrame, a path: read one with :func:`grpo_core.runs.logs.read_log`)."""
    if not isinstance(log, RunLog):
        raise ParameterError("log", "`log` must be a RunLog (a file: grpo_core.runs.logs.read_log; a DataFrame: "
                                    f"from_frame; records: from_records); got {type(log).__name__}")
    return log
