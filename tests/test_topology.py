"""Tests for trainium_lab.topology: levels from data/, counting, rank placement."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainium_lab import specs, topology as t, views


# --- levels come from data/ with their scope and direction --------------------------

def test_levels_carry_bandwidth_scope_and_direction_from_specs():
    c = t.cluster("trn2-ultraserver")
    for name, key in (("instance", "trn2-neuronlink-intra"), ("ultraserver", "trn2-neuronlink-inter"),
                      ("efa", "trn2-efa")):
        lv, lk = c.level(name), specs.link(key)
        assert (lv.link_key, lv.bytes_per_s, lv.scope, lv.direction) == (key, lk.bytes_per_s, lk.scope, lk.direction)
    assert c.level("efa").latency_s == specs.link("trn2-efa").latency_s
    assert c.level("chip").bytes_per_s is None


def test_levels_get_slower_outwards_on_trn2():
    table = t.levels_table(["trn2-ultraserver"])
    assert table["bytes_per_s"].is_monotonic_decreasing
    assert list(table["level"]) == ["instance", "ultraserver", "efa"]
    # the ring gets a quarter of the torus (Trn2 architecture page: 1,024 vs 256 GB/s per chip)
    assert table.bytes_per_s.iloc[0] / table.bytes_per_s.iloc[1] == 4


def test_standalone_instance_has_no_ring_and_trn3_gen1_is_switched():
    assert [lv.name for lv in t.cluster("trn2.48xlarge").levels] == ["chip", "instance", "efa"]
    g1 = t.cluster("trn3-gen1-ultraserver", lnc=2)
    assert g1.level("instance").bytes_per_s == g1.level("ultraserver").bytes_per_s
    assert g1.level("ultraserver").switched and not t.cluster("trn2-ultraserver").level("ultraserver").switched


def test_trn3_lnc_default_is_the_stated_two():
    # issue 39: the NCCOM-TEST page's environment-variable table states NEURON_LOGICAL_NC_CONFIG's
    # default, 2 for trn2 and trn3 (in the docs since 2.28); the earlier inferred reading is kept as
    # an alternative row
    assert t.cluster("trn3-gen1-ultraserver").lnc == 2
    f = __import__("trainium_lab.specs", fromlist=["fact"]).fact("trn3", "lnc_default")
    assert f.source_id == "aws-nccom-test" and "stated" in f.note
    assert t.cluster("trn2-ultraserver").lnc == 2  # Trainium2's documented default
    assert t.cluster("trn1.32xlarge").lnc == 1  # no LNC setting: one rank per core


def test_trn3_gen2_uses_neuronlink_v4_like_gen1():
    """Amazon EC2 Trn3 Architecture (AWS Neuron docs): the specifications table gives
    "NeuronLink-v4 bandwidth (GiB/sec/device)" of 2,048 for Gen1 and for Gen2 alike, so Gen2 is
    modelled on NeuronLink-v4 like Gen1, not on the page's separate PCIe Gen6 figures."""
    g1 = t.cluster("trn3-gen1-ultraserver", lnc=1)
    g2 = t.cluster("trn3-gen2-ultraserver", lnc=1)
    for name in ("instance", "ultraserver"):
        assert g2.level(name).link_key == g1.level(name).link_key == "trn3-neuronlink"
        assert g2.level(name).bytes_per_s == g1.level(name).bytes_per_s == specs.link("trn3-neuronlink").bytes_per_s
        assert g2.level(name).switched
    alt = specs.alternatives("trn3-neuronlink", "bytes_per_s")
    assert [(a.value, a.unit, a.source_id) for a in alt] == [("2048", "GiB/s", "aws-trn3-arch")]


