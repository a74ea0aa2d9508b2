"""Access to the data shipped with :mod:`grpo_core`.

The real GRPO training logs in ``grpo_core/data/real_logs`` were read off the saved outputs of the
public Unsloth GRPO notebooks (LGPL-3.0); their README says which run each file is and with which
settings. They are used by the book, the tests and the log explorer, and travel with the installed
package (so they work on Colab too).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import ParameterError

__all__ = ["real_log_path", "list_real_logs", "REAL_LOGS_README"]

_PACKAGE = "grpo_core.data"
#: Name of the README describing the real logs (models, settings, provenance).
REAL_LOGS_README = "README.md"


def _folder() -> Path:
    return Path(str(resources.files(_PACKAGE).joinpath("real_logs")))


def list_real_logs() -> list[str]:
    """Names of the shipped real logs, e.g. ``["gemma3-1b-it_gsm8k_unsloth.csv", ...]`` (sorted)."""
    return sorted(p.name for p in _folder().iterdir() if p.suffix in {".csv", ".json", ".jsonl"})


def real_log_path(name: str) -> Path:
    """Path of one shipped real log (or of its ``README.md``).

    Parameters
    ----------
    name : str
        File name as listed by :func:`list_real_logs`, or ``"README.md"``. The stem without
        ``.csv`` is accepted too (``"qwen2.5-3b-instruct_gsm8k_unsloth"``).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        If no shipped file has that name; the message lists the available ones.

    Examples
    --------
    >>> real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth").name
    'qwen2.5-3b-instruct_gsm8k_unsloth.csv'
    """
    folder = _folder()
    for candidate in (name, f"{name}.csv"):
        path = folder / candidate
        if path.is_file():
            return path
    raise ParameterError("name", f"`name` must be one of {list_real_logs()}; got {name!r}")
