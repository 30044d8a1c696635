"""Chapter 05's widgets: the layout explorer and the planner.

Callbacks only call :mod:`trainium_lab.layouts` (and chapter 03's placement for the
rank-to-chip map), :mod:`trainium_lab.views` and a chart from :mod:`trainium_lab.charts.layouts`."""

from __future__ import annotations

import html
import time
from dataclasses import dataclass

import ipywidgets as W
import pandas as pd

from trainium_lab import layouts, sizing, topology, views
from trainium_lab.charts.base import row_dicts
from trainium_lab.charts.layouts import layout_dashboard, plan_scatter_chart
from trainium_lab.charts.topology import placement_chart
from trainium_lab.units import GiB
from trainium_lab.widgets.base import (DEFAULT, Explorer, SearchInputs, benchmarked, error_html,
                                       lnc_dropdown, number)

__all__ = ["layout_explorer", "planner_explorer", "PlannerExplorer"]

def _models() -> list[str]:
    """The preset names, read from data/ when a widget is built (not when this module is imported)."""
    return [p.key for p in sizing.presets()]


@dataclass(frozen=True)
class _LayoutView:
    estimate: layouts.LayoutEstimate
    chips: pd.DataFrame | None
    show_map: bool


def _evaluate(model, system, lnc, tp, pp, dp, zero_stage, micro_batch, n_micro_batches, recompute,
              mfu_pct, show_map):
    lay = layouts.layout(model, tp, pp, dp, zero_stage=zero_stage, micro_batch=micro_batch,
                         n_micro_batches=n_micro_batches, recompute=recompute, system=system, lnc=lnc)
    est = layouts.evaluate(lay, mfu=float(mfu_pct) / 100)
    chips = None
    if show_map:
        p = topology.place(tp, pp, dp, system=system, n_systems=lay.cluster.n_systems, lnc=lnc)
        chips = views.chip_map(p, "tp", 0)
    return _LayoutView(est, chips, bool(show_map))


def _render_layout(v: _LayoutView):
    mem = v.estimate.memory_table()
    times = v.estimate.time_table()
    placed = None
    if v.chips is not None:
        ips = v.estimate.layout.cluster.instances_per_system
        # chapter 03's title, whose second line says what the outline and the cells' text mean
        placed = placement_chart(v.chips, kind="tp", highlight=0, columns=4 if ips <= 4 else 6)
    return layout_dashboard(mem, times, placed)


def _describe_layout(v: _LayoutView) -> str:
    e = v.estimate
    lay = e.layout
    c = lay.cluster
    gib = GiB
    fit = ('<span style="color:#2e7d32">✓ fits</span>' if e.fits else
           '<span style="color:#a40000">✗ does not fit</span>')
    t = e.time_s
    exposed = t["dp_exposed"]
    return (f"<b>{html.escape(lay.label())}</b><br>"
            f"{c.n_systems} × {c.system}: {c.n_chips} chips, {c.n_ranks} ranks (LNC={c.lnc}). "
            f"{html.escape(views.tp_label(lay.tp, c.ranks_per_chip))} on <b>{e.levels['tp']}</b>, PP on <b>{e.levels['pp']}</b>, DP on <b>{e.levels['dp']}</b>.<br>"
            f"Memory per chip {e.total_bytes / gib:.1f} GiB of {e.hbm_bytes / gib:.0f} GiB "
            f"(state {e.state_bytes / gib:.1f}, activations {e.memory_bytes['activations'] / gib:.1f}); "
            f"{e.headroom_bytes / gib:.1f} GiB left, margin {e.min_headroom_fraction:.0%}: {fit}.<br>"
            f"Step {e.step_s:.2f} s: bubble (p−1)/m = {layouts.pipeline_bubble_fraction(lay.pp, lay.n_micro_batches):.3f} "
            f"of the busy time; DP traffic {e.dp_comm_s:.3f} s against a backward window of "
            f"{e.overlap_window_s:.3f} s, {exposed:.3f} s exposed. "
            f"{e.tokens_per_s:,.0f} tokens/s, effective MFU {e.mfu_effective:.1%}.")


