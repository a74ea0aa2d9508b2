"""GRPO on language models: the experiment behind the book's chapter "GRPO on a language model".

The notebook ``book/experiments/grpo_llm.ipynb`` stays thin; the logic lives here, importable and
tested:

=====================  ============================================================================
module                 what it holds
=====================  ============================================================================
``config``             :class:`ExperimentConfig`, the presets (``cpu-tiny``, the GSM8K presets),
                       validation before training (:func:`make_config`, :func:`check_environment`)
``tasks``              the CPU task (multi-digit arithmetic, exact-match reward), its near/far variants,
                       the character tokenizer built in code
``model``              the tiny Qwen2-style model, its supervised warm-up, ``from_pretrained`` loading
``answers``            final-answer extraction for GSM8K-style text, correctness and format rewards
``data``               GSM8K and the evaluation benchmarks by hub id (or a local folder in their schema)
``evaluation``         greedy / sampled accuracy, the periodic evaluation callback
``session``            the run being made (:class:`RunContext`): start (folder, provenance), finish (summary)
``policy``             the starting policy: the tiny model's warm-up and its cache, or ``from_pretrained``
``prompts``            prompts, the training dataset, the evaluation sets
``training``           TRL's ``GRPOTrainer``: reward functions, ``GRPOConfig``, callbacks, resume
``measurements``       the evaluation suite and the gradient constants at the run's start and end
``experiment``         the steps of one run in order, :func:`run_experiment`
``runs``               run folders (config, provenance, metrics, evals), names, :func:`load_runs`
``constants``          c1, c2, c3 of the minibatch-MSE law measured on the model (per-sample scores)
``analysis``           the committed runs read for the book: fits, trajectories across G, transfer, sweeps
``probe``              the curvature measured before training (sharpness, reward curvature K, predictions)
``curvature``          the probe's numerics: Lanczos on Hessian-vector products, the relaxation rate
``probe_check``        the probe's predictions against the runs: t90 and K from the run's own curve,
                       each run classified, the critical learning rate of a sweep bracketed
``sizing``             GPU memory of the GSM8K presets by arithmetic (bytes per parameter, rough
                       activations), the settings each was sized for
``lab``                the oscillator's own domain: short runs of TRL's loss written out (KL anchor,
                       a behaviour policy refreshed every K_ref steps: stale, ratio-corrected, frozen)
``lab_analysis``       the lab's runs read and predicted: relaxation K, thresholds, regimes, brackets
=====================  ============================================================================

Heavy libraries (torch, transformers, TRL, datasets) are imported inside the functions that need
them, so ``import grpo_core.llm`` is cheap.
"""

from .config import PRESETS, ExperimentConfig, make_config, parameter_help, preset_names

__all__ = ["ExperimentConfig", "PRESETS", "make_config", "preset_names", "parameter_help"]
