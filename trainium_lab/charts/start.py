"""Charts for chapter 00 (start here)."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd

from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import WIDTH, TemplateChart, base, described

__all__ = ["hbm_fit_chart", "units_chart"]

#: what each part of :meth:`trainium_lab.intro.HbmFit.parts` is called on the chart, in order
PART_LABELS = {
    "weights": "weights", "gradients": "gradients", "master": "FP32 master copy",
    "adam_m": "Adam 1st moment", "adam_v": "Adam 2nd moment",
    "room": "HBM: room for the model", "reserve": "HBM: kept free (activations, KV cache, runtime)",
}
_PART_COLORS = ["#e69f00", "#d55e00", "#cc79a7", "#009e73", "#56b4e9", "#0072b2", "#bbbbbb"]


@functools.lru_cache(maxsize=1)
def _fit_template() -> TemplateChart:
    """The two bars with their rows as a named (empty) data set, built once: a widget update
    only swaps the data and the title (the bars' order comes from the data, so the chip's
    name in a row's label leaves the spec unchanged)."""
    with debug_mode(False):  # skip per-object schema validation
        return TemplateChart(alt.NamedData("parts"), width=WIDTH, height=90,
                             datasets={"parts": []}).mark_bar().encode(
            x=alt.X("gib:Q", title="GiB", stack="zero"),
            y=alt.Y("row:N", title=None, sort=None),
            color=alt.Color("label:N", title=None, sort=list(PART_LABELS.values()),
                            scale=alt.Scale(domain=list(PART_LABELS.values()), range=_PART_COLORS),
                            legend=alt.Legend(orient="bottom", columns=2, labelLimit=400)),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("label:N", title="part"), alt.Tooltip("gib:Q", format=",.1f", title="GiB")],
        ).freeze()


@described(
    "Two stacked bars in GiB: what each chip must hold, and one chip's HBM split into usable "
    'room and reserve; the first bar fits if it is no longer than the room.')
def hbm_fit_chart(parts: pd.DataFrame, *, chip: str = "one chip", title: str | None = None) -> alt.Chart:
    """Two stacked bars in GiB: what each chip holds, and one chip's HBM split into room and
    reserve.

    ``parts`` is :meth:`trainium_lab.intro.HbmFit.parts`: columns ``bar`` ("per chip" or
    "HBM"), ``part`` (a key of :data:`PART_LABELS`), ``gib``. A single view (no layers), so
    the bars share one axis and a learner compares their lengths directly; a template with
    the rows as a named data set, so a widget redraws it by swapping the data.
    """
    rows = {"per chip": "each chip holds", "HBM": f"{chip}'s HBM"}
    order = {k: i for i, k in enumerate(PART_LABELS)}
    # the bar of what each chip holds first (the y scale keeps the data's order)
    records = [{"row": rows[b], "label": PART_LABELS[p], "order": order[p], "gib": float(g)}
               for b, p, g in sorted(zip(parts["bar"].tolist(), parts["part"].tolist(),
                                         parts["gib"].tolist()), key=lambda r: r[0] != "per chip")]
    chart = _fit_template().with_datasets({"parts": records})
    return chart.with_props(title=title or "What each chip must hold against its HBM")


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
