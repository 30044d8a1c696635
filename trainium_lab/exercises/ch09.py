"""Exercises for chapter 09 (serving). Each solution is code that shows the arithmetic with
units; running it gives the reference answer (``trainium_lab.exercises.Exercise``)."""

from __future__ import annotations

from trainium_lab import serving
from trainium_lab.exercises import Exercise, run_solution

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q11", "ALL"]

def _q2_compute_ms() -> float:
    """The likely slip in Q2: the compute time instead of the HBM time, in ms."""
    r = serving.replica("llama3-8b", "trn2", tp=4)
    return serving.decode_step(r, 1, 1024).compute_s * 1e3


def _q6_without_cap() -> int:
    """The likely slip in Q6: the KV budget as everything the weights leave (no cap)."""
    r = serving.replica("llama3-8b", "trn2", tp=4)
    return serving.capacity(r, 8192, kv_cap_fraction=1.0).max_sequences


def _q6_without_utilization() -> int:
    """Another slip in Q6: the cap taken on the whole HBM of the core, not on the budget."""
    r = serving.replica("llama3-8b", "trn2", tp=4)
    return serving.capacity(r, 8192, memory_utilization=1.0).max_sequences


q1 = Exercise(
    "Q1 KV cache per token, Llama 3 405B, FP8",
    unit="KiB",
    hint=("2 (a key and a value) × layers × KV heads × head dimension × bytes per element, with the "
          "shape from sizing.preset('llama3-405b'): only the KV heads keep keys and values, and FP8 "
          "stores one byte per element."),
    solution=("m = sizing.preset('llama3-405b')\n"
              "head_dim = m.d_model // m.n_heads                      # model width over query heads\n"
              "per_token_bytes = 2 * m.n_layers * m.n_kv_heads * head_dim * 1   # FP8: 1 byte\n"
              "answer_1 = per_token_bytes / KiB"),
    mistakes=[(lambda: 2 * run_solution(q1._solution), "that is the BF16 size: FP8 stores one byte per "
                                                       "element, not two"),
              (lambda: 16 * run_solution(q1._solution), "you used the 128 query heads; keys and values "
                                                        "are kept for the 8 KV heads only (grouped-query "
                                                        "attention)"),
              (lambda: run_solution(q1._solution) / 2, "a token keeps a key AND a value vector: the factor 2"),
              (lambda: run_solution(q1._solution) * 1024, "that is in bytes; the question asks for KiB")],
)

q2 = Exercise(
    "Q2 decode step, Llama 3 8B on one Trainium2",
    unit="ms",
    hint=("At batch 1 a decode step reads every weight once (and the KV of 1,024 tokens): bytes over "
          "the HBM bandwidth of the ranks holding them. TP 4 at LNC=2 is the whole chip."),
    solution=("r = serving.replica('llama3-8b', 'trn2', tp=4)              # 4 ranks = 1 chip at LNC=2\n"
              "weights = r.weight_bytes                                   # 8.03e9 params × 2 B\n"
              "kv = (1024 + 1) * r.kv_bytes_per_token                     # read 1,024 tokens, write 1\n"
              "bandwidth = r.hbm_bytes_per_s_active                       # the four ranks' share: the chip's\n"
              "answer_2 = (weights + kv) / bandwidth / ms                 # HBM-bound: compute is ~0.02 ms"),
    mistakes=[(lambda: _q2_compute_ms(), "that is the compute time (2 FLOPs per weight at the chip's peak); "
                                         "at batch 1 reading the weights from HBM takes far longer"),
              (lambda: 4 * run_solution(q2._solution), "you used one logical core's bandwidth: the four "
                                                       "ranks read their shards in parallel, at the whole chip's bandwidth")],
)

def _q3_one_roofline() -> float:
    """The slip Q3 drills against: one roofline over the whole step, KV reads counted against the matmuls."""
    return serving.decode_compute_bound_batch(serving.replica("llama3-70b", "trn3", tp=8), 1024)


