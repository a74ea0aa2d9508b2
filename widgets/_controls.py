"""Building blocks shared by the explorers: validated number controls, a status line, chart output.

Every explorer in :mod:`widgets.explorers` is assembled from these pieces, so the behaviour a reader
meets is the same everywhere:

* a :class:`NumberControl` is a slider with a text box beside it. Dragging the slider stays inside
  the allowed range; a value typed into the box is parsed, and when it is outside the range it is
  **clamped** to the nearest end (an integer control also rounds), with a visible message under the
  control that says what was typed, the allowed range and what was used instead. Text that is not
  a finite number is **refused**: the control keeps its value and says so.
* a :class:`StatusLine` shows one short line: what an explorer is doing, or why a computation
  failed (the exception's message, never a traceback).
* :func:`show_chart` renders an Altair chart into an :class:`ipywidgets.Output` through Altair's
  active renderer, without re-validating the spec against the Vega-Lite schema on every slider
  move (the builders' charts are valid by construction; validation costs tens of milliseconds).

Nothing here needs a browser: every control can be set from Python (``control.value = x`` or
``control.text.value = "x"``), which is how ``tests/test_widgets.py`` drives the explorers.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

import altair as alt
import ipywidgets as widgets
import numpy as np

from grpo_core.errors import GrpoError, ParameterError
from grpo_core.validation import check_real

from .style import STATUS_COLORS

__all__ = [
    "NumberControl",
    "StatusLine",
    "show_chart",
    "short_message",
    "readout_table",
    "Explorer",
    "LiveChart",
    "show_spec",
    "frame_records",
]

#: Longest message (characters) a failing computation may show in a widget.
MAX_MESSAGE_CHARS = 300

_LABEL_LAYOUT = {"width": "8.5em"}
_TEXT_LAYOUT = {"width": "6em"}
_MESSAGE_STYLE = f"color:{STATUS_COLORS['warning']};font-size:90%"


def short_message(exc: BaseException) -> str:
    """One short line describing ``exc`` for a reader: the message, never a traceback.

    A :class:`~grpo_core.errors.GrpoError` (bad parameter, unusable log) is the library's own
    message, which already names the parameter and the allowed range. Anything else is prefixed
    with its type, so an unexpected failure is recognisable. Long messages are cut to
    :data:`MAX_MESSAGE_CHARS` characters.

    Parameters
    ----------
    exc : BaseException
        The exception caught by an explorer.

    Returns
    -------
    str
        A single line (newlines replaced by spaces).

    Examples
    --------
    >>> from grpo_core.errors import ParameterError
    >>> short_message(ParameterError("mu", "`mu` must be a finite number in [0, 1); got 1.0"))
    '`mu` must be a finite number in [0, 1); got 1.0'
    >>> short_message(ZeroDivisionError("division by zero"))
    'ZeroDivisionError: division by zero'
    """
    text = str(exc).strip() or type(exc).__name__
    if not isinstance(exc, GrpoError):
        text = f"{type(exc).__name__}: {text}"
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text


def _format_number(value: float, integer: bool) -> str:
    if integer:
        return str(int(value))
    return f"{value:.6g}"


def toggle(name: str, options: list[tuple[str, str]], value: str, description: str) -> widgets.ToggleButtons:
    """ToggleButtons over ``(label, value)`` options, refusing an unknown initial ``value`` by name.

    Raises
    ------
    ParameterError
        If ``value`` is not one of the options' values (ipywidgets would raise a TraitError).
    """
    allowed = [v for _, v in options]
    if value not in allowed:
        raise ParameterError(name, f"`{name}` must be one of {allowed}; got {value!r}")
    return widgets.ToggleButtons(options=options, value=value, description=description)


class NumberControl(widgets.VBox):
    """A labelled slider with a text box for typed values and a message line.

    Parameters
    ----------
    name : str
        The parameter's code name (``"eta"``, ``"k_ref"``); used in messages, in backticks.
    label : str
        What the reader sees left of the slider (may contain Unicode, e.g. ``"η (eta)"``).
    value : float or int
        Initial value; must lie in ``[low, high]``.
    low, high : float or int
        Allowed range, inclusive. For ``log=True`` both must be > 0.
    step : float or int, optional
        Slider step (linear sliders). Default: ``(high - low) / 200`` or 1 for integers.
    integer : bool
        Integer parameter (an :class:`ipywidgets.IntSlider`; typed values are rounded).
    log : bool
        Logarithmic slider (:class:`ipywidgets.FloatLogSlider`, 200 steps over the range). With
        ``integer=True``: a slider over ``log2`` of the value, one notch per doubling when both
        ends are powers of two (``2 ** slider position`` is the value; the text box shows the value,
        and any integer in range may be typed there).
    tooltip : str, optional
        Longer description shown on hover.
    continuous_update : bool
        Update while the slider is dragged (default); ``False`` waits for the release, for
        computations too slow to follow a drag.

    Attributes
    ----------
    slider : ipywidgets.IntSlider, FloatSlider or FloatLogSlider
    text : ipywidgets.Text
        Typed input, parsed when the reader presses Enter or leaves the box.
    message : ipywidgets.HTML
        Empty, or why a typed value was clamped or refused.
    low, high : float

    Raises
    ------
    ParameterError
        If ``value`` is not a finite number in ``[low, high]`` (the message names ``name``).
    ValueError
        If the range is empty, or ``log`` is asked with ``low <= 0``.

    Examples
    --------
    >>> c = NumberControl("mu", "mu", 0.5, 0.0, 0.99)
    >>> c.text.value = "1.5"            # typed by a reader
    >>> c.value, "clamped" in c.message.value
    (0.99, True)
    """

    def __init__(
        self,
        name: str,
        label: str,
        value: float,
        low: float,
        high: float,
        step: float | None = None,
        *,
        integer: bool = False,
        log: bool = False,
        tooltip: str | None = None,
        continuous_update: bool = True,
    ):
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"`{name}`: empty or infinite range [{low}, {high}]")
        # the initial value is the caller's argument: refuse it by name and range (grpo_core's rule)
        value = check_real(name, value, low=low, high=high)
        if log and low <= 0:
            raise ValueError(f"`{name}`: a logarithmic control needs low > 0; got {low}")
        self.name = name
        self.low = float(low)
        self.high = float(high)
        self.integer = bool(integer)
        common = {"description": label, "continuous_update": continuous_update, "readout": False,
                  "style": {"description_width": _LABEL_LAYOUT["width"]},
                  "layout": {"width": "21em"}}
        if tooltip:
            common["tooltip"] = tooltip
        if integer and log:
            # a slider over log2 of the value (a range of orders of magnitude, G from 2 to 8192: each
            # doubling is one notch, where a linear slider crowds 2..64 into its first percent); the
            # text box shows the value itself, and any integer in range may be typed there
            lo, hi = math.log2(low), math.log2(high)
            self.slider = widgets.FloatLogSlider(value=int(value), base=2, min=lo, max=hi,
                                                 step=1.0 if lo.is_integer() and hi.is_integer() else (hi - lo) / 200,
                                                 **common)
        elif integer:
            self.slider = widgets.IntSlider(value=int(value), min=int(low), max=int(high),
                                            step=int(step or 1), **common)
        elif log:
            lo, hi = math.log10(low), math.log10(high)
            self.slider = widgets.FloatLogSlider(value=value, base=10, min=lo, max=hi,
                                                 step=(hi - lo) / 200, **common)
        else:
            self.slider = widgets.FloatSlider(value=value, min=low, max=high,
                                              step=step or (high - low) / 200, **common)
        self.text = widgets.Text(value=_format_number(self.slider.value, integer),
                                 continuous_update=False, layout=_TEXT_LAYOUT)
        self.message = widgets.HTML(value="")
        self._syncing = False
        self.slider.observe(self._slider_changed, names="value")
        self.text.observe(self._text_changed, names="value")
        super().__init__([widgets.HBox([self.slider, self.text]), self.message])

    # -- value ------------------------------------------------------------------------------
    @property
    def value(self) -> float | int:
        """Current value (``int`` for integer controls)."""
        v = self.slider.value
        return int(round(v)) if self.integer else float(v)

    @value.setter
    def value(self, new: Any) -> None:
        self.set(new)

    def set(self, new: Any) -> float | int:
        """Set the value as if typed: clamp/round with a message, refuse non-numbers.

        Returns the value in force afterwards.
        """
        message = ""
        try:
            number = float(str(new).strip()) if isinstance(new, str) else float(new)
            if isinstance(new, bool):
                raise TypeError
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int too large for a float
            number = math.nan
        if not math.isfinite(number):
            message = (f"`{self.name}`: {html.escape(repr(new))} is not a finite number; "
                       f"kept {_format_number(self.value, self.integer)}")
            self._show(self.value, message)
            return self.value
        used = min(max(number, self.low), self.high)
        if self.integer:
            used = float(round(used))
        if used != number:
            what = "clamped" if not self.low <= number <= self.high else "rounded"
            message = (f"`{self.name}` must be in [{_format_number(self.low, self.integer)}, "
                       f"{_format_number(self.high, self.integer)}]"
                       + ("" if what == "clamped" else " and an integer")
                       + f"; got {number:g}, {what} to {_format_number(used, self.integer)}")
        self._show(used, message)
        return self.value

    def _show(self, value: float, message: str) -> None:
        self._syncing = True
        try:
            self.slider.value = int(value) if isinstance(self.slider, widgets.IntSlider) else value
            self.text.value = _format_number(self.value, self.integer)
        finally:
            self._syncing = False
        self.message.value = f'<span style="{_MESSAGE_STYLE}">{message}</span>' if message else ""

    def _slider_changed(self, change) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            self.text.value = _format_number(round(change["new"]) if self.integer else change["new"], self.integer)
        finally:
            self._syncing = False
        self.message.value = ""

    def _text_changed(self, change) -> None:
        if self._syncing:
            return
        self.set(change["new"])

    def observe_value(self, callback: Callable[[Any], None]) -> None:
        """Call ``callback(change)`` whenever the value changes (slider or typed)."""
        self.slider.observe(callback, names="value")


class StatusLine(widgets.HTML):
    """One line of status: information (grey), a warning (orange) or an error (red).

    Examples
    --------
    >>> s = StatusLine()
    >>> s.error(ValueError("bad"))
    >>> s.kind, s.text
    ('error', 'ValueError: bad')
    """

    _COLOURS = STATUS_COLORS

    def __init__(self):
        super().__init__(value="")
        self.kind = "info"
        self.text = ""

    def show(self, text: str, kind: str = "info") -> None:
        """Show ``text`` (plain text; HTML is escaped) with the colour of ``kind``."""
        self.kind = kind
        self.text = text
        colour = self._COLOURS.get(kind, "#555")
        self.value = f'<span style="color:{colour}">{html.escape(text)}</span>' if text else ""

    def error(self, exc: BaseException) -> None:
        """Show the short message of ``exc`` as an error."""
        self.show(short_message(exc), "error")

    def clear(self) -> None:
        self.show("", "info")


def show_chart(output: widgets.Output, chart: alt.TopLevelMixin) -> dict:
    """Render ``chart`` into ``output`` (replacing what was there) with Altair's active renderer.

    The spec is serialised without schema validation (the chart builders produce valid specs;
    validation is what makes a redraw slow). In a live notebook the default renderer shows it; in
    the book build :func:`widgets.rendering.setup_book` has pointed the renderer at the site's
    own Vega files.

    Parameters
    ----------
    output : ipywidgets.Output
    chart : altair.Chart, LayerChart, ConcatChart...

    Returns
    -------
    dict
        The Vega-Lite spec that was displayed (the explorers keep it so tests can read it).
    """
    return show_spec(output, chart.to_dict(validate=False))


def readout_table(rows: list[tuple[str, str]]) -> str:
    """HTML of a small two-column table (label, value); values are escaped."""
    cells = "".join(
        f'<tr><td style="padding:0 1em 0 0;color:#555">{html.escape(k)}</td>'
        f'<td style="padding:0"><b>{html.escape(v)}</b></td></tr>'
        for k, v in rows
    )
    return f'<table style="border-collapse:collapse">{cells}</table>'


class Explorer(widgets.VBox):
    """Common base of the explorers: a status line, named chart outputs, the last computed values.

    Subclasses build their controls and call :meth:`_assemble`. After every update

    * ``values`` holds what the explorer computed (plain Python numbers and strings: the regime,
      the thresholds, G*...), the same values it prints;
    * ``specs`` holds the Vega-Lite spec last shown in each chart output (by name);
    * ``status`` shows a short message when something failed, and ``error`` keeps the exception.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.status = StatusLine()
        self.values: dict[str, Any] = {}
        self.specs: dict[str, dict] = {}
        self.outputs: dict[str, widgets.Output] = {}
        self.error: BaseException | None = None

    def _output(self, name: str) -> widgets.Output:
        out = widgets.Output()
        self.outputs[name] = out
        return out

    def _chart(self, name: str, chart) -> None:
        self.specs[name] = show_chart(self.outputs[name], chart)

    def _live_chart(self, name: str, live: LiveChart, frames: dict, key: Any = ()) -> None:
        self.specs[name] = show_spec(self.outputs[name], live.spec(frames, key))

    def _begin(self) -> None:
        """Start an update: forget the previous messages and error."""
        self._messages: list[str] = []
        self.error = None
        self.status.clear()

    def _run(self, fn: Callable[[], Any], what: str | None = None) -> bool:
        """Run ``fn``; on any exception show its short message instead of a traceback.

        Messages of the failing steps of one update (since :meth:`_begin`) are shown together,
        each prefixed with ``what`` when given. Returns True when ``fn`` finished cleanly.
        """
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - the widget must show, not raise
            self.error = exc
            messages = getattr(self, "_messages", [])
            messages.append(f"{what}: {short_message(exc)}" if what else short_message(exc))
            self._messages = messages
            self.status.show("; ".join(messages), "error")
            return False
        return True


