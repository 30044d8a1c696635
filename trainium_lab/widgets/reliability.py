"""Chapter 06 widgets: the checkpoint-interval explorer and goodput with and without auto-resume.

Callbacks collect control values, call ``trainium_lab.reliability`` and a chart
builder from ``trainium_lab.charts.reliability``; nothing else.
"""

from __future__ import annotations

import time

import ipywidgets as W

from trainium_lab import reliability as rel
from trainium_lab.charts.reliability import lost_time_chart
from trainium_lab.units import format_seconds, hour, minute
from trainium_lab.widgets.base import Explorer, FieldError, benchmarked, error_html, number

__all__ = ["checkpoint_explorer", "resume_explorer", "MC_RUNS", "MC_RUN_MTBFS",
           "MC_INTERVAL_FACTORS", "RESUME_DEFAULT_MINUTES"]

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
        "write_s": number("write (s)", write_s, minimum=0, exclusive_minimum=True,
                          tooltip="write (s): time to write one checkpoint"),
        "mtbf_h": number("job MTBF (h)", mtbf_h, minimum=0, exclusive_minimum=True,
                         tooltip="job MTBF (h): mean time between failures of the whole job"),
        "restart_min": number("restart (min)", restart_min, minimum=0,
                              tooltip="restart (min): time from a failure to training again"),
        "mode": W.Dropdown(options=[("synchronous", "sync"), ("asynchronous", "async")],
                           value="sync", description="checkpoint"),
        "snapshot_s": number("snapshot (s)", 10.0, minimum=0,
                             tooltip="snapshot (s): the blocking copy to host memory of an "
                                     "asynchronous checkpoint"),
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

    def relevance(values):
        if values["mode"] == "sync":
            return {"snapshot_s": "a synchronous checkpoint blocks for the whole write; "
                                  "the snapshot applies to asynchronous ones"}
        return {}

    explorer = Explorer(controls, compute, render, describe, columns=3, relevance=relevance)
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
            status.value = error_html(str(exc) if isinstance(exc, FieldError) else
                                      f"Monte Carlo: {exc}")
            return
        state["key"], state["table"] = tuple(sorted(values.items())), table
        status.value = f"done in {time.perf_counter() - start:.2f} s"
        explorer.update()

    button.on_click(run_monte_carlo)
    explorer.run_monte_carlo = run_monte_carlo  # for tests and notebooks
    explorer.widget = W.VBox([explorer.widget, W.HBox([button, status])])
    return explorer


#: recovery times the explorer starts from, in minutes: assumptions (AWS publishes none of them)
RESUME_DEFAULT_MINUTES = {"manual_detect_min": 60.0, "auto_detect_min": 5.0, "swap_min": 10.0,
                          "provision_min": 30.0, "restart_compile_min": 0.0}


def _resume_inputs(model: str, n_params_b: float, fsx_tier: float, storage_gib: float) -> dict:
    from trainium_lab.units import GiB

    state = rel.checkpoint_bytes(n_params_b * 1e9)
    bandwidth = rel.fsx_lustre_bytes_per_s(storage_gib * GiB, fsx_tier)
    return {"state_bytes": state, "bandwidth": bandwidth,
            "write_s": rel.checkpoint_write_s(state, bandwidth)}


@benchmarked(("n_spares", 0), ("deep_check", False), ("chip_mtbf_days", 500.0),
             ("fsx_tier", 125.0), ("restart_compile_min", 40.0), ("model", "llama3-405b"))
