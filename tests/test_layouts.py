"""Tests for trainium_lab.layouts (chapter 05: parallel layouts and the planner)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainium_lab import collectives, layouts, moe, sizing, specs, topology, views
from trainium_lab.units import GiB

# ----------------------------------------------------------------------------- worked example
# The course's 405B worked example (chapter 05): a published article's worked example whose
# inputs and results are reproduced here by hand from sourced figures (16 B/param, ZeRO paper
# arXiv:1910.02054; 96 GiB per chip, 1,024 / 256 / 25 GB/s per level, data/chips.csv and
# data/links.csv). The article prints one decimal (GiB) or two significant figures (seconds).


def test_state_is_98_percent_of_one_ultraserver():
    w = layouts.worked_example()
    assert w["state_gib"] == pytest.approx(6035, abs=0.5)           # published: 6,035 GiB
    assert w["ultraserver_hbm_gib"] == pytest.approx(6144)          # published: 6,144 GiB
    assert w["share_of_one_ultraserver"] == pytest.approx(0.98, abs=0.005)  # "98 percent"
    assert w["left_gib_one"] == pytest.approx(1.7, abs=0.05)        # "around 1.7 GiB per chip"


def test_fully_sharded_over_1_2_4_ultraservers():
    t = layouts.fully_sharded_table(405e9, 16, "trn2-ultraserver", (1, 2, 4))
    # published: 94.3 / 47.1 / 23.6 GiB per chip; 1.7 / 48.9 / 72.4 GiB left
    assert t.state_gib_per_chip.tolist() == pytest.approx([94.3, 47.1, 23.6], abs=0.05)
    assert t.left_gib_per_chip.tolist() == pytest.approx([1.7, 48.9, 72.4], abs=0.05)
    assert t.n_chips.tolist() == [64, 128, 256]


def test_tp16_pp4_dp2_zero1_state_per_chip():
    # published: 58.9 GiB per chip, 37.1 GiB left (TP over 16 chips = 64 ranks at LNC=2)
    m = layouts.custom_model("405B nominal", n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8,
                             ffn_dim=53248, n_params=405e9)
    est = layouts.evaluate(layouts.layout(m, tp=64, pp=4, dp=2, zero_stage=1, lnc=2,
                                          system="trn2-ultraserver"))
    assert est.state_bytes / GiB == pytest.approx(58.9, abs=0.05)
    assert (est.hbm_bytes - est.state_bytes) / GiB == pytest.approx(37.1, abs=0.05)
    # weights+grads (4 B/param) over 64 chips, master+Adam (12 B/param) over 128 chips
    assert est.memory_bytes["weights"] + est.memory_bytes["gradients"] == pytest.approx(4 * 405e9 / 64)
    assert est.memory_bytes["optimizer"] == pytest.approx(12 * 405e9 / 128)
    assert est.layout.cluster.n_chips == 128 and est.layout.cluster.n_systems == 2


def test_worked_example_collectives():
    w = layouts.worked_example()
    # published: 0.51 s (0.50625) for S = 2·405e9/64 bytes, n = 2, B = 25 GB/s; the launch and the two
    # EFA steps of chapter 03's calibrated model (collectives.neuron_collective) add about 0.5 ms
    assert w["dp_allreduce_s"] == pytest.approx(0.50625, rel=2e-3)
    # published: 0.25 ms (0.24576) for one TP all-reduce of 2·4096·16384 bytes over 16 chips
    assert w["tp_allreduce_s"] == pytest.approx(0.24576e-3, rel=1e-6)


def test_dp_allreduce_matches_chapter_03_formula():
    # a DP group spanning UltraServers is hierarchical with the calibrated launch and step latencies
    # (issue 24): chapter 03's one collective model; one rank per chip in each group, 4 groups a chip
    est = layouts.evaluate(layouts.layout("llama3-405b", tp=64, pp=4, dp=2, zero_stage=1, lnc=2))
    size = 2 * est.layout.model.n_params / (64 * 4)          # BF16 gradients per rank (TP 64 x PP 4)
    cost = collectives.neuron_collective("all_reduce", size, n_ranks=2, system="trn2-ultraserver", n_systems=2,
                                         sharing=4, lnc=2)
    assert est.dp_comm_s == pytest.approx(cost.expected_s, rel=1e-12)
    # its bytes are chapter 03's ring of the chip's four ranks' gradients at EFA's per-chip figure
    efa = specs.link("trn2-efa")
    assert cost.per_byte_s * size == pytest.approx(collectives.ring_allreduce_s(4 * size, 2, efa.bytes_per_s),
                                                   rel=1e-12)
    assert est.levels == {"tp": "instance", "pp": "ultraserver", "dp": "efa"}


# ----------------------------------------------------------------------------- formulas


def test_bubble_formula_narayanan():
    # Narayanan et al. 2021 §2.2.1: bubble time fraction (p − 1)/m
    assert layouts.pipeline_bubble_fraction(4, 16) == 3 / 16
    assert layouts.pipeline_bubble_fraction(8, 8) == 7 / 8
    assert layouts.pipeline_bubble_fraction(1, 5) == 0.0


@given(pp=st.sampled_from([1, 2, 4, 8, 16, 32]), m=st.integers(1, 64))
@settings(max_examples=30, deadline=None)
def test_bubble_in_step_time_is_p_minus_1_over_m(pp, m):
    # one trn2-ultraserver at LNC=1: 512 ranks; TP over 8 ranks (one chip), the rest split PP × DP
    lay = layouts.layout("llama3-8b", tp=8, pp=pp, dp=512 // (8 * pp), system="trn2-ultraserver", lnc=1,
                         n_micro_batches=m)
    est = layouts.evaluate(lay)
    busy = est.time_s["compute"] + est.time_s["tp_comm"] + est.time_s["pp_comm"]
    assert est.time_s["bubble"] / busy == pytest.approx(layouts.pipeline_bubble_fraction(pp, m), rel=1e-9)


def test_tp_allreduces_per_layer_megatron():
    # Shoeybi et al. 2019 §3: 2 all-reduces forward + 2 backward per layer
    assert layouts.tp_allreduces_per_layer("none") == 4
    assert layouts.tp_allreduces_per_layer("selective") == 4
    assert layouts.tp_allreduces_per_layer("full") == 6


def test_tp_comm_is_layers_times_allreduces():
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, micro_batch=2, n_micro_batches=8, lnc=2,
                         recompute="selective")
    est = layouts.evaluate(lay)
    link = specs.link("trn2-neuronlink-intra")
    one = collectives.ring_allreduce_s(2 * 2 * 8192 * 16384, 16, link.bytes_per_s)
    # 126 layers over 4 stages: the busiest stage holds ⌈126/4⌉ = 32 of them
    assert est.time_s["tp_comm"] == pytest.approx(8 * 32 * 4 * one, rel=1e-9)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("tp", [1, 8, 64])
def test_activations_agree_with_sizing_without_sp(recompute, tp):
    lay = layouts.layout("llama3-405b", tp=tp, pp=4, dp=512 // (4 * tp), micro_batch=2, n_micro_batches=8,
                         lnc=2, recompute=recompute, sequence_parallel=False)
    est = layouts.evaluate(lay)
    arch = sizing.activation_options("llama3-405b")  # one activation model: the preset's layer
    per_layer = sizing.activation_bytes_per_layer(8192, 2, 16384, 128, tp, False, recompute, **arch)
    expected = 4 * math.ceil(126 / 4) * per_layer
    if recompute == "full":  # the layer being recomputed holds its full activations once
        expected += sizing.activation_bytes_per_layer(8192, 2, 16384, 128, tp, False, "none", **arch)
    assert est.memory_bytes["activations"] == pytest.approx(4 * expected, rel=1e-12)  # 4 ranks per chip


def test_activations_sp_selective_matches_sizing():
    est = layouts.evaluate(layouts.layout("llama3-70b", tp=32, pp=2, dp=4, lnc=2, n_micro_batches=1))
    per_layer = sizing.activation_bytes_per_layer(8192, 1, 8192, 64, 32, True, "selective",
                                                  **sizing.activation_options("llama3-70b"))
    # m = 1 < p: only one micro-batch in flight
    assert est.memory_bytes["activations"] == pytest.approx(4 * 40 * per_layer)


def test_full_recompute_with_sp_is_one_model_in_sizing_and_layouts():
    """Korthikanti et al. 2022 (arXiv:2205.05198) section 4.2.2: under sequence parallelism the
    layer input lies in the sequence-parallel region, so each rank keeps its 1/t shard (2sbh/t),
    as Megatron-LM stores it; sizing and layouts give the same number."""
    lay = layouts.layout("llama3-70b", tp=32, pp=2, dp=4, lnc=2, n_micro_batches=2, recompute="full")
    est = layouts.evaluate(lay)
    arch = sizing.activation_options("llama3-70b")
    stored = sizing.activation_bytes_per_layer(8192, 1, 8192, 64, 32, True, "full", **arch)
    assert stored == 2 * 8192 * 8192 / 32
    peak = sizing.activation_bytes_per_layer(8192, 1, 8192, 64, 32, True, "none", **arch)
    assert est.memory_bytes["activations"] == pytest.approx(4 * (2 * 40 * stored + peak))


def test_zero_stages_shard_what_rajbhandari_says():
    n = 405e9
    kw = dict(tp=64, pp=2, dp=4, lnc=2, system="trn2-ultraserver")
    m = layouts.custom_model("405", n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8, ffn_dim=53248,
                             n_params=n)
    per_rank = n / (64 * 2)
    for z in range(4):
        mem = layouts.evaluate(layouts.layout(m, zero_stage=z, **kw)).memory_bytes
        state_rank = (mem["weights"] + mem["gradients"] + mem["optimizer"]) / 4
        # ZeRO Table 1 with Ψ = params per model-parallel rank
        assert state_rank == pytest.approx(sizing.zero_bytes_per_device(per_rank, 4, z))


def test_zero_3_moves_more_dp_bytes_than_zero_1():
    kw = dict(tp=64, pp=4, dp=2, lnc=2, n_micro_batches=8)
    e1 = layouts.evaluate(layouts.layout("llama3-405b", zero_stage=1, **kw))
    e3 = layouts.evaluate(layouts.layout("llama3-405b", zero_stage=3, **kw))
    assert e3.dp_comm_s > 8 * e1.dp_comm_s  # 1.5× volume, every micro-batch


def test_dp_overlap_zero_exposes_everything():
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, lnc=2, n_micro_batches=8)
    assert layouts.evaluate(lay, dp_overlap=0.0).time_s["dp_exposed"] == pytest.approx(
        layouts.evaluate(lay).dp_comm_s)
    assert layouts.evaluate(lay, dp_overlap=1.0).time_s["dp_exposed"] == 0.0  # 0.51 s < last backward


def test_tokens_per_s_and_effective_mfu():
    lay = layouts.layout("llama3-8b", tp=4, pp=1, dp=16, system="trn2.48xlarge", lnc=2, n_micro_batches=4)
    est = layouts.evaluate(lay, mfu=0.5)
    assert est.tokens_per_s == pytest.approx(lay.tokens_per_step / est.step_s)
    assert 0 < est.mfu_effective <= 0.5  # overheads only lower it


@given(mfu=st.floats(0.05, 1.0), m=st.integers(1, 32))
@settings(max_examples=25, deadline=None)
def test_step_time_falls_as_mfu_rises(mfu, m):
    lay = layouts.layout("llama3-70b", tp=16, pp=4, dp=4, lnc=2, n_micro_batches=m)
    lo = layouts.evaluate(lay, mfu=mfu * 0.9).step_s
    hi = layouts.evaluate(lay, mfu=mfu).step_s
    assert hi < lo


@given(m=st.integers(1, 200))
@settings(max_examples=25, deadline=None)
def test_more_micro_batches_shrinks_bubble_share(m):
    mk = lambda k: layouts.evaluate(layouts.layout("llama3-70b", tp=16, pp=8, dp=2, lnc=2, n_micro_batches=k))  # noqa: E731
    a, b = mk(m), mk(m + 1)
    assert b.time_s["bubble"] / b.step_s < a.time_s["bubble"] / a.step_s
    assert b.memory_bytes["activations"] >= a.memory_bytes["activations"]  # never fewer in flight


# ----------------------------------------------------------------------------- planner


def test_planner_405b_two_ultraservers_keeps_tp_in_instance():
    p = layouts.plan("llama3-405b", system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=1024)
    b = p.best
    assert b.tp_level in ("chip", "instance")
    assert b.tp * b.pp * b.dp == p.cluster.n_ranks
    assert b.fits and b.headroom_gib >= 0.1 * b.hbm_gib
    text = " ".join(views.explain_plan(p))
    assert "Winner" in text and "binds" in text


@pytest.mark.parametrize("n_systems", [2, 4, 8, 16])
def test_planner_405b_top_choice_keeps_tp_inside_an_instance(n_systems):
    p = layouts.plan("llama3-405b", system="trn2-ultraserver", n_systems=n_systems, lnc=2, global_batch=2048)
    assert p.best.tp_level in ("chip", "instance")


def test_planner_rows_round_trip_through_evaluate():
    p = layouts.plan("llama3-70b", system="trn2.48xlarge", n_systems=4, lnc=2, global_batch=256)
    for rank in (0, 3):
        est = layouts.evaluate(p.layout(rank), mfu=p.settings["mfu"])
        row = p.table.iloc[rank]
        assert est.step_s == pytest.approx(row.step_s, rel=1e-12)
        assert est.total_bytes / GiB == pytest.approx(row.memory_gib, rel=1e-12)


def test_planner_nothing_fits_is_explained():
    p = layouts.plan("llama3-405b", system="trn2.48xlarge", n_systems=1, lnc=2, global_batch=64)
    assert p.table.empty and p.best is None
    assert "Nothing fits" in " ".join(views.explain_plan(p))


@given(model=st.sampled_from(["llama3-8b", "llama3-70b", "llama3-405b"]),
       cluster=st.sampled_from([("trn2.48xlarge", 1, 2), ("trn2.48xlarge", 4, 1), ("trn2-ultraserver", 1, 2),
                                ("trn2-ultraserver", 2, 2), ("trn3-gen1-ultraserver", 1, 2),
                                ("trn3-gen2-ultraserver", 1, 1), ("trn1.32xlarge", 2, None)]),
       global_batch=st.sampled_from([64, 96, 256, 1024]),
       headroom=st.floats(0.0, 0.5))
@settings(max_examples=20, deadline=None)
def test_planner_never_returns_a_layout_that_does_not_fit_or_miscounts(model, cluster, global_batch, headroom):
    system, n, lnc = cluster
    p = layouts.plan(model, system=system, n_systems=n, lnc=lnc, global_batch=global_batch,
                     min_headroom_fraction=headroom)
    t = p.table
    ranks = p.cluster.n_ranks
    assert (t.tp * t.pp * t.dp == ranks).all()
    assert (t.headroom_gib >= headroom * t.hbm_gib - 1e-9).all()
    assert (t.memory_gib <= t.hbm_gib).all()
    assert (t.dp * t.micro_batch * t.n_micro_batches == global_batch).all()
    assert t.tokens_per_s.is_monotonic_decreasing
    m = p.model
    assert (m.n_heads % t.tp == 0).all() and (t.pp <= m.n_layers).all()


def test_trn3_gen2_fits_405b_in_one_domain_with_headroom():
    # the seeds: "a 405B-class model's training state fits inside one [Gen2] domain with real headroom"
    t = layouts.fully_sharded_table(405e9, 16, "trn3-gen2-ultraserver", (1,))
    assert t.left_gib_per_chip.iloc[0] > 100


def test_candidate_degrees_multiply_and_divide():
    for tp, pp, dp in layouts.candidate_degrees("llama3-405b", 512):
        assert tp * pp * dp == 512 and 128 % tp == 0 and pp <= 126


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs, match", [
    (dict(tp=48, pp=4, dp=2), "tp"),                     # does not divide the heads
    (dict(tp=256, pp=1, dp=2), "tp"),                    # more ranks than heads
    (dict(tp=64, pp=127, dp=1), "pp"),                   # more stages than layers
    (dict(tp=64, pp=2, dp=3), r"tp × pp × dp × ep|n_systems"),  # 384 ranks: not a whole UltraServer
    (dict(tp=64, pp=4, dp=2, n_systems=3), r"tp × pp × dp × ep"),  # does not multiply to the ranks
    (dict(tp=64, pp=4, dp=2, system="trn9"), "system"),
    (dict(tp=64, pp=4, dp=2, n_micro_batches=0), "n_micro_batches"),
    (dict(tp=64, pp=4, dp=2, micro_batch=0), "micro_batch"),
    (dict(tp=64, pp=4, dp=2, zero_stage=4), "zero_stage"),
    (dict(tp=64, pp=4, dp=2, recompute="some"), "recompute"),
    (dict(tp=64, pp=4, dp=2, ep=2), "ep"),
    (dict(tp=64, pp=4, dp=2, lnc=3), "lnc"),
    (dict(tp=0, pp=4, dp=2), "tp"),
    (dict(tp=64, pp=4, dp=2, dtype="int3"), "dtype"),
])
def test_bad_layout_names_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layouts.layout("llama3-405b", **kwargs)


def test_unknown_model_names_model():
    with pytest.raises(ValueError, match="model"):
        layouts.layout("gpt-9", tp=1)
    with pytest.raises(ValueError, match="model"):
        layouts.plan(42)


@pytest.mark.parametrize("kwargs, match", [
    (dict(mfu=0.0), "mfu"), (dict(mfu=1.5), "mfu"), (dict(dp_overlap=-0.1), "dp_overlap"),
    (dict(min_headroom_fraction=1.0), "min_headroom_fraction"),
])
def test_bad_assumptions_name_the_parameter(kwargs, match):
    lay = layouts.layout("llama3-8b", tp=4, dp=16, system="trn2.48xlarge", lnc=2)
    with pytest.raises(ValueError, match=match):
        layouts.evaluate(lay, **kwargs)
    with pytest.raises(ValueError, match=match):
        layouts.plan("llama3-8b", system="trn2.48xlarge", **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(global_batch=0), "global_batch"), (dict(system="dgx"), "system"), (dict(n_systems=0), "n_systems"),
    (dict(micro_batches=(0,)), "micro_batches"), (dict(zero_stages=(5,)), "zero_stages"),
    (dict(recompute=("most",)), "recompute"), (dict(global_batch=7, micro_batches=(2,)), "global_batch"),
])
def test_bad_plan_input_names_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layouts.plan("llama3-8b", **kwargs)


def test_evaluate_rejects_non_layout():
    with pytest.raises(ValueError, match="lay"):
        layouts.evaluate({"tp": 4})


@given(tp=st.integers(-3, 300))
@settings(max_examples=40, deadline=None)
def test_any_tp_either_valid_or_named(tp):
    dp = 256 // tp if tp > 0 and 256 % tp == 0 else 1
    try:
        lay = layouts.layout("llama3-70b", tp=tp, pp=1, dp=dp, n_systems=1, system="trn2-ultraserver", lnc=2)
    except ValueError as exc:
        assert "tp" in str(exc)
    else:
        assert 64 % lay.tp == 0 and lay.tp * lay.dp == 256


def test_planner_widget_plans_trainium3_at_its_inferred_lnc():
    # Trainium3's LNC default is the inferred 2 (data/chips.csv, issue 26): the widget plans at once.
    from trainium_lab.widgets.layouts import planner_explorer

    w = planner_explorer()
    w.inputs["system"].value = "trn3-gen1-ultraserver"
    w.run()
    assert w.status.value.startswith("searched") and w.plan.cluster.lnc == 2


def test_tp_overlap_is_an_explicit_choice_defaulting_to_fully_exposed():
    """Shoeybi et al. 2019 (arXiv:1909.08053) section 3: each TP all-reduce sits between matmuls
    that depend on it, so by default (tp_overlap = 0) it is on the critical path; Megatron-LM hides
    part of it only with --tp-comm-overlap. tp_overlap scales the exposed share linearly."""
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, n_micro_batches=16, lnc=2)
    base = layouts.evaluate(lay)
    assert layouts.evaluate(lay, tp_overlap=0.0).time_s == base.time_s
    half = layouts.evaluate(lay, tp_overlap=0.5)
    hidden = layouts.evaluate(lay, tp_overlap=1.0)
    assert half.time_s["tp_comm"] == pytest.approx(base.time_s["tp_comm"] / 2)
    assert hidden.time_s["tp_comm"] == 0.0
    assert hidden.time_s["compute"] == base.time_s["compute"]
    assert hidden.step_s < half.step_s < base.step_s
    p0 = layouts.plan("llama3-70b", system="trn2-ultraserver", lnc=2, global_batch=256)
    p1 = layouts.plan("llama3-70b", system="trn2-ultraserver", lnc=2, global_batch=256, tp_overlap=1.0)
    assert (p1.all.tp_comm_s == 0).all() and p1.best.tokens_per_s >= p0.best.tokens_per_s
    assert p1.settings["tp_overlap"] == 1.0 and p0.settings["tp_overlap"] == 0.0
    with pytest.raises(ValueError, match="tp_overlap"):
        layouts.evaluate(lay, tp_overlap=1.5)
    assert any("tp_overlap" in item for item in layouts.IGNORED)


def test_gradient_bytes_reach_memory_and_dp_traffic():
    # 4-byte (FP32) gradients, as Megatron-LM counts them: twice the gradient memory and traffic
    kw = dict(tp=64, pp=4, dp=2, zero_stage=1, n_micro_batches=16, lnc=2)
    bf16 = layouts.evaluate(layouts.layout("llama3-405b", **kw))
    fp32 = layouts.evaluate(layouts.layout("llama3-405b", grad_bytes_per_param=4, **kw))
    assert fp32.memory_bytes["gradients"] == pytest.approx(2 * bf16.memory_bytes["gradients"])
    assert fp32.memory_bytes["weights"] == bf16.memory_bytes["weights"]
    assert fp32.dp_comm_s > bf16.dp_comm_s
    t16 = layouts.fully_sharded_table(405e9)
    t18 = layouts.fully_sharded_table(405e9, grad_bytes_per_param=4)
    assert (t18.state_gib_per_chip / t16.state_gib_per_chip).round(9).tolist() == [18 / 16] * 3
    p = layouts.plan("llama3-70b", system="trn2-ultraserver", lnc=2, global_batch=256, grad_bytes_per_param=4)
    assert p.layout(0).grad_bytes_per_param == 4
    with pytest.raises(ValueError, match="grad_bytes_per_param"):
        layouts.layout("llama3-70b", tp=8, pp=4, dp=8, lnc=2, grad_bytes_per_param=float("nan"))
# ----------------------------------------------------------------------------- chapter 10: EP and interleaving


@given(p=st.integers(1, 64), m=st.integers(1, 256), v=st.integers(1, 8))
@settings(max_examples=50, deadline=None)
def test_interleaved_bubble_narayanan(p, m, v):
    """Narayanan et al. 2021 (arXiv:2104.04473) §2.2.2: with v model chunks per device the
    bubble time fraction is (p − 1)/(v·m): the 1F1B bubble reduced by a factor of v."""
    assert layouts.pipeline_bubble_fraction(p, m, v) == pytest.approx((p - 1) / (v * m), rel=1e-12)
    assert layouts.pipeline_bubble_fraction(p, m, v) * v == pytest.approx(layouts.pipeline_bubble_fraction(p, m))


@pytest.mark.parametrize("p, v", [(2, 2), (4, 2), (8, 2), (8, 4), (16, 3), (12, 8)])
def test_interleaved_activation_factor_korthikanti(p, v):
    """Korthikanti et al. 2022 (arXiv:2205.05198) §4.2.3: the interleaved schedule stores
    L·(1 + (p − 1)/(p·v)) layers' activations on the first stage (Megatron-LM's
    ``interleaved_schedule_memory_penalty``), which is Megatron's warm-up count: 2(p − 1) +
    (v − 1)·p chunk forwards plus one in flight, each of L/(p·v) layers."""
    factor = layouts.interleaved_activation_factor(p, v)
    assert factor == pytest.approx(1 + (p - 1) / (p * v), rel=1e-12)
    chunks_in_flight = 2 * (p - 1) + (v - 1) * p + 1
    assert factor == pytest.approx(chunks_in_flight / (p * v), rel=1e-12)
    assert layouts.interleaved_activation_factor(p, 1) == 1.0


@given(pp=st.sampled_from([2, 4, 8]), v=st.sampled_from([2, 3, 4]), k=st.integers(1, 8))
@settings(max_examples=25, deadline=None)
def test_interleaving_in_the_step_and_memory(pp, v, k):
    """In evaluate(): the bubble is (p − 1)/(v·m) of the busy time, the pipeline sends grow
    v-fold and the activations by Korthikanti's factor, against the same layout with v = 1."""
    m = pp * k
    kw = dict(tp=8, pp=pp, dp=256 // (8 * pp), system="trn2-ultraserver", lnc=2, n_micro_batches=m,
              recompute="selective")
    plain = layouts.evaluate(layouts.layout("llama3-70b", **kw))
    inter = layouts.evaluate(layouts.layout("llama3-70b", virtual_stages=v, **kw))
    busy = inter.time_s["compute"] + inter.time_s["tp_comm"] + inter.time_s["pp_comm"]
    assert inter.time_s["bubble"] / busy == pytest.approx((pp - 1) / (v * m), rel=1e-9)
    assert inter.time_s["pp_comm"] == pytest.approx(v * plain.time_s["pp_comm"], rel=1e-12)
    assert inter.memory_bytes["activations"] == pytest.approx(
        plain.memory_bytes["activations"] * layouts.interleaved_activation_factor(pp, v), rel=1e-12)
    assert inter.time_s["compute"] == plain.time_s["compute"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(tp=8, pp=1, dp=32, virtual_stages=2), "virtual_stages"),          # no pipeline to interleave
    (dict(tp=8, pp=4, dp=8, n_micro_batches=6, virtual_stages=2), "n_micro_batches"),  # 6 not a multiple of 4
    (dict(tp=8, pp=32, dp=1, n_micro_batches=32, virtual_stages=4), "virtual_stages"),  # 128 chunks > 80 layers
])
def test_bad_interleaving_names_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layouts.layout("llama3-70b", system="trn2-ultraserver", lnc=2, **kwargs)


