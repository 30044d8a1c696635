"""Tests for trainium_lab.collectives: published worked numbers, identities, properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainium_lab import collectives as c
from trainium_lab import specs, topology
from trainium_lab.units import GB, GiB, ms, us

INTRA = specs.link("trn2-neuronlink-intra").bytes_per_s
INTER = specs.link("trn2-neuronlink-inter").bytes_per_s
EFA = specs.link("trn2-efa").bytes_per_s
ACT = 2 * 4096 * 16384        # BF16 activation block, seq 4096 x hidden 16384 (seed 004)
GRAD = 2 * 405e9 / 64         # BF16 gradient shard per chip, 405B on 64 chips (seed 004)

sizes = st.floats(min_value=0.0, max_value=1e13, allow_nan=False)
ns = st.integers(min_value=1, max_value=4096)
bws = st.floats(min_value=1e6, max_value=1e14, allow_nan=False)
lats = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


# --- worked numbers from the course's background notes ------------------------------
# Seed 004 ("Trainium 2 + UltraServers, in depth"), "What collectives cost at each level",
# listed in ../shared/reference/published_cases.md with their unrounded values. The seed is a
# background document, not a public source: these pin the formula's arithmetic on AWS's link
# figures. The public checks are the nccom-test runs (AWS user guide) further down.

def test_link_figures_are_the_ones_the_seed_uses():
    # Trn2 architecture page / collectives doc: 1,024, 256 and 25 GB/s per chip
    assert (INTRA / GB, INTER / GB, EFA / GB) == (1024.0, 256.0, 25.0)


@pytest.mark.parametrize("size, n, bandwidth, published_s, unrounded_s, rel", [
    (ACT, 16, INTRA, 0.25 * ms, 0.24576 * ms, 0.02),    # "about 0.25 ms" (2 s.f.)
    (ACT, 4, INTER, 0.79 * ms, 0.786432 * ms, 0.007),   # "0.79 ms"
    (ACT, 16, EFA, 10.1 * ms, 10.0663 * ms, 0.005),     # "10.1 ms"
    (GRAD, 2, EFA, 0.51, 0.50625, 0.01),                # "0.51 s"
])
def test_seed_worked_numbers(size, n, bandwidth, published_s, unrounded_s, rel):
    t = c.ring_allreduce_s(size, n, bandwidth)
    assert t == pytest.approx(unrounded_s, rel=1e-5)
    assert t == pytest.approx(published_s, rel=rel)


def test_nccom_test_user_guide_runs():
    """AWS Neuron docs, NCCOM-TEST user guide (tools/neuron-sys-tools/nccom-test.rst): every
    printed run is reproduced from its size and time, and only when "GB/s" is read as GiB/s
    (the guide's own column definition: "gibibytes (1GiB = 1,073,741,824 bytes) per second").
    The printed values have two decimals, so the tolerance is half a unit in the last place."""
    t = c.nccom_test_cases()
    assert len(t) == 4 and set(t.source) == {specs.read_data_csv("nccom_test_cases.csv").source.iloc[0]}
    for r in t.itertuples():
        assert r.printed_unit == "GB/s"
        assert abs(r.algbw_gib_per_s - r.printed_algbw) <= 0.005 + 1e-9, r.case_id
        assert abs(r.busbw_gib_per_s - r.printed_busbw) <= 0.005 + 1e-9, r.case_id
        assert abs(r.algbw_gb_per_s - r.printed_algbw) > 0.05 * r.printed_algbw  # decimal reading fails


def test_nccom_test_first_run_by_hand():
    """nccom-test guide, "nccom-test -r 2 allr": 33,554,432 bytes, 2 ranks, 768 us, printed
    algbw = busbw = 40.69 "GB/s". 33,554,432 B / 768 us = 43.69e9 B/s = 40.69 GiB/s; with
    n = 2 the all-reduce bus factor 2(n-1)/n is 1."""
    size, time_s = 33_554_432, 768 * us
    assert c.algbw_bytes_per_s(size, time_s) / GiB == pytest.approx(40.69, abs=0.005)
    assert c.algbw_bytes_per_s(size, time_s) / GB == pytest.approx(43.69, abs=0.005)
    assert c.busbw_bytes_per_s(size, time_s, 2) == c.algbw_bytes_per_s(size, time_s)


def test_bus_factors():
    # nccl-tests doc/PERFORMANCE.md: 2(n-1)/n for all-reduce, (n-1)/n for the others
    assert c.bus_factor("all_reduce", 8) == 2 * 7 / 8
    for name in ("reduce_scatter", "all_gather", "all_to_all"):
        assert c.bus_factor(name, 8) == 7 / 8
    assert c.bus_factor("broadcast", 8) == 1.0


def test_placed_groups_reproduce_the_seed_numbers():
    # the same worked numbers, reached through placement instead of typed-in n and B
    p = topology.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2)
    assert c.group_collective_s(p, "tp", ACT) == pytest.approx(0.24576 * ms, rel=1e-6)
    per_rank = GRAD / p.cluster.ranks_per_chip
    assert c.group_collective_s(p, "dp", per_rank, latency_s=0.0) == pytest.approx(0.50625, rel=1e-6)
    # with EFA's published 15 us latency: two steps of alpha more
    assert c.group_collective_s(p, "dp", per_rank) == pytest.approx(0.50625 + 2 * 15 * us, rel=1e-6)
    # TP=16 chips placed across the four instances by a bad ordering runs on the ring
    bad = topology.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering="pp-tp-dp")
    assert bad.level("tp").name == "ultraserver"
    assert c.group_collective_s(bad, "tp", ACT) > 3 * c.group_collective_s(p, "tp", ACT)


# --- identities ---------------------------------------------------------------------

@given(sizes, ns, bws, lats)
def test_allreduce_is_reduce_scatter_plus_allgather(size, n, bw, lat):
    total = c.ring_reduce_scatter_s(size, n, bw, lat) + c.ring_allgather_s(size, n, bw, lat)
    assert c.ring_allreduce_s(size, n, bw, lat) == pytest.approx(total, rel=1e-12, abs=1e-300)


@given(sizes, bws, lats)
def test_one_participant_costs_nothing(size, bw, lat):
    for f in c.COLLECTIVES.values():
        assert f(size, 1, bw, lat) == 0.0


@given(sizes, ns, bws)
def test_hierarchical_with_one_level_is_the_ring(size, n, bw):
    assert c.hierarchical_allreduce_s(size, [(n, bw)]) == pytest.approx(c.ring_allreduce_s(size, n, bw))


def test_hierarchical_beats_flat_ring_over_the_slow_level():
    # 64 chips: 16 in a torus at 1,024 GB/s, 4 instances on the ring at 256 GB/s
    flat = c.ring_allreduce_s(ACT, 64, INTER)
    hier = c.hierarchical_allreduce_s(ACT, [(16, INTRA), (4, INTER)])
    expected = 2 * (15 / 16) * ACT / INTRA + 2 * (3 / 4) * (ACT / 16) / INTER
    assert hier == pytest.approx(expected)
    assert hier < flat / 3  # 0.29 ms against 1.03 ms


@given(st.floats(1.0, 1e13), st.integers(2, 512), bws)
def test_ring_all_to_all_is_n_over_2_times_switched(size, n, bw):
    ratio = c.ring_all_to_all_s(size, n, bw) / c.direct_all_to_all_s(size, n, bw)
    assert ratio == pytest.approx(n / 2)


@given(st.integers(2, 512), bws, st.floats(1e-9, 1e-2))
def test_crossover_is_where_terms_are_equal(n, bw, lat):
    s = c.latency_crossover_bytes(n, bw, lat)
    bandwidth_term = c.ring_allreduce_s(s, n, bw)
    assert c.ring_allreduce_s(s, n, bw, lat) == pytest.approx(2 * bandwidth_term)


def test_size_sweep_latency_share_falls_with_size():
    df = c.size_sweep([1e3, 1e5, 1e7, 1e9], 16, EFA, specs.link("trn2-efa").latency_s)
    assert df["latency_share"].is_monotonic_decreasing
    assert df["effective_bytes_per_s"].is_monotonic_increasing


# --- monotonicity (hypothesis) ------------------------------------------------------

@settings(max_examples=200)
@given(sizes, sizes, ns, bws, lats, st.sampled_from(sorted(c.COLLECTIVES)))
def test_monotone_in_size(s1, s2, n, bw, lat, name):
    lo, hi = sorted((s1, s2))
    assert c.collective_s(name, lo, n, bw, lat) <= c.collective_s(name, hi, n, bw, lat)


@settings(max_examples=200)
@given(sizes, ns, bws, bws, lats, st.sampled_from(sorted(c.COLLECTIVES)))
def test_monotone_in_inverse_bandwidth(size, n, b1, b2, lat, name):
    slow, fast = sorted((b1, b2))
    assert c.collective_s(name, size, n, fast, lat) <= c.collective_s(name, size, n, slow, lat)


@given(sizes, st.integers(1, 2000), bws)
def test_allreduce_monotone_in_n_and_bounded(size, n, bw):
    t, t_next = c.ring_allreduce_s(size, n, bw), c.ring_allreduce_s(size, n + 1, bw)
    assert t <= t_next * (1 + 1e-12)
    assert t <= 2 * size / bw * (1 + 1e-12)  # never more than 2 S / B without latency


# --- the step-by-step ring ----------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_ring_steps_end_fully_reduced(n):
    half = c.ring_allreduce_steps(n, n - 1)
    # after reduce-scatter each rank owns exactly one fully reduced chunk
    assert (half[half.contributions == n].groupby("rank").size() == 1).all()
    done = c.ring_allreduce_steps(n, 2 * (n - 1))
    assert (done.contributions == n).all()
    assert done.sent_fraction.iloc[0] == pytest.approx(2 * (n - 1) / n)
    # every step, each rank sends exactly one chunk
    for step in range(2 * (n - 1)):
        df = c.ring_allreduce_steps(n, step)
        assert (df.groupby("rank")["sending"].sum() == 1).all()


def test_ring_steps_partial_sums_grow_one_contribution_per_step():
    # in reduce-scatter step k each rank receives a partial sum of k + 1 contributions
    # and adds its own: n chunks gain k + 1 each
    n = 5
    totals = [c.ring_allreduce_steps(n, k).contributions.sum() for k in range(n)]
    assert [b - a for a, b in zip(totals, totals[1:])] == [n * (k + 1) for k in range(n - 1)]


# --- bad input ----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, name", [
    (dict(size_bytes=-1, n=4, bandwidth_bytes_per_s=1e9), "size_bytes"),
    (dict(size_bytes=1e6, n=0, bandwidth_bytes_per_s=1e9), "n"),
    (dict(size_bytes=1e6, n=2.5, bandwidth_bytes_per_s=1e9), "n"),
    (dict(size_bytes=1e6, n=4, bandwidth_bytes_per_s=0), "bandwidth_bytes_per_s"),
    (dict(size_bytes=1e6, n=4, bandwidth_bytes_per_s=-3e9), "bandwidth_bytes_per_s"),
    (dict(size_bytes=1e6, n=4, bandwidth_bytes_per_s=math.inf), "bandwidth_bytes_per_s"),
    (dict(size_bytes=1e6, n=4, bandwidth_bytes_per_s=1e9, latency_s=-1e-6), "latency_s"),
    (dict(size_bytes=float("nan"), n=4, bandwidth_bytes_per_s=1e9), "size_bytes"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    for f in c.COLLECTIVES.values():
        with pytest.raises(ValueError, match=name):
            f(**kwargs)


@given(st.one_of(st.integers(max_value=0), st.floats(max_value=0.0), st.just(float("nan"))))
def test_non_positive_bandwidth_always_rejected(bw):
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        c.ring_allreduce_s(1e6, 4, bw)


def test_other_bad_input():
    with pytest.raises(ValueError, match="collective"):
        c.collective_s("allreduce", 1e6, 4, 1e9)
    with pytest.raises(ValueError, match="levels"):
        c.hierarchical_allreduce_s(1e6, [])
    with pytest.raises(ValueError, match="n"):
        c.hierarchical_allreduce_s(1e6, [(0, 1e9), (2, 1e9)])
    with pytest.raises(ValueError, match="time_s"):
        c.algbw_bytes_per_s(1e6, 0)
    with pytest.raises(ValueError, match="step"):
        c.ring_allreduce_steps(4, 7)
    with pytest.raises(ValueError, match="n"):
        c.latency_crossover_bytes(1, 1e9, 1e-6)
    p = topology.place(tp=4, system="trn2.48xlarge", lnc=2, ordering="tp-pp-dp", dp=16)
    with pytest.raises(ValueError, match="kind"):
        c.group_collective_s(p, "sp", 1e6)
    with pytest.raises(ValueError, match="size_bytes"):
        c.group_collective_s(p, "dp", -1.0)


# --- when data parallelism is communication-bound (issue 15) ------------------------

def test_dp_threshold_reproduces_scaling_books_tpu_v5p_figure():
    """J. Austin et al., "How to Scale Your Model" (2025), training section: TPU v5p with
    C = 4.6e14 FLOP/s and W = 2 · 9e10 bytes/s for 1D data parallelism must carry "at least
    2,550" tokens per chip (4.6e14 / 1.8e11 = 2,555.6, printed rounded)."""
    assert c.dp_comm_bound_tokens_per_chip(4.6e14, 2 * 9e10) == pytest.approx(2550, rel=0.003)


def test_dp_threshold_on_trainium_levels():
    """Issue 15's Trainium2 figures, "roughly 650 inside an instance, 2,600 across the
    UltraServer ring, 27,000 over EFA": C/W from the sourced BF16 rate and link figures."""
    t = c.dp_comm_bound_table(["trn2-ultraserver"]).set_index("level").tokens_per_chip
    bf16 = specs.chip("trn2").dense_flops_per_s["bf16"]
    assert t["instance"] == pytest.approx(bf16 / INTRA) == pytest.approx(650, rel=0.01)
    assert t["ultraserver"] == pytest.approx(bf16 / INTER) == pytest.approx(2600, rel=0.01)
    assert t["efa"] == pytest.approx(bf16 / EFA) == pytest.approx(27000, rel=0.02)
    t3 = c.dp_comm_bound_table(["trn3-gen1-ultraserver"], "mxfp8").set_index("level")
    assert t3.tokens_per_chip["efa"] == pytest.approx(
        specs.chip("trn3").dense_flops_per_s["mxfp8"] / specs.link("trn3-efa").bytes_per_s)
    assert set(t3.dtype) == {"mxfp8"}


def test_dp_threshold_is_where_the_ring_all_reduce_equals_the_backward_pass():
    """Identity: at B = B*, the ring all-reduce of the BF16 gradients (ring_allreduce_s) takes
    exactly as long as the backward pass, 4·N·B / C, whatever N is."""
    for n_params in (1e8, 8e9, 4.05e11):
        for n in (2, 16, 64):
            b = c.dp_comm_bound_tokens_per_chip(667e12, EFA, n)
            backward_s = 4 * n_params * b / 667e12
            assert c.ring_allreduce_s(2 * n_params, n, EFA) == pytest.approx(backward_s, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(flop=st.floats(1e12, 1e17), bw=st.floats(1e8, 1e13), n=st.integers(2, 10_000),
       g=st.sampled_from([1.0, 2.0, 4.0]), k=st.sampled_from([4.0, 6.0]))
def test_dp_threshold_scales_as_c_over_w(flop, bw, n, g, k):
    base = c.dp_comm_bound_tokens_per_chip(flop, bw, n, grad_bytes_per_param=g,
                                           flops_per_token_per_param=k)
    assert c.dp_comm_bound_tokens_per_chip(2 * flop, bw, n, grad_bytes_per_param=g,
                                           flops_per_token_per_param=k) == pytest.approx(2 * base)
    assert c.dp_comm_bound_tokens_per_chip(flop, 2 * bw, n, grad_bytes_per_param=g,
                                           flops_per_token_per_param=k) == pytest.approx(base / 2)
    limit = c.dp_comm_bound_tokens_per_chip(flop, bw, grad_bytes_per_param=g,
                                            flops_per_token_per_param=k)
    assert base == pytest.approx(limit * (n - 1) / n) and base < limit
    assert c.dp_comm_bound_tokens_per_chip(flop, bw, 1) == 0.0  # no peers, nothing to send


@pytest.mark.parametrize("kwargs, name", [
    (dict(flop_per_s=0, bandwidth_bytes_per_s=1e9), "flop_per_s"),
    (dict(flop_per_s=1e15, bandwidth_bytes_per_s=-1), "bandwidth_bytes_per_s"),
    (dict(flop_per_s=1e15, bandwidth_bytes_per_s=1e9, n=0), "n"),
    (dict(flop_per_s=1e15, bandwidth_bytes_per_s=1e9, grad_bytes_per_param=0), "grad_bytes_per_param"),
    (dict(flop_per_s=1e15, bandwidth_bytes_per_s=1e9, flops_per_token_per_param="4"),
     "flops_per_token_per_param"),
])
def test_dp_threshold_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        c.dp_comm_bound_tokens_per_chip(**kwargs)


def test_dp_table_bad_dtype_and_system():
    with pytest.raises(ValueError, match="dtype"):
        c.dp_comm_bound_table(["trn2-ultraserver"], "mxfp8")  # Trainium2 has no MX rate
    with pytest.raises(ValueError, match="system"):
        c.dp_comm_bound_table(["h100"])


# --- small groups in the torus (chapter 03 audit: the 1,024 GB/s is per device) ----------


def test_torus_group_links_on_trn2_grid():
    """AWS Neuron docs, "Collective communication: System Connectivity": each Trn2 chip links to
    4 neighbours in a 4x4 2D torus. With row-major numbering, 2 chips share 1 link, a row of 4 is
    a ring (2 links each, with the wrap-around), two rows give 3, the whole torus 4."""
    side = topology.cluster("trn2-ultraserver", lnc=2).grid_side
    assert [c.torus_group_links(n, side) for n in (1, 2, 4, 8, 16)] == [0, 1, 2, 3, 4]
    assert c.torus_group_links(2, 2) == 1 and c.torus_group_links(4, 2) == 2  # repeated neighbours count once


@given(st.integers(min_value=1, max_value=12), st.data())
@settings(max_examples=60, deadline=None)
def test_torus_group_links_bounds(side, data):
    n = data.draw(st.integers(min_value=1, max_value=side * side))
    links = c.torus_group_links(n, side)
    full = c.torus_group_links(side * side, side)
    assert 0 <= links <= full <= 4
    assert (links == 0) == (n == 1)
    if side >= 3:   # every chip of a full torus has 4 distinct neighbours
        assert full == 4


def test_torus_group_bandwidth_is_a_share_of_the_device_figure():
    """The whole instance gets the per-device figure the course uses everywhere; smaller groups
    get their links' share of it (equal links: an assumption, AWS gives no per-link figure)."""
    assert c.torus_group_bytes_per_s(16) == INTRA
    assert [c.torus_group_bytes_per_s(n) / INTRA for n in (1, 2, 4, 8)] == [0.0, 0.25, 0.5, 0.75]
    # the course's model charges small groups the whole figure, so it is never slower
    for n in (2, 4, 8):
        assert c.level_collective_s(ACT, n, "instance") < c.ring_allreduce_s(ACT, n, c.torus_group_bytes_per_s(n))
    assert c.torus_group_bytes_per_s(4, "trn1.32xlarge") == specs.link("trn1-neuronlink").bytes_per_s / 2


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_chips=0), "n_chips"), (dict(n_chips=17), "n_chips"), (dict(n_chips=2.5), "n_chips"),
    (dict(n_chips=None), "n_chips"), (dict(n_chips=4, system="trn3-gen1-ultraserver"), "system"),
    (dict(n_chips=4, system=None), "system"), (dict(n_chips=4, system="h100"), "system"),
])
def test_torus_group_bytes_per_s_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        c.torus_group_bytes_per_s(**kwargs)


