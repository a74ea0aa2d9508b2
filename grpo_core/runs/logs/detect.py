"""Which format a table's column names are."""

from __future__ import annotations

from collections.abc import Iterable

from .schema import _NORMALISED
from .trl import _TRL_EXACT, _TRL_MARKERS, _TRL_PREFIXES
from .verl import _VERL_EXACT, _VERL_PREFIXES


def _detect(keys: Iterable[str]) -> str | None:
    keys = [str(k) for k in keys]
    if any(k.startswith(_VERL_PREFIXES) or k in _VERL_EXACT and k != "step" for k in keys):
        return "verl"
    if any(k in ("Step", "Training Loss", "Validation Loss") or " / " in k for k in keys):
        return "notebook"
    own = _NORMALISED | {"split", "trl_version"}
    specific = own - set(_TRL_EXACT)
    if "split" in keys or any(k.startswith(("reward/", "reward_std/")) or k in specific for k in keys):
        return "grpo_dynamics"
    if any(k in _TRL_MARKERS or k.startswith(_TRL_PREFIXES) or k in _TRL_EXACT and "/" in k for k in keys):
        return "trl"
    known = sum(k in own and k != "step" for k in keys)
    if known >= 2 or (known >= 1 and "step" in keys):
        # Columns named like the normalised table (a CSV export, a custom JSONL): TRL's
        # top-level keys and ours coincide; treat as our own format.
        return "grpo_dynamics"
    return None