@benchmarked(("n_micro_batches", 32), ("recompute", "full"), ("zero_stage", 3), ("tp", 32), ("pp", 8))
def layout_explorer(model: str = "llama3-405b", tp: int = 64, pp: int = 4, dp: int = 2,
                    system: str = "trn2-ultraserver", lnc: int = 2, show_map: bool = False) -> Explorer:
    """Degrees, ZeRO stage, micro-batches, recompute → memory per chip, step time and rank map.

    Degrees count ranks (logical cores); the number of systems follows from their
    product. Bad combinations show their ``ValueError`` inline. The rank-to-chip map
    (chapter 03's chart) is off by default: drawing it roughly triples the update time.
    """
    controls = {
        "model": W.Dropdown(options=_models(), value=model, description="model"),
        "system": W.Dropdown(options=list(topology.SYSTEMS), value=system, description="system"),
        "lnc": W.Dropdown(options=[1, 2], value=lnc, description="LNC"),
        "tp": number("TP (ranks)", tp, integer=True, minimum=1),
        "pp": number("PP", pp, integer=True, minimum=1, tooltip="PP: pipeline-parallel degree"),
        "dp": number("DP", dp, integer=True, minimum=1, tooltip="DP: data-parallel degree"),
        "zero_stage": W.Dropdown(options=[0, 1, 2, 3], value=1, description="ZeRO"),
        "micro_batch": number("micro-batch", 1, integer=True, minimum=1,
                              tooltip="micro-batch: sequences per micro-batch"),
        "n_micro_batches": number("micro-batches", 16, integer=True, minimum=1,
                                  tooltip="micro-batches: per step and pipeline"),
        "recompute": W.Dropdown(options=list(sizing.RECOMPUTE_MODES), value="selective", description="recompute"),
        "mfu_pct": W.FloatSlider(value=round(100 * sizing.default_mfu()), min=5, max=100, step=1, description="MFU %"),
        "show_map": W.Checkbox(value=show_map, description="rank map"),
    }
    from trainium_lab.widgets.topology import offer_system

    return Explorer(controls, _evaluate, _render_layout, _describe_layout, columns=3, offer=offer_system)


# --------------------------------------------------------------------- planner


def _lnc_follows_system(system: W.Dropdown, lnc: W.Dropdown, search: SearchInputs | None = None) -> None:
    """Offer "chip default" only where the chip data holds a default LNC (stated or inferred):
    on such a system the menu holds 1 and 2, and a switch from "chip default" says what it chose."""
    from trainium_lab import cores

    def follow(_change=None):
        try:
            cores.resolve_lnc(_system_chip(system.value), None)
            has_default = True
        except ValueError:
            has_default = False
        offered = [int(o) for o in cores.lnc_options(_system_chip(system.value))] or [1]  # Trn1: 1 only
        options = ([("chip default", DEFAULT)] if has_default else []) + [(str(o), o) for o in offered]
        if tuple(tuple(o) for o in lnc.options) == tuple(options):
            return
        old = lnc.value
        lnc.options = options
        if old not in (DEFAULT, *offered):  # issue 42: LNC 2 kept on a Trn1 failed at once
            lnc.value = DEFAULT if has_default else offered[0]
            if search is not None:
                search.status.value = (f"<div style='color:#555'>ℹ LNC set to {html.escape(lnc.label)}: "
                                       f"{html.escape(system.value)}'s chip offers LNC "
                                       f"{', '.join(map(str, offered))}.</div>")
        elif old == DEFAULT and not has_default:
            lnc.value = 2
            if search is not None:
                search.status.value = ("<div style='color:#555'>ℹ LNC set to 2: no AWS page states "
                                       f"the default LNC of {html.escape(system.value)}'s chip, so "
                                       "“chip default” is not offered for it. Click “"
                                       f"{html.escape(search.button.description)}” to search "
                                       "again.</div>")
        elif old in (1, 2) or old == DEFAULT:
            lnc.value = old

    system.observe(follow, names="value")
    follow()


def _system_chip(system: str) -> str:
    from trainium_lab import specs

    return specs.system(system).chip.key


@dataclass(frozen=True)
class _PlanView:
    plan: layouts.Plan
    table: pd.DataFrame
    colour: str
    top_n: int


