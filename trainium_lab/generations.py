"""Comparing chips: the Trainium generations and the comparison accelerators side by side.

Each row carries its source tier, and the values on which AWS's own pages disagree stay
visible (:func:`disagreements`). Every figure comes from ``data/`` through
:mod:`trainium_lab.specs`. Re-exported by :mod:`trainium_lab.cores`, where chapter 01 met it.

References
----------
AWS Neuron docs, "Trainium Architecture", "Trainium2 Architecture", "Trainium3 Architecture",
the NeuronCore-v2/v3/v4 architecture pages; vendor pages for the accelerators
(``data/sources.csv``).
"""

from __future__ import annotations

import pandas as pd

from trainium_lab import specs
from trainium_lab import units as u
from trainium_lab._validate import UnknownNameError, sequence

__all__ = ["generations_table", "disagreements", "neuroncore_table"]


def _low_precision(table: specs.DtypeTable) -> tuple[str, float]:
    """The fastest 8-bit format the chip has a dense rate for (plain FP8 on a tie)."""
    rates = [(table[key], -i, key) for i, key in enumerate(("fp8", "mxfp8")) if key in table]
    if not rates:
        return "", float("nan")
    rate, _, key = max(rates)
    return key, rate


def _differs(used: specs.Fact, alt: specs.Fact) -> bool:
    """True when an ``alternative`` row gives another value; one that repeats the used value
    (same number in the same unit) is a second source, not a disagreement."""
    return (str(alt.value), alt.unit) != (str(used.value), used.unit)


def _contested(entity: str) -> list[tuple[specs.Fact, specs.Fact]]:
    """(used, alternative) pairs of ``entity`` whose values differ."""
    pairs = [(specs.fact(entity, f.field), f) for f in specs.all_facts()
             if f.entity == entity and f.status == "alternative"]
    return [(used, alt) for used, alt in pairs if _differs(used, alt)]


def _disputed(entity: str) -> str:
    return ", ".join(sorted({alt.field for _used, alt in _contested(entity)}))


def _generation_row(key: str, name: str, short_name: str, vendor: str, kind: str,
                    rates: specs.DtypeTable, hbm_bytes: float, hbm_bytes_per_s: float,
                    scale_up_bytes_per_s: float, scale_up_direction: str, neuron_cores,
                    sbuf_bytes_per_core: float) -> dict:
    lp, lp_rate = _low_precision(rates)
    f = specs.fact(key, "dense_flops_per_s.bf16")
    return {
        "key": key, "name": name, "short_name": short_name, "vendor": vendor, "kind": kind,
        "bf16_tflop_per_s": rates["bf16"] / u.TFLOPS, "low_precision": lp,
        "low_precision_tflop_per_s": lp_rate / u.TFLOPS, "hbm_gib": hbm_bytes / u.GiB,
        "hbm_tb_per_s": hbm_bytes_per_s / u.TB, "ridge_bf16": rates["bf16"] / hbm_bytes_per_s,
        "scale_up_gb_per_s": scale_up_bytes_per_s / u.GB, "scale_up_direction": scale_up_direction,
        "neuron_cores": neuron_cores, "sbuf_mib_per_core": sbuf_bytes_per_core / u.MiB,
        "tier": f.source_tier, "disputed": _disputed(key), "source": f.source_title,
    }


def generations_table() -> pd.DataFrame:
    """The three Trainium generations and the comparison accelerators, one row each.

    Returns
    -------
    pandas.DataFrame
        Columns ``key``, ``name``, ``short_name`` (without the vendor), ``vendor``, ``kind``
        ("trainium"/"comparison"), ``bf16_tflop_per_s``, ``low_precision`` (which dtype the
        next column is: fp8, or mxfp8 on Trainium3), ``low_precision_tflop_per_s``,
        ``hbm_gib``, ``hbm_tb_per_s``, ``ridge_bf16`` (FLOP/byte), ``scale_up_gb_per_s`` and
        ``scale_up_direction`` (per chip), ``neuron_cores``, ``sbuf_mib_per_core``, ``tier``
        (source tier of the compute figure: A = vendor-authored, B = secondary),
        ``disputed`` (fields with an ``alternative`` row giving another value) and ``source``.

    Examples
    --------
    >>> t = generations_table().set_index("key")
    >>> float(t.loc["trn2", "bf16_tflop_per_s"]), t.loc["trn2", "low_precision"]
    (667.0, 'fp8')
    >>> t.loc["trn3", "low_precision"], t.loc["h100", "tier"]
    ('mxfp8', 'B')
    """
    rows = []
    for c in specs.chips():
        nl = specs.fact(c.key, "neuronlink_bytes_per_s")
        direction = "not stated" if "direction not stated" in nl.note else "see source"
        rows.append(_generation_row(c.key, c.name, c.name, "AWS", "trainium", c.dense_flops_per_s,
                                    c.hbm_bytes, c.hbm_bytes_per_s, c.neuronlink_bytes_per_s,
                                    direction, c.neuron_cores, c.core.sbuf_bytes))
    for a in specs.accelerators():
        rows.append(_generation_row(a.key, a.name, a.name.removeprefix(a.vendor).strip(), a.vendor,
                                    "comparison", a.dense_flops_per_s, a.hbm_bytes,
                                    a.hbm_bytes_per_s, a.scale_up_bytes_per_s,
                                    a.scale_up_direction, pd.NA, float("nan")))
    return pd.DataFrame(rows)


def disagreements(entities: list[str] | None = None) -> pd.DataFrame:
    """Facts on which two pages disagree: the value used beside each alternative.

    An ``alternative`` row that repeats the used value (a second source for the same figure,
    such as Trainium3's default LNC) is not a disagreement and is left out.

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
    >>> "lnc_default" in set(disagreements(["trn3"]).field)
    False
    """
    if entities is None:
        entities = [c.key for c in specs.chips()] + [a.key for a in specs.accelerators()]
    entities = sequence("entities", entities, lambda _name, e: e)
    facts = specs.all_facts()
    known = {f.entity for f in facts}
    for e in entities:
        if e not in known:
            raise UnknownNameError(f"entities must name entities in data/; got {e!r}")
    rows = []
    for e in entities:
        for used, alt in _contested(e):
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
            "tensor clock (GHz)": core.clocks_hz["tensor"] / u.GHz,
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
