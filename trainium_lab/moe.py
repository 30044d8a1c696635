"""Mixture of experts: what an MoE layer stores, where its tokens go, and what moving them costs.

A mixture-of-experts (MoE) layer replaces a transformer layer's MLP by ``E`` expert MLPs
and a router. The router scores every token against every expert and sends it to the
``k`` best (top-k); the layer's output is the gate-weighted sum of those experts' outputs.
So an MoE model **stores** all its experts (memory follows the total parameter count)
but **computes** with ``k`` of them per token (FLOPs follow the active count).

Spreading the experts over ranks is *expert parallelism* (EP): each of ``ep`` ranks holds
``E / ep`` experts of every MoE layer, so every token must travel to the ranks that hold
its experts and back: an **all-to-all** *dispatch* before the experts and a *combine*
after them, in the forward pass and again (as gradients) in the backward pass.

This module answers, in base units (bytes, s, FLOPs, FLOP/s):

* **parameters** -- :func:`parameter_table` (total and active, part by part, from
  :func:`trainium_lab.sizing.parameter_parts`), :func:`custom_moe_model`;
* **memory under EP and TP** -- :func:`expert_memory` (weights, gradients and optimizer
  state per rank, experts split over ``tp·pp·ep`` ranks and the rest over ``tp·pp``);
* **routing** -- :func:`expert_capacity_tokens` (a capacity factor's buffer per expert),
  :func:`router_popularity` (a skewed router at a given imbalance),
  :func:`expected_dropped_fraction` (the closed form, where one exists) and
  :func:`simulate_routing` (a seeded simulation of the router);
* **dispatch and combine** -- :func:`dispatch_bytes`, :func:`all_to_all_s` (a ring on
  Trainium2's NeuronLink ring and torus, a direct exchange through Trainium3's switch and
  over EFA, with :mod:`trainium_lab.collectives`' formulas) and :func:`all_to_all_table`
  (one all-to-all at every level of a system);
* **compute** -- :func:`flops_per_token` and :func:`step_compute` (the FLOPs of the
  active parameters per chip).
* **expert parallelism as Neuron runs it** -- :func:`ep_exchange_bytes`, :func:`ep_byte_ratio`,
  :func:`ep_exchange_s`, :func:`ep_exchange_table` (NxD's all-gather + reduce-scatter against
  the all-to-all, about ``ep/k`` times the bytes) and :func:`fabric_readings_table` (one
  all-to-all under each reading of the Trn2 and Trn3 fabrics);
* **dropless MoE and balance** -- :func:`blockwise_blocks`, :func:`blockwise_compute_factor`
  (NxD's blockwise matmul), :func:`load_balancing_loss`, :func:`router_z_loss`,
  :func:`aux_free_bias_update`.

The layout planner (:func:`trainium_lab.layouts.plan`) uses these functions for the
fourth degree, ``ep``.

References
----------
N. Shazeer et al., "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts
Layer", ICLR 2017 (top-k gating). D. Lepikhin et al., "GShard", arXiv:2006.16668 (2020), §2.2
(expert capacity, dispatch and combine as all-to-all). W. Fedus, B. Zoph, N. Shazeer, "Switch
Transformers", JMLR 23 (2022), arXiv:2101.03961, §2.2 (capacity factor, dropped tokens).
A. Q. Jiang et al., "Mixtral of Experts", arXiv:2401.04088 (2024). S. Rajbhandari et al.,
"DeepSpeed-MoE", ICML 2022, arXiv:2201.05596, §5 (expert-parallel and expert-data-parallel
groups). W. Kool, H. van Hoof, M. Welling, "Stochastic Beams and Where to Find Them: the
Gumbel-Top-k Trick", ICML 2019 (sampling k experts without replacement).

Examples
--------
>>> t = parameter_table("mixtral-8x7b")
>>> round(int(t.params.sum()) / 1e9, 1), round(int(t.active_params.sum()) / 1e9, 1)
(46.7, 12.9)
>>> expert_capacity_tokens(4096, 8, experts_per_token=2, capacity_factor=1.25)
1280
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainium_lab import collectives, cores, specs, topology
from trainium_lab._validate import choice, finite_number, in_range, integer, positive, sequence
from trainium_lab import sizing
from trainium_lab.sizing import ModelPreset, parameter_count, parameter_parts, recipe, resolve_model
from trainium_lab.units import GiB

__all__ = [
    "ExpertMemory", "RoutingResult", "StepCompute",
    "parameter_table", "custom_moe_model", "activation_ffn_dim",
    "expert_memory", "expert_capacity_tokens", "router_popularity", "expected_dropped_fraction",
    "simulate_routing", "dispatch_bytes", "all_to_all_s", "all_to_all_table",
    "flops_per_token", "step_compute",
    "EP_DISPATCH_METHODS", "EXCHANGE_METHODS", "dispatch_stacks", "dispatch_exchange", "ep_exchange_bytes", "ep_byte_ratio", "ep_exchange_s", "ep_exchange_table",
    "blockwise_blocks", "blockwise_compute_factor",
    "load_balancing_loss", "router_z_loss", "aux_free_bias_update", "fabric_readings_table",
]

#: largest token count the routing functions take (a simulation holds tokens × experts scores)
MAX_TOKENS = 2**22
#: largest tokens × experts × trials a simulation draws (about a second of work)
MAX_DRAWS = 2**27


# --------------------------------------------------------------------- the model


_model = resolve_model


def _moe(model) -> ModelPreset:
    m = _model(model)
    if not m.is_moe:
        raise ValueError(f"model must be a mixture-of-experts model; {m.name} is dense "
                         "(try 'mixtral-8x7b' or 'qwen3-235b-a22b')")
    return m


@functools.lru_cache(maxsize=256)
def _parts(m: ModelPreset) -> pd.DataFrame:
    return parameter_parts(m.n_layers, m.d_model, m.n_heads, m.n_kv_heads, m.ffn_dim, m.vocab_size,
                           **m._shape())


@functools.lru_cache(maxsize=256)
def _split(m: ModelPreset) -> tuple[float, float, float, float]:
    """``(non_expert, routed, active, routed_active)`` parameters, scaled to the nominal ``n_params``.

    The split comes from the exact count of the configuration; it is applied to the
    nominal total so that a dense model gives ``(n_params, 0, n_params, 0)`` exactly.
    """
    n = float(m.n_params)
    if not m.is_moe:
        return n, 0.0, n, 0.0
    t = _parts(m).set_index("part")
    total = float(t["params"].sum())
    routed = n * float(t.loc["routed_experts", "params"]) / total
    routed_active = n * float(t.loc["routed_experts", "active_params"]) / total
    active = n * float(t["active_params"].sum()) / total
    return n - routed, routed, active, routed_active


def parameter_table(model) -> pd.DataFrame:
    """A model's parameters part by part: stored (total) and used by one token (active).

    Parameters
    ----------
    model : str or ModelPreset
        A preset name (``"mixtral-8x7b"``, ``"qwen3-235b-a22b"``, any dense preset) or a
        :class:`~trainium_lab.sizing.ModelPreset` (see :func:`custom_moe_model`).

    Returns
    -------
    pandas.DataFrame
        ``part, params, active_params, share_of_total, share_of_active`` (exact counts
        from :func:`trainium_lab.sizing.parameter_parts`).

    References
    ----------
    Jiang et al. 2024 (Mixtral), §2; Fedus et al. 2022, §2.

    Examples
    --------
    >>> t = parameter_table("qwen3-235b-a22b").set_index("part")
    >>> [round(float(t.loc["routed_experts", c]), 3) for c in ("share_of_total", "share_of_active")]
    [0.966, 0.64]
    """
    t = _parts(_model(model)).copy()
    t["share_of_total"] = t["params"] / t["params"].sum()
    t["share_of_active"] = t["active_params"] / t["active_params"].sum()
    return t


def custom_moe_model(name: str, *, n_layers: int, d_model: int, n_heads: int, n_experts: int,
                     experts_per_token: int, expert_ffn_dim: int, n_kv_heads: int | None = None,
                     n_shared_experts: int = 0, n_dense_layers: int = 0, ffn_dim: int | None = None,
                     head_dim: int | None = None, vocab_size: int = 32000,
                     seq_len: int = 4096) -> ModelPreset:
    """A mixture-of-experts model of your own, usable wherever a preset name is.

    Total and active parameters are counted from the configuration
    (:func:`trainium_lab.sizing.parameter_count`).

    Parameters
    ----------
    name : str
        A label.
    n_layers, d_model, n_heads : int
        Layers, hidden size, attention heads.
    n_experts, experts_per_token, expert_ffn_dim : int
        Routed experts per MoE layer, experts per token (top-k), width of one expert.
    n_kv_heads : int, optional
        Key/value heads; default ``n_heads``.
    n_shared_experts : int
        Experts every token uses (same width), default 0.
    n_dense_layers : int
        Leading layers with a dense MLP of width ``ffn_dim`` (default 0).
    ffn_dim : int, optional
        Dense MLP width, default ``4 · d_model``.
    head_dim : int, optional
        Attention head size, default ``d_model / n_heads``.
    vocab_size, seq_len : int

    Examples
    --------
    >>> m = custom_moe_model("toy", n_layers=16, d_model=2048, n_heads=16, n_experts=64,
    ...                      experts_per_token=6, expert_ffn_dim=1024, n_shared_experts=2)
    >>> round(m.n_params / 1e9, 2), round(m.n_active_params / 1e9, 2)
    (7.05, 1.21)
    """
    integer("n_experts", n_experts, minimum=1, maximum=10**5)
    integer("expert_ffn_dim", expert_ffn_dim, minimum=1, maximum=10**8)
    return _custom_preset(name, n_layers, d_model, n_heads, n_kv_heads, ffn_dim, vocab_size, seq_len,
                          head_dim=head_dim, n_experts=n_experts, experts_per_token=experts_per_token,
                          n_shared_experts=n_shared_experts, expert_ffn_dim=expert_ffn_dim,
                          n_dense_layers=n_dense_layers)


def _custom_preset(name: str, n_layers: int, d_model: int, n_heads: int, n_kv_heads: int | None,
                   ffn_dim: int | None, vocab_size: int, seq_len: int, n_params: float | None = None,
                   **shape) -> ModelPreset:
    """A Llama-style model of your own from its shape: the one builder behind
    :func:`custom_moe_model` (``shape`` holds the experts) and
    :func:`trainium_lab.layouts.custom_model` (dense; ``n_params`` may replace the count).

    Defaults: ``n_kv_heads = n_heads``, ``ffn_dim = 4 · d_model``; parameters counted by
    :func:`trainium_lab.sizing.parameter_count` (total, and active for an MoE model).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    kv = n_heads if n_kv_heads is None else n_kv_heads
    f = 4 * integer("d_model", d_model, minimum=1, maximum=10**7) if ffn_dim is None else ffn_dim
    total = parameter_count(n_layers, d_model, n_heads, kv, f, vocab_size, **shape)
    seq_len = integer("seq_len", seq_len, minimum=1, maximum=10**8)
    n = float(total) if n_params is None else positive("n_params", n_params)
    experts = {}
    if shape:
        active = parameter_count(n_layers, d_model, n_heads, kv, f, vocab_size, active=True, **shape)
        experts = dict(n_experts=int(shape["n_experts"]), experts_per_token=int(shape["experts_per_token"]),
                       n_shared_experts=int(shape["n_shared_experts"]),
                       expert_ffn_dim=int(shape["expert_ffn_dim"]), n_dense_layers=int(shape["n_dense_layers"]),
                       head_dim=int(shape["head_dim"] or 0), n_active_params=float(active))
    return ModelPreset(key=name, name=name, n_params=n, n_layers=int(n_layers), d_model=int(d_model),
                       n_heads=int(n_heads), n_kv_heads=int(kv), ffn_dim=int(f), vocab_size=int(vocab_size),
                       seq_len=seq_len, sources=("custom",), **experts)


