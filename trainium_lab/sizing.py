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
    :func:`activation_coefficients`, :func:`activation_options`,
    :func:`activation_bytes_per_layer`, :func:`activation_bytes`,
    :func:`activation_table`, :func:`usable_state_bytes_per_chip`
*How many chips and systems?*
    :func:`min_chips_for_state`, :func:`min_chips_zero`, :func:`min_systems`,
    :func:`sharded_state_table`
*How many FLOPs and how long?*
    :func:`training_flops`, :func:`system_flops_per_s`, :func:`training_time_s`,
    :func:`instance_days`, :func:`days_on_instances`, :func:`mfu_from_throughput`
*What do Megatron-LM and DeepSpeed say for the same job?*
    :func:`megatron_theoretical_memory`, :func:`deepspeed_zero_model_states_bytes`,
    :func:`convention_comparison`
*Published model configurations*
    :class:`ModelPreset`, :func:`preset`, :func:`presets`, :func:`parameter_count`,
    :func:`parameter_parts` (dense and mixture-of-experts)
*Everything at once*
    :class:`JobSizing`, :func:`size_job`, :func:`job_memory_table`

>>> from trainium_lab.units import GiB
>>> job = size_job(8e9, 1e12, system="trn2.48xlarge", mfu=0.40)
>>> round(job.state_bytes / GiB), job.min_chips, round(job.instance_days)
(119, 2, 130)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import (UnknownNameError, choice, finite_number, in_range, instance,
                                    integer, positive, sequence)
from trainium_lab.units import GB, GiB, MiB, day, format_bytes, format_count, format_flops

