"""Chapter 09's widgets: the KV-cache explorer and the speculative-decoding explorer.

Callbacks only call :mod:`trainium_lab.serving` and a chart from
:mod:`trainium_lab.charts.serving`."""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as W
import pandas as pd

from trainium_lab import serving, sizing
from trainium_lab.charts.serving import serving_panel_chart, speculation_chart
from trainium_lab.units import GiB, format_bytes, format_seconds
from trainium_lab.widgets.base import Explorer, benchmarked

__all__ = ["kv_cache_explorer", "speculation_explorer"]

def _models() -> list[tuple[str, str]]:
    """(name, key) of each preset, read from data/ when a widget is built (not at import)."""
    return [(p.name, p.key) for p in sizing.presets()]
_CONTEXTS = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
_BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
_TPS = [1, 2, 4, 8, 16, 32, 64, 128]


# --------------------------------------------------------------------- KV cache explorer


@dataclass(frozen=True)
class _KVView:
    rep: serving.Replica
    capacity: serving.Capacity
    decode: serving.StepEstimate
    batch: int


def _kv(model, chip, tp, lnc, context_len, batch, kv_dtype) -> _KVView:
    rep = serving.replica(model, chip, tp, lnc=lnc, kv_dtype=kv_dtype)
    cap = serving.capacity(rep, context_len, max_num_seqs=batch)
    dec = serving.decode_step(rep, batch, context_len)
    return _KVView(rep, cap, dec, batch)


def _render_kv(v: _KVView):
    hbm = pd.DataFrame({"where": ["per logical core", "per chip"],
                        "hbm_gib": [v.capacity.hbm_bytes / GiB,
                                    v.capacity.hbm_bytes * v.rep.ranks_per_chip / GiB]})
    d, bw = v.decode, v.decode.hbm_bytes_per_s
    times = pd.DataFrame({"part": ["read weights", "read KV cache", "compute", "TP all-reduces"],
                          "ms": [d.weight_bytes / bw * 1e3, d.kv_bytes / bw * 1e3,
                                 d.compute_s * 1e3, d.comm_s * 1e3]})
    return serving_panel_chart(v.capacity.table(), hbm, times)


def _describe_kv(v: _KVView) -> str:
    r, c, d = v.rep, v.capacity, v.decode
    used = c.weight_bytes + c.microcode_bytes + c.neff_bytes + c.reserve_bytes + c.reserved_kv_bytes
    ok = c.reservation_fits
    verdict = ('<span style="color:#2e7d32">✓ fits</span>' if ok else
               '<span style="color:#a40000">✗ does not fit</span>')
    return (f"<b>{r.label()}</b><br>"
            f"Per logical core: weights {format_bytes(c.weight_bytes)} + KV {format_bytes(c.reserved_kv_bytes)} "
            f"({v.batch} × {c.context_len:,} tokens) + runtime {format_bytes(c.microcode_bytes)} = "
            f"<b>{format_bytes(used)}</b> of {format_bytes(c.hbm_bytes)} HBM "
            f"(budget {format_bytes(c.budget_bytes)}, KV budget {format_bytes(c.kv_budget_bytes)}"
            f"{', the vLLM Neuron cap' if c.cap_binds else ''}): {verdict}; at most <b>{c.max_sequences}</b> "
            f"such sequences. Per chip: {format_bytes(used * r.ranks_per_chip)} of "
            f"{format_bytes(c.hbm_bytes * r.ranks_per_chip)}.<br>"
            f"Decode step: expected <b>{format_seconds(d.time_s)}</b> (bound {format_seconds(d.bound_s)}; "
            f"{d.n_collectives} collectives at {format_seconds(d.collective_fixed_s)} fixed cost each, "
            f"calibrated; roofline side {d.bound}) → "
            f"<b>{d.tokens_per_s:,.0f}</b> tokens/s for the replica, "
            f"<b>{d.tokens_per_s_per_chip:,.0f}</b> per chip; each sequence sees one token about every "
            f"{format_seconds(d.time_s)}.")


