"""Tests for trainium_lab.parallelism: the DP and TP thresholds (C/W) and the pipeline schedules."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainium_lab import collectives, layouts, parallelism as P, specs, topology

TRN2_BF16 = specs.chip("trn2").dense_flops_per_s["bf16"]


# ----------------------------------------------------------------------------- published figures


def test_scaling_book_tpu_v5p_data_parallel_threshold():
    """Austin et al. 2025, "How to Scale Your Model", part 5: TPU v5p, C = 4.6e14 FLOP/s and
    W = 2 × 9e10 bytes/s for 1D data parallelism: "our batch size per chip must be at least
    2,550 to avoid being communication-bound" (they round 2,556 to 2,550)."""
    assert P.dp_compute_bound_tokens(4.6e14, 2 * 9e10) == pytest.approx(2550, rel=0.005)


def test_scaling_book_tensor_parallel_limit():
    """Austin et al. 2025, part 5: with C/W = 2550, TP is compute-bound up to Y < F / 2550;
    "the required F for 8 way model sharding is 20k" and Gemma 7B (F ≈ 50k) "becomes
    communication bound with 19-way model parallelism". Their form drops the ring factor
    (Y−1)/Y and counts two matmuls (k = 2): Y* − 1 = F·W/C."""
    c, w = 4.6e14, 4.6e14 / 2550
    assert P.tp_limit_chips(20_400, c, w, mlp="gelu") - 1 == pytest.approx(8.0)
    assert P.tp_limit_chips(50_000, c, w, mlp="gelu") - 1 == pytest.approx(19.6, abs=0.05)


def test_issue_trainium2_thresholds():
    """The C/W figures the course review quotes for Trainium2 ("roughly 650 tokens inside an
    instance, 2,600 across the UltraServer ring and 27,000 over EFA"), from data/."""
    t = P.level_ratios_table(("trn2-ultraserver",)).set_index("level")
    assert t.loc["instance", "dp_tokens"] == pytest.approx(650, rel=0.01)
    assert t.loc["ultraserver", "dp_tokens"] == pytest.approx(2600, rel=0.01)
    assert t.loc["efa", "dp_tokens"] == pytest.approx(27_000, rel=0.02)
    assert t.flops_per_byte.tolist() == pytest.approx(t.dp_tokens.tolist())


def test_narayanan_bubble_fraction_and_in_flight():
    """Narayanan et al. 2021, arXiv:2104.04473, §2.2.1: bubble time fraction (p − 1)/m for
    both GPipe and PipeDream-Flush (1F1B); 1F1B "limits the number of in-flight
    microbatches ... to the depth of the pipeline", GPipe keeps all m."""
    for p, m in ((4, 8), (8, 32), (2, 1), (16, 64), (5, 7)):
        for kind in P.PIPELINE_SCHEDULES:
            s = P.pipeline_schedule(p, m, schedule=kind)
            assert s.bubble_fraction == pytest.approx((p - 1) / m)
            assert s.bubble_fraction == pytest.approx(layouts.pipeline_bubble_fraction(p, m))
        assert P.pipeline_schedule(p, m).peak_in_flight == min(p, m)
        assert P.pipeline_schedule(p, m, schedule="gpipe").peak_in_flight == m


# ----------------------------------------------------------------------------- identities


def test_dp_threshold_is_where_allreduce_equals_backward():
    n, g, mfu = 8, 2.0, 0.4
    w = specs.link("trn2-efa").bytes_per_s
    b = P.dp_compute_bound_tokens(TRN2_BF16, w, n=n, grad_bytes_per_param=g, mfu=mfu)
    n_params = 1e9
    allreduce = collectives.ring_allreduce_s(g * n_params, n, w)
    backward = 4 * n_params * b / (mfu * TRN2_BF16)
    assert allreduce == pytest.approx(backward)
    assert P.dp_compute_bound_tokens(TRN2_BF16, w, n=1) == 0.0
    assert P.dp_compute_bound_tokens(TRN2_BF16, w, grad_bytes_per_param=4) == pytest.approx(
        2 * TRN2_BF16 / w)