__all__ = [
    "StateRecipe", "RECIPES", "DEFAULT_GRAD_BYTES_PER_PARAM", "PEER_GRAD_BYTES_PER_PARAM",
    "recipe", "recipe_split", "OPTIMIZER_MOMENT_BYTES", "bf16_recipe", "training_state_bytes", "state_breakdown",
    "zero_bytes_per_device", "zero_table", "ZERO_STAGES",
    "RECOMPUTE_MODES", "MLP_KINDS", "ActivationCoefficients", "activation_coefficients",
    "activation_options", "activation_bytes_per_layer", "activation_bytes", "activation_table",
    "DEFAULT_ACTIVATION_SHARE", "usable_state_bytes_per_chip",
    "min_chips_for_state", "min_chips_zero", "min_systems", "sharded_state_table",
    "training_flops", "default_mfu", "TEACHING_MFU", "mfu_label", "ATTENTION_COUNTS", "system_flops_per_s", "training_time_s", "instance_days",
    "days_on_instances", "mfu_from_throughput",
    "deepspeed_zero_model_states_bytes", "MegatronMemoryReport", "megatron_theoretical_memory",
    "convention_comparison",
    "ModelPreset", "preset", "presets", "presets_table", "parameter_count", "parameter_parts",
    "PRESET_KINDS", "resolve_model",
    "JobSizing", "size_job", "job_memory_table", "SizingPlan", "plan_memory_table",
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

    def __repr__(self) -> str:
        parts = " + ".join(f"{v:g}" for v in self.components().values())
        return f"StateRecipe({self.key!r}: {self.bytes_per_param:g} bytes/param = {parts})"

    def _repr_markdown_(self) -> str:
        parts = ", ".join(f"{k} {v:g}" for k, v in self.components().items() if v)
        return f"**{self.label}** (`{self.key}`): {self.bytes_per_param:g} bytes per parameter ({parts})"


#: Bytes per gradient value the course counts: BF16 gradients, so BF16 mixed precision with
#: Adam is 2 + 2 + 12 = 16 bytes per parameter (Rajbhandari et al. 2020, section 3.1).
DEFAULT_GRAD_BYTES_PER_PARAM = 2.0
#: Bytes per gradient value in the peers' convention: FP32 gradients (accumulated and reduced
#: in FP32), so 2 + 4 + 12 = 18 bytes per parameter. Megatron-LM's theoretical memory report
#: (``megatron/training/theoretical_memory_usage.py``: 18 bytes per parameter without the
#: distributed optimizer, 6 + 12/dp with it) and DeepSpeed's ZeRO estimators (memory docs:
#: "Gradients at fp32 take 4 bytes"; 18 bytes per parameter under ZeRO-3) count this way.
PEER_GRAD_BYTES_PER_PARAM = 4.0

#: Precision recipes. Values are bytes per parameter.
RECIPES: dict[str, StateRecipe] = {r.key: r for r in (
    StateRecipe("bf16-adam", "BF16 mixed precision + Adam", 2, 2, 4, 4, 4,
                "Rajbhandari et al. 2020 (arXiv:1910.02054) section 3.1: 2 + 2 + 12 bytes"),
    StateRecipe("bf16-adam-fp32-grads", "BF16 mixed precision + Adam, FP32 gradients", 2, 4, 4, 4, 4,
                "NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py (18 bytes per "
                "parameter); DeepSpeed docs, Memory Requirements (fp32 gradients, 4 bytes)"),
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
    # the training frameworks' own conventions (data/frameworks.csv, trainium_lab.frameworks)
    StateRecipe("nxd-standard-mixed-precision", "NxD Standard Mixed Precision (legacy NxD, ZeRO-1)",
                2, 4, 4, 4, 4,
                "AWS Neuron docs, libraries/neuronx-distributed/standard_mixed_precision.rst: FP32 "
                "master weights and optimizer states for ZeRO-1, FP32 local gradient accumulation, "
                "stochastic rounding off: 2 + 4 + 12 bytes"),
    StateRecipe("fp32-params-amp-adam", "PyTorch autocast (AMP): FP32 parameters + Adam", 4, 4, 0, 4, 4,
                "PyTorch torch.amp docs (autocast keeps parameters FP32); the TorchNeuron FAQ: "
                "torch.autocast(device_type='neuron') follows PyTorch CUDA conventions: 4 + 4 + 8 bytes"),
)}


def recipe_split(name: str, zero_stage: int, grad_bytes_per_param: float | None = None) -> tuple[float, float]:
    """Bytes per parameter a ZeRO stage shards over data parallelism, and bytes it leaves whole.

    Stage 1 shards the master copy and the optimizer moments, stage 2 the gradients too,
    stage 3 the weights too (Rajbhandari et al. 2020, Figure 1); the rest is kept on every
    data-parallel rank.

    Returns
    -------
    (sharded, unsharded) : tuple of float
        Bytes per parameter; they add up to ``recipe(name).bytes_per_param``.

    Examples
    --------
    >>> recipe_split("nxd-standard-mixed-precision", 1)   # 12 sharded; BF16 weights + FP32 grads whole
    (12.0, 6.0)
    >>> recipe_split("bf16-adam", 3)
    (16.0, 0.0)
    """
    r = recipe(name, grad_bytes_per_param)
    stage = integer("zero_stage", zero_stage, minimum=0, maximum=3)
    k = r.optimizer_bytes_per_param
    sharded = {0: 0.0, 1: k, 2: k + r.gradients, 3: k + r.gradients + r.weights}[stage]
    return float(sharded), float(r.bytes_per_param - sharded)


#: largest shape values accepted (far beyond any model; keeps every product finite)
_MAX_DIM = 10**9
#: largest parameter count accepted (10^18: far beyond any model; keeps every product finite)
_MAX_PARAMS = 1e18


def _n_params(n_params: float) -> float:
    return in_range("n_params", n_params, 0.0, _MAX_PARAMS, low_open=True)


def _int_list(name: str, values, minimum: int = 0, maximum: int | None = None) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of integers, got {values!r}")
    out = [integer(name, v, minimum=minimum, maximum=maximum) for v in values]
    if not out:
        raise ValueError(f"{name} must hold at least one value")
    return out


def _grad_bytes(grad_bytes_per_param: float | None) -> float | None:
    if grad_bytes_per_param is None:
        return None
    return in_range("grad_bytes_per_param", grad_bytes_per_param, 0.0, 64.0)


def recipe(name: str, grad_bytes_per_param: float | None = None) -> StateRecipe:
    """Look up a precision recipe by key (see :data:`RECIPES`).

    Parameters
    ----------
    name : str
        A key of :data:`RECIPES` (a :class:`StateRecipe` is returned as it is).
    grad_bytes_per_param : float, optional
        Replace the recipe's gradient bytes, in [0, 64]. The course's recipes keep BF16
        gradients (:data:`DEFAULT_GRAD_BYTES_PER_PARAM` = 2); Megatron-LM and DeepSpeed keep
        FP32 gradients (:data:`PEER_GRAD_BYTES_PER_PARAM` = 4), 2 bytes more per parameter.

    Examples
    --------
    >>> recipe("bf16-adam").bytes_per_param
    16
    >>> recipe("bf16-adam", grad_bytes_per_param=4).bytes_per_param
    18.0
    >>> recipe("bf16-sr-adam").optimizer_bytes_per_param
    8
    """
    g = _grad_bytes(grad_bytes_per_param)
    r = name if isinstance(name, StateRecipe) else RECIPES[choice("recipe", name, RECIPES)]
    if g is None or g == r.gradients:
        return r
    return replace(r, label=f"{r.label} ({g:g}-byte gradients)", gradients=g)


#: bytes per parameter of each optimizer's state kept in FP32: (first moment, second moment)
OPTIMIZER_MOMENT_BYTES: dict[str, tuple[float, float]] = {
    "adam": (4.0, 4.0), "sgd-momentum": (4.0, 0.0), "sgd": (0.0, 0.0)}


def bf16_recipe(master_weights: bool = True, optimizer: str = "adam", *,
                grad_bytes_per_param: float | None = None) -> StateRecipe:
    """The BF16 recipe for a choice of master copy and optimizer (the chapter 02 question).

    BF16 weights (2 bytes) + gradients (``grad_bytes_per_param``: 2 for BF16, the course's
    convention; 4 for FP32, as Megatron-LM and DeepSpeed count) + the optimizer's FP32
    state (:data:`OPTIMIZER_MOMENT_BYTES`: Adam 4 + 4, SGD with momentum 4, plain SGD 0)
    + an FP32 master copy (4) if kept. With Adam: :data:`RECIPES` ``"bf16-adam"`` (16) or,
    without the master copy, ``"bf16-sr-adam"`` (12).

    References
    ----------
    Rajbhandari et al. 2020 (ZeRO), arXiv:1910.02054, section 3.1 (2 + 2 + 12 bytes);
    Micikevicius et al. 2018, arXiv:1710.03740 (FP32 master copy).

    Examples
    --------
    >>> bf16_recipe().key, bf16_recipe(False).bytes_per_param
    ('bf16-adam', 12)
    >>> bf16_recipe(True, "sgd-momentum").bytes_per_param
    12.0
    """
    if not isinstance(master_weights, (bool, np.bool_)):
        raise ValueError(f"master_weights must be True or False, got {master_weights!r}")
    optimizer = choice("optimizer", optimizer, tuple(OPTIMIZER_MOMENT_BYTES))
    base = recipe("bf16-adam" if master_weights else "bf16-sr-adam", grad_bytes_per_param)
    if optimizer == "adam":
        return base
    m, v = OPTIMIZER_MOMENT_BYTES[optimizer]
    name = {"sgd-momentum": "SGD with momentum", "sgd": "plain SGD"}[optimizer]
    key = f"bf16-{optimizer}" if master_weights else f"bf16-sr-{optimizer}"
    label = (f"BF16 mixed precision + {name}" if master_weights
             else f"BF16 + stochastic rounding, no master copy, {name}")
    return replace(base, key=key, label=label, adam_m=m, adam_v=v)


def training_state_bytes(n_params: float, bytes_per_param: float | None = None, *,
                         grad_bytes_per_param: float | None = None) -> float:
    """Bytes of training state (weights, gradients, master copy, optimizer moments).

    Parameters
    ----------
    n_params : float
        Number of parameters (> 0).
    bytes_per_param : float, optional
        Bytes per parameter (> 0), all components together. Default: BF16 mixed
        precision with Adam, 2 (BF16 weights) + ``grad_bytes_per_param`` + 4 (FP32
        master) + 4 + 4 (Adam moments); ``recipe(...).bytes_per_param`` gives the others.
    grad_bytes_per_param : float, optional
        Bytes per gradient for the default recipe: 2 (BF16, the course's convention,
        16 B/param) unless given; 4 is FP32 gradients, the Megatron-LM / DeepSpeed
        convention (18 B/param). Give it or ``bytes_per_param``, not both.

    Returns
    -------
    float
        Bytes, replicated (no sharding).

    References
    ----------
    Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054, section 3.1 (2 + 2 + 12 bytes);
    NVIDIA/Megatron-LM ``theoretical_memory_usage.py`` (18 bytes per parameter).

    Examples
    --------
    >>> from trainium_lab.units import GiB
    >>> round(training_state_bytes(405e9) / GiB, 2)  # Llama 3 405B at 16 B/param
    6034.97
    >>> round(training_state_bytes(405e9, grad_bytes_per_param=4) / GiB, 2)  # at 18 B/param
    6789.34
    """
    n_params = positive("n_params", n_params)
    if bytes_per_param is not None and grad_bytes_per_param is not None:
        raise ValueError("bytes_per_param is the total and already includes the gradients: "
                         "give bytes_per_param or grad_bytes_per_param, not both")
    if bytes_per_param is None:
        bytes_per_param = recipe("bf16-adam", grad_bytes_per_param).bytes_per_param
    bytes_per_param = positive("bytes_per_param", bytes_per_param)
    return n_params * bytes_per_param


def state_breakdown(n_params: float, recipes: Iterable[str] | str = "bf16-adam", *,
                    grad_bytes_per_param: float | None = None) -> pd.DataFrame:
    """Training state by component for one or more recipes (tidy, for a stacked bar).

    Parameters
    ----------
    grad_bytes_per_param : float, optional
        Replace every recipe's gradient bytes (see :func:`recipe`; default: each recipe's
        own, 2 = BF16 in the course's recipes).

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
    >>> float(state_breakdown(8e9, "bf16-adam", grad_bytes_per_param=4).bytes_per_param.sum())
    18.0
    """
    n_params = positive("n_params", n_params)
    keys = [recipes] if isinstance(recipes, str) else sequence("recipes", recipes, lambda _n, x: x)
    rows = []
    for key in keys:
        r = recipe(key, grad_bytes_per_param)
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
                          grad_bytes_per_param: float = DEFAULT_GRAD_BYTES_PER_PARAM) -> float:
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
    weight_bytes_per_param : float
        Bytes per working weight (2 for BF16).
    grad_bytes_per_param : float
        Bytes per gradient: 2 (BF16, the course's convention, the default) or 4 (FP32,
        as Megatron-LM and DeepSpeed count; see :data:`PEER_GRAD_BYTES_PER_PARAM`).

    Returns
    -------
    float
        Bytes per device (activations not included).

    References
    ----------
    Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054, Figure 1 and Table 1.

    Examples
    --------
    The paper's example, Ψ = 7.5B, N_d = 64 (its GB are 10^9 bytes): Table 1 prints
    120 / 31.4 / 16.6 / 1.88 GB, Figure 1 the same with stage 3 rounded to 1.9 GB:

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
               stages: Sequence[int] = ZERO_STAGES, weight_bytes_per_param: float = 2.0,
               grad_bytes_per_param: float = DEFAULT_GRAD_BYTES_PER_PARAM) -> pd.DataFrame:
    """Bytes per device for each ZeRO stage over a range of DP degrees (tidy).

    ``weight_bytes_per_param`` and ``grad_bytes_per_param`` as in
    :func:`zero_bytes_per_device` (gradients: 2 = BF16 by default, 4 = FP32 as the peers count).

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
    stages = _int_list("stages", stages, minimum=0, maximum=3)
    dp_values = _int_list("dp_values", dp_values, minimum=1)
    rows = []
    stages = sequence("stages", stages, lambda name, x: integer(name, x, minimum=0, maximum=3))
    dp_values = sequence("dp_values", dp_values, integer)
    for s in stages:
        for d in dp_values:
            b = zero_bytes_per_device(n_params, d, s, optimizer_bytes_per_param,
                                      weight_bytes_per_param=weight_bytes_per_param,
                                      grad_bytes_per_param=grad_bytes_per_param)
            rows.append({"stage": int(s), "stage_label": labels[int(s)], "dp": int(d), "bytes": b,
                         "gb": b / GB, "gib": b / GiB})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- activations

#: recomputation modes of Korthikanti et al.: none, selective (attention core), full (whole layer)
RECOMPUTE_MODES = ("none", "selective", "full")

#: MLP kinds the activation model knows: GPT's GeLU (the reference) and Llama's gated SwiGLU
MLP_KINDS = ("gelu", "swiglu")

#: share of each chip's HBM kept free for activations, the runtime and fragmentation: a rule
#: of thumb for sizing before a layout exists (chapter 04 tests it against chapter 05's counts)
DEFAULT_ACTIVATION_SHARE = 0.35


@dataclass(frozen=True)
class ActivationCoefficients:
    """Bytes per ``s·b·h`` that one transformer layer stores, split as Korthikanti et al. do.

    Attributes
    ----------
    replicated : float
        Stored on every tensor-parallel rank unless sequence parallelism shards it: the
        inputs of the two layer norms and of the QKV and first MLP linears (2 bytes each),
        plus the two 1-byte dropout masks when there is dropout. 10 for GPT.
    sharded : float
        Divided by the tensor-parallel degree: Q, K, V, the input of the attention output
        projection and the MLP's inner activations. 24 for GPT (4h GeLU MLP).
    attention_core : float
        Multiplies ``a·s/h``: the softmax output (2), and with dropout its mask (1) and the
        dropped-out scores (2). 5 for GPT; selective recomputation drops it.
    """

    replicated: float
    sharded: float
    attention_core: float

    @property
    def total(self) -> float:
        """``replicated + sharded``: 34 for GPT."""
        return self.replicated + self.sharded


def activation_coefficients(n_heads: int, d_model: int, *, n_kv_heads: int | None = None,
                            ffn_dim: int | None = None, mlp: str = "gelu",
                            dropout: bool = True) -> ActivationCoefficients:
    """Per-layer activation coefficients for a GPT-style or a Llama-style layer.

    Korthikanti et al. count one GPT layer (multi-head attention, a 4h GeLU MLP, dropout)
    as ``s b h (34 + 5 a s / h)`` bytes. Each term is a stored tensor, so the same count
    adapts to what Llama-family models store:

    * grouped-query attention (``n_kv_heads`` = g·a): K and V are ``g`` times narrower,
      so ``2 + 2`` bytes become ``2g + 2g``;
    * a SwiGLU MLP of width ``f`` (``mlp="swiglu"``): the fused activation saves its
      2f-wide input (gate and up projections) and the down projection saves the f-wide
      product, ``6f/h`` instead of GeLU's ``4f/h`` (input and output of the GeLU);
    * no dropout (``dropout=False``): the two 1-byte masks go, and the attention core
      keeps only the softmax output, ``2 a s/h`` instead of ``5 a s/h``.

    Parameters
    ----------
    n_heads, d_model : int
        a and h (>= 1).
    n_kv_heads : int, optional
        Key/value heads (1..n_heads); default ``n_heads`` (multi-head attention).
    ffn_dim : int, optional
        MLP inner width f; default ``4 · d_model``.
    mlp : {"gelu", "swiglu"}
    dropout : bool
        Whether the model applies dropout (GPT-3 did; Llama does not).

    Returns
    -------
    ActivationCoefficients

    References
    ----------
    Korthikanti et al. 2022, arXiv:2205.05198, section 4.1 (the GPT count term by term);
    NVIDIA/Megatron-LM ``megatron/core/fusions/fused_bias_swiglu.py`` (the fused SwiGLU
    saves its input for the backward pass); Llama Team 2024, arXiv:2407.21783, Table 3
    (GQA, SwiGLU); meta-llama/llama-models reference model (no dropout).

    Examples
    --------
    >>> c = activation_coefficients(96, 12288)   # GPT-3: the paper's 34 and 5
    >>> c.replicated, c.sharded, c.attention_core
    (10.0, 24.0, 5.0)
    >>> c = activation_coefficients(64, 8192, n_kv_heads=8, ffn_dim=28672, mlp="swiglu", dropout=False)
    >>> c.replicated, c.sharded, c.attention_core     # Llama 3 70B
    (8.0, 25.5, 2.0)
    """
    a = integer("n_heads", n_heads, minimum=1, maximum=_MAX_DIM)
    h = integer("d_model", d_model, minimum=1, maximum=_MAX_DIM)
    kv = a if n_kv_heads is None else integer("n_kv_heads", n_kv_heads, minimum=1, maximum=a)
    f = 4 * h if ffn_dim is None else integer("ffn_dim", ffn_dim, minimum=1, maximum=_MAX_DIM)
    kind = choice("mlp", mlp, MLP_KINDS)
    if dropout not in (True, False):
        raise ValueError(f"dropout must be True or False, got {dropout!r}")
    g = kv / a
    replicated = 4.0 + 4.0 + (2.0 if dropout else 0.0)
    mlp_term = (4.0 if kind == "gelu" else 6.0) * f / h
    sharded = 2.0 + 2.0 * g + 2.0 * g + 2.0 + mlp_term
    core = 5.0 if dropout else 2.0
    return ActivationCoefficients(replicated, sharded, core)


def activation_options(model: "ModelPreset | str") -> dict:
    """Keyword arguments that describe a preset's layer to the activation functions.

    Every preset (and :func:`trainium_lab.layouts.custom_model`) is a Llama-style decoder
    (:func:`parameter_count`): grouped-query attention, a SwiGLU MLP of ``ffn_dim`` and no
    dropout. Pass the result to :func:`activation_bytes_per_layer` and friends; leave it
    out for the Korthikanti GPT reference form.

    Examples
    --------
    >>> activation_options("llama3-8b")
    {'n_kv_heads': 8, 'ffn_dim': 14336, 'mlp': 'swiglu', 'dropout': False}
    """
    m = preset(model) if isinstance(model, str) else model
    if not isinstance(m, ModelPreset):
        raise ValueError(f"model must be a preset name or a ModelPreset; got {model!r}")
    return {"n_kv_heads": m.n_kv_heads, "ffn_dim": m.ffn_dim, "mlp": "swiglu", "dropout": False}


def _activation_per_layer_array(seq_len: float, micro_batch, d_model: float, n_heads: float, tp,
                                sequence_parallel: bool, mode, coeffs: ActivationCoefficients):
    """Vectorised per-layer, per-rank activation bytes (``mode``: 0 none, 1 selective, 2 full).

    The single activation model of the package: :func:`activation_bytes_per_layer` and the
    layout planner (:mod:`trainium_lab.layouts`) both call it.
    """
    s, h, a = float(seq_len), float(d_model), float(n_heads)
    sbh = s * np.asarray(micro_batch, dtype=float) * h
    t = np.asarray(tp, dtype=float)
    core = coeffs.attention_core * a * s / h
    if sequence_parallel:
        none = sbh / t * (coeffs.total + core)
        sel = sbh / t * coeffs.total
        full = 2.0 * sbh / t
    else:
        none = sbh * (coeffs.replicated + coeffs.sharded / t + core / t)
        sel = sbh * (coeffs.replicated + coeffs.sharded / t)
        full = 2.0 * sbh * np.ones_like(t)
    return np.choose(np.asarray(mode), [none, sel, full])


def activation_bytes_per_layer(seq_len: int, micro_batch: int, d_model: int, n_heads: int,
                               tp: int = 1, sequence_parallel: bool = False,
                               recompute: str = "none", *, n_kv_heads: int | None = None,
                               ffn_dim: int | None = None, mlp: str = "gelu",
                               dropout: bool = True) -> float:
    """Activation bytes one transformer layer keeps for the backward pass, per rank.

    With s = ``seq_len``, b = ``micro_batch``, h = ``d_model``, a = ``n_heads``
    and t = ``tp`` (16-bit activations, 1-byte dropout masks), for the GPT reference
    layer (the defaults):

    ==================================  ===============================
    no parallelism (t = 1)              s b h (34 + 5 a s / h)
    tensor parallel                     s b h (10 + 24/t + 5 a s / (h t))
    tensor + sequence parallel          s b h / t (34 + 5 a s / h)
    tensor parallel + selective         s b h (10 + 24/t)
    tensor + sequence + selective       34 s b h / t
    full recomputation                  2 s b h  (2 s b h / t with sequence parallelism)
    ==================================  ===============================

    Selective recomputation drops the ``5as/h`` term (the attention scores,
    softmax and its dropout, recomputed in the backward pass). Full
    recomputation keeps only each layer's input; with sequence parallelism that
    input lies in the sequence-parallel region, so each rank stores its ``1/t``
    shard, as Megatron-LM does (Korthikanti et al. §4.2.2 and §5). The
    ``n_kv_heads``, ``ffn_dim``, ``mlp`` and ``dropout`` options describe a
    Llama-style layer instead (:func:`activation_coefficients`;
    :func:`activation_options` gives them for a preset).

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
    n_kv_heads, ffn_dim, mlp, dropout :
        The layer's architecture (see :func:`activation_coefficients`); the defaults are
        Korthikanti et al.'s GPT layer.

    Returns
    -------
    float
        Bytes per layer on each rank.

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

    Full recomputation with sequence parallelism keeps each rank's shard of the input:

    >>> activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True,
    ...                            recompute="full") == 2 * 2048 * 12288 / 8
    True
    """
    s = integer("seq_len", seq_len, minimum=1, maximum=_MAX_DIM)
    b = integer("micro_batch", micro_batch, minimum=1, maximum=_MAX_DIM)
    h = integer("d_model", d_model, minimum=1, maximum=_MAX_DIM)
    a = integer("n_heads", n_heads, minimum=1, maximum=_MAX_DIM)
    t = integer("tp", tp, minimum=1, maximum=_MAX_DIM)
    if sequence_parallel not in (True, False):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    mode = choice("recompute", recompute, RECOMPUTE_MODES)
    coeffs = activation_coefficients(a, h, n_kv_heads=n_kv_heads, ffn_dim=ffn_dim, mlp=mlp,
                                     dropout=dropout)
    return float(_activation_per_layer_array(s, b, h, a, t, bool(sequence_parallel),
                                             RECOMPUTE_MODES.index(mode), coeffs))


def activation_bytes(n_layers: int, seq_len: int, micro_batch: int, d_model: int, n_heads: int,
                     tp: int = 1, sequence_parallel: bool = False,
                     recompute: str = "none", **architecture) -> float:
    """Activation bytes for all ``n_layers`` layers of one micro-batch, per rank.

    ``n_layers`` times :func:`activation_bytes_per_layer` (``architecture``: its
    ``n_kv_heads``, ``ffn_dim``, ``mlp`` and ``dropout`` options). With 1F1B pipeline
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
                                                 sequence_parallel, recompute, **architecture)