@pytest.mark.parametrize("n, side, name", [(0, 4, "n_chips"), (17, 4, "n_chips"), (2, 0, "grid_side"),
                                           (2, float("nan"), "grid_side"), (10**30, 4, "n_chips")])
def test_torus_group_links_bad_input(n, side, name):
    with pytest.raises(ValueError, match=name):
        c.torus_group_links(n, side)


# --------------------------------------------------------------------- torus_average_hops


def test_torus_average_hops_whole_4x4_torus_is_32_over_15():
    """4 × 4 torus, 16 chips: per dimension a chip's ring distances are 0, 1, 2, 1 (sum 4), so the
    15 peers sit 2·4·4/15 = 32/15 hops away on average (Dally & Towles 2004, §3.2: k/4 per
    dimension over all k nodes, 2·4/4 = 2 = 32/16 including the chip itself)."""
    assert c.torus_average_hops(16, 4) == 32 / 15
    assert c.torus_average_hops(16, 4) * 15 / 16 == pytest.approx(2.0, rel=1e-15)


@settings(max_examples=30, deadline=None)
@given(side=st.integers(1, 8))
def test_torus_average_hops_closed_form_for_the_whole_torus(side):
    """The breadth-first mean equals the k-ary 2-cube's closed form 2·k·Σ_d min(d, k−d)/(k²−1)."""
    n = side * side
    if n == 1:
        assert c.torus_average_hops(1, side) == 0.0
        return
    ring = sum(min(d, side - d) for d in range(side))
    assert c.torus_average_hops(n, side) == pytest.approx(2 * side * ring / (n - 1), rel=1e-12)


