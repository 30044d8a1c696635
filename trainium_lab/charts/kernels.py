"""Charts for chapter 08 (inside a NeuronCore). Encodings only: every number comes from
``trainium_lab.kernels`` (timelines, engine busy times, tile plans); times are shown in µs
and rounded to four significant figures before drawing."""

from __future__ import annotations

import functools
import math

import altair as alt
import pandas as pd
from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import (HEIGHT, PALETTE, WIDTH, TemplateLayerChart, base, described,
                                     inline_rows, row_dicts)
from trainium_lab.charts.hardware import _point_layer, _roofs_layer, roofline_chart

__all__ = ["ENGINE_LABELS", "timeline_chart", "engine_busy_chart", "tile_sweep_chart",
           "core_roofline_chart"]

#: display names of the emulator's engine queues, in lane order
ENGINE_LABELS = {"dma_load": "DMA load", "tensor": "tensor", "vector": "vector", "scalar": "scalar",
                 "gpsimd": "GpSimd", "dma_store": "DMA store"}
_KIND_COLORS = alt.Scale(domain=["load", "matmul", "vector", "scalar", "gpsimd", "store"],
                         range=[PALETTE[0], PALETTE[1], PALETTE[4], PALETTE[2], PALETTE[6], PALETTE[3]])


def _sig(x: float, digits: int = 4) -> float:
    """``x`` to ``digits`` significant figures (what a chart can show)."""
    if x == 0 or not math.isfinite(x):
        return 0.0
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def _kind(engine: str, op: str) -> str:
    if engine == "dma_load":
        return "load"
    if engine == "dma_store":
        return "store"
    return "matmul" if engine == "tensor" else engine


def _by_case(chart: alt.Chart, faceted: bool, title: str):
    """One panel per ``case`` (rows, shared time axis) or a single titled chart."""
    if faceted:
        return chart.facet(row=alt.Row("case:N", sort=None, title=None,
                                       header=alt.Header(labelAngle=0, labelAlign="left")),
                           title=title)
    return chart.properties(title=title)


@described(
    'Timeline of a kernel on the emulator: one lane per engine and queue, a bar per operation '
    'from its start to its end in microseconds, coloured by kind of operation; gaps in a lane '
    'are time that engine waits.')
def timeline_chart(timeline: pd.DataFrame, *, title: str = "Which engine does what, when",
                   width: int = WIDTH + 120) -> alt.Chart:
    """Engine lanes against time (µs): one bar per operation of a ``KernelRun.timeline``.

    With a ``case`` column (several runs concatenated) the lanes repeat, one block per case,
    on a shared time axis.
    """
    cols = ["engine", "op", "start_s", "end_s"] + (["case"] if "case" in timeline.columns else [])
    d = timeline[cols].copy()
    d["lane"] = [ENGINE_LABELS[e] for e in d["engine"]]
    d["kind"] = [_kind(e, o) for e, o in zip(d["engine"], d["op"])]
    d["start_us"] = [_sig(v * 1e6) for v in d["start_s"]]
    d["end_us"] = [_sig(v * 1e6) for v in d["end_s"]]
    d = d.drop(columns=["engine", "start_s", "end_s"])
    lanes = [ENGINE_LABELS[e] for e in ENGINE_LABELS if ENGINE_LABELS[e] in set(d["lane"])]
    with debug_mode(False):
        chart = alt.Chart(inline_rows(d), width=width, height=18 * len(lanes)).mark_bar(
            stroke="white", strokeWidth=0.5).encode(
            x=alt.X("start_us:Q", title="time (µs)"), x2=alt.X2("end_us:Q"),
            y=alt.Y("lane:N", sort=lanes, title=None),
            color=alt.Color("kind:N", scale=_KIND_COLORS, title="operation"),
            tooltip=[alt.Tooltip("op:N"), alt.Tooltip("start_us:Q", title="start (µs)"),
                     alt.Tooltip("end_us:Q", title="end (µs)")])
        return _by_case(chart, "case" in d.columns, title)


@described(
    "Horizontal bars of each engine's busy time in microseconds, the busiest engine, which "
    'bounds the kernel, highlighted.')
