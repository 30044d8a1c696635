"""Every chart a learner sees reads cleanly, checked on what is drawn: vl-convert's scenegraph as
serialised in the SVG (the stored static charts of every notebook, and each explorer's chart at
its default and at its control extremes, drawn with the course's renderer and font).

What is checked on each drawing:

* no text cut to "…" (axis, legend and mark labels; a legend cut to "… N entries");
* no two texts of one kind (the labels of one axis, one legend, one mark layer) closer than 2 px,
  and no two texts of different kinds overlapping;
* no text outside the drawing;
* no rule of the data (a threshold, a marker) drawn across a mark label or an axis label, and
  none without a legend or a label of its own nearby (``RULE_LABEL_PX``);
* every colour, shape and dash that varies within one layer is explained by a legend of that
  channel (cells outlined in another colour: by the word "outlined" in the chart's text), or — checked on the Vega-Lite spec of the explorers — by an axis or text of the same
  field, or by words the chart itself shows (``usermeta["explained"]``); every rule or tick layer
  of a layered chart carries a legend or a label.

Text is measured with DejaVu Sans, the font vl-convert laid the charts out with
(``charts.base.text_width_px``); a text box spans 0.76 em above the baseline to 0.22 em below.
"""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import altair as alt
import ipywidgets as W
import pandas as pd
import pytest

from trainium_lab.charts import base
from trainium_lab.charts.base import text_width_px

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NS = "{http://www.w3.org/2000/svg}"
TRANSFORM = re.compile(r"(translate|rotate)\(([^)]*)\)")
LEGEND = re.compile(r"legend (?:titled '[^']*' )?for ([a-zA-Z ,]+?) with")
#: Vega's SVG channel name in a legend's ARIA label -> the SVG attribute it varies
LEGEND_CHANNELS = {"fill color": "fill", "stroke color": "stroke", "color": "fill",
                   "strokeDash": "dash", "stroke dash": "dash", "shape": "shape", "size": "shape"}
#: a rule without a legend must have a mark label within this many px (chapter 05's all-reduce
#: arrow has its words 16-20 px above and below it)
RULE_LABEL_PX = 20
#: at most this many explorer settings per control (dropdown options beyond it are sampled evenly)
MAX_OPTIONS = 6


# --------------------------------------------------------------------------- reading the SVG


def _ops(transform: str | None):
    for kind, args in TRANSFORM.findall(transform or ""):
        yield kind, [float(v) for v in re.split(r"[ ,]+", args.strip()) if v]


def _walk(el, ox, oy, roles, texts, shapes):
    tag = el.tag.replace(NS, "")
    if tag in ("svg", "g"):
        for kind, v in _ops(el.get("transform")):
            if kind == "translate":
                ox, oy = ox + v[0], oy + (v[1] if len(v) > 1 else 0)
        m = re.match(r"mark-(\w+) role-([\w-]+)\s*(\S*)", el.get("class", ""))
        if m:
            roles = roles + (m.groups(),)
        for child in el:
            _walk(child, ox, oy, roles, texts, shapes)
    elif tag == "text":
        texts.append((el, ox, oy, roles))
    elif tag in ("path", "line", "rect"):
        shapes.append((el, ox, oy, roles))


