"""Exercises for chapter 02 (numerics).

Each solution is code that shows the arithmetic with units; running it gives the reference
answer (it runs with the model modules, the ``units`` names, ``math`` and ``np`` in scope).
Q6 and Q7 of the chapter are "explain why" / design questions answered in the notebook.
"""

from __future__ import annotations

from trainium_lab.exercises import Exercise

__all__ = ["q1", "q2", "q3", "q4", "q5", "q8", "ALL"]

q1 = Exercise(
    "Q1 smallest update that survives at w = 20 (BF16, nearest)",
    hint=("The gap between BF16 neighbours is 2**(e − 7) in the binade [2**e, 2**(e+1)) that "
          "holds the weight. Round to nearest keeps the weight unless the update passes half "
          "that gap (exactly half is a tie, and 20's last mantissa bit is even)."),
    solution=("e = math.floor(math.log2(20.0))   # 4: 20 lies in the binade [16, 32)\n"
              "gap = 2.0 ** (e - 7)              # 0.125: BF16 keeps 7 mantissa bits\n"
              "answer_1 = gap / 2                # updates up to half a gap round back to 20"),
    mistakes=[(0.125, "that is the whole gap: round to nearest already moves once the update "
                      "passes half of it"),
              (2.0 ** -8, "that is half the gap at 1.0; the gap doubles at every power of two, "
                          "so near 20 it is 16 times larger"),
              (20 * 2.0 ** -8, "the gap is set by the power of two below the weight (16), not "
                               "by the weight itself")],
)

q2 = Exercise(
    "Q2 what MXFP4 stores for 0.2 in a block whose largest magnitude is 0.9",
    hint=("The spec's scale is X = 2**(floor(log2 amax) − emax_elem) with emax_elem = 2 for "
          "E2M1 (its largest value is 6 = 1.5 · 2**2). Divide by X, round to the nearest E2M1 "
          "value (0, 0.5, 1, 1.5, 2, 3, 4, 6), multiply back."),
    solution=("emax = 2                                        # E2M1's top binade: 6 = 1.5 * 2**2\n"
              "X = 2.0 ** (math.floor(math.log2(0.9)) - emax)  # 2**(-1 - 2) = 0.125\n"
              "scaled = 0.2 / X                                # 1.6, between E2M1's 1.5 and 2\n"
              "element = 1.5                                   # 0.1 from 1.5, 0.4 from 2\n"
              "answer_2 = element * X                          # what the block holds for 0.2"),
    mistakes=[(0.25, "you used X = 2**floor(log2 0.9) = 0.5 without subtracting emax_elem = 2, "
                     "so the block's largest value would not use E2M1's top binade"),
              (0.9 / 6 * 1.5, "you used X = amax / 6; an MX scale must be a power of two (E8M0 has "
                              "no mantissa bits)"),
              (0.2, "0.2 / X = 1.6 is not an E2M1 value: with one mantissa bit the elements near "
                    "it are 1.5 and 2")],
    rel_tol=0.001,
)

q3 = Exercise(
    "Q3 GiB of a 405B model's weights in MXFP4",
    unit="GiB",
    hint=("Each value stores a 4-bit element, and every 32 values share one 8-bit scale. "
          "Count bits per value, then bytes, then divide by 2**30."),
    solution=("bits_per_value = 4 + 8 / 32                   # element + its share of the E8M0 scale\n"
              "weight_bytes = 405e9 * bits_per_value / 8     # bytes\n"
              "answer_3 = weight_bytes / GiB                 # GiB"),
    mistakes=[(lambda: 405e9 * 4 / 8 / (2 ** 30),
               "you forgot the shared scales: 8 bits per 32 values add 0.25 bit to every value"),
              (lambda: 405e9 * 4.25 / 8 / 1e9, "that is GB (10**9 bytes); the question asks GiB (2**30)"),
              (lambda: 405e9 * (4 + 8) / 8 / (2 ** 30),
               "that gives every value its own 8-bit scale; one scale serves a block of 32")],
)

q4 = Exercise(
    "Q4 below which magnitude per-tensor E4M3 stores 0 (amax = 1000)",
    hint=("The per-tensor scale maps amax onto E4M3's largest value, 448. A scaled value rounds "
          "to 0 when it is at most half of E4M3's smallest subnormal, 2**-9. Undo the scale."),
    solution=("e4m3 = numerics.format_info('float8_e4m3fn')\n"
              "scale = e4m3.max_finite / 1000.0          # 0.448: amax lands on 448\n"
              "cutoff_scaled = e4m3.min_subnormal / 2    # 2**-10: half the smallest subnormal\n"
              "answer_4 = cutoff_scaled / scale          # in the tensor's own units"),
    mistakes=[(lambda: 2.0 ** -9 / 0.448,
               "that is the smallest subnormal itself; values down to half of it round up to it"),
              (lambda: 2.0 ** -6 / 0.448,
               "that is where the subnormals begin: precision drops below it, but values survive "
               "down to half the smallest subnormal"),
              (2.0 ** -10, "you forgot to undo the scale: divide by 448 / 1000")],
    rel_tol=0.005,
)

