"""trainium_lab.reality against AWS's published measurements (data/measurements.csv).

Sources, by set: (a) AWS Neuron docs, Trn1 training performance table
(about-neuron/benchmarks/trn1/training_data_decoder.csv, Neuron 2.24.0); (b) NxD Inference
tutorials "Using Speculative Decoding to improve Llama-3.3-70B inference performance on Trn2"
(llama70b_perf_comparison.csv) and "... Llama-3.1-405B ... on Trn2" (llama405b_perf_comparison.csv);
(c) AWS Neuron "NCCOM-TEST User Guide" example runs; (d) vLLM Neuron "Deploy EAGLE3 speculative
decoding ... Llama 3.1 8B Instruct" (per-position acceptance).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from trainium_lab import reality, sizing, specs

M = reality.measurements()
C = reality.compare()
MODELLED = C[C.modelled]


def _rows(set_name):
    return M[M.set == set_name]


# --------------------------------------------------------------------------- each row reproduced


@pytest.mark.parametrize("mid, tokens_per_s, mfu", [
    # AWS Trn1 training table (Neuron 2.24): 47.95 and 7.94 seq/s at sequence 8,192 on
    # 32 x trn1.32xlarge; issue 24 quotes 392,806 tokens/s, 19.5 % and 28.3 % MFU counting 6N.
    ("trn1-train-llama31-8b", 392_806, 0.195),
    ("trn1-train-llama31-70b", 65_044, 0.283),
])
def test_training_rows_reproduce_tokens_and_6n_mfu(mid, tokens_per_s, mfu):
    r = M.set_index("measurement_id").loc[mid]
    tokens = float(r.value) * int(r.seq_len)
    assert tokens == pytest.approx(tokens_per_s, abs=1)
    n = sizing.preset(r.model).exact_params()
    peak = specs.chip("trn1").dense_flops_per_s["bf16"] * int(r.chips)
    assert 6 * n * tokens / peak == pytest.approx(mfu, abs=0.0015)


@pytest.mark.parametrize("mid, sample_p50_s", [
    # The tutorials' llmperf sample outputs: inter_token_latency p50 0.019832 s (70B),
    # 0.037929 s (405B); ttft p50 0.57568 s (70B), 2.44196 s (405B).
    ("nxdi-llama33-70b-tpot", 0.019832020386432607),
    ("nxdi-llama31-405b-tpot", 0.037929154633788834),
    ("nxdi-llama33-70b-ttft", 0.5756837059743702),
    ("nxdi-llama31-405b-ttft", 2.441959390998818),
])
def test_inference_rows_match_the_tutorials_llmperf_output(mid, sample_p50_s):
    r = M.set_index("measurement_id").loc[mid]
    assert float(r.value) * 1e-3 == pytest.approx(sample_p50_s, rel=float(r.tolerance))


def test_nccom_rows_reproduce_their_printed_bandwidths_in_the_unit_they_support():
    # NCCOM-TEST User Guide: algbw = size(B) / time(us); busbw = algbw x 2(n-1)/n (all-reduce),
    # x (n-1)/n (all-gather), x 1 (permute). The older runs (time(us)) print GiB/s, as the guide's
    # column table says; the newer runs (time:avg(us)) print decimal GB/s.
    raw = pd.read_csv(specs.DATA_DIR / "measurements.csv", dtype=str, keep_default_na=False)
    rows = raw[raw.set == "nccom_test_guide"]
    assert len(rows) == 1 + 11 + 4 + 28 + 1 + 4 + 4 + 4 + 8   # every printed row of the nine runs
    for _, r in rows.iterrows():
        size, t = float(r.size_bytes), float(r.value) * 1e-6
        decimals = len(r.value.split(".")[1]) if "." in r.value else 0
        rel_t = 0.5 * 10**-decimals * 1e-6 / t          # the printed time's own rounding
        per = {"GiB/s": 2**30, "decimal GB/s": 1e9}
        readings = per if r.unit_reading.startswith("either") else {r.unit_reading: per[r.unit_reading]}
        for unit in readings.values():
            algbw = size / t / unit
            assert algbw == pytest.approx(float(r.printed_algbw), abs=0.005 + algbw * rel_t + 1e-9), r.measurement_id
        n = int(r.n_ranks)
        factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "permute": 1.0}[r.op]
        assert float(r.printed_algbw) * factor == pytest.approx(float(r.printed_busbw), abs=0.011 + 0.005 * float(r.printed_busbw)), r.measurement_id


def test_nccom_unit_reading_differs_between_old_and_new_runs():
    # NCCOM-TEST User Guide: 33,554,432 B in 768 us is 40.69 GiB/s (printed 40.69 "GB/s");
    # 33,554,432 B in 894.24 us is 37.52e9 B/s (printed 37.52 "GB/s").
    rows = _rows("nccom_test_guide").set_index("measurement_id")
    assert rows.loc["nccom-allr-2r-quick-33554432", "unit_reading"] == "GiB/s"
    assert rows.loc["nccom-permute-8r-33554432", "unit_reading"] == "decimal GB/s"
    decided = rows[~rows.unit_reading.str.startswith("either")]
    old = decided[decided.percentile == "p50"]
    new = decided[decided.percentile == "mean"]
    assert set(old.unit_reading) == {"GiB/s"} and set(new.unit_reading) == {"decimal GB/s"}


def test_eagle3_rows_reproduce_the_acceptance_length():
    # vLLM Neuron EAGLE3 tutorial: per-position acceptance 86.49 / 72.47 / 63.46 %,
    # "Acceptance length: 3.22" = 1 + their sum.
    rows = _rows("vllm_eagle3_acceptance")
    assert 1 + (rows.value.astype(float) / 100).sum() == pytest.approx(3.22, abs=0.005)


def test_every_row_states_what_the_source_leaves_out():
    assert (M.unstated.str.len() > 0).all()
    assert set(M.set) == {"trn1_training", "nxdi_trn2_tutorials", "nccom_test_guide", "vllm_eagle3_acceptance",
                          "nxdi_trn2_prefix_caching"}   # the last judges the prefix-cache model only (issue 28)


# --------------------------------------------------------------------------- bounds and expectations


def test_no_bound_is_beaten_by_any_measurement():
    # Every modelled row of all four sets: time >= bound, throughput and probability <= bound.
    assert len(MODELLED) >= 50
    beaten = MODELLED[~MODELLED.bound_holds]
    assert beaten.empty, beaten[["measurement_id", "measured", "bound"]]


def test_bounds_are_not_trivially_loose_where_the_issue_measured_the_gap():
    # Issue 24: the 1 GiB all-reduce over 64 ranks on 2 trn1 instances takes 41.8 ms (NCCOM-TEST
    # guide): its bound is EFA's 1 GiB at 800 Gbps, 10.7 ms; 70B decode at TP 64 (19.8 ms) has a
    # roofline-plus-latency bound of about 3.8 ms (4.2 ms with the K/V projections NxD Inference
    # replicates to all 64 ranks counted in the weight reads, issue 24's Inferentia2 item).
    c = C.set_index("measurement_id")
    assert c.loc["nccom-allr-64r-2i-1073741824", "bound"] == pytest.approx(2**30 / 100e9, rel=1e-6)
    # issue 38: the bound is now implementation-free (exact weights, one unreplicated KV cache of the
    # shortest context, 3.0 TB/s, the larger of AWS's two HBM figures): 3.2 ms, not 4.2
    assert 3.0e-3 < c.loc["nxdi-llama33-70b-tpot", "bound"] < 3.5e-3


def test_median_error_over_all_measurements_is_at_most_15_percent():
    assert MODELLED[MODELLED.judged == "tolerance"].abs_error.median() <= 0.15


@pytest.mark.parametrize("set_name, max_error", [
    ("trn1_training", 0.25), ("nxdi_trn2_tutorials", 0.25), ("vllm_eagle3_acceptance", 0.25)])
def test_max_error_per_set_is_at_most_25_percent(set_name, max_error):
    assert MODELLED[MODELLED.set == set_name].abs_error.max() <= max_error


def test_largest_error_outside_the_labelled_rows_and_the_flat_ring_rows():
    # issue 38 replaces issue 24's strict xfail: rows below 16 MB of the 2023 two-instance run are
    # judged by their bound only. From 16 MB up the runtime runs AWS's flat ring on NeuronLink-v2
    # ("We only enable Flat Ring on Trn1 for large message size cases"; 16 MB is where Neuron 2.17's "small collective"
    # class ends): every such row within 18 %. The largest in-sample error left is the 32-rank
    # all-gather at 512 KiB (30 % fast), well inside the issue's 50 %.
    t = MODELLED[MODELLED.judged == "tolerance"]
    worst = t.loc[t.abs_error.idxmax()]
    assert worst.measurement_id == "nccom-allg-32r-524288" and worst.abs_error <= 0.31
    two = t[t.measurement_id.str.startswith("nccom-allr-64r-2i-")]
    assert len(two) == 7 and two.abs_error.max() <= 0.18

def test_summary_reports_in_sample_and_out_of_sample_errors_from_compare():
    s = reality.summary().set_index("set")
    t = MODELLED[MODELLED.judged == "tolerance"]
    assert s.loc["all", "median_abs_error"] == pytest.approx(t.abs_error.median(), rel=1e-12)
    assert s.loc["all", "median_out_of_sample_error"] == pytest.approx(t.out_of_sample_error.median(), rel=1e-12)
    # a model refitted without a row cannot beat the fit on it, summed over the set
    for name, g in t.groupby("set"):
        assert (g.out_of_sample_error ** 2).sum() >= (g.abs_error ** 2).sum() * 0.99, name


def test_strict_leave_one_set_out_falls_back_to_the_geometric_middle_of_the_set_s_own_ranges():
    # data/README.md (issue 38): a left-out set's parameters take the median of a log-uniform prior
    # over their documented plausible range; the parameters other sets fit keep their fit
    # (training's in-graph collectives keep the NxD Inference collective_fixed_s)
    def mid(name):
        lo, hi = reality._plausible(name)
        return math.sqrt(lo * hi)

    rows = M.set_index("measurement_id")
    c = C.set_index("measurement_id")
    for mid_id, names in (("nxdi-llama33-70b-tpot", ("collective_fixed_s", "prefill_efficiency")),
                          ("nxdi-llama31-405b-ttft", ("collective_fixed_s", "prefill_efficiency")),
                          ("trn1-train-llama31-70b", ("train_mfu", "planner_mfu")),
                          ("eagle3-llama31-8b-accept-pos2", ("eagle3_acceptance_alpha",)),
                          ("nccom-allr-2r-1024", ("nccom_launch_s", "nccom_dma_efficiency"))):
        row = rows.loc[mid_id].to_dict()
        prior = reality._row_estimate(row, {n: mid(n) for n in names})[1]
        assert c.loc[mid_id, "expected_without_set"] == pytest.approx(prior, rel=1e-12), mid_id
        assert c.loc[mid_id, "expected_without_set"] != pytest.approx(c.loc[mid_id, "expected"], rel=1e-3), mid_id
    train = rows.loc["trn1-train-llama31-70b"].to_dict()
    both = reality._row_estimate(train, {"train_mfu": mid("train_mfu"),
                                         "collective_fixed_s": mid("collective_fixed_s")})[1]
    assert c.loc["trn1-train-llama31-70b", "expected_without_set"] != pytest.approx(both, rel=1e-3)


def test_expectations_carry_a_range_from_out_of_sample_residuals():
    e = reality.decode("llama3-70b", "trn2", tp=64, batch=1, context_len=10000, bucket_len=12800)
    assert e.low_s < e.expected_s < e.high_s
    lo, hi = reality.expected_range("nxdi_trn2_tutorials", "tpot")
    assert e.low_s == pytest.approx(e.expected_s * lo) and e.high_s == pytest.approx(e.expected_s * hi)


def test_training_expectation_carries_its_out_of_sample_range():
    e = reality.training("llama3-8b", "trn1.32xlarge", n_systems=32, tp=32, pp=1, dp=32, seq_len=8192,
                         global_batch=1024)
    lo, hi = reality.expected_range("trn1_training")
    assert e.low_tokens_per_s == pytest.approx(e.expected_tokens_per_s * lo)
    assert e.low_tokens_per_s < e.expected_tokens_per_s
    # AWS's Trn1 table (aws-trn1-training-perf): 47.95 sequences/s of 8,192 tokens lies inside the range
    assert e.low_tokens_per_s <= 47.95 * 8192 <= e.high_tokens_per_s


def test_in_graph_fixed_cost_is_one_parameter_on_every_chip():
    # issue 38: no chip-name branch. Inside a compiled graph every chip runs the runtime's documented
    # choice by size (a small all-reduce: Mesh, 2 hops); only the NCCOM-TEST guide's Trn1 runs are
    # modelled as the ring their 2- against 32-rank times show
    from trainium_lab import collectives, serving

    f = specs.calibration("collective_fixed_s").value
    a = specs.calibration("hop_latency_s").value
    for model, chip, tp in (("llama3-70b", "trn2", 64), ("llama3-70b", "trn1", 32), ("llama3-70b", "inf2", 24),
                            ("llama3-8b", "trn2", 8), ("llama3-8b", "inf2", 8)):
        assert serving.tp_collective_fixed_s(serving.replica(model, chip, tp=tp)) == pytest.approx(f + 2 * a), chip
    kw = dict(n_ranks=32, system="trn1.32xlarge")
    assert collectives.neuron_collective("all_gather", 1024, **kw).algorithm == "mesh"
    assert collectives.neuron_collective("all_gather", 1024, launched_by="nccom-test", **kw).algorithm == "ring"
    assert collectives.neuron_collective("all_gather", 1024, n_ranks=64, system="trn2.48xlarge",
                                         launched_by="nccom-test").algorithm == "mesh"


def test_a_speculative_tpot_is_not_a_step():
    d = reality.decode("llama3-405b", "trn2", tp=64, batch=1, context_len=10000)
    sp = reality.speculative_tpot("llama3-405b", "trn2", tp=64, batch=1, context_len=10000, k=4)
    assert sp.bound_s < d.bound_s and sp.expected_s < d.expected_s and sp.kind == "speculative TPOT"


def test_prefill_and_training_bounds_use_the_compute_dtypes_peak():
    b16 = reality.prefill("llama3-70b", "trn2", tp=64, prompt_tokens=8192)
    f8 = reality.prefill("llama3-70b", "trn2", tp=64, prompt_tokens=8192, compute_dtype="float8_e4m3fn")
    assert f8.bound_s < b16.bound_s
    kw = dict(n_systems=32, tp=32, pp=1, dp=32, seq_len=8192, global_batch=1024)
    peak = specs.chip("trn1").dense_flops_per_s
    ratio = (reality.training("llama3-8b", "trn1.32xlarge", compute_dtype="float32", **kw).bound_tokens_per_s
             / reality.training("llama3-8b", "trn1.32xlarge", **kw).bound_tokens_per_s)
    assert ratio == pytest.approx(peak["float32"] / peak["bfloat16"], rel=1e-12) and ratio < 1


def test_nccom_large_messages_are_within_25_percent():
    # Where bandwidth dominates (>= 32 MiB) the fitted model holds every single-instance run of the
    # guide within 25 %. issue 38: the fit uses the single-instance runs only; the two-instance run
    # is predicted, with the documented EFA hop, no link efficiency of its own, and from 16 MB up
    # the flat ring AWS documents for Trn1's large messages: every one of its rows from 16 MiB up
    # within 18 %
    m = M.set_index("measurement_id")
    nc = MODELLED[MODELLED.set == "nccom_test_guide"]
    sizes = m.loc[nc.measurement_id, "size_bytes"].astype(float).to_numpy()
    one = (m.loc[nc.measurement_id, "n_instances"].astype(int) == 1).to_numpy()
    assert (nc.abs_error.to_numpy()[(sizes >= 2**25) & one] <= 0.25).all()
    two = nc.abs_error.to_numpy()[(sizes >= 2**24) & ~one]
    assert len(two) == 7 and (two <= 0.18).all()


def test_prefill_rows_run_in_their_tutorials_context_buckets():
    # AWS NxD Inference tutorials (aws-nxdi-llama33-70b-tutorial: --context-encoding-buckets 2048 4096
    # 8192 12288; aws-nxdi-llama405b-spec-tutorial: 2048 4096 10240 12288): on the prompts the two TTFTs
    # imply efficiencies 20 % apart, on the buckets the graphs computed they agree within 2 %
    m = M.set_index("measurement_id")
    assert m.loc["nxdi-llama33-70b-ttft", "context_buckets"] == "2048 4096 8192 12288"
    assert m.loc["nxdi-llama33-70b-ttft", "source_id"] == "aws-nxdi-llama33-70b-tutorial"
    assert m.loc["nxdi-llama31-405b-ttft", "token_generation_buckets"] == "12800"
    raw = [reality.implied_prefill_efficiency(k, padded=False) for k in ("nxdi-llama33-70b-ttft", "nxdi-llama31-405b-ttft")]
    pad = [reality.implied_prefill_efficiency(k) for k in ("nxdi-llama33-70b-ttft", "nxdi-llama31-405b-ttft")]
    assert raw[1] / raw[0] > 1.2 and pad[1] / pad[0] == pytest.approx(1.0, abs=0.02)
    assert set(M["stack"]) == {"nxd-training", "nxd-inference", "nccom-test", "vllm-neuron"}


def test_decode_bound_is_free_of_any_implementation():
    # issue 38: exact weights and one unreplicated KV cache at the larger of AWS's HBM figures; NxD
    # Inference's replicated K/V projections and per-rank KV copies move into the expectation
    from trainium_lab import serving

    r = serving.replica("llama3-70b", "trn2", tp=64)
    d = serving.decode_step(r, 1, 10000)
    assert serving.exact_weight_bytes(r) < r.weight_bytes and r.kv_bytes_per_token < r.kv_bytes_per_token_stored
    floor = (serving.exact_weight_bytes(r) + 10001 * r.kv_bytes_per_token) / (16 * 3.0e12)
    assert d.bound_s == pytest.approx(floor + 160 * 1e-6 + (d.comm_s - 160 * d.collective_fixed_s), rel=1e-9)


def test_two_instance_rows_below_16_mib_are_judged_by_their_bound_only_and_labelled():
    # issue 38, point 6 (issue 24's open point): SDK 2.10, 2023; AWS publishes no Trn1 thresholds
    nc = C[C.measurement_id.str.startswith("nccom-allr-64r-2i-")]
    small = nc[M.set_index("measurement_id").loc[nc.measurement_id, "size_bytes"].astype(float).to_numpy() < 2**24]
    assert len(small) == 21 and (small.judged == "bound only").all() and small.bound_holds.all()
    assert (small.label == "unexplained: 2023 runtime, thresholds unpublished").all()
    assert (nc[~nc.measurement_id.isin(small.measurement_id)].judged == "tolerance").all()


def test_unmodelled_rows_are_only_those_without_a_stated_configuration():
    rest = C[~C.modelled & (C.set != reality.PREFIX_CACHE_SET)]
    assert set(rest.set) == {"nccom_test_guide"}
    assert set(rest.not_modelled_because) <= {"instance not stated", "op permute not modelled"}
    # the prefix-caching rows state no prompt lengths: reality.prefix_cache_check judges them instead
    assert (C[C.set == reality.PREFIX_CACHE_SET].modelled == False).all()  # noqa: E712


# --------------------------------------------------------------------------- the calibration


def test_stored_calibration_is_what_the_fit_returns():
    fitted = reality.fit().set_index("parameter")
    for name, row in fitted.iterrows():
        stored = specs.calibration(name)
        assert stored.value == pytest.approx(row.value, rel=1e-4), name
        assert stored.fitted_on == row.fitted_on, name
        # issue 38: every fitted value inside its documented plausible range, or flagged with the reason
        flags = reality.parameters().set_index("parameter")
        assert flags.loc[name, "plausible_low"] == row.plausible_low < row.plausible_high, name
        assert row.in_range or len(flags.loc[name, "flag"]) > 40, name
        if not math.isnan(row.low):
            assert stored.low <= stored.value <= stored.high, name


def test_calibration_is_a_handful_of_physical_parameters():
    fitted = [c for c in specs.calibrations() if c.fitted_on != "not fitted"]
    assert 5 <= len(fitted) <= 12
    assert specs.calibration("flat_ring_min_bytes").unit == "bytes"      # sourced, not fitted
    for c in fitted:
        assert c.unit in ("s", "fraction")
        if c.unit == "fraction":
            assert 0 < c.value <= 1, c.name
        else:
            assert 0 < c.value < 1e-2, c.name


def test_trn2_training_carries_a_range_not_only_a_point():
    # The four sets hold no Trn2 or Trn3 training throughput: train_mfu carries its low-high range
    # (issue 38: with training's TP collectives paying the in-graph latency, as a decode step's do,
    # and NxD's replicated K/V projections computed, the fitted value is back inside its documented
    # plausible range, in its lower part)
    c = specs.calibration("train_mfu")
    assert c.low < c.value < c.high
    p = reality.parameters().set_index("parameter").loc["train_mfu"]
    assert p.in_range and p.plausible_low <= c.value <= 1.15 * p.plausible_low


def test_planner_default_mfu_reproduces_awss_trn1_runs_within_25_percent():
    mfu = specs.calibration("planner_mfu").value
    for _, r in _rows("trn1_training").iterrows():
        pred = reality._planner_tokens_per_s(r, mfu)
        assert pred == pytest.approx(float(r.value) * int(r.seq_len), rel=0.25)


# --------------------------------------------------------------------------- physics


def test_decode_latency_lesson_tp64_is_not_16x_faster_than_tp4():
    # 70B at TP 64 (16 chips) against TP 8 (2 chips, LNC=2): 8x the HBM bandwidth, but 160 TP
    # all-reduces with a fixed cost each keep the expected speed-up far below 8x.
    t64 = reality.decode("llama3-70b", "trn2", tp=64, batch=1, context_len=10000)
    t8 = reality.decode("llama3-70b", "trn2", tp=8, batch=1, context_len=10000)
    assert t8.bound_s / t64.bound_s > 5
    assert t8.expected_s / t64.expected_s < 3


def test_collectives_between_cores_of_one_chip_are_not_free():
    # NCCOM-TEST guide: 2 ranks, 32 MiB all-reduce, 768 us.
    e = reality.collective("all_reduce", 2**25, n_ranks=2, system="trn1.32xlarge", launched_by="nccom-test")
    assert e.bound_s > 0 and e.expected_s == pytest.approx(768e-6, rel=0.25)
    # inside a graph the same bytes move at HBM's published rate: no benchmark launch, no tool DMA share
    g = reality.collective("all_reduce", 2**25, n_ranks=2, system="trn1.32xlarge")
    assert g.expected_s < e.expected_s / 4


def test_algorithm_follows_awss_size_ranges_on_trn2():
    # AWS "Intra-node Collective Communications": Mesh < 1 MB, RDH 1-56 MB, KangaRing > 56 MB.
    pick = [reality.collective("all_reduce", s, n_ranks=64, system="trn2.48xlarge").detail
            for s in (4096, 8e6, 1e9)]
    assert pick == ["mesh", "rdh", "kangaring"]


def test_hierarchical_collective_across_systems():
    one = reality.collective("all_reduce", 2**30, n_ranks=32, system="trn1.32xlarge")
    two = reality.collective("all_reduce", 2**30, n_ranks=64, system="trn1.32xlarge", n_systems=2)
    assert two.detail == "flat ring" and two.expected_s > one.expected_s     # AWS: Trn1, large messages
    small = reality.collective("all_reduce", 2**20, n_ranks=64, system="trn1.32xlarge", n_systems=2)
    assert small.detail.startswith("hierarchical")


def test_acceptance_iid_model_matches_issue_figures():
    # Issue 24: with alpha = 0.865 the i.i.d. model predicts 0.865 / 0.748 / 0.647.
    assert [round(reality.acceptance(i, 0.865), 3) for i in range(3)] == [0.865, 0.748, 0.647]


def test_training_expectation_below_its_bound_and_monotone_in_mfu():
    kw = dict(n_systems=32, tp=32, pp=1, dp=32, seq_len=8192, global_batch=1024)
    lo = reality.training("llama3-8b", "trn1.32xlarge", mfu=0.3, **kw)
    hi = reality.training("llama3-8b", "trn1.32xlarge", mfu=0.6, **kw)
    assert lo.expected_tokens_per_s < hi.expected_tokens_per_s < hi.bound_tokens_per_s


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, name", [
    (lambda: reality.decode("llama3-70b", "h100", tp=8, batch=1, context_len=1), "chip"),
    (lambda: reality.decode("llama3-70b", "trn2", tp=128, batch=1, context_len=1), "tp"),
    (lambda: reality.decode("llama3-70b", "trn2", tp=8, batch=1, context_len=-5), "context_len"),
    (lambda: reality.decode("llama3-70b", "trn2", tp=8, batch=float("nan"), context_len=1), "batch"),
    (lambda: reality.prefill("llama3-70b", "trn2", tp=8, prompt_tokens=0), "prompt_tokens"),
    (lambda: reality.prefill("llama3-70b", "trn2", tp=8, prompt_tokens=10, efficiency=float("nan")), "efficiency"),
    (lambda: reality.collective("broadcast", 1024, n_ranks=2, system="trn1.32xlarge"), "op"),
    (lambda: reality.collective("all_reduce", float("nan"), n_ranks=2, system="trn1.32xlarge"), "size_bytes"),
    (lambda: reality.collective("all_reduce", -1, n_ranks=2, system="trn1.32xlarge"), "size_bytes"),
    (lambda: reality.collective("all_reduce", 1024, n_ranks=33, system="trn1.32xlarge"), "n_ranks"),
    (lambda: reality.collective("all_reduce", 1024, n_ranks=64, system="trn1.32xlarge", n_systems=3), "n_ranks"),
    (lambda: reality.training("llama3-8b", "trn1.32xlarge", n_systems=0, tp=32, pp=1, dp=32, seq_len=8192,
                              global_batch=1024), "n_systems"),
    (lambda: reality.training("llama3-8b", "trn1.32xlarge", n_systems=32, tp=32, pp=1, dp=32, seq_len=-1,
                              global_batch=1024), "seq_len"),
    (lambda: reality.training("llama3-8b", "trn1.32xlarge", n_systems=32, tp=32, pp=1, dp=32, seq_len=8192,
                              global_batch=1000), "global_batch"),
    (lambda: reality.decode(3.5, "trn2", tp=8, batch=1, context_len=1), "model"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_compare_columns_and_ratios():
    cols = {"measured", "bound", "expected", "expected_over_measured", "bound_over_measured", "bound_holds"}
    assert cols <= set(C.columns)
    m = MODELLED
    assert np.allclose(m.expected / m.measured, m.expected_over_measured)
    assert isinstance(reality.summary(), pd.DataFrame)


def test_readme_prints_the_current_compare_figures():
    # README.md, "How close the models come to real runs": the table must be what summary() gives.
    from pathlib import Path

    from trainium_lab.views import reality as rv

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- reality:start -->")[1].split("<!-- reality:end -->")[0]
    cols = [c for c, _ in rv.SUMMARY_ERROR_COLUMNS]
    assert cols[0].endswith("out of sample (%)")   # the prediction first, the fit labelled
    for _, r in rv.summary_table().iterrows():
        row = (f"| {r['set']} | {r['rows']} | " + " | ".join(str(r[c]) for c in cols) +
               f" | {r['no bound beaten']} |")
        assert row in block, row


@pytest.mark.parametrize("dtype", ["int8", "float8_e4m3fn"])
def test_quantised_weights_halve_the_weight_reads(dtype):
    # AWS's 405B tutorial serves FP8 weights; vLLM's "Neuron INT8 Quantization" example int8: one byte
    # per weight against BF16's two, so a batch-1 decode bound (weight reads) about halves.
    bf = reality.decode("llama3-405b", "trn2", tp=64, batch=1, context_len=1024)
    q = reality.decode("llama3-405b", "trn2", tp=64, batch=1, context_len=1024, weight_dtype=dtype)
    assert 0.5 < q.bound_s / bf.bound_s < 0.56
    assert q.expected_s < bf.expected_s


def test_judged_on_a_measurement_outside_the_calibration_sets():
    # vLLM Neuron EAGLE3 tutorial, non-speculative baseline (not in the four fitted sets): Llama 3.1 8B,
    # trn2.48xlarge, TP 8, max-concurrency 2, sonnet 512 in / 128 out: median TPOT 10.52 ms, median
    # TTFT 51.07 ms. The decode expectation lands within 25 %; no bound is beaten. (Its TTFT, at
    # concurrency 2 with a 512-token prompt, is mostly fixed overhead: the prefill expectation is half
    # of it, reported in the issue 24 report rather than tuned.)
    d = reality.decode("llama3-8b", "trn2", tp=8, batch=2, context_len=512 + 128 // 2)
    assert d.expected_s == pytest.approx(10.52e-3, rel=0.25)
    assert d.bound_s < 10.52e-3
    assert reality.prefill("llama3-8b", "trn2", tp=8, prompt_tokens=512).bound_s < 51.07e-3


@pytest.fixture
def with_rows(monkeypatch):
    """Append measurement rows (a copy of a calibration row with some fields changed) for one test."""
    base = reality.measurements()

    def add(rows):
        tmpl = base.set_index("measurement_id").loc["nxdi-llama33-70b-tpot"]
        extra = [{**tmpl.to_dict(), "measurement_id": mid, **kw} for mid, kw in rows.items()]
        df = pd.concat([base, pd.DataFrame(extra)], ignore_index=True)
        monkeypatch.setattr(reality, "_measurements", lambda: df)
        for f in (reality._compare, reality._cross_validation, reality._without_set):
            f.cache_clear()
        return reality.compare().set_index("measurement_id")

    yield add
    for f in (reality._compare, reality._cross_validation, reality._without_set):
        f.cache_clear()


def test_rows_outside_the_calibration_sets_are_predicted_or_reported_never_raised(with_rows):
    # a judge appends published rows the calibration never saw (data/README.md): compare() predicts
    # what it can model with the public functions' own defaults, and names why it cannot model the rest
    held = dict(set="judged_only", stack="vllm-neuron", context_buckets="", token_generation_buckets="")
    before = reality.summary().set_index("set").loc["all"]
    c = with_rows({
        "x-tpot": dict(held, model="llama3-8b", tp=8, batch=2, input_tokens=512, output_tokens=128, value=10.52),
        "x-ttft": dict(held, model="llama3-8b", tp=8, batch=1, input_tokens=512, output_tokens=128,
                       metric="ttft", value=51.07),
        "x-no-lnc": dict(held, model="llama3-8b", tp=8, batch=2, input_tokens=512, output_tokens=128,
                         lnc=float("nan"), value=10.52),
        "x-model": dict(held, model="falcon-180b", value=20.0),
        "x-batch": dict(held, batch=float("nan"), value=20.0),
        "x-metric": dict(held, metric="output_tokens_per_s", value=100.0),
        "x-unit": dict(held, unit="fortnights", value=1.0),
        "x-instance": dict(held, instance="p5.48xlarge", value=20.0),
    })
    d = reality.decode("llama3-8b", "trn2", tp=8, batch=2, context_len=512 + 128 // 2)
    assert c.loc["x-tpot", "expected"] == pytest.approx(d.expected_s)            # auto buckets, as decode()
    assert c.loc["x-no-lnc", "expected"] == pytest.approx(d.expected_s)          # LNC not stated: the chip's default
    p = reality.prefill("llama3-8b", "trn2", tp=8, prompt_tokens=512, stack="other")
    assert c.loc["x-ttft", "expected"] == pytest.approx(p.expected_s)            # a stack with no calibration set
    assert c.loc["x-ttft", "expected"] != pytest.approx(
        reality.prefill("llama3-8b", "trn2", tp=8, prompt_tokens=512).expected_s)
    assert c.loc[["x-tpot", "x-ttft"], "modelled"].all()
    assert (c.loc[["x-tpot", "x-ttft"], "expected_out_of_sample"] == c.loc[["x-tpot", "x-ttft"], "expected"]).all()
    why = c.loc[["x-model", "x-batch", "x-metric", "x-unit", "x-instance"], "not_modelled_because"]
    assert not c.loc[why.index, "modelled"].any()
    assert "falcon-180b" in why["x-model"] and why["x-batch"] == "batch not stated"
    assert "output_tokens_per_s" in why["x-metric"] and "fortnights" in why["x-unit"] and "p5.48xlarge" in why["x-instance"]
    s = reality.summary().set_index("set")
    assert s.loc["all"].to_dict() == before.to_dict()                          # the fit's figures: calibration sets only
    assert s.loc["outside the calibration sets", "n_rows"] == 3


def test_a_calibration_row_the_model_cannot_take_still_raises(with_rows):
    with pytest.raises(ValueError, match="model must be one of"):
        with_rows({"bad": dict(set="nxdi_trn2_tutorials", model="falcon-180b")})


def test_serving_expectations_pad_to_nxd_inference_automatic_buckets_by_default():
    # AWS, NxD Inference Features Configuration Guide, "Automatic Bucketing" (aws-nxdi-features):
    # context-encoding and token-generation buckets are the powers of two from 128 up
    assert [reality.auto_bucket_tokens(n) for n in (1, 128, 129, 512, 10_000)] == [128, 128, 256, 512, 16384]
    short = reality.prefill("llama3-8b", "trn2", tp=8, prompt_tokens=60)
    exact = reality.prefill("llama3-8b", "trn2", tp=8, prompt_tokens=60, bucket_tokens=None)
    padded = reality.prefill("llama3-8b", "trn2", tp=8, prompt_tokens=60, bucket_tokens=128)
    assert short.expected_s == padded.expected_s > exact.expected_s and short.bound_s == exact.bound_s
    d = reality.decode("llama3-70b", "trn2", tp=64, batch=1, context_len=10_000)
    assert d.expected_s == reality.decode("llama3-70b", "trn2", tp=64, batch=1, context_len=10_000,
                                          bucket_len=16384).expected_s
    with pytest.raises(ValueError, match="bucket_tokens"):
        reality.prefill("llama3-8b", "trn2", tp=8, prompt_tokens=60, bucket_tokens="largest")


def test_training_tp_collectives_pay_the_in_graph_latency():
    # issue 38: training's TP collectives are in-graph collectives too. Llama 3.1 8B at TP 32 on Trn1
    # (sequence parallel): per micro-batch and layer four all-reduces, each launched as a
    # reduce-scatter and an all-gather, each a fixed cost plus its algorithm's hops: 64 MiB is above
    # AWS's 56 MB, so KangaRing, 32 / 2 = 16 hops for an all-gather
    from trainium_lab import collectives

    lay = reality._layout("llama3-8b", "trn1.32xlarge", 32, 32, 1, 32, 8192, 1024, 1, 1)
    assert lay.sequence_parallel and lay.n_micro_batches == 32
    one = reality.parameter("collective_fixed_s") + 16 * reality.parameter("hop_latency_s")
    size = 2.0 * 8192 * lay.model.d_model
    assert collectives.neuron_collective("all_gather", size, n_ranks=32, system="trn1.32xlarge").latency_s == \
        pytest.approx(one, rel=1e-12)
    assert reality._training_tp_latency_s(lay, "trn1.32xlarge") == pytest.approx(32 * 4 * 32 * 2 * one, rel=1e-12)
    # a larger in-graph cost slows the step, and the 8B run (more launches per second of step) most
    kw = dict(n_systems=32, seq_len=8192, global_batch=1024)
    runs = {"llama3-8b": dict(tp=32, pp=1, dp=32), "llama3-70b": dict(tp=32, pp=8, dp=4)}
    slow = {m: reality._training(m, "trn1.32xlarge", **kw, **d, fixed_s=1e-3).expected_tokens_per_s
            / reality._training(m, "trn1.32xlarge", **kw, **d).expected_tokens_per_s for m, d in runs.items()}
    assert slow["llama3-8b"] < slow["llama3-70b"] < 1


def test_training_computes_the_kv_projections_nxd_replicates():
    # AWS, NxD training API reference (aws-nxd-training-api): GQAQKVColumnParallelLinear replicates
    # the K and V weights kv_size_multiplier times; the 70B Trn1 pre-training tutorial sets 4 at TP 32.
    # Llama 3 8B (8 KV heads of 128, d 4096, 32 layers): 3 extra copies, 6·3·2·4096·1024·32 FLOPs per
    # token against 6N + 8·L·s·d
    lay = reality._layout("llama3-8b", "trn1.32xlarge", 32, 32, 1, 32, 8192, 1024, 1, 1)
    extra = 6 * 3 * 2 * 4096 * 8 * 128 * 32
    assert reality._replicated_kv_flops_share(lay) == pytest.approx(
        extra / (6 * 8e9 + 8 * 32 * 8192 * 4096), rel=1e-12)
    assert reality._replicated_kv_flops_share(reality._layout("llama3-8b", "trn1.32xlarge", 32, 8, 4, 32,
                                                               8192, 1024, 1, 1)) == 0.0
