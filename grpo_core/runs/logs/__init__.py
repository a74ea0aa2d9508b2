"""Reading GRPO training logs of many formats into one normalised per-step table.

:func:`read_log` detects a log's container and format and returns a :class:`RunLog`: the training
rows indexed by optimizer step, the evaluation rows apart, and a record of everything done on the
way (renamed columns, merged or dropped rows), so that no table is ever silently wrong.

The room, one module per concept:

``schema``   the formats, the normalised column names (the format and column reference), ``LogWarning``
``trl``      TRL (and notebook display-name) keys, TRL releases, what ``reward_std`` means
``verl``     verl keys
``keys``     :func:`normalize_key`, :func:`normalize_record` (any format's key -> normalised name, split)
``parsing``  the container: JSON document, JSON lines, CSV
``tensorboard`` TensorBoard event files and folders of them (tensorboardX, a dependency)
``wandb_files`` W&B run files (``.wandb``) and run folders (the extra ``grpo-dynamics[wandb]``)
``mlflow_store`` MLflow file stores (``mlruns/``), by their documented layout
``discover`` the logs in paths and folders a user gives (many runs at once)
``console``  console and stream logs (what a run printed: TRL/Unsloth/ms-swift metric dicts among
             progress bars, verl ``step:N - key:value`` lines, Kaggle stream logs)
``aliases``  W&B exports, files holding several runs (``run=``: a run column, runs appended one after the
             other), step columns by name (``grpo_step``, ``iteration``), step and reward aliases
             (``reward_mean``, ``mean_reward``, ``reward/selected_mean``, per-function rewards)
``detect``   which format a table's columns are
``build``    the normalised tables, as a pipeline of named stages (and the row-handling rules)
``runlog``   :class:`RunLog`
``read``     :func:`read_log`, :func:`from_records`, :func:`from_frame`

A new format family gets its own module beside ``trl`` and ``verl``; a new container, a parser
beside ``parsing``. The example logs shipped with the package are in :mod:`grpo_core.runs.datasets`.
"""

from __future__ import annotations

from .keys import normalize_key, normalize_record
from .read import from_frame, from_records, read_log
from .runlog import RunLog
from .schema import FORMATS, NORMALISED_COLUMNS, REWARD_STD_KINDS, LogWarning
from .trl import parse_version

__all__ = [
    "RunLog",
    "LogWarning",
    "read_log",
    "from_records",
    "from_frame",
    "normalize_record",
    "normalize_key",
    "FORMATS",
    "REWARD_STD_KINDS",
    "NORMALISED_COLUMNS",
    "parse_version",
]
