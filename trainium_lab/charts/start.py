"""Charts for chapter 00 (start here)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import base, described
from trainium_lab.charts.hardware import _records

__all__ = ["hbm_fit_chart", "units_chart"]

#: what each part of :meth:`trainium_lab.intro.HbmFit.parts` is called on the chart, in order
PART_LABELS = {
    "weights": "weights", "gradients": "gradients", "master": "FP32 master copy",
    "adam_m": "Adam 1st moment", "adam_v": "Adam 2nd moment",
    "room": "HBM: room for the model", "reserve": "HBM: kept free (activations, KV cache, runtime)",
}
_PART_COLORS = ["#e69f00", "#d55e00", "#cc79a7", "#009e73", "#56b4e9", "#0072b2", "#bbbbbb"]


@described(
    "Two stacked bars in GiB: what each chip must hold, and one chip's HBM split into usable "
    'room and reserve; the first bar fits if it is no longer than the room.')
def hbm_fit_chart(parts: pd.DataFrame, *, chip: str = "one chip", title: str | None = None) -> alt.Chart:
    """Two stacked bars in GiB: what each chip holds, and one chip's HBM split into room and
    reserve.

    ``parts`` is :meth:`trainium_lab.intro.HbmFit.parts`: columns ``bar`` ("per chip" or
    "HBM"), ``part`` (a key of :data:`PART_LABELS`), ``gib``. A single view (no layers), so
    the bars share one axis and a learner compares their lengths directly.
    """
    rows = {"per chip": "each chip holds", "HBM": f"{chip}'s HBM"}
    order = {k: i for i, k in enumerate(PART_LABELS)}
    df = pd.DataFrame({"row": [rows[b] for b in parts["bar"]],
                       "label": [PART_LABELS[p] for p in parts["part"]],
                       "order": [order[p] for p in parts["part"]], "gib": parts["gib"].to_numpy()})
    with debug_mode(False):  # skip per-object schema validation: widget updates stay fast
        return _fit_bars(df, rows, title)


def _fit_bars(df, rows, title):
    return base(_records(df), height=90,
                title=title or "What each chip must hold against its HBM").mark_bar().encode(
        x=alt.X("gib:Q", title="GiB", stack="zero"),
        y=alt.Y("row:N", title=None, sort=list(rows.values())),
        color=alt.Color("label:N", title=None, sort=list(PART_LABELS.values()),
                        scale=alt.Scale(domain=list(PART_LABELS.values()), range=_PART_COLORS),
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=400)),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("label:N", title="part"), alt.Tooltip("gib:Q", format=",.1f", title="GiB")],
    )


@described(
    'Bars comparing one size read as GB (10^9 bytes) and as GiB (2^30 bytes): the GiB figure '
    'is about 7 % smaller.')
def units_chart(df: pd.DataFrame) -> alt.Chart:
    """Bars comparing one size read as GB and as GiB (columns ``unit``, ``value``)."""
    return base(df, height=70, title="The same bytes, two units").mark_bar().encode(
        x=alt.X("value:Q", title="value"),
        y=alt.Y("unit:N", title=None),
        tooltip=[alt.Tooltip("unit:N"), alt.Tooltip("value:Q", format=",.2f")],
    )
