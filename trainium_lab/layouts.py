"""Parallel layouts: memory per chip and a first-order step time, and a planner.

A *layout* splits a training job over ``tp × pp × dp`` ranks (tensor, pipeline and
data parallel), with a ZeRO stage, a micro-batch size, a number of micro-batches
and an activation-recomputation mode, on ``n_systems`` copies of a Trainium
system. This module turns a layout into

* **memory per chip**: weights and gradients split over ``tp·pp`` ranks, the
  optimizer state (FP32 master copy and Adam moments) also over ``dp`` under
  ZeRO-1, gradients under ZeRO-2 and weights under ZeRO-3, and the activations
  the first pipeline stage keeps under the 1F1B schedule; and the headroom left
  in HBM;
* **a first-order step time**: compute at an assumed utilisation, the tensor-
  parallel all-reduces of every layer at the level the TP group lands on, the
  pipeline bubble ``(p − 1)/m`` of 1F1B (``(p − 1)/(v·m)`` with ``v`` interleaved
  virtual stages), pipeline point-to-point sends, and the part of the data-parallel
  gradient traffic that the backward pass cannot hide;
* for **mixture-of-experts** models (:mod:`trainium_lab.moe`) a fourth degree,
  ``ep``: experts split over ``ep`` ranks placed right after TP (inside the fastest
  domain that holds ``tp·ep`` ranks), the dispatch and combine all-to-alls of every
  MoE layer, and memory and compute that follow total and active parameters;

and searches every valid layout of a cluster for the fastest one that fits
(:func:`plan`); :func:`trainium_lab.views.explain_plan` says what binds.

Degrees count **ranks** (logical NeuronCores), as in :mod:`trainium_lab.topology`:
at LNC=2 a Trainium2 chip runs 4 ranks, so "TP over the 16 chips of an instance"
is ``tp=64``. Memory is reported per **chip**: the sum over the chip's ranks.

Public API
----------
``layout(model, tp, pp, dp, ...) -> Layout``
    A validated layout (bad degrees raise ``ValueError`` naming the parameter).
``evaluate(layout, *, mfu=0.4, ...) -> LayoutEstimate``
    Memory per chip, headroom, step-time breakdown, tokens/s.
``plan(model, *, system, n_systems, global_batch, ...) -> Plan``
    Every valid layout, those that fit, ranked by tokens/s (``Plan.fitting(margin)`` for
    another margin); :func:`trainium_lab.views.explain_plan` puts the result into sentences.
``fully_sharded_table(...)``, ``worked_example()``
    A 405B worked example (TP over 16 chips × PP4 × DP2, ZeRO-1) from the same functions.
``custom_model(...)``
    A model configuration of your own (a :class:`trainium_lab.sizing.ModelPreset`).
``pipeline_bubble_fraction(pp, n_micro_batches, virtual_stages=1)``, ``tp_allreduces_per_layer(recompute)``,
``interleaved_activation_factor(pp, virtual_stages)``
    The formulas, on their own.

What the first-order model leaves out is listed in :data:`IGNORED`; the notebook
(chapter 05) discusses each item.

References
----------
M. Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models
Using Model Parallelism", arXiv:1909.08053 (2019), §3 (two all-reduces forward and
two backward per transformer layer). D. Narayanan et al., "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM", SC21,
arXiv:2104.04473 (2021), §2.2 (1F1B schedule, bubble (p−1)/m), §3 (degree
choices), §4.1 (scatter/gather of pipeline sends). V. Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198 (2022), Table 2 and §4.2.3 (the first stage keeps p micro-batches
of activations) and §4.2.3's factor ``1 + (p − 1)/(p·v)`` for the interleaved schedule.
S. Rajbhandari et al., "ZeRO", arXiv:1910.02054 (2020), §5 and §7 (memory and
communication volume of each stage); "DeepSpeed-MoE", arXiv:2201.05596 (2022), §5
(expert and expert-data parallelism). D. Lepikhin et al., "GShard", arXiv:2006.16668
(2020) (dispatch and combine all-to-alls). Llama Team, "The Llama 3
Herd of Models", arXiv:2407.21783 (2024), §3.3.2 (uneven pipeline stages).

Examples
--------
A layout for 405B on two Trn2 UltraServers: TP over the
16 chips of an instance (64 ranks at LNC=2), PP=4 along the ring, DP=2 over EFA,
ZeRO-1. State alone is 58.9 GiB per chip:

>>> from trainium_lab.units import GiB
>>> lay = layout("llama3-405b", tp=64, pp=4, dp=2, zero_stage=1, system="trn2-ultraserver", lnc=2,
...              micro_batch=1, n_micro_batches=16, recompute="selective")
>>> est = evaluate(lay)
>>> round(est.state_bytes / GiB, 1), round((est.hbm_bytes - est.state_bytes) / GiB, 1)
(58.9, 37.1)
>>> est.levels["tp"], est.levels["pp"], est.levels["dp"]
('instance', 'ultraserver', 'efa')
>>> round(est.dp_comm_s, 2)   # the EFA gradient all-reduce, to hide behind the backward pass
0.51
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from trainium_lab import collectives, moe, specs, topology
from trainium_lab._validate import choice, in_range, integer, positive, sequence
from trainium_lab.sizing import (RECOMPUTE_MODES, ModelPreset, _activation_per_layer_array,
                                 activation_coefficients, activation_options, parameter_count,
                                 preset, recipe, sharded_state_table, training_state_bytes)
from trainium_lab.sizing import resolve_model  # one home for "a preset name or a ModelPreset"
from trainium_lab.units import GiB, day, format_bytes, format_seconds

__all__ = [
    "Layout", "LayoutEstimate", "Plan", "IGNORED", "MEMORY_PARTS", "TIME_PARTS",
    "layout", "evaluate", "plan", "custom_model", "resolve_model",
    "pipeline_bubble_fraction", "tp_allreduces_per_layer", "fully_sharded_table",
    "worked_example", "candidate_degrees", "interleaved_activation_factor", "MOE_TIME_PARTS",
]

#: memory components per chip, in stacking order
MEMORY_PARTS: tuple[str, ...] = ("weights", "gradients", "optimizer", "activations")
#: step-time components, in stacking order
TIME_PARTS: tuple[str, ...] = ("compute", "tp_comm", "pp_comm", "bubble", "dp_exposed")
#: step-time components of a mixture-of-experts model: the expert all-to-alls come after TP
MOE_TIME_PARTS: tuple[str, ...] = ("compute", "tp_comm", "ep_comm", "pp_comm", "bubble", "dp_exposed")

#: what the first-order model leaves out (the notebook discusses each)
IGNORED: tuple[str, ...] = (
    "overlap of pipeline sends with compute (counted as fully exposed); TP all-reduces are counted "
    "fully exposed too unless you set tp_overlap (the share hidden behind compute, default 0)",
    "latency terms other than those published in data/links.csv (only EFA has one); "
    "contention between groups beyond the per-chip sharing chapter 03 models",
    "traffic between logical cores of one chip (no published figure: costs 0)",
    "the optimizer step, gradient clipping, loss and logits computation, and data loading",
    "uneven stages: parameters and compute are split evenly over pipeline stages, although "
    "the first and last stages also hold the embeddings (launchers rebalance with fewer layers)",
    "KV-head replication when tp exceeds the number of KV heads; activations of the embeddings, "
    "the output layer and the loss, and attention kernels' temporary buffers (a fused, "
    "FlashAttention-style kernel stores no scores: model it with selective recomputation)",
    "ZeRO-3's gathered-weight buffers, communication buffers, the runtime's own HBM use and "
    "fragmentation: covered only by the headroom you ask for",
    "kernel efficiency changing with the micro-batch or the TP shard size: one MFU for all",
    "MoE load imbalance: expert compute and all-to-all buffers are sized by the capacity factor "
    "(1 = a perfectly balanced router, nothing padded or dropped); chapter 10 simulates what a "
    "skewed router drops. Also the router's compute, the load-balancing loss and token permutation",
    "the topology of each level for all-to-alls: they run level by level (hierarchical), each "
    "NeuronLink ring or torus phase costed as a one-way ring (pessimistic for Trainium2's 2D torus), "
    "switched and EFA phases as a direct exchange",
    "interleaved schedules' finer points: the layers are split into p·v equal chunks (remainders "
    "ignored) and the number of micro-batches must be a multiple of p (Megatron-LM's rule)",
    "expert tensor parallelism: each expert is split over the TP ranks too (Megatron-Core's default); "
    "splitting small experts that finely lowers kernel efficiency, which one MFU for all cannot show",
)

_RECOMPUTE_INDEX = {m: i for i, m in enumerate(RECOMPUTE_MODES)}


# --------------------------------------------------------------------- the formulas on their own


def pipeline_bubble_fraction(pp: int, n_micro_batches: int, virtual_stages: int = 1) -> float:
    """Idle time of a 1F1B pipeline relative to the ideal: ``(p − 1) / m``, or ``(p − 1)/(v·m)``.

    With ``p`` stages and ``m`` micro-batches, a 1F1B (one-forward-one-backward)
    schedule runs ``m + p − 1`` micro-batch slots instead of ``m``: the pipeline
    takes ``p − 1`` slots to fill and drain. The bubble is ``(p − 1)`` slots, a
    fraction ``(p − 1)/m`` of the useful time (``(p − 1)/(m + p − 1)`` of the total).

    The interleaved schedule gives each device ``v`` chunks of ``L/(p·v)`` layers
    (``v`` *virtual stages*) instead of one block of ``L/p``. Filling and draining
    now costs ``p − 1`` chunk slots of ``1/v`` the time each: the bubble shrinks to
    ``(p − 1)/(v·m)``, for ``v`` times the pipeline sends.

    Parameters
    ----------
    pp : int
        Pipeline stages ``p`` (>= 1).
    n_micro_batches : int
        Micro-batches per step ``m`` (>= 1).
    virtual_stages : int
        Chunks per device ``v`` (1: plain 1F1B).

    Returns
    -------
    float
        Bubble time divided by ideal (bubble-free) time.

    References
    ----------
    Narayanan et al. 2021, arXiv:2104.04473, §2.2.1: bubble time fraction
    ``(p − 1)/m`` for the PipeDream-Flush (1F1B) schedule, as for GPipe; §2.2.2:
    ``(p − 1)/(v·m)`` for the interleaved schedule ("the pipeline bubble time is
    reduced by v"), at ``v`` times the communication.

    Examples
    --------
    >>> pipeline_bubble_fraction(4, 16)
    0.1875
    >>> pipeline_bubble_fraction(1, 1)
    0.0
    >>> pipeline_bubble_fraction(4, 16, virtual_stages=3)
    0.0625
    """
    p = integer("pp", pp, minimum=1)
    m = integer("n_micro_batches", n_micro_batches, minimum=1)
    v = integer("virtual_stages", virtual_stages, minimum=1, maximum=10**6)
    if v == 1:
        return (p - 1) / m
    return (p - 1) / (v * m)


def interleaved_activation_factor(pp: int, virtual_stages: int) -> float:
    """Activation memory of the first stage under interleaving, relative to plain 1F1B.

    Plain 1F1B keeps ``p`` micro-batches of ``L/p`` layers on the first stage: the
    activations of ``L`` layers. The interleaved schedule warms up with more
    micro-batches in flight: Korthikanti et al. give the total as ``L·(1 + (p − 1)/(p·v))``
    layers' worth. It follows from Megatron-LM's warm-up count: the first device runs
    ``2(p − 1) + (v − 1)·p`` chunk forwards before its first backward and holds one more
    in the steady state, each of ``L/(p·v)`` layers:
    ``(v·p + p − 1)·L/(p·v) = L·(1 + (p − 1)/(p·v))``. ``v = 1`` is plain 1F1B (factor 1).

    Parameters
    ----------
    pp : int
        Pipeline stages ``p`` (>= 1).
    virtual_stages : int
        Chunks per device ``v`` (>= 1).

    References
    ----------
    Korthikanti et al. 2022, arXiv:2205.05198, §4.2.3 (interleaved schedule); NVIDIA
    Megatron-LM, ``megatron/training/theoretical_memory_usage.py``
    (``interleaved_schedule_memory_penalty``) and
    ``megatron/core/pipeline_parallel/schedules.py`` (warm-up micro-batches).

    Examples
    --------
    >>> interleaved_activation_factor(8, 1), interleaved_activation_factor(8, 2)
    (1.0, 1.4375)
    """
    p = integer("pp", pp, minimum=1, maximum=10**6)
    v = integer("virtual_stages", virtual_stages, minimum=1, maximum=10**6)
    if v == 1:
        return 1.0
    return 1.0 + (p - 1) / (p * v)


def tp_allreduces_per_layer(recompute: str = "none") -> int:
    """All-reduces one tensor-parallel transformer layer runs per micro-batch.

    Megatron-LM splits attention and MLP so that each needs one all-reduce in the
    forward pass (operator *g*) and one in the backward pass (operator *f*): 2 + 2
    per layer. Full recomputation runs the forward pass again during the backward
    pass, with its 2 all-reduces; selective recomputation recomputes only the
    attention core, which needs none. With sequence parallelism each all-reduce
    becomes a reduce-scatter plus an all-gather of the same total volume.

    References
    ----------
    Shoeybi et al. 2019, arXiv:1909.08053, §3 and Figure 4; Korthikanti et al.
    2022, arXiv:2205.05198, §4.2.2 (sequence parallelism) and §5.

    Examples
    --------
    >>> tp_allreduces_per_layer("selective"), tp_allreduces_per_layer("full")
    (4, 6)
    """
    mode = choice("recompute", recompute, RECOMPUTE_MODES)
    return 6 if mode == "full" else 4


# --------------------------------------------------------------------- models


def custom_model(name: str, *, n_layers: int, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 ffn_dim: int | None = None, vocab_size: int = 128256, seq_len: int = 8192,
                 n_params: float | None = None) -> ModelPreset:
    """A Llama-style dense model of your own, usable wherever a preset name is.

    Parameters
    ----------
    name : str
        A label.
    n_layers, d_model, n_heads : int
        Layers, hidden size, attention heads.
    n_kv_heads : int, optional
        Key/value heads (grouped-query attention); default ``n_heads``.
    ffn_dim : int, optional
        MLP inner size; default ``4 · d_model``.
    vocab_size, seq_len : int
        Vocabulary and training sequence length.
    n_params : float, optional
        Parameter count; default: counted from the configuration
        (:func:`trainium_lab.sizing.parameter_count`).

    Examples
    --------
    >>> m = custom_model("my-30b", n_layers=48, d_model=7168, n_heads=56, n_kv_heads=8, ffn_dim=20480)
    >>> round(m.n_params / 1e9, 1)
    28.6
    """
    kv = n_heads if n_kv_heads is None else n_kv_heads
    f = 4 * integer("d_model", d_model, minimum=1) if ffn_dim is None else ffn_dim
    count = parameter_count(n_layers, d_model, n_heads, kv, f, vocab_size)
    seq_len = integer("seq_len", seq_len, minimum=1)
    n = float(count) if n_params is None else positive("n_params", n_params)
    return ModelPreset(key=str(name), name=str(name), n_params=n, n_layers=int(n_layers),
                       d_model=int(d_model), n_heads=int(n_heads), n_kv_heads=int(kv), ffn_dim=int(f),
                       vocab_size=int(vocab_size), seq_len=seq_len, sources=("custom",))


def _check_tp_divides(m: ModelPreset, tp: int) -> None:
    if m.n_heads % tp:
        raise ValueError(f"tp must divide n_heads ({m.n_heads}) of {m.name}, so each rank gets "
                         f"whole attention heads; got tp={tp}")
    if m.n_kv_heads % tp and tp % m.n_kv_heads:
        raise ValueError(f"tp must divide n_kv_heads ({m.n_kv_heads}) or be a multiple of it "
                         f"(KV heads replicated) for {m.name}; got tp={tp}")


def _check_ep(m: ModelPreset, ep: int) -> None:
    if not m.is_moe:
        if ep != 1:
            raise ValueError(f"ep must be 1 for {m.name}: it is a dense model, with no experts to split "
                             f"(expert parallelism needs a mixture-of-experts model such as "
                             f"'mixtral-8x7b'); got ep={ep}")
        return
    if m.n_experts % ep:
        raise ValueError(f"ep must divide n_experts ({m.n_experts}) of {m.name}, so every rank holds "
                         f"whole experts; got ep={ep}")


def candidate_degrees(model: str | ModelPreset, n_ranks: int) -> list[tuple[int, int, int]]:
    """Every ``(tp, pp, dp)`` with ``tp·pp·dp = n_ranks`` that the model can be split by.

    ``tp`` must divide the attention heads (and divide or be a multiple of the KV
    heads); ``pp`` must not exceed the number of layers (stages may be uneven, as
    in Llama 3's training, which put one layer fewer on the first and last stages).

    Examples
    --------
    >>> len(candidate_degrees("llama3-8b", 64))
    26
    """
    m = resolve_model(model)
    n_ranks = integer("n_ranks", n_ranks, minimum=1)
    divs = [d for d in range(1, n_ranks + 1) if n_ranks % d == 0]
    out = []
    for tp in divs:
        if m.n_heads % tp or (m.n_kv_heads % tp and tp % m.n_kv_heads):
            continue
        rest = n_ranks // tp
        for pp in divs:
            if rest % pp or pp > m.n_layers:
                continue
            out.append((tp, pp, rest // pp))
    return out


# --------------------------------------------------------------------- the layout


@dataclass(frozen=True)
class Layout:
    """A validated parallel layout. Build it with :func:`layout`.

    Attributes
    ----------
    model : ModelPreset
    tp, pp, dp, ep : int
        Degrees in ranks (logical NeuronCores); ``tp·pp·dp·ep`` = ranks in the cluster.
        With ``ep > 1`` (MoE models) each expert is replicated over ``dp`` ranks and
        the other parameters over ``dp·ep`` (the expert-parallel ranks see different
        tokens).
    zero_stage : int
        0 (none), 1 (optimizer state), 2 (+ gradients), 3 (+ weights) sharded over ``dp``.
    micro_batch, n_micro_batches : int
        Sequences per micro-batch, micro-batches per step per data-parallel replica.
    recompute : str
        ``"none"``, ``"selective"`` or ``"full"``.
    sequence_parallel : bool
        Shard the non-tensor-parallel regions along the sequence (Korthikanti et al.).
    cluster : trainium_lab.topology.Cluster
    seq_len : int
    recipe : str
        Precision recipe key of :data:`trainium_lab.sizing.RECIPES`.
    dtype : str
        Matmul dtype for the chip's peak rate.
    grad_bytes_per_param : float
        Bytes per gradient (2 = BF16, the course's convention; 4 = FP32, as
        Megatron-LM and DeepSpeed count). Sets the gradient memory and the size of
        the data-parallel gradient reduction.
    virtual_stages : int
        Chunks per pipeline device (1: plain 1F1B; ``v > 1``: interleaved 1F1B).
    capacity_factor : float
        MoE expert buffers relative to a perfectly balanced load (1 for dense models).
    """

    model: ModelPreset
    tp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    micro_batch: int
    n_micro_batches: int
    recompute: str
    sequence_parallel: bool
    cluster: topology.Cluster
    seq_len: int
    recipe: str
    dtype: str
    grad_bytes_per_param: float = 2.0
    virtual_stages: int = 1
    capacity_factor: float = 1.0

    @property
    def global_batch(self) -> int:
        """Sequences per step: ``dp × ep × micro_batch × n_micro_batches``."""
        return self.dp * self.ep * self.micro_batch * self.n_micro_batches

    @property
    def tokens_per_step(self) -> int:
        """Tokens per optimizer step."""
        return self.global_batch * self.seq_len

    def chips(self, kind: str) -> float:
        """Chips one group of ``kind`` spans if its ranks are packed (``degree / ranks per chip``)."""
        kind = choice("kind", kind, ("tp", "pp", "dp", "ep"))
        return getattr(self, kind) / self.cluster.ranks_per_chip

    def label(self) -> str:
        """Short description, degrees in ranks and in chips."""
        c = self.cluster
        tpc = self.tp / c.ranks_per_chip
        tp_chips = f"{tpc:g} chip{'s' if tpc != 1 else ''}"
        ep = f"×EP{self.ep}" if self.model.is_moe else ""
        v = f", interleaved v={self.virtual_stages}" if self.virtual_stages > 1 else ""
        return (f"TP{self.tp}{ep}×PP{self.pp}×DP{self.dp} (TP over {tp_chips}), ZeRO-{self.zero_stage}, "
                f"mb {self.micro_batch}×{self.n_micro_batches}, {self.recompute} recompute{v}")

    def __repr__(self) -> str:
        c = self.cluster
        return (f"Layout({self.model.name}, {self.label()}, on {c.n_systems} × {c.system} at "
                f"LNC={c.lnc})")

    def _repr_markdown_(self) -> str:
        c = self.cluster
        return (f"**{self.label()}**: {self.model.name} on {c.n_systems} × {c.system} ({c.n_chips} chips, "
                f"{c.n_ranks} ranks at LNC={c.lnc}); global batch {self.global_batch:,} sequences of "
                f"{self.seq_len:,} tokens; recipe `{self.recipe}`, matmuls in {self.dtype}")


def layout(model: str | ModelPreset, tp: int, pp: int = 1, dp: int = 1, ep: int = 1, *,
           zero_stage: int = 1, micro_batch: int = 1, n_micro_batches: int = 1,
           recompute: str = "selective", sequence_parallel: bool = True,
           system: str = "trn2-ultraserver", n_systems: int | None = None, lnc: int | None = None,
           seq_len: int | None = None, recipe_name: str = "bf16-adam", dtype: str = "bfloat16",
           grad_bytes_per_param: float | None = None, virtual_stages: int = 1,
           capacity_factor: float = 1.0) -> Layout:
    """Check a layout and return it.

    Parameters
    ----------
    model : str or ModelPreset
        A preset name (``"llama3-405b"``) or :func:`custom_model`.
    tp, pp, dp, ep : int
        Degrees in ranks. ``tp`` must divide the attention heads, ``pp`` must not
        exceed the layers; ``ep`` must divide the experts of a mixture-of-experts
        model and be 1 for a dense one.
    zero_stage : int
        0 to 3.
    micro_batch, n_micro_batches : int
        >= 1 each.
    recompute : {"none", "selective", "full"}
    sequence_parallel : bool
    system : str
        One of :data:`trainium_lab.topology.SYSTEMS`.
    n_systems : int, optional
        Default: ``tp·pp·dp·ep`` divided by the ranks of one system.
    lnc : int, optional
        Logical NeuronCore setting (default: the chip's default).
    seq_len : int, optional
        Default: the model's.
    recipe_name : str
        Precision recipe (bytes per parameter), default ``"bf16-adam"`` (16 B/param).
    dtype : str
        dtype of the peak FLOP/s used for compute time.
    grad_bytes_per_param : float, optional
        Bytes per gradient, replacing the recipe's (:func:`trainium_lab.sizing.recipe`):
        default 2 (BF16 gradients, 16 B/param); 4 is the FP32-gradient convention of
        Megatron-LM and DeepSpeed (18 B/param).
    virtual_stages : int
        Interleaved 1F1B with ``v`` chunks per device (Narayanan et al. §2.2.2): needs
        ``pp >= 2``, ``pp·v <= n_layers`` and ``n_micro_batches`` a multiple of ``pp``.
    capacity_factor : float
        MoE only: expert buffers (compute and all-to-all bytes) as a multiple of a
        balanced load, in [1, 16] (:func:`trainium_lab.moe.expert_capacity_tokens`).

    Raises
    ------
    ValueError
        Naming the parameter: degrees that do not divide the model or do not
        multiply to the cluster's ranks, unknown system, zero micro-batches...

    Examples
    --------
    >>> layout("llama3-405b", tp=64, pp=4, dp=2, lnc=2).cluster.n_systems
    2
    >>> layout("llama3-405b", tp=48, pp=4, dp=2)
    Traceback (most recent call last):
    ...
    ValueError: tp must divide n_heads (128) of Llama 3 405B, so each rank gets whole attention heads; got tp=48
    >>> layout("llama3-405b", tp=64, pp=4, dp=2, n_micro_batches=0)
    Traceback (most recent call last):
    ...
    ValueError: n_micro_batches must be an integer >= 1, got 0
    """
    m = resolve_model(model)
    tp = integer("tp", tp, minimum=1)
    pp = integer("pp", pp, minimum=1)
    dp = integer("dp", dp, minimum=1)
    ep = integer("ep", ep, minimum=1)
    _check_ep(m, ep)
    _check_tp_divides(m, tp)
    if pp > m.n_layers:
        raise ValueError(f"pp must be at most n_layers ({m.n_layers}) of {m.name}; got pp={pp}")
    zero_stage = integer("zero_stage", zero_stage, minimum=0, maximum=3)
    micro_batch = integer("micro_batch", micro_batch, minimum=1)
    n_micro_batches = integer("n_micro_batches", n_micro_batches, minimum=1)
    virtual_stages = integer("virtual_stages", virtual_stages, minimum=1, maximum=m.n_layers)
    if virtual_stages > 1:
        if pp < 2:
            raise ValueError(f"virtual_stages > 1 interleaves pipeline stages: it needs pp >= 2; got pp={pp}")
        if pp * virtual_stages > m.n_layers:
            raise ValueError(f"virtual_stages × pp must be at most n_layers ({m.n_layers}): every chunk "
                             f"needs a layer; got {virtual_stages} × {pp}")
        if n_micro_batches % pp:
            raise ValueError(f"n_micro_batches must be a multiple of pp ({pp}) for the interleaved schedule "
                             f"(Narayanan et al. 2021, §2.2.2); got {n_micro_batches}")
    capacity_factor = in_range("capacity_factor", capacity_factor, 1.0, 16.0)
    recompute = choice("recompute", recompute, RECOMPUTE_MODES)
    if sequence_parallel not in (True, False):
        raise ValueError(f"sequence_parallel must be True or False; got {sequence_parallel!r}")
    seq_len = m.seq_len if seq_len is None else integer("seq_len", seq_len, minimum=1)
    grads = recipe(recipe_name, grad_bytes_per_param).gradients  # validates both
    base = topology.cluster(system, 1, lnc)
    product = tp * pp * dp * ep
    if n_systems is None:
        if product % base.ranks_per_system:
            raise ValueError(f"tp × pp × dp × ep = {product} must be a whole number of {base.system} "
                             f"systems ({base.ranks_per_system} ranks each at lnc={base.lnc}); "
                             f"or pass n_systems")
        n_systems = product // base.ranks_per_system
    c = topology.cluster(base.system, n_systems, base.lnc)
    topology.check_degrees(c.n_ranks, tp, pp, dp, ep)
    chip = specs.chip(c.chip)
    if dtype not in chip.dense_flops_per_s:
        raise ValueError(f"dtype must be one of {sorted(chip.dense_flops_per_s)} for {c.chip}; got {dtype!r}")
    return Layout(m, tp, pp, dp, ep, zero_stage, micro_batch, n_micro_batches, recompute,
                  bool(sequence_parallel), c, seq_len, recipe_name, dtype, float(grads), virtual_stages,
                  capacity_factor if m.is_moe else 1.0)


# --------------------------------------------------------------------- communication coefficients


@dataclass(frozen=True)
class _Comm:
    """Affine costs ``a + b·size`` from chapter 03, for one (cluster, tp, pp, dp, ep).

    ``ep_a2a`` is per byte a rank sends (all the chip's ranks send at once); the ``ep_*``
    all-reduce pieces are for the dense gradients' reduction inside the EP group.
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
    ep_ag: tuple[float, float] = (0.0, 0.0)
    ep_rs: tuple[float, float] = (0.0, 0.0)


#: rank orderings (innermost first): EP right after TP, so it lands in the fastest domain holding tp·ep
_ORDER = topology.parse_ordering("tp-pp-dp")
_ORDER_EP = topology.parse_ordering("tp-ep-pp-dp")


@functools.lru_cache(maxsize=65536)
def _comm(system: str, n_systems: int, lnc: int, tp: int, pp: int, dp: int, ep: int = 1) -> _Comm:
    c = topology.cluster(system, n_systems, lnc)
    order = _ORDER if ep == 1 else _ORDER_EP
    degrees = {"tp": tp, "pp": pp, "dp": dp, "ep": ep}
    # the same levels, chip counts and sharing as topology.place(...).slowest(kind), in closed form
    spans = topology._spans(c.system, c.n_systems, c.lnc, tuple(degrees[k] for k in order), order)

    def slowest(kind: str):
        index, n_chips, _, _, sharing = spans[kind]
        return c.level(topology.LEVEL_NAMES[index]), n_chips, sharing

    def affine(kind: str, coll: str) -> tuple[float, float]:
        # collectives.level_collective_s's arithmetic, without re-validating known-good arguments
        lv, n, sh = slowest(kind)
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
        a = moe._a2a_group(c, shape, 0.0)
        b = (moe._a2a_group(c, shape, 1e9 * c.ranks_per_chip) - a) / 1e9
        extra = dict(ep_level=lv_ep.name, ep_chips=n_ep, ep_a2a=(a, b), ep_ag=affine("ep", "all_gather"),
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
          capacity_factor: float = 1.0) -> dict[str, np.ndarray]:
    """Every formula of the chapter, on arrays (one element per layout).

    ``ep`` (expert parallelism, MoE models) and ``v`` (interleaved virtual stages) default
    to 1 everywhere; a dense model with ``ep = v = 1`` gives exactly the chapter-05 numbers.
    """
    r = recipe(recipe_name, grad_bytes_per_param)
    chip = specs.chip(c.chip)
    rpc = c.ranks_per_chip
    n_params = float(m.n_params)
    L, h, s = m.n_layers, float(m.d_model), float(seq_len)
    tpf, ppf, dpf = tp.astype(float), pp.astype(float), dp.astype(float)
    mbf, mf = mb.astype(float), nmb.astype(float)
    epf = np.ones_like(tpf) if ep is None else ep.astype(float)
    vf = np.ones_like(tpf) if v is None else v.astype(float)
    # dense: (n_params, 0, n_params, 0); MoE: experts split from the rest, active < total
    non_expert, routed, n_active, routed_active = moe._split(m)

    # ---- memory per rank, then per chip (rank memory × ranks per chip)
    weights, grads, optim, per_dense, per_expert = moe._state_per_rank(non_expert, routed, tpf, ppf, dpf,
                                                                       epf, zero, r)
    layers_first = np.ceil(L / ppf)
    in_flight = np.minimum(ppf, mf)  # 1F1B: stage 1 stashes up to p micro-batches
    # one activation model for the package (sizing): the preset's Llama-style layer, with an
    # MoE layer's MLP as wide as the experts a token visits (moe.activation_ffn_dim)
    act_model = moe._activation_model(m, capacity_factor)
    coeffs = activation_coefficients(act_model.n_heads, act_model.d_model, **activation_options(act_model))
    act_layer = _activation_per_layer_array(seq_len, mbf, m.d_model, m.n_heads, tp, sequence_parallel,
                                            mode, coeffs)
    # interleaving keeps more micro-batches in flight (Korthikanti et al. §4.2.3)
    acts = in_flight * layers_first * act_layer * np.where(vf > 1, 1.0 + (ppf - 1.0) / (ppf * vf), 1.0)
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
    attn = 6.0 * L * s * h  # per token, causal count (sizing.training_flops, attention="causal")
    model_flops_mb = (6.0 * n_active + attn) * tokens_mb
    # padded expert slots (capacity factor) are computed too, but are not model FLOPs
    padding_mb = 6.0 * (capacity_factor - 1.0) * routed_active * tokens_mb
    recompute_flops_mb = np.choose(mode, [0.0 * tokens_mb, attn / 3.0 * tokens_mb,
                                          (2.0 * n_active + attn / 3.0) * tokens_mb])
    chips_per_stage_replica = c.n_chips / (ppf * dpf * epf)
    rate = chips_per_stage_replica * chip.dense_flops_per_s[dtype] * mfu
    fwd = (model_flops_mb + padding_mb) / 3.0 / ppf / rate
    bwd = ((model_flops_mb + padding_mb) * 2.0 / 3.0 + recompute_flops_mb) / ppf / rate

    # ---- per-layout communication coefficients (from chapter 03)
    def coef(name: str, i: int) -> np.ndarray:
        return np.array([getattr(x, name)[i] for x in comm])[comm_idx]

    # TP: 2 all-reduces forward, 2 backward (+2 with full recompute) per layer, of mb·s·h·2 bytes
    tp_bytes = 2.0 * mbf * s * h  # BF16 activations
    t_ar = coef("tp_ar", 0) + coef("tp_ar", 1) * tp_bytes
    layers_stage = L / ppf
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
        moe_layers_stage = (L - m.n_dense_layers) / ppf
        a2a_bytes = mbf * s / tpf * m.experts_per_token * h * 2.0 * capacity_factor
        t_a2a = coef("ep_a2a", 0) + coef("ep_a2a", 1) * a2a_bytes
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
    dp_total = np.choose(zero, [ar, ar, mf * rs + ag, mf * (rs + 2.0 * ag)])
    window = np.choose(zero, [bwd + tp_bwd, bwd + tp_bwd, mf * (bwd + tp_bwd), mf * slot])
    out["dp_comm_total"] = dp_total
    out["dp_exposed"] = np.maximum(0.0, dp_total - dp_overlap * window)
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


# --------------------------------------------------------------------- one layout


def _fits(headroom, hbm, min_headroom_fraction: float):
    """The one rule for "fits": headroom of at least ``min_headroom_fraction`` of HBM (same units)."""
    return headroom >= min_headroom_fraction * hbm


@dataclass(frozen=True)
class LayoutEstimate:
    """Memory per chip and step time of one :class:`Layout` (all base units).

    Attributes
    ----------
    layout : Layout
    memory_bytes : dict
        Per chip: ``weights``, ``gradients``, ``optimizer``, ``activations``.
    hbm_bytes : float
        HBM per chip (from specs).
    time_s : dict
        Per step: ``compute``, ``tp_comm`` (the exposed part of the TP all-reduces),
        ``pp_comm``, ``bubble``, ``dp_exposed`` (and ``ep_comm``, the expert all-to-alls, for
        MoE models: :data:`MOE_TIME_PARTS`).
    dp_comm_s : float
        All data-parallel traffic of a step (hidden or not).
    overlap_window_s : float
        Backward time available to hide it.
    levels : dict
        Slowest level each kind of group crosses (``"tp"``, ``"pp"``, ``"dp"``, and ``"ep"``
        for MoE models); ``"none"`` for a degree of 1.
    mfu, min_headroom_fraction : float
        The assumptions used.
    """

    layout: Layout
    memory_bytes: dict[str, float]
    hbm_bytes: float
    time_s: dict[str, float]
    dp_comm_s: float
    overlap_window_s: float
    levels: dict[str, str]
    tokens_per_s: float
    mfu_effective: float
    mfu: float
    min_headroom_fraction: float

    @property
    def state_bytes(self) -> float:
        """Weights + gradients + optimizer state per chip."""
        return sum(self.memory_bytes[k] for k in ("weights", "gradients", "optimizer"))

    @property
    def total_bytes(self) -> float:
        """Everything per chip, activations included."""
        return sum(self.memory_bytes.values())

    @property
    def headroom_bytes(self) -> float:
        """HBM left per chip (negative: does not fit)."""
        return self.hbm_bytes - self.total_bytes

    @property
    def fits(self) -> bool:
        """Headroom is at least ``min_headroom_fraction`` of HBM."""
        return bool(_fits(self.headroom_bytes, self.hbm_bytes, self.min_headroom_fraction))

    @property
    def step_s(self) -> float:
        """Estimated seconds per optimizer step."""
        return sum(self.time_s.values())

    def memory_table(self) -> pd.DataFrame:
        """Tidy: ``part, bytes, gib`` per chip, plus ``hbm_gib`` and ``allowed_gib`` (HBM less the margin)."""
        parts = list(MEMORY_PARTS)
        b = [self.memory_bytes[p] for p in parts]
        return pd.DataFrame({"part": parts, "bytes": b, "gib": [x / GiB for x in b],
                             "hbm_gib": self.hbm_bytes / GiB,
                             "allowed_gib": (1 - self.min_headroom_fraction) * self.hbm_bytes / GiB})

    def time_table(self) -> pd.DataFrame:
        """Tidy: ``part, seconds, share`` of the step."""
        parts = list(self.time_s)
        t = [self.time_s[p] for p in parts]
        total = sum(t)
        return pd.DataFrame({"part": parts, "seconds": t, "share": [x / total for x in t]})

    def __repr__(self) -> str:
        return (f"LayoutEstimate({self.layout.label()}: {format_bytes(self.total_bytes)} of "
                f"{format_bytes(self.hbm_bytes)} per chip, fits={self.fits}, step "
                f"{format_seconds(self.step_s)}, {self.tokens_per_s:,.0f} tokens/s)")

    def _repr_markdown_(self) -> str:
        fit = "fits" if self.fits else "**does not fit**"
        memory = ", ".join(f"{p} {format_bytes(self.memory_bytes[p])}" for p in MEMORY_PARTS)
        time = ", ".join(f"{p} {format_seconds(self.time_s[p])}" for p in TIME_PARTS)
        return (f"**{self.layout.label()}**: {format_bytes(self.total_bytes)} of "
                f"{format_bytes(self.hbm_bytes)} per chip ({memory}; "
                f"{format_bytes(self.headroom_bytes)} left, {fit} with "
                f"{self.min_headroom_fraction:.0%} kept free). Step {format_seconds(self.step_s)} "
                f"({time}): **{self.tokens_per_s:,.0f} tokens/s**, effective MFU "
                f"{self.mfu_effective:.1%} at {self.mfu:.0%} while computing")


def evaluate(lay: Layout, *, mfu: float = 0.4, dp_overlap: float = 1.0, tp_overlap: float = 0.0,
             min_headroom_fraction: float = 0.10) -> LayoutEstimate:
    """Memory per chip and a first-order step time for a layout.

    Memory per rank (Ψ parameters, recipe bytes ``w, g, K``; Rajbhandari et al.):
    weights ``wΨ/(tp·pp)`` (÷dp under ZeRO-3), gradients ``gΨ/(tp·pp)`` (÷dp under
    ZeRO-2 and 3), optimizer ``KΨ/(tp·pp)`` (÷dp under ZeRO-1 to 3); activations
    ``min(p, m) · ⌈L/p⌉`` layers of Korthikanti et al.'s per-layer bytes for the
    model's Llama-style layer (:func:`trainium_lab.sizing.activation_bytes_per_layer`;
    1F1B: the first stage keeps up to ``p`` micro-batches; §4.2.3), plus, under full
    recomputation, one layer's full activations while it is recomputed. Per chip:
    times the ranks per chip.

    Step time: ``m`` micro-batch slots of compute, the exposed part of the TP
    all-reduces (all of it unless ``tp_overlap`` says otherwise) and pipeline sends,
    plus the bubble ``(p − 1)`` slots (Narayanan et al. §2.2.1), plus the
    data-parallel traffic that the backward pass does not hide. Interleaved with ``v``
    virtual stages: a bubble of ``(p − 1)/v`` slots, ``v`` times the pipeline sends and
    ``1 + (p − 1)/(p·v)`` times the first stage's activations (§2.2.2; Korthikanti et al.
    §4.2.3). MoE models (:mod:`trainium_lab.moe`): experts over ``tp·pp·ep`` ranks, the
    rest over ``tp·pp``; compute of the active parameters; four all-to-alls per MoE
    layer (dispatch and combine, forward and backward) at the level the EP group lands on.

    Parameters
    ----------
    lay : Layout
        From :func:`layout`.
    mfu : float
        Share of peak FLOP/s reached *while computing*, in (0, 1]; bubble and
        exposed communication come on top, so the step's effective MFU is lower.
    dp_overlap : float
        Share of the backward window that can hide DP traffic, in [0, 1] (1 = bucketed,
        perfectly overlapped reductions; 0 = none).
    tp_overlap : float
        Share of the tensor-parallel collective time hidden behind computation, in [0, 1].
        0 (the default) puts every TP all-reduce on the critical path: in Megatron-LM's
        tensor parallelism each one sits between two matrix multiplies that depend on it
        (Shoeybi et al. 2019, §3, operators *f* and *g*), and Megatron-LM overlaps them with
        GEMMs only when asked (its ``--tp-comm-overlap`` option, off by default). Set the
        share your framework hides, once you have measured it.
    min_headroom_fraction : float
        Share of HBM to keep free for the runtime, buffers and fragmentation, in [0, 1).

    Returns
    -------
    LayoutEstimate

    Examples
    --------
    >>> from trainium_lab.units import GiB
    >>> est = evaluate(layout("llama3-405b", tp=64, pp=4, dp=2, micro_batch=1, n_micro_batches=64, lnc=2))
    >>> round(est.memory_bytes["optimizer"] / GiB, 2), round(est.memory_bytes["activations"] / GiB, 1)
    (35.36, 31.8)
    >>> round(est.headroom_bytes / GiB, 1), est.fits   # selective recompute leaves 5 GiB: under the 10 % margin
    (5.3, False)
    >>> round(est.time_s["bubble"] / (est.time_s["compute"] + est.time_s["tp_comm"] + est.time_s["pp_comm"]), 4)
    0.0469
    """
    if not isinstance(lay, Layout):
        raise ValueError(f"lay must be a Layout (build it with layouts.layout); got {type(lay).__name__}")
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    dp_overlap = in_range("dp_overlap", dp_overlap, 0.0, 1.0)
    tp_overlap = in_range("tp_overlap", tp_overlap, 0.0, 1.0)
    min_headroom_fraction = in_range("min_headroom_fraction", min_headroom_fraction, 0.0, 1.0, high_open=True)
    c = lay.cluster
    cm = _comm(c.system, c.n_systems, c.lnc, lay.tp, lay.pp, lay.dp, lay.ep)
    one = lambda v: np.array([v])  # noqa: E731
    out = _core(lay.model, c, lay.seq_len, lay.recipe, lay.dtype, lay.sequence_parallel, mfu, dp_overlap,
                tp_overlap, lay.grad_bytes_per_param,
                one(lay.tp), one(lay.pp), one(lay.dp), one(lay.zero_stage), one(lay.micro_batch),
                one(lay.n_micro_batches), one(_RECOMPUTE_INDEX[lay.recompute]), [cm], one(0),
                ep=one(lay.ep), v=one(lay.virtual_stages), capacity_factor=lay.capacity_factor)
    f = {k: float(v[0]) for k, v in out.items()}
    levels = dict(cm.levels)
    if lay.model.is_moe:
        levels["ep"] = cm.ep_level
    return LayoutEstimate(lay, {k: f[k] for k in MEMORY_PARTS}, f["hbm"],
                          {k: f[k] for k in _time_parts(lay.model)}, f["dp_comm_total"], f["bwd_window"],
                          levels, f["tokens_per_s"], f["mfu_effective"], mfu, min_headroom_fraction)


def _time_parts(m: ModelPreset) -> tuple[str, ...]:
    return MOE_TIME_PARTS if m.is_moe else TIME_PARTS


# --------------------------------------------------------------------- the planner


@dataclass(frozen=True)
class Plan:
    """Result of :func:`plan`.

    Attributes
    ----------
    table : pandas.DataFrame
        Layouts that fit, best first (columns listed in :func:`plan`).
    all : pandas.DataFrame
        Every layout evaluated, with ``fits``.
    model : ModelPreset
    cluster : trainium_lab.topology.Cluster
    global_batch : int
    min_headroom_fraction : float
    settings : dict
        The search's other inputs (recompute options, dtype, MFU...), to rebuild a layout.
    """

    table: pd.DataFrame
    all: pd.DataFrame
    model: ModelPreset
    cluster: topology.Cluster
    global_batch: int
    min_headroom_fraction: float
    settings: dict = field(default_factory=dict)

    @property
    def best(self) -> pd.Series | None:
        """The top row, or ``None`` when nothing fits."""
        return None if self.table.empty else self.table.iloc[0]

    @property
    def time_parts(self) -> tuple[str, ...]:
        """The step-time parts of :attr:`table` (``ep_comm`` too for a mixture-of-experts model)."""
        return _time_parts(self.model)

    def __repr__(self) -> str:
        c = self.cluster
        best = "nothing fits" if self.table.empty else f"best {self.table.label.iloc[0]}"
        return (f"Plan({self.model.name} on {c.n_systems} × {c.system}: {len(self.table)} of "
                f"{len(self.all)} layouts fit; {best})")

    def _repr_markdown_(self) -> str:
        c = self.cluster
        head = (f"**{self.model.name}** on {c.n_systems} × {c.system} ({c.n_ranks} ranks at LNC={c.lnc}), "
                f"global batch {self.global_batch:,}: **{len(self.table)} of {len(self.all)} layouts fit** "
                f"with {self.min_headroom_fraction:.0%} of HBM kept free")
        if self.table.empty:
            return head
        b = self.table.iloc[0]
        return (f"{head}; best **{b.label}**, {b.tokens_per_s:,.0f} tokens/s, {b.step_s:.2f} s per "
                f"step, {b.memory_gib:.1f} GiB per chip")

    def layout(self, rank: int = 0) -> Layout:
        """The layout of row ``rank`` of :attr:`table` as a :class:`Layout`."""
        rank = integer("rank", rank, minimum=0, maximum=max(len(self.table) - 1, 0))
        if self.table.empty:
            raise ValueError("no layout fits: nothing to return (lower min_headroom_fraction or add chips)")
        r = self.table.iloc[rank]
        c = self.cluster
        return layout(self.model, int(r.tp), int(r.pp), int(r.dp), int(r.ep), zero_stage=int(r.zero_stage),
                      micro_batch=int(r.micro_batch), n_micro_batches=int(r.n_micro_batches),
                      recompute=str(r.recompute), system=c.system, n_systems=c.n_systems, lnc=c.lnc,
                      sequence_parallel=self.settings.get("sequence_parallel", True),
                      seq_len=self.settings.get("seq_len"), recipe_name=self.settings.get("recipe_name", "bf16-adam"),
                      dtype=self.settings.get("dtype", "bfloat16"),
                      grad_bytes_per_param=self.settings.get("grad_bytes_per_param"),
                      virtual_stages=int(r.virtual_stages),
                      capacity_factor=self.settings.get("capacity_factor", 1.0))

    def time_by_level(self, rank: int = 0) -> pd.DataFrame:
        """Where the step of row ``rank`` goes, by the level each part runs on.

        Returns
        -------
        pandas.DataFrame
            One row per step part: ``part`` (``compute``, ``tp_comm``, ``ep_comm``, ``pp_comm``,
            ``bubble``, ``dp_exposed``), ``level`` (the level its group crosses; ``"chips"``
            for compute, ``"idle"`` for the bubble), ``seconds`` and ``share`` of the step.

        Examples
        --------
        >>> p = plan("llama3-70b", system="trn2-ultraserver", n_systems=1, lnc=2, global_batch=256)
        >>> t = p.time_by_level()
        >>> t.part.tolist(), round(float(t.share.sum()), 12)
        (['compute', 'tp_comm', 'pp_comm', 'bubble', 'dp_exposed'], 1.0)
        """
        rank = integer("rank", rank, minimum=0, maximum=max(len(self.table) - 1, 0))
        if self.table.empty:
            raise ValueError("no layout fits: nothing to break down")
        r = self.table.iloc[rank]
        where = {"compute": "chips", "tp_comm": r.tp_level, "ep_comm": r.ep_level, "pp_comm": r.pp_level,
                 "bubble": "idle", "dp_exposed": r.dp_level}
        rows = [{"part": p, "level": where[p], "seconds": float(r[f"{p}_s"])} for p in _time_parts(self.model)]
        df = pd.DataFrame(rows)
        df["share"] = df["seconds"] / float(r.step_s)
        return df

    def fitting(self, min_headroom_fraction: float | None = None) -> pd.DataFrame:
        """The layouts of :attr:`all` that fit with ``min_headroom_fraction`` of HBM kept free,
        best first, ranked from 1 (the plan's own margin by default: :attr:`table`).

        The same rule as :attr:`LayoutEstimate.fits`, so a view can change the margin without
        searching again.

        Examples
        --------
        >>> p = plan("llama3-8b", system="trn2.48xlarge", global_batch=64, min_headroom_fraction=0.0)
        >>> len(p.fitting(0.5)) < len(p.fitting(0.0)) == len(p.table)
        True
        """
        if min_headroom_fraction is None:
            return self.table
        frac = in_range("min_headroom_fraction", min_headroom_fraction, 0.0, 1.0, high_open=True)
        a = self.all
        keep = a[_fits(a["headroom_gib"], a["hbm_gib"], frac)].reset_index(drop=True)
        return keep.assign(rank=np.arange(1, len(keep) + 1))[["rank", *a.columns]]

    def explain(self) -> list[str]:
        """Plain sentences about the search; kept for callers of the old name.

        The sentences are presentation: this delegates to
        :func:`trainium_lab.views.explain_plan`, which new code should call directly.
        """
        from trainium_lab import views  # presentation lives there; imported on use only

        return views.explain_plan(self)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def plan(model: str | ModelPreset, *, system: str = "trn2-ultraserver", n_systems: int = 1,
         lnc: int | None = None, global_batch: int = 1024, micro_batches: tuple[int, ...] = (1, 2, 4),
         zero_stages: tuple[int, ...] = (0, 1, 2, 3), recompute: tuple[str, ...] = RECOMPUTE_MODES,
         sequence_parallel: bool = True, mfu: float = 0.4, dp_overlap: float = 1.0,
         min_headroom_fraction: float = 0.10, seq_len: int | None = None, recipe_name: str = "bf16-adam",
         dtype: str = "bfloat16", n_tokens: float | None = None, tp_overlap: float = 0.0,
         grad_bytes_per_param: float | None = None, ep_degrees: tuple[int, ...] | None = None,
         virtual_stages: tuple[int, ...] = (1,), capacity_factor: float = 1.0) -> Plan:
    """Evaluate every valid layout of ``model`` on a cluster; keep those that fit; rank by tokens/s.

    Enumerates every ``(tp, ep, pp, dp)`` with ``tp·ep·pp·dp`` = ranks, ``tp`` dividing
    the attention heads (and dividing or a multiple of the KV heads), ``ep`` dividing
    the experts (MoE models; 1 for dense ones), ``pp`` at most the layers and ``dp·ep``
    dividing ``global_batch``; every ZeRO stage (only stage 0 when ``dp·ep = 1``),
    micro-batch size dividing the per-replica batch, recompute mode and number of
    virtual stages (``v > 1`` only where the interleaved schedule applies: ``pp >= 2``,
    ``pp·v <= L``, micro-batches a multiple of ``pp``); the number of micro-batches is
    then ``global_batch / (dp · ep · micro_batch)``. Ranks are laid out TP innermost,
    then EP, then PP, then DP (``"tp-ep-pp-dp"``, as Megatron launchers do), so EP groups
    land in the fastest domain that holds ``tp·ep`` ranks. The candidate grid is built
    with numpy and every formula runs on it at once; collective costs come from
    :mod:`trainium_lab.collectives` once per distinct ``(tp, ep, pp, dp)``, with the
    placement in closed form (:func:`trainium_lab.topology.group_spans`), so a cluster of
    100,000 chips is searched in well under a second.

    Parameters
    ----------
    model : str or ModelPreset
    system, n_systems, lnc :
        The cluster (:func:`trainium_lab.topology.cluster`).
    global_batch : int
        Sequences per optimizer step (fixed: layouts differ only in how they split it).
    micro_batches, zero_stages, recompute : tuple
        Options to search.
    mfu, dp_overlap, tp_overlap, min_headroom_fraction :
        As in :func:`evaluate` (``tp_overlap`` 0 by default: TP all-reduces fully exposed).
    grad_bytes_per_param : float, optional
        As in :func:`layout` (default 2, BF16 gradients).
    n_tokens : float, optional
        Token budget: adds ``days`` (training time at that throughput).
    ep_degrees : tuple of int, optional
        Expert-parallel degrees to search. Default: every divisor of the experts for an
        MoE model, ``(1,)`` for a dense one (which rejects ``ep > 1``). ``(1,)`` turns EP off.
    virtual_stages : tuple of int
        Virtual stages per device to search; default ``(1,)`` (plain 1F1B).
    capacity_factor : float
        MoE expert buffers relative to a balanced load, in [1, 16].

    Returns
    -------
    Plan
        ``Plan.table`` columns: ``rank, label, tp, pp, dp, tp_chips, zero_stage, micro_batch,
        n_micro_batches, recompute, tp_level, pp_level, dp_level, weights_gib, gradients_gib,
        optimizer_gib, activations_gib, memory_gib, hbm_gib, headroom_gib, fits, compute_s,
        tp_comm_s, pp_comm_s, bubble_s, dp_exposed_s, dp_comm_total_s, step_s, tokens_per_s,
        mfu_effective, ep, virtual_stages, ep_level, ep_chips, ep_comm_s`` (and ``days``).

    Examples
    --------
    >>> p = plan("llama3-405b", system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=512)
    >>> b = p.best
    >>> b.tp_level, bool(b.fits), int(b.tp * b.pp * b.dp) == p.cluster.n_ranks
    ('instance', True, True)
    >>> q = plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=4, lnc=2, global_batch=512)
    >>> int(q.best.tp * q.best.ep * q.best.pp * q.best.dp) == q.cluster.n_ranks, q.best.ep_level
    (True, 'instance')
    >>> plan("llama3-8b", system="trn2.48xlarge", ep_degrees=(1, 2))
    Traceback (most recent call last):
    ...
    ValueError: ep_degrees must be (1,) for Llama 3 8B: it is a dense model, with no experts to split (expert parallelism needs a mixture-of-experts model such as 'mixtral-8x7b'); got (1, 2)
    """
    m = resolve_model(model)
    c = topology.cluster(system, n_systems, lnc)
    global_batch = integer("global_batch", global_batch, minimum=1)
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    dp_overlap = in_range("dp_overlap", dp_overlap, 0.0, 1.0)
    tp_overlap = in_range("tp_overlap", tp_overlap, 0.0, 1.0)
    min_headroom_fraction = in_range("min_headroom_fraction", min_headroom_fraction, 0.0, 1.0, high_open=True)
    mbs = sorted(set(sequence("micro_batches", micro_batches, integer)))
    zs = sorted(set(sequence("zero_stages", zero_stages,
                             lambda name, x: integer(name, x, minimum=0, maximum=3))))
    modes = sequence("recompute", recompute, lambda name, x: choice(name, x, RECOMPUTE_MODES))
    if not mbs or not zs or not modes:
        raise ValueError("micro_batches, zero_stages and recompute must each list at least one option")
    vs = sorted(set(sequence("virtual_stages", virtual_stages,
                             lambda name, x: integer(name, x, minimum=1, maximum=m.n_layers))))
    capacity_factor = in_range("capacity_factor", capacity_factor, 1.0, 16.0)
    if ep_degrees is None:
        eps = _divisors(m.n_experts) if m.is_moe else [1]
    else:
        eps = sorted(set(sequence("ep_degrees", ep_degrees, lambda name, x: integer(name, x, minimum=1))))
        if not m.is_moe and eps != [1]:
            raise ValueError(f"ep_degrees must be (1,) for {m.name}: it is a dense model, with no experts "
                             f"to split (expert parallelism needs a mixture-of-experts model such as "
                             f"'mixtral-8x7b'); got {tuple(ep_degrees)}")
        for e in eps:
            if m.is_moe and m.n_experts % e:
                raise ValueError(f"ep_degrees must divide n_experts ({m.n_experts}) of {m.name}; got {e}")
    seq_len = m.seq_len if seq_len is None else integer("seq_len", seq_len, minimum=1)
    grads = recipe(recipe_name, grad_bytes_per_param).gradients
    if dtype not in specs.chip(c.chip).dense_flops_per_s:
        raise ValueError(f"dtype must be one of {sorted(specs.chip(c.chip).dense_flops_per_s)}; got {dtype!r}")
    if n_tokens is not None:
        n_tokens = positive("n_tokens", n_tokens)

    # ---- the degree grid: tp × ep × pp, dp what is left (numpy; candidate_degrees' rules)
    n_ranks = c.n_ranks
    divs = _divisors(n_ranks)
    tps = [d for d in divs if not (m.n_heads % d or (m.n_kv_heads % d and d % m.n_kv_heads))]
    pps = [d for d in divs if d <= m.n_layers]
    eps = [e for e in eps if n_ranks % e == 0]
    T, E, P = (g.ravel() for g in np.meshgrid(np.array(tps, dtype=np.int64), np.array(eps or [1], dtype=np.int64),
                                              np.array(pps, dtype=np.int64), indexing="ij"))
    prod = T * E * P
    ok = (n_ranks % prod == 0) & bool(eps)
    D = np.where(ok, n_ranks // np.maximum(prod, 1), 0)
    ok &= (D > 0) & (global_batch % np.maximum(D * E, 1) == 0)
    T, E, P, D = T[ok], E[ok], P[ok], D[ok]
    if len(T) == 0:
        raise ValueError(f"global_batch ({global_batch}) admits no layout on {n_ranks} ranks: no data-"
                         "parallel degree divides it together with the micro-batch sizes")
    comms = [_comm(c.system, c.n_systems, c.lnc, int(a), int(b), int(d), int(e))
             for a, e, b, d in zip(T.tolist(), E.tolist(), P.tolist(), D.tolist())]

    # ---- the options grid (ZeRO × micro-batch × recompute × v), degree-major as before
    def grid(zlist):
        g = np.meshgrid(np.array(zlist), np.array(mbs), np.array([_RECOMPUTE_INDEX[x] for x in modes]),
                        np.array(vs), indexing="ij")
        return np.stack([x.ravel() for x in g], axis=1).astype(np.int64)

    full, single = grid(zs), grid([0])
    rep_is_one = (D * E) == 1
    counts = np.where(rep_is_one, len(single), len(full))
    idx = np.repeat(np.arange(len(T)), counts)
    opts = np.empty((len(idx), 4), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    offset = np.arange(len(idx)) - np.repeat(starts, counts)
    one_row = rep_is_one[idx]
    opts[~one_row] = full[offset[~one_row]]
    opts[one_row] = single[offset[one_row]]
    z, mb, mode, v = opts.T
    tp, ep, pp, dp = T[idx], E[idx], P[idx], D[idx]
    per_replica = global_batch // (dp * ep)
    keep = per_replica % mb == 0
    nmb = per_replica // mb
    keep &= (v == 1) | ((pp >= 2) & (nmb % pp == 0) & (pp * v <= m.n_layers))
    if not keep.any():
        raise ValueError(f"global_batch ({global_batch}) admits no layout on {n_ranks} ranks: no data-"
                         "parallel degree divides it together with the micro-batch sizes")
    z, mb, mode, v, tp, ep, pp, dp, nmb, idx = (x[keep] for x in (z, mb, mode, v, tp, ep, pp, dp, nmb, idx))
    out = _core(m, c, seq_len, recipe_name, dtype, sequence_parallel, mfu, dp_overlap, tp_overlap, grads,
                tp, pp, dp, z, mb, nmb, mode, comms, idx, ep=ep, v=v, capacity_factor=capacity_factor)
    levels = {k: np.array([x.levels[k] for x in comms])[idx] for k in ("tp", "pp", "dp")}
    modes_arr = np.array(RECOMPUTE_MODES)[mode]
    hbm = out["hbm"]
    df = pd.DataFrame({
        "tp": tp, "pp": pp, "dp": dp, "tp_chips": tp / c.ranks_per_chip, "zero_stage": z,
        "micro_batch": mb, "n_micro_batches": nmb, "recompute": modes_arr,
        "tp_level": levels["tp"], "pp_level": levels["pp"], "dp_level": levels["dp"],
        **{f"{p}_gib": out[p] / GiB for p in MEMORY_PARTS},
        "memory_gib": out["memory"] / GiB, "hbm_gib": hbm / GiB, "headroom_gib": out["headroom"] / GiB,
        "fits": _fits(out["headroom"], hbm, min_headroom_fraction),
        **{f"{p}_s": out[p] for p in TIME_PARTS},
        "dp_comm_total_s": out["dp_comm_total"], "step_s": out["step"],
        "tokens_per_s": out["tokens_per_s"], "mfu_effective": out["mfu_effective"],
        "ep": ep, "virtual_stages": v,
        "ep_level": np.array([x.ep_level for x in comms])[idx],
        "ep_chips": np.array([x.ep_chips for x in comms])[idx], "ep_comm_s": out["ep_comm"],
    })
    ep_text = np.char.add("×EP", ep.astype(str)) if m.is_moe else np.full(len(ep), "")
    v_text = np.where(v > 1, np.char.add(" v", v.astype(str)), "")
    df.insert(0, "label", [f"TP{a}{e}×PP{b}×DP{d} ZeRO-{zz} mb{x}×{y} {r}{w}" for a, e, b, d, zz, x, y, r, w in
                           zip(tp.tolist(), ep_text.tolist(), pp.tolist(), dp.tolist(), z.tolist(), mb.tolist(),
                               nmb.tolist(), modes_arr.tolist(), v_text.tolist())])
    if n_tokens is not None:
        df["days"] = n_tokens / df["tokens_per_s"] / day
    df = df.sort_values(["tokens_per_s", "headroom_gib"], ascending=[False, False], kind="stable")
    df = df.reset_index(drop=True)
    fitting = df[df["fits"]].reset_index(drop=True)
    fitting.insert(0, "rank", np.arange(1, len(fitting) + 1))
    settings = dict(sequence_parallel=sequence_parallel, seq_len=seq_len, recipe_name=recipe_name,
                    dtype=dtype, mfu=mfu, dp_overlap=dp_overlap, tp_overlap=tp_overlap,
                    grad_bytes_per_param=grads, capacity_factor=capacity_factor)
    return Plan(fitting, df, m, c, global_batch, min_headroom_fraction, settings)


# --------------------------------------------------------------------- the worked example


def fully_sharded_table(n_params: float = 405e9, bytes_per_param: float | None = None,
                        system: str = "trn2-ultraserver", counts: tuple[int, ...] = (1, 2, 4), *,
                        grad_bytes_per_param: float | None = None) -> pd.DataFrame:
    """State per chip when every byte of it is sharded over all chips (ZeRO-3 / FSDP).

    The lower bound of any layout: ``n_params · bytes_per_param / n_chips``. By default
    ``bytes_per_param`` is BF16 mixed precision with Adam with ``grad_bytes_per_param``
    bytes per gradient (:func:`trainium_lab.sizing.training_state_bytes`): 2 (BF16,
    16 B/param) unless given; 4 (FP32, 18 B/param) is the Megatron-LM / DeepSpeed count.

    Returns
    -------
    pandas.DataFrame
        ``n_systems, n_chips, state_gib_per_chip, left_gib_per_chip, share_of_hbm``.

    Examples
    --------
    >>> t = fully_sharded_table()
    >>> t.state_gib_per_chip.round(1).tolist(), t.left_gib_per_chip.round(1).tolist()
    ([94.3, 47.1, 23.6], [1.7, 48.9, 72.4])
    """
    n_params = positive("n_params", n_params)
    state = training_state_bytes(n_params, bytes_per_param, grad_bytes_per_param=grad_bytes_per_param)
    return sharded_state_table(state, system, counts)


def worked_example(n_params: float = 405e9) -> dict[str, float]:
    """The chapter's 405B worked example, from this module's functions.

    Returns a dict: ``state_gib`` (16 B/param), ``ultraserver_hbm_gib``,
    ``share_of_one_ultraserver``, ``left_gib_one``, ``zero1_gib`` and ``zero1_left_gib``
    (TP16 chips × PP4 × DP2, ZeRO-1, state only), ``dp_allreduce_s`` (its EFA gradient
    all-reduce) and ``tp_allreduce_s`` (one TP all-reduce of a 4096 × 16384 BF16 block
    over 16 chips).

    Examples
    --------
    >>> w = worked_example()
    >>> round(w["state_gib"]), round(w["share_of_one_ultraserver"], 2), round(w["zero1_gib"], 1)
    (6035, 0.98, 58.9)
    >>> round(w["dp_allreduce_s"], 2), round(w["tp_allreduce_s"] * 1e3, 2)
    (0.51, 0.25)
    """
    n_params = positive("n_params", n_params)
    # Llama 3 405B's shape (data/model_presets.csv) at the nominal parameter count
    m = replace(preset("llama3-405b"), key="405b-nominal", name="405B (nominal)", n_params=n_params)
    lay = layout(m, tp=64, pp=4, dp=2, zero_stage=1, system="trn2-ultraserver", lnc=2,
                 micro_batch=1, n_micro_batches=16, recompute="selective")
    est = evaluate(lay)
    c = lay.cluster
    sysm = specs.system(c.system)
    r = recipe("bf16-adam")
    state = n_params * r.bytes_per_param
    cm = _comm(c.system, c.n_systems, c.lnc, 64, 4, 2)
    return {
        "state_gib": state / GiB,
        "ultraserver_hbm_gib": sysm.hbm_bytes_total / GiB,
        "share_of_one_ultraserver": state / sysm.hbm_bytes_total,
        "left_gib_one": (sysm.hbm_bytes_total - state) / sysm.n_chips / GiB,
        "zero1_gib": est.state_bytes / GiB,
        "zero1_left_gib": (est.hbm_bytes - est.state_bytes) / GiB,
        "dp_allreduce_s": est.dp_comm_s,
        "overlap_window_s": est.overlap_window_s,
        "tp_allreduce_s": cm.tp_ar[0] + cm.tp_ar[1] * 2 * 4096 * 16384,
    }
