"""Exercises for chapter 00 (start here). Answers are computed from ``data/``."""

from __future__ import annotations

from trainium_lab import specs
from trainium_lab.exercises import Exercise
from trainium_lab.units import GB, GiB

__all__ = ["q1", "q2", "q3", "ALL"]

q1 = Exercise(
    "Q1 HBM in decimal GB",
    expected=lambda: specs.chip("trn2").hbm_bytes / GB,
    unit="GB",
    hint="specs.chip('trn2').hbm_bytes is in bytes; divide by GB (10**9), not GiB.",
    solution="answer_1 = specs.chip('trn2').hbm_bytes / GB",
    wrong=lambda: specs.chip("trn2").hbm_bytes / GiB,
)

q2 = Exercise(
    "Q2 one-way NVLink",
    expected=lambda: specs.accelerator("h100").scale_up_bytes_per_s / 2 / GB,
    unit="GB/s",
    hint="The H100 figure is bidirectional: each direction carries half of it.",
    solution="answer_2 = specs.accelerator('h100').scale_up_bytes_per_s / 2 / GB",
    wrong=lambda: specs.accelerator("h100").scale_up_bytes_per_s / GB,
)

q3 = Exercise(
    "Q3 seconds for 1e18 FLOPs",
    expected=lambda: 1e18 / specs.chip("trn2").dense_flops_per_s["bf16"],
    unit="s",
    hint="A FLOP count divided by a FLOP/s rate gives seconds. Use the dense BF16 rate.",
    solution="answer_3 = 1e18 / specs.chip('trn2').dense_flops_per_s['bf16']",
    wrong=lambda: 1e18 / specs.chip("trn2").dense_flops_per_s["fp8"],
)

ALL = (q1, q2, q3)
