"""Sizing a training job: memory, chips, FLOPs and instance-days.

Pure functions in base units (bytes, FLOPs, FLOP/s, seconds). Hardware figures
come from :mod:`trainium_lab.specs`; model configurations from
``data/model_presets.csv``. Chapter 04 explains every formula; chapter 05
(parallel layouts) builds on the same functions.

Public API, by question
-----------------------
*How many bytes per parameter does training keep?*
    :data:`RECIPES`, :func:`recipe`, :func:`training_state_bytes`,
    :func:`state_breakdown`
*How much of it sits on one device under ZeRO?*
    :func:`zero_bytes_per_device`, :func:`zero_table`
*How much do activations take?*
    :func:`activation_bytes_per_layer`, :func:`activation_bytes`,
    :func:`activation_table`, :func:`usable_state_bytes_per_chip`
*How many chips and systems?*
    :func:`min_chips_for_state`, :func:`min_chips_zero`, :func:`min_systems`,
    :func:`sharded_state_table`
*How many FLOPs and how long?*
    :func:`training_flops`, :func:`system_flops_per_s`, :func:`training_time_s`,
    :func:`instance_days`, :func:`days_on_instances`, :func:`mfu_from_throughput`
*Published model configurations*
    :class:`ModelPreset`, :func:`preset`, :func:`presets`, :func:`parameter_count`,
    :func:`parameter_parts` (dense and mixture-of-experts)
*Everything at once*
    :class:`SizingPlan`, :func:`size_job`

>>> from trainium_lab.units import GiB
>>> plan = size_job(8e9, 1e12, system="trn2.48xlarge", mfu=0.40)
>>> round(plan.state_bytes / GiB), plan.min_chips, round(plan.instance_days)
(119, 2, 130)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import (UnknownNameError, choice, finite_number, in_range, instance,
                                    integer, positive, sequence)
from trainium_lab.units import GB, GiB, day

__all__ = [
    "StateRecipe", "RECIPES", "recipe", "training_state_bytes", "state_breakdown",
    "zero_bytes_per_device", "zero_table", "ZERO_STAGES",
    "RECOMPUTE_MODES", "activation_bytes_per_layer", "activation_bytes", "activation_table",
    "DEFAULT_ACTIVATION_SHARE", "usable_state_bytes_per_chip",
    "min_chips_for_state", "min_chips_zero", "min_systems", "sharded_state_table",
    "training_flops", "system_flops_per_s", "training_time_s", "instance_days",
    "days_on_instances", "mfu_from_throughput",
    "ModelPreset", "preset", "presets", "presets_table", "parameter_count", "parameter_parts",
    "PRESET_KINDS", "resolve_model",
    "SizingPlan", "size_job", "plan_memory_table",
]

# --------------------------------------------------------------------------- training state


@dataclass(frozen=True)
class StateRecipe:
    """Bytes per parameter that training keeps, by component.

    Attributes
    ----------
    key, label : str
        Short name and a readable label.
    weights, gradients, master, adam_m, adam_v : float
        Bytes per parameter for the working weights, the gradients, the
        higher-precision master copy and Adam's two moments.
    reference : str
        Where the recipe is described.
    """

    key: str
    label: str
    weights: float
    gradients: float
    master: float
    adam_m: float
    adam_v: float
    reference: str

    #: component names in display order
    COMPONENTS = ("weights", "gradients", "master", "adam_m", "adam_v")

    @property
    def bytes_per_param(self) -> float:
        """All components added up."""
        return self.weights + self.gradients + self.master + self.adam_m + self.adam_v

    @property
    def optimizer_bytes_per_param(self) -> float:
        """K in the ZeRO paper: master copy plus optimizer moments."""
        return self.master + self.adam_m + self.adam_v

    def components(self) -> dict[str, float]:
        """``{component: bytes per parameter}`` in display order."""
        return {c: getattr(self, c) for c in self.COMPONENTS}


#: Precision recipes. Values are bytes per parameter.
RECIPES: dict[str, StateRecipe] = {r.key: r for r in (
    StateRecipe("bf16-adam", "BF16 mixed precision + Adam", 2, 2, 4, 4, 4,
                "Rajbhandari et al. 2020 (arXiv:1910.02054) section 3.1: 2 + 2 + 12 bytes"),
    StateRecipe("bf16-sr-adam", "BF16 + stochastic rounding, no master copy", 2, 2, 0, 4, 4,
                "Zamirai et al. 2020 (arXiv:2010.06192): BF16 weights updated with "
                "stochastic rounding need no FP32 master copy"),
    StateRecipe("bf16-adam-bf16-moments", "BF16 + FP32 master, Adam moments in BF16", 2, 2, 4, 2, 2,
                "DeepSeek-AI 2024 (arXiv:2412.19437) section 3.3: AdamW moments kept in BF16"),
    StateRecipe("fp8-gemm-adam", "FP8 matmuls, state as BF16 mixed precision", 2, 2, 4, 4, 4,
                "Micikevicius et al. 2022 (arXiv:2209.05433): FP8 is for GEMM inputs; "
                "weights, master copy and optimizer state stay in higher precision"),
    StateRecipe("fp8-sr-bf16-moments", "FP8 matmuls, SR weights, BF16 moments", 2, 2, 0, 2, 2,
                "combination of the two above: no master copy, moments in BF16"),
)}


def recipe(name: str) -> StateRecipe:
    """Look up a precision recipe by key (see :data:`RECIPES`).

    Examples
    --------
    >>> recipe("bf16-adam").bytes_per_param
    16
    >>> recipe("bf16-sr-adam").optimizer_bytes_per_param
    8
    """
    if isinstance(name, StateRecipe):
        return name
    return RECIPES[choice("recipe", name, RECIPES)]


def training_state_bytes(n_params: float, bytes_per_param: float = 16.0) -> float:
    """Bytes of training state (weights, gradients, master copy, optimizer moments).

    Parameters
    ----------
    n_params : float
        Number of parameters (> 0).
    bytes_per_param : float
        Bytes per parameter (> 0). 16 is BF16 mixed precision with Adam:
        2 (BF16 weights) + 2 (BF16 gradients) + 4 (FP32 master) + 4 + 4 (Adam
        moments); ``recipe(...).bytes_per_param`` gives the others.

    Returns
    -------
    float
        Bytes, replicated (no sharding).

    References
    ----------
    Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054, section 3.1.

    Examples
    --------
    >>> from trainium_lab.units import GiB
    >>> round(training_state_bytes(405e9) / GiB, 2)  # the background documents' 405B case
    6034.97
    """
    n_params = positive("n_params", n_params)
    bytes_per_param = positive("bytes_per_param", bytes_per_param)
    return n_params * bytes_per_param


def state_breakdown(n_params: float, recipes: Iterable[str] | str = "bf16-adam") -> pd.DataFrame:
    """Training state by component for one or more recipes (tidy, for a stacked bar).

    Returns
    -------
    pandas.DataFrame
        Columns ``recipe``, ``label``, ``component``, ``bytes_per_param``,
        ``bytes``, ``gib``; one row per non-zero component.

    Examples
    --------
    >>> df = state_breakdown(8e9, ["bf16-adam", "bf16-sr-adam"])
    >>> df.groupby("recipe", sort=False)["bytes_per_param"].sum().tolist()
    [16.0, 12.0]
    """
    n_params = positive("n_params", n_params)
    keys = [recipes] if isinstance(recipes, str) else sequence("recipes", recipes, lambda _n, x: x)
    rows = []
    for key in keys:
        r = recipe(key)
        for comp, b in r.components().items():
            if b > 0:
                rows.append({"recipe": r.key, "label": r.label, "component": comp,
                             "bytes_per_param": float(b), "bytes": n_params * b,
                             "gib": n_params * b / GiB})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- ZeRO

#: ZeRO stages: 0 (plain data parallel), 1 (optimizer), 2 (+ gradients), 3 (+ weights)
ZERO_STAGES = (0, 1, 2, 3)


def zero_bytes_per_device(n_params: float, dp: int, stage: int,
                          optimizer_bytes_per_param: float = 12.0, *,
                          weight_bytes_per_param: float = 2.0,
                          grad_bytes_per_param: float = 2.0) -> float:
    """Training-state bytes on each data-parallel device under a ZeRO stage.

    With Ψ parameters, K optimizer bytes per parameter and N_d data-parallel
    devices (2-byte weights and gradients by default):

    ===========  ==========================
    stage 0      (2 + 2 + K) Ψ
    stage 1      (2 + 2) Ψ + K Ψ / N_d
    stage 2      2 Ψ + (2 + K) Ψ / N_d
    stage 3      (2 + 2 + K) Ψ / N_d
    ===========  ==========================

    Parameters
    ----------
    n_params : float
        Ψ, parameters (> 0).
    dp : int
        N_d, data-parallel degree (>= 1).
    stage : int
        ZeRO stage, 0 to 3.
    optimizer_bytes_per_param : float
        K (>= 0): 12 for an FP32 master copy plus two FP32 Adam moments;
        ``recipe(...).optimizer_bytes_per_param`` for other recipes.
    weight_bytes_per_param, grad_bytes_per_param : float
        Bytes per weight and per gradient (2 for BF16).

    Returns
    -------
    float
        Bytes per device (activations not included).

    References
    ----------
    Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054, Figure 1 and Table 1.

    Examples
    --------
    The paper's Figure 1 example, Ψ = 7.5B, N_d = 64 (its GB are 10^9 bytes):

    >>> [round(zero_bytes_per_device(7.5e9, 64, s) / 1e9, 2) for s in range(4)]
    [120.0, 31.41, 16.64, 1.88]
    """
    n_params = positive("n_params", n_params)
    dp = integer("dp", dp, minimum=1)
    stage = integer("stage", stage, minimum=0, maximum=3)
    k = positive("optimizer_bytes_per_param", optimizer_bytes_per_param, allow_zero=True)
    w = positive("weight_bytes_per_param", weight_bytes_per_param, allow_zero=True)
    g = positive("grad_bytes_per_param", grad_bytes_per_param, allow_zero=True)
    sharded = {0: 0.0, 1: k, 2: g + k, 3: w + g + k}[stage]
    replicated = w + g + k - sharded
    return n_params * (replicated + sharded / dp)


def zero_table(n_params: float, dp_values: Sequence[int], *,
               optimizer_bytes_per_param: float = 12.0,
               stages: Sequence[int] = ZERO_STAGES) -> pd.DataFrame:
    """Bytes per device for each ZeRO stage over a range of DP degrees (tidy).

    Returns
    -------
    pandas.DataFrame
        Columns ``stage`` (int), ``stage_label``, ``dp``, ``bytes``, ``gb``, ``gib``.

    Examples
    --------
    >>> df = zero_table(7.5e9, [1, 64])
    >>> df[df.dp == 64].gb.round(2).tolist()
    [120.0, 31.41, 16.64, 1.88]
    """
    labels = {0: "baseline (DP)", 1: "ZeRO-1 (optimizer)", 2: "ZeRO-2 (+ gradients)",
              3: "ZeRO-3 (+ weights)"}
    rows = []
    stages = sequence("stages", stages, lambda name, x: integer(name, x, minimum=0, maximum=3))
    dp_values = sequence("dp_values", dp_values, integer)
    for s in stages:
        for d in dp_values:
            b = zero_bytes_per_device(n_params, d, s, optimizer_bytes_per_param)
            rows.append({"stage": int(s), "stage_label": labels[int(s)], "dp": int(d), "bytes": b,
                         "gb": b / GB, "gib": b / GiB})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- activations

#: recomputation modes of Korthikanti et al.: none, selective (attention core), full (whole layer)
RECOMPUTE_MODES = ("none", "selective", "full")

#: share of each chip's HBM the background documents keep free for activations
DEFAULT_ACTIVATION_SHARE = 0.35


def activation_bytes_per_layer(seq_len: int, micro_batch: int, d_model: int, n_heads: int,
                               tp: int = 1, sequence_parallel: bool = False,
                               recompute: str = "none") -> float:
    """Activation bytes one transformer layer keeps for the backward pass, per device.

    With s = ``seq_len``, b = ``micro_batch``, h = ``d_model``, a = ``n_heads``
    and t = ``tp`` (16-bit activations, 1-byte dropout masks):

    ==================================  ===============================
    no parallelism (t = 1)              s b h (34 + 5 a s / h)
    tensor parallel                     s b h (10 + 24/t + 5 a s / (h t))
    tensor + sequence parallel          s b h / t (34 + 5 a s / h)
    tensor parallel + selective         s b h (10 + 24/t)
    tensor + sequence + selective       34 s b h / t
    full recomputation                  2 s b h
    ==================================  ===============================

    Selective recomputation drops the ``5as/h`` term (the attention scores,
    softmax and its dropout, recomputed in the backward pass). Full
    recomputation keeps only each layer's input. The formula assumes standard
    multi-head attention with a 4h MLP, as in the paper (GPT-style).

    Parameters
    ----------
    seq_len, micro_batch, d_model, n_heads : int
        s, b, h, a (each >= 1).
    tp : int
        Tensor-parallel degree t (>= 1).
    sequence_parallel : bool
        Shard the layer-norm and dropout regions along the sequence too.
    recompute : {"none", "selective", "full"}
        Activation recomputation.

    Returns
    -------
    float
        Bytes per layer on each device.

    References
    ----------
    Korthikanti et al. 2022, Reducing Activation Recomputation in Large
    Transformer Models, arXiv:2205.05198, sections 4.1-5 and Table 2.

    Examples
    --------
    GPT-3 (a = 96, s = 2048, h = 12288): 5as/h = 80, so selective
    recomputation saves 80 / (34 + 80) = 70 % of the activation memory.

    >>> full = activation_bytes_per_layer(2048, 1, 12288, 96)
    >>> sel = activation_bytes_per_layer(2048, 1, 12288, 96, recompute="selective")
    >>> round(1 - sel / full, 3)
    0.702
    """
    s = integer("seq_len", seq_len, minimum=1)
    b = integer("micro_batch", micro_batch, minimum=1)
    h = integer("d_model", d_model, minimum=1)
    a = integer("n_heads", n_heads, minimum=1)
    t = integer("tp", tp, minimum=1)
    if sequence_parallel not in (True, False):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    mode = choice("recompute", recompute, RECOMPUTE_MODES)
    sbh = float(s) * b * h
    if mode == "full":
        return 2.0 * sbh
    attention_core = 0.0 if mode == "selective" else 5.0 * a * s / h
    if sequence_parallel:
        return sbh / t * (34.0 + attention_core)
    return sbh * (10.0 + 24.0 / t + attention_core / t)


def activation_bytes(n_layers: int, seq_len: int, micro_batch: int, d_model: int, n_heads: int,
                     tp: int = 1, sequence_parallel: bool = False,
                     recompute: str = "none") -> float:
    """Activation bytes for all ``n_layers`` layers of one micro-batch, per device.

    ``n_layers`` times :func:`activation_bytes_per_layer`. With 1F1B pipeline
    parallelism the first stage holds about this much too (L/p layers for p
    micro-batches in flight; Korthikanti et al. section 4.2.3). Embeddings,
    the output layer and the loss are left out; they matter for small models.

    Examples
    --------
    >>> round(activation_bytes(32, 8192, 1, 4096, 32, recompute="full") / 2**30, 1)
    2.0
    """
    n_layers = integer("n_layers", n_layers, minimum=1)
    return n_layers * activation_bytes_per_layer(seq_len, micro_batch, d_model, n_heads, tp,
                                                 sequence_parallel, recompute)


def activation_table(seq_lens: Sequence[int], *, micro_batch: int, d_model: int, n_heads: int,
                     n_layers: int = 1, tp: int = 1) -> pd.DataFrame:
    """Activation bytes versus sequence length for each configuration of Table 2 (tidy).

    Configurations: none; selective; full recompute; and, when ``tp > 1``, the
    tensor-parallel and sequence-parallel variants.

    Returns
    -------
    pandas.DataFrame
        Columns ``config``, ``seq_len``, ``bytes``, ``gib``.

    Examples
    --------
    >>> df = activation_table([2048], micro_batch=1, d_model=12288, n_heads=96, tp=8)
    >>> df.config.tolist()[:3]
    ['no recompute', 'selective recompute', 'full recompute']
    """
    t = integer("tp", tp, minimum=1)
    configs = [("no recompute", 1, False, "none"), ("selective recompute", 1, False, "selective"),
               ("full recompute", 1, False, "full")]
    if t > 1:
        configs += [(f"TP={t}", t, False, "none"), (f"TP={t} + SP", t, True, "none"),
                    (f"TP={t} + SP + selective", t, True, "selective")]
    rows = []
    seq_lens = sequence("seq_lens", seq_lens, integer)
    for label, tp_i, sp, mode in configs:
        for s in seq_lens:
            b = activation_bytes(n_layers, s, micro_batch, d_model, n_heads, tp_i, sp, mode)
            rows.append({"config": label, "seq_len": int(s), "bytes": b, "gib": b / GiB})
    return pd.DataFrame(rows)


def usable_state_bytes_per_chip(chip: str = "trn2",
                                activation_share: float = DEFAULT_ACTIVATION_SHARE) -> float:
    """HBM per chip left for training state once a share is kept for activations.

    The background documents' rule of thumb keeps 35 % of HBM free for
    activations, the runtime and fragmentation: ``hbm × (1 − share)``.

    Parameters
    ----------
    chip : str
        A chip known to :func:`trainium_lab.specs.chip`.
    activation_share : float
        Share of HBM kept for activations, in [0, 1).

    Examples
    --------
    >>> from trainium_lab.units import GiB
    >>> round(usable_state_bytes_per_chip("trn2") / GiB, 1)
    62.4
    """
    share = in_range("activation_share", activation_share, 0.0, 1.0, high_open=True)
    return specs.chip(chip).hbm_bytes * (1.0 - share)


# --------------------------------------------------------------------------- chips and systems


def min_chips_for_state(state_bytes: float, chip: str = "trn2",
                        activation_share: float = DEFAULT_ACTIVATION_SHARE) -> int:
    """Fewest chips that hold a fully sharded training state (ZeRO-3 / FSDP).

    ``ceil(state / (hbm × (1 − activation_share)))``: a lower bound, since
    real layouts replicate some state and activations may need more room.

    Examples
    --------
    >>> from trainium_lab.units import GiB
    >>> min_chips_for_state(70e9 * 16)  # 1,043 GiB over 62.4 GiB per chip
    17
    """
    state_bytes = positive("state_bytes", state_bytes)
    return math.ceil(state_bytes / usable_state_bytes_per_chip(chip, activation_share) - 1e-9)


def min_chips_zero(n_params: float, stage: int, chip: str = "trn2", *,
                   recipe_name: str = "bf16-adam",
                   activation_bytes_per_chip: float | None = None,
                   activation_share: float = DEFAULT_ACTIVATION_SHARE,
                   max_chips: int = 1_000_000) -> int | None:
    """Fewest data-parallel chips for which the ZeRO per-device state fits.

    Room per chip is ``hbm − activation_bytes_per_chip`` if that is given,
    else ``hbm × (1 − activation_share)``. Returns ``None`` if the replicated
    part of the state alone does not fit (stages 0-2 on a large model: shard
    the weights too, or add tensor/pipeline parallelism, chapter 05).

    Examples
    --------
    >>> min_chips_zero(8e9, 3), min_chips_zero(8e9, 1), min_chips_zero(70e9, 0)
    (2, 3, None)
    """
    n_params = positive("n_params", n_params)
    stage = integer("stage", stage, minimum=0, maximum=3)
    max_chips = integer("max_chips", max_chips)
    r = recipe(recipe_name)
    hbm = specs.chip(chip).hbm_bytes
    if activation_bytes_per_chip is None:
        room = usable_state_bytes_per_chip(chip, activation_share)
    else:
        room = hbm - positive("activation_bytes_per_chip", activation_bytes_per_chip,
                              allow_zero=True)
    if room <= 0:
        return None
    k, w, g = r.optimizer_bytes_per_param, r.weights, r.gradients
    sharded = {0: 0.0, 1: k, 2: g + k, 3: w + g + k}[stage]
    replicated = (w + g + k - sharded) * n_params
    if replicated >= room:
        return None
    if sharded == 0:
        return 1
    n = math.ceil(sharded * n_params / (room - replicated) - 1e-9)
    n = max(n, 1)
    return n if n <= max_chips else None


def min_systems(n_chips: int, system: str = "trn2.48xlarge") -> int:
    """Fewest systems (instances or UltraServers) that provide ``n_chips`` chips.

    Examples
    --------
    >>> min_systems(17, "trn2.48xlarge"), min_systems(17, "trn2-ultraserver")
    (2, 1)
    """
    n_chips = integer("n_chips", n_chips, minimum=1)
    return math.ceil(n_chips / specs.system(system).n_chips)


def sharded_state_table(state_bytes: float, system: str = "trn2-ultraserver",
                        counts: Sequence[int] = (1, 2, 4)) -> pd.DataFrame:
    """Fully sharded state per chip, and HBM left, on 1, 2, 4... systems.

    Returns
    -------
    pandas.DataFrame
        Columns ``n_systems``, ``n_chips``, ``state_gib_per_chip``,
        ``left_gib_per_chip``, ``share_of_hbm``.

    Examples
    --------
    The background documents' 405B case on Trn2 UltraServers:

    >>> df = sharded_state_table(405e9 * 16)
    >>> df.state_gib_per_chip.round(1).tolist(), df.left_gib_per_chip.round(1).tolist()
    ([94.3, 47.1, 23.6], [1.7, 48.9, 72.4])
    """
    state_bytes = positive("state_bytes", state_bytes)
    sysm = specs.system(system)
    hbm = sysm.chip.hbm_bytes
    rows = []
    for c in sequence("counts", counts, lambda name, x: integer(name, x, minimum=1, maximum=10**6)):
        n = c * sysm.n_chips
        per = state_bytes / n
        rows.append({"n_systems": c, "n_chips": n, "state_gib_per_chip": per / GiB,
                     "left_gib_per_chip": (hbm - per) / GiB, "share_of_hbm": per / hbm})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- FLOPs and time


def training_flops(n_params: float, n_tokens: float, *, include_attention: bool = False,
                   n_layers: int | None = None, seq_len: int | None = None,
                   d_model: int | None = None) -> float:
    """FLOPs to train: 6·N·D, optionally plus the attention term.

    Each token costs about 2N FLOPs forward and 4N backward. The attention
    scores and their product with the values add ``6 · n_layers · seq_len ·
    d_model`` per token (Kaplan et al.'s ``2 n_layer n_ctx d_attn`` forward,
    tripled for training), not counting any saving from causal masking.

    Parameters
    ----------
    n_params : float
        N, parameters (> 0).
    n_tokens : float
        D, training tokens (> 0).
    include_attention : bool
        Add the attention term; then ``n_layers``, ``seq_len`` and ``d_model``
        are required.

    Returns
    -------
    float
        FLOPs (a count).

    References
    ----------
    Kaplan et al. 2020, arXiv:2001.08361, section 2.1, Table 1; Hoffmann et al.
    2022 (Chinchilla), arXiv:2203.15556, Appendix F; Korthikanti et al. 2022,
    arXiv:2205.05198, section 6 (the same count with the logit layer).

    Examples
    --------
    Llama 3 405B on 15.6T tokens; Meta's paper (arXiv:2407.21783) gives 3.8e25:

    >>> f"{training_flops(405e9, 15.6e12):.2e}"
    '3.79e+25'
    """
    n_params = positive("n_params", n_params)
    n_tokens = positive("n_tokens", n_tokens)
    flops = 6.0 * n_params * n_tokens
    if include_attention:
        if n_layers is None or seq_len is None or d_model is None:
            raise ValueError("include_attention=True needs n_layers, seq_len and d_model")
        n_layers = integer("n_layers", n_layers, minimum=1)
        seq_len = integer("seq_len", seq_len, minimum=1)
        d_model = integer("d_model", d_model, minimum=1)
        flops += 6.0 * n_layers * seq_len * d_model * n_tokens
    return flops


def system_flops_per_s(system: str = "trn2.48xlarge", dtype: str = "bf16", *,
                       per_instance: bool = False) -> float:
    """Peak dense FLOP/s of a system: chips × the chip's dense rate for ``dtype``.

    Built from the per-chip rate (16 × 667 TFLOP/s for a trn2.48xlarge, as the
    background documents do) rather than the rounded system total.

    Parameters
    ----------
    per_instance : bool
        Only one instance of the system (e.g. one trn2u.48xlarge of an UltraServer).

    Examples
    --------
    >>> system_flops_per_s("trn2.48xlarge") / 1e15
    10.672
    """
    sysm = specs.system(system)
    rate = sysm.chip.dense_flops_per_s[dtype]
    return (sysm.chips_per_instance if per_instance else sysm.n_chips) * rate


def _mfu(mfu: float) -> float:
    return in_range("mfu", mfu, 0.0, 1.0, low_open=True)


def training_time_s(flops: float, mfu: float, system: str = "trn2.48xlarge",
                    n_systems: int = 1, dtype: str = "bf16") -> float:
    """Wall-clock seconds for ``flops`` on ``n_systems`` systems at a given MFU.

    ``flops / (n_systems × system peak × mfu)``.

    Parameters
    ----------
    mfu : float
        Model FLOPs utilisation, in (0, 1]: the share of peak the job sustains.

    Examples
    --------
    >>> round(training_time_s(4.8e22, 0.4, "trn2.48xlarge", 16) / 86400, 1)
    8.1
    """
    flops = positive("flops", flops)
    mfu = _mfu(mfu)
    n_systems = integer("n_systems", n_systems, minimum=1)
    return flops / (n_systems * system_flops_per_s(system, dtype) * mfu)


def instance_days(flops: float, mfu: float, system: str = "trn2.48xlarge",
                  dtype: str = "bf16") -> float:
    """Instance-days: days the job would take on one instance of ``system``.

    For an UltraServer this counts its instances (trn2u.48xlarge), so the
    figure is comparable across systems; divide by instances to get days.

    Examples
    --------
    The background documents' 8B-on-1T case at 40 % MFU on trn2:

    >>> round(instance_days(6 * 8e9 * 1e12, 0.40))
    130
    """
    flops = positive("flops", flops)
    mfu = _mfu(mfu)
    return flops / (system_flops_per_s(system, dtype, per_instance=True) * mfu) / day


def days_on_instances(flops: float, mfu: float, n_instances: int,
                      system: str = "trn2.48xlarge", dtype: str = "bf16") -> float:
    """Days on ``n_instances`` instances, assuming perfect scaling across them.

    Examples
    --------
    >>> round(days_on_instances(6 * 8e9 * 1e12, 0.40, 16), 1)
    8.1
    """
    n_instances = integer("n_instances", n_instances, minimum=1)
    return instance_days(flops, mfu, system, dtype) / n_instances


def mfu_from_throughput(tokens_per_s: float, n_params: float, n_chips: int,
                        chip: str = "trn2", dtype: str = "bf16", *,
                        flops_per_token: float | None = None) -> float:
    """Model FLOPs utilisation from a measured training throughput.

    ``tokens_per_s × 6N / (n_chips × peak)``: only the model's FLOPs count, so
    recomputation does not raise MFU (Chowdhery et al. 2022, PaLM, Appendix B).

    Parameters
    ----------
    tokens_per_s : float
        Measured training tokens per second over all ``n_chips`` chips.
    flops_per_token : float, optional
        Override 6N (e.g. with the attention term of :func:`training_flops`).

    Returns
    -------
    float
        MFU; above 1 means the inputs are inconsistent, and raises.

    Examples
    --------
    >>> round(mfu_from_throughput(100_000, 8e9, 16), 3)
    0.45
    """
    tokens_per_s = positive("tokens_per_s", tokens_per_s)
    n_params = positive("n_params", n_params)
    n_chips = integer("n_chips", n_chips, minimum=1)
    per_token = 6.0 * n_params if flops_per_token is None else positive("flops_per_token",
                                                                         flops_per_token)
    peak = n_chips * specs.chip(chip).dense_flops_per_s[dtype]
    mfu = tokens_per_s * per_token / peak
    if mfu > 1.0:
        raise ValueError(f"tokens_per_s implies MFU {mfu:.2f} > 1: more than the chips' peak; "
                         "check tokens_per_s, n_params and n_chips")
    return mfu


# --------------------------------------------------------------------------- presets


@dataclass(frozen=True)
class ModelPreset:
    """A published transformer configuration (``data/model_presets.csv``), dense or MoE.

    ``n_params`` is the nominal size as its authors name it; :meth:`exact_params`
    counts the parameters from the configuration.

    Mixture-of-experts presets (``n_experts > 0``) replace the MLP of every layer
    after the first ``n_dense_layers`` by ``n_experts`` routed experts of width
    ``expert_ffn_dim`` (each token uses ``experts_per_token`` of them) plus
    ``n_shared_experts`` experts of the same width that every token uses, and a
    router; ``ffn_dim`` is then the width of the dense layers' MLP (unused when
    there are none). ``n_active_params`` is the published active count (0 for
    dense models: all parameters are active). ``head_dim`` is 0 when it is
    ``d_model / n_heads``.
    """

    key: str
    name: str
    n_params: float
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    vocab_size: int
    seq_len: int
    sources: tuple[str, ...]
    n_experts: int = 0
    experts_per_token: int = 0
    n_shared_experts: int = 0
    expert_ffn_dim: int = 0
    n_dense_layers: int = 0
    head_dim: int = 0
    n_active_params: float = 0.0

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model (``n_experts > 0``)."""
        return self.n_experts > 0

    def _shape(self) -> dict:
        if not self.is_moe:
            return {}
        return dict(head_dim=self.head_dim or None, n_experts=self.n_experts,
                    experts_per_token=self.experts_per_token, n_shared_experts=self.n_shared_experts,
                    expert_ffn_dim=self.expert_ffn_dim, n_dense_layers=self.n_dense_layers)

    def exact_params(self) -> int:
        """Parameters counted from the configuration (Llama-style, untied embeddings)."""
        return parameter_count(self.n_layers, self.d_model, self.n_heads, self.n_kv_heads,
                               self.ffn_dim, self.vocab_size, **self._shape())

    def exact_active_params(self) -> int:
        """Parameters one token uses, counted from the configuration (all of them if dense)."""
        return parameter_count(self.n_layers, self.d_model, self.n_heads, self.n_kv_heads,
                               self.ffn_dim, self.vocab_size, active=True, **self._shape())


