"""Exercises for chapter 01 (hardware).

Each solution is code that shows the arithmetic with units; running it gives the reference
answer (``trainium_lab.exercises.Exercise``). The mistakes are the ones the chapter warns
about: the wrong peak rate, the write of C or the factor 2 of a multiply-add forgotten, the
BF16 array where FP8's doubled contraction applies, ranks counted at the wrong LNC.
"""

from __future__ import annotations

from trainium_lab import claim_checks, cores
from trainium_lab.exercises import Exercise, run_solution

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "ALL"]


def _q1_wide_limit() -> float:
    """The likely slip in Q1: the wide-matrix limit R·b/2, ignoring n and k."""
    from trainium_lab import roofline

    return roofline.compute_bound_batch(None, None, "bf16", "trn3")


q1 = Exercise(
    "Q1 compute-bound batch, 4096 × 4096 weights on Trainium3",
    unit="tokens",
    hint="Set the intensity 2/(b·(1/m + 1/n + 1/k)) equal to the ridge point R and solve for m: "
         "1/m* = 2/(R·b) − 1/n − 1/k, with R = peak BF16 FLOP/s ÷ HBM bytes/s and b = 2 bytes.",
    solution=("t3 = specs.chip('trn3')\n"
              "R = t3.dense_flops_per_s['bf16'] / t3.hbm_bytes_per_s   # ridge point, FLOP/byte\n"
              "b = 2                                                   # bytes per BF16 element\n"
              "n = k = 4096\n"
              "answer_1 = 1 / (2 / (R * b) - 1 / n - 1 / k)            # tokens"),
    mistakes=[
        (_q1_wide_limit, "that is the limit for weights much wider than the batch (R·b/2); with "
                         "n = k = 4096 the 1/n + 1/k terms are not negligible and push m* up"),
        (lambda: 2 * _q1_wide_limit(), "that is R·b: a multiply-add is 2 FLOPs, so m* ≈ R·b/2"),
        (lambda: run_solution(q1._solution.replace("['bf16']", "['mxfp8']")),
         "you used the MXFP8 rate; the question is about BF16"),
    ],
)

q2 = Exercise(
    "Q2 intensity of a 512 × 2048 × 2048 BF16 matmul",
    unit="FLOP/byte",
    hint="FLOPs are 2·m·n·k; bytes are (m·k + k·n + m·n) × 2 for BF16: read A and B, write C.",
    solution=("m, n, k = 512, 2048, 2048\n"
              "flops = 2 * m * n * k                          # a multiply and an add per term\n"
              "moved = (m * k + k * n + m * n) * 2            # bytes: read A, read B, write C; BF16\n"
              "answer_2 = flops / moved                       # FLOP/byte"),
    mistakes=[
        (lambda: 2 * 512 * 2048 * 2048 / ((512 * 2048 + 2048 * 2048) * 2),
         "you forgot to write C (m·n elements) back to HBM"),
        (lambda: run_solution(q2._solution) / 2, "a multiply-add is 2 FLOPs: 2·m·n·k"),
        (lambda: run_solution(q2._solution) * 2, "BF16 takes 2 bytes per element, not 1"),
    ],
)


def _check_bound(answer, expected):
    if not isinstance(answer, str):
        return False, f"expected 'HBM' or 'tensor engine', got {type(answer).__name__}"
    return answer.strip().lower() == expected.lower(), f"{answer!r} is not what binds"


def _q3_wide_limit() -> float:
    from trainium_lab import roofline

    return roofline.compute_bound_batch(None, None, "mxfp8", "trn3")


q3 = Exercise(
    "Q3 what binds 272 tokens through 8192 × 8192 MXFP8 weights on Trainium3",
    hint="Compute m* = 1/(2/(R·b) − 1/n − 1/k) with Trainium3's MXFP8 ridge point, b = 1 + 1/32 "
         "bytes (one shared 8-bit scale per 32 elements) and n = k = 8192, and compare it with 272.",
    solution=("t3 = specs.chip('trn3')\n"
              "R = t3.dense_flops_per_s['mxfp8'] / t3.hbm_bytes_per_s   # FLOP/byte\n"
              "b = 1 + 1 / 32                                          # bytes: 8-bit element + scale share\n"
              "m_star = 1 / (2 / (R * b) - 1 / 8192 - 1 / 8192)        # tokens\n"
              "answer_3 = 'tensor engine' if 272 >= m_star else 'HBM'"),
    mistakes=[("tensor engine", "the wide-weight limit R·b/2 is below 272, but with n = k = 8192 the "
                                "1/n + 1/k terms raise m* above it"),
              ("both", "a matmul's time is the larger of its two bounds, so exactly one of them binds")],
    checker=_check_bound,
)