def activation_table(seq_lens: Sequence[int], *, micro_batch: int, d_model: int, n_heads: int,
                     n_layers: int = 1, tp: int = 1, **architecture) -> pd.DataFrame:
    """Activation bytes versus sequence length for each configuration of Table 2 (tidy).

    Configurations: none; selective; full recompute; and, when ``tp > 1``, the
    tensor-parallel and sequence-parallel variants. ``architecture`` as in
    :func:`activation_bytes_per_layer` (default: the GPT reference layer).

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
            b = activation_bytes(n_layers, s, micro_batch, d_model, n_heads, tp_i, sp, mode,
                                 **architecture)
            rows.append({"config": label, "seq_len": int(s), "bytes": b, "gib": b / GiB})
    return pd.DataFrame(rows)


def usable_state_bytes_per_chip(chip: str = "trn2",
                                activation_share: float = DEFAULT_ACTIVATION_SHARE) -> float:
    """HBM per chip left for training state once a share is kept for activations.

    A rule of thumb for sizing before a layout exists keeps 35 % of HBM free
    for activations, the runtime and fragmentation: ``hbm × (1 − share)``. It is
    not a published figure: chapter 04 tests it against the activations the
    layouts of chapter 05 actually need.

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
                   max_chips: int = 1_000_000,
                   grad_bytes_per_param: float | None = None) -> int | None:
    """Fewest data-parallel chips for which the ZeRO per-device state fits.

    Room per chip is ``hbm − activation_bytes_per_chip`` if that is given,
    else ``hbm × (1 − activation_share)``. Returns ``None`` if the replicated
    part of the state alone does not fit (stages 0-2 on a large model: shard
    the weights too, or add tensor/pipeline parallelism, chapter 05).
    ``grad_bytes_per_param`` replaces the recipe's gradient bytes (:func:`recipe`:
    2 = BF16 by default, 4 = FP32 as Megatron-LM and DeepSpeed count).

    Examples
    --------
    >>> min_chips_zero(8e9, 3), min_chips_zero(8e9, 1), min_chips_zero(70e9, 0)
    (2, 3, None)
    >>> min_chips_zero(70e9, 3), min_chips_zero(70e9, 3, grad_bytes_per_param=4)
    (17, 19)
    """
    n_params = _n_params(n_params)
    stage = integer("stage", stage, minimum=0, maximum=3)
    max_chips = integer("max_chips", max_chips)
    r = recipe(recipe_name, grad_bytes_per_param)
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
    Llama 3 405B's state at 16 B/param on Trn2 UltraServers:

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


