"""One layout and its estimate: :func:`layout` validates a split of a model over a
cluster, :func:`evaluate` gives its memory per chip and first-order step time
(:class:`LayoutEstimate`), and :func:`custom_model` makes a dense model of your own.

References
----------
Rajbhandari et al., "ZeRO", arXiv:1910.02054 (2020), §5 and §7; Korthikanti et al.,
arXiv:2205.05198 (2022), Table 2 and §4.2.3; Narayanan et al., arXiv:2104.04473 (2021), §2.2;
Shoeybi et al., arXiv:1909.08053 (2019), §3; "DeepSpeed-MoE", arXiv:2201.05596 (2022), §5.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainium_lab import moe, specs, topology
from trainium_lab._validate import choice, in_range, integer
from trainium_lab.layouts.engine import _RECOMPUTE_INDEX, TORUS_LINK_MODELS, _comm, _core, _fits
from trainium_lab import sizing
from trainium_lab.sizing import ATTENTION_COUNTS, RECOMPUTE_MODES, ModelPreset, recipe, resolve_model
from trainium_lab.units import GiB, format_bytes, format_seconds

__all__ = ["Layout", "LayoutEstimate", "IGNORED", "MEMORY_PARTS", "TIME_PARTS", "MOE_TIME_PARTS",
           "layout", "evaluate", "custom_model", "OverlapDefault", "overlap_default", "resolve_dp_overlap"]

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
    "NeuronLink's per-hop latency (AWS: about 1-2 µs per Ring/KangaRing hop) for groups inside one "
    "system: those are charged only the latencies in data/links.csv, where only EFA has one (groups "
    "that span systems run chapter 03's collective model, hop latencies included); contention between "
    "groups beyond the per-chip sharing chapter 03 models",
    "traffic between the logical cores of one chip: costed 0, although AWS's intra-node page says "
    "large collectives are bound by HBM bandwidth (KangaRing cuts the HBM touches; chapter 03 fits "
    "the nccom-test rows' in-chip rate, which the planner does not use)",
    "the optimizer step, gradient clipping, loss and logits computation, and data loading",
    "uneven stages, in part: when pp does not divide the layers the busiest stage's ⌈L/pp⌉ layers "
    "set the pace (compute, TP and MoE traffic, activations), but parameters and optimizer state are "
    "still split evenly, and the embeddings and output layer on the first and last stages are left "
    "out (launchers rebalance with fewer layers there)",
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
    "interleaved schedules' finer points: the p·v chunks hold ⌊L/(p·v)⌋ or ⌈L/(p·v)⌉ layers, the "
    "busiest stage ⌈L/p⌉ of them, and the bubble is (p − 1)/v of that stage's slot (a larger chunk "
    "is not charged extra); the number of micro-batches must be a multiple of p (Megatron-LM's rule). "
    "The legacy NxD framework's own rule, virtual stages × PP = layers, is not left out: with "
    "framework='nxd' the search keeps only layouts that meet it (frameworks.runnable_mask)",
    "narrow expert matmuls are charged only for filling part of the 128-wide tensor engine "
    "(expert_matmul_efficiency, an assumption); with expert_tp < tp the experts' gradient reduction "
    "over the tp/expert_tp copies inside each TP group is not costed",
)


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
    return moe._custom_preset(name, n_layers, d_model, n_heads, n_kv_heads, ffn_dim, vocab_size, seq_len,
                              n_params=n_params)


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


# --------------------------------------------------------------------- the layout's name


def _tp_text(tp: int, ranks_per_chip: int) -> str:
    """A TP degree as ranks and chips: ``TP64 ranks = 16 chips``, ``TP2 ranks = 0.5 chip``.

    Degrees count ranks (logical NeuronCores); a reader sizing hardware thinks in chips, so
    every label says both. The one place this text is made (:func:`trainium_lab.views.tp_label`
    shows it on its own).
    """
    chips = tp / ranks_per_chip
    return f"TP{tp} ranks = {chips:g} chip{'s' if chips > 1 else ''}"


def _labels(tp, ep, pp, dp, zero_stage, micro_batch, n_micro_batches, recompute, virtual_stages,
            ranks_per_chip: int, is_moe: bool, etp=None) -> list[str]:
    """The one label of a layout, for :meth:`Layout.label` and the planner's ``label`` column:
    one string per element of the equal-length sequences (lists of ints; recompute modes).

    >>> _labels([64], [1], [4], [2], [1], [1], [16], ["selective"], [1], 4, False)
    ['TP64 ranks = 16 chips × PP4×DP2 ZeRO-1 mb1×16 selective']
    >>> _labels([8], [8], [1], [2], [3], [4], [1], ["full"], [2], 4, True)
    ['TP8 ranks = 2 chips × EP8×PP1×DP2 ZeRO-3 mb4×1 full v2']
    >>> _labels([8], [8], [1], [2], [3], [4], [1], ["full"], [2], 4, True, etp=[2])
    ['TP8 ranks = 2 chips × EP8 (ETP2)×PP1×DP2 ZeRO-3 mb4×1 full v2']
    """
    tp_text = {t: _tp_text(t, ranks_per_chip) for t in set(tp)}
    etp = list(tp) if etp is None else list(etp)
    ep_text = ([f"EP{e}{f' (ETP{x})' if x != t else ''}×" for e, x, t in zip(ep, etp, tp)] if is_moe
               else [""] * len(tp))
    v_text = [f" v{v}" if v > 1 else "" for v in virtual_stages]
    return [f"{tp_text[a]} × {e}PP{b}×DP{d} ZeRO-{z} mb{x}×{y} {r}{w}" for a, e, b, d, z, x, y, r, w in
            zip(tp, ep_text, pp, dp, zero_stage, micro_batch, n_micro_batches, recompute, v_text)]


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
    expert_tp : int
        The experts' own tensor-parallel degree (Megatron-Core's ETP, NxD's
        ``moe_tp_degree``), dividing ``tp``; equal to ``tp`` unless set.
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
    expert_tp: int = 0

    def __post_init__(self) -> None:
        if not self.expert_tp:
            object.__setattr__(self, "expert_tp", self.tp)

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
        """Short description, TP in ranks and in chips: ``TP64 ranks = 16 chips × PP4×DP2 ZeRO-1
        mb1×16 selective`` (the same text as the planner's ``label`` column)."""
        return _labels([self.tp], [self.ep], [self.pp], [self.dp], [self.zero_stage], [self.micro_batch],
                       [self.n_micro_batches], [self.recompute], [self.virtual_stages],
                       self.cluster.ranks_per_chip, self.model.is_moe, etp=[self.expert_tp])[0]

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
           system: str | specs.System = "trn2-ultraserver", n_systems: int | None = None, lnc: int | None = None,
           seq_len: int | None = None, recipe_name: str = "bf16-adam", dtype: str = "bfloat16",
           grad_bytes_per_param: float | None = None, virtual_stages: int = 1,
           capacity_factor: float = 1.0, expert_tp: int | None = None) -> Layout:
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
    system : str or specs.System
        One of :data:`trainium_lab.topology.SYSTEMS`, or its record (resolved once, at the edge:
        :func:`trainium_lab.specs.resolve_system`).
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
    expert_tp : int, optional
        MoE only: the experts' own TP degree, dividing ``tp`` (default ``tp``, every expert
        split like the attention). Megatron-Core calls it ETP ("parallel folding"), NxD
        Inference ``moe_tp_degree`` (AWS's Qwen3-235B recipe: ``moe_tp_degree`` 2 and
        ``moe_ep_degree`` 32 under attention TP 64). The ``tp/expert_tp`` ranks that share an
        expert shard hold copies of it (expert data parallelism) and split its tokens.

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
    etp = tp if expert_tp is None else integer("expert_tp", expert_tp, minimum=1, maximum=tp)
    if tp % etp:
        raise ValueError(f"expert_tp must divide tp ({tp}); got expert_tp={etp}")
    if etp != tp and not m.is_moe:
        raise ValueError(f"expert_tp must equal tp for {m.name}: it is a dense model, with no experts; "
                         f"got expert_tp={etp}")
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
    c = topology.cluster(base.system_spec, n_systems, base.lnc)
    topology.check_degrees(c.n_ranks, tp, pp, dp, ep)
    chip = c.chip_spec
    if dtype not in chip.dense_flops_per_s:
        raise ValueError(f"dtype must be one of {sorted(chip.dense_flops_per_s)} for {c.chip}; got {dtype!r}")
    return Layout(m, tp, pp, dp, ep, zero_stage, micro_batch, n_micro_batches, recompute,
                  bool(sequence_parallel), c, seq_len, recipe_name, dtype, float(grads), virtual_stages,
                  capacity_factor if m.is_moe else 1.0, etp)


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
        ``pp_comm``, ``bubble``, ``dp_exposed`` (and ``ep_comm``, the expert exchanges, for
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
    expert_matmul_efficiency : float
        Share of the tensor engine the expert matmuls fill (1 for dense models and whole tiles).
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
    expert_matmul_efficiency: float = 1.0

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


@dataclass(frozen=True)
class OverlapDefault:
    """A labelled default of an overlap input (``data/overlap.csv``).

    Attributes
    ----------
    parameter : str
    default, low, high : float
        The default and the plausible range the planner reports its winner across.
    basis : str
        ``"assumption"`` (no measurement gives it) or ``"measured"``.
    source_id, note : str
    """

    parameter: str
    default: float
    low: float
    high: float
    basis: str
    source_id: str
    note: str

    def __repr__(self) -> str:
        return (f"OverlapDefault({self.parameter}={self.default:g}, range [{self.low:g}, {self.high:g}], "
                f"{self.basis})")

    def _repr_markdown_(self) -> str:
        return (f"**{self.parameter}** = {self.default:.0%} ({self.basis}), plausible range "
                f"{self.low:.0%}–{self.high:.0%}: {self.note}")


@functools.cache
def _overlap_rows() -> dict[str, OverlapDefault]:
    df = specs.read_data_csv("overlap.csv")
    return {str(r.parameter): OverlapDefault(str(r.parameter), float(r["default"]), float(r.low), float(r.high),
                                             str(r.basis), str(r.source_id), str(r.note))
            for _, r in df.iterrows()}


def overlap_default(parameter: str = "dp_overlap") -> OverlapDefault:
    """The labelled default and plausible range of an overlap input (``data/overlap.csv``).

    Examples
    --------
    >>> overlap_default()
    OverlapDefault(dp_overlap=1, range [0.5, 1], assumption)
    """
    rows = _overlap_rows()
    return rows[choice("parameter", parameter, tuple(rows))]


def resolve_dp_overlap(dp_overlap: float | None) -> float:
    """``dp_overlap`` checked to lie in [0, 1]; ``None`` is the labelled default (:func:`overlap_default`)."""
    if dp_overlap is None:
        return overlap_default("dp_overlap").default
    return in_range("dp_overlap", dp_overlap, 0.0, 1.0)


def evaluate(lay: Layout, *, mfu: float | None = None, dp_overlap: float | None = None, tp_overlap: float = 0.0,
             min_headroom_fraction: float = 0.10, attention: str = "causal",
             torus: str = "per-device", ep_dispatch: str = "all-gather",
             narrow_expert_penalty: bool = True, dropless_block_size: int | None = None,
             overlap_schedule=None) -> LayoutEstimate:
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
    data-parallel traffic that the backward pass does not hide. A slot is the busiest
    stage's: the pipeline runs at the pace of its slowest stage (§2.2), so when ``p`` does
    not divide the ``L`` layers a stage computes ``⌈L/p⌉/L`` of the model's FLOPs and runs
    the TP all-reduces (and MoE all-to-alls) of ``⌈L/p⌉`` layers (``⌈L_MoE/p⌉`` MoE ones),
    while the effective MFU still counts the model's true FLOPs. Megatron-LM refuses such
    a split unless told the first and last stages' layers
    (``--decoder-first-pipeline-num-layers``, ``--decoder-last-pipeline-num-layers``);
    this is the pace of the best such split. Interleaved with ``v``
    virtual stages: a bubble of ``(p − 1)/v`` slots, ``v`` times the pipeline sends and
    ``1 + (p − 1)/(p·v)`` times the first stage's activations (§2.2.2; Korthikanti et al.
    §4.2.3); the ``p·v`` chunks hold ``⌊L/(p·v)⌋`` or ``⌈L/(p·v)⌉`` layers (each at least
    one, as :func:`layout` checks), so the busiest stage again holds ``⌈L/p⌉``. MoE models (:mod:`trainium_lab.moe`): experts over ``tp·pp·ep`` ranks, the
    rest over ``tp·pp`` (experts over ``expert_tp·pp·ep`` when the layout sets ``expert_tp``);
    compute of the active parameters (narrow expert matmuls and dropless blocks charged as
    below); dispatch and combine in every MoE layer, forward and backward, at the level the EP
    group lands on: an all-gather and a reduce-scatter as NxD runs them, or all-to-alls
    (``ep_dispatch``).

    Parameters
    ----------
    lay : Layout
        From :func:`layout`.
    mfu : float
        Share of peak FLOP/s reached *while computing*, in (0, 1]; bubble and
        exposed communication come on top, so the step's effective MFU is lower.
    dp_overlap : float, optional
        Share of the backward window that can hide DP traffic (and, under ZeRO-3, the weight
        gathers), in [0, 1] (1 = bucketed, perfectly overlapped reductions; 0 = none).
        Default: the labelled assumption of ``data/overlap.csv`` (:func:`overlap_default`: 1.0,
        plausible range 0.5–1.0; no Trainium measurement gives it).
    overlap_schedule : trainium_lab.frameworks.OverlapSchedule, optional
        Which data-parallel collectives the framework's schedule places behind compute
        (:func:`trainium_lab.frameworks.overlap_schedule`); the rest is exposed. Default: the
        teaching schedule (all of them).
    tp_overlap : float
        Share of the tensor-parallel collective time hidden behind computation, in [0, 1].
        0 (the default) puts every TP all-reduce on the critical path: in Megatron-LM's
        tensor parallelism each one sits between two matrix multiplies that depend on it
        (Shoeybi et al. 2019, §3, operators *f* and *g*), and Megatron-LM overlaps them with
        GEMMs only when asked (its ``--tp-comm-overlap`` option, off by default). Set the
        share your framework hides, once you have measured it.
    min_headroom_fraction : float
        Share of HBM to keep free for the runtime, buffers and fragmentation, in [0, 1).
    attention : {"causal", "full"}
        How the attention-score FLOPs are counted, in the compute time and in the effective
        MFU (:func:`trainium_lab.sizing.training_flops`): ``"causal"`` (default) counts the
        unmasked half of the score matrix, ``6·L·s·h`` per token, as Megatron-LM's
        ``num_floating_point_operations`` does; ``"full"`` counts all of it, ``12·L·s·h``, as
        Narayanan et al. 2021 (their FLOPs formula) and Korthikanti et al. 2022 (model FLOPs)
        do. Compare an MFU only with one counted the same way.
    torus : {"per-device", "own-links"}
        How a group inside one instance's 2D torus (Trn1, Trn2) is charged. AWS gives the
        torus bandwidth per device (1,024 GB/s on Trn2), with no per-link figure and no
        direction. ``"per-device"`` (default): every TP, DP and EP collective gets that whole
        figure, and an all-to-all inside the instance is a one-way ring, ``(n−1)/2 · S/B``
        (:func:`trainium_lab.collectives.ring_all_to_all_s`). ``"own-links"``: a group of
        ``n`` chips gets only the links joining its members,
        :func:`trainium_lab.collectives.torus_group_bytes_per_s` (a quarter of the figure for
        2 chips, all of it for 16; the links assumed equal), and an all-to-all inside the
        instance takes ``(n−1)/n · h̄ · S/B`` over shortest torus paths
        (:func:`trainium_lab.collectives.torus_average_hops`; ``h̄ = 32/15`` on 16 chips, so
        ``2 · S/B`` instead of ``7.5 · S/B``). The first is optimistic for small groups, the
        second's ring pessimistic for the all-to-all; chapter 03 discusses both. Pipeline
        sends, levels that are not a 2D torus (Trn2 UltraServer's ring of instances, EFA) and
        Trainium3's switch are costed the same either way.
    ep_dispatch : {"all-gather", "all-to-all"}
        MoE only: how the EP group exchanges tokens (:data:`trainium_lab.moe.EP_DISPATCH_METHODS`).
        ``"all-gather"`` (default) is what AWS's libraries run: every rank gathers all the
        group's tokens, then the outputs are reduce-scattered (NxD Inference MoE deep dive;
        neuronx-distributed ``modules/moe/model.py``), about ``ep/k`` times the bytes of an
        all-to-all (:func:`trainium_lab.moe.ep_byte_ratio`). ``"all-to-all"``: GShard's and
        Megatron-Core's dispatch and combine (AWS lists All-to-All-v as future work).
    narrow_expert_penalty : bool
        MoE only: charge expert matmuls whose width per rank (``expert_ffn_dim / expert_tp``)
        fills the 128-wide tensor engine only in part at that share of its peak
        (:func:`trainium_lab.layouts.engine.expert_matmul_efficiency`, an assumption built
        on AWS's ">= 128" rule); default on.
    dropless_block_size : int, optional
        MoE only: cost dropless MoE as NxD runs it, through the blockwise matmul with blocks of
        this many tokens (AWS's examples use 512), instead of a capacity factor (which must
        then be 1): each rank's experts compute ``⌈mb·s·k/(tp·B)⌉ + E/ep − 1`` blocks
        (:func:`trainium_lab.moe.blockwise_blocks`); the provisioned slots are the bound, since
        NxD skips fully padded blocks on the chip.

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
    mfu = sizing.default_mfu() if mfu is None else in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    dp_overlap = resolve_dp_overlap(dp_overlap)
    tp_overlap = in_range("tp_overlap", tp_overlap, 0.0, 1.0)
    min_headroom_fraction = in_range("min_headroom_fraction", min_headroom_fraction, 0.0, 1.0, high_open=True)
    attention = choice("attention", attention, ATTENTION_COUNTS)
    torus = choice("torus", torus, TORUS_LINK_MODELS)
    ep_dispatch = choice("ep_dispatch", ep_dispatch, moe.EP_DISPATCH_METHODS)
    if narrow_expert_penalty not in (True, False):
        raise ValueError(f"narrow_expert_penalty must be True or False, got {narrow_expert_penalty!r}")
    dropless = _dropless(dropless_block_size, lay.capacity_factor)
    from trainium_lab import frameworks

    if overlap_schedule is None:
        sched = frameworks.overlap_schedule(None)  # the teaching schedule: every collective behind compute
    elif isinstance(overlap_schedule, frameworks.OverlapSchedule):
        sched = overlap_schedule
    else:
        raise ValueError("overlap_schedule must be a frameworks.OverlapSchedule (frameworks.overlap_schedule"
                         f"(...)) or None; got {overlap_schedule!r}"[:200])
    c = lay.cluster
    cm = _comm(c.system_spec, c.n_systems, c.lnc, lay.tp, lay.pp, lay.dp, lay.ep, torus)
    one = lambda v: np.array([v])  # noqa: E731
    out = _core(lay.model, c, lay.seq_len, lay.recipe, lay.dtype, lay.sequence_parallel, mfu, dp_overlap,
                tp_overlap, lay.grad_bytes_per_param,
                one(lay.tp), one(lay.pp), one(lay.dp), one(lay.zero_stage), one(lay.micro_batch),
                one(lay.n_micro_batches), one(_RECOMPUTE_INDEX[lay.recompute]), [cm], one(0),
                ep=one(lay.ep), v=one(lay.virtual_stages), capacity_factor=lay.capacity_factor,
                attention=attention, etp=one(lay.expert_tp), ep_dispatch=ep_dispatch,
                narrow_expert_penalty=narrow_expert_penalty, dropless_block_size=dropless,
                gather_overlap=sched.gather_overlap, reduce_overlap=sched.reduce_overlap)
    f = {k: float(v[0]) for k, v in out.items()}
    levels = dict(cm.levels)
    if lay.model.is_moe:
        levels["ep"] = cm.ep_level
    return LayoutEstimate(lay, {k: f[k] for k in MEMORY_PARTS}, f["hbm"],
                          {k: f[k] for k in _time_parts(lay.model)}, f["dp_comm_total"], f["bwd_window"],
                          levels, f["tokens_per_s"], f["mfu_effective"], mfu, min_headroom_fraction,
                          f["expert_matmul_efficiency"])


def _dropless(block_size, capacity_factor: float) -> int | None:
    """``dropless_block_size`` checked: None, or blocks of 1 to 2^20 tokens with no capacity factor."""
    if block_size is None:
        return None
    bs = integer("dropless_block_size", block_size, minimum=1, maximum=2**20)
    if capacity_factor != 1.0:
        raise ValueError(f"capacity_factor must be 1 with dropless_block_size (dropless MoE has no "
                         f"capacity); got {capacity_factor}")
    return bs


def _time_parts(m: ModelPreset) -> tuple[str, ...]:
    return MOE_TIME_PARTS if m.is_moe else TIME_PARTS