def frame_records(frame) -> list[dict]:
    """A DataFrame as the JSON-ready records Altair embeds in a spec (same sanitising).

    Plain float, integer, bool and string columns (everything the explorers draw) are converted
    column by column with ``tolist`` (non-finite floats -> ``None``, as Altair does); any other
    frame goes through Altair's ``sanitize_pandas_dataframe``, which costs ~4 ms per frame in
    pandas overhead, most of a slider move's budget.

    Examples
    --------
    >>> import pandas as pd
    >>> frame_records(pd.DataFrame({"t": [0, 1], "y": [0.5, float("nan")], "s": ["a", "b"]}))
    [{'t': 0, 'y': 0.5, 's': 'a'}, {'t': 1, 'y': None, 's': 'b'}]
    """
    import pandas as pd

    cols = frame.columns
    simple = (
        not isinstance(cols, (pd.RangeIndex, pd.MultiIndex))
        and not isinstance(frame.index, pd.MultiIndex)
        and all(isinstance(c, str) for c in cols)
        and len(set(cols)) == len(cols)
    )
    values: list[list] = []
    if simple:
        for name, dtype in frame.dtypes.items():
            arr = frame[name].to_numpy()
            if dtype.kind == "f" and isinstance(dtype, np.dtype):
                ok = np.isfinite(arr)
                col = arr.tolist()
                if not ok.all():
                    col = [v if good else None for v, good in zip(col, ok.tolist())]
            elif dtype.kind in "iub" and isinstance(dtype, np.dtype):
                col = arr.tolist()
            elif str(dtype) in ("str", "string"):  # pandas' string dtype: missing -> None
                col = [v if isinstance(v, str) else None for v in arr.tolist()]
            elif isinstance(dtype, np.dtype) and dtype.kind == "O" and all(isinstance(v, str) for v in arr):
                col = arr.tolist()
            else:
                simple = False
                break
            values.append(col)
    if not simple:
        from altair.utils import sanitize_pandas_dataframe

        return sanitize_pandas_dataframe(frame).to_dict(orient="records")
    names = list(cols)
    return [dict(zip(names, row)) for row in zip(*values)] if values else [{} for _ in range(len(frame))]