def test_ep_accepted_for_moe_and_rejected_for_dense():
    lay = layouts.layout("mixtral-8x7b", tp=4, ep=8, pp=1, dp=8, lnc=2, system="trn2-ultraserver",
                         n_micro_batches=2)
    assert lay.ep == 8 and lay.global_batch == 8 * 8 * 2
    est = layouts.evaluate(lay)
    assert est.levels["ep"] == "instance" and est.time_s["ep_comm"] > 0
    assert list(est.time_s) == list(layouts.MOE_TIME_PARTS)
    with pytest.raises(ValueError, match="ep must be 1 for Llama 3 405B: it is a dense model"):
        layouts.layout("llama3-405b", tp=64, pp=2, dp=2, ep=2, lnc=2)
    with pytest.raises(ValueError, match="ep_degrees must be"):
        layouts.plan("llama3-8b", system="trn2.48xlarge", lnc=2, global_batch=64, ep_degrees=(1, 2))
    with pytest.raises(ValueError, match=r"ep must divide n_experts \(8\)"):
        layouts.layout("mixtral-8x7b", tp=4, ep=3, pp=1, dp=1, lnc=2, system="trn2.48xlarge", n_systems=1)
    with pytest.raises(ValueError, match="ep_degrees must divide"):
        layouts.plan("mixtral-8x7b", system="trn2.48xlarge", lnc=2, global_batch=64, ep_degrees=(3,))


