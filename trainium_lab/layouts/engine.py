"""The vectorised engine behind :func:`~trainium_lab.layouts.evaluate` and
:func:`~trainium_lab.layouts.plan`: every formula of chapter 05 on numpy arrays (one element
per layout), and the communication coefficients of chapter 03 in closed form.

Private to the package: :mod:`trainium_lab.layouts.estimate` calls it for one layout,
:mod:`trainium_lab.layouts.planner` for thousands at once, so both give the same numbers.

References
----------
See :mod:`trainium_lab.layouts` (Shoeybi et al. 2019; Narayanan et al. 2021; Korthikanti et
al. 2022; Rajbhandari et al. 2020; Lepikhin et al. 2020) and each formula's comment.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from trainium_lab import collectives, moe, specs, topology
from trainium_lab.sizing import (RECOMPUTE_MODES, ModelPreset, _activation_per_layer_array,
                                 activation_coefficients, activation_options, recipe)

__all__: list[str] = []   # nothing public: the estimate and the planner are the interface

_RECOMPUTE_INDEX = {m: i for i, m in enumerate(RECOMPUTE_MODES)}


# --------------------------------------------------------------------- communication coefficients


@dataclass(frozen=True)
class _Comm:
    """Affine costs ``a + b·size`` from chapter 03, for one (cluster, tp, pp, dp, ep).

    ``ep_a2a`` is per byte a rank sends (all the chip's ranks send at once); ``ep_gather``
    the hierarchical all-gather of the EP group (NxD's dispatch), per byte a rank
    contributes; the ``ep_ag``/``ep_rs`` pieces are for the dense gradients' reduction
    inside the EP group.
    """

    levels: dict[str, str]
    tp_ar: tuple[float, float]
    dp_ar: tuple[float, float]
    dp_ag: tuple[float, float]
    dp_rs: tuple[float, float]
    pp_bytes_per_s: float | None
    pp_latency_s: float
    ep_level: str = "none"
    ep_chips: int = 1
    ep_a2a: tuple[float, float] = (0.0, 0.0)
    ep_gather: tuple[float, float] = (0.0, 0.0)
    ep_ag: tuple[float, float] = (0.0, 0.0)
    ep_rs: tuple[float, float] = (0.0, 0.0)


#: how a group inside one instance's 2D torus is charged (the ``torus=`` option of evaluate / plan):
#: "per-device" the chip's whole published figure for any group (the course's default);
#: "own-links" only the links joining the group's chips (collectives.torus_group_bytes_per_s),
#: and an all-to-all over shortest torus paths (collectives.torus_average_hops)
TORUS_LINK_MODELS = ("per-device", "own-links")


_torus_level = moe._torus_level


def _a2a_group(c: topology.Cluster, shape: tuple[int, int, int], size: float, torus: str) -> float:
    """moe's hierarchical all-to-all; with ``torus="own-links"`` the phase inside a 2D torus
    instance is ``(n−1)/n · h̄ · S/B`` over the group's own links (collectives.torus_average_hops)."""
    if torus == "per-device":
        return moe._a2a_group(c, shape, size)
    return moe._a2a_group(c, shape, size, phase=moe._own_links_phase(c))


def _ag_group(c: topology.Cluster, shape: tuple[int, int, int], size: float, torus: str) -> float:
    """moe's hierarchical all-gather; with ``torus="own-links"`` the phase inside a 2D torus
    instance gets only the group's own links (collectives.torus_group_bytes_per_s)."""
    if torus == "per-device":
        return moe._ag_group(c, shape, size)

    def phase(level: topology.Level, n: int, gathered: float) -> float:
        if _torus_level(c, level):
            level = replace(level, bytes_per_s=collectives.torus_group_bytes_per_s(n, c.system))
        return collectives._level_cost(level, n, 1, gathered, "all_gather", None)

    return moe._ag_group(c, shape, size, phase=phase)


#: the message size at which a spanning group's algorithm is chosen (collectives.neuron_collective)
_LARGE_BYTES = 1e9

#: rank orderings (innermost first): EP right after TP, so it lands in the fastest domain holding tp·ep
_ORDER = topology.parse_ordering("tp-pp-dp")
_ORDER_EP = topology.parse_ordering("tp-ep-pp-dp")


@functools.lru_cache(maxsize=65536)
def _comm(system: str | specs.System, n_systems: int, lnc: int, tp: int, pp: int, dp: int, ep: int = 1,
          torus: str = "per-device") -> _Comm:
    c = topology.cluster(system, n_systems, lnc)
    order = _ORDER if ep == 1 else _ORDER_EP
    degrees = {"tp": tp, "pp": pp, "dp": dp, "ep": ep}
    # the same levels, chip counts and sharing as topology.place(...).slowest(kind), in closed form
    spans = topology._spans(c.system_spec, c.n_systems, c.lnc, tuple(degrees[k] for k in order), order)

    def slowest(kind: str):
        index, n_chips, _, _, sharing = spans[kind]
        return c.level(topology.LEVEL_NAMES[index]), n_chips, sharing

    def affine(kind: str, coll: str) -> tuple[float, float]:
        index, n_chips, _, n_sys, sh = spans[kind]
        if index == 3 and n_sys > 1:
            # A group spanning systems runs instance first (hierarchical), as chapter 03's one
            # collective model has it, launch and step latencies included; gradient collectives are
            # large messages, so the algorithm is the one the runtime runs at 1 GB.
            r = -(-degrees[kind] // n_sys)
            cost = collectives.neuron_collective(coll, _LARGE_BYTES, n_ranks=r * n_sys, system=c.system_spec,
                                                 n_systems=n_sys, sharing=sh, lnc=c.lnc,
                                                 chips_per_system=-(-n_chips // n_sys))
            return cost.latency_s, cost.per_byte_s
        # collectives.level_collective_s's arithmetic, without re-validating known-good arguments
        lv, n, sh = slowest(kind)
        if torus == "own-links" and n > 1 and _torus_level(c, lv):
            lv = replace(lv, bytes_per_s=collectives.torus_group_bytes_per_s(n, c.system))
        a = collectives._level_cost(lv, n, sh, 0.0, coll, None)
        ref = 1e9  # a large reference size keeps the slope exact to ~1e-15
        return a, (collectives._level_cost(lv, n, sh, ref, coll, None) - a) / ref

    lv_pp, n_pp, _ = slowest("pp")
    pp_bw = None if (lv_pp.bytes_per_s is None or n_pp == 1) else lv_pp.bytes_per_s
    levels = {k: (slowest(k)[0].name if degrees[k] > 1 else "none") for k in ("tp", "pp", "dp")}
    extra = {}
    if ep > 1:
        lv_ep, n_ep, _ = slowest("ep")
        _, _, n_inst, n_sys, _ = spans["ep"]
        # the EP group's shape (chips per instance, instances per system, systems) for the
        # hierarchical all-to-all; every rank of a chip dispatches its own tokens at once
        shape = (-(-n_ep // n_inst), -(-n_inst // n_sys), n_sys)
        a = _a2a_group(c, shape, 0.0, torus)
        b = (_a2a_group(c, shape, 1e9 * c.ranks_per_chip, torus) - a) / 1e9
        ga = _ag_group(c, shape, 0.0, torus)
        gb = (_ag_group(c, shape, 1e9 * c.ranks_per_chip, torus) - ga) / 1e9
        extra = dict(ep_level=lv_ep.name, ep_chips=n_ep, ep_a2a=(a, b), ep_gather=(ga, gb),
                     ep_ag=affine("ep", "all_gather"),
                     ep_rs=affine("ep", "reduce_scatter"))
    return _Comm(levels=levels, tp_ar=affine("tp", "all_reduce"), dp_ar=affine("dp", "all_reduce"),
                 dp_ag=affine("dp", "all_gather"), dp_rs=affine("dp", "reduce_scatter"),
                 pp_bytes_per_s=pp_bw, pp_latency_s=(lv_pp.latency_s or 0.0) if pp_bw else 0.0, **extra)


# --------------------------------------------------------------------- the vectorised core


def _core(m: ModelPreset, c: topology.Cluster, seq_len: int, recipe_name: str, dtype: str,
          sequence_parallel: bool, mfu: float, dp_overlap: float, tp_overlap: float,
          grad_bytes_per_param: float | None,
          tp: np.ndarray, pp: np.ndarray, dp: np.ndarray, zero: np.ndarray, mb: np.ndarray,
          nmb: np.ndarray, mode: np.ndarray, comm: list[_Comm], comm_idx: np.ndarray, *,
          ep: np.ndarray | None = None, v: np.ndarray | None = None,
          capacity_factor: float = 1.0, attention: str = "causal", etp: np.ndarray | None = None,
          ep_dispatch: str = "all-gather", narrow_expert_penalty: bool = True,
          dropless_block_size: int | None = None, gather_overlap: float = 1.0,
          reduce_overlap: float = 1.0) -> dict[str, np.ndarray]:
    """Every formula of the chapter, on arrays (one element per layout).

    ``gather_overlap`` and ``reduce_overlap`` are the shares of the weight all-gathers and of the
    gradient reductions that the framework's schedule places behind compute
    (:class:`trainium_lab.frameworks.OverlapSchedule`); the rest is exposed, and what is placed
    hides up to ``dp_overlap`` of the window. Both 1 (the default) is the teaching schedule.

    ``ep`` (expert parallelism, MoE models) and ``v`` (interleaved virtual stages) default
    to 1 everywhere; a dense model with ``ep = v = 1`` gives exactly the chapter-05 numbers.
    ``etp`` (expert tensor parallelism, Megatron-Core's ETP, NxD's ``moe_tp_degree``) is the
    TP degree of the experts alone, dividing ``tp`` (default: ``tp``); the ``tp/etp`` ranks
    of a TP group that share an expert shard hold copies of it and split the tokens.
    ``ep_dispatch`` picks the EP exchange (:data:`trainium_lab.moe.EP_DISPATCH_METHODS`);
    ``narrow_expert_penalty`` charges expert matmuls whose per-rank width is not a whole
    number of tensor-engine columns (:func:`expert_matmul_efficiency`). ``dropless_block_size``
    costs dropless MoE through NxD's blockwise matmul instead of a capacity factor: each rank's
    experts compute ``N·B`` slots for their ``mb·s·k/tp`` expected assignments, with
    ``N = ⌈mb·s·k/(tp·B)⌉ + E/ep − 1`` (:func:`trainium_lab.moe.blockwise_blocks` per rank).

    Time is costed on the busiest pipeline stage: a pipeline runs at the pace of its slowest
    stage (Narayanan et al. 2021, §2.2), and when ``pp`` does not divide the ``L`` layers
    some stage holds ``⌈L/pp⌉`` of them. So a stage's compute and recompute are the share
    ``⌈L/pp⌉/L`` of the model's FLOPs (not ``1/pp``), its TP all-reduces come from
    ``⌈L/pp⌉`` layers, and its MoE all-to-alls from ``⌈(L − L_dense)/pp⌉`` MoE layers: the
    MoE layers are taken as split as evenly as they can be, the ``L_dense`` leading dense
    layers (DeepSeek-style) filling the lighter stages' places (every MoE preset in
    ``data/model_presets.csv`` has ``L_dense = 0``, where the two rules agree). ``model_flops_step``
    stays the model's true FLOPs, so ``mfu_effective`` falls for uneven stages. Megatron-LM
    requires ``L`` divisible by ``pp`` unless the first/last stages' layers are given
    (``--decoder-first-pipeline-num-layers``, ``--decoder-last-pipeline-num-layers``, in
    Megatron-Core's ``get_num_layers_to_build``); this is the cost of the best split of
    the other layouts. Interleaved (``v > 1``): :func:`~trainium_lab.layouts.layout`
    only asks ``pp·v <= L`` (every chunk holds a layer), so the ``p·v`` chunks hold
    ``⌊L/(p·v)⌋`` or ``⌈L/(p·v)⌉`` layers; dealing the larger chunks round the stages, the
    busiest stage holds ``v·⌊L/(p·v)⌋ + ⌈r/p⌉ = ⌈L/p⌉`` layers (``r = L mod p·v``), the
    same rule. When ``pp`` divides ``L`` every number is bit-identical to the even split.
    """
    r = recipe(recipe_name, grad_bytes_per_param)
    chip = c.chip_spec
    rpc = c.ranks_per_chip
    n_params = float(m.n_params)
    L, h, s = m.n_layers, float(m.d_model), float(seq_len)
    tpf, ppf, dpf = tp.astype(float), pp.astype(float), dp.astype(float)
    mbf, mf = mb.astype(float), nmb.astype(float)
    epf = np.ones_like(tpf) if ep is None else ep.astype(float)
    etpf = tpf if etp is None else etp.astype(float)
    vf = np.ones_like(tpf) if v is None else v.astype(float)
    # dense: (n_params, 0, n_params, 0); MoE: experts split from the rest, active < total
    non_expert, routed, n_active, routed_active = moe._split(m)

    # ---- memory per rank, then per chip (rank memory × ranks per chip)
    weights, grads, optim, per_dense, per_expert = moe._state_per_rank(non_expert, routed, tpf, ppf, dpf,
                                                                       epf, zero, r, etp=etpf)
    layers_stage = np.ceil(L / ppf)  # the first (and busiest) stage's layers
    in_flight = np.minimum(ppf, mf)  # 1F1B: stage 1 stashes up to p micro-batches
    # one activation model for the package (sizing): the preset's Llama-style layer, with an
    # MoE layer's MLP as wide as the experts a token visits (moe.activation_ffn_dim)
    act_model = moe._activation_model(m, capacity_factor)
    coeffs = activation_coefficients(act_model.n_heads, act_model.d_model, **activation_options(act_model))
    act_layer = _activation_per_layer_array(seq_len, mbf, m.d_model, m.n_heads, tp, sequence_parallel,
                                            mode, coeffs)
    # interleaving keeps more micro-batches in flight (Korthikanti et al. §4.2.3)
    acts = in_flight * layers_stage * act_layer * np.where(vf > 1, 1.0 + (ppf - 1.0) / (ppf * vf), 1.0)
    # full recompute rebuilds one layer's whole activations during its backward pass
    peak_extra = np.where(mode == 2, _activation_per_layer_array(seq_len, mbf, m.d_model, m.n_heads, tp,
                                                                 sequence_parallel, np.zeros_like(mode),
                                                                 coeffs), 0.0)
    acts = acts + peak_extra
    hbm = float(chip.hbm_bytes)
    out = {"weights": weights * rpc, "gradients": grads * rpc, "optimizer": optim * rpc,
           "activations": acts * rpc}
    out["state"] = out["weights"] + out["gradients"] + out["optimizer"]
    out["memory"] = out["state"] + out["activations"]
    out["headroom"] = hbm - out["memory"]

    # ---- compute: FLOPs per micro-batch per stage, at `mfu` of the chips' peak
    tokens_mb = mbf * s
    # attention scores per token: 6·L·s·h counting only the causal half of the score matrix
    # (Megatron-LM's num_floating_point_operations today), 12·L·s·h counting all of it
    # (Narayanan et al. 2021's and Korthikanti et al. 2022's model FLOPs); sizing.training_flops
    attn = (6.0 if attention == "causal" else 12.0) * L * s * h
    model_flops_mb = (6.0 * n_active + attn) * tokens_mb
    # padded expert slots (capacity factor) are computed too, but are not model FLOPs
    if m.is_moe and dropless_block_size:
        # blockwise matmul: the rank's E/ep experts get mb·s·k/tp assignments on average
        bs = float(dropless_block_size)
        assigned = mbf * s * m.experts_per_token / tpf
        blocks = np.ceil(assigned / bs - 1e-9) + m.n_experts / epf - 1.0
        compute_factor = blocks * bs / assigned
    else:
        compute_factor = capacity_factor * np.ones_like(tpf)
    padding_mb = 6.0 * (compute_factor - 1.0) * routed_active * tokens_mb
    recompute_flops_mb = np.choose(mode, [0.0 * tokens_mb, attn / 3.0 * tokens_mb,
                                          (2.0 * n_active + attn / 3.0) * tokens_mb])
    chips_per_stage_replica = c.n_chips / (ppf * dpf * epf)
    rate = chips_per_stage_replica * chip.dense_flops_per_s[dtype] * mfu
    # the busiest stage holds ⌈L/p⌉ layers (also with v > 1: see the docstring), the share
    # ⌈L/p⌉/L of the FLOPs; written as (1/p)·busiest so that it is exactly 1/p when p | L
    busiest = layers_stage * ppf / L  # 1.0 exactly when p divides L
    # expert matmuls narrower than the tensor engine run at a share of its peak: their FLOPs
    # (6·N_routed_active per token, padded by c; 2 more with full recompute) cost 1/eff times
    if m.is_moe and narrow_expert_penalty:
        eff = expert_matmul_efficiency(m.expert_ffn_dim, etpf, chip.core.tensor_cols)
    else:
        eff = np.ones_like(tpf)
    narrow_mb = (1.0 / eff - 1.0) * routed_active * compute_factor * tokens_mb
    out["expert_compute_factor"] = compute_factor
    fwd = ((model_flops_mb + padding_mb) / 3.0 + 2.0 * narrow_mb) / ppf / rate * busiest
    bwd = ((model_flops_mb + padding_mb) * 2.0 / 3.0 + 4.0 * narrow_mb + recompute_flops_mb
           + np.where(mode == 2, 2.0, 0.0) * narrow_mb) / ppf / rate * busiest
    out["expert_matmul_efficiency"] = eff * np.ones_like(tpf)

    # ---- per-layout communication coefficients (from chapter 03)
    def coef(name: str, i: int) -> np.ndarray:
        return np.array([getattr(x, name)[i] for x in comm])[comm_idx]

    # TP: 2 all-reduces forward, 2 backward (+2 with full recompute) per layer, of mb·s·h·2 bytes
    tp_bytes = 2.0 * mbf * s * h  # BF16 activations
    t_ar = coef("tp_ar", 0) + coef("tp_ar", 1) * tp_bytes
    # the share tp_overlap of it runs behind compute; the rest is on the critical path
    tp_fwd = (1.0 - tp_overlap) * 2.0 * layers_stage * t_ar
    tp_bwd = (1.0 - tp_overlap) * np.where(mode == 2, 4.0, 2.0) * layers_stage * t_ar
    # PP: one activation send forward and one gradient send backward per micro-batch and
    # chunk (v of them when interleaved); with sequence parallelism (or Megatron's
    # scatter/gather) each rank sends 1/t of it
    pp_bw = np.array([x.pp_bytes_per_s or 0.0 for x in comm])[comm_idx]
    pp_lat = np.array([x.pp_latency_s for x in comm])[comm_idx]
    send_rank = tp_bytes / tpf
    send = np.where(pp_bw > 0, send_rank * rpc / np.where(pp_bw > 0, pp_bw, 1.0) + pp_lat, 0.0)
    pp_mb = 2.0 * send * vf
    # EP: dispatch and combine all-to-alls in every MoE layer, forward and backward (and
    # again when full recomputation reruns the forward); each rank sends its 1/t of the
    # micro-batch's tokens, k copies each (GShard §2.2)
    if m.is_moe:
        # the busiest stage's MoE layers: ⌈(L − L_dense)/p⌉ (dense layers on the lighter stages)
        moe_layers_stage = np.ceil((L - m.n_dense_layers) / ppf)
        if ep_dispatch == "all-to-all":
            a2a_bytes = mbf * s / tpf * m.experts_per_token * h * 2.0 * capacity_factor
            t_a2a = coef("ep_a2a", 0) + coef("ep_a2a", 1) * a2a_bytes
        else:
            # NxD: all-gather every rank's tokens (mb·s/t of them, h wide, BF16) over the EP group,
            # then reduce-scatter the outputs back: the same phases at the same sizes (moe._ag_group)
            t_a2a = coef("ep_gather", 0) + coef("ep_gather", 1) * (mbf * s / tpf * h * 2.0)
        ep_fwd = 2.0 * moe_layers_stage * t_a2a
        ep_bwd = np.where(mode == 2, 4.0, 2.0) * moe_layers_stage * t_a2a
    else:
        ep_fwd = ep_bwd = np.zeros_like(tpf)
    slot = fwd + bwd + tp_fwd + tp_bwd + pp_mb + (ep_fwd + ep_bwd)  # one micro-batch on one stage
    out["compute"] = mf * (fwd + bwd)
    out["tp_comm"] = mf * (tp_fwd + tp_bwd)
    out["pp_comm"] = mf * pp_mb
    out["ep_comm"] = mf * (ep_fwd + ep_bwd)
    out["bubble"] = (ppf - 1.0) / vf * slot

    # DP: stages 0/1 reduce gradients once per step (ZeRO-1 as reduce-scatter + all-gather,
    # the same volume); the last micro-batch's backward can hide it. ZeRO-2 reduce-scatters
    # every micro-batch (gradients are sharded) and gathers weights once; ZeRO-3 also
    # gathers weights forward and backward every micro-batch (Rajbhandari et al. §7).
    # With EP the non-expert gradients are reduced over dp·ep ranks, done as a reduce-
    # scatter inside the EP group, the DP reduction of its 1/ep shard, and an all-gather
    # back; the experts' over dp only.
    g_bytes = r.gradients * per_dense
    w_bytes = r.weights * per_dense
    ar = coef("dp_ar", 0) + coef("dp_ar", 1) * (g_bytes / epf)
    rs = coef("dp_rs", 0) + coef("dp_rs", 1) * (g_bytes / epf)
    ag = coef("dp_ag", 0) + coef("dp_ag", 1) * (w_bytes / epf)
    if m.is_moe:
        ep_rs = coef("ep_rs", 0) + coef("ep_rs", 1) * g_bytes
        ep_ag_g = coef("ep_ag", 0) + coef("ep_ag", 1) * g_bytes
        ep_ag_w = coef("ep_ag", 0) + coef("ep_ag", 1) * w_bytes
        ge, we = r.gradients * per_expert, r.weights * per_expert
        # with ep = 1 experts and the rest share one DP group: one collective, one latency
        own = np.where(epf > 1, 1.0, 0.0)
        ar = ar + ep_rs + ep_ag_g + own * coef("dp_ar", 0) + coef("dp_ar", 1) * ge
        rs = rs + ep_rs + own * coef("dp_rs", 0) + coef("dp_rs", 1) * ge
        ag = ag + ep_ag_w + own * coef("dp_ag", 0) + coef("dp_ag", 1) * we
    # split into gradient reductions and weight gathers: a schedule places each behind compute
    # or not (AWS, "Compute-Communication Overlap in Neuron": by default FSDP reduce-scatters
    # run at the end of the backward pass; token threading moves them into later layers)
    dp_reduce = np.choose(zero, [ar, ar, mf * rs, mf * rs])
    dp_gather = np.choose(zero, [0.0 * ar, 0.0 * ar, ag, mf * 2.0 * ag])
    dp_total = dp_reduce + dp_gather
    window = np.choose(zero, [bwd + tp_bwd, bwd + tp_bwd, mf * (bwd + tp_bwd), mf * slot])
    out["dp_comm_total"] = dp_total
    out["dp_reduce"] = dp_reduce
    out["dp_gather"] = dp_gather
    placed = gather_overlap * dp_gather + reduce_overlap * dp_reduce
    out["dp_exposed"] = (dp_total - placed) + np.maximum(0.0, placed - dp_overlap * window)
    out["step"] = (out["compute"] + out["tp_comm"] + out["pp_comm"] + out["bubble"] + out["dp_exposed"]
                   + out["ep_comm"])
    tokens_step = dpf * epf * mbf * mf * s
    out["tokens_per_s"] = tokens_step / out["step"]
    out["model_flops_step"] = dpf * epf * mf * model_flops_mb
    peak = c.n_chips * chip.dense_flops_per_s[dtype]
    out["mfu_effective"] = out["model_flops_step"] / out["step"] / peak
    out["hbm"] = np.full_like(out["step"], hbm)
    out["slot"] = slot
    out["bwd_window"] = window
    return out


# --------------------------------------------------------------------- narrow expert matmuls


def expert_matmul_efficiency(expert_ffn_dim: int, etp, tensor_cols: int):
    """Share of the tensor engine an expert's matmuls use when split ``etp`` ways.

    Each rank holds ``w = f_e / etp`` of an expert's intermediate columns; the engine
    works in tiles of ``tensor_cols`` (128 on NeuronCore-v2 to v4), so ``w`` occupies
    ``⌈w / cols⌉`` tiles and uses ``w / (cols · ⌈w / cols⌉)`` of them: Qwen3's 1,536-wide
    experts at ETP 16 have 96 columns per rank, 0.75. AWS states the rule (NxD Inference,
    MoE deep dive: "optimal configuration is when sharded intermediate dimensions are >= 128
    for good tensor engine utilization"); the proportional efficiency below 128 is this
    course's assumption, not a measurement.
    """
    w = expert_ffn_dim / np.asarray(etp, dtype=float)
    tiles = np.ceil(w / tensor_cols - 1e-9)
    return w / (tensor_cols * tiles)


# --------------------------------------------------------------------- the one rule for "fits"


def _fits(headroom, hbm, min_headroom_fraction: float):
    """The one rule for "fits": headroom of at least ``min_headroom_fraction`` of HBM (same units)."""
    return headroom >= min_headroom_fraction * hbm
