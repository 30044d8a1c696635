"""Charts for chapter 06 (failure modes). Encodings only: the numbers come from
``trainium_lab.reliability``."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd

from trainium_lab._validate import instance
from trainium_lab.charts.base import PALETTE, TemplateLayerChart, base, described, row_dicts
from trainium_lab.reliability import STATUSES, BlastRadius

_STATUS_COLOURS = ["#d55e00", "#e69f00", "#bbbbbb"]
_COMPONENT_ORDER = ["checkpoint writing", "rework", "restart", "total lost"]
_COMPONENT_COLOURS = [PALETTE[0], PALETTE[1], PALETTE[6], "#333333"]
_METHODS = ["Young", "Daly", "exact optimum"]


@described(
    'One small grid per instance, each square a chip coloured by its status: failed, replaced '
    'with it, or stalled while healthy and waiting; it shows how far one failure reaches.')
def blast_radius_chart(radius: BlastRadius, *, title: str | None = None) -> alt.Chart:
    """One small square grid per instance, each chip coloured by its status.

    ``radius`` is :func:`trainium_lab.reliability.blast_radius` output; its ``chips`` table
    (``chip``, ``instance``, ``x``, ``y``, ``status``) is drawn.
    """
    radius = instance("radius", radius, BlastRadius, "a BlastRadius from reliability.blast_radius")
    return alt.Chart(radius.chips, width=90, height=90).mark_rect(
        stroke="white", strokeWidth=2).encode(
        x=alt.X("x:O", title=None, axis=None),
        y=alt.Y("y:O", title=None, axis=None),
        color=alt.Color("status:N", title="chip status",
                        scale=alt.Scale(domain=list(STATUSES), range=_STATUS_COLOURS)),
        tooltip=[alt.Tooltip("chip:Q"), alt.Tooltip("instance:Q"), alt.Tooltip("status:N")],
    ).facet(column=alt.Column("instance:O", title="instance (ring position)"),
            title=title or "")


@described(
    "Log-log line of a job's mean time between failures against the chips in the job, with "
    'labelled reference points: doubling the job halves its MTBF.')
def mtbf_vs_size_chart(curve: pd.DataFrame, points: pd.DataFrame) -> alt.LayerChart:
    """Job MTBF against chips in the job, log-log, with labelled reference points.

    ``curve``: columns ``n_chips``, ``mtbf_h``, ``label`` (from
    :func:`trainium_lab.reliability.mtbf_vs_job_size`). ``points``: columns
    ``n_chips``, ``mtbf_h``, ``label`` (e.g. the Llama 3 figure).
    """
    x = alt.X("n_chips:Q", title="chips (or GPUs) in the job", scale=alt.Scale(type="log"))
    y = alt.Y("mtbf_h:Q", title="job MTBF (hours)", scale=alt.Scale(type="log"))
    line = base(curve, title="Job MTBF falls as 1/n").mark_line(point=True, color=PALETTE[0]).encode(
        x=x, y=y, tooltip=[alt.Tooltip("label:N"), alt.Tooltip("n_chips:Q", format=","),
                           alt.Tooltip("mtbf_h:Q", format=",.1f", title="MTBF (h)")])
    dots = alt.Chart(points).mark_point(shape="diamond", size=140, filled=True,
                                        color=PALETTE[2]).encode(
        x=x, y=y, tooltip=[alt.Tooltip("label:N"), alt.Tooltip("n_chips:Q", format=","),
                           alt.Tooltip("mtbf_h:Q", format=",.2f", title="MTBF (h)")])
    text = alt.Chart(points).mark_text(align="left", dx=8, dy=-8, color=PALETTE[2]).encode(
        x=x, y=y, text=alt.Text("label:N"))
    return alt.layer(line, dots, text)




@functools.lru_cache(maxsize=4)
def _lost_time_template(title: str) -> TemplateLayerChart:
    """The lost-time chart's layers with named (empty) data sets, built once.

    Building and validating an Altair layer chart costs tens of milliseconds; a
    widget only needs new data, so :func:`lost_time_chart` copies this template
    and attaches its tables as ``datasets``.
    """
    x = alt.X("interval_min:Q", title="minutes of compute between checkpoints",
              scale=alt.Scale(type="log", nice=False))
    at = alt.Tooltip("interval_min:Q", format=",.1f", title="minutes")
    heading = alt.TitleParams(title, subtitle="red squares: Monte Carlo, with 95 % intervals")
    lines = base(alt.NamedData("curve"), title=heading).mark_line().encode(
        x=x,
        y=alt.Y("fraction:Q", title="share of wall time", axis=alt.Axis(format="%")),
        color=alt.Color("component:N", title=None,
                        scale=alt.Scale(domain=_COMPONENT_ORDER, range=_COMPONENT_COLOURS)),
        strokeDash=alt.StrokeDash("component:N", title=None,
                                  scale=alt.Scale(domain=_COMPONENT_ORDER,
                                                  range=[[4, 3], [4, 3], [4, 3], [1, 0]])),
        tooltip=[alt.Tooltip("component:N"), at, alt.Tooltip("fraction:Q", format=".2%")],
    ).transform_fold(_COMPONENT_ORDER, as_=["component", "fraction"])
    mtips = [alt.Tooltip("method:N", title="optimum"), at,
             alt.Tooltip("lost_fraction:Q", format=".2%", title="lost")]
    rules = alt.Chart(alt.NamedData("optima")).mark_rule(strokeDash=[2, 2], color="#555555").encode(
        x=x, tooltip=mtips)
    dots = alt.Chart(alt.NamedData("optima")).mark_point(filled=True, size=70,
                                                         color="#333333").encode(
        x=x, y=alt.Y("lost_fraction:Q"),
        shape=alt.Shape("method:N", title="optimum", scale=alt.Scale(domain=_METHODS)),
        tooltip=mtips)
    err = alt.Chart(alt.NamedData("monte_carlo")).mark_rule(color=PALETTE[2],
                                                            strokeWidth=2).encode(
        x=x, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    sim = alt.Chart(alt.NamedData("monte_carlo")).mark_point(
        color=PALETTE[2], size=60, shape="square", filled=True).encode(
        x=x, y=alt.Y("lost_fraction:Q"),
        tooltip=[at, alt.Tooltip("lost_fraction:Q", format=".3%", title="Monte Carlo lost"),
                 alt.Tooltip("low:Q", format=".3%", title="95% low"),
                 alt.Tooltip("high:Q", format=".3%", title="95% high")])
    # the Monte Carlo intervals are named by the subtitle (the squares and rules carry no legend)
    return TemplateLayerChart(layer=[lines, rules, dots, err, sim],
                              usermeta={"explained": {"rule:monte_carlo": "with 95 % intervals"}},
                              datasets={"curve": [], "optima": [], "monte_carlo": []}).freeze()


@described(
    'Lost-time parts against the checkpoint interval, with their sum: writing checkpoints '
    'costs more at short intervals, rework after a failure more at long ones, and the marked '
    'optimum sits between.')
def lost_time_chart(curve: pd.DataFrame, markers: pd.DataFrame,
                    simulated: pd.DataFrame | None = None, *,
                    title: str = "Expected share of wall time lost") -> alt.LayerChart:
    """Lost-time components against the checkpoint interval, with optima marked.

    ``curve``: :func:`trainium_lab.reliability.lost_time_curve` output (one row per
    interval, one column per component; folded into long form by Vega-Lite).
    ``markers``: :func:`trainium_lab.reliability.interval_markers` output
    (``method``, ``interval_min``, ``lost_fraction``). ``simulated`` (optional):
    columns ``interval_min``, ``lost_fraction``, ``low``, ``high`` from a Monte Carlo,
    drawn as squares with 95 % bars.
    """
    sim = [] if simulated is None else simulated[["interval_min", "lost_fraction", "low",
                                                  "high"]].to_dict("records")
    return _lost_time_template(title).with_datasets({
        "curve": curve[["interval_min", *_COMPONENT_ORDER]].to_dict("records"),
        "optima": markers[["method", "interval_min", "lost_fraction"]].to_dict("records"),
        "monte_carlo": sim,
    })


@described('Horizontal bars of interruptions per root cause, coloured by category.')
def interruptions_chart(df: pd.DataFrame) -> alt.Chart:
    """Horizontal bars of interruptions per root cause, coloured by category.

    ``df``: :func:`trainium_lab.reliability.llama3_interruptions` output.
    """
    total = int(df["interruptions"].sum())
    days = float(df["period_days"].iloc[0])
    title = f"Llama 3 405B: {total} unexpected interruptions in {days:g} days"
    return base(df, height=320, title=title).mark_bar().encode(
        x=alt.X("interruptions:Q", title="interruptions"),
        y=alt.Y("component:N", title=None, sort="-x"),
        color=alt.Color("category:N", title="category", scale=alt.Scale(range=PALETTE)),
        tooltip=[alt.Tooltip("component:N"), alt.Tooltip("category:N"),
                 alt.Tooltip("interruptions:Q"),
                 alt.Tooltip("share:Q", format=".1%", title=f"share of {total} (from counts)"),
                 alt.Tooltip("printed_percent:Q", title="% printed in the paper")],
    )


@described(
    'Histogram of the simulated goodput per run: how much of the wall-clock time went into '
    'training steps that were kept.')
def goodput_histogram_chart(df: pd.DataFrame) -> alt.Chart:
    """Histogram of simulated goodput per run (column ``goodput``)."""
    return base(df, height=180, title="Goodput of each simulated run").mark_bar(
        color=PALETTE[0]).encode(
        x=alt.X("goodput:Q", bin=alt.Bin(maxbins=40), title="useful work / wall time",
                axis=alt.Axis(format="%")),
        y=alt.Y("count():Q", title="runs"),
    )


# ------------------------------------------------------ traces and automatic resume (issue 15)

_RANK_COLOURS = ["#0072b2", "#e8e8e8", "#56b4e9", "#d55e00", "#e69f00", "#bbbbbb"]
_POLICY_COLOURS = [PALETTE[9], PALETTE[1], PALETTE[4]]
_LOG_MARKS = ["job started", "checkpoint loaded", "failure"]
_LOG_MARK_COLOURS = [PALETTE[6], PALETTE[4], PALETTE[2]]


@described(
    'Scatter of step time against step number from a training log: a flat band with periodic '
    'spikes or jumps shows where time goes.')
def step_time_chart(steps: pd.DataFrame, *, title: str = "Step time, as the training log prints it"
                    ) -> alt.Chart:
    """Step time against step number: one point per ``"step done"`` line of a log.

    ``steps``: rows of :func:`trainium_lab.reliability.timeline_log` with columns
    ``step`` and ``step_time_s`` (the caller keeps the ``"step done"`` lines).
    """
    return base(steps, title=title, height=200).mark_line(
        color=PALETTE[0], strokeWidth=1.2, interpolate="step-after").encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("step_time_s:Q", title="seconds since the previous step"),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("step_time_s:Q", format=",.1f", title="s")],
    )


@described(
    'Steps completed against wall-clock hours, with a vertical rule at every restart: flat '
    'stretches are time lost to failures and restarts.')
def progress_chart(log: pd.DataFrame, *, title: str = "Training progress and log events"
                   ) -> alt.LayerChart:
    """Steps completed against wall-clock hours, with vertical rules at restart log lines.

    ``log``: :func:`trainium_lab.reliability.timeline_log` output (all lines); the
    line joins the ``"job started"``, ``"checkpoint loaded"`` and ``"step done"``
    lines of each attempt (flat while nothing completes), the rules mark
    ``"job started"``, ``"checkpoint loaded"`` and ``"failure"``. Wall time in hours.
    """
    hours = alt.X("wall_h:Q", title="wall-clock hours")
    line = base(log, title=title, height=220).transform_filter(
        alt.FieldOneOfPredicate(field="event", oneOf=["job started", "checkpoint loaded",
                                                      "step done"])).transform_calculate(
        wall_h="datum.wall_s / 3600").mark_line(color=PALETTE[0]).encode(
        x=hours, y=alt.Y("step:Q", title="last step completed"),
        detail=alt.Detail("attempt:N"),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("wall_h:Q", format=".2f", title="hour")])
    rules = alt.Chart(log).transform_filter(
        alt.FieldOneOfPredicate(field="event", oneOf=_LOG_MARKS)).transform_calculate(
        wall_h="datum.wall_s / 3600").mark_rule(strokeDash=[3, 2]).encode(
        x=hours,
        color=alt.Color("event:N", title="log line",
                        scale=alt.Scale(domain=_LOG_MARKS, range=_LOG_MARK_COLOURS)),
        tooltip=[alt.Tooltip("event:N"), alt.Tooltip("wall_h:Q", format=".2f", title="hour")])
    return alt.layer(line, rules)


@described(
    'Gantt chart of a collective trace: one row per rank, coloured segments over time for '
    'computing, waiting for other ranks, transferring, and being blocked or exited; a rank '
    'that never arrives leaves the others waiting.')
def collective_trace_chart(df: pd.DataFrame, *, title: str = "What each rank is doing"
                           ) -> alt.Chart:
    """One row per rank, coloured segments over time (a Gantt chart of a collective trace).

    ``df``: :func:`trainium_lab.reliability.collective_trace` output (``rank``,
    ``step``, ``start_s``, ``end_s``, ``state``).
    """
    from trainium_lab.reliability import RANK_STATES

    return base(df, title=title, height=22 * int(df["rank"].nunique()) + 20).mark_bar(
        height=16).encode(
        x=alt.X("start_s:Q", title="seconds"), x2=alt.X2("end_s:Q"),
        y=alt.Y("rank:O", title="rank"),
        color=alt.Color("state:N", title="rank is", scale=alt.Scale(domain=list(RANK_STATES),
                                                                    range=_RANK_COLOURS)),
        tooltip=[alt.Tooltip("rank:O"), alt.Tooltip("step:Q"), alt.Tooltip("state:N"),
                 alt.Tooltip("start_s:Q", format=",.1f"), alt.Tooltip("end_s:Q", format=",.1f")],
    )


@functools.lru_cache(maxsize=4)
def _goodput_template(title: str) -> TemplateLayerChart:
    """The goodput chart with a named (empty) data set, built once for fast widget updates."""
    from trainium_lab.reliability import RESUME_POLICIES

    line = base(alt.NamedData("goodput"), title=title).mark_line(point=True).encode(
        x=alt.X("n_chips:Q", title="chips in the job", scale=alt.Scale(type="log")),
        y=alt.Y("goodput:Q", title="goodput (useful share of wall time)",
                axis=alt.Axis(format="%"), scale=alt.Scale(zero=False)),
        color=alt.Color("policy:N", title="recovery",
                        scale=alt.Scale(domain=list(RESUME_POLICIES), range=_POLICY_COLOURS)),
        tooltip=[alt.Tooltip("label:N", title="job"), alt.Tooltip("policy:N"),
                 alt.Tooltip("goodput:Q", format=".1%"),
                 alt.Tooltip("restart_s:Q", format=",.0f", title="restart R (s)"),
                 alt.Tooltip("shortfall_probability:Q", format=".1%", title="no spare free")],
    )
    return TemplateLayerChart(layer=[line], datasets={"goodput": []}).freeze()


@described(
    'Goodput against chips in the job on a log scale, one line per recovery policy: goodput '
    'falls as the job grows, and the policies differ in how fast.')
def goodput_vs_size_chart(df: pd.DataFrame, *, title: str = "Goodput as the job grows"
                          ) -> alt.LayerChart:
    """Goodput against chips in the job (log scale), one line per recovery policy.

    ``df``: :func:`trainium_lab.reliability.goodput_vs_job_size` output.
    """
    cols = ["n_chips", "label", "policy", "goodput", "restart_s", "shortfall_probability"]
    return _goodput_template(title).with_datasets({"goodput": row_dicts(df, cols)})


@described(
    'Stacked horizontal bars of the minutes each part of a restart takes (detection, '
    'replacement, loading, compiling), one bar per recovery policy.')
def recovery_parts_chart(df: pd.DataFrame, *, title: str = "Where a restart's time goes"
                         ) -> alt.Chart:
    """Stacked horizontal bars: minutes of each part of the restart, per policy.

    ``df``: long table with ``policy``, ``part`` and ``minutes``.
    """
    parts = ["detect", "replace", "load", "compile"]
    return base(df, title=title, height=110).transform_calculate(
        part_order=f"indexof({parts!r}, datum.part)").mark_bar().encode(
        x=alt.X("sum(minutes):Q", title="minutes from failure to computing again"),
        y=alt.Y("policy:N", title=None, sort=None),
        color=alt.Color("part:N", title="part", scale=alt.Scale(domain=parts,
                                                                range=PALETTE[:4])),
        order=alt.Order("part_order:Q"),
        tooltip=[alt.Tooltip("policy:N"), alt.Tooltip("part:N"),
                 alt.Tooltip("minutes:Q", format=",.1f")],
    )
