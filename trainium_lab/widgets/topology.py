"""Chapter 03's widgets: the ring all-reduce stepper, the latency sweep and the
placement explorer. Each wires controls to ``trainium_lab.topology`` /
``trainium_lab.collectives`` and a chart from ``trainium_lab.charts.topology``."""

from __future__ import annotations

import functools
import html
import math
from dataclasses import dataclass

import ipywidgets as W
import numpy as np
import pandas as pd

from trainium_lab import collectives, specs, topology, views
from trainium_lab.charts.topology import (dp_threshold_chart, placement_chart, ring_step_chart,
                                          size_sweep_chart)
from trainium_lab.units import MB, format_bandwidth, format_bytes, format_seconds, us
from trainium_lab.widgets.base import Explorer, benchmarked, number

__all__ = ["ring_stepper", "latency_sweep_explorer", "placement_explorer"]


# --------------------------------------------------------------------- ring stepper


def _describe_ring(df: pd.DataFrame) -> str:
    n = int(df["rank"].max()) + 1
    phase = df["phase"].iloc[0]
    sent = float(df["sent_fraction"].iloc[0])
    total = 2 * (n - 1) / n
    if phase == "done":
        head = "<b>Done</b>: every participant holds every chunk summed over all of them."
    else:
        chunks = ", ".join(f"r{r}→r{(r + 1) % n}: chunk {c}" for r, c, sending in
                           zip(df["rank"].tolist(), df["chunk"].tolist(), df["sending"].tolist())
                           if sending)
        head = f"Next step (<b>{phase}</b>), outlined cells: {html.escape(chunks)}."
    return (f"{head}<br>Each participant has sent <b>{sent:.2f}</b> of its buffer so far; by the end "
            f"it sends 2(n−1)/n = <b>{total:.2f}</b> of it, whatever n is.")


@benchmarked(("n", 6), ("step", 3))
def ring_stepper(n: int = 4) -> Explorer:
    """Step through a ring all-reduce over ``n`` participants (2 to 8)."""
    n_slider = W.IntSlider(value=n, min=2, max=8, description="participants")
    step = W.IntSlider(value=0, min=0, max=2 * (n - 1), description="steps done")

    holder: dict = {}

    def _limit(change):  # keep the step slider inside 0 … 2(n−1); registered before the Explorer's
        last = 2 * (change["new"] - 1)
        ex = holder.get("explorer")
        if ex is None:
            step.max = last
            return
        if step.value > last:  # ipywidgets clamps it: say so
            ex.say(f"steps done set to {last}: a ring of {change['new']} finishes in {last} steps.")
        with ex.holding():  # the update for n draws the clamped step
            step.max = last

    n_slider.observe(_limit, names="value")
    holder["explorer"] = Explorer({"n": n_slider, "step": step}, collectives.ring_allreduce_steps,
                                  ring_step_chart, _describe_ring)
    return holder["explorer"]


# --------------------------------------------------------------------- latency sweep

@functools.cache
def _sweep_levels() -> dict[str, topology.Level]:
    """The Trn2 UltraServer's levels with a bandwidth, read from data/ on first use (not at import)."""
    return {f"{lv.name} ({lv.link_key})": lv for lv in topology.cluster("trn2-ultraserver").levels
            if lv.bytes_per_s is not None}


@dataclass(frozen=True)
class _Sweep:
    lines: pd.DataFrame
    crossover: pd.DataFrame
    level: topology.Level
    n: int
    latency_s: float
    collective: str