@benchmarked(("context_len", 32768), ("batch", 64), ("tp", 8), ("model", "llama3-70b"), ("lnc", 1))
def kv_cache_explorer(model: str = "llama3-8b", chip: str = "trn2", tp: int = 4, lnc: int = 2,
                      context_len: int = 8192, batch: int = 8) -> Explorer:
    """Memory per logical core and per chip against HBM, and the decode step (expected and bound), as the
    model, TP degree (ranks), LNC, context and batch change."""
    controls = {
        "model": W.Dropdown(options=_models(), value=model, description="model"),
        "chip": W.Dropdown(options=[("Trainium2", "trn2"), ("Trainium3", "trn3")], value=chip,
                           description="chip"),
        "tp": W.Dropdown(options=_TPS, value=tp, description="TP (ranks)"),
        "lnc": W.Dropdown(options=[1, 2], value=lnc, description="LNC"),
        "context_len": W.SelectionSlider(options=_CONTEXTS, value=context_len, description="context"),
        "batch": W.SelectionSlider(options=_BATCHES, value=batch, description="batch"),
        "kv_dtype": W.Dropdown(options=[("BF16", "bfloat16"), ("FP8 (e4m3)", "float8_e4m3fn")],
                               value="bfloat16", description="KV dtype"),
    }
    return Explorer(controls, _kv, _render_kv, _describe_kv)


# --------------------------------------------------------------------- speculative decoding


@dataclass(frozen=True)
class _SpecView:
    table: pd.DataFrame
    simulation: serving.SpeculationSimulation
    alpha: float
    k: int
    c: float


def _spec(alpha, k, c) -> _SpecView:
    table = serving.speculation_table(alpha, c, k_max=16)
    sim = serving.simulate_speculation(alpha, k, n_passes=20_000, seed=0)
    return _SpecView(table, sim, float(alpha), int(k), float(c))


def _render_spec(v: _SpecView):
    return speculation_chart(v.table, v.k)


def _describe_spec(v: _SpecView) -> str:
    row = v.table.set_index("k").loc[v.k]
    best = serving.best_speculation_length(v.alpha, v.c, k_max=16)
    s = v.simulation
    bound = serving.speculative_speedup_lower_bound(v.alpha, v.c)
    return (f"α = {v.alpha:.2f}, c = {v.c:.2f}, k = {v.k}: <b>{row.expected_tokens:.2f}</b> tokens per "
            f"target pass (a seeded simulation of {s.n_passes:,} passes: {s.mean_tokens:.3f} ± "
            f"{s.stderr:.3f}, {s.z_score:+.1f} standard errors from the formula); walltime speed-up "
            f"<b>{row.speedup:.2f}×</b>; arithmetic <b>{row.operations_factor:.2f}×</b> that of plain "
            f"decoding.<br>Best k here: <b>{best}</b>"
            f"{' (do not speculate)' if best == 0 else ''}; Corollary 3.9's guarantee at k = 1: "
            f"{bound:.2f}× {'(α > c: some k helps)' if v.alpha > v.c else '(α ≤ c: no guarantee)'}.")


@benchmarked(("alpha", 0.6), ("k", 8), ("c", 0.2))
def speculation_explorer(alpha: float = 0.8, k: int = 5, c: float = 0.05) -> Explorer:
    """Speed-up and arithmetic against k for an acceptance rate α and draft cost ratio c; the
    summary sets a seeded accept/reject simulation of the chosen k beside the formula."""
    controls = {
        "alpha": W.FloatSlider(value=alpha, min=0.0, max=0.99, step=0.01, description="α (accept)"),
        "k": W.IntSlider(value=k, min=0, max=16, description="k (drafted)"),
        "c": W.FloatSlider(value=c, min=0.0, max=0.5, step=0.01, description="c (draft cost)"),
    }
    return Explorer(controls, _spec, _render_spec, _describe_spec)
