"""Chapter 01: roofline bounds, array utilisation, NeuronCore counting and claim checks."""

from __future__ import annotations

import math

import altair as alt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainium_lab import claim_checks, cores, roofline, specs, views
from trainium_lab.charts import hardware as charts
from trainium_lab.exercises import ch01
from trainium_lab.units import GiB, Gbps, MiB, TB, TFLOPS
from trainium_lab.widgets import hardware as widgets
from trainium_lab.widgets.base import BENCHMARKS

dims = st.integers(min_value=1, max_value=20_000)
TRAINIUM = ["trn1", "trn2", "trn3"]


# --------------------------------------------------------------------------- published figures

def test_trainium2_figures_as_published():
    # Trainium2 Architecture page (AWS Neuron docs, trainium2.rst): 667 dense BF16 TFLOPS, 2.9 TB/s HBM
    trn2 = specs.chip("trn2")
    assert trn2.dense_flops_per_s["bf16"] == pytest.approx(667 * TFLOPS)
    assert trn2.hbm_bytes_per_s == pytest.approx(2.9 * TB)


def test_trainium2_bf16_ridge_point_is_about_230():
    # issue 3 and the chapter: 667e12 / 2.9e12 = 230 FLOP/byte (three significant figures)
    assert roofline.ridge_point("trn2", "bf16") == pytest.approx(230, rel=0.005)
    assert roofline.ridge_point("Trainium2", "bfloat16") == roofline.ridge_point("trn2", "bf16")


@pytest.mark.parametrize("name", roofline.device_names())
def test_ridge_point_is_peak_over_bandwidth_for_every_dtype(name):
    d = roofline.device(name)
    for dtype, rate in d.dense_flops_per_s.items():
        assert roofline.ridge_point(name, dtype) == pytest.approx(rate / d.hbm_bytes_per_s)


def test_ridge_table_covers_every_device_and_dtype():
    t = roofline.ridge_table()
    expected = sum(len(roofline.device(n).dense_flops_per_s) for n in roofline.device_names())
    assert len(t) == expected
    row = t[(t.chip == "trn2") & (t.dtype == "fp8")].iloc[0]
    # FP8 doubles the rate, not the bandwidth: the ridge point moves right
    assert row.ridge == pytest.approx(specs.chip("trn2").dense_flops_per_s["fp8"] / (2.9 * TB))
    assert row.ridge > roofline.ridge_point("trn2", "bf16")


def test_bytes_per_element_follows_the_formats():
    # format constants (ml_dtypes bit widths; OCP MX v1.0: 8-bit scale per 32 elements)
    assert [roofline.bytes_per_element(d) for d in ("fp32", "tf32", "bf16", "fp16", "fp8",
                                                    "float8_e5m2")] == [4, 4, 2, 2, 1, 1]
    assert roofline.bytes_per_element("mxfp8") == 1 + 1 / 32
    assert roofline.bytes_per_element("mxfp4") == 0.5 + 1 / 32


# --------------------------------------------------------------------------- the roofline

def test_matmul_counts():
    assert roofline.matmul_flops(2, 3, 4) == 2 * 2 * 3 * 4
    # A 2x4, B 4x3, C 2x3 in BF16
    assert roofline.matmul_bytes(2, 3, 4, "bf16") == (8 + 12 + 6) * 2
    assert roofline.matmul_bytes(4096, 4096, 4096, "bf16") == 96 * MiB


@given(s=dims)
def test_square_intensity_is_s_over_three_in_bf16(s):
    assert roofline.arithmetic_intensity(s, s, s, "bf16") == pytest.approx(s / 3)


@pytest.mark.parametrize("chip,dtype", [("trn1", "bf16"), ("trn2", "bf16"), ("trn2", "fp8"),
                                        ("trn3", "bf16"), ("trn3", "mxfp8"), ("h100", "bf16")])
def test_bound_switches_from_hbm_to_tensor_engine_at_the_ridge(chip, dtype):
    s_ridge = roofline.square_size_at_ridge(chip, dtype)
    below = math.floor(s_ridge * 0.95)
    above = math.ceil(s_ridge * 1.05)
    lo = roofline.matmul_bound(below, below, below, dtype, chip)
    hi = roofline.matmul_bound(above, above, above, dtype, chip)
    assert lo.intensity_flop_per_byte < lo.ridge_flop_per_byte and lo.bound == "HBM"
    assert hi.intensity_flop_per_byte > hi.ridge_flop_per_byte and hi.bound == "tensor engine"
    # below the ridge the attainable rate is intensity x bandwidth; above it, the peak
    assert lo.achieved_flops_per_s == pytest.approx(lo.intensity_flop_per_byte * lo.hbm_bytes_per_s)
    assert hi.achieved_flops_per_s == pytest.approx(hi.peak_flops_per_s)


