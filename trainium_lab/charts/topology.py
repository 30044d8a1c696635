"""Charts for chapter 03 (topology and collectives). Encodings only: every number
comes from ``trainium_lab.topology`` or ``trainium_lab.collectives``."""

from __future__ import annotations

import functools
import math

import altair as alt
import numpy as np
import pandas as pd
from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import HEIGHT, PALETTE, WIDTH, TemplateLayerChart, described, inline_rows, row_dicts
from trainium_lab.charts.parallelism import _level_rows

__all__ = ["levels_chart", "ring_step_chart", "size_sweep_chart", "placement_chart"]

_LEVEL_COLORS = alt.Scale(domain=["instance", "ultraserver", "efa"], range=PALETTE[:3])


@described(
    'Horizontal bars on a log scale of bandwidth per chip for each system and level of the '
    "hierarchy, with each figure's scope and direction as its source states them: each level "
    'out is slower than the one inside it.')
def levels_chart(df: pd.DataFrame, *, title: str = "Bandwidth per chip at each level") -> alt.HConcatChart:
    """Horizontal bars (log scale) of per-chip bandwidth for each system and level, with
    each figure's scope and direction as the source gives them in a column beside.

    ``df`` is ``topology.levels_table(...)``: columns ``system``, ``level``, ``gb_per_s``,
    ``scope``, ``direction``.
    """
    d = df[["system", "level", "gb_per_s", "scope", "direction"]].copy()
    d["row"] = _level_rows(d)   # a Trn3 UltraServer's unit is a server, not an instance
    d["caveat"] = [f"{g:,.0f} GB/s · {s} · direction {dr}" for g, s, dr in
                   zip(d["gb_per_s"], d["scope"], d["direction"])]
    height = 22 * len(d)
    low = 10 ** int(np.floor(np.log10(d["gb_per_s"].min() / 2)))
    with debug_mode(False):
        # bars 220 px wide: with the caveat column the chart fits the 944 px output area
        bars = alt.Chart(width=220, height=height).mark_bar().encode(
            x=alt.X("gb_per_s:Q", scale=alt.Scale(type="log", domainMin=low), title="GB/s per chip (log scale)"),
            x2=alt.X2Datum(low),
            y=alt.Y("row:N", sort=None, title=None),
            color=alt.Color("level:N", scale=_LEVEL_COLORS, title="level"),
            tooltip=[alt.Tooltip("system:N"), alt.Tooltip("level:N"),
                     alt.Tooltip("gb_per_s:Q", format=",.0f", title="GB/s"),
                     alt.Tooltip("scope:N"), alt.Tooltip("direction:N")],
        )
        text = alt.Chart(width=300, height=height).mark_text(align="left", fontSize=11, x=0).encode(
            y=alt.Y("row:N", sort=None, axis=None), text=alt.Text("caveat:N"))
        return alt.hconcat(bars, text, title=title, data=inline_rows(d)).resolve_scale(y="shared").configure_view(stroke=None)


@described(
    "Grid of participants by chunks, each cell coloured by how many participants' values its "
    'copy already sums: after n-1 steps of the ring one chunk on each participant holds the '
    'full sum.')
def ring_step_chart(df: pd.DataFrame, *, title: str | list[str] | None = None) -> alt.LayerChart:
    """Grid of participants × chunks coloured by how many participants each held copy sums.

    ``df`` is ``collectives.ring_allreduce_steps(n, step)``. Cells outlined in black
    are what each participant sends in the next step. Built from a cached template sized by
    the cell (``_RING_CELL_PX``), its colour scale spanning 1 … n through an invisible layer,
    so a widget update only swaps the data, whatever n is.
    """
    n = int(df["rank"].max()) + 1
    phase = str(df["phase"].iloc[0])
    # two short lines: a one-line title is wider than this small chart, and a browser's wider
    # font would push its ends out of the static SVG
    title = title or [f"Ring all-reduce, {n} participants", f"next step: {phase}",
                      "outlined: what each sends next"]
    # the axis says "chunk": "chunk 0chunk 1" touched at n = 8, so a chunk is its number alone
    cells = [{"rank": f"rank {r}", "chunk": str(c), "contributions": int(k), "sending": bool(s),
              "stroke": "black" if s else "white", "ink": "white" if k > n / 2 else "black"}
             for r, c, k, s in zip(df["rank"].tolist(), df["chunk"].tolist(),
                                   df["contributions"].tolist(), df["sending"].tolist())]
    chart = _ring_step_template().with_datasets(
        {"cells": cells, "extent": [{"contributions": 1}, {"contributions": n}]})
    return chart.with_props(title=title)


