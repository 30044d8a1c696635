"""Chart code that stays fast in a widget: rules read off the source, not timed.

Altair 6.3 turns a string shorthand (``x="a:Q"``, ``tooltip=["a:Q"]``) or a dict
(``alt.value(...)``, ``alt.datum(...)``) given to ``.encode`` into a channel through
``SchemaBase.from_dict``, which rebuilds its map of every schema class on each call: about 6 ms
per channel on a laptop, tens of ms per widget update (upstream: vega/altair#3547, open). Channel
objects (``alt.X("a:Q")``, ``alt.ColorValue(...)``, ``alt.YDatum(...)``) skip it. The test
reads every module that builds charts for the course and names each offending argument.
"""

from __future__ import annotations

import ast
from pathlib import Path

import altair as alt
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1] / "trainium_lab"
MODULES = sorted([*ROOT.glob("charts/*.py"), *ROOT.glob("views/*.py"), *ROOT.glob("widgets/*.py")])


def slow_encodings(source: str, filename: str = "<source>") -> list[str]:
    """``file:line encoding`` for each string or dict channel given to an ``.encode(...)``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "encode"):
            continue
        for kw in node.keywords:
            values = kw.value.elts if isinstance(kw.value, (ast.List, ast.Tuple)) else [kw.value]
            if isinstance(kw.value, ast.IfExp):
                values = [kw.value.body, kw.value.orelse]
            for v in values:
                text = isinstance(v, (ast.JoinedStr, ast.Dict)) or (
                    isinstance(v, ast.Constant) and isinstance(v.value, str))
                helper = (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                          and v.func.attr in ("value", "datum") and isinstance(v.func.value, ast.Name)
                          and v.func.value.id == "alt")
                if text or helper:
                    found.append(f"{filename}:{v.lineno} {kw.arg}")
    return found


def test_the_rule_finds_shorthands_and_dicts():
    src = ('c.encode(x="a:Q", y=alt.Y("b:Q"), tooltip=["a:Q", alt.Tooltip("b:Q")], '
           'color=alt.value("red"), y2=alt.datum(0), size=alt.SizeValue(3))')
    assert slow_encodings(src) == ["<source>:1 x", "<source>:1 tooltip", "<source>:1 color",
                                   "<source>:1 y2"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_charts_give_encode_channel_objects(path):
    assert slow_encodings(path.read_text(), path.name) == []


def test_the_reason_still_holds(monkeypatch):
    """The rule's premise, checked without a clock: a shorthand makes Altair build its schema
    map (``_FromDict``) and a channel object does not. If Altair stops doing so, this fails and
    the rule can go."""
    from altair.utils import schemapi

    built = []
    original = schemapi._FromDict.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(schemapi._FromDict, "__init__", counting)
    chart = alt.Chart(pd.DataFrame({"a": [1]})).mark_point()
    chart.encode(x=alt.X("a:Q"), tooltip=[alt.Tooltip("a:Q")], color=alt.ColorValue("red"))
    assert built == []
    chart.encode(x="a:Q")
    assert len(built) == 1