#: how the attention-score FLOPs are counted: with the causal saving, or the full matrix
ATTENTION_COUNTS = ("causal", "full")


def training_flops(n_params: float, n_tokens: float, *, include_attention: bool = False,
                   n_layers: int | None = None, seq_len: int | None = None,
                   d_model: int | None = None, attention: str = "causal") -> float:
    """FLOPs to train: 6·N·D, optionally plus the attention-score term.

    Each token costs about 2N FLOPs forward and 4N backward. The attention scores
    (QKᵀ) and their product with the values add, per token, either

    * ``6 · n_layers · seq_len · d_model`` (``attention="causal"``, the default): the count
      Megatron-LM's ``num_floating_point_operations`` uses today, which halves the score
      matrix because a causal mask leaves only half of it non-zero; Kaplan et al.'s
      ``2 n_layer n_ctx d_attn`` forward, tripled for training, is the same number; or
    * ``12 · n_layers · seq_len · d_model`` (``attention="full"``): the count of Narayanan
      et al. 2021 (Appendix, ``72 B s l h² (1 + s/(6h) + ...)``) and Korthikanti et al. 2022
      §6 (model FLOPs), with no causal saving.

    The two differ by a factor of two in this term only; quote which one an MFU uses.

    Parameters
    ----------
    n_params : float
        N, parameters (> 0).
    n_tokens : float
        D, training tokens (> 0).
    include_attention : bool
        Add the attention term; then ``n_layers``, ``seq_len`` and ``d_model``
        are required.
    attention : {"causal", "full"}
        How to count the attention-score FLOPs (see above).

    Returns
    -------
    float
        FLOPs (a count).

    References
    ----------
    Kaplan et al. 2020, arXiv:2001.08361, section 2.1, Table 1; Hoffmann et al.
    2022 (Chinchilla), arXiv:2203.15556, Appendix F; Narayanan et al. 2021,
    arXiv:2104.04473, Appendix (FLOPs per iteration); Korthikanti et al. 2022,
    arXiv:2205.05198, section 6; NVIDIA/Megatron-LM ``megatron/training/training.py``,
    ``num_floating_point_operations`` ("causal mask (only half of the mask is non-zero)").

    Examples
    --------
    Llama 3 405B on 15.6T tokens; Meta's paper (arXiv:2407.21783) gives 3.8e25:

    >>> f"{training_flops(405e9, 15.6e12):.2e}"
    '3.79e+25'

    The attention term for Llama 3 8B's shape, counted both ways, per token:

    >>> base = training_flops(8e9, 1)
    >>> [round(training_flops(8e9, 1, include_attention=True, n_layers=32, seq_len=8192,
    ...                       d_model=4096, attention=a) - base) for a in ATTENTION_COUNTS]
    [6442450944, 12884901888]
    """
    n_params = positive("n_params", n_params)
    n_tokens = positive("n_tokens", n_tokens)
    mode = choice("attention", attention, ATTENTION_COUNTS)
    flops = 6.0 * n_params * n_tokens
    if include_attention:
        if n_layers is None or seq_len is None or d_model is None:
            raise ValueError("include_attention=True needs n_layers, seq_len and d_model")
        n_layers = integer("n_layers", n_layers, minimum=1)
        seq_len = integer("seq_len", seq_len, minimum=1)
        d_model = integer("d_model", d_model, minimum=1)
        per_token = (6.0 if mode == "causal" else 12.0) * n_layers * seq_len * d_model
        flops += per_token * n_tokens
    return flops