_PRESET_UNITS = {"count": 1.0, "billion": 1e9}
#: optional integer fields of a mixture-of-experts preset (0 when absent: a dense model)
_MOE_FIELDS = ("n_experts", "experts_per_token", "n_shared_experts", "expert_ffn_dim", "n_dense_layers",
               "head_dim")
#: preset kinds :func:`presets` can list
PRESET_KINDS = ("dense", "moe", "all")


@functools.cache
def _presets() -> dict[str, ModelPreset]:
    df = specs.read_data_csv("model_presets.csv")
    out = {}
    for key, g in df.groupby("entity", sort=False):
        f = {row.field: row for row in g.itertuples()}

        def num(name: str, default: float | None = None) -> float:
            if name not in f and default is not None:
                return default
            row = f[name]
            return float(row.value) * _PRESET_UNITS[row.unit]

        moe = {k: int(num(k, 0)) for k in _MOE_FIELDS}
        out[str(key)] = ModelPreset(
            key=str(key), name=f["display_name"].value, n_params=num("n_params"),
            n_layers=int(num("n_layers")), d_model=int(num("d_model")),
            n_heads=int(num("n_heads")), n_kv_heads=int(num("n_kv_heads")),
            ffn_dim=int(num("ffn_dim")), vocab_size=int(num("vocab_size")),
            seq_len=int(num("seq_len")),
            sources=tuple(dict.fromkeys(g["source"].tolist())),
            n_active_params=num("n_active_params", 0.0), **moe)
    return out