def test_trn3_gen2_pcie_figures_are_kept_as_sourced_alternatives():
    # trn3-arch (section added 2026-04-03): PCIe Gen6 per chip, 256 GB/s in a server, 320 GB/s
    # across servers, 128 GB/s across racks, all bidirectional; a different fabric, not reconciled
    alt = t.alternative_links_table(["trn3-gen2-ultraserver"])
    assert list(alt.link_key) == ["trn3-gen2-pcie-intra-server", "trn3-gen2-pcie-inter-server",
                                  "trn3-gen2-pcie-inter-rack"]
    assert list(alt.gb_per_s) == [256.0, 320.0, 128.0]
    assert set(alt.direction) == {"bidirectional"}
    assert set(alt.used_link_key) == {"trn3-neuronlink"}
    assert all(alt.source.str.contains("Trn3 Architecture"))
    g2 = t.cluster("trn3-gen2-ultraserver", lnc=1)
    assert g2.level("ultraserver").alternatives == ("trn3-gen2-pcie-inter-server", "trn3-gen2-pcie-inter-rack")
    assert t.alternative_links_table(["trn2-ultraserver"]).empty
    table = t.levels_table(["trn3-gen2-ultraserver"]).set_index("level")
    assert table.loc["instance", "alternatives"] == "trn3-gen2-pcie-intra-server"


def test_trn3_unknowns_are_said():
    # no source states a uniform figure inside the switched domain, nor Gen2's per-level split
    for system in ("trn3-gen1-ultraserver", "trn3-gen2-ultraserver"):
        for name in ("instance", "ultraserver"):
            assert "assumption" in t.cluster(system, lnc=1).level(name).note
    assert "not published" in t.cluster("trn3-gen2-ultraserver", lnc=1).level("ultraserver").note


def test_gen2_is_no_longer_ranked_slower_than_gen1():
    # the same TP all-reduce inside the switched domain costs the same on both generations
    from trainium_lab import collectives
    size = 2 * 8192 * 16384
    g1 = t.place(tp=64, dp=8, system="trn3-gen1-ultraserver", lnc=1)   # 8 chips: inside a server
    g2 = t.place(tp=64, dp=18, system="trn3-gen2-ultraserver", lnc=1)  # 8 chips: across two servers
    assert (g1.level("tp").name, g2.level("tp").name) == ("instance", "ultraserver")
    assert collectives.group_collective_s(g2, "tp", size) == pytest.approx(
        collectives.group_collective_s(g1, "tp", size))


def test_per_instance_efa_is_converted_to_per_chip():
    lv = t.cluster("trn1.32xlarge").level("efa")
    s = specs.system("trn1.32xlarge")
    assert lv.bytes_per_s == specs.link("trn1-efa").bytes_per_s / s.chips_per_instance
    assert "per chip" in lv.scope


# --- counting in logical cores ------------------------------------------------------

def test_logical_core_counts():
    # seeds 000 and 004, confirmed by the LNC page: 64 per trn2.48xlarge, 256 per UltraServer at LNC=2
    assert t.ranks_per_system("trn2.48xlarge", lnc=2) == 64
    assert t.ranks_per_system("trn2-ultraserver", lnc=2) == 256
    assert t.ranks_per_system("trn2.48xlarge", lnc=1) == 128
    assert t.ranks_per_chip("trn2") == specs.chip("trn2").neuron_cores // specs.chip("trn2").lnc_default
    assert t.cluster("trn2-ultraserver", n_systems=2, lnc=2).n_ranks == 512


def test_check_degrees():
    assert t.check_degrees(512, tp=64, pp=4, dp=2) == 512
    assert t.check_degrees(512, tp=16, pp=4, dp=2, ep=4) == 512
    with pytest.raises(ValueError, match=r"tp × pp × dp × ep"):
        t.check_degrees(512, tp=16, pp=4, dp=2)


# --- placement ----------------------------------------------------------------------

