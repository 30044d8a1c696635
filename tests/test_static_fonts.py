"""Static charts measure their text with the font they ask a browser to draw (chart base module).

vl-convert lays a chart out by measuring every label with the fonts it can find; a browser draws
the SVG's ``font-family`` with its own. The course ships DejaVu Sans (``trainium_lab/fonts``),
registers it with vl-convert and names it in every static chart's config, so the measured widths
are DejaVu Sans's advance widths, read here straight from the shipped font files, on any machine.
"""

from __future__ import annotations

import re
import struct
from functools import cache
from pathlib import Path

import altair as alt
import pandas as pd
import pytest

from trainium_lab.charts import base

REGULAR = base.FONT_DIR / "DejaVuSans.ttf"
BOLD = base.FONT_DIR / "DejaVuSans-Bold.ttf"
#: long labels of the kind that were cut or overlapped before (chapters 03, 07, 10)
LONG_LABEL = "Cold start: compile every bucket before the first request is served"
FONT_ATTR = re.compile(r'font-family="([^"]*)"')


# --- a minimal TrueType reader: names, units per em, advance widths -----------------------------

def _tables(data: bytes) -> dict[str, tuple[int, int]]:
    (n_tables,) = struct.unpack_from(">H", data, 4)
    out = {}
    for i in range(n_tables):
        tag, _, offset, length = struct.unpack_from(">4sIII", data, 12 + 16 * i)
        out[tag.decode("latin-1")] = (offset, length)
    return out


@cache
def _font(path: Path) -> tuple[bytes, dict[str, tuple[int, int]]]:
    data = path.read_bytes()
    return data, _tables(data)


def font_name(path: Path, name_id: int) -> str:
    """A name-table string (1: family, 2: subfamily) of the Windows Unicode records."""
    data, tables = _font(path)
    start, _ = tables["name"]
    _, count, strings = struct.unpack_from(">HHH", data, start)
    for i in range(count):
        platform, _, _, nid, length, offset = struct.unpack_from(">6H", data, start + 6 + 12 * i)
        if platform == 3 and nid == name_id:
            at = start + strings + offset
            return data[at:at + length].decode("utf-16-be")
    raise KeyError(name_id)


def _glyph(path: Path, char: str) -> int:
    """Glyph index of ``char`` from the (3, 1) format-4 cmap subtable."""
    data, tables = _font(path)
    start, _ = tables["cmap"]
    (n,) = struct.unpack_from(">H", data, start + 2)
    for i in range(n):
        platform, encoding, offset = struct.unpack_from(">HHI", data, start + 4 + 8 * i)
        if (platform, encoding) == (3, 1):
            sub = start + offset
            break
    assert struct.unpack_from(">H", data, sub)[0] == 4
    seg = struct.unpack_from(">H", data, sub + 6)[0] // 2
    ends = sub + 14
    starts, deltas, ranges = ends + 2 * seg + 2, ends + 4 * seg + 2, ends + 6 * seg + 2
    code = ord(char)
    for k in range(seg):
        end, first = (struct.unpack_from(">H", data, a + 2 * k)[0] for a in (ends, starts))
        if first <= code <= end:
            delta = struct.unpack_from(">h", data, deltas + 2 * k)[0]
            range_offset = struct.unpack_from(">H", data, ranges + 2 * k)[0]
            if range_offset == 0:
                return (code + delta) & 0xFFFF
            at = ranges + 2 * k + range_offset + 2 * (code - first)
            gid = struct.unpack_from(">H", data, at)[0]
            return (gid + delta) & 0xFFFF if gid else 0
    return 0


def advance_width_px(path: Path, text: str, font_size_px: float) -> float:
    """Sum of the glyphs' advance widths (hmtx) at ``font_size_px`` (no kerning)."""
    data, tables = _font(path)
    units_per_em = struct.unpack_from(">H", data, tables["head"][0] + 18)[0]
    n_metrics = struct.unpack_from(">H", data, tables["hhea"][0] + 34)[0]
    hmtx = tables["hmtx"][0]
    total = 0
    for char in text:
        gid = _glyph(path, char)
        total += struct.unpack_from(">H", data, hmtx + 4 * min(gid, n_metrics - 1))[0]
    return total * font_size_px / units_per_em


# --- what vl-convert measured ---------------------------------------------------------------------

def measured_width_px(text: str, *, weight: str = "normal", font_size_px: int = 200,
                      font: str = base.FONT_FAMILY) -> float:
    """Width vl-convert gives a one-line text mark: the SVG's width with no padding and a 1 px
    view, so the text's measured extent (rounded up to whole pixels) is the chart's width."""
    import vl_convert as vlc

    base.register_fonts()
    spec = {"padding": 0, "width": 1, "height": 1,
            "config": {"font": font, "view": {"stroke": None}},
            "data": {"values": [{"t": text}]},
            "mark": {"type": "text", "align": "left", "baseline": "top", "x": 0, "y": 0,
                     "fontSize": font_size_px, "fontWeight": weight},
            "encoding": {"text": {"field": "t"}}}
    svg = vlc.vegalite_to_svg(spec)
    return float(re.search(r'<svg[^>]*\swidth="([\d.]+)"', svg).group(1))


