"""Charts for chapter 01 (hardware). Encodings only: the numbers come from
``trainium_lab.roofline`` and ``trainium_lab.cores``."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd

from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import HEIGHT, PALETTE, WIDTH, TemplateLayerChart, base, described, inline_rows, row_dicts

__all__ = ["roofline_chart", "generations_chart", "neuroncore_chart", "utilisation_chart"]

# distinct from the roof lines' category colours
_BOUND_COLORS = alt.Scale(domain=["HBM", "tensor engine"], range=["#7b3294", "#1a9641"])


@described(
    'Roofline on log-log axes: attainable TFLOP/s against arithmetic intensity (FLOP per byte '
    'of HBM traffic). Each roof rises with the HBM bandwidth until its ridge point, then '
    'stays flat at the peak compute rate; a marked matmul below the sloped part is bound by '
    'HBM, on the flat part by the tensor engine.')
def roofline_chart(curves: pd.DataFrame, point: pd.DataFrame | None = None, *,
                   title: str = "Roofline: attainable FLOP/s against arithmetic intensity",
                   labels: bool = True, path: pd.DataFrame | None = None,
                   path_label: str = "reachable as m grows") -> alt.LayerChart:
    """Log-log roofline(s), with an optional matmul placed on it.

    Parameters
    ----------
    curves : DataFrame
        From ``roofline.roofline_curve`` (one or several devices concatenated): columns
        ``device``, ``dtype``, ``intensity``, ``tflop_per_s``.
    point : DataFrame, optional
        Columns ``intensity``, ``tflop_per_s`` (attainable), ``bound``, ``label`` (may be empty)
        and optionally ``kind`` (shape legend, e.g. roofline bound versus with tiles, or
        where the path crosses the ridge).
    labels : bool
        Write each point's label beside it (widgets leave it to the tooltip: one layer less
        to build on every update).
    path : DataFrame, optional
        A matmul's path as its batch grows (``roofline.batch_curve``: ``intensity``,
        ``tflop_per_s``), drawn as a wide translucent band in the roofs' layer, named ``path_label``.
    """
    if path is not None and not labels and str(path_label).startswith(_PATH_WORDS):
        return _roofline_path_chart(curves, point, title, path, path_label)  # the explorer's
    with debug_mode(False):  # skip per-object schema validation: widget updates stay fast
        return _roofline_layers(curves, point, title, labels, path, path_label)


def _roofline_axes() -> tuple[alt.X, alt.Y]:
    """The roofline's log-log axes (every roofline chart of the course)."""
    return (alt.X("intensity:Q", scale=alt.Scale(type="log"),
                  title="arithmetic intensity (FLOP per byte of HBM traffic)"),
            alt.Y("tflop_per_s:Q", scale=alt.Scale(type="log"), title="attainable TFLOP/s"))


def _roofs_layer(data) -> alt.Chart:
    """The roofs alone, one line per device."""
    x, y = _roofline_axes()
    return alt.Chart(data).mark_line(strokeWidth=2.5).encode(
        x=x, y=y, color=alt.Color("device:N", title="roof"), tooltip=[alt.Tooltip("device:N")])


def _roofs_and_path_layer(data) -> alt.Chart:
    """The roofs and a matmul's path in one layer: the path lies on the roof by definition,
    drawn as a wide translucent band (size and opacity by ``dash``) over the part it reaches."""
    x, y = _roofline_axes()
    return alt.Chart(data).mark_line().encode(
        x=x, y=y, color=alt.Color("device:N", title=None, sort=None, legend=alt.Legend(labelLimit=320)),
        size=alt.Size("dash:N", legend=None, scale=alt.Scale(domain=["roof", "path"], range=[2.5, 10])),
        opacity=alt.Opacity("dash:N", legend=None, scale=alt.Scale(domain=["roof", "path"], range=[1, 0.45])),
        tooltip=[alt.Tooltip("device:N")])


def _point_layer(data, has_kind: bool) -> alt.Chart:
    """The matmuls placed on the roofs, filled by what bounds them (shaped by ``kind``)."""
    shape = (alt.Shape("kind:N", title=None, sort=None,
                       scale=alt.Scale(range=["diamond", "triangle-down", "circle"]))
             if has_kind else alt.ShapeValue("diamond"))
    return alt.Chart(data).mark_point(size=180, filled=True, opacity=1).encode(
        x=alt.X("intensity:Q"), y=alt.Y("tflop_per_s:Q"), shape=shape,
        fill=alt.Fill("bound:N", scale=_BOUND_COLORS, title="bound by"),
        tooltip=[alt.Tooltip("label:N", title="matmul"),
                 alt.Tooltip("tflop_per_s:Q", format=",.4g", title="TFLOP/s")])


