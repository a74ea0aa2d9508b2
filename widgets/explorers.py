"""The four live explorers, one function each (the public API of the widget suite).

Each function returns an :class:`ipywidgets.VBox`; make it the last expression of a notebook cell
to display it::

    from widgets.explorers import oscillator_explorer
    oscillator_explorer(eta=0.05, mu=0.5, k_ref=4)

* :func:`oscillator_explorer` -- eta, mu, K_ref, K, beta, G, lag model and momentum convention:
  regime, damping ratio, both thresholds, trajectories with the noise band, the phase diagram.
* :func:`bandit_explorer` -- GRPO on a softmax bandit, run live (worker thread, progress, Stop),
  against the oscillator prediction.
* :func:`group_size_explorer` -- rollout budget, prompt-difficulty spread and G: MSE curves and G*.
* :func:`log_explorer` -- a shipped or uploaded training log: fits, forecast, diagnostics.

Where they run
--------------
They need a live Python kernel: JupyterLab 4, Jupyter Notebook 7, VS Code (Jupyter extension) and
Google Colab. They use only the core ipywidgets controls (sliders, text boxes, toggle buttons,
buttons, a progress bar, a file upload and Output areas) and Altair's default renderer, so no
custom widget manager is needed anywhere: in particular Colab's
``google.colab.output.enable_custom_widget_manager()`` is *not* required (it is only for
third-party widget libraries). Charts are drawn by Vega-Embed inside Output areas; in a live
notebook Altair's default renderer loads Vega from the jsDelivr CDN, as for any Altair chart (so
the browser needs internet access; the book itself serves its own copy).

On a static page (the built book, or a notebook exported with ``jupyter nbconvert --to html``)
an explorer shows the state it was saved in, charts included (the notebook must be saved with its
widget state: JupyterLab's "Save Widget State Automatically", or nbclient/nbconvert ``--execute``,
which store it by default), but the controls do nothing without a kernel. The book's chapters carry
kernel-free slider charts for that (:mod:`widgets.explorer_charts`, :mod:`widgets.oscillator_charts`).
"""

from __future__ import annotations

from .bandit_explorer import bandit_explorer
from .group_size_explorer import group_size_explorer
from .log_explorer import log_explorer
from .oscillator_explorer import oscillator_explorer

__all__ = ["oscillator_explorer", "bandit_explorer", "group_size_explorer", "log_explorer"]