def activation_ffn_dim(model, capacity_factor: float = 1.0) -> int:
    """The MLP width whose activations a dense layer would store like this model's MLPs do.

    A token's activations in an MoE layer are those of the ``k`` experts it visits
    (plus the shared experts): per token, ``(c·k + n_shared) · f_e`` MLP units, where the
    capacity factor ``c`` pads each expert's buffer. Averaged over the layers (dense
    layers keep ``ffn_dim``) and rounded up, it can stand in for ``ffn_dim`` in an
    activation formula written for a dense MLP. A dense model returns ``ffn_dim``.

    Examples
    --------
    >>> activation_ffn_dim("mixtral-8x7b"), activation_ffn_dim("qwen3-235b-a22b", 1.25)
    (28672, 15360)
    """
    m = _model(model)
    c = in_range("capacity_factor", capacity_factor, 1.0, 16.0)
    if not m.is_moe:
        return m.ffn_dim
    moe_layers = m.n_layers - m.n_dense_layers
    width = (m.n_dense_layers * m.ffn_dim
             + moe_layers * (c * m.experts_per_token + m.n_shared_experts) * m.expert_ffn_dim) / m.n_layers
    return int(math.ceil(width - 1e-9))


def _activation_model(m: ModelPreset, capacity_factor: float) -> ModelPreset:
    """``m`` with ``ffn_dim`` replaced by :func:`activation_ffn_dim` (for activation formulas)."""
    if not m.is_moe:
        return m
    return dataclasses.replace(m, ffn_dim=activation_ffn_dim(m, capacity_factor))


# --------------------------------------------------------------------- memory under EP and TP


def _state_per_rank(non_expert: float, routed: float, tp, pp, dp, ep, zero, r, etp=None):
    """Weights, gradients and optimizer bytes per rank (numpy arrays or floats).

    Experts are split over ``etp·pp·ep`` ranks (``etp``, the experts' own TP degree,
    defaults to ``tp``) and replicated over ``dp·tp/etp``; everything else over ``tp·pp``,
    replicated over ``dp·ep`` (the expert-parallel ranks see different tokens, so for the
    attention layers they are data-parallel replicas). ZeRO shards each part over its own
    replicas (Rajbhandari et al. 2020 and 2022).
    """
    etp = tp if etp is None else etp
    per_dense = non_expert / (tp * pp)
    per_expert = routed / (etp * pp * ep)
    expert_replicas = dp * (tp / etp)
    replicas = dp * ep
    out = []
    for b, stage in ((r.weights, 3), (r.gradients, 2), (r.optimizer_bytes_per_param, 1)):
        sharded = zero >= stage
        out.append(b * per_dense / np.where(sharded, replicas, 1.0)
                   + b * per_expert / np.where(sharded, expert_replicas, 1.0))
    return out[0], out[1], out[2], per_dense, per_expert


@dataclass(frozen=True)
class ExpertMemory:
    """Training state per rank of an MoE model under TP, PP, DP, EP and ZeRO (bytes).

    Attributes
    ----------
    model : ModelPreset
    tp, pp, dp, ep, zero_stage : int
    experts_per_rank : float
        Routed experts of each MoE layer a rank holds (``n_experts / ep``), each split over ``tp``.
    non_expert_params, expert_params : float
        Parameters per rank: attention, embeddings, norms, router (and shared experts) over
        ``tp·pp``; routed experts over ``tp·pp·ep``.
    weights_bytes, gradients_bytes, optimizer_bytes : float
        Per rank, after ZeRO.
    expert_state_bytes, non_expert_state_bytes : float
        The same state split by part.
    """

    model: ModelPreset
    tp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    experts_per_rank: float
    non_expert_params: float
    expert_params: float
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    expert_state_bytes: float
    non_expert_state_bytes: float

    @property
    def state_bytes(self) -> float:
        """Weights + gradients + optimizer state per rank."""
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes

    def _repr_markdown_(self) -> str:
        return (f"**{self.model.name}**, TP {self.tp} × PP {self.pp} × DP {self.dp} × EP {self.ep}, "
                f"ZeRO-{self.zero_stage}: {self.experts_per_rank:g} experts per MoE layer per rank; "
                f"{self.expert_params / 1e9:.2f} B expert + {self.non_expert_params / 1e9:.2f} B other "
                f"parameters per rank; state **{self.state_bytes / GiB:.1f} GiB** per rank "
                f"({self.expert_state_bytes / GiB:.1f} GiB of it experts)")


def expert_memory(model, *, tp: int = 1, ep: int = 1, pp: int = 1, dp: int = 1, zero_stage: int = 1,
                  recipe_name: str = "bf16-adam") -> ExpertMemory:
    """Parameters and training state per rank when experts are split over ``ep`` ranks.

    Per rank, with Ψ_e routed-expert and Ψ_o other parameters and recipe bytes
    ``w, g, K`` (weights, gradients, optimizer): weights ``w·Ψ_o/(tp·pp) + w·Ψ_e/(tp·pp·ep)``,
    the same for gradients and optimizer state; ZeRO stage ≥ 1 shards the optimizer
    term of Ψ_o over ``dp·ep`` replicas and that of Ψ_e over ``dp`` (stage 2 also the
    gradients, stage 3 also the weights).

    Parameters
    ----------
    model : str or ModelPreset
        An MoE model (a dense model is accepted with ``ep = 1``).
    tp, ep, pp, dp : int
        Degrees in ranks; ``ep`` must divide the experts.
    zero_stage : int
        0 to 3.
    recipe_name : str
        Precision recipe (:data:`trainium_lab.sizing.RECIPES`).

    References
    ----------
    Rajbhandari et al. 2022 (DeepSpeed-MoE), §5 (expert and expert-data parallelism);
    Rajbhandari et al. 2020 (ZeRO), §5.

    Examples
    --------
    >>> from trainium_lab.units import GiB
    >>> one = expert_memory("mixtral-8x7b", tp=8, ep=1, dp=8)
    >>> spread = expert_memory("mixtral-8x7b", tp=8, ep=8, dp=1)   # same 64 ranks
    >>> round(one.state_bytes / GiB, 1), round(spread.state_bytes / GiB, 1)
    (29.9, 11.5)
    """
    m = _model(model)
    tp = integer("tp", tp, minimum=1, maximum=10**6)
    ep = integer("ep", ep, minimum=1, maximum=10**6)
    pp = integer("pp", pp, minimum=1, maximum=m.n_layers)
    dp = integer("dp", dp, minimum=1, maximum=10**7)
    zero_stage = integer("zero_stage", zero_stage, minimum=0, maximum=3)
    r = recipe(recipe_name)
    if not m.is_moe and ep != 1:
        raise ValueError(f"ep must be 1 for {m.name}: it is a dense model with no experts to split")
    if m.is_moe and m.n_experts % ep:
        raise ValueError(f"ep must divide n_experts ({m.n_experts}) of {m.name}; got ep={ep}")
    non_expert, routed, _, _ = _split(m)
    args = (float(tp), float(pp), float(dp), float(ep), np.array(zero_stage), r)
    w, g, o, per_dense, per_expert = _state_per_rank(non_expert, routed, *args)
    dense_only = _state_per_rank(non_expert, 0.0, *args)
    dense_state = float(dense_only[0] + dense_only[1] + dense_only[2])
    total = float(w) + float(g) + float(o)
    return ExpertMemory(m, tp, pp, dp, ep, zero_stage, (m.n_experts / ep) if m.is_moe else 0.0,
                        float(per_dense), float(per_expert), float(w), float(g), float(o),
                        total - dense_state, dense_state)


