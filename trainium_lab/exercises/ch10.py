"""Exercises for chapter 10 (mixture of experts, planning at scale). Each solution is code that
shows the arithmetic with units; running it gives the reference answer
(``trainium_lab.exercises.Exercise``)."""

from __future__ import annotations

from trainium_lab import moe, reliability, sizing
from trainium_lab.exercises import Exercise, run_solution
from trainium_lab.units import GiB, hour, ms

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "ALL"]


def _q2_without_ep() -> float:
    """The likely slip in Q2: every rank keeps all 128 experts of each layer (EP 1)."""
    return moe.expert_memory("qwen3-235b-a22b", tp=4, ep=1, zero_stage=0).state_bytes / GiB


def _q5_direct_ms() -> float:
    """The likely slip in Q5: the switch's direct exchange instead of the torus ring."""
    size = moe.dispatch_bytes(4096, 4096, 8)
    return moe.all_to_all_s(size, 16, "trn3-gen1-ultraserver") / ms


q1 = Exercise(
    "Q1 share of Mixtral's parameters a token uses",
    unit="",
    hint=("Count what every token uses (attention, embeddings, norms, router) plus 2 of the 8 experts of "
          "each layer, over everything stored: sizing.preset('mixtral-8x7b').exact_active_params() and "
          ".exact_params()."),
    solution=("m = sizing.preset('mixtral-8x7b')\n"
              "total = m.exact_params()          # 46.7 B stored: 32 layers × 8 experts + attention + embeddings\n"
              "active = m.exact_active_params()  # 12.9 B used: 2 of the 8 experts, and everything shared\n"
              "answer_1 = active / total         # a fraction"),
    wrong=0.25,
    mistakes=[(0.25, "2 of 8 is the share of the *experts* a token uses; attention, embeddings, norms and "
                     "the router are used by every token, so the share is higher"),
              (lambda: 1 / run_solution(q1._solution), "that is total over active: the question asks for "
                                                       "active over total")],
)

q2 = Exercise(
    "Q2 Qwen3-235B state per rank, TP 4 × EP 16",
    unit="GiB",
    hint=("Routed experts (96.6 % of the parameters) split over TP × EP = 64 ranks, everything else over "
          "the 4 TP ranks only; 16 bytes per parameter, no ZeRO (moe.expert_memory)."),
    solution=("e = moe.expert_memory('qwen3-235b-a22b', tp=4, ep=16, zero_stage=0)\n"
              "# experts: 16 B × 227 B params / 64 ranks; the rest: 16 B × 8 B params / 4 ranks\n"
              "answer_2 = e.state_bytes / GiB"),
    wrong=lambda: _q2_without_ep(),
    mistakes=[(lambda: _q2_without_ep(), "that is EP 1: every rank would keep all 128 experts of its layers"),
              (lambda: _q2_without_ep() / 16, "EP splits only the experts; attention and embeddings stay "
                                              "split over the 4 TP ranks alone")],
)

q3 = Exercise(
    "Q3 expert capacity",
    unit="tokens",
    rel_tol=0.0,
    hint="Capacity = ⌈capacity factor × tokens × experts per token / experts⌉ (Switch Transformers, GShard).",
    solution=("tokens, experts, k, c = 4096, 8, 2, 1.25\n"
              "balanced = tokens * k / experts        # 1,024 token copies per expert on average\n"
              "answer_3 = math.ceil(c * balanced)     # moe.expert_capacity_tokens(4096, 8, 2, 1.25)"),
    wrong=640,
    mistakes=[(640, "each token goes to k = 2 experts: there are 2 × 4,096 token copies to spread"),
              (1024, "that is the balanced load; the capacity factor adds 25 % of headroom")],
)

q4 = Exercise(
    "Q4 tokens dropped by a balanced router",
    unit="%",
    hint=("Even a balanced router gives each expert a binomial number of tokens, Binomial(T, k/E); with no "
          "headroom (c = 1) about half the experts overflow a little (moe.expected_dropped_fraction)."),
    solution=("share = moe.expected_dropped_fraction(4096, 8, experts_per_token=2, capacity_factor=1.0)\n"
              "# ≈ E × σ φ(0) / (T·k): σ = √(4096 × 0.25 × 0.75) ≈ 27.7 tokens per expert\n"
              "answer_4 = 100 * share"),
    wrong=0.0,
    mistakes=[(0.0, "a balanced router is balanced only on average: each expert's load scatters around "
                    "1,024 and about half the experts overflow a capacity of exactly 1,024")],
)

q5 = Exercise(
    "Q5 one dispatch over a Trn2 instance",
    unit="ms",
    hint=("Each chip sends 4,096 tokens × 8 experts × 4,096 values × 2 bytes; on the instance's torus the "
          "course costs an all-to-all as a ring, (n − 1)/2 × S / B with B the per-chip NeuronLink figure."),
    solution=("size = moe.dispatch_bytes(4096, 4096, experts_per_token=8)   # 256 MiB per chip\n"
              "answer_5 = moe.all_to_all_s(size, 16, 'trn2-ultraserver') / ms   # (16 − 1)/2 × S / B"),
    wrong=lambda: _q5_direct_ms(),
    mistakes=[(lambda: _q5_direct_ms(), "that is Trainium3's switched fabric (a direct exchange); on "
                                        "Trainium2's torus a message crosses several links"),
              (lambda: run_solution(q5._solution) / 8, "each token is sent to all 8 of its experts: "
                                                       "8 copies")],
)

q6 = Exercise(
    "Q6 interleaved bubble",
    unit="%",
    hint="Narayanan et al. 2021 §2.2.2: the bubble is (p − 1)/(v·m) of the busy time with v virtual stages.",
    solution=("p, m, v = 8, 32, 4\n"
              "answer_6 = 100 * (p - 1) / (v * m)   # layouts.pipeline_bubble_fraction(8, 32, 4)"),
    wrong=100 * 7 / 32,
    mistakes=[(100 * 7 / 32, "that is plain 1F1B's (p − 1)/m; interleaving divides it by v")],
)

q7 = Exercise(
    "Q7 MTBF of a 65,536-chip job",
    unit="h",
    hint=("Take Llama 3's per-GPU proxy (reliability.llama3_summary().per_gpu_mtbf_s) as each chip's MTBF "
          "(an assumption: no Trainium failure rate is published) and divide by the chips."),
    solution=("chip_mtbf_s = reliability.llama3_summary().per_gpu_mtbf_s   # GPU-cluster proxy\n"
              "answer_7 = reliability.job_mtbf_s(chip_mtbf_s, 65_536) / hour"),
    wrong=lambda: reliability.llama3_summary().mean_time_between_interruptions_s / hour,
    mistakes=[(lambda: reliability.llama3_summary().mean_time_between_interruptions_s / hour,
               "that is Meta's 16,384-GPU job; four times the chips fail four times as often")],
)

ALL = (q1, q2, q3, q4, q5, q6, q7)