def test_torus_average_hops_small_groups_and_bad_input():
    """One chip 0; two neighbours 1; a row of 4 wrapped into a ring: 1, 2, 1 → 4/3."""
    assert c.torus_average_hops(1, 4) == 0.0
    assert c.torus_average_hops(2, 4) == 1.0
    assert c.torus_average_hops(4, 4) == pytest.approx(4 / 3, rel=1e-15)
    with pytest.raises(ValueError, match="n_chips"):
        c.torus_average_hops(17, 4)
    with pytest.raises(ValueError, match="grid_side"):
        c.torus_average_hops(4, 10**30)
    with pytest.raises(ValueError, match="n_chips"):
        c.torus_average_hops("4", 4)


# ---------------------------------------------------------------- 2D torus all-reduce (issue 26)


def test_2d_torus_allreduce_reaches_the_four_link_aggregate_on_a_square_torus():
    # scaling-book part 3: bidirectional rings on every axis; each chip sends 2(N-1)/N·S, the minimum,
    # over its four links at once -> one ring at the four-link aggregate (Patarasuk & Yuan 2009)
    from trainium_lab import collectives as co

    b, s = 25e9, 1e9
    assert co.torus_2d_allreduce_s(s, 4, 4, b) == pytest.approx(co.ring_allreduce_s(s, 16, 4 * b), rel=1e-12)
    assert co.torus_2d_allreduce_s(s, 8, 8, b) == pytest.approx(co.ring_allreduce_s(s, 64, 4 * b), rel=1e-12)
    # one axis: a bidirectional ring, both directions of two links
    assert co.torus_2d_allreduce_s(s, 4, 1, b) == pytest.approx(co.ring_allreduce_s(s, 4, 2 * b), rel=1e-12)
    # latency: 2(x-1) + 2(y-1) steps instead of 2(N-1)
    assert co.torus_2d_allreduce_s(0.0, 4, 4, b, latency_s=1e-6) == pytest.approx(12e-6)
    # never faster than the bandwidth minimum over four links, on a non-square torus either
    assert co.torus_2d_allreduce_s(s, 2, 8, b) >= co.ring_allreduce_s(s, 16, 4 * b) - 1e-15
    with pytest.raises(ValueError, match="link_bytes_per_s"):
        co.torus_2d_allreduce_s(s, 4, 4, 0.0)


