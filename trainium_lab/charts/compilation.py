"""Charts for chapter 07 (compilation and static shapes). Encodings only: the numbers
come from ``trainium_lab.compilation`` and ``trainium_lab.jaxdemo``; values are rounded
to what a chart can show before drawing."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd

from trainium_lab.charts.base import PALETTE, TemplateHConcatChart, base, described, row_dicts

_STRATEGIES = ["optimal", "powers of two"]
_STRATEGY_COLOURS = [PALETTE[0], PALETTE[1]]


def _rounded(df: pd.DataFrame, columns) -> pd.DataFrame:
    out = df.copy()
    for col in columns:
        out[col] = out[col].astype(float).map(lambda v: float(f"{v:.4g}"))
    return out


@described(
    'Bar chart of the share of sequences in each length bin, with a vertical rule at every '
    'bucket boundary of each bucketing strategy: a sequence is padded up to the next rule to '
    'its right.')
def buckets_chart(shares: pd.DataFrame, buckets: pd.DataFrame, *,
                  title: str = "Lengths and bucket boundaries") -> alt.LayerChart:
    """Share of sequences per length bin (bars) with each strategy's buckets as rules.

    ``shares``: :func:`trainium_lab.compilation.length_shares` output. ``buckets``:
    columns ``strategy`` ("optimal" / "powers of two") and ``bucket`` (tokens).
    """
    data = _rounded(shares, ["share"]) if isinstance(shares, pd.DataFrame) else shares
    bars = base(data, title=title, height=200).mark_bar(color="#9ab3cf").encode(
        x=alt.X("bin_start:Q", title="sequence length (tokens)"),
        x2=alt.X2("bin_end:Q"),
        # each bin a rect from 0 up to its share (without y2, Vega-Lite drew a thin bar centred
        # on the share, and the first bins' bars pushed the axis below 0 %)
        y=alt.Y("share:Q", title="share of sequences", axis=alt.Axis(format="%"),
                scale=alt.Scale(domainMin=0)),
        y2=alt.Y2Datum(0),
        tooltip=[alt.Tooltip("bin_start:Q", title="from"), alt.Tooltip("bin_end:Q", title="to"),
                 alt.Tooltip("share:Q", format=".2%")],
    )
    rules = alt.Chart(buckets).mark_rule(strokeWidth=2).encode(
        x=alt.X("bucket:Q"),
        color=alt.Color("strategy:N", title="buckets",
                        scale=alt.Scale(domain=_STRATEGIES, range=_STRATEGY_COLOURS)),
        # same field and title as the colour: one legend shows both (legend=None here removed it)
        strokeDash=alt.StrokeDash("strategy:N", title="buckets",
                                  scale=alt.Scale(domain=_STRATEGIES, range=[[1, 0], [5, 3]])),
        tooltip=[alt.Tooltip("strategy:N"), alt.Tooltip("bucket:Q", title="bucket (tokens)")],
    )
    return alt.layer(bars, rules)


@described(
    'Line chart of the padding share of computed tokens against the number of buckets, for '
    'optimal buckets and for powers of two: padding falls as buckets are added, and optimal '
    'buckets pad less than powers of two at the same count.')
def padding_curve_chart(tradeoff: pd.DataFrame, n_buckets: int | None = None, *,
                        title: str = "Padding against the number of buckets") -> alt.LayerChart:
    """Padding fraction against the number of buckets, optimal and powers of two.

    ``tradeoff``: :func:`trainium_lab.compilation.bucket_tradeoff` output (columns
    ``strategy``, ``n_buckets``, ``padding_fraction``, ``buckets``). ``n_buckets``
    draws a rule at the chosen count.
    """
    data = (_rounded(tradeoff[["strategy", "n_buckets", "padding_fraction", "buckets"]],
                     ["padding_fraction"]) if isinstance(tradeoff, pd.DataFrame) else tradeoff)
    lines = base(data, title=title, height=200).mark_line(point=True).encode(
        x=alt.X("n_buckets:Q", title="buckets (= NEFFs to compile and keep loaded)",
                axis=alt.Axis(tickMinStep=1)),
        y=alt.Y("padding_fraction:Q", title="padding share of computed tokens",
                axis=alt.Axis(format="%")),
        color=alt.Color("strategy:N", title="buckets",
                        scale=alt.Scale(domain=_STRATEGIES, range=_STRATEGY_COLOURS)),
        tooltip=[alt.Tooltip("strategy:N"), alt.Tooltip("n_buckets:Q"),
                 alt.Tooltip("padding_fraction:Q", format=".1%", title="padding"),
                 alt.Tooltip("buckets:N")],
    )
    if n_buckets is None:
        return alt.layer(lines)
    chosen = pd.DataFrame({"n_buckets": [n_buckets], "label": [_chosen_label(n_buckets)]})
    return alt.layer(lines, *_chosen_marks(chosen))


def _chosen_label(n_buckets: int) -> str:
    return f"chosen: {int(n_buckets)}"


def _chosen_marks(data) -> list[alt.Chart]:
    """The dotted rule at the chosen number of buckets and its label, at the top of the plot."""
    rule = alt.Chart(data).mark_rule(color="#555555", strokeDash=[2, 2]).encode(x=alt.X("n_buckets:Q"))
    label = alt.Chart(data).mark_text(align="left", baseline="top", dx=3, dy=2, fontSize=10,
                                      color="#555555").encode(
        x=alt.X("n_buckets:Q"), y=alt.YValue(0), text=alt.Text("label:N"))
    return [rule, label]




@functools.lru_cache(maxsize=2)
def _bucketing_template() -> TemplateHConcatChart:
    left = alt.layer(
        buckets_chart(alt.NamedData("shares"), alt.NamedData("buckets")),
    ).properties(width=340)
    # the curve's layer keeps its own data ("curve"): taking its sub-charts out of the layer
    # would leave them without data, and the panel empty
    right = padding_curve_chart(alt.NamedData("curve"), None)
    return TemplateHConcatChart(
        hconcat=[left, alt.layer(right, *_chosen_marks(alt.NamedData("chosen"))).properties(width=300)],
        datasets={"shares": [], "buckets": [], "curve": [], "chosen": []}).freeze()


@described(
    'Two panels: the share of sequences per length bin with the chosen buckets as rules, and '
    'beside it the padding share against the number of buckets, with the chosen count marked.')
def bucketing_chart(shares: pd.DataFrame, buckets: pd.DataFrame, tradeoff: pd.DataFrame,
                    n_buckets: int) -> alt.HConcatChart:
    """The widget's view: lengths with bucket rules beside the padding curve.

    ``shares``, ``buckets``: as in :func:`buckets_chart`; ``tradeoff``: as in
    :func:`padding_curve_chart`; ``n_buckets``: the chosen count (a rule).
    """
    curve = _rounded(tradeoff[["strategy", "n_buckets", "padding_fraction", "buckets"]],
                     ["padding_fraction"])
    return _bucketing_template().with_datasets({
        "shares": row_dicts(_rounded(shares, ["share"])),
        "buckets": row_dicts(buckets[["strategy", "bucket"]]),
        "curve": row_dicts(curve),
        "chosen": [{"n_buckets": int(n_buckets), "label": _chosen_label(n_buckets)}],
    })


@described(
    'Line chart of StableHLO operations against the number of layers: the unrolled Python '
    'loop grows with every layer, while lax.scan stays flat.')
def hlo_size_chart(df: pd.DataFrame) -> alt.Chart:
    """StableHLO operations against depth, Python loop against ``lax.scan``.

    ``df``: :func:`trainium_lab.jaxdemo.loop_vs_scan` output (``depth``, ``style``, ``hlo_ops``).
    """
    return base(df[["depth", "style", "hlo_ops"]], title="Program size: unrolled loop vs lax.scan",
                height=200).mark_line(point=True).encode(
        x=alt.X("depth:Q", title="layers"),
        y=alt.Y("hlo_ops:Q", title="StableHLO operations"),
        color=alt.Color("style:N", title=None, scale=alt.Scale(range=[PALETTE[4], PALETTE[2]])),
        tooltip=[alt.Tooltip("style:N"), alt.Tooltip("depth:Q"), alt.Tooltip("hlo_ops:Q")],
    )


@described(
    'Timeline of a training run by step, one row per compiled graph, each mark a compile or a '
    'cache hit: it shows at which steps the run stops to compile.')
def compile_events_chart(events: pd.DataFrame, *, title: str = "Where the run compiles") -> alt.Chart:
    """Compile and cache-hit events of a run on a step axis, one row per graph.

    ``events``: :attr:`trainium_lab.compilation.RunCompiles.events` (``step``,
    ``graph``, ``event``, ``nodes_compiling``).
    """
    return base(events[["step", "graph", "event", "nodes_compiling"]], title=title,
                height=max(60, 28 * events["graph"].nunique())).mark_point(
        filled=True, size=120).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("graph:N", title=None),
        color=alt.Color("event:N", title=None,
                        scale=alt.Scale(domain=["compile", "cache hit"], range=[PALETTE[2], PALETTE[4]])),
        shape=alt.Shape("event:N", legend=None,
                        scale=alt.Scale(domain=["compile", "cache hit"], range=["diamond", "circle"])),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("graph:N"), alt.Tooltip("event:N"),
                 alt.Tooltip("nodes_compiling:Q", title="nodes compiling")],
    )
