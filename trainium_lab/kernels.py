"""Chapter 08's model: one NeuronCore as an emulator you can write tile programs for.

This is **not NKI** and does not run NKI code. It is a small numpy emulator shaped like the
NKI programming model, so that a kernel written here has the same structure as one written
for a NeuronCore, and its cost can be reasoned about without a Neuron device:

* **Memory spaces.** HBM (the chip's device memory), SBUF and PSUM (per core, with the
  capacities and partition count of ``data/cores.csv``). A tile's first axis is its
  partition axis and may span at most as many partitions as SBUF has. Allocating past SBUF
  or PSUM capacity raises a ``ValueError`` that says how much was asked and how much is
  free. Nothing moves by itself: every load, store and PSUM evacuation is an operation.
* **Engines.** DMA loads (HBM → SBUF) and stores (SBUF → HBM); the tensor engine (matmul
  from SBUF into FP32 PSUM, contraction on the partition axis); the vector engine
  (element-wise with two inputs, per-partition scalars, reductions along the free axes,
  copies); the scalar engine (activation functions with a fused scale, bias and sum); and
  GpSimd, an escape hatch that runs any numpy function.
* **Numerics.** Values are held as float32 arrays whose values are exactly representable
  in each tile's dtype: writing into a BF16 or FP8 tile rounds to nearest-even through
  :func:`trainium_lab.numerics.round_to`; the engines compute in FP32 (as the NKI guides
  say they do); the tensor engine accumulates in FP32.
* **Cost.** Each operation's time comes from the engine's sourced rate: DMA bytes over
  the bandwidth of the DMA engines the tile's partitions reach (each engine serves
  ``partitions / 16`` of them), slowed below about 2 KiB per partition, after a fixed
  cost per transfer (AWS's DMA bandwidth guide); a matmul instruction occupies the whole array for
  ``max(N, mm_min_cycles)`` cycles at the dtype's peak rate (so a 100-row contraction costs
  as much as a 128-row one); a vector, scalar or GpSimd instruction streams its free
  elements at the engine's data-path width, plus a fixed per-instruction overhead. Each
  engine runs its instructions in program order; an instruction starts when its engine is
  free and the buffers it reads (and overwrites) are ready, which gives the timeline and
  lets 1, 2 or 3 buffers per stream overlap DMA with compute.

Where it simplifies (each is stated again where it matters):

* **DMA queues.** By default (``dma_queues="shared"``) loads and stores are two queues, each in
  order, that share the core's 16 DMA engines: a transfer takes the engines when they are free
  (a later-issued load may fill a gap before an earlier store), so all DMA together never runs
  faster than the core's DMA bandwidth and a kernel never beats ``KernelRun.dma_floor_s``.
  ``dma_queues="separate"`` gives each queue the full bandwidth at once (the view of earlier
  versions of this emulator): it shows how far overlap could go, not what a core does.
* **DMA cost of one transfer.** ``fixed + bytes / (bandwidth × efficiency)``. The fixed cost
  (``dma_fixed_s``, about 1.3 µs) is latency from trigger to data: it overlaps with the data of
  the transfer before it in the same queue (needed for large transfers to saturate, as AWS says
  they do) and shows when a transfer waits for compute. The bandwidth is ``min(engines reached
  × per-engine rate, the core's DMA bandwidth)``. The efficiency is ``min(1, bytes per partition
  / dma_efficient_bytes_per_partition)``: below the guide's 2 KiB per partition a transfer is
  bound by descriptors, not bytes (a packet-rate floor). The per-engine rate is the DMA
  bandwidth guide's table (17 / 23 / 33 B/ns on NeuronCore-v2 / v3 / v4) by default,
  ``dma_figure="prose"`` the DMA overview's 27.2 / 38.4 GB/s; AWS states both.
* The core's DMA bandwidth is ``min(16 engines × per-engine rate, chip HBM bandwidth / cores)``:
  an equal share of HBM when every core streams, which AWS does not state.
* The vector engine's BF16/FP16 width (NeuronCore-v3 and -v4) is its performance mode, which
  the Trainium2 guide grants to ``tensor_copy`` and ``tensor_scalar`` with all operands in
  SBUF; other vector instructions stream at the width for other data types (see
  ``Kernel._engine_s``).
* Figures AWS states for one generation only (the 64-cycle matmul minimum, the 60-cycle
  access overhead, GpSimd's width on NeuronCore-v3) carry over to the others; they are
  listed in ``CoreModel.assumed`` and are explicit inputs of :func:`core_model`. AWS gives
  no rule of thumb for GpSimd instruction cost at all: its width-based cost is an assumption.
* Per-instruction exceptions the NKI ISA reference lists (faster modes, strided access,
  engine-to-engine SRAM access rules of NeuronCore-v2, background LoadStationary, BF16
  PSUM on NeuronCore-v4) are not modelled; dependencies are tracked per buffer, not per
  element; MX formats have a contraction limit here but no emulated numerics.

References
----------
AWS Neuron docs: "Trainium/Inferentia2 Architecture Guide for NKI", "Trainium2 Architecture
Guide for NKI", "Trainium3 Architecture Guide for NKI" (engines, data-path widths, instruction
cost models, tile-size limits, PSUM banks, double-FP8 and MX matmul); "What is Tiling?"
(partition dimension at most 128; PSUM and matmul tile limits); "The Trainium Memory
Hierarchy" (all memories software-managed); "Introduction to Direct Memory Access (DMA) with
NKI" (16 DMA engines per core, 27.2 / 38.4 GB/s each in its prose, eight partitions per engine,
a profiled [4, 4096] BF16 load on one engine); "Guideline to Avoid Under-Utilizing DMA
Bandwidth" (17 / 23 / 33 B/ns per engine, ~1,300 ns per transfer, >= 2 KiB per partition).
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from trainium_lab import dtypes, numerics, roofline, specs
from trainium_lab import units as u
from trainium_lab._validate import UnknownNameError, choice, in_range, integer, positive

__all__ = [
    "ENGINES", "SPACES", "ACTIVATIONS", "DMA_FIGURES", "DMA_QUEUES", "CoreModel", "core_model",
    "max_contraction", "nki_mapping", "nki_library", "matmul_ladder", "SystolicTiming", "systolic_matmul_cycles",
    "decode_matmul_orientations",
    "memory_hierarchy", "core_roofline", "core_bound_s", "Tensor", "View", "Pool", "Kernel",
    "KernelRun", "pipeline_time_s", "matmul_hbm_bytes", "TilePlan", "tile_plan", "largest_tiles",
    "tiled_matmul", "matmul_cost", "elementwise", "softmax", "attention_softmax", "rmsnorm",
]

#: engine queues of the timeline, in display order
ENGINES: tuple[str, ...] = ("dma_load", "tensor", "vector", "scalar", "gpsimd", "dma_store")
#: per-engine DMA bandwidth figures AWS states: the DMA bandwidth guide's table, the DMA overview's prose
DMA_FIGURES: tuple[str, ...] = ("table", "prose")
#: how loads and stores use the DMA engines (see the module docstring)
DMA_QUEUES: tuple[str, ...] = ("shared", "separate")
#: memory spaces
SPACES: tuple[str, ...] = ("hbm", "sbuf", "psum")
#: activation functions of :meth:`Kernel.activation` (the scalar engine)
ACTIVATIONS: tuple[str, ...] = ("identity", "exp", "square", "sqrt", "rsqrt", "reciprocal",
                                "tanh", "sigmoid", "silu")
_VECTOR_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
_REDUCE_OPS = ("sum", "max", "min")
#: each matmul multiply-accumulate is two FLOPs (one multiply, one add)
_FLOPS_PER_MAC = 2
#: largest array the emulator executes (elements): keeps a notebook cell in seconds
_MAX_ELEMENTS = 2**27
_MAX_DIM = 2**30


# --------------------------------------------------------------------------- per-core figures

def _fp32_bytes() -> int:
    return numerics.format_info("float32").bytes


def _dtype(dtype: Any, name: str = "dtype") -> str:
    """Canonical numerics format name (``"bfloat16"``...); ValueError naming ``name``."""
    return dtypes.canonical(dtype, name, allowed=numerics.FORMATS)


def _width_key(dtype: str) -> str:
    """Key of the per-dtype engine widths in ``data/cores.csv``: bf16 (16-bit), fp8, fp32."""
    if dtype in ("bfloat16", "float16"):
        return "bf16"
    if dtype.startswith("float8"):
        return "fp8"
    return "fp32"


def _core_names() -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.core_version for c in specs.chips()))


def _core_value(core: str, field_name: str):
    try:
        return specs.fact(core, field_name, "core").base_value
    except ValueError:
        return None


def _carried(core: str, field_name: str) -> tuple[Any, bool]:
    """The core's own value, or else the nearest earlier (then later) generation's, flagged."""
    own = _core_value(core, field_name)
    if own is not None:
        return own, False
    names = _core_names()
    i = names.index(core)
    for other in list(reversed(names[:i])) + list(names[i + 1:]):
        value = _core_value(other, field_name)
        if value is not None:
            return value, True
    raise ValueError(f"no NeuronCore in data/ records {field_name}")  # pragma: no cover


@dataclass(frozen=True)
class CoreModel:
    """The figures the emulator uses for one NeuronCore, in base units.

    Every value comes from ``data/cores.csv`` / ``data/chips.csv`` or is an explicit input of
    :func:`core_model`; ``assumed`` names the fields this core's own sources do not state.
    """

    chip: str
    chip_name: str
    core: str
    partitions: int
    sbuf_bytes: float
    psum_bytes: float
    psum_tile_fmax: int
    stationary_fmax: int
    tensor_rows: int
    contraction_max: Mapping[str, int]
    dense_flops_per_s: specs.DtypeTable
    clocks_hz: Mapping[str, float]
    elements_per_cycle: Mapping[tuple[str, str], float]
    mm_min_cycles: float
    instruction_overhead_cycles: float
    dma_engines: int
    dma_engine_bytes_per_s: float
    hbm_share_bytes_per_s: float
    dma_bytes_per_s: float
    dma_fixed_s: float
    hbm_bytes: float
    assumed: tuple[str, ...]
    dma_figure: str = "table"
    dma_efficient_bytes_per_partition: float = 0.0
    dma_queues: str = "shared"

    @property
    def sbuf_bytes_per_partition(self) -> float:
        """SBUF bytes in each partition."""
        return self.sbuf_bytes / self.partitions

    @property
    def psum_bytes_per_partition(self) -> float:
        """PSUM bytes in each partition."""
        return self.psum_bytes / self.partitions

    @property
    def psum_bank_bytes(self) -> float:
        """Bytes of one PSUM bank per partition: ``psum_tile_fmax`` FP32 values."""
        return self.psum_tile_fmax * _fp32_bytes()

    @property
    def psum_banks(self) -> int:
        """PSUM banks per partition."""
        return int(self.psum_bytes_per_partition // self.psum_bank_bytes)

    @property
    def dma_engines_bytes_per_s(self) -> float:
        """All of the core's DMA engines together: engines × per-engine bandwidth."""
        return self.dma_engines * self.dma_engine_bytes_per_s

    def dma_transfer_s(self, nbytes: float, partitions: int) -> float:
        """Data time of one transfer of ``nbytes`` over ``partitions`` SBUF partitions (the
        fixed cost ``dma_fixed_s`` comes on top, as latency): bytes over the bandwidth of the
        engines those partitions reach, at the small-transfer efficiency.

        Examples
        --------
        >>> c = core_model("trn2")
        >>> round(c.dma_transfer_s(4 * 4096 * 2, 4) * 1e9)   # one engine, 32 KiB at 23 B/ns
        1425
        >>> round(c.dma_transfer_s(128 * 256, 128) / c.dma_transfer_s(128 * 2048, 128), 3)  # 256 B/partition
        1.0
        """
        if nbytes <= 0:
            return 0.0
        partitions = max(1, int(partitions))
        per_engine = self.partitions / self.dma_engines
        engines = min(self.dma_engines, math.ceil(partitions / per_engine))
        bandwidth = min(engines * self.dma_engine_bytes_per_s, self.dma_bytes_per_s)
        efficiency = 1.0
        if self.dma_efficient_bytes_per_partition > 0:
            efficiency = min(1.0, nbytes / partitions / self.dma_efficient_bytes_per_partition)
        return nbytes / (bandwidth * efficiency)

    def _repr_markdown_(self) -> str:
        return (f"**{self.core}** ({self.chip_name}): SBUF {self.sbuf_bytes / u.MiB:g} MiB in "
                f"{self.partitions} partitions, PSUM {self.psum_bytes / u.MiB:g} MiB "
                f"({self.psum_banks} banks of {self.psum_tile_fmax} FP32 per partition), "
                f"tensor engine {self.dense_flops_per_s['bf16'] / u.TFLOPS:g} TFLOP/s BF16, DMA "
                f"{u.format_bandwidth(self.dma_bytes_per_s)} ({self.dma_figure} figure, "
                f"{self.dma_queues} queues, {self.dma_fixed_s / u.us:g} µs per transfer); assumed: "
                f"{', '.join(self.assumed) or 'nothing'}")


def core_model(chip: str = "trn2", *, dma_bytes_per_s: float | None = None,
               mm_min_cycles: float | None = None,
               instruction_overhead_cycles: float | None = None,
               gpsimd_elements_per_cycle: float | None = None,
               dma_fixed_s: float | None = None, dma_figure: str = "table",
               dma_efficient_bytes_per_partition: float | None = None,
               dma_queues: str = "shared") -> CoreModel:
    """The per-core figures of a chip's NeuronCore that the emulator's cost model uses.

    Parameters
    ----------
    chip : str
        ``"trn1"``, ``"trn2"`` or ``"trn3"`` (the core is the chip's NeuronCore version).
    dma_bytes_per_s : float, optional
        HBM ↔ SBUF bandwidth of one core (bytes/s). Default: the smaller of the core's DMA
        engines together (engines × per-engine rate) and an equal share of the chip's HBM
        bandwidth (an assumption: AWS does not state how cores share HBM bandwidth).
    mm_min_cycles : float, optional
        Minimum tensor-engine cycles per matmul instruction; default the NeuronCore-v2
        figure (stated for v2 only).
    instruction_overhead_cycles : float, optional
        Fixed cycles added to every vector, scalar and GpSimd instruction; default the
        NeuronCore-v2 SBUF/PSUM access overhead (stated for v2 only).
    gpsimd_elements_per_cycle : float, optional
        GpSimd data-path width; default the recorded width (NeuronCore-v3 has none
        recorded, so it takes the nearest generation's). AWS gives no rule of thumb for
        GpSimd instruction cost, so this is always listed as assumed.
    dma_fixed_s : float, optional
        Fixed cost of every DMA transfer (s), latency from trigger to data; default the DMA
        bandwidth guide's ~1,300 ns (``data/cores.csv``). 0 turns it off.
    dma_figure : str
        ``"table"`` (default): the DMA bandwidth guide's 17 / 23 / 33 B/ns per engine;
        ``"prose"``: the DMA overview's 27.2 / 38.4 GB/s. AWS states both.
    dma_efficient_bytes_per_partition : float, optional
        Bytes per partition from which a transfer runs at full bandwidth (below it, time
        is as if it moved this many); default the guide's 2 KiB. 0 turns it off.
    dma_queues : str
        ``"shared"`` (default): loads and stores share the DMA engines; ``"separate"``:
        each gets the full bandwidth at once (an upper bound on overlap).

    Returns
    -------
    CoreModel

    References
    ----------
    AWS NKI architecture guides (engine data-path widths, frequencies, cost models); AWS
    "Introduction to DMA with NKI" (16 DMA engines per core; 27.2 GB/s each on v2 and v3,
    38.4 GB/s on v4, in its prose); "Guideline to Avoid Under-Utilizing DMA Bandwidth"
    (17 / 23 / 33 B/ns per engine, ~1,300 ns per transfer, 2 KiB per partition).

    Examples
    --------
    >>> c = core_model("trn2")
    >>> c.core, c.partitions, c.psum_banks
    ('NeuronCore-v3', 128, 8)
    >>> round(c.dma_bytes_per_s / 1e9, 1)   # 2.9 TB/s shared by 8 cores binds before 16 × 23 GB/s
    362.5
    >>> round(core_model("trn1").dma_bytes_per_s / 1e9), round(core_model("trn1", dma_figure="prose").dma_bytes_per_s / 1e9)
    (272, 435)
    >>> "mm_min_cycles" in c.assumed, "mm_min_cycles" in core_model("trn1").assumed
    (True, False)
    """
    key = specs.chip(chip).key
    overrides = (
        None if dma_bytes_per_s is None else positive("dma_bytes_per_s", dma_bytes_per_s),
        None if mm_min_cycles is None else in_range("mm_min_cycles", mm_min_cycles, 0, 1e6),
        None if instruction_overhead_cycles is None
        else in_range("instruction_overhead_cycles", instruction_overhead_cycles, 0, 1e6),
        None if gpsimd_elements_per_cycle is None
        else in_range("gpsimd_elements_per_cycle", gpsimd_elements_per_cycle, 1, 1e6),
        None if dma_fixed_s is None else in_range("dma_fixed_s", dma_fixed_s, 0, 1.0),
        choice("dma_figure", dma_figure, DMA_FIGURES),
        None if dma_efficient_bytes_per_partition is None
        else in_range("dma_efficient_bytes_per_partition", dma_efficient_bytes_per_partition, 0, 2**30),
        choice("dma_queues", dma_queues, DMA_QUEUES),
    )
    if overrides[0] is not None and overrides[0] > 1e15:
        raise ValueError(f"dma_bytes_per_s must be at most 1e15, got {dma_bytes_per_s!r}")
    return _core_model(key, *overrides)


