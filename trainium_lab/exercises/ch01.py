"""Exercises for chapter 01 (hardware). Answers are computed by the package from ``data/``."""

from __future__ import annotations

from trainium_lab import cores, roofline
from trainium_lab.exercises import Exercise

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "ALL"]

q1 = Exercise(
    "Q1 Trainium3 BF16 ridge point",
    expected=lambda: roofline.ridge_point("trn3", "bf16"),
    unit="FLOP/byte",
    hint="Peak dense BF16 FLOP/s divided by HBM bytes/s, both per chip: "
         "specs.chip('trn3').dense_flops_per_s['bf16'] / specs.chip('trn3').hbm_bytes_per_s.",
    solution="answer_1 = roofline.ridge_point('trn3', 'bf16')",
    # using the MXFP8 rate instead of BF16
    wrong=lambda: roofline.ridge_point("trn3", "mxfp8"),
)

q2 = Exercise(
    "Q2 intensity of a 1024-cube BF16 matmul",
    expected=lambda: roofline.arithmetic_intensity(1024, 1024, 1024, "bf16"),
    unit="FLOP/byte",
    hint="FLOPs are 2·m·n·k; bytes are (m·k + k·n + m·n) × 2 for BF16. Do not forget to write C.",
    solution="answer_2 = roofline.arithmetic_intensity(1024, 1024, 1024, 'bf16')",
    # forgetting the write of C: 2·s³ / (2·s²·2)
    wrong=lambda: roofline.matmul_flops(1024, 1024, 1024) / (2 * 1024 * 1024 * 2),
)

q3 = Exercise(
    "Q3 what binds a batch-16 projection",
    expected=lambda: roofline.matmul_bound(16, 8192, 8192, "bf16", "trn2").bound,
    hint="Compare the matmul's arithmetic intensity with Trainium2's BF16 ridge point. "
         "Answer 'HBM' or 'tensor engine'.",
    solution="answer_3 = roofline.matmul_bound(16, 8192, 8192, 'bf16', 'trn2').bound",
    wrong="tensor engine",
)

q4 = Exercise(
    "Q4 array utilisation for m = k = 200",
    expected=lambda: roofline.array_utilisation(200, 4096, 200, "trn2").utilisation,
    hint="Each of m and k is cut into ceil(200 / 128) tiles of 128; the fraction used is "
         "200 / (tiles · 128) for each, multiplied together.",
    solution="answer_4 = roofline.array_utilisation(200, 4096, 200, 'trn2').utilisation",
    # treating the array as if the tile count were 200 / 128 (no padding)
    wrong=1.0,
    rel_tol=0.005,
)

q5 = Exercise(
    "Q5 ranks in a Trn2 UltraServer at LNC=2",
    expected=lambda: cores.core_counts("trn2-ultraserver", lnc=2).ranks,
    hint="One rank per logical NeuronCore: chips × physical cores per chip / LNC.",
    solution="answer_5 = cores.core_counts('trn2-ultraserver', lnc=2).ranks",
    wrong=lambda: cores.core_counts("trn2-ultraserver", lnc=2).physical_cores,
    rel_tol=0.0,
)


def _check_verdict(answer, expected):
    if not isinstance(answer, str):
        return False, f"expected text such as 'supported' or 'contradicted', got {type(answer).__name__}"
    return answer.strip().lower() == expected, f"{answer!r} is not the verdict the data gives"


q6 = Exercise(
    "Q6 check the claim about Trainium2's dense FP8 rate",
    expected=lambda: cores.claim("trn2-fp8-aws").run().verdict,
    hint="Use cores.check_figure(entity, field, claimed, unit) with entity 'trn2' and field "
         "'dense_flops_per_s.fp8', then read .verdict.",
    solution=("c = cores.claim('trn2-fp8-aws')\n"
              "answer_6 = cores.check_figure(c.entity, c.field, c.claimed_value, c.claimed_unit).verdict"),
    wrong="contradicted",
    checker=_check_verdict,
)

ALL = (q1, q2, q3, q4, q5, q6)
