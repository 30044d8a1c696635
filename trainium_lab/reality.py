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

Public API
----------
``decode(model, chip, *, tp, batch, context_len, weight_dtype="bfloat16", lnc=None)``
``prefill(model, chip, *, tp, prompt_tokens, batch=1, weight_dtype="bfloat16", lnc=None)``
``collective(op, size_bytes, *, n_ranks, system, n_systems=1)``
    Each an :class:`Estimate` with ``bound_s`` and ``expected_s``.
``training(model, system, *, n_systems, tp, pp, dp, seq_len, global_batch, micro_batch=1, zero_stage=1)``
    A :class:`TrainingEstimate` with ``bound_tokens_per_s`` and ``expected_tokens_per_s``.
``measurements()``, ``compare()``, ``summary()``, ``fit()``

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
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainium_lab import collectives, cores, serving, specs
from trainium_lab._validate import choice, finite_number, integer, positive
from trainium_lab.sizing import ModelPreset, resolve_model
from trainium_lab.units import format_seconds

__all__ = ["Estimate", "TrainingEstimate", "OPS", "CHIPS", "decode", "prefill", "collective", "training",
           "measurements", "compare", "summary", "fit", "parameter", "acceptance", "prefix_cache_check",
           "PREFIX_CACHE_SET", "PREFIX_CACHE_TOLERANCE"]

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
#: AWS's Llama 3.3 70B prefix-caching table (TTFT with and without the cache, four datasets): not one
#: of the four calibration sets; it judges serving.prefix_cache_ttft_ratio (:func:`prefix_cache_check`)
PREFIX_CACHE_SET = "nxdi_trn2_prefix_caching"
#: how close the hit-rate model must come to the rows inside its range (|model/measured − 1|)
PREFIX_CACHE_TOLERANCE = 0.05
CHIPS = ("trn1", "trn2", "trn3", "inf2")
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

    @property
    def fraction_of_bound(self) -> float:
        """``bound_s / expected_s``: the share of the bound a real run is expected to reach."""
        return self.bound_s / self.expected_s

    def __repr__(self) -> str:
        return (f"Estimate({self.kind}: bound {format_seconds(self.bound_s)}, "
                f"expected {format_seconds(self.expected_s)})")

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


def _system_for(chip: str, n_ranks: int, lnc: int) -> specs.System:
    per = [s for s in specs.systems(include_inferentia=True) if s.chip_key == chip and s.n_instances == 1]
    if not per:
        per = [s for s in specs.systems(include_inferentia=True) if s.chip_key == chip]
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


@functools.lru_cache(maxsize=1)
def _nccom_params() -> dict[str, float]:
    return collectives._neuron_params()


def _collective_candidates(op: str, size: float, n_ranks: int, system: specs.System, n_systems: int):
    """The algorithms the runtime could run, each as the linear terms of :func:`fit` (one home:
    :func:`trainium_lab.collectives.neuron_collective`)."""
    return collectives._neuron_terms(op, size, n_ranks, system, n_systems)


def _collective_row(cands: list[dict], p: dict) -> tuple[float, float, str]:
    c = collectives._neuron_choose("", 1.0, cands, p, parameter("hop_latency_min_s"))
    return c.bound_s, c.expected_s, c.algorithm