@functools.lru_cache(maxsize=64)
def _core_model(key: str, dma_override, mm_override, overhead_override, gpsimd_override,
                fixed_override, dma_figure: str, knee_override, dma_queues: str) -> CoreModel:
    c = specs.chip(key)
    core = c.core
    name = core.name
    assumed: list[str] = []

    def carried(field_name: str, override=None) -> float:
        if override is not None:
            assumed.append(field_name)
            return float(override)
        value, was_carried = _carried(name, field_name)
        if was_carried:
            assumed.append(field_name)
        return float(value)

    widths: dict[tuple[str, str], float] = {}
    for engine in ("vector", "scalar"):
        for dkey in ("bf16", "fp8", "fp32"):
            widths[(engine, dkey)] = carried(f"{engine}_elements_per_cycle.{dkey}")
    gpsimd = carried("gpsimd_elements_per_cycle.fp32", gpsimd_override)
    if "gpsimd_elements_per_cycle.fp32" not in assumed:
        assumed.append("gpsimd_elements_per_cycle.fp32")  # no cost rule of thumb from AWS
    for dkey in ("bf16", "fp8", "fp32"):
        widths[("gpsimd", dkey)] = gpsimd
    contraction = {f.field.split(".", 1)[1]: int(f.base_value)
                   for f in specs._facts("core")
                   if f.entity == name and f.status == "used"
                   and f.field.startswith("tensor_contraction_max.")}
    engines = carried("dma_engines")
    if dma_figure == "prose":
        per_engine = _dma_prose_rate(name)
    else:
        per_engine = carried("dma_engine_bytes_per_s")
    hbm_share = c.hbm_bytes_per_s / c.neuron_cores
    if dma_override is None:
        dma = min(engines * per_engine, hbm_share)
        assumed.append("dma_bytes_per_s")
    else:
        dma = float(dma_override)
        assumed.append("dma_bytes_per_s")
    dma_fixed_s = carried("dma_fixed_s", fixed_override)
    knee = carried("dma_efficient_bytes_per_partition", knee_override)
    return CoreModel(
        chip=c.key, chip_name=c.name, core=name, partitions=core.sbuf_partitions,
        sbuf_bytes=core.sbuf_bytes, psum_bytes=core.psum_bytes,
        psum_tile_fmax=int(carried("psum_tile_fmax")), stationary_fmax=core.tensor_cols,
        tensor_rows=core.tensor_rows, contraction_max=contraction,
        dense_flops_per_s=core.dense_flops_per_s, clocks_hz=dict(core.clocks_hz),
        elements_per_cycle=widths, mm_min_cycles=carried("mm_min_cycles", mm_override),
        instruction_overhead_cycles=carried("instruction_overhead_cycles", overhead_override),
        dma_engines=int(engines), dma_engine_bytes_per_s=per_engine,
        hbm_share_bytes_per_s=hbm_share, dma_bytes_per_s=dma, dma_fixed_s=float(dma_fixed_s),
        hbm_bytes=c.hbm_bytes, assumed=tuple(dict.fromkeys(assumed)), dma_figure=dma_figure,
        dma_efficient_bytes_per_partition=float(knee), dma_queues=dma_queues,
    )


def _dma_prose_rate(core: str) -> float:
    """The DMA overview's per-engine rate for this core (the ``alternative`` row of
    ``dma_engine_bytes_per_s`` sourced to ``aws-nki-dma``)."""
    for f in specs._facts("core"):
        if f.entity == core and f.field == "dma_engine_bytes_per_s" and f.source_id == "aws-nki-dma":
            return float(f.base_value)
    raise ValueError(f"no DMA-overview figure for {core} in data/cores.csv")  # pragma: no cover


def _tensor_mode(core: CoreModel, dtypes: Sequence[str]) -> tuple[str, int]:
    """(rate key, contraction per instruction) for matmul operands of these dtypes.

    FP8 has its own rate and a wider contraction only where ``data/`` records them (the
    NeuronCore-v3 double-FP8 mode); elsewhere FP8 and FP16 run at the BF16 rate (NKI
    guides). Any FP32 operand runs at the FP32 rate.
    """
    if any(d == "float32" for d in dtypes):
        key = "fp32"
    elif all(d.startswith("float8") for d in dtypes) and "fp8" in core.dense_flops_per_s:
        key = "fp8"
    else:
        key = "bf16"
    return key, int(core.contraction_max.get(key, core.tensor_rows))


def max_contraction(chip: str = "trn2", dtype: str = "bfloat16") -> int:
    """Largest contraction one matmul instruction takes for ``dtype`` on a chip's core.

    The partition axis holds at most ``sbuf_partitions`` (128) rows; the NeuronCore-v3
    double-FP8 mode contracts 256 (128 partitions × 2) and the NeuronCore-v4 MX mode 512
    (128 × 4). MX dtypes (``"mxfp8"``, ``"mxfp4"``) are accepted here; the emulator itself
    does not emulate their numerics.

    References
    ----------
    AWS "Trainium2 Architecture Guide for NKI" (double FP8 matmul); "Trainium3 Architecture
    Guide for NKI" (quad MXFP8/MXFP4 matmul).

    Examples
    --------
    >>> max_contraction("trn2", "bfloat16"), max_contraction("trn2", "float8_e4m3fn")
    (128, 256)
    >>> max_contraction("trn3", "float8_e4m3fn"), max_contraction("trn3", "mxfp8")
    (128, 512)
    """
    core = core_model(chip)
    name = dtypes.canonical(dtype)
    if dtypes.NUMBER_FORMATS[name].block_size:  # MX formats: their own contraction, if recorded
        return int(core.contraction_max.get(dtypes.rate_key(name), core.tensor_rows))
    return _tensor_mode(core, [_dtype(dtype)])[1]


def memory_hierarchy(chip: str = "trn2") -> pd.DataFrame:
    """HBM, SBUF and PSUM of one core of ``chip`` as numbers, with the DMA path between them.

    Returns
    -------
    pandas.DataFrame
        One row per memory (``hbm``, ``sbuf``, ``psum``). Columns ``space``, ``scope``
        (``chip`` or ``core``), ``capacity_bytes``, ``partitions`` (0 for linear HBM),
        ``bytes_per_partition``, ``fill_bytes_per_s`` (how fast one core fills it: the DMA
        bandwidth for SBUF, the chip's HBM bandwidth for HBM, 0 for PSUM, which only the
        tensor engine writes), ``cores_sharing`` (cores that share the capacity).

    Examples
    --------
    >>> t = memory_hierarchy("trn2").set_index("space")
    >>> float(t.loc["sbuf", "capacity_bytes"] / 2**20), float(t.loc["psum", "bytes_per_partition"] / 2**10)
    (28.0, 16.0)
    """
    core = core_model(chip)
    c = specs.chip(core.chip)
    return pd.DataFrame([
        {"space": "hbm", "scope": "chip", "capacity_bytes": c.hbm_bytes, "partitions": 0,
         "bytes_per_partition": 0.0, "fill_bytes_per_s": c.hbm_bytes_per_s,
         "cores_sharing": c.neuron_cores},
        {"space": "sbuf", "scope": "core", "capacity_bytes": core.sbuf_bytes,
         "partitions": core.partitions, "bytes_per_partition": core.sbuf_bytes_per_partition,
         "fill_bytes_per_s": core.dma_bytes_per_s, "cores_sharing": 1},
        {"space": "psum", "scope": "core", "capacity_bytes": core.psum_bytes,
         "partitions": core.partitions, "bytes_per_partition": core.psum_bytes_per_partition,
         "fill_bytes_per_s": 0.0, "cores_sharing": 1},
    ])


def _core_peak(core: CoreModel, dtype: str) -> float:
    return core.dense_flops_per_s[_tensor_mode(core, [_dtype(dtype)])[0]]


def core_roofline(chip: str = "trn2", dtype: str = "bfloat16", *, low: float = 0.1,
                  high: float = 1e5) -> pd.DataFrame:
    """Chapter 01's roofline for one NeuronCore: its tensor-engine peak for ``dtype`` and its
    DMA bandwidth (:func:`core_model`) in place of the chip's.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`trainium_lab.roofline.roofline_curve` (``device``, ``dtype``,
        ``intensity``, ``flops_per_s``, ``tflop_per_s``, ``region``, ``tier``): the two ends
        and the ridge point.

    References
    ----------
    Williams, Waterman and Patterson (2009), the roofline model.

    Examples
    --------
    >>> df = core_roofline("trn2", "bfloat16")
    >>> round(float(df.intensity[1])), round(float(df.tflop_per_s.max()))
    (218, 79)
    """
    low, high = positive("low", low), positive("high", high)
    if high <= low or high > 1e12:
        raise ValueError(f"high must be > low ({low:g}) and at most 1e12, got {high!r}")
    core = core_model(chip)
    peak, bw = _core_peak(core, dtype), core.dma_bytes_per_s
    ridge = peak / bw
    x = np.array(sorted({low, high} | ({ridge} if low < ridge < high else set())))
    y = np.minimum(peak, x * bw)
    tier = specs.fact(core.core, "dma_engine_bytes_per_s", "core").source_tier
    return pd.DataFrame({"device": f"one {core.core} ({core.chip_name})",
                         "dtype": _tensor_mode(core, [_dtype(dtype)])[0], "intensity": x,
                         "flops_per_s": y, "tflop_per_s": y / u.TFLOPS,
                         "region": np.where(x < ridge, "HBM", "tensor engine"), "tier": tier})


def core_bound_s(m: int, n: int, k: int, dtype: str = "bfloat16", chip: str = "trn2") -> float:
    """Chapter 01's lower bound for one NeuronCore: ``max(2mnk / peak, bytes / DMA bandwidth)``
    with the minimum traffic of :func:`trainium_lab.roofline.matmul_bytes`.

    Examples
    --------
    >>> round(core_bound_s(4096, 4096, 4096) * 1e3, 2)   # 137 GFLOP at 79 TFLOP/s
    1.74
    """
    m, n, k = (integer(nm, v, minimum=1, maximum=_MAX_DIM) for nm, v in (("m", m), ("n", n), ("k", k)))
    core = core_model(chip)
    dtype = _dtype(dtype)
    return max(roofline.matmul_flops(m, n, k) / _core_peak(core, dtype),
               roofline.matmul_bytes(m, n, k, dtype) / core.dma_bytes_per_s)


# --------------------------------------------------------------------------- tensors and views

class Tensor:
    """A named buffer in HBM, SBUF or PSUM. Index it (``t[:100, 0:512]``) to get a :class:`View`.

    ``data`` is a float32 array whose values are representable in ``dtype`` (``None`` when
    the kernel only models cost). In SBUF and PSUM, ``shape[0]`` is the partition axis.
    """

    __slots__ = ("kernel", "name", "space", "shape", "dtype", "itemsize", "data", "writer",
                 "write_end", "readers", "read_end", "per_partition_bytes", "banks", "alive", "_full",
                 "alias_of", "aliases")

    def __init__(self, kernel: "Kernel", name: str, space: str, shape: tuple[int, ...],
                 dtype: str, data: np.ndarray | None):
        self.kernel, self.name, self.space, self.shape, self.dtype = kernel, name, space, shape, dtype
        self.itemsize = numerics.format_info(dtype).bytes
        self.data = data
        self.writer: int | None = None
        self.write_end = 0.0
        self.readers: list[int] = []
        self.read_end = 0.0
        self.per_partition_bytes = 0.0
        self.banks = 0
        self.alive = True
        self._full = View(self, tuple((0, n) for n in shape))
        # copy-on-write loads: an SBUF tile loaded whole from HBM (no rounding needed) shares
        # the HBM array until something writes to either of them
        self.alias_of: Tensor | None = None
        self.aliases: set[Tensor] = set()

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    def view(self) -> "View":
        """The whole tensor as a view."""
        return self._full

    def __getitem__(self, key) -> "View":
        return self._full[key]

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.space}, {list(self.shape)}, {self.dtype})"


class View:
    """A rectangular part of a :class:`Tensor` (unit steps only)."""

    __slots__ = ("tensor", "bounds", "shape")

    def __init__(self, tensor: Tensor, bounds: tuple[tuple[int, int], ...]):
        self.tensor = tensor
        self.bounds = bounds
        self.shape = tuple(b - a for a, b in bounds)

    def __getitem__(self, key) -> "View":
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > len(self.shape):
            raise ValueError(f"index has {len(key)} axes but {self.tensor.name!r} has {len(self.shape)}")
        bounds = list(self.bounds)
        for axis, k in enumerate(key):
            lo, hi = bounds[axis]
            n = hi - lo
            if type(k) is slice and k.step is None:
                start = 0 if k.start is None else k.start
                stop = n if k.stop is None else k.stop
                if type(start) is int and type(stop) is int and 0 <= start <= stop <= n:
                    bounds[axis] = (lo + start, lo + stop)
                    continue
            if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
                i = int(k) + (n if k < 0 else 0)
                if not 0 <= i < n:
                    raise ValueError(f"index {k} is out of range for axis {axis} of size {n}")
                bounds[axis] = (lo + i, lo + i + 1)
            elif isinstance(k, slice):
                if k.step not in (None, 1):
                    raise ValueError("views take unit steps only")
                try:
                    start, stop, _ = k.indices(n)
                except TypeError:
                    raise ValueError(f"slice bounds must be integers, got {k!r}") from None
                if stop < start:
                    stop = start
                bounds[axis] = (lo + start, lo + stop)
            else:
                raise ValueError(f"index must be ints and slices, got {k!r}")
        return View(self.tensor, tuple(bounds))

    @property
    def slices(self) -> tuple[slice, ...]:
        """numpy slices of the underlying array."""
        return tuple(slice(a, b) for a, b in self.bounds)

    @property
    def data(self) -> np.ndarray | None:
        """The viewed part of the tensor's array (a numpy view), or ``None`` in cost-only mode."""
        d = self.tensor.data
        return None if d is None else d[self.slices]

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def free_size(self) -> int:
        """Elements per partition: the product of every axis but the first."""
        return math.prod(self.shape[1:])

    def __repr__(self) -> str:
        return f"View({self.tensor.name!r}, {list(self.shape)})"