def test_dp_threshold_agrees_with_the_layout_model():
    """The chapter's worked layout: the DP all-reduce against the last micro-batch's backward
    (layouts.evaluate) is the rule's tokens over the micro-batch's tokens."""
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, zero_stage=1, n_micro_batches=16, lnc=2)
    est = layouts.evaluate(lay, mfu=0.4)
    tp_bwd = est.time_s["tp_comm"] / lay.n_micro_batches / 2   # the backward half of one slot
    backward = est.overlap_window_s - tp_bwd
    b = P.dp_compute_bound_tokens(TRN2_BF16, specs.link("trn2-efa").bytes_per_s, n=2, mfu=0.4)
    tokens = lay.micro_batch * lay.seq_len
    # the model's backward also counts the attention scores (2/3 of 6·L·s·h per token) and
    # their selective recomputation (1/3): 4N + 6·L·s·h FLOPs per token where the rule has 4N;
    # it adds the calibrated launch and the two EFA steps of chapter 03's hierarchical model
    # (collectives.neuron_collective, about 0.5 ms on 0.5 s) to the all-reduce, hence the tolerance
    # the gradients are the even share Ψ/p, the backward the busiest stage's: ⌈126/4⌉ = 32 of
    # 126 layers where the even split has 31.5 (layouts: a pipeline runs at its slowest stage)
    m = lay.model
    per_token = 4 * m.n_params + 6 * m.n_layers * lay.seq_len * m.d_model
    busiest = math.ceil(m.n_layers / lay.pp) * lay.pp / m.n_layers
    assert busiest == 32 / 31.5
    assert est.dp_comm_s / backward == pytest.approx(b / tokens * 4 * m.n_params / per_token / busiest,
                                                     rel=2e-3)


def test_tp_limit_is_where_allreduce_equals_compute():
    w = specs.link("trn2-neuronlink-inter").bytes_per_s
    for mlp in ("gelu", "swiglu"):
        y = P.tp_limit_chips(53248, TRN2_BF16, w, mlp=mlp)
        lo, hi = math.floor(y), math.ceil(y)
        t_lo = P.tp_mlp_times(8192, 16384, 53248, lo, TRN2_BF16, w, mlp=mlp)
        t_hi = P.tp_mlp_times(8192, 16384, 53248, hi, TRN2_BF16, w, mlp=mlp)
        assert t_lo.comm_to_compute < 1 < t_hi.comm_to_compute


@settings(max_examples=50, deadline=None)
@given(tokens=st.floats(1, 1e7), y=st.integers(2, 512), f=st.integers(256, 100_000))
def test_tp_ratio_does_not_depend_on_tokens_and_matches_the_limit(tokens, y, f):
    w = 256e9
    t = P.tp_mlp_times(tokens, 4096, f, y, TRN2_BF16, w)
    t2 = P.tp_mlp_times(2 * tokens, 4096, f, y, TRN2_BF16, w)
    assert t.comm_to_compute == pytest.approx(t2.comm_to_compute)
    y_star = P.tp_limit_chips(f, TRN2_BF16, w)
    assert t.comm_to_compute == pytest.approx((y - 1) / (y_star - 1))


def test_lower_mfu_raises_the_tp_limit():
    w = 256e9
    assert P.tp_limit_chips(53248, TRN2_BF16, w, mfu=0.4) - 1 == pytest.approx(
        (P.tp_limit_chips(53248, TRN2_BF16, w) - 1) / 0.4)


def test_tp_rule_predicts_the_layout_models_tp_share():
    """TP128 ranks = 32 chips crosses the UltraServer ring: the layout model's exposed TP time
    over its compute is within a few percent of the MLP rule at the same MFU (the layer adds
    attention, whose projections and all-reduce have a similar ratio)."""
    e = layouts.evaluate(layouts.layout("llama3-405b", tp=128, pp=2, dp=2, zero_stage=1,
                                        n_micro_batches=16, lnc=2), mfu=0.4)
    assert e.levels["tp"] == "ultraserver"
    ratio = e.time_s["tp_comm"] / e.time_s["compute"]
    rule = P.tp_mlp_times(8192, 16384, 53248, 32, TRN2_BF16,
                          specs.link("trn2-neuronlink-inter").bytes_per_s, mfu=0.4).comm_to_compute
    assert ratio == pytest.approx(rule, rel=0.25)


def test_tp_limit_table_levels():
    t = P.tp_limit_table(("llama3-405b",), ("trn2-ultraserver", "trn3-gen2-ultraserver"))
    trn2 = t[t.system == "trn2-ultraserver"].set_index("level")
    assert trn2.loc["instance", "bound_by"] == "level"      # 124 chips > the 16 of an instance
    assert trn2.loc["ultraserver", "bound_by"] == "communication"
    trn3 = t[t.system == "trn3-gen2-ultraserver"].set_index("level")
    assert trn3.loc["ultraserver", "bound_by"] == "level"   # ~306 chips > 144 in the UltraServer
    c = topology.cluster("trn2-ultraserver", 1, 2)
    assert trn2.loc["instance", "chips_in_level"] == c.chips_per_instance


