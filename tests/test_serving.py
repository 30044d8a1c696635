"""Tests for trainium_lab.serving: published worked numbers, identities, properties, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainium_lab import collectives, cores, reality, roofline, serving as sv, specs, topology
from trainium_lab.layouts import custom_model
from trainium_lab.units import GB, GiB, KiB, MB, MiB


# --- published worked numbers ----------------------------------------------------------------

def test_vllm_paper_opt13b_kv_cache_is_800_kb_per_token():
    """Kwon et al. 2023 (vLLM, SOSP 2023, arXiv:2309.06180), §3 "Large KV cache": for OPT-13B
    "the KV cache of a single token demands 800 KB of space, calculated as 2 (key and value
    vectors) × 5120 (hidden state size) × 40 (number of layers) × 2 (bytes per FP16)", and
    "as much as 1.6 GB" for a 2,048-token request. OPT-13B's published shape: 40 layers,
    hidden size 5120, 40 attention heads (head dimension 128), no grouped-query attention.
    The paper's KB is 1,024 bytes (2·5120·40·2 = 819,200 B); its GB is 10^9 bytes."""
    per_token = sv.kv_cache_bytes_per_token(n_layers=40, n_kv_heads=40, head_dim=128, bytes_per_element=2)
    assert per_token == 2 * 5120 * 40 * 2 == 800 * KiB
    assert sv.kv_cache_bytes(per_token, 2048) / GB == pytest.approx(1.6, rel=0.05)
    # the same through a model shape (OPT-13B as a custom model: only the KV shape matters here)
    opt = custom_model("OPT-13B", n_layers=40, d_model=5120, n_heads=40, vocab_size=50272, seq_len=2048)
    assert sv.model_kv_bytes_per_token(opt, "float16") == 800 * KiB


def test_llama31_8b_kv_cache_is_128_kib_per_token_in_bf16():
    """Llama 3.1 8B's published shape (Meta, llama-models sku_list; Llama 3 paper Table 3):
    32 layers, 32 query heads of dimension 128 (d_model 4096), 8 KV heads (grouped-query
    attention): 2 × 32 × 8 × 128 × 2 bytes = 131,072 B = 128 KiB per token in BF16."""
    assert sv.kv_cache_bytes_per_token(32, 8, 128, 2) == 128 * KiB
    assert sv.model_kv_bytes_per_token("llama3-8b", "bfloat16") == 128 * KiB
    p = sv.replica("llama3-8b", tp=1)
    assert p.kv_bytes_per_token == 128 * KiB


@pytest.mark.parametrize("alpha, k, ops, speed", [
    (0.6, 2, 1.53, 1.96), (0.7, 3, 1.58, 2.53), (0.8, 2, 1.23, 2.44),
    (0.8, 5, 1.63, 3.69), (0.9, 2, 1.11, 2.71), (0.9, 10, 1.60, 6.86),
])
def test_leviathan_table_1(alpha, k, ops, speed):
    """Leviathan, Kalman and Matias 2023 (ICML, arXiv:2211.17192), Table 1: total arithmetic
    operations and inference speed against the baseline for α and γ (= k), assuming
    c = ĉ = 0, printed to two decimals. Speed is Theorem 3.8, operations Theorem 3.11."""
    assert round(sv.speculative_speedup(alpha, k, c=0.0), 2) == speed
    assert round(sv.speculative_operations_factor(alpha, k, c_hat=0.0), 2) == ops


def test_leviathan_alpha_08_k5_expected_tokens_and_speedup():
    """Leviathan et al. 2023, Equation (1) and Theorem 3.8: α = 0.8, γ = 5 gives
    (1 − 0.8⁶)/(1 − 0.8) = 3.68928 ≈ 3.69 tokens per target pass, and with a free draft
    (c = 0) the walltime improvement equals it (Table 1: 3.69X)."""
    e = sv.expected_tokens_per_pass(0.8, 5)
    assert e == pytest.approx((1 - 0.8 ** 6) / 0.2) and round(e, 2) == 3.69
    assert sv.speculative_speedup(0.8, 5, c=0.0) == pytest.approx(e)
    # a draft costing 5 % of a target step (the paper's experiments had c < 0.05)
    assert sv.speculative_speedup(0.8, 5, c=0.05) == pytest.approx(e / 1.25)


def test_leviathan_corollary_3_9():
    """Leviathan et al. 2023, Corollary 3.9: Theorem 3.8 at γ = 1 is (1 + α)/(1 + c), and
    if α > c that is an improvement (> 1)."""
    for a, c in [(0.8, 0.0), (0.6, 0.1), (0.3, 0.2)]:
        assert sv.speculative_speedup(a, 1, c) == pytest.approx(sv.speculative_speedup_lower_bound(a, c))
        assert sv.speculative_speedup_lower_bound(a, c) > 1
        assert sv.speculative_speedup(a, sv.best_speculation_length(a, c), c) >= \
            sv.speculative_speedup_lower_bound(a, c) - 1e-12
    assert sv.speculative_speedup_lower_bound(0.2, 0.3) < 1
    assert sv.best_speculation_length(0.2, 0.3) == 0


def test_nxd_inference_memory_per_core_matches_the_chip_data():
    """NxD Inference Features Configuration Guide: "On Trn2, each Neuron core has 24GB of
    memory (with logical_neuron_cores set to 2)"; the LNC page: four 24 GB HBM banks per
    Trainium2. The course's chip data (96 GiB, 4 logical cores at LNC=2) gives 24 GiB."""
    assert sv.replica("llama3-8b", "trn2", tp=1, lnc=2).hbm_bytes_per_rank == 24 * GiB
    assert sv.replica("llama3-8b", "trn2", tp=1, lnc=1).hbm_bytes_per_rank == 12 * GiB


# --- the simulation -----------------------------------------------------------------------

@pytest.mark.parametrize("alpha, k, seed", [(0.8, 5, 0), (0.6, 2, 1), (0.9, 10, 2), (0.3, 4, 3),
                                             (0.0, 3, 4), (0.5, 0, 5)])
def test_simulation_agrees_with_equation_1_within_its_standard_error(alpha, k, seed):
    s = sv.simulate_speculation(alpha, k, n_passes=200_000, seed=seed)
    assert abs(s.mean_tokens - s.expected_tokens) <= 3 * s.stderr + 1e-12, s
    assert sum(s.counts) == s.n_passes and len(s.counts) == k + 1
    # the histogram matches the capped geometric distribution (each share within 4 s.e.)
    h = s.histogram()
    se = np.sqrt(h.probability * (1 - h.probability) / s.n_passes)
    assert (np.abs(h.simulated - h.probability) <= 4 * se + 1e-12).all()


