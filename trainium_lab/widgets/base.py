"""The Explorer: controls → model → chart, with every problem shown inline, in the field's words.

The callback only collects control values, calls a model and then a chart builder. The base
class holds the contract every explorer keeps (and every control a factory adds inherits):

* **Nothing raises into the notebook.** Any exception from reading the controls, ``compute``,
  ``render`` or ``describe`` is shown in the explorer's error box; the summary and chart then
  stay those of the last good input, dimmed and captioned so, never passed off as the answer.
* **Numbers as people type them.** Number boxes (``FloatText``/``IntText`` given by a factory
  are turned into :class:`NumberText`) accept ``1e6``, ``50%`` in a percentage field and the
  units :mod:`trainium_lab.units` reads (``24 h`` in a field in days, ``10 TB/s`` in one in
  GB/s); anything else is rejected with a message, never silently rewritten. A converted unit
  is said in a note.
* **Messages in the field's words.** An error raised after a control changed names that
  control's label and echoes what was typed in its unit ("chip MTBF (d) must be a finite
  number > 0; got -1"); the model's own message stays what code sees.
* **Ignored controls are disabled**, with the reason in their tooltip (``relevance=``).
* **Labels fit and carry tooltips**; the grid of controls wraps to the notebook's width.
"""

from __future__ import annotations

import contextlib
import functools
import html
import math
import os
import re
import traceback
from typing import Any, Callable, Mapping, Sequence

import altair as alt
import ipywidgets as W
import traitlets

from trainium_lab.units import field_unit, parse_in_unit

__all__ = ["Explorer", "NumberText", "SliderReadout", "number", "lnc_dropdown", "read_values", "benchmarked",
           "BENCHMARKS", "error_html", "DEFAULT", "CONTROL_WIDTH_PX", "FieldError",
           "in_field_words", "control_grid", "SearchInputs"]

#: factory name -> (factory, [(control name, new value), ...]) for tools/benchmark.py
BENCHMARKS: dict[str, tuple[Callable[[], "Explorer"], Sequence[tuple[str, Any]]]] = {}
#: a dropdown option's value meaning "the default" (ipywidgets reads ``None`` as "no selection"
#: and shows an empty box); :func:`read_values` hands the model ``None`` for it
DEFAULT = "default"
#: width of one control (ipywidgets' inline width), its label and the gap between columns, px
CONTROL_WIDTH_PX = 300
_CHAR_PX = 7.0  # ~ width of a label character in JupyterLab's 13 px UI font
_LABEL_MIN_PX, _LABEL_MAX_PX = 80, 150
_GAP_PX = 16
_MENU_PAD_PX = 40  # a menu's padding, arrow and the label's margin



@functools.cache
def _style() -> W.HTML:
    """The explorers' CSS (one widget, made on first use: nothing is built at import)."""
    # a chart wider than the notebook column (a narrow window) is scaled down to fit it, not
    # cut or scrolled: Vega's SVG has a viewBox, so its text and marks shrink together
    return W.HTML("<style>.tl-stale{opacity:.35;filter:grayscale(60%)}"
                  ".tl-chart{max-width:100%}.tl-chart>.lm-Widget{min-width:0;max-width:100%}"
                  ".tl-chart .vega-embed{max-width:100%}"
                  ".tl-chart svg.marks{max-width:100%;height:auto}</style>",
                  layout=W.Layout(display="none"))


def benchmarked(*changes: tuple[str, Any]):
    """Register a widget factory with the control changes the benchmark makes."""
    def register(factory: Callable[[], "Explorer"]):
        BENCHMARKS[f"{factory.__module__.rsplit('.', 1)[-1]}.{factory.__name__}"] = (factory, changes)
        return factory
    return register


def error_html(message: str) -> str:
    """The inline error box's HTML for a message."""
    return ('<div style="color:#a40000;background:#fdecea;border-left:4px solid #a40000;'
            f'padding:4px 8px">⚠ {html.escape(message)}</div>')


def _note_html(message: str) -> str:
    return f'<div style="color:#555;font-size:90%">ℹ {html.escape(message)}</div>'


def _plain(x: float) -> str:
    """A number as a learner would type it: ``-1``, ``0.25``, ``1,073,741,824``, ``1e+30``
    (a whole number is written out, as the course prints counts, and the boxes read it back)."""
    if float(x).is_integer() and abs(x) < 1e16:
        return f"{int(x):,}"
    return f"{x:.6g}"


class FieldError(ValueError):
    """A ``ValueError`` already in the words of the field it is about."""


class _NumberString(traitlets.Unicode):
    """Text that also takes a number (tests and factories set ``box.value = 70.0``)."""

    def validate(self, obj, value):
        if isinstance(value, bool):
            raise traitlets.TraitError(f"{getattr(obj, 'description', 'value')}: got a bool")
        if isinstance(value, (int, float)):
            value = str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else repr(float(value))
        return super().validate(obj, value)