def drawing(svg: str) -> dict:
    """Texts (box in px, text, role path), mark rules and mark groups of a vl-convert SVG."""
    root = ET.fromstring(svg)
    texts, shapes = [], []
    _walk(root, 0.0, 0.0, (), texts, shapes)
    items = []
    for el, ox, oy, roles in texts:
        if el.get("opacity") == "0" or el.get("fill-opacity") == "0":
            continue  # hidden by Vega's label-overlap removal
        spans = list(el.iter(NS + "tspan"))
        lines = [s.text or "" for s in spans] if spans else [el.text or ""]
        if not "".join(lines).strip():
            continue
        size = float((el.get("font-size") or "11px").rstrip("px"))
        w = max(text_width_px(line, size, el.get("font-weight") in ("bold", "700")) for line in lines)
        x = y = angle = 0.0
        for kind, v in _ops(el.get("transform")):
            if kind == "rotate":
                angle = v[0]
            else:
                a = math.radians(angle)
                dx, dy = v[0], (v[1] if len(v) > 1 else 0.0)
                x, y = x + dx * math.cos(a) - dy * math.sin(a), y + dx * math.sin(a) + dy * math.cos(a)
        left = {"start": 0.0, "middle": -w / 2, "end": -w}[el.get("text-anchor", "start")]
        top = -0.76 * size
        bottom = sum(float(s.get("dy") or 0) for s in spans[1:]) + 0.22 * size
        if round(angle) % 180 == 0:
            box = (x + left, y + top, x + left + w, y + bottom)
        else:  # ±90°: the local (along, across) axes turn into (down, left) or (up, right)
            s = 1 if round(angle) % 360 == 90 else -1
            xs, ys = [x - s * v for v in (top, bottom)], [y + s * u for u in (left, left + w)]
            box = (min(xs), min(ys), max(xs), max(ys))
        role = roles[-1][1] if roles else ""
        items.append({"box": (box[0] + ox, box[1] + oy, box[2] + ox, box[3] + oy),
                      "text": "\n".join(lines), "role": role, "path": roles})
    rules, groups = [], {}
    for el, ox, oy, roles in shapes:
        if not roles or roles[-1][1] != "mark":
            continue
        if el.tag == NS + "line" and roles[-1][0] == "rule":
            x = y = 0.0
            for kind, v in _ops(el.get("transform")):
                if kind == "translate":
                    x, y = x + v[0], y + (v[1] if len(v) > 1 else 0)
            rules.append(((ox + x + float(el.get("x1", 0)), oy + y + float(el.get("y1", 0))),
                          (ox + x + float(el.get("x2", 0)), oy + y + float(el.get("y2", 0))),
                          tuple(r[2] for r in roles)))
        if el.get("role") == "graphics-symbol":
            g = groups.setdefault((tuple(r[2] for r in roles), roles[-1][0]),
                                  {"fill": set(), "stroke": set(), "dash": set(), "shape": set(), "at": []})
            start = re.match(r"M(-?[\d.]+),(-?[\d.]+)", el.get("d") or "")
            moved = [v for kind, v in _ops(el.get("transform")) if kind == "translate"]
            at = moved[0][:2] if moved else [float(v) for v in start.groups()] if start else None
            g["at"].append((el.get("stroke") if mark_is_line(roles) else el.get("fill"), at))
            g["fill"].add(el.get("fill"))
            g["stroke"].add(el.get("stroke"))
            g["dash"].add(el.get("stroke-dasharray"))
            if roles[-1][0] == "symbol":
                g["shape"].add(el.get("d"))
    legends = set()
    for g in root.iter(NS + "g"):
        m = LEGEND.search(g.get("aria-label") or "") if "role-legend" in g.get("class", "") else None
        if m:
            for part in re.split(r",? and |, ", m.group(1)):
                legends.add(LEGEND_CHANNELS.get(part.strip(), part.strip()))
    return {"width": float(root.get("width")), "height": float(root.get("height")), "texts": items,
            "rules": rules, "groups": groups, "legends": legends}


def mark_is_line(roles) -> bool:
    return roles[-1][0] in ("rule", "line")


def _crosses(segment, box, margin=0.5) -> bool:
    (x1, y1), (x2, y2) = segment[:2]
    for k in range(201):
        t = k / 200
        x, y = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
        if box[0] + margin < x < box[2] - margin and box[1] + margin < y < box[3] - margin:
            return True
    return False


def _one_colour_per_row(placed) -> bool:
    """Whether the items' fills are in one-to-one correspondence with their rows (or columns)."""
    for k in (1, 0):
        rows = {}
        for fill, at in placed:
            if at is None:
                return False
            rows.setdefault(round(at[k]), set()).add(fill)
        fills = [f for f, _ in placed]
        if len(rows) > 1 and all(len(v) == 1 for v in rows.values()) and len(rows) == len(set(fills)):
            return True
    return False