def test_simulation_is_seeded_and_detects_a_wrong_formula():
    a = sv.simulate_speculation(0.8, 5, 50_000, seed=7)
    b = sv.simulate_speculation(0.8, 5, 50_000, seed=7)
    assert a == b
    wrong = 0.8 * (1 - 0.8 ** 5) / 0.2    # a common slip: drafted tokens accepted, no bonus token
    assert abs(a.mean_tokens - wrong) > 10 * a.stderr


def test_pmf_sums_to_one_and_has_equation_1_as_mean():
    for a, k in [(0.8, 5), (0.0, 3), (0.99, 20)]:
        pmf = sv.tokens_per_pass_pmf(a, k)
        assert pmf.probability.sum() == pytest.approx(1.0)
        assert (pmf.tokens * pmf.probability).sum() == pytest.approx(sv.expected_tokens_per_pass(a, k))


# --- identities and invariants ----------------------------------------------------------------

def test_kv_replication_follows_nxd_inference():
    """NxD Inference: REPLICATE_TO_TP_DEGREE (8 KV heads at tp=32 become 32) when tp is a
    multiple of the KV heads; CONVERT_TO_MHA when neither divides the other."""
    r = sv.replica("llama3-70b", tp=32)
    assert r.kv_heads_per_rank == 1 and r.kv_bytes_per_token_stored == 4 * r.kv_bytes_per_token
    r = sv.replica("llama3-70b", tp=4)
    assert r.kv_heads_per_rank == 2 and r.kv_bytes_per_token_stored == r.kv_bytes_per_token
    odd = custom_model("odd", n_layers=2, d_model=1536, n_heads=12, n_kv_heads=8)
    r = sv.replica(odd, tp=12)
    assert r.kv_heads_per_rank == 1 and r.kv_bytes_per_token_stored == 12 / 8 * r.kv_bytes_per_token


def test_pipeline_splits_layers_and_weights():
    r = sv.replica("llama3-70b", tp=8, pp=2)
    assert r.layers_per_stage == 40 and r.n_ranks == 16 and r.n_chips == 4
    assert r.weight_bytes_per_rank == pytest.approx(r.weight_bytes / 16)
    assert r.kv_bytes_per_token_per_rank == 20 * KiB


def test_decode_at_batch_1_is_the_weights_over_bandwidth():
    r = sv.replica("llama3-8b", tp=4)                 # one Trainium2 chip
    d = sv.decode_step(r, 1, 0)
    bw = specs.chip("trn2").hbm_bytes_per_s
    assert d.bound == "HBM"
    assert d.memory_s == pytest.approx((r.weight_bytes + r.kv_bytes_per_token) / bw)
    # with no fixed collective cost the expectation still reads NxD Inference's padded and
    # replicated bytes at the used HBM rate: above the implementation-free bound (issue 38)
    z = sv.decode_step(r, 1, 0, latency_s=0.0)
    assert z.time_s > d.bound_s and z.time_s == pytest.approx(d.memory_s + (d.comm_s - 64 * d.collective_fixed_s))
    # scaling-book's general step: KV reads + max(matmuls, weight reads) + 2L fixed all-reduce costs
    assert d.time_s == pytest.approx(d.attention_s + max(d.matmul_s, d.weight_s) + d.comm_s)
    cal = specs.calibration
    # one in-graph fixed cost plus Mesh's two hops (four ranks of one Trainium2 chip)
    assert d.n_collectives == 2 * 32 and d.collective_fixed_s == pytest.approx(
        cal("collective_fixed_s").value + 2 * cal("hop_latency_s").value)
    # the bound: exact weights and one KV cache at the larger published HBM rate (3.0 TB/s), plus
    # one hop of the smallest published latency per all-reduce
    hop = cal("hop_latency_min_s").value
    floor = (sv.exact_weight_bytes(r) + r.kv_bytes_per_token) / (3.0e12 / 4 * r.tp)
    assert d.bound_s == pytest.approx(floor + 64 * hop + (d.comm_s - 64 * d.collective_fixed_s))
    assert d.bound_s < d.time_s


def test_compute_bound_batch_is_the_ridge_point_at_zero_context():
    """With no context, B* = W·P/(BW·F): the chip's ridge point (chapter 01) times
    bytes per weight over FLOPs per weight per token (2 over 2 in BF16), up to the input
    embedding (a lookup, no FLOPs) and the one KV token written."""
    r = sv.replica("llama3-70b", tp=8)
    ridge = roofline.ridge_point("trn2", "bf16")
    b0 = sv.decode_compute_bound_batch(r, 0)
    assert b0 == pytest.approx(ridge, rel=0.02)
    # at B* the compute and memory times are equal (to the rounding of a fractional batch)
    for ctx in (0, 128, 512):
        b = sv.decode_compute_bound_batch(r, ctx)
        lo, hi = sv.decode_step(r, math.floor(b), ctx), sv.decode_step(r, math.ceil(b), ctx)
        assert lo.bound == "HBM" and hi.bound == "tensor engine"
    # long contexts: the KV reads alone outlast the compute, at every batch
    assert sv.decode_compute_bound_batch(r, 8192) == math.inf
    assert sv.decode_step(r, 4096, 8192).bound == "HBM"


def test_fp8_weights_double_the_compute_bound_batch_relative_to_bytes():
    bf16 = sv.replica("llama3-70b", tp=8)
    fp8 = sv.replica("llama3-70b", tp=8, weight_dtype="float8_e4m3fn")
    assert sv.decode_compute_bound_batch(fp8, 0) == pytest.approx(sv.decode_compute_bound_batch(bf16, 0) / 2)


def test_pipeline_stages_run_in_turn_and_micro_batches_fill_them():
    tp8 = sv.replica("llama3-70b", tp=8)
    tp8pp2 = sv.replica("llama3-70b", tp=8, pp=2)
    tp16 = sv.replica("llama3-70b", tp=16)
    a = sv.decode_step(tp8pp2, 4, 1024, latency_s=0.0)
    b = sv.decode_step(tp8, 4, 1024, latency_s=0.0)
    assert a.time_s == pytest.approx(b.time_s)        # same bytes at the same active bandwidth
    c = sv.decode_step(tp16, 4, 1024, latency_s=0.0)
    # twice the active bandwidth; TP 16 stores each of the 8 K/V projections twice (replicated
    # to the ranks), which costs it a few per cent
    assert a.time_s / 2 < c.time_s < a.time_s / 2 * 1.06
    assert c.weight_bytes == pytest.approx(b.weight_bytes + tp16.replicated_kv_weight_bytes)
    two = sv.decode_step(tp8pp2, 4, 1024, micro_batches=2, latency_s=0.0)
    assert two.tokens_per_s == pytest.approx(2 * a.tokens_per_s)
    with pytest.raises(ValueError, match="micro_batches"):
        sv.decode_step(tp8pp2, 4, 1024, micro_batches=3)


