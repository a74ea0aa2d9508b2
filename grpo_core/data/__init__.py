"""Data shipped with the package (real GRPO training logs; see ``real_logs/README.md``)."""
