"""grpo_core: the numerical core of GRPO Dynamics.

Pure numerics (numpy, scipy, torch): the damped-oscillator model of GRPO training and its exact
discrete stability, reward-curve laws and fits, the softmax bandit, the U-statistic view of the
GRPO gradient, and diagnostics for real training logs. No UI and no notebook code lives here;
``widgets`` and the book import this package, never the reverse.

Submodules are imported on demand (``from grpo_core import oscillator``) so that importing the
package stays cheap.
"""

from .errors import DataError, GrpoError, ParameterError

__all__ = ["GrpoError", "ParameterError", "DataError"]
__version__ = "0.1.0"
