"""specs: the acceptance figures of the foundation issue, lookups, and bad names.

Expected values are the AWS Neuron documentation's published figures (pages named in
data/sources.csv); the test pins them so a wrong edit of data/ fails here.
"""

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from trainium_lab import specs
from trainium_lab.units import GB, GiB, TB


def test_foundation_acceptance_figures():
    # Trainium2 Architecture page (AWS Neuron docs): 96 GiB HBM, 667 dense BF16, 1,299 dense FP8
    # TFLOPS, 8 NeuronCore-v3; Trn2 Architecture page: 16 chips per trn2.48xlarge.
    assert specs.chip("trn2").hbm_bytes == 96 * GiB
    assert specs.chip("trn2").dense_flops_per_s["bf16"] == 667e12
    assert specs.chip("trn2").dense_flops_per_s["fp8"] == 1299e12
    assert specs.chip("trn2").neuron_cores == 8
    assert specs.system("trn2.48xlarge").n_chips == 16


def test_dtype_aliases():
    table = specs.chip("trn2").dense_flops_per_s
    assert table["bfloat16"] == table["bf16"] == table["BF16"]
    assert table["float8_e4m3fn"] == table["fp8"]
    assert "fp8" in table and "mxfp8" not in table


def test_trn3_plain_fp8_runs_at_the_bf16_rate():
    """Trainium3 page: 2,517 is the MXFP8/MXFP4 rate. NKI Trainium3 guide, compute engine table:
    the tensor engine takes 8x128 elements per cycle for MXFP8 input and 2x128 for non-MXFP8 input,
    the BF16 data path; so plain FP8 is represented at the BF16 rate, labelled derived."""
    t3 = specs.chip("trn3")
    assert t3.dense_flops_per_s["mxfp8"] == 2517e12
    assert t3.dense_flops_per_s["fp8"] == t3.dense_flops_per_s["bf16"] == 671e12
    f = specs.fact("trn3", "dense_flops_per_s.fp8")
    assert f.source_id == "aws-nki-trn3" and "derived" in f.note
    from trainium_lab import cores
    g = cores.generations_table().set_index("key")
    assert (g.low_precision["trn3"], g.low_precision_tflop_per_s["trn3"]) == ("mxfp8", 2517.0)


def test_system_totals_agree_with_chips():
    # The Trn2 page's instance totals are the chip figures times 16 (AWS rounds to 3 digits).
    for name in ["trn2.48xlarge", "trn2-ultraserver"]:
        s = specs.system(name)
        assert s.hbm_bytes_total == s.n_chips * s.chip.hbm_bytes
        assert s.dense_flops_per_s_total["bf16"] == pytest.approx(
            s.n_chips * s.chip.dense_flops_per_s["bf16"], rel=0.005)
        assert s.hbm_bytes_per_s_total == pytest.approx(s.n_chips * s.chip.hbm_bytes_per_s, rel=0.005)
    assert specs.system("trn2-ultraserver").chips_per_instance == 16


def test_trn3_totals_agree_with_chips():
    for name in ["trn3-gen1-ultraserver", "trn3-gen2-ultraserver"]:
        s = specs.system(name)
        assert s.hbm_bytes_total == s.n_chips * s.chip.hbm_bytes
        assert s.dense_flops_per_s_total["mxfp8"] == pytest.approx(
            s.n_chips * s.chip.dense_flops_per_s["mxfp8"], rel=0.001)


def test_efa_per_chip_matches_instance_total():
    s = specs.system("trn2.48xlarge")
    assert s.efa_bytes_per_s_total == pytest.approx(s.n_chips * s.chip.efa_bytes_per_s)
    assert specs.link("trn2-efa").bytes_per_s == 25 * GB


def test_trn3_efa_per_chip_is_a_labelled_derivation():
    # trn3-arch gives EFA only per UltraServer (12,800 / 28,800 Gbps); the per-chip 200 Gbps is
    # total / chips for both generations, and the data says it is derived
    for name in ("trn3-gen1-ultraserver", "trn3-gen2-ultraserver"):
        s = specs.system(name)
        assert s.efa_bytes_per_s_total / s.n_chips == specs.link("trn3-efa").bytes_per_s
    assert "derived" in specs.link("trn3-efa").scope
    assert "derived" in specs.fact("trn3-efa", "bytes_per_s").note
    assert "derived" in specs.fact("trn3", "efa_bytes_per_s").note


def test_neuronlink_levels_add_up():
    # trn2-arch: 1.28 TB/s per chip = 1,024 GB/s intra-instance + 256 GB/s inter-instance
    intra = specs.link("trn2-neuronlink-intra").bytes_per_s
    inter = specs.link("trn2-neuronlink-inter").bytes_per_s
    assert intra + inter == specs.chip("trn2").neuronlink_bytes_per_s == 1.28 * TB
    assert specs.link("trn2-neuronlink-intra").direction == "not stated"


