"""grpo_core: the numerical core of GRPO Dynamics.

Pure numerics (numpy, scipy, torch): the damped-oscillator model of GRPO training and its exact
discrete stability, the softmax bandit, the U-statistic view of the GRPO gradient and the group
size, reward-curve laws, fits and forecasts, real training logs and their diagnostics, and the
language-model experiment. No UI and no notebook code lives here; ``widgets``, the command line
and the book import this package, never the reverse.

The rooms, in layers (a module imports its own subpackage and lower layers only; the shared
modules may import each other; ``tests/test_layering.py`` holds the same table and checks it):

=====  ==============  ==========================================================================
layer  part            what it holds
=====  ==============  ==========================================================================
0      shared          ``errors`` (the exceptions), ``validation`` (argument checks), ``_json``
                       (the one JSON sanitiser), ``grpo`` (advantages, surrogate, KL estimators,
                       the zero-spread probability p^G + (1-p)^G), ``softmax``, ``data`` (files)
1      ``model``       the oscillator theory: hyperparameters, coefficients and the regime
                       verdict, trajectories, noise, exact stability, advice
2      ``bandit``      the softmax bandit: spec, gradients, simulation, fixed point, stability
                       against the model, the predicted path
2      ``laws``        reward-curve laws, fitting and information criteria, forecasts
3      ``groupsize``   the GRPO gradient as a U-statistic (``ustat``), the minibatch-MSE law, G*,
                       estimating its constants, the contextual-bandit study
4      ``runs``        real logs in (one module per format family, the normalised ``RunLog``),
                       diagnostics (one module per failure mode), the training callback, the
                       shipped logs and real runs
5      ``llm``         GRPO on a language model through TRL: presets, tasks, the tiny model,
                       evaluation, run folders, analysis
=====  ==============  ==========================================================================

Subpackages are imported on demand (``from grpo_core import laws``) so that importing the
package stays cheap.
"""

from .errors import DataError, GrpoError, ParameterError

__all__ = ["GrpoError", "ParameterError", "DataError"]
__version__ = "0.1.0"
