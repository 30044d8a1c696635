"""Pictures for chapter 05: the tensor-parallel split of an MLP and of an attention block,
the pipeline schedule as a timeline with its bubble, and the C/W thresholds by level.

The split diagrams are drawings (the geometry lives here, not in a model); the timeline and
the threshold charts only encode what :mod:`trainium_lab.parallelism` computed.
"""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd
from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import PALETTE, WIDTH, TemplateLayerChart, described, text_width_px
from trainium_lab.charts.layouts import PAD

__all__ = ["TP_BLOCKS", "tp_split_chart", "pipeline_schedule_chart", "level_ratio_chart",
           "tp_limit_chart"]

#: the blocks :func:`tp_split_chart` draws
TP_BLOCKS = ("mlp", "attention")

_REPLICATED = "#bbbbbb"
_ALLREDUCE = "#a40000"
_PHASES = ["forward", "backward", "bubble (idle)"]
_PHASE_COLOURS = [PALETTE[0], PALETTE[1], "#e6e6e6"]


# --------------------------------------------------------------------- the TP split


def _block_specs(block: str, tp: int) -> tuple[list[dict], str, str]:
    """Shapes (drawing units), in order, for one block: width, height, how it is split, caption."""
    h, f, b = 1.0, 2.4, 0.55   # hidden size, MLP width (schematic: Llama's is 3.5h) and tokens
    x_in = dict(w=h, hgt=b, split=None, cap="X  (B × h)\ncopied on\nevery rank")
    partial_sums = dict(w=h, hgt=b, split="stack", cap="partial sums Z_r\n(B × h),\none per rank")
    z_out = dict(w=h, hgt=b, split=None, cap="Z = Σ Z_r  (B × h)\non every rank")

    def column_then_row(*column_parallel: dict, w_rows: dict) -> list[dict]:
        """Both blocks: X · (the column-parallel part, local to each rank) · ``w_rows`` (split
        by rows) = one partial sum per rank, all-reduced into Z."""
        return [x_in, dict(op="·"), *column_parallel, dict(op="·"), w_rows,
                dict(op="="), partial_sums, dict(op="all-reduce"), z_out]

    if block == "mlp":
        shapes = column_then_row(
            dict(w=f, hgt=h, split="cols", cap="W₁  (h × f)\nsplit by columns:\ncolumn-parallel"),
            dict(op="="),
            dict(w=f, hgt=b, split="cols", cap="GeLU(X W₁)  (B × f)\nrank r computes its\nf/t columns: no\ncommunication"),
            w_rows=dict(w=h, hgt=f, split="rows", cap="W₂  (f × h)\nsplit by rows:\nrow-parallel"))
        title = f"Tensor-parallel MLP over t = {tp} ranks: column- then row-parallel, one all-reduce"
        sub = ("Forward: one all-reduce of B × h at the end (Megatron's g); backward: one at the "
               "start (f). SwiGLU splits its gate like W₁. Not to scale.")
    else:
        shapes = column_then_row(
            dict(w=2.2, hgt=h, split="cols", cap="W_Q, W_K, W_V\nsplit by heads:\ncolumn-parallel"),
            dict(op="="),
            dict(w=2.2, hgt=b, split="cols", cap="Q, K, V: a/t heads\nper rank; attention\nper head: no\ncommunication"),
            dict(op="→"),
            dict(w=h, hgt=b, split="cols", cap="heads' outputs\n(B × h): rank r\nholds h/t of it"),
            w_rows=dict(w=h, hgt=h, split="rows", cap="W_O  (h × h)\nsplit by rows:\nrow-parallel"))
        title = f"Tensor-parallel attention over t = {tp} ranks: heads split, one all-reduce"
        sub = ("Each rank owns a/t query heads (and their K/V heads; with GQA a KV head is shared "
               "or replicated). Not to scale.")
    return shapes, title, sub


_CAPTION_PX, _OP_PX, _ALLREDUCE_PX = 10, 18, 11
#: px kept free between two neighbouring captions
_CAPTION_GAP_PX = 10


