"""Access to the data shipped with :mod:`grpo_core`: the real logs and the example logs.

The real GRPO training logs in ``grpo_core/data/real_logs`` were read off the saved outputs of the
public Unsloth GRPO notebooks (LGPL-3.0); their README says which run each file is and with which
settings. They are used by the book, the tests and the log explorer, and travel with the installed
package (so they work on Colab too). The example logs in ``grpo_core/data/example_logs`` are
constructed logs of the user cases (their README says which).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import ParameterError

__all__ = ["real_log_path", "list_real_logs", "REAL_LOGS_README", "example_log_path", "list_example_logs"]

_PACKAGE = "grpo_core.data"
#: Name of the README describing the real logs (models, settings, provenance).
REAL_LOGS_README = "README.md"


_LOG_SUFFIXES = {".csv", ".json", ".jsonl"}


def _folder(name: str = "real_logs") -> Path:
    return Path(str(resources.files(_PACKAGE).joinpath(name)))


def _logs_in(name: str) -> list[str]:
    return sorted(p.name for p in _folder(name).iterdir() if p.suffix in _LOG_SUFFIXES)


def _find(folder: str, name: str, candidates) -> Path:
    """The first file of ``folder`` that ``candidates`` accepts, or a ParameterError listing them."""
    names = _logs_in(folder)
    for candidate in names:
        if candidates(candidate):
            return _folder(folder) / candidate
    raise ParameterError("name", f"`name` must be one of {names}; got {name!r}")


def list_real_logs() -> list[str]:
    """Names of the shipped real logs, e.g. ``["gemma3-1b-it_gsm8k_unsloth.csv", ...]`` (sorted)."""
    return _logs_in("real_logs")


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
        The file inside the installed package (``grpo_core/data/real_logs``).

    Raises
    ------
    ParameterError
        If no shipped file has that name; the message lists the available ones.

    Examples
    --------
    >>> real_log_path("qwen2.5-3b-instruct_gsm8k_unsloth").name
    'qwen2.5-3b-instruct_gsm8k_unsloth.csv'
    """
    readme = _folder() / REAL_LOGS_README
    if name == REAL_LOGS_README and readme.is_file():
        return readme
    return _find("real_logs", name, lambda candidate: name in (candidate, candidate.removesuffix(".csv")))


def list_example_logs() -> list[str]:
    """Names of the example logs in ``grpo_core/data/example_logs`` (sorted; see its README).

    Examples
    --------
    >>> list_example_logs()[0]
    '01-all-groups-zero-spread.json'
    """
    return _logs_in("example_logs")


def example_log_path(name: str) -> Path:
    """Path of one example log shipped with the package (constructed logs of the user cases).

    Parameters
    ----------
    name : str
        A name from :func:`list_example_logs`, with or without its extension, or just its number
        (``"03"``).

    Returns
    -------
    pathlib.Path
        The file in ``grpo_core/data/example_logs``; it holds the same bytes as the case's input
        in ``tests/data/cases``.

    Raises
    ------
    ParameterError
        No example log has that name (the message lists them).

    Examples
    --------
    >>> example_log_path("03").name
    '03-growing-oscillation.csv'
    """
    return _find("example_logs", name,
                 lambda candidate: name in (candidate, candidate.rsplit(".", 1)[0], candidate.split("-", 1)[0]))