def svg_problems(svg: str) -> list[str]:
    """What a reader of this drawing would trip on (empty when it reads cleanly)."""
    d = drawing(svg)
    problems = []
    texts = d["texts"]
    for a in texts:
        x0, y0, x1, y1 = a["box"]
        if "…" in a["text"]:
            problems.append(f"cut to …: {a['text']!r} ({a['role']})")
        if x0 < -1 or y0 < -1 or x1 > d["width"] + 1 or y1 > d["height"] + 1:
            problems.append(f"outside the {d['width']:.0f}×{d['height']:.0f} drawing: {a['text']!r}")
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            A, B = a["box"], b["box"]
            across, down = min(A[2], B[2]) - max(A[0], B[0]), min(A[3], B[3]) - max(A[1], B[1])
            if across > (-2 if a["path"] == b["path"] else 0.5) and down > 1:
                problems.append(f"overlap: {a['text']!r} ({a['role']}) / {b['text']!r} ({b['role']})")
    for rule in d["rules"]:
        for a in texts:
            if a["role"] in ("mark", "axis-label", "legend-label") and _crosses(rule, a["box"]):
                problems.append(f"a rule crosses the label {a['text']!r} ({a['role']})")
    outlined = any("outlined" in a["text"] for a in texts)  # says what a cell's outline means
    marks = [a for a in texts if a["role"] == "mark"]
    explained = {path for (path, mark), ch in d["groups"].items()
                 if mark == "rule" and ch["at"] and _one_colour_per_row(ch["at"])}
    for rule in d["rules"]:
        if rule[2] in explained or {"stroke", "dash"} & d["legends"]:
            continue  # bars drawn as rules, one per labelled row; or a legend for the rules
        (x1, y1), (x2, y2) = rule[:2]
        if not any(b[0] - RULE_LABEL_PX <= max(x1, x2) and min(x1, x2) <= b[2] + RULE_LABEL_PX
                   and b[1] - RULE_LABEL_PX <= max(y1, y2) and min(y1, y2) <= b[3] + RULE_LABEL_PX
                   for b in (a["box"] for a in marks)):
            problems.append(f"a rule of layer {rule[2][-1]} with no legend and no label near it")
    axis_labels = any(a["role"] == "axis-label" for a in texts)
    for (path, mark), channels in d["groups"].items():
        placed = channels.pop("at")
        for channel, values in channels.items():
            if channel == ("stroke" if mark in ("rule", "line") else "fill") and axis_labels \
                    and _one_colour_per_row(placed):
                continue  # each colour is one labelled row (or column) of the axis: it names it
            if len(values - {None}) > 1 and channel not in d["legends"] and not (
                    channel == "stroke" and mark == "rect" and outlined):
                problems.append(f"{mark} layer {path[-1]}: {len(values)} {channel}s and no legend for them")
    return problems


# --------------------------------------------------------------------------- the stored charts


def stored_charts() -> list[tuple[str, str]]:
    out = []
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            for o in cell.get("outputs", []):
                svg = o.get("data", {}).get("image/svg+xml")
                if svg:
                    out.append((f"{path.stem[:2]}-cell-{i}", "".join(svg) if isinstance(svg, list) else svg))
    return out


STORED = stored_charts()
#: stored charts whose varying colours are explained another way than a legend, and how (each
#: claim is checked below: the words are in the drawing)
EXPLAINED_IN_WORDS: dict[str, tuple[str, str]] = {}


def test_every_notebook_stores_charts_to_check():
    chapters = {w[:2] for w, _ in STORED}
    assert chapters == {p.stem[:2] for p in NOTEBOOKS} and len(STORED) >= 90, (len(STORED), chapters)


@pytest.mark.parametrize("where, svg", STORED, ids=[w for w, _ in STORED])
def test_stored_chart_reads_cleanly(where, svg):
    problems = svg_problems(svg)
    if where in EXPLAINED_IN_WORDS:
        channel, words = EXPLAINED_IN_WORDS[where]
        assert words in "\n".join(t["text"] for t in drawing(svg)["texts"]), (where, words)
        problems = [p for p in problems if f" {channel}s and no legend" not in p]
    assert not problems, problems[:8]


#: JupyterLab's output area in a 1,008 px notebook column (1440×900, file browser open): the
#: column less the 64 px prompt; at 848 px (1280×800) JupyterLab scales a wider SVG down to fit
#: (its ``.jp-RenderedSVG svg {max-width: 100%; height: auto}``), which needs a viewBox
OUTPUT_AREA_PX = 1008 - 64


def svg_size_problems(svg: str) -> list[str]:
    """Why a stored chart would not fit the notebook column, or not shrink to a narrower one."""
    m = re.search(r"<svg\b[^>]*>", svg)
    head = m.group() if m else ""
    width = re.search(r'\bwidth="([\d.]+)', head)
    problems = []
    if width is None or float(width.group(1)) > OUTPUT_AREA_PX:
        problems.append(f"width {width.group(1) if width else '?'} px > {OUTPUT_AREA_PX} px")
    if "viewBox=" not in head:
        problems.append("no viewBox: JupyterLab cannot scale it into a narrower column")
    return problems


