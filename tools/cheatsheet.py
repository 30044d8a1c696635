#!/usr/bin/env python3
"""Generate ``docs/cheatsheet.md``: every rule of thumb of the course on one page, each computed
by the package (from the sourced data) and linked to the chapter that derives it.

    python tools/cheatsheet.py          # rewrite docs/cheatsheet.md
    python tools/cheatsheet.py --check  # exit 1 if it is out of date (tests/test_cheatsheet.py)

No number on the page is typed: each comes from a function of ``trainium_lab``, so the page
changes when the data or a model does, and the test says so.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cheatsheet.md"


def _chapter(stem: str) -> str:
    return f"[{stem[:2]}](../notebooks/{stem}.ipynb)"


def rows() -> list[tuple[str, str, str, str]]:
    """(rule, formula, value on Trainium2 / Trainium3 or a worked value, chapter link)."""
    from trainium_lab import (collectives, compilation, intro, kernels, layouts, moe,
                              parallelism, reliability, roofline, serving, sizing, specs)
    from trainium_lab.units import KiB, MB, hour, minute

    out = []
    r2, r3 = roofline.ridge_point("trn2", "bf16"), roofline.ridge_point("trn3", "bf16")
    out.append(("A matmul turns compute-bound when its arithmetic intensity passes the ridge point; "
                "for a weight-stationary matmul that intensity is about the batch (tokens) it carries",
                "ridge = peak FLOP/s ÷ HBM bytes/s",
                f"BF16: {r2:,.0f} FLOP/byte (Trn2), {r3:,.0f} (Trn3)", _chapter("01_hardware")))
    m2 = roofline.compute_bound_batch(None, None, "bf16", "trn2")
    m3 = roofline.compute_bound_batch(None, None, "bf16", "trn3")
    out.append(("A matmul of a batch of m tokens against wide weights is compute-bound from m* on",
                "1/m + 1/n + 1/k ≤ 2/(R·b); wide weights: m* ≈ R·b/2",
                f"BF16: m* ≈ {m2:,.0f} tokens (Trn2), {m3:,.0f} (Trn3)", _chapter("01_hardware")))
    fit2, fit3 = (intro.max_params("bf16-adam", chip) for chip in ("trn2", "trn3"))
    out.append(("Training with Adam in mixed precision needs 16 bytes per parameter before activations",
                "N_max = (1 − reserve) · HBM / 16 B",
                f"35 % kept free: {fit2 / 1e9:.1f}B params per chip (Trn2), {fit3 / 1e9:.1f}B (Trn3)",
                _chapter("00_start_here")))
    base = sizing.recipe("bf16-adam")
    per_param = base.weights + base.gradients + base.master + base.adam_m + base.adam_v
    peer = per_param - sizing.DEFAULT_GRAD_BYTES_PER_PARAM + sizing.PEER_GRAD_BYTES_PER_PARAM
    out.append(("Mixed-precision Adam keeps weights, gradients, an FP32 master copy and two FP32 moments",
                "bytes/param = 2 + 2 + 4 + 4 + 4 (BF16 gradients); FP32 gradients add 2",
                f"{per_param:g} B/param (course, ZeRO paper); {peer:g} B/param (Megatron-LM, DeepSpeed)",
                _chapter("04_sizing")))
    flops = sizing.training_flops(8e9, 1e12)
    qwen = sizing.size_job(sizing.preset("qwen3-235b-a22b").n_params, 1e12, model="qwen3-235b-a22b")
    out.append(("Training compute is six FLOPs per parameter a token uses, per token (forward 2, backward 4); "
                "for a mixture of experts N counts the active parameters",
                "C ≈ 6 · N_active · D", f"8B params on 1T tokens: {flops:.1e} FLOPs; Qwen3-235B-A22B "
                f"({qwen.active_params / 1e9:.0f}B active): {qwen.flops:.1e}", _chapter("04_sizing")))
    n = 16
    factor = collectives.bus_factor("all_reduce", n)
    out.append(("A ring all-reduce sends almost twice the buffer through every rank's link",
                "t ≈ 2(n−1)/n · S / B (+ 2(n−1)·α)",
                f"n = {n}: 2(n−1)/n = {factor:.3f}", _chapter("03_topology_collectives")))
    dp = collectives.dp_comm_bound_table(["trn2-ultraserver", "trn3-gen1-ultraserver"])
    t2 = dict(zip(dp[dp.chip == "trn2"].level, dp[dp.chip == "trn2"].tokens_per_chip))
    t3 = dict(zip(dp[dp.chip == "trn3"].level, dp[dp.chip == "trn3"].tokens_per_chip))
    out.append(("Data parallelism is communication-bound below about C/W tokens per chip per step, "
                "W the bandwidth of the level the gradient all-reduce crosses",
                "B* ≈ C / W (BF16 gradients, overlapped with the backward pass)",
                f"Trn2: {t2['instance']:,.0f} (instance), {t2['ultraserver']:,.0f} (UltraServer), "
                f"{t2['efa']:,.0f} (EFA); Trn3 Gen1: {t3['ultraserver']:,.0f} (UltraServer), "
                f"{t3['efa']:,.0f} (EFA)", _chapter("03_topology_collectives")))
    efa = specs.link("trn2-efa")
    cross = collectives.latency_crossover_bytes(n, efa.bytes_per_s, efa.latency_s)
    out.append(("Below a crossover size a collective is latency-bound, above it bandwidth-bound",
                "S* = n · α · B", f"16 ranks over Trn2 EFA: {cross / MB:,.1f} MB", _chapter("03_topology_collectives")))
    tp = parallelism.tp_limit_table(("llama3-405b",), ("trn2-ultraserver",))
    lim = dict(zip(tp.level, tp.tp_limit_chips))
    size = dict(zip(tp.level, tp.chips_in_level))
    out.append(("Tensor parallelism stays compute-bound up to Y* chips, set by the MLP width f against "
                "C/W of the level it crosses (the batch cancels)",
                "Y* = 1 + k·f / (2·C/W), k = 3 matmuls for SwiGLU",
                f"Llama 3 405B on Trn2: {lim['instance']:,.0f} inside an instance (more than its "
                f"{size['instance']:,.0f} chips: never communication-bound there), "
                f"{lim['ultraserver']:,.0f} across the UltraServer ring, {lim['efa']:,.0f} over EFA",
                _chapter("05_parallel_layouts")))
    bubble = layouts.pipeline_bubble_fraction(4, 32)
    out.append(("The 1F1B pipeline idles for p − 1 slots at each end of a step",
                "bubble = (p − 1) / m of the ideal step (Narayanan et al. 2021)",
                f"p = 4, m = 32: {bubble:.1%}", _chapter("05_parallel_layouts")))
    y = reliability.young_interval_s(5 * minute, 24 * hour)
    out.append(("Checkpoint about every √(2 · write time · MTBF)",
                "τ ≈ √(2 δ M) (Young 1974)", f"δ = 5 min, M = 24 h: {y / minute:,.0f} min",
                _chapter("06_failure_modes")))
    per_param = reliability.checkpoint_bytes(1.0)
    out.append(("A checkpoint holds the weights, master copy and Adam moments, not the gradients",
                "bytes = N × (state bytes/param − gradient bytes)",
                f"{per_param:g} B/param: Llama 3 70B ≈ {reliability.checkpoint_bytes(70e9) / 1e9:,.0f} GB",
                _chapter("06_failure_modes")))
    lost = reliability.young_lost_fraction(5 * minute, 24 * hour, 10 * minute)
    out.append(("At Young's interval a job loses about √(2δ/M) to checkpoints and rework, plus R/M to restarts",
                "lost ≈ √(2δ/M) + R/M", f"δ = 5 min, M = 24 h, R = 10 min: {lost:.1%}",
                _chapter("06_failure_modes")))
    out.append(("A job fails as often as all its parts together",
                "MTBF_job = MTBF_part / N", "N times the parts, 1/N the time between failures",
                _chapter("06_failure_modes")))
    pad = compilation.padding_fraction(list(range(1, 129)), [128])
    out.append(("One bucket for uniformly spread lengths wastes about half the compute on padding",
                "padding = 1 − mean length / bucket", f"lengths 1…128, bucket 128: {pad:.1%}",
                _chapter("07_compilation")))
    out.append(("Double buffering hides the shorter stages behind the longest one",
                "1 buffer: n(L + C + S); ≥ 3: L + C + S + (n − 1)·max(L, C, S)",
                f"n = 8, L = C = S: {kernels.pipeline_time_s(8, 1, 1, 1, 1):g} vs "
                f"{kernels.pipeline_time_s(8, 1, 1, 1, 3):g} time units",
                _chapter("08_neuroncore_kernels")))
    m = sizing.preset("llama3-8b")
    kv = serving.kv_cache_bytes_per_token(m.n_layers, m.n_kv_heads, m.d_model // m.n_heads)
    out.append(("Every token in context keeps a key and a value per layer and KV head",
                "KV bytes/token = 2 · L · n_kv · d_head · bytes", f"Llama 3 8B, BF16: {kv / KiB:,.0f} KiB",
                _chapter("09_serving")))
    out.append(("Decode reads every weight once per step: its weight matmuls stay bandwidth-bound until the "
                "batch nears the ridge point, whatever the context; attention (about a/g FLOP/byte, the GQA "
                "group) stays bandwidth-bound at any batch", "batch* ≈ ridge · b_w / 2 (b_w bytes per weight)",
                f"BF16: ≈ {r2:,.0f} sequences (Trn2), ≈ {r3:,.0f} (Trn3); FP8 or INT8 weights: half",
                _chapter("09_serving")))
    parts = moe.parameter_table("mixtral-8x7b")
    total, active = parts["params"].sum(), parts["active_params"].sum()
    out.append(("In a mixture of experts, memory follows the total parameters and compute the active ones",
                "active = shared + k/E · experts", f"Mixtral 8×7B: {total / 1e9:.1f}B total, "
                f"{active / 1e9:.1f}B active per token", _chapter("10_mixture_of_experts")))
    bubble_v = layouts.pipeline_bubble_fraction(4, 32, virtual_stages=2)
    out.append(("Interleaving v virtual stages per rank divides the pipeline bubble by v",
                "bubble = (p − 1) / (v · m) (Narayanan et al. 2021)",
                f"p = 4, m = 32, v = 2: {bubble_v:.1%}", _chapter("10_mixture_of_experts")))
    tokens = serving.expected_tokens_per_pass(0.8, 5)
    out.append(("Speculative decoding's k drafted tokens yield (1 − α^(k+1)) / (1 − α) per target pass",
                "Leviathan et al. 2023, eq. 1", f"α = 0.8, k = 5: {tokens:.2f} tokens",
                _chapter("09_serving")))
    out.extend(_reality_rows())
    return out


def _reality_rows() -> list[tuple[str, str, str, str]]:
    """Issue 24: the fraction of each bound real runs reach (AWS's published measurements)."""
    from trainium_lab import reality, sizing, specs

    c = reality.compare().set_index("measurement_id")
    tpot = [c.loc[k, "bound_over_measured"] for k in ("nxdi-llama33-70b-tpot", "nxdi-llama31-405b-tpot")]
    m = reality.measurements().query("set == 'trn1_training'")
    mfus = [sizing.mfu_from_throughput(r.value * r.seq_len, sizing.preset(r.model).exact_params(), int(r.chips), "trn1")
            for _, r in m.iterrows()]
    pm = specs.calibration("planner_mfu")
    per_ar = reality.parameter("decode_tp_collective_s")
    s = reality.summary().set_index("set").loc["all"]
    return [
        ("A real decode step pays a fixed cost per TP all-reduce (two per layer) that more chips do not remove",
         "TPOT ≈ KV/HBM + max(2N·B/peak, W/HBM) + 2L · t_AR (scaling-book's general step)",
         f"t_AR ≈ {per_ar * 1e6:.0f} µs fitted; Trn2 at TP 64 reaches {tpot[0]:.0%} (70B) and {tpot[1]:.0%} (405B) "
         "of the bound's speed", _chapter("09_serving")),
        ("Prefill reaches about a third of peak on Trn2 (NxD Inference tutorials)", "TTFT ≈ FLOPs / (peak · η)",
         f"η ≈ {reality.parameter('prefill_efficiency'):.0%}", _chapter("09_serving")),
        ("Published Trainium training runs reach well under 40 % MFU; plan at the calibrated value and carry its range",
         "MFU = tokens/s · 6N / (chips · peak)",
         f"AWS Trn1 runs: {mfus[0]:.1%} (8B) and {mfus[1]:.1%} (70B); planner default {pm.value:.1%} "
         f"({pm.low:.1%} to {pm.high:.1%})", _chapter("05_parallel_layouts")),
        ("A collective pays a latency floor and reaches a fraction of the link figure; check a nccom-test 'GB/s' as size ÷ time",
         "t ≈ t0 + steps · α + bytes / (η · B)",
         f"Trn1 (NCCOM-TEST guide): t0 ≈ {reality.parameter('collective_launch_s') * 1e6:.0f} µs, "
         f"α ≈ {reality.parameter('ring_step_latency_s') * 1e6:.1f} µs, η ≈ {reality.parameter('neuronlink_bus_efficiency'):.0%} "
         "of NeuronLink", _chapter("03_topology_collectives")),
        ("How close the course's expectations come to every stored measurement",
         "median and largest abs(expected ÷ measured − 1); bounds never beaten",
         f"{s.n_rows:.0f} rows: median {s.median_abs_error:.1%}, largest {s.max_abs_error:.1%}",
         _chapter("11_capstone")),
    ]


def render() -> str:
    lines = ["# Trainium Lab cheat sheet", "",
             "Every rule of thumb in the course, with the chapter that derives it. Each number is "
             "computed by `trainium_lab` from the sourced data (this page is generated by "
             "`tools/cheatsheet.py`; a test fails when it is out of date).", "",
             "| Rule | Formula | Numbers | Chapter |", "|---|---|---|---|"]
    for rule, formula, value, chapter in rows():
        lines.append(f"| {rule} | {formula} | {value} | {chapter} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print("docs/cheatsheet.md is out of date: run python tools/cheatsheet.py")
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