class NumberText(W.Text):
    """A number box that reads what people type (``1e6``, ``24 h``, ``50%``) or says why not.

    ``value`` is the text; :meth:`read` returns the number in the field's unit. The unit comes
    from the label (``"chip MTBF (d)"``: days; ``"MFU %"``: percent; see
    :func:`trainium_lab.units.field_unit`). Bounds are in that unit.
    """

    value = _NumberString("", help="the text typed").tag(sync=True)

    def __init__(self, value: Any = 0.0, *, description: str, integer: bool = False,
                 minimum: float | None = None, maximum: float | None = None,
                 exclusive_minimum: bool = False, exclusive_maximum: bool = False,
                 label: str | None = None, **kwargs):
        kwargs.setdefault("continuous_update", False)  # read on Enter or leaving the box
        super().__init__(value=value, description=description, **kwargs)
        self._label = label if label is not None else description
        self.integer = integer
        self.minimum, self.maximum = minimum, maximum
        self.exclusive_minimum, self.exclusive_maximum = exclusive_minimum, exclusive_maximum
        self.unit = field_unit(self._label)
        self.add_class("tl-number")  # for the browser test: a box that reads numbers
        try:  # the value a disabled box hands the model: the last one it accepted
            self.last_good: float | int | None = self.read()[0]
        except ValueError:
            self.last_good = None

    @property
    def label(self) -> str:
        return self._label

    @property
    def size(self) -> float:
        """One of the field's units in the package's base units (1 for a plain number)."""
        return self.unit[2] if self.unit else 1.0

    def read(self) -> tuple[float | int, str | None]:
        """``(number in the field's unit, note)``; raises ``ValueError`` in the field's words."""
        unit, kind, size = self.unit or (None, None, 1.0)
        try:
            value, converted = parse_in_unit(self.value, unit, kind, size=size, name=self.label)
        except ValueError as exc:
            raise FieldError(str(exc)) from None
        shown = self.value.strip()
        if self.integer:
            if not float(value).is_integer():
                raise FieldError(f"{self.label} must be a whole number; got {shown}")
            value = int(value)
        lo, hi = self.minimum, self.maximum
        if lo is not None and (value < lo or (self.exclusive_minimum and value == lo)):
            op = ">" if self.exclusive_minimum else "≥"
            rng = f"{op} {_plain(lo)}" if hi is None else self._range()
            raise FieldError(f"{self.label} must be {rng}; got {shown}")
        if hi is not None and (value > hi or (self.exclusive_maximum and value == hi)):
            op = "<" if self.exclusive_maximum else "≤"
            rng = f"{op} {_plain(hi)}" if lo is None else self._range()
            raise FieldError(f"{self.label} must be {rng}; got {shown}")
        note = None
        if converted:
            note = f"{self.label}: read {shown!r} as {_plain(value)} {unit}."
        return value, note

    def _range(self) -> str:
        left = "(" if self.exclusive_minimum else "["
        right = ")" if self.exclusive_maximum else "]"
        return f"in {left}{_plain(self.minimum)}, {_plain(self.maximum)}{right}"


def number(description: str, value: Any, *, integer: bool = False, **bounds) -> NumberText:
    """A :class:`NumberText` (the factories' number box): label with its unit, value, bounds."""
    return NumberText(value, description=description, integer=integer, **bounds)


#: the sliders whose readout is a :class:`SliderReadout` (ipywidgets' own readout clamps what is
#: typed into it: ``50%`` read as 50 and set to the maximum, ``1e6`` as 1)
_SLIDERS = (W.IntSlider, W.FloatSlider, W.FloatLogSlider, W.SelectionSlider)
READOUT_PX = 72  # the typed readout's width
FULL_ROW = "auto / 1 / auto / -1"  # a grid cell spanning the whole row