def test_decode_like_matmul_is_hbm_bound_and_large_square_is_compute_bound():
    small = roofline.matmul_bound(8, 8192, 8192, "bf16", "trn2")
    assert small.bound == "HBM"
    assert small.time_s == pytest.approx(small.bytes / (2.9 * TB))
    big = roofline.matmul_bound(8192, 8192, 8192, "bf16", "trn2")
    assert big.bound == "tensor engine"
    assert big.time_s == pytest.approx(2 * 8192**3 / (667 * TFLOPS))


@settings(max_examples=60, deadline=None)
@given(m=dims, n=dims, k=dims, chip=st.sampled_from(TRAINIUM))
def test_bound_properties(m, n, k, chip):
    b = roofline.matmul_bound(m, n, k, "bf16", chip)
    assert b.time_s == max(b.compute_s, b.memory_s)
    assert (b.bound == "HBM") == (b.intensity_flop_per_byte < b.ridge_flop_per_byte)
    assert 0 < b.fraction_of_peak <= 1 + 1e-12
    t = roofline.matmul_bound(m, n, k, "bf16", chip, tiled=True)
    assert t.time_s >= b.time_s and t.memory_s == b.memory_s


@settings(max_examples=60, deadline=None)
@given(m=dims, n=dims, k=dims, which=st.sampled_from("mnk"))
def test_time_bound_never_falls_when_a_dimension_grows(m, n, k, which):
    before = roofline.matmul_bound(m, n, k, "bf16", "trn2").time_s
    grown = {"m": m, "n": n, "k": k}
    grown[which] += 1
    assert roofline.matmul_bound(**grown, dtype="bf16", chip="trn2").time_s >= before


def test_roofline_curve_has_the_ridge_as_its_corner():
    df = roofline.roofline_curve("trn2", "bf16")
    ridge = roofline.ridge_point("trn2", "bf16")
    corner = df[df.intensity == ridge]
    assert len(corner) == 1 and corner.tflop_per_s.iloc[0] == pytest.approx(667)
    assert (df.tflop_per_s <= 667 + 1e-9).all()
    assert df.tflop_per_s.is_monotonic_increasing


# --------------------------------------------------------------------------- array utilisation

def test_tiling_facts_come_from_data():
    # NKI guides: 128 x 128 systolic array, 128 SBUF partitions, 2 MiB PSUM per core
    for chip in TRAINIUM:
        core = specs.chip(chip).core
        assert (core.tensor_rows, core.tensor_cols, core.sbuf_partitions) == (128, 128, 128)
        assert core.psum_bytes == 2 * MiB


