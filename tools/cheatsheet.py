#!/usr/bin/env python3
"""Generate ``docs/cheatsheet.md``: every rule of thumb of the course on one page, each computed
by the package (from the sourced data) and linked to the chapter that derives it.

    python tools/cheatsheet.py          # rewrite docs/cheatsheet.md
    python tools/cheatsheet.py --check  # exit 1 if it is out of date (tests/test_cheatsheet.py)

No number on the page is typed: each comes from a function of ``trainium_lab``, so the page
changes when the data or a model does, and the test says so.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cheatsheet.md"


def _chapter(stem: str) -> str:
    return f"[{stem[:2]}](../notebooks/{stem}.ipynb)"


CHAPTERS = {p.stem[:2]: p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}


def numbers_to_remember(stem: str) -> list[str]:
    """The first column of every data row of a chapter's Numbers-to-remember table(s), as written.

    A table belongs to the box when it follows a ``Numbers to remember`` heading (H2 or H3) or a
    ``> **Numbers to remember**`` line, up to the next heading; quoted (``>``) tables count too.
    """
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    out, inside = [], False
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines = "".join(cell["source"]).splitlines()
        for i, line in enumerate(lines):
            heading = re.match(r"^#{1,3} (.+)", line)
            if heading:
                inside = heading.group(1).strip().startswith("Numbers to remember")
                continue
            if re.match(r"^>?\s*\*\*Numbers to remember\*\*", line):
                inside = True
                continue
            text = re.sub(r"^>\s?", "", line).strip()
            if not inside or not text.startswith("|") or re.match(r"^\|\s*:?-", text):
                continue
            following = re.sub(r"^>\s?", "", lines[i + 1]).strip() if i + 1 < len(lines) else ""
            if re.match(r"^\|\s*:?-", following):
                continue                                  # the table's header row
            out.append(text.strip("|").split("|")[0].strip())
    return out


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def rows() -> list[tuple[str, tuple[str, ...], str, str, str]]:
    """(chapter, covers, rule, formula, numbers): one row per rule, numbers computed by the package.

    ``covers`` are lower-case fragments of the chapter's Numbers-to-remember rows this row stands
    for (``coverage()`` matches each notebook row to exactly one cheat-sheet row).
    """
    import numpy as np

    from trainium_lab import (collectives, compilation, cores, intro, kernels, layouts, moe, numerics,
                              parallelism, planning, reliability, roofline, serving, sizing, specs,
                              topology)
    from trainium_lab.units import GB, GiB, KiB, MB, MiB, day, hour, minute, ms

    out = []
    t2, t3 = specs.chip("trn2"), specs.chip("trn3")
    add = out.append

    # 00 · start here
    add(("00", ("1 gib = 1.074 gb",), "Say GiB for 2³⁰ and GB for 10⁹: vendors mix them", "1 GiB = 2³⁰ B",
         f"1 GiB = {GiB / GB:.3f} GB; Trainium2's HBM {t2.hbm_bytes / GiB:.0f} GiB = {t2.hbm_bytes / GB:.0f} GB"))
    add(("00", ("billions of parameters × bytes per parameter",), "Memory of a model: parameters × bytes per parameter",
         "GB ≈ billions of params × B/param",
         ", ".join(f"{d} {intro.hbm_fit(1, d).bytes_per_param:g} B" for d in ("bfloat16", "float8_e4m3fn", "bf16-adam"))))
    fit2, fit3 = (intro.max_params("bf16-adam", c) for c in ("trn2", "trn3"))
    add(("00", ("one trainium2 holds the bf16 weights",), "What one chip holds: BF16 weights, or the Adam "
         "training state with 35 % of HBM kept free", "N_max = (1 − reserve) · HBM / bytes per param",
         f"Trn2: {intro.max_params('bfloat16', 'trn2', reserve_share=0) / 1e9:.0f}B (weights), {fit2 / 1e9:.1f}B "
         f"(training); Trn3: {intro.max_params('bfloat16', 'trn3', reserve_share=0) / 1e9:.0f}B, {fit3 / 1e9:.1f}B"))
    add(("00", ("flops a day at peak",), "Time = FLOPs ÷ FLOP/s", "one chip-day = peak × 86,400 s",
         f"Trn2 BF16: {t2.dense_flops_per_s['bf16'] * day:.1e} FLOPs a day at peak"))
    add(("00", ("reads its whole hbm",), "Time = bytes ÷ bytes/s (one-way)", "HBM ÷ HBM bandwidth",
         f"whole HBM in {t2.hbm_bytes / t2.hbm_bytes_per_s / ms:.0f} ms (Trn2), "
         f"{t3.hbm_bytes / t3.hbm_bytes_per_s / ms:.0f} ms (Trn3)"))

    # 01 · hardware
    r2, r3 = roofline.ridge_point("trn2", "bf16"), roofline.ridge_point("trn3", "bf16")
    add(("01", ("ridge point r = peak",), "A matmul turns compute-bound when its arithmetic intensity passes "
         "the ridge point", "R = peak FLOP/s ÷ HBM bytes/s", f"BF16: {r2:,.0f} FLOP/byte (Trn2), {r3:,.0f} (Trn3)"))
    add(("01", ("intensity i = (2/b)",), "Intensity of a matmul and the compute-bound test",
         "I = (2/b) ÷ (1/m + 1/n + 1/k); compute-bound iff 1/m + 1/n + 1/k ≤ 2/(R·b)",
         f"m = n = k = 4096, BF16: {roofline.matmul_bound(4096, 4096, 4096, 'bf16', 'trn2').intensity_flop_per_byte:,.0f} FLOP/byte"))
    m2, m3 = (roofline.compute_bound_batch(None, None, "bf16", c) for c in ("trn2", "trn3"))
    add(("01", ("a wide matmul is compute-bound from m*",), "A batch of m tokens through wide weights is "
         "compute-bound from m*", "m* ≈ R·b/2; square: s ≈ 1.5·b·R",
         f"BF16: m* ≈ {m2:,.0f} (Trn2), {m3:,.0f} (Trn3); MXFP8 on Trn3 "
         f"{roofline.compute_bound_batch(None, None, 'mxfp8', 'trn3'):,.0f}; square s ≈ "
         f"{roofline.square_size_at_ridge('trn2', 'bf16'):,.0f} (Trn2)"))
    add(("01", ("trainium2 → trainium3",), "Trainium2 → Trainium3: compute-bound work follows the peak, "
         "HBM-bound work the bandwidth", "ratio of peaks; ratio of HBM bandwidths",
         f"×{t3.dense_flops_per_s['bf16'] / t2.dense_flops_per_s['bf16']:.2f} (BF16 compute), "
         f"×{t3.hbm_bytes_per_s / t2.hbm_bytes_per_s:.2f} (HBM)"))
    cc = cores.core_counts("trn2.48xlarge", lnc=2)
    add(("01", ("ranks = chips × cores per chip ÷ lnc",), "Ranks (logical cores) of a system",
         "ranks = chips × cores per chip ÷ LNC",
         f"trn2.48xlarge at LNC=2: {cc.ranks} ranks of {cc.hbm_bytes_per_logical_core / GiB:.0f} GiB"))

    d2 = roofline.engine_element_rates("trn2")
    add(("01", ("vector/scalar engine rate = data-path",), "Rate the vector and scalar engines by their data "
         "paths, not the pages' TFLOPS: fused attention is bound by them", "elements per cycle × clock × cores",
         f"Trn2: vector {d2['vector'] / 1e12:.2f}, scalar {d2['scalar'] / 1e12:.2f} T element ops/s"))

    # 02 · numerics
    bf16, e4, e5 = (numerics.format_info(d) for d in ("bfloat16", "float8_e4m3fn", "float8_e5m2"))
    add(("02", ("mantissa bits resolve",), "m mantissa bits resolve one part in 2^m; smaller updates vanish under "
         "round to nearest", "gap = 2^(e − m)", f"BF16: 1/{2 ** bf16.mantissa_bits}; updates below w/"
         f"{2 ** (bf16.mantissa_bits + 1)} vanish"))
    add(("02", ("fp8 ranges",), "FP8: E4M3 for range-limited precision, E5M2 for range", "largest finite value",
         f"E4M3 ±{e4.max_finite:g} (1 part in {2 ** e4.mantissa_bits}); E5M2 ±{e5.max_finite:,.0f} "
         f"(1 part in {2 ** e5.mantissa_bits})"))
    add(("02", ("adam training state",), "Adam's training state with and without the FP32 master copy",
         "2 + 2 + 4 + 4 + 4 B/param", f"{numerics.bytes_per_param(True):g} B/param with, "
         f"{numerics.bytes_per_param(False):g} without"))
    add(("02", ("mx block",), "MX block scaling: a block shares one power-of-two scale", "+8/block bits per value",
         f"{numerics.MX_BLOCK_SIZE} values per scale: MXFP8 {e4.bits + 8 / numerics.MX_BLOCK_SIZE:g} bits"))
    add(("02", ("fp8 speed-up",), "FP8 speed-up over BF16", "ratio of dense peaks",
         f"Trn2 FP8 ×{t2.dense_flops_per_s['fp8'] / t2.dense_flops_per_s['bf16']:.2f}; Trn3 MXFP8 "
         f"×{t3.dense_flops_per_s['mxfp8'] / t3.dense_flops_per_s['bf16']:.2f}, plain FP8 "
         f"×{t3.dense_flops_per_s['fp8'] / t3.dense_flops_per_s['bf16']:.0f}"))

    # 03 · topology and collectives
    n = 16
    add(("03", ("a ring all-reduce sends",), "A ring all-reduce sends almost twice the buffer through every rank's link",
         "t ≈ 2(n−1)/n · S / B (+ 2(n−1)·α)", f"n = {n}: 2(n−1)/n = {collectives.bus_factor('all_reduce', n):.3f}"))
    torus, ring, efa = (specs.link(k).bytes_per_s for k in ("trn2-neuronlink-intra", "trn2-neuronlink-inter", "trn2-efa"))
    add(("03", ("trn2 per-chip bandwidth",), "Trn2's three levels, per chip", "torus / UltraServer ring / EFA",
         f"{torus / GB:,.0f} / {ring / GB:,.0f} / {efa / GB:,.0f} GB/s"))
    cross = collectives.latency_crossover_bytes(n, efa, specs.link("trn2-efa").latency_s)
    add(("03", ("latency crossover",), "Below a crossover size a collective is latency-bound, above it bandwidth-bound",
         "S* = n · α · B", f"16 ranks over Trn2 EFA: {cross / MB:,.1f} MB"))
    dp = collectives.dp_comm_bound_table(["trn2-ultraserver", "trn3-gen1-ultraserver"])
    td2 = dict(zip(dp[dp.chip == "trn2"].level, dp[dp.chip == "trn2"].tokens_per_chip))
    td3 = dict(zip(dp[dp.chip == "trn3"].level, dp[dp.chip == "trn3"].tokens_per_chip))
    add(("03", ("dp is communication-bound below",), "Data parallelism is communication-bound below about C/W "
         "tokens per chip per step, W the bandwidth of the level the all-reduce crosses",
         "B* ≈ C / W (BF16 gradients, overlapped with the backward pass)",
         f"Trn2: {td2['instance']:,.0f} (instance), {td2['ultraserver']:,.0f} (UltraServer), {td2['efa']:,.0f} (EFA); "
         f"Trn3 Gen1: {td3['ultraserver']:,.0f} (UltraServer), {td3['efa']:,.0f} (EFA)"))
    add(("03", ("tp degrees count ranks",), "TP degrees count ranks, not chips", "chips = ranks ÷ ranks per chip",
         f"{topology.ranks_per_chip('trn2', 2)} ranks per Trn2 chip at LNC=2: TP{topology.ranks_per_system('trn2.48xlarge', 2)} "
         f"ranks = {specs.system('trn2.48xlarge').n_chips} chips"))

    # 04 · sizing
    base = sizing.recipe("bf16-adam")
    per_param = base.weights + base.gradients + base.master + base.adam_m + base.adam_v
    peer = per_param - sizing.DEFAULT_GRAD_BYTES_PER_PARAM + sizing.PEER_GRAD_BYTES_PER_PARAM
    add(("04", ("training state, bf16 + adam",), "Mixed-precision Adam keeps weights, gradients, an FP32 master copy "
         "and two FP32 moments", "bytes/param = 2 + 2 + 4 + 4 + 4; FP32 gradients add 2",
         f"{per_param:g} B/param ({sizing.training_state_bytes(1e9, per_param) / GiB:.1f} GiB per billion); "
         f"{peer:g} B/param (Megatron-LM, DeepSpeed)"))
    add(("04", ("fully sharded state per chip",), "Fully sharded training state per chip with 35 % kept free",
         "HBM × 0.65 ÷ 16 B", f"Trn2 {sizing.usable_state_bytes_per_chip('trn2') / 16 / 1e9:.1f}B params, "
         f"Trn3 {sizing.usable_state_bytes_per_chip('trn3') / 16 / 1e9:.1f}B"))
    nxd_sharded, nxd_whole = sizing.recipe_split("nxd-standard-mixed-precision", 1)
    from trainium_lab import components
    add(("04", ("nxd standard mixed precision (zero-1)",), "NxD's Standard Mixed Precision (NxD training, "
         f"{components.status_label('nxd-training')}; "
         "ZeRO-1): FP32 master weights, optimizer states and gradient accumulation",
         "bytes/param = whole + sharded ÷ DP",
         f"{nxd_sharded + nxd_whole:g} B/param, {nxd_whole:g} of them unsharded; 8B on 16 chips: "
         f"{(nxd_whole + nxd_sharded / 16) * 8e9 / GiB:.1f} GiB per chip"))
    qwen_job = sizing.size_job(sizing.preset("qwen3-235b-a22b").n_params, 1e12, model="qwen3-235b-a22b")
    add(("04", ("training flops",), "Training compute is six FLOPs per parameter a token uses, per token "
         "(forward 2, backward 4); for a mixture of experts N counts the active parameters", "C ≈ 6 · N_active · D",
         f"8B params on 1T tokens: {sizing.training_flops(8e9, 1e12):.1e} FLOPs; Qwen3-235B-A22B "
         f"({qwen_job.active_params / 1e9:.0f}B active): {qwen_job.flops:.1e}"))
    add(("04", ("one chip-day at 40 % mfu",), "One chip-day at 40 % MFU (the teaching value: a round number to "
         "compute with, never a plan)", "C × 0.4 × 86,400 s",
         f"Trn2: {t2.dense_flops_per_s['bf16'] * 0.4 * day:.1e} FLOPs"))
    p70 = sizing.preset("llama3-70b")
    c70 = sizing.activation_coefficients(p70.n_heads, p70.d_model, **sizing.activation_options(p70))
    add(("04", ("activations per layer",), "Activations per layer with selective recomputation",
         "≈ 34 · s · b · h bytes (÷ t with TP and SP; Korthikanti et al. 2022)",
         f"Llama 3 70B's layer: {c70.replicated + c70.sharded:g} · s · b · h"))

    # 05 · parallel layouts
    ratios = parallelism.level_ratios_table(["trn2-ultraserver", "trn3-gen2-ultraserver"])
    lv2 = ratios[ratios.system == "trn2-ultraserver"].set_index("level").flops_per_byte
    add(("05", ("c/w of a level",), "C/W of a level: FLOPs a chip must do per byte it sends",
         "chip FLOP/s ÷ bandwidth per chip", f"Trn2: {lv2['instance']:,.0f} (instance), {lv2['ultraserver']:,.0f} "
         f"(ring), {lv2['efa']:,.0f} (EFA)"))
    m_cal = sizing.default_mfu()   # the calibrated planner MFU: the one the chapters plan with
    b_star = parallelism.dp_compute_bound_tokens(t2.dense_flops_per_s["bf16"], efa, n=16, mfu=m_cal)
    add(("05", ("dp hides its all-reduce when tokens per replica",), "DP hides its all-reduce when each replica's "
         "backward window (one micro-batch if accumulating) carries enough tokens",
         "b* = (n−1)/n · (g/2) · MFU · C/W", f"16 replicas over Trn2 EFA at the calibrated MFU ({m_cal:.1%}): {b_star:,.0f} tokens"))
    tp = parallelism.tp_limit_table(("llama3-405b",), ("trn2-ultraserver",))
    lim = dict(zip(tp.level, tp.tp_limit_chips))
    add(("05", ("tp stays compute-bound below",), "Tensor parallelism stays compute-bound up to Y* chips (the batch "
         "cancels)", "Y* = 1 + k·f / (2·C/W), k = 3 for SwiGLU",
         f"Llama 3 405B on Trn2: {lim['instance']:,.0f} (instance), {lim['ultraserver']:,.0f} (ring), {lim['efa']:,.0f} (EFA)"))
    add(("05", ("pipeline bubble",), "The 1F1B pipeline idles for p − 1 slots at each end of a step",
         "bubble = (p − 1) / m of the busy time (Narayanan et al. 2021)",
         f"p = 4, m = 16: {layouts.pipeline_bubble_fraction(4, 16):.1%}"))   # chapter 05's box
    L405 = sizing.preset("llama3-405b").n_layers
    add(("05", ("uneven stages",), "Uneven stages: the busiest stage sets the pace", "⌈L/p⌉ ÷ (L/p)",
         f"Llama 3 405B on 4 stages: {-(-L405 // 4)} layers, +{-(-L405 // 4) / (L405 / 4) - 1:.1%}"))
    add(("05", ("tp degree",), "Say a TP degree in ranks and in chips", "chips = ranks ÷ ranks per chip",
         f"TP64 ranks = {64 // topology.ranks_per_chip('trn2', 2)} chips (Trn2, LNC=2), "
         f"{64 // topology.ranks_per_chip('trn3', 2)} chips (Trn3, LNC=2; both defaults)"))
    b_fsdp = parallelism.fsdp_compute_bound_tokens(t2.dense_flops_per_s["bf16"], efa, mfu=sizing.default_mfu())
    add(("05", ("zero-3 (fsdp) hides, per micro-batch",), "ZeRO-3 (FSDP) hides when every micro-batch carries "
         "enough tokens and the schedule overlaps it (JAX: NEURON_FSDP=1)",
         "b*_FSDP = (n−1)/n · MFU · C/W · max(w/2, (w+g)/4)",
         f"Trn2 EFA, calibrated MFU, BF16: {b_fsdp:,.0f} tokens"))
    zt = parallelism.zero_traffic_table(8, 32).set_index("zero_stage")
    add(("05", ("zero-2 against zero-1 with",), "With gradient accumulation ZeRO-2 sends (m + 1)/2 times ZeRO-1's "
         "bytes: shard gradients only when memory needs it", "ZeRO-2 ÷ ZeRO-1 = (m + 1)/2",
         f"m = 32: ×{zt.loc[2, 'vs_stage_1']:.1f}"))

    # 06 · failure modes
    s = reliability.llama3_summary()
    m_us = reliability.job_mtbf_s(s.per_gpu_mtbf_s, specs.system("trn2-ultraserver").n_chips)
    add(("06", ("job mtbf = chip mtbf / chips",), "A job fails as often as all its parts together",
         "MTBF_job = MTBF_part / N", f"Llama 3 proxy: one Trn2 UltraServer {m_us / day:.0f} days; 16,384 chips "
         f"{reliability.job_mtbf_s(s.per_gpu_mtbf_s, 16_384) / hour:.1f} h"))
    ck = reliability.checkpoint_bytes(1.0)
    add(("06", ("checkpoint = 14 b per parameter",), "A checkpoint holds the weights, master copy and Adam moments, "
         "not the gradients", "bytes = N × 14; δ = bytes ÷ storage bandwidth",
         f"{ck:g} B/param: Llama 3 70B ≈ {reliability.checkpoint_bytes(70e9) / 1e9:,.0f} GB, "
         f"{reliability.checkpoint_write_s(reliability.checkpoint_bytes(70e9), 12 * GB):.0f} s at 12 GB/s"))
    from trainium_lab import frameworks
    nxd_ck = frameworks.checkpoint_bytes_per_param("nxd")
    add(("06", ("nxd's default checkpoint",), "NxD's default checkpoint leaves the FP32 master copy out "
         "and loads on one data-parallel replica, then broadcasts", "bytes/param = weights + Adam moments",
         f"{nxd_ck:g} B/param ({frameworks.checkpoint_bytes_per_param('nxd', master_weights=True):g} with the "
         "master copy)"))
    add(("06", ("young:",), "Checkpoint about every √(2 · write time · MTBF); then checkpoints and rework cost "
         "√(2δ/M), restarts R/M", "τ ≈ √(2δM) (Young 1974); lost ≈ √(2δ/M) + R/M",
         f"δ = 5 min, M = 24 h: every {reliability.young_interval_s(5 * minute, 24 * hour) / minute:,.0f} min; "
         f"with R = 10 min {reliability.young_lost_fraction(5 * minute, 24 * hour, 10 * minute):.1%} lost"))
    m_llama = s.mean_time_between_interruptions_s
    add(("06", ("each minute of restart",), "Each minute of restart costs 1/M of the wall time", "R / M",
         f"at M = {m_llama / hour:.1f} h: {minute / m_llama:.2%} per minute"))
    add(("06", ("spares:",), "Spares: the chance none is free is a Poisson tail", "P(Poisson(T/M) ≥ k)",
         f"M = 24 h, T = 6 h, 2 spares: {reliability.spare_shortfall_probability(24 * hour, 6 * hour, 2):.1%}"))

    # 07 · compilation
    add(("07", ("one neff per distinct graph",), "One NEFF per distinct graph: every shape, branch value and "
         "host sync is another", "graphs = distinct (shape, variant)",
         f"10,000 samples in batches of 64, no drop_last: "
         f"{compilation.run_compiles(compilation.step_stream(10_000, 64, pad_to=512), compile_s=1.0).n_graphs} graphs"))
    h = compilation.length_histogram("wikipedia-bert-512")
    add(("07", ("padding to one bucket",), "One bucket for uniformly spread lengths wastes about half the compute",
         "padding = 1 − mean length / bucket",
         f"lengths 1…128: {compilation.padding_fraction(list(range(1, 129)), [128]):.1%}; Wikipedia (512): "
         f"{compilation.padding_fraction(h.n_tokens, [512], counts=h.n_sequences):.1%}"))
    add(("07", ("two buckets cut uniform padding",), "A few optimal buckets beat powers of two",
         "optimal buckets by dynamic programming",
         f"lengths 1…128, {{64, 128}}: {compilation.padding_fraction(list(range(1, 129)), [64, 128]):.1%}; Wikipedia, 4 "
         f"optimal {compilation.padding_fraction(h.n_tokens, compilation.optimal_buckets(h.n_tokens, 4, counts=h.n_sequences), counts=h.n_sequences):.1%} "
         f"vs powers of two {compilation.padding_fraction(h.n_tokens, compilation.power_of_two_buckets(512, 4), counts=h.n_sequences):.1%}"))
    keys = compilation.cache_key_changes()
    add(("07", ("the cache key",), "The compile cache key = graph + compiler flags + compiler version",
         "a change to any one is a new compile", f"{len(keys)} changes tabulated, "
         f"{int(keys.iloc[:, -1].astype(bool).sum()) if keys.shape[1] else 0} of them recompile"))
    facts = compilation.compiler_facts()
    used = facts[(facts.fact == "--auto-cast default") & (facts.status == "used")]
    before = facts[facts.fact.str.startswith("--auto-cast default before")]
    add(("07", ("--auto-cast` defaults",), "The compiler's --auto-cast default changed with the SDK",
         "neuronx-cc CLI reference", f"now `{used.value.iloc[0]}`; {before.fact.iloc[0].replace('--auto-cast default ', '')}: "
         f"`{before.value.iloc[0]}`"))
    stream = compilation.step_stream(1000, 64, pad_to=512, branch_every=100)
    add(("07", ("a trial run of 10–15 steps",), "A trial run warms the cache only for the graphs it reaches",
         "graphs in the trial ÷ graphs in the run",
         f"1,000 samples, batches of 64, a guard every 100 steps: a 12-step trial warms "
         f"{len(compilation.trial_run_keys(stream, 12))} of "
         f"{compilation.run_compiles(stream, compile_s=1.0).n_graphs} graphs"))

    # 08 · a NeuronCore and its kernels
    core = kernels.core_model("trn2")
    add(("08", ("128 partitions",), "SBUF has 128 partitions: a tile of r rows uses r/128 of the lanes",
         "lanes used = r / 128", f"{core.partitions} partitions; 32 rows use {32 / core.partitions:.0%}"))
    add(("08", ("psum: 8 banks",), "PSUM: banks of 128 × 512 FP32; one matmul instruction writes one bank",
         "banks = PSUM ÷ (partitions × 512 × 4 B)",
         f"{core.psum_bytes / (core.partitions * core.psum_tile_fmax * 4):.0f} banks per core"))
    add(("08", ("matmul instruction: stationary",), "One matmul instruction: stationary ≤ 128 × 128, moving ≤ 128 × 512",
         "cycles = max(N, minimum)", f"stationary ≤ {core.stationary_fmax} columns, moving ≤ {core.psum_tile_fmax}; "
         f"at least {core.mm_min_cycles:.0f} cycles (assumed for NeuronCore-v3)"))
    add(("08", ("output-stationary traffic",), "Output-stationary tiling re-reads A and B once per tile column or row",
         "b (m k ⌈n/tn⌉ + k n ⌈m/tm⌉) + b m n",
         f"4096³ BF16, 128 × 512 tiles: {kernels.matmul_hbm_bytes(4096, 4096, 4096, 128, 512) / GiB:.2f} GiB"))
    ridge_core = kernels.core_roofline("trn2", "bfloat16").intensity[1]
    add(("08", ("trainium2 core: ridge",), "A Trainium2 core's BF16 ridge: 512 × 512 tiles pass it, 128 × 512 do not",
         "intensity ≈ 2 / (b (1/tm + 1/tn))",
         f"ridge {ridge_core:.0f} FLOP/byte; 512 × 512 {kernels.tile_plan(8192, 8192, 8192, 512, 512).intensity_flop_per_byte:.0f}, "
         f"128 × 512 {kernels.tile_plan(8192, 8192, 8192, 128, 512).intensity_flop_per_byte:.0f}"))
    add(("08", ("1 buffer:",), "Double buffering hides the shorter stages behind the longest one",
         "1 buffer: n(L + C + S); ≥ 3: L + C + S + (n − 1)·max(L, C, S)",
         f"n = 8, L = C = S: {kernels.pipeline_time_s(8, 1, 1, 1, 1):g} vs {kernels.pipeline_time_s(8, 1, 1, 1, 3):g} time units"))
    sm = kernels.softmax(np.zeros((512, 2048)), chip="trn2")
    add(("08", ("softmax and norms",), "Softmax and norms: count passes per engine; vector and scalar bind, not FLOPs",
         "time ≈ max over engines of passes × elements ÷ rate", f"softmax of 512 × 2048 on Trn2: {sm.binding_engine}-bound"))

    # 09 · serving
    m8 = sizing.preset("llama3-8b")
    kv8 = serving.kv_cache_bytes_per_token(m8.n_layers, m8.n_kv_heads, m8.d_model // m8.n_heads)
    kv70 = serving.kv_cache_bytes_per_token(p70.n_layers, p70.n_kv_heads, p70.d_model // p70.n_heads)
    add(("09", ("kv cache per token",), "Every token in context keeps a key and a value per layer and KV head",
         "2 · L · n_kv · d_head · bytes", f"BF16: {kv8 / KiB:,.0f} KiB (Llama 3 8B), {kv70 / KiB:,.0f} KiB (70B)"))
    add(("09", ("decode at batch b does about",), "Decode at batch B does about B FLOPs per byte of weights",
         "intensity ≈ B (BF16)", f"batch 1 is {r2:,.0f}× below Trn2's ridge"))
    r70 = serving.replica("llama3-70b", "trn2", tp=8)
    add(("09", ("decode step ≈",), "A small-batch decode step reads every weight once",
         "t ≈ weight bytes ÷ HBM bandwidth", f"Llama 3 70B on 2 Trn2 chips (TP 8): "
         f"{serving.decode_step(r70, 1, 128).bound_s / ms:.0f} ms (a bound; expected "
         f"{serving.decode_step(r70, 1, 128).time_s / ms:.0f} ms with the TP all-reduces)"))
    add(("09", ("attention in decode",), "Decode reads every weight once per step: its weight matmuls "
         "stay bandwidth-bound until the batch nears the ridge point; attention (about a/g FLOP/byte, the GQA "
         "group) stays bandwidth-bound at any batch", "batch* ≈ ridge · b_w / 2 (b_w bytes per weight)",
         f"Trn2: batch ≈ {serving.decode_compute_bound_batch(r70, 128):,.0f} at 128 tokens; never past "
         f"{serving.kv_bound_context_len(r70):,.0f} tokens (Llama 3 70B)"))
    r8 = serving.replica("llama3-8b", "trn2", tp=4)
    add(("09", ("per-chip throughput grows",), "Throughput per chip grows with the batch until KV reads dominate; "
         "HBM caps the batch", "tokens/s = batch ÷ step",
         f"Llama 3 8B, TP 4, 2,048 tokens: batch 8 {serving.decode_step(r8, 8, 2048).tokens_per_s_per_chip:,.0f}, "
         f"batch 32 {serving.decode_step(r8, 32, 2048).tokens_per_s_per_chip:,.0f} tokens/s per chip (expected)"))
    cap = serving.capacity(r8, 4096)
    add(("09", ("per logical core: weights + neffs",), "What fits per logical core: weights, NEFFs, runtime and KV "
         "blocks within vLLM's memory utilization, KV within vLLM Neuron's cap", "KV ≤ cap × budget",
         f"Llama 3 8B, TP 4, 4,096 tokens: KV budget {cap.kv_budget_bytes / GiB:.1f} GiB, {cap.max_sequences} sequences"))
    add(("09", ("ranks = tp × pp = logical cores",), "A launch's ranks are TP × PP logical cores",
         "chips = ranks ÷ logical cores per chip", f"TP 16 × PP 4 at LNC=1: "
         f"{16 * 4 // cores.logical_cores_per_chip('trn2', 1)} chips"))
    add(("09", ("speculative decoding:",), "Speculative decoding's k drafted tokens yield (1 − α^(k+1)) / (1 − α) per "
         "target pass", "Leviathan et al. 2023, eq. 1", f"α = 0.8, k = 5: {serving.expected_tokens_per_pass(0.8, 5):.2f} tokens"))
    gens = {batch: serving.chip_decode_table("llama3-70b", 16, batch, 2048).set_index("name").bound_ms
            for batch in (1, 64)}
    add(("09", ("trainium3's decode",), "Trainium3's decode bound beats Trainium2's by a little less than its HBM "
         "bandwidth ratio (the all-reduces' hop latency does not scale); the expected step gains less where the "
         "TP all-reduces' fixed cost dominates",
         "below the ratio of HBM bandwidths", f"HBM ×{t3.hbm_bytes_per_s / t2.hbm_bytes_per_s:.2f}; Llama 3 70B on 16 "
         "chips, the bound " + " to ".join(f"×{g['Trainium2'] / g['Trainium3']:.2f} (batch {b})"
                                           for b, g in gens.items())))

    # 10 · mixture of experts
    mix, qwen = moe.parameter_table("mixtral-8x7b"), moe.parameter_table("qwen3-235b-a22b")
    add(("10", ("memory follows **total**",), "In a mixture of experts, memory follows the total parameters and "
         "compute the active ones", "active = shared + k/E · experts",
         f"Mixtral {mix['params'].sum() / 1e9:.1f}B / {mix['active_params'].sum() / 1e9:.1f}B; Qwen3 "
         f"{qwen['params'].sum() / 1e9:.0f}B / {qwen['active_params'].sum() / 1e9:.0f}B"))
    add(("10", ("all-to-all dispatch",), "A dispatch sends T · k · h · 2 B per chip; four all-to-alls per MoE "
         "layer per step", "T · k · h · 2 B", f"Mixtral, 8,192 tokens: {moe.dispatch_bytes(8192, 4096, experts_per_token=2) / MiB:.0f} MiB"))
    add(("10", ("ring all-to-all",), "A ring all-to-all is n/2 times slower than a switch at equal bandwidth",
         "ring (n−1)/2 · S/B; switch (n−1)/n · S/B",
         f"n = 16: ring/switch = {collectives.ring_all_to_all_s(1.0, 16, 1.0) / collectives.direct_all_to_all_s(1.0, 16, 1.0):.0f}"))
    add(("10", ("capacity $\\lceil",), "Expert capacity and the tokens a balanced router drops",
         "capacity ⌈c·T·k/E⌉", f"4,096 tokens, top-8 of 128: {moe.expected_dropped_fraction(4096, 128, 8, 1.0):.1%} "
         f"at c = 1, {moe.expected_dropped_fraction(4096, 128, 8, 1.25):.1e} (a fraction) at 1.25"))
    add(("10", ("interleaving:",), "Interleaving v virtual stages per rank divides the bubble by v",
         "bubble = (p − 1) / (v · m) (Narayanan et al. 2021)",
         f"p = 8, m = 16, v = 2: {layouts.pipeline_bubble_fraction(8, 16, virtual_stages=2):.1%}"))  # chapter 10's case
    add(("10", ("job mtbf ∝ 1/chips",), "Job MTBF falls as 1/chips: at Rainier scale it is under an hour",
         "MTBF_part / N", f"65,536 chips, Llama 3 proxy: {reliability.job_mtbf_s(s.per_gpu_mtbf_s, 65_536) / minute:.0f} min"))

    # 11 · capstone
    par = planning.parity_usd_per_hour("trn2.48xlarge")
    q8 = planning.plan_run("llama3-8b", 100e9, n_systems=1, usd_per_hour=par)   # the calibrated MFU
    m8_mfu = q8.inputs["mfu"]
    add(("11", ("cost = instance-hours × price",), "Cost = instance-hours × price; per million tokens = price per "
         "instance-hour ÷ tokens per instance-hour × 10⁶", "cost = hours × USD/h",
         f"Llama 3 8B, 100B tokens, one trn2.48xlarge at the parity placeholder: {q8.cost_usd:,.0f} USD, "
         f"{q8.results['cost_per_million_tokens_usd']:.3f} USD per million tokens"))
    add(("11", ("cost ∝ price / mfu",), "Cost ∝ price ÷ MFU", "d cost / cost = −d MFU / MFU",
         f"one point of the calibrated MFU ({m8_mfu:.1%}): {0.01 / m8_mfu:.1%} of the bill"))
    trn1 = planning.price("trn1.32xlarge")
    add(("11", ("matches p5's on-demand price",), "Parity price: the trn2.48xlarge price that matches a reference "
         "instance's price per peak BF16 FLOP/s", "P_ref × peak_trn2 ÷ peak_ref",
         f"against p5.48xlarge: {par:.2f} USD/h; Trn1's on-demand {trn1.usd_per_hour:.2f} USD/h against its own "
         f"parity {planning.parity_usd_per_hour('trn1.32xlarge'):.2f}"))
    floor_h = sizing.instance_days(sizing.training_flops(8e9, 100e9), m8_mfu) * 24   # the same MFU as the plan
    add(("11", ("instance-days are a floor",), "Chapter 04's instance-days are a floor: attention FLOPs and "
         "communication add to them", "plan ÷ 6ND floor",
         f"Llama 3 8B at {m8.seq_len:,} tokens: +{q8.results['instance_hours'] / floor_h - 1:.0%}"))
    # chapter 11's own plan: one definition (planning.CAPSTONE_405B_RUN), the bandwidth printed from it
    p405 = planning.capstone_405b_plan()
    add(("11", ("at thousands of chips",), "At thousands of chips the job MTBF is under a day and failures and checkpoints "
         "take a large share", "lost = checkpoints + rework + restarts",
         f"{p405.n_chips:,} chips: job MTBF {p405.results['job_mtbf_s'] / hour:.1f} h, "
         f"{p405.results['lost_fraction']:.1%} lost at "
         f"{p405.inputs['checkpoint_write_bytes_per_s'] / GB:,.0f} GB/s"))
    limit = planning.default_storage_bytes_per_s()
    per_chip = planning.default_checkpoint_bytes_per_s_per_chip()
    add(("11", ("the largest fsx hyperpod creates",), "Checkpoints write at every chip's share up to the storage's "
         "limit; by default chapter 06's, the largest FSx HyperPod creates at the top tier",
         "min(chips × per-chip share, FSx GiB ÷ 1,000 × MB/s per TiB)",
         f"{limit / GB:.1f} GB/s, reached from {-(-limit // per_chip):,.0f} chips at {per_chip / 1e6:.0f} MB/s each"))
    claim = planning.check_price_claim("trn2-price-performance", mfu_subject=0.45, mfu_baseline=0.45)
    add(("11", ("30–40 % better price-performance",), "AWS's 30–40 % better price-performance = a price 1/1.3–1/1.4 "
         "of parity at equal MFU", "parity ÷ 1.3 … parity ÷ 1.4",
         f"against p5en: {claim.max_usd_per_hour_low:.2f}–{claim.max_usd_per_hour_high:.2f} USD/h"))
    fleet = planning.plan_serving("llama3-8b", 50_000, tpot_s_max=0.03, ttft_s_max=0.5, usd_per_hour=par)
    add(("11", ("serving cost per million tokens",), "Serving cost per million tokens is paid for the target load",
         "instances × price ÷ (target tokens/s × 3,600) × 10⁶",
         f"Llama 3 8B at 50,000 tokens/s: {fleet.n_instances} instance(s), {fleet.cost_per_million_tokens_usd:.3f} USD "
         "per million"))
    out.extend(_reality_rows())
    out.extend(_rows_added_this_round())
    return out


def _rows_added_this_round() -> list[tuple[str, tuple[str, ...], str, str, str]]:
    """Rows the chapters' boxes gained from issues 24, 27 and 28 (measured, kernels, serving, experts)."""
    import math

    from trainium_lab import collectives, kernels, moe, reality, sizing
    from trainium_lab.units import GB, GiB, MiB

    m = reality.measurements().query("set == 'trn1_training'")
    mfus = [sizing.mfu_from_throughput(r.value * r.seq_len, sizing.preset(r.model).exact_params(), int(r.chips), "trn1")
            for _, r in m.iterrows()]
    ladder = kernels.matmul_ladder(4096, 4096, 4096)
    p70 = sizing.preset("llama3-70b")
    size = moe.dispatch_bytes(8192, 4096, experts_per_token=2)
    t2, t3 = moe.all_to_all_s(size, 32, "trn2-ultraserver"), moe.all_to_all_s(size, 32, "trn3-gen1-ultraserver")
    rule = "(a rule: no number)"
    first_run = collectives.nccom_test_cases().iloc[0]   # chapter 03's example
    return [
        ("03", ('a nccom-test "gb/s"',), "Check a nccom-test 'GB/s' as size ÷ time: older runs print GiB/s, newer "
         "decimal GB/s", "algbw = size ÷ time",
         f"{first_run.size_bytes:,} B on {first_run.n_ranks} ranks in {first_run.time_us} µs: "
         f"{collectives.algbw_bytes_per_s(first_run.size_bytes, first_run.time_us * 1e-6) / GB:.2f} GB/s = "
         f"{collectives.algbw_bytes_per_s(first_run.size_bytes, first_run.time_us * 1e-6) / GiB:.2f} GiB/s, "
         f"printed as {first_run.printed_algbw} \"GB/s\""),
        ("04", ("mfu real runs reach",), "The MFU published Trainium runs reach, counting 6N", "tokens/s × 6N ÷ (chips × peak)",
         f"AWS's Trn1 runs: {mfus[0]:.1%} (8B) and {mfus[1]:.1%} (70B)"),
        ("07", ("on neuron: `jnp.where`",), "On Neuron keep control flow static: select instead of branch, static loop "
         "bounds, fixed-size masks", "no lax.cond, no dynamic while_loop, no dynamic=True", rule),
        ("07", ("`using a cached neff`",), "Read the compile log: 'Using a cached neff' is a hit, 'No candidate found' a "
         "miss and a compile", "Neuron Persistent Cache page", rule),
        ("07", ("buckets pay off when",), "Buckets pay off when the padding they save outweighs their compiles",
         "padding saved × epochs ÷ throughput > minutes per NEFF × cold starts", rule),
        ("08", ("dma: 16 engines",), "DMA: a core's engines and what each moves", "engines × bytes/s per engine",
         "; ".join(f"{k}: {kernels.core_model(k).dma_engines} × {kernels.core_model(k).dma_engine_bytes_per_s / GB:.0f} GB/s"
                   for k in ("trn1", "trn2", "trn3"))),
        ("08", ("4096³ bf16 ladder",), "The NKI matmul tutorial's ladder: each rung re-reads less",
         "HBM bytes and intensity per rung", " → ".join(f"{b / MiB:,.0f} MiB" for b in ladder.hbm_bytes)
         + "; " + " → ".join(f"{i:,.0f}" for i in ladder.intensity_flop_per_byte) + " FLOP/byte"),
        ("08", ("lnc = 2: `kernel[2]",), "At LNC = 2 launch the kernel on both physical cores", "`kernel[2](...)` and "
         "`nl.program_id(0)`", rule),
        ("09", ("kv sharded by sequence",), "Shard the KV cache instead of replicating it once TP exceeds the KV heads",
         "TP / n_kv × the sequences", f"Llama 3 70B at TP 64: {64 // p70.n_kv_heads}× the sequences"),
        ("09", ("neff memory = **largest scratchpad",), "NEFF memory is the largest scratchpad plus every NEFF's code and "
         "constants", "max(scratchpad) + Σ (code + constants)", rule),
        ("09", ("prefix caching speed-up",), "Prefix caching speeds prefill up by at most 1/(1 − hit rate)",
         "speed-up ≤ 1 / (1 − h)", f"h = 90 %: at most {1 / (1 - 0.9):.0f}×"),
        ("09", ("prefill servers per decode server",), "Disaggregated serving: prefill servers per decode server",
         "B · t_prefill / (n_out · t_step)", rule),
        ("10", ("trn2 against trn3 all-to-all",), "Trainium2 against Trainium3 for an all-to-all depends on the fabric "
         "reading", "ratio of all-to-all times", f"128 MiB over 32 chips, the course's readings: ×{t2 / t3:.0f}"),
        ("10", ("dropless on neuron",), "Dropless routing on static shapes: blocks per expert group",
         "⌈T·k/B⌉ + (E − 1) blocks", f"1,000 tokens, 8 experts, top-2, B = 256: {math.ceil(1000 * 2 / 256) + 8 - 1} blocks"),
        ("10", ("experts under **128 columns",), "Experts under 128 columns per rank leave the tensor engine idle",
         "columns per rank ÷ 128", f"1,536 over 16 ranks: {1536 // 16} columns, {1536 / 16 / 128:.0%}"),
    ]


