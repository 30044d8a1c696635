"""Charts for chapter 00 (start here)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from trainium_lab.charts.base import base


def memory_bar_chart(df: pd.DataFrame) -> alt.Chart:
    """Horizontal bars of memory in GiB, one per row of ``df``.

    ``df`` has columns ``item`` (label), ``gib`` (value) and ``kind``
    ("needed" or "available").
    """
    return base(df, height=90, title="Weights in BF16 versus one chip's HBM").mark_bar().encode(
        x=alt.X("gib:Q", title="GiB"),
        y=alt.Y("item:N", title=None, sort=None),
        color=alt.Color("kind:N", title=None,
                        scale=alt.Scale(domain=["needed", "available"],
                                        range=["#f28e2b", "#4e79a7"])),
        tooltip=[alt.Tooltip("item:N"), alt.Tooltip("gib:Q", format=",.1f", title="GiB")],
    )


def units_chart(df: pd.DataFrame) -> alt.Chart:
    """Bars comparing one size read as GB and as GiB (columns ``unit``, ``value``)."""
    return base(df, height=70, title="The same bytes, two units").mark_bar().encode(
        x=alt.X("value:Q", title="value"),
        y=alt.Y("unit:N", title=None),
        tooltip=[alt.Tooltip("unit:N"), alt.Tooltip("value:Q", format=",.2f")],
    )