def preset(name: str) -> ModelPreset:
    """Look up a model preset: ``"llama3-8b"``, ``"llama3-70b"``, ``"llama3-405b"``.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.

    Examples
    --------
    >>> p = preset("llama3-70b")
    >>> p.n_layers, p.d_model, p.n_heads, p.n_kv_heads
    (80, 8192, 64, 8)
    """
    return specs.lookup("preset", name, _presets())


def resolve_model(model: "str | ModelPreset") -> ModelPreset:
    """A preset name (``"llama3-405b"``, ``"mixtral-8x7b"``...) or a :class:`ModelPreset` → the preset.

    Raises ``ValueError`` naming ``model`` for anything else.

    Examples
    --------
    >>> resolve_model("mixtral-8x7b").n_experts
    8
    """
    if isinstance(model, ModelPreset):
        return model
    if isinstance(model, str):
        try:
            return preset(model)
        except ValueError as exc:
            raise UnknownNameError(str(exc).replace("preset must", "model must")) from None
    raise ValueError("model must be a preset name or a ModelPreset (see layouts.custom_model, "
                     f"moe.custom_moe_model); got {model!r}")


def presets(kind: str = "dense") -> tuple[ModelPreset, ...]:
    """Model presets of one kind, in file order (smallest first within a kind).

    ``kind`` is ``"dense"`` (the default: the Llama 3 family chapters 04–09 use),
    ``"moe"`` (mixture-of-experts presets, chapter 10) or ``"all"``.

    Examples
    --------
    >>> [p.key for p in presets("moe")]
    ['mixtral-8x7b', 'qwen3-235b-a22b']
    """
    kind = choice("kind", kind, PRESET_KINDS)
    return tuple(p for p in _presets().values()
                 if kind == "all" or (kind == "moe") == p.is_moe)


