"""Presentation of the models' results: labels, sentences and layout geometry.

The model modules (:mod:`trainium_lab.layouts`, :mod:`trainium_lab.topology`...) return
numbers, frozen dataclasses and tidy DataFrames in base units. What a chart or a sentence
shows — display labels, a block diagram's positions, an explanation in words, a formula
written out — is made here, from those results. Charts, widgets and notebooks call these
functions; models never import this module (a model method kept for an old caller may
delegate here on use).

Pure: imports the standard library, numpy, pandas and the model modules; no altair, no
ipywidgets.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from trainium_lab import layouts, numerics, specs, topology
from trainium_lab import units as u
from trainium_lab._validate import instance

__all__ = ["core_counts_long", "chip_map", "neuroncore_blocks", "bit_formula", "explain_plan"]


# --------------------------------------------------------------------------- chapter 01


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
    table = instance("table", table, pd.DataFrame, "a DataFrame from cores.core_count_table").copy()
    table.attrs.clear()  # a legacy table holds a DataFrame in attrs, which pandas cannot compare
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


# --------------------------------------------------------------------------- chapter 02


def bit_formula(pattern) -> str:
    """The value a bit pattern holds, written out: ``(-1)^s × 2^(e - bias) × 1.m₂ = value``.

    Parameters
    ----------
    pattern : trainium_lab.numerics.BitPattern
        From :func:`trainium_lab.numerics.bit_pattern`.

    Examples
    --------
    >>> bit_formula(numerics.bit_pattern(1.0, "bfloat16"))
    '(-1)^0 × 2^(127 - 127) × 1.0000000₂ = 1'
    >>> bit_formula(numerics.bit_pattern(float("inf"), "float16"))
    '+inf'
    """
    b = instance("pattern", pattern, numerics.BitPattern, "a BitPattern from numerics.bit_pattern")
    f = numerics.format_info(b.format)
    if b.kind == "nan":
        return "NaN"
    if b.kind == "inf":
        return f"{'-' if b.sign else '+'}inf"
    if b.kind in ("zero", "subnormal"):
        return f"(-1)^{b.sign} × 2^{b.exponent} × 0.{b.mantissa:0{f.mantissa_bits}b}₂ = {b.stored:.8g}"
    return (f"(-1)^{b.sign} × 2^({b.exponent_field} - {f.bias}) × 1.{b.mantissa:0{f.mantissa_bits}b}₂"
            f" = {b.stored:.8g}")


# --------------------------------------------------------------------------- chapter 03


def chip_map(placement, kind: str = "tp", highlight: int = 0) -> pd.DataFrame:
    """Every chip of a placement with the labels a rank-to-chip map shows.

    :meth:`trainium_lab.topology.Placement.chip_groups` plus ``label`` (``"US0·i1"``:
    UltraServer 0, instance 1; ``"inst0"`` for standalone instances) and ``colour``
    (``"group g"``, or ``"mixed"`` when several groups of ``kind`` share the chip: the
    category a chart colours by).

    Returns
    -------
    pandas.DataFrame
        ``global_chip, system, instance, chip, row, col, label, first_rank, last_rank,
        group, n_groups, colour, highlighted``.

    Examples
    --------
    >>> m = chip_map(topology.place(tp=64, pp=4, system="trn2-ultraserver", lnc=2))
    >>> m.label.iloc[16], m.colour.iloc[16]
    ('US0·i1', 'group 1')
    """
    placement = instance("placement", placement, topology.Placement, "a Placement from topology.place")
    g = placement.chip_groups(kind, highlight)
    if placement.cluster.instances_per_system > 1:
        label = [f"US{s}·i{i}" for s, i in zip(g.system.tolist(), g.instance.tolist())]
    else:
        label = [f"inst{s}" for s in g.system.tolist()]
    g.insert(6, "label", label)
    g.insert(len(g.columns) - 1, "colour",
             np.where(g.n_groups > 1, "mixed", np.char.add("group ", g.group.to_numpy().astype(str))))
    return g


# --------------------------------------------------------------------------- chapter 05


def explain_plan(plan) -> list[str]:
    """Plain sentences about a layout search: the winner, where its time goes, what memory
    ruled out, and the best layout with other degrees.

    Parameters
    ----------
    plan : trainium_lab.layouts.Plan
        From :func:`trainium_lab.layouts.plan`.

    Returns
    -------
    list of str
        One sentence (or two) per line; every number is read from ``plan``.

    Examples
    --------
    >>> lines = explain_plan(layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64))
    >>> lines[1].startswith("Winner: TP")
    True
    """
    plan = instance("plan", plan, layouts.Plan, "a Plan from layouts.plan")
    TIME_PARTS = layouts.TIME_PARTS
    c, a = plan.cluster, plan.all
    allowed = (1 - plan.min_headroom_fraction)
    lines = [f"{len(a)} layouts of {plan.model.name} on {c.n_systems} × {c.system} "
             f"({c.n_chips} chips, {c.n_ranks} ranks at LNC={c.lnc}), global batch "
             f"{plan.global_batch} sequences; {int(a.fits.sum())} fit with "
             f"{plan.min_headroom_fraction:.0%} of HBM kept free."]
    if plan.table.empty:
        least = a.sort_values("memory_gib").iloc[0]
        lines.append(f"Nothing fits: the leanest layout ({least.label}) needs {least.memory_gib:.1f} GiB "
                     f"per chip, more than {allowed:.0%} of {least.hbm_gib:.0f} GiB. Add chips, shard "
                     "more (ZeRO-3), recompute more or shrink the micro-batch.")
        return lines
    b = plan.table.iloc[0]
    parts = {p: float(b[f"{p}_s"]) for p in TIME_PARTS}
    overhead = {p: v for p, v in parts.items() if p != "compute"}
    worst = max(overhead, key=overhead.get)
    names = {"compute": "compute", "tp_comm": "tensor-parallel all-reduces", "pp_comm": "pipeline sends",
             "bubble": "the pipeline bubble", "dp_exposed": "exposed data-parallel traffic"}
    where = (f"TP groups stay within the {b.tp_level} level" if b.tp > 1 else "no TP")
    where += f", PP crosses the {b.pp_level} level" if b.pp > 1 else ", no PP"
    where += f", DP crosses the {b.dp_level} level" if b.dp > 1 else ", no DP"
    lines.append(f"Winner: {b.label}. {b.tokens_per_s:,.0f} tokens/s, {b.step_s:.2f} s per step, "
                 f"effective MFU {b.mfu_effective:.1%}; {b.memory_gib:.1f} GiB of {b.hbm_gib:.0f} GiB "
                 f"per chip ({b.headroom_gib:.1f} GiB free). {where}.")
    close = int((plan.table.tokens_per_s >= 0.98 * b.tokens_per_s).sum()) - 1
    if close:
        lines.append(f"{close} other fitting layouts are within 2 % of it: a tie at this level of "
                     "modelling; choose among them by headroom and simplicity, then measure.")
    lines.append(f"Where its step goes: compute {parts['compute'] / b.step_s:.0%}; the largest overhead "
                 f"is {names[worst]} ({overhead[worst] / b.step_s:.1%})."
                 + (" Compute binds: overheads are small." if overhead[worst] < 0.1 * b.step_s
                    else f" {names[worst].capitalize()} binds after compute."))
    faster = a[(~a.fits) & (a.tokens_per_s > b.tokens_per_s)]
    if len(faster):
        f = faster.sort_values("memory_gib").iloc[0]
        lines.append(f"Memory binds too: {len(faster)} faster layouts do not fit. The closest to fitting, "
                     f"{f.label}, would give {f.tokens_per_s / b.tokens_per_s - 1:.1%} more tokens/s but "
                     f"needs {f.memory_gib:.1f} GiB per chip ({f.activations_gib:.1f} GiB of activations), "
                     f"above the {allowed * f.hbm_gib:.1f} GiB allowed.")
    else:
        lines.append("Memory does not bind: no faster layout was dropped for memory.")
    other = plan.table[(plan.table.tp != b.tp) | (plan.table.pp != b.pp) | (plan.table.dp != b.dp)]
    if len(other):
        o = other.iloc[0]
        diff = {p: float(o[f"{p}_s"]) - parts[p] for p in TIME_PARTS}
        why = max(diff, key=diff.get)
        lines.append(f"Best with other degrees: {o.label}, {1 - o.tokens_per_s / b.tokens_per_s:.1%} "
                     f"slower, mostly from {names[why]} (+{diff[why]:.2f} s per step).")
    return lines