def test_ep_all_to_all_is_the_moe_module_cost_at_the_level_it_lands_on():
    """Four all-to-alls per MoE layer per micro-batch (GShard §2.2: dispatch and combine, forward
    and backward), each chip sending its ranks' tokens, k copies, at the EP group's level."""
    lay = layouts.layout("qwen3-235b-a22b", tp=4, ep=16, pp=4, dp=1, lnc=2, system="trn2-ultraserver",
                         n_micro_batches=4, micro_batch=1, recompute="selective")
    est = layouts.evaluate(lay, ep_dispatch="all-to-all")
    assert est.levels["ep"] == "instance"   # 16 ranks, 4 apart (one TP group per chip): 16 chips
    m = lay.model
    per_rank = 1 * m.seq_len / 4 * m.experts_per_token * m.d_model * 2
    one = moe.all_to_all_s(per_rank * lay.cluster.ranks_per_chip, 16, "trn2-ultraserver")
    # 94 MoE layers over 4 stages: the busiest stage holds ⌈94/4⌉ = 24 of them
    assert est.time_s["ep_comm"] == pytest.approx(4 * 4 * math.ceil(m.n_layers / 4) * one, rel=1e-9)


def test_moe_zero3_state_is_sixteen_bytes_per_parameter_over_all_chips():
    lay = layouts.layout("mixtral-8x7b", tp=4, ep=8, pp=2, dp=4, zero_stage=3, lnc=2, system="trn2-ultraserver",
                         n_micro_batches=2)
    est = layouts.evaluate(lay)
    assert est.state_bytes == pytest.approx(16 * 46.7e9 / lay.cluster.n_chips, rel=1e-12)


