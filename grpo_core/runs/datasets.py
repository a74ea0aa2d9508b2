"""Access to the data shipped with :mod:`grpo_core`: the real logs and the example logs.

The real GRPO training logs in ``grpo_core/data/real_logs`` were read off the saved outputs of the
public Unsloth GRPO notebooks (LGPL-3.0); their README says which run each file is and with which
settings. They are used by the book, the tests and the log explorer, and travel with the installed
package (so they work on Colab too). The example logs in ``grpo_core/data/example_logs`` are
constructed logs of the user cases (their README says which).

The 20 real runs in ``grpo_core/data/real_runs`` (:func:`real_runs`, :func:`real_run`) are training
logs other people committed to public repositories (TRL, Unsloth, ms-swift, verl, custom loops), each
folder with the raw file exactly as committed, a plain per-step parse (``parsed_rows.csv``) and a
``meta.json`` (source repository, path and commit, hyperparameters, the reward metric, a reader's
description of the curve); that folder's ``README.md`` and ``index.csv`` describe the set. The 17 runs of
``grpo_core/data/holdout_runs`` (``collection="holdout_runs"``) have the same layout, without
``parsed_rows.csv``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ParameterError

__all__ = ["real_log_path", "list_real_logs", "REAL_LOGS_README", "example_log_path", "list_example_logs",
           "RealRun", "real_runs", "real_run", "RUN_COLLECTIONS",
           "tracker_runs", "tracker_run_path"]

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


# --- the 20 real runs -------------------------------------------------------------------------

@dataclass(frozen=True)
class RealRun:
    """One run of ``grpo_core/data/real_runs``.

    Attributes
    ----------
    run_id : str
        The folder name, e.g. ``"01-Sunshine535-rho1-collapse"``.
    path : pathlib.Path
        The raw file as committed upstream (what a user hands to ``grpo-dynamics``).
    meta : dict
        The parsed ``meta.json`` (``source_repo``, ``commit``, ``reward_metric``, ``group_size_G``,
        ``learning_rate``, ``curve_description``, ``failure_signals`` ...).
    folder : pathlib.Path
        The run's folder (``parsed_rows.csv`` and ``meta.json`` are in it).
    """

    run_id: str
    path: Path
    meta: dict[str, Any]
    folder: Path

    @property
    def parsed_rows_path(self) -> Path:
        """``parsed_rows.csv``: one row per logged step, a plain parse of the raw file (for checking)."""
        return self.folder / "parsed_rows.csv"

    @property
    def run(self) -> str | None:
        """The ``run`` selection for :func:`~grpo_core.runs.logs.read_log` when the raw file holds several
        runs (``meta.json``'s ``run_filter``, e.g. ``"arm=pure-GRPO"``), else ``None``."""
        selection = self.meta.get("run_filter")
        if not selection:
            return None
        (column, label), = selection.items()
        return f"{column}={label}"


#: The collections of real runs: ``"real_runs"`` (the first 20), ``"holdout_runs"`` (17 collected later
#: as an out-of-sample test of the forecaster; its record is ``bench/results/forecast_holdout_v1.json``;
#: the forecasting benchmark and the shipped prior use these 37) and ``"holdout_runs_2"`` (collected from
#: other repositories for the second, pre-registered test: ``bench/results/preregistration_v2.md``) and
#: ``"holdout_runs_3"`` (15 runs from 15 further repositories, the third pre-registered test:
#: ``bench/results/preregistration_v3.md``).
RUN_COLLECTIONS = ("real_runs", "holdout_runs", "holdout_runs_2", "holdout_runs_3")


def _runs_folder(collection: str = "real_runs") -> Path:
    if collection not in RUN_COLLECTIONS:
        raise ParameterError("collection", f"`collection` must be one of {list(RUN_COLLECTIONS)}; got {collection!r}")
    return Path(str(resources.files(_PACKAGE).joinpath(collection)))


def real_runs(collection: str = "real_runs") -> list[str]:
    """Ids of the real runs in ``grpo_core/data/<collection>`` (folder names, sorted).

    Parameters
    ----------
    collection : {"real_runs", "holdout_runs", "holdout_runs_2", "holdout_runs_3"}
        ``"real_runs"``: the 20 runs; ``"holdout_runs"``: the 17 runs of the first out-of-sample test;
        ``"holdout_runs_2"``: the runs of the second; ``"holdout_runs_3"``: those of the third.

    Raises
    ------
    ParameterError
        An unknown collection.

    Examples
    --------
    >>> ids = real_runs()
    >>> len(ids), ids[0]
    (20, '01-Sunshine535-rho1-collapse')
    """
    folder = _runs_folder(collection)
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / "meta.json").is_file())


def real_run(run_id: str, collection: str = "real_runs") -> RealRun:
    """One real run: the path of its raw file and its parsed ``meta.json``.

    Parameters
    ----------
    run_id : str
        An id from :func:`real_runs`, or its number (``"01"``, ``"13"``).
    collection : {"real_runs", "holdout_runs", "holdout_runs_2", "holdout_runs_3"}
        Where to look (see :func:`real_runs`).

    Returns
    -------
    RealRun

    Raises
    ------
    ParameterError
        No run has that id (the message lists the valid ids).

    Examples
    --------
    >>> r = real_run("13")
    >>> r.path.name, r.meta["reward_metric"], r.run
    ('grpo_curves.csv', 'critic/score/mean', 'arm=pure-GRPO')
    """
    ids = real_runs(collection)
    key = str(run_id)
    match = [i for i in ids if key in (i, i.split("-", 1)[0])]
    if len(match) != 1:
        raise ParameterError("run_id", f"`run_id` must be one of {ids} (or its number); got {run_id!r}")
    folder = _runs_folder(collection) / match[0]
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    return RealRun(run_id=match[0], path=folder / meta["raw_file"], meta=meta, folder=folder)


def tracker_runs() -> list[str]:
    """Names of the real runs kept as their trackers wrote them (``grpo_core/data/tracker_runs``: TensorBoard
    event files, W&B run folders, MLflow stores; each folder's ``SOURCE.md`` gives its provenance), sorted."""
    folder = _folder("tracker_runs")
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def tracker_run_path(name: str) -> Path:
    """The folder of the tracker run ``name`` (one of :func:`tracker_runs`), to pass to
    :func:`grpo_core.runs.logs.read_log`.

    Raises
    ------
    ParameterError
        ``name`` is not one of :func:`tracker_runs` (the message lists them).
    """
    names = tracker_runs()
    if name not in names:
        raise ParameterError("name", f"`name` must be one of {names}; got {name!r}")
    return _folder("tracker_runs") / name
