"""Charts for chapter 05 (parallel layouts). Encodings only: every number comes from
:mod:`trainium_lab.layouts`."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd
from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import HEIGHT, PALETTE, WIDTH, TemplateChart, described, inline_rows, row_dicts, stacked_bars

__all__ = ["memory_chart", "step_time_chart", "plan_scatter_chart", "fully_sharded_chart",
           "layout_panel_chart", "panel_bars_chart", "layout_dashboard"]

_MEMORY = ["weights", "gradients", "optimizer", "activations"]
_MEMORY_COLOURS = [PALETTE[0], PALETTE[3], PALETTE[1], PALETTE[4]]
_TIME = ["compute", "tp_comm", "pp_comm", "bubble", "dp_exposed"]
_TIME_LABELS = {"compute": "compute", "tp_comm": "TP all-reduces", "pp_comm": "PP sends",
                "bubble": "pipeline bubble", "dp_exposed": "exposed DP traffic"}
_TIME_COLOURS = ["#1f3b5c", PALETTE[2], PALETTE[6], PALETTE[9], PALETTE[7]]
_LEVELS = ["none", "chip", "instance", "ultraserver", "efa"]
#: room around a top-level chart, so labels and titles survive a viewer whose fallback font is wider
#: than the one vl-convert measured with (headless Chromium's DejaVu Sans cut chapter 05's titles)
PAD = {"left": 28, "right": 28, "top": 4, "bottom": 4}


@described(
    'Stacked horizontal bars of GiB per chip by part of the memory, one bar per layout, with '
    "a solid rule at one chip's HBM and a dashed one at HBM less the kept margin: a bar past "
    'the dashed rule does not fit.')
def memory_chart(df: pd.DataFrame, *, title: str = "Memory per chip against HBM",
                 width: int = WIDTH) -> alt.LayerChart:
    """Stacked horizontal bars of GiB per chip by part, one bar per ``layout``, with HBM
    (solid rule) and HBM less the kept margin (dashed rule).

    ``df`` has columns ``layout``, ``part`` (weights, gradients, optimizer, activations),
    ``gib``, ``hbm_gib``, ``allowed_gib`` (``LayoutEstimate.memory_table()`` plus a
    ``layout`` column).
    """
    d = df[["layout", "part", "gib"]].copy()
    d["order"] = [_MEMORY.index(p) for p in d["part"]]
    rules = df.groupby("layout", sort=False)[["hbm_gib", "allowed_gib"]].first().reset_index()
    n = d["layout"].nunique()
    with debug_mode(False):
        bars = alt.Chart(inline_rows(d)).mark_bar().encode(
            x=alt.X("gib:Q", stack="zero", title="GiB per chip"),
            y=alt.Y("layout:N", sort=None, title=None, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("part:N", scale=alt.Scale(domain=_MEMORY, range=_MEMORY_COLOURS),
                            title="memory", sort=_MEMORY),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("layout:N"), alt.Tooltip("part:N"),
                     alt.Tooltip("gib:Q", format=",.1f", title="GiB")],
        )
        hbm = alt.Chart(inline_rows(rules)).mark_tick(color="black", thickness=2, size=26).encode(
            x=alt.X("hbm_gib:Q"), y=alt.Y("layout:N", sort=None),
            tooltip=[alt.Tooltip("hbm_gib:Q", format=",.0f", title="HBM GiB")])
        allowed = alt.Chart(inline_rows(rules)).mark_tick(color="#a40000", thickness=2, size=26,
                                                       strokeDash=[3, 2]).encode(
            x=alt.X("allowed_gib:Q"), y=alt.Y("layout:N", sort=None),
            tooltip=[alt.Tooltip("allowed_gib:Q", format=",.1f", title="usable GiB (HBM − margin)")])
        return alt.layer(bars, hbm, allowed, title=title, width=width, height=34 * n + 10, padding=PAD)


@described(
    'Stacked horizontal bars of seconds per training step by part (compute, the collectives '
    'left exposed, the pipeline bubble), one bar per layout: the shortest bar is the fastest '
    'layout.')
def step_time_chart(df: pd.DataFrame, *, title: str = "Where a step's time goes",
                    width: int = WIDTH, parts: list[str] | None = None, part_labels: dict[str, str] | None = None,
                    colours: list[str] | None = None) -> alt.Chart:
    """Stacked horizontal bars of seconds per step by part, one bar per ``layout``.

    ``df`` has columns ``layout``, ``part`` (compute, tp_comm, pp_comm, bubble,
    dp_exposed) and ``seconds`` (``LayoutEstimate.time_table()`` plus ``layout``).
    ``parts``, ``part_labels`` and ``colours`` replace those five parts (chapter 10 adds
    the expert all-to-alls).
    """
    order_of = _TIME if parts is None else parts
    names = _TIME_LABELS if part_labels is None else part_labels
    d = df[["layout", "part", "seconds"]].copy()
    d["what"] = [names[p] for p in d["part"]]
    d["order"] = [order_of.index(p) for p in d["part"]]
    total = d.groupby("layout", sort=False)["seconds"].transform("sum")
    d["share"] = d["seconds"] / total
    labels = [names[p] for p in order_of]
    with debug_mode(False):
        return stacked_bars(
            inline_rows(d), n_bars=d["layout"].nunique(), bar="layout", value="seconds",
            value_title="seconds per step", colour="what", domain=labels, colours=colours or _TIME_COLOURS,
            colour_title="time", colour_sort=labels, title=title, width=width,
            tooltip=[alt.Tooltip("layout:N"), alt.Tooltip("what:N", title="part"),
                     alt.Tooltip("seconds:Q", format=",.3f", title="s"),
                     alt.Tooltip("share:Q", format=".1%", title="share of step")],
        ).properties(padding=PAD)




_BEST = ["other that fits", "the winner"]   # legend words, not "false"/"true"


@functools.lru_cache(maxsize=32)
def _scatter_template(colour: str, title: str, width: int, height: int) -> TemplateChart:
    if colour == "tp_level":
        scale = alt.Scale(domain=_LEVELS, range=[PALETTE[9], PALETTE[4], PALETTE[0], PALETTE[1], PALETTE[2]])
    else:
        scale = alt.Scale(range=PALETTE)
    with debug_mode(False):
        return TemplateChart(alt.NamedData("plan"), title=title, width=width, height=height).mark_point(
            filled=True, opacity=0.75).encode(
            x=alt.X("tokens_per_s:Q", title="tokens per second (estimate)", scale=alt.Scale(zero=False)),
            y=alt.Y("headroom_gib:Q", title="HBM left per chip (GiB)"),
            color=alt.Color(f"{colour}:N", scale=scale, title=colour.replace("_", " ")),
            size=alt.Size("best:N", scale=alt.Scale(domain=_BEST, range=[40, 320]), title="layout"),
            shape=alt.Shape("best:N", scale=alt.Scale(domain=_BEST, range=["circle", "diamond"]),
                            title="layout"),
            tooltip=[alt.Tooltip("rank:Q"), alt.Tooltip("label:N"), alt.Tooltip("tp_level:N", title="TP level"),
                     alt.Tooltip("tokens_per_s:Q", format=",.0f"), alt.Tooltip("step_s:Q", format=",.2f"),
                     alt.Tooltip("memory_gib:Q", format=",.1f", title="GiB used"),
                     alt.Tooltip("headroom_gib:Q", format=",.1f", title="GiB left")],
        ).properties(datasets={"plan": []}, padding=PAD).freeze()


@described(
    'Scatter of HBM left per chip in GiB against estimated tokens per second, one point per '
    'layout that fits, coloured by where its tensor-parallel group sits; the best layout is '
    'the large diamond, fastest among those with room left.')
def plan_scatter_chart(df: pd.DataFrame, *, colour: str = "tp_level", title: str | None = None,
                       width: int = WIDTH, height: int = HEIGHT) -> alt.Chart:
    """Memory headroom (GiB per chip) against tokens/s, one point per layout that fits;
    the best layout (lowest ``rank``) drawn as a large diamond.

    ``df`` is ``Plan.table`` (columns ``label``, ``tokens_per_s``, ``headroom_gib``,
    ``tp_level``, ``zero_stage``, ``recompute``, ``step_s``, ``memory_gib``, ``rank``);
    ``colour`` names the column to colour by. The chart is a template with the rows as a
    named data set, so a widget redraws it without rebuilding the spec.
    """
    # what the encodings and tooltips read (of the columns to colour by, only ``colour``: the
    # fewer fields a row has, the faster a widget sends the rows)
    cols = ["label", "tokens_per_s", "headroom_gib", "step_s", "memory_gib", "rank", "tp_level"]
    cols += [colour] if colour not in cols else []
    values = {c: df[c].tolist() for c in cols}
    if "zero_stage" in values:
        values["zero_stage"] = [f"ZeRO-{z}" for z in values["zero_stage"]]
    if "pp" in values:
        values["pp"] = [f"PP{p}" for p in values["pp"]]
    best_rank = min(values["rank"]) if values["rank"] else None
    values["best"] = [_BEST[r == best_rank] for r in values["rank"]]
    for c in ("tokens_per_s", "headroom_gib", "step_s", "memory_gib"):
        values[c] = [round(float(v), 4) for v in values[c]]
    keys = list(values)
    rows = [dict(zip(keys, row)) for row in zip(*(values[k] for k in keys))]
    title = title or "Layouts that fit: headroom against throughput"
    return _scatter_template(colour, title, width, height).with_datasets({"plan": rows})


@described(
    'Horizontal bars of the fully sharded training state in GiB per chip for each number of '
    "systems, labelled with the GiB left, against one chip's HBM as a rule.")
def fully_sharded_chart(df: pd.DataFrame, *, hbm_gib: float,
                        title: str = "405B state fully sharded, per chip") -> alt.LayerChart:
    """Bars of state GiB per chip for each number of systems, with one chip's HBM as a rule.

    ``df`` is :func:`trainium_lab.layouts.fully_sharded_table` (``n_systems``,
    ``state_gib_per_chip``, ``left_gib_per_chip``).
    """
    d = df[["n_systems", "n_chips", "state_gib_per_chip", "left_gib_per_chip"]].copy()
    d["systems"] = d["n_systems"].astype(str) + " × (" + d["n_chips"].astype(str) + " chips)"
    # a label the HBM rule would run through goes past the rule instead
    from trainium_lab.charts.base import rule_crosses_label

    px = WIDTH / (hbm_gib * 1.05)
    d["label_at"] = [max(s, hbm_gib) if rule_crosses_label(s * px, f"{left:.1f}", hbm_gib * px, 11) else s
                     for s, left in zip(d["state_gib_per_chip"], d["left_gib_per_chip"])]
    with debug_mode(False):
        bars = alt.Chart(inline_rows(d)).mark_bar(color=PALETTE[0]).encode(
            x=alt.X("state_gib_per_chip:Q", title="GiB per chip", scale=alt.Scale(domain=[0, hbm_gib * 1.05])),
            y=alt.Y("systems:N", sort=None, title="systems"),
            tooltip=[alt.Tooltip("systems:N"), alt.Tooltip("state_gib_per_chip:Q", format=".1f", title="state GiB"),
                     alt.Tooltip("left_gib_per_chip:Q", format=".1f", title="left GiB")])
        text = alt.Chart(inline_rows(d)).mark_text(align="left", dx=4).encode(
            x=alt.X("label_at:Q"), y=alt.Y("systems:N", sort=None),
            text=alt.Text("left_gib_per_chip:Q", format=".1f"))
        marker = inline_rows(pd.DataFrame({"hbm": [hbm_gib]}))
        rule = alt.Chart(marker).mark_rule(color="black", strokeDash=[4, 3]).encode(
            x=alt.X("hbm:Q"), tooltip=[alt.Tooltip("hbm:Q", title="HBM per chip (GiB)")])
        hbm = alt.Chart(marker).mark_text(align="right", baseline="bottom", dy=-3, fontSize=10).encode(
            x=alt.X("hbm:Q"), y=alt.YValue(0), text=alt.TextValue("one chip's HBM"))
        return alt.layer(bars, text, rule, hbm, title=alt.Title(title, subtitle="label: GiB left per chip"),
                         width=WIDTH, height=40 * len(d) + 10, padding=PAD)


_LAYOUT_DOMAIN = _MEMORY + ["HBM", "HBM less margin"] + [_TIME_LABELS[p] for p in _TIME]
_LAYOUT_COLOURS = _MEMORY_COLOURS + ["#333333", "#a40000"] + _TIME_COLOURS


@described(
    "One layout at a glance: memory per chip stacked by part beside bars for one chip's HBM "
    'and HBM less the margin, and below it the step time stacked by part.')
def layout_panel_chart(memory: pd.DataFrame, times: pd.DataFrame, *, width: int = WIDTH,
                       padding: dict | None = None) -> alt.Chart:
    """One layout at a glance, as a single chart (fast to redraw): a row with memory per
    chip stacked by part beside bars for HBM and HBM less the margin, and a row with the
    step time stacked by part.

    ``memory`` is ``LayoutEstimate.memory_table()``, ``times`` is ``LayoutEstimate.time_table()``;
    ``padding`` is the chart's own (Vega-Lite's ``padding``), for a chart shown alone.
    """
    mem_panel, time_panel = "memory per chip (GiB)", "step time (s)"
    hbm, allowed = float(memory["hbm_gib"].iloc[0]), float(memory["allowed_gib"].iloc[0])
    rows = [{"panel": mem_panel, "bar": "this layout", "part": p, "value": float(g), "order": i}
            for i, (p, g) in enumerate(zip(memory["part"].tolist(), memory["gib"].tolist()))]
    rows += [{"panel": mem_panel, "bar": "HBM", "part": "HBM", "value": hbm, "order": 0},
             {"panel": mem_panel, "bar": "HBM less margin", "part": "HBM less margin", "value": allowed,
              "order": 0}]
    rows += [{"panel": time_panel, "bar": "this layout", "part": _TIME_LABELS[p], "value": float(t), "order": i}
             for i, (p, t) in enumerate(zip(times["part"].tolist(), times["seconds"].tolist()))]
    return panel_bars_chart(rows, _LAYOUT_DOMAIN, _LAYOUT_COLOURS, [mem_panel, time_panel], width=width,
                            step=22, legend_columns=2, padding=padding)


@functools.lru_cache(maxsize=16)
def _panel_template(domain: tuple[str, ...], colours: tuple[str, ...], panels: tuple[str, ...],
                    width: int, step: int, legend_columns: int, padding: tuple | None) -> TemplateChart:
    """The panels' spec with the rows as a named (empty) data set, built once per kind of
    panel: a widget update only swaps the data."""
    with debug_mode(False):
        chart = TemplateChart(alt.NamedData("panels"), width=width, height=alt.Step(step)).mark_bar().encode(
            x=alt.X("value:Q", title=None),
            y=alt.Y("bar:N", title=None, sort=None),
            color=alt.Color("part:N", scale=alt.Scale(domain=list(domain), range=list(colours)), title=None,
                            legend=alt.Legend(columns=legend_columns, orient="right")),
            row=alt.Row("panel:N", title=None, sort=list(panels),
                        header=alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold",
                                          labelOrient="top")),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("panel:N"), alt.Tooltip("part:N"), alt.Tooltip("value:Q", format=",.3f")],
        ).resolve_scale(x="independent", y="independent").properties(
            datasets={"panels": []}, **({} if padding is None else {"padding": dict(padding)}))
        return chart.freeze()


@described('Rows of stacked horizontal bar panels, each with its own scale.')
def panel_bars_chart(d: pd.DataFrame | list[dict], domain: list[str], colours: list[str], panels: list[str], *,
                     width: int = WIDTH, step: int = 22, legend_columns: int = 2,
                     padding: dict | None = None) -> alt.Chart:
    """Stacked horizontal bars in rows of panels, each with its own scales, as one chart.

    ``d`` (a DataFrame or its rows as dicts) has columns ``panel`` (one of ``panels``, in row
    order), ``bar`` (the bar within the panel), ``part`` (colour, one of ``domain`` coloured by
    ``colours``), ``value`` and ``order`` (stacking order). A single chart, not a layered or
    concatenated one, and a template with the rows as a named data set, so a widget redraws it
    by swapping the data (chapters 05 and 09).
    """
    rows = row_dicts(d) if isinstance(d, pd.DataFrame) else list(d)
    template = _panel_template(tuple(domain), tuple(colours), tuple(panels), int(width), int(step),
                               int(legend_columns), None if padding is None else tuple(padding.items()))
    return (template.with_datasets({"panels": rows})).with_props()


@described(
    'One layout at a glance: memory per chip against HBM, the step time by part, and, when '
    'given, a map of which ranks sit on which chips.')
def layout_dashboard(memory: pd.DataFrame, times: pd.DataFrame, placement: alt.TopLevelMixin | None = None
                     ) -> alt.TopLevelMixin:
    """:func:`layout_panel_chart`, above a rank-to-chip map when ``placement`` is given.

    ``placement`` is a chart from :func:`trainium_lab.charts.topology.placement_chart`.
    """
    if placement is None:
        return layout_panel_chart(memory, times, padding=PAD)
    parts, datasets = [], {}
    for chart in (layout_panel_chart(memory, times), placement):
        # Vega-Lite reads named data sets only at the top level: a template's move up
        own = chart._kwds.get("datasets", alt.Undefined)
        if own is not alt.Undefined:
            datasets.update(own)
            chart = chart.copy(deep=False)
            chart.datasets = alt.Undefined
        parts.append(chart)
    with debug_mode(False):
        return alt.vconcat(*parts, spacing=14, padding=PAD,
                           **({"datasets": datasets} if datasets else {})).resolve_scale(color="independent")
