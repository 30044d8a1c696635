"""Exercises for chapter 06 (failure modes). Answers are computed by ``trainium_lab.reliability``."""

from __future__ import annotations

import math

from trainium_lab import reliability
from trainium_lab import specs
from trainium_lab.exercises import Exercise
from trainium_lab.units import hour, minute

__all__ = ["q1", "q2", "q3", "q4", "q5", "ALL"]

q1 = Exercise(
    "Q1 Young's interval",
    expected=lambda: reliability.young_interval_s(5 * minute, 12 * hour) / minute,
    unit="min",
    hint="sqrt(2 × checkpoint cost × MTBF), with both in seconds; convert the result to minutes.",
    solution="answer_1 = reliability.young_interval_s(5 * minute, 12 * hour) / minute",
    wrong=lambda: math.sqrt(5 * minute * 12 * hour) / minute,
)

q2 = Exercise(
    "Q2 Llama 3 interruptions per day",
    expected=lambda: reliability.llama3_summary().n_interruptions
    / (reliability.llama3_summary().period_s / (24 * hour)),
    unit="per day",
    hint="Unexpected interruptions only (not the planned ones), divided by the days observed.",
    solution=("s = reliability.llama3_summary()\n"
              "answer_2 = s.n_interruptions / (s.period_s / (24 * hour))"),
    wrong=lambda: (reliability.llama3_summary().n_interruptions + 47)
    / (reliability.llama3_summary().period_s / (24 * hour)),
)

q3 = Exercise(
    "Q3 MTBF of 16 UltraServers",
    expected=lambda: reliability.job_mtbf_s(reliability.llama3_summary().per_gpu_mtbf_s,
                                    16 * specs.system("trn2-ultraserver").n_chips) / hour,
    unit="h",
    hint=("Count the chips: 16 UltraServers × chips per UltraServer. Divide the per-chip MTBF "
          "(the Llama 3 proxy) by that count."),
    solution=("n = 16 * specs.system('trn2-ultraserver').n_chips\n"
              "answer_3 = reliability.job_mtbf_s(reliability.llama3_summary().per_gpu_mtbf_s, n) / hour"),
    wrong=lambda: reliability.job_mtbf_s(reliability.llama3_summary().per_gpu_mtbf_s,
                                 16 * specs.system("trn2-ultraserver").n_instances) / hour,
)

q4 = Exercise(
    "Q4 chips stopped by one chip failure",
    expected=lambda: reliability.blast_radius("chip", "trn2-ultraserver").attrs["n_stopped"]
    * 8,
    unit="chips",
    hint=("A failed chip stops its whole NeuronLink domain, and a synchronous job stops every "
          "domain it spans."),
    solution=("answer_4 = 8 * specs.system('trn2-ultraserver').n_chips   # every chip of the job"),
    wrong=lambda: specs.system("trn2-ultraserver").n_chips,
)

q5 = Exercise(
    "Q5 async checkpoint saving",
    expected=lambda: 100 * (
        reliability.lost_fraction(reliability.optimal_interval_s(120, 3 * hour), 120, 3 * hour, 15 * minute)
        - reliability.lost_fraction(reliability.optimal_interval_s(15, 3 * hour), 15, 3 * hour, 15 * minute)),
    unit="percentage points",
    rel_tol=0.02,
    hint=("Compute the lost fraction at each mode's own optimum interval (blocking cost 120 s "
          "for sync, 15 s for async), then subtract and multiply by 100."),
    solution=("def best(d):\n"
              "    return reliability.lost_fraction(reliability.optimal_interval_s(d, 3 * hour), d, 3 * hour, 15 * minute)\n"
              "answer_5 = 100 * (best(120) - best(15))"),
    wrong=lambda: 100 * (
        reliability.lost_fraction(reliability.optimal_interval_s(120, 3 * hour), 120, 3 * hour, 15 * minute)
        - reliability.lost_fraction(reliability.optimal_interval_s(120, 3 * hour), 15, 3 * hour, 15 * minute)),
)

ALL = (q1, q2, q3, q4, q5)
