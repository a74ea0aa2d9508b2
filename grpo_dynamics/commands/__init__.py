"""Sub-commands of ``grpo-dynamics``.

Each module here defines ``register(subparsers)``, which adds one sub-command and sets its
handler with ``parser.set_defaults(func=handler)``. A handler takes the parsed ``argparse``
namespace and returns the exit status. Keep module import cheap: import heavy libraries (torch,
TRL, Altair) inside the handler, so ``grpo-dynamics --help`` stays fast.
"""
