"""Every registered widget (all chapters): each benchmarked control change updates the model
and the chart without an error, and bad input is shown inline instead of raised.

Timing is measured by tools/benchmark.py, not asserted here."""

import importlib
import pkgutil

import pytest

import trainium_lab.widgets as widgets_pkg
from trainium_lab.widgets.base import BENCHMARKS, Explorer, error_html

for _info in pkgutil.iter_modules(widgets_pkg.__path__):
    importlib.import_module(f"trainium_lab.widgets.{_info.name}")

FACTORIES = sorted(BENCHMARKS.items())


@pytest.mark.parametrize("name, entry", FACTORIES, ids=[n for n, _ in FACTORIES])
def test_every_benchmarked_change_updates_the_chart(name, entry):
    factory, changes = entry
    assert changes, f"{name} registers no control change"
    explorer = factory()
    assert isinstance(explorer, Explorer)
    assert explorer.last_error is None, explorer.last_error
    for control, value in changes:
        before_spec = explorer.chart.spec if explorer.chart is not None else None
        before_summary = explorer.summary.value
        before = explorer.updates
        explorer.controls[control].value = value
        assert explorer.last_error is None, f"{name}: {control}={value!r}: {explorer.last_error}"
        assert explorer.updates == before + 1, f"{name}: {control} did not trigger an update"
        after_spec = explorer.chart.spec if explorer.chart is not None else None
        assert (after_spec != before_spec) or (explorer.summary.value != before_summary), \
            f"{name}: changing {control} to {value!r} changed neither chart nor summary"


def test_explorer_shows_value_errors_inline_and_keeps_last_chart():
    import altair as alt
    import ipywidgets as W
    import pandas as pd

    def compute(x):
        if x < 0:
            raise ValueError(f"x must be >= 0, got {x}")
        return pd.DataFrame({"a": [x]})

    ex = Explorer({"x": W.FloatText(value=1.0)}, compute,
                  lambda df: alt.Chart(df).mark_bar().encode(x="a:Q"))
    good = ex.chart.spec
    ex.controls["x"].value = -1.0
    assert ex.last_error == "x must be >= 0, got -1.0"
    assert "x must be &gt;= 0" in ex.error.value
    assert ex.chart.spec == good
    ex.controls["x"].value = 2.0
    assert ex.error.value == "" and ex.chart.spec != good


def test_error_html_escapes():
    assert "&lt;b&gt;" in error_html("<b>")
