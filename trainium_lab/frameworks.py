"""Training frameworks on Neuron, as data: what each can run, and its memory and checkpoint defaults.

A layout is only a plan if some framework can run it. ``data/frameworks.csv`` records, for
TorchNeuron (native PyTorch), the legacy NxD Training / NxD Core training stack and JAX on Neuron, which
parallelisms and ZeRO stages each offers, its pipeline schedules and their constraints, its
precision recipe (a key of :data:`trainium_lab.sizing.RECIPES`), what its checkpoints hold and how
they load, and its status — each fact with its source. This module reads that table and answers:

* :func:`framework`, :func:`frameworks` — the records (:class:`Framework`);
* :func:`runnable_mask` — which layouts of a grid a framework can run (the planner's filter);
* :func:`runnable_by` — which frameworks can run one layout;
* :func:`checkpoint_bytes_per_param` — bytes per parameter a framework's checkpoint writes.

References
----------
AWS Neuron docs: TorchNeuron overview (``frameworks/torch/pytorch-native-overview.rst``); the
NxDT end-of-support announcement (2026-02-26); the archived NxD Training features page; NxD's
Standard Mixed Precision and pipeline-parallelism guides; JAX Neuron (beta). PyTorch's FSDP,
AMP and Distributed Checkpoint documentation. Rajbhandari et al. 2020 (ZeRO), arXiv:1910.02054.

Examples
--------
>>> framework("nxd").zero_stages, framework("torchneuron").pipeline_schedules
((0, 1), ())
>>> runnable_by(tp=64, pp=2, dp=4, zero_stage=3, n_layers=126)   # chapter 05's old 405B winner
()
>>> runnable_by(tp=64, pp=8, dp=1, zero_stage=0, n_layers=126)
('nxd',)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from trainium_lab import components, sizing, specs
from trainium_lab._validate import choice, integer, positive

__all__ = ["Framework", "FRAMEWORK_KEYS", "PARALLELISMS", "framework", "frameworks", "frameworks_table",
           "runnable_mask", "runnable_by", "checkpoint_bytes_per_param", "resolve_framework",
           "CONVENTIONS", "recipes_side_by_side", "checkpoint_load_s", "layout_runnable_by",
           "OverlapSchedule", "overlap_schedules", "overlap_schedule", "IDEAL_SCHEDULE", "is_current",
           "current_frameworks", "status_text", "CURRENT_STATUSES"]

#: the frameworks of ``data/frameworks.csv``, in table order
FRAMEWORK_KEYS: tuple[str, ...] = ("torchneuron", "nxd", "jax")
#: parallelism names used in ``data/frameworks.csv``
PARALLELISMS: tuple[str, ...] = ("dp", "tp", "sp", "pp", "ep", "cp")


@dataclass(frozen=True)
class Framework:
    """One training framework's record (``data/frameworks.csv``).

    Attributes
    ----------
    key, name : str
    component : str
        Its key in ``data/components.csv`` (``"nxd-training"``).
    status : str
        Read from ``data/components.csv``: of :data:`trainium_lab.components.STATUSES`
        (``"closed-beta"``, ``"beta"``, ``"end-of-support"``, ...).
    status_release : str
        The Neuron release the status dates from (``"2.28"``: NxD's last), or ``""``.
    parallelisms : tuple of str
        Of :data:`PARALLELISMS`.
    zero_stages : tuple of int
        ZeRO / FSDP stages it offers (0 = plain data parallelism).
    pipeline_schedules : tuple of str
        ``"1f1b"``, ``"interleaved"``; empty when it has no pipeline parallelism.
    interleaved_rule : str
        ``"pp*v=L"`` when interleaving needs ``pp × virtual stages = layers``; else ``""``.
    recipe : str
        Its precision recipe (a key of :data:`trainium_lab.sizing.RECIPES`), or ``""`` if none
        is documented.
    stochastic_rounding : str
        Its default (``"off"``).
    precision_control : str
        Where a job sets its precision (the knobs of the toy regression of chapter 02).
    checkpoint_components : tuple of str
        The recipe components a checkpoint holds (of ``StateRecipe.COMPONENTS``); empty if
        not documented.
    checkpoint_load : str
        ``"one-dp-rank-broadcast"``, ``"every-rank-own-shard"`` or ``""`` (not documented).
    sources : dict
        ``{field: source_id}``; ``notes`` likewise ``{field: note}``.
    train_chips : tuple of str
        The chips it trains on (empty: none excluded).
    tp_domain : str
        ``"system"`` when its planner keeps every tensor-parallel group inside one system's
        NeuronLink domain (an instance or an UltraServer), never over EFA; ``""``: no rule.
    """

    key: str
    name: str
    component: str
    status: str
    status_release: str
    parallelisms: tuple[str, ...]
    zero_stages: tuple[int, ...]
    pipeline_schedules: tuple[str, ...]
    interleaved_rule: str
    recipe: str
    stochastic_rounding: str
    precision_control: str
    checkpoint_components: tuple[str, ...]
    checkpoint_load: str
    sources: dict
    notes: dict
    train_chips: tuple[str, ...] = ()
    tp_domain: str = ""

    @property
    def current(self) -> bool:
        """Whether it ships in the current Neuron release (:func:`trainium_lab.components.is_current`)."""
        return components.is_current(self.component)

    @property
    def has_pp(self) -> bool:
        """Whether it runs pipeline parallelism at all."""
        return "pp" in self.parallelisms and bool(self.pipeline_schedules)

    def __repr__(self) -> str:
        return (f"Framework({self.key!r}: {self.status}; ZeRO {list(self.zero_stages)}; "
                f"PP {'/'.join(self.pipeline_schedules) or 'none'})")

    def _repr_markdown_(self) -> str:
        rel = f" (release {self.status_release})" if self.status_release else ""
        return (f"**{self.name}**: {self.status}{rel}; parallelisms {', '.join(self.parallelisms)}; "
                f"ZeRO stages {', '.join(map(str, self.zero_stages))}; pipeline schedules "
                f"{', '.join(self.pipeline_schedules) or 'none'}; recipe `{self.recipe or 'none documented'}`")


def _list(text: str) -> tuple[str, ...]:
    return tuple(x for x in str(text).split(";") if x)


@functools.cache
def _records() -> dict[str, Framework]:
    df = specs.read_data_csv("frameworks.csv")
    out = {}
    for key in FRAMEWORK_KEYS:
        rows = df[df.framework == key]
        f = dict(zip(rows.field, rows.value))
        recipe_key = f.get("recipe", "")
        if recipe_key:
            sizing.recipe(recipe_key)  # the table names a known recipe
        comps = _list(f.get("checkpoint_components", ""))
        unknown = set(comps) - set(sizing.StateRecipe.COMPONENTS)
        pars = _list(f["parallelisms"])
        if unknown or set(pars) - set(PARALLELISMS):
            raise ValueError(f"frameworks.csv: unknown names for {key}: {sorted(unknown | (set(pars) - set(PARALLELISMS)))}")
        comp = components.component(f["component"])   # the status table is the one home of statuses
        out[key] = Framework(
            key=key, name=f["name"], component=comp.component, status=comp.status,
            status_release=comp.status_release,
            parallelisms=pars, zero_stages=tuple(int(z) for z in _list(f["zero_stages"])),
            pipeline_schedules=_list(f.get("pipeline_schedules", "")),
            interleaved_rule=f.get("interleaved_rule", ""), recipe=recipe_key,
            stochastic_rounding=f.get("stochastic_rounding", ""),
            precision_control=f.get("precision_control", ""), checkpoint_components=comps,
            checkpoint_load=f.get("checkpoint_load", ""), train_chips=_list(f.get("train_chips", "")),
            tp_domain=f.get("tp_domain", ""),
            sources=dict(zip(rows.field, rows.source_id)), notes=dict(zip(rows.field, rows.note)))
    return out


def framework(name: str | Framework) -> Framework:
    """The record of one framework: ``"torchneuron"``, ``"nxd"`` or ``"jax"``.

    Examples
    --------
    >>> framework("nxd").status, framework("nxd").status_release
    ('end-of-support', '2.28')
    """
    if isinstance(name, Framework):
        return name
    return _records()[choice("framework", name, FRAMEWORK_KEYS)]


def resolve_framework(name: str | Framework | None) -> Framework | None:
    """``None`` stays ``None`` (no framework named); anything else is :func:`framework`."""
    return None if name is None else framework(name)


def frameworks() -> tuple[Framework, ...]:
    """Every framework of ``data/frameworks.csv``, in table order."""
    return tuple(_records().values())


def frameworks_table():
    """One row per framework, for a chapter's table: ``framework, name, status, status_release,
    parallelisms, zero_stages, pipeline_schedules, interleaved_rule, recipe, recipe_bytes_per_param,
    stochastic_rounding, precision_control, checkpoint_bytes_per_param, checkpoint_load``.

    Examples
    --------
    >>> frameworks_table().set_index("framework").recipe_bytes_per_param.to_dict()
    {'torchneuron': 16.0, 'nxd': 18.0, 'jax': nan}
    """
    import pandas as pd

    rows = []
    for f in frameworks():
        rows.append({
            "framework": f.key, "name": f.name, "status": f.status, "status_release": f.status_release,
            "parallelisms": ", ".join(f.parallelisms), "zero_stages": ", ".join(map(str, f.zero_stages)),
            "pipeline_schedules": ", ".join(f.pipeline_schedules) or "none",
            "interleaved_rule": f.interleaved_rule or "",
            "recipe": f.recipe or "none documented",
            "recipe_bytes_per_param": float(sizing.recipe(f.recipe).bytes_per_param) if f.recipe else float("nan"),
            "stochastic_rounding": f.stochastic_rounding, "precision_control": f.precision_control,
            "checkpoint_bytes_per_param": (checkpoint_bytes_per_param(f.key) if f.checkpoint_components
                                           else float("nan")),
            "checkpoint_load": f.checkpoint_load or "not documented"})
    return pd.DataFrame(rows)


def _int_array(name: str, values) -> np.ndarray:
    """``values`` as an int64 array of whole numbers >= 0 (1 <= each degree < 2^31)."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be whole numbers (an int or an array of ints); got {values!r}") from None
    low = 0 if name == "zero_stage" else 1
    high = 3 if name == "zero_stage" else 2**31 - 1
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)) or arr.min() < low
                     or arr.max() > high):
        raise ValueError(f"{name} must hold whole numbers in [{low}, {high}]; got {values!r}")
    return arr.astype(np.int64)