q3 = Exercise(
    "Q3 batch where 70B's weight matmuls turn compute-bound, Trainium3",
    unit="sequences",
    rel_tol=0.02,
    hint=("Only the weight matmuls share their bytes across the batch: a BF16 weight (2 bytes) read once "
          "per step does 2 FLOPs per sequence, so B FLOPs per byte. Set that equal to Trainium3's ridge "
          "point (specs.chip('trn3'): BF16 peak ÷ HBM bandwidth). The context enters attention's time "
          "(memory-bound at any batch), not this batch."),
    solution=("chip = specs.chip('trn3')\n"
              "ridge = chip.dense_flops_per_s['bf16'] / chip.hbm_bytes_per_s   # FLOPs per byte where compute takes over\n"
              "bytes_per_weight = 2                                          # BF16\n"
              "# a weight read once per step does 2 FLOPs per sequence: intensity 2·B / bytes_per_weight\n"
              "answer_3 = ridge * bytes_per_weight / 2   # no context term: KV reads belong to attention"),
    mistakes=[(_q3_one_roofline,
               "that is the one-roofline batch, with the KV reads counted against the weight matmuls' "
               "FLOPs: the chapter takes the step apart. Attention reads its own KV per sequence and stays "
               "memory-bound at any batch; the weight matmuls turn compute-bound at the same batch whatever "
               "the context"),
              (lambda: serving.weight_critical_batch("trn2"),
               "that is Trainium2's batch: use Trainium3's BF16 peak and HBM bandwidth"),
              (lambda: serving.weight_critical_batch("trn3", 1.0),
               "that is the batch for one-byte weights with BF16 matmuls (weight-only INT8); these weights "
               "are BF16, two bytes each"),
              (1.0, "a batch of one reads every weight for two FLOPs each: it is deep in the "
                    "HBM-bound region")],
)

q4 = Exercise(
    "Q4 tokens per target pass",
    unit="tokens",
    hint="Equation (1) of Leviathan et al.: (1 − α^(k+1)) / (1 − α), with α = 0.7 and k = 4.",
    solution=("alpha, k = 0.7, 4\n"
              "answer_4 = (1 - alpha ** (k + 1)) / (1 - alpha)   # accepted drafts + the target's own token"),
    mistakes=[(1.7731, "that counts only the accepted draft tokens; every pass also yields one token "
                       "from the target itself"),
              (5.0, "that is the most a pass can give (k + 1), reached only if every draft is accepted")],
)

q5 = Exercise(
    "Q5 best speculation length",
    unit="tokens drafted",
    rel_tol=0.0,
    hint=("Evaluate Theorem 3.8, (1 − α^(k+1)) / ((1 − α)(k c + 1)), for k = 0, 1, 2, … with "
          "α = 0.8 and c = 0.1, and take the k that maximises it."),
    solution=("alpha, c = 0.8, 0.1\n"
              "speedups = [(1 - alpha ** (k + 1)) / ((1 - alpha) * (k * c + 1)) for k in range(33)]\n"
              "answer_5 = int(np.argmax(speedups))"),
    mistakes=[(32, "more drafted tokens always add expected tokens, but each costs c of a target step: "
                   "the speed-up peaks and then falls"),
              (1, "one drafted token is not the best: at α = 0.8 most drafts are accepted, so several pay "
                  "for their cost c")],
)

q6 = Exercise(
    "Q6 concurrent 8K sequences, Llama 3 8B on one Trainium2",
    unit="sequences",
    rel_tol=0.0,
    hint=("Per logical core: budget = its HBM × vLLM's default memory utilization. The KV cache gets "
          "the smaller of (budget less a quarter of the weights and the runtime's micro-code, 2 × 96 MB "
          "at LNC=2) and vLLM Neuron's cap, 0.30 × budget (serving.serving_fact); divide by one "
          "sequence's KV on that core (8,192 tokens in 32-token blocks)."),
    solution=("r = serving.replica('llama3-8b', 'trn2', tp=4)\n"
              "budget = r.hbm_bytes_per_rank * serving.serving_fact('gpu_memory_utilization_default')   # 21.6 GiB\n"
              "resident = r.weight_bytes_per_rank + 2 * serving.serving_fact('microcode_bytes_per_physical_core')\n"
              "cap = serving.serving_fact('kv_budget_cap_fraction_default') * budget   # 6.48 GiB\n"
              "kv_budget = min(budget - resident, cap)                                # the cap binds\n"
              "per_seq = serving.paged_kv_blocks(8192, 32) * 32 * r.kv_bytes_per_token_per_rank   # 256 MiB\n"
              "answer_6 = int(kv_budget // per_seq)"),
    mistakes=[(lambda: _q6_without_cap(), "that gives the KV cache everything the weights leave (17.7 GiB); "
                                          "vLLM Neuron caps it by default at 0.30 of the budget, 6.48 GiB"),
              (lambda: _q6_without_utilization(), "you took the cap on all the core's HBM; vLLM budgets "
                                                  "only gpu_memory_utilization of it, and the cap is 0.30 "
                                                  "of that budget"),
              (lambda: 4 * run_solution(q6._solution), "the KV of one sequence is split over the 4 "
                                                       "ranks: count sequences per replica, not per rank "
                                                       "times four")],
)