def _fill(dim: int, dtype: str, rows: bool = True) -> float:
    """How full the last tile of one dimension leaves the array (rows for k, columns for m)."""
    from trainium_lab import roofline

    u = roofline.array_utilisation(1 if rows else dim, 512, dim if rows else 1, "trn2", dtype)
    return u.k_fill if rows else u.m_fill


q4 = Exercise(
    "Q4 array use of m = 96, k = 320 in FP8 on Trainium2",
    rel_tol=0.005,
    hint="In double-FP8 mode one instruction contracts over roofline.contraction_rows('trn2', 'fp8') "
         "rows; m still runs across the array's columns (specs.chip('trn2').core.tensor_cols). "
         "Each fill is dim / (tiles × size).",
    solution=("rows = roofline.contraction_rows('trn2', 'fp8')     # rows per instruction, double-FP8 mode\n"
              "cols = specs.chip('trn2').core.tensor_cols            # columns, as in BF16\n"
              "k_fill = 320 / (math.ceil(320 / rows) * rows)         # 2 tiles of k\n"
              "m_fill = 96 / (math.ceil(96 / cols) * cols)           # 1 tile of m\n"
              "answer_4 = k_fill * m_fill                            # fraction of the array"),
    mistakes=[(lambda: _fill(320, "bf16") * _fill(96, "bf16", rows=False),
               "that is the BF16 array: in double-FP8 mode one instruction contracts over twice "
               "as many rows"),
              (lambda: _fill(96, "fp8", rows=False), "k leaves its second tile part-empty too: "
                                                       "multiply both fills")],
)

q5 = Exercise(
    "Q5 ranks on five trn2.48xlarge at LNC=1",
    unit="ranks",
    rel_tol=0.0,
    hint="One rank per logical NeuronCore: instances × chips per instance × physical cores per "
         "chip ÷ LNC.",
    solution=("chips = 5 * specs.system('trn2.48xlarge').n_chips       # chips\n"
              "physical = chips * specs.chip('trn2').neuron_cores       # physical NeuronCores\n"
              "answer_5 = physical // 1                                 # LNC=1: one rank per core"),
    mistakes=[(lambda: cores.core_counts("trn2.48xlarge", 2, 5).ranks,
               "that is at the default LNC=2 (two physical cores per rank); the question sets LNC=1"),
              (lambda: cores.core_counts("trn2.48xlarge", 1, 5).n_chips,
               "that counts chips; each Trainium2 chip has several NeuronCores")],
)


def _check_verdict(answer, expected):
    if not isinstance(answer, str):
        return False, f"expected text such as 'supported' or 'contradicted', got {type(answer).__name__}"
    return answer.strip().lower() == expected, f"{answer!r} is not the verdict the data gives"


q6 = Exercise(
    "Q6 check the claim about Trainium2's dense FP8 rate",
    hint="Use claim_checks.check_figure(entity, field, claimed, unit) with entity 'trn2' and field "
         "'dense_flops_per_s.fp8', then read .verdict.",
    solution=("c = claim_checks.claim('trn2-fp8-aws')\n"
              "answer_6 = claim_checks.check_figure(c.entity, c.field, c.claimed_value, c.claimed_unit).verdict"),
    wrong="contradicted",
    mistakes=[("contradicted", "check_figure reads the claim in its own unit and compares it with the "
                               "dense FP8 value data/ uses: run it before judging by eye"),
              ("disputed", "disputed means the figure matches an alternative row of data/ instead of the "
                           "used value; this one matches the used value")],
    checker=_check_verdict,
)


def _q7_peak_ratio() -> float:
    from trainium_lab import specs

    return specs.chip("trn3").dense_flops_per_s["mxfp8"] / specs.chip("trn2").dense_flops_per_s["bf16"]