class Pool:
    """``buffers`` tensors of one shape used in turn: ``pool[i]`` is buffer ``i % buffers``.

    Writing a new tile into a buffer waits until every reader of its previous contents has
    finished, so the number of buffers sets how far loads can run ahead of compute.
    """

    def __init__(self, tensors: Sequence[Tensor]):
        self.tensors = tuple(tensors)

    @property
    def buffers(self) -> int:
        """How many tensors the pool rotates through."""
        return len(self.tensors)

    def __getitem__(self, i: int) -> Tensor:
        return self.tensors[int(i) % len(self.tensors)]

    def __len__(self) -> int:
        return len(self.tensors)


def _as_view(x: Any, what: str) -> View:
    if isinstance(x, Tensor):
        return x.view()
    if isinstance(x, View):
        return x
    raise ValueError(f"{what} must be a kernel Tensor or View, got {type(x).__name__}")


# --------------------------------------------------------------------------- results

@dataclass(frozen=True, eq=False)
class KernelRun:
    """What one kernel did: its output, HBM traffic, on-chip memory use and timeline.

    ``timeline`` has one row per operation: ``op_id``, ``engine`` (one of :data:`ENGINES`),
    ``op``, ``start_s``, ``end_s``, ``bytes`` (HBM bytes moved), ``flops`` (matmul FLOPs),
    ``partitions`` (lanes used), ``deps`` (ids of the operations it waited for).
    """

    name: str
    chip: str
    core: str
    time_s: float
    hbm_read_bytes: float
    hbm_write_bytes: float
    flops: float
    sbuf_peak_bytes_per_partition: float
    sbuf_bytes_per_partition: float
    psum_peak_banks: int
    psum_banks: int
    partitions: int
    dma_bytes_per_s: float
    engine_busy_s: Mapping[str, float]
    dma_queues: str
    ops: Mapping[str, Sequence] = field(repr=False)
    output: np.ndarray | None = field(default=None, repr=False)

    @functools.cached_property
    def timeline(self) -> pd.DataFrame:
        """One row per operation (see the class docstring), built on first use."""
        return pd.DataFrame({"op_id": np.arange(len(self.ops["engine"])), **self.ops})

    @property
    def hbm_bytes(self) -> float:
        """HBM bytes read plus written."""
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def dma_floor_s(self) -> float:
        """The DMA floor: all HBM bytes at the core's full DMA bandwidth. With shared DMA
        queues (the default) no kernel is faster; separate queues can look faster."""
        return self.hbm_bytes / self.dma_bytes_per_s

    @property
    def dma_busy_s(self) -> float:
        """Time the DMA engines spend moving data, loads and stores together."""
        return self.engine_busy_s["dma_load"] + self.engine_busy_s["dma_store"]

    @property
    def binding_engine(self) -> str:
        """The engine (or DMA queue) busy longest: the one to speed up first. With shared DMA
        queues, ``"dma"`` when loads and stores together keep the DMA engines busiest."""
        busy = dict(self.engine_busy_s)
        if self.dma_queues == "shared" and self.dma_busy_s > max(busy.values()):
            return "dma"
        return max(busy, key=lambda e: busy[e])

    @property
    def lane_utilisation(self) -> float:
        """Busy-time-weighted share of the partitions (lanes) used by vector, scalar and
        GpSimd instructions; 1.0 if they did nothing."""
        t = self.timeline
        sel = t[t.engine.isin(["vector", "scalar", "gpsimd"])]
        busy = (sel.end_s - sel.start_s).to_numpy()
        if busy.sum() <= 0:
            return 1.0
        return float((busy * sel.partitions.to_numpy()).sum() / (busy.sum() * self.partitions))

    @property
    def achieved_flops_per_s(self) -> float:
        """Matmul FLOPs over the kernel's time (0 for a kernel without matmuls)."""
        return self.flops / self.time_s if self.time_s > 0 else 0.0

    @property
    def intensity_flop_per_byte(self) -> float:
        """Matmul FLOPs per byte of HBM traffic."""
        return self.flops / self.hbm_bytes if self.hbm_bytes > 0 else 0.0

    def engine_table(self) -> pd.DataFrame:
        """Busy time per engine: columns ``engine``, ``ops``, ``busy_s``, ``busy_share``
        (of the kernel's time)."""
        counts = self.timeline.engine.value_counts()
        return pd.DataFrame([{"engine": e, "ops": int(counts.get(e, 0)),
                              "busy_s": self.engine_busy_s[e],
                              "busy_share": self.engine_busy_s[e] / self.time_s if self.time_s else 0.0}
                             for e in ENGINES])

    def _busy_of(self, engine: str) -> float:
        return self.dma_busy_s if engine == "dma" else self.engine_busy_s[engine]

    def _repr_markdown_(self) -> str:
        return (f"**{self.name}** on one {self.core} ({self.chip}): "
                f"**{u.format_seconds(self.time_s)}**; HBM read "
                f"{u.format_bytes(self.hbm_read_bytes)}, written {u.format_bytes(self.hbm_write_bytes)}; "
                f"busiest: {self.binding_engine} ({u.format_seconds(self._busy_of(self.binding_engine))}); "
                f"SBUF peak {u.format_bytes(self.sbuf_peak_bytes_per_partition)} of "
                f"{u.format_bytes(self.sbuf_bytes_per_partition)} per partition; PSUM "
                f"{self.psum_peak_banks} of {self.psum_banks} banks")


# --------------------------------------------------------------------------- the emulator

_DMA_ENGINES = ("dma_load", "dma_store")
#: the columns of a kernel's timeline after ``engine``, in the order :meth:`Kernel._issue_t` keeps them
_OP_COLUMNS = ("op", "start_s", "end_s", "bytes", "flops", "partitions", "deps")


