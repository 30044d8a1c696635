"""Tests for trainium_lab.moe (chapter 10): published parameter counts, memory identities under
EP and ZeRO, routing against its closed form, all-to-all per level, compute of active parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainium_lab import collectives, moe, sizing, specs, topology
from trainium_lab.units import GiB

# ----------------------------------------------------------------------------- published counts


def test_mixtral_total_and_active_from_the_parameter_formula():
    """Mistral AI, "Mixtral of experts" (announcement, 11 Dec 2023): 46.7B total parameters,
    12.9B used per token; Jiang et al., "Mixtral of Experts", arXiv:2401.04088, abstract: 47B
    and 13B. Configuration from the paper's Table 1 (dim 4096, 32 layers, 32 heads, 8 KV heads,
    hidden_dim 14336, 8 experts, top-2, vocab 32000)."""
    m = sizing.preset("mixtral-8x7b")
    assert (m.n_layers, m.d_model, m.n_heads, m.n_kv_heads, m.expert_ffn_dim, m.n_experts,
            m.experts_per_token, m.vocab_size) == (32, 4096, 32, 8, 14336, 8, 2, 32000)
    total, active = m.exact_params(), m.exact_active_params()
    assert round(total / 1e9, 1) == 46.7 and round(active / 1e9, 1) == 12.9   # the announcement
    assert round(total / 1e9) == 47 and round(active / 1e9) == 13              # the paper
    assert (total, active) == (46_702_792_704, 12_879_925_248)
    # by hand: 32 × (attention 41,943,040 + 8 experts × 176,160,768 + router 32,768 + norms 8,192)
    # + 2 × 32,000 × 4,096 embeddings + 4,096 final norm
    assert total == 32 * (41_943_040 + 8 * 176_160_768 + 32_768 + 8_192) + 2 * 32_000 * 4_096 + 4_096
    assert active == 32 * (41_943_040 + 2 * 176_160_768 + 32_768 + 8_192) + 2 * 32_000 * 4_096 + 4_096
    assert m.n_params == pytest.approx(total, rel=1e-3)
    assert m.n_active_params == pytest.approx(active, rel=2e-3)


def test_qwen3_235b_total_active_and_non_embedding():
    """Qwen Team, "Qwen3 Technical Report", arXiv:2505.09388, Table 2, and the Qwen/Qwen3-235B-A22B
    model card: 235B parameters in total, 22B activated, 234B non-embedding; 94 layers, 64 query
    and 4 KV heads, 128 experts with 8 activated, no shared experts (config: hidden 4096,
    head_dim 128, moe_intermediate_size 1536, vocab 151936, untied embeddings)."""
    m = sizing.preset("qwen3-235b-a22b")
    t = moe.parameter_table(m).set_index("part")
    total, active = int(t.params.sum()), int(t.active_params.sum())
    assert round(total / 1e9) == 235 and round(active / 1e9) == 22
    assert round((total - int(t.loc["embeddings", "params"])) / 1e9) == 234
    assert m.n_shared_experts == 0 and int(t.loc["shared_experts", "params"]) == 0
    assert m.head_dim * m.n_heads == 2 * m.d_model   # head_dim is not d_model / n_heads


def test_dense_presets_unchanged_by_the_moe_terms():
    """The Llama 3 counts of chapter 04 (8,030,261,248 for 8B) come out of the same parts."""
    for p in sizing.presets():
        parts = sizing.parameter_parts(p.n_layers, p.d_model, p.n_heads, p.n_kv_heads, p.ffn_dim,
                                       p.vocab_size)
        assert int(parts.params.sum()) == p.exact_params() == p.exact_active_params()
        assert (parts.params == parts.active_params).all()
    assert sizing.preset("llama3-8b").exact_params() == 8_030_261_248
    assert [p.key for p in sizing.presets()] == ["llama3-8b", "llama3-70b", "llama3-405b"]
    assert [p.key for p in sizing.presets("moe")] == ["mixtral-8x7b", "qwen3-235b-a22b", "deepseek-v3"]
    assert len(sizing.presets("all")) == 6


@given(e=st.integers(1, 64), k=st.integers(1, 8), shared=st.integers(0, 2), dense=st.integers(0, 4))
@settings(max_examples=40, deadline=None)
def test_active_parameters_identity(e, k, shared, dense):
    """Total − active = (E − k) routed experts in every MoE layer; active grows with k."""
    k = min(k, e)
    kw = dict(n_experts=e, experts_per_token=k, n_shared_experts=shared, expert_ffn_dim=512,
              n_dense_layers=dense)
    total = sizing.parameter_count(8, 256, 4, 2, 1024, 1000, **kw)
    active = sizing.parameter_count(8, 256, 4, 2, 1024, 1000, active=True, **kw)
    assert total - active == (8 - dense) * (e - k) * 3 * 256 * 512
    if k < e:
        more = sizing.parameter_count(8, 256, 4, 2, 1024, 1000, active=True, **dict(kw, experts_per_token=k + 1))
        assert more == active + (8 - dense) * 3 * 256 * 512


def test_custom_moe_model_counts_shared_experts():
    m = moe.custom_moe_model("toy", n_layers=4, d_model=64, n_heads=4, n_experts=8, experts_per_token=2,
                             expert_ffn_dim=32, n_shared_experts=1, vocab_size=100)
    t = moe.parameter_table(m).set_index("part")
    assert int(t.loc["shared_experts", "params"]) == 4 * 3 * 64 * 32 == int(t.loc["shared_experts", "active_params"])
    assert m.n_params == t.params.sum() and m.n_active_params == t.active_params.sum()
    assert m.is_moe and not sizing.preset("llama3-8b").is_moe


# ----------------------------------------------------------------------------- memory under EP


@given(tp=st.sampled_from([1, 2, 4, 8]), ep=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]),
       dp=st.sampled_from([1, 2, 8]))
@settings(max_examples=40, deadline=None)
def test_zero3_shards_everything_over_all_ranks(tp, ep, pp, dp):
    """ZeRO-3 (Rajbhandari et al. 2020 §5) with experts over tp·pp·ep and the rest over tp·pp:
    every byte of state is held once, so a rank holds 16·Ψ / (tp·pp·dp·ep)."""
    e = moe.expert_memory("mixtral-8x7b", tp=tp, ep=ep, pp=pp, dp=dp, zero_stage=3)
    n = tp * pp * dp * ep
    assert e.state_bytes == pytest.approx(16 * 46.7e9 / n, rel=1e-12)


def test_ep_divides_the_expert_state_only():
    a = moe.expert_memory("qwen3-235b-a22b", tp=4, ep=1, zero_stage=0)
    b = moe.expert_memory("qwen3-235b-a22b", tp=4, ep=16, zero_stage=0)
    assert b.expert_state_bytes == pytest.approx(a.expert_state_bytes / 16, rel=1e-12)
    assert b.non_expert_state_bytes == pytest.approx(a.non_expert_state_bytes, rel=1e-12)
    assert b.experts_per_rank == 8 and a.experts_per_rank == 128
    # with ep = 1 and no ZeRO the four TP ranks hold the whole 16 B/param state between them
    assert a.state_bytes * 4 / GiB == pytest.approx(16 * 235e9 / GiB, rel=1e-12)


def test_zero1_shards_the_optimizer_over_dp_times_ep_for_non_experts():
    e = moe.expert_memory("mixtral-8x7b", tp=2, ep=4, dp=2, zero_stage=1)
    non_expert, routed, _, _ = moe._split(sizing.preset("mixtral-8x7b"))
    assert e.optimizer_bytes == pytest.approx(12 * non_expert / 2 / 8 + 12 * routed / (2 * 4) / 2, rel=1e-12)
    assert e.weights_bytes == pytest.approx(2 * non_expert / 2 + 2 * routed / 8, rel=1e-12)


# ----------------------------------------------------------------------------- routing


def test_capacity_formula_switch_and_gshard():
    """Fedus et al. 2022 (Switch) eq. (3): capacity = tokens/experts × capacity factor;
    Lepikhin et al. 2020 (GShard) §2.2: 2N/E for top-2."""
    assert moe.expert_capacity_tokens(1024, 8, 1, 1.0) == 128
    assert moe.expert_capacity_tokens(1024, 8, 1, 1.25) == 160
    assert moe.expert_capacity_tokens(1024, 8, 2, 1.0) == 2 * 1024 // 8
    assert moe.expert_capacity_tokens(1000, 3, 1, 1.0) == 334   # rounded up


def _megatron_get_capacity(num_tokens, num_experts, capacity_factor, min_capacity=None):
    """Megatron-Core's formula, restated (NVIDIA/Megatron-LM,
    megatron/core/transformer/moe/moe_utils.py, ``get_capacity``)."""
    capacity = math.ceil((num_tokens / num_experts) * capacity_factor)
    return capacity if min_capacity is None or capacity >= min_capacity else min_capacity


@pytest.mark.parametrize("t, e, k, c", [(4096, 8, 2, 1.25), (4096, 8, 2, 1.1), (2048, 64, 6, 1.2),
                                        (4096, 128, 8, 1.15), (8192, 128, 8, 1.0), (1000, 3, 1, 1.0),
                                        (4096, 8, 1, 1.5), (512, 16, 4, 2.0)])
def test_capacity_agrees_with_megatron_core(t, e, k, c):
    """Peer tool: Megatron-Core's topk_softmax_with_capacity calls
    ``get_capacity(num_tokens=num_tokens * topk, num_experts, capacity_factor)``, i.e.
    ceil((T·k / E) · c) (NVIDIA/Megatron-LM, megatron/core/transformer/moe/moe_utils.py)."""
    assert moe.expert_capacity_tokens(t, e, k, c) == _megatron_get_capacity(t * k, e, c)


def test_router_popularity_profile():
    for e, imb in [(8, 1.0), (8, 3.0), (128, 2.0), (128, 20.0)]:
        p = moe.router_popularity(e, imb)
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
        assert e * p[0] == pytest.approx(imb, rel=1e-9)
        assert (np.diff(p) <= 1e-15).all()
    assert np.allclose(moe.router_popularity(16, 1.0), 1 / 16)


def test_closed_form_on_a_case_small_enough_to_enumerate():
    """Two tokens, two experts, top-1, balanced, capacity one: only 'both to the same expert'
    (probability 1/2) drops a token, so 1/2 × 1 token / 2 tokens = 1/4."""
    assert moe.expected_dropped_fraction(2, 2, 1, 1.0) == pytest.approx(0.25, abs=1e-12)
    # three tokens, capacity 2 (c = 4/3): only 'all three to one expert' (prob 1/4) drops one
    assert moe.expected_dropped_fraction(3, 2, 1, 4 / 3) == pytest.approx(0.25 / 3, abs=1e-12)


@pytest.mark.parametrize("k, e, cf, imbalance", [(2, 8, 1.0, 1.0), (8, 128, 1.0, 1.0), (1, 8, 1.25, 2.0),
                                                 (1, 16, 1.0, 1.0), (1, 64, 1.5, 4.0)])
def test_simulated_router_agrees_with_closed_form(k, e, cf, imbalance):
    """Seeded simulation (Gumbel-top-k sampling, Kool et al. 2019) against the binomial closed
    form, which is exact for a balanced router and for top-1: within 4 standard errors."""
    r = moe.simulate_routing(4096, e, k, cf, imbalance, n_trials=100, seed=3)
    assert r.closed_form is not None
    tol = max(4 * r.dropped_fraction_se, 1e-4)
    assert abs(r.dropped_fraction - r.closed_form) < tol
    # the mean load per expert matches T·k·p
    expected = 4096 * k * r.popularity
    assert np.allclose(r.tokens_per_expert, expected, rtol=0.05, atol=3)


def test_skewed_top_k_has_no_closed_form_but_simulates():
    with pytest.raises(ValueError, match="imbalance"):
        moe.expected_dropped_fraction(4096, 128, 8, 1.25, imbalance=2.0)
    r = moe.simulate_routing(4096, 128, 8, 1.25, imbalance=2.0, n_trials=4, seed=0)
    assert r.closed_form is None and r.dropped_fraction > 0
    # the hottest expert cannot take more than one copy of every token
    assert r.tokens_per_expert.max() <= 4096


def test_simulation_is_seeded():
    a = moe.simulate_routing(2048, 16, 2, 1.0, 1.0, seed=7, n_trials=3)
    b = moe.simulate_routing(2048, 16, 2, 1.0, 1.0, seed=7, n_trials=3)
    assert a.dropped_fraction == b.dropped_fraction and np.array_equal(a.tokens_per_expert, b.tokens_per_expert)


@given(cf=st.floats(0.5, 2.0), imb=st.floats(1.0, 3.0))
@settings(max_examples=30, deadline=None)
def test_more_capacity_drops_fewer_tokens(cf, imb):
    lo = moe.expected_dropped_fraction(4096, 8, 1, cf, imb)
    hi = moe.expected_dropped_fraction(4096, 8, 1, cf * 1.2, imb)
    assert 0.0 <= hi <= lo + 1e-12 <= 1.0


@given(imb=st.floats(1.0, 3.0))
@settings(max_examples=20, deadline=None)
def test_skew_drops_more(imb):
    base = moe.expected_dropped_fraction(4096, 8, 1, 1.25, 1.0)
    assert moe.expected_dropped_fraction(4096, 8, 1, 1.25, imb) >= base - 1e-12


def test_deterministic_limit_of_the_closed_form():
    """For many tokens the binomial spread vanishes: a top-1 router at imbalance I drops
    Σ (T·p_e − C)⁺ / T (the hottest experts' excess)."""
    t, e, cf, imb = 2**21, 8, 1.25, 2.0
    p = moe.router_popularity(e, imb)
    cap = moe.expert_capacity_tokens(t, e, 1, cf)
    fluid = np.maximum(t * p - cap, 0).sum() / t
    assert moe.expected_dropped_fraction(t, e, 1, cf, imb) == pytest.approx(fluid, rel=1e-3)


# ----------------------------------------------------------------------------- all-to-all


def test_dispatch_bytes_is_tokens_times_k_times_hidden():
    """GShard §2.2: the dispatched tensor holds each token once per chosen expert."""
    assert moe.dispatch_bytes(4096, 4096, 2, 1.0) == 4096 * 2 * 4096 * 2
    assert moe.dispatch_bytes(4096, 4096, 2, 1.25) == pytest.approx(1.25 * 4096 * 2 * 4096 * 2)


def test_all_to_all_uses_the_ring_on_trn2_and_direct_through_a_switch():
    """Grama et al. 2003 §4.5: (n−1)/2 · S/B on a ring, (n−1)/n · S/B through a switch."""
    size = 64 * 2**20
    intra = specs.link("trn2-neuronlink-intra").bytes_per_s
    assert moe.all_to_all_s(size, 16, "trn2-ultraserver") == pytest.approx(
        collectives.ring_all_to_all_s(size, 16, intra), rel=1e-12)
    trn3 = topology.cluster("trn3-gen1-ultraserver", 1, 2).level("instance")
    assert trn3.switched
    assert moe.all_to_all_s(size, 16, "trn3-gen1-ultraserver") == pytest.approx(
        collectives.direct_all_to_all_s(size, 16, trn3.bytes_per_s), rel=1e-12)
    # the whole switched UltraServer is one phase: 64 chips straight through NeuronSwitch
    assert moe.all_to_all_s(size, 64, "trn3-gen1-ultraserver") == pytest.approx(
        collectives.direct_all_to_all_s(size, 64, trn3.bytes_per_s), rel=1e-12)
    assert moe.all_to_all_s(size, 1) == 0.0


def test_hierarchical_all_to_all_is_one_phase_per_level():
    """DeepSpeed-MoE (Rajbhandari et al. 2022) §5.3: exchange inside the node, then across nodes.
    Two Trn2 UltraServers: a ring of 16 in each instance, a ring of 4 across the instances
    (the UltraServer's slow ring), then a direct exchange of 2 over EFA (with its latency)."""
    size = 64 * 2**20
    intra = specs.link("trn2-neuronlink-intra").bytes_per_s
    inter = specs.link("trn2-neuronlink-inter").bytes_per_s
    efa = specs.link("trn2-efa")
    expected = (collectives.ring_all_to_all_s(size, 16, intra) + collectives.ring_all_to_all_s(size, 4, inter)
                + collectives.direct_all_to_all_s(size, 2, efa.bytes_per_s, efa.latency_s))
    assert moe.all_to_all_s(size, 128, "trn2-ultraserver") == pytest.approx(expected, rel=1e-12)
    flat = collectives.direct_all_to_all_s(size, 128, efa.bytes_per_s, efa.latency_s)
    assert moe.all_to_all_s(size, 128, "trn2-ultraserver", hierarchical=False) == pytest.approx(flat, rel=1e-12)


@given(n=st.sampled_from([2, 4, 8, 16, 32, 64, 128, 256]), size=st.floats(1e3, 1e10))
@settings(max_examples=30, deadline=None)
def test_all_to_all_grows_with_the_group_and_the_bytes(n, size):
    for system in ("trn2-ultraserver", "trn3-gen1-ultraserver"):
        t = moe.all_to_all_s(size, n, system)
        assert 0 < t < moe.all_to_all_s(size, 2 * n, system)
        assert t < moe.all_to_all_s(2 * size, n, system) <= 2 * t


def test_all_to_all_table_levels():
    t = moe.all_to_all_table("qwen3-235b-a22b", ep_chips=(4, 16, 64, 128))
    trn2 = t[t.system == "trn2-ultraserver"]
    assert trn2.level.tolist() == ["instance", "instance", "ultraserver", "efa"]
    assert trn2.phases.tolist()[:3] == ["ring 4 (instance)", "ring 16 (instance)",
                                        "ring 16 (instance) + ring 4 (ultraserver)"]
    trn3 = t[t.system == "trn3-gen1-ultraserver"]
    assert trn3.phases.tolist()[2] == "direct 64 (ultraserver)"
    assert trn3.phases.tolist()[0] == "direct 4 (server)"   # a Trn3 UltraServer is built of servers
    # at equal group size, the switch beats the torus ring
    for n in (16, 64):
        assert float(trn3[trn3.ep_chips == n].all_to_all_s.iloc[0]) < float(trn2[trn2.ep_chips == n].all_to_all_s.iloc[0])
    assert (t.layer_all_to_all_s == 4 * t.all_to_all_s).all()
    assert (t.flat_all_to_all_s >= t.all_to_all_s * (1 - 1e-12)).all()
    # per step: four all-to-alls in each of the 94 MoE layers
    assert t.step_all_to_all_s.tolist() == pytest.approx((94 * t.layer_all_to_all_s).tolist(), rel=1e-12)
    assert (t.step_all_to_all_bytes_per_chip == 4 * 94 * t.dispatch_bytes_per_chip).all()


# ----------------------------------------------------------------------------- compute


def test_compute_follows_active_parameters():
    """Kaplan et al. 2020: 6 FLOPs per parameter per token, here per *active* parameter."""
    m = sizing.preset("mixtral-8x7b")
    attn = 6 * 32 * 4096 * 4096
    _, _, active, routed_active = moe._split(m)
    assert moe.flops_per_token(m, seq_len=4096) == pytest.approx(6 * active + attn, rel=1e-12)
    assert active == pytest.approx(m.exact_active_params() * m.n_params / m.exact_params(), rel=1e-12)
    padded = moe.flops_per_token(m, seq_len=4096, capacity_factor=1.25)
    assert padded - moe.flops_per_token(m, seq_len=4096) == pytest.approx(6 * 0.25 * routed_active, rel=1e-9)
    s = moe.step_compute("qwen3-235b-a22b", n_tokens=1e6, n_chips=64)
    assert s.flops / s.flops_if_dense < 0.12 and s.flops_per_chip == pytest.approx(s.flops / 64)
    dense = moe.step_compute("llama3-8b", n_tokens=1e6, n_chips=64, seq_len=8192)
    assert dense.flops == pytest.approx(dense.flops_if_dense)


def test_activation_width_of_an_moe_layer():
    assert moe.activation_ffn_dim("mixtral-8x7b") == 2 * 14336
    assert moe.activation_ffn_dim("qwen3-235b-a22b", 1.5) == math.ceil(1.5 * 8 * 1536)
    assert moe.activation_ffn_dim("llama3-70b") == 28672


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, match", [
    (lambda: moe.expert_memory("mixtral-8x7b", ep=3), "ep"),
    (lambda: moe.expert_memory("llama3-8b", ep=2), "ep"),
    (lambda: moe.expert_capacity_tokens(0, 8), "n_tokens"),
    (lambda: moe.expert_capacity_tokens(16, 8, 9), "experts_per_token"),
    (lambda: moe.expert_capacity_tokens(16, 8, 1, 0.0), "capacity_factor"),
    (lambda: moe.router_popularity(8, 8.0), "imbalance"),
    (lambda: moe.router_popularity(8, 0.5), "imbalance"),
    (lambda: moe.simulate_routing(2**22, 128, 8, n_trials=10), "n_tokens"),
    (lambda: moe.all_to_all_s(1e6, 4, "trn9"), "system"),
    (lambda: moe.all_to_all_s(1e6, 4, hierarchical="yes"), "hierarchical"),
    (lambda: moe.all_to_all_table("llama3-8b"), "model"),
    (lambda: moe.parameter_table("gpt-9"), "model"),
    (lambda: moe.step_compute("mixtral-8x7b", n_tokens=1e6, n_chips=8, dtype="int3"), "dtype"),
    (lambda: sizing.parameter_count(8, 256, 4, 2, 1024, 1000, n_experts=4, experts_per_token=5), "experts_per_token"),
    (lambda: sizing.presets("sparse"), "kind"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------- issue 28: EP as Neuron runs it


@pytest.mark.parametrize("model, ep, ratio", [("mixtral-8x7b", 8, 4.0), ("qwen3-235b-a22b", 16, 2.0)])
def test_all_gather_moves_ep_over_k_times_the_all_to_all_bytes(model, ep, ratio):
    """NxD Inference MoE deep dive ("Expert Parallelism uses All-Gather to gather all tokens at all
    ranks") against GShard's all-to-all: (ep−1)·T·h over (ep−1)/ep·T·k·h = ep/k; the audit
    (audit-2026-12 M4) works 4× for Mixtral at EP 8 and 2× for Qwen3 at EP 16."""
    m = sizing.preset(model)
    ag = moe.ep_exchange_bytes(8192, m.d_model, m.experts_per_token, ep, method="all-gather")
    a2a = moe.ep_exchange_bytes(8192, m.d_model, m.experts_per_token, ep, method="all-to-all")
    assert ag / a2a == pytest.approx(ratio, rel=1e-12)
    assert moe.ep_byte_ratio(ep, m.experts_per_token) == ratio
    # the all-gather: every other rank's 8,192 tokens, h wide, BF16
    assert ag == (ep - 1) * 8192 * m.d_model * 2


@given(ep=st.integers(1, 256), k=st.integers(1, 16), c=st.floats(1.0, 2.0))
def test_byte_ratio_identity(ep, k, c):
    ag = moe.ep_exchange_bytes(1024, 512, k, ep, method="all-gather", capacity_factor=c)
    a2a = moe.ep_exchange_bytes(1024, 512, k, ep, method="all-to-all", capacity_factor=c)
    if ep > 1:
        assert ag / a2a == pytest.approx(moe.ep_byte_ratio(ep, k, c), rel=1e-9)
    else:
        assert ag == a2a == 0.0


def test_ring_cancels_the_extra_bytes_and_a_switch_does_not():
    """On one ring of n chips the all-gather pair costs 2/k of the ring all-to-all pair ((n−1)·S/B
    against (n−1)/2·k·S/B); through Trainium3's switch n/k of it (the byte ratio, (n−1)/n per byte)."""
    for k in (1, 2, 8):
        ring = [moe.ep_exchange_s(4096, 4096, k, 16, "trn2-ultraserver", method=m) for m in moe.EP_DISPATCH_METHODS]
        assert ring[0] / ring[1] == pytest.approx(2 / k, rel=1e-9)
        switch = [moe.ep_exchange_s(4096, 4096, k, 16, "trn3-gen1-ultraserver", method=m)
                  for m in moe.EP_DISPATCH_METHODS]
        assert switch[0] / switch[1] == pytest.approx(16 / k, rel=1e-9)


def test_all_gather_pair_is_two_ring_all_gathers_inside_an_instance():
    """One instance of Trn2 (16 chips, 1,024 GB/s per chip, ring model): all-gather of 16·T·h·2 bytes
    plus a reduce-scatter of the same, each (n−1)/n · S/B (Thakur et al. 2005)."""
    t, h, n = 8192, 4096, 16
    bw = topology.cluster("trn2-ultraserver", 1, 2).level("instance").bytes_per_s
    expected = 2 * collectives.ring_allgather_s(n * t * h * 2, n, bw)
    assert moe.ep_exchange_s(t, h, 8, n, "trn2-ultraserver") == pytest.approx(expected, rel=1e-12)


def test_ep_exchange_table_and_bad_method():
    t = moe.ep_exchange_table("qwen3-235b-a22b", ep_chips=(16,), systems=("trn2-ultraserver",))
    assert t.method.tolist() == ["all-gather", "all-to-all", "all-to-all-v"]
    assert t.byte_ratio.tolist() == [2.0, 1.0, 1.0]   # all-to-all-v: the same bytes at capacity 1
    assert t.time_ratio.iloc[0] == pytest.approx(2 / 8)
    with pytest.raises(ValueError, match="method"):
        moe.ep_exchange_bytes(1, 1, 1, 2, method="alltoall")
    with pytest.raises(ValueError, match="model must be a mixture-of-experts"):
        moe.ep_exchange_table("llama3-8b")


def test_blockwise_matmul_matches_the_nxd_deep_dive():
    """NxD Inference MoE deep dive, BWMM: N = ⌈T·k/B⌉ + (E − 1); its worked case (1,000 tokens,
    8 experts, top-2, block 256) provisions 15 blocks, 3,840 slots for 2,000 token-expert pairs."""
    assert moe.blockwise_blocks(1000, 8, 2, 256) == 15
    assert moe.blockwise_compute_factor(1000, 8, 2, 256) == pytest.approx(3840 / 2000)
    # the provision grows with the experts even when tokens are few: one block each, at least
    assert moe.blockwise_blocks(8, 128, 8, 512) == 1 + 127
    with pytest.raises(ValueError, match="block_size"):
        moe.blockwise_blocks(1000, 8, 2, 0)


def test_load_balancing_losses():
    """Switch Transformers §2.2 eq. (4): α·E·Σ f_i·P_i is α at perfect balance and α·E at collapse;
    ST-MoE eq. (5): the z-loss of all-zero logits over E experts is (log E)²; DeepSeek-V3 §2.1.2:
    the bias moves by γ against the load."""
    assert moe.load_balancing_loss([1 / 8] * 8, [1 / 8] * 8, alpha=0.01) == pytest.approx(0.01)
    assert moe.load_balancing_loss([1, 0, 0, 0], [1, 0, 0, 0], alpha=0.01) == pytest.approx(0.04)
    assert moe.router_z_loss(np.zeros((3, 8))) == pytest.approx(math.log(8) ** 2)
    # shifting every logit by s shifts logsumexp by s: z-loss (log E + s)²
    assert moe.router_z_loss(np.full((2, 8), 2.0)) == pytest.approx((math.log(8) + 2.0) ** 2)
    b = moe.aux_free_bias_update(np.zeros(4), [40, 20, 20, 0], gamma=0.001)
    assert b.tolist() == [-0.001, 0.0, 0.0, 0.001]
    with pytest.raises(ValueError, match="router_probabilities"):
        moe.load_balancing_loss([0.5, 0.5], [1.0])
    with pytest.raises(ValueError, match="logits"):
        moe.router_z_loss([1.0, 2.0])


def test_deepseek_v3_parameters_against_its_model_card():
    """DeepSeek-V3 model card and report abstract (arXiv:2412.19437): "671B total parameters with 37B
    activated for each token" (the 685B on Hugging Face adds the 14B MTP module, not counted here).
    Counted from config_671B.json with MLA's projections (DeepSeek-V3 inference/model.py, class MLA)."""
    p = sizing.preset("deepseek-v3")
    assert p.exact_params() == 671_026_404_352
    assert round(p.exact_params() / 1e9) == 671 and round(p.exact_active_params() / 1e9) == 38
    assert p.exact_active_params() / 1e9 == pytest.approx(37, abs=0.6)   # the card rounds 37.55 to 37
    t = moe.parameter_table(p).set_index("part")
    # one MLA layer: q 7168·1536 + 1536 + 1536·128·192, kv 7168·576 + 512 + 512·128·256, o 128·128·7168
    mla = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    assert t.loc["attention", "params"] == 61 * mla
    # one shared and 8 of 256 routed experts per token in the 58 MoE layers
    assert t.loc["shared_experts", "params"] == 58 * 3 * 7168 * 2048
    assert t.loc["routed_experts", "active_params"] == 58 * 8 * 3 * 7168 * 2048
    assert (p.n_expert_groups, p.n_limited_groups) == (8, 4)   # node-limited routing: M = 4 of 8


def test_mla_parameters_need_kv_lora_rank_and_serving_refuses_mla():
    with pytest.raises(ValueError, match="v_head_dim"):
        sizing.parameter_parts(2, 64, 4, 4, 128, 100, v_head_dim=16)
    from trainium_lab import serving
    with pytest.raises(ValueError, match="multi-head latent attention"):
        serving.replica("deepseek-v3", tp=64)


def test_fabric_readings_span_the_trn3_claim():
    """The "Trn3 all-to-all 20–34× faster" of the old chapter took the fastest reading of Trainium3
    (2.56 TB/s NeuronLink-v4, Trainium3 page) against the slowest of Trainium2 (a ring the chapter
    calls about 4× pessimistic for the 4×4 torus). The Trn3 architecture page's PCIe Gen6 fabric
    (Gen2: 256 GB/s per chip in a server, 320 GB/s across servers, bidirectional) reverses it."""
    t = moe.fabric_readings_table(512 * 2**20, ep_chips=(16, 64)).set_index(["ep_chips", "reading"]).all_to_all_s
    ring, torus = "ring per level (course model)", "torus shortest paths (own links)"
    nl, pcie = "NeuronLink-v4 2.56 TB/s switch", "PCIe Gen6 switch fabric (Gen2)"
    assert t[16, ring] / t[16, nl] == pytest.approx(20.0, rel=1e-9)       # the old 20×: n/2 × 2.5
    assert t[16, ring] / t[16, torus] == pytest.approx(15 / 4, rel=1e-9)   # chapter 03's torus estimate
    assert t[16, torus] < t[16, pcie] and t[64, torus] < t[64, pcie]       # PCIe reading: Trn3 slower
    # PCIe by hand: 3/4 · S/128 GB/s inside the server, then 3/4 · S/160 GB/s across 4 servers
    s = 512 * 2**20
    assert t[16, pcie] == pytest.approx(0.75 * s / 128e9 + 0.75 * s / 160e9, rel=1e-12)


def test_hierarchical_all_gather_grows_the_buffer_phase_by_phase():
    """Across an UltraServer (64 Trn2 chips: 16 per instance, 4 instances) the all-gather's second phase
    moves the 16-chip gathered buffer again over the 256 GB/s ring between instances, so past one instance
    NxD's dispatch costs more than the hierarchical all-to-all (whose every phase moves S once)."""
    t, h = 8192, 4096
    c = topology.cluster("trn2-ultraserver", 1, 2)
    b_in, b_us = c.level("instance").bytes_per_s, c.level("ultraserver").bytes_per_s
    size = t * h * 2
    expected = 2 * (collectives.ring_allgather_s(16 * size, 16, b_in) + collectives.ring_allgather_s(64 * size, 4, b_us))
    assert moe.ep_exchange_s(t, h, 8, 64, "trn2-ultraserver") == pytest.approx(expected, rel=1e-12)
    ratio = moe.ep_exchange_table("qwen3-235b-a22b", ep_chips=(64,), systems=("trn2-ultraserver",)).time_ratio.iloc[0]
    assert ratio > 1


def test_all_to_all_v_moves_the_routed_bytes_without_padding():
    """Neuron 2.32's AllToAllV (runtime release notes; nki.collectives.all_to_all_v): each rank sends
    each peer only the copies routed to it, so a capacity-padded all-to-all moves c times its bytes,
    and its time is the unpadded all-to-all's plus one exchange of the counts."""
    t, h, k, ep = 8192, 4096, 2, 16
    v = moe.ep_exchange_bytes(t, h, k, ep, method="all-to-all-v", capacity_factor=1.25)
    padded = moe.ep_exchange_bytes(t, h, k, ep, method="all-to-all", capacity_factor=1.25)
    assert v == (ep - 1) / ep * t * k * h * 2 and padded == pytest.approx(1.25 * v)
    for system in ("trn2-ultraserver", "trn3-gen1-ultraserver"):
        a2a1 = moe.ep_exchange_s(t, h, k, ep, system, method="all-to-all")
        counts = moe.all_to_all_s(moe.A2AV_COUNT_BYTES * ep, ep, system)
        got = moe.ep_exchange_s(t, h, k, ep, system, method="all-to-all-v", capacity_factor=1.25)
        assert got == pytest.approx(a2a1 + counts, rel=1e-12)
        assert got < moe.ep_exchange_s(t, h, k, ep, system, method="all-to-all", capacity_factor=1.25)
    assert moe.ep_exchange_s(t, h, k, 1, method="all-to-all-v") == 0.0


def test_dispatch_stacks_name_known_exchanges_and_components():
    t = moe.dispatch_stacks()
    assert set(t.exchange) <= set(moe.EXCHANGE_METHODS) | {"none"}
    by = dict(zip(t.component, t.exchange))
    assert by["vllm-neuron"] == "all-gather" and by["nki-library"] == "all-to-all-v"
    assert by["torchneuron"] == "none"
    assert set(moe.EP_DISPATCH_METHODS) < set(moe.EXCHANGE_METHODS)
    # the planner's exchange for each training framework with EP follows the table
    from trainium_lab import frameworks
    assert {f.key: moe.dispatch_exchange(f.component) for f in frameworks.frameworks()} == {
        "torchneuron": "none", "nxd": "all-gather", "jax": "none"}
    with pytest.raises(ValueError, match="component"):
        moe.dispatch_exchange("neuron-ls")