def runnable_mask(fw: str | Framework, tp, pp, dp, ep, zero_stage, virtual_stages, n_layers: int) -> np.ndarray:
    """Which layouts of a grid ``fw`` can run (arrays of equal length; ``n_layers`` an int).

    A layout is runnable when every degree above 1 is a parallelism the framework lists
    (``tp`` → TP, ``pp`` → PP with a schedule, ``ep`` → EP, ``dp`` → DP), its ZeRO stage is
    one the framework offers (stage 0 always, when there is no data-parallel replica to
    shard over: ``dp·ep = 1``), and its pipeline schedule exists there: ``v > 1`` needs the
    interleaved schedule and, where the framework says so, ``pp × v = L``.

    Examples
    --------
    >>> runnable_mask("nxd", [8, 8], [4, 4], [2, 2], [1, 1], [1, 3], [1, 1], 32).tolist()
    [True, False]
    >>> runnable_mask("nxd", [8, 8], [4, 4], [2, 2], [1, 1], [1, 1], [2, 8], 32).tolist()  # pp·v = 32
    [False, True]
    """
    f = framework(fw)
    n_layers = integer("n_layers", n_layers, minimum=1)
    tp, pp, dp, ep, z, v = (_int_array(n, x) for n, x in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep),
                                                           ("zero_stage", zero_stage),
                                                           ("virtual_stages", virtual_stages)))
    try:
        tp, pp, dp, ep, z, v = np.broadcast_arrays(tp, pp, dp, ep, z, v)
    except ValueError:
        raise ValueError("tp, pp, dp, ep, zero_stage and virtual_stages must have the same length") from None
    ok = np.ones(tp.shape, dtype=bool)
    if "tp" not in f.parallelisms:
        ok &= tp == 1
    if "dp" not in f.parallelisms:
        ok &= dp == 1
    if "ep" not in f.parallelisms:
        ok &= ep == 1
    if not f.has_pp:
        ok &= pp == 1
    ok &= np.isin(z, np.array(f.zero_stages, dtype=np.int64)) | ((dp * ep == 1) & (z == 0))
    interleaved = v > 1
    if "interleaved" not in f.pipeline_schedules:
        ok &= ~interleaved
    elif f.interleaved_rule == "pp*v=L":
        ok &= ~interleaved | (pp * v == n_layers)
    return ok