LAYOUTS = [
    dict(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2),
    dict(tp=8, pp=4, dp=8, ep=2, system="trn2-ultraserver", lnc=1),
    dict(tp=4, pp=2, dp=32, system="trn2.48xlarge", lnc=2),
    dict(tp=16, dp=72, system="trn3-gen2-ultraserver", lnc=1, n_systems=1),
    dict(tp=2, dp=16, system="trn1.32xlarge"),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("ordering", t.all_orderings())
def test_every_rank_on_exactly_one_logical_core(layout, ordering):
    p = t.place(**layout, ordering=ordering)
    r = p.ranks
    assert len(r) == p.cluster.n_ranks == len(set(r["rank"]))
    cores = set(zip(r.system, r.instance, r.chip, r.core))
    assert len(cores) == p.cluster.n_ranks  # no two ranks share a core, none is left out
    assert r.core.max() == p.cluster.ranks_per_chip - 1
    assert r.chip.max() == p.cluster.chips_per_instance - 1
    # every grid coordinate appears exactly once
    assert len(set(zip(r.tp, r.pp, r.dp, r.ep))) == p.cluster.n_ranks
    # groups partition the ranks
    for kind in t.KINDS:
        members = p._members(kind)
        assert sorted(members.ravel().tolist()) == list(range(p.cluster.n_ranks))
        assert (r.loc[members[:, 0], kind].to_numpy() == 0).all()


def test_default_ordering_keeps_tp16_inside_an_instance():
    # seed 004: TP across the 16 chips of an instance (TP = 64 logical cores at LNC=2),
    # PP = 4 along the ring, DP = 2 over EFA, on two UltraServers
    p = t.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2)
    g = p.groups("tp")
    assert (g.n_chips == 16).all() and (g.n_instances == 1).all()
    assert [p.level(k).name for k in ("tp", "pp", "dp")] == ["instance", "ultraserver", "efa"]
    assert p.problems == ()
    s = p.summary().set_index("kind")
    assert s.loc["tp", "bytes_per_s"] == specs.link("trn2-neuronlink-intra").bytes_per_s
    assert s.loc["dp", "direction"] == specs.link("trn2-efa").direction


@pytest.mark.parametrize("ordering, slow_level", [
    ("pp-tp-dp", "ultraserver"), ("dp-tp-pp", "ultraserver"), ("dp-pp-tp", "efa"), ("pp-dp-tp", "efa"),
])
def test_bad_ordering_is_detected_and_reported(ordering, slow_level):
    p = t.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering=ordering)
    assert p.level("tp").name == slow_level
    assert len(p.problems) == 1 and p.problems[0].startswith("TP groups")
    assert slow_level in p.problems[0]


def test_orderings_with_tp_innermost_are_never_flagged():
    for ordering in t.all_orderings():
        p = t.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering=ordering)
        assert (p.problems == ()) == ordering.startswith("tp")


def test_switched_fabric_is_not_flagged():
    # on Trn3 Gen1 every level inside the UltraServer has the same figure, so a spread TP group costs nothing more
    p = t.place(tp=16, dp=16, system="trn3-gen1-ultraserver", lnc=2, ordering="dp-tp-pp")
    assert p.level("tp").name == "ultraserver"
    assert p.problems == ()


def test_tp_wider_than_an_instance_must_cross_the_ring():
    p = t.place(tp=128, dp=2, system="trn2-ultraserver", lnc=2)
    assert p.level("tp").name == "ultraserver" and p.problems == ()


def test_lnc_changes_the_rank_count_not_the_chips():
    p1 = t.place(tp=128, pp=4, dp=2, system="trn2-ultraserver", lnc=1)
    p2 = t.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2)
    assert p1.groups("tp").n_chips.max() == p2.groups("tp").n_chips.max() == 16


def test_chip_map_matches_ranks():
    p = t.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering="dp-pp-tp")
    m = views.chip_map(p, "tp")
    assert len(m) == p.cluster.n_chips
    assert (m.n_groups == p.cluster.ranks_per_chip).all()  # four TP groups on every chip
    good = views.chip_map(t.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2), "tp")
    assert (good.n_groups == 1).all()
    assert good.groupby(["system", "instance"]).group.nunique().eq(1).all()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2]),
       st.sampled_from(t.all_orderings()))
def test_slowest_level_never_faster_than_group_size_allows(tp, pp, ep, ordering):
    total = 256
    dp = total // (tp * pp * ep)
    if dp < 1:
        return
    p = t.place(tp=tp, pp=pp, dp=dp, ep=ep, system="trn2-ultraserver", lnc=2, ordering=ordering)
    for row in p.summary().itertuples():
        assert t.LEVEL_NAMES.index(row.level) >= t.LEVEL_NAMES.index(row.expected_level)
        assert row.n_chips >= row.min_chips