def _split_layout(shapes: list[dict], width: float) -> tuple[list[dict], float]:
    """Place the drawings along x, in px of the plot, so that no two captions overlap.

    Left to right, each drawing or operator starts ``gap`` drawing units after the previous
    one; a drawing moves further right if its caption (centred under it, measured in the chart
    font) would otherwise touch the previous caption. Operators sit midway between their
    neighbours. The drawing scale ``k`` (px per drawing unit) is the largest that fits
    ``width`` (bisection: the total grows with ``k``). Returns one dict per shape (``x0``,
    ``x1``: the drawn extent in px) and ``k``.
    """
    gap, fan = 0.28, 0.09

    def body_px(s: dict, k: float) -> float:
        if "op" not in s:
            return (s["w"] + (fan * (_TP_FOR_LAYOUT - 1) if s["split"] == "stack" else 0.0)) * k
        if s["op"] == "all-reduce":
            return max(1.2 * k, text_width_px("all-reduce", _ALLREDUCE_PX, bold=True) + 8)
        return max(0.4 * k, text_width_px(s["op"], _OP_PX, bold=True) + 8)

    def place(k: float) -> list[dict]:
        out, x, last_cap_right = [], 0.0, 0.0
        for s in shapes:
            w = body_px(s, k)
            if "op" not in s:
                half_cap = text_width_px(s["cap"], _CAPTION_PX) / 2
                centre = max(x + w / 2, last_cap_right + _CAPTION_GAP_PX + half_cap, half_cap)
                x = centre - w / 2
                last_cap_right = centre + half_cap
            out.append({"shape": s, "x0": x, "x1": x + w})
            x += w + gap * k
        for i, slot in enumerate(out):  # operators midway between their neighbours
            if "op" in slot["shape"] and 0 < i < len(out) - 1:
                w = slot["x1"] - slot["x0"]
                mid = (out[i - 1]["x1"] + out[i + 1]["x0"]) / 2
                slot["x0"], slot["x1"] = mid - w / 2, mid + w / 2
        return out

    def right(k: float) -> float:
        slots = place(k)
        last = slots[-1]
        half_cap = text_width_px(last["shape"].get("cap", ""), _CAPTION_PX) / 2
        return max(last["x1"], (last["x0"] + last["x1"]) / 2 + half_cap)

    lo, hi = 1.0, 400.0
    if right(lo) > width:
        raise ValueError(f"width must leave room for the captions; got {width!r}")
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if right(mid) <= width else (lo, mid)
    return place(lo), lo


#: the fan of partial sums is drawn for this many ranks at most (the chart's tp range)
_TP_FOR_LAYOUT = 8


@described(
    'Diagram of a Megatron-LM tensor-parallel block: which slice of each weight every rank '
    'holds and computes, column-parallel then row-parallel, and the all-reduce that joins '
    'their outputs.')