def _reality_rows() -> list[tuple[str, tuple[str, ...], str, str, str]]:
    """Issue 24: the fraction of each bound real runs reach (AWS's published measurements)."""
    from trainium_lab import components, reality, sizing, specs

    c = reality.compare().set_index("measurement_id")
    tpot = [c.loc[k, "bound_over_measured"] for k in ("nxdi-llama33-70b-tpot", "nxdi-llama31-405b-tpot")]
    m = reality.measurements().query("set == 'trn1_training'")
    mfus = [sizing.mfu_from_throughput(r.value * r.seq_len, sizing.preset(r.model).exact_params(), int(r.chips), "trn1")
            for _, r in m.iterrows()]
    pm = specs.calibration("planner_mfu")
    per_ar = reality.parameter("collective_fixed_s")
    s = reality.summary().set_index("set").loc["all"]
    return [
        ("09", COVERS_REALITY["tp_ar"], "A real decode step pays a fixed cost per TP all-reduce (two per layer) "
         "that more chips do not remove",
         "TPOT ≈ KV/HBM + max(2N·B/peak, W/HBM) + 2L · t_AR (scaling-book's general step)",
         f"t_AR ≈ {per_ar * 1e6:.0f} µs fitted; Trn2 at TP 64 reaches {tpot[0]:.0%} (70B) and {tpot[1]:.0%} (405B) "
         "of the bound's speed"),
        ("09", COVERS_REALITY["prefill"], "Prefill reaches about a third of peak on Trn2 (the NxD Inference "
         f"tutorials; NxD Inference is in {components.status_label('nxd-inference')})",
         "TTFT ≈ FLOPs / (peak · η)", f"η ≈ {reality.parameter('prefill_efficiency'):.0%}"),
        ("05", COVERS_REALITY["mfu"], "Plan at the calibrated planner MFU and carry its range: the MFU at which "
         "the layout model's tokens/s match AWS's Trn1 runs", "planner MFU: fitted, step model ÷ measured tokens/s = 1",
         f"planner default {pm.value:.1%} ({pm.low:.1%} to {pm.high:.1%} over the single runs)"),
        ("03", COVERS_REALITY["collective"], "A collective pays a latency floor and reaches a fraction of the link "
         "figure; check a nccom-test 'GB/s' as size ÷ time", "t ≈ t0 + steps · α + bytes / (η · B)",
         f"Trn1 (NCCOM-TEST guide): tool launch ≈ {reality.parameter('nccom_launch_s') * 1e6:.0f} µs, "
         f"AWS's α ≈ {reality.parameter('hop_latency_s') * 1e6:.0f} µs per hop "
         f"({reality.parameter('efa_hop_latency_s') * 1e6:.0f} µs over EFA), bytes at "
         f"{reality.parameter('nccom_dma_efficiency'):.0%} of each rank's HBM share"),
        ("11", COVERS_REALITY["summary"], "How close the course's expectations come to every stored measurement",
         "median and largest abs(expected ÷ measured − 1); bounds never beaten",
         _summary_figures(s)),
    ]


