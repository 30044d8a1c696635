"""The Explorer: controls → model → chart, with bad input shown inline.

The callback only collects control values, calls a model and then a chart
builder. A ``ValueError`` from the model is shown under the controls in plain
words and the last good chart stays; nothing raises into the notebook.
"""

from __future__ import annotations

import html
from typing import Any, Callable, Mapping, Sequence

import altair as alt
import ipywidgets as W

__all__ = ["Explorer", "benchmarked", "BENCHMARKS", "error_html"]

#: factory name -> (factory, [(control name, new value), ...]) for tools/benchmark.py
BENCHMARKS: dict[str, tuple[Callable[[], "Explorer"], Sequence[tuple[str, Any]]]] = {}


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


class Explorer:
    """Controls wired to ``compute`` (a model) and ``render`` (a chart builder).

    Parameters
    ----------
    controls : mapping of name -> ipywidgets value widget
        Their ``.value`` s are passed to ``compute`` as keyword arguments.
    compute : callable
        ``compute(**values) -> result``; may raise ``ValueError`` for bad input.
    render : callable
        ``render(result) -> alt.Chart`` (or ``None`` for no chart).
    describe : callable, optional
        ``describe(result) -> str`` (HTML) shown above the chart.
    """

    def __init__(self, controls: Mapping[str, W.ValueWidget], compute: Callable[..., Any],
                 render: Callable[[Any], alt.TopLevelMixin | None],
                 describe: Callable[[Any], str] | None = None, *, columns: int = 2):
        self.controls = dict(controls)
        self._compute, self._render, self._describe = compute, render, describe
        self.summary = W.HTML()
        self.error = W.HTML()
        self.chart: alt.JupyterChart | None = None
        self._first_chart: alt.TopLevelMixin | None = None  # the default view, for static_svg
        self.result: Any = None
        self.last_error: str | None = None
        self.updates = 0
        grid = W.GridBox(list(self.controls.values()),
                         layout=W.Layout(grid_template_columns=f"repeat({columns}, max-content)",
                                         grid_gap="4px 16px"))
        self.update()
        children: list[W.Widget] = [grid, self.error, self.summary]
        if self.chart is not None:
            children.append(self.chart)
        self.widget = W.VBox(children)
        for control in self.controls.values():
            control.observe(self.update, names="value")

    def values(self) -> dict[str, Any]:
        """The controls' current values."""
        return {name: c.value for name, c in self.controls.items()}

    def update(self, _change: Any = None) -> None:
        """Recompute and redraw; show a ValueError inline instead of raising."""
        try:
            result = self._compute(**self.values())
            chart = self._render(result)
        except ValueError as exc:
            self.last_error = str(exc)
            self.error.value = error_html(self.last_error)
            return
        self.last_error = None
        self.error.value = ""
        self.result = result
        if self._describe is not None:
            self.summary.value = self._describe(result)
        if chart is not None:
            spec = chart.to_dict(validate=False)
            if self.chart is None:
                self._first_chart = chart
                self.chart = alt.JupyterChart(chart)
            else:
                self.chart.spec = spec
        self.updates += 1

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