def tp_split_chart(block: str = "mlp", tp: int = 4, *, width: int = 700) -> alt.LayerChart:
    """What each of ``tp`` ranks holds and computes in a Megatron-LM tensor-parallel block.

    ``block`` is ``"mlp"`` (first weight split by columns, second by rows, one all-reduce of
    the partial sums) or ``"attention"`` (Q/K/V projections split by heads, attention local
    to each head, output projection split by rows, one all-reduce). Shards are coloured by
    rank; grey is replicated; the red arrow is the only communication of the pass. Each
    drawing gets a slot at least as wide as its caption (measured in the chart font), so no
    two captions overlap.

    References: Shoeybi et al. 2019, arXiv:1909.08053, Figure 3.
    """
    if block not in TP_BLOCKS:
        raise ValueError(f"block must be one of {TP_BLOCKS}; got {block!r}")
    if isinstance(tp, bool) or not isinstance(tp, int) or not 1 <= tp <= _TP_FOR_LAYOUT:
        raise ValueError(f"tp must be an integer in [1, {_TP_FOR_LAYOUT}] for the drawing; got {tp!r}")
    if isinstance(width, bool) or not isinstance(width, int) or not 500 <= width <= 4000:
        raise ValueError(f"width must be an integer number of px in [500, 4000]; got {width!r}")
    shapes, title, subtitle = _block_specs(block, tp)
    laid_out, k = _split_layout(shapes, width)
    rects, texts, arrows = [], [], []
    ranks = [f"rank {r}" for r in range(tp)]
    for slot in laid_out:
        s, mid = slot["shape"], (slot["x0"] + slot["x1"]) / 2
        if "op" in s:
            if s["op"] == "all-reduce":
                arrows.append({"x": slot["x0"] + 0.05 * k, "x2": slot["x1"] - 0.05 * k, "y": 0.0})
                texts.append({"x": mid, "y": 0.42, "text": "all-reduce", "kind": "allreduce"})
                texts.append({"x": mid, "y": -0.42, "text": "(sum)", "kind": "allreduce"})
            else:
                texts.append({"x": mid, "y": 0.0, "text": s["op"], "kind": "op"})
            continue
        hgt, split = s["hgt"], s["split"]
        w = s["w"] * k
        x = slot["x0"]
        top, bottom = hgt / 2, -hgt / 2
        if split is None:
            rects.append({"x": x, "x2": x + w, "y": bottom, "y2": top, "who": "replicated"})
        elif split == "cols":
            for r in range(tp):
                rects.append({"x": x + w * r / tp, "x2": x + w * (r + 1) / tp, "y": bottom, "y2": top,
                              "who": ranks[r]})
        elif split == "rows":
            for r in range(tp):
                rects.append({"x": x, "x2": x + w, "y": top - hgt * (r + 1) / tp, "y2": top - hgt * r / tp,
                              "who": ranks[r]})
        else:  # one full-size partial result per rank, fanned out (centred for tp ranks)
            step = 0.09
            x += step * k * (_TP_FOR_LAYOUT - tp) / 2
            for r in reversed(range(tp)):
                dx, dy = step * k * r, -step * r
                rects.append({"x": x + dx, "x2": x + w + dx, "y": bottom + dy, "y2": top + dy,
                              "who": ranks[r]})
        texts.append({"x": mid, "y": -1.32, "text": s["cap"], "kind": "caption"})
    for item in rects + arrows + texts:  # the spec carries px rounded to what a chart shows
        for key in ("x", "x2"):
            if key in item:
                item[key] = round(item[key], 2)
    domain = ["replicated"] + ranks
    colours = [_REPLICATED] + [PALETTE[r % len(PALETTE)] for r in range(tp)]
    xs = alt.Scale(domain=[0, width], nice=False, zero=False)  # x in px of the plot
    ys = alt.Scale(domain=[-2.2, 1.35], nice=False, zero=False)
    none = dict(axis=None)
    with debug_mode(False):
        boxes = alt.Chart(pd.DataFrame(rects)).mark_rect(stroke="white", strokeWidth=1).encode(
            x=alt.X("x:Q", scale=xs, **none), x2=alt.X2("x2:Q"),
            y=alt.Y("y:Q", scale=ys, **none), y2=alt.Y2("y2:Q"),
            color=alt.Color("who:N", scale=alt.Scale(domain=domain, range=colours), title="held by",
                            legend=alt.Legend(orient="right")),
            tooltip=[alt.Tooltip("who:N", title="held by")])
        arrow = alt.Chart(pd.DataFrame(arrows)).mark_rule(color=_ALLREDUCE, strokeWidth=3).encode(
            x=alt.X("x:Q", scale=xs, **none), x2=alt.X2("x2:Q"), y=alt.Y("y:Q", scale=ys, **none))
        head = alt.Chart(pd.DataFrame([{"x": a["x2"], "y": a["y"]} for a in arrows])).mark_point(
            shape="triangle-right", size=120, filled=True, color=_ALLREDUCE, opacity=1).encode(
            x=alt.X("x:Q", scale=xs, **none), y=alt.Y("y:Q", scale=ys, **none))
        t = pd.DataFrame(texts)
        cap = alt.Chart(t[t.kind == "caption"]).mark_text(
            baseline="top", fontSize=10, lineBreak="\n", lineHeight=12).encode(
            x=alt.X("x:Q", scale=xs, **none), y=alt.Y("y:Q", scale=ys, **none), text=alt.Text("text:N"))
        ops = alt.Chart(t[t.kind == "op"]).mark_text(fontSize=18, fontWeight="bold").encode(
            x=alt.X("x:Q", scale=xs, **none), y=alt.Y("y:Q", scale=ys, **none), text=alt.Text("text:N"))
        ar = alt.Chart(t[t.kind == "allreduce"]).mark_text(fontSize=11, fontWeight="bold",
                                                           color=_ALLREDUCE).encode(
            x=alt.X("x:Q", scale=xs, **none), y=alt.Y("y:Q", scale=ys, **none), text=alt.Text("text:N"))
        return alt.layer(boxes, arrow, head, cap, ops, ar, width=width, height=200, padding=PAD).properties(
            title=alt.TitleParams(title, subtitle=subtitle, anchor="start")
        ).configure_view(stroke=None)


# --------------------------------------------------------------------- the pipeline timeline