# ---------------------------------------------------------------- the Neuron runtime's algorithms (issue 24)


def test_neuron_collective_is_the_model_reality_collective_returns():
    # one home: reality.collective (issue 24's interface) is neuron_collective's bound and expectation
    from trainium_lab import reality

    for op, size, n, system, k in [("all_reduce", 2**30, 64, "trn1.32xlarge", 2),
                                   ("all_gather", 8192, 32, "trn1.32xlarge", 1),
                                   ("all_reduce", 4096, 64, "trn2.48xlarge", 1),
                                   ("reduce_scatter", 2**26, 128, "trn2.48xlarge", 2)]:
        e = reality.collective(op, size, n_ranks=n, system=system, n_systems=k)
        n_c = c.neuron_collective(op, size, n_ranks=n, system=system, n_systems=k)
        assert (e.bound_s, e.expected_s, e.detail) == (n_c.bound_s, n_c.expected_s, n_c.algorithm)
        assert n_c.expected_s == pytest.approx(n_c.latency_s + n_c.per_byte_s * size, rel=1e-12)


def test_hierarchical_takes_fewer_steps_than_a_flat_ring_across_instances():
    # AWS "Inter-node Collective Communications": Ring + Ring is O(X) + O(Y) steps, a flat ring
    # O(X·Y): 64 ranks on two trn1 instances take a small all-reduce's 2 Mesh steps inside each
    # (in a compiled graph) + 2 EFA steps, not 2·63 steps each bounded by its EFA hop.
    kw = dict(n_ranks=64, system="trn1.32xlarge", n_systems=2)
    h = c.neuron_collective("all_reduce", 8, algorithm="hierarchical", **kw)
    f = c.neuron_collective("all_reduce", 8, algorithm="flat_ring", **kw)
    p = c._neuron_params()
    # issue 38: AWS's documented hops (2 us inside a node, 15 us over EFA), one in-graph fixed cost
    assert p["efa_hop_s"] == 15e-6 and p["hop_s"] == 2e-6 and p["dma_efficiency"] is None
    assert h.latency_s == pytest.approx(p["fixed_s"] + 2 * p["hop_s"] + 2 * p["efa_hop_s"], rel=1e-12)
    # the NCCOM-TEST guide's Trn1 runs are modelled as the ring their own times show: 2·31 NeuronLink steps
    q = c._neuron_params("nccom-test")
    ht = c.neuron_collective("all_reduce", 8, algorithm="hierarchical", launched_by="nccom-test", **kw)
    assert ht.latency_s == pytest.approx(q["fixed_s"] + 62 * q["hop_s"] + 2 * q["efa_hop_s"], rel=1e-12)
    assert f.latency_s == pytest.approx(p["fixed_s"] + 126 * max(p["hop_s"], p["efa_hop_s"]), rel=1e-12)
    assert h.latency_s < f.latency_s
    # "auto" takes the faster below AWS's 16 MB "small collective" boundary (Neuron 2.17 notes) and
    # the flat ring from it up (AWS: "We only enable Flat Ring on Trn1 for large message size cases", keyed here on
    # NeuronLink-v2), even where the model finds it slower; the bound is the cheaper either way
    assert c.flat_ring_min_bytes() == 16e6
    for size in (8.0, 2.0**20, 2.0**23, 2.0**24, 2.0**30, 2.0**34):
        a = c.neuron_collective("all_reduce", size, **kw)
        hh = c.neuron_collective("all_reduce", size, algorithm="hierarchical", **kw)
        ff = c.neuron_collective("all_reduce", size, algorithm="flat_ring", **kw)
        assert a.expected_s == (min(hh.expected_s, ff.expected_s) if size < 16e6 else ff.expected_s)
        assert a.bound_s == min(hh.bound_s, ff.bound_s) <= a.expected_s
    # routed NeuronLink (Trainium2) has no flat ring across systems
    assert c.neuron_collective("all_reduce", 2.0**30, n_ranks=128, system="trn2.48xlarge", n_systems=2
                               ).algorithm.startswith("hierarchical")


