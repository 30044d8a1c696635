"""Exercises for chapter 04 (sizing a training job). Answers are computed by the package."""

from __future__ import annotations

from trainium_lab import sizing
from trainium_lab.exercises import Exercise
from trainium_lab.units import GB, GiB

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "ALL"]

q1 = Exercise(
    "Q1 70B training state",
    expected=lambda: sizing.training_state_bytes(70e9, 16) / GiB,
    unit="GiB",
    hint="16 bytes per parameter; divide bytes by GiB (2**30), not GB.",
    solution="answer_1 = sizing.training_state_bytes(70e9, 16) / GiB",
    wrong=lambda: sizing.training_state_bytes(70e9, 16) / GB,
)

q2 = Exercise(
    "Q2 ZeRO-2 per device",
    expected=lambda: sizing.zero_bytes_per_device(7.5e9, 64, stage=2) / GB,
    unit="GB",
    hint="ZeRO-2 keeps the 2-byte weights whole and shards gradients and optimizer state: "
         "2Ψ + (2 + K)Ψ / N_d.",
    solution="answer_2 = sizing.zero_bytes_per_device(7.5e9, 64, stage=2) / GB",
    wrong=lambda: sizing.zero_bytes_per_device(7.5e9, 64, stage=1) / GB,
)

q3 = Exercise(
    "Q3 chips without a master copy",
    expected=lambda: sizing.min_chips_for_state(
        sizing.training_state_bytes(70e9, sizing.recipe("bf16-sr-adam").bytes_per_param), "trn2"),
    unit="chips",
    rel_tol=0.0,
    hint="Stochastic rounding removes the 4-byte FP32 master copy: 12 bytes/param. Divide by "
         "65 % of one chip's HBM and round up.",
    solution=("state = sizing.training_state_bytes(70e9, sizing.recipe('bf16-sr-adam').bytes_per_param)\n"
              "answer_3 = sizing.min_chips_for_state(state, 'trn2')"),
    wrong=lambda: sizing.min_chips_for_state(sizing.training_state_bytes(70e9, 16), "trn2"),
)

q4 = Exercise(
    "Q4 instance-days at 50 % MFU",
    expected=lambda: sizing.instance_days(sizing.training_flops(70e9, 2e12), 0.50, "trn2.48xlarge"),
    unit="instance-days",
    hint="6·N·D FLOPs, divided by (16 chips × dense BF16 rate × MFU), then by 86,400 s.",
    solution="answer_4 = sizing.instance_days(sizing.training_flops(70e9, 2e12), 0.50, 'trn2.48xlarge')",
    wrong=lambda: sizing.instance_days(sizing.training_flops(70e9, 2e12), 0.40, "trn2.48xlarge"),
)

q5 = Exercise(
    "Q5 selective recompute saving for Llama 3 70B",
    unit="(fraction)",
    hint="Selective recomputation drops the attention-core term. For Llama 3's layer (no dropout, "
         "GQA, SwiGLU: sizing.activation_options) that term is 2as/h against 8 + 25.5 for the rest; "
         "pass the options to sizing.activation_bytes_per_layer.",
    solution=("p = sizing.preset('llama3-70b')\n"
              "arch = sizing.activation_options(p)   # no dropout, GQA, SwiGLU\n"
              "full = sizing.activation_bytes_per_layer(p.seq_len, 1, p.d_model, p.n_heads, **arch)\n"
              "sel = sizing.activation_bytes_per_layer(p.seq_len, 1, p.d_model, p.n_heads, "
              "recompute='selective', **arch)\n"
              "answer_5 = 1 - sel / full   # (2as/h) / (33.5 + 2as/h) = 128 / 161.5"),
    wrong=lambda: 80 / 114,
    mistakes=[(320 / 354, "that is the saving for Korthikanti's GPT layer (5as/h with dropout); "
                          "Llama 3 has no dropout, so its attention core is 2as/h, and GQA and "
                          "SwiGLU change the other terms"),
              (80 / 114, "80 is 5as/h for GPT-3's shape, not Llama 3 70B's")],
)

q6 = Exercise(
    "Q6 MFU from a measured throughput",
    expected=lambda: sizing.mfu_from_throughput(60_000, 8e9, 16, "trn2"),
    unit="(fraction)",
    hint="MFU = tokens/s × 6N / (chips × dense BF16 peak per chip).",
    solution="answer_6 = sizing.mfu_from_throughput(60_000, 8e9, 16, 'trn2')",
    wrong=lambda: sizing.mfu_from_throughput(60_000, 8e9, 16, "trn2", dtype="fp8"),
)

ALL = (q1, q2, q3, q4, q5, q6)