@functools.lru_cache(maxsize=8)
def _schedule_template(title: str, subtitle: str, width: int) -> TemplateLayerChart:
    x = alt.X("start:Q", title="time (units of one forward pass)", scale=alt.Scale(nice=False))
    y = alt.Y("stage_label:N", title=None, sort=alt.EncodingSortField("stage", order="ascending"))
    bars = alt.Chart(alt.NamedData("passes")).mark_bar(stroke="white", strokeWidth=0.5).encode(
        x=x, x2=alt.X2("end:Q"), y=y,
        color=alt.Color("phase:N", scale=alt.Scale(domain=_PHASES, range=_PHASE_COLOURS), title=None,
                        legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("stage_label:N", title="stage"), alt.Tooltip("phase:N"),
                 alt.Tooltip("micro_batch:N", title="micro-batch"),
                 alt.Tooltip("start:Q", format=",.2f"), alt.Tooltip("end:Q", format=",.2f")])
    labels = alt.Chart(alt.NamedData("labels")).mark_text(fontSize=9, color="white").encode(
        x=alt.X("mid:Q"), y=y, text=alt.Text("micro_batch:N"))
    return TemplateLayerChart(layer=[bars, labels], datasets={"passes": [], "labels": []},
                              title=alt.TitleParams(title, subtitle=subtitle, anchor="start"),
                              width=width, height=alt.Step(22), padding=PAD).freeze()


@described(
    "Pipeline timeline: one row per stage, a bar per micro-batch's forward pass (blue) and "
    'backward pass (orange), and the idle gaps, the bubble, in grey at the start and end.')
def pipeline_schedule_chart(ops: pd.DataFrame, idle: pd.DataFrame, *,
                            title: str = "Pipeline schedule: each stage's passes over time",
                            subtitle: str = "grey: the bubble, when a stage waits", width: int = WIDTH,
                            label_limit: int = 160) -> alt.LayerChart:
    """A timeline: one row per stage, a bar per forward (blue) and backward (orange) pass,
    the idle gaps (the bubble) in grey; micro-batches numbered from 1 while there are at most
    ``label_limit`` passes.

    ``ops`` and ``idle`` are :class:`trainium_lab.parallelism.PipelineSchedule`'s tables
    (stages and micro-batches counted from 0 there).
    """
    # plain lists, not DataFrames: a widget redraws this for up to ~1,500 passes in a few ms
    stage, phase, mb = ops["stage"].tolist(), ops["phase"].tolist(), ops["micro_batch"].tolist()
    start, end = ops["start_s"].tolist(), ops["end_s"].tolist()
    passes = [{"stage": s, "stage_label": f"stage {s + 1}", "phase": ph, "micro_batch": str(i + 1),
               "start": round(a, 6), "end": round(b, 6)}
              for s, ph, i, a, b in zip(stage, phase, mb, start, end)]
    gaps = [{"stage": s, "stage_label": f"stage {s + 1}", "phase": "bubble (idle)", "micro_batch": "",
             "start": round(a, 6), "end": round(b, 6)}
            for s, a, b in zip(idle["stage"].tolist(), idle["start_s"].tolist(), idle["end_s"].tolist())]
    labels = [] if len(passes) > label_limit else [
        {"stage": r["stage"], "stage_label": r["stage_label"], "micro_batch": r["micro_batch"],
         "mid": round((r["start"] + r["end"]) / 2, 6)} for r in passes]
    return _schedule_template(title, subtitle, width).with_datasets({"passes": gaps + passes,
                                                                     "labels": labels})


# --------------------------------------------------------------------- C/W by level


def _level_rows(df: pd.DataFrame) -> list[str]:
    """Row labels "system · level" with each level in its system's own words: a Trn3
    UltraServer's 4-chip (Gen2) or 16-chip (Gen1) unit is a **server** (``data/systems.csv``,
    ``n_instances`` note), not an EC2 instance.

    >>> _level_rows(pd.DataFrame({"system": ["trn3-gen2-ultraserver", "trn2-ultraserver"],
    ...                          "level": ["instance", "instance"]}))
    ['trn3-gen2-ultraserver · server', 'trn2-ultraserver · instance']
    """
    from trainium_lab.views.layouts import level_meaning

    return [f"{s} · {level_meaning(s, lv)}" for s, lv in zip(df["system"], df["level"])]


def _level_legend_expr(df: pd.DataFrame) -> str:
    """A legend label expression that names the ``instance`` level "instance / server" when a
    system in ``df`` calls it a server."""
    servers = any(r.endswith(" · server") for r in _level_rows(df))
    return "datum.label == 'instance' ? 'instance / server' : datum.label" if servers else "datum.label"