# --------------------------------------------------------------------- routing and capacity


def expert_capacity_tokens(n_tokens: int, n_experts: int, experts_per_token: int = 1,
                           capacity_factor: float = 1.0) -> int:
    """Tokens one expert's buffer holds: ``⌈c · T · k / E⌉``.

    With ``T`` tokens in a batch, each sent to ``k`` of ``E`` experts, a perfectly
    balanced router gives every expert ``T·k/E``; the capacity factor ``c`` adds
    headroom. Tokens routed to a full expert are dropped (they skip the layer through
    the residual connection).

    References
    ----------
    Fedus et al. 2022 (Switch Transformers), §2.2, eq. (3): expert capacity =
    (tokens per batch / number of experts) × capacity factor (top-1); Lepikhin et al.
    2020 (GShard), §2.2: capacity 2N/E for top-2; Megatron-Core
    (NVIDIA/Megatron-LM, ``megatron/core/transformer/moe/moe_utils.py``): ``get_capacity``
    called with ``num_tokens × topk``, the same ``⌈c · T · k / E⌉``. Without a capacity
    factor Megatron-Core is *dropless*: no buffer, nothing dropped.

    Examples
    --------
    >>> expert_capacity_tokens(1024, 16), expert_capacity_tokens(1024, 16, 2, 1.25)
    (64, 160)
    """
    t = integer("n_tokens", n_tokens, minimum=1, maximum=MAX_TOKENS)
    e = integer("n_experts", n_experts, minimum=1, maximum=10**5)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=e)
    c = in_range("capacity_factor", capacity_factor, 0.0, 1e3, low_open=True)
    return int(math.ceil(c * t * k / e - 1e-9))


@functools.lru_cache(maxsize=1024)
def _zipf_exponent(n_experts: int, imbalance: float) -> float:
    if imbalance == 1.0:
        return 0.0
    ranks = np.arange(1, n_experts + 1, dtype=float)

    def ratio(s: float) -> float:
        w = ranks ** -s
        return n_experts / float(w.sum())

    lo, hi = 0.0, 1.0
    while ratio(hi) < imbalance:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(mid) < imbalance else (lo, mid)
    return 0.5 * (lo + hi)


def router_popularity(n_experts: int, imbalance: float = 1.0) -> np.ndarray:
    """Share of tokens a skewed router sends to each expert, hottest first.

    A Zipf profile ``p_e ∝ e^(−s)`` (``e = 1 … E``) whose exponent ``s`` is chosen so that
    the hottest expert gets ``imbalance`` times the mean share: ``E · p_1 = imbalance``.
    ``imbalance = 1`` is a perfectly balanced router. It is a model of a skewed router
    (an assumption), not a measured one.

    Parameters
    ----------
    n_experts : int
        E (>= 1).
    imbalance : float
        Hottest expert's share over the mean share, in [1, E).

    Returns
    -------
    numpy.ndarray
        ``E`` shares summing to 1, in decreasing order.

    Examples
    --------
    >>> p = router_popularity(8, 2.0)
    >>> round(float(p[0] * 8), 6), round(float(p.sum()), 12), bool((np.diff(p) <= 0).all())
    (2.0, 1.0, True)
    """
    e = integer("n_experts", n_experts, minimum=1, maximum=10**5)
    if e == 1:
        in_range("imbalance", imbalance, 1.0, 1.0)
        return np.ones(1)
    imb = in_range("imbalance", imbalance, 1.0, float(e), high_open=True)
    s = _zipf_exponent(e, imb)
    w = np.arange(1, e + 1, dtype=float) ** -s
    return w / w.sum()


def _log_factorial(n: np.ndarray) -> np.ndarray:
    """``log(n!)`` for integer arrays: a table below 16, Stirling's series above (error < 1e-15)."""
    n = np.asarray(n, dtype=float)
    small = np.array([math.lgamma(i + 1.0) for i in range(16)])
    big = np.maximum(n, 16.0)
    stirling = (big * np.log(big) - big + 0.5 * np.log(2.0 * math.pi * big)
                + 1.0 / (12.0 * big) - 1.0 / (360.0 * big**3) + 1.0 / (1260.0 * big**5))
    return np.where(n < 16, small[np.minimum(n, 15).astype(int)], stirling)


def _binomial_excess(n_trials: int, p: float, capacity: int) -> float:
    """``E[(X − C)⁺]`` for ``X ~ Binomial(n, p)``: expected tokens above an expert's capacity."""
    if p <= 0.0 or capacity >= n_trials:
        return 0.0
    if p >= 1.0:
        return float(n_trials - capacity)
    mean, sd = n_trials * p, math.sqrt(n_trials * p * (1.0 - p))
    lo = max(capacity + 1, int(mean - 40.0 * sd) - 1)
    hi = min(n_trials, int(mean + 40.0 * sd) + 2)
    if lo > hi:
        return 0.0
    x = np.arange(lo, hi + 1, dtype=float)
    logpmf = (_log_factorial(np.array([n_trials]))[0] - _log_factorial(x) - _log_factorial(n_trials - x)
              + x * math.log(p) + (n_trials - x) * math.log1p(-p))
    return float(np.sum((x - capacity) * np.exp(logpmf)))


def expected_dropped_fraction(n_tokens: int, n_experts: int, experts_per_token: int = 1,
                              capacity_factor: float = 1.0, imbalance: float = 1.0) -> float:
    """Expected share of token-to-expert assignments dropped, in closed form.

    Expert ``e`` receives ``X_e`` of the ``T`` tokens. When each token includes expert
    ``e`` independently with probability ``π_e``, ``X_e ~ Binomial(T, π_e)`` and the
    expected overflow of a buffer of ``C`` tokens is ``E[(X_e − C)⁺]``; the dropped share
    is ``Σ_e E[(X_e − C)⁺] / (T·k)``. That holds exactly for a balanced router with any
    ``k`` (``π_e = k/E``) and for top-1 routing with any skew (``π_e = p_e`` of
    :func:`router_popularity`). For a skewed top-k router with ``k > 1`` the inclusion
    probabilities of sampling without replacement have no closed form: use
    :func:`simulate_routing`.

    Parameters
    ----------
    n_tokens : int
        T, tokens routed together (one rank's micro-batch, say).
    n_experts, experts_per_token : int
        E and k.
    capacity_factor : float
        c > 0 (buffer ``⌈c·T·k/E⌉`` per expert, :func:`expert_capacity_tokens`).
    imbalance : float
        As in :func:`router_popularity`; must be 1 when ``k > 1``.

    Returns
    -------
    float
        Expected dropped assignments ÷ ``T·k``.

    References
    ----------
    Fedus et al. 2022, §2.2 (tokens beyond capacity are dropped); the binomial
    balls-into-bins model of a router that picks experts independently per token.

    Examples
    --------
    >>> round(expected_dropped_fraction(4096, 8, 2, 1.0), 4)   # ≈ σ·φ(0)·E / (T·k): 1 % at c = 1
    0.0108
    >>> expected_dropped_fraction(4096, 8, 2, 1.25) < 1e-12     # 25 % headroom: 9 standard deviations
    True
    >>> round(expected_dropped_fraction(4096, 8, 1, 1.25, imbalance=2.0), 3)
    0.104
    """
    t = integer("n_tokens", n_tokens, minimum=1, maximum=MAX_TOKENS)
    e = integer("n_experts", n_experts, minimum=1, maximum=10**5)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=e)
    cap = expert_capacity_tokens(t, e, k, capacity_factor)
    p = router_popularity(e, imbalance)
    if k > 1 and float(imbalance) != 1.0:
        raise ValueError("imbalance must be 1 for top-k routing with k > 1: a skewed router that "
                         "picks k distinct experts has no closed form (use simulate_routing)")
    probs = np.full(e, k / e) if k > 1 else p
    excess = sum(_binomial_excess(t, float(pi), cap) * n for pi, n in
                 zip(*np.unique(probs, return_counts=True)))
    return float(excess / (t * k))


