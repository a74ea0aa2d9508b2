"""The application layer of GRPO Dynamics: the ``grpo-dynamics`` command line.

It composes :mod:`grpo_core` (numerics) and :mod:`widgets` (charts) into user-facing jobs. Each
sub-command lives in its own module under :mod:`grpo_dynamics.commands` and is discovered
automatically.
"""