def test_compute_follows_active_parameters_in_the_planner():
    """Dense-equivalent check: an MoE layout computes 6·N_active per token, not 6·N_total."""
    lay = layouts.layout("mixtral-8x7b", tp=4, ep=8, pp=1, dp=8, lnc=2, system="trn2-ultraserver",
                         n_micro_batches=2, recompute="none")
    est = layouts.evaluate(lay, mfu=0.5)
    m = lay.model
    flops = moe.flops_per_token(m) * lay.tokens_per_step
    peak = lay.cluster.n_chips * specs.chip("trn2").dense_flops_per_s["bf16"] * 0.5
    assert est.time_s["compute"] == pytest.approx(flops / peak, rel=1e-9)


@pytest.mark.parametrize("model, n_systems, batch", [("mixtral-8x7b", 2, 256), ("qwen3-235b-a22b", 4, 512)])
def test_moe_planner_rows_are_consistent_and_round_trip(model, n_systems, batch):
    p = layouts.plan(model, system="trn2-ultraserver", n_systems=n_systems, lnc=2, global_batch=batch,
                     virtual_stages=(1, 2))
    t, m = p.table, p.model
    assert (t.tp * t.ep * t.pp * t.dp == p.cluster.n_ranks).all()
    assert (t.dp * t.ep * t.micro_batch * t.n_micro_batches == batch).all()
    assert (m.n_experts % t.ep == 0).all() and (t.ep > 1).any() and (t.ep == 1).any()
    inter = t[t.virtual_stages > 1]
    assert len(inter) and (inter.n_micro_batches % inter.pp == 0).all() and (inter.pp >= 2).all()
    assert ((t.ep == 1) == (t.ep_level == "none")).all()
    for rank in (0, 5):
        row = t.iloc[rank]
        est = layouts.evaluate(p.layout(rank))
        assert est.step_s == pytest.approx(row.step_s, rel=1e-12)
        assert est.total_bytes / GiB == pytest.approx(row.memory_gib, rel=1e-12)
        assert est.time_s["ep_comm"] == pytest.approx(row.ep_comm_s, rel=1e-12)
    parts = p.time_by_level()
    assert parts.seconds.sum() == pytest.approx(float(t.iloc[0].step_s), rel=1e-12)


def test_explanation_names_where_ep_lands():
    # issue 38: with AWS's 15 us EFA hop (no longer a fitted 242 us) DP beats EP across four
    # UltraServers; inside one, EP still wins
    p = layouts.plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=1, lnc=2, global_batch=512)
    b = p.best
    text = " ".join(views.explain_plan(p))
    assert b.ep > 1 and f"EP groups ({b.ep} ranks" in text and f"land on the {b.ep_level} level" in text
    assert "Without expert parallelism the best is" in text
    off = layouts.plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=1, lnc=2, global_batch=512,
                       ep_degrees=(1,))
    assert (off.table.ep == 1).all() and "no EP" in " ".join(views.explain_plan(off))


def test_dense_plans_are_unchanged_by_the_new_degrees():
    kw = dict(system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=512)
    a = layouts.plan("llama3-405b", **kw)
    b = layouts.plan("llama3-405b", ep_degrees=(1,), virtual_stages=(1,), **kw)
    assert a.table.label.tolist() == b.table.label.tolist()
    assert (a.table.ep == 1).all() and (a.table.virtual_stages == 1).all() and (a.table.ep_comm_s == 0).all()
    assert "EP" not in " ".join(views.explain_plan(a))
    # interleaving can only add options: the best with v in (1, 2, 4) is at least as fast
    c = layouts.plan("llama3-405b", virtual_stages=(1, 2, 4), **kw)
    assert c.best.tokens_per_s >= a.best.tokens_per_s


@pytest.mark.parametrize("model, batch", [("llama3-405b", 4096), ("qwen3-235b-a22b", 8192)])
def test_search_at_100k_chips_is_fast_and_fits(model, batch):
    """1,536 Trn2 UltraServers (98,304 chips, EFA between UltraServers): the full search
    (tp × ep × pp × dp × v × ZeRO × micro-batch × recompute) with cold caches returns a layout
    that fits; tools/benchmarks/bench_moe.py times it against the 1 s target on a quiet machine,
    this test only guards against losing the vectorised, closed-form path."""
    layouts._comm.cache_clear()
    topology._spans.cache_clear()
    t0 = time.perf_counter()   # the plan carries no wall-clock time (issue 13): time it here
    p = layouts.plan(model, system="trn2-ultraserver", n_systems=1536, lnc=2, global_batch=batch,
                     virtual_stages=(1, 2, 4))
    elapsed_s = time.perf_counter() - t0
    assert p.cluster.n_chips == 98_304 and len(p.all) > 500
    assert p.best is not None and p.best.fits and p.best.headroom_gib >= 0.1 * p.best.hbm_gib
    assert elapsed_s < 3.0


# ----------------------------------------------------------------------------- the layout's label (issue 13)