def test_tp_allreduce_uses_chapter_03_at_the_level_the_group_lands_on():
    r = sv.replica("llama3-70b", tp=64)                # 16 chips: one trn2.48xlarge
    p = topology.place(64, 1, 1, system="trn2.48xlarge", lnc=2)
    assert p.level("tp").name == "instance"
    one = collectives.group_collective_s(p, "tp", 8 * 8192 * 2)
    assert sv.tp_allreduce_s(r, 8) == pytest.approx(2 * 80 * one)
    # with the latency term: 2(n−1) steps per all-reduce, 2 per layer
    assert sv.tp_allreduce_s(r, 8, latency_s=1e-6) == pytest.approx(2 * 80 * (one + 2 * 15 * 1e-6))
    assert sv.tp_allreduce_s(sv.replica("llama3-8b", tp=4), 8) == 0.0   # inside one chip
    # 64 chips: the UltraServer ring, slower than the instance torus
    big = sv.replica("llama3-405b", tp=128, pp=2)
    assert sv.tp_allreduce_s(big, 8) > 0
    with pytest.raises(ValueError, match="system"):
        sv.tp_allreduce_s(r, 8, system="trn1.32xlarge")


def test_capacity_accounting():
    r = sv.replica("llama3-8b", tp=4)
    c = sv.capacity(r, 8192, block_size=32, n_neffs=4, neff_bytes=100 * MiB, reserve_bytes=GiB,
                    kv_cap_fraction=1.0)
    assert c.budget_bytes == pytest.approx(0.9 * 24 * GiB) and not c.cap_binds
    assert c.microcode_bytes == 2 * 96 * MB              # LNC=2: two physical cores
    assert c.kv_budget_bytes == pytest.approx(c.budget_bytes - c.weight_bytes - c.microcode_bytes
                                              - 400 * MiB - GiB)
    assert c.max_sequences * c.kv_bytes_per_sequence <= c.kv_budget_bytes \
        < (c.max_sequences + 1) * c.kv_bytes_per_sequence
    t = c.table()
    assert set(t["where"]) == {"per logical core", "per chip"}
    per_chip = t[t["where"] == "per chip"].bytes.sum()
    assert per_chip == pytest.approx(4 * t[t["where"] == "per logical core"].bytes.sum())
    # ten large NEFFs and nothing fits although the weights do
    assert r.weight_bytes_per_rank < c.budget_bytes
    assert not sv.capacity(r, 8192, n_neffs=10, neff_bytes=2 * GiB).fits
    # a reservation of max_num_seqs × max_model_len
    ok = sv.capacity(r, 4096, max_num_seqs=16)
    assert ok.reservation_fits and ok.reserved_kv_bytes == 16 * ok.kv_bytes_per_sequence
    assert not sv.capacity(r, 131072, max_num_seqs=16).reservation_fits