def _sweep(level: str, n: int, latency_us: float, collective: str) -> _Sweep:
    lv = _sweep_levels()[level]
    latency_s = latency_us * us
    sizes = np.logspace(2, 10, 33)
    with_lat = collectives.size_sweep(sizes, n, lv.bytes_per_s, latency_s, collective)
    # one frame built at once (a concat of two costs a millisecond per update)
    size_bytes, time_ms = [sizes], [with_lat["bandwidth_only_s"].to_numpy() * 1e3]
    series = ["bandwidth term only (no latency)"] * len(sizes)
    cross = pd.DataFrame({"size_bytes": [], "series": []})
    if latency_s > 0:
        size_bytes.append(sizes)
        time_ms.append(with_lat["time_s"].to_numpy() * 1e3)
        series += [f"with α = {latency_us:g} µs per step"] * len(sizes)
        if n > 1:
            cross = pd.DataFrame({"size_bytes": [collectives.latency_crossover_bytes(n, lv.bytes_per_s, latency_s)],
                                  "series": ["latency term = bandwidth term"]})
    lines = pd.DataFrame({"size_bytes": np.concatenate(size_bytes), "time_ms": np.concatenate(time_ms),
                          "series": series})
    return _Sweep(lines, cross, lv, n, latency_s, collective)


def _render_sweep(s: _Sweep):
    return size_sweep_chart(s.lines, s.crossover if s.n > 1 else None,
                            title=f"Ring {s.collective.replace('_', '-')} over {s.n} chips at "
                                  f"{format_bandwidth(s.level.bytes_per_s)} per chip")


def _describe_sweep(s: _Sweep) -> str:
    lv = s.level
    src = "published" if lv.latency_s is not None else "not published for this level: your assumption"
    text = (f"<b>{s.collective.replace('_', '-')}</b> on {lv.name}: {format_bandwidth(lv.bytes_per_s)} ({html.escape(lv.scope)}, direction "
            f"{html.escape(lv.direction)}); latency {src}.")
    if not s.crossover.empty:
        text += (f"<br>Below <b>{format_bytes(float(s.crossover.size_bytes[0]), binary=False)}</b> the latency "
                 "term is larger than the bandwidth term: halving the message no longer halves the time.")
    return text


@benchmarked(("n", 4), ("level", "ultraserver (trn2-neuronlink-inter)"), ("latency_us", 50.0))
def latency_sweep_explorer() -> Explorer:
    """Time of a ring collective against message size, with and without a per-step latency."""
    efa = specs.link("trn2-efa")
    controls = {
        "level": W.Dropdown(options=list(_sweep_levels()), value="efa (trn2-efa)", description="level"),
        # a ring of one chip sends nothing: its time is 0, which a log axis cannot draw (issue 42:
        # the slider's minimum drew an empty chart), so the sweep starts at 2
        "n": W.IntSlider(value=16, min=2, max=64, description="chips (n)",
                         tooltip="chips (n): ranks in the ring, 2 or more (one chip sends nothing)"),
        "latency_us": number("α (µs)", (efa.latency_s or 0.0) / us, minimum=0,
                             tooltip="α (µs): latency per step of the ring, microseconds"),
        "collective": W.Dropdown(options=["all_reduce", "reduce_scatter", "all_gather", "all_to_all"],
                                 value="all_reduce", description="collective"),
    }

    def compute(level, n, latency_us, collective):
        if not np.isfinite(latency_us) or latency_us < 0:
            raise ValueError(f"latency_us must be a finite number >= 0, got {latency_us!r}")
        return _sweep(level, n, latency_us, collective)

    return Explorer(controls, compute, _render_sweep, _describe_sweep)


# --------------------------------------------------------------------- placement explorer


@dataclass(frozen=True)
class _PlacementView:
    placement: topology.Placement
    costs: pd.DataFrame
    chips: pd.DataFrame
    colour_by: str
    highlight: int
    size_bytes: float


#: most ranks the placement map draws (16,640 chips, EP = 130 on Trn2 UltraServers, took ~1 s)
MAX_MAP_RANKS = 2 ** 15


@functools.lru_cache(maxsize=8)
def _placement(system, lnc, tp, pp, dp, ep, ordering) -> topology.Placement:
    """The placement of these settings, kept for the next updates: the menus that change only
    the drawing (colour by, outline group) or the message size reuse its group tables, which
    the placement works out once (a few ms)."""
    return topology.place(tp, pp, dp, ep, system=system, lnc=lnc, ordering=ordering)