#: a ring grid's cell, px wide and high
_RING_CELL_PX = (40, 28)


@functools.lru_cache(maxsize=1)
def _ring_step_template() -> TemplateLayerChart:
    with debug_mode(False):
        color = alt.Color("contributions:Q", title="summed over", scale=alt.Scale(scheme="blues"),
                          legend=alt.Legend(type="gradient"))
        grid = alt.Chart(alt.NamedData("cells")).mark_rect(strokeWidth=3).encode(
            x=alt.X("chunk:N", sort=None, title="chunk of the buffer", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("rank:N", sort=None, title="participant"),
            color=color,
            stroke=alt.Stroke("stroke:N", scale=None),
            tooltip=[alt.Tooltip("rank:N"), alt.Tooltip("chunk:N"),
                     alt.Tooltip("contributions:Q", title="participants summed"),
                     alt.Tooltip("sending:N", title="sent next step")],
        )
        # the colour scale runs from 1 to n (the extent's two rows), also before any cell sums n;
        # drawn first, under the cells, so that it never takes their tooltips
        extent = alt.Chart(alt.NamedData("extent")).mark_rect(opacity=0, aria=False).encode(color=color)
        text = alt.Chart(alt.NamedData("cells")).mark_text(fontSize=11).encode(
            x=alt.X("chunk:N", sort=None), y=alt.Y("rank:N", sort=None),
            text=alt.Text("contributions:Q"), fill=alt.Fill("ink:N", scale=None),
        )
        chart = TemplateLayerChart(layer=[extent, grid, text], datasets={"cells": [], "extent": []},
                                   width=alt.Step(_RING_CELL_PX[0]), height=alt.Step(_RING_CELL_PX[1]))
    return chart.freeze()


@described(
    "Log-log lines of a collective's time against the message size, one per series: small "
    'messages are bound by latency and flat, large ones by bandwidth and rise in proportion '
    'to size.')
def size_sweep_chart(df: pd.DataFrame, crossovers: pd.DataFrame | None = None, *,
                     title: str = "All-reduce time against message size") -> alt.LayerChart:
    """Log-log time against size, one line per ``series``, with optional crossover rules.

    ``df`` has columns ``size_bytes``, ``time_ms`` and ``series``; ``crossovers`` has
    ``size_bytes`` and ``series`` (where latency and bandwidth terms are equal). Built from a
    cached template (the rules' layers are there, empty, when there is no crossover), so a
    widget update only swaps the data.
    """
    marks = [] if crossovers is None or crossovers.empty else row_dicts(crossovers, ["size_bytes", "series"])
    chart = _size_sweep_template().with_datasets(
        {"lines": row_dicts(df, ["size_bytes", "time_ms", "series"]), "crossovers": marks})
    return chart.with_props(title=title)


@functools.lru_cache(maxsize=1)
def _size_sweep_template() -> TemplateLayerChart:
    with debug_mode(False):
        lines = alt.Chart(alt.NamedData("lines")).mark_line(
            strokeWidth=2).encode(
            x=alt.X("size_bytes:Q", scale=alt.Scale(type="log"), title="message size (bytes, log)",
                    axis=alt.Axis(format="~s")),
            y=alt.Y("time_ms:Q", scale=alt.Scale(type="log"), title="time (ms, log)"),
            color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=1)),
            tooltip=[alt.Tooltip("series:N"), alt.Tooltip("size_bytes:Q", format=",.3s", title="bytes"),
                     alt.Tooltip("time_ms:Q", format=",.4g", title="ms")],
        )
        rules = alt.Chart(alt.NamedData("crossovers")).mark_rule(
            strokeDash=[2, 2], color="#666").encode(
            x=alt.X("size_bytes:Q"),
            tooltip=[alt.Tooltip("series:N", title="crossover"),
                     alt.Tooltip("size_bytes:Q", format=",.3s", title="bytes")])
        # each rule named at the top of the plot: where latency and bandwidth terms are equal
        label = alt.Chart(alt.NamedData("crossovers")).mark_text(
            align="left", baseline="top", dx=3, dy=2, fontSize=10, color="#555555").encode(
            x=alt.X("size_bytes:Q"), y=alt.YValue(0), text=alt.TextValue("latency = bandwidth term"))
        chart = TemplateLayerChart(layer=[lines, rules, label], width=WIDTH, height=HEIGHT,
                                   datasets={"lines": [], "crossovers": []})
    return chart.freeze()


