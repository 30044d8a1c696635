"""Chips, NeuronCores and claims: counting cores, comparing generations, checking figures.

- Counting: a Trainium2 or Trainium3 chip's physical NeuronCores can be grouped into
  logical NeuronCores (LNC = physical cores per logical core); the runtime then starts one
  rank per logical core. Trainium1 has no LNC setting, so its logical cores are its
  physical ones. No AWS page states Trainium3's default, so a Trainium3 count needs an
  explicit ``lnc``.
- Comparing: the three generations and the comparison accelerators side by side, with
  each row's source tier, and the values on which AWS's own pages disagree.
- Checking: a published figure or phrase tested against ``data/``, returning a verdict
  with the evidence, computed from the data rather than typed.

References
----------
AWS Neuron docs, "Logical NeuronCore configuration" (LNC 1 or 2 on Trn2, default 2;
applies only to Trn2 and Trn3); "Trainium2 Architecture", "Trainium3 Architecture",
"Amazon EC2 Trn2 Architecture", "Collective communication: System Connectivity".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab import units as u
from trainium_lab._validate import UnknownNameError, choice, in_range, integer, sequence

__all__ = [
    "lnc_options", "resolve_lnc", "logical_cores_per_chip", "CoreCounts", "core_counts",
    "core_count_table", "generations_table", "disagreements", "neuroncore_table",
    "neuroncore_blocks", "ClaimCheck", "Claim", "check_figure", "check_text", "claims", "claim",
    "check_claim", "claims_table", "VERDICTS",
]


# --------------------------------------------------------------------------- counting

def lnc_options(chip: str) -> tuple[int, ...]:
    """The LNC settings a chip accepts, from ``data/chips.csv``.

    An empty tuple means the chip has no LNC setting (Trainium1): one logical core per
    physical core.

    >>> lnc_options("trn2"), lnc_options("trn1")
    ((1, 2), ())
    """
    return specs.chip(chip).lnc_options


def resolve_lnc(chip: str, lnc: int | None = None) -> int:
    """The LNC setting that applies: ``lnc`` if valid for the chip, else its default.

    Parameters
    ----------
    chip : str
        ``"trn1"``, ``"trn2"`` or ``"trn3"``.
    lnc : int or None
        Physical NeuronCores per logical core. ``None`` means the chip's default.

    Raises
    ------
    ValueError
        Naming ``lnc``: a value the chip does not accept (any value but 1 on Trainium1,
        which has no setting), or ``None`` on a chip whose default no source states
        (Trainium3).

    Examples
    --------
    >>> resolve_lnc("trn2"), resolve_lnc("trn2", 1), resolve_lnc("trn1")
    (2, 1, 1)
    >>> resolve_lnc("trn3")
    Traceback (most recent call last):
    ...
    ValueError: lnc must be given for Trainium3 (one of 1, 2): no AWS page states its default
    """
    c = specs.chip(chip)
    if not c.lnc_options:
        if lnc is None or (not isinstance(lnc, bool) and lnc == 1):
            return 1
        raise ValueError(f"lnc must be None or 1 for {c.name}: it has no logical-NeuronCore "
                         f"setting (LNC applies only to Trn2 and Trn3); got {lnc!r}")
    listed = ", ".join(str(o) for o in c.lnc_options)
    if lnc is None:
        if c.lnc_default is None:
            raise ValueError(f"lnc must be given for {c.name} (one of {listed}): "
                             "no AWS page states its default")
        return c.lnc_default
    if isinstance(lnc, bool) or not isinstance(lnc, (int, float)) or lnc not in c.lnc_options:
        raise ValueError(f"lnc must be one of {listed} for {c.name} (or None for its default); "
                         f"got {lnc!r}")
    return int(lnc)


def logical_cores_per_chip(chip: str, lnc: int | None = None) -> int:
    """Logical NeuronCores per chip: physical cores divided by LNC.

    >>> logical_cores_per_chip("trn2"), logical_cores_per_chip("trn2", 1)
    (4, 8)
    >>> logical_cores_per_chip("trn1")
    2
    """
    c = specs.chip(chip)
    return c.neuron_cores // resolve_lnc(chip, lnc)


@dataclass(frozen=True)
class CoreCounts:
    """Chips, physical and logical NeuronCores in ``n_systems`` copies of one system.

    ``ranks`` is the number of worker processes the Neuron runtime starts: one per
    logical core.
    """

    system: str
    name: str
    chip: str
    lnc: int
    n_systems: int
    n_instances: int
    n_chips: int
    physical_cores: int
    logical_cores: int
    hbm_bytes_per_logical_core: float
    efa_bytes_per_s_per_logical_core: float | None

    @property
    def ranks(self) -> int:
        """Runtime ranks (one per logical NeuronCore)."""
        return self.logical_cores

    @property
    def logical_cores_per_chip(self) -> int:
        """Logical NeuronCores on each chip."""
        return self.logical_cores // self.n_chips

    @property
    def logical_cores_per_instance(self) -> int:
        """Logical NeuronCores in each instance (or server)."""
        return self.logical_cores // self.n_instances


def core_counts(system: str, lnc: int | None = None, n_systems: int = 1) -> CoreCounts:
    """Count chips, physical and logical NeuronCores in one or more systems.

    Parameters
    ----------
    system : str
        ``"trn1.32xlarge"``, ``"trn2.48xlarge"``, ``"trn2-ultraserver"``,
        ``"trn3-gen1-ultraserver"`` or ``"trn3-gen2-ultraserver"``.
    lnc : int or None
        Physical cores per logical core; ``None`` for the chip's default (required on
        Trainium3, see :func:`resolve_lnc`).
    n_systems : int
        How many such systems (1 to 100,000).

    Returns
    -------
    CoreCounts
        Also HBM per logical core (the chip's HBM shared equally) and, where recorded,
        EFA bandwidth per logical core.

    References
    ----------
    AWS Neuron docs, "Logical NeuronCore configuration": 64 logical cores per
    trn2.48xlarge at LNC=2, 128 at LNC=1.

    Examples
    --------
    >>> c = core_counts("trn2.48xlarge")
    >>> c.lnc, c.physical_cores, c.logical_cores
    (2, 128, 64)
    >>> core_counts("trn2-ultraserver").ranks
    256
    >>> core_counts("trn3-gen2-ultraserver", lnc=1).logical_cores
    1152
    """
    s = specs.system(system)
    n_systems = integer("n_systems", n_systems, minimum=1, maximum=100_000)
    c = s.chip
    lnc = resolve_lnc(c.key, lnc)
    per_chip = c.neuron_cores // lnc
    n_chips = s.n_chips * n_systems
    efa = None if c.efa_bytes_per_s is None else c.efa_bytes_per_s / per_chip
    return CoreCounts(s.key, s.name, c.key, lnc, n_systems, s.n_instances * n_systems, n_chips,
                      n_chips * c.neuron_cores, n_chips * per_chip, c.hbm_bytes / per_chip, efa)


def core_count_table(system: str, lnc: int | None = None, n_systems: int = 1) -> pd.DataFrame:
    """Chips, physical and logical cores at each level: chip, instance, system, all systems.

    Returns
    -------
    pandas.DataFrame
        One row per level, columns ``level``, ``chips``, ``physical_cores``,
        ``logical_cores``; long-format copy in ``df.attrs["long"]`` for charts.

    Examples
    --------
    >>> core_count_table("trn2-ultraserver")[["level", "logical_cores"]].values.tolist()
    [['one chip', 4], ['one instance', 64], ['one Trn2 UltraServer', 256]]
    """
    cc = core_counts(system, lnc, n_systems)
    s = specs.system(system)
    per_chip_phys = cc.physical_cores // cc.n_chips
    per_chip_log = cc.logical_cores_per_chip
    levels = [("one chip", 1)]
    if s.n_instances > 1 or s.kind == "instance":
        word = "instance" if s.kind == "instance" or s.key.startswith("trn2") else "server"
        levels.append((f"one {word}", s.chips_per_instance))
    if s.kind != "instance":
        levels.append((f"one {s.name}", s.n_chips))
    if n_systems > 1:
        levels.append((f"{n_systems} × {s.name}", cc.n_chips))
    df = pd.DataFrame([{"level": name, "chips": chips, "physical_cores": chips * per_chip_phys,
                        "logical_cores": chips * per_chip_log} for name, chips in levels])
    long = df.melt(id_vars="level", var_name="what", value_name="count")
    long["what"] = long["what"].map({"chips": "chips", "physical_cores": "physical cores",
                                     "logical_cores": f"logical cores (LNC={cc.lnc})"})
    df.attrs["long"] = long
    df.attrs["lnc"] = cc.lnc
    return df


# --------------------------------------------------------------------------- comparing

def _low_precision(table: specs.DtypeTable) -> tuple[str, float]:
    """The fastest 8-bit format the chip has a dense rate for (plain FP8 on a tie)."""
    rates = [(table[key], -i, key) for i, key in enumerate(("fp8", "mxfp8")) if key in table]
    if not rates:
        return "", float("nan")
    rate, _, key = max(rates)
    return key, rate


def _disputed(entity: str) -> str:
    fields = sorted({f.field for f in _all_facts() if f.entity == entity and f.status == "alternative"})
    return ", ".join(fields)


def _all_facts() -> list[specs.Fact]:
    return [f for kind in ("chip", "core", "system", "link", "accelerator")
            for f in specs._facts(kind)]


def generations_table() -> pd.DataFrame:
    """The three Trainium generations and the comparison accelerators, one row each.

    Returns
    -------
    pandas.DataFrame
        Columns ``key``, ``name``, ``short_name`` (without the vendor), ``vendor``, ``kind`` ("trainium"/"comparison"),
        ``bf16_tflops``, ``low_precision`` (which dtype the next column is: fp8, or mxfp8
        on Trainium3), ``low_precision_tflops``, ``hbm_gib``, ``hbm_tb_per_s``,
        ``ridge_bf16`` (FLOP/byte), ``scale_up_gb_per_s`` and ``scale_up_direction``
        (per chip), ``neuron_cores``, ``sbuf_mib_per_core``, ``tier`` (source tier of the
        compute figure: A = vendor-authored, B = secondary), ``disputed`` (fields with an
        ``alternative`` row) and ``source``.

    Examples
    --------
    >>> t = generations_table().set_index("key")
    >>> float(t.loc["trn2", "bf16_tflops"]), t.loc["trn2", "low_precision"]
    (667.0, 'fp8')
    >>> t.loc["trn3", "low_precision"], t.loc["h100", "tier"]
    ('mxfp8', 'B')
    """
    rows = []
    for c in specs.chips():
        lp, lp_rate = _low_precision(c.dense_flops_per_s)
        f = specs.fact(c.key, "dense_flops_per_s.bf16")
        nl = specs.fact(c.key, "neuronlink_bytes_per_s")
        rows.append({
            "key": c.key, "name": c.name, "short_name": c.name, "vendor": "AWS", "kind": "trainium",
            "bf16_tflops": c.dense_flops_per_s["bf16"] / u.TFLOPS, "low_precision": lp,
            "low_precision_tflops": lp_rate / u.TFLOPS, "hbm_gib": c.hbm_bytes / u.GiB,
            "hbm_tb_per_s": c.hbm_bytes_per_s / u.TB,
            "ridge_bf16": c.dense_flops_per_s["bf16"] / c.hbm_bytes_per_s,
            "scale_up_gb_per_s": c.neuronlink_bytes_per_s / u.GB,
            "scale_up_direction": "not stated" if "direction not stated" in nl.note else "see source",
            "neuron_cores": c.neuron_cores, "sbuf_mib_per_core": c.core.sbuf_bytes / u.MiB,
            "tier": f.source_tier, "disputed": _disputed(c.key), "source": f.source_title,
        })
    for a in specs.accelerators():
        lp, lp_rate = _low_precision(a.dense_flops_per_s)
        f = specs.fact(a.key, "dense_flops_per_s.bf16")
        rows.append({
            "key": a.key, "name": a.name, "short_name": a.name.removeprefix(a.vendor).strip(),
            "vendor": a.vendor, "kind": "comparison",
            "bf16_tflops": a.dense_flops_per_s["bf16"] / u.TFLOPS, "low_precision": lp,
            "low_precision_tflops": lp_rate / u.TFLOPS, "hbm_gib": a.hbm_bytes / u.GiB,
            "hbm_tb_per_s": a.hbm_bytes_per_s / u.TB,
            "ridge_bf16": a.dense_flops_per_s["bf16"] / a.hbm_bytes_per_s,
            "scale_up_gb_per_s": a.scale_up_bytes_per_s / u.GB,
            "scale_up_direction": a.scale_up_direction, "neuron_cores": pd.NA,
            "sbuf_mib_per_core": float("nan"), "tier": f.source_tier,
            "disputed": _disputed(a.key), "source": f.source_title,
        })
    return pd.DataFrame(rows)


def disagreements(entities: list[str] | None = None) -> pd.DataFrame:
    """Facts on which two pages disagree: the value used beside each alternative.

    Parameters
    ----------
    entities : list of str, optional
        Restrict to these entities (``"trn2"``, ``"NeuronCore-v3"``...); by default the
        chips and the comparison accelerators.

    Returns
    -------
    pandas.DataFrame
        Columns ``entity``, ``field``, ``used``, ``used_source``, ``alternative``,
        ``alternative_source``, ``note``.

    Examples
    --------
    >>> d = disagreements(["trn2"])
    >>> d.loc[d.field == "hbm_bytes_per_s", ["used", "alternative"]].values.tolist()
    [['2.9 TB/s', '3 TB/s']]
    """
    if entities is None:
        entities = [c.key for c in specs.chips()] + [a.key for a in specs.accelerators()]
    entities = sequence("entities", entities, lambda _name, e: e)
    facts = _all_facts()
    known = {f.entity for f in facts}
    for e in entities:
        if e not in known:
            raise UnknownNameError(f"entities must name entities in data/; got {e!r}")
    rows = []
    for e in entities:
        for alt in (f for f in facts if f.entity == e and f.status == "alternative"):
            used = specs.fact(e, alt.field)
            rows.append({"entity": e, "field": alt.field, "used": f"{used.value} {used.unit}",
                         "used_source": used.source_title,
                         "alternative": f"{alt.value} {alt.unit}",
                         "alternative_source": alt.source_title, "note": alt.note})
    return pd.DataFrame(rows, columns=["entity", "field", "used", "used_source", "alternative",
                                       "alternative_source", "note"])


def neuroncore_table() -> pd.DataFrame:
    """Per-core facts of the three NeuronCore generations, one column per generation.

    Examples
    --------
    >>> t = neuroncore_table()
    >>> t.loc["SBUF (MiB)"].tolist()
    [24.0, 28.0, 32.0]
    """
    cols = {}
    for c in specs.chips():
        core = c.core
        cols[f"{core.name} ({c.name})"] = {
            "tensor array (rows × cols)": f"{core.tensor_rows} × {core.tensor_cols}",
            "dense BF16 (TFLOP/s)": core.dense_flops_per_s["bf16"] / u.TFLOPS,
            "tensor clock (GHz)": core.clocks_hz["tensor"] / 1e9,
            "vector FP32 (TFLOP/s)": core.vector_fp32_flops_per_s / u.TFLOPS,
            "scalar FP32 (TFLOP/s)": core.scalar_fp32_flops_per_s / u.TFLOPS,
            "GpSimd": core.gpsimd,
            "SBUF (MiB)": core.sbuf_bytes / u.MiB,
            "SBUF partitions": core.sbuf_partitions,
            "SBUF per partition (KiB)": core.sbuf_bytes_per_partition / u.KiB,
            "PSUM (MiB)": core.psum_bytes / u.MiB,
            "PSUM per partition (KiB)": core.psum_bytes_per_partition / u.KiB,
            "cores per chip": c.neuron_cores,
        }
    return pd.DataFrame(cols)


def neuroncore_blocks(chip: str = "trn2") -> pd.DataFrame:
    """A block diagram of one NeuronCore and what feeds it, labelled from ``data/``.

    Positions are layout only (arbitrary units); every figure in a label comes from
    ``specs``.

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
    import textwrap

    return "\n".join(part for line in text.split("\n")
                     for part in (textwrap.wrap(line, max(width, 8)) or [""]))


# --------------------------------------------------------------------------- checking claims

#: units a claimed figure may be written in, to base units
_CLAIM_UNITS: dict[str, float] = {
    **{k: v for k, v in specs.UNIT_FACTORS.items() if k not in ("count", "USD/hour")},
    "count": 1.0, "KB": u.KB, "MB": u.MB, "TB": u.TB, "PB": u.PB, "TiB": u.TiB,
    "EFLOPS": 1e18, "MB/s": u.MB,
}
_FAMILY = {**{k: "bytes" for k in ("KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "PB")},
           **{k: "flop rate" for k in ("TFLOPS", "PFLOPS", "EFLOPS")},
           **{k: "bandwidth" for k in ("TB/s", "GB/s", "GiB/s", "Gbps", "MB/s")},
           "count": "count", "GHz": "frequency", "us": "time"}
#: the same prefix read the other way (decimal <-> binary)
#: a decimal label on a binary figure written in thousands ("6.1 TB" for 6,144 GiB)
_THOUSAND_READING = {"TB": "GiB", "GB": "MiB", "PB": "TiB"}
_OTHER_READING = {"KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB",
                  "KiB": "KB", "MiB": "MB", "GiB": "GB", "TiB": "TB", "GB/s": "GiB/s",
                  "GiB/s": "GB/s"}


@dataclass(frozen=True)
class ClaimCheck:
    """The outcome of testing one claim against ``data/``.

    ``verdict`` is ``"supported"``, ``"contradicted"``, ``"unit mix-up"`` (right only if
    a decimal prefix is read as binary or the reverse, or a binary figure is written in
    thousands under a decimal label), ``"disputed"`` (matches a value that another AWS or
    vendor page gives, not the one the course uses) or, for claims settled by a cited
    source rather than ``data/``, ``"unverified"`` (no source read supports or refutes it).
    """

    claim: str
    verdict: str
    data_value: str
    evidence: str
    source: str


def _fmt(value: str, unit: str) -> str:
    return f"{value} {unit}" if unit not in ("text", "list") else value


def _close(a: float, b: float, rel_tol: float) -> bool:
    return math.isclose(a, b, rel_tol=rel_tol)


def check_figure(entity: str, field: str, claimed: float, unit: str, *,
                 claim: str | None = None, rel_tol: float = 0.02) -> ClaimCheck:
    """Test a claimed number against the ``used`` fact for ``entity``/``field``.

    The claim is *supported* if it is within ``rel_tol`` of the used value; *disputed*
    if it matches an ``alternative`` row instead; a *unit mix-up* if it matches only
    when its decimal prefix is read as binary (MB as MiB) or the reverse; otherwise
    *contradicted*, and the evidence names any other fact in ``data/`` with the claimed
    value (the same chip's FP8 rate, the previous generation's SRAM...).

    Parameters
    ----------
    entity, field : str
        As in ``data/*.csv`` (``"trn2"``, ``"dense_flops_per_s.bf16"``).
    claimed : float
        The number as the claim writes it (> 0).
    unit : str
        Its unit: ``"TFLOPS"``, ``"PFLOPS"``, ``"MB"``, ``"MiB"``, ``"GiB"``, ``"TB"``,
        ``"TB/s"``, ``"GB/s"``, ``"Gbps"``, ``"count"``...
    claim : str, optional
        The claim's wording, kept in the result.
    rel_tol : float
        Relative tolerance, in (0, 0.5]; the default 2 % allows for rounding.

    Returns
    -------
    ClaimCheck

    Examples
    --------
    >>> r = check_figure("trn2", "dense_flops_per_s.bf16", 1300, "TFLOPS")
    >>> r.verdict
    'contradicted'
    >>> "trn2 dense_flops_per_s.fp8" in r.evidence
    True
    >>> check_figure("trn2", "hbm_bytes", 96, "GiB").verdict
    'supported'
    """
    used = specs.fact(entity, field)
    if used.unit in ("text", "list"):
        raise ValueError(f"field {field!r} of {entity!r} is text; use check_text")
    unit = choice("unit", unit, tuple(_CLAIM_UNITS))
    rel_tol = in_range("rel_tol", rel_tol, 0.0, 0.5, low_open=True)
    claimed_value = in_range("claimed", claimed, 0.0, math.inf, low_open=True, high_open=True)
    family = _FAMILY.get(unit)
    if family != _FAMILY.get(used.unit):
        raise ValueError(f"unit {unit!r} does not measure the same thing as {used.unit!r} "
                         f"({entity} {field})")
    claim = claim or f"{claimed:,g} {unit} for {entity} {field}"
    base = claimed_value * _CLAIM_UNITS[unit]
    target = float(used.base_value)  # type: ignore[arg-type]
    shown = _fmt(used.value, used.unit)
    src = used.source_title
    if _close(base, target, rel_tol):
        return ClaimCheck(claim, "supported", shown, f"data/ has {shown} ({src}).", src)
    for alt in specs.alternatives(entity, field):
        if _close(base, float(alt.base_value), rel_tol):  # type: ignore[arg-type]
            return ClaimCheck(claim, "disputed", shown,
                              f"data/ uses {shown} ({src}); {_fmt(alt.value, alt.unit)} is what "
                              f"{alt.source_title} gives ({alt.note}).", src)
    other = _OTHER_READING.get(unit)
    # Readings that make a mislabelled figure match: the prefix read the other way (TB as TiB),
    # or a binary figure written in thousands under a decimal label (6,144 GiB as "6.1 TB").
    readings_mixup = []
    if other is not None:
        readings_mixup.append((abs(claimed_value * _CLAIM_UNITS[other] / target - 1),
                               f"{unit} is read as {other}: the claim mixes decimal and binary prefixes"))
    thousand = _THOUSAND_READING.get(unit)
    if thousand is not None:
        value_1000 = claimed_value * 1000 * _CLAIM_UNITS[thousand]
        readings_mixup.append((abs(value_1000 / target - 1),
                               f"it is read as {claimed * 1000:,g} {thousand} ({claimed:g} thousand "
                               f"{thousand}): the claim writes a {thousand} figure in thousands and "
                               f"labels it {unit}"))
    fits = sorted(r for r in readings_mixup if r[0] <= rel_tol)
    if fits:
        def num(x: float) -> str:
            return f"{x:,.0f}" if x >= 100 else f"{x:#.3g}"

        in_unit = f" = {num(target / _CLAIM_UNITS[unit])} {unit}"
        as_other = f" = {num(target / _CLAIM_UNITS[other])} {other}" if other and other != used.unit else ""
        return ClaimCheck(claim, "unit mix-up", shown,
                          f"data/ has {shown}{in_unit}{as_other} ({src}). "
                          f"{claimed:,g} {unit} matches it only if {fits[0][1]}.", src)
    readings = [(unit, base)] + ([(other, claimed_value * _CLAIM_UNITS[other])] if other else [])
    matches = []
    for f in _all_facts():
        if f.status != "used" or _FAMILY.get(f.unit) != family or (f.entity, f.field) == (entity, field):
            continue
        value = f.base_value
        if not isinstance(value, float):
            continue
        for name, b in readings:
            if _close(b, value, rel_tol):
                reading = "" if name == unit else f" (reading {unit} as {name})"
                same = 0 if f.entity == entity else (1 if f.field == field else 2)
                matches.append((same, f"{f.entity} {f.field} = {_fmt(f.value, f.unit)}{reading}"))
                break
    evidence = f"data/ has {shown} ({src})."
    if matches:
        evidence += " The claimed figure matches " + "; ".join(m for _, m in sorted(matches)[:3]) + "."
    return ClaimCheck(claim, "contradicted", shown, evidence, src)


def check_text(entity: str, field: str, phrase: str, *, claim: str | None = None) -> ClaimCheck:
    """Test whether a text fact (topology, core version...) says ``phrase``.

    Supported if the used value or its note contains ``phrase`` (case-insensitive) and
    does not negate it ("not all-to-all"); the evidence lists the entities whose value
    does say it.

    Examples
    --------
    >>> r = check_text("trn2-ultraserver", "topology", "all-to-all")
    >>> r.verdict, "trn3-gen1-ultraserver" in r.evidence
    ('contradicted', True)
    >>> check_text("trn2", "core_version", "NeuronCore-v3").verdict
    'supported'
    """
    used = specs.fact(entity, field)
    if not isinstance(phrase, str) or not phrase.strip():
        raise ValueError(f"phrase must be non-empty text, got {phrase!r}")
    p = phrase.strip().lower()

    def says(f: specs.Fact) -> bool:
        text = f.value.lower()
        return p in text and f"not {p}" not in text and f"not {p}" not in f.note.lower()

    claim = claim or f"{entity} {field}: {phrase}"
    shown = _fmt(used.value, used.unit)
    evidence = f"data/ has “{shown}”" + (f" ({used.note})" if used.note else "") + f", from {used.source_title}."
    if says(used):
        return ClaimCheck(claim, "supported", shown, evidence, used.source_title)
    holders = sorted({f.entity for f in _all_facts()
                      if f.field == field and f.status == "used" and says(f)})
    if holders:
        evidence += f" It holds for: {', '.join(holders)}."
    return ClaimCheck(claim, "contradicted", shown, evidence, used.source_title)


def _lnc_claim(claimed: float, claim: str, system: str) -> ClaimCheck:
    cc = core_counts(system)
    verdict = "supported" if cc.logical_cores == claimed else "contradicted"
    lnc = specs.fact(specs.system(system).chip_key, "lnc_default")
    return ClaimCheck(claim, verdict, f"{cc.logical_cores} logical cores",
                      f"{cc.n_chips} chips × {cc.physical_cores // cc.n_chips} physical cores "
                      f"/ LNC {cc.lnc} = {cc.logical_cores} ({lnc.source_title}).", lnc.source_title)


@dataclass(frozen=True)
class Claim:
    """One published claim from ``data/claims.csv`` and the fact it is about.

    ``check`` says how it is tested: ``"figure"`` and ``"text"`` against ``data/``,
    ``"lnc"`` by counting logical cores, ``"source"`` by a cited source that settles it
    (``evidence``, ``evidence_source``) when no fact in ``data/`` can. ``verdict`` is the
    verdict recorded with the claim; for the computed checks a test keeps it equal to
    what :meth:`run` finds.
    """

    claim_id: str
    claim: str
    said_by: str
    entity: str
    field: str
    check: str
    claimed_value: float | None
    claimed_unit: str
    phrase: str
    said_by_id: str = ""
    verdict: str = ""
    evidence: str = ""
    evidence_source: str = ""

    def run(self) -> ClaimCheck:
        """Test the claim against ``data/`` (or report the cited source's verdict)."""
        if self.check == "figure":
            return check_figure(self.entity, self.field, self.claimed_value, self.claimed_unit,
                                claim=self.claim)
        if self.check == "text":
            return check_text(self.entity, self.field, self.phrase, claim=self.claim)
        if self.check == "source":
            return ClaimCheck(self.claim, self.verdict, "", self.evidence, self.evidence_source)
        return _lnc_claim(self.claimed_value, self.claim, self.entity)


@functools.cache
def _claims() -> dict[str, Claim]:
    df = specs.read_data_csv("claims.csv")  # adds "source": the title of source_id (= said_by)
    titles = {key: row["title"] for key, row in specs._sources().items()}
    out = {}
    for r in df.itertuples(index=False):
        evidence_source = "; ".join(titles[i] for i in r.evidence_source_id.split(";") if i)
        out[r.claim] = Claim(r.claim_id, r.claim, titles[r.said_by], r.entity, r.field, r.check,
                             float(r.claimed_value) if r.claimed_value != "" else None,
                             r.claimed_unit, r.phrase, r.said_by, r.verdict, r.evidence,
                             evidence_source)
    return out


def claims() -> tuple[Claim, ...]:
    """Every published claim in ``data/claims.csv``, in file order."""
    return tuple(_claims().values())


def claim(claim_id: str) -> Claim:
    """One claim by its ``claim_id`` (e.g. ``"trn2-sram-24mb"``).

    >>> claim("trn2-sram-24mb").claimed_unit
    'MB'
    """
    by_id = {c.claim_id: c for c in claims()}
    return by_id[choice("claim_id", claim_id, tuple(by_id))]


def check_claim(claim: str) -> ClaimCheck:
    """Check one of the claims in ``data/claims.csv`` by its wording.

    >>> check_claim("24 MB SRAM per core (Trainium2)").verdict
    'contradicted'
    """
    key = choice("claim", claim, tuple(_claims()))
    return _claims()[key].run()


#: the verdicts a claim can get (see :class:`ClaimCheck`)
VERDICTS = ("supported", "contradicted", "unit mix-up", "disputed", "unverified")


def claims_table(query: str = "", *, verdict: str | None = None,
                 said_by: str | None = None) -> pd.DataFrame:
    """Every claim in ``data/claims.csv`` with who made it, its verdict and the evidence.

    Parameters
    ----------
    query : str
        Case-insensitive words; a row is kept if every word appears in its claim,
        evidence or source.
    verdict : str, optional
        Keep one verdict (one of :data:`VERDICTS`).
    said_by : str, optional
        Keep the claims of one source: its ``source_id`` (``"seed-001"``) or title.

    Returns
    -------
    pandas.DataFrame
        ``claim_id, claim, said_by, verdict, data_value, evidence, source`` (``said_by`` is
        the title of the document that makes the claim, ``source`` the one that settles it).

    Examples
    --------
    >>> t = claims_table()
    >>> int(t.verdict.value_counts()["supported"]) >= 3, len(t) >= 40
    (True, True)
    >>> claims_table("rainier", verdict="contradicted").claim_id.tolist()
    ['rainier-100k', 'rainier-65ef']
    """
    if not isinstance(query, str):
        raise ValueError(f"query must be text, got {type(query).__name__}")
    if verdict is not None:
        verdict = choice("verdict", verdict, VERDICTS)
    every = claims()
    if said_by is not None:
        if not isinstance(said_by, str):
            raise ValueError(f"said_by must be a source id or title, got {said_by!r}")
        known = {c.said_by_id: c.said_by for c in every}
        if said_by not in known and said_by not in known.values():
            listed = ", ".join(repr(k) for k in known)
            raise ValueError(f"said_by must be one of {listed} (or their titles); got {said_by!r}")
    rows = []
    for c in every:
        result = c.run()
        rows.append({"claim_id": c.claim_id, **vars(result), "said_by": c.said_by,
                     "said_by_id": c.said_by_id})
    df = pd.DataFrame(rows, columns=["claim_id", "claim", "said_by", "verdict", "data_value", "evidence",
                                     "source", "said_by_id"])
    keep = np.ones(len(df), dtype=bool)
    if verdict is not None:
        keep &= (df.verdict == verdict).to_numpy()
    if said_by is not None:
        keep &= ((df.said_by_id == said_by) | (df.said_by == said_by)).to_numpy()
    words = query.lower().split()
    if words:
        text = (df.claim + " " + df.evidence + " " + df.source + " " + df.said_by).str.lower()
        keep &= np.array([all(w in t for w in words) for t in text], dtype=bool)
    return df[keep].drop(columns="said_by_id").reset_index(drop=True)
