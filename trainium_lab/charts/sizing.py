"""Charts for chapter 04 (sizing a training job). Encodings only."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd

from trainium_lab.charts.base import PALETTE, WIDTH, TemplateChart, base, described
from trainium_lab.charts.layouts import PAD

_COMPONENT_ORDER = ["weights", "gradients", "master", "adam_m", "adam_v"]


@described(
    'Stacked horizontal bars of bytes per parameter by component (weights, gradients, master '
    'copy, optimizer moments), one bar per training recipe: 16 bytes for BF16 mixed precision '
    'with Adam.')
def state_stack_chart(df: pd.DataFrame) -> alt.Chart:
    """Stacked horizontal bars of bytes per parameter by component, one bar per recipe.

    ``df`` is :func:`trainium_lab.sizing.state_breakdown` output (columns
    ``label``, ``component``, ``bytes_per_param``, ``gib``).
    """
    return base(df, height=30 * df["label"].nunique() + 20,
                title="Training state: bytes per parameter by component").mark_bar().encode(
        x=alt.X("sum(bytes_per_param):Q", title="bytes per parameter"),
        y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
        color=alt.Color("component:N", sort=_COMPONENT_ORDER,
                        scale=alt.Scale(domain=_COMPONENT_ORDER, range=PALETTE[:5]),
                        title="component"),
        order=alt.Order("component_order:Q"),
        tooltip=[alt.Tooltip("label:N", title="recipe"), alt.Tooltip("component:N"),
                 alt.Tooltip("bytes_per_param:Q", title="bytes/param"),
                 alt.Tooltip("gib:Q", format=",.1f", title="GiB")],
    ).transform_calculate(
        component_order=f"indexof({_COMPONENT_ORDER!r}, datum.component)").properties(padding=PAD)


@described(
    'Lines of the bytes each device holds, in GB, against the data-parallel degree, one per '
    'ZeRO stage: stage 0 stays flat, each higher stage shards more of the state and falls '
    'faster.')
def zero_chart(df: pd.DataFrame) -> alt.Chart:
    """Bytes per device (GB, 10^9) versus data-parallel degree, one line per ZeRO stage.

    ``df`` is :func:`trainium_lab.sizing.zero_table` output.
    """
    return base(df, title="Training state per device under ZeRO").mark_line(point=True).encode(
        x=alt.X("dp:Q", scale=alt.Scale(type="log", base=2), title="data-parallel degree N_d"),
        y=alt.Y("gb:Q", scale=alt.Scale(type="log"), title="GB per device (10^9 bytes)"),
        color=alt.Color("stage_label:N", title=None, sort=None),
        tooltip=[alt.Tooltip("stage_label:N", title="stage"), alt.Tooltip("dp:Q"),
                 alt.Tooltip("gb:Q", format=",.2f", title="GB")],
    ).properties(padding=PAD)


@described(
    'Lines of activation memory in GiB against sequence length, one per configuration: '
    'activations grow with the sequence, and tensor parallelism, sequence parallelism and '
    'recomputation lower the line.')
def activation_chart(df: pd.DataFrame, *, hbm_gib: float | None = None) -> alt.Chart:
    """Activation GiB versus sequence length, one line per configuration.

    ``df`` is :func:`trainium_lab.sizing.activation_table` output; ``hbm_gib``
    draws one chip's HBM as a horizontal rule.
    """
    lines = base(df, title="Activation memory per device versus sequence length").mark_line(
        point=True).encode(
        x=alt.X("seq_len:Q", scale=alt.Scale(type="log", base=2), title="sequence length (tokens)"),
        y=alt.Y("gib:Q", scale=alt.Scale(type="log"), title="GiB"),
        color=alt.Color("config:N", title=None, sort=None),
        tooltip=[alt.Tooltip("config:N"), alt.Tooltip("seq_len:Q"),
                 alt.Tooltip("gib:Q", format=",.2f", title="GiB")],
    )
    if hbm_gib is None:
        return lines.properties(padding=PAD)
    rule = alt.Chart(pd.DataFrame({"gib": [hbm_gib], "label": ["one chip's HBM"]})).mark_rule(
        strokeDash=[4, 4], color="black").encode(y=alt.Y("gib:Q"), tooltip=[alt.Tooltip("label:N")])
    return (lines + rule).properties(padding=PAD)




@functools.lru_cache(maxsize=1)
def _plan_memory_template() -> TemplateChart:
    return TemplateChart(alt.NamedData("plan"), width=WIDTH, height=alt.Step(28),
                         title="One chip under this plan").mark_bar().encode(
        x=alt.X("gib:Q", title="GiB"),
        y=alt.Y("item:N", title=None, sort=None),
        color=alt.Color("kind:N", title=None,
                        scale=alt.Scale(domain=["available", "needed", "reserve"],
                                        range=[PALETTE[0], PALETTE[1], PALETTE[9]])),
        tooltip=[alt.Tooltip("item:N"), alt.Tooltip("gib:Q", format=",.1f", title="GiB")],
    ).properties(datasets={"plan": []}, padding=PAD).freeze()


@described("One chip's HBM beside what a plan puts on it, stacked by part, with the room left.")
def plan_memory_chart(df: pd.DataFrame) -> alt.Chart:
    """One chip's HBM next to what a plan puts on it (``sizing.plan_memory_table``).

    A template with the rows as a named data set: the calculator redraws it in about a
    millisecond.
    """
    rows = [{"item": i, "gib": round(float(g), 4), "kind": k}
            for i, g, k in zip(df["item"].tolist(), df["gib"].tolist(), df["kind"].tolist())]
    return _plan_memory_template().with_datasets({"plan": rows})
