"""``python -m grpo_dynamics``: the ``grpo-dynamics`` command, for environments where the console
script is not on PATH (a notebook's ``!python -m grpo_dynamics diagnose log.csv``)."""

import sys

from grpo_dynamics.cli import main

sys.exit(main())