@pytest.mark.parametrize("m,k", [(128, 128), (256, 4096), (4096, 128), (1024, 1024)])
def test_multiples_of_128_fill_the_array(m, k):
    u = roofline.array_utilisation(m, 512, k)
    assert u.utilisation == 1.0
    assert u.tiles == (m // 128) * (k // 128)


@pytest.mark.parametrize("m,k,expected,tiles", [
    (128, 100, 100 / 128, 1),          # K = 100: 28 of 128 rows idle
    (1, 8192, 1 / 128, 64),            # M = 1 (one token): one column of 128
    (128, 129, 129 / 256, 2),          # one element over: a second, almost empty tile
    (200, 200, (200 / 256) ** 2, 4),
    (100, 100, (100 / 128) ** 2, 1),
])
def test_shapes_that_are_not_multiples_of_128(m, k, expected, tiles):
    u = roofline.array_utilisation(m, 4096, k, "trn2")
    assert u.utilisation == pytest.approx(expected)
    assert u.tiles == tiles


@given(m=dims, k=dims)
def test_utilisation_is_a_fraction_and_full_only_on_multiples(m, k):
    u = roofline.array_utilisation(m, 64, k)
    assert 0 < u.utilisation <= 1
    assert (u.utilisation == 1) == (m % 128 == 0 and k % 128 == 0)
    assert u.k_tiles == -(-k // 128) and u.m_tiles == -(-m // 128)


def test_utilisation_curve_is_a_sawtooth():
    df = roofline.utilisation_curve(range(1, 513), other=128)
    assert df.utilisation.max() == 1.0
    assert df.set_index("dim").loc[[128, 256, 384, 512], "utilisation"].eq(1.0).all()
    assert df.set_index("dim").loc[129, "utilisation"] < 0.51


# --------------------------------------------------------------------------- logical NeuronCores

def test_logical_core_counts_as_published():
    # Logical NeuronCore configuration (AWS Neuron docs): trn2.48xlarge exposes 128 physical
    # NeuronCores; 64 logical at the default LNC=2, 128 at LNC=1; 4 logical cores per chip
    c2 = cores.core_counts("trn2.48xlarge")
    assert (c2.lnc, c2.n_chips, c2.physical_cores, c2.logical_cores) == (2, 16, 128, 64)
    assert c2.logical_cores_per_chip == 4
    assert cores.core_counts("trn2.48xlarge", lnc=1).logical_cores == 128
    # 256 ranks per Trn2 UltraServer at LNC=2 (seed 004, confirmed by the claims audit)
    assert cores.core_counts("trn2-ultraserver").ranks == 256


def test_per_rank_resources_as_published():
    # Collectives doc: 200 Gbps EFA per chip, 50 Gbps per rank at LNC=2
    c = cores.core_counts("trn2.48xlarge")
    assert c.efa_bytes_per_s_per_logical_core == pytest.approx(50 * Gbps)
    # Training best practices: about 24 GiB of HBM per LNC=2 rank (before runtime overhead)
    assert c.hbm_bytes_per_logical_core == pytest.approx(24 * GiB)


def test_lnc_settings_per_generation_come_from_data():
    assert cores.lnc_options("trn2") == (1, 2) and cores.lnc_options("trn3") == (1, 2)
    assert cores.lnc_options("trn1") == ()
    # Trainium1: no setting, logical = physical
    c1 = cores.core_counts("trn1.32xlarge")
    assert c1.lnc == 1 and c1.logical_cores == c1.physical_cores == 32
    assert cores.logical_cores_per_chip("trn1", 1) == 2


@pytest.mark.parametrize("system", ["trn2.48xlarge", "trn2-ultraserver", "trn3-gen1-ultraserver",
                                    "trn3-gen2-ultraserver"])
@pytest.mark.parametrize("lnc", [1, 2])
@pytest.mark.parametrize("n_systems", [1, 3])
def test_count_identities(system, lnc, n_systems):
    c = cores.core_counts(system, lnc, n_systems)
    s = specs.system(system)
    assert c.n_chips == s.n_chips * n_systems
    assert c.physical_cores == c.n_chips * s.chip.neuron_cores
    assert c.logical_cores * lnc == c.physical_cores
    table = cores.core_count_table(system, lnc, n_systems)
    assert table.logical_cores.iloc[-1] == c.logical_cores
    assert (table.physical_cores == table.logical_cores * lnc).all()


def test_trainium3_defaults_to_the_inferred_lnc_2():
    # issue 26: "TRN2 and TRN3 provide two physical cores per logical NeuronCore" (NxDI MoE deep dive)
    assert cores.core_counts("trn3-gen1-ultraserver").lnc == 2
    assert cores.core_counts("trn3-gen1-ultraserver", lnc=2).logical_cores == 64 * 4


@pytest.mark.parametrize("chip,lnc", [("trn2", 3), ("trn2", 0), ("trn1", 2), ("trn3", 4),
                                      ("trn2", "2"), ("trn2", True)])
def test_lnc_not_allowed_for_the_generation(chip, lnc):
    with pytest.raises(ValueError, match="lnc"):
        cores.logical_cores_per_chip(chip, lnc)


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs,param", [
    (dict(m=0, n=1, k=1), "m"), (dict(m=1, n=-4, k=1), "n"), (dict(m=1, n=1, k=2.5), "k"),
    (dict(m=1, n=1, k=float("nan")), "k"), (dict(m=True, n=1, k=1), "m"),
    (dict(m=1, n=1, k=1, dtype="int4"), "dtype"), (dict(m=1, n=1, k=1, dtype="fp4", chip="trn3"), "dtype"),
    (dict(m=1, n=1, k=1, chip="trn9"), "chip"), (dict(m=1, n=1, k=1, chip=["trn2"]), "chip"),
    (dict(m=1, n=1, k=1, dtype=None), "dtype"), (dict(m=1, n=1, k=1, chip="h100", tiled=True), "chip"),
])
def test_bad_matmul_input_names_the_parameter(kwargs, param):
    with pytest.raises(ValueError, match=param):
        roofline.matmul_bound(**kwargs)


@given(bad=st.one_of(st.integers(max_value=0), st.floats(allow_nan=True).filter(
    lambda x: not (x == x and x.is_integer() and x >= 1)), st.text(max_size=3)))
def test_any_bad_dimension_is_rejected(bad):
    with pytest.raises(ValueError, match="m"):
        roofline.array_utilisation(bad, 128, 128)


def test_other_bad_input():
    with pytest.raises(ValueError, match="chip"):
        roofline.ridge_point("gpu", "bf16")
    with pytest.raises(ValueError, match="dtype"):
        roofline.bytes_per_element("int8")
    with pytest.raises(ValueError, match="high"):
        roofline.roofline_curve("trn2", low=10, high=1)
    with pytest.raises(ValueError, match="n_systems"):
        cores.core_counts("trn2.48xlarge", n_systems=0)
    with pytest.raises(ValueError, match="system"):
        cores.core_counts("trn2.96xlarge")
    with pytest.raises(ValueError, match="unit"):
        claim_checks.check_figure("trn2", "hbm_bytes", 96, "gigs")
    with pytest.raises(ValueError, match="unit"):
        claim_checks.check_figure("trn2", "hbm_bytes", 96, "TFLOPS")
    with pytest.raises(ValueError, match="claimed"):
        claim_checks.check_figure("trn2", "hbm_bytes", -1, "GiB")
    with pytest.raises(ValueError, match="claim"):
        claim_checks.check_claim("Trainium2 is made of cheese")


