"""Chapter 11 widget: the planning worksheet — inputs in, the plan out, updating live.

The layout search (model, system, count or deadline, global batch, LNC) runs on the **Plan**
button: chapter 05's planner takes 0.1–2 s. Everything else — token budget, MFU, price, failure
rate, checkpoint bandwidth, restart and compile times, cache — updates the plan at once, keeping
the layout (re-evaluated at the new MFU). The callback calls :func:`trainium_lab.planning.plan_run`
and :func:`trainium_lab.charts.planning.plan_view_chart`; nothing else.
"""

from __future__ import annotations

import ipywidgets as W

from trainium_lab import planning, sizing, topology
from trainium_lab.charts.planning import INPUT_LABELS, plan_view_chart
from trainium_lab.units import GB, day, minute
from trainium_lab.views.planning import inline_html
from trainium_lab.widgets.base import Explorer, SearchInputs, benchmarked, lnc_dropdown, number
from trainium_lab.widgets.layouts import _lnc_follows_system

__all__ = ["planning_worksheet", "PlanningWorksheet"]


def _search_relevance(values: dict) -> dict[str, str]:
    """With a deadline the search picks the number of systems: the count box is ignored."""
    try:
        deadline = float(values["deadline_days"])
    except (TypeError, ValueError):
        return {}
    return {"n_systems": "a deadline is set, so the search picks the count"} if deadline > 0 else {}