def presets_table(kind: str = "dense") -> pd.DataFrame:
    """The presets as a table, with the exact parameter count beside the nominal one.

    For ``kind="moe"`` (or ``"all"``) it adds the expert configuration and the
    nominal and exact active parameter counts.
    """
    rows = []
    for p in presets(kind):
        row = {"preset": p.key, "name": p.name, "n_params": p.n_params, "exact_params": p.exact_params(),
               "n_layers": p.n_layers, "d_model": p.d_model, "n_heads": p.n_heads,
               "n_kv_heads": p.n_kv_heads, "ffn_dim": p.ffn_dim, "vocab_size": p.vocab_size,
               "seq_len": p.seq_len}
        if kind != "dense":
            row.update({"n_experts": p.n_experts, "experts_per_token": p.experts_per_token,
                        "n_shared_experts": p.n_shared_experts, "expert_ffn_dim": p.expert_ffn_dim,
                        "n_active_params": p.n_active_params or p.n_params,
                        "exact_active_params": p.exact_active_params()})
        row["sources"] = "; ".join(p.sources)
        rows.append(row)
    return pd.DataFrame(rows)


def parameter_parts(n_layers: int, d_model: int, n_heads: int, n_kv_heads: int, ffn_dim: int,
                    vocab_size: int, *, tied_embeddings: bool = False, head_dim: int | None = None,
                    n_experts: int = 0, experts_per_token: int = 0, n_shared_experts: int = 0,
                    expert_ffn_dim: int | None = None, n_dense_layers: int = 0) -> pd.DataFrame:
    """Parameters of a Llama-style decoder, part by part: all of them and those one token uses.

    Dense model (``n_experts = 0``), per layer: ``2 h·a·d + 2 h·g·d`` for the Q, O, K and V
    projections (``a`` query heads, ``g`` KV heads of size ``d = head_dim``, by default
    ``h / a``), ``3 h·f`` for the SwiGLU MLP, ``2 h`` for the two RMSNorms. Plus the input and
    output embeddings (``V·h`` each unless tied) and the final norm.

    Mixture of experts (Shazeer et al. 2017; Mixtral, Jiang et al. 2024): the MLP of every
    layer after the first ``n_dense_layers`` becomes ``E`` routed experts, each a SwiGLU MLP
    of width ``f_e = expert_ffn_dim`` (``3 h·f_e``), plus ``n_shared_experts`` experts of the
    same width that every token uses (DeepSeekMoE, Dai et al. 2024) and a router (``h·E``, no
    bias). A token uses ``k = experts_per_token`` routed experts: the active count keeps
    ``k`` of the ``E``.

    Returns
    -------
    pandas.DataFrame
        One row per part (``embeddings``, ``attention``, ``norms``, ``dense_mlp``,
        ``routed_experts``, ``shared_experts``, ``router``): ``part``, ``params`` and
        ``active_params`` (integers).

    References
    ----------
    A. Q. Jiang et al., "Mixtral of Experts", arXiv:2401.04088 (2024), §2 and Table 1;
    N. Shazeer et al., "Outrageously Large Neural Networks: The Sparsely-Gated
    Mixture-of-Experts Layer", ICLR 2017; D. Dai et al., "DeepSeekMoE", arXiv:2401.06066
    (2024), §3.2 (shared experts).

    Examples
    --------
    >>> t = parameter_parts(32, 4096, 32, 8, 14336, 32000, n_experts=8, experts_per_token=2,
    ...                     expert_ffn_dim=14336)   # Mixtral 8x7B
    >>> int(t.params.sum()), int(t.active_params.sum())
    (46702792704, 12879925248)
    """
    n_layers = integer("n_layers", n_layers, minimum=1, maximum=10**6)
    h = integer("d_model", d_model, minimum=1, maximum=10**7)
    a = integer("n_heads", n_heads, minimum=1, maximum=10**5)
    kv = integer("n_kv_heads", n_kv_heads, minimum=1, maximum=a)
    f = integer("ffn_dim", ffn_dim, minimum=1, maximum=10**8)
    v = integer("vocab_size", vocab_size, minimum=1, maximum=10**8)
    if tied_embeddings not in (True, False):
        raise ValueError(f"tied_embeddings must be True or False, got {tied_embeddings!r}")
    if head_dim is None:
        if h % a:
            raise ValueError(f"d_model must be a multiple of n_heads, got {h} and {a}")
        d = h // a
    else:
        d = integer("head_dim", head_dim, minimum=1, maximum=10**5)
    e = integer("n_experts", n_experts, minimum=0, maximum=10**5)
    if e:
        k = integer("experts_per_token", experts_per_token, minimum=1, maximum=e)
        fe = integer("expert_ffn_dim", f if expert_ffn_dim is None else expert_ffn_dim, minimum=1,
                     maximum=10**8)
        shared = integer("n_shared_experts", n_shared_experts, minimum=0, maximum=10**5)
        dense = integer("n_dense_layers", n_dense_layers, minimum=0, maximum=n_layers)
    else:
        k = integer("experts_per_token", experts_per_token, minimum=0, maximum=0)
        shared = integer("n_shared_experts", n_shared_experts, minimum=0, maximum=0)
        if expert_ffn_dim is not None:
            integer("expert_ffn_dim", expert_ffn_dim, minimum=1, maximum=10**8)
        fe = 0
        dense = n_layers
        integer("n_dense_layers", n_dense_layers, minimum=0, maximum=n_layers)
    moe_layers = n_layers - dense
    expert = 3 * h * fe
    emb = (1 if tied_embeddings else 2) * v * h
    attention = n_layers * (2 * h * a * d + 2 * h * kv * d)
    norms = n_layers * 2 * h + h
    rows = [("embeddings", emb, emb), ("attention", attention, attention), ("norms", norms, norms),
            ("dense_mlp", dense * 3 * h * f, dense * 3 * h * f),
            ("routed_experts", moe_layers * e * expert, moe_layers * k * expert),
            ("shared_experts", moe_layers * shared * expert, moe_layers * shared * expert),
            ("router", moe_layers * h * e, moe_layers * h * e)]
    return pd.DataFrame(rows, columns=["part", "params", "active_params"])