def system_flops_per_s(system: str = "trn2.48xlarge", dtype: str = "bfloat16", *,
                       per_instance: bool = False) -> float:
    """Peak dense FLOP/s of a system: chips × the chip's dense rate for ``dtype``.

    Built from the per-chip rate (16 × 667 TFLOP/s for a trn2.48xlarge) rather
    than the system total, which AWS rounds (10.7 PFLOP/s).

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


def default_mfu() -> float:
    """The calibrated default MFU while computing, used by sizing, the layout planner and ``moe``.

    ``planner_mfu`` of ``data/calibration.csv``: the value at which
    :func:`trainium_lab.layouts.evaluate` (published link rates) reproduces AWS's published Trn1
    training runs (``trainium_lab.reality.fit``); its low-high range is carried beside it. The
    four measurement sets hold no Trn2 or Trn3 training throughput, so on those chips it is an
    assumption with that range, not a measurement.

    Examples
    --------
    >>> 0.2 < default_mfu() < 0.4
    True
    """
    return specs.calibration("planner_mfu").value


#: the round MFU the chapters' hand derivations use (0.40, so that "× 0.4" can be done in one's head):
#: an assumption for teaching, not an expectation. Plans take :func:`default_mfu`, the calibrated
#: value; :func:`mfu_label` prints the two side by side
TEACHING_MFU: float = 0.40


def mfu_label() -> str:
    """One line that labels :data:`TEACHING_MFU` an assumption beside the calibrated MFU and its range.

    Examples
    --------
    >>> mfu_label().startswith("derivations here assume 40% MFU (an assumption")
    True
    """
    cal = specs.calibration("planner_mfu")
    rng = "" if cal.low != cal.low else f", range {cal.low:.1%}-{cal.high:.1%}"
    return (f"derivations here assume {TEACHING_MFU:.0%} MFU (an assumption, a round number to compute "
            f"with); the calibrated planner MFU is {cal.value:.1%}{rng} (data/calibration.csv, "
            f"planner_mfu, fitted on the {cal.fitted_on} measurements), the default of sizing and the planners: expect "
            f"about {TEACHING_MFU / cal.value:.2f}× the compute time and its cost computed at {TEACHING_MFU:.0%}")


def _mfu(mfu: float | None) -> float:
    if mfu is None:
        return default_mfu()
    return in_range("mfu", mfu, 0.0, 1.0, low_open=True)


def training_time_s(flops: float, mfu: float, system: str = "trn2.48xlarge",
                    n_systems: int = 1, dtype: str = "bfloat16") -> float:
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
                  dtype: str = "bfloat16") -> float:
    """Instance-days: days the job would take on one instance of ``system``.

    For an UltraServer this counts its instances (trn2u.48xlarge), so the
    figure is comparable across systems; divide by instances to get days.

    Examples
    --------
    8B parameters on 1T tokens at 40 % MFU on trn2:

    >>> round(instance_days(6 * 8e9 * 1e12, 0.40))
    130
    """
    flops = positive("flops", flops)
    mfu = _mfu(mfu)
    return flops / (system_flops_per_s(system, dtype, per_instance=True) * mfu) / day


def days_on_instances(flops: float, mfu: float, n_instances: int,
                      system: str = "trn2.48xlarge", dtype: str = "bfloat16") -> float:
    """Days on ``n_instances`` instances, assuming perfect scaling across them.

    Examples
    --------
    >>> round(days_on_instances(6 * 8e9 * 1e12, 0.40, 16), 1)
    8.1
    """
    n_instances = integer("n_instances", n_instances, minimum=1)
    return instance_days(flops, mfu, system, dtype) / n_instances


def mfu_from_throughput(tokens_per_s: float, n_params: float, n_chips: int,
                        chip: str = "trn2", dtype: str = "bfloat16", *,
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


# --------------------------------------------------------------------------- peer calculators
#
# The estimators engineers already use, reproduced exactly so that a number from this course
# can be put beside theirs and every difference named (chapter 04). They count FP32 gradients.


def deepspeed_zero_model_states_bytes(n_params: float, n_ranks: int, stage: int = 3, *,
                                      largest_layer_params: float = 0.0,
                                      offload_optimizer: bool = False,
                                      offload_params: bool = False) -> float:
    """Per-GPU bytes of DeepSpeed's ZeRO-2 / ZeRO-3 model-state estimators.

    DeepSpeed's ``estimate_zero2_model_states_mem_needs`` and
    ``estimate_zero3_model_states_mem_needs`` (the ``..._all_cold`` helpers print them),
    GPU column, with Ψ = ``n_params`` and N = ``n_ranks`` (DeepSpeed's GPUs):

    ======================================  =====================================
    ZeRO-2                                  ``4Ψ + int(16Ψ / N)``
    ZeRO-2, optimizer offloaded to CPU      ``2Ψ``
    ZeRO-3                                  ``4·L + int(18Ψ / N)``
    ZeRO-3, optimizer offloaded             ``4·L + int(2Ψ / N)``
    ZeRO-3, optimizer and params offloaded  ``4·L``
    ======================================  =====================================

    with L = ``largest_layer_params`` (its BF16 weights and gradients gathered on one GPU).
    Their bytes per parameter: 16 sharded = 4 (FP32 gradients) + 4 (FP32 master) + 8 (Adam),
    as the documentation breaks it down; ZeRO-3 shards 18 (those 16 + 2 for the 16-bit
    weights). ZeRO-2 keeps 4 on every GPU; the documentation does not split them, and the
    course reads them as 2 for the 16-bit weights and 2 for the 16-bit gradients each GPU
    holds before the reduce-scatter (its note: gradients are stored in fp16 and converted to
    FP32 for the update).

    Parameters
    ----------
    n_params : float
        Ψ, total parameters (> 0).
    n_ranks : int
        Data-parallel ranks over all nodes (>= 1): DeepSpeed's ``num_gpus_per_node × num_nodes``.
    stage : {2, 3}
        DeepSpeed documents estimators for these two stages only (default 3).
    largest_layer_params : float
        Parameters of the largest layer (>= 0); ZeRO-3 only.
    offload_optimizer, offload_params : bool
        The ``offload_optimizer`` / ``offload_param`` device ``cpu`` options
        (``offload_params`` needs ``offload_optimizer`` and stage 3).

    Returns
    -------
    float
        Bytes per GPU (DeepSpeed prints them divided by 2**30, labelled "GB").

    References
    ----------
    DeepSpeed documentation, "Memory Requirements" (``docs/code-docs/source/memory.rst``) and
    ``deepspeed/runtime/zero/stage_1_and_2.py``, ``stage3.py`` (the estimators).

    Examples
    --------
    The documentation's worked example, 2,851M parameters on 1 node with 8 GPUs
    (``..._all_cold``: ZeRO-2 15.93 / 5.31 GB per GPU; ZeRO-3 with 32M largest-layer
    parameters 6.09 / 0.78 / 0.12 GB):

    >>> from trainium_lab.units import GiB
    >>> [round(deepspeed_zero_model_states_bytes(2851e6, 8, 2, offload_optimizer=o) / GiB, 2)
    ...  for o in (False, True)]
    [15.93, 5.31]
    >>> [round(deepspeed_zero_model_states_bytes(2851e6, 8, 3, largest_layer_params=32e6,
    ...        offload_optimizer=o, offload_params=p) / GiB, 2)
    ...  for o, p in ((False, False), (True, False), (True, True))]
    [6.09, 0.78, 0.12]
    """
    psi = _n_params(n_params)
    n = integer("n_ranks", n_ranks, minimum=1)
    stage = integer("stage", stage, minimum=2, maximum=3)
    largest = in_range("largest_layer_params", largest_layer_params, 0.0, _MAX_PARAMS)
    for name, flag in (("offload_optimizer", offload_optimizer), ("offload_params", offload_params)):
        if flag not in (True, False):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    if offload_params and (stage != 3 or not offload_optimizer):
        raise ValueError("offload_params must be False unless stage is 3 and offload_optimizer is True "
                         "(DeepSpeed's estimator has no other case)")
    if stage == 2:
        if largest:
            raise ValueError("largest_layer_params must be 0 for stage 2 (only ZeRO-3 gathers layers)")
        return float(2 * psi) if offload_optimizer else float(4 * psi + int(16 * psi / n))
    largest_layer_memory = 4 * largest
    if offload_optimizer and offload_params:
        return float(largest_layer_memory)
    if offload_optimizer:
        return float(largest_layer_memory + int(2 * psi / n))
    return float(largest_layer_memory + int(18 * psi / n))


@dataclass(frozen=True)
class MegatronMemoryReport:
    """Megatron-LM's theoretical memory report for one configuration (base units).

    Attributes
    ----------
    n_params_transformer_block, n_params_embedding, n_params_total : float
        Parameter counts as Megatron-LM prints them (block includes the final norm).
    n_params_most_loaded_shard : float
        Parameters on the first pipeline stage's tensor-parallel rank (its layers plus
        the input embedding).
    n_params_other_shards : float or None
        Parameters on the other stages' ranks (``None`` without pipeline parallelism).
    bytes_per_param : float
        18, or ``6 + 12/dp`` with the distributed optimizer.
    weight_and_optimizer_bytes, activation_bytes : float
        The report's two numbers, per rank (printed divided by 2**20, labelled "MB").
    """

    n_params_transformer_block: float
    n_params_embedding: float
    n_params_total: float
    n_params_most_loaded_shard: float
    n_params_other_shards: float | None
    bytes_per_param: float
    weight_and_optimizer_bytes: float
    activation_bytes: float

    @property
    def total_bytes(self) -> float:
        """Weights, optimizer state and activations of the most loaded rank."""
        return self.weight_and_optimizer_bytes + self.activation_bytes

    def _repr_markdown_(self) -> str:
        mb = float(MiB)
        return (f"Megatron-LM theoretical memory: weight and optimizer "
                f"{self.weight_and_optimizer_bytes / mb:,.2f} MB, activation "
                f"{self.activation_bytes / mb:,.2f} MB, total {self.total_bytes / mb:,.2f} MB "
                f"(Megatron's MB = 2^20 bytes; {self.bytes_per_param:g} bytes per parameter on "
                f"{self.n_params_most_loaded_shard / 1e9:.4f} billion parameters)")


def megatron_theoretical_memory(n_layers: int, d_model: int, n_heads: int, ffn_dim: int,
                                vocab_size: int, seq_len: int, *, n_kv_heads: int | None = None,
                                swiglu: bool = False, tp: int = 1, pp: int = 1, dp: int = 1,
                                micro_batch: int = 1, n_micro_batches: int | None = None,
                                virtual_pp: int | None = None, distributed_optimizer: bool = False,
                                untie_embeddings: bool = False, normalization: str = "LayerNorm",
                                sequence_parallel: bool = True, recompute: str = "selective",
                                make_vocab_size_divisible_by: int = 128) -> MegatronMemoryReport:
    """Megatron-LM's ``report_theoretical_memory`` for a dense GPT/Llama model, exactly.

    Weights and optimizer: parameters of the most loaded shard (first stage: ``L/p``
    layers plus the input embedding, over ``t`` ranks) times 18 bytes (2 BF16 weights +
    4 FP32 gradients + 12 master and Adam), or ``6 + 12/dp`` with the distributed
    optimizer. Per layer ``2h(f·g + n) + 2h²(1 + k/a)`` parameters (g = 3/2 for SwiGLU,
    n = 1 for RMSNorm and 2 for LayerNorm, k KV heads). Activations, with sequence
    parallelism and selective recomputation: ``s b h (18 + 4f/h)`` per layer for all L
    layers (the first stage holds p micro-batches of L/p layers), plus the embedding's
    input (8 s b p) and dropout (s b h p), times ``min(1, m/p)`` when fewer micro-batches
    than stages are in flight, plus the output layer and loss ``4 s b h (1 + V/h)`` when
    p = 1, all over t. Otherwise Megatron's path without sequence parallelism:
    ``s b h (10 + 24/t)`` per layer, the same embedding terms, logits ``2(s b V/t + s b h)``
    when p = 1, and a 5 % allowance.

    Parameters
    ----------
    n_layers, d_model, n_heads, ffn_dim, vocab_size, seq_len : int
        L, h, a, f, V (before padding), s.
    n_kv_heads : int, optional
        Query groups (grouped-query attention); default ``n_heads``.
    swiglu : bool
        Gated MLP (``--swiglu``).
    tp, pp, dp, micro_batch : int
        Parallel degrees and micro-batch size b.
    n_micro_batches : int, optional
        Micro-batches per step m (discounts the first stage when m < p).
    virtual_pp : int, optional
        Interleaved-schedule chunks per stage.
    distributed_optimizer : bool
        ``--use-distributed-optimizer`` (shards master and Adam over dp, like ZeRO-1).
    untie_embeddings : bool
        Separate input and output embeddings.
    normalization : {"LayerNorm", "RMSNorm"}
        Parameters per channel of each norm: 2 and 1. Megatron-LM releases before the
        ``norm_size`` change (e.g. r0.10.0) counted 2 whatever ``--normalization`` said.
    sequence_parallel : bool
    recompute : {"selective", "none", "full"}
        Only whether it is ``"selective"`` matters, as in Megatron-LM.
    make_vocab_size_divisible_by : int
        Vocabulary padding (Megatron pads V to a multiple of this times t).

    Returns
    -------
    MegatronMemoryReport

    References
    ----------
    NVIDIA/Megatron-LM, ``megatron/training/theoretical_memory_usage.py`` (commit 00caa53):
    ``compute_weight_and_optimizer_memory``, ``compute_activation_memory`` (Korthikanti et
    al. 2022, Table 2) and ``compute_activation_memory_without_sp``;
    ``megatron/training/tokenizer`` ``_vocab_size_with_padding``.

    Examples
    --------
    Llama 2 7B with TP 1, PP 4 on an 8-GPU node (DP 2, distributed optimizer): a published
    Megatron-LM r0.10.0 log prints 1.7502 billion parameters on the most loaded shard and
    "weight and optimizer=20029.52 MB":

    >>> r = megatron_theoretical_memory(32, 4096, 32, 11008, 32000, 4096, swiglu=True, pp=4,
    ...                                 dp=2, distributed_optimizer=True, untie_embeddings=True)
    >>> round(r.n_params_most_loaded_shard / 1e9, 4), round(r.weight_and_optimizer_bytes / 2**20, 2)
    (1.7502, 20029.52)
    """
    L = integer("n_layers", n_layers, minimum=1, maximum=_MAX_DIM)
    h = integer("d_model", d_model, minimum=1, maximum=_MAX_DIM)
    a = integer("n_heads", n_heads, minimum=1, maximum=_MAX_DIM)
    f = integer("ffn_dim", ffn_dim, minimum=1, maximum=_MAX_DIM)
    v0 = integer("vocab_size", vocab_size, minimum=1, maximum=_MAX_DIM)
    s = integer("seq_len", seq_len, minimum=1, maximum=_MAX_DIM)
    k = a if n_kv_heads is None else integer("n_kv_heads", n_kv_heads, minimum=1, maximum=a)
    t = integer("tp", tp, minimum=1, maximum=_MAX_DIM)
    p = integer("pp", pp, minimum=1, maximum=_MAX_DIM)
    d = integer("dp", dp, minimum=1, maximum=_MAX_DIM)
    b = integer("micro_batch", micro_batch, minimum=1, maximum=_MAX_DIM)
    m = None if n_micro_batches is None else integer("n_micro_batches", n_micro_batches, minimum=1)
    vp = None if virtual_pp is None else integer("virtual_pp", virtual_pp, minimum=1)
    for name, flag in (("swiglu", swiglu), ("distributed_optimizer", distributed_optimizer),
                       ("untie_embeddings", untie_embeddings), ("sequence_parallel", sequence_parallel)):
        if flag not in (True, False):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    norm_size = {"LayerNorm": 2, "RMSNorm": 1}[choice("normalization", normalization,
                                                      ("LayerNorm", "RMSNorm"))]
    mode = choice("recompute", recompute, RECOMPUTE_MODES)
    divisible = integer("make_vocab_size_divisible_by", make_vocab_size_divisible_by, minimum=1,
                        maximum=_MAX_DIM)
    if h % a:
        raise ValueError(f"d_model must be a multiple of n_heads, got {h} and {a}")
    multiple = divisible * t
    V = -(-v0 // multiple) * multiple
    # ---- compute_weight_and_optimizer_memory (dense, no MoE / MTP / MLA)
    kv_channels = h // a
    ratio = kv_channels * a / h
    gated = 1.5 if swiglu else 1.0
    self_attn = 2 * h * h * ((1 + k / a) * ratio)
    per_layer = 2 * h * (f * gated + norm_size) + self_attn
    embedding_size = h * V
    block = per_layer * L + norm_size * h
    embeddings = (2 if untie_embeddings else 1) * embedding_size
    most_loaded = (block / p + embedding_size) / t
    if untie_embeddings and p == 1:
        most_loaded += embedding_size / t
    other = block / (p * t) if p > 1 else None
    bytes_per_param = 6 + 12 / d if distributed_optimizer else 18.0
    weight_opt = most_loaded * bytes_per_param
    # ---- activations: with SP and selective recompute, or the path without SP
    penalty = 1 + (p - 1) / (p * vp) if vp is not None else 1.0
    discount = min(1.0, m / p) if (vp is None and p > 1 and m is not None) else 1.0
    if sequence_parallel and mode == "selective":
        act = s * b * h * (18 + 4 * (f / h)) * L
        act += 8 * s * b * p + s * b * h * p
        act *= penalty * discount
        if p == 1:
            act += s * b * h * 4 * (1 + V / h)
        act /= t
    else:
        act = s * b * h * (10 + 24 / t) * L
        act += 8 * s * b * p + s * b * h * p
        act *= penalty * discount
        if p == 1:
            act += (s * b * V / t + s * b * h) * 2
        act *= 1.05
    return MegatronMemoryReport(float(block), float(embeddings), float(block + embeddings),
                                float(most_loaded), None if other is None else float(other),
                                float(bytes_per_param), float(weight_opt), float(act))


def convention_comparison(model: "ModelPreset | str" = "llama3-8b", n_devices: int = 64, *,
                          micro_batch: int = 1, recompute: str = "selective") -> pd.DataFrame:
    """One data-parallel job sized by the course and by Megatron-LM's and DeepSpeed's formulas.

    The model is trained data-parallel over ``n_devices`` (no tensor or pipeline
    parallelism), one rank per device. Rows: the state per device under ZeRO-1 (against
    Megatron-LM's distributed optimizer), ZeRO-2 and ZeRO-3 (against DeepSpeed's
    estimators; its largest module is taken to be an embedding matrix, ``vocab_size ×
    d_model``), and the activations of one micro-batch (against Megatron-LM's report,
    which at TP = 1 takes its path without sequence parallelism). The course's columns
    count the exact parameter count of the shape, as Megatron-LM does.

    Returns
    -------
    pandas.DataFrame
        ``item``, ``course_bytes`` (BF16 gradients, 16 B/param), ``course_fp32_grads_bytes``
        (the same functions with ``grad_bytes_per_param=4``), ``peer_bytes``, ``peer``.

    References
    ----------
    :func:`megatron_theoretical_memory`, :func:`deepspeed_zero_model_states_bytes` and
    their sources; Rajbhandari et al. 2020 (ZeRO); Korthikanti et al. 2022.

    Examples
    --------
    >>> t = convention_comparison("llama3-8b", 64)
    >>> t.peer.tolist()
    ['Megatron-LM', 'DeepSpeed', 'DeepSpeed', 'Megatron-LM']
    >>> bool((t.course_fp32_grads_bytes == t.peer_bytes).iloc[0])   # ZeRO-1: equal once grads are FP32
    True
    """
    m = preset(model) if isinstance(model, str) else model
    if not isinstance(m, ModelPreset):
        raise ValueError(f"model must be a preset name or a ModelPreset; got {model!r}")
    dp = integer("n_devices", n_devices, minimum=1)
    micro_batch = integer("micro_batch", micro_batch, minimum=1, maximum=_MAX_DIM)
    n = float(m.exact_params())
    report = megatron_theoretical_memory(m.n_layers, m.d_model, m.n_heads, m.ffn_dim, m.vocab_size, m.seq_len,
                                         n_kv_heads=m.n_kv_heads, swiglu=True, dp=dp, micro_batch=micro_batch,
                                         distributed_optimizer=True, untie_embeddings=True,
                                         normalization="RMSNorm", sequence_parallel=False, recompute=recompute)
    act = activation_bytes(m.n_layers, m.seq_len, micro_batch, m.d_model, m.n_heads, recompute=recompute,
                           **activation_options(m))
    fp32 = PEER_GRAD_BYTES_PER_PARAM
    rows = [("state, ZeRO-1 = Megatron distributed optimizer", zero_bytes_per_device(n, dp, 1),
             zero_bytes_per_device(n, dp, 1, grad_bytes_per_param=fp32), report.weight_and_optimizer_bytes,
             "Megatron-LM")]
    for stage, extra in ((2, {}), (3, {"largest_layer_params": float(m.vocab_size * m.d_model)})):
        rows.append((f"state, ZeRO-{stage}", zero_bytes_per_device(n, dp, stage),
                     zero_bytes_per_device(n, dp, stage, grad_bytes_per_param=fp32),
                     deepspeed_zero_model_states_bytes(n, dp, stage, **extra), "DeepSpeed"))
    rows.append((f"activations, 1 micro-batch, {recompute} recompute", act, act, report.activation_bytes,
                 "Megatron-LM"))
    return pd.DataFrame(rows, columns=["item", "course_bytes", "course_fp32_grads_bytes", "peer_bytes", "peer"])


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
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    n_expert_groups: int = 0
    n_limited_groups: int = 0

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model (``n_experts > 0``)."""
        return self.n_experts > 0

    def _shape(self) -> dict:
        if not self.is_moe:
            return {}
        mla = {k: getattr(self, k) for k in _MLA_FIELDS} if self.kv_lora_rank else {}
        return dict(head_dim=self.head_dim or None, n_experts=self.n_experts,
                    experts_per_token=self.experts_per_token, n_shared_experts=self.n_shared_experts,
                    expert_ffn_dim=self.expert_ffn_dim, n_dense_layers=self.n_dense_layers, **mla)

    def exact_params(self) -> int:
        """Parameters counted from the configuration (Llama-style, untied embeddings)."""
        return parameter_count(self.n_layers, self.d_model, self.n_heads, self.n_kv_heads,
                               self.ffn_dim, self.vocab_size, **self._shape())

    def exact_active_params(self) -> int:
        """Parameters one token uses, counted from the configuration (all of them if dense)."""
        return parameter_count(self.n_layers, self.d_model, self.n_heads, self.n_kv_heads,
                               self.ffn_dim, self.vocab_size, active=True, **self._shape())

    def __repr__(self) -> str:
        return (f"ModelPreset({self.key!r}: {self.name}, {format_count(self.n_params)} parameters, {self.n_layers} "
                f"layers, d_model {self.d_model}, {self.n_heads} heads ({self.n_kv_heads} KV), "
                f"ffn_dim {self.ffn_dim})")

    def _repr_markdown_(self) -> str:
        return (f"**{self.name}**: {format_count(self.n_params)} parameters, {self.n_layers} layers, "
                f"d_model {self.d_model:,}, {self.n_heads} heads ({self.n_kv_heads} KV heads), "
                f"ffn_dim {self.ffn_dim:,}, vocabulary {self.vocab_size:,}, sequence {self.seq_len:,} "
                f"tokens. Sources: {'; '.join(self.sources)}")


