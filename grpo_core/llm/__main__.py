"""Run one experiment as a script: ``python -m grpo_core.llm --preset P [-p KEY VALUE ...]``.

The same steps as the notebook (:func:`grpo_core.llm.experiment.run_experiment`), for launchers
that need a script, above all ``accelerate launch`` on several GPUs (data parallel; DeepSpeed ZeRO
or FSDP with one of the config files in ``grpo_core/llm/accelerate/``)::

    accelerate launch --num_processes 4 -m grpo_core.llm --preset gsm8k-qwen2.5-1.5b \
        -p group_size 16 -p gradient_accumulation_steps 2 -p output_dir runs/g16
    accelerate launch --config_file grpo_core/llm/accelerate/zero3.yaml --num_processes 4 \
        -m grpo_core.llm --preset gsm8k-deepseek-llm-7b-chat -p output_dir runs/7b

On the CPU, ``accelerate launch --cpu`` starts one process only (several CPU processes need MPI);
``python -m torch.distributed.run --standalone --nproc_per_node 2 -m grpo_core.llm ...`` starts
several, which train together over gloo. ``grpo-dynamics experiment --num-processes N`` picks the
launcher. Only the main process writes the run folder and prints the summary. Exit status 0 on
success, 2 on a user error (printed as one line).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import GrpoError
from .config import make_config, preset_names


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, validate, run; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments without the program name (default: ``sys.argv[1:]``): ``--preset P``
        (default ``cpu-tiny``) and any number of ``-p KEY VALUE`` overrides
        (:func:`~grpo_core.llm.config.make_config`).

    Returns
    -------
    int
        0 after a finished run (the main process prints the summary, without ``timings``, to
        stdout as one JSON line); 2 after a :class:`~grpo_core.errors.GrpoError` (a bad setting, no GPU for a GPU
        preset, a model or dataset that cannot be loaded), printed to stderr as one line.

    Raises
    ------
    SystemExit
        From :mod:`argparse` on malformed arguments (status 2) or ``--help`` (status 0).
    ImportError
        If ``transformers`` is not installed (the ``llm`` extra).

    Notes
    -----
    Errors other than :class:`~grpo_core.errors.GrpoError` raised during training (out of memory,
    a TRL error) propagate with their traceback.
    """
    parser = argparse.ArgumentParser(prog="python -m grpo_core.llm", description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu-tiny", help=f"one of {', '.join(preset_names())}")
    parser.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                        help="override one setting (repeatable), e.g. -p group_size 16")
    args = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        cfg = make_config(args.preset, **dict(args.param))
        from .experiment import run_experiment

        summary = run_experiment(cfg)
    except GrpoError as exc:
        print(f"python -m grpo_core.llm: error: {exc}", file=sys.stderr)
        return 2
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({k: v for k, v in summary.items() if k != "timings"}, default=str))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
