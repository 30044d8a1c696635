"""Rules of thumb for parallel training, derived: when DP and TP turn communication-bound,
and the pipeline schedules whose bubble chapter 05 draws.

Three closed forms, each a ratio of a chip's compute rate ``C`` (FLOP/s) to the bandwidth
``W`` (bytes/s per chip) of the level a group's traffic crosses. ``C/W`` is a number of
FLOPs per byte moved, the network's counterpart of chapter 01's ridge point.

* **Data parallelism** reduces the gradients once per step (or per accumulation window).
  A ring all-reduce of ``g·N`` bytes over ``n`` replicas takes ``2(n−1)/n · g·N / W``;
  the backward pass it can hide behind costs ``4·N`` FLOPs per token. The reduction is
  hidden while the tokens in that backward pass, per data-parallel replica, exceed
  ``(n−1)/n · (g/2) · mfu · C/W`` (:func:`dp_compute_bound_tokens`): about ``C/W``
  tokens for BF16 gradients at peak.
* **Tensor parallelism** splits an MLP column-wise then row-wise and all-reduces its
  ``B × h`` output once per pass. The all-reduce takes ``2(Y−1)/Y · 2·B·h / W``; the
  MLP's ``k`` matrix multiplies (2 for a GeLU MLP, 3 for SwiGLU) take
  ``2k·B·h·f / (Y·C)``. The batch cancels: TP over ``Y`` chips stays compute-bound while
  ``Y < 1 + k·f / (2·C/W)`` (:func:`tp_limit_chips`).
* **Pipeline parallelism** with ``p`` stages and ``m`` micro-batches idles for ``p − 1``
  slots: a bubble of ``(p − 1)/m`` of the busy time, for GPipe and for 1F1B alike; 1F1B
  keeps at most ``p`` micro-batches of activations on the first stage instead of ``m``
  (:func:`pipeline_schedule`, which simulates either schedule op by op).

Everything here is in base units (s, bytes, FLOP/s, bytes/s); hardware figures come from
:mod:`trainium_lab.specs` and :mod:`trainium_lab.topology` (the level tables).

References
----------
J. Austin et al., "How to Scale Your Model", 2025, part 5 (Training), sections on data and
tensor parallelism (compute-bound when the per-chip batch exceeds ``C/W``, and when
``F > Y·C/W``): https://jax-ml.github.io/scaling-book/training/. M. Shoeybi et al.,
"Megatron-LM", arXiv:1909.08053 (2019), §3 and Figure 3 (column- then row-parallel MLP,
one all-reduce per pass; attention split by heads). D. Narayanan et al., "Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC21,
arXiv:2104.04473, §2.2.1 (the 1F1B / PipeDream-Flush schedule, bubble ``(p − 1)/m``, at
most ``p`` micro-batches in flight) and Figures 3–4. Y. Huang et al., "GPipe",
arXiv:1811.06965 (2019). R. Thakur, R. Rabenseifner, W. Gropp, IJHPCA 19(1), 2005 (ring
all-reduce cost).

Examples
--------
>>> from trainium_lab import specs
>>> c = specs.chip("trn2").dense_flops_per_s["bf16"]
>>> round(c / specs.link("trn2-efa").bytes_per_s)   # C/W over EFA: tokens per replica for DP
26680
>>> round(tp_limit_chips(53248, c, specs.link("trn2-neuronlink-inter").bytes_per_s), 1)
31.7
>>> pipeline_schedule(4, 16).bubble_fraction
0.1875
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from trainium_lab import collectives, specs, topology
from trainium_lab._validate import choice, in_range, integer, positive, sequence
from trainium_lab.sizing import MLP_KINDS, activation_options, preset

__all__ = [
    "MLP_MATMULS", "dp_compute_bound_tokens", "fsdp_compute_bound_tokens", "zero_traffic_table", "TPBlockTimes", "tp_mlp_times", "tp_limit_chips",
    "level_ratios_table", "tp_limit_table",
    "PIPELINE_SCHEDULES", "PipelineSchedule", "pipeline_schedule", "one_f_one_b_schedule",
    "gpipe_schedule",
]

#: matrix multiplies of width ``d_model × ffn_dim`` in one MLP: GeLU (up, down), SwiGLU (gate, up, down)
MLP_MATMULS: dict[str, int] = {"gelu": 2, "swiglu": 3}
#: the pipeline schedules :func:`pipeline_schedule` simulates
PIPELINE_SCHEDULES: tuple[str, ...] = ("1f1b", "gpipe")

_MAX_STAGES = 128
_MAX_MICRO_BATCHES = 1024
_MAX_OPS = 2**16


# --------------------------------------------------------------------- data parallelism


def dp_compute_bound_tokens(peak_flops_per_s: float, bandwidth_bytes_per_s: float, *,
                            n: int | None = None, grad_bytes_per_param: float = 2.0,
                            mfu: float = 1.0) -> float:
    """Tokens per data-parallel replica above which the gradient all-reduce hides behind compute.

    Each replica holds ``N`` parameters (its share, if TP and PP split the model: the
    ratio below does not depend on ``N``). The ring all-reduce of its ``g·N`` gradient
    bytes over ``n`` replicas takes ``2(n−1)/n · g·N / W`` (chapter 03); the backward pass
    it can run behind costs ``4·N`` FLOPs per token (twice the forward's ``2N``), i.e.
    ``4·N·b / (mfu·C)`` for ``b`` tokens. Setting them equal:

    ``b* = (n−1)/n · (g/2) · mfu · C/W``

    which is ``C/W`` for BF16 gradients (``g = 2``), many replicas and the peak rate. ``b``
    counts the tokens of the backward pass that can hide the reduction: the whole step for
    plain data parallelism, only the **last micro-batch** when gradients are accumulated
    over micro-batches (the reduction starts once they are final), per replica.

    Parameters
    ----------
    peak_flops_per_s : float
        ``C``: one chip's dense rate (FLOP/s), e.g. ``specs.chip("trn2").dense_flops_per_s["bf16"]``.
    bandwidth_bytes_per_s : float
        ``W``: bandwidth per chip of the level the DP group crosses (bytes/s).
    n : int, optional
        Data-parallel degree; default: the limit of many replicas (factor 1).
    grad_bytes_per_param : float
        ``g``: bytes per gradient reduced (2 for BF16, 4 for FP32).
    mfu : float
        Share of peak the compute runs at, in (0, 1]; 1 gives the rule of thumb.

    Returns
    -------
    float
        Tokens (0 when ``n = 1``: nothing to reduce).

    References
    ----------
    Austin et al. 2025, "How to Scale Your Model", part 5 (data parallelism: compute-bound
    when ``B/X > C/W``); Thakur et al. 2005 (ring all-reduce).

    Examples
    --------
    >>> round(dp_compute_bound_tokens(667e12, 25e9))          # Trainium2 over EFA
    26680
    >>> round(dp_compute_bound_tokens(667e12, 25e9, n=2, mfu=0.4))
    5336
    """
    c = positive("peak_flops_per_s", peak_flops_per_s)
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    # chapter 03's rule (one home): the compute rate is the peak times the MFU
    return collectives.dp_comm_bound_tokens_per_chip(mfu * c, bandwidth_bytes_per_s, n,
                                                     grad_bytes_per_param=grad_bytes_per_param)


def fsdp_compute_bound_tokens(peak_flops_per_s: float, bandwidth_bytes_per_s: float, *,
                              n: int | None = None, weight_bytes_per_param: float = 2.0,
                              grad_bytes_per_param: float = 2.0, mfu: float = 1.0) -> float:
    """Tokens per micro-batch and replica above which FSDP (ZeRO-3) traffic hides behind each layer.

    ZeRO-3 keeps ``1/n`` of a layer's ``N_l`` parameters per replica. Before the layer runs
    forward it all-gathers them (``(n−1)/n · w·N_l / W``) beside ``2·N_l·b`` FLOPs; before it
    runs backward it gathers them again and afterwards reduce-scatters the gradients
    (``(n−1)/n · (w + g)·N_l / W``) beside ``4·N_l·b`` FLOPs. At ``mfu·C`` FLOP/s both hide when

    ``b ≥ (n−1)/n · mfu · C/W · max(w/2, (w + g)/4)``

    ``= (n−1)/n · (g/2) · mfu · C/W`` when ``w = g``: the data-parallel threshold
    (:func:`dp_compute_bound_tokens`), but for **every micro-batch** rather than the last one,
    and only if the framework's schedule puts each layer's collectives beside a neighbouring
    layer's compute (``frameworks.overlap_schedule``: token threading on Neuron).

    Parameters
    ----------
    peak_flops_per_s, bandwidth_bytes_per_s : float
        ``C`` (FLOP/s) and ``W`` (bytes/s per chip of the level the DP group crosses).
    n : int, optional
        Data-parallel degree (default: the many-replica limit).
    weight_bytes_per_param, grad_bytes_per_param : float
        ``w`` and ``g``: bytes per gathered weight and per reduced gradient (2 for BF16; 4 for
        FP32 parameters, as TorchNeuron's autocast recipe keeps them).
    mfu : float
        Share of peak the compute runs at, in (0, 1].

    Returns
    -------
    float
        Tokens per micro-batch per replica (0 when ``n = 1``).

    References
    ----------
    Rajbhandari et al. 2020, "ZeRO" §5 and §7 (stage 3 gathers parameters forward and backward,
    reduce-scatters gradients); Austin et al. 2025, "How to Scale Your Model", part 5 (the
    FSDP compute-bound condition); AWS, "Compute-Communication Overlap in Neuron" (which
    collectives the schedule overlaps).

    Examples
    --------
    >>> round(fsdp_compute_bound_tokens(667e12, 25e9, n=8, mfu=0.3))
    7004
    >>> round(fsdp_compute_bound_tokens(667e12, 25e9, n=8, mfu=0.3, weight_bytes_per_param=4,
    ...                                 grad_bytes_per_param=4))
    14007
    """
    c = positive("peak_flops_per_s", peak_flops_per_s)
    w_bw = positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    w = in_range("weight_bytes_per_param", weight_bytes_per_param, 0.0, 64.0, low_open=True)
    g = in_range("grad_bytes_per_param", grad_bytes_per_param, 0.0, 64.0, low_open=True)
    share = 1.0 if n is None else (integer("n", n, minimum=1) - 1) / n
    return share * mfu * c / w_bw * max(w / 2.0, (w + g) / 4.0)


def zero_traffic_table(n: int, n_micro_batches: int, *, weight_bytes_per_param: float = 2.0,
                       grad_bytes_per_param: float = 2.0):
    """Bytes each replica sends per step and parameter it holds, per ZeRO stage, with gradient
    accumulation over ``n_micro_batches`` micro-batches (ring collectives over ``n`` replicas).

    Stage 0 (DDP) and 1 accumulate full gradients and reduce them once, after the last
    micro-batch (an all-reduce: ``2(n−1)/n·g``; ZeRO-1 does it as a reduce-scatter and an
    all-gather of the updated weights, the same bytes). Stage 2 keeps only a gradient shard, so
    every micro-batch's backward ends in a reduce-scatter (``m·(n−1)/n·g``), plus one all-gather
    of the weights. Stage 3 also gathers the weights forward and backward in every micro-batch
    (``2m·(n−1)/n·w``). ``window`` is what each reduction can hide behind: the last micro-batch
    (stages 0–1) or every micro-batch (2–3).

    Returns
    -------
    pandas.DataFrame
        ``zero_stage, reduce_bytes_per_param, gather_bytes_per_param, total_bytes_per_param,
        vs_stage_1, window``.

    References
    ----------
    Rajbhandari et al. 2020, "ZeRO" §5.2 (communication of stages 1–3); chapter 03 (ring costs).

    Examples
    --------
    >>> t = zero_traffic_table(8, 32).set_index("zero_stage")
    >>> float(t.loc[2, "vs_stage_1"])      # (m + 1)/2 with w = g
    16.5
    """
    n = integer("n", n, minimum=1)
    m = integer("n_micro_batches", n_micro_batches, minimum=1)
    w = in_range("weight_bytes_per_param", weight_bytes_per_param, 0.0, 64.0, low_open=True)
    g = in_range("grad_bytes_per_param", grad_bytes_per_param, 0.0, 64.0, low_open=True)
    f = (n - 1) / n
    rows = [(0, 2 * f * g, 0.0, "last micro-batch"), (1, 2 * f * g, 0.0, "last micro-batch"),
            (2, m * f * g, f * w, "every micro-batch"), (3, m * f * g, 2 * m * f * w, "every micro-batch")]
    df = pd.DataFrame(rows, columns=["zero_stage", "reduce_bytes_per_param", "gather_bytes_per_param", "window"])
    df["total_bytes_per_param"] = df.reduce_bytes_per_param + df.gather_bytes_per_param
    base = float(df.total_bytes_per_param[1])
    df["vs_stage_1"] = df.total_bytes_per_param / base if base > 0 else float("nan")
    return df[["zero_stage", "reduce_bytes_per_param", "gather_bytes_per_param", "total_bytes_per_param",
               "vs_stage_1", "window"]]


# --------------------------------------------------------------------- tensor parallelism


def _mlp_matmuls(mlp: str) -> int:
    return MLP_MATMULS[choice("mlp", mlp, MLP_KINDS)]


@dataclass(frozen=True)
class TPBlockTimes:
    """One tensor-parallel MLP, one pass: compute against its all-reduce (seconds).

    Attributes
    ----------
    compute_s : float
        The MLP's matrix multiplies on one chip of the group.
    allreduce_s : float
        The all-reduce of the ``n_tokens × d_model`` output (BF16) over the group.
    """

    compute_s: float
    allreduce_s: float

    @property
    def comm_to_compute(self) -> float:
        """``allreduce_s / compute_s``: above 1 the all-reduce is the longer of the two."""
        return self.allreduce_s / self.compute_s

    def _repr_markdown_(self) -> str:
        return (f"MLP compute **{self.compute_s * 1e3:.3g} ms**, all-reduce "
                f"**{self.allreduce_s * 1e3:.3g} ms** (ratio {self.comm_to_compute:.2f})")


def tp_mlp_times(n_tokens: float, d_model: int, ffn_dim: int, tp_chips: int, peak_flops_per_s: float,
                 bandwidth_bytes_per_s: float, *, mlp: str = "swiglu", mfu: float = 1.0,
                 bytes_per_element: float = 2.0) -> TPBlockTimes:
    """Compute and all-reduce time of one MLP split over ``tp_chips`` chips (Megatron-LM).

    The first weight (and SwiGLU's gate) is split by columns, so each chip computes its
    ``f/Y`` slice of the hidden activation with no communication; the second by rows, so
    each chip holds a partial sum of the ``B × h`` output, and one all-reduce adds them.
    Compute: ``2·k·B·h·f / (Y · mfu · C)`` with ``k`` = :data:`MLP_MATMULS`; all-reduce:
    ``2(Y−1)/Y · bytes·B·h / W`` (:func:`trainium_lab.collectives.ring_allreduce_s`). The
    backward pass has twice the FLOPs and one all-reduce of the same size (operator *f*).

    Parameters
    ----------
    n_tokens : float
        ``B``: tokens in the micro-batch (sequences × sequence length).
    d_model, ffn_dim : int
        ``h`` and ``f``.
    tp_chips : int
        ``Y``: chips in the TP group (ranks on one chip share it; their traffic is free here).
    peak_flops_per_s, bandwidth_bytes_per_s : float
        ``C`` per chip and ``W`` per chip at the level the group crosses.
    mlp : {"swiglu", "gelu"}
    mfu : float
        Share of peak the matrix multiplies reach, in (0, 1].
    bytes_per_element : float
        Activation bytes (2 for BF16).

    References
    ----------
    Shoeybi et al. 2019, arXiv:1909.08053, §3 (Figure 3a); Austin et al. 2025, part 5
    (tensor parallelism).

    Examples
    --------
    >>> t = tp_mlp_times(8192, 16384, 53248, 16, 667e12, 1.024e12)
    >>> round(t.compute_s * 1e3, 3), round(t.allreduce_s * 1e3, 3)
    (4.018, 0.492)
    """
    b = positive("n_tokens", n_tokens)
    h = integer("d_model", d_model, minimum=1, maximum=10**7)
    f = integer("ffn_dim", ffn_dim, minimum=1, maximum=10**7)
    y = integer("tp_chips", tp_chips, minimum=1, maximum=10**6)
    c = positive("peak_flops_per_s", peak_flops_per_s)
    w = positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    k = _mlp_matmuls(mlp)
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    e = positive("bytes_per_element", bytes_per_element)
    compute = 2.0 * k * b * h * f / (y * mfu * c)
    allreduce = collectives.ring_allreduce_s(e * b * h, y, w)
    return TPBlockTimes(compute, allreduce)


def tp_limit_chips(ffn_dim: int, peak_flops_per_s: float, bandwidth_bytes_per_s: float, *,
                   mlp: str = "swiglu", mfu: float = 1.0) -> float:
    """TP degree, in chips, at which an MLP's all-reduce takes as long as its compute.

    From :func:`tp_mlp_times`, ``2(Y−1)/Y · 2Bh/W = 2k·B·h·f / (Y·mfu·C)`` gives

    ``Y* = 1 + k·f / (2 · mfu · C/W)``

    (forward and backward alike: the backward doubles both sides). The tokens ``B`` and
    ``h`` cancel: only the MLP width ``f`` and the level's ``C/W`` decide. Below ``Y*`` the
    MLP is compute-bound; above it, the all-reduce is the longer part (and, with no
    overlap, adds to the step). Dropping the ``+1`` and taking ``k = 2`` gives the
    scaling-book form ``Y < F / (C/W)``.

    Parameters
    ----------
    ffn_dim : int
        ``f``, the MLP width.
    peak_flops_per_s, bandwidth_bytes_per_s : float
        ``C`` and ``W`` per chip (the level TP lands on).
    mlp : {"swiglu", "gelu"}
        ``k`` = 3 or 2 matrix multiplies of size ``h × f``.
    mfu : float
        Share of peak while computing, in (0, 1]. A lower MFU *raises* the limit: slower
        compute hides more communication.

    Returns
    -------
    float
        ``Y*`` in chips (not rounded).

    References
    ----------
    Austin et al. 2025, "How to Scale Your Model", part 5 (tensor parallelism is
    communication-bound when ``Y > F·W/C``); Shoeybi et al. 2019, §3.

    Examples
    --------
    Llama 3 405B's MLP (f = 53,248, SwiGLU) on Trainium2, inside an instance and across the
    UltraServer ring:

    >>> round(tp_limit_chips(53248, 667e12, 1.024e12), 1), round(tp_limit_chips(53248, 667e12, 256e9), 1)
    (123.6, 31.7)
    """
    f = integer("ffn_dim", ffn_dim, minimum=1, maximum=10**7)
    c = positive("peak_flops_per_s", peak_flops_per_s)
    w = positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    k = _mlp_matmuls(mlp)
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    return 1.0 + k * f / (2.0 * mfu * c / w)


# --------------------------------------------------------------------- the tables


_DEFAULT_SYSTEMS = ("trn2-ultraserver", "trn3-gen2-ultraserver")


def _preset_key(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a model preset name such as 'llama3-8b'; got {value!r}")
    return preset(value).key


def _systems(systems) -> list[str]:
    return sequence("systems", systems, lambda name, x: choice(name, x, topology.SYSTEMS),
                    max_length=len(topology.SYSTEMS) * 4)


def level_ratios_table(systems: tuple[str, ...] = _DEFAULT_SYSTEMS, *, dtype: str = "bfloat16",
                       mfu: float = 1.0) -> pd.DataFrame:
    """``C/W`` for every level of each system, and the data-parallel threshold it implies.

    One row per (system, level) with a bandwidth: ``chips_in_level`` (the most chips a group
    confined to the level spans: an instance's or the whole system's; NaN over EFA),
    ``bytes_per_s`` (per chip, as :func:`trainium_lab.topology.levels_table` gives it),
    ``flops_per_s`` (the chip's dense rate for ``dtype``), ``flops_per_byte`` (``C/W``) and
    ``dp_tokens`` (:func:`dp_compute_bound_tokens` for BF16 gradients and many replicas at
    ``mfu``).

    Examples
    --------
    >>> t = level_ratios_table(("trn2-ultraserver",))
    >>> t.level.tolist(), t.flops_per_byte.round().astype(int).tolist()
    (['instance', 'ultraserver', 'efa'], [651, 2605, 26680])
    """
    names = _systems(systems)
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    levels = topology.levels_table(tuple(dict.fromkeys(names)))
    rows = []
    for r in levels.itertuples():
        s = specs.system(r.system)
        rates = s.chip.dense_flops_per_s
        if dtype not in rates:
            raise ValueError(f"dtype must be one of {sorted(rates)} for {s.chip.name}; got {dtype!r}")
        c = float(rates[dtype])
        w = float(r.bytes_per_s)
        span = {"instance": s.chips_per_instance, "ultraserver": s.n_chips}.get(r.level, math.nan)
        rows.append({"system": r.system, "chip": s.chip_key, "level": r.level,
                     "chips_in_level": float(span), "bytes_per_s": w, "flops_per_s": c,
                     "flops_per_byte": c / w,
                     "dp_tokens": dp_compute_bound_tokens(c, w, mfu=mfu)})
    return pd.DataFrame(rows)


def tp_limit_table(models: tuple[str, ...] = ("llama3-8b", "llama3-70b", "llama3-405b"),
                   systems: tuple[str, ...] = _DEFAULT_SYSTEMS, *, dtype: str = "bfloat16",
                   mfu: float = 1.0) -> pd.DataFrame:
    """The TP limit ``Y*`` (chips) of each model's MLP at every level of each system.

    Columns: ``system, level, chips_in_level, model, ffn_dim, mlp, tp_limit_chips`` and
    ``bound_by``: ``"level"`` when the level has fewer chips than ``Y*`` (TP can fill it and
    stay compute-bound), ``"communication"`` when ``Y*`` falls inside it.

    Examples
    --------
    >>> t = tp_limit_table(("llama3-405b",), ("trn2-ultraserver",))
    >>> t[["level", "tp_limit_chips", "bound_by"]].round(1).values.tolist()
    [['instance', 123.6, 'level'], ['ultraserver', 31.7, 'communication'], ['efa', 4.0, 'communication']]
    """
    keys = sequence("models", models, _preset_key, max_length=64)
    ratios = level_ratios_table(systems, dtype=dtype)
    mfu = in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    rows = []
    for r in ratios.itertuples():
        for key in keys:
            p = preset(key)
            mlp = activation_options(p).get("mlp", "gelu")
            y = tp_limit_chips(p.ffn_dim, r.flops_per_s, r.bytes_per_s, mlp=mlp, mfu=mfu)
            within = not math.isnan(r.chips_in_level) and y >= r.chips_in_level
            rows.append({"system": r.system, "level": r.level, "chips_in_level": r.chips_in_level,
                         "model": p.name, "ffn_dim": p.ffn_dim, "mlp": mlp, "tp_limit_chips": y,
                         "bound_by": "level" if within else "communication"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- pipeline schedules


@dataclass(frozen=True)
class PipelineSchedule:
    """A pipeline schedule simulated op by op (build it with :func:`pipeline_schedule`).

    Attributes
    ----------
    schedule : str
        ``"1f1b"`` or ``"gpipe"``.
    pp, n_micro_batches : int
        Stages ``p`` and micro-batches ``m``.
    forward_s, backward_s : float
        One micro-batch's forward and backward time on one stage.
    ops : pandas.DataFrame
        One row per pass: ``stage, micro_batch, phase`` ("forward"/"backward"),
        ``start_s, end_s``; stages and micro-batches counted from 0.
    idle : pandas.DataFrame
        The bubbles: ``stage, start_s, end_s`` of every gap in a stage's timeline.
    makespan_s : float
        From the first forward to the last backward.
    peak_in_flight : int
        Most micro-batches whose activations the first stage holds at once (forward done,
        backward not yet).
    """

    schedule: str
    pp: int
    n_micro_batches: int
    forward_s: float
    backward_s: float
    ops: pd.DataFrame
    idle: pd.DataFrame
    makespan_s: float
    peak_in_flight: int

    @property
    def busy_s(self) -> float:
        """Work per stage: ``m · (forward + backward)``."""
        return self.n_micro_batches * (self.forward_s + self.backward_s)

    @property
    def bubble_s(self) -> float:
        """Idle time per stage: ``makespan − busy``."""
        return self.makespan_s - self.busy_s

    @property
    def bubble_fraction(self) -> float:
        """Idle over busy time per stage: ``(p − 1)/m`` for both schedules."""
        return self.bubble_s / self.busy_s

    def _repr_markdown_(self) -> str:
        return (f"{self.schedule.upper()} with p = {self.pp}, m = {self.n_micro_batches}: step "
                f"**{self.makespan_s:.4g} s**, bubble **{self.bubble_fraction:.3f}** of the busy time, "
                f"first stage holds up to **{self.peak_in_flight}** micro-batches of activations")


def _stage_orders(schedule: str, p: int, m: int) -> list[list[tuple[str, int]]]:
    orders = []
    for s in range(p):
        if schedule == "gpipe":
            order = [("forward", i) for i in range(m)] + [("backward", i) for i in range(m)]
        else:  # 1F1B (PipeDream-Flush): warm up, alternate one forward and one backward, drain
            warm = min(p - s - 1, m)
            order = [("forward", i) for i in range(warm)]
            for j in range(m - warm):
                order += [("forward", warm + j), ("backward", j)]
            order += [("backward", i) for i in range(m - warm, m)]
        orders.append(order)
    return orders


def pipeline_schedule(pp: int, n_micro_batches: int, *, schedule: str = "1f1b",
                      forward_s: float = 1.0, backward_s: float = 2.0) -> PipelineSchedule:
    """Simulate a pipeline schedule: when each stage runs each forward and backward pass.

    Every stage runs its passes in the schedule's order; a pass starts when the stage is
    free and its input is ready: forward ``i`` on stage ``s`` needs forward ``i`` of stage
    ``s − 1``; backward ``i`` needs backward ``i`` of stage ``s + 1`` (the last stage: its
    own forward). Sends between stages cost nothing here.

    * ``"gpipe"``: all ``m`` forwards, then all ``m`` backwards (Huang et al. 2019).
    * ``"1f1b"``: stage ``s`` (from 0) runs ``min(p − s − 1, m)`` warm-up forwards, then
      alternates one forward and one backward, then drains the remaining backwards
      (PipeDream-Flush, Narayanan et al. 2021, §2.2.1).

    With equal passes on every stage both take ``(m + p − 1)·(t_f + t_b)``: a bubble of
    ``(p − 1)/m`` of the busy time. 1F1B's gain is memory: its first stage holds at most
    ``min(p, m)`` micro-batches of activations; GPipe's holds all ``m``.

    Parameters
    ----------
    pp : int
        Stages ``p``, 1 to 128.
    n_micro_batches : int
        Micro-batches ``m``, 1 to 1,024 (and ``p·m`` at most 65,536).
    schedule : {"1f1b", "gpipe"}
    forward_s, backward_s : float
        One pass on one stage (default 1 and 2 time units: a backward pass costs about
        twice a forward).

    Returns
    -------
    PipelineSchedule

    References
    ----------
    Narayanan et al. 2021, arXiv:2104.04473, §2.2.1 and Figures 3–4; Huang et al. 2019,
    arXiv:1811.06965 (GPipe).

    Examples
    --------
    >>> s = pipeline_schedule(4, 8)
    >>> s.makespan_s, s.bubble_fraction, s.peak_in_flight
    (33.0, 0.375, 4)
    >>> g = pipeline_schedule(4, 8, schedule="gpipe")
    >>> g.makespan_s, g.peak_in_flight
    (33.0, 8)
    >>> s.ops.head(3).values.tolist()
    [[0, 0, 'forward', 0.0, 1.0], [0, 1, 'forward', 1.0, 2.0], [0, 2, 'forward', 2.0, 3.0]]
    """
    p = integer("pp", pp, minimum=1, maximum=_MAX_STAGES)
    m = integer("n_micro_batches", n_micro_batches, minimum=1, maximum=_MAX_MICRO_BATCHES)
    if p * m > _MAX_OPS:
        raise ValueError(f"pp × n_micro_batches must be at most {_MAX_OPS:,}; got {p} × {m}")
    kind = choice("schedule", schedule, PIPELINE_SCHEDULES)
    tf = positive("forward_s", forward_s)
    tb = positive("backward_s", backward_s)
    if tf > 1e15 or tb > 1e15:
        raise ValueError("forward_s and backward_s must each be at most 1e15 s")

    orders = _stage_orders(kind, p, m)
    nan = math.nan
    fwd_end = [[nan] * m for _ in range(p)]
    bwd_end = [[nan] * m for _ in range(p)]
    free = [0.0] * p
    nxt = [0] * p
    per_stage: list[list[tuple[int, int, str, float, float]]] = [[] for _ in range(p)]
    remaining = 2 * p * m
    while remaining:
        progressed = False
        for s in range(p):
            order, done, t = orders[s], per_stage[s], free[s]
            k = nxt[s]
            while k < len(order):
                phase, i = order[k]
                if phase == "forward":
                    ready = 0.0 if s == 0 else fwd_end[s - 1][i]
                else:
                    ready = fwd_end[s][i] if s == p - 1 else bwd_end[s + 1][i]
                if ready != ready:  # NaN: the input is not ready yet
                    break
                start = t if t > ready else ready
                if phase == "forward":
                    t = start + tf
                    fwd_end[s][i] = t
                else:
                    t = start + tb
                    bwd_end[s][i] = t
                done.append((s, i, phase, start, t))
                k += 1
            if k != nxt[s]:
                remaining -= k - nxt[s]
                nxt[s], free[s] = k, t
                progressed = True
        if not progressed:  # pragma: no cover - both orders are deadlock-free
            raise RuntimeError("pipeline schedule deadlocked")
    rows = [r for stage in per_stage for r in stage]  # by stage, then in time order
    ops = pd.DataFrame(rows, columns=["stage", "micro_batch", "phase", "start_s", "end_s"])
    makespan = max(free)

    gaps = []
    tol = 1e-12 * makespan
    for stage in per_stage:
        t = 0.0
        for s, _, _, start, end in stage:
            if start > t + tol:
                gaps.append((s, t, start))
            t = end
        if makespan > t + tol:
            gaps.append((stage[0][0], t, makespan))
    idle = pd.DataFrame(gaps, columns=["stage", "start_s", "end_s"])

    # on the first stage a forward holds activations from its start, a backward frees them
    # at its end; at equal times the free comes first
    events = sorted((start if phase == "forward" else end, 0 if phase == "backward" else 1)
                    for _, _, phase, start, end in per_stage[0])
    held = peak = 0
    for _, kind_ in events:
        held += 1 if kind_ else -1
        peak = max(peak, held)
    return PipelineSchedule(kind, p, m, tf, tb, ops, idle, makespan, peak)


def one_f_one_b_schedule(pp: int, n_micro_batches: int, *, forward_s: float = 1.0,
                         backward_s: float = 2.0) -> pd.DataFrame:
    """The 1F1B schedule as a tidy table: ``stage, micro_batch, phase, start_s, end_s``.

    :func:`pipeline_schedule` with ``schedule="1f1b"``, its ``ops`` table only.

    References
    ----------
    Narayanan et al. 2021, arXiv:2104.04473, §2.2.1.

    Examples
    --------
    >>> df = one_f_one_b_schedule(2, 2)
    >>> df[["stage", "micro_batch", "phase"]].values.tolist()[:4]
    [[0, 0, 'forward'], [0, 1, 'forward'], [0, 0, 'backward'], [0, 1, 'backward']]
    """
    return pipeline_schedule(pp, n_micro_batches, schedule="1f1b", forward_s=forward_s,
                             backward_s=backward_s).ops


def gpipe_schedule(pp: int, n_micro_batches: int, *, forward_s: float = 1.0,
                   backward_s: float = 2.0) -> pd.DataFrame:
    """The GPipe schedule as a tidy table (see :func:`one_f_one_b_schedule`).

    References
    ----------
    Huang et al. 2019, arXiv:1811.06965.

    Examples
    --------
    >>> float(gpipe_schedule(2, 2).end_s.max())
    9.0
    """
    return pipeline_schedule(pp, n_micro_batches, schedule="gpipe", forward_s=forward_s,
                             backward_s=backward_s).ops