class LiveChart:
    """Redraw a chart by swapping its data; build the Altair chart only when its structure changes.

    Building an Altair chart costs tens of milliseconds per encoding (Altair resolves every
    shorthand against the Vega-Lite schema), far more than the numbers behind it. A slider move
    changes the data, not the chart's structure, so :meth:`spec` builds the chart once per
    ``key`` (the settings that change marks, scales or literal texts), remembers which top-level
    dataset of the spec holds which input frame, and afterwards only replaces those datasets.

    Parameters
    ----------
    build : callable
        ``build(frames) -> altair chart``: a pure chart builder that draws the given DataFrames
        (and nothing it computes from them itself, or the chart is rebuilt every time).

    Attributes
    ----------
    rebuilds : int
        How many times the Altair chart was built (tests and benchmarks read it).

    Examples
    --------
    >>> import altair as alt, pandas as pd
    >>> live = LiveChart(lambda f: alt.Chart(f["d"]).mark_line().encode(x="t:Q", y="y:Q"))
    >>> s1 = live.spec({"d": pd.DataFrame({"t": [0, 1], "y": [0.0, 1.0]})})
    >>> s2 = live.spec({"d": pd.DataFrame({"t": [0, 1], "y": [0.0, 2.0]})})
    >>> live.rebuilds, list(s2["datasets"].values())[0][1]["y"]
    (1, 2.0)
    """

    def __init__(self, build: Callable[[dict], Any]):
        self._build = build
        self._key: Any = object()
        self._spec: dict | None = None
        self._names: dict[str, str] | None = None
        self._last: dict[str, tuple[Any, list]] = {}
        self.rebuilds = 0

    def spec(self, frames: dict, key: Any = ()) -> dict:
        """The Vega-Lite spec (a dict) of ``build(frames)``, patched when possible."""
        records = {}
        for name, df in frames.items():
            last = self._last.get(name)
            # The same frame object as last time (a cached frame): reuse its records.
            records[name] = last[1] if last is not None and last[0] is df else frame_records(df)
        self._last = {name: (df, records[name]) for name, df in frames.items()}
        if key == self._key and self._names is not None and self._spec is not None:
            shared: dict[str, list] = {}
            ok = True
            for name, ds in self._names.items():
                if ds in shared and shared[ds] != records[name]:
                    ok = False
                    break
                shared[ds] = records[name]
            if ok:
                spec = dict(self._spec)
                spec["datasets"] = {**spec["datasets"], **shared}
                return spec
        spec = self._build(frames).to_dict(validate=False)
        self.rebuilds += 1
        datasets = spec.get("datasets", {})
        names: dict[str, str] | None = {}
        for name, recs in records.items():
            match = [ds for ds, values in datasets.items() if values == recs]
            if len(match) != 1:
                names = None
                break
            names[name] = match[0]
        if names is not None and set(names.values()) != set(datasets):
            names = None  # a dataset the builder derived itself: cannot be patched
        self._key, self._spec, self._names = key, spec, names
        return spec


def show_spec(output: widgets.Output, spec: dict) -> dict:
    """Render a Vega-Lite ``spec`` (a dict) into ``output`` with Altair's active renderer."""
    bundle = alt.renderers.get()(spec)
    if isinstance(bundle, tuple):
        data, metadata = bundle
    else:
        data, metadata = bundle, {}
    output.outputs = ({"output_type": "display_data", "data": data, "metadata": metadata or {}},)
    return spec