@described(
    'Horizontal bars on a log scale of compute per byte of communication bandwidth (FLOP per '
    'byte) for each system and level: the higher the bar, the more tokens a collective at '
    'that level needs to hide behind compute.')
def level_ratio_chart(df: pd.DataFrame, *, title: str = "C/W: FLOPs a chip computes per byte it sends",
                      width: int = WIDTH) -> alt.LayerChart:
    """Horizontal bars of ``flops_per_byte`` (log scale) per system and level, labelled.

    ``df`` is :func:`trainium_lab.parallelism.level_ratios_table` output. The value is also
    the data-parallel threshold in tokens per replica at peak compute (BF16 gradients, many
    replicas); at a real MFU the threshold is MFU × C/W.
    """
    d = df[["system", "level", "flops_per_byte"]].copy()
    d["row"] = _level_rows(d)
    d["flops_per_byte"] = d["flops_per_byte"].round(0)
    d["base"] = 100.0
    y = alt.Y("row:N", sort=None, title=None, axis=alt.Axis(labelLimit=260))
    with debug_mode(False):
        bars = alt.Chart(d).mark_bar().encode(
            x=alt.X("flops_per_byte:Q", scale=alt.Scale(type="log", domain=[100, 100_000]),
                    title="C/W (FLOPs per byte; log scale)"),
            x2=alt.X2("base:Q"),
            y=y, color=alt.Color("level:N", title="level", legend=alt.Legend(labelExpr=_level_legend_expr(d)),
                                 scale=alt.Scale(domain=["instance", "ultraserver", "efa"],
                                                 range=[PALETTE[4], PALETTE[0], PALETTE[2]])),
            tooltip=[alt.Tooltip("system:N"), alt.Tooltip("level:N"),
                     alt.Tooltip("flops_per_byte:Q", format=",.0f", title="C/W")])
        text = alt.Chart(d).mark_text(align="left", dx=4, fontSize=10).encode(
            x=alt.X("flops_per_byte:Q"), y=y, text=alt.Text("flops_per_byte:Q", format=",.0f"))
        return alt.layer(bars, text, title=alt.TitleParams(
            title, subtitle="× MFU = the tokens per data-parallel replica that hide a BF16 gradient all-reduce"),
            width=width, height=24 * len(d) + 10, padding=PAD)


@described(
    'Points on a log scale of the largest tensor-parallel degree, in chips, that stays '
    'compute-bound for each model and level, with ticks at the chips each level holds: a '
    'point above its tick means tensor parallelism can fill that level.')
def tp_limit_chart(df: pd.DataFrame, *, title: str = "TP limit Y* (chips) against the chips a level holds",
                   width: int = WIDTH) -> alt.LayerChart:
    """Points of ``tp_limit_chips`` per model and level (log scale), with ticks at the chips
    each level holds; a limit above its level's tick means TP can fill the level.

    ``df`` is :func:`trainium_lab.parallelism.tp_limit_table` output.
    """
    d = df[["system", "level", "chips_in_level", "model", "tp_limit_chips"]].copy()
    d["row"] = _level_rows(d)
    d["tp_limit_chips"] = d["tp_limit_chips"].round(1)
    levels = d.drop_duplicates("row").dropna(subset=["chips_in_level"])
    y = alt.Y("row:N", sort=None, title=None, axis=alt.Axis(labelLimit=260))
    with debug_mode(False):
        pts = alt.Chart(d).mark_point(filled=True, size=70).encode(
            x=alt.X("tp_limit_chips:Q", scale=alt.Scale(type="log"), title="chips (log scale)"),
            y=y, color=alt.Color("model:N", title="MLP of", scale=alt.Scale(range=PALETTE), sort=None),
            tooltip=[alt.Tooltip("row:N", title="level"), alt.Tooltip("model:N"),
                     alt.Tooltip("tp_limit_chips:Q", format=",.1f", title="Y* (chips)")])
        ticks = alt.Chart(levels).mark_tick(color="black", thickness=2, size=18).encode(
            x=alt.X("chips_in_level:Q"), y=y,
            tooltip=[alt.Tooltip("row:N", title="level"),
                     alt.Tooltip("chips_in_level:Q", format=",.0f", title="chips in the level")])
        return alt.layer(ticks, pts, title=alt.TitleParams(
            title, subtitle="black tick: chips in the level (none over EFA)"),
            width=width, height=24 * d["row"].nunique() + 10, padding=PAD)