@dataclass(frozen=True)
class RoutingResult:
    """A seeded simulation of a router (:func:`simulate_routing`).

    Attributes
    ----------
    n_tokens, n_experts, experts_per_token, n_trials : int
    capacity_factor, imbalance : float
    capacity_tokens : int
        Buffer per expert (:func:`expert_capacity_tokens`).
    popularity : numpy.ndarray
        The router's share per expert (hottest first).
    tokens_per_expert : numpy.ndarray
        Tokens each expert received, averaged over the trials.
    dropped_fraction, dropped_fraction_se : float
        Share of assignments dropped (mean over trials) and its standard error.
    max_over_mean : float
        Most-loaded expert over the mean load (the realised imbalance), mean over trials.
    closed_form : float or None
        :func:`expected_dropped_fraction`, where a closed form exists.
    """

    n_tokens: int
    n_experts: int
    experts_per_token: int
    n_trials: int
    capacity_factor: float
    imbalance: float
    capacity_tokens: int
    popularity: np.ndarray
    tokens_per_expert: np.ndarray
    dropped_fraction: float
    dropped_fraction_se: float
    max_over_mean: float
    closed_form: float | None

    def table(self) -> pd.DataFrame:
        """Tidy, one row per expert (hottest first): ``expert, tokens, expected_tokens,
        capacity, dropped`` (tokens above capacity, from the mean load)."""
        expected = self.n_tokens * self.experts_per_token * self.popularity
        return pd.DataFrame({"expert": np.arange(1, self.n_experts + 1),
                             "tokens": self.tokens_per_expert, "expected_tokens": expected,
                             "capacity": float(self.capacity_tokens),
                             "dropped": np.maximum(self.tokens_per_expert - self.capacity_tokens, 0.0)})

    def _repr_markdown_(self) -> str:
        cf = ("" if self.closed_form is None else f"; closed form {self.closed_form:.2%}")
        return (f"{self.n_tokens:,} tokens × top-{self.experts_per_token} over {self.n_experts} experts, "
                f"capacity {self.capacity_tokens:,} tokens each (factor {self.capacity_factor:g}), router "
                f"imbalance {self.imbalance:g}: **{self.dropped_fraction:.2%} dropped** "
                f"(± {self.dropped_fraction_se:.2%}, {self.n_trials} trials{cf}); busiest expert "
                f"{self.max_over_mean:.2f}× the mean load")


def simulate_routing(n_tokens: int, n_experts: int, experts_per_token: int = 1,
                     capacity_factor: float = 1.0, imbalance: float = 1.0, *, seed: int = 0,
                     n_trials: int = 1) -> RoutingResult:
    """Route ``T`` tokens with a seeded, skewed router and count what overflows each expert.

    Each token picks ``k`` distinct experts, sampled without replacement in proportion to
    :func:`router_popularity` (the Gumbel-top-k trick: the ``k`` largest of
    ``log p_e + Gumbel noise``, computed as the ``k`` largest of ``p_e / E_e`` with
    ``E_e ~ Exp(1)``); top-1 draws are a multinomial. Each expert keeps at most
    its capacity (:func:`expert_capacity_tokens`); the rest are dropped.

    Parameters
    ----------
    n_tokens, n_experts, experts_per_token, capacity_factor, imbalance :
        As in :func:`expected_dropped_fraction`.
    seed : int
        Seed of ``numpy.random.default_rng``.
    n_trials : int
        Independent batches; their mean and standard error are reported.

    Returns
    -------
    RoutingResult

    References
    ----------
    Kool et al. 2019 (Gumbel-top-k); Fedus et al. 2022, §2.2.

    Examples
    --------
    >>> r = simulate_routing(4096, 8, 2, 1.0, n_trials=200, seed=1)
    >>> bool(abs(r.dropped_fraction - r.closed_form) < 4 * r.dropped_fraction_se)
    True
    """
    t = integer("n_tokens", n_tokens, minimum=1, maximum=MAX_TOKENS)
    e = integer("n_experts", n_experts, minimum=1, maximum=10**5)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=e)
    cap = expert_capacity_tokens(t, e, k, capacity_factor)
    p = router_popularity(e, imbalance)
    seed = integer("seed", seed, minimum=0, maximum=2**63 - 1)
    trials = integer("n_trials", n_trials, minimum=1, maximum=100_000)
    if k > 1 and t * e * trials > MAX_DRAWS:
        raise ValueError(f"n_tokens × n_experts × n_trials must be at most {MAX_DRAWS:,} for top-k > 1 "
                         f"(got {t * e * trials:,}): fewer tokens or trials")
    rng = np.random.default_rng(seed)
    counts = np.empty((trials, e))
    if k == 1:
        counts[:] = rng.multinomial(t, p, size=trials)
    else:
        # Gumbel-top-k in its exponential form: argmax-k of log p − log E equals argmax-k of
        # p / E with E ~ Exp(1) (−log E is a standard Gumbel); float32 keeps it fast
        w = p.astype(np.float32)
        chunk = max(1, (1 << 21) // e)
        for i in range(trials):
            c = np.zeros(e, dtype=np.int64)
            for start in range(0, t, chunk):
                n = min(chunk, t - start)
                with np.errstate(divide="ignore"):  # a draw of exactly 0 makes an expert win: inf is right
                    scores = w / rng.standard_exponential(size=(n, e), dtype=np.float32)
                rows = np.arange(n)
                for _ in range(k):  # k passes of argmax: the k largest, faster than a partition
                    best = scores.argmax(axis=1)
                    c += np.bincount(best, minlength=e)
                    scores[rows, best] = -1.0
            counts[i] = c
    dropped = np.maximum(counts - cap, 0.0).sum(axis=1) / (t * k)
    se = float(dropped.std(ddof=1) / math.sqrt(trials)) if trials > 1 else float("nan")
    max_over_mean = float(np.mean(counts.max(axis=1) / (t * k / e)))
    closed = None
    if k == 1 or float(imbalance) == 1.0:
        closed = expected_dropped_fraction(t, e, k, capacity_factor, imbalance)
    return RoutingResult(t, e, k, trials, float(capacity_factor), float(imbalance), cap, p,
                         counts.mean(axis=0), float(dropped.mean()), se, max_over_mean, closed)


# --------------------------------------------------------------------- dispatch and combine


def dispatch_bytes(n_tokens: float, d_model: int, experts_per_token: int = 1, capacity_factor: float = 1.0,
                   bytes_per_element: float = 2.0) -> float:
    """Bytes one rank sends in one dispatch all-to-all (and receives back in the combine).

    Every token goes, as a ``d_model``-wide vector, to each of its ``k`` experts:
    ``T · k · h · bytes``; buffers padded to the capacity factor ``c`` carry ``c`` times
    that. A share ``1/ep`` stays on the rank (its own experts).

    References
    ----------
    Lepikhin et al. 2020 (GShard), §2.2 and Algorithm 2 (dispatch and combine tensors
    ``[E, C, M]`` exchanged by all-to-all).

    Examples
    --------
    >>> dispatch_bytes(4096, 4096, 2) / 2**20   # MiB: 4,096 tokens to 2 experts, BF16
    64.0
    """
    t = positive("n_tokens", n_tokens)
    h = integer("d_model", d_model, minimum=1, maximum=10**7)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=10**5)
    c = in_range("capacity_factor", capacity_factor, 0.0, 1e3, low_open=True)
    b = in_range("bytes_per_element", bytes_per_element, 0.0, 16.0, low_open=True)
    return t * k * h * b * c


def _a2a(level: topology.Level, n_chips: int, size: float) -> float:
    """One all-to-all phase over ``n_chips`` at ``level``: ring on a ring/torus level, direct when
    switched or over EFA."""
    collective = "all_to_all_direct" if level.name == "efa" else "all_to_all"
    return collectives._level_cost(level, n_chips, 1, size, collective, None)


def _algorithm(level: topology.Level) -> str:
    return "direct" if (level.switched or level.name == "efa") else "ring"


def _level_word(system: str, level: str) -> str:
    """A level as its system names it: a Trn3 UltraServer's ``instance`` level is a server
    (``data/systems.csv``: ``n_instances`` counts "servers")."""
    if level == "instance" and specs.fact(system, "n_instances").note == "servers":
        return "server"
    return level


def _phases(c: topology.Cluster, per_instance: int, instances: int, systems: int
            ) -> list[tuple[topology.Level, int]]:
    """The hierarchical all-to-all's phases: ``(level, participants)``, innermost first.

    A group of ``per_instance`` chips in each of ``instances`` instances of each of ``systems``
    systems exchanges first inside each instance, then across instances, then across systems
    (dimension by dimension, as DeepSpeed-MoE's hierarchical all-to-all does). Consecutive
    levels served by the same switched link (Trainium3's NeuronSwitch) form one phase.
    """
    phases: list[tuple[topology.Level, int]] = []
    for name, n in (("instance", per_instance), ("ultraserver", instances), ("efa", systems)):
        if n <= 1:
            continue
        level = c.level(name)
        if phases and phases[-1][0].switched and level.switched and phases[-1][0].link_key == level.link_key:
            phases[-1] = (level, phases[-1][1] * n)
        else:
            phases.append((level, n))
    return phases


