"""Chapter 08's widget: output-tile sizes of a tiled matmul against one NeuronCore's roofline.

Controls → ``kernels.tile_plan`` and ``kernels.matmul_cost`` (the emulator's cost model) →
``charts.kernels.core_roofline_chart`` (chapter 01's roofline chart) with the chip's roofline
and one core's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import ipywidgets as W
import pandas as pd

from trainium_lab import kernels, roofline
from trainium_lab.charts.kernels import core_roofline_chart
from trainium_lab.units import TFLOPS, format_bytes, format_flop_rate, format_seconds
from trainium_lab.widgets.base import Explorer, benchmarked, read_values

__all__ = ["tile_explorer"]

_CHIPS = [("Trainium1", "trn1"), ("Trainium2", "trn2"), ("Trainium3", "trn3")]
_DTYPES = ["bfloat16", "float8_e4m3fn", "float32"]


@dataclass(frozen=True)
class _TileView:
    plan: kernels.TilePlan
    run: kernels.KernelRun
    bound_s: float
    curves: pd.DataFrame
    point: pd.DataFrame


#: settings whose emulated run is kept: the emulator issues each DMA and instruction of the
#: tiled matmul (~900 for 4096³ in 512 × 512 tiles, ~5 ms), so a setting seen before (a menu
#: moved back) is answered from here; the explorer only reads the view
_SEEN = 64


@functools.lru_cache(maxsize=_SEEN)
def _tiles(chip: str, dtype: str, m: int, n: int, k: int, tile_m: int, tile_n: int,
           buffers: int) -> _TileView:
    plan = kernels.tile_plan(m, n, k, tile_m, tile_n, None, dtype, chip, buffers)
    if not plan.fits:
        raise ValueError(
            f"tiles {plan.tile_m} × {plan.tile_n} with {buffers} buffers need {plan.psum_banks} PSUM "
            f"banks (of {plan.psum_capacity_banks}) and {format_bytes(plan.sbuf_bytes_per_partition)} of "
            f"SBUF per partition (of {format_bytes(plan.sbuf_capacity_per_partition)}): choose smaller "
            "tiles or fewer buffers")
    run = kernels.matmul_cost(m, n, k, chip=chip, dtype=dtype, tile_m=plan.tile_m,
                              tile_n=plan.tile_n, tile_k=plan.tile_k, buffers=buffers)
    high = max(1e5, 10 * plan.intensity_flop_per_byte)
    # plain FP8 runs at the BF16 rate where the chip lists no FP8 rate (NKI Trainium3 guide)
    chip_dtype = dtype if dtype in roofline.device(chip).dense_flops_per_s else "bf16"
    curves = pd.concat([roofline.roofline_curve(chip, chip_dtype, high=high),
                        kernels.core_roofline(chip, dtype, high=high)], ignore_index=True)
    curves["device"] = [d if d.startswith("one ") else f"{d} chip (chapter 01)" for d in curves.device]
    point = pd.DataFrame([{"intensity": run.intensity_flop_per_byte,
                           "tflop_per_s": run.achieved_flops_per_s / TFLOPS,
                           "bound": "tensor engine" if run.binding_engine == "tensor" else "HBM",
                           "label": f"{plan.tile_m} × {plan.tile_n} tiles"}])
    return _TileView(plan, run, kernels.core_bound_s(m, n, k, dtype, chip), curves, point)


def _render(v: _TileView):
    p = v.plan
    return core_roofline_chart(v.curves, v.point,
                               title=f"{p.m}×{p.k} @ {p.k}×{p.n} {p.dtype}, {p.tile_m} × {p.tile_n} tiles")


def _describe(v: _TileView) -> str:
    p, r = v.plan, v.run
    minimum = roofline.matmul_bytes(p.m, p.n, p.k, p.dtype)
    return (f"HBM traffic <b>{format_bytes(r.hbm_bytes)}</b> ({r.hbm_bytes / minimum:.1f}× the "
            f"{format_bytes(minimum)} of reading A and B once); intensity "
            f"<b>{p.intensity_flop_per_byte:,.0f}</b> FLOP/byte. SBUF "
            f"{format_bytes(p.sbuf_bytes_per_partition)} of {format_bytes(p.sbuf_capacity_per_partition)} "
            f"per partition (k in chunks of {p.tile_k}), PSUM {p.psum_banks} of {p.psum_capacity_banks} "
            f"banks.<br>Emulated time on one core <b>{format_seconds(r.time_s)}</b> "
            f"({format_flop_rate(r.achieved_flops_per_s)}; busiest: {r.binding_engine}) against a "
            f"roofline bound of {format_seconds(v.bound_s)}.")


#: tile sizes offered: this many multiples of the array's columns (tile_m) and of one PSUM
#: bank (tile_n)
_TILE_STEPS = 8


@functools.lru_cache(maxsize=1024)
def _fits(m, n, k, tile_m: int, tile_n: int, dtype: str, chip: str, buffers: int) -> bool:
    """Whether the tile fits SBUF and PSUM (the menus ask for ~17 tiles on every update)."""
    try:
        return kernels.tile_plan(m, n, k, tile_m, tile_n, None, dtype, chip, buffers).fits
    except ValueError:
        return False


def _tile_menus(explorer: Explorer) -> None:
    """Offer only the tile sizes that fit SBUF and PSUM with the other settings (with two
    buffers, 7 of 8 tile_n widths never fit next to a 512-row tile_m); tiles the new settings
    no longer fit are made smaller, and that is said."""
    c = explorer.controls
    try:
        v = read_values(c)[0]
        core = kernels.core_model(v["chip"])
    except ValueError:
        return  # the update says what cannot be read
    all_m = [core.stationary_fmax * i for i in range(1, _TILE_STEPS + 1)]
    all_n = [core.psum_tile_fmax * j for j in range(1, _TILE_STEPS + 1)]

    def fits(tm: int, tn: int) -> bool:
        return _fits(v["m"], v["n"], v["k"], tm, tn, v["dtype"], v["chip"], v["buffers"])

    tm, tn = v["tile_m"], v["tile_n"]
    if not fits(tm, tn):
        keep_m = [b for b in all_n if b <= tn and fits(tm, b)]
        keep_n = [a for a in all_m if a <= tm and fits(a, tn)]
        pairs = [(a, b) for a in all_m for b in all_n if fits(a, b)]
        if keep_m:
            new = (tm, keep_m[-1])
        elif keep_n:
            new = (keep_n[-1], tn)
        elif pairs:
            new = min(pairs)
        else:
            return  # nothing fits: the update says why
        explorer.say(f"tiles set to {new[0]} × {new[1]}: {tm} × {tn} with {v['buffers']} "
                     f"buffer{'s' if v['buffers'] != 1 else ''} does not fit PSUM and SBUF.")
        tm, tn = new
    for name, options, value in (("tile_m", [a for a in all_m if fits(a, tn)], tm),
                                 ("tile_n", [b for b in all_n if fits(tm, b)], tn)):
        menu = c[name]
        if list(menu.options) != options:
            menu.options = options
        if menu.value != value:
            menu.value = value


@benchmarked(("buffers", 1), ("tile_m", 256), ("chip", "trn3"), ("dtype", "float8_e4m3fn"), ("m", 2048))
def tile_explorer(m: int = 4096, n: int = 4096, k: int = 4096, chip: str = "trn2",
                  dtype: str = "bfloat16") -> Explorer:
    """Output tile and buffers of a tiled matmul → traffic, SBUF/PSUM use, intensity and time."""
    core = kernels.core_model(chip)
    m_step, n_step = core.stationary_fmax, core.psum_tile_fmax   # array columns, one PSUM bank
    controls = {
        "chip": W.Dropdown(options=_CHIPS, value=chip, description="chip"),
        "dtype": W.Dropdown(options=_DTYPES, value=dtype, description="dtype"),
        "m": W.IntText(value=m, description="m"),
        "n": W.IntText(value=n, description="n"),
        "k": W.IntText(value=k, description="k"),
        "tile_m": W.Dropdown(options=[m_step * i for i in range(1, _TILE_STEPS + 1)], value=4 * m_step,
                             description="tile_m",
                             tooltip="tile_m: only the sizes that fit SBUF and PSUM with the other "
                                     "settings (fewer buffers or a smaller tile_n offer more)"),
        "tile_n": W.Dropdown(options=[n_step * j for j in range(1, _TILE_STEPS + 1)], value=n_step,
                             description="tile_n",
                             tooltip="tile_n: only the sizes that fit SBUF and PSUM with the other "
                                     "settings (fewer buffers or a smaller tile_m offer more)"),
        "buffers": W.Dropdown(options=[1, 2, 3], value=2, description="buffers"),
    }
    return Explorer(controls, _tiles, _render, _describe, columns=3, offer=_tile_menus)