def test_the_size_check_finds_a_wide_chart_and_one_that_cannot_shrink():
    assert svg_size_problems('<svg width="900" viewBox="0 0 900 10"></svg>') == []
    assert svg_size_problems('<svg width="974" viewBox="0 0 974 10"></svg>') == ["width 974 px > 944 px"]
    assert svg_size_problems('<svg width="500"></svg>') == [
        "no viewBox: JupyterLab cannot scale it into a narrower column"]


@pytest.mark.parametrize("where, svg", STORED, ids=[w for w, _ in STORED])
def test_stored_chart_fits_the_notebook_column(where, svg):
    """Every stored chart (static charts and each widget's static view) fits the output area of a
    1,008 px column and can shrink into an 848 px one (issue 31: four were wider)."""
    assert not svg_size_problems(svg), (where, svg_size_problems(svg))


# --------------------------------------------------------------------------- the check can fail


def _svg(chart) -> str:
    return base.static_svg(chart)


def test_the_check_finds_touching_axis_labels():
    """What the audit saw in chapter 03's ring: "chunk 0chunk 1…" along a band axis."""
    chart = alt.Chart(pd.DataFrame({"c": [f"chunk {i}" for i in range(8)], "v": range(8)})).mark_bar(
    ).encode(x=alt.X("c:N", axis=alt.Axis(labelAngle=0)), y="v:Q").properties(width=8 * 39)
    problems = svg_problems(_svg(chart))
    assert any("'chunk 0'" in p and "'chunk 1'" in p for p in problems), problems


def test_the_check_finds_cut_labels_and_a_cut_legend():
    cut = alt.Chart(pd.DataFrame({"c": ["a very long category name indeed"], "v": [1]})).mark_bar(
    ).encode(y=alt.Y("c:N", axis=alt.Axis(labelLimit=40)), x="v:Q")
    assert any(p.startswith("cut to …") for p in svg_problems(_svg(cut)))
    many = alt.Chart(pd.DataFrame({"g": [f"group {i}" for i in range(60)], "v": range(60)})).mark_bar(
    ).encode(x="v:Q", y=alt.Y("g:N", axis=None), color=alt.Color("g:N", legend=alt.Legend(symbolLimit=20)))
    assert any("entries" in p and "cut to" in p for p in svg_problems(_svg(many))), svg_problems(_svg(many))


def test_the_check_finds_a_rule_over_a_bar_label():
    """Chapter 03's DP threshold: the dashed "your batch" rule ran through a bar's label."""
    df = pd.DataFrame({"row": ["a", "b"], "v": [100.0, 300.0], "t": ["100", "300"]})
    bars = alt.Chart(df).mark_bar().encode(x="v:Q", y="row:N")
    text = alt.Chart(df).mark_text(align="left", dx=4).encode(x="v:Q", y="row:N", text="t:N")
    rule = alt.Chart(pd.DataFrame({"v": [310.0]})).mark_rule(strokeDash=[4, 3]).encode(x="v:Q")
    assert any("rule crosses the label '300'" in p for p in svg_problems(_svg(bars + text + rule)))
    assert any("no label near it" in p for p in svg_problems(_svg(bars + rule)))
    named = alt.Chart(pd.DataFrame({"v": [310.0]})).mark_text(align="left", dx=3, y=0, baseline="top").encode(
        x="v:Q", text=alt.value("your batch"))
    assert not any("no label near it" in p for p in svg_problems(_svg(bars + rule + named)))


def test_the_check_finds_colours_without_a_legend_and_text_past_the_edge():
    df = pd.DataFrame({"x": [1, 2, 3], "y": [1, 2, 3], "k": ["a", "b", "a"]})
    lines = alt.Chart(df).mark_point(filled=True).encode(x="x:Q", y="y:Q", color=alt.Color("k:N", legend=None))
    assert any("2 fills and no legend" in p for p in svg_problems(_svg(lines)))
    svg = _svg(lines.encode(color=alt.Color("k:N")))
    assert not svg_problems(svg)
    root = ET.fromstring(svg)
    narrow = svg.replace(f'width="{root.get("width")}"', 'width="20"', 1)
    assert any("outside" in p for p in svg_problems(narrow))