def test_hierarchical_efa_carries_the_buffer_once_per_instance():
    # the inter-node stage all-reduces each rank's 1/r shard: r · 2(k−1)/k · S/r bytes per instance
    s = specs.system("trn1.32xlarge")
    h = c.neuron_collective("all_reduce", 2**30, n_ranks=64, system=s.key, n_systems=2, algorithm="hierarchical")
    assert h.bound_s == pytest.approx(2**30 / s.efa_bytes_per_s_total, rel=1e-12)
    # sharing: two DP groups on every chip (one per NeuronCore) each get half the chip's EFA share
    one = c.neuron_collective("all_reduce", 2**30, n_ranks=2, system=s.key, n_systems=2, sharing=1)
    two = c.neuron_collective("all_reduce", 2**30, n_ranks=2, system=s.key, n_systems=2, sharing=2)
    assert two.bound_s == pytest.approx(2 * one.bound_s, rel=1e-12)
    assert one.bound_s == pytest.approx(2**30 / (s.efa_bytes_per_s_total / s.n_chips), rel=1e-12)
    # a group spread over four chips of each instance gets four chips' share
    four = c.neuron_collective("all_reduce", 2**30, n_ranks=8, system=s.key, n_systems=2, chips_per_system=4)
    assert four.bound_s == pytest.approx(2**30 / (4 * s.efa_bytes_per_s_total / s.n_chips), rel=1e-12)


