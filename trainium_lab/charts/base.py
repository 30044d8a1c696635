"""Shared chart defaults and the course's static (SVG) renderer.

Stored chart outputs must not depend on the processor: numpy picks SIMD kernels
per CPU, so the last bits of computed data differ between machines. The course's
SVG renderer therefore rounds every float in a chart's spec to
``SPEC_SIGNIFICANT_DIGITS`` significant digits before vl-convert draws it, and
rounds the drawn coordinates to ``SVG_DECIMALS`` decimals of a pixel: what is
stored is what a reader can see, identical on every machine.

vl-convert lays text out by measuring it, with the fonts it finds (the system's, plus a
Liberation Sans it carries for ``sans-serif``), and a browser draws the SVG's ``font-family``
with its own fonts: when they differ, labels are drawn wider than they were laid out and
overlap bars or lose letters at the edge. The renderer therefore writes one font family,
``FONT_FAMILY``, into every static chart's config and measures it with the copy of DejaVu Sans
shipped in ``trainium_lab/fonts`` (registered with vl-convert once, on first use), so the
layout is the same on every machine whatever fonts it has installed, and a browser with
DejaVu Sans draws exactly what was measured.
"""

from __future__ import annotations

import functools
import html
import math
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import altair as alt

if TYPE_CHECKING:
    import pandas as pd

WIDTH = 460
HEIGHT = 240
#: categorical palette used across chapters, readable with the common colour-vision deficiencies:
#: Okabe and Ito's eight colours ("Color Universal Design", 2008; blue, orange, vermillion, sky
#: blue, bluish green, yellow, reddish purple) in the roles Tableau 10 had here (blue, orange,
#: red, teal, green, yellow, purple, ...), then Paul Tol's indigo, a brown and a grey. Tableau
#: 10's red and green look alike to a deuteranope (CIELAB difference 0.9 after Machado et al.
#: 2009's simulation); tests/test_colour_vision.py checks every legend of the stored charts.
PALETTE = ["#0072b2", "#e69f00", "#d55e00", "#56b4e9", "#009e73",
           "#f0e442", "#cc79a7", "#332288", "#8c510a", "#bbbbbb"]


def described(text: str | Callable[..., str]):
    """Decorator for a chart function: its chart carries ``text`` as the Vega-Lite
    ``description``, what the chart shows in words for a screen reader.

    A live chart (``JupyterChart``, vega-embed) makes it the ARIA label of the view; the static
    renderer writes it into the SVG (``aria-label`` and ``<title>``), and the static site uses it
    as the image's ``alt`` text. ``text`` may be a function of the chart function's arguments
    when the words depend on them. Setting it costs nothing per update: no copy of the chart.

    >>> @described("Two bars.")
    ... def two_bars_chart():
    ...     return alt.Chart({"values": [{"a": 1}]}).mark_bar()
    >>> two_bars_chart().to_dict()["description"], two_bars_chart.description
    ('Two bars.', 'Two bars.')
    """
    def decorate(fn):
        @functools.wraps(fn)
        def chart_function(*args, **kwargs):
            chart = fn(*args, **kwargs)
            words = text(*args, **kwargs) if callable(text) else text
            spec = chart.__dict__.get("_spec")  # a DatasetTemplate's converted spec
            if spec is not None and spec.get("description") != words:
                # a copy: the template's spec is shared by every chart made from it
                object.__setattr__(chart, "_spec", {**spec, "description": words})
            chart.description = words
            return chart

        chart_function.description = text if isinstance(text, str) else fn.__name__
        return chart_function
    return decorate


def base(data, *, title: str | None = None, width: int = WIDTH, height: int = HEIGHT) -> alt.Chart:
    """An ``alt.Chart`` with the course's size and title conventions."""
    kwargs = {"width": width, "height": height}
    if title:
        kwargs["title"] = title
    return alt.Chart(data, **kwargs)