q7 = Exercise(
    "Q7 Trainium2 BF16 → Trainium3 MXFP8 for 64 tokens through 8192 × 8192 weights",
    unit="×",
    hint="Is the matmul below the ridge on both chips? Then its time is bytes ÷ HBM bandwidth: "
         "the speed-up is the ratio of bytes per element times the ratio of bandwidths.",
    solution=("t2, t3 = specs.chip('trn2'), specs.chip('trn3')\n"
              "m, n, k = 64, 8192, 8192                     # both below the ridge: HBM-bound\n"
              "elements = m * k + k * n + m * n\n"
              "t_trn2 = elements * 2 / t2.hbm_bytes_per_s                # s, BF16: 2 bytes\n"
              "t_trn3 = elements * (1 + 1 / 32) / t3.hbm_bytes_per_s     # s, MXFP8: 1 byte + scale share\n"
              "answer_7 = t_trn2 / t_trn3                                # times faster"),
    mistakes=[
        (_q7_peak_ratio, "that is the ratio of peak rates; 64 tokens is far below both ridge "
                         "points, so HBM sets the time on both chips"),
        (lambda: _ratio("hbm_bytes_per_s"), "you kept 2 bytes per element on Trainium3; MXFP8 "
                                                 "stores 1 byte plus a 1/32 share of its scale"),
        (lambda: 2 * _ratio("hbm_bytes_per_s"), "close: MXFP8 also stores one 8-bit scale per "
                                                     "32 elements, 1/32 of a byte each"),
    ],
)


def _ratio(field: str) -> float:
    """Trainium3's figure over Trainium2's for one chip field (a mistake's value)."""
    from trainium_lab import specs

    return getattr(specs.chip("trn3"), field) / getattr(specs.chip("trn2"), field)




def _q8_smallest() -> int:
    """The smallest multiple of 8 at which Llama 3 8B's up-projection is compute-bound on Trainium3."""
    import math

    from trainium_lab import roofline

    return 8 * math.ceil(roofline.compute_bound_batch(14336, 4096, "bf16", "trn3") / 8)


def _q8_check(answer, expected):
    """Accept any multiple of 8 that is compute-bound on Trainium3 and at most twice the smallest."""
    from trainium_lab import roofline

    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or answer != int(answer) or answer < 1:
        return False, f"expected a whole number of tokens, got {answer!r}"
    m = int(answer)
    if m % 8:
        return False, f"{m} is not a multiple of 8, the server's bucket granularity"
    b = roofline.matmul_bound(m, 3584, 8192, "bf16", "trn3")
    if b.bound != "tensor engine":
        return False, (f"at m = {m} the intensity is {b.intensity_flop_per_byte:.0f} FLOP/byte, below Trainium3's "
                       f"ridge of {b.ridge_flop_per_byte:.0f}: still HBM-bound")
    if m > 2 * expected:
        return False, (f"m = {m} is compute-bound but more than twice the smallest such batch ({expected}): "
                       "sequences would wait for a batch the tensor engine does not need")
    return True, ""


q8 = Exercise(
    "Q8 a compute-bound decode batch on Trainium3 (open)",
    unit="tokens per step",
    rel_tol=0.0,
    open_variant=True,
    checker=_q8_check,
    also_accepted=(152, 240, 288),
    hint=("1/m* = 2/(R·b) − 1/n − 1/k with R Trainium3's BF16 ridge point (peak ÷ HBM bandwidth) and b = 2 "
          "bytes; round m* up to a multiple of 8; anything up to twice that is fine."),
    solution=("k, n = 8192, 28672 // 8                                # one rank's TP-8 shard\n"
              "r = roofline.ridge_point('trn3', 'bf16')                  # FLOP/byte, ≈ 137\n"
              "m_star = 1 / (2 / (r * 2) - 1 / n - 1 / k)                # tokens, the closed form\n"
              "answer_8 = 8 * math.ceil(m_star / 8)                      # smallest multiple of 8 above it"),
    mistakes=[(136, "that is R·b/2 rounded to a multiple of 8: the 1/n + 1/k terms raise m* above the "
                    "wide-matrix limit, and at 136 tokens the matmul is still HBM-bound"),
              (64, "a typical chat batch: 64 tokens through 8192 × 3584 weights do about 60 FLOPs per "
                   "byte read, far below the ridge"),
              (1024, "compute-bound, but far more than the tensor engine needs: every sequence waits for "
                     "a batch nearly seven times the smallest that saturates it")],
)

ALL = (q1, q2, q3, q4, q5, q6, q7, q8)