# --------------------------------------------------------------------------- claims and tables

def test_the_three_claims_of_the_chapter():
    # claims_audit.md section 2.1, rows 2, 25 and 14
    flops = claim_checks.check_claim("1,300 TFLOPS BF16 per Trainium2 chip")
    assert flops.verdict == "contradicted" and "dense_flops_per_s.fp8" in flops.evidence
    sram = claim_checks.check_claim("24 MB SRAM per core (Trainium2)")
    assert sram.verdict == "contradicted" and "NeuronCore-v2 sbuf_bytes" in sram.evidence
    fabric = claim_checks.check_claim("a non-blocking all-to-all UltraServer (Trn2)")
    assert fabric.verdict == "contradicted" and "trn3-gen2-ultraserver" in fabric.evidence


def test_other_verdicts():
    assert claim_checks.check_claim("2.6 PFLOPS FP8 per Trainium2 chip").evidence.count("sparse") >= 1
    assert claim_checks.check_claim("6.1 TB of HBM in a Trn2 UltraServer").verdict == "unit mix-up"
    assert claim_checks.check_claim("3 TB/s of HBM bandwidth per Trainium2 chip").verdict == "disputed"
    assert claim_checks.check_claim("Trainium2 is built from NeuronCore-v2").verdict == "contradicted"
    assert claim_checks.check_text("trn3-gen1-ultraserver", "topology", "all-to-all").verdict == "supported"
    t = claim_checks.claims_table()
    assert list(t.claim) == [c.claim for c in claim_checks.claims()]
    # every claim names who made it, as a title a learner can read (no internal document names)
    assert t.said_by.str.len().min() > 0
    assert not t.said_by.str.contains("background|shared/", case=False).any()
    # seed 002's "roughly 3.4 petaflops" per trn1.32xlarge: audit section 2.3 row 1, 3,040 TFLOPS
    assert claim_checks.claim("trn1-instance-bf16").run().verdict == "contradicted"
    assert set(t.verdict) <= set(claim_checks.VERDICTS)


def test_recorded_verdicts_agree_with_the_checks():
    # claims.csv records each claim's verdict (claims_audit.md, section 2.1 for seed 001); for the
    # checks computed from data/ the computed verdict must be the recorded one
    for c in claim_checks.claims():
        assert c.run().verdict == c.verdict, c.claim_id


def test_seed_001_claims_are_mostly_wrong_and_each_says_who():
    # claims_audit.md section 2.1: about thirty checkable figures of seed 001, most of them wrong;
    # its H100 and TPU v6e figures (rows 31, 33) are right, and chapter 01 shows both kinds
    t = claim_checks.claims_table(said_by="seed-001")
    assert len(t) >= 35
    trainium = t[~t.claim_id.str.startswith(("h100", "tpu"))]
    assert (trainium.verdict != "supported").sum() >= 0.75 * len(trainium)
    assert set(t[t.claim_id.str.startswith("h100")].verdict) == {"supported"}
    wanted = {"trn2-neuronlink-v2", "trn2-hbm-2-8", "trn2-hbm3e", "trn2-instance-host-1024gb", "trn2-efa-v2",
              "rainier-100k", "rainier-65ef", "trn2-cost-40-50", "trn2-tf32-650", "trn2-int8",
              "trn2-vector-160", "trn2-gpsimd-one"}
    assert wanted <= set(t.claim_id)
    assert claim_checks.claims_table("rainier").source.str.contains("PPC Land|Tom's Hardware").all()
    assert len(claim_checks.claims_table(verdict="unverified")) == 1
    with pytest.raises(ValueError, match="verdict"):
        claim_checks.claims_table(verdict="maybe")
    with pytest.raises(ValueError, match="said_by"):
        claim_checks.claims_table(said_by="seed-999")


def test_a_binary_figure_in_thousands_is_read_that_way():
    # claims_audit.md section 2.1 row 16: "6.1 TB" for 6,144 GiB is neither 6.6 TB (decimal) nor
    # 6.0 TiB: it is 6.1 thousand GiB; the evidence shows the decimal value
    r = claim_checks.check_claim("6.1 TB of HBM in a Trn2 UltraServer")
    assert r.verdict == "unit mix-up"
    assert "6.60 TB" in r.evidence and "6.00 TiB" in r.evidence and "thousand GiB" in r.evidence
    assert "read as TiB" not in r.evidence
    # "1.5 TB" for 1,536 GiB is exactly 1.5 TiB: the prefix read the other way
    assert "read as TiB" in claim_checks.check_figure("trn2.48xlarge", "hbm_bytes_total", 1.5, "TB").evidence


