"""Chapter 01's views: the NeuronCore block diagram and the core counts a chart draws.

Every figure in a label comes from :mod:`trainium_lab.specs`; positions are layout only.
"""

from __future__ import annotations

import textwrap

import pandas as pd

from trainium_lab import specs
from trainium_lab import units as u
from trainium_lab._validate import instance

__all__ = ["core_counts_long", "neuroncore_blocks"]


def core_counts_long(table: pd.DataFrame, lnc: int) -> pd.DataFrame:
    """:func:`trainium_lab.cores.core_count_table` in long form, for grouped bars.

    Columns ``level``, ``what`` ("chips", "physical cores", "logical cores (LNC=2)"),
    ``count``.

    Examples
    --------
    >>> from trainium_lab import cores
    >>> long = core_counts_long(cores.core_count_table("trn2.48xlarge"), 2)
    >>> sorted(set(long.what))
    ['chips', 'logical cores (LNC=2)', 'physical cores']
    """
    table = instance("table", table, pd.DataFrame, "a DataFrame from cores.core_count_table")
    long = table.melt(id_vars="level", var_name="what", value_name="count")
    long["what"] = long["what"].map({"chips": "chips", "physical_cores": "physical cores",
                                     "logical_cores": f"logical cores (LNC={lnc})"})
    return long


def neuroncore_blocks(chip: str = "trn2") -> pd.DataFrame:
    """A block diagram of one NeuronCore and what feeds it, labelled from ``data/``.

    Positions are layout only (arbitrary units on a 100 × 100 canvas); every figure in a
    label comes from :mod:`trainium_lab.specs`.

    Returns
    -------
    pandas.DataFrame
        Columns ``block``, ``kind`` (engine / on-chip SRAM / data movement / device
        memory), ``x``, ``x2``, ``y``, ``y2``, ``label`` (lines joined with newlines).

    Examples
    --------
    >>> b = neuroncore_blocks("trn2").set_index("block")
    >>> b.loc["SBUF", "label"].splitlines()[1]
    '28 MiB in 128 partitions'
    """
    c = specs.chip(chip)
    core = c.core
    t = core.dense_flops_per_s
    tensor_rate = "; ".join(f"{k.upper()} {v / u.TFLOPS:g} TFLOP/s" for k, v in t.items())
    mib = lambda b: f"{b / u.MiB:g} MiB"  # noqa: E731
    kib = lambda b: f"{b / u.KiB:g} KiB"  # noqa: E731
    blocks = [
        ("Tensor engine", "engine", 0, 40, 70, 100,
         f"Tensor engine\n{core.tensor_rows} × {core.tensor_cols} systolic array\n{tensor_rate}"),
        ("Vector engine", "engine", 42, 61, 70, 100,
         f"Vector engine\nreductions, norms\nFP32 {core.vector_fp32_flops_per_s / u.TFLOPS:g} TFLOP/s"),
        ("Scalar engine", "engine", 63, 81, 70, 100,
         f"Scalar engine\nelement-wise, activations\nFP32 {core.scalar_fp32_flops_per_s / u.TFLOPS:g} TFLOP/s"),
        ("GpSimd engine", "engine", 83, 100, 70, 100, "GpSimd engine\n" + core.gpsimd),
        ("PSUM", "on-chip SRAM", 0, 40, 52, 66,
         f"PSUM (matmul accumulators)\n{mib(core.psum_bytes)}, {kib(core.psum_bytes_per_partition)} per partition"),
        ("SBUF", "on-chip SRAM", 0, 100, 26, 48,
         f"SBUF (software-managed, not a cache)\n{mib(core.sbuf_bytes)} in {core.sbuf_partitions} partitions\n"
         f"{kib(core.sbuf_bytes_per_partition)} per partition"),
        ("DMA", "data movement", 0, 100, 13, 22,
         f"DMA engines: {c.dma_engines} per chip, {c.dma_bytes_per_s / u.TB:g} TB/s per chip"),
        ("HBM", "device memory", 0, 100, 0, 9,
         f"HBM: {c.hbm_bytes / u.GiB:g} GiB and {c.hbm_bytes_per_s / u.TB:g} TB/s per chip, "
         f"shared by {c.neuron_cores} cores"),
    ]
    df = pd.DataFrame(blocks, columns=["block", "kind", "x", "x2", "y", "y2", "label"])
    # about 1.3 characters per layout unit at the chart's width
    df["label"] = [_wrap(text, int((x2 - x) * 1.3)) for text, x, x2 in zip(df.label, df.x, df.x2)]
    return df


def _wrap(text: str, width: int) -> str:
    return "\n".join(part for line in text.split("\n")
                     for part in (textwrap.wrap(line, max(width, 8)) or [""]))
