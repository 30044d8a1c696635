"""Chapter 01's widgets: the roofline explorer (a matmul crossing the ridge as its batch grows)
and the claims table."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import ipywidgets as W
import pandas as pd

from trainium_lab import claim_checks, roofline, specs
from trainium_lab.charts.hardware import roofline_chart
from trainium_lab.units import TFLOPS, format_flop_rate, format_seconds
from trainium_lab.widgets.base import Explorer, benchmarked

__all__ = ["roofline_explorer", "claims_explorer"]

#: every dtype the course has a rate table entry for (specs' canonical keys, not retyped)
def _dtypes() -> list[str]:
    return list(dict.fromkeys(specs.DTYPE_ALIASES.values()))


def _dtypes_of(chip: str) -> list[str]:
    """The dtypes the device has a dense rate for, in the course's order."""
    rates = roofline.device(chip).dense_flops_per_s
    return [d for d in _dtypes() if d in rates]


@dataclass(frozen=True)
class _RooflineView:
    bound: roofline.MatmulBound
    tiled: roofline.MatmulBound | None
    array: roofline.ArrayUtilisation | None
    m_star: float
    limit: float
    curves: pd.DataFrame
    point: pd.DataFrame
    path: pd.DataFrame


def _roofline(chip: str, dtype: str, m: int, n: int, k: int) -> _RooflineView:
    b = roofline.matmul_bound(m, n, k, dtype, chip)
    trainium = roofline.device(chip).kind == "trainium"
    tiled = roofline.matmul_bound(m, n, k, dtype, chip, tiled=True) if trainium else None
    array = roofline.array_utilisation(m, n, k, chip, dtype) if trainium else None
    m_star = roofline.compute_bound_batch(n, k, dtype, chip)
    limit = roofline.intensity_limit(n, k, dtype)
    m_max = max(2048, 2 * b.m, 2 * math.ceil(m_star) if m_star < 10**6 else 0)
    # on log-log axes the path lies on the roof: its ends and the ridge crossing draw it exactly
    path = roofline.batch_curve(n, k, dtype, chip, m_max=m_max, n_points=2)
    high = max(1e4, 10 * b.ridge_flop_per_byte, 3 * min(limit, path.intensity.iloc[-1]))
    curves = roofline.roofline_curve(chip, dtype, low=0.5, high=high)
    label = f"{m}×{k} @ {k}×{n}"
    rows = [{"intensity": b.intensity_flop_per_byte, "tflop_per_s": b.achieved_flops_per_s / TFLOPS,
             "bound": b.bound, "label": label, "kind": "roofline bound"}]
    if tiled is not None and array is not None:
        rows.append({"intensity": b.intensity_flop_per_byte,
                     "tflop_per_s": tiled.achieved_flops_per_s / TFLOPS, "bound": tiled.bound,
                     "label": label, "kind": f"counting {array.rows}×{array.cols} tiles"})
    if m_star < m_max:  # where the path meets the ridge
        rows.append({"intensity": b.ridge_flop_per_byte, "tflop_per_s": b.peak_flops_per_s / TFLOPS,
                     "bound": "tensor engine", "label": f"m* = {m_star:,.1f}",
                     "kind": f"ridge crossed at m* = {m_star:,.1f}"})
    return _RooflineView(b, tiled, array, m_star, limit, curves, pd.DataFrame(rows), path)


def _render_roofline(v: _RooflineView):
    b = v.bound
    return roofline_chart(v.curves, v.point, labels=False, path=v.path,
                          path_label=f"reachable as m grows (n = {b.n:,}, k = {b.k:,})",
                          title=f"{v.curves.device[0]} roofline, {b.dtype}: {b.m}×{b.k} @ {b.k}×{b.n}")


