"""Exercises for chapter 10 (mixture of experts, planning at scale). Each solution is code that
shows the arithmetic with units; running it gives the reference answer
(``trainium_lab.exercises.Exercise``)."""

from __future__ import annotations

from trainium_lab import moe, reliability, sizing
from trainium_lab.exercises import Exercise, run_solution
from trainium_lab.units import GiB, minute, ms

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "ALL"]


def _q2_without_ep() -> float:
    """The likely slip in Q2: every rank keeps all 128 experts of each layer (EP 1)."""
    return moe.expert_memory("qwen3-235b-a22b", tp=8, ep=1, zero_stage=0).state_bytes / GiB


def _q5_direct_ms() -> float:
    """The likely slip in Q5: the switch's direct exchange instead of the torus ring."""
    size = moe.dispatch_bytes(8192, 4096, 2)
    return moe.all_to_all_s(size, 16, "trn3-gen1-ultraserver") / ms


def _q7_mtbf_min(n_chips: int) -> float:
    return reliability.job_mtbf_s(reliability.llama3_summary().per_gpu_mtbf_s, n_chips) / minute


q1 = Exercise(
    "Q1 share of a top-3 Mixtral's parameters a token uses",
    unit="",
    hint=("Count what every token uses (attention, embeddings, norms, router) plus 3 of the 8 experts of "
          "each layer, over everything stored: sizing.parameter_count(..., experts_per_token=3, active=True) "
          "over the total."),
    solution=("m = sizing.preset('mixtral-8x7b')\n"
              "shape = dict(n_experts=8, experts_per_token=3, expert_ffn_dim=m.expert_ffn_dim)\n"
              "args = (m.n_layers, m.d_model, m.n_heads, m.n_kv_heads, m.ffn_dim, m.vocab_size)\n"
              "total = sizing.parameter_count(*args, **shape)                 # 46.7 B stored, as before\n"
              "active = sizing.parameter_count(*args, active=True, **shape)   # 3 of 8 experts + everything shared\n"
              "answer_1 = active / total                                      # a fraction"),
    mistakes=[(0.375, "3 of 8 is the share of the *experts* a token uses; attention, embeddings, norms and "
                      "the router are used by every token, so the share is higher"),
              (lambda: sizing.preset("mixtral-8x7b").exact_active_params() / sizing.preset("mixtral-8x7b").exact_params(),
               "that is Mixtral as released, top-2; the question routes each token to 3 experts")],
)

q2 = Exercise(
    "Q2 Qwen3-235B state per rank, TP 8 × EP 32",
    unit="GiB",
    hint=("Routed experts (96.6 % of the parameters) split over TP × EP = 256 ranks, everything else over "
          "the 8 TP ranks only; 16 bytes per parameter, no ZeRO (moe.expert_memory)."),
    solution=("e = moe.expert_memory('qwen3-235b-a22b', tp=8, ep=32, zero_stage=0)\n"
              "# experts: 16 B × 227 B params / 256 ranks; the rest: 16 B × 8 B params / 8 ranks\n"
              "answer_2 = e.state_bytes / GiB"),
    mistakes=[(lambda: _q2_without_ep(), "that is EP 1: every rank would keep all 128 experts of its layers"),
              (lambda: _q2_without_ep() / 32, "EP splits only the experts; attention and embeddings stay "
                                              "split over the 8 TP ranks alone")],
)

q3 = Exercise(
    "Q3 expert capacity",
    unit="tokens",
    rel_tol=0.0,
    hint="Capacity = ⌈capacity factor × tokens × experts per token / experts⌉ (Switch Transformers, GShard).",
    solution=("tokens, experts, k, c = 2048, 64, 6, 1.2\n"
              "balanced = tokens * k / experts        # 192 token copies per expert on average\n"
              "answer_3 = math.ceil(c * balanced)     # moe.expert_capacity_tokens(2048, 64, 6, 1.2)"),
    mistakes=[(39, "each token goes to k = 6 experts: there are 6 × 2,048 token copies to spread"),
              (192, "that is the balanced load; the capacity factor adds 20 % of headroom")],
)