@given(factor=st.floats(min_value=0.985, max_value=1.015))
def test_a_figure_within_rounding_is_supported(factor):
    assert claim_checks.check_figure("trn2", "dense_flops_per_s.bf16", 667 * factor, "TFLOPS").verdict == "supported"


def test_generations_table_shows_tiers_and_disagreements():
    t = cores.generations_table().set_index("key")
    assert list(t.index[:3]) == TRAINIUM
    assert set(t.index[3:]) == {a.key for a in specs.accelerators()}
    assert t.loc["trn2", "tier"] == "A" and t.loc["h100", "tier"] == "B"
    assert "hbm_bytes_per_s" in t.loc["trn2", "disputed"]
    assert t.loc["trn3", "low_precision"] == "mxfp8"
    assert t.loc["trn2", "ridge_bf16"] == pytest.approx(roofline.ridge_point("trn2", "bf16"))
    d = cores.disagreements(["trn2", "trn3"])
    assert {"hbm_bytes_per_s", "neuronlink_bytes_per_s"} <= set(d.field)
    # trn3's lnc_default has an alternative row with the same value (a second source): not disputed
    assert specs.alternatives("trn3", "lnc_default")
    assert "lnc_default" not in set(d.field) and "lnc_default" not in t.loc["trn3", "disputed"]
    assert (cores.disagreements().used != cores.disagreements().alternative).all()
    with pytest.raises(ValueError, match="entities"):
        cores.disagreements(["trn7"])


def test_neuroncore_facts_from_data():
    t = cores.neuroncore_table()
    assert t.loc["SBUF (MiB)"].tolist() == [24.0, 28.0, 32.0]
    blocks = views.neuroncore_blocks("trn2")
    assert set(blocks.block) >= {"Tensor engine", "Vector engine", "Scalar engine", "GpSimd engine",
                                 "SBUF", "PSUM", "DMA", "HBM"}
    assert (blocks.x < blocks.x2).all() and (blocks.y < blocks.y2).all()


# --------------------------------------------------------------------------- charts, widgets, exercises

def test_charts_build_valid_specs():
    curves = roofline.roofline_curve("trn2")
    point = roofline.matmul_bound(8, 8192, 8192)
    import pandas as pd
    pt = pd.DataFrame([{"intensity": point.intensity_flop_per_byte,
                        "tflop_per_s": point.achieved_flops_per_s / TFLOPS, "bound": point.bound,
                        "label": "x"}])
    made = [charts.roofline_chart(curves, pt), charts.roofline_chart(curves),
            charts.generations_chart(cores.generations_table()),
            charts.neuroncore_chart(views.neuroncore_blocks()),
            charts.utilisation_chart(roofline.utilisation_curve(range(1, 300))),
            charts.roofline_chart(curves, pt, path=roofline.batch_curve(8192, 8192), labels=False)]
    for chart in made:
        assert isinstance(chart, alt.TopLevelMixin)
        chart.to_dict()  # validates against the Vega-Lite schema
    spec = made[0].to_dict()
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"


def test_roofline_explorer_updates_and_shows_bad_input_inline():
    w = widgets.roofline_explorer()
    assert w.last_error is None and "HBM-bound" in w.summary.value
    assert f"m* = {roofline.compute_bound_batch(8192, 8192):,.1f}" in w.summary.value
    first = w.chart.spec
    w.controls["m"].value = 300          # past m* for n = k = 8192: the point crosses the ridge
    assert w.result.bound.bound == "tensor engine" and "tensor engine-bound" in w.summary.value
    assert w.chart.spec != first
    w.controls["n"].value = 256
    w.controls["k"].value = 256          # intensity never exceeds 2nk/((n + k)·2) = 128 < 230
    assert w.result.bound.bound == "HBM" and "no batch makes it compute-bound" in w.summary.value
    w.controls["k"].value = -1
    assert "k (shared) must be" in w.last_error and "k (shared) must be" in w.error.value
    w.controls["k"].value = 8192
    w.controls["chip"].value = "trn3"
    assert "fp4" not in w.controls["dtype"].options   # the menu offers only what the chip has
    w.controls["dtype"].value = "fp8"   # NKI Trainium3 guide: plain FP8 at the BF16 data path
    assert w.last_error is None
    w.controls["dtype"].value = "mxfp8"
    assert w.last_error is None
    w.controls["chip"].value = "h100"
    w.controls["dtype"].value = "bf16"
    assert w.last_error is None and "Trainium chips only" in w.summary.value


