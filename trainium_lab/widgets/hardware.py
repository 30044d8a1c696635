"""Chapter 01's widgets: the roofline explorer, the NeuronCore counter and the claims table."""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as W
import pandas as pd

from trainium_lab import cores, roofline, specs
from trainium_lab.charts.hardware import core_counts_chart, roofline_chart
from trainium_lab.units import GiB, format_bandwidth, format_flop_rate, format_seconds
from trainium_lab.widgets.base import Explorer, benchmarked

__all__ = ["roofline_explorer", "core_counter", "claims_explorer"]

_DTYPES = ["bf16", "fp16", "tf32", "fp32", "fp8", "mxfp8", "mxfp4", "fp4"]


@dataclass(frozen=True)
class _RooflineView:
    bound: roofline.MatmulBound
    tiled: roofline.MatmulBound | None
    array: roofline.ArrayUtilisation | None
    curves: pd.DataFrame
    point: pd.DataFrame


def _roofline(chip: str, dtype: str, m: int, n: int, k: int) -> _RooflineView:
    b = roofline.matmul_bound(m, n, k, dtype, chip)
    trainium = roofline.device(chip).kind == "trainium"
    tiled = roofline.matmul_bound(m, n, k, dtype, chip, tiled=True) if trainium else None
    array = roofline.array_utilisation(m, n, k, chip, dtype) if trainium else None
    high = max(1e5, 10 * b.intensity_flop_per_byte)
    curves = roofline.roofline_curve(chip, dtype, low=0.1, high=high)
    rows = [{"intensity": b.intensity_flop_per_byte, "tflops": b.achieved_flops_per_s / 1e12,
             "bound": b.bound, "label": f"{m}×{k} @ {k}×{n}", "kind": "roofline bound"}]
    if tiled is not None and array is not None:
        rows.append({"intensity": b.intensity_flop_per_byte,
                     "tflops": tiled.achieved_flops_per_s / 1e12, "bound": tiled.bound,
                     "label": rows[0]["label"], "kind": f"counting {array.rows}×{array.cols} tiles"})
    return _RooflineView(b, tiled, array, curves, pd.DataFrame(rows))


def _render_roofline(v: _RooflineView):
    b = v.bound
    return roofline_chart(v.curves, v.point, labels=False,
                          title=f"{v.curves.device[0]} roofline, {b.dtype}: {b.m}×{b.k} @ {b.k}×{b.n}")


def _describe_roofline(v: _RooflineView) -> str:
    b = v.bound
    text = (f"<b>{b.bound}-bound</b>: at least <b>{format_seconds(b.time_s)}</b> "
            f"(tensor engine {format_seconds(b.compute_s)}, HBM {format_seconds(b.memory_s)}). "
            f"Intensity <b>{b.intensity_flop_per_byte:,.3g}</b> FLOP/byte against a ridge point of "
            f"<b>{b.ridge_flop_per_byte:,.0f}</b>: at best {format_flop_rate(b.achieved_flops_per_s)}, "
            f"{b.fraction_of_peak:.1%} of the {format_flop_rate(b.peak_flops_per_s)} peak.")
    if v.array is not None and v.tiled is not None:
        a = v.array
        text += (f"<br>Tensor engine: k fills {a.k_fill:.0%} of the {a.rows} rows and m "
                 f"{a.m_fill:.0%} of the {a.cols} columns ({a.tiles:,} stationary tiles), so "
                 f"<b>{a.utilisation:.1%}</b> of the array does useful work; counting that, "
                 f"the bound is {format_seconds(v.tiled.time_s)} ({v.tiled.bound}-bound).")
    else:
        text += "<br>(Tile utilisation is modelled for Trainium chips only.)"
    return text