class Kernel:
    """One NeuronCore running one kernel: allocate tensors, issue operations, read the result.

    Parameters
    ----------
    chip : str
        ``"trn1"``, ``"trn2"`` or ``"trn3"``.
    execute : bool
        ``True`` computes values; ``False`` only models cost (tensors hold no data; the
        traffic, memory checks and timeline are the same).
    core : CoreModel, optional
        Figures to use instead of ``core_model(chip)`` (to change an assumption).
    name : str
        Label of the run.

    Examples
    --------
    >>> import numpy as np
    >>> k = Kernel("trn2")
    >>> x = k.hbm(np.arange(6.0).reshape(2, 3), "float32", "x")
    >>> t = k.sbuf((2, 3), "float32", "t")
    >>> k.load(t, x)
    >>> k.activation(t, t, "square")
    >>> y = k.hbm_zeros((2, 3), "float32", "y")
    >>> k.store(y, t)
    >>> y.data.tolist()
    [[0.0, 1.0, 4.0], [9.0, 16.0, 25.0]]
    >>> r = k.result()
    >>> r.hbm_read_bytes, r.hbm_write_bytes, list(r.timeline.engine)
    (24.0, 24.0, ['dma_load', 'scalar', 'dma_store'])
    """

    def __init__(self, chip: str = "trn2", *, execute: bool = True, core: CoreModel | None = None,
                 name: str = "kernel"):
        if core is not None and not isinstance(core, CoreModel):
            raise ValueError(f"core must be a CoreModel from kernels.core_model, got {type(core).__name__}")
        self.core = core if core is not None else core_model(chip)
        if not isinstance(execute, bool):
            raise ValueError(f"execute must be True or False, got {execute!r}")
        self.execute = execute
        self.name = str(name)
        self._sbuf_used = 0.0
        self._sbuf_peak = 0.0
        self._psum_used = 0
        self._psum_peak = 0
        self._hbm_used = 0.0
        self._free_at = dict.fromkeys(ENGINES, 0.0)
        self._busy = dict.fromkeys(ENGINES, 0.0)
        self._dma_cost: dict[tuple[float, int], float] = {}
        self._dma_starts: list[float] = []   # busy intervals of the shared DMA engines, sorted
        self._dma_ends: list[float] = []
        # the operations so far: each one's engine (looked up by later operations), and the
        # rest of its timeline row (columns ``_OP_COLUMNS``), put together in :meth:`result`
        self._op_engines: list[str] = []
        self._op_rows: list[tuple] = []
        self.hbm_read_bytes = 0.0
        self.hbm_write_bytes = 0.0
        self.flops = 0.0
        self._per_element: dict[tuple, tuple[float, float]] = {}
        self._shared_dma = self.core.dma_queues == "shared"

    # ------------------------------------------------------------------ allocation
    def _shape(self, shape: Any) -> tuple[int, ...]:
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not shape:
            raise ValueError(f"shape must be a tuple of positive integers, got {shape!r}")
        out = tuple(integer("shape", s, minimum=1, maximum=_MAX_DIM) for s in shape)
        if math.prod(out) > _MAX_DIM * 64:
            raise ValueError(f"shape {out} is too large for the emulator")
        return out

    def _on_chip(self, space: str, shape: Any, dtype: Any, name: str) -> Tensor:
        shape = self._shape(shape)
        dtype = _dtype(dtype)
        c = self.core
        if shape[0] > c.partitions:
            raise ValueError(
                f"tile {name!r} has {shape[0]} rows on its partition (first) axis; a {c.core} "
                f"tile spans at most {c.partitions} partitions: split it into tiles of "
                f"{c.partitions} rows")
        data = np.zeros(shape, np.float32) if self.execute else None
        t = Tensor(self, str(name), space, shape, dtype, data)
        per_partition = (math.prod(shape[1:]) if len(shape) > 1 else 1) * t.itemsize
        if space == "sbuf":
            cap = c.sbuf_bytes_per_partition
            free = cap - self._sbuf_used
            if per_partition > free:
                raise ValueError(
                    f"SBUF is full: tile {name!r} {list(shape)} {dtype} asks for "
                    f"{u.format_bytes(per_partition)} per partition "
                    f"({u.format_bytes(per_partition * c.partitions)} over {c.partitions} partitions); "
                    f"{u.format_bytes(free)} per partition ({u.format_bytes(free * c.partitions)}) of "
                    f"{u.format_bytes(cap)} per partition is free")
            self._sbuf_used += per_partition
            self._sbuf_peak = max(self._sbuf_peak, self._sbuf_used)
        else:
            free_elems = math.prod(shape[1:]) if len(shape) > 1 else 1
            if dtype != "float32" or free_elems > c.psum_tile_fmax:
                raise ValueError(
                    f"PSUM tile {name!r} must be float32 with at most {c.psum_tile_fmax} elements "
                    f"per partition (one bank); got {list(shape)} {dtype}")
            free_banks = c.psum_banks - self._psum_used
            if free_banks < 1:
                raise ValueError(
                    f"PSUM is full: tile {name!r} asks for 1 bank ({u.format_bytes(c.psum_bank_bytes)} "
                    f"per partition); 0 of {c.psum_banks} banks "
                    f"({u.format_bytes(c.psum_bytes_per_partition)} per partition) is free")
            t.banks = 1
            self._psum_used += 1
            self._psum_peak = max(self._psum_peak, self._psum_used)
        t.per_partition_bytes = per_partition
        return t

    def sbuf(self, shape: Any, dtype: Any = "bfloat16", name: str = "tile") -> Tensor:
        """Allocate a tile in SBUF (``shape[0]`` partitions). Raises ValueError past capacity."""
        return self._on_chip("sbuf", shape, dtype, name)

    def psum(self, shape: Any, dtype: Any = "float32", name: str = "acc") -> Tensor:
        """Allocate one PSUM bank: a float32 tile of at most ``psum_tile_fmax`` per partition."""
        return self._on_chip("psum", shape, dtype, name)

    def pool(self, space: str, shape: Any, dtype: Any, buffers: int, name: str = "pool") -> Pool:
        """``buffers`` tensors of one shape in SBUF or PSUM, used in turn (see :class:`Pool`)."""
        space = choice("space", space, ("sbuf", "psum"))
        buffers = integer("buffers", buffers, minimum=1, maximum=64)
        return Pool([self._on_chip(space, shape, dtype, f"{name}[{i}]") for i in range(buffers)])

    def free(self, tensor: Tensor) -> None:
        """Release an SBUF or PSUM tensor's space (its data stays readable in this emulator)."""
        if not isinstance(tensor, Tensor) or tensor.space == "hbm":
            raise ValueError("free takes an SBUF or PSUM Tensor")
        if tensor.alive:
            tensor.alive = False
            if tensor.space == "sbuf":
                self._sbuf_used -= tensor.per_partition_bytes
            else:
                self._psum_used -= tensor.banks

    def _hbm(self, shape: tuple[int, ...], dtype: str, name: str, data: np.ndarray | None) -> Tensor:
        t = Tensor(self, str(name), "hbm", shape, dtype, data)
        nbytes = t.size * t.itemsize
        free = self.core.hbm_bytes - self._hbm_used
        if nbytes > free:
            raise ValueError(f"HBM is full: {name!r} asks for {u.format_bytes(nbytes)}; "
                             f"{u.format_bytes(free)} of {u.format_bytes(self.core.hbm_bytes)} is free")
        self._hbm_used += nbytes
        return t

    def hbm(self, array: Any, dtype: Any = "bfloat16", name: str = "input") -> Tensor:
        """Put an input in HBM, rounded to ``dtype``. In cost-only mode pass a shape instead."""
        dtype = _dtype(dtype)
        if not self.execute and isinstance(array, (tuple, list)) and all(
                isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in array):
            return self._hbm(self._shape(array), dtype, name, None)
        return self._hbm_checked(_finite_array(array, name, dtype), dtype, name)

    def _hbm_checked(self, a: np.ndarray, dtype: str, name: str) -> Tensor:
        shape = self._shape(a.shape)
        data = _round(a, dtype) if self.execute else None
        return self._hbm(shape, dtype, name, data)

    def hbm_zeros(self, shape: Any, dtype: Any = "bfloat16", name: str = "output") -> Tensor:
        """An output tensor in HBM, filled with zeros."""
        shape = self._shape(shape)
        dtype = _dtype(dtype)
        return self._hbm(shape, dtype, name, np.zeros(shape, np.float32) if self.execute else None)

    # ------------------------------------------------------------------ scheduling
    def _issue(self, engine: str, op: str, reads: Sequence[View], writes: Sequence[View],
               duration_s: float, *, nbytes: float = 0.0, flops: float = 0.0,
               partitions: int = 0, latency_s: float = 0.0) -> int:
        return self._issue_t(engine, op, [v.tensor for v in reads], [v.tensor for v in writes],
                             duration_s, nbytes, flops, partitions, latency_s)

    def _issue_t(self, engine: str, op: str, reads: Sequence[Tensor], writes: Sequence[Tensor],
                 duration_s: float, nbytes: float = 0.0, flops: float = 0.0,
                 partitions: int = 0, latency_s: float = 0.0) -> int:
        """:meth:`_issue` on the tensors of the views read and written (the hot path of the
        cost-only matmul: the same timeline, without building views)."""
        deps: list[int] = []
        ready = ready_same = 0.0   # a wait on another engine costs the latency; on this queue, order only
        engines = self._op_engines
        for group in (reads, writes):  # read or write after the last write
            for t in group:
                w = t.writer
                if w is not None:
                    deps.append(w)
                    if engines[w] == engine:
                        if t.write_end > ready_same:
                            ready_same = t.write_end
                    elif t.write_end > ready:
                        ready = t.write_end
        for t in writes:  # write after the reads since that write
            if t.readers:
                if t.read_end > ready:
                    ready = t.read_end
                deps.extend(t.readers)
        start = self._free_at[engine]
        if ready_same > start:
            start = ready_same
        if ready + latency_s > start:
            start = ready + latency_s
        if duration_s > 0 and self._shared_dma and engine in _DMA_ENGINES:
            start = _reserve(self._dma_starts, self._dma_ends, start, duration_s)
        end = start + duration_s
        op_id = len(engines)
        engines.append(engine)
        self._op_rows.append((op, start, end, nbytes, flops, partitions,
                              tuple(sorted(set(deps))) if len(deps) > 1 else tuple(deps)))
        self._free_at[engine] = end
        self._busy[engine] += duration_s
        for t in reads:
            t.readers.append(op_id)
            if end > t.read_end:
                t.read_end = end
        for t in writes:
            t.writer = op_id
            t.write_end = end
            t.readers = []
        return op_id

    def _dma_s(self, nbytes: float, partitions: int) -> float:
        """:meth:`CoreModel.dma_transfer_s`, cached per (bytes, partitions) for this kernel."""
        key = (nbytes, partitions)
        s = self._dma_cost.get(key)
        if s is None:
            s = self._dma_cost[key] = self.core.dma_transfer_s(nbytes, partitions)
        return s

    def _dma_slot(self, earliest: float, duration_s: float) -> float:
        """Earliest start >= ``earliest`` when the shared DMA engines are free for
        ``duration_s``; the interval is then reserved."""
        return _reserve(self._dma_starts, self._dma_ends, earliest, duration_s)

    def _engine_s(self, engine: str, free_elems: int, n_inputs: int, dtypes: Sequence[str],
                  perf_mode: bool = False) -> float:
        """Seconds for one instruction streaming ``free_elems`` per partition, ``n_inputs`` times.

        The vector engine's wider BF16/FP16 data path (512 elements/cycle on NeuronCore-v3) is
        its *performance mode*, which the Trainium2 NKI guide grants only to ``tensor_copy`` and
        ``tensor_scalar`` with every operand in SBUF and 16-bit (4x NeuronCore-v2); any other
        vector instruction (``tensor_tensor``: 2x NeuronCore-v2, about ``N`` cycles with two
        inputs; reductions) streams at the width for other data types. ``perf_mode`` says the
        instruction qualifies; the rule is carried over to NeuronCore-v4.
        """
        key = (engine, tuple(dtypes), perf_mode)
        per = self._per_element.get(key)
        if per is None:
            c = self.core
            width = min(c.elements_per_cycle[(engine, _width_key(d))] for d in dtypes)
            if engine == "vector" and not perf_mode:
                width = min(width, c.elements_per_cycle[("vector", "fp32")])
            per = (c.partitions / width / c.clocks_hz[engine],
                   c.instruction_overhead_cycles / c.clocks_hz[engine])
            self._per_element[key] = per
        return max(n_inputs, 1) * free_elems * per[0] + per[1]

    # ------------------------------------------------------------------ DMA
    def load(self, dst: Any, src: Any) -> None:
        """DMA an HBM view into an SBUF view (rounding to the tile's dtype).

        The shapes must match, or ``dst`` is ``[p, g, f]`` and ``src`` is ``[p·g, f]``: then
        ``dst = src.reshape(p, g, f)``, so partition ``i`` holds rows ``i·g`` to ``i·g + g − 1``
        (how a contraction longer than 128 is laid out for the tensor engine: any layout
        works as long as both operands use the same one).
        """
        d, s = _as_view(dst, "dst"), _as_view(src, "src")
        _space(d, ("sbuf",), "load destination")
        _space(s, ("hbm",), "load source")
        self._dma(d, s, "load")

    def store(self, dst: Any, src: Any) -> None:
        """DMA an SBUF view out to an HBM view (same layout rules as :meth:`load`)."""
        d, s = _as_view(dst, "dst"), _as_view(src, "src")
        _space(d, ("hbm",), "store destination")
        _space(s, ("sbuf",), "store source")
        self._dma(s, d, "store")

    def _dma(self, tile: View, mem: View, kind: str) -> None:
        if tile.shape == mem.shape:
            grouped = False
        elif (len(tile.shape) == 3 and len(mem.shape) == 2 and mem.shape[1] == tile.shape[2]
              and mem.shape[0] == tile.shape[0] * tile.shape[1]):
            grouped = True
        else:
            raise ValueError(f"{kind}: SBUF view {list(tile.shape)} and HBM view {list(mem.shape)} "
                             "do not match (same shape, or [p, g, f] with [p·g, f])")
        if kind == "load":
            nbytes = mem.size * mem.tensor.itemsize
            self.hbm_read_bytes += nbytes
            reads, writes = [mem], [tile]
        else:
            nbytes = mem.size * mem.tensor.itemsize
            self.hbm_write_bytes += nbytes
            reads, writes = [tile], [mem]
        if self.execute:
            if kind == "load":
                values = mem.data
                if grouped:
                    values = values.reshape(tile.shape)
                t = tile.tensor
                if (type(tile) is View and tile.bounds == t._full.bounds
                        and (mem.tensor.dtype == t.dtype or t.dtype == "float32")):
                    _own(t)           # drop any earlier alias, then share the HBM values
                    t.data, t.alias_of = values, mem.tensor
                    mem.tensor.aliases.add(t)
                else:
                    _own(t)[tile.slices] = _cast(values, mem.tensor.dtype, t.dtype)
            else:
                values = tile.data
                if grouped:
                    values = values.reshape(mem.shape)
                for t in list(mem.tensor.aliases):   # tiles loaded earlier keep the old values
                    _own(t)
                mem.tensor.data[mem.slices] = _cast(values, tile.tensor.dtype, mem.tensor.dtype)
        c = self.core
        self._issue("dma_load" if kind == "load" else "dma_store", kind, reads, writes,
                    self._dma_s(nbytes, tile.shape[0]), nbytes=nbytes,
                    partitions=tile.shape[0], latency_s=c.dma_fixed_s)

    # ------------------------------------------------------------------ tensor engine
    def matmul(self, dst: Any, stationary: Any, moving: Any, *, accumulate: bool = False) -> None:
        """``dst (+)= stationary.T @ moving`` on the tensor engine, into FP32 PSUM.

        ``stationary`` is ``[K, M]`` and ``moving`` ``[K, N]`` in SBUF, contraction K on the
        partition axis; or ``[p, g, M]`` and ``[p, g, N]`` for a contraction of ``p·g``
        rows, which runs as ``ceil(g / (max_contraction / partitions))`` instructions. M is at
        most the array's columns, N at most one PSUM bank; ``dst`` is ``[M, N]`` in PSUM.
        Each instruction costs the whole array for ``max(N, mm_min_cycles)`` cycles at the
        dtype's rate, however few rows and columns it fills.
        """
        d = _as_view(dst, "dst")
        s = _as_view(stationary, "stationary")
        m = _as_view(moving, "moving")
        c = self.core
        if s.shape[-1] > c.stationary_fmax:
            raise ValueError(f"stationary free size {s.shape[-1]} exceeds the tensor engine's "
                             f"{c.stationary_fmax} columns")
        if m.shape[-1] > c.psum_tile_fmax:
            raise ValueError(f"moving free size {m.shape[-1]} exceeds one PSUM bank ({c.psum_tile_fmax})")
        self.matmul_grid([[d]], s, m, accumulate=accumulate)

    def matmul_grid(self, dsts: Sequence[Sequence[Any]], stationary: Any, moving: Any, *,
                    accumulate: bool = False) -> None:
        """:meth:`matmul` for a grid of PSUM tiles: ``dsts[i][j]`` receives columns
        ``i·cols:(i+1)·cols`` of ``stationary`` times columns ``j·bank:(j+1)·bank`` of
        ``moving`` (``cols`` the array's columns, ``bank`` one PSUM bank).

        Each tile is its own instruction sequence in the timeline, exactly as separate
        :meth:`matmul` calls would be; the values are computed in one numpy product (faster).
        """
        s = _as_view(stationary, "stationary")
        m = _as_view(moving, "moving")
        _space(s, ("sbuf",), "stationary")
        _space(m, ("sbuf",), "moving")
        if not isinstance(accumulate, bool):
            raise ValueError(f"accumulate must be True or False, got {accumulate!r}")
        c = self.core
        if len(s.shape) != len(m.shape) or len(s.shape) not in (2, 3) or s.shape[:-1] != m.shape[:-1]:
            raise ValueError(f"stationary {list(s.shape)} and moving {list(m.shape)} must share "
                             "their contraction axes ([K, M] and [K, N], or [p, g, M] and [p, g, N])")
        fm, fn = c.stationary_fmax, c.psum_tile_fmax
        m_all, n_all = s.shape[-1], m.shape[-1]
        if not isinstance(dsts, (list, tuple)) or len(dsts) != math.ceil(m_all / fm) or any(
                not isinstance(row, (list, tuple)) or len(row) != math.ceil(n_all / fn) for row in dsts):
            raise ValueError(f"dsts must be a {math.ceil(m_all / fm)} × {math.ceil(n_all / fn)} grid "
                             f"of PSUM views for stationary {list(s.shape)} and moving {list(m.shape)}")
        key, cmax = _tensor_mode(c, [s.tensor.dtype, m.tensor.dtype])
        groups = s.shape[1] if len(s.shape) == 3 else 1
        n_instr = math.ceil(groups / max(1, cmax // c.partitions))
        contraction = s.shape[0] * groups
        grid = []
        for i, row in enumerate(dsts):
            for j, dst in enumerate(row):
                d = _as_view(dst, "dst")
                _space(d, ("psum",), "matmul destination")
                mm, nn = min(fm, m_all - i * fm), min(fn, n_all - j * fn)
                if d.shape != (mm, nn):
                    raise ValueError(f"matmul destination must be [{mm}, {nn}] in PSUM, got {list(d.shape)}")
                grid.append((i, j, d))
        if self.execute:
            prod = np.dot(s.data.reshape(contraction, m_all).T, m.data.reshape(contraction, n_all))
        for i, j, d in grid:
            mm, nn = d.shape
            flops = float(_FLOPS_PER_MAC * contraction * mm * nn)
            duration = n_instr * _FLOPS_PER_MAC * cmax * fm * max(nn, c.mm_min_cycles) \
                / c.dense_flops_per_s[key]
            if self.execute:
                piece = prod[i * fm:i * fm + mm, j * fn:j * fn + nn]
                if accumulate:
                    _own(d.tensor)[d.slices] += piece
                else:
                    _own(d.tensor)[d.slices] = piece
            self.flops += flops
            self._issue("tensor", "matmul", [s, m] + ([d] if accumulate else []), [d], duration,
                        flops=flops, partitions=s.shape[0])

    # ------------------------------------------------------------------ vector engine
    def _same_partitions(self, *views: View) -> int:
        p = views[0].shape[0]
        for v in views[1:]:
            if v.shape[0] != p:
                raise ValueError(f"views must span the same partitions: {[list(x.shape) for x in views]}")
        return p

    def tensor_tensor(self, dst: Any, a: Any, b: Any, op: str) -> None:
        """``dst = a <op> b`` element-wise on the vector engine (two inputs: about 2N cycles)."""
        d, x, y = _as_view(dst, "dst"), _as_view(a, "a"), _as_view(b, "b")
        op = choice("op", op, _VECTOR_OPS)
        for v, what in ((d, "dst"), (x, "a"), (y, "b")):
            _space(v, ("sbuf", "psum"), what)
        if not (d.shape == x.shape == y.shape):
            raise ValueError(f"tensor_tensor needs equal shapes, got {list(d.shape)}, {list(x.shape)}, "
                             f"{list(y.shape)}")
        p = self._same_partitions(d, x, y)
        if self.execute:
            with np.errstate(all="ignore"):
                _own(d.tensor)[d.slices] = _round(_BINARY[op](x.data, y.data), d.tensor.dtype)
        self._issue("vector", f"tensor_tensor {op}", [x, y], [d],
                    self._engine_s("vector", d.free_size, 2,
                                   [d.tensor.dtype, x.tensor.dtype, y.tensor.dtype]),
                    partitions=p)

    def tensor_scalar(self, dst: Any, a: Any, op: str, operand: Any, *, op2: str | None = None,
                      operand2: Any = None) -> None:
        """``dst = (a <op> operand) <op2> operand2`` on the vector engine; an operand is a
        number or a ``[P, 1]`` view (one value per partition, broadcast along the free axes)."""
        op = choice("op", op, _VECTOR_OPS)
        d, x = _on_chip(dst, a, "a", same_shape="tensor_scalar")
        p = self._same_partitions(d, x)
        steps = [(op, _operand(operand, p, "operand"))]
        if op2 is not None:
            steps.append((choice("op2", op2, _VECTOR_OPS), _operand(operand2, p, "operand2")))
        reads = [x] + [o for _, o in steps if isinstance(o, View)]
        if self.execute:
            values = x.data
            with np.errstate(all="ignore"):
                for o, val in steps:
                    values = _BINARY[o](values, _operand_data(val, len(x.shape)))
                _own(d.tensor)[d.slices] = _round(values, d.tensor.dtype)
        self._issue("vector", f"tensor_scalar {op}" + (f"+{op2}" if op2 else ""), reads, [d],
                    self._engine_s("vector", d.free_size, 1, [d.tensor.dtype, x.tensor.dtype],
                                   perf_mode=_in_sbuf(*reads, d)),
                    partitions=p)

    def reduce(self, dst: Any, src: Any, op: str = "sum") -> None:
        """``dst[p, 0] = <op> over src[p, ...]`` along the free axes, on the vector engine."""
        op = choice("op", op, _REDUCE_OPS)
        d, x = _on_chip(dst, src, "src")
        if d.shape != (x.shape[0], 1):
            raise ValueError(f"reduce writes a [{x.shape[0]}, 1] view, got {list(d.shape)}")
        p = self._same_partitions(d, x)
        if self.execute:
            axes = tuple(range(1, len(x.shape)))
            fn = {"sum": np.sum, "max": np.max, "min": np.min}[op]
            with np.errstate(all="ignore"):
                r = fn(x.data, axis=axes, dtype=np.float32) if op == "sum" else fn(x.data, axis=axes)
            _own(d.tensor)[d.slices] = _round(r.reshape(p, 1), d.tensor.dtype)
        self._issue("vector", f"reduce {op}", [x], [d],
                    self._engine_s("vector", x.free_size, 1, [x.tensor.dtype]), partitions=p)

    def copy(self, dst: Any, src: Any, *, engine: str = "vector") -> None:
        """Copy (and cast) a view, e.g. to evacuate PSUM into SBUF; vector, scalar or GpSimd."""
        d, x = _as_view(dst, "dst"), _as_view(src, "src")
        engine = choice("engine", engine, ("vector", "scalar", "gpsimd"))
        allowed = ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum")
        _space(d, allowed, "dst")
        _space(x, allowed, "src")
        if d.shape != x.shape:
            raise ValueError(f"copy needs equal shapes, got {list(d.shape)} and {list(x.shape)}")
        p = self._same_partitions(d, x)
        if self.execute:
            _own(d.tensor)[d.slices] = _round(x.data, d.tensor.dtype)
        self._issue(engine, "copy", [x], [d],
                    self._engine_s(engine, d.free_size, 1, [d.tensor.dtype, x.tensor.dtype],
                                   perf_mode=_in_sbuf(x, d)),
                    partitions=p)

    def memset(self, dst: Any, value: float, *, engine: str = "vector") -> None:
        """Fill a view with one value."""
        d = _as_view(dst, "dst")
        engine = choice("engine", engine, ("vector", "gpsimd"))
        _space(d, ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum"), "dst")
        top = numerics.format_info("float32").max_finite
        value = in_range("value", value, -top, top)
        if self.execute:
            _own(d.tensor)[d.slices] = _round(np.full(d.shape, value, np.float32), d.tensor.dtype)
        self._issue(engine, "memset", [], [d], self._engine_s(engine, d.free_size, 0, [d.tensor.dtype]),
                    partitions=d.shape[0])

    # ------------------------------------------------------------------ scalar engine
    def activation(self, dst: Any, src: Any, func: str, *, scale: Any = 1.0, bias: Any = 0.0,
                   accumulate: Any = None) -> None:
        """``dst = func(src · scale + bias)`` on the scalar engine, optionally summing each
        partition's outputs into ``accumulate`` (a ``[P, 1]`` view, FP32 sums).

        ``scale`` and ``bias`` are numbers or ``[P, 1]`` views. The multiply-add and the sum
        come at no extra cost, as in the NKI guides' pipelined scalar engine.
        """
        func = choice("func", func, ACTIVATIONS)
        d, x = _on_chip(dst, src, "src", same_shape="activation")
        p = self._same_partitions(d, x)
        sc, bi = _operand(scale, p, "scale"), _operand(bias, p, "bias")
        acc = None
        if accumulate is not None:
            acc = _as_view(accumulate, "accumulate")
            _space(acc, ("sbuf", "psum"), "accumulate")
            if acc.shape != (p, 1):
                raise ValueError(f"accumulate must be a [{p}, 1] view, got {list(acc.shape)}")
        reads = [x] + [o for o in (sc, bi) if isinstance(o, View)]
        writes = [d] + ([acc] if acc is not None else [])
        if self.execute:
            nd = len(x.shape)
            with np.errstate(all="ignore"):
                pre = x.data * _operand_data(sc, nd) + _operand_data(bi, nd)
                out = _ACT[func](pre.astype(np.float32, copy=False)).astype(np.float32, copy=False)
                if acc is not None:
                    s = out.reshape(p, -1).sum(axis=1, dtype=np.float32).reshape(p, 1)
                    _own(acc.tensor)[acc.slices] = _round(s, acc.tensor.dtype)
                _own(d.tensor)[d.slices] = _round(out, d.tensor.dtype)
        self._issue("scalar", f"activation {func}" + (" +sum" if acc is not None else ""), reads, writes,
                    self._engine_s("scalar", d.free_size, 1, [d.tensor.dtype, x.tensor.dtype]),
                    partitions=p)

    # ------------------------------------------------------------------ GpSimd
    def gpsimd(self, dst: Any, fn: Callable[..., Any], *srcs: Any, name: str = "custom") -> None:
        """The escape hatch: ``dst = fn(*[s.data for s in srcs])`` on the GpSimd engine.

        ``fn`` gets float32 copies of the source views (none in cost-only mode: it is not
        called) and returns an array of ``dst``'s shape. GpSimd reads and writes SBUF only.
        Its cost (free elements at the GpSimd width, once per input) is an assumption: AWS
        gives no rule of thumb for GpSimd instructions.
        """
        d = _as_view(dst, "dst")
        if not callable(fn):
            raise ValueError(f"fn must be callable, got {type(fn).__name__}")
        views = [_as_view(s, "src") for s in srcs]
        _space(d, ("sbuf",), "dst")
        for v in views:
            _space(v, ("sbuf",), "src")
        p = self._same_partitions(d, *views) if views else d.shape[0]
        if self.execute:
            with np.errstate(all="ignore"):
                out = np.asarray(fn(*[v.data.copy() for v in views]), dtype=np.float32)
            if out.shape != d.shape:
                raise ValueError(f"gpsimd fn returned shape {list(out.shape)}, expected {list(d.shape)}")
            _own(d.tensor)[d.slices] = _round(out, d.tensor.dtype)
        self._issue("gpsimd", f"gpsimd {name}", views, [d],
                    self._engine_s("gpsimd", d.free_size, max(1, len(views)),
                                   [d.tensor.dtype] + [v.tensor.dtype for v in views]),
                    partitions=p)

    # ------------------------------------------------------------------ result
    def result(self, output: Tensor | None = None) -> KernelRun:
        """The run so far: time, traffic, memory peaks, engine busy times, timeline."""
        columns = [list(c) for c in zip(*self._op_rows)] or [[] for _ in _OP_COLUMNS]
        o = {"engine": list(self._op_engines), **dict(zip(_OP_COLUMNS, columns))}
        time_s = max(o["end_s"]) if o["end_s"] else 0.0
        c = self.core
        out = None
        if output is not None:
            if not isinstance(output, Tensor):
                raise ValueError("output must be a kernel Tensor")
            out = output.data     # the HBM tensor's array itself (the kernel is done)
        return KernelRun(
            name=self.name, chip=c.chip_name, core=c.core, time_s=float(time_s),
            hbm_read_bytes=float(self.hbm_read_bytes), hbm_write_bytes=float(self.hbm_write_bytes),
            flops=float(self.flops), sbuf_peak_bytes_per_partition=float(self._sbuf_peak),
            sbuf_bytes_per_partition=float(c.sbuf_bytes_per_partition),
            psum_peak_banks=int(self._psum_peak), psum_banks=c.psum_banks,
            partitions=c.partitions, dma_bytes_per_s=c.dma_bytes_per_s, dma_queues=c.dma_queues,
            engine_busy_s=dict(self._busy), ops=o, output=out)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
}


def _silu(x):
    return x / (np.float32(1) + np.exp(-x))


_ACT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda x: x, "exp": np.exp, "square": np.square, "sqrt": np.sqrt,
    "rsqrt": lambda x: np.float32(1) / np.sqrt(x), "reciprocal": lambda x: np.float32(1) / x,
    "tanh": np.tanh, "sigmoid": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)), "silu": _silu,
}


