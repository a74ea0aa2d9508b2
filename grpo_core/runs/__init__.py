"""Real training runs: reading their logs, diagnosing them, and watching a run while it trains.

* :mod:`~grpo_core.runs.logs` -- any supported log (TRL ``trainer_state.json`` and console logs,
  notebook progress tables, ms-swift, verl, W&B exports, JSON lines, CSV) into one normalised
  :class:`~grpo_core.runs.logs.RunLog`; one module per format family, nothing dropped unsaid;
* :mod:`~grpo_core.runs.diagnostics` -- the failure modes, one module each, with their thresholds
  in one place, and :func:`~grpo_core.runs.diagnostics.diagnose` (verdict healthy / unhealthy /
  inconclusive, findings, plateau forecast);
* :mod:`~grpo_core.runs.callback` -- the TRL callback that writes normalised metrics and runs the
  same checks during training (optional stop on a critical finding);
* :mod:`~grpo_core.runs.settings`, :mod:`~grpo_core.runs.curvature` -- a run's settings (TRL config,
  trainer state, ``meta.json``) and the curvature its reward curve implies;
* :mod:`~grpo_core.runs.datasets` -- the shipped real logs, the 20 real runs and the example logs;
* :mod:`~grpo_core.runs.bandit_logs` -- softmax-bandit runs as logs (test beds of the checks);
  :mod:`~grpo_core.runs.synthetic` -- constructed logs for tests, which no check imports.

Layer 4 of ``grpo_core`` (see its docstring): imports ``laws``, ``bandit``, ``model`` and the shared
modules, never ``llm``.
"""