def test_vllm_neuron_default_kv_budget_policy():
    """vLLM Neuron, "determine_available_memory design" (AWS Neuron docs v2.33.0, 2026-10-07):
    per logical core, total_budget = logical-core HBM × gpu_memory_utilization, user_budget =
    total_budget − model_weight_bytes, heuristic_cap = total_budget × cap_fraction,
    available = max(min(user_budget, heuristic_cap), 0), "The default cap_fraction is 0.30".
    Llama 3 8B on one Trainium2 (TP 4, LNC=2): 24 GiB × 0.9 = 21.6 GiB; the cap, 6.48 GiB, is
    far below the 17.7 GiB the weights leave, so it sets the KV budget. Llama 3 70B at TP 8
    leaves only ~5 GiB beside its weights: there the cap does not bind."""
    assert sv.serving_fact("kv_budget_cap_fraction_default") == pytest.approx(0.30)
    small = sv.capacity(sv.replica("llama3-8b", tp=4), 8192)
    assert small.cap_binds and small.kv_budget_bytes == pytest.approx(0.30 * 0.9 * 24 * GiB)
    assert small.max_sequences == int(0.30 * 0.9 * 24 * GiB // (8192 * 32 * KiB)) == 25
    uncapped = sv.capacity(sv.replica("llama3-8b", tp=4), 8192, kv_cap_fraction=1.0)
    assert uncapped.max_sequences == 70 and not uncapped.cap_binds
    big = sv.capacity(sv.replica("llama3-70b", tp=8), 8192)
    assert not big.cap_binds
    assert big.max_sequences == sv.capacity(sv.replica("llama3-70b", tp=8), 8192, kv_cap_fraction=1.0).max_sequences
    with pytest.raises(ValueError, match="kv_cap_fraction"):
        sv.capacity(sv.replica("llama3-8b", tp=4), 8192, kv_cap_fraction=0.0)


def test_paged_blocks_round_up():
    assert sv.paged_kv_blocks(0, 32) == 0
    assert sv.paged_kv_blocks(1, 32) == 1
    assert sv.paged_kv_cache_bytes(100.0, 33, 32, batch=2) == 2 * 64 * 100.0


def test_serve_stream_cycle():
    r = sv.replica("llama3-8b", tp=4)
    s = sv.serve_stream(r, 1000, 200, concurrency=16)
    pre = sv.prefill_step(r, 1000)
    dec = sv.decode_step(r, 16, 1100)
    assert s.ttft_s == pre.time_s and s.decode_step_s == dec.time_s
    cycle = 200 * dec.time_s + 16 * pre.time_s
    assert s.tpot_s == pytest.approx(cycle / 200)
    assert s.tokens_per_s == pytest.approx(16 * 200 / cycle)
    assert s.requests_per_s == pytest.approx(s.tokens_per_s / 200)
    # vLLM Neuron's default decode NEFF reads the whole max_model_len
    padded = sv.serve_stream(r, 1000, 200, 16, kv_read_len=8192)
    assert padded.tpot_s > s.tpot_s
    with pytest.raises(ValueError, match="kv_read_len"):
        sv.serve_stream(r, 1000, 200, 16, kv_read_len=1100)


def test_batching_curve_trades_latency_for_throughput():
    c = sv.batching_curve(sv.replica("llama3-8b", tp=4), 512, 256, [1, 4, 16, 64, 256], max_sequences=64)
    assert c.tokens_per_s.is_monotonic_increasing and c.tpot_ms.is_monotonic_increasing
    assert c.fits.tolist() == [True, True, True, True, False]


def test_buckets():
    assert sv.bucket_sizes(16384) == tuple(2 ** i for i in range(7, 15))
    assert sv.bucket_sizes(100) == (100,)
    assert sv.pick_bucket(129, sv.bucket_sizes(4096)) == 256
    lengths = [130, 700, 3000]
    waste = sv.bucket_tradeoff(lengths, 4096, [1, 2, 4, 8], 1e8)
    assert waste.padding_waste.iloc[0] == pytest.approx(1 - sum(lengths) / (3 * 4096))
    assert waste.padding_waste.is_monotonic_decreasing
    assert waste.neff_bytes.tolist() == [n * 1e8 for n in waste.n_buckets]


def test_seed_style_launch_check():
    """A launch circulating in a third-party write-up: Llama-3.1-70B, TP 8 × PP 2 on "16
    Trainium2 chips", NEURON_RT_NUM_CORES=32, max-model-len 16384, block-size 32."""
    c = sv.check_launch("llama3-70b", n_chips=16, tp=8, pp=2, num_cores=32, max_model_len=16384,
                        block_size=32)
    assert c.n_ranks == 16 and c.logical_cores_available == 64 and c.num_cores == 32
    assert not c.ranks_match_num_cores and not c.num_cores_match_chips
    assert c.chips_for_ranks == 4 and c.lnc == 2
    assert c.capacity.fits and c.capacity.kv_bytes_per_sequence == 16384 * 20 * KiB
    assert not c.pp_listed
    assert c.alternative_tp == 64 and c.decode_alternative.time_s < c.decode_batch1.time_s
    assert "NEURON_RT_NUM_CORES" in c._repr_markdown_()


def test_trn3_decodes_faster_by_its_hbm_bandwidth():
    t = sv.chip_decode_table("llama3-70b", 16, 1, 1024)
    from trainium_lab import collectives

    ratio = (collectives._largest_published(specs.chip("trn3"), "hbm_bytes_per_s")
             / collectives._largest_published(specs.chip("trn2"), "hbm_bytes_per_s"))
    # the HBM side of the bound scales with the larger published bandwidth (4.9 and 3.0 TB/s);
    # the 160 one-hop latencies do not
    hops = 160 * specs.calibration("hop_latency_min_s").value * 1e3
    assert (t.bound_ms.iloc[0] - hops) / (t.bound_ms.iloc[1] - hops) == pytest.approx(ratio, rel=2e-3)
    # expected: the same fixed all-reduce cost on both (Trainium3 carries Trainium2's), so far less than the ratio
    assert 1 < t.step_ms.iloc[0] / t.step_ms.iloc[1] < 1.2
    assert (t.bound == "HBM").all()


def test_roofline_points_sit_on_the_roof():
    r = sv.replica("llama3-70b", tp=64)
    pts = sv.roofline_points(r, batches=[1, 64], prompts=[4096])
    bw, peak = specs.chip("trn2").hbm_bytes_per_s, specs.chip("trn2").dense_flops_per_s["bf16"]
    roof = np.minimum(peak, pts.intensity * bw) / 1e12
    assert np.allclose(pts.tflop_per_s, roof)


def test_speculative_decode_reduces_to_theorem_3_8_while_hbm_bound():
    t, d = sv.replica("llama3-70b", tp=32), sv.replica("llama3-8b", tp=32)
    e = sv.speculative_decode(t, d, 0.8, 4, batch=1, context_len=512)
    assert e.verify_cost == pytest.approx(1.0, abs=0.01)
    assert e.speedup == pytest.approx(sv.speculative_speedup(0.8, 4, e.c), rel=0.01)
    big = sv.speculative_decode(t, d, 0.8, 4, batch=256, context_len=512)
    assert big.verify_cost > 1.5 and big.speedup < e.speedup


def test_serving_facts_are_sourced():
    assert sv.serving_fact("microcode_bytes_per_physical_core") == 96 * MB
    assert sv.serving_fact("auto_bucket_min_tokens") == 128
    df = specs.read_data_csv("serving.csv")
    assert df.source.str.len().min() > 0


# --- properties ---------------------------------------------------------------------------------

alphas = st.floats(min_value=0.0, max_value=0.999, allow_nan=False)
ks = st.integers(min_value=0, max_value=64)


@given(alphas, ks)
def test_expected_tokens_between_1_and_k_plus_1(a, k):
    e = sv.expected_tokens_per_pass(a, k)
    assert 1.0 - 1e-9 <= e <= k + 1 + 1e-9
    assert sv.expected_tokens_per_pass(a, k + 1) >= e - 1e-12


@given(st.floats(min_value=0.0, max_value=0.98), st.floats(min_value=0.001, max_value=0.01), ks,
       st.floats(min_value=0.0, max_value=1.0))
def test_speedup_grows_with_alpha_and_falls_with_cost(a, da, k, c):
    assert sv.speculative_speedup(a + da, k, c) >= sv.speculative_speedup(a, k, c) - 1e-12
    assert sv.speculative_speedup(a, k, c + 0.1) <= sv.speculative_speedup(a, k, c) + 1e-12


@settings(max_examples=40)
@given(st.integers(min_value=1, max_value=512), st.integers(min_value=0, max_value=32768),
       st.sampled_from(["llama3-8b", "llama3-70b"]))
def test_decode_time_grows_with_batch_and_context(b, ctx, model):
    r = sv.replica(model, tp=8)
    d = sv.decode_step(r, b, ctx, latency_s=0.0)
    assert sv.decode_step(r, b + 1, ctx, latency_s=0.0).time_s >= d.time_s
    assert sv.decode_step(r, b, ctx + 256, latency_s=0.0).time_s >= d.time_s
    assert sv.decode_step(r, b + 1, ctx, latency_s=0.0).tokens_per_s >= d.tokens_per_s - 1e-9


@settings(max_examples=40)
@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=1, max_value=4096))
def test_paged_cache_holds_the_context_with_less_than_a_block_spare(ctx, bs):
    slots = sv.paged_kv_blocks(ctx, bs) * bs
    assert ctx <= slots < ctx + bs


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [-0.1, 1.0, 1.5, float("nan"), "0.8", None])
def test_alpha_outside_0_1_raises(alpha):
    with pytest.raises(ValueError, match="alpha"):
        sv.expected_tokens_per_pass(alpha, 5)
    with pytest.raises(ValueError, match="alpha"):
        sv.simulate_speculation(alpha, 5, 100)