class PlanningWorksheet(Explorer):
    """The planning worksheet: search inputs on a button, the economics live."""

    def __init__(self, model: str = "llama3-8b", system: str = "trn2.48xlarge", n_systems: int = 1,
                 tokens_b: float = 100.0, usd_per_hour: float | None = None, global_batch: int = 1024,
                 deadline_days: float = 0.0, lnc: int | None = None):
        if usd_per_hour is None:  # a neutral placeholder: the sourced P5 price per peak FLOP/s
            usd_per_hour = round(planning.parity_usd_per_hour(system), 2)
        self.search = SearchInputs({
            "model": W.Dropdown(options=[p.key for p in sizing.presets()], value=model, description="model"),
            "system": W.Dropdown(options=list(topology.SYSTEMS), value=system, description="system"),
            "n_systems": number("systems", n_systems, integer=True, minimum=1),
            "deadline_days": number("deadline (d)", deadline_days, minimum=0,
                                    tooltip="deadline (d): 0 for none; a deadline picks the number "
                                            "of systems"),
            "global_batch": number("global batch", global_batch, integer=True, minimum=1),
            "lnc": lnc_dropdown(lnc),
        }, "Plan layout", columns=3, relevance=_search_relevance)
        self.inputs = self.search.controls
        _lnc_follows_system(self.inputs["system"], self.inputs["lnc"], self.search)
        self.button, self.status = self.search.button, self.search.status
        self.base_plan = self._search(tokens_b * 1e9, usd_per_hour)
        D = planning.DEFAULTS  # one home for the assumed inputs
        controls = {
            "tokens_b": number("tokens (B)", tokens_b, minimum=0, exclusive_minimum=True),
            "mfu_pct": W.FloatSlider(value=100 * D["mfu"], min=5.0, max=100.0, step=1.0, description="MFU %"),
            "usd_per_hour": number("USD/inst-h", usd_per_hour, minimum=0, exclusive_minimum=True,
                                   tooltip="price per instance-hour, USD (an assumption)"),
            # the plan's own bandwidth: chips × per-chip share up to the storage limit (planning)
            "ckpt_gb_per_s": number("ckpt GB/s",
                                    round(self.base_plan.inputs["checkpoint_write_bytes_per_s"] / GB, 2),
                                    minimum=0, exclusive_minimum=True,
                                    tooltip="checkpoint write bandwidth, GB/s"),
            "chip_mtbf_days": number("chip MTBF (d)", round(planning._proxy_chip_mtbf_s() / day),
                                     minimum=0, exclusive_minimum=True,
                                     tooltip="chip MTBF (d): mean time between failures of one chip, days"),
            "restart_min": number("restart (min)", D["restart_s"] / minute, minimum=0),
            "compile_min": number("compile (min)", D["compile_s"] / minute, minimum=0),
            "cache": W.Dropdown(options=list(planning.CACHE_MODES), value="precompiled",
                                description="cache"),
        }
        super().__init__(controls, self._compute, self._render, self._describe, columns=3)
        self.search.on_change = self.mark_stale
        self.widget.children = [self.widget.children[0], self.search.grid, self.status,
                                *self.widget.children[1:]]
        self.button.on_click(self.run)

    def _search(self, n_tokens: float, usd_per_hour: float) -> planning.RunPlan:
        v = self.search.values()
        deadline = v["deadline_days"] > 0
        return planning.plan(
            planning.Job(v["model"], n_tokens, deadline_s=v["deadline_days"] * day if deadline else None,
                         global_batch=v["global_batch"]),
            planning.ClusterSpec(v["system"], n_systems=None if deadline else v["n_systems"], lnc=v["lnc"]),
            cost=planning.CostSpec(usd_per_hour=usd_per_hour))

    def run(self, _button=None) -> None:
        """Search the layout with the current inputs, then refresh the plan."""
        try:
            vals = self.values()
            self.base_plan = self._search(vals["tokens_b"] * 1e9, vals["usd_per_hour"])
        except ValueError as exc:
            self.search.fail(exc)
            self.mark_stale()
            return
        p = self.base_plan
        tried = (f" (the fewest: {len(p.systems_tried)} counts planned, {p.systems_bounded} ruled out by a floor)"
                 if p.systems_tried else "")
        changed = ""
        if self.inputs["n_systems"].value.strip() != str(p.n_systems):
            changed = f"; “systems” set to {p.n_systems}, the count the search chose"
        self.inputs["n_systems"].value = p.n_systems
        self.inputs["n_systems"].last_good = p.n_systems
        self.search.done(f"layout searched on {p.n_systems} × {p.system}{tried}{changed}")
        self.update()

    def _compute(self, tokens_b, mfu_pct, usd_per_hour, ckpt_gb_per_s, chip_mtbf_days, restart_min,
                 compile_min, cache):
        p = self.base_plan
        # the searched plan's layout, re-priced with the worksheet's inputs
        return planning.plan(
            planning.Job(p.model, float(tokens_b) * 1e9, deadline_s=p.deadline_s,
                         global_batch=p.inputs["global_batch"]),
            planning.ClusterSpec(layout=p.layout, framework=p.framework or planning.TEACHING_SEARCH,
                                 overlap_setting=p.inputs.get("overlap_setting") if p.framework else None),
            planning.Execution(mfu=float(mfu_pct) / 100.0),
            planning.ReliabilitySpec(checkpoint_write_bytes_per_s=float(ckpt_gb_per_s) * GB,
                                     chip_mtbf_s=float(chip_mtbf_days) * day, restart_s=float(restart_min) * minute),
            planning.CompilationSpec(compile_s=float(compile_min) * minute, cache=cache),
            planning.CostSpec(usd_per_hour=usd_per_hour))

    @staticmethod
    def _render(p: planning.RunPlan):
        return plan_view_chart(p.cost_table(), p.sensitivity, p.cost_usd)

    @staticmethod
    def _describe(p: planning.RunPlan) -> str:
        top = p.sensitivity["input"].iloc[0]
        return (inline_html(p._repr_markdown_()) + f"<br>Largest uncertainty: <b>{INPUT_LABELS.get(top, top)}</b>. "
                "<i>No public Trn2/Trn3 price is in the course's sources: the price, like MFU, checkpoint "
                "bandwidth, restart and compile times, is an assumption you set.</i>")


@benchmarked(("tokens_b", 200.0), ("mfu_pct", 35.0), ("usd_per_hour", 50.0), ("ckpt_gb_per_s", 5.0),
             ("chip_mtbf_days", 500.0), ("restart_min", 20.0), ("compile_min", 40.0), ("cache", "local"))
def planning_worksheet(model: str = "llama3-8b", system: str = "trn2.48xlarge", n_systems: int = 1,
                       tokens_b: float = 100.0, usd_per_hour: float | None = None,
                       global_batch: int = 1024, deadline_days: float = 0.0,
                       lnc: int | None = None) -> PlanningWorksheet:
    """The planning worksheet. ``usd_per_hour`` defaults to the price at which one instance of
    ``system`` would cost what a p5.48xlarge costs per peak BF16 FLOP/s at its sourced on-demand
    price (:func:`trainium_lab.planning.parity_usd_per_hour`): a neutral placeholder, labelled an
    assumption, since no public Trn2 or Trn3 price is in the course's sources."""
    return PlanningWorksheet(model, system, n_systems, tokens_b, usd_per_hour, global_batch,
                             deadline_days, lnc)
