"""Exercises for chapter 04 (sizing a training job).

Each solution is code that shows the arithmetic with units; running it gives the reference
answer (it runs with the model modules, the ``units`` names, ``math`` and ``np`` in scope).
The numbers differ from the chapter's own examples, so no answer is printed above its question.
"""

from __future__ import annotations

from trainium_lab.exercises import Exercise, run_solution

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "ALL"]

q1 = Exercise(
    "Q1 training state of a 34B model",
    unit="GiB",
    hint="16 bytes per parameter (2 + 2 + 4 + 4 + 4); divide bytes by GiB (2**30), not by 10**9.",
    solution=("n_params = 34e9\n"
              "bytes_per_param = 2 + 2 + 4 + 4 + 4   # BF16 weight and gradient, FP32 master, Adam m and v\n"
              "answer_1 = n_params * bytes_per_param / GiB"),
    mistakes=[(34e9 * 16 / 1e9, "that is GB (10^9 bytes); the question asks for GiB (2^30 bytes)"),
              (34e9 * 12 / 2**30, "12 bytes per parameter is the recipe without the FP32 master copy; "
                                  "mixed precision with Adam keeps 16"),
              (34e9 * 18 / 2**30, "18 bytes counts FP32 gradients (Megatron-LM's convention); the course "
                                  "counts BF16 gradients, 16 in all")],
)

q2 = Exercise(
    "Q2 ZeRO-2 per device",
    unit="GB",
    hint=("ZeRO-2 keeps the 2-byte weights whole on every device and shards gradients and optimizer "
          "state: 2Ψ + (2 + K)Ψ / N_d, with K = 12."),
    solution=("psi, n_d, k = 13e9, 32, 12\n"
              "per_device = 2 * psi + (2 + k) * psi / n_d   # bytes: whole BF16 weights + shards\n"
              "answer_2 = per_device / GB"),
    mistakes=[((4 + 12 / 32) * 13e9 / 1e9, "that is ZeRO-1 (only the optimizer state sharded); ZeRO-2 "
                                           "also shards the gradients"),
              (16 * 13e9 / 32 / 1e9, "that is ZeRO-3: it also shards the weights"),
              ((2 + 14 / 32) * 13e9 / 2**30, "that is GiB; the ZeRO paper and this question use GB (10^9)")],
)

q3 = Exercise(
    "Q3 chips without a master copy",
    unit="chips",
    rel_tol=0.0,
    hint=("Stochastic rounding removes the 4-byte FP32 master copy: 12 bytes per parameter. Divide by "
          "65 % of one chip's HBM (the 35 % rule) and round up."),
    solution=("state = 70e9 * (2 + 2 + 4 + 4)                     # bytes: no FP32 master copy\n"
              "room = specs.chip('trn2').hbm_bytes * (1 - 0.35)   # bytes per chip kept for state\n"
              "answer_3 = math.ceil(state / room)"),
    mistakes=[(17, "17 chips is the 16-byte recipe; without the master copy it is 12 bytes per parameter"),
              (9, "you divided by the whole HBM: the 35 % rule keeps a share of it for activations"),
              (12, "round up: 12 chips hold a little less than the state")],
)

q4 = Exercise(
    "Q4 instance-days at 50 % MFU",
    unit="instance-days",
    hint=("Instance-days scale as 1/MFU: the same FLOPs at a higher utilisation take fewer days. "
          "Or from scratch: 6·N·D FLOPs ÷ (16 chips × dense BF16 rate × MFU) ÷ 86,400 s."),
    solution=("flops = 6 * 70e9 * 2e12                               # 6ND\n"
              "inst = specs.system('trn2.48xlarge')                 # one instance\n"
              "instance_peak = inst.n_chips * inst.chip.dense_flops_per_s['bf16']   # FLOP/s\n"
              "answer_4 = flops / (instance_peak * 0.50) / day"),
    mistakes=[(lambda: run_solution(q4._solution) * (0.5 / 0.4) ** 2,
               "you scaled the 40 % figure up; time falls as MFU rises: multiply by 0.4 / 0.5"),
              (lambda: run_solution(q4._solution) * 0.5 / 0.4, "that is the 40 % MFU figure"),
              (lambda: run_solution(q4._solution) * _chips("trn2.48xlarge"),
               "that is chip-days: divide by the chips of one instance")],
)

