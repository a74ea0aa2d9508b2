"""The parser of a command that runs a preset of the LLM experiment (``experiment``, ``probe``)."""

from __future__ import annotations

import argparse


def add_preset_parser(
    subparsers, name: str, doc: str, *, summary: str, preset_help: str, param_help: str
) -> argparse.ArgumentParser:
    """The sub-command ``name``, described by the second paragraph of its module's ``doc``, with
    ``--preset`` (default ``cpu-tiny``) and ``-p/--param KEY VALUE`` (repeatable, into ``args.param``)."""
    p = subparsers.add_parser(name, help=summary, description=doc.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--preset", default="cpu-tiny", help=preset_help)
    p.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"), help=param_help)
    return p
