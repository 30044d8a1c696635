"""Exercises for chapter 05 (parallel layouts). Answers are computed by the package."""

from __future__ import annotations

import functools

from trainium_lab import layouts
from trainium_lab.exercises import Exercise
from trainium_lab.units import GiB

__all__ = ["q1", "q2", "q3", "q4", "q5", "ALL"]


def _state_gib(zero_stage: int) -> float:
    m = layouts.custom_model("405B", n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8,
                             ffn_dim=53248, n_params=405e9)
    lay = layouts.layout(m, tp=64, pp=4, dp=2, zero_stage=zero_stage, system="trn2-ultraserver", lnc=2)
    return layouts.evaluate(lay).state_bytes / GiB


def _activations_gib(in_flight: bool) -> float:
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, zero_stage=1, micro_batch=1, n_micro_batches=16,
                         recompute="selective", system="trn2-ultraserver", lnc=2)
    a = layouts.evaluate(lay).memory_bytes["activations"] / GiB
    return a if in_flight else a / 4


@functools.cache
def _fewest_ultraservers(with_margin: bool) -> int:
    for n in range(1, 9):
        p = layouts.plan("llama3-405b", system="trn2-ultraserver", n_systems=n, lnc=2, global_batch=1024,
                         min_headroom_fraction=0.10 if with_margin else 0.0)
        if not p.table.empty:
            return n
    raise RuntimeError("no layout fits on up to 8 UltraServers")  # pragma: no cover


q1 = Exercise(
    "Q1 ZeRO-3 instead of ZeRO-1",
    expected=lambda: _state_gib(3),
    unit="GiB per chip",
    hint="ZeRO-3 also shards the 2-byte weights and 2-byte gradients over DP: all 16 bytes/param "
         "end up split over all 128 chips.",
    solution=("m = layouts.custom_model('405B', n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8,\n"
              "                         ffn_dim=53248, n_params=405e9)\n"
              "lay = layouts.layout(m, tp=64, pp=4, dp=2, zero_stage=3, system='trn2-ultraserver', lnc=2)\n"
              "answer_1 = layouts.evaluate(lay).state_bytes / GiB   # = 16 * 405e9 / 128 / GiB"),
    wrong=lambda: _state_gib(1),
)

q2 = Exercise(
    "Q2 micro-batches for a 5 % bubble",
    expected=lambda: 3 / 0.05,
    unit="micro-batches",
    rel_tol=0.0,
    hint="With 1F1B the bubble is (p − 1)/m of the busy time. Solve (4 − 1)/m = 0.05 for m.",
    solution="answer_2 = (4 - 1) / 0.05   # check: layouts.pipeline_bubble_fraction(4, 60) == 0.05",
    wrong=4 / 0.05,
)

q3 = Exercise(
    "Q3 first-stage activations",
    expected=lambda: _activations_gib(True),
    unit="GiB per chip",
    hint="Under 1F1B the first stage holds up to p micro-batches in flight, each with ceil(126/4) = 32 "
         "layers of Llama 3's per-layer bytes per rank under selective recompute and sequence "
         "parallelism, (8 + 4 + 4g + 6f/h)·s·b·h/t with g = KV heads / heads and f = ffn_dim "
         "(chapter 04), times 4 ranks per chip.",
    solution=("lay = layouts.layout('llama3-405b', tp=64, pp=4, dp=2, zero_stage=1, micro_batch=1,\n"
              "                     n_micro_batches=16, recompute='selective', lnc=2)\n"
              "answer_3 = layouts.evaluate(lay).memory_bytes['activations'] / GiB"),
    wrong=lambda: _activations_gib(False),
    mistakes=[(lambda: _activations_gib(True) * 34 / 31.75,
               "that is Korthikanti's GPT layer (34·s·b·h/t); Llama 3 405B has no dropout, GQA and a "
               "SwiGLU MLP, 31.75·s·b·h/t (sizing.activation_coefficients)"),
              (lambda: _activations_gib(False), "that is one micro-batch: under 1F1B the first stage "
               "holds p = 4 in flight")],
)

q4 = Exercise(
    "Q4 fewest UltraServers for 405B",
    expected=lambda: _fewest_ultraservers(True),
    unit="Trn2 UltraServers",
    rel_tol=0.0,
    hint="Run layouts.plan for n_systems = 1, 2, ... (global batch 1024, 10 % of HBM kept free) and "
         "stop at the first whose table is not empty.",
    solution=("answer_4 = next(n for n in range(1, 9) if not layouts.plan(\n"
              "    'llama3-405b', system='trn2-ultraserver', n_systems=n, lnc=2, global_batch=1024,\n"
              "    min_headroom_fraction=0.10).table.empty)"),
    wrong=1,
)

q5 = Exercise(
    "Q5 Trn3 Gen2: 405B fully sharded in one domain",
    expected=lambda: float(layouts.fully_sharded_table(405e9, 16, "trn3-gen2-ultraserver", (1,))
                           .left_gib_per_chip.iloc[0]),
    unit="GiB left per chip",
    hint="6,035 GiB of state over the 144 chips of one Trn3 Gen2 UltraServer; each chip has 144 GiB.",
    solution=("t = layouts.fully_sharded_table(405e9, 16, 'trn3-gen2-ultraserver', (1,))\n"
              "answer_5 = t.left_gib_per_chip.iloc[0]"),
    wrong=lambda: float(layouts.fully_sharded_table(405e9, 16, "trn2-ultraserver", (1,))
                        .left_gib_per_chip.iloc[0]),
)

ALL = (q1, q2, q3, q4, q5)