def _packed_shape(c: topology.Cluster, n_chips: int) -> tuple[int, int, int]:
    """Chips per instance, instances per system and systems of a group of ``n_chips`` packed chips."""
    per_instance = min(n_chips, c.chips_per_instance)
    instances = min(-(-n_chips // c.chips_per_instance), c.instances_per_system)
    systems = -(-n_chips // c.chips_per_system)
    return per_instance, instances, systems


def _a2a_group(c: topology.Cluster, shape: tuple[int, int, int], size: float, hierarchical: bool = True,
               phase=_a2a) -> float:
    """Seconds for one all-to-all of ``size`` bytes per chip over a group of the given shape;
    ``phase(level, n_chips, size)`` costs one phase (the layout planner swaps in its torus model)."""
    phases = _phases(c, *shape)
    if not phases:
        return 0.0
    if not hierarchical:  # chapter 03's model: one ring (or exchange) over all chips at the slowest level
        n = shape[0] * shape[1] * shape[2]
        return phase(phases[-1][0], n, size)
    return sum(phase(level, n, size) for level, n in phases)


def _torus_level(c: topology.Cluster, level: topology.Level) -> bool:
    """Whether ``level`` is the square 2D torus inside an instance (Trn1, Trn2; not Trn3's switch)."""
    return level.name == "instance" and collectives._square_torus(c)


def _own_links_phase(c: topology.Cluster):
    """The all-to-all phase over shortest torus paths on the group's own links inside a 2D-torus
    instance, ``(n−1)/n · h̄ · S/B_own`` (collectives.torus_average_hops,
    torus_group_bytes_per_s); other levels as :func:`_a2a`. The layout planner's
    ``torus="own-links"`` and :func:`fabric_readings_table` share it."""
    def phase(level: topology.Level, n: int, size: float) -> float:
        if not _torus_level(c, level):
            return _a2a(level, n, size)
        bw = collectives.torus_group_bytes_per_s(n, c.system)
        return (n - 1) / n * collectives.torus_average_hops(n, c.grid_side) * size / bw
    return phase


def all_to_all_s(size_bytes: float, n_chips: int, system: str = "trn2-ultraserver", *,
                 hierarchical: bool = True) -> float:
    """Seconds for one dispatch (or combine) all-to-all over ``n_chips`` packed chips.

    Each chip holds ``size_bytes``, ``1/n`` for each peer. The exchange runs level by level
    (*hierarchical* all-to-all, Rajbhandari et al. 2022 §5.3): inside each instance, then
    between the instances of a system, then between systems, each phase moving the whole
    buffer once. On a NeuronLink ring or torus (Trainium2) a phase is a ring all-to-all
    (:func:`trainium_lab.collectives.ring_all_to_all_s`, ``(n−1)/2 · S/B``, messages cross
    several links; an upper bound for a 2D torus: on Trn2's 4×4 torus the 15 peers are 32/15
    hops away on average, about ``2 · S/B`` if the per-chip figure splits evenly over four
    links, which AWS does not state); through Trainium3's NeuronSwitch (one phase
    for the whole switched domain) and over EFA (a switched network) a direct exchange
    (:func:`trainium_lab.collectives.direct_all_to_all_s`, ``(n−1)/n · S/B``). ``B`` is each
    level's per-chip bandwidth, the latency its published one (EFA only).
    ``hierarchical=False`` gives chapter 03's single ring over every chip at the slowest level.

    Parameters
    ----------
    size_bytes : float
        Bytes each chip sends in the all-to-all (all its ranks' tokens, :func:`dispatch_bytes`).
    n_chips : int
        Chips in the expert-parallel group, packed (a whole instance before the next).
    system : str
        A system of :data:`trainium_lab.topology.SYSTEMS`.
    hierarchical : bool
        Level by level (default) or one ring over all chips at the slowest level.

    References
    ----------
    Grama et al. 2003, §4.5 (all-to-all on a ring and on a fully connected network);
    S. Rajbhandari et al., "DeepSpeed-MoE", arXiv:2201.05596 (2022), §5.3 (hierarchical
    all-to-all); AWS Neuron docs, "Amazon EC2 Trn2 Architecture" and "Amazon EC2 Trn3 Architecture".

    Examples
    --------
    >>> ring = all_to_all_s(64 * 2**20, 16, "trn2-ultraserver")        # one instance: a ring of 16
    >>> switch = all_to_all_s(64 * 2**20, 16, "trn3-gen1-ultraserver")  # the same group through a switch
    >>> round(ring / switch, 1)   # n/2 = 8 × at equal bandwidth, × 2.5 for Trn3's faster links
    20.0
    >>> flat = all_to_all_s(64 * 2**20, 64, "trn2-ultraserver", hierarchical=False)
    >>> round(flat / all_to_all_s(64 * 2**20, 64, "trn2-ultraserver"), 1)   # 31.5 hops on the slow ring
    9.3
    """
    size = positive("size_bytes", size_bytes, allow_zero=True)
    n = integer("n_chips", n_chips, minimum=1, maximum=10**7)
    if hierarchical not in (True, False):
        raise ValueError(f"hierarchical must be True or False, got {hierarchical!r}")
    base = _chip_cluster(system, 1)
    c = _chip_cluster(system, -(-n // base.chips_per_system))
    return _a2a_group(c, _packed_shape(c, n), size, hierarchical)


def _chip_cluster(system: str, n_systems: int) -> topology.Cluster:
    """A cluster counted in chips: the LNC setting does not matter, so take the chip's default or first."""
    return topology.cluster(system, n_systems, cores.any_lnc(specs.system(system).chip_key))


def all_to_all_table(model, *, tokens_per_chip: int = 8192, ep_chips: tuple[int, ...] = (4, 16, 64, 128),
                     systems: tuple[str, ...] = ("trn2-ultraserver", "trn3-gen1-ultraserver"),
                     capacity_factor: float = 1.0, bytes_per_element: float = 2.0, mfu: float | None = None,
                     dtype: str = "bfloat16") -> pd.DataFrame:
    """What dispatch and combine cost at every level an expert-parallel group can cross.

    For each system and each EP group of ``n`` chips (packed, so it crosses the
    fastest level that holds ``n`` chips: :meth:`trainium_lab.topology.Cluster.crossing_level`),
    one MoE layer's four all-to-alls of a training step (dispatch and combine forward,
    their gradients backward; :func:`all_to_all_s`, level by level) for ``tokens_per_chip``
    tokens per chip, against the experts' own compute for those tokens at ``mfu`` of the
    chip's peak.

    Returns
    -------
    pandas.DataFrame
        ``system, ep_chips, level`` (the slowest level crossed), ``phases`` (the hierarchical
        all-to-all's phases: algorithm, participants and level), ``gb_per_s`` and ``direction``
        (of the slowest level), ``dispatch_bytes_per_chip``, ``all_to_all_s`` (one dispatch,
        hierarchical), ``flat_all_to_all_s`` (one ring over all chips at the slowest level),
        ``layer_all_to_all_s`` (the four of a layer), ``layer_expert_compute_s``,
        ``all_to_all_over_compute``, and per training step for those tokens (every MoE layer):
        ``step_all_to_all_bytes_per_chip`` (sent, ``4 × layers × dispatch``) and ``step_all_to_all_s``.

    Examples
    --------
    >>> t = all_to_all_table("mixtral-8x7b", ep_chips=(16, 64), systems=("trn2-ultraserver",))
    >>> t[["ep_chips", "level", "phases"]].values.tolist()
    [[16, 'instance', 'ring 16 (instance)'], [64, 'ultraserver', 'ring 16 (instance) + ring 4 (ultraserver)']]
    """
    m = _moe(model)
    tokens = integer("tokens_per_chip", tokens_per_chip, minimum=1, maximum=MAX_TOKENS)
    sizes = sequence("ep_chips", ep_chips, lambda n, x: integer(n, x, minimum=1, maximum=10**6))
    names = sequence("systems", systems, lambda n, x: choice(n, x, topology.SYSTEMS))
    mfu = sizing.default_mfu() if mfu is None else in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    size = dispatch_bytes(tokens, m.d_model, m.experts_per_token, capacity_factor, bytes_per_element)
    moe_layers = m.n_layers - m.n_dense_layers
    expert_flops = 6.0 * 3.0 * m.d_model * m.expert_ffn_dim * m.experts_per_token * capacity_factor * tokens
    rows = []
    for name in names:
        chip = specs.chip(specs.system(name).chip_key)
        if dtype not in chip.dense_flops_per_s:
            raise ValueError(f"dtype must be one of {sorted(chip.dense_flops_per_s)}; got {dtype!r}")
        rate = chip.dense_flops_per_s[dtype] * mfu
        per_system = specs.system(name).n_chips
        for n in sizes:
            c = _chip_cluster(name, -(-n // per_system))
            lv = c.crossing_level(n)
            shape = _packed_shape(c, n)
            phases = " + ".join(f"{_algorithm(level)} {k} ({_level_word(name, level.name)})"
                                for level, k in _phases(c, *shape))
            one = _a2a_group(c, shape, size)
            compute = expert_flops / rate
            rows.append(dict(system=name, ep_chips=n, level=lv.name, phases=phases or "none",
                             gb_per_s=(lv.bytes_per_s or 0.0) / 1e9, direction=lv.direction,
                             dispatch_bytes_per_chip=size, all_to_all_s=one,
                             flat_all_to_all_s=_a2a_group(c, shape, size, hierarchical=False),
                             layer_all_to_all_s=4 * one, layer_expert_compute_s=compute,
                             all_to_all_over_compute=4 * one / compute,
                             step_all_to_all_bytes_per_chip=4 * moe_layers * size,
                             step_all_to_all_s=4 * moe_layers * one))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- compute


def flops_per_token(model, *, seq_len: int | None = None, capacity_factor: float = 1.0) -> float:
    """Training FLOPs per token: ``6 · N_active`` plus attention (``6 · L · s · h``, causal count).

    Only the active parameters compute (Kaplan et al.'s 6N with N the parameters a token
    uses); a capacity factor above 1 pads every expert's buffer, and padded slots are
    computed too, so the routed experts' share is multiplied by it.

    References
    ----------
    Kaplan et al. 2020, arXiv:2001.08361, §2.1; Fedus et al. 2022, §2.2 (padding to capacity).

    Examples
    --------
    >>> round(flops_per_token("mixtral-8x7b", seq_len=4096) / 1e9, 1)   # GFLOPs per token
    80.5
    """
    m = _model(model)
    s = m.seq_len if seq_len is None else integer("seq_len", seq_len, minimum=1, maximum=10**8)
    c = in_range("capacity_factor", capacity_factor, 1.0, 16.0)
    _, _, active, routed_active = _split(m)
    return 6.0 * (active + (c - 1.0) * routed_active) + 6.0 * m.n_layers * s * m.d_model


@dataclass(frozen=True)
class StepCompute:
    """FLOPs of one step and their time per chip (:func:`step_compute`).

    Attributes
    ----------
    model : ModelPreset
    n_tokens, n_chips : float, int
    flops : float
        Training FLOPs of the step (active parameters, attention, padding).
    flops_if_dense : float
        The same tokens if every parameter were used by every token.
    flops_per_chip : float
    compute_s : float
        ``flops_per_chip / (peak · mfu)``.
    """

    model: ModelPreset
    n_tokens: float
    n_chips: int
    flops: float
    flops_if_dense: float
    flops_per_chip: float
    compute_s: float

    def _repr_markdown_(self) -> str:
        return (f"{self.model.name}: {self.n_tokens:,.0f} tokens on {self.n_chips:,} chips, "
                f"**{self.flops / 1e18:,.2f} EFLOPs** ({self.flops / self.flops_if_dense:.1%} of a dense "
                f"model of the same total size), **{self.compute_s:.2f} s** of compute per chip")


def step_compute(model, *, n_tokens: float, n_chips: int, chip: str = "trn2", dtype: str = "bfloat16",
                 mfu: float | None = None, capacity_factor: float = 1.0, seq_len: int | None = None) -> StepCompute:
    """The compute of one training step per chip: FLOPs of the active parameters, at ``mfu``.

    ``flops`` is :func:`flops_per_token` × ``n_tokens``; ``flops_if_dense`` the same tokens
    through a dense model of the same total size (``6 N_total`` plus attention);
    ``compute_s`` the FLOPs per chip over the chip's peak for ``dtype`` at ``mfu``.

    References
    ----------
    Kaplan et al. 2020, arXiv:2001.08361, §2.1; Fedus et al. 2022, §2.2.

    Examples
    --------
    >>> s = step_compute("qwen3-235b-a22b", n_tokens=4 * 2**20, n_chips=1024)
    >>> round(s.flops / s.flops_if_dense, 3), round(s.compute_s, 2)
    (0.1, 3.04)
    """
    m = _model(model)
    n_tokens = positive("n_tokens", n_tokens)
    n_chips = integer("n_chips", n_chips, minimum=1, maximum=10**7)
    mfu = sizing.default_mfu() if mfu is None else in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    ch = specs.chip(chip)
    if dtype not in ch.dense_flops_per_s:
        raise ValueError(f"dtype must be one of {sorted(ch.dense_flops_per_s)}; got {dtype!r}")
    per_token = flops_per_token(m, seq_len=seq_len, capacity_factor=capacity_factor)
    s = m.seq_len if seq_len is None else seq_len
    dense = 6.0 * float(m.n_params) + 6.0 * m.n_layers * s * m.d_model
    flops = per_token * n_tokens
    per_chip = flops / n_chips
    return StepCompute(m, n_tokens, n_chips, flops, dense * n_tokens, per_chip,
                       per_chip / (ch.dense_flops_per_s[dtype] * mfu))


# --------------------------------------------------------------------- expert parallelism as Neuron runs it


#: the exchanges the layout planner costs: "all-gather" (then a reduce-scatter) is what NxD and
#: vLLM Neuron run (NxD Inference's MoE deep dive: "Expert Parallelism uses All-Gather to gather all
#: tokens at all ranks"; vLLM Neuron's expert-parallelism design: all-gather, then reduce-scatter),
#: "all-to-all" the GShard / Megatron-Core exchange of capacity-padded buffers. All-to-all-v
#: (:data:`EXCHANGE_METHODS`) is an all-to-all at capacity factor 1 to the planner.
EP_DISPATCH_METHODS: tuple[str, ...] = ("all-gather", "all-to-all")
#: every exchange chapter 10 derives: the planner's two and "all-to-all-v", the variable-size
#: all-to-all that Neuron 2.32 ships (the runtime's AllToAllV on Trn2 and Trn3,
#: ``nki.collectives.all_to_all_v``, the NKI Library's Permute/Unpermute A2AV kernels): each
#: rank sends each peer exactly the tokens routed to it, after a small exchange of the counts
EXCHANGE_METHODS: tuple[str, ...] = ("all-gather", "all-to-all", "all-to-all-v")
#: bytes of one send count in all-to-all-v's metadata (an int32 per peer: an assumption; the
#: NKI Library builds a metadata tensor from the routing, its layout is not costed here)
A2AV_COUNT_BYTES = 4.0


def dispatch_stacks() -> pd.DataFrame:
    """Which Neuron stack dispatches MoE tokens with which exchange, from ``data/moe_dispatch.csv``.

    Columns ``stack``, ``component`` (a key of ``data/components.csv``), ``exchange`` (of
    :data:`EXCHANGE_METHODS`, or ``"none"``), ``status`` (the component's, from the status
    table), ``evidence``, ``source_id``.

    Examples
    --------
    >>> t = dispatch_stacks().set_index("stack")
    >>> t.loc["vLLM Neuron (expert parallelism)", "exchange"]
    'all-gather'
    """
    from trainium_lab import components

    df = specs.read_data_csv("moe_dispatch.csv")
    bad = set(df.exchange) - set(EXCHANGE_METHODS) - {"none"}
    if bad:
        raise ValueError(f"moe_dispatch.csv: unknown exchange {sorted(bad)}")
    df["status"] = [components.status_label(c) for c in df.component]
    return df[["stack", "component", "exchange", "status", "evidence", "source_id"]]


def dispatch_exchange(component: str) -> str:
    """The exchange a Neuron component dispatches MoE tokens with (:func:`dispatch_stacks`):
    ``"all-gather"``, ``"all-to-all-v"`` or ``"none"`` (no expert parallelism). The planner's
    ``ep_dispatch`` for a framework is ``dispatch_exchange(framework.component)``; all-to-all-v is
    costed there as ``"all-to-all"`` at capacity factor 1.

    Examples
    --------
    >>> dispatch_exchange("nxd-training"), dispatch_exchange("torchneuron"), dispatch_exchange("nki-library")
    ('all-gather', 'none', 'all-to-all-v')
    """
    table = _dispatch_exchanges()
    return table[choice("component", component, tuple(table))]


@functools.cache
def _dispatch_exchanges() -> dict[str, str]:
    """Component -> exchange, read once (a deadline search asks for every count it plans)."""
    t = dispatch_stacks()
    return {str(c): str(t[t.component == c].exchange.iloc[0]) for c in dict.fromkeys(t.component)}


def ep_exchange_bytes(n_tokens: float, d_model: int, experts_per_token: int, ep: int, *,
                      method: str = "all-gather", capacity_factor: float = 1.0,
                      bytes_per_element: float = 2.0) -> float:
    """Bytes one rank receives from the other ranks in one dispatch (the combine moves as many back).

    With ``T`` tokens per rank of width ``h``, ``k`` experts per token and ``ep`` ranks:

    * ``"all-to-all"`` (GShard §2.2): every token goes to each of its ``k`` experts; a
      share ``1/ep`` of the copies stays on the rank, so ``(ep−1)/ep · c·T·k·h·b`` crosses
      the links (``c`` the capacity factor, 1 for dropless);
    * ``"all-gather"`` (NxD, vLLM Neuron): every rank gathers every other rank's ``T`` tokens
      whatever their experts, ``(ep−1) · T·h·b``, and the outputs return by a reduce-scatter of
      the same size;
    * ``"all-to-all-v"`` (Neuron 2.32's variable-size all-to-all): each copy goes only where it
      is routed, unpadded: ``(ep−1)/ep · T·k·h·b`` with a balanced router, whatever ``c``; the
      counts travel first (``ep`` integers, :data:`A2AV_COUNT_BYTES` each), which this
      function leaves out. With a skewed router the busiest receiver gets more than this mean.

    The ratio, all-gather over all-to-all, is ``ep / (c·k)``: 4 for Mixtral (top-2) at EP 8,
    2 for Qwen3 (top-8) at EP 16 (:func:`ep_byte_ratio`); all-to-all over all-to-all-v is ``c``.

    References
    ----------
    AWS Neuron docs, NxD Inference "Deep dive: Mixture of Experts (MoE) inference", *Future
    optimizations*; aws-neuron/neuronx-distributed, ``modules/moe/model.py``; Lepikhin et al.
    2020 (GShard), §2.2.

    Examples
    --------
    >>> ag = ep_exchange_bytes(8192, 4096, 2, 8)
    >>> a2a = ep_exchange_bytes(8192, 4096, 2, 8, method="all-to-all")
    >>> ag / 2**20, a2a / 2**20, ag / a2a   # MiB, MiB, ratio ep/k
    (448.0, 112.0, 4.0)
    >>> padded = ep_exchange_bytes(8192, 4096, 2, 8, method="all-to-all", capacity_factor=1.25)
    >>> padded / ep_exchange_bytes(8192, 4096, 2, 8, method="all-to-all-v", capacity_factor=1.25)
    1.25
    """
    t = positive("n_tokens", n_tokens)
    h = integer("d_model", d_model, minimum=1, maximum=10**7)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=10**5)
    ep = integer("ep", ep, minimum=1, maximum=10**6)
    method = choice("method", method, EXCHANGE_METHODS)
    c = in_range("capacity_factor", capacity_factor, 0.0, 1e3, low_open=True)
    b = in_range("bytes_per_element", bytes_per_element, 0.0, 16.0, low_open=True)
    if method == "all-gather":
        return (ep - 1) * t * h * b
    if method == "all-to-all-v":
        c = 1.0   # no capacity padding on the wire
    return (ep - 1) / ep * c * t * k * h * b


def ep_byte_ratio(ep: int, experts_per_token: int, capacity_factor: float = 1.0) -> float:
    """Bytes an all-gather dispatch moves over those of an all-to-all: ``ep / (c·k)``.

    Derived in :func:`ep_exchange_bytes`: ``(ep−1)·T·h`` over ``(ep−1)/ep · c·T·k·h``.
    Below 1 only when the group is smaller than the copies a token makes (``ep < c·k``).

    Examples
    --------
    >>> ep_byte_ratio(8, 2), ep_byte_ratio(16, 8), ep_byte_ratio(64, 8)
    (4.0, 2.0, 8.0)
    """
    ep = integer("ep", ep, minimum=1, maximum=10**6)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=10**5)
    c = in_range("capacity_factor", capacity_factor, 0.0, 1e3, low_open=True)
    return ep / (c * k)


def _ag_group(c: topology.Cluster, shape: tuple[int, int, int], size: float, phase=None) -> float:
    """Seconds for a hierarchical all-gather of ``size`` bytes per chip over a packed group.

    Innermost level first, each phase gathers what the previous ones gathered: the
    phase over ``n_i`` participants ends with ``size·Π n_j`` (j ≤ i) bytes per chip and
    costs an all-gather of that size (``(n_i−1)/n_i · S_i/B_i`` on a ring or switch).
    A reduce-scatter runs the same phases outermost first at the same sizes, so it costs
    the same. ``phase(level, n, gathered)`` may replace the per-phase cost (the planner's
    torus model).
    """
    total, gathered = 0.0, size
    for level, n in _phases(c, *shape):
        gathered *= n
        total += (collectives._level_cost(level, n, 1, gathered, "all_gather", None) if phase is None
                  else phase(level, n, gathered))
    return total


def ep_exchange_s(n_tokens: float, d_model: int, experts_per_token: int, n_chips: int,
                  system: str = "trn2-ultraserver", *, method: str = "all-gather",
                  capacity_factor: float = 1.0, bytes_per_element: float = 2.0) -> float:
    """Seconds for one MoE layer's dispatch **and** combine (forward) over ``n_chips`` packed chips.

    ``"all-to-all"``: two :func:`all_to_all_s` of :func:`dispatch_bytes` per chip (padded to
    the capacity factor). ``"all-to-all-v"``: an all-to-all of the send counts (``n`` integers,
    reused by the combine), then two all-to-alls of the unpadded bytes. ``"all-gather"``: an all-gather of every chip's ``T·h·b`` bytes, then a reduce-scatter of
    the gathered outputs (the same size), level by level (:func:`_ag_group`). On one ring of
    ``n`` chips the all-gather pair costs ``2/(c·k)`` of the ring all-to-all pair (the ring's
    ``n/2`` hop penalty cancels the all-gather's ``ep/k`` extra bytes); through a switch
    ``n/(c·k)`` of it, the byte ratio.

    References
    ----------
    As :func:`ep_exchange_bytes` and :func:`all_to_all_s`.

    Examples
    --------
    >>> ag = ep_exchange_s(8192, 4096, 2, 16, "trn2-ultraserver")
    >>> a2a = ep_exchange_s(8192, 4096, 2, 16, "trn2-ultraserver", method="all-to-all")
    >>> round(ag / a2a, 3)   # one ring of 16: 2/k
    1.0
    >>> sw = [ep_exchange_s(8192, 4096, 2, 16, "trn3-gen1-ultraserver", method=m) for m in EP_DISPATCH_METHODS]
    >>> round(sw[0] / sw[1], 3)   # through a switch: ep/k
    8.0
    """
    t = positive("n_tokens", n_tokens)
    h = integer("d_model", d_model, minimum=1, maximum=10**7)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=10**5)
    n = integer("n_chips", n_chips, minimum=1, maximum=10**7)
    method = choice("method", method, EXCHANGE_METHODS)
    if method == "all-to-all":
        return 2.0 * all_to_all_s(dispatch_bytes(t, h, k, capacity_factor, bytes_per_element), n, system)
    if method == "all-to-all-v":
        in_range("capacity_factor", capacity_factor, 0.0, 1e3, low_open=True)   # unpadded: c unused
        counts = all_to_all_s(A2AV_COUNT_BYTES * n, n, system) if n > 1 else 0.0
        return counts + 2.0 * all_to_all_s(dispatch_bytes(t, h, k, 1.0, bytes_per_element), n, system)
    c0 = in_range("capacity_factor", capacity_factor, 0.0, 1e3, low_open=True)
    del c0  # gathering raw tokens: no capacity padding on the wire
    b = in_range("bytes_per_element", bytes_per_element, 0.0, 16.0, low_open=True)
    choice("system", system, topology.SYSTEMS)
    base = _chip_cluster(system, 1)
    c = _chip_cluster(system, -(-n // base.chips_per_system))
    return 2.0 * _ag_group(c, _packed_shape(c, n), t * h * b)


def ep_exchange_table(model, *, tokens_per_chip: int = 8192, ep_chips: tuple[int, ...] = (4, 16, 64),
                      systems: tuple[str, ...] = ("trn2-ultraserver", "trn3-gen1-ultraserver"),
                      bytes_per_element: float = 2.0, capacity_factor: float = 1.0) -> pd.DataFrame:
    """The three exchanges side by side for one model: bytes and seconds per MoE layer (forward).

    The all-to-all's buffers are padded to ``capacity_factor``; all-to-all-v sends only what is
    routed, so at ``capacity_factor = 1`` the two move the same bytes (all-to-all-v adds the
    counts' exchange).

    Returns
    -------
    pandas.DataFrame
        ``system, ep_chips, method, bytes_received_per_chip`` (one dispatch,
        :func:`ep_exchange_bytes`), ``layer_exchange_s`` (dispatch + combine,
        :func:`ep_exchange_s`), ``byte_ratio`` and ``time_ratio`` (all-gather over all-to-all,
        on the all-gather rows; 1 on the all-to-all rows).

    Examples
    --------
    >>> t = ep_exchange_table("mixtral-8x7b", ep_chips=(8,), systems=("trn2-ultraserver",))
    >>> t[["method", "byte_ratio"]].values.tolist()
    [['all-gather', 4.0], ['all-to-all', 1.0], ['all-to-all-v', 1.0]]
    """
    m = _moe(model)
    tokens = integer("tokens_per_chip", tokens_per_chip, minimum=1, maximum=MAX_TOKENS)
    sizes = sequence("ep_chips", ep_chips, lambda n, x: integer(n, x, minimum=1, maximum=10**6))
    names = sequence("systems", systems, lambda n, x: choice(n, x, topology.SYSTEMS))
    rows = []
    for name in names:
        for n in sizes:
            got = {meth: (ep_exchange_bytes(tokens, m.d_model, m.experts_per_token, n, method=meth,
                                            bytes_per_element=bytes_per_element, capacity_factor=capacity_factor),
                          ep_exchange_s(tokens, m.d_model, m.experts_per_token, n, name, method=meth,
                                        bytes_per_element=bytes_per_element, capacity_factor=capacity_factor))
                   for meth in EXCHANGE_METHODS}
            a2a_bytes, a2a_s = got["all-to-all"]
            for meth, (nbytes, secs) in got.items():
                rows.append(dict(system=name, ep_chips=n, method=meth, bytes_received_per_chip=nbytes,
                                 layer_exchange_s=secs,
                                 byte_ratio=nbytes / a2a_bytes if a2a_bytes else 1.0,
                                 time_ratio=secs / a2a_s if a2a_s else 1.0))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- dropless MoE on static shapes


def blockwise_blocks(n_tokens: int, n_experts: int, experts_per_token: int, block_size: int = 512) -> int:
    """Blocks NxD's blockwise matmul provisions for dropless MoE: ``⌈T·k/B⌉ + (E − 1)``.

    Static shapes (the Neuron compiler's) cannot follow each expert's varying load, so
    dropless MoE on Neuron maps tokens into fixed blocks of ``B`` tokens, one expert per
    block; this many blocks hold any routing without dropping a token.

    References
    ----------
    AWS Neuron docs, NxD Inference "Deep dive: Mixture of Experts (MoE) inference",
    *Blockwise matrix multiplication* (``block_size=512`` in its examples; the worked case
    1,000 tokens, 8 experts, top-2, block 256 gives 15 blocks).

    Examples
    --------
    >>> blockwise_blocks(1000, 8, 2, 256)
    15
    """
    t = integer("n_tokens", n_tokens, minimum=1, maximum=MAX_TOKENS)
    e = integer("n_experts", n_experts, minimum=1, maximum=10**5)
    k = integer("experts_per_token", experts_per_token, minimum=1, maximum=e)
    bs = integer("block_size", block_size, minimum=1, maximum=2**20)
    return -(-t * k // bs) + (e - 1)


def blockwise_compute_factor(n_tokens: int, n_experts: int, experts_per_token: int,
                             block_size: int = 512) -> float:
    """Provisioned expert compute over the routed work: ``N·B / (T·k)`` (at least 1).

    The cost of dropless MoE through the blockwise matmul when every provisioned block is
    computed; NxD's dynamic while-loop skips fully padded blocks, so this is the bound, not
    the expectation. A capacity factor ``c`` costs ``c`` instead, and drops tokens.

    Examples
    --------
    >>> round(blockwise_compute_factor(1000, 8, 2, 256), 3)   # the deep dive's 3,840 / 2,000
    1.92
    >>> round(blockwise_compute_factor(16384, 128, 8, 512), 3)   # Qwen3, 16k tokens per rank
    1.496
    """
    n = blockwise_blocks(n_tokens, n_experts, experts_per_token, block_size)
    return n * block_size / (n_tokens * experts_per_token)


# --------------------------------------------------------------------- keeping the router balanced


def load_balancing_loss(token_fractions, router_probabilities, alpha: float = 0.01) -> float:
    """The auxiliary load-balancing loss: ``α · E · Σ_i f_i · P_i``.

    ``f_i`` is the share of token-to-expert assignments that went to expert ``i`` and
    ``P_i`` the router's mean probability for it; both sum to 1 over the ``E`` experts.
    A perfectly balanced router (``f_i = P_i = 1/E``) gives exactly ``α``; routing all
    tokens to one expert with certainty gives ``α · E``.

    References
    ----------
    Fedus et al. 2022 (Switch Transformers), §2.2, eqs. (4)–(6), ``α = 10⁻²``.

    Examples
    --------
    >>> load_balancing_loss([0.25] * 4, [0.25] * 4)
    0.01
    >>> load_balancing_loss([1, 0, 0, 0], [1, 0, 0, 0], alpha=1.0)
    4.0
    """
    f = np.asarray(sequence("token_fractions", token_fractions,
                            lambda n, x: in_range(n, x, 0.0, 1.0)), dtype=float)
    p = np.asarray(sequence("router_probabilities", router_probabilities,
                            lambda n, x: in_range(n, x, 0.0, 1.0)), dtype=float)
    if len(f) != len(p):
        raise ValueError(f"router_probabilities must have one value per expert ({len(f)}), got {len(p)}")
    a = in_range("alpha", alpha, 0.0, 1e3)
    return float(round(a * len(f) * float(np.dot(f, p)), 12))


def router_z_loss(logits) -> float:
    """The router z-loss: the mean over tokens of ``(log Σ_j exp x_j)²``.

    It penalises large router logits, which overflow in low precision (ST-MoE adds it
    with weight ``10⁻³``).

    Parameters
    ----------
    logits : array-like, shape (tokens, experts)

    References
    ----------
    B. Zoph et al., "ST-MoE: Designing Stable and Transferable Sparse Expert Models",
    arXiv:2202.08906 (2022), §3.1, eq. (5).

    Examples
    --------
    >>> round(router_z_loss([[0.0, 0.0], [0.0, 0.0]]), 6)   # (log 2)²
    0.480453
    """
    try:
        x = None if isinstance(logits, (str, bytes)) or logits is None else np.asarray(logits, dtype=float)
    except (TypeError, ValueError):
        x = None
    if x is None or x.ndim != 2 or x.size == 0 or not np.all(np.isfinite(x)) or np.abs(x).max() > 1e150:
        raise ValueError("logits must be a finite 2-d array (tokens × experts)")
    mx = x.max(axis=1, keepdims=True)
    lse = (mx + np.log(np.exp(x - mx).sum(axis=1, keepdims=True)))[:, 0]
    return float(np.mean(lse ** 2))


def aux_free_bias_update(bias, expert_loads, gamma: float = 0.001) -> np.ndarray:
    """One step of the auxiliary-loss-free balancing bias: ``b_i ← b_i + γ·sign(mean load − load_i)``.

    The bias is added to the affinities only to choose the top-k experts (not to weight
    their outputs): an overloaded expert's bias falls by ``γ``, an underloaded one's rises.

    References
    ----------
    DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437 (2024), §2.1.2
    (bias update speed γ = 0.001 for the first 14.3 T tokens); L. Wang et al.,
    "Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-Experts", arXiv:2408.15664.

    Examples
    --------
    >>> aux_free_bias_update([0.0, 0.0, 0.0], [30, 10, 20], gamma=0.1).tolist()
    [-0.1, 0.1, 0.0]
    """
    b = np.asarray(sequence("bias", bias, finite_number), dtype=float)
    loads = np.asarray(sequence("expert_loads", expert_loads,
                                lambda n, x: positive(n, x, allow_zero=True)), dtype=float)
    if len(b) != len(loads):
        raise ValueError(f"expert_loads must have one value per expert ({len(b)}), got {len(loads)}")
    g = in_range("gamma", gamma, 0.0, 1.0)
    return b + g * np.sign(loads.mean() - loads)


# --------------------------------------------------------------------- how much the fabric reading moves Trn2 vs Trn3


#: the Trainium3 Gen2 PCIe Gen6 switch fabric of "Amazon EC2 Trn3 Architecture" (section added
#: 2026-04-03): chips per server, and the links.csv keys of the in-server and cross-server figures
_TRN3_PCIE = (4, "trn3-gen2-pcie-intra-server", "trn3-gen2-pcie-inter-server")


def fabric_readings_table(size_bytes: float, ep_chips: tuple[int, ...] = (16, 64)) -> pd.DataFrame:
    """One all-to-all of ``size_bytes`` per chip under each reading of the two fabrics.

    Trainium2: the course's one-way ring per level (:func:`all_to_all_s`, an upper bound for
    the 4×4 torus) and shortest torus paths over the group's own links (chapter 03's
    ``own-links`` estimate, about 4× less inside an instance). Trainium3: the NeuronLink-v4
    reading (2.56 TB/s per chip through NeuronSwitch, :func:`all_to_all_s` on
    ``trn3-gen1-ultraserver``) and the PCIe Gen6 switch-fabric reading the same AWS page gives
    for Gen2 (256 GB/s per chip inside a 4-chip server, 320 GB/s across servers, both
    bidirectional, so half each way while every chip sends and receives): a direct exchange
    inside the server, then one across servers (:func:`trainium_lab.collectives.direct_all_to_all_s`),
    labelled with that reading's system, ``trn3-gen2-ultraserver-pcie``
    (:data:`trainium_lab.topology.FABRIC_READINGS`).

    Returns
    -------
    pandas.DataFrame
        ``ep_chips, system, reading, all_to_all_s``.

    References
    ----------
    AWS Neuron docs, "Amazon EC2 Trn3 Architecture" and "Amazon EC2 Trn2 Architecture";
    Grama et al. 2003, §4.5.

    Examples
    --------
    >>> t = fabric_readings_table(512 * 2**20, ep_chips=(16,))
    >>> [round(x * 1e3, 2) for x in t.all_to_all_s]   # ms: Trn2 ring, Trn2 torus, Trn3 NeuronLink, Trn3 PCIe
    [3.93, 1.05, 0.2, 5.66]
    """
    size = positive("size_bytes", size_bytes)
    sizes = sequence("ep_chips", ep_chips, lambda n, x: integer(n, x, minimum=2, maximum=128))
    per_server, intra_key, inter_key = _TRN3_PCIE
    intra = specs.link(intra_key).bytes_per_s / 2.0   # bidirectional: half each way
    inter = specs.link(inter_key).bytes_per_s / 2.0
    rows = []
    for n in sizes:
        base = _chip_cluster("trn2-ultraserver", 1)
        c2 = _chip_cluster("trn2-ultraserver", -(-n // base.chips_per_system))
        shape = _packed_shape(c2, n)
        in_server = min(n, per_server)
        servers = -(-n // per_server)
        pcie = (collectives.direct_all_to_all_s(size, in_server, intra)
                + (collectives.direct_all_to_all_s(size, servers, inter) if servers > 1 else 0.0))
        rows += [dict(ep_chips=n, system="trn2-ultraserver", reading="ring per level (course model)",
                      all_to_all_s=_a2a_group(c2, shape, size)),
                 dict(ep_chips=n, system="trn2-ultraserver", reading="torus shortest paths (own links)",
                      all_to_all_s=_a2a_group(c2, shape, size, phase=_own_links_phase(c2))),
                 dict(ep_chips=n, system="trn3-gen1-ultraserver", reading="NeuronLink-v4 2.56 TB/s switch",
                      all_to_all_s=all_to_all_s(size, n, "trn3-gen1-ultraserver")),
                 dict(ep_chips=n, system=topology.FABRIC_READINGS["trn3-gen2-ultraserver"]["pcie"],
                      reading="PCIe Gen6 switch fabric (Gen2)",
                      all_to_all_s=pcie)]
    return pd.DataFrame(rows)