q4 = Exercise(
    "Q4 tokens dropped by a balanced fine-grained router",
    unit="%",
    hint=("Even a balanced router gives each expert a binomial number of tokens, Binomial(T, k/E); with no "
          "headroom (c = 1) about half the experts overflow a little (moe.expected_dropped_fraction)."),
    solution=("share = moe.expected_dropped_fraction(4096, 128, experts_per_token=8, capacity_factor=1.0)\n"
              "# mean load 256, σ = √(4096 × (1/16) × (15/16)) ≈ 15.5: σ/mean is twice the 8-expert case's\n"
              "answer_4 = 100 * share"),
    mistakes=[(0.0, "a balanced router is balanced only on average: each expert's load scatters around "
                    "its mean and about half the experts overflow a capacity of exactly the mean"),
              (lambda: 100 * moe.expected_dropped_fraction(4096, 8, 2, 1.0),
               "that is 8 experts, top-2; with 128 experts the mean load per expert is smaller and its "
               "relative scatter larger")],
)

q5 = Exercise(
    "Q5 one Mixtral dispatch over a Trn2 instance",
    unit="ms",
    hint=("Each chip sends 8,192 tokens × 2 experts × 4,096 values × 2 bytes; the question asks for the "
          "course's all-to-all model, a ring per level, (n − 1)/2 × S / B with B the per-chip NeuronLink "
          "figure: an upper bound for the 4×4 torus."),
    solution=("size = moe.dispatch_bytes(8192, 4096, experts_per_token=2)   # 128 MiB per chip\n"
              "answer_5 = moe.all_to_all_s(size, 16, 'trn2-ultraserver') / ms   # (16 − 1)/2 × S / B"),
    mistakes=[(lambda: _q5_direct_ms(), "that is Trainium3's switched fabric (a direct exchange); on "
                                        "Trainium2's torus a message crosses several links"),
              (lambda: run_solution(q5._solution) / 2, "each token is sent to both of its experts: "
                                                       "2 copies"),
              (lambda: run_solution(q5._solution) * 4 / 15,
               "that is chapter 03's shortest-path estimate for the torus, a better guess of the real exchange; "
               "the question asks for the course's ring model, the upper bound the planner uses by default")],
)

q6 = Exercise(
    "Q6 interleaved bubble",
    unit="%",
    hint="Narayanan et al. 2021 §2.2.2: the bubble is (p − 1)/(v·m) of the busy time with v virtual stages.",
    solution=("p, m, v = 8, 32, 4\n"
              "answer_6 = 100 * (p - 1) / (v * m)   # layouts.pipeline_bubble_fraction(8, 32, 4)"),
    mistakes=[(100 * 7 / 32, "that is plain 1F1B's (p − 1)/m; interleaving divides it by v")],
)

q7 = Exercise(
    "Q7 MTBF of a 131,072-chip job",
    unit="min",
    hint=("Take Llama 3's per-GPU proxy (reliability.llama3_summary().per_gpu_mtbf_s) as each chip's MTBF "
          "(an assumption: no Trainium failure rate is published) and divide by the chips."),
    solution=("chip_mtbf_s = reliability.llama3_summary().per_gpu_mtbf_s   # GPU-cluster proxy\n"
              "answer_7 = reliability.job_mtbf_s(chip_mtbf_s, 131_072) / minute"),
    mistakes=[(lambda: _q7_mtbf_min(32_768), "twice the chips fail twice as often: the MTBF halves, it does "
                                             "not double"),
              (lambda: reliability.llama3_summary().mean_time_between_interruptions_s / minute,
               "that is Meta's 16,384-GPU job; eight times the chips fail eight times as often")],
)

ALL = (q1, q2, q3, q4, q5, q6, q7)