@functools.lru_cache(maxsize=8)
def _placement_costs(size_bytes: float, *placement) -> pd.DataFrame:
    """``collectives.placement_costs`` of ``_placement(*placement)``, kept while only the colour
    and the outline change (the frame is only read)."""
    return collectives.placement_costs(_placement(*placement), size_bytes)


def _place(system, lnc, tp, pp, dp, ep, ordering, colour_by, highlight, size_mb):
    if tp * pp * dp * ep > MAX_MAP_RANKS:
        raise ValueError(f"TP × PP × DP × EP = {tp * pp * dp * ep:,} ranks: the map draws at most "
                         f"{MAX_MAP_RANKS:,}; the calculation itself has no such limit (use smaller degrees "
                         "to see the map)")
    p = _placement(system, lnc, tp, pp, dp, ep, ordering)
    size = float(size_mb) * MB
    costs = _placement_costs(size, system, lnc, tp, pp, dp, ep, ordering)
    n_groups = p.cluster.n_ranks // p.degrees[colour_by]
    if not -1 <= highlight <= n_groups - 1:  # never clamp silently: say which groups exist
        raise ValueError(f"highlight must be between -1 (none) and {n_groups - 1} (there are "
                         f"{n_groups} {colour_by.upper()} groups), got {highlight}")
    return _PlacementView(p, costs, views.chip_map(p, colour_by, highlight), colour_by, highlight, size)


def _render_placement(v: _PlacementView):
    ipsys = v.placement.cluster.instances_per_system
    columns = 4 if ipsys <= 4 else 6
    return placement_chart(v.chips, kind=v.colour_by, highlight=v.highlight, columns=columns)


def _describe_placement(v: _PlacementView) -> str:
    p = v.placement
    c = p.cluster
    head = (f"{c.n_systems} × {c.system}, LNC={c.lnc}: {c.n_chips} chips, <b>{c.n_ranks} ranks</b> "
            f"({c.ranks_per_chip} per chip). Ordering {'-'.join(p.ordering)} (innermost first).")
    rows = []
    cols = ("kind", "degree", "n_chips", "level", "expected_level", "bytes_per_s", "scope", "direction", "time_s")
    for kind, degree, n_chips, level, expected, bps, scope, direction, time_s in zip(
            *(v.costs[c].tolist() for c in cols)):  # (itertuples and to_dict cost ~1 ms here)
        bw = "on chip" if bps is None or not np.isfinite(bps) else \
            f"{format_bandwidth(bps)} ({html.escape(scope)}; direction {html.escape(direction)})"
        style = (' style="color:#a40000;font-weight:bold"'
                 if level != expected and kind in topology.LATENCY_CRITICAL else "")
        rows.append(f"<tr{style}><td>{kind.upper()}</td><td>{degree}</td><td>{n_chips}</td>"
                    f"<td>{level}</td><td>{bw}</td><td>{format_seconds(time_s) if time_s else '—'}</td></tr>")
    table = ("<table><tr><th>group</th><th>ranks</th><th>chips</th><th>slowest level</th>"
             f"<th>bandwidth per chip</th><th>all-reduce of {format_bytes(v.size_bytes, binary=False)} per rank</th></tr>"
             + "".join(rows) + "</table>")
    if p.problems:
        verdict = "".join(f'<div style="color:#a40000">⚠ {html.escape(m)}</div>' for m in p.problems)
    else:
        verdict = '<div style="color:#2e7d32">✓ TP and EP groups sit on the fastest level their size allows.</div>'
    return head + verdict + table


