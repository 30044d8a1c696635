"""Serving a language model on Trainium: KV cache, prefill and decode bounds, batching,
capacity, buckets and speculative decoding.

A served model answers a request in two phases. **Prefill** (NxD Inference calls it
*context encoding*) runs the whole prompt through the model at once and writes its keys and
values into the **KV cache**; it does many FLOPs per byte read and is bound by compute.
**Decode** (*token generation*) then produces one token per step for every sequence in the
batch; each step reads every weight once and every sequence's cached keys and values, and does
only about two FLOPs per weight per sequence, so it is bound by HBM bandwidth until the batch
is large. This module turns that into numbers, with every hardware figure from
:mod:`trainium_lab.specs`, the roofline of :mod:`trainium_lab.roofline`, logical cores from
:mod:`trainium_lab.cores` and the tensor-parallel all-reduce of chapter 03
(:mod:`trainium_lab.collectives` on a :mod:`trainium_lab.topology` placement).

Public API, by question
-----------------------
*How big is the KV cache?*
    :func:`kv_cache_bytes_per_token`, :func:`model_kv_bytes_per_token`, :func:`kv_cache_bytes`,
    :func:`paged_kv_blocks`, :func:`paged_kv_cache_bytes`, :func:`kv_growth_table`
*What does one step cost?*
    :class:`Replica`, :func:`replica` (a model on ``tp × pp`` logical cores),
    :func:`decode_flops_per_token`, :func:`prefill_flops`, :func:`step_bound`,
    :func:`prefill_step`, :func:`decode_step`, :func:`tp_allreduce_s`,
    :func:`decode_compute_bound_batch`, :func:`kv_bound_context_len`, :func:`roofline_points`,
    :func:`chip_decode_table`
*What does a request stream see?*
    :func:`serve_stream` (TTFT, TPOT, tokens/s per chip), :func:`batching_curve`
*What fits?*
    :func:`capacity`, :func:`bucket_sizes`, :func:`pick_bucket`, :func:`padding_waste`,
    :func:`bucket_tradeoff`, :func:`check_launch`
*Speculative decoding*
    :func:`expected_tokens_per_pass`, :func:`tokens_per_pass_pmf`, :func:`speculative_speedup`,
    :func:`speculative_operations_factor`, :func:`speculative_speedup_lower_bound`,
    :func:`best_speculation_length`, :func:`speculation_table`, :func:`simulate_speculation`,
    :func:`speculative_decode`
*Sourced software facts* (``data/serving.csv``)
    :func:`serving_fact`
*What NxD Inference and vLLM Neuron do* (issue 28)
    :func:`speculation_methods`, :func:`eagle_draft_model` (which speculation each library runs);
    :func:`attention_decode_intensity`, :func:`weight_critical_batch`, :func:`quantized_weights_table`
    (the two parts of a decode step, quantised weights); :func:`kv_sharding`,
    :func:`kv_sharding_table` (replication against flash decoding, attention DP and context
    parallelism); :func:`neff_memory_bytes` (the shared scratchpad); :func:`prefix_cache_ttft_ratio`
    (``reality.prefix_cache_check`` holds it against AWS's 70B table); :func:`disaggregated_server_ratio`;
    :func:`expected_unique_experts`, :func:`moe_decode_expert_bytes` (selective loading);
    :func:`cost_per_million_tokens_usd`, :func:`cost_table` (Trn1, Trn2 and Inferentia2 instances)

Degrees count **ranks** (logical NeuronCores), as in chapters 03 and 05: at LNC=2 a Trainium2
chip runs 4 ranks, so ``tp=64`` is 16 chips. What the first-order model leaves out is listed
in :data:`IGNORED`.

References
----------
W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention" (vLLM), SOSP 2023, arXiv:2309.06180, §3 (KV cache per token) and §4 (blocks).
Y. Leviathan, M. Kalman, Y. Matias, "Fast Inference from Transformers via Speculative
Decoding", ICML 2023, arXiv:2211.17192, Equation (1), Theorem 3.8, Corollary 3.9,
Theorem 3.11, Table 1.
M. Shoeybi et al., "Megatron-LM", arXiv:1909.08053 (2019), §3 (two all-reduces per layer in
the forward pass).
J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361 (2020), Table 1
(forward FLOPs per token: 2N plus the attention term).
AWS Neuron docs: "NxD Inference Features Configuration Guide" (bucketing, KV-head replication,
speculation length), "vLLM User Guide for NxD Inference", "Neuron Device Memory", "Logical
NeuronCore configuration", "Neuron Runtime configuration" (``NEURON_RT_NUM_CORES``); the vLLM
Neuron plugin's features guide and its "Decode Context-Length Bucketing" design note.

Examples
--------
>>> from trainium_lab.units import KiB
>>> model_kv_bytes_per_token("llama3-8b") / KiB   # Llama 3.1 8B in BF16
128.0
>>> round(expected_tokens_per_pass(0.8, 5), 2)    # Leviathan et al., Table 1
3.69
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from trainium_lab import collectives, cores, dtypes, roofline, specs, topology
from trainium_lab._validate import choice, finite_number, in_range, integer, positive
from trainium_lab.layouts import resolve_model
from trainium_lab.sizing import ModelPreset
from trainium_lab.units import MB, TB, TFLOPS, GiB, format_bytes, format_seconds, hour, ms

__all__ = [
    "IGNORED", "FORWARD_ALLREDUCES_PER_LAYER",
    "kv_cache_bytes_per_token", "model_kv_bytes_per_token", "kv_cache_bytes", "paged_kv_blocks",
    "paged_kv_cache_bytes", "kv_growth_table",
    "Replica", "replica", "decode_flops_per_token", "prefill_flops",
    "StepEstimate", "step_bound", "tp_collective_fixed_s", "exact_weight_bytes", "tp_collective_bytes_s", "prefill_step", "decode_step", "tp_allreduce_s",
    "decode_compute_bound_batch", "kv_bound_context_len", "roofline_points", "chip_decode_table",
    "StreamEstimate", "serve_stream", "batching_curve",
    "Capacity", "capacity", "bucket_sizes", "pick_bucket", "padding_waste", "bucket_tradeoff",
    "LaunchCheck", "check_launch",
    "expected_tokens_per_pass", "tokens_per_pass_pmf", "speculative_speedup",
    "speculative_operations_factor", "speculative_speedup_lower_bound",
    "best_speculation_length", "speculation_table", "SpeculationSimulation",
    "simulate_speculation", "SpeculativeEstimate", "speculative_decode",
    "serving_fact",
    "speculation_methods", "eagle_draft_model", "attention_decode_intensity", "weight_critical_batch",
    "WEIGHT_FORMATS", "quantized_weights_table", "QUANTIZATION_MODES", "QuantizationMode",
    "quantization_modes_table", "KV_SHARDING", "KVSharding", "kv_sharding",
    "kv_sharding_table", "neff_memory_bytes", "prefix_cache_ttft_ratio",
    "disaggregated_server_ratio", "expected_unique_experts",
    "SELECTIVE_LOADING_ALPHA", "moe_decode_expert_bytes", "cost_per_million_tokens_usd", "cost_table",
    "KV_LAYOUT_EXCHANGES_PER_LAYER",
]

#: what the first-order serving model leaves out (the notebook discusses each)
IGNORED: tuple[str, ...] = (
    "kernel efficiency below the roofline beyond what the calibration absorbs: decode reads "
    "weights and KV at full HBM bandwidth (on Trn2 the fitted collective cost takes up the "
    "rest), prefill runs at the calibrated share of peak",
    "activations, logits and sampling buffers in HBM (small next to weights and KV at decode)",
    "replicated weights other than the K/V projections (norms, embeddings); the weights are "
    "split evenly over the tp × pp ranks",
    "overlap of the tensor-parallel all-reduces with compute: they are added, fully exposed, "
    "each at the calibrated fixed cost plus its bytes",
    "pipeline point-to-point sends between stages (one activation per token: tiny)",
    "queueing: TTFT is the prefill time of the prompt alone, with no request waiting ahead of it",
    "in the step model: prefix caching (prefix_cache_ttft_ratio), chunked or segmented prefill, "
    "and disaggregated prefill/decode (disaggregated_server_ratio)",
)

#: all-reduces one tensor-parallel layer runs in a forward pass (attention and MLP blocks),
#: Shoeybi et al. 2019, §3; a training step adds two more in the backward pass
FORWARD_ALLREDUCES_PER_LAYER = 2

_MAX_TOKENS = 10**8       # context lengths, prompts, outputs
_MAX_BATCH = 10**7        # sequences
_MAX_BYTES = 1e30         # bytes, FLOPs and rates: far beyond any real value, far below overflow


# --------------------------------------------------------------------------- sourced facts


@functools.cache
def _serving_facts() -> dict[str, tuple[object, str, str]]:
    df = specs.read_data_csv("serving.csv")
    out: dict[str, tuple[object, str, str]] = {}
    for row in df.itertuples():
        if row.unit == "list":
            value: object = tuple(v for v in str(row.value).split(";") if v)
        elif row.unit == "MB":
            value = float(row.value) * MB
        else:
            value = float(row.value)
        out[row.quantity] = (value, row.unit, row.source)
    return out


def serving_fact(quantity: str):
    """A sourced software fact from ``data/serving.csv``, in base units (bytes, fractions, tokens).

    Parameters
    ----------
    quantity : str
        ``"microcode_bytes_per_physical_core"``, ``"gpu_memory_utilization_default"``,
        ``"kv_budget_cap_fraction_default"``, ``"auto_bucket_min_tokens"`` or
        ``"vllm_neuron_parallelism"``.

    Examples
    --------
    >>> serving_fact("gpu_memory_utilization_default")
    0.9
    >>> serving_fact("vllm_neuron_parallelism")
    ('tensor', 'data', 'expert')
    """
    facts = _serving_facts()
    return facts[choice("quantity", quantity, tuple(facts))][0]


# --------------------------------------------------------------------------- validation helpers


def _tokens(name: str, value: object, minimum: int = 0) -> int:
    return integer(name, value, minimum=minimum, maximum=_MAX_TOKENS)


def _batch(name: str, value: object) -> int:
    return integer(name, value, minimum=1, maximum=_MAX_BATCH)


def _amount(name: str, value: object, *, allow_zero: bool = True) -> float:
    out = positive(name, value, allow_zero=allow_zero)
    if out > _MAX_BYTES:
        raise ValueError(f"{name} must be at most {_MAX_BYTES:g}, got {value!r}")
    return out


def _rate(name: str, value: object) -> float:
    return _amount(name, value, allow_zero=False)


def _fraction(name: str, value: object) -> float:
    return in_range(name, value, 0.0, 1.0, low_open=True)


def _dtype_bytes(name: str, dtype: object) -> float:
    return dtypes.number_format(dtype, name).bytes_per_element


#: integer weight formats the Neuron serving stacks store weights in, with their bytes per weight
#: (per-channel scales, one per output row, are left out: under 0.1 % for these models). vLLM's
#: "Neuron INT8 Quantization" example (docs.vllm.ai, v0.8.2) serves int8 weights on Neuron; the
#: floating-point formats (``float8_e4m3fn``, AWS's 405B FP8 tutorial) come from ``dtypes``.
INTEGER_WEIGHT_BYTES = {"int8": 1.0}


def _weight_dtype(dtype: object) -> str:
    if isinstance(dtype, str) and dtype.lower() in INTEGER_WEIGHT_BYTES:
        return dtype.lower()
    _dtype_bytes("weight_dtype", dtype)
    return dtype


def _weight_bytes_per_element(dtype: str) -> float:
    return INTEGER_WEIGHT_BYTES[dtype] if dtype in INTEGER_WEIGHT_BYTES else _dtype_bytes("weight_dtype", dtype)


def _check_context(context_len: int, max_model_len: object) -> None:
    if max_model_len is None:
        return
    mml = _tokens("max_model_len", max_model_len, minimum=1)
    if context_len > mml:
        raise ValueError(f"context_len must be at most max_model_len ({mml}), the longest sequence "
                         f"the compiled model accepts; got {context_len}")


# --------------------------------------------------------------------------- KV cache


def kv_cache_bytes_per_token(n_layers: int, n_kv_heads: int, head_dim: int,
                             bytes_per_element: float = 2.0) -> float:
    """Bytes of KV cache one token keeps: a key and a value vector per KV head in every layer.

    ``2 × n_layers × n_kv_heads × head_dim × bytes_per_element``. With grouped-query
    attention ``n_kv_heads`` is smaller than the number of query heads, and so is the cache.

    Parameters
    ----------
    n_layers, n_kv_heads, head_dim : int
        Layers, key/value heads, dimension of one head (each >= 1).
    bytes_per_element : float
        Bytes per cached element: 2 for BF16/FP16, 1 for FP8.

    Returns
    -------
    float
        Bytes per token (all layers, one sequence).

    References
    ----------
    Kwon et al. 2023 (vLLM), §3: "2 (key and value vectors) × 5120 (hidden state size) × 40
    (number of layers) × 2 (bytes per FP16)" = 800 KB for OPT-13B.

    Examples
    --------
    >>> kv_cache_bytes_per_token(40, 40, 128) / 1024   # OPT-13B, FP16: the vLLM paper's 800 KB
    800.0
    >>> kv_cache_bytes_per_token(32, 8, 128) / 1024    # Llama 3.1 8B, BF16
    128.0
    """
    n_layers = integer("n_layers", n_layers, minimum=1, maximum=10**6)
    n_kv_heads = integer("n_kv_heads", n_kv_heads, minimum=1, maximum=10**6)
    head_dim = integer("head_dim", head_dim, minimum=1, maximum=10**6)
    b = in_range("bytes_per_element", bytes_per_element, 0.0, 64.0, low_open=True)
    return 2.0 * n_layers * n_kv_heads * head_dim * b


def _head_dim(m: ModelPreset) -> int:
    if m.d_model % m.n_heads:
        raise ValueError(f"model must have d_model ({m.d_model}) divisible by n_heads ({m.n_heads})")
    return m.d_model // m.n_heads


def model_kv_bytes_per_token(model: str | ModelPreset, kv_dtype: str = "bfloat16") -> float:
    """KV-cache bytes per token of a model preset (or :func:`trainium_lab.layouts.custom_model`).

    ``head_dim = d_model / n_heads``; no replication (see :class:`Replica` for what a
    tensor-parallel replica stores).

    Examples
    --------
    >>> [model_kv_bytes_per_token(m) / 1024 for m in ("llama3-8b", "llama3-70b", "llama3-405b")]
    [128.0, 320.0, 504.0]
    >>> model_kv_bytes_per_token("llama3-70b", "float8_e4m3fn") / 1024
    160.0
    """
    m = resolve_model(model)
    return kv_cache_bytes_per_token(m.n_layers, m.n_kv_heads, _head_dim(m),
                                    _dtype_bytes("kv_dtype", kv_dtype))


def kv_cache_bytes(kv_bytes_per_token: float, context_len: int, batch: int = 1) -> float:
    """KV cache of ``batch`` sequences of ``context_len`` tokens: a plain product.

    Examples
    --------
    >>> round(kv_cache_bytes(819200, 2048) / 1e9, 2)   # vLLM paper: "as much as 1.6 GB"
    1.68
    """
    kv = _amount("kv_bytes_per_token", kv_bytes_per_token)
    context_len = _tokens("context_len", context_len)
    batch = _batch("batch", batch)
    return kv * context_len * batch


def paged_kv_blocks(context_len: int, block_size: int = 32, max_model_len: int | None = None) -> int:
    """Blocks of ``block_size`` tokens that hold ``context_len`` tokens: ``ceil(context / block)``.

    vLLM's PagedAttention stores the cache in fixed-size blocks; the last one is part-empty.

    Raises
    ------
    ValueError
        Naming ``context_len`` if it exceeds ``max_model_len``.

    References
    ----------
    Kwon et al. 2023, §4.1-4.2 (KV blocks); vLLM Neuron: ``num_gpu_blocks_override`` at least
    ``ceil(max_model_len / block_size) × max_num_seqs`` (vLLM User Guide for NxD Inference,
    Known Issues).

    Examples
    --------
    >>> paged_kv_blocks(1000, 32), paged_kv_blocks(1024, 32), paged_kv_blocks(1025, 32)
    (32, 32, 33)
    >>> paged_kv_blocks(20000, 32, max_model_len=16384)
    Traceback (most recent call last):
    ...
    ValueError: context_len must be at most max_model_len (16384), the longest sequence the compiled model accepts; got 20000
    """
    context_len = _tokens("context_len", context_len)
    block_size = integer("block_size", block_size, minimum=1, maximum=10**6)
    _check_context(context_len, max_model_len)
    return -(-context_len // block_size)


def paged_kv_cache_bytes(kv_bytes_per_token: float, context_len: int, block_size: int = 32,
                         batch: int = 1, max_model_len: int | None = None) -> float:
    """KV cache of ``batch`` sequences held in whole blocks: ``batch × blocks × block_size × bytes``.

    Examples
    --------
    >>> paged_kv_cache_bytes(131072, 1000, 32) / 131072   # 1,000 tokens take 32 blocks = 1,024 slots
    1024.0
    """
    kv = _amount("kv_bytes_per_token", kv_bytes_per_token)
    batch = _batch("batch", batch)
    blocks = paged_kv_blocks(context_len, block_size, max_model_len)
    return batch * blocks * int(block_size) * kv


def kv_growth_table(model: str | ModelPreset, context_lens: Sequence[int], batches: Sequence[int],
                    kv_dtype: str = "bfloat16") -> pd.DataFrame:
    """KV cache against context length for several batch sizes (tidy, for a line chart).

    Returns
    -------
    pandas.DataFrame
        Columns ``context_len``, ``batch``, ``kv_bytes``, ``kv_gib``.

    Examples
    --------
    >>> t = kv_growth_table("llama3-70b", [1024, 8192], [1, 32])
    >>> t.kv_gib.tolist()
    [0.3125, 2.5, 10.0, 80.0]
    """
    per_token = model_kv_bytes_per_token(model, kv_dtype)
    rows = [{"context_len": int(c), "batch": int(b),
             "kv_bytes": kv_cache_bytes(per_token, c, b)}
            for b in _int_list("batches", batches) for c in _int_list("context_lens", context_lens)]
    df = pd.DataFrame(rows)
    df["kv_gib"] = df["kv_bytes"] / GiB
    return df


def _int_list(name: str, values: object) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a sequence of integers, got {values!r}")
    out = [integer(name, v, minimum=0, maximum=_MAX_TOKENS) for v in values]
    if not out:
        raise ValueError(f"{name} must hold at least one value")
    return out


# --------------------------------------------------------------------------- a replica


@dataclass(frozen=True)
class Replica:
    """One copy of a model served on ``tp × pp`` ranks (logical NeuronCores) of one chip type.

    Build it with :func:`replica`. Fields are in base units (bytes, bytes/s, FLOP/s).

    Attributes
    ----------
    model : ModelPreset
    chip : str
        Chip key (``"trn2"``...).
    tp, pp : int
        Tensor- and pipeline-parallel degrees, in ranks.
    lnc : int
        Physical NeuronCores per logical core.
    ranks_per_chip : int
    weight_dtype, kv_dtype, compute_dtype : str
    weight_bytes : float
        All weights (exact parameter count × bytes per weight), head padding and replicated K/V
        projections included (``padding_weight_bytes``, ``replicated_kv_weight_bytes``).
    kv_heads_per_rank : int
        KV heads each rank keeps. NxD Inference replicates KV heads when ``tp`` exceeds them
        (``REPLICATE_TO_TP_DEGREE``: one per rank) and falls back to one per query head
        (``CONVERT_TO_MHA``) when neither divides the other.
    layers_per_stage : int
    kv_bytes_per_token : float
        The model's KV cache per token (no replication).
    kv_bytes_per_token_per_rank : float
        What one rank stores per token of a sequence.
    hbm_bytes_per_rank, hbm_bytes_per_s_per_rank, peak_flops_per_s_per_rank : float
        The chip's HBM, HBM bandwidth and dense peak (``compute_dtype``) divided by its ranks.
    """

    model: ModelPreset
    chip: str
    tp: int
    pp: int
    lnc: int
    ranks_per_chip: int
    weight_dtype: str
    kv_dtype: str
    compute_dtype: str
    weight_bytes: float
    kv_heads_per_rank: int
    layers_per_stage: int
    kv_bytes_per_token: float
    kv_bytes_per_token_per_rank: float
    hbm_bytes_per_rank: float
    hbm_bytes_per_s_per_rank: float
    peak_flops_per_s_per_rank: float
    activation_bytes: float
    padded_heads: int = 0
    padding_weight_bytes: float = 0.0
    replicated_kv_weight_bytes: float = 0.0
    #: the chip's record, resolved once by :func:`replica` (not part of equality or the repr)
    chip_spec: specs.Chip | None = field(default=None, compare=False, repr=False)

    @property
    def n_ranks(self) -> int:
        """Ranks of the replica: ``tp × pp``."""
        return self.tp * self.pp

    @property
    def n_chips(self) -> float:
        """Chips the replica occupies (a fraction when it uses only some cores of one chip)."""
        return self.n_ranks / self.ranks_per_chip

    @property
    def weight_bytes_per_rank(self) -> float:
        """Weights on each rank: ``weight_bytes / (tp × pp)``."""
        return self.weight_bytes / self.n_ranks

    @property
    def kv_bytes_per_token_stored(self) -> float:
        """KV bytes the whole replica stores per token, replication included."""
        return self.kv_bytes_per_token_per_rank * self.n_ranks

    @property
    def hbm_bytes_per_s_active(self) -> float:
        """HBM bandwidth of the ranks working at once on one batch: one pipeline stage (``tp`` ranks)."""
        return self.tp * self.hbm_bytes_per_s_per_rank

    @property
    def peak_flops_per_s_active(self) -> float:
        """Dense peak of the ranks working at once on one batch (one stage)."""
        return self.tp * self.peak_flops_per_s_per_rank

    def label(self) -> str:
        """Short description."""
        pp = f" × PP{self.pp}" if self.pp > 1 else ""
        return (f"{self.model.name} on {self.n_chips:g} {specs.chip(self.chip).name} chip"
                f"{'s' if self.n_chips != 1 else ''} (TP{self.tp}{pp}, LNC={self.lnc})")

    def __repr__(self) -> str:
        return f"Replica({self.label()})"

    def _repr_markdown_(self) -> str:
        return (f"**{self.label()}**: weights {format_bytes(self.weight_bytes_per_rank)} per rank; "
                f"KV {format_bytes(self.kv_bytes_per_token_per_rank)} per token per rank "
                f"({self.kv_heads_per_rank} KV head{'s' if self.kv_heads_per_rank != 1 else ''} "
                f"× {self.layers_per_stage} layers); HBM {format_bytes(self.hbm_bytes_per_rank)} per rank")


@functools.lru_cache(maxsize=256)
def _replica(model: ModelPreset, c: specs.Chip, tp: int, pp: int, lnc: int, weight_dtype: str,
             kv_dtype: str, compute_dtype: str) -> Replica:
    per_chip = cores.logical_cores_per_chip(c, lnc)
    m = model
    if m.kv_lora_rank:
        raise ValueError(f"model must use grouped-query attention: {m.name} caches a multi-head latent "
                         f"attention latent ({m.kv_lora_rank} + {m.qk_rope_head_dim} values per layer), which "
                         "this serving model does not count")
    # NxD Inference pads the attention heads up to a multiple of tp (neuronx_distributed's
    # get_number_of_extra_heads: tp − n_heads % tp) and, when tp is not a multiple of the KV heads,
    # converts GQA to MHA: K/V replicated to the padded head count (modules/attention/gqa.py,
    # get_shardable_head_counts). The padding is stored and read like any weight: counted here.
    extra = (tp - m.n_heads % tp) % tp
    padded = m.n_heads + extra
    if pp > m.n_layers:
        raise ValueError(f"pp must be at most n_layers ({m.n_layers}) of {m.name}; got pp={pp}")
    hd = _head_dim(m)
    if m.n_kv_heads % tp == 0:
        kv_per_rank = m.n_kv_heads // tp
    elif tp % m.n_kv_heads == 0:
        kv_per_rank = 1                       # REPLICATE_TO_TP_DEGREE
    else:
        kv_per_rank = padded // tp            # CONVERT_TO_MHA (K/V for every padded Q head)
    padding_params = 0.0
    if extra:
        # Q and O projections grow by the extra heads; under CONVERT_TO_MHA K and V are stored for
        # every padded head instead of the model's KV heads
        padding_params = 2.0 * extra * hd * m.d_model * m.n_layers
        if tp % m.n_kv_heads:
            padding_params += 2.0 * (padded - m.n_kv_heads) * hd * m.d_model * m.n_layers
    # REPLICATE_TO_TP_DEGREE: each of the tp ranks keeps the K/V projection of its KV head, so
    # the model's n_kv_heads projections are stored tp times in all (gqa.py replicates them
    # before sharding); the copies beyond the first are read like any weight
    replica_params = (2.0 * (tp - m.n_kv_heads) * hd * m.d_model * m.n_layers
                      if tp > m.n_kv_heads and tp % m.n_kv_heads == 0 else 0.0)
    layers = -(-m.n_layers // pp)
    kvb = _dtype_bytes("kv_dtype", kv_dtype)
    wb = _weight_bytes_per_element(weight_dtype)
    ab = _dtype_bytes("compute_dtype", compute_dtype)
    peak = c.dense_flops_per_s[compute_dtype]
    return Replica(
        model=m, chip=c.key, tp=tp, pp=pp, lnc=lnc, ranks_per_chip=per_chip,
        weight_dtype=weight_dtype, kv_dtype=kv_dtype, compute_dtype=compute_dtype,
        weight_bytes=(float(m.exact_params()) + padding_params + replica_params) * wb, kv_heads_per_rank=kv_per_rank,
        layers_per_stage=layers,
        kv_bytes_per_token=kv_cache_bytes_per_token(m.n_layers, m.n_kv_heads, hd, kvb),
        kv_bytes_per_token_per_rank=kv_cache_bytes_per_token(layers, kv_per_rank, hd, kvb),
        hbm_bytes_per_rank=c.hbm_bytes / per_chip, hbm_bytes_per_s_per_rank=c.hbm_bytes_per_s / per_chip,
        peak_flops_per_s_per_rank=peak / per_chip, activation_bytes=ab, padded_heads=extra,
        padding_weight_bytes=padding_params * wb, replicated_kv_weight_bytes=replica_params * wb, chip_spec=c)


def replica(model: str | ModelPreset, chip: str = "trn2", tp: int = 1, pp: int = 1,
            lnc: int | None = None, weight_dtype: str = "bfloat16", kv_dtype: str = "bfloat16",
            compute_dtype: str = "bfloat16") -> Replica:
    """A model split over ``tp × pp`` ranks of ``chip``: what each rank holds and can do.

    Parameters
    ----------
    model : str or ModelPreset
        A preset (``"llama3-8b"``, ``"llama3-70b"``, ``"llama3-405b"``) or
        :func:`trainium_lab.layouts.custom_model`.
    chip : str
        ``"trn1"``, ``"trn2"`` or ``"trn3"``.
    tp, pp : int
        Degrees in ranks; a ``tp`` that does not divide the attention heads pads them to a
        multiple of ``tp`` (NxD Inference's ``get_shardable_head_counts``), the padding counted
        in ``weight_bytes`` and ``padding_weight_bytes``; ``pp`` must not exceed the layers.
    lnc : int, optional
        Logical NeuronCore setting; the chip's default if omitted (Trainium3 has none stated:
        pass it).
    weight_dtype, kv_dtype : str
        Storage dtypes of the weights and of the KV cache.
    compute_dtype : str
        dtype of the matmuls (sets the peak FLOP/s) and of the activations all-reduced.

    Returns
    -------
    Replica

    References
    ----------
    AWS Neuron docs, "NxD Inference Features Configuration Guide": tensor-parallelism rules and
    the GQA sharding strategies ``REPLICATE_TO_TP_DEGREE`` / ``CONVERT_TO_MHA``; "Logical
    NeuronCore configuration" (4 logical cores per Trainium2 chip at LNC=2, each with one
    24 GB HBM bank).

    Examples
    --------
    >>> r = replica("llama3-70b", "trn2", tp=32)
    >>> r.n_chips, r.kv_heads_per_rank, r.kv_bytes_per_token_stored / r.kv_bytes_per_token
    (8.0, 1, 4.0)

    A TP degree that does not divide the 64 heads is padded, as NxD Inference does: TP 24 (six
    chips at LNC=2, or an inf2.48xlarge's 24 NeuronCores) holds 72 heads, 8 of them padding:

    >>> r24 = replica("llama3-70b", "trn2", tp=24)
    >>> r24.padded_heads, round(r24.padding_weight_bytes / r24.weight_bytes, 3)
    (8, 0.018)

    Its 8 KV heads are replicated to the 24 ranks (``REPLICATE_TO_TP_DEGREE``): 16 more copies of
    the K/V projections, also counted:

    >>> round(r24.replicated_kv_weight_bytes / r24.weight_bytes, 3)
    0.036
    """
    m = resolve_model(model)
    tp = integer("tp", tp, minimum=1, maximum=100_000)
    pp = integer("pp", pp, minimum=1, maximum=100_000)
    weight_dtype = _weight_dtype(weight_dtype)
    for name, value in (("kv_dtype", kv_dtype),
                        ("compute_dtype", compute_dtype)):
        _dtype_bytes(name, value)
    c = specs.chip(chip)
    if compute_dtype not in c.dense_flops_per_s:
        raise ValueError(f"compute_dtype must be one of {', '.join(c.dense_flops_per_s)} for {c.name}; "
                         f"got {compute_dtype!r}")
    lnc = cores.resolve_lnc(c, lnc)
    return _replica(m, c, tp, pp, lnc, weight_dtype, kv_dtype, compute_dtype)


def _rep(rep: object) -> Replica:
    if not isinstance(rep, Replica):
        raise ValueError(f"rep must be a Replica (see serving.replica); got {rep!r}")
    return rep


# --------------------------------------------------------------------------- FLOPs


@functools.lru_cache(maxsize=256)
def _matmul_params(m: ModelPreset) -> float:
    # the input embedding is a lookup, not a matmul; the output projection is a matmul (cached:
    # exact_params builds a table, and every step of a widget update asks)
    return float(m.exact_params()) - float(m.vocab_size) * m.d_model


def decode_flops_per_token(model: str | ModelPreset, context_len: int) -> float:
    """Forward FLOPs to produce one token with ``context_len`` tokens already cached.

    ``2 × N_matmul + 4 × n_layers × context_len × (n_heads × head_dim)``: two FLOPs per weight
    (all weights but the input embedding), plus the attention scores ``QKᵀ`` and the weighted
    sum of values, each ``2 × context × d`` per layer.

    References
    ----------
    Kaplan et al. 2020, Table 1 (2N per token, plus ``2 n_layer n_ctx d_attn`` for the
    scores; the weighted sum of values doubles it).

    Examples
    --------
    >>> round(decode_flops_per_token("llama3-8b", 0) / 1e9, 2)
    15.01
    """
    m = resolve_model(model)
    context_len = _tokens("context_len", context_len)
    return 2.0 * _matmul_params(m) + 4.0 * m.n_layers * context_len * m.d_model


def prefill_flops(model: str | ModelPreset, prompt_tokens: int) -> float:
    """Forward FLOPs of a causal prefill of ``prompt_tokens`` tokens.

    ``s × 2 N_matmul + 2 × n_layers × d × s (s + 1)``: the weights once per token, and causal
    attention (token i attends to i tokens, ``4 L d i`` FLOPs) summed over the prompt.

    Examples
    --------
    >>> round(prefill_flops("llama3-70b", 2048) / 1e12, 1)
    290.2
    """
    m = resolve_model(model)
    s = _tokens("prompt_tokens", prompt_tokens, minimum=1)
    return s * 2.0 * _matmul_params(m) + 2.0 * m.n_layers * m.d_model * s * (s + 1.0)


# --------------------------------------------------------------------------- step bounds


@dataclass(frozen=True)
class StepEstimate:
    """One prefill or decode step: its lower bound, its expectation and what sets them.

    ``bound_s`` is a lower bound (the roofline ``max(compute_s, memory_s)`` at peak, plus one hop
    of the smallest published latency per TP all-reduce and the bytes at the published rate);
    ``expected_s`` is the step model with the calibrated latencies (:func:`decode_step`,
    :func:`prefill_step`). ``time_s`` is ``expected_s``: what a TPOT or TTFT should be planned on.

    Attributes
    ----------
    phase : str
        ``"prefill"``, ``"decode"`` or ``"step"`` (from :func:`step_bound`).
    flops, bytes_moved : float
        Work and HBM traffic of the step (whole replica).
    weight_bytes, kv_bytes : float
        The two parts of ``bytes_moved``.
    compute_s, memory_s : float
        The roofline's two sides: all FLOPs at ``peak × efficiency``, all bytes at the HBM rate.
    comm_s : float
        Expected communication: the TP all-reduces (a fixed cost each plus their bytes) and the
        KV layout's exchange.
    tokens : int
        Tokens the step produces (decode: one per sequence advanced) or processes (prefill).
    n_chips : float
        Chips of the replica (for per-chip rates).
    bound_s, expected_s : float
    attention_s, weight_s, matmul_s : float
        Decode's parts (scaling-book's general step): the KV reads, the weight reads, the weight
        matmuls' compute (0 for a prefill or :func:`step_bound`).
    n_collectives : int
        TP all-reduces (and KV-layout exchanges) on the step's critical path.
    collective_fixed_s : float
        The fixed cost charged per collective (``comm_s`` includes ``n_collectives`` of them).
    """

    phase: str
    flops: float
    bytes_moved: float
    weight_bytes: float
    kv_bytes: float
    peak_flops_per_s: float
    hbm_bytes_per_s: float
    compute_s: float
    memory_s: float
    comm_s: float
    tokens: int
    n_chips: float
    bound_s: float
    expected_s: float
    attention_s: float = 0.0
    weight_s: float = 0.0
    matmul_s: float = 0.0
    n_collectives: int = 0
    collective_fixed_s: float = 0.0

    @property
    def time_s(self) -> float:
        """The expectation, ``expected_s`` (never below ``bound_s``)."""
        return self.expected_s

    @property
    def bound(self) -> str:
        """``"tensor engine"`` or ``"HBM"`` (chapter 01's names): the roofline side that takes longer."""
        return "tensor engine" if self.compute_s >= self.memory_s else "HBM"

    @property
    def intensity_flop_per_byte(self) -> float:
        """Arithmetic intensity of the step: FLOPs per byte of HBM traffic."""
        return self.flops / self.bytes_moved if self.bytes_moved > 0 else math.inf

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second of the replica at the expected step time."""
        return self.tokens / self.time_s

    @property
    def tokens_per_s_per_chip(self) -> float:
        """Tokens per second per chip at the expected step time."""
        return self.tokens_per_s / self.n_chips

    @property
    def bound_tokens_per_s_per_chip(self) -> float:
        """The upper bound on tokens per second per chip (at ``bound_s``)."""
        return self.tokens / self.bound_s / self.n_chips

    def _repr_markdown_(self) -> str:
        return (f"**{self.phase}**: expected {format_seconds(self.time_s)} per step (bound "
                f"{format_seconds(self.bound_s)}), roofline side **{self.bound}** (compute "
                f"{format_seconds(self.compute_s)}, HBM {format_seconds(self.memory_s)}); "
                f"communication {format_seconds(self.comm_s)} ({self.n_collectives} collectives); "
                f"{self.tokens_per_s_per_chip:,.0f} tokens/s per chip")


def step_bound(flops: float, bytes_moved: float, peak_flops_per_s: float, hbm_bytes_per_s: float,
               efficiency: float = 1.0, comm_s: float = 0.0) -> StepEstimate:
    """The roofline bound of one step from its work and traffic.

    ``compute_s = flops / (peak × efficiency)``, ``memory_s = bytes / bandwidth``.

    Parameters
    ----------
    flops, bytes_moved : float
        Work (FLOPs) and HBM traffic (bytes), >= 0.
    peak_flops_per_s, hbm_bytes_per_s : float
        The rates of the ranks doing the work (> 0).
    efficiency : float
        Share of peak the kernels reach, in (0, 1]: an assumption unless measured.
    comm_s : float
        Communication added to the step (>= 0).

    Raises
    ------
    ValueError
        Naming the parameter, e.g. a zero ``hbm_bytes_per_s``.

    References
    ----------
    Williams, Waterman and Patterson 2009 (the roofline model), as in chapter 01.

    Examples
    --------
    >>> b = step_bound(16e9, 16e9, 667e12, 2.9e12)   # 8B decode, batch 1: 16 GB of weights
    >>> b.bound, round(b.time_s * 1e3, 2)
    ('HBM', 5.52)
    >>> step_bound(1.0, 1.0, 1e12, 0.0)
    Traceback (most recent call last):
    ...
    ValueError: hbm_bytes_per_s must be a finite number > 0, got 0.0
    """
    flops = _amount("flops", flops)
    moved = _amount("bytes_moved", bytes_moved)
    peak = _rate("peak_flops_per_s", peak_flops_per_s)
    bw = _rate("hbm_bytes_per_s", hbm_bytes_per_s)
    eff = _fraction("efficiency", efficiency)
    comm = _amount("comm_s", comm_s)
    t = max(flops / (peak * eff), moved / bw) + comm
    return StepEstimate("step", flops, moved, moved, 0.0, peak, bw, flops / (peak * eff), moved / bw,
                        comm, 1, 1.0, t, t)


@functools.lru_cache(maxsize=128)
def _tp_placement(system: str, tp: int, pp: int, lnc: int):
    s = specs.system(system)
    per_system = s.n_chips * cores.logical_cores_per_chip(s.chip_key, lnc)
    n = tp * pp
    if per_system % n == 0:
        return topology.place(tp, pp, per_system // n, system=s.key, lnc=lnc)
    if n % per_system == 0:
        return topology.place(tp, pp, 1, system=s.key, lnc=lnc)
    raise ValueError(f"tp × pp ({n}) must divide, or be a multiple of, the {per_system} ranks of "
                     f"one {s.key} at lnc={lnc}")


def _default_system(chip: str, n_ranks: int, lnc: int) -> str:
    candidates = sorted((s for s in specs.systems(include_inferentia=True) if s.chip_key == chip),
                        key=lambda s: s.n_chips)
    for s in candidates:
        per = s.n_chips * cores.logical_cores_per_chip(chip, lnc)
        if per >= n_ranks and per % n_ranks == 0:
            return s.key
    return candidates[-1].key


def tp_allreduce_s(rep: Replica, n_tokens: int, system: str | None = None,
                   latency_s: float | None = None) -> float:
    """Seconds of tensor-parallel all-reduces in one forward pass over ``n_tokens`` tokens.

    Every layer runs :data:`FORWARD_ALLREDUCES_PER_LAYER` all-reduces of the activations
    (``n_tokens × d_model`` elements of ``compute_dtype``) in its TP group. Each is costed as
    in chapter 03: a ring over the group's chips at the slowest level the group lands on
    (:func:`trainium_lab.collectives.group_collective_s` on a :func:`trainium_lab.topology.place`
    placement, TP ranks innermost). A group inside one chip costs 0 (no published figure).
    This is chapter 03's bandwidth-and-hop ring, kept for comparison: the step model
    (:func:`decode_step`, :func:`prefill_step`) charges each all-reduce
    :func:`tp_collective_fixed_s` (calibrated) plus :func:`tp_collective_bytes_s`.

    Parameters
    ----------
    rep : Replica
    n_tokens : int
        Tokens in the pass: the batch for a decode step, the prompt for a prefill.
    system : str, optional
        Where the replica runs; by default the smallest system of its chip that holds it.
    latency_s : float, optional
        Per-step latency α of the ring; by default the level's published latency, else 0
        (only EFA has one in ``data/``): an assumption for small decode messages.

    References
    ----------
    Shoeybi et al. 2019, §3; chapter 03 (ring all-reduce, 2(n−1)/n · S/B + 2(n−1)·α).

    Examples
    --------
    >>> round(tp_allreduce_s(replica("llama3-70b", tp=64), 1) * 1e6, 2)   # 16 chips, α = 0
    4.8
    >>> round(tp_allreduce_s(replica("llama3-70b", tp=64), 1, latency_s=2e-6) * 1e3, 2)
    9.6
    >>> tp_allreduce_s(replica("llama3-8b", tp=4), 1)   # TP inside one chip
    0.0
    """
    rep = _rep(rep)
    n_tokens = integer("n_tokens", n_tokens, minimum=1, maximum=10**13)
    if latency_s is not None:
        latency_s = _amount("latency_s", latency_s)
    if rep.tp == 1:
        return 0.0
    system = _default_system(rep.chip, rep.n_ranks, rep.lnc) if system is None else system
    s = specs.system(system)
    if s.chip_key != rep.chip:
        raise ValueError(f"system must be built from {rep.chip} chips; {s.key} has {s.chip_key}")
    placement = _tp_placement(s.key, rep.tp, rep.pp, rep.lnc)
    size = n_tokens * rep.model.d_model * rep.activation_bytes
    one = collectives.group_collective_s(placement, "tp", size, "all_reduce", latency_s)
    return FORWARD_ALLREDUCES_PER_LAYER * rep.model.n_layers * one


def _calibrated(name: str) -> float:
    """A default of ``data/calibration.csv`` (the loader :mod:`trainium_lab.reality` uses too)."""
    return specs.calibration(name).value


def tp_collective_fixed_s(rep: Replica, size_bytes: float = 0.0) -> float:
    """The fixed cost of one tensor-parallel all-reduce inside a compiled graph (s), by default.

    Everything before a byte moves, the same model on every chip: one in-NEFF cost per
    collective (``collective_fixed_s``, fitted on the NxD Inference decode steps) plus the hops
    of the algorithm the runtime picks for a message of ``size_bytes`` on the replica's chips
    (:func:`trainium_lab.collectives.neuron_collective`: Mesh, RDH or KangaRing by size, on every
    chip), each at AWS's per-hop latency (``hop_latency_s``).
    The bytes are :func:`tp_collective_bytes_s`. 0 at ``tp = 1``.

    References
    ----------
    AWS Neuron docs, "Intra-node Collective Communications" (algorithms, per-hop latency "about
    1-2 us"); "Compute-Communication Overlap" (TP collectives cannot overlap compute);
    ``reality.fit`` for the fitted value.

    Examples
    --------
    >>> round(tp_collective_fixed_s(replica("llama3-70b", "trn2", tp=64)) * 1e6, 1)   # fixed + 2 Mesh hops
    88.7
    >>> tp_collective_fixed_s(replica("llama3-8b", "trn2", tp=1))
    0.0
    """
    rep = _rep(rep)
    size = _amount("size_bytes", size_bytes)
    if rep.tp == 1:
        return 0.0
    c = rep.chip_spec
    alg, ar_steps = collectives._intra_algorithm(c, size, rep.tp)
    steps = collectives._op_steps("all_reduce", alg, rep.tp, ar_steps)
    return _calibrated("collective_fixed_s") + steps * _calibrated("hop_latency_s")


def _largest_rate(rep: Replica, field_name: str) -> float:
    """The larger published figure of a chip rate, as a multiple of the one used (bounds take it)."""
    c = rep.chip_spec
    return collectives._largest_published(c, field_name) / getattr(c, field_name)


def exact_weight_bytes(rep: Replica) -> float:
    """The model's weights at ``weight_dtype`` with no padding and no replicated K/V projections."""
    rep = _rep(rep)
    return rep.weight_bytes - rep.padding_weight_bytes - rep.replicated_kv_weight_bytes


def _exchange_rate(rep: Replica) -> float:
    """Published rate a TP group's exchange runs at: HBM inside one chip, NeuronLink per chip beyond."""
    c = rep.chip_spec
    return c.hbm_bytes_per_s if rep.tp <= rep.ranks_per_chip else c.neuronlink_bytes_per_s


def tp_collective_bytes_s(rep: Replica, n_tokens: int) -> float:
    """Bandwidth time of one TP all-reduce of ``n_tokens`` activations at the published rate (s).

    ``bus_factor · n_tokens · d_model · b_act / B`` with nccl-tests' bus factor
    (:func:`trainium_lab.collectives.bus_factor`, ``2(n−1)/n``) and ``B`` the chip's HBM rate for a
    group inside one chip, its NeuronLink rate (per chip) for a group of several chips.

    Examples
    --------
    >>> round(tp_collective_bytes_s(replica("llama3-70b", "trn2", tp=64), 1) * 1e9, 1)
    25.2
    """
    rep = _rep(rep)
    n_tokens = integer("n_tokens", n_tokens, minimum=1, maximum=10**13)
    if rep.tp == 1:
        return 0.0
    size = n_tokens * rep.model.d_model * rep.activation_bytes
    return collectives.bus_factor("all_reduce", rep.tp) * size / _exchange_rate(rep)


def _latency(name: str, value: object, rep: Replica, size_bytes: float = 0.0) -> float:
    return tp_collective_fixed_s(rep, size_bytes) if value is None else _amount(name, value)


def _check_system(rep: Replica, system: str | None) -> None:
    if system is None:
        return
    s = specs.system(system)
    if s.chip_key != rep.chip:
        raise ValueError(f"system must be built from {rep.chip} chips; {s.key} has {s.chip_key}")


def prefill_step(rep: Replica, prompt_tokens: int, batch: int = 1, efficiency: float | None = None,
                 max_model_len: int | None = None, system: str | None = None,
                 latency_s: float | None = None, bucket_tokens: int | None = None) -> StepEstimate:
    """The prefill (context encoding) of ``batch`` prompts of ``prompt_tokens``: bound and expectation.

    FLOPs from :func:`prefill_flops`; traffic: the weights once plus the KV written. Expected:
    the FLOPs at ``peak × efficiency`` of one pipeline stage's ranks (stages run one after
    another for a single prompt) or the traffic if longer, plus ``2·L`` TP all-reduces, each a
    fixed cost (:func:`tp_collective_fixed_s`) plus its bytes (:func:`tp_collective_bytes_s`).
    The expectation runs the prompt padded to its context-encoding bucket (``bucket_tokens``).
    Bound, for any implementation: the unpadded prompt's FLOPs at peak, or the exact weights and
    one unreplicated KV cache at the larger published HBM rate if longer, with one hop of the
    smallest published latency (``hop_latency_min_s``) per all-reduce.

    Parameters
    ----------
    rep : Replica
    prompt_tokens : int
    batch : int
        Prompts encoded together (vLLM on Neuron encodes one at a time: ``ctx_batch_size=1``).
    efficiency : float, optional
        Share of peak the prefill kernels reach, in (0, 1]; by default ``prefill_efficiency``,
        fitted on the NxD Inference Trn2 TTFTs (``data/calibration.csv``).
    max_model_len : int, optional
        If given, ``prompt_tokens`` above it raise ``ValueError``.
    system : str, optional
        Where the replica runs (checked to be built from its chip).
    latency_s : float, optional
        Fixed cost of one TP all-reduce; by default :func:`tp_collective_fixed_s`.
    bucket_tokens : int, optional
        The context-encoding bucket the prompt runs in (>= ``prompt_tokens``; by default the
        prompt itself): the compiled graph computes the whole bucket.

    Examples
    --------
    >>> b = prefill_step(replica("llama3-70b", tp=64), 2048)
    >>> b.bound, round(b.bound_s * 1e3, 1), round(b.expected_s * 1e3, 1)
    ('tensor engine', 35.6, 100.8)
    """
    rep = _rep(rep)
    s = _tokens("prompt_tokens", prompt_tokens, minimum=1)
    batch = _batch("batch", batch)
    if max_model_len is not None:
        mml = _tokens("max_model_len", max_model_len, minimum=1)
        if s > mml:
            raise ValueError(f"prompt_tokens must be at most max_model_len ({mml}); got {s}")
    eff = _calibrated("prefill_efficiency") if efficiency is None else _fraction("efficiency", efficiency)
    _check_system(rep, system)
    sb = s if bucket_tokens is None else _tokens("bucket_tokens", bucket_tokens, minimum=1)
    if sb < s:
        raise ValueError(f"bucket_tokens must be at least prompt_tokens ({s}); got {sb}")
    fixed = _latency("latency_s", latency_s, rep, batch * sb * rep.model.d_model * rep.activation_bytes)
    flops = batch * prefill_flops(rep.model, sb)
    kv = batch * sb * rep.kv_bytes_per_token_stored
    n_cc = 0 if rep.tp == 1 else FORWARD_ALLREDUCES_PER_LAYER * rep.model.n_layers
    bytes_s = n_cc * tp_collective_bytes_s(rep, batch * sb)
    moved = rep.weight_bytes + kv
    peak, hbm = rep.peak_flops_per_s_active, rep.hbm_bytes_per_s_active
    floor_moved = exact_weight_bytes(rep) + batch * s * rep.kv_bytes_per_token
    bound = (max(batch * prefill_flops(rep.model, s) / peak, floor_moved / (hbm * _largest_rate(rep, "hbm_bytes_per_s")))
             + n_cc * (_calibrated("hop_latency_min_s") + tp_collective_bytes_s(rep, batch * s)))
    comm = n_cc * fixed + bytes_s
    expected = max(max(flops / (peak * eff), moved / hbm) + comm, bound)
    return StepEstimate("prefill", flops, moved, rep.weight_bytes, kv, peak, hbm, flops / (peak * eff),
                        moved / hbm, comm, batch * s, rep.n_chips, bound, expected,
                        n_collectives=n_cc, collective_fixed_s=fixed)


#: collectives per layer each KV layout adds to a decode step (beyond TP's own two all-reduces):
#: flash decoding combines partial attention once, attention DP gathers and scatters the hidden
#: states, context parallelism gathers partial outputs once (:func:`kv_sharding`)
KV_LAYOUT_EXCHANGES_PER_LAYER = {"replicate": 0, "flash-decoding": 1, "attention-dp": 2, "context-parallel": 1}


def decode_step(rep: Replica, batch: int, context_len: int, tokens_per_sequence: int = 1,
                micro_batches: int = 1, efficiency: float = 1.0, max_model_len: int | None = None,
                system: str | None = None, latency_s: float | None = None,
                kv_layout: str = "replicate", kv_degree: int | None = None,
                bucket_len: int | None = None) -> StepEstimate:
    """One decode (token generation) step of ``batch`` sequences: bound and expectation.

    Expected (scaling-book's general step time): attention reads each sequence's cached keys and
    values for ``context_len`` tokens (always memory-bound), plus the larger of the weight
    matmuls' compute (``2·N`` FLOPs per token at ``peak × efficiency``) and the weight reads,
    plus ``2·L`` TP all-reduces each costing a fixed :func:`tp_collective_fixed_s` (calibrated)
    and its bytes (:func:`tp_collective_bytes_s`), plus the KV layout's exchange
    (:func:`kv_sharding`: one fixed cost and its bytes at the published rate per exchange).
    The expectation reads the KV cache over the token-generation bucket (``bucket_len``) the
    graph was compiled for. Bound, for any implementation: the roofline ``max(FLOPs/peak,
    bytes/HBM)`` with the exact weights and one unreplicated KV cache of ``context_len`` tokens at
    the larger published HBM rate, plus one hop of the smallest published latency per collective
    and the same bytes. A step is a step: a speculative TPOT is ``reality.speculative_tpot``.

    With ``pp > 1`` the stages handle one batch in turn, so a token still waits for every
    stage. ``micro_batches`` (at most ``pp``) batches in flight keep more stages busy: the step
    time per batch is unchanged and ``tokens`` counts ``micro_batches × batch``.

    Parameters
    ----------
    rep : Replica
    batch : int
        Sequences in the batch.
    context_len : int
        Tokens whose KV is read per sequence. vLLM on Neuron compiles its decode NEFF for
        ``max_model_len`` and reads all of it unless decode context-length buckets are set:
        pass ``max_model_len`` to model that.
    tokens_per_sequence : int
        Tokens each sequence runs through the model in this step: 1 for plain decode,
        ``k + 1`` when the target verifies ``k`` speculated tokens.
    micro_batches : int
        Batches in flight in the pipeline (1 to ``pp``).
    efficiency : float
        Share of peak the matmuls reach, in (0, 1] (no calibrated value: decode's compute side
        binds only at large batches).
    max_model_len : int, optional
        If given, a ``context_len`` above it raises ``ValueError`` naming ``context_len``.
    system : str, optional
        Where the replica runs (checked to be built from its chip).
    latency_s : float, optional
        Fixed cost of one collective; by default :func:`tp_collective_fixed_s` (0 gives the
        bandwidth-only step, which is neither the bound nor the expectation).
    kv_layout : {"replicate", "flash-decoding", "attention-dp", "context-parallel"}
        How the KV cache is laid out over the TP group (:func:`kv_sharding`).
    kv_degree : int, optional
        Attention-DP or context-parallel degree (divides ``tp``).
    bucket_len : int, optional
        The token-generation bucket (>= ``context_len``; by default ``context_len``): the compiled
        graph reads the KV cache over the whole bucket.

    References
    ----------
    J. Austin et al., "How to Scale Your Model", "All About Transformer Inference", "Theoretical
    Step Time (General)"; Kwon et al. 2023, §2.2-3 (decode is memory-bound); Leviathan et al.
    2023, §3.4 (weights and KV cache read once per target pass); vLLM Neuron, "Decode
    Context-Length Bucketing"; AWS Neuron docs, "Intra-node Collective Communications".

    Examples
    --------
    >>> r = replica("llama3-8b", "trn2", tp=4)       # one Trainium2 chip at LNC=2
    >>> d = decode_step(r, batch=1, context_len=1024)
    >>> d.bound, round(d.bound_s * 1e3, 2), round(d.expected_s * 1e3, 2), round(d.tokens_per_s)
    ('HBM', 5.46, 11.26, 89)
    >>> decode_step(r, 1, 5000, max_model_len=4096)
    Traceback (most recent call last):
    ...
    ValueError: context_len must be at most max_model_len (4096), the longest sequence the compiled model accepts; got 5000
    """
    rep = _rep(rep)
    batch = _batch("batch", batch)
    ctx = _tokens("context_len", context_len)
    _check_context(ctx, max_model_len)
    tps = integer("tokens_per_sequence", tokens_per_sequence, minimum=1, maximum=10_001)
    mb = integer("micro_batches", micro_batches, minimum=1, maximum=rep.pp)
    eff = _fraction("efficiency", efficiency)
    _check_system(rep, system)
    fixed = _latency("latency_s", latency_s, rep, batch * tps * rep.model.d_model * rep.activation_bytes)
    read = ctx if bucket_len is None else _tokens("bucket_len", bucket_len)
    if read < ctx:
        raise ValueError(f"bucket_len must be at least context_len ({ctx}); got {read}")
    layout = kv_sharding(rep, kv_layout, kv_degree, batch * tps)
    flops = batch * tps * decode_flops_per_token(rep.model, ctx)
    kv_per_token = rep.kv_bytes_per_token_stored if kv_layout == "replicate" else \
        layout.kv_bytes_per_token_per_rank * rep.n_ranks
    kv = batch * (read + tps) * kv_per_token
    moved = rep.weight_bytes + kv
    peak, hbm = rep.peak_flops_per_s_active, rep.hbm_bytes_per_s_active
    n_tp = 0 if rep.tp == 1 else FORWARD_ALLREDUCES_PER_LAYER * rep.model.n_layers
    n_x = KV_LAYOUT_EXCHANGES_PER_LAYER[layout.strategy] * rep.model.n_layers if layout.comm_bytes_per_layer else 0
    bytes_s = n_tp * tp_collective_bytes_s(rep, batch * tps) + rep.model.n_layers * layout.comm_bytes_per_layer / _exchange_rate(rep)
    n_cc = n_tp + n_x
    attention_s = kv / hbm
    weight_s = rep.weight_bytes / hbm
    matmul_s = batch * tps * 2.0 * _matmul_params(rep.model) / (peak * eff)
    comm = n_cc * fixed + bytes_s
    floor_moved = exact_weight_bytes(rep) + batch * (ctx + tps) * rep.kv_bytes_per_token
    bound = (max(flops / peak, floor_moved / (hbm * _largest_rate(rep, "hbm_bytes_per_s")))
             + n_cc * _calibrated("hop_latency_min_s") + bytes_s)
    expected = max(attention_s + max(matmul_s, weight_s) + comm, bound)
    return StepEstimate("decode", flops, moved, rep.weight_bytes, kv, peak, hbm, flops / (peak * eff),
                        moved / hbm, comm, batch * mb, rep.n_chips, bound, expected,
                        attention_s=attention_s, weight_s=weight_s, matmul_s=matmul_s, n_collectives=n_cc,
                        collective_fixed_s=fixed)


def decode_compute_bound_batch(rep: Replica, context_len: int) -> float:
    """The batch at which a decode step turns from HBM-bound to compute-bound (no all-reduces).

    Setting ``B·F/P = (W + B·c·k)/BW`` (F FLOPs per token, W weight bytes, k KV bytes per
    token, c context, P peak, BW bandwidth) gives ``B* = (W/BW) / (F/P − c·k/BW)``. With no
    context, ``B* = W·P / (BW·F)``: about the chip's **ridge point** (chapter 01) for BF16
    weights, since F ≈ 2 FLOPs per weight of 2 bytes. The KV reads add bytes that batching does
    not amortise: once ``c·k/BW ≥ F/P`` no batch makes decode compute-bound (``inf``).

    Examples
    --------
    >>> r = replica("llama3-70b", "trn2", tp=8)      # 2 chips, one KV head per rank
    >>> round(decode_compute_bound_batch(r, 0)), round(decode_compute_bound_batch(r, 128))
    (234, 250)
    >>> decode_compute_bound_batch(r, 4096)
    inf
    """
    rep = _rep(rep)
    ctx = _tokens("context_len", context_len)
    f = decode_flops_per_token(rep.model, ctx)
    per_seq = f / rep.peak_flops_per_s_active - (ctx + 1) * rep.kv_bytes_per_token_stored / rep.hbm_bytes_per_s_active
    if per_seq <= 0:
        return math.inf
    return rep.weight_bytes / rep.hbm_bytes_per_s_active / per_seq


def kv_bound_context_len(rep: Replica) -> float:
    """The context beyond which no batch makes decode compute-bound (:func:`decode_compute_bound_batch` is inf).

    Per sequence a step reads ``(c + 1)·k`` KV bytes and does ``2N + 4·L·c·d`` FLOPs; batching
    shares only the weights. Setting the KV read time equal to the compute time gives
    ``c* = (2N/P − k/BW) / (k/BW − 4·L·d/P)``, or ``inf`` when the attention FLOPs grow as fast
    as the KV bytes (a GQA group as large as the ridge point).

    Examples
    --------
    >>> round(kv_bound_context_len(replica("llama3-70b", tp=8)))
    1910
    """
    rep = _rep(rep)
    m = rep.model
    kv_s = rep.kv_bytes_per_token_stored / rep.hbm_bytes_per_s_active
    att_s = 4.0 * m.n_layers * m.d_model / rep.peak_flops_per_s_active
    if kv_s <= att_s:
        return math.inf
    return max((2.0 * _matmul_params(m) / rep.peak_flops_per_s_active - kv_s) / (kv_s - att_s), 0.0)


def roofline_points(rep: Replica, batches: Sequence[int] = (1, 16, 256),
                    prompts: Sequence[int] = (128, 2048), context_len: int = 1024) -> pd.DataFrame:
    """Decode steps and prefills placed on the chip's roofline (per-chip rates, no all-reduces).

    Returns
    -------
    pandas.DataFrame
        Columns ``label``, ``phase``, ``intensity`` (FLOP/byte), ``tflop_per_s`` (achieved per
        chip: the step's FLOPs over its bound, divided by the chips of one stage), ``bound``.

    Examples
    --------
    >>> p = roofline_points(replica("llama3-70b", tp=64), batches=[1], prompts=[2048])
    >>> p.bound.tolist(), p.intensity.round().tolist()
    (['HBM', 'tensor engine'], [1.0, 1756.0])
    """
    rep = _rep(rep)
    ctx = _tokens("context_len", context_len)
    rows = []
    stage_chips = rep.tp / rep.ranks_per_chip
    for b in _int_list("batches", batches):
        d = decode_step(rep, max(b, 1), ctx, latency_s=0.0)
        rows.append(("decode, batch " + str(max(b, 1)), "decode", d))
    for s in _int_list("prompts", prompts):
        p = prefill_step(rep, max(s, 1), efficiency=1.0, latency_s=0.0)
        rows.append((f"prefill, {max(s, 1)} tokens", "prefill", p))
    return pd.DataFrame([{"label": label, "phase": phase, "intensity": b.intensity_flop_per_byte,
                          "tflop_per_s": b.flops / max(b.compute_s, b.memory_s) / stage_chips / TFLOPS,
                          "bound": b.bound} for label, phase, b in rows])


def chip_decode_table(model: str | ModelPreset, n_chips: int, batch: int, context_len: int,
                      chips: Sequence[str] = ("trn2", "trn3"), lnc: int = 2) -> pd.DataFrame:
    """The same decode step on ``n_chips`` of each chip generation, TP over all their ranks.

    Returns
    -------
    pandas.DataFrame
        Columns ``chip``, ``name``, ``hbm_tb_per_s``, ``bf16_tflop_per_s``, ``ridge``,
        ``bound_ms`` (the step's lower bound), ``step_ms`` (expected, with the calibrated
        collective cost: Trainium3 has no measurement and carries Trainium2's),
        ``tokens_per_s_per_chip`` (expected), ``bound``.

    Examples
    --------
    >>> t = chip_decode_table("llama3-70b", 16, 8, 2048)
    >>> t.name.tolist(), (t.bound_ms.iloc[0] / t.bound_ms.iloc[1]).round(2)
    (['Trainium2', 'Trainium3'], np.float64(1.59))
    """
    m = resolve_model(model)
    n_chips = integer("n_chips", n_chips, minimum=1, maximum=100_000)
    if isinstance(chips, str) or not isinstance(chips, Iterable):
        raise ValueError(f"chips must be a sequence of chip names, got {chips!r}")
    rows = []
    for key in chips:
        r = replica(m, key, tp=n_chips * cores.logical_cores_per_chip(key, lnc), lnc=lnc)
        d = decode_step(r, batch, context_len)
        c = specs.chip(key)
        rows.append({"chip": c.key, "name": c.name, "hbm_tb_per_s": c.hbm_bytes_per_s / TB,
                     "bf16_tflop_per_s": c.dense_flops_per_s["bf16"] / TFLOPS,
                     "ridge": roofline.ridge_point(c.key, "bf16"), "bound_ms": d.bound_s / ms, "step_ms": d.time_s / ms,
                     "tokens_per_s_per_chip": d.tokens_per_s_per_chip, "bound": d.bound})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- a request stream


@dataclass(frozen=True)
class StreamEstimate:
    """What a stream of identical requests sees under continuous batching (expectations).

    Times are built from the expected steps of :func:`prefill_step` and :func:`decode_step`
    (calibrated latencies); ``tpot_bound_s`` is the same cycle built from their bounds.

    Attributes
    ----------
    concurrency : int
        Sequences decoding together (``micro_batches ×`` the batch).
    ttft_s : float
        Time to first token: the prefill of one prompt (no queueing).
    decode_step_s : float
        One decode step at the mean context.
    tpot_s : float
        Time per output token seen by a sequence: decode steps plus the prefills of other
        requests, which pause decoding (prefill and decode never share a batch on Neuron).
    tokens_per_s : float
        Output tokens per second of the replica.
    tokens_per_s_per_chip : float
    mean_context_len : float
        Tokens read per sequence per step, on average.
    """

    concurrency: int
    prompt_tokens: int
    output_tokens: int
    ttft_s: float
    prefill_s: float
    decode_step_s: float
    tpot_s: float
    tokens_per_s: float
    tokens_per_s_per_chip: float
    mean_context_len: float
    decode_bound: str
    tpot_bound_s: float = math.nan

    @property
    def requests_per_s(self) -> float:
        """Completed requests per second."""
        return self.tokens_per_s / self.output_tokens

    def _repr_markdown_(self) -> str:
        return (f"**{self.concurrency} concurrent sequences**: TTFT {format_seconds(self.ttft_s)}, "
                f"TPOT {format_seconds(self.tpot_s)} expected, {format_seconds(self.tpot_bound_s)} bound "
                f"(decode step {format_seconds(self.decode_step_s)}, "
                f"{self.decode_bound}-bound), {self.tokens_per_s_per_chip:,.0f} output tokens/s per chip")


def serve_stream(rep: Replica, prompt_tokens: int, output_tokens: int, concurrency: int,
                 prefill_efficiency: float | None = None, micro_batches: int = 1,
                 max_model_len: int | None = None, kv_read_len: int | None = None,
                 system: str | None = None, latency_s: float | None = None) -> StreamEstimate:
    """TTFT, TPOT and tokens/s per chip for a steady stream of identical requests.

    Each of ``concurrency`` sequences (per batch in flight) needs one prefill of
    ``prompt_tokens`` and ``output_tokens`` decode steps. In steady state, producing
    ``output_tokens`` tokens for every sequence takes ``output_tokens`` decode steps (at the
    mean context ``prompt + output/2``) plus one prefill per sequence, run one at a time
    between decode steps. So::

        cycle  = output × t_decode + n_seq × t_prefill
        TPOT   = cycle / output
        tokens/s = n_seq × output / cycle

    Parameters
    ----------
    rep : Replica
    prompt_tokens, output_tokens : int
    concurrency : int
        Sequences in one decode batch (``max_num_seqs`` caps it).
    prefill_efficiency : float, optional
        Share of peak prefill reaches, in (0, 1]; by default the calibrated ``prefill_efficiency``.
    micro_batches : int
        Decode batches in flight in a pipeline (1 to ``pp``).
    max_model_len : int, optional
        ``prompt + output`` above it raises ``ValueError`` naming ``context_len``.
    kv_read_len : int, optional
        Tokens of KV each decode step reads per sequence if not the actual context (e.g.
        ``max_model_len`` for vLLM Neuron's default decode NEFF).

    References
    ----------
    Yu et al., "Orca" (OSDI 2022) and Kwon et al. 2023 (iteration-level scheduling, continuous
    batching); vLLM Neuron features guide ("prefill and decode always run in separate batches
    on Neuron"); vLLM User Guide for NxD Inference (``ctx_batch_size=1``).

    Examples
    --------
    >>> r = replica("llama3-8b", tp=4)
    >>> s = serve_stream(r, 512, 256, concurrency=32)
    >>> round(s.ttft_s * 1e3, 1), round(s.tpot_s * 1e3, 2), round(s.tokens_per_s_per_chip)
    (38.2, 16.93, 1890)
    """
    rep = _rep(rep)
    p = _tokens("prompt_tokens", prompt_tokens, minimum=1)
    o = _tokens("output_tokens", output_tokens, minimum=1)
    b = _batch("concurrency", concurrency)
    _check_context(p + o, max_model_len)
    mb = integer("micro_batches", micro_batches, minimum=1, maximum=rep.pp)
    mean_ctx = p + o / 2.0
    if kv_read_len is None:
        read = int(round(mean_ctx))
    else:
        read = _tokens("kv_read_len", kv_read_len, minimum=1)
        if read < p + o:
            raise ValueError(f"kv_read_len must be at least prompt_tokens + output_tokens ({p + o}); got {read}")
    pre = prefill_step(rep, p, 1, prefill_efficiency, None, system, latency_s)
    dec = decode_step(rep, b, read, 1, mb, 1.0, None, system, latency_s)
    n_seq = b * mb
    cycle = o * dec.time_s + n_seq * pre.time_s
    tps = n_seq * o / cycle
    bound_cycle = o * dec.bound_s + n_seq * pre.bound_s
    return StreamEstimate(n_seq, p, o, pre.time_s, pre.time_s, dec.time_s, cycle / o, tps,
                          tps / rep.n_chips, float(read), dec.bound, bound_cycle / o)


def batching_curve(rep: Replica, prompt_tokens: int, output_tokens: int,
                   concurrencies: Sequence[int], prefill_efficiency: float | None = None,
                   max_sequences: int | None = None, kv_read_len: int | None = None,
                   latency_s: float | None = None) -> pd.DataFrame:
    """Continuous batching as a trade: throughput against time per output token.

    Returns
    -------
    pandas.DataFrame
        One row per concurrency: ``concurrency``, ``tpot_ms`` (expected), ``tpot_bound_ms``, ``ttft_ms``,
        ``tokens_per_s``, ``tokens_per_s_per_chip``, ``decode_bound``, ``fits`` (the
        concurrency is at most ``max_sequences``, when given).

    Examples
    --------
    >>> c = batching_curve(replica("llama3-8b", tp=4), 512, 256, [1, 64])
    >>> c.tokens_per_s_per_chip.round().tolist()
    [88.0, 2827.0]
    """
    rep = _rep(rep)
    cap = None if max_sequences is None else integer("max_sequences", max_sequences, minimum=0,
                                                     maximum=_MAX_BATCH)
    rows = []
    for c in _int_list("concurrencies", concurrencies):
        s = serve_stream(rep, prompt_tokens, output_tokens, max(c, 1), prefill_efficiency,
                         kv_read_len=kv_read_len, latency_s=latency_s)
        rows.append({"concurrency": s.concurrency, "tpot_ms": s.tpot_s / ms, "tpot_bound_ms": s.tpot_bound_s / ms,
                     "ttft_ms": s.ttft_s / ms,
                     "tokens_per_s": s.tokens_per_s, "tokens_per_s_per_chip": s.tokens_per_s_per_chip,
                     "decode_bound": s.decode_bound, "fits": cap is None or s.concurrency <= cap})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- capacity


@dataclass(frozen=True)
class Capacity:
    """How many sequences of one context a replica can hold, per rank (logical core).

    All byte figures are per rank; multiply by ``ranks_per_chip`` for a chip whose ranks all
    serve this model (``per_chip``).

    Attributes
    ----------
    hbm_bytes : float
        HBM of one rank.
    budget_bytes : float
        What the serving engine budgets: ``hbm × memory_utilization``; the rest is left to the
        runtime.
    weight_bytes, microcode_bytes, neff_bytes, reserve_bytes : float
        Resident memory: weights; the runtime's micro-code (sourced, per physical core);
        loaded NEFFs (``n_neffs × bytes``, an assumption); any other reserve (an assumption).
    kv_cap_bytes : float
        vLLM Neuron's cap on the KV cache: ``kv_cap_fraction × budget`` (``inf`` without a cap).
    kv_budget_bytes : float
        Budget left for the KV cache: the smaller of what the resident memory leaves and the
        cap (negative: does not fit even empty).
    blocks_per_sequence : int
    kv_bytes_per_sequence : float
        Whole blocks of one sequence at ``context_len``.
    max_sequences : int
        Sequences that fit (0 if none).
    max_num_seqs : int or None
        A requested ``max_num_seqs``, whose reservation is ``reserved_kv_bytes``.
    """

    context_len: int
    block_size: int
    ranks_per_chip: int
    hbm_bytes: float
    budget_bytes: float
    weight_bytes: float
    microcode_bytes: float
    neff_bytes: float
    reserve_bytes: float
    kv_cap_bytes: float
    kv_budget_bytes: float
    blocks_per_sequence: int
    kv_bytes_per_sequence: float
    max_sequences: int
    max_num_seqs: int | None

    @property
    def cap_binds(self) -> bool:
        """The KV cap, not the memory left beside the resident data, sets the KV budget."""
        return self.kv_budget_bytes == self.kv_cap_bytes

    @property
    def fits(self) -> bool:
        """At least one sequence of ``context_len`` fits."""
        return self.max_sequences >= 1

    @property
    def reserved_kv_bytes(self) -> float | None:
        """KV that ``max_num_seqs × max_model_len`` reserves per rank (None if not given)."""
        return None if self.max_num_seqs is None else self.max_num_seqs * self.kv_bytes_per_sequence

    @property
    def reservation_fits(self) -> bool | None:
        """Whether ``max_num_seqs`` sequences at ``context_len`` fit (None if not given)."""
        return None if self.max_num_seqs is None else self.max_num_seqs <= self.max_sequences

    def table(self) -> pd.DataFrame:
        """Memory of one rank and one chip by component (for a stacked bar).

        Columns ``where`` ("per logical core", "per chip"), ``component``, ``bytes``, ``gib``.
        The KV row is what ``max_num_seqs`` (or ``max_sequences``) sequences take.
        """
        n = self.max_sequences if self.max_num_seqs is None else self.max_num_seqs
        kv = n * self.kv_bytes_per_sequence
        parts = [("weights", self.weight_bytes), ("KV cache", kv),
                 ("NEFFs (assumed)", self.neff_bytes),
                 ("runtime: micro-code + reserve", self.microcode_bytes + self.reserve_bytes)]
        rows = []
        for where, k in (("per logical core", 1), ("per chip", self.ranks_per_chip)):
            for comp, b in parts:
                rows.append({"where": where, "component": comp, "bytes": b * k, "gib": b * k / GiB})
        return pd.DataFrame(rows)

    def _repr_markdown_(self) -> str:
        return (f"**{self.max_sequences} sequences** of {self.context_len:,} tokens fit per replica "
                f"(per rank: {format_bytes(self.hbm_bytes)} HBM, budget {format_bytes(self.budget_bytes)}, "
                f"weights {format_bytes(self.weight_bytes)}, NEFFs {format_bytes(self.neff_bytes)}, "
                f"KV budget {format_bytes(self.kv_budget_bytes)}"
                f"{' (the KV cap)' if self.cap_binds else ''}, "
                f"KV {format_bytes(self.kv_bytes_per_sequence)} per sequence)")


def capacity(rep: Replica, context_len: int, block_size: int = 32, n_neffs: int = 0,
             neff_bytes: float = 0.0, memory_utilization: float | None = None,
             reserve_bytes: float = 0.0, max_num_seqs: int | None = None,
             kv_cap_fraction: float | None = None) -> Capacity:
    """Concurrent sequences of ``context_len`` tokens that fit beside the weights and NEFFs.

    Per rank: ``budget = HBM × memory_utilization``; the KV budget is the smaller of the
    budget less the weights, the runtime's micro-code, the loaded NEFFs and any other reserve,
    and vLLM Neuron's cap ``kv_cap_fraction × budget``; each sequence takes
    ``ceil(context / block_size)`` whole blocks. Give ``context_len = max_model_len`` and
    ``max_num_seqs`` to see whether that reservation fits.

    Parameters
    ----------
    rep : Replica
    context_len : int
        Tokens per sequence (prompt plus output; ``max_model_len`` for a reservation).
    block_size : int
        Tokens per KV block (vLLM ``--block-size``).
    n_neffs : int
        Compiled programs loaded (one per bucket, prefill and decode).
    neff_bytes : float
        Device memory per loaded NEFF per rank: **an assumption** (no AWS page gives it for an
        LLM; the runtime reports it per NEFF, ``NEURON_RT_LOG_LEVEL_TDRV=info``).
    memory_utilization : float, optional
        Share of HBM the engine budgets; default vLLM's ``gpu_memory_utilization`` (0.9,
        ``data/serving.csv``).
    reserve_bytes : float
        Other runtime memory per rank (scratchpad, DMA rings, collectives): an assumption.
    max_num_seqs : int, optional
        Sequences the engine is configured for (vLLM ``--max-num-seqs``).
    kv_cap_fraction : float, optional
        Share of the budget the KV cache may take at most, in (0, 1]; default vLLM Neuron's
        ``VLLM_NEURON_KV_GMU_BUDGET_CAP_FRACTION`` (0.30, ``data/serving.csv``); 1 for no cap.

    References
    ----------
    AWS Neuron docs, "Neuron Device Memory" (memory categories; 96 MB micro-code per physical
    core); vLLM Neuron "determine_available_memory design" (per logical core,
    ``available = min(budget − weights, cap_fraction × budget)``, default cap fraction 0.30);
    Kwon et al. 2023 §4 (blocks).

    Examples
    --------
    >>> c = capacity(replica("llama3-8b", tp=4), 8192)   # the 0.30 cap binds: 6.48 GiB of KV
    >>> c.max_sequences, round(c.kv_bytes_per_sequence / 2**20), c.cap_binds
    (25, 256, True)
    >>> capacity(replica("llama3-8b", tp=4), 8192, kv_cap_fraction=1.0).max_sequences   # no cap
    70
    >>> capacity(replica("llama3-8b", tp=4), 8192, n_neffs=10, neff_bytes=2 * 2**30).max_sequences
    0
    """
    rep = _rep(rep)
    ctx = _tokens("context_len", context_len, minimum=1)
    bs = integer("block_size", block_size, minimum=1, maximum=10**6)
    n_neffs = integer("n_neffs", n_neffs, minimum=0, maximum=10**6)
    neff = _amount("neff_bytes", neff_bytes)
    util = (serving_fact("gpu_memory_utilization_default") if memory_utilization is None
            else _fraction("memory_utilization", memory_utilization))
    reserve = _amount("reserve_bytes", reserve_bytes)
    mns = None if max_num_seqs is None else _batch("max_num_seqs", max_num_seqs)
    cap_fraction = (serving_fact("kv_budget_cap_fraction_default") if kv_cap_fraction is None
                    else _fraction("kv_cap_fraction", kv_cap_fraction))
    budget = rep.hbm_bytes_per_rank * util
    micro = serving_fact("microcode_bytes_per_physical_core") * rep.lnc
    kv_cap = math.inf if cap_fraction >= 1.0 else cap_fraction * budget
    kv_budget = min(budget - rep.weight_bytes_per_rank - micro - n_neffs * neff - reserve, kv_cap)
    blocks = paged_kv_blocks(ctx, bs)
    per_seq = blocks * bs * rep.kv_bytes_per_token_per_rank
    n = int(kv_budget // per_seq) if kv_budget > 0 else 0
    return Capacity(ctx, bs, rep.ranks_per_chip, rep.hbm_bytes_per_rank, budget,
                    rep.weight_bytes_per_rank, micro, n_neffs * neff, reserve, kv_cap, kv_budget, blocks,
                    per_seq, n, mns)


# --------------------------------------------------------------------------- buckets


def bucket_sizes(max_len: int, min_len: int | None = None) -> tuple[int, ...]:
    """NxD Inference's automatic buckets: powers of two from ``min_len`` up to ``max_len``.

    ``max_len`` itself is added when it is not a power of two, so the longest input fits.

    Parameters
    ----------
    max_len : int
        Largest length (context encoding: max context length; token generation: sequence
        length).
    min_len : int, optional
        Smallest bucket; default 128 (``data/serving.csv``).

    References
    ----------
    AWS Neuron docs, "NxD Inference Features Configuration Guide", Bucketing.

    Examples
    --------
    >>> bucket_sizes(4096)
    (128, 256, 512, 1024, 2048, 4096)
    >>> bucket_sizes(3000)
    (128, 256, 512, 1024, 2048, 3000)
    """
    max_len = _tokens("max_len", max_len, minimum=1)
    lo = int(serving_fact("auto_bucket_min_tokens")) if min_len is None else _tokens("min_len", min_len, minimum=1)
    out = []
    b = 1 << max(int(math.ceil(math.log2(lo))), 0)
    while b < max_len:
        out.append(b)
        b *= 2
    out.append(max_len)
    return tuple(out)


def pick_bucket(n_tokens: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds ``n_tokens`` (what NxD Inference picks at run time).

    Examples
    --------
    >>> pick_bucket(300, (128, 256, 512))
    512
    >>> pick_bucket(600, (128, 256, 512))
    Traceback (most recent call last):
    ...
    ValueError: n_tokens must be at most the largest bucket (512); got 600
    """
    n = _tokens("n_tokens", n_tokens, minimum=1)
    bs = sorted(_int_list("buckets", buckets))
    for b in bs:
        if b >= n:
            return b
    raise ValueError(f"n_tokens must be at most the largest bucket ({bs[-1]}); got {n}")


def padding_waste(lengths: Sequence[int], buckets: Sequence[int]) -> float:
    """Share of the tokens run that are padding when each length is padded to its bucket.

    Examples
    --------
    >>> round(padding_waste([100, 200, 300], (128, 256, 512)), 3)   # 600 of 896 tokens are real
    0.33
    """
    ls = _int_list("lengths", lengths)
    bs = np.sort(np.asarray(_int_list("buckets", buckets)))
    arr = np.asarray(ls)
    if arr.min() < 1 or arr.max() > bs[-1]:
        raise ValueError(f"lengths must lie in [1, {int(bs[-1])}] (the largest bucket)")
    padded = bs[np.searchsorted(bs, arr)]
    return float(1.0 - arr.sum() / padded.sum())


def bucket_tradeoff(lengths: Sequence[int], max_len: int, n_buckets: Sequence[int],
                    neff_bytes: float, min_len: int | None = None) -> pd.DataFrame:
    """Padding waste against NEFF memory as the number of buckets grows.

    For ``n`` buckets the sizes are ``n`` lengths spaced evenly in log scale from ``min_len``
    (default 128) to ``max_len``, rounded to whole tokens (one bucket: ``max_len`` alone).
    Each bucket is one more NEFF, costing ``neff_bytes`` per rank (an assumption).

    Returns
    -------
    pandas.DataFrame
        ``n_buckets``, ``buckets`` (text), ``padding_waste``, ``neff_bytes``, ``neff_gib``.

    Examples
    --------
    >>> t = bucket_tradeoff([100, 1000, 4000], 4096, [1, 6], 2**30)
    >>> t.padding_waste.round(3).tolist(), t.neff_gib.tolist()
    ([0.585, 0.028], [1.0, 6.0])
    """
    max_len = _tokens("max_len", max_len, minimum=1)
    lo = int(serving_fact("auto_bucket_min_tokens")) if min_len is None else _tokens("min_len", min_len, minimum=1)
    lo = min(lo, max_len)
    neff = _amount("neff_bytes", neff_bytes)
    rows = []
    for n in _int_list("n_buckets", n_buckets):
        n = max(n, 1)
        if n == 1:
            bs = [max_len]
        else:
            # plain Python powers, rounded to whole tokens: the same on every processor
            bs = sorted({round(lo * (max_len / lo) ** (i / (n - 1))) for i in range(n)} | {max_len})
        rows.append({"n_buckets": len(bs), "buckets": ", ".join(f"{b:,}" for b in bs),
                     "padding_waste": padding_waste(lengths, bs), "neff_bytes": len(bs) * neff,
                     "neff_gib": len(bs) * neff / GiB})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- checking a launch


@dataclass(frozen=True)
class LaunchCheck:
    """A vLLM launch on Trainium checked against the hardware (numbers only; see the repr).

    Attributes
    ----------
    n_ranks : int
        ``tensor-parallel-size × pipeline-parallel-size``: worker ranks, one per logical core.
    logical_cores_available : int
        Logical cores on ``n_chips`` at ``lnc``.
    num_cores : int
        ``NEURON_RT_NUM_CORES``: logical cores the process asks the runtime for.
    chips_for_ranks : float
        Chips the ranks occupy at ``lnc``.
    pp_listed : bool
        Whether the vLLM Neuron features guide lists pipeline parallelism.
    capacity : Capacity
        At ``max_model_len``.
    decode_batch1 : StepEstimate
        One sequence at ``max_model_len``.
    decode_full : StepEstimate or None
        ``capacity.max_sequences`` sequences (None if none fit).
    alternative_tp : int
        TP over every logical core of the ``n_chips`` (if it divides the heads, else 0).
    decode_alternative : StepEstimate or None
        One sequence at that TP.
    """

    model: str
    chip: str
    n_chips: int
    lnc: int
    tp: int
    pp: int
    n_ranks: int
    logical_cores_available: int
    num_cores: int
    chips_for_ranks: float
    max_model_len: int
    block_size: int
    pp_listed: bool
    capacity: Capacity
    decode_batch1: StepEstimate
    decode_full: StepEstimate | None
    alternative_tp: int
    decode_alternative: StepEstimate | None

    @property
    def ranks_match_num_cores(self) -> bool:
        """``tp × pp == NEURON_RT_NUM_CORES``."""
        return self.n_ranks == self.num_cores

    @property
    def num_cores_match_chips(self) -> bool:
        """``NEURON_RT_NUM_CORES`` equals the logical cores of ``n_chips``."""
        return self.num_cores == self.logical_cores_available

    def _repr_markdown_(self) -> str:
        ok, no = "✅", "❌"
        c = self.capacity
        lines = [
            f"**{self.model}, TP {self.tp} × PP {self.pp} on {self.n_chips} {self.chip} chips at LNC={self.lnc}**",
            f"- {ok if self.ranks_match_num_cores else no} ranks: TP × PP = **{self.n_ranks}**; "
            f"`NEURON_RT_NUM_CORES` = **{self.num_cores}**",
            f"- {ok if self.num_cores_match_chips else no} {self.n_chips} chips have "
            f"**{self.logical_cores_available}** logical cores; {self.n_ranks} ranks fill "
            f"**{self.chips_for_ranks:g}** chips",
            f"- {ok if self.pp_listed else no} pipeline parallelism "
            f"{'is' if self.pp_listed else 'is not'} among the vLLM Neuron plugin's parallelism dimensions "
            f"({', '.join(serving_fact('vllm_neuron_parallelism'))})",
            f"- {ok if c.fits else no} memory per rank at max-model-len {self.max_model_len:,}: weights "
            f"{format_bytes(c.weight_bytes)}, {c.max_sequences} sequences of "
            f"{format_bytes(c.kv_bytes_per_sequence)} KV fit",
            f"- decode, one sequence: expected {format_seconds(self.decode_batch1.time_s)} per token "
            f"({self.decode_batch1.tokens_per_s:,.0f} tokens/s; bound {format_seconds(self.decode_batch1.bound_s)})",
        ]
        if self.decode_full is not None:
            lines.append(f"- decode, {c.max_sequences} sequences: expected "
                         f"{self.decode_full.tokens_per_s:,.0f} tokens/s "
                         f"({self.decode_full.tokens_per_s_per_chip:,.0f} per chip in use)")
        if self.decode_alternative is not None:
            d = self.decode_alternative
            lines.append(f"- TP {self.alternative_tp} over all {self.n_chips} chips, one sequence: expected "
                         f"{format_seconds(d.time_s)} per token (bound {format_seconds(d.bound_s)}): its "
                         f"{d.n_collectives} TP all-reduces' fixed cost keeps it far above the bound")
        return "\n".join(lines)


def check_launch(model: str | ModelPreset, n_chips: int, tp: int, pp: int, num_cores: int,
                 max_model_len: int, block_size: int = 32, chip: str = "trn2", lnc: int | None = None,
                 n_neffs: int = 0, neff_bytes: float = 0.0,
                 memory_utilization: float | None = None,
                 kv_cap_fraction: float | None = None) -> LaunchCheck:
    """Check a vLLM-on-Neuron launch: ranks against cores and chips, memory, throughput bound.

    Parameters
    ----------
    model : str or ModelPreset
    n_chips : int
        Chips the write-up says the launch uses.
    tp, pp : int
        ``--tensor-parallel-size`` and ``--pipeline-parallel-size``.
    num_cores : int
        ``NEURON_RT_NUM_CORES``: "Number of NeuronCores required by the process" (Neuron
        Runtime configuration), counted in logical cores (a trn2.48xlarge presents 64 at LNC=2).
    max_model_len, block_size : int
        ``--max-model-len`` and ``--block-size``.
    chip, lnc : str, int
    n_neffs, neff_bytes, memory_utilization, kv_cap_fraction
        As in :func:`capacity` (the NEFF size is an assumption).

    Examples
    --------
    >>> c = check_launch("llama3-70b", n_chips=16, tp=8, pp=2, num_cores=32, max_model_len=16384)
    >>> c.n_ranks, c.num_cores, c.logical_cores_available, c.chips_for_ranks
    (16, 32, 64, 4.0)
    >>> c.capacity.max_sequences, c.pp_listed   # vLLM Neuron's default KV cap binds
    (20, False)
    """
    m = resolve_model(model)
    n_chips = integer("n_chips", n_chips, minimum=1, maximum=100_000)
    num_cores = integer("num_cores", num_cores, minimum=0, maximum=10**7)
    mml = _tokens("max_model_len", max_model_len, minimum=1)
    rep = replica(m, chip, tp, pp, lnc)
    available = n_chips * rep.ranks_per_chip
    cap = capacity(rep, mml, block_size, n_neffs, neff_bytes, memory_utilization,
                   kv_cap_fraction=kv_cap_fraction)
    d1 = decode_step(rep, 1, mml)
    dfull = decode_step(rep, cap.max_sequences, mml) if cap.max_sequences >= 1 else None
    alt_tp = available if m.n_heads % available == 0 else 0
    dalt = (decode_step(replica(m, chip, alt_tp, 1, rep.lnc), 1, mml)
            if alt_tp else None)
    return LaunchCheck(m.name, rep.chip_spec.name, n_chips, rep.lnc, rep.tp, rep.pp,
                       rep.n_ranks, available, num_cores, rep.n_chips, mml, cap.block_size,
                       "pipeline" in serving_fact("vllm_neuron_parallelism"), cap, d1, dfull,
                       alt_tp, dalt)


# --------------------------------------------------------------------------- speculative decoding


def _alpha(alpha: object) -> float:
    return in_range("alpha", alpha, 0.0, 1.0, high_open=True)


def _k(k: object) -> int:
    return integer("k", k, minimum=0, maximum=10_000)


def _c(name: str, c: object) -> float:
    out = positive(name, c, allow_zero=True)
    if out > 1e6:
        raise ValueError(f"{name} must be at most 1e6, got {c!r}")
    return out


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    """Expected tokens one target pass produces with speculation length ``k``.

    ``(1 − α^(k+1)) / (1 − α)``: the draft proposes ``k`` tokens, each accepted with
    probability α (i.i.d.) until the first rejection; the target always adds one token.

    Parameters
    ----------
    alpha : float
        Acceptance rate α, in [0, 1).
    k : int
        Speculation length γ (tokens drafted per pass), >= 0.

    Raises
    ------
    ValueError
        Naming ``alpha`` outside [0, 1) or ``k`` < 0.

    References
    ----------
    Leviathan et al. 2023, §3.1, Equation (1).

    Examples
    --------
    >>> round(expected_tokens_per_pass(0.8, 5), 2)
    3.69
    >>> expected_tokens_per_pass(0.5, 0)
    1.0
    >>> expected_tokens_per_pass(1.0, 5)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be in [0, 1), got 1.0
    """
    a, k = _alpha(alpha), _k(k)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def tokens_per_pass_pmf(alpha: float, k: int) -> pd.DataFrame:
    """Distribution of tokens per target pass: a geometric variable capped at ``k + 1``.

    ``P(T = t) = α^(t−1) (1 − α)`` for ``t = 1 … k`` and ``P(T = k + 1) = α^k``.

    Examples
    --------
    >>> tokens_per_pass_pmf(0.5, 2).probability.tolist()
    [0.5, 0.25, 0.25]
    """
    a, k = _alpha(alpha), _k(k)
    t = np.arange(1, k + 2)
    p = a ** (t - 1) * (1.0 - a)
    p[-1] = a ** k
    return pd.DataFrame({"tokens": t, "probability": p})


def speculative_speedup(alpha: float, k: int, c: float = 0.0, verify_cost: float = 1.0) -> float:
    """Expected walltime speed-up of speculative decoding over plain decoding.

    ``E(tokens) / (k·c + verify_cost)`` with ``E`` from :func:`expected_tokens_per_pass`.
    With ``verify_cost = 1`` (verifying ``k + 1`` tokens takes one target step, the paper's
    assumption, true while decode is HBM-bound) this is Theorem 3.8:
    ``(1 − α^(k+1)) / ((1 − α)(k·c + 1))``.

    Parameters
    ----------
    alpha, k
        As in :func:`expected_tokens_per_pass`.
    c : float
        Cost coefficient: time of one draft step over time of one target step (>= 0).
    verify_cost : float
        Time of the target pass that verifies ``k + 1`` tokens over one plain target step
        (>= 1 in practice; :func:`speculative_decode` computes it from the roofline).

    References
    ----------
    Leviathan et al. 2023, Definition 3.7 and Theorem 3.8; Table 1 (c = 0).

    Examples
    --------
    >>> round(speculative_speedup(0.8, 5), 2), round(speculative_speedup(0.8, 5, c=0.05), 2)
    (3.69, 2.95)
    """
    e = expected_tokens_per_pass(alpha, k)
    c = _c("c", c)
    v = in_range("verify_cost", verify_cost, 0.0, 1e6, low_open=True)
    return e / (_k(k) * c + v)


def speculative_operations_factor(alpha: float, k: int, c_hat: float = 0.0) -> float:
    """Expected factor by which speculative decoding increases the total arithmetic.

    ``(1 − α)(k·ĉ + k + 1) / (1 − α^(k+1))``: each pass runs ``k + 1`` target evaluations and
    ``k`` draft ones (ĉ: draft operations per token over the target's), for ``E`` tokens.

    References
    ----------
    Leviathan et al. 2023, Definition 3.10 and Theorem 3.11; Table 1.

    Examples
    --------
    >>> round(speculative_operations_factor(0.8, 5), 2)
    1.63
    """
    e = expected_tokens_per_pass(alpha, k)
    c_hat = _c("c_hat", c_hat)
    k = _k(k)
    return (k * c_hat + k + 1) / e


def speculative_speedup_lower_bound(alpha: float, c: float) -> float:
    """If α > c some speculation length helps, by at least ``(1 + α) / (1 + c)`` (k = 1).

    References
    ----------
    Leviathan et al. 2023, Corollary 3.9.

    Examples
    --------
    >>> round(speculative_speedup_lower_bound(0.8, 0.1), 6) == round(speculative_speedup(0.8, 1, 0.1), 6)
    True
    """
    a = _alpha(alpha)
    c = _c("c", c)
    return (1.0 + a) / (1.0 + c)


def best_speculation_length(alpha: float, c: float, k_max: int = 64, verify_cost: float = 1.0) -> int:
    """The speculation length in ``0 … k_max`` that maximises :func:`speculative_speedup`.

    The paper finds it numerically (its §3.5 and Figure 3); 0 means "do not speculate".

    Examples
    --------
    >>> best_speculation_length(0.8, 0.05), best_speculation_length(0.5, 0.6)
    (8, 0)
    """
    a = _alpha(alpha)
    c = _c("c", c)
    k_max = integer("k_max", k_max, minimum=0, maximum=1000)
    v = in_range("verify_cost", verify_cost, 0.0, 1e6, low_open=True)
    ks = np.arange(k_max + 1)
    s = (1.0 - a ** (ks + 1)) / (1.0 - a) / (ks * c + np.where(ks == 0, 1.0, v))
    return int(np.argmax(s))


def speculation_table(alpha: float, c: float = 0.0, k_max: int = 12, c_hat: float | None = None) -> pd.DataFrame:
    """Expected tokens, speed-up and arithmetic factor for ``k = 0 … k_max`` (tidy, for a chart).

    ``c_hat`` defaults to ``c`` (draft cost in operations taken equal to its cost in time).

    Returns
    -------
    pandas.DataFrame
        Columns ``k``, ``expected_tokens``, ``speedup``, ``operations_factor``.

    Examples
    --------
    >>> speculation_table(0.8, 0.0, 5).speedup.round(2).tolist()[-1]
    3.69
    """
    a, c = _alpha(alpha), _c("c", c)
    ch = c if c_hat is None else _c("c_hat", c_hat)
    k_max = integer("k_max", k_max, minimum=0, maximum=1000)
    return pd.DataFrame([{"k": k, "expected_tokens": expected_tokens_per_pass(a, k),
                          "speedup": speculative_speedup(a, k, c),
                          "operations_factor": speculative_operations_factor(a, k, ch)}
                         for k in range(k_max + 1)])


@dataclass(frozen=True)
class SpeculationSimulation:
    """A seeded accept/reject simulation of speculative decoding.

    Attributes
    ----------
    alpha, k, n_passes, seed
    mean_tokens : float
        Tokens per target pass, averaged over the passes.
    stderr : float
        Standard error of ``mean_tokens`` (sample standard deviation / sqrt(n)).
    expected_tokens : float
        Equation (1).
    counts : tuple of int
        Passes that produced 1, 2, …, k + 1 tokens.
    """

    alpha: float
    k: int
    n_passes: int
    seed: int
    mean_tokens: float
    stderr: float
    expected_tokens: float
    counts: tuple[int, ...]

    @property
    def z_score(self) -> float:
        """(simulated − formula) / standard error (0 when the spread is 0)."""
        if self.stderr == 0:
            return 0.0
        return (self.mean_tokens - self.expected_tokens) / self.stderr

    def histogram(self) -> pd.DataFrame:
        """Simulated share of passes per token count beside the formula's probability."""
        pmf = tokens_per_pass_pmf(self.alpha, self.k)
        pmf["simulated"] = np.asarray(self.counts, dtype=float) / self.n_passes
        return pmf

    def _repr_markdown_(self) -> str:
        return (f"{self.n_passes:,} passes (α = {self.alpha:g}, k = {self.k}, seed {self.seed}): "
                f"**{self.mean_tokens:.3f} ± {self.stderr:.3f}** tokens per pass; Equation (1) gives "
                f"**{self.expected_tokens:.3f}** ({self.z_score:+.1f} standard errors)")


def simulate_speculation(alpha: float, k: int, n_passes: int = 100_000, seed: int = 0) -> SpeculationSimulation:
    """Play speculative decoding's accept/reject step ``n_passes`` times.

    In each pass the draft proposes ``k`` tokens; position by position each is accepted with
    probability α (a uniform draw below α) until the first rejection, after which the rest
    are discarded; the target then adds one token of its own. Integer counts only, so the
    result is the same on every processor.

    Parameters
    ----------
    alpha, k
        As in :func:`expected_tokens_per_pass`.
    n_passes : int
        Target passes simulated (1 to 10,000,000).
    seed : int
        Seed of ``numpy.random.default_rng``.

    References
    ----------
    Leviathan et al. 2023, §2.3 (Algorithm 1) and §3.1 (the i.i.d. assumption behind
    Equation (1)).

    Examples
    --------
    >>> s = simulate_speculation(0.8, 5, 100_000, seed=0)
    >>> abs(s.z_score) < 3, round(s.expected_tokens, 2)
    (True, 3.69)
    """
    a, k = _alpha(alpha), _k(k)
    n = integer("n_passes", n_passes, minimum=1, maximum=10_000_000)
    seed = integer("seed", seed, minimum=0, maximum=2**63 - 1)
    rng = np.random.default_rng(seed)
    accepted = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    for _ in range(k):
        draws = rng.random(n) < a
        alive &= draws
        accepted += alive
        if not alive.any():
            break
    tokens = accepted + 1
    counts = np.bincount(tokens, minlength=k + 2)[1:]
    mean = float(tokens.mean())
    std = float(tokens.std(ddof=1)) if n > 1 else 0.0
    return SpeculationSimulation(a, k, n, seed, mean, std / math.sqrt(n),
                                 expected_tokens_per_pass(a, k), tuple(int(x) for x in counts))


@dataclass(frozen=True)
class SpeculativeEstimate:
    """Speculative decoding on Trainium, with ``c`` and the verification cost from the roofline.

    Attributes
    ----------
    c : float
        Draft decode step over target decode step (same batch and context).
    verify_cost : float
        Target pass over ``k + 1`` tokens per sequence, over a one-token step.
    expected_tokens, speedup : float
    tokens_per_s_per_chip : float
        Target replica's chips only.
    """

    alpha: float
    k: int
    batch: int
    c: float
    verify_cost: float
    expected_tokens: float
    speedup: float
    target_step_s: float
    tokens_per_s_per_chip: float

    def _repr_markdown_(self) -> str:
        return (f"α = {self.alpha:g}, k = {self.k}, batch {self.batch}: c = {self.c:.3f}, "
                f"verification costs {self.verify_cost:.2f} steps, **speed-up {self.speedup:.2f}×**")


def speculative_decode(target: Replica, draft: Replica, alpha: float, k: int, batch: int = 1,
                       context_len: int = 1024) -> SpeculativeEstimate:
    """Speculative decoding's speed-up with ``c`` and verification cost from decode bounds.

    ``c = t_draft / t_target`` (one decode step each) and ``verify_cost = t_target(k + 1 tokens
    per sequence) / t_target(1)``; the speed-up is :func:`speculative_speedup`. While the target
    is HBM-bound, verifying ``k + 1`` tokens reads the weights and KV once, costing about one
    step (Theorem 3.8's assumption); at larger batches it turns compute-bound and speculation
    pays less. Both steps are :func:`decode_step`'s expectations, so each pays its TP all-reduces'
    fixed cost (the draft's layers too): a small draft on many ranks is not as cheap as its
    weights suggest.

    Examples
    --------
    >>> t, d = replica("llama3-70b", tp=32), replica("llama3-8b", tp=32)   # both on 8 chips
    >>> e = speculative_decode(t, d, 0.8, 5, batch=1)
    >>> round(e.c, 3), round(e.verify_cost, 2), round(e.speedup, 2)
    (0.312, 1.0, 1.44)
    >>> round(speculative_decode(t, d, 0.8, 5, batch=128).verify_cost, 2)
    1.52
    """
    target = _rep(target)
    if not isinstance(draft, Replica):
        raise ValueError(f"draft must be a Replica (see serving.replica); got {draft!r}")
    a, k = _alpha(alpha), _k(k)
    b = _batch("batch", batch)
    ctx = _tokens("context_len", context_len)
    t1 = decode_step(target, b, ctx).time_s
    tv = decode_step(target, b, ctx, tokens_per_sequence=k + 1).time_s
    td = decode_step(draft, b, ctx).time_s
    c, v = td / t1, tv / t1
    e = expected_tokens_per_pass(a, k)
    s = speculative_speedup(a, k, c, v)
    return SpeculativeEstimate(a, k, b, c, v, e, s, t1, b / t1 * s / target.n_chips)


# =========================================================================== what NxD Inference and vLLM Neuron do
# (issue 28: speculation methods, KV sharding, shared NEFF scratchpad, quantised weights, prefix
# caching, disaggregated serving, MoE serving, cost per token; the step latency itself is
# decode_step's)


def speculation_methods() -> pd.DataFrame:
    """The speculative-decoding methods of the Neuron serving stacks, side by side (``data/speculation_methods.csv``).

    Columns ``method, library, status`` (``supported`` or ``legacy``), ``configuration``,
    ``draft`` (what proposes the tokens), ``source_id`` and ``note``.

    References
    ----------
    vLLM Neuron plugin, "How to use vLLM Neuron features" (EAGLE3 and DFlash) and README known
    issues (draft-model speculation only on the legacy v0 fork); AWS Neuron docs, "NxD Inference
    Features Configuration Guide" (speculative decoding, fused speculation, EAGLE, Medusa).

    Examples
    --------
    >>> t = speculation_methods()
    >>> sorted(t[t.library == "vLLM Neuron plugin"].method)
    ['DFlash', 'EAGLE3']
    >>> t[(t.method == "draft model") & (t.library != "NxD Inference")].status.tolist()
    ['legacy']
    """
    return specs.read_data_csv("speculation_methods.csv")


def eagle_draft_model(model: str | ModelPreset) -> ModelPreset:
    """An EAGLE-style draft for ``model``: one decoder layer of the target's shape plus its LM head.

    EAGLE (Li et al. 2024) drafts with a single transformer layer that reads the target's hidden
    states and reuses the target's embedding and LM head; its per-token cost is one layer and
    the LM head, against the target's ``L`` layers and LM head. Counted here as a one-layer
    model of the target's width and vocabulary (its embedding rows are read one per token, so
    counting the input embedding as weights read makes the draft's cost a slight overestimate).

    References
    ----------
    Y. Li, F. Wei, C. Zhang, H. Zhang, "EAGLE: Speculative Sampling Requires Rethinking Feature
    Uncertainty", ICML 2024, arXiv:2401.15077; EAGLE-3, arXiv:2503.01840 (2025).

    Examples
    --------
    >>> d = eagle_draft_model("llama3-70b")
    >>> d.n_layers, d.d_model, round(d.n_params / 1e9, 2)
    (1, 8192, 2.96)
    """
    from trainium_lab.layouts import custom_model

    m = resolve_model(model)
    return custom_model(f"EAGLE draft for {m.name}", n_layers=1, d_model=m.d_model, n_heads=m.n_heads,
                        n_kv_heads=m.n_kv_heads, ffn_dim=m.ffn_dim, vocab_size=m.vocab_size, seq_len=m.seq_len)


def attention_decode_intensity(model: str | ModelPreset, kv_dtype: str = "bfloat16") -> float:
    """FLOPs per byte of attention in a decode step: ``2·a / (g·b_kv)``, the GQA group in BF16.

    Per layer, token and cached position, attention does ``2·a·d`` FLOPs for ``q·kᵀ`` and as
    many for the weighted sum of values (``a`` query heads of size ``d``) and reads the cached
    key and value, ``2·g·d·b_kv`` bytes (``g`` KV heads). Batching does not raise it: every
    sequence reads its own cache. So attention stays memory-bound at any batch while the weight
    matmuls (:func:`weight_critical_batch`) turn compute-bound near the ridge point.

    References
    ----------
    J. Austin et al., "How to Scale Your Model" (scaling-book), inference chapter, "Theoretical
    step time (general)": attention is bandwidth-bound; its step time is added to the larger of
    the MLP's compute and weight loading.

    Examples
    --------
    >>> attention_decode_intensity("llama3-70b"), attention_decode_intensity("llama3-70b", "float8_e4m3fn")
    (8.0, 16.0)
    """
    m = resolve_model(model)
    b = _dtype_bytes("kv_dtype", kv_dtype)
    return 4.0 * m.n_heads / (2.0 * m.n_kv_heads * b)


def weight_critical_batch(chip: str = "trn2", bytes_per_weight: float = 2.0,
                          compute_dtype: str = "bfloat16") -> float:
    """The batch at which a decode step's weight matmuls turn compute-bound: ``(P/BW) · b_w / 2``.

    A weight of ``b_w`` bytes read once per step does 2 FLOPs per sequence in the batch, so the
    matmuls' intensity is ``2·B / b_w``; it meets the ridge point ``P/BW`` at this ``B``,
    whatever the context (attention, bandwidth-bound, adds its own time on top). Weight-only
    quantisation (FP8 or INT8 weights, dequantised to BF16 for the matmul) halves ``b_w`` and so
    halves the batch; FP8 compute at the double-FP8 peak restores it.

    References
    ----------
    scaling-book, inference chapter (the critical batch and weight quantisation); AWS Neuron
    docs, NxD Inference MoE deep dive ("weights quantized to FP8 ... with BF16 compute").

    Examples
    --------
    >>> round(weight_critical_batch("trn2")), round(weight_critical_batch("trn2", 1.0))
    (230, 115)
    """
    c = specs.chip(chip)
    b = in_range("bytes_per_weight", bytes_per_weight, 0.0, 16.0, low_open=True)
    if compute_dtype not in c.dense_flops_per_s:
        raise ValueError(f"compute_dtype must be one of {', '.join(c.dense_flops_per_s)} for {c.name}; "
                         f"got {compute_dtype!r}")
    return c.dense_flops_per_s[compute_dtype] / c.hbm_bytes_per_s * b / 2.0


#: weight formats compared in chapter 09 (``weight_dtype`` names; bytes from ``dtypes`` and
#: :data:`INTEGER_WEIGHT_BYTES`): BF16; FP8 (AWS's trn2-llama3.1-405b and trn2-llama3.3-70b-fp8
#: tutorials); INT8 weight-only (the NxD Inference feature guide's quantization section)
WEIGHT_FORMATS: tuple[str, ...] = ("bfloat16", "float8_e4m3fn", "int8")


def quantized_weights_table(model: str | ModelPreset, chip: str = "trn2", tp: int = 1) -> pd.DataFrame:
    """What each weight format does to weight bytes, per rank, and to the critical batch.

    Returns
    -------
    pandas.DataFrame
        ``format, bytes_per_weight, weight_bytes, weight_bytes_per_rank, critical_batch``
        (:func:`weight_critical_batch`, BF16 compute).

    Examples
    --------
    >>> t = quantized_weights_table("llama3-405b", tp=64)
    >>> [round(x / 2**30) for x in t.weight_bytes_per_rank], [round(b) for b in t.critical_batch]
    ([12, 6, 6], [230, 115, 115])
    """
    m = resolve_model(model)
    tp = integer("tp", tp, minimum=1, maximum=100_000)
    specs.chip(chip)
    n = float(m.exact_params())
    rows = []
    for f in WEIGHT_FORMATS:
        b = _weight_bytes_per_element(f)
        rows.append(dict(format=f, bytes_per_weight=b, weight_bytes=n * b, weight_bytes_per_rank=n * b / tp,
                         critical_batch=weight_critical_batch(chip, b)))
    return pd.DataFrame(rows)


#: the quantisation modes chapter 09 compares: mode -> (weight dtype, matmul dtype, KV-cache dtype).
#: ``fp8-static`` is what vLLM Neuron ships for Llama 3 (a ModelOpt checkpoint with per-tensor static
#: weight, activation and KV-cache scales, run as FP8 matmuls: model recipe llama-3.md, "Quantization");
#: ``int8-weight-only`` keeps BF16 matmuls and dequantises the weights (the NxD Inference feature guide)
@dataclass(frozen=True)
class QuantizationMode:
    """One row of :data:`QUANTIZATION_MODES`: the weights' dtype, the peak-rate key the matmuls run
    at (``specs.Chip.dense_flops_per_s``), and the KV cache's dtype."""

    weight_dtype: str
    matmul_peak: str
    kv_dtype: str


QUANTIZATION_MODES: dict[str, QuantizationMode] = {
    mode: QuantizationMode(*fields) for mode, fields in (
        ("bf16", ("bfloat16", "bf16", "bfloat16")),
        ("fp8-static", ("float8_e4m3fn", "fp8", "float8_e4m3fn")),
        ("int8-weight-only", ("int8", "bf16", "bfloat16")))}


def quantization_modes_table(model: str | ModelPreset, chip: str = "trn2", tp: int = 1) -> pd.DataFrame:
    """What each quantisation mode (:data:`QUANTIZATION_MODES`) does to decode's roofline.

    The weight matmuls read ``b_w`` bytes per weight and do 2 FLOPs per sequence: intensity ``2·B/b_w``
    against the ridge point ``P/BW`` of the dtype the matmul runs in, so they turn compute-bound at
    ``B* = (P/BW)·b_w/2`` (:func:`weight_critical_batch`). Weight-only INT8 halves ``b_w`` at the BF16
    peak: ``B*`` halves. Static FP8 halves ``b_w`` and runs the matmul at the FP8 peak, which raises
    the ridge: ``B*`` stays near the BF16 value. Attention's intensity (:func:`attention_decode_intensity`)
    depends only on the KV-cache dtype.

    Returns
    -------
    pandas.DataFrame
        ``mode, weight_dtype, compute_dtype, kv_dtype, bytes_per_weight, weight_bytes_per_rank,
        ridge_flop_per_byte, critical_batch, attention_flop_per_byte``.

    References
    ----------
    AWS Neuron 2.32 docs: vllm-neuron/docs/model-recipes/llama-3.md ("Quantization": per-tensor static
    FP8 with weight, activation and KV-cache scales); features-guide.md ("FP8 static weight
    quantization", "KV cache FP8 quantization"); scaling-book, inference chapter (critical batch).

    Examples
    --------
    >>> t = quantization_modes_table("llama3-70b", "trn2", tp=8).set_index("mode")
    >>> [round(b) for b in t.critical_batch]
    [230, 224, 115]
    >>> t.attention_flop_per_byte.tolist()
    [8.0, 16.0, 8.0]
    """
    m = resolve_model(model)
    tp = integer("tp", tp, minimum=1, maximum=100_000)
    c = specs.chip(chip)
    n = float(m.exact_params())
    rows = []
    for mode, q in QUANTIZATION_MODES.items():
        w, comp, kv = q.weight_dtype, q.matmul_peak, q.kv_dtype
        b = _weight_bytes_per_element(w)
        rows.append(dict(mode=mode, weight_dtype=w, compute_dtype=comp, kv_dtype=kv, bytes_per_weight=b,
                         weight_bytes_per_rank=n * b / tp,
                         ridge_flop_per_byte=c.dense_flops_per_s[comp] / c.hbm_bytes_per_s,
                         critical_batch=weight_critical_batch(chip, b, comp),
                         attention_flop_per_byte=attention_decode_intensity(m, kv)))
    return pd.DataFrame(rows)


#: how the KV cache can be laid out over a TP group (Neuron names in kv_sharding's docstring)
KV_SHARDING = ("replicate", "flash-decoding", "attention-dp", "context-parallel")


@dataclass(frozen=True)
class KVSharding:
    """One KV-cache layout of a replica (:func:`kv_sharding`); bytes per rank.

    Attributes
    ----------
    strategy : str
    degree : int
        Attention-DP or context-parallel degree (1 otherwise).
    kv_bytes_per_token_per_rank : float
        Cache one rank stores per token of the batch (all sequences averaged).
    copies : float
        Copies of each cached value across the replica (1: no replication).
    comm_bytes_per_layer : float
        Bytes each rank exchanges per layer and decode step for the layout (beyond TP's own
        all-reduces), for ``batch`` sequences.
    """

    strategy: str
    degree: int
    kv_bytes_per_token_per_rank: float
    copies: float
    comm_bytes_per_layer: float

    def _repr_markdown_(self) -> str:
        return (f"**{self.strategy}** (degree {self.degree}): {format_bytes(self.kv_bytes_per_token_per_rank)} "
                f"per token per rank, {self.copies:g} cop{'y' if self.copies == 1 else 'ies'}, "
                f"{format_bytes(self.comm_bytes_per_layer)} exchanged per layer and step")


def kv_sharding(rep: Replica, strategy: str = "replicate", degree: int | None = None,
                batch: int = 1) -> KVSharding:
    """The KV cache per rank, and what it costs to exchange, under one layout.

    With ``g`` KV heads, ``a`` query heads of size ``d`` and TP degree ``t``:

    * ``"replicate"`` (NxD Inference's ``REPLICATE_TO_TP_DEGREE``): each of the ``t/g`` ranks
      that share a KV head stores it whole, ``max(1, t/g)`` copies; no extra exchange.
    * ``"flash-decoding"`` (NxD Inference ``flash_decoding_enabled``): those ``t/g`` ranks
      shard the sequence instead, so each stores ``1/t`` of the cache; per layer they combine
      partial attention: outputs of the group's ``a/g`` query heads plus two softmax
      statistics per head, ``B·(a/g)·(d + 2)·b_act`` bytes.
    * ``"attention-dp"`` (vLLM Neuron attention data parallelism, "the KV cache is always
      batch-sharded"): ``degree`` groups of ``t/degree`` ranks each run attention for
      ``B/degree`` of the sequences; copies ``max(1, (t/degree)/g)``; the hidden states are
      all-gathered into the MLP's TP group and scattered back, ``2·B·h·b_act·(degree−1)/degree``.
    * ``"context-parallel"`` (vLLM Neuron decode context parallelism, DCP, "shards the KV cache
      sequence dimension"): ``degree`` groups each hold ``1/degree`` of every sequence; copies
      ``max(1, t/g)/degree`` (at least 1); per layer the partial outputs and their log-sum-exp
      of the rank's ``a/t`` heads are gathered, ``B·(a/t)·(d + 1)·b_act·(degree−1)``.

    References
    ----------
    AWS Neuron docs, NxD Inference "Tensor-parallelism support" app note and feature guide
    (``REPLICATE_TO_TP_DEGREE``, flash decoding); vLLM Neuron design docs
    ``design/parallelism/attention_dp.md`` and ``dcp.md``; AWS's Qwen3-235B card
    (``attention_dp_degree`` 8, ``cp_degree`` 16); T. Dao et al., "Flash-Decoding for
    long-context inference" (2023); scaling-book, inference chapter (KV sharded by batch).

    Examples
    --------
    >>> r = replica("llama3-70b", tp=32)
    >>> [round(kv_sharding(r, s, 4).kv_bytes_per_token_per_rank / 1024, 1) for s in KV_SHARDING]
    [40.0, 10.0, 10.0, 10.0]
    >>> kv_sharding(r, "replicate").copies, kv_sharding(r, "flash-decoding").copies
    (4.0, 1.0)
    """
    rep = _rep(rep)
    strategy = choice("strategy", strategy, KV_SHARDING)
    batch = _batch("batch", batch)
    m, t = rep.model, rep.tp
    g, a, d = m.n_kv_heads, m.n_heads, _head_dim(m)
    share = max(1.0, t / g)                    # ranks that would hold each KV head
    total = rep.kv_bytes_per_token * rep.layers_per_stage / m.n_layers   # one stage's cache per token
    act = rep.activation_bytes
    if strategy in ("replicate", "flash-decoding"):
        deg = 1
    else:
        deg = integer("degree", t if degree is None else degree, minimum=1, maximum=t)
        if t % deg:
            raise ValueError(f"degree must divide tp ({t}); got {deg}")
    if strategy == "replicate":
        copies, comm = max(1.0, rep.kv_heads_per_rank * t / g), 0.0
    elif strategy == "flash-decoding":
        copies = 1.0
        comm = batch * (a / g) * (d + 2) * act if t > g else 0.0
    elif strategy == "attention-dp":
        copies = max(1.0, (t / deg) / g)
        comm = 2.0 * batch * m.d_model * act * (deg - 1) / deg
    else:
        copies = max(1.0, share / deg)
        comm = batch * (a / t) * (d + 1) * act * (deg - 1)
    return KVSharding(strategy, deg, total * copies / t, copies, comm)


def kv_sharding_table(rep: Replica, context_len: int, batch: int = 1, degree: int | None = None,
                      block_size: int = 32) -> pd.DataFrame:
    """Every layout of :data:`KV_SHARDING` side by side: bytes per rank, copies, exchange, sequences that fit.

    ``sequences_fit`` divides the KV budget of :func:`capacity` (the same HBM, weights and cap)
    by each layout's cache per sequence of ``context_len`` tokens.

    Examples
    --------
    >>> t = kv_sharding_table(replica("llama3-70b", tp=32), 16384, degree=4)
    >>> t.set_index("strategy").sequences_fit.tolist()
    [10, 41, 41, 41]
    """
    rep = _rep(rep)
    ctx = _tokens("context_len", context_len, minimum=1)
    budget = capacity(rep, ctx, block_size=block_size).kv_budget_bytes
    rows = []
    for s in KV_SHARDING:
        k = kv_sharding(rep, s, degree, batch)
        per_seq = paged_kv_blocks(ctx, block_size) * block_size * k.kv_bytes_per_token_per_rank
        rows.append(dict(strategy=s, degree=k.degree, kv_bytes_per_token_per_rank=k.kv_bytes_per_token_per_rank,
                         copies=k.copies, comm_bytes_per_layer=k.comm_bytes_per_layer,
                         sequences_fit=int(budget // per_seq) if budget > 0 else 0))
    return pd.DataFrame(rows)


def neff_memory_bytes(scratchpad_bytes: Sequence[float], other_bytes: Sequence[float],
                      shared_scratchpad: bool = True) -> float:
    """Device memory of the NEFFs loaded on one NeuronCore.

    The Neuron runtime "allocates a shared scratchpad ... shared by all NEFFs loaded on a
    particular NeuronCore", sized to "the largest scratchpad among all the loaded NEFFs"; each
    NEFF's code, constants and DMA rings (``other_bytes``) still add up. So
    ``max(scratchpad) + Σ other`` (``shared_scratchpad=False`` gives the naive sum of both).

    References
    ----------
    AWS Neuron docs, "Neuron Device Memory" (shared scratchpad; memory categories).

    Examples
    --------
    >>> GiB_ = 2**30
    >>> round(neff_memory_bytes([0.4 * GiB_] * 14, [0.1 * GiB_] * 14) / GiB_, 2)
    1.8
    >>> round(neff_memory_bytes([0.4 * GiB_] * 14, [0.1 * GiB_] * 14, shared_scratchpad=False) / GiB_, 2)
    7.0
    """
    sp = [_amount("scratchpad_bytes", x) for x in _seq("scratchpad_bytes", scratchpad_bytes)]
    other = [_amount("other_bytes", x) for x in _seq("other_bytes", other_bytes)]
    if len(sp) != len(other):
        raise ValueError(f"other_bytes must have one value per NEFF ({len(sp)}), got {len(other)}")
    if shared_scratchpad not in (True, False):
        raise ValueError(f"shared_scratchpad must be True or False, got {shared_scratchpad!r}")
    return (max(sp) + sum(other)) if shared_scratchpad else (sum(sp) + sum(other))


def _seq(name: str, values: object) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, np.ndarray, range)):
        raise ValueError(f"{name} must be a non-empty list of byte counts, got {values!r}")
    out = list(values)
    if not out or len(out) > 100_000:
        raise ValueError(f"{name} must hold 1 to 100,000 values, got {len(out)}")
    return out


def prefix_cache_ttft_ratio(hit_rate: float, fixed_fraction: float, prompt_tokens: int | None = None,
                            buckets: Sequence[int] | None = None) -> float:
    """TTFT with prefix caching over TTFT without: ``f + (1 − f)·(1 − h)``.

    A share ``h`` of the prompt's tokens is found in the cache, so only ``1 − h`` of the
    prefill work that grows with the tokens is done; a share ``f`` of TTFT does not shrink
    (scheduling, the first decode step, the block-KV layout, attention to the cached keys).
    The speed-up is its inverse, at most ``1/(1 − h)`` (Amdahl).

    With ``prompt_tokens`` and ``buckets`` the work is the padded work: NxD Inference runs
    context encoding in the smallest compiled bucket that holds the tokens, so the variable
    part is ``bucket((1 − h)·p) / bucket(p)`` instead of ``1 − h`` (:func:`pick_bucket`): a
    cache that moves the uncached tokens below a bucket boundary saves more than its hit rate.

    Examples
    --------
    >>> round(1 / prefix_cache_ttft_ratio(0.9, 0.2), 2), round(1 / prefix_cache_ttft_ratio(0.25, 0.0), 2)
    (3.57, 1.33)
    >>> round(1 / prefix_cache_ttft_ratio(0.25, 0.0, 2200, (512, 1024, 2048, 4096, 8192)), 2)
    2.0
    """
    h = _fraction("hit_rate", hit_rate) if hit_rate != 0 else 0.0
    f = in_range("fixed_fraction", fixed_fraction, 0.0, 1.0)
    if (prompt_tokens is None) != (buckets is None):
        raise ValueError("prompt_tokens and buckets must be given together (or neither), "
                         f"got prompt_tokens={prompt_tokens!r}, buckets={buckets!r}")
    if prompt_tokens is None:
        return f + (1.0 - f) * (1.0 - h)
    p = _tokens("prompt_tokens", prompt_tokens, minimum=1)
    bs = _int_list("buckets", buckets)
    uncached = max(1, math.ceil((1.0 - h) * p))
    return f + (1.0 - f) * pick_bucket(uncached, bs) / pick_bucket(p, bs)


def disaggregated_server_ratio(prefill_s_per_request: float, decode_step_s: float, batch: int,
                               output_tokens: int) -> float:
    """Prefill servers needed per decode server when prefill and decode run apart.

    A decode server holding ``batch`` sequences that each generate ``output_tokens`` at one
    token per ``decode_step_s`` finishes ``batch / (output_tokens · decode_step_s)`` requests
    per second; each needs ``prefill_s_per_request`` of a prefill server. The ratio is their
    product (scaling-book works it the same way).

    References
    ----------
    scaling-book, inference chapter ("Disaggregated serving"); AWS Neuron docs, NxD Inference
    "Disaggregated inference" developer guide (1P1D and xPyD).

    Examples
    --------
    >>> disaggregated_server_ratio(0.5, 0.02, 64, 400)   # 8 requests/s per decode server × 0.5 s
    4.0
    """
    p = positive("prefill_s_per_request", prefill_s_per_request)
    s = positive("decode_step_s", decode_step_s)
    b = _batch("batch", batch)
    n = _tokens("output_tokens", output_tokens, minimum=1)
    return b / (n * s) * p


def expected_unique_experts(n_experts: int, experts_per_token: int, batch: int) -> float:
    """Distinct experts a decode batch touches in one MoE layer: ``E·(1 − (1 − k/E)^B)``.

    Each of ``B`` tokens picks ``k`` of ``E`` experts; with a balanced router each expert is
    missed by one token with probability ``1 − k/E``, by all of them with that to the ``B``.

    Examples
    --------
    >>> round(expected_unique_experts(256, 8, 16), 1), round(expected_unique_experts(128, 8, 1))
    (102.0, 8)
    """
    e = integer("n_experts", n_experts, minimum=1, maximum=10**5)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=e)
    b = _batch("batch", batch)
    return e * (1.0 - (1.0 - k / e) ** b)


#: NxD Inference's switch from selective loading to all experts: batch·k >= alpha·E, alpha "typically
#: between 0.8-1" (MoE deep dive); the default takes the middle
SELECTIVE_LOADING_ALPHA = 0.9


def moe_decode_expert_bytes(model: str | ModelPreset, batch: int, bytes_per_weight: float = 2.0,
                            alpha: float = SELECTIVE_LOADING_ALPHA) -> pd.DataFrame:
    """Expert weights a decode step reads per MoE layer: selective loading against all experts.

    *Selective loading* reads only the experts the batch routes to (:func:`expected_unique_experts`,
    with the DMA indirection it needs); *all experts* reads all ``E`` with plain DMA and masks
    the unused outputs. NxD Inference switches to all experts once ``B·k ≥ α·E``.

    Returns
    -------
    pandas.DataFrame
        ``strategy`` (``selective``, ``all-experts``), ``experts_read``, ``bytes_per_layer``,
        ``chosen`` (the one NxD's rule picks).

    References
    ----------
    AWS Neuron docs, NxD Inference "Deep dive: MoE inference", *Selective loading* and
    *All-Experts algorithm*.

    Examples
    --------
    >>> t = moe_decode_expert_bytes("qwen3-235b-a22b", 4)
    >>> t.set_index("strategy").experts_read.round(1).to_dict(), t[t.chosen].strategy.item()
    ({'selective': 29.1, 'all-experts': 128.0}, 'selective')
    """
    from trainium_lab.sizing import resolve_model as _resolve

    m = _resolve(model)
    if not m.is_moe:
        raise ValueError(f"model must be a mixture-of-experts model; {m.name} is dense")
    b = _batch("batch", batch)
    w = in_range("bytes_per_weight", bytes_per_weight, 0.0, 16.0, low_open=True)
    al = in_range("alpha", alpha, 0.0, 1.0, low_open=True)
    expert = 3.0 * m.d_model * m.expert_ffn_dim * w
    sel = expected_unique_experts(m.n_experts, m.experts_per_token, b)
    all_experts = b * m.experts_per_token >= al * m.n_experts
    return pd.DataFrame([dict(strategy="selective", experts_read=sel, bytes_per_layer=sel * expert,
                              chosen=not all_experts),
                         dict(strategy="all-experts", experts_read=float(m.n_experts),
                              bytes_per_layer=m.n_experts * expert, chosen=all_experts)])


def cost_per_million_tokens_usd(tokens_per_s: float, usd_per_hour: float) -> float:
    """Dollars per million generated tokens: the hourly price over the tokens an hour produces, × 10⁶.

    Examples
    --------
    >>> round(cost_per_million_tokens_usd(10_000, 36.0), 3)
    1.0
    """
    t = positive("tokens_per_s", tokens_per_s)
    u = positive("usd_per_hour", usd_per_hour)
    return u / (t * hour) * 1e6


def cost_table(model: str | ModelPreset, deployments: Sequence[tuple[str, int]], context_len: int,
               block_size: int = 32) -> pd.DataFrame:
    """Dollars per million generated tokens on whole instances, each filled with replicas at capacity.

    For each ``(system, tp)``: as many TP-``tp`` replicas as the instance's ranks hold, each
    decoding as many ``context_len`` sequences as its KV budget allows (:func:`capacity`), at the
    expected step (:func:`decode_step`: calibrated collective costs) and at its bound. The price
    is the instance's sourced on-demand price (``data/systems.csv`` and ``prices.csv``); an
    instance without one gets NaN, never a guess. The cost at the bound is a floor; the cost at
    the expectation is what to plan on (:func:`cost_per_million_tokens_usd`).

    Returns
    -------
    pandas.DataFrame
        ``system, chip, tp, replicas, batch, tpot_ms, tpot_bound_ms, tokens_per_s`` (the
        instance, expected), ``usd_per_hour``, ``usd_per_million_tokens``,
        ``usd_per_million_tokens_floor``.

    Examples
    --------
    >>> t = cost_table("llama3-70b", [("inf2.48xlarge", 24), ("trn2.48xlarge", 64)], 4096)
    >>> t.system.tolist(), bool(t.usd_per_million_tokens.isna().tolist() == [False, True])
    (['inf2.48xlarge', 'trn2.48xlarge'], True)
    """
    m = resolve_model(model)
    ctx = _tokens("context_len", context_len, minimum=1)
    if isinstance(deployments, (str, bytes)) or not isinstance(deployments, Iterable):
        raise ValueError(f"deployments must be a list of (system, tp) pairs, got {deployments!r}")
    rows = []
    for item in deployments:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ValueError(f"deployments must hold (system, tp) pairs, got {item!r}")
        system, tp = item
        s = specs.system(system)
        lnc = cores.resolve_lnc(s.chip_key, None)
        ranks = s.n_chips * cores.logical_cores_per_chip(s.chip_key, lnc)
        tp = integer("tp", tp, minimum=1, maximum=ranks)
        rep = replica(m, s.chip_key, tp=tp, lnc=lnc)
        batch = capacity(rep, ctx, block_size=block_size).max_sequences
        n_rep = ranks // tp
        row = dict(system=s.key, chip=s.chip_key, tp=tp, replicas=n_rep, batch=batch)
        price = s.on_demand_usd_per_hour
        if batch >= 1:
            d = decode_step(rep, batch, ctx)
            tps, tps_bound = n_rep * d.tokens_per_s, n_rep * batch / d.bound_s
            row.update(tpot_ms=d.time_s / ms, tpot_bound_ms=d.bound_s / ms, tokens_per_s=tps)
        else:
            tps = tps_bound = math.nan
            row.update(tpot_ms=math.nan, tpot_bound_ms=math.nan, tokens_per_s=math.nan)
        ok = price is not None and batch >= 1
        row.update(usd_per_hour=math.nan if price is None else price,
                   usd_per_million_tokens=cost_per_million_tokens_usd(tps, price) if ok else math.nan,
                   usd_per_million_tokens_floor=cost_per_million_tokens_usd(tps_bound, price) if ok else math.nan)
        rows.append(row)
    return pd.DataFrame(rows)
