"""Charts for chapter 11 (the capstone). Encodings only: every number comes from
:mod:`trainium_lab.planning`; values are rounded to what a chart can show before drawing."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd

from trainium_lab.charts.base import PALETTE, TemplateHConcatChart, base, described

__all__ = ["cost_breakdown_chart", "sensitivity_chart", "comparison_chart", "plan_view_chart",
           "INPUT_LABELS"]

#: readable names of the sensitivity table's inputs
INPUT_LABELS = {"mfu": "MFU", "usd_per_hour": "price per instance-hour", "chip_mtbf_s": "chip MTBF",
                "checkpoint_write_bytes_per_s": "checkpoint bandwidth", "restart_s": "restart time",
                "compile_s": "compile time per graph"}
_PARTS = ["training steps", "checkpoint writes", "rework after failures", "restarts",
          "first-launch compiles", "pre-compilation (one instance)"]
_PART_COLOURS = ["#1f3b5c", PALETTE[1], PALETTE[2], PALETTE[6], PALETTE[4], PALETTE[3]]
_FAMILIES = ["Trainium", "GPU"]


def _sig(x: float) -> float:
    return float(f"{x:.4g}")


def _cost_records(cost: pd.DataFrame) -> list[dict]:
    return [{"part": p, "usd": _sig(u), "instance_hours": _sig(h), "share": _sig(s)}
            for p, u, h, s in zip(cost["part"], cost["usd"], cost["instance_hours"], cost["share"])]


def _sens_records(sens: pd.DataFrame, base_cost: float) -> list[dict]:
    out = []
    for r in sens.itertuples():
        lo, hi = sorted((r.cost_low_usd, r.cost_high_usd))
        out.append({"input": INPUT_LABELS.get(r.input, r.input), "low": _sig(lo), "high": _sig(hi),
                    "base": _sig(base_cost), "swing": _sig(r.swing_usd)})
    return out


@described(
    'Dot plot on a log scale of dollars by part of the run (training steps, checkpoints, '
    'failures, compiles and the rest), so that parts a thousand times smaller than the steps '
    'stay visible.')
def cost_breakdown_chart(cost: pd.DataFrame | alt.NamedData, *, title: str = "Where the money goes",
                         width: int = 300) -> alt.LayerChart:
    """USD by part of the run, one dot per part (``RunPlan.cost_table()``: ``part, usd,
    instance_hours, share``), on a log scale so that losses a thousand times smaller than the
    training steps stay visible; parts that cost nothing are left out."""
    data = alt.InlineData(values=_cost_records(cost)) if isinstance(cost, pd.DataFrame) else cost
    dots = base(data, title=title, width=width, height=180).transform_filter("datum.usd > 0").mark_circle(
        size=110, opacity=1).encode(
        x=alt.X("usd:Q", title="USD (log scale)", scale=alt.Scale(type="log")),
        y=alt.Y("part:N", sort=_PARTS, title=None, axis=alt.Axis(labelLimit=220)),
        color=alt.Color("part:N", scale=alt.Scale(domain=_PARTS, range=_PART_COLOURS), legend=None),
        tooltip=[alt.Tooltip("part:N"), alt.Tooltip("usd:Q", format=",.0f", title="USD"),
                 alt.Tooltip("instance_hours:Q", format=",.1f", title="instance-hours"),
                 alt.Tooltip("share:Q", format=".2%")],
    )
    labels = dots.mark_text(align="left", dx=9, fontSize=10).encode(
        text=alt.Text("usd:Q", format=",.0f"), color=alt.ColorValue("#333333"))
    return alt.layer(dots, labels)


@described(
    "Tornado chart: for each uncertain input, a bar from the run's cost at its low value to "
    "the cost at its high value, the largest swing on top, with the plan's cost as a rule.")
def sensitivity_chart(sens: pd.DataFrame | alt.NamedData, base_cost: float | None = None, *,
                      title: str = "Which input moves the cost most", width: int = 300) -> alt.LayerChart:
    """A tornado: for each uncertain input, the cost at its low and high value (a bar from one to
    the other), largest swing on top, with the plan's cost as a rule.

    ``sens``: ``RunPlan.sensitivity`` (with ``base_cost`` the plan's ``cost_usd``).
    """
    data = (alt.InlineData(values=_sens_records(sens, base_cost)) if isinstance(sens, pd.DataFrame)
            else sens)
    order = alt.EncodingSortField(field="swing", order="descending")
    bars = base(data, title=title, width=width, height=180).mark_bar(color=PALETTE[0]).encode(
        x=alt.X("low:Q", title="cost of the run (USD)", scale=alt.Scale(zero=False)),
        x2=alt.X2("high:Q"),
        y=alt.Y("input:N", sort=order, title=None, axis=alt.Axis(labelLimit=200)),
        tooltip=[alt.Tooltip("input:N"), alt.Tooltip("low:Q", format=",.0f", title="lower cost"),
                 alt.Tooltip("high:Q", format=",.0f", title="higher cost"),
                 alt.Tooltip("swing:Q", format=",.0f", title="swing (USD)")],
    )
    rule = alt.Chart(data).mark_rule(color="black", strokeDash=[3, 2]).encode(x=alt.X("base:Q"))
    # the rule says what it is, once, above the bars
    label = alt.Chart(data).transform_window(n="row_number()").transform_filter("datum.n == 1").mark_text(
        baseline="bottom", dy=-2, fontSize=10).encode(x=alt.X("base:Q"), y=alt.YValue(0),
                                                      text=alt.TextValue("this plan"))
    return alt.layer(bars, rule, label)




@functools.lru_cache(maxsize=1)
def _plan_view_template() -> TemplateHConcatChart:
    # two 280 px panels with their labels fit a 1,008 px notebook column (two of 300 did not)
    left = cost_breakdown_chart(alt.NamedData("cost"), width=280)
    right = sensitivity_chart(alt.NamedData("sens"), width=280)
    return TemplateHConcatChart(hconcat=[left, right], datasets={"cost": [], "sens": []}).freeze()


@described(
    "Two panels: where the run's money goes by part, beside the sensitivity tornado of the "
    'inputs that move the cost most.')
def plan_view_chart(cost: pd.DataFrame, sens: pd.DataFrame, base_cost: float) -> alt.HConcatChart:
    """The worksheet's view: where the money goes beside the sensitivity tornado."""
    return _plan_view_template().with_datasets({"cost": _cost_records(cost),
                                                "sens": _sens_records(sens, base_cost)})


@described(
    'Horizontal bars of the cost per million trained tokens by platform, coloured by family; '
    'platforms without a published price are left out.')
def comparison_chart(table: pd.DataFrame, *, title: str = "Cost per million trained tokens") -> alt.Chart:
    """Cost per million trained tokens by platform (``planning.compare_platforms`` output), coloured
    by family; platforms without a price are left out (their bar would be a guess)."""
    d = table[["platform", "family", "mfu", "usd_per_chip_hour", "cost_per_million_tokens_usd",
               "price_basis"]].dropna(subset=["cost_per_million_tokens_usd"]).copy()
    for col in ("mfu", "usd_per_chip_hour", "cost_per_million_tokens_usd"):
        d[col] = [_sig(v) for v in d[col]]
    return base(d, title=title, height=30 * max(len(d), 1) + 20).mark_bar().encode(
        x=alt.X("cost_per_million_tokens_usd:Q", title="USD per million trained tokens"),
        y=alt.Y("platform:N", sort=None, title=None),
        color=alt.Color("family:N", scale=alt.Scale(domain=_FAMILIES, range=[PALETTE[4], PALETTE[0]]),
                        title=None),
        tooltip=[alt.Tooltip("platform:N"), alt.Tooltip("mfu:Q", format=".0%", title="MFU"),
                 alt.Tooltip("usd_per_chip_hour:Q", format=",.3f", title="USD per accelerator-hour"),
                 alt.Tooltip("cost_per_million_tokens_usd:Q", format=",.3f"),
                 alt.Tooltip("price_basis:N", title="price")],
    )