def _own(t: Tensor) -> np.ndarray:
    """``t``'s own array, copied out of the HBM input it still shares, if any."""
    if t.alias_of is not None:
        t.alias_of.aliases.discard(t)
        t.data, t.alias_of = np.array(t.data, dtype=np.float32), None
    return t.data


def _in_sbuf(*views: View) -> bool:
    """Every view is in SBUF (a condition of the vector engine's performance mode)."""
    return all(v.tensor.space == "sbuf" for v in views)


def _space(v: View, allowed: tuple[str, ...], what: str) -> None:
    if v.tensor.space not in allowed:
        raise ValueError(f"{what} must be in {' or '.join(s.upper() for s in allowed)}, "
                         f"but {v.tensor.name!r} is in {v.tensor.space.upper()}")


def _on_chip(dst: Any, src: Any, src_name: str, same_shape: str = "") -> tuple[View, View]:
    """``dst`` and ``src`` as views in SBUF or PSUM (an engine's operands); with ``same_shape``
    (the instruction's name), also of one shape."""
    d, x = _as_view(dst, "dst"), _as_view(src, src_name)
    _space(d, ("sbuf", "psum"), "dst")
    _space(x, ("sbuf", "psum"), src_name)
    if same_shape and d.shape != x.shape:
        raise ValueError(f"{same_shape} needs equal shapes, got {list(d.shape)} and {list(x.shape)}")
    return d, x


def _operand(x: Any, partitions: int, what: str):
    if isinstance(x, (Tensor, View)):
        v = _as_view(x, what)
        _space(v, ("sbuf", "psum"), what)
        if v.shape != (partitions, 1):
            raise ValueError(f"{what} must be a number or a [{partitions}, 1] view, got {list(v.shape)}")
        return v
    top = numerics.format_info("float32").max_finite
    return np.float32(in_range(what, x, -top, top))


def _operand_data(x: Any, ndim: int):
    if isinstance(x, View):
        return x.data.reshape(x.shape[0], *([1] * (ndim - 1)))
    return x


def _cast(values: np.ndarray, src: str, dst: str) -> np.ndarray:
    """Values of ``src`` format written into ``dst``: exact (no rounding) when ``dst`` is the
    same format or FP32, which holds every value of the others."""
    if src == dst or dst == "float32":
        return values
    return _round(values, dst)


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return np.asarray(values, dtype=np.float32)
    with np.errstate(all="ignore"):
        return numerics.round_to(np.asarray(values, dtype=np.float32), dtype)


