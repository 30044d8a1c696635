"""Trn3 Gen2 under both readings of its architecture page (issue 26 item 5).

Source: aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-hardware/trn3-arch.rst — the table gives
"NeuronLink-v4 bandwidth (GiB/sec/device) 2,048" (the Trainium3 page: 2.56 TB/s per device), and the
"Trn3 UltraServer Connectivity and Networking" section (added 2026-04-03) gives per chip 256 GB/s inside
a 4-chip server (4 × PCIe Gen6 x8), 320 GB/s across servers (5 × x8) and 128 GB/s across racks (2 × x8).
"""

from __future__ import annotations

import pytest

from trainium_lab import layouts, parallelism, specs, topology

GEN2 = "trn3-gen2-ultraserver"
READINGS = topology.FABRIC_READINGS[GEN2]


def _gbps(system: str) -> dict[str, float]:
    return {lv.name: lv.bytes_per_s / 1e9 for lv in topology.cluster(system, lnc=2).levels
            if lv.bytes_per_s is not None}


def test_neuronlink_reading_is_one_figure_per_device():
    g = _gbps(READINGS["neuronlink-v4"])
    assert g["instance"] == g["ultraserver"] == 2560.0


def test_pcie_readings_per_level_including_inter_rack():
    assert _gbps(READINGS["pcie"])["instance"] == 256.0
    assert _gbps(READINGS["pcie"])["ultraserver"] == 320.0
    assert _gbps(READINGS["pcie-inter-rack"])["ultraserver"] == 128.0
    assert topology.cluster(READINGS["pcie"], lnc=2).level("instance").direction == "bidirectional"


def test_a_reading_shares_every_hardware_fact():
    base = specs.system(GEN2)
    for key in READINGS.values():
        s = specs.system(key)
        assert (s.n_chips, s.n_instances, s.hbm_bytes_total, s.chip_key) == (
            base.n_chips, base.n_instances, base.hbm_bytes_total, base.chip_key)
    # one platform, not three: the readings are not separate systems in a list of platforms
    assert [s.key for s in specs.systems()].count(GEN2) == 1
    assert not any(s.reading_of for s in specs.systems())
    assert [s.key for s in specs.system_readings(GEN2)] == list(READINGS.values())


def test_tp_limit_falls_under_the_pcie_reading():
    # audit 2026-12, M3: with the course's formulas 405B's TP limit falls from 306 chips to 39 at 320 GB/s
    peak = specs.chip("trn3").dense_flops_per_s["bfloat16"]
    ffn = __import__("trainium_lab.sizing", fromlist=["preset"]).preset("llama3-405b").ffn_dim
    nl = parallelism.tp_limit_chips(int(ffn), peak, topology.cluster(GEN2, lnc=2).level("ultraserver").bytes_per_s)
    pcie = parallelism.tp_limit_chips(int(ffn), peak,
                                      topology.cluster(READINGS["pcie"], lnc=2).level("ultraserver").bytes_per_s)
    assert round(nl) == 306 and round(pcie) == 39


@pytest.mark.parametrize("reading", ["pcie", "pcie-inter-rack"])
def test_planner_on_both_readings_never_faster_than_neuronlink(reading):
    kw = dict(n_systems=1, lnc=2, global_batch=512)
    nl = layouts.plan("llama3-405b", system=READINGS["neuronlink-v4"], **kw)
    slow = layouts.plan("llama3-405b", system=READINGS[reading], **kw)
    assert float(slow.best.tokens_per_s) <= float(nl.best.tokens_per_s)
    assert slow.cluster.n_chips == nl.cluster.n_chips == 144


def test_trn1n_is_trn1_with_twice_the_links():
    # trn1-arch table (Neuron 2.17.0 version): Trn1n.32xlarge: 16 devices, 512 GiB, NeuronLink-v2
    # 768 GiB/s per device, EFA 1,600 Gbps (Trn1.32xlarge: 384 and 800)
    from trainium_lab.units import GiB

    a, b = specs.system("trn1.32xlarge"), specs.system("trn1n.32xlarge")
    assert (b.n_chips, b.hbm_bytes_total, b.vcpus) == (a.n_chips, a.hbm_bytes_total, a.vcpus)
    assert b.efa_bytes_per_s_total == 2 * a.efa_bytes_per_s_total == 1600e9 / 8
    assert topology.cluster("trn1n.32xlarge").level("instance").bytes_per_s == 768 * GiB
    assert b.on_demand_usd_per_hour is None   # no sourced price: not inherited from trn1.32xlarge