class SliderReadout(NumberText):
    """A slider's readout that reads what people type, or says why not, never clamping it.

    It replaces ipywidgets' own readout (the slider gets ``readout=False``). What is typed is
    read like a number box in the slider's unit (``50%`` in "kept free %", ``1e-3``); a value
    outside the slider's range or, for a :class:`~ipywidgets.SelectionSlider`, not one of its
    options is rejected with a message naming the slider's label. A good value moves the
    slider exactly there (:meth:`commit`), between its steps too; the readout then follows
    the slider.
    """

    def __init__(self, slider: W.Widget):
        self.slider = slider
        self.syncing = False  # True while the readout is written from the slider
        self.selection = isinstance(slider, W.SelectionSlider)
        self.logarithmic = isinstance(slider, W.FloatLogSlider)
        lo, hi = self._bounds()
        super().__init__(self.shown(slider.value), description="", label=slider.description,
                         integer=isinstance(slider, W.IntSlider), minimum=lo, maximum=hi,
                         layout=W.Layout(width=f"{READOUT_PX}px"), disabled=slider.disabled)
        self.remove_class("tl-number")
        self.add_class("tl-readout")
        self.tooltip = f"{slider.description}: type a value and press Enter"
        slider.readout = False
        self._keep(slider.value)
        slider.observe(self._follow, names="value")
        traitlets.dlink((slider, "disabled"), (self, "disabled"))

    def _bounds(self) -> tuple[float | None, float | None]:
        """The slider's range now (a factory may change it: chapter 03's steps follow n)."""
        if self.selection:
            return None, None
        s = self.slider
        return (s.base ** s.min, s.base ** s.max) if self.logarithmic else (s.min, s.max)

    def shown(self, value: Any) -> str:
        """The slider's value as the readout shows it: its ``readout_format`` when that keeps the
        number within 0.5 % (``28.79`` for 28.7946, issue 42), else six significant digits.
        Typing back the text shown keeps the slider's exact value (:meth:`read`)."""
        if self.selection:
            return self.slider.label
        try:
            text = format(value, self.slider.readout_format)
            if math.isclose(float(text), value, rel_tol=5e-3, abs_tol=0.0):
                return text
        except (TypeError, ValueError):
            pass
        return str(int(value)) if float(value).is_integer() else _plain(value)

    def _follow(self, change) -> None:
        self._keep(change["new"])
        self.syncing = True
        try:
            self.value = self.shown(change["new"])
            self.last_good = change["new"]
        finally:
            self.syncing = False

    def read(self) -> tuple[Any, str | None]:
        """``(the slider value typed, note)``; ``FieldError`` in the slider's words."""
        shown = self.value.strip()
        if self.selection:
            labels, values = self.slider._options_labels, self.slider._options_values
            if shown in labels:
                return values[labels.index(shown)], None
            number = None
            try:
                number = parse_in_unit(shown, name=self.label)[0]
            except ValueError:
                pass
            for v in values:
                if number is not None and isinstance(v, (int, float)) and math.isclose(v, number):
                    return v, None
            listed = ", ".join(labels)
            raise FieldError(f"{self.label} must be one of {listed}; got {shown}")
        self.minimum, self.maximum = self._bounds()
        if shown == self.shown(self.slider.value):  # the text shown for the slider's own value
            return self.slider.value, None
        return super().read()

    def _range(self) -> str:
        """The slider's ends as a learner reads them: a log slider's ends (10 ** -0.3 =
        0.501187...) rounded inward to 4 significant digits (issue 42: "[0.501187, 31.6228]"),
        so every value the message allows is accepted."""
        if not self.logarithmic:
            return super()._range()

        def inward(x: float, up: bool) -> str:
            if float(x).is_integer():
                return _plain(x)
            scale = 10 ** (3 - math.floor(math.log10(abs(x))))
            return f"{(math.ceil(x * scale) if up else math.floor(x * scale)) / scale:g}"
        return f"in [{inward(self.minimum, True)}, {inward(self.maximum, False)}]"

    def on_steps(self, value: Any) -> bool:
        """Whether ``value`` is one of the slider's steps (or its maximum)."""
        step = getattr(self.slider, "step", None)
        if self.selection or not step or math.isclose(value, self.maximum):
            return True
        at = math.log(value, self.slider.base) if self.logarithmic else value
        k = (at - self.slider.min) / step
        return math.isclose(k, round(k), abs_tol=1e-6)

    def commit(self) -> bool:
        """Move the slider to the value typed; whether it moved (``FieldError`` if it cannot)."""
        value = self.read()[0]
        if value == self.slider.value:
            self._follow({"new": value})  # "50%" shown again as the slider shows it: "50"
            return False
        with self.slider.hold_sync():  # one message: the page gets both before it redraws
            self._keep(value)
            self.slider.value = value
        return True

    def _keep(self, value: Any) -> None:
        """A value between the slider's steps is kept as typed: the page's slider, updating
        continuously, would move it to the nearest step and send that back (ipywidgets 8), so
        it updates on release until the learner moves it onto a step again."""
        if not self.selection:
            self.slider.continuous_update = self.on_steps(value)


def lnc_dropdown(value: int | None = None, *, options: Sequence[int] = (1, 2),
                 default_label: str | None = "chip default") -> W.Dropdown:
    """The LNC menu; "chip default" is :data:`DEFAULT` (the model gets ``None``), so the menu
    always shows what it is set to."""
    opts = ([(default_label, DEFAULT)] if default_label else []) + [(str(o), o) for o in options]
    return W.Dropdown(options=opts, value=DEFAULT if value is None and default_label else value,
                      description="LNC",
                      tooltip="logical NeuronCore size: physical cores per logical core")


def _convert(control: W.Widget) -> W.Widget:
    """A factory's ``FloatText``/``IntText`` as a :class:`NumberText` (same label, value)."""
    if isinstance(control, (W.FloatText, W.IntText, W.BoundedFloatText, W.BoundedIntText)) \
            and not isinstance(control, NumberText):
        bounds = {}
        if isinstance(control, (W.BoundedFloatText, W.BoundedIntText)):
            bounds = {"minimum": control.min, "maximum": control.max}
        box = NumberText(control.value, description=control.description,
                         integer=isinstance(control, (W.IntText, W.BoundedIntText)),
                         disabled=control.disabled, **bounds)
        if control.tooltip:
            box.tooltip = control.tooltip
        return box
    if isinstance(control, _SLIDERS) and control.readout and not hasattr(control, "tl_readout"):
        control.tl_readout = SliderReadout(control)
    return control


def _readouts(controls: Mapping[str, W.Widget]) -> list[SliderReadout]:
    return [c.tl_readout for c in controls.values() if getattr(c, "tl_readout", None) is not None]