# --- bad input ----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, name", [
    (dict(tp=0), "tp"),
    (dict(tp=64, pp=-1), "pp"),
    (dict(tp=64, pp=4, dp=2.5), "dp"),
    (dict(tp=64, pp=3), r"tp × pp × dp × ep"),
    (dict(tp=64, pp=4, n_systems=2), r"tp × pp × dp × ep"),
    (dict(tp=64, pp=4, system="trn2.96xlarge"), "system"),
    (dict(tp=64, pp=4, system="trn2", ), "system"),
    (dict(tp=64, pp=4, lnc=3), "lnc"),
    (dict(tp=64, pp=4, ordering="tp-pp"), "ordering"),
    (dict(tp=64, pp=4, ordering="tp-sp-dp"), "ordering"),
    (dict(tp=64, pp=4, n_systems=0), "n_systems"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    kwargs = {"system": "trn2-ultraserver", **kwargs}
    with pytest.raises(ValueError, match=name):
        t.place(**kwargs)


def test_unknown_names():
    with pytest.raises(ValueError, match="system must be one of"):
        t.cluster("p5.48xlarge")
    with pytest.raises(ValueError, match="level"):
        t.cluster("trn2.48xlarge").level("ultraserver")
    with pytest.raises(ValueError, match="kind"):
        t.place(tp=64, pp=4, lnc=2).groups("cp")
    with pytest.raises(ValueError, match="lnc"):
        t.ranks_per_chip("trn1", lnc=2)


@pytest.mark.parametrize("bad", [float("nan"), 10**30, -1, True, ["trn9"]])
def test_level_tables_reject_bad_systems(bad):
    for fn in (t.levels_table, t.alternative_links_table):
        with pytest.raises(ValueError, match="system"):
            fn(bad)


def test_one_lnc_rule_and_one_message():
    """Issue 13: LNC is resolved in one place (cores.resolve_lnc); topology gives the same
    answer and the same message for the same mistake."""
    from trainium_lab import cores

    for chip, lnc in (("trn1", 2), ("trn2", 3), ("trn2", "2"), ("trn3", 3), ("trn2", 1.5)):
        with pytest.raises(ValueError) as a:
            cores.resolve_lnc(chip, lnc)
        with pytest.raises(ValueError) as b:
            t.ranks_per_chip(chip, lnc)
        assert str(a.value) == str(b.value) and str(a.value).startswith("lnc must be")
    with pytest.raises(ValueError, match="lnc must be None or 1 for Trainium1"):
        t.ranks_per_chip("trn1", 2)
    with pytest.raises(ValueError) as c:
        t.cluster("trn2.48xlarge", lnc=3)
    assert str(c.value) == "lnc must be one of 1, 2 for Trainium2 (or None for its default); got 3"
    for chip in ("trn1", "trn2"):
        for lnc in (None, *specs.chip(chip).lnc_options):
            assert t.ranks_per_chip(chip, lnc) == cores.logical_cores_per_chip(chip, lnc)
    import numpy as np
    assert t.cluster("trn2.48xlarge", lnc=np.int64(1)).ranks_per_chip == 8


# ----------------------------------------------------------------------------- closed-form spans (chapter 10)


@given(system=st.sampled_from([("trn2-ultraserver", 2), ("trn2-ultraserver", 1), ("trn2.48xlarge", 2),
                               ("trn1.32xlarge", None), ("trn3-gen1-ultraserver", 2)]),
       n_systems=st.integers(1, 4), data=st.data())
@settings(max_examples=60, deadline=None)
def test_group_spans_equal_the_rank_table(system, n_systems, data):
    """group_spans (the planner's fast path) gives what Placement.slowest and Placement.groups
    give from the full rank table, for any degrees (not only powers of two) and any ordering."""
    from trainium_lab import topology

    name, lnc = system
    c = topology.cluster(name, n_systems, lnc)
    n = c.n_ranks
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    tp = data.draw(st.sampled_from(divisors))
    ep = data.draw(st.sampled_from([d for d in divisors if (n // tp) % d == 0]))
    pp = data.draw(st.sampled_from([d for d in divisors if (n // (tp * ep)) % d == 0]))
    dp = n // (tp * ep * pp)
    ordering = data.draw(st.sampled_from(topology.all_orderings(include_ep=True)))
    p = topology.place(tp, pp, dp, ep, system=name, n_systems=n_systems, lnc=lnc, ordering=ordering)
    fast = topology.group_spans(tp, pp, dp, ep, system=name, n_systems=n_systems, lnc=lnc,
                                ordering=ordering).set_index("kind")
    for kind in topology.KINDS:
        level, n_chips, sharing = p.slowest(kind)
        groups = p.groups(kind)
        row = fast.loc[kind]
        assert (row.level, row.n_chips, row.sharing) == (level.name, n_chips, sharing)
        assert (row.n_instances, row.n_systems) == (groups.n_instances.max(), groups.n_systems.max())


def test_group_spans_at_100k_chips_without_a_rank_table():
    from trainium_lab import topology

    spans = topology.group_spans(tp=64, pp=4, dp=1536, ep=1, system="trn2-ultraserver", n_systems=1536, lnc=2)
    spans = spans.set_index("kind")
    assert spans.loc["tp", "level"] == "instance" and spans.loc["pp", "level"] == "ultraserver"
    assert spans.loc["dp", "n_chips"] == 1536 and spans.loc["dp", "level"] == "efa"


def test_dp_threshold_explorer_marks_the_levels_a_batch_cannot_hide():
    from trainium_lab.widgets.topology import dp_threshold_explorer

    e = dp_threshold_explorer(4096)
    rows = e.summary.value.split("<tr>")[2:]
    assert [("communication-bound" in r) for r in rows] == [False, False, True]  # instance, ring, EFA
    e.controls["tokens_per_chip"].value = 30_000
    assert "communication-bound" not in e.summary.value
    e.controls["system"].value = "trn3-gen1-ultraserver"
    assert list(e.controls["dtype"].options) == ["bf16", "mxfp8"] and e.last_error is None
    e.controls["dtype"].value = "mxfp8"                      # 100,680 tokens over EFA
    assert "communication-bound" in e.summary.value
    e.controls["tokens_per_chip"].value = 0
    assert e.last_error == "tokens/chip must be ≥ 1; got 0"


@pytest.mark.parametrize("factory, moves", [
    ("ring_stepper", [("n", 6), ("n", 2), ("step", 1), ("n", 8), ("step", 13)]),
    ("latency_sweep_explorer", [("n", 17), ("n", 1), ("n", 64), ("latency_us", "0"),
                                ("latency_us", "50"), ("level", "ultraserver (trn2-neuronlink-inter)"),
                                ("collective", "all_to_all")]),
    # (degrees that change the number of groups coloured change the colour scale: a new spec)
    ("placement_explorer", [("lnc", 1), ("system", "trn3-gen1-ultraserver"), ("highlight", "3"),
                            ("size_mb", "10"), ("lnc", 2)]),
    ("dp_threshold_explorer", [("n", 65), ("n", 1024), ("grad_bytes", 4.0), ("overlap", 6.0),
                               ("tokens_per_chip", "3000000"), ("system", "trn3-gen1-ultraserver")]),
])
def test_chapter_03_explorers_update_by_data_alone(factory, moves):
    """Issue 30: a slider or an ordinary control changes only the chart's data (and title),
    so the page swaps the data in the view already drawn instead of re-parsing the spec."""
    from trainium_lab.widgets import topology as widgets

    ex = getattr(widgets, factory)()
    template = ex._live[0]
    for name, value in moves:
        ex.controls[name].value = value
        assert ex.last_error is None, (name, value, ex.last_error)
        assert ex._live[0] == template, f"{factory}: {name} = {value!r} changed the chart's structure"
