"""Exercises for chapter 11 (the capstone). Each solution is code that shows the arithmetic with
units; running it gives the reference answer (``trainium_lab.exercises.Exercise``)."""

from __future__ import annotations

from trainium_lab import planning, sizing
from trainium_lab.exercises import Exercise, run_solution

__all__ = ["q1", "q2", "q3", "q4", "q5", "ALL"]


def _q4_equal_mfu() -> float:
    """The likely slip in Q4: the claim's price ceiling at equal MFU (the MFUs ignored)."""
    return planning.check_price_claim("trn2-price-performance", mfu_subject=0.45,
                                      mfu_baseline=0.45).max_usd_per_hour_low


q1 = Exercise(
    "Q1 ideal instance-hours, 8B on 250B tokens",
    unit="instance-hours",
    hint=("Chapter 04: 6 × parameters × tokens FLOPs, over one trn2.48xlarge's chips × Trainium2's dense "
          "BF16 peak × MFU, in seconds; then hours. sizing.instance_days does the first part in days."),
    solution=("flops = sizing.training_flops(8e9, 250e9)                 # 6ND = 1.2e22 FLOPs\n"
              "days = sizing.instance_days(flops, 0.40, 'trn2.48xlarge')  # ÷ (chips × peak × 0.4) ÷ 86,400\n"
              "answer_1 = days * 24                                       # instance-hours"),
    mistakes=[(lambda: sizing.instance_days(sizing.training_flops(8e9, 250e9), 0.40, "trn2.48xlarge"),
               "that is in instance-days; the question asks for instance-hours (× 24)"),
              (lambda: run_solution(q1._solution) / 3, "training costs 6 FLOPs per parameter per token "
                                                        "(2 forward, 4 backward), not 2"),
              (lambda: run_solution(q1._solution) * 16, "that counts chip-hours: one instance holds 16 chips")],
)

q2 = Exercise(
    "Q2 parity price against p6-b200.48xlarge",
    unit="USD per instance-hour",
    hint=("Price per peak FLOP/s of the reference (its sourced on-demand price over its 8 B200s' dense "
          "BF16 peak), times a trn2.48xlarge's peak (its chips × Trainium2's dense BF16 peak)."),
    solution=("ref = planning.price('p6-b200.48xlarge')                  # 113.93 USD/h, 8 × B200\n"
              "b200 = 8 * specs.accelerator('b200').dense_flops_per_s['bf16']\n"
              "trn2 = 16 * specs.chip('trn2').dense_flops_per_s['bf16']\n"
              "answer_2 = ref.usd_per_hour * trn2 / b200                 # = planning.parity_usd_per_hour(\n"
              "                                                           #   'trn2.48xlarge', 'p6-b200.48xlarge')"),
    mistakes=[(lambda: planning.parity_usd_per_hour("trn2.48xlarge"),
               "that is the parity price against p5.48xlarge; the reference here is the B200 instance"),
              (lambda: run_solution(q2._solution) / 16, "that is per chip-hour: a trn2.48xlarge holds 16 chips"),
              (lambda: planning.price("p6-b200.48xlarge").usd_per_hour,
               "the same price per instance ignores that the two instances hold different compute")],
)

q3 = Exercise(
    "Q3 checkpoint write time, Llama 3 70B",
    unit="s",
    hint=("A checkpoint keeps what a restart needs: BF16 weights (2 B), the FP32 master copy (4 B) and "
          "Adam's two moments (4 + 4 B) per parameter — not the gradients. Divide by 20 GB/s (10^9 bytes)."),
    solution=("ckpt = planning.checkpoint_bytes(70e9, 'bf16-adam')   # 70e9 × (2 + 4 + 4 + 4) B = 980 GB\n"
              "answer_3 = ckpt / (20 * GB)                          # seconds at 20 GB/s"),
    mistakes=[(70e9 * 16 / 20e9, "you counted the gradients too: a checkpoint does not need them"),
              (70e9 * 14 / (20 * 2**30), "20 GB/s is 20 × 10^9 bytes/s, not GiB/s")],
)

q4 = Exercise(
    "Q4 price ceiling of AWS's claim at unequal MFU",
    unit="USD per instance-hour",
    hint=("First the trn2.48xlarge price at which both cost the same per token: the p5en price × "
          "(trn2 instance peak × 0.35) / (p5en instance peak × 0.45). A 30 % better price-performance needs "
          "a price 1.3 times lower."),
    solution=("c = planning.check_price_claim('trn2-price-performance', mfu_subject=0.35, mfu_baseline=0.45)\n"
              "parity = c.parity_usd_per_hour      # p5en's price × (trn2 peak × 0.35) / (p5en peak × 0.45)\n"
              "answer_4 = parity / c.claimed_low   # 30 % better work per dollar"),
    mistakes=[(lambda: _q4_equal_mfu(), "that ignores the MFUs: Trn2 at 35 % against the GPU at 45 % buys less "
                                        "work per hour"),
              (lambda: run_solution(q4._solution) * 1.3 / 1.4, "that is the ceiling for the claim's 40 % end; "
                                                                "the question asks for its 30 % end"),
              (lambda: run_solution(q4._solution) * 1.3 * 1.3, "a price-performance 1.3 times better divides "
                                                               "the parity price by 1.3")],
)


def _q5_at_capacity() -> float:
    """The likely slip in Q5: the cost per million tokens if every replica ran full."""
    return planning.plan_serving("llama3-70b", 4000, tpot_s_max=0.05, ttft_s_max=2.0,
                                 usd_per_hour=74.24).cost_per_million_tokens_at_capacity_usd


q5 = Exercise(
    "Q5 serving cost per million generated tokens",
    unit="USD per million tokens",
    hint=("planning.plan_serving finds the replicas and instances; you pay for the instances whether they "
          "run full or not, so divide the hourly cost by the tokens of the target, not of the capacity."),
    solution=("s = planning.plan_serving('llama3-70b', 4000, tpot_s_max=0.05, ttft_s_max=2.0,\n"
              "                          usd_per_hour=74.24)           # the parity placeholder price\n"
              "usd_per_hour = s.n_instances * 74.24\n"
              "answer_5 = usd_per_hour / (4000 * 3600) * 1e6          # 4,000 tokens/s × 3,600 s per hour"),
    mistakes=[(lambda: _q5_at_capacity(), "that divides by the capacity of the replicas; the service only "
                                          "produces the 4,000 tokens/s it is asked for"),
              (lambda: run_solution(q5._solution) * 1e-6, "per million tokens: multiply the cost per token by 10^6")],
)

ALL = (q1, q2, q3, q4, q5)