def parameter_count(n_layers: int, d_model: int, n_heads: int, n_kv_heads: int, ffn_dim: int,
                    vocab_size: int, *, tied_embeddings: bool = False, head_dim: int | None = None,
                    n_experts: int = 0, experts_per_token: int = 0, n_shared_experts: int = 0,
                    expert_ffn_dim: int | None = None, n_dense_layers: int = 0,
                    active: bool = False) -> int:
    """Parameters of a Llama-style decoder (GQA attention, SwiGLU MLP, RMSNorm, no biases).

    Per layer: ``2 h² + 2 h·(n_kv_heads·h/n_heads)`` for Q, O, K, V;
    ``3 h·ffn_dim`` for the gated MLP; ``2 h`` for the norms. Plus input and
    output embeddings (``V·h`` each unless tied) and the final norm. With
    ``n_experts > 0`` the MLPs become routed (and shared) experts plus a router,
    and ``active=True`` counts what one token uses; see :func:`parameter_parts`.

    Examples
    --------
    >>> parameter_count(32, 4096, 32, 8, 14336, 128256)  # Llama 3 8B
    8030261248
    >>> mixtral = dict(n_experts=8, experts_per_token=2, expert_ffn_dim=14336)
    >>> (parameter_count(32, 4096, 32, 8, 14336, 32000, **mixtral),
    ...  parameter_count(32, 4096, 32, 8, 14336, 32000, active=True, **mixtral))
    (46702792704, 12879925248)
    """
    if active not in (True, False):
        raise ValueError(f"active must be True or False, got {active!r}")
    t = parameter_parts(n_layers, d_model, n_heads, n_kv_heads, ffn_dim, vocab_size,
                        tied_embeddings=tied_embeddings, head_dim=head_dim, n_experts=n_experts,
                        experts_per_token=experts_per_token, n_shared_experts=n_shared_experts,
                        expert_ffn_dim=expert_ffn_dim, n_dense_layers=n_dense_layers)
    return int(sum(int(x) for x in t["active_params" if active else "params"]))


