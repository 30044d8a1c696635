"""Charts for chapter 10 (mixture of experts, planning at scale). Encodings only: every number
comes from :mod:`trainium_lab.moe` or :mod:`trainium_lab.layouts`."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd
from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import PALETTE, WIDTH, TemplateLayerChart, described, inline_rows, stacked_bars
from trainium_lab.charts.layouts import step_time_chart

__all__ = ["parameter_chart", "all_to_all_chart", "expert_load_chart", "moe_step_chart", "level_time_chart"]

_PARTS = ["embeddings", "attention", "norms", "router", "dense_mlp", "shared_experts", "routed_experts"]
_PART_LABELS = {"embeddings": "embeddings", "attention": "attention", "norms": "norms", "router": "router",
                "dense_mlp": "dense MLP", "shared_experts": "shared experts", "routed_experts": "routed experts"}
_PART_COLOURS = [PALETTE[9], PALETTE[0], PALETTE[8], PALETTE[5], PALETTE[3], PALETTE[6], PALETTE[1]]
_TIME = ["compute", "tp_comm", "ep_comm", "pp_comm", "bubble", "dp_exposed"]
_TIME_LABELS = {"compute": "compute", "tp_comm": "TP all-reduces", "ep_comm": "EP all-to-alls",
                "pp_comm": "PP sends", "bubble": "pipeline bubble", "dp_exposed": "exposed DP traffic"}
_TIME_COLOURS = ["#1f3b5c", PALETTE[2], PALETTE[5], PALETTE[6], PALETTE[9], PALETTE[7]]
_LEVELS = ["chips", "chip", "instance", "ultraserver", "efa", "idle", "none"]
_LEVEL_COLOURS = ["#1f3b5c", PALETTE[4], PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[9], "#dddddd"]


@described(
    'Stacked horizontal bars of billions of parameters by part, a total and an active bar per '
    'mixture-of-experts model: memory follows the total, compute per token the much shorter '
    'active bar.')
def parameter_chart(df: pd.DataFrame, *, title: str = "Stored (total) against computed (active) parameters",
                    width: int = WIDTH) -> alt.Chart:
    """Stacked horizontal bars of billions of parameters by part, a *total* and an *active*
    bar per model.

    ``df`` has columns ``model``, ``kind`` (``"total"`` or ``"active"``), ``part`` (the parts
    of :func:`trainium_lab.moe.parameter_table`) and ``billions``.
    """
    d = df[["model", "kind", "part", "billions"]].copy()
    d["bar"] = d["model"] + " · " + d["kind"]
    d["what"] = [_PART_LABELS[p] for p in d["part"]]
    d["order"] = [_PARTS.index(p) for p in d["part"]]
    d["billions"] = d["billions"].round(3)
    labels = [_PART_LABELS[p] for p in _PARTS]
    with debug_mode(False):
        return stacked_bars(
            inline_rows(d), n_bars=d["bar"].nunique(), bar="bar", value="billions",
            value_title="parameters (billions)", colour="what", domain=labels, colours=_PART_COLOURS,
            colour_title="part", colour_sort=labels, title=title, width=width, bar_px=26,
            tooltip=[alt.Tooltip("bar:N", title="model"), alt.Tooltip("what:N", title="part"),
                     alt.Tooltip("billions:Q", format=",.2f", title="billions")])


@described(
    'Grouped horizontal bars of milliseconds per MoE layer and training step: the four '
    "all-to-alls (dispatch and combine, forward and backward) beside the experts' compute, "
    'one group per system, expert-parallel group size and level.')
def all_to_all_chart(df: pd.DataFrame, *, title: str = "One MoE layer: all-to-alls against expert compute",
                     width: int = WIDTH) -> alt.Chart:
    """Grouped horizontal bars, milliseconds per MoE layer per training step: the four
    all-to-alls and the experts' compute, one group per (system, EP group size, level).

    ``df`` is :func:`trainium_lab.moe.all_to_all_table` (``system``, ``ep_chips``, ``level``,
    ``phases``, ``layer_all_to_all_s``, ``layer_expert_compute_s``).
    """
    rows = []
    for r in df.itertuples():
        group = f"{r.system}: EP over {r.ep_chips} chips|{r.phases}"  # "|": header line break
        rows.append({"group": group, "what": "4 all-to-alls", "ms": round(r.layer_all_to_all_s * 1e3, 4)})
        rows.append({"group": group, "what": "expert compute", "ms": round(r.layer_expert_compute_s * 1e3, 4)})
    d = pd.DataFrame(rows)
    with debug_mode(False):
        return alt.Chart(inline_rows(d), title=title, width=width, height=alt.Step(11)).mark_bar().encode(
            x=alt.X("ms:Q", title="milliseconds per MoE layer (forward + backward)"),
            y=alt.Y("what:N", title=None, axis=None),
            row=alt.Row("group:N", sort=list(dict.fromkeys(d["group"])), title=None,
                        header=alt.Header(labelAngle=0, labelAlign="left", labelLimit=WIDTH,
                                          labelExpr="split(datum.value, '|')")),
            color=alt.Color("what:N", scale=alt.Scale(domain=["4 all-to-alls", "expert compute"],
                                                      range=[PALETTE[5], "#1f3b5c"]), title=None),
            tooltip=[alt.Tooltip("group:N", title="EP group"), alt.Tooltip("what:N"), alt.Tooltip("ms:Q", format=",.3f")],
        ).properties(spacing=2)


#: one legend for all four: the bars' two parts, the router's expectation, the capacity
_LOAD_COLOURS = alt.Scale(domain=["kept", "dropped", "router's expectation", "capacity"],
                          range=[PALETTE[0], PALETTE[2], "black", "#555555"])


@functools.lru_cache(maxsize=4)
def _load_template(width: int, height: int) -> TemplateLayerChart:
    """The expert-load chart's layers over one named (empty) data set, built once: a widget
    update only swaps the data and the title. Nothing in it depends on the data: the y scale
    reaches the invisible ``top`` row, and the axis labels every expert, or every eighth
    past 16 experts, by the length of the x domain."""
    with debug_mode(False):
        bars = alt.Chart().mark_bar().transform_filter(alt.datum.layer == "bar").encode(
            x=alt.X("expert:O", title="expert (hottest first)",
                    axis=alt.Axis(labelExpr="length(domain('x')) <= 16 || datum.value % 8 == 1 "
                                            "? datum.value : ''", labelAngle=0)),
            y=alt.Y("tokens:Q", stack="zero", title="tokens"),
            color=alt.Color("what:N", scale=_LOAD_COLOURS, title=None),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("expert:O"), alt.Tooltip("what:N"), alt.Tooltip("tokens:Q", format=",.0f")])
        ticks = alt.Chart().mark_tick(thickness=2).transform_filter(
            alt.datum.layer == "expected").encode(
            x=alt.X("expert:O"), y=alt.Y("tokens:Q"), color=alt.ColorDatum("router's expectation"),
            tooltip=[alt.Tooltip("tokens:Q", format=",.0f", title="router's expectation")])
        rule = alt.Chart().mark_rule(strokeDash=[5, 3]).transform_filter(
            alt.datum.layer == "capacity").encode(
            y=alt.Y("tokens:Q"), color=alt.ColorDatum("capacity"),
            tooltip=[alt.Tooltip("tokens:Q", format=",.0f", title="capacity (tokens)")])
        # an invisible rule at the top row's height: room above the highest of bars, ticks
        # and capacity, so the dashed capacity line never sits on the plot's top edge
        top = alt.Chart().mark_rule(opacity=0).transform_filter(alt.datum.layer == "top").encode(
            y=alt.Y("tokens:Q"))
        return TemplateLayerChart(layer=[bars, ticks, rule, top], data=alt.NamedData("load"),
                                  width=width, height=height, datasets={"load": []}).freeze()


@described(
    'Bar chart of the tokens each expert receives, hottest first, with the part above the '
    "capacity in red, the capacity as a dashed rule and the router's expectation as ticks: "
    'red tokens are dropped.')
def expert_load_chart(df: pd.DataFrame, *, title: str | None = None, width: int = WIDTH,
                      height: int = 200) -> alt.LayerChart:
    """Tokens each expert receives (hottest first), the part above capacity in red, with
    the capacity (dashed) and the router's expectation (ticks).

    ``df`` is :meth:`trainium_lab.moe.RoutingResult.table` (``expert``, ``tokens``,
    ``expected_tokens``, ``capacity``). One named dataset at the top of a template (the
    layers filter it), so a widget redraws it by swapping the data.
    """
    cap = float(df["capacity"].iloc[0])
    expert = [int(e) for e in df["expert"].tolist()]
    tokens = [float(t) for t in df["tokens"].tolist()]
    expected = [float(t) for t in df["expected_tokens"].tolist()]
    rows = ([{"layer": "bar", "expert": e, "what": "kept", "tokens": round(min(t, cap), 1), "order": 0}
             for e, t in zip(expert, tokens)]
            + [{"layer": "bar", "expert": e, "what": "dropped", "tokens": round(max(t - cap, 0.0), 1),
                "order": 1} for e, t in zip(expert, tokens)]
            + [{"layer": "expected", "expert": e, "what": "expected", "tokens": round(t, 1), "order": 0}
               for e, t in zip(expert, expected)]
            + [{"layer": "capacity", "expert": expert[0], "what": "capacity", "tokens": cap, "order": 0},
               {"layer": "top", "expert": expert[0], "what": "top",
                "tokens": 1.1 * max(cap, max(tokens), max(expected)), "order": 0}])
    chart = _load_template(int(width), int(height)).with_datasets({"load": rows})
    return chart.with_props(title=title or "Tokens per expert against the capacity")


@described(
    'Stacked horizontal bars of seconds per training step by part, the expert all-to-alls '
    'included, one bar per layout.')
def moe_step_chart(df: pd.DataFrame, *, title: str = "Where a step's time goes",
                   width: int = WIDTH) -> alt.Chart:
    """Stacked horizontal bars of seconds per step by part, expert all-to-alls included, one
    bar per ``layout`` (chapter 05's :func:`~trainium_lab.charts.layouts.step_time_chart` with
    the parts of :data:`trainium_lab.layouts.MOE_TIME_PARTS`).

    ``df`` has columns ``layout``, ``part`` and ``seconds`` (``LayoutEstimate.time_table()``
    plus ``layout``).
    """
    d = df.assign(seconds=df["seconds"].round(4))
    return step_time_chart(d, title=title, width=width, parts=_TIME, part_labels=_TIME_LABELS,
                           colours=_TIME_COLOURS)


@described(
    'Stacked horizontal bars of the share of each step spent at each level: compute on the '
    'chips, each collective at the level its group crosses, and the idle pipeline bubble, one '
    'bar per job.')
def level_time_chart(df: pd.DataFrame, *, title: str = "Where a step goes, by level",
                     width: int = WIDTH) -> alt.Chart:
    """Stacked horizontal bars of each step's share by the level its time is spent on
    (compute on the chips, each collective at the level its group crosses, the bubble idle),
    one bar per ``job``.

    ``df`` has columns ``job``, ``part``, ``level`` and ``share``
    (:meth:`trainium_lab.layouts.Plan.time_by_level` plus ``job``).
    """
    d = df[["job", "part", "level", "share"]].copy()
    d["what"] = [f"{_TIME_LABELS[p]} ({lv})" if lv not in ("chips", "idle") else _TIME_LABELS[p]
                 for p, lv in zip(d["part"], d["level"])]
    d["order"] = [_TIME.index(p) for p in d["part"]]
    d["share"] = d["share"].round(4)
    with debug_mode(False):
        return stacked_bars(
            inline_rows(d), n_bars=d["job"].nunique(), bar="job", value="share",
            value_title="share of the step", value_axis=alt.Axis(format="%"), colour="level",
            domain=_LEVELS, colours=_LEVEL_COLOURS, colour_title="where", label_limit=360,
            title=title, width=width,
            tooltip=[alt.Tooltip("job:N"), alt.Tooltip("what:N", title="part"),
                     alt.Tooltip("share:Q", format=".1%")])