def collective(op: str, size_bytes: float, *, n_ranks: int, system: str, n_systems: int = 1) -> Estimate:
    """A collective's time: bound and expectation, hierarchical when it spans systems.

    The course's one collective model, :func:`trainium_lab.collectives.neuron_collective` (which
    the planner and the pre-flight check call too; ``detail`` names the algorithm). Inside one
    system the ranks form one group: ranks of one chip exchange through HBM, a group of several
    chips over NeuronLink. Across ``n_systems`` the collective is hierarchical (instance first):
    a reduce-scatter inside each system, a ring over EFA on the shards, an all-gather inside each
    system; on Trainium1 a flat ring over every rank where it is faster (AWS gives no threshold).
    Expected:
    ``t0 + steps·α + efa_steps·α_EFA + bytes/(η·B)`` per level, with the launch cost ``t0``,
    latencies ``α`` and bus efficiencies ``η`` fitted on the NCCOM-TEST guide's Trn1 runs
    (``data/calibration.csv``); ``B`` is the published rate (HBM for ranks of one chip,
    NeuronLink per chip, EFA per instance). The bound takes ``η = 1`` and one step of the
    smallest published per-hop latency (1 µs).

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
    c = collectives.neuron_collective(op, size, n_ranks=n_ranks, system=system, n_systems=n_systems)
    return Estimate(op, c.bound_s, c.expected_s, c.algorithm)


# --------------------------------------------------------------------------- serving steps


def _replica(model, chip, tp, weight_dtype, lnc):
    m = _model(model)
    chip = _chip(chip)
    tp = _nonneg_int("tp", tp, 1)
    lnc_ = cores.resolve_lnc(chip, lnc)
    _system_for(chip, tp, lnc_)
    return serving.replica(m, chip, tp=tp, lnc=lnc, weight_dtype=weight_dtype)


def decode(model, chip: str, *, tp: int, batch: int, context_len: int, weight_dtype: str = "bfloat16",
           lnc: int | None = None, tp_collective_s: float | None = None) -> Estimate:
    """One decode step (the time per output token, TPOT): bound and expectation.

    The step model has one home, :func:`trainium_lab.serving.decode_step` (scaling-book's general
    step): attention reads the KV cache (always memory-bound), plus the larger of the weight
    matmuls' compute and the weight reads, plus ``2·L`` TP all-reduces each costing
    ``tp_collective_s`` (by default :func:`trainium_lab.serving.tp_collective_fixed_s`: fitted on
    the NxD Inference TPOTs for Trainium2, the NCCOM-TEST ring terms for Trainium1 and
    Inferentia2) plus its bytes at the published link rate. Bound: the roofline
    ``max(FLOPs/peak, bytes/HBM)`` plus ``2·L`` times one hop of the smallest published latency
    (each all-reduce sits on the critical path).

    Examples
    --------
    >>> e = decode("llama3-70b", "trn2", tp=64, batch=1, context_len=10000)
    >>> round(e.bound_s * 1e3, 2), 15 < e.expected_s * 1e3 < 25
    (4.18, True)
    >>> decode("llama3-70b", "trn2", tp=64, batch=1, context_len=-1)
    Traceback (most recent call last):
    ...
    ValueError: context_len must be an integer in [0, 1,000,000,000], got -1
    """
    rep = _replica(model, chip, tp, weight_dtype, lnc)
    batch = _nonneg_int("batch", batch, 1)
    ctx = _nonneg_int("context_len", context_len, 0)
    x = None if tp_collective_s is None else positive("tp_collective_s", tp_collective_s, allow_zero=True)
    step = serving.decode_step(rep, batch, ctx, latency_s=x)
    return Estimate("decode", step.bound_s, step.expected_s, f"{step.n_collectives} TP all-reduces")


def prefill(model, chip: str, *, tp: int, prompt_tokens: int, batch: int = 1, weight_dtype: str = "bfloat16",
            lnc: int | None = None, efficiency: float | None = None,
            tp_collective_s: float | None = None) -> Estimate:
    """Prefill of ``batch`` prompts (the time to first token, TTFT): bound and expectation.

    :func:`trainium_lab.serving.prefill_step` is the model. Bound: FLOPs
    (:func:`trainium_lab.serving.prefill_flops`) at peak, or the weight and KV traffic if longer,
    plus one smallest-latency hop per TP all-reduce. Expected: the FLOPs at ``peak × efficiency``
    (fitted on the NxD Inference TTFTs), plus the TP all-reduces as in :func:`decode` with their
    bytes at the published link rate.

    Examples
    --------
    >>> e = prefill("llama3-405b", "trn2", tp=64, prompt_tokens=10000)
    >>> round(e.bound_s, 2), 2.0 < e.expected_s < 3.0
    (0.92, True)
    """
    rep = _replica(model, chip, tp, weight_dtype, lnc)
    s = _nonneg_int("prompt_tokens", prompt_tokens, 1)
    batch = _nonneg_int("batch", batch, 1)
    eff = None if efficiency is None else positive("efficiency", efficiency)
    x = None if tp_collective_s is None else positive("tp_collective_s", tp_collective_s, allow_zero=True)
    if eff is not None and eff > 1:
        raise ValueError(f"efficiency must be in (0, 1], got {eff}")
    step = serving.prefill_step(rep, s, batch, eff, latency_s=x)
    return Estimate("prefill", step.bound_s, step.expected_s, f"{step.n_collectives} TP all-reduces")


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
             link_efficiency: float | None = None) -> TrainingEstimate:
    """Training throughput: an upper bound and an expectation (tokens per second).

    Bound: every chip at peak BF16 on the step's FLOPs (6N per token plus causal attention, as
    :func:`trainium_lab.layouts.evaluate` counts them), nothing else. Expected: the step of
    :func:`trainium_lab.layouts.evaluate` rebuilt from its parts, with compute at ``mfu`` of peak
    (fitted on AWS's Trn1 training table) and the tensor- and pipeline-parallel collectives at
    ``link_efficiency`` of the published NeuronLink rate (``neuronlink_bus_efficiency``, fitted on
    the NCCOM-TEST runs, not on the training table); the pipeline bubble scales with the slot it
    is made of; the exposed data-parallel traffic is kept as the layout model gives it.

    Examples
    --------
    >>> e = training("llama3-8b", "trn1.32xlarge", n_systems=32, tp=32, pp=1, dp=32, seq_len=8192,
    ...              global_batch=1024)
    >>> e.bound_tokens_per_s > e.expected_tokens_per_s
    True
    """
    from trainium_lab import layouts

    lay = _layout(model, system, n_systems, tp, pp, dp, seq_len, global_batch, micro_batch, zero_stage)
    eta = parameter("train_mfu") if mfu is None else positive("mfu", mfu)
    if eta > 1:
        raise ValueError(f"mfu must be in (0, 1], got {eta}")
    eff = parameter("neuronlink_bus_efficiency") if link_efficiency is None else positive("link_efficiency", link_efficiency)
    est = layouts.evaluate(lay, mfu=1.0)
    t = est.time_s
    tokens = lay.seq_len * global_batch
    # mfu_effective = FLOPs / (step × chips × peak), so FLOPs / (chips × peak) = step × mfu_effective:
    bound = tokens / (est.step_s * est.mfu_effective)
    slot = t["compute"] + t["tp_comm"] + t["pp_comm"]
    new_slot = t["compute"] / eta + (t["tp_comm"] + t["pp_comm"]) / eff
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


def _modelled(row) -> tuple[bool, str]:
    if row["set"] == PREFIX_CACHE_SET:
        return False, "prefix caching: prompt lengths not stated; judged by prefix_cache_check"
    if row["set"] == "nccom_test_guide":
        if row["instance"] == "not stated":
            return False, "instance not stated"
        if row["op"] not in OPS:
            return False, f"op {row['op']} not modelled"
    return True, ""


def _row_estimate(row, params: dict[str, float] | None = None) -> tuple[float, float, str]:
    """(bound, expected, kind) for one measurement row; times in s, throughput in tokens/s."""
    metric = row["metric"]
    if row["set"] == "nccom_test_guide":
        s = specs.system(row["instance"].split(" ")[0])
        cands = _collective_candidates(row["op"], float(row["size_bytes"]), int(row["n_ranks"]), s,
                                       int(row["n_instances"]))
        bound, expected, _ = _collective_row(cands, {**_nccom_params(), **(params or {})})
        return bound, expected, "time"
    if metric == "tpot":
        e = decode(row["model"], "trn2", tp=int(row["tp"]), batch=int(row["batch"]),
                   context_len=int(row["input_tokens"]) + int(row["output_tokens"]) // 2,
                   lnc=int(row["lnc"]), tp_collective_s=(params or {}).get("decode_tp_collective_s"))
        return e.bound_s, e.expected_s, "time"
    if metric == "ttft":
        e = prefill(row["model"], "trn2", tp=int(row["tp"]), prompt_tokens=int(row["input_tokens"]),
                    batch=1, lnc=int(row["lnc"]), efficiency=(params or {}).get("prefill_efficiency"),
                    tp_collective_s=(params or {}).get("decode_tp_collective_s"))
        return e.bound_s, e.expected_s, "time"
    if metric == "train_sequences_per_s":
        e = training(row["model"], row["instance"], n_systems=int(row["n_instances"]), tp=int(row["tp"]),
                     pp=int(row["pp"]), dp=int(row["dp"]), seq_len=int(row["seq_len"]),
                     global_batch=int(row["global_batch"]), micro_batch=int(row["micro_batch"]),
                     mfu=(params or {}).get("train_mfu"),
                     link_efficiency=(params or {}).get("neuronlink_bus_efficiency"))
        return e.bound_tokens_per_s, e.expected_tokens_per_s, "throughput"
    if metric.startswith("acceptance_position_"):
        pos = int(metric.rsplit("_", 1)[1])
        return 1.0, acceptance(pos, (params or {}).get("eagle3_acceptance_alpha")), "probability"
    raise ValueError(f"metric {metric!r} has no model")


@functools.lru_cache(maxsize=1)
def _compare() -> pd.DataFrame:
    out = []
    for _, row in _measurements().iterrows():
        ok, why = _modelled(row)
        measured = _measured(row)
        bound = expected = math.nan
        kind = "time" if row["set"] == "nccom_test_guide" else ""
        if ok:
            bound, expected, kind = _row_estimate(row)
        out.append({"measurement_id": row["measurement_id"], "set": row["set"], "metric": row["metric"],
                    "kind": kind, "measured": measured, "bound": bound, "expected": expected,
                    "expected_over_measured": expected / measured if ok else math.nan,
                    "bound_over_measured": bound / measured if ok else math.nan,
                    "modelled": ok, "not_modelled_because": why, "source_id": row["source_id"]})
    df = pd.DataFrame(out)
    tol = _measurements()["tolerance"].astype(float).to_numpy()
    ratio = df["bound_over_measured"].to_numpy()
    is_time = (df["kind"] == "time").to_numpy()
    holds = np.where(is_time, ratio <= 1 + tol, ratio >= 1 - tol)
    df["bound_holds"] = np.where(df["modelled"], holds, True)
    df["abs_error"] = (df["expected_over_measured"] - 1).abs()
    return df


def compare() -> pd.DataFrame:
    """Every stored measurement beside its bound and expectation.

    Columns: ``measurement_id``, ``set``, ``metric``, ``kind`` (time in s, throughput in
    tokens/s, probability), ``measured``, ``bound``, ``expected``, ``expected_over_measured``,
    ``bound_over_measured``, ``abs_error`` (``|expected/measured − 1|``), ``bound_holds`` (a time
    not below its bound, a throughput or probability not above it, within the row's tolerance),
    ``modelled`` and ``not_modelled_because`` (rows whose configuration the source does not state).

    Examples
    --------
    >>> c = compare()
    >>> bool(c.bound_holds.all())
    True
    """
    return _compare().copy()


def summary() -> pd.DataFrame:
    """Median and maximum ``|expected/measured − 1|`` per set and over all modelled rows.

    Examples
    --------
    >>> s = summary()
    >>> list(s.columns)
    ['set', 'n_rows', 'median_abs_error', 'max_abs_error', 'bounds_hold']
    """
    c = _compare()
    c = c[c.modelled]
    rows = [{"set": k, "n_rows": len(g), "median_abs_error": float(g.abs_error.median()),
             "max_abs_error": float(g.abs_error.max()), "bounds_hold": bool(g.bound_holds.all())}
            for k, g in c.groupby("set", sort=False)]
    rows.append({"set": "all", "n_rows": len(c), "median_abs_error": float(c.abs_error.median()),
                 "max_abs_error": float(c.abs_error.max()), "bounds_hold": bool(c.bound_holds.all())})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the fit


def _golden(f, lo: float, hi: float, iters: int = 80) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = math.log(lo), math.log(hi)
    c, d = b - g * (b - a), a + g * (b - a)
    for _ in range(iters):
        if f(math.exp(c)) < f(math.exp(d)):
            b = d
        else:
            a = c
        c, d = b - g * (b - a), a + g * (b - a)
    return math.exp((a + b) / 2)


def _nnls(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients (drop the most negative, refit)."""
    free = list(range(a.shape[1]))
    while True:
        x = np.zeros(a.shape[1])
        sol, *_ = np.linalg.lstsq(a[:, free], y, rcond=None)
        x[free] = sol
        if (sol >= 0).all():
            return x
        free.pop(int(np.argmin(sol)))


def _log_sq(rows, params) -> float:
    return sum(math.log(_row_estimate(r, params)[1] / _measured(r)) ** 2 for r in rows)


def _planner_tokens_per_s(row, mfu: float) -> float:
    """The planner's own prediction (:func:`trainium_lab.layouts.evaluate`, published link rates) at ``mfu``."""
    from trainium_lab import layouts

    lay = _layout(row["model"], row["instance"], int(row["n_instances"]), int(row["tp"]), int(row["pp"]),
                  int(row["dp"]), int(row["seq_len"]), int(row["global_batch"]), int(row["micro_batch"]), 1)
    return layouts.evaluate(lay, mfu=mfu).tokens_per_s


def _fit_nccom(rows, max_rounds: int = 20) -> dict[str, float]:
    """Fit the collective model's parameters on the NCCOM-TEST rows (see :func:`fit`).

    The model is linear in ``t0, α, α_EFA, 1/η_chip, 1/η_link`` once each row's algorithm is
    fixed (and, for a flat ring, which level bounds its bytes and its steps). Start from the
    hierarchical (or intra-node) algorithm on every row, fit, let each row take the algorithm the
    fitted model calls fastest, and refit until no row changes (at most ``max_rounds``).
    """
    efa = parameter("efa_bus_efficiency")
    cands = []
    for r in rows:
        s = specs.system(r["instance"].split(" ")[0])
        cands.append(_collective_candidates(r["op"], float(r["size_bytes"]), int(r["n_ranks"]), s,
                                            int(r["n_instances"])))
    meas = [_measured(r) for r in rows]
    choice_ = [0] * len(rows)
    p: dict[str, float] = {}
    for _ in range(max_rounds):
        a, y = [], []
        for cs, i, m in zip(cands, choice_, meas):
            t = cs[i]
            flat_efa = not p or p["efa_step_latency_s"] >= p["ring_step_latency_s"]
            steps = t["steps"] + (0.0 if flat_efa else t["flat_steps"])
            efa_steps = t["efa_steps"] + (t["flat_steps"] if flat_efa else 0.0)
            chip, link, efa_s = t["chip_s"], t["link_s"], t["efa_s"] / efa
            if t["overlap"]:      # a flat ring's bytes: only the slowest level counts
                eta = p.get("neuronlink_bus_efficiency", 1.0)
                if link / eta >= efa_s:
                    efa_s = 0.0
                else:
                    link = 0.0
            a.append([t["launch"] / m, steps / m, efa_steps / m, chip / m, link / m])
            y.append(1.0 - efa_s / m)
        x = _nnls(np.array(a), np.array(y))
        p = {"collective_launch_s": x[0], "ring_step_latency_s": x[1], "efa_step_latency_s": x[2],
             "intra_chip_bus_efficiency": 1 / x[3] if x[3] > 0 else math.inf,
             "neuronlink_bus_efficiency": 1 / x[4] if x[4] > 0 else math.inf, "efa_bus_efficiency": efa}
        new = [min(range(len(cs)), key=lambda j: collectives._neuron_expected(cs[j], p)) for cs in cands]
        if new == choice_:
            break
        choice_ = new
    return p


def fit() -> pd.DataFrame:
    """Re-run the calibration on the four named sets; one row per fitted parameter.

    Procedure, set by set (each parameter is fitted on its own set only):

    (c) NCCOM-TEST, Trn1 runs whose instance the guide implies: once each row's algorithm is
    fixed, the collective model is linear in ``t0, α, α_EFA, 1/η_chip, 1/η_link``; least squares
    on the relative error ``(model − measured)/measured`` with non-negative coefficients, then each
    row takes the algorithm the fitted model calls fastest and the fit repeats until none changes
    (:func:`_fit_nccom`; ``η_EFA`` is held at its published rate).
    (b) NxD Inference TPOT: ``decode_tp_collective_s`` minimises the summed squared log error
    of :func:`decode`; TTFT: ``prefill_efficiency`` the same for :func:`prefill`.
    (a) Trn1 training table: ``train_mfu`` minimises the squared log error of :func:`training`
    (whose collectives run at the NeuronLink efficiency fitted on (c)); ``planner_mfu`` does the
    same for the planner's own model (:func:`trainium_lab.layouts.evaluate` at published link
    rates), so it absorbs what that model leaves out: it is the planner's and sizing's default.
    (d) EAGLE3: ``α`` minimises ``Σ (log α^(i+1) − log a_i)^2``, closed form.

    Returns
    -------
    pandas.DataFrame
        ``parameter``, ``value``, ``low``, ``high`` (the values the set's single rows would
        need, where one parameter is fitted), ``fitted_on``, ``n_rows``, ``residual_median``,
        ``residual_max`` (``|expected/measured − 1|`` over the set).
    """
    df = _measurements()
    out = []

    def add(name, value, rows, params, low=math.nan, high=math.nan):
        errs = [abs(_row_estimate(r, params)[1] / _measured(r) - 1) for r in rows]
        out.append({"parameter": name, "value": value, "low": low, "high": high,
                    "fitted_on": rows[0]["set"], "n_rows": len(rows),
                    "residual_median": float(np.median(errs)), "residual_max": float(max(errs))})

    nc = [r for _, r in df[df.set == "nccom_test_guide"].iterrows() if _modelled(r)[0]]
    p = _fit_nccom(nc)
    for k, v in p.items():
        if k != "efa_bus_efficiency":
            add(k, v, nc, p)

    tp = [r for _, r in df[(df.set == "nxdi_trn2_tutorials") & (df.metric == "tpot")].iterrows()]
    one = lambda r, v: _row_estimate(r, {"decode_tp_collective_s": v})[1]  # noqa: E731
    xs = [_golden(lambda v: math.log(one(r, v) / _measured(r)) ** 2, 1e-7, 1e-2) for r in tp]
    v = _golden(lambda v: _log_sq(tp, {"decode_tp_collective_s": v}), 1e-7, 1e-2)
    add("decode_tp_collective_s", v, tp, {"decode_tp_collective_s": v}, min(xs), max(xs))

    tt = [r for _, r in df[(df.set == "nxdi_trn2_tutorials") & (df.metric == "ttft")].iterrows()]
    dec = {"decode_tp_collective_s": v}
    xs = [_golden(lambda e: math.log(_row_estimate(r, {"prefill_efficiency": e, **dec})[1] / _measured(r)) ** 2,
                  1e-3, 1.0) for r in tt]
    v = _golden(lambda e: _log_sq(tt, {"prefill_efficiency": e, **dec}), 1e-3, 1.0)
    add("prefill_efficiency", v, tt, {"prefill_efficiency": v, **dec}, min(xs), max(xs))

    tr = [r for _, r in df[df.set == "trn1_training"].iterrows()]

    nl = {"neuronlink_bus_efficiency": p["neuronlink_bus_efficiency"]}
    xs = [_golden(lambda e: math.log(_row_estimate(r, {"train_mfu": e, **nl})[1] / _measured(r)) ** 2, 1e-2, 1.0)
          for r in tr]
    v = _golden(lambda e: _log_sq(tr, {"train_mfu": e, **nl}), 1e-2, 1.0)
    add("train_mfu", v, tr, {"train_mfu": v, **nl}, min(xs), max(xs))

    pl = lambda r, e: _planner_tokens_per_s(r, e)  # noqa: E731
    xs = [_golden(lambda e: math.log(pl(r, e) / _measured(r)) ** 2, 1e-2, 1.0) for r in tr]
    v = _golden(lambda e: sum(math.log(pl(r, e) / _measured(r)) ** 2 for r in tr), 1e-2, 1.0)
    errs = [abs(pl(r, v) / _measured(r) - 1) for r in tr]
    out.append({"parameter": "planner_mfu", "value": v, "low": min(xs), "high": max(xs), "fitted_on": "trn1_training",
                "n_rows": len(tr), "residual_median": float(np.median(errs)), "residual_max": float(max(errs))})

    ea = [r for _, r in df[df.set == "vllm_eagle3_acceptance"].iterrows()]
    pos = np.array([int(r["metric"].rsplit("_", 1)[1]) + 1 for r in ea], dtype=float)
    logs = np.array([math.log(_measured(r)) for r in ea])
    alpha = math.exp(float((pos * logs).sum() / (pos * pos).sum()))
    per = [math.exp(l / k) for l, k in zip(logs, pos)]
    add("eagle3_acceptance_alpha", alpha, ea, {"eagle3_acceptance_alpha": alpha}, min(per), max(per))
    return pd.DataFrame(out)


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