def resume_explorer(model: str = "llama3-70b", n_spares: int = 2) -> Explorer:
    """Goodput against job size for a manual restart, auto-resume, and auto-resume with spares.

    The checkpoint is the model's training state without gradients (chapter 04's
    recipe), written to an FSx for Lustre file system of the chosen size and tier;
    the job MTBF is the chip MTBF over the chips; each recovery policy's restart
    time comes from :func:`trainium_lab.reliability.resume_recovery`. The deep
    health check of a new node is AWS's "about a couple of hours"; every other
    time is an assumption the learner sets.
    """
    from trainium_lab import sizing
    from trainium_lab.charts.reliability import goodput_vs_size_chart
    from trainium_lab.units import GB, day

    presets = {p.key: p for p in sizing.presets()}
    health_s = rel.deep_health_check_s()
    proxy_days = round(rel.llama3_summary().per_gpu_mtbf_s / day)
    tiers = rel.fsx_throughput_options_mb_per_s_per_tib()
    m = RESUME_DEFAULT_MINUTES
    controls = {
        "model": W.Dropdown(options=[(p.name, p.key) for p in presets.values()], value=model,
                            description="model"),
        "fsx_tier": W.Dropdown(options=[(f"{t:g} MB/s per TiB", t) for t in tiers],
                               value=tiers[2], description="FSx tier"),
        # FSx sizes: 1,200 GiB, then multiples of 2,400 GiB (24,000 GiB is the console's "24 TiB")
        "storage_gib": number("FSx (GiB)", 24_000.0, minimum=0, exclusive_minimum=True,
                              tooltip="FSx (GiB): size of the FSx for Lustre file system"),
        "chip_mtbf_days": number("chip MTBF (d)", float(proxy_days), minimum=0,
                                 exclusive_minimum=True,
                                 tooltip="chip MTBF (d): mean time between failures of one chip"),
        "n_spares": W.IntSlider(value=n_spares, min=0, max=16, description="spare nodes"),
        "deep_check": W.Checkbox(value=True, description="deep health check",
                                 indent=False),
        "manual_detect_min": number("manual (min)", m["manual_detect_min"], minimum=0,
                                    tooltip="manual (min): time for a person to notice a failure"),
        "auto_detect_min": number("agent (min)", m["auto_detect_min"], minimum=0,
                                  tooltip="agent (min): time for the auto-resume agent to notice"),
        "provision_min": number("provision (min)", m["provision_min"], minimum=0,
                                tooltip="provision (min): time to get a replacement node"),
        "swap_min": number("swap (min)", m["swap_min"], minimum=0,
                           tooltip="swap (min): time to swap in a spare node"),
        "restart_compile_min": number("compile (min)", m["restart_compile_min"], minimum=0,
                                      tooltip="compile (min): compile time on restart (0: cached)"),
    }

    def compute(model, fsx_tier, storage_gib, chip_mtbf_days, n_spares, deep_check,
                manual_detect_min, auto_detect_min, provision_min, swap_min, restart_compile_min):
        preset = presets[model]
        io = _resume_inputs(model, preset.n_params / 1e9, fsx_tier, storage_gib)
        df = rel.goodput_vs_job_size(
            chip_mtbf_days * day, io["write_s"], manual_detect_s=manual_detect_min * minute,
            auto_detect_s=auto_detect_min * minute, swap_s=swap_min * minute,
            provision_s=provision_min * minute, health_check_s=health_s if deep_check else 0.0,
            load_s=io["write_s"], compile_s=restart_compile_min * minute, n_spares=n_spares)
        return {"df": df, "io": io, "preset": preset, "n_spares": n_spares}

    def render(result):
        return goodput_vs_size_chart(result["df"])

    def describe(result) -> str:
        io = result["io"]
        big = result["df"].tail(len(rel.RESUME_POLICIES))  # the largest job, one row per policy
        goodput = dict(zip(big["policy"].tolist(), big["goodput"].tolist()))
        best = max(goodput, key=goodput.get)
        text = (f"{result['preset'].name}: checkpoint <b>{io['state_bytes'] / GB:,.0f} GB</b> "
                f"(14 B/param) at <b>{io['bandwidth'] / GB:,.1f} GB/s</b> = "
                f"<b>{format_seconds(io['write_s'])}</b> to write or load. "
                f"At {int(big['n_chips'].iloc[0]):,} chips (MTBF "
                f"{format_seconds(float(big['mtbf_s'].iloc[0]))}): "
                + ", ".join(f"{p} <b>{g:.1%}</b>" for p, g in goodput.items())
                + f"; best: <b>{best}</b>.")
        short = float(big["shortfall_probability"].iloc[-1])
        text += (f"<br>With {result['n_spares']} spares a failure finds none free "
                 f"<b>{short:.0%}</b> of the time at that size. <i>Deep health check: AWS's "
                 f"\"about a couple of hours\"; all other times are assumptions.</i>")
        return text

    def relevance(values):
        if values["n_spares"] == 0:
            return {"swap_min": "with no spare nodes there is nothing to swap in"}
        return {}

    return Explorer(controls, compute, render, describe, columns=3, relevance=relevance)