#: words of the path's colour-legend entry that explain its width and opacity (the entry's
#: label starts with them; constant, so that the explorer's template is)
_PATH_WORDS = "reachable as m grows"


@functools.lru_cache(maxsize=4)
def _roofline_template(has_point: bool, has_kind: bool) -> TemplateLayerChart:
    """The roofs, the matmul's path and its points, with named (empty) data sets, built once:
    an explorer's update only swaps the data and the title."""
    with debug_mode(False):
        layers = [_roofs_and_path_layer(alt.NamedData("lines"))]
        if has_point:
            layers.append(_point_layer(alt.NamedData("points"), has_kind))
        # the wide translucent band (size and opacity by "dash") is the path's colour-legend entry
        chart = TemplateLayerChart(layer=layers, width=WIDTH, height=HEIGHT,
                                   usermeta={"explained": {"size": _PATH_WORDS, "opacity": _PATH_WORDS}},
                                   datasets={"lines": [], "points": []} if has_point else {"lines": []})
    return chart.freeze()


def _roofline_path_chart(curves, point, title, path, path_label):
    """The chart of ``roofline_chart`` with a path and no written labels, from the template."""
    lines = row_dicts(curves, ["device", "intensity", "tflop_per_s"])
    for r in lines:
        r["dash"] = "roof"
    lines += [{"intensity": r["intensity"], "tflop_per_s": r["tflop_per_s"], "device": str(path_label),
               "dash": "path"} for r in row_dicts(path, ["intensity", "tflop_per_s"])]
    datasets = {"lines": lines}
    has_kind = point is not None and "kind" in point.columns
    if point is not None:
        datasets["points"] = row_dicts(point, ["intensity", "tflop_per_s", "bound", "label"]
                                        + (["kind"] if has_kind else []))
    chart = _roofline_template(point is not None, has_kind).with_datasets(datasets)
    return chart.with_props(title=title)


def _roofline_layers(curves, point, title, labels, path=None, path_label=""):
    # Few tooltips and layers on purpose: each encoding object costs time in every widget
    # update (Altair deep-copies layered charts). The path shares the roofs' layer.
    roofs = curves[["device", "intensity", "tflop_per_s"]]
    size = {"width": WIDTH, "height": HEIGHT, **({"title": title} if title else {})}  # as base()
    if path is None:
        lines = _roofs_layer(inline_rows(roofs)).properties(**size)
    else:
        both = pd.concat([roofs.assign(dash="roof"),
                          path[["intensity", "tflop_per_s"]].assign(device=path_label, dash="path")])
        lines = _roofs_and_path_layer(inline_rows(both)).properties(**size)
    # the wide translucent band (size and opacity by "dash") is the path's colour-legend entry
    meta = {} if path is None else {"usermeta": {"explained": {"size": str(path_label),
                                                                "opacity": str(path_label)}}}
    if point is None:
        return alt.layer(lines, **meta)
    has_kind = "kind" in point.columns
    cols = ["intensity", "tflop_per_s", "bound", "label"] + (["kind"] if has_kind else [])
    dot = _point_layer(inline_rows(point[cols]), has_kind)
    if not labels:
        return alt.layer(lines, dot, **meta)
    # a memory-bound point sits on the rising roof: its label goes below and to the right, under
    # the slope, so neighbours along it don't collide (nor the y axis); the others' go up and right
    sides = []
    for on_slope, dy in ((True, 14), (False, -9)):
        rows = point[(point["bound"] == "HBM").to_numpy() == on_slope]
        if not rows.empty:
            sides.append(alt.Chart(inline_rows(rows[cols])).mark_text(align="left", dx=9, dy=dy, fontSize=11).encode(
                x=alt.X("intensity:Q"), y=alt.Y("tflop_per_s:Q"), text=alt.Text("label:N")))
    return alt.layer(lines, dot, *sides, **meta)


@described(
    'Scatter of dense BF16 TFLOP/s per chip against HBM bandwidth per chip in TB/s, one '
    'labelled point per chip, Trainium apart from the chips it is compared with, the shape '
    "giving each figure's source tier.")