q5 = Exercise(
    "Q5 GiB saved on an 8B model without the master copy and with BF16 Adam moments",
    unit="GiB",
    hint=("Start from the 16-byte Adam state. The FP32 master copy goes (4 bytes), and each of the two "
          "Adam moments drops from FP32 (4 bytes) to BF16 (2 bytes); GiB is 2**30 bytes."),
    solution=("master_bytes = 4                          # the FP32 master copy, dropped\n"
              "moment_bytes_saved = 2 * (4 - 2)          # two moments, FP32 -> BF16\n"
              "answer_5 = 8e9 * (master_bytes + moment_bytes_saved) / GiB   # GiB freed on every replica"),
    mistakes=[(64.0, "that is GB (10**9 bytes); the question asks GiB (2**30)"),
              (lambda: 8e9 * 4 / (2 ** 30), "that is the master copy alone (chained problem 1); the two "
                                            "moments shrink too, by 2 bytes each"),
              (lambda: 8e9 * 6 / (2 ** 30), "you shrank only one Adam moment; Adam keeps two (m and v)"),
              (lambda: 8e9 * 12 / (2 ** 30), "the moments are kept in BF16, not dropped: each still costs "
                                             "2 bytes")],
)



def _q8_table():
    """The schemes on Q8's tensor: 8,192 values evenly from 1e-4 to 0.1 and one outlier of 1,000."""
    import numpy as np

    from trainium_lab import numerics

    x = np.linspace(1e-4, 0.1, 8192)
    x[100] = 1000.0
    return numerics.block_scaling_comparison(x).set_index("scheme")


def _q8_check(answer, expected):
    """Accept any scheme that runs at Trainium3's MX rate, clamps nothing, errs ≤ 5 %, ≤ 8.25 bits."""
    if not isinstance(answer, str):
        return False, f"expected a scheme name as text, got {type(answer).__name__}"
    t = _q8_table()
    names = {s.lower(): s for s in t.index}
    if answer.strip().lower() not in names:
        return False, f"{answer!r} is not one of block_scaling_comparison's schemes ({', '.join(t.index)})"
    row = t.loc[names[answer.strip().lower()]]
    if row.kind != "mx":
        return False, (f"{row.name} is per-tensor scaled: Trainium3 runs plain FP8 at BF16's rate, so it buys no "
                       f"speed, and its median error here is {row.median_rel_error:.1%}")
    if row.bits_per_value > 8.25:
        return False, f"{row.name} costs {row.bits_per_value:g} bits per value, more than 8.25"
    if row.clamped > 0:
        return False, (f"{row.name} clamps {row.clamped:.0%} of the values: with the floor rule a block's maximum "
                       "can land above the element format's largest value")
    if row.median_rel_error > 0.05:
        return False, f"{row.name}'s median relative error is {row.median_rel_error:.1%}, above 5 %"
    return True, ""


q8 = Exercise(
    "Q8 an 8-bit scheme for an outlier-carrying tensor on Trainium3 (open)",
    open_variant=True,
    checker=_q8_check,
    also_accepted=("MXFP8 E5M2, scale rounded up",),
    hint=("Run numerics.block_scaling_comparison on the tensor and read kind, bits_per_value, clamped and "
          "median_rel_error; Trainium3 is fast only on the MX formats."),
    solution=("x = np.linspace(1e-4, 0.1, 8192)\n"
              "x[100] = 1000.0                                        # the outlier\n"
              "t = numerics.block_scaling_comparison(x).set_index('scheme')\n"
              "ok = t[(t.kind == 'mx') & (t.clamped == 0) & (t.bits_per_value <= 8.25)\n"
              "       & (t.median_rel_error <= 0.05)]\n"
              "answer_8 = ok.median_rel_error.idxmin()                 # the most accurate that qualifies"),
    mistakes=[("per-tensor FP8 E4M3", "accurate enough on this tensor, but Trainium3 runs plain FP8 no faster "
                                      "than BF16: only the MX formats reach its fast rate"),
              ("MXFP8 E4M3", "the floor rule clamps each block's largest values here; round the scale up"),
              ("MXFP4, scale rounded up", "four bits leave too little precision: the median error is above 5 %")],
)

ALL = (q1, q2, q3, q4, q5, q8)
