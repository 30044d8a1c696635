"""The planner: every valid layout of a cluster, evaluated at once by the vectorised engine,
those that fit ranked by tokens/s (:func:`plan`, :class:`Plan`); and the chapter's 405B worked
example from the same functions.

References
----------
Narayanan et al., arXiv:2104.04473 (2021), §3 (degree choices); Rajbhandari et al., "ZeRO",
arXiv:1910.02054 (2020); Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783 (2024),
§3.3.2.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from trainium_lab import frameworks, moe, specs, topology
from trainium_lab._validate import choice, in_range, integer, positive, sequence
from trainium_lab.layouts.engine import _RECOMPUTE_INDEX, TORUS_LINK_MODELS, _comm, _core, _fits
from trainium_lab.layouts.estimate import (MEMORY_PARTS, TIME_PARTS, Layout, _dropless, _labels, _time_parts,
                                           evaluate, layout, overlap_default, resolve_dp_overlap)
from trainium_lab import sizing
from trainium_lab.sizing import (ATTENTION_COUNTS, RECOMPUTE_MODES, ModelPreset, preset, recipe,
                                 resolve_model, sharded_state_table, training_state_bytes)
from trainium_lab.units import GiB, day

__all__ = ["Plan", "plan", "candidate_degrees", "fully_sharded_table", "worked_example"]


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
        The search's other inputs (recompute options, dtype, MFU, ``framework``...), to rebuild
        a layout.
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
    def framework(self) -> str | None:
        """The framework the search was limited to (a key of ``data/frameworks.csv``), or ``None``."""
        return self.settings.get("framework")

    def runnable_by(self, rank: int = 0) -> tuple[str, ...]:
        """The frameworks that can run row ``rank`` of :attr:`table` (:func:`trainium_lab.frameworks.runnable_by`).

        Examples
        --------
        >>> p = plan("llama3-8b", system="trn2.48xlarge", global_batch=64, framework="nxd")
        >>> "nxd" in p.runnable_by()
        True
        """
        rank = integer("rank", rank, minimum=0, maximum=max(len(self.table) - 1, 0))
        if self.table.empty:
            return ()
        r = self.table.iloc[rank]
        who = frameworks.runnable_by(int(r.tp), int(r.pp), int(r.dp), int(r.ep), zero_stage=int(r.zero_stage),
                                     virtual_stages=int(r.virtual_stages), n_layers=self.model.n_layers)
        if r.tp_level == "efa":   # TP over EFA: not where a framework with a tp_domain rule puts it
            who = tuple(k for k in who if frameworks.framework(k).tp_domain != "system")
        return who

    def overlap_sensitivity(self, values: tuple[float, ...] | None = None) -> pd.DataFrame:
        """The winner at other data-parallel overlaps (memory does not depend on it).

        Every fitting layout's step is re-costed with ``dp_exposed = (total − placed) +
        max(0, placed − o·window)`` (the engine's rule; ``placed`` is what the framework's schedule
        puts behind compute) at each overlap ``o``; the default values span the plausible range
        of ``data/overlap.csv`` (:func:`trainium_lab.layouts.overlap_default`) and the plan's own.

        Returns
        -------
        pandas.DataFrame
            ``dp_overlap, label, tokens_per_s, step_s, same_winner`` (whether it is the plan's
            own winner), one row per overlap, highest first.

        Examples
        --------
        >>> p = plan("llama3-405b", system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=512, mfu=0.40)
        >>> s = p.overlap_sensitivity()
        >>> s.dp_overlap.tolist(), bool(s.same_winner.iloc[0])
        ([1.0, 0.9, 0.8, 0.7, 0.6, 0.5], True)
        """
        d = overlap_default("dp_overlap")
        if values is None:
            grid = np.round(np.linspace(d.high, d.low, 6), 6).tolist()
            own = float(self.settings.get("dp_overlap", d.default))
            values = tuple(sorted(set(grid) | {own}, reverse=True))
        vals = [in_range("values", v, 0.0, 1.0) for v in sequence("values", values, lambda _n, x: x)]
        t = self.table
        rows = []
        if t.empty:
            return pd.DataFrame(columns=["dp_overlap", "label", "tokens_per_s", "step_s", "same_winner"])
        base = t.step_s.to_numpy() - t.dp_exposed_s.to_numpy()
        total, window = t.dp_comm_total_s.to_numpy(), t.dp_window_s.to_numpy()
        placed = (float(self.settings.get("gather_overlap", 1.0)) * t.dp_gather_s.to_numpy()
                  + float(self.settings.get("reduce_overlap", 1.0)) * t.dp_reduce_s.to_numpy())
        tokens = t.tokens_per_s.to_numpy() * t.step_s.to_numpy()
        for o in vals:
            step = base + (total - placed) + np.maximum(0.0, placed - o * window)
            tps = tokens / step
            i = int(np.argmax(tps))
            rows.append({"dp_overlap": float(o), "label": t.label.iloc[i], "tokens_per_s": float(tps[i]),
                         "step_s": float(step[i]), "same_winner": bool(i == 0 or t.label.iloc[i] == t.label.iloc[0])})
        return pd.DataFrame(rows)

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
                      recompute=str(r.recompute), system=c.system_spec, n_systems=c.n_systems, lnc=c.lnc,
                      sequence_parallel=self.settings.get("sequence_parallel", True),
                      seq_len=self.settings.get("seq_len"), recipe_name=self.settings.get("recipe_name", "bf16-adam"),
                      dtype=self.settings.get("dtype", "bfloat16"),
                      grad_bytes_per_param=self.settings.get("grad_bytes_per_param"),
                      virtual_stages=int(r.virtual_stages),
                      capacity_factor=self.settings.get("capacity_factor", 1.0), expert_tp=int(r.expert_tp))

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


def _tp_in_domain(fw, tps: list[int], n_ranks: int, n_systems: int) -> list[int]:
    """The TP degrees whose groups stay inside one system when ``fw.tp_domain`` is ``"system"``.

    Ranks are laid out TP innermost, so a group of ``tp`` consecutive ranks stays inside one
    system exactly when ``tp`` divides the ranks of a system (or there is one system): the TP
    collectives, which no Neuron schedule hides behind compute (``data/frameworks.csv``,
    ``tp_domain``), then run over NeuronLink, never over EFA.
    """
    if fw is None or fw.tp_domain != "system" or n_systems == 1:
        return tps
    per_system = n_ranks // n_systems
    return [t for t in tps if per_system % t == 0]


def _degree_lists(model: ModelPreset, n_ranks: int, n_systems: int, eps, fw=None
                  ) -> tuple[list[int], list[int], list[int]]:
    """The TP, PP and EP degrees :func:`plan` crosses on ``n_ranks`` ranks of ``n_systems`` systems:
    TP divides the heads and the ranks (and the K/V heads, or is a multiple of them), PP divides the
    ranks and is at most the layers, EP (from ``eps``) divides the ranks; a framework ``fw`` keeps
    only what it runs (no PP or EP where it has none, TP inside one system under its ``tp_domain``).

    Examples
    --------
    >>> tps, pps, eps = _degree_lists(preset("llama3-8b"), 64, 1, (1,), frameworks.framework("jax"))
    >>> tps, pps, eps
    ([1, 2, 4, 8, 16, 32], [1], [1])
    """
    tps = [d for d in _divisors_cached(model.n_heads)
           if n_ranks % d == 0 and not (model.n_kv_heads % d and d % model.n_kv_heads)]
    pps = [d for d in range(1, min(model.n_layers, n_ranks) + 1) if n_ranks % d == 0]
    eps = [e for e in eps if n_ranks % e == 0]
    if fw is not None:
        pps = pps if fw.has_pp else [1]
        eps = eps if "ep" in fw.parallelisms else [e for e in eps if e == 1]
        tps = tps if "tp" in fw.parallelisms else [1]
        tps = _tp_in_domain(fw, tps, n_ranks, n_systems)
    return tps, pps, eps


def _admits_batch(model: ModelPreset, n_ranks: int, n_systems: int, global_batch: int, fw=None) -> bool:
    """Whether any ``(tp, ep, pp)`` degree grid of :func:`plan` splits ``global_batch``: some
    ``dp·ep`` left over divides it. A necessary condition for :func:`plan` to find a layout (it
    checks micro-batches, ZeRO stages and memory besides), computed without evaluating any
    layout: a deadline search skips the counts it rules out. ``fw`` a :class:`Framework` or ``None``.

    Examples
    --------
    >>> m = preset("llama3-405b")
    >>> _admits_batch(m, 64 * 3, 3, 2048), _admits_batch(m, 64 * 4, 4, 2048)
    (True, True)
    >>> fw = frameworks.framework("torchneuron")
    >>> _admits_batch(m, 64 * 3, 3, 2048, fw), _admits_batch(m, 64 * 4096, 4096, 2048, fw)
    (False, False)
    """
    eps = _divisors_cached(model.n_experts) if model.is_moe else (1,)
    tps, pps, eps = _degree_lists(model, n_ranks, n_systems, eps, fw)
    for t in tps:
        for e in eps:
            for p in pps:
                prod = t * e * p
                if n_ranks % prod == 0 and global_batch % (n_ranks // prod * e) == 0:
                    return True
    return False


def _max_systems_splitting(model: ModelPreset, ranks_per_system: int, global_batch: int, fw=None) -> int:
    """The most systems on which some layout of :func:`plan` can still split ``global_batch``.

    With ``n`` systems of ``r`` ranks, ``dp·ep = n·r / (tp·pp)`` must divide the batch, so it is at
    most the batch: ``n <= batch · tp_max · pp_max / r``, with ``tp_max`` the largest TP degree
    the model's heads (and, under ``fw.tp_domain``, the system) allow and ``pp_max`` the layers
    (1 without pipeline parallelism). Every count above it has no layout: a deadline search
    stops there.

    Examples
    --------
    >>> m = preset("llama3-405b")
    >>> _max_systems_splitting(m, 64, 2048, frameworks.framework("torchneuron"))   # TP <= 64 ranks, no PP
    2048
    """
    tps = [d for d in _divisors_cached(model.n_heads) if not (model.n_kv_heads % d and d % model.n_kv_heads)]
    pp_max = model.n_layers
    if fw is not None:
        pp_max = model.n_layers if fw.has_pp else 1
        tps = tps if "tp" in fw.parallelisms else [1]
        if fw.tp_domain == "system":
            tps = [t for t in tps if ranks_per_system % t == 0]
    return max(1, global_batch * max(tps) * pp_max // ranks_per_system)


@functools.lru_cache(maxsize=64)
def _divisors_cached(n: int) -> tuple[int, ...]:
    return tuple(_divisors(n))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def plan(model: str | ModelPreset, *, system: str = "trn2-ultraserver", n_systems: int = 1,
         lnc: int | None = None, global_batch: int = 1024, micro_batches: tuple[int, ...] = (1, 2, 4),
         zero_stages: tuple[int, ...] = (0, 1, 2, 3), recompute: tuple[str, ...] = RECOMPUTE_MODES,
         sequence_parallel: bool = True, mfu: float | None = None, dp_overlap: float | None = None,
         min_headroom_fraction: float = 0.10, seq_len: int | None = None, recipe_name: str | None = None,
         dtype: str = "bfloat16", n_tokens: float | None = None, tp_overlap: float = 0.0,
         grad_bytes_per_param: float | None = None, ep_degrees: tuple[int, ...] | None = None,
         virtual_stages: tuple[int, ...] = (1,), capacity_factor: float = 1.0,
         attention: str = "causal", torus: str = "per-device", ep_dispatch: str | None = None,
         expert_tp_degrees: tuple[int, ...] | None = None, narrow_expert_penalty: bool = True,
         dropless_block_size: int | None = None, framework: str | None = None,
         overlap_setting: str | None = None) -> Plan:
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
    attention : {"causal", "full"}
        How attention-score FLOPs are counted, as in :func:`evaluate`.
    torus : {"per-device", "own-links"}
        How groups inside one instance's 2D torus are charged, as in :func:`evaluate`
        (``"per-device"``, the default, is the course's model; Trainium3 is unaffected).
    ep_dispatch : {"all-gather", "all-to-all"}, optional
        MoE only: the EP exchange to cost, as in :func:`evaluate`. Default: the one the named
        framework's stack dispatches with (:func:`trainium_lab.moe.dispatch_exchange`; an
        all-to-all-v is costed as an all-to-all at capacity factor 1), and without a framework
        (or for one with no expert parallelism) ``"all-gather"``, what NxD runs.
    expert_tp_degrees : tuple of int, optional
        MoE only: expert-TP degrees to search (each layout tries those dividing its ``tp``;
        a ``tp`` that none divides is skipped). Default: the experts split like the
        attention, ``expert_tp = tp``.
    narrow_expert_penalty : bool
        As in :func:`evaluate` (default on).
    dropless_block_size : int, optional
        As in :func:`evaluate`: dropless MoE through the blockwise matmul (``capacity_factor`` 1).
    framework : {"torchneuron", "nxd", "jax"}, optional
        Search only what that framework can run (``data/frameworks.csv``,
        :func:`trainium_lab.frameworks.runnable_mask`): its ZeRO stages, no PP or EP where it
        has none, interleaving only where it has that schedule (NxD: ``pp × v = L``), TP
        groups inside one system's NeuronLink domain where its ``tp_domain`` is ``"system"``
        (every framework of the table: TP collectives are not overlapped, so never over EFA);
        and use its precision recipe unless ``recipe_name`` is given, and its overlap schedule
        (``overlap_setting``). ``None``: the teaching search, every layout the model allows with
        every data-parallel collective behind compute (no framework is checked:
        :meth:`Plan.runnable_by` then says which frameworks can run the winner).
    overlap_setting : str, optional
        A setting of the framework's schedule (:func:`trainium_lab.frameworks.overlap_schedules`:
        ``"compiler-default"``, the default, or ``"token-threading"`` where documented).
    recipe_name : str, optional
        A key of :data:`trainium_lab.sizing.RECIPES`; default the framework's recipe, else
        ``"bf16-adam"``.

    Returns
    -------
    Plan
        ``Plan.table`` columns: ``rank, label, tp, pp, dp, tp_chips, zero_stage, micro_batch,
        n_micro_batches, recompute, tp_level, pp_level, dp_level, weights_gib, gradients_gib,
        optimizer_gib, activations_gib, memory_gib, hbm_gib, headroom_gib, fits, compute_s,
        tp_comm_s, pp_comm_s, bubble_s, dp_exposed_s, dp_comm_total_s, step_s, tokens_per_s,
        mfu_effective, ep, virtual_stages, ep_level, ep_chips, ep_comm_s, expert_tp,
        expert_matmul_efficiency, expert_compute_factor`` (and ``days``).
        ``label`` names the layout, TP in ranks and in chips (the text of :meth:`Layout.label`).

    Examples
    --------
    >>> p = plan("llama3-405b", system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=512)
    >>> b = p.best
    >>> b.tp_level, bool(b.fits), int(b.tp * b.pp * b.dp) == p.cluster.n_ranks
    ('instance', True, True)
    >>> q = plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=1, lnc=2, global_batch=512)
    >>> int(q.best.tp * q.best.ep * q.best.pp * q.best.dp) == q.cluster.n_ranks, q.best.ep_level
    (True, 'instance')
    >>> q4 = plan("qwen3-235b-a22b", system="trn2-ultraserver", n_systems=4, lnc=2, global_batch=512)
    >>> int(q4.best.ep), q4.best.ep_level   # across four, with AWS's 15 us EFA hop, DP beats EP
    (1, 'none')
    >>> tp16 = q4.all[q4.all.tp == 16]   # 1,536-wide experts over TP 16: 96 of 128 columns
    >>> sorted(set(tp16.expert_matmul_efficiency.round(2)))
    [0.75]
    >>> plan("llama3-8b", system="trn2.48xlarge", ep_degrees=(1, 2))
    Traceback (most recent call last):
    ...
    ValueError: ep_degrees must be (1,) for Llama 3 8B: it is a dense model, with no experts to split (expert parallelism needs a mixture-of-experts model such as 'mixtral-8x7b'); got (1, 2)
    """
    m = resolve_model(model)
    c = topology.cluster(system, n_systems, lnc)
    fw = frameworks.resolve_framework(framework)
    # where the framework's schedule puts the data-parallel collectives (teaching: all behind compute)
    sched = frameworks.overlap_schedule(fw, overlap_setting if fw is not None else None)
    if recipe_name is None:
        recipe_name = fw.recipe if (fw is not None and fw.recipe) else "bf16-adam"
    global_batch = integer("global_batch", global_batch, minimum=1)
    mfu = sizing.default_mfu() if mfu is None else in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    dp_overlap = resolve_dp_overlap(dp_overlap)
    tp_overlap = in_range("tp_overlap", tp_overlap, 0.0, 1.0)
    min_headroom_fraction = in_range("min_headroom_fraction", min_headroom_fraction, 0.0, 1.0, high_open=True)
    attention = choice("attention", attention, ATTENTION_COUNTS)
    torus = choice("torus", torus, TORUS_LINK_MODELS)
    if ep_dispatch is None:   # the exchange the chosen framework's stack runs (issue 40)
        used = moe.dispatch_exchange(fw.component) if fw is not None else "none"
        ep_dispatch = {"all-to-all-v": "all-to-all", "none": "all-gather"}.get(used, used)
    ep_dispatch = choice("ep_dispatch", ep_dispatch, moe.EP_DISPATCH_METHODS)
    if narrow_expert_penalty not in (True, False):
        raise ValueError(f"narrow_expert_penalty must be True or False, got {narrow_expert_penalty!r}")
    if expert_tp_degrees is not None:
        etps = sorted(set(sequence("expert_tp_degrees", expert_tp_degrees, integer)))
        if not m.is_moe and etps:
            raise ValueError(f"expert_tp_degrees must be None for {m.name}: it is a dense model, with no "
                             f"experts; got {tuple(expert_tp_degrees)}")
    else:
        etps = None
    mbs = sorted(set(sequence("micro_batches", micro_batches, integer)))
    zs = sorted(set(sequence("zero_stages", zero_stages,
                             lambda name, x: integer(name, x, minimum=0, maximum=3))))
    modes = sequence("recompute", recompute, lambda name, x: choice(name, x, RECOMPUTE_MODES))
    if not mbs or not zs or not modes:
        raise ValueError("micro_batches, zero_stages and recompute must each list at least one option")
    if fw is not None:
        # search only what the framework can run (the final mask below enforces every rule)
        if not set(zs) & set(fw.zero_stages):
            raise ValueError(f"zero_stages: {fw.name} offers ZeRO stages {list(fw.zero_stages)}; got {zs}")
        zs = [z for z in zs if z in fw.zero_stages]
    vs = sorted(set(sequence("virtual_stages", virtual_stages,
                             lambda name, x: integer(name, x, minimum=1, maximum=m.n_layers))))
    capacity_factor = in_range("capacity_factor", capacity_factor, 1.0, 16.0)
    dropless = _dropless(dropless_block_size, capacity_factor)
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
    if dtype not in c.chip_spec.dense_flops_per_s:
        raise ValueError(f"dtype must be one of {sorted(c.chip_spec.dense_flops_per_s)}; got {dtype!r}")
    if n_tokens is not None:
        n_tokens = positive("n_tokens", n_tokens)

    # ---- the degree grid: tp × ep × pp, dp what is left (numpy; candidate_degrees' rules)
    n_ranks = c.n_ranks
    tps, pps, eps = _degree_lists(m, n_ranks, c.n_systems, eps, fw)
    T, E, P = (g.ravel() for g in np.meshgrid(np.array(tps, dtype=np.int64), np.array(eps or [1], dtype=np.int64),
                                              np.array(pps, dtype=np.int64), indexing="ij"))
    prod = T * E * P
    ok = (n_ranks % prod == 0) & bool(eps)
    D = np.where(ok, n_ranks // np.maximum(prod, 1), 0)
    ok &= (D > 0) & (global_batch % np.maximum(D * E, 1) == 0)
    T, E, P, D = T[ok], E[ok], P[ok], D[ok]
    if len(T) == 0 and fw is not None:
        raise ValueError(f"framework: {fw.name} can run no layout of {m.name} on {n_ranks} ranks with "
                         f"global_batch {global_batch} (without pipeline parallelism every rank outside TP "
                         "is data-parallel, and no such degree divides the batch)" if not fw.has_pp else
                         f"framework: {fw.name} can run no layout of {m.name} on {n_ranks} ranks with "
                         f"global_batch {global_batch}")
    if etps is None:
        X = T.copy()
    else:  # one row per expert-TP degree dividing the row's tp
        pairs = [(i, x) for i, t in enumerate(T.tolist()) for x in etps if t % x == 0]
        if not pairs:
            raise ValueError(f"expert_tp_degrees must hold a degree dividing some candidate tp; got "
                             f"{tuple(expert_tp_degrees)}")
        rows = np.array([i for i, _ in pairs], dtype=np.int64)
        X = np.array([x for _, x in pairs], dtype=np.int64)
        T, E, P, D = T[rows], E[rows], P[rows], D[rows]
    if len(T) == 0:
        raise ValueError(f"global_batch ({global_batch}) admits no layout on {n_ranks} ranks: no data-"
                         "parallel degree divides it together with the micro-batch sizes")
    comms = [_comm(c.system_spec, c.n_systems, c.lnc, int(a), int(b), int(d), int(e), torus)
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
    tp, ep, pp, dp, etp = T[idx], E[idx], P[idx], D[idx], X[idx]
    per_replica = global_batch // (dp * ep)
    keep = per_replica % mb == 0
    nmb = per_replica // mb
    keep &= (v == 1) | ((pp >= 2) & (nmb % pp == 0) & (pp * v <= m.n_layers))
    if fw is not None:
        keep &= frameworks.runnable_mask(fw, tp, pp, dp, ep, z, v, m.n_layers)
    if not keep.any():
        if fw is not None:
            raise ValueError(f"framework: {fw.name} can run no layout of {m.name} on {n_ranks} ranks with "
                             f"global_batch {global_batch} (its ZeRO stages {list(fw.zero_stages)}, pipeline "
                             f"schedules {list(fw.pipeline_schedules) or 'none'})")
        raise ValueError(f"global_batch ({global_batch}) admits no layout on {n_ranks} ranks: no data-"
                         "parallel degree divides it together with the micro-batch sizes")
    z, mb, mode, v, tp, ep, pp, dp, nmb, idx, etp = (x[keep] for x in (z, mb, mode, v, tp, ep, pp, dp, nmb,
                                                                        idx, etp))
    out = _core(m, c, seq_len, recipe_name, dtype, sequence_parallel, mfu, dp_overlap, tp_overlap, grads,
                tp, pp, dp, z, mb, nmb, mode, comms, idx, ep=ep, v=v, capacity_factor=capacity_factor,
                attention=attention, etp=etp, ep_dispatch=ep_dispatch,
                narrow_expert_penalty=narrow_expert_penalty, dropless_block_size=dropless,
                gather_overlap=sched.gather_overlap, reduce_overlap=sched.reduce_overlap)
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
        "dp_comm_total_s": out["dp_comm_total"], "dp_window_s": out["bwd_window"], "step_s": out["step"],
        "dp_gather_s": out["dp_gather"], "dp_reduce_s": out["dp_reduce"],
        "tokens_per_s": out["tokens_per_s"], "mfu_effective": out["mfu_effective"],
        "ep": ep, "virtual_stages": v,
        "ep_level": np.array([x.ep_level for x in comms])[idx],
        "ep_chips": np.array([x.ep_chips for x in comms])[idx], "ep_comm_s": out["ep_comm"],
        "expert_tp": etp, "expert_matmul_efficiency": out["expert_matmul_efficiency"],
        "expert_compute_factor": out["expert_compute_factor"],
    })
    df.insert(0, "label", _labels(tp.tolist(), ep.tolist(), pp.tolist(), dp.tolist(), z.tolist(), mb.tolist(),
                                  nmb.tolist(), modes_arr.tolist(), v.tolist(), c.ranks_per_chip, m.is_moe,
                                  etp=etp.tolist()))
    if n_tokens is not None:
        df["days"] = n_tokens / df["tokens_per_s"] / day
    df = df.sort_values(["tokens_per_s", "headroom_gib"], ascending=[False, False], kind="stable")
    df = df.reset_index(drop=True)
    fitting = df[df["fits"]].reset_index(drop=True)
    fitting.insert(0, "rank", np.arange(1, len(fitting) + 1))
    settings = dict(sequence_parallel=sequence_parallel, seq_len=seq_len, recipe_name=recipe_name,
                    dtype=dtype, mfu=mfu, dp_overlap=dp_overlap, tp_overlap=tp_overlap,
                    grad_bytes_per_param=grads, capacity_factor=capacity_factor, attention=attention,
                    torus=torus, ep_dispatch=ep_dispatch, narrow_expert_penalty=narrow_expert_penalty,
                    dropless_block_size=dropless, framework=None if fw is None else fw.key,
                    overlap_setting=sched.setting, overlap_flags=sched.flags,
                    gather_overlap=sched.gather_overlap, reduce_overlap=sched.reduce_overlap)
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