def stacked_bars(records: list[dict], *, n_bars: int, bar: str, value: str, value_title: str,
                 colour: str, domain: list[str], colours: list[str], colour_title: str | None,
                 tooltip: list, title: str | None, width: int = WIDTH, bar_px: int = 34,
                 label_limit: int = 320, colour_sort: list[str] | None = None,
                 value_axis: alt.Axis | None = None) -> alt.Chart:
    """Horizontal bars of ``value`` stacked by ``colour`` (in the order of an ``order`` field),
    one bar per ``bar``, ``bar_px`` pixels each: the shape of every "where does it go" chart."""
    x = alt.X(f"{value}:Q", stack="zero", title=value_title,
              **({} if value_axis is None else {"axis": value_axis}))
    color = alt.Color(f"{colour}:N", scale=alt.Scale(domain=domain, range=colours), title=colour_title,
                      **({} if colour_sort is None else {"sort": colour_sort}))
    return alt.Chart(records, title=title, width=width, height=bar_px * n_bars + 10).mark_bar().encode(
        x=x, y=alt.Y(f"{bar}:N", sort=None, title=None, axis=alt.Axis(labelLimit=label_limit)),
        color=color, order=alt.Order("order:Q"), tooltip=tooltip)

#: significant digits kept of every float in a chart spec (far below what a chart can show)
SPEC_SIGNIFICANT_DIGITS = 6
#: decimals of a pixel kept in drawn SVG coordinates
SVG_DECIMALS = 2
RENDERER = "trainium-lab-svg"