# ----------------------------------------------------------------------------- schedules


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 12), m=st.integers(1, 24), tf=st.floats(0.1, 5), ratio=st.floats(0.5, 4),
       kind=st.sampled_from(P.PIPELINE_SCHEDULES))
def test_schedule_invariants(p, m, tf, ratio, kind):
    tb = tf * ratio
    s = P.pipeline_schedule(p, m, schedule=kind, forward_s=tf, backward_s=tb)
    ops = s.ops
    assert len(ops) == 2 * p * m
    assert s.makespan_s == pytest.approx((m + p - 1) * (tf + tb))
    # every stage runs one pass at a time
    for _, g in ops.groupby("stage"):
        g = g.sort_values("start_s")
        assert (g.start_s.to_numpy()[1:] >= g.end_s.to_numpy()[:-1] - 1e-9).all()
    f = ops[ops.phase == "forward"].set_index(["stage", "micro_batch"])
    b = ops[ops.phase == "backward"].set_index(["stage", "micro_batch"])
    for st_ in range(1, p):
        for i in range(m):
            assert f.loc[(st_, i), "start_s"] >= f.loc[(st_ - 1, i), "end_s"] - 1e-9
            assert b.loc[(st_ - 1, i), "start_s"] >= b.loc[(st_, i), "end_s"] - 1e-9
    # busy + idle = makespan on every stage
    idle = s.idle.groupby("stage").apply(lambda g: (g.end_s - g.start_s).sum(), include_groups=False)
    for st_ in range(p):
        assert s.busy_s + float(idle.get(st_, 0.0)) == pytest.approx(s.makespan_s)


def test_one_f_one_b_order_matches_megatron():
    """Narayanan et al. 2021, Figure 4 (top): with 4 stages the first stage runs 3 warm-up
    forwards, then alternates, then drains; the last stage alternates from the start."""
    df = P.one_f_one_b_schedule(4, 8)
    first = df[df.stage == 0]
    seq = [f"{'F' if ph == 'forward' else 'B'}{i}" for ph, i in zip(first.phase, first.micro_batch)]
    assert seq[:6] == ["F0", "F1", "F2", "F3", "B0", "F4"]
    assert seq[-3:] == ["B5", "B6", "B7"]
    last = df[df.stage == 3]
    seq = [f"{'F' if ph == 'forward' else 'B'}{i}" for ph, i in zip(last.phase, last.micro_batch)]
    assert seq[:4] == ["F0", "B0", "F1", "B1"]
    assert P.gpipe_schedule(4, 8).phase.tolist()[:8] == ["forward"] * 8