# --------------------------------------------------------------------------- the whole plan


@dataclass(frozen=True)
class SizingPlan:
    """The result of :func:`size_job`; all quantities in base units.

    Attributes
    ----------
    state_bytes : float
        Unsharded training state.
    usable_bytes_per_chip : float
        HBM per chip left for state after the activation reserve.
    min_chips : int or None
        Fewest chips that hold the state under ``zero_stage`` (None: never fits).
    min_systems : int or None
        Systems of ``system`` needed for ``min_chips``.
    activation_bytes_per_chip : float or None
        Korthikanti activations for one micro-batch with no model parallelism,
        if a model shape was given.
    flops : float
        Training FLOPs.
    instance_days : float
        Days on one instance of the system at ``mfu``.
    """

    n_params: float
    n_tokens: float
    system: str
    recipe: str
    zero_stage: int
    mfu: float
    activation_share: float
    state_bytes: float
    usable_bytes_per_chip: float
    min_chips: int | None
    min_systems: int | None
    activation_bytes_per_chip: float | None
    flops: float
    instance_days: float

    def days_on(self, n_instances: int) -> float:
        """Days on ``n_instances`` instances (perfect scaling)."""
        n_instances = integer("n_instances", n_instances, minimum=1)
        return self.instance_days / n_instances