def generations_chart(df: pd.DataFrame) -> alt.LayerChart:
    """Dense BF16 TFLOP/s against HBM TB/s, one labelled point per chip.

    ``df`` is ``cores.generations_table()``: columns ``name``, ``short_name`` (label), ``kind``, ``tier``,
    ``bf16_tflop_per_s``, ``hbm_tb_per_s``, ``ridge_bf16``, ``hbm_gib``.
    """
    enc = dict(
        x=alt.X("hbm_tb_per_s:Q", title="HBM bandwidth per chip (TB/s)",
                scale=alt.Scale(domainMin=0, padding=40)),
        y=alt.Y("bf16_tflop_per_s:Q", title="dense BF16 TFLOP/s per chip",
                scale=alt.Scale(domainMin=0, padding=20)),
    )
    pts = base(df, title="Compute against memory bandwidth (shape = source tier)",
               width=560, height=300).mark_point(size=140, filled=True).encode(
        **enc,
        color=alt.Color("kind:N", title=None, scale=alt.Scale(
            domain=["trainium", "comparison"], range=["#e69f00", "#0072b2"]),
            legend=alt.Legend(orient="bottom")),
        shape=alt.Shape("tier:N", title="source tier", legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("name:N"), alt.Tooltip("tier:N", title="source tier"),
                 alt.Tooltip("bf16_tflop_per_s:Q", format=",.0f", title="BF16 TFLOP/s"),
                 alt.Tooltip("hbm_tb_per_s:Q", format=",.2f", title="HBM TB/s"),
                 alt.Tooltip("hbm_gib:Q", format=",.0f", title="HBM GiB"),
                 alt.Tooltip("ridge_bf16:Q", format=",.0f", title="ridge (FLOP/byte)")],
    )
    labels = alt.Chart(df).mark_text(align="center", dy=-14, fontSize=11).encode(**enc, text=alt.Text("short_name:N"))
    return alt.layer(pts, labels)


@described(
    'Block diagram of one NeuronCore: the tensor, vector and scalar engines, the on-chip SBUF '
    'and PSUM memories that feed them, and the HBM beyond.')
def neuroncore_chart(blocks: pd.DataFrame, *, title: str = "One NeuronCore and what feeds it") -> alt.LayerChart:
    """A block diagram from ``views.neuroncore_blocks``: rectangles with multi-line labels."""
    none = alt.Axis(labels=False, ticks=False, domain=False, grid=False, title=None)
    rects = base(blocks, title=title, width=680, height=360).mark_rect(
        stroke="#333", strokeWidth=1, cornerRadius=4, opacity=0.85).encode(
        x=alt.X("x:Q", axis=none, scale=alt.Scale(domain=[0, 100])), x2=alt.X2("x2:Q"),
        y=alt.Y("y:Q", axis=none, scale=alt.Scale(domain=[0, 100])), y2=alt.Y2("y2:Q"),
        color=alt.Color("kind:N", title=None, scale=alt.Scale(
            domain=["engine", "on-chip SRAM", "data movement", "device memory"],
            range=["#e69f00", "#56b4e9", "#bbbbbb", "#0072b2"])),
        tooltip=[alt.Tooltip("block:N"), alt.Tooltip("label:N")],
    )
    text = alt.Chart(blocks).transform_calculate(
        cx="(datum.x + datum.x2) / 2", cy="(datum.y + datum.y2) / 2").mark_text(
        lineBreak="\n", fontSize=10, baseline="middle").encode(
        x=alt.X("cx:Q", axis=none), y=alt.Y("cy:Q", axis=none), text=alt.Text("label:N"))
    return alt.layer(rects, text).configure_view(stroke=None)


@described(
    'Step line of the fraction of the tensor-engine array doing useful work against a matmul '
    'dimension: full at multiples of the array size, dropping just past each multiple, where '
    'a mostly empty extra tile is needed.')
def utilisation_chart(df: pd.DataFrame, *, title: str = "Tensor-engine array utilisation") -> alt.Chart:
    """Utilisation (0-1) against one matmul dimension, from ``roofline.utilisation_curve``.

    Columns ``dim``, ``utilisation``, ``tiles`` and optionally ``case`` (one line each).
    """
    color = alt.Color("case:N", title=None) if "case" in df.columns else alt.ColorValue(PALETTE[0])
    return base(df, title=title).mark_line(interpolate="step-after", point=False).encode(
        x=alt.X("dim:Q", title="dimension size (k, or m and k together)"),
        y=alt.Y("utilisation:Q", title="fraction of the array doing useful work",
                scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        color=color,
        tooltip=[alt.Tooltip("dim:Q"), alt.Tooltip("utilisation:Q", format=".1%"),
                 alt.Tooltip("tiles:Q", title="stationary tiles")],
    )