@pytest.mark.parametrize("kwargs, name", [
    (dict(sharing=0), "sharing"), (dict(algorithm="tree"), "algorithm"), (dict(n_systems=3), "n_ranks"),
    (dict(n_ranks=65), "n_ranks"), (dict(size_bytes=-1.0), "size_bytes"), (dict(system=3), "system"),
    (dict(chips_per_system=17), "chips_per_system"), (dict(chips_per_system=0), "chips_per_system"),
    (dict(op="broadcast"), "op")])
def test_neuron_collective_rejects_bad_input_naming_the_parameter(kwargs, name):
    args = dict(op="all_reduce", size_bytes=1024.0, n_ranks=64, system="trn1.32xlarge", n_systems=2)
    args.update(kwargs)
    op, size = args.pop("op"), args.pop("size_bytes")
    with pytest.raises(ValueError, match=name):
        c.neuron_collective(op, size, **args)


def test_flat_ring_is_trainium1s_only():
    # AWS: "We only enable Flat Ring on Trn1 for large message size cases"
    with pytest.raises(ValueError, match="algorithm"):
        c.neuron_collective("all_reduce", 2**30, n_ranks=128, system="trn2.48xlarge", n_systems=2,
                            algorithm="flat_ring")


def test_planner_costs_groups_spanning_instances_with_the_one_collective_model():
    # issue 24: hierarchical (instance-first) collectives for any group that spans instances, with
    # the launch and step latencies; the planner's DP all-reduce of Llama 3.1 8B at TP 32 DP 32 on
    # 32 trn1.32xlarge (AWS's published layout) is neuron_collective's, one rank per instance
    from trainium_lab.layouts import engine

    cm = engine._comm("trn1.32xlarge", 32, 1, 32, 1, 32)
    ref = c.neuron_collective("all_reduce", 1e9, n_ranks=32, system="trn1.32xlarge", n_systems=32, sharing=2,
                              chips_per_system=1)
    assert cm.dp_ar == (ref.latency_s, ref.per_byte_s)
    assert cm.dp_ar[0] > 2 * 31 * c._neuron_params()["efa_hop_s"]   # 62 EFA steps, plus the fixed cost
    # a group inside one instance keeps chapter 03's ring at the level's published rate
    assert cm.tp_ar[0] == 0.0


def test_preflight_expects_the_one_collective_model_for_groups_spanning_systems():
    from trainium_lab import planning

    p = planning.plan_run("llama3-405b", 1e12, system="trn2-ultraserver", n_systems=2, lnc=2,
                          global_batch=1024, usd_per_hour=40.0)
    row = planning.preflight_checks(p).set_index("step").loc["collective benchmark: dp (efa level)"]
    lay = p.layout
    cost = c.neuron_collective("all_reduce", GiB, n_ranks=lay.dp, system="trn2-ultraserver", n_systems=2,
                               chips_per_system=lay.dp // 2, lnc=2, launched_by="nccom-test")  # the tool's row
    assert row.value == pytest.approx(c.bus_factor("all_reduce", lay.dp) * GiB / cost.expected_s, rel=1e-12)
    assert "hierarchical" in row.expect and "size ÷ time" in row.expect
