"""Exercises for chapter 03 (topology and collectives). Answers are computed by the package."""

from __future__ import annotations

from trainium_lab import collectives, specs, topology
from trainium_lab.exercises import Exercise
from trainium_lab.units import GB, GiB, MB, ms, us

__all__ = ["q1", "q2", "q3", "q4", "q5", "ALL"]

q1 = Exercise(
    "Q1 gradient all-reduce inside one instance",
    expected=lambda: collectives.ring_allreduce_s(
        1 * GiB, 16, specs.link("trn2-neuronlink-intra").bytes_per_s) / ms,
    unit="ms",
    hint="2(n−1)/n · S/B with S = 1 GiB (2**30 bytes), n = 16 chips and the torus's per-chip "
         "bandwidth from specs.link('trn2-neuronlink-intra'). Answer in ms.",
    solution="B = specs.link('trn2-neuronlink-intra').bytes_per_s\n"
             "answer_1 = collectives.ring_allreduce_s(1 * GiB, 16, B) / ms",
    wrong=lambda: 1 * GiB / specs.link("trn2-neuronlink-intra").bytes_per_s / ms,
)

q2 = Exercise(
    "Q2 bus bandwidth",
    expected=lambda: collectives.busbw_bytes_per_s(4 * GiB, 40 * ms, 8) / GB,
    unit="GB/s",
    hint="algbw = S / t; for all-reduce busbw = algbw · 2(n−1)/n. Use GiB for the size, GB/s for the answer.",
    solution="answer_2 = collectives.busbw_bytes_per_s(4 * GiB, 40 * ms, 8) / GB",
    wrong=lambda: collectives.algbw_bytes_per_s(4 * GiB, 40 * ms) / GB,
)

q3 = Exercise(
    "Q3 ranks in two UltraServers at LNC=1",
    expected=lambda: 2 * topology.ranks_per_system("trn2-ultraserver", lnc=1),
    unit="ranks",
    hint="Logical cores per chip = physical NeuronCores / LNC (specs.chip('trn2').neuron_cores); "
         "chips per UltraServer: specs.system('trn2-ultraserver').n_chips.",
    solution="answer_3 = 2 * topology.ranks_per_system('trn2-ultraserver', lnc=1)",
    wrong=lambda: 2 * topology.ranks_per_system("trn2-ultraserver", lnc=2),
)

q4 = Exercise(
    "Q4 where does TP land?",
    expected=lambda: topology.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2,
                                    ordering="dp-tp-pp").level("tp").name,
    hint="With ordering 'dp-tp-pp', DP varies fastest, so consecutive TP ranks are dp = 2 ranks "
         "apart: how many chips and instances does one TP group touch? Answer with a level name: "
         "'chip', 'instance', 'ultraserver' or 'efa'.",
    solution="p = topology.place(tp=64, pp=4, dp=2, system='trn2-ultraserver', lnc=2, ordering='dp-tp-pp')\n"
             "answer_4 = p.level('tp').name",
    wrong="instance",
)

q5 = Exercise(
    "Q5 where latency takes over on EFA",
    expected=lambda: collectives.latency_crossover_bytes(
        16, specs.link("trn2-efa").bytes_per_s, specs.link("trn2-efa").latency_s) / MB,
    unit="MB",
    hint="Set 2(n−1)·α equal to 2(n−1)/n · S/B and solve for S; use EFA's per-chip bandwidth and "
         "published latency from specs.link('trn2-efa'). Answer in MB (10**6 bytes).",
    solution="efa = specs.link('trn2-efa')\n"
             "answer_5 = collectives.latency_crossover_bytes(16, efa.bytes_per_s, efa.latency_s) / MB",
    wrong=lambda: specs.link("trn2-efa").bytes_per_s * specs.link("trn2-efa").latency_s / MB,
)

ALL = (q1, q2, q3, q4, q5)