@benchmarked(("ordering", "dp-pp-tp"), ("lnc", 1), ("colour_by", "dp"), ("system", "trn3-gen1-ultraserver"))
def placement_explorer(tp: int = 64, pp: int = 4, dp: int = 2, ep: int = 1,
                       ordering: str = "tp-pp-dp") -> Explorer:
    """Degrees, LNC, system and ordering → the rank-to-chip map and each group's collective time.

    The number of systems follows from the degrees: tp × pp × dp × ep must be a
    whole number of systems' logical cores.
    """
    orderings = list(dict.fromkeys([ordering, *topology.ORDERINGS, *topology.all_orderings()]))
    controls = {
        "system": W.Dropdown(options=list(topology.SYSTEMS), value="trn2-ultraserver", description="system"),
        "lnc": W.Dropdown(options=[1, 2], value=2, description="LNC"),
        "tp": number("TP (ranks)", tp, integer=True, minimum=1),
        "pp": number("PP", pp, integer=True, minimum=1, tooltip="PP: pipeline-parallel degree"),
        "dp": number("DP", dp, integer=True, minimum=1, tooltip="DP: data-parallel degree"),
        "ep": number("EP", ep, integer=True, minimum=1, tooltip="EP: expert-parallel degree"),
        "ordering": W.Dropdown(options=orderings, value=ordering, description="ordering"),
        "colour_by": W.Dropdown(options=list(topology.KINDS), value="tp", description="colour by"),
        "highlight": number("outline group", 0, integer=True, minimum=-1,
                            tooltip="outline group: the group drawn with an outline (-1: none)"),
        "size_mb": number("MB per rank", 2 * 4096 * 16384 / MB, minimum=0, exclusive_minimum=True,
                          tooltip="MB per rank: size of each rank's all-reduce, MB (10^6 bytes)"),
    }
    return Explorer(controls, _place, _render_placement, _describe_placement, columns=3,
                    offer=offer_system)


def _offer_lnc(explorer: Explorer) -> None:
    """The LNC menu offers what the system's chip supports (Trainium1: 1 only); a value the new
    chip lacks is changed and the change said, never left to fail (issue 42)."""
    from trainium_lab import cores

    system, lnc = explorer.controls["system"], explorer.controls["lnc"]
    chip = specs.system(system.value).chip
    options = [int(o) for o in cores.lnc_options(chip.key)] or [1]
    if list(lnc.options) == options:
        return
    old = lnc.value
    lnc.options = options
    lnc.value = old if old in options else options[0]
    if lnc.value != old:
        explorer.say(f"LNC set to {lnc.value}: {chip.name} offers LNC {', '.join(map(str, options))}.")


def _fit_dp_to_system(explorer: Explorer) -> None:
    """When the system menu changes to one whose system holds another number of ranks (a Trn3 Gen2
    UltraServer: 576 at LNC 2), DP becomes the smallest degree that fills whole systems, and the
    change is said; a DP the learner types is never rewritten (issue 42)."""
    system = explorer.controls["system"].value
    last, explorer._last_system = getattr(explorer, "_last_system", system), system
    if last == system:
        return
    dp = explorer.controls["dp"]
    try:
        per_system = topology.cluster(system, 1, explorer.controls["lnc"].value).ranks_per_system
        others = math.prod(int(explorer.controls[k].read()[0]) for k in ("tp", "pp", "ep") if k in explorer.controls)
        fits = (others * int(dp.read()[0])) % per_system == 0
    except (ValueError, TypeError):
        return   # the update that follows names the bad input
    if fits:
        return
    new = per_system // math.gcd(others, per_system)
    dp.value = new
    explorer.say(f"DP set to {new}: one {system} holds {per_system:,} ranks at LNC "
                 f"{explorer.controls['lnc'].value}, so TP × PP × DP × EP must fill whole systems.")


def offer_system(explorer: Explorer) -> None:
    """An explorer with system, LNC and degree controls: the LNC menu follows the chip and DP
    fills whole systems when the system changes (both said, never silent)."""
    _offer_lnc(explorer)
    _fit_dp_to_system(explorer)


# --------------------------------------------------------------------- data-parallel threshold (issue 15)

_DP_DTYPES = {"trn2-ultraserver": ("bf16", "fp8"), "trn3-gen1-ultraserver": ("bf16", "mxfp8"),
              "trn3-gen2-ultraserver": ("bf16", "mxfp8")}