def test_explorer_marks_the_ridge_crossing_at_the_closed_form_batch():
    w = widgets.roofline_explorer(m=32, n=8192, k=8192)
    crossing = w.result.point[w.result.point.kind.str.startswith("ridge crossed")]
    m_star = roofline.compute_bound_batch(8192, 8192)
    assert len(crossing) == 1 and crossing.label.iloc[0] == f"m* = {m_star:,.1f}"
    assert crossing.intensity.iloc[0] == pytest.approx(roofline.ridge_point("trn2", "bf16"))
    w.controls["n"].value = 256
    w.controls["k"].value = 256
    assert not w.result.point.kind.str.startswith("ridge crossed").any()


def test_widgets_are_registered_for_the_benchmark():
    assert {"hardware.roofline_explorer", "hardware.claims_explorer"} <= set(BENCHMARKS)
    for name in ("hardware.roofline_explorer", "hardware.claims_explorer"):
        factory, changes = BENCHMARKS[name]
        w = factory()
        original = {c: w.controls[c].value for c, _ in changes}
        for control, value in changes:  # tools/benchmark.py sets each value, then restores it
            for v in (value, original[control]):
                before = w.updates
                w.controls[control].value = v
                assert w.last_error is None and w.updates == before + 1, (name, control, v)


@pytest.mark.parametrize("q", ch01.ALL, ids=lambda q: q.name)
def test_exercises_accept_the_answer_and_reject_the_wrong_one(q):
    assert q.judge(q.expected).status == "correct"
    assert q.judge(q.wrong).status == "wrong"
    assert q.judge(...).status == "not attempted"
    assert q.judge(object()).status == "wrong"


def test_contraction_rows_follow_the_nki_guides():
    """AWS Neuron docs, Trainium2 Architecture Guide for NKI ("Double FP8 Matmul Performance":
    the contraction dimension doubles from 128 to 256, a 256x128 array to the programmer) and
    Trainium3 Architecture Guide for NKI (MX matmul: 512x128); 128 otherwise."""
    assert roofline.contraction_rows("trn1", "bf16") == roofline.contraction_rows("trn1", "fp8") == 128
    assert roofline.contraction_rows("trn2", "bf16") == 128
    assert roofline.contraction_rows("trn2", "float8_e4m3fn") == 256
    assert roofline.contraction_rows("trn3", "mxfp8") == roofline.contraction_rows("trn3", "mxfp4") == 512
    assert roofline.contraction_rows("trn3", "bf16") == roofline.contraction_rows("trn3", "fp8") == 128
    # a k = 256 FP8 matmul fills Trainium2's double-FP8 array; k = 128 fills half of it
    assert roofline.array_utilisation(128, 512, 256, "trn2", "fp8").utilisation == 1.0
    assert roofline.array_utilisation(128, 512, 128, "trn2", "fp8").k_fill == 0.5
    assert roofline.array_utilisation(128, 512, 128, "trn2", "bf16").k_fill == 1.0
    assert roofline.array_utilisation(128, 512, 600, "trn3", "mxfp8").k_tiles == 2
    tiled = roofline.matmul_bound(128, 8192, 128, "fp8", "trn2", tiled=True)
    assert tiled.utilisation == 0.5
    with pytest.raises(ValueError, match="dtype"):
        roofline.contraction_rows("trn2", "mxfp8")


def test_claims_explorer_filters_and_shows_who_said_it():
    w = widgets.claims_explorer()
    n = len(claim_checks.claims_table())
    assert f"{n} of {n} claims" in w.summary.value and "said by" in w.summary.value
    w.controls["verdict"].value = "unit mix-up"
    assert w.result.verdict.eq("unit mix-up").all() and len(w.result) >= 3
    w.controls["query"].value = "ultraserver"
    assert list(w.result.claim_id) == ["trn2-ultraserver-6tb"]
    w.controls["verdict"].value = ""
    w.controls["query"].value = "zzz-no-such-claim"
    assert "No claim matches" in w.summary.value


# --------------------------------------------------------------------------- compute-bound batch

def test_compute_bound_batch_reproduces_scaling_book_h100_threshold():
    """J. Austin et al., "How to Scale Your Model" (2025), Part 1 (Rooflines): an H100 does
    9.89e14 BF16 FLOP/s with 3.35 TB/s of HBM, so a BF16 matmul with B << D, F turns
    compute-bound at a batch of about 9.89e14 / 3.35e12 ≈ 295 (2·B FLOPs per weight byte pair)."""
    assert roofline.compute_bound_batch(None, None, "bf16", "h100") == pytest.approx(9.89e14 / 3.35e12, rel=1e-3)
    assert round(roofline.compute_bound_batch(None, None, "bf16", "h100")) == 295