_PRESET_UNITS = {"count": 1.0, "billion": 1e9}
#: optional integer fields of a mixture-of-experts preset (0 when absent: a dense model)
_MOE_FIELDS = ("n_experts", "experts_per_token", "n_shared_experts", "expert_ffn_dim", "n_dense_layers",
               "head_dim", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "v_head_dim",
               "n_expert_groups", "n_limited_groups")
#: multi-head latent attention (DeepSeek-V2/V3) fields, passed to parameter_parts when kv_lora_rank > 0
_MLA_FIELDS = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "v_head_dim")
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


@functools.cache
def _preset_aliases() -> dict[str, str]:
    """Other names of a preset (``aliases`` rows of ``model_presets.csv``: the Llama 3.1 names), lower case."""
    df = specs.read_data_csv("model_presets.csv")
    rows = df[df.field == "aliases"]
    return {a.strip().lower(): str(k) for k, v in zip(rows.entity, rows.value) for a in str(v).split(";") if a.strip()}


def preset(name: str) -> ModelPreset:
    """Look up a model preset: ``"llama3-8b"``, ``"llama3-70b"``, ``"llama3-405b"`` (or an alias of
    ``model_presets.csv``, such as ``"llama3.1-8b"``).

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
    return specs.lookup("preset", name, _presets(), _preset_aliases())


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
    ['mixtral-8x7b', 'qwen3-235b-a22b', 'deepseek-v3']
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
                    expert_ffn_dim: int | None = None, n_dense_layers: int = 0, q_lora_rank: int = 0,
                    kv_lora_rank: int = 0, qk_rope_head_dim: int = 0, v_head_dim: int = 0) -> pd.DataFrame:
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

    Multi-head latent attention (DeepSeek-V2 §2.1, DeepSeek-V3; ``kv_lora_rank = r_kv > 0``):
    per layer ``h·r_q + r_q + r_q·a·(d + d_r)`` for the queries (``h·a·(d + d_r)`` when
    ``q_lora_rank = r_q`` is 0), ``h·(r_kv + d_r) + r_kv + r_kv·a·(d + d_v)`` for the keys
    and values and ``a·d_v·h`` for the output, with ``d = head_dim`` the non-rotary query/key
    width, ``d_r = qk_rope_head_dim`` and ``d_v = v_head_dim`` (the projections of
    DeepSeek-V3's ``inference/model.py``, ``MLA``).

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
    r_kv = integer("kv_lora_rank", kv_lora_rank, minimum=0, maximum=10**6)
    if r_kv:
        r_q = integer("q_lora_rank", q_lora_rank, minimum=0, maximum=10**6)
        d_r = integer("qk_rope_head_dim", qk_rope_head_dim, minimum=0, maximum=10**5)
        d_v = integer("v_head_dim", v_head_dim, minimum=1, maximum=10**5)
        q = (h * r_q + r_q + r_q * a * (d + d_r)) if r_q else h * a * (d + d_r)
        attention = n_layers * (q + h * (r_kv + d_r) + r_kv + r_kv * a * (d + d_v) + a * d_v * h)
    else:
        for name, x in (("q_lora_rank", q_lora_rank), ("qk_rope_head_dim", qk_rope_head_dim),
                        ("v_head_dim", v_head_dim)):
            integer(name, x, minimum=0, maximum=0)
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
                    active: bool = False, q_lora_rank: int = 0, kv_lora_rank: int = 0,
                    qk_rope_head_dim: int = 0, v_head_dim: int = 0) -> int:
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
                        expert_ffn_dim=expert_ffn_dim, n_dense_layers=n_dense_layers,
                        q_lora_rank=q_lora_rank, kv_lora_rank=kv_lora_rank,
                        qk_rope_head_dim=qk_rope_head_dim, v_head_dim=v_head_dim)
    return int(sum(int(x) for x in t["active_params" if active else "params"]))


# --------------------------------------------------------------------------- the whole job


@dataclass(frozen=True)
class JobSizing:
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
        Activations for one micro-batch with no model parallelism, if a model
        shape was given (Korthikanti et al.'s count for the preset's Llama-style
        layer, :func:`activation_options`).
    flops : float
        Training FLOPs.
    instance_days : float
        Days on one instance of the system at ``mfu``.
    grad_bytes_per_param : float
        Bytes per gradient the state was counted with (2 = BF16, the course's
        convention; 4 = FP32, Megatron-LM's and DeepSpeed's).
    n_active_params : float or None
        Parameters one token uses (a mixture-of-experts model's active count), the N that
        ``flops`` counts; None when it is ``n_params`` (a dense model). Memory follows the total.
    state_bytes_per_chip : float or None
        Training state on each chip at ``min_chips`` chips under ``zero_stage``
        (:func:`zero_bytes_per_device`; at ZeRO-3 ``state_bytes / min_chips``, also for a
        given total ``bytes_per_param``); None when it never fits.
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
    grad_bytes_per_param: float = DEFAULT_GRAD_BYTES_PER_PARAM
    state_bytes_per_chip: float | None = None
    n_active_params: float | None = None

    @property
    def active_params(self) -> float:
        """Parameters one token uses, the N of 6ND: ``n_active_params``, or all of them."""
        return self.n_params if self.n_active_params is None else self.n_active_params

    def days_on(self, n_instances: int) -> float:
        """Days on ``n_instances`` instances (perfect scaling)."""
        n_instances = integer("n_instances", n_instances, minimum=1)
        return self.instance_days / n_instances

    def __repr__(self) -> str:
        chips = "never fits" if self.min_chips is None else f"{self.min_chips}"
        return (f"JobSizing({format_count(self.n_params)} parameters, {format_count(self.n_tokens)} tokens "
                f"on {self.system}: "
                f"state {format_bytes(self.state_bytes)}, min_chips {chips}, "
                f"{format_flops(self.flops)}, {self.instance_days:,.1f} instance-days)")

    def _repr_markdown_(self) -> str:
        if self.min_chips is None:
            fit = f"never fits at ZeRO-{self.zero_stage} (shard more)"
        else:
            per = ("" if self.state_bytes_per_chip is None
                   else f", {format_bytes(self.state_bytes_per_chip)} of state per chip")
            fit = (f"at least **{self.min_chips} chips** ({self.min_systems} × {self.system}) at "
                   f"ZeRO-{self.zero_stage}{per}")
        return (f"**{format_count(self.n_params)} parameters, {format_count(self.n_tokens)} tokens**, "
                f"recipe `{self.recipe}`: "
                f"training state {format_bytes(self.state_bytes)}; {fit}; "
                f"{format_flops(self.flops)}"
                + ("" if self.n_active_params is None
                   else f" (6 × {format_count(self.n_active_params)} active parameters × D)")
                + f" = **{self.instance_days:,.1f} instance-days** at {self.mfu:.0%} MFU")


def size_job(n_params: float, n_tokens: float, *, system: str = "trn2.48xlarge",
             recipe_name: str = "bf16-adam", bytes_per_param: float | None = None,
             zero_stage: int = 3, activation_share: float = DEFAULT_ACTIVATION_SHARE,
             mfu: float | None = None, dtype: str = "bfloat16", model: ModelPreset | str | None = None,
             micro_batch: int = 1, recompute: str = "none",
             include_attention: bool = False,
             grad_bytes_per_param: float | None = None,
             n_active_params: float | None = None) -> JobSizing:
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
        0-3. Stage 3 (fully sharded) gives the lower bound on chips.
    activation_share : float
        Share of HBM kept for activations (the 35 % rule of thumb).
    mfu : float
        Assumed model FLOPs utilisation in (0, 1]: the least certain input.
    model : ModelPreset or str, optional
        A shape for the activation estimate (and the attention FLOPs term).
    grad_bytes_per_param : float, optional
        Bytes per gradient (:func:`recipe`): the recipe's own by default (2, BF16, the
        course's 16 B/param); 4 counts FP32 gradients as Megatron-LM and DeepSpeed do
        (18 B/param). Not with ``bytes_per_param``, which is already a total.
    n_active_params : float, optional
        Parameters one token uses, for the FLOPs (6·N_active·D) and instance-days: a
        mixture-of-experts model computes with its active experts only, while its memory holds
        them all. Default: the ``model``'s published active count when ``model`` is a
        mixture-of-experts preset of ``n_params`` parameters, else ``n_params``.

    References
    ----------
    Kaplan et al. 2020, arXiv:2001.08361 (C ≈ 6ND, N the parameters a token uses); Fedus et al.
    2022, Switch Transformers, arXiv:2101.03961 (a sparse model's FLOPs per token follow the
    parameters it activates, not its total).

    Examples
    --------
    70B parameters on 2T tokens, at the course's 16 B/param and at the peers' 18 (the seeds'
    worked example assumes MFU 40 %; the calibrated default, fitted on AWS's Trn1 runs, is lower):

    >>> from trainium_lab.units import GiB
    >>> p = size_job(70e9, 2e12, mfu=0.40)
    >>> round(p.state_bytes / GiB), p.min_chips, p.min_systems, round(p.instance_days)
    (1043, 17, 2, 2278)
    >>> round(size_job(70e9, 2e12).instance_days / p.instance_days, 2)   # 0.40 / default
    1.39
    >>> q = size_job(70e9, 2e12, grad_bytes_per_param=4)
    >>> round(q.state_bytes / GiB), q.min_chips, q.min_systems
    (1173, 19, 2)

    A mixture-of-experts model: memory from its 235B parameters, FLOPs from its 22B active ones:

    >>> m = size_job(235e9, 1e12, model="qwen3-235b-a22b")
    >>> m.active_params / 1e9, f"{m.flops:.3g}", round(m.state_bytes / GiB)
    (22.0, '1.32e+23', 3502)
    """
    n_params = _n_params(n_params)
    n_tokens = positive("n_tokens", n_tokens)
    mfu = _mfu(mfu)
    stage = integer("zero_stage", zero_stage, minimum=0, maximum=3)
    if bytes_per_param is not None and grad_bytes_per_param is not None:
        raise ValueError("bytes_per_param is the total and already includes the gradients: "
                         "give bytes_per_param or grad_bytes_per_param, not both")
    r = recipe(recipe_name, grad_bytes_per_param)
    bpp = r.bytes_per_param if bytes_per_param is None else bytes_per_param
    state = training_state_bytes(n_params, bpp)
    sysm = specs.system(system)
    usable = usable_state_bytes_per_chip(sysm.chip, activation_share)
    if bytes_per_param is not None and stage == 3:
        chips: int | None = min_chips_for_state(state, sysm.chip, activation_share)
    else:
        chips = min_chips_zero(n_params, stage, sysm.chip, recipe_name=r.key,
                               activation_share=activation_share,
                               grad_bytes_per_param=r.gradients)
    if chips is None:
        per_chip = None
    elif stage == 3:  # everything sharded: the state divides evenly (also a given total)
        per_chip = state / chips
    else:
        per_chip = zero_bytes_per_device(n_params, chips, stage, r.optimizer_bytes_per_param,
                                         weight_bytes_per_param=r.weights,
                                         grad_bytes_per_param=r.gradients)
    shape = preset(model) if isinstance(model, str) else model
    if shape is not None:
        instance("model", shape, ModelPreset, "a preset name, a ModelPreset or None")
    act = None
    if shape is not None:
        act = activation_bytes(shape.n_layers, shape.seq_len, micro_batch, shape.d_model,
                               shape.n_heads, recompute=recompute, **activation_options(shape))
    if n_active_params is None:
        same_model = shape is not None and abs(n_params - shape.n_params) <= 1e-9 * shape.n_params
        active = float(shape.n_active_params) if same_model and shape.n_active_params else None
    else:
        active = in_range("n_active_params", n_active_params, 0.0, n_params, low_open=True)
    n_compute = n_params if active is None else active
    if include_attention and shape is not None:
        flops = training_flops(n_compute, n_tokens, include_attention=True,
                               n_layers=shape.n_layers, seq_len=shape.seq_len,
                               d_model=shape.d_model)
    else:
        flops = training_flops(n_compute, n_tokens)
    return JobSizing(
        n_params=n_params, n_tokens=n_tokens, system=sysm.key, recipe=r.key, zero_stage=stage,
        mfu=mfu, activation_share=float(activation_share), state_bytes=state,
        usable_bytes_per_chip=usable, min_chips=chips,
        min_systems=None if chips is None else min_systems(chips, sysm),
        activation_bytes_per_chip=act, flops=flops,
        instance_days=instance_days(flops, mfu, sysm, dtype),
        grad_bytes_per_param=float(r.gradients), state_bytes_per_chip=per_chip,
        n_active_params=None if active is None or active == n_params else active)