#: a placement map's cells are this many px square; its rank labels are at most this many px high,
#: and no smaller than the last figure (below it a cell's label would be unreadable)
_CELL_PX, _RANK_PX, _MIN_RANK_PX = 18, 8, 5
#: px kept clear between a rank label and each side of its cell
_RANK_PAD_PX = 1


def _rank_label_layout(largest_rank: int) -> tuple[float, int]:
    """Font size (px) of a placement map's rank labels, and every how many cells of a row one is
    shown, so that the widest label (``largest_rank``) fits inside its cell(s).

    The font shrinks from 8 px, in half-pixel steps, until the label fits one cell with a pixel
    clear on each side (ranks of four and five digits); only a label too wide even at 5 px is
    shown on every k-th cell, over k cells whose own labels are left out.

    >>> _rank_label_layout(255), _rank_label_layout(1023), _rank_label_layout(16383)
    ((8.0, 1), (6.0, 1), (5.0, 1))
    """
    from trainium_lab.charts.base import text_width_px

    largest_rank = int(largest_rank)
    if largest_rank < 0:
        raise ValueError(f"largest_rank must be >= 0; got {largest_rank}")
    room = _CELL_PX - 2 * _RANK_PAD_PX
    per_px = text_width_px(str(largest_rank), 1.0)
    size = min(float(_RANK_PX), math.floor(2 * room / per_px) / 2)
    if size >= _MIN_RANK_PX:
        return size, 1
    size = float(_MIN_RANK_PX)
    return size, math.ceil((per_px * size + 2 * _RANK_PAD_PX) / _CELL_PX)


@described(
    'One small heat map per instance, each cell a chip, coloured by the parallel group it '
    'belongs to: it shows whether a tensor-parallel group stays inside the fast links.')