q7 = Exercise(
    "Q7 chips under TP 16 × PP 4 at LNC=1",
    unit="chips",
    rel_tol=0.0,
    hint="Ranks = TP × PP; at LNC=1 every physical NeuronCore is a logical core (a rank): 8 per Trainium2.",
    solution=("ranks = 16 * 4\n"
              "answer_7 = ranks / cores.logical_cores_per_chip('trn2', 1)   # 64 ranks / 8 per chip"),
    mistakes=[(64, "64 is the number of ranks; each Trainium2 chip runs 8 of them at LNC=1"),
              (16, "at LNC=1 a Trainium2 chip has 8 logical cores (4 is LNC=2)")],
)


import functools  # noqa: E402

_Q11_TPS = (1, 2, 4, 8, 16, 32)


@functools.cache
def _q11_table() -> dict:
    """{(tp, batch): tokens/s per chip} of every Llama 3 8B replica within capacity and a 10 ms step."""
    from trainium_lab import serving

    out = {}
    for tp in _Q11_TPS:
        r = serving.replica("llama3-8b", "trn2", tp=tp)
        for b in range(1, serving.capacity(r, 4096).max_sequences + 1):
            d = serving.decode_step(r, b, 4096)
            if d.time_s <= 0.010:
                out[(tp, b)] = d.tokens_per_s_per_chip
    return out


def _q11_accepted() -> list:
    """Every (tp, batch) the checker accepts (computed: the serving model decides)."""
    table = _q11_table()
    best = max(table.values())
    return sorted(k for k, v in table.items() if v >= 0.9 * best)


def _q11_check(answer, expected):
    """Accept any (tp, batch) within capacity and 10 ms whose tokens/s per chip is within 10 % of the best."""
    from trainium_lab import serving

    if (not isinstance(answer, (tuple, list)) or len(answer) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in answer)):
        return False, "expected two whole, positive numbers (tp, batch)"
    tp, b = answer
    if tp not in _Q11_TPS:
        return False, f"TP {tp} is not one of {_Q11_TPS}"
    r = serving.replica("llama3-8b", "trn2", tp=tp)
    cap = serving.capacity(r, 4096).max_sequences
    if b > cap:
        return False, f"TP {tp} holds only {cap} sequences of 4,096 tokens in its KV budget, not {b}"
    step = serving.decode_step(r, b, 4096)
    if step.time_s > 0.010:
        return False, f"at TP {tp} and batch {b} a decode step takes {step.time_s * 1e3:.1f} ms, over 10 ms"
    best = max(_q11_table().values())
    if step.tokens_per_s_per_chip < 0.9 * best:
        return False, (f"{step.tokens_per_s_per_chip:,.0f} tokens/s per chip, {step.tokens_per_s_per_chip / best:.0%} "
                       f"of the best pair's {best:,.0f}")
    return True, ""


q11 = Exercise(
    "Q11 TP and batch for an 8B service (open)",
    rel_tol=0.0,
    open_variant=True,
    checker=_q11_check,
    also_accepted=(lambda: _q11_accepted()[0], lambda: _q11_accepted()[-1]),
    hint=("For each TP, serving.capacity(...).max_sequences caps the batch; serving.decode_step(...) gives "
          "the step and tokens/s per chip; take the largest batch within 10 ms and compare TPs."),
    solution=("best, pick = 0.0, None\n"
              "for tp in (1, 2, 4, 8, 16, 32):\n"
              "    r = serving.replica('llama3-8b', 'trn2', tp=tp)\n"
              "    for b in range(1, serving.capacity(r, 4096).max_sequences + 1):\n"
              "        d = serving.decode_step(r, b, 4096)             # expected: KV + weights + TP all-reduces\n"
              "        if d.time_s <= 0.010 and d.tokens_per_s_per_chip > best:\n"
              "            best, pick = d.tokens_per_s_per_chip, (tp, b)\n"
              "answer_11 = pick"),
    mistakes=[(lambda: _q11_capacity(8), "that is the KV capacity at TP 8: filling it pushes the step over "
                                         "10 ms, because every sequence's cache is read each step"),
              ((32, 99), "eight chips per replica split the same weight reads over more chips than the "
                         "step needs: tokens per chip fall"),
              ((1, 1), "one logical core reads all the weights through its share of the chip's HBM "
                       "bandwidth: even at batch 1 the step is over 10 ms")],
)


def _q11_capacity(tp: int):
    from trainium_lab import serving

    return (tp, serving.capacity(serving.replica("llama3-8b", "trn2", tp=tp), 4096).max_sequences)


ALL = (q1, q2, q3, q4, q5, q6, q7, q11)