def test_one_label_says_tp_in_ranks_and_chips():
    """The planner's ``label`` column and ``Layout.label()`` are one text, made in one place, with
    TP in ranks and in chips (chapters used to rewrite a ranks-only label with a regex)."""
    p = layouts.plan("llama3-405b", system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=512)
    rpc = p.cluster.ranks_per_chip
    for rank in (0, 1, 5):
        row = p.table.iloc[rank]
        assert p.layout(rank).label() == row.label
        assert row.label.startswith(f"TP{row.tp} ranks = {row.tp / rpc:g} chip")
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, zero_stage=1, lnc=2, n_micro_batches=16)
    assert lay.label() == "TP64 ranks = 16 chips × PP4×DP2 ZeRO-1 mb1×16 selective"
    assert lay.label() in repr(lay) and lay.label() in lay._repr_markdown_()
    assert views.tp_label(64, rpc) == "TP64 ranks = 16 chips" and lay.label().startswith(views.tp_label(64, rpc))
    half = layouts.layout("llama3-8b", tp=2, pp=4, dp=8, system="trn2.48xlarge", lnc=2)
    assert half.label().startswith("TP2 ranks = 0.5 chip × PP4")


def test_moe_and_interleaved_labels():
    q = layouts.plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=4, lnc=2, global_batch=512,
                     virtual_stages=(1, 2))
    b = q.best
    assert f"× EP{b.ep}×PP{b.pp}×DP{b.dp} " in b.label and q.layout(0).label() == b.label
    v = q.table[q.table.virtual_stages > 1].iloc[0]
    assert v.label.endswith(f" v{v.virtual_stages}")
    assert views.explain_plan(q)[1].startswith(f"Winner: {b.label}.")


def test_tp_label_rejects_bad_input():
    with pytest.raises(ValueError, match="tp"):
        views.tp_label(0, 4)
    with pytest.raises(ValueError, match="ranks_per_chip"):
        views.tp_label(64, "four")


def test_plan_has_no_explain_method_and_charts_no_label_rewriting():
    """Presentation lives in views: the plan's sentences come from ``views.explain_plan`` only, and
    the charts draw the model's labels as they are."""
    from trainium_lab.charts import layouts as charts_layouts

    assert not hasattr(layouts.Plan, "explain")
    assert not {"with_chip_counts", "with_chip_labels", "tp_label"} & set(dir(charts_layouts))


# ----------------------------------------------------------------------------- peer tools and papers


def test_state_bytes_per_parameter_match_megatron_theoretical_memory():
    """NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py,
    compute_weight_and_optimizer_memory: ``num_bytes_per_parameter = 18`` without the
    distributed optimizer, ``6 + 12/dp`` with it, on the params of one (tp, pp) shard. Megatron
    keeps FP32 gradients (``grad_bytes_per_param=4``); its distributed optimizer is ZeRO-1. The
    embeddings Megatron adds to the first stage are in layouts.IGNORED ("uneven stages")."""
    n = 405e9
    m = layouts.custom_model("405", n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8, ffn_dim=53248,
                             n_params=n)
    for tp, pp, dp in ((64, 4, 2), (32, 2, 8), (16, 8, 4)):
        shard = n / (tp * pp)
        for zero, megatron_bytes in ((0, 18.0), (1, 6.0 + 12.0 / dp)):
            est = layouts.evaluate(layouts.layout(m, tp=tp, pp=pp, dp=dp, zero_stage=zero, lnc=2,
                                                  grad_bytes_per_param=4))
            per_rank = est.state_bytes / est.layout.cluster.ranks_per_chip
            assert per_rank == pytest.approx(megatron_bytes * shard, rel=1e-12)


def test_activations_against_megatron_theoretical_memory():
    """Megatron-LM's compute_activation_memory (sequence parallelism + selective recompute):
    ``s·b·h·(18 + 4f/h)`` per layer, times all L layers times ``min(1, m/p)`` on the first stage,
    over tp. That is Korthikanti et al.'s GPT layer (dropout, GeLU, MHA) generalised in f only.
    The package counts the preset's Llama layer (sizing.activation_coefficients): no dropout
    masks (−2), K and V g = kv/a as wide (−4(1 − g)), SwiGLU's stored gate, up and product
    (+2f/h over GeLU's 4f/h). The in-flight rule is the same: min(p, m)·L/p layers = min(1, m/p)·L."""
    s, b, h, L, a, kv, f = 8192, 1, 16384, 128, 128, 8, 53248
    m = layouts.custom_model("405-like", n_layers=L, d_model=h, n_heads=a, n_kv_heads=kv, ffn_dim=f,
                             n_params=405e9)
    g = kv / a
    for pp, n_mb in ((4, 16), (8, 4), (4, 2)):
        tp = 64
        est = layouts.evaluate(layouts.layout(m, tp=tp, pp=pp, dp=512 // (tp * pp), zero_stage=1, lnc=2,
                                              micro_batch=b, n_micro_batches=n_mb, recompute="selective"))
        per_rank = est.memory_bytes["activations"] / est.layout.cluster.ranks_per_chip
        megatron = s * b * h * (18 + 4 * f / h) * L * min(1, n_mb / pp) / tp
        ours_minus_megatron = s * b * h * (-2 - 4 * (1 - g) + 2 * f / h) * L * min(1, n_mb / pp) / tp
        assert per_rank == pytest.approx(megatron + ours_minus_megatron, rel=1e-12)


def test_zero_table_1_through_evaluate():
    """Rajbhandari et al. 2020 (arXiv:1910.02054) Table 1 / section 5: Ψ = 7.5e9, Nd = 64, K = 12:
    120 / 31.4 / 16.6 / 1.88 GB per device (GB = 1e9 B) for baseline and ZeRO-1/2/3. Here through
    the layout model: 64 data-parallel ranks (one trn2.48xlarge at LNC=2), no TP or PP."""
    m = layouts.custom_model("7.5B", n_layers=32, d_model=4096, n_heads=32, n_params=7.5e9)
    published = {0: 120, 1: 31.4, 2: 16.6, 3: 1.88}
    for zero, gb in published.items():
        est = layouts.evaluate(layouts.layout(m, tp=1, pp=1, dp=64, zero_stage=zero, lnc=2,
                                              system="trn2.48xlarge"))
        per_rank_gb = est.state_bytes / est.layout.cluster.ranks_per_chip / 1e9
        assert per_rank_gb == pytest.approx(gb, rel=5e-3)


def test_compute_flops_match_narayanan_formula():
    """Narayanan et al. 2021 (arXiv:2104.04473), Appendix (FLOPs per iteration): with full activation
    recomputation an iteration costs ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))`` FLOPs. The layout
    model with ``attention="full"`` (their count) and full recompute gives the same FLOPs without
    the logits term (layouts.IGNORED: "loss and logits computation"), for a GPT layer of
    N = 12·l·h² parameters; the default causal count has half the attention term."""
    l, h, a, s, B = 32, 4096, 32, 2048, 64
    m = layouts.custom_model("gpt-12lh2", n_layers=l, d_model=h, n_heads=a, ffn_dim=4 * h, seq_len=s,
                             n_params=12 * l * h * h)
    lay = layouts.layout(m, tp=1, pp=1, dp=64, zero_stage=1, micro_batch=1, n_micro_batches=1,
                         recompute="full", system="trn2.48xlarge", lnc=2)
    rate = specs.chip("trn2").dense_flops_per_s["bfloat16"] / lay.cluster.ranks_per_chip * 0.4
    full = layouts.evaluate(lay, attention="full", mfu=0.4)
    causal = layouts.evaluate(lay, mfu=0.4)
    narayanan = 96 * B * s * l * h**2 * (1 + s / (6 * h))  # without the V/(16lh) logits term
    # every chip computes its ranks' share at mfu·peak: FLOPs = compute time × rate × ranks
    assert full.time_s["compute"] * rate * 64 == pytest.approx(narayanan, rel=1e-9)
    attention_term = 96 * B * s * l * h**2 * s / (6 * h)
    assert (full.time_s["compute"] - causal.time_s["compute"]) * rate * 64 == pytest.approx(
        attention_term / 2, rel=1e-9)
    with pytest.raises(ValueError, match="attention"):
        layouts.evaluate(lay, attention="flash")
    p = layouts.plan("llama3-8b", system="trn2.48xlarge", lnc=2, global_batch=64, attention="full")
    assert p.settings["attention"] == "full"
    assert layouts.evaluate(p.layout(0), attention="full").step_s == pytest.approx(p.best.step_s, rel=1e-12)


