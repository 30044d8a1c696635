"""Chapter 06 widgets: the checkpoint-interval explorer and a searchable failure-mode table.

Callbacks collect control values, call ``trainium_lab.reliability`` and a chart
builder from ``trainium_lab.charts.reliability``; nothing else.
"""

from __future__ import annotations

import html
import time

import ipywidgets as W

from trainium_lab import reliability as rel
from trainium_lab.charts.reliability import lost_time_chart
from trainium_lab.units import format_seconds, hour, minute
from trainium_lab.widgets.base import Explorer, benchmarked, error_html

__all__ = ["checkpoint_explorer", "failure_modes_explorer", "MC_RUNS", "MC_RUN_MTBFS",
           "MC_INTERVAL_FACTORS"]

#: Monte Carlo settings of the button: runs per interval, run length in MTBFs, intervals / Young
MC_RUNS = 20_000
MC_RUN_MTBFS = 50
MC_INTERVAL_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


def _inputs(write_s: float, mtbf_h: float, restart_min: float, mode: str, snapshot_s: float):
    delta = rel.checkpoint_cost_s(write_s, mode=mode, snapshot_s=snapshot_s)
    return delta, rel.job_mtbf_s(mtbf_h * hour, 1), restart_min * minute


@benchmarked(("write_s", 300.0), ("mtbf_h", 3.1), ("restart_min", 30.0), ("mode", "async"),
             ("snapshot_s", 20.0))
def checkpoint_explorer(write_s: float = 90.0, mtbf_h: float = 24.0, restart_min: float = 10.0
                        ) -> Explorer:
    """Checkpoint cost, job MTBF, restart time and sync/async against the lost-time curve.

    Young's, Daly's and the exact optimum are marked; a button runs a Monte Carlo
    (``MC_RUNS`` runs of ``MC_RUN_MTBFS`` MTBFs of work at five intervals) and
    adds its results to the same chart.
    """
    state: dict = {"key": None, "table": None}
    controls = {
        "write_s": W.FloatText(value=write_s, description="write (s)", step=10.0),
        "mtbf_h": W.FloatText(value=mtbf_h, description="job MTBF (h)", step=1.0),
        "restart_min": W.FloatText(value=restart_min, description="restart (min)", step=5.0),
        "mode": W.Dropdown(options=[("synchronous", "sync"), ("asynchronous", "async")],
                           value="sync", description="checkpoint"),
        "snapshot_s": W.FloatText(value=10.0, description="snapshot (s)", step=5.0),
    }

    def compute(**values):
        delta, mtbf_s, restart_s = _inputs(**values)
        key = tuple(sorted(values.items()))
        return {
            "values": values, "delta": delta, "mtbf_s": mtbf_s, "restart_s": restart_s,
            "curve": rel.lost_time_curve(delta, mtbf_s, restart_s),
            "markers": rel.interval_markers(delta, mtbf_s, restart_s),
            "simulated": state["table"] if state["key"] == key else None,
        }

    def render(result):
        return lost_time_chart(result["curve"], result["markers"], result["simulated"])

    def describe(result) -> str:
        m = result["markers"].set_index("method")
        v = result["values"]
        text = (f"Blocking checkpoint cost δ = <b>{format_seconds(result['delta'])}</b>. "
                f"Young: <b>{format_seconds(m.interval_s['Young'])}</b>, "
                f"Daly: <b>{format_seconds(m.interval_s['Daly'])}</b> between checkpoints; "
                f"at the optimum <b>{m.lost_fraction['exact optimum']:.1%}</b> of wall time is lost.")
        if v["mode"] == "async" and m.interval_s["exact optimum"] < v["write_s"]:
            text += (" <i>The optimum is shorter than the background upload "
                     f"({format_seconds(v['write_s'])}): uploads would pile up.</i>")
        sim = result["simulated"]
        if sim is not None:
            worst = (sim.lost_fraction - sim.analytic).abs().max()
            text += (f"<br>Monte Carlo ({int(sim.runs.iloc[0]):,} runs per point): largest gap to "
                     f"the formula {worst:.3%}.")
        return text

    explorer = Explorer(controls, compute, render, describe, columns=3)
    button = W.Button(description=f"Run Monte Carlo ({MC_RUNS:,} runs × {len(MC_INTERVAL_FACTORS)})",
                      layout=W.Layout(width="max-content"))
    status = W.HTML()

    def run_monte_carlo(_button=None):
        values = explorer.values()
        try:
            delta, mtbf_s, restart_s = _inputs(**values)
            young = rel.young_interval_s(delta, mtbf_s)
            intervals = [f * young for f in MC_INTERVAL_FACTORS]
            status.value = "running…"
            start = time.perf_counter()
            table = rel.simulated_lost_fraction(intervals, delta, mtbf_s, restart_s,
                                                work_s=MC_RUN_MTBFS * mtbf_s, n_runs=MC_RUNS)
        except ValueError as exc:
            status.value = error_html(str(exc))
            return
        state["key"], state["table"] = tuple(sorted(values.items())), table
        status.value = f"done in {time.perf_counter() - start:.2f} s"
        explorer.update()

    button.on_click(run_monte_carlo)
    explorer.run_monte_carlo = run_monte_carlo  # for tests and notebooks
    explorer.widget = W.VBox([explorer.widget, W.HBox([button, status])])
    return explorer


def _table_html(df) -> str:
    if df.empty:
        return "<i>No failure mode matches.</i>"
    head = "".join(f"<th style='text-align:left'>{html.escape(c)}</th>"
                   for c in ("failure mode", "symptom", "cause", "fix"))
    rows = "".join(
        "<tr>" + "".join(f"<td style='text-align:left;vertical-align:top'>{html.escape(str(v))}</td>"
                         for v in (r.failure_mode, r.symptom, r.cause, r.fix)) + "</tr>"
        for r in df.itertuples())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


@benchmarked(("query", "hang"))
def failure_modes_explorer(query: str = "") -> Explorer:
    """A search box over the operational failure modes (symptom, cause, fix)."""
    controls = {"query": W.Text(value=query, description="search",
                                placeholder="e.g. hang, compile, slow")}
    return Explorer(controls, lambda query: rel.failure_modes(query), lambda df: None,
                    lambda df: f"{len(df)} of {len(rel.FAILURE_MODES)} failure modes"
                               f"<br>{_table_html(df)}", columns=1)