def read_values(controls: Mapping[str, W.Widget], skip: Sequence[str] = ()) -> tuple[dict, list[str]]:
    """``(values for the model, notes)`` from controls: number boxes read in their unit (a
    disabled one keeps its last good value), :data:`DEFAULT` handed over as ``None``."""
    values, notes = {}, []
    for name, c in controls.items():
        if isinstance(c, NumberText):
            if c.disabled or name in skip:
                values[name] = c.last_good
                continue
            values[name], note = c.read()
            if note:
                notes.append(note)
        else:
            values[name] = None if c.value == DEFAULT and isinstance(c, W.Dropdown) else c.value
    return values, notes


_MODEL_MESSAGE = re.compile(r"^(?P<param>[\w\[\].]+) must (?P<rule>.*?)[,;] got (?P<got>\S+?)\.?$",
                            re.S)
_NUMBER_IN_TEXT = re.compile(
    r"(?<![\w.])[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")


#: the model's names for what a learner sees under another label (issue 42): said in the
#: learner's words wherever a model's message reaches a widget
_LEARNER_WORDS = (
    (r"; or pass n_systems", ""),
    (r"\(or None for its default\)", "(or “chip default”)"),
    (r"must be None or 1 for", "must be 1 for"),
    (r"\blnc=(\d+)", r"LNC \1"), (r"(?<![\w-])lnc(?![\w-])", "LNC"),
    (r"\bn_heads \(", "the attention heads ("), (r"\bn_kv_heads \(", "the key/value heads ("),
    (r"\bn_layers \(", "the layers ("), (r"\bn_systems\b", "systems"), (r"\bn_chips\b", "chips"),
    (r"\btp × pp × dp × ep\b", "TP × PP × DP × EP"), (r"\bexpert_tp\b", "expert TP"),
    (r"(?<![\w-])(tp|pp|dp|ep)(?=[ =])", lambda m: m.group(1).upper()),
    (r"\bvirtual_stages\b", "virtual stages"),
)
#: a model's message that starts with the name of one of its inputs ("chip_mtbf_s: the job
#: fails ...") after a widget has said which box changed: the name goes
_LEADING_NAME = re.compile(r"^[a-z]+(?:_[a-z0-9]+)+: ")


def learner_words(message: str) -> str:
    """A model's message with its parameter names in the words a widget shows (``lnc`` → LNC,
    ``n_heads`` → attention heads, no "pass n_systems", no Python ``None``)."""
    message = _LEADING_NAME.sub("", message)
    for pattern, words in _LEARNER_WORDS:
        message = re.sub(pattern, words, message)
    return message


def in_field_words(message: str, control: W.Widget | None) -> str:
    """A model's ``ValueError`` message, said in the words of the control that changed.

    "chip_mtbf_s must be a finite number > 0, got -86400.0" raised after the box "chip MTBF (d)"
    changed to ``-1`` becomes "chip MTBF (d) must be a finite number > 0; got -1": the bounds
    are converted to the field's unit when the rejected value is the one typed (in base units).
    Otherwise the label and what was typed lead the model's message.
    """
    if control is None or not getattr(control, "description", ""):
        return learner_words(message)
    label = control.description
    typed = str(control.value).strip() if not isinstance(control, W.Dropdown) else control.label
    if isinstance(control, NumberText):
        m = _MODEL_MESSAGE.match(message.strip())
        if m:
            try:
                got = float(m.group("got").rstrip(".").replace(",", ""))
                value = control.read()[0]
            except ValueError:
                got, value = math.nan, math.nan
            size = control.size
            if math.isfinite(got) and math.isclose(got, value * size, rel_tol=1e-9, abs_tol=1e-300):
                rule = _NUMBER_IN_TEXT.sub(
                    lambda n: _plain(float(n.group().replace(",", "")) / size), m.group("rule"))
                return f"{label} must {rule}; got {typed}"
    return f"{label} = {typed}: {learner_words(message)}"


def apply_relevance(controls: dict[str, W.Widget], relevance: Callable[[dict], Mapping[str, str]] | None,
                    tooltips: Mapping[str, str]) -> None:
    """Disable the controls ``relevance(values)`` names as ignored now, with its reason in their
    tooltip; give the others back their own tooltip."""
    if relevance is None:
        return
    ignored = dict(relevance({n: c.value for n, c in controls.items()}))
    for name, c in controls.items():
        c.disabled = name in ignored
        c.tooltip = (f"{c.description}: ignored now — {ignored[name]}" if name in ignored
                     else tooltips.get(name) or c.description)