def round_significant(x: float, digits: int = SPEC_SIGNIFICANT_DIGITS) -> float:
    """``x`` rounded to ``digits`` significant digits (0, inf and NaN unchanged).

    >>> round_significant(233.07149999999, 4)
    233.1
    >>> round_significant(0.1 + 0.2)
    0.3
    """
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def round_spec(obj: Any, digits: int = SPEC_SIGNIFICANT_DIGITS) -> Any:
    """A copy of a Vega-Lite spec (dicts, lists, numbers) with every float rounded."""
    if isinstance(obj, float):
        return round_significant(obj, digits)
    if isinstance(obj, dict):
        return {k: round_spec(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [round_spec(v, digits) for v in obj]
    return obj


_TAG = re.compile(r"<[^>]*>")
_LONG_DECIMAL = re.compile(r"-?\d+\.\d{%d,}" % (SVG_DECIMALS + 1))


def _round_match(m: re.Match) -> str:
    text = f"{float(m.group()):.{SVG_DECIMALS}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def round_svg(svg: str) -> str:
    """Round the numbers inside an SVG's tags (coordinates, not text) to ``SVG_DECIMALS``.

    >>> round_svg('<path d="M0.123456,10.5L3.14159,2"/><text>0.123456</text>')
    '<path d="M0.12,10.5L3.14,2"/><text>0.123456</text>'
    """
    return _TAG.sub(lambda tag: _LONG_DECIMAL.sub(_round_match, tag.group()), svg)


#: the folder of fonts shipped with the package (DejaVu Sans, see its README.md and LICENSE)
FONT_DIR = Path(__file__).resolve().parent.parent / "fonts"
#: font of all chart text: DejaVu Sans (shipped, so vl-convert measures it on every machine),
#: then fonts of nearly the same widths for a browser without it (Bitstream Vera Sans has
#: DejaVu's Latin metrics; Verdana, on Windows and macOS, is within a few per cent), then any sans
FONT_FAMILY = "DejaVu Sans, Bitstream Vera Sans, Verdana, sans-serif"
#: chart config of the course: the font, and Vega's default label limits (axis 180 px, legend
#: 160 px) widened by DejaVu Sans's ~15-20 % over Liberation Sans (vl-convert's default sans, which
#: the charts were first laid out with), so labels that fitted then are not cut to "…" now
#: (and at least ``labelSeparation`` px between axis labels: Vega hides a label that would come
#: closer, so the last ticks of an axis never run together, as "150160" and "10,000100,000" did)
COURSE_CONFIG = {"font": FONT_FAMILY, "axis": {"labelLimit": 220, "labelSeparation": 4},
                 "legend": {"labelLimit": 200}, "range": {"category": PALETTE}}
#: Altair theme with ``COURSE_CONFIG``, for live charts (``alt.theme.enable(THEME)``), so they
#: look like the static ones; the static renderer applies ``COURSE_CONFIG`` itself, theme or not
THEME = "trainium-lab"
#: room (px) around a static chart: the text is measured in the font it is drawn with, so this
#: only absorbs a fallback font a few per cent wider (a browser without DejaVu Sans)
STATIC_PADDING = 8



def _font_advances(path: str) -> tuple[float, dict[int, int]]:
    """(units per em, {code point: advance width}) of a TrueType font, read with the stdlib
    (tables ``head``, ``hhea``, ``hmtx`` and a format-4 ``cmap``: the Basic Multilingual Plane)."""
    data = Path(path).read_bytes()
    u16 = lambda at: struct.unpack_from(">H", data, at)[0]  # noqa: E731
    tables = {data[12 + 16 * i:16 + 16 * i].decode("latin-1"): struct.unpack_from(">I", data, 20 + 16 * i)[0]
              for i in range(u16(4))}
    units_per_em, n_metrics = u16(tables["head"] + 18), u16(tables["hhea"] + 34)
    advances = [u16(tables["hmtx"] + 4 * g) for g in range(n_metrics)]
    cmap = tables["cmap"]
    sub = next(cmap + struct.unpack_from(">I", data, cmap + 8 + 8 * i)[0] for i in range(u16(cmap + 2))
               if (u16(cmap + 4 + 8 * i), u16(cmap + 6 + 8 * i)) in ((3, 1), (0, 3))
               and u16(cmap + struct.unpack_from(">I", data, cmap + 8 + 8 * i)[0]) == 4)
    seg = u16(sub + 6) // 2
    ends, starts = sub + 14, sub + 16 + 2 * seg
    deltas, offsets = starts + 2 * seg, starts + 4 * seg
    glyph_width = {}
    for i in range(seg):
        start, end = u16(starts + 2 * i), u16(ends + 2 * i)
        delta, offset = u16(deltas + 2 * i), u16(offsets + 2 * i)
        for c in range(start, min(end, 0xFFFE) + 1):
            g = c if offset == 0 else u16(offsets + 2 * i + offset + 2 * (c - start))
            if offset == 0 or g:
                g = (g + delta) & 0xFFFF
            glyph_width[c] = advances[min(g, n_metrics - 1)]
    return float(units_per_em), glyph_width


@functools.lru_cache(maxsize=2)
def _advances(bold: bool) -> tuple[float, dict[int, int]]:
    return _font_advances(str(FONT_DIR / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")))


def text_width_px(text: str, font_size: float, bold: bool = False) -> float:
    """Width in px of the widest line of ``text`` in the course's chart font (DejaVu Sans, the
    font vl-convert lays static charts out with; kerning ignored, a pixel or two), for drawings
    that place text themselves.

    >>> round(text_width_px("Cold start", 10), 1)
    48.7
    """
    units_per_em, width = _advances(bold)
    fallback = width.get(ord("M"), units_per_em)
    return max(sum(width.get(ord(ch), fallback) for ch in line) for line in text.split("\n")) \
        * font_size / units_per_em


def rule_crosses_label(end_px: float, text: str, rule_px: float, font_size: float, *,
                       dx: float = 4, room: float = 2) -> bool:
    """Whether a vertical rule at ``rule_px`` runs through ``text``, a label drawn ``dx`` px
    right of a bar ending at ``end_px`` (``room`` px kept clear on either side), for charts
    that then move the label past the rule.

    >>> rule_crosses_label(100, "2,565", 110, 11), rule_crosses_label(100, "2,565", 150, 11)
    (True, False)
    """
    return end_px - 1 - room <= rule_px <= end_px + dx + text_width_px(text, font_size) + room


@functools.cache
def register_fonts() -> None:
    """Let vl-convert measure and draw the fonts in ``FONT_DIR`` (once per process: its font
    registry is global, and registering the folder again would only rebuild it)."""
    import vl_convert as vlc

    vlc.register_font_directory(str(FONT_DIR))


def _defaults_under(defaults: dict, given: dict) -> dict:
    """``given`` with ``defaults`` filled in where it says nothing (nested dicts merged)."""
    out = dict(defaults)
    for key, value in given.items():
        out[key] = (_defaults_under(out[key], value)
                    if isinstance(value, dict) and isinstance(out.get(key), dict) else value)
    return out


def with_course_config(spec: dict) -> dict:
    """``spec`` (a Vega-Lite dict) with ``COURSE_CONFIG`` under its own ``config``.

    Whatever the chart configures itself wins.

    >>> with_course_config({"mark": "bar"})["config"]["font"] == FONT_FAMILY
    True
    >>> config = with_course_config({"config": {"font": "serif", "axis": {"grid": False}}})["config"]
    >>> config["font"], config["axis"]
    ('serif', {'labelLimit': 220, 'labelSeparation': 4, 'grid': False})
    """
    return {**spec, "config": _defaults_under(COURSE_CONFIG, spec.get("config", {}))}


def svg_renderer(spec: dict, **metadata) -> dict[str, str]:
    """Altair renderer: Altair's SVG renderer on a rounded spec with the course's config (its
    text in the shipped font, measured with it), coordinates rounded."""
    from altair.vegalite.v6.display import svg_renderer as altair_svg

    register_fonts()
    spec = with_course_config(round_spec(spec))
    spec.setdefault("padding", STATIC_PADDING)
    bundle = altair_svg(spec, **metadata)
    svg = bundle.get("image/svg+xml")
    if isinstance(svg, str):
        bundle = {**bundle, "image/svg+xml": label_svg(round_svg(svg), chart_description(spec))}
    return bundle


def chart_description(spec: dict) -> str:
    """A spec's ``description``; for charts composed in a notebook (``alt.vconcat`` of described
    charts), the descriptions of its parts, each once.

    >>> chart_description({"vconcat": [{"description": "A."}, {"description": "A."},
    ...                                 {"layer": [{"description": "B."}]}]})
    'A. B.'
    """
    if spec.get("description"):
        return spec["description"]
    parts: list[str] = []
    for key in ("vconcat", "hconcat", "concat", "layer"):
        for sub in spec.get(key, []):
            words = chart_description(sub) if isinstance(sub, dict) else ""
            if words and words not in parts:
                parts.append(words)
    if isinstance(spec.get("spec"), dict):  # facet and repeat
        parts.append(chart_description(spec["spec"]))
    return " ".join(p for p in parts if p)


def label_svg(svg: str, description: str | None) -> str:
    """The SVG with the chart's description as its accessible name (what Vega's live view
    does with it: ``role="graphics-document"`` and ``aria-label``), and as its ``<title>``.

    >>> label_svg('<svg width="2"><rect/></svg>', 'A "red" box')
    '<svg role="graphics-document" aria-roledescription="visualization" aria-label="A &quot;red&quot; box" width="2"><title>A &quot;red&quot; box</title><rect/></svg>'
    """
    if not description:
        return svg
    words = html.escape(" ".join(str(description).split()), quote=True)
    return re.sub(r"<svg\b([^>]*)>",
                  lambda m: (f'<svg role="graphics-document" aria-roledescription="visualization" '
                             f'aria-label="{words}"{m.group(1)}><title>{words}</title>'),
                  svg, count=1)


def static_svg(chart: alt.TopLevelMixin) -> str:
    """The SVG the course's renderer would store for ``chart`` (for widgets' static views)."""
    return svg_renderer(chart.to_dict(validate=False))["image/svg+xml"]


alt.renderers.register(RENDERER, svg_renderer)


@alt.theme.register(THEME, enable=False)
def course_theme() -> alt.theme.ThemeConfig:
    """Altair's default theme (its 300 px view for charts without a size) plus ``COURSE_CONFIG``."""
    view = {"continuousWidth": 300, "continuousHeight": 300}
    return {"config": _defaults_under(COURSE_CONFIG, {"view": view})}


def row_dicts(df: pd.DataFrame, cols: Sequence[str] | None = None) -> list[dict]:
    """Rows of a small frame (its columns ``cols``) as dicts of plain Python values: one
    ``tolist`` per column, no numpy scalars and no per-row pandas overhead (a widget update
    calls it). Frames must hold no NaN (JSON has none)."""
    cols = list(df.columns) if cols is None else list(cols)
    return [dict(zip(cols, row)) for row in zip(*(df[c].tolist() for c in cols))]


def inline_rows(df: pd.DataFrame) -> alt.InlineData:
    """A small frame as inline values, skipping Altair's DataFrame sanitising (milliseconds per
    layer on every widget update). The rows are a tuple: Altair deep-copies lists of dicts each
    time a chart is layered or serialised but passes tuples through (``to_dict`` makes them
    lists). Frames must hold no NaN."""
    from altair.utils.schemapi import debug_mode

    with debug_mode(False):
        return alt.InlineData(values=tuple(row_dicts(df)))


class DatasetTemplate:
    """Mixin for a top-level chart whose data all sit in top-level named ``datasets``.

    Only the datasets change from one widget update to the next, so the rest of the
    spec is converted once (:meth:`freeze`) and reused: ``to_dict(validate=False)``
    with default options returns that spec plus the current datasets in ~1 ms
    instead of Altair's rebuild of tens of milliseconds. Any other call goes
    through Altair. Use it first in the bases: ``class C(DatasetTemplate, alt.LayerChart)``.
    """

    def to_dict(self, validate: bool = True, *, format: str = "vega-lite",
                ignore: list[str] | None = None, context: dict | None = None) -> dict:
        spec = self.__dict__.get("_spec")
        if validate or format != "vega-lite" or ignore or context or spec is None:
            return super().to_dict(validate=validate, format=format, ignore=ignore,
                                   context=context)
        return {**spec, "datasets": self._kwds["datasets"]}

    def __repr__(self) -> str:  # what a notebook's text output shows: the Altair class, as usual
        altair_class = next(c for c in type(self).__mro__ if c.__module__.startswith("altair"))
        return f"alt.{altair_class.__name__}(...)"

    def freeze(self):
        """Convert the spec once (without datasets) and keep it; returns the chart."""
        spec = super().to_dict(validate=False)
        spec.pop("datasets", None)
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_frozen", spec)  # the converted template, shared by its copies
        return self

    def with_datasets(self, datasets: dict[str, list[dict]], **props):
        """A copy sharing the converted spec, with new datasets (no Altair re-validation) and
        ``props`` (top-level properties: a ``title``) set in a copy of the spec, without
        converting it again. A live view shows a new top-level title as a signal, so the
        template stays the same."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        object.__setattr__(clone, "_kwds", {**self._kwds, **props, "datasets": datasets})
        if props:
            object.__setattr__(clone, "_spec", {**self.__dict__["_spec"], **props})
        return clone

    def with_props(self, **props):
        """A copy with ``props`` set, the datasets kept (see :meth:`with_datasets`)."""
        return self.with_datasets(self._kwds["datasets"], **props)


class TemplateChart(DatasetTemplate, alt.Chart):
    """A single-view chart whose data sit in named ``datasets`` (see :class:`DatasetTemplate`)."""


class TemplateLayerChart(DatasetTemplate, alt.LayerChart):
    """A layered chart whose data sit in named ``datasets`` (see :class:`DatasetTemplate`)."""


class TemplateHConcatChart(DatasetTemplate, alt.HConcatChart):
    """Side-by-side charts whose data sit in named ``datasets`` (see :class:`DatasetTemplate`)."""


class TemplateVConcatChart(DatasetTemplate, alt.VConcatChart):
    """Stacked charts whose data sit in named ``datasets`` (see :class:`DatasetTemplate`)."""