def engine_busy_chart(table: pd.DataFrame, *, title: str = "Busy time per engine") -> alt.Chart:
    """Horizontal bars of each engine's busy time (µs) from ``KernelRun.engine_table()``;
    the busiest engine is highlighted. With a ``case`` column, one panel per case."""
    cols = ["engine", "busy_s", "ops"] + (["case"] if "case" in table.columns else [])
    d = table[cols].copy()
    d["lane"] = [ENGINE_LABELS[e] for e in d["engine"]]
    d["busy_us"] = [_sig(v * 1e6) for v in d["busy_s"]]
    group = d["case"] if "case" in d.columns else pd.Series(0, index=d.index)
    d["binds"] = [("binds" if v == group_max else "other")
                  for v, group_max in zip(d["busy_s"], d.groupby(group)["busy_s"].transform("max"))]
    d = d.drop(columns=["engine", "busy_s"])
    lanes = list(ENGINE_LABELS.values())
    with debug_mode(False):
        chart = alt.Chart(inline_rows(d), width=WIDTH, height=18 * len(lanes)).mark_bar().encode(
            x=alt.X("busy_us:Q", title="busy time (µs)"),
            y=alt.Y("lane:N", sort=lanes, title=None),
            color=alt.Color("binds:N", scale=alt.Scale(domain=["binds", "other"],
                                                       range=[PALETTE[2], "#bbbbbb"]),
                            title=None),
            tooltip=[alt.Tooltip("lane:N", title="engine"), alt.Tooltip("busy_us:Q", title="busy (µs)"),
                     alt.Tooltip("ops:Q", title="operations")])
        return _by_case(chart, "case" in d.columns, title)


@described(
    'Bar chart of HBM traffic in GiB for each output tile size, coloured by whether the tile '
    'fits in SBUF and PSUM: larger tiles move less data, and only tiles that fit can run.')
def tile_sweep_chart(plans: pd.DataFrame, *, title: str = "HBM traffic against output tile") -> alt.Chart:
    """Bars of HBM traffic (GiB) per output tile, coloured by whether the tile fits SBUF and
    PSUM. ``plans`` has columns ``tile`` (label), ``hbm_gib``, ``intensity`` (FLOP/byte),
    ``fits`` (bool)."""
    d = plans[["tile", "hbm_gib", "intensity", "fits"]].copy()
    d["hbm_gib"] = [_sig(v) for v in d["hbm_gib"]]
    d["intensity"] = [_sig(v) for v in d["intensity"]]
    d["fits"] = ["fits" if f else "does not fit" for f in d["fits"]]
    with debug_mode(False):
        return base(inline_rows(d), title=title).mark_bar().encode(
            x=alt.X("tile:N", sort=None, title="output tile (tile_m × tile_n)"),
            y=alt.Y("hbm_gib:Q", title="HBM traffic (GiB)"),
            color=alt.Color("fits:N", scale=alt.Scale(domain=["fits", "does not fit"],
                                                      range=[PALETTE[0], "#bbbbbb"]), title=None),
            tooltip=[alt.Tooltip("tile:N"), alt.Tooltip("hbm_gib:Q", title="GiB"),
                     alt.Tooltip("intensity:Q", title="FLOP/byte"), alt.Tooltip("fits:N")])


@functools.lru_cache(maxsize=1)
def _core_roofline_template() -> TemplateLayerChart:
    """Chapter 01's roofline (:func:`trainium_lab.charts.hardware.roofline_chart` without
    written labels) with named (empty) data sets, built once: the tile explorer's update only
    swaps the roofs, the point and the title."""
    with debug_mode(False):
        return TemplateLayerChart(layer=[_roofs_layer(alt.NamedData("roofs")),
                                         _point_layer(alt.NamedData("point"), has_kind=False)],
                                  width=WIDTH, height=HEIGHT, datasets={"roofs": [], "point": []}).freeze()


@described(roofline_chart.description)
def core_roofline_chart(curves: pd.DataFrame, point: pd.DataFrame, *,
                        title: str = "One NeuronCore's roofline") -> alt.LayerChart:
    """Rooflines (one core's and its chip's, log-log) with one tiled matmul placed on them:
    :func:`trainium_lab.charts.hardware.roofline_chart` with the point's label left to its
    tooltip, as a template with named data sets, so the tile explorer redraws it by swapping
    the data.

    ``curves`` has columns ``device``, ``intensity``, ``tflop_per_s`` (from
    ``roofline.roofline_curve`` and ``kernels.core_roofline``); ``point`` has ``intensity``,
    ``tflop_per_s``, ``bound`` and ``label``.
    """
    return _core_roofline_template().with_datasets(
        {"roofs": row_dicts(curves, ["device", "intensity", "tflop_per_s"]),
         "point": row_dicts(point, ["intensity", "tflop_per_s", "bound", "label"])}, title=title)