def job_memory_table(job: JobSizing) -> pd.DataFrame:
    """One chip's HBM under a job's sizing, as rows for a bar chart (GiB).

    Rows: the chip's HBM; the state per chip at ``job.min_chips`` chips
    (or the unsharded state if it never fits), counted with the job's gradient
    bytes; the activation reserve of the 35 % rule; the activation estimate for
    one micro-batch with no model parallelism, when the job has a model shape.

    Returns
    -------
    pandas.DataFrame
        Columns ``item``, ``gib``, ``kind`` ("available", "needed", "reserve").

    Examples
    --------
    >>> job_memory_table(size_job(8e9, 1e12)).item.tolist()[:2]
    ['HBM of one chip', 'state per chip (2 chips, ZeRO-3)']
    """
    instance("job", job, JobSizing, "a JobSizing from size_job(...)")
    sysm = specs.system(job.system)
    hbm = sysm.chip.hbm_bytes
    if job.min_chips is None or job.state_bytes_per_chip is None:
        state_item, state_bytes = "state (does not fit at any DP degree)", job.state_bytes
    else:
        state_bytes = job.state_bytes_per_chip
        state_item = (f"state per chip ({job.min_chips} chip{'s' if job.min_chips != 1 else ''}, "
                      f"ZeRO-{job.zero_stage})")
    rows = [("HBM of one chip", hbm, "available"), (state_item, state_bytes, "needed"),
            (f"activation reserve ({job.activation_share:.0%} of HBM)",
             hbm * job.activation_share, "reserve")]
    if job.activation_bytes_per_chip is not None:
        rows.append(("activations, 1 micro-batch, no TP", job.activation_bytes_per_chip, "needed"))
    return pd.DataFrame([{"item": i, "gib": b / GiB, "kind": k} for i, b, k in rows])


#: the old names, kept for callers written before issue 13 ("plan" now means only the layout
#: planner's result, :class:`trainium_lab.layouts.Plan`)
SizingPlan = JobSizing
plan_memory_table = job_memory_table