#: columns of ``reality.summary()`` that hold out-of-sample (leave-one-set-out) errors, if it has
#: them: the cheat sheet then quotes those, labelled as such (STYLE: quote the out-of-sample figure)
OUT_OF_SAMPLE_COLUMNS = ("median_out_of_sample_error", "max_out_of_sample_error")


def _summary_figures(s) -> str:
    """The calibration summary's figures for the cheat sheet, each labelled: out of sample (each
    model, row or position left out of the fit) when ``reality.summary()`` gives it, the whole set
    left out when it gives that too, and the fit (in sample)."""
    fit = f"median {s.median_abs_error:.1%}, largest {s.max_abs_error:.1%}"
    if not all(c in s.index for c in OUT_OF_SAMPLE_COLUMNS):
        return f"{s.n_rows:.0f} rows: {fit} (in sample)"
    text = (f"{s.n_rows:.0f} rows: out of sample median {s[OUT_OF_SAMPLE_COLUMNS[0]]:.1%}, largest "
            f"{s[OUT_OF_SAMPLE_COLUMNS[1]]:.1%}")
    if "median_without_set_error" in s.index:
        text += (f"; whole set left out median {s.median_without_set_error:.1%}, largest "
                 f"{s.max_without_set_error:.1%}")
    return text + f" (fit: {fit})"


