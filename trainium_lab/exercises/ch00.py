"""Exercises for chapter 00 (start here).

Each solution is code that shows the arithmetic with units; running it gives the reference
answer (``trainium_lab.exercises.Exercise``). The mistakes are the unit traps the chapter
names: GB read as GiB, a bidirectional figure used as one-way, one chip where an instance was
asked, the share of HBM kept free forgotten.
"""

from __future__ import annotations

from trainium_lab.exercises import Exercise, run_solution

__all__ = ["q1", "q2", "q3", "q4", "q5", "ALL"]


q1 = Exercise(
    "Q1 Trainium3 HBM in decimal GB",
    unit="GB",
    hint="specs.chip('trn3').hbm_bytes is in bytes. A GB is 10**9 bytes, a GiB 2**30: the GB "
         "figure is the larger number.",
    solution=("hbm = specs.chip('trn3').hbm_bytes      # bytes (data/ records it in GiB)\n"
              "answer_1 = hbm / GB                     # GB = 10**9 bytes"),
    mistakes=[
        (lambda: run_solution(q1._solution) * 1e9 / 2**30,
         "that is the GiB figure: AWS quotes HBM in GiB; convert to GB (multiply by 1.074)"),
        (lambda: run_solution(q1._solution) * (1e9 / 2**30) ** 2,
         "you converted the wrong way: a GiB is larger than a GB, so the GB number is larger"),
    ],
)

q2 = Exercise(
    "Q2 16 GiB over a B200's NVLink",
    unit="ms",
    hint="specs.accelerator('b200').scale_up_bytes_per_s is bidirectional: one direction "
         "carries half. 16 GiB is 16 × 2**30 bytes. Time = bytes ÷ bytes/s.",
    solution=("both_ways = specs.accelerator('b200').scale_up_bytes_per_s   # bytes/s, bidirectional\n"
              "one_way = both_ways / 2                                      # bytes/s each way\n"
              "size = 16 * GiB                                              # bytes (16 × 2**30)\n"
              "answer_2 = size / one_way / ms                               # s → ms"),
    mistakes=[
        (lambda: run_solution(q2._solution) / 2,
         "you used the bidirectional figure: the data goes one way, at half of it"),
        (lambda: run_solution(q2._solution) * 1e9 / 2**30,
         "you took 16 GiB as 16 GB: a GiB is 2**30 bytes, 7.4 % more"),
        (lambda: run_solution(q2._solution) / 2 * 1e9 / 2**30,
         "two slips: the bidirectional figure (use half) and GiB read as GB"),
    ],
)

q3 = Exercise(
    "Q3 seconds for 1e18 FLOPs on a trn2.48xlarge",
    unit="s",
    hint="An instance's rate is its chips × one chip's dense BF16 FLOP/s "
         "(specs.system('trn2.48xlarge').n_chips). FLOPs ÷ FLOP/s = seconds.",
    solution=("n_chips = specs.system('trn2.48xlarge').n_chips                  # chips\n"
              "rate = n_chips * specs.chip('trn2').dense_flops_per_s['bf16']    # FLOP/s, whole instance\n"
              "answer_3 = 1e18 / rate                                           # FLOPs ÷ FLOP/s = s"),
    mistakes=[
        (lambda: 16 * run_solution(q3._solution),
         "that is one chip: all the instance's chips work at once"),
        (lambda: run_solution(q3._solution.replace("['bf16']", "['fp8']")),
         "you used the FP8 rate; the question asks for dense BF16"),
    ],
)

q4 = Exercise(
    "Q4 chips to train a 13 B model",
    unit="chips",
    rel_tol=0.0,
    hint="BF16 mixed precision with Adam keeps 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter. Each "
         "chip has its HBM less the 35 % kept free. Round the chip count up.",
    solution=("state = 13e9 * 16                                    # bytes: weights, grads, FP32 master, Adam m, v\n"
              "room = specs.chip('trn2').hbm_bytes * (1 - 0.35)     # bytes per chip left for the state\n"
              "answer_4 = math.ceil(state / room)                   # chips (a whole number, rounded up)"),
    mistakes=[
        (3, "that fills the whole HBM: 35 % of each chip is kept free for activations and the runtime"),
        (1, "that holds the BF16 weights alone; training also keeps gradients, an FP32 master copy "
            "and two Adam moments: 16 bytes per parameter"),
    ],
)

q5 = Exercise(
    "Q5 chips to serve a 405 B model in FP8 on Trainium3",
    unit="chips",
    rel_tol=0.0,
    hint="FP8 stores one byte per weight. Find the fewest chips (HBM less 35 % kept free), then "
         "the next power of two (tensor-parallel groups come in powers of two).",
    solution=("weights = 405e9 * 1                                  # bytes: FP8, 1 byte per weight\n"
              "room = specs.chip('trn3').hbm_bytes * (1 - 0.35)     # bytes per chip\n"
              "fewest = math.ceil(weights / room)                   # chips\n"
              "answer_5 = 2 ** math.ceil(math.log2(fewest))         # next power of two"),
    mistakes=[
        (5, "that is the fewest chips; a tensor-parallel group of 5 does not divide the model's "
            "heads: take the next power of two"),
        (4, "with 35 % of each chip kept free, four chips are not quite enough: round the chip "
            "count up before taking the power of two"),
        (lambda: run_solution(q5._solution.replace("405e9 * 1 ", "405e9 * 2 ")),
         "that is for BF16 weights; FP8 stores one byte per weight"),
    ],
)

ALL = (q1, q2, q3, q4, q5)