def runnable_by(tp: int, pp: int = 1, dp: int = 1, ep: int = 1, *, zero_stage: int = 0,
                virtual_stages: int = 1, n_layers: int) -> tuple[str, ...]:
    """The frameworks (keys) that can run one layout; ``()`` when none can.

    Examples
    --------
    >>> runnable_by(tp=64, pp=1, dp=4, zero_stage=3, n_layers=126)
    ('torchneuron', 'jax')
    """
    args = [integer(n, x, minimum=1) for n, x in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep),
                                                  ("virtual_stages", virtual_stages))]
    z = integer("zero_stage", zero_stage, minimum=0, maximum=3)
    t, p, d, e, v = args
    return tuple(f.key for f in frameworks()
                 if bool(runnable_mask(f, [t], [p], [d], [e], [z], [v], n_layers)[0]))


def layout_runnable_by(lay) -> tuple[str, ...]:
    """:func:`runnable_by` of a :class:`trainium_lab.layouts.Layout` (its degrees, ZeRO stage,
    virtual stages and its model's layers).

    Examples
    --------
    >>> from trainium_lab import layouts
    >>> layout_runnable_by(layouts.layout("llama3-8b", tp=8, pp=2, dp=4, zero_stage=1, lnc=2,
    ...                                   system="trn2.48xlarge", n_micro_batches=8))
    ('nxd',)
    """
    for attr in ("tp", "pp", "dp", "ep", "zero_stage", "virtual_stages", "model"):
        if not hasattr(lay, attr):
            raise ValueError(f"lay must be a Layout (layouts.layout(...)); got {type(lay).__name__}")
    who = runnable_by(lay.tp, lay.pp, lay.dp, lay.ep, zero_stage=lay.zero_stage,
                      virtual_stages=lay.virtual_stages, n_layers=lay.model.n_layers)
    c = getattr(lay, "cluster", None)
    if c is not None and c.n_systems > 1 and (c.n_ranks // c.n_systems) % lay.tp:
        # its TP groups (innermost ranks) straddle systems: over EFA, which tp_domain rules out
        who = tuple(k for k in who if framework(k).tp_domain != "system")
    return who


def checkpoint_bytes_per_param(fw: str | Framework, *, master_weights: bool | None = None) -> float:
    """Bytes per parameter one full checkpoint of ``fw`` writes, by its default.

    The components its checkpoints hold (``data/frameworks.csv``) priced at its recipe's
    bytes (:func:`trainium_lab.sizing.recipe`). ``master_weights=True`` adds the master copy
    (NxD's ``use_master_weights_in_ckpt``); ``False`` drops it.

    Examples
    --------
    >>> checkpoint_bytes_per_param("nxd"), checkpoint_bytes_per_param("nxd", master_weights=True)
    (10.0, 14.0)
    >>> checkpoint_bytes_per_param("torchneuron")
    12.0
    """
    f = framework(fw)
    if not f.recipe or not f.checkpoint_components:
        raise ValueError(f"framework: {f.name} documents no checkpoint contents or recipe; give "
                         "checkpoint bytes yourself (sizing.recipe(...) components)")
    if master_weights is not None and not isinstance(master_weights, (bool, np.bool_)):
        raise ValueError(f"master_weights must be True, False or None, got {master_weights!r}")
    r = sizing.recipe(f.recipe)
    comps = set(f.checkpoint_components)
    if master_weights is True:
        comps.add("master")
    elif master_weights is False:
        comps.discard("master")
    return float(sum(getattr(r, c) for c in comps))


#: conventions compared side by side (chapter 04): (who, recipe key, ZeRO stage as that stack runs it)
CONVENTIONS: tuple[tuple[str, str, int], ...] = (
    ("course (ZeRO paper)", "bf16-adam", 1),
    ("Megatron-LM distributed optimizer", "bf16-adam-fp32-grads", 1),
    ("DeepSpeed ZeRO-3", "bf16-adam-fp32-grads", 3),
    ("NxD Standard Mixed Precision (ZeRO-1)", "nxd-standard-mixed-precision", 1),
    ("TorchNeuron FSDP + torch.autocast", "fp32-params-amp-adam", 3),
)


def recipes_side_by_side(n_params: float = 8e9, n_devices: int = 16):
    """The state recipes of the course, the peers and the Neuron frameworks, with the part each
    one's ZeRO stage shards over ``n_devices`` data-parallel devices and the part it leaves whole.

    Returns
    -------
    pandas.DataFrame
        ``convention, recipe, zero_stage, bytes_per_param, sharded_bytes_per_param,
        unsharded_bytes_per_param, state_bytes_per_device`` (``n_params × (unsharded + sharded/n)``).

    References
    ----------
    Rajbhandari et al. 2020 (ZeRO), Figure 1; NxD Standard Mixed Precision (AWS Neuron docs);
    Megatron-LM ``theoretical_memory_usage.py``; PyTorch FSDP and AMP documentation.

    Examples
    --------
    >>> t = recipes_side_by_side(8e9, 16).set_index("convention")
    >>> round(float(t.loc["NxD Standard Mixed Precision (ZeRO-1)", "state_bytes_per_device"]) / 2**30, 1)
    50.3
    """
    import pandas as pd

    n_params = sizing._n_params(n_params)
    n = integer("n_devices", n_devices, minimum=1)
    rows = []
    for who, key, stage in CONVENTIONS:
        sharded, whole = sizing.recipe_split(key, stage)
        rows.append({"convention": who, "recipe": key, "zero_stage": stage,
                     "bytes_per_param": float(sizing.recipe(key).bytes_per_param),
                     "sharded_bytes_per_param": sharded, "unsharded_bytes_per_param": whole,
                     "state_bytes_per_device": n_params * (whole + sharded / n)})
    return pd.DataFrame(rows)


def checkpoint_load_s(fw: str | Framework, checkpoint_bytes: float, read_bytes_per_s: float, *,
                      dp: int = 1, chips_per_replica: int = 1, dp_bytes_per_s: float | None = None) -> float:
    """Seconds to load a checkpoint the way ``fw`` loads it (``data/frameworks.csv``).

    ``"every-rank-own-shard"`` (PyTorch Distributed Checkpoint): every rank reads its shards at
    once, ``checkpoint_bytes / read_bytes_per_s``. ``"one-dp-rank-broadcast"`` (NxD): one
    data-parallel replica reads the checkpoint (at best the same storage bandwidth: an
    assumption, fewer clients may reach less), then each of its chips broadcasts its share
    ``checkpoint_bytes / chips_per_replica`` to the other ``dp − 1`` replicas; a pipelined
    broadcast takes at least share / ``dp_bytes_per_s`` (the per-chip bandwidth of the level DP
    crosses), so that is added. A framework that documents no load method is charged the read.

    Examples
    --------
    >>> from trainium_lab.units import GB
    >>> checkpoint_load_s("torchneuron", 700 * GB, 10 * GB)
    70.0
    >>> round(checkpoint_load_s("nxd", 700 * GB, 10 * GB, dp=4, chips_per_replica=32, dp_bytes_per_s=25 * GB), 1)
    70.9
    """
    f = framework(fw)
    size = float(positive("checkpoint_bytes", checkpoint_bytes))
    read = float(positive("read_bytes_per_s", read_bytes_per_s))
    dp = integer("dp", dp, minimum=1)
    chips = integer("chips_per_replica", chips_per_replica, minimum=1)
    t = size / read
    if f.checkpoint_load == "one-dp-rank-broadcast" and dp > 1:
        if dp_bytes_per_s is None:
            raise ValueError("dp_bytes_per_s must be given (bytes/s per chip of the level DP crosses) when "
                             f"{f.name} broadcasts a checkpoint to dp = {dp} replicas")
        bw = float(positive("dp_bytes_per_s", dp_bytes_per_s))
        t += size / chips / bw
    return t



# ------------------------------------------------------------------ status and overlap (issue 39)

#: statuses under which a team can train with a framework today (the status table's, one home)
CURRENT_STATUSES: tuple[str, ...] = components.CURRENT_STATUSES


def is_current(fw: str | Framework) -> bool:
    """Whether a team can train with ``fw`` on the SDK the course cites (:attr:`Framework.current`).

    Examples
    --------
    >>> is_current("nxd"), is_current("jax")
    (False, True)
    """
    return framework(fw).current


def status_text(fw: str | Framework) -> str:
    """``"closed beta since 2.29"``-style status of ``fw`` (:func:`trainium_lab.components.status_label`)."""
    return components.status_label(framework(fw).component)


def current_frameworks(chip: str | None = None) -> tuple[Framework, ...]:
    """The frameworks a team can train with today (:func:`is_current`), in table order; with
    ``chip`` (``"trn2"``...), only those that run on it (``train_chips``; empty = any chip).

    Examples
    --------
    >>> [f.key for f in current_frameworks()], [f.key for f in current_frameworks("trn1")]
    (['torchneuron', 'jax'], ['jax'])
    """
    return tuple(f for f in frameworks() if is_current(f)
                 and (chip is None or not f.train_chips or chip in f.train_chips))


@dataclass(frozen=True)
class OverlapSchedule:
    """Where a framework's schedule places the data-parallel collectives (``data/overlap_schedules.csv``).

    Attributes
    ----------
    framework, setting : str
        A key of ``data/frameworks.csv`` (or ``"any"``, the teaching search) and
        ``"compiler-default"``, ``"token-threading"`` or ``"ideal"``.
    flags : tuple of str
        Environment variables the setting needs (``"NEURON_FSDP=1"``...).
    gather_overlap, reduce_overlap : float
        Shares of the weight all-gathers and of the gradient reductions placed behind compute.
    experimental : bool
        Whether AWS's page calls the mechanism experimental.
    source_id, note : str
    """

    framework: str
    setting: str
    flags: tuple[str, ...]
    gather_overlap: float
    reduce_overlap: float
    experimental: bool
    source_id: str
    note: str

    def __repr__(self) -> str:
        return (f"OverlapSchedule({self.framework}/{self.setting}: gathers {self.gather_overlap:g}, "
                f"reductions {self.reduce_overlap:g} behind compute; flags {' '.join(self.flags) or 'none'})")

    def flags_text(self) -> str:
        """The flags as a shell line (``"none"`` when the setting needs none)."""
        return " ".join(self.flags) or "none"


@functools.cache
def _schedules() -> tuple[OverlapSchedule, ...]:
    df = specs.read_data_csv("overlap_schedules.csv")
    out = []
    for _, r in df.iterrows():
        flags = "" if r["flags"] != r["flags"] else str(r["flags"])
        out.append(OverlapSchedule(str(r.framework), str(r.setting), _list(flags), float(r.gather_overlap),
                                   float(r.reduce_overlap), str(r.experimental).lower() == "true",
                                   str(r.source_id), str(r.note)))
    return tuple(out)


def overlap_schedules(fw: str | Framework | None = None) -> tuple[OverlapSchedule, ...]:
    """Every documented schedule of ``fw`` (compiler default first); ``None``: the teaching one.

    Examples
    --------
    >>> [s.setting for s in overlap_schedules("jax")]
    ['compiler-default', 'token-threading']
    """
    key = "any" if fw is None else framework(fw).key
    return tuple(s for s in _schedules() if s.framework == key)


def overlap_schedule(fw: str | Framework | None = None, setting: str | None = None) -> OverlapSchedule:
    """One schedule of ``fw``: ``setting`` (default the compiler's default; ``None`` framework:
    the teaching ``"ideal"``, every collective behind compute).

    References
    ----------
    AWS, "Compute-Communication Overlap in Neuron" (Neuron 2.32, neuron-runtime/explore/compute-comm-overlap.rst).

    Examples
    --------
    >>> s = overlap_schedule("jax", "token-threading")
    >>> s.flags, s.reduce_overlap
    (('NEURON_FSDP=1', 'NEURON_FSDP_CC_MULTISTREAM=1'), 1.0)
    >>> overlap_schedule("torchneuron").reduce_overlap
    0.0
    """
    rows = overlap_schedules(fw)
    if setting is None:
        return rows[0]
    return {s.setting: s for s in rows}[choice("setting", setting, tuple(s.setting for s in rows))]


#: the teaching search's schedule: every data-parallel collective placed behind compute
IDEAL_SCHEDULE = "ideal"