def long_label_chart() -> alt.Chart:
    df = pd.DataFrame({"step": [LONG_LABEL, "decode"], "time_ms": [120.0, 3.5]})
    return base.base(df, title="Where the first request's time goes").mark_bar().encode(
        y=alt.Y("step:N", title="step", axis=alt.Axis(labelLimit=0)),
        x=alt.X("time_ms:Q", title="time (ms)"))


# --- the tests ------------------------------------------------------------------------------------

def test_the_shipped_fonts_are_the_family_charts_ask_for():
    """The first family of ``FONT_FAMILY`` is the family inside the shipped files, regular and
    bold (titles are bold), with the licence beside them."""
    family = base.FONT_FAMILY.split(",")[0].strip()
    assert font_name(REGULAR, 1) == family and font_name(REGULAR, 2) == "Book"
    assert font_name(BOLD, 1) == family and font_name(BOLD, 2) == "Bold"
    licence = (base.FONT_DIR / "LICENSE").read_text(encoding="utf-8")
    assert "Bitstream Vera Fonts Copyright" in licence and "Arev Fonts Copyright" in licence
    assert base.FONT_FAMILY.endswith("sans-serif")  # a browser without any of them still draws a sans


def test_static_svg_names_the_shipped_font_for_all_its_text():
    svg = base.static_svg(long_label_chart())
    assert LONG_LABEL in svg and "Where the first request" in svg
    families = FONT_ATTR.findall(svg)
    assert len(families) >= 5 and set(families) == {base.FONT_FAMILY}


def test_a_chart_that_names_its_font_keeps_it():
    svg = base.static_svg(long_label_chart().configure(font="serif"))
    assert set(FONT_ATTR.findall(svg)) == {"serif"}


def test_labels_that_fitted_in_liberation_sans_still_fit():
    """Vega cuts a label longer than its limit to "…" (axis 180 px, legend 160 px by default);
    DejaVu Sans is wider than the Liberation Sans the charts were first laid out with, so the
    course's config widens the limits: chapter 07's cold-start labels stay whole."""
    labels = ["train step + spike guard: input[64, 344]", "train step + spike guard: input[64, 665]"]
    df = pd.DataFrame({"shape": labels, "step": [500, 1000],
                       "kind": ["bandwidth term only (no latency)", "latency + bandwidth"]})
    chart = base.base(df).mark_point().encode(y="shape:N", x="step:Q", color="kind:N")
    svg = base.static_svg(chart)
    assert "…" not in svg and all(f">{label}<" in svg for label in labels)
    assert ">bandwidth term only (no latency)<" in svg
    assert measured_width_px(labels[0], font_size_px=10) > 180  # else this test tests nothing


@pytest.mark.parametrize("path,weight", [(REGULAR, "normal"), (BOLD, "bold")], ids=["book", "bold"])
@pytest.mark.parametrize("text", ["Cold start", "mmmm 0123456789", "HBM bandwidth", "memory per chip"])
def test_vl_convert_measures_text_with_the_shipped_font(path, weight, text):
    """Measured width = the shipped font's advance widths (rounded up to a pixel) at 200 px
    (strings without kerning pairs: vl-convert shapes text, and "Pipeline" comes out 4 px short).

    vl-convert's own sans-serif (Liberation Sans) is ~9 % narrower at these sizes, and its
    estimate for a font it cannot find differs more: either would miss by tens of pixels."""
    expected = advance_width_px(path, text, 200)
    assert measured_width_px(text, weight=weight) == pytest.approx(expected, abs=1.0)


def test_without_the_course_font_vl_convert_measures_another_font():
    """The control for the test above: vl-convert's default ``sans-serif`` is not DejaVu Sans,
    so the measurement really tells the fonts apart."""
    text = "mmmm 0123456789"
    dejavu = advance_width_px(REGULAR, text, 200)
    assert abs(measured_width_px(text, font="sans-serif") - dejavu) > 0.05 * dejavu


def test_registering_twice_is_harmless():
    base.register_fonts()
    base.register_fonts()
    assert measured_width_px("Cold start") == pytest.approx(advance_width_px(REGULAR, "Cold start", 200), abs=1)


def test_the_packages_text_width_is_the_fonts_advance_width():
    """``charts.base.text_width_px`` (used by drawings that place their own captions) agrees with
    this file's independent reading of the shipped font's advance widths."""
    for text in ("Cold start", "W_O  (h × h)", "mmmm 0123456789"):
        assert base.text_width_px(text, 10) == pytest.approx(advance_width_px(REGULAR, text, 10), abs=0.01)
    assert base.text_width_px("a\nlonger line", 10) == pytest.approx(advance_width_px(REGULAR, "longer line", 10),
                                                                      abs=0.01)