class Explorer:
    """Controls wired to ``compute`` (a model) and ``render`` (a chart builder).

    Parameters
    ----------
    controls : mapping of name -> ipywidgets value widget
        Their values (number boxes read in their unit, see :func:`read_values`) are passed to
        ``compute`` as keyword arguments.
    compute : callable
        ``compute(**values) -> result``; may raise ``ValueError`` for bad input.
    render : callable
        ``render(result) -> alt.Chart`` (or ``None`` for no chart).
    describe : callable, optional
        ``describe(result) -> str`` (HTML) shown above the chart.
    columns : int
        Most controls to a row; the grid wraps to fewer on a narrow page.
    relevance : callable, optional
        ``relevance(values) -> {control name: reason}`` for the controls the current
        settings ignore (``values`` are the controls' raw values): they are disabled with
        the reason as their tooltip.
    offer : callable, optional
        ``offer(explorer)``, called before each update: narrows menus to the options the
        current settings can compute; a value it has to change is said with :meth:`say`.
        Changes it makes do not start updates of their own.
    """

    def __init__(self, controls: Mapping[str, W.ValueWidget], compute: Callable[..., Any],
                 render: Callable[[Any], alt.TopLevelMixin | None],
                 describe: Callable[[Any], str] | None = None, *, columns: int = 2,
                 relevance: Callable[[dict], Mapping[str, str]] | None = None,
                 offer: Callable[["Explorer"], None] | None = None):
        self.controls = {name: _convert(c) for name, c in controls.items()}
        self._compute, self._render, self._describe = compute, render, describe
        self._relevance = relevance
        self._offer = offer
        self._updating = False
        self.summary = W.HTML()
        self.error = W.HTML()
        self.notes = W.HTML()
        self.chart: alt.JupyterChart | None = None
        self._first_chart: alt.TopLevelMixin | None = None  # the default view, for static_svg
        self.result: Any = None
        self.last_error: str | None = None
        self.last_exception: BaseException | None = None
        self.stale = False
        self.updates = 0
        self._said: list[str] = []
        self._tooltips = {}
        self.grid = control_grid(list(self.controls.values()), columns)
        for name, c in self.controls.items():
            self._tooltips[name] = c.tooltip
        self.update()
        self._chart_box = W.Box([self.chart] if self.chart is not None else [])
        self._chart_box.add_class("tl-chart")
        children: list[W.Widget] = [_style(), self.grid, self.error, self.notes, self.summary]
        if self.chart is not None:
            children.append(self._chart_box)
        self.widget = W.VBox(children)
        self.widget.add_class("tl-explorer")
        self._show_stale(self.stale)
        for control in self.controls.values():
            control.observe(self.update, names="value")
        for readout in _readouts(self.controls):
            readout.observe(self._typed, names="value")
            # the readout follows its slider after the update, so that the chart's message
            # leaves the kernel first (a page handles its messages in order, one at a time)
            readout.slider.unobserve(readout._follow, names="value")
            readout.slider.observe(readout._follow, names="value")

    def _typed(self, change) -> None:
        """Text typed into a slider's readout: move the slider, or say why not."""
        readout = change["owner"]
        if readout.syncing:
            return
        try:
            moved = readout.commit()
        except ValueError as exc:
            self._fail(exc, readout.slider)
            return
        if not moved:  # the slider's value typed again: clear a message about the readout
            self.update({"owner": readout.slider})

    def values(self) -> dict[str, Any]:
        """The controls' current values as the model gets them (raises ``ValueError`` in the
        words of a field that cannot be read)."""
        return read_values(self.controls)[0]

    def _apply_relevance(self) -> None:
        apply_relevance(self.controls, self._relevance, self._tooltips)

    def update(self, change: Any = None) -> None:
        """Recompute and redraw; show any exception inline instead of raising."""
        if self._updating:  # a menu narrowed by ``offer``: the update running reads it
            return
        owner = change.get("owner") if isinstance(change, Mapping) else getattr(change, "owner", None)
        try:
            if self._offer is not None:
                with self.holding():
                    self._offer(self)
            self._apply_relevance()
            values, notes = read_values(self.controls)
            result = self._compute(**values)
            chart = self._render(result)
            summary = self._describe(result) if self._describe is not None else None
            spec = _live_of(chart) if chart is not None else None
        except Exception as exc:  # noqa: BLE001 - the contract: nothing raises into the notebook
            self._fail(exc, owner)
            return
        self.last_error, self.last_exception = None, None
        for name, c in self.controls.items():
            if isinstance(c, NumberText):
                c.last_good = values[name]
        self.result = result
        # the chart first: its message reaches the page, and Vega starts drawing, before the
        # text's (each widget's change is a message of its own)
        if chart is not None:
            if self.chart is None:
                self._first_chart = chart
                self.chart = alt.JupyterChart(chart)
                self._live = spec
                self.chart.spec = _with_live_parts(*self._live)
                if hasattr(self, "_chart_box"):
                    self._chart_box.children = [self.chart]
            else:
                # a menu's change may bring new words (legend entries) that need a new layout
                self._push(spec, relayout=isinstance(owner, (W.Dropdown, W.ToggleButtons, W.RadioButtons)))
        self.error.value = ""
        self.notes.value = "".join(_note_html(n) for n in [*self._said, *notes])
        self._said = []
        if summary is not None:
            self.summary.value = summary
        self._show_stale(False)
        self.updates += 1

    def _push(self, live: tuple[dict, dict, Any], relayout: bool = False) -> None:
        """Show a chart (its :func:`_live_of` parts) in the chart on screen: when only its data
        and title changed (the usual case: one control moved), send those alone (Vega swaps the
        datasets and the title signal in the view already drawn); otherwise send the whole spec
        (vega-embed parses, compiles and draws it again, tens of milliseconds in the browser)."""
        template, datasets, title = live
        old_template, old_datasets, old_title = self._live
        self._live = (template, datasets, title)
        full = _with_live_parts(template, datasets, title)
        if (template is not old_template and template != old_template) or \
                (relayout and _words(datasets) != _words(old_datasets)) or \
                os.environ.get("TRAINIUM_LAB_FULL_CHART_UPDATES") == "1":
            # a menu that brings new words into the data (legend entries: 02's "FP8 E5M2,
            # stochastic rounding") needs a new layout, which Vega makes when it draws a spec
            # (issue 42: they were cut at the chart's edge); a slider keeps the fast path (07's
            # "chosen: 5" redrawn on every press took its median from 32 to 50 ms)
            # (the environment variable restores the old way, for tools/benchmarks/browser.py)
            self.chart.spec = full
            return
        updates = [{"namespace": "data", "name": name, "scope": [], "value": values}
                   for name, values in datasets.items() if old_datasets.get(name) != values]
        if title != old_title:
            updates.append({"namespace": "signal", "name": _TITLE_PARAM, "scope": [], "value": title})
        if updates:
            # The kernel's copy of the spec follows (a page that reloads asks for it), without
            # sending it again: written past traitlets, whose notification would walk the
            # whole spec looking for binary buffers (milliseconds for a spec of 20 kB).
            self.chart._trait_values["spec"] = full
            self.chart._py_to_js_updates = updates

    @property
    def spec(self) -> dict | None:
        """The Vega-Lite spec of the chart on screen (its current data and title)."""
        if self.chart is None:
            return None
        template, datasets, title = self._live
        return _with_live_parts(template, datasets, title)

    def _fail(self, exc: BaseException, owner: W.Widget | None) -> None:
        self.last_exception = exc
        if isinstance(exc, FieldError):
            message = str(exc)
        elif isinstance(exc, ValueError):
            message = in_field_words(str(exc), owner if owner in self.controls.values() else None)
        else:  # a bug, not bad input: say so, in one line, without a traceback
            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            message = (f"internal error ({type(exc).__name__}: {exc}"
                       + (f", at {where.name} line {where.lineno}" if where else "")
                       + "): this is a bug in the course, not your input; please report it")
        self.last_error = message
        if self.updates:
            message += " — the summary and chart below are still those of the last good input."
        self.error.value = error_html(message)
        self.notes.value = ""
        self._show_stale(bool(self.updates))

    @contextlib.contextmanager
    def holding(self):
        """Control changes made inside start no update of their own: the update that follows
        (or is running) reads them, and shows what :meth:`say` said."""
        held, self._updating = self._updating, True
        try:
            yield
        finally:
            self._updating = held

    def say(self, message: str) -> None:
        """A note shown with the next update: what the explorer changed on its own (a menu's
        value that the new settings no longer offer), so that no input changes silently."""
        self._said.append(message)

    def mark_stale(self, message: str | None = None) -> None:
        """Dim the summary and chart (their inputs changed, not yet used); ``message`` above."""
        self._show_stale(True)

    def _show_stale(self, stale: bool) -> None:
        self.stale = stale
        for w in (self.summary, getattr(self, "_chart_box", None)):
            if w is None:
                continue
            if stale:
                w.add_class("tl-stale")
            else:
                w.remove_class("tl-stale")

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus a static SVG of its default view and a plain-text line.

        JupyterLab with a kernel shows the live widget; GitHub, nbviewer, nbconvert and the
        static site (which cannot run it) show the SVG of the chart as it first appears.
        """
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = ("Interactive explorer (run the cell in JupyterLab to use the "
                                "controls); the chart shows its default view.")
        if self._first_chart is not None:
            from trainium_lab.charts.base import static_svg

            bundle["image/svg+xml"] = static_svg(self._first_chart)
        elif self.summary.value:  # a widget without a chart: its default summary
            bundle["text/html"] = self.summary.value
        return bundle


#: most data rows whose words :func:`_words` compares (a larger chart keeps the fast path)
_WORDS_MAX_ROWS = 2000


def _words(datasets: dict) -> frozenset | None:
    """The text values of a chart's datasets (what its legend and labels can show), or ``None``
    for data too large to compare cheaply."""
    if sum(len(rows) for rows in datasets.values() if isinstance(rows, list)) > _WORDS_MAX_ROWS:
        return None
    return frozenset(v for rows in datasets.values() if isinstance(rows, list) for row in rows
                     if isinstance(row, dict) for v in row.values() if isinstance(v, str))


_TITLE_PARAM = "tl_title"
_DATASET_NAME = re.compile(r'"data-[0-9a-f]{32}"')


def _live_parts(spec: dict) -> tuple[dict, dict, Any]:
    """``(template, datasets, title)`` of a chart spec for a live view: Altair's content-hash
    dataset names replaced by stable ones (``tl_0``, ``tl_1``... in order of appearance) and a
    top-level title made a parameter, so that two updates of the same chart differ only in
    ``datasets`` and the title when only the data changed. The template holds the datasets and
    title too (a view drawing it from scratch shows them)."""
    import json

    text = json.dumps(spec, sort_keys=True)
    names: dict[str, str] = {}
    for m in _DATASET_NAME.finditer(text):
        names.setdefault(m.group(), f'"tl_{len(names)}"')
    text = _DATASET_NAME.sub(lambda m: names[m.group()], text)
    spec = json.loads(text)
    datasets = spec.pop("datasets", {}) or {}
    # Vega lays a view out once: an update that swaps only the data and the title kept the first
    # layout, so a longer title, wider axis labels or a longer legend were cut at the chart's
    # edge (issue 42: 6 explorers). ``resize`` lays it out again after each update.
    autosize = spec.get("autosize") or {"type": "pad"}
    spec["autosize"] = {**({"type": autosize} if isinstance(autosize, str) else autosize), "resize": True}
    title = spec.get("title")
    if title is not None and (isinstance(title, (str, list)) or
                              (isinstance(title, dict) and isinstance(title.get("text"), (str, list)))):
        text_value = title if not isinstance(title, dict) else title["text"]
        rest = {} if not isinstance(title, dict) else {k: v for k, v in title.items() if k != "text"}
        spec["title"] = {**rest, "text": {"expr": _TITLE_PARAM}}
        spec["params"] = [p for p in spec.get("params", []) if p.get("name") != _TITLE_PARAM] + [
            {"name": _TITLE_PARAM, "value": None}]
        title = text_value
    else:
        title = None
    return spec, datasets, title


def _title_text(title: Any) -> tuple[Any, Any]:
    """``(text, the rest)`` of a top-level title as :func:`_live_parts` splits it: the text
    becomes a signal; the rest (a subtitle, a font) stays in the template."""
    if isinstance(title, (str, list)):
        return title, None
    if isinstance(title, dict) and isinstance(title.get("text"), (str, list)):
        return title["text"], {k: v for k, v in title.items() if k != "text"}
    return None, title


def _live_of(chart: alt.TopLevelMixin) -> tuple[dict, dict, Any]:
    """:func:`_live_parts` of a chart. A :class:`~trainium_lab.charts.base.DatasetTemplate`
    (named datasets only) is split once per template and set of top-level properties (its
    title's text aside: that is a signal), then costs next to nothing: its datasets are taken
    as they are."""
    import json

    spec = chart.__dict__.get("_spec")
    frozen = chart.__dict__.get("_frozen")
    if spec is None or frozen is None:
        return _live_parts(chart.to_dict(validate=False))
    text, rest = _title_text(spec.get("title"))
    # what this chart sets on top of the template it was made from (a description, a title)
    own = {k: v for k, v in spec.items() if k not in ("datasets", "title") and frozen.get(k) is not v}
    key = (id(frozen), json.dumps([own, rest], sort_keys=True, default=str))
    cached = _TEMPLATE_PARTS.get(key)
    if cached is None or cached[0] is not frozen:
        template, _, _ = _live_parts({**spec, "datasets": {}})
        cached = (frozen, template)
        if len(_TEMPLATE_PARTS) > 512:  # keep the memory bounded
            _TEMPLATE_PARTS.clear()
        _TEMPLATE_PARTS[key] = cached
    return cached[1], chart._kwds["datasets"], text


#: (id of a frozen template's spec, its chart's own top-level properties) -> (that spec, the
#: live template)
_TEMPLATE_PARTS: dict[tuple[int, str], tuple[dict, dict]] = {}


def _with_live_parts(template: dict, datasets: dict, title: Any) -> dict:
    spec = {**template, "datasets": datasets}
    if title is not None:
        spec["params"] = [p if p.get("name") != _TITLE_PARAM else {**p, "value": title}
                          for p in template.get("params", [])]
    return spec


#: ipywidgets' margin around every control (``--jp-widgets-margin``, 2 px in ipywidgets 8)
WIDGET_MARGIN_PX = 2


def control_grid(controls: Sequence[W.Widget], columns: int) -> W.GridBox:
    """Controls in a grid of at most ``columns`` columns that wraps on a narrow page; every
    label wide enough for its text (one width for the grid) and titled with it."""
    labelled = [c for c in controls if getattr(c, "description", None)]
    longest = max((len(c.description) for c in labelled), default=0)
    label_px = int(min(max(_LABEL_MIN_PX, longest * _CHAR_PX + 8), _LABEL_MAX_PX))
    for c in labelled:
        if not c.tooltip:
            c.tooltip = c.description
        elif c.description.split(" (")[0] not in c.tooltip:  # the hover shows the whole label
            c.tooltip = f"{c.description}: {c.tooltip}"
        if isinstance(c, (W.Checkbox, W.Button, W.ToggleButton)):
            continue
        style = getattr(c, "style", None)
        if style is not None and hasattr(style, "description_width") \
                and style.description_width in ("", None):
            style.description_width = f"{label_px}px"
    sliders = any(getattr(c, "tl_readout", None) is not None for c in controls)
    # a slider's track keeps ~130 px beside its label and typed readout
    cell = max(CONTROL_WIDTH_PX, label_px + 180, label_px + READOUT_PX + 150 if sliders else 0)
    cells = []
    for c in controls:
        if isinstance(c, W.Dropdown) and not c.layout.width and c.options and \
                max(len(str(lab)) for lab in c._options_labels) * _CHAR_PX + _MENU_PAD_PX > cell - label_px:
            c.layout.width = "max-content"  # a menu shows its longest option whole: a row of its own
        width = c.layout.width or ""
        px = re.fullmatch(r"(\d+)px", width)
        readout = getattr(c, "tl_readout", None)
        item = c
        if readout is not None:  # the slider and its readout, one cell
            outer = int(px.group(1)) if px else cell
            c.layout.width = f"{outer - READOUT_PX - 4}px"
            item = W.HBox([c, readout], layout=W.Layout(width=f"{outer}px"))
            item.add_class("tl-slider")
            width = item.layout.width
            px = re.fullmatch(r"(\d+)px", width)
        if width == "max-content" or (px and int(px.group(1)) > cell):
            # a wide control takes a row of its own (ipywidgets 8.1's page applies a layout's
            # grid_area but drops grid_column and grid_row)
            item.layout.grid_area = FULL_ROW
            item.layout.max_width = "100%"
        elif not width:
            item.layout.width = f"{cell}px"
        cells.append(item)
    # a grid track holds a control and its margins (ipywidgets' --jp-widgets-margin on each side):
    # tracks of the control's width alone let the right-most control stick 2 px past the grid's
    # box, which cut its right border (issue 42, 17 explorers)
    track = cell + 2 * WIDGET_MARGIN_PX
    return W.GridBox(cells, layout=W.Layout(
        grid_template_columns=f"repeat(auto-fill, {track}px)", grid_gap=f"4px {_GAP_PX}px",
        max_width=f"{columns * track + (columns - 1) * _GAP_PX}px", width="100%"))


class SearchInputs:
    """Inputs read only when a button is clicked (a search that takes a while): their grid,
    the button and a status line. A changed input says, in the status line, that the result
    below is still the previous search's until the button is clicked.

    Parameters
    ----------
    controls : mapping of name -> widget
        As for :class:`Explorer` (number boxes become :class:`NumberText`).
    button : str
        The button's text.
    columns : int
        Most controls to a row.
    relevance : callable, optional
        As for :class:`Explorer`: controls the current settings ignore, with the reason.
    """

    def __init__(self, controls: Mapping[str, W.Widget], button: str, *, columns: int = 3,
                 relevance: Callable[[dict], Mapping[str, str]] | None = None):
        self.controls = {name: _convert(c) for name, c in controls.items()}
        self.button = W.Button(description=button, button_style="primary",
                               tooltip=f"{button}: search with these inputs")
        self.status = W.HTML()
        self.changed: W.Widget | None = None
        self._before_error: str | None = None  # the status line before a typing error
        self._relevance = relevance
        self.grid = control_grid(list(self.controls.values()) + [self.button], columns)
        self._tooltips = {n: c.tooltip for n, c in self.controls.items()}
        self.on_change: Callable[[], None] | None = None
        self._apply_relevance()
        for c in self.controls.values():
            c.observe(self._changed, names="value")
        for readout in _readouts(self.controls):
            readout.observe(self._typed, names="value")

    def _typed(self, change) -> None:
        readout = change["owner"]
        if readout.syncing:
            return
        self.changed = readout.slider
        try:
            moved = readout.commit()
        except ValueError as exc:
            self.fail(exc)
            if self.on_change is not None:
                self.on_change()
            return
        if not moved and self._before_error is not None:
            # the slider's own value typed again (issue 42: "29" after "1.5"): the error about
            # the readout goes, and the status line says again what it said before it
            self.status.value, self._before_error = self._before_error, None

    def _apply_relevance(self) -> None:
        apply_relevance(self.controls, self._relevance, self._tooltips)

    def values(self) -> dict[str, Any]:
        """The inputs as the model gets them (``ValueError`` in a field's words)."""
        self._apply_relevance()
        return read_values(self.controls)[0]

    def _changed(self, change) -> None:
        self.changed = change["owner"]
        self._apply_relevance()
        if isinstance(self.changed, NumberText):  # what cannot be read is said at once
            try:
                self.changed.read()
            except ValueError as exc:
                self.fail(exc)
                if self.on_change is not None:
                    self.on_change()
                return
        shown = getattr(self.changed, "label", None) if isinstance(self.changed, W.Dropdown) \
            else self.changed.value
        self._before_error = None
        self.status.value = _note_html(
            f"{self.changed.description} changed to {shown}: click “{self.button.description}” "
            "to search again; the result below is for the previous inputs.")
        if self.on_change is not None:
            self.on_change()

    def fail(self, exc: ValueError) -> str:
        """Show a search's ``ValueError`` in the status line, in the changed field's words."""
        message = str(exc) if isinstance(exc, FieldError) else in_field_words(str(exc), self.changed)
        if self._before_error is None:
            self._before_error = self.status.value
        self.status.value = error_html(message + " — the result below is for the previous inputs.")
        return message

    def done(self, message: str) -> None:
        self.changed = None
        self._before_error = None
        self.status.value = html.escape(message)
