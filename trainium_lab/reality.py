"""Trainium as it measures: each performance model beside AWS's published measurements.

A **bound** is what the hardware cannot beat (a lower bound on time, an upper bound on
throughput) from published peak rates and the smallest published latency. An **expectation**
adds the costs that real runs pay, with a handful of physically meaningful parameters fitted on
four named measurement sets (``data/measurements.csv``):

(a) AWS's Trn1 training performance table (Neuron 2.24), (b) the NxD Inference Trn2 tutorials
(Llama 3.3 70B and Llama 3.1 405B, TP 64), (c) the NCCOM-TEST user guide's example runs, and
(d) the vLLM Neuron EAGLE3 tutorial's per-position acceptance.

The fitted values live in ``data/calibration.csv`` (read through :func:`trainium_lab.specs.calibration`)
with their residuals and the date of the fit; :func:`fit` re-runs the procedure and a test checks
that the stored values are what it returns. Models never read the measurement table: they take
their efficiencies and latencies as parameters whose defaults are the calibrated values.

A bound holds for any implementation (exact weights, one unreplicated KV cache, the larger of
AWS's published rates, the compute dtype's peak); an expectation models the configuration a
measurement ran with (its buckets, its software stack, NxD Inference's padding and replication).
Every collective, on every chip, is one model: a fixed cost, the algorithm's hops at AWS's
documented latencies, the bytes at the published rates (issue 38). A fit is not a prediction:
:func:`compare` and :func:`summary` give each error in sample and out of sample.

Public API
----------
``decode(model, chip, *, tp, batch, context_len, ...)``: one decode **step**
``speculative_tpot(model, chip, *, tp, batch, context_len, k, ...)``: a TPOT with speculation
``prefill(model, chip, *, tp, prompt_tokens, ..., bucket_tokens=None, compute_dtype="bfloat16")``
``collective(op, size_bytes, *, n_ranks, system, n_systems=1, launched_by="graph")``
    Each an :class:`Estimate` with ``bound_s``, ``expected_s`` and its range ``low_s``/``high_s``
    (NaN for a collective inside a graph: no in-graph collective is measured alone).
``training(model, system, *, n_systems, tp, pp, dp, seq_len, global_batch, ..., compute_dtype="bfloat16")``
    A :class:`TrainingEstimate` with ``bound_tokens_per_s``, ``expected_tokens_per_s`` and a range.
``measurements()``, ``compare()``, ``summary()``, ``expected_range()``, ``fit()``, ``parameters()``,
``implied_prefill_efficiency()``

References
----------
AWS Neuron docs: "Intra-node Collective Communications with AWS Neuron" (Ring, Mesh, RDH and
KangaRing; per-hop latency "about 1-2 us"); "NCCOM-TEST User Guide"; Trn1 training performance
(``about-neuron/benchmarks/trn1/training_data_decoder.csv``); NxD Inference tutorials for Llama 3.3
70B and Llama 3.1 405B on Trn2; vLLM Neuron "Deploy EAGLE3 speculative decoding ... Llama 3.1 8B".
J. Austin et al., "How to Scale Your Model" (scaling-book), "All About Transformer Inference",
"Theoretical Step Time (General)": attention (always memory-bound) plus the larger of MLP compute
and weight loading, plus communication. Leviathan et al. 2023, §3 (i.i.d. acceptance).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainium_lab import collectives, cores, serving, specs
from trainium_lab._validate import choice, finite_number, integer, positive
from trainium_lab.sizing import ModelPreset, resolve_model
from trainium_lab.units import format_seconds

__all__ = ["Estimate", "TrainingEstimate", "OPS", "CHIPS", "STACKS", "decode", "speculative_tpot", "prefill",
           "auto_bucket_tokens",
           "collective", "training", "measurements", "compare", "summary", "fit", "parameter", "parameters",
           "expected_range", "implied_prefill_efficiency", "acceptance", "prefix_cache_check",
           "PREFIX_CACHE_SET", "PREFIX_CACHE_TOLERANCE"]

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
#: AWS's Llama 3.3 70B prefix-caching table (TTFT with and without the cache, four datasets): not one
#: of the four calibration sets; it judges serving.prefix_cache_ttft_ratio (:func:`prefix_cache_check`)
PREFIX_CACHE_SET = "nxdi_trn2_prefix_caching"
#: how close the hit-rate model must come to the rows inside its range (|model/measured − 1|)
PREFIX_CACHE_TOLERANCE = 0.05
CHIPS = ("trn1", "trn2", "trn3", "inf2")
#: software stacks: one with a calibration set (its parameters fitted), others get a range
STACKS = ("nxd-inference", "other")
FORWARD_COLLECTIVES_PER_LAYER = serving.FORWARD_ALLREDUCES_PER_LAYER
# Sizes at which the Neuron runtime switches algorithm inside a Trainium2/3 node (one home:
# trainium_lab.collectives, AWS "Intra-node Collective Communications", Algorithm Summary).
MESH_MAX_BYTES = collectives.MESH_MAX_BYTES
RDH_MAX_BYTES = collectives.RDH_MAX_BYTES


def parameter(name: str) -> float:
    """The calibrated or sourced default of one parameter (``data/calibration.csv``).

    Examples
    --------
    >>> parameter("hop_latency_min_s") * 1e6   # AWS: per-hop latency "about 1-2 us"
    1.0
    """
    return specs.calibration(name).value


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Estimate:
    """A bound and an expectation for one step or collective (seconds).

    ``bound_s`` is a lower bound on the time (peak rates, the smallest published latency);
    ``expected_s`` adds what measured runs pay (calibrated parameters).
    """

    kind: str
    bound_s: float
    expected_s: float
    detail: str = ""
    low_s: float = math.nan
    high_s: float = math.nan

    @property
    def fraction_of_bound(self) -> float:
        """``bound_s / expected_s``: the share of the bound a real run is expected to reach."""
        return self.bound_s / self.expected_s

    def __repr__(self) -> str:
        rng = "" if self.low_s != self.low_s else \
            f" ({format_seconds(self.low_s)} to {format_seconds(self.high_s)})"
        return (f"Estimate({self.kind}: bound {format_seconds(self.bound_s)}, "
                f"expected {format_seconds(self.expected_s)}{rng})")

    def _repr_markdown_(self) -> str:
        return (f"**{self.kind}**: bound {format_seconds(self.bound_s)}, expected "
                f"{format_seconds(self.expected_s)} ({self.fraction_of_bound:.0%} of the bound's speed)"
                + (f"; {self.detail}" if self.detail else ""))


@dataclass(frozen=True)
class TrainingEstimate:
    """Training throughput: an upper bound and an expectation (tokens per second)."""

    bound_tokens_per_s: float
    expected_tokens_per_s: float
    mfu: float
    low_tokens_per_s: float = math.nan
    high_tokens_per_s: float = math.nan

    @property
    def fraction_of_bound(self) -> float:
        """``expected / bound``."""
        return self.expected_tokens_per_s / self.bound_tokens_per_s

    def __repr__(self) -> str:
        return (f"TrainingEstimate(bound {self.bound_tokens_per_s:,.0f} tokens/s, expected "
                f"{self.expected_tokens_per_s:,.0f} tokens/s)")

    def _repr_markdown_(self) -> str:
        return (f"**training**: bound {self.bound_tokens_per_s:,.0f} tokens/s, expected "
                f"{self.expected_tokens_per_s:,.0f} tokens/s ({self.fraction_of_bound:.0%} of the bound; "
                f"MFU while computing {self.mfu:.0%})")


# --------------------------------------------------------------------------- input checks


def _model(model: object) -> ModelPreset:
    if not isinstance(model, (str, ModelPreset)):
        raise ValueError(f"model must be a preset name or a layouts.custom_model(...); got {type(model).__name__}")
    return resolve_model(model)


def _chip(chip: object) -> str:
    chip = choice("chip", chip, CHIPS)
    if chip not in {c.key for c in specs.chips(include_inferentia=True)}:
        raise ValueError(f"chip {chip!r} is accepted by the interface but has no figures in data/chips.csv yet; "
                         f"use one of {', '.join(c.key for c in specs.chips(include_inferentia=True))}")
    return chip


def _nonneg_int(name: str, value: object, minimum: int = 0) -> int:
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"{name} must be an integer >= {minimum}, got nan")
    return integer(name, value, minimum=minimum, maximum=10**9)


def _system_for(chip: specs.Chip, n_ranks: int, lnc: int) -> specs.System:
    per = [s for s in specs.systems(include_inferentia=True) if s.chip_key == chip.key and s.n_instances == 1]
    if not per:
        per = [s for s in specs.systems(include_inferentia=True) if s.chip_key == chip.key]
    per.sort(key=lambda s: s.n_chips)
    for s in per:
        if s.n_chips * cores.logical_cores_per_chip(chip, lnc) >= n_ranks:
            return s
    biggest = per[-1]
    raise ValueError(f"tp must be at most the {biggest.n_chips * cores.logical_cores_per_chip(chip, lnc)} "
                     f"ranks of one {biggest.key} at lnc={lnc}; got {n_ranks}")


# --------------------------------------------------------------------------- collectives


def _factor(op: str, n: int) -> float:
    """Bus bytes per rank as a multiple of the size (nccl-tests' bus factor, one home in collectives)."""
    return collectives.bus_factor(op, n)


def _collective_candidates(op: str, size: float, n_ranks: int, system: specs.System, n_systems: int,
                           launched_by: str = "nccom-test"):
    """The algorithms the runtime could run, each as the linear terms of :func:`fit` (one home:
    :func:`trainium_lab.collectives.neuron_collective`)."""
    return collectives._neuron_terms(op, size, n_ranks, system, n_systems, launched_by=launched_by)


def _collective_row(cands: list[dict], p: dict) -> tuple[float, float, str]:
    c = collectives._neuron_choose("", 1.0, cands, p, parameter("hop_latency_min_s"))
    return c.bound_s, c.expected_s, c.algorithm


@functools.lru_cache(maxsize=256)
def _row_candidates(op: str, size: float, n_ranks: int, system: str, n_systems: int,
                    launched_by: str = "nccom-test"):
    return _collective_candidates(op, size, n_ranks, specs.system(system), n_systems, launched_by)


def collective(op: str, size_bytes: float, *, n_ranks: int, system: str, n_systems: int = 1,
               launched_by: str = "graph") -> Estimate:
    """A collective's time: bound and expectation, hierarchical when it spans systems.

    The course's one collective model, :func:`trainium_lab.collectives.neuron_collective` (which
    the planner and the pre-flight check call too; ``detail`` names the algorithm). Inside one
    system the ranks form one group: ranks of one chip exchange through HBM, a group of several
    chips over NeuronLink. Across ``n_systems`` the collective is hierarchical (instance first):
    a reduce-scatter inside each system, a ring over EFA on the shards, an all-gather inside each
    system; on Trainium1 a flat ring over every rank where it is faster (AWS gives no threshold).
    Expected, the same on every chip: ``t_fixed + steps·α + efa_steps·α_EFA + bytes/B``, with
    AWS's documented hop latencies ``α`` (1-2 µs) and ``α_EFA`` (~15 µs), ``B`` the published
    rate (HBM for ranks of one chip, NeuronLink per chip, EFA per instance) and ``t_fixed`` the
    in-graph cost per collective (``launched_by="graph"``) or, for a NCCOM-TEST run
    (``"nccom-test"``), the tool's host launch, whose bytes also move at no more than
    ``nccom_dma_efficiency`` of each rank's HBM share (``data/calibration.csv``). The bound takes
    the published rates and one step of the smallest published per-hop latency (1 µs).

    Parameters
    ----------
    op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    size_bytes : float
        nccom-test's ``size(B)``: the buffer of an all-reduce, the gathered output of an
        all-gather (> 0).
    n_ranks : int
        Ranks in all (NeuronCores on Trn1 and Inf2, logical cores on Trn2 and Trn3).
    system : str
        A system of ``data/systems.csv`` (``"trn1.32xlarge"``, ``"trn2.48xlarge"``...).
    n_systems : int
        Copies of the system the group spans (ranks split evenly).
    launched_by : {"graph", "nccom-test"}
        Inside a compiled graph, or by the NCCOM-TEST tool (then ``low_s``/``high_s`` carry the
        out-of-sample spread of the guide's rows).

    Examples
    --------
    >>> e = collective("all_reduce", 2**30, n_ranks=64, system="trn1.32xlarge", n_systems=2)
    >>> round(e.bound_s * 1e3, 1), e.expected_s > e.bound_s
    (10.7, True)
    >>> collective("all_reduce", 1024, n_ranks=0, system="trn1.32xlarge")
    Traceback (most recent call last):
    ...
    ValueError: n_ranks must be an integer in [1, 1,000,000,000], got 0
    """
    op = choice("op", op, OPS)
    size = positive("size_bytes", size_bytes)
    n_ranks = _nonneg_int("n_ranks", n_ranks, 1)
    n_systems = _nonneg_int("n_systems", n_systems, 1)
    if not isinstance(system, str):
        raise ValueError(f"system must be a system name; got {type(system).__name__}")
    s = specs.system(system)
    lnc = cores.any_lnc(s.chip_key) or 1
    per_system = s.n_chips * cores.logical_cores_per_chip(s.chip_key, lnc)
    if n_ranks % n_systems:
        raise ValueError(f"n_ranks must be a multiple of n_systems ({n_systems}); got {n_ranks}")
    if n_ranks // n_systems > per_system:
        raise ValueError(f"n_ranks must be at most {per_system * n_systems} ({per_system} per {s.key}); got {n_ranks}")
    c = collectives.neuron_collective(op, size, n_ranks=n_ranks, system=system, n_systems=n_systems,
                                      launched_by=launched_by)
    if launched_by == "nccom-test":
        lo, hi = expected_range("nccom_test_guide")
        return Estimate(op, c.bound_s, c.expected_s, c.algorithm, c.expected_s * lo, c.expected_s * hi)
    return Estimate(op, c.bound_s, c.expected_s, c.algorithm)


# --------------------------------------------------------------------------- serving steps


def _replica(model, chip, tp, weight_dtype, lnc):
    m = _model(model)
    c = specs.resolve_chip(_chip(chip))   # the chip's record, resolved once and passed down
    tp = _nonneg_int("tp", tp, 1)
    lnc_ = cores.resolve_lnc(c, lnc)
    _system_for(c, tp, lnc_)
    return serving.replica(m, c, tp=tp, lnc=lnc_, weight_dtype=weight_dtype)


#: NxD Inference's automatic bucketing (``enable_bucketing=True``): context-encoding and
#: token-generation buckets are the powers of two from 128 up (AWS, NxD Inference Features
#: Configuration Guide, "Automatic Bucketing"; source id ``aws-nxdi-features``)
AUTO_BUCKET_MIN_TOKENS = 128


def auto_bucket_tokens(n_tokens: int) -> int:
    """The automatic bucket NxD Inference runs ``n_tokens`` in: the smallest power of two >= both
    ``n_tokens`` and 128 (the cap at the maximum length is the caller's).

    Examples
    --------
    >>> auto_bucket_tokens(1), auto_bucket_tokens(300), auto_bucket_tokens(512), auto_bucket_tokens(10_000)
    (128, 512, 512, 16384)
    """
    n = _nonneg_int("n_tokens", n_tokens, 0)
    return max(AUTO_BUCKET_MIN_TOKENS, 1 << max(0, n - 1).bit_length())


def _bucket_arg(name: str, value, n: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"{name} must be 'auto', None or a whole number of tokens >= {n}; got {value!r}")
        return auto_bucket_tokens(n)
    return value


def decode(model, chip: str, *, tp: int, batch: int, context_len: int, weight_dtype: str = "bfloat16",
           lnc: int | None = None, tp_collective_s: float | None = None,
           bucket_len: int | str | None = "auto") -> Estimate:
    """One decode **step** (every sequence of the batch advances one token): bound and expectation.

    The step model has one home, :func:`trainium_lab.serving.decode_step` (scaling-book's general
    step): attention reads the KV cache over the token-generation bucket ``bucket_len`` (always
    memory-bound; ``"auto"``, the default, is NxD Inference's automatic bucket,
    :func:`auto_bucket_tokens`; ``None`` reads ``context_len`` exactly), plus the larger of the
    weight matmuls' compute and the weight reads, plus ``2·L`` TP all-reduces each costing ``tp_collective_s`` (by default
    :func:`trainium_lab.serving.tp_collective_fixed_s`: one in-graph fixed cost, the same on
    every chip, plus the algorithm's hops at AWS's per-hop latency) plus its bytes at the
    published link rate. Bound, for any implementation: exact weights and one unreplicated KV
    cache at the larger published HBM rate, plus ``2·L`` hops of the smallest published latency.
    ``low_s``/``high_s``: the expectation times the out-of-sample spread of the NxD Inference
    TPOT rows (:func:`expected_range`). A speculative TPOT is :func:`speculative_tpot`.

    Examples
    --------
    >>> e = decode("llama3-70b", "trn2", tp=64, batch=1, context_len=10000)
    >>> round(e.bound_s * 1e3, 2), 15 < e.expected_s * 1e3 < 25, e.low_s < e.expected_s < e.high_s
    (3.17, True, True)
    >>> decode("llama3-70b", "trn2", tp=64, batch=1, context_len=-1)
    Traceback (most recent call last):
    ...
    ValueError: context_len must be an integer in [0, 1,000,000,000], got -1
    """
    rep = _replica(model, chip, tp, weight_dtype, lnc)
    batch = _nonneg_int("batch", batch, 1)
    ctx = _nonneg_int("context_len", context_len, 0)
    x = None if tp_collective_s is None else positive("tp_collective_s", tp_collective_s, allow_zero=True)
    step = serving.decode_step(rep, batch, ctx, latency_s=x, bucket_len=_bucket_arg("bucket_len", bucket_len, ctx))
    lo, hi = expected_range("nxdi_trn2_tutorials", "tpot")
    return Estimate("decode step", step.bound_s, step.expected_s,
                    f"{step.n_collectives} TP all-reduces; stack nxd-inference (the calibration's)",
                    step.expected_s * lo, step.expected_s * hi)


def speculative_tpot(model, chip: str, *, tp: int, batch: int, context_len: int, k: int,
                     draft_step_s: float = 0.0, alpha: float | None = None, weight_dtype: str = "bfloat16",
                     lnc: int | None = None, bucket_len: int | str | None = "auto") -> Estimate:
    """The time per output token with speculation: target steps that verify ``k`` drafted tokens.

    One target step runs ``k + 1`` tokens per sequence (:func:`trainium_lab.serving.decode_step`
    with ``tokens_per_sequence = k + 1``), after ``k`` draft steps of ``draft_step_s`` each, and
    yields on average :func:`trainium_lab.serving.expected_tokens_per_pass` tokens under i.i.d.
    acceptance ``alpha`` (default: the EAGLE3 calibration). TPOT = (target step + k · draft step) /
    tokens per pass; the bound divides the step's bound by the most tokens a pass can yield
    (``k + 1``). Never compare a TPOT with a single step's bound: a pass yields several tokens.

    References
    ----------
    Leviathan et al. 2023, §3 (expected tokens per pass, i.i.d. acceptance).

    Examples
    --------
    >>> e = speculative_tpot("llama3-70b", "trn2", tp=64, batch=1, context_len=10000, k=3)
    >>> e.bound_s < e.expected_s < decode("llama3-70b", "trn2", tp=64, batch=1, context_len=10000).expected_s
    True
    """
    rep = _replica(model, chip, tp, weight_dtype, lnc)
    batch = _nonneg_int("batch", batch, 1)
    ctx = _nonneg_int("context_len", context_len, 0)
    k = _nonneg_int("k", k, 1)
    d = positive("draft_step_s", draft_step_s, allow_zero=True)
    a = parameter("eagle3_acceptance_alpha") if alpha is None else positive("alpha", alpha)
    if a >= 1:
        raise ValueError(f"alpha must be in (0, 1), got {a}")
    step = serving.decode_step(rep, batch, ctx, tokens_per_sequence=k + 1,
                               bucket_len=_bucket_arg("bucket_len", bucket_len, ctx + k + 1))
    per_pass = serving.expected_tokens_per_pass(a, k)
    expected = (step.expected_s + k * d) / per_pass
    return Estimate("speculative TPOT", step.bound_s / (k + 1), expected,
                    f"k = {k}, {per_pass:.2f} tokens per pass")


def prefill(model, chip: str, *, tp: int, prompt_tokens: int, batch: int = 1, weight_dtype: str = "bfloat16",
            lnc: int | None = None, efficiency: float | None = None,
            tp_collective_s: float | None = None, bucket_tokens: int | str | None = "auto",
            compute_dtype: str = "bfloat16", stack: str = "nxd-inference") -> Estimate:
    """Prefill of ``batch`` prompts (the time to first token, TTFT): bound and expectation.

    :func:`trainium_lab.serving.prefill_step` is the model. Bound, for any implementation: the
    unpadded prompt's FLOPs (:func:`trainium_lab.serving.prefill_flops`) at the ``compute_dtype``
    peak, or the exact weights and one KV cache at the larger published HBM rate if longer, plus
    one smallest-latency hop per TP all-reduce. Expected: the prompt padded to its context bucket
    (``bucket_tokens``; ``"auto"``, the default, is NxD Inference's automatic bucket,
    :func:`auto_bucket_tokens`, so a short prompt runs at least 128 tokens; ``None`` runs the
    prompt unpadded) at ``peak × efficiency`` — a kernel efficiency, fitted per software
    stack on that stack's TTFTs (``prefill_efficiency``: NxD Inference) — plus the TP
    all-reduces as in :func:`decode`. For a ``stack`` with no calibration set the expectation
    is at the geometric middle of the efficiency's plausible range and ``low_s``/``high_s`` span
    that range; otherwise they are the out-of-sample spread of the TTFT rows.

    Examples
    --------
    >>> e = prefill("llama3-405b", "trn2", tp=64, prompt_tokens=10000, bucket_tokens=10240)
    >>> round(e.bound_s, 2), 2.0 < e.expected_s < 3.0
    (0.92, True)
    """
    rep = _replica(model, chip, tp, weight_dtype, lnc)
    if compute_dtype != rep.compute_dtype:
        rep = serving.replica(rep.model, rep.chip, tp=rep.tp, lnc=rep.lnc, weight_dtype=weight_dtype,
                              compute_dtype=compute_dtype)
    s = _nonneg_int("prompt_tokens", prompt_tokens, 1)
    batch = _nonneg_int("batch", batch, 1)
    stack = choice("stack", stack, STACKS)
    bucket_tokens = _bucket_arg("bucket_tokens", bucket_tokens, s)
    eff = None if efficiency is None else positive("efficiency", efficiency)
    x = None if tp_collective_s is None else positive("tp_collective_s", tp_collective_s, allow_zero=True)
    if eff is not None and eff > 1:
        raise ValueError(f"efficiency must be in (0, 1], got {eff}")
    if stack == "nxd-inference" or eff is not None:
        step = serving.prefill_step(rep, s, batch, eff, latency_s=x, bucket_tokens=bucket_tokens)
        lo, hi = expected_range("nxdi_trn2_tutorials", "ttft")
        return Estimate("prefill", step.bound_s, step.expected_s,
                        f"{step.n_collectives} TP all-reduces; stack nxd-inference (the calibration's)",
                        step.expected_s * lo, step.expected_s * hi)
    plo, phi = _plausible("prefill_efficiency")
    mid, slow, fast = (serving.prefill_step(rep, s, batch, e, latency_s=x, bucket_tokens=bucket_tokens)
                       for e in (_range_middle("prefill_efficiency"), plo, phi))
    return Estimate("prefill", mid.bound_s, mid.expected_s, f"stack {stack}: no calibration set",
                    fast.expected_s, slow.expected_s)


# --------------------------------------------------------------------------- training


def _layout(model, system, n_systems, tp, pp, dp, seq_len, global_batch, micro_batch, zero_stage):
    from trainium_lab import layouts

    m = _model(model)
    if not isinstance(system, str):
        raise ValueError(f"system must be a system name; got {type(system).__name__}")
    s = specs.system(system)
    n_systems = _nonneg_int("n_systems", n_systems, 1)
    tp, pp, dp = (_nonneg_int(n, v, 1) for n, v in (("tp", tp), ("pp", pp), ("dp", dp)))
    seq_len = _nonneg_int("seq_len", seq_len, 1)
    gb = _nonneg_int("global_batch", global_batch, 1)
    mb = _nonneg_int("micro_batch", micro_batch, 1)
    zero_stage = choice("zero_stage", zero_stage, (0, 1, 2, 3))
    if gb % (dp * mb):
        raise ValueError(f"global_batch must be a multiple of dp × micro_batch ({dp * mb}); got {gb}")
    lnc = cores.any_lnc(s.chip_key)
    lay = layouts.layout(m, tp=tp, pp=pp, dp=dp, zero_stage=zero_stage, system=s.key, n_systems=n_systems,
                         lnc=lnc, micro_batch=mb, n_micro_batches=gb // (dp * mb), seq_len=seq_len,
                         recompute="selective")
    return lay


def training(model, system: str, *, n_systems: int, tp: int, pp: int, dp: int, seq_len: int,
             global_batch: int, micro_batch: int = 1, zero_stage: int = 1, mfu: float | None = None,
             link_efficiency: float | None = None, compute_dtype: str = "bfloat16") -> TrainingEstimate:
    """Training throughput: an upper bound and an expectation (tokens per second).

    Bound: every chip at the ``compute_dtype`` peak on the step's FLOPs (6N per token plus causal attention, as
    :func:`trainium_lab.layouts.evaluate` counts them), nothing else. Expected: the step of
    :func:`trainium_lab.layouts.evaluate` rebuilt from its parts, with compute at ``mfu`` of peak
    (fitted on AWS's Trn1 training table) and the tensor- and pipeline-parallel collectives at
    ``link_efficiency`` of the published NeuronLink rate (default 1: no link efficiency is
    fitted), and every TP collective the graph launches paying the in-graph latency the planner
    leaves out (``collective_fixed_s`` plus its algorithm's hops, as in a decode step;
    :func:`_training_tp_latency_s`), and the K/V projections NxD replicates above the KV heads
    computed (:func:`_replicated_kv_flops_share`); the pipeline bubble scales with the slot it
    is made of; the exposed data-parallel traffic is kept as the layout model gives it.

    ``low_tokens_per_s``/``high_tokens_per_s``: the expectation over the out-of-sample spread of
    the Trn1 training rows (:func:`expected_range`).

    Examples
    --------
    >>> e = training("llama3-8b", "trn1.32xlarge", n_systems=32, tp=32, pp=1, dp=32, seq_len=8192,
    ...              global_batch=1024)
    >>> e.bound_tokens_per_s > e.expected_tokens_per_s
    True
    """
    e = _training(model, system, n_systems=n_systems, tp=tp, pp=pp, dp=dp, seq_len=seq_len,
                  global_batch=global_batch, micro_batch=micro_batch, zero_stage=zero_stage, mfu=mfu,
                  link_efficiency=link_efficiency, compute_dtype=compute_dtype)
    lo, hi = expected_range("trn1_training")
    return TrainingEstimate(e.bound_tokens_per_s, e.expected_tokens_per_s, e.mfu,
                            e.expected_tokens_per_s * lo, e.expected_tokens_per_s * hi)


#: TP all-reduces per layer and micro-batch on a stage's critical path with selective recompute:
#: two forward, two backward (Shoeybi et al. 2019, §3; as layouts.evaluate counts them)
TRAINING_TP_COLLECTIVES_PER_LAYER = 4


def _training_tp_latency_s(lay, system: str, fixed_s: float | None = None) -> float:
    """The in-graph latency of one step's TP collectives on a stage (s), which the planner's
    published link rates leave out: each collective the graph launches pays the fixed in-NEFF cost
    and the hops of its algorithm (:func:`trainium_lab.collectives.neuron_collective`,
    ``launched_by="graph"``). With sequence parallelism each all-reduce is launched as a
    reduce-scatter and an all-gather (Korthikanti et al. 2022, §4.2.2): the same bytes, two
    launches, each with its own hops."""
    if lay.tp <= 1:
        return 0.0
    s = specs.system(system)
    per_system = s.n_chips * cores.logical_cores_per_chip(s.chip_key, lay.cluster.lnc)
    k = -(-lay.tp // per_system)
    size = 2.0 * lay.micro_batch * lay.seq_len * lay.model.d_model      # BF16 activations
    ops = ("reduce_scatter", "all_gather") if lay.sequence_parallel else ("all_reduce",)
    lat = 0.0
    for op in ops:
        c = collectives.neuron_collective(op, size, n_ranks=lay.tp, system=s.key, n_systems=k, lnc=lay.cluster.lnc)
        lat += c.latency_s if fixed_s is None else c.latency_s - parameter("collective_fixed_s") + fixed_s
    layers_stage = -(-lay.model.n_layers // lay.pp)
    return lay.n_micro_batches * TRAINING_TP_COLLECTIVES_PER_LAYER * layers_stage * lat


def _replicated_kv_flops_share(lay) -> float:
    """Extra FLOPs of the K/V projections NxD replicates when ``tp`` exceeds the KV heads, as a
    share of the step's counted FLOPs (6N plus causal attention, plus selective recompute's).

    NxD's ``GQAQKVColumnParallelLinear`` replicates the K and V weights ``kv_size_multiplier``
    times so that every rank holds a KV head (AWS's Llama 3 70B pre-training on Trn1 at TP 32 sets
    it to 4): each copy is computed forward and backward, ``6·(m − 1)·2·d·n_kv·d_head`` FLOPs per
    token and layer with ``m = tp / n_kv``.
    """
    m = lay.model
    if lay.tp <= m.n_kv_heads or m.is_moe:
        return 0.0
    head_dim = m.head_dim or m.d_model // m.n_heads
    mult = lay.tp // m.n_kv_heads
    extra = 6.0 * (mult - 1) * 2.0 * m.d_model * m.n_kv_heads * head_dim * m.n_layers
    counted = 6.0 * (m.n_active_params or m.n_params) + 8.0 * m.n_layers * lay.seq_len * m.d_model
    return extra / counted


def _training(model, system: str, *, n_systems: int, tp: int, pp: int, dp: int, seq_len: int,
             global_batch: int, micro_batch: int = 1, zero_stage: int = 1, mfu: float | None = None,
             link_efficiency: float | None = None, compute_dtype: str = "bfloat16",
             fixed_s: float | None = None) -> TrainingEstimate:
    from trainium_lab import layouts

    lay = _layout(model, system, n_systems, tp, pp, dp, seq_len, global_batch, micro_batch, zero_stage)
    eta = parameter("train_mfu") if mfu is None else positive("mfu", mfu)
    if eta > 1:
        raise ValueError(f"mfu must be in (0, 1], got {eta}")
    eff = 1.0 if link_efficiency is None else positive("link_efficiency", link_efficiency)
    chip = specs.system(system).chip
    if not isinstance(compute_dtype, str) or compute_dtype not in chip.dense_flops_per_s:
        raise ValueError(f"compute_dtype must be one of {', '.join(chip.dense_flops_per_s)}; got {compute_dtype!r}")
    speed = chip.dense_flops_per_s[compute_dtype] / chip.dense_flops_per_s["bfloat16"]   # the layout counts at BF16
    est = layouts.evaluate(lay, mfu=1.0)
    t = est.time_s
    tokens = lay.seq_len * global_batch
    # mfu_effective = FLOPs / (step × chips × peak), so FLOPs / (chips × peak) = step × mfu_effective:
    bound = tokens / (est.step_s * est.mfu_effective) * speed
    slot = t["compute"] + t["tp_comm"] + t["pp_comm"]
    compute = t["compute"] * (1.0 + _replicated_kv_flops_share(lay))
    new_slot = (compute / (eta * speed) + (t["tp_comm"] + t["pp_comm"]) / eff
                + _training_tp_latency_s(lay, system, fixed_s))
    step = new_slot + t["bubble"] * new_slot / slot + t["dp_exposed"]
    return TrainingEstimate(bound, tokens / step, eta)


# --------------------------------------------------------------------------- speculation


def acceptance(position: int, alpha: float | None = None) -> float:
    """Per-position acceptance under i.i.d. acceptance: ``α^(position+1)`` (Leviathan et al. §3).

    Examples
    --------
    >>> round(acceptance(0, 0.865), 3), round(acceptance(2, 0.865), 3)
    (0.865, 0.647)
    """
    position = _nonneg_int("position", position, 0)
    a = parameter("eagle3_acceptance_alpha") if alpha is None else positive("alpha", alpha)
    if a > 1:
        raise ValueError(f"alpha must be in (0, 1], got {a}")
    return a ** (position + 1)


# --------------------------------------------------------------------------- measurements


NUMERIC_COLUMNS = ("n_instances", "chips", "tp", "pp", "dp", "ep", "lnc", "batch", "global_batch", "micro_batch",
                   "input_tokens", "output_tokens", "seq_len", "n_ranks", "size_bytes", "value", "printed_algbw",
                   "printed_busbw", "tolerance")


@functools.lru_cache(maxsize=1)
def _measurements() -> pd.DataFrame:
    df = specs.read_data_csv("measurements.csv")
    for col in NUMERIC_COLUMNS:   # empty ("does not apply") and "not stated" cells become NaN
        df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def measurements() -> pd.DataFrame:
    """The published measurements (``data/measurements.csv``), one row each, with sources.

    Numeric columns are numbers, with NaN where a column does not apply or the source does not
    state it (the ``unstated`` column says what is missing).
    """
    return _measurements().copy()


_UNIT = {"ms": 1e-3, "us": 1e-6, "s": 1.0, "%": 0.01, "seq/s": 1.0}


def _measured(row) -> float:
    v = float(row["value"]) * _UNIT[row["unit"]]
    if row["metric"] == "train_sequences_per_s":
        v *= int(row["seq_len"])
    return v


#: the metrics a measurement row can be modelled by, and the numeric columns each one needs
_NEEDS = {
    "tpot": ("tp", "batch", "input_tokens", "output_tokens"),
    "ttft": ("tp", "input_tokens"),
    "train_sequences_per_s": ("n_instances", "tp", "pp", "dp", "seq_len", "global_batch", "micro_batch"),
    "collective_time": ("n_ranks", "size_bytes", "n_instances"),
}


def _modelled(row) -> tuple[bool, str]:
    """Whether a row can be modelled, and if not why: its metric, its unit and the columns it needs."""
    if row["set"] == PREFIX_CACHE_SET:
        return False, "prefix caching: prompt lengths not stated; judged by prefix_cache_check"
    metric = str(row["metric"])
    if row["unit"] not in _UNIT:
        return False, f"unit {row['unit']!r} is not one of {', '.join(_UNIT)}"
    if metric not in _NEEDS and not re.fullmatch(r"acceptance_position_\d+", metric):
        return False, f"metric {metric!r} has no model"
    if metric == "collective_time":
        if row["instance"] == "not stated":
            return False, "instance not stated"
        if row["op"] not in OPS:
            return False, f"op {row['op']} not modelled"
    missing = [c for c in _NEEDS.get(metric, ()) if not math.isfinite(float(row[c]))]
    if missing:
        return False, f"{', '.join(missing)} not stated"
    return True, ""


def _row_replica(row) -> serving.Replica:
    """The replica a serving row ran: its model on its instance's chip, at its TP, LNC and weight dtype."""
    chip = specs.system(row["instance"].split(" ")[0]).chip_key
    lnc = float(row["lnc"])
    return _replica(row["model"], chip, int(row["tp"]), row["weight_dtype"], int(lnc) if math.isfinite(lnc) else None)


def _buckets(cell) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in str(cell).split())
    except ValueError:            # "not stated" or empty: no bucket known
        return ()


def _bucket(n: int, cell) -> int:
    """The bucket ``n`` tokens run in: the smallest stated bucket that holds them (none holds them:
    unpadded); NxD Inference's automatic bucket when the row states none, as :func:`decode` and
    :func:`prefill` assume by default."""
    stated = _buckets(cell)
    if not stated:
        return auto_bucket_tokens(n)
    b = [x for x in stated if x >= n]
    return min(b) if b else n


def _row_estimate(row, params: dict[str, float] | None = None) -> tuple[float, float, str]:
    """(bound, expected, kind) for one measurement row; times in s, throughput in tokens/s.

    The row's own configuration is modelled: NCCOM-TEST rows are launched by the tool, serving
    rows run in the buckets their tutorial compiled (``context_buckets``,
    ``token_generation_buckets``), and ``params`` overrides calibrated values (the fit's trials).
    """
    metric = row["metric"]
    params = params or {}
    if metric == "collective_time":
        launched_by = "nccom-test" if row["stack"] == "nccom-test" else "graph"
        cands = _row_candidates(row["op"], float(row["size_bytes"]), int(row["n_ranks"]),
                                row["instance"].split(" ")[0], int(row["n_instances"]), launched_by)
        bound, expected, _ = _collective_row(cands, collectives._neuron_params(launched_by, params))
        return bound, expected, "time"
    if metric == "tpot":
        ctx = int(row["input_tokens"]) + int(row["output_tokens"]) // 2
        rep = _row_replica(row)
        x = None if "collective_fixed_s" not in params else (
            params["collective_fixed_s"] + serving.tp_collective_fixed_s(rep) - parameter("collective_fixed_s"))
        step = serving.decode_step(rep, int(row["batch"]), ctx, latency_s=x,
                                   bucket_len=_bucket(ctx, row["token_generation_buckets"]))
        # the bound at the shortest context any step of the run has
        lo = serving.decode_step(rep, int(row["batch"]), int(row["input_tokens"]), latency_s=x)
        return lo.bound_s, step.expected_s, "time"
    if metric == "ttft":
        s_ = int(row["input_tokens"])
        rep = _row_replica(row)
        sb = _bucket(s_, row["context_buckets"])
        size = sb * rep.model.d_model * rep.activation_bytes
        x = None if "collective_fixed_s" not in params else (
            params["collective_fixed_s"] + serving.tp_collective_fixed_s(rep, size) - parameter("collective_fixed_s"))
        eff = params.get("prefill_efficiency")
        if eff is None and row["stack"] != "nxd-inference":   # no calibration set: the range's middle, as prefill()
            eff = _range_middle("prefill_efficiency")
        step = serving.prefill_step(rep, s_, 1, eff, latency_s=x, bucket_tokens=sb)
        return step.bound_s, step.expected_s, "time"
    if metric == "train_sequences_per_s":
        e = _training(row["model"], row["instance"], n_systems=int(row["n_instances"]), tp=int(row["tp"]),
                     pp=int(row["pp"]), dp=int(row["dp"]), seq_len=int(row["seq_len"]),
                     global_batch=int(row["global_batch"]), micro_batch=int(row["micro_batch"]),
                     mfu=params.get("train_mfu"), compute_dtype=row["compute_dtype"],
                     fixed_s=params.get("collective_fixed_s"))
        return e.bound_tokens_per_s, e.expected_tokens_per_s, "throughput"
    if metric.startswith("acceptance_position_"):
        pos = int(metric.rsplit("_", 1)[1])
        return 1.0, acceptance(pos, params.get("eagle3_acceptance_alpha")), "probability"
    raise ValueError(f"metric {metric!r} has no model")


#: the label of the rows judged by their bound only (issue 24's open point)
UNEXPLAINED = "unexplained: 2023 runtime, thresholds unpublished"


def _judged_by_bound_only(row) -> bool:
    return (row["set"] == "nccom_test_guide" and int(row["n_instances"]) > 1
            and float(row["size_bytes"]) < collectives.flat_ring_min_bytes())


def _cv_group(row) -> str:
    """The group a row leaves out with in the out-of-sample error (see :func:`compare`)."""
    if row["set"] == "nccom_test_guide":      # two runs only: leave one row out
        return str(row["measurement_id"])
    if row["set"] == "vllm_eagle3_acceptance":
        return row["metric"]
    return str(row["model"])


#: the calibration sets and the parameters each one fits (issue 24's four sets)
SET_PARAMETERS = {
    "nccom_test_guide": ("nccom_launch_s", "nccom_dma_efficiency"),
    "nxdi_trn2_tutorials": ("collective_fixed_s", "prefill_efficiency"),
    "trn1_training": ("train_mfu", "planner_mfu"),
    "vllm_eagle3_acceptance": ("eagle3_acceptance_alpha",),
}


def _records(df: pd.DataFrame) -> list[dict]:
    """Rows as plain dicts (a pandas Series lookup per field costs more than the models)."""
    return df.to_dict("records")


def _fit_rows(set_name: str) -> list:
    """The rows a set's parameters are fitted on (NCCOM-TEST: its single-instance Trn1 runs)."""
    df = _measurements()
    rows = [r for r in _records(df[df.set == set_name]) if _modelled(r)[0]]
    if set_name == "nccom_test_guide":
        rows = [r for r in rows if int(r["n_instances"]) == 1]
    return rows


@functools.lru_cache(maxsize=1)
def _cross_validation() -> dict[str, dict[str, float]]:
    """Each row's expectation with its set's parameters refitted without the row's group."""
    out: dict[str, dict[str, float]] = {}
    for set_name in SET_PARAMETERS:
        df = _measurements()
        rows = [r for r in _records(df[df.set == set_name]) if _modelled(r)[0]]
        fit_rows = _fit_rows(set_name)
        for g in sorted({_cv_group(r) for r in rows}):
            keep = [r for r in fit_rows if _cv_group(r) != g]
            p = _fit_set(set_name, keep)
            for r in rows:
                if _cv_group(r) == g:
                    out[r["measurement_id"]] = {"expected": _expected(r, p), "group": g}
    return out


@functools.lru_cache(maxsize=1)
def _without_set() -> dict[str, float]:
    """Each calibration row's expectation with its own set's parameters at the geometric middle of
    their plausible ranges: leave the whole set out, and nothing but the documented range is left."""
    out: dict[str, float] = {}
    df = _measurements()
    for set_name, names in SET_PARAMETERS.items():
        p = {n: _range_middle(n) for n in names}
        for r in _records(df[df.set == set_name]):
            if _modelled(r)[0]:
                out[r["measurement_id"]] = _row_estimate(r, p)[1]
    return out


def _expected(row, params) -> float:
    if row["metric"] == "train_sequences_per_s" and "planner_mfu" in params and "train_mfu" not in params:
        return _planner_tokens_per_s(row, params["planner_mfu"])
    return _row_estimate(row, params)[1]


@functools.lru_cache(maxsize=1)
def _compare() -> pd.DataFrame:
    out = []
    cv = _cross_validation()
    prior = _without_set()
    for row in _records(_measurements()):
        ok, why = _modelled(row)
        measured = _measured(row) if row["unit"] in _UNIT else math.nan
        bound = expected = oos = math.nan
        kind = "time" if row["metric"] == "collective_time" else ""
        if ok and row["set"] not in SET_PARAMETERS:
            try:        # a row outside the calibration sets the model cannot take is reported, not raised
                bound, expected, kind = _row_estimate(row)
                oos = expected          # no parameter was fitted on it: the expectation is a prediction
            except (ValueError, KeyError) as exc:
                ok, why = False, f"not modelled: {exc}"
        elif ok:        # a calibration row must always be modelled
            bound, expected, kind = _row_estimate(row)
            oos = cv[row["measurement_id"]]["expected"] if row["measurement_id"] in cv else expected
        label = UNEXPLAINED if ok and _judged_by_bound_only(row) else ""
        out.append({"measurement_id": row["measurement_id"], "set": row["set"], "metric": row["metric"],
                    "kind": kind, "stack": row["stack"], "measured": measured, "bound": bound, "expected": expected,
                    "expected_over_measured": expected / measured if ok else math.nan,
                    "bound_over_measured": bound / measured if ok else math.nan,
                    "expected_out_of_sample": oos, "expected_without_set": prior.get(row["measurement_id"], math.nan),
                    "modelled": ok, "not_modelled_because": why, "judged": "bound only" if label else (
                        "tolerance" if ok else ""), "label": label,
                    "cv_group": cv.get(row["measurement_id"], {}).get("group", "") if ok else "",
                    "source_id": row["source_id"]})
    df = pd.DataFrame(out)
    tol = _measurements()["tolerance"].astype(float).to_numpy()
    ratio = df["bound_over_measured"].to_numpy()
    is_time = (df["kind"] == "time").to_numpy()
    holds = np.where(is_time, ratio <= 1 + tol, ratio >= 1 - tol)
    df["bound_holds"] = np.where(df["modelled"], holds, True)
    df["abs_error"] = (df["expected_over_measured"] - 1).abs()
    df["out_of_sample_error"] = (df["expected_out_of_sample"] / df["measured"] - 1).abs()
    df["without_set_error"] = (df["expected_without_set"] / df["measured"] - 1).abs()
    return df


def compare() -> pd.DataFrame:
    """Every stored measurement beside its bound, its expectation and the expectation's errors.

    Columns: ``measurement_id``, ``set``, ``metric``, ``kind`` (time in s, throughput in
    tokens/s, probability), ``stack`` (the software the row ran), ``measured``, ``bound``,
    ``expected``, ``expected_over_measured``, ``bound_over_measured``, ``abs_error`` (in sample:
    ``|expected/measured − 1|`` with the parameters fitted on every calibration row),
    ``expected_out_of_sample`` and ``out_of_sample_error`` (the same with the row's set refitted
    without the row's group, ``cv_group``: its model in a set of several models, the row itself
    in the NCCOM-TEST guide, whose two fitted runs cannot each be left out, its position in
    EAGLE3; rows a set is not fitted on keep their expectation), ``expected_without_set`` and ``without_set_error`` (strict leave-one-set-out: refitted
    without the row's whole set. No parameter is fitted on two sets (``collective_fixed_s`` is
    fitted on the NxD Inference rows and used by training's in-graph TP collectives too), so each
    parameter the left-out set fits has no rows left and falls back to the geometric middle of its
    documented plausible range; the other sets' parameters keep their fit), ``bound_holds`` (a time not below its bound, a throughput or probability not
    above it, within the row's tolerance), ``judged`` (``"tolerance"`` or ``"bound only"``),
    ``label`` (why a row is judged by its bound only), ``modelled`` and ``not_modelled_because``.

    Examples
    --------
    >>> c = compare()
    >>> bool(c.bound_holds.all())
    True
    """
    return _compare().copy()


def _stats(g: pd.DataFrame) -> dict:
    t = g[g.judged == "tolerance"]
    return {"n_rows": len(g), "median_abs_error": float(t.abs_error.median()),
            "max_abs_error": float(t.abs_error.max()),
            "median_out_of_sample_error": float(t.out_of_sample_error.median()),
            "max_out_of_sample_error": float(t.out_of_sample_error.max()),
            "median_without_set_error": float(t.without_set_error.median()),
            "max_without_set_error": float(t.without_set_error.max()),
            "n_bound_only": int((g.judged == "bound only").sum()), "bounds_hold": bool(g.bound_holds.all())}


def summary() -> pd.DataFrame:
    """Median and largest error per set and over all modelled rows: in sample (the fit) and out of sample.

    ``median_abs_error``/``max_abs_error`` are in sample ("fit"); ``median_out_of_sample_error``/
    ``max_out_of_sample_error`` leave the row's group out of the fit (:func:`compare`): quote
    those as the prediction. ``n_rows`` counts every modelled row, ``n_bound_only`` those judged
    by their bound only. ``median_without_set_error``/``max_without_set_error`` leave the
    whole set out (its parameters at the middle of their plausible ranges): what the documented
    ranges alone predict. Rows judged by their bound only are counted in ``n_bound_only``, not in
    the errors. ``"all"`` pools the four calibration sets only; modelled rows of any other set
    (added to ``data/measurements.csv`` to judge the model) are pooled in a last row, ``"outside
    the calibration sets"``, where the expectation is the prediction (no parameter saw them).

    Examples
    --------
    >>> s = summary()
    >>> list(s.columns)[:4]
    ['set', 'n_rows', 'median_abs_error', 'max_abs_error']
    """
    c = _compare()
    c = c[c.modelled]
    rows = [{"set": k, **_stats(g)} for k, g in c.groupby("set", sort=False)]
    cal = c[c.set.isin(list(SET_PARAMETERS))]
    rows.append({"set": "all", **_stats(cal)})
    if len(cal) < len(c):       # rows outside the calibration sets judge the model: never pooled with the fit
        rows.append({"set": "outside the calibration sets", **_stats(c[~c.set.isin(list(SET_PARAMETERS))])})
    return pd.DataFrame(rows)


def expected_range(set_name: str, metric: str | None = None) -> tuple[float, float]:
    """Factors ``(low, high)`` to multiply an expectation by: the out-of-sample residuals' spread.

    ``measured = expected / (expected/measured)``, so over the set's rows (and ``metric``, if
    given) judged by tolerance the range is ``[1 / max ratio, 1 / min ratio]``, widened to hold 1.

    Examples
    --------
    >>> lo, hi = expected_range("nxdi_trn2_tutorials", "tpot")
    >>> lo <= 1.0 <= hi
    True
    """
    c = _compare()
    g = c[(c.set == set_name) & (c.judged == "tolerance")]
    if metric is not None:
        g = g[g.metric == metric]
    if g.empty:
        raise ValueError(f"set_name/metric must name calibration rows; got {set_name!r}, {metric!r}")
    r = (g.expected_out_of_sample / g.measured).to_numpy()
    return min(1.0, float(1.0 / r.max())), max(1.0, float(1.0 / r.min()))


def implied_prefill_efficiency(measurement_id: str, padded: bool = True) -> float:
    """The prefill efficiency one TTFT row implies, with or without its context-bucket padding.

    ``compute at peak ÷ (measured − TP all-reduces)`` of :func:`trainium_lab.serving.prefill_step`
    for the row's prompt, padded to the row's context bucket (``padded=True``, what the compiled
    graph computes) or not: the gap between the two is padding read as "efficiency".

    Examples
    --------
    >>> a = implied_prefill_efficiency("nxdi-llama33-70b-ttft", padded=False)
    >>> b = implied_prefill_efficiency("nxdi-llama33-70b-ttft")
    >>> a < b
    True
    """
    m = _measurements().set_index("measurement_id")
    if not isinstance(measurement_id, str) or measurement_id not in m.index or m.loc[measurement_id, "metric"] != "ttft" \
            or not _modelled(m.loc[measurement_id])[0]:
        raise ValueError(f"measurement_id must name a modelled TTFT row of data/measurements.csv; got {measurement_id!r}")
    row = m.loc[measurement_id]
    s_ = int(row["input_tokens"])
    rep = _row_replica(row)
    sb = _bucket(s_, row["context_buckets"]) if padded else s_
    step = serving.prefill_step(rep, s_, 1, 1.0, bucket_tokens=sb)
    return step.compute_s / (_measured(row) - step.comm_s)


# --------------------------------------------------------------------------- the fit


def _golden(f, lo: float, hi: float, iters: int = 45) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = math.log(lo), math.log(hi)
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(math.exp(c)), f(math.exp(d))
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(math.exp(d))
    return math.exp((a + b) / 2)


def _log_sq(rows, params) -> float:
    return sum(math.log(_row_estimate(r, params)[1] / _measured(r)) ** 2 for r in rows)


def _planner_tokens_per_s(row, mfu: float) -> float:
    """The planner's own prediction (:func:`trainium_lab.layouts.evaluate`, published link rates) at ``mfu``."""
    from trainium_lab import layouts

    lay = _layout(row["model"], row["instance"], int(row["n_instances"]), int(row["tp"]), int(row["pp"]),
                  int(row["dp"]), int(row["seq_len"]), int(row["global_batch"]), int(row["micro_batch"]), 1)
    return layouts.evaluate(lay, mfu=mfu).tokens_per_s


def _nccom_terms(rows) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row and candidate algorithm (two at most): hop latencies, bytes at published rates, DMA bytes."""
    p = {**collectives._neuron_params("nccom-test"), "fixed_s": 0.0}
    lat = np.full((len(rows), 2), np.inf)
    pub = np.zeros((len(rows), 2))
    dma = np.zeros((len(rows), 2))
    for i, r in enumerate(rows):
        cands = _row_candidates(r["op"], float(r["size_bytes"]), int(r["n_ranks"]), r["instance"].split(" ")[0],
                                int(r["n_instances"]))
        for j, t in enumerate(cands):
            lat[i, j] = collectives._neuron_latency_s(t, p)
            pub[i, j] = collectives._neuron_bytes_s(t, {"dma_efficiency": None})
            dma[i, j] = t["dma_s"]
    return lat, pub, dma, np.array([_measured(r) for r in rows])


def _fit_nccom(rows) -> dict[str, float]:
    """``nccom_launch_s`` and ``nccom_dma_efficiency`` on the NCCOM-TEST rows (see :func:`fit`).

    For a trial efficiency each row takes its faster algorithm; the launch adds to every candidate
    alike, so the least-squares launch on the relative error is closed form.
    """
    lat, pub, dma, meas = _nccom_terms(rows)
    w = 1.0 / meas

    def launch_for(eta):
        rest = (lat + np.maximum(pub, dma / eta)).min(axis=1)
        launch = max(0.0, float(((1.0 - rest * w) * w).sum() / (w * w).sum()))
        return launch, float((((launch + rest) * w - 1.0) ** 2).sum())

    eta = _golden(lambda e: launch_for(e)[1], 1e-3, 1.0)
    return {"nccom_launch_s": launch_for(eta)[0], "nccom_dma_efficiency": eta}


def _fit_set(set_name: str, rows) -> dict[str, float]:
    """Fit one set's parameters (:data:`SET_PARAMETERS`) on ``rows``."""
    if set_name == "nccom_test_guide":
        return _fit_nccom(rows)
    if set_name == "nxdi_trn2_tutorials":
        tp = [r for r in rows if r["metric"] == "tpot"]
        v = _golden(lambda v: _log_sq(tp, {"collective_fixed_s": v}), 1e-7, 1e-2)
        tt = [r for r in rows if r["metric"] == "ttft"]
        e = _golden(lambda e: _log_sq(tt, {"prefill_efficiency": e, "collective_fixed_s": v}), 1e-3, 1.0)
        return {"collective_fixed_s": v, "prefill_efficiency": e}
    if set_name == "trn1_training":
        v = _golden(lambda e: _log_sq(rows, {"train_mfu": e}), 1e-2, 1.0)
        w = _golden(lambda e: sum(math.log(_planner_tokens_per_s(r, e) / _measured(r)) ** 2 for r in rows), 1e-2, 1.0)
        return {"train_mfu": v, "planner_mfu": w}
    pos = np.array([int(r["metric"].rsplit("_", 1)[1]) + 1 for r in rows], dtype=float)
    logs = np.array([math.log(_measured(r)) for r in rows])
    return {"eagle3_acceptance_alpha": math.exp(float((pos * logs).sum() / (pos * pos).sum()))}


def fit() -> pd.DataFrame:
    """Re-run the calibration on the four named sets; one row per fitted parameter.

    Each parameter is fitted on its own set only:

    (c) NCCOM-TEST, the guide's single-instance Trn1 runs (the two-instance run is judged, not
    fitted): with the hop latencies at AWS's documented values, ``nccom_launch_s`` (closed form
    for each trial) and ``nccom_dma_efficiency`` (golden section) minimise the summed squared
    relative error, each row taking the algorithm the model calls fastest.
    (b) NxD Inference TPOT: ``collective_fixed_s`` minimises the summed squared log error of
    the decode steps; TTFT: ``prefill_efficiency`` the same for the prefills (in their buckets).
    (a) Trn1 training table: ``train_mfu`` minimises the squared log error of :func:`training`
    (collectives at published rates); ``planner_mfu`` does the same for the planner's own model
    (:func:`trainium_lab.layouts.evaluate`).
    (d) EAGLE3: ``α`` minimises ``Σ (log α^(i+1) − log a_i)^2``, closed form.

    Returns
    -------
    pandas.DataFrame
        ``parameter``, ``value``, ``fitted_on``, ``n_rows``, ``residual_median``,
        ``residual_max`` (in-sample ``|expected/measured − 1|`` over the set's fitted rows),
        ``low``, ``high`` (for a one-parameter fit, the values the set's single rows would need:
        the spread a plan should carry), ``plausible_low``, ``plausible_high`` (the documented
        range, ``data/calibration.csv``) and ``in_range``.
    """
    out = []
    for set_name, names in SET_PARAMETERS.items():
        rows = _fit_rows(set_name)
        p = _fit_set(set_name, rows)
        for name in names:
            cal = specs.calibration(name)
            if name == "planner_mfu":
                errs = [abs(_planner_tokens_per_s(r, p[name]) / _measured(r) - 1) for r in rows]
            elif name == "prefill_efficiency":
                errs = [abs(_row_estimate(r, p)[1] / _measured(r) - 1) for r in rows if r["metric"] == "ttft"]
            elif name == "collective_fixed_s":
                errs = [abs(_row_estimate(r, p)[1] / _measured(r) - 1) for r in rows if r["metric"] == "tpot"]
            else:
                errs = [abs(_row_estimate(r, p)[1] / _measured(r) - 1) for r in rows]
            lo, hi = _plausible(name)
            per = _per_row_values(name, rows, p)
            out.append({"parameter": name, "value": p[name], "low": min(per, default=math.nan),
                        "high": max(per, default=math.nan), "fitted_on": set_name, "n_rows": len(errs),
                        "residual_median": float(np.median(errs)), "residual_max": float(max(errs)),
                        "plausible_low": lo, "plausible_high": hi, "in_range": bool(lo <= p[name] <= hi)})
    return pd.DataFrame(out)


def _per_row_values(name: str, rows, p: dict) -> list[float]:
    """The value of a one-parameter fit each single row would need (none for a joint fit)."""
    if name in ("nccom_launch_s", "nccom_dma_efficiency"):
        return []
    if name == "eagle3_acceptance_alpha":
        return [_measured(r) ** (1.0 / (int(r["metric"].rsplit("_", 1)[1]) + 1)) for r in rows]
    if name == "planner_mfu":
        return [_golden(lambda e: math.log(_planner_tokens_per_s(r, e) / _measured(r)) ** 2, 1e-2, 1.0) for r in rows]
    metric = {"collective_fixed_s": "tpot", "prefill_efficiency": "ttft"}.get(name)
    sel = [r for r in rows if metric is None or r["metric"] == metric]
    lo, hi = (1e-7, 1e-2) if name == "collective_fixed_s" else (1e-3, 1.0)
    return [_golden(lambda v: math.log(_row_estimate(r, {**p, name: v})[1] / _measured(r)) ** 2, lo, hi) for r in sel]


@functools.lru_cache(maxsize=None)
def _plausible(name: str) -> tuple[float, float]:
    df = specs.read_data_csv("calibration.csv").set_index("parameter")
    return float(df.loc[name, "plausible_low"]), float(df.loc[name, "plausible_high"])


def _range_middle(name: str) -> float:
    """The geometric middle of a parameter's plausible range: its value where no calibration set
    pins it (a stack without one, a set left out; data/README.md says why the geometric middle)."""
    lo, hi = _plausible(name)
    return math.sqrt(lo * hi)


def parameters() -> pd.DataFrame:
    """Every parameter of ``data/calibration.csv`` with its plausible range and flag.

    Columns: ``parameter``, ``value``, ``unit``, ``fitted_on``, ``plausible_low``,
    ``plausible_high``, ``plausible_basis``, ``in_range``, ``flag`` (why a value outside its
    range is kept, and which mechanism it stands for).
    """
    df = specs.read_data_csv("calibration.csv")
    num = lambda c: pd.to_numeric(df[c], errors="coerce")  # noqa: E731
    out = pd.DataFrame({"parameter": df.parameter, "value": num("value"), "unit": df.unit,
                        "fitted_on": df.fitted_on, "plausible_low": num("plausible_low"),
                        "plausible_high": num("plausible_high"), "plausible_basis": df.basis})
    out["in_range"] = (out.value >= out.plausible_low * (1 - 1e-9)) & (out.value <= out.plausible_high * (1 + 1e-9))
    out["flag"] = df.flag
    return out


# --------------------------------------------------------------------------- prefix caching


def prefix_cache_check(fixed_fraction: float | None = None) -> pd.DataFrame:
    """:func:`trainium_lab.serving.prefix_cache_ttft_ratio` against AWS's 70B prefix-caching table.

    The TTFTs are the ``nxdi_trn2_prefix_caching`` rows of ``data/measurements.csv``; each
    dataset's stated hit rate is in ``data/prefix_cache_datasets.csv``. ``fixed_fraction``
    defaults to the one value that reproduces the row with the highest hit rate (math.math,
    > 90 %): one parameter from one row, the other three judge it.

    Returns
    -------
    pandas.DataFrame
        ``dataset, cache_hit_rate, ttft_without_s, ttft_with_s, measured_speedup, model_speedup,
        bound_speedup`` (``1/(1 − h)``, what any model proportional to the uncached tokens can
        reach), ``relative_error`` (``model/measured − 1``), ``in_range`` (the measured speed-up
        is at most the proportional bound), ``fixed_fraction``.

    Examples
    --------
    >>> t = prefix_cache_check().set_index("dataset")
    >>> t.relative_error.abs().round(2).to_dict()
    {'math.math': 0.0, 'dynamic sonnet 1k': 0.03, 'dynamic sonnet 2k': 0.21, 'HumanEval': 0.02}
    >>> t.in_range.to_dict()["dynamic sonnet 2k"]
    False
    """
    m = _measurements().set_index("measurement_id")
    ds = specs.read_data_csv("prefix_cache_datasets.csv")
    without = np.array([_measured(m.loc[i]) for i in ds.measurement_without])
    with_ = np.array([_measured(m.loc[i]) for i in ds.measurement_with])
    h = ds.cache_hit_rate.astype(float).to_numpy()
    measured = without / with_
    if fixed_fraction is None:
        top = int(np.argmax(h))
        fixed_fraction = (1.0 / measured[top] - (1.0 - h[top])) / h[top]
    f = finite_number("fixed_fraction", fixed_fraction)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"fixed_fraction must be in [0, 1], got {f}")
    model = np.array([1.0 / serving.prefix_cache_ttft_ratio(x, f) for x in h])
    bound = 1.0 / (1.0 - h)
    return pd.DataFrame({"dataset": ds.dataset, "cache_hit_rate": h, "ttft_without_s": without,
                         "ttft_with_s": with_, "measured_speedup": measured, "model_speedup": model,
                         "bound_speedup": bound, "relative_error": model / measured - 1.0,
                         "in_range": measured <= bound * (1 + 1e-9), "fixed_fraction": f})
