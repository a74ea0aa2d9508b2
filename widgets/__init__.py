"""widgets: Altair chart builders and ipywidgets explorers for GRPO Dynamics.

Imports :mod:`grpo_core`; ``grpo_core`` never imports this package. Chart builders return Altair
charts usable in the book, in a live notebook and in the diagnostics report; explorers return a
displayable ipywidgets object for a live kernel (Jupyter, Colab, VS Code).
"""