def test_the_check_finds_a_label_overlapping_another_kind():
    df = pd.DataFrame({"x": [1.0], "y": [1.0], "t": ["a label placed on the axis"]})
    pts = alt.Chart(df).mark_point().encode(x=alt.X("x:Q", scale=alt.Scale(domain=[1, 2])), y="y:Q")
    text = alt.Chart(df).mark_text(align="left", baseline="top", dy=9).encode(
        x="x:Q", y=alt.datum(0), text="t:N")
    problems = svg_problems(_svg(alt.layer(pts, text).properties(height=100)))
    assert any("overlap" in p and "(mark)" in p and "(axis-label)" in p for p in problems), problems


# --------------------------------------------------------------------------- the explorers


import trainium_lab.widgets as widgets_pkg  # noqa: E402
from trainium_lab.widgets.base import BENCHMARKS  # noqa: E402

for _info in pkgutil.iter_modules(widgets_pkg.__path__):
    importlib.import_module(f"trainium_lab.widgets.{_info.name}")

#: explorers that show a table or text, not a chart (tests/test_widgets.py checks they draw none)
CHARTLESS = ("hardware.claims_explorer",)
EXPLORERS = [n for n in sorted(BENCHMARKS) if n not in CHARTLESS]
ENCODED = ("color", "fill", "stroke", "shape", "size", "strokeDash", "opacity", "fillOpacity",
           "strokeOpacity")


def _settings(ex):
    """(label, {control: value}) pairs: each slider at both ends, each menu at each option (at
    most ``MAX_OPTIONS``, evenly sampled), then every slider at its minimum together and at its
    maximum together."""
    lows, highs = {}, {}
    for name, c in ex.controls.items():
        if isinstance(c, W.FloatLogSlider):
            values = [c.base ** c.min, c.base ** c.max]
            lows[name], highs[name] = values
        elif isinstance(c, (W.IntSlider, W.FloatSlider)):
            values = [c.min, c.max]
            lows[name], highs[name] = values
        elif isinstance(c, (W.SelectionSlider, W.Dropdown, W.ToggleButtons, W.RadioButtons)):
            options = [o[1] if isinstance(o, tuple) else o for o in c.options]
            if isinstance(c, W.SelectionSlider):
                lows[name], highs[name] = options[0], options[-1]
            step = max(1, math.ceil((len(options) - 1) / (MAX_OPTIONS - 1))) if len(options) > 1 else 1
            values = sorted(set(range(0, len(options), step)) | {len(options) - 1})
            values = [options[i] for i in values]
        elif isinstance(c, W.Checkbox):
            values = [not c.value]
        else:
            continue
        for v in values:
            yield f"{name}={v!r}", {name: v}
    if len(lows) > 1:
        yield "all sliders at their minimum", lows
        yield "all sliders at their maximum", highs


def _unit_specs(spec, inherited=None):
    """(unit spec, its layer siblings, the top-level spec's visible words) for each mark."""
    if "layer" in spec:
        for sub in spec["layer"]:
            yield from _unit_specs(sub, spec["layer"] if inherited is None else inherited)
    for key in ("vconcat", "hconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _unit_specs(sub)
    if "spec" in spec:
        yield from _unit_specs(spec["spec"])
    if "mark" in spec:
        yield spec, inherited or [spec]


def _mark_type(unit):
    mark = unit["mark"]
    return mark["type"] if isinstance(mark, dict) else mark


def spec_problems(spec: dict, visible_words: str) -> list[str]:
    """Encodings the chart does not explain: a colour, shape, size, dash or opacity field with
    its legend switched off, unless the same field is on an axis or a text channel of that mark,
    or ``usermeta["explained"][channel]`` names words the chart shows; and, in a layered chart,
    a rule or tick layer with no legend and no text layer drawing the same data."""
    explained = {}
    def collect(node):  # usermeta of the chart and of any of its parts
        if isinstance(node, dict):
            explained.update(((node.get("usermeta") or {}).get("explained") or {}))
            for v in node.values():
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)
    collect({k: v for k, v in spec.items() if k != "datasets"})
    problems = []
    for channel, words in explained.items():
        if words not in visible_words:
            problems.append(f"usermeta says {channel} is explained by {words!r}, which the chart does not show")
    for unit, siblings in _unit_specs(spec):
        enc = unit.get("encoding", {})
        kind = _mark_type(unit)
        shown = {e.get("field") for ch, e in enc.items()
                 if ch in ("x", "y", "row", "column", "facet", "text") and isinstance(e, dict)
                 and e.get("axis", {}) is not None}
        for channel in ENCODED:
            e = enc.get(channel)
            if not isinstance(e, dict) or "field" not in e or kind == "text":
                continue
            if e.get("legend", {}) is not None or e.get("scale", {}) is None:
                continue  # a legend; or colours named in the data (checked on the drawing)
            if e["field"] in shown or channel in explained:
                continue
            problems.append(f"{kind} layer: {channel} = {e['field']!r} has no legend, axis or words")
        if kind in ("rule", "tick") and len(siblings) > 1:
            has_legend = any(isinstance(enc.get(ch), dict) and ("field" in enc[ch] or "datum" in enc[ch])
                             and enc[ch].get("legend", {}) is not None for ch in ENCODED)
            data = json.dumps(unit.get("data"), sort_keys=True)
            same_data = [s for sib in siblings for s, _ in _unit_specs(sib)
                         if s is not unit and json.dumps(s.get("data"), sort_keys=True) == data]
            # labelled by a text layer of the same data, or drawn with marks of the same data
            # that a legend explains (the drop lines under an optimum's points)
            labelled = any(_mark_type(s) == "text" or any(
                isinstance(e, dict) and "field" in e and e.get("legend", {}) is not None
                for ch, e in s.get("encoding", {}).items() if ch in ENCODED) for s in same_data)
            name = (unit.get("data") or {}).get("name", "")
            if not (has_legend or labelled or f"{kind}:{name}" in explained):
                problems.append(f"{kind} layer on {unit.get('data')} has neither a legend nor a label")
    return problems


