"""Every chart says in words what it shows: each public chart function is decorated with
``charts.base.described`` (the Vega-Lite ``description``, which a live view makes its ARIA label),
and every chart stored in a notebook carries it as the SVG's accessible name."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import altair as alt
import pytest

import trainium_lab.charts as charts_pkg
from trainium_lab.charts import base

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ROOT_LABEL = re.compile(r'^<svg role="graphics-document" aria-roledescription="visualization" '
                        r'aria-label="([^"]+)"[^>]*><title>([^<]+)</title>')


def chart_functions():
    out = []
    for info in pkgutil.iter_modules(charts_pkg.__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"trainium_lab.charts.{info.name}")
        out += [(f"{info.name}.{name}", fn) for name, fn in vars(module).items()
                if inspect.isfunction(fn) and fn.__module__ == module.__name__
                and not name.startswith("_")]
    return out


def test_every_chart_function_is_described():
    functions = chart_functions()
    assert len(functions) > 50
    missing = [name for name, fn in functions if not getattr(fn, "description", "")]
    assert not missing, missing
    for name, fn in functions:
        words = fn.description.split()
        assert len(words) >= 8 and fn.description.endswith("."), f"{name}: {fn.description!r}"


def test_description_reaches_the_spec_and_the_svg():
    from trainium_lab.charts.start import units_chart
    import pandas as pd

    chart = units_chart(pd.DataFrame({"unit": ["GB", "GiB"], "value": [96.0, 89.4]}))
    assert chart.to_dict()["description"] == units_chart.description
    svg = base.static_svg(chart)
    label = ROOT_LABEL.match(svg)
    assert label and label.group(1) == label.group(2)
    assert label.group(1).startswith("Bars comparing one size")


def test_a_template_chart_keeps_its_description_across_updates():
    """Charts built from a cached template (DatasetTemplate) carry it in the converted spec."""
    class Tmpl(base.DatasetTemplate, alt.Chart):
        pass

    @base.described("A template chart of one point per row, for this test only.")
    def tmpl_chart(rows):
        return Tmpl(alt.NamedData("d")).mark_point().encode(x="a:Q").freeze().with_datasets({"d": rows})

    first = tmpl_chart([{"a": 1}])
    assert first.to_dict(validate=False)["description"].startswith("A template chart")
    assert tmpl_chart([{"a": 2}]).to_dict(validate=False)["datasets"] == {"d": [{"a": 2}]}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_stored_chart_has_its_description(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    n_svg, missing = 0, []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            svg = out.get("data", {}).get("image/svg+xml")
            if not svg:
                continue
            n_svg += 1
            svg = "".join(svg) if isinstance(svg, list) else svg
            label = ROOT_LABEL.match(svg)
            if not label or len(label.group(1).split()) < 8:
                missing.append(f"cell {i}")
    assert not missing, f"{path.name}: charts without a description in {missing}"