def _describe_roofline(v: _RooflineView) -> str:
    b = v.bound
    text = (f"<b>{b.bound}-bound</b>: at least <b>{format_seconds(b.time_s)}</b> "
            f"(tensor engine {format_seconds(b.compute_s)}, HBM {format_seconds(b.memory_s)}). "
            f"Intensity <b>{b.intensity_flop_per_byte:,.3g}</b> FLOP/byte against a ridge point of "
            f"<b>{b.ridge_flop_per_byte:,.0f}</b>: at best {format_flop_rate(b.achieved_flops_per_s)}, "
            f"{b.fraction_of_peak:.1%} of the {format_flop_rate(b.peak_flops_per_s)} peak.")
    if math.isfinite(v.m_star):
        text += (f"<br>With n = {b.n:,} and k = {b.k:,} the matmul turns compute-bound from "
                 f"<b>m* = {v.m_star:,.1f}</b> (1/m* = 2/(ridge·bytes) − 1/n − 1/k).")
    else:
        text += (f"<br>With n = {b.n:,} and k = {b.k:,} <b>no batch makes it compute-bound</b>: "
                 f"as m grows the intensity only approaches 2nk/((n + k)·bytes) = "
                 f"{v.limit:,.3g} FLOP/byte, below the ridge.")
    if v.array is not None and v.tiled is not None:
        a = v.array
        text += (f"<br>Tensor engine: k fills {a.k_fill:.0%} of the {a.rows} rows and m "
                 f"{a.m_fill:.0%} of the {a.cols} columns ({a.tiles:,} stationary tiles), so "
                 f"<b>{a.utilisation:.1%}</b> of the array does useful work; counting that, "
                 f"the bound is {format_seconds(v.tiled.time_s)} ({v.tiled.bound}-bound).")
    else:
        text += "<br>(Tile utilisation is modelled for Trainium chips only.)"
    return text


@benchmarked(("m", 300), ("chip", "trn3"), ("dtype", "fp8"), ("k", 100), ("n", 100_000))
def roofline_explorer(m: int = 32, n: int = 8192, k: int = 8192, chip: str = "trn2",
                      dtype: str = "bf16") -> Explorer:
    """Batch m (a slider), n, k, chip and dtype → the matmul's point and path on the roofline,
    where it crosses the ridge (m*), the binding resource and the array's use."""
    holder: dict = {}
    dtype_menu = W.Dropdown(options=_dtypes_of(chip), value=dtype, description="dtype",
                            tooltip="dtype: only the formats this chip has a published rate for")

    def _offer(change):  # only what the chip can compute; registered before the Explorer's
        old = dtype_menu.value
        options = _dtypes_of(change["new"])
        dtype_menu.options = options
        if old in options:
            dtype_menu.value = old
        else:
            dtype_menu.value = "bf16"
            if "explorer" in holder:
                holder["explorer"].say(f"dtype set to bf16: {roofline.device(change['new']).name} "
                                       f"has no published {old} rate.")

    controls = {
        "m": W.IntSlider(value=m, min=1, max=max(2048, m), description="m (batch)",
                         layout=W.Layout(width="420px")),
        "chip": W.Dropdown(options=[(roofline.device(d).name, d) for d in roofline.device_names()],
                           value=chip, description="chip"),
        "n": W.IntText(value=n, description="n (cols of B)"),
        "dtype": dtype_menu,
        "k": W.IntText(value=k, description="k (shared)"),
    }
    controls["chip"].observe(_offer, names="value")
    holder["explorer"] = Explorer(controls, _roofline, _render_roofline, _describe_roofline, columns=2)
    return holder["explorer"]


def _claims_html(df: pd.DataFrame) -> str:
    if df.empty:
        return "<i>No claim matches.</i>"
    cols = ("claim", "said_by", "verdict", "evidence")
    head = "".join(f"<th style='text-align:left'>{html.escape(c.replace('_', ' '))}</th>" for c in cols)
    cell = "<td style='text-align:left;vertical-align:top'>{}</td>"
    rows = "".join("<tr>" + "".join(cell.format(html.escape(str(v))) for v in row) + "</tr>"
                   for row in zip(*(df[c].tolist() for c in cols)))  # (itertuples: ~1 ms more)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


@benchmarked(("query", "hbm"), ("verdict", "contradicted"))
def claims_explorer(query: str = "") -> Explorer:
    """Every checked claim, filtered by words, verdict and who made it (``claim_checks.claims_table``)."""
    every = claim_checks.claims_table()
    said = list(dict.fromkeys(every.said_by))
    controls = {
        "query": W.Text(value=query, description="search", placeholder="e.g. HBM, NeuronLink, H100"),
        "verdict": W.Dropdown(options=[("any", "")] + [(v, v) for v in claim_checks.VERDICTS], value="",
                              description="verdict"),
        "said_by": W.Dropdown(options=[("anyone", "")] + [(s[:60] + ("…" if len(s) > 60 else ""), s)
                                                          for s in said],
                              value="", description="said by"),
    }

    def compute(query: str, verdict: str, said_by: str) -> pd.DataFrame:
        return claim_checks.claims_table(query, verdict=verdict or None, said_by=said_by or None)

    return Explorer(controls, compute, lambda df: None,
                    lambda df: f"{len(df)} of {len(every)} claims<br>{_claims_html(df)}", columns=3)