def test_repr_markdown():
    assert "bubble **0.188**" in P.pipeline_schedule(4, 16)._repr_markdown_()
    assert "ratio" in P.tp_mlp_times(8192, 4096, 14336, 8, TRN2_BF16, 1e12)._repr_markdown_()


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, name", [
    (lambda: P.dp_compute_bound_tokens(0, 1e9), "peak_flops_per_s"),
    (lambda: P.dp_compute_bound_tokens(1e15, -1), "bandwidth_bytes_per_s"),
    (lambda: P.dp_compute_bound_tokens(1e15, 1e9, n=0), "n"),
    (lambda: P.dp_compute_bound_tokens(1e15, 1e9, mfu=1.5), "mfu"),
    (lambda: P.tp_limit_chips(0, 1e15, 1e9), "ffn_dim"),
    (lambda: P.tp_limit_chips(1024, 1e15, 1e9, mlp="relu"), "mlp"),
    (lambda: P.tp_mlp_times(1e3, 4096, 14336, 0, 1e15, 1e9), "tp_chips"),
    (lambda: P.tp_mlp_times(1e3, 4096, 14336, 4, 1e15, 1e9, bytes_per_element=0), "bytes_per_element"),
    (lambda: P.level_ratios_table(("trn9",)), "systems"),
    (lambda: P.level_ratios_table(("trn2-ultraserver",), dtype="int4"), "dtype"),
    (lambda: P.tp_limit_table(("gpt-5",)), "model|preset"),
    (lambda: P.tp_limit_table((3,)), "models"),
    (lambda: P.pipeline_schedule(0, 4), "pp"),
    (lambda: P.pipeline_schedule(4, 0), "n_micro_batches"),
    (lambda: P.pipeline_schedule(128, 1024), "pp × n_micro_batches"),
    (lambda: P.pipeline_schedule(4, 4, schedule="zb-h1"), "schedule"),
    (lambda: P.pipeline_schedule(4, 4, forward_s=0), "forward_s"),
    (lambda: P.pipeline_schedule(4, 4, backward_s=float("nan")), "backward_s"),
    (lambda: P.pipeline_schedule(4, 4, backward_s=1e20), "backward_s"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def _text_boxes(scene, out=None):
    """(x0, y0, x1, y1, text) of every text item in a Vega scenegraph, sized with the chart font."""
    from trainium_lab.charts.base import text_width_px as _text_px

    out = [] if out is None else out
    if isinstance(scene, dict):
        if scene.get("marktype") == "text" and scene.get("role") == "mark":
            for it in scene.get("items", []):
                size = it.get("fontSize", 11)
                bold = it.get("fontWeight") == "bold"
                text = it["text"]
                lines = text.split("\n")
                w = _text_px(text, size, bold=bold)
                h = it.get("lineHeight", size) * (len(lines) - 1) + size
                x0 = {"center": it["x"] - w / 2, "left": it["x"], "right": it["x"] - w}[it.get("align", "center")]
                y0 = it["y"] if it.get("baseline") == "top" else it["y"] - h / 2
                out.append((x0, y0, x0 + w, y0 + h, text))
        for value in scene.values():
            _text_boxes(value, out)
    elif isinstance(scene, list):
        for value in scene:
            _text_boxes(value, out)
    return out


@pytest.mark.parametrize("block", ["mlp", "attention"])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_tp_split_chart_texts_do_not_overlap(block, tp):
    """The captions, operators and the all-reduce labels of the static split picture (laid out
    by vl-convert with the course font, as the stored SVG is) leave each other room, and stay
    inside the plot, at the default width."""
    import vl_convert as vlc

    from trainium_lab.charts import base
    from trainium_lab.charts.parallelism import tp_split_chart

    base.register_fonts()
    chart = tp_split_chart(block, tp=tp)
    spec = base.with_course_config(chart.to_dict(validate=False))
    boxes = _text_boxes(vlc.vegalite_to_scenegraph(spec)["scenegraph"]["items"][0]["items"])
    plot = [b for b in boxes if b[4].count("\n") or b[4] in ("·", "=", "→", "all-reduce", "(sum)")]
    assert len(plot) >= 10
    width = spec["layer"][0]["width"] if "width" in spec["layer"][0] else spec["width"]
    for i, a in enumerate(plot):
        assert -1 <= a[0] and a[2] <= width + 1, a
        for b in plot[i + 1:]:
            apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
            assert apart, (a, b)


# ------------------------------------------------------------------ issue 39: the ZeRO rules

parallelism = P


def test_fsdp_threshold_equals_the_dp_threshold_when_weights_and_gradients_match():
    # the FSDP/ZeRO-3 condition per micro-batch is the DP condition when w = g (derived in chapter 05)
    for n in (2, 8, 64):
        for g in (2.0, 4.0):
            assert parallelism.fsdp_compute_bound_tokens(667e12, 25e9, n=n, mfu=0.3, weight_bytes_per_param=g,
                                                         grad_bytes_per_param=g) == pytest.approx(
                parallelism.dp_compute_bound_tokens(667e12, 25e9, n=n, mfu=0.3, grad_bytes_per_param=g), rel=1e-12)
    # FP32 parameters (TorchNeuron's autocast recipe) double it
    a = parallelism.fsdp_compute_bound_tokens(667e12, 25e9, n=8)
    assert parallelism.fsdp_compute_bound_tokens(667e12, 25e9, n=8, weight_bytes_per_param=4,
                                                 grad_bytes_per_param=4) == pytest.approx(2 * a, rel=1e-12)
    with pytest.raises(ValueError, match="mfu"):
        parallelism.fsdp_compute_bound_tokens(667e12, 25e9, mfu=0.0)


def test_zero2_with_accumulation_sends_m_plus_one_over_two_times_zero1():
    for m in (1, 4, 64):
        t = parallelism.zero_traffic_table(8, m).set_index("zero_stage")
        assert t.loc[2, "vs_stage_1"] == pytest.approx((m + 1) / 2, rel=1e-12)
        assert t.loc[0, "total_bytes_per_param"] == t.loc[1, "total_bytes_per_param"]
        assert t.loc[3, "total_bytes_per_param"] > t.loc[2, "total_bytes_per_param"]
    with pytest.raises(ValueError, match="n_micro_batches"):
        parallelism.zero_traffic_table(8, 0)