def test_compute_bound_batch_for_the_chapters_projection():
    # chapter 01's worked problem: k = 8192, n = 28672 on Trainium2 in BF16; the brute-force
    # search it replaces found m = 239
    m_star = roofline.compute_bound_batch(28672, 8192, "bf16", "trn2")
    assert math.ceil(m_star) == 239
    assert roofline.matmul_bound(239, 28672, 8192, "bf16", "trn2").bound == "tensor engine"
    assert roofline.matmul_bound(238, 28672, 8192, "bf16", "trn2").bound == "HBM"


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3", "h100"])
def test_wide_limit_is_ridge_times_bytes_over_two(chip):
    for dtype in roofline.device(chip).dense_flops_per_s:
        expected = roofline.ridge_point(chip, dtype) * roofline.bytes_per_element(dtype) / 2
        assert roofline.compute_bound_batch(None, None, dtype, chip) == pytest.approx(expected)
    # in BF16 (2 bytes) the compute-bound batch in tokens is the ridge point in FLOP/byte
    assert roofline.compute_bound_batch(None, None, "bf16", chip) == pytest.approx(
        roofline.ridge_point(chip, "bf16"))


def test_square_case_agrees_with_square_size_at_ridge():
    # 1/m + 1/n + 1/k = 2/(R·b) with m = n = k = s gives s = 1.5·b·R
    s = roofline.square_size_at_ridge("trn2", "bf16")
    n = round(s)
    m_star = roofline.compute_bound_batch(n, n, "bf16", "trn2")
    assert m_star == pytest.approx(s, rel=0.01)


@settings(max_examples=150, deadline=None)
@given(n=dims, k=dims, chip=st.sampled_from(TRAINIUM + ["h100"]), dtype=st.sampled_from(["bf16", "fp8", "fp32"]))
def test_closed_form_is_where_the_bound_switches(n, k, chip, dtype):
    if dtype not in roofline.device(chip).dense_flops_per_s:
        return
    m_star = roofline.compute_bound_batch(n, k, dtype, chip)
    limit = roofline.intensity_limit(n, k, dtype)
    ridge = roofline.ridge_point(chip, dtype)
    if math.isinf(m_star):
        assert limit <= ridge * (1 + 1e-12)
        assert roofline.matmul_bound(10**7, n, k, dtype, chip).bound == "HBM"
        return
    assert limit > ridge
    # the harmonic identity 1/m* + 1/n + 1/k = 2/(R·b)
    assert 1 / m_star + 1 / n + 1 / k == pytest.approx(2 / (ridge * roofline.bytes_per_element(dtype)))
    hi, lo = math.ceil(m_star * (1 + 1e-9)), math.floor(m_star * (1 - 1e-9))
    assert roofline.matmul_bound(hi, n, k, dtype, chip).bound == "tensor engine"
    if lo >= 1:
        assert roofline.matmul_bound(lo, n, k, dtype, chip).bound == "HBM"


@given(m=dims, n=dims, k=dims)
def test_intensity_never_exceeds_its_limit_and_grows_with_m(m, n, k):
    i = roofline.arithmetic_intensity(m, n, k, "bf16")
    assert i < roofline.intensity_limit(n, k, "bf16")
    assert roofline.arithmetic_intensity(m + 1, n, k, "bf16") > i


def test_fp8_on_trainium2_keeps_the_batch_and_plain_fp8_on_trainium3_halves_it():
    t = roofline.compute_bound_batch_table(["trn2", "trn3"]).set_index(["chip", "dtype"]).batch
    # Trainium2: FP8 doubles the rate (1299 vs 667, not exactly 2x) and halves the bytes
    ratio = specs.chip("trn2").dense_flops_per_s["fp8"] / specs.chip("trn2").dense_flops_per_s["bf16"]
    assert t["trn2", "fp8"] / t["trn2", "bf16"] == pytest.approx(ratio / 2)
    # Trainium3: plain FP8 runs at the BF16 rate (derived row), so half the bytes halve the batch
    assert t["trn3", "fp8"] == pytest.approx(t["trn3", "bf16"] / 2)
    assert set(t.index.get_level_values("chip")) == {"trn2", "trn3"}


def test_batch_curve_crosses_the_ridge_at_the_closed_form():
    c = roofline.batch_curve(8192, 8192, "bf16", "trn2")
    m_star = roofline.compute_bound_batch(8192, 8192, "bf16", "trn2")
    assert c.m.is_monotonic_increasing and c.m.is_unique and c.m.iloc[0] == 1
    assert c.loc[c.bound == "tensor engine", "m"].min() == math.ceil(m_star)
    assert c.loc[c.bound == "HBM", "m"].max() == math.floor(m_star)
    assert c.tflop_per_s.max() == pytest.approx(specs.chip("trn2").dense_flops_per_s["bf16"] / TFLOPS)
    for row in c.sample(5, random_state=0).itertuples():
        b = roofline.matmul_bound(row.m, 8192, 8192, "bf16", "trn2")
        assert row.intensity == pytest.approx(b.intensity_flop_per_byte)
        assert row.tflop_per_s == pytest.approx(b.achieved_flops_per_s / TFLOPS)