def size_job(n_params: float, n_tokens: float, *, system: str = "trn2.48xlarge",
             recipe_name: str = "bf16-adam", bytes_per_param: float | None = None,
             zero_stage: int = 3, activation_share: float = DEFAULT_ACTIVATION_SHARE,
             mfu: float = 0.40, dtype: str = "bf16", model: ModelPreset | str | None = None,
             micro_batch: int = 1, recompute: str = "none",
             include_attention: bool = False) -> SizingPlan:
    """Size a training job: state, chips, systems, FLOPs and instance-days.

    Parameters
    ----------
    n_params, n_tokens : float
        Parameters and training tokens (> 0).
    system : str
        A system known to :func:`trainium_lab.specs.system`.
    recipe_name : str
        Precision recipe (:data:`RECIPES`); ``bytes_per_param`` overrides its total.
    zero_stage : int
        0-3. Stage 3 (fully sharded) gives the background documents' lower bound.
    activation_share : float
        Share of HBM kept for activations (the 35 % rule).
    mfu : float
        Assumed model FLOPs utilisation in (0, 1]: the least certain input.
    model : ModelPreset or str, optional
        A shape for the activation estimate (and the attention FLOPs term).

    Examples
    --------
    The background documents' 70B-on-2T case:

    >>> from trainium_lab.units import GiB
    >>> p = size_job(70e9, 2e12)
    >>> round(p.state_bytes / GiB), p.min_chips, p.min_systems, round(p.instance_days)
    (1043, 17, 2, 2278)
    """
    n_params = positive("n_params", n_params)
    n_tokens = positive("n_tokens", n_tokens)
    mfu = _mfu(mfu)
    stage = integer("zero_stage", zero_stage, minimum=0, maximum=3)
    r = recipe(recipe_name)
    bpp = r.bytes_per_param if bytes_per_param is None else bytes_per_param
    state = training_state_bytes(n_params, bpp)
    sysm = specs.system(system)
    usable = usable_state_bytes_per_chip(sysm.chip_key, activation_share)
    if bytes_per_param is not None and stage == 3:
        chips: int | None = min_chips_for_state(state, sysm.chip_key, activation_share)
    else:
        chips = min_chips_zero(n_params, stage, sysm.chip_key, recipe_name=r.key,
                               activation_share=activation_share)
    shape = preset(model) if isinstance(model, str) else model
    if shape is not None:
        instance("model", shape, ModelPreset, "a preset name, a ModelPreset or None")
    act = None
    if shape is not None:
        act = activation_bytes(shape.n_layers, shape.seq_len, micro_batch, shape.d_model,
                               shape.n_heads, recompute=recompute)
    if include_attention and shape is not None:
        flops = training_flops(n_params, n_tokens, include_attention=True,
                               n_layers=shape.n_layers, seq_len=shape.seq_len,
                               d_model=shape.d_model)
    else:
        flops = training_flops(n_params, n_tokens)
    return SizingPlan(
        n_params=n_params, n_tokens=n_tokens, system=sysm.key, recipe=r.key, zero_stage=stage,
        mfu=mfu, activation_share=float(activation_share), state_bytes=state,
        usable_bytes_per_chip=usable, min_chips=chips,
        min_systems=None if chips is None else min_systems(chips, sysm.key),
        activation_bytes_per_chip=act, flops=flops,
        instance_days=instance_days(flops, mfu, sysm.key, dtype))