q5 = Exercise(
    "Q5 selective recompute saving for Llama 3 70B",
    unit="(fraction)",
    hint=("Selective recomputation drops the attention-core term. For Llama 3's layer (no dropout, GQA, "
          "SwiGLU: sizing.activation_coefficients with sizing.activation_options) the core is 2as/h "
          "against 8 + 25.5 for the rest."),
    solution=("p = sizing.preset('llama3-70b')\n"
              "c = sizing.activation_coefficients(p.n_heads, p.d_model, **sizing.activation_options(p))\n"
              "core = c.attention_core * p.n_heads * p.seq_len / p.d_model   # 2as/h = 128 (bytes per sbh)\n"
              "rest = c.replicated + c.sharded                              # 8 + 25.5 = 33.5\n"
              "answer_5 = core / (rest + core)   # share of the layer's bytes recomputation drops"),
    wrong=80 / 114,
    mistakes=[(320 / 354, "that is the saving for Korthikanti's GPT layer (5as/h with dropout); "
                          "Llama 3 has no dropout, so its attention core is 2as/h, and GQA and "
                          "SwiGLU change the other terms"),
              (80 / 114, "80 is 5as/h for GPT-3's shape, not Llama 3 70B's")],
)

q6 = Exercise(
    "Q6 MFU from a measured throughput",
    unit="(fraction)",
    hint="MFU = tokens/s × 6N / (chips × dense BF16 peak per chip).",
    solution=("model_flops_per_s = 60_000 * 6 * 8e9                      # tokens/s x FLOPs per token\n"
              "inst = specs.system('trn2.48xlarge')\n"
              "peak = inst.n_chips * inst.chip.dense_flops_per_s['bf16']   # one instance, FLOP/s\n"
              "answer_6 = model_flops_per_s / peak"),
    mistakes=[(lambda: 60_000 * 6 * 8e9 / (_chips("trn2.48xlarge") * _trn2("fp8")),
               "that divides by the FP8 peak; the run computes in BF16"),
              (lambda: 60_000 * 2 * 8e9 / (_chips("trn2.48xlarge") * _trn2("bf16")),
               "training costs 6N FLOPs per token (2N forward, 4N backward), not 2N"),
              (lambda: 60_000 * 6 * 8e9 / (_chips("trn2-ultraserver") * _trn2("bf16")),
               "that divides by a whole UltraServer's chips; the run used one trn2.48xlarge")],
)


def _trn2(dtype: str) -> float:
    from trainium_lab import specs

    return specs.chip("trn2").dense_flops_per_s[dtype]


def _chips(system: str) -> int:
    from trainium_lab import specs

    return specs.system(system).n_chips




def _q7_fewest() -> int:
    """The fewest trn2.48xlarge that train Llama 3 70B on 1T tokens in 60 days at the calibrated MFU."""
    import math

    from trainium_lab import sizing

    job = sizing.size_job(70e9, 1e12, system="trn2.48xlarge")   # sizing's default: the calibrated MFU
    per_instance = 16
    return max(math.ceil(job.instance_days / 60), math.ceil(job.min_chips / per_instance))


def _q7_memory_floor() -> int:
    import math

    from trainium_lab import sizing

    return math.ceil(sizing.size_job(70e9, 1e12, system="trn2.48xlarge").min_chips / 16)


def _q7_check(answer, expected):
    """Accept any whole count from the fewest that meet 60 days up to 25 % above it."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or answer != int(answer) or answer < 1:
        return False, f"expected a whole number of instances, got {answer!r}"
    from trainium_lab import sizing

    n = int(answer)
    if n < expected:
        job = sizing.size_job(70e9, 1e12, system="trn2.48xlarge")
        return False, f"{n} instances take {job.instance_days / n:.0f} days at {job.mfu:.1%} MFU: the deadline is 60"
    if n > 1.25 * expected:
        return False, f"{n} meets the deadline with {n / expected - 1:.0%} to spare, more than a 25 % margin"
    return True, ""


q7 = Exercise(
    "Q7 instances for 70B on 1T tokens in 60 days (open)",
    unit="instances",
    rel_tol=0.0,
    open_variant=True,
    checker=_q7_check,
    also_accepted=(28, 33),
    hint=("6ND FLOPs over one instance's 16 chips × peak × the calibrated MFU (sizing.default_mfu()) gives "
          "instance-days (sizing.instance_days); "
          "divide by 60 days and round up; check the memory floor (sizing.size_job(...).min_chips) too."),
    solution=("flops = sizing.training_flops(70e9, 1e12)                  # 6ND = 4.2e23 FLOPs\n"
              "days = sizing.instance_days(flops, sizing.default_mfu(), 'trn2.48xlarge')  # at the calibrated MFU\n"
              "memory = math.ceil(sizing.size_job(70e9, 1e12).min_chips / 16)   # the memory floor\n"
              "answer_7 = max(math.ceil(days / 60), memory)"),
    mistakes=[(lambda: _q7_fewest() * 16, "that counts chips: an instance holds 16"),
              (lambda: -(-_q7_fewest() // 3), "training costs 6 FLOPs per parameter per token, not 2"),
              (lambda: _q7_memory_floor(), "that is the memory floor: those instances hold the state but "
                                          "take far longer than 60 days")],
)

ALL = (q1, q2, q3, q4, q5, q6, q7)