def test_lnc():
    assert specs.chip("trn2").lnc_options == (1, 2) and specs.chip("trn2").lnc_default == 2
    assert specs.chip("trn1").lnc_options == () and specs.chip("trn1").lnc_default is None
    assert specs.chip("trn3").lnc_default == 2  # inferred (issue 26): "TRN2 and TRN3 provide two physical cores per logical NeuronCore"


def test_cores():
    v3 = specs.chip("trn2").core
    assert v3.name == "NeuronCore-v3" and v3.sbuf_partitions == 128
    assert v3.sbuf_bytes == 28 * 2**20 and v3.sbuf_bytes_per_partition == 224 * 2**10
    assert (v3.tensor_rows, v3.tensor_cols) == (128, 128)
    assert specs.core("v2").sbuf_bytes == 24 * 2**20


def test_aliases_and_case():
    assert specs.chip("Trainium2") is specs.chip("trn2")
    assert specs.system("trn2u.48xlarge") is specs.system("trn2.48xlarge")
    assert specs.system("Trn2 UltraServer").key == "trn2-ultraserver"


@pytest.mark.parametrize("lookup", [specs.chip, specs.system, specs.core, specs.link,
                                    specs.accelerator])
@pytest.mark.parametrize("bad", ["trn9", "", None, 3, "h100x"])
def test_unknown_names_list_the_known_ones(lookup, bad):
    with pytest.raises(ValueError, match="must be one of"):
        lookup(bad)


@given(st.text(max_size=12).filter(lambda s: s.strip().lower() not in
                                   {"trn1", "trn2", "trn3", "trainium", "trainium1", "trainium2",
                                    "trainium3"}))
def test_random_chip_names_rejected(name):
    with pytest.raises(ValueError, match="chip must be one of 'trn1', 'trn2', 'trn3'"):
        specs.chip(name)


def test_unknown_is_also_keyerror():
    with pytest.raises(KeyError):
        specs.chip("trn9")


def test_facts_table_has_sources():
    df = specs.facts()
    assert isinstance(df, pd.DataFrame) and len(df) > 150
    assert set(df["kind"]) == {"chip", "core", "system", "link", "accelerator"}
    assert (df["source"].str.len() > 0).all() and (df["reference"].str.len() > 0).all()
    assert (df["unit"].str.len() > 0).all()
    trn2 = specs.facts(entity="trn2")
    assert set(trn2["entity"]) == {"trn2"}
    with pytest.raises(ValueError, match="entity"):
        specs.facts(entity="nope")
    with pytest.raises(ValueError, match="kind"):
        specs.facts(kind="nope")


def test_alternatives_kept():
    alts = specs.alternatives("trn2", "hbm_bytes_per_s")
    assert [a.value for a in alts] == ["3"]
    assert specs.fact("trn2", "hbm_bytes_per_s").value == "2.9"
    assert "Trainium2 Architecture" in specs.source("trn2", "hbm_bytes_per_s")
    with pytest.raises(ValueError, match="field_name"):
        specs.fact("trn2", "no_such_field")


def test_dataclasses_are_frozen():
    with pytest.raises(AttributeError):
        specs.chip("trn2").hbm_bytes = 0


def test_read_data_csv_rejects_unknown_file():
    with pytest.raises(ValueError, match="filename"):
        specs.read_data_csv("nope.csv")


# ---------------------------------------------------------------- issue 26, item 6 (audit 2026-12, minor findings)


def test_e3m4_runs_at_the_bf16_rate_on_trainium2():
    # NKI Trainium2 guide, footnote 1: "FP8_E3 format is still supported ... but its matmul performance is
    # the same as BF16/FP16"; E4M3/E5M2 get the doubled FP8 rate
    t = specs.chip("trn2").dense_flops_per_s
    assert t["float8_e3m4"] == t["bf16"] and t["float8_e4m3fn"] == t["fp8"] > t["bf16"]


def test_trainium3_plain_fp8_is_labelled_inferred_and_aws_fp8_row_kept():
    from trainium_lab import cores

    assert "inferred" in specs.fact("trn3", "dense_flops_per_s.fp8").note
    d = cores.disagreements()
    row = d[(d.entity == "trn3") & (d.field == "dense_flops_per_s.fp8")]
    assert len(row) == 1 and "2517" in row.alternative.iloc[0]


def test_partial_ultraserver_is_a_supported_mode_and_chapter_00_calls_fewest_chips_a_bound():
    import json

    from trainium_lab import reliability

    fm = reliability.failure_modes().set_index("failure_mode").loc["Partial UltraServer"]
    assert "supported" in fm.cause and "4, 2 or 1" in fm.cause
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "00_start_here.ipynb").read_text(
        encoding="utf-8"))
    text = " ".join(" ".join("".join(c["source"]) for c in nb["cells"]).split())
    assert "lower bound, not a plan" in text