@pytest.mark.parametrize("k", [-1, 2.5, "5", None])
def test_negative_k_raises(k):
    with pytest.raises(ValueError, match="k"):
        sv.speculative_speedup(0.8, k)


def test_zero_bandwidth_raises():
    with pytest.raises(ValueError, match="hbm_bytes_per_s"):
        sv.step_bound(1e9, 1e9, 1e15, 0.0)
    with pytest.raises(ValueError, match="peak_flops_per_s"):
        sv.step_bound(1e9, 1e9, 0, 1e12)


def test_context_above_max_model_len_raises():
    r = sv.replica("llama3-8b", tp=4)
    with pytest.raises(ValueError, match="context_len"):
        sv.decode_step(r, 1, 4097, max_model_len=4096)
    with pytest.raises(ValueError, match="context_len"):
        sv.paged_kv_blocks(4097, 32, max_model_len=4096)
    with pytest.raises(ValueError, match="context_len"):
        sv.serve_stream(r, 4000, 200, 8, max_model_len=4096)
    with pytest.raises(ValueError, match="prompt_tokens"):
        sv.prefill_step(r, 5000, max_model_len=4096)


@pytest.mark.parametrize("call, name", [
    (lambda: sv.replica("llama3-70b", tp=-8), "tp"),
    (lambda: sv.replica("llama3-8b", pp=33), "pp"),
    (lambda: sv.replica("llama3-8b", chip="trn3", lnc=4), "lnc"),   # Trn3: LNC 1 or 2 (default 2, inferred)
    (lambda: sv.replica("llama3-8b", lnc=3), "lnc"),
    (lambda: sv.replica("llama3-8b", weight_dtype="int3"), "weight_dtype"),
    (lambda: sv.replica("llama3-8b", chip="trn2", lnc=2, compute_dtype="mxfp8"), "compute_dtype"),
    (lambda: sv.replica("gpt-5"), "model"),
    (lambda: sv.decode_step("llama3-8b", 1, 10), "rep"),
    (lambda: sv.decode_step(sv.replica("llama3-8b"), 0, 10), "batch"),
    (lambda: sv.capacity(sv.replica("llama3-8b"), 1024, memory_utilization=1.5), "memory_utilization"),
    (lambda: sv.capacity(sv.replica("llama3-8b"), 1024, neff_bytes=-1), "neff_bytes"),
    (lambda: sv.prefill_step(sv.replica("llama3-8b"), 128, efficiency=0), "efficiency"),
    (lambda: sv.kv_cache_bytes_per_token(32, 8, 0), "head_dim"),
    (lambda: sv.speculative_speedup(0.8, 5, c=-0.1), "c"),
    (lambda: sv.simulate_speculation(0.8, 5, n_passes=0), "n_passes"),
    (lambda: sv.pick_bucket(5000, (128, 4096)), "n_tokens"),
    (lambda: sv.check_launch("llama3-70b", 16, 8, 2, 32, max_model_len=0), "max_model_len"),
    (lambda: sv.serving_fact("nope"), "quantity"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_kv_bound_context_len_is_where_the_compute_bound_batch_becomes_infinite():
    r = sv.replica("llama3-70b", tp=8)
    c = sv.kv_bound_context_len(r)
    assert math.isfinite(sv.decode_compute_bound_batch(r, math.floor(c) - 1))
    assert sv.decode_compute_bound_batch(r, math.ceil(c) + 1) == math.inf
    # a model whose GQA group is as large as the ridge point: attention keeps pace with KV reads
    wide = custom_model("wide", n_layers=2, d_model=512 * 128, n_heads=512, n_kv_heads=1, vocab_size=100)
    assert sv.kv_bound_context_len(sv.replica(wide, tp=1)) == math.inf


# --------------------------------------------------------------------- issue 28: what NxDI and vLLM Neuron do


def test_speculation_methods_as_the_libraries_state_them():
    """vLLM Neuron features guide (2026-08-13): "EAGLE3 and DFlash are supported speculative methods";
    vLLM Neuron README known issue 5: draft-model speculation only on the legacy v0 fork; NxD Inference
    feature guide: draft models, fused speculation, EAGLE and Medusa."""
    t = sv.speculation_methods()
    vllm = t[t.library == "vLLM Neuron plugin"]
    assert set(vllm.method) == {"EAGLE3", "DFlash"} and set(vllm.status) == {"supported"}
    assert t[(t.method == "draft model") & (t.library.str.contains("legacy"))].status.tolist() == ["legacy"]
    assert {"draft model", "fused speculation", "EAGLE", "Medusa"} <= set(t[t.library == "NxD Inference"].method)


def test_eagle_draft_is_one_layer_and_cheaper_than_a_draft_model():
    """EAGLE (Li et al. 2024) drafts with one decoder layer and the target's LM head: its c is a fraction
    of an 8B draft's for a 70B target (Chen et al. 2023 / Leviathan et al. 2023: speed-up E[T]/(k·c + 1))."""
    t70 = sv.replica("llama3-70b", tp=32)
    eagle = sv.replica(sv.eagle_draft_model("llama3-70b"), tp=32)
    d8 = sv.replica("llama3-8b", tp=32)
    e_eagle = sv.speculative_decode(t70, eagle, alpha=0.8, k=5, batch=1, context_len=2048)
    e_draft = sv.speculative_decode(t70, d8, alpha=0.8, k=5, batch=1, context_len=2048)
    assert e_eagle.c < e_draft.c and e_eagle.speedup > e_draft.speedup
    assert sv.eagle_draft_model("llama3-70b").n_layers == 1


def test_attention_intensity_is_the_gqa_group_and_weights_turn_compute_bound_near_the_ridge():
    """scaling-book (inference, "Theoretical step time (general)"): attention reads its KV per sequence,
    4·a·d FLOPs per 2·g·d·2 bytes = a/g in BF16 (8 for Llama 3 70B); weights do 2·B FLOPs per 2 bytes,
    compute-bound at B = ridge ≈ 230 on Trn2, whatever the context; FP8/INT8 weights with BF16 compute halve it."""
    assert sv.attention_decode_intensity("llama3-70b") == 64 / 8
    assert sv.attention_decode_intensity("llama3-8b") == 32 / 8
    trn2 = specs.chip("trn2")
    ridge = trn2.dense_flops_per_s["bfloat16"] / trn2.hbm_bytes_per_s
    assert sv.weight_critical_batch("trn2") == pytest.approx(ridge)
    assert sv.weight_critical_batch("trn2", 1.0) == pytest.approx(ridge / 2)
    t = sv.quantized_weights_table("llama3-70b", tp=8)
    assert t.weight_bytes.iloc[1] == t.weight_bytes.iloc[0] / 2 == t.weight_bytes.iloc[2]


def test_static_fp8_keeps_the_critical_batch_that_weight_only_int8_halves():
    """vLLM Neuron's Llama 3 recipe (Neuron 2.32, model-recipes/llama-3.md, "Quantization"): static FP8
    weights, activations and KV scales, FP8 matmuls. B* = (P/BW)·b_w/2: with b_w = 1 byte at the FP8 peak
    it is ridge_fp8/2 (≈ 224 on Trn2, near BF16's 230); INT8 weight-only at the BF16 peak gives ridge_bf16/2."""
    trn2 = specs.chip("trn2")
    t = sv.quantization_modes_table("llama3-70b", "trn2", tp=8).set_index("mode")
    assert list(t.index) == list(sv.QUANTIZATION_MODES)
    bw = trn2.hbm_bytes_per_s
    assert t.critical_batch["fp8-static"] == pytest.approx(trn2.dense_flops_per_s["fp8"] / bw / 2)
    assert t.critical_batch["int8-weight-only"] == pytest.approx(t.critical_batch["bf16"] / 2)
    assert t.critical_batch["fp8-static"] > 1.9 * t.critical_batch["int8-weight-only"]
    assert t.ridge_flop_per_byte["fp8-static"] > 1.9 * t.ridge_flop_per_byte["bf16"]
    assert t.weight_bytes_per_rank["fp8-static"] == t.weight_bytes_per_rank["bf16"] / 2 \
        == t.weight_bytes_per_rank["int8-weight-only"]
    assert t.attention_flop_per_byte["fp8-static"] == 2 * t.attention_flop_per_byte["bf16"]
    with pytest.raises(ValueError, match="tp"):
        sv.quantization_modes_table("llama3-70b", "trn2", tp=0)
    # the Llama 3 recipe's modes are modes the table models
    assert set(sv.serving_fact("vllm_neuron_llama3_quantization")) == {"bf16", "fp8-static"} <= set(t.index)


def test_vllm_neuron_instance_pages_and_scheduler():
    """2.32 snapshot: the set-up guide names trn2/trn3 (as the status table does); one profiling page names Inf2;
    the scheduler prefills one request per iteration."""
    from trainium_lab import components
    assert sv.serving_fact("vllm_neuron_instances_setup_guide") == components.component("vllm-neuron").chips
    assert "inf2" in sv.serving_fact("vllm_neuron_instances_profiling_page")
    assert "inf2" not in components.component("vllm-neuron").chips
    assert sv.serving_fact("vllm_neuron_prefills_per_iteration") == 1
    # vLLM Neuron's TP design replicates KV heads past their count, as serving.replica models (TP 16, 8 KV heads: 2 copies)
    assert sv.serving_fact("vllm_neuron_kv_head_replication") == 1
    r = sv.replica("llama3-70b", "trn2", tp=16)
    assert r.kv_bytes_per_token_stored == 2 * r.kv_bytes_per_token


def test_kv_sharding_options_remove_the_replication():
    """NxD Inference replicates 8 KV heads to 32 at TP 32 (feature guide, REPLICATE_TO_TP_DEGREE: 4 copies);
    flash decoding shards the sequence over the 4 ranks sharing a head, attention DP 4 the batch, DCP 4 the
    context: each stores 1/32 of the cache, and 4× the sequences fit."""
    r = sv.replica("llama3-70b", tp=32)
    rep_ = sv.kv_sharding(r, "replicate")
    assert rep_.copies == 4 and rep_.kv_bytes_per_token_per_rank == pytest.approx(r.kv_bytes_per_token_per_rank)
    for s in ("flash-decoding", "attention-dp", "context-parallel"):
        k = sv.kv_sharding(r, s, 4)
        assert k.copies == 1 and k.kv_bytes_per_token_per_rank == pytest.approx(r.kv_bytes_per_token / 32)
    t = sv.kv_sharding_table(r, 16384, degree=4).set_index("strategy")
    assert t.sequences_fit["flash-decoding"] >= 4 * t.sequences_fit["replicate"]
    # attention DP gathers the hidden states: 2·B·h·2·(d−1)/d bytes per layer
    assert sv.kv_sharding(r, "attention-dp", 4, batch=8).comm_bytes_per_layer == 2 * 8 * 8192 * 2 * 3 / 4
    # flash decoding combines the group's a/g = 8 query heads' outputs plus 2 statistics each
    assert sv.kv_sharding(r, "flash-decoding", batch=8).comm_bytes_per_layer == 8 * 8 * (128 + 2) * 2
    # at TP 8 nothing is replicated: flash decoding has nothing to shard and exchanges nothing
    r8 = sv.replica("llama3-70b", tp=8)
    assert sv.kv_sharding(r8, "replicate").copies == 1 and sv.kv_sharding(r8, "flash-decoding").comm_bytes_per_layer == 0
    with pytest.raises(ValueError, match="strategy"):
        sv.kv_sharding(r, "ring")
    with pytest.raises(ValueError, match="degree"):
        sv.kv_sharding(r, "attention-dp", 3)


def test_shared_scratchpad_neff_memory():
    """Neuron Device Memory: the shared scratchpad is the largest NEFF's, code/constants/DMA rings add up."""
    sp, other = [1.0, 3.0, 2.0], [0.5, 0.5, 0.25]
    assert sv.neff_memory_bytes(sp, other) == 3.0 + 1.25
    assert sv.neff_memory_bytes(sp, other, shared_scratchpad=False) == 6.0 + 1.25
    # adding a bucket no larger than the biggest costs only its own code and constants
    assert sv.neff_memory_bytes(sp + [2.5], other + [0.25]) - sv.neff_memory_bytes(sp, other) == 0.25
    with pytest.raises(ValueError, match="other_bytes"):
        sv.neff_memory_bytes([1.0], [1.0, 2.0])


def test_prefix_cache_model_against_aws_70b_table():
    """AWS, Llama-3.3-70B prefix-caching tutorial (trn2.48xlarge, TP 64; rows in data/measurements.csv,
    set nxdi_trn2_prefix_caching): TTFT with and without prefix caching on four datasets. The model
    f + (1 − f)(1 − h), with f fixed by the >90 %-hit row, must match the ~25 % (1k) and no-hit rows
    within reality.PREFIX_CACHE_TOLERANCE (5 %). The ~25 % (2k) row (1.57×) beats 1/(1 − h) = 1.33,
    which no hit-rate-proportional model can reach: the test pins that it lies outside."""
    t = reality.prefix_cache_check().set_index("dataset")
    assert 0.1 < t.fixed_fraction.iloc[0] < 0.3
    for d in ("math.math", "dynamic sonnet 1k", "HumanEval"):
        assert t.in_range[d] and abs(t.relative_error[d]) < reality.PREFIX_CACHE_TOLERANCE, d
    assert not t.in_range["dynamic sonnet 2k"]
    assert t.measured_speedup["dynamic sonnet 2k"] > t.bound_speedup["dynamic sonnet 2k"]
    assert (t.model_speedup <= t.bound_speedup + 1e-12).all()
    # the TTFTs are the measurement table's rows, the speed-ups AWS prints (rounded) follow from them
    ds = specs.read_data_csv("prefix_cache_datasets.csv").set_index("dataset")
    for d, row in t.iterrows():
        assert row.measured_speedup == pytest.approx(float(ds.speedup_stated[d]), abs=0.006)


def test_prefix_cache_2k_row_is_a_bucket_boundary():
    """Why the 2k row is outside: the tutorial compiles context encoding for 512 1024 2048 4096 8192
    tokens. Prompts just above 2,048 (2,049 to 2,730: not stated, 'sonnet 2k' suggests ~2k) run padded
    to 4,096 without the cache; 25 % cached leaves at most 2,048 uncached, the 2,048 bucket. With the
    same f (from math.math) the padded model gives the measured 1.57x within 5 %; at prompts of 1,500
    or 3,000 tokens (no boundary crossed) it does not."""
    t = reality.prefix_cache_check().set_index("dataset")
    f, measured = t.fixed_fraction.iloc[0], t.measured_speedup["dynamic sonnet 2k"]
    buckets = (512, 1024, 2048, 4096, 8192)
    for p in (2049, 2400, 2730):
        model = 1 / sv.prefix_cache_ttft_ratio(0.25, f, p, buckets)
        assert model == pytest.approx(measured, rel=0.05), p
    for p in (1500, 3000):
        assert 1 / sv.prefix_cache_ttft_ratio(0.25, f, p, buckets) < 0.9 * measured
    with pytest.raises(ValueError, match="together"):
        sv.prefix_cache_ttft_ratio(0.25, f, 2400)


def test_disaggregated_ratio_moe_selective_loading_and_cost():
    """scaling-book's prefill:decode server ratio; NxD Inference MoE deep dive: DeepSeek (256 experts, top-8)
    at batch 16 touches at most 128 experts (about 102 on average), and switches to all experts at
    B·k ≥ α·E (α 0.8–1) — batch 32 for DeepSeek."""
    assert sv.disaggregated_server_ratio(0.5, 0.02, 64, 400) == pytest.approx(4.0)
    assert sv.expected_unique_experts(256, 8, 16) == pytest.approx(256 * (1 - (1 - 8 / 256) ** 16))
    assert sv.expected_unique_experts(256, 8, 16) < 128
    t16 = sv.moe_decode_expert_bytes("deepseek-v3", 16).set_index("strategy")
    t32 = sv.moe_decode_expert_bytes("deepseek-v3", 32).set_index("strategy")
    assert t16.chosen["selective"] and t32.chosen["all-experts"]
    assert t16.bytes_per_layer["all-experts"] == 256 * 3 * 7168 * 2048 * 2
    assert sv.cost_per_million_tokens_usd(1000, 3.6) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="model must be a mixture-of-experts"):
        sv.moe_decode_expert_bytes("llama3-8b", 4)

def test_tp_that_does_not_divide_the_heads_is_padded_and_the_waste_counted():
    # NxD Inference (aws-neuron/neuronx-distributed-inference, modules/attention/gqa.py,
    # get_shardable_head_counts; neuronx_distributed get_number_of_extra_heads = tp - n % tp):
    # Llama 3 70B's 64 heads at TP 24 become 72; 24 is a multiple of the 8 KV heads, so K/V are
    # replicated to one per rank. The Q and O projections grow by 8 heads: 2·8·128·8192·80 weights.
    r = sv.replica("llama3-70b", "trn2", tp=24)
    assert r.padded_heads == 8 and r.kv_heads_per_rank == 1
    assert r.padding_weight_bytes == 2 * 8 * 128 * 8192 * 80 * 2
    # REPLICATE_TO_TP_DEGREE copies the K/V projection weights to every rank (gqa.py's
    # replicate_kv, torch.repeat_interleave before sharding): 24 copies of 8 heads' projections
    assert r.replicated_kv_weight_bytes == 2 * (24 - 8) * 128 * 8192 * 80 * 2
    assert r.weight_bytes == pytest.approx(sv.replica("llama3-70b", "trn2", tp=8).weight_bytes
                                           + r.padding_weight_bytes + r.replicated_kv_weight_bytes)
    # CONVERT_TO_MHA when tp is not a multiple of the KV heads: K/V for every padded head
    m = sv.replica("llama3-70b", "trn2", tp=12)
    assert m.padded_heads == 8 and m.kv_heads_per_rank == 72 // 12


# --------------------------------------------------------------------------- issue 24/28 round 3


def test_inferentia2_serves_llama3_70b_at_tp24_as_aws_compiles_it():
    # aws-neuron/optimum-neuron-cache, inference-cache-config/llama3-70b.json: Llama 3 70B on
    # inf2.48xlarge with num_cores 24 (12 Inferentia2 chips x 2 NeuronCore-v2), bf16, batch 4 at
    # 4,096 tokens (data/serving.csv). 24 does not divide the 64 heads: NxD Inference pads them to
    # 72 and replicates the 8 KV heads to the 24 ranks; both wastes are counted in the weights.
    assert sv.serving_fact("inf2_llama3_70b_num_cores") == 24
    s = specs.system("inf2.48xlarge")
    assert s.n_chips * specs.chip("inf2").neuron_cores == 24          # Inf2 architecture page
    r = sv.replica("llama3-70b", "inf2", tp=24)
    assert r.padded_heads == 8 and r.kv_heads_per_rank == 1 and r.n_chips == 12
    waste = (r.padding_weight_bytes + r.replicated_kv_weight_bytes) / r.weight_bytes
    assert 0.05 < waste < 0.06
    # it fits: AWS's batch 4 at 4,096 tokens in 16 GiB per NeuronCore (32 GiB per chip)
    assert sv.capacity(r, 4096).max_sequences >= 4
    # reality answers for chip="inf2"; the bound holds below the expectation
    d = reality.decode("llama3-70b", "inf2", tp=24, batch=4, context_len=4096)
    p = reality.prefill("llama3-70b", "inf2", tp=24, prompt_tokens=4096)
    assert 0 < d.bound_s < d.expected_s and 0 < p.bound_s < p.expected_s
    # the bound is at least the padded weights over the 12 chips' HBM (820 GiB/s each)
    assert d.bound_s >= r.weight_bytes / (12 * 820 * 2**30)
    with pytest.raises(ValueError, match="tp"):
        reality.decode("llama3-70b", "inf2", tp=32, batch=1, context_len=16)


def test_inferentia2_facts_come_from_the_neuron_docs():
    c = specs.chip("inf2")
    # Inferentia2 page: 190 BF16 TFLOPS, 47.5 FP32, 32 GiB at 820 GiB/s; NKI guide: 2 NeuronLink-v2
    assert c.dense_flops_per_s["bf16"] == 190e12 and c.dense_flops_per_s["fp32"] == 47.5e12
    assert c.hbm_bytes == 32 * 2**30 and c.hbm_bytes_per_s == 820 * 2**30
    assert c.neuronlink_ports == 2 and c.core_version == "NeuronCore-v2" and c.lnc_options == ()
    assert c.efa_bytes_per_s is None                                  # not published
    # Inf2 architecture page: the four sizes
    sizes = {k: (specs.system(k).n_chips, specs.system(k).hbm_bytes_total / 2**30)
             for k in ("inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge")}
    assert sizes == {"inf2.xlarge": (1, 32), "inf2.8xlarge": (1, 32), "inf2.24xlarge": (6, 192),
                     "inf2.48xlarge": (12, 384)}
    assert specs.system("inf2.48xlarge").dense_flops_per_s_total["bf16"] == 12 * c.dense_flops_per_s["bf16"]
    # Trainium-only lists stay Trainium; the serving lookups see Inferentia2
    assert "inf2" not in [x.key for x in specs.chips()]
    assert "inf2" in [x.key for x in specs.chips(include_inferentia=True)]
    with pytest.raises(ValueError, match="include_inferentia"):
        specs.chips(include_inferentia="yes")


def test_one_step_model_reality_decode_is_serving_decode_step():
    # issue 24: the latency-aware step has one home; reality.decode reports its bound and expectation
    for chip, tp in (("trn2", 64), ("trn1", 32), ("inf2", 24)):
        r = sv.replica("llama3-70b", chip, tp=tp)
        d = sv.decode_step(r, 2, 4096)
        e = reality.decode("llama3-70b", chip, tp=tp, batch=2, context_len=4096)
        assert (e.bound_s, e.expected_s) == (d.bound_s, d.expected_s)
        # issue 38: one in-graph fixed cost on every chip, plus the hops of the algorithm the
        # runtime picks by size, at AWS's per-hop latency (a small all-reduce: Mesh, 2 hops)
        cal = specs.calibration
        hops = 2
        want = cal("collective_fixed_s").value + hops * cal("hop_latency_s").value
        assert d.collective_fixed_s == pytest.approx(want)
        assert d.n_collectives == 160


def test_kv_layouts_add_their_exchange_to_the_decode_step():
    # issue 28 item 2: flash decoding, attention DP and CP shrink the KV each rank reads but add
    # an exchange per layer (kv_sharding's bytes, one fixed collective cost each)
    r = sv.replica("llama3-70b", "trn2", tp=32)
    base = sv.decode_step(r, 8, 16384)
    for layout, per_layer in (("flash-decoding", 1), ("attention-dp", 2), ("context-parallel", 1)):
        d = sv.decode_step(r, 8, 16384, kv_layout=layout, kv_degree=4)
        k = sv.kv_sharding(r, layout, 4, 8)
        assert d.n_collectives == base.n_collectives + per_layer * 80
        assert d.kv_bytes < base.kv_bytes                       # the replicas are gone
        rate = specs.chip("trn2").neuronlink_bytes_per_s
        extra = 80 * (per_layer * d.collective_fixed_s + k.comm_bytes_per_layer / rate)
        assert d.comm_s == pytest.approx(base.comm_s + extra)
        assert d.bound_s <= d.expected_s
    # at a long context the KV saved outweighs the exchange for flash decoding
    assert sv.decode_step(r, 8, 16384, kv_layout="flash-decoding").attention_s < base.attention_s / 3
    with pytest.raises(ValueError, match="strategy"):
        sv.decode_step(r, 8, 1024, kv_layout="sideways")


def test_cost_table_compares_inferentia2_with_the_sourced_prices_only():
    # Issue 28: cost per million generated tokens with Inferentia2 as the comparison. Prices: the
    # inf2 on-demand rates (vantage mirror of AWS Price List, 2026-08-26) and trn1.32xlarge's $21.50;
    # no stored source gives a Trn2 on-demand price, so its cost is NaN, never a guess.
    t = sv.cost_table("llama3-70b", [("trn1.32xlarge", 32), ("trn2.48xlarge", 64), ("inf2.48xlarge", 24)], 4096)
    t = t.set_index("system")
    assert math.isnan(t.usd_per_million_tokens["trn2.48xlarge"]) and t.tokens_per_s["trn2.48xlarge"] > 0
    for s in ("trn1.32xlarge", "inf2.48xlarge"):
        row = t.loc[s]
        assert row.usd_per_hour == specs.system(s).on_demand_usd_per_hour
        assert row.usd_per_million_tokens == pytest.approx(row.usd_per_hour / 3600 / row.tokens_per_s * 1e6)
        assert row.usd_per_million_tokens_floor < row.usd_per_million_tokens   # the bound is a floor
        assert row.tpot_bound_ms < row.tpot_ms
    assert t.usd_per_hour["inf2.48xlarge"] == pytest.approx(12.98127)
    # a whole instance filled with replicas: 4 × TP 16 on a trn2.48xlarge
    assert sv.cost_table("llama3-70b", [("trn2.48xlarge", 16)], 4096).replicas.item() == 4
    with pytest.raises(ValueError, match="tp"):
        sv.cost_table("llama3-70b", [("inf2.48xlarge", 48)], 4096)
    with pytest.raises(ValueError, match="deployments"):
        sv.cost_table("llama3-70b", "inf2.48xlarge", 4096)