@dataclass(frozen=True)
class _DPView:
    table: pd.DataFrame
    tokens_per_chip: float


def _dp_threshold(system, dtype, grad_bytes, overlap, n, tokens_per_chip):
    if dtype not in _DP_DTYPES[system]:
        raise ValueError(f"dtype must be one of {', '.join(_DP_DTYPES[system])} for {system}, "
                         f"got {dtype!r}")
    table = collectives.dp_comm_bound_table([system], dtype, n, grad_bytes_per_param=grad_bytes,
                                            flops_per_token_per_param=overlap)
    if not np.isfinite(tokens_per_chip) or tokens_per_chip <= 0:
        raise ValueError(f"tokens_per_chip must be a number > 0, got {tokens_per_chip!r}")
    return _DPView(table, float(tokens_per_chip))


def _describe_dp(v: _DPView) -> str:
    rows = []
    for level, bps, tokens in zip(*(v.table[c].tolist() for c in ("level", "bytes_per_s", "tokens_per_chip"))):
        ratio = tokens / v.tokens_per_chip  # all-reduce time / overlapped compute time
        verdict = (f'<span style="color:#a40000">communication-bound: the all-reduce takes '
                   f'{ratio:.2g}× the compute it can hide behind</span>' if ratio > 1 else
                   f'<span style="color:#2e7d32">hidden (all-reduce = {ratio:.0%} of that compute)</span>')
        rows.append(f"<tr><td>{level}</td><td>{format_bandwidth(bps)}</td>"
                    f"<td>{tokens:,.0f}</td><td>{verdict}</td></tr>")
    return (f"{v.tokens_per_chip:,.0f} tokens per chip per step; C = {v.table.flop_per_s.iloc[0] / 1e12:,.0f} "
            f"TFLOP/s ({v.table.dtype.iloc[0]}). The model size cancels out."
            "<table><tr><th>level crossed</th><th>W per chip</th><th>threshold (tokens/chip)</th><th>at your batch</th></tr>"
            + "".join(rows) + "</table>")


@benchmarked(("system", "trn3-gen1-ultraserver"), ("grad_bytes", 4.0), ("overlap", 6.0),
             ("n", 4), ("tokens_per_chip", 30_000))
def dp_threshold_explorer(tokens_per_chip: int = 4096) -> Explorer:
    """System, matmul dtype, gradient bytes, overlap, DP size and batch per chip → where DP is
    communication-bound (collectives.dp_comm_bound_table)."""
    system = W.Dropdown(options=list(_DP_DTYPES), value="trn2-ultraserver", description="system")
    dtype = W.Dropdown(options=list(_DP_DTYPES["trn2-ultraserver"]), value="bf16", description="matmul dtype")

    def _dtypes(change):  # offer only the rates the chip has; registered before the Explorer's
        dtype.options = list(_DP_DTYPES[change["new"]])
        dtype.value = "bf16"

    system.observe(_dtypes, names="value")
    controls = {
        "system": system, "dtype": dtype,
        "grad_bytes": W.Dropdown(options=[("BF16 gradients (2 B)", 2.0), ("FP32 gradients (4 B)", 4.0)],
                                 value=2.0, description="gradients"),
        "overlap": W.Dropdown(options=[("backward pass (4N per token)", 4.0),
                                       ("whole step (6N per token)", 6.0)],
                              value=4.0, description="overlaps"),
        "n": W.IntSlider(value=64, min=2, max=1024, description="DP size n"),
        "tokens_per_chip": number("tokens/chip", tokens_per_chip, integer=True, minimum=1,
                                  tooltip="tokens/chip: tokens per chip per step (the batch)"),
    }
    return Explorer(controls, _dp_threshold,
                    lambda v: dp_threshold_chart(v.table, v.tokens_per_chip), _describe_dp, columns=3)


__all__ += ["dp_threshold_explorer"]