@pytest.mark.parametrize("call, name", [
    (lambda: roofline.compute_bound_batch(0, 8192), "n"),
    (lambda: roofline.compute_bound_batch(8192, -3), "k"),
    (lambda: roofline.compute_bound_batch(8192, 8192, "int3"), "dtype"),
    (lambda: roofline.compute_bound_batch(8192, 8192, "bf16", "trn9"), "chip"),
    (lambda: roofline.intensity_limit(None, None), "n and k"),
    (lambda: roofline.batch_curve(8192, 8192, m_max=1), "m_max"),
    (lambda: roofline.batch_curve(8192, 8192, n_points=1), "n_points"),
    (lambda: roofline.compute_bound_batch_table("trn2"), "chips"),
])
def test_compute_bound_batch_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ---------------------------------------------------------------- every engine bounds an op (issue 26)


def test_engine_bounds_are_max_and_sum_of_engine_times():
    # scaling-book part 1: T_lower = max(T_math, T_comms), T_upper = their sum
    b = roofline.engine_bounds("trn2", tensor_flops=1e12, vector_flops=4e9, scalar_flops=1e9, hbm_bytes=1e9)
    assert b.lower_s == max(b.times_s.values()) and b.upper_s == pytest.approx(sum(b.times_s.values()))
    chip = specs.chip("trn2")
    # issue 39: by default the NKI guide's data path, 512 BF16 elements per cycle at 0.96 GHz on
    # NeuronCore-v3, 8 cores per chip; the NeuronCore-v3 page's 1.0 FP32 TFLOPS per core is the
    # sourced alternative ("marketing")
    assert b.times_s["vector"] == pytest.approx(4e9 / (8 * 512 * 0.96e9))
    m = roofline.engine_bounds("trn2", tensor_flops=1e12, vector_flops=4e9, scalar_flops=1e9, hbm_bytes=1e9,
                               rates="marketing")
    assert m.times_s["vector"] == pytest.approx(4e9 / (8 * 1.0e12))
    assert b.times_s["tensor"] == pytest.approx(1e12 / chip.dense_flops_per_s["bf16"])
    with pytest.raises(ValueError, match="rates"):
        roofline.engine_bounds("trn2", vector_flops=1.0, rates="tflops")


def test_data_path_rates_are_below_the_marketing_figures_on_every_trainium():
    # the NKI guides' widths give 2 to 8 times fewer element ops than the FP32 TFLOPS on the
    # architecture pages (issue 39, finding 01-2); one instruction element is one op
    for chip in ("trn1", "trn2", "trn3"):
        d, m = roofline.engine_element_rates(chip), roofline.engine_element_rates(chip, rates="marketing")
        for engine in ("vector", "scalar"):
            assert d[engine] < m[engine], (chip, engine)


def test_fused_attention_softmax_is_not_free_beside_the_tensor_engine():
    # per (query, key) pair with head size 128: 4·128 tensor FLOPs (QK^T and PV) against 4 vector ops:
    # the vector engine is ~80x slower per FLOP, so the two take comparable time
    pairs = 1e9
    b = roofline.engine_bounds("trn2", tensor_flops=4 * 128 * pairs, vector_flops=4 * pairs, scalar_flops=pairs,
                               rates="marketing")
    assert 0.3 < b.times_s["vector"] / b.times_s["tensor"] < 3
    assert b.upper_s > 1.5 * b.lower_s
    # at the data-path rates the vector and scalar engines, not the tensor engine, bind (the NKI
    # guide's point about fused attention)
    d = roofline.engine_bounds("trn2", tensor_flops=4 * 128 * pairs, vector_flops=4 * pairs, scalar_flops=pairs)
    assert d.bound in ("vector", "scalar") and d.times_s["scalar"] > d.times_s["tensor"]


def test_unfused_softmax_is_bound_by_hbm_and_bad_op_names_the_parameter():
    assert roofline.elementwise_op_bounds("softmax", 2**26).bound == "hbm"
    with pytest.raises(ValueError, match="op"):
        roofline.elementwise_op_bounds("gelu", 2**26)


def test_roofline_explorer_updates_by_data_alone():
    """Issue 30: every control of the roofline explorer changes only the chart's data and
    title (the path's legend words are constant), so the page swaps the data in place."""
    w = widgets.roofline_explorer()
    template = w._live[0]
    for name, value in [("m", 33), ("m", 2048), ("n", 100_000), ("k", 100), ("chip", "trn3"),
                        ("dtype", "fp8"), ("chip", "h100"), ("m", 1)]:
        w.controls[name].value = value
        assert w.last_error is None, (name, value, w.last_error)
        assert w._live[0] == template, f"{name} = {value!r} changed the chart's structure"