@benchmarked(("chip", "trn3"), ("dtype", "fp32"), ("m", 1), ("k", 100), ("n", 100_000))
def roofline_explorer(m: int = 4096, n: int = 4096, k: int = 4096, chip: str = "trn2",
                      dtype: str = "bf16") -> Explorer:
    """Chip, dtype and matmul shape → time bound, binding resource and the point on a roofline."""
    controls = {
        "chip": W.Dropdown(options=[(roofline.device(d).name, d) for d in roofline.device_names()],
                           value=chip, description="chip"),
        "dtype": W.Dropdown(options=_DTYPES, value=dtype, description="dtype"),
        "m": W.IntText(value=m, description="m (rows of A)"),
        "n": W.IntText(value=n, description="n (cols of B)"),
        "k": W.IntText(value=k, description="k (shared)"),
    }
    return Explorer(controls, _roofline, _render_roofline, _describe_roofline, columns=2)


def _counts(system: str, lnc, n_systems: int):
    return cores.core_count_table(system, None if lnc == "default" else lnc, n_systems), \
        cores.core_counts(system, None if lnc == "default" else lnc, n_systems)


def _render_counts(result):
    table, cc = result
    return core_counts_chart(table.attrs["long"], title=f"{cc.name}: LNC={cc.lnc}")


def _describe_counts(result) -> str:
    _, cc = result
    text = (f"<b>{cc.n_chips:,}</b> chips, <b>{cc.physical_cores:,}</b> physical NeuronCores, "
            f"<b>{cc.logical_cores:,}</b> logical NeuronCores at LNC={cc.lnc} "
            f"(so {cc.ranks:,} runtime ranks, {cc.logical_cores_per_chip} per chip). "
            f"Each logical core has {cc.hbm_bytes_per_logical_core / GiB:g} GiB of HBM")
    if cc.efa_bytes_per_s_per_logical_core is not None:
        text += f" and {format_bandwidth(cc.efa_bytes_per_s_per_logical_core)} of EFA"
    return text + "."


@benchmarked(("lnc", 1), ("system", "trn2-ultraserver"), ("n_systems", 4))
def core_counter(system: str = "trn2.48xlarge") -> Explorer:
    """System, LNC setting and number of systems → chips, physical and logical cores."""
    controls = {
        "system": W.Dropdown(options=[(s.name, s.key) for s in specs.systems()], value=system,
                             description="system"),
        "lnc": W.Dropdown(options=[("default", "default"), ("1", 1), ("2", 2)], value="default",
                          description="LNC"),
        "n_systems": W.IntText(value=1, description="how many"),
    }
    return Explorer(controls, _counts, _render_counts, _describe_counts, columns=3)


def _claims_html(df: pd.DataFrame) -> str:
    if df.empty:
        return "<i>No claim matches.</i>"
    cols = ("claim", "said_by", "verdict", "evidence")
    head = "".join(f"<th style='text-align:left'>{html.escape(c.replace('_', ' '))}</th>" for c in cols)
    rows = "".join("<tr>" + "".join(f"<td style='text-align:left;vertical-align:top'>"
                                    f"{html.escape(str(getattr(r, c)))}</td>" for c in cols) + "</tr>"
                   for r in df.itertuples())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


@benchmarked(("query", "hbm"), ("verdict", "contradicted"))
def claims_explorer(query: str = "") -> Explorer:
    """Every checked claim, filtered by words, verdict and who made it (``cores.claims_table``)."""
    every = cores.claims_table()
    said = list(dict.fromkeys(every.said_by))
    controls = {
        "query": W.Text(value=query, description="search", placeholder="e.g. HBM, NeuronLink, H100"),
        "verdict": W.Dropdown(options=[("any", "")] + [(v, v) for v in cores.VERDICTS], value="",
                              description="verdict"),
        "said_by": W.Dropdown(options=[("anyone", "")] + [(s[:60] + ("…" if len(s) > 60 else ""), s)
                                                          for s in said],
                              value="", description="said by"),
    }

    def compute(query: str, verdict: str, said_by: str) -> pd.DataFrame:
        return cores.claims_table(query, verdict=verdict or None, said_by=said_by or None)

    return Explorer(controls, compute, lambda df: None,
                    lambda df: f"{len(df)} of {len(every)} claims<br>{_claims_html(df)}", columns=3)