#: which Numbers-to-remember rows issue 24's rows stand for (empty: a row no box lists)
COVERS_REALITY = {"tp_ar": ("real decode ≈ bound",), "prefill": (), "mfu": ("the planner's tokens/s against aws",),
                  "collective": ("real collectives (nccom-test",), "summary": ("real runs against the bounds",)}


def coverage() -> list[str]:
    """Problems: a chapter's Numbers-to-remember row no cheat-sheet row covers, or covered twice."""
    table = rows()
    problems = []
    for ch, stem in CHAPTERS.items():
        mine = [r for r in table if r[0] == ch]
        for text in numbers_to_remember(stem):
            hits = [r for r in mine if any(key in _norm(text) for key in r[1])]
            if len(hits) != 1:
                problems.append(f"chapter {ch}'s Numbers-to-remember row {text[:70]!r} matches {len(hits)} "
                                "cheat-sheet rows: add (or fix the `covers` of) a row in tools/cheatsheet.py")
        for r in mine:
            for key in r[1]:
                if not any(key in _norm(t) for t in numbers_to_remember(stem)):
                    problems.append(f"cheat-sheet row {r[2][:50]!r} covers {key!r}, which no row of chapter {ch} has")
    return problems


def render() -> str:
    problems = coverage()
    if problems:
        raise SystemExit("the cheat sheet does not cover every Numbers-to-remember row:\n  " + "\n  ".join(problems))
    lines = ["# Trainium Lab cheat sheet", "",
             "Every chapter's Numbers to remember, one row per rule, with the chapter that derives it. Each "
             "number is computed by `trainium_lab` from the sourced data: this page is generated by "
             "`tools/cheatsheet.py`, and a test fails when it is out of date or when a chapter's "
             "Numbers-to-remember box has a row this page does not cover.", ""]
    table = rows()
    for ch, stem in CHAPTERS.items():
        mine = [r for r in table if r[0] == ch]
        if not mine:
            continue
        lines += [f"## {_chapter(stem)} · {stem[3:].replace('_', ' ')}", "",
                  "| Rule | Formula | Numbers |", "|---|---|---|"]
        lines += [f"| {rule} | {formula} | {value} |" for _, _, rule, formula, value in mine]
        lines.append("")
    return "\n".join(lines)


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