def test_zero3_state_matches_deepspeed_estimator():
    """DeepSpeed deepspeed/runtime/zero/stage3.py, estimate_zero3_model_states_mem_needs without
    offload: ``largest_layer_memory + 18·total_params/total_gpus`` bytes per GPU: 18 bytes per
    parameter (FP32 gradients), all sharded. Its ``4·largest_layer_params`` (the gathered layer)
    is in layouts.IGNORED ("ZeRO-3's gathered-weight buffers")."""
    for model, tp, pp, dp in (("llama3-70b", 16, 2, 8), ("llama3-8b", 4, 1, 64), ("llama3-405b", 64, 4, 2)):
        lay = layouts.layout(model, tp=tp, pp=pp, dp=dp, zero_stage=3, lnc=2, grad_bytes_per_param=4,
                             n_systems=tp * pp * dp // 256, system="trn2-ultraserver")
        est = layouts.evaluate(lay)
        per_rank = est.state_bytes / lay.cluster.ranks_per_chip
        assert per_rank == pytest.approx(18 * lay.model.n_params / lay.cluster.n_ranks, rel=1e-12)
        # the same as chapter 04's copy of the estimator, without the gathered layer
        assert per_rank == pytest.approx(sizing.deepspeed_zero_model_states_bytes(
            lay.model.n_params, lay.cluster.n_ranks, 3, largest_layer_params=0.0), rel=1e-9)
    assert any("gathered-weight" in item for item in layouts.IGNORED)


# --------------------------------------------------------------------- uneven pipeline stages


def test_busiest_stage_sets_the_compute_of_uneven_stages():
    """126 layers over 19 stages: the busiest stage holds ⌈126/19⌉ = 7, not 126/19 = 6.63
    (Narayanan et al. 2021, §2.2: a pipeline runs at its slowest stage's pace). Identity:
    compute per step = m · (model FLOPs per micro-batch) · 7/126 / (the stage's FLOP/s)."""
    lay = layouts.layout("llama3-405b", tp=4, pp=19, dp=16, system="trn2.48xlarge", n_systems=19, lnc=2,
                         n_micro_batches=38, recompute="none")
    est = layouts.evaluate(lay, mfu=0.4)
    m = lay.model
    chip = specs.chip(lay.cluster.chip)
    stage_rate = lay.cluster.n_chips / (lay.pp * lay.dp) * chip.dense_flops_per_s["bfloat16"] * 0.4
    # 6·N + 6·L·s·h per token (causal attention scores, sizing.training_flops), s tokens per micro-batch
    flops_mb = (6.0 * m.n_params + 6.0 * m.n_layers * lay.seq_len * m.d_model) * lay.seq_len
    assert est.time_s["compute"] == pytest.approx(38 * flops_mb * 7 / 126 / stage_rate, rel=1e-12)
    # 7 / 6.63: 5.6 % more than the even split
    assert est.time_s["compute"] / (38 * flops_mb / 19 / stage_rate) == pytest.approx(7 * 19 / 126, rel=1e-12)
    # the effective MFU still counts the model's true FLOPs, once
    peak = lay.cluster.n_chips * chip.dense_flops_per_s["bfloat16"]
    assert est.mfu_effective == pytest.approx(lay.dp * 38 * flops_mb / est.step_s / peak, rel=1e-12)


def test_uneven_stages_scale_the_per_layer_parts_and_nothing_else():
    """33 layers over 8 stages: the busiest holds 5 (4.125 on average). Against 32 layers (4 each):
    TP all-reduces ×5/4, compute ×(5/33)/(4/32) of a model one layer larger, pipeline sends and
    the DP traffic unchanged; the bubble is (p − 1) of the longer slots."""
    def est(n_layers):
        m = layouts.custom_model(f"toy-{n_layers}", n_layers=n_layers, d_model=4096, n_heads=32, n_kv_heads=8,
                                 ffn_dim=14336, n_params=8e9)   # same parameters: only the split differs
        return layouts.evaluate(layouts.layout(m, tp=8, pp=8, dp=2, system="trn2.48xlarge", lnc=2,
                                               n_micro_batches=16, recompute="none"))
    even, uneven = est(32), est(33)
    assert uneven.time_s["tp_comm"] / even.time_s["tp_comm"] == pytest.approx(5 / 4, rel=1e-12)
    assert uneven.time_s["pp_comm"] == even.time_s["pp_comm"]
    assert uneven.dp_comm_s == even.dp_comm_s
    s, h = 8192, 4096
    flops = lambda n_layers: 6.0 * 8e9 + 6.0 * n_layers * s * h  # noqa: E731 (per token)
    assert uneven.time_s["compute"] / even.time_s["compute"] == pytest.approx(
        flops(33) * 5 / 33 / (flops(32) * 4 / 32), rel=1e-12)
    slot = lambda e: (e.time_s["compute"] + e.time_s["tp_comm"] + e.time_s["pp_comm"]) / 16  # noqa: E731
    assert uneven.time_s["bubble"] == pytest.approx(7 * slot(uneven), rel=1e-12)


#: recorded from main before the busiest-stage rule (float.hex of time_s and mfu_effective)
_EVEN_SPLIT_CASES = [
    (dict(model="llama3-405b", tp=64, pp=2, dp=4, n_micro_batches=16, lnc=2, virtual_stages=3, recompute="full"),
     {'compute': '0x1.9e8c6d37ebf65p+5', 'tp_comm': '0x1.7c81dbb7cc34ap+1', 'pp_comm': '0x1.9c511dc3a41e0p-8', 'bubble': '0x1.2440f3a839e47p+0', 'dp_exposed': '0x0.0p+0'},
     '0x1.1c92252c59687p-2'),
    (dict(model="llama3-70b", tp=8, pp=8, dp=4, n_micro_batches=32, zero_stage=3, lnc=2),
     {'compute': '0x1.c6dee0602bd13p+4', 'tp_comm': '0x1.5798ee2308c3ap-3', 'pp_comm': '0x1.12e0be826d695p-8', 'bubble': '0x1.906b583f4ec85p+2', 'dp_exposed': '0x0.0p+0'},
     '0x1.4650348b8c8ebp-2'),
    (dict(model="llama3-8b", tp=4, pp=1, dp=128, n_micro_batches=4, lnc=1, recompute="none"),
     {'compute': '0x1.abf05adb57334p+3', 'tp_comm': '0x0.0p+0', 'pp_comm': '0x0.0p+0', 'bubble': '0x0.0p+0', 'dp_exposed': '0x0.0p+0'},
     '0x1.999999999999ap-2'),
    (dict(model="mixtral-8x7b", tp=4, pp=4, dp=4, ep=8, n_micro_batches=16, lnc=1, capacity_factor=1.25),
     {'compute': '0x1.f9350f2321584p+6', 'tp_comm': '0x0.0p+0', 'ep_comm': '0x1.01b2b29a4692bp+0', 'pp_comm': '0x1.12e0be826d695p-6', 'bubble': '0x1.7df9c5fb15f30p+4', 'dp_exposed': '0x0.0p+0'},
     '0x1.12474c261fc79p-2'),
    (dict(model="qwen3-235b-a22b", tp=4, pp=2, dp=2, ep=16, n_micro_batches=8, lnc=2, recompute="full"),
     {'compute': '0x1.75826825bef98p+3', 'tp_comm': '0x0.0p+0', 'ep_comm': '0x1.1bded8bdf1bd9p+2', 'pp_comm': '0x1.12e0be826d695p-9', 'bubble': '0x1.01c181484fff9p+1', 'dp_exposed': '0x0.0p+0'},
     '0x1.8bb22c4b7c298p-3'),
]


@pytest.mark.parametrize("kw, times, mfu_hex", _EVEN_SPLIT_CASES)
def test_divisible_stages_are_bit_identical_to_the_even_split(kw, times, mfu_hex):
    """When pp divides the layers (dense, MoE, interleaved, full recomputation, ZeRO-3, pp = 1)
    the busiest-stage rule changes nothing, not even a bit."""
    kw = dict(kw)
    lay = layouts.layout(kw.pop("model"), **kw)
    # recorded at MFU 0.4, and before the all-gather dispatch existed: the all-to-all keeps its bits
    est = layouts.evaluate(lay, mfu=0.4, **({"ep_dispatch": "all-to-all"} if lay.model.is_moe else {}))
    assert {k: v.hex() for k, v in est.time_s.items()} == times
    assert est.mfu_effective.hex() == mfu_hex


def test_moe_layers_on_the_busiest_stage():
    """A toy MoE with 4 leading dense layers and 6 MoE layers over pp=4: the busiest stage computes
    ⌈10/4⌉ = 3 layers' share and runs the all-to-alls of ⌈6/4⌉ = 2 MoE layers (1.5 on average)."""
    m = moe.custom_moe_model("toy-dense-first", n_layers=10, d_model=2048, n_heads=16, n_experts=8,
                             experts_per_token=2, expert_ffn_dim=4096, n_dense_layers=4, ffn_dim=8192)
    kw = dict(tp=4, ep=4, system="trn2.48xlarge", lnc=2, n_micro_batches=4, recompute="selective")
    est = layouts.evaluate(layouts.layout(m, pp=4, dp=1, **kw), ep_dispatch="all-to-all")
    per_rank = 1 * m.seq_len / 4 * m.experts_per_token * m.d_model * 2
    one = moe.all_to_all_s(per_rank * 4, 4, "trn2.48xlarge")   # 4 ranks per chip; EP over 4 chips
    assert est.time_s["ep_comm"] == pytest.approx(4 * 4 * 2 * one, rel=1e-9)
    # pp=2 divides 10 (5 layers per stage); pp·dp is 4 in both, so a stage has the same FLOP/s:
    # per micro-batch, 3 layers' share against 5 (the even split would say 2.5 against 5)
    even = layouts.evaluate(layouts.layout(m, pp=2, dp=2, **kw))
    assert est.time_s["compute"] / even.time_s["compute"] == pytest.approx(3 / 5, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(n_layers=st.integers(2, 40), pp=st.integers(2, 8), v=st.integers(1, 4))
def test_interleaved_busiest_stage_matches_dealing_the_chunks(n_layers, pp, v):
    """Interleaved: the p·v chunks hold ⌊L/(p·v)⌋ or ⌈L/(p·v)⌉ layers (each at least one, as
    layout() checks); dealt round the stages, the busiest stage holds ⌈L/p⌉ layers. The model's
    compute relative to pp = 1 (same chips per stage) is that stage's share of the layers."""
    if pp * v > n_layers:
        return
    q, r = divmod(n_layers, pp * v)
    stage_layers = [v * q + sum(1 for c in range(r) if c % pp == s) for s in range(pp)]
    assert sum(stage_layers) == n_layers and min(stage_layers) >= v
    m = layouts.custom_model(f"toy-{n_layers}", n_layers=n_layers, d_model=1024, n_heads=8)
    kw = dict(tp=8, dp=8, system="trn2.48xlarge", lnc=2, recompute="none", n_micro_batches=8 * pp)
    est = layouts.evaluate(layouts.layout(m, pp=pp, n_systems=pp, virtual_stages=v, **kw))
    one = layouts.evaluate(layouts.layout(m, pp=1, n_systems=1, **kw))
    assert est.time_s["compute"] / one.time_s["compute"] == pytest.approx(max(stage_layers) / n_layers,
                                                                          rel=1e-12)


# --------------------------------------------------------------------- torus= link model


_TORUS_CASES = {
    "405b-worked": dict(model="llama3-405b", tp=64, pp=4, dp=2, zero_stage=1, system="trn2-ultraserver", lnc=2,
                        micro_batch=1, n_micro_batches=16, recompute="selective"),
    "8b-tp2chips": dict(model="llama3-8b", tp=8, pp=1, dp=8, zero_stage=1, system="trn2.48xlarge", lnc=2,
                        micro_batch=1, n_micro_batches=8),
    "mixtral-ep8": dict(model="mixtral-8x7b", tp=4, ep=8, pp=1, dp=2, zero_stage=1, system="trn2.48xlarge",
                        lnc=2, micro_batch=1, n_micro_batches=8),
}
#: step_s recorded from main before the torus= option existed
_TORUS_MAIN_STEP_S = {"405b-worked": 24.952804223628256, "8b-tp2chips": 7.017404878657631,
                      "mixtral-ep8": 111.56554970173116}


def _torus_est(case: str, **kw):
    c = dict(_TORUS_CASES[case])
    kw.setdefault("mfu", 0.4)                       # the recorded step times are at MFU 0.4
    return layouts.evaluate(layouts.layout(c.pop("model"), **c), **kw)


@pytest.mark.parametrize("case", sorted(_TORUS_CASES))
def test_torus_default_is_bit_identical_to_main(case):
    """torus="per-device" (the default) is the model as it was: step times recorded from main."""
    assert _torus_est(case).step_s == _TORUS_MAIN_STEP_S[case]
    assert _torus_est(case, torus="per-device").step_s == _TORUS_MAIN_STEP_S[case]


def test_torus_default_plan_bit_identical_to_main():
    """The planner's whole table under the default: the sum of step times and the winner from main."""
    p = layouts.plan("llama3-8b", system="trn2.48xlarge", lnc=2, global_batch=64, mfu=0.4)
    assert float(p.all[p.all.fits].step_s.sum()) == 3921.0551134031753
    assert p.best.label == "TP16 ranks = 4 chips × PP1×DP4 ZeRO-3 mb1×16 none"
    assert p.settings["torus"] == "per-device"
    assert layouts.plan("llama3-8b", system="trn2.48xlarge", lnc=2, global_batch=64,
                        torus="own-links").settings["torus"] == "own-links"


def test_torus_own_links_tp_on_two_chips_is_4x_slower():
    """TP8 ranks at LNC=2 is 2 chips: they share 1 of each chip's 4 torus links
    (collectives.torus_group_links), so the all-reduce runs at 1,024/4 GB/s: 4× the time."""
    per, own = _torus_est("8b-tp2chips"), _torus_est("8b-tp2chips", torus="own-links")
    assert own.time_s["tp_comm"] == pytest.approx(4 * per.time_s["tp_comm"], rel=1e-12)
    assert own.time_s["compute"] == per.time_s["compute"]


def test_torus_own_links_16_chip_tp_unchanged():
    """TP over all 16 chips of an instance owns all 4 links: the same as per-device."""
    per, own = _torus_est("405b-worked"), _torus_est("405b-worked", torus="own-links")
    assert own.time_s["tp_comm"] == per.time_s["tp_comm"]
    assert own.step_s == per.step_s   # PP over the UltraServer ring and DP over EFA are not torus levels


def test_torus_own_links_all_to_all_on_16_chips():
    """EP over the 16 chips of a Trn2 instance: a one-way ring costs (n−1)/2 · S/B = 7.5 · S/B; over
    shortest torus paths (n−1)/n · h̄ · S/B with h̄ = 32/15 it is 2 · S/B, cheaper by 15/4. On 4 chips
    (a row, 2 own links) it is 2 · S/B against the ring's 1.5 · S/B: dearer."""
    m = "mixtral-8x7b"
    # LNC=1: 8 ranks a chip, so EP8 × TP4 = 32 ranks is an EP group of 4 chips
    kw = dict(tp=4, ep=8, pp=1, zero_stage=1, system="trn2.48xlarge", lnc=1, micro_batch=1, n_micro_batches=4)
    per = layouts.evaluate(layouts.layout(m, dp=4, **kw), ep_dispatch="all-to-all")
    own = layouts.evaluate(layouts.layout(m, dp=4, **kw), torus="own-links", ep_dispatch="all-to-all")
    assert per.levels["ep"] == "instance"
    # 4 chips: ring 3/2 · S/B; own links (2 of 4): (3/4) · (4/3) · S/(B/2) = 2 · S/B → ratio 4/3
    assert per.time_s["ep_comm"] / own.time_s["ep_comm"] == pytest.approx(1.5 / 2.0, rel=1e-12)
    n = 16
    ring = (n - 1) / 2
    torus = (n - 1) / n * collectives.torus_average_hops(n, 4)
    assert ring / torus == pytest.approx(15 / 4, rel=1e-12)
    c = topology.cluster("trn2.48xlarge", 1, 1)
    a = layouts._comm(c.system, 1, 1, 8, 1, 1, 16)   # TP8 = 1 chip at LNC=1, EP over all 16 chips
    b = layouts._comm(c.system, 1, 1, 8, 1, 1, 16, "own-links")
    assert a.ep_chips == b.ep_chips == 16
    assert a.ep_a2a[1] / b.ep_a2a[1] == pytest.approx(15 / 4, rel=1e-12)


def test_torus_own_links_trn3_unchanged_and_bad_value():
    """Trainium3's NeuronSwitch is not a torus: the option changes nothing there. A bad value raises."""
    lay = layouts.layout("llama3-8b", tp=8, pp=1, dp=32, system="trn3-gen1-ultraserver", lnc=2)
    assert layouts.evaluate(lay, torus="own-links").step_s == layouts.evaluate(lay).step_s
    with pytest.raises(ValueError, match="torus.*per-device.*own-links"):
        layouts.evaluate(lay, torus="per-link")
    with pytest.raises(ValueError, match="torus"):
        layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=16, torus=None)


# --------------------------------------------------------------------- issue 28: EP as NxD runs it, ETP


def test_all_gather_dispatch_in_the_planner_is_the_moe_module_cost():
    """The default EP exchange is NxD's (all-gather the group's tokens, reduce-scatter the outputs;
    NxD Inference MoE deep dive): per micro-batch and MoE layer, forward and backward, one pair each,
    costed by moe.ep_exchange_s for the chip's tokens."""
    lay = layouts.layout("qwen3-235b-a22b", tp=4, ep=16, pp=4, dp=1, lnc=2, system="trn2-ultraserver",
                         n_micro_batches=4, micro_batch=1, recompute="selective")
    est = layouts.evaluate(lay)
    m = lay.model
    tokens_per_chip = 1 * m.seq_len / 4 * lay.cluster.ranks_per_chip
    pair = moe.ep_exchange_s(tokens_per_chip, m.d_model, m.experts_per_token, 16, "trn2-ultraserver")
    assert est.time_s["ep_comm"] == pytest.approx(4 * 2 * math.ceil(m.n_layers / 4) * pair, rel=1e-9)
    a2a = layouts.evaluate(lay, ep_dispatch="all-to-all")
    # inside one instance (a ring of 16 in the course's model) the all-gather pair costs 2/k of the
    # all-to-all pair: 1/4 for Qwen3's top-8
    assert est.time_s["ep_comm"] / a2a.time_s["ep_comm"] == pytest.approx(2 / 8, rel=1e-9)
    with pytest.raises(ValueError, match="ep_dispatch"):
        layouts.evaluate(lay, ep_dispatch="alltoall")


def test_expert_tp_splits_experts_apart_from_attention():
    """Megatron-Core's ETP / NxD's moe_tp_degree: experts over etp·pp·ep ranks, attention over tp·pp.
    With expert_tp = 1 under TP 4 each rank holds 4× the expert weights of expert_tp = 4."""
    kw = dict(tp=4, ep=16, pp=4, dp=1, lnc=2, system="trn2-ultraserver", n_micro_batches=4, zero_stage=0)
    full = layouts.layout("qwen3-235b-a22b", **kw)
    folded = layouts.layout("qwen3-235b-a22b", expert_tp=1, **kw)
    assert full.expert_tp == 4 and folded.expert_tp == 1
    assert "EP16 (ETP1)" in folded.label() and "ETP" not in full.label()
    non_expert, routed, _, _ = moe._split(full.model)
    chips = full.cluster.ranks_per_chip
    w_full = layouts.evaluate(full).memory_bytes["weights"]
    w_folded = layouts.evaluate(folded).memory_bytes["weights"]
    assert w_folded - w_full == pytest.approx(2 * routed / (4 * 16) * (1 - 1 / 4) * chips, rel=1e-9)
    with pytest.raises(ValueError, match="expert_tp must divide tp"):
        layouts.layout("qwen3-235b-a22b", expert_tp=3, **kw)
    with pytest.raises(ValueError, match="expert_tp must equal tp"):
        layouts.layout("llama3-8b", tp=8, pp=4, dp=2, system="trn2.48xlarge", lnc=2, expert_tp=2)


def test_narrow_expert_matmuls_are_charged_and_reported():
    """Qwen3's 1,536-wide experts over TP 16: 96 columns per rank, under the 128-wide tensor engine
    (NxD Inference MoE deep dive: sharded intermediate dimensions should be >= 128). The expert FLOPs
    cost 128/96 times; ETP 4 (384 columns, three whole tiles) removes the penalty."""
    kw = dict(tp=16, ep=4, pp=2, dp=8, lnc=2, system="trn2-ultraserver", n_systems=4, n_micro_batches=4,
              micro_batch=4, recompute="none")
    lay = layouts.layout("qwen3-235b-a22b", **kw)
    on, off = layouts.evaluate(lay), layouts.evaluate(lay, narrow_expert_penalty=False)
    assert on.expert_matmul_efficiency == pytest.approx(0.75)
    _, _, active, routed_active = moe._split(lay.model)
    extra = (1 / 0.75 - 1) * 6 * routed_active / (6 * active + 6 * lay.model.n_layers * lay.seq_len * lay.model.d_model)
    assert on.time_s["compute"] / off.time_s["compute"] == pytest.approx(1 + extra, rel=1e-9)
    assert layouts.evaluate(layouts.layout("qwen3-235b-a22b", expert_tp=4, **kw)).expert_matmul_efficiency == 1.0
    p = layouts.plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=4, lnc=2, global_batch=512)
    text = " ".join(views.explain_plan(p))
    assert "narrow-matmul" in text and "all-gather" in text


