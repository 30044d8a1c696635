"""Exercises for chapter 02 (numerics). Answers are computed by ``trainium_lab.numerics``."""

from __future__ import annotations

import math

from trainium_lab import numerics, specs
from trainium_lab.exercises import Exercise
from trainium_lab.units import GB, GiB

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "ALL"]

q1 = Exercise(
    "Q1 smallest surviving update at w = 1.0 (BF16, nearest)",
    expected=lambda: numerics.ulp(1.0, "bfloat16") / 2,
    hint="Round to nearest keeps 1.0 unless 1.0 + update is nearer to the next BF16 value "
         "than to 1.0: that happens past half the spacing at 1.0 (numerics.ulp).",
    solution="answer_1 = numerics.ulp(1.0, 'bfloat16') / 2   # 2**-8; exactly 2**-8 ties back to 1.0",
    wrong=lambda: numerics.ulp(1.0, "bfloat16"),
)

q2 = Exercise(
    "Q2 chance that 1.002 rounds up in BF16 (stochastic)",
    expected=lambda: numerics.neighbours(1.002, "bfloat16")[2],
    rel_tol=0.005,
    hint="The probability of the upper neighbour is the distance from the lower one divided "
         "by the spacing between them.",
    solution="lo, hi, p = numerics.neighbours(1.002, 'bfloat16')\nanswer_2 = p   # 0.002 / 2**-7",
    wrong=0.0,
)

q3 = Exercise(
    "Q3 how many times further E5M2 reaches than E4M3",
    expected=lambda: (numerics.format_info("float8_e5m2").max_finite
                      / numerics.format_info("float8_e4m3fn").max_finite),
    hint="Divide the two formats' largest finite values (numerics.format_info(...).max_finite).",
    solution="answer_3 = (numerics.format_info('float8_e5m2').max_finite\n"
             "            / numerics.format_info('float8_e4m3fn').max_finite)",
    wrong=2.0,
)

q4 = Exercise(
    "Q4 GiB saved on a 70B model by dropping FP32 master weights",
    expected=lambda: 70e9 * (numerics.bytes_per_param(True) - numerics.bytes_per_param(False)) / GiB,
    unit="GiB",
    hint="The master copy is 4 bytes per parameter; GiB is 2**30 bytes.",
    solution="answer_4 = 70e9 * 4 / GiB",
    wrong=lambda: 70e9 * 4 / GB,
)

q5 = Exercise(
    "Q5 Trainium2 chips for a 70B model's state without master weights",
    expected=lambda: math.ceil(70e9 * numerics.bytes_per_param(False) / specs.chip("trn2").hbm_bytes),
    rel_tol=0.0,
    hint="12 bytes per parameter with Adam and no master copy; divide by one chip's HBM "
         "(specs.chip('trn2').hbm_bytes) and round up. State only, no activations.",
    solution="answer_5 = math.ceil(70e9 * 12 / specs.chip('trn2').hbm_bytes)",
    wrong=lambda: math.ceil(70e9 * numerics.bytes_per_param(True) / specs.chip("trn2").hbm_bytes),
)

q6 = Exercise(
    "Q6 per-tensor FP8 scale for gradients with amax 0.01 (E5M2)",
    expected=lambda: numerics.fp8_scale(0.01, "float8_e5m2"),
    hint="The scale maps the largest magnitude onto the format's largest finite value.",
    solution="answer_6 = numerics.fp8_scale(0.01, 'float8_e5m2')   # 57344 / 0.01",
    wrong=lambda: numerics.fp8_scale(0.01, "float8_e4m3fn"),
)

ALL = (q1, q2, q3, q4, q5, q6)