class PlannerExplorer(Explorer):
    """The planner: search inputs run on the **Plan** button (a search takes 0.1–1 s);
    the view controls (headroom to keep, colour, rows shown) update at once."""

    def __init__(self, model: str = "llama3-405b", system: str = "trn2-ultraserver", n_systems: int = 2,
                 global_batch: int = 1024):
        self.search = SearchInputs({
            "model": W.Dropdown(options=_models(), value=model, description="model"),
            "system": W.Dropdown(options=list(topology.SYSTEMS), value=system, description="system"),
            "n_systems": number("systems", n_systems, integer=True, minimum=1),
            "lnc": lnc_dropdown(),
            "global_batch": number("global batch", global_batch, integer=True, minimum=1),
            "mfu_pct": W.FloatSlider(value=round(100 * sizing.default_mfu()), min=5, max=100, step=1,
                                     description="MFU %"),
        }, "Plan", columns=3)
        self.inputs = self.search.controls
        _lnc_follows_system(self.inputs["system"], self.inputs["lnc"], self.search)
        self.button, self.status = self.search.button, self.search.status
        self.plan = self._search()
        controls = {
            "min_headroom_pct": W.FloatSlider(value=10, min=0, max=50, step=1, description="keep free %"),
            "colour": W.Dropdown(options=["tp_level", "zero_stage", "recompute", "pp"], value="tp_level",
                                 description="colour by"),
            "top_n": W.IntSlider(value=8, min=1, max=30, description="rows"),
        }
        super().__init__(controls, self._view, self._render, self._describe, columns=3)
        if self.result is not None:  # build each colour's chart template once, up front
            for option in controls["colour"].options:
                self._render(_PlanView(self.plan, self.result.table.head(1), option, 1))
        self.search.on_change = self.mark_stale
        self.widget.children = [self.widget.children[0], self.search.grid, self.status,
                                *self.widget.children[1:]]
        self.button.on_click(self.run)

    def _search(self) -> layouts.Plan:
        v = self.search.values()
        return layouts.plan(v["model"], system=v["system"], n_systems=v["n_systems"], lnc=v["lnc"],
                            global_batch=v["global_batch"], mfu=float(v["mfu_pct"]) / 100,
                            min_headroom_fraction=0.0)

    def run(self, _button=None) -> None:
        """Run the search with the current inputs, then refresh the view."""
        t0 = time.perf_counter()  # the search's wall time is the widget's to show, not the model's
        try:
            self.plan = self._search()
        except ValueError as exc:
            self.search.fail(exc)
            self.mark_stale()
            return
        self.search.done(f"searched {len(self.plan.all)} layouts in {(time.perf_counter() - t0) * 1e3:.0f} ms")
        self.update()

    def _view(self, min_headroom_pct, colour, top_n):
        frac = float(min_headroom_pct) / 100
        if not 0 <= frac < 1:
            raise ValueError("min_headroom_pct must be in [0, 100)")
        # the layouts that fit each margin asked for, kept for this search (the view's slider
        # moved back answers at once; a new search starts afresh)
        kept = self.__dict__.setdefault("_kept", {})
        if kept.get("plan") is not self.plan:
            kept.clear()
            kept["plan"] = self.plan
        if frac not in kept:
            kept[frac] = self.plan.fitting(frac)
        return _PlanView(self.plan, kept[frac], colour, int(top_n))

    @staticmethod
    def _render(v: _PlanView):
        if v.table.empty:
            return None
        return plan_scatter_chart(v.table, colour=v.colour,
                                  title=f"{v.plan.model.name} on {v.plan.cluster.n_systems} × {v.plan.cluster.system}")

    @staticmethod
    def _describe(v: _PlanView) -> str:
        if v.table.empty:
            return error_html("Nothing fits with this much HBM kept free: add systems, or keep less free.")
        cols = ["rank", "label", "tp_level", "pp_level", "dp_level", "memory_gib", "headroom_gib",
                "step_s", "tokens_per_s", "mfu_effective"]
        fmt = {"memory_gib": "{:.1f}", "headroom_gib": "{:.1f}", "step_s": "{:.2f}",
               "tokens_per_s": "{:,.0f}", "mfu_effective": "{:.1%}"}
        rows = row_dicts(v.table.head(v.top_n), cols)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(fmt[c].format(r[c]) if c in fmt else str(r[c]))}</td>"
                             for c in cols) + "</tr>"
            for r in rows)
        table = ('<table class="dataframe"><thead><tr>' + "".join(f"<th>{c}</th>" for c in cols)
                 + f"</tr></thead><tbody>{body}</tbody></table>")
        best = rows[0]  # the table is ranked
        head = (f"{len(v.table)} of {len(v.plan.all)} layouts fit. Best: <b>{html.escape(best['label'])}</b>, "
                f"{best['tokens_per_s']:,.0f} tokens/s.")
        return head + table


@benchmarked(("min_headroom_pct", 25), ("colour", "zero_stage"), ("top_n", 4))
def planner_explorer(model: str = "llama3-405b", system: str = "trn2-ultraserver", n_systems: int = 2,
                     global_batch: int = 1024) -> PlannerExplorer:
    """The planner with a **Plan** button for the search and live view controls."""
    return PlannerExplorer(model, system, n_systems, global_batch)