def _finite_array(x: Any, name: str, dtype: str | None = None, *, ndim: int | None = None) -> np.ndarray:
    """``x`` as a float64 array (at least 2-D), finite and within ``dtype``'s range."""
    try:
        a = np.asarray(x)
        if a.dtype.kind not in "fiu" or a.dtype.itemsize > 8:
            a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be an array of real numbers, got {type(x).__name__}") from None
    if a.dtype.kind in "iu":
        a = a.astype(np.float64)
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    if a.size > _MAX_ELEMENTS:
        raise ValueError(f"{name} has {a.size:,} elements; the emulator takes at most {_MAX_ELEMENTS:,}")
    if a.ndim < 2:
        a = a.reshape(1, -1)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    lo, hi = float(a.min()), float(a.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{name} must hold finite numbers only")
    if dtype is not None:
        top = numerics.format_info(dtype).max_finite
        if max(-lo, hi) > top:
            raise ValueError(f"{name} must fit {dtype} (|values| <= {top:g}), got up to {max(-lo, hi):g}")
    return a


# --------------------------------------------------------------------------- pipelines

def _pipeline_schedule(n: int, load_s: float, compute_s: float, store_s: float, buffers: int) -> float:
    """The emulator's scheduling rule for identical tiles, one buffer slot per tile in flight:
    a load waits for its queue and for the store that last used its slot."""
    le = ce = se = 0.0
    store_ends: list[float] = []
    for i in range(n):
        slot_free = store_ends[i - buffers] if i >= buffers else 0.0
        le = max(le, slot_free) + load_s
        ce = max(le, ce) + compute_s
        se = max(ce, se) + store_s
        store_ends.append(se)
    return se


def _reserve(starts: list[float], ends: list[float], earliest: float, duration_s: float) -> float:
    """First-fit on one resource: the earliest start >= ``earliest`` at which ``duration_s``
    fits between the sorted, disjoint busy intervals ``[starts[i], ends[i])``; reserved."""
    i = bisect.bisect_right(ends, earliest)
    s = earliest
    while i < len(starts) and s + duration_s > starts[i]:
        s = max(s, ends[i])
        i += 1
    starts.insert(i, s)
    ends.insert(i, s + duration_s)
    return s


def _pipeline_schedule_shared(n: int, load_s: float, compute_s: float, store_s: float,
                              buffers: int) -> float:
    """The emulator's rule with shared DMA engines: loads and stores each in order, both on
    one set of engines that runs one transfer at a time (a load may fill an earlier gap)."""
    starts: list[float] = []
    ends: list[float] = []

    def slot(earliest: float, d: float) -> float:
        return _reserve(starts, ends, earliest, d) if d > 0 else earliest

    le = ce = se = 0.0
    store_ends: list[float] = []
    for i in range(n):
        slot_free = store_ends[i - buffers] if i >= buffers else 0.0
        le = slot(max(le, slot_free), load_s) + load_s
        ce = max(le, ce) + compute_s
        se = slot(max(ce, se), store_s) + store_s
        store_ends.append(se)
    return se


def pipeline_time_s(n_tiles: int, load_s: float, compute_s: float, store_s: float,
                    buffers: int, dma_queues: str = "separate") -> float:
    """Time for ``n_tiles`` identical tiles to stream load → compute → store.

    With ``dma_queues="separate"`` each stage runs on its own queue (DMA in, an engine, DMA
    out) at full speed, in tile order, and a tile holds one of ``buffers`` SBUF buffers from
    the start of its load to the end of its store. That is the textbook three-stage pipeline;
    on a NeuronCore loads and stores share the 16 DMA engines, which ``dma_queues="shared"``
    models (the emulator's default): the DMA then needs ``n·(load + store)`` whatever the
    buffers, so the time is at least that, and no closed form is claimed for it.

    * ``buffers = 1``: the stages serialise, ``n·(load + compute + store)``.
    * ``buffers >= 3``: enough to overlap all three stages,
      ``load + compute + store + (n − 1)·max(load, compute, store)``.
    * ``buffers = 2``: no closed form is claimed; the function runs the same schedule as
      the emulator's timeline. In steady state it delivers, on average, one tile every
      ``max(load, compute, store, (load + compute + store) / 2)``: two tiles in flight, each
      holding its buffer for ``load + compute + store``.

    Parameters
    ----------
    n_tiles : int
        Tiles (1 to 1,000,000).
    load_s, compute_s, store_s : float
        Time of each stage for one tile (s, >= 0).
    buffers : int
        Buffers per stream (>= 1).
    dma_queues : str
        ``"separate"`` (the closed forms above) or ``"shared"``.

    Returns
    -------
    float
        Seconds.

    References
    ----------
    The flow-shop makespan for identical jobs (e.g. M. Pinedo, *Scheduling*, 2016, ch. 6);
    AWS NKI guides on overlapping DMA with compute by multi-buffering.

    Examples
    --------
    >>> pipeline_time_s(4, 1.0, 2.0, 1.0, 1)
    16.0
    >>> pipeline_time_s(4, 1.0, 2.0, 1.0, 3)
    10.0
    >>> pipeline_time_s(4, 1.0, 2.0, 1.0, 2)
    10.0
    >>> (pipeline_time_s(41, 2.0, 2.0, 2.0, 2) - pipeline_time_s(39, 2.0, 2.0, 2.0, 2)) / 2  # 3 s a tile
    3.0
    >>> pipeline_time_s(4, 1.0, 2.0, 1.0, 3, dma_queues="shared")   # DMA needs 4 × 2 = 8 s of 10
    10.0
    >>> pipeline_time_s(4, 2.0, 1.0, 2.0, 3, dma_queues="shared") >= 4 * (2.0 + 2.0)
    True
    """
    n = integer("n_tiles", n_tiles, minimum=1, maximum=1_000_000)
    load = positive("load_s", load_s, allow_zero=True)
    comp = positive("compute_s", compute_s, allow_zero=True)
    store = positive("store_s", store_s, allow_zero=True)
    b = integer("buffers", buffers, minimum=1, maximum=1_000_000)
    if choice("dma_queues", dma_queues, DMA_QUEUES) == "shared":
        return float(_pipeline_schedule_shared(n, load, comp, store, b))
    if b == 1:
        t = n * (load + comp + store)
    elif b >= 3:
        t = load + comp + store + (n - 1) * max(load, comp, store)
    else:
        t = _pipeline_schedule(n, load, comp, store, b)
    return float(t)  # finite: every input is below _validate.MAX_MAGNITUDE


# --------------------------------------------------------------------------- matmul tiling

def _bytes(dtype: Any, name: str) -> float:
    fmt = dtypes.number_format(dtype, name)
    if not fmt.block_size:  # MX formats are costed; any other must be one the emulator runs
        _dtype(dtype, name)
    return fmt.bytes_per_element


def matmul_hbm_bytes(m: int, n: int, k: int, tile_m: int, tile_n: int, dtype: str = "bfloat16",
                     out_dtype: str | None = None) -> float:
    """HBM bytes of an output-stationary tiled matmul ``C[m, n] = A[m, k] @ B[k, n]``.

    Each ``tile_m × tile_n`` output tile is accumulated in PSUM over all of k and written
    once, so A is read once per column of tiles and B once per row of tiles:

    ``b·(m·k·⌈n/tile_n⌉ + k·n·⌈m/tile_m⌉) + b_out·m·n``

    Parameters
    ----------
    m, n, k : int
        Matmul dimensions (1 to 2**30).
    tile_m, tile_n : int
        Output tile (>= 1).
    dtype : str
        Input dtype (``"bfloat16"``, ``"float8_e4m3fn"``, ``"float32"``... or ``"mxfp8"``).
    out_dtype : str, optional
        Dtype C is written in; default ``dtype``.

    Returns
    -------
    float
        Bytes read plus written.

    References
    ----------
    The output-stationary tiling of the NKI matrix-multiplication tutorial (AWS Neuron docs,
    "Tiling Matrix Multiplications"); the count is the standard one for blocked matmul.

    Examples
    --------
    >>> matmul_hbm_bytes(4096, 4096, 4096, 128, 512, "bfloat16") / 2**20
    1312.0
    >>> matmul_hbm_bytes(4096, 4096, 4096, 4096, 4096, "bfloat16") / 2**20   # the roofline's minimum
    96.0
    """
    m, n, k = (integer(nm, v, minimum=1, maximum=_MAX_DIM) for nm, v in (("m", m), ("n", n), ("k", k)))
    tm = integer("tile_m", tile_m, minimum=1, maximum=_MAX_DIM)
    tn = integer("tile_n", tile_n, minimum=1, maximum=_MAX_DIM)
    b = _bytes(dtype, "dtype")
    b_out = b if out_dtype is None else _bytes(out_dtype, "out_dtype")
    return float(b * (m * k * math.ceil(n / tn) + k * n * math.ceil(m / tm)) + b_out * m * n)


@dataclass(frozen=True)
class TilePlan:
    """A matmul tiling and what it needs: HBM traffic, SBUF per partition, PSUM banks."""

    m: int
    n: int
    k: int
    tile_m: int
    tile_n: int
    tile_k: int
    buffers: int
    dtype: str
    out_dtype: str
    chip: str
    hbm_bytes: float
    flops: float
    sbuf_bytes_per_partition: float
    sbuf_capacity_per_partition: float
    psum_banks: int
    psum_capacity_banks: int

    @property
    def fits(self) -> bool:
        """Whether SBUF and PSUM hold every buffer."""
        return (self.sbuf_bytes_per_partition <= self.sbuf_capacity_per_partition
                and self.psum_banks <= self.psum_capacity_banks)

    @property
    def intensity_flop_per_byte(self) -> float:
        """Matmul FLOPs per byte of HBM traffic with this tiling."""
        return self.flops / self.hbm_bytes

    def _repr_markdown_(self) -> str:
        return (f"tiles **{self.tile_m} × {self.tile_n}** (k chunk {self.tile_k}, {self.buffers} buffers): "
                f"HBM {u.format_bytes(self.hbm_bytes)}, intensity {self.intensity_flop_per_byte:,.0f} FLOP/byte; "
                f"SBUF {u.format_bytes(self.sbuf_bytes_per_partition)} of "
                f"{u.format_bytes(self.sbuf_capacity_per_partition)} per partition; PSUM "
                f"{self.psum_banks} of {self.psum_capacity_banks} banks")


def _plan(core: CoreModel, m, n, k, tm, tn, tk, buffers, dtype, out_dtype) -> TilePlan:
    p = core.partitions
    gm, gn = math.ceil(tm / core.stationary_fmax), math.ceil(tn / core.psum_tile_fmax)
    kt = math.ceil(tk / p)
    b, b_out = _bytes(dtype, "dtype"), _bytes(out_dtype, "out_dtype")
    sbuf = buffers * (kt * (tm + tn) * b + gm * tn * b_out)
    return TilePlan(m, n, k, tm, tn, tk, buffers, dtype, out_dtype, core.chip,
                    matmul_hbm_bytes(m, n, k, tm, tn, dtype, out_dtype),
                    float(_FLOPS_PER_MAC * m * n * k), float(sbuf), core.sbuf_bytes_per_partition,
                    buffers * gm * gn, core.psum_banks)


def _plan_args(m, n, k, dtype, chip, buffers, out_dtype):
    m, n, k = (integer(nm, v, minimum=1, maximum=_MAX_DIM) for nm, v in (("m", m), ("n", n), ("k", k)))
    dtype = _dtype(dtype)
    out_dtype = dtype if out_dtype is None else _dtype(out_dtype, "out_dtype")
    buffers = integer("buffers", buffers, minimum=1, maximum=16)
    return m, n, k, dtype, core_model(chip), buffers, out_dtype


def tile_plan(m: int, n: int, k: int, tile_m: int, tile_n: int, tile_k: int | None = None,
              dtype: str = "bfloat16", chip: str = "trn2", buffers: int = 2,
              out_dtype: str | None = None) -> TilePlan:
    """What an output-stationary tiling of ``C[m, n] = A[m, k] @ B[k, n]`` needs.

    Per buffer, SBUF holds an A panel ``[k chunk, tile_m]`` and a B panel
    ``[k chunk, tile_n]`` (laid out as ``ceil(chunk/128)`` groups of 128 partitions) and the
    output tile in ``out_dtype``; PSUM holds the output tile in FP32, one bank per
    ``128 × 512`` piece.

    Parameters
    ----------
    m, n, k : int
        Matmul dimensions.
    tile_m, tile_n : int
        Output tile.
    tile_k : int, optional
        Rows of k loaded per DMA; default the largest chunk that fits SBUF: all of k if it
        fits, else a multiple of the partition count (at least one).
    dtype, out_dtype : str
        Input and output dtypes (numerics formats).
    chip : str
        Whose NeuronCore.
    buffers : int
        Buffers per stream (1 to 16).

    Examples
    --------
    >>> p = tile_plan(4096, 4096, 4096, 512, 512)
    >>> p.psum_banks, round(p.sbuf_bytes_per_partition / 2**10), p.fits
    (8, 136, True)
    >>> tile_plan(4096, 4096, 4096, 512, 1024).fits   # 16 PSUM banks: too many
    False
    """
    m, n, k, dtype, core, buffers, out_dtype = _plan_args(m, n, k, dtype, chip, buffers, out_dtype)
    tm = integer("tile_m", tile_m, minimum=1, maximum=_MAX_DIM)
    tn = integer("tile_n", tile_n, minimum=1, maximum=_MAX_DIM)
    tm, tn = min(tm, m), min(tn, n)
    if tile_k is None:
        tk = _fit_tile_k(core, tm, tn, k, buffers, dtype, out_dtype) or min(k, core.partitions)
    else:
        tk = min(integer("tile_k", tile_k, minimum=1, maximum=_MAX_DIM), k)
    return _plan(core, m, n, k, tm, tn, tk, buffers, dtype, out_dtype)


def _fit_tile_k(core: CoreModel, tm: int, tn: int, k: int, buffers: int, dtype: str,
                out_dtype: str) -> int:
    """The largest k chunk whose panels fit SBUF beside the output tile (0 if none does)."""
    p = core.partitions
    b, b_out = _bytes(dtype, "dtype"), _bytes(out_dtype, "out_dtype")
    room = core.sbuf_bytes_per_partition / buffers - math.ceil(tm / core.stationary_fmax) * tn * b_out
    kt_fit = int(room // ((tm + tn) * b)) if room > 0 else 0
    if kt_fit < 1:
        return 0
    return k if math.ceil(k / p) <= kt_fit else kt_fit * p


def largest_tiles(m: int, n: int, k: int, dtype: str = "bfloat16", chip: str = "trn2",
                  buffers: int = 2, out_dtype: str | None = None) -> TilePlan:
    """The output tile that fits SBUF and PSUM with the least HBM traffic.

    Candidates are multiples of the array's columns for ``tile_m`` and of a PSUM bank for
    ``tile_n`` (or the whole dimension when smaller); for each the largest k chunk that
    fits (a multiple of the partition count, or all of k) is taken. Ties go to the larger
    k chunk (fewer, bigger DMAs), then to the smaller SBUF footprint.

    Raises
    ------
    ValueError
        If not even one ``128 × 512`` tile with a 128-row k chunk fits.

    Examples
    --------
    >>> p = largest_tiles(4096, 4096, 4096, "bfloat16", "trn2", buffers=2)
    >>> p.tile_m, p.tile_n, p.tile_k
    (512, 512, 4096)
    >>> largest_tiles(4096, 4096, 4096, "bfloat16", "trn2", buffers=3).tile_m
    256
    """
    m, n, k, dtype, core, buffers, out_dtype = _plan_args(m, n, k, dtype, chip, buffers, out_dtype)
    fm, fn = core.stationary_fmax, core.psum_tile_fmax
    best = None
    max_groups = core.psum_banks // buffers
    for i in range(1, max(1, max_groups) + 1):
        tm = min(i * fm, m)
        for j in range(1, max(1, max_groups // i) + 1):
            tn = min(j * fn, n)
            if buffers * math.ceil(tm / fm) * math.ceil(tn / fn) > core.psum_banks:
                continue
            tk = _fit_tile_k(core, tm, tn, k, buffers, dtype, out_dtype)
            if tk < 1:
                continue
            plan = _plan(core, m, n, k, tm, tn, tk, buffers, dtype, out_dtype)
            rank = (plan.hbm_bytes, -plan.tile_k, plan.sbuf_bytes_per_partition)
            if best is None or rank < best[0]:
                best = (rank, plan)
            if tn >= n:
                break
        if tm >= m:
            break
    if best is None:
        raise ValueError(f"no tile fits {core.core}'s SBUF and PSUM with buffers={buffers} "
                         f"and dtype {dtype}: use fewer buffers")
    return best[1]


# --------------------------------------------------------------------------- kernels

def _matmul_program(kern: Kernel, a_t: Tensor, b: Tensor, c: Tensor, plan: TilePlan) -> None:
    """Output-stationary tiled matmul: for each output tile, stream k in chunks, accumulate
    in PSUM, evacuate to SBUF (vector engine), store."""
    core = kern.core
    p, fm, fn = core.partitions, core.stationary_fmax, core.psum_tile_fmax
    kk, mm = a_t.shape
    nn = b.shape[1]
    tm, tn, tk, nbuf = plan.tile_m, plan.tile_n, plan.tile_k, plan.buffers
    kt = math.ceil(tk / p)
    gm, gn = math.ceil(tm / fm), math.ceil(tn / fn)
    a_pool = kern.pool("sbuf", (p, kt, tm), a_t.dtype, nbuf, "A panel")
    b_pool = kern.pool("sbuf", (p, kt, tn), b.dtype, nbuf, "B panel")
    c_pool = kern.pool("sbuf", (fm, gm, tn), c.dtype, nbuf, "C tile")
    acc_pool = kern.pool("psum", (fm, fn), "float32", nbuf * gm * gn, "C accumulator")
    if not kern.execute:
        _matmul_schedule(kern, a_t, b, c, plan, a_pool, b_pool, c_pool, acc_pool)
        return
    chunk = block = 0
    for m0 in range(0, mm, tm):
        mb = min(tm, mm - m0)
        for n0 in range(0, nn, tn):
            nb = min(tn, nn - n0)
            accs = [[acc_pool[block * gm * gn + i * gn + j] for j in range(gn)] for i in range(gm)]
            for c_i, k0 in enumerate(range(0, kk, tk)):
                rows = min(tk, kk - k0)
                full, rem = divmod(rows, p)
                a_s, b_s = a_pool[chunk], b_pool[chunk]
                chunk += 1
                if full:
                    kern.load(a_s[:, :full, :mb], a_t[k0:k0 + full * p, m0:m0 + mb])
                    kern.load(b_s[:, :full, :nb], b[k0:k0 + full * p, n0:n0 + nb])
                if rem:
                    kern.load(a_s[:rem, full:full + 1, :mb], a_t[k0 + full * p:k0 + rows, m0:m0 + mb])
                    kern.load(b_s[:rem, full:full + 1, :nb], b[k0 + full * p:k0 + rows, n0:n0 + nb])
                grid = [[accs[i][j][:min(fm, mb - i * fm), :min(fn, nb - j * fn)]
                         for j in range(math.ceil(nb / fn))] for i in range(math.ceil(mb / fm))]
                if full:
                    kern.matmul_grid(grid, a_s[:, :full, :mb], b_s[:, :full, :nb], accumulate=c_i > 0)
                if rem:
                    kern.matmul_grid(grid, a_s[:rem, full:full + 1, :mb], b_s[:rem, full:full + 1, :nb],
                                     accumulate=c_i > 0 or full > 0)
            c_s = c_pool[block]
            for i in range(math.ceil(mb / fm)):
                ms = min(fm, mb - i * fm)
                for j in range(math.ceil(nb / fn)):
                    ns = min(fn, nb - j * fn)
                    kern.copy(_group(c_s, ms, i, j * fn, ns), accs[i][j][:ms, :ns])
            for i in range(math.ceil(mb / fm)):      # group i holds output rows i·fm + partition
                ms = min(fm, mb - i * fm)
                kern.store(c[m0 + i * fm:m0 + i * fm + ms, n0:n0 + nb], _group(c_s, ms, i, 0, nb))
            block += 1


def _matmul_schedule(kern: Kernel, a_t: Tensor, b: Tensor, c: Tensor, plan: TilePlan,
                     a_pool: Pool, b_pool: Pool, c_pool: Pool, acc_pool: Pool) -> None:
    """The cost-only path of :func:`_matmul_program`: the same operations, traffic and
    timeline, issued without building views (a test checks both paths agree)."""
    core = kern.core
    p, fm, fn = core.partitions, core.stationary_fmax, core.psum_tile_fmax
    kk, mm = a_t.shape
    nn = b.shape[1]
    tm, tn, tk = plan.tile_m, plan.tile_n, plan.tile_k
    gm, gn = math.ceil(tm / fm), math.ceil(tn / fn)
    key, cmax = _tensor_mode(core, [a_t.dtype, b.dtype])
    per_instr = max(1, cmax // p)
    rate = core.dense_flops_per_s[key]
    fixed = core.dma_fixed_s
    a_b, b_b, c_b = a_t.itemsize, b.itemsize, c.itemsize
    issue = kern._issue_t
    mm_min = core.mm_min_cycles
    chunk = block = 0
    hbm_read = hbm_write = flops_total = 0.0
    for m0 in range(0, mm, tm):
        mb = min(tm, mm - m0)
        n_i = math.ceil(mb / fm)
        for n0 in range(0, nn, tn):
            nb = min(tn, nn - n0)
            n_j = math.ceil(nb / fn)
            accs = [[acc_pool[block * gm * gn + i * gn + j] for j in range(gn)] for i in range(gm)]
            # (tile row i, tile column j, rows ms, columns ns) of each PSUM piece of this tile
            pieces = [(i, j, min(fm, mb - i * fm), min(fn, nb - j * fn)) for i in range(n_i) for j in range(n_j)]
            for c_i, k0 in enumerate(range(0, kk, tk)):
                rows = min(tk, kk - k0)
                full, rem = divmod(rows, p)
                a_s, b_s = a_pool[chunk], b_pool[chunk]
                chunk += 1
                parts = ([(p, full, full * p)] if full else []) + ([(rem, 1, rem)] if rem else [])
                for part, _, nrows in parts:
                    for src, dst, width, item in ((a_t, a_s, mb, a_b), (b, b_s, nb, b_b)):
                        nbytes = nrows * width * item
                        hbm_read += nbytes
                        issue("dma_load", "load", (src,), (dst,), kern._dma_s(nbytes, part),
                              nbytes, 0.0, part, fixed)
                for n_part, (part, groups, nrows) in enumerate(parts):
                    accumulate = c_i > 0 or n_part > 0
                    n_instr = math.ceil(groups / per_instr)
                    for i, j, ms, ns in pieces:
                        d = accs[i][j]
                        flops = float(_FLOPS_PER_MAC * nrows * ms * ns)
                        flops_total += flops
                        issue("tensor", "matmul", (a_s, b_s, d) if accumulate else (a_s, b_s), (d,),
                              n_instr * _FLOPS_PER_MAC * cmax * fm * max(ns, mm_min) / rate,
                              0.0, flops, part)
            c_s = c_pool[block]
            for i, j, ms, ns in pieces:
                issue("vector", "copy", (accs[i][j],), (c_s,),
                      kern._engine_s("vector", ns, 1, [c.dtype, "float32"]), 0.0, 0.0, ms)
            for i in range(n_i):
                ms = min(fm, mb - i * fm)
                nbytes = ms * nb * c_b
                hbm_write += nbytes
                issue("dma_store", "store", (c_s,), (c,), kern._dma_s(nbytes, ms), nbytes, 0.0, ms, fixed)
            block += 1
    kern.hbm_read_bytes += hbm_read
    kern.hbm_write_bytes += hbm_write
    kern.flops += flops_total


def _group(t: Tensor, rows: int, g: int, f0: int, nf: int) -> View:
    """``t[:rows, g, f0:f0+nf]`` as a 2-D view (the group axis dropped)."""
    v = t[:rows, g:g + 1, f0:f0 + nf]
    return _Squeezed(v)


class _Squeezed(View):
    """A ``[p, 1, f]`` view seen as ``[p, f]``."""

    __slots__ = ()

    def __init__(self, v: View):
        super().__init__(v.tensor, v.bounds)
        self.shape = (v.shape[0], v.shape[2])

    @property
    def data(self):
        d = self.tensor.data
        return None if d is None else d[self.slices].reshape(self.shape)

    @property
    def slices(self):
        (a0, b0), (g, _), (a2, b2) = self.bounds
        return (slice(a0, b0), g, slice(a2, b2))


def _run_matmul(m, n, kk, a, b, chip, dtype, out_dtype, tile_m, tile_n, tile_k, buffers,
                execute) -> KernelRun:
    core = core_model(chip)
    if tile_m is None and tile_n is None and tile_k is None:
        plan = largest_tiles(m, n, kk, dtype, chip, buffers, out_dtype)
    else:
        plan = tile_plan(m, n, kk, core.stationary_fmax if tile_m is None else tile_m,
                         core.psum_tile_fmax if tile_n is None else tile_n, tile_k, dtype, chip,
                         buffers, out_dtype)
    kern = Kernel(chip, execute=execute, name=f"tiled matmul {m}×{kk} @ {kk}×{n}")
    if execute:
        a_t = kern._hbm_checked(a.T, plan.dtype, "A^T")
        b_h = kern._hbm_checked(b, plan.dtype, "B")
    else:
        a_t = kern.hbm((kk, m), plan.dtype, "A^T")
        b_h = kern.hbm((kk, n), plan.dtype, "B")
    c = kern.hbm_zeros((m, n), plan.out_dtype, "C")
    _matmul_program(kern, a_t, b_h, c, plan)
    return kern.result(c)


def tiled_matmul(a: Any, b: Any, *, chip: str = "trn2", dtype: str = "bfloat16",
                 out_dtype: str | None = None, tile_m: int | None = None, tile_n: int | None = None,
                 tile_k: int | None = None, buffers: int = 2) -> KernelRun:
    """``C = A @ B`` on one NeuronCore of the emulator, tile by tile, with numerics.

    The kernel is output-stationary: for each ``tile_m × tile_n`` output tile it loads an A
    panel (from A stored transposed in HBM, K on the partition axis, as the NKI matmul
    tutorial does) and a B panel, k chunk by k chunk, accumulates every 128 × 512 piece in
    a PSUM bank on the tensor engine, copies the result to SBUF on the vector engine
    (rounding to ``out_dtype``) and stores it. Inputs are rounded to ``dtype`` once, in HBM.

    Parameters
    ----------
    a, b : array_like
        ``[m, k]`` and ``[k, n]``, finite and within ``dtype``'s range.
    chip : str
        ``"trn1"``, ``"trn2"`` or ``"trn3"``.
    dtype, out_dtype : str
        Input and output formats (``numerics.FORMATS``); ``out_dtype`` defaults to ``dtype``.
    tile_m, tile_n, tile_k : int, optional
        The tiling; all ``None`` takes :func:`largest_tiles`. A tile that does not fit SBUF or
        PSUM raises ``ValueError`` from the allocator.
    buffers : int
        Buffers per stream (1 to 16).

    Returns
    -------
    KernelRun
        ``output`` is C (float32 holding ``out_dtype`` values). It matches ``a @ b`` (in
        float64, from the rounded inputs) within ``eps/2·|C| + k·2^-24·(|A|@|B|)``: one rounding
        to ``out_dtype`` (``eps`` from ``numerics.format_info``) and FP32 accumulation.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(12.0).reshape(3, 4); b = np.ones((4, 2))
    >>> r = tiled_matmul(a, b)
    >>> r.output.tolist()
    [[6.0, 6.0], [22.0, 22.0], [38.0, 38.0]]
    >>> r.hbm_bytes == matmul_hbm_bytes(3, 2, 4, 3, 2, "bfloat16")
    True
    """
    dtype = _dtype(dtype)
    a = _finite_array(a, "a", dtype, ndim=2)
    b = _finite_array(b, "b", dtype, ndim=2)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {a.shape} and b is {b.shape}: a's columns must equal b's rows")
    return _run_matmul(a.shape[0], b.shape[1], a.shape[1], a, b, chip, dtype, out_dtype,
                       tile_m, tile_n, tile_k, buffers, True)


def matmul_cost(m: int, n: int, k: int, *, chip: str = "trn2", dtype: str = "bfloat16",
                out_dtype: str | None = None, tile_m: int | None = None, tile_n: int | None = None,
                tile_k: int | None = None, buffers: int = 2) -> KernelRun:
    """The same kernel as :func:`tiled_matmul`, cost only: traffic, memory and timeline.

    Examples
    --------
    >>> r = matmul_cost(4096, 4096, 4096)
    >>> r.hbm_bytes == largest_tiles(4096, 4096, 4096).hbm_bytes, r.binding_engine
    (True, 'tensor')
    >>> round(r.time_s * 1e3, 2)
    1.78
    """
    m, n, k = (integer(nm, v, minimum=1, maximum=_MAX_DIM) for nm, v in (("m", m), ("n", n), ("k", k)))
    return _run_matmul(m, n, k, None, None, chip, _dtype(dtype), out_dtype, tile_m, tile_n,
                       tile_k, buffers, False)


def _rows_kernel(x: Any, name: str, chip: str, dtype: str, buffers: int,
                 rows_per_tile: int | None = None, out_name: str = "out", dma_queues: str = "shared"):
    """A kernel over the rows of ``x`` (checked): the input and a zeroed output of its shape in
    HBM, the checked dtype and buffer count, and the rows (partitions) of one tile."""
    dtype = _dtype(dtype)
    xa = _finite_array(x, "x", dtype, ndim=2)
    buffers = integer("buffers", buffers, minimum=1, maximum=16)
    kern = Kernel(chip, name=name, core=core_model(chip, dma_queues=dma_queues))
    p = kern.core.partitions
    rows = p if rows_per_tile is None else integer("rows_per_tile", rows_per_tile, minimum=1, maximum=p)
    xin = kern.hbm(xa, dtype, "x")
    out = kern.hbm_zeros(xa.shape, dtype, out_name)
    return kern, xin, out, dtype, buffers, rows


def _row_tiles(rows: int, p: int):
    """``(i, r0, r)`` for each tile of at most ``p`` rows: its index, first row and row count."""
    for i, r0 in enumerate(range(0, rows, p)):
        yield i, r0, min(p, rows - r0)


def _stream_rows(kern: Kernel, xin: Tensor, out: Tensor, p: int, *pools):
    """Stream the rows of ``xin`` through SBUF, ``p`` rows (partitions) a tile: load a tile
    into the first pool's buffer, yield the tile's buffer of every pool (trimmed to its rows)
    for the caller's compute, then store the first buffer into ``out``."""
    for i, r0, r in _row_tiles(xin.shape[0], p):
        tiles = tuple(pool[i][:r] for pool in pools)
        kern.load(tiles[0], xin[r0:r0 + r])
        yield tiles
        kern.store(out[r0:r0 + r], tiles[0])


def elementwise(x: Any, func: str = "exp", *, chip: str = "trn2", dtype: str = "bfloat16",
                buffers: int = 2, dma_queues: str = "shared") -> KernelRun:
    """Apply an activation function to every element, 128 rows per tile, in place.

    Each tile is loaded (DMA), transformed on the scalar engine in its own buffer and
    stored (DMA): the simplest stream, whose timeline :func:`pipeline_time_s` gives exactly
    for 1 and 3 buffers (and runs for 2).

    Parameters
    ----------
    x : array_like
        ``[rows, cols]`` (a 1-D input is one row).
    func : str
        One of :data:`ACTIVATIONS`.
    chip, dtype : str
        Core and the format of x and of the result.
    buffers : int
        SBUF buffers the tiles rotate through (1 to 16).
    dma_queues : str
        ``"shared"`` (default): loads and stores share the core's DMA engines;
        ``"separate"``: each has the full bandwidth (see :func:`core_model`).

    Examples
    --------
    >>> import numpy as np
    >>> r = elementwise(np.zeros((256, 4)), "exp", buffers=1)
    >>> float(r.output.max()), list(r.timeline.engine[:4])
    (1.0, ['dma_load', 'scalar', 'dma_store', 'dma_load'])
    """
    kern, xin, out, dtype, buffers, p = _rows_kernel(x, f"elementwise {func}", chip, dtype, buffers,
                                                     dma_queues=dma_queues)
    func = choice("func", func, ACTIVATIONS)
    cols = xin.shape[1]
    pool = kern.pool("sbuf", (p, cols), dtype, buffers, "tile")
    for (t,) in _stream_rows(kern, xin, out, p, pool):
        kern.activation(t, t, func)
    return kern.result(out)


def softmax(x: Any, *, fused_sum: bool = False, chip: str = "trn2", dtype: str = "bfloat16",
            buffers: int = 2) -> KernelRun:
    """Row-wise softmax ``exp(x − max) / Σ exp(x − max)``, 128 rows per tile.

    Per tile: the row max on the vector engine, ``exp(x − max)`` on the scalar engine (the
    subtraction fused as the activation's bias), the row sums on the vector engine (or, with
    ``fused_sum``, summed by the scalar engine as it writes, at no extra cost), and the
    division on the vector engine. Intermediates are FP32; the result is rounded to ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> r = softmax(np.log([[1.0, 1.0, 2.0]]), dtype="float32")
    >>> [round(float(v), 4) for v in r.output[0]]
    [0.25, 0.25, 0.5]
    """
    if not isinstance(fused_sum, bool):
        raise ValueError(f"fused_sum must be True or False, got {fused_sum!r}")
    kern, xin, out, dtype, buffers, p = _rows_kernel(x, "softmax", chip, dtype, buffers,
                                                     out_name="probabilities")
    cols = xin.shape[1]
    x_pool = kern.pool("sbuf", (p, cols), dtype, buffers, "x")
    e_pool = kern.pool("sbuf", (p, cols), "float32", buffers, "exp")
    s_pool = kern.pool("sbuf", (p, 2), "float32", buffers, "row stats")
    for xt, et, st in _stream_rows(kern, xin, out, p, x_pool, e_pool, s_pool):
        _softmax_rows(kern, xt, et, st, fused_sum)
        kern.copy(xt, et)          # round the probabilities into the input's buffer
    return kern.result(out)


def _softmax_rows(kern: Kernel, src: View, e: View, stats: View, fused_sum: bool) -> None:
    """``e = softmax(src)`` along the free axis; ``stats`` is ``[r, 2]`` FP32 scratch."""
    mx, total = stats[:, 0:1], stats[:, 1:2]
    kern.reduce(mx, src, "max")
    kern.tensor_scalar(mx, mx, "multiply", -1.0)
    if fused_sum:
        kern.activation(e, src, "exp", bias=mx, accumulate=total)
    else:
        kern.activation(e, src, "exp", bias=mx)
        kern.reduce(total, e, "sum")
    kern.tensor_scalar(e, e, "divide", total)


def attention_softmax(queries: Any, keys: Any, *, scale: float | None = None, causal: bool = False,
                      fused_sum: bool = False, chip: str = "trn2", dtype: str = "bfloat16",
                      buffers: int = 2) -> KernelRun:
    """Attention probabilities ``softmax(scale · Q Kᵀ)`` row by row, 128 queries per tile.

    The scores come from the tensor engine (head dimension on the partition axis, one PSUM
    bank per 512 keys), are scaled while the scalar engine evacuates PSUM, optionally get a
    causal mask from GpSimd (the escape hatch: key ``j`` is hidden from query ``i`` when
    ``j > i + keys − queries``), then go through the softmax of :func:`softmax`.

    Parameters
    ----------
    queries, keys : array_like
        ``[s_q, d]`` and ``[s_k, d]`` with ``d`` at most the partition count.
    scale : float, optional
        Default ``1 / sqrt(d)``.
    causal : bool
        Apply the causal mask.
    fused_sum, chip, dtype, buffers
        As for :func:`softmax`.

    Examples
    --------
    >>> import numpy as np
    >>> q = np.ones((2, 4)); kk = np.ones((3, 4))
    >>> r = attention_softmax(q, kk, causal=True, dtype="float32")
    >>> [[round(float(v), 3) for v in row] for row in r.output]
    [[0.5, 0.5, 0.0], [0.333, 0.333, 0.333]]
    """
    for flag, what in ((causal, "causal"), (fused_sum, "fused_sum")):
        if not isinstance(flag, bool):
            raise ValueError(f"{what} must be True or False, got {flag!r}")
    dtype = _dtype(dtype)
    q = _finite_array(queries, "queries", dtype, ndim=2)
    kk = _finite_array(keys, "keys", dtype, ndim=2)
    buffers = integer("buffers", buffers, minimum=1, maximum=16)
    kern = Kernel(chip, name="attention softmax")
    c = kern.core
    p, fn = c.partitions, c.psum_tile_fmax
    (s_q, d), (s_k, d2) = q.shape, kk.shape
    if d != d2:
        raise ValueError(f"queries have d={d} and keys d={d2}: the head dimensions must match")
    if d > p:
        raise ValueError(f"head dimension d={d} must be at most {p} (one contraction tile)")
    if causal and s_k < s_q:
        raise ValueError(f"causal needs at least as many keys as queries (got {s_k} keys for {s_q} "
                         "queries): the first queries would see no key at all")
    top = numerics.format_info("float32").max_finite
    scale = 1.0 / math.sqrt(d) if scale is None else in_range("scale", scale, -top, top)
    q_t = kern.hbm(q.T, dtype, "Q^T")
    k_t = kern.hbm(kk.T, dtype, "K^T")
    out = kern.hbm_zeros((s_q, s_k), dtype, "probabilities")
    kt = kern.sbuf((d, s_k), dtype, "K^T")
    kern.load(kt, k_t)
    q_pool = kern.pool("sbuf", (d, p), dtype, buffers, "Q^T tile")
    s_pool = kern.pool("sbuf", (p, s_k), "float32", buffers, "scores")
    st_pool = kern.pool("sbuf", (p, 2), "float32", buffers, "row stats")
    o_pool = kern.pool("sbuf", (p, s_k), dtype, buffers, "probabilities")
    acc = kern.pool("psum", (p, fn), "float32", max(2, buffers), "scores accumulator")
    offset = s_k - s_q
    bank = 0
    for i, r0, r in _row_tiles(s_q, p):
        qt, sc, st, ot = q_pool[i][:, :r], s_pool[i][:r], st_pool[i][:r], o_pool[i][:r]
        kern.load(qt, q_t[:, r0:r0 + r])
        for c0 in range(0, s_k, fn):
            cw = min(fn, s_k - c0)
            a = acc[bank][:r, :cw]
            bank += 1
            kern.matmul(a, qt, kt[:, c0:c0 + cw])
            kern.activation(sc[:, c0:c0 + cw], a, "identity", scale=scale)
        if causal:
            def mask(s, r0=r0):
                rows_i = np.arange(s.shape[0])[:, None] + r0
                cols_j = np.arange(s.shape[1])[None, :]
                return np.where(cols_j > rows_i + offset, -np.inf, s)
            kern.gpsimd(sc, mask, sc, name="causal mask")
        _softmax_rows(kern, sc, sc, st, fused_sum)
        kern.copy(ot, sc)
        kern.store(out[r0:r0 + r], ot)
    return kern.result(out)


def rmsnorm(x: Any, weight: Any = None, *, eps: float = 1e-6, scale_engine: str = "scalar",
            rows_per_tile: int | None = None, chip: str = "trn2", dtype: str = "bfloat16",
            buffers: int = 2) -> KernelRun:
    """RMSNorm of every row: ``x / sqrt(mean(x²) + eps) · weight``, rows on the partitions.

    The weight row is broadcast to every partition once, on the tensor engine (a matmul with
    a column of ones, as the NKI guides describe ``broadcast_to``). Per tile of rows: the
    squares and their row sums on the scalar engine (one pass, the sum fused), the mean, the
    ``eps`` and the reciprocal square root on ``[rows, 1]`` columns, the scaling by it on
    ``scale_engine`` and the multiply by the weight on the vector engine.

    Parameters
    ----------
    x : array_like
        ``[rows, d]``.
    weight : array_like, optional
        ``[d]``; ``None`` for no weight.
    eps : float
        Added to the mean square (>= 0).
    scale_engine : {"scalar", "vector"}
        Engine that multiplies x by the reciprocal RMS (moves a full pass between engines).
    rows_per_tile : int, optional
        Rows (partitions) per tile; default all of them. One row per tile uses one lane of
        the vector and scalar engines.
    chip, dtype, buffers
        As for :func:`softmax`.

    Examples
    --------
    >>> import numpy as np
    >>> r = rmsnorm(np.array([[3.0, 4.0]]), eps=0.0, dtype="float32")
    >>> [round(float(v), 4) for v in r.output[0]]   # rms = sqrt(12.5)
    [0.8485, 1.1314]
    """
    eps = in_range("eps", eps, 0.0, 1.0)
    scale_engine = choice("scale_engine", scale_engine, ("scalar", "vector"))
    kern, xin, out, dtype, buffers, p = _rows_kernel(x, "rmsnorm", chip, dtype, buffers, rows_per_tile)
    d = xin.shape[1]
    g_b = None
    if weight is not None:
        g = _finite_array(weight, "weight", dtype)
        if g.size != d:
            raise ValueError(f"weight must have d={d} values, got {g.size}")
        g_h = kern.hbm(g.reshape(1, d), dtype, "weight")
        g_row = kern.sbuf((1, d), dtype, "weight row")
        ones = kern.sbuf((1, p), dtype, "ones")
        g_b = kern.sbuf((p, d), "float32", "weight on every partition")
        kern.load(g_row, g_h)
        kern.memset(ones, 1.0)
        fn = kern.core.psum_tile_fmax
        acc = kern.pool("psum", (p, fn), "float32", 2, "broadcast")
        for j, c0 in enumerate(range(0, d, fn)):
            cw = min(fn, d - c0)
            kern.matmul(acc[j][:, :cw], ones, g_row[:, c0:c0 + cw])
            kern.copy(g_b[:, c0:c0 + cw], acc[j][:, :cw])
    x_pool = kern.pool("sbuf", (p, d), dtype, buffers, "x")
    y_pool = kern.pool("sbuf", (p, d), "float32", buffers, "x squared, then x / rms")
    s_pool = kern.pool("sbuf", (p, 1), "float32", buffers, "row statistic")
    for xt, yt, st in _stream_rows(kern, xin, out, p, x_pool, y_pool, s_pool):
        kern.activation(yt, xt, "square", accumulate=st)
        kern.tensor_scalar(st, st, "multiply", 1.0 / d, op2="add", operand2=eps)
        kern.activation(st, st, "rsqrt")
        if scale_engine == "scalar":
            kern.activation(yt, xt, "identity", scale=st)
        else:
            kern.tensor_scalar(yt, xt, "multiply", st)
        if g_b is not None:
            kern.tensor_tensor(xt, yt, g_b[:xt.shape[0]], "multiply")
        else:
            kern.copy(xt, yt)
    return kern.result(out)


# --------------------------------------------------------------------------- NKI, the matmul ladder, systolic timing

@functools.cache
def _nki_table() -> pd.DataFrame:
    return specs.read_data_csv("nki_api.csv")


def nki_library() -> pd.DataFrame:
    """Kernels of the NKI Library (``nkilib``) that stand beside the course's own kernels.

    From ``data/nki_library.csv``: ``kernel``, ``module`` (``nkilib.core...`` or
    ``nkilib.experimental...``), ``tier`` (``core`` or ``experimental``), ``does``,
    ``course_counterpart`` (the emulator kernel of chapter 08 it replaces, or empty),
    ``source_id``, ``note``. Before writing a kernel, look for one here: a bundled ``nkilib``
    ships inside ``neuronx-cc``.

    References
    ----------
    AWS Neuron docs, NKI Library Supported Kernel Reference and quickstart (Neuron 2.32).

    Examples
    --------
    >>> sorted(nki_library().query("course_counterpart == 'rmsnorm'").kernel)
    ['mlp', 'qkv', 'rmsnorm_quant_kernel']
    """
    return specs.read_data_csv("nki_library.csv")


def nki_mapping() -> pd.DataFrame:
    """Each emulator call and the NKI call it stands for, with the source and what differs.

    From ``data/nki_api.csv``: ``emulator_call``, ``timeline_op`` (the first word of the op
    the emulator records for it), ``nki_call``, ``engine``, ``source_id``, ``note``.

    Examples
    --------
    >>> m = nki_mapping().set_index("emulator_call")
    >>> m.nki_call["Kernel.matmul"]
    'nisa.nc_matmul(dst=psum_tile, stationary=..., moving=...)'
    """
    return _nki_table().copy()


def matmul_ladder(m: int, n: int, k: int, dtype: str = "bfloat16", chip: str = "trn2") -> pd.DataFrame:
    """The NKI matrix-multiplication tutorial's four kernels, rung by rung: HBM traffic and
    FLOP/byte, derived from each kernel's loop order.

    ``lhsT`` is ``[k, m]``, ``rhs`` ``[k, n]``, the result ``[m, n]``, all of ``dtype``; tiles
    are ``128 × 128`` (stationary), ``128 × 512`` (moving, one PSUM bank).

    1. ``nki_matmul_tiled_``: both tiles loaded for every (m-tile, n-tile, k-tile):
       A read ``n/512`` times, B ``m/128`` times.
    2. ``nki_matmul_hoist_load_``: the lhsT column of an m-tile loaded once, B per (m, n):
       A once, B ``m/128`` times.
    3. ``nki_matmul_block_free_dimension_`` (2 × 2 tiles, blocks 256 × 1024): A once,
       B ``m/256`` times.
    4. ``nki_matmul_fully_optimized_`` (blocks 2048 × 1024 × 1024, results accumulated in
       SBUF with the vector engine): B once, A ``n/1024`` times; the live result, lhsT and
       rhs blocks must fit SBUF.

    The result is written once in every rung. ``sbuf_bytes`` is what each rung keeps live
    (the tutorial's own count for rung 4: result tiles ``m × 1024``, the lhsT block
    ``1024 × 2048`` and the rhs block ``1024 × 1024``); ``accumulate`` says where partial sums
    live; ``vector_add_s`` is rung 4's PSUM-to-SBUF accumulation on the vector engine
    (one ``tensor_tensor`` add of a ``128 × 512`` tile per m-tile, n-tile and k-block), the
    price of escaping PSUM's capacity.

    Returns
    -------
    pandas.DataFrame
        ``rung``, ``kernel``, ``block_m``, ``block_n``, ``block_k``, ``a_bytes``, ``b_bytes``,
        ``c_bytes``, ``hbm_bytes``, ``intensity_flop_per_byte``, ``sbuf_bytes``, ``fits_sbuf``,
        ``accumulate``, ``vector_add_s``.

    References
    ----------
    AWS NKI tutorial "Matrix multiplication" and its ``matrix_multiplication_nki_kernels.py``
    (``data/sources.csv``: ``aws-nki-matmul-tutorial``).

    Examples
    --------
    >>> df = matmul_ladder(4096, 4096, 4096)
    >>> [round(v) for v in df.intensity_flop_per_byte]
    [100, 120, 228, 683]
    """
    e = _bytes(dtype, "dtype")
    core = core_model(chip)
    p, fm, fn = core.partitions, core.stationary_fmax, core.psum_tile_fmax
    bm4, bn4, bk4 = 16 * fm, 2 * fn, 8 * p
    m = integer("m", m, minimum=bm4, maximum=_MAX_DIM)
    n = integer("n", n, minimum=bn4, maximum=_MAX_DIM)
    k = integer("k", k, minimum=bk4, maximum=_MAX_DIM)
    for name, v, q in (("m", m, bm4), ("n", n, bn4), ("k", k, bk4)):
        if v % q:
            raise ValueError(f"{name} must be a multiple of {q} (the tutorial's rung 4 block), got {v}")
    flops = 2.0 * m * n * k
    a, b, c = m * k * e, k * n * e, m * n * e
    probe = Kernel(chip, execute=False, core=core)
    add_s = probe._engine_s("vector", fn, 2, [_dtype(dtype), "float32"])
    rungs = [
        (1, "nki_matmul_tiled_", fm, fn, p, a * n / fn, b * m / fm, (p * fm + p * fn) * e, "PSUM", 0.0),
        (2, "nki_matmul_hoist_load_", fm, fn, k, a, b * m / fm, (k * fm + k * fn) * e, "PSUM", 0.0),
        (3, "nki_matmul_block_free_dimension_", 2 * fm, 2 * fn, k, a, b * m / (2 * fm),
         (k * 2 * fm + k * 2 * fn) * e, "PSUM", 0.0),
        (4, "nki_matmul_fully_optimized_", bm4, bn4, bk4, a * n / bn4, b,
         (m * bn4 + bk4 * bm4 + bk4 * bn4) * e, "SBUF",
         (m // fm) * (n // fn) * (k // bk4) * add_s),
    ]
    rows = []
    for rung, name, bm, bn, bk, a_b, b_b, live, acc, vec in rungs:
        total = a_b + b_b + c
        rows.append({"rung": rung, "kernel": name, "block_m": bm, "block_n": bn, "block_k": bk,
                     "a_bytes": float(a_b), "b_bytes": float(b_b), "c_bytes": float(c),
                     "hbm_bytes": float(total), "intensity_flop_per_byte": flops / total,
                     "sbuf_bytes": float(live), "fits_sbuf": bool(live <= core.sbuf_bytes),
                     "accumulate": acc, "vector_add_s": float(vec)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class SystolicTiming:
    """One matmul instruction on a ``rows × cols`` systolic array (see :func:`systolic_matmul_cycles`)."""

    moving_n: int
    rows: int
    cols: int
    fill_cycles: int
    stream_cycles: int
    latency_cycles: int
    issue_cycles: float

    def _repr_markdown_(self) -> str:
        return (f"N = {self.moving_n} moving columns on {self.rows} × {self.cols}: fill "
                f"{self.fill_cycles}, stream {self.stream_cycles}, latency {self.latency_cycles} "
                f"cycles; back to back, one instruction every **{self.issue_cycles:g}** cycles")


def systolic_matmul_cycles(moving_n: int, chip: str = "trn2") -> SystolicTiming:
    """Cycles of one MultiplyMoving instruction on the tensor engine's systolic array.

    The stationary tile (contraction ``rows`` × ``cols`` outputs) sits in the array; the
    ``moving_n`` columns of the moving tile enter one per cycle, skewed, and each partial
    sum moves one processing element per cycle. By hand: the first column's result leaves
    after it crosses the array, ``rows + cols − 1`` cycles (the **fill**); one more column
    leaves every cycle after that (the **stream**, ``moving_n − 1`` cycles), so an isolated
    instruction takes ``latency = rows + cols + moving_n − 2`` cycles. Back to back, the
    next instruction's fill overlaps this one's drain, so the array accepts an instruction
    every ``moving_n`` cycles, but no faster than the per-instruction minimum AWS states
    (``mm_min_cycles``, 64 on NeuronCore-v2, carried to later cores): ``max(N, 64)``.

    References
    ----------
    H. T. Kung, "Why systolic architectures?", IEEE Computer 15(1), 1982 (the pipelined
    array); AWS "Trainium/Inferentia2 Architecture Guide for NKI" (the ``max(N, 64)`` cost
    of a matmul instruction; LoadStationary and MultiplyMoving).

    Examples
    --------
    >>> t = systolic_matmul_cycles(512)
    >>> t.fill_cycles, t.latency_cycles, t.issue_cycles
    (255, 766, 512.0)
    >>> systolic_matmul_cycles(8).issue_cycles      # a skinny moving tile pays the floor
    64.0
    """
    core = core_model(chip)
    n = integer("moving_n", moving_n, minimum=1, maximum=core.psum_tile_fmax)
    rows, cols = core.tensor_rows, core.stationary_fmax
    fill = rows + cols - 1
    return SystolicTiming(n, rows, cols, fill, n - 1, fill + n - 1, max(float(n), core.mm_min_cycles))


def decode_matmul_orientations(tokens: int, d_in: int, d_out: int, dtype: str = "bfloat16",
                               chip: str = "trn2") -> pd.DataFrame:
    """A skinny decode matmul ``[tokens, d_in] @ [d_in, d_out]`` on one core, both ways round.

    "tokens stationary": ``xᵀ`` chunks (``128 × tokens``) are stationary, the weight streams
    as moving tiles of 512 columns: ``⌈d_in/128⌉ · ⌈d_out/512⌉`` instructions of
    ``max(512, 64)`` cycles, and only ``tokens`` of the 128 array columns do work.
    "weights stationary": ``128 × 128`` weight tiles are stationary and the tokens stream as
    the moving tile: ``⌈d_in/128⌉ · ⌈d_out/128⌉`` instructions of ``max(tokens, 64)`` cycles
    (the 64-cycle floor binds below 64 tokens). Both read the weight once from HBM, so
    ``hbm_s`` is the same; the faster orientation is the one whose ``tensor_s`` is smaller,
    and the kernel is memory-bound when ``hbm_s`` exceeds it.

    Returns
    -------
    pandas.DataFrame
        ``orientation``, ``instructions``, ``cycles_per_instruction``, ``tensor_s``,
        ``column_utilisation``, ``hbm_s``.

    Examples
    --------
    >>> df = decode_matmul_orientations(8, 8192, 8192).set_index("orientation")
    >>> int(df.instructions["weights stationary"]), df.cycles_per_instruction.tolist()
    (4096, [512.0, 64.0])
    """
    core = core_model(chip)
    tokens = integer("tokens", tokens, minimum=1, maximum=core.stationary_fmax)
    d_in = integer("d_in", d_in, minimum=1, maximum=_MAX_DIM)
    d_out = integer("d_out", d_out, minimum=1, maximum=_MAX_DIM)
    e = _bytes(_dtype(dtype), "dtype")
    p, cols, fn = core.partitions, core.stationary_fmax, core.psum_tile_fmax
    clock = core.clocks_hz["tensor"]
    hbm_s = (d_in * d_out + tokens * (d_in + d_out)) * e / core.dma_bytes_per_s
    kc = math.ceil(d_in / p)
    out = []
    for name, instr, n_moving, util in (
            ("tokens stationary", kc * math.ceil(d_out / fn), min(fn, d_out), tokens / cols),
            ("weights stationary", kc * math.ceil(d_out / cols), tokens, min(d_out, cols) / cols)):
        cyc = systolic_matmul_cycles(n_moving, chip).issue_cycles
        out.append({"orientation": name, "instructions": instr, "cycles_per_instruction": cyc,
                    "tensor_s": instr * cyc / clock, "column_utilisation": util, "hbm_s": hbm_s})
    return pd.DataFrame(out)