def test_planner_searches_expert_tp_degrees():
    p = layouts.plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=4, lnc=2, global_batch=512,
                     expert_tp_degrees=(1, 2, 4, 8, 16, 32, 64))   # every tp Qwen3's 64 heads allow
    assert set(p.all.expert_tp) == {1, 2, 4, 8, 16, 32, 64}
    assert (p.all.tp % p.all.expert_tp == 0).all()
    assert p.layout(0).expert_tp == int(p.best.expert_tp)
    default = layouts.plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=4, lnc=2, global_batch=512)
    assert (default.all.expert_tp == default.all.tp).all()
    assert p.best.tokens_per_s >= default.best.tokens_per_s   # a superset of layouts
    with pytest.raises(ValueError, match="expert_tp_degrees"):
        layouts.plan("llama3-8b", system="trn2.48xlarge", lnc=2, global_batch=64, expert_tp_degrees=(1,))


def test_dropless_blockwise_matmul_in_the_planner():
    """NxD Inference MoE deep dive: dropless MoE provisions ⌈T·k/B⌉ + (E − 1) blocks. Per EP rank of Mixtral
    at TP 4 × EP 8 with 4,096-token sequences: 4096·2/4 = 2,048 assignments, ⌈2048/512⌉ + 8/8 − 1 = 4 blocks,
    exactly the work (factor 1); Qwen3 at EP 4: 4096·8/4 = 8,192 assignments, 16 + 31 = 47 blocks, 47/16."""
    lay = layouts.layout("mixtral-8x7b", tp=4, ep=8, dp=2, system="trn2.48xlarge", lnc=2, seq_len=4096,
                         n_micro_batches=8)
    base, bw = layouts.evaluate(lay), layouts.evaluate(lay, dropless_block_size=512)
    assert bw.time_s["compute"] == pytest.approx(base.time_s["compute"], rel=1e-12)
    q = layouts.layout("qwen3-235b-a22b", tp=4, ep=4, pp=4, dp=4, lnc=2, system="trn2-ultraserver",
                       n_micro_batches=4, recompute="none")
    plain, drop = layouts.evaluate(q), layouts.evaluate(q, dropless_block_size=512)
    _, _, active, routed_active = moe._split(q.model)
    per_token = 6 * active + 6 * q.model.n_layers * q.seq_len * q.model.d_model
    expected = 1 + 6 * (47 / 16 - 1) * routed_active / per_token
    assert drop.time_s["compute"] / plain.time_s["compute"] == pytest.approx(expected, rel=1e-9)
    p = layouts.plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=4, lnc=2, global_batch=512,
                     dropless_block_size=512)
    assert (p.all.expert_compute_factor >= 1).all() and "blockwise matmul" in " ".join(views.explain_plan(p))
    with pytest.raises(ValueError, match="capacity_factor must be 1"):
        layouts.evaluate(layouts.layout("mixtral-8x7b", tp=4, ep=8, dp=2, system="trn2.48xlarge", lnc=2,
                                        capacity_factor=1.25), dropless_block_size=512)
    with pytest.raises(ValueError, match="dropless_block_size"):
        layouts.evaluate(lay, dropless_block_size=0)


def test_the_planner_costs_the_dispatch_the_frameworks_stack_runs():
    """Issue 40: without ep_dispatch, a named framework's MoE exchange is its stack's own
    (moe.dispatch_exchange: NxD gathers), and an explicit ep_dispatch still wins."""
    from trainium_lab import frameworks, moe

    assert moe.dispatch_exchange(frameworks.framework("nxd").component) == "all-gather"
    kw = dict(system="trn2-ultraserver", n_systems=1, lnc=2, global_batch=512)
    nxd = layouts.plan("qwen3-235b-a22b", framework="nxd", **kw)
    gathered = layouts.plan("qwen3-235b-a22b", framework="nxd", ep_dispatch="all-gather", **kw)
    a2a = layouts.plan("qwen3-235b-a22b", framework="nxd", ep_dispatch="all-to-all", **kw)
    wide = nxd.table.ep > 1
    assert wide.any()
    assert nxd.table.ep_comm_s.tolist() == gathered.table.ep_comm_s.tolist()
    assert (nxd.table.ep_comm_s[wide] != a2a.table.ep_comm_s[wide]).all()
