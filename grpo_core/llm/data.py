"""Datasets of the LLM experiments: GSM8K for training, math benchmarks for evaluation, by hub id.

Everything is loaded with ``datasets.load_dataset`` from the Hugging Face hub, or from a local
folder laid out like the hub repository (which is how the tests exercise the same code without a
network: :func:`write_local_dataset` writes one).

Benchmarks (:data:`BENCHMARKS`), nearest to GSM8K first; each with the columns it is read from
and how its answer is checked:

===========  ==============================  ==========  =========================  ================
name         hub id                          split       question / answer columns  answer check
===========  ==============================  ==========  =========================  ================
gsm8k        openai/gsm8k (config main)      test        question / answer          number after ####
gsm_plus     qintongli/GSM-Plus              testmini    question / answer          number
svamp        ChilleD/SVAMP                   test        Body + Question / Answer   number
asdiv        EleutherAI/asdiv                validation  body + question / answer   number (unit cut)
gsm_hard     reasoning-machines/gsm-hard     train       input / target             number
math500      HuggingFaceH4/MATH-500          test        problem / answer           LaTeX answer
amc23        math-ai/amc23                   test        question / answer          LaTeX answer
aime24       HuggingFaceH4/aime_2024         train       problem / answer           number
aime25       math-ai/aime25                  test        problem / answer           number
===========  ==============================  ==========  =========================  ================

Items whose reference is not usable are left out and counted (GSM-Plus "critical thinking" items
have no numeric answer, ``"None"``; ASDiv items with several answers ``"3;4"``).

References
----------
Cobbe et al. (2021) GSM8K; Li et al. (2024) GSM-Plus; Patel et al. (2021) SVAMP; Miao et al. (2020)
ASDiv; Gao et al. (2023) PAL (GSM-Hard); Lightman et al. (2023) MATH-500; MAA AMC 2023, AIME 2024/2025.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError, GrpoError, ParameterError
from ..validation import check_choice, check_integer
from .answers import gsm8k_reference, parse_number

__all__ = [
    "Benchmark",
    "BENCHMARKS",
    "load_hub_dataset",
    "load_gsm8k",
    "load_benchmark",
    "write_local_dataset",
    "reference_value",
    "GSM8K_SAMPLE",
    "write_gsm8k_sample",
]

#: Twenty problems in the GSM8K schema (``question``; ``answer`` with ``<<calc>>`` notes and a final
#: ``#### n`` line), written for the offline tests of the GSM8K presets; not items of GSM8K.
GSM8K_SAMPLE = Path(__file__).with_name("gsm8k_sample.jsonl")


@dataclass(frozen=True)
class Benchmark:
    """How to load and score one evaluation set.

    Attributes
    ----------
    name : str
        Short name (``"gsm_plus"``).
    hub_id : str
        Dataset repository on the hub.
    config : str
        Configuration name (``""`` = none).
    split : str
        Split used.
    question : tuple of str
        Columns joined (with a space) into the question.
    answer : str
        Column of the reference answer.
    answer_kind : {"gsm8k", "number", "number_unit", "math"}
        ``gsm8k``: the number after ``####``; ``number``: a number (or numeric string);
        ``number_unit``: a number followed by a unit, ``"9 (apples)"``; ``math``: a LaTeX answer
        compared by :func:`grpo_core.llm.answers.math_answers_equal`.
    distance : int
        Rank of the distance from GSM8K (0 = GSM8K itself), for the transfer chart.
    """

    name: str
    hub_id: str
    config: str
    split: str
    question: tuple[str, ...]
    answer: str
    answer_kind: str
    distance: int


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("gsm8k", "openai/gsm8k", "main", "test", ("question",), "answer", "gsm8k", 0),
    Benchmark("gsm_plus", "qintongli/GSM-Plus", "", "testmini", ("question",), "answer", "number", 1),
    Benchmark("svamp", "ChilleD/SVAMP", "", "test", ("Body", "Question"), "Answer", "number", 2),
    Benchmark("asdiv", "EleutherAI/asdiv", "", "validation", ("body", "question"), "answer", "number_unit", 3),
    Benchmark("gsm_hard", "reasoning-machines/gsm-hard", "", "train", ("input",), "target", "number", 4),
    Benchmark("math500", "HuggingFaceH4/MATH-500", "", "test", ("problem",), "answer", "math", 5),
    Benchmark("amc23", "math-ai/amc23", "", "test", ("question",), "answer", "math", 6),
    Benchmark("aime24", "HuggingFaceH4/aime_2024", "", "train", ("problem",), "answer", "number", 7),
    Benchmark("aime25", "math-ai/aime25", "", "test", ("problem",), "answer", "number", 8),
)}


def load_hub_dataset(path: str, config: str = "", split: str = "train", *, revision: str = ""):
    """``datasets.load_dataset(path, config, split=split)`` with errors a user can act on.

    Parameters
    ----------
    path : str
        Hub id (``"openai/gsm8k"``) or a local folder laid out like the hub repository.
    config : str
        Configuration name (``""`` = the default one).
    split : str
        Split name.
    revision : str
        Hub revision (``""`` = default branch).

    Returns
    -------
    datasets.Dataset
        A local folder's rows are read afresh, into memory, at every call (never an earlier
        folder's cached rows); a hub dataset goes through datasets' cache.

    Raises
    ------
    GrpoError
        The dataset, configuration or split cannot be loaded (no network, unknown id, wrong split);
        the message names them and the cause.
    """
    import shutil
    import tempfile

    from datasets import load_dataset

    kwargs: dict[str, Any] = {"split": split}
    if revision:
        kwargs["revision"] = revision
    scratch = None
    if Path(path).is_dir():
        # a local folder is read afresh into memory: datasets' cache is keyed by the folder's name, and
        # offline it hands back whatever an earlier folder of that name ('gsm8k') held
        scratch = tempfile.mkdtemp(prefix="grpo-dataset-")
        kwargs.update(cache_dir=scratch, keep_in_memory=True)
    try:
        return load_dataset(path, config or None, **kwargs)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types (ConnectionError, ValueError, ...)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GrpoError(f"dataset {path!r} (config {config or 'default'!r}, split {split!r}) cannot be loaded: "
                        f"{first}") from exc
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def reference_value(raw: Any, kind: str) -> Any:
    """The reference answer of one item: a float for numeric kinds, a string for ``math``,
    ``None`` when the item has no usable answer (it is then left out).

    Raises
    ------
    ParameterError
        Unknown ``kind``.

    Examples
    --------
    >>> reference_value("9 (apples)", "number_unit"), reference_value("None", "number")
    (9.0, None)
    """
    check_choice("kind", kind, ("gsm8k", "number", "number_unit", "math"))
    if raw is None:
        return None
    if kind == "math":
        text = str(raw).strip()
        return text or None
    if kind == "gsm8k":
        try:
            return gsm8k_reference(str(raw))
        except ParameterError:
            return None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    text = str(raw).strip()
    if not text or text.lower() in ("none", "nan") or ";" in text:
        return None
    return parse_number(text)


def _question(row: dict, columns: tuple[str, ...]) -> str:
    parts = [str(row[c]).strip() for c in columns if row.get(c) not in (None, "")]
    return " ".join(parts)


def load_gsm8k(path: str = "openai/gsm8k", config: str = "main", split: str = "train", *,
               limit: int = 0, revision: str = "") -> list[dict[str, Any]]:
    """GSM8K (or any data in its schema) as ``{"question", "reference", "solution"}`` items.

    Parameters
    ----------
    path, config, split, revision
        As :func:`load_hub_dataset`; a local folder in the GSM8K schema (columns ``question`` and
        ``answer``, the answer ending in ``#### <number>``) works the same way.
    limit : int
        Keep the first ``limit`` usable items (0 = all).

    Returns
    -------
    list of dict
        ``reference`` is the number after ``####`` (float); ``solution`` the full answer text.

    Raises
    ------
    GrpoError
        The dataset cannot be loaded.
    DataError
        It lacks the ``question`` or ``answer`` column, or has no item with a ``####`` answer.
    """
    limit = check_integer("limit", limit, low=0)
    ds = load_hub_dataset(path, config, split, revision=revision)
    missing = {"question", "answer"} - set(ds.column_names)
    if missing:
        raise DataError(f"dataset {path!r} is not in the GSM8K schema: missing column(s) {sorted(missing)}; "
                        f"it has {ds.column_names}")
    items = []
    for row in ds:
        ref = reference_value(row["answer"], "gsm8k")
        if ref is None:
            continue
        items.append({"question": str(row["question"]).strip(), "reference": ref, "solution": row["answer"]})
        if limit and len(items) >= limit:
            break
    if not items:
        raise DataError(f"dataset {path!r} has no item whose answer ends in '#### <number>'")
    return items


def load_benchmark(name: str, *, path: str = "", limit: int = 0, revision: str = "") -> tuple[list[dict], int]:
    """One evaluation benchmark as ``{"question", "reference"}`` items.

    Parameters
    ----------
    name : str
        A key of :data:`BENCHMARKS`.
    path : str
        Load from this hub id or local folder instead of the benchmark's own hub id (same schema,
        same configuration and split): how tests load a few hand-written items.
    limit : int
        Keep the first ``limit`` usable items (0 = all).
    revision : str
        Hub revision.

    Returns
    -------
    items : list of dict
        ``reference`` is a float, or a string for MATH-style benchmarks.
    skipped : int
        Items left out because their reference is not usable.

    Raises
    ------
    ParameterError
        Unknown benchmark name.
    GrpoError
        The dataset cannot be loaded.
    DataError
        It lacks the benchmark's columns.
    """
    spec = BENCHMARKS[check_choice("name", name, BENCHMARKS)]
    limit = check_integer("limit", limit, low=0)
    ds = load_hub_dataset(path or spec.hub_id, spec.config, spec.split, revision=revision)
    needed = set(spec.question) | {spec.answer}
    missing = needed - set(ds.column_names)
    if missing:
        raise DataError(f"benchmark {name!r} ({path or spec.hub_id}) lacks column(s) {sorted(missing)}; "
                        f"it has {ds.column_names}")
    items, skipped = [], 0
    for row in ds:
        ref = reference_value(row[spec.answer], spec.answer_kind)
        if ref is None:
            skipped += 1
            continue
        items.append({"question": _question(row, spec.question), "reference": ref})
        if limit and len(items) >= limit:
            break
    return items, skipped


def write_local_dataset(folder: str | Path, splits: dict[str, list[dict]], *, config: str = "") -> Path:
    """Write rows as a local dataset laid out like a hub repository (parquet + README configs).

    ``load_hub_dataset(folder, config, split)`` then reads it through the same
    ``datasets.load_dataset`` call as the hub. Used by the tests and for offline smoke runs.

    Parameters
    ----------
    folder : str or path
        Created if missing.
    splits : dict of str to list of dict
        Split name -> rows (all rows with the same columns).
    config : str
        Configuration name (``"main"`` for GSM8K); ``""`` writes the default configuration.

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    ParameterError
        No split, or an empty split.

    Examples
    --------
    >>> import tempfile
    >>> root = write_local_dataset(tempfile.mkdtemp(), {"test": [{"question": "1+1?", "answer": "#### 2"}]},
    ...                            config="main")
    >>> load_gsm8k(str(root), "main", "test")[0]["reference"]
    2.0
    """
    from datasets import Dataset

    if not splits or any(not rows for rows in splits.values()):
        raise ParameterError("splits", "`splits` must map at least one split name to a non-empty list of rows")
    root = Path(folder)
    sub = config or "default"
    (root / sub).mkdir(parents=True, exist_ok=True)
    data_files = []
    for split, rows in splits.items():
        file = f"{sub}/{split}-00000-of-00001.parquet"
        Dataset.from_list(rows).to_parquet(str(root / file))
        data_files.append({"split": split, "path": file})
    card = {"config_name": sub, "data_files": data_files}
    if not config:
        card["default"] = True
    (root / "README.md").write_text("---\nconfigs:\n" + _yaml_list([card]) + "---\n")
    return root


def _yaml_list(items: list[dict]) -> str:
    lines = []
    for item in items:
        first = True
        for key, value in item.items():
            prefix = "- " if first else "  "
            first = False
            if isinstance(value, list):
                lines.append(f"{prefix}{key}:")
                for entry in value:
                    sub_first = True
                    for k, v in entry.items():
                        lines.append(f"  {'- ' if sub_first else '  '}{k}: {json.dumps(v)}")
                        sub_first = False
            else:
                lines.append(f"{prefix}{key}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def write_gsm8k_sample(folder: str | Path, *, test_rows: int = 4) -> Path:
    """Write :data:`GSM8K_SAMPLE` as a local GSM8K (configuration ``main``, splits ``train`` and ``test``).

    Parameters
    ----------
    folder : str or path
        Created if missing; pass it as the ``dataset`` of a GSM8K preset (and, as
        ``<benchmark_dir>/gsm8k``, as the ``gsm8k`` benchmark).
    test_rows : int, default 4
        The last ``test_rows`` problems form the test split, the others the training split;
        in [1, 19].

    Returns
    -------
    pathlib.Path
        The folder (:func:`write_local_dataset`).

    Raises
    ------
    ParameterError
        ``test_rows`` outside [1, 19].

    Examples
    --------
    >>> import tempfile
    >>> root = write_gsm8k_sample(tempfile.mkdtemp())
    >>> len(load_gsm8k(str(root), "main", "train")), load_gsm8k(str(root), "main", "test")[-1]["reference"]
    (16, 14.0)
    """
    rows = [json.loads(line) for line in GSM8K_SAMPLE.read_text().splitlines() if line.strip()]
    test_rows = check_integer("test_rows", test_rows, low=1, high=len(rows) - 1)
    return write_local_dataset(folder, {"train": rows[:-test_rows], "test": rows[-test_rows:]}, config="main")


#: Scorer signature used by :mod:`grpo_core.llm.evaluation`: (completion text, reference) -> 0/1.
Scorer = Callable[[str, Any], float]