def _explorer_problems(ex) -> list[str]:
    spec = base.with_course_config(base.round_spec(ex.spec))
    svg = base.svg_renderer(ex.spec)["image/svg+xml"]
    words = "\n".join(t["text"] for t in drawing(svg)["texts"])
    return svg_problems(svg) + spec_problems(spec, words)


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPLORERS)
def test_explorer_chart_reads_cleanly_at_its_extremes(name):
    """Each explorer's chart at its default, with each slider at both ends, each menu at each
    option (sampled beyond ``MAX_OPTIONS``), each checkbox flipped, and all sliders at their
    ends together: the drawing reads cleanly and every encoding is explained."""
    ex = BENCHMARKS[name][0]()
    assert ex.chart is not None, f"{name} draws no chart: add it to CHARTLESS"
    found = {f"default: {p}" for p in _explorer_problems(ex)}
    checked = 1
    defaults = {n: c.value for n, c in ex.controls.items()}
    for label, setting in _settings(ex):
        try:
            for control, value in setting.items():
                ex.controls[control].value = value
        except Exception:  # noqa: BLE001 - a value the control refuses is no setting to check
            pass
        else:
            if ex.last_error is None and ex.chart is not None:
                found |= {f"{label}: {p}" for p in _explorer_problems(ex)}
                checked += 1
        for control, value in defaults.items():
            if ex.controls[control].value != value:
                try:
                    ex.controls[control].value = value
                except Exception:  # noqa: BLE001
                    pass
    assert checked >= 2, f"{name}: no setting besides the default could be drawn"
    assert not found, sorted(found)[:10]


def test_spec_check_finds_unexplained_encodings():
    df = pd.DataFrame({"x": [1, 2], "y": [1, 2], "k": ["a", "b"]})
    quiet = alt.Chart(df).mark_line().encode(x="x:Q", y="y:Q", color=alt.Color("k:N", legend=None))
    assert spec_problems(quiet.to_dict(), "") == ["line layer: color = 'k' has no legend, axis or words"]
    assert spec_problems(quiet.properties(usermeta={"explained": {"color": "a: blue"}}).to_dict(),
                         "title a: blue") == []
    assert spec_problems(quiet.properties(usermeta={"explained": {"color": "a: blue"}}).to_dict(), "")
    redundant = alt.Chart(df).mark_bar().encode(x="x:Q", y="k:N", color=alt.Color("k:N", legend=None))
    assert spec_problems(redundant.to_dict(), "") == []
    rule = alt.Chart(pd.DataFrame({"x": [1.5]})).mark_rule().encode(x="x:Q")
    assert spec_problems(alt.layer(quiet.encode(color="k:N"), rule).to_dict(), "")
    label = alt.Chart(pd.DataFrame({"x": [1.5]})).mark_text().encode(x="x:Q", text=alt.value("t"))
    layered = alt.layer(quiet.encode(color="k:N"), rule, label).to_dict()
    assert not spec_problems(layered, "")