def placement_chart(df: pd.DataFrame, *, kind: str = "tp", highlight: int = 0, columns: int = 4,
                    title: str | list[str] | None = None) -> alt.LayerChart:
    """One small heatmap per instance: each cell a chip, coloured by its ``kind`` group.

    ``df`` is ``views.chip_map(placement, kind, highlight)``: columns ``label`` (instance),
    ``row``, ``col``, ``colour`` ("group g" or "mixed"), ``first_rank``, ``last_rank``,
    ``n_groups``, ``highlighted``. Chips running a rank of group ``highlight`` are
    outlined in black; each cell shows the chip's first rank, in a font small enough for the
    largest rank to fit its cell (:func:`_rank_label_layout`; every k-th cell of a row only when
    even the smallest font is too wide). Up to ten groups get the course's ten
    categorical colours; beyond ten, a sequential scale by group number (one colour per group,
    a gradient legend: a symbol legend would need an entry per group). Instances are laid out
    ``columns`` to a row (one chart, no facets), from a template cached by its colour scale
    and label size: the map's size comes from its data (a fixed step per cell), so a widget update
    only swaps the data unless the groups coloured or the labels' size change.
    """
    side = int(df["col"].max()) + 1
    n_rows = int(df["row"].max()) + 1
    labels = list(dict.fromkeys(df["label"]))
    where = {lab: divmod(i, columns) for i, lab in enumerate(labels)}  # label -> (block row, block col)
    # the widest rank label decides the labels' font size (and, past the smallest, how many
    # cells of a row each label needs)
    first = df["first_rank"].to_numpy()
    font_px, every = _rank_label_layout(int(first.max()))
    cols, rows_ = df["col"].to_numpy(), df["row"].to_numpy()
    colour = df["colour"].tolist()
    cells = [{"x": where[lab][1] * (side + 1) + c, "y": where[lab][0] * (n_rows + 2) + r + 1,
              "colour": co, "first_rank": f, "rank_label": str(f) if c % every == 0 else "",
              "ranks": f"{f}–{last}", "label": lab, "n_groups": g, "outline": "black" if h else "white",
              "group_no": -1 if co == "mixed" else int(co.split()[-1])}
             for lab, c, r, co, f, last, g, h in zip(
                 df["label"].tolist(), cols.tolist(), rows_.tolist(), colour, first.tolist(),
                 df["last_rank"].tolist(), df["n_groups"].tolist(), df["highlighted"].tolist())]
    heads = [{"x": where[lab][1] * (side + 1), "y": where[lab][0] * (n_rows + 2), "label": lab}
             for lab in labels]
    # the map's columns and rows, gaps between instances too: the scales' domains (and so, a
    # fixed step per cell, the chart's size) are read from the data, not written in the spec
    width_cells = min(columns, len(labels)) * (side + 1) - 1
    height_cells = (-(-len(labels) // columns)) * (n_rows + 2) - 1
    for h in heads:
        h["width_cells"], h["height_cells"] = width_cells, height_cells
    cells_say = ("each cell shows its chip's first rank" if every == 1 else
                 f"every {every}{'nd' if every == 2 else 'rd' if every == 3 else 'th'} cell of a row "
                 "shows its chip's first rank")
    title = title or [f"Rank-to-chip map, coloured by {kind.upper()} group",
                      f"outlined: {kind.upper()} group {highlight}; {cells_say}"]
    present = set(colour)
    mixed = "mixed" in present
    domain = sorted(present - {"mixed"}, key=lambda s: int(s.split()[-1]))
    if len(domain) <= len(PALETTE):
        colours = PALETTE[:len(domain)]
        if mixed:
            domain, colours = domain + ["mixed"], colours + ["#d9d9d9"]
        scale = (tuple(domain), tuple(colours))
    else:  # one colour per group on a sequential scale, from group 0 to the last
        scale = (max(r["group_no"] for r in cells), mixed)
    chart = _placement_template(kind, scale, font_px).with_datasets({"cells": cells, "heads": heads})
    return chart.with_props(title=title)


@functools.lru_cache(maxsize=64)
def _placement_template(kind: str, scale: tuple, font_px: float = _RANK_PX) -> "TemplateLayerChart":
    # every column (row) from 0 to the map's width (height) in cells, as the heads' data says
    x = alt.X("x:O", axis=None, scale=alt.Scale(domain=alt.ExprRef(
        expr="sequence(0, data('heads')[0].width_cells)")))
    y = alt.Y("y:O", axis=None, scale=alt.Scale(domain=alt.ExprRef(
        expr="sequence(0, data('heads')[0].height_cells)")))
    stroke = alt.Stroke("outline:N", scale=None)
    tooltip = [alt.Tooltip("label:N", title="instance"), alt.Tooltip("ranks:N", title="ranks"),
               alt.Tooltip("colour:N", title=f"{kind} group"),
               alt.Tooltip("n_groups:Q", title=f"{kind} groups on chip")]
    with debug_mode(False):
        if isinstance(scale[0], tuple):  # categories: at most ten groups (and "mixed")
            domain, colours = scale
            cells = [alt.Chart(alt.NamedData("cells")).mark_rect(strokeWidth=2).encode(
                x=x, y=y, stroke=stroke, tooltip=tooltip,
                color=alt.Color("colour:N", title=f"{kind.upper()} group",
                                scale=alt.Scale(domain=list(domain), range=list(colours)),
                                legend=alt.Legend(columns=2)))]
        else:
            last, mixed = scale
            cells = [alt.Chart(alt.NamedData("cells")).transform_filter("datum.group_no >= 0").mark_rect(
                strokeWidth=2).encode(
                x=x, y=y, stroke=stroke, tooltip=tooltip,
                color=alt.Color("group_no:Q", title=f"{kind.upper()} group",
                                scale=alt.Scale(scheme={"name": "viridis", "extent": [0.45, 1.0]}, domain=[0, last]),
                                legend=alt.Legend(format="d", gradientLength=120)))]
            if mixed:
                cells.append(alt.Chart(alt.NamedData("cells")).transform_filter("datum.group_no < 0").mark_rect(
                    strokeWidth=2).encode(
                    x=x, y=y, stroke=stroke, tooltip=tooltip,
                    fill=alt.Fill("colour:N", title=None, scale=alt.Scale(domain=["mixed"], range=["#d9d9d9"]))))
        text = alt.Chart(alt.NamedData("cells")).mark_text(fontSize=font_px, color="black").encode(
            x=x, y=y, text=alt.Text("rank_label:N"))
        head = alt.Chart(alt.NamedData("heads")).mark_text(fontSize=10, align="left", dx=-8,
                                                           fontWeight="bold").encode(
            x=x, y=y, text=alt.Text("label:N"))
        return TemplateLayerChart(layer=[*cells, text, head],
                                  width=alt.Step(_CELL_PX), height=alt.Step(_CELL_PX),
                                  datasets={"cells": [], "heads": []}).freeze()




#: font size (px) of the DP threshold chart's bar labels and of its marker's label
_DP_LABEL_PX = 11


@functools.lru_cache(maxsize=1)
def _dp_threshold_template() -> TemplateLayerChart:
    # the axis runs between the decades around the data, which the rows carry (``low``,
    # ``high``), so that the spec stays the same from one update to the next
    x = alt.X("tokens_per_chip:Q", scale=alt.Scale(type="log", domain=alt.ExprRef(
        expr="[data('rows')[0].low, data('rows')[0].high]")), stack=None,
              title="tokens per chip per step (log scale)")
    y = alt.Y("row:N", sort=None, title=None, axis=alt.Axis(labelLimit=340))
    with debug_mode(False):
        bars = alt.Chart(alt.NamedData("rows")).mark_bar().encode(
            x=x, x2=alt.X2Value(0), y=y,  # from the left edge: the axis starts at ``low``
            color=alt.Color("level:N", scale=_LEVEL_COLORS, title="level crossed"),
            tooltip=[alt.Tooltip("system:N"), alt.Tooltip("level:N"), alt.Tooltip("dtype:N"),
                     alt.Tooltip("tokens_per_chip:Q", format=",.0f", title="C/W (tokens per chip)")])
        # each bar's value sits past its end, or past the dashed marker when the marker would
        # run through it (``label_at``)
        text = alt.Chart(alt.NamedData("rows")).mark_text(align="left", dx=4, fontSize=_DP_LABEL_PX).encode(
            x=alt.X("label_at:Q"), y=y, text=alt.Text("text:N"))
        rule = alt.Chart(alt.NamedData("marker")).mark_rule(
            color="black", strokeDash=[4, 3], strokeWidth=2).encode(
            x=alt.X("tokens_per_chip:Q"),
            tooltip=[alt.Tooltip("what:N"), alt.Tooltip("tokens_per_chip:Q", format=",.0f")])
        # the marker says what it is, above the plot, where no bar label is
        label = alt.Chart(alt.NamedData("marker")).mark_text(
            baseline="bottom", dy=-3, fontSize=_DP_LABEL_PX).encode(
            x=alt.X("label_x:Q"), y=alt.YValue(0), text=alt.Text("label:N"))
        chart = TemplateLayerChart(layer=[bars, text, rule, label], width=WIDTH,
                                   height=alt.Step(24), datasets={"rows": [], "marker": []})
    return chart.freeze()


@described(
    'Horizontal bars on a log scale of the data-parallel threshold C/W, the tokens per chip a '
    'step needs to hide its all-reduce, per system and level, with an optional dashed rule at '
    'a given batch per chip.')
def dp_threshold_chart(df: pd.DataFrame, tokens_per_chip: float | None = None, *,
                       title: str = "Tokens per chip below which DP is communication-bound"
                       ) -> alt.LayerChart:
    """Horizontal bars (log scale) of the data-parallel threshold C/W per system and level,
    with an optional dashed rule at a batch per chip, labelled above the plot.

    ``df`` is ``collectives.dp_comm_bound_table(...)``: columns ``system``, ``level``,
    ``dtype``, ``tokens_per_chip``. A batch to the left of a bar is communication-bound
    on that level. A bar's value label moves past the rule when the rule would cross it.
    Built from a cached template, so a widget update only swaps the data.
    """
    from trainium_lab.charts.base import rule_crosses_label, text_width_px

    rows = [{"row": f"{label} ({dt})", "system": s, "level": lv, "dtype": dt,
             "tokens_per_chip": float(t), "text": f"{t:,.0f}"}
            for label, s, lv, dt, t in zip(_level_rows(df), df["system"], df["level"], df["dtype"],
                                           df["tokens_per_chip"])]
    values = [r["tokens_per_chip"] for r in rows] + ([float(tokens_per_chip)] if tokens_per_chip else [])
    low = 10.0 ** math.floor(math.log10(max(min(values), 1.0) / 2))
    high = 10.0 ** math.ceil(math.log10(max(values) * 3))
    px = lambda v: WIDTH * math.log10(v / low) / math.log10(high / low)  # noqa: E731
    marker = []
    for r in rows:
        r["label_at"] = r["tokens_per_chip"]
        if tokens_per_chip is not None:
            if rule_crosses_label(px(r["tokens_per_chip"]), r["text"], px(tokens_per_chip), _DP_LABEL_PX):
                r["label_at"] = max(float(tokens_per_chip), r["tokens_per_chip"])
    if tokens_per_chip is not None:
        words = f"your batch: {tokens_per_chip:,.0f}"
        half = text_width_px(words, _DP_LABEL_PX) / 2
        at = min(max(px(tokens_per_chip), half), WIDTH - half)  # centred on the rule, inside the plot
        marker = [{"tokens_per_chip": float(tokens_per_chip), "what": "your batch per chip", "label": words,
                   "label_x": low * (high / low) ** (at / WIDTH)}]
    for r in rows:
        r["low"], r["high"] = low, high
    return (_dp_threshold_template().with_datasets({"rows": rows, "marker": marker})).with_props(title=title)


__all__ += ["dp_threshold_chart"]


#: launch, NeuronLink steps, EFA-bounded steps (in the order the rows give the parts)
_FLOOR_PART_RANGE = [PALETTE[9], PALETTE[0], PALETTE[2]]


@described(
    'Horizontal stacked bars, one per latency floor and algorithm, of the fitted launch plus '
    "steps times AWS's documented per-step latency, with a black tick at the measured floor: "
    'where the tick sits far from the bar end, that algorithm does not explain the floor.')
def latency_floor_chart(df: pd.DataFrame, *,
                        title: str = "Latency floors: launch + steps × AWS's per-step latency against the measurement"
                        ) -> alt.LayerChart:
    """Stacked bars of launch + NeuronLink steps × α + EFA steps × α_EFA per floor and
    algorithm, with a tick at the measured floor.

    ``df`` is ``views.reality.latency_floor_parts()``: columns ``bar``, ``part``, ``us``,
    ``steps``, ``measured_us``, ``implied_us_per_step``.
    """
    d = df[["bar", "part", "us", "steps", "measured_us", "implied_us_per_step"]].copy()
    parts = list(dict.fromkeys(d["part"]))
    d["order"] = d["part"].map({p: i for i, p in enumerate(parts)})
    y = alt.Y("bar:N", sort=None, title=None, axis=alt.Axis(labelLimit=360))
    with debug_mode(False):
        bars = alt.Chart().mark_bar().encode(
            x=alt.X("sum(us):Q", title="µs (linear)"), y=y,
            color=alt.Color("part:N", scale=alt.Scale(domain=parts, range=_FLOOR_PART_RANGE[:len(parts)]),
                            title="part (black tick: measured)"),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("bar:N", title="floor"), alt.Tooltip("part:N"), alt.Tooltip("steps:Q"),
                     alt.Tooltip("us:Q", format=",.0f", title="µs")])
        tick = alt.Chart().mark_tick(color="black", thickness=3, size=20).encode(
            x=alt.X("measured_us:Q"), y=y,
            tooltip=[alt.Tooltip("bar:N", title="floor"), alt.Tooltip("measured_us:Q", format=",.0f", title="measured µs"),
                     alt.Tooltip("implied_us_per_step:Q", title="implied µs per step")])
        # 400 px of bars beside 360 px of labels and the legend fit the 944 px output area
        return alt.layer(bars, tick, data=inline_rows(d), title=title, width=WIDTH - 60,
                         height=alt.Step(26))


__all__ += ["latency_floor_chart"]
