"""How the charts look, in one place: the palette, the error-bar rule, the chart defaults.

Every chart builder of :mod:`widgets` takes its colours, its "+-2 se" bars, its shared axes and
its text sizes from here, and checks its DataFrame input with :func:`require_columns`, so a
regime, an estimator or a law has the same colour in every chapter.

* Palette. Regimes use ColorBrewer's Dark2 (:data:`REGIME_COLORS`, also the bandit's regimes
  :data:`BANDIT_REGIME_COLORS`); categories of data (laws, severities, series) use Okabe-Ito
  (:data:`OKABE_ITO`), which stays distinguishable under colour-vision deficiency. :data:`ACCENT`
  marks the current setting or the model's curve; :data:`GREY` raw data and seed paths; :data:`INK`
  a summary line; :data:`NOTE` secondary text.
* Error bars. :func:`two_se_bounds`: mean +- 2 standard errors; on a log axis the lower end is
  floored at half the mean (``floor=0.5``), so a noisy point keeps a finite bar.
* Chart defaults. :data:`WIDTH` (default widths), :func:`step_x`, :func:`group_size_x`,
  :func:`k_ref_x` (the x axes that recur), :data:`LOG2` (the group-size scale) and the text sizes
  :data:`FONT`, none below :data:`MIN_FONT`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from grpo_core.errors import ParameterError

__all__ = [
    "DARK2",
    "OKABE_ITO",
    "ACCENT",
    "GREY",
    "INK",
    "NOTE",
    "GREYS",
    "CATEGORY10",
    "STATUS_COLORS",
    "REGIME_COLORS",
    "OSCILLATOR_REGIMES",
    "BANDIT_REGIME_COLORS",
    "WIDTH",
    "FONT",
    "MIN_FONT",
    "LOG2",
    "color_scale",
    "two_se_bounds",
    "step_x",
    "group_size_x",
    "k_ref_x",
    "require_columns",
    "grid_values",
]

#: ColorBrewer Dark2 (the regimes and the estimators).
DARK2 = {"green": "#1b9e77", "orange": "#d95f02", "purple": "#7570b3", "magenta": "#e7298a",
         "brown": "#a6761d"}
#: Okabe-Ito, colour-blind safe (laws, severities, series of a run log).
OKABE_ITO = {"blue": "#0072B2", "sky": "#56B4E9", "orange": "#E69F00", "green": "#009E73",
             "vermillion": "#D55E00", "pink": "#CC79A7", "yellow": "#F0E442"}
#: The current setting, the model's curve.
ACCENT = "#3b6fb6"
#: Raw data and seed paths.
GREY = "#7f7f7f"
#: A summary line over the data.
INK = "#333333"
#: Secondary text (a subtitle under a label).
NOTE = "#444"
#: Light greys: a context line (``"mid"``), a range bar (``"light"``), a shaded window (``"pale"``).
GREYS = {"mid": "#999999", "soft": "#b0b0b0", "light": "#bbbbbb", "pale": "#dddddd"}
#: Vega's category10, whose scheme the LLM charts colour by (their accents match it).
CATEGORY10 = {"blue": "#1f77b4", "green": "#2ca02c", "red": "#d62728", "orange": "#ff7f0e"}
#: The explorers' status line (HTML text): info, warning, error, ok.
STATUS_COLORS = {"info": "#555", "warning": "#a94400", "error": "#b00020", "ok": "#1b5e20"}

#: The oscillator's regimes (the continuous model's three, the exact recurrence's two more).
REGIME_COLORS = {
    "overdamped": DARK2["green"],
    "critically damped": DARK2["purple"],
    "underdamped": DARK2["orange"],
    "stable (exact recurrence only)": DARK2["brown"],
    "unstable": DARK2["magenta"],
}
#: The regimes a continuous-model label can show (the slider chart's legend).
OSCILLATOR_REGIMES = ("overdamped", "critically damped", "underdamped", "unstable")
#: The bandit's measured regimes, coloured as the oscillator regimes they correspond to.
BANDIT_REGIME_COLORS = {
    "monotone": REGIME_COLORS["overdamped"],
    "oscillatory": REGIME_COLORS["underdamped"],
    "divergent": REGIME_COLORS["unstable"],
}

#: Chart widths (px) the builders default to: the book's text column, a wide and a half-width panel.
WIDTH = {"column": 620, "wide": 560, "half": 420}
#: Font sizes (px): a regime verdict, a point's label, an annotation, a small note.
FONT = {"verdict": 18, "label": 13, "annotation": 12, "small": 11}
#: The smallest text a chart draws (px, at its natural size). Vega's defaults are at or above it
#: (axis and legend labels 10, their titles 11, a chart title 13); in the book any smaller font size
#: of a spec is raised to it (book/assets/grpo-charts.js), and a chart too wide for its column is
#: laid out for it rather than scaled down, so its text stays at least this size on a phone.
MIN_FONT = 10

#: The group-size axis: log scale, base 2 (G = 2, 4, 8, ...).
LOG2 = {"type": "log", "base": 2}


def color_scale(palette: Mapping[str, str], names: Iterable[str] | None = None) -> alt.Scale:
    """An ordinal colour scale: ``names`` (default: every key of ``palette``) to their colours.

    >>> color_scale(BANDIT_REGIME_COLORS, ["monotone", "divergent"]).to_dict()
    {'domain': ['monotone', 'divergent'], 'range': ['#1b9e77', '#e7298a']}
    """
    names = list(palette if names is None else names)
    return alt.Scale(domain=names, range=[palette[n] for n in names])


def two_se_bounds(mean, se, *, floor: float | None = 0.5):
    """The error-bar ends ``(mean - 2 se, mean + 2 se)``, the lower one floored at ``floor * mean``.

    The floor keeps a bar finite on a log axis (a standard error larger than half the mean would
    send ``mean - 2 se`` to zero or below); ``floor=None`` leaves it (a signed quantity).

    Parameters
    ----------
    mean, se : array-like or pandas.Series
        Same shape; ``se`` >= 0.
    floor : float or None

    Returns
    -------
    (lo, hi)
        Of the type of ``mean - 2 * se`` (a Series stays a Series).

    >>> two_se_bounds(np.array([1.0, 1.0]), np.array([0.1, 0.4]))
    (array([0.8, 0.5]), array([1.2, 1.8]))
    >>> two_se_bounds(np.array([-1.0]), np.array([1.0]), floor=None)
    (array([-3.]), array([1.]))
    """
    lo = mean - 2 * se
    if floor is not None:
        lo = np.maximum(lo, mean * floor)
    return lo, mean + 2 * se


def step_x(title: str = "optimizer step", **kwargs) -> alt.X:
    """The x axis of a training curve: ``step``, quantitative; labels that would overlap are thinned
    (every other one dropped: the last label, flush with the end of a nice-less domain, ran into the
    one before, "190200")."""
    kwargs.setdefault("axis", alt.Axis(labelOverlap=True, labelSeparation=4))
    return alt.X("step:Q", title=title, **kwargs)


def group_size_x(field: str = "group_size", title: str = "group size G", **scale) -> alt.X:
    """The group-size x axis, log base 2; ``scale`` adds to the scale (a ``domain``)."""
    return alt.X(f"{field}:Q", title=title, scale=alt.Scale(**LOG2, **scale))


def k_ref_x(**scale) -> alt.X:
    """The refresh-interval x axis ``K_ref (steps)``, log, not rounded to nice values."""
    return alt.X("k_ref:Q", title="K_ref (steps)", scale=alt.Scale(type="log", nice=False, **scale))


def require_columns(frame, name: str, columns: Sequence[str], *, source: str = "") -> None:
    """Refuse a chart's input that is not a DataFrame or lacks one of ``columns``.

    Raises
    ------
    ParameterError
        Naming ``name``, the missing columns and, when given, the function that makes the frame.

    >>> require_columns(pd.DataFrame({"step": [1]}), "log", ["step", "reward"], source="read_log")
    Traceback (most recent call last):
    ...
    grpo_core.errors.ParameterError: `log` lacks column(s) ['reward'] (use read_log)
    """
    hint = f" (use {source})" if source else ""
    if not isinstance(frame, pd.DataFrame):
        raise ParameterError(name, f"`{name}` must be a pandas DataFrame{hint}; got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ParameterError(name, f"`{name}` lacks column(s) {missing}{hint}")


def grid_values(grid: dict[str, pd.DataFrame], name: str, value) -> list:
    """The sorted values of the slider ``name`` in a static grid's ``labels``; a ParameterError if ``value`` is not
    one of them."""
    values = sorted(grid["labels"][name].unique())
    if value not in values:
        raise ParameterError(name, f"`{name}` must be one of the grid's values {values}; got {value}")
    return values