def plan_memory_table(plan: SizingPlan) -> pd.DataFrame:
    """One chip's HBM under a plan, as rows for a bar chart (GiB).

    Rows: the chip's HBM; the state per chip at ``plan.min_chips`` chips
    (or the unsharded state if it never fits); the activation reserve of the
    35 % rule; the Korthikanti activation estimate for one micro-batch with no
    model parallelism, when the plan has a model shape.

    Returns
    -------
    pandas.DataFrame
        Columns ``item``, ``gib``, ``kind`` ("available", "needed", "reserve").

    Examples
    --------
    >>> plan_memory_table(size_job(8e9, 1e12)).item.tolist()[:2]
    ['HBM of one chip', 'state per chip (2 chips, ZeRO-3)']
    """
    instance("plan", plan, SizingPlan, "a SizingPlan from size_job(...)")
    sysm = specs.system(plan.system)
    hbm = sysm.chip.hbm_bytes
    if plan.min_chips is None:
        state_item, state_bytes = "state (does not fit at any DP degree)", plan.state_bytes
    else:
        state_bytes = zero_bytes_per_device(
            plan.n_params, plan.min_chips, plan.zero_stage,
            RECIPES[plan.recipe].optimizer_bytes_per_param,
            weight_bytes_per_param=RECIPES[plan.recipe].weights,
            grad_bytes_per_param=RECIPES[plan.recipe].gradients)
        if plan.zero_stage == 3:
            state_bytes = plan.state_bytes / plan.min_chips
        state_item = (f"state per chip ({plan.min_chips} chip{'s' if plan.min_chips != 1 else ''}, "
                      f"ZeRO-{plan.zero_stage})")
    rows = [("HBM of one chip", hbm, "available"), (state_item, state_bytes, "needed"),
            (f"activation reserve ({plan.activation_share:.0%} of HBM)",
             hbm * plan.activation_share, "reserve")]
    if plan.activation_bytes_per_chip is not None:
        rows.append(("activations, 1 micro-batch, no TP", plan.activation_bytes_per_chip, "needed"))
    return pd.DataFrame([{"item": i, "gib": b / GiB, "kind": k} for i, b, k in rows])
